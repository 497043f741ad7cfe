"""pyet.nn composition (Compose's checks, policies), parameters (init,
save/load), optimizers (against PyTorch's where installed) and train_step."""

import threading

import numpy as np
import pytest
from test_nn_layers import F64, check_grads, ev, rand

import pyet
import pyet.nn as nn


def chain(*names_layers):
    subs = dict(names_layers)
    names = list(subs)
    conns = [("input", f"{names[0]}.input")]
    conns += [(f"{a}.output", f"{b}.input") for a, b in zip(names, names[1:], strict=False)]
    conns.append((f"{names[-1]}.output", "output"))
    return subs, conns


# ------------------------------------------------------------ Compose

def test_compose_forward_backward_matches_numpy_and_differences():
    subs, conns = chain(("fc1", nn.Linear(3, 4)), ("act", nn.Tanh()), ("fc2", nn.Linear(4, 2)))
    net = nn.Compose(subs, conns, policy=F64).init(nn.Normal(0, 0.5), seed=0)
    assert net.input_ports == ("input",) and net.output_ports == ("output",)
    assert list(net.parameters()) == ["fc1.W", "fc1.b", "fc2.W", "fc2.b"]
    p = {k: t.numpy() for k, t in net.parameters().items()}
    x = rand(5, 3)
    want = np.tanh(x @ p["fc1.W"] + p["fc1.b"]) @ p["fc2.W"] + p["fc2.b"]
    np.testing.assert_allclose(ev(net.forward(input=x)["output"]), want, rtol=1e-12)
    net.clear()
    check_grads(net, {"input": x.copy()})


def test_compose_sums_gradients_from_several_consumers():
    # y = x * tanh(x): x feeds two consumers
    net = nn.Compose({"t": nn.Tanh(), "m": nn.Multiply()},
                     [("input", "t.input"), ("input", "m.left"), ("t.output", "m.right"),
                      ("m.output", "output")], policy=F64)
    x = rand(3, 2)
    np.testing.assert_allclose(ev(net.forward(input=x)["output"]), x * np.tanh(x))
    g = ev(net.backward(output=np.ones((3, 2)))["input"])
    np.testing.assert_allclose(g, np.tanh(x) + x * (1 - np.tanh(x) ** 2), rtol=1e-12)
    check_grads(net, {"input": x.copy()})


def test_compose_several_ports_and_nesting():
    inner_subs, inner_conns = chain(("fc", nn.Linear(2, 2)), ("act", nn.Sigmoid()))
    inner = nn.Compose(inner_subs, inner_conns)
    net = nn.Compose({"block": inner, "add": nn.Add()},
                     [("a", "block.input"), ("block.output", "add.left"), ("b", "add.right"),
                      ("add.output", "sum"), ("block.output", "hidden")], policy=F64)
    assert net.input_ports == ("a", "b") and net.output_ports == ("sum", "hidden")
    assert list(net.parameters()) == ["block.fc.W", "block.fc.b"]
    check_grads(net, {"a": rand(3, 2, seed=1), "b": rand(3, 2, seed=2)})
    assert net["block"]["fc"].name == "block.fc"


