"""unpack_patch2col and unpool at the root over leaves take compiled entries
(spatial.pyx im2col_leaves, unpool_leaves: no Python frame of into(), the
leading axes folded in C), im2col's kernels are kept per geometry, and
max-unpool of windows that do not overlap writes each element once
(unpool_max_line): against NumPy references on C, Fortran, strided,
negative-step and folded layouts, the general path where an entry declines
(3-D and 5-D images, leading axes that do not fold, misaligned fields), and
errors before any write."""

import numpy as np
import pytest

import pyet

DTYPES = [np.float32, np.float64, np.int32, np.int64]


def im2col_ref(img, ky, kx, sy=1, sx=1, dy=1, dx=1):
    img = img.reshape((-1,) + img.shape[-3:])
    N, C, H, W = img.shape
    oh, ow = (H - (dy * (ky - 1) + 1)) // sy + 1, (W - (dx * (kx - 1) + 1)) // sx + 1
    out = np.empty((C * ky * kx, N * oh * ow), img.dtype)
    for c in range(C):
        for py in range(ky):
            for px in range(kx):
                taps = img[:, c, py * dy: py * dy + sy * (oh - 1) + 1: sy,
                           px * dx: px * dx + sx * (ow - 1) + 1: sx]
                out[(c * ky + py) * kx + px] = taps.reshape(-1)
    return out


def images(shape, dt, rng):
    base = lambda s: (rng.standard_normal(s) * 10).astype(dt)  # noqa: E731
    big = base(shape[:-1] + (2 * shape[-1],))
    return {"C": base(shape), "F": np.asfortranarray(base(shape)), "strided": big[..., ::2],
            "negative": base(shape)[..., ::-1, ::-1],
            "transposed planes": np.ascontiguousarray(base(shape).swapaxes(0, 1)).swapaxes(0, 1)}


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("geom", [(3, 3, 1, 1, 1, 1), (2, 3, 2, 1, 1, 2), (1, 1, 1, 1, 1, 1),
                                  (3, 2, 3, 2, 2, 1)])
def test_im2col_on_every_layout(dt, geom):
    ky, kx, sy, sx, dy, dx = geom
    rng = np.random.default_rng(1)
    for name, img in images((2, 3, 9, 11), dt, rng).items():
        want = im2col_ref(img, *geom)
        for dst_kind in ("C", "F", "strided"):
            dst = np.full((want.shape[0], 2 * want.shape[1]), 7, dt)[:, ::2] \
                if dst_kind == "strided" else np.full(want.shape, 7, dt, order=dst_kind)
            pyet.asarray(dst)[...] = pyet.unpack_patch2col(pyet.asarray(img), ky, kx, (sy, sx),
                                                           (dy, dx))
            np.testing.assert_array_equal(dst, want, err_msg=f"{name} into {dst_kind}")


def test_im2col_general_path_shapes_and_cached_kernels():
    rng = np.random.default_rng(2)
    img3 = rng.standard_normal((3, 8, 8))  # 3-D: one image
    np.testing.assert_array_equal(np.asarray(pyet.unpack_patch2col(pyet.asarray(img3), 3, 3)),
                                  im2col_ref(img3, 3, 3))
    img5 = rng.standard_normal((2, 2, 3, 6, 7))  # leading axes folded
    np.testing.assert_array_equal(np.asarray(pyet.unpack_patch2col(pyet.asarray(img5), 2, 2)),
                                  im2col_ref(img5, 2, 2))
    # a misaligned field: the entry declines, the general path copies
    rec = np.zeros((1, 2, 6, 6), [("pad", "u1"), ("x", "f8")])
    rec["x"] = rng.standard_normal((1, 2, 6, 6))
    np.testing.assert_array_equal(np.asarray(pyet.unpack_patch2col(pyet.asarray(rec["x"]),
                                                                   2, 2)),
                                  im2col_ref(np.ascontiguousarray(rec["x"]), 2, 2))
    # one kernel per geometry; different geometries never share one
    a = pyet.unpack_patch2col(pyet.asarray(img3), 3, 3)
    b = pyet.unpack_patch2col(pyet.asarray(img3), 3, 3)
    c = pyet.unpack_patch2col(pyet.asarray(img3), 3, 3, 2)
    d = pyet.unpack_patch2col(pyet.asarray(img3), 3, 3, 1, 2)
    assert a._kernel is b._kernel
    assert len({id(a._kernel), id(c._kernel), id(d._kernel)}) == 3
    np.testing.assert_array_equal(np.asarray(c), im2col_ref(img3, 3, 3, 2, 2))
    np.testing.assert_array_equal(np.asarray(d), im2col_ref(img3, 3, 3, 1, 1, 2, 2))
    # numpy integers and pairs take the checked path and give the same nodes' values
    e = pyet.unpack_patch2col(pyet.asarray(img3), np.int64(3), 3, (1, 1))
    np.testing.assert_array_equal(np.asarray(e), im2col_ref(img3, 3, 3))


