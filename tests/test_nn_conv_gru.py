"""pyet.nn Conv2d, pooling, GRUStep and Recurrent: forward against NumPy
references, backward against finite differences and against torch.nn with the
same weights (skipped without PyTorch)."""

import numpy as np
import pytest
from test_nn_layers import F64, check_grads, ev, rand

import pyet
import pyet.nn as nn


def conv_numpy(x, w, b, stride, padding, dilation):
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh = (h - (dh * (kh - 1) + 1)) // sh + 1
    ow = (wd - (dw * (kw - 1) + 1)) // sw + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            ey, ex = dh * (kh - 1) + 1, dw * (kw - 1) + 1
            patch = x[:, :, i * sh:i * sh + ey:dh, j * sw:j * sw + ex:dw]
            out[:, :, i, j] = np.einsum("nckl,ockl->no", patch, w)
    return out + (0 if b is None else b[None, :, None, None])


CONVS = [
    dict(in_channels=2, out_channels=3, kernel_size=3),
    dict(in_channels=1, out_channels=2, kernel_size=(2, 3), stride=2, padding=1),
    dict(in_channels=2, out_channels=2, kernel_size=2, dilation=2, padding=(1, 0), bias=False),
    dict(in_channels=3, out_channels=4, kernel_size=3, stride=(1, 2), padding=2),
]


@pytest.mark.parametrize("kw", CONVS)
def test_conv2d_forward_and_backward(kw):
    conv = nn.Conv2d(**kw, policy=F64).init(nn.Normal(0, 0.5), seed=0)
    x = rand(2, kw["in_channels"], 6, 7)
    p = {k: t.numpy() for k, t in conv.parameters().items()}
    want = conv_numpy(x, p["weight"], p.get("bias"), conv.stride, conv.padding, conv.dilation)
    np.testing.assert_allclose(ev(conv.forward(input=x)["output"]), want, rtol=1e-12,
                               atol=1e-12)
    conv.clear()
    check_grads(conv, {"input": x.copy()})


@pytest.mark.parametrize("cls", [nn.MaxPool2d, nn.AvgPool2d])
@pytest.mark.parametrize("kernel, stride, hw", [(2, None, (4, 6)), (2, None, (5, 7)),
                                                 ((3, 2), (2, 1), (7, 5))])
def test_pools(cls, kernel, stride, hw):
    pool = cls(kernel, stride, policy=F64)
    x = rand(2, 3, *hw, seed=4)
    (kh, kw), (sh, sw) = pool.kernel_size, pool.stride
    oh, ow = (hw[0] - kh) // sh + 1, (hw[1] - kw) // sw + 1
    red = np.max if cls is nn.MaxPool2d else np.mean
    want = np.array([[[[red(x[n, c, i * sh:i * sh + kh, j * sw:j * sw + kw]) for j in range(ow)]
                       for i in range(oh)] for c in range(3)] for n in range(2)])
    np.testing.assert_allclose(ev(pool.forward(input=x)["output"]), want, rtol=1e-12)
    pool.clear()
    check_grads(pool, {"input": x.copy()})


def test_spatial_errors():
    with pytest.raises(ValueError, match=r"Conv2d: input must be \(N, C, H, W\)"):
        nn.Conv2d(1, 1, 2).forward(input=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="input has 2 channels, the layer 1"):
        nn.Conv2d(1, 1, 2).forward(input=np.zeros((1, 2, 3, 3)))
    with pytest.raises(ValueError, match="kernel_size must be an int >= 1"):
        nn.Conv2d(1, 1, 0)
    with pytest.raises(ValueError, match="a 3x3 window does not fit in a 2x2 image"):
        nn.MaxPool2d(3).forward(input=np.zeros((1, 1, 2, 2)))


