"""float // , % and fmod (kernels.h pyet_fdivmod_f32_avx512 and _f64_avx512):
NumPy's npy_divmod steps with fmod's remainder computed exactly (float32: from
a double quotient; float64: q = trunc(a / b) and a fused a - q b, redone with
q one less where a / b rounded up to an integer), other lanes by libm's fmod.
NumPy's bits on every lane kind (exact quotients, quotients that round up to
an integer, huge and tiny ones, subnormal, zero, inf and NaN operands,
negative divisors, signed zeros), scalar on either side, in place, on strided,
reversed and Fortran layouts, odd lengths, 0-d and empty; NumPy's warnings,
NaN operands included."""

import warnings

import numpy as np
import pytest

import pyet

F32, F64 = np.float32, np.float64
SPECIALS = {
    F32: np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 0.5, 3.0, -3.0,
                   1e-45, -1e-45, 1.1754944e-38, -1.1754944e-38, 1e-38, 3.4028235e38,
                   -3.4028235e38, 2.0**24, 2.0**29, 2.0**29 - 32, 2.0**28 + 16, 2.0**-125,
                   2.0**-126, 7.0, 1e10, -1e10, 1e-10, 0.1, -0.7], F32),
    F64: np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 0.5, 3.0, -3.0,
                   5e-324, -5e-324, 2.0**-1022, -(2.0**-1022), 1e-310, 1.7976931348623157e308,
                   -1.7976931348623157e308, 2.0**50, 2.0**51, 2.0**51 - 1, 2.0**52, 2.0**53,
                   2.0**51 + 0.5, 2.0**-1021, 7.0, 1e100, -1e100, 1e-100, 0.1, -0.7,
                   0.30000000000000004, 2.9999999999999996], F64),
}
DTYPES = [F32, F64]
OPS = [("//", np.floor_divide, lambda x, y: x // y), ("%", np.remainder, lambda x, y: x % y),
       ("fmod", np.fmod, pyet.fmod)]
OP_IDS = ["floordiv", "remainder", "fmod"]
UINT = {F32: np.uint32, F64: np.uint64}


def bits(x):
    x = np.ascontiguousarray(x)
    return x.view(UINT[x.dtype.type])


def same_bits(got, want, dtype):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype == dtype
    bad = bits(got) != bits(want)
    assert not bad.any(), (got[bad][:5], want[bad][:5])


def random_pairs(n, rng, dtype):
    lo, hi = (-44, 38) if dtype == F32 else (-323, 307)
    mag = lambda: 10.0 ** rng.uniform(lo, hi, n)  # noqa: E731
    a = (rng.standard_normal(n) * mag()).astype(dtype)
    b = (rng.standard_normal(n) * mag()).astype(dtype)
    # quotients near integers, near the exact range's edge (2^29, 2^51), and
    # just below integers (a / b rounds up to one)
    kmax = 2**29 if dtype == F32 else 2**51
    q = n // 4
    k = rng.integers(-kmax, kmax, q).astype(dtype)
    c = rng.choice(np.array([3.0, -3.0, 0.1, 7.5, -0.3, 1e-20, 2.0], dtype), q)
    a[:q] = (k * c).astype(dtype)
    b[:q] = c
    k = rng.integers(-1000, 1000, q).astype(dtype)
    c = (rng.standard_normal(q) * 10.0 ** rng.uniform(-5, 5, q)).astype(dtype)
    a[q:2 * q] = np.nextafter((k * c).astype(dtype), 0).astype(dtype)
    b[q:2 * q] = c
    return a, b


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,npf,op", OPS, ids=OP_IDS)
def test_all_pairs_of_specials(name, npf, op, dtype):
    specials = SPECIALS[dtype]
    a, b = (x.ravel() for x in np.meshgrid(specials, specials))
    with np.errstate(all="ignore"):
        same_bits(pyet.evaluate(op(pyet.asarray(a), pyet.asarray(b))), npf(a, b), dtype)
        for s in specials:  # a scalar on either side
            s = dtype(s)
            same_bits(pyet.evaluate(op(pyet.asarray(specials), s)), npf(specials, s), dtype)
            same_bits(pyet.evaluate(op(s, pyet.asarray(specials))), npf(s, specials), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,npf,op", OPS, ids=OP_IDS)
@pytest.mark.parametrize("n", [1, 7, 8, 9, 15, 16, 17, 255, 4099])
def test_random_values_and_lengths(name, npf, op, n, dtype):
    rng = np.random.default_rng(n)
    a, b = random_pairs(max(n, 4), rng, dtype)
    a, b = a[:n], b[:n]
    with np.errstate(all="ignore"):
        same_bits(pyet.evaluate(op(pyet.asarray(a), pyet.asarray(b))), npf(a, b), dtype)
        for s in (2.0, -0.3, 1e-30, 3e30):
            s = dtype(s)
            same_bits(pyet.evaluate(op(pyet.asarray(a), s)), npf(a, s), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,npf,op", OPS, ids=OP_IDS)
def test_quotients_rounding_to_integers(name, npf, op, dtype):
    # a / b rounds to an integer where the true quotient is not one (a next
    # to k b): trunc(a / b) one too many where it rounded up
    rng = np.random.default_rng(3)
    b = (rng.standard_normal(4096) * 10.0 ** rng.uniform(-30, 30, 4096)).astype(dtype)
    p = (rng.integers(2, 2**20, 4096).astype(dtype) * b).astype(dtype)
    a = np.concatenate([p, np.nextafter(p, 0), np.nextafter(p, np.inf * p)]).astype(dtype)
    b = np.tile(b, 3)
    with np.errstate(all="ignore"):
        sel = (np.floor(a / b) == a / b) & (np.fmod(a, b) != 0)
        assert sel.sum() > 2000  # the case happens
        same_bits(pyet.evaluate(op(pyet.asarray(a), pyet.asarray(b))), npf(a, b), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,npf,op", OPS, ids=OP_IDS)
@pytest.mark.parametrize("layout", ["C", "F", "T", "step3", "reversed", "0d", "empty"])
def test_layouts_and_in_place(name, npf, op, layout, dtype):
    rng = np.random.default_rng(1)
    a, b = random_pairs(64 * 70 * 3, rng, dtype)
    a[::97] = np.nan
    b[::89] = 0.0
    pick = {"C": lambda x: x[:64 * 70].reshape(64, 70),
            "F": lambda x: np.asfortranarray(x[:64 * 70].reshape(64, 70)),
            "T": lambda x: x[:64 * 70].reshape(70, 64).T,
            "step3": lambda x: x[::3],
            "reversed": lambda x: x[:64 * 70].reshape(64, 70)[::-1, ::-1],
            "0d": lambda x: x[5:6].reshape(()),
            "empty": lambda x: x[:0]}[layout]
    x, y = pick(a), pick(b)
    with np.errstate(all="ignore"):
        want = npf(x, y)
        out = np.empty(want.shape, dtype)
        pyet.asarray(out)[...] = op(pyet.asarray(x), pyet.asarray(y))
        same_bits(out, want, dtype)
        want2 = npf(x, dtype(-2.5))
        x2 = x.copy()
        t = pyet.asarray(x2)
        t[...] = op(t, dtype(-2.5))  # in place: the destination is the operand
        same_bits(x2, want2, dtype)
        y2 = y.copy()
        u = pyet.asarray(y2)
        u[...] = op(pyet.asarray(x), u)
        same_bits(y2, want, dtype)


def warned(f):
    with warnings.catch_warnings(record=True) as w, np.errstate(all="warn"):
        warnings.simplefilter("always")
        f()
    return sorted(str(m.message).split(" encountered")[0] for m in w)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,npf,op", OPS, ids=OP_IDS)
def test_warnings_as_numpys(name, npf, op, dtype):
    # every pair (zero divisors, infinities, overflowing quotients; a NaN
    # operand warns of nothing, as NumPy's, where gcc's -fno-trapping-math had
    # made the quiet compares of the one-by-one path signaling)
    vals = SPECIALS[dtype]
    for x in vals:
        for y in vals:
            xs, ys = np.full(21, x, dtype), np.full(21, y, dtype)
            assert warned(lambda xs=xs, ys=ys: pyet.evaluate(
                op(pyet.asarray(xs), pyet.asarray(ys)))) == warned(
                lambda xs=xs, ys=ys: npf(xs, ys)), (x, y)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_and_threads(threaded, dtype):
    rng = np.random.default_rng(2)
    a, b = random_pairs(5000, rng, dtype)
    c = rng.standard_normal(5000).astype(dtype)
    with np.errstate(all="ignore"):
        want = np.floor_divide(a * 2, b) + np.remainder(c, b) - np.fmod(a, c)
        got = pyet.evaluate(pyet.asarray(a) * 2 // pyet.asarray(b)
                            + pyet.asarray(c) % pyet.asarray(b)
                            - pyet.fmod(pyet.asarray(a), pyet.asarray(c)))
    same_bits(got, want, dtype)
