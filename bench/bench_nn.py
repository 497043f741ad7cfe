"""pyet.nn training speed: one epoch of scikit-learn's digits (1437 training
images) with pyet.nn.train_step, against a hand-written NumPy forward/backward
of the same network and (when installed) PyTorch, one thread each; and a GRU
over 50 steps, forward + backward, against torch.nn.GRU.

    python -P bench/bench_nn.py [--quick]

Same architecture, initial weights, batch order and optimizer (SGD, momentum
0.9) for every competitor; each trains a few epochs first and the test
accuracies are printed side by side (they must agree within a point).  Times
are the best of interleaved repeats of one epoch (the machine is shared and
noisy).  Needs scikit-learn for the data.
"""

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import bench, cpu_model  # noqa: E402

import pyet  # noqa: E402
import pyet.nn as nn  # noqa: E402

try:
    import torch
    torch.set_num_threads(1)
except ImportError:
    torch = None

DT = np.float32
LR, MOMENTUM = 0.05, 0.9


def digits():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.data / 16.0).astype(DT)
    return train_test_split(x, d.target.astype(np.int64), test_size=0.2, random_state=0,
                            stratify=d.target)


class Epochs:
    """Batches in a fixed order per epoch (the same for every competitor)."""

    def __init__(self, n, batch, seed=0):
        self.n, self.batch, self.rng = n, batch, np.random.default_rng(seed)
        self.orders = [self.rng.permutation(n) for _ in range(64)]
        self.k = 0

    def next(self):
        order = self.orders[self.k % len(self.orders)]
        self.k += 1
        return [order[i:i + self.batch] for i in range(0, self.n, self.batch)]


# ------------------------------------------------------------ MLP

def mlp_model():
    return nn.MLP([64, 128, 128, 10], activation="relu", policy=nn.Policy(update=True)).init(
        seed=0)


def mlp_weights(model):
    return [t.numpy().copy() for t in model.parameters().values()]  # W1 b1 W2 b2 W3 b3


class PyetTrainer:
    def __init__(self, model, x, y, batch, shape=None):
        self.model, self.x, self.y = model, x if shape is None else x.reshape(shape), y
        self.opt = nn.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
        self.loss = nn.CrossEntropy()
        self.epochs = Epochs(len(x), batch)

    def epoch(self):
        for idx in self.epochs.next():
            nn.train_step(self.model, self.loss, {"input": self.x[idx], "target": self.y[idx]},
                          self.opt)

    def predict(self, x):
        return np.argmax(self.model.evaluate(input=x)["output"].numpy(), 1)


class NumpyTrainer:
    """What the hand-written NumPy networks share: parameters and momentum
    buffers, cross-entropy's gradient, SGD with momentum (PyTorch's update)."""

    def __init__(self, weights, x, y, batch):
        self.p = [w.copy() for w in weights]
        self.v = [np.zeros_like(w) for w in weights]
        self.x, self.y = x, y
        self.epochs = Epochs(len(x), batch)

    def loss_grad(self, z, y):
        # d mean(cross_entropy(z, y)) / dz, and the loss itself, which pyet's
        # train_step and PyTorch's step compute too (the same work)
        m = z.max(1, keepdims=True)
        e = np.exp(z - m)
        s = e.sum(1, keepdims=True)
        rows = np.arange(len(y))
        self.loss = float(np.mean(np.log(s[:, 0]) + m[:, 0] - z[rows, y]))
        dz = e / s
        dz[rows, y] -= 1
        dz /= len(y)
        return dz

    def update(self, grads):
        for p, v, g in zip(self.p, self.v, grads, strict=True):
            v *= MOMENTUM
            v += g
            p -= LR * v

    def epoch(self):
        for idx in self.epochs.next():
            self.step(self.x[idx], self.y[idx])


