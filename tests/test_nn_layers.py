"""pyet.nn layers: forward against NumPy, backward against central finite
differences (float64), MetaNN's checked values, ports and the state stack."""

import numpy as np
import pytest

import pyet
import pyet.nn as nn

F64 = nn.Policy(update=True, feedback_output=True, dtype=np.float64)


def ev(e):
    return np.asarray(pyet.evaluate(e))


def rand(*shape, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape)


def check_grads(layer, inputs, eps=1e-6, rtol=1e-5, atol=1e-8, seed=1, skip=()):
    """Backward (inputs and parameters) against central differences of
    sum(output * seed) for a float64 layer with update and feedback."""
    out = layer.forward(**inputs)
    rng = np.random.default_rng(seed)
    seeds = {p: rng.standard_normal(v.shape) for p, v in out.items()}
    gin = {k: ev(v) for k, v in layer.backward(**seeds).items()}
    gpar = {k: ev(v) for k, v in layer.grad_collect().items()}
    layer.neutral_invariant()

    def f():
        o = layer.evaluate(**inputs)
        return sum(float(np.sum(o[p].numpy() * seeds[p])) for p in o)

    def numeric(a):
        g = np.zeros(a.shape)
        for i in np.ndindex(a.shape):
            old = a[i]
            a[i] = old + eps
            fp = f()
            a[i] = old - eps
            fm = f()
            a[i] = old
            g[i] = (fp - fm) / (2 * eps)
        return g

    checked = 0
    for k, a in inputs.items():
        if k in skip or not (isinstance(a, np.ndarray) and a.dtype.kind == "f"):
            continue
        np.testing.assert_allclose(gin[k], numeric(a), rtol=rtol, atol=atol, err_msg=k)
        checked += 1
    for k, t in layer.parameters().items():
        if k in skip:
            continue
        np.testing.assert_allclose(gpar[k], numeric(t.numpy()), rtol=rtol, atol=atol, err_msg=k)
        checked += 1
    assert checked
    return gin, gpar


# ------------------------------------------------------------ MetaNN's values

def metann_weights(layer, prefix=""):
    p = layer.parameters()
    p[prefix + "W"].numpy()[...] = [[0.1, 0.3, 0.5], [0.2, 0.4, 0.6]]
    p[prefix + "b"].numpy()[...] = [0.7, 0.8, 0.9]


def test_linear_metann_value():
    lin = nn.Linear(2, 3)
    metann_weights(lin)
    out = lin.forward(input=np.array([[0.1, 0.2]], np.float32))["output"]
    np.testing.assert_allclose(ev(out), [[0.75, 0.91, 1.07]], rtol=1e-6)
    out1 = lin.forward(input=np.array([0.1, 0.2], np.float32))["output"]  # a single vector
    np.testing.assert_allclose(ev(out1), [0.75, 0.91, 1.07], rtol=1e-6)


def test_sigmoid_slp_metann_bias_gradient():
    slp = nn.SingleLayerPerceptron(2, 3, policy=nn.Policy(update=True))
    metann_weights(slp, "linear.")
    slp.forward(input=np.array([[0.1, 0.2]], np.float32))
    assert slp.backward(output=np.array([[0.19, 0.23, -0.15]], np.float32)) == {}
    grads = slp.grad_collect()
    np.testing.assert_allclose(ev(grads["linear.b"]), [0.0414, 0.04706511, -0.02852585],
                               rtol=1e-5)
    np.testing.assert_allclose(ev(grads["linear.W"]),
                               np.outer([0.1, 0.2], [0.0414, 0.04706511, -0.02852585]),
                               rtol=1e-5)
    assert slp.grad_collect() == {}  # collecting clears
    slp.neutral_invariant()


# ------------------------------------------------------------ forward vs NumPy

