# Node types: building a tree computes its shape, dtype and structure key once
# (xtensor's cached broadcast) and evaluates nothing (MShadow's Exp).

DTYPES = (np.dtype(np.bool_), np.dtype(np.int32), np.dtype(np.int64),
          np.dtype(np.float32), np.dtype(np.float64))
_DT_CODE = {d: i for i, d in enumerate(DTYPES)}
cdef tuple _DTS = DTYPES
_SUPPORTED = "bool, int32, int64, float32, float64"

# op codes: the compiled module's names (kernels.h), one code per op table row
OPCODES = {pyet_op_names[i].decode(): i for i in range(OP_COUNT)}
OPNAMES = {v: k for k, v in OPCODES.items()}
cdef list _UFUNC_BY_CODE = [None] * OP_COUNT
# the ufunc that computes the op (None where the row only borrows a ufunc's
# dtype rules: sigmoid and erf take exp's, relu maximum's)
cdef list _COMPUTING_UFUNC = [None] * OP_COUNT
for _name, _row in OPS_BY_NAME.items():
    _UFUNC_BY_CODE[OPCODES[_name]] = _row.ufunc
    if _row.reference is _row.ufunc:
        _COMPUTING_UFUNC[OPCODES[_name]] = _row.ufunc
_UFUNC_CODE = {uf: OPCODES[name] for uf, name in UFUNC_TO_OP.items()}

# _flags: what evaluation must do before the elementwise pass
cdef enum:
    HAS_SPECIAL = 1     # a special node below: computed into scratch first
    HAS_INT_POWER = 2   # an integer power with an array exponent: checked for negatives
    HAS_PYFUNC = 4      # a user function: evaluated aside, then copied
    HAS_COSTLY = 8      # a costly elementwise op below (rewrite.COSTLY_OPS): plans share it
    HAS_DASK = 16       # a Dask leaf below (its kernel's class has dask_source): Dask computes it
# (for the Python layers)
SPECIAL_BELOW = HAS_SPECIAL
DASK_BELOW = HAS_DASK

# deeper trees, or trees of more leaves, are evaluated in pieces (engine.pxi)
cdef enum:
    MAX_DEPTH = 512
    MAX_LEAVES = 128


# ------------------------------------------------------------------- classes

cdef class Expr:
    """A lazy expression (MShadow's ``Exp``).

    Arithmetic, comparisons and NumPy ufuncs on an Expr build a bigger tree;
    nothing is computed until the tree is assigned into a destination
    (``dst[...] = expr``) or passed to :func:`pyet.evaluate`.
    """

    cdef readonly tuple shape        # broadcast shape
    cdef readonly int _op            # OP_* code (kernels.h)
    cdef readonly int _dt            # result dtype code (DT_*)
    cdef readonly int _cdt           # dtype the op computes in (its loop's inputs)
    cdef readonly tuple _args        # child nodes
    cdef Py_ssize_t _k               # interned structure (key_of; _key in Python)
    cdef readonly int _flags         # HAS_* of this node and below
    cdef readonly Py_ssize_t _depth  # longest path down to a leaf
    cdef readonly Py_ssize_t _nleaves  # array leaves below (with repeats)
    # one value wherever it is broadcast: a scalar, a leaf of one element or
    # of one value (one_value), or an op of such operands (ONE_VALUE_OP), which
    # a pass computes once when it is bound (lowering's operand())
    cdef readonly bint _one
    # 1 + the fewest elements of a subtree here or below holding a costly op
    # (rewrite.COSTLY_OPS) or a user function (special nodes' operands not
    # counted), 0: none; the engine's hoisting walks a tree only where this
    # says such a subtree is small
    cdef readonly Py_ssize_t _hoist_min
    # ns per element of the costly ops and user functions here and below
    # (rewrite.ELEMENT_NS; special nodes' operands not counted): the work a
    # subtree saves computed once (the engine's hoisting)
    cdef readonly double _ns
    cdef readonly object _origin     # a transposed node: (the node it transposes, axes)
    cdef readonly object _rewrite    # the build-time rewrite that made this node (text), or None

    __array_priority__ = 1000

    def __init__(self, *args, **kwargs):
        # nodes are made by the functions that build trees (through __new__,
        # which skips this); a direct call would leave every field empty
        name = type(self).__name__
        raise TypeError(
            f"pyet.{name} cannot be created directly: use pyet.asarray(obj) to view an "
            f"array as a Tensor, pyet.empty/zeros/full for new memory, and arithmetic "
            f"or pyet's functions on Tensors to build expressions")

    @property
    def _key(self):
        """The interned structure: equal keys, equal programs."""
        return key_of(self)

    @property
    def dtype(self):
        """Result dtype, by NumPy 2's promotion rules."""
        return DTYPES[self._dt]

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

    # NumPy's ndarray methods.  Reductions and views are node families above
    # this module (pyet._nodes), which import it; these methods reach them
    # through array_api() when called, as Dask's Array methods import
    # dask.array.reductions (see array_api below).

    def numpy(self):
        """The value as a new ndarray (computed now).  On a Tensor: its own memory."""
        return self.__array__()

    def compute(self):
        """The value as a new Tensor, computed now (Dask's ``compute``): a tree
        over Dask arrays (:mod:`pyet.dask`) by the current Dask scheduler,
        one fused task per chunk."""
        return array_api().compute(self)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        """Lazy sum over ``axis`` (None: every axis), as ``ndarray.sum``; see :func:`pyet.sum`."""
        return array_api().reduce("sum", self, axis, dtype, out, keepdims, kwargs)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        """Lazy mean over ``axis``, as ``ndarray.mean``; see :func:`pyet.mean`."""
        return array_api().reduce("mean", self, axis, dtype, out, keepdims, kwargs)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        """Lazy product over ``axis``, as ``ndarray.prod``; see :func:`pyet.prod`."""
        return array_api().reduce("prod", self, axis, dtype, out, keepdims, kwargs)

    def max(self, axis=None, out=None, keepdims=False, **kwargs):
        """Lazy maximum over ``axis``, as ``ndarray.max``; see :func:`pyet.max`."""
        return array_api().reduce("max", self, axis, None, out, keepdims, kwargs)

    def min(self, axis=None, out=None, keepdims=False, **kwargs):
        """Lazy minimum over ``axis``, as ``ndarray.min``; see :func:`pyet.min`."""
        return array_api().reduce("min", self, axis, None, out, keepdims, kwargs)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        """Lazy index of the maximum (flat for ``axis=None``), as ``ndarray.argmax``."""
        return array_api().reduce("argmax", self, axis, None, out, keepdims)

    def argmin(self, axis=None, out=None, *, keepdims=False):
        """Lazy index of the minimum (flat for ``axis=None``), as ``ndarray.argmin``."""
        return array_api().reduce("argmin", self, axis, None, out, keepdims)

    def any(self, axis=None, out=None, keepdims=False, **kwargs):
        """Lazy "any element true" over ``axis``, as ``ndarray.any``."""
        return array_api().reduce("any", self, axis, None, out, keepdims, kwargs)

    def all(self, axis=None, out=None, keepdims=False, **kwargs):
        """Lazy "every element true" over ``axis``, as ``ndarray.all``."""
        return array_api().reduce("all", self, axis, None, out, keepdims, kwargs)

    def reshape(self, *shape, order="C", copy=None):
        """Lazy reshape, as ``ndarray.reshape``: ``e.reshape(2, 3)`` or ``e.reshape((2, 3))``."""
        return array_api().reshape_method(self, shape, order, copy)

    def transpose(self, *axes):
        """Lazy transpose, as ``ndarray.transpose``: ``e.transpose()``, ``e.transpose(1, 0)``."""
        return array_api().transpose_method(self, axes)

    def swapaxes(self, axis1, axis2):
        """Lazy ``swapaxes``, as ``ndarray.swapaxes``."""
        return swapaxes(self, axis1, axis2)

    def flatten(self, order="C"):
        """The elements as one axis, lazily (NumPy's ``flatten`` copies; here
        the copy is made when the expression is evaluated)."""
        return array_api().flatten(self, order)

    def ravel(self, order="C"):
        """The elements as one axis, lazily, as ``ndarray.ravel``."""
        return array_api().flatten(self, order)

    def squeeze(self, axis=None):
        """Lazy ``squeeze`` (axes of length 1 removed), as ``ndarray.squeeze``."""
        return array_api().squeeze(self, axis)

    def copy(self, order="C"):
        """The value as a new Tensor (computed now, in new memory)."""
        return array_api().copy(self, order)

    def item(self, *args):
        """One element as a Python scalar (computed now), as ``ndarray.item``."""
        return self.numpy().item(*args)

    def tolist(self):
        """The value as nested Python lists (computed now), as ``ndarray.tolist``."""
        return self.numpy().tolist()

    def clip(self, min=None, max=None, out=None, **kwargs):
        """Lazy ``clip`` to ``[min, max]`` (either may be None), as ``ndarray.clip``."""
        return array_api().clip(self, min, max, out, **kwargs)

    def round(self, decimals=0, out=None):
        """Lazy round half to even to ``decimals`` digits, as ``ndarray.round``."""
        return array_api().round(self, decimals, out)

    def __round__(self, ndigits=None):
        # round(e): lazy, as round(ndarray) gives an array
        return self.round(0 if ndigits is None else ndigits)

    def __contains__(self, value):
        # ``value in e``: ndarray's (e == value).any(), computed now; a value
        # pyet cannot compare (a str, None) equals no element, as in NumPy
        equal = self == value
        return bool(equal.any()) if isinstance(equal, Expr) else bool(equal)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d expression")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, key):
        return array_api().getitem(self, _basic_key(key))

    cdef object _python_scalar(self, str what):
        # 0-d: the value, computed now (as NumPy's 0-d arrays)
        if self.shape:
            raise TypeError(f"only 0-dimensional expressions can be converted to Python "
                            f"{what}; this one has shape {fmt_shape(self.shape)}")
        return self.__array__()[()]

    def __float__(self):
        return float(self._python_scalar("floats"))

    def __int__(self):
        return int(self._python_scalar("ints"))

    def __index__(self):
        return operator.index(self._python_scalar("integers"))

    def __format__(self, spec):
        if not self.shape:
            return format(self.__array__()[()], spec)
        if spec:
            raise TypeError(f"unsupported format string passed to {type(self).__name__}"
                            ".__format__: only 0-d expressions take one")
        return str(self)

    def __array_function__(self, func, types, args, kwargs):
        return array_api().array_function(func, types, args, kwargs)

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

    def __divmod__(self, other):
        return binary(OP_floor_divide, self, other), binary(OP_remainder, self, other)

    def __rdivmod__(self, other):
        return binary(OP_floor_divide, other, self), binary(OP_remainder, other, self)

    def __pow__(self, other, modulo):
        if modulo is not None:
            return NotImplemented
        return power(self, other)

    def __rpow__(self, other, modulo):
        if modulo is not None:
            return NotImplemented
        return binary(OP_power, other, self)

    def __and__(self, other):
        return binary(OP_bitwise_and, self, other)

    def __rand__(self, other):
        return binary(OP_bitwise_and, other, self)

    def __or__(self, other):
        return binary(OP_bitwise_or, self, other)

    def __ror__(self, other):
        return binary(OP_bitwise_or, other, self)

    def __xor__(self, other):
        return binary(OP_bitwise_xor, self, other)

    def __rxor__(self, other):
        return binary(OP_bitwise_xor, other, self)

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
        if not self.shape:  # a 0-d expression: its value, as NumPy's 0-d arrays
            return bool(self.__array__()[()])
        raise TypeError("the truth value of a lazy pyet expression is ambiguous: it is not "
                        "computed yet; evaluate it first (pyet.evaluate(e)) and use .any() "
                        "or .all(); use & and | instead of `and` and `or`")

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        op = _UFUNC_CODE.get(ufunc)
        if op is not None and len(inputs) == 2 and out is not None and not kwargs \
                and method == "__call__" and op != OP_power and type(out) is tuple \
                and len(<tuple>out) == 1 and type((<tuple>out)[0]) is Tensor:
            # np.add(a, b, out=t) into a pyet tensor, the common form: no
            # global lookups (np.matmul, np.ndarray: ~0.1 us of its ~0.6)
            assign((<Tensor>(<tuple>out)[0])._array, binary(op, inputs[0], inputs[1]))
            return (<tuple>out)[0]
        if method != "__call__" or (op is None and ufunc is not np.matmul) or kwargs:
            # ufunc.reduce, a ufunc pyet has no kernel for (a pyet.F node), or
            # NumPy on the evaluated operands
            if out is not None:
                kwargs["out"] = out
            return array_api().array_ufunc(ufunc, method, inputs, kwargs)
        if ufunc is np.matmul and len(inputs) == 2:
            e = dot(*inputs)
        elif op == OP_power:
            e = power(inputs[0], inputs[1])
        elif len(inputs) == 2:  # (the operators' path: ~0.3 us less than make_node's)
            e = binary(op, inputs[0], inputs[1])
        else:
            e = make_node(op, tuple([as_operand(x) for x in inputs]))
        if out is None:
            return e
        if type(out) is tuple:
            if len(out) != 1:
                raise TypeError(f"ufunc {ufunc.__name__} takes one output")
            out = out[0]
        dst = (<Tensor>out)._array if isinstance(out, Tensor) else out
        if not isinstance(dst, np.ndarray):
            raise TypeError(f"out must be an ndarray or pyet.Tensor, got {type(out).__name__}")
        assign(dst, e)
        return out

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("a pyet expression cannot be converted to an array without "
                             "computing it (copy=False)")
        arr = np.empty(self.shape, dtype=DTYPES[self._dt])
        assign(arr, self)
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __repr__(self):
        return node_repr(self, 64)

    def __reduce__(self):
        return (_unflatten, (flatten(self),))


