"""EvalPlan benchmark (issue 9, section 7).  Run from the repository root:

    python -P bench/bench_plan.py [--quick] [--cpu-time]

1. An Adam step on 1e7 float32 parameters as one plan (three statements, one multi-output pass)
   against a hand-written fused C loop of the same update (bench/adam_step.c, compiled here),
   the three statements as three C loops (what fusing them can gain at best), the same three
   statements run one by one (no plan), NumPy with out= buffers, and PyTorch's
   torch.optim.Adam with foreach=False and fused=True (optional: skipped without torch).
2. Two structurally equal trees y1 = sigmoid(dot(x, W) + b), y2 = 2 * sigmoid(dot(x, W) + b)
   (built separately) in one plan (one gemm) against evaluating them separately.
3. Registering and running a plan of ten small statements (n = 100) against running them one by
   one: the plan's fixed cost.
4. Three products of the same shapes in one plan (x @ W1, x @ W2, x @ W3: a GRU step's gates,
   32x128 @ 128x128, and an MLP layer's size, 64x256 @ 256x256, float32): as separate gemm
   calls (what a plan does), as one batched call over the weights side by side
   (x @ [W1 W2 W3], with the weights' concatenation counted, and with the weights stored
   concatenated), and side by side on two threads (each gemm from its own Python thread, one
   OpenBLAS thread each): which measures faster decides what the plan does.

One thread everywhere.  Competitors are interleaved; each time is the minimum over repeats, and
for the small cases the median and 90th percentile of single calls are printed too.  Ratios are
pyet's time over the other's: below 1 means pyet is faster.  ``--cpu-time`` times sections 1-3
on the thread's CPU time (other jobs of a busy machine left out; section 4, which runs two
threads, stays on wall time).
"""

import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
# one BLAS thread per call (section 4 runs two calls side by side)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import bench, cpu_model, loop_time, use_cpu_time  # noqa: E402

# -fno-math-errno lets sqrtf vectorize; results are unchanged (errno only)
CFLAGS = ["-O3", "-shared", "-fPIC", "-ffp-contract=off", "-fno-math-errno"]
LR, B1, B2, EPS = 1e-3, 0.9, 0.999, 1e-8


def build_adam(tmpdir):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if not cc:
        return None
    src = Path(__file__).resolve().parent / "adam_step.c"
    so = Path(tmpdir) / "adam_step.so"
    try:
        subprocess.run([cc, *CFLAGS, str(src), "-o", str(so), "-lm"], check=True,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    lib = ctypes.CDLL(str(so))
    f = ctypes.c_float
    lib.AdamStep.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_ssize_t] + [f] * 8
    lib.AdamThreeLoops.argtypes = lib.AdamStep.argtypes
    return lib


def single_calls(fn, calls=300):
    """Median and 90th percentile of single calls (seconds)."""
    times = [loop_time(fn, 1) for _ in range(calls)]
    return float(np.median(times)), float(np.percentile(times, 90))


