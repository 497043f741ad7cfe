"""NumPy's array API on expressions: the ndarray methods, ``__array_function__``
and the ufunc methods, as lazy pyet nodes wherever pyet has them.

``Expr``'s methods and protocol hooks (``pyet._core``) are thin: they import
this module when first called (core never imports it when it is itself
imported) and call the functions here, which build reductions, views and user
function nodes from the families beside this one.  Anything without a lazy
form here is computed by NumPy on the evaluated operands (a Tensor's own
memory, so NumPy's in-place functions write into it): a NumPy function never
fails just because an operand is a pyet expression.
"""

import inspect

import numpy as np

from pyet._core import core
from pyet._nodes import views
from pyet._nodes.grad import tensordot
from pyet._nodes.reductions import reduction

_NoValue = np._NoValue  # NumPy's "argument not given"


class _Eager(Exception):
    """This call has no lazy form here: NumPy computes it on evaluated operands."""


# ------------------------------------------------------------------ eager

def evaluated(obj):
    """``obj`` with every pyet operand replaced by an ndarray (in lists and
    tuples too): a Tensor by its own memory, any other expression by its value."""
    if isinstance(obj, core.Tensor):
        return obj._array
    if isinstance(obj, core.Expr):
        return np.asarray(obj)
    if type(obj) is list or type(obj) is tuple:
        return type(obj)([evaluated(o) for o in obj])
    return obj


def _given_back(result, out):
    # NumPy returns the out= arrays it wrote; hand back the Tensors given instead
    if isinstance(out, core.Tensor):
        return out if result is out._array else result
    if isinstance(out, tuple) and out:
        if isinstance(result, tuple) and len(result) == len(out):
            return tuple(_given_back(r, o) for r, o in zip(result, out, strict=True))
        return _given_back(result, out[0]) if len(out) == 1 else result
    return result


def eager(func, args, kwargs):
    """``func(*args, **kwargs)`` computed by NumPy on evaluated operands."""
    result = func(*evaluated(tuple(args)), **{k: evaluated(v) for k, v in kwargs.items()})
    return _given_back(result, kwargs.get("out"))


def into(e, out):
    """Lazy ``e``, or with ``out`` (an ndarray, a Tensor or a 1-tuple of one)
    ``e`` evaluated into it; returns ``out``."""
    if out is None:
        return e
    if isinstance(out, tuple):
        if len(out) != 1:
            raise TypeError(f"expected one output, got {len(out)}")
        out = out[0]
    dst = out._array if isinstance(out, core.Tensor) else out
    if not isinstance(dst, np.ndarray):
        raise TypeError(f"out must be an ndarray or a pyet.Tensor, got {type(out).__name__}")
    core.assign(dst, e)
    return out


_TRIVIAL = {"where": True, "casting": "same_kind", "subok": False}


def _nontrivial(extra):
    """The keyword arguments in ``extra`` not at a value that changes nothing."""
    return {k: v for k, v in extra.items()
            if v is not _NoValue and not (k in _TRIVIAL and _is_value(v, _TRIVIAL[k]))}


def _is_value(v, want):
    return type(v) is type(want) and v == want


# ------------------------------------------------------------- reductions

_REDUCE_METHOD = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max,
                  "min": np.min, "argmax": np.argmax, "argmin": np.argmin, "any": np.any,
                  "all": np.all}


def reduce(kind, e, axis=None, dtype=None, out=None, keepdims=False, extra=None):
    """The reduction ``kind`` of ``e`` with NumPy's arguments: a lazy node
    (evaluated into ``out`` if given); ``initial`` and ``where`` (in
    ``extra``) are NumPy's, computed on the evaluated operand."""
    extra = _nontrivial(extra or {})
    keepdims = False if keepdims is _NoValue else bool(keepdims)
    if not extra:
        try:
            x = core.as_expr(e)
            if dtype is not None:
                x = x.astype(dtype)
            r = reduction(kind, x, axis, keepdims)
            if dtype is not None:
                r = r.astype(dtype)
        except TypeError:  # a dtype pyet does not compute in: NumPy does it
            pass
        else:
            return into(r, out)
    kwargs = dict(extra, axis=axis, out=out, keepdims=keepdims)
    if dtype is not None:
        kwargs["dtype"] = dtype
    return eager(_REDUCE_METHOD[kind], (e,), kwargs)


# --------------------------------------------------------- shape methods

def _shape_args(args, what):
    # NumPy's method forms: f(3, 4), f((3, 4)), f([3, 4]); f() and f(None) for transpose
    if len(args) == 1:
        a = args[0]
        if type(a) is int:  # (np.ndim costs ~1 us: the common forms without it)
            return args
        if a is None or views.is_int_tuple(a) or np.ndim(a) == 1:
            return a
    return args if args else None


