"""Matrix products (issue 3, sections 1 and 5): pyet.dot / @, batch_dot and outer against NumPy's
@ for every form, operand layout, dtype, scale/accumulate form, destination and aliasing case,
and every error path.  NumPy is the oracle: floats to BLAS rounding, ints and bools exactly."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyet

FLOATS = (np.float32, np.float64)
DTYPES = (np.float32, np.float64, np.int32, np.int64, np.bool_)


def rand(shape, dtype=np.float64, seed=0, lo=-1.0, hi=1.0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind == "i":
        return rng.integers(-9, 10, size=shape).astype(dt)
    return rng.uniform(lo, hi, size=shape).astype(dt)


def check(got, want, k=1):
    """got == want to BLAS rounding for inner dimension k (exact for ints and bools)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
        return
    k = max(k, 1)
    tol = 1e-5 if want.dtype == np.float32 else 1e-12
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=tol * k, atol=tol * k * scale)


# ------------------------------------------------------------------ operand layouts

def layout(x, kind):
    """The values of x (2-D or 1-D) in another memory layout (a view where possible)."""
    x = np.asarray(x)
    if kind == "C":
        return np.ascontiguousarray(x)
    if kind == "F":
        return np.asfortranarray(x)
    if kind == "rows":  # padded rows: row stride > row length (a leading dimension)
        big = np.zeros(x.shape[:-1] + (x.shape[-1] + 3,), x.dtype)
        big[..., : x.shape[-1]] = x
        return big[..., : x.shape[-1]]
    if kind == "step2":  # every other column (1-D: every other element): non-unit inner stride
        big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
        big[..., ::2] = x
        return big[..., ::2]
    if kind == "T":  # transposed view of a C array
        return np.ascontiguousarray(x.T).T
    if kind == "neg":  # negative strides on every axis
        flip = (slice(None, None, -1),) * x.ndim
        return np.ascontiguousarray(x[flip])[flip]
    if kind == "negrow":  # negative row stride only
        return np.ascontiguousarray(x[::-1])[::-1]
    if kind == "bcast":  # broadcast rows (stride 0), only when x's rows are all equal
        return np.broadcast_to(x[0], x.shape) if x.ndim == 2 else np.broadcast_to(x[:1], x.shape)
    raise AssertionError(kind)


LAYOUTS_2D = ["C", "F", "rows", "step2", "T", "neg", "negrow"]
LAYOUTS_1D = ["C", "step2", "neg"]


def test_layout_helper_makes_the_layouts_it_claims():
    x = rand((4, 5))
    for kind in LAYOUTS_2D:
        y = layout(x, kind)
        np.testing.assert_array_equal(y, x)
    assert layout(x, "F").flags.f_contiguous and not layout(x, "F").flags.c_contiguous
    assert layout(x, "rows").strides == (8 * 8, 8)
    assert layout(x, "step2").strides == (8 * 10, 16)
    assert layout(x, "neg").strides == (-40, -8)
    assert layout(x, "negrow").strides == (-40, 8)


# ------------------------------------------------------------------ every form


@pytest.mark.parametrize("lb", LAYOUTS_2D)
@pytest.mark.parametrize("la", LAYOUTS_2D)
def test_mm_every_layout_pair_float64(la, lb):
    a, b = rand((5, 4), seed=1), rand((4, 3), seed=2)
    A, B = layout(a, la), layout(b, lb)
    out = np.full((5, 3), np.nan)
    pyet.asarray(out)[...] = pyet.dot(pyet.asarray(A), pyet.asarray(B))
    check(out, a @ b, 4)
    check(pyet.evaluate(pyet.asarray(A) @ pyet.asarray(B)), a @ b, 4)


@pytest.mark.parametrize("la", LAYOUTS_2D)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.bool_])
def test_mm_layouts_other_dtypes(dtype, la):
    a, b = rand((6, 5), dtype, 1), rand((5, 7), dtype, 2)
    for A, B in ((layout(a, la), b), (a, layout(b, la))):
        check(np.asarray(pyet.dot(A, B)), a @ b, 5)


@pytest.mark.parametrize("lx", LAYOUTS_1D)
@pytest.mark.parametrize("la", LAYOUTS_2D)
@pytest.mark.parametrize("dtype", DTYPES)
def test_mv_and_vm(dtype, la, lx):
    a = rand((5, 4), dtype, 1)
    x, y = rand(4, dtype, 2), rand(5, dtype, 3)
    A = pyet.asarray(layout(a, la))
    X, Y = pyet.asarray(layout(x, lx)), pyet.asarray(layout(y, lx))
    out = np.zeros(5, dtype)
    pyet.asarray(out)[...] = pyet.dot(A, X)
    check(out, a @ x, 4)
    out = np.zeros(4, dtype)
    pyet.asarray(out)[...] = Y @ A
    check(out, y @ a, 5)
    check(np.asarray(pyet.dot(A.T, Y)), a.T @ y, 5)  # transposed matrix times vector


