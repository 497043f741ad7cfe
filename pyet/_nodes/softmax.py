"""Softmax and log-softmax along an axis: a special node computed row by row
in one compiled pass (``_kernels/nn.pyx``, ``_kernels/softmax.h``)."""

import functools
import math

import numpy as np

from pyet._core import core
from pyet._core.core import Special, node
from pyet._kernels import nn as _nn_kernels

_F64 = np.dtype(np.float64)


class Softmax(Special):
    """Softmax (or log-softmax) along ``axis`` in one compiled pass: row by
    row when the axis is contiguous in memory (max, exp(x - max) and its sum,
    then divide or subtract the log), tiles of columns otherwise (the same
    passes, every inner loop along the contiguous axis: no transposed copy)."""

    __slots__ = ("axis", "log")
    scratch_operands = True  # a kept plan: a tree child in scratch, the kernel bound

    def __init__(self, axis, log):
        self.axis, self.log = axis, log

    @property
    def name(self):
        return "log_softmax" if self.log else "softmax"

    def params(self):
        return (self.axis, self.log)

    def describe(self):
        return [f"axis={self.axis}"]

    def variant(self, name):
        # rewrite.SPECIAL_FOLDS: log(softmax(x)) -> log_softmax(x)
        return Softmax(self.axis, True) if name == "log_softmax" else None

    def value(self, args):
        (x,) = args
        if _fortran_leaf(x):  # into Fortran order, through the transposes (into)
            out = _fortran_empty(x)
            self.into(out, args)
            return out
        if self._by_rows(x, None):  # rows contiguous, moved back after
            shape = _moved(x.shape, self.axis)
            out = np.empty(shape, x.dtype)
            if out.size:
                self._rows_into(out.reshape(-1, shape[-1]), x)
            return np.moveaxis(out, -1, self.axis)
        out = np.empty(x.shape, x.dtype)
        if out.size:
            self._cols_into(_cols(out, self.axis), x)
        return out

    def into(self, dst, args):
        (x,) = args
        if _fortran_leaf(x):
            # a Fortran leaf: the C-order softmax of the transposes along the
            # mirrored axis, into dst in Fortran order, or into a Fortran
            # buffer copied into dst (pyet's copy across orders: NumPy's
            # transposing copy in took 2.1-2.8x NumPy's softmax, evaluate()
            # of a (32768, 2) float32 leaf; into Fortran order 3.7x)
            out = dst if dst.flags.f_contiguous else _fortran_empty(x)
            Softmax(x.ndim - 1 - self.axis, self.log).into(
                out.T, (core.tensor(x._array.T),))
            if out is not dst:
                core.assign(dst, core.tensor(out))
            return
        if self._by_rows(x, dst):
            rows = _rows(dst, self.axis)
            if rows is not None:
                self._rows_into(rows, x)
                return
        else:
            cols = _cols(dst, self.axis)
            if cols is not None:
                self._cols_into(cols, x)
                return
        super().into(dst, args)  # no view of dst fits: computed aside, copied once

    def _by_rows(self, x, dst):
        # row kernel or column tiles: rows when the axis is the last one that
        # is not 1, or when the input (or, for a tree, dst) has contiguous rows
        # along it, so that nothing is transposed
        if all(n == 1 for n in x.shape[self.axis + 1:]):
            return True
        if isinstance(x, core.Tensor):
            return _rows(x._array, self.axis) is not None
        return dst is not None and _rows(dst, self.axis) is not None

    def vjp(self, node, g):
        """Reverse mode, lazily: ``s*(g - sum(g*s))`` for s = softmax (sums
        along the axis); for l = log_softmax, ``g - exp(l)*sum(g)`` as one fused
        row pass (:func:`softmax_xent_grad`): with g = c*t, c constant along the
        axis (the gradient of ``-sum(t*log_softmax(x))``), it reads t itself."""
        from pyet._nodes.reductions import sum as _sum

        if self.log:
            c, t = _factor(g, self.axis, node.ndim)
            return (softmax_xent_grad(node, t, c, self.axis),)
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

    def _child(self, child):
        if isinstance(child, core.SpecialNode):
            # its value through the evaluation's table, so other trees reading
            # the same node share it (assigned at a root it would not be kept)
            child = core.materialize(child)
        return child

    def _rows_into(self, rows, child):
        child = self._child(child)
        if isinstance(child, core.Tensor):  # read in place when its rows are contiguous
            x = _rows(child._array, self.axis, copy=True)
        else:  # a tree: evaluated once, straight into rows along the axis
            x = np.empty(rows.shape, rows.dtype)
            core.assign(np.moveaxis(x.reshape(_moved(child.shape, self.axis)), -1, self.axis),
                        child)
        if x.size:
            _nn_kernels.softmax_rows(x, rows, self.log)

    def _cols_into(self, cols, child):
        child = self._child(child)
        if isinstance(child, core.Tensor):  # read in place (copied if it has no 3-D view)
            x = _cols(child._array, self.axis)
            if x is None:
                x = _cols(np.ascontiguousarray(child._array), self.axis)
        else:  # a tree: evaluated once, in C order
            x = np.empty(child.shape, cols.dtype)
            core.assign(x, child)
            x = _cols(x, self.axis)
        if x.size:
            _nn_kernels.softmax_cols(x, cols, self.log)


