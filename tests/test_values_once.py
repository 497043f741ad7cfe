"""Ops of one-value operands, computed once when a pass is bound.

A subtree whose every operand holds one value -- a scalar, a 0-d array, an array of one
element ((1,), (1, 1)) or a constant (broadcast) leaf -- is computed once, into a scalar
slot, before the pass runs (`A + exp(b)` of a (1,) bias had been a hoisted pass of its
own, ~14,000 instructions). Its value must be the one the pass computes element by
element (the op's kernel, or NumPy's loop where the pass runs that), its errors raised
before anything is written, and each evaluation must read the operands' values of the
time.
"""

import warnings
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_scalar_operands import (
    ROWS,
    assert_matches,
    assert_sentinels,
    exact,
    guarded,
    numpy_result,
    value,
)

import pyet
from pyet._core import core

N = 3000
ONE_SHAPES = [(), (1,), (1, 1)]
CASES = [(row, dt) for row in ROWS for dt in row.dtypes]


def _bits(x):
    """x's items as unsigned integers of their size (bit-for-bit comparisons)."""
    x = np.ascontiguousarray(x).reshape(-1)
    return x.view(f"u{x.itemsize}")


def _full(a, n):
    """a's one value as an array of n elements (the pass computes each)."""
    return np.full(n, np.asarray(a).reshape(()), np.asarray(a).dtype)


