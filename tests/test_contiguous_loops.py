"""One-op exact passes (add, abs, maximum, ~, compares...) on contiguous rows
run NumPy's C loop, on one thread, where pyet's memory-bound loops stay at 256
bits (not Intel; loops.pxi CONTIG_LOOPS, knob core.set_contiguous_loops).  The
loop is taken only where it gives pyet's kernel's bits on a probe, so either
way the values, the floating-point errors and the destination's neighbours
are the same; short rows, threads and fused trees keep pyet's blocks."""

import numpy as np
import pytest

import pyet
from pyet._core import core

OPS = [("abs", lambda a, b: abs(a)), ("neg", lambda a, b: -a), ("add", lambda a, b: a + b),
       ("sub", lambda a, b: a - b), ("mul", lambda a, b: a * b), ("div", lambda a, b: a / b),
       ("max", lambda a, b: pyet.maximum(a, b) if isinstance(a, pyet.Tensor)
        else np.maximum(a, b)),
       ("less", lambda a, b: a < b),
       ("copysign", lambda a, b: pyet.copysign(a, b) if isinstance(a, pyet.Tensor)
        else np.copysign(a, b))]
INT_OPS = [("invert", lambda a, b: ~a), ("and", lambda a, b: a & b)]


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        a = (rng.standard_normal(shape) * 100).astype(dtype)
        b = (rng.standard_normal(shape) * 100).astype(dtype)
        a.flat[::97] = np.nan
        a.flat[5::101] = -0.0
        b.flat[7::89] = np.inf
        return a, b
    info = np.iinfo(dtype)
    return (rng.integers(info.min, info.max, shape, dtype=dtype),
            rng.integers(info.min, info.max, shape, dtype=dtype))


def both_ways(fn, a, b, out_dtype, one_thread=True):
    """fn's pass into a sentinel-framed destination, NumPy's loop and pyet's
    blocks: (loop result, blocks result)."""
    results = []
    before = pyet.get_num_threads()
    for on in (True, False):
        old = core.set_contiguous_loops(on)
        try:
            if one_thread:
                pyet.set_num_threads(1)
            buf = np.full(a.size + 2, 7, out_dtype)
            sentinel = buf[0].copy()
            out = buf[1:-1].reshape(a.shape)
            with np.errstate(invalid="ignore", over="ignore"):
                pyet.asarray(out)[...] = fn(pyet.asarray(a), pyet.asarray(b))
            assert buf[0] == sentinel and buf[-1] == sentinel
            results.append(out.copy())
        finally:
            core.set_contiguous_loops(old)
            pyet.set_num_threads(before)
    return results


def same_bits(x, y):
    assert x.dtype == y.dtype and x.tobytes() == y.tobytes()


