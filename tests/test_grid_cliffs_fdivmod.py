"""float32 // and % (kernels.h pyet_fdivmod_f32_avx512): NumPy's npy_divmodf
steps with fmodf's remainder from an exact double quotient, other lanes by
libm's fmodf.  NumPy's bits on every lane kind (exact quotients, huge and tiny
ones, subnormal, zero, inf and NaN operands, negative divisors, signed zeros),
scalar on either side, in place, on strided, reversed and Fortran layouts, odd
lengths, 0-d and empty; NumPy's warnings (float64's too), NaN operands included."""

import warnings

import numpy as np
import pytest

import pyet

F32 = np.float32
SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 0.5, 3.0, -3.0,
                     1e-45, -1e-45, 1.1754944e-38, -1.1754944e-38, 1e-38, 3.4028235e38,
                     -3.4028235e38, 2.0**24, 2.0**29, 2.0**29 - 32, 2.0**28 + 16, 2.0**-125,
                     2.0**-126, 7.0, 1e10, -1e10, 1e-10, 0.1, -0.7], F32)
OPS = [("//", np.floor_divide, lambda x, y: x // y), ("%", np.remainder, lambda x, y: x % y)]


def bits(x):
    return np.ascontiguousarray(x).view(np.uint32)


def same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype == F32
    bad = bits(got) != bits(want)
    assert not bad.any(), (got[bad][:5], want[bad][:5])


def random_pairs(n, rng):
    mag = lambda: 10.0 ** rng.uniform(-44, 38, n)  # noqa: E731
    a = (rng.standard_normal(n) * mag()).astype(F32)
    b = (rng.standard_normal(n) * mag()).astype(F32)
    # quotients near integers and near the 2^29 edge
    k = rng.integers(-2**29, 2**29, n // 4).astype(F32)
    c = rng.choice(np.array([3.0, -3.0, 0.1, 7.5, -0.3, 1e-20, 2.0], F32), n // 4)
    a[: n // 4] = (k * c).astype(F32)
    b[: n // 4] = c
    return a, b


@pytest.mark.parametrize("name,npf,op", OPS, ids=["floordiv", "remainder"])
def test_all_pairs_of_specials(name, npf, op):
    a, b = (x.ravel() for x in np.meshgrid(SPECIALS, SPECIALS))
    with np.errstate(all="ignore"):
        same_bits(pyet.evaluate(op(pyet.asarray(a), pyet.asarray(b))), npf(a, b))
        for s in SPECIALS:  # a scalar on either side
            same_bits(pyet.evaluate(op(pyet.asarray(SPECIALS), s)), npf(SPECIALS, s))
            same_bits(pyet.evaluate(op(s, pyet.asarray(SPECIALS))), npf(s, SPECIALS))


@pytest.mark.parametrize("name,npf,op", OPS, ids=["floordiv", "remainder"])
@pytest.mark.parametrize("n", [1, 15, 16, 17, 255, 4099])
def test_random_values_and_lengths(name, npf, op, n):
    rng = np.random.default_rng(n)
    a, b = random_pairs(max(n, 4), rng)
    a, b = a[:n], b[:n]
    with np.errstate(all="ignore"):
        same_bits(pyet.evaluate(op(pyet.asarray(a), pyet.asarray(b))), npf(a, b))
        for s in (F32(2.0), F32(-0.3), F32(1e-30), F32(3e30)):
            same_bits(pyet.evaluate(op(pyet.asarray(a), s)), npf(a, s))


@pytest.mark.parametrize("name,npf,op", OPS, ids=["floordiv", "remainder"])
@pytest.mark.parametrize("layout", ["C", "F", "T", "step3", "reversed", "0d", "empty"])
def test_layouts_and_in_place(name, npf, op, layout):
    rng = np.random.default_rng(1)
    a, b = random_pairs(64 * 70 * 3, rng)
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
        out = np.empty(want.shape, F32)
        pyet.asarray(out)[...] = op(pyet.asarray(x), pyet.asarray(y))
        same_bits(out, want)
        want2 = npf(x, F32(-2.5))
        x2 = x.copy()
        t = pyet.asarray(x2)
        t[...] = op(t, F32(-2.5))  # in place: the destination is the operand
        same_bits(x2, want2)
        y2 = y.copy()
        u = pyet.asarray(y2)
        u[...] = op(pyet.asarray(x), u)
        same_bits(y2, want)


def warned(f):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        f()
    return sorted(str(m.message).split(" encountered")[0] for m in w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,npf,op", OPS, ids=["floordiv", "remainder"])
def test_warnings_as_numpys(name, npf, op, dtype):
    # every pair (zero divisors, infinities, overflowing quotients; a NaN
    # operand warns of nothing, as NumPy's, where gcc's -fno-trapping-math had
    # made the quiet compares of the one-by-one path signaling)
    vals = SPECIALS.astype(dtype)
    for x in vals:
        for y in vals:
            xs, ys = np.full(21, x, dtype), np.full(21, y, dtype)
            assert warned(lambda xs=xs, ys=ys: pyet.evaluate(
                op(pyet.asarray(xs), pyet.asarray(ys)))) == warned(
                lambda xs=xs, ys=ys: npf(xs, ys)), (x, y)


def test_fused_and_threads(threaded):
    rng = np.random.default_rng(2)
    a, b = random_pairs(5000, rng)
    c = rng.standard_normal(5000).astype(F32)
    with np.errstate(all="ignore"):
        want = np.floor_divide(a * 2, b) + np.remainder(c, b)
        got = pyet.evaluate(pyet.asarray(a) * 2 // pyet.asarray(b)
                            + pyet.asarray(c) % pyet.asarray(b))
    same_bits(got, want)
