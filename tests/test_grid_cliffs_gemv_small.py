"""Matrix-vector products of up to 16384 matrix elements run pyet's own loops
(pyet/_kernels/gemv.h through blas.pyx gemv_arrays) instead of a BLAS call,
on the CPU's clone of those loops and on the baseline one:
against NumPy on every layout and size around the lane and column-block
edges, with the root forms' alpha and beta, a destination holding NaN
(beta 0 reads nothing), NaN and inf operands, float32 and float64, aliasing
and the shapes the path hands back to BLAS or the general path."""

import numpy as np
import pytest

import pyet
from pyet._kernels import blas

FLOATS = [np.float32, np.float64]
TOL = {np.float32: 3e-5, np.float64: 1e-12}


def mats(shape, dt, rng):
    base = lambda s: rng.standard_normal(s).astype(dt)  # noqa: E731
    return {"C": base(shape), "F": np.asfortranarray(base(shape)),
            "transposed": base(shape[::-1]).T, "row step 2": base((2 * shape[0], shape[1]))[::2],
            "col step 3": base((shape[0], 3 * shape[1]))[:, ::3],
            "negative": base(shape)[::-1, ::-1]}


def vecs(n, dt, rng):
    base = lambda s: rng.standard_normal(s).astype(dt)  # noqa: E731
    return {"C": base(n), "step 3": base(3 * n)[::3], "negative": base(n)[::-1]}


def close(got, want, dt, k):
    tol = TOL[dt] * max(k, 1) ** 0.5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


SHAPES = [(1, 1), (1, 9), (9, 1), (3, 4), (4, 3), (7, 8), (8, 7), (9, 17), (17, 9),
          (32, 32), (33, 31), (64, 5), (5, 64), (100, 100), (127, 129)]


@pytest.fixture(params=["native", "baseline"])
def clone(request):
    """Each test on the CPU's clone of gemv.h's loops and on the baseline one."""
    old = blas._gemv_clone()
    blas._gemv_clone(old if request.param == "native" else 0)
    yield request.param
    blas._gemv_clone(old)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("shape", SHAPES)
def test_matrix_vector_and_vector_matrix_on_every_layout(dt, shape, clone):
    rng = np.random.default_rng(sum(shape))
    m, n = shape
    for a in mats(shape, dt, rng).values():
        A = pyet.asarray(a)
        for v in vecs(n, dt, rng).values():
            for order in ("C", "step"):
                out = np.full(m, np.nan, dt) if order == "C" else np.full(2 * m, np.nan, dt)[::2]
                pyet.asarray(out)[...] = pyet.dot(A, pyet.asarray(v))  # A @ v
                close(out, np.dot(a.astype(np.float64), v.astype(np.float64)), dt, n)
        for v in vecs(m, dt, rng).values():
            out = np.full(n, np.nan, dt)
            pyet.asarray(out)[...] = pyet.dot(pyet.asarray(v), A)  # v @ A
            close(out, np.dot(v.astype(np.float64), a.astype(np.float64)), dt, m)
            got = np.asarray(pyet.dot(pyet.asarray(v), A))  # no destination
            close(got, np.dot(v.astype(np.float64), a.astype(np.float64)), dt, m)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("shape", [(5, 7), (33, 20), (40, 41)])
def test_root_forms_fold_alpha_and_beta(dt, shape, clone):
    rng = np.random.default_rng(5)
    m, n = shape
    for a in (rng.standard_normal(shape).astype(dt),
              np.asfortranarray(rng.standard_normal(shape).astype(dt))):
        A = pyet.asarray(a)
        v = rng.standard_normal(n).astype(dt)
        w = rng.standard_normal(m).astype(dt)
        V, W = pyet.asarray(v), pyet.asarray(w)
        d0 = rng.standard_normal(m).astype(dt)
        want = a.astype(np.float64) @ v.astype(np.float64)
        P = pyet.dot(A, V)
        d64 = d0.astype(np.float64)
        for build, ref in [
                (lambda D, P=P: 2.5 * P, 2.5 * want),
                (lambda D, P=P: -P, -want),
                (lambda D, P=P: D + P, d64 + want),
                (lambda D, P=P: D - 0.5 * P, d64 - 0.5 * want),
                (lambda D, P=P: P - D, want - d64)]:
            d = d0.copy()
            D = pyet.asarray(d)
            D[...] = build(D)
            close(d, ref, dt, n)
        wantT = w.astype(np.float64) @ a.astype(np.float64)
        d = rng.standard_normal(n).astype(dt)
        d1 = d.copy()
        D = pyet.asarray(d)
        D[...] = D + 3 * pyet.dot(W, A)
        close(d, d1 + 3 * wantT, dt, m)