cdef object _ARRAY_API = None


cdef object array_api():
    """pyet._nodes.numpy_api, the ndarray methods and NumPy protocols on
    expressions, imported when first needed.  The one import of a node family
    in core, deferred: the families import core, so core cannot import them
    when it is itself imported (test_imports_go_one_way allows this line only)."""
    global _ARRAY_API
    if _ARRAY_API is None:
        from pyet._nodes import numpy_api  # deferred (see above)
        _ARRAY_API = numpy_api
    return _ARRAY_API


cdef class Scalar(Expr):
    """A Python or NumPy scalar in a tree; bound when the tree is evaluated."""

    cdef readonly object _value
    cdef readonly int _weak          # 1 Python int, 2 Python float (NEP 50), 0 typed


cdef class PyFunc(Expr):
    """A user elementwise function (MShadow's ``F<OP>``); bound when evaluated."""

    cdef readonly object _fn
    cdef readonly object _grad       # (args, out, g) -> gradients, or None (pyet.grad)
    cdef readonly bint _in_pass      # fn's NumPy C loop runs in the pass (fn in the key)


cdef class SpecialNode(Expr):
    """A node the elementwise evaluator cannot run at (y, x) (MShadow's kComplex):
    its kernel (a ``Special``) computes it from the children."""

    cdef readonly object _kernel
    cdef readonly int _kind          # SPECIAL_*: what the engine asks of the kernel, decided once


# SpecialNode._kind: the kernel's family as the engine and its counters see it
cdef enum:
    SPECIAL_OTHER = 0
    SPECIAL_PRODUCT = 1
    SPECIAL_REDUCTION = 2


cdef inline int weak_of(Expr a):
    return (<Scalar>a)._weak if a._op == OP_scalar else 0


# --------------------------------------------------------------- dtypes

cpdef int dtype_code(object dtype) except -1:
    """Code of a supported dtype; TypeError naming any other."""
    cdef int i = 0
    for d in _DTS:  # NumPy's own dtype objects: found by identity, without hashing
        if dtype is d:
            return i
        i += 1
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
    cdef int weak = weak_of(a)
    if weak == 1:
        return int
    if weak == 2:
        return float
    return DTYPES[a._dt]


cdef tuple _resolve_numpy(int op, tuple args):
    cdef str name = OPNAMES[op]
    cdef list sides = [_numpy_side(<Expr>a) for a in args]
    if op == OP_relu:
        sides.append(int)
    if op == OP_where:
        res = np.result_type(*[DTYPES[(<Expr>a)._dt] if weak_of(a) == 0
                               else (<Scalar>a)._value for a in args[1:]])
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


# resolve()'s answers for one or two children, in C (the dict lookup, its
# int key made and hashed, was ~0.1 us of an operator's ~0.25): by op and
# each child's dtype and weakness, 1 + the index in _PAIRS; 0 not yet asked
cdef unsigned char _RES1[OP_COUNT][3 * DT_COUNT]
cdef unsigned char _RES2[OP_COUNT][3 * DT_COUNT][3 * DT_COUNT]
cdef list _PAIRS = [(c, d) for c in range(DT_COUNT) for d in range(DT_COUNT)]


cdef tuple resolve(int op, tuple args):
    """(compute dtype, result dtype) of op on args, by NumPy 2's rules (cached)."""
    cdef Py_ssize_t k = op, n = len(args), i = 0, j = 0
    cdef unsigned char *slot = NULL
    if n == 1 or n == 2:
        i = (<Expr>args[0])._dt + DT_COUNT * weak_of(<Expr>args[0])
        if n == 2:
            j = (<Expr>args[1])._dt + DT_COUNT * weak_of(<Expr>args[1])
            slot = &_RES2[op][i][j]
        else:
            slot = &_RES1[op][i]
        if slot[0]:
            return <tuple>_PAIRS[slot[0] - 1]
    for a in args:
        k = k * 16 + (<Expr>a)._dt + DT_COUNT * weak_of(a)
    hit = _RESOLVED.get(k)
    if hit is None:
        try:
            hit = _resolve_numpy(op, args)
        except TypeError as exc:
            hit = exc
        _RESOLVED[k] = hit
    if isinstance(hit, TypeError):
        raise TypeError(*(<object>hit).args)
    if slot != NULL:
        slot[0] = 1 + (<int>hit[0]) * DT_COUNT + <int>hit[1]
    return <tuple>hit


# ----------------------------------------------------------- structure keys

# Interned structure tuples.  Keys only grow (a key is never reused for
# another structure); the table is dropped when it gets large, so per-call
# parameters (pad values, crop boxes) never accumulate.
cdef dict _INTERN = {}
cdef Py_ssize_t _NEXT_KEY = 0
cdef Py_ssize_t INTERN_LIMIT = 1 << 16


def forget_structure_keys():
    """Drop the structure-key table (as when it reaches its limit): trees
    built later get new keys, never an old one's, so a structure met again
    misses the caches keyed by it once (tests that count misses start here)."""
    global _INTERN
    _INTERN = {}
    memset(_PACKED_SEEN, 0, sizeof(_PACKED_SEEN))


cdef Py_ssize_t intern_key(object t):
    global _NEXT_KEY
    k = _INTERN.get(t)
    if k is None:
        if len(_INTERN) >= INTERN_LIMIT:
            forget_structure_keys()
        k = _NEXT_KEY
        _NEXT_KEY += 1
        _INTERN[t] = k
    return k


if OP_COUNT > 256 or DT_COUNT > 8:  # (op_key's packing)
    raise ImportError("pyet: op_key packs op codes in 8 bits and dtype codes in 3")


# op_key's recent packed structures (plus 1: 0 is an empty slot) and their
# keys, direct-mapped; emptied with _INTERN
cdef unsigned long long _PACKED_SEEN[4096]
cdef Py_ssize_t _PACKED_KEY[4096]


cdef Py_ssize_t op_key(int op, int cdt, int dt, Expr a, Expr b):
    """The structure key of an op node of one child (b None) or two, without
    extra: the tuple intern_key takes, packed into one int when the children's
    keys fit 24 bits, found in a C table first (the 6-tuple made, hashed and
    compared in the dict lookup was ~0.15 us an operator; a packed int ~0.07).
    (Ints and tuples never compare equal: one dict.)"""
    cdef Py_ssize_t ka = key_of(a), kb = key_of(b) if b is not None else 0
    cdef unsigned long long packed
    cdef int slot
    if ka < (1 << 24) and kb < (1 << 24):
        packed = (<unsigned long long>op | (<unsigned long long>cdt << 8)
                  | (<unsigned long long>dt << 11) | (<unsigned long long>(b is not None) << 14)
                  | (<unsigned long long>ka << 15) | (<unsigned long long>kb << 39))
        slot = <int>((packed * 0x9E3779B97F4A7C15ULL) >> 52)
        if _PACKED_SEEN[slot] != packed + 1:
            _PACKED_KEY[slot] = intern_key(<long long>packed)
            _PACKED_SEEN[slot] = packed + 1
        return _PACKED_KEY[slot]
    if b is None:
        return intern_key((op, cdt, dt, None, ka))
    return intern_key((op, cdt, dt, None, ka, kb))


cdef Py_ssize_t tuple_key(int op, int cdt, int dt, object extra, tuple args) except -1:
    # the key of a structure op_key does not pack: its tuple packed at once,
    # no list grown and copied
    cdef Py_ssize_t n = len(args)
    cdef list keys
    if n == 1:
        return intern_key((op, cdt, dt, extra, key_of(<Expr>args[0])))
    if n == 2:
        return intern_key((op, cdt, dt, extra, key_of(<Expr>args[0]), key_of(<Expr>args[1])))
    keys = [op, cdt, dt, extra]
    for a in args:
        keys.append(key_of(<Expr>a))
    return intern_key(tuple(keys))


cdef Py_ssize_t special_key(SpecialNode e) except -1:
    # a special node's key, made when first asked (key_of): its kernel's class,
    # parameters and shape besides its children's (a product's: its batch)
    kernel = e._kernel
    cls = type(kernel)
    extra = (Product, (<object>kernel).batch) if cls is Product else \
        (cls, kernel.params(), e.shape)
    e._k = tuple_key(OP_special, e._cdt, e._dt, extra, e._args)
    return e._k


