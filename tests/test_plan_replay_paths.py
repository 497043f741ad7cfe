"""The fast paths a kept plan's replay takes for pyet.nn training steps: where()
with a one-value operand, reductions bound once (NumPy's ufunc reduce for
small leaves, a fold straight into the destination), ReLU's gradient from
its stored output.  Each against NumPy (PyTorch for the layer)."""

import numpy as np
import pytest

import pyet
import pyet.nn as nn
from pyet.nn._store import store

_DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]


@pytest.mark.parametrize("dtype", _DTYPES)
@pytest.mark.parametrize("form", ["x0", "0y", "12", "xy"])
def test_where_with_one_value_operands(dtype, form):
    rng = np.random.default_rng(1)
    # 1000 elements: several blocks, a ragged tail
    c = rng.random((10, 100)) > 0.5
    x = (rng.standard_normal((10, 100)) * 10).astype(dtype)
    y = (rng.standard_normal((10, 100)) * 10).astype(dtype)
    one, two = np.asarray(1, dtype), np.asarray(0 if dtype == np.bool_ else 2, dtype)
    a = {"x0": x, "0y": one, "12": one, "xy": x}[form]
    b = {"x0": two, "0y": y, "12": two, "xy": y}[form]
    expect = np.where(c, a, b)
    got = pyet.evaluate(pyet.where(pyet.asarray(c), a if a.ndim else a[()],
                                   b if b.ndim else b[()])).numpy()
    assert got.dtype == expect.dtype
    np.testing.assert_array_equal(got, expect)


def test_where_one_value_operand_strided_and_nan():
    x = np.arange(40, dtype=np.float64)[::-2]
    c = x > 10
    x[3] = np.nan
    out = np.full(20, 7.0)
    pyet.evaluate(pyet.where(pyet.asarray(c), pyet.asarray(x), 0.0), out=out)
    np.testing.assert_array_equal(out, np.where(c, x, 0.0))


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min", "mean"])
@pytest.mark.parametrize("shape,axis,keepdims", [
    ((32, 128), 0, False), ((32, 10), None, False), ((8, 5), 1, True),  # small leaves
    ((256, 128), 0, False), ((256, 64), 1, False), ((300, 40), (0, 1), False),  # folded
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kept_plan_reductions_replay(kind, shape, axis, keepdims, dtype):
    rng = np.random.default_rng(2)
    src = np.empty(shape, dtype)
    x = pyet.asarray(src)
    e = getattr(pyet, kind)(x * 1.0 if kind != "prod" else x, axis=axis, keepdims=keepdims)
    leaf = getattr(pyet, kind)(x, axis=axis, keepdims=keepdims)
    outs = [np.empty(e.shape, e.dtype), np.empty(leaf.shape, leaf.dtype)]
    plan = pyet.EvalPlan()
    plan.assign(outs[0], e)
    plan.assign(outs[1], leaf)
    for _ in range(3):  # the first run records, the others replay
        src[...] = rng.uniform(0.99, 1.01, shape) if kind == "prod" else rng.standard_normal(shape)
        plan.run(keep=True)
        expect = getattr(np, kind)(src, axis=axis, keepdims=keepdims)
        for o in outs:
            tol = 1e-5 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(o, expect, rtol=tol, atol=tol)


def test_kept_plan_small_sum_is_numpys():
    # a small leaf: NumPy's own reduction, the same bits
    rng = np.random.default_rng(3)
    src = np.empty((32, 128), np.float32)
    out = np.empty(128, np.float32)
    plan = pyet.EvalPlan()
    plan.assign(out, pyet.sum(pyet.asarray(src), axis=0))
    for _ in range(3):
        src[...] = rng.standard_normal(src.shape)
        plan.run(keep=True)
        np.testing.assert_array_equal(out, src.sum(0))


def test_relu_gradient_reads_its_stored_output():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((6, 7)).astype(np.float32)
    a[0, :3] = [0.0, -0.0, np.nan]
    g = rng.standard_normal((6, 7)).astype(np.float32)
    g[1, 1] = np.inf
    layer = nn.ReLU(policy=nn.Policy(feedback_output=True))
    out = layer.forward(input=a)["output"]
    assert out is store(out)  # stored once: the backward and any consumer read it
    (gx,) = layer.backward(output=g).values()
    np.testing.assert_array_equal(pyet.evaluate(out).numpy(), np.maximum(a, 0))
    np.testing.assert_array_equal(pyet.evaluate(gx).numpy(), np.where(a > 0, g, 0))
    torch = pytest.importorskip("torch")
    ta = torch.tensor(a, requires_grad=True)
    torch.relu(ta).backward(torch.tensor(g))
    ok = ~np.isnan(a)  # PyTorch passes g through at NaN inputs, pyet's rule gives 0 there
    np.testing.assert_array_equal(pyet.evaluate(gx).numpy()[ok], ta.grad.numpy()[ok])


def test_relu_without_feedback_is_not_stored():
    layer = nn.ReLU()
    out = layer.forward(input=np.ones((2, 3), np.float32))["output"]
    assert out is not store(out)
    assert layer.backward(output=np.ones((2, 3), np.float32)) == {}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("rows,n", [(1, 1), (3, 10), (64, 10), (65, 10), (200, 31), (130, 7)])
def test_short_softmax_rows_equal_the_row_loop(dtype, log, rows, n):
    # contiguous rows shorter than the kernel's lanes take the blocked path;
    # rows with a gap between them the row loop: the same bits, and NumPy's values
    from pyet._kernels import nn as kernels

    rng = np.random.default_rng(5)
    x = (rng.standard_normal((rows, n)) * 5).astype(dtype)
    if rows > 2:
        x[1, 0], x[2, :] = np.nan, -np.inf
    gapped = np.zeros((rows, n + 3), dtype)
    gapped[:, :n] = x
    out, out_gapped = np.empty_like(x), np.zeros((rows, n + 3), dtype)
    kernels.softmax_rows(x, out, log)
    kernels.softmax_rows(gapped[:, :n], out_gapped[:, :n], log)
    np.testing.assert_array_equal(out, out_gapped[:, :n])
    with np.errstate(invalid="ignore"):
        z = x - x.max(1, keepdims=True)
        expect = z - np.log(np.exp(z).sum(1, keepdims=True)) if log else \
            np.exp(z) / np.exp(z).sum(1, keepdims=True)
    np.testing.assert_allclose(out, expect, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-6)


@pytest.mark.parametrize("c_dtype", [np.float32, np.float64])
def test_kept_plan_xent_grad_with_a_tree_factor(c_dtype):
    # the factor c is a tree over a 0-d tensor: each replay reads its value then
    from pyet._nodes.softmax import softmax_xent_grad

    rng = np.random.default_rng(6)
    x = np.empty((16, 10), np.float32)
    t = np.empty((16, 10), np.float32)
    seed = np.empty((), c_dtype)
    logp = pyet.log_softmax(pyet.asarray(x), axis=1)
    e = softmax_xent_grad(logp, pyet.asarray(t), pyet.asarray(seed) * (1 / 16), axis=1)
    out = np.empty((16, 10), np.float32)
    plan = pyet.EvalPlan()
    plan.assign(out, e)
    for k in range(3):
        x[...] = rng.standard_normal(x.shape)
        t[...] = rng.random(t.shape)
        seed[()] = 1.0 + k
        plan.run(keep=True)
        z = x - x.max(1, keepdims=True)
        p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
        expect = (1.0 + k) / 16 * (p * t.sum(1, keepdims=True) - t)
        np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-6)
