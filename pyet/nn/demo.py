"""pyet.nn's demo: an MLP and a small CNN trained on scikit-learn's 8x8 digits.

Run ``python -P -m pyet.nn.demo`` (needs ``pip install "pyet[demo]"``:
scikit-learn, tqdm, matplotlib).  Each model trains with a tqdm bar showing
the loss and test accuracy per epoch; its weights are saved to ``.npz``,
reloaded into a fresh model and checked to give the same accuracy; a PNG of
loss and accuracy per epoch is written.
"""

import argparse
import os
import sys
import tempfile
import time

import numpy as np

import pyet.nn as nn


def load_digits_split(seed=0):
    """scikit-learn's digits as float32 in [0, 1]: a fixed, stratified 80/20 split."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.2, random_state=seed, stratify=y)


def make_mlp():
    """64-128-128-10 with ReLU."""
    return nn.MLP([64, 128, 128, 10], activation="relu", policy=nn.Policy(update=True))


def make_cnn():
    """conv3x3(16)-relu-maxpool2-conv3x3(32)-relu-maxpool2-flatten-linear(10) on 1x8x8."""
    subs = {
        "conv1": nn.Conv2d(1, 16, 3, padding=1), "relu1": nn.ReLU(), "pool1": nn.MaxPool2d(2),
        "conv2": nn.Conv2d(16, 32, 3, padding=1), "relu2": nn.ReLU(), "pool2": nn.MaxPool2d(2),
        "flat": nn.Flatten(), "fc": nn.Linear(32 * 2 * 2, 10),
    }
    names = list(subs)
    conns = [("input", "conv1.input")]
    conns += [(f"{a}.output", f"{b}.input") for a, b in zip(names, names[1:], strict=False)]
    conns.append(("fc.output", "output"))
    return nn.Compose(subs, conns, policy=nn.Policy(update=True))


def accuracy(model, x, y):
    logits = model.evaluate(input=x)["output"].numpy()
    return float(np.mean(np.argmax(logits, axis=1) == y))


def train(model, optimizer, data, epochs, batch, seed, desc, reshape=None, progress=True):
    """Train with ``nn.train_step``; returns per-epoch (loss, test accuracy)."""
    from tqdm import trange

    x_tr, x_te, y_tr, y_te = data
    if reshape is not None:
        x_tr, x_te = x_tr.reshape(reshape(len(x_tr))), x_te.reshape(reshape(len(x_te)))
    rng = np.random.default_rng(seed)
    loss_fn = nn.CrossEntropy()
    history = {"loss": [], "acc": []}
    bar = trange(epochs, desc=desc, disable=not progress, file=sys.stdout)
    for _ in bar:
        order = rng.permutation(len(x_tr))
        total = 0.0
        for i in range(0, len(order), batch):
            idx = order[i:i + batch]
            total += nn.train_step(model, loss_fn, {"input": x_tr[idx], "target": y_tr[idx]},
                                   optimizer) * len(idx)
        history["loss"].append(total / len(x_tr))
        history["acc"].append(accuracy(model, x_te, y_te))
        bar.set_postfix(loss=f"{history['loss'][-1]:.4f}", test_acc=f"{history['acc'][-1]:.4f}")
    return history, (x_te, y_te)


def check_reload(model, make, test, path):
    """Save, load into a fresh model, compare accuracies; returns both."""
    model.save(path)
    fresh = make()
    fresh.load(path)
    return accuracy(model, *test), accuracy(fresh, *test)


def plot(histories, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for name, h in histories.items():
        epochs = np.arange(1, len(h["loss"]) + 1)
        ax1.plot(epochs, h["loss"], label=name)
        ax2.plot(epochs, 100 * np.asarray(h["acc"]), label=name)
    ax1.set(xlabel="epoch", ylabel="training loss (cross-entropy)", yscale="log")
    ax2.set(xlabel="epoch", ylabel="test accuracy [%]", ylim=(85, 100))
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("pyet.nn on scikit-learn's digits (1797 8x8 images, 80/20 split)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -P -m pyet.nn.demo", description=__doc__.split(
        "\n")[0])
    parser.add_argument("--epochs-mlp", type=int, default=30)
    parser.add_argument("--epochs-cnn", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", default="pyet_nn_demo.png", help="PNG path ('' for none)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
        import sklearn  # noqa: F401
        import tqdm  # noqa: F401
    except ImportError as exc:
        sys.exit(f"the demo needs scikit-learn, tqdm and matplotlib: pip install "
                 f"\"pyet[demo]\" ({exc})")
    import pyet

    threads = pyet.get_num_threads()
    pyet.set_num_threads(1)  # one core: pyet's kernels and, below, BLAS
    try:
        from threadpoolctl import threadpool_limits

        limits = threadpool_limits(1)
    except ImportError:  # without it BLAS may use every core
        limits = None
    try:
        return _run(args)
    finally:  # (main may be called in a process that goes on)
        pyet.set_num_threads(threads)
        if limits is not None:
            limits.restore_original_limits()


def _run(args):
    data = load_digits_split(args.seed)
    results, histories = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, make, opt, epochs, reshape, target in (
            ("MLP 64-128-128-10", make_mlp, lambda m: nn.SGD(m.parameters(), lr=0.05,
                                                             momentum=0.9),
             args.epochs_mlp, None, 0.97),
            ("CNN", make_cnn, lambda m: nn.Adam(m.parameters(), lr=2e-3), args.epochs_cnn,
             lambda n: (n, 1, 8, 8), 0.98),
        ):
            model = make().init(seed=args.seed)
            t0 = time.perf_counter()
            hist, test = train(model, opt(model), data, epochs, 32, args.seed, name, reshape,
                               not args.quiet)
            elapsed = time.perf_counter() - t0
            acc, acc_reloaded = check_reload(model, make, test, os.path.join(tmp, "w.npz"))
            histories[name] = hist
            results[name] = (acc, acc_reloaded, elapsed, target)
    ok = True
    for name, (acc, acc2, elapsed, target) in results.items():
        same = acc == acc2
        ok &= same and acc >= target
        print(f"{name}: test accuracy {100 * acc:.2f}% (target {100 * target:.0f}%) in "
              f"{elapsed:.1f} s; saved, reloaded: {100 * acc2:.2f}% "
              f"({'same' if same else 'DIFFERENT'})")
    if args.plot:
        plot(histories, args.plot)
        print(f"loss and accuracy per epoch: {args.plot}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
