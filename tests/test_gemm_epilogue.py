"""Passes fused into a product's stores (rewrite.GEMM_EPILOGUES, gemm.h's epilogues): in a
kept plan, relu(x @ W + b) and where(z + b > s0, g @ W, s1) are written by the register tiles
as they store the product.  The fused replay must give the unfused replay's bits on every
layout it takes (and run unfused on the ones it does not), NaN, -0.0 and infinities included,
report the same floating-point errors, leave the destination's neighbours alone and follow
a kept schedule's moved arrays."""

import numpy as np
import pytest

import pyet
from pyet._core import core
from pyet._kernels import blas

pytestmark = pytest.mark.skipif(not blas.tiles_available(),
                                reason="the register tiles need AVX-512")

DTYPES = [np.float32, np.float64]


def kept_plan(out, expr, epilogues=True):
    """A kept EvalPlan writing expr into out, recorded (first run) and fused
    when ``epilogues`` (the knob is read when the schedule is kept)."""
    old = core.set_gemm_epilogues(epilogues)
    try:
        plan = pyet.EvalPlan()
        plan.assign(pyet.asarray(out), expr)
        plan.run(keep=True)
    finally:
        core.set_gemm_epilogues(old)
    return plan


def fused(plan):
    return sum("GemmEpilogue" in repr(a) for a in plan._schedule[1].replays)


def same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def close(got, want, dtype):
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def relu_case(rng, m, k, n, dtype):
    x = rng.standard_normal((m, k)).astype(dtype)
    w = rng.standard_normal((k, n)).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    return x, w, b


