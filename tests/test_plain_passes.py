"""Passes whose operand rows all lie where the kernels read and write them run
through run_plain (a table of operand slots per instruction, no per-block
gathers or folds).  Its values against run_block's (``set_plain_passes``,
bit for bit) and NumPy's, around block edges, with casts, scalars, several
destinations of one plan and two threads; destinations between sentinels."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet
from pyet._core import core

SENTINEL = 0x5A


def _framed(shape, dtype):
    # a destination with sentinel bytes on both sides
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.full(n + 128, SENTINEL, np.uint8)
    return raw, raw[64:64 + n].view(dtype).reshape(shape)


def _each_path(run):
    """run() under run_plain, then under run_block: its two results."""
    results = []
    before = core.set_plain_passes(True)
    try:
        for plain in (True, False):
            core.set_plain_passes(plain)
            results.append(run())
    finally:
        core.set_plain_passes(before)
    return results


def _both_paths(build, shape, dtype):
    """build() -> tree, evaluated into a framed destination on both paths,
    bit for bit the same; returns the plain path's values."""

    def run():
        raw, out = _framed(shape, dtype)
        pyet.asarray(out)[...] = build()
        assert (raw[:64] == SENTINEL).all() and (raw[-64:] == SENTINEL).all()
        return out.copy()

    got = _each_path(run)
    np.testing.assert_array_equal(got[0].view(np.uint8), got[1].view(np.uint8))
    return got[0]


TREES = {
    "x*y + y*z - z": (lambda x, y, z: x * y + y * z - z, lambda x, y, z: x * y + y * z - z),
    "(x+y)*(y-z)": (lambda x, y, z: (x + y) * (y - z), lambda x, y, z: (x + y) * (y - z)),
    "where": (lambda x, y, z: pyet.where(x > y, x - z, y * 2),
              lambda x, y, z: np.where(x > y, x - z, y * 2)),
    "scalars": (lambda x, y, z: 2 * x + (y - 3) * z,
                lambda x, y, z: 2 * x + (y - 3) * z),
    "x+y+z": (lambda x, y, z: x + y + z, lambda x, y, z: x + y + z),
}


@pytest.mark.parametrize("name", sorted(TREES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("shape", [(1,), (255,), (256,), (257,), (511,), (513,),
                                   (3, 700), (2, 3, 129), (0, 5)])
def test_trees_on_contiguous_rows(name, dtype, shape):
    rng = np.random.default_rng(len(shape) * 1000 + shape[-1])
    x, y, z = (rng.integers(-50, 50, shape).astype(dtype) for _ in range(3))
    pe, ref = TREES[name]
    X, Y, Z = (pyet.asarray(a) for a in (x, y, z))
    want = ref(x, y, z).astype(dtype)
    got = _both_paths(lambda: pe(X, Y, Z), shape, dtype)
    np.testing.assert_array_equal(got, want)


def test_casts_between_kernels():
    rng = np.random.default_rng(1)
    x = rng.integers(-100, 100, 1037).astype(np.int32)
    y = rng.random(1037).astype(np.float32)
    z = rng.random(1037)
    X, Y, Z = (pyet.asarray(a) for a in (x, y, z))
    got = _both_paths(lambda: (X * 2 + Y) * Z - X, (1037,), np.float64)
    np.testing.assert_array_equal(got, (x * 2 + y) * z - x)
    got = _both_paths(lambda: X * Y + 1, (1037,), np.float32)
    np.testing.assert_array_equal(got, (x * y + 1).astype(np.float32))


def test_a_destination_that_is_a_leaf():
    # in place: w = -eta * (g + lam * w) reads and writes w's rows
    rng = np.random.default_rng(2)
    w0, g = rng.random(2000), rng.random(2000)

    def run():
        w = w0.copy()
        W, G = pyet.asarray(w), pyet.asarray(g)
        W[...] = W - 0.1 * (G + 0.01 * W)
        return w

    results = _each_path(run)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], w0 - 0.1 * (g + 0.01 * w0))


