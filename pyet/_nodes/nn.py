"""Index blocks of neural networks (MShadow's ``one_hot_encode``, ``take``,
``take_grad``, ``mat_choose_row_element``, ``mat_fill_row_element``, ``mask``),
each usable anywhere inside a tree.

``one_hot``, ``fill_row_element`` and ``mask`` are elementwise trees built
from pyet's own ops, so they fuse with the rest of the expression; ``take``,
``take_grad`` and ``choose_row_element`` are special nodes computed by
compiled gathers and scatters (``pyet/_kernels/nn.pyx``).

Indices follow NumPy's fancy indexing: any integer dtype, a negative index
counts from the end, and an index outside ``[-n, n)`` raises IndexError.
They are read, checked and copied when the node is built, so evaluation can
never read outside an operand and later writes to the caller's index array do
not change the node.
"""

import math
import operator

import numpy as np

from pyet._core import core
from pyet._core.core import Special, array_of, node
from pyet._kernels import nn as _nn_kernels
from pyet._nodes.views import broadcast_to, reshape

_operand = core.as_expr
_Tensor = core.Tensor
_tensor = core.tensor


_fmt = core.fmt_shape


def _indices(indices, n, fname, what):
    """``indices`` as a new intp array, negatives counted from the end.

    Raises TypeError for non-integer indices and IndexError for an index
    outside ``[-n, n)``, where n is the length of the indexed axis (``what``).
    """
    if type(indices) is np.ndarray:
        arr = indices  # (the common case: no conversion to try)
    elif isinstance(indices, core.Expr):
        arr = array_of(indices)
    else:
        arr = np.asarray(indices)
        if arr.size == 0 and not isinstance(indices, np.ndarray):
            arr = arr.astype(np.intp)  # [] indexes nothing, as in NumPy
    try:  # checked (integers), copied, wrapped: one pass
        out, lo, hi = _nn_kernels.wrapped_indices(arr, n)
    except TypeError:  # (its own check, named here)
        raise TypeError(f"{fname}: indices must be integers, got {arr.dtype}") from None
    if (lo < -n or hi >= n) and arr.size:
        bad = hi if hi >= n else lo
        raise IndexError(f"{fname}: index {bad} is out of bounds for {what} of size {n}")
    return out


def _count(value, fname, what, least=0):
    """``value`` as an int >= ``least``: TypeError / ValueError naming ``what`` otherwise."""
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{fname}: {what} must be an integer, got "
                        f"{type(value).__name__}") from None
    if n < least:
        raise ValueError(f"{fname}: {what} must be >= {least}, got {n}")
    return n


class Kernel(Special):
    """A special node computed by a compiled kernel into an array of its shape.

    Subclasses give ``shape(args)``, ``dtype(args)`` and ``compute(out,
    arrays)``, where ``out`` is a view of the destination with the kernel's
    working shape (``work_shape``) and ``arrays`` the children's values.
    """

    __slots__ = ()

    def value(self, args):
        out = np.empty(self.shape(args), self.dtype(args))
        self.into(out, args)
        return out

    # work_shape is the node's own shape (dst's): into() skips asking for it
    work_is_shape = False

    def into(self, dst, args):
        arrays = [a._array if type(a) is _Tensor else array_of(a) for a in args]
        if self.work_is_shape:
            self.compute(dst, arrays)
            return
        work = self.work_shape(arrays)
        view = dst if dst.shape == work else core.reshaped_view(dst, work)
        if view is not None:
            self.compute(view, arrays)
            return
        tmp = np.empty(work, dst.dtype)  # dst cannot be viewed so: compute aside, copy once
        self.compute(tmp, arrays)
        np.copyto(dst, tmp.reshape(dst.shape))


# --------------------------------------------------------------- gathers

_NO_PARAMS = ()