cdef inline Py_ssize_t key_of(Expr e) except -1:
    """e's structure key.  A special node's is made when first asked: a root
    written straight into dst (take, concatenate) never needs one, and its
    tuple hashed and interned was ~0.5 us of a 64-row take's ~2."""
    return e._k if e._k >= 0 else special_key(<SpecialNode>e)


cdef inline Py_ssize_t shape_size(tuple shape):
    # the elements of a shape
    cdef Py_ssize_t n = 1, i
    for i in range(len(shape)):
        n *= <Py_ssize_t>shape[i]
    return n


cdef inline Py_ssize_t min_nonzero(Py_ssize_t a, Py_ssize_t b) noexcept:
    # the lesser of two _hoist_min values, 0 (none) counting as the greatest
    return a if b == 0 or (a and a < b) else b


cdef inline double own_ns(int op, int cdt) noexcept:
    # ELEMENT_COST of op computing in cdt
    return 0.0 if op == OP_special else \
        ELEMENT_COST[op][0 if cdt == DT_F32 else 1 if cdt == DT_F64 else 2]


cdef inline Py_ssize_t hoist_min(Expr e, Py_ssize_t below):
    # e._hoist_min from its children's (below; a node is never smaller than
    # its children): e itself counted when its own op is costly or a user
    # function (one NumPy runs in the pass too)
    if e._op == OP_special:
        return 0
    if below == 0 and (COSTLY[e._op] or e._op == OP_pyfunc):
        return shape_size(e.shape) + 1
    return below


cdef inline Expr seal(Expr e, int op, tuple args, tuple shape, int cdt, int dt,
                      object extra):
    """Fill in a new node: its fields, and what follows from its children
    (structure key, flags, depth, leaf count).  ``extra``: what besides op,
    dtypes and children makes the structure (None for most nodes; a special
    node's is its kernel's, taken when its key is asked)."""
    cdef Expr a
    cdef Py_ssize_t depth = 0, nleaves = 0, n = len(args), small = 0
    cdef int flags = 0
    cdef double ns = own_ns(op, cdt)
    cdef bint one = n > 0
    for a in args:
        flags |= a._flags
        one = one and a._one
        nleaves += a._nleaves
        if a._depth > depth:
            depth = a._depth
        small = min_nonzero(small, a._hoist_min)
        ns += a._ns
    if op == OP_special:
        e._k = -1  # (key_of)
    elif (extra is None or (op == OP_pyfunc and type(extra) is int)) and (n == 1 or n == 2):
        # (most nodes: op_key's packed int; a user function's extra is its
        # operand count, which op_key packs too, or a ufunc run in the pass)
        e._k = op_key(op, cdt, dt, <Expr>args[0], <Expr>args[1] if n == 2 else None)
    else:
        e._k = tuple_key(op, cdt, dt, extra, args)
    e._op = op
    e._args = args
    e.shape = shape
    e._cdt = cdt
    e._dt = dt
    e._flags = flags | (HAS_COSTLY if COSTLY[op] else 0)
    e._depth = depth + 1
    e._nleaves = nleaves
    e._one = computed_once(op, one, args[1] if n == 2 else None)
    # (a value computed once is no work a pass repeats: nothing to hoist)
    e._hoist_min = hoist_min(e, small) if not e._one else 0
    e._ns = ns if op != OP_special and not e._one else 0.0
    return e


# ------------------------------------------------------------- broadcasting

cpdef str fmt_shape(tuple s):
    """A shape as NumPy prints it: (3,) and (2,3)."""
    return "(" + ",".join([str(n) for n in s]) + ("," if len(s) == 1 else "") + ")"


cdef tuple broadcast_shapes(tuple a, tuple b):
    """NumPy's broadcast of two shapes; ValueError naming both.  An operand's
    own tuple when the result is its shape (a column or row beside a full
    operand: no tuple built; pyet.maximum(A, col) of 16 x 16 took ~800
    instructions more than of (A, B) in Python's ints, now the same)."""
    if a is b or len(b) == 0:
        return a
    if len(a) == 0:
        return b
    cdef Py_ssize_t na = len(a), nb = len(b), n = max(na, nb), i, x, y
    cdef bint is_a = na == n, is_b = nb == n
    if n > 64:
        raise ValueError(f"pyet broadcasts shapes of at most 64 dimensions (NumPy's "
                         f"limit), got {n}")
    cdef Py_ssize_t out[64]
    for i in range(n):
        x = <Py_ssize_t>a[na - n + i] if na - n + i >= 0 else 1
        y = <Py_ssize_t>b[nb - n + i] if nb - n + i >= 0 else 1
        if x == y or y == 1:
            out[i] = x
            is_b = is_b and x == y
        elif x == 1:
            out[i] = y
            is_a = False
        else:
            raise ValueError("operands could not be broadcast together with shapes "
                             f"{fmt_shape(a)} {fmt_shape(b)}")
    if is_a:
        return a
    if is_b:
        return b
    return tuple([out[i] for i in range(n)])


cdef tuple broadcast_all(tuple args):
    cdef tuple shape = ()
    for a in args:
        shape = broadcast_shapes(shape, (<Expr>a).shape)
    return shape


# ------------------------------------------------------------------- leaves

