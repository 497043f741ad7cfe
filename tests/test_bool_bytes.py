"""Bool arrays whose bytes are not 0 or 1 (an array of other bytes viewed as bool).

NumPy reads any byte but 0 as True and its loops write 0 or 1; pyet must do the same on
every path: the op table's bool loops, comparisons, casts (astype and mixed-dtype
arithmetic), fused trees, every reduction way (row folds, short-axis slices, NumPy's loop,
the pass) and bool products.  Results are compared byte for byte with NumPy's.
"""

import numpy as np
import pytest

import pyet
from pyet._core.ops import OPS

LAYOUTS = ["C", "step2", "reversed", "F", "bcast_row"]


def raw_bools(shape, seed, layout="C"):
    """A bool array of ``shape`` in ``layout`` whose true bytes are 2-255 (a third are 1)."""
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    raw = rng.integers(0, 256, size=2 * size + 1, dtype=np.uint8)
    raw[rng.random(raw.size) < 0.35] = 0
    raw[rng.random(raw.size) < 0.1] = 1
    base = raw.view(np.bool_)
    if layout == "C":
        return base[:size].reshape(shape)
    if layout == "step2":
        return base[:2 * size:2].reshape(shape)
    if layout == "reversed":
        return base[size - 1::-1].reshape(shape)[..., ::-1] if len(shape) else base[0, ...]
    if layout == "F":
        return np.asfortranarray(base[:size].reshape(shape))  # (asfortranarray keeps bytes)
    if layout == "bcast_row":
        return np.broadcast_to(base[:shape[-1]], shape)
    raise ValueError(layout)


def assert_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype == np.bool_:
        # the bytes, not the truth values: a result must be 0 or 1, as NumPy's
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    else:
        np.testing.assert_array_equal(got, want)


def test_raw_bools_are_not_canonical():
    a = raw_bools((64, 64), 0)
    u = a.view(np.uint8)
    assert (u > 1).mean() > 0.3 and (u == 1).any() and (u == 0).any()


def _numpy_or_type_error(fn, *args):
    try:
        out = fn(*args)
    except TypeError:
        return None
    if np.asarray(out).dtype.name not in ("bool", "int32", "int64", "float32", "float64"):
        return None  # (float16, int8: pyet refuses those dtypes)
    return out


# ops of the table NumPy computes on bools in a dtype pyet has
BOOL_OPS = [op for op in OPS
            if _numpy_or_type_error(op.reference, *([np.array([True, False])] * op.arity))
            is not None]


def test_table_has_bool_ops():
    names = {op.name for op in BOOL_OPS}
    assert {"add", "multiply", "maximum", "minimum", "bitwise_and", "bitwise_or",
            "bitwise_xor", "invert", "equal", "less", "absolute"} <= names


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", BOOL_OPS, ids=lambda op: op.name)
def test_table_op_on_raw_bools(op, layout):
    shape = (33, 70)
    args = [raw_bools(shape, 10 + i, layout) for i in range(op.arity)]
    want = op.reference(*args)
    got = pyet.evaluate(getattr(pyet, op.name)(*[pyet.asarray(a) for a in args]))
    assert_same(got, want)


@pytest.mark.parametrize("name", ["and", "or", "xor", "eq", "ne", "lt", "le", "gt", "ge"])
def test_binary_against_scalars_and_canonical_bools(name):
    fn = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
          "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
          "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}[name]
    a = raw_bools((4099,), 3)
    canonical = np.random.default_rng(4).random(4099) < 0.5
    for x, y in [(a, True), (True, a), (a, False), (a, canonical), (canonical, a), (a, a)]:
        want = fn(x, y)
        got = pyet.evaluate(fn(*[pyet.asarray(v) if isinstance(v, np.ndarray) else v
                                 for v in (x, y)]))
        assert_same(got, want)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "float32", "float64"])
def test_astype_and_into_other_dtypes(dtype, layout):
    a = raw_bools((40, 130), 5, layout)
    assert_same(pyet.evaluate(pyet.asarray(a).astype(dtype)), a.astype(dtype))
    out = np.full(a.shape, 7, dtype)
    out[...] = pyet.asarray(a)  # the cast at assignment
    if dtype == "bool":
        assert_same(out, a.copy())  # a bool copy keeps the bytes, as NumPy's
    else:
        assert_same(out, a.astype(dtype))


