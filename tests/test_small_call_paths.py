"""The fast paths that cut small calls' fixed costs (issue 15), each against
NumPy on the layouts it serves: take's index check and gather entry
(wrapped_indices, take_into), the join built in one call (core.join_node),
join_into over leaves and its pair of short blocks (a stack of two),
F's cached ufunc result dtype, the special-node kind decided per class;
and their error paths with the messages unchanged."""

import numpy as np
import pytest

import pyet
from pyet._core import core
from pyet._kernels import nn as nn_kernels


def _layouts(a):
    """a as C, Fortran, strided, negative-step and transposed views (2-D a)."""
    big = np.zeros((a.shape[0] * 2, a.shape[1] * 3), a.dtype)
    strided = big[::2, ::3]
    strided[...] = a
    neg = np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1]
    return {"C": a, "F": np.asfortranarray(a), "strided": strided, "negative": neg,
            "transposed": np.ascontiguousarray(a.T).T}


# ------------------------------------------------------------------ take

@pytest.mark.parametrize("idt", [np.int64, np.int32, np.uint8, np.uint64, np.intp,
                                 np.dtype(">i8")])
def test_take_index_dtypes(idt):
    rng = np.random.default_rng(0)
    w = rng.random((50, 8)).astype(np.float32)
    idx = rng.integers(0, 50, 17).astype(idt)
    np.testing.assert_array_equal(pyet.evaluate(pyet.take(idx, w)).numpy(), w[idx])
    if np.dtype(idt).kind == "i":
        neg = (-idx.astype(np.int64) - 1).astype(idt)  # counted from the end
        np.testing.assert_array_equal(pyet.evaluate(pyet.take(neg, w)).numpy(), w[neg])


@pytest.mark.parametrize("layout", ["C", "F", "strided", "negative", "transposed"])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_take_layouts_and_destinations(layout, dt):
    rng = np.random.default_rng(1)
    w = _layouts((rng.random((40, 6)) * 10).astype(dt))[layout]
    idx = rng.integers(-40, 40, 25)
    want = w[idx]
    for dst in (np.empty((25, 6), dt), np.empty((25, 12), dt)[:, ::2],
                np.empty((25, 6), dt, order="F"), np.empty((25, 6), dt)[::-1]):
        dst[...] = 0
        pyet.asarray(dst)[...] = pyet.take(idx, pyet.asarray(w))
        np.testing.assert_array_equal(dst, want)


def test_take_index_layouts_and_shapes():
    rng = np.random.default_rng(2)
    w = rng.random((30, 4))
    base = rng.integers(0, 30, (6, 10))
    for idx in (base, base[:, ::3], base[::-1], base.T, base[2, 4], base[:0], base.ravel()):
        got = pyet.evaluate(pyet.take(idx, w)).numpy()
        np.testing.assert_array_equal(got, w[idx])
    # indices of a 1-D table, and a 3-D table
    v = rng.random(30)
    np.testing.assert_array_equal(pyet.evaluate(pyet.take(base, v)).numpy(), v[base])
    t3 = rng.random((30, 2, 3))
    np.testing.assert_array_equal(pyet.evaluate(pyet.take(base[0], t3)).numpy(), t3[base[0]])


def test_take_copies_its_indices_and_aliasing_destination():
    rng = np.random.default_rng(3)
    w = rng.random((20, 20))
    idx = np.arange(20)[::-1].copy()
    e = pyet.take(idx, w)
    want = w[idx].copy()
    idx[:] = 0  # the node holds its own checked copy
    np.testing.assert_array_equal(pyet.evaluate(e).numpy(), want)
    # the destination is the table itself: read before written
    pyet.asarray(w)[...] = pyet.take(np.arange(20)[::-1], pyet.asarray(w))
    np.testing.assert_array_equal(w, want)


