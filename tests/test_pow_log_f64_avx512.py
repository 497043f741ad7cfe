"""float64 log and pow's AVX-512 kernels (16-entry tables held in registers, pyet_log8_avx512 and
pyet_pow_avx512 in kernels.h): within 1 ulp of the exact result (np.longdouble's logl and powl,
64-bit significands) on every table interval's edges, near 1, at the ends of the exponent range
and at the vector path's limits (|y log x| = 128, |y| = 2^-65 and 2^63, the smallest normal x),
and as NumPy on the layouts and scalar forms.  The lanes the vector path hands to libm (zero,
negative, subnormal, inf, NaN x; inf, NaN, tiny or huge y; large |y log x|) are the portable
code's too (no switch forces the non-AVX-512 kernels): mixed into every lane of an 8-lane
vector and its tail, they must give NumPy's values and floating-point errors.  float64 log
lowers to NumPy's own loop where that is AVX-512 (ops.NUMPY_SIMD_LOOPS): every test runs with both
lowerings, and that one must give NumPy's bits.  No timing here.
"""

import math

import numpy as np
import pytest
from conftest import fp_flags_raised

import pyet

pytestmark = pytest.mark.usefixtures("one_thread", "simd_lowering")  # conftest's


LD = np.longdouble
if np.finfo(LD).nmant < 63:
    pytest.skip("needs an 80-bit long double for the exact reference", allow_module_level=True)


def ulps(got, exact):
    """|got - exact| in units of the last place of the float64 nearest exact."""
    got, exact = np.asarray(got), np.asarray(exact, LD)
    sp = np.spacing(np.abs(exact.astype(np.float64))).astype(LD)
    return np.asarray(np.abs(got.astype(LD) - exact) / sp, np.float64)


def plog(x):
    return np.asarray(pyet.evaluate(pyet.log(pyet.asarray(x))))


def log_ulps(got, x, lowering):
    """got's distance from the exact log x in ulps (pyet's kernel: under 0.6); NumPy's loop must
    give np.log's own bits (within 0.61 ulp), and then 0."""
    if lowering == "kernel":
        return ulps(got, np.log(np.asarray(x, LD)))
    np.testing.assert_array_equal(got, np.log(x))
    return np.zeros(1)


def ppow(x, y):
    return np.asarray(pyet.evaluate(pyet.asarray(x) ** pyet.asarray(y)))


def interval_edges(rng, m):
    """x around each of the kernel's 16 interval edges (z = 2^-k x in [0x1.6555...p-1, ...)),
    over a few binades."""
    off = 0x3FE6555555555555
    edges = off + (np.arange(17, dtype=np.int64) << 48)
    bits = (edges[:, None] + rng.integers(-(1 << 20), 1 << 20, (17, m))).ravel()
    z = bits.view(np.float64)
    return np.concatenate([z, z * 2.0 ** 40, z * 2.0 ** -300, z * 2.0 ** 1000])


def test_log_within_one_ulp_of_logl(simd_lowering):
    rng = np.random.default_rng(21)
    x = np.concatenate([
        interval_edges(rng, 2000), rng.uniform(0.25, 4.25, 200_000),
        1 + rng.uniform(-0.03, 0.03, 100_000), 1 + rng.uniform(-1e-9, 1e-9, 20_000),
        np.abs(rng.integers(0x0010000000000000, 0x7FF0000000000000, 200_000)).view(np.float64),
        [np.finfo(float).smallest_normal, np.finfo(float).max, 1.0, 2.0, 0.5, math.e]])
    got = plog(x)
    d = log_ulps(got, x, simd_lowering)
    assert d.max() < 0.6, f"{d.max()} ulp at x={x[np.argmax(d)]!r}"
    assert plog(np.array([1.0]))[0] == 0.0 and not np.signbit(plog(np.array([1.0]))[0])
    if simd_lowering == "kernel":  # and glibc's correctly rounded log on all but a few in 1000
        want = np.array([math.log(v) for v in x[::7]])
        assert np.count_nonzero(got[::7] != want) < 0.005 * want.size


