"""Fast paths added for issue 15's remaining cliffs, against NumPy on the layouts that
used to be slow: reversed rows gathered with a vectorized reverse copy, max/min folded
several rows at a time (vectorized NaN-aware selects), float32 sums and means across
rows in float32 (NumPy's order: the same bits), and reductions folded straight into the
destination at the root.  No timing here: bench/bench_grid.py measures.
"""

import numpy as np
import pytest

import pyet

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest's


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(bits(got), bits(want))


def assert_equal_values(got, want):
    """Equal values, NaN where NumPy's is (a -0.0/0.0 tie in a reduction has
    the sign NumPy's lane order happens to give: not compared)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def special_floats(dt, n, rng):
    """n values with NaN, +-inf, -0.0, 0.0 and ties sprinkled in."""
    v = rng.standard_normal(n).astype(dt)
    picks = rng.integers(0, n, n // 7)
    v[picks[0::5]] = np.nan
    v[picks[1::5]] = np.inf
    v[picks[2::5]] = -np.inf
    v[picks[3::5]] = -0.0
    v[picks[4::5]] = 0.0
    return v


# ----------------------------------------------------------- reversed rows

REVERSED = {
    "2-D both axes": lambda a: a[::-1, ::-1],
    "last axis": lambda a: a[:, ::-1],
    "last axis, step -2": lambda a: a[:, ::-2],
    "odd sizes": lambda a: a[1:-2, -2:0:-1],
}


@pytest.mark.parametrize("layout", REVERSED)
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_reversed_operands_into_forward_destination(layout, dt):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((37, 1100)) * 100).astype(dt)
    b = (rng.standard_normal((37, 1100)) * 100).astype(dt)
    x, y = REVERSED[layout](a), REVERSED[layout](b)
    X, Y = pyet.asarray(x), pyet.asarray(y)
    if dt == np.bool_:
        pairs = [(X & Y, x & y), (X ^ Y, x ^ y)]
    elif np.dtype(dt).kind == "i":
        pairs = [(abs(X), np.abs(x)), (X & Y, x & y), (X + Y, x + y)]
    else:
        pairs = [(abs(X), np.abs(x)), (pyet.maximum(X, Y), np.maximum(x, y)), (X + Y, x + y)]
    for e, want in pairs:
        out = np.empty(want.shape, want.dtype)
        pyet.evaluate(e, out=out)
        assert_same(out, want)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int64])
def test_reversed_destination_and_mixed_directions(dt):
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((9, 700)) * 50).astype(dt)
    b = (rng.standard_normal((9, 700)) * 50).astype(dt)
    want = a[:, ::-1] + b
    buf = np.zeros((9, 700), dt)
    pyet.evaluate(pyet.asarray(a[:, ::-1]) + pyet.asarray(b), out=buf[:, ::-1])
    assert_same(buf[:, ::-1], want)
    # a forward operand with a reversed one, destination forward
    out = np.empty((9, 700), dt)
    pyet.evaluate(pyet.asarray(a) * pyet.asarray(b[::-1, ::-1]), out=out)
    assert_same(out, a * b[::-1, ::-1])


# ----------------------------------------------------------- max/min folds

LAYOUTS = {
    "C": lambda a: a,
    "F": np.asfortranarray,
    "transposed": lambda a: a.T,
    "reversed": lambda a: a[::-1, ::-1],
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("shape", [(203, 1000), (6, 1500), (1000, 9)])
def test_float_max_min_across_and_along_rows_nan_aware(layout, dt, kind, shape):
    rng = np.random.default_rng(5)
    a = LAYOUTS[layout](special_floats(dt, shape[0] * shape[1], rng).reshape(shape))
    A = pyet.asarray(a)
    for axis in (0, 1, None):
        assert_equal_values(getattr(pyet, kind)(A, axis=axis), getattr(np, kind)(a, axis=axis))


@pytest.mark.parametrize("kind", ["max", "min"])
def test_max_min_rows_with_nan_in_each_of_four_rows(kind):
    # the four-row fold meets a NaN in row 0, 1, 2 or 3 of a group, and a
    # -0.0/0.0 tie, and must give NumPy's answer for each column
    # (600 columns: above the size NumPy's own reduction takes over)
    a = np.ones((8, 600), np.float32)
    for r in range(8):
        a[r, r] = np.nan
    a[:, 9] = [0.0, -0.0, 0.0, -0.0, -0.0, 0.0, -0.0, 0.0]
    a[3, 10], a[6, 11] = np.inf, -np.inf
    for x in (a, np.asfortranarray(a)):
        assert_equal_values(getattr(pyet, kind)(pyet.asarray(x), axis=0),
                            getattr(np, kind)(x, axis=0))


# ----------------------------------------------------------- float32 sums across rows


@pytest.mark.parametrize("layout", ["C axis 0", "F axis 1", "3-D axes (0, 1)"])
@pytest.mark.parametrize("kind", ["sum", "mean"])
def test_float32_sums_across_rows_are_numpys_bits(layout, kind):
    rng = np.random.default_rng(6)
    if layout == "C axis 0":
        a, axis = rng.standard_normal((1000, 300)).astype(np.float32), 0
    elif layout == "F axis 1":
        a, axis = np.asfortranarray(rng.standard_normal((300, 1000)).astype(np.float32)), 1
    else:
        a, axis = rng.standard_normal((40, 50, 64)).astype(np.float32), (0, 1)
    got = getattr(pyet, kind)(pyet.asarray(a), axis=axis)
    assert_same(got, getattr(np, kind)(a, axis=axis))


@pytest.mark.parametrize("kind", ["sum", "mean"])
def test_float32_sums_along_rows_keep_pairwise_accuracy(kind):
    # along a contiguous axis the float64 accumulator stays: as accurate as
    # NumPy's pairwise sum or better
    rng = np.random.default_rng(7)
    a = (rng.random((4, 200_000)) + 1000).astype(np.float32)
    exact = getattr(np, kind)(a.astype(np.float64), axis=1)
    got = np.asarray(getattr(pyet, kind)(pyet.asarray(a), axis=1), np.float64)
    err_np = np.abs(getattr(np, kind)(a, axis=1).astype(np.float64) - exact)
    assert np.all(np.abs(got - exact) <= err_np + 1e-3 * np.abs(exact) * 2.0 ** -23)


def test_float32_sum_of_an_expression_across_rows():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((500, 130)).astype(np.float32)
    b = rng.standard_normal((500, 130)).astype(np.float32)
    A, B = pyet.asarray(a), pyet.asarray(b)
    assert_same(pyet.sum(A * B + 1, axis=0), np.sum(a * b + 1, axis=0))
    # a broadcast row leaf does not decide the order: the full leaf does
    row = pyet.asarray(b[:1])
    np.testing.assert_allclose(pyet.evaluate(pyet.sum(row + A, axis=0)).numpy(),
                               np.sum(b[:1] + a, axis=0), rtol=1e-5)


# ----------------------------------------------------------- into the destination

DESTINATIONS = {  # (0-d: a 0-d array, its only layout)
    "new": None,
    "strided": lambda shape, dt: np.zeros(tuple(2 * s for s in shape), dt)[
        tuple(slice(None, None, 2) for _ in shape) or ...],
    "reversed": lambda shape, dt: np.zeros(shape, dt)[tuple(slice(None, None, -1)
                                                            for _ in shape) or ...],
}


@pytest.mark.parametrize("dest", DESTINATIONS)
@pytest.mark.parametrize("kind", ["sum", "mean", "prod", "max", "min"])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("axis,keepdims", [(0, False), (1, True), ((0, 2), False), (None, False),
                                           (None, True)])
def test_reduction_folded_into_destination(dest, kind, dt, axis, keepdims):
    rng = np.random.default_rng(9)
    a = (rng.random((6, 5, 700)) * 0.02 + 0.99 if np.dtype(dt).kind == "f"  # prod finite
         else rng.integers(-3, 4, (6, 5, 700))).astype(dt)
    want = getattr(np, kind)(a, axis=axis, keepdims=keepdims)
    e = getattr(pyet, kind)(pyet.asarray(a), axis=axis, keepdims=keepdims)
    if DESTINATIONS[dest] is None:
        got = pyet.evaluate(e).numpy()
    else:
        got = DESTINATIONS[dest](want.shape, want.dtype)
        pyet.evaluate(e, out=got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5 if dt == np.float32 else 1e-12)


def test_reduction_into_destination_that_the_operand_reads():
    # dst overlapping the operand: computed aside first (the engine's check)
    a = np.arange(12.0).reshape(3, 4)
    want = a.sum(axis=0)
    pyet.evaluate(pyet.sum(pyet.asarray(a), axis=0), out=a[0])
    np.testing.assert_array_equal(a[0], want)


@pytest.mark.parametrize("kind", ["sum", "mean", "prod", "max", "min", "all", "any"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (None, True), (0, False), (1, True)])
@pytest.mark.parametrize("shape", [(7, 9), (90, 700)])
def test_small_leaf_reductions_are_numpys(kind, axis, keepdims, shape):
    # at most SMALL_LEAF elements of a bare leaf: NumPy's own reduction, at the
    # root (into dst) and inside a tree (a scratch value), NumPy's bits
    from pyet._nodes.reductions import SMALL_LEAF

    assert np.prod(shape) <= SMALL_LEAF
    rng = np.random.default_rng(10)
    a = rng.integers(-5, 6, shape).astype(np.float32)
    if kind in ("sum", "mean"):  # rounding: the order of the additions shows
        a = a * rng.random(shape, np.float32)
    want = getattr(np, kind)(a, axis=axis, keepdims=keepdims)
    e = getattr(pyet, kind)(pyet.asarray(a), axis=axis, keepdims=keepdims)
    assert_same(pyet.evaluate(e).numpy(), want)
    assert_same(pyet.evaluate(e + 0).numpy(), want + 0)


def test_mean_of_empty_axis_into_destination_warns():
    a = np.empty((0, 3), np.float32)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        got = pyet.evaluate(pyet.mean(pyet.asarray(a), axis=0)).numpy()
    assert got.dtype == np.float32 and np.isnan(got).all()


# ----------------------------------------------------------- take into short rows


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 8, 15, 16, 17, 64])
def test_take_many_indices_into_short_rows(dt, width):
    # rows of 4, 8, 16 and 32 bytes copy with constant-size moves, shorter
    # than 64 bytes element by element, longer with memcpy
    rng = np.random.default_rng(width)
    w = (rng.standard_normal((50, width)) * 100).astype(dt)
    idx = rng.integers(-50, 50, 3000)
    want = w[idx]
    got = pyet.evaluate(pyet.take(idx, pyet.asarray(w))).numpy()
    assert_same(got, want)
    # a strided table and a strided destination take the element loop
    wide = np.repeat(w, 2, axis=1)[:, ::2]
    out = np.zeros((3000, 2 * width), dt)[:, ::2]
    pyet.evaluate(pyet.take(idx, pyet.asarray(wide)), out=out)
    assert_same(out, want)


# ------------------------------------------------- 0-d leaves read as scalars


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("other", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_zero_d_leaves_as_numpy(dt, other):
    # a 0-d leaf of the program's dtype is read from its bytes, any other
    # through NumPy's cast: the same bits either way
    x = np.array(3, dt) if dt is not np.bool_ else np.array(True)
    y = np.array(7.75, other) if other is not np.bool_ else np.array(True)
    want = np.asarray(x * y + x)
    got = pyet.evaluate(pyet.asarray(x) * pyet.asarray(y) + pyet.asarray(x)).numpy()
    assert_same(got, want)
    out = np.zeros((), want.dtype)
    pyet.asarray(out)[...] = pyet.asarray(x) * pyet.asarray(y) + pyet.asarray(x)
    assert_same(out, want)
    out = np.zeros((2, 3), want.dtype)  # broadcast into an array
    pyet.asarray(out)[...] = pyet.asarray(x) * pyet.asarray(y) + pyet.asarray(x)
    assert_same(out, np.broadcast_to(want, (2, 3)))
    # a 0-d destination that is also an operand
    d, z = x.copy(), y.astype(dt)
    pyet.asarray(d)[...] = pyet.asarray(d) * pyet.asarray(z) + pyet.asarray(d)
    assert_same(d, np.asarray(x * z + x))


@pytest.mark.parametrize("n", [1, 15, 63, 64, 65, 127, 128, 129, 511, 512, 513, 2000])
def test_small_pass_scratch_on_stack_as_numpy(n):
    # small passes keep their metadata (execute_group) and scratch (run_pass) on the
    # stack, larger ones on the heap: both sides of each size, strided (gathered)
    # operands, many leaves, and a destination that is an operand
    rng = np.random.default_rng(n)
    xs = [rng.standard_normal(2 * n)[::2] for _ in range(7)]
    want = (xs[0] * xs[1] + xs[2]) / (xs[3] - 2.5) + xs[4] * xs[5] - xs[6]
    t = [pyet.asarray(x) for x in xs]
    out = np.zeros(2 * n)[::2]
    pyet.asarray(out)[...] = (t[0] * t[1] + t[2]) / (t[3] - 2.5) + t[4] * t[5] - t[6]
    assert_same(out, want)
    d = xs[0].copy()
    td = pyet.asarray(d)
    td[...] = td[::-1] * 0.5 * t[1] + td
    assert_same(d, xs[0][::-1] * 0.5 * xs[1] + xs[0])


@pytest.mark.parametrize("shape", [(4, 5), (3, 4), (2, 3, 5), (6,)])
def test_tiny_assignment_shape_mismatch_writes_nothing(shape):
    # check_target reads dst's dims in place; a mismatch still raises first
    d = np.arange(15.0).reshape(3, 5)
    e = pyet.asarray(np.ones(shape)) * 2 + 1
    with pytest.raises(ValueError, match=r"cannot evaluate an expression of shape"):
        pyet.asarray(d)[...] = e
    assert_same(d, np.arange(15.0).reshape(3, 5))
    # what broadcasts is accepted
    pyet.asarray(d)[...] = pyet.asarray(np.ones((1, 5))) * 2 + pyet.asarray(np.ones(()))
    assert_same(d, np.full((3, 5), 3.0))
