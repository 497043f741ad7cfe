"""Passes from memory (``from_memory``: set_sx_far(0) makes every pass one) whose
operands disagree with the destination on the order: short rows of 32 bytes or
more are tiled, not packed, and tiles grow to a copy's length.  Against NumPy on
F into C and C into F orders, trees and copies, rows from 1 to 70 elements,
row counts that leave a partial last tile, two threads, and destinations
inside sentinel bytes."""

import numpy as np
import pytest

import pyet
from pyet._core import core

SENTINEL = 0x3C


@pytest.fixture
def far():
    old = core.set_sx_far(0)
    try:
        yield
    finally:
        core.set_sx_far(old)


def guarded(shape, dtype, order):
    """(buffer, destination of shape and order inside it, sentinel bytes around)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    buf = np.full(nbytes + 128, SENTINEL, np.uint8)
    flat = buf[64:64 + nbytes].view(dtype)
    dst = flat.reshape(shape, order=order)
    return buf, dst


def intact(buf, nbytes):
    return bool(np.all(buf[:64] == SENTINEL) and np.all(buf[64 + nbytes:] == SENTINEL))


WIDTHS = [1, 2, 3, 4, 5, 8, 15, 16, 17, 33, 64, 70]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64])
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("rows", [1, 7, 1000, 1037])
def test_f_into_c_and_c_into_f(far, dtype, width, rows):
    rng = np.random.default_rng(width * 1000 + rows)
    a = (rng.random((rows, width)) * 100 - 50).astype(dtype)
    b = (rng.random((rows, width)) * 100 - 50).astype(dtype)
    fa, fb = np.asfortranarray(a), np.asfortranarray(b)
    FA, FB, A, B = (pyet.asarray(x) for x in (fa, fb, a, b))
    for expr, want, order in ((FA + FB, fa + fb, "C"), (FA, fa, "C"),
                              (A * B - A, a * b - a, "F"), (A, a, "F")):
        buf, dst = guarded(a.shape, dtype, order)
        pyet.asarray(dst)[...] = expr
        np.testing.assert_array_equal(dst, want)
        assert intact(buf, a.nbytes)


@pytest.mark.parametrize("width", [4, 5, 17, 64])
def test_two_threads_give_one_threads_bits(far, width):
    rng = np.random.default_rng(width)
    fa = np.asfortranarray(rng.standard_normal((3001, width)))
    col = np.ascontiguousarray(fa[:, :1])
    FA, C = pyet.asarray(fa), pyet.asarray(col)
    outs = []
    for nt in (1, 2):
        pyet.set_num_threads(nt)
        try:
            dst = np.empty(fa.shape)
            pyet.asarray(dst)[...] = pyet.exp(FA) * C + FA
        finally:
            pyet.set_num_threads(1)
        outs.append(dst)
    np.testing.assert_array_equal(outs[0].view(np.uint64), outs[1].view(np.uint64))
    np.testing.assert_allclose(outs[0], np.exp(fa) * col + fa, rtol=1e-14, atol=1e-14)


def test_reversed_and_strided_sources(far):
    # the tiles read columns through negative and non-unit strides alike
    rng = np.random.default_rng(3)
    big = np.asfortranarray(rng.standard_normal((2 * 900, 3 * 9)))
    src = big[::-2, ::3]  # (900, 9): columns reversed and strided
    buf, dst = guarded(src.shape, np.float64, "C")
    pyet.asarray(dst)[...] = pyet.asarray(src) * 2
    np.testing.assert_array_equal(dst, src * 2)
    assert intact(buf, src.nbytes)
