"""One compute-bound op on strided operands (issue 15: pyet gathered them into
blocks first, where NumPy's SIMD loops read them in place).  sqrt, divide and
x ** -1 run, on one thread, as NumPy's ufunc on the whole operands, where
NumPy's loop gives pyet's kernel's bits; float32 sin, cos, tanh and float64
sin, cos, tanh read the strided operand in their AVX-512 loops.
Either way the values never depend on the layout, and floating-point errors
follow np.errstate as every pass's do."""

import contextlib
import warnings

import numpy as np
import pytest
from conftest import fp_flags_raised

import pyet
from pyet._core import core
from pyet._core.ops import NUMPY_SIMD_LOOPS

N = 9000  # above the strided-ufunc threshold (4096 elements)


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    yield


def make(layout, dtype, rng, n=N, lo=0.25, hi=4.25):
    """An operand of about n elements in [lo, hi) with the given layout."""
    side = int(n ** 0.5)

    def base(shape):
        return (rng.random(shape) * (hi - lo) + lo).astype(dtype)

    if layout == "step2":
        return base((side, 2 * side))[:, ::2]
    if layout == "step3":
        return base((3 * n,))[::3]
    if layout == "step7":
        return base((7 * n,))[::7]
    if layout == "negstep":
        return base((side, side))[::-1, ::-1]
    if layout == "neg3":
        return base((3 * n,))[::-3]
    if layout == "fortran_step":
        return np.asfortranarray(base((2 * side, side)))[::2, :]
    if layout == "fortran":
        return np.asfortranarray(base((side, side)))
    if layout == "0d":
        return base(())
    if layout == "empty":
        return base((0, 2 * side))[:, ::2]
    if layout == "small_step":
        return base((30,))[::3]
    raise ValueError(layout)


LAYOUTS = ["step2", "step3", "step7", "negstep", "neg3", "fortran_step", "fortran", "0d",
           "empty", "small_step"]
DTYPES = [np.float32, np.float64]

# (name, pyet, NumPy, arity)
EXACT = [
    ("sqrt", pyet.sqrt, np.sqrt, 1),
    ("divide", lambda a, b: a / b, np.divide, 2),
    ("reciprocal", lambda a: a ** -1, lambda a: np.power(a, -1.0, dtype=a.dtype), 1),
    ("scalar/a", lambda a: 3.0 / a, lambda a: np.divide(3.0, a), 1),
    ("a/scalar", lambda a: a / 0.1, lambda a: np.divide(a, 0.1), 1),
]
TRIG = [("sin", pyet.sin, np.sin), ("cos", pyet.cos, np.cos), ("tanh", pyet.tanh, np.tanh)]


def bits(x):
    x = np.asarray(x)
    return x.dtype, x.shape, x.tobytes()


@contextlib.contextmanager
def engine_only():
    """The same pass on pyet's blocks (the strided-ufunc path off)."""
    core.set_whole_ufunc_min(-1)
    try:
        yield
    finally:
        core.set_whole_ufunc_min(4096)


def assign(expr, shape, dtype):
    out = np.full(shape, 7, dtype)
    pyet.asarray(out)[...] = expr
    return out


@pytest.mark.parametrize("name, fp, fn, arity", EXACT)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_exact_ops_keep_numpys_bits(name, fp, fn, arity, dtype, layout):
    rng = np.random.default_rng(0)
    arrs = [make(layout, dtype, rng) for _ in range(arity)]
    want = fn(*[np.array(a, order="C") for a in arrs])
    expr = fp(*[pyet.asarray(a) for a in arrs])
    got = assign(expr, arrs[0].shape, dtype)
    assert bits(got) == bits(want)
    with engine_only():  # pyet's kernel: the same bits
        assert bits(assign(expr, arrs[0].shape, dtype)) == bits(want)
    assert bits(pyet.evaluate(expr)) == bits(want)


@pytest.mark.parametrize("name, fp, fn", TRIG)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_sin_cos_tanh_same_bits_on_every_layout(name, fp, fn, dtype, layout):
    rng = np.random.default_rng(1)
    a = make(layout, dtype, rng, lo=-6, hi=2)
    got = assign(fp(pyet.asarray(a)), a.shape, dtype)
    # pyet's kernel on contiguous memory
    want = pyet.evaluate(fp(pyet.asarray(np.array(a, order="C"))))
    assert bits(got) == bits(want)
    # within NumPy's bounds
    np.testing.assert_allclose(got, fn(a), rtol=4 * np.finfo(dtype).eps,
                               atol=4 * np.finfo(dtype).eps)


