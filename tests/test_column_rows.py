"""One op on a full leaf and a column (a leaf broadcast along the rows): the
kernel called a row at a time with the column's element as its scalar
(passes.pxi run_column_rows), on rows of COLUMN_ROW_MIN (64) elements or more
or on up to COLUMN_FEW_ROWS (24) rows of any length, whose items, and dst's,
are aligned (one value broadcast along one row: a row of its own); dst's
rows or the full leaf's strided (not both) from rows of 128, in pieces
through buffers.  Every op it takes, on every dtype, the column first and
second, against NumPy's bits and against the blocks (the path off); the path
checked taken, or refused where it does not apply (other ops, many short,
strided or misaligned rows), with the same values; floating-point errors as
NumPy's; destinations framed by sentinel bytes."""

import warnings

import numpy as np
import pytest

import pyet
from pyet._core import core
from pyet._core.ops import OPS_BY_NAME

COLUMN_OPS = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "copysign",
              "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
              "bitwise_and", "bitwise_or", "bitwise_xor"]
# one-op passes on a column that keep the blocks: a scalar takes other formulas
# in their kernels (power's 2, -1, 0.5; integer division's precomputed divisor)
OTHER_OPS = ["power", "floor_divide", "remainder", "fmod", "arctan2", "hypot", "logaddexp"]


def values(dtype, shape, rng, specials=True):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind == "i":
        x = rng.integers(-50, 50, shape).astype(dt)
        x.flat[::7] = np.iinfo(dt).max  # products and sums that wrap
        return x
    x = (rng.random(shape) * 8 - 4).astype(dt)
    if specials:
        flat = x.reshape(-1)
        for i, v in enumerate((np.nan, -0.0, 0.0, np.inf, -np.inf)):
            flat[i::11] = v
    return x


def framed(shape, dtype):
    """An array of shape inside 16 sentinel bytes each side."""
    n, isz = int(np.prod(shape)), np.dtype(dtype).itemsize
    raw = np.full(n * isz + 32, 0x5A, np.uint8)
    return raw, raw[16:16 + n * isz].view(dtype).reshape(shape)


def bits(x):
    x = np.ascontiguousarray(x)
    return x.view(np.uint8) if x.dtype.kind in "fb" else x


def assign(dst, fn, a, c, first):
    """dst[...] = fn(a, c) (the column first when ``first``) through pyet; whether
    it ran a row at a time."""
    before = core.column_rows_count()
    args = (pyet.asarray(c), pyet.asarray(a)) if first else (pyet.asarray(a), pyet.asarray(c))
    pyet.asarray(dst)[...] = fn(*args)
    return core.column_rows_count() > before


def check(name, a, c, first, *, taken=True, dst=None, exact=True):
    """pyet's op of a and column c into a framed destination (or dst): NumPy's bits,
    the blocks' bits, the path as ``taken`` (None: either), the frame intact (not
    ``exact``: within 2 ulp of NumPy, as pyet's power of two arrays)."""
    ufunc, fn = getattr(np, name), getattr(pyet, name)
    args = (c, a) if first else (a, c)
    with np.errstate(all="ignore"):
        want = ufunc(*args)
    if dst is None:
        raw, dst = framed(want.shape, want.dtype)
    else:
        raw = None
    with np.errstate(all="ignore"):
        ran = assign(dst, fn, a, c, first)
        assert taken is None or ran == taken
        got = dst.copy()
        old = core.set_column_rows(False)
        try:
            assert not assign(dst, fn, a, c, first)
        finally:
            core.set_column_rows(old)
    if exact:
        np.testing.assert_array_equal(bits(got), bits(want), err_msg=name)
    else:
        np.testing.assert_array_max_ulp(got, want, 2)
    np.testing.assert_array_equal(bits(dst), bits(got), err_msg=f"{name} (blocks)")
    if raw is not None:
        assert (raw[:16] == 0x5A).all() and (raw[-16:] == 0x5A).all()


@pytest.mark.parametrize("name", COLUMN_OPS)
@pytest.mark.parametrize("first", [False, True], ids=["col second", "col first"])
def test_every_op_and_dtype(name, first):
    rng = np.random.default_rng(len(name))
    for dtype in OPS_BY_NAME[name].dtypes:
        a = values(dtype, (6, 700), rng)
        c = values(dtype, (6, 1), rng)
        check(name, a, c, first)


