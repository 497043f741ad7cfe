"""Expression nodes: building a tree computes its shape, dtype and structure
key once (xtensor's cached broadcast), and evaluates nothing (MShadow's Exp).

Evaluation lives in ``_plan.pyx``; it registers itself here at import through
``set_evaluator`` so that ``Tensor.__setitem__`` can call it.
"""

cimport numpy as cnp

import operator

import numpy as np

from pyet._core.ops import OPS_BY_NAME, UFUNC_TO_OP

from pyet._kernels.kernels cimport (
    DT_BOOL, DT_COUNT, DT_F32, DT_F64, DT_I32, DT_I64, OP_COUNT, OP_dot, OP_leaf,
    OP_pyfunc, OP_reduce, OP_scalar, OP_special, OP_where, pyet_op_names,
)

cnp.import_array()

DTYPES = (np.dtype(np.bool_), np.dtype(np.int32), np.dtype(np.int64),
          np.dtype(np.float32), np.dtype(np.float64))
_DT_CODE = {d: i for i, d in enumerate(DTYPES)}
_SUPPORTED = "bool, int32, int64, float32, float64"

OPCODES = {pyet_op_names[i].decode(): i for i in range(OP_COUNT)}
OPNAMES = {v: k for k, v in OPCODES.items()}
cdef list _UFUNC_BY_CODE = [None] * OP_COUNT
for _name, _row in OPS_BY_NAME.items():
    _UFUNC_BY_CODE[OPCODES[_name]] = _row.ufunc
_UFUNC_CODE = {uf: OPCODES[name] for uf, name in UFUNC_TO_OP.items()}
cdef int OP_relu = OPCODES["relu"]
cdef int OP_not_equal = OPCODES["not_equal"]
cdef int OP_power = OPCODES["power"]
cdef int OP_maximum = OPCODES["maximum"]
cdef int OP_minimum = OPCODES["minimum"]

cdef object _evaluator = None


def set_evaluator(f):
    """Install the function ``f(dst_ndarray, value)`` that evaluates into dst."""
    global _evaluator
    _evaluator = f


# --------------------------------------------------------------- dtypes

cpdef int dtype_code(object dtype) except -1:
    """Code of a supported dtype; TypeError naming any other."""
    cdef object code = _DT_CODE.get(dtype)
    if code is None:
        try:
            code = _DT_CODE.get(np.dtype(dtype))
        except TypeError:
            code = None
        if code is None:
            try:
                name = str(np.dtype(dtype))
            except TypeError:
                name = repr(dtype)
            raise TypeError(f"pyet does not support dtype {name}; "
                            f"supported dtypes are {_SUPPORTED}")
    return code


cdef dict _RESOLVED = {}   # (op, child dtypes and weakness) -> (cdt, dt) or exception


cdef object _numpy_side(Expr a):
    # What NumPy's promotion sees: a dtype, or the Python type of a weak scalar.
    if a.weak == 1:
        return int
    if a.weak == 2:
        return float
    return DTYPES[a.dt]


cdef tuple _resolve_numpy(int op, tuple args):
    cdef str name = OPNAMES[op]
    cdef list sides = [_numpy_side(<Expr>a) for a in args]
    if op == OP_relu:
        sides.append(int)
    if op == OP_where:
        res = np.result_type(*[DTYPES[(<Expr>a).dt] if (<Expr>a).weak == 0
                               else (<Expr>a).value for a in args[1:]])
        code = _DT_CODE.get(res)
        if code is None:
            raise TypeError(f"pyet does not support where() with result dtype {res}")
        return code, code
    ufunc = _UFUNC_BY_CODE[op]
    try:
        dts = ufunc.resolve_dtypes(tuple(sides) + (None,))
    except Exception as exc:  # NumPy has no loop: its message names the types
        raise TypeError(f"pyet cannot apply {name} to {_fmt_sides(sides)}: {exc}") from None
    cdt = _DT_CODE.get(dts[0])
    dt = _DT_CODE.get(dts[len(dts) - 1])
    if cdt is None or dt is None:
        raise TypeError(f"pyet does not support {name} of {_fmt_sides(sides)}: NumPy computes "
                        f"it in {dts[0]} giving {dts[len(dts) - 1]}; pyet supports {_SUPPORTED}")
    return cdt, dt


cdef str _fmt_sides(list sides):
    return ", ".join(s.__name__ if isinstance(s, type) else str(s) for s in sides)


cdef inline int _side_code(Expr a):
    return a.dt + DT_COUNT * a.weak


cdef tuple resolve(int op, tuple args):
    """(compute dtype, result dtype) of op on args, by NumPy 2's rules (cached)."""
    cdef Py_ssize_t k = op
    for a in args:
        k = k * 16 + _side_code(<Expr>a)
    hit = _RESOLVED.get(k)
    if hit is None:
        try:
            hit = _resolve_numpy(op, args)
        except TypeError as exc:
            hit = exc
        _RESOLVED[k] = hit
    if isinstance(hit, TypeError):
        raise TypeError(*(<object>hit).args)
    return <tuple>hit


