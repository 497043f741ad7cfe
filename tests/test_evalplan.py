"""EvalPlan: statements registered together give the result of running them one
by one; what they share is computed once (counted with pyet.stats())."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


@pytest.fixture
def layer():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((16, 8)), rng.standard_normal((8, 4)),
            rng.standard_normal(4))


def test_structurally_equal_products_are_computed_once(layer):
    x, W, b = layer
    y1, y2 = np.empty((16, 4)), np.empty((16, 4))
    plan = pyet.EvalPlan()
    # built separately: equal structures over the same memory, not the same objects
    plan.assign(y1, pyet.sigmoid(pyet.dot(x, W) + b))
    plan.assign(y2, 2 * pyet.sigmoid(pyet.dot(pyet.asarray(x), pyet.asarray(W)) + b))
    pyet.stats(reset=True)
    plan.run()
    assert pyet.stats()["gemm_calls"] == 1
    np.testing.assert_allclose(y1, _sigmoid(x @ W + b), rtol=1e-12)
    np.testing.assert_allclose(y2, 2 * _sigmoid(x @ W + b), rtol=1e-12)
    # run one by one, the same statements make two
    pyet.stats(reset=True)
    y1[...] = 0
    pyet.evaluate(pyet.sigmoid(pyet.dot(x, W) + b), out=y1)
    pyet.evaluate(2 * pyet.sigmoid(pyet.dot(x, W) + b), out=y2)
    assert pyet.stats()["gemm_calls"] == 2


def test_a_statement_writing_what_a_shared_node_read_is_seen(layer):
    x, W, b = layer
    W = W.copy()
    y1, y2 = np.empty((16, 4)), np.empty((16, 4))
    plan = pyet.EvalPlan()
    plan.assign(y1, pyet.dot(x, W) + 1)
    plan.assign(W, pyet.asarray(W) * 2)            # writes W
    plan.assign(y2, pyet.dot(x, W) + 1)            # must see the new W
    W0 = W.copy()
    pyet.stats(reset=True)
    plan.run()
    assert pyet.stats()["gemm_calls"] == 2
    np.testing.assert_allclose(y1, x @ W0 + 1, rtol=1e-12)
    np.testing.assert_allclose(y2, x @ (2 * W0) + 1, rtol=1e-12)


def test_sequential_semantics_and_update_ops():
    a = np.arange(6.0)
    b = np.ones(6)
    plan = pyet.EvalPlan()
    plan.assign(a, pyet.asarray(a) * 2)
    plan.assign(b, a, op="+=")           # reads the new a
    plan.assign(a, b, op="*=")
    h = plan.register(pyet.sum(pyet.asarray(a)))
    plan.run()
    ra = np.arange(6.0) * 2
    rb = 1 + ra
    ra = ra * rb
    np.testing.assert_array_equal(a, ra)
    np.testing.assert_array_equal(b, rb)
    assert float(h.value.numpy()) == ra.sum()
    assert len(plan) == 0


def test_errors_at_registration_write_nothing():
    a = np.zeros(3)
    plan = pyet.EvalPlan()
    plan.assign(a, pyet.asarray(np.ones(3)))
    with pytest.raises(ValueError, match="cannot evaluate an expression of shape"):
        plan.assign(a, pyet.asarray(np.ones(4)))
    with pytest.raises(TypeError, match="same_kind"):
        plan.assign(np.zeros(3, np.int32), pyet.asarray(np.ones(3)))
    with pytest.raises(ValueError, match="read-only"):
        plan.assign(np.broadcast_to(np.zeros(3), (3,)), 1.0)
    with pytest.raises(ValueError, match="op must be one of"):
        plan.assign(a, 1.0, op="**=")
    with pytest.raises(TypeError, match="destination must be"):
        plan.assign([0, 0, 0], 1.0)
    np.testing.assert_array_equal(a, 0)
    plan.run()
    np.testing.assert_array_equal(a, 1)


def test_handle_before_run_and_context_manager():
    with pyet.EvalPlan() as plan:
        h = plan.register(pyet.asarray(np.arange(3.0)) + 1)
        with pytest.raises(RuntimeError, match="has not run yet"):
            _ = h.value
    np.testing.assert_array_equal(h.value.numpy(), [1, 2, 3])
    a = np.zeros(2)
    with pytest.raises(KeyError):
        with pyet.EvalPlan() as plan:
            plan.assign(a, 5.0)
            raise KeyError("boom")
    np.testing.assert_array_equal(a, 0)  # a block that raised does not run
    assert "statement" in repr(pyet.EvalPlan())


def test_evaluate_all(layer):
    x, W, b = layer
    out = np.empty(4)
    r1, r2 = pyet.evaluate_all([pyet.sum(pyet.dot(x, W), axis=0), pyet.dot(x, W) * 2],
                               outs=[out, None])
    assert r1 is out
    np.testing.assert_allclose(out, (x @ W).sum(0), rtol=1e-12)
    np.testing.assert_allclose(r2.numpy(), (x @ W) * 2, rtol=1e-12)
    with pytest.raises(ValueError, match="2 expressions but 1 outs"):
        pyet.evaluate_all([1, 2], outs=[None])


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 4),
                                st.sampled_from(["=", "+=", "-=", "*="])),
                      min_size=1, max_size=8))
def test_random_plans_equal_running_one_by_one(steps):
    rng = np.random.default_rng(1)
    base = [rng.uniform(0.5, 1.5, (3, 3)) for _ in range(3)]
    ours = [a.copy() for a in base]
    ref = [a.copy() for a in base]

    def tree(lib, arrs, i, j, kind):
        x, y = arrs[i], arrs[j]
        if lib is pyet:
            x, y = pyet.asarray(x), pyet.asarray(y)
        return [lambda: x + y, lambda: lib.dot(x, y), lambda: lib.sum(x, axis=0) * y,
                lambda: x.T * 2 + y, lambda: lib.dot(x, y) - lib.dot(x, y)][kind]()

    plan = pyet.EvalPlan()
    for dst, src, kind, op in steps:
        plan.assign(ours[dst], tree(pyet, ours, src, (src + 1) % 3, kind), op=op)
    plan.run()
    for dst, src, kind, op in steps:  # NumPy, one statement after the other
        value = np.asarray(tree(np, ref, src, (src + 1) % 3, kind))
        cur = ref[dst]
        new = {"=": value, "+=": cur + value, "-=": cur - value, "*=": cur * value}[op]
        ref[dst][...] = new
    for a, r in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-12)


def test_explain_says_what_will_run(layer):
    x, W, b = (pyet.asarray(a) for a in layer)
    C = np.zeros((16, 4))
    text = pyet.explain(0.5 * pyet.dot(x, W) + pyet.asarray(C), out=C)
    assert "one gemm into dst" in text and "0.5 * dot" in text and "+ 1 * dst" in text
    text = pyet.explain(pyet.sigmoid(pyet.dot(x, W) + b))
    assert "scratch: dot() (16,4) float64, 512 bytes" in text
    assert "dst = sigmoid[float64->float64](r0)" in text
    text = pyet.explain(2.0 * (x + 0.5 * x))  # the seed's update shape: one fused kernel
    assert "dst = scale_axpy" in text
    s = pyet.sum(x, axis=0)
    assert "used 2 times, computed once" in pyet.explain(s * s)
    y = np.arange(8.0)
    assert "overlaps dst: copied first" in pyet.explain(pyet.asarray(y[::-1]) + 1, out=y)
    plan = pyet.EvalPlan()
    plan.assign(C, pyet.dot(x, W))
    plan.register(pyet.asarray(C) + 1)
    assert "[0] dst(16, 4)" in repr(plan) and "[1] result" in repr(plan)
    with pytest.raises(ValueError, match="cannot evaluate"):
        pyet.explain(pyet.asarray(C).T, out=C)
    np.testing.assert_array_equal(C, 0)  # explaining computes nothing
