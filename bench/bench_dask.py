"""pyet on Dask against plain Dask and numexpr-in-map_blocks (issue 11).  From the repository root:

    python -P bench/bench_dask.py [--n 1e8] [--chunk 1e7] [--quick]

Operands are float64 Dask arrays of n elements each, persisted in memory, in chunks of `chunk`
elements; everything runs on Dask's threaded scheduler (one worker thread per core), with pyet
and numexpr on one thread inside each task.  Rows:

    tanh(x)*y + sqrt(z)       .sum() of it (the issue's measurement) and .persist() of it
    w - eta*(g + lam*w)       the seed's update, .sum() and .persist()
    sum(a*b + c, axis=0)      a, b, c of shape (n/10000, 10000), chunks of `chunk` elements
    store over zarr           tanh(x)*y + sqrt(z) over zarr-backed operands into a zarr array
                              (uncompressed, on disk), pyet.dask.store against da.store

Columns: pyet's time (pyet.dask.to_dask), plain Dask's (the same expression on dask arrays), the
ratio pyet/dask (target <= 0.5 for the elementwise rows, <= 0.6 for the reduction), numexpr
through map_blocks and pyet/numexpr; tasks of each graph (len of the graph as built, and after
dask.optimize fuses blockwise layers), and the peak of memory traced by tracemalloc while
computing (NumPy's, pyet's and zarr's buffers).  Times are the minimum of interleaved repeats.
"""

import argparse
import datetime
import os
import platform
import shutil
import sys
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dask  # noqa: E402
import dask.array as da  # noqa: E402
from timing import bench, cpu_model  # noqa: E402

import pyet  # noqa: E402
import pyet.dask  # noqa: E402

try:
    import numexpr as ne
except ImportError:  # the numexpr column is left empty
    ne = None


def tasks(x):
    """(tasks as built, tasks after dask.optimize)."""
    (opt,) = dask.optimize(x)
    return len(x.__dask_graph__()), len(opt.__dask_graph__())


