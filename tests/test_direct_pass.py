"""Small plain passes run directly (passes.pxi direct_pass): every leaf of
dst's shape and memory order, contiguous, aligned, apart from dst or dst
itself, at most DIRECT_MAX elements (65536; the GIL released above 1024),
operands stepping other than their item size at most 1024.  Each case
against NumPy, with the path checked taken (or refused) and the same values
with it turned off."""

import numpy as np
import pytest

import pyet
from pyet._core import core

SHAPES = [(3, 5), (16, 16), (360,), (4, 3, 5, 2, 3, 1), (1, 16, 1, 16, 1), (1,), (511,),
          (512,), (513,), (32, 32), (2, 3, 4), (1025,), (40, 41, 3), (256, 256), (65537,)]


def direct_max():
    """The largest pass run direct (passes.pxi DIRECT_MAX)."""
    limit = core.set_direct_max(0)
    core.set_direct_max(limit)
    return limit


def test_direct_max_is_65536():
    assert direct_max() == 65536


@pytest.fixture
def direct_on():
    old = core.set_direct_passes(True)
    yield
    core.set_direct_passes(old)


def run(dst, expr, *, direct):
    """dst[...] = expr (dst an ndarray, its pyet view assigned: NumPy's own
    ``dst[...] = expr`` evaluates expr into a new C-ordered array first);
    whether it ran as a direct pass."""
    old = core.set_direct_passes(direct)
    try:
        before = core.direct_pass_count()
        pyet.asarray(dst)[...] = expr
        return core.direct_pass_count() > before
    finally:
        core.set_direct_passes(old)


def framed(shape, dtype, order="C"):
    """An array of shape inside two items of sentinel bytes each side (intact())."""
    n, isz = int(np.prod(shape)), np.dtype(dtype).itemsize
    raw = np.full((n + 4) * isz, 0x5A, np.uint8)
    return raw, raw[2 * isz:(n + 2) * isz].view(dtype).reshape(shape, order=order)


def intact(raw, dtype, n):
    isz = np.dtype(dtype).itemsize
    return bool((raw[:2 * isz] == 0x5A).all() and (raw[(n + 2) * isz:] == 0x5A).all())


TREES = [
    ("a + b", lambda a, b: a + b),
    ("a * b + 1", lambda a, b: a * b + 1),
    ("a / b - 2.5 * a", lambda a, b: a / b - 2.5 * a),
    ("where(a > b, a, b)", lambda a, b: pyet.where(a > b, a, b) if isinstance(a, pyet.Expr)
     else np.where(a > b, a, b)),
    ("maximum(a, b) * (a - b)", lambda a, b: (pyet.maximum if isinstance(a, pyet.Expr)
                                              else np.maximum)(a, b) * (a - b)),
]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("order", "CF")
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64])
@pytest.mark.parametrize("name,tree", TREES, ids=[t[0] for t in TREES])
def test_trees_against_numpy(shape, order, dtype, name, tree):
    rng = np.random.default_rng(len(shape) * 7 + len(name))
    a = np.asarray((rng.random(shape) * 8 + 1).astype(dtype), order=order)
    b = np.asarray((rng.random(shape) * 8 + 1).astype(dtype), order=order)
    with np.errstate(all="ignore"):
        want = np.asarray(tree(a, b))
    A, B = pyet.asarray(a), pyet.asarray(b)
    e = tree(A, B)
    raw, out = framed(shape, e.dtype, order)
    took = run(out, e, direct=True)
    assert took == (out.size <= direct_max()), "the direct path is taken up to DIRECT_MAX"
    np.testing.assert_array_equal(out, want.astype(e.dtype))
    assert intact(raw, e.dtype, out.size)
    out2 = np.empty(shape, e.dtype, order=order)
    assert not run(out2, e, direct=False)
    np.testing.assert_array_equal(out2, out)


def test_comparison_into_bool_and_casts(direct_on):
    a = np.arange(20.0).reshape(4, 5)
    b = a[::-1].copy()
    A, B = pyet.asarray(a), pyet.asarray(b)
    out = np.empty((4, 5), bool)
    assert run(out, A < B, direct=True)
    np.testing.assert_array_equal(out, a < b)
    out64 = np.empty((4, 5), np.float64)
    i = np.arange(20, dtype=np.int32).reshape(4, 5)
    assert run(out64, pyet.asarray(i) * 3, direct=True)  # int32 tree cast into float64
    np.testing.assert_array_equal(out64, (i * 3).astype(np.float64))