def run_both(make_out, expr, n_fused=1):
    """The kept plan's replay with and without the fused epilogue: the same bits."""
    out_f, out_u = make_out(), make_out()
    pf, pu = kept_plan(out_f, expr, True), kept_plan(out_u, expr, False)
    assert fused(pf) == n_fused and fused(pu) == 0
    first = out_f.copy()
    out_f[...] = 0
    pf.run(keep=True)
    pu.run(keep=True)
    same_bits(out_f, out_u)
    same_bits(out_f, first)
    return out_f


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,k,n", [(64, 64, 256), (37, 5, 100), (8, 300, 48), (203, 17, 61)])
def test_bias_relu_equals_unfused_and_numpy(dtype, m, k, n):
    rng = np.random.default_rng(m * n + k)
    x, w, b = relu_case(rng, m, k, n, dtype)
    out = run_both(lambda: np.empty((m, n), dtype),
                   pyet.relu(pyet.asarray(x) @ pyet.asarray(w) + pyet.asarray(b)))
    want = np.maximum(x.astype(np.float64) @ w + b, 0)
    close(out, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bias_first_and_row_bias_forms(dtype):
    # add either way round, a (1, n) bias, a bias read from a row of a matrix
    rng = np.random.default_rng(1)
    x, w, b = relu_case(rng, 40, 32, 96, dtype)
    X, W = pyet.asarray(x), pyet.asarray(w)
    rows = np.ascontiguousarray(np.stack([b, b * 2]))
    for bias in (pyet.asarray(b), pyet.asarray(b[None, :]), pyet.asarray(rows)[1]):
        run_both(lambda: np.empty((40, 96), dtype), pyet.relu(bias + X @ W))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("s0,s1", [(0.0, 0.0), (0.25, -1.5)])
def test_bias_mask_equals_unfused_and_numpy(dtype, s0, s1):
    rng = np.random.default_rng(2)
    m, k, n = 70, 24, 130
    g = rng.standard_normal((m, k)).astype(dtype)
    w = rng.standard_normal((k, n)).astype(dtype)
    z = rng.standard_normal((m, n)).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    tie = (s0 - b).astype(dtype)  # z + b == s0 exactly where it rounds back: not greater
    z[0] = np.where(tie + b == s0, tie, z[0])
    z[1] = np.nextafter(tie, np.inf)
    assert (z[0] + b == s0).sum() > n // 2
    expr = pyet.where(pyet.asarray(z) + pyet.asarray(b) > s0, pyet.asarray(g) @ pyet.asarray(w),
                      s1)
    out = run_both(lambda: np.empty((m, n), dtype), expr)
    want = np.where(z + b > s0, g.astype(np.float64) @ w, s1)
    close(out, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mask_of_an_output_equals_unfused(dtype):
    # where(h > 0, g @ W.T, 0): relu's gradient read from the layer's output
    rng = np.random.default_rng(9)
    m, k, n = 33, 10, 128
    g = rng.standard_normal((m, k)).astype(dtype)
    wt = rng.standard_normal((n, k)).astype(dtype)
    h = np.maximum(rng.standard_normal((m, n)), 0).astype(dtype)
    h[4, 5:9] = [np.inf, -np.inf, -0.0, 1e-30]
    expr = pyet.where(pyet.asarray(h) > 0, pyet.asarray(g) @ pyet.asarray(wt).T, 0)
    out = run_both(lambda: np.empty((m, n), dtype), expr)
    want = np.where(h > 0, g.astype(np.float64) @ wt.T, 0)
    close(out, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_column_major_b_and_strided_destination_with_sentinels(dtype):
    # B = W.T (column-major, copied panel by panel); the destination a block of
    # a wider array: its neighbours keep their sentinels
    rng = np.random.default_rng(3)
    x = rng.standard_normal((50, 30)).astype(dtype)
    wt = rng.standard_normal((110, 30)).astype(dtype)
    b = rng.standard_normal(110).astype(dtype)
    expr = pyet.relu(pyet.asarray(x) @ pyet.asarray(wt).T + pyet.asarray(b))
    bigs = []

    def make_out():
        big = np.full((52, 120), 7, dtype)
        bigs.append(big)
        return big[1:51, 5:115]

    run_both(make_out, expr)
    for big in bigs:
        assert (big[0] == 7).all() and (big[51] == 7).all()
        assert (big[:, :5] == 7).all() and (big[:, 115:] == 7).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_layouts_the_tiles_do_not_take_run_unfused(dtype):
    rng = np.random.default_rng(4)
    x, w, b = relu_case(rng, 40, 16, 30, dtype)  # 30 columns: BLAS's product
    out = np.empty((40, 30), dtype)
    plan = kept_plan(out, pyet.relu(pyet.asarray(x) @ pyet.asarray(w) + pyet.asarray(b)))
    assert fused(plan) == 0
    # a bias with a step of two, a Fortran destination: the pass as it was
    x, w, b2 = relu_case(rng, 40, 16, 96, dtype)
    bias = np.repeat(b2, 2)[::2]
    for make_out, b_ in ((lambda: np.empty((40, 96), dtype), bias),
                         (lambda: np.empty((40, 96), dtype, order="F"), b2)):
        out = make_out()
        plan = kept_plan(out, pyet.relu(pyet.asarray(x) @ pyet.asarray(w) + pyet.asarray(b_)))
        assert fused(plan) == 0
        plan.run(keep=True)
        np.testing.assert_allclose(out, np.maximum(x.astype(np.float64) @ w + b_, 0),
                                   rtol=1e-4, atol=1e-4)


def test_destination_overlapping_an_operand_is_not_fused():
    rng = np.random.default_rng(5)
    m, k, n = 32, 16, 64
    g = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    z = rng.standard_normal((m, n)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    want = np.where(z + b > 0, g.astype(np.float64) @ w, 0)
    Z = pyet.asarray(z)
    plan = kept_plan(z, pyet.where(Z + pyet.asarray(b) > 0, pyet.asarray(g) @ pyet.asarray(w), 0))
    assert fused(plan) == 0
    np.testing.assert_allclose(z, want, rtol=1e-4, atol=1e-4)


def test_operands_inside_the_product_are_not_fused():
    # z a view of the product's destination (a statement's C): the tiles would
    # read it before every tile is stored
    rng = np.random.default_rng(10)
    g = rng.standard_normal((16, 8)).astype(np.float32)
    w = rng.standard_normal((8, 96)).astype(np.float32)
    b = rng.standard_normal(96).astype(np.float32)
    c = np.zeros((17, 96), np.float32)
    out = np.empty((16, 96), np.float32)
    C = pyet.asarray(c)
    plan = pyet.EvalPlan()
    plan.assign(C[1:], pyet.asarray(g) @ pyet.asarray(w))
    plan.assign(pyet.asarray(out), pyet.where(C[:-1] + pyet.asarray(b) > 0, C[1:], 0))
    plan.run(keep=True)
    c[...] = 0
    plan.run(keep=True)
    assert fused(plan) == 0
    want = np.concatenate([np.zeros((1, 96)), g.astype(np.float64) @ w])
    np.testing.assert_allclose(out, np.where(want[:-1] + b > 0, want[1:], 0), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_signed_zero_and_infinities(dtype):
    # a NaN reaching relu or the compare: the unfused pass runs (its bits and
    # flags); -0.0 + 0.0 and -x + x give relu's +0.0; infinities pass through
    rng = np.random.default_rng(6)
    m, k, n = 24, 8, 64
    x = rng.standard_normal((m, k)).astype(dtype)
    w = rng.standard_normal((k, n)).astype(dtype)
    x[3, 2] = np.nan
    x[5] = 0
    x[7, 1] = np.inf
    b = rng.standard_normal(n).astype(dtype)
    b[10:20] = 0
    b[20:30] = -0.0
    with np.errstate(invalid="ignore"):
        out = run_both(lambda: np.empty((m, n), dtype),
                       pyet.relu(pyet.asarray(x) @ pyet.asarray(w) + pyet.asarray(b)))
        want = np.maximum(x @ w + b, 0)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    assert not np.signbit(out[5]).any()
    # the mask with NaN in z
    z = rng.standard_normal((m, n)).astype(dtype)
    z[2, 3] = np.nan
    expr = pyet.where(pyet.asarray(z) + pyet.asarray(b) > 0, pyet.asarray(x) @ pyet.asarray(w), 0)
    with np.errstate(invalid="ignore"):
        run_both(lambda: np.empty((m, n), dtype), expr)


def test_floating_point_errors_as_unfused():
    # C + b overflows: the fused run bails and the pass reports it, as unfused
    m, k, n = 16, 4, 48
    x = np.full((m, k), 1e38, np.float32)
    w = np.full((k, n), 0.5, np.float32)  # C = 2e38
    b = np.full(n, 3e38, np.float32)
    expr = pyet.relu(pyet.asarray(x) @ pyet.asarray(w) + pyet.asarray(b))
    outs = []
    for epilogues in (True, False):
        out = np.zeros((m, n), np.float32)
        with np.errstate(over="ignore"):
            plan = kept_plan(out, expr, epilogues)
        with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
            plan.run(keep=True)
        with np.errstate(over="ignore"):
            plan.run(keep=True)
        outs.append(out)
    same_bits(*outs)
    assert np.isinf(outs[0]).all()


def test_overflow_in_the_product_alone_is_not_reported():
    # the product overflows (the tiles raise the flag, the unfused gemm reports
    # nothing), inf + b does not: no error either way
    m, k, n = 16, 4, 48
    x = np.full((m, k), 3e38, np.float32)
    w = np.full((k, n), 2.0, np.float32)
    b = np.ones(n, np.float32)
    for epilogues in (True, False):
        out = np.zeros((m, n), np.float32)
        with np.errstate(over="ignore"):
            plan = kept_plan(out, pyet.relu(pyet.asarray(x) @ pyet.asarray(w) + pyet.asarray(b)),
                             epilogues)
        with np.errstate(all="raise"):
            plan.run(keep=True)
        assert np.isposinf(out).all()


def test_two_threads():
    rng = np.random.default_rng(7)
    x, w, b = relu_case(rng, 256, 128, 384, np.float32)
    old = pyet.get_num_threads()
    pyet.set_num_threads(2)
    try:
        run_both(lambda: np.empty((256, 384), np.float32),
                 pyet.relu(pyet.asarray(x) @ pyet.asarray(w) + pyet.asarray(b)))
    finally:
        pyet.set_num_threads(old)


def test_value_and_grad_over_new_arrays_each_call():
    # a cached structure replayed over other leaves' memory (moved sites): the
    # fused replay's results equal a fresh evaluation's
    rng = np.random.default_rng(8)
    pyet.clear_grad_cache()

    def step(x, w1, b1, w2):
        X, W1, B1, W2 = (pyet.asarray(a) for a in (x, w1, b1, w2))
        h = pyet.relu(X @ W1 + B1)
        return pyet.value_and_grad(pyet.sum(h @ W2), [W1, B1, W2])

    shapes = [(32, 16), (16, 96), (96,), (96, 64)]
    for call in range(4):
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        value, grads = step(*arrays)
        old = core.set_gemm_epilogues(False)
        try:
            pyet.clear_grad_cache()
            value0, grads0 = step(*arrays)
        finally:
            core.set_gemm_epilogues(old)
            pyet.clear_grad_cache()
        same_bits(value.numpy(), value0.numpy())
        for g, g0 in zip(grads, grads0, strict=True):
            same_bits(g.numpy(), g0.numpy())
        if call == 0:  # the structure is kept and replayed from here on
            value, grads = step(*arrays)


def test_stats_count_a_product_and_a_pass():
    rng = np.random.default_rng(11)
    x, w, b = relu_case(rng, 32, 16, 96, np.float32)
    x[0, 0] = np.nan  # the second plan bails: the pass runs again
    for xs in (np.nan_to_num(x), x):
        out = np.empty((32, 96), np.float32)
        plan = kept_plan(out, pyet.relu(pyet.asarray(xs) @ pyet.asarray(w) + pyet.asarray(b)))
        assert fused(plan) == 1
        pyet.stats(reset=True)
        plan.run(keep=True)
        st = pyet.stats()
        assert st["gemm_calls"] == 1 and st["elementwise_passes"] == 1


def test_knob_returns_old_setting():
    old = core.set_gemm_epilogues(False)
    try:
        assert core.set_gemm_epilogues(False) is False
    finally:
        core.set_gemm_epilogues(old)
    assert core.set_gemm_epilogues(old) is old


def test_packed_field_destination_and_operands_are_not_fused():
    # a packed structured field's byte strides are no multiple of the itemsize:
    # the epilogue refuses it (the pass runs as it was); the pad bytes stay
    rng = np.random.default_rng(12)
    x, w, b = relu_case(rng, 16, 8, 64, np.float32)
    rec = np.zeros((16, 64), np.dtype([("pad", "u1"), ("v", np.float32)], align=False))
    rec["pad"] = 0xA5
    plan = kept_plan(rec["v"], pyet.relu(pyet.asarray(x) @ pyet.asarray(w) + pyet.asarray(b)))
    assert fused(plan) == 0
    plan.run(keep=True)
    close(rec["v"], np.maximum(x.astype(np.float64) @ w + b, 0), np.float32)
    assert (rec["pad"] == 0xA5).all()
    zrec = np.zeros((16, 64), rec.dtype)
    zrec["v"] = rng.standard_normal((16, 64))
    out = np.empty((16, 64), np.float32)
    expr = pyet.where(pyet.asarray(zrec["v"]) > 0, pyet.asarray(x) @ pyet.asarray(w), 0)
    plan = kept_plan(out, expr)
    assert fused(plan) == 0
    plan.run(keep=True)
    close(out, np.where(zrec["v"] > 0, x.astype(np.float64) @ w, 0), np.float32)


@pytest.mark.parametrize("dtype", DTYPES)
def test_negative_row_destination_and_z_are_not_fused(dtype):
    # rows walked backwards (a negative row stride, which the tiles' element
    # row steps cannot hold): the pass runs unfused, NumPy's values, and the
    # sentinel rows around the destination stay as they were
    rng = np.random.default_rng(12)
    m, k, n = 24, 16, 64
    x, w, b = relu_case(rng, m, k, n, dtype)
    buf = np.full((m + 2, n), 7, dtype)
    out = buf[m:0:-1]  # rows m .. 1, backwards
    assert out.strides[0] < 0
    plan = kept_plan(out, pyet.relu(pyet.asarray(x) @ pyet.asarray(w) + pyet.asarray(b)))
    assert fused(plan) == 0
    plan.run(keep=True)
    close(out, np.maximum(x.astype(np.float64) @ w + b, 0), dtype)
    assert (buf[0] == 7).all() and (buf[-1] == 7).all()
    # z read backwards, into a plain destination
    z = np.ascontiguousarray(rng.standard_normal((m, n)).astype(dtype)[::-1])[::-1]
    assert z.strides[0] < 0
    expr = pyet.where(pyet.asarray(z) > 0, pyet.asarray(x) @ pyet.asarray(w), 0)
    dst = np.full((m + 2, n), 7, dtype)
    plan = kept_plan(dst[1:-1], expr)
    assert fused(plan) == 0
    plan.run(keep=True)
    close(dst[1:-1], np.where(z > 0, x.astype(np.float64) @ w, 0), dtype)
    assert (dst[0] == 7).all() and (dst[-1] == 7).all()
