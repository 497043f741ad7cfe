"""pyet.F of NumPy's own ufuncs runs in the pass as the ufunc's C loop
(PyFunc._in_pass: the function is part of the node's structure, no hoist, no
Python call a block), and a pass keeps the last NumPy loop's register in the
destination's block where no leaf reads dst's memory (Run.dst_reg).  NumPy's
values on contiguous memory on every layout; with either knob off, the same
bits."""

import numpy as np
import pytest

import pyet
from pyet._core import core

UNARY = [np.expm1, np.sin, np.log1p, np.cbrt, np.arctan, np.exp2, np.tanh, np.sqrt]
BINARY = [np.arctan2, np.hypot, np.logaddexp, np.power, np.add]
LAYOUTS = ["C", "F", "strided", "reversed", "row broadcast", "column broadcast", "0-d",
           "empty"]


def layout(a, kind):
    if kind == "F":
        return np.asfortranarray(a)
    if kind == "strided":
        big = np.zeros((a.shape[0] * 2, a.shape[1] * 3), a.dtype)
        big[::2, ::3] = a
        return big[::2, ::3]
    if kind == "reversed":
        return np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1]
    if kind == "row broadcast":
        return np.broadcast_to(a[0], a.shape)
    if kind == "column broadcast":
        return np.broadcast_to(a[:, :1], a.shape)
    if kind == "0-d":
        return a[0, 0].reshape(())
    if kind == "empty":
        return a[:0]
    return a


def between_sentinels(shape, dtype):
    """dst inside a buffer whose first and last elements are sentinels."""
    size = int(np.prod(shape))
    buf = np.full(size + 2, -7, dtype)
    return buf, buf[1:-1].reshape(shape)


def assert_sentinels(buf):
    assert buf[0] == -7 and buf[-1] == -7


def assert_same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", UNARY, ids=lambda f: f.__name__)
def test_unary_in_a_tree_gives_numpys_values(fn, dtype, kind):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.1, 2, (37, 53)).astype(dtype)
    b = rng.uniform(-1, 1, (37, 53)).astype(dtype)
    x = layout(a, kind)
    X, B = pyet.asarray(x), pyet.asarray(b[:x.shape[0]] if x.ndim else b)
    node = pyet.F(fn, X)
    assert node._in_pass
    e = (node + B) * dtype(0.5)  # (no a * b + c: that may be one fma)
    want = (fn(np.ascontiguousarray(x)) + np.asarray(B)) * dtype(0.5)
    buf, dst = between_sentinels(want.shape, dtype)
    pyet.asarray(dst)[...] = e
    assert_same_bits(dst, want)
    assert_sentinels(buf)
    assert_same_bits(pyet.evaluate(e), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", BINARY, ids=lambda f: f.__name__)
def test_binary_with_broadcasts_and_scalars(fn, dtype):
    rng = np.random.default_rng(1)
    a = rng.uniform(0.1, 2, (40, 70)).astype(dtype)
    row = rng.uniform(0.1, 2, 70).astype(dtype)
    A, R = pyet.asarray(a), pyet.asarray(row)
    # (the broadcast operand's block is contiguous: NumPy's values there)
    rows, halves = np.ascontiguousarray(np.broadcast_to(row, a.shape)), np.full_like(a, 1.5)
    half = dtype(1.5)  # (typed: a Python float's 0-d operand would be float64)
    for e, want in ((pyet.F(fn, A, R) - A, fn(a, rows) - a),
                    (pyet.F(fn, R, A) * 2, fn(rows, a) * dtype(2)),
                    (pyet.F(fn, A, half) + 0, fn(a, halves) + dtype(0))):
        dst = np.full(a.shape, 9, dtype)
        pyet.asarray(dst)[...] = e
        assert_same_bits(dst, want)


def test_the_function_is_part_of_the_structure():
    # one tree shape, different ufuncs, alternately: no program is shared
    a = np.random.default_rng(2).uniform(0.1, 2, (16, 16))
    A = pyet.asarray(a)
    dst = np.empty_like(a)
    for _ in range(3):
        for fn in (np.sin, np.cos, np.expm1, np.log1p):
            pyet.asarray(dst)[...] = pyet.F(fn, A) + 1
            assert_same_bits(dst, fn(a) + 1)
    assert pyet.F(np.sin, A)._key != pyet.F(np.cos, A)._key
    assert pyet.F(np.sin, A)._key == pyet.F(np.sin, A)._key
    assert "sin[float64->float64](leaf0) (NumPy's loop)" in pyet.explain(pyet.F(np.sin, A) + 1)


def test_functions_that_stay_user_functions():
    a = np.random.default_rng(3).uniform(0.1, 2, (8, 9))
    A = pyet.asarray(a)
    cases = [
        (pyet.F(lambda v: v * 3, A), a * 3),  # not a ufunc
        (pyet.F(np.ldexp, A, pyet.asarray(np.arange(9, dtype=np.int32))),  # mixed dtypes
         np.ldexp(a, np.arange(9, dtype=np.int32))),
        (pyet.F(np.sin, A, dtype=np.float32), np.sin(a).astype(np.float32)),  # another dtype
    ]
    for node, want in cases:
        assert not node._in_pass
        assert_same_bits(pyet.evaluate(node + 0), want + want.dtype.type(0))
    special = pytest.importorskip("scipy.special")
    node = pyet.F(special.expm1, A)  # a ufunc, but not NumPy's own
    assert not node._in_pass
    assert_same_bits(pyet.evaluate(node * 2), special.expm1(a) * 2)


def test_knob_off_gives_the_same_bits():
    rng = np.random.default_rng(4)
    a, b = rng.uniform(0.1, 2, (300, 41)), rng.uniform(-1, 1, (300, 41))
    A, B = pyet.asarray(a), pyet.asarray(b)
    got = {}
    for on in (True, False):
        before = core.set_ufuncs_in_pass(on)
        try:
            node = pyet.F(np.expm1, A)
            assert node._in_pass == on
            got[on] = pyet.evaluate(node * B + pyet.F(np.sin, A))
        finally:
            core.set_ufuncs_in_pass(before)
    assert_same_bits(got[True], got[False])
    assert_same_bits(got[True], np.expm1(a) * b + np.sin(a))


def test_floating_point_errors_are_the_passs():
    a = np.ones((4, 700))
    a[3, -1] = 0
    A = pyet.asarray(a)
    dst = np.full(a.shape, 5.0)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero encountered in a pyet"):
            pyet.asarray(dst)[...] = pyet.F(np.log, A) + 1
    with np.errstate(divide="ignore"):
        pyet.asarray(dst)[...] = pyet.F(np.log, A) + 1
        np.testing.assert_array_equal(dst, np.log(a) + 1)


# ------------------------------------------------- the register in dst's block

@pytest.fixture(params=[True, False], ids=["dst register", "scratch register"])
def dst_register(request):
    before = core.set_dst_register(request.param)
    yield request.param
    core.set_dst_register(before)


def _trees(A, B):
    # a NumPy loop (pyet.F's or an op's) followed by cheap instructions
    return [
        (lambda: pyet.F(np.expm1, A) + 1, lambda a, b: np.expm1(a) + 1),
        (lambda: pyet.cbrt(A) * B - A, lambda a, b: np.cbrt(a) * b - a),
        (lambda: (pyet.F(np.sin, A) + B) * pyet.F(np.log1p, B),
         lambda a, b: (np.sin(a) + b) * np.log1p(b)),
        (lambda: pyet.F(np.arctan2, A, B) + pyet.F(np.expm1, B) * 0.5,
         lambda a, b: np.arctan2(a, b) + np.expm1(b) * 0.5),
    ]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [1, 8191, 8192, 8193, 3 * 8192 + 5, 200003])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_trees_over_block_edges(dst_register, dtype, n, threads):
    rng = np.random.default_rng(n)
    a, b = rng.uniform(0.1, 2, n).astype(dtype), rng.uniform(0.1, 2, n).astype(dtype)
    A, B = pyet.asarray(a), pyet.asarray(b)
    pyet.set_num_threads(threads)
    try:
        for build, ref in _trees(A, B):
            buf, dst = between_sentinels((n,), dtype)
            pyet.asarray(dst)[...] = build()
            with np.errstate(all="ignore"):
                assert_same_bits(dst, ref(a, b).astype(dtype))
            assert_sentinels(buf)
    finally:
        pyet.set_num_threads(1)


