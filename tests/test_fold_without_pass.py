"""A leaf's max or min without the pass (Reduction._folded_without_pass):
over the leading axes of a C-contiguous leaf (core.fold_rows: the first row
copied, the others folded four, three or two at a time), over its trailing
axes in long rows (core.fold_short_rows), an F-contiguous leaf as its
transpose; and the row folds' kernel (pyet_reduce_rows) with every
remainder of rows, through the pass too.  NumPy's values and bits: NaN,
signed zeros, infinities; destinations between sentinels."""

import numpy as np
import pytest

import pyet
from pyet._core import core


def values(rng, shape, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[::97] = -0.0  # (sparse specials: most rows and columns have none)
    flat[5::13001] = np.inf
    flat[7::17003] = -np.inf
    flat[11::50021] = np.nan
    return x


def into_sentinels(want):
    buf = np.full(want.size + 2, -7, want.dtype)
    return buf, buf[1:-1].reshape(want.shape)


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,axis", [  # (past SMALL_LEAF: smaller ones are NumPy's)
    ((3, 30001), 1), ((1, 70001), 1), ((300, 256), 1), ((300, 255), 1), ((2, 3, 12000), (1, 2)),
    ((2, 3, 12000), 2), ((2, 35001), 0), ((3, 30001), 0), ((4, 30001), 0), ((5, 30001), 0),
    ((6, 30001), 0), ((7, 30001), 0), ((2, 3, 12000), (0, 1)), ((400, 400), 0),
    ((400, 400), 1)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_layouts_against_numpy(kind, dtype, shape, axis, order):
    rng = np.random.default_rng(sum(shape))
    x = np.asarray(values(rng, shape, dtype), order=order)
    X = pyet.asarray(x)
    want = getattr(np, kind)(x, axis=axis)
    buf, dst = into_sentinels(want)
    pyet.asarray(dst)[...] = getattr(pyet, kind)(X, axis=axis)
    assert dst.tobytes() == want.tobytes()
    assert (buf[[0, -1]] == -7).all()
    kept = getattr(np, kind)(x, axis=axis, keepdims=True)
    got = pyet.evaluate(getattr(pyet, kind)(X, axis=axis, keepdims=True))
    assert np.asarray(got).tobytes() == kept.tobytes()


def test_rows_fold_refuses_what_it_cannot_write():
    # (fold_short_rows' refusals: test_each_row_folds)
    x = np.arange(2 * 300, dtype=np.float64).reshape(2, 300)
    assert not core.fold_rows(x.reshape(-1)[:300], x, 3, 1)  # inside src
    assert not core.fold_rows(np.empty(300, np.float32), x, 3, 1)  # another dtype
    assert not core.fold_rows(np.empty(600)[::2], x, 3, 1)  # not contiguous
    out = np.empty(300)
    assert core.fold_rows(out, x, 3, 1)
    np.testing.assert_array_equal(out, x.max(axis=0))


def test_a_column_of_negative_zeros_sums_to_zero():
    # (fold_rows' sum starts from 0.0 as NumPy's reduce over leading axes)
    x = np.full((3, 5), -0.0)
    out = np.full(5, 7.0)
    assert core.fold_rows(out, x, 1, 1)
    assert out.tobytes() == np.add.reduce(x, axis=0).tobytes()
    y = np.full((3, 5), -0.0)
    y[1, 2] = np.nan
    for red, ref in ((3, np.maximum), (4, np.minimum)):
        assert core.fold_rows(out, y, red, 1)
        assert out.tobytes() == ref.reduce(y, axis=0).tobytes()


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("nrows", [1, 2, 3, 4, 5, 6, 7, 8, 9])
def test_row_fold_remainders_through_the_pass(dtype, nrows):
    # sums and products of a tree over its leading axis: the pass folds its
    # rows with pyet_reduce_rows (four at a time, then the last three or two)
    rng = np.random.default_rng(nrows)
    x = rng.integers(-3, 4, (nrows, 1000)).astype(dtype)
    X = pyet.asarray(x)
    for red, ref in (("sum", np.sum), ("prod", np.prod), ("max", np.max), ("min", np.min)):
        got = pyet.evaluate(getattr(pyet, red)(X * 1, axis=0))
        np.testing.assert_array_equal(np.asarray(got), ref(x * 1, axis=0), err_msg=red)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("where", [0, -1, 300])
def test_the_extreme_at_each_rows_ends(dtype, where):
    x = np.random.default_rng(3).standard_normal((4, 30000)).astype(dtype)
    x[:, where] = [50, -50, np.nan, 0]  # (4 x 30000: past SMALL_LEAF)
    for kind in ("max", "min"):
        for a, axis in ((x, 1), (np.asfortranarray(x.T), 0)):
            want = getattr(np, kind)(a, axis=axis)
            got = np.full(4, 9, dtype)
            pyet.asarray(got)[...] = getattr(pyet, kind)(pyet.asarray(a), axis=axis)
            assert got.tobytes() == want.tobytes(), (kind, axis)


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("shape,axis", [((2, 35001), 0), ((3, 30001), 0), ((7, 30001), 0),
                                        ((3, 30001), 1), ((400, 400), 0), ((400, 400), 1),
                                        ((2, 3, 12000), (0, 1)), ((2, 3, 12000), 2)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_integers(kind, dtype, shape, axis, order):
    # integer rows folded from the first row (element) on: no start value
    info = np.iinfo(dtype)
    x = np.random.default_rng(sum(shape)).integers(info.min, info.max, shape, dtype=dtype,
                                                   endpoint=True)
    x.reshape(-1)[::1009] = info.min if kind == "min" else info.max
    x = np.asarray(x, order=order)
    want = getattr(np, kind)(x, axis=axis)
    buf, dst = into_sentinels(want)
    pyet.asarray(dst)[...] = getattr(pyet, kind)(pyet.asarray(x), axis=axis)
    np.testing.assert_array_equal(dst, want)
    assert (buf[[0, -1]] == -7).all()


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_long_rows_without_a_way_fold_each_row(dtype, monkeypatch):
    # rows no way of the leaf's layout takes (several leading axes of an
    # F leaf; past ONE_CALL_BYTES on one thread) fold by fold_short_rows from
    # _folded_without_pass, the axes as one
    taken = []
    real = core.fold_short_rows
    monkeypatch.setattr(core, "fold_short_rows", lambda *a: taken.append(real(*a)) or taken[-1])
    rng = np.random.default_rng(3)
    pyet.set_num_threads(1)
    try:
        for x, axis in ((np.asfortranarray(values(rng, (64, 8, 300), np.float64)), (0, 1)),
                        (values(rng, (1100, 520), np.float64), 1)):
            x = x.astype(dtype) if dtype is np.float32 else (x * 1000).astype(dtype)
            for kind in ("max", "min"):
                taken.clear()
                want = getattr(np, kind)(x, axis=axis)
                buf, dst = into_sentinels(want)
                pyet.asarray(dst)[...] = getattr(pyet, kind)(pyet.asarray(x), axis=axis)
                assert dst.tobytes() == want.tobytes()
                assert (buf[[0, -1]] == -7).all()
                assert taken == [True], (x.shape, axis, taken)
    finally:
        pyet.set_num_threads(1)
