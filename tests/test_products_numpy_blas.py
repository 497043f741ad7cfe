"""Large 2-D products (at least 1,048,576 multiply-adds) go through NumPy's
matmul (one BLAS thread pool in a program that also calls np.matmul); every
layout and root form still gives NumPy's values."""

import numpy as np
import pytest

import pyet

M, K, N = 128, 96, 100  # 1,228,800 multiply-adds


def operands(dtype, layout, rng):
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    if layout == "F":
        return np.asfortranarray(a), np.asfortranarray(b)
    if layout == "transposed":
        return np.ascontiguousarray(a.T).T, np.ascontiguousarray(b.T).T
    if layout == "padded":  # rows further apart than their length
        big_a = np.zeros((M, K + 7), dtype)
        big_b = np.zeros((K, N + 5), dtype)
        big_a[:, :K], big_b[:, :N] = a, b
        return big_a[:, :K], big_b[:, :N]
    return a, b


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C", "F", "transposed", "padded"])
@pytest.mark.parametrize("dst_layout", ["C", "F", "padded"])
def test_large_products_on_every_layout(dtype, layout, dst_layout):
    rng = np.random.default_rng(0)
    a, b = operands(dtype, layout, rng)
    want = a @ b
    buf = np.full((M + 2, N + 9), -3, dtype)
    dst = {"C": buf[1:-1, 1:N + 1], "F": np.asfortranarray(np.zeros((M, N), dtype)),
           "padded": buf[1:-1, 2:N + 2]}[dst_layout]
    pyet.asarray(dst)[...] = pyet.asarray(a) @ pyet.asarray(b)
    rtol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(dst, want, rtol=rtol, atol=rtol * np.abs(want).max())
    if dst_layout != "F":  # the border around the destination untouched
        assert (buf[0] == -3).all() and (buf[-1] == -3).all()
        inside = np.zeros(buf.shape, bool)
        inside[1:-1, (1 if dst_layout == "C" else 2):N + (1 if dst_layout == "C" else 2)] = True
        assert (buf[~inside] == -3).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_root_forms_and_trees(dtype):
    rng = np.random.default_rng(1)
    a, b = operands(dtype, "C", rng)
    d0 = rng.standard_normal((M, N)).astype(dtype)
    A, B = pyet.asarray(a), pyet.asarray(b)
    rtol = 2e-5 if dtype == np.float32 else 1e-12
    for tree, want in ((d0 + A @ B, d0 + a @ b), (d0 - 2 * (A @ B), d0 - 2 * (a @ b)),
                       (pyet.tanh(A @ B) + 1, np.tanh(a @ b) + 1),
                       ((A @ B).T @ A, (a @ b).T @ a)):
        D = pyet.asarray(d0.copy()) if tree.shape == d0.shape else pyet.empty(tree.shape, dtype)
        D[...] = tree
        np.testing.assert_allclose(D.numpy(), want, rtol=rtol,
                                   atol=rtol * max(1.0, np.abs(want).max()))


def test_interleaved_with_numpys_matmul():
    rng = np.random.default_rng(2)
    a, b = operands(np.float64, "C", rng)
    A, B = pyet.asarray(a), pyet.asarray(b)
    for _ in range(5):
        want = np.matmul(a, b)
        got = np.asarray(A @ B)
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["mat@vec", "vec@mat", "vec@vec"])
@pytest.mark.parametrize("step", [1, 3])
def test_large_vector_products(dtype, case, step):
    rng = np.random.default_rng(3)
    n = 20000 if case == "vec@vec" else 300
    mat = rng.standard_normal((200, n) if case == "mat@vec" else (n, 200)).astype(dtype)
    vec = rng.standard_normal(n * step).astype(dtype)[::step]
    a, b = {"mat@vec": (mat, vec), "vec@mat": (vec, mat), "vec@vec": (vec, vec[::-1].copy())}[case]
    want = a @ b
    rtol = 1e-4 if dtype == np.float32 else 1e-12
    got = np.asarray(pyet.asarray(a) @ pyet.asarray(b))
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())
    if case != "vec@vec":  # into a strided destination inside sentinels
        buf = np.full(2 * want.size + 2, -3, dtype)
        dst = buf[1:-1:2]
        pyet.asarray(dst)[...] = pyet.asarray(a) @ pyet.asarray(b)
        np.testing.assert_allclose(dst, want, rtol=rtol, atol=rtol * np.abs(want).max())
        assert buf[0] == -3 and buf[-1] == -3 and (buf[2:-1:2] == -3).all()
