"""A reduction at the root over a small leaf goes straight to NumPy's ufunc
reduce through Reduction's into_leaves (no into() frame), kernels keep their
parameters, and the reduce functions build the node in one frame: NumPy's
values and dtypes on every layout, kind, axis and keepdims, the sum over
axis 0 still by pyet's row fold, large leaves and overlapping destinations
by the general path, and errors before any write."""

import numpy as np
import pytest

import pyet


def layouts(a):
    big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    big[..., ::2] = a
    return {"C": a, "F": np.asfortranarray(a), "strided": big[..., ::2],
            "negative": a[::-1].copy()[::-1]}


KINDS = ["sum", "prod", "max", "min", "mean", "argmax", "argmin", "all", "any"]
AXES = [None, 0, 1, 2, (0, 2), -1]


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("kind", KINDS)
def test_small_leaves_against_numpy(dt, kind):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((6, 5, 7)) * 3).astype(dt)
    for name, x in layouts(a).items():
        X = pyet.asarray(x)
        for axis in AXES:
            if kind.startswith("arg") and isinstance(axis, tuple):
                continue
            for keepdims in (False, True):
                kw = {} if kind.startswith("arg") and keepdims is False else {"keepdims": keepdims}
                want = getattr(np, kind)(x, axis=axis, **kw)
                dst = np.full(np.shape(want), 7, np.asarray(want).dtype)
                pyet.asarray(dst)[...] = getattr(pyet, kind)(X, axis=axis, **kw)
                if dt in (np.float32,) and kind in ("sum", "mean", "prod"):
                    np.testing.assert_allclose(dst, want, rtol=1e-5, err_msg=name)
                else:
                    np.testing.assert_array_equal(dst, want, err_msg=f"{name} {axis}")


def test_nan_zero_d_one_element_and_strided_destination():
    a = np.arange(24.0).reshape(2, 3, 4)
    a[1, 2, 3] = np.nan
    A = pyet.asarray(a)
    for kind in ("max", "min", "sum"):
        dst = np.zeros(8)[::2]
        pyet.asarray(dst)[...] = getattr(pyet, kind)(A, axis=(0, 1))
        np.testing.assert_array_equal(dst, getattr(np, kind)(a, axis=(0, 1)))
    z = np.array(3.5)
    d = np.zeros(())
    pyet.asarray(d)[...] = pyet.max(pyet.asarray(z))
    assert d == 3.5
    one = np.array([[2.0]])
    d = np.zeros(1)
    pyet.asarray(d)[...] = pyet.sum(pyet.asarray(one), axis=1)
    assert d[0] == 2.0


def test_general_paths_still_taken():
    rng = np.random.default_rng(1)
    # the sum over axis 0: pyet's row fold, NumPy's bits
    a = rng.standard_normal((256, 128)).astype(np.float32)
    dst = np.empty(128, np.float32)
    pyet.asarray(dst)[...] = pyet.sum(pyet.asarray(a), axis=0)
    np.testing.assert_array_equal(dst, np.add.reduce(a, axis=0))
    # a large leaf (beyond the small-leaf size): the pass
    big = rng.standard_normal((300, 300))
    d = np.empty(300)
    pyet.asarray(d)[...] = pyet.max(pyet.asarray(big), axis=1)
    np.testing.assert_array_equal(d, big.max(axis=1))
    # empty sums
    e = np.empty((0, 4))
    d = np.full(4, 9.0)
    pyet.asarray(d)[...] = pyet.sum(pyet.asarray(e), axis=0)
    np.testing.assert_array_equal(d, np.zeros(4))
    # the destination inside the leaf: computed aside
    buf = np.arange(12.0).reshape(3, 4)
    want = buf.sum(axis=1)
    pyet.asarray(buf[:, 0])[...] = pyet.sum(pyet.asarray(buf), axis=1)
    np.testing.assert_array_equal(buf[:, 0], want)
    # a tree below: materialized, then folded
    d = np.empty(4)
    pyet.asarray(d)[...] = pyet.max(pyet.asarray(buf) * 2, axis=0)
    np.testing.assert_array_equal(d, (buf * 2).max(axis=0))


