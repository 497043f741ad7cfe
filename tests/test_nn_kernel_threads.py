"""The NN-block kernels (pyet/_kernels/nn.pyx, spatial.pyx) on one thread and on two
(the thread pool of threads.h, run_lines): the same bits, on sizes split into chunks,
on odd sizes (one line, fewer lines than threads, fewer lines than chunks) and on
strided and reversed views."""

import numpy as np
import pytest

import pyet
from pyet._kernels import nn as K
from pyet._kernels import parallel
from pyet._kernels import spatial as S


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "f":
        return rng.uniform(-3, 3, shape).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


def bits(a):
    """a's elements as unsigned integers of its itemsize (NaNs and -0.0 compared exactly)."""
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.itemsize}") if a.itemsize > 1 else a.view(np.uint8)


def two(work, lines):
    """Whether threads_for gives two threads under the fixture (64 elements a thread)."""
    return work >= 128 and lines >= 2


def one_pool_pass():
    """Run a pass of the pool on one thread: last_pass_threads() is then 1."""
    pyet.set_num_threads(1)
    out = pyet.empty(1000)
    out[...] = pyet.asarray(np.ones(1000)) + 1
    assert parallel.last_pass_threads() == 1


def one_and_two(run, threaded=True):
    """run() on one thread, then on two; asserts the same bits and (``threaded``)
    that the second run's pass ran on two threads.  Returns the first result."""
    pyet.set_num_threads(2)
    if pyet.get_num_threads() < 2:
        pytest.skip("pyet runs on one thread here (no OpenMP)")
    one_pool_pass()
    got1 = run()
    pyet.set_num_threads(2)
    got2 = run()
    if threaded:
        assert parallel.last_pass_threads() == 2
    assert got1.shape == got2.shape and got1.dtype == got2.dtype
    np.testing.assert_array_equal(bits(got1), bits(got2))
    return got1


def view(a, kind):
    """a (fresh memory) as a plain, a strided or a reversed view."""
    if kind == "C":
        return a
    big = np.zeros(tuple(2 * n for n in a.shape), a.dtype)
    v = big[tuple(slice(None, None, 2) for _ in a.shape)]
    if kind == "reversed":
        v = big[tuple(slice(None, None, -2) for _ in a.shape)]
    v[...] = a
    return v


def dest(shape, dtype, kind):
    """A destination of shape, filled with garbage, as view() lays it out."""
    return view(np.full(shape, 7, dtype), kind)


LAYOUTS = ["C", "strided", "reversed"]


# ------------------------------------------------------------------ gathers

@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.int64])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("n,m", [(1000, 37), (3, 50), (1, 300), (17, 1)])
def test_take(threaded, dtype, layout, n, m):
    w = view(data((120, m), dtype), layout)
    idx = np.random.default_rng(1).integers(0, 120, n)

    def run():
        out = dest((n, m), dtype, layout)
        K.take_into(out, w, idx)
        return out

    got = one_and_two(run, threaded=two(n * m, n))
    np.testing.assert_array_equal(got, w[idx])


@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("n", [5000, 3, 1])
def test_choose(threaded, dtype, layout, n):
    a = view(data((n, 9), dtype), layout)
    idx = np.random.default_rng(2).integers(0, 9, n)

    def run():
        out = dest((n,), dtype, layout)
        K.choose_into(out, a, idx)
        return out

    got = one_and_two(run, threaded=two(n, n))
    np.testing.assert_array_equal(got, a[np.arange(n), idx])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("n,rows,m", [(30, 500, 7),       # threads split the rows
                                      (200, 1000, 300),
                                      (2, 9, 40),         # 9 rows in 2 chunks
                                      (2000, 50, 300),    # dense: one thread
                                      (40, 1, 5),         # one row
                                      (1, 3, 2)])
