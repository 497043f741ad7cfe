"""Reductions over one or more axes on several threads (core.reduce_into):
threads sharing one set of accumulators where the pass splits kept outer
dimensions (each accumulator folded by one thread, in one thread's order: the
result is the one-thread result bit for bit, straight into the destination
where it is the accumulator's dtype), and per-thread sets that start as a copy
of the first set where they cannot share; reduce_threads asking the thread
pool how many threads it would get.  NumPy is the oracle: every axis and
negative axis, keepdims, float32/float64/int32/int64/bool, C, Fortran,
strided, negative-step and broadcast operands, bare leaves and trees, NaN in
max and min, empty axes, destinations between sentinels, kept plans, and a
destination aliasing the operand."""

import numpy as np
import pytest
from conftest import pyet_threads
from test_reduce import check

import pyet
from pyet._core import core
from pyet._kernels import parallel
from pyet._nodes import reductions

DTYPES = (np.float32, np.float64, np.int32, np.int64, np.bool_)
KINDS = ("sum", "mean", "prod", "max", "min", "argmax", "argmin", "all", "any")
LAYOUTS = ("C", "F", "strided", "neg", "bcast")
# (24, 20, 18): outer dimensions the threads split (units 480 or 24) along the last and
# middle axes; (3, 40, 70): three units, which two threads split unevenly (per-thread sets)
SHAPES = ((24, 20, 18), (3, 40, 70))


@pytest.fixture(params=[2, 1], ids=["2 threads", "1 thread"])
def threads(request):
    """pyet on that many threads, even on small inputs and on a busy machine."""
    with pyet_threads(request.param):
        before = parallel.get_min_per_thread(), parallel.get_dynamic()
        parallel.set_min_per_thread(64)
        parallel.set_dynamic(False)
        try:
            yield request.param
        finally:
            parallel.set_min_per_thread(before[0])
            parallel.set_dynamic(before[1])


@pytest.fixture(params=[None, 16], ids=["blocks", "blocks of 16"])
def block(request):
    """The pass's block length (16: several blocks a row)."""
    before = core.get_block_size()
    if request.param:
        core.set_block_size(request.param)
    try:
        yield
    finally:
        core.set_block_size(before)


def values(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.6
    if dt.kind == "i":
        return rng.integers(-9, 10, size=shape).astype(dt)
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)  # products neither over- nor underflow
    return (sign * rng.uniform(0.9, 1.1, size=shape)).astype(dt)


def in_layout(x, lay):
    if lay == "C":
        return np.ascontiguousarray(x)
    if lay == "F":
        return np.asfortranarray(x)
    if lay == "strided":
        big = np.zeros(tuple(2 * n for n in x.shape), x.dtype)
        view = big[(slice(None, None, 2),) * x.ndim]
        view[...] = x
        return view
    if lay == "neg":
        flip = (slice(None, None, -1),) * x.ndim
        return np.ascontiguousarray(x[flip])[flip]
    return np.broadcast_to(x[:1], x.shape)  # bcast: stride 0 along axis 0


def as_tree(a):
    """A tree of a's values (not a bare leaf, which small inputs hand to NumPy)."""
    x = pyet.asarray(a)
    return pyet.where(x == x, x, x)


AXES = (0, 1, 2, -1, -2, -3, (0, 2), (-1, -2), (0, 1), None)