class Take(Kernel):
    """Rows of ``W`` (args[1]) at the given indices (args[0], intp)."""

    __slots__ = ()
    name = "take"
    into_leaves = _nn_kernels.take_leaves  # rows of a 2-D table by a vector, no Python frame

    def params(self):
        return _NO_PARAMS

    def shape(self, args):
        return args[0].shape + args[1].shape[1:]

    def dtype(self, args):
        return args[1].dtype

    def work_shape(self, arrays):
        idx, w = arrays
        return (idx.size, math.prod(w.shape[1:]))

    def into(self, dst, args):
        idx, w = args
        # rows of a 2-D table by a vector of leaves (the indices are the node's
        # own intp copy): the engine's compiled entry, which checks the shapes
        if type(w) is _Tensor and type(idx) is _Tensor \
                and _nn_kernels.take_leaves(self, dst, (idx._array, w._array)):
            return
        super().into(dst, args)

    def compute(self, out, arrays):
        idx, w = arrays
        if w.ndim != 2:
            w = w.reshape(w.shape[0], out.shape[1])
        _nn_kernels.take_into(out, w, idx if idx.ndim == 1 else idx.reshape(-1))

    def vjp(self, node, g):
        """Reverse mode: rows of ``g`` scattered back (take_grad); none to indices."""
        idx, w = node._args
        # the node's own checked indices, read (not copied: a kept schedule
        # replays this tree over other indices' memory)
        rows = w.shape[0]
        return (None, core.node(TakeGrad(rows), (idx, g), (rows,) + g.shape[idx.ndim:],
                                g.dtype))


_TAKE = Take()  # (no parameters: one kernel serves every node)
_special = core.special  # (node() without its tuple() conversions)
_wrapped_indices = _nn_kernels.wrapped_indices


def take(indices, W):
    """Rows of ``W`` at ``indices`` (MShadow's ``take``; NumPy's ``W[indices]``).

    Parameters
    ----------
    indices : array_like of int, any shape
        Row numbers; negative ones count from the end.  Read, checked and copied
        when the node is built (a lazy expression is computed then).
    W : Expr or array_like, at least 1-D
        The table, e.g. an embedding of shape (rows, features).  Read when the
        node is evaluated, through its strides (no copy).

    Returns
    -------
    Expr
        Of shape ``indices.shape + W.shape[1:]`` and ``W``'s dtype; the rows
        are copied by a compiled gather, in parallel for large results.

    Raises
    ------
    ValueError
        If ``W`` is 0-d.
    TypeError
        If ``indices`` are not integers.
    IndexError
        If an index is outside ``[-rows, rows)``.
    """
    w = W if type(W) is _Tensor else _operand(W)
    wshape = w.shape
    if not wshape:
        raise ValueError("take: W must have at least one dimension, got a 0-d operand")
    n = wshape[0]
    idx = None
    if type(indices) is np.ndarray:
        # (_indices' common case inline: a Python frame less; a wrong dtype
        # or index gets its message there)
        try:
            idx, lo, hi = _wrapped_indices(indices, n)
        except TypeError:
            pass
        else:
            if (lo < -n or hi >= n) and indices.size:
                idx = None
    if idx is None:
        idx = _indices(indices, n, "take", "axis 0 of W")
    return _special(_TAKE, (_tensor(idx), w), idx.shape + wshape[1:], w.dtype)


class ChooseRowElement(Kernel):
    """``M[i, idx[i]]`` for M = args[0], idx = args[1] (intp)."""

    __slots__ = ()
    name = "choose_row_element"
    into_leaves = _nn_kernels.choose_leaves  # the compiled gather, no Python frame

    def params(self):
        return ()

    def shape(self, args):
        return args[1].shape

    def dtype(self, args):
        return args[0].dtype

    def work_shape(self, arrays):
        return arrays[1].shape

    def compute(self, out, arrays):
        _nn_kernels.choose_into(out, arrays[0], arrays[1])

    def vjp(self, node, g):
        """Reverse mode: ``g[i]`` at (i, indices[i]) of zeros, fused elementwise."""
        m, idx = node._args
        rows, cols = m.shape
        # fill_row_element over the node's own checked indices, read (not
        # copied: a kept schedule replays this tree over other indices' memory)
        hit = reshape(idx, (rows, 1)) == core.tensor(np.arange(cols, dtype=np.intp))
        zeros = broadcast_to(core.tensor(np.zeros((), g.dtype)), m.shape)
        return (core.where(hit, reshape(g, (rows, 1)), zeros), None)


def _matrix(e, fname, what):
    x = _operand(e)
    if x.ndim != 2:
        raise ValueError(f"{fname}: {what} must be 2-D, got shape {_fmt(x.shape)}")
    return x


