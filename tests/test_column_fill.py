"""Trees whose leaves are all columns along the destination's rows (an (n, 1)
broadcast to (n, m), 0-d tensors) compute one element a row and fill each row
from it (passes.pxi plan_once, fill_rows); trees whose leaves are all
broadcast along other dimensions of it (exp(b) of a row b into a matrix, of a
(n, 1, m) into (n, k, m)) compute index 0 of those and copy the block after
them to the other indices (finish_once, copy_items).  Values against
NumPy, bit for bit against the same passes run element by element
(core.set_columns_once(False)), sentinel bytes around every destination."""

import numpy as np
import pytest
from conftest import pyet_threads
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet
from pyet._core import core

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64]
SENTINEL = 0xA5


def _values(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


def _framed(shape, dtype, layout):
    # a destination of shape inside a sentinel-filled buffer: (buffer, view)
    isz = np.dtype(dtype).itemsize
    n = int(np.prod(shape)) if shape else 1
    buf = np.full((4 * n + 64) * isz, SENTINEL, np.uint8)
    body = buf[32 * isz:32 * isz + n * isz].view(dtype)
    if layout == "C":
        view = body.reshape(shape)
    elif layout == "F":
        view = body.reshape(shape[::-1]).T
    elif layout == "step2":  # every other element of a buffer twice as long
        body = buf[32 * isz:32 * isz + 2 * n * isz].view(dtype)[::2]
        view = body.reshape(shape)
    elif layout == "reversed":
        view = body.reshape(shape)[..., ::-1]
    else:
        raise ValueError(layout)
    return buf, view


def _run(expr_fn, shape, dtype, layout):
    buf, out = _framed(shape, dtype, layout)
    pyet.asarray(out)[...] = expr_fn()
    return buf, out


def _both_ways(expr_fn, shape, dtype, layout):
    buf, out = _run(expr_fn, shape, dtype, layout)
    core.set_columns_once(False)
    try:
        ref_buf, ref = _run(expr_fn, shape, dtype, layout)
    finally:
        core.set_columns_once(True)
    return buf, out, ref_buf


def _check_frame(buf, out):
    # every byte of buf outside out's elements is still the sentinel
    mask = np.ones(buf.size, bool)
    lo = out.__array_interface__["data"][0] - buf.__array_interface__["data"][0]
    isz = out.dtype.itemsize
    idx = np.indices(out.shape).reshape(out.ndim, -1) if out.ndim else np.zeros((0, 1), int)
    offs = lo + (np.asarray(out.strides)[:, None] * idx).sum(0) if out.ndim else np.array([lo])
    for b in range(isz):
        mask[offs + b] = False
    assert (buf[mask] == SENTINEL).all()


# (destination shape, leaf shape): columns, every leaf's last axis broadcast
SHAPES = [((512, 512), (512, 1)), ((3, 4, 5), (3, 4, 1)), ((3, 4, 5), (1, 4, 1)),
          ((3, 4, 5), (3, 1, 1)), ((7,), (1,)), ((2, 3), (1, 1)), ((5, 600), (5, 1)),
          ((1000, 2), (1000, 1)), ((6, 1), (6, 1)), ((2, 3, 4, 5), (2, 1, 4, 1))]
# rows: the leading axes broadcast
ROWS = [((512, 512), (512,)), ((1000, 3), (3,)), ((3, 4, 5), (4, 5)), ((3, 4, 5), (1, 1, 5)),
        ((3, 4, 5), (1, 4, 1)), ((2, 3, 4, 5), (4, 5)), ((2, 3, 4, 5), (1, 3, 1, 5)),
        ((7, 1), (1,)), ((600, 40), (1, 40))]
# middle: dimensions between others broadcast (with the last: a column too)
MIDDLE = [((3, 40, 64), (3, 1, 64)), ((40, 7, 40), (40, 1, 40)), ((2, 30, 300), (2, 1, 300)),
          ((8, 6, 16, 4), (8, 1, 16, 1)), ((5, 30, 3, 40), (1, 30, 1, 40)),
          ((4, 5, 6, 70), (4, 1, 1, 70)), ((9, 3, 8, 3, 40), (9, 1, 8, 1, 40))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,col", SHAPES + ROWS + MIDDLE)
@pytest.mark.parametrize("layout", ["C", "F", "step2", "reversed"])
def test_broadcast_trees_equal_numpy_and_element_by_element(dtype, shape, col, layout):
    # columns (the fill) and rows (the block copy) of every leaf
    rng = np.random.default_rng(0)
    a, b = _values(rng, col, dtype), _values(rng, col, dtype)
    A, B = pyet.asarray(np.broadcast_to(a, shape)), pyet.asarray(np.broadcast_to(b, shape))
    if dtype == np.bool_:
        def expr():
            return (A & ~B) | (A ^ B)
        want = (a & ~b) | (a ^ b)
    else:
        def expr():
            return A * B - A
        want = a * b - a
    buf, out, ref_buf = _both_ways(expr, shape, dtype, layout)
    np.testing.assert_array_equal(out, np.broadcast_to(want, shape))
    np.testing.assert_array_equal(buf, ref_buf)
    _check_frame(buf, out)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("leaf_shape", [(300, 1), (70,)])
def test_leaf_assigned_into_wider_destination(dtype, leaf_shape):
    # dst[...] = col * 2 with col (n, 1) or a row (m,): the assignment
    # broadcasts the leaf
    rng = np.random.default_rng(1)
    col = _values(rng, leaf_shape, dtype)
    C = pyet.asarray(col)
    buf, out = _run(lambda: C * 2 if dtype != np.bool_ else ~C, (300, 70), dtype, "C")
    want = col * 2 if dtype != np.bool_ else ~col
    np.testing.assert_array_equal(out, np.broadcast_to(want, (300, 70)))
    _check_frame(buf, out)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (9,), (4096,), (3, 700), (2, 2, 2)])
