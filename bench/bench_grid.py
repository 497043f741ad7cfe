"""pyet's performance grid against NumPy.  Run from the repository root:

    python -P bench/bench_grid.py [--quick] [--plot out.png] [--worst 25] [--filter REGEX]
                                  [--threads 2 [--calls 200]] [--shapes]

Layouts (C, Fortran, transposed, steps 2/3/7, negative steps, broadcast rows and columns, size-1
and many small dims, long-thin, short-wide, 0-d, tiny, odd sizes) x ops (arithmetic, integer
division, powers, comparisons/where, casts, math functions, bitwise), then reductions over each
axis, products of each rank, softmax over each axis, take, pool, im2col, the other NN blocks
(take_grad, choose_row_element, col2im, unpool, softmax_xent_grad), joins and views, pyet.F and
every assignment form (``--shapes`` adds rows of 1-100 items across orders and the reductions and
softmax of such arrays: shape_cases). One thread; each case is pyet (`out[...] = expr`) against
NumPy (with out= where it has one), interleaved, the minimum of several repeats, and each result is
checked against NumPy's first. Prints the worst ratios (pyet / NumPy: above 1, pyet is slower) and
a summary. ``--threads N`` also times pyet on N threads, interleaved with the one-thread runs, and
prints the cases N threads make slower, with the median and 90th percentile of the
N-thread/1-thread ratios; ``--calls K`` also times K single calls on each thread count,
alternating, and prints each case's median and 90th percentile. Cases above 1.1 (either ratio) are
re-timed three times and their ratios become the median of the four passes (``--no-recheck``: the
first pass only); both are printed. Those still above 1.1 on one thread are also timed under 8 call
depths, both libraries in turn at each, and pyet/NumPy of the medians is printed beside them (not
counted): NumPy's SVML loops, which pyet's passes call too, run up to 2.8x slower under a few stack
addresses (bench_call_depth.py). A benchmark, not a test: a wrong result is reported, not raised.
"""

import argparse
import itertools
import os
import re
import statistics
import sys
import time
import warnings
from pathlib import Path

# one thread for BLAS too, set before NumPy and SciPy load their two OpenBLAS
# builds: with their worker threads, calls of one interleaved with the other's
# ran 6-8x slower on 2 cores (a 256^2 gemm 0.45 -> 3.3-4 ms, both libraries),
# which a runtime limit (threadpoolctl) did not undo
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import bench, cpu_model, times_by_depth, use_cpu_time  # noqa: E402

import pyet  # noqa: E402
from pyet._core.ops import OPS  # noqa: E402

FLOATS, INTS, BOOL = (np.float32, np.float64), (np.int32, np.int64), (np.bool_,)


