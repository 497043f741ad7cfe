"""pyet on 2 threads against pyet on 1 (issue 5, section 1).  Run from the repository root:

    python -P bench/bench_threads.py [--quick]

Rows: tanh(x)*y + sqrt(z) at n = 1e6 float64 (target: 2 threads <= 0.6x 1 thread), the seed's
update weight[...] = -eta * (grad + lam * weight) at n = 1e7 float32 (target <= 0.8x), and for
reference a row softmax and a row sum.  Both thread counts run interleaved in one process; the
ratio is the 2-thread time over the 1-thread time.  Memory-bound rows (the update) are limited by
the machine's memory bandwidth, which on a shared host changes from run to run.
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


def cases(pyet):
    rng = np.random.default_rng(0)
    x, y, z = (pyet.asarray(rng.random(1_000_000)) for _ in range(3))
    out = pyet.empty(1_000_000)
    w = pyet.asarray(rng.random(10_000_000, dtype=np.float32))
    g = pyet.asarray(rng.random(10_000_000, dtype=np.float32))
    s = pyet.asarray(rng.random((1000, 1000), dtype=np.float32))
    s_out = pyet.empty((1000, 1000), np.float32)
    m = pyet.asarray(rng.random((2000, 2000)))
    m_out = pyet.empty(2000)

    def tanh_tree():
        out[...] = pyet.tanh(x) * y + pyet.sqrt(z)

    def update():
        w[...] = -0.1 * (g + 0.01 * w)

    def softmax():
        s_out[...] = pyet.softmax(s)

    def row_sum():
        m_out[...] = pyet.sum(m, axis=1)

    return [("tanh(x)*y + sqrt(z), 1e6 f64", tanh_tree, 0.6),
            ("w = -eta*(g + lam*w), 1e7 f32", update, 0.8),
            ("softmax(x), 1000x1000 f32", softmax, None),
            ("sum(a, axis=1), 2000x2000 f64", row_sum, None)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    opts = parser.parse_args()
    repeats, min_time = (3, 0.01) if opts.quick else (9, 0.05)
    import pyet

    print(f"pyet threads benchmark, {datetime.datetime.now():%Y-%m-%d %H:%M}")
    print(f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs), {platform.system()}; "
          f"pyet {pyet.__version__}, numpy {np.__version__}")
    print(f"min of {repeats} interleaved repeats of >= {min_time * 1e3:g} ms loops\n")
    print(f"{'case':<34}{'1 thread [s]':>14}{'2 threads [s]':>15}{'2T/1T':>8}{'target':>8}")
    for name, fn, target in cases(pyet):
        def one(fn=fn):
            pyet.set_num_threads(1)
            fn()

        def two(fn=fn):
            pyet.set_num_threads(2)
            fn()

        t = bench({"1": one, "2": two}, repeats, min_time)
        ratio = t["2"] / t["1"]
        mark = "" if target is None else f"{target:8.2f}" + ("!" if ratio > target else "")
        print(f"{name:<34}{t['1']:14.3e}{t['2']:15.3e}{ratio:8.2f}{mark}", flush=True)
    if pyet.get_num_threads() < 2:
        print("note: this pyet runs on one thread only (no OpenMP, or a thread limit is set)")
    print("'!': target missed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
