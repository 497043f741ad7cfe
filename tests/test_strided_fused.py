"""One fused op (s*x + y, x*y + z, x - s*y...) reading strided leaves where
they lie (kernels.h pyet_kernel_sx, Program.strided_fused): the bits of the
gathered blocks and of NumPy's unfused expression, on every step (2, 3, 7,
negative, zero, a packed record's field), mixed with contiguous and broadcast
leaves, into contiguous and strided destinations with sentinels around them,
in place, on two threads."""

import numpy as np
import pytest

import pyet
from pyet._core import core

# (name, arity, pyet form, NumPy's unfused expression)
FORMS = [
    ("muladd", 3, lambda a, b, c: a * b + c, lambda a, b, c: a * b + c),
    ("mulsub", 3, lambda a, b, c: a * b - c, lambda a, b, c: a * b - c),
    ("submul", 3, lambda a, b, c: c - a * b, lambda a, b, c: c - a * b),
    ("mul_add_mul", 3, lambda a, b, c: a * b + c * a, lambda a, b, c: a * b + c * a),
    ("mul_sub_mul", 3, lambda a, b, c: a * b - b * c, lambda a, b, c: a * b - b * c),
    ("sub_scaled", 2, lambda a, b: a - 3 * b, lambda a, b: a - 3 * b),
    ("axpy", 2, lambda a, b: a + 3 * b, lambda a, b: a + 3 * b),
    ("scale_shift", 1, lambda a: 3 * a + 5, lambda a: 3 * a + 5),
    ("mul_shift", 2, lambda a, b: a * b + 5, lambda a, b: a * b + 5),
    ("scale_sum", 2, lambda a, b: 3 * (a + b), lambda a, b: 3 * (a + b)),
    ("axpby", 2, lambda a, b: 3 * a + 5 * b, lambda a, b: 3 * a + 5 * b),
    ("scale_mul", 2, lambda a, b: (3 * a) * b, lambda a, b: (3 * a) * b),
]
DTYPES = [np.float32, np.float64, np.int32, np.int64]
N = 1000


def base(rng, dtype, n):
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(n) * 10).astype(dtype)
    return rng.integers(-1000, 1000, n).astype(dtype)


def layout(rng, dtype, kind):
    """An operand of N items with rows laid out as kind."""
    if kind == "contig":
        return base(rng, dtype, N)
    if kind.startswith("step"):
        step = int(kind[4:])
        return base(rng, dtype, N * abs(step))[::step]
    if kind == "bcast":
        return np.broadcast_to(base(rng, dtype, 1), (N,))
    if kind == "field":  # a packed record's field: 13-byte steps
        rec = np.zeros(N, np.dtype([("pad", "u1"), ("x", dtype)], align=False))
        rec["x"] = base(rng, dtype, N)
        return rec["x"]
    raise ValueError(kind)


def bits_equal(got, want):
    got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert (got.view(np.uint8) == want.view(np.uint8)).all()


def evaluate_into_guarded(expr, dtype, dst_step):
    """expr evaluated into a destination stepping dst_step items, inside
    sentinel bytes; returns the written values (the gaps and edges checked)."""
    size = np.dtype(dtype).itemsize
    raw = np.full((N * dst_step + 32) * size, 0xAB, np.uint8)
    body = raw[16 * size: (16 + N * dst_step) * size].view(dtype)
    dst = body[::dst_step]
    pyet.asarray(dst)[...] = expr
    untouched = np.ones(raw.size, bool)
    idx = (16 + np.arange(N) * dst_step) * size
    for b in range(size):
        untouched[idx + b] = False
    assert (raw[untouched] == 0xAB).all()
    return dst.copy()


def both_settings(build, reference, dtype, kinds, dst_steps):
    """NumPy's reference on operands laid out as kinds, and build(*tensors)
    evaluated with strided leaves read in place and gathered, into
    destinations stepping each of dst_steps items."""
    rng = np.random.default_rng(len(kinds))
    arrs = [layout(rng, dtype, k) for k in kinds]
    results = []
    with np.errstate(all="ignore"):
        want = reference(*arrs).astype(dtype)
        for on in (True, False):
            old = core.set_strided_fused(on)
            # (on: reversed and 4-byte step-2 rows in place too, as in passes from memory)
            old_far = core.set_sx_far(0 if on else 1 << 62)
            try:
                for dst_step in dst_steps:
                    expr = build(*[pyet.asarray(a) for a in arrs])
                    results.append(evaluate_into_guarded(expr, dtype, dst_step))
            finally:
                core.set_strided_fused(old)
                core.set_sx_far(old_far)
    return want, results


