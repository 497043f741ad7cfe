"""Reductions along contiguous rows folded one row at a time
(core.fold_short_rows: each row one vector of lanes, then its tail) and
argmax/argmin in lanes of contiguous kept rows (core.arg_rows, any length of
the reduced axis).  The kernel by itself (NumPy's values for rows around the
lane widths, NaN, -0.0, integer extremes and wrap-around, every layout whose
kept axes merge, destinations strided and reversed, and its refusals: False,
nothing written), then through pyet's API (Reduction._way_of's choice and
its boundaries, the kernel called, NumPy's values and dtypes into
sentinel-framed and misaligned destinations, evaluate, keepdims, one and
two threads), and an (n, 1) column's max straight to NumPy's loop."""

import numpy as np
import pytest

import pyet
from pyet._core import core
from pyet._nodes import reductions

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64]
# around the lane widths (8 float64/int64 lanes, 16 float32/int32, 32 bools),
# four chains of them, and the early stop's chunks of 32 vectors (256-1024)
LENGTHS = [8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 513, 1025]


def kinds_of(dtype):
    # what fold_short_rows takes for dtype: float sums and products it refuses
    return ["max", "min", "any", "all"] + ([] if np.dtype(dtype).kind == "f" else
                                           ["sum", "prod"])


def rows_of(rng, rows, k, dtype):
    """rows x k values, ties everywhere; row i (class i % 4, j = i // 4)
    holds a special value at position (13 j - 1) mod k: the last element
    (the tail), the first, the lanes' and the tail's positions in turn."""
    i = np.arange(rows)
    pos = (13 * (i // 4) - 1) % k
    if dtype is np.bool_:
        x = rng.random((rows, k)) < 0.5
        x[0::4], x[1::4] = False, True
        x[i[0::4], pos[0::4]] = True  # any: one True, all False
        x[i[1::4], pos[1::4]] = False  # all: one False
        x[7::8] = False  # rows all False
        return x
    if np.dtype(dtype).kind == "i":
        info = np.iinfo(dtype)
        x = rng.integers(-3, 4, (rows, k)).astype(dtype)
        x[0::4] = 0
        x[i[0::4], pos[0::4]] = info.max  # any: one nonzero; max: one
        x[1::4] = np.where(x[1::4] == 0, 1, x[1::4])
        x[i[1::4], pos[1::4]] = 0  # all: one zero
        x[i[1::4], (pos[1::4] + 1) % k] = info.min
        x[i[2::4], pos[2::4]] = info.min
        x[i[2::4], (pos[2::4] + 5) % k] = info.max
        # near 2^31 (and 2^63): sums past the dtype's range, as NumPy's int64
        x[3::4] = info.max - rng.integers(0, 3, x[3::4].shape).astype(dtype)
        x[7::8] = 0
        return x
    x = (rng.standard_normal((rows, k)) * 3).astype(dtype)
    x[0::4] = np.where(rng.random(x[0::4].shape) < 0.5, -0.0, 0.0)
    x[i[0::4], pos[0::4]] = np.nan  # any: NaN is true; max/min: NaN
    x[i[1::4], pos[1::4]] = -0.0  # all: -0.0 is false
    x[i[1::4], (pos[1::4] + 3) % k] = np.inf
    x[i[2::4], pos[2::4]] = -np.inf
    x[i[3::4], pos[3::4]] = np.nan
    x[i[3::4], (pos[3::4] + 1) % k] = np.inf
    x[7::8] = -0.0  # any: False
    return x


def framed(shape, dtype, step=1):
    """(dst, check): dst of shape and dtype inside a buffer of sentinel
    units, every |step|-th unit (reversed for a negative step); check()
    asserts every unit dst does not cover still holds the sentinel."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    unit = np.dtype(f"u{dtype.itemsize}")
    sentinel = unit.type(int("AB" * dtype.itemsize, 16))
    units = np.full(n * abs(step) + 2, sentinel, unit)
    index = np.arange(units.size)[1:-1][::step][:n]
    dst = units[1:-1][::step][:n].reshape(shape).view(dtype)
    assert np.shares_memory(dst, units)
    outside = np.ones(units.size, bool)
    outside[index] = False

    def check():
        assert (units[outside] == sentinel).all(), "written outside the destination"
    return dst, check


def numpy_of(kind, x, axis, keepdims=False):
    with np.errstate(all="ignore"):
        return np.asarray(getattr(np, kind)(x, axis=axis, keepdims=keepdims))


def fold_into(kind, x, axis, step=1):
    # the kernel into a framed destination: NumPy's values, nothing around them
    want = numpy_of(kind, x, axis)
    dst, check = framed(want.shape, want.dtype, step)
    assert core.fold_short_rows(dst, x, reductions._FOLD[kind], axis), (kind, x.shape, axis)
    np.testing.assert_array_equal(dst, want, err_msg=f"{kind} {x.dtype} {x.shape} axis={axis}")
    check()


def kernel_layouts(base):
    """(array, axis) pairs of base's rows (contiguous along axis) whose kept
    axes merge into one run of rows."""
    rows, k = base.shape
    yield base, 1  # C rows
    yield base[::-1], 1  # rows reversed: a negative row step
    yield base[::2], 1  # every other row
    yield base.T, 0  # the reduced axis first (F view): its kept axis transposed
    m = rows - rows % 3
    cube = base[:m].reshape(-1, 3, k)
    yield cube, 2  # 3-D along its last axis
    yield cube[::-1, ::-1], 2  # both kept axes reversed: they still merge
    yield cube.transpose(2, 0, 1), 0  # the reduced axis moved first
    yield base[:, None, :], 2  # a kept axis of one element


@pytest.mark.parametrize("k", LENGTHS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fold_short_rows_as_numpy(dtype, k):
    rng = np.random.default_rng(k)
    base = rows_of(rng, 4 * min(k, 40) + 3, k, dtype)  # (4m + 3: rows left after fours)
    for kind in kinds_of(dtype):
        for n, (x, axis) in enumerate(kernel_layouts(base)):
            fold_into(kind, x, axis, step=(1, 2, -1)[n % 3])


def test_fold_short_rows_special_values():
    f = reductions._FOLD
    # NaN anywhere propagates through max and min; a NaN is true, -0.0 false
    for dtype in (np.float32, np.float64):
        for k in (8, 16, 17, 64, 100, 513):
            for j in range(0, k, max(1, k // 9)):
                x = np.zeros((5, k), dtype)
                x[:, j] = np.nan
                x[1] = -0.0  # a row of -0.0
                x[2, (j + 1) % k] = -0.0
                x[3] = 1.0
                x[3, j] = -0.0
                x[4] = 2.0
                x[4, j] = np.nan
                for kind in ("max", "min", "any", "all"):
                    fold_into(kind, x, 1)
                d = np.zeros(5, dtype)
                assert core.fold_short_rows(d, x, f["max"], 1)
                assert np.isnan(d[[0, 2, 4]]).all() and d[3] == 1.0
                assert d[1] == 0 and np.signbit(d[1])  # a row of -0.0: -0.0
                b = np.zeros(5, bool)
                assert core.fold_short_rows(b, x, f["any"], 1)
                np.testing.assert_array_equal(b, [True, False, True, True, True])
                assert core.fold_short_rows(b, x, f["all"], 1)
                np.testing.assert_array_equal(b, [False, False, False, False, True])
    # int32 sums in int64: NumPy's, where int32 would wrap
    for k in (8, 16, 17, 33, 513):
        x = np.full((6, k), 2**31 - 1, np.int32)
        x[1] = -2**31
        x[2, ::2] = -2**31
        fold_into("sum", x, 1)
        d = np.zeros(6, np.int64)
        assert core.fold_short_rows(d, x, f["sum"], 1)
        assert d[0] == k * (2**31 - 1) and d[1] == -k * 2**31
    # int64 sums and products wrap as NumPy's
    x = np.full((4, 40), np.iinfo(np.int64).max, np.int64)
    x[1] = np.iinfo(np.int64).min
    x[2] = 3
    x[3, 7] = -1
    for kind in ("sum", "prod", "max", "min"):
        fold_into(kind, x, 1)
    # bool sums count the Trues, products are all()
    b = np.ones((3, 600), bool)
    b[1, 599] = False
    b[2, ::3] = False
    fold_into("sum", b, 1)
    fold_into("prod", b, 1)


def test_fold_short_rows_into_destinations():
    # destinations strided, reversed, 2-D of other strides that still merge
    x = rows_of(np.random.default_rng(5), 63, 33, np.float64)
    cube = x[:60].reshape(20, 3, 33)
    for step in (1, 2, -1, 3, -2):
        for kind in ("max", "any"):
            fold_into(kind, x, 1, step)
            fold_into(kind, cube, 2, step)
    wide = np.full((20, 6), -7.0)
    assert core.fold_short_rows(wide[:, ::2], cube, reductions._FOLD["max"], 2)
    np.testing.assert_array_equal(wide[:, ::2], cube.max(2))
    assert (wide[:, 1::2] == -7.0).all()


def refused(dst, src, kind, axis, red=None):
    """fold_short_rows answers False and writes nothing (dst and src as before)."""
    before_dst, before_src = dst.tobytes(), src.tobytes()
    red = reductions._FOLD[kind] if red is None else red
    assert not core.fold_short_rows(dst, src, red, axis), (kind, dst.dtype, src.shape, axis)
    assert dst.tobytes() == before_dst and src.tobytes() == before_src


def test_fold_short_rows_refusals():
    x = np.random.default_rng(0).standard_normal((40, 16))
    xi = (x * 100).astype(np.int32)
    # the destination's dtype: src's for max/min, bool for any/all, int64 for sums
    refused(np.full(40, 5, np.float32), x, "max", 1)
    refused(np.full(40, 5, np.int64), xi, "max", 1)
    refused(np.full(40, 5, np.int32), xi, "sum", 1)
    refused(np.full(40, 5, np.float64), xi, "prod", 1)
    refused(np.full(40, 5, np.int8), x, "any", 1)
    refused(np.full(40, 5.0), x, "all", 1)
    # float sums and products: NumPy's pairwise order is not the kernel's
    for dtype in (np.float32, np.float64):
        refused(np.full(40, 5, np.int64), x.astype(dtype), "sum", 1)
        refused(np.full(40, 5, dtype), x.astype(dtype), "sum", 1)
        refused(np.full(40, 5, dtype), x.astype(dtype), "prod", 1)
        refused(np.full(40, 5, dtype), x.astype(dtype), "mean", 1)
    refused(np.full(40, 5, np.int64), x, "argmax", 1)
    refused(np.full(40, 5.0), x, "max", 1, red=0)
    refused(np.full(40, 5.0), x, "max", 1, red=99)
    # the reduced axis not contiguous
    refused(np.full(40, 5.0), np.asfortranarray(x), "max", 1)
    refused(np.full(40, 5.0), np.ascontiguousarray(np.repeat(x, 2, 1))[:, ::2], "max", 1)
    refused(np.full(40, 5.0), x[:, ::-1], "max", 1)
    refused(np.full(16, 5.0), x, "max", 0)
    # a misaligned destination: a packed structured array's field
    packed = np.zeros(40, dtype=np.dtype([("a", "u1"), ("b", "f8")], align=False))
    packed["a"], packed["b"] = 7, -7.5
    assert not packed["b"].flags.aligned
    refused(packed["b"], x, "max", 1)
    assert (packed["a"] == 7).all() and (packed["b"] == -7.5).all()
    packed = np.zeros(40, dtype=np.dtype([("a", "u1"), ("b", "i8")], align=False))
    packed["b"] = -5
    refused(packed["b"], xi, "sum", 1)
    assert (packed["b"] == -5).all()
    # a misaligned source
    raw = np.zeros(40 * 16 * 8 + 1, np.uint8)
    mis = raw[1:].view(np.float64).reshape(40, 16)
    mis[...] = x
    assert not mis.flags.aligned
    refused(np.full(40, 5.0), mis, "max", 1)
    # a read-only destination
    ro = np.full(40, 5.0)
    ro.flags.writeable = False
    refused(ro, x, "max", 1)
    # a destination inside the source's memory, either end, rows either way
    buf = np.arange(640.0)
    refused(buf[:40], buf.reshape(40, 16), "max", 1)
    refused(buf[-40:], buf.reshape(40, 16)[::-1], "min", 1)
    refused(buf[600:640:1][::-1], buf.reshape(40, 16), "max", 1)
    ibuf = np.arange(640, dtype=np.int64)
    refused(ibuf[300:340], ibuf.reshape(40, 16), "sum", 1)
    # a byte-swapped source: refused, nothing written (pyet.asarray refuses
    # such arrays too); arg_rows alike
    for dst, src, kind in ((np.full(40, 5.0), x.astype(">f8"), "max"),
                           (np.full(40, 5, np.int64), xi.astype(">i4"), "sum"),
                           (np.full(40, False), x.astype(">f8"), "any")):
        refused(dst, src, kind, 1)
    out = np.full(40, 7, np.int64)
    assert core.arg_rows(out, x.astype(">f8"), reductions._FOLD["argmax"], 1) is False
    assert (out == 7).all()
    # a bad axis, a destination of the wrong shape, an empty source
    for axis in (2, -1, 5):
        refused(np.full(40, 5.0), x, "max", axis)
    refused(np.full((40, 1), 5.0), x, "max", 1)  # (keepdims' shape)
    refused(np.full(41, 5.0), x, "max", 1)
    refused(np.full(0, 5.0), np.zeros((0, 16)), "max", 1)
    # kept axes that do not merge into one run of rows, in src or in dst
    z = np.zeros((4, 10, 16))
    z[1, 3, 5] = 1.0
    refused(np.full((4, 4), 5.0), z[:, ::3], "max", 2)  # rows 3 apart, blocks 10 apart
    refused(np.full((4, 5), 5.0), z[:, :5], "max", 2)
    refused(np.full((10, 4), 5.0), z.transpose(1, 0, 2), "max", 2)  # kept axes swapped in src
    refused(np.full((10, 4), 5.0).T, z, "max", 2)  # ... and in dst
    refused(np.full((8, 10), 5.0)[::2], z, "max", 2)  # dst's rows apart
    # (and the same layouts where they merge are taken)
    d = np.zeros((4, 10))
    assert core.fold_short_rows(d, z, reductions._FOLD["max"], 2)
    np.testing.assert_array_equal(d, z.max(2))


# ---- through pyet's API -------------------------------------------------


@pytest.fixture
def calls(monkeypatch):
    """What core.fold_short_rows and core.arg_rows answered, in order, as
    (name, taken), for the reductions run since the last clear()."""
    log = []

    def spy(name, real):
        def kernel(*args):
            taken = real(*args)
            log.append((name, bool(taken)))
            return taken
        return kernel

    for name in ("fold_short_rows", "arg_rows"):
        monkeypatch.setattr(core, name, spy(name, getattr(core, name)))
    return log


def takes(kind, a, axis):
    # the way the reduction's kernel (made for a's shape and dtype, as
    # _layout makes it) takes for a's layout
    return getattr(pyet, kind)(pyet.asarray(a), axis=axis)._kernel._way_of(a)[0]


def check_api(kind, x, axis, keepdims=False, step=1, calls=None, kernel=None):
    """pyet's reduction into a sentinel-framed destination and evaluated:
    NumPy's values, dtype and shape; with ``kernel`` ("fold_short_rows" or
    "arg_rows"), that kernel wrote both."""
    want = numpy_of(kind, x, axis, keepdims)
    X = pyet.asarray(x)
    dst, check = framed(want.shape, want.dtype, step)
    if calls is not None:
        calls.clear()
    pyet.asarray(dst)[...] = getattr(pyet, kind)(X, axis=axis, keepdims=keepdims)
    np.testing.assert_array_equal(dst, want, err_msg=f"{kind} {x.dtype} {x.shape} axis={axis}")
    check()
    got = np.asarray(pyet.evaluate(getattr(pyet, kind)(X, axis=axis, keepdims=keepdims)))
    assert got.dtype == want.dtype and got.shape == want.shape, (kind, got.dtype, got.shape)
    np.testing.assert_array_equal(got, want, err_msg=f"{kind} {x.dtype} {x.shape} axis={axis}")
    if kernel is not None:
        assert calls == [(kernel, True)] * 2, (kind, x.dtype, x.shape, axis, calls)


def api_layouts(base):
    """(array, axis) pairs of base's contiguous rows (all _EACH_ROW's)."""
    rows, k = base.shape
    yield base, 1
    yield base[::-1], 1
    yield base[::2], 1
    yield base.T, 0  # F-order: the reduced axis first
    m = rows - rows % 5
    yield base[:m].reshape(-1, 5, k), 2
    yield base[:m].reshape(-1, 5, k)[::-1, ::-1], 2  # both kept axes reversed: they merge


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_each_row_through_the_api(dtype, threads, calls):
    pyet.set_num_threads(threads)
    try:
        for k in (8, 17, 64, 100, 513, 1025):
            rng = np.random.default_rng(k)
            base = rows_of(rng, max(4 * min(k, 40) + 3, -(-9000 // k)), k, dtype)
            for n, (x, axis) in enumerate(api_layouts(base)):
                assert x.size >= reductions.SHORT_FOLD_MIN
                for kind in kinds_of(dtype):
                    assert takes(kind, x, axis) == reductions._EACH_ROW, (kind, x.shape)
                    check_api(kind, x, axis, step=(1, 2, -1)[n % 3], calls=calls,
                              kernel="fold_short_rows")
            for kind in kinds_of(dtype):
                check_api(kind, base, 1, keepdims=True, calls=calls, kernel="fold_short_rows")
                check_api(kind, base.T, 0, keepdims=True, calls=calls, kernel="fold_short_rows")
    finally:
        pyet.set_num_threads(1)


def test_each_row_into_destinations_it_refuses(calls):
    # the kernel refuses these destinations (misaligned, inside the leaf) or
    # leaves (kept axes that do not merge): the engine still gives NumPy's values
    rng = np.random.default_rng(11)
    for dtype in (np.float64, np.int32, np.int64, np.float32):
        x = rows_of(rng, 603, 16, dtype)
        for kind in kinds_of(dtype):
            want = numpy_of(kind, x, 1)
            packed = np.zeros(want.size, np.dtype([("pad", "u1"), ("v", want.dtype)],
                                                 align=False))
            packed["pad"] = 0x5A
            dst = packed["v"]
            assert not dst.flags.aligned or want.dtype == np.bool_
            calls.clear()
            pyet.asarray(dst)[...] = getattr(pyet, kind)(pyet.asarray(x), axis=1)
            np.testing.assert_array_equal(dst, want, err_msg=f"{kind} {dtype}")
            assert (packed["pad"] == 0x5A).all()
            if want.dtype != np.bool_:
                assert ("fold_short_rows", True) not in calls, calls
    # a destination inside the leaf: computed aside first
    buf = rows_of(rng, 603, 16, np.float64)
    want = numpy_of("max", buf, 1)
    pyet.asarray(buf[:, 3])[...] = pyet.max(pyet.asarray(buf), axis=1)
    np.testing.assert_array_equal(buf[:, 3], want)
    ibuf = rows_of(rng, 603, 16, np.int64)
    want = numpy_of("sum", ibuf, 1)
    pyet.asarray(ibuf[:, -1])[...] = pyet.sum(pyet.asarray(ibuf), axis=1)
    np.testing.assert_array_equal(ibuf[:, -1], want)
    # kept axes that do not merge (blocks of 5 rows apart, the inner kept
    # axis reversed alone): not _EACH_ROW's way (the kernel would refuse
    # every call), NumPy's loop
    cube = rows_of(rng, 1203, 16, np.int32)[:1200].reshape(-1, 10, 16)
    for x in (cube[:, :5], cube[:, ::-1]):
        for kind in ("max", "sum", "any"):
            assert takes(kind, x, 2) != reductions._EACH_ROW
            check_api(kind, x, 2, calls=calls)
            assert calls == [], calls


def test_which_layouts_fold_each_row():
    EACH = reductions._EACH_ROW
    for dtype in DTYPES:
        for kind in kinds_of(dtype):
            for shape in [(3000, 8), (3000, 16), (1000, 64), (500, 513), (250, 2048)]:
                a = np.zeros(shape, dtype)
                assert a.nbytes <= 4 << 20  # (ONE_CALL_BYTES)
                assert takes(kind, a, 1) == EACH, (kind, dtype, shape)
                assert takes(kind, np.asfortranarray(a.T), 0) == EACH
            # rows shorter than SHORT_AXIS: the slices' fold
            assert takes(kind, np.zeros((3000, 7), dtype), 1) == reductions._SLICES
            # the reduced axis not contiguous
            assert takes(kind, np.asfortranarray(np.zeros((3000, 16), dtype)), 1) != EACH
            assert takes(kind, np.zeros((3000, 32), dtype)[:, ::2], 1) != EACH
            assert takes(kind, np.zeros((3000, 16), dtype)[:, ::-1], 1) != EACH
            # under SHORT_FOLD_MIN elements: NumPy's call, no way looked up
            assert takes(kind, np.zeros((100, 8), dtype), 1) == reductions._NO_WAY
            # whole, or a vector: one row
            assert takes(kind, np.zeros(9000, dtype), 0) != EACH
            assert getattr(pyet, kind)(pyet.asarray(np.zeros((3000, 16), dtype)))._kernel \
                ._way_of(np.zeros((3000, 16), dtype))[0] != EACH
            # past ONE_CALL_BYTES (4 MiB) only rows shorter than SHORT_INNER (64)
            n = (4 << 20) // (64 * np.dtype(dtype).itemsize)
            assert takes(kind, np.zeros((n, 64), dtype), 1) == EACH  # (exactly ONE_CALL_BYTES)
            assert takes(kind, np.zeros((n + 1, 64), dtype), 1) != EACH
            assert takes(kind, np.zeros((n + 1, 63), dtype), 1) == EACH
            assert takes(kind, np.zeros((n // 8, 520), dtype), 1) != EACH
    # float sums, products and means never: NumPy's pairwise order
    for dtype in (np.float32, np.float64):
        for kind in ("sum", "prod", "mean"):
            for k in (8, 16, 63, 64, 513):
                assert takes(kind, np.zeros((3000, k), dtype), 1) != EACH, (kind, dtype, k)
    for dtype in (np.int32, np.int64, np.bool_):
        assert takes("mean", np.zeros((3000, 16), dtype), 1) != EACH
    for kind in ("argmax", "argmin"):
        assert takes(kind, np.zeros((3000, 16)), 1) != EACH


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_each_row_boundaries_as_numpy(dtype, calls):
    # either side of ONE_CALL_BYTES and SHORT_AXIS: NumPy's values either way
    n = (4 << 20) // (64 * np.dtype(dtype).itemsize) + 1  # past ONE_CALL_BYTES, rows of 64
    rng = np.random.default_rng(12)
    big = rows_of(rng, n, 64, dtype)
    for kind in ("max", "any") + (("sum",) if dtype is not np.float64 else ()):
        assert takes(kind, big, 1) != reductions._EACH_ROW
        check_api(kind, big, 1, calls=calls)
        assert ("fold_short_rows", True) not in calls
        check_api(kind, big[:, :63], 1, calls=calls, kernel="fold_short_rows")
        check_api(kind, rows_of(rng, 3000, 7, dtype), 1)
    with np.errstate(all="ignore"):
        if dtype is not np.bool_:
            for kind in ("sum", "prod", "mean"):
                check_api(kind, rows_of(rng, 600, 40, dtype), 1)


# ---- argmax/argmin in lanes of contiguous kept rows -----------------------


def arg_values(rng, shape, dtype):
    # ties everywhere, extremes, NaNs (several in a row: the first wins)
    if dtype is np.bool_:
        x = rng.random(shape) < 0.5
        x.reshape(-1, shape[-1])[::7] = False
        x.reshape(-1, shape[-1])[3::11] = True
        return x
    x = rng.integers(-3, 3, shape).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x.flat[::37] = np.nan
        x.flat[5::53] = np.inf
        x.flat[9::61] = -np.inf
        x.flat[11::29] = -0.0
    else:
        info = np.iinfo(dtype)
        x.flat[3::41] = info.max
        x.flat[7::43] = info.min
    return x


ARG_LAYOUTS = [  # (shape, order, axis): kept rows side by side in memory
    ((4096, 64), "C", 0),
    ((64, 4096), "F", 1),
    ((300, 16), "C", 0),
    ((33, 40, 9), "C", 0),
    ((2000, 20), "C", 0),
]


def arg_layouts(rng, dtype):
    for shape, order, axis in ARG_LAYOUTS:
        yield np.asarray(arg_values(rng, shape, dtype), order=order), axis
    x = arg_values(rng, (1000, 48), dtype)
    yield x[::-1], 0  # the reduced axis reversed
    yield x[:, ::-1], 0  # the kept rows reversed
    yield x[::3], 0


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_argmax_in_lanes_of_kept_rows(dtype, threads, calls):
    rng = np.random.default_rng(21)
    pyet.set_num_threads(threads)
    try:
        for n, (x, axis) in enumerate(arg_layouts(rng, dtype)):
            for kind in ("argmax", "argmin"):
                assert takes(kind, x, axis) == reductions._ARG_ROWS, (x.shape, x.strides)
                check_api(kind, x, axis, step=(1, 2, -1)[n % 3], calls=calls,
                          kernel="arg_rows")
                check_api(kind, x, axis, keepdims=True, calls=calls, kernel="arg_rows")
        # a middle axis of a C leaf: the kept rows contiguous in blocks of 32
        # that do not merge into one run: not arg_rows' way (it would refuse
        # every call), NumPy's loop or the pass
        x = arg_values(rng, (50, 7, 32), dtype)
        for kind in ("argmax", "argmin"):
            assert takes(kind, x, 1) != reductions._ARG_ROWS
            check_api(kind, x, 1, calls=calls)
            assert calls == [], calls
            check_api(kind, x, 1, keepdims=True)
        # a small leaf (fewer than SHORT_FOLD_MIN elements): NumPy's own call
        x = arg_values(rng, (100, 16), dtype)
        for kind in ("argmax", "argmin"):
            check_api(kind, x, 0)
            check_api(kind, np.asfortranarray(x.T), 1, keepdims=True)
    finally:
        pyet.set_num_threads(1)


def test_arg_lanes_need_enough_kept_rows(calls):
    lanes = 16  # reductions.ARG_LANES_MIN
    rng = np.random.default_rng(22)
    for dtype in (np.float64, np.int32):
        for kind in ("argmax", "argmin"):
            # fewer kept rows than a lane's: NumPy's loop (the axis is long)
            for x, axis in ((arg_values(rng, (4096, 8), dtype), 0),
                            (arg_values(rng, (4096, lanes - 1), dtype), 0),
                            (np.asfortranarray(arg_values(rng, (lanes - 1, 4096), dtype)), 1)):
                assert takes(kind, x, axis) != reductions._ARG_ROWS, x.shape
                check_api(kind, x, axis, calls=calls)
                assert not [c for c in calls if c[0] == "arg_rows"], calls
            # exactly a lane's: in lanes
            x = arg_values(rng, (4096, lanes), dtype)
            assert takes(kind, x, 0) == reductions._ARG_ROWS
            check_api(kind, x, 0, calls=calls, kernel="arg_rows")
            x = np.asfortranarray(arg_values(rng, (lanes, 4096), dtype))
            assert takes(kind, x, 1) == reductions._ARG_ROWS
            check_api(kind, x, 1, calls=calls, kernel="arg_rows")
            # unless the reduced axis is short: rows folded one by one
            x = arg_values(rng, (4096, 8), dtype)
            assert takes(kind, x, 1) == reductions._ARG_ROWS
            check_api(kind, x, 1, calls=calls, kernel="arg_rows")
            # a long axis along which the rows lie (C along axis 1): NumPy's
            x = arg_values(rng, (512, 64), dtype)
            assert takes(kind, x, 1) != reductions._ARG_ROWS
            check_api(kind, x, 1)


# ---- a column's max --------------------------------------------------------


def test_column_max_goes_to_numpy(calls):
    rng = np.random.default_rng(31)
    for dtype in (np.int32, np.int64):
        x = arg_values(rng, (262144, 1), dtype)
        for kind in ("max", "min"):
            kernel = getattr(pyet, kind)(pyet.asarray(x), axis=0)._kernel
            assert kernel._way_of(x) == (reductions._NO_WAY, reductions._NUMPY_YES)
            check_api(kind, x, 0, calls=calls)
            check_api(kind, x, 0, keepdims=True, calls=calls)
            assert not calls
    x = arg_values(rng, (262144, 1), np.float64)
    for kind in ("max", "min"):
        assert takes(kind, x, 0) == reductions._SQUEEZED
        check_api(kind, x, 0)
        check_api(kind, x, 0, keepdims=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_trailing_axes_of_one_run_fold_each_row(dtype, calls):
    # several trailing axes whose values are one contiguous run a row fold
    # as one axis of their product; where they are not one run (a step, a
    # reversed axis, leading axes), another way
    rng = np.random.default_rng(5)
    base = rows_of(rng, 1600, 16, dtype)
    for x, axes in ((base.reshape(1600, 4, 4), (1, 2)), (base.reshape(400, 4, 4, 4), (1, 2, 3)),
                    (base.reshape(800, 2, 4, 4), (2, 3)), (base.reshape(1600, 1, 4, 4), (1, 2, 3)),
                    (base.reshape(1600, 4, 4)[::-1], (1, 2))):
        for kind in kinds_of(dtype):
            assert takes(kind, x, axes) == reductions._EACH_ROW, (kind, x.shape, axes)
            check_api(kind, x, axes, calls=calls, kernel="fold_short_rows")
            check_api(kind, x, axes, keepdims=True, calls=calls, kernel="fold_short_rows")
    cube = base.reshape(1600, 4, 4)
    for x, axes in ((cube[:, :, ::-1], (1, 2)), (cube[:, ::2], (1, 2)),
                    (np.asfortranarray(cube), (1, 2)), (cube, (0, 1))):
        for kind in kinds_of(dtype):
            assert takes(kind, x, axes) != reductions._EACH_ROW, (kind, x.strides, axes)
            check_api(kind, x, axes)
