"""float32 x ** y (issue 15): the AVX-512 kernel (log2 and exp2 in double with 16-entry tables in
registers) or, without AVX-512, the widening one, and the small-integer exponents (3..8, -6..-2,
by multiplications in double), against NumPy and against float64 pow rounded to float32: within
1 ulp of both, NumPy's bits for the exponents NumPy computes directly (2, 1, -1, 0.5, 0), NumPy's
floating-point errors, on the layouts and scalar forms the kernels serve.  Two arrays lower to
NumPy's own loop where it is SVML's (ops.NUMPY_POWER_F32): every test runs with both lowerings,
and that one gives NumPy's bits.  No timing here: bench/bench_grid.py measures.
"""

import numpy as np
import pytest
from conftest import fp_flags_raised, ulps_f32

import pyet
from pyet._core import core

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest's


@pytest.fixture(params=["kernel", "numpy_loop"], autouse=True)
def array_power(request):
    """Two float32 arrays' x ** y lowered to pyet's kernel or to NumPy's loop."""
    before = core.set_numpy_power_f32(request.param == "numpy_loop")
    yield request.param
    core.set_numpy_power_f32(before)

F = np.float32
TINY, MAX = np.finfo(F).smallest_normal, np.finfo(F).max
SPECIALS = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -2.5, np.inf, -np.inf, np.nan,
                     MAX, -MAX, TINY, -TINY, TINY / 8, -TINY / 8, 1e-45, 1 + 2 ** -23,
                     1 - 2 ** -24, 3.0, 1e30, 1e-30], F)


def correct(x, y):
    """x ** y in float64, rounded to float32 (correctly rounded but for double roundings)."""
    with np.errstate(all="ignore"):
        return np.power(np.asarray(x, np.float64), np.asarray(y, np.float64)).astype(F)


def pe_pow(x, y, quiet=True):
    X = pyet.asarray(x) if isinstance(x, np.ndarray) and x.ndim else x
    Y = pyet.asarray(y) if isinstance(y, np.ndarray) and y.ndim else y
    if not quiet:
        return np.asarray(pyet.evaluate(X ** Y))
    with np.errstate(all="ignore"):
        return np.asarray(pyet.evaluate(X ** Y))


def check(x, y, tol=1):
    """pyet's x ** y within tol ulp of NumPy's and of the correctly rounded value, with the
    same NaNs, infinities and signs of zero as NumPy's."""
    got = pe_pow(x, y)
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    assert got.dtype == F and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got) * np.sign(got), np.isinf(want) * np.sign(want))
    np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[got == 0]))
    for ref in (want, correct(*np.broadcast_arrays(x, y))):
        d = ulps_f32(got, ref)
        assert d.max(initial=0) <= tol, (d.max(), np.flatnonzero(d > tol)[:5])
    return got


def rand_bits(rng, n, lo=0, hi=1 << 32):
    return rng.integers(lo, hi, n, dtype=np.uint64).astype(np.uint32).view(F)


@pytest.mark.parametrize("kind", ["uniform", "all_finite_bits", "near_one", "wide_t",
                                  "negative_bases", "any_bits"])
def test_arrays_within_one_ulp(kind):
    rng = np.random.default_rng(sum(map(ord, kind)))
    n = 200_000
    if kind == "uniform":                           # bench_grid's a ** b
        x, y = rng.uniform(0.25, 4.25, n), rng.uniform(0.0625, 1.0625, n)
    elif kind == "all_finite_bits":
        x, y = rand_bits(rng, n, 0x00800000, 0x7F800000), rng.uniform(-3, 3, n)
    elif kind == "near_one":                        # log2 x tiny, y up to 2^30
        x = 1 + rng.integers(-3000, 3000, n) * 2.0 ** -24
        y = rng.uniform(-1, 1, n) * 2.0 ** rng.uniform(0, 30, n)
    elif kind == "wide_t":                          # y log2 x over [-160, 135]: results
        x = np.exp2(rng.uniform(-126, 127, n))      # overflow, underflow, subnormal
        y = rng.uniform(-160, 135, n) / np.log2(x.astype(F).astype(np.float64))
    elif kind == "negative_bases":                  # integer and other exponents
        x, y = -rng.uniform(0.1, 10, n), rng.uniform(-30, 30, n)
        y[::2] = np.round(y[::2])
    else:
        x, y = rand_bits(rng, n), rand_bits(rng, n)
    check(np.asarray(x, F), np.asarray(y, F))