def test_take_grad(threaded, dtype, layout, n, rows, m):
    # repeated indices: those rows of out are sums, in the order of i
    g = view(data((n, m), dtype), layout)
    idx = np.random.default_rng(3).integers(0, rows, n)
    idx[: n // 2] = idx[-1]

    def run():
        out = dest((rows, m), dtype, layout)
        K.take_grad_into(out, g, idx)
        return out

    # threads split the rows when zeroing them dominates (4 rows an index)
    got = one_and_two(run, threaded=two(n * m + rows * m, max(rows, m)) and rows >= 4 * n)
    want = np.zeros((rows, m), dtype)
    np.add.at(want, idx, g)
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------ softmax

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(500, 10), (300, 200), (3, 1000), (1, 5000)])
@pytest.mark.parametrize("take_log", [False, True])
def test_softmax_rows(threaded, dtype, layout, shape, take_log):
    x = data(shape, dtype)
    x[0, 0] = np.nan if shape[0] > 2 else x[0, 0]
    xv = view(x, layout)
    if layout == "reversed":  # rows reversed, each row contiguous: read in place
        xv = np.ascontiguousarray(x[::-1])[::-1]

    def run():
        out = dest(shape, dtype, layout)
        K.softmax_rows(xv, out, take_log)
        return out

    got = one_and_two(run, threaded=two(x.size, shape[0]))
    e = x - x.max(1, keepdims=True)
    want = e - np.log(np.exp(e).sum(1, keepdims=True)) if take_log else \
        np.exp(e) / np.exp(e).sum(1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(40, 30, 20), (2, 50, 600), (1, 40, 300), (1, 200, 7),
                                   (500, 3, 2)])
def test_softmax_cols(threaded, dtype, layout, shape):
    x = view(data(shape, dtype), layout)

    def run():
        out = dest(shape, dtype, layout)
        K.softmax_cols(x, out, False)
        return out

    # (1, 200, 7), (1, 40, 300): one tile, two tiles of 150 columns
    got = one_and_two(run, threaded=two(x.size, shape[0] * ((shape[2] + 255) // 256)))
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("targets", ["rows", "indices"])
@pytest.mark.parametrize("shape", [(700, 13), (200, 300), (1, 400), (3, 70)])
@pytest.mark.parametrize("per_row", [False, True])
def test_xent_grad(threaded, dtype, targets, shape, per_row):
    x = data(shape, dtype)
    logp = x - x.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    logp = logp[::-1].copy()[::-1]  # reversed rows
    if targets == "rows":
        t = view(np.abs(data(shape, dtype, seed=4)), "strided")
    else:
        t = np.random.default_rng(5).integers(0, shape[1], shape[0]).astype(np.intp)
    c = data((shape[0] if per_row else 1,), dtype, seed=6)

    def run():
        out = dest(shape, dtype, "strided")
        K.xent_grad_rows(logp, t, c, out)
        return out

    got = one_and_two(run, threaded=two(logp.size, shape[0]))
    tt = t if targets == "rows" else np.eye(shape[1], dtype=dtype)[t]
    want = c[:, None] * (np.exp(logp) * tt.sum(1, keepdims=True) - tt)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------ spatial

def ref_im2col(img, ky, kx, sy, sx, dy, dx):
    N, C, H, W = img.shape
    oH, oW = (H - dy * (ky - 1) - 1) // sy + 1, (W - dx * (kx - 1) - 1) // sx + 1
    out = np.empty((C, ky, kx, N, oH, oW), img.dtype)
    for py in range(ky):
        for px in range(kx):
            out[:, py, px] = img[:, :, py * dy:py * dy + sy * (oH - 1) + 1:sy,
                                 px * dx:px * dx + sx * (oW - 1) + 1:sx].transpose(1, 0, 2, 3)
    return out.reshape(C * ky * kx, N * oH * oW)


GEOMS = [((3, 4, 20, 21), (3, 3, 2, 1, 1, 2)),   # many rows
         ((2, 1, 9, 9), (1, 1, 1, 1, 1, 1)),     # one row (C*ky*kx = 1)
         ((1, 1, 1, 30), (1, 2, 1, 1, 1, 1))]    # fewer rows than chunks


@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.int64])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape,geom", GEOMS)
def test_im2col(threaded, dtype, layout, shape, geom):
    img = view(data(shape, dtype), layout)
    want = ref_im2col(img, *geom)

    def run():
        out = dest(want.shape, dtype, layout)
        S.im2col_into(out, img, *geom)
        return out

    got = one_and_two(run, threaded=two(want.size, want.shape[0]))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape,geom", GEOMS + [((1, 1, 1, 40), (1, 3, 1, 1, 1, 1))])
def test_col2im(threaded, dtype, layout, shape, geom):
    # overlapping patches: pixels are sums, in the order of (py, px)
    cols = ref_im2col(np.zeros(shape, dtype), *geom).shape
    col = view(data(cols, dtype), layout)

    def run():
        out = dest(shape, dtype, layout)
        S.col2im_into(out, col, *geom)
        return out

    # a line an (image, channel) plane
    got = one_and_two(run, threaded=two(col.size + np.prod(shape), np.prod(shape[:2])))
    # the adjoint of im2col: <im2col(x), col> == <x, col2im(col)> (exact in int64)
    x = data(shape, np.int64, seed=7)
    lhs = np.sum(ref_im2col(x, *geom) * col.astype(np.int64 if dtype in (np.int32, np.int64)
                                                   else np.float64))
    rhs = np.sum(x * got.astype(np.int64 if dtype in (np.int32, np.int64) else np.float64))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-5)


