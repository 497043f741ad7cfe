"""Single calls of special roots against NumPy: the median and 90th percentile
of many single calls (thread CPU time), pyet and NumPy alternating call by
call, for take, concatenate and a small sum -- the fixed Python cost of a
special node that the grid's per-loop minimum hides.  One thread.  Run from
the repository root:

    python -P bench/bench_special_calls.py [--calls 20000] [--size 4096 32768]
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import pyet  # noqa: E402


def cases(n, rng):
    """(name, pyet call, NumPy call) at about n elements."""
    w = rng.random((1000, 64)).astype(np.float32)
    idx = rng.integers(0, 1000, n // 64)
    out = pyet.asarray(np.empty((idx.size, 64), np.float32))
    W = pyet.asarray(w)
    side = int(n ** 0.5)
    a, b = rng.random((side, side)), rng.random((side, side))
    A, B = pyet.asarray(a), pyet.asarray(b)
    joined, joined_np = pyet.asarray(np.empty((2 * side, side))), np.empty((2 * side, side))
    cube = int(round(n ** (1 / 3)))
    c3 = rng.random((cube,) * 3)
    C3 = pyet.asarray(c3)
    summed, summed_np = pyet.asarray(np.empty((cube, cube))), np.empty((cube, cube))
    return [
        (f"take rows f32 {n}", lambda: out.__setitem__(..., pyet.take(idx, W)),
         lambda: np.take(w, idx, axis=0)),
        (f"concatenate axis=0 f64 {n}", lambda: joined.__setitem__(
            ..., pyet.concatenate([A, B], 0)), lambda: np.concatenate([a, b], 0, out=joined_np)),
        (f"sum axis=0 f64 {cube}^3", lambda: summed.__setitem__(..., pyet.sum(C3, axis=0)),
         lambda: np.sum(c3, axis=0, out=summed_np)),
    ]


def single_calls(fp, fn, calls):
    """Per-call thread CPU times (ns) of fp and fn, alternating which goes first."""
    clock = time.thread_time_ns
    tp, tn = [], []
    for _ in range(min(calls // 10, 500)):  # warm up
        fp()
        fn()
    for i in range(calls):
        first, second = (fp, fn) if i & 1 else (fn, fp)
        t0 = clock()
        first()
        t1 = clock()
        second()
        t2 = clock()
        (tp if i & 1 else tn).append(t1 - t0)
        (tn if i & 1 else tp).append(t2 - t1)
    return tp, tn


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--size", type=int, nargs="+", default=[4096, 32768])
    args = ap.parse_args()
    pyet.set_num_threads(1)
    rng = np.random.default_rng(0)
    print(f"{'pyet med':>9}{'p90':>8}{'np med':>9}{'p90':>8}{'ratio med':>10}{'p90':>6}"
          "  case (us, thread CPU time)")
    for n in args.size:
        for name, fp, fn in cases(n, rng):
            tp, tn = single_calls(fp, fn, args.calls)
            pm, nm = statistics.median(tp) / 1e3, statistics.median(tn) / 1e3
            p9, n9 = (statistics.quantiles(t, n=10)[-1] / 1e3 for t in (tp, tn))
            print(f"{pm:9.2f}{p9:8.2f}{nm:9.2f}{n9:8.2f}{pm / nm:10.2f}{p9 / n9:6.2f}  {name}")


if __name__ == "__main__":
    main()