def test_several_destinations_of_one_plan():
    # one multi-output pass: the second statement reads the first's block
    rng = np.random.default_rng(3)
    x, y = rng.random(1500), rng.random(1500)

    def run():
        a, b = np.zeros(1500), np.zeros(1500)
        A, B, X, Y = (pyet.asarray(v) for v in (a, b, x, y))
        plan = pyet.EvalPlan()
        plan.assign(A, X * Y + X)
        plan.assign(B, A * 2 - Y * Y)
        plan.run()
        return a, b

    results = _each_path(run)
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    np.testing.assert_array_equal(results[0][0], x * y + x)
    np.testing.assert_array_equal(results[0][1], (x * y + x) * 2 - y * y)


@pytest.mark.parametrize("dtype, n", [(np.float64, 1 << 20), (np.float32, 1 << 21)])
def test_two_threads_and_passes_from_memory(dtype, n):
    # 48 MiB of operands: a float tree from memory, blocks of 512 bytes a
    # register (64 float64, 128 float32); two threads split the work items
    rng = np.random.default_rng(4)
    x, y, z = (rng.random(n).astype(dtype) for _ in range(3))
    X, Y, Z = (pyet.asarray(a) for a in (x, y, z))
    before = pyet.get_num_threads()
    try:
        for threads in (1, 2):
            pyet.set_num_threads(threads)
            got = _both_paths(lambda: X * Y + Y * Z - Z, (n,), dtype)
            np.testing.assert_array_equal(got, x * y + y * z - z)
    finally:
        pyet.set_num_threads(before)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 1200), st.lists(st.sampled_from("+-*"), min_size=1, max_size=6),
       st.sampled_from([np.float32, np.float64, np.int64]))
def test_random_chains(n, ops, dtype):
    rng = np.random.default_rng(n)
    leaves = [rng.integers(-9, 9, n).astype(dtype) for _ in range(len(ops) + 1)]
    tensors = [pyet.asarray(a) for a in leaves]

    def chain(vals):
        acc = vals[0]
        for op, v in zip(ops, vals[1:], strict=True):
            acc = {"+": acc + v, "-": acc - v, "*": acc * (v + 1)}[op]
        return acc

    got = _both_paths(lambda: chain(tensors), (n,), dtype)
    np.testing.assert_array_equal(got, chain(leaves).astype(dtype))


@pytest.mark.parametrize("plain", [True, False])
def test_floating_point_flags_over_many_blocks(plain):
    # run_plain calls a kernel's loops straight after its first block
    # (pyet_kernel_routed); integer divisions keep raising their flags on
    # every block, comparisons of NaN stay quiet on every block
    n = 5000
    a = np.arange(n, dtype=np.int64)
    b = np.ones(n, np.int64)
    b[-1] = 0  # a zero in the last block only
    A, B = pyet.asarray(a), pyet.asarray(b)
    out = np.zeros(n, np.int64)
    before = core.set_plain_passes(plain)
    try:
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
            pyet.asarray(out)[...] = (A + 1) // B + A
        x = np.full(n, np.nan)
        X = pyet.asarray(x)
        flags = np.zeros(n, bool)
        with np.errstate(invalid="raise"):
            pyet.asarray(flags)[...] = (X + 1 < X * 2) | (X != X)
        assert flags.all()
    finally:
        core.set_plain_passes(before)


def _rows_apart(shape, dtype, rng, cut=3):
    """An array of ``shape`` whose rows lie ``cut`` items apart inside a wider
    one (rows that cannot merge), values of dtype with negatives and zeros."""
    wide = rng.integers(-60, 60, shape[:-1] + (shape[-1] + cut,))
    if np.dtype(dtype) == np.bool_:
        wide = wide > 0
    return wide.astype(dtype)[..., 1:1 + shape[-1]]


