"""Input classes the other random tests rarely draw: pyet against NumPy (hypothesis).

- 0-d operands (Tensors, NumPy 0-d arrays, 0-d views into packed fields) at every depth of a
  tree over large operands (1500-5000 elements: several blocks; now and then 140000, so two
  threads split the pass), under transcendental functions, casts, where, comparisons,
  reductions, softmax and products;
- packed structured fields (byte steps 5, 9, 13, 25: no multiple of the itemsize), negative
  and zero steps, read-only, empty and size-1 dimensions, Fortran and transposed layouts, as
  operands and as destinations, with the views (flip, transpose, reshape, take, concatenate,
  stack, pad), clip, where and F;
- destinations overlapping their operands (partial overlaps, reversed views, views shifted by
  part of an item) for ``dst[...] = e``, ``+=``, ``*=`` and ``pyet.evaluate(e, out=dst)``.

Each case runs on one or two threads. Operands must never be written; every byte around a
destination (and between its items) must keep its sentinel. Exact operations must give
NumPy's bits; transcendental ones, sums and products NumPy's values within a tolerance.
"""

import contextlib
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_fuzz import lay_out as fuzz_lay_out

import pyet

DTYPES = ["bool", "int32", "int64", "float32", "float64"]
SUPPORTED = {np.dtype(d) for d in DTYPES}
SENTINEL = 0xC3
# PYET_EDGE_EXAMPLES=10000 runs a long search (the default keeps the file fast)
EXAMPLES = int(os.environ.get("PYET_EDGE_EXAMPLES", "40"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

EXACT_UNARY = ["negative", "absolute", "square", "floor", "sign", "invert", "isnan", "sqrt"]
EXACT_BINARY = ["add", "subtract", "multiply", "floor_divide", "remainder", "maximum",
                "minimum", "less", "greater_equal", "not_equal", "bitwise_and", "bitwise_xor",
                "true_divide", "copysign"]
TRANSCENDENTAL = ["exp", "log", "sin", "cos", "tanh", "arctan", "log1p", "expm1", "sigmoid",
                  "log2", "cbrt", "erf"]
SMOOTH_BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]
CASTS = ["bool", "int32", "int64", "float32", "float64"]


_nothing = contextlib.nullcontext


class NumpyRejects(Exception):
    def __init__(self, cls):
        super().__init__(str(cls))
        self.cls = cls


def sigmoid_np(x):
    return 1 / (1 + np.exp(-x))


def softmax_np(x, axis, log=False):
    """NumPy's formula; log: x - max - log(sum(exp(x - max))), finite where softmax
    underflows (as pyet's log_softmax)."""
    x = np.asarray(x)
    errors = ()
    if x.dtype == np.bool_:
        errors += (TypeError,)
    if x.ndim == 0 or (x.size == 0 and x.shape[axis] == 0 and np.prod(
            np.delete(x.shape, axis))):  # (pyet's choice: empty rows give an empty result)
        errors += (ValueError,)
    if errors:  # which pyet reports first is not specified
        raise NumpyRejects(errors)
    if x.size == 0:
        return np.exp(x)
    d = x - np.max(x, axis=axis, keepdims=True)
    if log:
        return d - np.log(np.sum(np.exp(d), axis=axis, keepdims=True))
    e = np.exp(d)
    return e / np.sum(e, axis=axis, keepdims=True)


def is_pyet(x):
    return isinstance(x, pyet.Expr)


MAX_SIZE = 400_000


def call(ns, name, *args):
    """NumPy's function `name` (ns is np, or pyet with no pyet argument) or pyet's."""
    if len(args) > 1:
        try:
            size = np.prod(np.broadcast_shapes(*[np.shape(a) for a in args]))
        except ValueError:
            size = 0  # the function raises it
        assume(size <= MAX_SIZE)  # (n,) against (n, 1): an outer product of the operands
    if ns is np and name == "sigmoid":
        return sigmoid_np(*args)
    if ns is np and name == "erf":
        from scipy.special import erf
        if np.asarray(args[0]).dtype == np.bool_:
            raise TypeError("NumPy's float loops take bool as float16")
        return erf(*args)
    return getattr(ns, name)(*args)


# ---------------------------------------------------------------- values and layouts


def values(rng, dtype, shape, specials):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind == "i":
        return np.asarray(rng.integers(-20, 21, size=shape)).astype(dtype)
    v = np.asarray(rng.uniform(-4, 4, size=shape))
    if specials == 1:
        v = np.round(v * 2) / 2  # ties, zeros, equal values
    elif specials == 2 and v.size:
        flat = v.reshape(-1)
        for s in (np.nan, np.inf, -np.inf, -0.0, 0.0):
            flat[rng.integers(flat.size)] = s
    return np.asarray(v.astype(dtype))


def packed_field(vals, pad):
    """vals as the field 'x' of a packed structured array: byte steps itemsize + pad."""
    dt = np.dtype([("a", "i1", (pad,)), ("x", vals.dtype)], align=False)
    rec = np.zeros(vals.shape, dt)
    rec["a"] = 0x33
    rec["x"] = vals
    return rec["x"]


LAYOUTS = ["contig", "contig", "fortran", "transposed", "reversed", "steps", "field", "zero",
           "readonly", "offset0d"]


def lay_out(vals, layout, rng):
    """An ndarray equal to vals, laid out in memory as asked (test_fuzz's layouts, and
    reversed, packed with 1/5/17 pad bytes, zero steps, read-only, inside a buffer)."""
    if layout in ("contig", "fortran", "transposed", "steps"):
        return fuzz_lay_out(vals, layout, rng)
    if layout == "reversed":
        return vals[(slice(None, None, -1),) * vals.ndim].copy()[
            (slice(None, None, -1),) * vals.ndim]
    if layout == "field":
        return packed_field(vals, int(rng.choice([1, 5, 17])))
    if layout == "zero":  # zero steps: one value along each axis of size > 1 drawn so
        if vals.size == 0:
            return packed_field(vals, 3)
        ax = int(rng.integers(vals.ndim))
        one = np.take(vals, [0], axis=ax)
        return np.broadcast_to(one, vals.shape)
    if layout == "readonly":
        a = vals.copy()
        a.flags.writeable = False
        return a
    # offset0d: a view into the middle of a larger buffer
    big = np.zeros((3,) + vals.shape, vals.dtype)
    big[1] = vals
    return big[1]


@st.composite
def operand(draw, shape, dtype, layouts=LAYOUTS):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    vals = values(rng, dtype, shape, draw(st.integers(0, 3)))
    return lay_out(vals, draw(st.sampled_from(layouts)), rng)


# ---------------------------------------------------------------- destinations with sentinels


@st.composite
def dest_layout(draw, shape, dtype):
    """(byte strides, span) of a destination: steps of whole items, reversed, or packed."""
    item = np.dtype(dtype).itemsize
    kind = draw(st.sampled_from(["contig", "fortran", "reversed", "packed", "steps"]))
    nd = len(shape)
    order = list(range(nd))[::-1] if kind == "fortran" else list(range(nd))
    if kind in ("packed", "steps") and nd > 1 and draw(st.booleans()):
        order = draw(st.permutations(range(nd)))
    step = {"contig": item, "fortran": item, "reversed": item,
            "packed": item + draw(st.sampled_from([1, 5, 17])),
            "steps": item * draw(st.sampled_from([2, 3]))}[kind]
    strides = [0] * nd
    acc = step
    for ax in reversed(order):  # the last of `order` varies fastest
        strides[ax] = acc
        acc *= max(shape[ax], 1)
    if kind == "reversed" or (kind in ("packed", "steps") and draw(st.booleans())):
        strides = [-s for s in strides]
    return strides


def guarded(shape, dtype, strides):
    """(raw bytes, destination view, mask of the destination's bytes) with sentinels
    around and between the items."""
    item = np.dtype(dtype).itemsize
    lo = sum(min(0, s * (n - 1)) for s, n in zip(strides, shape, strict=True)) if all(
        shape) else 0
    hi = sum(max(0, s * (n - 1)) for s, n in zip(strides, shape, strict=True)) if all(
        shape) else 0
    pad = 24
    raw = np.full(hi - lo + item + 2 * pad, SENTINEL, np.uint8)
    offset = pad - lo
    dst = np.ndarray(shape, dtype, buffer=raw, offset=offset, strides=strides)
    covered = np.zeros(raw.size, bool)
    if not shape:
        covered[offset:offset + item] = True
    elif dst.size:
        idx = np.indices(shape).reshape(len(shape), -1)
        starts = offset + (np.asarray(strides)[:, None] * idx).sum(0)
        for b in range(item):
            covered[starts + b] = True
    return raw, dst, covered


def assert_sentinels(raw, covered):
    bad = np.flatnonzero((raw != SENTINEL) & ~covered)
    assert bad.size == 0, f"bytes written outside the destination at {bad[:10]}"


# ---------------------------------------------------------------- comparison


def compare(got, ref, approx, scale, f32):
    got = np.asarray(got)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    if approx and ref.dtype.kind == "f":
        rtol = 5e-4 if (f32 or ref.dtype == np.float32) else 1e-9
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * min(scale, 1e300),
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(got, ref)


def run_and_check(build, leaves_np, leaves_pyet, how, threads, draw_dst):
    """Build with NumPy, then with pyet; evaluate the pyet tree `how`; compare."""
    stats = {"scale": 1.0, "f32": False, "approx": False}
    copies = [np.array(a, copy=True) for a in leaves_np]
    try:
        with np.errstate(all="ignore"):
            ref = np.asarray(build(np, leaves_np, stats))
        if ref.dtype not in SUPPORTED:
            raise NumpyRejects(TypeError)
        rejected = None
    except NumpyRejects as e:
        rejected = e.cls
    except (TypeError, ValueError) as e:
        rejected = TypeError if isinstance(e, TypeError) else ValueError
    before = pyet.get_num_threads()
    pyet.set_num_threads(threads)
    try:
        if rejected is not None:
            with pytest.raises(rejected):
                with np.errstate(all="ignore"):
                    e = build(pyet, leaves_pyet, None)
                    pyet.evaluate(e) if is_pyet(e) else None
            return
        with np.errstate(all="ignore"):
            e = build(pyet, leaves_pyet, None)
            if not is_pyet(e):
                got = np.asarray(e)
            elif how == "evaluate":
                got = np.asarray(pyet.evaluate(e))
            else:
                assert e.shape == ref.shape and e.dtype == ref.dtype, (e.shape, e.dtype,
                                                                       ref.shape, ref.dtype)
                strides = draw_dst(ref.shape, ref.dtype)
                raw, dst, covered = guarded(ref.shape, ref.dtype, strides)
                if how in ("+=", "*="):  # onto values already there
                    ufunc = np.add if how == "+=" else np.multiply
                    dst[...] = init = values(np.random.default_rng(dst.size), ref.dtype,
                                             ref.shape, 1)
                    ref = ufunc(init, ref)
                    stats["scale"] = max(stats["scale"], 4.0) * (4 if how == "*=" else 1)
                    t = pyet.asarray(dst)
                    if how == "+=":
                        t += e
                    else:
                        t *= e
                elif how == "out":
                    assert pyet.evaluate(e, out=dst) is dst
                else:
                    pyet.asarray(dst)[...] = e
                assert_sentinels(raw, covered)
                got = dst
    finally:
        pyet.set_num_threads(before)
    compare(got, ref, stats["approx"], stats["scale"], stats["f32"])
    for a, c in zip(leaves_np, copies, strict=True):  # operands are never written
        np.testing.assert_array_equal(a, c)


def track(r, stats, approx=False, summed=None):
    """Record a NumPy intermediate: reject dtypes pyet lacks, track magnitudes."""
    r = np.asarray(r)
    if r.dtype not in SUPPORTED:
        raise NumpyRejects(TypeError)
    stats["f32"] |= r.dtype == np.float32
    stats["approx"] |= approx
    for v in (r, summed):
        if v is not None and v.dtype.kind == "f" and v.size:
            fin = np.abs(v[np.isfinite(v)])
            if fin.size:
                stats["scale"] = max(stats["scale"], float(fin.max()))
    return r


# ---------------------------------------------------------------- 1. 0-d operands in large trees


def zd_tree(depth, n_big, n_zd):
    big = st.tuples(st.just("big"), st.integers(0, n_big - 1))
    zd = st.tuples(st.just("zd"), st.integers(0, n_zd - 1))
    leaf = st.one_of(big, zd, zd)
    if depth == 0:
        return leaf
    sub = zd_tree(depth - 1, n_big, n_zd)
    return st.one_of(
        leaf,
        st.tuples(st.just("un"), st.sampled_from(EXACT_UNARY), sub),
        st.tuples(st.just("trans"), st.sampled_from(TRANSCENDENTAL), sub),
        st.tuples(st.just("bin"), st.sampled_from(EXACT_BINARY), sub, sub),
        st.tuples(st.just("cast"), st.sampled_from(CASTS), sub),
        st.tuples(st.just("where"), sub, sub, sub, sub),
        st.tuples(st.just("clip"), sub, st.sampled_from([(-1, 2), (0.5, 1.5), (-3, -3)])),
        st.tuples(st.just("red"), st.sampled_from(["sum", "max", "argmax", "mean", "min"]),
                  st.sampled_from([None, 0, 1, -1]), st.booleans(), sub),
        st.tuples(st.just("softmax"), st.sampled_from([0, -1]), sub),
        st.tuples(st.just("matmul"), st.booleans(), sub),
    )


JUMPS = {"floor", "sign", "invert", "isnan", "sqrt", "floor_divide", "remainder", "less",
         "greater_equal", "not_equal", "bitwise_and", "bitwise_xor", "copysign", "true_divide",
         "argmax", "where", "int32", "int64", "bool"}


def inexact(tree):
    """Whether NumPy's value of tree may differ from pyet's by roundings (transcendental
    functions, sums, products): an op that jumps (a compare, a cast to an integer)
    cannot be compared on it."""
    kind = tree[0]
    if kind in ("big", "zd"):
        return False
    if kind in ("trans", "softmax", "matmul") or (kind == "red" and tree[1] in ("sum", "mean")):
        return True
    return any(inexact(t) for t in tree[1:] if isinstance(t, tuple) and t and isinstance(
        t[0], str) and t[0] in KINDS)


KINDS = {"big", "zd", "un", "trans", "bin", "cast", "where", "clip", "red", "softmax", "matmul"}


def jumps(tree):
    kind = tree[0]
    return kind == "where" or (kind in ("un", "bin", "cast") and tree[1] in JUMPS) or (
        kind == "red" and tree[1] == "argmax")


def zd_build(tree, ns, leaves, stats):
    """Build tree with ns (np or pyet) over leaves = (bigs, zero-ds, square matrix)."""
    bigs, zds, mat = leaves
    kind = tree[0]
    if kind == "big":
        return bigs[tree[1]]
    if kind == "zd":
        return zds[tree[1]]
    np_side = stats is not None
    if np_side:
        assume(not (jumps(tree) and inexact(tree)))

    def sub(t):
        return zd_build(t, ns, leaves, stats)

    def finish(fn, approx=False, summed=None):
        if not np_side:
            return fn()
        try:
            r = fn()
        except (TypeError, ValueError) as e:
            raise NumpyRejects(type(e) if type(e) in (TypeError, ValueError) else
                               TypeError) from e
        return track(r, stats, approx, summed)

    if kind == "un":
        a = sub(tree[2])
        return finish(lambda: call(ns, tree[1], a))
    if kind == "trans":
        a = sub(tree[2])
        if np_side and np.asarray(a).dtype.kind not in "f":
            # integer arguments: NumPy computes float64 (int32: float64), as pyet
            pass
        return finish(lambda: call(ns, tree[1], a), approx=True)
    if kind == "bin":
        a, b = sub(tree[2]), sub(tree[3])
        approx = tree[1] == "true_divide"
        return finish(lambda: call(ns, tree[1], a, b), approx=approx)
    if kind == "cast":
        a = sub(tree[2])
        if (a.dtype if is_pyet(a) else np.asarray(a).dtype).kind == "f" and tree[1] in (
                "int32", "int64"):
            # NumPy's float -> int cast of NaN/inf/huge values is undefined: keep them out
            ok = call(ns, "less", call(ns, "absolute", a), 1e9)
            a = finish(lambda: call(ns, "where", ok, a, 0))
        if np_side:
            return finish(lambda: np.asarray(a).astype(tree[1]))
        if not is_pyet(a):
            return np.asarray(a).astype(tree[1])
        return a.astype(tree[1])
    if kind == "where":
        c, d = sub(tree[1]), sub(tree[2])
        x, y = sub(tree[3]), sub(tree[4])
        cond = finish(lambda: call(ns, "less", c, d))
        return finish(lambda: call(ns, "where", cond, x, y))
    if kind == "clip":
        a = sub(tree[1])
        lo, hi = tree[2]
        return finish(lambda: call(ns, "clip", a, lo, hi))
    if kind == "red":
        name, axis, keep = tree[1], tree[2], tree[3]
        a = sub(tree[4])
        nd = np.ndim(a)
        if axis is not None and nd == 0:
            axis = None
        if axis is not None and axis >= nd:
            axis = -1
        if name == "argmax":
            keep = keep and axis is not None
        approx = name in ("sum", "mean")
        summed = None
        if np_side and approx and np.asarray(a).dtype.kind == "f":
            summed = np.sum(np.abs(np.asarray(a, np.float64)), axis=axis)
        if np_side:
            if np.asarray(a).size == 0 and name in ("max", "min", "argmax"):
                raise NumpyRejects(ValueError)
            return finish(lambda: getattr(np, name)(a, axis=axis, keepdims=keep), approx,
                          summed)
        return getattr(pyet, name)(a, axis=axis, keepdims=keep)
    if kind == "softmax":
        a = sub(tree[2])
        if np_side:
            return finish(lambda: softmax_np(a, tree[1]), approx=True)
        return pyet.softmax(a, axis=tree[1])
    if kind == "matmul":
        a = sub(tree[2])
        if (a.dtype if is_pyet(a) else np.asarray(a).dtype).kind == "f":
            # BLAS skips the zeros of B (NumPy's inf @ [[0.]] is 0, pyet's NaN): finite only
            ok = call(ns, "less", call(ns, "absolute", a), 1e30)
            a = finish(lambda: call(ns, "where", ok, a, 0))
        if np_side:
            if np.ndim(a) == 0:
                raise NumpyRejects(ValueError)  # pyet's products take 1-D and 2-D operands
            if np.shape(a)[-1] != mat.shape[0]:
                raise NumpyRejects(ValueError)
            summed = np.abs(np.asarray(a, np.float64)) @ np.abs(mat).astype(np.float64)
            return finish(lambda: (a @ mat) if tree[1] else np.dot(a, mat), True, summed)
        return (a @ pyet.asarray(mat)) if tree[1] else pyet.dot(a, mat)
    raise AssertionError(kind)


@st.composite
def zd_case(draw):
    cols = draw(st.sampled_from([1, 3, 8, 64, 500]))
    if draw(st.integers(0, 11)) == 0:
        total = 140_000  # two threads split this pass
    else:
        total = draw(st.integers(1500, 5000))
    rows = max(1, total // cols)
    full = (rows, cols)
    shapes = [full, (rows, 1), (cols,), full]
    if draw(st.booleans()):
        shapes = [(rows * cols,), (rows * cols,)]
    dtype = draw(st.sampled_from(["float32", "float64", "float64", "float32", "int32",
                                  "int64", "bool"]))
    bigs = [draw(operand(s, draw(st.sampled_from([dtype, dtype, "float64", "int32"])),
                         LAYOUTS[:-1])) for s in shapes[:draw(st.integers(1, len(shapes)))]]
    n_zd = draw(st.integers(1, 3))
    zds = []
    for _ in range(n_zd):
        zdt = draw(st.sampled_from([dtype, dtype, "float32", "float64", "int64", "bool"]))
        a = draw(operand((), zdt, ["contig", "field", "readonly", "offset0d"]))
        if zdt == "int64" and draw(st.booleans()):
            a = a.astype("int32")
        zds.append(a)
    side = bigs[0].shape[-1] if bigs[0].ndim == 2 else cols
    mat = draw(operand((side, side), draw(st.sampled_from(["float32", "float64"])),
                       LAYOUTS[:-1]))
    tree = draw(zd_tree(3, len(bigs), n_zd))
    wrap = [draw(st.sampled_from(["tensor", "tensor", "ndarray"])) for _ in zds]
    return bigs, zds, wrap, mat, tree


@SETTINGS
@given(case=zd_case(), how=st.sampled_from(["evaluate", "out", "setitem", "+=", "*="]),
       threads=st.sampled_from([1, 2]), data=st.data())
def test_zero_d_operands_in_large_trees(case, how, threads, data):
    bigs, zds, wrap, mat, tree = case
    zd_pyet = [pyet.asarray(z) if w == "tensor" else z for z, w in zip(zds, wrap, strict=True)]
    leaves_np = [*bigs, *zds, mat]
    leaves_pyet = [pyet.asarray(b) for b in bigs] + zd_pyet + [pyet.asarray(mat)]
    nb, nz = len(bigs), len(zds)

    def build(ns, leaves, stats):
        return zd_build(tree, ns, (leaves[:nb], leaves[nb:nb + nz], leaves[-1]), stats)

    run_and_check(build, leaves_np, leaves_pyet, how, threads,
                  lambda shape, dtype: data.draw(dest_layout(shape, dtype)))


# ---------------------------------------------------------------- 2. layouts, views and functions


VIEW_OPS = ["flip", "transpose", "reshape", "take", "concatenate", "stack", "pad", "clip",
            "where", "F", "astype", "getitem", "sum", "argmax", "max", "mean", "softmax",
            "log_softmax", "dot", "batch_dot", "broadcast_to", "exp", "add", "compare"]


@st.composite
def layout_case(draw):
    nd = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from([0, 1, 1, 2, 3, 5, 7, 40])) for _ in range(nd))
    if draw(st.integers(0, 3)) == 0:
        shape = shape[:-1] + (draw(st.sampled_from([600, 1500])),)
    dtype = draw(st.sampled_from(DTYPES))
    a = draw(operand(shape, dtype, LAYOUTS[:-1]))
    b = draw(operand(shape, draw(st.sampled_from([dtype, "float64", "int32"])), LAYOUTS[:-1]))
    z = draw(operand((), draw(st.sampled_from([dtype, "float32"])),
                     ["contig", "field", "readonly", "offset0d"]))
    ops = draw(st.lists(st.sampled_from(VIEW_OPS), min_size=1, max_size=3))
    params = draw(st.lists(st.integers(0, 2**16), min_size=6, max_size=6))
    return a, b, z, ops, params