@pytest.mark.parametrize("k", [3, 4, 5, 6, 7, 8, -2, -3, -4, -5, -6, 9, -7, 2.5, -0.75, 1e-5,
                               17.0, 40.0, -30.0, 1e9, -1e9])
def test_scalar_exponents(k):
    rng = np.random.default_rng(abs(int(k * 7)) + 1)
    x = np.concatenate([rng.uniform(0.01, 100, 5000), -rng.uniform(0.01, 100, 1000),
                        np.exp2(rng.uniform(-149, 128, 5000)), 1 + rng.normal(0, 1e-6, 500),
                        SPECIALS]).astype(F)
    got = check(x, F(k))
    assert np.array_equal(pe_pow(x, k), got, equal_nan=True)  # a Python number alike


@pytest.mark.parametrize("k", [2.0, 1.0, -1.0, 0.5, 0.0, -0.0])
def test_numpys_direct_exponents_bit_exact(k):
    rng = np.random.default_rng(9)
    x = np.concatenate([rng.uniform(-100, 100, 3000), SPECIALS]).astype(F)
    with np.errstate(all="ignore"):
        want = np.power(x, F(k))
    got = pe_pow(x, F(k))
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 31, 33, 255, 256, 257, 1000, 4099])
def test_lengths_and_special_lanes(n):
    """Tails of the 16-lane steps; slow lanes (libm's) anywhere in a step."""
    rng = np.random.default_rng(n)
    x = rng.uniform(0.01, 50, n).astype(F)
    y = rng.uniform(-20, 20, n).astype(F)
    for arr in (x, y):
        idx = rng.choice(n, min(n, 7), replace=False)
        arr[idx] = rng.choice(SPECIALS, idx.size)
    check(x, y)
    check(x, F(3))
    check(x, F(-2.5))
    check(F(1.75), y)
    check(F(-2.0), np.round(y))


def test_scalar_base_and_both_scalar():
    rng = np.random.default_rng(12)
    y = np.concatenate([rng.uniform(-150, 130, 3000), np.round(rng.uniform(-20, 20, 500)),
                        SPECIALS]).astype(F)
    for base in (2.0, 0.5, 10.0, 1.0, -2.0, 0.0, -0.0, np.inf, np.nan, 1e-45, 3.4e38):
        check(F(base), y)
    for base, e in [(2.0, 3.0), (10.0, 2.5), (-8.0, 1 / 3), (0.0, -3.0), (7.0, -40.5)]:
        got, want = pe_pow(np.full((), F(base)), F(e)), np.power(F(base), F(e))
        assert ulps_f32(got, want) <= 1


