"""Value and gradients: pyet.value_and_grad against a hand-written NumPy forward and
backward pass and PyTorch CPU autograd (when installed), one thread each.

    python -P bench/bench_grad.py [--quick]

Cases: ``sum(sigmoid(x @ W + b) * t)`` (gradients w.r.t. W and b) and a 3-layer MLP's
softmax cross-entropy loss (widths 64-256-256-10, ReLU; gradients w.r.t. all six weights),
each at batch 64 and 512, float32.  pyet two ways: the trees built on every call and passed
to value_and_grad (as PyTorch builds its graph; it replays the evaluation it recorded for the
tree's structure), and built once into a kept EvalPlan that each call replays.  Every
competitor's gradients are checked against NumPy's first.  The machine is shared and
noisy: competitors are interleaved and each keeps its best of the repeats; the script
repeats the whole measurement and prints the median ratio.
"""

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import bench, cpu_model  # noqa: E402

import pyet  # noqa: E402

DT = np.float32


def data(batch, seed=0):
    rng = np.random.default_rng(seed)

    def mat(*s):
        return (rng.standard_normal(s) / np.sqrt(s[0])).astype(DT)

    return {"x": mat(batch, 64), "W1": mat(64, 256), "b1": mat(256) * 0.1,
            "W2": mat(256, 256), "b2": mat(256) * 0.1, "W3": mat(256, 10), "b3": mat(10) * 0.1,
            "t": rng.uniform(0, 1, (batch, 256)).astype(DT),
            "labels": rng.integers(0, 10, batch)}


# ----------------------------------------------------------------- sigmoid layer

def sig_trees(d):
    x, W, b, t = (pyet.asarray(d[k]) for k in ("x", "W1", "b1", "t"))

    def build():
        return pyet.sum(pyet.sigmoid(x @ W + b) * t), [W, b]
    return build


def per_call(trees):
    """pyet.value_and_grad on trees built on every call (as PyTorch builds its graph):
    after the first call, a replay of the evaluation recorded for their structure."""
    build = trees

    def run():
        return pyet.value_and_grad(*build())
    return run


def kept(trees):
    """The value and gradient trees built once into a kept EvalPlan; each call replays
    it over the operands' memory as it is then (a training loop's way: pyet.nn's
    train_step)."""
    y, wrt = trees()
    plan = pyet.EvalPlan()
    hy = plan.register(y)
    hg = [plan.register(g) for g in pyet.grad(y, wrt)]

    def run():
        plan.run(keep=True)
        return hy.value, [h.value for h in hg]
    return run


def sig_numpy(d):
    x, W, b, t = d["x"], d["W1"], d["b1"], d["t"]

    def run():
        s = 1 / (1 + np.exp(-(x @ W + b)))
        loss = np.sum(s * t)
        dz = t * s * (1 - s)
        return loss, [x.T @ dz, dz.sum(0)]
    return run


def sig_torch(d, torch):
    x, t = torch.from_numpy(d["x"]), torch.from_numpy(d["t"])
    W, b = (torch.from_numpy(d[k]).requires_grad_() for k in ("W1", "b1"))

    def run():
        W.grad = b.grad = None
        loss = torch.sum(torch.sigmoid(x @ W + b) * t)
        loss.backward()
        return loss.detach(), [W.grad, b.grad]
    return run


# ------------------------------------------------------------------------ MLP

NAMES = ("W1", "b1", "W2", "b2", "W3", "b3")


def mlp_trees(d):
    x = pyet.asarray(d["x"])
    ws = [pyet.asarray(d[k]) for k in NAMES]
    labels = d["labels"]

    def build():
        W1, b1, W2, b2, W3, b3 = ws
        h1 = pyet.relu(x @ W1 + b1)
        h2 = pyet.relu(h1 @ W2 + b2)
        logp = pyet.log_softmax(h2 @ W3 + b3, 1)
        return -pyet.mean(pyet.choose_row_element(logp, labels)), ws
    return build


