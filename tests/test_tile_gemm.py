"""Products on the AVX-512 register tiles (gemm.h, chosen in blas.pyx) against NumPy: every
layout (A or A.T, B row- or column-major, C row- or column-major), the ragged edges of their
8-row and 48 (float32) / 24 (float64) column tiles, several blocks of K, alpha and beta folded
from the tree, stacks, two threads, and the destination's neighbours untouched."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet
from pyet._kernels import blas

pytestmark = pytest.mark.skipif(not blas.tiles_available(),
                                reason="the register tiles need AVX-512")

DTYPES = [np.float32, np.float64]


def tol(dtype, k):
    return (2e-6 if dtype == np.float32 else 1e-14) * max(k, 1) ** 0.5 * 8


def operand(rng, shape, dtype, layout):
    """A matrix of `shape` stored as `layout`: C order, Fortran order, or a strided view."""
    x = rng.standard_normal(shape).astype(dtype)
    if layout == "F":
        return np.asfortranarray(x)
    if layout == "step":  # every other column of a wider array (copied before BLAS)
        wide = np.zeros((shape[0], 2 * shape[1]), dtype)
        wide[:, ::2] = x
        return wide[:, ::2]
    return x


def check(got, want, dtype, k):
    scale = max(1.0, float(np.abs(want).max(initial=0)))
    np.testing.assert_allclose(got, want, rtol=0, atol=tol(dtype, k) * scale)


def mat(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def tiles_ran(fn, *args):
    """Run fn(*args); True if the tiles computed a product meanwhile."""
    before = blas._tile_products()
    fn(*args)
    return blas._tile_products() > before


def assign(out, expr):
    pyet.asarray(out)[...] = expr


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_layout", ["C", "F", "step"])
@pytest.mark.parametrize("b_layout", ["C", "F"])
@pytest.mark.parametrize("c_order", ["C", "F"])
def test_layouts(dtype, a_layout, b_layout, c_order):
    rng = np.random.default_rng(0)
    m, k, n = 70, 70, 101  # ragged rows and columns (both at least a tile wide)
    a, b = operand(rng, (m, k), dtype, a_layout), operand(rng, (k, n), dtype, b_layout)
    out = np.full((m, n), np.nan, dtype, order=c_order)  # beta 0: never read
    ran = tiles_ran(assign, out, pyet.dot(a, b))
    check(out, a.astype(np.float64) @ b, dtype, k)
    # every layout: B by rows or gathered by columns, C by rows or as C.T = B.T A.T
    assert ran


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m", [8, 9, 15, 16, 17, 31, 64])
@pytest.mark.parametrize("n", [48, 49, 63, 64, 95, 96, 97, 150])
@pytest.mark.parametrize("b_t", [False, True])
def test_tile_edges(dtype, m, n, b_t):
    rng = np.random.default_rng(m * 1000 + n)
    k = 33
    a = mat(rng, (m, k), dtype)
    b = mat(rng, (n, k), dtype).T if b_t else mat(rng, (k, n), dtype)  # B.T: columns gathered
    out = np.full((m + 2, n + 3), 7.0, dtype)  # the product lands in out[1:-1, 1:-2]
    view = pyet.asarray(out)[1:m + 1, 1:n + 1]
    assert tiles_ran(view.__setitem__, ..., pyet.dot(a, b))
    check(out[1:m + 1, 1:n + 1], a.astype(np.float64) @ b, dtype, k)
    rest = out.copy()
    rest[1:m + 1, 1:n + 1] = 7.0
    assert (rest == 7.0).all(), "a tile wrote outside its destination"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 15, 17, 127, 128, 129, 255, 256, 257, 600])
@pytest.mark.parametrize("b_t", [False, True])
def test_blocks_of_k(dtype, k, b_t):
    rng = np.random.default_rng(k)
    a = mat(rng, (20, k), dtype)
    b = mat(rng, (60, k), dtype).T if b_t else mat(rng, (k, 60), dtype)
    out = np.empty((20, 60), dtype)
    assert tiles_ran(assign, out, pyet.dot(a, b))
    check(out, a.astype(np.float64) @ b, dtype, k)


@pytest.mark.parametrize("dtype", DTYPES)
def test_alpha_beta_folded(dtype):
    rng = np.random.default_rng(3)
    a, b, c0 = mat(rng, (24, 300), dtype), mat(rng, (300, 72), dtype), mat(rng, (24, 72), dtype)
    ab = a.astype(np.float64) @ b
    for fold, want in [(lambda o: o.__iadd__(2.0 * pyet.dot(a, b)), c0 + 2 * ab),
                       (lambda o: o.__isub__(pyet.dot(a, b)), c0 - ab),
                       (lambda o: o.__setitem__(..., -0.5 * pyet.dot(a, b)), -0.5 * ab)]:
        out = c0.copy()
        assert tiles_ran(fold, pyet.asarray(out))
        check(out, want, dtype, 300)


@pytest.mark.parametrize("dtype", DTYPES)
def test_transposed_operand_views(dtype):
    # the nets' products: x.T @ dy (A a transposed view) and dy @ W.T (B column-major)
    rng = np.random.default_rng(4)
    x, dy, w = mat(rng, (256, 64), dtype), mat(rng, (256, 128), dtype), mat(rng, (64, 128), dtype)
    X, DY, W = (pyet.asarray(v) for v in (x, dy, w))
    check(pyet.evaluate(pyet.dot(X.T, DY)).numpy(), x.T.astype(np.float64) @ dy, dtype, 256)
    check(pyet.evaluate(pyet.dot(DY, W.T)).numpy(), dy.astype(np.float64) @ w.T, dtype, 128)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_stacks_and_threads(dtype, threads):
    rng = np.random.default_rng(5)
    a, b = mat(rng, (3, 40, 96), dtype), mat(rng, (96, 200), dtype)  # b broadcast
    old = pyet.get_num_threads()
    pyet.set_num_threads(threads)
    try:
        out = np.empty((3, 40, 200), dtype)
        assert tiles_ran(assign, out, pyet.batch_dot(a, b))
        check(out, a.astype(np.float64) @ b, dtype, 96)
        # one product split by columns over the threads
        a2, b2 = mat(rng, (512, 256), dtype), mat(rng, (256, 60), dtype)
        out2 = np.empty((512, 60), dtype)
        assert tiles_ran(assign, out2, pyet.dot(a2, b2))
        check(out2, a2.astype(np.float64) @ b2, dtype, 256)
    finally:
        pyet.set_num_threads(old)


@pytest.mark.parametrize("dtype", DTYPES)
def test_left_to_blas(dtype):
    # narrow, short, large (but where blas._tile_max() is 2^30) and integer
    # products stay with BLAS (or the exact loop)
    rng = np.random.default_rng(6)
    large = blas._tile_max() > 1 << 25
    for m, k, n in [(64, 64, 10), (4, 64, 256), (1, 300, 300), (512, 512, 512)]:
        a, b = mat(rng, (m, k), dtype), mat(rng, (k, n), dtype)
        out = np.empty((m, n), dtype)
        assert tiles_ran(assign, out, pyet.dot(a, b)) is (large and m == 512)
        check(out, a.astype(np.float64) @ b, dtype, k)
    # both operands transposed with few rows: BLAS's packing beats the gathers
    a, b = mat(rng, (64, 32), dtype).T, mat(rng, (128, 64), dtype).T
    out = np.empty((32, 128), dtype)
    assert not tiles_ran(assign, out, pyet.dot(a, b))
    check(out, a.astype(np.float64) @ b, dtype, 64)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_large_products_over_a_short_k(dtype, threads):
    # beyond 2^25 multiply-adds the tiles keep products over a short K (BLAS's
    # packing of A costs as much as the products) unless C is wider than 512;
    # a long K stays with BLAS, but on one thread where the tiles measured
    # ahead of it up to 2^30 (AMD: blas._tile_max())
    rng = np.random.default_rng(8)
    before = pyet.get_num_threads()
    pyet.set_num_threads(threads)
    try:
        large = blas._tile_max() > 1 << 25
        assert blas._tile_max() in (1 << 25, 1 << 30)
        assert not (large and pyet.get_num_threads() > 1)
        run_large_products(rng, dtype, large)
    finally:
        pyet.set_num_threads(before)


def run_large_products(rng, dtype, large):
    for (m, k, n), tiles in [((1600, 64, 384), True), ((8200, 32, 130), True),
                             ((1100, 128, 520), large), ((300, 400, 300), large),
                             ((128, 1600, 384), large)]:
        assert m * n * k > 1 << 25
        a, b = mat(rng, (m, k), dtype), mat(rng, (k, n), dtype)
        out = np.full((m + 2, n), 7, dtype)
        assert tiles_ran(assign, out[1:-1], pyet.dot(a, b)) is tiles
        check(out[1:-1], a.astype(np.float64) @ b, dtype, k)
        assert (out[0] == 7).all() and (out[-1] == 7).all()


def test_products_beyond_2_30_stay_with_blas():
    rng = np.random.default_rng(9)
    m, k, n = 1040, 1040, 1000
    assert m * k * n > 1 << 30
    a, b = mat(rng, (m, k), np.float32), mat(rng, (k, n), np.float32)
    out = np.full((m + 2, n), 7, np.float32)
    assert not tiles_ran(assign, out[1:-1], pyet.dot(a, b))
    check(out[1:-1], a.astype(np.float64) @ b, np.float32, k)
    assert (out[0] == 7).all() and (out[-1] == 7).all()


def test_switch_off_agrees():
    rng = np.random.default_rng(7)
    a, b = mat(rng, (32, 128), np.float32), mat(rng, (128, 384), np.float32)
    on = pyet.evaluate(pyet.dot(a, b)).numpy()
    old = blas._set_tiles(False)
    try:
        assert not tiles_ran(pyet.evaluate, pyet.dot(a, b))
        off = pyet.evaluate(pyet.dot(a, b)).numpy()
    finally:
        assert blas._set_tiles(old) is False
    check(on, off.astype(np.float64), np.float32, 128)


def test_special_values():
    # inf and nan propagate as in BLAS; beta 0 never reads the old C (NaN there)
    a = np.ones((16, 64), np.float32)
    b = np.ones((64, 64), np.float32)
    a[3, 5], b[7, 9] = np.inf, np.nan
    out = np.full((16, 64), np.nan, np.float32)
    pyet.asarray(out)[...] = pyet.dot(a, b)
    want = a.astype(np.float64) @ b
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_array_equal(out[~np.isnan(want)], want[~np.isnan(want)])


@settings(max_examples=40, deadline=None)
@given(m=st.integers(8, 70), k=st.integers(1, 300), n=st.integers(48, 130),
       dtype=st.sampled_from(DTYPES), a_t=st.booleans(), b_t=st.booleans(), acc=st.booleans())
def test_random_products(m, k, n, dtype, a_t, b_t, acc):
    rng = np.random.default_rng(m * 7 + k * 11 + n)
    a = mat(rng, (k, m), dtype).T if a_t else mat(rng, (m, k), dtype)
    b = mat(rng, (n, k), dtype).T if b_t else mat(rng, (k, n), dtype)
    c0 = mat(rng, (m, n), dtype)
    out = c0.copy()
    t = pyet.asarray(out)
    if acc:
        t += pyet.dot(a, b)
    else:
        t[...] = pyet.dot(a, b)
    want = a.astype(np.float64) @ b + (c0 if acc else 0)
    check(out, want, dtype, k)
