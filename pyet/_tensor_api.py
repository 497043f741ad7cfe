"""Creating tensors and evaluating expressions (the public, plain-Python layer)."""

import numpy as np

from pyet._core import core
from pyet._core.core import Expr, Tensor


def _dtype(dtype):
    dt = np.dtype(dtype)
    core.dtype_code(dt)  # TypeError naming an unsupported dtype
    return dt


def asarray(obj, dtype=None):
    """View ``obj`` as a :class:`Tensor`, without copying when possible.

    Parameters
    ----------
    obj : array_like
        An ndarray (any strides: non-contiguous, negative, 0-d, empty), a
        Tensor, or anything NumPy can view: buffer-protocol objects and
        objects with ``__array_interface__``.  Nested sequences are copied.
    dtype : data-type, optional
        Convert to this dtype; only then is the data copied.

    Returns
    -------
    Tensor

    Raises
    ------
    TypeError
        If the (resulting) dtype is not bool, int32, int64, float32 or float64.
    """
    if type(obj) is np.ndarray and dtype is None:  # (the common call: ~0.44 -> ~0.13 us)
        return core.tensor(obj)
    if _is_dask_array(obj):  # a lazy leaf over its chunks (pyet.dask; Dask is optional)
        from pyet import dask as pyet_dask
        return pyet_dask.asarray(obj, dtype)
    if isinstance(obj, Tensor):
        arr = obj.numpy()
    elif isinstance(obj, Expr):
        arr = np.asarray(obj)
    else:
        arr = np.asarray(obj)
    if dtype is not None:
        arr = arr.astype(_dtype(dtype), copy=False)
    return core.tensor(arr) if not isinstance(obj, Tensor) or arr is not obj.numpy() else obj


def _is_dask_array(obj):
    # duck typing: importing pyet never imports Dask
    return type(obj).__module__.startswith("dask.array") and hasattr(obj, "__dask_graph__")


def _aligned_empty(shape, dtype):
    dt = np.dtype(dtype)
    code = core.dtype_code(dt)  # TypeError naming an unsupported dtype
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if not all(isinstance(d, (int, np.integer)) and d >= 0 for d in shape) or len(shape) > 64:
        shape = np.empty(shape, dt).shape  # NumPy's error, or its reading of shape
    # 64-byte aligned (a cache line, enough for any SIMD load), allocated in C
    return core.aligned_empty(shape, code)


def empty(shape, dtype=np.float64):
    """A new tensor of ``shape`` and ``dtype``, 64-byte aligned, uninitialized."""
    return core.tensor(_aligned_empty(shape, dtype))


def full(shape, fill_value, dtype=np.float64):
    """A new aligned tensor of ``shape`` filled with ``fill_value``."""
    t = empty(shape, dtype)
    t.numpy().fill(fill_value)  # NumPy's conversion of the value, as np.full
    return t


def zeros(shape, dtype=np.float64):
    """A new aligned tensor of zeros."""
    return full(shape, False if np.dtype(dtype) == np.bool_ else 0, dtype)


def ones(shape, dtype=np.float64):
    """A new aligned tensor of ones."""
    return full(shape, True if np.dtype(dtype) == np.bool_ else 1, dtype)


def evaluate(expr, out=None):
    """Evaluate ``expr`` in one fused pass.

    Parameters
    ----------
    expr : Expr, array_like or scalar
    out : ndarray or Tensor, optional
        Destination: ``expr`` is broadcast to its shape and cast to its dtype
        (``same_kind``).  Without it a new aligned tensor is returned.

    Returns
    -------
    Tensor or the given ``out``

    Notes
    -----
    A tree with Dask-backed leaves (:mod:`pyet.dask`) is computed by the
    current Dask scheduler, one fused task per chunk.
    """
    if isinstance(expr, Expr) and not expr._flags & core.DASK_BELOW:
        # a tree without a Dask leaf (a node flag), by one check (evaluate(a*b + 1)
        # of 4096 float64: ~5 us less; take of 64 rows: the tree walk looking for
        # Dask leaves was 3/4 of the call); into new aligned memory or out
        if out is None:
            return core.evaluated(expr)
        core.assign(out._array if type(out) is Tensor else out.numpy()
                    if isinstance(out, Tensor) else out, expr)
        return out
    if _is_dask_array(expr):
        expr = asarray(expr)
    if isinstance(expr, Expr) and expr._flags & core.DASK_BELOW:
        from pyet import dask as pyet_dask
        return pyet_dask.evaluate(expr, out)
    if out is None:
        e = expr if isinstance(expr, Expr) else asarray(expr)
        out = empty(e.shape, e.dtype)
        core.assign(out.numpy(), e)
        return out
    dst = out.numpy() if isinstance(out, Tensor) else out
    core.assign(dst, expr)
    return out