def test_take_errors_unchanged():
    w = np.ones((5, 3))
    with pytest.raises(IndexError, match="take: index 5 is out of bounds for axis 0 of W "
                                         "of size 5"):
        pyet.take(np.array([0, 5]), w)
    with pytest.raises(IndexError, match="take: index -6 is out of bounds"):
        pyet.take(np.array([-6, 1]), w)
    with pytest.raises(IndexError, match="out of bounds"):
        pyet.take(np.array([2 ** 64 - 1], np.uint64), w)
    with pytest.raises(TypeError, match="take: indices must be integers, got float64"):
        pyet.take(np.array([0.0]), w)
    with pytest.raises(TypeError, match="take: indices must be integers, got bool"):
        pyet.take(np.array([True]), w)
    with pytest.raises(ValueError, match="take: W must have at least one dimension"):
        pyet.take(np.array([0]), np.float64(1.0))


def test_wrapped_indices_fast_and_converted_inputs_agree():
    rng = np.random.default_rng(4)
    x = rng.integers(-9, 9, 40)
    for idx in (x, x.astype(np.int32), x[::2], x.astype(">i8"), x.reshape(5, 8),
                x.reshape(8, 5).T, np.array(7), x[:0]):
        out, lo, hi = nn_kernels.wrapped_indices(idx, 9)
        assert out.dtype == np.intp and out.flags.c_contiguous and out.shape == idx.shape
        np.testing.assert_array_equal(out, np.where(idx < 0, idx + 9, idx))
        if idx.size:
            assert (lo, hi) == (idx.min(), idx.max())
        assert not np.shares_memory(out, idx)
    with pytest.raises(TypeError, match="indices must be integers, got float32"):
        nn_kernels.wrapped_indices(np.zeros(3, np.float32), 9)


def test_take_into_checks_unchanged():
    w = np.ones((5, 3), np.float32)
    out = np.empty((2, 3), np.float32)
    with pytest.raises(ValueError, match="take_into: indices must be 2 intp, got int32"):
        nn_kernels.take_into(out, w, np.zeros(2, np.int32))
    with pytest.raises(ValueError, match="take_into: indices must be 2 intp, got >i8"):
        nn_kernels.take_into(out, w, np.zeros(2, ">i8"))
    with pytest.raises(ValueError, match="take_into: cannot take rows"):
        nn_kernels.take_into(np.empty((2, 3)), w, np.zeros(2, np.intp))
    with pytest.raises(TypeError, match="take_into: unsupported dtype complex128"):
        nn_kernels.take_into(np.empty((2, 3), complex), w.astype(complex),
                             np.zeros(2, np.intp))
    # strided indices are made contiguous (not read as if contiguous)
    idx = np.array([4, 0, 3, 1], np.intp)[::2]
    nn_kernels.take_into(out, w * np.arange(5, dtype=np.float32)[:, None], idx)
    np.testing.assert_array_equal(out[:, 0], [4, 3])
    # a misaligned destination is written through an aligned temporary
    raw = np.zeros(2 * 3 * 4 + 1, np.uint8)
    odd = raw[1:].view(np.float32).reshape(2, 3)
    nn_kernels.take_into(odd, w * 2, np.array([1, 2], np.intp))
    np.testing.assert_array_equal(odd, 2)


# ----------------------------------------------------------------- joins

@pytest.mark.parametrize("layout", ["C", "F", "strided", "negative", "transposed"])
@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_concatenate_layouts(layout, axis):
    rng = np.random.default_rng(5)
    a = _layouts(rng.random((6, 7)))[layout]
    b = _layouts(rng.random((6, 7)))["C"]
    want = np.concatenate([a, b, a], axis)
    for _ in range(2):  # the second call takes the join built in one call
        np.testing.assert_array_equal(
            pyet.evaluate(pyet.concatenate([a, b, a], axis)).numpy(), want)
        dst = np.empty(want.shape, order="F")
        pyet.asarray(dst)[...] = pyet.concatenate([pyet.asarray(a), b, a], axis)
        np.testing.assert_array_equal(dst, want)


