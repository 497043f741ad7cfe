"""0-d operands inside larger passes: every op of the table, NumPy's values.

A 0-d tensor is read as one value (a scalar slot), not a block. A kernel handed such an
operand for a whole block read past its 8 bytes (float32 log, sin and cos gave garbage and
NaN in `log(t0) + a`). Each op runs on 0-d operands only, inside a pass over 3000 elements,
and on one 0-d operand beside a block, against NumPy; destinations are checked with
sentinels around them.
"""

import warnings
import zlib

import numpy as np
import pytest
from conftest import pyet_threads
from test_ops import IN_FLOAT64_LANES, rounded_from_float64, values

import pyet
from pyet._core.ops import NUMPY_LOOPS, OPS, OPS_BY_NAME

N = 3000  # several blocks, and longer than any kernel's chunk
ROWS = list(OPS)
SENTINEL = 0x5A


def value(dtype, domain, rng):
    """A 0-d array from the row's domain."""
    return np.asarray(values(dtype, domain, (), rng))


def block(dtype, domain, rng):
    return values(dtype, domain, N, rng)


def guarded(dtype, n):
    """(buffer with sentinel bytes on both sides, the n-element destination inside it)."""
    itemsize = np.dtype(dtype).itemsize
    raw = np.full((n + 16) * itemsize, SENTINEL, np.uint8)
    return raw, raw[8 * itemsize : (8 + n) * itemsize].view(dtype)


def assert_sentinels(raw, dtype):
    pad = 8 * np.dtype(dtype).itemsize
    assert (raw[:pad] == SENTINEL).all() and (raw[-pad:] == SENTINEL).all()


def assert_matches(got, ref, exact):
    assert got.dtype == ref.dtype and got.shape == ref.shape
    if exact or ref.dtype.kind != "f":
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=4 * np.finfo(ref.dtype).eps, atol=0)


def exact(row):
    """test_ops's split: NumPy's bits, or within a few ulp (libm-like functions)."""
    if row.name in ("power", "arctan2", "hypot"):
        return False
    return row.kind != "float" or row.name in (
        "sqrt", "rint", "floor", "ceil", "trunc", "deg2rad", "rad2deg")


def numpy_result(row, *args):
    # (float32 logaddexp where pyet computes it in float64 lanes: NumPy's float64
    # values rounded; its float32 loop is off by up to 1.9e5 ulp near cancellation)
    fn = rounded_from_float64(row.reference) if row.name in IN_FLOAT64_LANES else row.reference
    with np.errstate(all="ignore"):
        return np.asarray(fn(*args))


CASES = [(row, dt) for row in ROWS for dt in row.dtypes]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("row,dtype", CASES, ids=[f"{r.name}-{d}" for r, d in CASES])
def test_op_of_zero_d_operands_into_a_block(row, dtype, threads):
    """op(t0, ...) with every operand 0-d, assigned over N elements and inside a tree."""
    rng = np.random.default_rng(zlib.crc32(repr((row.name, dtype)).encode()))
    args = [value(dtype, d, rng) for d in row.domain]
    ref0 = numpy_result(row, *args)
    if ref0.dtype.name not in ("bool", "int32", "int64", "float32", "float64"):
        pytest.skip("result dtype outside pyet's set")
    tensors = [pyet.asarray(a) for a in args]
    fn = getattr(pyet, row.name)
    before = pyet.get_num_threads()
    pyet.set_num_threads(threads)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            alone = np.asarray(pyet.evaluate(fn(*tensors)))  # one element
            raw, dst = guarded(ref0.dtype, N)
            pyet.asarray(dst)[...] = fn(*tensors)
            # in a tree: the op's value goes through a block register
            mask = rng.random(N) < 0.5
            other = block(ref0.dtype, row.domain[0], rng) if ref0.dtype.kind != "b" else mask
            tree = np.asarray(pyet.evaluate(pyet.where(mask, fn(*tensors), other)))
    finally:
        pyet.set_num_threads(before)
    assert_sentinels(raw, ref0.dtype)
    assert_matches(alone, ref0, exact(row))
    # the broadcast value is the one-element value, bit for bit
    np.testing.assert_array_equal(dst, np.broadcast_to(alone, N))
    np.testing.assert_array_equal(tree, np.where(mask, alone, other))