def test_strided_fortran_destination_and_broadcast_leaf():
    rng = np.random.default_rng(2)
    a = make("step3", np.float64, rng, 6400).reshape(80, 80)
    b = rng.random(80) + 0.5  # broadcast along rows
    out = np.asfortranarray(np.zeros((80, 160)))[:, ::2]
    pyet.asarray(out)[...] = pyet.asarray(a) / pyet.asarray(b)
    assert bits(out) == bits(a / b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_destination_aliasing_an_input(dtype):
    rng = np.random.default_rng(3)
    base = (rng.random(3 * N) + 0.5).astype(dtype)
    # in place on the same strided view
    x = base.copy()
    view = x[::3]
    want = np.sqrt(view)
    t = pyet.asarray(view)
    t[...] = pyet.sqrt(t)
    assert bits(view) == bits(want)
    # out is the input reversed (overlapping other than element for element)
    x = base.copy()
    src, dst = x[::3], x[::3][::-1]
    want = np.divide(1.0, src.copy(), dtype=dtype)
    pyet.asarray(dst)[...] = pyet.asarray(src) ** -1
    assert bits(dst) == bits(want)
    # out shifted one step along the input
    x = base.copy()
    src, dst = x[:-3:3], x[3::3]
    want = pyet.evaluate(pyet.sin(pyet.asarray(src.copy())))
    pyet.asarray(dst)[...] = pyet.sin(pyet.asarray(src))
    assert bits(dst) == bits(want)
    # the divisor is the destination
    x = base.copy()
    a = (rng.random(N) + 0.5).astype(dtype)[::-1]
    d = x[::3]
    want = a / d.copy()
    pyet.asarray(d)[...] = pyet.asarray(a) / pyet.asarray(d)
    assert bits(d) == bits(want)


def test_scalar_exponents_other_than_minus_one_and_0d_operands():
    rng = np.random.default_rng(4)
    a = make("step3", np.float64, rng)
    for p in (-2, 0.5, 3, -1.5):
        got = assign(pyet.asarray(a) ** p, a.shape, np.float64)
        np.testing.assert_allclose(got, np.power(a, p), rtol=5e-16)
    # the exponent -1 as a 0-d array, and int -1 with float32
    got = assign(pyet.asarray(a) ** pyet.asarray(np.array(-1.0)), a.shape, np.float64)
    assert bits(got) == bits(1.0 / a)
    a32 = a.astype(np.float32)
    got = assign(pyet.asarray(a32) ** -1, a.shape, np.float32)
    assert bits(got) == bits(np.float32(1) / a32)
    # a 0-d divisor of another dtype: cast first, as store_scalar does
    got = assign(pyet.asarray(a32) / pyet.asarray(np.array(3, np.int32)), a.shape, np.float32)
    assert bits(got) == bits(a32 / np.float32(3))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["step3", "negstep"])
def test_errors_follow_errstate(dtype, layout):
    rng = np.random.default_rng(5)
    a = make(layout, dtype, rng)
    z = a.copy()
    z.flat[7] = 0
    neg = a.copy()
    neg.flat[9] = -1
    b = make(layout, dtype, rng)  # the strided operand of the division
    cases = [("divide", "divide by zero", lambda: pyet.asarray(b) / pyet.asarray(z)),
             ("divide", "divide by zero", lambda: pyet.asarray(z) ** -1),
             ("invalid", "invalid value", lambda: pyet.sqrt(pyet.asarray(neg))),
             ("invalid", "invalid value", lambda: pyet.asarray(z) / pyet.asarray(z))]
    for kind, what, build in cases:
        with np.errstate(all="ignore", **{kind: "warn"}):
            with pytest.warns(RuntimeWarning, match=f"{what} encountered in a pyet evaluation") \
                    as record:
                assign(build(), a.shape, dtype)
            assert len(record) == 1
        with np.errstate(all="ignore", **{kind: "raise"}):
            with pytest.raises(FloatingPointError, match=what):
                assign(build(), a.shape, dtype)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("error")
            assign(build(), a.shape, dtype)
        seen = []
        with np.errstate(all="ignore", **{kind: "call"}):
            old = np.seterrcall(lambda w, flag, seen=seen: seen.append(w))
            try:
                assign(build(), a.shape, dtype)
            finally:
                np.seterrcall(old)
        assert seen == [what]
    # a clean pass stays quiet, and raises nothing a pass before left behind
    with np.errstate(all="raise"):
        assign(pyet.sqrt(pyet.asarray(a)) + 0, a.shape, dtype)
        assign(pyet.sqrt(pyet.asarray(a)), a.shape, dtype)
        assign(pyet.sin(pyet.asarray(a)), a.shape, dtype)


