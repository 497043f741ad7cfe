"""Fuzzing every public pyet function with random legal NumPy layouts, against NumPy.

Operands come in every layout NumPy allows: fields of packed structured arrays (odd byte
strides, misaligned), negative and odd steps, zero strides (``np.broadcast_to``), 0-d,
zero-size, Fortran-ordered and transposed.  Destinations (``evaluate(e, out=dst)``,
``t[...] = e``, ``t += e``) are strided views in the middle of a uint8 buffer filled with
0xA5: after evaluation every byte outside the destination's elements must be unchanged.

NumPy is the oracle: pyet must give its values (exactly, or within 2 ulp for transcendental
functions and a few roundings for sums and products), and may raise only where NumPy raises
(or where NumPy's result dtype is one pyet does not support).  Examples are derandomized, so a
failure reproduces, and few, so the file runs in well under a minute.
"""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_ops import IN_FLOAT64_LANES, rounded_from_float64

import pyet
from pyet._core.ops import OPS

DTYPES = ["bool", "int32", "int64", "float32", "float64"]
NUMERIC = DTYPES[1:]
FLOATS = ["float32", "float64"]
SUPPORTED = {np.dtype(d) for d in DTYPES}
SENTINEL = 0xA5
TRANSCENDENTAL = {
    op.name for op in OPS if op.kind == "float"
    and op.name not in ("sqrt", "rint", "floor", "ceil", "trunc", "deg2rad", "rad2deg")
} | {"power", "arctan2", "hypot"}

# PYET_FUZZ_EXAMPLES=2000 for a long local run; the default keeps the file well under 60 s
FUZZ = settings(max_examples=int(os.environ.get("PYET_FUZZ_EXAMPLES", 150)), deadline=None,
                derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------- values and layouts


def values(rng, dtype, shape, lo=-10.0, hi=10.0, specials=False):
    """Random values of dtype and shape in [lo, hi]; floats may include NaN, infinities and
    signed zeros."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        return rng.integers(int(np.ceil(lo)), int(np.floor(hi)) + 1, size=shape).astype(dtype)
    v = rng.uniform(lo, hi, size=shape)
    if specials and v.size:
        pick = rng.random(shape) < 0.2
        v = np.where(pick, rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0], size=shape), v)
    return v.astype(dtype)


LAYOUTS = ["contig", "fortran", "transposed", "steps", "field", "bcast"]


def lay_out(vals, layout, rng):
    """An ndarray equal to ``vals`` laid out in memory as asked."""
    if vals.ndim == 0 and layout in ("fortran", "transposed", "steps", "bcast"):
        layout = "field"
    if layout == "contig":
        return vals.copy()
    if layout == "fortran":
        return np.asfortranarray(vals)
    if layout == "transposed":
        perm = rng.permutation(vals.ndim)
        return vals.transpose(perm).copy().transpose(np.argsort(perm))
    if layout == "steps":  # negative and odd steps
        steps = [int(s) for s in rng.choice([-3, -2, -1, 1, 2, 3], size=vals.ndim)]
        base = np.zeros([max(n, 1) * abs(s) for n, s in zip(vals.shape, steps, strict=True)],
                        vals.dtype)
        view = base[tuple(slice(None, None, s) for s in steps)]
        view = view[tuple(slice(0, n) for n in vals.shape)]
        view[...] = vals
        return view
    if layout == "field":  # a field of a packed structured array: odd strides, misaligned
        before, after = int(rng.integers(1, 4)), int(rng.integers(0, 4))
        rec = np.zeros(vals.shape, np.dtype([("a", "u1", (before,)), ("v", vals.dtype),
                                             ("b", "u1", (after,))]))
        rec["v"] = vals
        view = rec["v"]
        assert view.ctypes.data % vals.dtype.itemsize or vals.dtype.itemsize == 1 or before % 4
        return view
    if layout == "bcast":  # zero strides along the axes where vals is constant
        return vals.copy()
    raise AssertionError(layout)


@st.composite
def shapes(draw, min_dims=0, max_dims=4, max_side=5, min_side=0):
    return tuple(draw(st.lists(st.integers(min_side, max_side), min_size=min_dims,
                               max_size=max_dims)))


@st.composite
def operands(draw, shape, dtype, lo=-10.0, hi=10.0, specials=False):
    """An ndarray of ``shape`` in a random layout (and its values, contiguous)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    layout = draw(st.sampled_from(LAYOUTS))
    if layout == "bcast" and len(shape):
        # constant along random axes: a stride-0 broadcast of a smaller array
        small = tuple(1 if draw(st.booleans()) else n for n in shape)
        arr = np.broadcast_to(values(rng, dtype, small, lo, hi, specials), shape)
        return arr
    return lay_out(values(rng, dtype, shape, lo, hi, specials), layout, rng)


def broadcastable(draw, shape):
    """A shape that broadcasts with ``shape``: some axes 1, some leading ones dropped."""
    drop = draw(st.integers(0, len(shape)))
    return tuple(1 if draw(st.booleans()) else n for n in shape[drop:])


# ---------------------------------------------------------------- destinations


@st.composite
def destinations(draw, shape, dtype):
    """(buffer, dst): dst an ndarray view of ``shape`` in the middle of a uint8 buffer of
    sentinel bytes, with random axis order, signs, gaps and (mis)alignment."""
    dtype = np.dtype(dtype)
    nd = len(shape)
    order = draw(st.permutations(range(nd))) if nd else []
    extra = draw(st.sampled_from([0, 0, 1, 3, dtype.itemsize]))  # bytes between elements
    gaps = [draw(st.sampled_from([1, 1, 2])) for _ in range(nd)]
    signs = [draw(st.sampled_from([1, -1])) for _ in range(nd)]
    strides = [0] * nd
    step = dtype.itemsize + extra
    for ax in reversed(order):  # the last in ``order`` varies fastest
        strides[ax] = step * gaps[ax] * signs[ax]
        step *= max(shape[ax], 1) * gaps[ax]
    lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides, strict=True) if n)
    hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides, strict=True) if n)
    margin = 16 + draw(st.integers(0, 7))  # odd offsets misalign the destination
    buf = np.full(margin + (hi - lo) + dtype.itemsize + 16, SENTINEL, np.uint8)
    dst = np.ndarray(shape, dtype, buf, margin - lo, tuple(strides))
    return buf, dst