def apply_view(ns, name, x, b, z, p, stats):
    """One step of the chain: view/function `name` of x (b: a second operand of x's shape
    where it fits, z: a 0-d operand)."""
    np_side = ns is np
    nd = np.ndim(x)
    shape = np.shape(x)
    ax = p[0] % nd if nd else 0
    lib = np if (np_side or not is_pyet(x)) else pyet

    def fin(r, approx=False, summed=None):
        return track(r, stats, approx, summed) if np_side else r

    if nd == 0 and name not in ("clip", "where", "astype", "exp", "add", "compare", "F"):
        name = "add"
    if name == "flip":
        return fin(lib.flip(x, ax))
    if name == "transpose":
        perm = list(np.random.default_rng(p[1]).permutation(nd))
        return fin(lib.transpose(x, perm))
    if name == "reshape":
        new = (-1,) if nd > 1 or p[1] % 2 else (1, -1) if np.size(x) else (0,)
        return fin(lib.reshape(x, new))
    if name == "take":
        if nd != 2 or shape[0] == 0:
            return fin(lib.flip(x, ax))
        rng = np.random.default_rng(p[1])
        idx = rng.integers(-shape[0], shape[0], size=int(rng.integers(0, 9)))
        return fin(np.take(x, idx, axis=0) if lib is np else pyet.take(idx, x))
    if name in ("concatenate", "stack"):
        other = b if np.shape(b) == shape else x
        seq = [x, other, x] if p[1] % 2 else [other, x]
        return fin(getattr(lib, name)(seq, axis=ax))
    if name == "pad":
        if nd < 2:
            return fin(lib.flip(x, ax))
        pw = ((p[1] % 3, p[2] % 2), (p[3] % 2, p[4] % 3))
        if lib is np:
            full = [(0, 0)] * (nd - 2) + list(pw)
            return fin(np.pad(x, full, constant_values=0))
        return pyet.pad(x, pw, value=0)
    if name == "clip":
        lo, hi = [(-1, 2), (z, 3), (0, z), (-0.5, 0.5)][p[1] % 4]
        if np_side:
            try:
                return fin(np.clip(x, lo, hi))
            except (TypeError, ValueError) as e:
                raise NumpyRejects(type(e)) from e
        return lib.clip(x, lo, hi) if (is_pyet(x) or is_pyet(lo) or is_pyet(hi)) else np.clip(
            x, lo, hi)
    if name == "where":
        y = b if np.shape(b) == shape else z
        cond = (p[1] % 2 == 0)
        if np_side:
            c = np.asarray(x) > np.asarray(z) if cond else np.asarray(y) != 0
            try:
                return fin(np.where(c, x, y))
            except (TypeError, ValueError) as e:
                raise NumpyRejects(type(e)) from e
        if not (is_pyet(x) or is_pyet(y) or is_pyet(z)):
            c = np.asarray(x) > np.asarray(z) if cond else np.asarray(y) != 0
            return np.where(c, x, y)
        c = call(pyet, "greater", x, z) if cond else call(pyet, "not_equal", y, 0)
        return pyet.where(c, x, y)
    if name == "F":
        if np_side:
            return fin(np.negative(x) if np.asarray(x).dtype != np.bool_ else np.logical_not(x))
        if not is_pyet(x):
            return np.negative(x) if np.asarray(x).dtype != np.bool_ else np.logical_not(x)
        fn = np.logical_not if x.dtype == np.bool_ else np.negative
        if p[1] % 2:
            return pyet.F(fn, x)
        return pyet.F(lambda v: fn(v), x)
    if name == "astype":
        to = CASTS[p[1] % len(CASTS)]
        if np.asarray(x).dtype.kind == "f" and to in ("int32", "int64"):
            to = "float32"
        if np_side:
            return fin(np.asarray(x).astype(to))
        return x.astype(to) if is_pyet(x) else np.asarray(x).astype(to)
    if name == "getitem":
        key = tuple(slice(None, None, [-1, 2, -3, 1][(p[1] >> (2 * i)) % 4]) for i in range(nd))
        return fin(x[key])
    if name in ("sum", "argmax", "max", "mean"):
        axis = None if p[1] % 3 == 0 else ax
        keep = bool(p[2] % 2) and axis is not None
        if np_side:
            if np.size(x) == 0 and name in ("argmax", "max") and (
                    axis is None or shape[axis] == 0):
                raise NumpyRejects(ValueError)
            approx = name in ("sum", "mean")
            summed = (np.sum(np.abs(np.asarray(x, np.float64)), axis=axis)
                      if approx and np.asarray(x).dtype.kind == "f" else None)
            return fin(getattr(np, name)(x, axis=axis, keepdims=keep), approx, summed)
        return getattr(lib, name)(x, axis=axis, keepdims=keep)
    if name in ("softmax", "log_softmax"):
        if np_side:
            return fin(softmax_np(x, ax, name == "log_softmax"), True)
        return getattr(pyet, name)(x, axis=ax)
    if name in ("dot", "batch_dot"):
        if np.asarray(x).dtype.kind != "f" or nd not in ((3,) if name == "batch_dot" else (1, 2)):
            return fin(lib.flip(x, ax))
        k = shape[-1]
        m = np.asarray(np.random.default_rng(p[1]).uniform(-1, 1, (k, 3)), np.asarray(x).dtype)
        if name == "batch_dot":
            m = np.broadcast_to(m, (1, k, 3)) if p[2] % 2 else np.broadcast_to(
                m, (shape[0], k, 3))
        if np_side:
            summed = np.abs(np.asarray(x, np.float64)) @ np.abs(m)
            return fin(np.matmul(x, m), True, summed)
        if not is_pyet(x):
            return np.matmul(x, m)
        return pyet.dot(x, m) if name == "dot" else pyet.batch_dot(x, pyet.asarray(m))
    if name == "broadcast_to":
        return fin(lib.broadcast_to(x, (2,) + shape))
    if name == "exp":
        if np_side:
            return fin(np.exp(np.clip(x, -50, 50)), True) if np.asarray(
                x).dtype != np.bool_ else fin(np.exp(x), True)
        if np.asarray(x).dtype == np.bool_ if not is_pyet(x) else x.dtype == np.bool_:
            return call(pyet, "exp", x)
        return call(pyet, "exp", call(pyet, "clip", x, -50, 50))
    if name == "add":
        if np_side:
            try:
                return fin(np.add(np.multiply(x, z), b if np.shape(b) == shape else 1))
            except (TypeError, ValueError) as e:
                raise NumpyRejects(type(e)) from e
        return call(pyet, "add", call(pyet, "multiply", x, z), b if np.shape(b) == shape else 1)
    if name == "compare":
        if np_side:
            return fin(np.less_equal(x, z))
        return call(pyet, "less_equal", x, z)
    raise AssertionError(name)


