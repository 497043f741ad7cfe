"""Reductions of a leaf over one short axis (reductions._fold_slices: a fused
pass of its slices) and over the leading axes of short kept rows
(reductions._wide_rows: the rows viewed wide), where NumPy's loop runs once
per output element or per row.  NumPy's values, dtypes and bits (its order
of a short sum), NaN, inf and integer wrap-around, every layout, keepdims,
sentinels around the destination, through every path (into a destination,
evaluate, a kept plan's replays), on one and two threads."""

import numpy as np
import pytest

import pyet
from pyet._nodes import reductions

KINDS = ["sum", "mean", "prod", "max", "min", "any", "all"]
ORDER_FREE = ["max", "min", "any", "all"]


def values(rng, shape, dtype):
    if dtype is np.bool_:
        return rng.random(shape) < 0.7
    if np.dtype(dtype).kind == "i":
        x = rng.integers(-4, 5, shape).astype(dtype)
        info = np.iinfo(dtype)
        x.flat[3::17] = info.max  # sums and products wrap as NumPy's
        x.flat[5::19] = info.min
        x.flat[::23] = 0
        return x
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    x.flat[::29] = np.nan
    x.flat[7::31] = -np.inf
    x.flat[11::37] = -0.0
    x.flat[13::41] = 0.0
    return x


def check_into(kind, x, axis, keepdims=False):
    """pyet's reduction into a sentinel-framed destination, evaluated, and
    replayed by a kept plan: each NumPy's value and dtype exactly."""
    want = np.asarray(getattr(np, kind)(x, axis=axis, keepdims=keepdims))
    X = pyet.asarray(x)
    size = want.dtype.itemsize
    raw = np.full((want.size + 2) * size, 0xAB, np.uint8)  # sentinel bytes around dst
    dst = raw.view(want.dtype)[1:-1].reshape(want.shape)
    pyet.asarray(dst)[...] = getattr(pyet, kind)(X, axis=axis, keepdims=keepdims)
    np.testing.assert_array_equal(dst, want, err_msg=f"{kind} axis={axis} {x.shape}")
    assert (raw[:size] == 0xAB).all() and (raw[-size:] == 0xAB).all()
    got = np.asarray(pyet.evaluate(getattr(pyet, kind)(X, axis=axis, keepdims=keepdims)))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    plan = pyet.EvalPlan()
    h = plan.register(getattr(pyet, kind)(X, axis=axis, keepdims=keepdims) * 1)
    for _ in range(2):
        plan.run(keep=True)
        np.testing.assert_array_equal(h.value.numpy(), want * 1)


def layouts(base):
    """(array, axis) pairs reducing base's short last axis on several layouts."""
    k = base.shape[-1]
    yield base, 1  # C: the innermost axis in memory
    yield np.asfortranarray(base), 1  # F: slices contiguous
    yield np.ascontiguousarray(base.T), 0  # its first axis short
    yield base[::-1, ::-1], 1  # reversed
    big = np.zeros((base.shape[0], 2 * k), base.dtype)
    big[:, ::2] = base
    yield big[:, ::2], 1  # steps of 2
    if base.shape[0] % 30 == 0:
        yield base.reshape(-1, 30, k), 2  # 3-D, the last axis
        yield np.ascontiguousarray(base.reshape(-1, 30, k).transpose(0, 2, 1)), 1  # a middle one


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("k", [2, 3, 7])
def test_short_axis_folds_as_numpy(dtype, k):
    rng = np.random.default_rng(k)
    base = values(rng, (6000, k), dtype)
    assert base.size >= reductions.SHORT_FOLD_MIN
    for x, axis in layouts(base):
        for kind in KINDS:
            if dtype is np.bool_ and kind in ("max", "min", "prod", "mean"):
                continue
            with np.errstate(all="ignore"):
                check_into(kind, x, axis)
    with np.errstate(all="ignore"):
        check_into("sum", base, 1, keepdims=True)
        check_into("max", np.ascontiguousarray(base.T), 0, keepdims=True)