def test_kernels_keep_their_parameters():
    A = pyet.asarray(np.ones((3, 4)))
    e, f, g = pyet.max(A, axis=1), pyet.max(A, axis=1), pyet.max(A, axis=0)
    assert e._kernel is f._kernel and e._kernel is not g._kernel
    assert e._kernel.params() == ("max", (1,), False, False)
    assert g._kernel.params() == ("max", (0,), False, False)



def test_every_kind_reduces_small_leaves_by_numpy():
    # into_leaves over a small leaf writes NumPy's values, dtypes and NaN/tie
    # rules itself (True), every kind
    a = np.array([[1.0, np.nan, 3.0], [3.0, 0.0, 3.0]])
    A = pyet.asarray(a)
    for kind in ("argmax", "argmin", "any", "all", "max", "min", "sum", "mean", "prod"):
        for axis in (None, 0, 1):
            want = getattr(np, kind)(a, axis=axis)
            dst = np.full(np.shape(want), 7, np.asarray(want).dtype)
            node = getattr(pyet, kind)(A, axis=axis)
            assert node._kernel.into_leaves(dst, (a,)) is True
            np.testing.assert_array_equal(dst, want, err_msg=f"{kind} {axis}")
    # from ARG_PASS_MIN elements argmax takes NumPy's loop where _numpy_kind
    # says (a whole leaf), else the pass; float max of large leaves: the pass
    from pyet._nodes.reductions import ARG_PASS_MIN, SMALL_LEAF
    big = np.zeros(ARG_PASS_MIN)
    big[5] = 1
    d = np.zeros((), np.intp)
    assert pyet.argmax(pyet.asarray(big))._kernel.into_leaves(d, (big,)) is True
    assert d == 5
    big = np.zeros((1024, 128))[:, ::2]  # kept rows strided, 64 of them: the pass's
    d = np.full(64, -1, np.intp)
    assert pyet.argmax(pyet.asarray(big), axis=0)._kernel.into_leaves(d, (big,)) is False
    assert (d == -1).all()
    huge = np.zeros(SMALL_LEAF + 1)
    d = np.full((), 5.0)
    assert pyet.max(pyet.asarray(huge))._kernel.into_leaves(d, (huge,)) is False
    assert d == 5.0
    empty = np.zeros((0, 3))
    assert pyet.sum(pyet.asarray(empty), axis=0)._kernel.into_leaves(
        np.full(3, 5.0), (empty,)) is False


def test_any_all_of_numbers_take_bools():
    # any/all are logical_or/and.reduce with dtype=bool, as np.any calls them:
    # NaN is true, -0.0 false, on every layout and through the pass
    a = np.array([[0.0, -0.0, np.nan], [0.0, 0.0, 0.0], [2.0, 1.0, -1.0]])
    for x in (a, np.asfortranarray(a), a[::-1, ::-1]):
        X = pyet.asarray(x)
        for kind in ("any", "all"):
            for axis in (None, 0, 1):
                want = getattr(np, kind)(x, axis=axis)
                got = pyet.evaluate(getattr(pyet, kind)(X, axis=axis))
                np.testing.assert_array_equal(got, want)
                assert np.asarray(got).dtype == np.bool_


def test_errors_before_any_write():
    a = np.ones((3, 4))
    d = np.full(4, 5.0)
    with pytest.raises(ValueError):
        pyet.asarray(d)[...] = pyet.max(pyet.asarray(np.ones((0, 4))), axis=0)
    with pytest.raises(np.exceptions.AxisError):
        pyet.asarray(d)[...] = pyet.max(pyet.asarray(a), axis=2)
    with pytest.raises(ValueError):
        pyet.asarray(d)[...] = pyet.max(pyet.asarray(a), axis=1)  # shape (3,) into (4,)
    with pytest.raises(TypeError):
        pyet.asarray(np.zeros(4, np.int32))[...] = pyet.mean(pyet.asarray(a), axis=0)
    assert (d == 5).all()