def test_zero_d_tensors_fill_the_destination(dtype, shape):
    rng = np.random.default_rng(2)
    s, t = _values(rng, (), dtype), _values(rng, (), dtype)
    S, T = pyet.asarray(np.asarray(s)), pyet.asarray(np.asarray(t))
    if dtype == np.bool_:
        def expr():
            return pyet.maximum(S, T) ^ T
        want = np.maximum(s, t) ^ t
    else:
        def expr():
            return pyet.maximum(S, T) - S
        want = np.maximum(s, t) - s
    buf, out, ref_buf = _both_ways(expr, shape, dtype, "step2")
    np.testing.assert_array_equal(out, np.broadcast_to(want, shape))
    np.testing.assert_array_equal(buf, ref_buf)
    _check_frame(buf, out)


def test_bool_bytes_beyond_one_read_as_true():
    # bool columns viewed from bytes 2-255: the filled rows hold NumPy's 0/1
    raw = np.array([0, 1, 2, 200, 255, 0, 7], np.uint8).reshape(7, 1)
    a = raw.view(np.bool_)
    A = pyet.asarray(np.broadcast_to(a, (7, 40)))
    buf, out = _run(lambda: A | A, (7, 40), np.bool_, "C")
    want = np.broadcast_to(a, (7, 40)) | np.broadcast_to(a, (7, 40))
    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))
    _check_frame(buf, out)


def test_user_function_called_once_a_row():
    # F(fn, column) sees one element a row, not the row's width
    seen = []

    def fn(x):
        seen.append(x.size)
        return np.sin(x)

    col = np.linspace(0, 1, 200).reshape(200, 1)
    C = pyet.asarray(np.broadcast_to(col, (200, 300)))
    out = np.empty((200, 300))
    pyet.asarray(out)[...] = pyet.F(fn, C) + 1.0
    np.testing.assert_allclose(out, np.broadcast_to(np.sin(col) + 1.0, (200, 300)))
    assert sum(seen) == 200


def test_destination_read_through_a_broadcast_of_its_own_rows():
    # dst (n, k, m) read as a broadcast of its rows at index 1 of k: NumPy's
    # values (the leaf overlaps dst: read before the copies write over it)
    d = np.arange(3 * 5 * 40.0).reshape(3, 5, 40)
    want = np.broadcast_to(d[:, 1:2], d.shape) * 2 + 1
    pyet.asarray(d)[...] = pyet.asarray(np.broadcast_to(d[:, 1:2], d.shape)) * 2 + 1
    np.testing.assert_array_equal(d, want)


def test_destination_read_as_a_column_of_itself():
    # dst read through a broadcast view of one of its own columns: NumPy's
    # values (what the pass reads is read before the fill writes over it)
    d = np.arange(40.0).reshape(8, 5)
    want = np.broadcast_to(d[:, :1], (8, 5)) * 2 + 1
    D = pyet.asarray(d)
    D[...] = pyet.asarray(np.broadcast_to(d[:, :1], (8, 5))) * 2 + 1
    np.testing.assert_array_equal(d, want)
    e = np.arange(40.0).reshape(8, 5)
    want = np.broadcast_to(e[:, 3:4], (8, 5)) - 1
    pyet.asarray(e)[...] = pyet.asarray(np.broadcast_to(e[:, 3:4], (8, 5))) - 1
    np.testing.assert_array_equal(e, want)