def test_errstate_is_restored_and_kept():
    a = make("step3", np.float64, np.random.default_rng(6))
    before = np.geterr(), np.getbufsize(), np.geterrcall()
    assign(pyet.sqrt(pyet.asarray(a)), a.shape, np.float64)
    assert (np.geterr(), np.getbufsize(), np.geterrcall()) == before
    with np.errstate(divide="raise"):
        assign(pyet.sqrt(pyet.asarray(a)), a.shape, np.float64)
        assert np.geterr()["divide"] == "raise"
        with pytest.raises(FloatingPointError):
            np.divide(1.0, 0.0)
    assert (np.geterr(), np.getbufsize(), np.geterrcall()) == before


def test_threads_and_kept_plans():
    rng = np.random.default_rng(7)
    x = (rng.random(3 * 200_000) + 0.5)[::3]
    y = (rng.random(3 * 200_000) + 0.5)[::3]
    before = pyet.get_num_threads()
    try:
        pyet.set_num_threads(2)  # pyet's threads, on its blocks
        got = pyet.evaluate(pyet.asarray(x) / pyet.asarray(y))
    finally:
        pyet.set_num_threads(before)
    assert bits(got) == bits(x / y)
    out = np.empty(x.shape)
    plan = pyet.EvalPlan()
    plan.assign(out, pyet.sin(pyet.asarray(x)))
    for _ in range(3):
        plan.run(keep=True)
        assert bits(out) == bits(pyet.evaluate(pyet.sin(pyet.asarray(x.copy()))))
        x[:] = rng.random(x.size) + 0.5


def test_fused_trees_keep_pyets_kernels():
    # a tree of two ops on strided leaves is one fused pass of pyet's kernels
    rng = np.random.default_rng(8)
    a = make("step3", np.float32, rng)
    text = pyet.explain(pyet.tanh(pyet.asarray(a)) * 2)
    assert "tanh[float32->float32](leaf0)" in text and "NumPy" not in text
    got = assign(pyet.tanh(pyet.asarray(a)) * 2, a.shape, np.float32)
    np.testing.assert_allclose(got, np.tanh(a) * 2, rtol=3e-7, atol=3e-7)
    # an op on NumPy's loop (ops.NUMPY_SIMD_LOOPS, NUMPY_LOOPS) stays one instruction of
    # the fused pass, on pyet's gathered blocks: NumPy's bits
    text = pyet.explain(pyet.sin(pyet.asarray(a)) * 2)
    assert text.count("\n  ") == 2 and "elementwise pass" in text
    got = assign(pyet.sin(pyet.asarray(a)) * 2, a.shape, np.float32)
    want = np.sin(np.ascontiguousarray(a)) * np.float32(2)
    if ("sin", "float32") in NUMPY_SIMD_LOOPS:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=3e-7, atol=3e-7)


def special_values(dtype, n, rng):
    """Random values of every magnitude with nan, inf, zeros, subnormals, tiny
    and huge arguments (the kernels' slow lanes) mixed in."""
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)).astype(dtype)
    info = np.finfo(dtype)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, info.smallest_subnormal,
                         -info.smallest_subnormal, info.tiny, 1e-30, 3e-20, 2.0 ** -13,
                         2.0 ** 19, 2.0 ** 20, -2.0 ** 21, 1e30, info.max], dtype)
    x[rng.integers(0, n, 400)] = rng.choice(specials, 400)
    return x


