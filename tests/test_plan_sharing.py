"""Within a plan run, a costly elementwise subtree read more than once (one node
reached along several paths, in one tree or several) is computed once: in the
registers of the one pass that reads it, or into scratch where no one pass
does; cheap ones are recomputed where read.  NumPy is the oracle."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def test_value_and_gradient_compute_the_forward_sigmoid_once():
    rng = np.random.default_rng(0)
    x, w, b, t = rng.random((16, 8)), rng.random((8, 4)), rng.random(4), rng.random((16, 4))
    X, W, B, T = (pyet.asarray(a) for a in (x, w, b, t))
    y = pyet.sum(pyet.sigmoid(X @ W + B) * T)
    pyet.stats(reset=True)
    value, (gw, gb) = pyet.value_and_grad(y, [W, B])
    counts = pyet.stats(reset=True)
    # one gemm forward, one for dW; s = sigmoid(z) and dz = t*s*(1-s), each read
    # twice, once each (shared nodes); sum and sum(axis 0)
    assert counts["gemm_calls"] == 2
    assert counts["special_nodes"] == 2 and counts["reductions"] == 2
    s = _sigmoid(x @ w + b)
    dz = t * s * (1 - s)
    np.testing.assert_allclose(value.numpy(), np.sum(s * t), rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), x.T @ dz, rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), dz.sum(0), rtol=1e-12)
    plan = pyet.EvalPlan()
    plan.register(y)
    plan.register(pyet.grad(y, W))
    assert "scratch: shared()" in pyet.explain(plan)


def test_cheap_subtrees_are_recomputed_not_kept():
    a, b = np.arange(6.0), np.arange(6.0) + 1
    A, B = pyet.asarray(a), pyet.asarray(b)
    ab = A * B + 1
    out1, out2 = np.empty(6), np.empty((2, 6))
    pyet.stats(reset=True)
    plan = pyet.EvalPlan()
    plan.assign(out1, ab * 2)
    plan.assign(out2, ab - ab[None, :])
    plan.run()
    assert pyet.stats(reset=True)["special_nodes"] == 0
    np.testing.assert_array_equal(out1, (a * b + 1) * 2)
    np.testing.assert_array_equal(out2, np.zeros((2, 6)))


def test_a_shared_value_is_computed_again_after_a_statement_writes_what_it_read():
    a = np.linspace(0.1, 1.0, 5)
    A = pyet.asarray(a)
    e = pyet.exp(A)
    o1, o2 = np.empty(5), np.empty(5)
    plan = pyet.EvalPlan()
    plan.assign(o1, e + 1)
    plan.assign(a, A * 2)            # writes what exp(A) read
    plan.assign(o2, e * 3)
    ref = np.linspace(0.1, 1.0, 5)
    for _ in range(2):
        plan.run(keep=True)
        np.testing.assert_allclose(o1, np.exp(ref) + 1, rtol=1e-15)
        ref = ref * 2
        np.testing.assert_allclose(o2, np.exp(ref) * 3, rtol=1e-15)
        np.testing.assert_array_equal(a, ref)


# costly subtrees built once and read by several statements, some of which
# write their operands
_SHARED = [
    lambda lib, x, y: lib.tanh(x * y),
    lambda lib, x, y: lib.exp(x) / (y + 1),
    lambda lib, x, y: lib.sqrt(x + y) * 2,
]


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 2),
                                st.sampled_from(["=", "+=", "*="]), st.booleans()),
                      min_size=1, max_size=8),
       keep=st.booleans())
def test_random_plans_sharing_subtrees_equal_running_one_by_one(steps, keep):
    rng = np.random.default_rng(7)
    ours = [rng.uniform(0.5, 1.0, (3, 4)) for _ in range(3)]
    ref = [a.copy() for a in ours]
    ts = [pyet.asarray(a) for a in ours]
    shared = [f(pyet, ts[k], ts[(k + 1) % 3]) for k, f in enumerate(_SHARED)]
    plan = pyet.EvalPlan()
    for dst, k, j, op, twice in steps:
        e = shared[k] + ts[j] * shared[k] if twice else shared[k] - ts[j]
        plan.assign(ours[dst], e * 0.5, op=op)
    for _ in range(2 if keep else 1):
        plan.run(keep=keep)
        # the same statements one assignment at a time: the same bits (NumPy's own
        # transcendental loops differ by an ulp, which exp amplifies over the steps)
        for dst, k, j, op, twice in steps:
            rt = [pyet.asarray(a) for a in ref]
            s = _SHARED[k](pyet, rt[k], rt[(k + 1) % 3])
            value = (s + rt[j] * s if twice else s - rt[j]) * 0.5
            cur = rt[dst]
            cur[...] = {"=": value, "+=": cur + value, "*=": cur * value}[op]
        for a, r in zip(ours, ref, strict=True):
            np.testing.assert_array_equal(a, r)


# ------------------------------------- values shared within a multi-output pass

def _one_pass_vs_one_by_one(exprs):
    got = [np.asarray(v) for v in pyet.evaluate_all(exprs)]
    for g, e in zip(got, exprs, strict=True):
        np.testing.assert_allclose(g, np.asarray(pyet.evaluate(e)), rtol=1e-13, atol=0)


def test_a_shared_value_read_again_after_a_nested_last_read():
    # exp(t0) built twice has one signature: its register was freed when the
    # nested read (inside sin(exp(...))) was emitted, while the outer add still
    # had to read it, and the next instruction overwrote it
    t0 = pyet.asarray(np.array([[0.1, 0.2, 0.3]]))
    t1 = pyet.asarray(np.array([[1.0, 2.0, 3.0]]))
    _one_pass_vs_one_by_one([pyet.exp(t0) + pyet.sin(pyet.exp(pyet.exp(t0))), t1 * 2])
    _one_pass_vs_one_by_one([pyet.exp(t0) + pyet.sin(pyet.sqrt(pyet.exp(t0) + 1)), t1 * 2])


def test_a_fused_rule_over_a_shared_product_operand():
    # x*E + where(m, x*E', 0): the muladd read E's register after where had
    # reused it (a gradient of maximum through a product: zeros came out)
    rng = np.random.default_rng(3)
    t0, t1 = (pyet.asarray(rng.standard_normal((1, 2))) for _ in range(2))
    W = pyet.asarray(rng.standard_normal((2, 2)))
    mask = pyet.asarray(np.array([[False, True]]))
    d = pyet.dot(t0, W)
    e = d * pyet.exp(t0) + pyet.where(mask, d * pyet.exp(t0), 0.0)
    _one_pass_vs_one_by_one([e, t1 * 2])
    _one_pass_vs_one_by_one([t1 * 2, e])


# ------------------- a subtree that one pass reads twice stays in its registers

def _one_by_one(dsts, exprs):
    for d, e in zip(dsts, exprs, strict=True):
        pyet.asarray(d)[...] = e


def test_a_subtree_read_twice_by_one_pass_is_no_scratch():
    # t read twice in one statement, or by two statements of one shape that
    # run as one pass: the pass computes it once a block (no full-size scratch)
    from pyet._core import core
    rng = np.random.default_rng(11)
    n = 5000
    x, y = rng.uniform(-2, 2, n), rng.uniform(-2, 2, n)
    X, Y = pyet.asarray(x), pyet.asarray(y)
    t = pyet.tanh(X)
    s = pyet.sigmoid(Y)
    for stmts in ([1 - t * t], [1 - t * t, t * Y], [s * (1 - s), t * s, t - s]):
        outs = [np.full(n, np.nan) for _ in stmts]
        plan = pyet.EvalPlan()
        for o, e in zip(outs, stmts, strict=True):
            plan.assign(o, e)
        text = pyet.explain(plan)
        assert "shared()" not in text, text
        assert ("computed once a block" in text) == (len(stmts) == 1)
        for _ in range(3):  # the recorded run, then replays over memory changed in place
            before = core.shared_count()
            pyet.stats(reset=True)
            plan.run(keep=True)
            assert pyet.stats(reset=True)["special_nodes"] == 0
            if len(stmts) == 1 and _ == 0:
                assert core.shared_count() > before
            want = [np.full(n, np.nan) for _ in stmts]
            _one_by_one(want, stmts)
            for o, w in zip(outs, want, strict=True):
                assert o.tobytes() == w.tobytes()
            x *= 0.9  # the leaves change; the kept plan reads them as they are
            y += 0.1


def test_scratch_where_no_one_pass_shares_the_subtree():
    rng = np.random.default_rng(12)
    x, w = rng.uniform(-1, 1, (6, 5)), rng.uniform(-1, 1, (5, 5))
    X, W = pyet.asarray(x), pyet.asarray(w)
    t = pyet.tanh(X)
    cases = [
        # destinations of two shapes: two passes
        ([np.empty((6, 5)), np.empty((2, 6, 5))], [1 - t, t * 2]),
        # a product reads it (a special node's operand)
        ([np.empty((6, 5)), np.empty((6, 5))], [1 - t, t @ W]),
        # a user function's statement between its readers runs alone
        ([np.empty((6, 5)), np.empty((6, 5)), np.empty((6, 5))],
         [1 - t, pyet.F(lambda v: v * 3, X), t * 2]),
        # so does an integer power's (it may raise midway)
        ([np.empty((6, 5)), np.empty((6, 5), np.int64), np.empty((6, 5))],
         [1 - t, pyet.asarray(np.arange(30).reshape(6, 5)) ** pyet.asarray(np.ones((6, 5), int)),
          t * 2]),
    ]
    for dsts, exprs in cases:
        plan = pyet.EvalPlan()
        for d, e in zip(dsts, exprs, strict=True):
            plan.assign(d, e)
        assert "scratch: shared()" in pyet.explain(plan)
        plan.run()
        want = [np.empty_like(d) for d in dsts]
        _one_by_one(want, exprs)
        for d, wnt in zip(dsts, want, strict=True):
            np.testing.assert_allclose(d, wnt, rtol=1e-14)
    # 0-d statements each run alone (never a multi-output pass): scratch
    t0 = pyet.tanh(pyet.asarray(np.array(0.3)))
    plan = pyet.EvalPlan()
    plan.assign(np.empty(()), 1 - t0 * t0)
    plan.assign(np.empty(()), t0 * 2)
    assert "scratch: shared()" in pyet.explain(plan)


def test_a_statement_writing_the_subtrees_leaf_between_its_readers():
    # one by one, the second reader sees the new x: so does the plan (its
    # bits: the same statements assigned one at a time over a copy)
    rng = np.random.default_rng(13)
    for keep in (False, True):
        x = rng.uniform(-1, 1, 3000)
        ref = x.copy()
        X, R = pyet.asarray(x), pyet.asarray(ref)
        t, tr = pyet.tanh(X), pyet.tanh(R)
        o1, o2, r1, r2 = (np.empty(3000) for _ in range(4))
        plan = pyet.EvalPlan()
        plan.assign(o1, t * t + 1)
        plan.assign(x, X * 0.5)
        plan.assign(o2, 1 - t * t)
        for _ in range(2 if keep else 1):
            plan.run(keep=keep)
            _one_by_one([r1, ref, r2], [tr * tr + 1, R * 0.5, 1 - tr * tr])
            for got, want in ((o1, r1), (x, ref), (o2, r2)):
                assert got.tobytes() == want.tobytes()