def test_in_place_leaf_is_dst(direct_on):
    d = np.arange(12.0).reshape(3, 4)
    want = d * 2 + d
    D = pyet.asarray(d)
    assert run(d, D * 2 + D, direct=True)
    np.testing.assert_array_equal(d, want)


@pytest.mark.parametrize("offset", [1, -1, 2])
def test_leaf_overlapping_dst_is_refused(offset, direct_on):
    base = np.arange(40.0)
    dst, src = (base[offset:offset + 20], base[:20]) if offset > 0 else (
        base[:20], base[-offset:20 - offset])
    want = src.copy() * 2 + 1
    assert not run(dst, pyet.asarray(src) * 2 + 1, direct=True)
    np.testing.assert_array_equal(dst, want)


def test_itemsize_aliasing_is_refused(direct_on):
    # a float32 leaf over the float64 destination's bytes: not element for element
    base = np.arange(8.0)
    leaf = base.view(np.float32)[:8]
    want = leaf.astype(np.float64) + 1
    assert not run(base, pyet.asarray(leaf) + 1, direct=True)
    np.testing.assert_array_equal(base, want)


def test_layouts_it_refuses(direct_on):
    rng = np.random.default_rng(3)
    a = rng.random((6, 8))
    A = pyet.asarray(a)
    cases = [
        (np.empty((8, 6)).T, A + 1, "dst in Fortran order, leaf in C"),
        (np.empty((6, 16))[:, ::2], A + 1, "strided dst"),
        (np.empty((6, 8)), pyet.asarray(a[:, ::-1]) + 1, "reversed leaf"),
        (np.empty((6, 8)), pyet.asarray(np.broadcast_to(a[:1], (6, 8))) * A, "broadcast leaf"),
        (np.empty((6, 8)), A + pyet.asarray(a[0]), "leaf of fewer dimensions"),
        (np.empty((260, 260)), pyet.asarray(rng.random((260, 260))) * 2,
         "more than 65536 elements"),
    ]
    for dst, e, why in cases:
        want = np.asarray(e)
        assert not run(dst, e, direct=True), why
        np.testing.assert_array_equal(dst, want, err_msg=why)


def test_misaligned_fields(direct_on):
    rec = np.zeros(30, np.dtype([("c", "u1"), ("x", "<f8"), ("y", "<f8")], align=False))
    rec["x"] = np.arange(30.0)
    rec["y"] = 2.0
    X, Y = pyet.asarray(rec["x"]), pyet.asarray(rec["y"])
    out = np.empty(30)
    assert not run(out, X * Y, direct=True)
    np.testing.assert_array_equal(out, np.arange(30.0) * 2)
    mis = np.zeros(30 * 8 + 1, np.uint8)[1:].view(np.float64)  # a misaligned leaf
    mis[...] = np.arange(30.0)
    for e, want in ((pyet.asarray(mis) * 2, np.arange(30.0) * 2),
                    (pyet.log(pyet.asarray(mis) + 1), np.log(np.arange(30.0) + 1)),
                    (pyet.asarray(mis[::3]) + 1, np.arange(0.0, 30.0, 3) + 1)):
        raw_out, o = framed(want.shape, np.float64)
        assert not run(o, e, direct=True)
        np.testing.assert_array_equal(o, want)
        assert intact(raw_out, np.float64, o.size)
    raw = np.zeros(30 * 8 + 1, np.uint8)
    dst = raw[1:].view(np.float64)  # a misaligned destination
    assert not run(dst, pyet.asarray(np.arange(30.0)) + 1, direct=True)
    np.testing.assert_array_equal(dst, np.arange(30.0) + 1)


def test_many_leaves_and_scalars(direct_on):
    arrs = [np.full((4, 4), float(k + 1)) for k in range(9)]
    Ts = [pyet.asarray(x) for x in arrs]
    e7 = Ts[0] + Ts[1] + Ts[2] + Ts[3] + Ts[4] + Ts[5] + Ts[6]
    out = np.empty((4, 4))
    assert run(out, e7, direct=True)
    np.testing.assert_array_equal(out, np.full((4, 4), 28.0))
    e8 = e7 + Ts[7]
    assert not run(out, e8, direct=True)  # dst and 8 leaves: over DIRECT_OPS
    np.testing.assert_array_equal(out, np.full((4, 4), 36.0))
    e = Ts[0]
    for k in range(20):  # 20 scalars: over DIRECT_SCALARS
        e = e * 1.0 + (k + 0.5)
    want = arrs[0].copy()
    for k in range(20):
        want = want * 1.0 + (k + 0.5)
    assert not run(out, e, direct=True)
    np.testing.assert_array_equal(out, want)