@pytest.mark.parametrize("shape", ONE_SHAPES, ids=str)
@pytest.mark.parametrize("row,dtype", CASES, ids=[f"{r.name}-{d}" for r, d in CASES])
def test_once_equals_the_pass_element_by_element(row, dtype, shape):
    """where(mask, op(b...), other) with b of one element: the value computed once is
    the value the pass computes on arrays of that value, bit for bit, and NumPy's."""
    rng = np.random.default_rng(zlib.crc32(repr((row.name, dtype, shape)).encode()))
    args = [value(dtype, d, rng).reshape(shape) for d in row.domain]
    ref = numpy_result(row, *args)
    if ref.dtype.name not in ("bool", "int32", "int64", "float32", "float64"):
        pytest.skip("result dtype outside pyet's set")
    fn = getattr(pyet, row.name)
    mask = rng.random(N) < 0.5
    other = np.zeros(N, ref.dtype)
    raw, flat = guarded(ref.dtype, N)
    dst = flat.reshape(np.broadcast_shapes(shape, (N,)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        node = fn(*[pyet.asarray(a) for a in args])
        # (positive(x) is x; an array exponent, even of one element, takes
        # pow per element in the pass, as NumPy's loop)
        if not isinstance(node, pyet.Tensor) and row.name != "power":
            assert "(once, when bound" in pyet.explain(pyet.where(mask, node, other), out=dst)
        pyet.asarray(dst)[...] = pyet.where(mask, node, other)
        each = np.asarray(pyet.evaluate(
            pyet.where(mask, fn(*[pyet.asarray(_full(a, N)) for a in args]), other)))
    assert_sentinels(raw, ref.dtype)
    np.testing.assert_array_equal(flat.view(np.uint8), each.view(np.uint8))
    assert_matches(flat[mask][:1], ref.reshape(1), exact(row))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", ONE_SHAPES, ids=str)
def test_a_bias_of_one_element_beside_a_column(dtype, shape):
    # the case the shape sweep found: (n, 1) + exp(b) of a (1,) b, 1.2-2.4x NumPy
    rng = np.random.default_rng(3)
    a = rng.standard_normal((N, 1)).astype(dtype)
    b = rng.standard_normal(shape).astype(dtype)
    want = a + np.exp(b)
    raw, dst = guarded(dtype, N)
    out = dst.reshape(N, 1)
    pyet.asarray(out)[...] = pyet.asarray(a) + pyet.exp(pyet.asarray(b))
    assert_sentinels(raw, dtype)
    np.testing.assert_allclose(out, want, rtol=2 * np.finfo(dtype).eps)
    # a fused kernel around the value (s*x + y): the same bits as one op at a time
    pyet.asarray(out)[...] = pyet.asarray(a) * pyet.exp(pyet.asarray(b)) + pyet.asarray(a)
    e = np.asarray(pyet.evaluate(pyet.exp(pyet.asarray(b))))
    np.testing.assert_array_equal(out, a * e.reshape(()) + a)


@pytest.mark.parametrize("shape", ONE_SHAPES, ids=str)
def test_casts_of_values_computed_once(shape):
    # float32 and int32 values taken into float64 trees: each cast once, as NumPy's
    a = np.linspace(-2, 2, N)
    f = np.full(shape, 0.3, np.float32)
    i = np.full(shape, 7, np.int32)
    got = np.asarray(pyet.evaluate(pyet.asarray(a) * pyet.sqrt(pyet.asarray(f))
                                   + pyet.exp(pyet.asarray(i))))
    want = a * np.sqrt(f) + np.exp(i)
    np.testing.assert_allclose(got.reshape(-1), want.reshape(-1), rtol=4e-16)
    assert got.dtype == want.dtype
    t = pyet.asarray(f).astype(np.float64) * 2
    got = np.asarray(pyet.evaluate(pyet.asarray(a) + pyet.tanh(t)))
    np.testing.assert_allclose(got.reshape(-1), (a + np.tanh(f.astype(np.float64) * 2))
                               .reshape(-1), rtol=4e-16)


def test_where_of_values_computed_once():
    b = np.array([0.5])
    a = np.arange(N, dtype=np.float64)
    B = pyet.asarray(b)
    got = np.asarray(pyet.evaluate(pyet.where(B > 0, pyet.asarray(a), -B)))
    np.testing.assert_array_equal(got, np.where(b > 0, a, -b))
    got = np.asarray(pyet.evaluate(pyet.asarray(a) + pyet.where(B > 1, B * 2, B - 1)))
    np.testing.assert_array_equal(got, a + np.where(b > 1, b * 2, b - 1))
    # a condition leaf of one element inside a where computed once: a bound
    # scalar too (binding collects it as lowering numbers it)
    for c in (np.array([True]), np.array(False), np.array([[True]])):
        got = np.asarray(pyet.evaluate(pyet.asarray(a) * pyet.where(pyet.asarray(c), B * 2,
                                                                    B - 1)))
        np.testing.assert_array_equal(got.reshape(-1), (a * np.where(c, b * 2, b - 1))
                                      .reshape(-1))
    # every operand one value: the root is computed once, the pass a fill
    dst = np.empty(N)
    pyet.asarray(dst)[...] = pyet.where(B > 0, pyet.exp(B), B)
    np.testing.assert_array_equal(dst, np.full(N, np.exp(0.5)))


def test_errors_are_raised_before_dst_is_written():
    raw, dst = guarded(np.float64, N)
    dst[...] = 7.0
    a = pyet.asarray(np.ones(N))
    z = pyet.asarray(np.zeros(1))
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        pyet.asarray(dst)[...] = a + pyet.log(z)
    np.testing.assert_array_equal(dst, 7.0)
    assert_sentinels(raw, np.float64)
    with np.errstate(divide="warn"), pytest.warns(RuntimeWarning, match="divide by zero"):
        pyet.asarray(dst)[...] = a + pyet.log(z)
    assert np.isneginf(dst).all()
    with np.errstate(all="raise"):  # (exp's underflow raised, as NumPy's)
        with pytest.raises(FloatingPointError, match="underflow"):
            np.exp(np.array([-1000.0]))
        with pytest.raises(FloatingPointError, match="underflow"):
            pyet.asarray(dst)[...] = a + pyet.exp(pyet.asarray(np.array([-1000.0]))) * 0
    assert np.isneginf(dst).all()
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        pyet.asarray(dst)[...] = a * pyet.exp(pyet.asarray(np.array(1000.0)))


def test_each_evaluation_reads_the_values_of_its_time():
    b = np.array([0.25])
    a = np.linspace(0, 1, N)
    tree = pyet.asarray(a) + pyet.exp(pyet.asarray(b))
    dst = np.empty(N)
    for v in (0.25, -3.0, 2.0):
        b[0] = v
        pyet.asarray(dst)[...] = tree
        np.testing.assert_array_equal(dst, a + np.exp(b))


def test_kept_plans_replay_with_the_values_of_the_time():
    b = np.array([[0.5]])
    a = np.linspace(0, 1, 64).reshape(8, 8)
    out = np.empty((8, 8))
    plan = pyet.EvalPlan()
    plan.assign(out, pyet.asarray(a) * pyet.tanh(pyet.asarray(b)) + 1.0)
    for v in (0.5, -1.5, 3.0):
        b[...] = v
        plan.run(keep=True)
        t = np.asarray(pyet.evaluate(pyet.tanh(pyet.asarray(np.full(8, v)))))[0]
        np.testing.assert_array_equal(out, a * t + 1.0)


def test_a_one_element_view_of_the_destination_is_read_before_the_pass():
    # x[...] = x - x[:1] * 2: NumPy's value, the first element read before it is written
    x = np.arange(1.0, N + 1.0)
    want = x - x[:1] * 2
    X = pyet.asarray(x)
    X[...] = X - pyet.exp(X[:1] * 0) * X[:1] * 2
    np.testing.assert_array_equal(x, want)


def test_multi_statement_passes_share_values_computed_once():
    b = np.array([0.75])
    a = np.linspace(-1, 1, N)
    o1, o2 = np.empty(N), np.empty(N)
    plan = pyet.EvalPlan()
    B = pyet.asarray(b)
    plan.assign(o1, pyet.asarray(a) * pyet.exp(B))
    plan.assign(o2, pyet.asarray(o1) + pyet.sin(B) * 2)
    plan.run()
    np.testing.assert_allclose(o1, a * np.exp(b), rtol=2e-16)
    np.testing.assert_allclose(o2, a * np.exp(b) + np.sin(b) * 2, rtol=4e-16)


def test_reductions_of_trees_with_values_computed_once():
    a = np.random.default_rng(0).random((40, 50))
    b = np.array([[1.5]])
    got = np.asarray(pyet.evaluate(pyet.sum(pyet.asarray(a) * pyet.exp(pyet.asarray(b)),
                                            axis=1)))
    np.testing.assert_allclose(got, (a * np.exp(b)).sum(axis=1), rtol=1e-14)


def test_values_computed_once_are_not_hoisted_as_passes():
    core.stats(reset=True)
    a = pyet.asarray(np.ones((4096, 1)))
    b = pyet.asarray(np.array([0.1]))
    out = np.empty((4096, 1))
    pyet.asarray(out)[...] = a + pyet.exp(b)
    assert core.stats()["elementwise_passes"] == 1
    assert core.stats()["scratch_bytes"] == 0


@settings(max_examples=60, deadline=None)
@given(shape=st.sampled_from(ONE_SHAPES), v=st.floats(-3, 3),
       dtype=st.sampled_from([np.float32, np.float64]),
       n=st.integers(1, 70), ops=st.lists(st.sampled_from(["sigmoid", "tanh", "sin", "cos",
                                                          "neg", "half"]), max_size=5))
def test_random_chains_of_one_value_beside_a_block(shape, v, dtype, n, ops):
    b = np.full(shape, v, dtype)
    a = np.linspace(-1, 1, n).astype(dtype)
    x, ref = pyet.asarray(b), b
    for op in ops:
        if op == "neg":
            x, ref = -x, -ref
        elif op == "sigmoid":
            x, ref = pyet.sigmoid(x), 1 / (1 + np.exp(-ref))
        elif op == "half":
            x, ref = x * 0.5, ref * dtype(0.5)
        else:
            x, ref = getattr(pyet, op)(x), getattr(np, op)(ref)
    with np.errstate(all="ignore"):
        got = np.asarray(pyet.evaluate(pyet.asarray(a) + x))
        each = np.asarray(pyet.evaluate(pyet.asarray(a) + _chain(a, b, ops)))
        want = a + ref
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint8),
                                  np.broadcast_to(each, got.shape).reshape(-1).view(np.uint8))
    np.testing.assert_allclose(got.reshape(-1), np.broadcast_to(want, got.shape).reshape(-1),
                               rtol=16 * np.finfo(dtype).eps, atol=16 * np.finfo(dtype).eps)