def _row_indices(indices, rows, cols, fname):
    idx = _indices(indices, cols, fname, "a row")
    if idx.shape != (rows,):
        raise ValueError(f"{fname}: expected one index per row, shape ({rows},), got indices of "
                         f"shape {_fmt(idx.shape)}")
    return idx


def choose_row_element(M, indices):
    """One element of each row: ``M[i, indices[i]]`` (MShadow's
    ``mat_choose_row_element``; NumPy's ``M[np.arange(n), indices]``).

    Parameters
    ----------
    M : Expr or array_like, 2-D (n, m)
    indices : array_like of int, shape (n,)
        Column numbers; negative ones count from the end.  Read, checked and
        copied when the node is built.

    Returns
    -------
    Expr
        Of shape (n,) and ``M``'s dtype.

    Raises
    ------
    ValueError
        If ``M`` is not 2-D or ``indices`` is not of shape (n,).
    TypeError
        If ``indices`` are not integers.
    IndexError
        If an index is outside ``[-m, m)``.
    """
    m = _matrix(M, "choose_row_element", "M")
    idx = _row_indices(indices, m.shape[0], m.shape[1], "choose_row_element")
    return node(ChooseRowElement(), (m, core.tensor(idx)), idx.shape, m.dtype)


# --------------------------------------------------------------- scatter

class TakeGrad(Kernel):
    """Rows of G (args[1]) summed into the rows given by args[0] (intp)."""

    __slots__ = ("num_rows",)
    name = "take_grad"
    into_leaves = _nn_kernels.take_grad_leaves  # a vector of indices, 2-D rows: no Python frame

    def __init__(self, num_rows):
        self.num_rows = num_rows

    def params(self):
        return (self.num_rows,)

    def describe(self):
        return [f"num_rows={self.num_rows}"]

    def shape(self, args):
        return (self.num_rows,) + args[1].shape[args[0].ndim:]

    def dtype(self, args):
        return args[1].dtype

    def work_shape(self, arrays):
        idx, g = arrays
        return (self.num_rows, math.prod(g.shape[idx.ndim:]))

    def compute(self, out, arrays):
        idx, g = arrays
        _nn_kernels.take_grad_into(out, g.reshape(idx.size, out.shape[1]), idx.reshape(-1))

    def vjp(self, node, g):
        """Reverse mode: the rows of ``g`` gathered again (take)."""
        idx = node._args[0]  # the node's own checked indices, read (not copied)
        return (None, core.node(Take(), (idx, g), idx.shape + g.shape[1:], g.dtype))


def take_grad(indices, G, num_rows):
    """The gradient of :func:`take` with respect to ``W``: every row of ``G``
    added into row ``indices[i]`` of a zero table of ``num_rows`` rows
    (MShadow's ``take_grad``; NumPy's ``np.add.at(out, indices, G)``).

    Parameters
    ----------
    indices : array_like of int, any shape
        Read, checked and copied when the node is built; negatives count from the end.
    G : Expr or array_like
        Of shape ``indices.shape + row_shape``; int32, int64, float32 or float64.
    num_rows : int
        Rows of the result (of ``W``).

    Returns
    -------
    Expr
        Of shape ``(num_rows,) + row_shape`` and ``G``'s dtype.  Repeated
        indices accumulate in index order, in ``G``'s dtype, as ``np.add.at``
        does, whatever the number of threads.

    Raises
    ------
    ValueError
        If ``G``'s leading axes differ from ``indices.shape``, or ``num_rows < 0``.
    TypeError
        If ``indices`` are not integers, ``num_rows`` is not an integer or ``G`` is bool.
    IndexError
        If an index is outside ``[-num_rows, num_rows)``.
    """
    g = _operand(G)
    rows = _count(num_rows, "take_grad", "num_rows")
    if g.dtype == np.bool_:
        raise TypeError("take_grad: G must be numeric (int32, int64, float32 or float64), "
                        "got bool")
    idx = _indices(indices, rows, "take_grad", "num_rows")
    if g.shape[:idx.ndim] != idx.shape:
        raise ValueError(f"take_grad: G's leading axes must match the indices' shape "
                         f"{_fmt(idx.shape)}, got G of shape {_fmt(g.shape)}")
    kernel = TakeGrad(rows)
    return node(kernel, (core.tensor(idx), g), (rows,) + g.shape[idx.ndim:], g.dtype)