@pytest.mark.parametrize("lay", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_axis_and_layout_against_numpy(shape, dtype, lay, threads, block):
    a = in_layout(values(shape, dtype), lay)
    x = as_tree(a)
    for kind in KINDS:
        for axis in AXES:
            if kind.startswith("arg") and isinstance(axis, tuple):
                continue
            for keepdims in (False, True):
                got = pyet.evaluate(getattr(pyet, kind)(x, axis=axis, keepdims=keepdims))
                check(kind, got, a, axis, keepdims)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bare_leaves_above_numpys_size(dtype, threads):
    # leaves over SMALL_LEAF elements: the pass, or NumPy's loops where they are
    # faster (reductions._numpy_kind: argmax/argmin, contiguous bool max/min/all/any),
    # into reversed destinations between sentinels, and into a float64 one (the pass)
    shape = (40, 42, 40)
    assert np.prod(shape) > reductions.SMALL_LEAF
    a = values(shape, dtype, 1)
    for lay in ("C", "F", "strided", "neg"):
        b = in_layout(a, lay)
        x = pyet.asarray(b)
        for kind in ("sum", "mean", "max", "min", "argmax", "argmin", "all", "any"):
            for axis in (0, 1, 2, -1, -3, (0, 2), None):
                if kind.startswith("arg") and isinstance(axis, tuple):
                    continue
                for keepdims in (False, True):
                    want = np.asarray(getattr(np, kind)(b, axis=axis, keepdims=keepdims))
                    raw = np.full((want.size + 2) * want.itemsize, 0xA5, np.uint8)
                    guarded = raw.view(want.dtype)
                    out = guarded[-2:0:-1].reshape(want.shape)  # reversed, inside sentinels
                    pyet.evaluate(getattr(pyet, kind)(x, axis=axis, keepdims=keepdims),
                                  out=out)
                    check(kind, out, b, axis, keepdims)
                    isz = want.itemsize
                    assert (raw[:isz] == 0xA5).all() and (raw[-isz:] == 0xA5).all()
                if kind in ("argmax", "min"):  # cast into float64: not NumPy's out=
                    out = np.empty(np.shape(want), np.float64)
                    pyet.evaluate(getattr(pyet, kind)(x, axis=axis, keepdims=keepdims),
                                  out=out)
                    np.testing.assert_array_equal(out, want.astype(np.float64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_shared_accumulators_give_one_threads_bits(dtype, block):
    # float sums, means and products included: each accumulator folded by one
    # thread in one thread's order
    a = values((24, 20, 18), dtype, 2) * 1000
    for lay in ("C", "strided", "neg"):
        b = in_layout(a, lay)
        for expr in (as_tree(b), pyet.asarray(b)):
            for kind in ("sum", "mean", "prod", "max", "argmin"):
                for axis in (2, -1, 1, (1, 2)):
                    if kind.startswith("arg") and isinstance(axis, tuple):
                        continue
                    got = {}
                    for n in (1, 2):
                        with pyet_threads(n):
                            parallel.set_dynamic(False)
                            before = parallel.get_min_per_thread()
                            parallel.set_min_per_thread(64)
                            try:
                                got[n] = np.asarray(pyet.evaluate(
                                    getattr(pyet, kind)(expr, axis=axis)))
                            finally:
                                parallel.set_min_per_thread(before)
                                parallel.set_dynamic(True)
                    assert got[1].tobytes() == got[2].tobytes(), (lay, kind, axis)


def test_reduce_into_shares_splits_or_refuses(threads):
    a = values((6, 5, 64), np.float64, 3)
    x = pyet.asarray(a)

    def fold(axes, stride):
        kept = tuple(1 if i in axes else d for i, d in enumerate(a.shape))
        sets = np.full((2,) + kept, -np.inf)
        st = tuple(0 if i in axes else s for i, s in enumerate(sets[0].strides))
        view = np.ndarray(a.shape, np.float64, sets, 0, st)
        n = core.reduce_into(view, x, reductions._FOLD["max"], threads,
                             sets[0].nbytes if stride else 0)
        return n, sets

    for axes in ((2,), (1,), (1, 2)):  # kept outer dimensions: one set, shared
        n, sets = fold(axes, True)
        assert n == 1
        np.testing.assert_array_equal(sets[0], a.max(axis=axes, keepdims=True))
        assert np.all(sets[1] == -np.inf)  # the second set untouched
    for axes in ((0,), (0, 2)):  # the outermost reduced: per-thread sets, or refused
        n, sets = fold(axes, True)
        assert n == threads
        np.testing.assert_array_equal(sets[:n].max(axis=0), a.max(axis=axes, keepdims=True))
        n, sets = fold(axes, False)
        if threads == 1:
            assert n == 1
        else:
            assert n == 0 and np.all(sets == -np.inf)  # refused: nothing written


def test_reduce_threads_follows_the_setting(threads):
    assert core.reduce_threads(1 << 20) == threads
    assert core.reduce_threads(10) == 1


@pytest.mark.parametrize("kind", ["max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_in_max_and_min(kind, dtype, threads, block):
    a = values((40, 30, 66), dtype, 4)  # above SMALL_LEAF: bare leaves fold in pyet too
    assert a.size > reductions.SMALL_LEAF
    a[3, 4, 5] = np.nan
    a[7, :, 60] = np.nan
    a[0, 0, :] = np.nan
    a[39, 29, 65] = np.nan
    a[20, 10, 0] = -np.nan
    for lay in ("C", "F", "neg"):
        b = in_layout(a, lay)
        for x in (as_tree(b), pyet.asarray(b)):
            for axis in (0, 1, 2, -1, None) + (((0, 2), (1, 2)) if "arg" not in kind else ()):
                for keepdims in (False, True):
                    got = np.asarray(pyet.evaluate(
                        getattr(pyet, kind)(x, axis=axis, keepdims=keepdims)))
                    want = getattr(np, kind)(b, axis=axis, keepdims=keepdims)
                    assert got.dtype == np.asarray(want).dtype
                    np.testing.assert_array_equal(got, want)
                    if "arg" not in kind:  # NaN where NumPy's, equal bits elsewhere
                        ok = ~np.isnan(want)
                        assert got[ok].tobytes() == np.asarray(want)[ok].tobytes()


@pytest.mark.parametrize("kind", ["max", "min", "argmax", "argmin", "sum", "prod", "any"])
def test_empty_axes_as_numpy(kind, threads):
    a = np.zeros((4, 0, 6))
    x = pyet.asarray(a)
    for axis in (0, 1, 2, -2, None):
        try:
            want = getattr(np, kind)(a, axis=axis)
        except ValueError as exc:
            with pytest.raises(type(exc)) as info:
                pyet.evaluate(getattr(pyet, kind)(x, axis=axis))
            words = str(exc).split()[:3]  # "zero-size array to" / "attempt to get"
            assert str(info.value).split()[:3] == words
            continue
        got = np.asarray(pyet.evaluate(getattr(pyet, kind)(x, axis=axis)))
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_out_between_sentinels(dtype, threads, block):
    # destinations inside guarded memory: C, strided, reversed; only their elements change
    a = values((16, 12, 70), dtype, 5)
    for kind in ("sum", "max", "min", "mean", "argmax", "all"):
        for axis in (2, 1, 0, (1, 2)):
            if kind.startswith("arg") and isinstance(axis, tuple):
                continue
            want = np.asarray(getattr(np, kind)(a, axis=axis))
            sentinel = 99 if want.dtype != np.bool_ else True
            for step in (1, 2, -1):
                big = np.full(tuple(abs(step) * n + 4 for n in want.shape), sentinel, want.dtype)
                inner = tuple(slice(2, 2 + abs(step) * n, abs(step)) if step > 0 else
                              slice(1 + abs(step) * n, 1, -1) for n in want.shape)
                dst = big[inner]
                assert dst.shape == want.shape
                guard = np.ones(big.shape, bool)
                guard[inner] = False
                before = big[guard].copy()
                for x in (pyet.asarray(a), as_tree(a)):
                    dst[...] = 0
                    pyet.evaluate(getattr(pyet, kind)(x, axis=axis), out=dst)
                    check(kind, dst.copy(), a, axis, want=want)
                    assert np.array_equal(big[guard], before)


def test_kept_plan_replays_with_new_values(threads):
    a = values((20, 16, 70), np.float64, 6)
    x = pyet.asarray(a)
    outs = {k: np.empty(np.shape(getattr(np, k)(a, axis=ax))) for k, ax in
            (("max", 2), ("min", 1), ("sum", 0))}
    plan = pyet.EvalPlan()
    for kind, ax in (("max", 2), ("min", 1), ("sum", 0)):
        plan.assign(outs[kind], getattr(pyet, kind)(x, axis=ax))
    for i in range(3):
        a[...] = values(a.shape, np.float64, 10 + i)
        plan.run(keep=True)
        np.testing.assert_array_equal(outs["max"], a.max(axis=2))
        np.testing.assert_array_equal(outs["min"], a.min(axis=1))
        check("sum", outs["sum"], a, 0)


def test_destination_aliasing_the_operand(threads):
    x = values((24, 18, 66), np.float64, 7)
    y = x.copy()
    pyet.asarray(y)[0] = pyet.sum(pyet.asarray(y), axis=0)
    want = x.copy()
    want[0] = x.sum(axis=0)
    np.testing.assert_allclose(y, want, rtol=1e-13)
    y = x.copy()
    pyet.asarray(y)[::-1, :, 0] = pyet.max(pyet.asarray(y), axis=2)
    want = x.copy()
    want[::-1, :, 0] = x.max(axis=2)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_leaf_order_differs_from_the_destinations(dtype, threads):
    # the pass walks the leaf's memory: into a destination laid out otherwise it folds
    # into one laid out as the leaf first (Reduction._leaf_ordered), then copies
    a = values((30, 50, 48), dtype, 8)
    if dtype in (np.float32, np.float64):
        a[5, :, 7] = np.nan
    for b in (np.asfortranarray(a), np.ascontiguousarray(a.transpose(2, 0, 1)).transpose(1, 2, 0),
              np.asfortranarray(a)[::-1, :, ::2]):
        x = pyet.asarray(b)
        for kind in ("sum", "mean", "max", "min", "any"):
            for axis in (0, 1, 2, (1, 2), (0, 2)):
                for keepdims in (False, True):
                    want = np.asarray(getattr(np, kind)(b, axis=axis, keepdims=keepdims))
                    for order in ("C", "F"):
                        big = np.full(tuple(n + 2 for n in want.shape), 3, want.dtype,
                                      order=order)
                        before = big.copy()
                        inner = tuple(slice(1, -1) for _ in want.shape)
                        dst = big[inner]
                        pyet.evaluate(getattr(pyet, kind)(x, axis=axis, keepdims=keepdims),
                                      out=dst)
                        check(kind, dst.copy(), b, axis, keepdims, want=want)
                        guard = np.ones(big.shape, bool)
                        guard[inner] = False
                        assert np.array_equal(big[guard], before[guard])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_whole_max_min_of_one_run_in_any_axis_order(dtype):
    # core.fold_flat takes any array whose memory is one run of its elements (axes
    # reversed or permuted) and refuses gaps, overlaps and broadcasts
    rng = np.random.default_rng(9)
    a = rng.standard_normal((40, 30, 66)).astype(dtype)
    a[17, 3, 40] = np.nan
    out = np.zeros((), dtype)
    for b in (a[::-1, :, ::-1], a[:, ::-1], a.transpose(2, 0, 1), a.T[::-1], a[::-1, ::-1, ::-1]):
        for kind, code in (("max", 3), ("min", 4)):
            assert core.fold_flat(out, b, code)
            assert np.isnan(out)
            c = b.copy()
            c[np.isnan(c)] = 0
            assert core.fold_flat(out, c, code)
            assert out == getattr(np, kind)(c)
            np.testing.assert_array_equal(pyet.evaluate(getattr(pyet, kind)(pyet.asarray(c))),
                                          getattr(np, kind)(c))
    for b in (a[::2], a[:, :, 1:], a[:, :, ::-2], np.broadcast_to(a[:1], a.shape)):
        assert not core.fold_flat(out, b, 3)
