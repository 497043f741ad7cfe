"""A pyet.F ufunc of the destination's shape and dtype over leaves is called
once on the whole operands straight into the destination (its C loop where
every operand and dst share one memory order, the ufunc otherwise), and the
rest of the tree then runs in place over dst (engine.pxi, hoist_pyfunc):
NumPy's values on every layout, the block path kept where dst overlaps a
leaf, a function may raise midway or the node is broadcast, floating-point
errors reported once after the whole tree is written.  NumPy's own ufuncs run
in the pass as their C loops instead (PyFunc._in_pass): every test runs both
ways; in the pass, gathered blocks get NumPy's values on contiguous memory
(on an all-reversed view NumPy itself takes its scalar loop, other bits), as
pyet's own ops that are NumPy loops do."""

import warnings

import numpy as np
import pytest

import pyet
from pyet._core import core


@pytest.fixture(autouse=True, params=["in pass", "hoisted"])
def in_pass(request):
    before = core.set_ufuncs_in_pass(request.param == "in pass")
    yield request.param == "in pass"
    core.set_ufuncs_in_pass(before)


def layouts(a):
    big = np.zeros((a.shape[0] * 2, a.shape[1] * 3), a.dtype)
    big[::2, ::3] = a
    return {"C": a, "F": np.asfortranarray(a), "strided": big[::2, ::3],
            "negative": np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1],
            "transposed": np.ascontiguousarray(a.T).T}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 5), (300, 700)])
@pytest.mark.parametrize("dst_layout", ["C", "F", "strided"])
def test_whole_call_on_every_layout(dtype, shape, dst_layout, in_pass):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(dtype)
    b = rng.standard_normal(shape).astype(dtype)
    B = pyet.asarray(b)
    for name, x in layouts(a).items():
        X = pyet.asarray(x)
        assert pyet.F(np.expm1, X)._in_pass == in_pass
        if in_pass:
            x = np.ascontiguousarray(x)
        dst = np.full((shape[0], 2 * shape[1]), 7, dtype)[:, ::2] \
            if dst_layout == "strided" else np.full(shape, 7, dtype, order=dst_layout)
        pyet.asarray(dst)[...] = pyet.F(np.expm1, X) + 1
        np.testing.assert_array_equal(dst, np.expm1(x) + 1, err_msg=name)
        f = pyet.F(np.expm1, X)
        pyet.asarray(dst)[...] = (f + B) / f  # (no a * b + c: that may be one fma)
        e = np.expm1(x)
        np.testing.assert_array_equal(dst, (e + b) / e, err_msg=name)
        pyet.asarray(dst)[...] = pyet.F(np.sin, X)  # the node alone: one call, nothing after
        np.testing.assert_array_equal(dst, np.sin(x), err_msg=name)


def test_strided_destination_leaves_its_gaps():
    a = np.random.default_rng(1).standard_normal((40, 30))
    buf = np.full((42, 62), -7.0)
    dst = buf[1:-1, 1:-1:2]
    pyet.asarray(dst)[...] = pyet.F(np.expm1, pyet.asarray(a)) + 1
    np.testing.assert_array_equal(dst, np.expm1(a) + 1)
    assert (buf[0] == -7).all() and (buf[-1] == -7).all() and (buf[1:-1, 2:-1:2] == -7).all()
    assert (buf[:, 0] == -7).all()


@pytest.mark.parametrize("shape", [(), (0,), (0, 4), (1,), (5,), (2, 3, 4)])
def test_zero_d_empty_and_other_ranks(shape):
    a = np.random.default_rng(2).uniform(0.1, 2, shape)
    dst = np.full(shape, 3.0)
    pyet.asarray(dst)[...] = pyet.F(np.log, pyet.asarray(a)) * 2
    np.testing.assert_array_equal(dst, np.log(a) * 2)


def test_two_operand_ufuncs_mixed_layouts_scalars_and_broadcasts():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((50, 70))
    b = np.asfortranarray(rng.standard_normal((50, 70)))
    row = rng.standard_normal(70)
    A, Bt, R = pyet.asarray(a), pyet.asarray(b), pyet.asarray(row)
    dst = np.empty((50, 70))
    D = pyet.asarray(dst)
    D[...] = pyet.F(np.hypot, A, Bt) + 1  # C with Fortran: the ufunc, not its C loop
    np.testing.assert_array_equal(dst, np.hypot(a, b) + 1)
    D[...] = pyet.F(np.hypot, A, R) - A  # a broadcast operand
    np.testing.assert_array_equal(dst, np.hypot(a, row) - a)
    D[...] = pyet.F(np.hypot, A, 2.5) + 0  # a scalar operand (a 0-d leaf)
    np.testing.assert_array_equal(dst, np.hypot(a, 2.5) + 0)
    D[...] = pyet.F(np.expm1, R) + A  # the node is broadcast: the block path
    np.testing.assert_array_equal(dst, np.expm1(row) + a)
    i = np.arange(12, dtype=np.int64).reshape(3, 4)
    di = np.zeros((3, 4), np.int64)
    pyet.asarray(di)[...] = pyet.F(np.left_shift, pyet.asarray(i), pyet.asarray(i % 3)) + 1
    np.testing.assert_array_equal(di, np.left_shift(i, i % 3) + 1)