def test_int32_scalars_bound(direct_on):
    a = np.arange(-5, 5, dtype=np.int32)
    out = np.full(10, -7, np.int32)
    assert run(out, pyet.asarray(a) * 2147483647 + (-2147483648), direct=True)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, a * np.int32(2147483647) + np.int32(-2147483648))


def test_floating_point_errors_follow_errstate(direct_on):
    a = np.array([1.0, 0.0, -1.0, 2.0])
    z = np.zeros(4)
    A, Z = pyet.asarray(a), pyet.asarray(z)
    out = np.empty(4)
    with np.errstate(divide="raise", invalid="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            pyet.asarray(out)[...] = A / Z + 1
    with np.errstate(all="ignore"):
        before = core.direct_pass_count()
        pyet.asarray(out)[...] = A / Z + 1
        assert core.direct_pass_count() == before + 1
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, a / z + 1)
    with np.errstate(invalid="warn", divide="ignore"):
        with pytest.warns(RuntimeWarning, match="invalid value"):
            pyet.asarray(out)[...] = A / Z + 1


def test_empty_and_one_element(direct_on):
    out = np.empty((0, 3))
    e = pyet.asarray(np.empty((0, 3))) + 1
    assert not run(out, e, direct=True)
    one = np.empty((1, 1))
    assert run(one, pyet.asarray(np.full((1, 1), 2.0)) * 3, direct=True)
    assert one[0, 0] == 6.0


def test_scalars_from_the_tree(direct_on):
    # collect_small takes 0-d leaves, constant (broadcast) leaves and Python
    # scalars as scalars in the program's dtype, and keeps where's condition
    # and an array exponent as leaves (collect's rule, child_scalar_ok)
    rng = np.random.default_rng(5)
    a = rng.random((6, 7)) + 0.5
    m = rng.random((6, 7)) < 0.5
    A, M = pyet.asarray(a), pyet.asarray(m)
    zero_d = pyet.asarray(np.array(3.0))
    const = pyet.asarray(np.broadcast_to(np.float32(2.5), (6, 7)))
    out = np.empty((6, 7))
    cases = [
        (A * zero_d, a * 3.0),
        (A + const, a + np.float32(2.5)),
        (pyet.where(M, A, 0.5), np.where(m, a, 0.5)),
        (pyet.where(M, 1.5, A) * 2 - 1, np.where(m, 1.5, a) * 2 - 1),
        (A ** pyet.asarray(np.full((6, 7), 2.0)), a ** 2.0),
    ]
    for e, want in cases:
        assert run(out, e, direct=True), repr(e)
        np.testing.assert_array_equal(out, want)
    i = rng.integers(0, 5, (6, 7)).astype(np.int64)
    k = rng.integers(0, 4, (6, 7)).astype(np.int64)
    outi = np.empty((6, 7), np.int64)
    run(outi, pyet.asarray(i) ** pyet.asarray(k), direct=True)
    np.testing.assert_array_equal(outi, i ** k)
    with pytest.raises(ValueError, match="negative"):
        pyet.asarray(outi)[...] = pyet.asarray(i) ** pyet.asarray(-k - 1)


def test_recorded_plans_and_user_functions(direct_on):
    # a plan's replays and passes with user functions keep their own paths
    a = np.arange(12.0).reshape(3, 4)
    A = pyet.asarray(a)
    out = np.empty((3, 4))
    plan = pyet.EvalPlan()
    plan.assign(out, A * 2 + 1)
    for _ in range(3):
        out[...] = 0
        plan.run(keep=True)  # the first run records, the later ones replay
        np.testing.assert_array_equal(out, a * 2 + 1)
    run(out, pyet.F(np.exp, A) + 1, direct=True)
    np.testing.assert_allclose(out, np.exp(a) + 1)
    run(out, pyet.F(lambda x: x * 3, A) - A, direct=True)
    np.testing.assert_array_equal(out, a * 2)


@pytest.mark.parametrize("shape", [(3, 5), (4, 3, 5, 2, 3, 1), (1000,), (1025,), (64, 130),
                                   (65537,)], ids=str)