def reshape(e, shape, order="C"):
    """``e`` reshaped (NumPy's ``reshape``; C or F order), lazily."""
    if order in ("C", "A"):  # an expression has no memory order: A is C
        return views.reshape(e, shape)
    if order != "F":
        raise ValueError(f"reshape: order must be one of 'C', 'F', 'A', got {order!r}")
    x = core.as_expr(e)
    shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    return core.transpose(views.reshape(core.transpose(x), shape[::-1]))


def reshape_method(e, shape, order="C", copy=None):
    """``e.reshape(*shape, order=, copy=)``."""
    shape = _shape_args(shape, "reshape")
    if shape is None:
        raise TypeError("reshape() takes a shape")
    if copy is not None:
        return eager(np.reshape, (e, shape), {"order": order, "copy": copy})
    return reshape(e, shape, order)


def transpose_method(e, axes):
    """``e.transpose(*axes)``."""
    return core.transpose(e, _shape_args(axes, "transpose"))


def flatten(e, order="C"):
    """``e`` as one axis, lazily (``flatten`` and ``ravel``)."""
    return reshape(e, -1, "C" if order == "K" else order)


def squeeze(e, axis=None):
    """``e`` without its axes of length 1 (or those in ``axis``), lazily."""
    x = core.as_expr(e)
    if axis is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    else:
        axes = [core.axis_index(a, x.ndim) for a in ((axis,) if np.ndim(axis) == 0 else axis)]
        if any(x.shape[a] != 1 for a in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal "
                             "to one")
    return views.reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def getitem(e, key):
    """``e[key]`` for a basic-indexing ``key`` (a tuple ending in ...), lazily:
    pushed down to the leaves of an elementwise tree as NumPy's views of their
    memory, a view of the computed value above a special node."""
    x = core.as_expr(e)
    shape = np.broadcast_to(np.zeros((), np.bool_), x.shape)[key].shape  # NumPy's IndexError
    return views._push(x, "index", key, shape)


def compute(e):
    """The value of ``e`` as a new Tensor, computed now.  A special node whose
    kernel evaluates whole trees (``evaluate_tree``: a pyet.dask leaf, which
    runs the tree on the current Dask scheduler) computes it; otherwise it is
    evaluated here."""
    stack, seen = [e], set()
    while stack:
        x = stack.pop()
        if id(x) in seen or not x._args and not isinstance(x, core.SpecialNode):
            continue
        seen.add(id(x))
        run = getattr(getattr(x, "_kernel", None), "evaluate_tree", None)
        if run is not None:
            return run(e)
        stack.extend(x._args)
    return copy(e)


def copy(e, order="C"):
    """The value of ``e`` as a new Tensor (evaluated now, new memory)."""
    if isinstance(e, core.Tensor):
        return core.tensor(np.array(e._array, order=order, copy=True))
    arr = np.asarray(e)  # a new array, computed
    return core.tensor(arr if order in ("C", "K", "A") else np.asfortranarray(arr))


# ----------------------------------------------------------- elementwise

def _promotion_side(x):
    # what NumPy 2's promotion sees of an operand: a Python int or float is weak
    if type(x) in (int, float):
        return x
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def clip(e, lo=None, hi=None, out=None, **kwargs):
    """``minimum(maximum(e, lo), hi)`` lazily (NumPy's ``clip``; either bound may be None)."""
    if _nontrivial(kwargs):
        return eager(np.clip, (e, lo, hi), dict(kwargs, out=out))
    r = core.as_expr(e)
    if lo is not None and hi is not None:
        # NumPy's clip resolves one dtype over its three operands: a bool e between
        # 0 and a float32 is float32 there, where maximum then minimum gives float64
        dt = np.result_type(*[_promotion_side(x) for x in (e, lo, hi)])
        if dt != r.dtype and dt in (np.float32, np.float64, np.int32, np.int64):
            r = r.astype(dt)
    if lo is not None:
        r = core.apply("maximum", (r, lo))
    if hi is not None:
        r = core.apply("minimum", (r, hi))
    if r is e or lo is None and hi is None:
        r = core.apply("positive", (r,))  # a new expression, as NumPy's clip gives a new array
    return into(r, out)