@pytest.mark.parametrize("subs, conns, match", [
    ({"a": nn.ReLU()}, [("input", "a.input"), ("a.output", "output"), ("input", "a.input")],
     r"input 'a.input' is fed twice \(input and input\)"),
    ({"a": nn.Add()}, [("input", "a.left"), ("a.output", "output")],
     "input a.right is not fed by any connection"),
    ({"a": nn.ReLU()}, [("input", "b.input"), ("a.output", "output")],
     "names unknown sublayer 'b'"),
    ({"a": nn.ReLU()}, [("input", "a.x"), ("a.output", "output")],
     "sublayer 'a' .* has no input port 'x'"),
    ({"a": nn.ReLU()}, [("input", "a.input"), ("a.y", "output")],
     "sublayer 'a' .* has no output port 'y'"),
    ({"a": nn.ReLU(), "b": nn.ReLU()}, [("input", "a.input"), ("a.output", "output"),
                                         ("a.output", "b.input")],
     "sublayer 'b' is not connected to any output"),
    ({"a": nn.Add(), "b": nn.ReLU()}, [("input", "a.left"), ("b.output", "a.right"),
                                       ("a.output", "b.input"), ("a.output", "output")],
     "cycle through a, b"),
    ({"a": nn.ReLU()}, [("input", "a.input"), ("a.output", "output"), ("input", "output")],
     "output port 'output' is fed twice"),
    ({"a.b": nn.ReLU()}, [], "sublayer name 'a.b' must be an identifier"),
    ({}, [], "non-empty dict"),
    ({"a": nn.ReLU()}, [("input", "a.input")], "no connection reaches an output port"),
    ({"a": nn.ReLU()}, [("input", "a.input", "x")], "must be a \\(source, destination\\) pair"),
    ({"a": nn.ReLU()}, [("x", "a.input"), ("a.output", "x")],
     "'x' is both an input and an output port"),
])
def test_compose_errors(subs, conns, match):
    with pytest.raises(ValueError, match=match):
        nn.Compose(subs, conns)


def test_compose_type_errors():
    relu = nn.ReLU()
    with pytest.raises(TypeError, match="sublayer 'a' is a int"):
        nn.Compose({"a": 1}, [])
    with pytest.raises(ValueError, match="same layer object is sublayer 'a' and 'b'"):
        nn.Compose({"a": relu, "b": relu}, [])
    with pytest.raises(ValueError, match="sub_policies names 'zz'"):
        nn.Compose({"a": nn.ReLU()}, [("input", "a.input"), ("a.output", "output")],
                   sub_policies={"zz": nn.Policy()})


# ------------------------------------------------------------ policies

def test_policy_fields_and_errors():
    p = nn.Policy(update=True)
    assert p.update and not p.feedback_output and p.activation == "sigmoid" and p.bias
    assert p.dtype == np.float32 and p.given("update") and not p.given("bias")
    assert p.merged(nn.Policy(update=False, bias=False)) == nn.Policy(update=False, bias=False)
    assert repr(nn.Policy(update=True, dtype=np.float64)) == "Policy(update=True, dtype=float64)"
    with pytest.raises(TypeError, match="unknown field"):
        nn.Policy(updates=True)
    with pytest.raises(ValueError, match="activation must be one of"):
        nn.Policy(activation="gelu")
    with pytest.raises(TypeError, match="dtype must be float32 or float64"):
        nn.Policy(dtype=np.int32)
    with pytest.raises(TypeError, match="update must be a bool"):
        nn.Policy(update=1)


def test_sub_policies_override_and_automatic_feedback():
    net = nn.MLP([3, 4, 4, 2], activation="tanh", policy=nn.Policy(update=True),
                 sub_policies={"fc1": nn.Policy(update=False)})
    fc1, act1, fc2 = net["fc1"], net["act1"], net["fc2"]
    assert not fc1.updatable and fc2.updatable
    # downstream of the updatable fc2: feedback on; upstream of it: not needed
    assert net["act2"]._feedback and net["fc3"]._feedback
    assert not fc1._feedback and not act1._feedback and not fc2._feedback
    net.forward(input=rand(2, 3).astype(np.float32))
    net.backward(output=np.ones((2, 2), np.float32))
    assert sorted(net.grad_collect()) == ["fc2.W", "fc2.b", "fc3.W", "fc3.b"]
    net.neutral_invariant()


def test_contradictory_policy_is_an_error():
    with pytest.raises(ValueError, match=r"act1: Policy\(.*feedback_output=False.*\) turns "
                                         r"feedback off.*downstream of an updatable layer"):
        nn.MLP([3, 4, 2], policy=nn.Policy(update=True),
               sub_policies={"act1": nn.Policy(feedback_output=False)})