def test_destination_overlapping_a_leaf_keeps_the_block_path():
    rng = np.random.default_rng(4)
    a = rng.uniform(0.1, 1, (64, 65))
    d = a.copy()
    D = pyet.asarray(d)
    D[...] = pyet.F(np.expm1, D) + 1  # in place
    np.testing.assert_array_equal(d, np.expm1(a) + 1)
    d = a.copy()
    D = pyet.asarray(d)
    x = rng.uniform(0.1, 1, (64, 65))
    D[...] = pyet.F(np.expm1, pyet.asarray(x)) + D  # dst read by the rest of the tree
    np.testing.assert_array_equal(d, np.expm1(x) + a)
    buf = rng.uniform(0.1, 1, 200)
    want = np.expm1(buf[:100]) * buf[50:150]
    pyet.asarray(buf[50:150])[...] = pyet.F(np.expm1, pyet.asarray(buf[:100])) * \
        pyet.asarray(buf[50:150])  # partial overlap
    np.testing.assert_array_equal(buf[50:150], want)


def test_shared_nodes_several_functions_and_dtypes():
    rng = np.random.default_rng(5)
    a, b = rng.uniform(0.1, 2, (33, 17)), rng.uniform(0.1, 2, (33, 17))
    A, B = pyet.asarray(a), pyet.asarray(b)
    f = pyet.F(np.expm1, A)
    np.testing.assert_array_equal(np.asarray(f * f + f), np.expm1(a) ** 2 + np.expm1(a))
    dst = np.empty((33, 17))
    pyet.asarray(dst)[...] = pyet.F(np.sin, A) + pyet.F(np.cos, B) * pyet.F(np.log, A)
    np.testing.assert_array_equal(dst, np.sin(a) + np.cos(b) * np.log(a))
    pyet.asarray(dst)[...] = pyet.F(np.log1p, pyet.F(np.expm1, A) * 0.5)
    np.testing.assert_array_equal(dst, np.log1p(np.expm1(a) * 0.5))
    # a float32 node into a float64 destination: cast after, block path
    a32 = a.astype(np.float32)
    pyet.asarray(dst)[...] = pyet.F(np.expm1, pyet.asarray(a32)) + 1
    np.testing.assert_array_equal(dst, (np.expm1(a32) + np.float32(1)).astype(np.float64))
    d32 = np.empty((33, 17), np.float32)
    pyet.asarray(d32)[...] = pyet.F(np.expm1, pyet.asarray(a32)) + 1
    np.testing.assert_array_equal(d32, np.expm1(a32) + np.float32(1))


@pytest.mark.parametrize("threads", [1, 2])
def test_large_operands_on_threads(threads):
    pyet.set_num_threads(threads)
    try:
        a = np.random.default_rng(6).standard_normal((512, 515))
        dst = np.empty_like(a)
        pyet.asarray(dst)[...] = pyet.F(np.expm1, pyet.asarray(a)) * 3 + 1
        np.testing.assert_array_equal(dst, np.expm1(a) * 3 + 1)
    finally:
        pyet.set_num_threads(1)


def test_a_python_function_elsewhere_still_writes_nothing_when_it_raises():
    a = np.ones((4, 70000))
    dst = np.full(a.shape, 5.0)
    calls = []

    def fails_late(v):
        calls.append(len(v))
        if len(calls) == 3:
            raise RuntimeError("third block")
        return v * 2

    A = pyet.asarray(a)
    with pytest.raises(RuntimeError, match="third block"):
        pyet.asarray(dst)[...] = pyet.F(np.expm1, A) + pyet.F(fails_late, A)
    assert (dst == 5).all()


def _messages(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("layout", ["C", "strided"])
def test_floating_point_errors_reported_after_the_whole_tree(layout):
    a = np.ones((4, 700))
    a[3, -1] = 0
    if layout == "strided":
        a = np.repeat(a, 2, axis=1)[:, ::2]
    A = pyet.asarray(a)
    dst = np.full((4, 700), 5.0)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero encountered in a pyet"):
            pyet.asarray(dst)[...] = pyet.F(np.log, A) + 1
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(dst, np.log(a) + 1)  # written before it raised
    assert _messages(lambda: pyet.asarray(dst).__setitem__(..., pyet.F(np.log, A) * 2)) == [
        "divide by zero encountered in a pyet evaluation"]
    with np.errstate(divide="ignore"):
        assert _messages(lambda: pyet.asarray(dst).__setitem__(
            ..., pyet.F(np.log, A) * 2)) == []
    # flags raised before the assignment are not its own
    with np.errstate(all="ignore"):
        np.log(np.zeros(3))
    ok = pyet.asarray(np.ones((4, 700)))
    assert _messages(lambda: pyet.asarray(dst).__setitem__(..., pyet.F(np.log, ok) + 1)) == []
    np.testing.assert_array_equal(dst, np.ones((4, 700)))


def test_errors_before_any_write():
    a = np.ones((5, 6))
    dst = np.full((5, 7), 2.0)
    with pytest.raises(ValueError):
        pyet.asarray(dst)[...] = pyet.F(np.expm1, pyet.asarray(a)) + 1
    assert (dst == 2).all()
    ro = np.ones((5, 6))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        pyet.asarray(ro)[...] = pyet.F(np.expm1, pyet.asarray(a)) + 1
    di = np.zeros((5, 6), np.int64)
    with pytest.raises(TypeError):
        pyet.asarray(di)[...] = pyet.F(np.expm1, pyet.asarray(a)) + 1
    assert (di == 0).all()
