"""Float max and min folded a block into one value (kernels.h
PYET_FOLD_MINMAX_BLOCK: 128 float32 / 64 float64 lanes, vmaxps with a's NaN
kept) against NumPy: every layout that reaches it, NaN at every lane and
block position, infinities, signed zeros, destinations between sentinel
bytes, on one and two threads."""

import numpy as np
import pytest
from conftest import pyet_threads

import pyet
from pyet._core import core as _plan
from pyet._nodes import reductions

FLOATS = [np.float32, np.float64]
KINDS = ["max", "min"]
# above SMALL_LEAF: a bare leaf is folded by pyet, not handed to NumPy
BIG = reductions.SMALL_LEAF + 4099


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def check(got, want):
    """Equal values, NaN where NumPy's is; NaN-free results bit for bit (zero signs too)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    ok = ~np.isnan(want) & (want != 0)
    np.testing.assert_array_equal(bits(got)[ok], bits(want)[ok])


def reduce_both(kind, a, axis=None, expr=False):
    """pyet's and NumPy's reduction of a (through a tree when expr: a + 0.0 is no leaf)."""
    want = getattr(np, kind)(a, axis=axis)
    x = pyet.asarray(a)
    if expr:
        x = pyet.where(x == x, x, x)  # NaN stays NaN, values and zero signs kept
    return pyet.evaluate(getattr(pyet, kind)(x, axis=axis)), want


def layouts(dt, rng, n=BIG):
    side = int(n ** 0.5) + 1
    base = lambda shape: rng.standard_normal(shape).astype(dt)  # noqa: E731
    rec = np.dtype([("pad", "u1"), ("x", dt)], align=False)
    packed = np.zeros(n, rec)
    packed["x"] = base(n)
    return {
        "C 1-D": base(n),
        "C 2-D": base((side, side)),
        "fortran": np.asfortranarray(base((side, side))),
        "transposed": base((side, side)).T,
        "step 3": base(3 * n)[::3],
        "negative": base(n)[::-1],
        "negative 2-D": base((side, side))[::-1, ::-2],
        "packed field": packed["x"],
        "odd tail": base(n + 77)[5:],
    }


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dt", FLOATS)
def test_layouts_against_numpy(dt, kind, threads):
    rng = np.random.default_rng(1)
    with pyet_threads(threads):
        for name, a in layouts(dt, rng).items():
            assert name == "packed field" or a.strides[-1] % a.itemsize == 0
            for axis in [None] + list(range(a.ndim)):
                for expr in (False, True):
                    check(*reduce_both(kind, a, axis, expr))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dt", FLOATS)
def test_nan_at_every_lane_and_block_position(dt, kind):
    # blocks of 8192 values: NaN at the first and last element, in each lane
    # of the vector loop, in the tree's pairs, in the tail and past a block
    lanes = 128 if dt == np.float32 else 64
    rng = np.random.default_rng(2)
    base = rng.standard_normal(BIG).astype(dt)
    spots = ({0, 1, BIG - 1, BIG - 2, 8191, 8192, 8193, 4096, 2 * 8192 + 4000}
             | set(range(lanes, 3 * lanes)) | set(range(8192 - 300, 8192)))
    for i in sorted(spots):
        a = base.copy()
        a[i] = np.nan
        got, want = reduce_both(kind, a)
        assert np.isnan(got) and np.isnan(want), i
    a = base.copy()
    a[[3, 9000, BIG - 5]] = np.nan
    for threads in (1, 2):
        with pyet_threads(threads):
            assert np.isnan(reduce_both(kind, a)[0])
            assert np.isnan(reduce_both(kind, a, expr=True)[0])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dt", FLOATS)
def test_nan_in_short_blocks_and_rows(dt, kind):
    # blocks shorter than two rounds of lanes keep PYET_FOLD's 32 lanes;
    # rows along the reduced axis of every length around the switch
    rng = np.random.default_rng(3)
    for n in (1, 2, 31, 63, 64, 127, 128, 129, 255, 256, 257, 300, 511, 1000):
        a = rng.standard_normal((4, n)).astype(dt)
        for i in {0, n // 2, n - 1}:
            b = a.copy()
            b[1, i] = np.nan
            b[3, :] = np.nan
            check(*reduce_both(kind, b, 1, expr=True))
            check(*reduce_both(kind, b, None, expr=True))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dt", FLOATS)
def test_infinities_and_signed_zeros(dt, kind):
    rng = np.random.default_rng(4)
    for fill in (np.inf, -np.inf):
        a = np.full(BIG, fill, dt)
        check(*reduce_both(kind, a))
        a[rng.integers(0, BIG, 50)] = -fill
        check(*reduce_both(kind, a))
        a[777] = np.nan
        check(*reduce_both(kind, a))
    for zero in (0.0, -0.0):  # zeros of one sign: that sign, as NumPy's
        a = np.full(BIG, zero, dt)
        got, want = reduce_both(kind, a)
        assert bits(got) == bits(want)
        a[5000] = -1.0 if kind == "max" else 1.0
        got, want = reduce_both(kind, a)
        assert bits(got) == bits(want)
    # mixed zeros: a tie, equal as values (the sign follows lane order, as in
    # NumPy, whose own answer depends on its vector width)
    a = np.where(rng.random(BIG) < 0.5, -0.0, 0.0).astype(dt)
    got, want = reduce_both(kind, a)
    assert got == want == 0


@pytest.mark.parametrize("dt", FLOATS)
def test_zero_d_and_empty(dt):
    x = np.array(2.5, dt)
    for kind in KINDS:
        check(*reduce_both(kind, x))
        check(*reduce_both(kind, np.array(np.nan, dt)))
        with pytest.raises(ValueError, match="zero-size"):
            getattr(pyet, kind)(pyet.asarray(np.zeros(0, dt)))
        e = np.zeros((0, 5), dt)
        check(*reduce_both(kind, e, 1))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dt", FLOATS)
def test_destinations_between_sentinel_bytes(dt, threads):
    # the destination a packed field between sentinel records: only its bytes change
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, BIG // 3 + 1)).astype(dt)
    a[1, 4000] = np.nan
    rec = np.dtype([("pad", "u1"), ("v", dt)], align=False)
    with pyet_threads(threads):
        for kind in KINDS:
            for axis, shape in ((1, (3,)), (None, (1, 1))):
                n = int(np.prod(shape))
                out = np.zeros(n + 2, rec)
                raw = out.view(np.uint8)
                raw[...] = 0xA5
                before = raw.copy()
                dst = out["v"][1:-1].reshape(shape)
                for expr in (False, True):
                    x = pyet.asarray(a)
                    if expr:
                        x = pyet.where(x == x, x, x)
                    pyet.asarray(dst)[...] = getattr(pyet, kind)(x, axis=axis,
                                                                 keepdims=axis is None)
                    np.testing.assert_array_equal(
                        dst, getattr(np, kind)(a, axis=axis, keepdims=axis is None))
                changed = set(np.flatnonzero(raw != before).tolist())
                isz, vsz = rec.itemsize, np.dtype(dt).itemsize
                assert changed <= {isz * i + 1 + b for i in range(1, n + 1) for b in range(vsz)}


def test_small_blocks_on_two_threads(threaded):
    # the threaded fixture's blocks of 32: every fold short, the PYET_FOLD path
    rng = np.random.default_rng(6)
    for dt in FLOATS:
        a = rng.standard_normal(5000).astype(dt)
        a[[7, 4000]] = np.nan
        for kind in KINDS:
            check(*reduce_both(kind, a, expr=True))
            check(*reduce_both(kind, a[::-2], expr=True))
    assert _plan.get_block_size() == 32


@pytest.mark.parametrize("dt", FLOATS)
def test_whole_contiguous_leaf_in_one_call(dt):
    # core.fold_flat: a C- or Fortran-contiguous leaf's whole max/min, one kernel
    # call; misaligned, strided and non-float operands are refused (False)
    rng = np.random.default_rng(7)
    a = rng.standard_normal((BIG // 64 + 1, 64)).astype(dt)
    a[3, 5] = np.nan
    for x in (a, np.asfortranarray(a), a.T, a[:, 5:6].copy()):
        for kind in KINDS:
            check(*reduce_both(kind, x))
            out = np.zeros((1, 1), dt)
            pyet.asarray(out)[...] = getattr(pyet, kind)(pyet.asarray(x), keepdims=True)
            assert np.isnan(out[0, 0])
    raw = np.zeros(BIG * a.itemsize + 1, np.uint8)[1:]
    mis = raw.view(dt)
    mis[...] = rng.standard_normal(BIG)
    assert not mis.flags.aligned
    out = np.zeros((), dt)
    assert not _plan.fold_flat(out, mis, 3)
    assert not _plan.fold_flat(out, a[:, ::2], 3)
    assert not _plan.fold_flat(out, a.astype(np.int64), 3)
    assert not _plan.fold_flat(np.zeros(2, dt), a, 3)
    assert not _plan.fold_flat(out, a, 1)  # (sums keep their pass)
    for kind in KINDS:
        check(*reduce_both(kind, mis))
    with np.errstate(all="raise"):  # NaN compares stay quiet, as NumPy's
        check(*reduce_both("max", a))
        check(*reduce_both("min", mis))


def test_whole_leaf_on_forced_threads(threaded):
    # above ONE_CALL_BYTES the pass's threads fold it; below, one call
    rng = np.random.default_rng(8)
    for dt, n in ((np.float32, BIG), (np.float64, BIG),
                  (np.float32, reductions.ONE_CALL_BYTES // 4 + 4099),
                  (np.float64, reductions.ONE_CALL_BYTES // 8 + 4099)):
        a = rng.standard_normal(n).astype(dt)
        for kind in KINDS:
            check(*reduce_both(kind, a))
        a[n - 3] = np.nan
        for kind in KINDS:
            check(*reduce_both(kind, a))
            check(*reduce_both(kind, a.reshape(-1, 1)[: n - n % 7].reshape(7, -1), 0))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dt", FLOATS)
def test_nan_at_block_edges_through_a_pass(dt, kind):
    # through a tree the values come in blocks of the pass (8192 for this one)
    rng = np.random.default_rng(9)
    base = rng.standard_normal(BIG).astype(dt)
    lanes = 128 if dt == np.float32 else 64
    for i in (0, lanes - 1, lanes, 2 * lanes - 1, 8191, 8192, 8192 + lanes, BIG - 1):
        a = base.copy()
        a[i] = np.nan
        got, want = reduce_both(kind, a, expr=True)
        assert np.isnan(got) and np.isnan(want), i


@pytest.mark.parametrize("dt", FLOATS)
def test_leading_axes_of_a_contiguous_leaf(dt):
    # core.fold_rows (float64; float32 is NumPy's there): rows folded into dst in
    # order; strided, overlapping or misaligned destinations take the pass
    rng = np.random.default_rng(10)
    a = rng.standard_normal((40, 50, 40)).astype(dt)
    a[7, 3, 9] = np.nan
    a[:, 4, 4] = np.nan
    a[5, 6, :] = -0.0
    for kind in KINDS:
        for axis in (0, (0, 1)):
            for keepdims in (False, True):
                want = getattr(np, kind)(a, axis=axis, keepdims=keepdims)
                got = pyet.evaluate(getattr(pyet, kind)(pyet.asarray(a), axis=axis,
                                                        keepdims=keepdims))
                check(got, want)
                big = np.zeros((2,) + want.shape, dt)
                dst = big[1] if not keepdims else big[1:]
                pyet.asarray(dst)[...] = getattr(pyet, kind)(pyet.asarray(a), axis=axis,
                                                             keepdims=keepdims)
                check(dst.reshape(want.shape), want)
                strided = np.zeros((2 * want.shape[-1],) if want.ndim == 1 else
                                   want.shape[:-1] + (2 * want.shape[-1],), dt)[..., ::2]
                pyet.asarray(strided)[...] = getattr(pyet, kind)(pyet.asarray(a), axis=axis,
                                                                 keepdims=keepdims)
                check(strided, want)
        # dst is the first row of the operand itself: read before it is written
        b = a.copy()
        want = getattr(np, kind)(b, axis=0)
        pyet.asarray(b[0])[...] = getattr(pyet, kind)(pyet.asarray(b), axis=0)
        check(b[0], want)
    if dt == np.float64:
        out = np.zeros((50, 40), dt)
        assert _plan.fold_rows(out, a, 3, 1)
        check(out, np.max(a, axis=0))
        assert not _plan.fold_rows(out[:, ::2].copy(), a, 3, 1)  # wrong size
        assert not _plan.fold_rows(np.zeros((40, 50), dt)[:, ::1].T, a, 3, 1)  # not C-ordered
        assert not _plan.fold_rows(out, a, 2, 1)  # (products keep their pass)
        assert not _plan.fold_rows(a[0], a, 3, 1)  # overlapping
        assert not _plan.fold_rows(np.zeros(40, dt), a, 3, 0)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(256, 128), (32, 10), (7, 3, 5), (2, 1), (1, 9)])
def test_a_small_leafs_sum_over_its_first_axis_is_numpys_row_after_row(dt, shape):
    # core.fold_rows' sum (from 0, rows in order: NumPy's bits, signed zeros,
    # infinities and NaNs too) at the root, into new memory and in a kept plan
    rng = np.random.default_rng(11)
    a = (rng.standard_normal(shape) * 1e3).astype(dt)
    a.flat[:: 7] = -0.0
    if a.shape[0] > 2:
        a[:, 0] = -0.0  # a column of negative zeros: +0 as NumPy's
        a[1].flat[-1] = np.inf
        a[2].flat[-1] = -np.inf
        a[0].flat[1 % a[0].size] = np.nan
    want = np.add.reduce(a, axis=0)
    out = np.empty(shape[1:], dt)
    assert _plan.fold_rows(out, a, 1, 1)
    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))
    for keepdims in (False, True):
        ref = np.sum(a, axis=0, keepdims=keepdims)
        got = pyet.evaluate(pyet.sum(pyet.asarray(a), axis=0, keepdims=keepdims)).numpy()
        np.testing.assert_array_equal(got.view(np.uint8), ref.view(np.uint8))
        dst = np.full(ref.shape, 5, dt)
        pyet.asarray(dst)[...] = pyet.sum(pyet.asarray(a), axis=0, keepdims=keepdims)
        np.testing.assert_array_equal(dst.view(np.uint8), ref.view(np.uint8))
    plan = pyet.EvalPlan()
    kept = np.empty(shape[1:], dt)
    plan.assign(kept, pyet.sum(pyet.asarray(a), axis=0))
    for _ in range(2):
        plan.run(keep=True)
        np.testing.assert_array_equal(kept.view(np.uint8), np.sum(a, axis=0).view(np.uint8))
        a *= 2
    assert not _plan.fold_rows(np.empty(shape[1:], np.float64 if dt == np.float32 else
                                        np.float32), a, 1, 1)  # another dtype


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_the_row_sums_floating_point_errors_are_numpys(dt):
    # inf - inf (invalid) and overflow reported as NumPy's reduce reports them
    big = np.finfo(dt).max
    for column, what in (([np.inf, -np.inf, 1], "invalid"), ([big, big, 0], "overflow")):
        a = np.array([column, [1, 2, 3]], dt).T.copy()  # (3, 2): the first column
        with np.errstate(all="raise"):
            with pytest.raises(FloatingPointError, match=what):
                np.add.reduce(a, axis=0)
            with pytest.raises(FloatingPointError, match=what):
                pyet.evaluate(pyet.sum(pyet.asarray(a), axis=0))
        with np.errstate(all="ignore"):
            got = pyet.evaluate(pyet.sum(pyet.asarray(a), axis=0)).numpy()
            np.testing.assert_array_equal(got, np.add.reduce(a, axis=0))
    with np.errstate(all="raise"):  # flags raised before are not reported again
        np.testing.assert_array_equal(
            pyet.evaluate(pyet.sum(pyet.asarray(np.ones((4, 3), dt)), axis=0)).numpy(), 4)