def adam_case(pyet, lib, n, repeats, min_time):
    rng = np.random.default_rng(0)
    w, g, m = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    v = np.abs(rng.standard_normal(n)).astype(np.float32)
    W, G, M, V = (pyet.asarray(a) for a in (w, g, m, v))
    t = 10
    bc1, bc2 = 1 - B1 ** t, 1 - B2 ** t

    def statements():
        return [(M, B1 * M + (1 - B1) * G), (V, B2 * V + (1 - B2) * G * G),
                (W, W - LR * (M / bc1) / (pyet.sqrt(V / bc2) + EPS))]

    def f_plan():
        plan = pyet.EvalPlan()
        for dst, e in statements():
            plan.assign(dst, e)
        plan.run()

    def f_one_by_one():
        for dst, e in statements():
            dst[...] = e

    t1, t2 = np.empty_like(w), np.empty_like(w)

    def f_numpy():
        np.multiply(m, B1, out=m)
        np.multiply(g, 1 - B1, out=t1)
        np.add(m, t1, out=m)
        np.multiply(v, B2, out=v)
        np.multiply(g, g, out=t1)
        np.multiply(t1, 1 - B2, out=t1)
        np.add(v, t1, out=v)
        np.divide(v, bc2, out=t1)
        np.sqrt(t1, out=t1)
        np.add(t1, EPS, out=t1)
        np.divide(m, bc1, out=t2)
        np.multiply(t2, LR, out=t2)
        np.divide(t2, t1, out=t2)
        np.subtract(w, t2, out=w)

    fns = {"plan": f_plan, "one by one": f_one_by_one, "NumPy out=": f_numpy}
    if lib is not None:
        args = [ctypes.c_void_p(a.ctypes.data) for a in (w, g, m, v)]
        consts = [ctypes.c_float(x) for x in (LR, B1, 1 - B1, B2, 1 - B2, bc1, bc2, EPS)]
        fns["C loop"] = lambda: lib.AdamStep(*args, ctypes.c_ssize_t(n), *consts)
        fns["C three loops"] = lambda: lib.AdamThreeLoops(*args, ctypes.c_ssize_t(n), *consts)
    try:
        import torch
        torch.set_num_threads(1)
        for name, kw in (("torch foreach=False", {"foreach": False}),
                         ("torch fused=True", {"fused": True})):
            p = torch.nn.Parameter(torch.from_numpy(w.copy()))
            p.grad = torch.from_numpy(g.copy())
            try:
                opt = torch.optim.Adam([p], lr=LR, betas=(B1, B2), eps=EPS, **kw)
                opt.step()
            except (RuntimeError, TypeError) as exc:
                print(f"  ({name} unavailable: {exc})")
                continue
            fns[name] = opt.step
    except ImportError:
        pass
    best = bench(fns, repeats, min_time)
    return best


def sigmoid_pair_case(pyet, repeats, min_time):
    rng = np.random.default_rng(1)
    x, W = rng.standard_normal((256, 256)), rng.standard_normal((256, 256)) / 16
    b = rng.standard_normal(256)
    X, Wt, B = (pyet.asarray(a) for a in (x, W, b))
    y1, y2 = np.empty((256, 256)), np.empty((256, 256))

    def f_plan():
        plan = pyet.EvalPlan()
        plan.assign(y1, pyet.sigmoid(pyet.dot(X, Wt) + B))
        plan.assign(y2, 2 * pyet.sigmoid(pyet.dot(X, Wt) + B))
        plan.run()

    def f_separate():
        pyet.evaluate(pyet.sigmoid(pyet.dot(X, Wt) + B), out=y1)
        pyet.evaluate(2 * pyet.sigmoid(pyet.dot(X, Wt) + B), out=y2)

    return bench({"plan": f_plan, "separately": f_separate}, repeats, min_time), \
        {"plan": single_calls(f_plan), "separately": single_calls(f_separate)}


def small_plan_case(pyet, repeats, min_time):
    rng = np.random.default_rng(2)
    arrs = [rng.standard_normal(100) for _ in range(6)]
    T = [pyet.asarray(a) for a in arrs]
    outs = [np.empty(100) for _ in range(10)]

    def trees():
        return [T[k % 6] * 2 + T[(k + 1) % 6] for k in range(10)]

    def f_plan():
        plan = pyet.EvalPlan()
        for o, e in zip(outs, trees(), strict=True):
            plan.assign(o, e)
        plan.run()

    def f_one_by_one():
        for o, e in zip(outs, trees(), strict=True):
            pyet.evaluate(e, out=o)

    return bench({"plan": f_plan, "one by one": f_one_by_one}, repeats, min_time), \
        {"plan": single_calls(f_plan, 2000), "one by one": single_calls(f_one_by_one, 2000)}