class SoftmaxXentGrad(Special):
    """``c * (exp(logp) * sum(t, axis) - t)``, logp = log_softmax(x): the gradient
    of softmax cross-entropy ``-sum(t * log_softmax(x))`` with respect to x,
    scaled by c, for any t; one compiled pass per row (``softmax.h``).

    Children: logp; t (of logp's shape, or for a 2-D logp along axis 1 an integer
    vector of class indices: one-hot targets); c (constant along the axis).
    """

    __slots__ = ("axis",)
    name = "softmax_xent_grad"
    scratch_operands = True  # a kept plan: tree operands in scratch, the kernel bound
    # rows of leaves along axis 1 into dst: the compiled entry, no Python frame
    into_leaves = _nn_kernels.xent_grad_leaves

    def __init__(self, axis):
        self.axis = axis

    def params(self):
        return (self.axis,)

    def describe(self):
        return [f"axis={self.axis}"]

    def value(self, args):
        logp = args[0]
        shape = _moved(logp.shape, self.axis)
        out = np.empty(shape, logp.dtype)
        if out.size:
            self._rows_into(out.reshape(-1, shape[-1]), args)
        return np.moveaxis(out, -1, self.axis)

    def into(self, dst, args):
        rows = _rows(dst, self.axis)
        if rows is None:
            super().into(dst, args)
        else:
            self._rows_into(rows, args)

    def bind(self, out, args):
        """A function writing the value into ``out`` again (a kept plan's
        replay) when log-probabilities, targets and ``out`` are rows read and
        written in place (``c``, one value, is read at each call); else None."""
        logp, t, c = args
        rows = _rows(out, self.axis)
        if (rows is None or not rows.size or c.size != 1 or not isinstance(logp, core.Tensor)
                or not isinstance(t, core.Tensor)):
            return None
        lv, ta = _rows(logp._array, self.axis), t._array
        if t.dtype.kind in "iu":
            tv = ta if ta.dtype == np.intp and ta.flags.c_contiguous else None
        else:
            tv = _rows(ta, self.axis) if ta.dtype == rows.dtype else None
        if lv is None or tv is None:
            return None

        if isinstance(c, core.Tensor):
            def run():
                cv = np.asarray(core.array_of(c, rows.dtype)).reshape(1)
                _nn_kernels.xent_grad_rows(lv, tv, cv, rows)
            return run
        # a tree (a loss's seed times 1/N): assigned into a buffer of its own,
        # half the set-up of array_of's evaluation
        cbuf = np.empty((), rows.dtype)
        cv = cbuf.reshape(1)

        def run_tree():
            core.assign(cbuf, c)
            _nn_kernels.xent_grad_rows(lv, tv, cv, rows)
        return run_tree

    def _rows_into(self, rows, args):
        logp, t, c = args
        dtype = rows.dtype
        lv = _rows(core.array_of(logp), self.axis, copy=True)
        if t.dtype.kind in "iu":
            tv = np.asarray(core.array_of(t), np.intp)
        else:
            tv = _rows(core.array_of(t, dtype), self.axis, copy=True)
        cv = np.asarray(core.array_of(c, dtype))
        if cv.size == 1:
            cv = cv.reshape(1)
        else:
            kept = logp.shape[:self.axis] + (1,) + logp.shape[self.axis + 1:]
            cv = np.ascontiguousarray(np.moveaxis(np.broadcast_to(cv, kept), self.axis, -1))
            cv = cv.reshape(-1)
        _nn_kernels.xent_grad_rows(lv, tv, cv, rows)

    def unfused(self, args):
        """The same value as a tree of ordinary nodes (for its own gradient)."""
        from pyet._nodes.nn import one_hot
        from pyet._nodes.reductions import sum as _sum

        logp, t, c = args
        if t.dtype.kind in "iu":
            t = one_hot(core.array_of(t), logp.shape[1], logp.dtype)
        return c * (core.apply("exp", (logp,)) * _sum(t, self.axis, keepdims=True) - t)

    def vjp(self, node, g):
        """Through the unfused tree (second derivatives)."""
        from pyet._nodes.grad import vjp

        logp, t, c = node._args
        wrt = [logp, c] + ([t] if t.dtype.kind == "f" else [])
        grads = vjp(self.unfused(node._args), wrt, g)
        return (grads[0], grads[2] if len(grads) > 2 else None, grads[1])