@SETTINGS
@given(case=layout_case(), how=st.sampled_from(["evaluate", "out", "setitem", "+=", "*="]),
       threads=st.sampled_from([1, 2]), ndarray_z=st.booleans(), data=st.data())
def test_layouts_views_and_functions(case, how, threads, ndarray_z, data):
    a, b, z, ops, params = case

    def build(ns, leaves, stats):
        x, bb, zz = leaves
        for i, name in enumerate(ops):
            p = params[i:] + params[:i]
            x = apply_view(ns, name, x, bb, zz, p, stats)
            assume(np.size(x) <= MAX_SIZE)
        return x

    zp = z if ndarray_z else pyet.asarray(z)
    run_and_check(build, [a, b, z], [pyet.asarray(a), pyet.asarray(b), zp], how, threads,
                  lambda shape, dtype: data.draw(dest_layout(shape, dtype)))


# ---------------------------------------------------------------- 3. destinations aliasing operands


@st.composite
def alias_view(draw, nbytes, dtype, shape, shift_bytes):
    """A view of `shape` into a byte buffer of nbytes: random (possibly negative, packed)
    strides; its offset a multiple of the item or shifted by part of one."""
    item = np.dtype(dtype).itemsize
    nd = len(shape)
    order = draw(st.permutations(range(nd))) if nd > 1 else list(range(nd))
    step = item * draw(st.sampled_from([1, 1, 1, 2])) + (
        draw(st.sampled_from([0, 0, 1, 3])) if shift_bytes else 0)
    strides = [0] * nd
    acc = step
    for ax in reversed(order):
        strides[ax] = acc
        acc *= max(shape[ax], 1)
    strides = [s * draw(st.sampled_from([1, 1, -1])) for s in strides]
    lo = sum(min(0, s * (n - 1)) for s, n in zip(strides, shape, strict=True))
    hi = sum(max(0, s * (n - 1)) for s, n in zip(strides, shape, strict=True))
    span = hi - lo + item
    if span > nbytes:  # C order always fits
        strides = [item * int(np.prod(shape[ax + 1:], dtype=np.int64)) for ax in range(nd)]
        lo, span = 0, int(np.prod(shape)) * item
    align = 1 if shift_bytes else item
    start = draw(st.integers(0, (nbytes - span) // align)) * align
    return start - lo, tuple(strides), tuple(shape)


@st.composite
def alias_case(draw):
    dtype = draw(st.sampled_from(["float64", "float32", "int64", "int32"]))
    item = np.dtype(dtype).itemsize
    if draw(st.booleans()):
        shape = (draw(st.sampled_from([700, 1500, 3000, 3000, 3000, 140_000])),)  # two threads
    else:
        shape = (draw(st.integers(1, 40)), draw(st.sampled_from([1, 3, 64, 130])))
    n = int(np.prod(shape))
    nbytes = n * item * draw(st.sampled_from([1, 2, 3])) + draw(st.integers(0, 3)) * item
    shift = draw(st.integers(0, 3)) == 0
    dst = draw(alias_view(nbytes, dtype, shape, shift))
    srcs = [draw(alias_view(nbytes, dtype, draw(st.sampled_from(
        [shape, shape[-1:], (1,) * (len(shape) - 1) + shape[-1:]])), shift))
        for _ in range(draw(st.integers(1, 3)))]
    zd = draw(alias_view(nbytes, dtype, (), shift))
    ops = [draw(st.sampled_from(["add", "subtract", "multiply", "maximum", "where", "exp",
                                 "sin", "sqrt", "sum0", "flip"])) for _ in srcs]
    mode = draw(st.sampled_from(["=", "=", "+=", "*=", "out"]))
    return dtype, nbytes, dst, srcs, zd, ops, mode, draw(st.integers(0, 2**32 - 1))


def alias_rhs(ns, views, zd, ops, stats):
    """views[0] * zd, then each op with the next view (transcendental ones on clipped
    values, a sum over the first axis, a flipped view)."""
    lib = np if ns is np else pyet
    approx = False
    r = call(ns, "multiply", views[0], zd)
    for v, op in zip(views, ops, strict=True):
        if op in ("exp", "sin", "sqrt"):
            approx = True
            r = call(ns, "add", r, call(ns, op, call(ns, "clip", v, -20, 20)))
        elif op == "where":
            r = call(ns, "where", call(ns, "less", v, zd), r, v)
        elif op == "sum0":
            approx = approx or v.dtype.kind == "f"
            r = call(ns, "add", r, lib.sum(v, axis=0, keepdims=v.ndim > 1))
        elif op == "flip":
            r = call(ns, "add", r, lib.flip(v, -1))
        else:
            r = call(ns, op, r, v)
        if stats is not None:
            track(r, stats, approx)
    return r


def on(raw, geometry, dtype, pad):
    offset, strides, shape = geometry
    return np.ndarray(shape, dtype, buffer=raw, offset=pad + offset, strides=strides)


@SETTINGS
@given(case=alias_case(), threads=st.sampled_from([1, 2]))
def test_destination_aliasing_operands(case, threads):
    dtype, nbytes, dst_g, src_gs, zd_g, ops, mode, seed = case
    rng = np.random.default_rng(seed)
    item = np.dtype(dtype).itemsize
    if np.dtype(dtype).kind == "f":
        init = rng.uniform(-3, 3, nbytes // item + 1).astype(dtype)
    else:
        init = rng.integers(-9, 10, nbytes // item + 1).astype(dtype)
    pad = 16
    ref_raw = np.full(nbytes + 2 * pad, SENTINEL, np.uint8)
    ref_raw[pad:pad + nbytes] = init.view(np.uint8)[:nbytes]
    mem_raw = ref_raw.copy()
    stats = {"scale": 1.0, "f32": False, "approx": False}

    with np.errstate(all="ignore"):  # NumPy: the right-hand side is complete before the write
        value = alias_rhs(np, [on(ref_raw, g, dtype, pad) for g in src_gs],
                          on(ref_raw, zd_g, dtype, pad), ops, stats)
        rd = on(ref_raw, dst_g, dtype, pad)
        try:
            if mode in ("=", "out"):
                np.copyto(rd, value, casting="same_kind")
            elif mode == "+=":
                np.add(rd, value, out=rd, casting="same_kind")
            else:
                np.multiply(rd, value, out=rd, casting="same_kind")
            rejected = None
        except (TypeError, ValueError) as e:  # broadcasting or casting into dst
            rejected = TypeError if isinstance(e, TypeError) else ValueError
            ref_raw[:] = mem_raw
    before = pyet.get_num_threads()
    pyet.set_num_threads(threads)
    try:
        with np.errstate(all="ignore"):
            e = alias_rhs(pyet, [pyet.asarray(on(mem_raw, g, dtype, pad)) for g in src_gs],
                          pyet.asarray(on(mem_raw, zd_g, dtype, pad)), ops, None)
            dnp = on(mem_raw, dst_g, dtype, pad)
            pd = pyet.asarray(dnp)
            with pytest.raises(rejected) if rejected else _nothing():
                if mode == "=":
                    pd[...] = e
                elif mode == "out":
                    assert pyet.evaluate(e, out=dnp) is dnp
                elif mode == "+=":
                    pd += e
                else:
                    pd *= e
    finally:
        pyet.set_num_threads(before)
    compare(on(mem_raw, dst_g, dtype, pad), on(ref_raw, dst_g, dtype, pad), stats["approx"],
            stats["scale"] * 4, stats["f32"])
    # every byte outside the destination is as NumPy left it (operands not written)
    covered = np.zeros(mem_raw.size, np.uint8)
    on(covered, dst_g, np.dtype(f"V{item}"), pad)[...] = np.void(b"\x01" * item)
    outside = covered == 0
    np.testing.assert_array_equal(mem_raw[outside], ref_raw[outside])