def test_concatenate_mixed_dtypes_shapes_and_trees():
    rng = np.random.default_rng(6)
    a, b = rng.random((3, 4)), rng.integers(0, 9, (5, 4)).astype(np.int32)
    pyet.concatenate([a, a], 0)  # the kernel for axis 0 exists
    e = pyet.concatenate([a, b], 0)
    assert e.dtype == np.float64
    np.testing.assert_array_equal(pyet.evaluate(e).numpy(), np.concatenate([a, b], 0))
    f = pyet.concatenate([a.astype(np.float32), b.astype(np.float32)], 0)
    assert f.dtype == np.float32
    A = pyet.asarray(a)
    g = pyet.concatenate([A * 2, A + 1, np.float64(3) * A], 0)
    np.testing.assert_array_equal(pyet.evaluate(g).numpy(),
                                  np.concatenate([a * 2, a + 1, 3 * a], 0))
    # 0-d pieces and empty ones
    np.testing.assert_array_equal(pyet.evaluate(pyet.concatenate([a[:0], a], 0)).numpy(), a)
    with pytest.raises(ValueError, match="zero-dimensional arrays cannot be concatenated"):
        pyet.concatenate([np.float64(1), np.float64(2)], 0)


def test_concatenate_errors_unchanged():
    # (mismatched sizes: test_special_fast_paths.test_join_errors_keep_numpys_messages)
    a = np.ones((2, 3))
    pyet.concatenate([a, a], 0)
    with pytest.raises(ValueError, match="all the input arrays must have same number of "
                                         "dimensions"):
        pyet.concatenate([a, np.ones(3)], 0)
    with pytest.raises(np.exceptions.AxisError):
        pyet.concatenate([a, a], 2)
    with pytest.raises(ValueError, match="need at least one array to concatenate"):
        pyet.concatenate([], 0)


def test_join_node_refuses_what_it_does_not_build():
    kernel = pyet.concatenate([np.ones((2, 2)), np.ones((2, 2))], 0)._kernel
    a = pyet.asarray(np.ones((2, 3)))
    assert core.join_node(kernel, [a, pyet.asarray(np.ones((2, 4)))], 0) is None
    assert core.join_node(kernel, [a, pyet.asarray(np.ones((2, 3), np.float32))], 0) is None
    assert core.join_node(kernel, [a, pyet.asarray(np.ones(3))], 0) is None
    assert core.join_node(kernel, [a, a], 2) is None
    assert core.join_node(kernel, [a, a], -1) is None
    e = core.join_node(kernel, [a, pyet.asarray(np.ones((4, 3)))], 0)
    assert e.shape == (6, 3) and e.dtype == np.float64


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("n", [2, 3])
def test_stack_pairs_and_more(dt, n):
    rng = np.random.default_rng(7)
    for shape in [(64, 64), (5, 3), (7,), (3, 4, 2), (0, 3), ()]:
        arrs = [(rng.random(shape) * 10).astype(dt) for _ in range(n)]
        for axis in range(-len(shape) - 1, len(shape) + 1):
            want = np.stack(arrs, axis)
            np.testing.assert_array_equal(pyet.evaluate(pyet.stack(arrs, axis)).numpy(), want)
            for dst in (np.empty(want.shape, dt), np.empty(want.shape, dt, order="F")):
                pyet.asarray(dst)[...] = pyet.stack([pyet.asarray(x) for x in arrs], axis)
                np.testing.assert_array_equal(dst, want)


def test_stack_of_views_and_aliasing_destination():
    rng = np.random.default_rng(8)
    a = rng.random((8, 8))
    layouts = _layouts(a)
    for x in layouts.values():
        np.testing.assert_array_equal(pyet.evaluate(pyet.stack([x, a], 2)).numpy(),
                                      np.stack([x, a], 2))
    # a piece in the destination's memory: not the pair copy, same values
    buf = rng.random((8, 8, 2))
    want = np.stack([buf[:, :, 0].copy(), a], 2)
    pyet.asarray(buf)[...] = pyet.stack([buf[:, :, 0], a], 2)
    np.testing.assert_array_equal(buf, want)
    with pytest.raises(ValueError, match="all input arrays must have the same shape"):
        pyet.stack([a, a[:3]], 0)
    with pytest.raises(np.exceptions.AxisError):
        pyet.stack([a, a], 3)


