"""Memory safety of the compiled kernels: operands and destinations in every
layout NumPy allows (fields of packed structured arrays, whose strides are
not whole elements; misaligned data; negative and zero strides; 0-d; empty),
through the public API.  Destinations sit in the middle of a sentinel-filled
byte buffer: every byte outside their elements must keep the sentinel."""

import numpy as np
import pytest
from pyet._core.core import matmul_into

import pyet
from pyet._kernels import blas, nn, spatial

SENTINEL = 0xA5
MARGIN = 24
OPERAND_KINDS = ["C", "packed", "misaligned", "neg", "zero"]
DST_KINDS = ["C", "packed", "misaligned", "neg", "gap", "rowgap", "negrows"]


# ------------------------------------------------------------------ layouts

def operand(v, kind):
    """An array equal to ``v`` (or, for "zero", to v's first row broadcast)
    laid out as ``kind``."""
    v = np.asarray(v)
    if kind == "C" or v.ndim == 0:
        return v.copy()
    if kind == "packed":  # a field after one byte, before another: odd base and strides
        rec = np.zeros(v.shape[0], dtype=[("p", "i1"), ("a", v.dtype, v.shape[1:]), ("b", "i1")])
        rec["a"] = v
        out = rec["a"]
        assert out.size <= 1 or out.itemsize == 1 or not out.flags.aligned
        return out
    if kind == "misaligned":
        buf = np.zeros(v.nbytes + 1, np.uint8)
        out = np.ndarray(v.shape, v.dtype, buffer=buf, offset=1)
        out[...] = v
        return out
    if kind == "neg":
        idx = (slice(None, None, -1),) * v.ndim
        return np.ascontiguousarray(v[idx])[idx]
    if kind == "zero":
        return np.broadcast_to(v[:1], v.shape)
    raise AssertionError(kind)


class Dst:
    """A destination of ``shape`` inside a sentinel-filled byte buffer."""

    def __init__(self, shape, dtype, kind):
        dtype = np.dtype(dtype)
        isz = dtype.itemsize
        shape = tuple(shape)
        c = [isz] * len(shape)
        for k in range(len(shape) - 2, -1, -1):
            c[k] = c[k + 1] * max(shape[k + 1], 1)
        if kind in ("packed",):  # rows of whole elements, one byte between rows
            for k in range(len(shape) - 2, -1, -1):
                c[k] = c[k + 1] * max(shape[k + 1], 1) + 1
        if kind == "gap":  # a hole after every element
            c = [2 * s for s in c]
        if kind in ("rowgap", "negrows"):  # contiguous rows, two elements between rows
            for k in range(len(shape) - 2, -1, -1):
                c[k] = c[k + 1] * max(shape[k + 1], 1) + 2 * isz
        extent = sum((n - 1) * abs(s) for n, s in zip(shape, c, strict=True))
        span = extent + isz if all(shape) else 0
        offset = MARGIN + (1 if kind in ("misaligned", "packed") else 0)
        if kind == "neg":
            c = [-s for s in c]
            offset += span - isz if span else 0
        if kind == "negrows" and len(shape) > 1:  # rows in reverse order
            offset += (shape[0] - 1) * c[0] if all(shape) else 0
            c[0] = -c[0]
        self.buf = np.full(span + 2 * MARGIN + 8, SENTINEL, np.uint8)
        self.arr = np.ndarray(shape, dtype, buffer=self.buf, offset=offset, strides=tuple(c))
        self.kind = kind
        # every byte of every element
        mask = np.zeros(self.buf.size, bool)
        if shape == ():
            starts = [offset]
        elif self.arr.size:
            idx = np.indices(shape).reshape(len(shape), -1).T
            starts = offset + idx @ np.array(c, dtype=np.intp)
        else:
            starts = []
        for b in range(isz):
            mask[np.asarray(starts, dtype=np.intp) + b] = True
        self.mask = mask

    def check(self):
        outside = self.buf[~self.mask]
        bad = np.flatnonzero(outside != SENTINEL)
        assert bad.size == 0, f"{self.kind}: {bad.size} bytes outside the destination written"