def _chain(a, b, ops):
    """The same chain over b's value as an array of a's length (computed per element)."""
    x = pyet.asarray(_full(b, a.size))
    for op in ops:
        x = -x if op == "neg" else x * 0.5 if op == "half" else getattr(pyet, op)(x)
    return x


_BINARY = ["add", "subtract", "multiply", "maximum", "divide"]
_UNARY = ["exp", "tanh", "sin", "negative", "sqrt", "absolute"]


@st.composite
def _trees(draw, depth=3):
    """(kind, ...) of a random tree over operands 0-3 (a random op table walk)."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return ("leaf", draw(st.integers(0, 3)))
    if draw(st.booleans()):
        return ("unary", draw(st.sampled_from(_UNARY)), draw(_trees(depth=depth - 1)))
    if draw(st.integers(0, 4)) == 0:
        return ("where", draw(_trees(depth=depth - 1)), draw(_trees(depth=depth - 1)),
                draw(_trees(depth=depth - 1)))
    return ("binary", draw(st.sampled_from(_BINARY)), draw(_trees(depth=depth - 1)),
            draw(_trees(depth=depth - 1)))


def _build(lib, t, ops):
    if t[0] == "leaf":
        return ops[t[1]]
    if t[0] == "unary":
        return getattr(lib, t[1])(_build(lib, t[2], ops))
    if t[0] == "where":
        return lib.where(_build(lib, t[1], ops) > 0.5, _build(lib, t[2], ops),
                         _build(lib, t[3], ops))
    return getattr(lib, t[1])(_build(lib, t[2], ops), _build(lib, t[3], ops))


@settings(max_examples=150, deadline=None)
@given(tree=_trees(), dtype=st.sampled_from([np.float32, np.float64]),
       shapes=st.lists(st.sampled_from([(), (1,), (1, 1), (7,), (5, 7), (5, 1)]),
                       min_size=4, max_size=4),
       seed=st.integers(0, 2 ** 16))
def test_random_trees_of_one_value_and_array_operands(tree, dtype, shapes, seed):
    # the tree with its operands of one element as they are (values computed once)
    # against the same tree with each such operand an array of the result's shape
    # holding its value (every value computed in the pass): the same bits
    rng = np.random.default_rng(seed)
    arrays = [(rng.random(s) * 3 + 0.1).astype(dtype) for s in shapes]
    with np.errstate(all="ignore"):
        want = np.asarray(_build(np, tree, arrays))
        full = np.broadcast_shapes(*shapes, (1,))
        # (copies: a broadcast view would be a constant leaf, which NumPy folds)
        expanded = [np.broadcast_to(a, full).copy() if a.size == 1 else a for a in arrays]
        got = np.asarray(pyet.evaluate(_build(pyet, tree, [pyet.asarray(a) for a in arrays])))
        each = np.asarray(pyet.evaluate(_build(pyet, tree,
                                                [pyet.asarray(a) for a in expanded])))
    each = np.broadcast_to(each, np.broadcast_shapes(each.shape, got.shape))
    got = np.broadcast_to(got, each.shape)
    np.testing.assert_array_equal(_bits(got), _bits(each))
    # NumPy's values where the tree is well conditioned in dtype: where NumPy's
    # own agree with float64's (float32 sin(exp(exp(3))): an ulp of exp's
    # 3.6e9 is 256, any sine)
    with np.errstate(all="ignore"):
        want64 = np.asarray(_build(np, tree, [a.astype(np.float64) for a in arrays]))
    want = np.broadcast_to(want, got.shape)
    sound = np.isclose(want, np.broadcast_to(want64, got.shape), rtol=1e-5, atol=1e-6,
                       equal_nan=True)
    np.testing.assert_allclose(got[sound], want[sound], rtol=1e-4, atol=1e-5, equal_nan=True)