def _like(a, dtype, shape):
    e = a if isinstance(a, Expr) else core.as_expr(a)
    return (e.shape if shape is None else shape), (e.dtype if dtype is None else dtype)


def empty_like(a, dtype=None, shape=None):
    """A new uninitialized aligned tensor of ``a``'s shape and dtype (NumPy's
    ``empty_like``); ``a`` may be an expression, which is not evaluated."""
    return empty(*_like(a, dtype, shape))


def zeros_like(a, dtype=None, shape=None):
    """A new aligned tensor of zeros with ``a``'s shape and dtype (NumPy's ``zeros_like``)."""
    return zeros(*_like(a, dtype, shape))


def ones_like(a, dtype=None, shape=None):
    """A new aligned tensor of ones with ``a``'s shape and dtype (NumPy's ``ones_like``)."""
    return ones(*_like(a, dtype, shape))


def full_like(a, fill_value, dtype=None, shape=None):
    """A new aligned tensor of ``a``'s shape and dtype filled with ``fill_value``
    (NumPy's ``full_like``)."""
    shape, dtype = _like(a, dtype, shape)
    return full(shape, fill_value, dtype)


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in ``[start, stop)`` as a new aligned tensor (NumPy's ``arange``)."""
    values = np.arange(start, stop, step, dtype=dtype)
    out = empty(values.shape, values.dtype)
    out.numpy()[...] = values
    return out


def linspace(start, stop, num=50, endpoint=True, dtype=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` as a new aligned
    tensor (NumPy's ``linspace``)."""
    values = np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)
    out = empty(values.shape, values.dtype)
    out.numpy()[...] = values
    return out


def Fill(value, shape, dtype=None):
    """A tensor holding ``value`` everywhere, with no memory of its shape
    (MetaNN's TrivialTensor): a read-only leaf of one element broadcast.

    Usable anywhere in a tree; operations on constants alone are computed when
    the tree is built (by NumPy, so the value is NumPy's), and folds that keep
    every result unchanged apply (``x * Fill(1, x.shape)`` is ``x``).

    Parameters
    ----------
    value : scalar
    shape : int or tuple of ints
    dtype : data-type, optional
        By default NumPy's for ``value`` (float64 for a Python float, int64
        for an int, bool for a bool).
    """
    dt = np.asarray(value).dtype if dtype is None else np.dtype(dtype)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if not all(isinstance(n, (int, np.integer)) and n >= 0 for n in shape):
        raise ValueError(f"Fill: shape must be non-negative ints, got {shape}")
    return core.as_expr(np.broadcast_to(np.array(value, dtype=dt), shape))


def Zero(shape, dtype=np.float64):
    """``Fill(0, shape, dtype)`` (MetaNN's ZeroTensor): zeros with no memory."""
    return Fill(0, shape, dtype)


def OneHot(index, depth, value=1.0, dtype=np.float64):
    """One-hot rows: ``OneHot(index, depth)[..., k]`` is ``value`` where
    ``index == k`` and 0 elsewhere, lazily, with no (n, depth) memory.

    Parameters
    ----------
    index : array_like of int
        Class indices, each in ``[0, depth)`` (checked now).
    depth : int
        Number of classes.
    value : scalar, optional
    dtype : data-type, optional

    Returns
    -------
    Expr of shape ``index.shape + (depth,)``
    """
    if not isinstance(depth, (int, np.integer)) or isinstance(depth, bool) or depth < 1:
        raise ValueError(f"OneHot: depth must be a positive int, got {depth!r}")
    idx = np.asarray(index.numpy() if isinstance(index, core.Tensor) else index)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"OneHot: index must hold integers, got {idx.dtype}")
    if idx.size and (idx.min() < 0 or idx.max() >= depth):
        raise ValueError(f"OneHot: index values must be in [0, {depth}), got "
                         f"{idx.min()}..{idx.max()}")
    classes = np.arange(depth, dtype=idx.dtype)
    hit = core.as_expr(idx[..., None]) == core.as_expr(classes)
    return core.where(hit, Fill(value, (), dtype), Fill(0, (), dtype))