def softmax_xent_grad(logp, t, c, axis=-1):
    """``c * (exp(logp) * sum(t, axis, keepdims=True) - t)`` lazily, one row pass.

    With ``logp = log_softmax(x, axis)`` this is ``c`` times the gradient of
    ``-sum(t * log_softmax(x))`` with respect to ``x``: ``softmax(x) *
    sum(t) - t``, for any ``t`` (rows need not sum to 1, entries may be
    negative).

    Parameters
    ----------
    logp : Expr
        Float log-probabilities (usually a ``log_softmax`` node: its value is
        shared with the forward pass).
    t : Expr, array_like
        Targets broadcastable to ``logp``; or, for a 2-D ``logp`` and ``axis`` 1 (or
        -1), an integer vector of class indices (one-hot rows), checked here.
    c : Expr, array_like or scalar
        A factor constant along ``axis`` (broadcastable to ``logp`` with length 1
        there).
    axis : int

    Returns
    -------
    Expr
        Of ``logp``'s shape and dtype.
    """
    logp = core.as_expr(logp)
    axis = core.axis_index(axis, logp.ndim)
    dtype = logp.dtype
    kept = logp.shape[:axis] + (1,) + logp.shape[axis + 1:]
    if isinstance(t, core.Tensor):
        t = t.numpy() if t.dtype.kind in "iu" else t
    if isinstance(t, np.ndarray) and t.dtype.kind in "iu":
        idx = t
        if logp.ndim != 2 or axis != 1 or idx.shape != logp.shape[:1]:
            raise ValueError(f"softmax_xent_grad: class indices of shape {idx.shape} need a "
                             f"2-D logp along axis 1 with as many rows, got {logp.shape}, "
                             f"axis {axis}")
        n = logp.shape[1]
        own, lo, hi = _nn_kernels.wrapped_indices(idx, n)  # the node's own wrapped copy
        if idx.size and (lo < -n or hi >= n):
            raise IndexError(f"softmax_xent_grad: class index out of range [-{n}, {n})")
        t = core.tensor(own)
    else:
        t = core.as_expr(t)
        if t.dtype != dtype:
            t = t.astype(dtype)
        if t.shape != logp.shape:
            from pyet._nodes.views import broadcast_to
            t = broadcast_to(t, logp.shape)
    c = core.as_expr(c)
    if isinstance(c, core.Scalar):
        c = core.tensor(np.asarray(c._value, dtype))
    if c.dtype != dtype:
        c = c.astype(dtype)
    # c broadcasts to kept (np.broadcast_shapes costs ~1 us more)
    if len(c.shape) > len(kept) or any(
            m != 1 and m != k for m, k in zip(c.shape[::-1], kept[::-1], strict=False)):
        raise ValueError(f"softmax_xent_grad: c of shape {c.shape} must be constant along "
                         f"axis {axis} of {logp.shape} (broadcast to {kept})")
    return node(SoftmaxXentGrad(axis), (logp, t, c), logp.shape, dtype)


