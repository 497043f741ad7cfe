"""The spatial kernels' fast paths (pyet/_kernels/spatial.pyx) give the bits of
the general ones: col2im a plane at a time (each pixel's sum in the order of
the taps (py, px)), pooling and its gradient over 2 x 2 windows at steps of 2
that tile the planes (``tile2``: no window loops, a line a row of windows),
and im2col's short runs as moves of constant size (copy_runs).  Ties, signed
zeros and NaN decide max pooling's bits, so the data is drawn from a few
values; destinations carry sentinel bytes around them."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_nn_kernel_threads import ref_im2col

import pyet
from pyet._kernels import spatial as S

SENTINEL = 0xA5
DTYPES = [np.float32, np.float64, np.int32, np.int64]


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def guarded(shape, dtype, layout):
    """A destination of shape inside sentinel bytes: (whole buffer, view)."""
    dtype = np.dtype(dtype)
    big = tuple(2 * n + 2 for n in shape) if layout != "C" else tuple(shape)
    buf = np.empty(int(np.prod(big)) * dtype.itemsize + 64, np.uint8)
    buf[...] = SENTINEL
    arr = buf[32:32 + int(np.prod(big)) * dtype.itemsize].view(dtype).reshape(big)
    if layout == "C":
        return buf, arr
    step = -2 if layout == "reversed" else 2
    return buf, arr[tuple(slice(1, 1 + 2 * n, 2) if step > 0 else slice(2 * n - 1, None, -2)
                          for n in shape)]


def untouched_outside(buf, view):
    """Every byte of buf outside view's elements still holds the sentinel."""
    mask = np.ones(buf.shape, bool)
    base = view.__array_interface__["data"][0] - buf.__array_interface__["data"][0]
    offsets = np.zeros((), np.int64)
    for n, s in zip(view.shape, view.strides, strict=True):
        offsets = offsets[..., None] + np.arange(n) * s
    for k in range(view.dtype.itemsize):
        mask[base + offsets.ravel() + k] = False
    return bool(np.all(buf[mask] == SENTINEL))


def laid_out(a, layout):
    if layout == "C":
        return a
    big = np.zeros(tuple(2 * n for n in a.shape), a.dtype)
    v = big[tuple(slice(None, None, -2 if layout == "reversed" else 2) for _ in a.shape)]
    v[...] = a
    return v


def tie_data(shape, dtype, seed):
    """Few distinct values: ties in windows, and for floats -0.0, +0.0 and NaN."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        values = np.array([-0.0, 0.0, 1.0, -2.0, np.nan], dtype)
        return values[rng.choice(5, shape, p=[0.3, 0.3, 0.2, 0.15, 0.05])]
    return rng.integers(-2, 3, shape).astype(dtype)


# ------------------------------------------------------------------ col2im

def ref_col2im(col, shape, ky, kx, sy, sx, dy, dx):
    """Each tap's patch rows added in the order of (py, px), from zero."""
    N, C, H, W = shape
    oH, oW = (H - dy * (ky - 1) - 1) // sy + 1, (W - dx * (kx - 1) - 1) // sx + 1
    taps = col.reshape(C, ky, kx, N, oH, oW)
    out = np.zeros(shape, col.dtype)
    for py in range(ky):
        for px in range(kx):
            out[:, :, py * dy:py * dy + sy * (oH - 1) + 1:sy,
                px * dx:px * dx + sx * (oW - 1) + 1:sx] += taps[:, py, px].transpose(1, 0, 2, 3)
    return out


