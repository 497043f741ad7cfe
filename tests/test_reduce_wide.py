"""Float32 sums widened into float64 accumulators as they are folded, the
reduction set-up shared between evaluations (pooled folds, cached layouts)
and the compensation step, against NumPy and exact sums."""

import math
import threading

import numpy as np
import pytest
from conftest import pyet_threads

import pyet
from pyet._core import core
from pyet._kernels import parallel


def exact_f32(values, axis=None):
    """The float32 rounding of the exact sum (math.fsum) along ``axis``."""
    v = np.asarray(values, np.float64)
    if axis is None:
        return np.float32(math.fsum(v.ravel()))
    moved = np.moveaxis(v, axis, -1)
    out = np.empty(moved.shape[:-1], np.float64)
    for idx in np.ndindex(out.shape):
        out[idx] = math.fsum(moved[idx])
    return out.astype(np.float32)


def ulps(a, b):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


def layouts(rng, shape):
    base = rng.standard_normal(shape).astype(np.float32) * 1e3
    big = rng.standard_normal((shape[0] * 2, shape[1] * 3)).astype(np.float32)
    packed = np.zeros(shape, dtype=[("a", np.int8), ("x", np.float32)])  # 5-byte stride
    packed["x"] = base
    return {
        "C": base,
        "F": np.asfortranarray(base),
        "strided": big[::2, ::3],
        "reversed": base[::-1, ::-1],
        "transposed": np.ascontiguousarray(base.T).T,
        "packed": packed["x"],
    }


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(3, 5), (64, 256), (7, 40000), (40000, 3)])
def test_float32_sum_whole_is_rounded_exact(shape, threads):
    with pyet_threads(threads):
        check_whole(shape)


def check_whole(shape):
    rng = np.random.default_rng(hash(shape) % 2**32)
    for name, a in layouts(rng, shape).items():
        got = np.asarray(pyet.sum(pyet.asarray(a)))
        assert got.dtype == np.float32
        if a.size <= 1 << 16:  # a small bare leaf: NumPy's own reduction
            assert got == np.sum(a), name
        else:
            assert ulps(got, exact_f32(a)) <= 1, name
        # a tree: the product widened in the same fold
        b = np.ascontiguousarray(a[::-1])
        got = np.asarray(pyet.sum(pyet.asarray(a) * pyet.asarray(b)))
        assert ulps(got, exact_f32(a * b)) <= 1, name  # float32 products, summed


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("shape", [(5, 3), (300, 257), (2, 70000)])
def test_float32_sum_axis_and_mean(shape, axis):
    # two threads even on a busy machine (there the pool, and reduce_threads, give one:
    # one set of float32 accumulators across 70000 rows, NumPy's order, its bits)
    dynamic = parallel.get_dynamic()
    parallel.set_dynamic(False)
    try:
        with pyet_threads(2):
            check_axis(shape, axis)
    finally:
        parallel.set_dynamic(dynamic)


def check_axis(shape, axis):
    rng = np.random.default_rng(7)
    for name, a in layouts(rng, shape).items():
        x = pyet.asarray(a)
        got = np.asarray(pyet.sum(x * 2, axis=axis))
        want = exact_f32(a * 2, axis)
        assert got.dtype == np.float32 and got.shape == want.shape
        if core.folds_across_rows(x * 2, (axis % 2,)):
            # across rows: float32 adds in order, as NumPy's own there
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4 * np.abs(a).max(),
                                       err_msg=name)
        else:  # along the reduced axis: widened, the rounded exact sum
            assert (ulps(got, want) <= 1).all(), name
        got = np.asarray(pyet.mean(x, axis=axis, keepdims=True))
        np.testing.assert_allclose(got, np.mean(a, axis=axis, keepdims=True, dtype=np.float64),
                                   rtol=2e-5, atol=1e-3 * np.abs(a).mean(), err_msg=name)


def test_float32_sum_specials_and_empty():
    a = np.array([1.0, np.inf, 2.0], np.float32)
    assert np.asarray(pyet.sum(pyet.asarray(a))) == np.inf
    a = np.array([np.inf, -np.inf, 1.0], np.float32)
    with np.errstate(invalid="ignore"):
        assert np.isnan(np.asarray(pyet.sum(pyet.asarray(a))))
    a = np.array([np.nan, 1.0], np.float32)
    assert np.isnan(np.asarray(pyet.sum(pyet.asarray(a))))
    # float32 overflow only when the float64 total is rounded at the end
    a = np.full(70000, 3e38, np.float32)
    a[1::2] = -3e38
    assert np.asarray(pyet.sum(pyet.asarray(a))) == 0
    assert np.asarray(pyet.sum(pyet.asarray(np.zeros((0, 3), np.float32)))) == 0
    big = np.full(100000, 1e35, np.float32)
    with np.errstate(over="ignore"):
        assert np.asarray(pyet.sum(pyet.asarray(big))) == np.float32(np.inf)


