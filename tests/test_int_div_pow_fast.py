"""Integer //, %, fmod and ** by a scalar (the AVX-512 loops where the CPU has them, the
portable ones for the special divisors) against NumPy: every divisor class, both widths,
every operand layout, destinations inside sentinels, NumPy's warnings."""


import numpy as np
import pytest
from conftest import warning_kinds

import pyet

INTS = (np.int32, np.int64)
SENTINEL = 0x5A


def divisors(dt):
    ii = np.iinfo(dt)
    return [1, -1, 2, 4, 1 << 20, -2, -4, 7, -3, 641, -999_999, ii.max, ii.min, ii.min + 1, 0]


def values(dt, n, seed=0):
    """n values: the extremes, small ones near 0 and the whole range."""
    ii = np.iinfo(dt)
    rng = np.random.default_rng(seed)
    edge = np.array([ii.min, ii.min + 1, ii.max, ii.max - 1, 0, 1, -1, 2, -2, 3, -3, 7, -7,
                     6, -6, 21, -21, ii.min // 2, ii.max // 2], dt)
    wide = rng.integers(ii.min, ii.max, n, dtype=dt, endpoint=True)
    small = rng.integers(-50, 50, n).astype(dt)
    x = np.where(rng.random(n) < 0.5, wide, small)
    x[:min(n, edge.size)] = edge[:min(n, edge.size)]
    return rng.permutation(x)


def layouts(dt):
    """(name, array): 5003 elements (past a block, odd tails) or the special shapes."""
    v = values(dt, 3 * 5003 + 7)
    return [
        ("contiguous", v[:5003].copy()),
        ("short", v[:37].copy()),
        ("strided", v[::3][:5003]),
        ("negative_step", v[5003:0:-1]),
        ("fortran", np.asfortranarray(v[:70 * 71].reshape(70, 71))),
        ("transposed", v[:70 * 71].reshape(70, 71).T),
        ("broadcast", np.broadcast_to(v[:71], (70, 71))),
        ("zero_d", np.array(v[5], dt)),
        ("zero_d_min", np.array(np.iinfo(dt).min, dt)),
        ("empty", v[:0].copy()),
        ("empty_2d", np.empty((3, 0), dt)),
    ]


def sentinel_dst(shape, dt):
    """A destination inside a buffer of sentinel bytes (step 2 on the last axis for ndim > 0)."""
    size = int(np.prod(shape)) if shape else 1
    buf = np.full(2 * size + 16, 0, dt)
    buf.view(np.uint8)[:] = SENTINEL
    if not shape:
        return buf, buf[3:4].reshape(())
    return buf, buf[4:4 + 2 * size:2].reshape(shape)


def check_sentinels(buf, dst):
    outside = np.ones(buf.size, bool)
    outside[_offsets(buf, dst)] = False
    assert (buf.view(np.uint8).reshape(buf.size, -1)[outside] == SENTINEL).all()


def _offsets(buf, dst):
    base = dst.__array_interface__["data"][0] - buf.__array_interface__["data"][0]
    if dst.ndim == 0:
        return np.array([base // buf.itemsize], np.intp)
    idx = np.indices(dst.shape).reshape(dst.ndim, -1)
    strides = np.array(dst.strides, np.intp).reshape(-1, 1)
    return (base + (strides * idx).sum(0, dtype=np.intp)) // buf.itemsize


def assign(expr, shape, dt):
    buf, dst = sentinel_dst(shape, dt)
    D = pyet.asarray(dst)
    D[...] = expr
    check_sentinels(buf, dst)
    return dst.copy()


OPS = {
    "//": (lambda a, d: a // d, lambda a, d: np.floor_divide(a, d)),
    "%": (lambda a, d: a % d, lambda a, d: np.remainder(a, d)),
    "fmod": (lambda a, d: pyet.fmod(a, d), lambda a, d: np.fmod(a, d)),
    # divmod-like trees: both results of one divisor in one pass
    "q*d+r": (lambda a, d: (a // d) * d + a % d,
              lambda a, d: np.floor_divide(a, d) * d + np.remainder(a, d)),
    "q-3r": (lambda a, d: a // d - 3 * (a % d),
             lambda a, d: np.floor_divide(a, d) - 3 * np.remainder(a, d)),
}


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("op", list(OPS))
def test_division_by_every_divisor_class_on_every_layout(dt, op):
    fp, fn = OPS[op]
    for lname, a in layouts(dt):
        A = pyet.asarray(a)
        for d in divisors(dt):
            d = dt(d)
            with np.errstate(all="ignore"):
                want = np.asarray(fn(a, d))
                got = assign(fp(A, d), a.shape, dt)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, err_msg=f"{lname} {op} {d!r}")


@pytest.mark.parametrize("dt", INTS)
def test_floor_and_remainder_signs_exhaustive_small(dt):
    # every a in [-300, 300] against every divisor in [-40, 40]: floor rounding, the
    # remainder's sign (the divisor's), exact multiples
    a = np.arange(-300, 301).astype(dt)
    A = pyet.asarray(a)
    for d in range(-40, 41):
        if d == 0:
            continue
        for op in ("//", "%", "fmod"):
            fp, fn = OPS[op]
            np.testing.assert_array_equal(assign(fp(A, dt(d)), a.shape, dt), fn(a, dt(d)),
                                          err_msg=f"{op} {d}")


@pytest.mark.parametrize("dt", INTS)
def test_random_divisors_over_the_whole_range(dt):
    ii = np.iinfo(dt)
    rng = np.random.default_rng(5)
    a = values(dt, 4099, seed=3)
    A = pyet.asarray(a)
    for d in rng.integers(ii.min, ii.max, 60, dtype=dt):
        if d == 0:
            continue
        for op in ("//", "%", "fmod"):
            fp, fn = OPS[op]
            np.testing.assert_array_equal(assign(fp(A, d), a.shape, dt), fn(a, d),
                                          err_msg=f"{op} {d}")


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("op", ["//", "%", "fmod"])
@pytest.mark.parametrize("d", [0, -1, 3, -3, 1])
def test_warnings_are_numpys(dt, op, d):
    # division by zero gives 0 and "divide by zero encountered"; MIN // -1 gives MIN and
    # "overflow encountered"; the rest are quiet
    fp, fn = OPS[op]
    a = values(dt, 1000)
    A = pyet.asarray(a)
    out = np.empty_like(a)
    D = pyet.asarray(out)
    want = warning_kinds(lambda: fn(a, dt(d)))
    got = warning_kinds(lambda: D.__setitem__(..., fp(A, dt(d))))
    assert got == want
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, fn(a, dt(d)))
    without_min = np.where(a == np.iinfo(dt).min, 5, a).astype(dt)
    assert warning_kinds(lambda: D.__setitem__(..., fp(pyet.asarray(without_min), dt(d)))) == \
        warning_kinds(lambda: fn(without_min, dt(d)))


@pytest.mark.parametrize("dt", INTS)
def test_array_divisors_warn_as_numpy(dt):
    ii = np.iinfo(dt)
    a = np.array([ii.min, -7, 0, 7, ii.min + 1, 5], dt)
    b = np.array([-1, 0, 3, -1, 2, 2], dt)
    A, B = pyet.asarray(a), pyet.asarray(b)
    for op in ("//", "%", "fmod"):
        fp, fn = OPS[op]
        out = np.empty_like(a)
        D = pyet.asarray(out)
        assert warning_kinds(lambda D=D, fp=fp: D.__setitem__(..., fp(A, B))) == \
            warning_kinds(lambda fn=fn: fn(a, b))
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(out, fn(a, b))
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            pyet.evaluate(A // 0)
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError, match="overflow"):
            pyet.evaluate(A // -1)
        pyet.evaluate(A % -1)  # MIN % -1 is 0, quietly


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("b", range(9))
def test_power_by_scalar_on_every_layout(dt, b):
    # products wrap as NumPy's
    for lname, a in layouts(dt):
        A = pyet.asarray(a)
        with np.errstate(all="ignore"):
            want = np.power(a, dt(b))
        got = assign(A ** b, a.shape, dt)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=f"{lname} ** {b}")


@pytest.mark.parametrize("dt", INTS)
def test_large_exponents_wrap_as_numpy(dt):
    a = values(dt, 1003)
    A = pyet.asarray(a)
    for b in (9, 16, 31, 62, 63, 64, 1000, np.iinfo(dt).max):
        np.testing.assert_array_equal(assign(A ** dt(b), a.shape, dt), np.power(a, dt(b)),
                                      err_msg=f"** {b}")


@pytest.mark.parametrize("dt", INTS)
def test_negative_integer_exponents_are_refused_as_numpy(dt):
    a = values(dt, 10)
    A = pyet.asarray(a)
    out = np.zeros_like(a)
    D = pyet.asarray(out)
    msg = "Integers to negative integer powers are not allowed."
    with pytest.raises(ValueError, match=msg):
        np.power(a, dt(-1))
    for b in (-1, -2, -3):
        with pytest.raises(ValueError, match=msg):
            D[...] = A ** b
    e = A ** pyet.asarray(np.array([2, -1] * 5, dt))
    with pytest.raises(ValueError, match=msg):
        D[...] = e
    assert (out == 0).all()  # nothing written


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("top", [1, 3, 40, 200])
def test_power_by_an_array_of_exponents_on_every_layout(dt, top):
    # square and multiply in lanes (AVX-512) until each lane's exponent is
    # spent: the products wrap as NumPy's, exponents 0 to top - 1, tails of
    # every lane count, a scalar base too
    rng = np.random.default_rng(top)
    for lname, a in layouts(dt):
        exps = rng.integers(0, top, np.shape(a)).astype(dt)
        exps.reshape(-1)[:3] = [0, top - 1, 1][:exps.size]
        A, E = pyet.asarray(a), pyet.asarray(exps)
        with np.errstate(all="ignore"):
            want = np.power(a, exps)
        np.testing.assert_array_equal(assign(A ** E, np.shape(want), dt), want,
                                      err_msg=f"{lname} ** array below {top}")
    for n in (1, 7, 8, 9, 15, 16, 17, 1001):
        exps = rng.integers(0, top, n).astype(dt)
        for base in (3, -2, np.iinfo(dt).min):
            with np.errstate(all="ignore"):
                want = np.power(dt(base), exps)
            np.testing.assert_array_equal(assign(dt(base) ** pyet.asarray(exps), (n,), dt),
                                          want, err_msg=f"{base} ** array, n={n}")
