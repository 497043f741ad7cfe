"""A sum, max or min over leading and trailing axes with axes between kept (a
bias gradient's sum over (0, 2, 3) of NCHW): the leading axes folded first
(core.fold_rows for a C leaf, the fold across rows for a tree), then the
short trailing runs by NumPy's reduce.  Against NumPy over shapes, kinds,
dtypes and keepdims, leaves and trees, into guarded destinations, and in a
kept plan's replays."""

import numpy as np
import pytest

import pyet
from pyet._nodes import reductions as R

CASES = [((64, 16, 8, 8), (0, 2, 3)), ((40, 32, 4, 4), (0, 2, 3)), ((9, 5, 7, 3), (0, 1, 3)),
         ((12, 300, 2), (0, 2)), ((6, 4, 5, 3, 2), (0, 1, 3, 4)), ((70, 3, 17), (0, 2))]


def _values(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-1000, 1000, shape).astype(dtype)


def _guarded(want):
    raw = np.full(want.nbytes + 64, 0x5A, np.uint8)
    return raw[32:32 + want.nbytes].view(want.dtype).reshape(want.shape), raw


def _close(got, want, dtype):
    if np.dtype(dtype).kind == "f":
        tol = 2e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("shape,axes", CASES, ids=[str(c[0]) for c in CASES])
def test_leaves_and_trees_against_numpy(shape, axes, kind, dtype):
    rng = np.random.default_rng(sum(shape))
    a, g = _values(rng, shape, dtype), _values(rng, shape, dtype)
    A, G = pyet.asarray(a), pyet.asarray(g)
    for keepdims in (False, True):
        for build, ref in ((lambda: A, a),
                           (lambda: pyet.where(A > 0, G, 0), np.where(a > 0, g, 0))):
            want = getattr(np, kind)(ref, axis=axes, keepdims=keepdims)
            dst, raw = _guarded(want)
            pyet.asarray(dst)[...] = getattr(pyet, kind)(build(), axis=axes, keepdims=keepdims)
            assert (raw[:32] == 0x5A).all() and (raw[32 + want.nbytes:] == 0x5A).all()
            _close(dst, want, dtype)


def test_the_ways_are_taken():
    a = np.zeros((64, 16, 8, 8), np.float32)
    k = pyet.sum(pyet.asarray(a), axis=(0, 2, 3))._kernel
    assert k._way_of(a)[0] == R._LEAD_TRAIL
    assert k._way_of(np.asfortranarray(a))[0] != R._LEAD_TRAIL  # (C leaves only)
    tree = pyet.where(pyet.asarray(a) > 0, pyet.asarray(a), 0)
    assert k._lead_split(tree) is not None
    assert k._lead_split(pyet.asarray(a)) is None  # (leaves: _lead_trail)
    assert pyet.sum(pyet.asarray(a), axis=(0, 1))._kernel._lead_split(tree) is None
    assert pyet.sum(pyet.asarray(a.astype(np.int32)), axis=(0, 2, 3))._kernel._lead_split(
        pyet.asarray(a.astype(np.int32)) * 2) is None  # (int32 sums are int64's)


def test_kept_plan_replays_read_the_memory_as_it_is():
    rng = np.random.default_rng(1)
    a, g = (rng.standard_normal((32, 8, 4, 4)).astype(np.float32) for _ in range(2))
    A, G = pyet.asarray(a), pyet.asarray(g)
    out = np.empty(8, np.float32)
    plan = pyet.EvalPlan()
    plan.assign(out, pyet.sum(pyet.where(A > 0, G, 0), axis=(0, 2, 3)))
    for _ in range(3):
        plan.run(keep=True)
        _close(out, np.where(a > 0, g, 0).sum(axis=(0, 2, 3)), np.float32)
        a -= 0.3
        g *= 1.5


def test_the_cnn_bias_gradient_matches_numpy():
    # conv's bias gradient (relu's mask on the upstream gradient, summed over N, H, W)
    rng = np.random.default_rng(2)
    z, up = (rng.standard_normal((256, 16, 8, 8)).astype(np.float32) for _ in range(2))
    got = np.asarray(pyet.evaluate(pyet.sum(pyet.where(pyet.asarray(z) > 0,
                                                         pyet.asarray(up), 0), axis=(0, 2, 3))))
    want = np.where(z > 0, up, 0).astype(np.float64).sum(axis=(0, 2, 3))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_nan_bool_and_integer_kinds():
    # NaN wins max and min as in NumPy; bools and integer trees keep NumPy's
    # result dtypes (the paths that do not apply leave them to the others)
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal((64, 8, 4, 4)).astype(dtype)
        a[3, 2, 1, 1] = a[5, 4, 0, 0] = np.nan
        A = pyet.asarray(a)
        for kind in ("max", "min", "sum"):
            for e, ref in ((A, a), (pyet.where(A > 0, A, -A), np.where(a > 0, a, -a))):
                got = np.asarray(pyet.evaluate(getattr(pyet, kind)(e, axis=(0, 2, 3))))
                np.testing.assert_allclose(got, getattr(np, kind)(ref, axis=(0, 2, 3)),
                                           rtol=1e-5, equal_nan=True)
    b = rng.random((64, 8, 4, 4)) < 0.3
    i = rng.integers(-5, 5, (64, 8, 4, 4)).astype(np.int32)
    B, N = pyet.asarray(b), pyet.asarray(i)
    for kinds, cases in ((("max", "min", "sum", "any", "all"), ((B, b), (B & ~B | B, b))),
                         (("max", "min", "sum", "prod"), ((N, i), (N * 2, i * 2)))):
        for kind in kinds:
            for e, ref in cases:
                got = np.asarray(pyet.evaluate(getattr(pyet, kind)(e, axis=(0, 2, 3))))
                want = getattr(np, kind)(ref, axis=(0, 2, 3))
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got, want)
