"""Flat tiles (blocks.pxi run_tiles_flat): a pass whose leaves are read across
their rows (A.T, Fortran arrays into a C destination) with rows short enough
runs a tile of whole rows as one block, the leaves copied a tile at a time into
contiguous buffers.  Checked against NumPy bit for bit on the layouts it serves
(and on the ones next to it that keep row-by-row tiles): 2-D and stacked planes,
tiles cut at a plane's end, leaves read twice, casts, scalars, NaN and signed
zeros, reversed and Fortran destinations, aliasing, 0-d and empty, threads."""

import numpy as np
import pytest

import pyet


def floats(shape, dtype, rng):
    a = (rng.standard_normal(shape) * 3).astype(dtype)
    flat = a.reshape(-1)
    specials = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, -np.nan], dtype)
    flat[:: max(flat.size // 7, 1)][: specials.size] = specials[: flat[:: max(
        flat.size // 7, 1)].size]
    return a


def ints(shape, dtype, rng):
    info = np.iinfo(dtype)
    a = rng.integers(-1000, 1000, shape).astype(dtype)
    a.reshape(-1)[:3] = [info.min, info.max, -1]
    return a


def make(shape, dtype, rng):
    return (floats if np.dtype(dtype).kind == "f" else ints)(shape, dtype, rng)


def across(a, kind):
    """a's values in a layout read across its rows by a C pass."""
    if kind == "T":
        return np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
    if kind == "F":
        return np.asfortranarray(a)
    if kind == "T reversed":  # rows read across, both axes walked backwards
        return np.ascontiguousarray(np.swapaxes(a, -1, -2)[..., ::-1, ::-1]).swapaxes(
            -1, -2)[..., ::-1, ::-1]
    raise ValueError(kind)


def same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()


SHAPES = [(64, 64), (8, 64), (16, 16), (37, 50), (100, 20), (3, 40, 50), (2, 3, 17, 64),
          (64, 200), (1, 64), (64, 1)]

OPS = {
    "abs": (1, abs, np.abs, "fi"),
    "neg": (1, lambda a: -a, np.negative, "fi"),
    "invert": (1, lambda a: ~a, np.invert, "i"),
    "sqrt": (1, pyet.sqrt, lambda a: np.sqrt(np.abs(a)), "f"),
    "add": (2, lambda a, b: a + b, np.add, "fi"),
    "maximum": (2, pyet.maximum, np.maximum, "f"),
    "xor": (2, lambda a, b: a ^ b, np.bitwise_xor, "i"),
    "where": (2, lambda a, b: pyet.where(a > b, a, b), lambda a, b: np.where(a > b, a, b), "fi"),
    "fma": (3, lambda a, b, c: a * b + c, lambda a, b, c: a * b + c, "f"),
}


def pyet_args(name, arrs):
    ts = [pyet.asarray(a) for a in arrs]
    if name == "sqrt":
        return [abs(ts[0])]
    return ts


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("kind", ["T", "F"])
def test_ops_across_rows_into_c(shape, dtype, name, kind, one_thread):
    arity, fp, fn, kinds = OPS[name]
    if np.dtype(dtype).kind not in kinds:
        pytest.skip("op not defined for this dtype")
    rng = np.random.default_rng(hash((shape, name)) % 2**32)
    arrs = [across(make(shape, dtype, rng), kind) for _ in range(arity)]
    with np.errstate(all="ignore"):
        want = fn(*arrs)
        out = np.full(shape, 7, want.dtype)
        pyet.evaluate(fp(*pyet_args(name, arrs)), out=out)
    same_bits(out, want)


@pytest.mark.parametrize("shape", [(64, 64), (3, 40, 50), (37, 50)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mixed_leaves_scalars_and_reads_twice(shape, dtype, one_thread):
    # a C leaf (flat rows) beside across-rows leaves, a scalar, a leaf read twice
    rng = np.random.default_rng(3)
    a, b = across(make(shape, dtype, rng), "T"), across(make(shape, dtype, rng), "F")
    c = make(shape, dtype, rng)
    A, B, C = (pyet.asarray(x) for x in (a, b, c))
    with np.errstate(all="ignore"):
        want = np.where(a > c, a * 2.5 - b, c / b) + a
        out = np.empty(shape, dtype)
        out[...] = pyet.where(A > C, A * 2.5 - B, C / B) + A
    same_bits(out, want)


@pytest.mark.parametrize("shape", [(64, 64), (16, 48), (2, 33, 64)], ids=str)
@pytest.mark.parametrize("src,dst", [(np.float32, np.float64), (np.int32, np.float64),
                                     (np.float64, np.float32), (np.int64, np.int32)])
def test_casts_and_copies(shape, src, dst, one_thread):
    rng = np.random.default_rng(4)
    a = across(make(shape, src, rng), "T")
    out = np.empty(shape, dst)
    with np.errstate(all="ignore"):
        pyet.asarray(out)[...] = pyet.asarray(a).astype(dst) if np.can_cast(
            src, dst, "same_kind") else pyet.asarray(a.astype(dst))
        want = a.astype(dst)
    same_bits(out, want)
    same_out = np.empty(shape, src)
    pyet.asarray(same_out)[...] = pyet.asarray(a)  # dst = A.T: straight into dst
    same_bits(same_out, a)


@pytest.mark.parametrize("dlayout", ["C", "reversed", "F", "strided"])
def test_destinations_that_are_not_c(dlayout, one_thread):
    # only C-ordered rows take flat tiles; the others keep their paths
    rng = np.random.default_rng(5)
    a, b = across(make((64, 64), np.float64, rng), "T"), make((64, 64), np.float64, rng)
    base = np.zeros((64, 128))
    out = {"C": base[:, :64], "reversed": base[::-1, :64][:, ::-1],
           "F": np.asfortranarray(base[:, :64]), "strided": base[:, ::2]}[dlayout]
    out[...] = 0
    pyet.asarray(out)[...] = pyet.asarray(a) * pyet.asarray(b) - 1.0
    same_bits(np.ascontiguousarray(out), a * b - 1.0)


def test_aliasing_destination(one_thread):
    # A.T written into A's own memory: a copy first, as NumPy's result
    rng = np.random.default_rng(6)
    for dtype in (np.float32, np.float64, np.int32):
        x = make((64, 64), dtype, rng)
        want = np.abs(x.T) + x
        X = pyet.asarray(x)
        x[...] = abs(X.T) + X
        same_bits(x, want)
        y = make((2, 48, 48), dtype, rng)
        want = -np.swapaxes(y, 1, 2)
        Y = pyet.asarray(y)
        y[...] = -Y.swapaxes(1, 2)
        same_bits(y, want)


def test_zero_d_empty_and_broadcast_rows(one_thread):
    rng = np.random.default_rng(7)
    a = across(make((64, 64), np.float32, rng), "T")
    row = make((64,), np.float32, rng)
    out = np.empty((64, 64), np.float32)
    out[...] = pyet.asarray(a) + pyet.asarray(row)  # a row broadcast: row-by-row tiles
    same_bits(out, a + row)
    col = make((64, 1), np.float32, rng)
    out[...] = pyet.asarray(a) * pyet.asarray(col)
    same_bits(out, a * col)
    empty = across(make((0, 64), np.float32, rng), "T")
    e_out = np.empty((0, 64), np.float32)
    e_out[...] = abs(pyet.asarray(empty))
    z = np.empty((), np.float32)
    z[...] = abs(pyet.asarray(np.float32(-2.5)))
    assert z == 2.5


@pytest.mark.parametrize("shape", [(64, 64), (3, 40, 50), (128, 8)], ids=str)
def test_threads(shape, threaded):
    rng = np.random.default_rng(8)
    a, b = across(make(shape, np.float64, rng), "T"), across(make(shape, np.float64, rng), "F")
    out = np.empty(shape)
    with np.errstate(all="ignore"):
        out[...] = pyet.where(pyet.asarray(a) > pyet.asarray(b), pyet.asarray(a),
                              pyet.sqrt(abs(pyet.asarray(b))))
        same_bits(out, np.where(a > b, a, np.sqrt(np.abs(b))))


def test_multi_output_pass(one_thread):
    rng = np.random.default_rng(9)
    a = across(make((64, 64), np.float32, rng), "T")
    m, v = make((64, 64), np.float32, rng), make((64, 64), np.float32, rng)
    want_m, want_v = 0.9 * m + 0.1 * a, 0.99 * v + 0.01 * a * a
    A, M, V = pyet.asarray(a), pyet.asarray(m), pyet.asarray(v)
    plan = pyet.EvalPlan()
    plan.assign(M, 0.9 * M + 0.1 * A)
    plan.assign(V, 0.99 * V + 0.01 * A * A)
    plan.run()
    same_bits(m, want_m.astype(np.float32))
    same_bits(v, want_v.astype(np.float32))


def into_across(shape, dtype, kind):
    """An empty destination whose rows a C pass writes across (F order, a transpose)."""
    if kind == "F":
        return np.empty(shape, dtype, order="F")
    return np.empty(shape[:-2] + shape[-1:] + shape[-2:-1], dtype).swapaxes(-1, -2)


@pytest.mark.parametrize("shape", [(64, 64), (16, 48), (37, 50), (181, 181), (3, 40, 50),
                                   (512, 8), (8, 512), (512, 512), (70, 1000)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("kind", ["F", "T"])
def test_c_leaves_into_a_destination_read_across(shape, dtype, kind, one_thread):
    # dst tiles: each tile computed into a buffer, then copied across dst's rows
    rng = np.random.default_rng(10)
    a, b, c = (make(shape, dtype, rng) for _ in range(3))
    A, B, C = (pyet.asarray(x) for x in (a, b, c))
    with np.errstate(all="ignore"):
        for fp, fn in ((lambda: A + B, lambda: a + b),
                       (lambda: pyet.where(A > B, A, C), lambda: np.where(a > b, a, c)),
                       (lambda: abs(A) * 3 - B + C, lambda: np.abs(a) * 3 - b + c),
                       (lambda: A, lambda: a),
                       (lambda: -A.astype(np.float64), lambda: -a.astype(np.float64))):
            want = fn()
            out = into_across(shape, want.dtype, kind)
            out[...] = 7
            pyet.asarray(out)[...] = fp()
            same_bits(np.ascontiguousarray(out), want)


def test_destination_read_across_in_place_and_mixed(one_thread):
    rng = np.random.default_rng(11)
    for dtype in (np.float32, np.float64):
        x = np.asfortranarray(make((64, 64), dtype, rng))
        c = make((64, 64), dtype, rng)
        want = x * 2 + c
        X = pyet.asarray(x)
        x[...] = X * 2 + pyet.asarray(c)  # dst F, its own operand F, c C
        same_bits(np.ascontiguousarray(x), want)
        y = np.asfortranarray(make((48, 80), dtype, rng))
        t = across(make((48, 80), dtype, rng), "T")
        want = np.maximum(y, t) - c[:48, :64].sum()
        Y = pyet.asarray(y)
        y[...] = pyet.maximum(Y, pyet.asarray(t)) - float(c[:48, :64].sum())
        same_bits(np.ascontiguousarray(y), want)


@pytest.mark.parametrize("shape", [(64, 64), (3, 40, 50), (512, 8)], ids=str)
def test_destination_read_across_threads(shape, threaded):
    rng = np.random.default_rng(12)
    a, b = make(shape, np.float64, rng), make(shape, np.float64, rng)
    out = into_across(shape, np.float64, "F")
    with np.errstate(all="ignore"):
        pyet.asarray(out)[...] = pyet.sqrt(abs(pyet.asarray(a))) + pyet.asarray(b)
        same_bits(np.ascontiguousarray(out), np.sqrt(np.abs(a)) + b)


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("rows", [181, 75, 13])
def test_tiles_off_the_leafs_cache_lines(dtype, rows, one_thread):
    # a transposed leaf starting at every item offset in a cache line: tiles
    # whose rows are not a whole number of the register transposes' steps
    # (the first tile cut at the leaf's next line, the last at the end) run
    # those steps and then the rows left one at a time (pyet_copy_tile)
    rng = np.random.default_rng(rows)
    isz = np.dtype(dtype).itemsize
    values = rng.random((rows, 181)) < 0.5 if dtype == np.bool_ else make((rows, 181), dtype,
                                                                           rng)
    raw = np.zeros(rows * 181 * isz + 128, np.uint8)
    start = (-raw.ctypes.data) % 64
    for off in range(0, 64, isz):
        src = raw[start + off:start + off + rows * 181 * isz].view(dtype).reshape(rows, 181)
        src[...] = values
        a = src.T  # (181, rows), read across its rows into a C destination
        buf = np.full(181 * rows * isz + 128, 0x5A, np.uint8)
        dst = buf[64:-64].view(dtype).reshape(181, rows)
        pyet.asarray(dst)[...] = ~pyet.asarray(a) if dtype == np.bool_ else -pyet.asarray(a)
        same_bits(dst, np.invert(a) if dtype == np.bool_ else np.negative(a))
        assert (buf[:64] == 0x5A).all() and (buf[-64:] == 0x5A).all()
