"""Passes that read an operand across its memory order (A + A.T, B.T copied into C
order) walk tiles of rows and copy such a leaf a tile at a time; `dst[...] = A.T`
copies the tile straight into the destination.  Against NumPy bit for bit on the
layouts the tile copy has to get right: tiles cut by the end of the second-last
axis (3-d), reversed and stepped axes, every dtype, tails shorter than a tile,
blocks shorter than a row, an aliasing destination, sentinel bytes around it, one
and two threads.  No timing here: bench/bench_grid.py measures.
"""

import numpy as np
import pytest

import pyet
from pyet._core import core as _plan

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64]


def values(shape, dt, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape) * 100
    return (v > 0) if dt is np.bool_ else v.astype(dt)


def transposed_views(dt):
    """(name, array) pairs whose last two axes are read across their memory order."""
    a = values((137, 45), dt)
    yield "A.T", a.T
    yield "Fortran", np.asfortranarray(a)
    yield "reversed rows", a[::-1].T
    yield "reversed columns", a[:, ::-1].T
    yield "stepped", values((400, 70), dt, 1)[::3, ::2].T
    yield "3-d, rows cut by the axis end", values((3, 130, 5), dt, 2).transpose(0, 2, 1)
    yield "3-d, tile of one row", values((4, 133, 1), dt, 3).transpose(0, 2, 1)[:, :, ::-1]
    yield "4-d", values((2, 3, 129, 9), dt, 4).transpose(1, 0, 3, 2)
    yield "rows of 16 to 127 (tiled)", values((37, 45), dt, 5).T
    yield "rows of 16, in-register transposes only", values((16, 64), dt, 6).T
    yield "rows of 23, tails of the 8 x 8 transposes", values((23, 29), dt, 7).T
    yield "rows under 16 (packed)", values((15, 45), dt, 8).T


@pytest.fixture(params=[(1, 512), (2, 32)], ids=["1 thread", "2 threads, short blocks"])
def tiles(request, threaded):
    """Small blocks and forced threads make many tiles and partial blocks."""
    nthreads, block = request.param
    pyet.set_num_threads(nthreads)
    _plan.set_block_size(block)
    yield
    _plan.set_block_size(32)  # the threaded fixture restores the rest


@pytest.mark.parametrize("dt", DTYPES)
def test_copy_of_a_transposed_leaf(tiles, dt):
    for name, a in transposed_views(dt):
        want = np.ascontiguousarray(a)
        got = np.full(a.shape, 0, dt)
        pyet.asarray(got)[...] = pyet.asarray(a)
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("dt", DTYPES)
def test_trees_with_a_transposed_leaf(tiles, dt):
    for name, a in transposed_views(dt):
        b = np.ascontiguousarray(values(a.shape, dt, 9))
        pa, pb = pyet.asarray(a), pyet.asarray(b)
        if dt is np.bool_:
            got = pyet.evaluate(pa ^ pb).numpy()
            np.testing.assert_array_equal(got, a ^ b, err_msg=name)
        else:
            got = pyet.evaluate(pa * pb + pa).numpy()
            np.testing.assert_array_equal(got, a * b + a, err_msg=name)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32])
def test_square_plus_its_transpose(tiles, dt):
    for n in (1, 7, 9, 128, 136, 200):
        a = values((n, n), dt, n)
        got = pyet.evaluate(pyet.asarray(a) + pyet.asarray(a).T).numpy()
        np.testing.assert_array_equal(got, a + a.T)


def test_cast_of_a_transposed_leaf(tiles):
    # not a plain copy (the dtypes differ): tile-copied, then cast per row
    a = values((145, 37), np.float32).T
    got = np.empty(a.shape, np.float64)
    pyet.asarray(got)[...] = pyet.asarray(a)
    np.testing.assert_array_equal(got, a.astype(np.float64))


def test_transposed_into_a_strided_destination(tiles):
    a = values((145, 37), np.float64)
    base = np.zeros((37, 290))
    dst = base[:, ::2]
    pyet.asarray(dst)[...] = pyet.asarray(a).T
    np.testing.assert_array_equal(dst, a.T)
    np.testing.assert_array_equal(base[:, 1::2], 0)