class NumpyMLP(NumpyTrainer):
    """The same MLP by hand: forward, cross-entropy's gradient, backward, SGD
    with momentum, float32."""

    def forward(self, x):
        W1, b1, W2, b2, W3, b3 = self.p
        a1 = x @ W1 + b1
        h1 = np.maximum(a1, 0)
        a2 = h1 @ W2 + b2
        h2 = np.maximum(a2, 0)
        return h1, h2, h2 @ W3 + b3

    def step(self, x, y):
        W1, b1, W2, b2, W3, b3 = self.p
        h1, h2, z = self.forward(x)
        dz = self.loss_grad(z, y)
        dh2 = (dz @ W3.T) * (h2 > 0)
        dh1 = (dh2 @ W2.T) * (h1 > 0)
        self.update([x.T @ dh1, dh1.sum(0), h1.T @ dh2, dh2.sum(0), h2.T @ dz, dz.sum(0)])

    def predict(self, x):
        return np.argmax(self.forward(x)[2], 1)


class TorchTrainer:
    def __init__(self, module, x, y, batch, shape=None):
        self.m = module
        xs = x if shape is None else x.reshape(shape)
        self.x, self.y = torch.tensor(xs), torch.tensor(y)
        self.opt = torch.optim.SGD(module.parameters(), lr=LR, momentum=MOMENTUM)
        self.epochs = Epochs(len(x), batch)

    def epoch(self):
        for idx in self.epochs.next():
            idx = torch.from_numpy(idx)
            self.opt.zero_grad()
            torch.nn.functional.cross_entropy(self.m(self.x[idx]), self.y[idx]).backward()
            self.opt.step()

    def predict(self, x):
        with torch.no_grad():
            return self.m(torch.tensor(x)).argmax(1).numpy()


def torch_mlp(weights):
    m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128),
                            torch.nn.ReLU(), torch.nn.Linear(128, 10))
    with torch.no_grad():
        for lin, (w, b) in zip([m[0], m[2], m[4]], zip(weights[::2], weights[1::2], strict=True),
                               strict=True):
            lin.weight.copy_(torch.tensor(w.T))
            lin.bias.copy_(torch.tensor(b))
    return m


# ------------------------------------------------------------ CNN

def cnn_model():
    from pyet.nn.demo import make_cnn

    return make_cnn().init(seed=0)


def _pad1(x):
    return np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))


def _cols(xp, h, w):
    """(N, C, h+2, w+2) -> (N*h*w, C*9) patches of 3x3."""
    v = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # N C h w 3 3
    n, c = xp.shape[:2]
    return v.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * w, c * 9)