@pytest.mark.parametrize("lx", LAYOUTS_1D)
@pytest.mark.parametrize("dtype", DTYPES)
def test_vv_is_0d(dtype, lx):
    x, y = rand(7, dtype, 1), rand(7, dtype, 2)
    e = pyet.dot(pyet.asarray(layout(x, lx)), layout(y, lx))
    assert e.shape == () and e.ndim == 0
    assert e.dtype == (x @ y).dtype
    s = np.zeros((), dtype)
    pyet.asarray(s)[...] = e
    check(s, np.asarray(x @ y), 7)
    check(pyet.evaluate(e), np.asarray(x @ y), 7)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", ["A.T@B", "A@B.T", "A.T@B.T", "dot(B.T, C)", "(A@B).T",
                                  "transpose(A)@B", "swapaxes(A)@B"])
def test_transposed_operands(form, dtype):
    a, b = rand((4, 6), dtype, 1), rand((4, 5), dtype, 2)  # a.T @ b is (6, 5)
    A, B = pyet.asarray(a), pyet.asarray(b)
    bt = rand((5, 4), dtype, 3)
    cases = {
        "A.T@B": (lambda: A.T @ B, a.T @ b, 4),
        "A@B.T": (lambda: pyet.asarray(a.T.copy()) @ pyet.asarray(bt).T, a.T @ bt.T, 4),
        "A.T@B.T": (lambda: A.T @ pyet.asarray(bt).T, a.T @ bt.T, 4),
        "dot(B.T, C)": (lambda: pyet.dot(A.T, B), a.T @ b, 4),
        "(A@B).T": (lambda: (A.T @ B).T, (a.T @ b).T, 4),
        "transpose(A)@B": (lambda: pyet.transpose(A) @ B, a.T @ b, 4),
        "swapaxes(A)@B": (lambda: pyet.dot(pyet.swapaxes(A, 0, -1), B), a.T @ b, 4),
    }
    build, want, k = cases[form]
    e = build()
    assert e.shape == want.shape
    out = np.zeros(want.shape, dtype)
    pyet.asarray(out)[...] = e
    check(out, want, k)


def test_dot_node_is_lazy():
    a, b = rand((3, 3), seed=1), rand((3, 3), seed=2)
    e = pyet.dot(a, pyet.asarray(b))
    a[...] = 2.0  # the operand is read at evaluation, not when the node is built
    check(np.asarray(e), a @ b, 3)
    t = e.T
    b[...] = 3.0
    check(np.asarray(t), (a @ b).T, 3)


def test_ndarray_matmul_tensor_and_operand_kinds():
    a, b = rand((3, 4), seed=1), rand((4, 2), seed=2)
    A, B = pyet.asarray(a), pyet.asarray(b)
    for e in (a @ B, A @ b, A @ B, np.matmul(a, B), pyet.dot(a, b), pyet.dot(A + 0, B * 1),
              pyet.dot(a.tolist(), B)):
        assert isinstance(e, pyet.Expr) and e.shape == (3, 2)
        check(np.asarray(e), a @ b, 4)
    out = np.zeros((3, 2))
    np.matmul(a, B, out=out)  # __array_ufunc__ with out=: evaluated into out
    check(out, a @ b, 4)


def test_dot_of_expression_operands():
    a, b, c = rand((4, 3), seed=1), rand((3, 5), seed=2), rand(5, seed=3)
    A, B, Cv = pyet.asarray(a), pyet.asarray(b), pyet.asarray(c)
    e = pyet.dot(pyet.exp(A) * 2 - 1, B + Cv)
    check(np.asarray(e), (np.exp(a) * 2 - 1) @ (b + c), 3)
    e2 = pyet.dot(A, pyet.dot(B, Cv))  # nested products
    check(np.asarray(e2), a @ (b @ c), 15)


# ------------------------------------------------------------------ dtypes


@pytest.mark.parametrize("ta", DTYPES)
@pytest.mark.parametrize("tb", DTYPES)
def test_mixed_dtypes_promote_as_matmul(ta, tb):
    a, b = rand((4, 3), ta, 1), rand((3, 5), tb, 2)
    want = np.matmul(a, b)
    e = pyet.dot(a, pyet.asarray(b))
    assert e.dtype == want.dtype
    check(np.asarray(e), want, 3)


def test_integer_dot_wraps_like_numpy():
    a = np.array([[2**62, 3], [1, -(2**62)]], np.int64)
    b = np.array([[4, 1], [5, 7]], np.int64)
    check(np.asarray(pyet.dot(a, b)), a @ b)
    a32 = np.array([[2**30, 2**30]], np.int32)
    b32 = np.array([[4], [4]], np.int32)
    check(np.asarray(pyet.dot(a32, b32)), a32 @ b32)


def test_bool_dot_is_or_of_ands():
    a = np.array([[True, False, True], [False, False, False]])
    b = np.array([[False, True], [True, True], [True, False]])
    check(np.asarray(pyet.dot(a, b)), a @ b)
    x = np.array([True, True])
    check(pyet.evaluate(pyet.dot(x, x)), np.asarray(x @ x))


def test_float32_dot_into_float64_destination():
    a, b = rand((5, 4), np.float32, 1), rand((4, 3), np.float32, 2)
    out = np.zeros((5, 3))
    pyet.asarray(out)[...] = pyet.dot(a, b)
    check(out, (a @ b).astype(np.float64), 4)
    c0 = rand((5, 3), seed=4)
    out[...] = c0
    pyet.asarray(out)[...] = 0.5 * pyet.dot(a, b) + out
    check(out, 0.5 * (a @ b) + c0, 4)