@pytest.mark.parametrize("dt", [np.float64, np.int32, np.bool_])
def test_destination_inside_sentinels(tiles, dt):
    a = values((153, 29), dt)
    sentinel = np.array(1, dt) if dt is np.bool_ else np.array(-77, dt)
    buf = np.full(29 * 153 + 16, sentinel, dt)
    dst = buf[8:-8].reshape(29, 153)
    pyet.asarray(dst)[...] = pyet.asarray(a).T
    np.testing.assert_array_equal(dst, a.T)
    np.testing.assert_array_equal(buf[:8], sentinel)
    np.testing.assert_array_equal(buf[-8:], sentinel)


def test_in_place_transpose_is_numpys(tiles):
    # A[...] = A.T reads what it overwrites: NumPy's answer is the transpose
    a = values((140, 140), np.float64)
    want = a.T.copy()
    pa = pyet.asarray(a)
    pa[...] = pa.T
    np.testing.assert_array_equal(a, want)
    b = values((140, 140), np.float64, 5)
    want = b + b.T
    pb = pyet.asarray(b)
    pb[...] = pb + pb.T
    np.testing.assert_array_equal(b, want)


def test_fields_of_a_packed_structured_array(tiles):
    # byte strides that are not a multiple of the itemsize
    rec = np.zeros((131, 13), dtype=[("c", "u1"), ("x", "<f8")])
    rec["x"] = values((131, 13), np.float64)
    x = rec["x"]
    assert x.strides[1] % 8 != 0
    got = pyet.evaluate(pyet.asarray(x).T * 2.0).numpy()
    np.testing.assert_array_equal(got, x.T * 2.0)


def test_empty_and_single_row(tiles):
    for shape in [(0, 5), (5, 0), (1, 9), (9, 1), (130, 1), (1, 130), (130, 0)]:
        a = values(shape, np.float64)
        got = pyet.evaluate(pyet.asarray(a).T + 1.0).numpy()
        np.testing.assert_array_equal(got, a.T + 1.0)


# --- a destination written across its memory order (each row scattered as it is done)


@pytest.mark.parametrize("dt", DTYPES)
def test_c_operands_into_a_transposed_destination(tiles, dt):
    a = values((37, 145), dt)
    b = values((37, 145), dt, 1)
    for name, dst in [("D.T", np.zeros((145, 37), dt).T),
                      ("Fortran", np.asfortranarray(np.zeros((37, 145), dt))),
                      ("reversed", np.zeros((145, 37), dt)[::-1].T),
                      ("3-d, rows cut by the axis end",
                       np.zeros((2, 145, 37), dt).transpose(0, 2, 1)[1])]:
        if dt is np.bool_:
            pyet.asarray(dst)[...] = pyet.asarray(a) | pyet.asarray(b)
            want = a | b
        else:
            pyet.asarray(dst)[...] = pyet.asarray(a) * pyet.asarray(b) + pyet.asarray(a)
            want = a * b + a
        np.testing.assert_array_equal(dst, want, err_msg=name)


def test_3d_transposed_destination_across_tiles(tiles):
    a = values((3, 5, 130), np.float64)
    dst = np.zeros((3, 130, 5)).transpose(0, 2, 1)
    pyet.asarray(dst)[...] = pyet.asarray(a) * 2.0
    np.testing.assert_array_equal(dst, a * 2.0)


def test_transposed_destination_inside_sentinels(tiles):
    buf = np.full(145 * 37 + 16, -77.0)
    dst = buf[8:-8].reshape(145, 37).T
    a = values((37, 145), np.float64)
    pyet.asarray(dst)[...] = pyet.asarray(a) - 1.0
    np.testing.assert_array_equal(dst, a - 1.0)
    np.testing.assert_array_equal(buf[:8], -77.0)
    np.testing.assert_array_equal(buf[-8:], -77.0)