def element_bytes(buf, dst):
    """Mask of the buffer bytes that belong to dst's elements."""
    mask = np.zeros(buf.size, bool)
    if dst.size == 0:
        return mask
    base = dst.ctypes.data - buf.ctypes.data
    if dst.ndim == 0:
        offs = np.array([base])
    else:
        idx = np.indices(dst.shape).reshape(dst.ndim, -1)
        offs = base + (np.asarray(dst.strides)[:, None] * idx).sum(axis=0)
    for k in range(dst.itemsize):
        mask[offs + k] = True
    return mask


def assert_sentinels_intact(buf, dst):
    outside = ~element_bytes(buf, dst)
    changed = np.flatnonzero(outside & (buf != SENTINEL))
    assert changed.size == 0, f"bytes outside the destination changed at {changed[:10]}"


# ---------------------------------------------------------------- comparing with NumPy


def numpy_result(fn, *args):
    """(result, None), or (None, exception) where NumPy raises or gives a dtype pyet lacks."""
    try:
        with np.errstate(all="ignore"):
            r = np.asarray(fn(*args))
    except Exception as e:  # noqa: BLE001 - the oracle: any NumPy error
        return None, e
    if r.dtype not in SUPPORTED:
        return None, TypeError(f"result dtype {r.dtype}")
    return r, None


def ulps(got, ref):
    got, ref = np.asarray(got, np.float64), np.asarray(ref)
    with np.errstate(all="ignore"):
        same = (got == ref) | (np.isnan(got) & np.isnan(ref))
        d = np.abs(got - ref) / np.spacing(np.abs(ref)).astype(np.float64)
    return np.where(same, 0.0, np.where(np.isfinite(d), d, np.inf))


