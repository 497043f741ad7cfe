"""logaddexp and logaddexp2 in AVX-512 lanes (kernels.h pyet_logaddexp8_avx512;
issue 15: NumPy's loop calls libm's exp and log1p per element).  float64 lanes
are within NumPy's own error of the exact value, float32 lanes compute in float64
and round once; pairs more than 700 apart (float32: 87, logaddexp2 1000 and 126),
NaN and inf take NumPy's function lane by lane: its bits and its flags."""

import numpy as np
import pytest
from conftest import fp_flags_raised

import pyet
from pyet._core import core

pytestmark = pytest.mark.skipif(
    "logaddexp" in core.NUMPY_LOOP_NAMES, reason="pyet runs NumPy's loop here (no AVX-512)")

NAMES = ["logaddexp", "logaddexp2"]
DTYPES = [np.float32, np.float64]
FAR = {("logaddexp", np.float64): 700.0, ("logaddexp2", np.float64): 1000.0,
       ("logaddexp", np.float32): 87.0, ("logaddexp2", np.float32): 126.0}
needs_long_double = pytest.mark.skipif(  # x87 long double: the exact values' reference
    np.finfo(np.longdouble).nmant < 63, reason="long double is double here")


def run(name, *args):
    return np.asarray(pyet.evaluate(getattr(pyet, name)(*map(pyet.asarray, args))))


def bits(x):
    x = np.asarray(x)
    return x.dtype, x.shape, x.tobytes()


def reference(name, x, y):
    """The exact value rounded to float64 (long double arithmetic)."""
    return getattr(np, name)(x.astype(np.longdouble), y.astype(np.longdouble))


def operands(dtype, n, rng):
    """Random pairs: far apart, near each other, and cancelling to near 0."""
    x = rng.uniform(-60, 60, n)
    y = rng.uniform(-60, 60, n)
    q = n // 4
    y[:q] = x[:q] + rng.uniform(-1, 1, q)
    x[q:2 * q] = rng.uniform(-1, 1, q)
    y[q:2 * q] = rng.uniform(-3, 0, q)
    return x.astype(dtype), y.astype(dtype)


def error_in_ulps_of_the_operands(got, ref, x, y):
    """|got - exact| in units of the last place of the largest of |x|, |y| and the
    result: NumPy's own algorithm loses the result's bits where it cancels."""
    dt = got.dtype
    big = np.maximum(np.maximum(np.abs(x), np.abs(y)), np.abs(ref.astype(dt)))
    scale = np.spacing(np.maximum(big, np.finfo(dt).tiny)).astype(np.longdouble)
    return np.abs(got.astype(np.longdouble) - ref) / scale


@needs_long_double
@pytest.mark.parametrize("name", NAMES)
def test_float64_within_numpys_error(name):
    x, y = operands(np.float64, 200_000, np.random.default_rng(1))
    ref = reference(name, x, y)
    ours = error_in_ulps_of_the_operands(run(name, x, y), ref, x, y)
    numpys = error_in_ulps_of_the_operands(getattr(np, name)(x, y), ref, x, y)
    assert ours.max() <= max(1.8, numpys.max()), (ours.max(), numpys.max())
    # away from cancellation: within 1 ulp of the exact result
    far_from_zero = np.abs(ref) > 2.0
    got = run(name, x, y)[far_from_zero]
    err = np.abs(got.astype(np.longdouble) - ref[far_from_zero]) / \
        np.spacing(got).astype(np.longdouble)
    assert err.max() <= 1.0


@needs_long_double
@pytest.mark.parametrize("name", NAMES)
def test_float32_rounded_once(name):
    # float32 lanes compute in float64: the float nearest the exact value (NumPy's
    # float32 loop is off by up to 1.9e5 ulp where the result cancels)
    x, y = operands(np.float32, 200_000, np.random.default_rng(2))
    np.testing.assert_array_equal(run(name, x, y), reference(name, x, y).astype(np.float32))


SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, -1e-300, 5e-324,
            1e300, -1e300, 700.25, -700.25, 1000.5, 88.0, -88.0, 127.0, -30.0]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_pair_of_specials(name, dtype):
    with np.errstate(all="ignore"):
        s = np.array(SPECIALS, dtype)
    x, y = (a.ravel() for a in np.meshgrid(s, s))
    got = run(name, x, y)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x, y)
    same_class = (np.isnan(got) == np.isnan(want)) & \
        ((got == want) | np.isnan(want) | (np.abs(got - want) <= 2 * np.spacing(want)))
    assert same_class.all(), np.stack([x, y, got, want])[:, ~same_class]
    # NaN, inf and x == y: NumPy's bits (its function for NaN and inf, x + ln2 or x + 1)
    special = ~np.isfinite(x) | ~np.isfinite(y) | (x == y)
    assert bits(got[special]) == bits(want[special])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_far_pairs_take_numpys_function(name, dtype):
    # beyond FAR exp underflows toward subnormals: NumPy's bits and flags there
    rng = np.random.default_rng(3)
    far = FAR[name, dtype]
    y = rng.uniform(-2, 2, 5000).astype(dtype)
    x = (y - rng.uniform(far + 1, 3 * far, 5000)).astype(dtype)
    x[::7] = np.finfo(dtype).tiny * rng.uniform(-1, 1, x[::7].size)  # subnormal results
    y[::7] = x[::7] - dtype(far * 1.2)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x, y)
    assert bits(run(name, x, y)) == bits(want)
    assert bits(run(name, y, x)) == bits(getattr(np, name)(y, x))
    assert fp_flags_raised(lambda: run(name, x, y)) == \
        fp_flags_raised(lambda: getattr(np, name)(x, y))
    # just beyond FAR (float32: where NumPy's expf, exp2f underflow already)
    x = (y - rng.uniform(far + 0.5, far + 4, 5000)).astype(dtype)
    assert fp_flags_raised(lambda: run(name, x, y)) == \
        fp_flags_raised(lambda: getattr(np, name)(x, y))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_flags_are_numpys(name, dtype):
    rng = np.random.default_rng(4)
    x, y = operands(dtype, 20_000, rng)
    x[::50] = np.inf
    y[::70] = np.inf  # inf with inf: x == y first, no invalid inf - inf
    y[::90] = -np.inf
    x[::110] = np.nan
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(np.isnan(run(name, x, y)), np.isnan(getattr(np, name)(x, y)))
    assert fp_flags_raised(lambda: run(name, x, y)) == \
        fp_flags_raised(lambda: getattr(np, name)(x, y))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 7, 8, 9, 17, 4099])
def test_layouts_scalars_and_in_place(name, dtype, n):
    # every layout and scalar side gives the contiguous pass's bits; tails of
    # every length; destinations inside sentinels
    rng = np.random.default_rng(n)
    x, y = operands(dtype, n, rng)
    want = run(name, x, y)
    for step in (2, 3, -1, -3):
        bx = np.zeros(n * abs(step), dtype)
        by = np.zeros(n * abs(step), dtype)
        bx[::step], by[::step] = x, y
        assert bits(run(name, bx[::step], by[::step])) == bits(want)
    sentinel = dtype(-7.25)
    out = np.full(n + 2, sentinel)
    pyet.asarray(out)[1:-1] = getattr(pyet, name)(pyet.asarray(x), pyet.asarray(y))
    assert out[0] == sentinel and out[-1] == sentinel
    assert bits(out[1:-1]) == bits(want)
    inplace = x.copy()
    t = pyet.asarray(inplace)
    t[...] = getattr(pyet, name)(t, pyet.asarray(y))
    assert bits(inplace) == bits(want)
    s = dtype(1.75)
    assert bits(run(name, x, np.full(n, s))) == bits(
        np.asarray(pyet.evaluate(getattr(pyet, name)(pyet.asarray(x), s))))
    assert bits(run(name, np.full(n, s), y)) == bits(
        np.asarray(pyet.evaluate(getattr(pyet, name)(s, pyet.asarray(y)))))
    zero_d = np.asarray(s)
    assert bits(run(name, zero_d, zero_d)) == bits(run(name, np.full(1, s), np.full(1, s))[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_tree_and_threads(threaded, dtype):
    rng = np.random.default_rng(5)
    x, y = operands(dtype, 100_003, rng)
    e = pyet.logaddexp(pyet.asarray(x), pyet.asarray(y)) * 2 - pyet.logaddexp2(
        pyet.asarray(y), pyet.asarray(x))
    want = run("logaddexp", x, y) * dtype(2) - run("logaddexp2", y, x)
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(e)), want)
    assert "logaddexp[" in pyet.explain(e) and "NumPy's loop" not in pyet.explain(e)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_equal_infinities_raise_nothing(name, dtype):
    # x == y is tested first, as NumPy's: inf with inf is inf (no invalid inf - inf)
    for v in (np.inf, -np.inf):
        x = np.full(19, v, dtype)
        assert fp_flags_raised(lambda x=x: run(name, x, x.copy())) == set()
        assert bits(run(name, x, x.copy())) == bits(x)