def test_float64_dot_into_float32_destination_same_kind():
    a, b = rand((5, 4), seed=1), rand((4, 3), seed=2)
    out = np.zeros((5, 3), np.float32)
    pyet.asarray(out)[...] = pyet.dot(a, b)
    check(out, (a @ b).astype(np.float32), 4)
    pyet.asarray(out)[...] = 2 * pyet.dot(a, b) - out
    check(out, (2 * (a @ b) - (a @ b).astype(np.float32)).astype(np.float32), 4)


def test_int_dot_into_float_destination():
    a, b = rand((3, 4), np.int64, 1), rand((4, 2), np.int32, 2)
    out = np.zeros((3, 2), np.float32)
    pyet.asarray(out)[...] = pyet.dot(a, b)
    check(out, (a @ b).astype(np.float32))


@pytest.mark.parametrize("dst_dtype,ta,tb", [
    (np.int64, np.float64, np.float64),
    (np.int32, np.float32, np.float32),
    (np.int32, np.float64, np.int32),
    (np.bool_, np.int32, np.int32),
    (np.int64, np.int64, np.float32),
])
def test_same_kind_failure_raises_and_leaves_dst_untouched(dst_dtype, ta, tb):
    a, b = rand((3, 4), ta, 1), rand((4, 2), tb, 2)
    dst = np.ones((3, 2), dst_dtype)
    before = dst.copy()
    for e in (pyet.dot(a, b), 2 * pyet.dot(a, b), pyet.dot(a, b) + dst, -pyet.dot(a, b) - dst):
        with pytest.raises(TypeError, match="same_kind"):
            pyet.asarray(dst)[...] = e
        np.testing.assert_array_equal(dst, before)


@pytest.mark.parametrize("bad", [np.complex128, np.float16, np.uint8, object])
def test_unsupported_operand_dtype_raises_type_error(bad):
    b = np.ones((3, 2))
    with pytest.raises(TypeError, match="dtype"):
        pyet.dot(np.ones((2, 3), bad), b)
    with pytest.raises(TypeError, match="dtype"):
        pyet.dot(b.T, np.ones((3, 2), bad))


def test_broadcast_and_misaligned_operands():
    rng = np.random.default_rng(0)
    a = np.broadcast_to(rng.random(4), (3, 4))  # stride-0 rows: copied for BLAS
    b = rng.random((4, 2))
    check(np.asarray(pyet.dot(a, b)), a @ b, 4)
    col = np.broadcast_to(rng.random((4, 1)), (4, 3))  # stride-0 columns
    check(np.asarray(pyet.dot(b.T, col)), b.T @ col, 4)
    s = np.broadcast_to(rng.random((3, 4)), (5, 3, 4))
    bb = rng.random((5, 4, 2))
    check(np.asarray(pyet.batch_dot(s, bb)), s @ bb, 4)
    buf = np.zeros(8 * 16 + 1, np.uint8)
    m = buf[1:].view(np.float64).reshape(4, 4)  # data not 8-byte aligned
    m[...] = rng.random((4, 4))
    want = m @ m
    check(np.asarray(pyet.dot(m, m)), want, 4)
    pyet.asarray(m)[...] = pyet.dot(m, m)
    check(m, want, 4)


def test_addend_overlapping_destination_differently():
    rng = np.random.default_rng(0)
    a, b, c0 = rng.random((4, 4)), rng.random((4, 4)), rng.random((4, 4))
    for addend, want in ((lambda C: C[::-1], lambda: a @ b + c0[::-1]),
                         (lambda C: C[0], lambda: a @ b + c0[0]),
                         (lambda C: C[:, ::-1] * 2, lambda: a @ b + c0[:, ::-1] * 2)):
        c = c0.copy()
        C = pyet.asarray(c)
        C[...] = pyet.dot(a, b) + addend(C)
        check(c, want(), 4)


# ------------------------------------------------------------------ 0-size dimensions
# (a 0-length dimension gives NumPy's zero-stride arrays, which BLAS layout checks once rejected)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sa,sb", [((0, 3), (3, 4)), ((3, 4), (4, 0)), ((0, 3), (3, 0))])
def test_zero_size_result(dtype, sa, sb):
    a, b = np.ones(sa, dtype), np.ones(sb, dtype)
    got = np.asarray(pyet.dot(a, b))
    check(got, a @ b)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sa,sb", [((3, 0), (0, 4)), ((3, 0), (0,)), ((0,), (0, 4))])
def test_zero_inner_dimension_gives_zeros(dtype, sa, sb):
    a, b = np.ones(sa, dtype), np.ones(sb, dtype)
    out = np.full(np.broadcast_shapes((a @ b).shape), np.nan, dtype)
    pyet.asarray(out)[...] = pyet.dot(a, b)
    check(out, a @ b)


