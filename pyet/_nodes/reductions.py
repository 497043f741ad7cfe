"""Reductions as lazy nodes (MShadow's kComplex expressions, xtensor's lazy
reducers): ``pyet.sum(a*b + c, axis=1)`` reads a, b and c once, block by block,
folding each block into the result; no full-size temporary is made.

A reduction inside a bigger tree (``x - pyet.max(x, axis=1, keepdims=True)``)
is computed first, into a scratch array of the result's size, which then
stands in the tree as a leaf.
"""

import functools
import math
import threading
import warnings

import numpy as np

from pyet._core import core
from pyet._core.core import Special, materialize

_Tensor, _Scalar = core.Tensor, core.Scalar

_BOOL, _I32, _I64, _F32, _F64 = (np.dtype(np.bool_), np.dtype(np.int32), np.dtype(np.int64),
                                 np.dtype(np.float32), np.dtype(np.float64))
_FOLD = {"sum": 1, "mean": 1, "prod": 2, "max": 3, "min": 4, "all": 5, "any": 6,
         "argmax": 7, "argmin": 8}
# the ufunc reduce np.sum, np.prod, np.max, np.min, np.all and np.any call for
# ndarrays, with its dtype argument
_UFUNC_REDUCE = {"sum": (np.add.reduce, None), "prod": (np.multiply.reduce, None),
                 "max": (np.maximum.reduce, None), "min": (np.minimum.reduce, None),
                 "all": (np.logical_and.reduce, _BOOL), "any": (np.logical_or.reduce, _BOOL)}
_CACHE_LINE = 64  # bytes: the threads' accumulator sets never share one
_COMBINE = {"sum": np.add, "mean": np.add, "prod": np.multiply, "max": np.maximum,
            "min": np.minimum, "all": np.logical_and, "any": np.logical_or}


def _accumulator(kind, dtype, across_rows=False):
    """(accumulator dtype, initial value): float32 sums and means accumulate in
    float64, which keeps them at NumPy's pairwise accuracy or better; folded
    across rows (the reduced axes are not the innermost in memory) they add
    in float32, row after row, which is NumPy's own order there (its pairwise
    sum runs only along a contiguous axis): the same bits, without a cast of
    every block and with the multi-row fold."""
    if kind in ("sum", "mean"):
        if dtype == _F32 and across_rows:
            return _F32, 0
        return (_F64 if dtype.kind == "f" or kind == "mean" else _I64), 0
    if kind == "prod":  # in the result's dtype: over- and underflow as NumPy's
        return (dtype if dtype.kind == "f" else _I64), 1
    if kind in ("all", "any"):
        return _BOOL, kind == "all"
    if dtype == _BOOL:
        return _BOOL, kind == "min"
    if dtype.kind == "f":
        return dtype, -np.inf if kind == "max" else np.inf
    info = np.iinfo(dtype)
    return dtype, info.min if kind == "max" else info.max


# up to this many elements a reduction of a bare leaf is NumPy's own: there is
# no tree to fuse, the pass would run on one thread (parallel's default
# MIN_PER_THREAD), and the accumulators' set-up (~35 us of Python) would be
# most of the time (sum of 20^3 float64 into dst: 8.1x NumPy -> 2.4x)
SMALL_LEAF = 1 << 16


# up to this many bytes a contiguous leaf's max or min folds on one thread
# even where the pass would take more (core.fold_flat, fold_rows): whole max
# of float64 2^18 on 2 threads 1.24x one, 2^20 0.94x, 2^22 0.65x
ONE_CALL_BYTES = 1 << 22
# max/min folding each row of a C-contiguous leaf whole: rows of at least
# this many elements (core.fold_short_rows)
EACH_ROW_MIN = 256
# a leaf whose innermost axis in memory is shorter than this goes to NumPy's
# loop for the reductions whose values do not depend on the order
# (_short_inner), where Reduction's own ways (_short_way) do not take it
SHORT_INNER = 64
# argmax/argmin of fewer elements take NumPy's loop: the pass's fold of values
# with their indices costs ~20 us to set up (F-order float64 along axis 1,
# pass / NumPy: (85, 3) 10.4x, 64^2 5.9x, 128^2 1.5x, 256^2 0.35x)
ARG_PASS_MIN = 1 << 15
# one reduced axis shorter than this (a leaf's, with SHORT_FOLD_MIN elements
# or more) folds as an elementwise tree of its slices (_fold_slices): NumPy
# calls its loop once per output element there (float64 max along axis 1 of
# (87381, 3) C: NumPy 3.1 ms, the tree 78 us); NumPy sums up to 7 in order
SHORT_AXIS = 8
SHORT_FOLD_MIN = 1 << 12
# rows of a C leaf's kept trailing axes (fewer than SHORT_INNER elements)
# folded over its leading axes are viewed this many elements wide (_wide_rows:
# float64 max over axis 0 of (87381, 3) C: NumPy 2.3 ms, 1024 wide 40-52 us),
# from this many rows (NumPy's loop costs 15-30 ns a row; the wide fold's set-up ~10 us)
WIDE_ROWS = 1024
WIDE_MIN_ROWS = 2048
# argmax/argmin whose kept rows are contiguous in memory run in lanes of this
# many rows or more (core.arg_rows), any length of the reduced axis: NumPy
# copies the axis last first (float64 (16384, 16) over axis 0: 0.26x NumPy)
ARG_LANES_MIN = 16
# argmax/argmin along contiguous rows of this many bytes or more take NumPy's
# loop a row: its SIMD loops start there (float64 and int64 rows of 32, 4-byte
# rows of 64); shorter, core.arg_rows' lanes (int32 rows of 48 0.49x NumPy,
# float32 0.21x).  Contiguous bool rows of any length take core.arg_rows (the
# first deciding byte: random rows of 3-63 0.28-0.77x; rows that do not
# decide, 2^18 bytes in rows of 8 to 87381: argmax 0.09-0.96x, argmin by
# memchr as NumPy's 0.35-1.04x).
ARG_SIMD_BYTES = 256


def _small_leaf(kind, child):
    return (isinstance(child, _Tensor) and 0 < child._array.size <= SMALL_LEAF
            and kind != "argmax" and kind != "argmin")