@pytest.mark.parametrize("shape", [(5000,), (3, 2048), (2048, 3), (1,), (0,), "rows apart"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("name,fn", OPS + INT_OPS, ids=[o[0] for o in OPS + INT_OPS])
def test_loop_and_blocks_give_numpys_bits(name, fn, dtype, shape):
    if name in ("invert", "and") and np.dtype(dtype).kind == "f":
        pytest.skip("integer op")
    if shape == "rows apart":  # contiguous rows of 2048 that do not merge: a loop per row
        a, b = (x[:, :2048] for x in data((3, 2100), dtype))
    else:
        a, b = data(shape, dtype)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        want = fn(a, b)
    with np.errstate(divide="ignore"):
        loop, blocks = both_ways(fn, a, b, want.dtype)
    same_bits(loop, blocks)
    same_bits(loop, want)


def test_in_place_and_aliasing():
    a, b = data((6000,), np.float64, 1)
    want = a + b
    old = core.set_contiguous_loops(True)
    before = pyet.get_num_threads()
    pyet.set_num_threads(1)
    try:
        x = a.copy()
        tx = pyet.asarray(x)
        tx[...] = tx + pyet.asarray(b)
        same_bits(x, want)
        y = a.copy()
        pyet.asarray(y)[...] = abs(pyet.asarray(y))
        same_bits(y, np.abs(a))
    finally:
        core.set_contiguous_loops(old)
        pyet.set_num_threads(before)


@pytest.mark.parametrize("on", [True, False])
def test_floating_point_errors_either_way(on):
    a = np.full(5000, 3e38, np.float32)
    out = np.zeros_like(a)
    old = core.set_contiguous_loops(on)
    before = pyet.get_num_threads()
    pyet.set_num_threads(1)
    try:
        with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
            pyet.asarray(out)[...] = pyet.asarray(a) + pyet.asarray(a)
        with np.errstate(invalid="raise"):  # a compare with NaN is quiet, as NumPy's
            pyet.asarray(np.zeros(5000, bool))[...] = pyet.asarray(np.full(5000, np.nan)) < 1.0
    finally:
        core.set_contiguous_loops(old)
        pyet.set_num_threads(before)


def test_threads_and_fused_trees_keep_blocks_and_agree(threaded):
    a, b = data((20000,), np.float32, 2)
    loop_1t, _ = both_ways(lambda x, y: x + y, a, b, np.float32)
    two = np.empty_like(a)
    pyet.asarray(two)[...] = pyet.asarray(a) + pyet.asarray(b)
    same_bits(two, loop_1t)
    # a fused tree is not one op: pyet's blocks, NumPy's values
    fused = np.empty_like(a)
    with np.errstate(invalid="ignore"):
        pyet.asarray(fused)[...] = abs(pyet.asarray(a) + pyet.asarray(b))
        same_bits(fused, np.abs(a + b))


def test_explain_names_the_loop():
    a = np.zeros(5000)
    text = pyet.explain(pyet.asarray(a) + pyet.asarray(a))
    assert "NumPy's C loop" in text


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_packed_fields_keep_pyets_blocks(dtype):
    # a packed record's field (byte steps off the itemsize, unaligned) as an
    # operand or the destination: never NumPy's loop called in place on it
    n = 5000
    rec = np.zeros(n, np.dtype([("c", "u1"), ("x", dtype), ("y", dtype)]))
    a, b = data((n,), dtype, 3)
    rec["x"], rec["y"] = a, b
    out = np.zeros(n, np.dtype([("c", "u1"), ("z", dtype)]))
    out["c"] = 0xA5
    old = core.set_contiguous_loops(True)
    before = pyet.get_num_threads()
    pyet.set_num_threads(1)
    try:
        X, Y = pyet.asarray(rec["x"]), pyet.asarray(rec["y"])
        for fn in (lambda x, y: x + y, lambda x, y: abs(x),
                   lambda x, y: pyet.maximum(x, y) if isinstance(x, pyet.Tensor)
                   else np.maximum(x, y)):
            with np.errstate(invalid="ignore", over="ignore"):
                pyet.asarray(out["z"])[...] = fn(X, Y)
                want = fn(a, b)
            same_bits(out["z"].copy(), want)
            assert (out["c"] == 0xA5).all()
        plain = np.empty(n, dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            pyet.asarray(plain)[...] = abs(pyet.asarray(rec["x"]))
        same_bits(plain, np.abs(a))
    finally:
        core.set_contiguous_loops(old)
        pyet.set_num_threads(before)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype,extra", [(np.float32, 3), (np.float64, 3), (np.int32, 3),
                                         (np.float32, 1)])
def test_strided_packed_field_destinations(dtype, extra, threads):
    # a field of a packed record steps 13 (25) bytes: long enough a step for
    # the strided path, which called NumPy's bare loop on it (abs and maximum
    # wrote wrong values and into the pad byte); now pyet's blocks
    n = 4099
    x, y = data((n,), dtype, 4)
    fields = [("c", "u1")] + [(f"z{i}", dtype) for i in range(extra)]
    before = pyet.get_num_threads()
    pyet.set_num_threads(threads)
    try:
        for fn in (lambda a, b: abs(a), lambda a, b: a + b, lambda a, b: -a,
                   lambda a, b: pyet.maximum(a, b) if isinstance(a, pyet.Tensor)
                   else np.maximum(a, b)):
            out = np.zeros(n, np.dtype(fields))
            out["c"] = 0xA5
            with np.errstate(invalid="ignore", over="ignore"):
                pyet.asarray(out["z0"])[...] = fn(pyet.asarray(x), pyet.asarray(y))
                want = fn(x, y)
            same_bits(out["z0"].copy(), want)
            assert (out["c"] == 0xA5).all()
            for i in range(1, extra):
                assert (out[f"z{i}"] == 0).all()
    finally:
        pyet.set_num_threads(before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_misaligned_contiguous_destination(dtype):
    n = 5000
    itemsize = np.dtype(dtype).itemsize
    raw = np.full(n * itemsize + 2, 0xA5, np.uint8)
    out = np.frombuffer(raw.data, dtype, n, offset=1)
    assert not out.flags.aligned
    x, y = data((n,), dtype, 5)
    old = core.set_contiguous_loops(True)
    before = pyet.get_num_threads()
    pyet.set_num_threads(1)
    try:
        for fn in (lambda a, b: abs(a), lambda a, b: a + b):
            with np.errstate(invalid="ignore", over="ignore"):
                pyet.asarray(out)[...] = fn(pyet.asarray(x), pyet.asarray(y))
                want = fn(x, y)
            same_bits(out.copy(), want)
            assert raw[0] == 0xA5 and raw[-1] == 0xA5
    finally:
        core.set_contiguous_loops(old)
        pyet.set_num_threads(before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["add", "multiply", "divide", "subtract"])
def test_nan_of_either_sign_does_not_keep_the_loop_off(name, dtype):
    """The probe compares NaN positions, not which of two NaNs comes out (the compiler
    may swap a commutative op's operands): float32 add and multiply had been refused
    for -nan + nan alone. Either way both give NaN there and the same bits elsewhere."""
    a, b = data((5000,), dtype, 3)
    b[:3] = -np.nan
    a[:3] = np.nan
    fn = {"add": lambda x, y: x + y, "multiply": lambda x, y: x * y,
          "divide": lambda x, y: x / y, "subtract": lambda x, y: x - y}[name]
    text = pyet.explain(fn(pyet.asarray(a), pyet.asarray(b)))
    assert "NumPy's C loop" in text, text
    with np.errstate(all="ignore"):
        want = fn(a, b)
        loop, blocks = both_ways(fn, a, b, want.dtype)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(loop), nan)
    np.testing.assert_array_equal(np.isnan(blocks), nan)
    same_bits(loop[~nan], want[~nan])
    same_bits(blocks[~nan], want[~nan])


UNARY_FLOAT = ["absolute", "square", "floor", "ceil", "trunc", "rint", "reciprocal", "positive",
               "isnan", "isinf", "isfinite"]


@pytest.mark.parametrize("layout", ["contig", "step2", "step3", "step7", "reversed"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", UNARY_FLOAT)
def test_unary_float_ops_either_way(name, dtype, layout):
    """Exact unary float ops on NumPy's loop (strided, and contiguous but for
    reciprocal) and on pyet's blocks: NumPy's bits, specials and ties included."""
    rng = np.random.default_rng(11)
    n = 5000
    v = (rng.standard_normal(n) * 50).astype(dtype)
    v[::13] = np.round(v[::13]) + 0.5  # rint's ties
    v[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, -2.5]
    step = {"contig": 1, "step2": 2, "step3": 3, "step7": 7, "reversed": -1}[layout]
    base = np.zeros(n * abs(step), dtype)
    a = base[::step]
    a[...] = v
    fn = getattr(pyet, name)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a)
        loop, blocks = both_ways(lambda x, y: fn(x) if isinstance(x, pyet.Tensor)
                                 else getattr(np, name)(x), a, a, want.dtype)
    same_bits(loop, want)
    same_bits(blocks, want)


def test_reciprocal_keeps_blocks_on_contiguous_rows():
    a = np.ones(5000)
    on = core.set_contiguous_loops(True)
    core.set_contiguous_loops(on)
    square = pyet.explain(pyet.square(pyet.asarray(a)))
    assert "NumPy's C loop" in square and (not on or "contiguous on one thread" in square)
    text = pyet.explain(pyet.reciprocal(pyet.asarray(a)))
    assert "(strided: NumPy's C loop)" in text and "contiguous" not in text


@pytest.mark.parametrize("n", [5000, 300_000])
@pytest.mark.parametrize("case", ["ceil", "abs reversed", "xor step 2"])
def test_two_threads_give_one_threads_bits(case, n):
    """On two threads a pass below LOOP_THREADS_BYTES keeps NumPy's loop on one, and
    rows stepping two items keep pyet's blocks; either way the same bits, and the
    destination's neighbours untouched."""
    rng = np.random.default_rng(4)
    if case == "ceil":
        a, fn, ref = rng.standard_normal(n) * 50, pyet.ceil, np.ceil
    elif case == "abs reversed":
        a, fn, ref = (rng.standard_normal(n) * 50)[::-1], abs, np.abs
    else:
        a = rng.integers(-2**31, 2**31, 2 * n).astype(np.int32)[::2]
        fn, ref = (lambda t: t ^ 12345), (lambda x: x ^ 12345)
    results = []
    before = pyet.get_num_threads()
    try:
        for threads in (1, 2):
            pyet.set_num_threads(threads)
            buf = np.full(n + 2, 7, a.dtype)
            pyet.asarray(buf[1:-1])[...] = fn(pyet.asarray(a))
            assert buf[0] == 7 and buf[-1] == 7
            results.append(buf[1:-1].copy())
    finally:
        pyet.set_num_threads(before)
    same_bits(results[0], ref(a))
    same_bits(results[1], results[0])


@pytest.mark.parametrize("shape", [(8, 3000), (3, 2048), (300, 300), (2, 40000)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("name", ["maximum", "minimum"])
@pytest.mark.parametrize("column_first", [False, True])
def test_min_max_with_a_column_give_numpys_bits(name, dtype, shape, column_first):
    # NumPy's min/max loops run a stride-0 input (a column broadcast along
    # the rows) in their scalar loop, so such passes run pyet's kernel a row
    # at a time, the column its scalar (passes.pxi run_column_rows); with that
    # off, the blocks or NumPy's loop: NumPy's bits every way, NaN and -0.0 in
    # the column and the rows
    a, _ = data(shape, dtype, seed=5)
    col, _ = data((shape[0], 1), dtype, seed=6)
    if np.dtype(dtype).kind == "f":
        col[0, 0], col[-1, 0] = np.nan, -0.0
        a[:, ::7] = 0.0
    A, C = pyet.asarray(a), pyet.asarray(col)
    fp, fn = getattr(pyet, name), getattr(np, name)
    args, np_args = ((C, A), (col, a)) if column_first else ((A, C), (a, col))
    with np.errstate(invalid="ignore"):
        want = fn(*np_args)
    for on, rows in ((True, True), (True, False), (False, False)):
        old, old_rows = core.set_contiguous_loops(on), core.set_column_rows(rows)
        before = pyet.get_num_threads()
        try:
            pyet.set_num_threads(1)
            buf = np.full(a.size + 2, 7, dtype)
            out = buf[1:-1].reshape(shape)
            count = core.column_rows_count()
            with np.errstate(invalid="ignore"):
                pyet.asarray(out)[...] = fp(*args)
            assert (core.column_rows_count() > count) == rows
        finally:
            core.set_contiguous_loops(old)
            core.set_column_rows(old_rows)
            pyet.set_num_threads(before)
        same_bits(out, want)
        assert buf[0] == 7 and buf[-1] == 7
