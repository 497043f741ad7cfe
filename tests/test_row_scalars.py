"""A packed pass computes a subtree of columns once a row (plan_columns); an
instruction that reads such a value beside a full operand, of an op whose
kernel computes the same values with an operand as its scalar, now takes it
as the scalar a row at a time on rows of COLUMN_ROW_MIN (64) or more
(plan_row_scalars) instead of the value filled along each row first.
Bit for bit against the same trees run row by row
(core.set_row_broadcasts_once(False)) and against NumPy; core.row_scalar_count
tells the path was taken."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet
from pyet._core import core

FLOATS = [np.float32, np.float64]
DTYPES = FLOATS + [np.int32, np.int64]


def _values(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-2, 2, shape).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


def _trees(dtype):
    # (name, tree of a full A and a column C, NumPy's): the column's subtree
    # is computed once a row, then read by one op of COLUMN_SCALAR_OPS
    trees = [
        ("A*(C+1)", lambda A, C: A * (C + 1), lambda a, c: a * (c + 1)),
        ("abs(C)-A", lambda A, C: pyet.abs(C) - A, lambda a, c: np.abs(c) - a),
        ("A-abs(C)", lambda A, C: A - pyet.abs(C), lambda a, c: a - np.abs(c)),
        ("maximum(A,C*C)", lambda A, C: pyet.maximum(A, C * C), lambda a, c: np.maximum(a, c * c)),
        ("minimum(C-1,A)", lambda A, C: pyet.minimum(C - 1, A), lambda a, c: np.minimum(c - 1, a)),
        ("where(A<C*2,A,C)", lambda A, C: pyet.where(A < C * 2, A, C),
         lambda a, c: np.where(a < c * 2, a, c)),
        # (a muladd reading C+1 filled beside C-1 taken a row at a time)
        ("A*(C+1)+(A-(C-1))", lambda A, C: A * (C + 1) + (A - (C - 1)),
         lambda a, c: a * (c + 1) + (a - (c - 1))),
    ]
    if np.dtype(dtype).kind == "f":
        trees += [
            ("A*tanh(C)", lambda A, C: A * pyet.tanh(C), lambda a, c: a * np.tanh(c)),
            ("A/(C*C+1)", lambda A, C: A / (C * C + 1), lambda a, c: a / (c * c + 1)),
            ("exp(C)/A", lambda A, C: pyet.exp(C) / A, lambda a, c: np.exp(c) / a),
        ]
    else:
        trees += [("A^(C+1)", lambda A, C: A ^ (C + 1), lambda a, c: a ^ (c + 1)),
                  ("(C&7)|A", lambda A, C: (C & 7) | A, lambda a, c: (c & 7) | a)]
    return trees


def _destination(layout, shape, dtype):
    # (dst, its buffer with sentinels around it or beside its items, sentinel)
    sentinel = 77
    if layout == "C":
        buf = np.full(int(np.prod(shape)) + 32, sentinel, dtype)
        return buf[16:-16].reshape(shape), buf, sentinel
    buf = np.full(shape[:-1] + (2 * shape[-1] + 2,), sentinel, dtype)
    if layout == "::2":
        return buf[..., 1:-1:2], buf, sentinel
    return buf[..., shape[-1]:0:-1], buf, sentinel  # reversed rows


def _untouched(buf, out, sentinel):
    # every item of buf outside out's still the sentinel: out's items set to
    # it in a copy of buf, through a view of the same place and steps
    probe = buf.copy()
    np.ndarray(out.shape, out.dtype, probe, out.ctypes.data - buf.ctypes.data,
               out.strides)[...] = sentinel
    return (probe == sentinel).all()


def _run(build, out):
    pyet.asarray(out)[...] = build()
    return out.copy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(181, 181), (7, 129), (2, 3, 130), (64, 64), (3, 200),
                                   (40, 256)])
@pytest.mark.parametrize("layout", ["C", "::2", "::-1"])
def test_values_taken_a_row_at_a_time_equal_the_filled_rows(dtype, shape, layout):
    rng = np.random.default_rng(shape[-1])
    a = _values(rng, shape, dtype)
    c = _values(rng, shape[:-1] + (1,), dtype)
    if np.dtype(dtype).kind == "f":
        a[np.abs(a) < 0.05] = 0.5  # (exp(C) / A: no division by ~0)
    A, C = pyet.asarray(a), pyet.asarray(c)
    before = core.set_hoist_saved(-1)  # (the pass's own column values, no scratch)
    try:
        for name, build, ref in _trees(dtype):
            want = ref(a, c)
            out, buf, sentinel = _destination(layout, shape, want.dtype)
            count = core.row_scalar_count()
            got = _run(lambda build=build: build(A, C), out)
            taken = core.row_scalar_count() - count
            core.set_row_broadcasts_once(False)
            try:
                row_by_row = _run(lambda build=build: build(A, C), out)
            finally:
                core.set_row_broadcasts_once(True)
            assert taken >= 1, name
            np.testing.assert_array_equal(got.view(np.uint8), row_by_row.view(np.uint8),
                                          err_msg=name)
            if np.dtype(dtype).kind == "f":
                tol = 2e-6 if dtype == np.float32 else 1e-13
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=name)
            else:
                np.testing.assert_array_equal(got, want, err_msg=name)
            assert _untouched(buf, out, sentinel), name
    finally:
        core.set_hoist_saved(before)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(200, 150), (100, 7), (64, 33)])
def test_fortran_passes_take_a_row_s_values_down_each_column(dtype, shape):
    # all in Fortran order the pass's rows run along the first axis: a row
    # (1, n) broadcast down them is its "column"
    rng = np.random.default_rng(shape[0])
    a = np.asfortranarray(_values(rng, shape, dtype))
    r = _values(rng, (1, shape[1]), dtype)
    A, R = pyet.asarray(a), pyet.asarray(r)
    out = np.empty(shape, dtype, order="F")
    before = core.set_hoist_saved(-1)
    try:
        count = core.row_scalar_count()
        got = _run(lambda: A * (R - 1), out)
        assert core.row_scalar_count() == count + 1
        core.set_row_broadcasts_once(False)
        try:
            row_by_row = _run(lambda: A * (R - 1), out)
        finally:
            core.set_row_broadcasts_once(True)
    finally:
        core.set_hoist_saved(before)
    np.testing.assert_array_equal(got, row_by_row)
    np.testing.assert_array_equal(got, a * (r - 1))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(400, 63), (1000, 8), (5000, 2)])
def test_short_rows_keep_the_filled_blocks(dtype, shape):
    # below COLUMN_ROW_MIN a kernel call a row costs more than the fill
    rng = np.random.default_rng(3)
    a, c = _values(rng, shape, dtype), _values(rng, (shape[0], 1), dtype)
    out = np.empty(shape, dtype)
    before = core.set_hoist_saved(-1)
    try:
        count = core.row_scalar_count()
        pyet.asarray(out)[...] = pyet.asarray(a) * pyet.tanh(pyet.asarray(c))
        assert core.row_scalar_count() == count
    finally:
        core.set_hoist_saved(before)
    np.testing.assert_allclose(out, a * np.tanh(c), rtol=2e-6)


@pytest.mark.parametrize("dtype", FLOATS)
def test_values_read_by_other_ops_are_filled_along_the_rows(dtype):
    # a where and a fused multiply-add (not ops of COLUMN_SCALAR_OPS) read
    # the column's values filled along each row, as before
    rng = np.random.default_rng(4)
    a, b = _values(rng, (100, 150), dtype), _values(rng, (100, 150), dtype)
    c = _values(rng, (100, 1), dtype)
    A, B, C = pyet.asarray(a), pyet.asarray(b), pyet.asarray(c)
    tc = np.tanh(c)
    for build, want in ((lambda: pyet.where(A > 0, pyet.tanh(C), A), np.where(a > 0, tc, a)),
                        (lambda: A * pyet.tanh(C) + B, a * tc + b)):
        out = np.empty(a.shape, dtype)
        before = core.set_hoist_saved(-1)
        try:
            count = core.row_scalar_count()
            got = _run(build, out)
            assert core.row_scalar_count() == count
            core.set_row_broadcasts_once(False)
            try:
                row_by_row = _run(build, out)
            finally:
                core.set_row_broadcasts_once(True)
        finally:
            core.set_hoist_saved(before)
        np.testing.assert_array_equal(got, row_by_row)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


def test_floating_point_errors_of_the_rows_are_reported():
    a = np.ones((100, 100))
    c = np.zeros((100, 1))
    A, C = pyet.asarray(a), pyet.asarray(c)
    out = np.empty_like(a)
    before = core.set_hoist_saved(-1)
    try:
        count = core.row_scalar_count()
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError, match="divide"):
            pyet.asarray(out)[...] = A / (C * 2)
        assert core.row_scalar_count() == count + 1
        with np.errstate(divide="ignore"):
            pyet.asarray(out)[...] = A / (C * 2)
    finally:
        core.set_hoist_saved(before)
    assert np.isinf(out).all()


@pytest.mark.parametrize("dtype", FLOATS)
def test_two_threads_equal_one(dtype):
    rng = np.random.default_rng(5)
    a, c = _values(rng, (2000, 300), dtype), _values(rng, (2000, 1), dtype)
    A, C = pyet.asarray(a), pyet.asarray(c)
    outs = []
    before = core.set_hoist_saved(-1), pyet.get_num_threads()
    try:
        for threads in (1, 2):
            pyet.set_num_threads(threads)
            out = np.empty(a.shape, dtype)
            pyet.asarray(out)[...] = A * pyet.exp(C * 0.5) - C * 2
            outs.append(out)
    finally:
        core.set_hoist_saved(before[0])
        pyet.set_num_threads(before[1])
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[0], a * np.exp(c * 0.5) - c * 2, rtol=2e-6, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 40), inner=st.integers(60, 300), lead=st.integers(1, 3),
       dtype=st.sampled_from(DTYPES), block=st.sampled_from([512, 2048, 8192]),
       tree=st.integers(0, 8), layout=st.sampled_from(["C", "::2", "::-1"]))
def test_random_shapes_and_block_sizes(rows, inner, lead, dtype, block, tree, layout):
    rng = np.random.default_rng(rows * 1000 + inner)
    shape = (lead, rows, inner)
    a, c = _values(rng, shape, dtype), _values(rng, (lead, rows, 1), dtype)
    if np.dtype(dtype).kind == "f":
        a[np.abs(a) < 0.05] = 0.5
    trees = _trees(dtype)
    name, build, ref = trees[tree % len(trees)]
    A, C = pyet.asarray(a), pyet.asarray(c)
    want = ref(a, c)
    out, buf, sentinel = _destination(layout, shape, want.dtype)
    before = core.get_block_size(), core.set_hoist_saved(-1)
    core.set_block_size(block)
    try:
        got = _run(lambda: build(A, C), out)
        core.set_row_broadcasts_once(False)
        try:
            row_by_row = _run(lambda: build(A, C), out)
        finally:
            core.set_row_broadcasts_once(True)
    finally:
        core.set_block_size(before[0])
        core.set_hoist_saved(before[1])
    np.testing.assert_array_equal(got.view(np.uint8), row_by_row.view(np.uint8), err_msg=name)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6, err_msg=name)
    else:
        np.testing.assert_array_equal(got, want, err_msg=name)
    assert _untouched(buf, out, sentinel)
