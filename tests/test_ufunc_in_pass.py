"""pyet.F of NumPy's own ufuncs runs in the pass as the ufunc's C loop
(PyFunc._in_pass: the function is part of the node's structure, no hoist, no
Python call a block).  NumPy's values on contiguous memory on every layout;
with the knob off, the same bits."""

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
