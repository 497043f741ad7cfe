"""EvalPlan's multi-output passes: consecutive elementwise statements over
destinations of one shape run as one pass, with the result of running them
one by one (NumPy's answer), on every layout and with aliasing."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet


def _adam_numpy(w, g, m, v, lr, b1, b2, eps, t):
    m[...] = b1 * m + (1 - b1) * g
    v[...] = b2 * v + (1 - b2) * g * g
    w -= lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)


def _adam_plan(plan, W, G, M, V, lr, b1, b2, eps, t):
    plan.assign(M, b1 * M + (1 - b1) * G)
    plan.assign(V, b2 * V + (1 - b2) * G * G)
    plan.assign(W, lr * (M / (1 - b1 ** t)) / (pyet.sqrt(V / (1 - b2 ** t)) + eps), op="-=")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C", "F", "strided", "reversed"])
def test_adam_step_is_one_pass_with_numpys_bits(dtype, layout):
    rng = np.random.default_rng(0)
    shape = (37, 29)

    def make():
        a = rng.standard_normal((2 * shape[0], 2 * shape[1])).astype(dtype)
        return {"C": lambda: np.ascontiguousarray(a[: shape[0], : shape[1]]),
                "F": lambda: np.asfortranarray(a[: shape[0], : shape[1]]),
                "strided": lambda: a[::2, ::2],
                "reversed": lambda: a[::-2, ::-2]}[layout]()

    w, g, m, v = make(), make(), make(), np.abs(make())
    ref = [a.copy() for a in (w, g, m, v)]
    for t in (1, 2, 3):
        _adam_numpy(*ref, 1e-3, 0.9, 0.999, 1e-8, t)
        plan = pyet.EvalPlan()
        _adam_plan(plan, *(pyet.asarray(a) for a in (w, g, m, v)), 1e-3, 0.9, 0.999, 1e-8, t)
        assert "one pass writing statements [0, 1, 2]" in pyet.explain(plan)
        pyet.stats(reset=True)
        plan.run()
        assert pyet.stats()["elementwise_passes"] == 1
        for ours, theirs in zip((w, g, m, v), ref, strict=True):
            np.testing.assert_array_equal(ours, theirs)


def test_destinations_of_different_dtypes_and_broadcast_trees():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 5))
    row = rng.standard_normal(5)
    a = np.zeros((8, 5), np.float32)
    b = np.zeros((8, 5), np.int64)
    c = np.zeros((8, 5))
    plan = pyet.EvalPlan()
    X, A = pyet.asarray(x), pyet.asarray(a)
    plan.assign(a, X * 2 + pyet.asarray(row))            # float64 tree into float32
    plan.assign(b, pyet.asarray(np.arange(5)) * 3)        # a broadcast row, int64
    plan.assign(c, A + X)                                 # reads the new float32 a
    h = plan.register(X + 1)                              # a result of its own
    pyet.stats(reset=True)
    plan.run()
    assert pyet.stats()["elementwise_passes"] == 1
    ea = (x * 2 + row).astype(np.float32)
    np.testing.assert_array_equal(a, ea)
    np.testing.assert_array_equal(b, np.broadcast_to(np.arange(5) * 3, (8, 5)))
    np.testing.assert_array_equal(c, ea + x)
    np.testing.assert_array_equal(h.value.numpy(), x + 1)


def test_a_statement_reading_an_earlier_destination_other_than_in_place_waits():
    x = np.arange(12.0).reshape(3, 4)
    y = np.zeros((3, 4))
    z = np.zeros((4, 3))
    plan = pyet.EvalPlan()
    plan.assign(y, pyet.asarray(x) + 1)
    plan.assign(z, pyet.asarray(y).T * 2)   # transposed: not the block just written
    plan.assign(x, pyet.asarray(x)[::-1] + pyet.asarray(y))  # x reversed into itself
    plan.run()
    ey = np.arange(12.0).reshape(3, 4) + 1
    np.testing.assert_array_equal(y, ey)
    np.testing.assert_array_equal(z, ey.T * 2)
    np.testing.assert_array_equal(x, np.arange(12.0).reshape(3, 4)[::-1] + ey)


def test_special_nodes_see_what_earlier_statements_wrote():
    x = np.ones((4, 4))
    y = np.zeros((4, 4))
    X, Y = pyet.asarray(x), pyet.asarray(y)
    plan = pyet.EvalPlan()
    plan.assign(y, X * 3)
    plan.assign(x, pyet.sum(Y, axis=0) + X)     # the sum reads the new y
    plan.assign(y, pyet.dot(X, Y))              # a root form: a gemm of its own
    plan.run()
    np.testing.assert_array_equal(x, np.full((4, 4), 13.0))
    np.testing.assert_array_equal(y, np.full((4, 4), 13.0) @ np.full((4, 4), 3.0))


def test_an_error_while_running_writes_nothing():
    w = np.arange(6.0)
    k = np.array([1, 2, -1])
    out = np.zeros(3, np.int64)
    plan = pyet.EvalPlan()
    plan.assign(w, pyet.asarray(w) * 2)
    h = plan.register(pyet.asarray(w) + 1)
    plan.assign(out, pyet.asarray(np.array([2, 3, 4])) ** pyet.asarray(k))
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        plan.run()
    np.testing.assert_array_equal(w, np.arange(6.0))
    np.testing.assert_array_equal(out, 0)
    with pytest.raises(RuntimeError, match="has not run yet"):
        _ = h.value

    def boom(a):  # F tries the function on an empty array when the node is built
        if a.size:
            raise ArithmeticError("boom")
        return a

    plan = pyet.EvalPlan()
    plan.assign(w, pyet.asarray(w) * 2)
    plan.assign(w, pyet.F(boom, pyet.asarray(w)) + 1)
    with pytest.raises(ArithmeticError, match="boom"):
        plan.run()
    np.testing.assert_array_equal(w, np.arange(6.0))
    assert len(plan) == 0  # the plan is emptied either way


def test_many_passes_on_two_threads():
    rng = np.random.default_rng(2)
    n = 300_000
    w, g, m, v = (rng.standard_normal(n) for _ in range(4))
    v = np.abs(v)
    ref = [a.copy() for a in (w, g, m, v)]
    _adam_numpy(*ref, 1e-2, 0.9, 0.99, 1e-8, 1)
    old = pyet.get_num_threads()
    pyet.set_num_threads(2)
    try:
        plan = pyet.EvalPlan()
        _adam_plan(plan, *(pyet.asarray(a) for a in (w, g, m, v)), 1e-2, 0.9, 0.99, 1e-8, 1)
        plan.run()
    finally:
        pyet.set_num_threads(old)
    for ours, theirs in zip((w, g, m, v), ref, strict=True):
        np.testing.assert_array_equal(ours, theirs)


# views of one buffer, so statements alias each other in every way
_VIEWS = [
    lambda b: b[:4, :4],
    lambda b: b[:4, :4].T,
    lambda b: b[1:5, 1:5],
    lambda b: b[::-1, ::-1][:4, :4],
    lambda b: b[4:, 4:],
    lambda b: b[:8:2, :8:2],
    lambda b: b[:4, 4:],
]


@settings(max_examples=120, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, len(_VIEWS) - 1),
                                st.integers(0, len(_VIEWS) - 1),
                                st.integers(0, len(_VIEWS) - 1),
                                st.integers(0, 4),
                                st.sampled_from(["=", "+=", "*="])),
                      min_size=1, max_size=7))
def test_random_aliasing_plans_equal_running_one_by_one(steps):
    rng = np.random.default_rng(3)
    ours = rng.uniform(0.5, 1.5, (8, 8))
    ref = ours.copy()

    def tree(lib, buf, i, j, kind):
        x, y = _VIEWS[i](buf), _VIEWS[j](buf)
        if lib is pyet:
            x, y = pyet.asarray(x), pyet.asarray(y)
        return [lambda: x + y, lambda: x * 0.5 - y, lambda: lib.sqrt(x) + lib.sum(y, axis=0),
                lambda: lib.tanh(x) * y + x, lambda: x[:, :1] + y[:1]][kind]()

    plan = pyet.EvalPlan()
    for d, i, j, kind, op in steps:
        plan.assign(_VIEWS[d](ours), tree(pyet, ours, i, j, kind), op=op)
    plan.run()
    for d, i, j, kind, op in steps:
        with np.errstate(invalid="ignore"):
            value = np.asarray(tree(np, ref, i, j, kind))
        dst = _VIEWS[d](ref)
        new = {"=": value, "+=": dst + value, "*=": dst * value}[op]
        dst[...] = new
    # (tanh may differ from NumPy's by an ulp, which a later difference can expose:
    # a tolerance on the buffer's scale, where the cancellation happened; an
    # aliasing mistake is off by whole values)
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(ref).max()))


def test_a_kept_plan_runs_again_on_the_memory_as_it_is_then():
    w, g = np.ones(4), np.full(4, 2.0)
    plan = pyet.EvalPlan()
    plan.assign(w, pyet.asarray(w) - 0.5 * pyet.asarray(g))
    h = plan.register(pyet.asarray(w) * 2)
    plan.run(keep=True)
    first = h.value
    np.testing.assert_array_equal(w, 0.0)
    g[...] = 4.0
    plan.run(keep=True)
    np.testing.assert_array_equal(w, -2.0)
    np.testing.assert_array_equal(h.value.numpy(), -4.0)
    np.testing.assert_array_equal(first.numpy(), 0.0)  # each run's result is new
    assert len(plan) == 2
    plan.run()
    assert len(plan) == 0
