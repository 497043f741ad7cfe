"""pyet's own exp and tanh kernels (kernels.h), checked densely and at their edges.

The wide-range ulp test in test_ops.py samples a few thousand points; these tests sweep hundreds
of thousands, and compare float32 results with the exact value (NumPy's float64 result) as well
as with NumPy's float32 result, which is itself up to 2.4 ulp (exp) and 1.4 ulp (tanh) off.
"""

import numpy as np
import pytest

import pyet

TINY = {np.float32: 2.0**-149, np.float64: 2.0**-1074}


def ulps(got, ref, dtype):
    """|got - ref| in units of dtype's spacing at ref (the smallest subnormal at least)."""
    ref = np.asarray(ref, np.float64)
    spacing = np.maximum(np.spacing(np.abs(ref).astype(dtype)).astype(np.float64), TINY[dtype])
    return np.abs(got.astype(np.float64) - ref) / spacing


def every_float32(lo, hi, count):
    """About count float32 values spread evenly over the bit patterns of [lo, hi] (lo < 0 < hi)."""
    neg = np.arange(0, np.float32(-lo).view(np.uint32), 1 + int(np.float32(-lo).view(np.uint32))
                    // (count // 2), dtype=np.uint32).view(np.float32)
    pos = np.arange(0, np.float32(hi).view(np.uint32), 1 + int(np.float32(hi).view(np.uint32))
                    // (count // 2), dtype=np.uint32).view(np.float32)
    return np.concatenate([-neg, pos])


def evaluate(name, x):
    with np.errstate(all="ignore"):
        return np.asarray(pyet.evaluate(getattr(pyet, name)(pyet.asarray(x))))


# name -> (range of x, max ulp from the exact value, max ulp from NumPy's float32 result)
FLOAT32 = {"exp": ((-104.0, 89.0), 1.05, 3), "tanh": ((-12.0, 12.0), 1.33, 2)}


@pytest.mark.parametrize("name", list(FLOAT32))
def test_float32_kernels_dense(name):
    (lo, hi), exact_max, numpy_max = FLOAT32[name]
    x = every_float32(lo, hi, 400_000)
    got = evaluate(name, x)
    assert got.dtype == np.float32
    with np.errstate(all="ignore"):
        exact, ref32 = getattr(np, name)(x.astype(np.float64)), getattr(np, name)(x)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref32))
    fin = np.isfinite(ref32) & (np.abs(exact) < np.finfo(np.float32).max)
    err = ulps(got[fin], exact[fin], np.float32)
    assert err.max() <= exact_max, f"{err.max()} ulp at x={x[fin][np.argmax(err)]!r}"
    diff = ulps(got[fin], ref32[fin], np.float32)
    assert diff.max() <= numpy_max, f"{diff.max()} ulp from NumPy at x={x[fin][np.argmax(diff)]!r}"


# name -> (range of x, max ulp from NumPy's float64 result)
FLOAT64 = {"exp": ((-746.0, 710.0), 1), "tanh": ((-25.0, 25.0), 2)}


@pytest.mark.parametrize("name", list(FLOAT64))
def test_float64_kernels_dense(name):
    (lo, hi), numpy_max = FLOAT64[name]
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(lo, hi, 200_000), rng.uniform(-1, 1, 100_000)])
    got = evaluate(name, x)
    with np.errstate(all="ignore"):
        ref = getattr(np, name)(x)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    fin = np.isfinite(ref)
    diff = ulps(got[fin], ref[fin], np.float64)
    assert diff.max() <= numpy_max, f"{diff.max()} ulp from NumPy at x={x[fin][np.argmax(diff)]!r}"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_edges(dtype):
    """Overflow to inf, underflow through the subnormals to 0, and the specials, as NumPy."""
    top = np.log(np.finfo(dtype).max.astype(np.float64))  # exp overflows just above
    bottom = np.log(TINY[dtype]) - np.log(2.0)  # exp rounds to 0 just below
    start = np.log(np.finfo(dtype).tiny.astype(np.float64))  # the subnormal results begin
    steps = np.arange(-40, 41)
    x = np.concatenate([
        np.nextafter(dtype(top), dtype(np.inf)) + steps * np.spacing(dtype(top)),
        np.nextafter(dtype(bottom), dtype(np.inf)) + steps * np.spacing(dtype(bottom)),
        np.linspace(bottom, start, 2001).astype(dtype),
        np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e30, -1e30], dtype),
    ]).astype(dtype)
    got = evaluate("exp", x)
    with np.errstate(all="ignore"):
        ref = np.exp(x)
    assert got.dtype == ref.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    fin = np.isfinite(ref)
    exact_max = 1 if dtype == np.float64 else 3
    assert ulps(got[fin], ref[fin], dtype).max() <= exact_max
    assert (got[fin] == 0).sum() > 40 and (got[fin] > 0).sum() > 2000  # both sides were swept


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tanh_specials_and_branch_edge(dtype):
    """Signed zeros, infinities, NaN, tiny values, and both sides of the |x| = 0.625 switch."""
    edge = dtype(0.625)
    near = edge + np.arange(-20, 21) * np.spacing(edge)
    x = np.concatenate([near, -near, np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30,
                                               30.0, -30.0], dtype)]).astype(dtype)
    got = evaluate("tanh", x)
    ref = np.tanh(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    fin = ~np.isnan(ref)
    np.testing.assert_array_equal(np.signbit(got[fin]), np.signbit(ref[fin]))
    assert ulps(got[fin], ref[fin], dtype).max() <= 2
    np.testing.assert_array_equal(got[-9:-5], ref[-9:-5])  # 0, -0, 1, -1 exactly