@pytest.mark.parametrize("order", "CF")
def test_numpy_loops_in_direct_passes(shape, order, direct_on):
    # ops lowered to NumPy's own loops (Program.cloop) run in direct passes
    # too, alone and between kernels: NumPy's bits
    rng = np.random.default_rng(11)
    a32 = np.asarray((rng.random(shape) * 3 + 0.1).astype(np.float32), order=order)
    b32 = np.asarray((rng.random(shape) + 0.1).astype(np.float32), order=order)
    a64 = np.asarray(rng.random(shape) * 3 + 0.1, order=order)
    A32, B32, A64 = pyet.asarray(a32), pyet.asarray(b32), pyet.asarray(a64)
    small = int(np.prod(shape)) <= direct_max()
    cases = [(pyet.sin(A32), np.sin(a32)), (pyet.cos(A32) * 2 + 1, np.cos(a32) * 2 + 1),
             (pyet.log(A64), np.log(a64)), (A32 ** B32, a32 ** b32),
             (pyet.tan(A64) - A64, np.tan(a64) - a64)]
    for e, want in cases:
        explained = pyet.explain(e)
        assert "NumPy's loop" in explained, explained
        raw, out = framed(shape, e.dtype, order)
        assert run(out, e, direct=True) == small, explained
        np.testing.assert_array_equal(out, want)
        assert intact(raw, e.dtype, out.size)
        out2 = np.empty(shape, e.dtype, order=order)
        assert not run(out2, e, direct=False)
        np.testing.assert_array_equal(out2, out)


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (1,), (3, 5), (4, 3, 5, 2, 3, 1), (1024,), (1025,),
                                   (256, 256), (65537,)], ids=str)
@pytest.mark.parametrize("order", "CF")
def test_copies_and_fills(dtype, shape, order, direct_on):
    # dst = leaf (Program.copies_leaf) and dst = scalar (an instruction on
    # scalars only: one value, repeated) in direct passes
    rng = np.random.default_rng(13)
    a = np.asarray((rng.random(shape) * 100).astype(dtype), order=order)
    small = int(np.prod(shape)) <= direct_max()
    raw, out = framed(shape, dtype, order)
    assert run(out, pyet.asarray(a), direct=True) == small
    np.testing.assert_array_equal(out, a)
    assert intact(raw, dtype, out.size)
    value = np.asarray(7).astype(dtype)[()]
    assert run(out, value.item(), direct=True) == small
    np.testing.assert_array_equal(out, np.full(shape, value))
    assert intact(raw, dtype, out.size)
    assert run(out, pyet.asarray(out), direct=True) == small  # onto itself
    np.testing.assert_array_equal(out, np.full(shape, value))
    if dtype != np.bool_:
        run(out, pyet.asarray(a) * 0 + pyet.asarray(np.asarray(3).astype(dtype)), direct=True)
        np.testing.assert_array_equal(out, np.full(shape, 3, dtype))
    assert intact(raw, dtype, out.size)


def test_overlapping_copy_is_refused(direct_on):
    base = np.arange(30.0)
    assert not run(base[1:21], pyet.asarray(base[:20]), direct=True)
    np.testing.assert_array_equal(base[1:21], np.arange(20.0))
    base = np.arange(30.0)
    assert not run(base[:20], pyet.asarray(base[1:21]), direct=True)
    np.testing.assert_array_equal(base[:20], np.arange(1.0, 21.0))


def test_values_of_zero_d_operands_are_computed_before_dst_is_written(direct_on):
    # a tree of 0-d operands alone may raise: its value is computed once when
    # the pass is bound (as NumPy's 0-d temporary), its errors raised before
    # dst is written; the pass is then a fill, which is direct
    s, z = pyet.asarray(np.array(1.0)), pyet.asarray(np.array(0.0))
    raw, out = framed((3, 4), np.float64)
    out[...] = 7.0
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        run(out, (s + z) / z, direct=True)
    np.testing.assert_array_equal(out, np.full((3, 4), 7.0))
    assert intact(raw, np.float64, 12)
    with np.errstate(divide="ignore"):
        assert run(out, (s + z) / z, direct=True)
    assert np.isposinf(out).all() and intact(raw, np.float64, 12)
    assert run(out, 2.5, direct=True)  # a fill cannot raise: direct
    np.testing.assert_array_equal(out, np.full((3, 4), 2.5))