def assign_both(expr_fn, shape, dtype, kind):
    """Evaluate ``expr_fn()`` into a sentinel destination with evaluate(out=)
    and with ``dst[...] =``; both values returned after the sentinel checks."""
    results = []
    for how in ("evaluate", "setitem"):
        d = Dst(shape, dtype, kind)
        if how == "evaluate":
            pyet.evaluate(expr_fn(), out=d.arr)
        else:
            pyet.asarray(d.arr)[...] = expr_fn()
        d.check()
        results.append(d.arr.copy())
    return results


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        return rng.integers(-9, 10, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def assert_close(got, want, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        tol = 2e-6 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------ softmax

def np_softmax(x, axis, log):
    m = x.max(axis, keepdims=True)
    if log:
        return (x - m) - np.log(np.exp(x - m).sum(axis, keepdims=True))
    e = np.exp(x - m)
    return e / e.sum(axis, keepdims=True)


@pytest.mark.parametrize("kind", OPERAND_KINDS)
@pytest.mark.parametrize("axis", [0, -1, 1])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_operand_layouts(kind, axis, log, dtype):
    x = operand(rand((3, 4, 5), dtype), kind)
    f = pyet.log_softmax if log else pyet.softmax
    got = np.asarray(pyet.evaluate(f(pyet.asarray(x), axis=axis)))
    assert_close(got, np_softmax(x, axis, log), dtype)
    # a tree child too
    got = np.asarray(pyet.evaluate(f(pyet.asarray(x) * 1, axis=axis)))
    assert_close(got, np_softmax(x, axis, log), dtype)


@pytest.mark.parametrize("kind", DST_KINDS)
@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_destination_layouts(kind, axis, log, dtype):
    x = rand((4, 6), dtype)
    f = pyet.log_softmax if log else pyet.softmax
    for got in assign_both(lambda: f(pyet.asarray(x), axis=axis), x.shape, dtype, kind):
        assert_close(got, np_softmax(x, axis, log), dtype)


@pytest.mark.parametrize("kind", OPERAND_KINDS)
@pytest.mark.parametrize("dkind", DST_KINDS)
@pytest.mark.parametrize("targets", ["rows", "indices"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_xent_grad_layouts(kind, dkind, targets, dtype):
    # the kernel addresses rows in elements (byte strides / itemsize): packed,
    # misaligned, reversed and broadcast operands are copied first, such
    # destinations computed aside; no byte outside out's elements written
    x = rand((5, 7), dtype)
    logp = x - x.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    logp = operand(logp, kind)  # ("zero": every row the first)
    if targets == "rows":
        t = operand(np.abs(rand((5, 7), dtype, 1)), kind)
        tt = t
    else:
        t = np.array([3, 0, 6, 6, 1], np.intp)
        tt = np.eye(7, dtype=dtype)[t]
    c = operand(rand((5, 1), dtype, 2), kind)[:, 0]  # a column: its stride as kind's rows
    want = c[:, None] * (np.exp(logp) * tt.sum(1, keepdims=True) - tt)
    d = Dst((5, 7), dtype, dkind)
    nn.xent_grad_rows(logp, t, c, d.arr)
    d.check()
    assert_close(d.arr, want, dtype)


def test_softmax_empty_rows():
    for kind in DST_KINDS:
        (got, _) = assign_both(lambda: pyet.softmax(np.zeros((0, 4))), (0, 4), np.float64, kind)
        assert got.shape == (0, 4)


def test_softmax_rows_kernel_errors():
    x = np.zeros((2, 3))
    with pytest.raises(TypeError, match="share one dtype"):
        nn.softmax_rows(x, np.zeros((2, 3), np.float32), False)
    with pytest.raises(ValueError, match="one 2-D shape"):
        nn.softmax_rows(x, np.zeros((3, 2)), False)
    with pytest.raises(TypeError, match="unsupported dtype int64"):
        nn.softmax_rows(np.zeros((2, 3), np.int64), np.zeros((2, 3), np.int64), False)


# ------------------------------------------------------------------ products

PRODUCT_DTYPES = [np.float64, np.float32, np.int64, np.int32, np.bool_]


@pytest.mark.parametrize("ka", OPERAND_KINDS)
@pytest.mark.parametrize("kb", ["C", "packed", "neg"])
@pytest.mark.parametrize("dtype", PRODUCT_DTYPES)
def test_dot_operand_layouts(ka, kb, dtype):
    a = operand(rand((5, 4), dtype, 1), ka)
    b = operand(rand((4, 3), dtype, 2), kb)
    got = np.asarray(pyet.evaluate(pyet.dot(pyet.asarray(a), pyet.asarray(b))))
    assert_close(got, a @ b, dtype)
    v = operand(rand((4,), dtype, 3), ka)
    got = np.asarray(pyet.evaluate(pyet.dot(pyet.asarray(v), pyet.asarray(b))))
    assert_close(got, v @ b, dtype)


@pytest.mark.parametrize("kind", DST_KINDS)
@pytest.mark.parametrize("dtype", PRODUCT_DTYPES)
def test_dot_destination_layouts(kind, dtype):
    a, b = rand((5, 4), dtype, 1), rand((4, 3), dtype, 2)
    for got in assign_both(lambda: pyet.dot(a, b), (5, 3), dtype, kind):
        assert_close(got, a @ b, dtype)
    if np.dtype(dtype).kind == "f":  # C := 0.5 * A @ B + C through BLAS's beta
        d = Dst((5, 3), dtype, kind)
        d.arr[...] = 1
        D = pyet.asarray(d.arr)
        D[...] = 0.5 * pyet.dot(a, b) + D
        d.check()
        assert_close(d.arr, 0.5 * (a @ b) + 1, dtype)


@pytest.mark.parametrize("dtype", PRODUCT_DTYPES)
def test_dot_0d_and_empty(dtype):
    x, y = rand((4,), dtype, 1), rand((4,), dtype, 2)
    for kind in ("C", "misaligned"):
        for got in assign_both(lambda: pyet.dot(x, y), (), dtype, kind):
            assert_close(got, x @ y, dtype)
    for sa, sb in [((0, 3), (3, 2)), ((2, 0), (0, 3)), ((2, 3), (3, 0))]:
        a, b = rand(sa, dtype), rand(sb, dtype)
        for got in assign_both(lambda a=a, b=b: pyet.dot(a, b), (sa[0], sb[1]), dtype,
                               "packed"):
            assert_close(got, a @ b, dtype)


@pytest.mark.parametrize("ka", OPERAND_KINDS)
@pytest.mark.parametrize("kind", ["C", "packed", "neg"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
def test_batch_dot_layouts(ka, kind, dtype):
    a = operand(rand((3, 2, 4), dtype, 1), ka)
    b = rand((3, 4, 5), dtype, 2)
    for got in assign_both(lambda: pyet.batch_dot(pyet.asarray(a), b), (3, 2, 5), dtype, kind):
        assert_close(got, a @ b, dtype)
    # a batch of one broadcasts
    got = np.asarray(pyet.evaluate(pyet.batch_dot(pyet.asarray(a[:1]), b)))
    assert_close(got, a[:1] @ b, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_batch_dot_empty_batches(dtype):
    a, b = rand((0, 2, 3), dtype), rand((0, 3, 4), dtype)
    got = np.asarray(pyet.evaluate(pyet.batch_dot(a, b)))
    assert got.shape == (0, 2, 4) == np.matmul(a, b).shape


@pytest.mark.parametrize("sa, sb", [((1, 2, 3), (0, 3, 4)), ((0, 2, 3), (1, 3, 4))])
def test_batch_dot_zero_batch_broadcast_shape(sa, sb):
    a, b = np.ones(sa), np.ones(sb)
    e = pyet.batch_dot(a, b)
    assert e.shape == np.matmul(a, b).shape == (0, 2, 4)
    assert np.asarray(pyet.evaluate(e)).shape == (0, 2, 4)


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_matmul_never_reads_an_empty_batch(dtype):
    # a destination that an empty batch cannot fill: refused before any write
    d = Dst((1, 2, 4), dtype, "C")
    with pytest.raises(ValueError, match="broadcast to an empty batch"):
        matmul_into(d.arr, rand((1, 2, 3), dtype), rand((0, 3, 4), dtype))
    assert (d.buf == SENTINEL).all()


def test_gemm_kernel_errors():
    c = np.zeros((1, 2, 2))
    with pytest.raises(ValueError, match="do not give"):
        blas.gemm_into(c, np.zeros((1, 2, 3)), np.zeros((1, 2, 2)), 1.0, 0.0)
    with pytest.raises(ValueError, match="empty batch"):
        blas.gemm_into(c, np.zeros((0, 2, 3)), np.zeros((1, 3, 2)), 1.0, 0.0)
    with pytest.raises(ValueError, match="needs BLAS layouts"):
        blas.gemm_into(c, np.zeros((1, 2, 3))[:, :, ::-1], np.zeros((1, 3, 2)), 1.0, 0.0)
    with pytest.raises(TypeError, match="unsupported dtype int64"):
        blas.gemm_into(c.astype(np.int64), np.zeros((1, 2, 3), np.int64),
                       np.zeros((1, 3, 2), np.int64), 1.0, 0.0)
    with pytest.raises(TypeError, match="share one dtype"):
        blas.loop_matmul_into(c.astype(np.int64), np.zeros((1, 2, 3), np.int32),
                              np.zeros((1, 3, 2), np.int64))
    assert not blas.blas_ok(operand(np.zeros((3, 4)), "misaligned"))
    assert not blas.blas_ok(operand(np.zeros((3, 4)), "packed"))
    with pytest.raises(ValueError, match=r"n must be in \[1, 2\*\*31 - 1\]"):
        blas._set_int_limit(0)


@pytest.fixture
def int_limit():
    """BLAS's int limit lowered to 3 (restored after)."""
    old = blas._set_int_limit(3)
    yield 3
    blas._set_int_limit(old)


# m, k, n: each matrix keeps one side <= 3 (its leading dimension)
@pytest.mark.parametrize("mkn", [(7, 2, 3), (2, 11, 3), (3, 2, 8), (1, 9, 1), (3, 3, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C", "F", "neg"])
def test_products_beyond_blas_int_are_split(int_limit, mkn, dtype, layout):
    m, k, n = mkn
    a, b = rand((m, k), dtype, 1), rand((k, n), dtype, 2)
    if layout == "F":
        a, b = np.asfortranarray(a), np.asfortranarray(b)
    elif layout == "neg":
        a, b = operand(a, "neg"), operand(b, "neg")
    assert_close(np.asarray(pyet.evaluate(pyet.dot(a, b))), a @ b, dtype)
    for kind in ("C", "packed", "neg"):
        d = Dst((m, n), dtype, kind)
        d.arr[...] = 1
        D = pyet.asarray(d.arr)
        D[...] = 0.5 * pyet.dot(a, b) + D
        d.check()
        assert_close(d.arr, 0.5 * (a @ b) + 1, dtype)
    f = np.ones((m, n), dtype, order="F")  # a column-major C: split along its columns
    F = pyet.asarray(f)
    F -= 2 * pyet.dot(a, b)
    assert_close(f, 1 - 2 * (a @ b), dtype)
    x, y = rand((4, m, k), dtype, 3), rand((4, k, n), dtype, 4)
    assert_close(np.asarray(pyet.evaluate(pyet.batch_dot(x, y))), x @ y, dtype)


def test_split_calls_really_happen(int_limit):
    # k = 11 in blocks of 3: a missing beta = 1 after the first block would lose terms
    a, b = np.ones((2, 11)), np.ones((11, 3))
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(pyet.dot(a, b))), np.full((2, 3), 11.))
    c = np.ones((1, 2, 3))
    blas.gemm_into(c, np.ones((1, 2, 11), order="C").swapaxes(1, 2).copy().swapaxes(1, 2),
                   np.ones((1, 11, 3)), 2.0, 1.0)
    np.testing.assert_array_equal(c, 23.0)


def test_product_too_large_for_blas_is_refused(int_limit):
    a, b = np.ones((5, 6)), np.ones((6, 4))  # the result is 5x4: both sides > 3
    with pytest.raises(ValueError, match="too large for BLAS"):
        pyet.evaluate(pyet.dot(a, b))
    d = Dst((5, 4), np.float64, "C")
    with pytest.raises(ValueError, match="too large for BLAS"):
        pyet.evaluate(pyet.dot(a, b), out=d.arr)
    assert (d.buf == SENTINEL).all()


# ------------------------------------------------------------------ gathers

@pytest.mark.parametrize("kind", OPERAND_KINDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_])
def test_take_operand_layouts(kind, dtype):
    w = operand(rand((6, 3), dtype), kind)
    for idx in ([4, -1, 0, 4], [[1, 2], [5, 0]], 3, []):
        got = np.asarray(pyet.evaluate(pyet.take(idx, pyet.asarray(w))))
        np.testing.assert_array_equal(got, w[np.asarray(idx, dtype=np.intp)])


@pytest.mark.parametrize("kind", DST_KINDS)
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_take_destination_layouts(kind, dtype):
    w = rand((6, 3), dtype)
    idx = np.array([4, -1, 0, 4])
    for got in assign_both(lambda: pyet.take(idx, w), (4, 3), dtype, kind):
        np.testing.assert_array_equal(got, w[idx])
    for got in assign_both(lambda: pyet.take(2, w), (3,), dtype, kind):  # 0-d indices
        np.testing.assert_array_equal(got, w[2])
    w1 = rand((6,), dtype)
    for got in assign_both(lambda: pyet.take(2, w1), (), dtype, kind):  # a 0-d result
        np.testing.assert_array_equal(got, w1[2])


@pytest.mark.parametrize("kind", OPERAND_KINDS)
@pytest.mark.parametrize("dkind", DST_KINDS)
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.float32, np.int64])
def test_take_grad_layouts(kind, dkind, dtype):
    g = operand(rand((5, 3), dtype), kind)
    idx = np.array([1, 3, 1, -1, 0])
    want = np.zeros((4, 3), dtype)
    np.add.at(want, idx, g)
    for got in assign_both(lambda: pyet.take_grad(idx, pyet.asarray(g), 4), (4, 3), dtype, dkind):
        assert_close(got, want, dtype)


@pytest.mark.parametrize("kind", OPERAND_KINDS)
@pytest.mark.parametrize("dkind", DST_KINDS)
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.bool_, np.float32, np.int32])
def test_choose_row_element_layouts(kind, dkind, dtype):
    m = operand(rand((5, 4), dtype), kind)
    idx = np.array([3, 0, -1, 2, 1])
    want = m[np.arange(5), idx]
    for got in assign_both(lambda: pyet.choose_row_element(pyet.asarray(m), idx), (5,), dtype,
                           dkind):
        np.testing.assert_array_equal(got, want)


def test_gathers_empty():
    w = np.zeros((0, 3))
    assert np.asarray(pyet.evaluate(pyet.take([], w))).shape == (0, 3)
    got = np.asarray(pyet.evaluate(pyet.take_grad([], np.zeros((0, 3)), 2)))
    np.testing.assert_array_equal(got, np.zeros((2, 3)))
    assert np.asarray(pyet.evaluate(pyet.choose_row_element(np.zeros((0, 2)), []))).shape == (0,)


def test_gather_kernel_errors():
    out = np.zeros((2, 3))
    with pytest.raises(ValueError, match="cannot take rows"):
        nn.take_into(out, np.zeros((4, 2)), np.zeros(2, np.intp))
    with pytest.raises(ValueError, match="indices must be 2 intp"):
        nn.take_into(out, np.zeros((4, 3)), np.zeros(3, np.intp))
    # the dtypes compared as NumPy's ==: another dtype object of float64 (with
    # metadata) is float64; float32 and big-endian float64 are not
    w = np.arange(12.0).reshape(4, 3)
    nn.take_into(out, w.astype(np.dtype(np.float64, metadata={"m": 1})), np.array([3, 1]))
    np.testing.assert_array_equal(out, w[[3, 1]])
    for dt in (np.float32, ">f8"):
        with pytest.raises(ValueError, match="cannot take rows"):
            nn.take_into(out, w.astype(dt), np.array([3, 1]))
    with pytest.raises(ValueError, match="indices must be 2 intp"):
        nn.choose_into(np.zeros(2), np.zeros((2, 3)), np.zeros(2, np.int32))
    c = np.zeros(2)
    nn.choose_into(c, w[:2].astype(np.dtype(np.float64, metadata={"m": 1})), np.array([2, 0]))
    np.testing.assert_array_equal(c, [2.0, 3.0])
    for dt in (np.float32, ">f8"):
        with pytest.raises(ValueError, match="cannot choose from"):
            nn.choose_into(c, w[:2].astype(dt), np.array([2, 0]))
    with pytest.raises(ValueError, match="cannot choose from"):
        nn.choose_into(np.zeros(3), w, np.array([0, 0, 0]))  # 4 rows into 3
    with pytest.raises(TypeError, match="unsupported dtype bool"):
        nn.take_grad_into(np.zeros((2, 3), bool), np.zeros((2, 3), bool), np.zeros(2, np.intp))
    t = np.full((4, 3), 9.0)
    nn.take_grad_into(t, w.astype(np.dtype(np.float64, metadata={"m": 1})), np.array([1, 1, 3, 0]))
    np.testing.assert_array_equal(t, [w[3], w[0] + w[1], [0, 0, 0], w[2]])
    with pytest.raises(ValueError, match="cannot add rows"):
        nn.take_grad_into(t, w.astype(">f8"), np.array([1, 1, 3, 0]))
    swapped = np.zeros((4, 3), ">f8")  # (its bits are not the kernels' doubles)
    with pytest.raises(TypeError, match="unsupported dtype >f8"):
        nn.take_grad_into(swapped, w.astype(">f8"), np.array([1, 1, 3, 0]))
    assert not swapped.any()


# ------------------------------------------------------------------ spatial

def np_im2col(img, ky, kx):
    n, c, h, w = img.shape
    win = np.lib.stride_tricks.sliding_window_view(img, (ky, kx), axis=(2, 3))
    # (n, c, oh, ow, ky, kx) -> rows (c, ky, kx), columns (n, oh, ow)
    return win.transpose(1, 4, 5, 0, 2, 3).reshape(c * ky * kx, -1)


@pytest.mark.parametrize("kind", OPERAND_KINDS)
@pytest.mark.parametrize("dkind", DST_KINDS)
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_im2col_layouts(kind, dkind, dtype):
    img = operand(rand((2, 2, 4, 5), dtype), kind)
    want = np_im2col(img, 2, 3)
    for got in assign_both(lambda: pyet.unpack_patch2col(pyet.asarray(img), 2, 3), want.shape,
                           dtype, dkind):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind", OPERAND_KINDS)
@pytest.mark.parametrize("dkind", DST_KINDS)
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_col2im_layouts(kind, dkind, dtype):
    shape = (2, 2, 4, 5)
    col = operand(rand((2 * 2 * 3, 2 * 3 * 3), dtype), kind)
    where = np_im2col(np.arange(np.prod(shape)).reshape(shape), 2, 3)
    want = np.zeros(np.prod(shape), dtype)
    np.add.at(want, where, col)
    want = want.reshape(shape)
    for got in assign_both(lambda: pyet.pack_col2patch(pyet.asarray(col), shape, 2, 3), shape,
                           dtype, dkind):
        assert_close(got, want, dtype)


def np_pool(x, k, op):
    *lead, h, w = x.shape
    win = x.reshape(*lead, h // k, k, w // k, k)
    return {"max": win.max((-1, -3)), "sum": win.sum((-1, -3), dtype=x.dtype),
            "avg": win.sum((-1, -3)) / (k * k)}[op]


@pytest.mark.parametrize("kind", OPERAND_KINDS)
@pytest.mark.parametrize("dkind", DST_KINDS)
@pytest.mark.parametrize("dtype, op", [(np.float64, "max"), (np.float32, "avg"),
                                       (np.int32, "sum")])
def test_pool_layouts(kind, dkind, dtype, op):
    x = operand(rand((3, 4, 6), dtype), kind)
    want = np_pool(x, 2, op)
    for got in assign_both(lambda: pyet.pool(pyet.asarray(x), 2, 2, op=op), want.shape, dtype,
                           dkind):
        assert_close(got, want, dtype)


@pytest.mark.parametrize("kind", OPERAND_KINDS)
@pytest.mark.parametrize("dkind", DST_KINDS)
@pytest.mark.parametrize("dtype, op", [(np.float64, "max"), (np.int64, "sum")])
def test_unpool_layouts(kind, dkind, dtype, op):
    x = rand((3, 4, 6), dtype, 5)
    if kind == "zero":
        x = np.broadcast_to(x[:1], x.shape)
    p = np_pool(x, 2, op)
    g = rand(p.shape, dtype, 6)
    # NumPy: each window's gradient to its elements (max: those equal to the max)
    up = lambda a: a.repeat(2, -1).repeat(2, -2)  # noqa: E731
    want = up(g) * (x == up(p)) if op == "max" else up(g)
    src, pooled, grad = (operand(a, kind) if kind != "zero" else a for a in (x, p, g))
    for got in assign_both(lambda: pyet.unpool(pyet.asarray(src), pyet.asarray(pooled),
                                               pyet.asarray(grad), 2, 2, op=op),
                           x.shape, dtype, dkind):
        assert_close(got, want, dtype)


def test_spatial_empty():
    img = np.zeros((0, 2, 4, 4))
    assert np.asarray(pyet.evaluate(pyet.unpack_patch2col(img, 2, 2))).shape == (8, 0)
    got = pyet.evaluate(pyet.pack_col2patch(np.zeros((8, 0)), (0, 2, 4, 4), 2, 2))
    assert np.asarray(got).shape == (0, 2, 4, 4)
    assert np.asarray(pyet.evaluate(pyet.pool(np.zeros((0, 4, 4)), 2, 2))).shape == (0, 2, 2)


def test_spatial_kernel_errors():
    with pytest.raises(ValueError, match="is not the patch matrix"):
        spatial.im2col_into(np.zeros((4, 5)), np.zeros((1, 1, 3, 3)), 2, 2, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="is not the patch matrix"):
        spatial.col2im_into(np.zeros((1, 1, 3, 3)), np.zeros((4, 5)), 2, 2, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="is not the pooled shape"):
        spatial.pool_into(np.zeros((1, 2, 2)), np.zeros((1, 6, 6)), 2, 2, 2, 2, "max")
    with pytest.raises(TypeError, match="share out's dtype"):
        spatial.pool_into(np.zeros((1, 3, 3)), np.zeros((1, 6, 6), np.float32), 2, 2, 2, 2,
                          "max")
    with pytest.raises(TypeError, match="unsupported dtype bool"):
        spatial.pool_into(np.zeros((1, 3, 3), bool), np.zeros((1, 6, 6), bool), 2, 2, 2, 2,
                          "max")
    with pytest.raises(ValueError, match="pooled .* is not the pooled shape"):
        spatial.unpool_into(np.zeros((1, 6, 6)), np.zeros((1, 6, 6)), np.zeros((1, 2, 2)),
                            np.zeros((1, 3, 3)), 2, 2, 2, 2, "max")


@pytest.mark.parametrize("dt", [np.bool_, np.int32, np.int64, np.float32, np.float64])
def test_column_broadcast_filled_per_row(dt):
    # an (n, 1) operand of an (n, m) pass with rows long enough not to be packed:
    # its value filled into each row's block (the vectorized fill)
    rng = np.random.default_rng(3)
    col = (rng.standard_normal((200, 1)) * 50).astype(dt)
    full = (rng.standard_normal((200, 300)) * 50).astype(dt)
    for a, b in [(np.broadcast_to(col, full.shape), full), (full, np.broadcast_to(col, full.shape)),
                 (np.broadcast_to(col, full.shape)[::-1], full[:, ::2].repeat(2, axis=1))]:
        got = pyet.evaluate(pyet.asarray(a) < pyet.asarray(b)).numpy()
        np.testing.assert_array_equal(got, a < b)
        if dt is not np.bool_:
            got = pyet.evaluate(pyet.asarray(a) + pyet.asarray(b)).numpy()
            np.testing.assert_array_equal(got, a + b)