def test_im2col_errors_before_any_write():
    img = np.ones((1, 2, 5, 5))
    dst = np.full((18, 9), 3.0)
    for bad, err in [((0, 3), ValueError), ((3, -1), ValueError), ((3.0, 3), TypeError),
                     ((6, 3), ValueError)]:
        with pytest.raises(err):
            pyet.asarray(dst)[...] = pyet.unpack_patch2col(pyet.asarray(img), *bad)
        with pytest.raises(err):  # again: nothing cached by the failed call
            pyet.unpack_patch2col(pyet.asarray(img), *bad)
    with pytest.raises(ValueError):  # dst of the wrong shape
        pyet.asarray(np.zeros((18, 8)))[...] = pyet.unpack_patch2col(pyet.asarray(img), 3, 3)
    assert (dst == 3).all()


def pool_ref(x, ky, kx, sy, sx):
    H, W = x.shape[-2:]
    ph, pw = min(H - ky + sy - 1, H - 1) // sy + 1, min(W - kx + sx - 1, W - 1) // sx + 1
    out = np.empty(x.shape[:-2] + (ph, pw), x.dtype)
    for i in range(ph):
        for j in range(pw):
            out[..., i, j] = x[..., i * sy: i * sy + ky, j * sx: j * sx + kx].max(axis=(-2, -1))
    return out


def unpool_ref(x, pooled, g, ky, kx, sy, sx, op):
    out = np.zeros(x.shape, x.dtype)
    ph, pw = pooled.shape[-2:]
    for i in range(ph):
        for j in range(pw):
            win = (..., slice(i * sy, i * sy + ky), slice(j * sx, j * sx + kx))
            gv = g[..., i, j][..., None, None]
            if op == "max":
                add = np.where(x[win] == pooled[..., i, j][..., None, None], gv, 0)
            else:
                add = np.broadcast_to(gv, x[win].shape)
            out[win] = out[win] + add.astype(x.dtype)
    if op == "avg":
        out = out / x.dtype.type(ky * kx)
    return out


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("geom", [(2, 2, 2, 2), (3, 3, 3, 3), (2, 2, 3, 3), (2, 3, 2, 4),
                                  (3, 3, 2, 2), (1, 1, 1, 1)])
def test_unpool_max_on_every_layout(dt, geom):
    ky, kx, sy, sx = geom
    rng = np.random.default_rng(3)
    for name, x in images((2, 3, 9, 10), dt, rng).items():
        x = x.copy() if name == "negative" else x
        pooled = pool_ref(x, ky, kx, sy, sx)
        g = (rng.standard_normal(pooled.shape) * 10).astype(dt)
        want = unpool_ref(x, pooled, g, ky, kx, sy, sx, "max")
        for dst_kind in ("C", "F", "strided"):
            dst = np.full(x.shape[:-1] + (2 * x.shape[-1],), 7, dt)[..., ::2] \
                if dst_kind == "strided" else np.full(x.shape, 7, dt, order=dst_kind)
            pyet.asarray(dst)[...] = pyet.unpool(pyet.asarray(x), pyet.asarray(pooled),
                                                 pyet.asarray(g), ky, kx, sy, sx)
            if sy >= ky and sx >= kx or dt in (np.int32, np.int64):
                np.testing.assert_array_equal(dst, want, err_msg=f"{name} into {dst_kind}")
            else:  # overlapping windows: sums in another order
                np.testing.assert_allclose(dst, want, rtol=1e-5, err_msg=name)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("hw", [(6, 8), (7, 9), (5, 2), (3, 2), (6, 9), (7, 8)])
