"""Integer //, % and fmod by an array divisor (the AVX-512 loop where the CPU has it: a
double division rounded toward the quotient's floor, the scalar functions for vectors with a
lane beyond 2^53) against NumPy: the whole value range, every operand layout, scalar
dividends, destinations inside sentinels, in place, and NumPy's warnings."""

import numpy as np
import pytest
from conftest import warning_kinds

import pyet

INTS = (np.int32, np.int64)
SENTINEL = 0x5A
OPS = {
    "//": (lambda a, d: a // d, np.floor_divide),
    "%": (lambda a, d: a % d, np.remainder),
    "fmod": (lambda a, d: pyet.fmod(a, d), np.fmod),
}


def values(dt, n, seed=0):
    """n values: the extremes, the doubles' exact-integer edge (int64), small ones, and
    magnitudes spread over the whole range, signs mixed."""
    ii = np.iinfo(dt)
    rng = np.random.default_rng(seed)
    edge = [ii.min, ii.min + 1, ii.max, ii.max - 1, 0, 1, -1, 2, -2, 3, -3, 7, -7]
    if dt == np.int64:
        edge += [2**53, 2**53 - 1, 2**53 + 1, -(2**53), -(2**53) + 1, -(2**53) - 1,
                 2**62 + 3, 3 * 2**52 + 1]
    bits = rng.integers(0, np.iinfo(dt).bits - 1, n)
    mags = (rng.random(n) * 2.0 ** bits).astype(dt)
    x = np.where(rng.random(n) < 0.5, mags, -mags).astype(dt)
    k = min(n, len(edge))
    x[:k] = edge[:k]
    return rng.permutation(x)


def sentinel_dst(shape, dt):
    """A destination inside sentinel bytes (step 2 along the last axis for ndim > 0)."""
    size = int(np.prod(shape)) if shape else 1
    buf = np.zeros(2 * size + 16, dt)
    buf.view(np.uint8)[:] = SENTINEL
    if not shape:
        return buf, buf[3:4].reshape(())
    return buf, buf[4:4 + 2 * size:2].reshape(shape)


def assign(expr, shape, dt):
    buf, dst = sentinel_dst(shape, dt)
    pyet.asarray(dst)[...] = expr
    inside = np.zeros(buf.size, bool)
    inside[4:4 + 2 * dst.size:2] = True
    if not shape:
        inside[:] = False
        inside[3] = True
    assert (buf.view(np.uint8).reshape(buf.size, -1)[~inside] == SENTINEL).all()
    return dst.copy()


def check(fp, fn, a, d, dt, msg=""):
    with np.errstate(all="ignore"):
        want = np.asarray(fn(a, d))
    A = pyet.asarray(a) if isinstance(a, np.ndarray) else a
    D = pyet.asarray(d) if isinstance(d, np.ndarray) else d
    with np.errstate(all="ignore"):
        got = assign(fp(A, D), want.shape, dt)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want, err_msg=msg)


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("op", list(OPS))
def test_every_small_pair(dt, op):
    # every a and every d in [-300, 300], d broadcast along the rows and the columns:
    # floor rounding, the remainder's sign, exact multiples, zero divisors
    fp, fn = OPS[op]
    v = np.arange(-300, 301).astype(dt)
    check(fp, fn, v[:, None], v[None, :], dt, "rows")
    check(fp, fn, v[None, :], v[:, None], dt, "columns")


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("op", list(OPS))
def test_whole_range(dt, op):
    # divisors of every magnitude against dividends of every magnitude; int64 vectors
    # mixing lanes past 2^53 with small ones (the scalar fix-up) and lanes right at it
    fp, fn = OPS[op]
    for seed in range(4):
        a = values(dt, 4103, seed)
        d = values(dt, 4103, seed + 10)
        check(fp, fn, a, d, dt, f"seed {seed}")
        check(fp, fn, d, a, dt, f"seed {seed}, swapped")
        small = (d % 97).astype(dt) - 48
        check(fp, fn, a, small, dt, f"seed {seed}, small divisors")
    if dt == np.int64:
        # quotients that a double division rounds across an integer without the floor
        # rounding: a just below a multiple of d, near 2^53
        d = np.array([3, 7, 641, 2**26 + 1, 99991, -3, -7, -641], dt)
        for k in (2**53 // 3, 2**52 // 7, 2**50 // 641, 2**26 - 5):
            a = (d * k - 1).astype(dt)
            check(fp, fn, a, d, dt, f"k {k}")
            check(fp, fn, -a, d, dt, f"k {k}, negated")


def layouts(v):
    """(name, array) with 2 * 3 * 37 elements, or the special shapes."""
    n = 2 * 3 * 37
    return [
        ("contiguous", v[:n].reshape(6, 37).copy()),
        ("strided", v[:3 * n:3].reshape(6, 37)),
        ("step7", v[:7 * n:7].reshape(6, 37)),
        ("negative", v[n - 1::-1].reshape(6, 37)[::-1, ::-1]),
        ("fortran", np.asfortranarray(v[:n].reshape(6, 37))),
        ("transposed", v[:n].reshape(37, 6).T),
        ("row", np.broadcast_to(v[:37], (6, 37))),
        ("column", np.broadcast_to(v[:6, None], (6, 37))),
    ]


def packed_field(v, dt):
    # a field of a packed structured array: aligned to its size, strided
    rec = np.zeros(v.size, dtype=[("pad", dt), ("x", dt), ("y", np.int8)])
    rec["x"] = v
    return rec["x"]


@pytest.mark.parametrize("dt", INTS)
def test_layouts(dt):
    v = values(dt, 3000, 1)
    w = values(dt, 3000, 2)
    w[::5] = (w[::5] % 9).astype(dt) - 4  # small divisors and some zeros
    for la, a in layouts(v):
        for ld, d in layouts(w):
            for op, (fp, fn) in OPS.items():
                check(fp, fn, a, d, dt, f"{la} // {ld} {op}")
    f = packed_field(w[:222], dt).reshape(6, 37)
    assert not f.flags.c_contiguous
    for op, (fp, fn) in OPS.items():
        check(fp, fn, v[:222].reshape(6, 37), f, dt, f"packed {op}")
        check(fp, fn, f, v[:222].reshape(6, 37) % 50 - 25, dt, f"packed dividend {op}")


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 15, 16, 17, 33, 600])
def test_lengths_and_scalar_dividends(dt, n):
    # every tail length of a vector; a Python int, a 0-d array and a constant-like
    # scalar as the dividend of an array divisor
    ii = np.iinfo(dt)
    a = values(dt, n, 3)
    d = values(dt, n, 4)
    d[::4] = (d[::4] % 5).astype(dt) - 2
    for op, (fp, fn) in OPS.items():
        check(fp, fn, a, d, dt, f"{op}")
        for s in (7, -7, 0, int(ii.min), int(ii.max)):
            check(fp, fn, dt(s), d, dt, f"{op} scalar {s}")
            check(fp, fn, np.array(s, dt), d, dt, f"{op} 0-d {s}")
    for op, (fp, fn) in OPS.items():  # 0-d both
        check(fp, fn, np.array(-7, dt), np.array(2, dt), dt, op)


