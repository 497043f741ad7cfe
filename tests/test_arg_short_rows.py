"""argmax/argmin of a leaf whose innermost axis in memory is kept and short
go to NumPy's loop (reductions._short_inner): the pass would fold those
rows one call each.  NumPy's indices on every layout, ties and NaN, keepdims,
into a destination, on one and two threads, small and past ONE_CALL_BYTES."""

import numpy as np
import pytest

import pyet
from pyet._nodes import reductions


def cases(rng, dtype):
    for shape, order, axis in [((3, 4001), "F", 1), ((4001, 3), "C", 0), ((2, 9, 501), "F", 2),
                               ((5, 63), "F", 1), ((5, 64), "F", 1), ((3, 4001), "C", 1),
                               ((7, 3, 300), "C", 0), ((3, 200003), "F", 1)]:
        x = rng.integers(-20, 20, shape).astype(dtype)  # many ties: the first index wins
        if dtype is np.float64:
            x.flat[7::11] = np.nan  # NaN wins where it comes first
        yield np.asarray(x, order=order), axis


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
@pytest.mark.parametrize("kind", ["argmax", "argmin"])
def test_numpys_indices_on_every_layout(kind, dtype, threads):
    rng = np.random.default_rng(0)
    pyet.set_num_threads(threads)
    try:
        for x, axis in cases(rng, dtype):
            X = pyet.asarray(x)
            want = getattr(np, kind)(x, axis=axis)
            got = pyet.evaluate(getattr(pyet, kind)(X, axis=axis))
            np.testing.assert_array_equal(np.asarray(got), want)
            kept = getattr(np, kind)(x, axis=axis, keepdims=True)
            np.testing.assert_array_equal(
                np.asarray(pyet.evaluate(getattr(pyet, kind)(X, axis=axis, keepdims=True))), kept)
            buf = np.full(want.size + 2, -7, np.int64)
            pyet.asarray(buf[1:-1].reshape(want.shape))[...] = getattr(pyet, kind)(X, axis=axis)
            np.testing.assert_array_equal(buf[1:-1].reshape(want.shape), want)
            assert buf[0] == -7 and buf[-1] == -7
    finally:
        pyet.set_num_threads(1)


def test_which_leaves_are_short_inner():
    f = np.asfortranarray(np.zeros((3, 1000)))
    assert reductions._short_inner(f)
    assert not reductions._short_inner(np.asfortranarray(np.zeros((64, 1000))))
    assert not reductions._short_inner(np.zeros((3, 1000)))  # rows of 1000
    assert reductions._short_inner(np.zeros((1000, 3)))
    assert reductions._inner_axis(np.zeros((1, 1))) == -1
    assert reductions._inner_axis(np.zeros((4, 1, 5))[:, :, ::2]) == 2


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int64, np.float64])
@pytest.mark.parametrize("layout", ["C (n, 3)", "F (3, n)", "C (n, 8)"])
def test_order_free_reductions_of_short_inner_axes(layout, dtype):
    # max, min, any, all (and integer sum, prod, mean) of a leaf whose
    # innermost axis is short: NumPy's loop or the short folds
    # (test_short_axis_folds), NumPy's values exactly
    rng = np.random.default_rng(5)
    base = rng.integers(-3, 4, (30001, 8 if "8" in layout else 3)).astype(dtype)
    x = np.asfortranarray(base.T) if layout.startswith("F") else base
    X = pyet.asarray(x)
    kinds = ["max", "min", "any", "all"] + (["sum", "prod", "mean"] if dtype is not np.float64
                                            else [])
    for kind in kinds:
        for axis in (0, 1):
            want = getattr(np, kind)(x, axis=axis)
            got = pyet.evaluate(getattr(pyet, kind)(X, axis=axis))
            assert np.asarray(got).dtype == want.dtype, (kind, axis)
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{kind} {axis}")


@pytest.mark.parametrize("shape", [(85, 3), (64, 64), (128, 128), (181, 181)])
@pytest.mark.parametrize("kind", ["argmax", "argmin"])
def test_small_leaves_on_either_side_of_the_pass(kind, shape):
    # under ARG_PASS_MIN elements NumPy's loop, from it on the pass: the same indices
    x = np.asfortranarray(np.random.default_rng(6).integers(-9, 9, shape).astype(np.float64))
    x[1::7, ::5] = np.nan
    for axis in (0, 1):
        got = pyet.evaluate(getattr(pyet, kind)(pyet.asarray(x), axis=axis))
        np.testing.assert_array_equal(np.asarray(got), getattr(np, kind)(x, axis=axis))
    assert (x.size < reductions.ARG_PASS_MIN) == reductions._numpy_kind(
        kind, pyet.asarray(x), (1,), False)
