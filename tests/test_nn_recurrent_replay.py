"""Per-call evaluation without per-call planning: a GRU Recurrent builds its
trees once per signature (the call's trees are nodes over its own leaves), and
EvalPlan / evaluate_all replay a schedule recorded for a structure met before.
Every result must equal a fresh evaluation bit for bit, for new data on each
call, without overwriting results still held."""

import numpy as np
import pytest

import pyet
import pyet.nn as nn
from pyet._core import core
from pyet.nn._store import checkpoint, store

T, N, IN, H = 4, 3, 5, 6


def make(seed=0, **policy):
    policy = {"update": True, "feedback_output": True, **policy}
    return nn.Recurrent(nn.GRUStep(IN, H), policy=nn.Policy(**policy)).init(seed=seed)


def data(seed, dtype=np.float32, steps=T, rows=N):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((steps, rows, IN)).astype(dtype),
            rng.standard_normal((rows, H)).astype(dtype),
            rng.standard_normal((steps, rows, H)).astype(dtype),
            rng.standard_normal((rows, H)).astype(dtype))


def step(rec, x, h0, g, gh):
    """One call as a PyTorch user makes it: forward, backward, collect, evaluate."""
    out = rec.forward(input=x, hidden=h0)
    gr = rec.backward(output=g, hidden=gh)
    grads = rec.grad_collect()
    return pyet.evaluate_all([*out.values(), *gr.values(), *grads.values()])


def fresh(rec, x, h0, g, gh):
    """The same call with trees built from scratch and evaluated by a new plan."""
    pyet.clear_plan_cache()
    rec._template_call = lambda x, h: None  # (an instance attribute: this layer only)
    try:
        return [r.numpy().copy() for r in step(rec, x, h0, g, gh)]
    finally:
        del rec._template_call
        pyet.clear_plan_cache()