@pytest.mark.parametrize("dtype", FLOATS)
def test_zero_length_vector_dot_is_zero(dtype):
    z = np.ones(0, dtype)
    s = np.full((), np.nan, dtype)
    pyet.asarray(s)[...] = pyet.dot(z, z)
    check(s, np.asarray(z @ z))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_zero_size_integer_products(dtype):
    for sa, sb in (((0, 3), (3, 4)), ((3, 0), (0, 4)), ((0,), (0,))):
        a, b = np.ones(sa, dtype), np.ones(sb, dtype)
        check(np.asarray(pyet.dot(a, b)), a @ b)


def test_zero_inner_dimension_with_addend_leaves_dst_consistent():
    a, b, d = np.ones((3, 0)), np.ones((0, 4)), rand(4, seed=1)
    dst = np.full((3, 4), 7.0)
    try:
        pyet.asarray(dst)[...] = 2 * pyet.dot(a, b) + d
    except ValueError:  # if it must fail, it must fail before the first write
        np.testing.assert_array_equal(dst, 7.0)
        raise
    check(dst, np.broadcast_to(d, (3, 4)).copy())


# ------------------------------------------------------------------ scale / accumulate forms

# name: (pyet statement on tensors C, A, B, D; NumPy value from arrays c, a, b, d)
FORMS = {
    "C=dot": (lambda C, A, B, D: C.__setitem__(..., pyet.dot(A, B)),
              lambda c, a, b, d: a @ b),
    "C=0.5*dot": (lambda C, A, B, D: C.__setitem__(..., 0.5 * pyet.dot(A, B)),
                  lambda c, a, b, d: 0.5 * (a @ b)),
    "C=dot*3": (lambda C, A, B, D: C.__setitem__(..., (A @ B) * 3),
                lambda c, a, b, d: (a @ b) * 3),
    "C=-dot": (lambda C, A, B, D: C.__setitem__(..., -pyet.dot(A, B)),
               lambda c, a, b, d: -(a @ b)),
    "C+=dot": (lambda C, A, B, D: C.__iadd__(pyet.dot(A, B)),
               lambda c, a, b, d: c + a @ b),
    "C-=2*dot": (lambda C, A, B, D: C.__isub__(2 * pyet.dot(A, B)),
                 lambda c, a, b, d: c - 2 * (a @ b)),
    "C=dot+D(row)": (lambda C, A, B, D: C.__setitem__(..., pyet.dot(A, B) + D),
                     lambda c, a, b, d: a @ b + d),
    "C=(2*D+1)+0.5*dot": (lambda C, A, B, D: C.__setitem__(..., (2 * D + 1) + 0.5 * (A @ B)),
                          lambda c, a, b, d: (2 * d + 1) + 0.5 * (a @ b)),
    "C=D-dot": (lambda C, A, B, D: C.__setitem__(..., D - pyet.dot(A, B)),
                lambda c, a, b, d: d - a @ b),
    "C=dot-D": (lambda C, A, B, D: C.__setitem__(..., pyet.dot(A, B) - D),
                lambda c, a, b, d: a @ b - d),
    "C=D-3*dot": (lambda C, A, B, D: C.__setitem__(..., D - 3 * pyet.dot(A, B)),
                  lambda c, a, b, d: d - 3 * (a @ b)),
    "C=dot-C": (lambda C, A, B, D: C.__setitem__(..., pyet.dot(A, B) - C),
                lambda c, a, b, d: a @ b - c),
    "C=C+dot": (lambda C, A, B, D: C.__setitem__(..., C + pyet.dot(A, B)),
                lambda c, a, b, d: c + a @ b),
    "C=0.5*dot(A.T,..)+C": (lambda C, A, B, D: C.__setitem__(
        ..., 0.5 * pyet.dot(pyet.asarray(np.ascontiguousarray(A.numpy().T)).T, B) + C),
        lambda c, a, b, d: 0.5 * (a @ b) + c),
    "C=dot+1.5": (lambda C, A, B, D: C.__setitem__(..., pyet.dot(A, B) + 1.5),
                  lambda c, a, b, d: a @ b + 1.5),
    "C=dot+dot": (lambda C, A, B, D: C.__setitem__(..., A @ B + 2 * (A @ B)),
                  lambda c, a, b, d: a @ b + 2 * (a @ b)),
    "C=2*(dot+D)": (lambda C, A, B, D: C.__setitem__(..., 2 * (A @ B + D)),
                    lambda c, a, b, d: 2 * (a @ b + d)),
    "C*=dot": (lambda C, A, B, D: C.__imul__(pyet.dot(A, B)),
               lambda c, a, b, d: c * (a @ b)),
    "C/=dot": (lambda C, A, B, D: C.__itruediv__(pyet.dot(A, B)),
               lambda c, a, b, d: c / (a @ b)),
    "sigmoid(dot+b)": (lambda C, A, B, D: C.__setitem__(..., pyet.sigmoid(pyet.dot(A, B) + D)),
                       lambda c, a, b, d: 1 / (1 + np.exp(-(a @ b + d)))),
    "maximum(dot,0)*D": (lambda C, A, B, D: C.__setitem__(..., pyet.maximum(A @ B, 0) * D),
                         lambda c, a, b, d: np.maximum(a @ b, 0) * d),
}


