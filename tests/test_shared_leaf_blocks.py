"""A leaf read twice by one pass (where(a > b, a, b), a * a + a) is gathered
once: its block, packed block or tile is shared by every read of it.  Against
NumPy bit for bit on the layouts that gather: transposed and Fortran into C
(tiled), strided and reversed rows, short packed rows, pieces of a
compute-bound kernel, a destination that is the leaf itself, one and two
threads.  A view of the same memory with other strides is not the same leaf."""

import numpy as np
import pytest

import pyet


def layouts(dt):
    rng = np.random.default_rng(0)

    def base(shape):
        return (rng.standard_normal(shape) * 10).astype(dt)

    yield "Fortran", np.asfortranarray(base((64, 64))), np.asfortranarray(base((64, 64)))
    yield "transposed", base((70, 45)).T, base((70, 45)).T
    yield "3-d transposed", base((3, 40, 30)).transpose(0, 2, 1), base((3, 40, 30)).transpose(
        0, 2, 1)
    yield "step 3", base((3 * 5000,))[::3], base((3 * 5000,))[::3]
    yield "reversed step 2", base((60, 140))[::-1, ::2], base((60, 140))[::-1, ::2]
    yield "short rows (packed)", base((300, 10))[:, ::2], base((300, 10))[:, ::2]
    yield "transposed short rows", base((9, 400)).T, base((9, 400)).T
    yield "tiny", base((3, 7))[:, ::3], base((3, 7))[:, ::3]
    yield "empty", base((0, 8))[:, ::2], base((0, 8))[:, ::2]


FORMS = [
    (lambda A, B: pyet.where(A > B, A, B), lambda a, b: np.where(a > b, a, b)),
    (lambda A, B: A * A + A - B * A, lambda a, b: a * a + a - b * a),
    (lambda A, B: pyet.maximum(A, B) - A, lambda a, b: np.maximum(a, b) - a),
]
FLOAT_FORMS = [(lambda A, B: pyet.sqrt(abs(A)) * pyet.sqrt(abs(A)) + B,
                lambda a, b: np.sqrt(abs(a)) * np.sqrt(abs(a)) + b)]


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_leaf_read_twice_is_gathered_once(dt, threads):
    before = pyet.get_num_threads()
    pyet.set_num_threads(threads)
    try:
        forms = FORMS + (FLOAT_FORMS if np.dtype(dt).kind == "f" else [])
        for name, a, b in layouts(dt):
            for fp, fn in forms:
                want = fn(a, b)
                out = np.full(a.shape, 7, dt)
                pyet.asarray(out)[...] = fp(pyet.asarray(a), pyet.asarray(b))
                assert out.tobytes() == np.ascontiguousarray(want).tobytes(), name
                # into the leaf itself (read twice, written once, in place)
                x, y = a.copy(), b.copy()
                x = x.T.copy().T if a.flags.f_contiguous and not a.flags.c_contiguous else x
                X = pyet.asarray(x)
                X[...] = fp(X, pyet.asarray(y))
                assert np.array_equal(x, want), name
    finally:
        pyet.set_num_threads(before)


def test_same_memory_other_strides_is_another_leaf():
    rng = np.random.default_rng(1)
    m = rng.standard_normal((50, 50))
    before = pyet.get_num_threads()
    for a, b in ((m[::2, ::2], m[::2, ::2].T),  # one gathered, one tiled
                 (m[:25, ::2], m[::2, ::2]),  # same start and row step, other row strides
                 (m[::2, ::4], m[::2, ::2][:, :13])):  # other steps along the row
        for threads in (1, 2):
            pyet.set_num_threads(threads)
            try:
                out = np.empty(a.shape)
                pyet.asarray(out)[...] = pyet.asarray(a) + 10 * pyet.asarray(b) - pyet.asarray(a)
                assert np.array_equal(out, a + 10 * b - a)
            finally:
                pyet.set_num_threads(before)