def assert_matches(got, ref, how="exact", ulp=2, rtol=None):
    got = np.asarray(got)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    if how == "exact" or ref.dtype.kind in "bi":
        np.testing.assert_array_equal(got, ref)
        if ref.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(ref[got == 0]))
    elif how == "ulp":
        d = ulps(got, ref)
        assert d.size == 0 or d.max() <= ulp, f"{d.max()} ulp: got {got}, NumPy {ref}"
    else:  # "close": sums and products round differently (pairwise, compensated, BLAS)
        rtol = rtol or (2e-5 if ref.dtype == np.float32 else 1e-12)
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol, equal_nan=True)


ERRORS = (TypeError, ValueError, IndexError, OverflowError, np.exceptions.AxisError)


def check(pyet_fn, np_fn, np_args, pyet_args=None, how="exact", **kw):
    """pyet_fn on pyet_args (default: np_args) equals np_fn on np_args, or both raise."""
    ref, err = numpy_result(np_fn, *np_args)
    pyet_args = np_args if pyet_args is None else pyet_args
    if err is not None:
        with pytest.raises(ERRORS):
            np.asarray(pyet.evaluate(pyet_fn(*pyet_args)))
        return None
    got = np.asarray(pyet.evaluate(pyet_fn(*pyet_args)))
    assert_matches(got, ref, how, **kw)
    return ref


# ---------------------------------------------------------------- elementwise ops

ROWS = {op.name: op for op in OPS}


@FUZZ
@given(data=st.data(), name=st.sampled_from(sorted(ROWS)), dtype=st.sampled_from(DTYPES),
       shape=shapes())
def test_elementwise_ops(data, name, dtype, shape):
    row = ROWS[name]
    specials = data.draw(st.booleans()) and row.kind != "bitwise"
    args = [data.draw(operands(shape, dtype, *row.domain[0][:2], specials))]
    if row.arity == 2:
        other = data.draw(st.sampled_from([dtype, *DTYPES]))
        args.append(data.draw(operands(broadcastable(data.draw, shape), other,
                                       *row.domain[1][:2], specials)))
        if row.domain[1].nonzero and args[1].dtype.kind in "iu":
            args[1] = np.where(args[1] == 0, 1, args[1]).astype(args[1].dtype)
        if data.draw(st.booleans()):
            args.reverse()
    how = "ulp" if name in TRANSCENDENTAL else "exact"
    ref = rounded_from_float64(row.reference) if name in IN_FLOAT64_LANES else row.reference
    check(getattr(pyet, name), ref, args, [pyet.asarray(a) for a in args], how)


@FUZZ
@given(data=st.data(), shape=shapes(), dtypes=st.tuples(*[st.sampled_from(DTYPES)] * 3))
def test_where_and_clip(data, shape, dtypes):
    c = data.draw(operands(shape, "bool"))
    x = data.draw(operands(broadcastable(data.draw, shape), dtypes[0]))
    y = data.draw(operands(broadcastable(data.draw, shape), dtypes[1]))
    check(pyet.where, np.where, (c, x, y), tuple(pyet.asarray(a) for a in (c, x, y)))
    lo = data.draw(operands(broadcastable(data.draw, shape), dtypes[2], -10, 0))
    check(pyet.clip, lambda a, b, h: np.clip(a, b, h), (x, lo, 3),
          (pyet.asarray(x), pyet.asarray(lo), 3))


# ---------------------------------------------------------------- reductions


@st.composite
def axes(draw, ndim, single=False):
    if ndim == 0 or draw(st.booleans()):
        return None
    if single:
        return draw(st.integers(-ndim, ndim - 1))
    picked = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return tuple(a - ndim if draw(st.booleans()) else a for a in picked)


@pytest.mark.filterwarnings("ignore:Mean of empty slice")  # NumPy's and pyet's alike
@FUZZ
@given(data=st.data(), kind=st.sampled_from(["sum", "mean", "prod", "max", "min", "argmax",
                                             "argmin", "all", "any"]),
       dtype=st.sampled_from(DTYPES), shape=shapes())
