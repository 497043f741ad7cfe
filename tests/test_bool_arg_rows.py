"""argmax/argmin along contiguous rows: bool rows by pyet_arg_rows' byte scan (the first
nonzero byte for argmax, eight bytes a word after tests of 256 and 64; the first zero
for argmin, memchr from rows of 16), and the ARG_SIMD_BYTES routing between
core.arg_rows and NumPy's loop.  NumPy's indices for every row length 1-70, every
position of the deciding byte (at the steps' edges in rows of up to 1100), rows that
never decide, bytes other than 0 and 1, strided and reversed rows, and rows that end at
the last byte of their memory (a read past it would fault: the page after is unmapped)."""

import ctypes
import mmap
import sys

import numpy as np
import pytest

import pyet
from pyet._core import core
from pyet._nodes import reductions
from pyet._nodes.reductions import _ARG_ROWS, _FOLD

KINDS = ["argmax", "argmin"]


def scan(kind, src):
    """core.arg_rows along the last axis of 2-D src, into a sentinel-framed int64 row."""
    buf = np.full(src.shape[0] + 2, -7, np.int64)
    assert core.arg_rows(buf[1:-1], src, _FOLD[kind], 1)
    assert buf[0] == -7 and buf[-1] == -7
    return buf[1:-1]


def patterns(k, rng, positions=None):
    """Rows of k bytes: all zero, all one, all 255, one deciding byte at each position
    (or at ``positions``; as 1 and as 200), random with bytes 2-255, random half."""
    rows = [np.zeros(k, np.uint8), np.ones(k, np.uint8), np.full(k, 255, np.uint8)]
    for j in range(k) if positions is None else positions:
        for v in (1, 200):
            r = np.zeros(k, np.uint8)
            r[j] = v
            rows.append(r)
            rows.append(np.where(np.arange(k) == j, 0, v).astype(np.uint8))
    rows.append(rng.integers(0, 256, k).astype(np.uint8))
    rows.append((rng.random(k) < 0.5).astype(np.uint8) * 77)
    return np.array(rows).view(np.bool_)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("k", list(range(1, 71)))
def test_every_position_and_length(kind, k):
    rows = patterns(k, np.random.default_rng(k))
    np.testing.assert_array_equal(scan(kind, rows), getattr(np, kind)(rows, axis=1))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("k", [127, 128, 255, 256, 257, 319, 320, 511, 512, 600, 1100])
def test_long_rows_at_the_steps_edges(kind, k):
    # the deciding byte on each side of every 64- and 256-byte step, and at the end
    edges = {j + d for j in range(0, k + 1, 64) for d in (-9, -8, -1, 0, 1, 7, 8)}
    positions = sorted(j for j in edges | {k - 2, k - 1} if 0 <= j < k)
    rows = patterns(k, np.random.default_rng(k), positions)
    np.testing.assert_array_equal(scan(kind, rows), getattr(np, kind)(rows, axis=1))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("k", [1, 3, 7, 8, 9, 16, 23, 40, 300])
def test_strided_and_reversed_rows(kind, k):
    rng = np.random.default_rng(100 + k)
    raw = rng.integers(0, 256, (300, 3 * k + 5)).astype(np.uint8)
    raw[rng.random(raw.shape) < 0.6] = 0
    base = raw.view(np.bool_)
    for src in (base[:, 2:2 + k], base[::-1, 1:1 + k], base[::3, :k], base[7:8, -k:]):
        np.testing.assert_array_equal(scan(kind, src), getattr(np, kind)(src, axis=1))