@pytest.mark.parametrize("name", ["sin", "cos", "tanh", "exp", "log", "sigmoid"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("step", [2, 3, 7, -1, -5])
@pytest.mark.parametrize("n", [5, 17, 1000, 20_000])
def test_strided_kernels_give_the_contiguous_bits_and_flags(name, dtype, step, n):
    # float32 sin, cos, tanh and float64 tanh, exp, log, sigmoid read a strided
    # operand in their loop (pyet_kernel_strided): the bits and the flags of
    # the contiguous pass (the others: gathered into blocks, as before)
    rng = np.random.default_rng(9)
    x = special_values(dtype, n, rng)
    base = np.zeros(n * abs(step), dtype)
    view = base[::step]
    view[...] = x
    f = getattr(pyet, name)

    def run(a):
        return np.asarray(pyet.evaluate(f(pyet.asarray(a))))

    with np.errstate(all="ignore"):
        want, got = run(x), run(view)
    assert bits(got) == bits(want)
    assert fp_flags_raised(lambda: run(view)) == fp_flags_raised(lambda: run(x))
    # into a strided destination, and in place on the strided view
    out = np.zeros(2 * n, dtype)[::-2]
    with np.errstate(all="ignore"):
        pyet.asarray(out)[...] = f(pyet.asarray(view))
        assert bits(out) == bits(want)
        pyet.asarray(view)[...] = f(pyet.asarray(view))
    assert bits(view) == bits(want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_kernels_on_threads(threaded, dtype):
    rng = np.random.default_rng(10)
    x = special_values(dtype, 50_000, rng)
    base = np.zeros(3 * x.size, dtype)
    base[::3] = x
    with np.errstate(all="ignore"):
        for name in ("sin", "cos", "tanh", "exp", "log"):
            f = getattr(pyet, name)
            got = pyet.evaluate(f(pyet.asarray(base[::3])))
            want = pyet.evaluate(f(pyet.asarray(x)))
            assert bits(got) == bits(want)


# exact ops whose NumPy C loop a one-op pass calls on rows stepping 2 items
# (8-byte) or 3 and more (Program.whole_far): NumPy's values, and the values
# pyet's blocks give on every other layout
FAR_OPS = [
    ("add", lambda a, b: a + b, np.add, 2), ("subtract", lambda a, b: a - b, np.subtract, 2),
    ("multiply", lambda a, b: a * b, np.multiply, 2),
    ("maximum", pyet.maximum, np.maximum, 2), ("minimum", pyet.minimum, np.minimum, 2),
    ("less", lambda a, b: a < b, np.less, 2), ("not_equal", lambda a, b: a != b, np.not_equal, 2),
    ("greater_equal", lambda a, b: a >= b, np.greater_equal, 2),
    ("absolute", abs, np.absolute, 1), ("negative", lambda a: -a, np.negative, 1),
    ("and", lambda a, b: a & b, np.bitwise_and, 2), ("xor", lambda a, b: a ^ b, np.bitwise_xor, 2),
    ("invert", lambda a: ~a, np.invert, 1),
]
FAR_LAYOUTS = ["step2", "step3", "step7", "neg3", "negstep", "fortran_step", "0d", "empty",
               "small_step"]


def far_operand(layout, dtype, rng, n=N):
    if np.dtype(dtype).kind == "i":
        return make(layout, dtype, rng, n, lo=-5e7, hi=5e7)
    a = make(layout, dtype, rng, n, lo=-50, hi=50)
    if a.size > 30:  # specials where the strided loop reads them (a view: written through)
        a.flat[np.arange(1, 31, 5)] = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, -np.nan],
                                               dtype)
    return a


@pytest.mark.parametrize("name, fp, fn, arity", FAR_OPS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("layout", FAR_LAYOUTS)
def test_exact_ops_on_numpys_strided_loops(name, fp, fn, arity, dtype, layout):
    if np.dtype(dtype).kind == "f" and name in ("and", "xor", "invert"):
        pytest.skip("integer op")
    rng = np.random.default_rng(5)
    arrs = [far_operand(layout, dtype, rng) for _ in range(arity)]
    if arity == 2 and arrs[0].size > 30:  # equal pairs, opposite zeros
        arrs[1].flat[:3] = arrs[0].flat[:3]
        arrs[1].flat[6] = 0
    expr = fp(*[pyet.asarray(a) for a in arrs])
    with np.errstate(all="ignore"):
        want = fn(*arrs)
        got = assign(expr, arrs[0].shape, want.dtype)
        np.testing.assert_array_equal(got, want)
        with engine_only():  # pyet's blocks: the same bits
            assert bits(assign(expr, arrs[0].shape, want.dtype)) == bits(got)
        assert bits(pyet.evaluate(expr)) == bits(got)


def test_strided_loop_listing_scalars_broadcasts_and_aliasing():
    rng = np.random.default_rng(6)
    a = make("step3", np.float64, rng)
    ta = pyet.asarray(a)
    assert "NumPy's C loop" in pyet.explain(ta + ta)
    # a scalar operand (step 0) on either side
    for expr, want in ((ta - 2.5, a - 2.5), (2.5 - ta, 2.5 - a), (pyet.maximum(ta, 1.0),
                                                                  np.maximum(a, 1.0))):
        assert bits(assign(expr, a.shape, np.float64)) == bits(want)
    # a broadcast row against strided rows, into a strided Fortran destination
    m = make("step3", np.float64, rng, 6400).reshape(80, 80)
    row = rng.random(80)
    out = np.asfortranarray(np.zeros((80, 240)))[:, ::3]
    pyet.asarray(out)[...] = pyet.asarray(m) * pyet.asarray(row)
    assert bits(out) == bits(m * row)
    # in place, and the destination reversed over its own operand
    x = rng.integers(-99, 99, 3 * N).astype(np.int64)
    v = x[::3]
    want = v ^ 7
    t = pyet.asarray(v)
    t[...] = t ^ 7
    assert bits(v) == bits(want)
    x = rng.random(3 * N)
    src, dst = x[::3], x[::3][::-1]
    want = src + src
    pyet.asarray(dst)[...] = pyet.asarray(src) + pyet.asarray(src)
    assert bits(dst) == bits(want)
    # the flags of NumPy's loop follow np.errstate (inf - inf: invalid)
    b = np.full(3 * N, np.inf)[::3]
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError, match="invalid value"):
            assign(pyet.asarray(b) - pyet.asarray(b), b.shape, np.float64)


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.float32, np.int32])
def test_reversed_rows_on_numpys_loops(dtype):
    # reversed 8-byte rows (a[::-1, ::-1]) run NumPy's loops on each row
    # where they lie: NumPy's bits, pyet's blocks' bits, destinations between
    # sentinels, reversed and strided destinations, in place, mixed with
    # contiguous and broadcast operands
    rng = np.random.default_rng(11)
    base = far_operand("negstep", dtype, rng).copy()
    a = base[::-1, ::-1]
    b = np.ascontiguousarray(far_operand("negstep", dtype, rng))
    row = np.ascontiguousarray(a[0])[::-1]
    cases = [(lambda x, y: x + y, np.add, (a, a)), (lambda x, y: x - y, np.subtract, (a, b)),
             (pyet.maximum, np.maximum, (b, a)), (lambda x, y: x < y, np.less, (a, row)),
             (abs, np.absolute, (a,)), (lambda x: -x, np.negative, (a[::-1],))]
    for fp, fn, arrs in cases:
        with np.errstate(all="ignore"):
            want = fn(*arrs)
            expr = fp(*[pyet.asarray(x) for x in arrs])
            got = assign(expr, want.shape, want.dtype)
            assert bits(got) == bits(want)
            with engine_only():
                assert bits(assign(expr, want.shape, want.dtype)) == bits(want)
            for step in (1, 2):  # a reversed, then a reversed strided destination
                big = np.full((want.shape[0] + 2, step * want.shape[1] + 2), 3, want.dtype)
                fresh = big.copy()
                view = big[1:-1, 1:-1][::-1, ::step]
                pyet.asarray(view)[...] = expr
                assert bits(view) == bits(want)
                mask = np.ones(big.shape, bool)
                mask[1:-1, 1:-1][:, ::step] = False
                assert bits(big[mask]) == bits(fresh[mask])
    # in place on the reversed view, and into the reversed operand's own memory
    x = base.copy()
    v = x[::-1, ::-1]
    want = np.absolute(v)
    t = pyet.asarray(v)
    t[...] = abs(t)
    assert bits(v) == bits(want)
    x = base.copy()
    want = x[::-1, ::-1] + x
    pyet.asarray(x)[...] = pyet.asarray(x[::-1, ::-1]) + pyet.asarray(x)
    assert bits(x) == bits(want)