def test_pow_within_one_ulp_of_powl():
    rng = np.random.default_rng(22)
    n = 100_000
    ex = interval_edges(rng, 300)
    xs = [rng.uniform(0.25, 4.25, n), np.exp(rng.uniform(-50, 50, n)),
          1 + rng.uniform(-1e-3, 1e-3, n), ex, np.exp(rng.uniform(-700, 700, n)),
          rng.uniform(0, 100, n)]
    ys = [rng.uniform(0.25, 4.25, n), rng.uniform(-4, 4, n), rng.uniform(-1e5, 1e5, n),
          rng.uniform(-20, 20, ex.size), rng.uniform(-1, 1, n),
          rng.integers(-30, 30, n).astype(np.float64)]
    # |y log x| at and around 128 (the vector path's limit), |y| at 2^-65 and 2^63
    x = np.exp(rng.uniform(-5, 5, n))
    xs += [x, rng.uniform(0.5, 2, 4000), 1 + rng.uniform(-2e-19, 2e-19, 4000) + 2.0 ** -52]
    ys += [128 / np.log(x) * rng.uniform(0.98, 1.02, n),
           np.resize([2.0 ** -65, -(2.0 ** -65), 2.0 ** -64, np.nextafter(2.0 ** -65, 0)], 4000)
           * rng.uniform(1, 1.01, 4000), np.resize([2.0 ** 50, -(2.0 ** 50)], 4000)]
    x, y = np.concatenate(xs), np.concatenate(ys)
    got = ppow(x, y)
    exact = np.power(x.astype(LD), y.astype(LD))
    ok = (np.abs(exact) > np.finfo(float).smallest_normal) & (np.abs(exact) < np.finfo(float).max)
    d = ulps(got[ok], exact[ok])
    assert d.max() < 0.8, f"{d.max()} ulp at x={x[ok][np.argmax(d)]!r}, y={y[ok][np.argmax(d)]!r}"
    check_out_of_range(got[~ok], exact[~ok])


def check_out_of_range(got, exact):
    """inf, 0 or subnormal results (libm's lanes): within a subnormal's ulp."""
    with np.errstate(all="ignore"):
        want = exact.astype(np.float64)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    sub = ~np.isinf(want)
    assert np.all(np.abs(got[sub].astype(LD) - exact[sub]) <= LD(5e-324))


@pytest.mark.parametrize("k", [3.0, -3.0, 4.0, 1.5, -0.25, 7.0, 1e-20, 3e19])
def test_pow_scalar_exponent_within_one_ulp(k):
    rng = np.random.default_rng(23)
    x = np.concatenate([rng.uniform(0.25, 4.25, 50_000), np.exp(rng.uniform(-20, 20, 50_000))])
    got = np.asarray(pyet.evaluate(pyet.asarray(x) ** k))
    exact = np.power(x.astype(LD), LD(k))
    ok = (exact > np.finfo(float).smallest_normal) & (exact < np.finfo(float).max)
    assert not ok.any() or ulps(got[ok], exact[ok]).max() < 0.8
    check_out_of_range(got[~ok], exact[~ok])


SPECIAL_X = [0.0, -0.0, -2.0, -0.5, 5e-324, 1e-310, -1e-310, np.inf, -np.inf, np.nan, 1.0,
             np.finfo(float).max, np.finfo(float).smallest_normal]
SPECIAL_Y = [0.0, -0.0, 2.0, -3.0, 0.5, np.inf, -np.inf, np.nan, 2.0 ** -70, -(2.0 ** 70), 1e300,
             800.0, -800.0, 129.0]


@pytest.mark.parametrize("n", [1, 5, 8, 9, 16, 17, 40])
def test_special_lanes_at_every_lane(n, simd_lowering):
    """Each special value in each lane of the vector and its tail, among ordinary lanes."""
    rng = np.random.default_rng(n)
    for s in SPECIAL_X:
        for pos in range(n):
            x = rng.uniform(0.5, 3, n)
            x[pos] = s
            y = rng.uniform(-3, 3, n)
            with np.errstate(all="ignore"):
                lg, lw = plog(x), np.log(x)
                got, want = ppow(x, y), np.power(x, y)
            fin = np.isfinite(lw)
            np.testing.assert_array_equal(lg[~fin], lw[~fin])
            assert not fin.any() or log_ulps(lg[fin], x[fin], simd_lowering).max() < 0.6
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            fin = np.isfinite(want)
            np.testing.assert_array_equal(got[~fin], want[~fin])
            assert not fin.any() or ulps(got[fin], np.power(x[fin].astype(LD),
                                                            y[fin].astype(LD))).max() < 1
    for s in SPECIAL_Y:
        for pos in range(0, n, 3):
            x = rng.uniform(0.5, 3, n)
            y = rng.uniform(-3, 3, n)
            y[pos] = s
            with np.errstate(all="ignore"):
                got, want = ppow(x, y), np.power(x, y)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            fin = np.isfinite(want) & (np.abs(want) > np.finfo(float).smallest_normal)
            np.testing.assert_array_equal(got[~fin], want[~fin])
            assert not fin.any() or ulps(got[fin], np.power(x[fin].astype(LD),
                                                            y[fin].astype(LD))).max() < 1