LAYOUTS = {
    "C": lambda a: a,
    "fortran": np.asfortranarray,
    "transposed": lambda a: a.T,
    "step3": lambda a: a[:, ::3],
    "reversed": lambda a: a[::-1, ::-1],
    "bcast_row": lambda a: np.broadcast_to(a[0], a.shape),
    "bcast_col": lambda a: np.broadcast_to(a[:, :1], a.shape),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layouts(layout):
    rng = np.random.default_rng(13)
    f = LAYOUTS[layout]
    x = f(rng.uniform(0.25, 4.25, (70, 90)).astype(F))
    y = f(rng.uniform(-4, 4, (70, 90)).astype(F))
    check(x, y)
    check(x, F(3))
    check(x, F(-0.3))
    check(np.ascontiguousarray(x), y)
    out = np.empty(np.shape(x), F)
    pyet.asarray(out)[...] = pyet.asarray(x) ** pyet.asarray(y) + pyet.asarray(x)
    with np.errstate(all="ignore"):
        want = np.power(x, y) + x
    assert ulps_f32(out, want).max() <= 2  # 1 ulp in x ** y, then the sum's rounding


@pytest.mark.parametrize("e", [F(2.75), F(5)])
def test_into_its_own_operand(e):
    rng = np.random.default_rng(14)
    x = rng.uniform(0.25, 4.25, 5000).astype(F)
    x[::37] = -1.5                                          # slow lanes too
    y = x[::-1].copy()
    T = pyet.asarray(x.copy())
    T[...] = T ** pyet.asarray(y)
    with np.errstate(all="ignore"):
        assert ulps_f32(np.asarray(T), np.power(x, y)).max() <= 1
        U = pyet.asarray(x.copy())
        U **= e
        assert ulps_f32(np.asarray(U), np.power(x, e)).max() <= 1


FLAG_CASES = [  # (base, exponent): the one bad lane among ordinary ones
    (10.0, 50.5), (10.0, -50.5), (-2.0, 0.5), (0.0, -1.5), (1e20, 3.0), (1e-20, 3.0),
    (0.0, -3.0), (-0.0, -5.0), (1e-30, -4.0), (2.0, 200.0), (3.0, -100.0), (1e-20, 7.0),
    (1e6, 8.0), (0.0, -6.0), (np.inf, -3.0), (np.nan, 3.0), (1.5, np.inf), (-1.5, 2.5),
    (2.0, 0.3), (1e-38, 1.01),
]


@pytest.mark.parametrize("base, e", FLAG_CASES)
@pytest.mark.parametrize("form", ["scalar_exponent", "array_exponent", "scalar_base"])
def test_fp_errors_as_numpy(base, e, form):
    x = np.resize(np.array([1.5, base], F), 600)
    y = np.resize(np.array([0.7, e], F), 600)
    if form == "scalar_exponent":
        args = (x, F(e))
    elif form == "array_exponent":
        args = (x, y)
    else:
        args = (F(base), y)
    want = fp_flags_raised(lambda: np.power(*args))
    got = fp_flags_raised(lambda: pe_pow(*args, quiet=False))
    assert got == want


BITS_LAYOUTS = {
    **LAYOUTS,
    "step7 flat": lambda a: np.repeat(a.ravel(), 7)[::7],
    "size1_dims": lambda a: a.reshape(1, 70, 1, 90, 1),
    "odd": lambda a: a[1:, 2:-5],
    "0-d": lambda a: a[3, 4].reshape(()),
    "empty": lambda a: a[:0],
}


@pytest.mark.parametrize("layout", list(BITS_LAYOUTS))
def test_numpy_loop_gives_numpys_bits(array_power, layout):
    """NumPy's loop, alone (one call on contiguous rows, blocks otherwise), in a
    tree, into a strided destination and into its own operand: NumPy's bits."""
    if array_power != "numpy_loop":
        pytest.skip("NumPy's loop only")
    rng = np.random.default_rng(15)
    f = BITS_LAYOUTS[layout]
    xs = rng.uniform(0.25, 4.25, (70, 90))
    xs.flat[::11] = rng.choice(SPECIALS, xs.flat[::11].size)
    ys = rng.uniform(-4, 4, (70, 90))
    ys.flat[::13] = np.round(ys.flat[::13])                 # negative bases' integer powers
    ys.flat[::17] = rng.choice(SPECIALS, ys.flat[::17].size)
    x, y = f(xs.astype(F)), f(ys.astype(F))
    with np.errstate(all="ignore"):
        # NumPy's values on contiguous memory (its SIMD loop): on reversed views
        # NumPy itself takes its scalar loop, pyet's blocks are contiguous
        want = np.power(np.ascontiguousarray(x), np.ascontiguousarray(y))
        tree = want * np.float32(2) + x
    got = pe_pow(x, y)
    assert got.tobytes() == want.tobytes()
    X, Y = pyet.asarray(x), pyet.asarray(y)
    with np.errstate(all="ignore"):
        assert np.asarray(pyet.evaluate(X ** Y * 2 + X)).tobytes() == tree.tobytes()
        big = np.full((2,) + np.shape(x), 9, F)
        pyet.asarray(big)[1] = X ** Y                        # a destination of its own layout
        assert big[1].tobytes() == want.tobytes() and (big[0] == 9).all()
        own = np.array(x, copy=True)
        T = pyet.asarray(own)
        T[...] = T ** Y
        assert own.tobytes() == want.tobytes()