def test_small_passes_on_threads_keep_the_planner():
    # with the threads' least work set below a small pass (the thread tests'
    # way of running small arrays on threads), the pass is split over threads
    # as before, not run direct; the values the same
    from conftest import pyet_threads

    from pyet._kernels import parallel
    a = np.random.default_rng(2).random((32, 32))
    A = pyet.asarray(a)
    before = parallel.get_min_per_thread()
    parallel.set_min_per_thread(16)
    try:
        with pyet_threads(2) as n:
            out = np.empty((32, 32))
            took = run(out, A * 2 + 1, direct=True)
            np.testing.assert_array_equal(out, a * 2 + 1)
    finally:
        parallel.set_min_per_thread(before)
    assert took == (n < 2)
    assert run(out, A * 3, direct=True)  # the least work restored: direct again


@pytest.mark.parametrize("step", [1, 2, 3, 7, -1, -3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64, np.bool_])
def test_one_axis_strided_operands(step, dtype, direct_on):
    # operands of one axis longer than 1 stepping any whole number of items:
    # a one-op program's NumPy loop where the pass would call it, else the
    # planner; the same values either way, the destination's frame intact
    rng = np.random.default_rng(abs(step) + 17)
    n = 300
    base_a = (rng.random(abs(step) * n + 5) * 9 + 1).astype(dtype)
    base_b = (rng.random(abs(step) * n + 5) * 9 + 1).astype(dtype)
    a = base_a[2::step][:n] if step > 0 else base_a[::step][:n]
    b = base_b[2::step][:n] if step > 0 else base_b[::step][:n]
    A, B = pyet.asarray(a), pyet.asarray(b)
    trees = [(A | B, a | b), (~A, ~a)] if dtype == np.bool_ else [
        (A + B, a + b), (A * B, a * b), (pyet.maximum(A, B), np.maximum(a, b)), (-A, -a),
        (A * 2 + B, a * 2 + b)]
    for shape in [(n,), (1, n, 1)]:
        for e, want in trees:
            e = pyet.reshape(e, shape)
            raw, out = framed(shape, e.dtype)
            run(out, e, direct=True)
            np.testing.assert_array_equal(out, want.reshape(shape))
            assert intact(raw, e.dtype, n)
            # into a strided destination too
            big = np.zeros(3 * n, e.dtype)
            dst = big[1::3].reshape(shape)
            run(dst, e, direct=True)
            np.testing.assert_array_equal(dst, want.reshape(shape))
            assert (big[0::3] == 0).all() and (big[2::3] == 0).all()


def test_one_axis_strided_paths(direct_on):
    a = np.arange(900.0)[::3]
    b = np.arange(900.0, 1800.0)[::3]
    A, B = pyet.asarray(a), pyet.asarray(b)
    out = np.empty(300)
    assert run(out, A + B, direct=True)  # a one-op program with NumPy's loop: direct
    np.testing.assert_array_equal(out, a + b)
    assert not run(out, A * B + 1, direct=True)  # two ops on strided leaves: the planner
    np.testing.assert_array_equal(out, a * b + 1)
    base = np.arange(40.0)
    dst, src = base[0:20:2], base[1:21:2]  # interleaved: refused, then copied as before
    want = src + 1
    assert not run(dst, pyet.asarray(src) + 1, direct=True)
    np.testing.assert_array_equal(dst, want)
    base = np.arange(70.0)
    dst, src = base[3:63:3], base[0:60:3]  # dst[i] is src[i + 1]: refused, copied first
    want = src * 2
    assert not run(dst, pyet.asarray(src) * 2, direct=True)
    np.testing.assert_array_equal(dst, want)
    inplace = np.arange(60.0)[::3]
    T = pyet.asarray(inplace)
    assert run(inplace, T + T, direct=True)  # dst itself, element for element
    np.testing.assert_array_equal(inplace, np.arange(60.0)[::3] * 2)
    rec = np.zeros(50, np.dtype([("c", "u1"), ("x", "<f8")], align=False))
    rec["x"] = np.arange(50.0)
    assert not run(out[:50], pyet.asarray(rec["x"]) + pyet.asarray(rec["x"]), direct=True)
    np.testing.assert_array_equal(out[:50], np.arange(50.0) * 2)


PACKED = np.dtype([("c", "u1"), ("x", "<f8"), ("y", "<f4"), ("i", "<i4")], align=False)


