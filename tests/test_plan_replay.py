"""A kept plan records its first run and replays it (EvalPlan.run(keep=True)):
every replay must equal running the statements one by one, with NumPy, on the
values the memory holds then."""

import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import pyet
from pyet.nn._store import checkpoint, store


def _softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _log_softmax(x, axis):
    z = x - x.max(axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis, keepdims=True))


# (pyet tree, NumPy tree) over operands x, y: products at the root and inside,
# products of trees and of transposed views, reductions, softmax, views
_TREES = [
    lambda lib, x, y: x + y,
    lambda lib, x, y: lib.dot(x, y),
    lambda lib, x, y: 2.0 * lib.dot(x, y.T) + x,
    lambda lib, x, y: lib.dot(x * y, y.T),
    lambda lib, x, y: lib.tanh(lib.dot(x.T, y * 0.5)) * y,
    lambda lib, x, y: lib.sum(x * y, axis=0) + y,
    lambda lib, x, y: x - lib.max(y, axis=1, keepdims=True),
    lambda lib, x, y: x[::-1] * 0.5 + y.T,
]
_PYET_ONLY = [
    lambda x, y: pyet.softmax(x) + y,
    lambda x, y: pyet.log_softmax(pyet.dot(x, y), axis=0),
    # views of trees, pieces, borders, gradients of views, stored values
    lambda x, y: pyet.concatenate([(pyet.tanh(x) * y)[1:3], pyet.dot(x, y)[:2] * 2], axis=0),
    lambda x, y: pyet.pad(x[1:3, 1:3] * y[:2, :2], 1, value=0.5) + pyet.stack(
        [y[0] * 2, x[1], y[2] + x[3], pyet.sqrt(x[0])], axis=0),
    lambda x, y: pyet.grad(pyet.sum(pyet.dot(x, y)[1:3] * y[:2]), x) + y,
    lambda x, y: store(pyet.exp(x) * y) - checkpoint(pyet.dot(x, y) + 1) * store(x * 3),
    # a reshape of a transposed value is a copy, not a view: redone by each replay
    lambda x, y: pyet.softmax(x * y).T.reshape(16).reshape(4, 4) + y,
]
_NUMPY_ONLY = [
    lambda x, y: _softmax(x, -1) + y,
    lambda x, y: _log_softmax(x @ y, 0),
    lambda x, y: np.concatenate([(np.tanh(x) * y)[1:3], (x @ y)[:2] * 2], axis=0),
    lambda x, y: np.pad(x[1:3, 1:3] * y[:2, :2], 1, constant_values=0.5) + np.stack(
        [y[0] * 2, x[1], y[2] + x[3], np.sqrt(x[0])], axis=0),
    lambda x, y: np.pad(y[:2], ((1, 1), (0, 0))) @ y.T + y,
    lambda x, y: np.exp(x) * y - ((x @ y) + 1) * (x * 3),
    lambda x, y: _softmax(x * y, -1).T.reshape(16).reshape(4, 4) + y,
]


def _tree(lib, x, y, kind):
    if kind < len(_TREES):
        if lib is pyet:
            x, y = pyet.asarray(x), pyet.asarray(y)
        return _TREES[kind](lib, x, y)
    if lib is pyet:
        return _PYET_ONLY[kind - len(_TREES)](pyet.asarray(x), pyet.asarray(y))
    return _NUMPY_ONLY[kind - len(_TREES)](x, y)


_NKINDS = len(_TREES) + len(_PYET_ONLY)
_STEPS = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 2),
                            st.integers(0, _NKINDS - 1),
                            st.sampled_from(["=", "+=", "-=", "*="])),
                  min_size=1, max_size=7)


_UPDATES = {"+=": "__add__", "-=": "__sub__", "*=": "__mul__"}


def _numpy_steps(arrs, steps):
    for dst, i, j, kind, op in steps:
        value = np.asarray(_tree(np, arrs[i], arrs[j], kind))
        cur = arrs[dst]
        cur[...] = {"=": value, "+=": cur + value, "-=": cur - value, "*=": cur * value}[op]


