"""The kernel fast paths that removed performance cliffs, against NumPy bit for bit.

A scalar exponent 2, 1, -1, 0.5, 0 (NumPy's loop computes x*x, x, 1/x, sqrt(x), 1) and
integer //, % and fmod by a scalar (a multiply-high and shifts instead of a division), on
the layouts that used to be slow: contiguous, strided, reversed, broadcast, Fortran, in
place.  No timing here: bench/bench_grid.py measures.
"""

import warnings

import numpy as np
import pytest

import pyet


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(bits(got), bits(want))


def float_values(dt):
    fi = np.finfo(dt)
    edge = [0.0, -0.0, 1.0, -1.0, 2.0, -2.5, 0.5, np.inf, -np.inf, np.nan, -np.nan,
            fi.tiny, -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal, fi.max, -fi.max,
            np.sqrt(fi.max) * 1.5, 1 / np.sqrt(fi.max)]
    rng = np.random.default_rng(1)
    rand = rng.standard_normal(600) * 10.0 ** rng.integers(-30, 30, 600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = np.concatenate([np.array(edge, dt), rand.astype(dt)])
    payload = np.array([0x7FF8000000000123], np.uint64).view(np.float64).astype(dt)
    return np.concatenate([v, payload])  # a NaN with a payload: x**1 keeps it


def layouts(base):
    """(name, array) views of base's values in the layouts that used to be slow."""
    n = base.size
    yield "contig", base
    yield "step3", np.repeat(base, 3)[::3]
    yield "reversed", base[::-1]
    m = base[: (n // 8) * 8].reshape(8, -1)
    yield "fortran", np.asfortranarray(m)
    yield "transposed", m.T
    yield "bcast_row", np.broadcast_to(base[:37], (5, 37))
    yield "bcast_col", np.broadcast_to(base[:37, None], (37, 5))
    yield "zero_d", base[3].reshape(())


FLOAT_EXPONENTS = [2, 1, -1, 0.5, 0, 3, -2, 1.5]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("k", FLOAT_EXPONENTS)
def test_float_scalar_exponent(dt, k):
    for _name, a in layouts(float_values(dt)):
        t = pyet.asarray(a)
        with np.errstate(all="ignore"):
            want = np.power(a, dt(k))
            for got in (pyet.evaluate(t ** k), pyet.evaluate(pyet.power(t, k)),
                        pyet.evaluate(np.power(t, k)), pyet.evaluate(t ** dt(k))):
                if k in (2, 1, -1, 0.5, 0):
                    assert_bits(got, want)
                else:  # libm's pow, as NumPy's (NaN payloads may differ)
                    np.testing.assert_array_max_ulp(np.asarray(got), want, maxulp=2)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("k", [2, 1, -1, 0.5, 0])
def test_float_scalar_exponent_inplace_and_fused(dt, k):
    v = float_values(dt)
    with np.errstate(all="ignore"):
        a = v.copy()
        t = pyet.asarray(a)
        t **= k
        assert_bits(a, np.power(v, dt(k)))
        # inside a tree, on a strided destination
        w = np.repeat(v, 2)[::2]
        dst = np.zeros(2 * v.size, dt)[::2]
        pyet.asarray(dst)[...] = pyet.asarray(w) ** k + 1
        assert_bits(dst, np.power(v, dt(k)) + dt(1))


def int_values(dt):
    ii = np.iinfo(dt)
    edge = [0, 1, -1, 2, -2, 3, -3, 7, -7, 8, -8, 255, -256, ii.min, ii.min + 1, ii.max,
            ii.max - 1, ii.min // 2, ii.max // 2 + 1, 1000003, -1000003]
    rng = np.random.default_rng(2)
    bits_ = rng.integers(0, 8 * np.dtype(dt).itemsize - 1, 300)
    rand = rng.integers(ii.min, ii.max, 300, dtype=dt, endpoint=True) >> bits_.astype(dt)
    return np.concatenate([np.array(edge, dt), rand])


def divisors(dt):
    ii = np.iinfo(dt)
    return [0, 1, -1, 2, -2, 3, -3, 4, 7, -7, 8, -8, 10, 1 << 20, -(1 << 20), 1000003, -1000003,
            ii.max, ii.min, ii.min + 1, ii.max // 3, -(ii.max // 3), 12345, -65536, 641]


@pytest.mark.parametrize("dt", [np.int32, np.int64])
@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
def test_int_division_by_scalar(dt, op):
    npf, pf = getattr(np, op), getattr(pyet, op, None)
    v = int_values(dt)
    for d in divisors(dt):
        for _name, a in layouts(v):
            t = pyet.asarray(a)
            with np.errstate(all="ignore"):
                want = npf(a, dt(d))
                got = [pyet.evaluate(npf(t, dt(d))), pyet.evaluate(npf(t, d))]
                if pf is not None:
                    got.append(pyet.evaluate(pf(t, d)))
                if op == "floor_divide":
                    got.append(pyet.evaluate(t // d))
                if op == "remainder":
                    got.append(pyet.evaluate(t % d))
            for g in got:
                assert_bits(g, want)


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_int_division_every_edge_pair(dt):
    """Every edge value against every divisor, in one block each."""
    v = int_values(dt)
    for d in divisors(dt) + list(v[:21]):
        with np.errstate(all="ignore"):
            assert_bits(pyet.evaluate(pyet.asarray(v) // d), v // dt(d))
            assert_bits(pyet.evaluate(pyet.asarray(v) % d), v % dt(d))


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_int_division_inplace(dt):
    v = int_values(dt)
    for d in (7, -7, 8, -1, 0):
        with np.errstate(all="ignore"):
            a = v.copy()
            t = pyet.asarray(a)
            t //= d
            assert_bits(a, v // dt(d))
            a = v.copy()
            t = pyet.asarray(a)
            t %= d
            assert_bits(a, v % dt(d))


@pytest.mark.parametrize("dt", [np.int32, np.int64])
@pytest.mark.parametrize("k", [0, 1, 2, 3, 5, 8, 31, 62, 63, 64, 100])
def test_int_scalar_exponent(dt, k):
    v = int_values(dt)
    for _name, a in layouts(v):
        t = pyet.asarray(a)
        want = np.power(a, dt(k))
        assert_bits(pyet.evaluate(t ** k), want)
        assert_bits(pyet.evaluate(pyet.power(t, k)), want)
        assert_bits(pyet.evaluate(np.power(t, dt(k))), want)
    a = v.copy()
    t = pyet.asarray(a)
    t **= k
    assert_bits(a, np.power(v, dt(k)))