# ------------------------------------------------------ elementwise trees

def one_hot(indices, depth, dtype=np.float32):
    """Rows of the identity: ``out[..., j] = (j == indices[...])`` (MShadow's
    ``one_hot_encode``; NumPy's ``np.eye(depth, dtype=dtype)[indices]``).

    Parameters
    ----------
    indices : array_like of int, any shape
        Read, checked and copied when the node is built; negatives count from the end.
    depth : int
        Number of classes.
    dtype : data-type
        Of the result; float32 by default (MShadow's ``default_real_t``).

    Returns
    -------
    Expr
        Of shape ``indices.shape + (depth,)``: an elementwise comparison that
        fuses with the tree around it.

    Raises
    ------
    ValueError
        If ``depth < 0``.
    TypeError
        If ``indices`` or ``depth`` are not integers, or ``dtype`` is not supported.
    IndexError
        If an index is outside ``[-depth, depth)``.
    """
    depth = _count(depth, "one_hot", "depth")
    dt = np.dtype(dtype)
    core.dtype_code(dt)
    idx = _indices(indices, depth, "one_hot", "depth")
    hot = core.tensor(idx[..., None]) == core.tensor(np.arange(depth, dtype=np.intp))
    return hot if dt == np.bool_ else hot.astype(dt)


def fill_row_element(M, val, indices):
    """``M`` with element ``indices[i]`` of each row i replaced by ``val[i]``
    (MShadow's ``mat_fill_row_element``; NumPy's ``M[np.arange(n), indices] = val``
    on a copy).

    Parameters
    ----------
    M : Expr or array_like, 2-D (n, m)
    val : Expr, array_like or scalar, shape (n,) or ()
        Converted to ``M``'s dtype, as NumPy's assignment does.
    indices : array_like of int, shape (n,)
        Read, checked and copied when the node is built; negatives count from the end.

    Returns
    -------
    Expr
        Of ``M``'s shape and dtype: an elementwise ``where`` that fuses with
        the tree around it.

    Raises
    ------
    ValueError
        If ``M`` is not 2-D, or ``val`` or ``indices`` are not of shape (n,).
    TypeError
        If ``indices`` are not integers.
    IndexError
        If an index is outside ``[-m, m)``.
    """
    m = _matrix(M, "fill_row_element", "M")
    rows, cols = m.shape
    v = _operand(val)
    if v.shape not in ((), (rows,)):
        raise ValueError(f"fill_row_element: val must be a scalar or of shape ({rows},), got "
                         f"shape {_fmt(v.shape)}")
    idx = _row_indices(indices, rows, cols, "fill_row_element")
    hit = core.tensor(idx[:, None]) == core.tensor(np.arange(cols, dtype=np.intp))
    column = reshape(v, (rows, 1)) if v.ndim else v
    if column.dtype != m.dtype:
        column = column.astype(m.dtype)
    return core.where(hit, column, m)


def mask(m, X):
    """Row i of ``X`` scaled by ``m[i]``: ``X * m[:, None, ...]`` (MShadow's ``mask``).

    Parameters
    ----------
    m : Expr or array_like, shape (n,)
    X : Expr or array_like, at least 1-D, ``X.shape[0] == n``

    Returns
    -------
    Expr
        Of ``X``'s shape, dtype by NumPy's promotion of ``X * m``: an
        elementwise product that fuses with the tree around it.

    Raises
    ------
    ValueError
        If ``m`` is not 1-D or its length differs from ``X.shape[0]``.
    """
    mk, x = _operand(m), _operand(X)
    if x.ndim == 0 or mk.shape != x.shape[:1]:
        raise ValueError(f"mask: m must have shape (X.shape[0],); got m of shape "
                         f"{_fmt(mk.shape)} and X of shape {_fmt(x.shape)}")
    return x * reshape(mk, mk.shape + (1,) * (x.ndim - 1))


__all__ = ["choose_row_element", "fill_row_element", "mask", "one_hot", "take", "take_grad"]