@pytest.mark.parametrize("far", [(48, 4096), (48, 0), (0, 0), (0, 4096)])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [3, 511, 513, 20_000])
@pytest.mark.parametrize("dtype, steps", [
    (np.float64, (7, 7, 7)), (np.float64, (8, -7, 16, 9, 7)), (np.float32, (16, 13, -12)),
    (np.int32, (12, 16)), (np.float64, (7, 2, 7, 1)), (np.int64, (7, 7))])
def test_rows_stepping_far_gathered_together(far, threads, n, dtype, steps):
    """A block's leaves stepping an item a cache line or more are gathered in one loop
    (GATHER_FAR_BYTES, pyet_gather_rows: two to four at a time, the rest one by one),
    among near and contiguous leaves, a leaf used twice, in long blocks (GATHER_FAR_BLOCK,
    here from 64 KiB of such rows on): NumPy's bits, the destination's neighbours
    untouched, each setting on and off."""
    rng = np.random.default_rng(len(steps) * 1000 + n)
    arrays = [rng.integers(-50, 50, n * abs(s)).astype(dtype)[::s] for s in steps]
    leaves = [pyet.asarray(a) for a in arrays]
    expr, want = leaves[0] * leaves[-1], arrays[0] * arrays[-1]
    for t, a in zip(leaves[1:], arrays[1:], strict=True):
        expr, want = expr + t * 3, want + a * dtype(3)
    before, old = pyet.get_num_threads(), core.set_gather_far(*far)
    core.set_gather_block(128, min_bytes=1 << 16)
    try:
        pyet.set_num_threads(threads)
        buf = np.full(n + 2, 7, dtype)
        pyet.asarray(buf[1:-1])[...] = expr
    finally:
        core.set_gather_far(*old)
        core.set_gather_block(128)
        pyet.set_num_threads(before)
    np.testing.assert_array_equal(buf[1:-1], want)
    assert buf[0] == 7 and buf[-1] == 7