def layouts(n, rng):
    """(name, fn(dtype) -> array) with about n elements each (fewer for the tiny ones)."""
    side, cube = int(n ** 0.5), round(n ** (1 / 3))

    def base(shape, dt):
        if np.dtype(dt).kind == "b":
            return rng.random(shape) < 0.5
        if np.dtype(dt).kind == "f":
            return (rng.random(shape) * 4 + 0.25).astype(dt)
        return rng.integers(-1000, 1000, shape).astype(dt)

    return [
        ("C", lambda dt: base((side, side), dt)),
        ("fortran", lambda dt: np.asfortranarray(base((side, side), dt))),
        ("transposed", lambda dt: base((side, side), dt).T),
        ("step2", lambda dt: base((side, 2 * side), dt)[:, ::2]),
        ("step3", lambda dt: base((3 * n,), dt)[::3]),
        ("step7", lambda dt: base((7 * n,), dt)[::7]),
        ("negstep", lambda dt: base((side, side), dt)[::-1, ::-1]),
        ("bcast_row", lambda dt: np.broadcast_to(base((side,), dt), (side, side))),
        ("bcast_col", lambda dt: np.broadcast_to(base((side, 1), dt), (side, side))),
        ("bcast_mid", lambda dt: np.broadcast_to(base((cube, 1, cube), dt), (cube,) * 3)),
        ("size1_dims", lambda dt: base((1, side, 1, side, 1), dt)),
        ("small_dims", lambda dt: base((4, 3, 5, 2, 3, max(n // 360, 1)), dt)),
        ("long_thin", lambda dt: base((n // 3, 3), dt)),
        ("short_wide", lambda dt: base((3, n // 3), dt)),
        ("0d", lambda dt: base((), dt)),
        ("tiny", lambda dt: base((3, 5), dt)),
        ("odd", lambda dt: base((side - 1, side + 3), dt)[1:, 1:-2]),
    ]


def elementwise_ops():
    """(name, dtypes, arity, pyet fn, numpy fn(arrays..., out=))."""
    ops = [
        ("a+b", FLOATS + INTS, 2, lambda a, b: a + b, np.add),
        ("a*b+c", FLOATS, 3, lambda a, b, c: a * b + c, lambda a, b, c, out: np.add(
            np.multiply(a, b, out=out), c, out=out)),
        ("a/b", FLOATS, 2, lambda a, b: a / b, np.divide),
        ("a-2.5*b", FLOATS, 2, lambda a, b: a - 2.5 * b,
         lambda a, b, out: np.subtract(a, np.multiply(2.5, b, out=out), out=out)),
        ("a//7", INTS, 1, lambda a: a // 7, lambda a, out: np.floor_divide(a, 7, out=out)),
        ("a%7", INTS, 1, lambda a: a % 7, lambda a, out: np.remainder(a, 7, out=out)),
        ("a//-3", INTS, 1, lambda a: a // -3, lambda a, out: np.floor_divide(a, -3, out=out)),
        ("a//b", INTS, 2, lambda a, b: a // b, np.floor_divide),
        ("a//2.0", FLOATS, 1, lambda a: a // 2.0, lambda a, out: np.floor_divide(a, 2.0, out=out)),
        ("a**2", FLOATS + INTS, 1, lambda a: a ** 2, lambda a, out: np.power(a, 2, out=out)),
        ("a**-1", FLOATS, 1, lambda a: a ** -1, lambda a, out: np.power(a, -1.0, out=out)),
        ("a**0.5", FLOATS, 1, lambda a: a ** 0.5, lambda a, out: np.power(a, 0.5, out=out)),
        ("a**3", FLOATS + INTS, 1, lambda a: a ** 3, lambda a, out: np.power(a, 3, out=out)),
        ("a**b", FLOATS, 2, lambda a, b: a ** b, np.power),
        ("a<b", FLOATS + INTS, 2, lambda a, b: a < b, np.less),
        ("a==b", BOOL, 2, lambda a, b: a == b, np.equal),
        ("where", FLOATS, 2, lambda a, b: pyet.where(a > b, a, b),
         lambda a, b, out: np.where(a > b, a, b)),
        ("cast->f64", (np.float32, np.int32, np.bool_), 1, lambda a: a,
         lambda a, out: np.add(a, 0, out=out, dtype=np.float64)),
        ("exp", FLOATS, 1, pyet.exp, np.exp),
        ("expm1+1", FLOATS, 1, lambda a: pyet.expm1(a) + 1,
         lambda a, out: np.add(np.expm1(a, out=out), 1, out=out)),
        ("log", FLOATS, 1, pyet.log, np.log),
        ("sin", FLOATS, 1, pyet.sin, np.sin),
        ("cos", FLOATS, 1, pyet.cos, np.cos),
        ("tanh", FLOATS, 1, pyet.tanh, np.tanh),
        # a costly subtree read twice (gradients' tanh and sigmoid): computed once
        ("1-t*t", FLOATS, 1, lambda a: (lambda t: 1 - t * t)(pyet.tanh(a)),
         lambda a, out: np.subtract(1, np.square(np.tanh(a, out=out), out=out), out=out)),
        ("s*(1-s)", FLOATS, 1, lambda a: (lambda s: s * (1 - s))(pyet.sigmoid(a)),
         lambda a, out: (lambda s: np.multiply(s, np.subtract(1, s), out=out))(
             np.divide(1, np.add(1, np.exp(np.negative(a, out=out), out=out), out=out),
                       out=out))),
        ("sqrt", FLOATS, 1, pyet.sqrt, np.sqrt),
        ("abs", FLOATS + INTS, 1, abs, np.abs),
        ("maximum", FLOATS, 2, pyet.maximum, np.maximum),
        ("a&b", INTS + BOOL, 2, lambda a, b: a & b, np.bitwise_and),
        ("a|b", BOOL, 2, lambda a, b: a | b, np.bitwise_or),
        ("a^b", INTS + BOOL, 2, lambda a, b: a ^ b, np.bitwise_xor),
        ("~a", INTS + BOOL, 1, lambda a: ~a, np.invert),
    ]
    return ops


class Cases(list):
    """The cases whose name matches ``pattern`` (all when None): the others are
    dropped as they are built, with their arrays (at 2^22 elements the whole
    grid's arrays do not fit in 24 GiB)."""

    def __init__(self, pattern):
        super().__init__()
        self.pattern = pattern

    def append(self, case):
        if self.pattern is None or re.search(self.pattern, case.name):
            super().append(case)


class Case:
    def __init__(self, name, f_pyet, f_numpy, got, want=None, tol=0.0):
        self.name, self.f_pyet, self.f_numpy = name, f_pyet, f_numpy
        self.got, self.want, self.tol = got, want, tol

    def check(self):
        want = np.array(self.f_numpy() if self.want is None else self.want(), copy=True)
        self.f_pyet()
        got = np.asarray(self.got())
        if self.tol:
            np.testing.assert_allclose(got, want, rtol=self.tol, atol=self.tol, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, want)


def elementwise_cases(n, rng, pattern):
    cases = Cases(pattern)
    for lname, make in layouts(n, rng):
        for oname, dts, arity, fp, fn in elementwise_ops():
            for dt in dts:
                arrs = [make(dt) for _ in range(arity)]
                if oname == "a//b":
                    arrs[1] = np.where(arrs[1] == 0, 3, arrs[1]).astype(dt)
                if oname == "a**b":
                    arrs[1] = (arrs[1] / 4).astype(dt)
                ts = [pyet.asarray(a) for a in arrs]
                with np.errstate(all="ignore"):
                    if oname == "cast->f64":
                        want_dt = np.float64
                        expr = ts[0]
                    else:
                        expr = fp(*ts)
                        want_dt = expr.dtype
                # one destination for both (check() copies NumPy's result first): where
                # two arrays lay relative to the operands moved a loop's time 10-15 %
                out_np = out_pe = np.empty(arrs[0].shape, want_dt)
                Dst = pyet.asarray(out_pe)

                def f_pyet(Dst=Dst, expr=expr):
                    Dst[...] = expr

                def f_numpy(arrs=arrs, fn=fn, out=out_np):
                    return fn(*arrs, out=out)

                tol = 0.0 if oname in ("a+b", "a<b", "a==b", "a|b", "where", "a//7", "a%7",
                                       "a//-3", "a//b", "a&b", "a^b", "~a", "abs", "maximum",
                                       "a**2", "a**-1", "a**0.5", "cast->f64", "a/b", "a//2.0",
                                       "a-2.5*b", "a*b+c", "sqrt") or dt in INTS + BOOL else 1e-5
                cases.append(Case(f"{oname:9s} {np.dtype(dt).name:7s} {lname}", f_pyet,
                                  f_numpy, lambda out=out_pe: out, tol=tol))
    # trees whose every leaf is broadcast along some dimensions of dst, as NumPy
    # users write them: NumPy computes the small array, then copies it out
    side, cube = int(n ** 0.5), round(n ** (1 / 3))
    for bname, small, full in (("row", (side,), (side, side)), ("col", (side, 1), (side, side)),
                               ("mid", (cube, 1, cube), (cube,) * 3),
                               ("mid+col", (cube, 1, cube, 1), (cube, cube // 4, cube, 4))):
        for dt in FLOATS:
            b = (rng.random(small) * 4 - 2).astype(dt)
            out = np.empty(full, dt)
            B, D = pyet.asarray(np.broadcast_to(b, full)), pyet.asarray(out)
            for tname, fp, fn in (("exp(b)*2+1", lambda B: pyet.exp(B) * 2 + 1,
                                   lambda b: np.exp(b) * 2 + 1),
                                  ("b*2+1", lambda B: B * 2 + 1, lambda b: b * 2 + 1)):
                cases.append(Case(f"{tname:10s} {np.dtype(dt).name:7s} bcast tree {bname}",
                                  lambda D=D, B=B, fp=fp: D.__setitem__(..., fp(B)),
                                  lambda out=out, b=b, fn=fn: out.__setitem__(..., fn(b)),
                                  lambda out=out: out, tol=1e-6,
                                  want=lambda b=b, fn=fn, full=full: np.broadcast_to(fn(b), full)))
    # min/max of a full operand and a column (NumPy's loops take a stride-0
    # input in their scalar loop), square and with long rows
    for dt, (sname, shape) in itertools.product(FLOATS + INTS, (
            ("square", (side, side)), ("rows of 4096", (max(n // 4096, 1), 4096)))):
        a = (rng.random(shape) * 200 - 100).astype(dt)
        col = a[:, :1].copy()
        out = np.empty_like(a)
        A, C, D = (pyet.asarray(x) for x in (a, col, out))
        for tname, fp, fn in (
                ("max(A,col)", lambda A=A, C=C: pyet.maximum(A, C),
                 lambda out, a=a, col=col: np.maximum(a, col, out=out)),
                ("min(col,A)", lambda A=A, C=C: pyet.minimum(C, A),
                 lambda out, a=a, col=col: np.minimum(col, a, out=out))):
            cases.append(Case(f"{tname:10s} {np.dtype(dt).name:7s} {sname}",
                              lambda D=D, fp=fp: D.__setitem__(..., fp()),
                              lambda out=out, fn=fn: fn(out), lambda out=out: out))
    # a costly op on a row or column beside a full operand (NumPy computes it on
    # the small array, then broadcasts it), in C order and all in Fortran order
    for dt, order in itertools.product(FLOATS, "CF"):
        a = np.asarray((rng.random((side, side)) * 4 - 2).astype(dt), order=order)
        row, col = a[0].copy(), a[:, :1].copy()
        out = np.empty_like(a)
        A, R, C, D = (pyet.asarray(x) for x in (a, row, col, out))
        lname = "bcast operand" if order == "C" else "bcast operand F"
        for tname, fp, fn in (
                ("A+exp(row)", lambda A=A, R=R: A + pyet.exp(R),
                 lambda out, a=a, row=row: np.add(a, np.exp(row), out=out)),
                ("A*tanh(col)", lambda A=A, C=C: A * pyet.tanh(C),
                 lambda out, a=a, col=col: np.multiply(a, np.tanh(col), out=out)),
                ("A*sin(row)+cos(col)", lambda A=A, R=R, C=C: A * pyet.sin(R) + pyet.cos(C),
                 lambda out, a=a, row=row, col=col: np.add(
                     np.multiply(a, np.sin(row), out=out), np.cos(col), out=out))):
            cases.append(Case(f"{tname:10s} {np.dtype(dt).name:7s} {lname}",
                              lambda D=D, fp=fp: D.__setitem__(..., fp()),
                              lambda out=out, fn=fn: fn(out), lambda out=out: out, tol=1e-5))
    # the same into destinations with strided rows (every other item of a
    # wider array, reversed): packed, each block scattered back whole rows
    for dt, dname in itertools.product(FLOATS, ("dst::2", "dst::-1")):
        a = (rng.random((side, side)) * 4 - 2).astype(dt)
        row, col = a[0].copy(), a[:, :1].copy()
        big = np.empty((side, 2 * side), dt)
        out = big[:, ::2] if dname == "dst::2" else big[:, side - 1::-1]
        A, R, C, D = (pyet.asarray(x) for x in (a, row, col, out))
        for tname, fp, fn in (
                ("A*col", lambda A=A, C=C: A * C,
                 lambda out, a=a, col=col: np.multiply(a, col, out=out)),
                ("A+exp(row)", lambda A=A, R=R: A + pyet.exp(R),
                 lambda out, a=a, row=row: np.add(a, np.exp(row), out=out)),
                ("A*tanh(col)", lambda A=A, C=C: A * pyet.tanh(C),
                 lambda out, a=a, col=col: np.multiply(a, np.tanh(col), out=out))):
            cases.append(Case(f"{tname:10s} {np.dtype(dt).name:7s} bcast operand {dname}",
                              lambda D=D, fp=fp: D.__setitem__(..., fp()),
                              lambda out=out, fn=fn: fn(out), lambda out=out: out, tol=1e-5))
    # a flat operand plus a broadcast column, short rows (packed blocks)
    for width in (2, 4):
        for dt in FLOATS + INTS:
            a = rng.integers(-1000, 1000, (n // width, width)).astype(dt)
            col = rng.integers(-1000, 1000, (n // width, 1)).astype(dt)
            out = np.empty_like(a)
            A, C, D = pyet.asarray(a), pyet.asarray(col), pyet.asarray(out)
            cases.append(Case(f"a+col     {np.dtype(dt).name:7s} rows of {width}",
                              lambda A=A, C=C, D=D: D.__setitem__(..., A + C),
                              lambda a=a, col=col, out=out: np.add(a, col, out=out),
                              lambda out=out: out))
            if dt in FLOATS:  # a column's own subtree, one value a row
                cases.append(Case(f"A*tanh(col) {np.dtype(dt).name:7s} rows of {width}",
                                  lambda A=A, C=C, D=D: D.__setitem__(..., A * pyet.tanh(C)),
                                  lambda a=a, col=col, out=out: np.multiply(
                                      a, np.tanh(col), out=out),
                                  lambda out=out: out, tol=1e-5))
    # a costly op of a bias of one element ((1,) or 0-d) beside a column:
    # computed once when the pass is bound
    for dt in FLOATS:
        a = (rng.random((n, 1)) * 4 - 2).astype(dt)
        out = np.empty_like(a)
        for bname, b in (("(1,)", np.array([0.3], dt)), ("0-d", np.array(0.3, dt))):
            A, B, D = pyet.asarray(a), pyet.asarray(b), pyet.asarray(out)
            cases.append(Case(f"A+exp(b)  {np.dtype(dt).name:7s} column, b {bname}",
                              lambda A=A, B=B, D=D: D.__setitem__(..., A + pyet.exp(B)),
                              lambda a=a, b=b, out=out: np.add(a, np.exp(b), out=out),
                              lambda out=out: out, tol=1e-6))
    # short rows whose operands disagree with the destination on the order:
    # C leaves into Fortran order, Fortran leaves into C order
    for width in (2, 5, 17, 64):
        for dt in FLOATS:
            a = (rng.random((max(n // width, 1), width)) * 4 - 2).astype(dt)
            b, col = a * 0.5, a[:, :1].copy()
            f_out = np.empty(a.shape, dt, order="F")
            fa, fb, c_out = np.asfortranarray(a), np.asfortranarray(b), np.empty(a.shape, dt)
            A, B, C, FA, FB, DF, DC = (pyet.asarray(x) for x in (a, b, col, fa, fb, f_out, c_out))
            for tname, fp, fn, out in (
                    ("C->F copy", lambda A=A: A,
                     lambda a=a, out=f_out: (np.copyto(out, a), out)[1], f_out),
                    ("C->F a+col", lambda A=A, C=C: A + C,
                     lambda a=a, col=col, out=f_out: np.add(a, col, out=out), f_out),
                    ("F->C a+b", lambda FA=FA, FB=FB: FA + FB,
                     lambda fa=fa, fb=fb, out=c_out: np.add(fa, fb, out=out), c_out)):
                D = DF if out is f_out else DC
                cases.append(Case(f"{tname:10s} {np.dtype(dt).name:7s} rows of {width}",
                                  lambda D=D, fp=fp: D.__setitem__(..., fp()), fn,
                                  lambda out=out: out))
    # rows of 128-256 with a column or a costly op on a row (packed in whole
    # rows; the row's subtree computed on a chunk's first block)
    for width in (128, 200):
        for dt in FLOATS:
            a = (rng.random((max(n // width, 1), width)) * 4 - 2).astype(dt)
            row, col = a[0].copy(), a[:, :1].copy()
            out = np.empty_like(a)
            A, R, C, D = (pyet.asarray(x) for x in (a, row, col, out))
            for tname, fp, fn in (
                    ("A*col", lambda A=A, C=C: A * C,
                     lambda out, a=a, col=col: np.multiply(a, col, out=out)),
                    ("A*exp(row)", lambda A=A, R=R: A * pyet.exp(R),
                     lambda out, a=a, row=row: np.multiply(a, np.exp(row), out=out))):
                cases.append(Case(f"{tname:10s} {np.dtype(dt).name:7s} rows of {width}",
                                  lambda D=D, fp=fp: D.__setitem__(..., fp()),
                                  lambda out=out, fn=fn: fn(out), lambda out=out: out,
                                  tol=1e-5))
    return cases


# every other row of the op table (float functions, exact unary ops, binary
# functions such as arctan2 and logaddexp, predicates, copysign...): C layout
# and step 3, each operand drawn from the row's domain (their kernels, or the
# NumPy loops pyet hands them to, decide them)
COVERED = {"add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power",
           "less", "exp", "log", "sin", "cos", "tanh", "sqrt", "absolute", "maximum",
           "bitwise_and", "bitwise_xor", "invert"}
EXACT_FLOAT = {"square", "negative", "positive", "floor", "ceil", "trunc", "rint", "sign",
               "reciprocal", "copysign", "minimum", "fmax", "fmin", "relu", "deg2rad",
               "rad2deg"}


def table_cases(n, rng, pattern):
    cases = Cases(pattern)
    for op in OPS:
        if op.name in COVERED:
            continue
        for dt in op.dtypes:
            if np.dtype(dt).kind == "b":
                continue
            for lname, step in (("C", 1), ("step3", 3)):
                arrs = []
                for d in op.domain:
                    lo, hi = max(d.lo, -10), min(d.hi, 10)
                    v = (rng.uniform(lo, hi, n * step) if np.dtype(dt).kind == "f"
                         else rng.integers(int(lo), int(hi) + 1, n * step))
                    if d.nonzero:
                        v[v == 0] = hi
                    arrs.append(v.astype(dt)[::step])
                with np.errstate(all="ignore"):
                    want_dt = np.asarray(op.reference(*[a[:1] for a in arrs])).dtype
                if want_dt.name not in ("bool", "int32", "int64", "float32", "float64"):
                    continue
                out_np = out_pe = np.empty(n, want_dt)
                Dst = pyet.asarray(out_pe)
                expr = getattr(pyet, op.name)(*[pyet.asarray(a) for a in arrs])

                def f_pyet(Dst=Dst, expr=expr):
                    Dst[...] = expr

                if op.reference is op.ufunc:
                    def f_numpy(arrs=arrs, fn=op.ufunc, out=out_np):
                        return fn(*arrs, out=out)
                else:  # sigmoid, relu, erf: NumPy's formula (SciPy's erf)
                    def f_numpy(arrs=arrs, fn=op.reference):
                        return fn(*arrs)
                exact = op.kind != "float" or op.name in EXACT_FLOAT
                cases.append(Case(f"{op.name:9s} {np.dtype(dt).name:7s} {lname}", f_pyet,
                                  f_numpy, lambda out=out_pe: out, tol=0.0 if exact else 1e-5))
    return cases



def reduction_case(name, t, red, axis):
    """pyet's ``red`` of array t over ``axis`` into a destination against NumPy's with out=."""
    T = pyet.asarray(t)
    want = getattr(np, red)(t, axis=axis)
    out = out2 = np.empty(want.shape, want.dtype)
    Dst = pyet.asarray(out)
    return Case(name, lambda: Dst.__setitem__(..., getattr(pyet, red)(T, axis=axis)),
                lambda: getattr(np, red)(t, axis=axis, out=out2), lambda: out, tol=1e-12)

def shape_cases(n, rng, pattern):
    """``--shapes``: rows of 1-100 items (n elements in all) into C, Fortran, transposed
    and every-other-item destinations, seven trees with a column, a row and a costly op;
    sum, max and argmax of C and Fortran arrays over each axis (``evaluate``, NumPy's
    allocating call); softmax over each axis.  The grid's square layouts had hidden the
    cliffs of short rows across orders."""
    cases = Cases(pattern)
    for width, dt in itertools.product((1, 2, 3, 5, 8, 17, 33, 100), FLOATS):
        rows, dname = max(n // width, 1), np.dtype(dt).name
        a = (rng.random((rows, width)) * 4 - 2).astype(dt)
        b = (rng.random((rows, width)) * 4 - 2).astype(dt)
        col, row = a[:, :1].copy(), a[0].copy()
        for lay in ("C", "F", "::2", "T"):
            d = (np.empty((rows, width), dt) if lay == "C"
                 else np.empty((rows, width), dt, order="F") if lay == "F"
                 else np.empty((rows, 2 * width), dt)[:, ::2] if lay == "::2"
                 else np.empty((width, rows), dt).T)
            A, B, C, R, D = (pyet.asarray(x) for x in (a, b, col, row, d))
            for tname, fp, fn in (
                    ("A+C", lambda A=A, C=C: A + C, lambda d, a=a, c=col: np.add(a, c, out=d)),
                    ("A*tanh(C)", lambda A=A, C=C: A * pyet.tanh(C),
                     lambda d, a=a, c=col: np.multiply(a, np.tanh(c), out=d)),
                    ("A+exp(R)", lambda A=A, R=R: A + pyet.exp(R),
                     lambda d, a=a, r=row: np.add(a, np.exp(r), out=d)),
                    ("where(A>C,A,C)", lambda A=A, C=C: pyet.where(A > C, A, C),
                     lambda d, a=a, c=col: (np.copyto(d, np.where(a > c, a, c)), d)[1]),
                    ("A*B+C", lambda A=A, B=B, C=C: A * B + C,
                     lambda d, a=a, b=b, c=col: np.add(np.multiply(a, b, out=d), c, out=d)),
                    ("maximum(A,0)*C", lambda A=A, C=C: pyet.maximum(A, 0) * C,
                     lambda d, a=a, c=col: np.multiply(np.maximum(a, 0, out=d), c, out=d)),
                    ("(A-C)/B", lambda A=A, B=B, C=C: (A - C) / B,
                     lambda d, a=a, b=b, c=col: np.divide(np.subtract(a, c, out=d), b, out=d))):
                cases.append(Case(f"shape {tname:14s} {dname:7s} ({rows},{width}) dst {lay}",
                                  lambda D=D, fp=fp: D.__setitem__(..., fp()),
                                  lambda d=d, fn=fn: fn(d), lambda d=d: d, tol=1e-5))
        for order, axis in itertools.product("CF", (0, 1)):
            t = np.asarray(a, order=order)
            T = pyet.asarray(t)
            for red in ("sum", "max", "argmax"):
                # (each result dropped, as NumPy's: one held while the next is
                # made costs both libraries a fresh allocation's page faults)
                cases.append(Case(
                    f"shape {red:14s} {dname:7s} ({rows},{width}) {order} axis={axis}",
                    lambda T=T, red=red, axis=axis: np.asarray(
                        pyet.evaluate(getattr(pyet, red)(T, axis=axis))),
                    lambda t=t, red=red, axis=axis: getattr(t, red)(axis=axis),
                    lambda T=T, red=red, axis=axis: np.asarray(
                        pyet.evaluate(getattr(pyet, red)(T, axis=axis))), tol=1e-4))
            out = np.empty(t.shape, dt)
            D = pyet.asarray(out)
            cases.append(Case(
                f"shape {'softmax':14s} {dname:7s} ({rows},{width}) {order} axis={axis}",
                lambda D=D, T=T, axis=axis: D.__setitem__(..., pyet.softmax(T, axis=axis)),
                lambda t=t, axis=axis, out=out: np.divide(
                    e := np.exp(t - t.max(axis=axis, keepdims=True)),
                    e.sum(axis=axis, keepdims=True), out=out),
                lambda out=out: out, tol=1e-5))
    return cases


def special_cases(n, rng, pattern):
    cases = Cases(pattern)
    side = int(round(n ** (1 / 3)))
    a3 = rng.random((side, side, side))
    A3 = pyet.asarray(a3)
    for axis in (0, 1, 2, None):
        for red in ("sum", "max"):
            want = getattr(np, red)(a3, axis=axis)
            out = out2 = np.empty(np.shape(want))
            Dst = pyet.asarray(out)
            cases.append(Case(
                f"{red} axis={axis} f64 {side}^3",
                lambda Dst=Dst, red=red, axis=axis: Dst.__setitem__(
                    ..., getattr(pyet, red)(A3, axis=axis)),
                lambda red=red, axis=axis, out2=out2: getattr(np, red)(a3, axis=axis, out=out2),
                lambda out=out: out, tol=1e-12))
    # reductions of a tree, folded block by block without the tree's array
    # (NumPy: the tree's temporaries, then its reduce)
    sq = int(n ** 0.5)
    a2 = rng.random((sq, sq))
    A2 = pyet.asarray(a2)
    for axis in (0, 1, None):
        for red in ("sum", "max"):
            want = getattr(np, red)(a2 * 2 + 1, axis=axis)
            out = out2 = np.empty(np.shape(want))
            Dst = pyet.asarray(out)
            cases.append(Case(
                f"{red}(a*2+1) axis={axis} f64",
                lambda Dst=Dst, red=red, axis=axis: Dst.__setitem__(
                    ..., getattr(pyet, red)(A2 * 2 + 1, axis=axis)),
                lambda red=red, axis=axis, out2=out2: getattr(np, red)(
                    np.add(np.multiply(a2, 2), 1), axis=axis, out=out2),
                lambda out=out: out, tol=1e-12))
    # a short innermost axis in memory, kept or reduced (rows of 3 folded one by one)
    def values(shape, dt):  # (bools: half true)
        return rng.random(shape) < 0.5 if dt == np.bool_ else (rng.random(shape) * 100).astype(dt)

    for dt in (np.int32, np.float64, np.bool_):
        for order in ("C", "F"):
            t = np.asarray(values((n // 3, 3), dt), order=order)
            for red in ("sum", "max", "any", "argmax"):
                for axis in (0, 1):
                    cases.append(reduction_case(
                        f"{red} axis={axis} {np.dtype(dt).name} ({n // 3}, 3) {order}", t, red,
                        axis))
    # a column (axes of one element), rows of 7 (NumPy's sum order up to 7),
    # contiguous rows of 16 and 64 (NumPy's loop once a row) and argmax over
    # the long axis of 64 kept contiguous rows (NumPy copies the axis last)
    for dt in (np.int32, np.float64, np.bool_):
        for shape, red, axis in (((n, 1), "max", 0), ((n, 1), "sum", 0), ((n // 7, 7), "sum", 1),
                                 ((n // 7, 7), "argmax", 1), ((n // 16, 16), "max", 1),
                                 ((n // 16, 16), "any", 1), ((n // 64, 64), "sum", 1),
                                 ((n // 64, 64), "argmax", 0)):
            t = values(shape, dt)
            cases.append(reduction_case(f"{red} axis={axis} {np.dtype(dt).name} {shape}", t,
                                        red, axis))
    m = int(n ** 0.5) // 2
    A, B = rng.random((m, m)), rng.random((m, m))
    v, w = rng.random(m), rng.random(m)
    for name, x, y in (("mat@mat", A, B), ("mat@vec", A, v), ("vec@mat", v, B),
                       ("vec@vec", v, w)):
        out = out2 = np.empty(np.shape(x @ y))
        Dst, X, Y = pyet.asarray(out), pyet.asarray(x), pyet.asarray(y)
        cases.append(Case(f"dot {name} f64 {m}", lambda Dst=Dst, X=X, Y=Y: Dst.__setitem__(
            ..., pyet.dot(X, Y)), lambda x=x, y=y, out2=out2: np.dot(x, y, out=out2),
            lambda out=out: out, tol=1e-10))
    s = rng.uniform(-5, 5, (int(n ** 0.5), int(n ** 0.5))).astype(np.float32)
    S = pyet.asarray(s)
    for axis in (0, 1):
        out = np.empty_like(s)
        Dst = pyet.asarray(out)

        def np_softmax(axis=axis):
            e = np.exp(s - s.max(axis, keepdims=True))
            return e / e.sum(axis, keepdims=True)

        cases.append(Case(f"softmax axis={axis} f32", lambda Dst=Dst, axis=axis: Dst.__setitem__(
            ..., pyet.softmax(S, axis=axis)), np_softmax, lambda out=out: out, tol=1e-5))
    W = rng.random((1000, 64)).astype(np.float32)
    idx = rng.integers(0, 1000, n // 64)
    out = np.empty((idx.size, 64), np.float32)
    Dst, WT = pyet.asarray(out), pyet.asarray(W)
    cases.append(Case("take rows f32", lambda Dst=Dst: Dst.__setitem__(..., pyet.take(idx, WT)),
                      lambda: np.take(W, idx, axis=0), lambda out=out: out))
    c = max(n // 4096, 1)
    img = rng.random((c, 4, 32, 32)).astype(np.float32)
    Img = pyet.asarray(img)
    pooled = np.empty((c, 4, 16, 16), np.float32)
    P = pyet.asarray(pooled)
    cases.append(Case("pool max 2x2 f32", lambda: P.__setitem__(..., pyet.pool(Img, 2, 2, 2, 2)),
                      lambda: img.reshape(c, 4, 16, 2, 16, 2).max(axis=(3, 5)),
                      lambda: pooled))
    win = np.lib.stride_tricks.sliding_window_view(img, (3, 3), axis=(2, 3))
    col = np.empty((4 * 9, c * 30 * 30), np.float32)
    Col = pyet.asarray(col)
    cases.append(Case("im2col 3x3 f32", lambda: Col.__setitem__(
        ..., pyet.unpack_patch2col(Img, 3, 3)),
        lambda: win.transpose(1, 4, 5, 0, 2, 3).reshape(4 * 9, c * 30 * 30), lambda: col))
    cases += nn_cases(n, rng, img, col, pattern)
    side = int(n ** 0.5)
    a, b = rng.random((side, side)), rng.random((side, side))
    Ta, Tb = pyet.asarray(a), pyet.asarray(b)
    for name, fp, fn, shape in (
            ("concatenate axis=0", lambda: pyet.concatenate([Ta, Tb], 0),
             lambda out: np.concatenate([a, b], 0, out=out), (2 * side, side)),
            ("concatenate axis=1", lambda: pyet.concatenate([Ta, Tb], 1),
             lambda out: np.concatenate([a, b], 1, out=out), (side, 2 * side)),
            ("stack axis=2", lambda: pyet.stack([Ta, Tb], 2),
             lambda out: np.stack([a, b], 2, out=out), (side, side, 2)),
            ("pad 2", lambda: pyet.pad(Ta, 2), lambda out: np.pad(a, 2),
             (side + 4, side + 4)),
            ("flip axis=1 a+b", lambda: pyet.flip(Ta + Tb, 1),
             lambda out: np.add(a[:, ::-1], b[:, ::-1], out=out), (side, side)),
            ("F(np.expm1)+1", lambda: pyet.F(np.expm1, Ta) + 1,
             lambda out: np.add(np.expm1(a, out=out), 1, out=out), (side, side))):
        out = out2 = np.empty(shape)
        Dst = pyet.asarray(out)
        cases.append(Case(name + " f64", lambda Dst=Dst, fp=fp: Dst.__setitem__(..., fp()),
                          lambda fn=fn, out2=out2: fn(out2), lambda out=out: out))
    # assignment forms, a*b + 1 into a float64 destination
    d = d2 = rng.random((side, side))  # one destination for both, as above
    D = pyet.asarray(d)
    forms = [
        ("dst[...] = e", lambda: D.__setitem__(..., Ta * Tb + 1),
         lambda: np.add(np.multiply(a, b, out=d2), 1, out=d2)),
        ("dst[::2] = e", lambda: D.__setitem__(np.s_[::2], Ta[::2] * Tb[::2] + 1),
         lambda: np.add(np.multiply(a[::2], b[::2], out=d2[::2]), 1, out=d2[::2])),
        ("dst += e", lambda: D.__iadd__(Ta * Tb), lambda: np.add(d2, np.multiply(a, b), out=d2)),
        ("evaluate(e, out)", lambda: pyet.evaluate(Ta * Tb + 1, out=D),
         lambda: np.add(np.multiply(a, b, out=d2), 1, out=d2)),
        ("np.add(out=)", lambda: np.add(Ta, Tb, out=D), lambda: np.add(a, b, out=d2)),
        ("dst **= 2", lambda: D.__ipow__(2), lambda: np.power(d2, 2, out=d2)),
        ("evaluate(e)", lambda: pyet.evaluate(Ta * Tb + 1),
         lambda: np.add(np.multiply(a, b), 1)),
    ]
    for name, fp, fn in forms:
        cases.append(Case(f"assign {name} f64", fp, fn, lambda: d, want=None, tol=-1))
    return cases


def nn_cases(n, rng, img, col, pattern):
    """The NN blocks the cases above leave out: softmax along a middle axis, the
    index blocks' scatter and choose, col2im, the pooling gradient, softmax_xent_grad."""
    cases = Cases(pattern)
    c = img.shape[0]
    s3 = rng.uniform(-5, 5, (max(n // 16384, 1), 128, 128)).astype(np.float32)
    S3, out3 = pyet.asarray(s3), np.empty_like(s3)
    D3 = pyet.asarray(out3)

    def np_softmax3():
        e = np.exp(s3 - s3.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    cases.append(Case(f"softmax axis=1 f32 {s3.shape}", lambda: D3.__setitem__(
        ..., pyet.softmax(S3, axis=1)), np_softmax3, lambda: out3, tol=1e-5))
    # softmax over a short last axis (a classifier's 1-8 classes), in C and
    # Fortran order, into a destination of the same order
    for width, order in ((1, "C"), (2, "C"), (2, "F"), (8, "F")):
        sw = np.asarray(rng.uniform(-5, 5, (n // width, width)).astype(np.float32), order=order)
        ow = np.empty(sw.shape, np.float32, order=order)
        SW, DW = pyet.asarray(sw), pyet.asarray(ow)

        def np_softmax_w(sw=sw, ow=ow):
            e = np.exp(sw - sw.max(1, keepdims=True))
            return np.divide(e, e.sum(1, keepdims=True), out=ow)

        cases.append(Case(f"softmax axis=1 f32 {sw.shape} {order}",
                          lambda SW=SW, DW=DW: DW.__setitem__(..., pyet.softmax(SW, axis=1)),
                          np_softmax_w, lambda ow=ow: ow, tol=1e-5))
    g = rng.random((n // 64, 64)).astype(np.float32)
    gidx = rng.integers(0, 1000, n // 64)
    tg = np.empty((1000, 64), np.float32)
    G, TG = pyet.asarray(g), pyet.asarray(tg)

    def np_take_grad():
        out = np.zeros((1000, 64), np.float32)
        np.add.at(out, gidx, g)
        return out

    cases.append(Case("take_grad rows f32", lambda: TG.__setitem__(
        ..., pyet.take_grad(gidx, G, 1000)), np_take_grad, lambda: tg, tol=1e-5))
    # an embedding's gradient: few of many rows (zeroing out dominates)
    g2 = rng.random((n // 128, 64)).astype(np.float32)
    gidx2 = rng.integers(0, n // 8, n // 128)
    tg2 = np.empty((n // 8, 64), np.float32)
    G2, TG2 = pyet.asarray(g2), pyet.asarray(tg2)

    def np_take_grad2():
        out = np.zeros((n // 8, 64), np.float32)
        np.add.at(out, gidx2, g2)
        return out

    cases.append(Case("take_grad sparse rows f32", lambda: TG2.__setitem__(
        ..., pyet.take_grad(gidx2, G2, n // 8)), np_take_grad2, lambda: tg2, tol=1e-5))
    m = rng.random((n // 2, 4)).astype(np.float32)
    cidx = rng.integers(0, 4, n // 2)
    ch = np.empty(n // 2, np.float32)
    M, CH = pyet.asarray(m), pyet.asarray(ch)
    cases.append(Case("choose_row_element f32", lambda: CH.__setitem__(
        ..., pyet.choose_row_element(M, cidx)), lambda: m[np.arange(n // 2), cidx],
        lambda: ch))
    back = np.empty_like(img)
    Back, Col = pyet.asarray(back), pyet.asarray(col)

    def np_col2im():
        out = np.zeros_like(img)
        parts = col.reshape(4, 3, 3, c, 30, 30)
        for py in range(3):
            for px in range(3):
                out[:, :, py:py + 30, px:px + 30] += parts[:, py, px].transpose(1, 0, 2, 3)
        return out

    cases.append(Case("col2im 3x3 f32", lambda: Back.__setitem__(
        ..., pyet.pack_col2patch(Col, img.shape, 3, 3)), np_col2im, lambda: back, tol=1e-5))
    pooled = img.reshape(c, 4, 16, 2, 16, 2).max(axis=(3, 5))
    pgrad = rng.random(pooled.shape).astype(np.float32)
    Img, P, PG = pyet.asarray(img), pyet.asarray(pooled), pyet.asarray(pgrad)
    up = np.empty_like(img)
    Up = pyet.asarray(up)

    def np_unpool():
        big = lambda a: a.repeat(2, 2).repeat(2, 3)  # noqa: E731
        return np.where(img == big(pooled), big(pgrad), np.float32(0))

    cases.append(Case("unpool max 2x2 f32", lambda: Up.__setitem__(
        ..., pyet.unpool(Img, P, PG, 2, 2, 2, 2)), np_unpool, lambda: up))
    side = int(n ** 0.5)
    x = rng.uniform(-5, 5, (side, side)).astype(np.float32)
    logp = (x - x.max(1, keepdims=True))
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    lab = rng.integers(0, side, side)
    xg = np.empty_like(x)
    LP, XG = pyet.asarray(logp), pyet.asarray(xg)

    def np_xent():
        t = np.zeros_like(x)
        t[np.arange(side), lab] = 1
        return np.float32(0.5) * (np.exp(logp) - t)

    cases.append(Case("softmax_xent_grad f32", lambda: XG.__setitem__(
        ..., pyet.softmax_xent_grad(LP, lab, 0.5, axis=1)), np_xent, lambda: xg, tol=1e-5))
    return cases


def single_calls(fn, threads, calls):
    """Per-call times of fn on 1 and on ``threads`` threads, alternating call by call."""
    times = {1: [], threads: []}
    for i in range(calls):
        for nt in ((1, threads) if i % 2 else (threads, 1)):
            pyet.set_num_threads(nt)
            t0 = time.perf_counter()
            fn()
            times[nt].append(time.perf_counter() - t0)
    return times


def run(cases, repeats, min_time, threads=1, calls=0):
    """Rows (pyet/NumPy, name, pyet s, NumPy s, pyet s on ``threads`` threads or None)."""
    rows, bad = [], []
    fixed = {"pyet": lambda: pyet.set_num_threads(1), "numpy": lambda: pyet.set_num_threads(1),
             "pyetN": lambda: pyet.set_num_threads(threads)}
    for case in cases:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                if case.tol >= 0:
                    for nt in {1, threads}:
                        pyet.set_num_threads(nt)
                        case.check()
                fns = {"pyet": case.f_pyet, "numpy": case.f_numpy}
                if threads > 1:
                    fns["pyetN"] = case.f_pyet
                t = bench(fns, repeats, min_time, setup=fixed)
                if calls and threads > 1:
                    for _ in range(10):  # warm up
                        case.f_pyet()
                    t["calls"] = single_calls(case.f_pyet, threads, calls)
        except Exception as exc:  # a benchmark: report, go on
            bad.append((case.name, f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}"))
            continue
        finally:
            pyet.set_num_threads(1)
        rows.append((t["pyet"] / t["numpy"], case.name, t["pyet"], t["numpy"], t.get("pyetN"),
                     t.get("calls")))
    return rows, bad


def depth_ratio(case, repeats, min_time, depths=8):
    """pyet/NumPy of the medians of both timed under call depths 0 .. depths-1
    (timing.times_by_depth): NumPy's SVML loops, which pyet's passes call too,
    run up to 2.8x slower under a few stack addresses, a different few for
    each library's call and each process (bench_call_depth.py), so one depth
    can stand for an address, not for either library's code."""
    one = lambda: pyet.set_num_threads(1)  # noqa: E731
    times = times_by_depth({"pyet": case.f_pyet, "numpy": case.f_numpy}, depths, repeats,
                           min_time, setup={"pyet": one, "numpy": one})
    return statistics.median(times["pyet"]) / statistics.median(times["numpy"])


def recheck(rows, cases, repeats, min_time, threads, rounds=3):
    """Rows whose ratio (or N-thread/1-thread ratio) is above 1.1, each re-timed
    ``rounds`` more times: one stall in a long run moves a case by 0.2-1.0x, and
    the case alone shows whether it was the case or the machine.  The row's
    ratios become the median of the first pass and the reruns, so a single
    fast rerun cannot hide a slow case.  Returns (name, first ratio, median
    ratio, first N/1, median N/1, ratio over call depths) for each case
    re-timed; the last (depth_ratio) is printed beside the count, not counted."""
    by_name = {case.name: case for case in cases}
    out = []
    for i, row in enumerate(rows):
        r, name, _, _, t_n, calls = row
        first_n = t_n / row[2] if t_n is not None else None
        if r <= 1.1 and (first_n is None or first_n <= 1.1):
            continue
        again, _ = run([by_name[name]] * rounds, repeats, min_time, threads)
        ratios = [r] + [a[0] for a in again]
        med = statistics.median(ratios)
        t1 = statistics.median([row[2]] + [a[2] for a in again])
        tnp = t1 / med
        med_n = None
        if first_n is not None:
            med_n = statistics.median([first_n] + [a[4] / a[2] for a in again])
            t_n = t1 * med_n
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            by_depth = depth_ratio(by_name[name], repeats, min_time) if med > 1.1 else None
        rows[i] = (med, name, t1, tnp, t_n, calls)
        out.append((name, r, med, first_n, med_n, by_depth))
    return out


def report_recheck(rechecked):
    print("\nre-timed (ratio above 1.1 in the first pass): first pass -> median of it and "
          "3 reruns; for those still above 1.1, pyet/NumPy of the medians over 8 call depths")
    for name, r, med, first_n, med_n, by_depth in rechecked:
        threads = f"   N/1 {first_n:5.2f} -> {med_n:5.2f}" if first_n is not None else ""
        depths = f"   depths {by_depth:5.2f}" if by_depth is not None else ""
        print(f"{r:8.2f} -> {med:5.2f}{threads}{depths}  {name}")
    stack = [name for name, _, med, _, _, d in rechecked
             if med > 1.1 and d is not None and d <= 1.1]
    if stack:
        print(f"{len(stack)} of the cases above 1.1 are at or below 1.1 timed over 8 call depths "
              "(bench_call_depth.py): " + ", ".join(n.strip() for n in stack))


def report_calls(rows, threads):
    """Single calls: the median and 90th percentile on 1 and on ``threads`` threads."""
    print(f"\nsingle calls, {threads} threads / 1 thread: median and 90th percentile")
    print(f"{'1T med':>9}{'NT med':>9}{'med N/1':>9}{'1T p90':>9}{'NT p90':>9}{'p90 N/1':>9}"
          "  case (times in us)")
    for _, name, *_, times in sorted(rows, key=lambda row: row[1]):
        m1, mN = (statistics.median(times[k]) for k in (1, threads))
        p1, pN = (statistics.quantiles(times[k], n=10)[-1] for k in (1, threads))
        print(f"{m1 * 1e6:9.1f}{mN * 1e6:9.1f}{mN / m1:9.2f}{p1 * 1e6:9.1f}{pN * 1e6:9.1f}"
              f"{pN / p1:9.2f}  {name}")


def report_threads(rows, threads, worst):
    """Cases slower on ``threads`` threads than on one beyond timing noise (10 %)."""
    tr = sorted(((tN / t1, name, t1, tN) for _, name, t1, _, tN, _ in rows), reverse=True)
    ratios = [r for r, *_ in tr]
    slower = [row for row in tr if row[0] > 1.1]
    print(f"\npyet on {threads} threads / pyet on 1 thread (above 1.1: slower beyond noise)")
    print(f"{'N/1':>8}  {'1 thr [us]':>10}  {f'{threads} thr [us]':>10}  case")
    for r, name, t1, tN in tr[:worst]:
        print(f"{r:8.2f}  {t1 * 1e6:10.2f}  {tN * 1e6:10.2f}  {name}")
    p90 = statistics.quantiles(ratios, n=10)[-1] if len(ratios) > 1 else ratios[0]
    print(f"\n{threads} threads vs 1: {len(ratios)} cases, {len(slower)} above 1.1, worst "
          f"{tr[0][0]:.2f} ({tr[0][1].strip()}), median {statistics.median(ratios):.2f}, "
          f"p90 {p90:.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short run (< 2 minutes)")
    ap.add_argument("--worst", type=int, default=25, help="how many worst cases to print")
    ap.add_argument("--plot", metavar="PNG", help="histogram of the ratios (needs matplotlib)")
    ap.add_argument("--filter", metavar="REGEX", help="only the cases whose name matches REGEX")
    ap.add_argument("--size", type=int, metavar="N",
                    help="about N elements per case (default 2**18, 2**13 with --quick): "
                         "in-cache sizes such as 4096 or 32768 show per-call and "
                         "per-block costs that 2**18 hides")
    ap.add_argument("--threads", type=int, default=1, metavar="N",
                    help="also time pyet on N threads (interleaved with 1 thread and NumPy) "
                         "and report the cases slower on N threads than on one")
    ap.add_argument("--calls", type=int, default=0, metavar="K",
                    help="with --threads: also time K single calls per thread count, "
                         "alternating, and print their median and 90th percentile")
    ap.add_argument("--no-recheck", action="store_true",
                    help="do not re-time the cases above 1.1 (by default each is re-timed "
                         "3 times and its ratio is the median of the 4 passes)")
    ap.add_argument("--shapes", action="store_true",
                    help="also run the shape section: rows of 1-100 items across orders, "
                         "reductions and softmax of C and Fortran arrays over each axis "
                         "(704 more cases)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time on the thread's CPU time, not wall time: steadier on a busy "
                         "machine (one thread only)")
    args = ap.parse_args()
    if args.cpu_time:
        if args.threads > 1:
            sys.exit("--cpu-time times one thread: it cannot be used with --threads")
        use_cpu_time()
    pyet.set_num_threads(args.threads)
    if pyet.get_num_threads() < args.threads:
        sys.exit(f"pyet can use at most {pyet.get_num_threads()} threads here")
    pyet.set_num_threads(1)
    n = args.size or (1 << 13 if args.quick else 1 << 18)
    repeats, min_time = (2, 0.0005) if args.quick else (5, 0.01)
    rng = np.random.default_rng(0)
    print(f"pyet grid, 1 thread{f' and {args.threads}' if args.threads > 1 else ''}, ~{n} "
          f"elements per case; {cpu_model()}; numpy {np.__version__}")
    cases = (elementwise_cases(n, rng, args.filter) + table_cases(n, rng, args.filter)
             + special_cases(n, rng, args.filter)
             + (shape_cases(n, rng, args.filter) if args.shapes else []))
    rows, bad = run(cases, repeats, min_time, args.threads, args.calls)
    rechecked = [] if args.no_recheck else recheck(rows, cases, repeats, min_time, args.threads)
    rows.sort(reverse=True)
    print(f"\n{'pyet/np':>8}  {'pyet [us]':>10}  {'np [us]':>10}  case")
    for r, name, tp, tn, *_ in rows[:args.worst]:
        print(f"{r:8.2f}  {tp * 1e6:10.2f}  {tn * 1e6:10.2f}  {name}")
    ratios = [r for r, *_ in rows]
    above, beyond = sum(r > 1.0 for r in ratios), sum(r > 1.1 for r in ratios)
    print(f"\n{len(ratios)} cases: worst {max(ratios):.2f} ({rows[0][1].strip()}), "
          f"{above} above 1.0, {beyond} above 1.1, median {statistics.median(ratios):.2f}")
    if rechecked:
        report_recheck(rechecked)
    if args.threads > 1:
        report_threads(rows, args.threads, args.worst)
        if args.calls:
            report_calls(rows, args.threads)
    for name, msg in bad:
        print(f"NOT COMPARED  {name}: {msg}")
    if args.plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("--plot needs matplotlib")
            return
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.hist(np.log2(ratios), bins=40)
        ax.axvline(0, color="k")
        ax.set_xlabel("log2(pyet time / NumPy time)")
        ax.set_ylabel("cases")
        fig.tight_layout()
        fig.savefig(args.plot)


if __name__ == "__main__":
    main()
