"""Spatial blocks: unpack_patch2col (im2col), pack_col2patch (col2im), pool, unpool.
References: sliding_window_view for patches and windows, slice-wise sums for
col2im and unpool."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import sliding_window_view

import pyet
from pyet._kernels import parallel as _parallel

NUMERIC = [np.int32, np.int64, np.float32, np.float64]


def arr(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-5, 5, size=shape).round(2).astype(dtype)


def ev(e):
    return np.asarray(pyet.evaluate(e))


def eq(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.fixture
def threaded():
    before = pyet.get_num_threads()
    pyet.set_num_threads(2)
    _parallel.set_min_per_thread(16)
    yield
    _parallel.set_min_per_thread(1 << 16)
    pyet.set_num_threads(before)


# ------------------------------------------------------------ references

def ref_im2col(img, ky, kx, sy=1, sx=1, dy=1, dx=1):
    img = img.reshape((int(np.prod(img.shape[:-3])),) + img.shape[-3:])
    ey, ex = dy * (ky - 1) + 1, dx * (kx - 1) + 1
    win = sliding_window_view(img, (ey, ex), axis=(2, 3))[:, :, ::sy, ::sx, ::dy, ::dx]
    N, C, oh, ow = win.shape[:4]
    return win.transpose(1, 4, 5, 0, 2, 3).reshape(C * ky * kx, N * oh * ow)


def ref_col2im(col, shape, ky, kx, sy=1, sx=1, dy=1, dx=1):
    N, (C, H, W) = int(np.prod(shape[:-3])), shape[-3:]
    oh, ow = (H - dy * (ky - 1) - 1) // sy + 1, (W - dx * (kx - 1) - 1) // sx + 1
    out = np.zeros((N, C, H, W), col.dtype)
    patches = col.reshape(C, ky, kx, N, oh, ow).transpose(1, 2, 3, 0, 4, 5)
    for py in range(ky):  # one slice per tap: no element twice in a slice
        for px in range(kx):
            out[:, :, py * dy:py * dy + sy * (oh - 1) + 1:sy,
                px * dx:px * dx + sx * (ow - 1) + 1:sx] += patches[py, px]
    return out.reshape(shape)


def pooled_hw(H, W, ky, kx, sy, sx):
    return min(H - ky + sy - 1, H - 1) // sy + 1, min(W - kx + sx - 1, W - 1) // sx + 1


def ref_pool(x, ky, kx, sy, sx, op="max"):
    H, W = x.shape[-2:]
    ph, pw = pooled_hw(H, W, ky, kx, sy, sx)
    out = np.empty(x.shape[:-2] + (ph, pw), x.dtype)
    for py in range(ph):
        for px in range(pw):
            win = x[..., py * sy:py * sy + ky, px * sx:px * sx + kx]
            if op == "max":
                out[..., py, px] = win.max(axis=(-2, -1))
            else:
                total = np.zeros(x.shape[:-2], x.dtype)
                for row in np.moveaxis(win, -2, 0):  # in MShadow's order: row by row
                    for v in np.moveaxis(row, -1, 0):
                        total += v
                out[..., py, px] = total / x.dtype.type(ky * kx) if op == "avg" else total
    return out


def ref_unpool(src, pooled, grad, ky, kx, sy, sx, op="max"):
    out = np.zeros_like(src)
    ph, pw = pooled.shape[-2:]
    for py in range(ph):
        for px in range(pw):
            win = (Ellipsis, slice(py * sy, py * sy + ky), slice(px * sx, px * sx + kx))
            g = grad[..., py, px, None, None]
            if op == "max":
                hit = src[win] == pooled[..., py, px, None, None]
                out[win] += np.where(hit, g, src.dtype.type(0))
            else:
                out[win] += g
    return out / src.dtype.type(ky * kx) if op == "avg" else out


# ------------------------------------------------------ reference values

def test_issue_reference_values():
    x = np.arange(16.0).reshape(4, 4)
    eq(ev(pyet.pool(x, 2, 2, 2, 2)), np.array([[5.0, 7.0], [13.0, 15.0]]))
    img = np.arange(1.0, 10.0).reshape(1, 3, 3)
    cols = np.array([[1, 2, 4, 5], [2, 3, 5, 6], [4, 5, 7, 8], [5, 6, 8, 9]], np.float64)
    eq(ev(pyet.unpack_patch2col(img, 2, 2)), cols)
    eq(ev(pyet.pack_col2patch(cols, (1, 3, 3), 2, 2)),
       np.array([[[1.0, 4.0, 3.0], [8.0, 20.0, 12.0], [7.0, 16.0, 9.0]]]))


def test_pool_clips_the_last_window():
    x = np.arange(25.0).reshape(5, 5)
    # MShadow's size: min(5 - 2 + 2 - 1, 4) // 2 + 1 = 3; the last window is one row/column
    eq(ev(pyet.pool(x, 2, 2, 2, 2)), np.array([[6, 8, 9], [16, 18, 19], [21, 23, 24.0]]))
    eq(ev(pyet.pool(x, 2, 2, 2, 2, op="sum"))[2], np.array([41, 45, 24.0]))
    eq(ev(pyet.pool(x, 2, 2, 2, 2, op="avg"))[2], np.array([41, 45, 24.0]) / 4)


def test_unpool_max_ties_all_get_the_gradient():
    x = np.array([[1.0, 3.0], [3.0, 2.0]])
    pooled = ev(pyet.pool(x, 2, 2))
    eq(ev(pyet.unpool(x, pooled, np.array([[10.0]]), 2, 2)), np.array([[0, 10.0], [10.0, 0]]))


def test_pool_max_propagates_nan():
    x = np.arange(16.0).reshape(4, 4)
    x[0, 1] = np.nan
    got = ev(pyet.pool(x, 2, 2))
    assert np.isnan(got[0, 0]) and got[0, 1] == 7 and got[1, 1] == 15


# ---------------------------------------------------------------- im2col

@pytest.mark.parametrize("dtype", [np.bool_, *NUMERIC])
def test_im2col_dtypes(dtype):
    img = arr((2, 3, 5, 6), dtype)
    eq(ev(pyet.unpack_patch2col(img, 2, 3, 1, 1)), ref_im2col(img, 2, 3))


@pytest.mark.parametrize("ky,kx,stride,dilate", [
    (1, 1, 1, 1), (3, 3, 1, 1), (3, 2, 2, 1), (2, 2, 1, 2), (2, 3, (2, 1), (1, 3)),
    (3, 3, 3, 3), (1, 4, (1, 2), 1), (7, 8, 1, 1),
])
def test_im2col_parameters(ky, kx, stride, dilate):
    img = arr((2, 2, 7, 8))
    sy, sx = (stride, stride) if np.ndim(stride) == 0 else stride
    dy, dx = (dilate, dilate) if np.ndim(dilate) == 0 else dilate
    want = ref_im2col(img, ky, kx, sy, sx, dy, dx)
    eq(ev(pyet.unpack_patch2col(img, ky, kx, stride, dilate)), want)
    col_shape_img = pyet.pack_col2patch(want, img.shape, ky, kx, stride, dilate)
    eq(ev(col_shape_img), ref_col2im(want, img.shape, ky, kx, sy, sx, dy, dx))


@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 2, 4, 4), (0, 2, 3, 3), (2, 0, 3, 3)])
def test_im2col_leading_axes_fold_into_images(shape):
    img = arr(shape)
    eq(ev(pyet.unpack_patch2col(img, 2, 2)), ref_im2col(img, 2, 2))
    cols = ref_im2col(img, 2, 2)
    eq(ev(pyet.pack_col2patch(cols, shape, 2, 2)), ref_col2im(cols, shape, 2, 2))


@pytest.mark.parametrize("view", [
    lambda a: a[:, :, ::-1], lambda a: a[..., ::2], lambda a: a.transpose(0, 1, 3, 2),
    lambda a: a[::-1, ::-1, ::-2, ::-1], lambda a: np.broadcast_to(a[:1], (3,) + a.shape[1:]),
])
def test_im2col_col2im_strided_inputs(view):
    img = view(arr((3, 2, 8, 8)))
    want = ref_im2col(img, 3, 2, 1, 2)
    eq(ev(pyet.unpack_patch2col(img, 3, 2, (1, 2))), want)
    cols = view(arr((3, 2, 8, 8), seed=1))[0, 0, :4, :4]  # a strided (4, 4): C=1, 2x2 on 3x3
    eq(ev(pyet.pack_col2patch(cols, (1, 3, 3), 2, 2)), ref_col2im(cols, (1, 3, 3), 2, 2))


def test_im2col_col2im_in_trees_and_strided_destinations():
    img = arr((2, 3, 6, 6))
    w = arr((4, 3 * 3 * 3), seed=1)
    cols = ref_im2col(img, 3, 3)
    # convolution as a product, the patches a lazy operand
    got = ev(pyet.dot(w, pyet.unpack_patch2col(img, 3, 3)) + 1)
    np.testing.assert_allclose(got, w @ cols + 1)
    eq(ev(pyet.unpack_patch2col(pyet.asarray(img) * 2, 3, 3) - 1), cols * 2 - 1)
    dst = np.zeros((cols.shape[0] * 2, cols.shape[1]))[::-2]
    pyet.asarray(dst)[...] = pyet.unpack_patch2col(img, 3, 3)
    eq(dst, cols)
    dimg = np.zeros((2, 6, 6, 6))[:, ::2, :, ::-1]
    pyet.asarray(dimg)[...] = pyet.pack_col2patch(cols, img.shape, 3, 3)
    eq(dimg, ref_col2im(cols, img.shape, 3, 3))
    # (2, 3, 6, 6) destination whose image axes cannot be folded: computed aside, copied
    dimg = np.zeros((6, 6, 3, 2)).transpose(3, 2, 1, 0)
    pyet.asarray(dimg)[...] = pyet.pack_col2patch(cols, img.shape, 3, 3)
    eq(dimg, ref_col2im(cols, img.shape, 3, 3))
    # images (2, 2) whose axes cannot be folded into one: computed aside, copied
    cols5 = ref_im2col(arr((2, 2, 3, 6, 6)), 3, 3)
    dimg = np.zeros((2, 2, 3, 6, 6)).transpose(1, 0, 2, 3, 4)
    pyet.asarray(dimg)[...] = pyet.pack_col2patch(cols5, dimg.shape, 3, 3)
    eq(dimg, ref_col2im(cols5, dimg.shape, 3, 3))


@pytest.mark.parametrize("dtype", NUMERIC)
def test_col2im_is_the_adjoint_of_im2col(dtype):
    img, shape = arr((2, 3, 7, 6), dtype), (2, 3, 7, 6)
    cols = arr((3 * 3 * 2, 2 * 3 * 5), dtype, seed=1)
    lhs = np.sum(ev(pyet.unpack_patch2col(img, 3, 2, (2, 1), (1, 1))).astype(np.float64) * cols)
    rhs = np.sum(img.astype(np.float64) * ev(pyet.pack_col2patch(cols, shape, 3, 2, (2, 1))))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-6)


def test_im2col_col2im_threads(threaded):
    img = arr((3, 4, 20, 21), np.float32)
    cols = ref_im2col(img, 3, 3, 2, 1, 1, 2)
    eq(ev(pyet.unpack_patch2col(img, 3, 3, (2, 1), (1, 2))), cols)
    eq(ev(pyet.pack_col2patch(cols, img.shape, 3, 3, (2, 1), (1, 2))),
       ref_col2im(cols, img.shape, 3, 3, 2, 1, 1, 2))


# ------------------------------------------------------------ pool/unpool

@pytest.mark.parametrize("op,dtype", [(op, dt) for op in ("max", "sum", "avg") for dt in NUMERIC
                                      if op != "avg" or np.dtype(dt).kind == "f"])
def test_pool_and_unpool_dtypes(op, dtype):
    x = arr((2, 7, 6), dtype).round(0).astype(dtype)  # rounded: ties for max
    want = ref_pool(x, 3, 2, 2, 2, op)
    eq(ev(pyet.pool(x, 3, 2, 2, 2, op=op)), want)
    grad = arr(want.shape, dtype, seed=1)
    eq(ev(pyet.unpool(x, want, grad, 3, 2, 2, 2, op=op)), ref_unpool(x, want, grad, 3, 2, 2, 2, op))


@pytest.mark.parametrize("ky,kx,sy,sx", [(1, 1, 1, 1), (2, 2, 1, 1), (3, 3, 2, 2), (2, 3, 3, 1),
                                         (1, 2, 3, 2), (4, 5, 4, 5), (3, 1, 5, 1)])
@pytest.mark.parametrize("op", ["max", "sum", "avg"])
def test_pool_parameters(ky, kx, sy, sx, op):
    x = arr((3, 4, 5))
    want = ref_pool(x, ky, kx, sy, sx, op)
    eq(ev(pyet.pool(x, ky, kx, sy, sx, op)), want)
    grad = arr(want.shape, seed=2)
    eq(ev(pyet.unpool(x, want, grad, ky, kx, sy, sx, op)),
       ref_unpool(x, want, grad, ky, kx, sy, sx, op))


def test_pool_defaults_and_shapes():
    x = arr((2, 3, 2, 6, 4))
    eq(ev(pyet.pool(x, 2, 2)), ref_pool(x, 2, 2, 2, 2))  # stride: the window by default
    eq(ev(pyet.pool(x[0, 0, 0], 3, 1, 1)), ref_pool(x[0, 0, 0], 3, 1, 1, 1))
    eq(ev(pyet.pool(np.zeros((0, 4, 4)), 2, 2)), np.zeros((0, 2, 2)))


@pytest.mark.parametrize("view", [
    lambda a: a[::-1, ::2], lambda a: a[..., ::-1], lambda a: a.transpose(0, 2, 1),
    lambda a: np.broadcast_to(a[:1], a.shape),
])
def test_pool_unpool_strided_inputs(view):
    x = view(arr((4, 10, 10)))
    want = ref_pool(x, 2, 3, 2, 2)
    eq(ev(pyet.pool(x, 2, 3, 2, 2)), want)
    grad = view(arr((4, 10, 10), seed=3))[..., :want.shape[-2], :want.shape[-1]]
    eq(ev(pyet.unpool(x, want, grad, 2, 3, 2, 2)), ref_unpool(x, want, grad, 2, 3, 2, 2))


def test_pool_unpool_in_trees_and_strided_destinations():
    x = arr((2, 6, 6))
    p = ref_pool(x, 2, 2, 2, 2)
    eq(ev(pyet.pool(x, 2, 2, 2, 2) * 2 + 1), p * 2 + 1)
    eq(ev(pyet.pool(pyet.asarray(x) * -1, 2, 2, op="sum")), ref_pool(-x, 2, 2, 2, 2, "sum"))
    np.testing.assert_allclose(ev(pyet.sum(pyet.pool(x, 2, 2))), p.sum(), rtol=1e-15)
    # backward pass of max pooling, all lazy: pooled computed inside the tree
    g = np.ones_like(p)
    eq(ev(pyet.unpool(x, pyet.pool(x, 2, 2), g, 2, 2) * 3), ref_unpool(x, p, g, 2, 2, 2, 2) * 3)
    dst = np.zeros((2, 6, 3))[:, ::-2, ::-1]
    pyet.asarray(dst)[...] = pyet.pool(x, 2, 2)
    eq(dst, p)
    dst = np.zeros((6, 6, 2)).transpose(2, 1, 0)
    pyet.asarray(dst)[...] = pyet.unpool(x, p, g, 2, 2)
    eq(dst, ref_unpool(x, p, g, 2, 2, 2, 2))
    dst = np.zeros((3, 2, 6, 6)).transpose(1, 0, 2, 3)[:, ::-1]  # (2, 3, 6, 6), unfoldable
    x4 = arr((2, 3, 6, 6))
    pyet.asarray(dst)[...] = pyet.unpool(x4, ref_pool(x4, 2, 2, 2, 2), np.ones((2, 3, 3, 3)),
                                         2, 2)
    eq(dst, ref_unpool(x4, ref_pool(x4, 2, 2, 2, 2), np.ones((2, 3, 3, 3)), 2, 2, 2, 2))


def test_pool_into_its_own_input():
    x = arr((4, 4))
    t = pyet.asarray(x.copy())
    t[:2, :2] = pyet.pool(t, 2, 2)  # overlap: pooled first, then written
    want = x.copy()
    want[:2, :2] = ref_pool(x, 2, 2, 2, 2)
    eq(t.numpy(), want)


def test_pool_unpool_threads(threaded):
    x = arr((5, 33, 31), np.float32).round(0)
    for op in ("max", "sum", "avg"):
        want = ref_pool(x, 3, 3, 2, 2, op)
        eq(ev(pyet.pool(x, 3, 3, 2, 2, op)), want)
        g = arr(want.shape, np.float32, seed=4)
        eq(ev(pyet.unpool(x, want, g, 3, 3, 2, 2, op)), ref_unpool(x, want, g, 3, 3, 2, 2, op))


def test_pool_large_default_threads():
    x = arr((8, 128, 128), np.float32)
    eq(ev(pyet.pool(x, 2, 2)), x.reshape(8, 64, 2, 64, 2).max(axis=(2, 4)))


def test_repr_shows_parameters():
    x = np.zeros((1, 4, 4))
    assert "pool(Tensor(shape=(1,4,4), dtype=float64), kernel=(2, 2), stride=(2, 2), " \
           "op='max')" in repr(pyet.pool(x, 2, 2))
    assert "img_shape=(1, 4, 4)" in repr(pyet.pack_col2patch(np.zeros((4, 9)), (1, 4, 4), 2, 2))
    assert "dilate=(1, 1)" in repr(pyet.unpack_patch2col(x, 2, 2))


# ------------------------------------------------------------ hypothesis

@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 2), c=st.integers(1, 3), h=st.integers(1, 9), w=st.integers(1, 9),
       ky=st.integers(1, 4), kx=st.integers(1, 4), sy=st.integers(1, 3), sx=st.integers(1, 3),
       dy=st.integers(1, 3), dx=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_im2col_col2im_hypothesis(n, c, h, w, ky, kx, sy, sx, dy, dx, seed):
    if dy * (ky - 1) + 1 > h or dx * (kx - 1) + 1 > w:
        with pytest.raises(ValueError, match="does not fit"):
            pyet.unpack_patch2col(np.zeros((n, c, h, w)), ky, kx, (sy, sx), (dy, dx))
        return
    img = np.random.default_rng(seed).integers(-9, 9, size=(n, c, h, w)).astype(np.int64)
    cols = ref_im2col(img, ky, kx, sy, sx, dy, dx)
    eq(ev(pyet.unpack_patch2col(img, ky, kx, (sy, sx), (dy, dx))), cols)
    eq(ev(pyet.pack_col2patch(cols, img.shape, ky, kx, (sy, sx), (dy, dx))),
       ref_col2im(cols, img.shape, ky, kx, sy, sx, dy, dx))


@settings(max_examples=60, deadline=None)
@given(h=st.integers(1, 9), w=st.integers(1, 9), ky=st.integers(1, 4), kx=st.integers(1, 4),
       sy=st.integers(1, 4), sx=st.integers(1, 4), op=st.sampled_from(["max", "sum", "avg"]),
       seed=st.integers(0, 2**16))
def test_pool_unpool_hypothesis(h, w, ky, kx, sy, sx, op, seed):
    ky, kx = min(ky, h), min(kx, w)
    x = np.random.default_rng(seed).integers(-3, 3, size=(2, h, w)).astype(np.float64)
    want = ref_pool(x, ky, kx, sy, sx, op)
    eq(ev(pyet.pool(x, ky, kx, sy, sx, op)), want)
    g = np.random.default_rng(seed + 1).integers(-9, 9, size=want.shape).astype(np.float64)
    eq(ev(pyet.unpool(x, want, g, ky, kx, sy, sx, op)), ref_unpool(x, want, g, ky, kx, sy, sx, op))


# ---------------------------------------------------------------- errors

def test_patch_errors():
    img = np.zeros((1, 3, 3))
    with pytest.raises(ValueError, match=r"unpack_patch2col: img must be \(\.\.\., C, H, W\), "
                                         r"got shape \(3,3\)"):
        pyet.unpack_patch2col(np.zeros((3, 3)), 2, 2)
    with pytest.raises(ValueError, match="unpack_patch2col: a 4x1 kernel \\(dilated extent 4x1\\) "
                                         "does not fit in a 3x3 image"):
        pyet.unpack_patch2col(img, 4, 1)
    with pytest.raises(ValueError, match="unpack_patch2col: a 2x2 kernel \\(dilated extent 3x3\\) "
                                         "does not fit in a 2x5 image"):
        pyet.unpack_patch2col(np.zeros((1, 2, 5)), 2, 2, dilate=2)
    with pytest.raises(ValueError, match="unpack_patch2col: ky must be >= 1, got 0"):
        pyet.unpack_patch2col(img, 0, 1)
    with pytest.raises(ValueError, match="unpack_patch2col: stride must be >= 1, got 0"):
        pyet.unpack_patch2col(img, 1, 1, stride=(1, 0))
    with pytest.raises(ValueError, match="unpack_patch2col: dilate must be >= 1, got -1"):
        pyet.unpack_patch2col(img, 1, 1, dilate=-1)
    with pytest.raises(ValueError, match=r"unpack_patch2col: stride must be an int or a pair "
                                         r"\(y, x\), got \(1, 1, 1\)"):
        pyet.unpack_patch2col(img, 1, 1, stride=(1, 1, 1))
    with pytest.raises(TypeError, match="unpack_patch2col: kx must be an integer, got float"):
        pyet.unpack_patch2col(img, 1, 1.5)
    with pytest.raises(ValueError, match=r"pack_col2patch: img_shape must be \(\.\.\., C, H, W\), "
                                         r"got \(3, 3\)"):
        pyet.pack_col2patch(np.zeros((4, 4)), (3, 3), 2, 2)
    with pytest.raises(ValueError, match=r"pack_col2patch: col must have shape \(4,4\) for images "
                                         r"of shape \(1,3,3\), got \(4,5\)"):
        pyet.pack_col2patch(np.zeros((4, 5)), (1, 3, 3), 2, 2)
    with pytest.raises(ValueError, match="pack_col2patch: a 4x4 kernel"):
        pyet.pack_col2patch(np.zeros((16, 1)), (1, 3, 3), 4, 4)
    with pytest.raises(TypeError, match="pack_col2patch: col must be int32, int64, float32 or "
                                        "float64, got bool"):
        pyet.pack_col2patch(np.zeros((4, 4), bool), (1, 3, 3), 2, 2)


def test_pool_errors():
    x = np.zeros((3, 3))
    with pytest.raises(ValueError, match=r"pool: the input must be \(\.\.\., H, W\), got shape "
                                         r"\(3,\)"):
        pyet.pool(np.zeros(3), 1, 1)
    with pytest.raises(ValueError, match="pool: a 4x2 window does not fit in a 3x3 image"):
        pyet.pool(x, 4, 2)
    with pytest.raises(ValueError, match="pool: sy must be >= 1, got 0"):
        pyet.pool(x, 2, 2, 0, 1)
    with pytest.raises(ValueError, match=r"pool: op must be one of \('max', 'sum', 'avg'\), got "
                                         r"'min'"):
        pyet.pool(x, 2, 2, op="min")
    with pytest.raises(TypeError, match="pool: the input must be int32, int64, float32 or "
                                        "float64, got bool"):
        pyet.pool(np.zeros((3, 3), bool), 2, 2)
    with pytest.raises(TypeError, match=r"pool: op='avg' needs a float32 or float64 input, got "
                                        r"int32; cast it first"):
        pyet.pool(np.zeros((3, 3), np.int32), 2, 2, op="avg")
    with pytest.raises(TypeError, match="pool: ky must be an integer, got str"):
        pyet.pool(x, "2", 2)


def test_unpool_errors():
    x = np.zeros((4, 4))
    p = np.zeros((2, 2))
    with pytest.raises(ValueError, match=r"unpool: pooled must have the pooled shape \(2,2\) of "
                                         r"an input of shape \(4,4\), got \(2,3\)"):
        pyet.unpool(x, np.zeros((2, 3)), p, 2, 2)
    with pytest.raises(ValueError, match=r"unpool: grad must have the pooled shape \(2,2\) of an "
                                         r"input of shape \(4,4\), got \(1,2,2\)"):
        pyet.unpool(x, p, np.zeros((1, 2, 2)), 2, 2)
    with pytest.raises(TypeError, match="unpool: src, pooled and grad must share one dtype, got "
                                        "float64, float32 and float64"):
        pyet.unpool(x, p.astype(np.float32), p, 2, 2)
    with pytest.raises(ValueError, match="unpool: a 5x1 window does not fit in a 4x4 image"):
        pyet.unpool(x, p, p, 5, 1)
    with pytest.raises(ValueError, match="unpool: op must be one of"):
        pyet.unpool(x, p, p, 2, 2, op="mean")


def test_errors_raise_before_writing():
    dst = np.full((2, 2), 3.0)
    with pytest.raises(ValueError):
        pyet.asarray(dst)[...] = pyet.unpool(np.zeros((4, 4)), np.zeros((2, 2)),
                                             np.zeros((3, 2)), 2, 2)
    eq(dst, np.full((2, 2), 3.0))