def dst_layout(shape, dtype, kind):
    """A destination of `shape` (non-contiguous kinds are views into a bigger buffer)."""
    m, n = shape
    if kind == "C":
        return np.empty(shape, dtype)
    if kind == "F":
        return np.empty(shape, dtype, order="F")
    if kind == "rows":
        return np.empty((m, n + 5), dtype)[:, :n]
    if kind == "strided":
        return np.empty((2 * m, 3 * n), dtype)[::2, ::3]
    if kind == "neg":
        return np.empty(shape, dtype)[::-1, ::-1]
    if kind == "T":
        return np.empty((n, m), dtype).T
    raise AssertionError(kind)


@pytest.mark.parametrize("dkind", ["C", "F", "rows", "strided", "neg", "T"])
@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("dtype", FLOATS)
def test_scale_accumulate_forms(dtype, form, dkind):
    # positive operands keep C /= dot well conditioned
    a, b = rand((6, 5), dtype, 1, 0.5, 1.5), rand((5, 4), dtype, 2, 0.5, 1.5)
    c0, d = rand((6, 4), dtype, 3), rand(4, dtype, 4)
    dst = dst_layout((6, 4), dtype, dkind)
    dst[...] = c0
    stmt, ref = FORMS[form]
    stmt(pyet.asarray(dst), pyet.asarray(a), pyet.asarray(b), pyet.asarray(d))
    want = np.asarray(ref(c0, a, b, d), dtype)
    check(dst, want, 5)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("form", ["C=dot", "C=-dot", "C+=dot", "C-=2*dot", "C=dot+D(row)",
                                  "C=D-dot", "C=dot-C", "C*=dot", "C=dot+dot", "C=2*(dot+D)"])
def test_scale_accumulate_forms_integers(dtype, form):
    a, b = rand((6, 5), dtype, 1), rand((5, 4), dtype, 2)
    c0, d = rand((6, 4), dtype, 3), rand(4, dtype, 4)
    dst = c0.copy()
    stmt, ref = FORMS[form]
    stmt(pyet.asarray(dst), pyet.asarray(a), pyet.asarray(b), pyet.asarray(d))
    check(dst, np.asarray(ref(c0, a, b, d), dtype))


def test_bias_broadcast_as_column_and_scalar_expression():
    a, b = rand((6, 5), seed=1), rand((5, 4), seed=2)
    col = rand((6, 1), seed=3)
    out = np.full((6, 4), np.nan)
    pyet.asarray(out)[...] = pyet.dot(a, b) + pyet.asarray(col) * 2
    check(out, a @ b + col * 2, 5)
    pyet.asarray(out)[...] = pyet.exp(pyet.asarray(col)) - pyet.dot(a, b)
    check(out, np.exp(col) - a @ b, 5)


def test_dot_broadcast_into_bigger_destination():
    a, b = rand((3, 4), seed=1), rand((4, 2), seed=2)
    out = np.zeros((5, 3, 2))
    pyet.asarray(out)[...] = 0.5 * pyet.dot(a, b)
    check(out, np.broadcast_to(0.5 * (a @ b), (5, 3, 2)), 4)
    row = np.zeros((3, 4))
    pyet.asarray(row)[...] = pyet.dot(rand((1, 2), seed=3), rand((2, 4), seed=4))  # (1,4) -> (3,4)
    check(row, np.broadcast_to(rand((1, 2), seed=3) @ rand((2, 4), seed=4), (3, 4)), 2)


def test_alpha_zero_propagates_nan_like_numpy():
    # 0 * dot(A, B) with a NaN/inf in A: NumPy gives NaN (0*nan, 0*inf)
    a = np.ones((2, 2))
    a[0, 0] = np.inf
    b = np.ones((2, 2))
    out = np.zeros((2, 2))
    pyet.asarray(out)[...] = 0.0 * pyet.dot(a, b)
    with np.errstate(invalid="ignore"):
        want = 0.0 * (a @ b)
    np.testing.assert_array_equal(out, want)


def test_nan_in_destination_is_not_read_on_plain_assignment():
    a, b = rand((3, 3), seed=1), rand((3, 3), seed=2)
    out = np.full((3, 3), np.nan)
    pyet.asarray(out)[...] = 2 * pyet.dot(a, b)  # beta 0 must not read C
    check(out, 2 * (a @ b), 3)