@pytest.mark.parametrize("shape", [(1,), (9,), (4096,), (10000,), (3, 700)])
@pytest.mark.parametrize("layout", ["C", "step2"])
def test_zero_d_tree_errors_leave_the_destination_untouched(shape, layout):
    # as NumPy's 0-d temporary: the value's error raised before dst is written
    s = pyet.asarray(np.array(1.0))
    z = pyet.asarray(np.array(0.0))
    buf, out = _framed(shape, np.float64, layout)
    out[...] = 7.0
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        pyet.asarray(out)[...] = (s + z) / z
    assert (out == 7.0).all()
    _check_frame(buf, out)
    with np.errstate(divide="ignore"):
        pyet.asarray(out)[...] = (s + z) / z
    assert np.isposinf(out).all()


def test_column_errors_raised_after_every_row_is_written():
    # as NumPy's ufunc into out=: the whole destination written, then raised
    col = np.array([[1.0], [0.0], [2.0]])
    C = pyet.asarray(np.broadcast_to(col, (3, 5)))
    out, want = np.full((3, 5), 7.0), np.full((3, 5), 7.0)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            np.divide(1.0, np.broadcast_to(col, (3, 5)), out=want)
        with pytest.raises(FloatingPointError):
            pyet.asarray(out)[...] = 1.0 / C
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("leaf", [np.array([[1.0], [0.0], [-1.0]]),
                                  np.array([1.0, 0.0, -1.0] * 100), np.array(0.0)])
def test_floating_point_errors_reported_once_per_pass(leaf):
    # a column fill, a row copy (blocks of 2400 bytes) and a 0-d value: the
    # pass's division by zero reported once, through np.errstate's callback
    calls = []
    L = pyet.asarray(np.broadcast_to(leaf, (3, 300)))
    out = np.empty((3, 300))
    with np.errstate(divide="call", call=lambda kind, flag: calls.append(kind)):
        pyet.asarray(out)[...] = 1.0 / L
    assert calls == ["divide by zero"]
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(out, np.broadcast_to(1.0 / leaf, (3, 300)))


@pytest.mark.parametrize("dtype", [np.bool_, np.float64])
@pytest.mark.parametrize("leaf_shape,shape", [((3000, 1), (3000, 900)), ((900,), (3000, 900)),
                                               ((30, 1, 900), (30, 100, 900)),
                                               ((3000, 1, 2), (3000, 150, 2))])
def test_two_threads_equal_one(dtype, leaf_shape, shape):
    rng = np.random.default_rng(3)
    v = _values(rng, leaf_shape, dtype)
    V = pyet.asarray(np.broadcast_to(v, shape))
    expr = (lambda: ~V) if dtype == np.bool_ else (lambda: V * V + 1)
    want = np.broadcast_to(~v if dtype == np.bool_ else v * v + 1, shape)
    for n in (1, 2):
        with pyet_threads(n):
            buf, out = _run(expr, shape, dtype, "C")
        np.testing.assert_array_equal(out, want)
        _check_frame(buf, out)


def _check_tree_of(leaves, arrays, shape, dtype, layout):
    # a tree over every leaf (xor for bools, x*3 - y otherwise) against NumPy's
    # and the element-by-element pass, sentinels kept
    if dtype == np.bool_:
        def expr():
            e = leaves[0]
            for x in leaves[1:]:
                e = e ^ x
            return ~e
        want = ~np.bitwise_xor.reduce(arrays) if len(arrays) > 1 else ~arrays[0]
    else:
        def expr():
            e = leaves[0]
            for x in leaves[1:]:
                e = e * 3 - x
            return e
        want = arrays[0]
        for x in arrays[1:]:
            want = want * 3 - x
    buf, out, ref_buf = _both_ways(expr, shape, dtype, layout)
    np.testing.assert_array_equal(out, want.astype(dtype))
    np.testing.assert_array_equal(buf, ref_buf)
    _check_frame(buf, out)