def test_join_into_pairs():
    rng = np.random.default_rng(9)
    for dt in (np.float64, np.float32, np.int32, np.int64):
        a, b = rng.random((16, 1)).astype(dt), rng.random((16, 1)).astype(dt)
        dst = np.full((16, 2), -1, dt)
        assert core.join_into(dst, [a, b], 1)
        np.testing.assert_array_equal(dst, np.concatenate([a, b], 1))
        # leaves are taken as their arrays
        dst[...] = -1
        assert core.join_into(dst, (pyet.asarray(a), pyet.asarray(b)), 1)
        np.testing.assert_array_equal(dst, np.concatenate([a, b], 1))
    # 2-byte and 1-byte blocks, a short block beside a long one, an expression: refused
    dst = np.full((4, 2), -1.0)
    assert not core.join_into(np.zeros((4, 2), np.bool_), [np.ones((4, 1), np.bool_)] * 2, 1)
    assert not core.join_into(np.zeros((4, 17)), [np.ones((4, 1)), np.ones((4, 16))], 1)
    assert not core.join_into(dst, [np.ones((4, 1)), pyet.asarray(np.ones((4, 1))) + 1], 1)
    assert (dst == -1).all()


# ------------------------------------------------------------- F, kinds

def test_F_ufunc_result_dtype_cached_per_dtypes():
    rng = np.random.default_rng(10)
    x64, x32 = rng.random(9), rng.random(9).astype(np.float32)
    i32 = rng.integers(0, 5, 9).astype(np.int32)
    for _ in range(2):
        assert pyet.F(np.expm1, x64).dtype == np.float64
        assert pyet.F(np.expm1, x32).dtype == np.float32
        assert pyet.F(np.expm1, i32).dtype == np.float64
        assert pyet.F(np.add, x32, i32).dtype == np.float64
        assert pyet.F(np.add, i32, i32).dtype == np.int32
        np.testing.assert_allclose(pyet.evaluate(pyet.F(np.expm1, x32) + 1).numpy(),
                                   np.expm1(x32) + 1, rtol=1e-6)
    for _ in range(2):  # (a refusal is not cached: raised each time)
        with pytest.raises(TypeError, match="pyet.F: isnat has no loop for these dtypes"):
            pyet.F(np.isnat, x64)
    with pytest.raises(TypeError, match="pyet.F: ufunc add takes 2 inputs"):
        pyet.F(np.add, x64)


def test_special_kind_per_class():
    a = np.ones((4, 4))
    assert pyet.stats(reset=True) is not None
    pyet.evaluate(pyet.sum(a, axis=0))
    pyet.evaluate(pyet.dot(a, a))
    pyet.evaluate(pyet.take(np.array([0, 1]), a))
    s = pyet.stats()
    assert s["reductions"] >= 1 and s["gemm_calls"] >= 1 and s["special_nodes"] >= 1


# ------------------------------------------------------------ reductions

@pytest.mark.parametrize("layout", ["C", "F", "strided", "negative", "transposed"])
@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod", "mean", "argmax", "any"])
def test_small_reductions_layouts(layout, kind):
    rng = np.random.default_rng(11)
    a = _layouts(rng.random((12, 9)) + 0.5)[layout]
    for axis in (None, 0, 1, -1, (0, 1)):
        if kind == "argmax" and isinstance(axis, tuple):
            continue
        for keepdims in (False, True, 1, np.bool_(True)):
            if kind == "argmax" and keepdims is not False and keepdims is not True:
                continue
            want = getattr(np, kind)(a, axis=axis, keepdims=bool(keepdims))
            e = getattr(pyet, kind)(pyet.asarray(a), axis=axis, keepdims=keepdims)
            got = pyet.evaluate(e).numpy()
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-13)
            dst = np.empty(want.shape, want.dtype)
            pyet.asarray(dst)[...] = e
            np.testing.assert_allclose(dst, want, rtol=1e-13)


def test_small_reductions_of_scalars_trees_and_empty():
    rng = np.random.default_rng(12)
    a = rng.random((5, 6))
    A = pyet.asarray(a)
    np.testing.assert_allclose(pyet.evaluate(pyet.sum(A * 2 + 1, axis=0)).numpy(),
                               (a * 2 + 1).sum(0))
    assert pyet.evaluate(pyet.sum(3.5)).numpy() == 3.5
    assert pyet.evaluate(pyet.max(np.float32(2))).numpy().dtype == np.float32
    np.testing.assert_array_equal(pyet.evaluate(pyet.sum(a[:0], axis=0)).numpy(), np.zeros(6))
    np.testing.assert_array_equal(pyet.evaluate(pyet.sum(np.array(4.0), axis=0)).numpy(), 4.0)
    # the destination is the operand's memory (aliasing): NumPy's answer
    b = a.copy()
    want = b.sum(0, keepdims=True)
    pyet.asarray(b[:1])[...] = pyet.sum(pyet.asarray(b), axis=0, keepdims=True)
    np.testing.assert_allclose(b[:1], want)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        pyet.max(a[:0], axis=0)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        pyet.sum(a, axis=(0, 0))
    with pytest.raises(np.exceptions.AxisError):
        pyet.sum(a, axis=2)