def test_transposed_destination_read_by_its_statement(tiles):
    # D.T read in place by its own statement, and D read across it (copied first)
    d = values((145, 37), np.float64)
    want = d.T * 3.0 + 1.0
    pd = pyet.asarray(d)
    pd.T[...] = pd.T * 3.0 + 1.0
    np.testing.assert_array_equal(d.T, want)
    e = values((140, 140), np.float64, 3)
    want = e + e.T
    pe = pyet.asarray(e)
    pe.T[...] = pe + pe.T
    np.testing.assert_array_equal(e.T, want)


def test_plan_into_transposed_destinations(tiles):
    # a multi-output pass: the second statement reads what the first wrote
    a = values((37, 145), np.float64)
    d1 = np.zeros((145, 37)).T
    d2 = np.zeros((145, 37)).T
    with pyet.EvalPlan() as plan:
        plan.assign(d1, pyet.asarray(a) * 2.0)
        plan.assign(d2, pyet.asarray(d1) + pyet.asarray(a))
    np.testing.assert_array_equal(d1, a * 2.0)
    np.testing.assert_array_equal(d2, a * 3.0)


# --- tiles moved to start on a leaf's cache lines (blocks.pxi tile_lead)


@pytest.fixture
def row_tiles(tiles):
    """Tiles of rows (run_tiled), not whole short rows as one block."""
    before = _plan.set_flat_tile_max(0)
    yield
    _plan.set_flat_tile_max(before)


def at_line_offset(a, offset):
    """a's values in Fortran order, starting `offset` bytes into a cache line."""
    nbytes = a.size * a.itemsize
    buf = np.zeros(nbytes + 128, np.uint8)
    start = (-buf.ctypes.data) % 64 + offset
    out = buf[start:start + nbytes].view(a.dtype).reshape(a.shape, order="F")
    out[...] = a
    assert out.ctypes.data % 64 == offset
    return out


@pytest.mark.parametrize("dt", DTYPES)
def test_leaves_at_every_offset_in_a_cache_line(row_tiles, dt):
    # the first tile is cut short so the others start on the first tiled
    # leaf's lines; a second leaf at another offset keeps its own tiles' rows
    itemsize = np.dtype(dt).itemsize
    for shape in [(137, 45), (9, 70), (64, 33), (3, 5)]:
        for offset in range(0, 64, itemsize):
            a = at_line_offset(values(shape, dt, offset), offset)
            b = at_line_offset(values(shape, dt, offset + 1), (offset + 3 * itemsize) % 64)
            got = np.zeros(shape, dt)
            pyet.asarray(got)[...] = pyet.asarray(a)
            np.testing.assert_array_equal(got, a, err_msg=f"{shape} at {offset}")
            pa, pb = pyet.asarray(a), pyet.asarray(b)
            if dt is np.bool_:
                got, want = pyet.evaluate(pa ^ pb).numpy(), a ^ b
            else:
                got, want = pyet.evaluate(pa * pb + pa).numpy(), a * b + a
            np.testing.assert_array_equal(got, want, err_msg=f"{shape} at {offset}")


def test_3d_leaves_off_their_lines(row_tiles):
    # planes whose row count is no multiple of the tile: the shifted tiles
    # straddle planes and fall back to row-by-row copies there
    for offset in (8, 16, 40):
        base = values((4, 37, 70), np.float64, offset)
        nbytes = base.nbytes
        buf = np.zeros(nbytes + 128, np.uint8)
        start = (-buf.ctypes.data) % 64 + offset
        a = buf[start:start + nbytes].view(np.float64).reshape(4, 70, 37).transpose(0, 2, 1)
        a[...] = base
        assert a.ctypes.data % 64 == offset
        sentinel = np.full(4 * 37 * 70 + 16, -5.0)
        dst = sentinel[8:-8].reshape(4, 37, 70)
        pyet.asarray(dst)[...] = pyet.asarray(a)
        np.testing.assert_array_equal(dst, base)
        pyet.asarray(dst)[...] = pyet.asarray(a) * 2.0 - 1.0
        np.testing.assert_array_equal(dst, base * 2.0 - 1.0)
        np.testing.assert_array_equal(sentinel[:8], -5.0)
        np.testing.assert_array_equal(sentinel[-8:], -5.0)