def test_short_axis_fold_is_numpys_order():
    # a float sum of up to 7 is NumPy's left-to-right sum: its bits, not
    # just close (a pairwise or compensated sum would round differently)
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64):
        scale = 10.0 ** rng.integers(-8, 8, (20000, 7))
        x = (rng.standard_normal((20000, 7)) * scale).astype(dtype)
        want = np.add.reduce(x, 1)
        got = np.asarray(pyet.evaluate(pyet.sum(pyet.asarray(x), axis=1)))
        assert np.array_equal(got, want)
        assert not np.array_equal(got, np.add.reduce(x.astype(np.float64), 1).astype(dtype)) \
            or dtype is np.float64
        np.testing.assert_array_equal(pyet.evaluate(pyet.mean(pyet.asarray(x), axis=1)),
                                      np.mean(x, 1))
        # a large Fortran leaf: its columns (contiguous) added in turn, as NumPy's
        f = np.asfortranarray(np.concatenate([x] * 4))
        assert f.size > reductions.SMALL_LEAF
        for kind in ("sum", "mean", "prod"):
            with np.errstate(all="ignore"):
                got = np.asarray(pyet.evaluate(getattr(pyet, kind)(pyet.asarray(f), axis=1)))
                assert np.array_equal(got, getattr(np, kind)(f, 1), equal_nan=True), kind


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64, np.bool_])
def test_wide_rows_as_numpy(dtype, threads):
    rng = np.random.default_rng(9)
    pyet.set_num_threads(threads)
    try:
        for rows, k in [(40000, 3), (3001, 17), (20000, 2), (4001, 63), (90001, 1), (2047, 3)]:
            x = values(rng, (rows, k), dtype)
            kinds = ORDER_FREE + (["sum", "prod"] if dtype is not np.float64 else [])
            for kind in kinds:
                with np.errstate(all="ignore"):
                    check_into(kind, x, 0)
                    check_into(kind, np.asfortranarray(x.T), 1)  # F: its transpose
                    check_into(kind, x, 0, keepdims=True)
        x = values(rng, (500, 40, 3), dtype)  # several leading axes, rows of 3
        for kind in ("max", "any"):
            check_into(kind, x, (0, 1))
            check_into(kind, x, 0)  # kept rows of 120: the general path
    finally:
        pyet.set_num_threads(1)


def takes(kind, a, axis):
    # whether the reduction's kernel (made for a's shape and dtype, as
    # _layout makes it) takes a short way for a
    kernel = getattr(pyet, kind)(pyet.asarray(a), axis=axis)._kernel
    return kernel._way_of(a)[0]  # (_NO_WAY is 0)


def test_which_leaves_take_the_short_paths():
    assert takes("max", np.zeros((3000, 3)), 1)  # a short innermost axis
    # rows of 8 or more: folded one by one (NumPy's order does not matter to max)
    assert takes("max", np.zeros((3000, 8)), 1) == reductions._EACH_ROW
    assert not takes("sum", np.zeros((3000, 8)), 1)  # float sums: NumPy's pairwise order
    # not innermost in memory: NumPy folds the rows elementwise, fast
    assert not takes("max", np.asfortranarray(np.zeros((3000, 3))), 1)
    rows = reductions.WIDE_MIN_ROWS
    assert takes("max", np.zeros((rows, 3)), 0)
    assert not takes("max", np.zeros((rows - 1, 3)), 0)  # too few rows
    assert not takes("max", np.zeros((rows, 6))[:, ::2], 0)  # not contiguous
    assert not takes("max", np.zeros((4 * rows, 1)), 0)  # a column: NumPy's fast
    assert not takes("max", np.zeros((rows, 64)), 0)  # rows of 64
    assert takes("max", np.asfortranarray(np.zeros((3, rows))), 1)  # F: its transpose
    assert not takes("sum", np.zeros((rows, 3)), 0)  # float sums: the pass's
    assert takes("sum", np.zeros((rows, 3), np.int32), 0)
    assert takes("argmax", np.zeros((3000, 3)), 1) == reductions._ARG_ROWS
    # the way is kept per layout: a kernel asked of another layout answers for it
    a = np.zeros((3000, 3))
    kernel = pyet.max(pyet.asarray(a), axis=1)._kernel
    assert kernel._way_of(a)[0]
    assert not kernel._way_of(np.asfortranarray(a))[0]
    assert len(kernel._ways) == 2


def test_small_and_overlapping_leaves():
    # under SHORT_FOLD_MIN: NumPy's loop (the same values); a destination
    # inside the leaf: computed aside by the engine first
    x = values(np.random.default_rng(2), (100, 3), np.float64)
    for kind in KINDS:
        check_into(kind, x, 1)
    buf = np.arange(30000.0).reshape(10000, 3)
    want = buf.max(axis=1)
    pyet.asarray(buf[:, 0])[...] = pyet.max(pyet.asarray(buf), axis=1)
    np.testing.assert_array_equal(buf[:, 0], want)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("k", [2, 3, 17, 63])