# ------------------------------------------------------------------ aliasing


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_aliasing_destination_is_an_operand(dtype):
    a0, b0 = rand((5, 5), dtype, 1), rand((5, 5), dtype, 2)
    cases = [
        ("A=dot(A,B)", lambda A, B: A.__setitem__(..., pyet.dot(A, B)), lambda a, b: a @ b, "a"),
        ("B=dot(A,B)", lambda A, B: B.__setitem__(..., pyet.dot(A, B)), lambda a, b: a @ b, "b"),
        ("A=dot(A,A)", lambda A, B: A.__setitem__(..., pyet.dot(A, A)), lambda a, b: a @ a, "a"),
        ("A=dot(A.T,A)", lambda A, B: A.__setitem__(..., pyet.dot(A.T, A)),
         lambda a, b: a.T @ a, "a"),
        ("A=dot(A,B)+A", lambda A, B: A.__setitem__(..., pyet.dot(A, B) + A),
         lambda a, b: a @ b + a, "a"),
        ("B=dot(A,B)+A", lambda A, B: B.__setitem__(..., pyet.dot(A, B) + A),
         lambda a, b: a @ b + a, "b"),
        ("A=dot(B,A)-A.T", lambda A, B: A.__setitem__(..., pyet.dot(B, A) - A.T),
         lambda a, b: b @ a - a.T, "a"),
        ("A+=dot(A,B)", lambda A, B: A.__iadd__(pyet.dot(A, B)), lambda a, b: a + a @ b, "a"),
        ("A-=2*dot(B,A)", lambda A, B: A.__isub__(2 * pyet.dot(B, A)),
         lambda a, b: a - 2 * (b @ a), "a"),
        ("A*=dot(A,B)", lambda A, B: A.__imul__(pyet.dot(A, B)), lambda a, b: a * (a @ b), "a"),
        ("A=(A@B)*2+A", lambda A, B: A.__setitem__(..., (A @ B) * 2 + A),
         lambda a, b: (a @ b) * 2 + a, "a"),
    ]
    for _name, stmt, ref, which in cases:
        a, b = a0.copy(), b0.copy()
        want = np.asarray(ref(a0, b0), dtype)
        stmt(pyet.asarray(a), pyet.asarray(b))
        check(a if which == "a" else b, want, 5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_aliasing_matrix_vector_in_place(dtype):
    m0, x0 = rand((6, 6), dtype, 1), rand(6, dtype, 2)
    x = x0.copy()
    pyet.asarray(x)[...] = pyet.dot(pyet.asarray(m0), pyet.asarray(x))
    check(x, m0 @ x0, 6)
    x = x0.copy()
    X = pyet.asarray(x)
    X[...] = X @ pyet.asarray(m0)
    check(x, x0 @ m0, 6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_aliasing_c_equals_dot_c_c_plus_c(dtype):
    c0 = rand((5, 5), dtype, 1)
    c = c0.copy()
    C = pyet.asarray(c)
    C[...] = pyet.dot(C, C) + C
    check(c, c0 @ c0 + c0, 5)
    c = c0.copy()
    C = pyet.asarray(c)
    C[...] = 0.5 * pyet.dot(C.T, C) + C.T  # the addend is a transposed view of the destination
    check(c, 0.5 * (c0.T @ c0) + c0.T, 5)


def test_aliasing_partial_overlap_and_strided_views():
    base0 = rand((8, 4), seed=1)
    b = rand((4, 4), seed=2)
    base = base0.copy()
    dst, src = base[:4], base[2:6]  # overlapping rows, not the same view
    pyet.asarray(dst)[...] = pyet.dot(src, b) + pyet.asarray(src)
    check(base[:4], base0[2:6] @ b + base0[2:6], 4)
    base = base0.copy()
    dst, src = base[::2], base[1::2]  # interleaved rows: shared buffer, disjoint elements
    pyet.asarray(dst)[...] = pyet.dot(src, b)
    check(base[::2], base0[1::2] @ b, 4)
    check(base[1::2], base0[1::2])


# ------------------------------------------------------------------ outer


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.bool_])
def test_outer_overwrites(dtype):
    x, y = rand(5, dtype, 1), rand(4, dtype, 2)
    o = np.ones((5, 4), dtype)
    pyet.asarray(o)[...] = pyet.outer(pyet.asarray(x), y)
    check(o, np.outer(x, y))
    o[...] = 1
    pyet.asarray(o)[...] = pyet.outer(x, y)  # twice: no accumulation (MShadow's ger did)
    pyet.asarray(o)[...] = pyet.outer(x, y)
    check(o, np.outer(x, y))


def test_outer_forms():
    x, y = rand(5, seed=1), rand(4, seed=2)
    X, Y = pyet.asarray(x), pyet.asarray(y)
    check(np.asarray(pyet.outer(X, Y)), np.outer(x, y))
    check(np.asarray(pyet.outer(X * 2, pyet.exp(Y))), np.outer(x * 2, np.exp(y)))
    m = rand((2, 3), seed=3)
    check(np.asarray(pyet.outer(m, y)), np.outer(m, y))  # flattened, as NumPy
    check(np.asarray(pyet.outer(x[::-2], y[::2])), np.outer(x[::-2], y[::2]))
    o = rand((5, 4), seed=4)
    o0 = o.copy()
    pyet.asarray(o)[...] = pyet.asarray(o) + 0.1 * pyet.outer(X, Y)  # rank-1 update
    check(o, o0 + 0.1 * np.outer(x, y))
    check(np.asarray(pyet.outer(x, y).T), np.outer(x, y).T)
    check(np.asarray(pyet.outer(rand(3, np.int32, 5), rand(2, np.float32, 6))),
          np.outer(rand(3, np.int32, 5), rand(2, np.float32, 6)))


# ------------------------------------------------------------------ batch_dot


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
@pytest.mark.parametrize("case", ["3x3", "swap_a", "swap_b", "swap_both", "b1_vs_B", "B_vs_b1",
                                  "2d_a", "2d_b", "2d_a_T", "strided", "fortran_stack"])