def test_policy_dtype_and_activation():
    net = nn.MLP([3, 4, 2], policy=nn.Policy(dtype=np.float64, activation="relu"))
    assert all(t.dtype == np.float64 for t in net.parameters().values())
    assert isinstance(net["act1"], nn.ReLU)
    slp = nn.SingleLayerPerceptron(3, 2, activation="identity")
    assert list(slp._sub) == ["linear"]
    # a compose's dtype reaches prebuilt sublayers
    subs, conns = chain(("fc", nn.Linear(2, 2)),)
    assert nn.Compose(subs, conns, policy=nn.Policy(dtype=np.float64))["fc"].parameters()[
        "W"].dtype == np.float64


# ------------------------------------------------------------ init, save, load

def test_init_is_seeded_and_follows_the_initializer():
    a = nn.MLP([64, 32, 10]).init(seed=3)
    b = nn.MLP([64, 32, 10]).init(seed=3)
    for k, t in a.parameters().items():
        np.testing.assert_array_equal(t.numpy(), b.parameters()[k].numpy())
    w = a.parameters()["fc1.W"].numpy()
    assert np.abs(w).max() <= 1 / np.sqrt(64)  # PyTorch's default bound
    c = nn.MLP([400, 300, 10]).init(nn.Constant(0.5))
    assert all(np.all(t.numpy() == 0.5) for t in c.parameters().values())
    x = nn.MLP([400, 300]).init(nn.XavierUniform(), seed=0).parameters()
    assert np.abs(x["fc1.W"].numpy()).max() <= np.sqrt(6 / 700)
    assert np.all(x["fc1.b"].numpy() == 0)  # fan-based initializers leave biases at 0
    assert abs(x["fc1.W"].numpy().std() - np.sqrt(2 / 700)) < 0.002
    k = nn.MLP([400, 300]).init(nn.KaimingNormal(), seed=0).parameters()["fc1.W"].numpy()
    assert abs(k.std() - np.sqrt(2 / 400)) < 0.002
    xn = nn.MLP([400, 300]).init(nn.XavierNormal(), seed=0).parameters()["fc1.W"].numpy()
    assert abs(xn.std() - np.sqrt(2 / 700)) < 0.002
    n = nn.MLP([400, 300]).init(nn.Normal(1.0, 0.1), seed=0).parameters()["fc1.W"].numpy()
    assert abs(n.mean() - 1) < 0.01
    u = nn.MLP([400, 300]).init(nn.Uniform(2, 3), seed=0).parameters()["fc1.b"].numpy()
    assert u.min() >= 2 and u.max() < 3
    pol = nn.MLP([4, 3], policy=nn.Policy(initializer=nn.Constant(2.0))).init()
    assert np.all(pol.parameters()["fc1.W"].numpy() == 2)
    with pytest.raises(TypeError, match="initializer must be a pyet.nn Initializer"):
        a.init("xavier")
    with pytest.raises(ValueError, match="mode must be"):
        nn.KaimingNormal(mode="x")


def test_save_load_round_trip(tmp_path):
    a = nn.MLP([5, 4, 3]).init(seed=1)
    path = tmp_path / "w.npz"
    a.save(path)
    b = nn.MLP([5, 4, 3]).init(seed=2)
    b.load(path)
    for k, t in a.parameters().items():
        np.testing.assert_array_equal(t.numpy(), b.parameters()[k].numpy())
    with np.load(path) as f:
        assert sorted(f.files) == sorted(a.parameters())


def _saved(tmp_path, **arrays):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    return path