def same_shape_products_case(pyet, repeats, min_time):
    """Section 4: the three ways to run same-shape products (see the docstring)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        return [(f"{m}x{k} @ {k}x{k} x3", _products(pyet, pool, m, k, repeats, min_time))
                for m, k in ((32, 128), (64, 256))]


def _products(pyet, pool, m, k, repeats, min_time):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((m, k), dtype=np.float32)
    ws = [rng.standard_normal((k, k), dtype=np.float32) for _ in range(3)]
    X, Ws = pyet.asarray(x), [pyet.asarray(w) for w in ws]
    Wcat = pyet.asarray(np.concatenate(ws, axis=1))
    outs = [np.empty((m, k), np.float32) for _ in range(3)]
    out3 = np.empty((m, 3 * k), np.float32)

    def separate():
        plan = pyet.EvalPlan()
        for o, w in zip(outs, Ws, strict=True):
            plan.assign(o, pyet.dot(X, w))
        plan.run()

    def batched_with_concat():
        pyet.evaluate(pyet.dot(X, pyet.concatenate(Ws, 1)), out=out3)

    def batched_stored():
        pyet.evaluate(pyet.dot(X, Wcat), out=out3)

    def side_by_side():
        futures = [pool.submit(pyet.evaluate, pyet.dot(X, w), out=o)
                   for o, w in zip(outs[1:], Ws[1:], strict=True)]
        pyet.evaluate(pyet.dot(X, Ws[0]), out=outs[0])
        for f in futures:
            f.result()

    return bench({"separate gemms (plan)": separate,
                  "one call, concatenating": batched_with_concat,
                  "one call, stored concatenated": batched_stored,
                  "side by side, 2 threads": side_by_side}, repeats, min_time)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time sections 1-3 on this thread's CPU time (a busy machine)")
    args = ap.parse_args()
    use_cpu_time(args.cpu_time)
    import pyet
    pyet.set_num_threads(1)
    n = 1_000_000 if args.quick else 10_000_000
    repeats, min_time = (3, 0.05) if args.quick else (7, 0.2)
    clock = "thread CPU time" if args.cpu_time else "wall time"
    print(f"pyet {pyet.__version__}, numpy {np.__version__}, {cpu_model()}, one thread, {clock}")
    with tempfile.TemporaryDirectory() as tmp:
        lib = build_adam(tmp)
        best = adam_case(pyet, lib, n, repeats, min_time)
    print(f"\n1. Adam step, {n:.0e} float32 parameters (ms; ratio = plan / other)")
    for name, sec in best.items():
        r = best["plan"] / sec
        print(f"  {name:22s} {sec * 1e3:8.2f} ms   {r:6.2f}")
    if "C loop" in best:
        # the floor of "plan / one by one": one fused loop against the statements' own loops
        print(f"  (C loop / C three loops {best['C loop'] / best['C three loops']:.2f}: "
              f"the fused loop's gain on this machine)")
    best, calls = sigmoid_pair_case(pyet, repeats, min_time)
    print("\n2. y1 = sigmoid(dot(x, W) + b), y2 = 2 * sigmoid(dot(x, W) + b), 256x256 float64")
    print_calls(best, calls)
    best, calls = small_plan_case(pyet, repeats, min_time)
    print("\n3. ten statements of n = 100 float64: registering and running a plan")
    print_calls(best, calls)
    use_cpu_time(False)  # two threads: wall time
    print("\n4. three same-shape products, float32 (us; ratio = separate gemms / other, wall time)")
    for label, best in same_shape_products_case(pyet, repeats, min_time):
        print(f"  {label}")
        for name, sec in best.items():
            print(f"    {name:30s} {sec * 1e6:8.1f} us   "
                  f"{best['separate gemms (plan)'] / sec:6.2f}")


def print_calls(best, calls):
    for name, sec in best.items():
        med, p90 = calls[name]
        print(f"  {name:22s} {sec * 1e6:8.1f} us  (median {med * 1e6:.1f}, p90 {p90 * 1e6:.1f})"
              f"   {best['plan'] / sec:6.2f}")

if __name__ == "__main__":
    main()