@pytest.mark.parametrize("dt", FLOATS)
def test_nan_inf_and_signed_zero(dt, clone):
    a = np.zeros((9, 10), dt)
    v = np.ones(10, dt)
    a[2, 3] = np.nan
    a[4, 0] = np.inf
    a[5, 9] = -np.inf
    a[6, 1], a[6, 2] = np.inf, -np.inf
    out = np.full(9, 7, dt)
    pyet.asarray(out)[...] = pyet.dot(pyet.asarray(a), pyet.asarray(v))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(out, a @ v)
    out = np.full(10, 7, dt)
    w = np.ones(9, dt)
    pyet.asarray(out)[...] = pyet.dot(pyet.asarray(w), pyet.asarray(a))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(out, w @ a)
    # -0.0 products sum to +0.0 (a zeroed accumulator), as BLAS and NumPy
    z = np.full((4, 4), -0.0, dt)
    out = np.full(4, 7, dt)
    pyet.asarray(out)[...] = pyet.dot(pyet.asarray(z), pyet.asarray(np.ones(4, dt)))
    np.testing.assert_array_equal(np.signbit(out), np.signbit(z @ np.ones(4, dt)))


@pytest.mark.parametrize("dt", FLOATS)
def test_aliasing_destination_and_empty(dt, clone):
    rng = np.random.default_rng(9)
    a = rng.standard_normal((6, 6)).astype(dt)
    v = a[:, 0].copy()
    buf = a.copy()
    A = pyet.asarray(buf)
    # the destination is a column of the matrix it reads: computed aside
    pyet.asarray(buf[:, 0])[...] = pyet.dot(A, pyet.asarray(buf[:, 1]))
    close(buf[:, 0], a.astype(np.float64) @ a[:, 1].astype(np.float64), dt, 6)
    x = v.copy()
    X = pyet.asarray(x)
    X[...] = pyet.dot(pyet.asarray(a), X)  # in place over its own vector
    close(x, a.astype(np.float64) @ v.astype(np.float64), dt, 6)
    e = np.asarray(pyet.dot(pyet.asarray(np.zeros((0, 3), dt)), pyet.asarray(np.ones(3, dt))))
    assert e.shape == (0,)
    z = np.asarray(pyet.dot(pyet.asarray(np.zeros((3, 0), dt)), pyet.asarray(np.ones(0, dt))))
    np.testing.assert_array_equal(z, np.zeros(3, dt))


def test_shape_errors_before_any_write():
    a = np.ones((4, 5))
    out = np.full(4, 2.0)
    with pytest.raises(ValueError, match="not aligned"):
        pyet.asarray(out)[...] = pyet.dot(pyet.asarray(a), pyet.asarray(np.ones(4)))
    with pytest.raises(ValueError):
        pyet.asarray(np.full(5, 2.0))[...] = pyet.dot(pyet.asarray(a), pyet.asarray(np.ones(5)))
    assert (out == 2).all()


@pytest.mark.parametrize("dt", FLOATS)
def test_both_clones_round_alike(dt):
    # no FMA and one order of accumulation: the same bits on any CPU
    rng = np.random.default_rng(11)
    a = rng.standard_normal((37, 45)).astype(dt)
    v, w = rng.standard_normal(45).astype(dt), rng.standard_normal(37).astype(dt)
    A, V, W = pyet.asarray(a), pyet.asarray(v), pyet.asarray(w)
    old = blas._gemv_clone()
    got = []
    try:
        for v3 in (old, 0):
            blas._gemv_clone(v3)
            d1, d2 = np.empty(37, dt), np.empty(45, dt)
            pyet.asarray(d1)[...] = 2 * pyet.dot(A, V)
            pyet.asarray(d2)[...] = 2 * pyet.dot(W, A)
            got.append((d1, d2))
    finally:
        blas._gemv_clone(old)
    np.testing.assert_array_equal(got[0][0], got[1][0])
    np.testing.assert_array_equal(got[0][1], got[1][1])