def test_reductions(data, kind, dtype, shape):
    a = data.draw(operands(shape, dtype, -3, 3, specials=data.draw(st.booleans())))
    axis = data.draw(axes(a.ndim, single=kind.startswith("arg")))
    keepdims = data.draw(st.booleans())

    def ref(x):
        return getattr(np, kind)(x, axis=axis, keepdims=keepdims)

    def got(t):
        return getattr(pyet, kind)(t, axis=axis, keepdims=keepdims)

    how = "close" if kind in ("sum", "mean", "prod") else "exact"
    with np.errstate(all="ignore"):
        check(got, ref, (a,), (pyet.asarray(a),), how)
    # inside a tree: the reduction of an expression
    with np.errstate(all="ignore"):
        check(lambda t: getattr(pyet, kind)(t * 2, axis=axis, keepdims=keepdims),
              lambda x: ref(x * 2), (a,), (pyet.asarray(a),), how)


# ---------------------------------------------------------------- products


def _odd_strides(*arrays):
    return any(s % a.itemsize for a in arrays for s in a.strides)


def test_integer_dot_with_odd_byte_strides():
    rec = np.zeros(2, [("pad", "u1", (2,)), ("v", "<i4")])
    rec["v"] = [2, 1]
    b = rec["v"].reshape(1, 2)  # strides (12, 6)
    a = np.array([[2]], np.int32)
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(pyet.dot(a, b))), a @ b)  # [[4, 2]]


def test_batch_dot_with_odd_byte_batch_stride():
    rec = np.zeros(2, [("pad", "u1"), ("v", "<f4")])
    rec["v"] = [3, 4]
    y = rec["v"].reshape(2, 1, 1)  # strides (5, 5, 5)
    x = np.array([[[1]], [[2]]], np.float32)
    got = np.asarray(pyet.evaluate(pyet.batch_dot(x, y)))
    np.testing.assert_array_equal(got, x @ y)  # [[[3]], [[8]]]


@FUZZ
@given(data=st.data(), dtype=st.sampled_from(NUMERIC), m=st.integers(0, 6),
       k=st.integers(0, 6), n=st.integers(0, 6), batch=st.integers(1, 3))
def test_products(data, dtype, m, k, n, batch):
    a = data.draw(operands((m, k), dtype, -3, 3))
    b = data.draw(operands((k, n), dtype, -3, 3))
    how = "close" if dtype in FLOATS else "exact"
    check(pyet.dot, np.dot, (a, b), (pyet.asarray(a), pyet.asarray(b)), how)
    check(lambda x, y: x @ y, np.matmul, (a, b), (pyet.asarray(a), pyet.asarray(b)), how)
    v = data.draw(operands((k,), dtype, -3, 3))
    check(pyet.dot, np.dot, (a, v), (pyet.asarray(a), pyet.asarray(v)), how)
    check(pyet.outer, np.outer, (v, b), (pyet.asarray(v), pyet.asarray(b)), how)
    x = data.draw(operands((batch, m, k), dtype, -3, 3))
    y = data.draw(operands((batch, k, n), dtype, -3, 3))
    check(pyet.batch_dot, np.matmul, (x, y), (pyet.asarray(x), pyet.asarray(y)), how)


# ---------------------------------------------------------------- views


@FUZZ
@given(data=st.data(), dtype=st.sampled_from(DTYPES), shape=shapes(min_dims=2, max_dims=4))
def test_views(data, dtype, shape):
    a = data.draw(operands(shape, dtype))
    t = pyet.asarray(a)
    perm = tuple(data.draw(st.permutations(range(a.ndim))))
    check(lambda e: pyet.transpose(e, perm), lambda x: np.transpose(x, perm), (a,), (t,))
    check(lambda e: pyet.reshape(e, (-1,)), lambda x: np.reshape(x, (-1,)), (a,), (t,))
    check(lambda e: pyet.reshape(e + 1, a.shape[::-1]), lambda x: np.reshape(x + 1, a.shape[::-1]),
          (a,), (t,))
    axis = data.draw(axes(a.ndim))
    check(lambda e: pyet.flip(e, axis), lambda x: np.flip(x, axis), (a,), (t,))
    target = (data.draw(st.integers(0, 3)),) + a.shape
    check(lambda e: pyet.broadcast_to(e, target), lambda x: np.broadcast_to(x, target), (a,), (t,))
    b = data.draw(operands(a.shape, data.draw(st.sampled_from(DTYPES))))
    ax = data.draw(st.integers(-a.ndim, a.ndim - 1))
    check(lambda x, y: pyet.concatenate([x, y], axis=ax),
          lambda x, y: np.concatenate([x, y], axis=ax), (a, b), (t, pyet.asarray(b)))
    check(lambda x, y: pyet.stack([x, y], axis=ax), lambda x, y: np.stack([x, y], axis=ax),
          (a, b), (t, pyet.asarray(b)))
    pads = ((data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))),
            (data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))))
    check(lambda e: pyet.pad(e, pads, 1),
          lambda x: np.pad(x, ((0, 0),) * (x.ndim - 2) + pads, constant_values=1), (a,), (t,))
    h, w = a.shape[-2:]
    ch, cw = data.draw(st.integers(0, h)), data.draw(st.integers(0, w))
    oy, ox = data.draw(st.integers(0, h - ch)), data.draw(st.integers(0, w - cw))
    check(lambda e: pyet.crop(e, (ch, cw), (oy, ox)),
          lambda x: x[..., oy:oy + ch, ox:ox + cw], (a,), (t,))