class NumpyCNN(NumpyTrainer):
    """conv3x3(16)-relu-maxpool2-conv3x3(32)-relu-maxpool2-linear(10) by hand
    (im2col by sliding_window_view, col2im by 9 shifted adds), float32."""

    def __init__(self, weights, x, y, batch):  # weights: cw1 cb1 cw2 cb2 fw fb
        super().__init__(weights, x.reshape(-1, 1, 8, 8), y, batch)

    @staticmethod
    def conv(x, w, b):
        n, c, h, wd = x.shape
        cols = _cols(_pad1(x), h, wd)
        y = cols @ w.reshape(w.shape[0], -1).T + b
        return cols, y.reshape(n, h, wd, -1).transpose(0, 3, 1, 2)

    @staticmethod
    def conv_back(dy, cols, w, x_shape, need_dx):
        n, o, h, wd = dy.shape
        d2 = dy.transpose(0, 2, 3, 1).reshape(-1, o)
        dw = (d2.T @ cols).reshape(w.shape)
        db = d2.sum(0)
        if not need_dx:
            return dw, db, None
        dcols = (d2 @ w.reshape(o, -1)).reshape(n, h, wd, x_shape[1], 3, 3)
        dxp = np.zeros((n, x_shape[1], h + 2, wd + 2), dy.dtype)
        for i in range(3):
            for j in range(3):
                dxp[:, :, i:i + h, j:j + wd] += dcols[..., i, j].transpose(0, 3, 1, 2)
        return dw, db, dxp[:, :, 1:-1, 1:-1]

    @staticmethod
    def pool(a):
        n, c, h, w = a.shape
        return a.reshape(n, c, h // 2, 2, w // 2, 2).max((3, 5))

    @staticmethod
    def pool_back(a, p, dp):
        up = p.repeat(2, 2).repeat(2, 3)
        return (a == up) * dp.repeat(2, 2).repeat(2, 3)

    def forward(self, x):
        cw1, cb1, cw2, cb2, fw, fb = self.p
        cols1, a1 = self.conv(x, cw1, cb1)
        r1 = np.maximum(a1, 0)
        p1 = self.pool(r1)
        cols2, a2 = self.conv(p1, cw2, cb2)
        r2 = np.maximum(a2, 0)
        p2 = self.pool(r2)
        f = p2.reshape(len(x), -1)
        return (cols1, r1, p1, cols2, r2, p2, f), f @ fw + fb

    def step(self, x, y):
        cw1, cb1, cw2, cb2, fw, fb = self.p
        (cols1, r1, p1, cols2, r2, p2, f), z = self.forward(x)
        dz = self.loss_grad(z, y)
        dfw, dfb = f.T @ dz, dz.sum(0)
        dp2 = (dz @ fw.T).reshape(p2.shape)
        da2 = self.pool_back(r2, p2, dp2) * (r2 > 0)
        dcw2, dcb2, dp1 = self.conv_back(da2, cols2, cw2, p1.shape, True)
        da1 = self.pool_back(r1, p1, dp1) * (r1 > 0)
        dcw1, dcb1, _ = self.conv_back(da1, cols1, cw1, x.shape, False)
        self.update([dcw1, dcb1, dcw2, dcb2, dfw, dfb])

    def predict(self, x):
        return np.argmax(self.forward(x.reshape(-1, 1, 8, 8))[1], 1)


def torch_cnn(weights):
    m = torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(128, 10))
    with torch.no_grad():
        m[0].weight.copy_(torch.tensor(weights[0]))
        m[0].bias.copy_(torch.tensor(weights[1]))
        m[3].weight.copy_(torch.tensor(weights[2]))
        m[3].bias.copy_(torch.tensor(weights[3]))
        m[7].weight.copy_(torch.tensor(weights[4].T))
        m[7].bias.copy_(torch.tensor(weights[5]))
    return m


# ------------------------------------------------------------ GRU

def gru_cases(T=50, N=32, I=64, H=128):  # noqa: E741
    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, N, I)).astype(DT)
    h0 = np.zeros((N, H), DT)
    g = rng.standard_normal((T, N, H)).astype(DT)
    rec = nn.Recurrent(nn.GRUStep(I, H), policy=nn.Policy(update=True, feedback_output=True))
    rec.init(seed=0)
    tx, th0 = pyet.asarray(x), pyet.asarray(h0)
    gzero = np.zeros((N, H), DT)

    def run_pyet():
        out = rec.forward(input=tx, hidden=th0)
        grads = rec.backward(output=g, hidden=gzero)
        pg = rec.grad_collect()
        return pyet.evaluate_all([out["output"], grads["input"], *pg.values()])

    # the same trees built once into a kept plan, replayed per call
    out = rec.forward(input=tx, hidden=th0)
    grads = rec.backward(output=g, hidden=gzero)
    plan = pyet.EvalPlan()
    handles = [plan.register(e) for e in (out["output"], grads["input"],
                                          *rec.grad_collect().values())]

    def run_kept():
        plan.run(keep=True)
        return [h.value for h in handles]

    fns = {"pyet": run_pyet, "pyet kept": run_kept}
    check = {}
    if torch is not None:
        p = {k[len("step."):]: t.numpy() for k, t in rec.parameters().items()}
        tg = torch.nn.GRU(I, H)
        with torch.no_grad():
            tg.weight_ih_l0.copy_(torch.tensor(p["W_ih"].T))
            tg.weight_hh_l0.copy_(torch.tensor(p["W_hh"].T))
            tg.bias_ih_l0.copy_(torch.tensor(p["b_ih"]))
            tg.bias_hh_l0.copy_(torch.tensor(p["b_hh"]))
        ttx, tth, tgg = torch.tensor(x, requires_grad=True), torch.tensor(h0[None]), torch.tensor(g)

        def run_torch():
            tg.zero_grad()
            ttx.grad = None
            y, _ = tg(ttx, tth)
            (y * tgg).sum().backward()
            return y, ttx.grad, tg.weight_hh_l0.grad

        fns["torch"] = run_torch
        y, gx, *rest = run_pyet()
        ty, tgx, tw = run_torch()
        check = {"output": np.abs(y.numpy() - ty.detach().numpy()).max(),
                 "d input": np.abs(gx.numpy() - tgx.numpy()).max(),
                 "d W_hh": np.abs(rest[1].numpy() - tw.numpy().T).max()}
    return fns, check