ONE_OP = {
    "~a": (lambda a, b: ~a, lambda a, b: ~a, ("bool", "int32", "int64")),
    "abs": (lambda a, b: abs(a), np.abs, ("float32", "int64")),
    "log": (lambda a, b: pyet.log(a), np.log, ("float32", "float64")),
    "a+b": (lambda a, b: a + b, np.add, ("float32", "float64", "int32")),
    "a*2.5": (lambda a, b: a * 2.5, lambda a, b: a * 2.5, ("float64",)),
    "2-a": (lambda a, b: 2 - a, lambda a, b: 2 - a, ("float32", "int64")),
    "a<b": (lambda a, b: a < b, np.less, ("float64", "int32")),
    "a&b": (lambda a, b: a & b, np.bitwise_and, ("bool", "int64")),
}


@pytest.mark.parametrize("name", sorted(ONE_OP))
@pytest.mark.parametrize("shape", [(179, 181), (3, 50, 200), (40, 128), (9, 512), (2, 700)])
def test_one_op_on_rows_not_merged(name, shape):
    # one kernel a row (plain_rows): operands whose rows lie apart, a scalar
    # either side, outer dimensions stepped; NumPy's bits, run_block's bits,
    # the destination framed by sentinels
    pe, ref, dtypes = ONE_OP[name]
    for dtype in dtypes:
        rng = np.random.default_rng(shape[-1])
        a, b = _rows_apart(shape, dtype, rng), _rows_apart(shape, dtype, rng, cut=5)
        with np.errstate(all="ignore"):
            want = np.asarray(ref(a, b))
        with np.errstate(all="ignore"):
            got = _both_paths(lambda a=a, b=b: pe(pyet.asarray(a), pyet.asarray(b)), shape,
                              want.dtype)
        if name == "log":  # (pyet's own log: within 2 ulp of NumPy's, its NaNs and infs)
            np.testing.assert_array_max_ulp(got, want, 2)
        else:
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8), err_msg=name)


def test_one_op_rows_into_rows_apart_and_in_place():
    rng = np.random.default_rng(11)
    a = _rows_apart((150, 300), np.float64, rng)
    big = np.full((152, 310), -7.0)
    dst = big[1:-1, 4:304]  # dst's rows apart too, between sentinels
    pyet.asarray(dst)[...] = pyet.asarray(a) * 3.0
    np.testing.assert_array_equal(dst, a * 3.0)
    assert (big[0] == -7).all() and (big[-1] == -7).all()
    assert (big[:, :4] == -7).all() and (big[:, 304:] == -7).all()
    # in place: each row read and written where it lies
    want = ~_rows_apart((120, 200), np.int32, np.random.default_rng(1))
    x = _rows_apart((120, 200), np.int32, np.random.default_rng(1))
    X = pyet.asarray(x)
    X[...] = ~X
    np.testing.assert_array_equal(x, want)
    # a cast of such rows
    i = _rows_apart((100, 257), np.int32, rng)
    out = np.zeros((100, 257))
    pyet.asarray(out)[...] = pyet.asarray(i) + 0.5
    np.testing.assert_array_equal(out, i + 0.5)


@pytest.mark.parametrize("threads", [1, 2])
def test_one_op_rows_on_threads_and_their_flags(threads):
    # rows split over chunks (each starting mid-array), plain_rows against
    # run_block; a kernel's divide-by-zero flag raised on the last row only
    # reaches np.errstate, and stays quiet under ignore
    rng = np.random.default_rng(5)
    a = _rows_apart((4000, 300), np.float64, rng)  # 1.2e6 elements: two threads take it
    b = np.abs(_rows_apart((4000, 300), np.float64, rng, cut=5)) + 1
    b[3999, 299] = 0.0
    A, B = pyet.asarray(a), pyet.asarray(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = a / b
    before = pyet.get_num_threads()
    pyet.set_num_threads(threads)
    try:
        for plain in (True, False):
            old = core.set_plain_passes(plain)
            try:
                out = np.zeros(a.shape)
                with np.errstate(divide="raise", invalid="raise"), \
                        pytest.raises(FloatingPointError):
                    pyet.asarray(out)[...] = A / B
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    with np.errstate(divide="ignore", invalid="ignore"):
                        pyet.asarray(out)[...] = A / B
                np.testing.assert_array_equal(out, want)
            finally:
                core.set_plain_passes(old)
    finally:
        pyet.set_num_threads(before)