# ---------------------------------------------------------------- softmax and NN helpers


def _np_softmax(x, axis, log):
    x = x.astype(np.float64) if x.dtype.kind != "f" else x
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    s = np.sum(e, axis=axis, keepdims=True)
    return (x - m) - np.log(s) if log else e / s


@FUZZ
@given(data=st.data(), dtype=st.sampled_from(NUMERIC), shape=shapes(min_dims=1, min_side=1),
       log=st.booleans())
def test_softmax(data, dtype, shape, log):
    a = data.draw(operands(shape, dtype, -5, 5))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    fn = pyet.log_softmax if log else pyet.softmax
    check(lambda e: fn(e, axis), lambda x: _np_softmax(x, axis, log), (a,), (pyet.asarray(a),),
          "close", rtol=1e-4 if dtype == "float32" else 1e-10)


@FUZZ
@given(data=st.data(), dtype=st.sampled_from(NUMERIC), rows=st.integers(1, 6),
       cols=st.integers(1, 5), ishape=shapes(max_dims=2))
def test_nn_helpers(data, dtype, rows, cols, ishape):
    W = data.draw(operands((rows, cols), dtype))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    idx = rng.integers(-rows, rows, size=ishape)
    idx = lay_out(idx, data.draw(st.sampled_from(LAYOUTS)), rng)
    tW = pyet.asarray(W)
    check(lambda i, w: pyet.take(i, w), lambda i, w: w[i], (idx, W), (idx, tW))
    G = data.draw(operands(ishape + (cols,), dtype))

    def take_grad_ref(i, g):
        out = np.zeros((rows, cols), g.dtype)
        np.add.at(out, i, g)
        return out

    check(lambda i, g: pyet.take_grad(i, g, rows), take_grad_ref, (idx, G),
          (idx, pyet.asarray(G)), "close" if dtype in FLOATS else "exact")
    col_idx = rng.integers(-cols, cols, size=rows)
    check(pyet.choose_row_element, lambda m, i: m[np.arange(rows), i], (W, col_idx),
          (tW, col_idx))
    check(lambda i: pyet.one_hot(i, cols, dtype), lambda i: np.eye(cols, dtype=dtype)[i],
          (idx,))
    m = data.draw(operands((rows,), data.draw(st.sampled_from(DTYPES))))
    check(pyet.mask, lambda mm, x: x * mm[:, None], (m, W), (pyet.asarray(m), tW))


# ---------------------------------------------------------------- spatial


def _np_pool(x, ky, kx, sy, sx, op):
    H, W = x.shape[-2:]
    ph = min(H - ky + sy - 1, H - 1) // sy + 1
    pw = min(W - kx + sx - 1, W - 1) // sx + 1
    out = np.empty(x.shape[:-2] + (ph, pw), x.dtype)
    for i in range(ph):
        for j in range(pw):
            win = x[..., i * sy:i * sy + ky, j * sx:j * sx + kx]
            if op == "max":
                out[..., i, j] = np.max(win, axis=(-2, -1))
            else:
                s = np.sum(win, axis=(-2, -1), dtype=x.dtype)
                out[..., i, j] = s / (ky * kx) if op == "avg" else s
    return out


@FUZZ
@given(data=st.data(), dtype=st.sampled_from(NUMERIC),
       shape=shapes(min_dims=2, max_dims=4, min_side=1, max_side=6),
       op=st.sampled_from(["max", "sum", "avg"]))