@settings(max_examples=60, deadline=None)
@given(steps=_STEPS, dtype=st.sampled_from([np.float32, np.float64]),
       order=st.sampled_from("CF"))
# float32 values near 1e24 after the *= steps, where NumPy's ops differ by 4e-5
@example(steps=[(0, 0, 0, 0, "="), (1, 1, 1, 9, "-="), (1, 1, 1, 10, "+="),
                (1, 1, 2, 8, "*="), (0, 1, 0, 13, "=")], dtype=np.float32, order="C")
# a float32 sum over x*y after a product read x*y from scratch: the sum folds its
# tree, not that scratch (a small leaf's sum is NumPy's loop, rounded differently)
@example(steps=[(0, 0, 0, 0, "=")] * 5 + [(2, 0, 1, 3, "="), (0, 0, 1, 5, "=")],
         dtype=np.float32, order="F")
def test_replays_equal_running_one_by_one_with_the_values_of_the_time(steps, dtype, order):
    # bit for bit against the same statements assigned one at a time by pyet;
    # against NumPy's ops in float64 (float32 compounds an ulp of exp through
    # the *= steps past any fixed tolerance)
    rng = np.random.default_rng(5)
    ours = [np.asarray(rng.uniform(0.5, 1.0, (4, 4)), dtype, order=order) for _ in range(3)]
    seq = [a.copy(order="K") for a in ours]
    ref = [a.copy() for a in ours]
    plan = pyet.EvalPlan()
    for dst, i, j, kind, op in steps:
        plan.assign(ours[dst], _tree(pyet, ours[i], ours[j], kind), op=op)
    for _ in range(3):
        plan.run(keep=True)
        assert plan._schedule is not None  # recorded by the first run, replayed after
        for dst, i, j, kind, op in steps:
            value = _tree(pyet, seq[i], seq[j], kind)
            target = pyet.asarray(seq[dst])
            if op == "=":
                target[...] = value
            else:
                target[...] = getattr(target, _UPDATES[op])(value)
        for a, r in zip(ours, seq, strict=True):
            np.testing.assert_array_equal(a.ravel(order="K").view(np.uint8),
                                          r.ravel(order="K").view(np.uint8))
        if dtype == np.float64:
            _numpy_steps(ref, steps)
            for a, r in zip(ours, ref, strict=True):
                np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(r).max()))
        for a, r, q in zip(ours, ref, seq, strict=True):  # new values in the same memory
            a[...] = r[...] = q[...] = rng.uniform(0.5, 1.0, a.shape)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", "CF")
def test_a_sum_reads_a_products_scratch_where_it_folds_to_the_same_bits(dtype, order,
                                                                           monkeypatch):
    # a layer's bias gradient sum(g, axis=0) beside its weight gradient x.T @ g:
    # the sum reads the scratch g was put in for the product when its fold of the
    # tree and NumPy's loop on the scratch agree (float sums across rows), else
    # it folds the tree again (F order: along the reduced axis)
    from pyet._nodes.reductions import Reduction

    read = []
    bind = Reduction.bind
    monkeypatch.setattr(Reduction, "bind", lambda self, out, args: (
        read.append(type(args[0]) is pyet.Tensor), bind(self, out, args))[1])
    rng = np.random.default_rng(3)
    x, y = (np.asarray(rng.standard_normal((64, 8)), dtype, order=order) for _ in range(2))
    X, Y = pyet.asarray(x), pyet.asarray(y)
    plan = pyet.EvalPlan()
    weights = plan.register(pyet.dot(X.T, X * Y + 1))
    bias = plan.register(pyet.sum(X * Y + 1, axis=0))
    for _ in range(3):
        plan.run(keep=True)
        np.testing.assert_array_equal(bias.value.numpy().view(np.uint8),
                                      pyet.evaluate(pyet.sum(X * Y + 1, axis=0))
                                      .numpy().view(np.uint8))
        np.testing.assert_allclose(weights.value.numpy(), x.T @ (x * y + 1), rtol=1e-5)
        x[...] = rng.permutation(x.ravel()).reshape(x.shape)
    assert set(read) == {order == "C"}


