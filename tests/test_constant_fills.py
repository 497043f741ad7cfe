"""Trees whose value is one number (0-d operands only) broadcast over a
destination: one instruction on scalars runs as a fill (repeat_first, long
blocks); a 0-d tree of several ops over 8192 elements or more is computed
once, then filled.  Against NumPy, destinations between sentinels."""

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