def test_pool(data, dtype, shape, op):
    if op == "avg" and dtype not in FLOATS:
        op = "sum"
    a = data.draw(operands(shape, dtype, -5, 5, specials=op == "max"))
    H, W = shape[-2:]
    ky, kx = data.draw(st.integers(1, H)), data.draw(st.integers(1, W))
    sy, sx = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    check(lambda e: pyet.pool(e, ky, kx, sy, sx, op), lambda x: _np_pool(x, ky, kx, sy, sx, op),
          (a,), (pyet.asarray(a),), "exact" if op == "max" or dtype not in FLOATS else "close",
          rtol=1e-5 if dtype == "float32" else 1e-12)


def _np_im2col(img, ky, kx, stride, dilate):
    *lead, C, H, W = img.shape
    x = img.reshape((-1, C, H, W))
    oh = (H - (dilate * (ky - 1) + 1)) // stride + 1
    ow = (W - (dilate * (kx - 1) + 1)) // stride + 1
    cols = np.empty((C, ky, kx, x.shape[0], oh, ow), img.dtype)
    for py in range(ky):
        for px in range(kx):
            cols[:, py, px] = x[:, :, py * dilate:py * dilate + stride * (oh - 1) + 1:stride,
                                px * dilate:px * dilate + stride * (ow - 1) + 1:stride
                                ].transpose(1, 0, 2, 3)
    return cols.reshape(C * ky * kx, -1)


@FUZZ
@given(data=st.data(), dtype=st.sampled_from(DTYPES),
       shape=shapes(min_dims=3, max_dims=4, min_side=1, max_side=6))