@pytest.mark.parametrize(("build", "ref", "x", "y"), [
    ("log", np.log, [2.0, 0.0, 3.0], None),                 # divide by zero
    ("log", np.log, [2.0, -1.0, 3.0], None),                # invalid
    ("pow", np.power, [2.0, 0.0, 3.0], [1.5, -1.5, 2.5]),   # divide by zero
    ("pow", np.power, [2.0, -2.0, 3.0], [1.5, 0.5, 2.5]),   # invalid
    ("pow", np.power, [2.0, 10.0, 3.0], [1.5, 400.0, 2.5]),  # overflow (a libm lane)
    ("pow", np.power, [2.0, 10.0, 3.0], [1.5, -400.0, 2.5]),  # underflow
    ("pow", np.power, [2.0, 1.5, 3.0], [1.5, 2.5, 0.5]),    # none
    ("log", np.log, [2.0, 1.5, 1e300], None),               # none
])
@pytest.mark.parametrize("n", [3, 600])
def test_floating_point_errors_as_numpys(build, ref, x, y, n):
    x = np.resize(np.array(x), n)
    args = (x,) if y is None else (x, np.resize(np.array(y), n))
    fn = plog if build == "log" else ppow
    want = fp_flags_raised(lambda: ref(*args))
    assert fp_flags_raised(lambda: fn(*args)) == want


LAYOUTS = {
    "C": lambda a: a,
    "fortran": np.asfortranarray,
    "transposed": lambda a: a.T,
    "step3": lambda a: a[:, ::3],
    "negative": lambda a: a[::-1, ::-2],
    "0d": lambda a: a[3, 5],
    "empty": lambda a: a[:0],
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layouts_against_numpy(layout):
    rng = np.random.default_rng(24)
    f = LAYOUTS[layout]
    x = f(rng.random((50, 70)) * 4 + 0.25)
    y = f((rng.random((50, 70)) - 0.5) * 8)
    X, Y = pyet.asarray(x), pyet.asarray(y)
    exact_pow = np.power(np.asarray(x, LD), np.asarray(y, LD))

    def check(got, exact):
        got = np.asarray(got)
        assert got.shape == np.shape(exact) and got.dtype == np.float64
        assert got.size == 0 or ulps(got, exact).max() < 0.8

    check(pyet.evaluate(X ** Y), exact_pow)
    check(pyet.evaluate(pyet.log(X)), np.log(np.asarray(x, LD)))
    check(pyet.evaluate(X ** 3.0), np.asarray(x, LD) ** 3)
    check(pyet.evaluate(2.5 ** Y), LD(2.5) ** np.asarray(y, LD))   # scalar base
    check(pyet.evaluate(X ** np.float64(-1.75)), np.asarray(x, LD) ** LD(-1.75))
    # fused into one pass: each op rounded as on its own
    np.testing.assert_array_equal(pyet.evaluate(pyet.log(X) * Y + X ** Y),
                                  plog(x) * y + ppow(x, y))
    out = np.full(np.shape(x), np.nan)
    pyet.asarray(out)[...] = X ** Y
    check(out, exact_pow)


def test_pow_and_log_into_their_operand(simd_lowering):
    rng = np.random.default_rng(25)
    x = rng.random(1001) * 4 + 0.25
    y = rng.random(1001) * 3
    T = pyet.asarray(x.copy())
    T[...] = T ** pyet.asarray(y)
    assert ulps(T, np.power(x.astype(LD), y.astype(LD))).max() < 0.8
    U = pyet.asarray(x.copy())
    U[...] = pyet.log(U)
    assert log_ulps(U, x, simd_lowering).max() < 0.6
    V = pyet.asarray(x.copy())
    V[1:] = V[:-1] ** 3.0   # overlapping source and destination
    assert ulps(V[1:], x[:-1].astype(LD) ** 3).max() < 0.8 and V[0] == x[0]


@pytest.mark.parametrize("k", [3, 4, 5, 7, 13, 63, 64, 1000])
@pytest.mark.parametrize("n", [1, 7, 8, 9, 255, 256, 257, 1001])
def test_int64_power_by_scalar_exponent(k, n):
    """int64 x ** k (k >= 3, a scalar): AVX-512's vectorized square-and-multiply, products
    wrapping as NumPy's, on contiguous, strided, reversed and aliased operands."""
    rng = np.random.default_rng(k * 1000 + n)
    x = rng.integers(-(2 ** 40), 2 ** 40, n)
    x[: n // 3] = rng.integers(-5, 5, n // 3)          # small bases, exact powers
    X = pyet.asarray(x)
    np.testing.assert_array_equal(pyet.evaluate(X ** k), np.power(x, k))
    np.testing.assert_array_equal(pyet.evaluate(X[::-2] ** k), np.power(x[::-2], k))
    y = x.copy()
    Y = pyet.asarray(y)
    Y[...] = Y ** k
    np.testing.assert_array_equal(y, np.power(x, k))
    z = np.zeros(2 * n, np.int64)
    pyet.asarray(z)[::2] = X ** k
    np.testing.assert_array_equal(z[::2], np.power(x, k))
    assert not z[1::2].any()