def _numpy_kind(kind, array, axes, whole):
    """Whether NumPy's loops reduce this bare leaf faster than the pass, with
    the same values and bits (no tree to fuse: the same work).  Measured on
    one thread at 64^3 (pass / NumPy): argmax and argmin of bools (1-15x),
    over all axes of a leaf that is not contiguous (1.3-7.5x: NumPy copies it
    into a contiguous one, then its SIMD loop), along the leaf's innermost
    axis in memory (1.1-3.3x), of 4-byte values not C-contiguous (1.4-5x);
    max, min, all and any of a contiguous bool leaf (1.1-10x: NumPy's byte
    loops); all and any of numbers along a contiguous leaf's innermost axis
    (1.2-2x: the pass casts each row to bools first; F-order (1e5, 3) along
    axis 0 1.6-1.9x); max and min of a whole
    contiguous integer leaf (1.3-2x).  The others are the pass's: it is
    faster for them (argmax across rows 0.5-0.9x, bool sums and strided bool
    folds 0.1-0.9x, whole all/any, which stop once decided), float sums and
    means are more accurate, and float max and min have their own folds."""
    if not (array.size > 0 and array.ndim > 0):
        return False
    # every axis of more than one element named (axis=0 of a vector or a column)
    # (this module's all() is pyet's)
    whole = whole or math.prod([n for i, n in enumerate(array.shape) if i not in axes]) == 1
    dtype = array.dtype
    if kind in ("argmax", "argmin") and (dtype == _BOOL or whole
                                         or array.size < ARG_PASS_MIN):
        return True
    inner = _inner_axis(array)  # (once: the checks below all ask it)
    short = inner >= 0 and array.shape[inner] < SHORT_INNER  # (_short_inner)
    if kind in ("argmax", "argmin"):
        if inner < 0:
            return False
        return ((array.shape[axes[0]] > 1
                 and abs(array.strides[axes[0]]) == abs(array.strides[inner]))
                or (dtype.itemsize <= 4 and not array.flags.c_contiguous) or short)
    if not whole and short and (kind in ("max", "min", "any", "all") or (
            kind in ("sum", "prod", "mean") and dtype.kind in "iub")):
        return True  # NumPy's values (integers wrap alike; their means are NumPy's)
    contiguous = array.flags.c_contiguous or array.flags.f_contiguous
    if dtype == _BOOL:
        return kind in ("max", "min", "all", "any") and contiguous
    if kind in ("all", "any"):  # along the innermost axis in memory (C's last, F's first)
        return contiguous and inner in axes and len(axes) < array.ndim
    return (kind in ("max", "min") and dtype.kind == "i" and whole and contiguous)


def _short_inner(array):
    """Whether a leaf's innermost axis in memory is short (under SHORT_INNER):
    the pass folds its rows, kept or reduced, one call each (argmax of
    float64 F-order (k, 2e5 / k) along axis 1, pass / NumPy: k = 3 20x, 16
    2.0x, 32 1.2x, 64 0.82x, 512 0.19x; int32 sums and any of (1e5, 3) and
    (3, 1e5) layouts 1.6-2.3x; two threads only halve it)."""
    inner = _inner_axis(array)
    return inner >= 0 and array.shape[inner] < SHORT_INNER


def _inner_axis(array):
    # the axis of more than one element with the least step (the first of
    # ties), -1 for none
    inner, least = -1, 0
    for i, n in enumerate(array.shape):
        if n > 1 and (inner < 0 or abs(array.strides[i]) < least):
            inner, least = i, abs(array.strides[i])
    return inner


def _fold_slices(kind, array, axis, dst):
    """``kind`` over ``axis`` (of k < SHORT_AXIS elements) of ``array`` into
    ``dst`` (kept axes' shape) as one fused pass of the k slices, folded in
    NumPy's order (its bits): x0 op x1 op ... in the dtype (integer sums and
    products in int64, integer means in float64, any/all of ``!= 0``)."""
    key = [slice(None)] * array.ndim
    cols = []
    for j in range(array.shape[axis]):
        key[axis] = j
        cols.append(core.tensor(array[tuple(key)]))
    acc_dtype = _result_dtype(kind, array.dtype)
    if kind in ("any", "all"):
        # (bools' | and & read any byte but 0 as true; one slice alone is not folded)
        cols = cols if array.dtype == _BOOL and len(cols) > 1 else [c != 0 for c in cols]
    elif kind in ("sum", "prod", "mean") and cols[0].dtype != acc_dtype:
        cols[0] = cols[0].astype(acc_dtype)
    fold = _SLICE_FOLD[kind]
    tree = cols[0]
    for c in cols[1:]:
        tree = fold(tree, c)
    if kind == "mean":
        tree = tree / len(cols)
    core.assign(dst, tree)


# Reduction's own ways for a leaf layout (_way_of); _ARG_ROWS and _EACH_ROW
# may refuse a destination (core.arg_rows, core.fold_short_rows)
_NO_WAY, _ARG_ROWS, _SLICES, _WIDE, _WIDE_T, _SQUEEZED, _EACH_ROW, _LEAD_TRAIL = range(8)
# whether NumPy's loop takes the leaf where no way of its own did
_NUMPY_NO, _NUMPY_YES, _NUMPY_ONE_THREAD = range(3)
# (core.reduce_leaves, Reduction's into_leaves, tests the first two as false)
assert _NO_WAY == _NUMPY_NO == 0 and _NUMPY_ONE_THREAD == core.LEAF_NUMPY_ONE_THREAD

# two slices' fold (_fold_slices)
_SLICE_FOLD = {"sum": lambda a, b: a + b, "mean": lambda a, b: a + b,
               "prod": lambda a, b: a * b, "max": lambda a, b: core.apply("maximum", (a, b)),
               "min": lambda a, b: core.apply("minimum", (a, b)),
               "any": lambda a, b: a | b, "all": lambda a, b: a & b}


