"""Index blocks: take, take_grad, choose_row_element, fill_row_element, one_hot, mask.
NumPy's fancy indexing and np.add.at are the references."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet
from pyet._kernels import parallel as _parallel

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64]
NUMERIC = [np.int32, np.int64, np.float32, np.float64]


def arr(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-5, 5, size=shape).round(2).astype(dtype)


def ev(e):
    return np.asarray(pyet.evaluate(e))


@pytest.fixture
def threaded():
    """Two threads even on small inputs; settings restored after."""
    before = pyet.get_num_threads()
    pyet.set_num_threads(2)
    _parallel.set_min_per_thread(16)
    yield
    _parallel.set_min_per_thread(1 << 16)
    pyet.set_num_threads(before)


def eq(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------ take

@pytest.mark.parametrize("dtype", DTYPES)
def test_take_matches_fancy_indexing(dtype):
    W = arr((5, 3), dtype)
    idx = np.array([4, 0, -1, 2, 2, -5])
    eq(ev(pyet.take(idx, W)), W[idx])


@pytest.mark.parametrize("idx_dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64,
                                       np.uint32, np.uint64])
def test_take_accepts_any_integer_indices(idx_dtype):
    W = arr((7, 4))
    idx = np.array([6, 0, 3], dtype=idx_dtype)
    eq(ev(pyet.take(idx, W)), W[idx])


@pytest.mark.parametrize("idx_shape", [(), (0,), (3,), (2, 3), (2, 0, 2)])
@pytest.mark.parametrize("w_shape", [(6,), (6, 4), (6, 2, 3)])
def test_take_shapes(idx_shape, w_shape):
    W = arr(w_shape)
    idx = np.random.default_rng(1).integers(-6, 6, size=idx_shape)
    eq(ev(pyet.take(idx, W)), W[idx])


def test_take_from_lists_and_tensors():
    W = arr((4, 3))
    eq(ev(pyet.take([3, 1], W)), W[[3, 1]])
    eq(ev(pyet.take([], W)), W[[]])
    eq(ev(pyet.take(pyet.asarray(np.array([2, 0])), pyet.asarray(W))), W[[2, 0]])
    eq(ev(pyet.take(pyet.asarray(np.array([1, 2])) + 1, W)), W[[2, 3]])  # lazy indices


@pytest.mark.parametrize("view", [
    lambda a: a[::-1], lambda a: a[:, ::-2], lambda a: a[::2, 1:], lambda a: a.T,
    lambda a: np.broadcast_to(a[:1], (5, 4)),
])
def test_take_strided_table(view):
    W = view(arr((8, 6))[:, :4])
    idx = np.array([0, W.shape[0] - 1, 1, -2])
    eq(ev(pyet.take(idx, W)), W[idx])


def test_take_inside_trees():
    W, b = arr((6, 4)), arr((4,), seed=1)
    idx = np.array([5, 1, 1])
    eq(ev(pyet.take(idx, W) + b), W[idx] + b)
    eq(ev(pyet.take(idx, pyet.asarray(W) * 2) - 1), W[idx] * 2 - 1)
    eq(ev(pyet.sum(pyet.take(idx, W), axis=1)), W[idx].sum(axis=1))


def test_take_into_strided_destinations():
    W = arr((6, 4))
    idx = np.array([5, 1, 3])
    for dst in (np.zeros((6, 8))[::2, ::-2], np.zeros((4, 3)).T, np.zeros((3, 4))):
        pyet.asarray(dst)[...] = pyet.take(idx, W)
        eq(dst, W[idx])
    # a destination that cannot be viewed as (rows, features): computed aside, copied
    W3 = arr((5, 3, 2))
    dst = np.zeros((2, 3, 2), order="F")[:, ::-1]
    pyet.asarray(dst)[...] = pyet.take([4, 0], W3)
    eq(dst, W3[[4, 0]])


def test_take_into_its_own_table():
    W = arr((5, 3))
    t = pyet.asarray(W.copy())
    t[:3] = pyet.take([4, 3, 0], t)  # overlap: gathered before anything is written
    want = W.copy()
    want[:3] = W[[4, 3, 0]]
    eq(t.numpy(), want)


def test_take_keeps_the_indices_it_checked():
    W = arr((4, 2))
    idx = np.array([1, 2])
    e = pyet.take(idx, W)
    idx[:] = 100  # would be out of bounds; the node copied the indices it checked
    eq(ev(e), W[[1, 2]])


def test_take_repr():
    assert repr(pyet.take([1], np.zeros((3, 2)))).startswith("take(Tensor(shape=(1,)")


def test_take_threads(threaded):
    W = arr((300, 65))
    idx = np.random.default_rng(2).integers(-300, 300, size=1000)
    eq(ev(pyet.take(idx, W)), W[idx])
    eq(ev(pyet.take(idx, W[:, ::-3])), W[:, ::-3][idx])


def test_take_large_uses_threads_by_default():
    W = arr((1000, 64))
    idx = np.random.default_rng(3).integers(0, 1000, size=4000)  # 256k elements
    eq(ev(pyet.take(idx, W)), W[idx])


# ------------------------------------------------------------- take_grad

def add_at(idx, G, rows):
    out = np.zeros((rows,) + G.shape[idx.ndim:], G.dtype)
    np.add.at(out, idx, G)
    return out


@pytest.mark.parametrize("dtype", NUMERIC)
def test_take_grad_matches_add_at(dtype):
    idx = np.array([3, 0, 3, -1, 1, 3])
    G = arr((6, 5), dtype)
    eq(ev(pyet.take_grad(idx, G, 4)), add_at(idx % 4, G, 4))


@pytest.mark.parametrize("idx_shape,row", [((), (3,)), ((0,), (2,)), ((4,), ()),
                                           ((2, 3), (2, 2)), ((5,), (0,))])
def test_take_grad_shapes(idx_shape, row):
    idx = np.random.default_rng(4).integers(0, 3, size=idx_shape)
    G = arr(idx_shape + row)
    eq(ev(pyet.take_grad(idx, G, 3)), add_at(idx, G, 3))


def test_take_grad_zero_rows():
    eq(ev(pyet.take_grad(np.zeros(0, np.int64), np.zeros((0, 3)), 0)), np.zeros((0, 3)))


def test_take_grad_strided_and_lazy_gradients():
    idx = np.array([1, 0, 1])
    G = arr((6, 8))[::-2, 1::2]
    eq(ev(pyet.take_grad(idx, G, 2)), add_at(idx, G, 2))
    eq(ev(pyet.take_grad(idx, pyet.asarray(G) * 3, 2)), add_at(idx, G * 3, 2))
    # inside a tree, and into a strided destination
    eq(ev(pyet.take_grad(idx, G, 2) * 0.5 + 1), add_at(idx, G, 2) * 0.5 + 1)
    dst = np.full((4, 8), 7.0)[::-2, ::2]
    pyet.asarray(dst)[...] = pyet.take_grad(idx, G, 2)
    eq(dst, add_at(idx, G, 2))


@pytest.mark.parametrize("width", [3, 200])  # threads split rows, or columns
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_take_grad_threads_match_add_at_exactly(threaded, width, dtype):
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 7, size=400)
    G = arr((400, width), dtype)
    eq(ev(pyet.take_grad(idx, G, 7)), add_at(idx, G, 7))


# ----------------------------------------------------- choose_row_element

@pytest.mark.parametrize("dtype", DTYPES)
def test_choose_row_element(dtype):
    M = arr((5, 4), dtype)
    idx = np.array([0, 3, -1, 2, -4])
    eq(ev(pyet.choose_row_element(M, idx)), M[np.arange(5), idx])


def test_choose_row_element_strided_lazy_and_in_trees(threaded):
    M = arr((300, 9))[::-3, ::-2]
    idx = np.random.default_rng(6).integers(-5, 5, size=100)
    want = M[np.arange(100), idx]
    eq(ev(pyet.choose_row_element(M, idx)), want)
    eq(ev(pyet.choose_row_element(pyet.asarray(M) + 1, idx)), want + 1)
    eq(ev(pyet.choose_row_element(M, idx) * 2), want * 2)
    dst = np.zeros(200)[::-2]
    pyet.asarray(dst)[...] = pyet.choose_row_element(M, idx)
    eq(dst, want)
    eq(ev(pyet.choose_row_element(np.zeros((0, 3)), [])), np.zeros(0))


# ------------------------------------------------------ fill_row_element

def filled(M, val, idx):
    out = M.copy()
    out[np.arange(M.shape[0]), idx] = val
    return out


@pytest.mark.parametrize("dtype", DTYPES)
def test_fill_row_element(dtype):
    M = arr((4, 3), dtype)
    val = arr((4,), dtype, seed=1)
    idx = np.array([2, 0, -1, 1])
    eq(ev(pyet.fill_row_element(M, val, idx)), filled(M, val, idx))


def test_fill_row_element_values_and_trees():
    M = arr((4, 5))
    idx = np.array([4, 0, 2, 2])
    eq(ev(pyet.fill_row_element(M, 7, idx)), filled(M, 7, idx))
    eq(ev(pyet.fill_row_element(M, np.array([1, 2, 3, 4]), idx)), filled(M, [1, 2, 3, 4], idx))
    v = arr((4,), seed=2)
    eq(ev(pyet.fill_row_element(pyet.asarray(M) * 2, pyet.asarray(v) - 1, idx) + 1),
       filled(M * 2, v - 1, idx) + 1)
    Mi = arr((4, 5), np.int32)
    eq(ev(pyet.fill_row_element(Mi, np.array([1.7, 2, 3, 4]), idx)),
       filled(Mi, np.array([1.7, 2, 3, 4]), idx))  # converted to M's dtype, as NumPy does
    dst = np.zeros((8, 5))[::-2]
    pyet.asarray(dst)[...] = pyet.fill_row_element(M[:, ::-1], v, idx)
    eq(dst, filled(M[:, ::-1], v, idx))


# ------------------------------------------------------------- one_hot

@pytest.mark.parametrize("dtype", DTYPES)
def test_one_hot(dtype):
    idx = np.array([[0, 3], [-1, 2]])
    eq(ev(pyet.one_hot(idx, 4, dtype)), np.eye(4, dtype=dtype)[idx])


def test_one_hot_defaults_and_trees():
    idx = np.array([1, 0, 2], dtype=np.uint8)
    eq(ev(pyet.one_hot(idx, 3)), np.eye(3, dtype=np.float32)[idx])
    logits = arr((3, 3), np.float32)
    eq(ev(pyet.one_hot(idx, 3) * logits - 1), np.eye(3, dtype=np.float32)[idx] * logits - 1)
    eq(ev(pyet.one_hot([], 0)), np.zeros((0, 0), np.float32))
    eq(ev(pyet.one_hot(2, 4)), np.eye(4, dtype=np.float32)[2])


# ------------------------------------------------------------------ mask

@pytest.mark.parametrize("mdtype,xdtype", [(np.float64, np.float64), (np.bool_, np.float32),
                                           (np.int32, np.int64), (np.float32, np.int32)])
def test_mask(mdtype, xdtype):
    m, X = arr((4,), mdtype, seed=1), arr((4, 3), xdtype)
    eq(ev(pyet.mask(m, X)), X * m[:, None])


def test_mask_shapes_and_trees():
    m = np.array([1.0, 0.0, 2.0])
    X3 = arr((3, 2, 4))
    eq(ev(pyet.mask(m, X3)), X3 * m[:, None, None])
    eq(ev(pyet.mask(m, X3[0, 0, :3])), X3[0, 0, :3] * m)
    eq(ev(pyet.mask(pyet.asarray(m) * 2, pyet.asarray(X3[:, 0]) + 1)),
       (X3[:, 0] + 1) * m[:, None] * 2)
    X = arr((3, 8))[::-1, ::2]
    dst = np.zeros((6, 4))[::2]
    pyet.asarray(dst)[...] = pyet.mask(m, X)
    eq(dst, X * m[:, None])


# ------------------------------------------------------------ hypothesis

@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 9), cols=st.integers(0, 5), n=st.integers(0, 12),
       seed=st.integers(0, 2**16))
def test_gathers_and_scatter_hypothesis(rows, cols, n, seed):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((rows, cols))
    idx = rng.integers(-rows, rows, size=n)
    eq(ev(pyet.take(idx, W)), W[idx])
    G = rng.standard_normal((n, cols))
    eq(ev(pyet.take_grad(idx, G, rows)), add_at(idx % rows, G, rows))
    if cols:
        M = rng.standard_normal((n, cols))
        cidx = rng.integers(-cols, cols, size=n)
        eq(ev(pyet.choose_row_element(M, cidx)), M[np.arange(n), cidx])
        eq(ev(pyet.fill_row_element(M, 9.0, cidx)), filled(M, 9.0, cidx))
        eq(ev(pyet.one_hot(cidx, cols)), np.eye(cols, dtype=np.float32)[cidx])


# ---------------------------------------------------------------- errors

def test_index_errors_name_the_bad_index():
    W = np.zeros((4, 3))
    with pytest.raises(IndexError, match=r"take: index 4 is out of bounds for axis 0 of W of "
                                         r"size 4"):
        pyet.take([0, 4], W)
    with pytest.raises(IndexError, match="take: index -5 is out of bounds"):
        pyet.take([-5, 1], W)
    with pytest.raises(IndexError, match=r"take: index 18446744073709551615 is out of bounds"):
        pyet.take(np.array([2**64 - 1], np.uint64), W)
    with pytest.raises(IndexError, match="take_grad: index 4 is out of bounds for num_rows of "
                                         "size 4"):
        pyet.take_grad([4], np.zeros((1, 3)), 4)
    with pytest.raises(IndexError, match="choose_row_element: index 3 is out of bounds for a "
                                         "row of size 3"):
        pyet.choose_row_element(np.zeros((2, 3)), [0, 3])
    with pytest.raises(IndexError, match="fill_row_element: index -4 is out of bounds for a row "
                                         "of size 3"):
        pyet.fill_row_element(np.zeros((2, 3)), 1.0, [-4, 0])
    with pytest.raises(IndexError, match="one_hot: index 3 is out of bounds for depth of size 3"):
        pyet.one_hot([3], 3)
    with pytest.raises(IndexError, match="take: index 0 is out of bounds for axis 0 of W of "
                                         "size 0"):
        pyet.take([0], np.zeros((0, 2)))


def test_errors_raise_before_writing():
    dst = np.full((2, 3), 5.0)
    with pytest.raises(IndexError):
        pyet.asarray(dst)[...] = pyet.take([0, 9], np.zeros((4, 3)))
    eq(dst, np.full((2, 3), 5.0))


@pytest.mark.parametrize("fn", [
    lambda i: pyet.take(i, np.zeros((3, 2))),
    lambda i: pyet.take_grad(i, np.zeros((2, 2)), 3),
    lambda i: pyet.choose_row_element(np.zeros((2, 3)), i),
    lambda i: pyet.fill_row_element(np.zeros((2, 3)), 0.0, i),
    lambda i: pyet.one_hot(i, 3),
])
@pytest.mark.parametrize("bad", [np.array([0.0, 1.0]), np.array([True, False]),
                                 pyet.asarray(np.array([0.0, 1.0]))])
def test_indices_must_be_integers(fn, bad):
    with pytest.raises(TypeError, match=r"indices must be integers, got (float64|bool)"):
        fn(bad)


def test_shape_and_type_errors():
    with pytest.raises(ValueError, match="take: W must have at least one dimension, got a 0-d "
                                         "operand"):
        pyet.take([0], 1.0)
    with pytest.raises(TypeError, match="take_grad: num_rows must be an integer, got float"):
        pyet.take_grad([0], np.zeros((1, 2)), 2.0)
    with pytest.raises(ValueError, match="take_grad: num_rows must be >= 0, got -1"):
        pyet.take_grad([], np.zeros((0, 2)), -1)
    with pytest.raises(TypeError, match="take_grad: G must be numeric .* got bool"):
        pyet.take_grad([0], np.zeros((1, 2), bool), 2)
    with pytest.raises(ValueError, match=r"take_grad: G's leading axes must match the indices' "
                                         r"shape \(3,\), got G of shape \(2,4\)"):
        pyet.take_grad([0, 1, 1], np.zeros((2, 4)), 2)
    with pytest.raises(ValueError, match=r"choose_row_element: M must be 2-D, got shape \(3,\)"):
        pyet.choose_row_element(np.zeros(3), [0, 0, 0])
    with pytest.raises(ValueError, match=r"choose_row_element: expected one index per row, "
                                         r"shape \(2,\), got indices of shape \(3,\)"):
        pyet.choose_row_element(np.zeros((2, 3)), [0, 1, 2])
    with pytest.raises(ValueError, match=r"fill_row_element: M must be 2-D, got shape \(2,3,1\)"):
        pyet.fill_row_element(np.zeros((2, 3, 1)), 0.0, [0, 1])
    with pytest.raises(ValueError, match=r"fill_row_element: val must be a scalar or of shape "
                                         r"\(2,\), got shape \(3,\)"):
        pyet.fill_row_element(np.zeros((2, 3)), np.zeros(3), [0, 1])
    with pytest.raises(ValueError, match=r"fill_row_element: expected one index per row"):
        pyet.fill_row_element(np.zeros((2, 3)), 0.0, [[0, 1]])
    with pytest.raises(ValueError, match="one_hot: depth must be >= 0, got -2"):
        pyet.one_hot([0], -2)
    with pytest.raises(TypeError, match="one_hot: depth must be an integer, got float"):
        pyet.one_hot([0], 2.5)
    with pytest.raises(TypeError, match="dtype"):
        pyet.one_hot([0], 2, np.complex128)
    with pytest.raises(ValueError, match=r"mask: m must have shape \(X.shape\[0\],\); got m of "
                                         r"shape \(3,\) and X of shape \(2,3\)"):
        pyet.mask(np.ones(3), np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"mask: m must have shape .* got m of shape \(2,1\)"):
        pyet.mask(np.ones((2, 1)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"mask: .* X of shape \(\)"):
        pyet.mask(np.ones(1), 2.0)