BINARY = [(row, dt) for row in ROWS if row.arity == 2 for dt in row.dtypes]


@pytest.mark.parametrize("side", [0, 1])
@pytest.mark.parametrize("row,dtype", BINARY, ids=[f"{r.name}-{d}" for r, d in BINARY])
def test_binary_op_with_one_zero_d_operand(row, dtype, side):
    """op(t0, a) and op(a, t0): the 0-d operand beside a block of N elements."""
    rng = np.random.default_rng(zlib.crc32(repr((row.name, dtype, side)).encode()))
    args = [block(dtype, d, rng) for d in row.domain]
    args[side] = value(dtype, row.domain[side], rng)
    ref = numpy_result(row, *args)
    if ref.dtype.name not in ("bool", "int32", "int64", "float32", "float64"):
        pytest.skip("result dtype outside pyet's set")
    raw, dst = guarded(ref.dtype, N)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pyet.asarray(dst)[...] = getattr(pyet, row.name)(*[pyet.asarray(a) for a in args])
    assert_sentinels(raw, ref.dtype)
    if exact(row) or ref.dtype.kind != "f":
        assert_matches(dst, ref, True)
    else:  # transcendental: pyet's own kernels (their ulp tests are elsewhere)
        np.testing.assert_allclose(dst, ref, rtol=64 * np.finfo(ref.dtype).eps,
                                   atol=np.finfo(ref.dtype).tiny, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["log", "sin", "cos", "exp", "tanh", "sqrt"])
def test_hypothesis_failure_log_of_zero_d_plus_column(name, dtype):
    """The case hypothesis found: exp(int column) + log(0-d float32), and its kin."""
    a = np.array([[14], [6], [0]], np.int32)
    c = np.array(1.0956935, dtype)
    ref = np.exp(a) + getattr(np, name)(c)
    got = np.asarray(pyet.evaluate(pyet.exp(pyet.asarray(a)) + getattr(pyet, name)(
        pyet.asarray(c))))
    np.testing.assert_allclose(got, ref, rtol=1e-6)


CAST_FROM = {"float32": np.float64, "float64": np.float32}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", sorted(NUMPY_LOOPS) + ["F-lambda", "F-ufunc"])
def test_cast_zero_d_operand_of_a_python_called_op(fn, dtype, threads):
    """A cast 0-d tensor is bound as a scalar slot (8 bytes); an op run by calling NumPy's
    ufunc, or an F function, read n values from it (hypothesis found where(c,
    cbrt(t0.astype(float32)), 0) giving 1.8e-15 and NaN beside cbrt(2.5))."""
    v = np.array(0.625, CAST_FROM[dtype])
    if fn == "F-lambda":
        ref = np.asarray(v.astype(dtype) * 3)
        op = lambda e: pyet.F(lambda a: a * 3, e)  # noqa: E731
    elif fn == "F-ufunc":
        ref = np.negative(v.astype(dtype))
        op = lambda e: pyet.F(np.negative, e)  # noqa: E731
    else:  # a binary row (arctan2, logaddexp) takes the cast value twice
        arity = OPS_BY_NAME[fn].arity
        ref = getattr(np, fn)(*[v.astype(dtype) + (1 if fn == "arccosh" else 0)] * arity)
        op = lambda e: getattr(pyet, fn)(  # noqa: E731
            *[e + np.asarray(1, dtype) if fn == "arccosh" else e] * arity)
    n = 200_000 if threads == 2 else N
    cond = np.arange(n) % 3 != 0
    raw, dst = guarded(dtype, n)
    with pyet_threads(threads):
        pyet.asarray(dst)[...] = pyet.where(cond, op(pyet.asarray(v).astype(dtype)), 0)
    assert_sentinels(raw, dtype)
    np.testing.assert_array_equal(dst, np.where(cond, ref, 0).astype(dtype))
