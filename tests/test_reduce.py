"""Reductions (issue 4, sections 1 and 5): pyet.sum, mean, prod, max, min, argmax, argmin, all,
any; MShadow's sum_rows, sumall_except_dim, reduce_except_dim; softmax and log_softmax.

NumPy is the oracle.  Integer and bool results, max/min/argmax/argmin/all/any must equal NumPy's
exactly; result dtypes must be NumPy's; float sums and means are held to NumPy's pairwise
accuracy, measured against an exact reference (math.fsum): pyet's error may not exceed NumPy's
by more than a small factor.  Every layout (contiguous, Fortran, strided, negative strides,
broadcast, 0-d, empty), axis form and error path is covered, as are reductions of trees,
reductions inside trees, destinations, threads and memory use."""

import math
import tracemalloc
import warnings

import numpy as np
import pytest
from conftest import pyet_threads
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyet
from pyet._core import core as _plan
from pyet._kernels import parallel as _parallel

KINDS = ("sum", "mean", "prod", "max", "min", "argmax", "argmin", "all", "any")
DTYPES = (np.bool_, np.int32, np.int64, np.float32, np.float64)
FLOATS = (np.float32, np.float64)
ARG = ("argmax", "argmin")


def rand(shape, dtype=np.float64, seed=0):
    """Random values that keep every reduction finite: floats of either sign and magnitude in
    [0.9, 1.1) (products of thousands of them neither overflow nor underflow), small ints."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.7
    if dt.kind == "i":
        return rng.integers(-4, 5, size=shape).astype(dt)
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return (sign * rng.uniform(0.9, 1.1, size=shape)).astype(dt)


def layout(x, kind):
    """The values of x in another memory layout (a view where possible)."""
    x = np.asarray(x)
    if kind == "C":
        return np.ascontiguousarray(x)
    if kind == "F":
        return np.asfortranarray(x)
    if kind == "strided":  # every other element along every axis
        big = np.zeros(tuple(2 * n for n in x.shape), x.dtype)
        view = big[(slice(None, None, 2),) * x.ndim]
        view[...] = x
        return view
    if kind == "neg":  # negative strides along every axis
        flip = (slice(None, None, -1),) * x.ndim
        return np.ascontiguousarray(x[flip])[flip]
    if kind == "bcast":  # stride 0 along axis 0: every row equals the first
        return np.broadcast_to(x[:1], x.shape)
    raise AssertionError(kind)


LAYOUTS = ("C", "F", "strided", "neg", "bcast")
# the 70- and 66-long axes take the fold's 32-lane path (rows of at least 64 values)
SHAPES = ((7,), (4, 70), (3, 5, 66))


def axis_forms(ndim, kind):
    """None, every axis, every negative axis; for all but argmax/argmin also (), pairs and
    all axes as tuples (unsorted, negative)."""
    forms = [None, *range(ndim), *range(-ndim, 0)]
    if kind not in ARG:
        forms += [(), tuple(range(ndim - 1, -1, -1))]
        if ndim >= 2:
            forms += [(0, -1), (-1, 0)]
        if ndim >= 3:
            forms += [(1,), (0, 2)]
    return forms


def np_reduce(kind, x, axis=None, keepdims=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of empty slice
        return np.asarray(getattr(np, kind)(x, axis=axis, keepdims=keepdims))


def _axes(axis, ndim):
    if axis is None or ndim == 0:  # (axis 0 or -1 of a 0-d array: no axis)
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else axis
    return tuple(sorted(a % ndim for a in axes))


def _fsum(values):
    try:
        return math.fsum(values)
    except OverflowError:  # the sum overflows: NumPy's inf is compared exactly
        return math.inf


def exact_sum(x, axis, keepdims, mean=False):
    """(exact sum or mean, sum of magnitudes) along axis, from math.fsum over float64 values
    (exact conversions for every input dtype used here)."""
    x = np.asarray(x, dtype=np.float64)
    x = np.where(np.isfinite(x), x, 0.0)  # (sums over inf and nan are compared exactly)
    axes = _axes(axis, x.ndim)
    kept = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, kept + list(axes))
    out_shape = tuple(x.shape[a] for a in kept)
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    rows = moved.reshape((int(np.prod(out_shape, dtype=np.int64)), count))
    total = np.array([_fsum(r) for r in rows]).reshape(out_shape)
    mag = np.array([_fsum(np.abs(r)) for r in rows]).reshape(out_shape)
    if mean:
        with np.errstate(invalid="ignore", divide="ignore"):
            total, mag = total / count, mag / count
    if keepdims:
        shape = tuple(1 if a in axes else d for a, d in enumerate(x.shape))
        total, mag = total.reshape(shape), mag.reshape(shape)
    return total, mag


def check(kind, got, x, axis=None, keepdims=False, want=None, tree=None):
    """got (an Expr or array) equals NumPy's reduction of x: same shape and dtype; exact for
    integer/bool results and for max/min/argmax/argmin/all/any; float sums and means no less
    accurate than NumPy's (their error against math.fsum at most twice NumPy's plus two ulps
    of the sum of magnitudes); float products to rounding.  tree: x's values as a
    Python-level description for messages."""
    got = np.asarray(got)
    if want is None:
        want = np_reduce(kind, x, axis, keepdims)
    where = f"{kind}({tree or 'x'}, axis={axis}, keepdims={keepdims}) of {np.asarray(x).dtype}" \
            f"{np.shape(x)}"
    assert got.shape == want.shape, where
    assert got.dtype == want.dtype, (where, got.dtype, want.dtype)
    if want.dtype.kind != "f" or kind not in ("sum", "mean", "prod"):
        np.testing.assert_array_equal(got, want, err_msg=where)
        return
    if kind == "prod":
        rtol = 2e-5 if want.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0, err_msg=where)
        return
    special = ~np.isfinite(want)  # nan and inf (also from overflow): exactly NumPy's
    np.testing.assert_array_equal(got[special], want[special], err_msg=where)
    exact, mag = exact_sum(x, axis, keepdims, mean=kind == "mean")
    exact, mag = np.where(special, 0.0, exact), np.where(special, 0.0, mag)
    got, want = np.where(special, 0.0, got), np.where(special, 0.0, want)
    eps = np.finfo(want.dtype).eps
    err_pyet = np.abs(got.astype(np.float64) - exact)
    err_numpy = np.abs(want.astype(np.float64) - exact)
    bound = 2 * err_numpy + 2 * eps * mag + np.finfo(want.dtype).tiny
    bad = ~(err_pyet <= bound)
    assert not np.any(bad), (where, got[bad][:5], want[bad][:5], exact[bad][:5])


# ------------------------------------------------------------- every kind x dtype x layout

@pytest.mark.parametrize("lay", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS)
def test_reduction_matches_numpy(kind, dtype, lay):
    for seed, shape in enumerate(SHAPES):
        x = layout(rand(shape, dtype, seed), lay)
        X = pyet.asarray(x)
        for axis in axis_forms(x.ndim, kind):
            for keepdims in (False, True):
                check(kind, getattr(pyet, kind)(X, axis=axis, keepdims=keepdims), x, axis,
                      keepdims)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS)
def test_reduction_of_0d(kind, dtype):
    for x in (np.array(rand((), dtype)), rand((3,), dtype)[1:2].reshape(())):
        assert x.ndim == 0
        forms = [None, 0, -1] + ([(), ()] if kind not in ARG else [])
        if kind == "mean":  # np.mean refuses axis 0 and -1 of a 0-d array (see below)
            forms = [None, ()]
        for axis in forms:
            for keepdims in (False, True):
                check(kind, getattr(pyet, kind)(x, axis=axis, keepdims=keepdims), x, axis,
                      keepdims)


def test_reduction_of_python_scalars_lists_and_ndarrays():
    check("sum", pyet.sum(3), np.array(3))
    check("mean", pyet.mean(2.5), np.array(2.5))
    check("max", pyet.max([[1, 5], [7, 2]], axis=0), np.array([[1, 5], [7, 2]]), 0)
    x = rand((4, 70))
    check("sum", pyet.sum(x, axis=1), x, 1)  # a bare ndarray operand
    check("argmax", pyet.argmax(x), x)


def test_result_dtypes_are_numpys():
    for dtype in DTYPES:
        x = rand((3, 4), dtype)
        for kind in KINDS:
            assert getattr(pyet, kind)(x).dtype == np_reduce(kind, x).dtype, (kind, dtype)
            assert getattr(pyet, kind)(x, axis=0).dtype == np_reduce(kind, x, 0).dtype


def test_evaluate_returns_a_tensor_of_the_reduction():
    x = rand((5, 6))
    t = pyet.evaluate(pyet.sum(x, axis=0))
    assert isinstance(t, pyet.Tensor)
    check("sum", t.numpy(), x, 0)
    out = pyet.zeros((6,))
    assert pyet.evaluate(pyet.max(x, axis=0), out=out) is out
    np.testing.assert_array_equal(out.numpy(), x.max(axis=0))


def test_repr_names_the_reduction():
    X = pyet.asarray(rand((2, 3)))
    assert repr(pyet.sum(X, axis=1, keepdims=True)) == \
        "sum(Tensor(shape=(2,3), dtype=float64), axis=(1,), keepdims=True)"
    assert repr(pyet.max(X)) == "max(Tensor(shape=(2,3), dtype=float64), axis=None)"


# ------------------------------------------------------------------ long axes, many blocks

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS)
def test_long_axes_cross_blocks(kind, dtype):
    # a leaf is folded in blocks of 8192 values where it lies, a tree in blocks of 512:
    # 9000-long rows take several blocks both ways, and every lane and chunk boundary
    x = rand((3, 9000), dtype, seed=4)
    y = rand((9000,), dtype, seed=5)
    X, Y = pyet.asarray(x), pyet.asarray(y)
    for axis in (None, 0, 1):
        check(kind, getattr(pyet, kind)(X, axis=axis), x, axis)
    tree = x ^ y if dtype is np.bool_ else x - y
    check(kind, getattr(pyet, kind)(X ^ Y if dtype is np.bool_ else X - Y, axis=1), tree, 1,
          tree="x - y")


@pytest.mark.parametrize("n", [1, 7, 8, 31, 32, 63, 64, 65, 127, 128, 129, 511, 512, 513, 8191,
                               8192, 8193])
def test_every_row_length_around_lane_chunk_and_block_sizes(n):
    x = rand((2, n), np.float64, seed=n)
    X = pyet.asarray(x)
    for kind in ("sum", "max", "min", "argmax", "prod"):
        check(kind, getattr(pyet, kind)(X, axis=1), x, 1)
        check(kind, getattr(pyet, kind)(X * 2.0, axis=1), x * 2.0, 1, tree="x * 2")
    ints = rand((2, n), np.int32, seed=n)
    for kind in ("sum", "max", "min", "any", "all"):
        check(kind, getattr(pyet, kind)(ints, axis=1), ints, 1)


# --------------------------------------------------------------------- float accuracy

def _max_rel_error(got, exact, mag):
    return float(np.max(np.abs(np.asarray(got, dtype=np.float64) - exact) / mag))


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def num_threads(request):
    before = pyet.get_num_threads()
    pyet.set_num_threads(request.param)
    yield pyet.get_num_threads()
    pyet.set_num_threads(before)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", ["rows", "columns", "all", "tree", "mean", "long"])
def test_float_sums_are_as_accurate_as_numpys_pairwise(case, dtype, num_threads):
    # positive values: the relative error of a sum is then its accuracy, not cancellation.
    # The worst relative error over the sums may exceed NumPy's by at most a quarter, plus an
    # ulp (NumPy's error on one sum may be 0 by luck; float32 sums, accumulated in float64, are
    # within half an ulp).  A sequential fold across blocks was 3-30 ulp off where NumPy's
    # pairwise sum is within one.  On one thread and on two (each folds its share).
    rng = np.random.default_rng(7)
    shape = (4_000_000,) if case == "long" else (64, 3000)
    a, b, c = (rng.random(shape).astype(dtype) for _ in range(3))
    A, B, C = pyet.asarray(a), pyet.asarray(b), pyet.asarray(c)
    axis = {"rows": 1, "columns": 0, "tree": 1, "mean": 1}.get(case)
    if case == "tree":
        x, got = a * b + c, pyet.sum(A * B + C, axis=axis)  # a*b + c: the same rounding
    elif case == "mean":
        x, got = a, pyet.mean(A, axis=axis)
    else:
        x, got = a, pyet.sum(A, axis=axis)
    mean = case == "mean"
    want = (np.mean if mean else np.sum)(x, axis=axis)
    exact, mag = exact_sum(x, axis, False, mean=mean)
    got = np.asarray(got)
    assert got.dtype == want.dtype
    eps = float(np.finfo(dtype).eps)
    err_pyet, err_numpy = _max_rel_error(got, exact, mag), _max_rel_error(want, exact, mag)
    assert err_pyet <= 1.25 * err_numpy + eps, (err_pyet / eps, err_numpy / eps)


def test_sum_of_a_tree_over_millions_of_values_to_half_an_ulp(num_threads):
    # before the fold summed blocks pairwise and compensated across them, this was ~16 ulp off
    rng = np.random.default_rng(8)
    a, b, c = (rng.random(2_000_000) for _ in range(3))
    exact = math.fsum(a * b + c)
    got = float(np.asarray(pyet.sum(pyet.asarray(a) * b + c)))
    assert abs(got - exact) <= 0.5 * math.ulp(exact) + 1e-9 * math.ulp(exact)


def test_float32_sums_accumulate_in_float64():
    # 2**24 + 1 is not a float32: a float32 accumulator would stall at 2**24
    x = np.ones(2**24 + 4096, np.float32)
    got = np.asarray(pyet.sum(x))
    assert got.dtype == np.float32
    assert got == np.float32(2**24 + 4096)
    assert np.asarray(pyet.mean(x)) == np.float32(1)


def test_integer_sums_and_products_wrap_as_numpys():
    big = np.full(10, 2**62, np.int64)
    check("sum", pyet.sum(big), big)
    threes = np.full(50, 3, np.int32)  # 3**50 wraps in int64
    check("prod", pyet.prod(threes), threes)
    check("prod", pyet.prod(np.full(70, 2, np.int64)), np.full(70, 2, np.int64))
    i32 = np.full(5, 2**31 - 1, np.int32)
    check("sum", pyet.sum(i32), i32)  # int32 sums are int64: no wrap
    check("max", pyet.max(np.array([-(2**63), 2**63 - 1], np.int64)),
          np.array([-(2**63), 2**63 - 1], np.int64))


# ------------------------------------------------------------------ NaN, inf and ties

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kind", KINDS)
def test_nan_as_numpy(kind, dtype):
    # NaN first, in the middle of a lane loop, in the last partial block, alone, everywhere
    x = rand((6, 9000), dtype, seed=9)
    x[0, 0] = np.nan
    x[1, 4321] = np.nan
    x[1, 7000] = np.nan
    x[2, 8999] = np.nan
    x[3, :] = np.nan
    x[4, 100] = np.nan
    x[4, 50] = np.inf
    X = pyet.asarray(x)
    for axis in (None, 0, 1, -1):
        check(kind, getattr(pyet, kind)(X, axis=axis), x, axis)
        check(kind, getattr(pyet, kind)(X * 1.0, axis=axis), x, axis, tree="x * 1")
    check(kind, getattr(pyet, kind)(X[:, 4000:4400], axis=1), x[:, 4000:4400], 1)


@pytest.mark.parametrize("kind", ["argmax", "argmin"])
def test_arg_reductions_return_the_first_nan(kind):
    x = np.array([[1.0, np.nan, 5.0, np.nan], [np.nan, 2.0, 3.0, 0.0], [9.0, 1.0, 9.0, 1.0]])
    got = np.asarray(getattr(pyet, kind)(x, axis=1))
    np.testing.assert_array_equal(got, [1, 0, 0 if kind == "argmax" else 1])
    check(kind, getattr(pyet, kind)(x, axis=1), x, 1)
    check(kind, getattr(pyet, kind)(x), x)
    check(kind, getattr(pyet, kind)(x + 1.0, axis=0), x + 1.0, 0, tree="x + 1")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ARG)
def test_arg_reductions_over_all_axes_of_trees(kind, dtype):
    # a tree is folded along its last axis, or along its longest when the last is short, and
    # the first flat index is picked among the candidates left: many ties, NaN on some rows
    for seed, shape in enumerate(((70, 3), (5, 80, 3), (3, 2, 100), (66,), (2, 3, 4, 5))):
        x = layout(rand(shape, dtype, seed), "F" if seed % 2 else "C")
        if dtype in FLOATS and seed >= 2:
            x = x.copy()
            x.flat[[7, 40]] = np.nan
        for keepdims in (False, True):
            e = getattr(pyet, kind)(pyet.asarray(x) * 1, keepdims=keepdims)
            check(kind, e, x, None, keepdims, tree="x * 1")


@pytest.mark.parametrize("dtype", DTYPES)
def test_ties_give_the_first_index(dtype):
    x = np.zeros((3, 200), dtype)
    x[0, [17, 90, 150]] = 1
    x[2, [0, 199]] = 1
    if dtype is not np.bool_:
        x[1, [40, 41]] = -1
    for kind in ARG:
        for axis in (None, 0, 1):
            check(kind, getattr(pyet, kind)(x, axis=axis), x, axis)
    np.testing.assert_array_equal(np.asarray(pyet.argmax(x, axis=1)), [17, 0, 0])


@pytest.mark.parametrize("kind", ["sum", "mean", "prod", "max", "min"])
def test_infinities(kind):
    x = np.array([[np.inf, 1.0, 2.0], [-np.inf, np.inf, 0.0], [1e308, 1e308, 1.0],
                  [-np.inf, -1.0, -np.inf]])
    wide = np.repeat(x, 3000, axis=1)  # and over many blocks, where sums are compensated
    with np.errstate(over="ignore", invalid="ignore"):
        for y in (x, wide):
            check(kind, getattr(pyet, kind)(y, axis=1), y, 1)
            check(kind, getattr(pyet, kind)(y[:1]), y[:1])


def test_all_and_any_of_floats_count_nan_as_true():
    x = np.array([[np.nan, 0.0], [0.0, 0.0], [np.nan, np.nan], [-0.0, 1.0]])
    for kind in ("all", "any"):
        check(kind, getattr(pyet, kind)(x, axis=1), x, 1)
        check(kind, getattr(pyet, kind)(x, axis=0), x, 0)


# ------------------------------------------------------------------------- empty axes

EMPTY = ((0,), (0, 5), (5, 0), (2, 0, 3))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["sum", "prod", "all", "any"])
def test_empty_reductions_give_the_identity(kind, dtype):
    for shape in EMPTY:
        x = np.zeros(shape, dtype)
        for axis in [None, *range(len(shape)), ()]:
            for keepdims in (False, True):
                check(kind, getattr(pyet, kind)(x, axis=axis, keepdims=keepdims), x, axis,
                      keepdims)
    assert np.asarray(getattr(pyet, kind)(np.zeros(0, dtype))) == {
        "sum": 0, "prod": 1, "all": True, "any": False}[kind]


@pytest.mark.parametrize("dtype", DTYPES)
def test_mean_of_empty_is_nan_with_numpys_warning(dtype):
    for shape, axis in (((0,), None), ((0, 5), 0), ((5, 0), 1), ((5, 0), None), ((2, 0, 3), 1)):
        x = np.zeros(shape, dtype)
        with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
            got = np.asarray(pyet.mean(x, axis=axis))
        want = np_reduce("mean", x, axis)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert np.all(np.isnan(got)) and np.all(np.isnan(want))
    x = np.zeros((0, 5))
    check("mean", pyet.mean(x, axis=1), x, 1)  # nothing averaged over an empty axis: no warning


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["max", "min", "argmax", "argmin"])
def test_empty_axes_of_max_min_arg_raise(kind, dtype):
    ufunc = {"max": "maximum", "min": "minimum"}.get(kind)
    msg = f"zero-size array to reduction operation {ufunc} which has no identity" if ufunc \
        else f"attempt to get {kind} of an empty sequence"
    for shape, axis in (((0,), None), ((0,), 0), ((0, 5), 0), ((5, 0), 1), ((5, 0), None),
                        ((2, 0, 3), 1), ((2, 0, 3), -2)):
        x = np.zeros(shape, dtype)
        with pytest.raises(ValueError, match=msg):
            getattr(np, kind)(x, axis=axis)
        with pytest.raises(ValueError, match=msg):
            getattr(pyet, kind)(x, axis=axis)
    for shape, axis in (((0, 5), 1), ((5, 0), 0), ((2, 0, 3), 2)):  # a non-empty axis: fine
        x = np.zeros(shape, dtype)
        check(kind, getattr(pyet, kind)(x, axis=axis), x, axis)
    if kind not in ARG:
        x = np.zeros((0, 3), dtype)
        check(kind, getattr(pyet, kind)(x, axis=()), x, ())


def test_empty_reduction_raises_before_writing():
    out = np.full(5, 7.0)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        pyet.asarray(out)[...] = pyet.max(np.zeros((0, 5)), axis=0) + 1
    np.testing.assert_array_equal(out, 7.0)


# -------------------------------------------------------------------------- axis errors

@pytest.mark.parametrize("kind", KINDS)
def test_axis_out_of_range_raises_axis_error(kind):
    x = np.ones((2, 3))
    for axis in (2, -3, 5):
        with pytest.raises(np.exceptions.AxisError, match=f"axis {axis} is out of bounds "
                           "for array of dimension 2"):
            getattr(pyet, kind)(x, axis=axis)
    if kind not in ARG:
        with pytest.raises(np.exceptions.AxisError, match="axis -3 is out of bounds"):
            getattr(pyet, kind)(x, axis=(0, -3))
    with pytest.raises(np.exceptions.AxisError, match="axis 1 is out of bounds for array of "
                       "dimension 0"):
        getattr(pyet, kind)(np.array(1.0), axis=1)


def test_axis_0_of_0d_as_numpy():
    # NumPy's reductions take axis 0 and -1 of a 0-d array (np.mean and tuples do not)
    x = np.array(4.0)
    with pytest.raises(np.exceptions.AxisError):
        np.mean(x, axis=0)
    with pytest.raises(np.exceptions.AxisError, match="axis 0 is out of bounds"):
        pyet.mean(x, axis=0)
    with pytest.raises(np.exceptions.AxisError, match="axis 0 is out of bounds"):
        pyet.sum(x, axis=(0,))
    check("sum", pyet.sum(x, axis=-1), x, -1)
    check("argmax", pyet.argmax(x, axis=0, keepdims=True), x, 0, True)


@pytest.mark.parametrize("kind", [k for k in KINDS if k not in ARG])
def test_duplicate_axes_raise(kind):
    x = np.ones((2, 3, 4))
    for axis in ((0, 0), (1, -2), (0, 2, -1)):
        with pytest.raises(ValueError, match="duplicate value in 'axis'"):
            np.sum(x, axis=axis)
        with pytest.raises(ValueError, match="duplicate value in 'axis'"):
            getattr(pyet, kind)(x, axis=axis)


@pytest.mark.parametrize("kind", KINDS)
def test_non_integer_axes_raise_type_error(kind):
    x = np.ones((2, 3))
    msg = "integer" if kind not in ARG else f"{kind} takes one integer axis or None"
    for axis in (1.0, "1", (0, 1.5)):
        with pytest.raises(TypeError, match=msg):
            getattr(pyet, kind)(x, axis=axis)
    if kind in ARG:
        with pytest.raises(TypeError, match=r"argm\w+ takes one integer axis or None, got \(0,\)"):
            getattr(pyet, kind)(x, axis=(0,))


def test_unsupported_dtype_raises_type_error():
    with pytest.raises(TypeError, match="pyet does not support dtype complex128"):
        pyet.sum(np.ones(3, complex))
    with pytest.raises(TypeError, match="pyet does not support dtype uint8"):
        pyet.max(np.ones(3, np.uint8))


# ------------------------------------------------------------------- reductions of trees

@pytest.mark.parametrize("kind", KINDS)
def test_reductions_of_trees(kind):
    a = rand((6, 70), np.float64, 1)
    b = layout(rand((6, 70), np.float64, 2), "neg")
    c = rand((70,), np.float64, 3)  # broadcast along rows
    i = layout(rand((6, 70), np.int32, 4), "strided")
    A, B, C, Ints = map(pyet.asarray, (a, b, c, i))
    trees = [
        (A * B + C, a * b + c, "a*b + c"),
        (A * 2.0 - 1.5, a * 2.0 - 1.5, "a*2 - 1.5"),
        (Ints * 3 + 1, i * 3 + 1, "i*3 + 1 (int32)"),
        (Ints * A, i * a, "i * a (int32 * float64)"),
        (pyet.where(A > 0, A, C), np.where(a > 0, a, c), "where(a > 0, a, c)"),
        (A > B, a > b, "a > b (bool)"),
        (pyet.exp(A) - pyet.abs(B), np.exp(a) - np.abs(b), "exp(a) - abs(b)"),
        (A.astype(np.float32) * 2, a.astype(np.float32) * 2, "a.astype(float32) * 2"),
    ]
    for e, x, text in trees:
        # the reduction is checked on the tree's values as pyet computes them elementwise
        # (its exp may differ from NumPy's by an ulp); those are checked against NumPy's here
        values = np.asarray(e)
        np.testing.assert_allclose(values, x, rtol=4e-16, atol=0, err_msg=text)
        x = values
        for axis in [None, 0, 1, -1] + ([(0, 1)] if kind not in ARG else []):
            for keepdims in (False, True):
                check(kind, getattr(pyet, kind)(e, axis=axis, keepdims=keepdims), x, axis,
                      keepdims, tree=text)


def test_reduction_reads_an_exp_tree_once_per_element():
    # values of the fused tree equal NumPy's step-by-step ones: same kernels, same rounding
    x = rand((3, 1000), np.float32, 6)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    check("sum", pyet.sum(pyet.exp(x - pyet.max(x, axis=1, keepdims=True)), axis=1), e, 1,
          tree="exp(x - max(x))")


def test_reductions_of_reductions():
    x = rand((5, 6, 70), np.float64, 2)
    X = pyet.asarray(x)
    check("max", pyet.max(pyet.sum(X, axis=2)), x.sum(axis=2), tree="sum(x, axis=2)")
    check("sum", pyet.sum(pyet.sum(X, axis=0), axis=0), x.sum(axis=0), 0, tree="sum(x, 0)")
    check("argmin", pyet.argmin(pyet.mean(X, axis=1), axis=1), x.mean(axis=1), 1,
          tree="mean(x, 1)")
    got = np.asarray(pyet.sum(X - pyet.mean(X, axis=(0, 2), keepdims=True), axis=(0, 2)))
    np.testing.assert_allclose(got, 0.0, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_reductions_of_products(kind):
    a, b, c = rand((5, 7), np.float64, 1), rand((7, 70), np.float64, 2), rand((5, 70), seed=3)
    A, B, C = map(pyet.asarray, (a, b, c))
    p = a @ b
    for e, x, text in ((pyet.dot(A, B), p, "dot(a, b)"), (A @ B + C, p + c, "a @ b + c"),
                       (2.0 * pyet.dot(A, B), 2.0 * p, "2 * dot(a, b)")):
        for axis in (None, 0, 1):
            got = np.asarray(getattr(pyet, kind)(e, axis=axis))
            want = np_reduce(kind, x, axis)
            assert got.dtype == want.dtype and got.shape == want.shape
            if kind in ("sum", "mean", "prod"):  # BLAS's rounding may differ from NumPy's
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=text)
            else:
                np.testing.assert_array_equal(got, want, err_msg=text)
    ia, ib = rand((5, 7), np.int32, 4), rand((7, 3), np.int32, 5)
    check(kind, getattr(pyet, kind)(pyet.dot(ia, ib), axis=0), ia @ ib, 0, tree="dot (int32)")


# ----------------------------------------------------------------- reductions inside trees

def test_reductions_inside_trees():
    x = layout(rand((6, 70), np.float64, 1), "strided")
    X = pyet.asarray(x)
    cases = [
        (X - pyet.max(X, axis=1, keepdims=True), x - x.max(axis=1, keepdims=True)),
        (X - pyet.mean(X, axis=0), x - x.mean(axis=0)),  # broadcast without keepdims
        (X / pyet.sum(X, axis=0), x / x.sum(axis=0)),
        (pyet.sum(X, axis=1, keepdims=True) * 2 + X, x.sum(axis=1, keepdims=True) * 2 + x),
        (X * pyet.max(X), x * x.max()),  # a 0-d reduction
        (pyet.where(X == pyet.max(X, axis=0), 1.0, 0.0), np.where(x == x.max(axis=0), 1.0, 0.0)),
        (pyet.argmax(X, axis=1) + 1, x.argmax(axis=1) + 1),
        (pyet.any(X > 1.05, axis=1) | pyet.all(X < 0, axis=1),
         np.any(x > 1.05, axis=1) | np.all(x < 0, axis=1)),
    ]
    for e, want in cases:
        got = np.asarray(e)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)


def test_reduction_in_a_tree_refuses_mismatched_shapes():
    x = np.ones((4, 5))
    with pytest.raises(ValueError, match=r"could not be broadcast together with shapes "
                       r"\(4,5\) \(4,\)"):
        pyet.asarray(x) - pyet.max(x, axis=1)


# ------------------------------------------------------------------------- destinations

def test_reductions_into_strided_and_reversed_destinations():
    x = rand((6, 70), np.float64, 1)
    for dst in (np.full(12, np.nan)[::2], np.full(6, np.nan)[::-1], np.full((6, 3), np.nan)[:, 1]):
        pyet.asarray(dst)[...] = pyet.sum(x, axis=1)
        check("sum", dst, x, 1)
    big = np.full((6, 140), np.nan)
    pyet.asarray(big)[:, ::2] = pyet.max(x * 2, axis=0, keepdims=True)  # broadcast into rows
    np.testing.assert_array_equal(big[:, ::2], np.broadcast_to((x * 2).max(0), (6, 70)))
    assert np.isnan(big[:, 1::2]).all()


def test_reduction_cast_into_the_destinations_dtype():
    x = rand((4, 70), np.float64, 1)
    out = np.empty(4, np.float32)
    pyet.asarray(out)[...] = pyet.sum(x, axis=1)
    np.testing.assert_array_equal(out, x.sum(axis=1).astype(np.float32))
    i = rand((4, 70), np.int32, 2)
    out32 = np.empty(4, np.int32)
    pyet.asarray(out32)[...] = pyet.sum(i, axis=1)  # int64 -> int32: same_kind
    np.testing.assert_array_equal(out32, i.sum(axis=1).astype(np.int32))


def test_reduction_destination_errors_leave_it_untouched():
    x = rand((4, 70))
    out = np.full(3, 7.0)
    with pytest.raises(ValueError, match=r"cannot evaluate an expression of shape \(4,\) into "
                       r"a destination of shape \(3,\)"):
        pyet.asarray(out)[...] = pyet.sum(x, axis=1)
    ints = np.full(4, 7, np.int64)
    with pytest.raises(TypeError, match="cannot cast the expression's float64 result to the "
                       "destination's int64"):
        pyet.asarray(ints)[...] = pyet.mean(rand((4, 5), np.int32), axis=1)
    np.testing.assert_array_equal(out, 7.0)
    np.testing.assert_array_equal(ints, 7)


def test_reductions_with_inplace_operators():
    x = rand((5, 70), np.float64, 1)
    base = rand((70,), np.float64, 2)
    t = pyet.asarray(base.copy())
    t += pyet.sum(x, axis=0)
    np.testing.assert_allclose(t.numpy(), base + x.sum(axis=0), rtol=1e-14)
    t -= pyet.max(x, axis=0)
    np.testing.assert_allclose(t.numpy(), base + x.sum(axis=0) - x.max(axis=0), rtol=1e-14)
    m = rand((5, 70), np.float64, 3)
    M = pyet.asarray(m.copy())
    M[::2] += pyet.mean(x[::2], axis=1, keepdims=True)  # a strided destination
    want = m.copy()
    want[::2] += x[::2].mean(axis=1, keepdims=True)
    np.testing.assert_allclose(M.numpy(), want, rtol=1e-14)
    M[...] *= pyet.max(M, axis=0)  # the destination is the reduced operand
    want *= want.max(axis=0)
    np.testing.assert_allclose(M.numpy(), want, rtol=1e-14)


def test_destination_aliasing_the_operand():
    x = rand((6, 70), np.float64, 1)
    for e_fn, np_fn in (
        (lambda X: X - pyet.max(X, axis=1, keepdims=True), lambda v: v - v.max(1, keepdims=True)),
        (lambda X: X / pyet.sum(X, axis=0), lambda v: v / v.sum(0)),
        (lambda X: pyet.sum(X, axis=0, keepdims=True), lambda v: v.sum(0, keepdims=True)),
        (lambda X: pyet.softmax(X), lambda v: _np_softmax(v, -1)),
    ):
        y = x.copy()
        Y = pyet.asarray(y)
        Y[...] = e_fn(Y)
        want = x.copy()
        want[...] = np_fn(want)
        np.testing.assert_allclose(y, want, rtol=1e-14, atol=1e-16)
    # a row of the operand receives the reduction of all rows
    y = x.copy()
    Y = pyet.asarray(y)
    Y[0] = pyet.sum(Y, axis=0)
    want = x.copy()
    want[0] = want.sum(axis=0)
    np.testing.assert_allclose(y, want, rtol=1e-14)
    # a reversed view of the operand
    y = x.copy()
    pyet.asarray(y)[::-1, 0] = pyet.max(y, axis=1)
    want = x.copy()
    want[::-1, 0] = want.max(axis=1)
    np.testing.assert_array_equal(y, want)


# ------------------------------------------------------------------------ MShadow's names

@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_rows(dtype):
    for shape in ((), (7,), (4, 70), (3, 5, 66)):
        x = layout(rand(shape, dtype), "neg")
        check("sum", pyet.sum_rows(x), x, tuple(range(x.ndim - 1)))
        check("sum", pyet.sum_rows(pyet.asarray(x) * 2), x * 2, tuple(range(x.ndim - 1)),
              tree="x * 2")


@pytest.mark.parametrize("dtype", DTYPES)
def test_sumall_except_dim_and_reduce_except_dim(dtype):
    x = layout(rand((3, 5, 66), dtype, 1), "strided")
    for dim in (0, 1, 2, -1, -3):
        rest = tuple(a for a in range(3) if a != dim % 3)
        check("sum", pyet.sumall_except_dim(x, dim), x, rest)
        for op in ("sum", "mean", "prod", "max", "min", "all", "any"):
            check(op, pyet.reduce_except_dim(x, dim, op), x, rest)
    assert np.asarray(pyet.sumall_except_dim(x, 1)).shape == (5,)
    y = rand((4, 70), dtype, 2)
    check("max", pyet.reduce_except_dim(pyet.asarray(y) * 1, 0, "max"), y * 1, 1, tree="y * 1")


def test_mshadow_name_errors():
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match=r"reduce_except_dim: unknown op 'argmax'; one of "
                       r"\['all', 'any', 'max', 'mean', 'min', 'prod', 'sum'\]"):
        pyet.reduce_except_dim(x, 0, "argmax")
    for dim in (2, -3):
        with pytest.raises(np.exceptions.AxisError, match=f"axis {dim} is out of bounds for "
                           "array of dimension 2"):
            pyet.sumall_except_dim(x, dim)


# --------------------------------------------------------------------------------- softmax

def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _np_log_softmax(x, axis):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("lay", ["C", "F", "strided", "neg"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_and_log_softmax_match_numpy(dtype, lay):
    rtol = 2e-6 if dtype == np.float32 else 1e-14
    for shape in ((9,), (6, 70), (3, 4, 66)):
        x = layout(rand(shape, dtype, 3) * 4, lay)
        for axis in range(-x.ndim, x.ndim):
            for fn, ref in ((pyet.softmax, _np_softmax), (pyet.log_softmax, _np_log_softmax)):
                got = np.asarray(fn(x, axis=axis))
                want = ref(x, axis)
                assert got.dtype == want.dtype == dtype and got.shape == want.shape
                # log_softmax subtracts log(sum) from x - max: its error scales with |x|
                np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 20,
                                           err_msg=f"{fn.__name__} axis={axis}")
        got = np.asarray(pyet.softmax(x))  # the default: the last axis
        np.testing.assert_allclose(got, _np_softmax(x, -1), rtol=rtol)


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_is_finite_for_large_inputs(dtype):
    x = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4], [1e4, 1e4, -1e4]], dtype)
    s = np.asarray(pyet.softmax(x, axis=1))
    ls = np.asarray(pyet.log_softmax(x, axis=1))
    assert np.isfinite(s).all() and np.isfinite(ls).all()
    np.testing.assert_allclose(s, [[1, 0, 0], [1 / 3] * 3, [0.5, 0.5, 0]], rtol=1e-6, atol=0)
    np.testing.assert_allclose(ls, [[0, -2e4, -1e4], [-np.log(3)] * 3,
                                    [-np.log(2), -np.log(2), -2e4 - np.log(2)]], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(pyet.softmax(x, axis=0)), _np_softmax(x, 0), rtol=1e-6)


def test_softmax_inside_trees_and_of_trees():
    x = rand((5, 70), np.float64, 4)
    X = pyet.asarray(x)
    np.testing.assert_allclose(np.asarray(2 * pyet.softmax(X) + 1), 2 * _np_softmax(x, -1) + 1,
                               rtol=1e-14)
    np.testing.assert_allclose(np.asarray(pyet.sum(pyet.softmax(X, axis=0), axis=0)), 1.0,
                               rtol=1e-14)
    np.testing.assert_allclose(np.asarray(pyet.softmax(X * 3 - 1, axis=0)),
                               _np_softmax(x * 3 - 1, 0), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(pyet.exp(pyet.log_softmax(X))), _np_softmax(x, -1),
                               rtol=1e-13)
    i = rand((4, 70), np.int32, 5)  # ints: float64, as NumPy's exp of ints
    got = np.asarray(pyet.softmax(i))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, _np_softmax(i, -1), rtol=1e-14)


def test_softmax_errors():
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds for array of "
                       "dimension 2"):
        pyet.softmax(np.ones((2, 3)), axis=2)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        pyet.softmax(np.ones((3, 0)))
    got = np.asarray(pyet.softmax(np.ones((0, 3))))  # empty, along a non-empty axis
    assert got.shape == (0, 3)


# --------------------------------------------------------------------------------- threads

@pytest.fixture
def two_threads():
    """Two threads for reductions above 64 values per thread, even on a busy machine
    (reduce_threads asks the pool); the settings restored after."""
    with pyet_threads(2) as n:
        if n < 2:
            pytest.skip("pyet built without OpenMP")
        dynamic = _parallel.get_dynamic()
        _parallel.set_min_per_thread(64)
        _parallel.set_dynamic(False)
        yield
        _parallel.set_min_per_thread(1 << 16)
        _parallel.set_dynamic(dynamic)


def _one_thread(fn):
    before = pyet.get_num_threads()
    pyet.set_num_threads(1)
    try:
        return fn()
    finally:
        pyet.set_num_threads(before)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS)
def test_threaded_reductions(two_threads, kind, dtype):
    x = layout(rand((7, 1100), dtype, 11), "neg")
    a, b = rand((7, 1100), dtype, 12), rand((1100,), dtype, 13)
    assert _plan.reduce_threads(x.size) == 2
    for axis in (None, 0, 1):
        e = getattr(pyet, kind)(x, axis=axis)
        got = np.asarray(e)
        check(kind, got, x, axis)
        np.testing.assert_array_equal(np.asarray(e), got)  # the same result every run
        single = _one_thread(lambda: np.asarray(getattr(pyet, kind)(x, axis=axis)))  # noqa: B023
        if got.dtype.kind == "f" and kind in ("sum", "mean", "prod"):
            np.testing.assert_allclose(got, single, rtol=1e-5 if got.dtype == np.float32
                                       else 1e-13)
        else:
            np.testing.assert_array_equal(got, single)
        tree = (a & b) if dtype is np.bool_ else a * b + b
        e = getattr(pyet, kind)((pyet.asarray(a) & b) if dtype is np.bool_ else
                                pyet.asarray(a) * b + b, axis=axis)
        check(kind, e, tree, axis, tree="a*b + b")


def test_threaded_reductions_on_large_inputs_with_the_default_threshold():
    with pyet_threads(2) as n:
        if n < 2:
            pytest.skip("pyet built without OpenMP")
        x = rand((600, 1000), np.float64, 14)
        dynamic = _parallel.get_dynamic()
        _parallel.set_dynamic(False)  # (on a busy machine the pool would give one)
        try:
            assert _plan.reduce_threads(x.size) == 2
            X = pyet.asarray(x)
            for kind in ("sum", "mean", "max", "min", "argmin", "any"):
                for axis in (None, 0, 1):
                    e = getattr(pyet, kind)(X * 1.0 + 0.0, axis=axis)
                    first = np.asarray(e)
                    check(kind, first, x, axis, tree="x*1 + 0")
                    np.testing.assert_array_equal(np.asarray(e), first)
            s = np.asarray(pyet.softmax(X))
            np.testing.assert_allclose(s, _np_softmax(x, -1), rtol=1e-14)
        finally:
            _parallel.set_dynamic(dynamic)


# ------------------------------------------------------------------------- memory use

@pytest.mark.parametrize("kind", KINDS)
def test_reduction_of_a_tree_makes_no_full_size_temporary(kind):
    # NumPy reports its allocations to tracemalloc: a materialized a*b + c would be 4 MB
    a, b, c = (rand((500, 1000), np.float64, s) for s in (1, 2, 3))
    A, B, C = map(pyet.asarray, (a, b, c))
    for axis in (None, 0, 1):
        e = getattr(pyet, kind)(A * B + C, axis=axis)
        np.asarray(e)  # programs compiled, caches warm
        tracemalloc.start()
        try:
            got = np.asarray(e)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < a.nbytes / 20, (kind, axis, peak)
        check(kind, got, a * b + c, axis, tree="a*b + c")


def test_softmax_makes_no_full_size_temporary():
    x = rand((500, 1000), np.float32, 4)
    out = np.empty_like(x)
    Out, X = pyet.asarray(out), pyet.asarray(x)
    Out[...] = pyet.softmax(X)
    tracemalloc.start()
    try:
        Out[...] = pyet.softmax(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < x.nbytes / 20, peak
    np.testing.assert_allclose(out, _np_softmax(x, -1), rtol=2e-6)


# ------------------------------------------------------------------------------ hypothesis

@st.composite
def reduction_cases(draw):
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    if ndim and draw(st.booleans()):  # one long axis: the lane and block paths
        k = draw(st.integers(0, ndim - 1))
        shape = shape[:k] + (draw(st.integers(60, 700)),) + shape[k + 1:]
    dtype = draw(st.sampled_from(DTYPES))
    kind = draw(st.sampled_from(KINDS))
    if kind in ARG or draw(st.booleans()):
        axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1))) if ndim else None
    else:
        axis = tuple(draw(st.permutations(range(ndim)))[:draw(st.integers(0, ndim))])
        axis = tuple(a - ndim if draw(st.booleans()) else a for a in axis)
    perm = draw(st.permutations(range(ndim)))
    flips = draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim))
    step = draw(st.sampled_from([1, 2]))
    return shape, dtype, kind, axis, draw(st.booleans()), perm, flips, step, draw(st.booleans())


@pytest.mark.filterwarnings("ignore:Mean of empty slice")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reduction_cases(), st.integers(0, 2**32 - 1))
def test_hypothesis_reductions_match_numpy(case, seed):
    shape, dtype, kind, axis, keepdims, perm, flips, step, as_tree = case
    # a view with permuted axes, flipped axes and steps over a bigger array
    base_shape = tuple(shape[p] for p in np.argsort(perm)) if shape else ()
    big = rand(tuple(n * step for n in base_shape), dtype, seed % 1000)
    base = big[(slice(None, None, step),) * len(base_shape)]
    x = np.transpose(base, perm) if shape else base
    x = x[tuple(slice(None, None, -1) if f else slice(None) for f in flips)]
    assert x.shape == shape
    X = pyet.asarray(x)
    e, v = (X * 1 + 0, x * 1 + 0) if as_tree and dtype is not np.bool_ else (X, x)
    try:
        want = np_reduce(kind, v, axis, keepdims)
    except (ValueError, TypeError) as exc:
        with pytest.raises(type(exc)):
            np.asarray(getattr(pyet, kind)(e, axis=axis, keepdims=keepdims))
        return
    check(kind, getattr(pyet, kind)(e, axis=axis, keepdims=keepdims), v, axis, keepdims,
          want=want, tree="x*1 + 0" if e is not X else None)


@pytest.mark.filterwarnings("ignore:Mean of empty slice")
@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min", "mean", "all", "any"])
@pytest.mark.parametrize("shape,axis", [((0, 64, 4), (1, 2)), ((0, 700), 1), ((3, 0, 300), (2,)),
                                        ((0, 64, 4), (2,))])
@pytest.mark.parametrize("order", ["C", "F"])
def test_empty_kept_axes_over_long_trailing_rows(kind, shape, axis, order):
    # no element kept, rows long enough for the row folds: NumPy's empty result
    # (the trailing axes merged by reshape(..., -1) raised ValueError on size 0)
    x = np.zeros(shape, np.float64, order=order)
    want = getattr(np, kind)(x, axis=axis)
    got = np.asarray(getattr(pyet, kind)(pyet.asarray(x), axis=axis))
    assert got.shape == want.shape and got.dtype == want.dtype