def assert_bits(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        a = a.numpy() if isinstance(a, pyet.Tensor) else a
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


@pytest.fixture(autouse=True)
def _clean():
    pyet.clear_plan_cache()
    yield
    pyet.clear_plan_cache()


def test_repeated_calls_with_new_data_equal_fresh_evaluation_and_keep_held_results():
    rec = make()
    held, wanted = [], []
    for seed in range(6):
        args = data(seed)
        got = step(rec, *args)
        held.append(got)  # every result stays referenced: no run may overwrite it
        wanted.append(fresh(rec, *args))
        assert_bits(got, wanted[-1])
    for got, want in zip(held, wanted, strict=True):
        assert_bits(got, want)
    rec.neutral_invariant()


def test_calls_replay_a_schedule_and_build_the_template_once():
    core.forget_structure_keys()  # (no drop of the key table midway: one structure)
    rec = make()
    for seed in range(4):
        step(rec, *data(seed))
    assert len(rec._templates) == 1
    from pyet import _evalplan

    kept = [e for e in _evalplan.SCHEDULES.entries.values() if isinstance(e, list)]
    assert len(kept) == 1 and len(kept[0][0]) > 10  # one structure, its schedule kept
    pyet.stats(reset=True)
    step(rec, *data(9))
    assert pyet.stats()["scratch_bytes"] == 0  # a replay: the recorded scratch again


def test_same_arrays_written_in_place_between_calls():
    # a training loop copying each batch into the same buffers
    rec = make()
    bufs = [np.empty_like(a) for a in data(0)]
    for seed in range(4):
        args = data(seed)
        for b, a in zip(bufs, args, strict=True):
            b[...] = a
        got = [r.numpy().copy() for r in step(rec, *bufs)]
        assert_bits(got, fresh(rec, *args))


@pytest.mark.parametrize("change", ["steps", "rows", "float64", "strided", "policy"])
def test_changed_signature_refuses_reuse(change):
    rec = make()
    for seed in range(3):
        step(rec, *data(seed))
    if change == "steps":
        args = data(7, steps=T + 2)
    elif change == "rows":
        args = data(7, rows=N + 1)
    elif change == "float64":
        args = data(7, np.float64)
    elif change == "strided":  # the same shapes, other strides
        x, h0, g, gh = data(7)
        args = (np.asfortranarray(x), h0[:, ::1], g[::-1], gh.T.copy().T)
    else:
        rec = make(feedback_output=False)
        for seed in range(3):
            step(rec, *data(seed))
        args = data(7)
    for _ in range(3):  # recorded on the second call, replayed after
        got = [r.numpy().copy() for r in step(rec, *args)]
        assert_bits(got, fresh(rec, *args))


def test_gradients_the_template_does_not_take_give_the_plain_trees():
    rec = make()
    x, h0, g, gh = data(3)
    for g_in in (g.astype(np.float64), pyet.asarray(g) * 1.0, g):
        out = rec.forward(input=x, hidden=h0)
        gr = rec.backward(output=g_in, hidden=gh)
        got = pyet.evaluate_all([out["output"], gr["input"], *rec.grad_collect().values()])
        rec._template_call = lambda x, h: None
        out = rec.forward(input=x, hidden=h0)
        gr = rec.backward(output=g_in, hidden=gh)
        want = pyet.evaluate_all([out["output"], gr["input"], *rec.grad_collect().values()])
        del rec._template_call
        assert_bits(got, [w.numpy() for w in want])


def test_interleaved_calls_evaluated_together():
    # two forwards, backwards in reverse order, everything in one plan: each
    # call's trees read its own leaves (its own checkpoints)
    rec = make()
    a, b = data(1), data(2)
    for _ in range(3):
        o1 = rec.forward(input=a[0], hidden=a[1])
        o2 = rec.forward(input=b[0], hidden=b[1])
        g2 = rec.backward(output=b[2], hidden=b[3])
        g1 = rec.backward(output=a[2], hidden=a[3])
        got = pyet.evaluate_all([o1["output"], o2["output"], g1["input"], g2["input"],
                                 *rec.grad_collect().values()])
        rec.neutral_invariant()
    want_a, want_b = fresh(rec, *a), fresh(rec, *b)
    assert_bits(got[:4], [want_a[0], want_b[0], want_a[2], want_b[2]])
    for k in range(4):  # both backwards' parameter gradients summed
        np.testing.assert_allclose(got[4 + k].numpy(), want_a[4 + k] + want_b[4 + k],
                                   rtol=1e-5, atol=1e-5)


def test_forward_only_and_evaluate():
    rec = make(update=False, feedback_output=False)
    for seed in range(3):
        x, h0, _, _ = data(seed)
        got = rec.evaluate(input=x, hidden=h0)
        rec._template_call = lambda x, h: None
        pyet.clear_plan_cache()
        want = rec.evaluate(input=x, hidden=h0)
        del rec._template_call
        assert_bits([got["output"], got["hidden"]], [want["output"].numpy(),
                                                     want["hidden"].numpy()])
        # each tree alone, and inside a larger expression
        out = rec.forward(input=x, hidden=h0)
        np.testing.assert_array_equal(pyet.evaluate(out["hidden"]).numpy(),
                                      want["hidden"].numpy())
        np.testing.assert_array_equal(pyet.evaluate(2 * out["output"] + 1).numpy(),
                                      2 * want["output"].numpy() + 1)
        rec.clear()


def test_parameters_updated_in_place_are_read_each_call():
    rec = make()
    args = data(4)
    first = [r.numpy().copy() for r in step(rec, *args)]
    for _ in range(2):
        step(rec, *args)
    for t in rec.parameters().values():
        t.numpy()[...] *= 0.5
    got = [r.numpy().copy() for r in step(rec, *args)]
    assert not np.array_equal(got[0], first[0])
    assert_bits(got, fresh(rec, *args))


def test_gru_calls_match_torch():
    torch = pytest.importorskip("torch")
    rec = make(seed=5)
    p = {k[len("step."):]: t.numpy() for k, t in rec.parameters().items()}
    tg = torch.nn.GRU(IN, H)
    with torch.no_grad():
        tg.weight_ih_l0.copy_(torch.tensor(p["W_ih"].T))
        tg.weight_hh_l0.copy_(torch.tensor(p["W_hh"].T))
        tg.bias_ih_l0.copy_(torch.tensor(p["b_ih"]))
        tg.bias_hh_l0.copy_(torch.tensor(p["b_hh"]))
    for seed in range(5):
        x, h0, g, gh = data(seed)
        y, hn, gx, gh0, dW_ih, dW_hh, db_ih, db_hh = [r.numpy() for r in step(rec, x, h0, g, gh)]
        tg.zero_grad()
        tx = torch.tensor(x, requires_grad=True)
        th = torch.tensor(h0[None], requires_grad=True)
        ty, thn = tg(tx, th)
        (ty * torch.tensor(g)).sum().add((thn[0] * torch.tensor(gh)).sum()).backward()
        tol = {"rtol": 1e-4, "atol": 1e-5}
        np.testing.assert_allclose(y, ty.detach().numpy(), **tol)
        np.testing.assert_allclose(hn, thn[0].detach().numpy(), **tol)
        np.testing.assert_allclose(gx, tx.grad.numpy(), **tol)
        np.testing.assert_allclose(gh0, th.grad[0].numpy(), **tol)
        np.testing.assert_allclose(dW_ih, tg.weight_ih_l0.grad.numpy().T, **tol)
        np.testing.assert_allclose(dW_hh, tg.weight_hh_l0.grad.numpy().T, **tol)
        np.testing.assert_allclose(db_ih, tg.bias_ih_l0.grad.numpy(), **tol)
        np.testing.assert_allclose(db_hh, tg.bias_hh_l0.grad.numpy(), **tol)


# ------------------------------------------------ plans by structure

def test_fresh_trees_of_one_structure_replay_with_their_own_values():
    rng = np.random.default_rng(0)
    w = pyet.asarray(rng.random((5, 3)))
    held = []
    for _ in range(5):
        xa = rng.random((4, 5))
        x = pyet.asarray(xa)
        r = pyet.evaluate_all([pyet.tanh(pyet.dot(x, w)) + 1, pyet.sum(x * 2, axis=0)])
        held.append((xa, r))
    for xa, (a, b) in held:
        np.testing.assert_allclose(a.numpy(), np.tanh(xa @ w.numpy()) + 1, rtol=1e-12)
        np.testing.assert_allclose(b.numpy(), (xa * 2).sum(0), rtol=1e-12)


def test_plans_with_destinations_replay_into_the_given_memory():
    rng = np.random.default_rng(1)
    for _ in range(4):
        xa, acc = rng.random((3, 4)), rng.random((3, 4))
        want = acc + np.exp(xa)
        dst = np.empty((3, 4))
        plan = pyet.EvalPlan()
        plan.assign(dst, pyet.asarray(xa) * 2)
        plan.assign(acc, pyet.exp(pyet.asarray(xa)), op="+=")
        h = plan.register(pyet.asarray(acc) - 1)
        plan.run()
        np.testing.assert_array_equal(dst, xa * 2)
        np.testing.assert_allclose(acc, want, rtol=1e-15)
        np.testing.assert_allclose(h.value.numpy(), want - 1, rtol=1e-15)


def test_checkpoints_of_different_expressions_are_different_structures():
    # a checkpoint holds its expression outside its children: the structure
    # key walks it, so these plans do not replay each other's schedules
    x = pyet.asarray(np.arange(6.0).reshape(2, 3))
    for _ in range(3):
        for f, ref in ((lambda e: e + 1, lambda a: a + 1), (lambda e: e * 3, lambda a: a * 3)):
            (r,) = pyet.evaluate_all([checkpoint(f(x)) * 2])
            np.testing.assert_array_equal(r.numpy(), ref(x.numpy()) * 2)
    k1 = core.structure_key([checkpoint(x + 1)], [], None)[0]
    k2 = core.structure_key([checkpoint(x * 1)], [], None)[0]
    assert k1 != k2


def test_overlapping_leaves_and_destinations_are_part_of_the_structure():
    for _ in range(3):
        a = np.arange(8.0)
        b = np.arange(8.0)
        (r1,) = pyet.evaluate_all([pyet.asarray(a[1:]) + pyet.asarray(a[:-1])])
        (r2,) = pyet.evaluate_all([pyet.asarray(b[1:]) + pyet.asarray(a[:-1])])
        np.testing.assert_array_equal(r1.numpy(), a[1:] + a[:-1])
        np.testing.assert_array_equal(r2.numpy(), b[1:] + a[:-1])
        # in place: the destination overlaps what the statement reads
        plan = pyet.EvalPlan()
        plan.assign(a[1:], pyet.asarray(a[:-1]) * 2 + store(pyet.asarray(a[1:]) * 1))
        want = np.arange(8.0)
        want[1:] = want[:-1] * 2 + want[1:]
        plan.run()
        np.testing.assert_array_equal(a, want)


def test_replays_follow_the_thread_split(threaded):
    # a threaded sum's accumulators follow the split: a schedule replayed after
    # the minimum of work per thread changed splits as a fresh run does
    from pyet._kernels import parallel

    rng = np.random.default_rng(1)  # values whose sum the two splits round differently
    a = rng.standard_normal(5000) * 10.0 ** rng.integers(-8, 8, 5000)
    pyet.clear_plan_cache()
    got = {}
    for m in (64, 64, 64, 4096, 4096, 4096, 64):
        parallel.set_min_per_thread(m)
        x = pyet.asarray(a)
        (r,) = pyet.evaluate_all([pyet.sum(x * 1.5)])
        want = pyet.evaluate(pyet.sum(pyet.asarray(a) * 1.5)).numpy()
        assert r.numpy().tobytes() == want.tobytes()
        got.setdefault(m, set()).add(r.numpy().tobytes())
    assert all(len(v) == 1 for v in got.values()) and got[64] != got[4096]