def packed_int64_field(n):
    """An int64 field of a packed record (13-byte stride, not a multiple of 8)."""
    return np.zeros(n, np.dtype([("pad", "u1", 5), ("x", "<i8")]))["x"]


@pytest.mark.parametrize("layout", [2, 3, 7, -1, -5, "packed"])
@pytest.mark.parametrize("n", [1, 5, 17, 1000, 20_000])
def test_int64_relu_reads_strided_operand_in_place(layout, n):
    # int64 relu of a strided row reads it in its loop (pyet_kernel_strided's
    # 4-unrolled loop: gathered into blocks, it took 1.27x NumPy's maximum(a, 0))
    rng = np.random.default_rng(11)
    info = np.iinfo(np.int64)
    x = rng.integers(info.min, info.max, n, dtype=np.int64, endpoint=True)
    x[rng.integers(0, n, min(n, 6))] = rng.choice([info.min, info.max, -1, 0, 1], min(n, 6))
    view = packed_int64_field(n) if layout == "packed" else \
        np.zeros(n * abs(layout), np.int64)[::layout]
    view[...] = x
    want = np.maximum(x, 0)
    sentinel = np.int64(-0x5A5A5A5A5A5A5A5B)
    out = np.full(n + 2, sentinel)
    pyet.asarray(out)[1:-1] = pyet.relu(pyet.asarray(view))
    assert out[0] == sentinel and out[-1] == sentinel
    np.testing.assert_array_equal(out[1:-1], want)
    strided_out = np.full(2 * n + 1, sentinel)
    pyet.asarray(strided_out)[-2::-2] = pyet.relu(pyet.asarray(view))
    np.testing.assert_array_equal(strided_out[-2::-2], want)
    assert (strided_out[-1::-2] == sentinel).all()
    pyet.asarray(view)[...] = pyet.relu(pyet.asarray(view))  # in place
    np.testing.assert_array_equal(view, want)


def test_int64_relu_strided_on_threads(threaded):
    rng = np.random.default_rng(12)
    x = rng.integers(-1000, 1000, 300_001, dtype=np.int64)
    base = np.zeros(3 * x.size, np.int64)
    base[::3] = x
    got = np.asarray(pyet.evaluate(pyet.relu(pyet.asarray(base[::3]))))
    np.testing.assert_array_equal(got, np.maximum(x, 0))


@pytest.mark.parametrize("name, fp, fn, arity", [op for op in FAR_OPS if op[0] in (
    "less", "not_equal", "greater_equal")])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