def test_conv_and_pools_match_torch():
    torch = pytest.importorskip("torch")
    x = rand(2, 3, 9, 8, seed=2)
    conv = nn.Conv2d(3, 4, 3, stride=2, padding=1, dilation=1, policy=F64).init(seed=1)
    tconv = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1, dtype=torch.float64)
    with torch.no_grad():
        tconv.weight.copy_(torch.tensor(conv.parameters()["weight"].numpy()))
        tconv.bias.copy_(torch.tensor(conv.parameters()["bias"].numpy()))
    for layer, tlayer in [(conv, tconv), (nn.MaxPool2d(2, policy=F64), torch.nn.MaxPool2d(2)),
                          (nn.AvgPool2d(3, 2, policy=F64), torch.nn.AvgPool2d(3, 2))]:
        tx = torch.tensor(x, requires_grad=True)
        ty = tlayer(tx)
        out = layer.forward(input=x)["output"]
        np.testing.assert_allclose(ev(out), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
        g = rand(*ty.shape, seed=7)
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(ev(layer.backward(output=g)["input"]), tx.grad.numpy(),
                                   rtol=1e-12, atol=1e-12)
        if layer is conv:
            grads = conv.grad_collect()
            np.testing.assert_allclose(ev(grads["weight"]), tconv.weight.grad.numpy(),
                                       rtol=1e-10)
            np.testing.assert_allclose(ev(grads["bias"]), tconv.bias.grad.numpy(), rtol=1e-10)


# ------------------------------------------------------------ GRU

def gru_numpy(x, h, p, hs):
    def sig(v):
        return 1 / (1 + np.exp(-v))
    gi = x @ p["W_ih"] + p["b_ih"]
    gh = h @ p["W_hh"] + p["b_hh"]
    r = sig(gi[:, :hs] + gh[:, :hs])
    z = sig(gi[:, hs:2 * hs] + gh[:, hs:2 * hs])
    n = np.tanh(gi[:, 2 * hs:] + r * gh[:, 2 * hs:])
    return (1 - z) * n + z * h


def test_gru_step_forward_and_backward():
    gru = nn.GRUStep(3, 4, policy=F64).init(seed=0)
    x, h = rand(2, 3, seed=1), rand(2, 4, seed=2)
    p = {k: t.numpy() for k, t in gru.parameters().items()}
    np.testing.assert_allclose(ev(gru.forward(input=x, hidden=h)["output"]),
                               gru_numpy(x, h, p, 4), rtol=1e-12)
    gru.clear()
    check_grads(gru, {"input": x.copy(), "hidden": h.copy()})
    with pytest.raises(ValueError, match=r"hidden must be \(2, 4\)"):
        gru.forward(input=x, hidden=np.zeros((2, 3)))


def test_recurrent_backward_through_time():
    rec = nn.Recurrent(nn.GRUStep(2, 3), policy=F64).init(seed=0)
    x, h0 = rand(4, 2, 2, seed=3), rand(2, 3, seed=4)
    out = rec.forward(input=x, hidden=h0)
    p = {k[len("step."):]: t.numpy() for k, t in rec.parameters().items()}
    h, states = h0, []
    for t in range(4):
        h = gru_numpy(x[t], h, p, 3)
        states.append(h)
    np.testing.assert_allclose(ev(out["output"]), np.stack(states), rtol=1e-12)
    np.testing.assert_allclose(ev(out["hidden"]), h, rtol=1e-12)
    rec.clear()
    check_grads(rec, {"input": x.copy(), "hidden": h0.copy()})
    assert list(rec.parameters()) == ["step.W_ih", "step.W_hh", "step.b_ih", "step.b_hh"]


def test_gru_matches_torch():
    torch = pytest.importorskip("torch")
    T, N, IN, H = 5, 3, 4, 6
    rec = nn.Recurrent(nn.GRUStep(IN, H), policy=F64).init(seed=2)
    p = {k[len("step."):]: t.numpy() for k, t in rec.parameters().items()}
    tg = torch.nn.GRU(IN, H, dtype=torch.float64)
    cell = torch.nn.GRUCell(IN, H, dtype=torch.float64)
    with torch.no_grad():
        for m, suffix in ((tg, "_l0"), (cell, "")):
            getattr(m, "weight_ih" + suffix).copy_(torch.tensor(p["W_ih"].T))
            getattr(m, "weight_hh" + suffix).copy_(torch.tensor(p["W_hh"].T))
            getattr(m, "bias_ih" + suffix).copy_(torch.tensor(p["b_ih"]))
            getattr(m, "bias_hh" + suffix).copy_(torch.tensor(p["b_hh"]))
    x, h0 = rand(T, N, IN, seed=5), rand(N, H, seed=6)
    # one step against GRUCell
    step = rec.step
    y1 = step.forward(input=x[0], hidden=h0)["output"]
    step.clear()
    np.testing.assert_allclose(ev(y1), cell(torch.tensor(x[0]), torch.tensor(h0)).detach().numpy(),
                               rtol=1e-12)
    # a sequence, forward and backward, against GRU
    tx, th = torch.tensor(x, requires_grad=True), torch.tensor(h0[None], requires_grad=True)
    ty, thn = tg(tx, th)
    out = rec.forward(input=x, hidden=h0)
    np.testing.assert_allclose(ev(out["output"]), ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ev(out["hidden"]), thn[0].detach().numpy(), rtol=1e-12)
    gy, gh = rand(T, N, H, seed=8), rand(N, H, seed=9)
    (ty * torch.tensor(gy)).sum().add((thn[0] * torch.tensor(gh)).sum()).backward()
    g = rec.backward(output=gy, hidden=gh)
    np.testing.assert_allclose(ev(g["input"]), tx.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ev(g["hidden"]), th.grad[0].numpy(), rtol=1e-10)
    grads = {k: ev(v) for k, v in rec.grad_collect().items()}
    np.testing.assert_allclose(grads["step.W_ih"], tg.weight_ih_l0.grad.numpy().T, rtol=1e-10)
    np.testing.assert_allclose(grads["step.W_hh"], tg.weight_hh_l0.grad.numpy().T, rtol=1e-10)
    np.testing.assert_allclose(grads["step.b_ih"], tg.bias_ih_l0.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(grads["step.b_hh"], tg.bias_hh_l0.grad.numpy(), rtol=1e-10)
    rec.neutral_invariant()


def test_linear_and_losses_match_torch():
    torch = pytest.importorskip("torch")
    lin = nn.Linear(4, 3, policy=F64).init(seed=0)
    tl = torch.nn.Linear(4, 3, dtype=torch.float64)
    with torch.no_grad():
        tl.weight.copy_(torch.tensor(lin.parameters()["W"].numpy().T))
        tl.bias.copy_(torch.tensor(lin.parameters()["b"].numpy()))
    x, t = rand(5, 4), np.array([0, 2, 1, 1, 0])
    tx = torch.tensor(x, requires_grad=True)
    tloss = torch.nn.functional.cross_entropy(tl(tx), torch.tensor(t))
    tloss.backward()
    ce = nn.CrossEntropy(policy=F64)
    value = ce.forward(input=lin.forward(input=x)["output"], target=t)["output"]
    np.testing.assert_allclose(ev(value), tloss.item(), rtol=1e-12)
    g = lin.backward(output=ce.backward(output=1.0)["input"])["input"]
    np.testing.assert_allclose(ev(g), tx.grad.numpy(), rtol=1e-12)
    grads = lin.grad_collect()
    np.testing.assert_allclose(ev(grads["W"]), tl.weight.grad.numpy().T, rtol=1e-12)
    np.testing.assert_allclose(ev(grads["b"]), tl.bias.grad.numpy(), rtol=1e-12)
    for layer, tf in [(nn.Sigmoid, torch.sigmoid), (nn.Tanh, torch.tanh), (nn.ReLU, torch.relu),
                      (nn.Softmax, lambda v: torch.softmax(v, -1)),
                      (nn.LogSoftmax, lambda v: torch.log_softmax(v, -1))]:
        lay = layer(policy=F64)
        tx = torch.tensor(x, requires_grad=True)
        ty = tf(tx)
        np.testing.assert_allclose(ev(lay.forward(input=x)["output"]), ty.detach().numpy(),
                                   rtol=1e-12)
        gy = rand(5, 4, seed=3)
        ty.backward(torch.tensor(gy))
        np.testing.assert_allclose(ev(lay.backward(output=gy)["input"]), tx.grad.numpy(),
                                   rtol=1e-12, atol=1e-15)
    nll = nn.NLLLoss(policy=F64)
    logp = np.log(np.full((5, 4), 0.25)) + x * 0.1
    tx = torch.tensor(logp, requires_grad=True)
    tl2 = torch.nn.functional.nll_loss(tx, torch.tensor(t))
    tl2.backward()
    np.testing.assert_allclose(ev(nll.forward(input=logp, target=t)["output"]), tl2.item())
    np.testing.assert_allclose(ev(nll.backward(output=1.0)["input"]), tx.grad.numpy())


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("update,feedback", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("steps", [1, 3])
def test_gru_sequence_merged_products_match_torch(bias, update, feedback, steps):
    # Recurrent over a GRUStep: one input product for all steps, one product per
    # weight gradient over all steps; each policy's gradients, with and without bias
    torch = pytest.importorskip("torch")
    N, IN, H = 2, 3, 4
    policy = nn.Policy(update=update, feedback_output=feedback, dtype=np.float64)
    rec = nn.Recurrent(nn.GRUStep(IN, H, bias=bias), policy=policy).init(seed=3)
    p = {k[len("step."):]: t.numpy() for k, t in rec.parameters().items()}
    tg = torch.nn.GRU(IN, H, bias=bias, dtype=torch.float64)
    with torch.no_grad():
        tg.weight_ih_l0.copy_(torch.tensor(p["W_ih"].T))
        tg.weight_hh_l0.copy_(torch.tensor(p["W_hh"].T))
        if bias:
            tg.bias_ih_l0.copy_(torch.tensor(p["b_ih"]))
            tg.bias_hh_l0.copy_(torch.tensor(p["b_hh"]))
    x, h0 = rand(steps, N, IN, seed=10), rand(N, H, seed=11)
    gy, gh = rand(steps, N, H, seed=12), rand(N, H, seed=13)
    tx, th = torch.tensor(x, requires_grad=True), torch.tensor(h0[None], requires_grad=True)
    ty, thn = tg(tx, th)
    (ty * torch.tensor(gy)).sum().add((thn[0] * torch.tensor(gh)).sum()).backward()
    out = rec.forward(input=x, hidden=h0)
    np.testing.assert_allclose(ev(out["output"]), ty.detach().numpy(), rtol=1e-12)
    g = rec.backward(output=gy, hidden=gh)
    grads = {k: ev(v) for k, v in rec.grad_collect().items()}
    if feedback:
        np.testing.assert_allclose(ev(g["input"]), tx.grad.numpy(), rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(ev(g["hidden"]), th.grad[0].numpy(), rtol=1e-10, atol=1e-14)
    else:
        assert g == {}
    if update:
        names = ["W_ih", "W_hh", "b_ih", "b_hh"] if bias else ["W_ih", "W_hh"]
        assert list(grads) == [f"step.{n}" for n in names]  # the parameters' order
        for n in names:
            tgrad = getattr(tg, {"W_ih": "weight_ih_l0", "W_hh": "weight_hh_l0",
                                 "b_ih": "bias_ih_l0", "b_hh": "bias_hh_l0"}[n]).grad.numpy()
            np.testing.assert_allclose(grads[f"step.{n}"], tgrad.T if n[0] == "W" else tgrad,
                                       rtol=1e-10, atol=1e-14)
    else:
        assert grads == {}
    rec.neutral_invariant()


@pytest.mark.parametrize("steps", [1, 3, 5])
def test_gru_sequence_products_per_evaluation(steps):
    # per step only the recurrent products (h W_hh forward, its gradient back);
    # the input gates and the hidden weights' gradient are one product over
    # all steps, the input gradient and the input weights' gradient two (r's
    # and z's gates, n's), and no statement evaluates shared work again
    rec = nn.Recurrent(nn.GRUStep(3, 4), policy=nn.Policy(update=True, feedback_output=True))
    rec.init(seed=0)
    x, h0 = rand(steps, 2, 3, seed=1).astype(np.float32), rand(2, 4, seed=2).astype(np.float32)
    out = rec.forward(input=x, hidden=h0)
    g = rec.backward(output=np.ones((steps, 2, 4), np.float32), hidden=np.ones((2, 4), np.float32))
    exprs = [out["output"], g["input"], g["hidden"], *rec.grad_collect().values()]
    pyet.stats(reset=True)
    pyet.evaluate_all(exprs)
    assert pyet.stats()["gemm_calls"] == 2 * steps + 6