def test_load_errors_load_nothing(tmp_path):
    a = nn.MLP([5, 4, 3]).init(seed=1)
    before = {k: t.numpy().copy() for k, t in a.parameters().items()}
    good = {k: np.zeros_like(v) for k, v in before.items()}

    def unchanged():
        for k, t in a.parameters().items():
            np.testing.assert_array_equal(t.numpy(), before[k])

    missing = {k: v for k, v in good.items() if k != "fc2.b"}
    with pytest.raises(ValueError, match=r"has no entry for fc2.b; nothing loaded"):
        a.load(_saved(tmp_path, **missing))
    unchanged()
    with pytest.raises(ValueError, match="has unexpected entries extra"):
        a.load(_saved(tmp_path, **good, extra=np.zeros(1)))
    unchanged()
    shaped = dict(good, **{"fc2.W": np.zeros((3, 4))})
    with pytest.raises(ValueError, match=r"entry 'fc2.W' has shape \(3, 4\), the parameter "
                                         r"\(4, 3\); nothing loaded"):
        a.load(_saved(tmp_path, **shaped))
    unchanged()
    strings = dict(good, **{"fc2.b": np.array(["a", "b", "c"])})
    with pytest.raises(ValueError, match="not a number"):
        a.load(_saved(tmp_path, **strings))
    unchanged()
    objects = dict(good, **{"fc2.b": np.array([1, "x", None], dtype=object)})
    with pytest.raises(ValueError, match="cannot be read without pickle"):
        a.load(_saved(tmp_path, **objects))
    unchanged()
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"PK\x03\x04 this is not a zip archive")
    with pytest.raises(ValueError, match="is not a readable .npz"):
        a.load(corrupt)
    truncated = tmp_path / "truncated.npz"
    a.save(tmp_path / "full.npz")
    truncated.write_bytes((tmp_path / "full.npz").read_bytes()[:200])
    with pytest.raises(ValueError, match="not a readable .npz|cannot be read"):
        a.load(truncated)
    unchanged()
    npy = tmp_path / "one.npy"
    np.save(npy, np.zeros(3))
    with pytest.raises(ValueError, match="single .npy array"):
        a.load(npy)
    with pytest.raises(FileNotFoundError):
        a.load(tmp_path / "nope.npz")
    unchanged()


# ------------------------------------------------------------ optimizers

def test_sgd_weight_decay_is_the_seed_update():
    w0 = rand(4, 3)
    g = rand(4, 3, seed=5)
    w = pyet.asarray(w0.copy())
    opt = nn.SGD([w], lr=0.1, weight_decay=0.01)
    opt.step({"0": g})
    np.testing.assert_allclose(w.numpy(), w0 - 0.1 * (g + 0.01 * w0), rtol=1e-15)


def test_optimizer_errors():
    w = pyet.asarray(np.zeros(3))
    with pytest.raises(ValueError, match="lr must be > 0"):
        nn.SGD([w], lr=0)
    with pytest.raises(TypeError, match="must be a float pyet.Tensor"):
        nn.SGD([np.zeros(3)], lr=0.1)
    with pytest.raises(ValueError, match="betas must be in"):
        nn.Adam([w], betas=(1.0, 0.9))
    opt = nn.SGD({"w": w}, lr=0.1)
    with pytest.raises(KeyError, match="gradient 'v' names no parameter"):
        opt.step({"v": np.zeros(3)})
    with pytest.raises(ValueError, match=r"gradient 'w' has shape \(2,\)"):
        opt.step({"w": np.zeros(2)})
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        nn.SGD([pyet.asarray(ro)], lr=0.1)


@pytest.mark.parametrize("make", [
    lambda p: nn.SGD(p, lr=0.1),
    lambda p: nn.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
    lambda p: nn.Adam(p, lr=0.01),
    lambda p: nn.Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
], ids=["sgd", "sgd-momentum-wd", "adam", "adam-wd"])
def test_optimizers_match_torch(make):
    torch = pytest.importorskip("torch")
    w0, grads = rand(4, 3), [rand(4, 3, seed=s) for s in range(5)]
    w = pyet.asarray(w0.copy())
    opt = make([w])
    tw = torch.tensor(w0.copy(), requires_grad=True)
    kind = type(opt).__name__
    if kind == "SGD":
        topt = torch.optim.SGD([tw], lr=opt.lr, momentum=opt.momentum,
                               weight_decay=opt.weight_decay)
    else:
        topt = torch.optim.Adam([tw], lr=opt.lr, betas=opt.betas, eps=opt.eps,
                                weight_decay=opt.weight_decay)
    for g in grads:
        opt.step({"0": pyet.asarray(g) * 1})  # a tree: evaluated into a buffer first
        tw.grad = torch.tensor(g)
        topt.step()
        np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-12, atol=1e-14)