def test_a_replay_does_the_recorded_work_and_allocates_no_scratch():
    rng = np.random.default_rng(0)
    x, w, b = rng.random((8, 5)), rng.random((5, 3)), rng.random(3)
    y1 = np.empty((8, 3))
    X, W, B = pyet.asarray(x), pyet.asarray(w), pyet.asarray(b)
    plan = pyet.EvalPlan()
    plan.assign(y1, pyet.sigmoid(pyet.dot(X, W) + B))
    h = plan.register(2 * pyet.sigmoid(pyet.dot(X, W) + B))
    plan.assign(w, W - 0.1 * pyet.dot(X.T, pyet.asarray(y1)))
    pyet.stats(reset=True)
    plan.run(keep=True)
    first = pyet.stats(reset=True)
    text = pyet.explain(plan)
    assert "each run replays" in text and "Gemm(2d C(8,5) @ C(5,3) -> C, alpha=1, beta=0)" in text
    assert first["gemm_calls"] == 2 and first["scratch_bytes"] > 0
    for _ in range(2):
        w0 = w.copy()
        plan.run(keep=True)
        again = pyet.stats(reset=True)
        assert again["gemm_calls"] == 2 and again["scratch_bytes"] == 0
        assert again["elementwise_passes"] == first["elementwise_passes"]
        ref_y1 = 1 / (1 + np.exp(-(x @ w0 + b)))
        np.testing.assert_allclose(y1, ref_y1, rtol=1e-12)
        np.testing.assert_allclose(h.value.numpy(), 2 * ref_y1, rtol=1e-12)
        np.testing.assert_allclose(w, w0 - 0.1 * x.T @ ref_y1, rtol=1e-12)


def test_each_replay_hands_out_new_result_tensors():
    a = np.arange(4.0)
    plan = pyet.EvalPlan()
    h = plan.register(pyet.asarray(a) * 2)
    plan.run(keep=True)
    first = h.value
    a += 1
    plan.run(keep=True)
    np.testing.assert_array_equal(first.numpy(), [0, 2, 4, 6])
    np.testing.assert_array_equal(h.value.numpy(), [2, 4, 6, 8])


def test_registering_again_drops_the_recording():
    a, out = np.ones(3), np.empty(3)
    plan = pyet.EvalPlan()
    plan.assign(out, pyet.asarray(a) + 1)
    plan.run(keep=True)
    assert plan._schedule is not None
    plan.assign(out, pyet.asarray(out) * 3, op="+=")
    assert plan._schedule is None
    plan.run(keep=True)
    np.testing.assert_array_equal(out, 8.0)
    plan.run()  # not kept: nothing recorded, the plan is emptied
    assert plan._schedule is None and len(plan) == 0


def test_plans_with_value_dependent_errors_are_not_recorded_and_roll_back():
    a, out = np.array([1.0, 2.0]), np.zeros(2)
    fail = []

    def f(v):
        if fail:
            raise RuntimeError("second call")
        return v * 10

    plan = pyet.EvalPlan()
    plan.assign(out, pyet.F(f, pyet.asarray(a)))
    plan.run(keep=True)
    assert plan._schedule is None
    np.testing.assert_array_equal(out, [10.0, 20.0])
    out[...] = -1
    fail.append(True)
    with pytest.raises(RuntimeError, match="second call"):
        plan.run(keep=True)
    np.testing.assert_array_equal(out, -1.0)  # nothing written


def test_replays_follow_the_thread_count_and_errstate_of_the_time():
    from conftest import pyet_threads

    x = np.linspace(0.5, 1.5, 300_000)
    out = np.empty_like(x)
    plan = pyet.EvalPlan()
    plan.assign(out, pyet.log(pyet.asarray(x)) * 2 + pyet.sum(pyet.asarray(x)))
    plan.run(keep=True)
    ref = np.log(x) * 2 + x.sum()
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    with pyet_threads(2):
        out[...] = 0
        plan.run(keep=True)
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    x[0] = -1.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan.run(keep=True)
    assert any("invalid value" in str(w.message) for w in caught)
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError, match="invalid"):
        plan.run(keep=True)


