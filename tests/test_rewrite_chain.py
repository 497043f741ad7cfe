"""Build-time rewrites (rewrite.SPECIAL_FOLDS, FAST_MATH_FOLDS), pyet.fast_math,
the fused softmax cross-entropy gradient and softmax along every axis."""

import threading

import numpy as np
import pytest

import pyet
from pyet._core import core
from pyet._nodes.softmax import softmax_xent_grad

RNG = np.random.default_rng(9)


def ev(e):
    return np.asarray(pyet.evaluate(e))


def np_log_softmax(a, axis):
    m = np.max(a, axis=axis, keepdims=True)
    with np.errstate(all="ignore"):
        d = a - m
        return d - np.log(np.sum(np.exp(d), axis=axis, keepdims=True))


def np_softmax(a, axis):
    with np.errstate(all="ignore"):
        e = np.exp(a - np.max(a, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)


EDGE_ROWS = np.array([
    [0.0, -0.0, 1.0, -1.0, 2.5],
    [np.nan, 0.0, 1.0, 2.0, 3.0],
    [np.inf, 0.0, 1.0, 2.0, 3.0],
    [-np.inf, 0.0, 1.0, 2.0, 3.0],
    [-np.inf, -np.inf, -np.inf, -np.inf, -np.inf],
    [1e4, -1e4, 0.0, 5e3, -5e3],        # log(softmax) underflows to -inf in NumPy
    [1e300, -1e300, 0.0, 1.0, 2.0],
    [-0.0, -0.0, -0.0, -0.0, -0.0],
])


# ------------------------------------------------------------ log(softmax)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_log_softmax_rewrite_applies_and_equals_log_softmax(dtype, axis):
    a = RNG.standard_normal((6, 7)).astype(dtype) * 5
    x = pyet.asarray(a)
    core.rewrite_counts(reset=True)
    e = pyet.log(pyet.softmax(x, axis))
    assert repr(e).startswith("log_softmax(")
    assert core.rewrite_counts() == {"log(softmax(x)) -> log_softmax(x)": 1}
    assert core.rewrite_notes(e) == [
        "rewrite applied when built: log(softmax(x)) -> log_softmax(x)"]
    np.testing.assert_array_equal(ev(e), ev(pyet.log_softmax(x, axis)))
    # the unrewritten tree's value (NumPy's log of its softmax), within rounding
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(ev(e), np.log(np_softmax(a, axis)), rtol=tol, atol=tol)
    np.testing.assert_allclose(ev(e), np_log_softmax(a, axis), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log_softmax_rewrite_on_edge_inputs(dtype):
    with np.errstate(over="ignore"):
        a = EDGE_ROWS.astype(dtype)  # (1e300 is inf in float32)
    x = pyet.asarray(a)
    with np.errstate(all="ignore"):
        got = ev(pyet.log(pyet.softmax(x)))
        unrewritten = np.log(np_softmax(a, 1))
    np.testing.assert_array_equal(got, ev(pyet.log_softmax(x)))
    want = np_log_softmax(a, 1)  # NumPy's stable reference
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    # where the unrewritten tree is finite it agrees; where its softmax
    # underflowed to 0 (log gives -inf) the rewrite is finite and exact
    finite = np.isfinite(unrewritten)
    np.testing.assert_allclose(got[finite], unrewritten[finite], rtol=1e-5, atol=1e-6)
    underflow = np.isneginf(unrewritten) & np.isfinite(want)
    assert underflow.any() and np.isfinite(got[underflow]).all()
    # -0.0 rows: every entry log(1/5)
    np.testing.assert_allclose(got[-1], np.log(np.full(5, 0.2, dtype)), rtol=1e-6)


def test_log_softmax_rewrite_only_for_softmax():
    x = pyet.asarray(RNG.standard_normal((3, 4)))
    assert repr(pyet.log(pyet.log_softmax(x))).startswith("log(")
    assert repr(pyet.exp(pyet.softmax(x))).startswith("exp(")
    assert repr(pyet.log(pyet.sum(x, 1))).startswith("log(")
    # integers: softmax in float64, the rewrite keeps that
    i = pyet.asarray(np.arange(12).reshape(3, 4))
    e = pyet.log(pyet.softmax(i))
    assert repr(e).startswith("log_softmax(") and e.dtype == np.float64
    np.testing.assert_allclose(ev(e), np_log_softmax(np.arange(12.0).reshape(3, 4), 1))


def test_exact_folds_already_there():
    # -(-x), x*1, x/1 (rewrite.NEUTRAL_FOLDS, INVOLUTIONS) and x**2, x**0.5
    # (NumPy's own fast paths) fold when built; their values are tested
    # against NumPy on edge inputs in test_rewrite.py and test_edge.py
    x = pyet.asarray(np.array([-np.inf, -0.0, 0.0, np.nan, 2.0]))
    assert pyet.negative(pyet.negative(x)) is x and x * 1 is x and x / 1 is x
    assert repr(x ** 2).startswith("square(") and repr(x ** 0.5).startswith("sqrt(")


# ------------------------------------------------------------ fast_math

FINITE = RNG.uniform(0.5, 3.0, (4, 5))
SPECIALS = np.array([np.inf, -np.inf, np.nan, 1000.0, -2.0])


def _trees(x):
    return {
        "x*0 -> 0": (x * 0, 0 * x),
        "x-x -> 0": (x - x,),
        "log(exp(x)) -> x": (pyet.log(pyet.exp(x)),),
        "exp(log(x)) -> x": (pyet.exp(pyet.log(x)),),
    }


def test_fast_math_rules_do_not_apply_outside_the_block():
    x = pyet.asarray(SPECIALS)
    core.rewrite_counts(reset=True)
    for trees in _trees(x).values():
        for e in trees:
            assert core.rewrite_notes(e) == []
            assert e is not x and not isinstance(e, pyet.Tensor)
    assert core.rewrite_counts() == {}
    with np.errstate(all="ignore"):
        a = SPECIALS
        np.testing.assert_array_equal(ev(x * 0), a * 0)          # inf*0, nan*0: nan
        np.testing.assert_array_equal(ev(x - x), a - a)
        np.testing.assert_array_equal(ev(pyet.log(pyet.exp(x))), np.log(np.exp(a)))
        np.testing.assert_array_equal(ev(pyet.exp(pyet.log(x))), np.exp(np.log(a)))


def test_fast_math_rules_apply_inside_the_block():
    a = FINITE
    x = pyet.asarray(a)
    with pyet.fast_math() as fm:
        trees = _trees(x)
    for rule, es in trees.items():
        for e in es:
            if rule.endswith("-> x"):
                assert e is x
            else:
                assert isinstance(e, pyet.Tensor) and not any(np.asarray(e).strides)
                assert core.rewrite_notes(e) == [f"rewrite applied when built: {rule}"]
    assert fm.applied == ["x*0 -> 0", "x*0 -> 0", "x-x -> 0", "log(exp(x)) -> x",
                          "exp(log(x)) -> x"]
    # on finite inputs: the unrewritten tree's value
    np.testing.assert_array_equal(ev(trees["x*0 -> 0"][0]), a * 0)
    np.testing.assert_array_equal(ev(trees["x-x -> 0"][0]), a - a)
    np.testing.assert_allclose(ev(trees["log(exp(x)) -> x"][0]), np.log(np.exp(a)), rtol=1e-15)
    np.testing.assert_allclose(ev(trees["exp(log(x)) -> x"][0]), np.exp(np.log(a)), rtol=1e-15)
    # a tree built inside, evaluated outside, stays rewritten; built after: not
    e = trees["x*0 -> 0"][0]
    assert np.asarray(pyet.evaluate(e)).shape == a.shape and (x * 0)._op != e._op


def test_fast_math_x_minus_x_by_structure():
    a = RNG.standard_normal((3, 4))
    with pyet.fast_math() as fm:
        same = pyet.asarray(a) * 2 - pyet.asarray(a) * 2     # equal structure, same memory
        other = pyet.asarray(a) - pyet.asarray(a.copy())     # different memory: not folded
        shifted = pyet.asarray(a)[1:] - pyet.asarray(a)[:-1]
    assert fm.applied == ["x-x -> 0"]
    np.testing.assert_array_equal(ev(same), np.zeros_like(a))
    np.testing.assert_array_equal(ev(other), np.zeros_like(a))
    np.testing.assert_array_equal(ev(shifted), a[1:] - a[:-1])


def test_fast_math_keeps_dtype_and_shape():
    i = pyet.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    f32 = pyet.asarray(np.ones(3, np.float32))
    with pyet.fast_math() as fm:
        z = i * 0.0                       # float64 zeros of (2, 3)
        b = f32 * pyet.Zero((2, 3), np.float32)   # broadcast up: a (2, 3) constant
        le = pyet.log(pyet.exp(i))        # float64, not i's int32: not folded
    assert fm.applied == ["x*0 -> 0", "x*0 -> 0"]
    assert z.dtype == np.float64 and z.shape == (2, 3)
    np.testing.assert_array_equal(ev(z), np.zeros((2, 3)))
    assert b.dtype == np.float32 and b.shape == (2, 3)
    assert le.dtype == np.float64 and repr(le).startswith("log(")


def test_fast_math_nested_and_exception():
    x = pyet.asarray(FINITE)
    with pyet.fast_math() as outer:
        with pyet.fast_math() as inner:
            x * 0
        x - x
    assert inner.applied == ["x*0 -> 0"] and outer.applied == ["x-x -> 0"]
    with pytest.raises(RuntimeError, match="boom"), pyet.fast_math():
        raise RuntimeError("boom")
    assert core.rewrite_notes(x * 0) == []


def test_fast_math_is_per_thread():
    x = pyet.asarray(FINITE)
    inside, done = threading.Event(), threading.Event()
    seen = {}

    def other():
        inside.wait()
        seen["e"] = x * 0   # built while the main thread's block is open
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with pyet.fast_math() as fm:
        inside.set()
        done.wait()
    t.join()
    assert fm.applied == [] and core.rewrite_notes(seen["e"]) == []
    assert repr(seen["e"]).startswith("multiply(")


def test_fast_math_in_a_plan():
    a, b = FINITE, RNG.uniform(0.5, 2, (4, 5))
    x, y = pyet.asarray(a), pyet.asarray(b)
    with pyet.fast_math() as fm:
        e = pyet.log(pyet.exp(x)) * y + x * 0
    assert fm.applied == ["log(exp(x)) -> x", "x*0 -> 0"]
    out = pyet.evaluate_all([e])[0]
    np.testing.assert_allclose(np.asarray(out), a * b, rtol=1e-15)


# ------------------------------------------------------ softmax on every axis


def _layouts(shape, dtype):
    base = RNG.standard_normal(shape).astype(dtype) * 3
    yield "C", base
    yield "F", np.asfortranarray(base)
    yield "reversed", base[(slice(None, None, -1),) * len(shape)]
    big = RNG.standard_normal(tuple(2 * n for n in shape)).astype(dtype)
    yield "strided", big[(slice(None, None, 2),) * len(shape)]
    if len(shape) >= 2:
        yield "transposed", np.ascontiguousarray(base.T).T


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7,), (5, 9), (4, 3, 40), (3, 2, 5, 300), (2, 1, 3)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_every_axis_and_layout(dtype, shape, log):
    fn, ref = (pyet.log_softmax, np_log_softmax) if log else (pyet.softmax, np_softmax)
    tol = 2e-6 if dtype == np.float32 else 1e-13
    for name, a in _layouts(shape, dtype):
        x = pyet.asarray(a)
        for axis in range(-len(shape), len(shape)):
            want = ref(a, axis)
            np.testing.assert_allclose(ev(fn(x, axis)), want, rtol=tol, atol=tol,
                                       err_msg=f"{name} axis {axis}")
            # into destinations of every layout, and a tree child
            for _, dst in _layouts(shape, dtype):
                dst[...] = 7
                dst[...] = fn(x * 1.0 + 0.0, axis)
                np.testing.assert_allclose(dst, want, rtol=tol, atol=tol,
                                           err_msg=f"{name} axis {axis} tree")


@pytest.mark.parametrize("log", [False, True])
def test_softmax_non_last_axis_edges(log):
    fn, ref = (pyet.log_softmax, np_log_softmax) if log else (pyet.softmax, np_softmax)
    a = np.ascontiguousarray(EDGE_ROWS.T)  # the edge rows along axis 0
    with np.errstate(all="ignore"):
        got, want = ev(fn(pyet.asarray(a), 0)), ref(a, 0)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    for shape, axis in [((0, 3), 1), ((3, 0, 2), 2), ((4, 1, 5), 1)]:
        b = np.zeros(shape)
        np.testing.assert_array_equal(ev(fn(pyet.asarray(b), axis)), ref(b, axis))


# ------------------------------------------- fused softmax cross-entropy gradient


def _unfused_grad(x, t):
    # the unfused tree's gradient of -sum(t * log_softmax(x)), rows along axis 1
    s = np_softmax(x, 1)
    return s * t.sum(1, keepdims=True) - t


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("targets", ["probabilities", "any", "negative", "zero rows"])
def test_xent_gradient_any_targets(dtype, targets):
    a = RNG.standard_normal((8, 6)).astype(dtype) * 3
    t = {"probabilities": np_softmax(RNG.standard_normal((8, 6)), 1),
         "any": RNG.uniform(0, 3, (8, 6)),
         "negative": RNG.standard_normal((8, 6)),
         "zero rows": np.zeros((8, 6))}[targets].astype(dtype)
    x, tt = pyet.asarray(a), pyet.asarray(t)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for loss, scale in ((-pyet.sum(tt * pyet.log_softmax(x)), 1.0),
                        (pyet.sum(pyet.log_softmax(x) * tt) * (-1 / 8), 1 / 8),
                        (pyet.mean(pyet.sum(tt * pyet.log(pyet.softmax(x)), 1)) * -3.0, 3 / 8)):
        g = pyet.grad(loss, x)
        assert repr(g).startswith("softmax_xent_grad(")   # the fused node, t read itself
        assert "sum(" not in repr(g)
        np.testing.assert_allclose(ev(g), scale * _unfused_grad(a.astype(np.float64),
                                                                t.astype(np.float64)),
                                   rtol=tol, atol=tol)


def test_xent_gradient_matches_finite_differences():
    a = RNG.standard_normal((3, 4))
    t = RNG.standard_normal((3, 4))  # not probabilities
    tt = pyet.asarray(t)

    def loss(v):
        return float(pyet.evaluate(-pyet.sum(tt * pyet.log_softmax(pyet.asarray(v)))))

    x = pyet.asarray(a)
    g = ev(pyet.grad(-pyet.sum(tt * pyet.log_softmax(x)), x))
    fd = np.zeros_like(a)
    h = 1e-6
    for i in np.ndindex(a.shape):
        p, m = a.copy(), a.copy()
        p[i] += h
        m[i] -= h
        fd[i] = (loss(p) - loss(m)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_xent_gradient_general_cotangent_and_axis0():
    a = RNG.standard_normal((5, 4))
    w = RNG.standard_normal((5, 4))
    x, ww = pyet.asarray(a), pyet.asarray(w)
    # a cotangent that is not c*t: the kernel takes t = g, c = -1
    y = pyet.log_softmax(x, 0)
    g = pyet.grad(pyet.sum(pyet.sin(y) * ww), x)
    assert repr(g).startswith("softmax_xent_grad(")
    logp = np_log_softmax(a, 0)
    gy = np.cos(logp) * w
    want = gy - np.exp(logp) * gy.sum(0, keepdims=True)
    np.testing.assert_allclose(ev(g), want, rtol=1e-12, atol=1e-12)


def test_xent_gradient_value_and_grad_shares_log_softmax():
    a, t = RNG.standard_normal((16, 10)), np_softmax(RNG.standard_normal((16, 10)), 1)
    x, tt = pyet.asarray(a), pyet.asarray(t)
    loss = -pyet.sum(tt * pyet.log_softmax(x)) / 16
    pyet.stats(reset=True)
    value, g = pyet.value_and_grad(loss, x)
    stats = pyet.stats()
    # log_softmax once, the gradient kernel once; no reduction for sum(t)
    assert stats["special_nodes"] == 2 and stats["reductions"] == 1   # (the loss's sum)
    np.testing.assert_allclose(float(value), -(t * np_log_softmax(a, 1)).sum() / 16)
    np.testing.assert_allclose(np.asarray(g), _unfused_grad(a, t) / 16, rtol=1e-12)


def test_xent_gradient_second_order():
    a = RNG.standard_normal((3, 4))
    t = RNG.uniform(0, 1, (3, 4))
    x, tt = pyet.asarray(a), pyet.asarray(t)
    v = pyet.asarray(RNG.standard_normal((3, 4)))
    g = pyet.grad(-pyet.sum(tt * pyet.log_softmax(x)), x)
    hv = ev(pyet.grad(pyet.sum(g * v), x))  # Hessian-vector product

    def grad_at(b):
        return _unfused_grad(b, t)

    h = 1e-6
    fd = (grad_at(a + h * np.asarray(v)) - grad_at(a - h * np.asarray(v))) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-7)


def test_softmax_xent_grad_index_targets_and_errors():
    a = RNG.standard_normal((5, 4)).astype(np.float32)
    idx = np.array([0, 3, -1, 2, 1])
    logp = pyet.log_softmax(pyet.asarray(a))
    g = ev(softmax_xent_grad(logp, idx, 0.5, 1))
    onehot = np.eye(4, dtype=np.float32)[idx]
    np.testing.assert_allclose(g, 0.5 * (np_softmax(a, 1) - onehot), rtol=1e-6, atol=1e-7)
    with pytest.raises(IndexError, match="class index out of range"):
        softmax_xent_grad(logp, np.array([0, 1, 2, 3, 4]), 1.0, 1)
    with pytest.raises(ValueError, match="class indices of shape"):
        softmax_xent_grad(logp, np.array([0, 1]), 1.0, 1)
    with pytest.raises(ValueError, match="must be constant along axis 1"):
        softmax_xent_grad(logp, pyet.asarray(a), pyet.asarray(a), 1)
    with pytest.raises(IndexError, match="class index out of range"):
        softmax_xent_grad(logp, np.array([0, 1, -5, 3, 2]), 1.0, 1)
    with pytest.raises(ValueError, match="must be constant along axis 1"):
        softmax_xent_grad(logp, idx, np.ones((3, 1)), 1)  # a row count that does not broadcast
    # negative int32 indices wrapped in the node's own copy, the caller's left as they were
    idx32 = idx.astype(np.int32)
    g32 = ev(softmax_xent_grad(logp, idx32, 0.5, 1))
    np.testing.assert_array_equal(g32, g)
    np.testing.assert_array_equal(idx32, [0, 3, -1, 2, 1])
    # per-row factors, a target of another dtype
    c = RNG.standard_normal((5, 1))
    t = RNG.standard_normal((5, 4))
    got = ev(softmax_xent_grad(logp, t, c, 1))
    s = np_softmax(a.astype(np.float64), 1)
    np.testing.assert_allclose(got, c * (s * t.sum(1, keepdims=True) - t), rtol=2e-5, atol=1e-5)


def test_cross_entropy_backward_uses_the_fused_kernel():
    from pyet import nn

    a = RNG.standard_normal((6, 5))
    for target in (np.array([0, 1, 2, 3, 4, 0]), np_softmax(RNG.standard_normal((6, 5)), 1)):
        layer = nn.CrossEntropy()
        layer._feedback = True  # (as when a layer upstream needs the gradient)
        x = pyet.asarray(a)
        out, saved = layer._forward({"input": x, "target": target})
        d = layer._backward(saved, {"output": pyet.asarray(np.array(1.0))})["input"]
        assert repr(d).startswith("softmax_xent_grad(log_softmax(")
        t = np.eye(5)[target] if target.dtype.kind == "i" else target
        np.testing.assert_allclose(ev(d), (np_softmax(a, 1) - t) / 6, rtol=1e-12, atol=1e-15)


def test_xent_gradient_against_torch():
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((7, 5))
    t = RNG.standard_normal((7, 5))
    xt = torch.tensor(a, requires_grad=True)
    (-(torch.tensor(t) * torch.log_softmax(xt, 1)).sum()).backward()
    x = pyet.asarray(a)
    g = ev(pyet.grad(-pyet.sum(pyet.asarray(t) * pyet.log_softmax(x)), x))
    np.testing.assert_allclose(g, xt.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_explain_lists_the_rewrites_applied():
    x = pyet.asarray(np.random.default_rng(0).random((3, 4)))
    text = pyet.explain(pyet.log(pyet.softmax(x)))
    assert "rewrite applied when built: log(softmax(x)) -> log_softmax(x)" in text
    with pyet.fast_math():
        e = x * 0 + x
    assert "x*0 -> 0" in pyet.explain(e)
    plan = pyet.EvalPlan()
    plan.register(pyet.log(pyet.softmax(x, axis=0)))
    assert "log(softmax(x)) -> log_softmax(x)" in pyet.explain(plan)
    assert "rewrite applied" not in pyet.explain(x + 1)