# ------------------------------------------------------------ train_step

def digits_like(n=200, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 1, (4, 8))
    y = rng.integers(0, 4, n)
    x = (centers[y] + 0.5 * rng.normal(0, 1, (n, 8))).astype(np.float32)
    return x, y


def test_train_step_lowers_the_loss():
    x, y = digits_like()
    model = nn.MLP([8, 16, 4], activation="relu", policy=nn.Policy(update=True)).init(seed=0)
    opt = nn.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss = nn.CrossEntropy()
    losses = []
    for _ in range(5):
        total = 0.0
        for i in range(0, len(x), 32):
            total += nn.train_step(model, loss, {"input": x[i:i + 32], "target": y[i:i + 32]},
                                   opt)
        losses.append(total)
    assert losses[-1] < 0.5 * losses[0]
    acc = np.mean(np.argmax(model.evaluate(input=x)["output"].numpy(), 1) == y)
    assert acc > 0.9
    model.neutral_invariant()


def manual_step(model, x, y, opt):
    loss = nn.CrossEntropy(policy=nn.Policy(feedback_output=True))
    out = model.forward(input=x)["output"]
    value = loss.forward(input=out, target=y)["output"]
    g = loss.backward(output=1.0)["input"]
    model.backward(output=g)
    grads = model.grad_collect()
    v = float(ev(value))
    opt.step({k: pyet.asarray(ev(t)) for k, t in grads.items()})
    return v


@pytest.mark.parametrize("opt_kind", ["sgd", "adam"])
def test_train_step_equals_the_separate_passes(opt_kind):
    x, y = digits_like(64, seed=1)
    make = lambda: nn.MLP([8, 16, 4], activation="tanh",  # noqa: E731
                          policy=nn.Policy(update=True, dtype=np.float64)).init(seed=0)
    a, b = make(), make()
    mk = ((lambda m: nn.SGD(m.parameters(), lr=0.1, momentum=0.9)) if opt_kind == "sgd" else
          (lambda m: nn.Adam(m.parameters(), lr=0.01)))
    oa, ob = mk(a), mk(b)
    for step in range(3):
        sl = slice(step * 16, step * 16 + 16)
        la, outs = nn.train_step(a, nn.CrossEntropy(), {"input": x[sl], "target": y[sl]}, oa,
                                 return_outputs=True)
        lb = manual_step(b, x[sl].astype(np.float64), y[sl], ob)
        np.testing.assert_allclose(la, lb, rtol=1e-12)
        assert outs["output"].shape == (16, 4)
    for k, t in a.parameters().items():
        np.testing.assert_allclose(t.numpy(), b.parameters()[k].numpy(), rtol=1e-12)


def test_train_step_shares_forward_products():
    """Forward activations are computed once: 3 forward gemms, 3 weight
    gradients and 2 input gradients for a 3-layer MLP."""
    x, y = digits_like(32)
    model = nn.MLP([8, 16, 16, 4], activation="relu", policy=nn.Policy(update=True)).init(seed=0)
    opt = nn.SGD(model.parameters(), lr=0.1, momentum=0.9)
    nn.train_step(model, nn.CrossEntropy(), {"input": x, "target": y}, opt)
    pyet.stats(reset=True)
    loss = nn.CrossEntropy()
    nn.train_step(model, loss, {"input": x, "target": y}, opt)
    assert pyet.stats()["gemm_calls"] == 8


def test_train_step_errors():
    x, y = digits_like(8)
    frozen = nn.MLP([8, 4])
    with pytest.raises(ValueError, match="no updatable parameters"):
        nn.train_step(frozen, nn.CrossEntropy(), {"input": x, "target": y},
                      nn.SGD(frozen.parameters(), lr=0.1))
    model = nn.MLP([8, 4], policy=nn.Policy(update=True))
    opt = nn.SGD(model.parameters(), lr=0.1)
    before = model.parameters()["fc1.W"].numpy().copy()
    with pytest.raises(IndexError, match="target index out of range for 4 classes"):
        nn.train_step(model, nn.CrossEntropy(), {"input": x, "target": y + 4}, opt)
    np.testing.assert_array_equal(model.parameters()["fc1.W"].numpy(), before)
    with pytest.raises(TypeError, match="loss must be a pyet.nn.Layer"):
        nn.train_step(model, lambda a: a, {"input": x}, opt)


