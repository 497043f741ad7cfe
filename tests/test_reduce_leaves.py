"""A reduction over a leaf at the root runs compiled (core.reduce_leaves,
Reduction's into_leaves): NumPy's argmax/argmin by their C calls for an int
axis and by the method for keepdims or the whole array, NumPy's ufunc reduce,
mean through NumPy's function, a small float sum over axis 0 folded rows
first, the ways of its own kept by the leaf's strides.  Each against NumPy,
into destinations with sentinels around them, on C, Fortran, strided and
reversed leaves."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet
from pyet._core import core
from pyet._nodes.reductions import SHORT_FOLD_MIN, Reduction

KINDS = ("sum", "mean", "prod", "max", "min", "all", "any", "argmax", "argmin")
SENTINEL = 0x5A


def _leaf(rng, shape, dtype, layout):
    if np.dtype(dtype).kind == "b":
        base = rng.random(shape) < 0.5
    elif np.dtype(dtype).kind == "f":
        base = rng.uniform(-2, 2, shape).astype(dtype)
    else:
        base = rng.integers(-9, 9, shape).astype(dtype)
    if layout == "C":
        return base
    if layout == "F":
        return np.asfortranarray(base)
    if layout == "strided":
        wide = np.zeros(shape[:-1] + (2 * shape[-1],), dtype)
        wide[..., ::2] = base
        return wide[..., ::2]
    return base[::-1, ::-1].copy()[::-1, ::-1]  # reversed steps, the same values


def _guarded(shape, dtype):
    # a destination inside sentinel bytes; (dst, raw buffer, dst's byte range)
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.full(nbytes + 64, SENTINEL, np.uint8)
    dst = raw[32:32 + nbytes].view(dtype).reshape(shape)
    return dst, raw


def _outside_untouched(raw, nbytes):
    return (raw[:32] == SENTINEL).all() and (raw[32 + nbytes:] == SENTINEL).all()


def _check(kind, a, axis, keepdims):
    with np.errstate(all="ignore"):
        want = np.asarray(getattr(np, kind)(a, axis=axis, keepdims=keepdims))
    dst, raw = _guarded(want.shape, want.dtype)
    with np.errstate(all="ignore"):
        pyet.asarray(dst)[...] = getattr(pyet, kind)(pyet.asarray(a), axis=axis,
                                                     keepdims=keepdims)
    assert _outside_untouched(raw, want.nbytes), (kind, axis, keepdims)
    if kind in ("sum", "mean", "prod") and want.dtype.kind == "f":
        np.testing.assert_allclose(dst, want, rtol=1e-5 if a.dtype == np.float32 else 1e-12,
                                   err_msg=f"{kind} {axis} {keepdims}")
    else:
        np.testing.assert_array_equal(dst, want, err_msg=f"{kind} {axis} {keepdims}")
    # evaluate() writes new memory through the same entry
    with np.errstate(all="ignore"):
        got = np.asarray(pyet.evaluate(getattr(pyet, kind)(pyet.asarray(a), axis=axis,
                                                           keepdims=keepdims)))
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, equal_nan=True)


def test_the_entry_is_compiled():
    assert Reduction.into_leaves is core.reduce_leaves
    node = pyet.argmax(pyet.asarray(np.zeros((3, 4))), axis=0)
    assert node._kernel._leaf_call[0] is node._kernel._ways  # (one dict: _way_of fills it)


@pytest.mark.parametrize("layout", ["C", "F", "strided", "reversed"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
@pytest.mark.parametrize("kind", KINDS)
def test_small_and_mid_leaves_against_numpy(kind, dtype, layout):
    rng = np.random.default_rng(len(kind) * 7 + np.dtype(dtype).itemsize)
    # below SHORT_FOLD_MIN (NumPy's call without a lookup) and above it (the
    # ways kept by strides)
    for shape in ((5, 7), (SHORT_FOLD_MIN // 3 + 1, 3)):
        a = _leaf(rng, shape, dtype, layout)
        for axis in (0, 1, None, (0, 1)):
            if kind in ("argmax", "argmin") and type(axis) is tuple:
                continue
            for keepdims in (False, True):
                _check(kind, a, axis, keepdims)


def test_argmax_and_argmin_by_the_c_call_equal_the_method():
    # ties and NaN: NumPy's first index either way
    a = np.array([[1.0, np.nan, 3.0, 3.0], [3.0, 3.0, np.nan, 0.0], [3.0, 0.0, 3.0, -1.0]])
    for kind in ("argmax", "argmin"):
        for axis in (0, 1):
            want = getattr(a, kind)(axis=axis)
            dst = np.full(want.shape, -7, np.intp)
            assert getattr(pyet, kind)(pyet.asarray(a), axis=axis)._kernel.into_leaves(
                dst, (a,)) is True
            np.testing.assert_array_equal(dst, want)
            kd = np.full(getattr(a, kind)(axis=axis, keepdims=True).shape, -7, np.intp)
            assert getattr(pyet, kind)(pyet.asarray(a), axis=axis,
                                       keepdims=True)._kernel.into_leaves(kd, (a,))
            np.testing.assert_array_equal(kd, getattr(a, kind)(axis=axis, keepdims=True))


def test_fortran_bool_argmax_over_a_short_axis():
    # the grid's case: the first True of each column (NumPy stops there)
    rng = np.random.default_rng(3)
    for dtype in (np.bool_, np.int32):
        a = np.asfortranarray(_leaf(rng, (10922, 3), dtype, "C"))
        a[:, 2] = 0  # a column without a True: index 0
        out = np.full(3, -1, np.intp)
        pyet.asarray(out)[...] = pyet.argmax(pyet.asarray(a), axis=0)
        np.testing.assert_array_equal(out, np.argmax(a, axis=0))


def test_small_float_sum_over_axis_0_has_numpys_bits():
    # core.sum_rows_first folds rows in NumPy's order there: its bits
    rng = np.random.default_rng(4)
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal((256, 128)).astype(dtype)
        out = np.empty(128, dtype)
        pyet.asarray(out)[...] = pyet.sum(pyet.asarray(a), axis=0)
        assert out.tobytes() == np.add.reduce(a, 0).tobytes()
        # a column (rows of one element) is NumPy's reduce, not the row fold
        col = a[:, :1].copy()
        out1 = np.empty(1, dtype)
        assert core.sum_rows_first(out1, col) is False
        pyet.asarray(out1)[...] = pyet.sum(pyet.asarray(col), axis=0)
        assert out1.tobytes() == np.add.reduce(col, 0).tobytes()


def test_one_node_over_leaves_of_several_layouts():
    # the ways are kept by the leaf's strides: one kernel, each layout its own answer
    rng = np.random.default_rng(5)
    base = rng.uniform(-1, 1, (6000, 4))
    node_kernel = None
    for layout in ("C", "F", "strided", "reversed", "C"):
        a = _leaf(rng, base.shape, np.float64, layout)
        n = pyet.max(pyet.asarray(a), axis=0)
        node_kernel = node_kernel or n._kernel
        assert n._kernel is node_kernel  # (_layout's cache: one kernel per shape and dtype)
        out = np.full(4, np.nan)
        pyet.asarray(out)[...] = n
        np.testing.assert_array_equal(out, a.max(axis=0))
    assert len(node_kernel._ways) >= 2


def test_refused_leaves_leave_dst_untouched():
    # a leaf the pass takes (argmax over kept strided rows, a large float max)
    big = np.zeros((1024, 128))[:, ::2]
    d = np.full(64, -1, np.intp)
    assert core.reduce_leaves(pyet.argmax(pyet.asarray(big), axis=0)._kernel, d, (big,)) \
        is False
    assert (d == -1).all()


def test_errors():
    a = np.zeros((4, 5))
    kernel = pyet.sum(pyet.asarray(a), axis=0)._kernel
    with pytest.raises(TypeError):
        core.reduce_leaves(kernel, np.zeros(5), ([1, 2],))  # not an array
    with pytest.raises(TypeError):
        core.reduce_leaves(kernel, np.zeros(5), [a])  # not a tuple
    # a destination of the wrong shape: NumPy's own error, nothing written
    d = np.full(4, 3.0)
    with pytest.raises(ValueError):
        core.reduce_leaves(kernel, d, (a,))
    assert (d == 3.0).all()
    # through the public path: the assignment's checks come first
    with pytest.raises(ValueError, match="shape"):
        pyet.asarray(np.zeros(4))[...] = pyet.sum(pyet.asarray(a), axis=0)


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 300), cols=st.integers(1, 9), kind=st.sampled_from(KINDS),
       axis=st.sampled_from([0, 1, None]), keepdims=st.booleans(),
       layout=st.sampled_from(["C", "F", "strided", "reversed"]),
       dtype=st.sampled_from([np.float64, np.int64, np.bool_]))
def test_random_shapes(rows, cols, kind, axis, keepdims, layout, dtype):
    a = _leaf(np.random.default_rng(rows * 31 + cols), (rows, cols), dtype, layout)
    _check(kind, a, axis, keepdims)