# ----------------------------------------------------------- structure keys

cdef dict _INTERN = {}


cdef Py_ssize_t intern_key(tuple t):
    k = _INTERN.get(t)
    if k is None:
        k = len(_INTERN)
        _INTERN[t] = k
    return k


cdef list _LEAF_KEYS = [intern_key((OP_leaf, i)) for i in range(DT_COUNT)]


# ------------------------------------------------------------- broadcasting

cpdef str fmt_shape(tuple s):
    """A shape as NumPy prints it: (3,) and (2,3)."""
    return "(" + ",".join([str(n) for n in s]) + ("," if len(s) == 1 else "") + ")"


cdef tuple broadcast_shapes(tuple a, tuple b):
    """NumPy's broadcast of two shapes; ValueError naming both."""
    if a == b or len(b) == 0:
        return a
    if len(a) == 0:
        return b
    cdef Py_ssize_t na = len(a), nb = len(b), n = max(na, nb), i
    cdef list out = [0] * n
    for i in range(n):
        x = a[na - n + i] if na - n + i >= 0 else 1
        y = b[nb - n + i] if nb - n + i >= 0 else 1
        if x == y or y == 1:
            out[i] = x
        elif x == 1:
            out[i] = y
        else:
            raise ValueError("operands could not be broadcast together with shapes "
                             f"{fmt_shape(a)} {fmt_shape(b)}")
    return tuple(out)


# ------------------------------------------------------------------- nodes