@pytest.mark.parametrize("name", ["subtract", "divide", "maximum", "less"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_layouts(name, dtype):
    if dtype[0] == "i" and name == "divide":
        dtype = "float64"
    rng = np.random.default_rng(3)
    wide = values(dtype, (8, 3, 900), rng)
    big_col = values(dtype, (8, 3, 9), rng)
    cases = [
        (wide, big_col[:, :, 4:5]),                 # 3-D, the column a strided view
        (wide[::2, :, 100:800], big_col[::2, :, :1]),  # outer steps, rows cut from wider
        (wide[::-1, ::-1], big_col[::-1, ::-1, 2:3]),  # outer axes reversed
        (wide[:, 1], big_col[:, 1, 3:4]),           # 2-D from 3-D
    ]
    for a, c in cases:
        for first in (False, True):
            check(name, a, c, first)
    # into destinations whose rows are contiguous inside wider ones
    out = np.zeros((8, 3, 1000), np.bool_ if name == "less" else dtype)
    check(name, wide, big_col[:, :, :1], False, dst=out[:, :, 50:950])
    assert (out[:, :, :50] == 0).all() and (out[:, :, 950:] == 0).all()


@pytest.mark.parametrize("name", ["multiply", "maximum", "less", "bitwise_xor"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("n", [128, 700, 1300])
def test_strided_rows_in_pieces(name, dtype, n):
    # dst's rows or the full leaf's strided (steps 2, 3, -1; not both): run in
    # pieces of 512 through buffers, rows longer than a piece with a remainder
    if dtype[0] == "f" and name == "bitwise_xor":
        dtype = "int32" if dtype == "float32" else "int64"
    rng = np.random.default_rng(n)
    wide = values(dtype, (5, 3 * n), rng)
    a = wide[:, ::3].copy()
    c = values(dtype, (5, 1), rng)
    out_dt = np.bool_ if name == "less" else dtype
    for first in (False, True):
        for src in (wide[:, ::3], wide[:, 1::2][:, :n], wide[:, ::-1][:, :n]):
            check(name, src, c, first)
        for step in (2, -1):
            raw = np.zeros((5, 2 * n), out_dt)
            dst = raw[:, ::2] if step == 2 else raw[:, ::-1][:, :n]
            check(name, a, c, first, dst=dst)
            if step == 2:  # the items between dst's untouched
                assert not raw[:, 1::2].any()
        # both strided, or one strided on rows shorter than 128: the blocks'
        raw = np.zeros((5, 2 * n), out_dt)
        check(name, wide[:, ::3], c, first, dst=raw[:, ::2], taken=False)
        check(name, wide[:, ::3][:, :127], c, first, taken=False)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_in_place(dtype):
    rng = np.random.default_rng(5)
    a = values(dtype, (9, 300), rng, specials=False)
    c = values(dtype, (9, 1), rng, specials=False)
    want = a * c
    A = pyet.asarray(a)
    before = core.column_rows_count()
    A[...] = A * pyet.asarray(c)
    assert core.column_rows_count() > before
    np.testing.assert_array_equal(a, want)
    # a column of dst itself: each row's element read before the row is written
    a = values(dtype, (9, 300), rng, specials=False)
    want = a - a[:, 7:8]
    A = pyet.asarray(a)
    A[...] = A - A[:, 7:8]
    np.testing.assert_array_equal(a, want)
    # a strided view of itself, and its other half (the same memory's items read
    # and written, or overlapping ones: whichever path the engine takes)
    for src in (np.s_[:, ::2], np.s_[:, 1::2]):
        a = values(dtype, (9, 600), rng, specials=False)
        want = a.copy()
        want[:, ::2] = a[src] * a[:, 3:4]
        A = pyet.asarray(a)
        A[:, ::2] = A[src] * pyet.asarray(a[:, 3:4].copy())
        np.testing.assert_array_equal(a, want)
    a = values(dtype, (9, 600), rng, specials=False)
    want = a.copy()
    want[:, :300] = a[:, ::2] * a[:, 3:4]
    A = pyet.asarray(a)
    A[:, :300] = A[:, ::2] * A[:, 3:4]
    np.testing.assert_array_equal(a, want)


def test_refused_where_it_does_not_apply():
    rng = np.random.default_rng(7)
    a = values("float64", (6, 200), rng)
    c = values("float64", (6, 1), rng)
    many = values("float64", (25, 64), rng)
    many_c = values("float64", (25, 1), rng)
    check("multiply", many[:, :63], many_c, False, taken=False)   # 25 rows of 63 elements
    check("multiply", many[:24, :63], many_c[:24], False, taken=True)  # 24 of them
    check("multiply", many[:, :2], many_c, False, taken=False)  # 25 of 2
    check("multiply", many[:24, :2], many_c[:24], False, taken=True)
    check("multiply", many, many_c, False, taken=True)    # 25 rows of 64
    check("multiply", a[:, ::2], c, False, taken=False)   # strided rows of 100
    check("add", a, np.broadcast_to(a[:1], a.shape), False, taken=False)  # a row, not a column
    # one value broadcast to a column (pyet may take it as a scalar), and one row
    check("add", a, np.broadcast_to(c[:1], c.shape), False, taken=None)
    check("maximum", a[:1], c[:1], True, taken=False)  # a column of one element: a scalar
    out = np.zeros((6, 400))
    check("multiply", a[:, :127], c, False, taken=False, dst=out[:, :254:2])  # strided dst rows
    f32 = values("float32", (6, 200), rng)
    check("multiply", f32[:, :63], values("float32", (6, 1), rng), False, taken=True)
    check("multiply", np.tile(f32[:, :63], (5, 1)), values("float32", (30, 1), rng), False,
          taken=False)
    # misaligned: a float64 field of a packed record, a contiguous buffer one
    # byte off (pyet copies such leaves first: either path), and dst there
    rec = np.zeros((6, 200), np.dtype([("pad", "u1"), ("x", "<f8")], align=False))
    rec["x"] = a
    check("multiply", rec["x"], c, False, taken=None)
    raw = np.zeros(6 * 200 * 8 + 1, np.uint8)
    mis = raw[1:].view(np.float64).reshape(6, 200)
    mis[...] = a
    check("multiply", mis, c, False, taken=None)
    check("multiply", a, c, False, taken=None, dst=raw[1:].view(np.float64).reshape(6, 200))
    for name in OTHER_OPS:
        x = np.abs(a) + 1 if name != "power" else np.abs(a)
        y = np.abs(c) + 1
        with np.errstate(all="ignore"):
            check(name, np.nan_to_num(x), np.nan_to_num(y), False, taken=False, exact=False)


@pytest.mark.parametrize("first", [False, True])
def test_floating_point_errors_as_numpy(first):
    a = np.ones((4, 100)) * np.arange(100)
    c = np.array([[0.0], [1.0], [0.0], [2.0]])
    args = (c, a) if first else (a, c)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="divide by zero|invalid value"):
            np.divide(*args)
        out = np.empty((4, 100))
        P = (pyet.asarray(c), pyet.asarray(a)) if first else (pyet.asarray(a), pyet.asarray(c))
        with pytest.raises(RuntimeWarning, match="divide by zero|invalid value"):
            pyet.asarray(out)[...] = P[0] / P[1]
    with np.errstate(divide="raise", invalid="raise"), pytest.raises(FloatingPointError):
        pyet.asarray(out)[...] = P[0] / P[1]
    with np.errstate(all="ignore"):
        before = core.column_rows_count()
        pyet.asarray(out)[...] = P[0] / P[1]
        assert core.column_rows_count() > before
        np.testing.assert_array_equal(out, np.divide(*args))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(700, 1000), (3, 100000), (1, 300000)])
def test_threads(threads, shape):
    # the rows split over the threads (fewer rows than threads: one each)
    rng = np.random.default_rng(11)
    a = values("float32", shape, rng)
    c = values("float32", (shape[0], 1), rng)
    before = pyet.get_num_threads()
    pyet.set_num_threads(threads)
    try:
        for name in ("multiply", "maximum", "greater"):
            # (a column of one element is a scalar: no row at a time)
            check(name, a, c, False, taken=shape[0] > 1)
            check(name, a, c, True, taken=shape[0] > 1)
    finally:
        pyet.set_num_threads(before)


def test_empty():
    for shape in ((0, 100), (3, 0, 100)):
        a = np.ones(shape)
        c = np.ones(shape[:-1] + (1,))
        out = np.empty(shape)
        pyet.asarray(out)[...] = pyet.asarray(a) * pyet.asarray(c)
        assert out.shape == shape
