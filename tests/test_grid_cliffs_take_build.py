"""take's node built with the index check inline (an integer ndarray read,
checked and copied in one compiled pass, the GIL kept for up to 16384
indices): NumPy's rows for every integer dtype, layout, sign and count,
the checked path's messages for everything else, and the node's indices its
own copy."""

import numpy as np
import pytest

import pyet


@pytest.mark.parametrize("idt", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                 np.uint32, np.uint64, ">i8", "<i4"])
def test_every_integer_dtype(idt):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((100, 7)).astype(np.float32)
    lo = 0 if np.dtype(idt).kind == "u" else -100
    idx = rng.integers(lo, 100, 50).astype(idt)
    got = np.empty((50, 7), np.float32)
    pyet.asarray(got)[...] = pyet.take(idx, pyet.asarray(w))
    np.testing.assert_array_equal(got, w[idx.astype(np.int64)])


@pytest.mark.parametrize("n", [0, 1, 64, 16384, 16385, 40000])
def test_counts_layouts_and_shapes(n):
    rng = np.random.default_rng(n)
    w = rng.standard_normal((300, 5))
    W = pyet.asarray(w)
    idx = rng.integers(-300, 300, 2 * n)
    for ix in (idx[:n], idx[::2], idx[::-2][:n]):
        np.testing.assert_array_equal(np.asarray(pyet.take(ix, W)), w[ix])
    if n % 2 == 0 and n:
        i2 = idx[:n].reshape(2, -1)
        np.testing.assert_array_equal(np.asarray(pyet.take(i2, W)), w[i2])
    # W as an ndarray, a tree, a 3-D table
    np.testing.assert_array_equal(np.asarray(pyet.take(idx[:n], w)), w[idx[:n]])
    np.testing.assert_array_equal(np.asarray(pyet.take(idx[:n], W * 2)), (w * 2)[idx[:n]])
    w3 = rng.standard_normal((300, 2, 3))
    np.testing.assert_array_equal(np.asarray(pyet.take(idx[:n], pyet.asarray(w3))),
                                  w3[idx[:n]])


def test_node_keeps_its_own_copy_of_the_indices():
    w = np.arange(20.0).reshape(10, 2)
    idx = np.array([1, -1, 3])
    e = pyet.take(idx, pyet.asarray(w))
    idx[:] = 0
    np.testing.assert_array_equal(np.asarray(e), w[[1, -1, 3]])


def test_errors_with_their_messages_before_any_write():
    w = np.ones((10, 3))
    W = pyet.asarray(w)
    dst = np.full((2, 3), 4.0)
    with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 of W of size 10"):
        pyet.asarray(dst)[...] = pyet.take(np.array([0, 10]), W)
    with pytest.raises(IndexError, match="index -11 is out of bounds"):
        pyet.asarray(dst)[...] = pyet.take(np.array([-11, 0]), W)
    with pytest.raises(IndexError, match="out of bounds"):
        pyet.take(np.array([2**64 - 1], np.uint64), W)
    with pytest.raises(TypeError, match="indices must be integers, got float64"):
        pyet.take(np.array([0.0, 1.0]), W)
    with pytest.raises(TypeError, match="indices must be integers, got bool"):
        pyet.take(np.array([True, False]), W)
    with pytest.raises(ValueError, match="at least one dimension"):
        pyet.take(np.array([0]), pyet.asarray(np.array(1.0)))
    assert (dst == 4).all()
    # lists, empty lists and integer scalars: the checked path
    np.testing.assert_array_equal(np.asarray(pyet.take([1, 2], W)), w[[1, 2]])
    assert np.asarray(pyet.take([], W)).shape == (0, 3)
    np.testing.assert_array_equal(np.asarray(pyet.take(3, W)), w[3])