def _factor(g, axis, ndim):
    """The cotangent ``g`` of a log_softmax node as (c, t) with the vjp
    ``g - exp(l)*sum(g) == c * (exp(l)*sum(t) - t)``: g = -c*t where c is
    constant along ``axis`` (a seed broadcast over the rows, a scale), else
    c = -1 and t = g."""
    sign, e = -1.0, g
    while isinstance(e, core.Expr) and core.OPNAMES.get(e._op) == "negative":
        sign, e = -sign, e._args[0]
    if core.OPNAMES.get(e._op) == "multiply":
        a, b = e._args
        for c, t in ((a, b), (b, a)):
            if isinstance(t, core.Scalar):
                continue
            kept = _row_constant(c, axis - (ndim - c.ndim))
            if kept is not None:
                return (kept if sign > 0 else core.apply("negative", (kept,))), t
    return -1.0, g


def _row_constant(e, k):
    """``e`` as an expression constant along its axis ``k`` (length 1 there),
    or None when it is not known to be."""
    if isinstance(e, core.Scalar) or k < 0 or e.shape[k] == 1:
        return e
    if isinstance(e, core.Tensor):
        a = e._array
        if a.strides[k] == 0:
            return core.as_expr(a[(slice(None),) * k + (slice(0, 1),)])
        return None
    if isinstance(e, core.SpecialNode):
        kernel = e._kernel
        if isinstance(kernel, core.View) and kernel.kind == "broadcast_to":
            child = e._args[0]  # a broadcast of what has length 1 along the axis
            return _row_constant(child, k - (e.ndim - child.ndim))
        return None
    if isinstance(e, core.PyFunc) or e._op == core.OPCODES["where"]:
        return None
    args = [_row_constant(a, k - (e.ndim - a.ndim)) for a in e._args]
    if any(a is None for a in args):
        return None
    return core.with_args(e, tuple(args))


def _fortran_leaf(x):
    """``x`` is a leaf in Fortran order and not in C order."""
    return (isinstance(x, core.Tensor) and x.ndim > 1 and x._array.flags.f_contiguous
            and not x._array.flags.c_contiguous)


def _fortran_empty(x):
    """A new array of ``x``'s shape and dtype in Fortran order."""
    return np.empty(x.shape[::-1], x.dtype).T


def _moved(shape, axis):
    """``shape`` with ``axis`` moved last."""
    return shape[:axis] + shape[axis + 1:] + (shape[axis],)


def _cols(a, axis):
    """``a`` as a 3-D view (before the axis, the axis, after it), or None."""
    shape = a.shape
    outer = math.prod(shape[:axis])
    inner = math.prod(shape[axis + 1:])
    return core.reshaped_view(a, (outer, shape[axis], inner))


def _rows(a, axis, copy=False):
    """``a`` with ``axis`` moved last, as a 2-D array of contiguous rows: a view,
    or None when there is none (a copy when ``copy``)."""
    n = a.shape[axis]
    if axis == a.ndim - 1:
        moved = a
    elif not copy and n != 1 and a.strides[axis] != a.itemsize:
        return None  # (asked on every softmax not along the last axis)
    else:  # (a transpose, not np.moveaxis: ~2 us of a 4 us softmax at 256 elements)
        moved = a.transpose(_moved(tuple(range(a.ndim)), axis))
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
    if x.shape[axis] == 0 and x.size == 0 and math.prod(x.shape[:axis] + x.shape[axis + 1:]):
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


__all__ = ["log_softmax", "softmax", "softmax_xent_grad"]
