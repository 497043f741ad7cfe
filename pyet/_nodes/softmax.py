"""Softmax and log-softmax along an axis: a special node computed row by row
in one compiled pass (``_kernels/nn.pyx``, ``_kernels/softmax.h``)."""

import functools

import numpy as np

from pyet._core import core
from pyet._core.core import Special, node
from pyet._kernels import nn as _nn_kernels

_F64 = np.dtype(np.float64)


class Softmax(Special):
    """Softmax (or log-softmax) along ``axis``, row by row in one compiled
    pass: max, exp(x - max) and its sum, then divide (or subtract the log)."""

    __slots__ = ("axis", "log")

    def __init__(self, axis, log):
        self.axis, self.log = axis, log

    @property
    def name(self):
        return "log_softmax" if self.log else "softmax"

    def params(self):
        return (self.axis, self.log)

    def describe(self):
        return [f"axis={self.axis}"]

    def value(self, args):
        (x,) = args
        shape = _moved(x.shape, self.axis)
        out = np.empty(shape, x.dtype)  # rows contiguous, moved back after
        if out.size:
            self._rows_into(out.reshape(-1, shape[-1]), x)
        return np.moveaxis(out, -1, self.axis)

    def into(self, dst, args):
        rows = _rows(dst, self.axis)
        if rows is None:  # dst's rows are not contiguous: compute aside, copy once
            super().into(dst, args)
        else:
            self._rows_into(rows, args[0])

    def vjp(self, node, g):
        """Reverse mode, lazily: ``s*(g - sum(g*s))`` for s = softmax,
        ``g - exp(l)*sum(g)`` for l = log_softmax (sums along the axis)."""
        from pyet._nodes.reductions import sum as _sum

        if self.log:
            return (g - core.apply("exp", (node,)) * _sum(g, self.axis, keepdims=True),)
        return (node * (g - _sum(g * node, self.axis, keepdims=True)),)

    def bind(self, out, args):
        """A function writing the value into ``out`` again (a kept plan's
        replay), when both are rows along the axis that are read in place;
        None otherwise."""
        rows, (child,) = _rows(out, self.axis), args
        if rows is None or not rows.size or not isinstance(child, core.Tensor):
            return None
        x = _rows(child._array, self.axis)
        if x is None:
            return None
        return functools.partial(_nn_kernels.softmax_rows, x, rows, self.log)

    def _rows_into(self, rows, child):
        if isinstance(child, core.SpecialNode):
            # its value through the evaluation's table, so other trees reading
            # the same node share it (assigned at a root it would not be kept)
            child = core.materialize(child)
        if isinstance(child, core.Tensor):  # read in place when its rows are contiguous
            x = _rows(child._array, self.axis, copy=True)
        else:  # a tree: evaluated once, straight into rows along the axis
            x = np.empty(rows.shape, rows.dtype)
            core.assign(np.moveaxis(x.reshape(_moved(child.shape, self.axis)), -1, self.axis),
                         child)
        if x.size:
            _nn_kernels.softmax_rows(x, rows, self.log)


def _moved(shape, axis):
    """``shape`` with ``axis`` moved last."""
    return shape[:axis] + shape[axis + 1:] + (shape[axis],)


def _rows(a, axis, copy=False):
    """``a`` with ``axis`` moved last, as a 2-D array of contiguous rows: a view,
    or None when there is none (a copy when ``copy``)."""
    moved = np.moveaxis(a, axis, -1)
    n = moved.shape[-1]
    shape = (moved.size // n if n else 0, n)
    if n == 1 or moved.strides[-1] == moved.itemsize:
        view = core.reshaped_view(moved, shape)
        if view is not None:
            return view
    if not copy:
        return None
    return np.ascontiguousarray(moved).reshape(shape)


def _softmax(e, axis, log):
    x = core.as_expr(e)
    if x.ndim == 0:
        raise ValueError(f"{'log_softmax' if log else 'softmax'} needs an expression of at "
                         "least one dimension")
    axis = core.axis_index(axis, x.ndim)
    if x.shape[axis] == 0 and x.size == 0 and np.prod(x.shape[:axis] + x.shape[axis + 1:]):
        raise ValueError("zero-size array to reduction operation maximum which has no identity")
    dtype = x.dtype
    if dtype.kind == "b":
        raise TypeError(f"{'log_softmax' if log else 'softmax'} of bool is not supported")
    if dtype.kind in "iu":  # NumPy's formula computes integers in float64
        x, dtype = x.astype(_F64), _F64
    return node(Softmax(axis, log), (x,), x.shape, dtype)


def softmax(e, axis=-1):
    """``exp(e - max) / sum(exp(e - max))`` along ``axis``, lazily; subtracting
    the maximum keeps it finite for inputs like 1e4 and -1e4.  Computed row by
    row in one compiled pass (reads e once, writes once); integers in float64."""
    return _softmax(e, axis, False)


def log_softmax(e, axis=-1):
    """``(e - max) - log(sum(exp(e - max)))`` along ``axis``, lazily and finitely,
    in one compiled pass like :func:`softmax`."""
    return _softmax(e, axis, True)


__all__ = ["log_softmax", "softmax"]
