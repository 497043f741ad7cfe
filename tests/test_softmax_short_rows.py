"""Row softmax, log-softmax and the cross-entropy gradient on short rows: the
kernels take contiguous rows shorter than 32 a block of rows at a time (each
row's max and sums side by side, the exps of the block in one loop), and fold
the 32 lanes of longer rows pairwise.  Each must give the bits of the row at
a time path (rows apart in memory: a strided view), and NumPy's values."""

import numpy as np
import pytest
from pyet._kernels.nn import softmax_rows, xent_grad_rows

import pyet

SHAPES = [(1, 1), (3, 2), (200, 1), (130, 2), (129, 3), (300, 4), (70, 5), (63, 10), (64, 10),
          (65, 10), (200, 16), (130, 31), (70, 32), (67, 33), (40, 64), (9, 100)]


def data(shape, dt, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 4).astype(dt)


def apart(a):
    """``a``'s values with rows apart in memory (the row at a time path)."""
    wide = np.full((a.shape[0], a.shape[1] + 3), np.nan, a.dtype)
    wide[:, :a.shape[1]] = a
    return wide[:, :a.shape[1]]


def np_softmax(x, log):
    m = x.max(1, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(1, keepdims=True)
    return (x - m) - np.log(s) if log else e / s


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_rows_bits_equal_row_at_a_time_and_close_to_numpy(shape, log, dt):
    x = data(shape, dt)
    block = np.empty_like(x)
    softmax_rows(x, block, log)
    rows = apart(np.empty_like(x))
    softmax_rows(apart(x), rows, log)
    np.testing.assert_array_equal(block.view(np.uint8), np.ascontiguousarray(rows).view(np.uint8))
    tol = 2e-6 if dt == np.float32 else 1e-14
    np.testing.assert_allclose(block, np_softmax(x.astype(np.float64), log), rtol=tol * 4,
                               atol=tol * 4)
    f = pyet.log_softmax if log else pyet.softmax
    np.testing.assert_array_equal(pyet.evaluate(f(pyet.asarray(x), 1)).numpy(), block)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_short_rows_nan_inf_and_ties(log):
    x = data((70, 10), np.float32, 1)
    x[3, 4] = np.nan       # a NaN row is NaN throughout
    x[5, :] = -np.inf      # all -inf: exp(nan) rows
    x[6, 2] = np.inf
    x[7, :] = 0.0
    x[7, ::2] = -0.0       # ties of signed zeros
    x[8, :] = 5.0          # equal values
    block = np.empty_like(x)
    with np.errstate(invalid="ignore"):
        softmax_rows(x, block, log)
        rows = apart(np.empty_like(x))
        softmax_rows(apart(x), rows, log)
        want = np_softmax(x, log)
    np.testing.assert_array_equal(block.view(np.uint32), np.ascontiguousarray(rows).view(np.uint32))
    assert np.isnan(block[3]).all() and np.isnan(block[5]).all()
    np.testing.assert_allclose(block[[0, 1, 2, 4, 7, 8, 69]], want[[0, 1, 2, 4, 7, 8, 69]],
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("per_row_c", [False, True])
def test_xent_grad_rows_bits_equal_row_at_a_time(shape, dt, per_row_c):
    logp = np_softmax(data(shape, dt), True).astype(dt)
    t = np.random.default_rng(2).uniform(0, 1, shape).astype(dt)
    c = (np.linspace(0.5, 2, shape[0]) if per_row_c else np.array([0.25])).astype(dt)
    block = np.empty_like(logp)
    xent_grad_rows(logp, t, c, block)
    rows = apart(np.empty_like(logp))
    xent_grad_rows(apart(logp), apart(t), c, rows)
    np.testing.assert_array_equal(block.view(np.uint8), np.ascontiguousarray(rows).view(np.uint8))
    want = c[:, None] * (np.exp(logp.astype(np.float64)) * t.sum(1, keepdims=True) - t)
    tol = 1e-5 if dt == np.float32 else 1e-12
    np.testing.assert_allclose(block, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_xent_grad_rows_into_the_targets_or_logp(dt):
    # the destination may be t or logp itself: the block path must not read
    # targets it has already overwritten
    logp = np_softmax(data((100, 10), dt), True).astype(dt)
    t = np.random.default_rng(3).uniform(0, 1, (100, 10)).astype(dt)
    c = np.array([1.0 / 100], dt)
    want = np.empty_like(logp)
    xent_grad_rows(logp, t, c, want)
    into_t, into_l = t.copy(), logp.copy()
    xent_grad_rows(logp, into_t, c, into_t)
    xent_grad_rows(into_l, t, c, into_l)
    np.testing.assert_array_equal(into_t, want)
    np.testing.assert_array_equal(into_l, want)


def test_block_boundaries_leave_sentinels():
    # 64-row blocks: the rows after the last one and before the first untouched
    x = data((130, 10), np.float32, 4)
    buf = np.full((132, 10), 7.0, np.float32)
    softmax_rows(x, buf[1:131], False)
    assert (buf[0] == 7).all() and (buf[131] == 7).all()
    np.testing.assert_allclose(buf[1:131].sum(1), 1, rtol=1e-5)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape", [(300, 1), (301, 2), (129, 3), (100, 8), (70, 33), (5, 6, 7)])
def test_fortran_leaves_along_every_axis(shape, log, dt):
    # a Fortran leaf into a Fortran destination (or a new array) runs as the
    # C-order softmax of their transposes along the mirrored axis; inside a
    # tree (computed aside, in Fortran order) and into a C destination (the
    # rows or columns path): NumPy's values each
    x = np.asfortranarray(data(shape, dt, seed=len(shape)))
    f = pyet.log_softmax if log else pyet.softmax
    tol = 4 * (2e-6 if dt == np.float32 else 1e-14)
    for axis in range(x.ndim):
        ref = np.moveaxis(np_softmax(
            np.moveaxis(x, axis, -1).reshape(-1, shape[axis]).astype(np.float64), log).reshape(
                np.moveaxis(x, axis, -1).shape), -1, axis)
        buf = np.full(x.size + 8, -7, dt)
        out = buf[4:-4].reshape(shape[::-1]).T
        pyet.asarray(out)[...] = f(pyet.asarray(x), axis)
        np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)
        assert (buf[:4] == -7).all() and (buf[-4:] == -7).all()
        got = pyet.evaluate(f(pyet.asarray(x), axis) + 0.5).numpy()  # computed aside
        np.testing.assert_allclose(got, ref + 0.5, rtol=tol, atol=tol)
        c_out = np.empty(shape, dt)
        pyet.asarray(c_out)[...] = f(pyet.asarray(x), axis)
        np.testing.assert_allclose(c_out, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape, axis", [((3000, 2), 1), ((3000, 5), 0), ((50, 40), 1),
                                         ((4, 5, 6), 2), ((4, 5, 6), 0)])
def test_fortran_leaf_in_place(shape, axis, log):
    # X[...] = softmax(X) on a Fortran X: the transposes are the same memory
    x = np.asfortranarray(data(shape, np.float64, seed=9))
    want = np.moveaxis(np_softmax(np.moveaxis(x, axis, -1).reshape(-1, shape[axis]), log).reshape(
        np.moveaxis(x, axis, -1).shape), -1, axis)
    X = pyet.asarray(x)
    X[...] = (pyet.log_softmax if log else pyet.softmax)(X, axis)
    np.testing.assert_allclose(x, want, rtol=4e-14, atol=4e-14)
