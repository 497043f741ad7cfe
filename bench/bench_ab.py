"""Two builds of pyet, A and B, on the README's benchmarks, in alternating processes.

    python bench/bench_ab.py A_SITE_DIR B_SITE_DIR [--rounds 10] [--quick]

Each directory holds an installed pyet (``pip install --target DIR .``, or ``meson install
--destdir``'s site-packages), for example built with and without
``-Csetup-args=-Dc_args=-DPYET_NO_FP_FLAGS`` (no floating-point flags gathered) to measure what
gathering them costs.  A round runs one process per build, A and B in turn (B first on odd
rounds); each process times pyet against NumPy on the seed's update (float32 and float64, four
sizes) and the five expressions of bench_core.py at n = 1e6, one thread, interleaved
min-of-repeats.  pyet/NumPy in one process cancels most of a shared host's drift; the table
gives, per case, the median over rounds of B's ratio over A's, with the 10th and 90th
percentiles of the per-round values, then the median over all cases.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ETA, LAM = 0.1, 0.5
SIZES = [10, 1_000, 100_000, 10_000_000]


def child(quick):
    """Run in the build under test: {case: pyet time / NumPy time}."""
    sys.path.insert(0, str(HERE))
    from timing import bench

    import pyet

    pyet.set_num_threads(1)
    repeats, min_time = (3, 0.005) if quick else (7, 0.02)
    rng = np.random.default_rng(0)
    ratios = {}
    for dt in (np.float32, np.float64):
        for n in SIZES:
            w, g = rng.random(n).astype(dt), rng.random(n).astype(dt)
            tmp = np.empty_like(w)
            pw, pg = pyet.asarray(w.copy()), pyet.asarray(g)

            def numpy_update(w=w, g=g, tmp=tmp):
                np.multiply(w, LAM, out=tmp)
                np.add(g, tmp, out=tmp)
                np.multiply(tmp, -ETA, out=w)

            def pyet_update(pw=pw, pg=pg):
                pw[...] = -ETA * (pg + LAM * pw)

            t = bench({"numpy": numpy_update, "pyet": pyet_update}, repeats, min_time)
            ratios[f"update {np.dtype(dt).name} n={n:g}"] = t["pyet"] / t["numpy"]
    n = 1_000_000
    x, y, z = (rng.random(n) for _ in range(3))
    px, py, pz = (pyet.asarray(a) for a in (x, y, z))
    out, pout = np.empty(n), pyet.empty(n)
    cases = {
        "2*x + 3*y": (lambda: np.add(2 * x, 3 * y, out=out),
                      lambda: pyet.evaluate(2 * px + 3 * py, out=pout)),
        "x*y + y*z - z": (lambda: np.subtract(x * y + y * z, z, out=out),
                          lambda: pyet.evaluate(px * py + py * pz - pz, out=pout)),
        "1/(1+exp(-x))": (lambda: np.divide(1, 1 + np.exp(-x), out=out),
                          lambda: pyet.evaluate(1 / (1 + pyet.exp(-px)), out=pout)),
        "tanh(x)*y + sqrt(z)": (lambda: np.add(np.tanh(x) * y, np.sqrt(z), out=out),
                                lambda: pyet.evaluate(pyet.tanh(px) * py + pyet.sqrt(pz),
                                                      out=pout)),
        "where(x > 0.5, x, y)": (lambda: np.copyto(out, np.where(x > 0.5, x, y)),
                                 lambda: pyet.evaluate(pyet.where(px > 0.5, px, py), out=pout)),
    }
    for name, (numpy_fn, pyet_fn) in cases.items():
        t = bench({"numpy": numpy_fn, "pyet": pyet_fn}, repeats, min_time)
        ratios[name] = t["pyet"] / t["numpy"]
    return ratios


def run_build(site, quick):
    env = dict(os.environ, PYTHONPATH=str(site), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-P", str(Path(__file__).resolve()), "--child"]
    if quick:
        cmd.append("--quick")
    res = subprocess.run(cmd, env=env, cwd=HERE.parent, capture_output=True, text=True,
                         check=True)
    return json.loads(res.stdout.splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", nargs="?", help="site directory of build A")
    parser.add_argument("b", nargs="?", help="site directory of build B")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        print(json.dumps(child(opts.quick)))
        return 0
    if not (opts.a and opts.b):
        parser.error("give the site directories of builds A and B")
    per_round = []
    for r in range(opts.rounds):
        order = ("a", "b") if r % 2 == 0 else ("b", "a")
        got = {k: run_build(getattr(opts, k), opts.quick) for k in order}
        per_round.append({case: got["b"][case] / got["a"][case] for case in got["a"]})
        print(f"round {r + 1}/{opts.rounds} done", file=sys.stderr, flush=True)
    print(f"B/A over {opts.rounds} rounds (pyet/NumPy of B over pyet/NumPy of A; "
          f"below 1: B is faster)")
    print(f"A = {opts.a}\nB = {opts.b}")
    print(f"{'case':<28}{'median':>8}{'p10':>8}{'p90':>8}")
    medians = []
    for case in per_round[0]:
        v = np.array([rnd[case] for rnd in per_round])
        medians.append(np.median(v))
        print(f"{case:<28}{np.median(v):8.3f}{np.percentile(v, 10):8.3f}"
              f"{np.percentile(v, 90):8.3f}")
    print(f"{'median over cases':<28}{np.median(medians):8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
