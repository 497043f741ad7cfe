"""pyet matrix-product benchmark (issue 3, section 5).  Run from the repository root:

    python -P bench/bench_dot.py [--quick] [--threads N]

Table 1: C[...] = pyet.dot(A, B) into a preallocated C against NumPy's np.matmul(A, B, out=C) and
the plain A @ B, for float32/float64 square matrices n = 64, 256, 1024.  The `gemm` column calls
pyet's BLAS entry point (pyet._blas.gemm_into, scipy's OpenBLAS) directly: the kernel alone,
without pyet's tree dispatch, so `pyet/gemm` is pyet's own overhead and `gemm/np-out` is the
difference between the two OpenBLAS builds (scipy's vs NumPy's).
Table 2: C[...] = 0.5 * pyet.dot(A.T, B) + C (one gemm, alpha 0.5, beta 1) against NumPy's
0.5 * (A.T @ B) + C, NumPy's A.T @ B alone, and NumPy with out= buffers.
Table 3 (one thread): the small products of the nets (the MLP's and the GRU's shapes) on pyet's
AVX-512 register tiles (gemm.h) against the same call with the tiles switched off (scipy's
OpenBLAS) and NumPy's np.matmul with out=; A C-ordered or a transposed view.

BLAS threads are left at their defaults unless --threads is given (threadpoolctl then limits
every BLAS and OpenMP pool in the process).  NumPy and scipy each bundle their own OpenBLAS; the
header shows what threadpoolctl sees.  The machine is shared and noisy, so the competitors are
interleaved and each time is the minimum over several repeats of a loop sized to take >= 20 ms
(like timeit's autorange).  Ratios are pyet's time over the other's: below 1 means pyet faster.
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

SIZES = [64, 256, 1024]
DTYPES = [np.float32, np.float64]


def ratio(a, b, width=10):
    return f"{a / b:{width}.2f}" if a and b else f"{'n/a':>{width}}"


def gflops(n, t):
    return 2.0 * n ** 3 / t / 1e9


def rtol_for(dtype, n):
    return (1e-5 if dtype == np.float32 else 1e-12) * max(1, n) ** 0.5 * 10


def plain_case(pyet, n, dtype, repeats, min_time):
    from pyet._kernels import blas as _blas

    rng = np.random.default_rng(n)
    a, b = rng.random((n, n)).astype(dtype), rng.random((n, n)).astype(dtype)
    c = np.empty((n, n), dtype)
    A, B, C = pyet.asarray(a), pyet.asarray(b), pyet.asarray(c)
    a3, b3, c3 = a[None], b[None], c[None]

    def f_pyet():
        C[...] = pyet.dot(A, B)

    fns = {
        "pyet": f_pyet,
        "gemm": lambda: _blas.gemm_into(c3, a3, b3, 1.0, 0.0),
        "np_out": lambda: np.matmul(a, b, out=c),
        "np": lambda: a @ b,
    }
    want = a @ b
    for k in ("pyet", "gemm", "np_out"):
        c[...] = np.nan
        fns[k]()
        np.testing.assert_allclose(c, want, rtol=rtol_for(dtype, n), err_msg=f"{k} n={n}")
    return bench(fns, repeats, min_time)


def fused_case(pyet, n, dtype, repeats, min_time):
    rng = np.random.default_rng(n + 1)
    a, b = rng.random((n, n)).astype(dtype), rng.random((n, n)).astype(dtype)
    c0 = rng.random((n, n)).astype(dtype)
    c, tmp = c0.copy(), np.empty((n, n), dtype)
    A, B, C = pyet.asarray(a), pyet.asarray(b), pyet.asarray(c)

    def f_pyet():
        C[...] = 0.5 * pyet.dot(A.T, B) + C

    def f_np_out():
        np.matmul(a.T, b, out=tmp)
        np.multiply(tmp, 0.5, out=tmp)
        np.add(tmp, c, out=c)

    fns = {
        "pyet": f_pyet,
        "np": lambda: 0.5 * (a.T @ b) + c,
        "np_AtB": lambda: a.T @ b,
        "np_out": f_np_out,
    }
    want = 0.5 * (a.T @ b) + c0
    f_pyet()
    np.testing.assert_allclose(c, want, rtol=rtol_for(dtype, n), err_msg=f"fused n={n}")
    c[...] = c0
    f_np_out()
    np.testing.assert_allclose(c, want, rtol=rtol_for(dtype, n), err_msg=f"np_out n={n}")
    c[...] = c0  # C grows by 0.5*A.T@B per call: linear, no overflow in any timing loop
    return bench(fns, repeats, min_time)


# (m, k, n) of the nets' products: the GRU's per-step ones, the MLP's layers
TILE_SHAPES = [(32, 128, 384), (32, 384, 128), (64, 64, 128), (64, 128, 128), (256, 64, 128),
               (256, 128, 128), (512, 64, 256), (8, 512, 512)]


# (m, k, n) of few outputs over a long K, B column-major: the dot tiles (a
# convolution's weight gradient dY @ cols^T; the demo CNN's first is 16 x 16384 x 9)
DOTS_SHAPES = [(16, 16384, 9), (32, 4096, 9), (32, 4096, 16), (3, 100000, 2)]


def tiles_case(pyet, shape, dtype, transposed, repeats, min_time, b_columns=False):
    from pyet._kernels import blas as _blas

    m, k, n = shape
    rng = np.random.default_rng(0)
    a = rng.standard_normal((k, m)).astype(dtype).T if transposed else \
        rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    if b_columns:
        b = np.asfortranarray(b)
    a_, b_ = pyet.asarray(a), pyet.asarray(b)
    c, c_np = pyet.asarray(np.empty((m, n), dtype)), np.empty((m, n), dtype)

    def with_tiles(on):
        def f():
            _blas._set_tiles(on)
            c[...] = pyet.dot(a_, b_)
        return f

    fns = {"tiles": with_tiles(True), "blas": with_tiles(False),
           "np_out": lambda: np.matmul(a, b, out=c_np)}
    try:
        for f in fns.values():
            f()
            np.testing.assert_allclose(c.numpy(), a @ b, rtol=rtol_for(dtype, k))
        return bench(fns, repeats, min_time)
    finally:
        _blas._set_tiles(True)


def blas_description():
    try:
        import threadpoolctl
    except ImportError:
        return ["threadpoolctl not installed: BLAS builds and thread counts unknown"]
    lines = []
    for info in threadpoolctl.threadpool_info():
        owner = Path(info.get("filepath", "?")).parent.name.replace(".libs", "")
        lines.append(f"  {info.get('internal_api')} {info.get('version')} "
                     f"({owner}: {Path(info.get('filepath', '?')).name}), "
                     f"{info.get('num_threads')} threads"
                     + (f", {info['architecture']} kernels" if info.get("architecture") else ""))
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    parser.add_argument("--threads", type=int, default=None,
                        help="limit every BLAS/OpenMP pool to N threads (threadpoolctl)")
    opts = parser.parse_args()
    repeats, min_time = (3, 0.005) if opts.quick else (7, 0.02)
    import scipy

    import pyet

    # Evaluate one product first: pyet may load scipy's BLAS lazily, and threadpoolctl only sees
    # (and limits) libraries already loaded.
    np.asarray(pyet.dot(np.ones((2, 2)), np.ones((2, 2))))
    np.asarray(pyet.dot(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32)))
    limiter = None
    if opts.threads is not None:
        import threadpoolctl
        limiter = threadpoolctl.threadpool_limits(opts.threads)

    print(f"pyet matrix-product benchmark, {datetime.datetime.now():%Y-%m-%d %H:%M}")
    print(f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs), {platform.system()}, "
          f"load average {os.getloadavg()[0]:.2f} (other processes compete with BLAS threads)")
    print(f"Python {platform.python_version()}, pyet {getattr(pyet, '__version__', '?')}, "
          f"numpy {np.__version__}, scipy {scipy.__version__}")
    print("BLAS/OpenMP pools (threadpoolctl"
          + (f", limited to {opts.threads} threads" if limiter else ", defaults") + "):")
    print("\n".join(blas_description()))
    print(f"min of {repeats} interleaved repeats of >= {min_time * 1e3:g} ms loops; "
          "ratio < 1: pyet faster\n")

    print("C[...] = pyet.dot(A, B)   (np-out: np.matmul(A, B, out=C); np: A @ B; "
          "gemm: pyet._blas.gemm_into alone)")
    head = ["dtype", "n", "pyet [s]", "GFLOP/s", "pyet/np", "pyet/np-out", "pyet/gemm",
            "gemm/np-out"]
    print(f"{head[0]:<8}{head[1]:>6}{head[2]:>11}{head[3]:>9}"
          + "".join(f"{h:>12}" for h in head[4:]))
    for dtype in DTYPES:
        for n in SIZES:
            t = plain_case(pyet, n, dtype, repeats, min_time)
            print(f"{np.dtype(dtype).name:<8}{n:>6}{t['pyet']:>11.3e}{gflops(n, t['pyet']):>9.1f}"
                  f"{ratio(t['pyet'], t['np'], 12)}{ratio(t['pyet'], t['np_out'], 12)}"
                  f"{ratio(t['pyet'], t['gemm'], 12)}{ratio(t['gemm'], t['np_out'], 12)}",
                  flush=True)
    print("sanity: pyet's, gemm's and np-out's results equal NumPy's (assert_allclose) "
          "before timing\n")

    print("C[...] = 0.5 * pyet.dot(A.T, B) + C   (np: 0.5 * (A.T @ B) + C; np-AtB: A.T @ B "
          "alone; np-out: matmul/multiply/add with out=)")
    head = ["dtype", "n", "pyet [s]", "pyet/np", "pyet/np-AtB", "pyet/np-out"]
    print(f"{head[0]:<8}{head[1]:>6}{head[2]:>11}" + "".join(f"{h:>12}" for h in head[3:]))
    for dtype in DTYPES:
        for n in SIZES:
            t = fused_case(pyet, n, dtype, repeats, min_time)
            print(f"{np.dtype(dtype).name:<8}{n:>6}{t['pyet']:>11.3e}"
                  f"{ratio(t['pyet'], t['np'], 12)}{ratio(t['pyet'], t['np_AtB'], 12)}"
                  f"{ratio(t['pyet'], t['np_out'], 12)}", flush=True)
    print("sanity: pyet's and np-out's results equal NumPy's (assert_allclose) before timing\n")

    # one thread: pyet's passes, and BLAS's pools where threadpoolctl can limit them
    threads = pyet.get_num_threads()
    pyet.set_num_threads(1)
    try:
        import threadpoolctl
        one = threadpoolctl.threadpool_limits(1, user_api="blas")
    except ImportError:
        one = None
        print("(threadpoolctl not installed: BLAS keeps its threads in table 3)")
    print("C[...] = pyet.dot(A, B), the nets' shapes, one thread   (tiles: gemm.h's register "
          "tiles; blas: the same call on scipy's OpenBLAS; np-out: np.matmul(A, B, out=C))")
    head = ["dtype", "m x k x n", "A", "tiles [s]", "tiles/blas", "tiles/np-out", "blas/np-out"]
    print(f"{head[0]:<8}{head[1]:>16}{head[2]:>5}{head[3]:>11}"
          + "".join(f"{h:>13}" for h in head[4:]))
    for dtype in DTYPES:
        for shape in TILE_SHAPES:
            for transposed in (False, True):
                t = tiles_case(pyet, shape, dtype, transposed, repeats, min_time)
                print(f"{np.dtype(dtype).name:<8}{'x'.join(map(str, shape)):>16}"
                      f"{'A.T' if transposed else 'A':>5}{t['tiles']:>11.3e}"
                      f"{ratio(t['tiles'], t['blas'], 13)}{ratio(t['tiles'], t['np_out'], 13)}"
                      f"{ratio(t['blas'], t['np_out'], 13)}", flush=True)
    print("sanity: each result equals NumPy's (assert_allclose) before timing\n")
    print("C[...] = pyet.dot(A, B), few outputs over a long K, B column-major, one thread   "
          "(tiles: gemm.h's dot tiles; blas and np-out as above)")
    print(f"{head[0]:<8}{head[1]:>16}{head[3]:>11}" + "".join(f"{h:>13}" for h in head[4:]))
    for dtype in DTYPES:
        for shape in DOTS_SHAPES:
            t = tiles_case(pyet, shape, dtype, False, repeats, min_time, b_columns=True)
            print(f"{np.dtype(dtype).name:<8}{'x'.join(map(str, shape)):>16}{t['tiles']:>11.3e}"
                  f"{ratio(t['tiles'], t['blas'], 13)}{ratio(t['tiles'], t['np_out'], 13)}"
                  f"{ratio(t['blas'], t['np_out'], 13)}", flush=True)
    print("sanity: each result equals NumPy's (assert_allclose) before timing")
    if one is not None:
        one.restore_original_limits()
    pyet.set_num_threads(threads)
    if limiter is not None:
        limiter.restore_original_limits()
    return 0


if __name__ == "__main__":
    sys.exit(main())