def _wide_rows(kind, array, nlead, dst):
    """``kind`` over the leading ``nlead`` axes of C-contiguous ``array``
    whose trailing axes hold k < SHORT_INNER elements, into ``dst``: the
    rows viewed WIDE_ROWS elements wide (m rows of k in each), those
    folded over the leading axis, then the m partial rows and the rows left
    over.  For kinds whose values do not depend on the order (max, min,
    any, all; integer sums and products); the caller saw two wide rows or
    more."""
    k = math.prod(array.shape[nlead:])
    rows = array.size // k
    m = WIDE_ROWS // k  # (k < SHORT_INNER: 16 or more)
    whole = rows - rows % m
    flat = array.reshape(rows, k)
    out_dtype = _result_dtype(kind, array.dtype)
    part = np.empty((m, k), out_dtype)
    _reduce_into(kind, flat[:whole].reshape(whole // m, m * k), (0,), part.reshape(m * k))
    reduce, dtype = _UFUNC_REDUCE[kind]
    dtype = dtype or out_dtype
    acc = _fold_lead(reduce, part, dtype)
    if whole < rows:
        acc = _COMBINE[kind](acc, _fold_lead(reduce, flat[whole:], dtype), dtype=dtype)
    np.copyto(dst, acc.reshape(dst.shape))


def _lead_axes(axes, nd):
    """How many leading axes ``axes`` (sorted) of an nd-axis operand reduce
    when the rest of them are its trailing axes and axes between are kept
    (a bias gradient's (0, 2, 3) of NCHW: 1); 0 for any other form."""
    lead = next((i for i, ax in enumerate(axes) if ax != i), len(axes))
    trail = axes[lead:]
    return lead if (trail and trail == tuple(range(nd - len(trail), nd))
                    and lead < nd - len(trail)) else 0


def _reduce_trailing(kind, part, dst):
    # ``kind`` of part over its trailing axes (those dst has not) into dst:
    # NumPy's reduce over them viewed as one
    kept = dst.ndim
    _UFUNC_REDUCE[kind][0](part.reshape(part.shape[:kept] + (-1,)), kept, None, dst)


def _lead_trail(kind, array, lead, dst):
    """``kind`` (sum, max or min) of C-contiguous ``array`` over its ``lead``
    leading axes and its trailing ones, the axes between kept (a bias
    gradient's sum over (0, 2, 3) of NCHW), into ``dst`` without the
    reduced axes: the leading axes folded row after row first
    (core.fold_rows: NumPy's order over leading axes, one vectorized pass),
    then the trailing axes of that small array by NumPy's reduce.  The
    pass and NumPy's loop walked the short trailing runs one by one
    (float32 (256, 32, 4, 4): NumPy 163 us, the pass 297)."""
    part = np.empty(array.shape[lead:], array.dtype)
    if not core.fold_rows(part, array, _FOLD[kind], lead):
        return False
    _reduce_trailing(kind, part, dst)
    return True


def _reduce_into(kind, array, axes, dst):
    # ``kind`` of leaf array ``array`` over ``axes`` into dst (its result's
    # shape and dtype, apart from array) by the reduction of its layout,
    # without a node or an assignment
    leaf = core.tensor(array)
    _layout(kind, leaf.shape, leaf._dt, axes, False)[0].into(dst, (leaf,))


def _fold_lead(reduce, rows, dtype):
    # (r, k) C rows folded over axis 0; under 16 columns as their transposed
    # copy along axis 1 (NumPy's loop once a row: 341 x 3 float64 max 9.8 us,
    # the copy's 2.0 us)
    if rows.shape[1] < 16:
        return reduce(np.ascontiguousarray(rows.T), 1, dtype)
    return reduce(rows, 0, dtype)


def _numpy_reduction(kind, array, axis, keepdims, out=None):
    # the ufunc's reduce where np.sum/prod/max/min/all/any would call it
    # (without their Python wrapper, ~1-2 us), NumPy's function for the others
    if kind in ("argmax", "argmin"):  # (the method: np.argmax's wrapper ~1 us)
        return getattr(array, kind)(axis=None if axis is None else axis[0], out=out,
                                    keepdims=keepdims)
    reduce, dtype = _UFUNC_REDUCE.get(kind, (None, None))
    if reduce is not None:
        return reduce(array, axis, dtype, out, keepdims)
    if kind == "mean" and out is not None:
        count = array.size if axis is None else math.prod([array.shape[a] for a in axis])
        if count:
            return _mean_into(array, axis, keepdims, out, count)
    return getattr(np, kind)(array, axis=axis, out=out, keepdims=keepdims)


def _mean_into(array, axis, keepdims, out, count):
    # np.mean(array, axis, out=out) without its Python wrapper (~8 us): the
    # sum (in float64 for integers and bools), then true_divide by an intp
    # count, as NumPy's _mean does it (the same loops: the same bits)
    np.add.reduce(array, axis=axis, dtype=_F64 if array.dtype.kind in "biu" else None,
                  out=out, keepdims=keepdims)
    return np.true_divide(out, np.intp(count), out=out, casting="unsafe")


def _c_strides(shape, dtype):
    """C-order strides of ``shape`` (computed: np.empty would refuse more than 64 axes)."""
    strides, step = [], np.dtype(dtype).itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= d if d > 1 else 1  # (max is the lazy reduction here)
    return tuple(reversed(strides))


def _slots(nthreads, nslots, kept, dtype):
    """Accumulators: nthreads x nslots arrays of shape ``kept`` in one flat buffer.

    Returns the buffer, ``views[t][k]`` (slot k of thread t) and the (thread, slot)
    strides in bytes.  Flat, not an ndarray of shape (nthreads, nslots, *kept): that
    one has two axes more than the operand, too many for 63 or 64 axes.  With more
    than one thread each thread's set starts on its own cache line, a line apart
    from the last set's end (threads folding into one line: a float64 (87381, 3)
    sum over axis 0 took 200 us on two threads, 136 on one).
    """
    size = math.prod(kept)
    itemsize = np.dtype(dtype).itemsize
    per_thread = nslots * size
    if nthreads > 1:
        # items a whole number of lines long (any itemsize), the buffer on a line
        line = math.lcm(_CACHE_LINE, itemsize) // itemsize
        per_thread = -(-per_thread // line) * line + line
        buf = core.aligned_empty((nthreads * per_thread,), core.dtype_code(dtype))
    else:
        buf = np.empty(per_thread, dtype)
    views = [[buf[t * per_thread + k * size:t * per_thread + (k + 1) * size].reshape(kept)
              for k in range(nslots)] for t in range(nthreads)]
    return buf, views, (per_thread * itemsize, size * itemsize)


@functools.lru_cache(maxsize=256)
def _fold_layout(kind, axes, keepdims, whole, shape, dtype, across_rows):
    """What a fold of ``kind`` over ``axes`` of a ``shape``/``dtype`` child
    needs beyond the child itself (computed once per layout): accumulator
    dtype and start, kept shape and size, compensation, element count,
    result shape and dtype, and the accumulators' strides over the child's
    shape (0 along the reduced axes)."""
    acc_dtype, start = _accumulator(kind, dtype, across_rows)
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    compensated = kind in ("sum", "mean") and acc_dtype == _F64 and not across_rows
    strides = tuple(0 if i in axes else st
                    for i, st in enumerate(_c_strides(kept, acc_dtype)))
    return (acc_dtype, start, kept, math.prod(kept), compensated,
            math.prod([shape[a] for a in axes]), _out_shape(kind, shape, axes, keepdims, whole),
            _result_dtype(kind, dtype), strides)


# per thread: folds whose accumulators are reused by the next evaluation of
# the same layout (_Fold.taken)
_POOL = threading.local()


class _Fold:
    """A reduction's accumulators over one child: one set per thread (combined
    in thread order after); float64 sums keep a compensation term beside
    each."""

    def __init__(self, red, child, across_rows):
        self.red, self.child = red, child
        # across rows the values add in order, as NumPy's: no compensation
        (self.acc_dtype, self.start, self.kept, self.size, self.compensated, self.count,
         self.out_shape, self.out_dtype, self.strides) = _fold_layout(
            red.kind, red.axes, red.keepdims, red.whole, child.shape, child.dtype, across_rows)
        self.nthreads = 0

    @classmethod
    def taken(cls, red, child, across_rows):
        """A fold for an evaluation that copies its result out at once
        (Reduction.into): one this thread made for the same layout before,
        taken out of the pool until ``give_back`` (a user function evaluated
        inside the fold cannot reach it), or a new one."""
        pool = _POOL.__dict__.setdefault("folds", {})
        key = (red.kind, red.axes, red.keepdims, red.whole, child.shape, child.dtype,
               across_rows)
        fold = pool.pop(key, None)
        if fold is None:
            fold = cls(red, child, across_rows)
            fold.key = key
        fold.child = child
        return fold

    def give_back(self):
        pool = _POOL.folds
        if len(pool) >= 64:
            pool.clear()
        self.child = None  # (the operands' memory is not held)
        pool[self.key] = self

    def store(self, out):
        """A one-thread float64 sum or mean folded and stored into ``out`` by
        one compiled call (core.fold_store): True, or False with out
        untouched (then ``result``)."""
        if (self.acc_dtype != _F64 or self.red.kind not in ("sum", "mean") or not self.count
                or out.dtype != self.out_dtype or core.reduce_threads(self.child.size) != 1):
            return False
        if self.nthreads == 0:
            self._make_slots(1)
        return core.fold_store(out, self.accs, self.view, self.child, _FOLD[self.red.kind],
                               self.size, self.compensated,
                               self.count if self.red.kind == "mean" else 1)

    def _make_slots(self, nthreads):
        self.nthreads = nthreads
        self.accs, self.slots, (self.thread_stride, self.comp_stride) = _slots(
            nthreads, 1 + self.compensated, self.kept, self.acc_dtype)
        self.first = self.accs[:len(self.accs) // nthreads]
        # the accumulators seen with the child's shape
        self.view = np.ndarray(self.child.shape, self.acc_dtype, self.accs, 0, self.strides)

    def result(self):
        """Fold the child's current values; the result array (the result's
        shape and dtype)."""
        kind, child = self.red.kind, self.child
        nthreads = core.reduce_threads(child.size)
        if nthreads != self.nthreads:
            self._make_slots(nthreads)
        # the first thread's set: reduce_into copies it to the others it uses
        self.first.fill(self.start)
        nsets = 1
        if child.size:
            nsets = core.reduce_into(self.view, child, _FOLD[kind], nthreads,
                                     self.thread_stride,
                                     self.comp_stride if self.compensated else 0)
        slots = self.slots
        if self.compensated:
            core.add_compensations(self.accs, self.size, nsets,
                                    self.thread_stride // self.accs.itemsize)
        acc = slots[0][0]
        for t in range(1, nsets):
            acc = _COMBINE[kind](acc, slots[t][0])
        if kind == "mean":
            if self.count == 0:
                warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=3)
            with np.errstate(invalid="ignore", divide="ignore"):
                acc = acc / self.count if self.count else np.full(self.kept, np.nan)
        # an ndarray even when 0-d (ufuncs on 0-d arrays return NumPy scalars),
        # possibly a view of the accumulators the next fold writes again
        return np.asarray(acc, dtype=self.out_dtype).reshape(self.out_shape)


class Reduction(Special):
    """A reduction of ``kind`` over ``axes`` (sorted), folded block by block
    into accumulators: the tree below is read once, never materialized."""

    __slots__ = ("kind", "axes", "keepdims", "whole", "_numpy_axis", "_params",
                 "_leaf_reduce", "_leaf_dtype", "_leaf_arg", "_leaf_max", "_rows_first",
                 "_ways", "_leaf_call", "_may_split")

    def __init__(self, kind, axes, keepdims, whole):
        self.kind, self.axes, self.keepdims, self.whole = kind, axes, keepdims, whole
        # a leaf's reduction by NumPy's loop (into_leaves): what it is called
        # with, decided once.  (One axis as an int, as np.sum passes it: a
        # tuple costs the ufunc ~0.4 us more)
        self._numpy_axis = None if whole else axes[0] if len(axes) == 1 else axes
        arg = kind in ("argmax", "argmin")
        if arg and not axes:  # (a 0-d operand's axis 0: NumPy's argmax takes an int or None)
            self._numpy_axis = None
        self._params = (kind, axes, keepdims, whole)
        # the ufunc reduce np.sum/prod/max/min/all/any call, and its dtype
        # argument; ndarray's argmax or argmin method (np.argmax's wrapper
        # costs ~0.9 us); mean by _numpy_reduction
        self._leaf_reduce, self._leaf_dtype = _UFUNC_REDUCE.get(kind, (None, None))
        self._leaf_arg = getattr(np.ndarray, kind) if arg else None
        # the leaf's strides -> (way, NumPy's loop after it): _way_of's answer
        # for a layout (a kernel is _layout's, of one shape and dtype)
        self._ways = {}
        # the largest leaf NumPy reduces (argmax's pass pays from ARG_PASS_MIN)
        self._leaf_max = ARG_PASS_MIN - 1 if arg else SMALL_LEAF
        # a sum over axis 0 folds rows first (core.sum_rows_first)
        self._rows_first = kind == "sum" and axes == (0,)
        # whether a tree may fold its leading axes first (_lead_split): the
        # kind, and axes from 0 with more after (asked on every into(); the
        # whole test took ~1 us of a 64 x 64 tree's ~9)
        self._may_split = kind in ("sum", "max", "min") and len(axes) > 1 and axes[0] == 0
        # what core.reduce_leaves reads, in its order
        self._leaf_call = (self._ways, self._leaf_arg, kind == "argmax", self._numpy_axis,
                           keepdims, self._rows_first, self._leaf_reduce, self._leaf_dtype,
                           SHORT_FOLD_MIN)

    @property
    def name(self):
        return self.kind

    def params(self):
        return self._params

    # at the root over a leaf (the engine's into_directly; into() and value()
    # first; dst of the result's dtype): the leaf's reduction by a way of its
    # own (_run) or NumPy's own call straight into ``dst``, as _way_of decided
    # for its layout, without into()'s frame and checks; compiled (argmax of
    # (85, 3) into dst 2.2 -> 1.0 us as a Python method, NumPy's np.argmax 1.15)
    into_leaves = core.reduce_leaves

    def _numpy_into(self, dst, a):
        # NumPy's function where no ufunc's reduce is (reduce_leaves)
        _numpy_reduction(self.kind, a, None if self.whole else self.axes, self.keepdims, dst)

    def _way_of(self, a):
        """(way, NumPy's) for leaf array ``a``'s layout, kept by its strides
        (deciding was ~0.4-1 us a call, a tenth of a 64^2 max's).  NumPy's
        loop takes a small leaf (up to _leaf_max) and, per _numpy_kind, a
        larger one it reduces faster than the pass (on one thread past
        ONE_CALL_BYTES, but for short rows); ways of its own (_short_way) go
        first, from SHORT_FOLD_MIN elements."""
        if len(self._ways) >= 16:
            self._ways.clear()
        if a.size == 0:
            ways = (_NO_WAY, _NUMPY_NO)
        elif a.size <= self._leaf_max:
            ways = (self._short_way(a) if a.size >= SHORT_FOLD_MIN else _NO_WAY, _NUMPY_YES)
        else:
            way = self._short_way(a)
            numpy = _numpy_kind(self.kind, a, self.axes, self.whole)
            if numpy and way == _SQUEEZED:
                way = _NO_WAY  # (NumPy's loop drops the ones itself)
            ways = (way, _NUMPY_NO if not numpy else _NUMPY_YES if (
                a.nbytes <= ONE_CALL_BYTES or _short_inner(a)) else _NUMPY_ONE_THREAD)
        self._ways[a.strides] = ways
        return ways

    def _run(self, way, dst, a):
        """Leaf array ``a``'s reduction into ``dst`` by a way of its own, where
        NumPy's loop runs once per output element or per row: argmax and
        argmin over a short axis or across 16+ contiguous kept rows
        (core.arg_rows), the others over a short axis innermost in memory
        (_fold_slices), along contiguous rows (core.fold_short_rows), over
        the leading axes of short kept
        rows (_wide_rows, a C leaf or F's transpose), or without its axes of
        one element (_squeezed).  True, written; False, nothing written."""
        axes = self.axes
        if way == _ARG_ROWS:
            return core.arg_rows(np.squeeze(dst, axes[0]) if self.keepdims else dst,
                                 a, _FOLD[self.kind], axes[0])
        if way == _EACH_ROW:
            if len(axes) > 1:  # trailing axes of one run a row: as one axis (views)
                a = a.reshape(a.shape[:axes[0]] + (math.prod(a.shape[axes[0]:]),))
            return core.fold_short_rows(np.squeeze(dst, axes) if self.keepdims else dst,
                                        a, _FOLD[self.kind], axes[0])
        if way == _LEAD_TRAIL:
            return _lead_trail(self.kind, a, _lead_axes(axes, a.ndim),
                               np.squeeze(dst, axes) if self.keepdims else dst)
        if way == _SQUEEZED:
            self._squeezed(dst, a)
        elif way == _SLICES:
            _fold_slices(self.kind, a, axes[0],
                         np.squeeze(dst, axes[0]) if self.keepdims else dst)
        elif way == _WIDE:
            _wide_rows(self.kind, a, len(axes), dst)
        else:  # an F leaf as its C transpose
            _wide_rows(self.kind, a.T, len(axes), dst.T)
        return True

    def _short_way(self, a):
        # which of _run's ways a leaf of a's layout takes
        axes, nd, shape, strides = self.axes, a.ndim, a.shape, a.strides
        if len(axes) == nd:
            return _NO_WAY
        isz = a.itemsize
        if len(axes) == 1:
            axis = axes[0]
            k = shape[axis]
            if self._leaf_arg is not None:
                # (contiguous rows: ARG_SIMD_BYTES; float64 (4161, 63) along
                # axis 1 1.37x with arg_rows; kept rows contiguous: lanes of
                # them, any length)
                if abs(strides[axis]) != isz:
                    short = k < SHORT_INNER
                elif a.dtype == _BOOL:
                    short = strides[axis] == 1
                else:
                    short = k * isz < ARG_SIMD_BYTES
                inner = _inner_axis(a)
                if (short or (inner >= 0 and inner != axis and abs(strides[inner]) == isz
                              and a.size // k >= ARG_LANES_MIN)) and core.kept_run(a, axis):
                    return _ARG_ROWS
                return _NO_WAY
            # (across rows, large leaves: sums and products only, where the
            # pass folds row by row, F (87381, 3) float64 sum along axis 1
            # 1.11 -> 0.63x NumPy; its max and any lost 0.65 -> 0.96; one
            # element: a copy)
            if k < SHORT_AXIS and (
                    (abs(strides[axis]) == isz and k >= 2)
                    or (a.size > SMALL_LEAF
                        and (k == 1 or self.kind in ("sum", "mean", "prod")))):
                return _SLICES
            if strides[axis] == isz and k >= SHORT_AXIS and a.size > k \
                    and self._each_row(a.dtype, k, a.nbytes) and core.kept_run(a, axis):
                return _EACH_ROW
        elif self._leaf_arg is None and axes == tuple(range(nd - len(axes), nd)) \
                and a.strides[nd - len(axes):] == _c_strides(shape[nd - len(axes):], a.dtype):
            # trailing axes whose values are one contiguous run a row (C (n, 4, 4)
            # max over (1, 2): NumPy's loop 1.0x, the row fold of 16 0.1-0.3x)
            k = math.prod(shape[nd - len(axes):])
            if k >= SHORT_AXIS and a.size > k and self._each_row(a.dtype, k, a.nbytes) \
                    and core.kept_run(a.reshape(shape[:nd - len(axes)] + (k,)), nd - len(axes)):
                return _EACH_ROW
        if 1 in shape and a.size > self._leaf_max and not self.whole and nd > 1 \
                and self._leaf_arg is None:
            return _SQUEEZED
        if self._takes_lead_trail(a):
            return _LEAD_TRAIL
        # (_wide_rows' kinds: those whose values do not depend on the order)
        if not (self.kind in ("max", "min", "any", "all")
                or (self.kind in ("sum", "prod") and a.dtype.kind != "f")):
            return _NO_WAY
        # the kept rows innermost in memory: a C leaf's trailing axes, an F leaf's leading ones
        lead = len(axes)
        if strides[-1] == isz and nd - 1 not in axes:
            k, way = math.prod(shape[lead:]), _WIDE
            ok = axes == tuple(range(lead)) and a.flags.c_contiguous
        elif strides[0] == isz and 0 not in axes:
            k, way = math.prod(shape[:nd - lead]), _WIDE_T
            ok = axes == tuple(range(nd - lead, nd)) and a.flags.f_contiguous
        else:
            return _NO_WAY
        return way if ok and 2 <= k < SHORT_INNER and a.size // k >= WIDE_MIN_ROWS else _NO_WAY

    def _lead_split(self, child):
        """(kernel over the leading axes, how many) where a tree ``child`` (a
        leaf takes _lead_trail) reduced by a sum, max or min over leading axes
        and short trailing runs, axes between kept (relu's gradient summed over
        (0, 2, 3) for an NCHW bias), folds its leading axes into scratch of the
        rest's shape (the fold across rows, a pass), then NumPy reduces the
        trailing runs of that small array (_split_into, _split_bound): the
        pass's fold over (0, 2, 3) kept an accumulator a run of 16-64 (float32
        (256, 16, 8, 8): 336 -> 74 us).  None otherwise."""
        if not self._may_split or isinstance(child, _Tensor):
            return None
        shape, nd = child.shape, len(child.shape)
        lead = _lead_axes(self.axes, nd)
        if not lead or (self.kind == "sum" and child.dtype.kind != "f") \
                or math.prod(shape[nd - len(self.axes) + lead:]) > EACH_ROW_MIN:
            return None  # (int32 sums are int64's)
        return _layout(self.kind, shape, child._dt, tuple(range(lead)), False)[0], lead

    def _split_parts(self, child, lead, dst):
        # (scratch of the kept and trailing axes, dst without the reduced axes)
        return (np.empty(child.shape[lead:], _result_dtype(self.kind, child.dtype)),
                np.squeeze(dst, self.axes) if self.keepdims else dst)

    def _split_into(self, dst, child, kernel, lead):
        # the value into dst now (into, value)
        part, out = self._split_parts(child, lead, dst)
        kernel.into(part, (child,))
        _reduce_trailing(self.kind, part, out)

    def _split_bound(self, out, child, kernel, lead):
        # a function writing the value into out again (bind: the scratch and
        # the leading fold's binding made once)
        part, view = self._split_parts(child, lead, out)
        fill = kernel.bind(part, (child,))
        kind = self.kind

        def run():
            fill()
            _reduce_trailing(kind, part, view)
        return run

    def _takes_lead_trail(self, a):
        """Whether _lead_trail takes C-contiguous leaf ``a``: a sum, max or
        min over leading and trailing axes with axes between kept (one
        thread's sizes: the threads' pass takes larger ones), of a dtype
        core.fold_rows folds in the result's dtype."""
        if not (self._may_split and _lead_axes(self.axes, a.ndim) and a.flags.c_contiguous
                and a.nbytes <= ONE_CALL_BYTES):
            return False
        if self.kind == "sum":
            return a.dtype.kind == "f"
        return self.kind in ("max", "min") and a.dtype in (_F32, _F64, _I32, _I64)

    def _each_row(self, dtype, k, nbytes):
        """Whether rows of k contiguous values fold one by one
        (core.fold_short_rows) rather than by NumPy's loop or the pass
        (one thread: pyet_fold_each_row's vector of lanes a row; rows of
        16/64/512/4096 at 2^18 elements, kernel / NumPy: float64 max
        0.08/0.19/0.46/0.87 (the pass 0.54 from 64, 1.1-1.9 from 512 for
        float32), int32 max 0.25/0.29/0.46/0.79, int32 sum
        0.18/0.38/0.28/0.26, any/all 0.3-0.55 and, where the row is decided
        early, 0.05 from rows of 32 vectors (NumPy's bool loop stops too:
        bool any 0.42/0.36/0.35/0.45); past ONE_CALL_BYTES the threads'
        pass gets rows of 64 or more)."""
        if self.kind not in ("max", "min", "any", "all", "sum", "prod") or (
                self.kind in ("sum", "prod") and dtype.kind == "f"):  # (NumPy's pairwise order)
            return False
        return k < SHORT_INNER or nbytes <= ONE_CALL_BYTES

    def _squeezed(self, dst, a):
        """A large leaf with axes of one element (an (n, 1) column; not
        argmax/argmin, not whole: _short_way) reduced as the leaf without
        them into dst without them: its rows are not one element each then
        (max over axis 0 of (262144, 1) float64 folded 262144 rows of 1,
        37x NumPy's time)."""
        shape, axes = a.shape, self.axes
        keep = [i for i, n in enumerate(shape) if n != 1]
        # (dropping ones: views of a and dst; the engine checked dst apart from a)
        _reduce_into(self.kind, a.reshape([shape[i] for i in keep]),
                     tuple(j for j, i in enumerate(keep) if i in axes), np.squeeze(dst))

    def describe(self):
        return [f"axis={None if self.whole else self.axes}"] + (
            ["keepdims=True"] if self.keepdims else [])

    def into(self, dst, args):
        """At the root: one thread's sum, mean, prod, max or min folds straight
        into ``dst`` when it is the accumulator's dtype (no accumulator array,
        no copy); the rest is computed aside and copied."""
        child = args[0]
        if type(child) is not _Tensor:
            child = materialize(child)
        kind, axes = self.kind, self.axes
        if isinstance(child, _Tensor) and self.into_leaves(dst, (child._array,)):
            return  # NumPy's loop or a way of its own (_way_of)
        split = self._lead_split(child)
        if split is not None:
            self._split_into(dst, child, *split)
            return
        nthreads = core.reduce_threads(child.size)
        if kind in ("max", "min") and isinstance(child, core.Tensor) and (
                nthreads == 1 or child._array.nbytes <= ONE_CALL_BYTES) \
                and self._folded_without_pass(dst, child):
            return
        across_rows = self._across_rows(child)
        direct = self._fold_into(dst, child, across_rows)
        if direct is not None:
            # straight into dst, on several threads where they can share it
            # (each element of dst folded by one of them: reduce_into refuses
            # the others, which take accumulators per thread below); into an
            # array laid out as the leaf first where dst is not
            tmp = self._leaf_ordered(dst, child)
            target = dst
            if tmp is not None:
                direct, target = self._fold_into(tmp, child, across_rows), tmp
            view, start = direct
            target.fill(start)
            if core.reduce_into(view, child, _FOLD[kind], nthreads, 0, 0):
                if kind == "mean":
                    np.divide(target, math.prod([child.shape[a] for a in axes]), out=target)
                if tmp is not None:
                    np.copyto(dst, tmp)
                return
        if self.kind in ("argmax", "argmin"):
            np.copyto(dst, self._value(child, across_rows))
            return
        fold = _Fold.taken(self, child, across_rows)
        try:
            if not fold.store(dst):
                np.copyto(dst, fold.result())
        finally:
            fold.give_back()

    def _folded_without_pass(self, dst, child):
        """A leaf's max or min into ``dst`` on this thread without the pass:
        whole (core.fold_flat), over the leading axes of a C-contiguous leaf
        (core.fold_rows; float32 NumPy's loop: the row fold measured 1.2x its
        AVX-512 loop at 64^3 over axis 0, float64 0.78x), over its trailing
        axes in rows of EACH_ROW_MIN or more (core.fold_short_rows, the
        axes as one); an F-contiguous leaf as its C-contiguous transpose.
        False: not done."""
        kind, axes, array, nd = self.kind, self.axes, child._array, child.ndim
        if len(axes) == nd:
            return core.fold_flat(dst, array, _FOLD[kind])
        out = dst
        if array.flags.f_contiguous and not array.flags.c_contiguous:
            axes = tuple(sorted(nd - 1 - a for a in axes))
            array, out = array.T, dst.T
        if axes == tuple(range(len(axes))):
            if array.dtype == _F32:
                _numpy_reduction(kind, child._array, self.axes, self.keepdims, dst)
                return True
            return core.fold_rows(out, array, _FOLD[kind], len(axes))
        k = nd - len(axes)
        # (out C-contiguous: its reshape is a view)
        return (axes == tuple(range(k, nd)) and math.prod(array.shape[k:]) >= EACH_ROW_MIN
                and out.flags.c_contiguous and core.fold_short_rows(
                    out.reshape(array.shape[:k]),
                    array.reshape(array.shape[:k] + (math.prod(array.shape[k:]),)),
                    _FOLD[kind], k))

    def _leaf_ordered(self, dst, child):
        """An array of dst's shape and dtype laid out as the leaf ``child``
        (its kept axes in the order of the leaf's strides) when the pass,
        which walks the leaf's memory, would step through dst across its
        rows (an F-order leaf into a C-order dst); else None.  Folded into,
        then copied: F-order 64^3 int32 min over axis 2 into a C-order dst
        420 us, into an F-order one 45 us (NumPy 142 us)."""
        if not isinstance(child, core.Tensor) or dst.ndim < 2:
            return None
        array, axes = child._array, self.axes
        inner = _inner_axis(array)
        if inner < 0:
            return None
        if inner in axes:
            return None  # the rows fold whole, each into one element
        kept = [i for i in range(child.ndim) if self.keepdims or i not in axes]
        if abs(dst.strides[kept.index(inner)]) == dst.itemsize:
            return None  # dst steps with the leaf already
        order = sorted(range(len(kept)), key=lambda j: -abs(array.strides[kept[j]]))
        return np.empty([dst.shape[j] for j in order], dst.dtype).transpose(np.argsort(order))

    def _across_rows(self, child):
        # whether a sum's pass folds along kept rows (core.folds_across_rows)
        return self.kind in ("sum", "mean") and core.folds_across_rows(child, self.axes)

    def _fold_into(self, dst, child, across_rows):
        """(a view of ``dst`` over ``child``'s shape, the accumulator's start)
        when one thread's fold can run straight into ``dst``: a fold kind, dst
        of the accumulator's dtype, no compensated float64 sum; else None."""
        kind, axes = self.kind, self.axes
        if kind in ("argmax", "argmin") or not child.size:
            return None
        acc_dtype, start = _accumulator(kind, child.dtype, across_rows)
        if acc_dtype != dst.dtype or (kind in ("sum", "mean") and acc_dtype == _F64
                                      and not across_rows):
            return None
        # dst's strides on the kept axes, 0 on the reduced ones
        kept_strides = iter(dst.strides[i] for i in range(dst.ndim)
                            if not (self.keepdims and i in axes))
        strides = tuple(0 if i in axes else next(kept_strides) for i in range(child.ndim))
        if dst.flags.c_contiguous:  # (as_strided's own set-up costs microseconds)
            return np.ndarray(child.shape, dst.dtype, dst, 0, strides), start
        return np.lib.stride_tricks.as_strided(dst, child.shape, strides), start

    def scratch_agrees(self, child):
        """Whether this reduction of the tree ``child`` gives the same bits when
        it reads a C-ordered copy of the tree's values (a kept plan's scratch,
        which a small leaf's NumPy loop folds): float sums the tree's pass
        folds across rows on one thread, in the dtype, row after row, which is
        NumPy's order there (a bias gradient beside its weight gradient)."""
        if self.kind != "sum":
            return False
        sized = [i for i, d in enumerate(child.shape) if d > 1]
        return (child.dtype.kind == "f" and bool(sized) and sized[-1] not in self.axes
                and core.reduce_threads(child.size) == 1
                and core.folds_across_rows(child, self.axes))  # (the scratch's: C order)

    def value(self, args):
        child = materialize(args[0])
        split = self._lead_split(child)
        if split is not None:  # (as into() and bind() compute it: the same bits)
            out = np.empty(_out_shape(self.kind, child.shape, self.axes, self.keepdims,
                                      self.whole), _result_dtype(self.kind, child.dtype))
            self._split_into(out, child, *split)
            return out
        return self._value(child, self._across_rows(child))

    def _value(self, child, across_rows):
        if isinstance(child, _Tensor) and child.size:
            out = np.empty(_out_shape(self.kind, child.shape, self.axes, self.keepdims,
                                      self.whole), _result_dtype(self.kind, child.dtype))
            if self.into_leaves(out, (child._array,)):
                return out
        if self.kind in ("argmax", "argmin"):
            return _arg_value(self.kind, child, self.axes, self.keepdims, self.whole)
        return _Fold(self, child, across_rows).result()

    def bind(self, out, args):
        """A function writing the value into ``out`` again (a kept plan's
        replay): the accumulators and their views are made once."""
        child = materialize(args[0])
        kind, axes = self.kind, self.axes
        if isinstance(child, _Tensor) and child.size:
            way = self._way_of(child._array)[0]
            # (the others may refuse out)
            if way in (_SLICES, _WIDE, _WIDE_T, _SQUEEZED, _LEAD_TRAIL):
                return functools.partial(self._run, way, out, child._array)
        split = self._lead_split(child)
        if split is not None:
            return self._split_bound(out, child, *split)
        small = _small_leaf(kind, child)
        if small and self._rows_first and core.sum_rows_first(out, child._array):
            # (out written: the replay writes it again)
            return functools.partial(core.fold_rows, out, child._array, _FOLD["sum"], 1)
        if small and self._leaf_reduce is not None:
            # what np.sum/prod/max/min/all/any(..., out=out) call, without their wrapper
            return functools.partial(self._leaf_reduce, child._array, self._numpy_axis,
                                     self._leaf_dtype, out, self.keepdims)
        if small and kind == "mean":
            return functools.partial(_mean_into, child._array, None if self.whole else axes,
                                     self.keepdims, out,
                                     math.prod([child.shape[a] for a in axes]))
        if small or kind in ("argmax", "argmin") or (isinstance(child, _Tensor) and _numpy_kind(
                kind, child._array, axes, self.whole)):
            return lambda: self.into(out, (child,))  # (NumPy's or not: into decides each time)
        across_rows = self._across_rows(child)
        fold = _Fold(self, child, across_rows)

        def folded():
            if not fold.store(out):
                np.copyto(out, fold.result())

        direct = self._fold_into(out, child, across_rows) if kind != "mean" else None
        if direct is None:
            return folded
        # into()'s one-thread fold straight into out, its view made once
        view, start = direct
        size, code, reduce_into, threads = child.size, _FOLD[kind], core.reduce_into, \
            core.reduce_threads

        def direct():
            out.fill(start)
            if not reduce_into(view, child, code, threads(size), 0, 0):
                folded()  # threads that cannot share out: accumulators per thread

        return direct

    def vjp(self, node, g):
        """Reverse mode: the gradient with respect to the operand, lazily (sum and
        mean spread ``g`` back; prod is exact with zeros; tied maxima and minima
        share the gradient equally, as PyTorch's amax/amin)."""
        from pyet._nodes.views import broadcast_to, reshape

        (x,) = node._args
        kind, axes = self.kind, self.axes
        if kind not in ("sum", "mean", "prod", "max", "min"):
            return (None,)  # integer and bool results
        kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        gk = reshape(g, kept)
        if kind == "sum":
            return (broadcast_to(gk, x.shape),)
        if kind == "mean":
            count = math.prod([x.shape[a] for a in axes])
            return (broadcast_to(gk / count, x.shape),)
        if kind == "prod":
            # the product of the others: out/x fails at zeros, so count them
            zero = x == 0
            nzeros = reduction("sum", zero, axes, keepdims=True)
            others = reduction("prod", core.where(zero, 1, x), axes, keepdims=True)
            return (gk * core.where(zero, core.where(nzeros == 1, others, 0),
                                    core.where(nzeros == 0, others / x, 0)),)
        hit = (x == reshape(node, kept)).astype(x.dtype)
        return (gk * hit / reduction("sum", hit, axes, keepdims=True),)


def _result_dtype(kind, dtype):
    """NumPy 2's result dtypes: sums of bools and small ints are int64, means
    of integers float64, arg* int64, all/any bool."""
    if kind in ("sum", "prod"):
        return _I64 if dtype.kind in "biu" else dtype
    if kind == "mean":
        return _F64 if dtype.kind in "biu" else dtype
    if kind in ("argmax", "argmin"):
        return _I64
    if kind in ("all", "any"):
        return _BOOL
    return dtype


def _out_shape(kind, shape, axes, keepdims, whole):
    if kind in ("argmax", "argmin") and whole:
        return (1,) * len(shape) if keepdims else ()
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


_NUMPY_NAMES = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum"}


def reduction(kind, e, axis=None, keepdims=False):
    """A lazy reduction node (MShadow's kComplex) of ``kind`` over ``axis``."""
    return _REDUCERS[kind](e, axis, keepdims)


_special = core.special  # (node() without its tuple() conversions)


@functools.lru_cache(maxsize=1024)
def _layout(kind, xshape, xdt, axis, keepdims):
    """(kernel, result shape, result dtype) of a reduction over ``axis`` of an
    operand of that shape and dtype (code ``xdt``: an int hashes faster than a
    dtype); errors raised as NumPy's.  Cached: the axes' normalization was most
    of the node's ~3 us."""
    xdtype = core.DTYPES[xdt]
    nd = len(xshape)
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
            axes = tuple(core.axis_index(a, nd) for a in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"duplicate value in 'axis': {axis!r}")
    axes = tuple(sorted(axes))
    if kind in ("max", "min", "argmax", "argmin"):
        empty = 0 in [xshape[a] for a in axes]  # (this module's any() is pyet's)
        if empty or (axis is None and nd and 0 in xshape):
            if kind.startswith("arg"):
                raise ValueError(f"attempt to get {kind} of an empty sequence")
            raise ValueError(f"zero-size array to reduction operation {_NUMPY_NAMES[kind]} "
                             "which has no identity")
    shape = _out_shape(kind, xshape, axes, keepdims, axis is None)
    return Reduction(kind, axes, keepdims, axis is None), shape, _result_dtype(kind, xdtype)


def _arg_value(kind, child, axes, keepdims, whole):
    """argmax/argmin in one fused pass, no full-size temporary: each value is
    folded with its index along the reduced axis.  NumPy's own argmax where it
    reads the memory in place (a leaf contiguous along the reduced axis, which
    NumPy moves last), and for 0-d and empty operands."""
    nd = child.ndim
    if nd == 0 or child.size == 0 or (isinstance(child, core.Tensor) and (
            child._array if whole else np.moveaxis(child._array, axes[0], -1)
    ).flags.c_contiguous):
        axis = None if whole or not axes else axes[0]
        return np.asarray(getattr(np, kind)(np.asarray(child), axis=axis, keepdims=keepdims))
    # all axes: fold along the last axis (the fast lanes) or, when it is
    # short, the longest; then pick among the few candidates left
    k = nd - 1 if child.shape[-1] >= 64 else int(np.argmax(child.shape))
    k = k if whole else axes[0]
    best, index = _arg_fold(kind, child, k)
    if not whole:
        return np.expand_dims(index, k) if keepdims else index
    shape = child.shape
    flat = index * math.prod(shape[k + 1:])
    for d in range(nd):  # the C-order flat index of each candidate
        if d != k:
            ramp = np.arange(shape[d], dtype=np.int64) * math.prod(shape[d + 1:])
            flat = flat + ramp.reshape([shape[d] if i == d else 1 for i in range(nd) if i != k])
    with np.errstate(invalid="ignore"):
        extreme = best.max() if kind == "argmax" else best.min()  # NaN propagates
    hits = np.isnan(best) if extreme != extreme else best == extreme
    first = flat[hits].min()
    return np.full((1,) * nd, first) if keepdims else np.asarray(first)


def _arg_fold(kind, child, k):
    """(extreme values, their first indices) along axis k of child."""
    dtype = child.dtype
    kept = tuple(1 if i == k else d for i, d in enumerate(child.shape))
    nthreads = core.reduce_threads(child.size)
    # per thread, two 8-byte slots per accumulator: the value, its int64 index
    raw, slots, (thread_stride, index_stride) = _slots(nthreads, 2, kept, np.int64)
    # the first thread's set: reduce_into copies it to the others it uses
    slots[0][1].fill(np.iinfo(np.int64).max)
    kept_strides = _c_strides(kept, np.int64)
    vals = [np.ndarray(kept, dtype, slot[0], 0, kept_strides) for slot in slots]
    vals[0].fill(_accumulator(kind[3:], dtype)[1])
    view = np.ndarray(child.shape, dtype, raw, 0,
                      tuple(0 if i == k else s for i, s in enumerate(kept_strides)))
    n = child.shape[k]
    index = np.arange(n, dtype=np.int64).reshape([n if i == k else 1 for i in range(child.ndim)])
    nsets = core.reduce_into(view, child, _FOLD[kind], nthreads, thread_stride, index_stride,
                             index)
    best, first = vals[0], slots[0][1]
    for t in range(1, nsets):  # the fold's order: extreme, then NaN, then least index
        v, j = vals[t], slots[t][1]
        with np.errstate(invalid="ignore"):
            wins = (v > best) if kind == "argmax" else (v < best)
            wins |= (v != v) & (best == best)
            wins |= ((v == best) | ((v != v) & (best != best))) & (j < first)
        best, first = np.where(wins, v, best), np.where(wins, j, first)
    out_shape = child.shape[:k] + child.shape[k + 1:]
    return np.asarray(best).reshape(out_shape), np.asarray(first).reshape(out_shape)


def _make(kind):
    # the node's whole build in one frame (the public functions' call: a
    # frame more through reduction() was ~0.05 us of a tiny argmax's ~1.3)
    def reduce(e, axis=None, keepdims=False):
        x = e if type(e) is _Tensor else core.as_expr(e)
        if type(x) is _Scalar:
            x = core.tensor(np.asarray(x._value, dtype=x.dtype))
        # cached for plain int axes only (a cache key would take True for 1,
        # and a list is unhashable); (this module's all() is pyet's)
        layout = (_layout if axis is None or type(axis) is int or (
            type(axis) is tuple and not [a for a in axis if type(a) is not int])
            else _layout.__wrapped__)
        kernel, shape, dtype = layout(kind, x.shape, x._dt, axis,
                                      keepdims if keepdims is False else bool(keepdims))
        return _special(kernel, (x,), shape, dtype)

    reduce.__name__ = reduce.__qualname__ = kind
    reduce.__doc__ = (f"Lazy ``{kind}`` over ``axis`` (None: all axes), as NumPy's "
                      f"``np.{kind}``; usable anywhere inside a tree.")
    _REDUCERS[kind] = reduce
    return reduce


_REDUCERS = {}  # kind -> its public function (_make), which reduction() calls


sum = _make("sum")  # noqa: A001  (NumPy's names)
mean = _make("mean")
prod = _make("prod")
max = _make("max")  # noqa: A001
min = _make("min")  # noqa: A001
argmax = _make("argmax")
argmin = _make("argmin")
all = _make("all")  # noqa: A001
any = _make("any")  # noqa: A001


def sum_rows(e):
    """Sum over every axis but the last (MShadow's ``sum_rows``)."""
    nd = e.ndim if isinstance(e, core.Expr) else np.ndim(e)
    return reduction("sum", e, tuple(range(nd - 1)))


def reduce_except_dim(e, dim, op="sum"):
    """Reduce every axis but ``dim`` with ``op`` (MShadow's ``reduce_except_dim``)."""
    ops = sorted(k for k in _FOLD if not k.startswith("arg"))
    if op not in ops:
        raise ValueError(f"reduce_except_dim: unknown op {op!r}; one of {ops}")
    nd = e.ndim if isinstance(e, core.Expr) else np.ndim(e)
    if not -nd <= dim < nd:
        raise np.exceptions.AxisError(dim, nd)
    return reduction(op, e, tuple(a for a in range(nd) if a != dim % nd))


def sumall_except_dim(e, dim):
    """Sum over every axis but ``dim`` (MShadow's ``sumall_except_dim``)."""
    return reduce_except_dim(e, dim, "sum")


__all__ = ["all", "any", "argmax", "argmin", "max", "mean", "min", "prod", "reduce_except_dim",
           "sum", "sum_rows", "sumall_except_dim"]