COL_GEOMS = [((4, 16, 6, 6), (3, 3, 1, 1, 1, 1)),    # the demo CNN's second convolution
             ((3, 2, 9, 11), (3, 2, 2, 1, 1, 2)),    # steps and dilations
             ((2, 3, 7, 7), (2, 2, 2, 2, 1, 1)),     # patches that do not overlap
             ((1, 1, 5, 40), (1, 5, 1, 3, 1, 1))]    # one plane, long rows


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["C", "strided", "reversed"])
@pytest.mark.parametrize("shape,geom", COL_GEOMS)
def test_col2im_planes_sum_in_tap_order(dtype, layout, shape, geom):
    ky, kx, sy, sx, dy, dx = geom
    N, C, H, W = shape
    oH, oW = (H - dy * (ky - 1) - 1) // sy + 1, (W - dx * (kx - 1) - 1) // sx + 1
    rng = np.random.default_rng(3)
    col = rng.uniform(-3, 3, (C * ky * kx, N * oH * oW))
    col = col.astype(dtype) if np.dtype(dtype).kind == "f" else (col * 20).astype(dtype)
    want = ref_col2im(col, shape, *geom)
    buf, out = guarded(shape, dtype, layout)
    S.col2im_into(out, laid_out(col, layout), *geom)
    np.testing.assert_array_equal(bits(out), bits(want))
    assert untouched_outside(buf, out)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 3), c=st.integers(1, 3), h=st.integers(1, 9), w=st.integers(1, 9),
       ky=st.integers(1, 3), kx=st.integers(1, 3), sy=st.integers(1, 3), sx=st.integers(1, 3),
       dy=st.integers(1, 2), dx=st.integers(1, 2))
def test_col2im_random_geometries(n, c, h, w, ky, kx, sy, sx, dy, dx):
    if dy * (ky - 1) + 1 > h or dx * (kx - 1) + 1 > w:
        return
    oH, oW = (h - dy * (ky - 1) - 1) // sy + 1, (w - dx * (kx - 1) - 1) // sx + 1
    col = np.random.default_rng(n + 7 * h).standard_normal((c * ky * kx, n * oH * oW))
    geom = (ky, kx, sy, sx, dy, dx)
    out = np.full((n, c, h, w), 7.0)
    S.col2im_into(out, col, *geom)
    np.testing.assert_array_equal(bits(out), bits(ref_col2im(col, (n, c, h, w), *geom)))


# ------------------------------------------------------------------ pooling

