"""The gradient of max unpool (the second derivative of max pooling), windows
overlapping or not, against a brute-force NumPy reference and torch."""

import numpy as np
import pytest

import pyet

RNG = np.random.default_rng(10)


def ev(e):
    return np.asarray(pyet.evaluate(e))


def windows(H, W, ky, kx, sy, sx):
    # MShadow's pooled shape: a last window clipped at the border is kept
    pH = min(H - ky + sy - 1, H - 1) // sy + 1
    pW = min(W - kx + sx - 1, W - 1) // sx + 1
    for y in range(pH):
        for x in range(pW):
            yield y, x, slice(y * sy, min(y * sy + ky, H)), slice(x * sx, min(x * sx + kx, W))


def ref_pool(a, ky, kx, sy, sx):
    H, W = a.shape[-2:]
    pH = min(H - ky + sy - 1, H - 1) // sy + 1
    pW = min(W - kx + sx - 1, W - 1) // sx + 1
    out = np.empty(a.shape[:-2] + (pH, pW), a.dtype)
    for y, x, r, c in windows(H, W, ky, kx, sy, sx):
        out[..., y, x] = np.max(a[..., r, c], axis=(-2, -1))
    return out


def ref_masked_sum(a, pooled, w, ky, kx, sy, sx):
    # d/dg of sum(unpool(a, pooled, g) * w): each window sums w over its maxima
    out = np.zeros(pooled.shape, np.float64)
    H, W = a.shape[-2:]
    for y, x, r, c in windows(H, W, ky, kx, sy, sx):
        hit = a[..., r, c] == pooled[..., y, x][..., None, None]
        out[..., y, x] = np.sum(np.where(hit, w[..., r, c], 0), axis=(-2, -1))
    return out


CASES = [(3, 3, 1, 1), (3, 3, 2, 2), (3, 2, 2, 1), (2, 2, 1, 1), (4, 3, 3, 2),
         (2, 2, 2, 2), (3, 3, 3, 3)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ky,kx,sy,sx", CASES)
def test_unpool_gradient(ky, kx, sy, sx, dtype):
    a = RNG.integers(0, 4, (2, 3, 8, 7)).astype(dtype)  # many ties
    a[0, 0, 0, 0] = np.nan                               # NaN never equals the maximum
    x = pyet.asarray(a)
    with np.errstate(invalid="ignore"):
        pooled = ref_pool(a, ky, kx, sy, sx)
    v = pyet.asarray(RNG.standard_normal(pooled.shape).astype(dtype))
    w = RNG.standard_normal(a.shape).astype(dtype)
    y = pyet.sum(pyet.unpool(x, pyet.pool(x, ky, kx, sy, sx), v, ky, kx, sy, sx) * w)
    g = ev(pyet.grad(y, v))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(g, ref_masked_sum(a, pooled, w, ky, kx, sy, sx), rtol=tol,
                               atol=tol)
    # the unpool is linear in v: its gradient is exact for any step
    if dtype == np.float64:
        d = RNG.standard_normal(pooled.shape)
        up = ev(pyet.sum(pyet.unpool(x, pyet.asarray(pooled), pyet.asarray(np.asarray(v) + d),
                                     ky, kx, sy, sx) * w))
        base = ev(pyet.sum(pyet.unpool(x, pyet.asarray(pooled), v, ky, kx, sy, sx) * w))
        np.testing.assert_allclose(up - base, np.sum(g * d), rtol=1e-10)


def test_unpool_gradient_of_gradient():
    # the masked window sum's own gradient is unpool again
    a = RNG.standard_normal((5, 6))
    x = pyet.asarray(a)
    pooled = pyet.pool(x, 3, 3, 1, 1)
    v = pyet.asarray(RNG.standard_normal(pooled.shape))
    w = pyet.asarray(RNG.standard_normal((5, 6)))
    gv = pyet.grad(pyet.sum(pyet.unpool(x, pooled, v, 3, 3, 1, 1) * w), v)
    u = RNG.standard_normal(pooled.shape)
    gw = ev(pyet.grad(pyet.sum(gv * u), w))
    np.testing.assert_allclose(gw, ev(pyet.unpool(x, pooled, pyet.asarray(u), 3, 3, 1, 1)))


def test_max_pool_double_backward_against_torch():
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((2, 3, 9, 9))
    v = RNG.standard_normal((2, 3, 4, 4))
    w = RNG.standard_normal(a.shape)
    xt = torch.tensor(a, requires_grad=True)
    vt = torch.tensor(v, requires_grad=True)
    yt = torch.nn.functional.max_pool2d(xt, 3, 2)   # overlapping, no ties (random floats)
    (gt,) = torch.autograd.grad(yt, xt, vt, create_graph=True)
    (gvt,) = torch.autograd.grad((gt * torch.tensor(w)).sum(), vt)
    x, vv = pyet.asarray(a), pyet.asarray(v)
    g = pyet.grad(pyet.sum(pyet.pool(x, 3, 3, 2, 2) * vv), x)
    got = ev(pyet.grad(pyet.sum(g * pyet.asarray(w)), vv))
    np.testing.assert_allclose(ev(g), gt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(got, gvt.numpy(), rtol=1e-12, atol=1e-12)