def test_argmax_of_short_axes(k, dtype, threads):
    # core.arg_rows: the first extreme, the first NaN, every layout (rows of
    # 16 in lanes and the rows left over), ties everywhere
    rng = np.random.default_rng(k)
    pyet.set_num_threads(threads)
    try:
        base = values(rng, (30 * (1334 // k) + 30 * (k == 2), k), dtype)
        if dtype is not np.bool_:
            base = np.where(rng.random(base.shape) < 0.5, base, base.flat[0]).astype(dtype)
        for x, axis in layouts(base):
            for kind in ("argmax", "argmin"):
                check_into(kind, x, axis)
                check_into(kind, x, axis, keepdims=True)
    finally:
        pyet.set_num_threads(1)


def test_arg_rows_refusals():
    from pyet._core import core
    x = np.arange(60.0).reshape(20, 3)
    assert core.arg_rows(np.empty(20, np.int64), x, reductions._FOLD["argmax"], 1)
    raw = np.zeros(20 * 8 + 1, np.uint8)
    misaligned = raw[1:].view(np.int64)
    assert not core.arg_rows(misaligned, x, reductions._FOLD["argmax"], 1)
    assert not core.arg_rows(np.empty(20, np.int32), x, reductions._FOLD["argmax"], 1)
    assert not core.arg_rows(np.empty(20, np.int64), x, reductions._FOLD["max"], 1)
    ro = np.empty(20, np.int64)
    ro.flags.writeable = False
    assert not core.arg_rows(ro, x, reductions._FOLD["argmax"], 1)
    # kept axes that do not merge into one run of rows, in src or in dst
    y = np.zeros((4, 5, 3))[:, ::2]
    assert not core.arg_rows(np.empty((4, 3), np.int64), y, reductions._FOLD["argmax"], 2)
    z = np.zeros((4, 5, 3))
    assert not core.arg_rows(np.empty((5, 4), np.int64).T, z, reductions._FOLD["argmax"], 2)
    assert core.arg_rows(np.empty((4, 5), np.int64), z, reductions._FOLD["argmax"], 2)
    # dst inside src's memory
    buf = np.zeros(60)
    assert not core.arg_rows(buf[:20].view(np.int64), buf.reshape(20, 3),
                             reductions._FOLD["argmax"], 1)
    d = np.full(20, -5, np.int64)
    assert not core.arg_rows(d, x, reductions._FOLD["argmax"], 5)
    assert (d == -5).all()


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_axes_of_one_element(dtype):
    # (n, 1) columns and other ones-axes reduce as the leaf without them
    # (Reduction._squeezed), or over the axis of one (a copy, argmax zeros)
    rng = np.random.default_rng(4)
    for shape in [(20000, 1), (1, 20000), (5000, 1, 3), (1, 3000, 1, 2), (70001, 1)]:
        x = values(rng, shape, dtype)
        for kind in KINDS + ["argmax", "argmin"]:
            if dtype is np.bool_ and kind in ("max", "min", "prod", "mean"):
                continue
            axes = range(len(shape)) if kind.startswith("arg") else \
                list(range(len(shape))) + [(0, len(shape) - 1)]
            for axis in axes:
                with np.errstate(all="ignore"):
                    check_into(kind, x, axis)
                    check_into(kind, np.asfortranarray(x), axis, keepdims=True)
    big = reductions.SMALL_LEAF + 1
    assert takes("max", np.zeros((big, 1)), 0)  # dropped past the small-leaf size
    assert not takes("max", np.zeros((big - 1, 1)), 0)  # NumPy's call below it
    assert not takes("max", np.zeros((big, 1)), None)  # whole
    assert not takes("argmax", np.zeros((big, 1)), 0)  # NumPy's or arg_rows'
    assert takes("sum", np.zeros((1, big, 1)), (0, 1))
    # every reduced axis of one element: the leaf itself, reduced over no axis
    x = values(np.random.default_rng(6), (70001, 1, 1), np.int32)
    for kind in ("sum", "max", "any", "mean", "prod"):
        with np.errstate(all="ignore"):
            check_into(kind, x, (1, 2))


def test_short_folds_into_misaligned_and_strided_destinations():
    # arg_rows refuses a misaligned dst (the general path then), the slices'
    # and wide rows' passes write any destination the engine takes
    rng = np.random.default_rng(8)
    x = values(rng, (5000, 3), np.float64)
    for kind, axis in (("argmax", 1), ("sum", 1), ("max", 0), ("any", 1)):
        want = np.asarray(getattr(np, kind)(x, axis=axis))
        packed = np.zeros(want.size, [("pad", "u1"), ("v", want.dtype)])  # itemsize+1 apart
        dst = packed["v"].reshape(want.shape)
        assert not dst.flags.aligned or want.dtype == np.bool_
        pyet.asarray(dst)[...] = getattr(pyet, kind)(pyet.asarray(x), axis=axis)
        np.testing.assert_array_equal(dst, want)
        assert (packed["pad"] == 0).all()
        strided = np.zeros(2 * want.size, want.dtype)[::2].reshape(want.shape)
        pyet.asarray(strided)[...] = getattr(pyet, kind)(pyet.asarray(x), axis=axis)
        np.testing.assert_array_equal(strided, want)