def round(e, decimals=0, out=None):  # noqa: A001  (NumPy's name)
    """NumPy's ``round`` lazily: ``rint(e * 10**d) / 10**d`` for floats (its
    own formula), integers as they are for ``decimals >= 0``."""
    x = core.as_expr(e)
    decimals = int(decimals)
    if x.dtype == np.bool_:  # NumPy rounds bools to float16, a dtype pyet lacks
        return eager(np.round, (e, decimals), {"out": out})
    if x.dtype.kind in "iu":
        if decimals >= 0:
            return into(core.apply("positive", (x,)), out)
        f = 10.0 ** -decimals
        r = (core.apply("rint", (x / f,)) * f).astype(x.dtype)
    elif decimals == 0:
        r = core.apply("rint", (x,))
    elif decimals > 0:
        f = 10.0 ** decimals
        r = core.apply("rint", (x * f,)) / f
    else:
        f = 10.0 ** -decimals
        r = core.apply("rint", (x / f,)) * f
    return into(r, out)


# ------------------------------------------------------ NumPy's functions

HANDLED = {}  # NumPy function -> (its signature, the builder of its lazy form)


def _route(*funcs):
    def register(builder):
        for f in funcs:
            HANDLED[f] = (inspect.signature(f), builder)
        return builder
    return register


def _no_extra(extra):
    if _nontrivial(extra):
        raise _Eager


def _reducer(kind):
    def build(a, axis=None, dtype=None, out=None, keepdims=False, **extra):
        return reduce(kind, a, axis, dtype, out, keepdims, extra)
    return build


for _kind, _funcs in [("sum", (np.sum,)), ("mean", (np.mean,)), ("prod", (np.prod,)),
                      ("max", (np.max, np.amax)), ("min", (np.min, np.amin)),
                      ("argmax", (np.argmax,)), ("argmin", (np.argmin,)), ("any", (np.any,)),
                      ("all", (np.all,))]:
    _route(*_funcs)(_reducer(_kind))


@_route(np.dot)
def _dot(a, b, out=None):
    x, y = core.as_expr(a), core.as_expr(b)
    if x.ndim == 0 or y.ndim == 0:
        r = x * y  # NumPy's dot with a scalar
    elif x.ndim <= 2 and y.ndim <= 2:
        r = core.dot(x, y)
    else:
        raise _Eager  # N-D dot: NumPy's own contraction
    return into(r, out)


@_route(np.tensordot)
def _tensordot(a, b, axes=2):
    return tensordot(a, b, axes)


@_route(np.transpose)
def _transpose(a, axes=None):
    return core.transpose(a, axes)


@_route(np.swapaxes)
def _swapaxes(a, axis1, axis2):
    return core.swapaxes(a, axis1, axis2)


@_route(np.reshape)
def _reshape(a, shape=None, order="C", newshape=None, copy=None):
    if copy is not None:
        raise _Eager
    return reshape(a, newshape if shape is None else shape, order)


@_route(np.ravel)
def _ravel(a, order="C"):
    return flatten(a, order)


@_route(np.squeeze)
def _squeeze(a, axis=None):
    return squeeze(a, axis)


@_route(np.shape)
def _shape(a):
    return core.as_expr(a).shape


@_route(np.ndim)
def _ndim(a):
    return core.as_expr(a).ndim


@_route(np.size)
def _size(a, axis=None):
    x = core.as_expr(a)
    return x.size if axis is None else x.shape[axis]


@_route(np.concatenate)
def _concatenate(arrays, axis=0, out=None, **extra):
    _no_extra(extra)
    return into(views.concatenate(arrays, axis), out)


@_route(np.stack)
def _stack(arrays, axis=0, out=None, **extra):
    _no_extra(extra)
    return into(views.stack(arrays, axis), out)


@_route(np.where)
def _where(condition, x=None, y=None):
    if x is None or y is None:
        raise _Eager  # np.nonzero's form, or NumPy's error
    return core.where(condition, x, y)


@_route(np.clip)
def _clip(a, a_min=_NoValue, a_max=_NoValue, out=None, min=_NoValue, max=_NoValue,  # noqa: A002
          **kwargs):
    if (a_min is not _NoValue and min is not _NoValue) or \
            (a_max is not _NoValue and max is not _NoValue):
        raise _Eager  # NumPy's error: a bound given twice
    lo = min if a_min is _NoValue else a_min
    hi = max if a_max is _NoValue else a_max
    _no_extra(kwargs)
    return clip(a, None if lo is _NoValue else lo, None if hi is _NoValue else hi, out)


@_route(np.round, np.around)
def _round(a, decimals=0, out=None):
    return round(a, decimals, out)


@_route(np.broadcast_to)
def _broadcast_to(array, shape, subok=False):
    return views.broadcast_to(array, shape)


@_route(np.flip)
def _flip(m, axis=None):
    return views.flip(m, axis)


