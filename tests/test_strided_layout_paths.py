"""Strided rows read into blocks and written back from them (steps 2, 3, 7 and
others, negative steps, zero steps, packed fields), blocks of strided passes
at L1 length, and ``dst = leaf`` along strided rows as one strided copy with
no block between: every item size, lengths around the copies' unrolling and
the block lengths, destinations inside sentinels, aliasing, against NumPy."""

import numpy as np
import pytest

import pyet

DTYPES = [np.float32, np.float64, np.int32, np.int64]
LENGTHS = [1, 3, 4, 5, 9, 513, 4099, 9001]  # around the unrolling by 4, blocks of 512 and 8192
STEPS = [2, 3, 5, 7, -1, -2, -3, -7]


def values(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return (rng.random(shape) * 8 + 0.25).astype(dtype)
    return rng.integers(-1000, 1000, shape).astype(dtype)


def strided(rng, n, step, dtype):
    """n elements of a larger array, ``step`` elements apart (negative: backwards)."""
    base = values(rng, abs(step) * n + 2, dtype)
    return base[1:1 + abs(step) * n:abs(step)][::1 if step > 0 else -1] if step != 1 \
        else base[1:1 + n]


def check_written(buf, before, dst_mask):
    """Only the destination's elements of buf changed."""
    np.testing.assert_array_equal(buf[~dst_mask], before[~dst_mask])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("n", LENGTHS)
def test_strided_leaves_into_blocks(dtype, step, n):
    rng = np.random.default_rng(abs(step) * 100003 + n)
    a = strided(rng, n, step, dtype)
    b = strided(rng, n, -step, dtype)
    assert a.shape == b.shape == (n,)
    A, B = pyet.asarray(a), pyet.asarray(b)
    if np.dtype(dtype).kind == "f":
        # one kernel straight into dst (no register), two strided operands
        np.testing.assert_array_equal(np.asarray(pyet.sqrt(A)), np.sqrt(a))
        np.testing.assert_array_equal(np.asarray(A / B), a / b)
        np.testing.assert_array_equal(np.asarray(pyet.maximum(A, B * 2)), np.maximum(a, b * 2))
        # one compute-bound kernel with a scalar operand (float64: gathered in pieces)
        np.testing.assert_array_equal(np.asarray(2.5 / A), 2.5 / a)
        np.testing.assert_array_equal(np.asarray(B / 3.0), b / 3.0)
    else:
        np.testing.assert_array_equal(np.asarray(abs(A)), np.abs(a))
        np.testing.assert_array_equal(np.asarray(A ^ B), a ^ b)
    np.testing.assert_array_equal(np.asarray(A + B * 3), a + b * 3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("n", LENGTHS)
def test_strided_destinations_inside_sentinels(dtype, step, n):
    rng = np.random.default_rng(abs(step) * 7919 + n)
    a = values(rng, n, dtype)
    c = strided(rng, n, 3, dtype)
    sentinel = np.array(-7).astype(dtype)
    buf = np.full(abs(step) * n + 2, sentinel, dtype)
    mask = np.zeros(buf.shape, bool)
    sl = slice(1, 1 + abs(step) * n, abs(step))
    mask[sl] = True
    dst = buf[sl] if step > 0 else buf[sl][::-1]
    before = buf.copy()
    want = a * 2 + c
    pyet.asarray(dst)[...] = pyet.asarray(a) * 2 + pyet.asarray(c)
    np.testing.assert_array_equal(dst, want)
    check_written(buf, before, mask)
    # one compute-bound kernel from a strided leaf into the strided destination
    buf[...] = sentinel
    if np.dtype(dtype).kind == "f":
        want, expr = np.sqrt(c), pyet.sqrt(pyet.asarray(c))
    else:
        want, expr = c // 7, pyet.asarray(c) // 7
    pyet.asarray(dst)[...] = expr
    np.testing.assert_array_equal(dst, want)
    check_written(buf, before, mask)
    # dst = leaf: one strided copy, contiguous into strided and strided into strided
    for src in (a, c, c[::-1]):
        buf[...] = sentinel
        pyet.asarray(dst)[...] = pyet.asarray(src)
        np.testing.assert_array_equal(dst, src)
        check_written(buf, before, mask)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("step", [2, 3, 7, -1, -3])
def test_copy_of_a_strided_leaf_into_contiguous(dtype, step):
    rng = np.random.default_rng(step + 50)
    for n in LENGTHS:
        a = strided(rng, n, step, dtype)
        out = np.full(n + 2, -5, dtype)
        pyet.asarray(out[1:-1])[...] = pyet.asarray(a)
        np.testing.assert_array_equal(out[1:-1], a)
        assert out[0] == -5 and out[-1] == -5
    # 2-D: every step-th column of rows, rows reversed too
    m = values(rng, (37, 3 * 41), dtype)
    for view in (m[:, ::3], m[::-1, ::-3], m[::2, 1::7], m.T[::2], m[:, ::3].T):
        out = np.empty(view.shape, dtype)
        pyet.asarray(out)[...] = pyet.asarray(view)
        np.testing.assert_array_equal(out, view)
        np.testing.assert_array_equal(np.asarray(pyet.asarray(view) + 1), view + 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_evenly_strided_several_blocks(dtype):
    # the grid's step2 layout: rows of 512 read every other element, and rows
    # longer than a block, as leaves and destinations
    rng = np.random.default_rng(3)
    for rows, cols in ((16, 512), (3, 1500), (64, 100), (2, 9000)):
        base = values(rng, (rows, 2 * cols), dtype)
        a, b = base[:, ::2], base[:, 1::2]
        A, B = pyet.asarray(a), pyet.asarray(b)
        want = np.maximum(a, b) if np.dtype(dtype).kind == "f" else a & b
        got = pyet.maximum(A, B) if np.dtype(dtype).kind == "f" else A & B
        np.testing.assert_array_equal(np.asarray(got), want)
        buf = np.full((rows, 3 * cols), -3, dtype)
        dst = buf[:, ::3]
        pyet.asarray(dst)[...] = A - B
        np.testing.assert_array_equal(dst, a - b)
        assert (buf[:, 1::3] == -3).all() and (buf[:, 2::3] == -3).all()


@pytest.mark.parametrize("dt", ["<f4", "<f8", "<i4", "<i8"])
def test_packed_fields_byte_strides_not_a_multiple_of_the_itemsize(dt):
    # a packed record (1 + itemsize bytes): the field's elements lie misaligned,
    # 1 + itemsize bytes apart
    rng = np.random.default_rng(11)
    itemsize = np.dtype(dt).itemsize
    rec = np.dtype([("pad", "u1"), ("x", dt)], align=False)
    assert rec.itemsize == 1 + itemsize
    for n in (1, 5, 513, 4099):
        arr = np.zeros(n + 2, rec)
        arr["pad"] = 0xA5
        vals = values(rng, n + 2, np.dtype(dt).type)
        arr["x"] = vals
        x = arr["x"][1:-1]
        assert x.strides[0] % itemsize != 0 or n == 1
        X = pyet.asarray(x)
        np.testing.assert_array_equal(np.asarray(X * 2 + X), x * 2 + x)
        np.testing.assert_array_equal(np.asarray(X[::-2] - 1), x[::-2] - 1)
        # the field as the destination: the records' other bytes and the
        # sentinel records untouched
        before = arr.view(np.uint8).copy()
        other = values(rng, n, np.dtype(dt).type)
        pyet.asarray(x)[...] = pyet.asarray(other) * 3
        np.testing.assert_array_equal(x, other * 3)
        raw = arr.view(np.uint8).reshape(n + 2, rec.itemsize)
        assert (raw[:, 0] == 0xA5).all()
        np.testing.assert_array_equal(raw[0], before.reshape(n + 2, -1)[0])
        np.testing.assert_array_equal(raw[-1], before.reshape(n + 2, -1)[-1])
        pyet.asarray(x)[...] = pyet.asarray(other[::-1])  # dst = leaf
        np.testing.assert_array_equal(x, other[::-1])
        assert (raw[:, 0] == 0xA5).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_steps(dtype):
    rng = np.random.default_rng(5)
    row = values(rng, 700, dtype)
    col = values(rng, (300, 1), dtype)
    r = np.broadcast_to(row, (300, 700))
    c = np.broadcast_to(col, (300, 700))
    R, C = pyet.asarray(r), pyet.asarray(c)
    np.testing.assert_array_equal(np.asarray(R + C), r + c)
    np.testing.assert_array_equal(np.asarray(R * 2 - R), r * 2 - r)
    for src in (r, c, np.broadcast_to(row[::-3], (5, row[::-3].size))):
        out = np.empty(src.shape, dtype)
        pyet.asarray(out)[...] = pyet.asarray(src)  # dst = leaf with a zero step
        np.testing.assert_array_equal(out, src)
    buf = np.full((300, 1400), -9, dtype)
    pyet.asarray(buf[:, ::2])[...] = R + C
    np.testing.assert_array_equal(buf[:, ::2], r + c)
    assert (buf[:, 1::2] == -9).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_d_and_empty(dtype):
    rng = np.random.default_rng(6)
    z = values(rng, (), dtype)
    out = np.zeros((), dtype)
    pyet.asarray(out)[...] = pyet.asarray(z) * 2
    np.testing.assert_array_equal(out, z * 2)
    pyet.asarray(out)[...] = pyet.asarray(z)
    np.testing.assert_array_equal(out, z)
    # a 0-d operand broadcast into a strided destination
    buf = np.full(30, -1, dtype)
    pyet.asarray(buf[::3])[...] = pyet.asarray(z)
    np.testing.assert_array_equal(buf[::3], np.full(10, z))
    assert (buf[1::3] == -1).all() and (buf[2::3] == -1).all()
    for shape in ((0,), (4, 0), (0, 6)):
        e = values(rng, (shape[0], 3 * shape[-1] + 1) if len(shape) == 2 else (0,), dtype)
        e = e[:, ::3][:, :shape[-1]] if len(shape) == 2 else e[::3]
        out = np.empty(e.shape, dtype)
        pyet.asarray(out)[...] = pyet.asarray(e) + 1
        np.testing.assert_array_equal(out, e + 1)
        pyet.asarray(out)[...] = pyet.asarray(e)
        assert out.shape == e.shape


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [5, 513, 9001])
def test_aliasing_destination(dtype, n):
    # dst and operands views of one array: P wraps an operand (pyet.asarray for
    # pyet, nothing for NumPy, whose result is computed before it is written)
    rng = np.random.default_rng(n)
    x0 = values(rng, 2 * n, dtype)
    cases = [
        (lambda x: x[::2], lambda x, P: P(x[1::2]) * 2),  # the other half, doubled
        (lambda x: x[::2], lambda x, P: P(x[1::2])),      # dst = leaf, disjoint elements
        (lambda x: x[1::2], lambda x, P: P(x[:-1:2])),
        (lambda x: x[1:], lambda x, P: P(x[:-1])),        # shifted by one element
        (lambda x: x[:-1], lambda x, P: P(x[1:]) + 1),
        (lambda x: x[::-1], lambda x, P: P(x)),           # reversed onto itself
        (lambda x: x[::-1], lambda x, P: P(x) * 3),
        (lambda x: x[::3], lambda x, P: P(x[::3]) + 1),   # the same view, in place
        (lambda x: x[::3], lambda x, P: P(x[::-3][::-1])),  # dst = the same view
        (lambda x: x[2::2], lambda x, P: P(x[:-2:2]) - P(x[1:-1:2])),
        (lambda x: x[::-2], lambda x, P: P(x[1::2]) * 2),
    ]
    for dsel, esel in cases:
        want = x0.copy()
        dsel(want)[...] = np.array(esel(want, lambda a: a))
        got = x0.copy()
        pyet.asarray(dsel(got))[...] = esel(got, pyet.asarray)
        np.testing.assert_array_equal(got, want)


def test_transposed_and_strided_copies():
    # dst = leaf through the tiled path (a leaf read across its rows) next to
    # the strided copy: each element lands once, in the right place
    rng = np.random.default_rng(9)
    for dtype in DTYPES:
        m = values(rng, (300, 2 * 257), dtype)
        for view in (m.T, m[:, ::2].T, m.T[::3], m[::-1, ::2].T[::-1]):
            out = np.full(view.shape, -1, dtype)
            pyet.asarray(out)[...] = pyet.asarray(view)
            np.testing.assert_array_equal(out, view)
            buf = np.full((view.shape[0], 2 * view.shape[1]), -1, dtype)
            pyet.asarray(buf[:, ::2])[...] = pyet.asarray(view)
            np.testing.assert_array_equal(buf[:, ::2], view)
            assert (buf[:, 1::2] == -1).all()