def peak_memory(fn):
    """Peak bytes traced while fn() runs (after what existed before)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - base


def numexpr_blocks(text, *arrays):
    names = "xyzw"[:len(arrays)]

    def block(*parts):
        return ne.evaluate(text, local_dict=dict(zip(names, parts, strict=True)))

    return da.map_blocks(block, *arrays, dtype=arrays[0].dtype)


class Row:
    def __init__(self, name, pyet_x, dask_x, ne_x, finish, target):
        self.name, self.finish, self.target = name, finish, target
        self.graphs = {"pyet": pyet_x, "dask": dask_x, "numexpr": ne_x}

    def calls(self):
        return {k: (lambda x=x: self.finish(x)) for k, x in self.graphs.items() if x is not None}


def run(args):
    n, chunk = int(args.n), int(args.chunk)
    rng = np.random.default_rng(0)
    print(f"# pyet.dask vs plain Dask, {datetime.date.today()}, {cpu_model()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}, "
          f"dask {dask.__version__}" + (f", numexpr {ne.__version__}" if ne else ""))
    print(f"# n = {n:.0e} float64 per operand, persisted; chunks of {chunk:.0e}; threaded "
          "scheduler; pyet and numexpr on 1 thread per task")
    if ne is not None:
        ne.set_num_threads(1)

    def operand(shape, chunks):
        return da.random.default_rng(int(rng.integers(1 << 30))).random(
            shape, chunks=chunks).persist()

    x, y, z = (operand((n,), (chunk,)) for _ in range(3))
    X, Y, Z = (pyet.asarray(a) for a in (x, y, z))
    eta, lam = 0.1, 0.01
    side = 10000
    rows2 = n // side
    chunks2 = (max(chunk // side, 1), side)
    a, b, c = (operand((rows2, side), chunks2) for _ in range(3))
    A, B, C = (pyet.asarray(t) for t in (a, b, c))

    def total(t):
        return float(t.sum().compute())

    def persist(t):
        t.persist()

    def compute(t):
        t.compute()

    tree = pyet.tanh(X) * Y + pyet.sqrt(Z)
    update = X - eta * (Y + lam * X)
    rows = [
        Row("(tanh(x)*y + sqrt(z)).sum()", pyet.dask.to_dask(pyet.sum(tree)),
            (da.tanh(x) * y + da.sqrt(z)).sum(),
            numexpr_blocks("tanh(x)*y + sqrt(z)", x, y, z).sum() if ne else None, compute, 0.5),
        Row("tanh(x)*y + sqrt(z), persist", pyet.dask.to_dask(tree), da.tanh(x) * y + da.sqrt(z),
            numexpr_blocks("tanh(x)*y + sqrt(z)", x, y, z) if ne else None, persist, 0.5),
        Row("(w - eta*(g + lam*w)).sum()", pyet.dask.to_dask(pyet.sum(update)),
            (x - eta * (y + lam * x)).sum(),
            numexpr_blocks("x - 0.1*(y + 0.01*x)", x, y).sum() if ne else None, compute, 0.5),
        Row("w - eta*(g + lam*w), persist", pyet.dask.to_dask(update), x - eta * (y + lam * x),
            numexpr_blocks("x - 0.1*(y + 0.01*x)", x, y) if ne else None, persist, 0.5),
        Row(f"sum(a*b + c, axis=0), {rows2}x{side}", pyet.dask.to_dask(pyet.sum(A * B + C, 0)),
            (a * b + c).sum(axis=0),
            numexpr_blocks("x*y + z", a, b, c).sum(axis=0) if ne else None, compute, 0.6),
    ]
    for row in rows:  # every result checked against plain Dask's first
        ref, got = dask.compute(row.graphs["dask"], row.graphs["pyet"])
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9, err_msg=row.name)

    print()
    print(f"{'case':32s} {'pyet [s]':>10s} {'dask [s]':>10s} {'pyet/dask':>9s} {'target':>6s} "
          f"{'ne [s]':>10s} {'pyet/ne':>7s}   {'tasks pyet':>12s} {'tasks dask':>12s} "
          f"{'peak pyet':>10s} {'peak dask':>10s}")
    for row in rows:
        t = bench(row.calls(), args.repeats, 0.0)
        tp, td = tasks(row.graphs["pyet"]), tasks(row.graphs["dask"])
        mp = peak_memory(lambda row=row: row.finish(row.graphs["pyet"]))
        md = peak_memory(lambda row=row: row.finish(row.graphs["dask"]))
        tn = t.get("numexpr")
        print(f"{row.name:32s} {t['pyet']:10.3f} {t['dask']:10.3f} {t['pyet'] / t['dask']:9.2f} "
              f"{row.target:6.2f} " + (f"{tn:10.3f} {t['pyet'] / tn:7.2f}" if tn else
                                       f"{'-':>10s} {'-':>7s}") +
              f"   {tp[0]:5d} ({tp[1]:4d}) {td[0]:5d} ({td[1]:4d}) "
              f"{mp / 2**20:7.0f} MiB {md / 2**20:6.0f} MiB", flush=True)
    del x, y, z, a, b, c, X, Y, Z, A, B, C, rows, tree, update
    store_row(args, n, chunk)


def store_row(args, n, chunk):
    import zarr

    folder = Path(tempfile.mkdtemp(prefix="pyet-bench-zarr-", dir=args.tmp))
    try:
        def zarr_array(name):
            return zarr.create_array(store=str(folder / name), shape=(n,), chunks=(chunk,),
                                     dtype="f8", compressors=None, overwrite=True)

        rng = da.random.default_rng(1)
        for name in "xyz":
            da.store(rng.random((n,), chunks=(chunk,)), zarr_array(name), lock=False)
        x, y, z = (da.from_zarr(str(folder / name)) for name in "xyz")
        out_p, out_d = zarr_array("out_pyet"), zarr_array("out_dask")
        X, Y, Z = (pyet.asarray(t) for t in (x, y, z))
        expr = pyet.tanh(X) * Y + pyet.sqrt(Z)
        plain = da.tanh(x) * y + da.sqrt(z)

        def run_pyet():
            pyet.dask.store(expr, out_p, lock=False)

        def run_dask():
            da.store(plain, out_d, lock=False)

        run_pyet()
        run_dask()
        np.testing.assert_allclose(out_p[: min(n, 10**7)], out_d[: min(n, 10**7)], rtol=1e-12)
        t = bench({"pyet": run_pyet, "dask": run_dask}, max(args.repeats // 2, 2), 0.0)
        mp, md = peak_memory(run_pyet), peak_memory(run_dask)
        tp = tasks(pyet.dask.to_dask(expr))
        td = tasks(plain)
        print(f"{'store over zarr, ' + f'{n:.0e}':32s} {t['pyet']:10.3f} {t['dask']:10.3f} "
              f"{t['pyet'] / t['dask']:9.2f} {'-':>6s} {'-':>10s} {'-':>7s}   "
              f"{tp[0]:5d} ({tp[1]:4d}) {td[0]:5d} ({td[1]:4d}) "
              f"{mp / 2**20:7.0f} MiB {md / 2**20:6.0f} MiB   (result {n * 8 / 2**20:.0f} MiB, "
              f"chunk {chunk * 8 / 2**20:.0f} MiB)", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=float, default=1e8, help="elements per operand")
    p.add_argument("--chunk", type=float, default=1e7, help="elements per chunk")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--tmp", default=None, help="folder for the zarr arrays")
    p.add_argument("--quick", action="store_true", help="n = 1e7, chunks of 1e6, 3 repeats")
    args = p.parse_args()
    if args.quick:
        args.n, args.chunk, args.repeats = 1e7, 1e6, 3
    with dask.config.set(scheduler="threads"):
        run(args)


if __name__ == "__main__":
    main()
