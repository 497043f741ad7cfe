"""pyet on 2 threads against pyet on 1 (issue 5, section 1).  Run from the repository root:

    python -P bench/bench_threads.py [--quick] [--busy]

``--busy`` (issue 14): the update and tanh(x)*y + sqrt(z) at n = 1e6, each timed call by
call (a few hundred single calls, 1 and 2 threads alternating), on a quiet machine, then
while one and while two CPU-bound processes run; it prints the median and the 90th
percentile of each and the 2-thread/1-thread ratios (targets: busy, median <= 1.15 and
90th percentile <= 1.5; quiet, <= 0.6).

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


def _spin():
    while True:
        pass


def busy_cases(pyet, c_loop):
    rng = np.random.default_rng(1)
    n = 1_000_000
    x, y, z = (pyet.asarray(rng.random(n)) for _ in range(3))
    out = pyet.empty(n)
    w = pyet.asarray(rng.random(n, dtype=np.float32))
    g = pyet.asarray(rng.random(n, dtype=np.float32))
    wc, gc = w.numpy().copy(), g.numpy().copy()

    def update():
        w[...] = -0.1 * (g + 0.01 * w)

    def update_c():  # the same loop compiled with OpenMP, on as many threads as pyet
        c_loop.UpdateWeightThreads(gc.ctypes.data, 0.1, 0.01, n, wc.ctypes.data,
                                   pyet.get_num_threads())

    def tanh_tree():
        out[...] = pyet.tanh(x) * y + pyet.sqrt(z)

    rows = [("w = -eta*(g + lam*w), 1e6 f32", update)]
    if c_loop is not None:
        rows.append(("  the same, C loop with OpenMP", update_c))
    return rows + [("tanh(x)*y + sqrt(z), 1e6 f64", tanh_tree)]


def single_calls(pyet, fn, calls):
    """Per-call times of fn on 1 and on 2 threads, alternating call by call."""
    import time

    times = {1: [], 2: []}
    for i in range(calls):
        for nt in ((1, 2) if i % 2 else (2, 1)):
            pyet.set_num_threads(nt)
            t0 = time.perf_counter()
            fn()
            times[nt].append(time.perf_counter() - t0)
    return {k: np.array(v) for k, v in times.items()}


def busy(pyet, calls):
    import multiprocessing as mp
    import tempfile

    from bench_core import build_c_loop

    tmp = tempfile.TemporaryDirectory()
    c_loop, why = build_c_loop(tmp.name, ["-fopenmp"])
    if c_loop is None:
        print(f"no C loop row: {why}")

    print(f"single calls ({calls} per thread count, alternating); ratio = 2 threads / 1 thread")
    print(f"{'load':<12}{'case':<32}{'1T med':>10}{'2T med':>10}{'med 2T/1T':>11}"
          f"{'1T p90':>10}{'2T p90':>10}{'p90 2T/1T':>11}")
    ctx = mp.get_context("spawn")
    spinners = []
    try:
        for load in range(3):
            while len(spinners) < load:
                p = ctx.Process(target=_spin, daemon=True)
                p.start()
                spinners.append(p)
            label = "quiet" if load == 0 else f"{load} busy"
            for name, fn in busy_cases(pyet, c_loop):
                for _ in range(20):
                    fn()  # warm up (and let the spinners start)
                t = single_calls(pyet, fn, calls)
                m1, m2 = np.median(t[1]), np.median(t[2])
                p1, p2 = np.percentile(t[1], 90), np.percentile(t[2], 90)
                print(f"{label:<12}{name:<32}{m1:10.2e}{m2:10.2e}{m2 / m1:11.2f}"
                      f"{p1:10.2e}{p2:10.2e}{p2 / p1:11.2f}", flush=True)
    finally:
        for p in spinners:
            p.terminate()
            p.join()
    print("targets: busy, median <= 1.15 and p90 <= 1.5; quiet, median <= 0.6 (the C loop's row:")
    print("what two threads give this memory-bound update on this machine)")
    tmp.cleanup()
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    parser.add_argument("--busy", action="store_true",
                        help="single calls while 0, 1 and 2 CPU-bound processes run")
    parser.add_argument("--calls", type=int, default=300, help="single calls per case (--busy)")
    opts = parser.parse_args()
    if opts.busy:
        import pyet

        print(f"pyet threads on a busy machine, {datetime.datetime.now():%Y-%m-%d %H:%M}")
        print(f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs), {platform.system()}; "
              f"pyet {pyet.__version__}, numpy {np.__version__}")
        return busy(pyet, opts.calls)
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
