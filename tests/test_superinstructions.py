"""Fused kernels with a division or a square root (rewrite.RULES: scale_mul,
scale_div, div_sqrt, sub_div_sqrt) and prefetched passes over large operands
give NumPy's bits, edge values, floating-point errors and layouts included."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet
from pyet._core import core

EDGE = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -3.5, 1e-30, 1e30, 1e-45, 5e-324]

TREES = {  # name: (rule expected in the listing, pyet tree, NumPy value)
    "scale_mul": (lambda x, y, z: 0.3 * x * y, lambda x, y, z: 0.3 * x * y),
    "scale_div": (lambda x, y, z: 0.7 * (x / 0.65), lambda x, y, z: 0.7 * (x / 0.65)),
    "div_sqrt": (lambda x, y, z: x / (pyet.sqrt(y) + 1e-8),
                 lambda x, y, z: x / (np.sqrt(y) + 1e-8)),
    "sub_div_sqrt": (lambda x, y, z: z - x / (pyet.sqrt(y) + 1e-8),
                     lambda x, y, z: z - x / (np.sqrt(y) + 1e-8)),
}


def _operands(dtype, n=400, seed=0):
    rng = np.random.default_rng(seed)
    vals = np.array(EDGE, dtype)
    out = []
    for _ in range(3):
        a = rng.standard_normal(n).astype(dtype)
        a[rng.integers(0, n, 60)] = rng.choice(vals, 60)
        out.append(a)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(TREES))
def test_fused_kernel_is_chosen_and_gives_numpys_bits(dtype, name):
    tree, ref = TREES[name]
    x, y, z = _operands(dtype)
    X, Y, Z = (pyet.asarray(a) for a in (x, y, z))
    e = tree(X, Y, Z)
    assert name in core.lower(e, core.dtype_code(dtype)).text
    with np.errstate(all="ignore"):
        want = ref(x, y, z)
        got = np.asarray(pyet.evaluate(e))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("name", ["div_sqrt", "sub_div_sqrt", "scale_div"])
def test_fused_kernels_raise_numpys_floating_point_errors(name):
    tree, ref = TREES[name]
    x, y, z = (np.array(a) for a in ([1.0, 1e300, 2.0], [-1.0, 0.0, 4.0], [1.0, 1.0, 1.0]))
    for kind in ("divide", "invalid", "over"):
        with np.errstate(all="ignore", **{kind: "raise"}):
            try:
                ref(x, y, z)
                numpy_raises = False
            except FloatingPointError:
                numpy_raises = True
            if numpy_raises:
                with pytest.raises(FloatingPointError):
                    pyet.evaluate(tree(*(pyet.asarray(a) for a in (x, y, z))))
            else:
                pyet.evaluate(tree(*(pyet.asarray(a) for a in (x, y, z))))


def test_rules_never_fire_across_dtypes():
    # int operands: true division computes in float64 with casts, no fused kernel
    xi = pyet.asarray(np.arange(1, 6, dtype=np.int64))
    xf = pyet.asarray(np.arange(1, 6, dtype=np.float32))
    text = core.lower(xi / (pyet.sqrt(xf) + 1.0), core.dtype_code(np.float64)).text
    assert "div_sqrt" not in text
    got = np.asarray(pyet.evaluate(xi / (pyet.sqrt(xf) + 1.0)))
    np.testing.assert_array_equal(got, np.arange(1, 6) / (np.sqrt(np.arange(1, 6,
                                                          dtype=np.float32)) + 1.0))
    # (s*x)*y over integers wraps as NumPy's
    a = np.array([2**62, -3, 7], np.int64)
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(3 * pyet.asarray(a) * pyet.asarray(a))),
                                  3 * a * a)


@pytest.fixture(params=[1, 2, 3])
def always_prefetch(request):
    before = core.get_prefetch()
    core.set_prefetch(0, request.param)  # every pass of more than 0 bytes prefetches
    yield
    core.set_prefetch(*before)


def _adam(w, g, m, v, t, lib):
    b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
    sqrt = np.sqrt if lib is np else pyet.sqrt
    # each value built when its statement runs (NumPy's after the ones before)
    return [(m, lambda: b1 * m + (1 - b1) * g), (v, lambda: b2 * v + (1 - b2) * g * g),
            (w, lambda: w - lr * (m / (1 - b1 ** t)) / (sqrt(v / (1 - b2 ** t)) + eps))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C", "F", "strided", "reversed", "rows"])
@pytest.mark.parametrize("block", [16, 40, 100, 512])
def test_prefetched_adam_plan_gives_numpys_bits(always_prefetch, dtype, layout, block):
    rng = np.random.default_rng(3)
    shape = (23, 131)

    def make():
        a = rng.standard_normal((2 * shape[0], 2 * shape[1])).astype(dtype)
        return {"C": lambda: np.ascontiguousarray(a[: shape[0], : shape[1]]),
                "F": lambda: np.asfortranarray(a[: shape[0], : shape[1]]),
                "strided": lambda: a[::2, ::2],
                "reversed": lambda: a[::-2, ::-1][:, : shape[1]],
                "rows": lambda: a[::2, : shape[1]]}[layout]()

    w, g, m, v = make(), make(), make(), np.abs(make())
    ref = [a.copy() for a in (w, g, m, v)]
    old = core.get_block_size()
    core.set_block_size(block)
    try:
        for t in (1, 2):
            rw, rg, rm, rv = ref
            for d, val in _adam(rw, rg, rm, rv, t, np):
                d[...] = val()
            plan = pyet.EvalPlan()
            W, G, M, V = (pyet.asarray(a) for a in (w, g, m, v))
            for d, e in _adam(W, G, M, V, t, pyet):
                plan.assign(d, e())
            assert "one pass writing statements [0, 1, 2]" in pyet.explain(plan)
            plan.run()
            for ours, theirs in zip((w, g, m, v), ref, strict=True):
                np.testing.assert_array_equal(ours, theirs)
    finally:
        core.set_block_size(old)


@pytest.mark.parametrize("n", [1, 15, 511, 512, 513, 4097, 300_001])
def test_prefetched_passes_of_every_length(n):
    # only passes over more than 32 MiB prefetch by default: every one does here
    rng = np.random.default_rng(n)
    x, y, z = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    out = np.empty_like(x)
    before = core.get_prefetch()
    core.set_prefetch(0, 2)
    try:
        pyet.evaluate(pyet.asarray(z) - pyet.asarray(x) / (pyet.sqrt(pyet.abs(
            pyet.asarray(y))) + 1e-8), out=out)
    finally:
        core.set_prefetch(*before)
    np.testing.assert_array_equal(out, z - x / (np.sqrt(np.abs(y)) + np.float32(1e-8)))


def test_prefetch_reads_past_nothing_when_dst_aliases_a_leaf(always_prefetch):
    # in place and shifted views: written and read in statement order, as NumPy
    a = np.arange(5000, dtype=np.float64)
    b = a.copy()
    A = pyet.asarray(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pyet.evaluate(A[1:] / (pyet.sqrt(A[:-1]) + 1.0), out=a[:-1])
    b[:-1] = b[1:] / (np.sqrt(b[:-1]) + 1.0)
    np.testing.assert_array_equal(a, b)


# ------------------------------------------- common subexpressions of a pass

def _pass_listing(dsts, exprs):
    log = core.explain_statements(dsts, exprs)
    assert len(log) == 1, log
    return log[0][2]


def test_equal_costly_subtrees_of_a_pass_are_computed_once():
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((64, 32)), rng.standard_normal((32, 48)) / 8
    b = rng.standard_normal(48)
    X, Wt, B = (pyet.asarray(a) for a in (x, w, b))
    y1, y2, y3 = np.empty((64, 48)), np.empty((64, 48)), np.empty((64, 48))
    trees = [pyet.sigmoid(pyet.dot(X, Wt) + B), 2 * pyet.sigmoid(pyet.dot(X, Wt) + B),
             pyet.exp(pyet.sigmoid(pyet.dot(X, Wt) + B)) - pyet.sigmoid(pyet.dot(X, Wt) + B)]
    text = _pass_listing([y1, y2, y3], trees)
    assert text.count("sigmoid") == 1 and text.count("exp") == 1, text
    plan = pyet.EvalPlan()
    for d, e in zip((y1, y2, y3), trees, strict=True):
        plan.assign(d, e)
    pyet.stats(reset=True)
    plan.run()
    assert pyet.stats()["gemm_calls"] == 1
    s = 1 / (1 + np.exp(-(x @ w + b)))
    np.testing.assert_allclose(y1, s, rtol=1e-14)
    # bit for bit what the statements one by one give
    z1, z2, z3 = (np.empty_like(y1) for _ in range(3))
    for d, e in zip((z1, z2, z3), trees, strict=True):
        pyet.evaluate(e, out=d)
    for ours, theirs in ((y1, z1), (y2, z2), (y3, z3)):
        np.testing.assert_array_equal(ours, theirs)


def test_subtrees_are_not_shared_across_a_write_or_with_other_scalars():
    def run(planned):
        x = np.linspace(0.1, 2.0, 50)
        y1, y2, y3 = np.empty(50), np.empty(50), np.empty(50)
        X = pyet.asarray(x)
        # exp(x) before and after x is written; exp(2x), exp(3x): scalars bound later
        dsts = [y1, x, y2, y3]
        trees = [pyet.exp(X), X + 1, pyet.exp(X) + pyet.exp(X * 2), pyet.exp(X * 3)]
        if planned:
            text = _pass_listing(dsts, trees)
            assert text.count("exp") == 4, text
            plan = pyet.EvalPlan()
            for d, e in zip(dsts, trees, strict=True):
                plan.assign(d, e)
            plan.run()
        else:
            for d, e in zip(dsts, trees, strict=True):
                pyet.evaluate(e, out=d)
        return dsts

    for ours, theirs in zip(run(True), run(False), strict=True):
        np.testing.assert_array_equal(ours, theirs)
    y1, x, y2, _ = run(True)
    np.testing.assert_allclose(y1, np.exp(np.linspace(0.1, 2.0, 50)), rtol=1e-15)
    np.testing.assert_allclose(y2, np.exp(x) + np.exp(2 * x), rtol=1e-15)


def test_a_cached_pass_program_is_not_reused_for_other_leaves():
    a, b = np.linspace(0.1, 1, 30), np.linspace(1, 2, 30)
    A, B = pyet.asarray(a), pyet.asarray(b)
    o1, o2 = np.empty(30), np.empty(30)
    for first, second in ((A, A), (A, B), (B, B), (B, A)):
        plan = pyet.EvalPlan()
        plan.assign(o1, pyet.sqrt(first) * 2)
        plan.assign(o2, pyet.sqrt(second) + 1)
        plan.run()
        np.testing.assert_array_equal(o1, np.sqrt(np.asarray(first)) * 2)
        np.testing.assert_array_equal(o2, np.sqrt(np.asarray(second)) + 1)


_LEAVES = 3
_SUBS = [lambda lib, t: lib.exp(t[0]), lambda lib, t: lib.sqrt(lib.abs(t[1])),
         lambda lib, t: lib.tanh(t[0] + t[2]), lambda lib, t: lib.exp(lib.sqrt(lib.abs(t[2]))),
         lambda lib, t: lib.sqrt(lib.abs(t[2]))]  # (inside the one before)


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 5), st.integers(0, len(_SUBS) - 1),
                                st.integers(0, len(_SUBS) - 1), st.integers(0, 2)),
                      min_size=1, max_size=6))
def test_random_repeated_subtrees_equal_running_one_by_one(steps):
    rng = np.random.default_rng(11)
    ours = [rng.uniform(-1, 1, 40) for _ in range(_LEAVES)] + [np.zeros(40) for _ in range(3)]
    ref = [a.copy() for a in ours]
    orig = [a.copy() for a in ours]

    def tree(lib, arrs, i, j, kind):
        t = [pyet.asarray(a) for a in arrs] if lib is pyet else arrs
        u, v = _SUBS[i](lib, t), _SUBS[j](lib, t)
        return [lambda: u + v, lambda: u * v - u, lambda: (u + 1) / (v + 2)][kind]()

    plan = pyet.EvalPlan()
    for d, i, j, kind in steps:
        plan.assign(ours[d], tree(pyet, ours, i, j, kind))
    plan.run()
    # the statements one by one: pyet's exp and tanh (within an ulp of NumPy's,
    # which values as large as exp(exp(x)) magnify) bit for bit
    for d, i, j, kind in steps:
        pyet.evaluate(tree(pyet, ref, i, j, kind), out=ref[d])
    for a, r in zip(ours, ref, strict=True):
        np.testing.assert_array_equal(a, r)
    if len(steps) == 1:
        d, i, j, kind = steps[0]
        with np.errstate(all="ignore"):
            want = tree(np, orig, i, j, kind)
        np.testing.assert_allclose(ours[d], want, rtol=1e-13)


# ------------------------------------------- five-operand rules (ema_*, *_div)

FIVE = {  # name: (pyet tree, NumPy value) over x, y, z
    "ema_mul": (lambda x, y, z: 0.9 * x + (0.1 * y) * z, lambda x, y, z: 0.9 * x + (0.1 * y) * z),
    "ema_prod": (lambda x, y, z: 0.9 * x + 0.1 * (y * z), lambda x, y, z: 0.9 * x + 0.1 * (y * z)),
    "div_sqrt_div": (lambda x, y, z: x / (pyet.sqrt(y / 0.65) + 1e-8),
                     lambda x, y, z: x / (np.sqrt(y / 0.65) + 1e-8)),
    "sub_div_sqrt_div": (lambda x, y, z: z - x / (pyet.sqrt(y / 0.65) + 1e-8),
                         lambda x, y, z: z - x / (np.sqrt(y / 0.65) + 1e-8)),
}


def _numpy_value(ref, *arrays):
    with np.errstate(all="ignore"):
        return ref(*arrays)


def _assert_bits(got, want):
    # NaN where NumPy has NaN; the sign of every other value.  (A NaN's sign
    # where two NaNs meet follows the operand order the compiler chose: IEEE
    # leaves it open, and NumPy's own loops differ.)
    got = np.asarray(got)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    num = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[num]), np.signbit(want[num]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(FIVE))
def test_five_operand_rules_are_chosen_and_give_numpys_bits(dtype, name):
    tree, ref = FIVE[name]
    x, y, z = _operands(dtype, seed=7)
    X, Y, Z = (pyet.asarray(a) for a in (x, y, z))
    e = tree(X, Y, Z)
    assert name in core.lower(e, core.dtype_code(dtype)).text
    _assert_bits(pyet.evaluate(e), _numpy_value(ref, x, y, z))
    # the other operand order of add and multiply (commutative: the same bits)
    if name == "ema_mul":
        e = (Z * (Y * 0.1)) + X * 0.9
        assert name in core.lower(e, core.dtype_code(dtype)).text
        _assert_bits(pyet.evaluate(e), _numpy_value(lambda x, y, z: (z * (y * 0.1)) + x * 0.9,
                                                    x, y, z))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(FIVE))
def test_five_operand_rules_raise_numpys_floating_point_errors(dtype, name):
    tree, ref = FIVE[name]
    big = np.finfo(dtype).max
    tiny = np.finfo(dtype).smallest_subnormal
    cases = [([1.0, big, 2.0], [-1.0, 0.0, 4.0], [1.0, 1.0, 1.0]),      # sqrt(-1), x/small
             ([big, 1.0, np.inf], [big, -np.inf, 1.0], [10.0, 1.0, 1.0]),  # overflow, inf-inf
             ([tiny, 0.0, -0.0], [tiny, tiny, -0.0], [0.5, 1.0, 0.0])]    # underflow, 0/0
    for vals in cases:
        x, y, z = (np.array(a, dtype) for a in vals)
        for kind in ("divide", "invalid", "over", "under"):
            with np.errstate(all="ignore", **{kind: "raise"}):
                try:
                    want = ref(x, y, z)
                except FloatingPointError:
                    with pytest.raises(FloatingPointError):
                        pyet.evaluate(tree(*(pyet.asarray(a) for a in (x, y, z))))
                    continue
                _assert_bits(pyet.evaluate(tree(*(pyet.asarray(a) for a in (x, y, z)))), want)


def test_five_operand_rules_never_fire_across_dtypes():
    xi, yi, zi = (np.arange(1, 8, dtype=np.int64) * k for k in (3, 5, 7))
    Xi, Yi, Zi = (pyet.asarray(a) for a in (xi, yi, zi))
    f64 = core.dtype_code(np.float64)
    # int64 operands under float scalars compute in float64 through casts
    e = 0.9 * Xi + (0.1 * Yi) * Zi
    assert "ema_mul" not in core.lower(e, f64).text
    _assert_bits(pyet.evaluate(e), 0.9 * xi + (0.1 * yi) * zi)
    e = Xi / (pyet.sqrt(pyet.asarray(yi.astype(np.float32)) / 0.5) + 1.0)
    assert "div_sqrt_div" not in core.lower(e, f64).text
    _assert_bits(pyet.evaluate(e), xi / (np.sqrt(yi.astype(np.float32) / 0.5) + 1.0))
    # all int64: the integer kernel, wrapping as NumPy's
    a = np.array([2**62, -3, 7], np.int64)
    A = pyet.asarray(a)
    e = 3 * A + (5 * A) * A
    assert "ema_mul" in core.lower(e, core.dtype_code(np.int64)).text
    _assert_bits(pyet.evaluate(e), 3 * a + (5 * a) * a)


@pytest.mark.parametrize("name", sorted(FIVE))
def test_five_operand_rules_into_an_aliased_destination(always_prefetch, name):
    tree, ref = FIVE[name]
    rng = np.random.default_rng(11)
    x, y, z = (np.abs(rng.standard_normal(3000)) for _ in range(3))
    for k in range(3):  # in place into each operand
        ops = [x.copy(), y.copy(), z.copy()]
        want = _numpy_value(ref, *ops)
        pyet.evaluate(tree(*(pyet.asarray(a) for a in ops)), out=ops[k])
        _assert_bits(ops[k], want)
    # shifted views of one array: NumPy's answer
    a = np.abs(rng.standard_normal(3001))
    b = a.copy()
    A = pyet.asarray(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pyet.evaluate(tree(A[1:], A[:-1], A[1:]), out=a[:-1])
    b[:-1] = _numpy_value(ref, b[1:].copy(), b[:-1].copy(), b[1:].copy())
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n", [1, 15, 255, 257, 511, 513, 4097, 100_003])
@pytest.mark.parametrize("block", [16, 100, 512])
def test_prefetched_pieces_of_every_length(always_prefetch, n, block):
    # compute-bound instructions of a prefetching pass run in pieces of 256
    rng = np.random.default_rng(n)
    w, g, m = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    v = np.abs(rng.standard_normal(n)).astype(np.float32)
    ref = [a.copy() for a in (w, g, m, v)]
    old = core.get_block_size()
    core.set_block_size(block)
    try:
        plan = pyet.EvalPlan()
        W, G, M, V = (pyet.asarray(a) for a in (w, g, m, v))
        for d, e in _adam(W, G, M, V, 3, pyet):
            plan.assign(d, e())
        plan.run()
    finally:
        core.set_block_size(old)
    rw, rg, rm, rv = ref
    for d, val in _adam(rw, rg, rm, rv, 3, np):
        d[...] = val()
    for ours, theirs in zip((w, g, m, v), ref, strict=True):
        np.testing.assert_array_equal(ours, theirs)


_EDGE_FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
                         st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1e-310, 1e308, -1e308]))


@settings(max_examples=150, deadline=None)
@given(dtype=st.sampled_from([np.float32, np.float64]),
       vals=st.lists(st.tuples(_EDGE_FLOATS, _EDGE_FLOATS, _EDGE_FLOATS), min_size=1,
                     max_size=40),
       s=st.tuples(st.floats(-4, 4), st.floats(-4, 4)))
def test_random_five_operand_statements_equal_numpy_one_by_one(dtype, vals, s):
    # pyet's fused kernels against NumPy's ops applied one at a time, bit for bit
    with np.errstate(all="ignore"):
        x, y, z = (np.array(col, dtype) for col in zip(*vals, strict=True))
    s1, s2 = s
    X, Y, Z = (pyet.asarray(a) for a in (x, y, z))
    c = lambda v: dtype(v)  # noqa: E731  (NumPy's weak scalar: rounded to the dtype)
    with np.errstate(all="ignore"):
        cases = {
            "ema_mul": (s1 * X + (s2 * Y) * Z,
                        np.add(np.multiply(c(s1), x), np.multiply(np.multiply(c(s2), y), z))),
            "ema_prod": (s1 * X + s2 * (Y * Z),
                         np.add(np.multiply(c(s1), x), np.multiply(c(s2), np.multiply(y, z)))),
            "div_sqrt_div": (X / (pyet.sqrt(Y / s1) + s2),
                             np.divide(x, np.add(np.sqrt(np.divide(y, c(s1))), c(s2)))),
            "sub_div_sqrt_div": (
                Z - X / (pyet.sqrt(Y / s1) + s2),
                np.subtract(z, np.divide(x, np.add(np.sqrt(np.divide(y, c(s1))), c(s2))))),
        }
        for name, (e, want) in cases.items():
            # x/1 and 1*x fold away; operands of one element are values
            # computed once when the pass is bound, not a fused kernel
            if 1 not in (s1, s2, c(s1), c(s2)) and len(vals) > 1:
                assert name in core.lower(e, core.dtype_code(dtype)).text
            _assert_bits(pyet.evaluate(e), want)