@pytest.mark.parametrize("layout", ["step2", "negstep", "small_step"])
def test_compares_of_near_rows_from_memory(name, fp, fn, arity, dtype, layout):
    # passes from memory (set_sx_far(0): every pass) take NumPy's loop for
    # 8-byte rows stepping 2 items into bool; into a strided bool destination too
    rng = np.random.default_rng(8)
    arrs = [far_operand(layout, dtype, rng) for _ in range(arity)]
    arrs[1].flat[:3] = arrs[0].flat[:3]
    old = core.set_sx_far(0)
    try:
        expr = fp(*[pyet.asarray(a) for a in arrs])
        with np.errstate(all="ignore"):
            want = fn(*arrs)
        got = assign(expr, arrs[0].shape, want.dtype)
        np.testing.assert_array_equal(got, want)
        buf = np.ones((want.size * 2 + 16,), np.bool_)
        dst = buf[8:-8][::2].reshape(want.shape)
        pyet.asarray(dst)[...] = expr
        np.testing.assert_array_equal(dst, want)
        assert buf[:8].all() and buf[-8:].all() and buf[8:-8][1::2].all()
    finally:
        core.set_sx_far(old)


@pytest.mark.parametrize("name, fp, fn", [
    ("isnan", pyet.isnan, np.isnan), ("isinf", pyet.isinf, np.isinf),
    ("isfinite", pyet.isfinite, np.isfinite), ("less", lambda a: a < 0.5, lambda a: a < 0.5),
    ("absolute", abs, np.absolute)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("step", [2, -1, -2])
def test_predicates_into_strided_destinations(name, fp, fn, dtype, step):
    # NumPy 2.4's AVX-512 isnan/isinf/isfinite loops leave bool rows stepping 2
    # or backwards unwritten (np.isnan(x, out=b[::2]) too); a pass whose loop
    # the probe finds so writes them through pyet's blocks
    x = np.random.default_rng(3).standard_normal(3000).astype(dtype)
    x[::7], x[3::11], x[5::13] = np.nan, np.inf, -np.inf
    want = np.array([fn(v) for v in x])
    span = abs(step) * x.size * want.itemsize
    buf = np.full(span + 16, 7, np.uint8)
    dst = buf[8:8 + span].view(want.dtype)[::step]
    pyet.asarray(dst)[...] = fp(pyet.asarray(x))
    np.testing.assert_array_equal(dst, want)
    untouched = np.ones(buf.size, bool)
    untouched[8:8 + span].reshape(-1, want.itemsize)[::step] = False
    assert (buf[untouched] == 7).all()


@pytest.mark.parametrize("fn", ["power", "arctan2", "divide", "sqrt_sum"])
@pytest.mark.parametrize("other", ["flat", "step3"])
@pytest.mark.parametrize("piece", [128, 1024, 1 << 20])
def test_compute_bound_kernel_beside_a_broadcast_column(fn, other, piece):
    # one costly float64 kernel with a broadcast column (stride 0 along the
    # rows, filled once a block, not piece by piece) beside a flat or strided
    # operand (gathered in pieces): the bits of the column materialized,
    # NumPy's values, the bytes around dst untouched
    rng = np.random.default_rng(21)
    rows, m = 9, 700
    col = rng.uniform(0.25, 4.0, (rows, 1))
    wide = rng.uniform(0.25, 4.0, (rows, 3 * m))
    y = wide[:, ::3] if other == "step3" else np.ascontiguousarray(wide[:, :m])
    bcol = np.broadcast_to(col, (rows, m))
    ops = {"power": (lambda c, t: c ** t, np.power),
           "arctan2": (lambda c, t: pyet.arctan2(t, c), lambda c, t: np.arctan2(t, c)),
           "divide": (lambda c, t: t / c, lambda c, t: t / c),
           "sqrt_sum": (lambda c, t: pyet.sqrt(c + t), lambda c, t: np.sqrt(c + t))}
    build, ref = ops[fn]
    before = core.set_gather_piece(piece)
    try:
        results = []
        for c in (bcol, np.ascontiguousarray(bcol)):
            buf = np.full(rows * m + 16, -7.0)
            out = buf[8:-8].reshape(rows, m)
            pyet.asarray(out)[...] = build(pyet.asarray(c), pyet.asarray(y))
            assert (buf[:8] == -7).all() and (buf[-8:] == -7).all()
            results.append(out.copy())
    finally:
        core.set_gather_piece(before)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], ref(bcol, y), rtol=1e-15)