def test_concatenate_one_call_build_takes_any_operands():
    rng = np.random.default_rng(13)
    a = rng.random((3, 4))
    pyet.concatenate([a, a], 1)  # the kernel for axis 1 exists
    for seq in ([a, pyet.asarray(a) * 2], (a, a.astype(np.float32)), [a, np.float64(1) + a],
                (x for x in (a, a))):
        arrs = [np.asarray(pyet.evaluate(x).numpy()) if isinstance(x, pyet.Expr) else x
                for x in (seq if not hasattr(seq, "__next__") else (a, a))]
        got = pyet.evaluate(pyet.concatenate(seq, 1)).numpy()
        np.testing.assert_array_equal(got, np.concatenate(arrs, 1))
    with pytest.raises(TypeError, match="pyet does not support dtype complex"):
        pyet.concatenate([a, a.astype(complex)], 1)
    with pytest.raises(ValueError, match="need at least one array to concatenate"):
        pyet.concatenate((), 1)
    assert core.join_node(pyet.concatenate([a, a], 1)._kernel, [], 1) is None


# ------------------------------------------------------ into_leaves entry

class _Doubled(core.Special):
    """2 * child, with an into_leaves that handles float64 only."""

    __slots__ = ()
    calls = []

    def params(self):
        return ()

    def value(self, args):
        return 2 * np.asarray(args[0])

    def into(self, dst, args):
        _Doubled.calls.append("into")
        dst[...] = 2 * np.asarray(args[0])

    def into_leaves(self, dst, arrays):
        if arrays[0].dtype != np.float64:
            return False
        _Doubled.calls.append("leaves")
        np.multiply(arrays[0], 2, out=dst)
        return True


def test_into_leaves_used_for_leaf_roots_only():
    a = np.arange(6.0).reshape(2, 3)
    dst = np.empty((2, 3))
    for x, dt, want in ((a, np.float64, ["leaves"]), (a.astype(np.float32), np.float32,
                                                      ["into"])):
        _Doubled.calls.clear()
        out = np.empty((2, 3), dt)
        pyet.asarray(out)[...] = core.node(_Doubled(), (pyet.asarray(x),), (2, 3), dt)
        np.testing.assert_array_equal(out, 2 * a)
        assert _Doubled.calls == want
    # a child that is not a leaf, a destination overlapping the child, a tree above
    for make in (lambda A: core.node(_Doubled(), (A + 0,), (2, 3), np.float64),
                 lambda A: core.node(_Doubled(), (A,), (2, 3), np.float64) + 0):
        _Doubled.calls.clear()
        pyet.asarray(dst)[...] = make(pyet.asarray(a))
        np.testing.assert_array_equal(dst, 2 * a)
        assert "leaves" not in _Doubled.calls
    b = a.copy()
    _Doubled.calls.clear()
    pyet.asarray(b)[...] = core.node(_Doubled(), (pyet.asarray(b),), (2, 3), np.float64)
    np.testing.assert_array_equal(b, 2 * a)
    assert "leaves" not in _Doubled.calls


def test_take_and_concatenate_leaf_entries_fall_back():
    rng = np.random.default_rng(14)
    w3 = rng.random((10, 2, 3))
    idx = np.array([[1, 2], [3, -1]])
    # a 3-D table, 2-D indices: take_leaves refuses, into() reshapes
    np.testing.assert_array_equal(pyet.evaluate(pyet.take(idx, w3)).numpy(), w3[idx])
    # leaves of other dtypes than the join's: join_leaves refuses, into() assigns
    a, b = rng.random((2, 3)), rng.integers(0, 5, (2, 3)).astype(np.int32)
    dst = np.empty((4, 3))
    pyet.asarray(dst)[...] = pyet.concatenate([a, b], 0)
    np.testing.assert_array_equal(dst, np.concatenate([a, b], 0))
    # a plan being recorded: the ordinary way (its replays redo the passes)
    plan = pyet.EvalPlan()
    out = np.empty((4, 3))
    plan.assign(out, pyet.concatenate([a, a], 0))
    for _ in range(2):
        plan.run(keep=True)
        np.testing.assert_array_equal(out, np.concatenate([a, a], 0))