def test_train_step_with_threads(threaded):
    x, y = digits_like(64)
    results = []
    for _ in range(2):
        model = nn.MLP([8, 32, 4], activation="relu", policy=nn.Policy(update=True)).init(seed=0)
        opt = nn.Adam(model.parameters(), lr=0.01)
        for i in range(0, 64, 16):
            nn.train_step(model, nn.CrossEntropy(), {"input": x[i:i + 16],
                                                     "target": y[i:i + 16]}, opt)
        results.append(model.parameters()["fc1.W"].numpy().copy())
        pyet.set_num_threads(1)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-6)


def test_models_trained_in_python_threads_at_once():
    x, y = digits_like(64)

    def train(out, k):
        model = nn.MLP([8, 16, 4], activation="relu", policy=nn.Policy(update=True)).init(seed=0)
        opt = nn.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(3):
            for i in range(0, 64, 16):
                nn.train_step(model, nn.CrossEntropy(), {"input": x[i:i + 16],
                                                         "target": y[i:i + 16]}, opt)
        out[k] = model.parameters()["fc2.W"].numpy().copy()

    out = {}
    threads = [threading.Thread(target=train, args=(out, k)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(1, 4):
        np.testing.assert_array_equal(out[k], out[0])


def test_softmax_of_a_special_node_shares_it():
    """softmax and log_softmax of the same product in one plan: one gemm (the
    product is computed through the evaluation's table, not into each)."""
    a, b = pyet.asarray(rand(5, 3)), pyet.asarray(rand(3, 4, seed=2))
    pyet.stats(reset=True)
    s, ls = pyet.evaluate_all([pyet.softmax(pyet.dot(a, b), 1), pyet.log_softmax(pyet.dot(a, b),
                                                                                1)])
    assert pyet.stats()["gemm_calls"] == 1
    z = a.numpy() @ b.numpy()
    np.testing.assert_allclose(np.log(s.numpy()), ls.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ls.numpy(), z - z.max(1, keepdims=True) - np.log(
        np.exp(z - z.max(1, keepdims=True)).sum(1, keepdims=True)), rtol=1e-12)


def test_demo_runs(tmp_path, capsys):
    """One epoch of each model: trains, saves, reloads (same accuracy), plots."""
    pytest.importorskip("sklearn")
    pytest.importorskip("tqdm")
    pytest.importorskip("matplotlib")
    from pyet.nn import demo

    png = tmp_path / "demo.png"
    before = pyet.get_num_threads()
    try:
        demo.main(["--epochs-mlp", "1", "--epochs-cnn", "1", "--plot", str(png), "--quiet"])
    finally:
        pyet.set_num_threads(before)
    out = capsys.readouterr().out
    assert out.count("(same)") == 2 and png.stat().st_size > 1000


def test_train_step_negative_target_indices_and_lists():
    # class -1 is class n-1 (NumPy's indexing), as the one-hot fill for
    # non-negative indices gives; a list target is read as an array
    x, y = digits_like(16)
    losses = []
    for target in (y, y - 4, list(y)):
        model = nn.MLP([8, 4], policy=nn.Policy(update=True)).init(seed=0)
        opt = nn.SGD(model.parameters(), lr=0.1, momentum=0.9)
        inputs = {"input": x, "target": target}
        losses.append([nn.train_step(model, nn.CrossEntropy(), inputs, opt) for _ in range(3)])
        losses[-1].append(model.parameters()["fc1.W"].numpy().copy())
    for other in losses[1:]:
        np.testing.assert_array_equal(other[:3], losses[0][:3])
        np.testing.assert_array_equal(other[3], losses[0][3])