def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def log_softmax(x, axis=-1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


A, B = rand(3, 4, seed=1), rand(3, 4, seed=2)
CASES = [
    (nn.Add, {}, {"left": A, "right": B}, A + B),
    (nn.Sub, {}, {"left": A, "right": B}, A - B),
    (nn.Multiply, {}, {"left": A, "right": B}, A * B),
    (nn.Abs, {}, {"input": A}, np.abs(A)),
    (nn.Sigmoid, {}, {"input": A}, sigmoid(A)),
    (nn.Tanh, {}, {"input": A}, np.tanh(A)),
    (nn.ReLU, {}, {"input": A}, np.maximum(A, 0)),
    (nn.Softmax, {}, {"input": A}, np.exp(log_softmax(A))),
    (nn.Softmax, {"dim": 0}, {"input": A}, np.exp(log_softmax(A, 0))),
    (nn.LogSoftmax, {}, {"input": A}, log_softmax(A)),
    (nn.Interpolate, {}, {"weight": rand(3, 4, seed=3, low=0, high=1), "left": A, "right": B},
     rand(3, 4, seed=3, low=0, high=1) * A + (1 - rand(3, 4, seed=3, low=0, high=1)) * B),
    (nn.Dot, {}, {"left": A, "right": B.T}, A @ B.T),
    (nn.Permute, {"dims": (1, 0)}, {"input": A}, A.T),
    (nn.Reshape, {"shape": (2, -1)}, {"input": A}, A.reshape(2, -1)),
    (nn.Flatten, {}, {"input": rand(2, 3, 4)}, rand(2, 3, 4).reshape(2, 12)),
]


@pytest.mark.parametrize("cls, kw, inputs, want", CASES,
                         ids=[f"{c[0].__name__}{i}" for i, c in enumerate(CASES)])
def test_forward_and_backward(cls, kw, inputs, want):
    layer = cls(**kw, policy=F64)
    np.testing.assert_allclose(ev(layer.forward(**inputs)["output"]), want, rtol=1e-12)
    layer.clear()
    inputs = {k: v.copy() for k, v in inputs.items()}
    if cls is nn.Abs:
        inputs["input"] = inputs["input"] + np.sign(inputs["input"]) * 0.01  # away from 0
    check_grads(layer, inputs)


def test_parameter_layers():
    x = rand(5, 3)
    w = nn.Weight(3, 4, policy=F64)
    np.testing.assert_allclose(ev(w.forward(input=x)["output"]),
                               x @ w.parameters()["W"].numpy(), rtol=1e-12)
    w.clear()
    check_grads(w, {"input": x.copy()})
    b = nn.Bias(3, policy=F64).init(nn.Normal(), seed=0)
    np.testing.assert_allclose(ev(b.forward(input=x)["output"]), x + b.parameters()["b"].numpy())
    b.clear()
    check_grads(b, {"input": x.copy()})
    lin = nn.Linear(3, 4, policy=F64).init(nn.Normal(), seed=1)
    p = lin.parameters()
    np.testing.assert_allclose(ev(lin.forward(input=x)["output"]),
                               x @ p["W"].numpy() + p["b"].numpy(), rtol=1e-12)
    lin.clear()
    check_grads(lin, {"input": x.copy()})
    nb = nn.Linear(3, 4, bias=False, policy=F64)
    assert list(nb.parameters()) == ["W"]
    check_grads(nb, {"input": x.copy()})
    assert list(nn.Linear(3, 4, policy=nn.Policy(bias=False)).parameters()) == ["W"]


def test_sources():
    ps = nn.ParamSource((2, 3), policy=F64).init(nn.Uniform(-1, 1), seed=0)
    assert ps.input_ports == ()
    out = ps.forward()["output"]
    np.testing.assert_array_equal(ev(out), ps.parameters()["value"].numpy())
    assert ps.backward(output=np.ones((2, 3))) == {}
    np.testing.assert_array_equal(ev(ps.grad_collect()["value"]), np.ones((2, 3)))
    vs = nn.ValueSource(np.arange(3.0))
    np.testing.assert_array_equal(ev(vs.forward()["output"]), np.arange(3.0))
    assert vs.backward(output=np.ones(3)) == {} and vs.parameters() == {}


@pytest.mark.parametrize("target_kind", ["indices", "probabilities"])
def test_losses(target_kind):
    x = rand(5, 4, seed=3)
    idx = np.array([0, 3, 1, 1, 2])
    t = np.eye(4)[idx] if target_kind == "indices" else rand(5, 4, seed=4, low=0, high=1)
    target = idx if target_kind == "indices" else t
    want_ce = -np.sum(t * log_softmax(x)) / 5
    ce = nn.CrossEntropy(policy=F64)
    np.testing.assert_allclose(ev(ce.forward(input=x, target=target)["output"]), want_ce)
    ce.clear()
    check_grads(ce, {"input": x.copy(), "target": target}, skip=("target",))
    logp = log_softmax(x)
    nll = nn.NLLLoss(policy=F64)
    np.testing.assert_allclose(ev(nll.forward(input=logp, target=target)["output"]),
                               -np.sum(t * logp) / 5)
    nll.clear()
    check_grads(nll, {"input": logp.copy(), "target": target}, skip=("target",))


def test_loss_errors():
    ce = nn.CrossEntropy()
    with pytest.raises(ValueError, match=r"input must be \(batch, classes\)"):
        ce.forward(input=np.zeros(3), target=np.zeros(3, int))
    with pytest.raises(ValueError, match="target indices of shape"):
        ce.forward(input=np.zeros((3, 2)), target=np.zeros(4, int))
    with pytest.raises(IndexError):
        ce.forward(input=np.zeros((2, 2)), target=np.array([0, 2]))
    with pytest.raises(ValueError, match="does not match"):
        ce.forward(input=np.zeros((2, 2)), target=np.zeros((2, 3)))


# ------------------------------------------------------------ ports and the stack

def test_port_errors():
    lin = nn.Linear(2, 3)
    with pytest.raises(KeyError, match="Linear.forward: unknown input port 'x'"):
        lin.forward(input=np.zeros((1, 2)), x=1)
    with pytest.raises(KeyError, match="Linear.forward: missing input port 'input'"):
        lin.forward()
    add = nn.Add(policy=nn.Policy(feedback_output=True))
    with pytest.raises(KeyError, match="missing input port 'right'"):
        add.forward(left=np.zeros(2))
    add.forward(left=np.zeros(2), right=np.ones(2))
    with pytest.raises(KeyError, match="Add.backward: unknown output port 'out'"):
        add.backward(out=np.ones(2))
    with pytest.raises(KeyError, match="Add.backward: missing output port 'output'"):
        add.backward()
    add.backward(output=np.ones(2))
    with pytest.raises(RuntimeError, match="Add.backward: no forward pass left to undo"):
        add.backward(output=np.ones(2))


def test_stack_undoes_forwards_in_reverse_order():
    mul = nn.Multiply(policy=nn.Policy(feedback_output=True))
    xs = [np.full(2, float(i)) for i in range(1, 4)]
    for x in xs:
        mul.forward(left=x, right=2 * x)
    with pytest.raises(RuntimeError, match=r"Multiply: 3 forward pass\(es\) not undone"):
        mul.neutral_invariant()
    for x in reversed(xs):  # the latest forward first
        g = mul.backward(output=np.ones(2))
        np.testing.assert_array_equal(ev(g["left"]), 2 * x)
        np.testing.assert_array_equal(ev(g["right"]), x)
    mul.neutral_invariant()


def test_layers_without_gradients_keep_no_state():
    lin = nn.Linear(2, 3)  # default policy: no update, no feedback
    lin.forward(input=np.zeros((1, 2)))
    lin.neutral_invariant()
    assert lin.backward(output=np.ones((1, 3))) == {}
    assert lin.grad_collect() == {}


def test_feedback_and_update_separately():
    x = rand(2, 3)
    only_fb = nn.Linear(3, 2, policy=nn.Policy(feedback_output=True, dtype=np.float64))
    only_fb.forward(input=x)
    g = only_fb.backward(output=np.ones((2, 2)))
    w = only_fb.parameters()["W"].numpy()
    np.testing.assert_allclose(ev(g["input"]), np.ones((2, 2)) @ w.T)
    assert only_fb.grad_collect() == {}
    only_up = nn.Linear(3, 2, policy=nn.Policy(update=True, dtype=np.float64))
    only_up.forward(input=x)
    assert only_up.backward(output=np.ones((2, 2))) == {}
    np.testing.assert_allclose(ev(only_up.grad_collect()["W"]), x.T @ np.ones((2, 2)))


def test_gradients_accumulate_over_backwards():
    lin = nn.Linear(3, 2, policy=F64)
    x1, x2 = rand(2, 3, seed=1), rand(2, 3, seed=2)
    lin.forward(input=x1)
    lin.forward(input=x2)
    lin.backward(output=np.ones((2, 2)))
    lin.backward(output=np.ones((2, 2)))
    np.testing.assert_allclose(ev(lin.grad_collect()["W"]), (x1 + x2).T @ np.ones((2, 2)))


def test_constructor_errors():
    with pytest.raises(ValueError, match="in_features must be a positive integer"):
        nn.Linear(0, 3)
    with pytest.raises(TypeError, match="in_features must be an integer"):
        nn.Linear("a", 3)
    with pytest.raises(TypeError, match="policy must be a pyet.nn.Policy"):
        nn.Linear(2, 3, policy={"update": True})
    with pytest.raises(ValueError, match="Permute: dims"):
        nn.Permute((0, 0)).forward(input=np.zeros((2, 2)))


def test_vjp_with_respect_to_inner_nodes():
    x = pyet.asarray(rand(3, 4))
    inner = pyet.tanh(x) * 2
    y = pyet.sigmoid(inner) + inner
    seed = rand(3, 4, seed=2)
    (g,) = pyet.vjp(y, [inner], seed)
    s = 1 / (1 + np.exp(-ev(inner)))
    np.testing.assert_allclose(ev(g), seed * (s * (1 - s) + 1), rtol=1e-12)
    gi, gx = pyet.vjp(y, [inner, x], seed)  # x is reached only through inner: stopped there
    np.testing.assert_array_equal(ev(gx), np.zeros((3, 4)))
    with pytest.raises(TypeError, match=r"wrt\[0\] of dtype int64 is not differentiable"):
        pyet.vjp(y, [pyet.asarray(np.arange(3))], seed)
    with pytest.raises(ValueError, match="seed of shape"):
        pyet.vjp(y, [inner], np.ones(5))
