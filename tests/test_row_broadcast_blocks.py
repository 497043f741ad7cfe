"""Rows with a row broadcast (a bias ``z + b``, gathered once per chunk of
blocks) or a column broadcast (``z * c`` of a ``(n, 1)`` column, filled a
block of rows at a time) beside flat operands run packed in blocks of whole
rows (blocks.pxi rows_with_broadcast); instructions that read only the row
broadcasts run on a chunk's first block only (passes.pxi chunk_invariant), and
those that read only the columns on one element a row (plan_columns).
Values against NumPy, and bit for bit against the same passes run row by row
(core.set_row_broadcasts_once(False))."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet
from pyet._core import core

DTYPES = [np.float32, np.float64, np.int32, np.int64]


def _values(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


def _both_ways(fn):
    # fn() as pyet runs it, and with the same rows run one by one
    out = fn()
    core.set_row_broadcasts_once(False)
    try:
        return out, fn()
    finally:
        core.set_row_broadcasts_once(True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(32, 128), (256, 10), (7, 129), (3, 511), (5, 300),
                                   (1, 200), (2, 3, 130), (4, 1), (600, 2)])
def test_bias_and_relu_equal_numpy_and_row_by_row(dtype, shape):
    rng = np.random.default_rng(0)
    z, b = _values(rng, shape, dtype), _values(rng, shape[-1:], dtype)
    Z, B = pyet.asarray(z), pyet.asarray(b)

    def run():
        out = np.full(shape, 77, dtype)
        out_t = pyet.asarray(out)
        out_t[...] = pyet.maximum(Z + B, 0) * B - B
        return out

    out, ref = _both_ways(run)
    np.testing.assert_array_equal(out, np.maximum(z + b, 0) * b - b)
    np.testing.assert_array_equal(out.view(np.uint8), ref.view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_several_row_broadcasts_and_a_broadcast_bool_row(dtype):
    rng = np.random.default_rng(1)
    z = _values(rng, (40, 150), dtype)
    b, c = _values(rng, 150, dtype), _values(rng, 150, dtype)
    keep = rng.random(150) < 0.5
    Z, B, C, K = pyet.asarray(z), pyet.asarray(b), pyet.asarray(c), pyet.asarray(keep)
    out, ref = _both_ways(lambda: pyet.evaluate(
        pyet.where(K, Z * B + C, Z - C)).numpy())
    np.testing.assert_allclose(out, np.where(keep, z * b + c, z - c), rtol=1e-6)
    np.testing.assert_array_equal(out, ref)


def test_destination_inside_sentinels_and_a_column_slice_destination():
    # a destination that is not flat (every other row of a wider array) is
    # not packed with the broadcast: the rows of the pass stay row by row
    rng = np.random.default_rng(2)
    z, b = _values(rng, (33, 140), np.float64), _values(rng, 140, np.float64)
    buf = np.full(33 * 140 + 16, -5.0)
    out = buf[8:-8].reshape(33, 140)
    pyet.asarray(out)[...] = pyet.asarray(z) + pyet.asarray(b)
    np.testing.assert_array_equal(out, z + b)
    assert (buf[:8] == -5).all() and (buf[-8:] == -5).all()
    wide = np.full((33, 300), -5.0)
    pyet.asarray(wide[:, 10:150])[...] = pyet.asarray(z) * pyet.asarray(b)
    np.testing.assert_array_equal(wide[:, 10:150], z * b)
    assert (wide[:, :10] == -5).all() and (wide[:, 150:] == -5).all()


def test_aliasing_destination_and_reversed_broadcast():
    rng = np.random.default_rng(3)
    z, b = _values(rng, (50, 200), np.float32), _values(rng, 200, np.float32)
    expect = z + b[::-1] * 2
    Z = pyet.asarray(z)
    Z[...] = Z + pyet.asarray(b[::-1]) * 2  # in place, a reversed row
    np.testing.assert_array_equal(z, expect)
    w = _values(rng, (50, 200), np.float32)
    expect = w * w[0]
    W = pyet.asarray(w)
    W[...] = W * W[0]  # the broadcast row is a row of the destination
    np.testing.assert_array_equal(w, expect)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_threads_split_the_blocks(dtype, threaded):
    # each thread's chunk gathers the broadcast for its own first block
    rng = np.random.default_rng(4)
    for shape in [(97, 130), (64, 10), (9, 400)]:
        z, b = _values(rng, shape, dtype), _values(rng, shape[-1:], dtype)
        out, ref = _both_ways(lambda z=z, b=b: pyet.evaluate(
            pyet.tanh(pyet.asarray(z) - pyet.asarray(b))).numpy())
        np.testing.assert_allclose(out, np.tanh(z - b), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(out, ref)


def test_kept_plan_replays_the_packed_pass():
    rng = np.random.default_rng(5)
    z, b = _values(rng, (64, 128), np.float32), _values(rng, 128, np.float32)
    out = np.empty_like(z)
    plan = pyet.EvalPlan()
    plan.assign(out, pyet.maximum(pyet.asarray(z) + pyet.asarray(b), 0))
    for _ in range(3):
        plan.run(keep=True)
        np.testing.assert_array_equal(out, np.maximum(z + b, 0))
        b += 1


@settings(max_examples=100, deadline=None)
@given(rows=st.integers(1, 70), inner=st.integers(1, 600), lead=st.integers(1, 3),
       dtype=st.sampled_from([np.float32, np.float64, np.int64]),
       block=st.sampled_from([32, 512]), column=st.booleans())
def test_random_shapes_and_block_sizes(rows, inner, lead, dtype, block, column):
    # z * 2 + b of a row b, or of a column
    rng = np.random.default_rng(rows * 1000 + inner)
    shape = (lead, rows, inner)
    z = _values(rng, shape, dtype)
    b = _values(rng, (lead, rows, 1) if column else (inner,), dtype)
    before = core.get_block_size()
    core.set_block_size(block)
    try:
        out, ref = _both_ways(lambda: pyet.evaluate(
            pyet.asarray(z) * 2 + pyet.asarray(b)).numpy())
    finally:
        core.set_block_size(before)
    np.testing.assert_array_equal(out, z * 2 + b)
    np.testing.assert_array_equal(out, ref)


COLUMN_SHAPES = [(256, 128), (512, 200), (7, 129), (3, 256), (5, 300), (1, 200),
                 (2, 3, 130), (600, 2), (4, 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", COLUMN_SHAPES)
def test_column_broadcast_equals_numpy_and_row_by_row(dtype, shape):
    rng = np.random.default_rng(6)
    z = _values(rng, shape, dtype)
    c = _values(rng, shape[:-1] + (1,), dtype)
    b = _values(rng, shape[-1:], dtype)
    Z, C, B = pyet.asarray(z), pyet.asarray(c), pyet.asarray(b)
    buf = np.full(z.size + 32, 77, dtype)
    out = buf[16:-16].reshape(shape)

    def run():
        pyet.asarray(out)[...] = Z * C - C
        first = out.copy()
        pyet.asarray(out)[...] = pyet.maximum(Z + B, C) * C  # a row and a column
        return first, out.copy()

    (col, both), (col_ref, both_ref) = _both_ways(run)
    np.testing.assert_array_equal(col, z * c - c)
    np.testing.assert_array_equal(both, np.maximum(z + b, c) * c)
    for got, ref in [(col, col_ref), (both, both_ref)]:
        np.testing.assert_array_equal(got.view(np.uint8), ref.view(np.uint8))
    assert (buf[:16] == 77).all() and (buf[-16:] == 77).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_of_the_destination_and_a_reversed_column(dtype):
    rng = np.random.default_rng(7)
    w = _values(rng, (64, 150), dtype)
    expect = w * w[:, :1] + 1
    W = pyet.asarray(w)
    W[...] = W * W[:, :1] + 1  # the column is the destination's first column
    np.testing.assert_array_equal(w, expect)
    z, c = _values(rng, (64, 150), dtype), _values(rng, (64, 1), dtype)
    out = np.empty_like(z)
    pyet.asarray(out)[...] = pyet.exp(pyet.asarray(z)) * pyet.asarray(c[::-1])
    np.testing.assert_allclose(out, np.exp(z) * c[::-1], rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_columns_split_between_threads(dtype, threaded):
    rng = np.random.default_rng(8)
    for shape in [(97, 130), (300, 200), (9, 256)]:
        z, c = _values(rng, shape, dtype), _values(rng, (shape[0], 1), dtype)
        out, ref = _both_ways(lambda z=z, c=c: pyet.evaluate(
            pyet.tanh(pyet.asarray(z) * pyet.asarray(c))).numpy())
        np.testing.assert_allclose(out, np.tanh(z * c), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(out, ref)


def _row_trees(Z, B, C, D=None):
    # (tree, NumPy reference): subtrees of the row B alone, computed once a chunk
    return [
        (lambda: Z + pyet.exp(B), lambda z, b, c: z + np.exp(b)),
        (lambda: Z * pyet.sin(B) + pyet.cos(B) * 2, lambda z, b, c: z * np.sin(b) + np.cos(b) * 2),
        (lambda: pyet.where(Z > pyet.tanh(B), pyet.exp(B) - 1, Z * B),
         lambda z, b, c: np.where(z > np.tanh(b), np.exp(b) - 1, z * b)),
        (lambda: (Z + B) * pyet.sqrt(pyet.abs(B) + 1) - B * B,
         lambda z, b, c: (z + b) * np.sqrt(np.abs(b) + 1) - b * b),
        (lambda: Z * pyet.exp(B) + C, lambda z, b, c: z * np.exp(b) + c),
        (lambda: pyet.exp(B) * 0.5 + Z, lambda z, b, c: np.exp(b) * 0.5 + z),
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(300, 128), (7, 129), (1000, 3), (2, 3, 130), (64, 64),
                                   (600, 2), (1, 200)])
@pytest.mark.parametrize("tree", range(6))
def test_row_subtrees_once_a_chunk_equal_every_block(dtype, shape, tree):
    rng = np.random.default_rng(9 + tree)
    z = _values(rng, shape, dtype)
    b = rng.uniform(-2, 2, shape[-1]).astype(dtype)
    c = _values(rng, shape[:-1] + (1,), dtype)
    build, ref = _row_trees(*map(pyet.asarray, (z, b, c)))[tree]
    buf = np.full(z.size + 32, 77, dtype)
    out = buf[16:-16].reshape(shape)

    def run():
        pyet.asarray(out)[...] = build()
        return out.copy()

    got, every_block = _both_ways(run)
    np.testing.assert_array_equal(got.view(np.uint8), every_block.view(np.uint8))
    tol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, ref(z, b, c), rtol=tol, atol=tol)
    assert (buf[:16] == 77).all() and (buf[-16:] == 77).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_subtrees_once_per_thread_chunk(dtype, threaded):
    # each thread computes them on its chunk's first block
    rng = np.random.default_rng(10)
    for shape in [(97, 130), (500, 64), (9, 256)]:
        z = _values(rng, shape, dtype)
        b = rng.uniform(-2, 2, shape[-1]).astype(dtype)
        out, ref = _both_ways(lambda z=z, b=b: pyet.evaluate(
            pyet.asarray(z) * pyet.exp(pyet.asarray(b)) - pyet.tanh(pyet.asarray(b))).numpy())
        np.testing.assert_allclose(out, z * np.exp(b) - np.tanh(b), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(out, ref)


def _column_trees(Z, B, C, D):
    # (tree, NumPy reference) over Z (..., n, m), a row B (m,), columns C, D (..., n, 1):
    # subtrees of the columns alone computed one element a row
    return [
        (lambda: Z * pyet.tanh(C), lambda z, b, c, d: z * np.tanh(c)),
        (lambda: Z * pyet.exp(C) + C, lambda z, b, c, d: z * np.exp(c) + c),  # c read by both
        (lambda: pyet.where(Z > pyet.sin(C), pyet.cos(D) * 2, Z - D),
         lambda z, b, c, d: np.where(z > np.sin(c), np.cos(d) * 2, z - d)),
        (lambda: Z * pyet.sin(B) + pyet.cos(C), lambda z, b, c, d: z * np.sin(b) + np.cos(c)),
        (lambda: (Z + pyet.exp(C * D)) * pyet.sqrt(pyet.abs(C) + 1) - C * 0.5,
         lambda z, b, c, d: (z + np.exp(c * d)) * np.sqrt(np.abs(c) + 1) - c * 0.5),
        (lambda: pyet.tanh(C) * pyet.exp(B) + Z * C,  # an outer product of row and column
         lambda z, b, c, d: np.tanh(c) * np.exp(b) + z * c),
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(300, 128), (7, 129), (1000, 3), (2, 3, 130), (64, 64),
                                   (600, 2), (1, 200), (5, 256), (5000, 2), (1500, 3)])
@pytest.mark.parametrize("tree", range(6))
def test_column_subtrees_once_a_row_equal_every_element(dtype, shape, tree):
    rng = np.random.default_rng(20 + tree)
    z = _values(rng, shape, dtype)
    b = rng.uniform(-2, 2, shape[-1]).astype(dtype)
    c = rng.uniform(-2, 2, shape[:-1] + (1,)).astype(dtype)
    d = rng.uniform(-2, 2, shape[:-1] + (1,)).astype(dtype)
    build, ref = _column_trees(*map(pyet.asarray, (z, b, c, d)))[tree]
    buf = np.full(z.size + 32, 77, dtype)
    out = buf[16:-16].reshape(shape)
    before = core.set_hoist_saved(-1)  # (the pass's work, not scratch's)
    try:
        def run():
            pyet.asarray(out)[...] = build()
            return out.copy()

        got, every_element = _both_ways(run)
    finally:
        core.set_hoist_saved(before)
    np.testing.assert_array_equal(got.view(np.uint8), every_element.view(np.uint8))
    tol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, ref(z, b, c, d), rtol=tol, atol=tol)
    assert (buf[:16] == 77).all() and (buf[-16:] == 77).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_columns_of_views_and_of_the_destination(dtype):
    rng = np.random.default_rng(30)
    w = _values(rng, (100, 150), dtype)
    expect = w * np.exp(w[:, :1] * 0.1)
    W = pyet.asarray(w)
    W[...] = W * pyet.exp(W[:, :1] * 0.1)  # the column is dst's first column
    np.testing.assert_allclose(w, expect, rtol=1e-6)
    z = _values(rng, (100, 150), dtype)
    big = rng.uniform(-1, 1, (300, 7)).astype(dtype)
    col = big[::3, 2:3][::-1]  # a strided, reversed column
    out = np.empty_like(z)
    pyet.asarray(out)[...] = pyet.asarray(z) * pyet.tanh(pyet.asarray(col))
    np.testing.assert_allclose(out, z * np.tanh(col), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_subtrees_split_between_threads(dtype, threaded):
    rng = np.random.default_rng(31)
    for shape in [(97, 130), (500, 64), (9, 256)]:
        z = _values(rng, shape, dtype)
        c = rng.uniform(-2, 2, (shape[0], 1)).astype(dtype)
        out, ref = _both_ways(lambda z=z, c=c: pyet.evaluate(
            pyet.asarray(z) * pyet.tanh(pyet.asarray(c)) - pyet.exp(pyet.asarray(c))).numpy())
        np.testing.assert_allclose(out, z * np.tanh(c) - np.exp(c), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(out, ref)


def test_column_subtrees_are_left_to_the_pass_not_hoisted():
    # into C order in rows of up to half a block, no scratch; into Fortran order, hoisted
    z, c = np.ones((300, 128)), np.linspace(0, 1, 300).reshape(300, 1)
    Z, C = pyet.asarray(z), pyet.asarray(c)
    pyet.stats(reset=True)
    pyet.asarray(out := np.empty((300, 128)))[...] = Z * pyet.tanh(C)
    assert pyet.stats()["scratch_bytes"] == 0
    np.testing.assert_allclose(out, z * np.tanh(c), rtol=1e-14)
    pyet.stats(reset=True)
    pyet.asarray(out := np.empty((300, 128), order="F"))[...] = Z * pyet.tanh(C)
    assert pyet.stats()["scratch_bytes"] == c.nbytes


@settings(max_examples=80, deadline=None)
@given(rows=st.integers(1, 70), inner=st.integers(1, 300), lead=st.integers(1, 3),
       dtype=st.sampled_from([np.float32, np.float64]), block=st.sampled_from([32, 512]),
       tree=st.integers(0, 11))
def test_random_row_and_column_subtrees_and_block_sizes(rows, inner, lead, dtype, block, tree):
    rng = np.random.default_rng(rows * 1000 + inner)
    shape = (lead, rows, inner)
    z, b = _values(rng, shape, dtype), rng.uniform(-2, 2, inner).astype(dtype)
    c = rng.uniform(-2, 2, (lead, rows, 1)).astype(dtype)
    d = rng.uniform(-2, 2, (lead, rows, 1)).astype(dtype)
    operands = tuple(map(pyet.asarray, (z, b, c, d)))
    build, _ = (_row_trees(*operands) + _column_trees(*operands))[tree]
    before = core.get_block_size(), core.set_hoist_saved(-1)
    core.set_block_size(block)
    try:
        out, ref = _both_ways(lambda: pyet.evaluate(build()).numpy())
    finally:
        core.set_block_size(before[0])
        core.set_hoist_saved(before[1])
    np.testing.assert_array_equal(out.view(np.uint8), ref.view(np.uint8))


def _packed_field(values, lead=1):
    # values as a field of a packed structured array: its byte strides are
    # not multiples of its itemsize (a ``lead``-byte field before it)
    rec = np.dtype([("pad", f"V{lead}"), ("x", values.dtype)], align=False)
    s = np.zeros(values.shape, rec)
    s["x"] = values
    return s["x"]


def _framed_dst(shape, dtype, layout):
    # (bytes around and under dst, dst): C or Fortran order inside sentinel
    # bytes, or a field of a packed structured array between sentinel fields
    if layout == "field":
        rec = np.dtype([("a", "u1"), ("x", dtype), ("b", "u1")], align=False)
        s = np.zeros(shape, rec)
        s["a"] = s["b"] = 0xA5
        return s.reshape(-1).view(np.uint8), s["x"]
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buf = np.full(n + 128, 0xA5, np.uint8)
    body = buf[64:64 + n].view(dtype)
    return buf, (body.reshape(shape) if layout == "C" else body.reshape(shape[::-1]).T)


def _sentinels_kept(buf, out):
    # every byte of buf outside out's elements is still 0xA5
    mask = np.ones(buf.size, bool)
    start = out.__array_interface__["data"][0] - buf.__array_interface__["data"][0]
    idx = start + np.indices(out.shape).reshape(out.ndim, -1).T @ np.array(out.strides)
    for k in range(out.itemsize):
        mask[idx + k] = False
    return (buf[mask] == 0xA5).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("odd", ["fields", "reversed"])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("a_odd", [False, True])
@pytest.mark.parametrize("dst_layout", ["order", "field"])
def test_odd_operand_layouts_beside_packed_passes(dtype, odd, order, a_odd, dst_layout):
    # the trees packed passes compute rows and columns of (once a chunk, once
    # a row), the row and column (and A with a_odd) with byte strides that
    # are not multiples of their itemsize (fields of packed structured
    # arrays) or negative (reversed views), A in C or Fortran order, into
    # destinations inside sentinel bytes (of A's order, or a field): NumPy's
    # values, no other byte written, with hoisting on and off; where A and
    # dst are flat in one order a column's subtree is the pass's (no scratch)
    rng = np.random.default_rng(11)
    shape = (40, 96)
    a, b, c = _values(rng, shape, dtype), _values(rng, shape[1], dtype), \
        _values(rng, (shape[0], 1), dtype)
    a = np.asarray(a, order=order)

    def oddly(x, lead):
        if odd == "fields":
            return _packed_field(x, lead)
        r = np.flip(np.flip(x).copy())  # the same values through negative strides
        assert all(st <= 0 for st in r.strides)
        return r

    A = pyet.asarray(oddly(a, 1) if a_odd else a)
    B, C = pyet.asarray(oddly(b, 3)), pyet.asarray(oddly(c, 5))
    fl = np.dtype(dtype).kind == "f"
    # (a column of the pass is read strided where it lies; a row must be flat:
    # c is the column of a C-ordered pass, b of a Fortran-ordered one)
    trees = [(lambda: A * pyet.tanh(C), lambda: a * np.tanh(c), order == "C"),
             (lambda: A * pyet.exp(B), lambda: a * np.exp(b), order == "F"),
             (lambda: A * pyet.sin(B) + pyet.cos(C), lambda: a * np.sin(b) + np.cos(c), False)] \
        if fl else [(lambda: A * C + B, lambda: a * c + b, False),
                    (lambda: (B - C) * A, lambda: (b - c) * a, False)]
    for build, ref, column_only in trees:
        with np.errstate(all="ignore"):
            want = ref().astype(dtype)
        for saved in (0, -1):
            before = core.set_hoist_saved(saved)
            try:
                buf, out = _framed_dst(shape, dtype, order if dst_layout == "order" else "field")
                pyet.stats(reset=True)
                pyet.asarray(out)[...] = build()
                scratch = pyet.stats()["scratch_bytes"]
            finally:
                core.set_hoist_saved(before)
            if fl:
                tol = 2e-6 if dtype == np.float32 else 1e-13
                np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
            else:
                np.testing.assert_array_equal(out, want)
            assert _sentinels_kept(buf, out)
            if column_only and saved == 0 and dst_layout == "order" and not a_odd:
                assert scratch == 0  # (the packed pass's own column, read strided)


def _strided_rows_dst(shape, dtype, layout):
    # (buffer of 0xA5 bytes, dst in it) with dst's rows strided: every other
    # item (rows following on, or with a gap after each), every third,
    # reversed, reversed every other, or every other of a 3-D array
    isz = np.dtype(dtype).itemsize
    rows, m = int(np.prod(shape[:-1])), shape[-1]
    width = {"step2": 2 * m, "step2 gaps": 2 * m + 3, "step3": 3 * m, "reversed": m + 5,
             "reversed step2": 2 * m + 1}[layout]
    buf = np.full((rows * width + 32) * isz, 0xA5, np.uint8)
    body = buf[16 * isz:(16 + rows * width) * isz].view(dtype).reshape(rows, width)
    out = {"step2": body[:, ::2], "step2 gaps": body[:, :2 * m:2], "step3": body[:, ::3],
           "reversed": body[:, m - 1::-1], "reversed step2": body[:, 2 * m - 2::-2]}[layout]
    return buf, out.reshape(shape)


_STRIDED_ROWS = ["step2", "step2 gaps", "step3", "reversed", "reversed step2"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", _STRIDED_ROWS)
@pytest.mark.parametrize("shape", [(40, 96), (7, 129), (600, 2), (3, 5, 64), (1, 200), (130, 3)])
def test_strided_row_destinations_packed_and_scattered(dtype, layout, shape):
    # a destination whose rows are strided takes the packed pass with the
    # row or column broadcast (strided_rows), its blocks written back whole
    # rows at a time (pyet_scatter_rows): NumPy's values, the same bits as
    # row by row, no other byte of the buffer written
    rng = np.random.default_rng(12)
    z = _values(rng, shape, dtype)
    b, c = _values(rng, shape[-1:], dtype), _values(rng, shape[:-1] + (1,), dtype)
    Z, B, C = pyet.asarray(z), pyet.asarray(b), pyet.asarray(c)
    for build, want in [(lambda: Z + B, z + b), (lambda: Z * C - B, z * c - b),
                        (lambda: pyet.where(Z > B, C, Z), np.where(z > b, c, z))]:
        def run(build=build):
            buf, out = _strided_rows_dst(shape, dtype, layout)
            pyet.asarray(out)[...] = build()
            return buf, out

        (buf, out), (ref_buf, _) = _both_ways(run)
        np.testing.assert_array_equal(out, want)
        np.testing.assert_array_equal(buf, ref_buf)
        assert _sentinels_kept(buf, out)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", _STRIDED_ROWS)
@pytest.mark.parametrize("tree", range(7))
def test_row_subtrees_into_strided_rows_are_the_pass_s(dtype, layout, tree):
    # a costly subtree of the row (once a chunk) or of a column (once a row)
    # into strided rows is the packed pass's: no scratch even where hoisting
    # would save any time; the same bits as hoisted and as fused row by row
    rng = np.random.default_rng(13)
    shape = (70, 96)
    z, b, c = _values(rng, shape, dtype), _values(rng, 96, dtype), _values(rng, (70, 1), dtype)
    Z, B, C = pyet.asarray(z), pyet.asarray(b), pyet.asarray(c)
    trees = _row_trees(Z, B, C) + [(lambda: Z * pyet.tanh(C), lambda z, b, c: z * np.tanh(c))]
    build, ref = trees[tree]
    results = []
    for saved in (0, -1):
        before = core.set_hoist_saved(saved)
        try:
            buf, out = _strided_rows_dst(shape, dtype, layout)
            pyet.stats(reset=True)
            pyet.asarray(out)[...] = build()
            if saved == 0:
                assert pyet.stats()["scratch_bytes"] == 0
        finally:
            core.set_hoist_saved(before)
        assert _sentinels_kept(buf, out)
        results.append(buf)
    with np.errstate(all="ignore"):
        want = ref(z, b, c)
    tol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
    np.testing.assert_array_equal(results[0], results[1])


def test_rows_with_gaps_between_them_are_not_packed():
    # contiguous rows with gaps between them stay row by row (written where
    # they lie): a costly column subtree is hoisted there
    c = np.linspace(0, 1, 64).reshape(64, 1)
    out = np.empty((128, 64))[::2]
    pyet.stats(reset=True)
    pyet.asarray(out)[...] = pyet.asarray(np.ones((64, 64))) * pyet.tanh(pyet.asarray(c))
    assert pyet.stats()["scratch_bytes"] == c.nbytes
    np.testing.assert_allclose(out, np.tanh(c) * np.ones((64, 64)), rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_rows_split_between_threads(dtype, threaded):
    rng = np.random.default_rng(14)
    for shape in [(97, 130), (300, 200), (2000, 4)]:
        z, c = _values(rng, shape, dtype), _values(rng, (shape[0], 1), dtype)
        b = _values(rng, shape[1], dtype)

        def run(z=z, c=c, b=b, shape=shape):
            buf, out = _strided_rows_dst(shape, dtype, "step2 gaps")
            pyet.asarray(out)[...] = pyet.tanh(pyet.asarray(z) * pyet.asarray(c)) + \
                pyet.asarray(b)
            return buf, out

        (buf, out), (ref_buf, _) = _both_ways(run)
        np.testing.assert_allclose(out, np.tanh(z * c) + b, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(buf, ref_buf)
        assert _sentinels_kept(buf, out)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_row_destinations_that_alias_their_operands(dtype):
    # dst every other item of big, read by the tree itself (in place), as
    # its reversed view, or beside it (the other items of big): NumPy's values
    # as if the right-hand side were computed first, the other items untouched
    rng = np.random.default_rng(15)
    rows, m = 50, 96
    row, col = _values(rng, m, dtype), _values(rng, (rows, 1), dtype)
    R, C = pyet.asarray(row), pyet.asarray(col)
    cases = [
        (lambda D, other: D * C + pyet.exp(R), lambda d, other: d * col + np.exp(row)),
        (lambda D, other: D[:, ::-1] + R, lambda d, other: d[:, ::-1] + row),
        (lambda D, other: other * pyet.tanh(C) - R, lambda d, other: other * np.tanh(col) - row),
    ]
    for build, ref in cases:
        big = _values(rng, (rows, 2 * m), dtype)
        d, other = big[:, ::2], big[:, 1::2]
        with np.errstate(all="ignore"):
            want, keep = ref(d.copy(), other.copy()).astype(dtype), other.copy()
        pyet.asarray(d)[...] = build(pyet.asarray(d), pyet.asarray(other))
        tol = 2e-6 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(d, want, rtol=tol, atol=tol)
        np.testing.assert_array_equal(big[:, 1::2], keep)