def test_leaves_that_read_dst_keep_the_scratch_register(dst_register):
    # dst's block may hold the loop's result only where no leaf reads dst
    rng = np.random.default_rng(5)
    n = 3 * 8192 + 7
    a, x = rng.uniform(0.1, 1, n), rng.uniform(0.1, 1, n)
    d = a.copy()
    D = pyet.asarray(d)
    D[...] = pyet.F(np.expm1, D) + 1  # in place
    assert_same_bits(d, np.expm1(a) + 1)
    d = a.copy()
    D = pyet.asarray(d)
    D[...] = pyet.F(np.expm1, pyet.asarray(x)) + D  # dst read after the loop
    assert_same_bits(d, np.expm1(x) + a)
    d = a.copy()
    D = pyet.asarray(d)
    D[...] = pyet.cbrt(pyet.asarray(x)) * D  # an op's NumPy loop, dst read after
    assert_same_bits(d, np.cbrt(x) * a)
    m = rng.uniform(0.1, 1, (40, 1000))
    mm = m.copy()
    M = pyet.asarray(mm)
    M[...] = pyet.F(np.expm1, pyet.asarray(x[:1000])) + M[0]  # a row of dst, broadcast
    assert_same_bits(mm, np.broadcast_to(np.expm1(x[:1000]) + m[0], m.shape))  # NumPy's
    buf = rng.uniform(0.1, 1, 3 * n)
    want = np.expm1(buf[:2 * n]) * buf[n:]
    pyet.asarray(buf[n:])[...] = pyet.F(np.expm1, pyet.asarray(buf[:2 * n])) * \
        pyet.asarray(buf[n:])  # partial overlap
    assert_same_bits(buf[n:], want)


def test_destinations_the_block_cannot_hold(dst_register):
    rng = np.random.default_rng(6)
    a = rng.uniform(0.1, 2, (300, 70))
    A = pyet.asarray(a)
    d32 = np.empty((300, 70), np.float32)  # a float64 register, float32 items
    pyet.asarray(d32)[...] = pyet.F(np.expm1, A) + 1
    assert_same_bits(d32, (np.expm1(a) + 1).astype(np.float32))
    buf = np.full((300, 141), -7.0)  # strided rows: the block is scattered
    pyet.asarray(buf[:, 1::2])[...] = pyet.F(np.expm1, A) * 2
    assert_same_bits(buf[:, 1::2], np.expm1(a) * 2)
    assert (buf[:, ::2] == -7).all()
    f = np.empty((300, 70), order="F")
    pyet.asarray(f)[...] = pyet.F(np.expm1, A) - A
    assert_same_bits(f, np.expm1(a) - a)