def test_unpool_max_2x2_rows_with_ties_and_odd_sides(dt, hw):
    """The 2 x 2 stride-2 max gradient on contiguous rows (two elements a window, no inner
    loop): ties give every maximum the gradient, odd last rows and columns (in no window) get
    0, the destination's neighbours are untouched."""
    rng = np.random.default_rng(6)
    x = rng.integers(0, 3, (4,) + hw).astype(dt)  # many ties
    pooled = pool_ref(x, 2, 2, 2, 2)
    g = rng.integers(-5, 6, pooled.shape).astype(dt)
    want = unpool_ref(x, pooled, g, 2, 2, 2, 2, "max")
    buf = np.full(x.size + 2, 7, dt)
    dst = buf[1:-1].reshape(x.shape)
    pyet.asarray(dst)[...] = pyet.unpool(pyet.asarray(x), pyet.asarray(pooled),
                                         pyet.asarray(g), 2, 2, 2, 2)
    np.testing.assert_array_equal(dst, want)
    assert buf[0] == 7 and buf[-1] == 7


@pytest.mark.parametrize("op", ["sum", "avg"])
def test_unpool_sum_avg_through_the_entry(op):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 8, 9))
    p = np.asarray(pyet.pool(pyet.asarray(x), 2, 2, op=op))
    g = rng.standard_normal(p.shape)
    dst = np.empty_like(x)
    pyet.asarray(dst)[...] = pyet.unpool(pyet.asarray(x), pyet.asarray(p), pyet.asarray(g),
                                         2, 2, op=op)
    np.testing.assert_allclose(dst, unpool_ref(x, p, g, 2, 2, 2, 2, op), rtol=1e-12)


def test_unpool_nan_signed_zero_folded_and_unfoldable_axes():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 6, 6))
    x[0, 0, 0, 0] = np.nan
    pooled = pool_ref(x, 2, 2, 2, 2)
    g = rng.standard_normal(pooled.shape)
    g[1, 2, 1, 1] = -0.0
    want = unpool_ref(x, pooled, g, 2, 2, 2, 2, "max")
    dst = np.full(x.shape, 9.0)
    pyet.asarray(dst)[...] = pyet.unpool(pyet.asarray(x), pyet.asarray(pooled),
                                         pyet.asarray(g), 2, 2, 2, 2)
    np.testing.assert_array_equal(dst, want)
    assert not np.signbit(dst).any() or np.signbit(want).any()
    np.testing.assert_array_equal(np.signbit(dst), np.signbit(want))
    # leading axes that do not fold into one run of planes: the general path
    xt = np.ascontiguousarray(x.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3)[:, ::2]
    pt, gt = pool_ref(xt, 2, 2, 2, 2), g[:, ::2].copy()
    pyet.asarray(dst[:, ::2])[...] = pyet.unpool(pyet.asarray(xt), pyet.asarray(pt),
                                                 pyet.asarray(gt), 2, 2)
    np.testing.assert_array_equal(dst[:, ::2], unpool_ref(xt, pt, gt, 2, 2, 2, 2, "max"))
    # 5-D, 3-D
    x5 = rng.standard_normal((2, 2, 2, 4, 4))
    p5 = pool_ref(x5, 2, 2, 2, 2)
    g5 = rng.standard_normal(p5.shape)
    np.testing.assert_array_equal(
        np.asarray(pyet.unpool(pyet.asarray(x5), pyet.asarray(p5), pyet.asarray(g5), 2, 2)),
        unpool_ref(x5, p5, g5, 2, 2, 2, 2, "max"))


def test_unpool_errors_before_any_write():
    x = np.ones((2, 4, 4))
    p = pool_ref(x, 2, 2, 2, 2)
    dst = np.full(x.shape, 3.0)
    with pytest.raises(TypeError, match="one dtype"):
        pyet.asarray(dst)[...] = pyet.unpool(pyet.asarray(x), pyet.asarray(p.astype(np.float32)),
                                             pyet.asarray(p), 2, 2)
    with pytest.raises(ValueError, match="pooled shape"):
        pyet.asarray(dst)[...] = pyet.unpool(pyet.asarray(x), pyet.asarray(p[:, :1]),
                                             pyet.asarray(p), 2, 2)
    with pytest.raises(ValueError):
        pyet.asarray(dst[:1])[...] = pyet.unpool(pyet.asarray(x), pyet.asarray(p),
                                                 pyet.asarray(p), 2, 2)
    assert (dst == 3).all()