# ------------------------------------------------------------ main

def accuracy(trainer, x, y):
    return float(np.mean(trainer.predict(x) == y))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--warm-epochs", type=int, default=3)
    args = parser.parse_args()
    pyet.set_num_threads(1)
    repeats, min_time = (3, 0.05) if args.quick else (7, 0.2)
    x_tr, x_te, y_tr, y_te = digits()
    print(f"# {cpu_model()}; numpy {np.__version__}"
          f"{'; torch ' + torch.__version__ if torch else '; torch not installed'}; one thread")
    print(f"# one epoch = {len(x_tr)} images; SGD lr {LR} momentum {MOMENTUM}; times: best of "
          f"{repeats} interleaved repeats")
    print(f"{'case':28s} {'pyet [s]':>10s} {'numpy [s]':>10s} {'pyet/np':>8s} {'torch [s]':>10s} "
          f"{'pyet/torch':>10s}   test accuracy after {args.warm_epochs} epochs (pyet/np/torch)")
    for name, make, weights_of, np_cls, torch_make, shape in (
        ("MLP 64-128-128-10", mlp_model, mlp_weights, NumpyMLP, torch_mlp, None),
        ("CNN (demo's)", cnn_model, mlp_weights, NumpyCNN, torch_cnn, (-1, 1, 8, 8)),
    ):
        for batch in (32, 256):
            model = make()
            w = weights_of(model)
            trainers = {"pyet": PyetTrainer(model, x_tr, y_tr, batch, shape),
                        "numpy": np_cls(w, x_tr, y_tr, batch)}
            if torch is not None:
                trainers["torch"] = TorchTrainer(torch_make(w), x_tr, y_tr, batch, shape)
            for _ in range(args.warm_epochs):
                for t in trainers.values():
                    t.epoch()
            xt = x_te if shape is None else x_te.reshape(shape)
            accs = {k: accuracy(t, xt if k != "numpy" else x_te, y_te)
                    for k, t in trainers.items()}
            times = bench({k: t.epoch for k, t in trainers.items()}, repeats, min_time)
            print(row(f"{name}, batch {batch}", times) + "   " +
                  " / ".join(f"{100 * a:.1f}" for a in accs.values()))
    fns, check = gru_cases()
    times = bench(fns, repeats, min_time)
    print(row("GRU T=50 N=32 64->128 f+b", times) + "   max |pyet - torch|: " +
          ", ".join(f"{k} {v:.1e}" for k, v in check.items()))
    print(row("  the same, kept plan", dict(times, pyet=times["pyet kept"])) +
          "   (trees built once, replayed per call)")


def row(name, times):
    p, n, t = times["pyet"], times.get("numpy"), times.get("torch")
    cells = [f"{name:28s}", f"{p:10.3e}", f"{n:10.3e}" if n else f"{'-':>10s}",
             f"{p / n:8.2f}" if n else f"{'-':>8s}", f"{t:10.3e}" if t else f"{'-':>10s}",
             f"{p / t:10.2f}" if t else f"{'-':>10s}"]
    return " ".join(cells)


if __name__ == "__main__":
    main()