KINDS = [("step3", "step3", "step3"), ("step2", "step7", "contig"), ("step-3", "bcast", "step5"),
         ("field", "step3", "field"), ("contig", "step-1", "step7"), ("step7", "step7", "step7"),
         ("step-1", "step-1", "step-1"), ("step2", "step2", "step-1")]


@pytest.mark.parametrize("kinds", KINDS, ids=["-".join(k) for k in KINDS])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", FORMS, ids=[f[0] for f in FORMS])
def test_bits_as_gathered_and_numpy(form, dtype, kinds):
    name, arity, fp, fn = form
    want, results = both_settings(fp, fn, dtype, kinds[:arity], (1, 2))
    for got in results:
        if np.dtype(dtype).kind == "f" and name in ("muladd", "mulsub", "submul",
                                                          "mul_add_mul", "mul_sub_mul"):
            bits_equal(got, want)
        else:
            np.testing.assert_array_equal(got, want)
        bits_equal(got, results[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_in_place_and_threads(threaded, dtype):
    rng = np.random.default_rng(7)
    big = base(rng, dtype, 3 * 5000)
    a = big[::3]
    b = base(rng, dtype, 7 * 5000)[::7]
    c = base(rng, dtype, 5000)
    want = a * b + c
    A = pyet.asarray(a)
    A[...] = A * pyet.asarray(b) + pyet.asarray(c)  # the destination is a strided leaf
    bits_equal(a, want)
    assert (big[1::3] != 0).all()  # the items between stay


def test_fused_program_reads_in_place():
    # the program is the fused op reading its leaves where they lie (its
    # listing says so; not with the knob off), and both give the same bits
    rng = np.random.default_rng(3)
    a, b, c = (base(rng, np.float64, 3 * 4096)[::3] for _ in range(3))
    expr = pyet.asarray(a) * pyet.asarray(b) + pyet.asarray(c)
    code = core.dtype_code(np.float64)
    assert "muladd" in core.lower(expr, code).text
    assert "read where they lie" in core.lower(expr, code).text
    old = core.set_strided_fused(False)
    try:
        assert "read where they lie" not in core.lower(expr, code).text
    finally:
        core.set_strided_fused(old)
    got_on = pyet.evaluate(expr).numpy()
    old = core.set_strided_fused(False)
    try:
        got_off = pyet.evaluate(pyet.asarray(a) * pyet.asarray(b) + pyet.asarray(c)).numpy()
    finally:
        core.set_strided_fused(old)
    bits_equal(got_on, got_off)
    bits_equal(got_on, a * b + c)


# trees of several instructions: 8-byte leaves of near rows read once are
# read where they lie by + - * / maximum minimum (Run.insx)
TREES = [
    ("a+b+c", 3, lambda a, b, c: a + b + c),
    ("(a+b)*(c-a)", 3, lambda a, b, c: (a + b) * (c - a)),
    ("max(a,b)-c*d", 4, lambda a, b, c, d: np.maximum(a, b) - c * d),
    ("min(a,b)/(c+2)", 3, lambda a, b, c: np.minimum(a, b) / (c + 2)),
]
TREE_KINDS = [("step3", "step2", "step5", "step3"), ("step-3", "contig", "step7", "bcast"),
              ("field", "step3", "step-5", "step2"), ("step-1", "step-1", "step-1", "step-1")]


@pytest.mark.parametrize("kinds", TREE_KINDS, ids=["-".join(k) for k in TREE_KINDS])
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.float32])
@pytest.mark.parametrize("tree", TREES, ids=[t[0] for t in TREES])
def test_trees_as_gathered_and_numpy(tree, dtype, kinds):
    name, arity, f = tree
    if "/" in name and np.dtype(dtype).kind == "i":
        pytest.skip("true division of integers is a float tree")
    want, results = both_settings(f, f, dtype, kinds[:arity], (1, 3))
    for got in results:
        bits_equal(got, want)