def ref_pool(x, ky, kx, sy, sx, op):
    P, H, W = x.shape
    pH, pW = min(H - ky + sy - 1, H - 1) // sy + 1, min(W - kx + sx - 1, W - 1) // sx + 1
    out = np.empty((P, pH, pW), x.dtype)
    for i in range(pH):
        for j in range(pW):
            win = x[:, i * sy:i * sy + ky, j * sx:j * sx + kx]
            out[:, i, j] = win.max((1, 2)) if op == "max" else win.sum((1, 2)) if op == "sum" \
                else win.sum((1, 2)) / (ky * kx)
    return out


POOLS = [((6, 33, 31), (3, 3, 2, 2)),   # many lines
         ((1, 2, 40), (2, 2, 2, 2)),    # one pooled line
         ((1, 1, 50), (1, 3, 1, 2))]    # one line, fewer lines than threads


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", ["max", "sum", "avg"])
@pytest.mark.parametrize("shape,geom", POOLS)
def test_pool_and_unpool(threaded, dtype, layout, op, shape, geom):
    if op == "avg" and np.dtype(dtype).kind != "f":
        pytest.skip("avg pools floats")
    x = data(shape, dtype).round(0).astype(dtype)  # ties for max
    if np.dtype(dtype).kind == "f":
        x[0, 0, 0] = np.nan
    x = view(x, layout)
    want = ref_pool(x, *geom, op)

    def run():
        out = dest(want.shape, dtype, layout)
        S.pool_into(out, x, *geom, op)
        return out

    got = one_and_two(run, threaded=two(want.size * min(geom[0], shape[1]) * min(geom[1], shape[2]),
                                       want.shape[0] * want.shape[1]))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    pooled = view(got, layout)
    grad = view(data(want.shape, dtype, seed=8), layout)

    def run_grad():
        out = dest(shape, dtype, layout)
        S.unpool_into(out, x, pooled, grad, *geom, op)
        return out

    ky, kx, sy, sx = geom
    # a line an input row; a row of windows where 2 x 2 windows tile the planes
    tile2 = geom == (2, 2, 2, 2) and shape[1] % 2 == 0 and shape[2] % 2 == 0
    lines = shape[0] * (shape[1] // 2 if tile2 else shape[1])
    one_and_two(run_grad, threaded=two(x.size * (1 + (ky // sy + 1) * (kx // sx + 1)), lines))


def test_public_blocks_on_two_threads_match_one(threaded):
    # through the nodes: softmax (both axes), take and its gradient, pooling
    rng = np.random.default_rng(9)
    x = rng.standard_normal((64, 48, 40)).astype(np.float32)
    W = rng.standard_normal((100, 32))
    idx = rng.integers(0, 100, 500)
    for expr in (lambda: pyet.softmax(x, axis=1), lambda: pyet.log_softmax(x[:, ::-1], axis=2),
                 lambda: pyet.take(idx, W), lambda: pyet.take_grad(idx, pyet.take(idx, W), 100),
                 lambda: pyet.pool(x, 2, 3, 1, 2), lambda: pyet.unpack_patch2col(x[None], 3, 3)):
        # (the kernel's pass may be followed by others: no thread count asserted)
        one_and_two(lambda expr=expr: np.asarray(pyet.evaluate(expr())), threaded=False)
