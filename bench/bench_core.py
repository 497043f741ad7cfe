"""pyet core benchmark (issue 2, section 8).  Run from the repository root:

    python -P bench/bench_core.py [--quick]

Table 1: the seed's update  weight[...] = -eta * (grad + lam * weight)  in float32 and float64,
pyet against the seed's hand-written loop (bench/update_weight.c, compiled here with -O3 and
loaded with ctypes), the NumPy one-liner, NumPy with out= buffers and numexpr on one thread.
Table 2: five expressions at n = 1e6 float64, pyet (into a preallocated out) against NumPy and
numexpr (one thread, out=).  Everything runs single-threaded (OMP_NUM_THREADS=1).

The machine is shared and noisy, so the competitors are interleaved and each time is the minimum
over several repeats of a loop sized to take >= 20 ms (like timeit's autorange).  Ratios are
pyet's time over the other's: below 1 means pyet is faster.
"""

import argparse
import ctypes
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import bench, cpu_model  # noqa: E402

try:
    import numexpr as ne
except ImportError:
    ne = None

ETA, LAM = 0.1, 0.5
SIZES = [10, 1_000, 100_000, 10_000_000]
EXPRS = ["2*x + 3*y", "x*y + y*z - z", "1/(1+exp(-x))", "tanh(x)*y + sqrt(z)",
         "where(x > 0.5, x, y)"]
CFLAGS = ["-O3", "-shared", "-fPIC", "-ffp-contract=off"]