def guarded_bytes(n):
    """n bytes ending at a page whose next page is PROT_NONE (Linux), as a uint8 array."""
    libc = ctypes.CDLL(None, use_errno=True)
    page = mmap.PAGESIZE
    size = 2 * page + ((n + page - 1) // page) * page
    region = mmap.mmap(-1, size, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(region))
    guard = addr + size - page
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    assert libc.mprotect(ctypes.c_void_p(guard), page, 0) == 0  # PROT_NONE
    arr = np.frombuffer(region, np.uint8, count=n, offset=size - page - n)
    return arr, region


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect: Linux")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("k", [1, 2, 3, 5, 7, 9, 15, 16, 64, 300])
def test_rows_ending_at_the_last_readable_byte(kind, k):
    nrows = 37
    arr, region = guarded_bytes(nrows * k)
    arr[...] = np.random.default_rng(k).integers(0, 3, nrows * k)  # 0, 1 and 2
    src = arr.view(np.bool_).reshape(nrows, k)
    try:
        np.testing.assert_array_equal(scan(kind, src), getattr(np, kind)(src, axis=1))
        rev = src[::-1]  # the first row in memory is the last one scanned
        np.testing.assert_array_equal(scan(kind, rev), getattr(np, kind)(rev, axis=1))
    finally:
        del src, rev, arr
        region.close()


@pytest.mark.parametrize("kind", KINDS)
def test_routing_bounds(kind):
    """Which contiguous rows arg_rows takes: bool of any length (forward rows), other
    dtypes under ARG_SIMD_BYTES a row; the rest NumPy's loop."""
    cases = [(np.bool_, 3, True), (np.bool_, 64, True), (np.bool_, 5000, True),
             (np.int32, reductions.ARG_SIMD_BYTES // 4 - 1, True),
             (np.float32, reductions.ARG_SIMD_BYTES // 4 - 1, True),
             (np.float64, reductions.ARG_SIMD_BYTES // 8 - 1, True),
             (np.float64, reductions.ARG_SIMD_BYTES // 8, False),
             (np.int32, reductions.ARG_SIMD_BYTES // 4, False)]
    for dtype, k, takes in cases:
        x = np.zeros((5000, k), dtype)
        r = reductions._layout(kind, x.shape, core.tensor(x)._dt, 1, False)[0]
        assert (r._way_of(x)[0] == _ARG_ROWS) == takes, (dtype, k)
    rev = np.zeros((5000, 63), np.bool_)[:, ::-1]  # reversed bool rows: NumPy's
    r = reductions._layout(kind, rev.shape, 0, 1, False)[0]
    assert r._way_of(rev)[0] != _ARG_ROWS


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", ["bool", "int32", "float32", "float64"])
def test_api_on_both_sides_of_the_bounds(dtype, kind, threads):
    rng = np.random.default_rng(7)
    before = pyet.get_num_threads()
    pyet.set_num_threads(threads)
    try:
        for k in (3, 16, 23, 24, 31, 32, 48, 63, 64, 65, 300, 1100):
            if dtype == "bool":
                raw = rng.integers(0, 256, (8192 // k + 5, k)).astype(np.uint8)
                raw[rng.random(raw.shape) < (0.97 if kind == "argmax" else 0.03)] = 0
                x = raw.view(np.bool_)
            else:
                x = rng.integers(-3, 3, (8192 // k + 5, k)).astype(dtype)  # ties
                if dtype != "int32":
                    x.flat[5::13] = np.nan
            want = getattr(np, kind)(x, axis=1)
            got = pyet.evaluate(getattr(pyet, kind)(pyet.asarray(x), axis=1))
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=str(k))
    finally:
        pyet.set_num_threads(before)


@pytest.mark.parametrize("kind", KINDS)
def test_long_fortran_columns_through_the_api(kind):
    # (n, 3) Fortran over axis 0: columns of n contiguous bytes, deciding early, late
    # or never
    n = 20011
    x = np.zeros((n, 3), np.bool_, order="F") if kind == "argmax" \
        else np.ones((n, 3), np.bool_, order="F")
    x[5, 0] = x[n - 1, 1] = kind == "argmax"
    r = reductions._layout(kind, x.shape, core.tensor(x)._dt, 0, False)[0]
    assert r._way_of(x)[0] == _ARG_ROWS
    out = np.full(5, -7, np.int64)
    D = pyet.asarray(out[1:4])
    D[...] = getattr(pyet, kind)(pyet.asarray(x), axis=0)
    np.testing.assert_array_equal(out, [-7, 5, n - 1, 0, -7])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("k", [5, 64, 300])
@pytest.mark.parametrize("src_layout", ["field rows", "field columns", "reversed"])
@pytest.mark.parametrize("dst_field", [False, True])
def test_odd_layouts_into_framed_destinations(kind, k, src_layout, dst_field):
    # bool rows whose bytes are not adjacent (a field of a packed structured
    # array: each item a record apart) or run backwards, into an int64
    # destination inside sentinel bytes or a misaligned int64 field between
    # sentinel fields (its byte stride 10, not a multiple of 8): NumPy's
    # indices, no other byte written
    rng = np.random.default_rng(k)
    vals = rng.random((37, k)) < (0.97 if kind == "argmax" else 0.03)
    vals[::5] = kind == "argmin"  # rows that never decide
    rec = np.dtype([("pad", "V2"), ("x", "?")], align=False)
    if src_layout == "reversed":
        src = np.flip(np.flip(vals, 1).copy(), 1)
    else:
        s = np.zeros(vals.shape if src_layout == "field rows" else vals.T.shape, rec)
        s["x"] = vals if src_layout == "field rows" else vals.T
        src = s["x"] if src_layout == "field rows" else s["x"].T
    np.testing.assert_array_equal(src, vals)
    if dst_field:
        d = np.zeros(37, np.dtype([("a", "u1"), ("x", "<i8"), ("b", "u1")], align=False))
        d["a"] = d["b"] = 0xA5
        out, frame = d["x"], d.view(np.uint8)
    else:
        frame = np.full(37 * 8 + 16, 0xA5, np.uint8)
        out = frame[8:-8].view(np.int64)
    pyet.asarray(out)[...] = getattr(pyet, kind)(pyet.asarray(src), axis=1)
    np.testing.assert_array_equal(out, getattr(np, kind)(vals, axis=1))
    if dst_field:
        assert (d["a"] == 0xA5).all() and (d["b"] == 0xA5).all()
    else:
        assert (frame[:8] == 0xA5).all() and (frame[-8:] == 0xA5).all()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect: Linux")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("k", [1, 2, 3, 5, 7])
@pytest.mark.parametrize("nrows", [1, 2, 3, 4])
def test_short_rows_of_tiny_arrays_at_the_last_readable_byte(kind, k, nrows):
    # rows under 8 bytes read one word each where it ends inside the array: arrays of
    # fewer than 8 bytes, or whose last rows' words would cross the end, read none past it
    arr, region = guarded_bytes(nrows * k)
    arr[...] = np.random.default_rng(10 * k + nrows).integers(0, 3, nrows * k)
    src = arr.view(np.bool_).reshape(nrows, k)
    try:
        for rows in (src, src[::2]):
            np.testing.assert_array_equal(scan(kind, rows), getattr(np, kind)(rows, axis=1))
    finally:
        del src, rows, arr
        region.close()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("m", [16, 48, 56, 64, 130])
@pytest.mark.parametrize("length", [1, 2, 4, 5, 8, 9, 100])
@pytest.mark.parametrize("columns", ["adjacent", "every other byte"])
def test_lanes_stop_once_every_lane_is_decided(kind, m, length, columns):
    # argmax/argmin over axis 0 with the kept rows in lanes: a C array's columns 64 at a
    # time (pyet_bool_lanes), columns two bytes apart 16 at a time (PYET_ARG_ROWS);
    # both stop once every lane holds True (argmax) or False (argmin). Columns
    # decide at their own positions (first, at and beside every check, last, never;
    # the second group all after the first check, the third at one position, the
    # rest one by one), bytes other than 1 standing for True
    decide = [0, 1, 3, 4, 5, 7, 8, 9, length - 1, length, 2, 6, 11, 12, 13, 40]
    hit, miss = (200, 0) if kind == "argmax" else (0, 1)
    raw = np.full((length, m), miss, np.uint8)
    for c in range(m):
        j = (decide[c] if c < 16 else 5 + c % 9 if c < 32 else length // 2 if c < 48
             else c % length)
        if j < length:
            raw[j, c] = hit
            raw[j + 1:, c] = np.random.default_rng(c).integers(0, 3, length - j - 1)
    if columns == "adjacent":
        x = raw.view(np.bool_)
    else:
        wide = np.full((length, 2 * m), 1 - miss, np.uint8)
        wide[:, ::2] = raw
        x = wide.view(np.bool_)[:, ::2]
    buf = np.full(m + 2, -7, np.int64)
    assert core.arg_rows(buf[1:-1], x, _FOLD[kind], 0)
    assert buf[0] == -7 and buf[-1] == -7
    np.testing.assert_array_equal(buf[1:-1], getattr(np, kind)(x, axis=0))
    got = pyet.evaluate(getattr(pyet, kind)(pyet.asarray(x), axis=0))
    np.testing.assert_array_equal(np.asarray(got), getattr(np, kind)(x, axis=0))
