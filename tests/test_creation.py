"""Creating tensors as NumPy does: *_like from arrays, tensors and (unevaluated)
expressions, arange and linspace; every result 64-byte aligned."""

import numpy as np
import pytest

import pyet


def _aligned(t):
    return t.size == 0 or t.numpy().ctypes.data % 64 == 0


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "float32", "float64"])
def test_like_functions_match_numpy(dtype):
    a = np.arange(6).reshape(2, 3).astype(dtype)
    tree = pyet.where(np.ones(a.shape, bool), pyet.asarray(a), a)  # of a's dtype, lazy
    for src in (a, pyet.asarray(a), tree):
        for ours, theirs, args in ((pyet.zeros_like, np.zeros_like, ()),
                                   (pyet.ones_like, np.ones_like, ()),
                                   (pyet.full_like, np.full_like, (1,))):
            got = ours(src, *args)
            want = theirs(a, *args)
            assert got.dtype == want.dtype and got.shape == want.shape and _aligned(got)
            np.testing.assert_array_equal(got.numpy(), want)
        e = pyet.empty_like(src)
        assert e.shape == a.shape and e.dtype == a.dtype and _aligned(e)


def test_like_with_dtype_and_shape():
    t = pyet.zeros_like(np.ones((2, 2)), dtype=np.int32, shape=(3,))
    assert t.dtype == np.int32 and t.shape == (3,)
    np.testing.assert_array_equal(pyet.full_like(np.ones(3), 2.5, dtype=np.float32).numpy(),
                                  np.full(3, 2.5, np.float32))


def test_like_of_an_expression_does_not_evaluate_it():
    calls = []
    e = pyet.F(lambda x: calls.append(1) or x, np.ones(3))
    calls.clear()
    pyet.zeros_like(e)
    assert not calls


@pytest.mark.parametrize("args, kw", [((5,), {}), ((1, 10, 3), {}), ((0.5, 2.0, 0.25), {}),
                                      ((3,), {"dtype": np.float32}), ((0,), {})])
def test_arange(args, kw):
    got, want = pyet.arange(*args, **kw), np.arange(*args, **kw)
    assert got.dtype == want.dtype and _aligned(got)
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("args, kw", [((0, 1), {}), ((0, 1, 7), {"endpoint": False}),
                                      ((-2, 2, 5), {"dtype": np.float32}), ((1, 2, 0), {})])
def test_linspace(args, kw):
    got, want = pyet.linspace(*args, **kw), np.linspace(*args, **kw)
    assert got.dtype == want.dtype and _aligned(got)
    np.testing.assert_array_equal(got.numpy(), want)


def test_unsupported_dtypes_are_refused():
    with pytest.raises(TypeError, match="does not support dtype complex128"):
        pyet.zeros_like(np.ones(2), dtype=np.complex128)
    with pytest.raises(TypeError, match="does not support dtype uint8"):
        pyet.arange(3, dtype=np.uint8)