@pytest.mark.parametrize("dt", INTS)
def test_in_place(dt):
    a = values(dt, 1001, 5)
    d = values(dt, 1001, 6)
    d[::3] = 3
    for op, (fp, fn) in OPS.items():
        with np.errstate(all="ignore"):
            want = fn(a, d)
        x, y = a.copy(), d.copy()
        X, Y = pyet.asarray(x), pyet.asarray(y)
        with np.errstate(all="ignore"):
            X[...] = fp(X, Y)  # into the dividend
        np.testing.assert_array_equal(x, want, err_msg=op)
        x, y = a.copy(), d.copy()
        X, Y = pyet.asarray(x), pyet.asarray(y)
        with np.errstate(all="ignore"):
            Y[...] = fp(X, Y)  # into the divisor
        np.testing.assert_array_equal(y, want, err_msg=op)


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("n", [5, 8, 13, 16, 37, 1000])
def test_warnings_are_numpys(dt, n):
    # a zero divisor anywhere (the last lane of a tail too) warns "divide by zero",
    # MIN // -1 "overflow" (not MIN % -1, nor fmod); the masked-off lanes of a tail
    # never do; a scalar MIN dividend too
    ii = np.iinfo(dt)
    rng = np.random.default_rng(n)
    base = rng.integers(-1000, 1000, n).astype(dt)
    dbase = np.where(base == 0, 3, base).astype(dt)
    cases = [("none", base, dbase)]
    for pos in (0, n // 2, n - 1):
        d = dbase.copy()
        d[pos] = 0
        cases.append((f"zero at {pos}", base, d))
        a, d = base.copy(), dbase.copy()
        a[pos], d[pos] = ii.min, -1
        cases.append((f"MIN // -1 at {pos}", a, d))
        a, d = base.copy(), dbase.copy()
        a[pos], d[(pos + 1) % n] = ii.min, -1
        cases.append((f"MIN and -1 apart at {pos}", a, d))
        d = dbase.copy()
        d[pos] = -1
        cases.append((f"MIN scalar, -1 at {pos}", dt(ii.min), d))
    for name, a, d in cases:
        for op, (fp, fn) in OPS.items():
            out = np.empty(np.shape(d), dt)
            D = pyet.asarray(out)
            A = pyet.asarray(a) if isinstance(a, np.ndarray) else a
            got = warning_kinds(lambda D=D, fp=fp, A=A, d=d: D.__setitem__(
                ..., fp(A, pyet.asarray(d))))
            assert got == warning_kinds(lambda fn=fn, a=a, d=d: fn(a, d)), f"{name} {op}"
            with np.errstate(all="ignore"):
                np.testing.assert_array_equal(out, fn(a, d), err_msg=f"{name} {op}")
    a = base.copy()
    a[-1] = ii.min
    d = dbase.copy()
    d[-1] = -1
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError, match="overflow"):
            pyet.evaluate(pyet.asarray(a) // pyet.asarray(d))
        pyet.evaluate(pyet.asarray(a) % pyet.asarray(d))
    d[0] = 0
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            pyet.evaluate(pyet.asarray(a) % pyet.asarray(d))


def test_no_float_flags_leak():
    # the double divisions' own exceptions (0/0, x/0, inexact conversions) are
    # suppressed: only NumPy's integer warnings come out
    a = np.array([0, 5, -5, 2**62, -(2**62), 0, 1, 2], np.int64)
    d = np.array([0, 0, 0, 3, 0, 0, 0, 0], np.int64)
    out = np.empty_like(a)
    D = pyet.asarray(out)
    with np.errstate(all="raise", divide="ignore"):
        D[...] = pyet.asarray(a) // pyet.asarray(d)
    np.testing.assert_array_equal(out, [0, 0, 0, 2**62 // 3, 0, 0, 0, 0])


@pytest.mark.parametrize("dt", INTS)
def test_threads_gather_the_warnings(dt):
    # a pass split among threads: each thread's warnings reach the caller once
    ii = np.iinfo(dt)
    a = values(dt, 1 << 19, 7)
    d = (values(dt, 1 << 19, 8) % 1000).astype(dt) - 500
    d[d == 0] = 3
    d[-5], a[3], d[3] = 0, ii.min, -1
    was = pyet.get_num_threads()
    pyet.set_num_threads(2)
    try:
        for op, (fp, fn) in OPS.items():
            out = np.empty_like(a)
            D = pyet.asarray(out)
            got = warning_kinds(lambda D=D, fp=fp: D.__setitem__(
                ..., fp(pyet.asarray(a), pyet.asarray(d))))
            assert got == warning_kinds(lambda fn=fn: fn(a, d)), op
            with np.errstate(all="ignore"):
                np.testing.assert_array_equal(out, fn(a, d), err_msg=op)
    finally:
        pyet.set_num_threads(was)