def general_twin(x, fill):
    """x (P, H, W) grown by a row and a column: H + 1 odd, so 2 x 2 windows at
    steps of 2 no longer tile it and the general kernel runs; its first
    (H/2, W/2) windows are x's."""
    P, H, W = x.shape
    big = np.full((P, H + 1, W + 1), fill, x.dtype)
    big[:, :H, :W] = x
    return big


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["C", "strided", "reversed"])
@pytest.mark.parametrize("op", ["max", "sum", "avg"])
@pytest.mark.parametrize("shape", [(5, 4, 6), (3, 2, 2), (1, 8, 16), (130, 4, 4)])
def test_tile2_pool_and_unpool_match_general(dtype, layout, op, shape):
    if op == "avg" and np.dtype(dtype).kind != "f":
        pytest.skip("avg pools floats")
    P, H, W = shape
    x = tie_data(shape, dtype, seed=1)
    # the general kernel on the grown twin: its first windows are x's
    twin = general_twin(x, x.flat[0])
    twin_pooled = np.empty((P, H // 2 + 1, W // 2 + 1), dtype)
    S.pool_into(twin_pooled, twin, 2, 2, 2, 2, op)
    buf, pooled = guarded((P, H // 2, W // 2), dtype, layout)
    S.pool_into(pooled, laid_out(x, layout), 2, 2, 2, 2, op)
    np.testing.assert_array_equal(bits(pooled), bits(twin_pooled[:, :H // 2, :W // 2]))
    assert untouched_outside(buf, pooled)

    grad = tie_data(pooled.shape, dtype, seed=2)
    twin_grad = np.zeros(twin_pooled.shape, dtype)
    twin_grad[:, :H // 2, :W // 2] = grad
    twin_out = np.empty(twin.shape, dtype)
    S.unpool_into(twin_out, twin, twin_pooled, twin_grad, 2, 2, 2, 2, op)
    buf, out = guarded(shape, dtype, layout)
    S.unpool_into(out, laid_out(x, layout), laid_out(np.ascontiguousarray(pooled), layout),
                  laid_out(grad, layout), 2, 2, 2, 2, op)
    np.testing.assert_array_equal(bits(out), bits(twin_out[:, :H, :W]))
    assert untouched_outside(buf, out)


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_tile2_unpool_into_its_own_source(dtype):
    # each window's four elements are read before any is written
    x = tie_data((6, 4, 8), dtype, seed=4)
    pooled = np.empty((6, 2, 4), dtype)
    S.pool_into(pooled, x, 2, 2, 2, 2, "max")
    grad = tie_data(pooled.shape, dtype, seed=5)
    want = np.empty_like(x)
    S.unpool_into(want, x, pooled, grad, 2, 2, 2, 2, "max")
    S.unpool_into(x, x, pooled, grad, 2, 2, 2, 2, "max")
    np.testing.assert_array_equal(bits(x), bits(want))


def test_tile2_max_against_numpy():
    # NaN wins; ties and signed zeros compare equal (values, not bits, for NumPy)
    x = tie_data((40, 6, 8), np.float64, seed=6)
    pooled = np.empty((40, 3, 4))
    S.pool_into(pooled, x, 2, 2, 2, 2, "max")
    want = x.reshape(40, 3, 2, 4, 2).max(axis=(2, 4))
    np.testing.assert_array_equal(pooled, want)
    grad = np.arange(1.0, 1 + pooled.size).reshape(pooled.shape)
    out = np.empty_like(x)
    S.unpool_into(out, x, pooled, grad, 2, 2, 2, 2, "max")
    hit = x == np.repeat(np.repeat(pooled, 2, 1), 2, 2)
    np.testing.assert_array_equal(out, np.where(hit, np.repeat(np.repeat(grad, 2, 1), 2, 2), 0))


def test_pool_gradient_through_tile2_public_api():
    # pyet.pool and pyet.grad on a 2 x 2 tiling: the gradient of sum(pool(x) * v)
    # is v at each window's maxima (every tied one)
    a = np.random.default_rng(9).integers(0, 3, (3, 2, 6, 4)).astype(np.float32)
    v = np.random.default_rng(10).standard_normal((3, 2, 3, 2)).astype(np.float32)
    x = pyet.asarray(a)
    pooled = pyet.pool(x, 2, 2)
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(pooled)),
                                  a.reshape(3, 2, 3, 2, 2, 2).max(axis=(3, 5)))
    g = np.asarray(pyet.evaluate(pyet.grad(pyet.sum(pooled * pyet.asarray(v)), x)))
    up = a.reshape(3, 2, 3, 2, 2, 2).max(axis=(3, 5))
    hit = a == np.repeat(np.repeat(up, 2, 2), 2, 3)
    np.testing.assert_array_equal(g, np.where(hit, np.repeat(np.repeat(v, 2, 2), 2, 3), 0))


# ------------------------------------------------------------------ im2col

# runs of oW elements: 4, 8, 16, 32 and 64 bytes take copy_runs' constant
# moves, the others (and steps along W) copy_row's general loop
@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.float64, np.int64])
@pytest.mark.parametrize("ow", [1, 2, 3, 4, 8, 16, 32, 64])
@pytest.mark.parametrize("layout", ["C", "strided", "reversed"])
def test_im2col_short_runs(dtype, ow, layout):
    rng = np.random.default_rng(ow)
    shape = (3, 2, 5, ow + 2)
    img = rng.standard_normal(shape) > 0 if dtype == np.bool_ else \
        (rng.standard_normal(shape) * 10).astype(dtype)
    geom = (3, 3, 1, 1, 1, 1)
    want = ref_im2col(img, *geom)
    buf, out = guarded(want.shape, dtype, layout)
    S.im2col_into(out, laid_out(img, layout), *geom)
    np.testing.assert_array_equal(out, want)
    assert untouched_outside(buf, out)


@pytest.mark.parametrize("geom", [(3, 3, 2, 1, 1, 1), (2, 3, 1, 2, 1, 1), (3, 2, 1, 1, 2, 2)])
def test_im2col_runs_with_row_steps_and_dilations(geom):
    # steps between patch rows (sy) and dilations keep the constant moves;
    # a step along the row (sx) takes the general loop
    img = np.random.default_rng(1).standard_normal((2, 3, 11, 10)).astype(np.float32)
    want = ref_im2col(img, *geom)
    out = np.full(want.shape, 7, np.float32)
    S.im2col_into(out, img, *geom)
    np.testing.assert_array_equal(out, want)