def test_unpack_patch2col(data, dtype, shape):
    a = data.draw(operands(shape, dtype))
    H, W = shape[-2:]
    stride, dilate = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 2))
    ky = data.draw(st.integers(1, max(1, (H - 1) // dilate + 1)))
    kx = data.draw(st.integers(1, max(1, (W - 1) // dilate + 1)))
    check(lambda e: pyet.unpack_patch2col(e, ky, kx, stride, dilate),
          lambda x: _np_im2col(x, ky, kx, stride, dilate), (a,), (pyet.asarray(a),))


# ---------------------------------------------------------------- destinations and sentinels

TREES = {
    "a*b+c": (lambda a, b: a * b + 1, lambda a, b: a * b + 1),
    "exp": (lambda a, b: pyet.exp(a) - b, lambda a, b: np.exp(a) - b),
    "where": (lambda a, b: pyet.where(a > b, a, b), lambda a, b: np.where(a > b, a, b)),
    "sum": (lambda a, b: pyet.sum(a, axis=-1, keepdims=True) + b,
            lambda a, b: np.sum(a, axis=-1, keepdims=True) + b),
    "transpose": (lambda a, b: pyet.transpose(a) + pyet.transpose(b),
                  lambda a, b: np.transpose(a) + np.transpose(b)),
    "copy": (lambda a, b: a, lambda a, b: a),
    # trees whose root writes into the destination its own way (products, joins, borders)
    "dot": (lambda a, b: pyet.dot(a, pyet.transpose(a)), lambda a, b: _np_dot_t(a)),
    "concatenate": (lambda a, b: pyet.concatenate([a, a * 2], axis=0),
                    lambda a, b: np.concatenate([a, a * 2], axis=0)),
    "stack": (lambda a, b: pyet.stack([a, b + a], axis=-1), lambda a, b: np.stack([a, b + a], -1)),
    "pad": (lambda a, b: pyet.pad(a, ((1, 0), (2, 1)), 7), lambda a, b: _np_pad(a)),
    "softmax": (lambda a, b: pyet.softmax(a, -1), lambda a, b: _np_softmax_nobool(a)),
    "pool": (lambda a, b: pyet.pool(a, 2, 1, 1, 1, "max"),
             lambda a, b: _np_pool(_numeric_2d(a), 2, 1, 1, 1, "max")),
}
EXACT_TREES = ("a*b+c", "where", "transpose", "copy", "concatenate", "stack", "pad", "pool")


def _np_dot_t(a):
    if a.ndim != 2:
        raise ValueError("2-D only here")
    return np.dot(a, a.T)


def _np_pad(a):
    return np.pad(a, ((0, 0),) * (a.ndim - 2) + ((1, 0), (2, 1)), constant_values=7)


def _np_softmax_nobool(a):
    if a.dtype == np.bool_ or a.ndim == 0:  # pyet refuses both, as documented
        raise TypeError("softmax of bool or 0-d")
    return _np_softmax(a, -1, False)


def _numeric_2d(a):
    if a.dtype == np.bool_ or a.ndim < 2 or a.shape[-2] < 2 or a.shape[-1] < 1:
        raise TypeError("pool needs numbers and a 2 x 1 window")
    return a


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_into_odd_byte_strided_destination(fn):
    a = np.array([[2.0], [1.0]])
    buf = np.full(48, SENTINEL, np.uint8)
    dst = np.ndarray((2, 1), np.float64, buf, 16, (9, 8))  # rows 9 bytes apart
    pyet.evaluate(getattr(pyet, fn)(a, -1), out=dst)
    assert_sentinels_intact(buf, dst)
    np.testing.assert_array_equal(dst, _np_softmax(a, -1, fn == "log_softmax"))


@FUZZ
@given(data=st.data(), tree=st.sampled_from(sorted(TREES)), shape=shapes(max_side=4),
       dtype=st.sampled_from(DTYPES), dst_dtype=st.sampled_from(DTYPES),
       how=st.sampled_from(["out", "setitem", "iadd"]))
def test_destinations_keep_sentinels(data, tree, shape, dtype, dst_dtype, how):
    pyet_fn, np_fn = TREES[tree]
    a = data.draw(operands(shape, dtype, -3, 3))
    b = data.draw(operands(broadcastable(data.draw, shape), dtype, -3, 3))
    ref, err = numpy_result(np_fn, a, b)
    if ref is None:
        return  # not a tree NumPy computes (bool - bool...): nothing to write
    buf, dst = data.draw(destinations(ref.shape, dst_dtype))
    expected = np.empty(dst.shape, dst.dtype)
    init = values(np.random.default_rng(0), dst_dtype, dst.shape, -3, 3)
    dst[...] = init
    expected[...] = init
    before = buf.copy()
    e = pyet_fn(pyet.asarray(a), pyet.asarray(b))
    try:
        with np.errstate(all="ignore"):
            if how == "iadd":
                np.add(expected, ref, out=expected, casting="same_kind")
            else:
                np.copyto(expected, ref, casting="same_kind")
    except (TypeError, ValueError):  # NumPy's casting errors are TypeErrors
        with pytest.raises(ERRORS):
            if how == "out":
                pyet.evaluate(e, out=dst)
            elif how == "setitem":
                pyet.asarray(dst)[...] = e
            else:
                t = pyet.asarray(dst)
                t += e
        assert (buf == before).all(), "a refused assignment wrote"
        return
    if how == "out":
        assert pyet.evaluate(e, out=dst) is dst
    elif how == "setitem":
        pyet.asarray(dst)[...] = e
    else:
        t = pyet.asarray(dst)
        t += e
    assert_sentinels_intact(buf, dst)
    # exp is within 2 ulp of NumPy's in the dtype it computes in (ref's, before the cast)
    rtol = 4 * float(np.finfo(ref.dtype).eps) if ref.dtype.kind == "f" else None
    assert_matches(dst, expected, "exact" if tree in EXACT_TREES else "close", rtol=rtol)


@FUZZ
@given(data=st.data(), shape=shapes(min_dims=1), dtype=st.sampled_from(NUMERIC))
def test_destination_is_an_operand_view(data, shape, dtype):
    """dst overlapping its own operand (t[...] = t[::-1] + 1): NumPy's answer, sentinels kept."""
    buf, dst = data.draw(destinations(shape, dtype))
    dst[...] = values(np.random.default_rng(1), dtype, shape)
    ref = dst[::-1] + 1 if dst.ndim else dst + 1
    t = pyet.asarray(dst)
    t[...] = (t[::-1] if dst.ndim else t) + 1
    assert_sentinels_intact(buf, dst)
    assert_matches(dst, ref)