def test_fields_of_a_packed_structured_array():
    # destinations whose strides are not a multiple of their itemsize
    # (misaligned float64 and int32 fields): the rows filled, the other bytes kept
    dt = np.dtype([("c", "u1"), ("x", "<f8"), ("y", "<i4")], align=False)
    s = np.zeros((6, 7), dt)
    s["c"] = 0xA5
    col = np.arange(6.0).reshape(6, 1)
    C = pyet.asarray(np.broadcast_to(col, (6, 7)))
    pyet.asarray(s["x"])[...] = C * 2 + 1
    np.testing.assert_array_equal(s["x"], np.broadcast_to(col * 2 + 1, (6, 7)))
    icol = np.arange(6, dtype=np.int32).reshape(6, 1)
    pyet.asarray(s["y"])[...] = pyet.asarray(np.broadcast_to(icol, (6, 7))) + 3
    np.testing.assert_array_equal(s["y"], np.broadcast_to(icol + 3, (6, 7)))
    pyet.asarray(s["x"])[...] = pyet.asarray(np.array(2.5)) * 2  # a 0-d value
    assert (s["x"] == 5.0).all()
    assert (s["c"] == 0xA5).all()


@pytest.mark.parametrize("leaf_shape,shape", [((300,), (200, 300)),
                                               ((50, 1, 60), (50, 20, 60)),
                                               ((1, 30, 1, 40), (5, 30, 3, 40))])
def test_broadcast_of_a_costly_op_computed_once(leaf_shape, shape):
    # F(fn, b) into a destination b is broadcast to sees b's elements once
    seen = []

    def fn(x):
        seen.append(x.size)
        return np.exp(x)

    b = np.linspace(0, 1, int(np.prod(leaf_shape))).reshape(leaf_shape)
    out = np.empty(shape)
    pyet.asarray(out)[...] = pyet.F(fn, pyet.asarray(np.broadcast_to(b, shape))) * 2 + 1
    np.testing.assert_allclose(out, np.broadcast_to(np.exp(b) * 2 + 1, shape))
    assert sum(seen) == b.size


def test_row_errors_raised_after_every_block_is_written():
    b = np.array([1.0, 0.0, 2.0])
    out, want = np.full((4, 3), 7.0), np.full((4, 3), 7.0)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            np.divide(1.0, np.broadcast_to(b, (4, 3)), out=want)
        with pytest.raises(FloatingPointError):
            pyet.asarray(out)[...] = 1.0 / pyet.asarray(b)
    np.testing.assert_array_equal(out, want)


@settings(max_examples=150, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=5),
       data=st.data(),
       dtype=st.sampled_from(DTYPES),
       layout=st.sampled_from(["C", "F", "step2", "reversed"]),
       every_block=st.booleans())
def test_random_broadcasts_over_any_axes(shape, data, dtype, layout, every_block):
    # leaves broadcast along random axes, some shared by all: the copies of
    # any dimensions, the column fill, both or neither; every_block: blocks
    # of any size copied (core.set_copy_block_min(0); these are small)
    shape = tuple(shape)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    shared = data.draw(st.sets(st.integers(0, len(shape) - 1)))
    leaves, arrays = [], []
    for _ in range(data.draw(st.integers(1, 3))):
        keep = [i not in shared and data.draw(st.booleans()) for i in range(len(shape))]
        keep[-1] = keep[-1] and data.draw(st.booleans())  # (a column: half as often)
        lshape = tuple(n if k else 1 for n, k in zip(shape, keep, strict=True))
        a = _values(rng, lshape, dtype)
        arrays.append(np.broadcast_to(a, shape))
        leaves.append(pyet.asarray(arrays[-1]))
    before = core.set_copy_block_min(0 if every_block else 256)
    try:
        _check_tree_of(leaves, arrays, shape, dtype, layout)
    finally:
        core.set_copy_block_min(before)


def test_kept_plan_replays_fills_and_copies_with_the_values_of_the_time():
    # EvalPlan.run(keep=True) records the passes and replays them: a column
    # fill, a row copy and a 0-d value, each reading its leaf's current values
    col, row, one = np.arange(4.0).reshape(4, 1), np.arange(300.0) / 100, np.array(2.0)
    out_c, out_r, out_s = np.empty((4, 300)), np.empty((300, 300)), np.empty((3, 7))
    wide = np.broadcast_to(row, (300, 300))
    plan = pyet.EvalPlan()
    plan.assign(out_c, pyet.asarray(col) * 3 - 1)
    plan.assign(out_r, pyet.asarray(wide) * 0.5 + 1)
    plan.assign(out_s, pyet.asarray(one) * 2 + 1)
    for _ in range(3):
        plan.run(keep=True)
        np.testing.assert_array_equal(out_c, np.broadcast_to(col * 3 - 1, out_c.shape))
        np.testing.assert_array_equal(out_r, wide * 0.5 + 1)
        np.testing.assert_array_equal(out_s, np.full(out_s.shape, one * 2 + 1))
        col += 1
        row += 0.5  # (wide's memory)
        one += 1