def mlp_numpy(d):
    x, labels = d["x"], d["labels"]
    W1, b1, W2, b2, W3, b3 = (d[k] for k in NAMES)
    n = len(x)
    rows = np.arange(n)

    def run():
        z1 = x @ W1 + b1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ W2 + b2
        h2 = np.maximum(z2, 0)
        z3 = h2 @ W3 + b3
        m = z3.max(1, keepdims=True)
        e = np.exp(z3 - m)
        se = e.sum(1, keepdims=True)
        logp = z3 - m - np.log(se)
        loss = -logp[rows, labels].mean()
        dz3 = e / se
        dz3[rows, labels] -= 1
        dz3 /= n
        dh2 = dz3 @ W3.T
        dz2 = dh2 * (z2 > 0)
        dh1 = dz2 @ W2.T
        dz1 = dh1 * (z1 > 0)
        return loss, [x.T @ dz1, dz1.sum(0), h1.T @ dz2, dz2.sum(0), h2.T @ dz3, dz3.sum(0)]
    return run


def mlp_torch(d, torch):
    x, labels = torch.from_numpy(d["x"]), torch.from_numpy(d["labels"])
    ws = [torch.from_numpy(d[k]).requires_grad_() for k in NAMES]

    def run():
        for w in ws:
            w.grad = None
        W1, b1, W2, b2, W3, b3 = ws
        h = torch.relu(torch.relu(x @ W1 + b1) @ W2 + b2)
        loss = torch.nn.functional.cross_entropy(h @ W3 + b3, labels)
        loss.backward()
        return loss.detach(), [w.grad for w in ws]
    return run


def agree(run, ref):
    loss, grads = run()
    want_loss, want = ref()
    np.testing.assert_allclose(np.asarray(loss), want_loss, rtol=1e-4)
    for g, w in zip(grads, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=2e-3, atol=1e-5 * np.abs(w).max())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    opts = ap.parse_args()
    rounds, repeats, min_time = (1, 3, 0.05) if opts.quick else (5, 5, 0.1)
    pyet.set_num_threads(1)
    try:
        import threadpoolctl
        threadpoolctl.threadpool_limits(1)
    except ImportError:
        pass
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    print(f"{cpu_model()}, numpy {np.__version__}, torch "
          f"{torch.__version__ if torch else 'not installed'}, float32, one thread each")
    print("pyet per call: trees built on every call, value_and_grad (replays by structure); "
          "kept: built once into a kept EvalPlan, replayed")
    print(f"{'case':34} {'pyet [s]':>10} {'numpy [s]':>10} {'pyet/np':>8} {'torch [s]':>10} "
          f"{'pyet/torch':>10}")
    cases = [("sum(sigmoid(x@W+b)*t)", sig_trees, sig_numpy, sig_torch),
             ("MLP 64-256-256-10 CE", mlp_trees, mlp_numpy, mlp_torch)]
    for name, trees, fn, ft in cases:
        for batch in (64, 512):
            d = data(batch)
            fns = {"per call": per_call(trees(d)), "kept": kept(trees(d)), "numpy": fn(d),
                   "torch": ft(d, torch) if torch else None}
            fns = {k: f for k, f in fns.items() if f is not None}
            for k, f in fns.items():
                if k != "numpy":
                    agree(f, fns["numpy"])
            runs = [bench(fns, repeats, min_time) for _ in range(rounds)]
            med = {k: float(np.median([r[k] for r in runs])) for k in runs[0]}
            for way in ("per call", "kept"):
                rp = np.median([r[way] / r["numpy"] for r in runs])
                line = (f"{name + f', {batch}, {way}':34} {med[way]:10.3e} "
                        f"{med['numpy']:10.3e} {rp:8.2f}")
                if "torch" in med:
                    rt = np.median([r[way] / r["torch"] for r in runs])
                    line += f" {med['torch']:10.3e} {rt:10.2f}"
                print(line, flush=True)


if __name__ == "__main__":
    main()