def test_a_replayed_product_of_operands_that_overlap_its_destination():
    rng = np.random.default_rng(2)
    a = rng.random((4, 4))
    ref = a.copy()
    A = pyet.asarray(a)
    plan = pyet.EvalPlan()
    plan.assign(a, pyet.dot(A, A.T) * 0.5)   # reads what it writes: copied first
    plan.assign(a, 0.25 * pyet.dot(A[::-1], A) + A, op="=")
    for _ in range(3):
        plan.run(keep=True)
        ref[...] = (ref @ ref.T) * 0.5
        ref[...] = 0.25 * (ref[::-1] @ ref) + ref
        np.testing.assert_allclose(a, ref, rtol=1e-12)


def _train(model, replay, steps=4):
    import pyet.nn as nn

    rng = np.random.default_rng(0)
    x = rng.random((8, 1, 8, 8)).astype(np.float32) if model == "cnn" else \
        rng.random((8, 64)).astype(np.float32)
    y = rng.integers(0, 10, 8)
    if model == "cnn":
        from pyet.nn.demo import make_cnn
        net = make_cnn().init(seed=0)
    else:
        net = nn.MLP([64, 16, 10], activation="tanh", policy=nn.Policy(update=True)).init(seed=0)
    opt = nn.Adam(net.parameters(), lr=0.01)
    loss = nn.CrossEntropy()
    losses = []
    for _ in range(steps):
        if not replay:  # forget the recording: every step a fresh plan run
            for step in opt._train_steps.values():
                for built in step._built.values():
                    built[1]._schedule = None
        losses.append(nn.train_step(net, loss, {"input": x, "target": y}, opt))
    return losses, {k: v.numpy().copy() for k, v in net.parameters().items()}


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_train_step_replays_equal_fresh_runs(model):
    replayed, p1 = _train(model, True)
    fresh, p2 = _train(model, False)
    assert replayed == fresh
    for k in p1:
        np.testing.assert_array_equal(p1[k], p2[k])


def test_kept_plan_results_held_by_the_caller_are_never_written_again():
    x = pyet.asarray(np.arange(12.0).reshape(3, 4))
    w = pyet.asarray(np.ones((4, 2)))
    plan = pyet.EvalPlan()
    h = plan.register(pyet.sum(pyet.tanh(x @ w) * 2.0, axis=0))
    g = plan.register(x @ w + 1.0)
    held = []
    for step in range(6):
        x.numpy()[...] = step
        plan.run(keep=True)
        want = np.sum(np.tanh(x.numpy() @ w.numpy()) * 2.0, axis=0)
        np.testing.assert_allclose(h.value.numpy(), want, rtol=1e-12)
        np.testing.assert_array_equal(g.value.numpy(), x.numpy() @ w.numpy() + 1.0)
        if step % 2:
            held.append((step, h.value, g.value.numpy()[0]))  # a Tensor; a view of another
    for step, hv, gv in held:  # every held result kept its step's values
        np.testing.assert_allclose(hv.numpy(), np.tanh(np.full(2, 4.0 * step)) * 6.0,
                                   rtol=1e-12)
        np.testing.assert_array_equal(gv, np.full(2, 4.0 * step + 1.0))


def test_kept_plan_reuses_result_memory_nobody_holds():
    x = pyet.asarray(np.arange(6.0))
    plan = pyet.EvalPlan()
    h = plan.register(pyet.exp(x) * 2.0)
    plan.run(keep=True)
    plan.run(keep=True)
    first = h.value.numpy().__array_interface__["data"][0]
    plan.run(keep=True)  # h.value was the only reference: the same memory again
    assert h.value.numpy().__array_interface__["data"][0] == first
    kept = h.value
    plan.run(keep=True)  # held: new memory, the old values stay
    assert h.value.numpy().__array_interface__["data"][0] != first
    assert h.value is not kept
    np.testing.assert_allclose(kept.numpy(), np.exp(np.arange(6.0)) * 2.0, rtol=1e-15)
