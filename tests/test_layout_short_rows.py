"""Operands whose memory order disagrees with the pass's on short rows.

C leaves of rows of 2-8 into Fortran or transposed destinations (the
destination's block scattered a column at a time, or a copy scattered
straight from the leaf), Fortran leaves into C destinations (short rows
gathered in one loop, or straight into the destination), and flat tiles
holding leaves that are neither read across nor flat (a column, a row,
strided rows: copied into the tile).  NumPy is the reference, bit for bit;
every destination sits between sentinels.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64]
SENTINEL = 0x5A


def _values(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    return (rng.random(shape) * 200 - 100).astype(dtype)


def _framed(shape, dtype, layout):
    """A destination of ``shape`` inside a byte buffer full of SENTINEL:
    C or Fortran order, the transpose of a C array whose rows are 3 items
    longer (read across, not flat), or every other column of a wider one."""
    itemsize = np.dtype(dtype).itemsize
    rows, cols = shape
    span = {"C": rows * cols, "F": rows * cols, "T": (rows + 3) * cols,
            "::2": rows * 2 * cols}[layout]
    buf = np.full((span + 32) * itemsize, SENTINEL, np.uint8)
    body = buf[16 * itemsize:(16 + span) * itemsize].view(dtype)
    if layout == "C":
        out = body.reshape(shape)
    elif layout == "F":
        out = body.reshape(shape[::-1]).T
        assert out.flags.f_contiguous
    elif layout == "T":
        out = body.reshape(cols, rows + 3)[:, :rows].T
        assert not out.flags.f_contiguous or cols == 1
    else:
        out = body.reshape(rows, 2 * cols)[:, ::2]
    return buf, out, itemsize


def _sentinels_kept(buf, out, layout, itemsize):
    assert (buf[:16 * itemsize] == SENTINEL).all() and (buf[-16 * itemsize:] == SENTINEL).all()
    if layout == "T":  # the 3 items after each of dst's columns are untouched
        columns = buf[16 * itemsize:-16 * itemsize].reshape(out.shape[1], -1)
        assert (columns[:, out.shape[0] * itemsize:] == SENTINEL).all()
    if layout == "::2":  # the columns between dst's own are untouched
        gaps = np.lib.stride_tricks.as_strided(
            out[:, :1].view(np.uint8)[:, :itemsize], shape=(out.shape[0], out.shape[1], itemsize),
            strides=(out.strides[0], out.strides[1], 1))
        between = np.lib.stride_tricks.as_strided(
            buf[16 * itemsize + itemsize:], shape=gaps.shape, strides=gaps.strides)
        assert (between == SENTINEL).all()


def _trees(A, B, C, R):
    return [
        ("copy", lambda: A, lambda a, b, c, r: a),
        ("a + b", lambda: A + B, lambda a, b, c, r: a + b),
        ("a + col", lambda: A + C, lambda a, b, c, r: a + c),
        ("where(a > col, a, col)", lambda: pyet.where(A > C, A, C),
         lambda a, b, c, r: np.where(a > c, a, c)),
        ("a * row - b", lambda: A * R - B, lambda a, b, c, r: a * r - b),
    ]


def _check(shape, dtype, a_order, layout, tree, seed=0):
    rng = np.random.default_rng(seed)
    a = np.asarray(_values(rng, shape, dtype), order=a_order)
    b = np.asarray(_values(rng, shape, dtype), order=a_order)
    c = _values(rng, (shape[0], 1), dtype)
    r = _values(rng, shape[1], dtype)
    if dtype == np.bool_ and tree >= 1:  # (bool arithmetic: logical ops)
        a, b, c, r = (x.astype(np.int32) for x in (a, b, c, r))
        dtype = np.int32
    name, build, ref = _trees(*map(pyet.asarray, (a, b, c, r)))[tree]
    want = np.asarray(ref(a, b, c, r)).astype(dtype)
    buf, out, itemsize = _framed(shape, dtype, layout)
    pyet.asarray(out)[...] = build()
    np.testing.assert_array_equal(out, want, err_msg=f"{name} {shape} {a_order}->{layout}")
    _sentinels_kept(buf, out, layout, itemsize)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [2, 3, 5, 7, 8])
@pytest.mark.parametrize("layout", ["F", "T"])
@pytest.mark.parametrize("tree", range(5))
def test_c_leaves_of_short_rows_into_fortran_and_transposed(dtype, width, layout, tree):
    _check((3001, width), dtype, "C", layout, tree)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [2, 3, 4, 6, 8, 9])
@pytest.mark.parametrize("layout", ["C", "::2"])
@pytest.mark.parametrize("tree", range(5))
def test_fortran_leaves_of_short_rows_into_c_and_strided(dtype, width, layout, tree):
    _check((2999, width), dtype, "F", layout, tree)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
@pytest.mark.parametrize("width", [16, 17, 33, 60, 64, 100, 181])
@pytest.mark.parametrize("tree", range(5))
def test_flat_tiles_with_columns_rows_and_leaves_in_place(dtype, width, tree):
    # rows read across (dst Fortran) with a column, a row: each copied into its tile
    _check((4099 // width * 4, width), dtype, "C", "F", tree)


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_flat_tiles_with_strided_and_reversed_leaves(dtype):
    rng = np.random.default_rng(5)
    wide = _values(rng, (300, 66), dtype)
    a, rev = wide[:, ::3], wide[::-1, 1::3]  # (300, 22): rows strided; reversed rows
    col = wide[:, 5:6]
    want = a * 2 + rev - col
    buf, out, itemsize = _framed(a.shape, dtype, "F")
    A, Rv, C = map(pyet.asarray, (a, rev, col))
    pyet.asarray(out)[...] = A * 2 + Rv - C
    np.testing.assert_array_equal(out, want)
    _sentinels_kept(buf, out, "F", itemsize)


def test_packed_struct_field_copied_across():
    # a field whose byte strides are not multiples of its itemsize, copied
    # straight into (out of) a Fortran array
    rec = np.zeros((1000, 3), np.dtype([("pad", "V1"), ("x", np.float64)], align=False))
    rec["x"] = np.arange(3000.0).reshape(1000, 3)
    field = rec["x"]
    assert field.strides[1] % 8
    out = np.zeros((1000, 3), order="F")
    pyet.asarray(out)[...] = pyet.asarray(field)
    np.testing.assert_array_equal(out, field)
    back = np.zeros((1000, 3), np.dtype([("pad", "V1"), ("x", np.float64)], align=False))
    pyet.asarray(back["x"])[...] = pyet.asarray(out)
    np.testing.assert_array_equal(back["x"], field)
    assert (back["pad"].view(np.uint8) == 0).all()


def test_in_place_on_fortran_short_rows():
    x = np.asfortranarray(np.arange(24000.0).reshape(8000, 3))
    want = x * 2 + x[:, :1]
    X = pyet.asarray(x)
    X[...] = X * 2 + X[:, :1]
    np.testing.assert_array_equal(x, want)
    y = np.arange(24000.0).reshape(8000, 3)
    yt = np.asfortranarray(y)
    Yt = pyet.asarray(yt)
    Yt[...] = pyet.asarray(y)[::-1]  # the C leaf reversed into Fortran order
    np.testing.assert_array_equal(yt, y[::-1])


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 700), width=st.integers(1, 40),
       dtype=st.sampled_from([np.int32, np.float32, np.float64]),
       a_order=st.sampled_from("CF"), layout=st.sampled_from(["C", "F", "T", "::2"]),
       tree=st.integers(0, 4))
def test_random_short_row_layouts(rows, width, dtype, a_order, layout, tree):
    _check((rows, width), dtype, a_order, layout, tree, seed=rows * 41 + width)
