"""pyet reductions, softmax and im2col benchmark (issue 4).  Run from the repository root:

    python -P bench/bench_reduce.py [--quick]

Each row times pyet against NumPy in the same run, on one thread (pyet.set_num_threads(1); NumPy's
reductions and exp are single-threaded), and again with pyet on two threads:

    sum over axis 0, axis 1 and all of a 2000x2000 float64   out[...] = pyet.sum(A, axis)
        against np.sum(a, axis, out=out)                                         target <= 1.0
    pyet.sum(a*b + c) over 2000x2000 float64 (one pass, no temporary)
        against np.sum(a*b + c)                                                  target <= 0.5
    row softmax of a 1000x1000 float32          out[...] = pyet.softmax(X)
        against e = np.exp(x - x.max(1, keepdims=True)); e / e.sum(1, keepdims=True)
                                                                                 target <= 0.5

plus rows without a target (row max, argmax of a tree, im2col against a sliding_window_view
im2col).  Every result is checked against NumPy's before timing.  The machine is shared and
noisy, so the competitors are interleaved and each time is the minimum over several repeats of a
loop sized to take >= 20 ms (like timeit's autorange).  Ratios are pyet's time over NumPy's:
below 1 means pyet is faster.
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


class Case:
    """One row: pyet's and NumPy's way to compute the same array, and a target ratio."""

    def __init__(self, name, f_pyet, f_numpy, result, rtol, target=None):
        self.name, self.f_pyet, self.f_numpy = name, f_pyet, f_numpy
        self.result, self.rtol, self.target = result, rtol, target

    def check(self):
        """pyet's result equals NumPy's (assert_allclose) before anything is timed."""
        want = np.array(self.f_numpy(), copy=True)
        self.f_pyet()
        np.testing.assert_allclose(self.result(), want, rtol=self.rtol, err_msg=self.name)


def sum_cases(pyet):
    rng = np.random.default_rng(0)
    a, b, c = (rng.random((2000, 2000)) for _ in range(3))
    A, B, C = map(pyet.asarray, (a, b, c))
    cases = []
    for axis in (0, 1, None):
        out = np.empty(np.sum(a, axis=axis).shape)
        Out = pyet.asarray(out)

        def f_pyet(Out=Out, axis=axis):
            Out[...] = pyet.sum(A, axis=axis)

        def f_numpy(out=out, axis=axis):
            return np.sum(a, axis=axis, out=out)

        cases.append(Case(f"sum(a, axis={axis}), 2000x2000 f64", f_pyet, f_numpy,
                          lambda out=out: out, 1e-12, 1.0))
    tree_out = np.empty(())
    Tree = pyet.asarray(tree_out)

    def f_tree():
        Tree[...] = pyet.sum(A * B + C)

    cases.append(Case("sum(a*b + c), 2000x2000 f64", f_tree, lambda: np.sum(a * b + c),
                      lambda: tree_out, 1e-12, 0.5))
    row_max = np.empty(2000)
    RowMax = pyet.asarray(row_max)

    def f_max():
        RowMax[...] = pyet.max(A, axis=1)

    cases.append(Case("max(a, axis=1), 2000x2000 f64", f_max,
                      lambda: np.max(a, axis=1, out=row_max), lambda: row_max, 0))
    arg = np.empty(2000, np.int64)
    Arg = pyet.asarray(arg)

    def f_arg():
        Arg[...] = pyet.argmax(A * B + C, axis=1)

    cases.append(Case("argmax(a*b + c, axis=1), 2000x2000", f_arg,
                      lambda: np.argmax(a * b + c, axis=1), lambda: arg, 0))
    return cases


def softmax_cases(pyet):
    rng = np.random.default_rng(1)
    x = rng.uniform(-5.0, 5.0, (1000, 1000)).astype(np.float32)
    out = np.empty_like(x)
    X, Out = pyet.asarray(x), pyet.asarray(out)

    def f_pyet():
        Out[...] = pyet.softmax(X)

    def f_numpy():
        e = np.exp(x - x.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    return [Case("softmax(x), rows, 1000x1000 f32", f_pyet, f_numpy, lambda: out, 1e-5, 0.5)]


def im2col_numpy(img, ky, kx):
    """im2col with NumPy: sliding_window_view, then one copy into MShadow's layout
    (rows (c*ky + py)*kx + px, columns (n*oH + oy)*oW + ox)."""
    win = np.lib.stride_tricks.sliding_window_view(img, (ky, kx), axis=(2, 3))
    n, c, oh, ow = win.shape[:4]
    return win.transpose(1, 4, 5, 0, 2, 3).reshape(c * ky * kx, n * oh * ow)


def nn_cases(pyet):
    rng = np.random.default_rng(2)
    img = rng.random((32, 16, 32, 32), dtype=np.float32)
    Img = pyet.asarray(img)
    out = np.empty((16 * 9, 32 * 30 * 30), np.float32)
    Out = pyet.asarray(out)

    def f_pyet():
        Out[...] = pyet.unpack_patch2col(Img, 3, 3)

    return [Case("im2col 3x3 of (32,16,32,32) f32", f_pyet, lambda: im2col_numpy(img, 3, 3),
                 lambda: out, 0)]


def ratio(a, b):
    return f"{a / b:8.2f}" if a and b else f"{'n/a':>8}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    opts = parser.parse_args()
    repeats, min_time = (3, 0.005) if opts.quick else (7, 0.02)
    import pyet

    pyet.set_num_threads(2)
    two = pyet.get_num_threads()
    pyet.set_num_threads(1)
    print(f"pyet reductions benchmark, {datetime.datetime.now():%Y-%m-%d %H:%M}")
    print(f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs), {platform.system()}")
    print(f"Python {platform.python_version()}, pyet {getattr(pyet, '__version__', '?')}, "
          f"numpy {np.__version__}")
    print(f"pyet on 1 thread (1T) and on {two} thread{'s' if two > 1 else ''} (2T); NumPy on one; "
          f"min of {repeats} interleaved repeats of >= {min_time * 1e3:g} ms loops; "
          "ratio < 1: pyet faster\n")
    print(f"{'case':<38}{'pyet 1T [s]':>12}{'numpy [s]':>12}{'1T/np':>8}{'target':>8}"
          f"{'pyet 2T [s]':>12}{'2T/np':>8}")
    missed = []
    for case in sum_cases(pyet) + softmax_cases(pyet) + nn_cases(pyet):
        case.check()
        t = bench({"pyet": case.f_pyet, "np": case.f_numpy}, repeats, min_time)
        t2 = None
        if two > 1:
            pyet.set_num_threads(2)
            try:
                case.check()
                t2 = bench({"pyet": case.f_pyet}, repeats, min_time)["pyet"]
            finally:
                pyet.set_num_threads(1)
        target = f"{case.target:8.2f}" if case.target else f"{'-':>8}"
        if case.target and t["pyet"] / t["np"] > case.target:
            missed.append(case.name)
            target = target[:-1] + "!"
        two_col = f"{t2:12.3e}{ratio(t2, t['np'])}" if t2 else f"{'n/a':>12}{'n/a':>8}"
        print(f"{case.name:<38}{t['pyet']:12.3e}{t['np']:12.3e}{ratio(t['pyet'], t['np'])}"
              f"{target}{two_col}", flush=True)
    print("sanity: every pyet result equals NumPy's (assert_allclose) before timing; "
          "'!': 1-thread target missed")
    if missed:
        print(f"targets missed: {', '.join(missed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