# structure keys of leaves and scalars, by dtype (and weakness, 0-d-ness):
# taken once, as every node of the hot path needs one
cdef list _SCALAR_KEYS = [intern_key((OP_scalar, i // 3, i // 3, i % 3))
                          for i in range(3 * DT_COUNT)]
cdef list _LEAF_KEYS = [intern_key((OP_leaf, i // 4, i // 4,
                                   (None, "0-d", "constant", "one element")[i % 4]))
                        for i in range(4 * DT_COUNT)]


cdef Scalar scalar_node(object value, int dt, int weak):
    cdef Scalar e = Scalar.__new__(Scalar)
    e._op = OP_scalar
    e._args = ()
    e.shape = ()
    e._cdt = e._dt = dt
    e._k = _SCALAR_KEYS[3 * dt + weak]
    e._one = True
    e._value = value
    e._weak = weak
    return e


cdef Tensor wrap(object arr, tuple shape=None):
    """A leaf viewing ndarray ``arr`` (no copy); ``shape``: arr's, when the
    caller has it (a view of another leaf's shape: no new tuple)."""
    cdef Tensor t = Tensor.__new__(Tensor)
    cdef int code = array_dtype_code(<cnp.ndarray>arr)  # (from the type number: no dtype object)
    t._op = OP_leaf
    t._args = ()
    t.shape = (<object>arr).shape if shape is None else shape
    t._cdt = t._dt = code
    t._array = arr
    t._nleaves = 1
    # 0-d, constant and one-element leaves are lowered as scalars read when
    # bound: each a structure of its own
    t._one = one_value(t)
    t._k = _LEAF_KEYS[4 * code + (0 if not t._one else 1 if not t.shape
                                  else 2 if is_constant(t) else 3)]
    return t


cdef Tensor view_leaf(Tensor base, str kind, object arg, object arr, tuple shape=None):
    """A leaf viewing ``arr``, the view (kind, arg) of ``base``'s memory (of
    ``shape``, when the caller has it); it remembers the Tensor it came from
    and the views taken since."""
    cdef Tensor t = wrap(arr, shape)
    t._base = base._base if base._base is not None else base
    t._mapping = base._mapping + ((kind, arg),)
    return t


cdef Expr as_operand(object obj):
    """Wrap anything an op accepts: Expr, Python/NumPy scalar, array-like."""
    if isinstance(obj, Expr):
        return <Expr>obj
    cdef object tp = type(obj)
    if tp is float:
        return scalar_node(obj, DT_F64, 2)
    if tp is int:
        return scalar_node(obj, DT_I64, 1)
    if tp is bool:
        return scalar_node(obj, DT_BOOL, 0)
    if isinstance(obj, cnp.ndarray):
        if tp is not np.ndarray:  # np.matrix and other subclasses: the plain array
            obj = obj.view(np.ndarray)
        return wrap(obj)
    if isinstance(obj, np.generic):
        return scalar_node(obj, dtype_code(obj.dtype), 0)
    if isinstance(obj, bool):
        return scalar_node(bool(obj), DT_BOOL, 0)
    if isinstance(obj, int):
        return scalar_node(int(obj), DT_I64, 1)
    if isinstance(obj, float):
        return scalar_node(float(obj), DT_F64, 2)
    if isinstance(obj, complex):
        raise TypeError("pyet does not support dtype complex; "
                        f"supported dtypes are {_SUPPORTED}")
    return wrap(np.asarray(obj).view(np.ndarray))


def as_expr(obj):
    """``obj`` as an Expr: expressions as they are, scalars as scalar nodes,
    array-likes as leaves (no copy)."""
    return as_operand(obj)


cdef Tensor scalar_array(Expr s):
    """A scalar node as a 0-d leaf of its dtype."""
    return wrap(np.asarray((<Scalar>s)._value, dtype=DTYPES[s._dt]))


# -------------------------------------------------------------- elementwise

cdef object _check_weak_int(Expr s, int cdt):
    # NEP 50: a Python int must fit the integer dtype it meets.
    if weak_of(s) == 1 and (cdt == DT_I32 or cdt == DT_I64):
        info = np.iinfo(DTYPES[cdt])
        if not info.min <= (<Scalar>s)._value <= info.max:
            raise OverflowError(f"Python integer {(<Scalar>s)._value} out of bounds for "
                                f"{DTYPES[cdt]}")


_COMPARISONS = frozenset({OP_less, OP_less_equal, OP_greater, OP_greater_equal, OP_equal,
                          OP_not_equal})


cdef object _constant_comparison(int op, tuple args, int cdt):
    # NumPy 2 compares integers with a Python int beyond their dtype
    # mathematically: every element gets the same answer (t < 2**31 is all
    # True for int32), so the node is that constant, broadcast
    if op not in _COMPARISONS or (cdt != DT_I32 and cdt != DT_I64):
        return None
    info = np.iinfo(DTYPES[cdt])
    beyond = False
    sides = []
    for a in args:
        if weak_of(a) == 1 and not info.min <= (<Scalar>a)._value <= info.max:
            sides.append(np.inf if (<Scalar>a)._value > 0 else -np.inf)
            beyond = True
        else:
            sides.append(0.0)  # any in-range value: the answer is the same
    if not beyond:
        return None
    value = np.array(bool(_UFUNC_BY_CODE[op](*sides)))
    return wrap(broadcast_view(value, broadcast_all(args)))


# the build-time folds of rewrite.py, by op code
cdef dict _NEUTRAL = {OPCODES[name]: (side, value) for name, side, value in NEUTRAL_FOLDS}
cdef frozenset _INVOLUTIONS = frozenset([OPCODES[name] for name in INVOLUTIONS])


cdef dict _INTEGER_CONSTANT = {OPCODES[name]: value for name, value in INTEGER_CONSTANTS}


cdef object _integer_constant(int op, tuple args, int cdt):
    # INTEGER_CONSTANTS: isnan/isinf/isfinite of integers and bools, one value
    if cdt != DT_BOOL and cdt != DT_I32 and cdt != DT_I64:
        return None
    value = _INTEGER_CONSTANT.get(op)
    if value is None:
        return None
    return wrap(broadcast_view(np.array(value), broadcast_all(args)))


# per op code: a fold may apply (the hot path of operators asks this in C)
cdef bint FOLDABLE[OP_COUNT]
cdef bint COMPARES[OP_COUNT]
cdef bint COSTLY[OP_COUNT]
cdef bint INTEGER_CONSTANT[OP_COUNT]
# a costly op's ns per element (rewrite.ELEMENT_NS): float32, float64, integers
cdef double ELEMENT_COST[OP_COUNT][3]
for _op in range(OP_COUNT):
    FOLDABLE[_op] = _op in _NEUTRAL or _op in _INVOLUTIONS
    INTEGER_CONSTANT[_op] = _op in _INTEGER_CONSTANT
    COMPARES[_op] = _op in _COMPARISONS
    COSTLY[_op] = pyet_op_names[_op].decode() in COSTLY_OPS
    _ns = ELEMENT_NS.get(pyet_op_names[_op].decode(), (0.0, 0.0))
    ELEMENT_COST[_op][:] = [_ns[0], _ns[1], INT_ELEMENT_NS if COSTLY[_op] else 0.0]
ELEMENT_COST[OP_pyfunc][:] = [PYFUNC_ELEMENT_NS] * 3


cdef inline bint is_constant(Expr e) noexcept:
    # a leaf holding one value everywhere (pyet.Fill, pyet.Zero, np.broadcast_to
    # of one element): every stride 0, at least one element
    if e._op != OP_leaf or not e.shape:
        return False
    cdef cnp.ndarray a = <cnp.ndarray>(<Tensor>e)._array
    cdef int d
    for d in range(cnp.PyArray_NDIM(a) - 1, -1, -1):  # (the last first: most leaves
        if cnp.PyArray_STRIDES(a)[d] != 0:             # are told by it)
            return False
    return cnp.PyArray_SIZE(a) != 0


cdef inline bint one_value(Expr e) noexcept:
    # a leaf of one element (0-d, (1,), (1, 1)...) or a constant leaf: lowered
    # as a scalar, its value read when the pass is bound
    return e._op == OP_leaf and (cnp.PyArray_SIZE(<cnp.ndarray>(<Tensor>e)._array) == 1
                                 or is_constant(e))


# ops whose node of one-value operands is computed once when a pass is bound
# (Expr._one): all but leaves, scalars, user functions and special nodes
cdef bint ONE_VALUE_OP[OP_COUNT]
for _op in range(OP_COUNT):
    ONE_VALUE_OP[_op] = _op not in (OP_leaf, OP_scalar, OP_pyfunc, OP_special)


cdef inline bint computed_once(int op, bint operands_one, object second) noexcept:
    # Expr._one of an op node whose operands all hold one value (operands_one):
    # not x ** b of an array exponent b, which takes pow per element (lowering)
    return ONE_VALUE_OP[op] and operands_one and not (
        op == OP_power and (<Expr>second).shape)


cdef object constant_value(Expr e):
    # the one value of a constant leaf, as a 0-d read-only view of its dtype
    # (made in C: reshape(-1)[:1].reshape(()) cost ~0.3 us an evaluation)
    cdef cnp.ndarray a = <cnp.ndarray>(<Tensor>e)._array
    descr = <object>cnp.PyArray_DESCR(a)
    Py_INCREF(descr)  # (stolen)
    out = _new_from_descr(<PyTypeObject *>cnp.ndarray, <cnp.PyArray_Descr *>descr, 0, NULL,
                          NULL, cnp.PyArray_DATA(a), 0, NULL)
    cnp.set_array_base(<cnp.ndarray>out, a)
    return out


cdef inline bint _is_number(Expr s, object value):
    # s is a scalar node, or a constant leaf, holding ``value`` (a number, not a bool)
    if s._op == OP_leaf and is_constant(s):
        v = constant_value(s)
        return v.dtype.kind != "b" and v == value
    if s._op != OP_scalar:
        return False
    v = (<Scalar>s)._value
    if type(v) is float or type(v) is int:
        return v == value
    return not isinstance(v, (bool, np.bool_)) and v == value


cdef object _fold(int op, tuple args, int dt):
    # the operand a fold leaves, or None
    cdef Expr a
    if len(args) == 1:
        a = args[0]
        if op in _INVOLUTIONS and a._op == op and a._dt == dt:
            return a._args[0]  # (its dtype is a's: these ops keep the dtype)
        return None
    fold = _NEUTRAL.get(op)
    if fold is None:
        return None
    side, value = fold
    a = args[0]
    if a._dt == dt and a._op != OP_scalar and _is_number(args[1], value) and \
            a.shape == broadcast_all(args):
        return a
    a = args[1]
    if side == 2 and a._dt == dt and a._op != OP_scalar and _is_number(args[0], value) and \
            a.shape == broadcast_all(args):
        return a
    return None


# ------------------------------------------------- build-time rewrites

# rewrite.SPECIAL_FOLDS by op code: {the child's kernel name: the new kernel's name}
cdef dict _SPECIAL = {}
for _name, _kname, _new in SPECIAL_FOLDS:
    _SPECIAL.setdefault(OPCODES[_name], {})[_kname] = _new
# rewrite.FAST_MATH_FOLDS by the root op of their pattern
cdef dict _FAST = {}
for _pattern, _result in FAST_MATH_FOLDS:
    _FAST.setdefault(OPCODES[_pattern[0]], []).append((_pattern, _result))

cdef bint SPECIAL_FOLDABLE[OP_COUNT]
cdef bint FAST_FOLDABLE[OP_COUNT]
for _op in range(OP_COUNT):
    SPECIAL_FOLDABLE[_op] = _op in _SPECIAL
    FAST_FOLDABLE[_op] = _op in _FAST

# the fast_math block open in this context (a fast_math object) or None; the
# count of blocks open in any thread keeps the hot path from asking
_FAST_MATH = contextvars.ContextVar("pyet.fast_math", default=None)
cdef Py_ssize_t FAST_MATH_OPEN = 0
# how often each rewrite was applied, since the last rewrite_counts(reset=True)
cdef dict _REWRITE_COUNTS = {}


class fast_math:
    """A block inside which rewrites that hold only for finite inputs apply.

    Nodes built inside ``with pyet.fast_math():`` (in this thread or async
    context) fold ``x * 0`` -> 0, ``x - x`` -> 0, ``log(exp(x))`` -> x and
    ``exp(log(x))`` -> x (the rows of ``rewrite.FAST_MATH_FOLDS``).  Each gives
    the unrewritten tree's value when every input and intermediate is finite
    (and, for ``exp(log(x))``, x >= 0), and may not otherwise: ``inf * 0`` is
    nan, not 0; ``log(exp(1000.0))`` is inf, not 1000.  Outside a block they
    never apply.  Trees built before the block are not rewritten when
    evaluated inside it.

    Attributes
    ----------
    applied : list of str
        The rewrites applied to nodes built while the block was open (the
        exact ones too, e.g. ``log(softmax(x)) -> log_softmax(x)``), in order.

    Examples
    --------
    >>> with pyet.fast_math() as fm:
    ...     z = x * 0 + pyet.log(pyet.exp(y))   # y + a constant 0
    >>> fm.applied
    ['x*0 -> 0', 'log(exp(x)) -> x']
    """

    def __init__(self):
        self.applied = []
        self._tokens = []

    def __enter__(self):
        global FAST_MATH_OPEN
        self._tokens.append(_FAST_MATH.set(self))
        FAST_MATH_OPEN += 1
        return self

    def __exit__(self, exc_type, exc, tb):
        global FAST_MATH_OPEN
        _FAST_MATH.reset(self._tokens.pop())
        FAST_MATH_OPEN -= 1
        return False


def rewrite_counts(bint reset=False):
    """How often each build-time rewrite was applied (rule text -> count)
    since the last ``rewrite_counts(reset=True)``."""
    out = dict(_REWRITE_COUNTS)
    if reset:
        _REWRITE_COUNTS.clear()
    return out


def rewrite_notes(root):
    """Lines naming the build-time rewrites that made nodes of ``root``'s tree
    (each node once); a fold whose result is an existing node (x from
    ``log(exp(x))``) leaves no mark on the tree and is not listed."""
    cdef list stack = [as_operand(root)], lines = []
    cdef set seen = set()
    cdef Expr e
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if e._rewrite is not None:
            lines.append(f"rewrite applied when built: {e._rewrite}")
        stack.extend(e._args)
    return lines


cdef object _applied(object result, str rule):
    # count and log a rewrite; a fresh node keeps its text for explain
    _REWRITE_COUNTS[rule] = _REWRITE_COUNTS.get(rule, 0) + 1
    block = _FAST_MATH.get() if FAST_MATH_OPEN else None
    if block is not None:
        block.applied.append(rule)
    return result


cdef object _special_fold(int op, Expr child, int dt):
    # op(special) as one special node (rewrite.SPECIAL_FOLDS), or None
    kernel = (<SpecialNode>child)._kernel
    new_name = _SPECIAL[op].get(kernel.name)
    if new_name is None or child._dt != dt:
        return None
    new_kernel = kernel.variant(new_name)
    if new_kernel is None:
        return None
    cdef Expr e = special(new_kernel, child._args, child.shape, DTYPES[dt])
    rule = f"{OPNAMES[op]}({kernel.name}(x)) -> {new_name}(x)"
    e._rewrite = rule
    return _applied(e, rule)


cdef bint _same_value(Expr a, Expr b):
    # the same node, or the same structure over the same memory (so the same value)
    if a is b:
        return True
    if key_of(a) != key_of(b) or len(a._args) != len(b._args):
        return False
    if a._op == OP_leaf:
        x, y = (<Tensor>a)._array, (<Tensor>b)._array
        return (cnp.PyArray_DATA(<cnp.ndarray>x) == cnp.PyArray_DATA(<cnp.ndarray>y)
                and x.shape == y.shape and x.strides == y.strides)
    if a._op == OP_scalar:
        return (<Scalar>a)._value == (<Scalar>b)._value
    if a._op == OP_special:
        if (<SpecialNode>a)._kernel is not (<SpecialNode>b)._kernel and \
                (<SpecialNode>a)._kernel.params() != (<SpecialNode>b)._kernel.params():
            return False
    elif a._op == OP_pyfunc and (<PyFunc>a)._fn is not (<PyFunc>b)._fn:
        return False
    for i in range(len(a._args)):
        if not _same_value(a._args[i], b._args[i]):
            return False
    return True


cdef bint _fast_match(object pattern, Expr e, dict binding):
    if isinstance(pattern, str):
        bound = binding.get(pattern)
        if bound is None:
            if e._op == OP_scalar:  # x is an array operand
                return False
            binding[pattern] = e
            return True
        return _same_value(bound, e)
    if not isinstance(pattern, tuple):
        return _is_number(e, pattern)
    if e._op != OPCODES[pattern[0]] or len(e._args) != len(pattern) - 1:
        return False
    return _fast_match_args(pattern, e._args, binding)


cdef bint _fast_match_args(tuple pattern, tuple args, dict binding):
    trial = dict(binding)
    if all(_fast_match(p, a, trial) for p, a in zip(pattern[1:], args)):
        binding.update(trial)
        return True
    if pattern[0] in COMMUTATIVE:
        trial = dict(binding)
        if _fast_match(pattern[1], args[1], trial) and _fast_match(pattern[2], args[0], trial):
            binding.update(trial)
            return True
    return False


cdef str _pattern_text(object p):
    if isinstance(p, tuple):
        if p[0] == "multiply":
            return f"{_pattern_text(p[1])}*{_pattern_text(p[2])}"
        if p[0] == "subtract":
            return f"{_pattern_text(p[1])}-{_pattern_text(p[2])}"
        return f"{p[0]}({', '.join([_pattern_text(q) for q in p[1:]])})"
    return str(p)


cdef object _fast_math_fold(int op, tuple args, int dt):
    # a rewrite.FAST_MATH_FOLDS row applied, inside a fast_math block only
    if _FAST_MATH.get() is None:
        return None
    shape = broadcast_all(args)
    for pattern, result in _FAST[op]:
        binding = {}
        if not _fast_match_args(pattern, args, binding):
            continue
        rule = f"{_pattern_text(pattern)} -> {result}"
        if isinstance(result, str):
            x = binding[result]
            if (<Expr>x)._dt != dt or (<Expr>x).shape != shape:
                continue
            return _applied(x, rule)
        c = wrap(broadcast_view(np.full((), result, DTYPES[dt]), shape))
        (<Expr>c)._rewrite = rule
        return _applied(c, rule)
    return None


cdef object _constant_fold(int op, tuple args, int dt):
    # an op whose operands are constant leaves and scalars is a constant leaf:
    # NumPy computes its one value (so it is NumPy's, bit for bit)
    cdef Expr a
    cdef bint any_constant = False
    ufunc = _COMPUTING_UFUNC[op]  # (sigmoid, erf, relu: their kernels compute them)
    if ufunc is None or op == OP_power:  # (power's scalar fast paths are the kernels')
        return None
    values = []
    for a in args:
        if a._op == OP_scalar:
            values.append((<Scalar>a)._value)
        elif is_constant(a):
            any_constant = True
            values.append(constant_value(a).reshape(1))  # NumPy's array loop
        else:
            return None
    if not any_constant:
        return None
    try:
        # a value that raises a floating-point error is not folded: the error
        # belongs to the evaluation, which reports it by np.errstate's rules
        # (folded quietly, 1.0 / Fill(0.0, n) reported nothing at all)
        with np.errstate(all="raise"):
            value = np.asarray(ufunc(*values)).astype(DTYPES[dt], copy=False).reshape(())
    except FloatingPointError:
        return None
    return wrap(broadcast_view(value, broadcast_all(args)))


cdef Expr make_node(int op, tuple args):
    """A lazy op node: shape, dtypes and structure key computed here, once."""
    cdef Expr e = Expr.__new__(Expr), a
    cdef int cdt, dt
    cdt, dt = resolve(op, args)
    if FOLDABLE[op]:
        folded = _fold(op, args, dt)
        if folded is not None:
            return folded
    if SPECIAL_FOLDABLE[op] and (<Expr>args[0])._op == OP_special:
        folded = _special_fold(op, args[0], dt)
        if folded is not None:
            return folded
    if FAST_MATH_OPEN and FAST_FOLDABLE[op]:
        folded = _fast_math_fold(op, args, dt)
        if folded is not None:
            return folded
    for a in args:  # all operands constant (or scalar): a constant
        if a._op != OP_scalar:
            if is_constant(a):
                folded = _constant_fold(op, args, dt)
                if folded is not None:
                    return folded
            break
    if COMPARES[op]:
        constant = _constant_comparison(op, args, cdt)
        if constant is not None:
            return constant
    elif INTEGER_CONSTANT[op]:
        constant = _integer_constant(op, args, cdt)
        if constant is not None:
            return constant
    seal(e, op, args, broadcast_all(args), cdt, dt, None)
    for a in args:
        if a._op == OP_scalar:
            _check_weak_int(a, cdt)
    if op == OP_power and (cdt == DT_I32 or cdt == DT_I64):
        _power_exponent(e)
    return e


cdef _power_exponent(Expr e):
    # NumPy refuses integer ** negative integer: a scalar exponent is checked
    # now, an array one each time the tree is evaluated (its values may change)
    cdef Expr exponent = e._args[1]
    if exponent._op == OP_scalar:
        if (<Scalar>exponent)._value < 0:
            raise ValueError("Integers to negative integer powers are not allowed.")
    else:
        e._flags |= HAS_INT_POWER


def apply(str name, tuple operands):
    """Build the node for the op table's ``name`` on operands."""
    cdef Py_ssize_t i, n = len(operands)
    cdef list args = [None] * n
    cdef bint scalars = True
    for i in range(n):  # (a loop, not all() of a generator: ~0.2 us of a ~0.7 us call)
        a = as_operand(operands[i])
        args[i] = a
        scalars = scalars and (<Expr>a)._op == OP_scalar
    return applied(OPCODES[name], args, scalars)


cdef Expr apply_unary(int op, object x):
    # apply's node of a one-operand op by its code (pyet's generated
    # functions: no name lookup, no tuple; pyet.arccos(A) 0.61 -> 0.17 us)
    cdef Expr a = as_operand(x)
    if a._op == OP_scalar:
        return applied(op, [a], True)
    return make_node(op, (a,))


cdef Expr apply_binary(int op, object x, object y):
    # apply's node of a two-operand op by its code
    cdef Expr a = as_operand(x), b = as_operand(y)
    cdef bint scalars = a._op == OP_scalar and b._op == OP_scalar
    if scalars or op == OP_power:
        return applied(op, [a, b], scalars)
    return binary(op, a, b)  # (the operators' node: pyet.maximum(A, C) 4,450 -> 3,670 instructions)


cdef object _MISSING = object()


def op_function(int op, int arity, str name):
    """pyet's public function ``name`` of op code ``op`` (pyet.maximum),
    compiled: a call goes straight to the node's maker (the Python wrapper
    each was written as cost ~400 of pyet.maximum(A, B)'s ~2,100
    instructions).  Python's own messages for a wrong call, naming it."""
    if arity == 1:
        def fn(x=_MISSING, *args, **kwargs):
            if args or kwargs or x is _MISSING:
                _bad_call(name, ("x",), (x,), args, kwargs)
            return apply_unary(op, x)
    else:
        def fn(x1=_MISSING, x2=_MISSING, *args, **kwargs):
            if args or kwargs or x1 is _MISSING or x2 is _MISSING:
                _bad_call(name, ("x1", "x2"), (x1, x2), args, kwargs)
            return apply_binary(op, x1, x2)
    return fn


cdef _bad_call(str name, tuple params, tuple given, tuple args, dict kwargs):
    # the TypeError Python raises for a call to name(*params) that does not fit
    if kwargs:
        raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if args:
        n = len(params)
        raise TypeError(f"{name}() takes {n} positional argument{'s' if n > 1 else ''} "
                        f"but {n + len(args)} were given")
    missing = [p for p, v in zip(params, given) if v is _MISSING]
    names = " and ".join([f"'{p}'" for p in missing])
    raise TypeError(f"{name}() missing {len(missing)} required positional "
                    f"argument{'s' if len(missing) > 1 else ''}: {names}")


cdef Expr applied(int op, list args, bint scalars):
    # op's node on operand nodes args; scalars: all of them scalars
    if scalars:
        # a function of scalars alone still makes a (0-d) array expression;
        # the first operand becomes a 0-d array of its NumPy type (as NumPy's)
        first = <Scalar>args[0]
        if first._weak == 1 and not -2**63 <= first._value < 2**63:
            raise OverflowError(f"Python integer {first._value} out of bounds for int64")
        args[0] = wrap(np.asarray(first._value))
    if op == OP_power:
        return power(args[0], args[1])
    return make_node(op, tuple(args))


def where(object cond, object x, object y):
    """``x`` where ``cond`` is true, else ``y`` (NumPy's ``where``), lazily."""
    cdef Expr c = as_operand(cond)
    if c._op == OP_scalar:
        c = scalar_array(c)
    if c._dt != DT_BOOL:
        c = make_node(OP_not_equal, (c, scalar_node(0, DT_I64, 1)))
    return make_node(OP_where, (c, as_operand(x), as_operand(y)))


# a ufunc's result dtype for pyet.F by (ufunc, operand dtype codes), resolved once
cdef dict _UFUNC_RESULTS = {}
cdef object _UFUNC_TYPE = np.ufunc


def F(object fn, operands, dtype=None, grad=None):
    """A user elementwise function as a node (MShadow's ``F<OP>``); ``grad``,
    its gradient rule for pyet.grad, is kept on the node."""
    cdef list args = [as_operand(o) for o in operands]
    if not args:
        raise TypeError("pyet.F needs at least one operand")
    cdef Expr a
    for i in range(len(args)):
        if (<Expr>args[i])._op == OP_scalar:
            args[i] = scalar_array(args[i])
    if len(args) > 4:
        raise TypeError(f"pyet.F takes at most 4 operands, got {len(args)}")
    if dtype is not None:
        if not callable(fn):
            raise TypeError(f"pyet.F needs a NumPy ufunc or a callable, got "
                            f"{type(fn).__name__}")
        out = dtype
    elif type(fn) is _UFUNC_TYPE or isinstance(fn, np.ufunc):
        if (<cnp.ufunc>fn).nin != len(args) or (<cnp.ufunc>fn).nout != 1:
            raise TypeError(f"pyet.F: ufunc {fn.__name__} takes {fn.nin} inputs and "
                            f"gives {fn.nout} outputs; got {len(args)} operands")
        dts = [(<Expr>a)._dt for a in args]
        slot = _fn_slot(fn, dts, FN_RESULT)
        if slot != NULL and slot.result >= 0:  # (the dict's key made and hashed: ~0.3 us)
            return _pyfunc_node(fn, args, slot.result, grad, slot.in_pass)
        key = (fn,) + tuple(dts)
        out = _UFUNC_RESULTS.get(key)
        if out is None:  # (resolve_dtypes: ~1 us of the node's ~2)
            try:
                out = fn.resolve_dtypes(tuple([DTYPES[(<Expr>a)._dt] for a in args])
                                        + (None,))[fn.nin]
            except Exception as exc:
                raise TypeError(f"pyet.F: {fn.__name__} has no loop for these dtypes: "
                                f"{exc}") from None
            if len(_UFUNC_RESULTS) >= 1024:
                _UFUNC_RESULTS.clear()
            _UFUNC_RESULTS[key] = out
    elif callable(fn):
        # the result type of empty operands of the operands' dtypes: no value
        # computed; each block's result is checked against it
        empties = [np.empty(0, dtype=DTYPES[(<Expr>a)._dt]) for a in args]
        for x in empties:
            x.flags.writeable = False  # as the blocks fn gets when evaluated
        probe = fn(*empties)
        if probe is None:
            name = getattr(fn, "__name__", repr(fn))
            raise TypeError(f"pyet.F: {name} returned None; it must return an array")
        out = np.asarray(probe).dtype
    else:
        raise TypeError(f"pyet.F needs a NumPy ufunc or a callable, got {type(fn).__name__}")
    cdef int dt = dtype_code(out)
    if type(fn) is _UFUNC_TYPE and dtype is None:
        slot = _fn_slot(fn, [(<Expr>a)._dt for a in args], FN_RESULT)
        if slot != NULL:
            slot.result = dt
    return _pyfunc_node(fn, args, dt, grad, -1)


cdef PyFunc _pyfunc_node(object fn, list args, int dt, object grad, int in_pass):
    # pyet.F's node, its operands and result dtype known
    if grad is not None and not callable(grad):
        raise TypeError(f"pyet.F: grad must be callable, got {type(grad).__name__}")
    return _sealed_pyfunc(fn, grad, tuple(args), dt, in_pass)


cdef PyFunc _sealed_pyfunc(object fn, object grad, tuple args, int dt, int in_pass):
    # NumPy's own ufunc whose C loop for the operands' dtype (all the result's)
    # gives NumPy's bits runs in the pass as an op's NumPy loop (fn is then
    # part of the structure); any other function is called from Python on
    # each block, or hoisted (HAS_PYFUNC).  (F(np.expm1, A) + 1 of 16 x 16:
    # 1.65 us assigned through the hoist and a second pass).  in_pass: F's
    # slot's answer, or -1 to ask
    cdef PyFunc e = PyFunc.__new__(PyFunc)
    e._fn, e._grad = fn, grad
    e._in_pass = in_pass if in_pass >= 0 else _loop_in_pass(fn, args, dt)
    seal(e, OP_pyfunc, args, broadcast_all(args), dt, dt, fn if e._in_pass else len(args))
    if not e._in_pass:
        e._flags |= HAS_PYFUNC
    return e


cdef bint _loop_in_pass(object fn, tuple args, int dt) except -1:
    # NumPy's own ufuncs only: their typed loops never call into Python, so
    # they run without the GIL, on any thread (asked once: F's slot, which
    # the knobs empty)
    cdef Expr a
    if type(fn) is not _UFUNC_TYPE or len(args) > PYET_MAX_IN or not C_LOOPS_ON \
            or not UFUNCS_IN_PASS:
        return False
    dts = [a._dt for a in args]
    cdef fn_slot *slot = _fn_slot(fn, dts, FN_RESULT)
    if slot != NULL and slot.in_pass >= 0 and slot.result == dt:
        return slot.in_pass
    ok = getattr(np, (<object>fn).__name__, None) is fn and all([d == dt for d in dts]) \
        and _c_loop_index(fn, dts, dt) >= 0
    slot = _fn_slot(fn, dts, FN_RESULT)  # (again: the probe may have taken it)
    if slot != NULL and slot.result == dt:  # (a dtype= other than fn's: asked each time)
        slot.in_pass = ok
    return ok


cdef Expr binary(int op, object a, object b):
    # make_node for two operands, without the loops (the hot path of operators)
    cdef Expr x = as_operand(a), y = as_operand(b)
    cdef Expr e = Expr.__new__(Expr)
    cdef int cdt, dt
    cdef tuple args = (x, y)
    cdt, dt = resolve(op, args)
    if x._op == OP_scalar or y._op == OP_scalar:
        if COMPARES[op]:
            constant = _constant_comparison(op, args, cdt)
            if constant is not None:
                return constant
        elif FOLDABLE[op]:
            folded = _fold(op, args, dt)
            if folded is not None:
                return folded
    if (x._op == OP_leaf and is_constant(x)) or (y._op == OP_leaf and is_constant(y)):
        folded = _fold(op, args, dt) if FOLDABLE[op] else None
        if folded is None:
            folded = _constant_fold(op, args, dt)
        if folded is not None:
            return folded
    if FAST_MATH_OPEN and FAST_FOLDABLE[op]:
        folded = _fast_math_fold(op, args, dt)
        if folded is not None:
            return folded
    # seal() for two children, unrolled: the hot path of operators
    e._op = op
    e._args = args
    e.shape = broadcast_shapes(x.shape, y.shape)
    e._cdt = cdt
    e._dt = dt
    e._k = op_key(op, cdt, dt, x, y)
    e._flags = x._flags | y._flags | (HAS_COSTLY if COSTLY[op] else 0)
    e._depth = 1 + (x._depth if x._depth > y._depth else y._depth)
    e._nleaves = x._nleaves + y._nleaves
    e._one = computed_once(op, x._one and y._one, y)
    if e._one:  # (seal's)
        e._hoist_min, e._ns = 0, 0.0
    else:
        e._hoist_min = hoist_min(e, min_nonzero(x._hoist_min, y._hoist_min))
        e._ns = own_ns(op, cdt) + x._ns + y._ns
    if x._op == OP_scalar:
        _check_weak_int(x, cdt)
    if y._op == OP_scalar:
        _check_weak_int(y, cdt)
    if op == OP_power and (cdt == DT_I32 or cdt == DT_I64):
        _power_exponent(e)
    return e


cdef Expr cast(Expr e, int dt):
    """e converted to dtype dt (a node of its own; nothing is copied)."""
    if e._dt == dt:
        return e
    return seal(Expr.__new__(Expr), OP_cast, (e,), e.shape, e._dt, dt, None)


cdef Expr power(object base, object exponent):
    # NumPy's ndarray ** scalar takes fast paths: ** 2 is square (the same
    # value as pow, much faster) and ** 0.5 is sqrt (which differs from pow
    # at -0.0 and -inf); follow both.
    if type(exponent) is int and exponent == 2 and isinstance(base, Expr) \
            and (<Expr>base)._op != OP_scalar and (<Expr>base)._dt != DT_BOOL:
        # (the common case without the power node built first: t **= 2 of
        # 16 x 16 float64 0.82 -> 0.61 us; a weak int keeps base's dtype)
        return make_node(OP_square, (base,))
    cdef Expr e = binary(OP_power, base, exponent)
    if e._op != OP_power:  # constants alone: computed already
        return e
    cdef Expr ex = e._args[1]
    if ex._op != OP_scalar or isinstance((<Scalar>ex)._value, (bool, np.bool_)):
        return e
    value = (<Scalar>ex)._value
    if value == 2:
        return make_node(OP_square, (cast(e._args[0], e._cdt),))
    if value == 0.5 and (e._cdt == DT_F32 or e._cdt == DT_F64):
        return make_node(OP_sqrt, (cast(e._args[0], e._cdt),))
    return e


def special(object kernel, tuple args, tuple shape, object dtype):
    """A node the elementwise evaluator cannot run at (y, x) (MShadow's
    kComplex): ``kernel`` (a ``Special``) computes its value from its child
    expressions ``args``; checks are the caller's, done before this."""
    return make_special(kernel, args, shape, dtype_code(dtype))


# (SpecialNode._kind, the node's own flags) by kernel class, decided once per class
cdef dict _KIND_OF_CLASS = {}


cdef tuple _kind_of_class(object cls):
    # (a family's class, known by name only: core does not import families;
    # the MRO, not isinstance: that is ABCMeta's, ~0.3 us)
    kind = SPECIAL_PRODUCT if Product in cls.__mro__ else \
        SPECIAL_REDUCTION if cls.__name__ == "Reduction" else SPECIAL_OTHER
    flags = HAS_SPECIAL | (HAS_DASK if getattr(cls, "dask_source", False) else 0)
    _KIND_OF_CLASS[cls] = kind_flags = (kind, flags)
    return kind_flags


cdef SpecialNode make_special(object kernel, tuple args, tuple shape, int dt):
    cdef SpecialNode e = SpecialNode.__new__(SpecialNode)
    cdef object cls = type(kernel)
    cdef int flags = HAS_SPECIAL
    if cls is Product:
        e._kind = SPECIAL_PRODUCT
    else:
        kind_flags = _KIND_OF_CLASS.get(cls)
        if kind_flags is None:
            kind_flags = _kind_of_class(cls)
        e._kind, flags = <tuple>kind_flags
    seal(e, OP_special, args, shape, dt, dt, None)
    e._kernel = kernel
    e._flags |= flags
    return e


cpdef Expr with_args(Expr e, tuple args):
    """A copy of elementwise node e over new children of the same dtypes (shape
    recomputed): views pushed down to leaves, special nodes replaced by leaves."""
    cdef Expr c
    if e._op == OP_pyfunc:
        return _sealed_pyfunc((<PyFunc>e)._fn, (<PyFunc>e)._grad, args, e._dt, -1)
    c = Expr.__new__(Expr)
    seal(c, e._op, args, broadcast_all(args), e._cdt, e._dt, None)
    if e._flags & HAS_INT_POWER and e._op == OP_power:
        c._flags |= HAS_INT_POWER
    return c


_CMP_OPS = {0: OP_less, 1: OP_less_equal, 2: OP_equal, 3: OP_not_equal,
            4: OP_greater, 5: OP_greater_equal}


# ------------------------------------------------------------------- pickling

cdef list flatten(Expr root):
    """The tree in post-order, each node with its children's positions: the
    structure pickles as a flat list, whatever the tree's depth."""
    cdef list order = [], stack = [(root, False)]
    cdef dict index = {}
    cdef Expr e
    while stack:
        e, done = stack.pop()
        if id(e) in index:
            continue
        if not done:
            stack.append((e, True))
            for a in reversed(e._args):
                if id(a) not in index:
                    stack.append((a, False))
            continue
        kids = tuple(index[id(a)] for a in e._args)
        index[id(e)] = len(order)
        if e._op == OP_leaf:
            state = ("leaf", (<Tensor>e)._array)
        elif e._op == OP_scalar:
            state = ("scalar", (<Scalar>e)._value, e._dt, (<Scalar>e)._weak)
        elif e._op == OP_pyfunc:
            state = ("pyfunc", (<PyFunc>e)._fn, e._dt, (<PyFunc>e)._grad)
        elif e._op == OP_special:
            state = ("special", (<SpecialNode>e)._kernel, e.shape, e._dt)
        else:
            state = ("op", OPNAMES[e._op], e._cdt, e._dt)
        order.append((state, kids))
    return order


def _unflatten(list order):
    cdef list built = []
    cdef Expr e
    for state, kids in order:
        args = tuple(built[k] for k in kids)
        kind = state[0]
        if kind == "leaf":
            e = wrap(state[1])
        elif kind == "scalar":
            e = scalar_node(state[1], state[2], state[3])
        elif kind == "pyfunc":
            e = F(state[1], args, DTYPES[state[2]], state[3])
        elif kind == "special":
            e = special(state[1], args, state[2], DTYPES[state[3]])
        else:
            e = seal(Expr.__new__(Expr), OPCODES[state[1]], args, broadcast_all(args),
                     state[2], state[3], None)
            if e._op == OP_power and (e._cdt == DT_I32 or e._cdt == DT_I64):
                _power_exponent(e)
        built.append(e)
    return built[len(built) - 1]


# ------------------------------------------------------------------- repr

cdef str node_repr(Expr e, int budget):
    # depth-limited: a deeper tree prints "..." below the budget
    if e._op == OP_leaf:
        return f"Tensor(shape={fmt_shape(e.shape)}, dtype={DTYPES[e._dt]})"
    if e._op == OP_scalar:
        return repr((<Scalar>e)._value)
    if budget <= 0:
        return f"...(shape={fmt_shape(e.shape)}, dtype={DTYPES[e._dt]})"
    if e._op == OP_cast:
        return f"astype({node_repr(e._args[0], budget - 1)}, {DTYPES[e._dt]})"
    parts = [node_repr(a, budget - 1) for a in e._args]
    name = OPNAMES[e._op]
    if e._op == OP_pyfunc:
        fn = (<PyFunc>e)._fn
        name = "F[" + getattr(fn, "__name__", repr(fn)) + "]"
    elif e._op == OP_special:
        kernel = (<SpecialNode>e)._kernel
        name = kernel.name
        parts.extend(kernel.describe())
    return name + "(" + ", ".join(parts) + ")"


# ------------------------------------------------------------ transposes

cdef Expr pad_to(Expr e, int nd):
    # e with leading axes of length 1 up to nd dimensions (views, lazily)
    cdef int k = nd - len(e.shape)
    if k <= 0 or e._op == OP_scalar:
        return e
    if e._op == OP_leaf:
        return view_leaf(e, "expand", tuple(range(k)), (<Tensor>e)._array[(None,) * k])
    if e._op == OP_special:
        return view_node(e, "reshape", (1,) * k + e.shape, (1,) * k + e.shape)
    return with_args(e, tuple([pad_to(a, nd) for a in e._args]))


cdef Expr permute(Expr e, tuple axes):
    # e with its axes permuted (len(axes) == e.ndim), pushed down to the leaves:
    # elementwise ops commute with permuting axes
    cdef int nd = len(e.shape)
    if e._op == OP_scalar or nd < 2:
        return e
    if e._op == OP_leaf:
        return view_leaf(e, "transpose", axes, (<Tensor>e)._array.transpose(axes))
    if e._op == OP_special:  # a kernel may know a cheaper form ((A @ B).T == B.T @ A.T)
        moved = (<SpecialNode>e)._kernel.permuted(e, axes)
        if moved is not None:
            return moved
        return view_node(e, "transpose", axes, tuple([e.shape[a] for a in axes]))
    return with_args(e, tuple([permute(pad_to(a, nd), axes) for a in e._args]))


cdef Expr matrix_t(Expr e):
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
    if x._origin is not None:  # transposing back: the node we started from
        first, prev = x._origin
        if tuple(prev[a] for a in axes) == tuple(range(nd)):
            return first
    cdef Expr t = permute(x, axes)
    if t is not x:
        t._origin = (x, axes)
    return t


def swapaxes(e, axis1, axis2):
    """``e`` with two axes interchanged, lazily, as NumPy's ``swapaxes``."""
    cdef Expr x = as_operand(e)
    cdef int nd = len(x.shape)
    a1, a2 = axis_index(axis1, nd), axis_index(axis2, nd)
    axes = list(range(nd))
    axes[a1], axes[a2] = axes[a2], axes[a1]
    return transpose(x, axes)


def axis_index(axis, int ndim):
    """``axis`` (an integer, negatives counting from the end) as an index in
    [0, ndim); NumPy's AxisError otherwise.  pyet's one axis check."""
    return normalize_axis_index(operator.index(axis), ndim)


def reshaped_view(arr, shape):
    """NumPy's reshape of ndarray ``arr`` to ``shape`` as a view of the same
    memory, or None where NumPy would have to copy."""
    cdef bint plain = type(arr) is np.ndarray
    if plain and (<object>arr).shape == shape:
        return arr  # (np.reshape's argument handling: ~1 us)
    if plain and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>arr):
        try:  # C order of C-contiguous memory: always a view (NumPy's C call, ~0.4 us less)
            return cnp.PyArray_Reshape(<cnp.ndarray>arr, shape)
        except ValueError:  # another size
            return None
    try:  # (a plain array's method: without np.reshape's Python layer, ~0.5 us)
        return (<object>arr).reshape(shape, copy=False) if plain else \
            np.reshape(arr, shape, copy=False)
    except ValueError:
        return None
    except TypeError:  # NumPy 2.0: no copy argument; reshape, then see whether it copied
        out = arr.reshape(shape)
        return out if not arr.size or np.may_share_memory(out, arr) else None


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

    cdef readonly object _array      # the ndarray viewed
    cdef readonly object _base       # the Tensor this view was taken of (None: itself)
    cdef readonly tuple _mapping     # the views taken from _base: ((kind, arg), ...)

    def __cinit__(self):
        self._mapping = ()

    @property
    def strides(self):
        return self._array.strides

    def numpy(self):
        """The ndarray this tensor views (the same memory, no copy)."""
        return self._array

    def slice(self, begin, end):
        """Rows ``begin:end`` along axis 0, the same memory (MShadow's ``Slice``)."""
        if self._array.ndim == 0:
            raise IndexError("slice() needs a tensor of at least one dimension")
        n = self._array.shape[0]
        if not (isinstance(begin, (int, np.integer)) and isinstance(end, (int, np.integer))):
            raise TypeError("slice() takes integer bounds")
        if not 0 <= begin <= end <= n:
            raise IndexError(f"slice({begin}, {end}) is out of range for {n} rows")
        return view_leaf(self, "index", (slice(begin, end),), self._array[begin:end])

    def view(self, key):
        return self._array[_basic_key(key)]

    def __array__(self, dtype=None, copy=None):
        if copy:
            return np.array(self._array, dtype=dtype, copy=True)
        if dtype is None or np.dtype(dtype) == self._array.dtype:
            return self._array
        if copy is False:
            raise ValueError(f"cannot view {self._array.dtype} as {dtype} without copying")
        return self._array.astype(dtype)

    def __getitem__(self, key):
        key = _basic_key(key)
        return view_leaf(self, "index", key, self._array[key])

    def __setitem__(self, key, value):
        if key is Ellipsis:  # dst[...] = e: the whole tensor, no view to make
            assign(self._array, value)
        else:
            assign(self._array[_basic_key(key)], value)

    def __len__(self):
        return len(self._array)

    def __bool__(self):
        return bool(self._array)

    def __float__(self):
        return float(self._array)

    def __int__(self):
        return int(self._array)

    def __index__(self):
        return operator.index(self._array)

    def __iadd__(self, other):
        assign(self._array, binary(OP_add, self, other))
        return self

    def __isub__(self, other):
        assign(self._array, binary(OP_subtract, self, other))
        return self

    def __imul__(self, other):
        assign(self._array, binary(OP_multiply, self, other))
        return self

    def __itruediv__(self, other):
        assign(self._array, binary(OP_divide, self, other))
        return self

    def __ifloordiv__(self, other):
        assign(self._array, binary(OP_floor_divide, self, other))
        return self

    def __imod__(self, other):
        assign(self._array, binary(OP_remainder, self, other))
        return self

    def __ipow__(self, other):
        assign(self._array, power(self, other))
        return self

    def __repr__(self):
        return "Tensor(" + np.array2string(self._array, separator=", ", prefix="Tensor(") + \
            f", dtype={self._array.dtype})"

    @property
    def T(self):
        """The transposed view (axes reversed); ``t.T.T is t``."""
        if self._origin is not None or len(self.shape) < 2:
            return transpose(self)
        axes = tuple(range(len(self.shape) - 1, -1, -1))
        cdef Tensor t = view_leaf(self, "transpose", axes, self._array.T)
        t._origin = (self, axes)
        return t

    def __reduce__(self):
        return (tensor, (self._array,))


def tensor(arr):
    """Wrap an ndarray of a supported dtype as a Tensor (no checks on layout)."""
    return wrap(arr)


cpdef aligned_empty(tuple shape, int dt):
    """A new uninitialized C-ordered array of ``shape`` (non-negative ints,
    at most 64 axes) and dtype code ``dt`` whose data starts on a 64-byte
    boundary: cut from a byte buffer 64 bytes longer (its base), in C (the
    same in NumPy calls -- slice, view, reshape, __array_interface__ -- was
    ~5 us of an evaluate() without out=)."""
    cdef cnp.npy_intp dims[64]
    cdef cnp.npy_intp nbytes, one = 1
    cdef int nd = len(shape), k
    if nd > 64:
        raise ValueError(f"aligned_empty: {nd} axes, at most 64")
    descr = DTYPES[dt]
    nbytes = (<cnp.dtype>descr).itemsize
    for k in range(nd):
        dims[k] = shape[k]
        if dims[k] < 0:
            raise ValueError("negative dimensions are not allowed")
        nbytes *= dims[k]
    one = nbytes + 64
    raw = cnp.PyArray_EMPTY(1, &one, cnp.NPY_UINT8, 0)
    cdef char *data = <char *>cnp.PyArray_DATA(<cnp.ndarray>raw)
    data += (-<Py_ssize_t>data) & 63
    Py_INCREF(descr)  # (stolen)
    out = _new_from_descr(<PyTypeObject *>cnp.ndarray, <cnp.PyArray_Descr *>descr, nd, dims,
                          NULL, data, cnp.NPY_ARRAY_CARRAY, NULL)
    cnp.set_array_base(<cnp.ndarray>out, raw)
    return out


def broadcast_view(arr, shape):
    """np.broadcast_to(arr, shape): for a plain array and a tuple of ints it
    broadcasts to, the read-only view (stride 0 along the broadcast axes) made
    in C (np.broadcast_to's Python layer and nditer took ~2.4 us); NumPy's
    own for anything else, and its errors."""
    cdef cnp.npy_intp dims[64]
    cdef cnp.npy_intp strides[64]
    cdef int nd, lnd, k, j
    cdef cnp.ndarray a
    if type(arr) is not np.ndarray or type(shape) is not tuple or len(shape) > 64 \
            or len(shape) < cnp.PyArray_NDIM(<cnp.ndarray>arr):
        return np.broadcast_to(arr, shape)
    a = <cnp.ndarray>arr
    nd, lnd = len(shape), cnp.PyArray_NDIM(a)
    for k in range(nd):
        n = shape[k]
        if type(n) is not int or n < 0:
            return np.broadcast_to(arr, shape)
        dims[k] = n
        j = k - (nd - lnd)
        if j >= 0 and cnp.PyArray_DIMS(a)[j] == dims[k] and dims[k] != 1:
            strides[k] = cnp.PyArray_STRIDES(a)[j]
        elif j < 0 or cnp.PyArray_DIMS(a)[j] == 1:
            strides[k] = 0  # (as NumPy's nditer: 0 along every axis of length 1 too)
        else:
            return np.broadcast_to(arr, shape)  # (its message)
    descr = <object>cnp.PyArray_DESCR(a)
    Py_INCREF(descr)  # (stolen)
    out = _new_from_descr(<PyTypeObject *>cnp.ndarray, <cnp.PyArray_Descr *>descr, nd, dims,
                          strides, cnp.PyArray_DATA(a), 0, NULL)  # (flags 0: read-only)
    cnp.set_array_base(<cnp.ndarray>out, arr)
    return out


# --------------------------------------------------------- special kernels

class Special(ABC):
    """The kernel of a special node; instances hold the node's parameters.

    Node families subclass it: ``value`` computes the node from its children's
    expressions, ``into`` writes it straight into a destination at the root.
    """

    __slots__ = ()
    name = "special"
    # a compiled fn(kernel, dst, arrays) -> bool that writes the node into dst
    # from its children's arrays when every child is a leaf disjoint from dst
    # (the engine's root, no plan recorded), False where it does not apply
    # (nothing written: into() then); None: into() always
    into_leaves = None

    @abstractmethod
    def params(self):
        """The parameters as a hashable tuple (part of the node's structure key)."""

    @abstractmethod
    def value(self, args):
        """The node's value, an ndarray of its shape and dtype, from its children."""

    def into(self, dst, args):
        """Write the node's value into ndarray ``dst`` (the node's shape and dtype)."""
        assign(dst, wrap(self.value(args)))

    def permuted(self, node, axes):
        """The node with its axes permuted as a cheaper node, or None (a View then)."""
        return None

    def variant(self, name):
        """The kernel of this family named ``name`` with these parameters, or
        None (rewrite.SPECIAL_FOLDS: ``log`` of a softmax is a log_softmax)."""
        return None

    def describe(self):
        """The parameters as strings, for ``repr`` of the tree."""
        return [repr(p) for p in self.params()]


def join_node(object kernel, object pieces, Py_ssize_t axis):
    """The special node of ``kernel`` joining ``pieces`` (a list or tuple of
    operands, each made an Expr as any op's) along ``axis`` when they have
    one dtype, one number of dimensions (more than ``axis``) and equal lengths
    except along ``axis``; None otherwise (the caller's checks then, with
    their messages).  The common join built in one call (concatenate of two
    64 x 64 leaves: ~1.5 us of Python checks)."""
    if type(pieces) is not list and type(pieces) is not tuple or not pieces:
        return None
    cdef tuple args = tuple([as_operand(x) for x in pieces])
    cdef Expr first = <Expr>args[0], p
    cdef tuple fs = first.shape, s
    cdef Py_ssize_t nd = len(fs), d, along = 0
    if not 0 <= axis < nd:
        return None
    for x in args:
        p = <Expr>x
        s = p.shape
        if p._dt != first._dt or len(s) != nd:
            return None
        for d in range(nd):
            if d != axis and <Py_ssize_t>s[d] != <Py_ssize_t>fs[d]:
                return None
        along += <Py_ssize_t>s[axis]
    return make_special(kernel, args, fs[:axis] + (along,) + fs[axis + 1:], first._dt)


def node(kernel, args, shape, dtype):
    """A lazy special node of ``shape`` and ``dtype`` over child expressions ``args``."""
    return make_special(kernel, tuple(args), tuple(shape), dtype_code(dtype))


def array_of(e, dtype=None):
    """The value of expression ``e`` as an ndarray: a leaf's own array (no
    copy unless a dtype conversion is asked for), anything else computed."""
    cdef Expr x = e
    if x._op == OP_special:  # through the evaluation's table: computed once per evaluation
        x = materialize(x)
    if x._op == OP_leaf:
        arr = (<Tensor>x)._array
    elif x._op == OP_scalar:
        arr = np.asarray((<Scalar>x)._value, dtype=DTYPES[x._dt])
    else:
        arr = np.asarray(x)
    return arr if dtype is None else arr.astype(dtype, copy=False)


def _crop(a, box):
    y0, y1, x0, x1 = box
    return a[..., y0:y1, x0:x1]


cdef list _EXPAND_KEYS = [(slice(None),) * k + (None, Ellipsis) for k in range(65)]


def _expand(a, axis):
    # np.expand_dims without normalizing one valid int axis (~1.5 us): a new
    # axis by indexing (a reshape's argument handling cost ~0.5 us more)
    if type(axis) is int and 0 <= axis <= a.ndim:
        return a[_EXPAND_KEYS[axis]]
    return np.expand_dims(a, axis)


_REVERSED = slice(None, None, -1)


cpdef object _flip(object a, object axes):
    # np.flip's indexing, without its normalization of axes that are valid
    # non-negative ints already (flip's, ~2 us a leaf); a plain array's view
    # made in C (the slicing's index parsing was ~1 us a leaf)
    if type(a) is cnp.ndarray and type(axes) is tuple and axes:
        view = _flipped_view(<cnp.ndarray>a, <tuple>axes)
        if view is not None:
            return view
    if type(axes) is tuple:
        key = [slice(None)] * a.ndim
        for ax in axes:
            if type(ax) is not int or not 0 <= ax < a.ndim:
                return np.flip(a, axes)
            key[ax] = _REVERSED
        return a[tuple(key)]
    return np.flip(a, axes)


cdef object _flipped_view(cnp.ndarray a, tuple axes):
    # a[..., ::-1, ...] along each of axes (each once), as NumPy's slicing
    # makes it: the data pointer moved to the last element along them and
    # their strides negated (an empty axis left as it is), a's flags but
    # OWNDATA (NumPy recomputes contiguity and alignment), based on a; None
    # for an axis that is not a valid non-negative int
    cdef cnp.npy_intp strides[64]
    cdef bint done[64]
    cdef int nd = cnp.PyArray_NDIM(a), k
    cdef char *data = <char *>cnp.PyArray_DATA(a)
    for k in range(nd):
        strides[k] = cnp.PyArray_STRIDES(a)[k]
        done[k] = False
    for ax in axes:
        if type(ax) is not int or not 0 <= ax < nd:
            return None
        k = ax
        if not done[k] and cnp.PyArray_DIMS(a)[k]:
            done[k] = True
            data += (cnp.PyArray_DIMS(a)[k] - 1) * strides[k]
            strides[k] = -strides[k]
    descr = <object>cnp.PyArray_DESCR(a)
    Py_INCREF(descr)  # (stolen)
    out = _new_from_descr(<PyTypeObject *>cnp.ndarray, <cnp.PyArray_Descr *>descr, nd,
                          cnp.PyArray_DIMS(a), strides, data,
                          cnp.PyArray_FLAGS(a) & ~cnp.NPY_ARRAY_OWNDATA, NULL)
    cnp.set_array_base(<cnp.ndarray>out, a)
    return out


# NumPy's view for each kind of view: (array, parameter) -> view
VIEWS = {
    "broadcast_to": broadcast_view,
    "transpose": lambda a, axes: a.transpose(axes),
    "flip": _flip,
    "crop": _crop,
    "expand": lambda a, axis: _expand(a, axis),
    "reshape": lambda a, shape: a.reshape(shape),
    "index": lambda a, key: a[key],
}

DEF PUSH_DEPTH = 64  # deeper trees take views.py's path (no C recursion on them)


cdef Expr _pushed(Expr e, str kind, object arg, object view):
    # e (no special node below: push_view) through the view (kind, arg),
    # view = VIEWS[kind], pushed down to its leaves
    cdef list args = []
    cdef object a, arr
    if isinstance(e, Tensor):
        arr = (<Tensor>e)._array
        if kind == "flip":  # (_flip called in C, not through VIEWS: ~0.4k instructions
            return view_leaf(<Tensor>e, kind, arg, _flip(arr, arg), e.shape)  # a leaf)
        return view_leaf(<Tensor>e, kind, arg, view(arr, arg))
    for a in e._args:
        if not isinstance(a, Scalar):
            if (<Expr>a).shape is not e.shape and (<Expr>a).shape != e.shape:
                # each operand aligned with the node first
                a = _pushed(<Expr>a, "broadcast_to", e.shape, broadcast_view)
            a = _pushed(<Expr>a, kind, arg, view)
        args.append(a)
    return with_args(e, tuple(args))


cpdef object push_view(Expr e, str kind, object arg):
    """Leaf or elementwise tree ``e`` seen through the view (kind, arg) of
    VIEWS, pushed down to its leaves (views.py's _push, without a Python call
    a node: flip(a + b) of 16 x 16 was 1.7 us); None for a reshape, a scalar,
    a special node below, or a tree deeper than PUSH_DEPTH."""
    if kind == "reshape" or isinstance(e, Scalar) or e._flags & HAS_SPECIAL \
            or e._depth > PUSH_DEPTH:
        return None
    return _pushed(e, kind, arg, VIEWS[kind])


def flip_axis(object e, object axis):
    """views.flip's common case, ``flip(e, axis)`` of one int axis, in C:
    the tree with the flip pushed down to its leaves, or None where
    push_view cannot (views.flip then).  AxisError for an axis out of range."""
    if type(axis) is not int:
        return None
    cdef Expr x = as_operand(e)
    cdef Py_ssize_t nd = len(x.shape)
    if not 0 <= axis < nd:
        axis = axis_index(axis, nd)
    return push_view(x, "flip", (axis,))


class View(Special):
    """NumPy's view (``VIEWS[kind]``) of the child's computed value."""

    __slots__ = ("kind", "arg")

    def __init__(self, kind, arg):
        self.kind, self.arg = kind, arg

    @property
    def name(self):
        return self.kind

    def params(self):
        return (self.kind, self.arg)

    def describe(self):
        return [repr(self.arg)]

    def value(self, args):
        return VIEWS[self.kind](array_of(args[0]), self.arg)

    def into(self, dst, args):
        if self.kind == "reshape":
            # a reshape NumPy would copy: the child written straight into dst
            # seen in the child's shape (one pass, not NumPy's copy and then
            # a second into dst)
            seen = reshaped_view(dst, (<Expr>args[0]).shape)
            if seen is not None:
                assign(seen, args[0])
                return
        assign(dst, wrap(self.value(args)))

    def view(self, a):
        """The node's value from its child's value ``a`` (a view)."""
        return VIEWS[self.kind](a, self.arg)


cdef Expr view_node(Expr e, str kind, object arg, tuple shape):
    # a lazy view of a node that cannot push views down to its leaves
    return special(View(kind, arg), (e,), shape, DTYPES[e._dt])


def view_of(e, kind, arg, shape):
    """A lazy ``kind`` view of node ``e`` with the resulting ``shape``."""
    return view_node(e, kind, arg, tuple(shape))


def view_of_leaf(e, kind, arg, arr):
    """Leaf ``e``'s view ``arr`` = VIEWS[kind](its array, arg), linked to its base."""
    return view_leaf(e, kind, arg, arr)
