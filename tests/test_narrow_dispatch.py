"""The memory-bound ("narrow") kernels, bit for bit against NumPy.

On Intel CPUs with AVX-512 they run at 512 bits and peel their first elements up to a
64-byte boundary (kernels.h, pyet_kernel_narrow512); elsewhere, or with PYET_NO_NARROW512=1,
at 256 bits.  Every op and dtype is checked at lengths around the vector widths and the peel
(0 .. 4099 elements), on operands and destinations that start 0..63 bytes into a line (also
off their itemsize), on packed-field (strided, unaligned) operands, with scalar operands,
and with the bytes around the destination checked untouched.  The last test runs the module
again with the 512-bit loops turned off.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

import pyet

LENGTHS = (0, 1, 15, 16, 17, 63, 64, 65, 1000, 4099)
# byte offsets of (first operand, second operand, destination) into their buffers
OFFSETS = ((0, 0, 0), (16, 16, 16), (48, 48, 48), (4, 36, 20), (1, 17, 63), (63, 2, 5))
DTYPES = (np.bool_, np.int32, np.int64, np.float32, np.float64)
SENTINEL = 0xA5

UNARY = ("negative", "positive", "absolute", "square", "sign", "invert", "isnan", "isinf",
         "isfinite", "floor", "ceil", "trunc", "rint", "reciprocal", "deg2rad", "rad2deg")
BINARY = ("add", "subtract", "multiply", "maximum", "minimum", "less", "less_equal", "greater",
          "greater_equal", "equal", "not_equal", "bitwise_and", "bitwise_or", "bitwise_xor",
          "divide", "copysign")


def values(dtype, n, seed):
    """n values of dtype with the edge cases (signed zeros, inf, NaN, MIN/MAX) mixed in."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(n) < 0.5
    if dt.kind == "i":
        info = np.iinfo(dt)
        v = rng.integers(-1000, 1000, n).astype(dt)
        edges = np.array([0, 1, -1, info.min, info.max, 7, -7], dt)
    else:
        v = (rng.standard_normal(n) * 100).astype(dt)
        edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 0.5, -2.5, 1e-30], dt)
    k = min(n, len(edges))
    v[rng.choice(n, k, replace=False)] = edges[:k] if n else edges[:0]
    return v