def test_batch_dot(case, dtype):
    B, m, k, n = 3, 4, 5, 2
    a, b = rand((B, m, k), dtype, 1), rand((B, k, n), dtype, 2)
    a_sw = np.ascontiguousarray(a.transpose(0, 2, 1))
    b_sw = np.ascontiguousarray(b.transpose(0, 2, 1))
    a1, a2, b2 = a[:1].copy(), a[0].copy(), b[0].copy()
    cases = {
        "3x3": (lambda: pyet.batch_dot(a, pyet.asarray(b)), a @ b),
        "swap_a": (lambda: pyet.batch_dot(pyet.swapaxes(pyet.asarray(a_sw), 1, 2), b), a @ b),
        "swap_b": (lambda: pyet.batch_dot(a, pyet.swapaxes(pyet.asarray(b_sw), -1, -2)), a @ b),
        "swap_both": (lambda: pyet.batch_dot(pyet.transpose(pyet.asarray(a_sw), (0, 2, 1)),
                                             pyet.swapaxes(pyet.asarray(b_sw), 1, 2)), a @ b),
        "b1_vs_B": (lambda: pyet.batch_dot(a1, b), a1 @ b),
        "B_vs_b1": (lambda: pyet.batch_dot(a, b[:1]), a @ b[:1]),
        "2d_a": (lambda: pyet.batch_dot(a2, b), a2 @ b),
        "2d_b": (lambda: pyet.batch_dot(a, pyet.asarray(b2)), a @ b2),
        "2d_a_T": (lambda: pyet.batch_dot(pyet.asarray(np.ascontiguousarray(a2.T)).T, b), a2 @ b),
        "strided": (lambda: pyet.batch_dot(layout(a, "step2")[::-1], layout(b, "rows")[::-1]),
                    a[::-1] @ b[::-1]),
        "fortran_stack": (lambda: pyet.batch_dot(np.asfortranarray(a), np.asfortranarray(b)),
                          a @ b),
    }
    build, want = cases[case]
    e = build()
    assert e.shape == want.shape and e.dtype == want.dtype
    out = np.full(want.shape, 1, dtype)
    pyet.asarray(out)[...] = e
    check(out, want, k)
    # into a strided destination, with scale and accumulation
    c0 = rand(want.shape, dtype, 7)
    big = np.zeros((want.shape[0], 2 * want.shape[1], want.shape[2] + 3), dtype)
    dst = big[:, ::2, :want.shape[2]]
    dst[...] = c0
    pyet.asarray(dst)[...] = 2 * build() + dst
    check(dst, 2 * want + c0, k)


def test_batch_dot_mixed_dtypes_and_in_trees():
    a, b = rand((2, 3, 4), np.float32, 1), rand((2, 4, 5), np.float64, 2)
    e = pyet.batch_dot(a, b)
    assert e.dtype == np.float64
    check(np.asarray(e), a @ b, 4)
    check(np.asarray(pyet.tanh(e) + 1), np.tanh(a @ b) + 1, 4)
    x = a.astype(np.float64)  # below: the destination is an operand
    want = x[:, :, :4] @ rand((2, 4, 4), seed=3)
    y = x[:, :, :4]
    pyet.asarray(y)[...] = pyet.batch_dot(y, rand((2, 4, 4), seed=3))
    check(y, want, 4)


# ------------------------------------------------------------------ errors at build time


@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 5)), ((3,), (4,)), ((2, 3), (2,)), ((5,), (4, 5)),
                                   ((2, 3), (2, 3))])
def test_shape_mismatch_raises_at_build_naming_both_shapes(sa, sb):
    a, b = np.ones(sa), np.ones(sb)
    fmt = lambda s: "(" + ",".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"  # noqa: E731
    for build in (lambda: pyet.dot(a, b), lambda: pyet.asarray(a) @ b,
                  lambda: a @ pyet.asarray(b), lambda: pyet.dot(pyet.asarray(a) * 2, b)):
        with pytest.raises(ValueError) as info:
            build()
        msg = str(info.value)
        assert fmt(sa) in msg and fmt(sb) in msg, msg


@pytest.mark.parametrize("sa,sb", [((2, 3, 4), (4, 5)), ((4,), (2, 4, 5)), ((), (3,)),
                                   ((2, 2, 2, 2), (2, 2))])
def test_dot_rejects_other_ranks(sa, sb):
    a, b = np.ones(sa), np.ones(sb)
    with pytest.raises(ValueError):
        pyet.dot(a, b)
    with pytest.raises(ValueError):
        pyet.dot(2.0, b)


@pytest.mark.parametrize("sa,sb,what", [
    ((2, 3, 4), (2, 5, 6), "aligned"),
    ((2, 3, 4), (3, 4, 6), "batch"),
    ((3, 4), (4, 5), None),
    ((3,), (2, 3, 4), None),
    ((2, 3, 4, 5), (2, 5, 1), None),
])
def test_batch_dot_errors(sa, sb, what):
    with pytest.raises(ValueError) as info:
        pyet.batch_dot(np.ones(sa), np.ones(sb))
    msg = str(info.value)
    assert "(" + ",".join(map(str, sa)) + ("," if len(sa) == 1 else "") + ")" in msg
    assert "(" + ",".join(map(str, sb)) + ("," if len(sb) == 1 else "") + ")" in msg
    if what:
        assert what in msg