def test_sum_into_destinations_with_sentinels():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((130, 70000 // 130)).astype(np.float32)
    buf = np.full(40, 7.0, np.float32)
    dst = buf[10:30:2][:a.shape[0] // 13]
    x = pyet.asarray(a[::13])
    dst[...] = pyet.sum(x * x, axis=1)
    np.testing.assert_allclose(dst, np.sum(a[::13].astype(np.float64) ** 2, axis=1), rtol=1e-6)
    assert (buf[:10] == 7).all() and (buf[30:] == 7).all() and (buf[11:30:2] == 7).all()


def test_pooled_fold_reentrant_through_a_user_function():
    # a reduction evaluated inside a user function, during a fold of the same
    # layout, must not share the outer fold's accumulators
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    x = pyet.asarray(a)

    def inner(v):
        s = np.asarray(pyet.sum(pyet.asarray(v) * 1.0))
        return v + 0 * s

    got = np.asarray(pyet.sum(pyet.F(inner, x) * 1.0))
    assert got == a.sum()
    got = np.asarray(pyet.sum(pyet.F(inner, x) * 2.0, axis=1))
    np.testing.assert_array_equal(got, (2 * a).sum(axis=1))


def test_pooled_fold_from_several_threads():
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((64, 256)) for _ in range(4)]
    wants = [a.sum(axis=0) for a in arrays]
    errors = []

    def work(k):
        x = pyet.asarray(arrays[k])
        for _ in range(200):
            got = np.asarray(pyet.sum(x * 1.0, axis=0))
            if not np.allclose(got, wants[k], rtol=1e-12):
                errors.append(k)
                return

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_results_are_not_the_pooled_accumulators():
    x = pyet.asarray(np.ones((8, 9)))
    first = pyet.evaluate(pyet.sum(x * 1.0, axis=0)).numpy()
    second = pyet.evaluate(pyet.sum(x * 3.0, axis=0)).numpy()
    assert (first == 8).all() and (second == 24).all()


def test_add_compensations_checks_its_buffer():
    with pytest.raises(ValueError, match="C-ordered float64 accumulators"):
        core.add_compensations(np.zeros(4, np.float32), 2, 1)
    with pytest.raises(ValueError, match="C-ordered float64 accumulators"):
        core.add_compensations(np.zeros(3), 2, 1)
    # per thread: two accumulators, then their two compensations
    acc = np.array([1.0, np.inf, 0.5, 0.25, 2.0, 3.0, 0.125, np.nan])
    core.add_compensations(acc, 2, 2)
    assert acc[:2].tolist() == [1.5, np.inf]  # an inf keeps no compensation
    assert acc[4] == 2.125 and np.isnan(acc[5])
    # sets further apart (each thread's on its own cache line)
    acc = np.zeros(12)
    acc[[0, 1, 2, 3, 8, 9, 10, 11]] = [1.0, 2.0, 0.5, 0.25, 3.0, 4.0, 0.125, 0.0625]
    core.add_compensations(acc, 2, 2, 8)
    assert acc[[0, 1, 8, 9]].tolist() == [1.5, 2.25, 3.125, 4.0625]
    for elems, n in ((3, 12), (8, 11)):  # a stride under a set; a buffer too short
        with pytest.raises(ValueError, match="C-ordered float64 accumulators"):
            core.add_compensations(np.zeros(n), 2, 2, elems)


@pytest.mark.parametrize("nthreads,nslots,kept,dtype", [
    (2, 2, (1, 3), np.float64), (2, 1, (5,), np.float32), (3, 2, (2, 9), np.int64),
    (2, 1, (7,), np.bool_), (2, 1, (70,), np.bool_), (1, 2, (1, 3), np.float64)])
def test_accumulator_sets_never_share_a_cache_line(nthreads, nslots, kept, dtype):
    from pyet._nodes.reductions import _slots

    buf, views, (thread_stride, slot_stride) = _slots(nthreads, nslots, kept, dtype)
    assert len(views) == nthreads and all(len(v) == nslots for v in views)
    assert slot_stride == math.prod(kept) * np.dtype(dtype).itemsize
    for t in range(nthreads):
        for k in range(nslots):
            v = views[t][k]
            assert v.shape == kept and np.shares_memory(v, buf)
            assert v.ctypes.data == buf.ctypes.data + t * thread_stride + k * slot_stride
    if nthreads > 1:
        assert buf.ctypes.data % 64 == 0 and thread_stride % 64 == 0
        for t in range(1, nthreads):  # the last byte of set t-1, the first of set t
            end = views[t - 1][nslots - 1].ctypes.data + slot_stride - 1
            assert end // 64 < views[t][0].ctypes.data // 64
    else:
        assert thread_stride == nslots * slot_stride


def test_compensated_sums_on_two_threads_stay_exact():
    # 1e-15 steps beside 1.0 (each lost in a plain float64 fold: 5.8e-11 off
    # here) summed to math.fsum's value within an ulp on two threads (a
    # Fortran array: each column one fold, three columns split over two
    # threads, a set of accumulators and compensations each, a cache line apart)
    a = np.full((100003, 3), 1e-15, order="F")
    a[::997] = 1.0
    want = [math.fsum(a[:, j]) for j in range(3)]
    with pyet_threads(2) as n:
        if n < 2 or core.reduce_threads(a.size) < 2:
            pytest.skip("one thread here")
        got = pyet.evaluate(pyet.sum(pyet.asarray(a) * 1.0, axis=0)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-15)


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "argmax", "prod"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_short_rows_folded_over_axis0_on_two_threads(kind, dtype):
    a = np.random.default_rng(3).random((100003, 3)).astype(dtype)
    # float32 sums of 1e5 rows: NumPy's, in order, are off the exact sum by
    # ~1e-5; the threads' (two halves) differ
    want = getattr(np, kind)(a.astype(np.float64), axis=0)
    with pyet_threads(2) as n:
        if n < 2 or core.reduce_threads(a.size) < 2:
            pytest.skip("one thread here")
        got = pyet.evaluate(getattr(pyet, kind)(pyet.asarray(a), axis=0)).numpy()
    rtol = 1e-4 if dtype == np.float32 else 1e-12
    if kind == "prod":
        want, got = np.log(want), np.log(got)  # (underflows alike)
    np.testing.assert_allclose(got, want, rtol=rtol)


@pytest.mark.parametrize("shape,axes", [((4, 5, 6), (1,)), ((4, 5, 6), (0, 2)),
                                        ((3, 1, 7), (0,)), ((1, 9), (1,))])
def test_folds_across_rows_follows_the_leading_leaf(shape, axes):
    a = np.zeros(shape)
    x = pyet.asarray(a)
    nd = len(shape)
    inner = max((d for d in range(nd) if shape[d] > 1), default=None)
    assert core.folds_across_rows(x, axes) == (inner is not None and inner not in axes)
    # a broadcast row first, the full leaf second: the full one leads
    row = pyet.asarray(np.zeros(shape[-1]))
    assert core.folds_across_rows(row + x, axes) == core.folds_across_rows(x, axes)
    # transposed: the innermost in memory is the first axis
    t = pyet.asarray(np.zeros(shape[::-1]).T)
    first = min((d for d in range(nd) if shape[d] > 1), default=None)
    assert core.folds_across_rows(t, axes) == (first is not None and first not in axes)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2)])
def test_small_mean_is_numpys_bits_in_every_path(dtype, axis):
    rng = np.random.default_rng(11)
    a = (rng.standard_normal((7, 5, 3)) * 100).astype(dtype)
    x = pyet.asarray(a[:, ::-1])
    for keepdims in (False, True):
        want = np.mean(a[:, ::-1], axis=axis, keepdims=keepdims)
        got = np.asarray(pyet.mean(x, axis=axis, keepdims=keepdims))  # into a destination
        assert got.dtype == want.dtype and got.shape == np.shape(want)
        assert np.array_equal(got, want)
        plan = pyet.EvalPlan()  # a kept plan's bound call, and its replays
        h = plan.register(pyet.mean(x, axis=axis, keepdims=keepdims) + 0)
        for _ in range(3):
            plan.run(keep=True)
            assert np.array_equal(h.value.numpy(), want)