def placed(arr, offset):
    """A copy of arr starting offset bytes into a 64-byte aligned buffer (aligned or not)."""
    nbytes = arr.size * arr.itemsize
    raw = np.empty(nbytes + 192, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    out = raw[start:start + nbytes].view(arr.dtype)
    out[...] = arr
    return out


def destination(dtype, n, offset):
    """(dst, buf, start): dst starts offset bytes into a line of buf, which holds sentinels."""
    itemsize = np.dtype(dtype).itemsize
    buf = np.full(n * itemsize + 192, SENTINEL, np.uint8)
    start = (-buf.ctypes.data) % 64 + offset
    return buf[start:start + n * itemsize].view(dtype), buf, start


def assert_same_bits(got, ref):
    """Equal bit for bit; a NaN needs only to be a NaN (payloads depend on operand order)."""
    assert got.dtype == ref.dtype and got.shape == ref.shape
    if ref.dtype.kind == "f":
        nan = np.isnan(ref)
        np.testing.assert_array_equal(np.isnan(got), nan)
        u = np.uint32 if ref.dtype.itemsize == 4 else np.uint64
        bad = np.flatnonzero((got.view(u) != ref.view(u)) & ~nan)
        assert bad.size == 0, (f"{bad.size} differ, first at {bad[0]}: "
                               f"{got[bad[0]]!r} != {ref[bad[0]]!r}")
    else:
        np.testing.assert_array_equal(got, ref)


def check_into(expr, ref, offset):
    """Evaluate expr into a destination offset bytes into a line; compare, check the sentinels."""
    dst, buf, start = destination(ref.dtype, ref.size, offset)
    pyet.asarray(dst)[...] = expr
    assert_same_bits(dst, ref)
    end = start + ref.nbytes
    assert (buf[:start] == SENTINEL).all() and (buf[end:] == SENTINEL).all(), "wrote outside dst"


def numpy_ref(fn, *args):
    with np.errstate(all="ignore"):
        return np.asarray(fn(*args))


def supported(name, *dtypes):
    """Whether NumPy has the loop, with a result dtype pyet has (bool squared is int8)."""
    try:
        with np.errstate(all="ignore"):
            res = getattr(np, name)(*[np.ones(1, d) for d in dtypes])
    except TypeError:
        return False
    return res.dtype in [np.dtype(d) for d in DTYPES]


@pytest.mark.parametrize(("name", "dtype"), [
    pytest.param(n, d, id=f"{n}-{np.dtype(d).name}")
    for n in UNARY for d in DTYPES if supported(n, d)])  # (the pairs NumPy has a loop for)
def test_unary(name, dtype):
    for n in LENGTHS:
        x = values(dtype, n, n)
        ref = numpy_ref(getattr(np, name), x)
        for oa, _, od in OFFSETS:
            with np.errstate(all="ignore"):
                check_into(getattr(pyet, name)(pyet.asarray(placed(x, oa))), ref, od)


@pytest.mark.parametrize(("name", "dtype"), [
    pytest.param(n, d, id=f"{n}-{np.dtype(d).name}")
    for n in BINARY for d in DTYPES if supported(n, d, d)])
def test_binary(name, dtype):
    fn, op = getattr(np, name), getattr(pyet, name)
    for n in LENGTHS:
        x, y = values(dtype, n, n), values(dtype, n, n + 1)
        if n > 2:
            y[::3] = x[::3]  # ties: equal values, -0.0 against 0.0 ...
        ref = numpy_ref(fn, x, y)
        for oa, ob, od in OFFSETS:
            with np.errstate(all="ignore"):
                check_into(op(pyet.asarray(placed(x, oa)), pyet.asarray(placed(y, ob))), ref, od)
        # a scalar operand on either side (loaded once)
        s = values(dtype, 3, 99)[-1]
        for expr, ref in ((op(s, pyet.asarray(placed(y, 16))), numpy_ref(fn, s, y)),
                          (op(pyet.asarray(placed(x, 16)), s), numpy_ref(fn, x, s))):
            with np.errstate(all="ignore"):
                check_into(expr, ref, 16)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_where(dtype):
    for n in LENGTHS:
        c, x, y = values(np.bool_, n, n), values(dtype, n, n + 1), values(dtype, n, n + 2)
        ref = np.where(c, x, y)
        for oa, ob, od in OFFSETS:
            C, X, Y = (pyet.asarray(placed(v, o)) for v, o in ((c, od), (x, oa), (y, ob)))
            check_into(pyet.where(C, X, Y), ref, od)
        s = values(dtype, 3, 5)[-1]
        check_into(pyet.where(pyet.asarray(c), pyet.asarray(x), s), np.where(c, x, s), 48)


CASTS = [(a, b) for a in DTYPES for b in DTYPES
         if a != b and np.can_cast(a, b, "same_kind")]


@pytest.mark.parametrize("src,dst", CASTS,
                         ids=[f"{np.dtype(a).name}-{np.dtype(b).name}" for a, b in CASTS])
def test_cast(src, dst):
    for n in LENGTHS:
        x = values(src, n, n)
        if np.dtype(src).kind == "f" and np.dtype(dst).kind != "f":
            x = np.nan_to_num(x)
        ref = x.astype(dst)
        for oa, _, od in OFFSETS:
            check_into(pyet.asarray(placed(x, oa)).astype(dst), ref, od)


# the fused patterns of rewrite.py (one kernel each), as NumPy rounds them unfused
FUSED = {
    "axpy": lambda x, y, z, s, t: x + s * y,
    "sub_scaled": lambda x, y, z, s, t: x - s * y,
    "scale_shift": lambda x, y, z, s, t: s * x + t,
    "mul_shift": lambda x, y, z, s, t: x * y + t,
    "scale_sum": lambda x, y, z, s, t: s * (x + y),
    "scale_axpy": lambda x, y, z, s, t: s * (x + t * y),
    "axpby": lambda x, y, z, s, t: s * x + t * y,
    "muladd": lambda x, y, z, s, t: x * y + z,
    "mulsub": lambda x, y, z, s, t: x * y - z,
    "submul": lambda x, y, z, s, t: z - x * y,
    "mul_add_mul": lambda x, y, z, s, t: x * y + z * x,
    "mul_sub_mul": lambda x, y, z, s, t: x * y - y * z,
    "scale_mul": lambda x, y, z, s, t: (s * x) * y,
    "ema_mul": lambda x, y, z, s, t: s * x + (t * y) * z,
    "ema_prod": lambda x, y, z, s, t: s * x + t * (y * z),
}


@pytest.mark.parametrize("dtype", DTYPES[1:], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(FUSED))
def test_fused(name, dtype):
    f = FUSED[name]
    s, t = np.dtype(dtype).type(3), np.dtype(dtype).type(-2)
    for n in LENGTHS:
        x, y, z = (values(dtype, n, n + k) for k in range(3))
        ref = numpy_ref(f, x, y, z, s, t)
        for oa, ob, od in OFFSETS:
            X, Y, Z = (pyet.asarray(placed(v, o)) for v, o in ((x, oa), (y, ob), (z, od)))
            with np.errstate(all="ignore"):
                check_into(f(X, Y, Z, s, t), ref, od)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_packed_fields(dtype):
    """Packed-record fields: strided operands and a strided destination off their itemsize."""
    n = 4099
    rec = np.zeros(n, np.dtype([("c", "u1"), ("x", dtype), ("y", dtype)]))
    rec["x"], rec["y"] = values(dtype, n, 1), values(dtype, n, 2)
    x, y = rec["x"], rec["y"]
    X, Y = pyet.asarray(x), pyet.asarray(y)
    for name in ("add", "maximum", "less", "not_equal", "bitwise_xor", "absolute", "negative"):
        arity = 2 if name in BINARY else 1
        if not supported(name, *[dtype] * arity):
            continue
        ref = numpy_ref(getattr(np, name), *(x, y)[:arity])
        expr = getattr(pyet, name)(*(X, Y)[:arity])
        check_into(expr, ref, 5)
        out = np.zeros(n, np.dtype([("c", "u1"), ("z", ref.dtype)]))
        out["c"] = SENTINEL
        pyet.asarray(out["z"])[...] = expr
        assert_same_bits(out["z"].copy(), ref)
        assert (out["c"] == SENTINEL).all()
    check_into(pyet.where(X < Y, X, Y) if dtype != np.bool_ else pyet.where(X, X, Y),
               np.where(x < y, x, y) if dtype != np.bool_ else np.where(x, x, y), 7)


def test_in_place():
    """The destination is an operand (the kernels' out == in case)."""
    for n in LENGTHS:
        for dtype in DTYPES[1:]:
            x, y = values(dtype, n, n), values(dtype, n, n + 1)
            a, b = placed(x, 16), placed(y, 48)
            A, B = pyet.asarray(a), pyet.asarray(b)
            with np.errstate(all="ignore"):
                A[...] = A + B
                ref = x + y
            assert_same_bits(a, ref)


@pytest.mark.skipif(os.environ.get("PYET_NO_NARROW512") not in (None, "", "0"),
                    reason="already running with the 512-bit loops off")
def test_256_bit_loops():
    """This module again, with the 512-bit loops turned off (the path of AMD and older CPUs)."""
    env = dict(os.environ, PYET_NO_NARROW512="1")
    r = subprocess.run([sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-W", "ignore", __file__, "-k", "not test_256_bit_loops"],
                       env=env, capture_output=True, text=True, cwd=os.path.dirname(__file__))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
