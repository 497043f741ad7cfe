"""The same call at different stack depths: NumPy's SIMD math loops and pyet's
passes that call them.  Run from the repository root:

    python -P bench/bench_call_depth.py [--size N] [--depths K] [--ops tan,expm1,...]

On some CPUs (measured on AMD Zen 4) NumPy's SVML loops (tan, expm1, sinh,
cosh, arctanh, ...) run 1.3-2.8x slower when the C stack under them lies at
certain addresses: the same ``np.tan(a, out=o)`` is slow when called under a
few particular Python call depths and not under the others, and which depths
differ from process to process.  pyet's passes call the same loops (ops.NUMPY_LOOPS)
from frames of their own, at another stack address than NumPy's ufunc call,
so in any one process a function can be slow in one library and not in the
other; the performance grid's lone outliers of these ops (2.2x in its process,
1.0x alone) are this.  Each op here is timed at ``--depths`` call depths
(nested C-level calls, ``map`` with a lambda: each level moves the C stack by a
few hundred bytes), NumPy and pyet in turn at each depth, on one thread's CPU
time.  Printed per op: each library's median time over the depths, how many
depths ran more than 1.25x that median, and pyet/NumPy of the medians.  A
benchmark, not a test.
"""

import argparse
import statistics
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import cpu_model, times_by_depth, use_cpu_time  # noqa: E402

import pyet  # noqa: E402
from pyet._core.ops import NUMPY_LOOPS, OPS_BY_NAME  # noqa: E402

SLOW = 1.25  # a depth this much above the op's median time is a slow one


def op_cases(size, names):
    """(label, NumPy call, pyet call) for each one-operand op of ``names``."""
    rng = np.random.default_rng(0)
    for name in names:
        row = OPS_BY_NAME[name]
        if row.arity != 1:
            continue
        lo, hi = row.domain[0].lo, row.domain[0].hi
        for dt in (np.float64, np.float32):
            a = rng.uniform(lo, hi, size).astype(dt)
            out = np.empty_like(a)
            A, D, f = pyet.asarray(a), pyet.asarray(out), getattr(np, name)
            expr = getattr(pyet, name)(A)

            def f_numpy(f=f, a=a, out=out):
                f(a, out=out)

            def f_pyet(D=D, expr=expr):
                D[...] = expr

            yield f"{name} {np.dtype(dt).name}", f_numpy, f_pyet


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1 << 18, help="elements per call")
    ap.add_argument("--depths", type=int, default=24, help="call depths 0 .. K-1")
    ap.add_argument("--ops", help="comma-separated op names (default: ops.NUMPY_LOOPS)")
    args = ap.parse_args()
    use_cpu_time()
    pyet.set_num_threads(1)
    names = args.ops.split(",") if args.ops else sorted(NUMPY_LOOPS)
    print(f"call depths 0..{args.depths - 1}, {args.size} elements, one thread; {cpu_model()}; "
          f"numpy {np.__version__}")
    print(f"{'op':18s} {'np med us':>9} {'np slow':>7} {'np worst':>8} {'pyet med':>9} "
          f"{'pyet slow':>9} {'pyet worst':>10} {'pyet/np':>7}")
    totals = {"numpy": [0, 0], "pyet": [0, 0]}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for label, f_numpy, f_pyet in op_cases(args.size, names):
            times = times_by_depth({"numpy": f_numpy, "pyet": f_pyet}, args.depths, 3, 0.002)
            line = [f"{label:18s}"]
            for k in ("numpy", "pyet"):
                med = statistics.median(times[k])
                slow = sum(t > SLOW * med for t in times[k])
                totals[k][0] += slow
                totals[k][1] += len(times[k])
                line.append(f"{med * 1e6:9.1f} {slow:7d} {max(times[k]) / med:8.2f}")
            ratio = statistics.median(times["pyet"]) / statistics.median(times["numpy"])
            print(" ".join(line) + f" {ratio:7.2f}")
    for k, (slow, n) in totals.items():
        print(f"{k}: {slow} of {n} (op, depth) runs above {SLOW}x the op's median")


if __name__ == "__main__":
    main()