# -------------------------------------------- a small sum's fold stored in one call

def _python_fold(red_node, out):
    # the same fold through _Fold.result and a copy: the bits fold_store must give
    from pyet._nodes.reductions import _Fold

    red, child = red_node._kernel, red_node._args[0]
    fold = _Fold(red, child, red._across_rows(child))
    np.copyto(out, fold.result())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["sum", "mean"])
@pytest.mark.parametrize("axis", [None, 1, 0, (0, 1)])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_fold_store_gives_the_folds_bits(dtype, kind, axis, layout, one_thread):
    rng = np.random.default_rng(3)
    # magnitudes 1e-3..1e8 (the compensation matters), an inf and a nan in two
    # rows, a row of negative zeros
    a = _layouts((rng.standard_normal((33, 17)) * 10.0 ** rng.integers(-3, 9, (33, 17)))
                 .astype(dtype))[layout]
    b = _layouts(rng.standard_normal((33, 17)).astype(dtype))[layout]
    if axis == 1:
        a[3, 4], a[5, 6] = np.inf, np.nan
    b[7] = -0.0
    e = getattr(pyet, kind)(pyet.asarray(a) * pyet.asarray(b), axis=axis)
    want = np.empty(e.shape, dtype)
    _python_fold(e, want)
    np.testing.assert_allclose(want, getattr(np, kind)(a * b, axis=axis), rtol=1e-5)
    out = np.full(e.shape, 7, dtype)
    pyet.asarray(out)[...] = e  # the root: Reduction.into
    np.testing.assert_array_equal(out.reshape(-1).view(np.uint8), want.reshape(-1).view(np.uint8))
    kept = np.full(e.shape, 7, dtype)
    plan = pyet.EvalPlan()
    plan.assign(kept, e)
    for _ in range(2):  # recorded, then replayed through the bound fold
        plan.run(keep=True)
        np.testing.assert_array_equal(kept.reshape(-1).view(np.uint8),
                                      want.reshape(-1).view(np.uint8))


def test_fold_store_refuses_what_it_does_not_store():
    from pyet._nodes.reductions import _Fold

    a = pyet.asarray(np.ones((4, 5), np.float32))
    e = pyet.sum(a * 2, axis=1)
    fold = _Fold(e._kernel, e._args[0], False)
    fold._make_slots(1)
    args = (fold.accs, fold.view, e._args[0], 1, fold.size, fold.compensated, 1)
    for out in (np.empty(4, np.int64), np.empty(5, np.float32), np.empty(8, np.float32)[::2]):
        assert not core.fold_store(out, *args)
    ro = np.empty(4, np.float32)
    ro.flags.writeable = False
    assert not core.fold_store(ro, *args)
    out = np.empty(4, np.float32)
    assert core.fold_store(out, *args)
    np.testing.assert_array_equal(out, 10)
    # a float64 dst of a float32 sum: the float32 result widened, as before
    wide = np.empty(4, np.float64)
    pyet.asarray(wide)[...] = pyet.sum(pyet.asarray(np.full((4, 3), 0.1, np.float32)) * 1.5,
                                       axis=1)
    np.testing.assert_array_equal(wide, np.float32(0.1) * np.float32(1.5) * 3)


def test_fold_store_reports_a_float32_overflow(one_thread):
    a = pyet.asarray(np.full((4, 1000), 1e38, np.float32))
    b = pyet.asarray(np.ones((4, 1000), np.float32))
    out = np.empty(4, np.float32)
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError, match="overflow"):
            pyet.asarray(out)[...] = pyet.sum(a * b, axis=1)
    with np.errstate(over="ignore"):
        pyet.asarray(out)[...] = pyet.sum(a * b, axis=1)
    assert np.isinf(out).all()
