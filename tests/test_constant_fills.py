"""Trees whose value is one number (0-d operands only) broadcast over a
destination: the value computed once, its errors raised before dst is
written, then filled (passes.pxi plan_once, fill_rows); isnan, isinf and
isfinite of integers and bools are such a constant when built
(INTEGER_CONSTANTS).  Against NumPy, destinations between sentinels."""

import numpy as np
import pytest

import pyet

SENTINEL = 0x5A


def _framed(n, dtype, step=1):
    itemsize = np.dtype(dtype).itemsize
    raw = np.full(n * step * itemsize + 128, SENTINEL, np.uint8)
    body = raw[64:64 + n * step * itemsize].view(dtype)
    return raw, body[::step] if step > 0 else body[::-1]


def _scalar(value, dtype):
    return pyet.asarray(np.array(value, dtype).reshape(()))


@pytest.mark.parametrize("n", [1, 7, 8191, 8192, 70001, 200003])
@pytest.mark.parametrize("step", [1, 2, -1])
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int64, np.float32, np.float64])
def test_one_value_into_every_element(n, step, dtype):
    raw, out = _framed(n, dtype, abs(step))
    if step < 0:
        out = out[::-1]
    s, t = _scalar(1, dtype), _scalar(0, dtype)
    if dtype is np.bool_:
        e, want = s != t, True  # one instruction on scalars
        deep, deep_want = (s != t) & (s | t), True
    else:
        e, want = s + t, dtype(1)
        deep, deep_want = (s * 3 + t) * 2 - s, dtype(5)
    for tree, value in ((e, want), (deep, deep_want)):
        assert tree.shape == ()
        pyet.asarray(out)[...] = tree
        np.testing.assert_array_equal(out, np.full(n, value, dtype))
        assert (raw[:64] == SENTINEL).all() and (raw[-64:] == SENTINEL).all()


def test_a_zero_d_tree_is_cast_as_numpy_casts_it():
    # int64 arithmetic, then one cast of its value into float32 (NumPy's order)
    s = _scalar(2**40 + 3, np.int64)
    out = np.zeros(10000, np.float32)
    pyet.asarray(out)[...] = s * 2 + 1
    want = np.zeros(10000, np.float32)
    want[...] = np.int64(2**40 + 3) * 2 + 1
    np.testing.assert_array_equal(out, want)


def test_errors_of_a_zero_d_tree_leave_the_destination_untouched():
    s, z = _scalar(1.0, np.float64), _scalar(0.0, np.float64)
    out = np.full(10000, 7.0)
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        pyet.asarray(out)[...] = (s + z) / z
    assert (out == 7.0).all()
    with np.errstate(divide="ignore"):
        pyet.asarray(out)[...] = (s + z) / z
    assert np.isposinf(out).all()


def test_a_zero_d_tree_with_a_view_of_the_destination():
    # the 0-d operand is an element of dst itself: read before any write
    out = np.arange(10000.0)
    first = pyet.asarray(out[3:4].reshape(()))
    pyet.asarray(out)[...] = first * 2 + 1
    assert (out == 7.0).all()


@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite"])
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int64])
@pytest.mark.parametrize("layout", ["C", "step3", "reversed", "F"])
def test_integer_predicates_are_constants(name, dtype, layout):
    base = (np.arange(600) % 7 - 3).astype(dtype)
    a = {"C": base.reshape(20, 30), "step3": base[::3].reshape(10, 20),
         "reversed": base[::-1].reshape(20, 30), "F": base.reshape(30, 20).T}[layout]
    A = pyet.asarray(a)
    for e in (getattr(pyet, name)(A), getattr(np, name)(A)):
        assert e.dtype == np.bool_ and e.shape == a.shape
        # a constant leaf: one element, every stride 0, nothing of a read
        arr = e.numpy()
        assert isinstance(e, pyet.Tensor) and arr.strides == (0, 0)
        raw, out = _framed(a.size, np.bool_, 2)
        out = out.reshape(a.shape)
        pyet.asarray(out)[...] = e
        np.testing.assert_array_equal(out, getattr(np, name)(a))
        np.testing.assert_array_equal(arr, getattr(np, name)(a))
        assert (raw[:64] == SENTINEL).all() and (raw[-64:] == SENTINEL).all()
        assert (raw[65:64 + 2 * a.size:2] == SENTINEL).all()
    # inside a tree, and reduced
    np.testing.assert_array_equal(pyet.evaluate(getattr(pyet, name)(A) | (A > 0)).numpy(),
                                  getattr(np, name)(a) | (a > 0))
    assert pyet.evaluate(getattr(pyet, name)(A).sum()).numpy() == getattr(np, name)(a).sum()


def test_zero_d_bool_bytes_read_as_numpy_does():
    # a 0-d bool viewed from byte 2 or 200 is True to the operators and kept
    # by copies and floor, as NumPy keeps it (store_scalar's bytes)
    for byte in (2, 200):
        v = np.array(byte, np.uint8).view(np.bool_)
        V = pyet.asarray(v)
        for n in (1, 9, 5000):
            for expr, want in ((V, np.broadcast_to(v, n)),
                               (pyet.floor(V), np.floor(np.broadcast_to(v, n)))):
                raw, out = _framed(n, np.bool_)
                pyet.asarray(out)[...] = expr
                ref = np.zeros(n, bool)
                ref[...] = want
                assert out.view(np.uint8).tolist() == ref.view(np.uint8).tolist() == [byte] * n
                assert (raw[:64] == SENTINEL).all() and (raw[64 + n:] == SENTINEL).all()
        s = pyet.asarray(np.array(byte, np.uint8).view(np.bool_))
        t = pyet.asarray(np.array(1, np.uint8).view(np.bool_))
        for n in (1, 9, 5000):
            raw, out = _framed(n, np.bool_)
            pyet.asarray(out)[...] = s & t
            assert out.view(np.uint8).tolist() == [1] * n
            pyet.asarray(out)[...] = s ^ t
            assert out.view(np.uint8).tolist() == [0] * n
            assert (raw[:64] == SENTINEL).all() and (raw[64 + n:] == SENTINEL).all()