@pytest.mark.parametrize("shape", [(50,), (5, 10), (40, 50)], ids=str)
@pytest.mark.parametrize("reverse", [False, True])
def test_packed_fields_as_leaves_and_destinations(shape, reverse, direct_on):
    # fields of a packed structured array step 17 bytes, not a multiple of
    # any item size: refused by direct passes (the planner copies such leaves
    # and scatters into such destinations), reversed fields too; every other
    # field of the destination's records, and the bytes around the records,
    # stay as they were
    rng = np.random.default_rng(len(shape) + reverse)
    src = np.zeros(shape, PACKED)
    src["x"] = rng.random(shape) * 10
    src["y"] = rng.random(shape).astype(np.float32)
    src["i"] = rng.integers(-50, 50, shape)
    raw = np.full(src.nbytes + 2 * 17, 0x5A, np.uint8)
    dst_rec = raw[17:17 + src.nbytes].view(PACKED).reshape(shape)
    dst_rec["c"], dst_rec["x"], dst_rec["y"], dst_rec["i"] = 7, -1.0, -2.0, -3
    view = (lambda a: a[::-1]) if reverse else (lambda a: a)
    X, Y, K = (pyet.asarray(view(src[f])) for f in ("x", "y", "i"))
    x, y, i = (view(src[f]) for f in ("x", "y", "i"))
    cases = [("x", X * 2 + Y, x * 2 + y), ("y", Y - 1, y - np.float32(1)),
             ("i", K + K, i + i), ("x", X, x)]
    for field, e, want in cases:
        dst = view(dst_rec[field])
        assert not run(dst, e, direct=True)
        np.testing.assert_array_equal(dst, want)
        # a contiguous destination from the same fields
        out_raw, out = framed(shape, e.dtype)
        assert not run(out, e, direct=True)  # (the leaves step 17 bytes)
        np.testing.assert_array_equal(out, want)
        assert intact(out_raw, e.dtype, out.size)
    assert (dst_rec["c"] == 7).all()
    assert (raw[:17] == 0x5A).all() and (raw[17 + src.nbytes:] == 0x5A).all()


def test_strided_operands_above_1024_keep_the_planner(direct_on):
    # a one-op program's NumPy loop on strided operands runs direct with the
    # GIL held (run_loop_rows): at most 1024 elements; longer ones the planner's
    a = np.arange(6000.0)[::3]
    b = np.arange(6000.0, 12000.0)[::3]
    A, B = pyet.asarray(a), pyet.asarray(b)
    for n, direct in ((1024, True), (1025, False), (2000, False)):
        out = np.empty(n)
        assert run(out, A[:n] + B[:n], direct=True) == direct, n
        np.testing.assert_array_equal(out, a[:n] + b[:n])


@pytest.mark.parametrize("n", [1000, 4096, 65536])
def test_floating_point_errors_of_long_direct_passes(n, direct_on):
    # passes above 1024 elements run without the GIL: their flags are still
    # reported after, by np.errstate, as NumPy's
    a = np.ones(n)
    a[n // 2] = 0.0
    A = pyet.asarray(a)
    raw, out = framed((n,), np.float64)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            run(out, 1.0 / A, direct=True)
    with np.errstate(divide="ignore"):
        assert run(out, 1.0 / A + 1, direct=True)
    want = np.ones(n) * 2
    want[n // 2] = np.inf
    np.testing.assert_array_equal(out, want)
    assert intact(raw, np.float64, n)


@pytest.mark.parametrize("n", [1024, 1025, 32768, 65536])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_one_op_numpy_loops_of_long_direct_passes(n, dtype, direct_on):
    # above 1024 elements a one-op pass the planner would give NumPy's loop
    # on contiguous rows (abs, maximum, isnan: loops.pxi CONTIG_LOOPS) runs
    # that loop direct; with the loops off, pyet's blocks direct; NumPy's
    # bits either way (NaN, -0.0), the frame intact
    rng = np.random.default_rng(n)
    a = (rng.standard_normal(n) * 100).astype(dtype)
    b = (rng.standard_normal(n) * 100).astype(dtype)
    if np.dtype(dtype).kind == "f":
        a[::97], b[5::89] = np.nan, -0.0
    A, B = pyet.asarray(a), pyet.asarray(b)
    trees = [(abs(A), np.abs(a)), (pyet.maximum(A, B), np.maximum(a, b))]
    if np.dtype(dtype).kind == "f":
        trees.append((pyet.isnan(A), np.isnan(a)))
    for on in (True, False):
        old = core.set_contiguous_loops(on)
        try:
            for e, want in trees:
                raw, out = framed((n,), want.dtype)
                assert run(out, e, direct=True)
                assert out.tobytes() == want.tobytes()
                assert intact(raw, want.dtype, n)
        finally:
            core.set_contiguous_loops(old)