@_route(np.pad)
def _pad(array, pad_width, mode="constant", **kwargs):
    if mode != "constant" or set(kwargs) - {"constant_values"}:
        raise _Eager
    return pad(array, pad_width, kwargs.get("constant_values", 0))


def pad(e, pad_width, constant_values=0):
    """NumPy's ``np.pad(e, pad_width, constant_values=...)`` (constant mode), lazily."""
    x = core.as_expr(e)
    nd = x.ndim
    widths = np.broadcast_to(np.asarray(pad_width), (nd, 2))
    if widths.dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")
    if (widths < 0).any():
        raise ValueError("index can't contain negative values")
    values = np.broadcast_to(np.asarray(constant_values), (nd, 2))
    fills = np.empty((nd, 2), x.dtype)
    fills[...] = values  # NumPy's conversion to the array's dtype, as np.pad
    widths = [(int(b), int(a)) for b, a in widths]
    padded = [i for i in range(nd) if widths[i] != (0, 0)]
    if not padded:
        return core.apply("positive", (x,))
    if nd >= 2 and set(padded) <= {nd - 2, nd - 1} and (fills == fills.flat[0]).all():
        return views.pad(x, widths[-2:], fills.flat[0])  # the last two axes: one node
    for i in padded:  # each axis in turn, as np.pad: later axes fill the corners
        (before, after), shape = widths[i], x.shape
        pieces = []
        for n, fill in ((before, fills[i, 0]), (after, fills[i, 1])):
            side = shape[:i] + (n,) + shape[i + 1:]
            pieces.append(views.broadcast_to(np.asarray(fill), side))
        x = views.concatenate([pieces[0], x, pieces[1]], axis=i)
    return x


def array_function(func, types, args, kwargs):
    """``Expr.__array_function__``: the lazy form of ``func`` where there is
    one, else NumPy's ``func`` on the evaluated operands."""
    if not all(issubclass(t, (core.Expr, np.ndarray)) for t in types):
        return NotImplemented  # another library's array: its turn
    route = HANDLED.get(func)
    if route is not None:
        signature, build = route
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            pass  # a call NumPy itself refuses: its message
        else:
            arguments = dict(bound.arguments)
            arguments.update(arguments.pop("kwargs", {}))
            try:
                return build(**arguments)
            except (_Eager, TypeError):
                pass  # no lazy form, or a dtype pyet does not compute in
    return eager(func, args, kwargs)


# ------------------------------------------------------- ufunc methods

_REDUCE_KINDS = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min",
                 np.logical_and: "all", np.logical_or: "any"}


def _ufunc_node(ufunc, inputs):
    """A pyet.F node applying ``ufunc`` (a ufunc pyet has no kernel for), or
    None when NumPy's result is not a pyet dtype.  Python scalars are
    converted as NumPy 2 does (weakly: to the dtype the ufunc computes in)."""
    if ufunc.nout != 1 or not 1 <= ufunc.nin <= 4 or len(inputs) != ufunc.nin:
        return None
    sides = [type(x) if type(x) in (int, float) else
             (x.dtype if isinstance(x, (core.Expr, np.ndarray, np.generic)) else None)
             for x in inputs]
    if any(s is None for s in sides):
        return None
    try:
        dts = ufunc.resolve_dtypes(tuple(sides) + (None,))
        core.dtype_code(dts[-1])
        operands = [np.asarray(x, dts[i]) if type(x) in (int, float) else x
                    for i, x in enumerate(inputs)]
        return core.F(ufunc, operands, dts[-1], None)
    except (TypeError, ValueError, OverflowError):
        return None  # NumPy has no loop, or a dtype pyet lacks: NumPy answers


def array_ufunc(ufunc, method, inputs, kwargs):
    """``Expr.__array_ufunc__`` beyond pyet's own ops: ``ufunc.reduce`` of
    add, multiply, maximum, minimum, logical_and and logical_or as lazy
    reductions, any other ufunc as a lazy ``pyet.F`` node; everything else
    (other methods, keywords pyet lacks) by NumPy on the evaluated operands."""
    out = kwargs.get("out")
    if method == "reduce" and ufunc in _REDUCE_KINDS and len(inputs) == 1:
        extra = dict(kwargs)
        axis = extra.pop("axis", 0)
        dtype = extra.pop("dtype", None)
        extra.pop("out", None)
        keepdims = extra.pop("keepdims", False)
        return reduce(_REDUCE_KINDS[ufunc], inputs[0], axis, dtype, out, keepdims, extra)
    if method == "__call__" and not set(kwargs) - {"out"}:
        e = _ufunc_node(ufunc, inputs)
        if e is not None:
            return into(e, out)
    return eager(getattr(ufunc, method), inputs, kwargs)