def test_errors_raise_before_evaluation_and_leave_dst_untouched():
    a, b = rand((3, 4), seed=1), rand((4, 2), seed=2)
    dst = np.full((3, 2), 5.0)
    T = pyet.asarray(dst)
    with pytest.raises(ValueError, match="broadcast"):
        T[...] = pyet.dot(a, b) + np.ones(3)  # (3,2) + (3,): fails when the tree is built
    with pytest.raises(ValueError):
        T[...] = pyet.dot(a, b).T  # (2,3) into (3,2)
    with pytest.raises(ValueError):
        T[...] = pyet.dot(b.T, a.T) + 1  # (2,3)
    ro = dst.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        pyet.asarray(ro)[...] = pyet.dot(a, b)
    np.testing.assert_array_equal(dst, 5.0)
    np.testing.assert_array_equal(ro, 5.0)


# ---------------------------------------------------------- no copies of BLAS-readable operands


def _peak_bytes(fn):
    fn()  # warm up (plans, caches)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("kind", ["C", "F", "rows", "T", "A.T@B"])
def test_blas_readable_operands_are_not_copied(kind):
    n = 500
    a, b = rand((n, n), seed=1), rand((n, n), seed=2)
    if kind != "C" and kind != "A.T@B":
        a, b = layout(a, kind), layout(b, kind)
    A, B = pyet.asarray(a), pyet.asarray(b)
    if kind == "A.T@B":
        A = pyet.asarray(np.ascontiguousarray(a.T)).T
    c = np.empty((n, n))
    Cf = np.empty((n, n), order="F")
    C, CF = pyet.asarray(c), pyet.asarray(Cf)
    one_operand = a.nbytes

    def run():
        C[...] = pyet.dot(A, B)
        CF[...] = 0.5 * pyet.dot(A, B) + CF
        C.__iadd__(pyet.dot(A, B))

    peak = _peak_bytes(run)
    assert peak < one_operand / 10, (kind, peak, one_operand)


def test_tracemalloc_sees_the_copy_of_a_non_blas_layout():
    # sanity check of the method above: a negative-stride operand must be copied, and is seen
    n = 300
    a = layout(rand((n, n), seed=1), "neg")
    b = rand((n, n), seed=2)
    c = np.empty((n, n))
    peak = _peak_bytes(lambda: pyet.asarray(c).__setitem__(..., pyet.dot(a, b)))
    assert peak >= b.nbytes
    check(c, a @ b, n)


# ------------------------------------------------------------------ hypothesis


LAYOUT_ST = st.sampled_from(LAYOUTS_2D)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 7), k=st.integers(1, 7), n=st.integers(1, 7), la=LAYOUT_ST, lb=LAYOUT_ST,
       dkind=st.sampled_from(["C", "F", "rows", "strided", "neg", "T"]),
       dtype=st.sampled_from([np.float32, np.float64, np.int64]),
       form=st.sampled_from(["C=dot", "C=0.5*dot", "C+=dot", "C-=2*dot", "C=dot+D(row)",
                             "C=D-dot", "C=dot-C", "C*=dot", "sigmoid(dot+b)"]),
       seed=st.integers(0, 2**16))
def test_hypothesis_random_shapes_layouts_forms(m, k, n, la, lb, dkind, dtype, form, seed):
    if np.dtype(dtype).kind == "i" and form in ("C=0.5*dot", "sigmoid(dot+b)"):
        form = "C=dot"
    a, b = rand((m, k), dtype, seed), rand((k, n), dtype, seed + 1)
    c0, d = rand((m, n), dtype, seed + 2), rand(n, dtype, seed + 3)
    dst = dst_layout((m, n), dtype, dkind)
    dst[...] = c0
    stmt, ref = FORMS[form]
    stmt(pyet.asarray(dst), pyet.asarray(layout(a, la)), pyet.asarray(layout(b, lb)),
         pyet.asarray(d))
    check(dst, np.asarray(ref(c0, a, b, d), dtype), k)


@settings(max_examples=25, deadline=None)
@given(bsz=st.integers(1, 4), m=st.integers(1, 5), k=st.integers(1, 5), n=st.integers(1, 5),
       ba=st.sampled_from(["full", "one", "2d"]), bb=st.sampled_from(["full", "one", "2d"]),
       ta=st.booleans(), tb=st.booleans(), dtype=st.sampled_from([np.float32, np.float64]))
def test_hypothesis_batch_dot(bsz, m, k, n, ba, bb, ta, tb, dtype):
    if ba == "2d" and bb == "2d":
        bb = "full"

    def operand(shape, how, transposed, seed):
        full = rand((bsz,) + shape, dtype, seed)
        x = full if how == "full" else (full[:1] if how == "one" else full[0])
        if not transposed:
            return x, pyet.asarray(x)
        xt = np.ascontiguousarray(np.swapaxes(x, -1, -2))
        return x, pyet.swapaxes(pyet.asarray(xt), -1, -2)

    a, A = operand((m, k), ba, ta, 1)
    b, B = operand((k, n), bb, tb, 2)
    want = np.matmul(a, b)
    if want.ndim == 2:
        want = want[None]
    out = np.zeros(want.shape, dtype)
    pyet.asarray(out)[...] = pyet.batch_dot(A, B)
    check(out, want, k)