cdef list _SCALAR_KEYS = [intern_key((OP_scalar, i // 3, i % 3)) for i in range(3 * DT_COUNT)]


cdef Expr _scalar(object value, int dt, int weak):
    cdef Expr e = Expr.__new__(Expr)
    e.op = OP_scalar
    e.args = ()
    e.shape = ()
    e.dt = e.cdt = dt
    e.weak = weak
    e.value = value
    e.key = _SCALAR_KEYS[3 * dt + weak]
    return e


cdef Tensor wrap(object arr):
    cdef Tensor t = Tensor.__new__(Tensor)
    cdef int code = dtype_code((<cnp.ndarray>arr).dtype)
    t.op = OP_leaf
    t.args = ()
    t.shape = (<object>arr).shape
    t.dt = t.cdt = code
    t.weak = 0
    t.value = arr
    t.key = _LEAF_KEYS[code]
    return t


cdef Expr as_operand(object obj):
    """Wrap anything an op accepts: Expr, Python/NumPy scalar, array-like."""
    if isinstance(obj, Expr):
        return <Expr>obj
    cdef object tp = type(obj)
    if tp is float:
        return _scalar(obj, DT_F64, 2)
    if tp is int:
        return _scalar(obj, DT_I64, 1)
    if tp is bool:
        return _scalar(obj, DT_BOOL, 0)
    if isinstance(obj, cnp.ndarray):
        return wrap(obj)
    if isinstance(obj, np.generic):
        return _scalar(obj, dtype_code(obj.dtype), 0)
    if isinstance(obj, bool):
        return _scalar(bool(obj), DT_BOOL, 0)
    if isinstance(obj, int):
        return _scalar(int(obj), DT_I64, 1)
    if isinstance(obj, float):
        return _scalar(float(obj), DT_F64, 2)
    if isinstance(obj, complex):
        raise TypeError("pyet does not support dtype complex; "
                        f"supported dtypes are {_SUPPORTED}")
    return wrap(np.asarray(obj))


def as_expr(obj):
    """``obj`` as an Expr: expressions as they are, scalars as scalar nodes,
    array-likes as leaves (no copy)."""
    return as_operand(obj)


cdef object _check_weak_int(Expr s, int cdt):
    # NEP 50: a Python int must fit the integer dtype it meets.
    if s.weak == 1 and (cdt == DT_I32 or cdt == DT_I64):
        info = np.iinfo(DTYPES[cdt])
        if not info.min <= s.value <= info.max:
            raise OverflowError(f"Python integer {s.value} out of bounds for {DTYPES[cdt]}")


cdef Expr make_node(int op, tuple args):
    """A lazy op node: shape, dtypes and structure key computed here, once."""
    cdef Expr e = Expr.__new__(Expr)
    cdef Expr a
    cdef tuple shape = ()
    cdef list keys = [op]
    for a in args:
        shape = broadcast_shapes(shape, a.shape)
        keys.append(a.key)
    e.op = op
    e.args = args
    e.shape = shape
    e.cdt, e.dt = resolve(op, args)
    e.weak = 0
    e.key = intern_key(tuple(keys))
    for a in args:
        e.flags |= a.flags
        if a.op == OP_scalar:
            _check_weak_int(a, e.cdt)
    if op == OP_power and (e.cdt == DT_I32 or e.cdt == DT_I64):
        _refuse_negative_powers(args[1])
    return e


cdef _refuse_negative_powers(Expr exponent):
    # NumPy refuses integer ** negative integer; refuse it before evaluating.
    if exponent.op == OP_scalar:
        values = exponent.value
    elif exponent.op == OP_leaf:
        values = exponent.value
    else:
        values = np.asarray(exponent)
    if np.any(np.less(values, 0)):
        raise ValueError("Integers to negative integer powers are not allowed.")


def apply(str name, tuple operands):
    """Build the node for the op table's ``name`` on operands."""
    cdef int op = OPCODES[name]
    cdef list args = [as_operand(o) for o in operands]
    if all((<Expr>a).op == OP_scalar for a in args):
        # a function of scalars alone still makes a (0-d) array expression
        args[0] = wrap(np.asarray((<Expr>args[0]).value))
    return make_node(op, tuple(args))


def where(object cond, object x, object y):
    """``x`` where ``cond`` is true, else ``y`` (NumPy's ``where``), lazily."""
    cdef Expr c = as_operand(cond)
    if c.op == OP_scalar:
        c = wrap(np.asarray(c.value))
    if c.dt != DT_BOOL:
        c = make_node(OP_not_equal, (c, _scalar(0, DT_I64, 1)))
    return make_node(OP_where, (c, as_operand(x), as_operand(y)))


def F(object fn, operands):
    """A user elementwise function as a node (MShadow's ``F<OP>``)."""
    cdef list args = [as_operand(o) for o in operands]
    if not args:
        raise TypeError("pyet.F needs at least one operand")
    cdef Expr a
    for i in range(len(args)):
        a = args[i]
        if a.op == OP_scalar:
            args[i] = wrap(np.asarray(a.value, dtype=DTYPES[a.dt]))
    if len(args) > 4:
        raise TypeError(f"pyet.F takes at most 4 operands, got {len(args)}")
    if isinstance(fn, np.ufunc):
        if fn.nin != len(args) or fn.nout != 1:
            raise TypeError(f"pyet.F: ufunc {fn.__name__} takes {fn.nin} inputs and "
                            f"gives {fn.nout} outputs; got {len(args)} operands")
        try:
            out = fn.resolve_dtypes(tuple([DTYPES[(<Expr>a).dt] for a in args]) + (None,))[fn.nin]
        except Exception as exc:
            raise TypeError(f"pyet.F: {fn.__name__} has no loop for these dtypes: {exc}") \
                from None
    elif callable(fn):
        probe = fn(*[np.ones(1, dtype=DTYPES[(<Expr>a).dt]) for a in args])
        out = np.asarray(probe).dtype
    else:
        raise TypeError(f"pyet.F needs a NumPy ufunc or a callable, got {type(fn).__name__}")
    cdef int dt = dtype_code(out)
    cdef Expr e = Expr.__new__(Expr)
    cdef tuple shape = ()
    cdef list keys = [OP_pyfunc, dt]
    for a in args:
        shape = broadcast_shapes(shape, a.shape)
        keys.append(a.key)
    try:
        hash(fn)
        keys.append(fn)
    except TypeError:
        keys.append(id(fn))
    e.op = OP_pyfunc
    e.args = tuple(args)
    e.shape = shape
    e.dt = e.cdt = dt
    e.weak = 0
    e.value = fn
    e.key = intern_key(tuple(keys))
    for a in args:
        e.flags |= (<Expr>a).flags
    return e


cdef Expr binary(int op, object a, object b):
    # make_node for two operands, without the loops (the hot path of operators)
    cdef Expr x = as_operand(a), y = as_operand(b)
    cdef Expr e = Expr.__new__(Expr)
    e.op = op
    e.args = (x, y)
    e.shape = broadcast_shapes(x.shape, y.shape)
    e.cdt, e.dt = resolve(op, e.args)
    e.weak = 0
    e.key = intern_key((op, x.key, y.key))
    e.flags = x.flags | y.flags
    if x.weak == 1:
        _check_weak_int(x, e.cdt)
    if y.weak == 1:
        _check_weak_int(y, e.cdt)
    if op == OP_power and (e.cdt == DT_I32 or e.cdt == DT_I64):
        _refuse_negative_powers(y)
    return e


cdef Expr cast(Expr e, int dt):
    """e converted to dtype dt (a node of its own; nothing is copied)."""
    if e.dt == dt:
        return e
    cdef Expr c = Expr.__new__(Expr)
    c.op = OP_cast
    c.args = (e,)
    c.shape = e.shape
    c.cdt = e.dt
    c.dt = dt
    c.weak = 0
    c.key = intern_key((OP_cast, dt, e.key))
    c.flags = e.flags
    return c


# flags: nodes the elementwise evaluator computes into a scratch first
HAS_DOT = 1
HAS_REDUCE = 2
HAS_SPECIAL = 4


def special(object kernel, tuple args, tuple shape, object dtype):
    """A node the elementwise evaluator cannot run at (y, x) (MShadow's
    kComplex): ``kernel`` (a ``_special.Special``) computes its value from its
    child expressions ``args``; checks are the caller's, done before this."""
    cdef Expr e = Expr.__new__(Expr), a
    cdef list keys = [OP_special, type(kernel), kernel.params(), shape]
    for a in args:
        keys.append(a.key)
        e.flags |= a.flags
    e.op = OP_special
    e.args = args
    e.shape = tuple(shape)
    e.dt = e.cdt = dtype_code(dtype)
    e.weak = 0
    e.value = kernel
    e.flags |= HAS_SPECIAL
    e.key = intern_key(tuple(keys))
    return e


cdef Expr _view_node(Expr e, str kind, object arg, tuple shape):
    # a lazy view of a node that cannot push views down to its leaves
    from pyet._core.special import view_node
    return view_node(e, kind, arg, shape)


cpdef Expr with_args(Expr e, tuple args):
    """A copy of node e over new children of the same dtypes (shape recomputed)."""
    cdef Expr c = Expr.__new__(Expr), a
    cdef tuple shape = ()
    cdef list keys = [-1, e.op, e.dt, e.cdt]
    if e.op == OP_pyfunc:
        keys.append(e.key)  # the function's identity is part of the structure
    for a in args:
        shape = broadcast_shapes(shape, a.shape)
        keys.append(a.key)
        c.flags |= a.flags
    if e.op == OP_dot:
        shape = dot_shape((<Expr>args[0]).shape, (<Expr>args[1]).shape, e.value)
        c.flags |= HAS_DOT
    c.op = e.op
    c.args = args
    c.shape = shape
    c.dt = e.dt
    c.cdt = e.cdt
    c.weak = e.weak
    c.value = e.value
    c.key = intern_key(tuple(keys))
    return c


# ------------------------------------------------------- matrix products

cdef tuple dot_shape(tuple a, tuple b, object batch=None):
    """Shape of a @ b for 1-D and 2-D operands, or of stacks of matrices
    (``batch``: 2-D or 3-D operands); ValueError naming both shapes."""
    cdef Py_ssize_t na = len(a), nb = len(b)
    if batch:
        if na not in (2, 3) or nb not in (2, 3) or (na == 2 and nb == 2):
            raise ValueError(f"pyet.batch_dot takes stacks of matrices (3-D; one may be 2-D), "
                             f"got shapes {fmt_shape(a)} and {fmt_shape(b)}")
        if a[na - 1] != b[nb - 2]:
            raise ValueError(f"pyet.batch_dot: shapes {fmt_shape(a)} and {fmt_shape(b)} not "
                             f"aligned: {a[na - 1]} (dim {na - 1}) != {b[nb - 2]} (dim {nb - 2})")
        ba = a[0] if na == 3 else 1
        bb = b[0] if nb == 3 else 1
        if ba != bb and ba != 1 and bb != 1:
            raise ValueError(f"pyet.batch_dot: batch sizes of shapes {fmt_shape(a)} and "
                             f"{fmt_shape(b)} differ: {ba} != {bb}")
        return (max(ba, bb), a[na - 2], b[nb - 1])
    if na == 0 or nb == 0 or na > 2 or nb > 2:
        raise ValueError(f"pyet.dot takes 1-D and 2-D operands, got shapes {fmt_shape(a)} "
                         f"and {fmt_shape(b)}")
    k_a = a[na - 1]
    k_b = b[0]
    if k_a != k_b:
        raise ValueError(f"pyet.dot: shapes {fmt_shape(a)} and {fmt_shape(b)} not aligned: "
                         f"{k_a} (dim {na - 1}) != {k_b} (dim 0)")
    return a[:na - 1] + b[1:]


def dot(a, b):
    """The matrix product ``a @ b`` of 1-D and 2-D operands, lazily (MShadow's DotExp).

    Evaluated through BLAS (float32, float64) or an exact loop (bool, int32,
    int64); scale and accumulation around it fold into BLAS's alpha and beta.
    """
    return _dot_node(a, b, None)


def batch_dot(a, b):
    """Stacks of matrix products ``a[i] @ b[i]``, lazily: 3-D operands (either
    may be a transposed view); a 2-D operand or a batch of length 1 broadcasts."""
    return _dot_node(a, b, "batch")


cdef dict _DOT_DTYPES = {}  # (dtype codes of A and B) -> (compute, result) codes


cdef Expr _dot_node(object a, object b, object batch):
    cdef Expr x = as_operand(a), y = as_operand(b)
    for z in (x, y):
        if (<Expr>z).op == OP_scalar:
            raise ValueError("pyet.dot takes 1-D and 2-D operands, not scalars; use * to scale")
    cdef tuple shape = dot_shape(x.shape, y.shape, batch)
    cdef int k = x.dt * DT_COUNT + y.dt
    dts = _DOT_DTYPES.get(k)
    if dts is None:
        try:
            res = np.matmul.resolve_dtypes((DTYPES[x.dt], DTYPES[y.dt], None))
        except Exception as exc:
            raise TypeError(f"pyet.dot of {DTYPES[x.dt]} and {DTYPES[y.dt]}: {exc}") from None
        dts = _DOT_DTYPES[k] = (dtype_code(res[0]), dtype_code(res[2]))
    cdef Expr e = Expr.__new__(Expr)
    e.op = OP_dot
    e.args = (x, y)
    e.shape = shape
    e.cdt, e.dt = dts
    e.weak = 0
    e.flags = x.flags | y.flags | HAS_DOT
    e.value = batch
    e.key = intern_key((OP_dot, batch, x.key, y.key))
    return e


def outer(x, y):
    """The outer product ``x[:, None] * y[None, :]``, lazily (NumPy's ``outer``:
    operands are flattened first)."""
    cdef Expr a = as_operand(x), b = as_operand(y)
    a, b = _flat(a), _flat(b)
    return binary(OP_multiply, permute(pad_to(a, 2), (1, 0)), b)


cdef Expr _flat(Expr e):
    if len(e.shape) == 1:
        return e
    if e.op == OP_leaf or e.op == OP_scalar:
        return wrap(np.ravel(np.asarray(e.value)))
    cdef Py_ssize_t n = 1
    for d in e.shape:
        n *= d
    return _view_node(e, "reshape", (n,), (n,))


# ------------------------------------------------------------ reductions

_REDUCE_NAMES = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum",
                 "argmax": "argmax", "argmin": "argmin", "mean": "mean", "all": "all",
                 "any": "any"}


cdef int _reduce_dtype(str kind, int dt):
    # NumPy 2's result dtypes: sums of bools and small ints are int64,
    # means of integers float64, arg* int64
    if kind in ("sum", "prod"):
        return DT_I64 if dt <= DT_I64 else dt
    if kind == "mean":
        return DT_F64 if dt <= DT_I64 else dt
    if kind in ("argmax", "argmin"):
        return DT_I64
    if kind in ("all", "any"):
        return DT_BOOL
    return dt


def reduction(str kind, e, axis=None, bint keepdims=False):
    """A lazy reduction node (MShadow's kComplex) of ``kind`` over ``axis``."""
    cdef Expr x = as_operand(e)
    if x.op == OP_scalar:
        x = wrap(np.asarray(x.value, dtype=DTYPES[x.dt]))
    cdef int nd = len(x.shape)
    if axis is None:
        axes = tuple(range(nd))
    else:
        if kind in ("argmax", "argmin") and not isinstance(axis, (int, np.integer)):
            raise TypeError(f"{kind} takes one integer axis or None, got {axis!r}")
        if nd == 0 and kind != "mean" and isinstance(axis, (int, np.integer)) and \
                axis in (0, -1):
            axes = ()  # as NumPy's: axis 0 or -1 of a 0-d array (np.mean refuses it)
        else:
            axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
            axes = tuple(normalize_axis(operator.index(a), nd) for a in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"duplicate value in 'axis': {axis!r}")
    axes = tuple(sorted(axes))
    if kind in ("max", "min", "argmax", "argmin"):
        empty = any(x.shape[a] == 0 for a in axes) if axes else False
        if empty or (axis is None and nd and 0 in x.shape):
            if kind.startswith("arg"):
                raise ValueError(f"attempt to get {kind} of an empty sequence")
            raise ValueError(f"zero-size array to reduction operation {_REDUCE_NAMES[kind]} "
                             "which has no identity")
    cdef tuple shape
    if kind in ("argmax", "argmin") and axis is None:
        shape = (1,) * nd if keepdims else ()
    elif keepdims:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    cdef Expr r = Expr.__new__(Expr)
    r.op = OP_reduce
    r.args = (x,)
    r.shape = shape
    r.cdt = x.dt
    r.dt = _reduce_dtype(kind, x.dt)
    r.weak = 0
    r.value = (kind, axes, keepdims, axis is None)
    r.flags = x.flags | HAS_REDUCE
    r.key = intern_key((OP_reduce, kind, axes, keepdims, axis is None, x.key))
    return r


cdef int normalize_axis(int a, int nd) except? -1:
    if not -nd <= a < nd:
        raise np.exceptions.AxisError(a, nd)
    return a + nd if a < 0 else a  # (C division: no % on negatives)


# ------------------------------------------------------------ transposes

cdef Expr pad_to(Expr e, int nd):
    # e with leading axes of length 1 up to nd dimensions (views, lazily)
    cdef int k = nd - len(e.shape)
    if k <= 0 or e.op == OP_scalar:
        return e
    if e.op == OP_leaf:
        return wrap(e.value[(None,) * k])
    if e.op == OP_dot or e.op == OP_reduce or e.op == OP_special:
        return _view_node(e, "reshape", (1,) * k + e.shape, (1,) * k + e.shape)
    return with_args(e, tuple([pad_to(a, nd) for a in e.args]))


cdef Expr permute(Expr e, tuple axes):
    # e with its axes permuted (len(axes) == e.ndim), pushed down to the leaves:
    # elementwise ops commute with permuting axes
    cdef int nd = len(e.shape)
    if e.op == OP_scalar or nd < 2:
        return e
    if e.op == OP_leaf:
        return wrap(e.value.transpose(axes))
    if e.op == OP_reduce or e.op == OP_special:
        return _view_node(e, "transpose", axes, tuple([e.shape[a] for a in axes]))
    if e.op == OP_dot:
        if nd == 2 and not e.value:  # (A @ B).T == B.T @ A.T
            return dot(permute(e.args[1], (1, 0)), permute(e.args[0], (1, 0)))
        if e.value and axes == (0, 2, 1):  # per matrix: (A[i] @ B[i]).T
            return batch_dot(_matrix_t(e.args[1]), _matrix_t(e.args[0]))
        return _view_node(e, "transpose", axes, tuple([e.shape[a] for a in axes]))
    return with_args(e, tuple([permute(pad_to(a, nd), axes) for a in e.args]))


cdef Expr _matrix_t(Expr e):
    # transpose the last two axes of a matrix or a stack of matrices
    if len(e.shape) == 2:
        return permute(e, (1, 0))
    return permute(e, (0, 2, 1))


def transpose(e, axes=None):
    """``e`` with its axes permuted (reversed by default), lazily, as NumPy's ``transpose``."""
    cdef Expr x = as_operand(e)
    cdef int nd = len(x.shape)
    if axes is None:
        axes = tuple(range(nd - 1, -1, -1))
    else:
        axes = tuple(operator.index(a) for a in axes)
        if sorted(a % nd if nd else a for a in axes) != list(range(nd)) or \
                any(not -nd <= a < nd for a in axes):
            raise ValueError(f"axes {axes} don't match an expression of {nd} dimensions")
        axes = tuple(a % nd for a in axes)
    if axes == tuple(range(nd)):
        return x
    if x.origin is not None:  # transposing back: the node we started from
        first, prev = x.origin
        if tuple(prev[a] for a in axes) == tuple(range(nd)):
            return first
    cdef Expr t = permute(x, axes)
    t.origin = (x, axes)
    return t


def swapaxes(e, axis1, axis2):
    """``e`` with two axes interchanged, lazily, as NumPy's ``swapaxes``."""
    cdef Expr x = as_operand(e)
    cdef int nd = len(x.shape)
    for a in (axis1, axis2):
        if not -nd <= a < nd:
            raise ValueError(f"axis {a} is out of bounds for an expression of {nd} dimensions")
    axes = list(range(nd))
    axes[axis1 % nd], axes[axis2 % nd] = axes[axis2 % nd], axes[axis1 % nd]
    return transpose(x, axes)


cdef Expr power(Expr base, object exponent):
    # NumPy's ndarray ** scalar takes fast paths: ** 2 is square (the same
    # value as pow, much faster) and ** 0.5 is sqrt (which differs from pow
    # at -0.0 and -inf); follow both.
    cdef Expr e = binary(OP_power, base, exponent)
    cdef Expr ex = e.args[1]
    if ex.op != OP_scalar or isinstance(ex.value, (bool, np.bool_)):
        return e
    if ex.value == 2:
        return make_node(OP_square, (cast(base, e.cdt),))
    if ex.value == 0.5 and (e.cdt == DT_F32 or e.cdt == DT_F64):
        return make_node(OP_sqrt, (cast(base, e.cdt),))
    return e


def _opc(name):
    return OPCODES[name]


cdef int OP_add = _opc("add"), OP_subtract = _opc("subtract")
cdef int OP_multiply = _opc("multiply"), OP_divide = _opc("divide")
cdef int OP_floor_divide = _opc("floor_divide"), OP_remainder = _opc("remainder")
cdef int OP_less = _opc("less"), OP_less_equal = _opc("less_equal")
cdef int OP_greater = _opc("greater"), OP_greater_equal = _opc("greater_equal")
cdef int OP_equal = _opc("equal")
cdef int OP_and = _opc("bitwise_and"), OP_or = _opc("bitwise_or"), OP_xor = _opc("bitwise_xor")
cdef int OP_negative = _opc("negative"), OP_positive = _opc("positive")
cdef int OP_absolute = _opc("absolute"), OP_invert = _opc("invert")
cdef int OP_copy = _opc("copy")
cdef int OP_square = _opc("square"), OP_sqrt = _opc("sqrt")
cdef int OP_cast = _opc("cast")

_CMP_OPS = {0: OP_less, 1: OP_less_equal, 2: OP_equal, 3: OP_not_equal,
            4: OP_greater, 5: OP_greater_equal}


cdef class Expr:
    """A lazy elementwise expression (MShadow's ``Exp``).

    Arithmetic, comparisons and NumPy ufuncs on an Expr build a bigger tree;
    nothing is computed until the tree is assigned into a destination
    (``dst[...] = expr``) or passed to :func:`pyet.evaluate`.
    """

    __array_priority__ = 1000

    @property
    def dtype(self):
        """Result dtype, by NumPy 2's promotion rules."""
        return DTYPES[self.dt]

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        cdef Py_ssize_t n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def T(self):
        """The transpose (axes reversed), lazily; ``e.T.T is e``."""
        return transpose(self)

    def __matmul__(self, other):
        return dot(self, other)

    def __rmatmul__(self, other):
        return dot(other, self)

    def astype(self, dtype):
        """This expression converted to ``dtype`` (lazily, like any node)."""
        return cast(self, dtype_code(dtype))

    def __add__(self, other):
        return binary(OP_add, self, other)

    def __radd__(self, other):
        return binary(OP_add, other, self)

    def __sub__(self, other):
        return binary(OP_subtract, self, other)

    def __rsub__(self, other):
        return binary(OP_subtract, other, self)

    def __mul__(self, other):
        return binary(OP_multiply, self, other)

    def __rmul__(self, other):
        return binary(OP_multiply, other, self)

    def __truediv__(self, other):
        return binary(OP_divide, self, other)

    def __rtruediv__(self, other):
        return binary(OP_divide, other, self)

    def __floordiv__(self, other):
        return binary(OP_floor_divide, self, other)

    def __rfloordiv__(self, other):
        return binary(OP_floor_divide, other, self)

    def __mod__(self, other):
        return binary(OP_remainder, self, other)

    def __rmod__(self, other):
        return binary(OP_remainder, other, self)

    def __pow__(self, other, modulo):
        if modulo is not None:
            return NotImplemented
        return power(self, other)

    def __rpow__(self, other, modulo):
        if modulo is not None:
            return NotImplemented
        return binary(OP_power, other, self)

    def __and__(self, other):
        return binary(OP_and, self, other)

    def __rand__(self, other):
        return binary(OP_and, other, self)

    def __or__(self, other):
        return binary(OP_or, self, other)

    def __ror__(self, other):
        return binary(OP_or, other, self)

    def __xor__(self, other):
        return binary(OP_xor, self, other)

    def __rxor__(self, other):
        return binary(OP_xor, other, self)

    def __neg__(self):
        return make_node(OP_negative, (self,))

    def __pos__(self):
        return make_node(OP_positive, (self,))

    def __abs__(self):
        return make_node(OP_absolute, (self,))

    def __invert__(self):
        return make_node(OP_invert, (self,))

    def __richcmp__(self, other, int cmp):
        try:
            return binary(_CMP_OPS[cmp], self, other)
        except TypeError:
            if cmp in (2, 3) and not isinstance(other, (Expr, np.ndarray, np.generic)):
                return NotImplemented
            raise

    def __bool__(self):
        raise TypeError("the truth value of a lazy pyet expression is ambiguous: it is not "
                        "computed yet; evaluate it first (pyet.evaluate(e)) and use .any() "
                        "or .all(); use & and | instead of `and` and `or`")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__":
            raise TypeError(f"pyet does not support ufunc method {ufunc.__name__}.{method}")
        out = kwargs.pop("out", None)
        if kwargs:
            raise TypeError(f"pyet does not support the keyword arguments {sorted(kwargs)} "
                            f"of ufunc {ufunc.__name__}")
        if ufunc is np.matmul and len(inputs) == 2:
            e = dot(*inputs)
        else:
            op = _UFUNC_CODE.get(ufunc)
            if op is None:
                raise TypeError(f"pyet does not support the ufunc {ufunc.__name__}")
            e = make_node(op, tuple(as_operand(x) for x in inputs))
        if out is None:
            return e
        if isinstance(out, tuple):
            if len(out) != 1:
                raise TypeError(f"ufunc {ufunc.__name__} takes one output")
            out = out[0]
        dst = out.value if isinstance(out, Tensor) else out
        if not isinstance(dst, np.ndarray):
            raise TypeError(f"out must be an ndarray or pyet.Tensor, got {type(out).__name__}")
        _evaluator(dst, e)
        return out

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("a pyet expression cannot be converted to an array without "
                             "computing it (copy=False)")
        arr = np.empty(self.shape, dtype=DTYPES[self.dt])
        _evaluator(arr, self)
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __repr__(self):
        return _node_repr(self)


cdef str _node_repr(Expr e):
    if e.op == OP_leaf:
        return f"Tensor(shape={fmt_shape(e.shape)}, dtype={DTYPES[e.dt]})"
    if e.op == OP_scalar:
        return repr(e.value)
    name = OPNAMES[e.op]
    if e.op == OP_cast:
        return f"astype({_node_repr(e.args[0])}, {DTYPES[e.dt]})"
    if e.op == OP_reduce:
        kind, axes, keepdims, whole = e.value
        return (f"{kind}({_node_repr(e.args[0])}, axis={None if whole else axes}"
                + (", keepdims=True)" if keepdims else ")"))
    parts = [_node_repr(a) for a in e.args]
    if e.op == OP_pyfunc:
        name = "F[" + getattr(e.value, "__name__", repr(e.value)) + "]"
    elif e.op == OP_special:
        name = e.value.name
        parts.extend(e.value.describe())
    return name + "(" + ", ".join(parts) + ")"


# ------------------------------------------------------------------ Tensor

cdef tuple _basic_key(object key):
    # A basic-indexing key, ending in ... so that the result is always a view.
    if type(key) is not tuple:
        key = (key,)
    cdef bint has_ellipsis = False
    for k in key:
        if k is Ellipsis:
            has_ellipsis = True
        elif k is None or isinstance(k, slice):
            pass
        elif isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
            raise IndexError("pyet tensors take basic indices only (integers, slices, ..., "
                             f"None), not {type(k).__name__}")
    return key if has_ellipsis else key + (Ellipsis,)


cdef class Tensor(Expr):
    """A leaf: an ndarray's memory, viewed without copying (MShadow's Tensor).

    Create one with :func:`pyet.asarray` or :func:`pyet.empty`; ``t[key]`` is
    a view, ``t[key] = expr`` evaluates ``expr`` straight into that view.
    """

    @property
    def strides(self):
        return self.value.strides

    def numpy(self):
        """The ndarray this tensor views (the same memory, no copy)."""
        return self.value

    def slice(self, begin, end):
        """Rows ``begin:end`` along axis 0, the same memory (MShadow's ``Slice``)."""
        if self.value.ndim == 0:
            raise IndexError("slice() needs a tensor of at least one dimension")
        n = self.value.shape[0]
        if not (isinstance(begin, (int, np.integer)) and isinstance(end, (int, np.integer))):
            raise TypeError("slice() takes integer bounds")
        if not 0 <= begin <= end <= n:
            raise IndexError(f"slice({begin}, {end}) is out of range for {n} rows")
        return wrap(self.value[begin:end])

    def blob(self):
        """A dtype- and dimension-erased view of this tensor (MShadow's ``TBlob``)."""
        from pyet._blob import Blob
        return Blob(self)

    def view(self, key):
        return self.value[_basic_key(key)]

    def __array__(self, dtype=None, copy=None):
        if copy:
            return np.array(self.value, dtype=dtype, copy=True)
        if dtype is None or np.dtype(dtype) == self.value.dtype:
            return self.value
        if copy is False:
            raise ValueError(f"cannot view {self.value.dtype} as {dtype} without copying")
        return self.value.astype(dtype)

    @property
    def __array_interface__(self):
        return self.value.__array_interface__

    def __getitem__(self, key):
        return wrap(self.value[_basic_key(key)])

    def __setitem__(self, key, value):
        if key is Ellipsis:  # dst[...] = e: the whole tensor, no view to make
            _evaluator(self.value, value)
        else:
            _evaluator(self.value[_basic_key(key)], value)

    def __len__(self):
        return len(self.value)

    def __bool__(self):
        return bool(self.value)

    def __float__(self):
        return float(self.value)

    def __int__(self):
        return int(self.value)

    def __index__(self):
        return operator.index(self.value)

    def __iadd__(self, other):
        _evaluator(self.value, binary(OP_add, self, other))
        return self

    def __isub__(self, other):
        _evaluator(self.value, binary(OP_subtract, self, other))
        return self

    def __imul__(self, other):
        _evaluator(self.value, binary(OP_multiply, self, other))
        return self

    def __itruediv__(self, other):
        _evaluator(self.value, binary(OP_divide, self, other))
        return self

    def __ifloordiv__(self, other):
        _evaluator(self.value, binary(OP_floor_divide, self, other))
        return self

    def __imod__(self, other):
        _evaluator(self.value, binary(OP_remainder, self, other))
        return self

    def __ipow__(self, other):
        _evaluator(self.value, binary(OP_power, self, other))
        return self

    def __repr__(self):
        return "Tensor(" + np.array2string(self.value, separator=", ", prefix="Tensor(") + \
            f", dtype={self.value.dtype})"

    @property
    def T(self):
        """The transposed view (axes reversed); ``t.T.T is t``."""
        if self.origin is not None or len(self.shape) < 2:
            return transpose(self)
        cdef Tensor t = wrap(self.value.T)
        t.origin = (self, tuple(range(len(self.shape) - 1, -1, -1)))
        return t

    def __reduce__(self):
        return (tensor, (self.value,))


def tensor(arr):
    """Wrap an ndarray of a supported dtype as a Tensor (no checks on layout)."""
    return wrap(arr)
