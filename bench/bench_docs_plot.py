"""The documentation's benchmark plot: pyet's time over NumPy's for the README's
elementwise trees and the seed's update, across sizes, one thread each.  From the
repository root:

    python -P bench/bench_docs_plot.py [--quick] [--out docs/_static/bench_ratios.png]

Prints the table it plots (ratio = pyet / NumPy, lower is better) and writes the
PNG (needs matplotlib: pip install --group docs).  Competitors are interleaved and
each time is the minimum of several repeats (timing.bench).
"""

import argparse
import datetime
import os
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import bench, cpu_model  # noqa: E402


def cases(pyet, n):
    rng = np.random.default_rng(0)
    x, y, z = (rng.random(n) for _ in range(3))
    X, Y, Z = (pyet.asarray(a) for a in (x, y, z))
    out, o = pyet.empty(n), np.empty(n)
    w32, g32 = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    W, G = pyet.asarray(w32.copy()), pyet.asarray(g32)

    def set_out(e):
        out[...] = e

    return [
        ("w = -eta*(g + lam*w) f32",
         lambda: W.__setitem__(Ellipsis, -0.1 * (G + 0.01 * W)),
         lambda: w32.__setitem__(Ellipsis, -0.1 * (g32 + 0.01 * w32))),
        ("2*x + 3*y", lambda: set_out(2 * X + 3 * Y), lambda: np.add(2 * x, 3 * y, out=o)),
        ("x*y + y*z - z", lambda: set_out(X * Y + Y * Z - Z),
         lambda: np.subtract(x * y + y * z, z, out=o)),
        ("1/(1+exp(-x))", lambda: set_out(1 / (1 + pyet.exp(-X))),
         lambda: np.divide(1, 1 + np.exp(-x), out=o)),
        ("tanh(x)*y + sqrt(z)", lambda: set_out(pyet.tanh(X) * Y + pyet.sqrt(Z)),
         lambda: np.add(np.tanh(x) * y, np.sqrt(z), out=o)),
        ("sum(x*y + z)", lambda: float(pyet.sum(X * Y + Z)), lambda: float(np.sum(x * y + z))),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    parser.add_argument("--out", default="docs/_static/bench_ratios.png")
    opts = parser.parse_args()
    import pyet

    pyet.set_num_threads(1)
    sizes = [10**3, 10**5, 10**7] if opts.quick else [10, 10**3, 10**4, 10**5, 10**6, 10**7]
    repeats, min_time = (3, 0.01) if opts.quick else (7, 0.03)
    print(f"pyet/NumPy, one thread, {datetime.datetime.now():%Y-%m-%d %H:%M}; "
          f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs), {platform.system()}; "
          f"pyet {pyet.__version__}, numpy {np.__version__}")
    ratios = {}
    for n in sizes:
        for name, fp, fn in cases(pyet, n):
            t = bench({"pyet": fp, "numpy": fn}, repeats, min_time)
            ratios.setdefault(name, []).append(t["pyet"] / t["numpy"])
    print(f"{'case (float64 unless noted)':<28}" + "".join(f"{n:>9.0e}" for n in sizes))
    for name, rs in ratios.items():
        print(f"{name:<28}" + "".join(f"{r:9.2f}" for r in rs))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    for name, rs in ratios.items():
        ax.plot(sizes, rs, marker="o", label=name)
    ax.axhline(1.0, color="gray", linewidth=1, linestyle="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("elements per array")
    ax.set_ylabel("pyet time / NumPy time (lower is better)")
    ax.set_title("pyet against NumPy, one thread")
    ax.legend(fontsize=8)
    fig.tight_layout()
    Path(opts.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(opts.out)
    print(f"wrote {opts.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
