"""Transposes and slices (issue 3, sections 2 and 3): .T, pyet.transpose and pyet.swapaxes of
tensors and expression trees (lazy, pushed down to the leaves), their use inside elementwise
trees and in place, and Tensor.slice (a view of rows begin:end sharing memory)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet


def rand(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-9, 10, size=shape).astype(dtype)
    return rng.uniform(-2, 2, size=shape).astype(dtype)


def ev(e):
    return np.asarray(pyet.evaluate(e))


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)


# ------------------------------------------------------------------ .T of tensors


@pytest.mark.parametrize("kind", ["C", "F", "strided", "neg"])
def test_tensor_T_is_a_view(kind):
    base = rand((6, 8))
    x = {"C": base, "F": np.asfortranarray(base), "strided": base[::2, 1::3],
         "neg": base[::-1, ::-2]}[kind]
    t = pyet.asarray(x)
    tt = t.T
    assert isinstance(tt, pyet.Tensor)
    assert tt.shape == x.T.shape and tt.strides == x.T.strides
    assert np.shares_memory(tt.numpy(), x)
    tt[0, 0] = 42.0  # writes through the transposed view
    assert x[0, 0] == 42.0
    assert t.T.T is t


def test_T_of_1d_0d_and_nd_tensors():
    v = pyet.asarray(rand(5))
    assert v.T is v  # nothing to permute
    s = pyet.asarray(np.float64(3.0))
    assert s.T.shape == ()
    x = rand((2, 3, 4))
    same(ev(pyet.asarray(x).T), x.T)


# ------------------------------------------------------------------ .T of trees

TREES = {
    "A+B": (lambda A, B, r, c: A + B, lambda a, b, r, c: a + b),
    "A*2-1": (lambda A, B, r, c: A * 2 - 1, lambda a, b, r, c: a * 2 - 1),
    "A+row": (lambda A, B, r, c: A + r, lambda a, b, r, c: a + r),
    "col*B": (lambda A, B, r, c: c * B, lambda a, b, r, c: c * b),
    "row*col": (lambda A, B, r, c: r * c + 0.5, lambda a, b, r, c: r * c + 0.5),
    "exp(A)/(1+B**2)": (lambda A, B, r, c: pyet.exp(A) / (1 + B ** 2),
                        lambda a, b, r, c: np.exp(a) / (1 + b ** 2)),
    "sigmoid(A+row)": (lambda A, B, r, c: pyet.sigmoid(A + r),
                       lambda a, b, r, c: 1 / (1 + np.exp(-(a + r)))),
    "where(A>0,A,B*c)": (lambda A, B, r, c: pyet.where(A > 0, A, B * c),
                         lambda a, b, r, c: np.where(a > 0, a, b * c)),
    "maximum(A,row)": (lambda A, B, r, c: pyet.maximum(A, r), lambda a, b, r, c: np.maximum(a, r)),
    "np.tanh(A)": (lambda A, B, r, c: np.tanh(A) + B.T.T, lambda a, b, r, c: np.tanh(a) + b),
    "cast": (lambda A, B, r, c: (A > B).astype(np.int32) + 1,
             lambda a, b, r, c: (a > b).astype(np.int32) + 1),
    "A.T.T+B": (lambda A, B, r, c: A.T.T + B, lambda a, b, r, c: a + b),
    "dot": (lambda A, B, r, c: pyet.dot(A, B.T) + c, lambda a, b, r, c: a @ b.T + c),
}


@pytest.mark.parametrize("name", list(TREES))
def test_T_of_trees(name):
    a, b = rand((4, 5), seed=1), rand((4, 5), seed=2)
    r, c = rand(5, seed=3), rand((4, 1), seed=4)
    build, ref = TREES[name]
    e = build(pyet.asarray(a), pyet.asarray(b), pyet.asarray(r), pyet.asarray(c))
    want = ref(a, b, r, c)
    t = e.T
    assert isinstance(t, pyet.Expr)
    assert t.shape == want.T.shape and t.dtype == want.dtype
    same(ev(t), want.T)
    same(ev(pyet.transpose(e)), want.T)
    same(ev(pyet.swapaxes(e, 0, 1)), want.T)
    assert t.T is e
    out = np.full(want.T.shape, -1, want.dtype)
    pyet.asarray(out)[...] = t * 1
    same(out, want.T)


def test_T_is_lazy():
    a, b = rand((3, 4), seed=1), rand((3, 4), seed=2)
    e = (pyet.asarray(a) + pyet.asarray(b) * 2).T
    a[...] = 1.0  # read at evaluation, after the transpose was built
    b[...] = 2.0
    same(ev(e), np.full((4, 3), 5.0))


def test_transposed_products_stay_lazy():
    a, b = rand((2, 3, 3), seed=1), rand((2, 3, 3), seed=2)
    e = pyet.swapaxes(pyet.batch_dot(a, b), 1, 2)
    a[...] = 0.0
    same(ev(e), np.zeros((2, 3, 3)))


def test_transposed_broadcast_products_stay_lazy():
    m, x = rand((3, 3), seed=3), rand((2, 3, 3), seed=4)
    e = pyet.transpose(pyet.dot(m, m) + x, (2, 1, 0))  # the product is broadcast to 3-D
    t = pyet.swapaxes(pyet.dot(m, m) * x, 0, 1)
    m[...] = 1.0
    same(ev(e), np.transpose(m @ m + x, (2, 1, 0)))
    same(ev(t), np.swapaxes((m @ m) * x, 0, 1))


def test_T_of_scalars_and_scalar_trees():
    two = pyet.asarray(np.float64(2.0))
    e = two * 3 + 1
    assert e.shape == ()
    assert e.T.shape == ()
    same(ev(e.T), np.float64(7.0))
    x = rand((3, 2))
    same(ev((pyet.asarray(x) * two).T + 1.5), (x * 2).T + 1.5)


def test_T_with_mixed_rank_broadcasting():
    # a (4,) row under a (3,4) matrix: .T must make the row a column
    m, r, c = rand((3, 4), seed=1), rand(4, seed=2), rand((3, 1), seed=3)
    e = pyet.asarray(m) - pyet.asarray(r) * pyet.asarray(c)
    same(ev(e.T), (m - r * c).T)
    same(ev(e.T + pyet.asarray(rand(3, seed=4))), (m - r * c).T + rand(3, seed=4))


# ------------------------------------------------------------------ transpose / swapaxes N-D

PERMS_3 = list(itertools.permutations(range(3)))


@pytest.mark.parametrize("axes", PERMS_3 + [(-1, 0, 1), (2, -2, -3), None])
def test_transpose_3d_trees(axes):
    x, y = rand((2, 3, 4), seed=1), rand((3, 4), seed=2)
    z = rand((2, 1, 4), seed=3)
    e = pyet.asarray(x) * pyet.asarray(y) + pyet.exp(pyet.asarray(z)) - 1
    want = np.transpose(x * y + np.exp(z) - 1, axes)
    t = pyet.transpose(e, axes)
    assert t.shape == want.shape
    same(ev(t), want)
    norm = tuple(a % 3 for a in axes) if axes is not None else (2, 1, 0)
    if norm == (0, 1, 2):
        assert t is e
    else:
        assert pyet.transpose(t, tuple(int(i) for i in np.argsort(norm))) is e


@pytest.mark.parametrize("axes", [(3, 1, 0, 2), (0, 2, 1, 3), (-1, -2, -3, -4), (1, 0, 3, 2)])
def test_transpose_4d_trees(axes):
    x, w = rand((2, 3, 4, 5), seed=1), rand(5, seed=2)
    c = rand((3, 1, 1), seed=3)
    e = pyet.tanh(pyet.asarray(x) + pyet.asarray(w)) * pyet.asarray(c)
    want = np.transpose(np.tanh(x + w) * c, axes)
    same(ev(pyet.transpose(e, axes)), want)
    same(ev(pyet.transpose(pyet.asarray(x), axes)), np.transpose(x, axes))


def test_transpose_identity_returns_the_expression():
    e = pyet.asarray(rand((2, 3, 4))) + 1
    assert pyet.transpose(e, (0, 1, 2)) is e
    assert pyet.transpose(e, (-3, -2, -1)) is e
    assert pyet.swapaxes(e, 1, 1) is e
    assert pyet.swapaxes(e, 0, -3) is e


@pytest.mark.parametrize("a1,a2", [(0, 1), (0, 2), (1, 2), (-1, 0), (-1, -2), (2, -3)])
def test_swapaxes(a1, a2):
    x, y = rand((2, 3, 4), seed=1), rand(4, seed=2)
    e = pyet.asarray(x) / (2 + pyet.asarray(y) ** 2)
    want = np.swapaxes(x / (2 + y ** 2), a1, a2)
    s = pyet.swapaxes(e, a1, a2)
    same(ev(s), want)
    assert pyet.swapaxes(s, a1, a2) is e
    same(ev(pyet.swapaxes(pyet.asarray(x), a1, a2)), np.swapaxes(x, a1, a2))


@pytest.mark.parametrize("axes", [(0, 0, 1), (0, 1), (0, 1, 2, 3), (0, 1, 3), (-4, 0, 1),
                                  (1, 1, -1)])
def test_transpose_bad_axes(axes):
    e = pyet.asarray(rand((2, 3, 4))) + 1
    with pytest.raises(ValueError, match="axes"):
        pyet.transpose(e, axes)
    with pytest.raises(ValueError):
        pyet.transpose(pyet.asarray(rand((2, 3, 4))), axes)


@pytest.mark.parametrize("a1,a2", [(3, 0), (0, -4), (5, 5)])
def test_swapaxes_bad_axes(a1, a2):
    e = pyet.asarray(rand((2, 3, 4))) * 2
    with pytest.raises(ValueError, match="out of bounds"):
        pyet.swapaxes(e, a1, a2)


def test_transpose_and_swapaxes_of_plain_arrays_and_non_int_axes():
    x = rand((2, 3))
    same(ev(pyet.transpose(x)), x.T)
    same(ev(pyet.swapaxes(x, 0, 1)), x.T)
    with pytest.raises(TypeError):
        pyet.transpose(pyet.asarray(x), (0.0, 1.0))


def test_T_T_is_e():
    a = pyet.asarray(rand((3, 4)))
    for e in (a, a + 1, pyet.exp(a) * a, pyet.dot(a, a.T), pyet.outer(rand(3), rand(2)),
              pyet.where(a > 0, a, 0)):
        assert e.T.T is e
        assert pyet.transpose(pyet.transpose(e)) is e
    x = pyet.asarray(rand((2, 3, 4))) - 1
    assert pyet.transpose(pyet.transpose(x, (1, 2, 0)), (2, 0, 1)) is x


# ------------------------------------------------------------------ in assignments


@pytest.mark.parametrize("dkind", ["C", "F", "strided"])
def test_assign_B_T_plus_C(dkind):
    b, c = rand((5, 3), seed=1), rand((3, 5), seed=2)
    dst = {"C": np.empty((3, 5)), "F": np.empty((3, 5), order="F"),
           "strided": np.empty((6, 15))[::2, ::3]}[dkind]
    pyet.asarray(dst)[...] = pyet.asarray(b).T + pyet.asarray(c)
    same(dst, b.T + c)
    pyet.asarray(dst)[...] = pyet.exp(pyet.asarray(b).T) * pyet.asarray(c).T.T
    same(dst, np.exp(b.T) * c)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("n", [1, 2, 7, 33])
def test_in_place_transpose_square(dtype, n):
    a0 = rand((n, n), dtype, seed=n)
    a = a0.copy()
    A = pyet.asarray(a)
    A[...] = A.T + 1
    np.testing.assert_array_equal(a, a0.T + 1)
    a = a0.copy()
    A = pyet.asarray(a)
    A[...] = A.T
    np.testing.assert_array_equal(a, a0.T)
    a = a0.copy()
    A = pyet.asarray(a)
    A[...] = A + A.T  # symmetrize: reads both a[i,j] and a[j,i]
    np.testing.assert_array_equal(a, a0 + a0.T)
    a = a0.copy()
    A = pyet.asarray(a)
    A += A.T
    np.testing.assert_array_equal(a, a0 + a0.T)


def test_in_place_nd_transpose_and_views():
    x0 = rand((3, 3, 3), seed=5)
    x = x0.copy()
    X = pyet.asarray(x)
    X[...] = pyet.transpose(X, (2, 0, 1)) * 2 - X
    same(x, np.transpose(x0, (2, 0, 1)) * 2 - x0)
    m0 = rand((4, 6), seed=6)
    m = m0.copy()
    M = pyet.asarray(m)
    M[:, :4] = M[:, 2:].T + 1  # overlapping source and destination
    want = m0.copy()
    want[:, :4] = m0[:, 2:].T + 1
    same(m, want)


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=2, max_size=4),
       data=st.data())
def test_hypothesis_random_permutations(shape, data):
    nd = len(shape)
    axes = tuple(data.draw(st.permutations(range(nd))))
    neg = data.draw(st.lists(st.booleans(), min_size=nd, max_size=nd))
    axes_arg = tuple(a - nd if flip else a for a, flip in zip(axes, neg, strict=True))
    k = data.draw(st.integers(0, nd))  # the second operand broadcasts over the leading axes
    x, y = rand(tuple(shape), seed=1), rand(tuple(shape[k:]), seed=2)
    kind = data.draw(st.sampled_from(["C", "neg", "step2", "F"]))
    xs = {"C": x, "neg": x[::-1], "step2": np.repeat(x, 2, axis=-1)[..., ::2],
          "F": np.asfortranarray(x)}[kind]
    e = pyet.asarray(xs) * 3 - pyet.asarray(y)
    want = np.transpose(xs * 3 - y, axes)
    same(ev(pyet.transpose(e, axes_arg)), want)
    out = np.empty(want.shape)
    pyet.asarray(out)[...] = pyet.transpose(e, axes_arg) + 0
    same(out, want)


# ------------------------------------------------------------------ Tensor.slice


@pytest.mark.parametrize("shape", [(6,), (6, 4), (6, 2, 3)])
@pytest.mark.parametrize("begin,end", [(0, 6), (1, 4), (2, 3), (0, 0), (6, 6), (5, 6)])
def test_slice_is_a_view_of_rows(shape, begin, end):
    x = rand(shape)
    t = pyet.asarray(x)
    s = t.slice(begin, end)
    assert isinstance(s, pyet.Tensor)
    np.testing.assert_array_equal(s.numpy(), x[begin:end])
    assert s.shape == x[begin:end].shape and s.strides == x.strides
    if end > begin:
        assert np.shares_memory(s.numpy(), x)
        assert s.numpy().__array_interface__["data"][0] == x[begin:].__array_interface__["data"][0]
        s[...] = pyet.asarray(np.ones(shape[1:])) * 7  # writes through to x
        assert (x[begin:end] == 7).all()
        x[begin] = -1  # and writes to x show through s
        assert (s.numpy()[0] == -1).all()


def test_slice_of_strided_and_negative_views_and_in_expressions():
    base = rand((10, 6))
    x = base[::-2, 1::2]  # (5, 3), negative row stride
    t = pyet.asarray(x)
    s = t.slice(1, 4)
    np.testing.assert_array_equal(s.numpy(), x[1:4])
    assert np.shares_memory(s.numpy(), base)
    want = x[1:4] * 2 + x[0]
    s[...] = s * 2 + t[0]
    np.testing.assert_array_equal(x[1:4], want)
    ss = s.slice(1, 2)  # a slice of a slice
    assert ss.shape == (1, 3) and np.shares_memory(ss.numpy(), base)
    y = rand((4, 3))
    same(ev(pyet.asarray(y).slice(1, 3).T + 1), y[1:3].T + 1)
    same(ev(pyet.dot(pyet.asarray(y).slice(0, 2), pyet.asarray(y).T.slice(0, 3))),
         y[0:2] @ y.T[0:3])


@pytest.mark.parametrize("begin,end", [(-1, 2), (3, 2), (0, 7), (7, 7), (2, -1)])
def test_slice_out_of_range(begin, end):
    t = pyet.asarray(rand((6, 2)))
    with pytest.raises(IndexError, match="out of range"):
        t.slice(begin, end)


@pytest.mark.parametrize("begin,end", [(0.0, 2), (0, 2.5), ("0", 2), (None, 2), (0, slice(2))])
def test_slice_needs_integer_bounds(begin, end):
    t = pyet.asarray(rand((6, 2)))
    with pytest.raises(TypeError, match="integer"):
        t.slice(begin, end)


def test_slice_numpy_integers_and_0d_error():
    t = pyet.asarray(rand((6, 2)))
    assert t.slice(np.int64(1), np.int32(3)).shape == (2, 2)
    with pytest.raises(IndexError):
        pyet.asarray(np.float64(1.0)).slice(0, 0)