def compile_c(tmpdir, name, extra_flags=()):
    """Compile bench/<name>.c into tmpdir: (ctypes library, compiler, version) or (None, reason)."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        return None, "no C compiler found", ""
    src, so = Path(__file__).with_name(f"{name}.c"), Path(tmpdir) / f"{name}.so"
    try:
        subprocess.run([cc, *CFLAGS, *extra_flags, str(src), "-o", str(so), "-lm"], check=True,
                       capture_output=True)
        version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
        return ctypes.CDLL(str(so)), cc, version
    except (OSError, subprocess.CalledProcessError) as e:
        return None, f"compiling with {cc} failed: {e}", ""


def build_c_loop(tmpdir, extra_flags=()):
    """Compile update_weight.c into tmpdir: (ctypes library, description) or (None, reason)."""
    lib, cc, version = compile_c(tmpdir, "update_weight", extra_flags)
    if lib is None:
        return None, cc
    for name, ct in (("UpdateWeight", ctypes.c_float), ("UpdateWeightD", ctypes.c_double)):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ct, ct, ctypes.c_ssize_t, ctypes.c_void_p]
        getattr(lib, name).restype = None
    lib.UpdateWeightThreads.argtypes = [ctypes.c_void_p, ctypes.c_float, ctypes.c_float,
                                        ctypes.c_ssize_t, ctypes.c_void_p, ctypes.c_int]
    lib.UpdateWeightThreads.restype = None
    flags = " ".join([*CFLAGS, *extra_flags])
    return lib, f"{version.splitlines()[0]}: {Path(cc).name} {flags}"


def ratio(a, b, width=12):
    return f"{a / b:{width}.2f}" if a and b else f"{'n/a':>{width}}"


def update_case(pyet, lib, n, dtype, repeats, min_time):
    """Time the seed's update for one (n, dtype); check every result against NumPy's first."""
    rng = np.random.default_rng(0)
    grad, w0 = rng.random(n).astype(dtype), rng.random(n).astype(dtype)
    weight, tmp = w0.copy(), np.empty_like(w0)
    W, G = pyet.asarray(weight), pyet.asarray(grad)
    eta, lam = ETA, LAM  # Python floats: weak scalars, a float32 update stays float32

    def f_pyet():
        W[...] = -eta * (G + lam * W)

    def f_np():
        weight[...] = -eta * (grad + lam * weight)

    def f_np_out():
        np.multiply(lam, weight, out=tmp)
        np.add(grad, tmp, out=tmp)
        np.multiply(-eta, tmp, out=weight)

    fns = {"pyet": f_pyet, "C": None, "np": f_np, "np_out": f_np_out, "ne": None}
    if lib is not None:
        cfn, ct = ((lib.UpdateWeight, ctypes.c_float) if dtype == np.float32
                   else (lib.UpdateWeightD, ctypes.c_double))
        args = (ctypes.c_void_p(grad.ctypes.data), ct(eta), ct(lam), ctypes.c_ssize_t(n),
                ctypes.c_void_p(weight.ctypes.data))
        fns["C"] = lambda: cfn(*args)
    if ne is not None:
        local = {"eta": dtype(eta), "lam": dtype(lam), "grad": grad, "weight": weight}
        fns["ne"] = lambda: ne.evaluate("-eta*(grad+lam*weight)", local_dict=local, out=weight)
    results = {}
    for k, f in fns.items():
        if f is not None:
            weight[...] = w0
            f()
            results[k] = weight.copy()
    rtol = 1e-6 if dtype == np.float32 else 1e-13
    for k, res in results.items():
        np.testing.assert_allclose(res, results["np"], rtol=rtol, err_msg=f"{k} != numpy")
    exact = {k: np.array_equal(res, results["np"]) for k, res in results.items()}
    weight[...] = w0  # repeated updates converge to a fixed point: no overflow, no denormals
    return bench(fns, repeats, min_time), exact


def expr_case(pyet, src, n, repeats, min_time, cfn=None):
    """Time one expression at size n in float64 (``cfn``: its hand-written loop,
    expr_loops.c); check pyet's, the loop's and numexpr's results first."""
    rng = np.random.default_rng(1)
    x, y, z = (rng.random(n) for _ in range(3))
    out = np.empty(n)
    funcs = ("exp", "tanh", "sqrt", "where")
    np_ns = {"x": x, "y": y, "z": z, **{f: getattr(np, f) for f in funcs}}
    et_ns = {"x": pyet.asarray(x), "y": pyet.asarray(y), "z": pyet.asarray(z),
             "O": pyet.asarray(out), **{f: getattr(pyet, f) for f in funcs}}
    exec(f"def f_pyet():\n    O[...] = {src}\n", et_ns)
    exec(f"def f_np():\n    return {src}\n", np_ns)
    fns = {"pyet": et_ns["f_pyet"], "np": np_ns["f_np"], "ne": None, "C": None}
    if ne is not None:
        fns["ne"] = lambda: ne.evaluate(src, local_dict={"x": x, "y": y, "z": z}, out=out)
    if cfn is not None:
        args = [ctypes.c_void_p(a.ctypes.data) for a in (x, y, z)]
        args += [ctypes.c_ssize_t(n), ctypes.c_void_p(out.ctypes.data)]
        fns["C"] = lambda: cfn(*args)
    expected = fns["np"]()
    for k in ("pyet", "ne", "C"):
        if fns[k] is not None:
            out[...] = np.nan
            fns[k]()
            np.testing.assert_allclose(out, expected, rtol=1e-12, err_msg=f"{k}: {src}")
    return bench(fns, repeats, min_time)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    opts = parser.parse_args()
    repeats, min_time = (3, 0.005) if opts.quick else (7, 0.02)
    os.environ["OMP_NUM_THREADS"] = "1"  # the targets are single-threaded; set before import
    import pyet

    if ne is not None:
        ne.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmpdir:
        lib, cc_desc = build_c_loop(tmpdir)
        print(f"pyet core benchmark, {datetime.datetime.now():%Y-%m-%d %H:%M}")
        print(f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs), {platform.system()}")
        print(f"Python {platform.python_version()}, pyet {getattr(pyet, '__version__', '?')}, "
              f"numpy {np.__version__}, "
              f"numexpr {ne.__version__ + ' (1 thread)' if ne else 'n/a'}")
        print(f"C loop: {cc_desc}" if lib else f"C loop: n/a ({cc_desc})")
        print(f"OMP_NUM_THREADS=1; min of {repeats} interleaved repeats of >= "
              f"{min_time * 1e3:g} ms loops; ratio < 1: pyet faster\n")

        print("weight[...] = -eta * (grad + lam * weight)   "
              "(np-out: np.multiply/np.add with out= buffers; ne: numexpr)")
        head = ["dtype", "n", "pyet [s]", "pyet/C", "pyet/np", "pyet/np-out", "pyet/ne", "C/np"]
        print(f"{head[0]:<8}{head[1]:>9}{head[2]:>11}" + "".join(f"{h:>12}" for h in head[3:]))
        inexact = set()
        for dtype in (np.float32, np.float64):
            for n in SIZES:
                t, exact = update_case(pyet, lib, n, dtype, repeats, min_time)
                inexact.update(k for k, ok in exact.items() if not ok)
                tc, tne = t.get("C"), t.get("ne")
                print(f"{np.dtype(dtype).name:<8}{n:>9.0e}{t['pyet']:>11.3e}"
                      f"{ratio(t['pyet'], tc)}{ratio(t['pyet'], t['np'])}"
                      f"{ratio(t['pyet'], t['np_out'])}{ratio(t['pyet'], tne)}"
                      f"{ratio(tc, t['np'])}", flush=True)
        print("sanity: pyet, C loop, numexpr and np-out results equal NumPy's (assert_allclose) "
              "before timing;")
        print(f"        not bit-identical to NumPy: {', '.join(sorted(inexact)) or 'none'}; "
              "C loop called via ctypes (~0.5 us call overhead)\n")

        n = 1_000_000
        loops, _, _ = compile_c(tmpdir, "expr_loops")
        print(f"out[...] = expr, n = {n:.0e} float64   (C: a hand-written loop, expr_loops.c; "
              "np: the one-liner; ne: numexpr, out=)")
        print(f"{'expression':<24}{'pyet [s]':>11}{'np [s]':>11}{'pyet/C':>10}{'pyet/np':>10}"
              f"{'pyet/ne':>10}")
        for i, src in enumerate(EXPRS):
            cfn = None
            if loops is not None:
                cfn = getattr(loops, f"Expr{i}")
                cfn.restype = None
            t = expr_case(pyet, src, n, repeats, min_time, cfn)
            print(f"{src:<24}{t['pyet']:>11.3e}{t['np']:>11.3e}{ratio(t['pyet'], t.get('C'), 10)}"
                  f"{ratio(t['pyet'], t['np'], 10)}{ratio(t['pyet'], t.get('ne'), 10)}",
                  flush=True)
        print("sanity: pyet's, the C loops' and numexpr's results equal NumPy's (assert_allclose) "
              "before timing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