@pytest.mark.parametrize("other", ["int32", "int64", "float32", "float64", "int", "float"])
def test_mixed_dtype_arithmetic(other):
    a = raw_bools((57, 66), 6)
    b = (np.arange(a.size).reshape(a.shape) % 13 - 6).astype(other) if other not in (
        "int", "float") else {"int": 3, "float": 0.5}[other]
    pb = pyet.asarray(b) if isinstance(b, np.ndarray) else b
    pa = pyet.asarray(a)
    for fn in (lambda x, y: x + y, lambda x, y: x * y, lambda x, y: y - x,
               lambda x, y: x == y, lambda x, y: x < y, lambda x, y: np.maximum(x, y)):
        assert_same(pyet.evaluate(fn(pa, pb)), fn(a, b))


def test_fused_trees():
    a, b, c = (raw_bools((300, 41), s) for s in (7, 8, 9))
    x = np.linspace(-1, 1, a.size).reshape(a.shape)
    pa, pb, pc, px = (pyet.asarray(v) for v in (a, b, c, x))
    assert_same(pyet.evaluate((pa & pb) | ~pc), (a & b) | ~c)
    assert_same(pyet.evaluate(pyet.where(pa ^ pb, px, -px)), np.where(a ^ b, x, -x))
    assert_same(pyet.evaluate(pa * 2.5 + pb), a * 2.5 + b)
    assert_same(pyet.evaluate((pa == pb) & pc), (a == b) & c)
    assert_same(pyet.evaluate(pyet.minimum(pa, pb) * px), np.minimum(a, b) * x)
    assert_same(pyet.evaluate((pa != pb).sum(axis=1)), (a != b).sum(axis=1))


# shapes that reach each reduction way: rows folded one by one, short-axis slices,
# NumPy's loop, the pass, wide rows of a short trailing axis, a column
REDUCE_SHAPES = [(64, 64), (16384, 16), (4096, 3), (3, 4096), (8192, 2), (2, 70001),
                 (300, 7, 33), (262144, 1), (5,)]
REDUCE_KINDS = ["sum", "prod", "max", "min", "any", "all", "mean", "argmax", "argmin"]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", REDUCE_SHAPES, ids=str)
def test_reductions_every_axis(shape, threads):
    before = pyet.get_num_threads()
    pyet.set_num_threads(threads)
    try:
        for layout in ("C", "F", "step2"):
            a = raw_bools(shape, 11, layout)
            pa = pyet.asarray(a)
            for kind in REDUCE_KINDS:
                for axis in [None, *range(len(shape))]:
                    want = getattr(a, kind)(axis=axis)
                    got = pyet.evaluate(getattr(pa, kind)(axis=axis))
                    assert_same(got, want)
    finally:
        pyet.set_num_threads(before)


@pytest.mark.parametrize("kind", ["sum", "max", "min", "any", "all", "prod"])
def test_reductions_keepdims_and_several_axes(kind):
    a = raw_bools((512, 4, 8), 12)
    pa = pyet.asarray(a)
    for axis in [(1, 2), (0, 1), (0, 2)]:
        for keepdims in (False, True):
            want = getattr(a, kind)(axis=axis, keepdims=keepdims)
            assert_same(pyet.evaluate(getattr(pa, kind)(axis=axis, keepdims=keepdims)), want)


@pytest.mark.parametrize("shape", [((8, 8), (8, 8)), ((64, 64), (64, 64)),
                                   ((3, 5), (5, 7)), ((4, 6, 5), (4, 5, 3)), ((9,), (9, 4)),
                                   ((4, 9), (9,))], ids=str)
def test_bool_products(shape):
    a, b = raw_bools(shape[0], 13), raw_bools(shape[1], 14)
    product = pyet.batch_dot if a.ndim == 3 else pyet.dot
    assert_same(pyet.evaluate(product(pyet.asarray(a), pyet.asarray(b))), a @ b)
    out = np.empty((a @ b).shape, bool)
    out.view(np.uint8)[...] = 9
    out[...] = product(pyet.asarray(a), pyet.asarray(b))
    assert_same(out, a @ b)


def test_sum_of_a_tree_of_raw_bools():
    a, b = raw_bools((16384, 16), 15), raw_bools((16384, 16), 16)
    pa, pb = pyet.asarray(a), pyet.asarray(b)
    assert_same(pyet.evaluate((pa | pb).sum(axis=1)), (a | b).sum(axis=1))
    assert_same(pyet.evaluate((pa & pb).sum()), (a & b).sum())
    assert_same(pyet.evaluate(pa.astype(np.int32).sum(axis=0)), a.astype(np.int32).sum(axis=0))
