"""Products on the dot tiles (gemm.h's PYET_DOTS, chosen in blas.pyx): few outputs
over a long K with A's rows and B's columns contiguous along it (a convolution's
weight gradient dY @ cols^T).  Against NumPy: ragged 4 x 3 tiles, K's tails and
blocks, alpha and beta (beta 0 never reads C), row- and column-major C, leading
dimensions wider than K, one thread against two (the same bits), and the
destination's neighbours untouched."""

import numpy as np
import pytest

import pyet
from pyet._kernels import blas

pytestmark = pytest.mark.skipif(not blas.tiles_available(),
                                reason="the dot tiles need AVX-512")

DTYPES = [np.float32, np.float64]


def operands(m, n, k, dtype, seed=0, lda_pad=0, ldb_pad=0):
    """A row-major (rows lda_pad wider than K), B column-major (columns ldb_pad longer)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k + lda_pad)).astype(dtype)[:, :k]
    bt = rng.standard_normal((n, k + ldb_pad)).astype(dtype)[:, :k]
    return a, bt.T


def close(got, a, b, dtype, alpha=1.0, beta=0.0, c0=None):
    want = alpha * (a.astype(np.float64) @ b.astype(np.float64))
    if beta:
        want = want + beta * c0
    k = a.shape[1]
    tol = (3e-6 if dtype == np.float32 else 1e-14) * np.sqrt(k) * 4
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale)


def dots_ran(fn, *args):
    before = blas._dots_products()
    fn(*args)
    return blas._dots_products() > before


SHAPES = [(16, 9, 16384),    # the demo CNN's first weight gradient
          (5, 7, 4096 + 5),  # ragged tiles, K's last vector partial
          (2, 2, 5000),      # four outputs (a column of one is a gemv)
          (3, 40, 4099),     # 40 columns, 3 rows: neither side 48 wide
          (12, 3, 9001)]     # several K blocks and a tail


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_products_against_numpy(dtype, m, n, k):
    a, b = operands(m, n, k, dtype)
    buf = np.full((m + 2, n), 7, dtype)
    out = buf[1:-1]
    assert dots_ran(lambda: pyet.evaluate(pyet.dot(pyet.asarray(a), pyet.asarray(b)), out=out))
    close(out, a, b, dtype)
    assert (buf[0] == 7).all() and (buf[-1] == 7).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("c_order", ["C", "F"])
def test_alpha_beta_and_column_major_c(dtype, c_order):
    m, n, k = 10, 5, 6000
    a, b = operands(m, n, k, dtype, seed=1, lda_pad=3, ldb_pad=5)
    c0 = np.random.default_rng(2).standard_normal((m, n)).astype(dtype)
    c = np.array(c0, order=c_order)
    assert dots_ran(blas.gemm_into, c[None], a[None], b[None], 0.5, -2.0)
    close(c, a, b, dtype, 0.5, -2.0, c0.astype(np.float64))
    # beta 0: the old C is never read (NaN there stays out)
    c[...] = np.nan
    assert dots_ran(blas.gemm_into, c[None], a[None], b[None], 2.0, 0.0)
    close(c, a, b, dtype, 2.0)


def test_special_values_propagate():
    a, b = operands(8, 6, 5000, np.float32, seed=3)
    a, b = a.copy(), np.asfortranarray(b)
    a[2, 100], b[4000, 3] = np.inf, np.nan
    out = np.empty((8, 6), np.float32)
    assert dots_ran(lambda: pyet.evaluate(pyet.dot(pyet.asarray(a), pyet.asarray(b)), out=out))
    want = a.astype(np.float64) @ b
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(out), np.isinf(want))


@pytest.mark.parametrize("dtype", DTYPES)
def test_two_threads_give_one_threads_bits(dtype):
    a, b = operands(22, 9, 20000, dtype, seed=4)
    prod = pyet.dot(pyet.asarray(a), pyet.asarray(b))
    pyet.set_num_threads(1)
    try:
        one = pyet.evaluate(prod).numpy()
        pyet.set_num_threads(2)
        if pyet.get_num_threads() < 2:
            pytest.skip("pyet runs on one thread here (no OpenMP)")
        two = pyet.evaluate(prod).numpy()
    finally:
        pyet.set_num_threads(1)
    np.testing.assert_array_equal(one.view(f"u{one.itemsize}"), two.view(f"u{two.itemsize}"))
    close(one, a, b, dtype)


@pytest.mark.parametrize("m,n,k,layout", [
    (16, 9, 2048, "dots"),     # K too short: BLAS
    (64, 27, 8192, "dots"),    # too many outputs: BLAS
    (16, 9, 16384, "a.T"),     # A's rows strided along K: not these tiles
])
def test_products_the_dot_tiles_leave(m, n, k, layout):
    a, b = operands(m, n, k, np.float32, seed=5)
    if layout == "a.T":
        a = np.asfortranarray(a)
    assert not dots_ran(lambda: pyet.evaluate(pyet.dot(pyet.asarray(a), pyet.asarray(b))))
    close(pyet.evaluate(pyet.dot(pyet.asarray(a), pyet.asarray(b))).numpy(), a, b, np.float32)


def test_switched_off_with_the_tiles():
    a, b = operands(16, 9, 16384, np.float32, seed=6)
    old = blas._set_tiles(False)
    try:
        assert not dots_ran(lambda: pyet.evaluate(pyet.dot(pyet.asarray(a), pyet.asarray(b))))
    finally:
        blas._set_tiles(old)
