"""Expressions as lazy arrays: NumPy's ndarray methods, len/iteration/indexing,
0-d conversions, __array_function__ and ufunc methods (NumPy is the oracle)."""

import operator

import numpy as np
import pytest

import pyet
from pyet._core import core

RNG = np.random.default_rng(14)


def _pair(shape=(3, 4), dtype=np.float64):
    a = RNG.uniform(-2, 2, shape).astype(dtype)
    return a, pyet.asarray(a)


def _tree(shape=(3, 4)):
    """An elementwise tree (not a leaf) and its NumPy value."""
    a, b = RNG.uniform(-2, 2, shape), RNG.uniform(-2, 2, shape)
    return pyet.asarray(a) * 2 + pyet.asarray(b), a * 2 + b


def _value(x):
    return np.asarray(x)


def _lazy(x):
    assert isinstance(x, pyet.Expr), type(x)
    return np.asarray(x)


# ------------------------------------------------------------- methods

REDUCTIONS = ["sum", "mean", "prod", "max", "min", "argmax", "argmin", "any", "all"]


@pytest.mark.parametrize("kind", REDUCTIONS)
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("leaf", [True, False])
def test_reduction_methods_are_lazy_and_numpys(kind, axis, keepdims, leaf):
    e, a = _tree() if not leaf else (lambda p: (p[1], p[0]))(_pair())
    if kind.startswith("arg") and keepdims and axis is None:
        got = getattr(e, kind)(axis=axis, keepdims=keepdims)
    else:
        got = getattr(e, kind)(axis, keepdims=keepdims)
    want = getattr(a, kind)(axis=axis, keepdims=keepdims)
    out = _lazy(got)
    assert out.dtype == want.dtype and out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-12)


def test_reduction_methods_dtype_out_initial_where():
    a, t = _pair((3, 4), np.int32)
    r = t.sum(dtype=np.int32)
    assert isinstance(r, pyet.Expr) and np.asarray(r).dtype == np.int32
    assert int(r) == a.sum(dtype=np.int32)
    np.testing.assert_allclose(np.asarray(t.mean(0, np.float32)), a.mean(0, np.float32),
                               rtol=1e-6)
    out = np.empty(4)
    assert t.sum(0, out=out) is out
    np.testing.assert_array_equal(out, a.sum(0))
    o = pyet.empty(3)
    assert t.max(1, o) is o
    np.testing.assert_array_equal(o.numpy(), a.max(1))
    # NumPy's own arguments pyet has no lazy form of: NumPy computes them
    np.testing.assert_array_equal(t.sum(initial=5), a.sum(initial=5))
    w = a > 0
    np.testing.assert_array_equal(t.max(initial=-9, where=w), a.max(initial=-9, where=w))
    # a dtype pyet lacks: NumPy's answer
    assert np.asarray(t.sum(dtype=np.float16)).dtype == np.float16
    with pytest.raises(TypeError, match="unexpected keyword"):
        t.sum(bogus=1)


def test_reshape_transpose_flatten_ravel_squeeze():
    e, a = _tree((2, 3, 4))
    np.testing.assert_array_equal(_lazy(e.reshape(6, 4)), a.reshape(6, 4))
    np.testing.assert_array_equal(_lazy(e.reshape((4, -1))), a.reshape((4, -1)))
    np.testing.assert_array_equal(_lazy(e.reshape([24])), a.reshape([24]))
    np.testing.assert_array_equal(_lazy(e.reshape(4, 6, order="F")), a.reshape(4, 6, order="F"))
    np.testing.assert_array_equal(_lazy(e.transpose()), a.transpose())
    np.testing.assert_array_equal(_lazy(e.transpose(1, 0, 2)), a.transpose(1, 0, 2))
    np.testing.assert_array_equal(_lazy(e.transpose((2, 0, 1))), a.transpose((2, 0, 1)))
    np.testing.assert_array_equal(_lazy(e.transpose(None)), a.transpose(None))
    np.testing.assert_array_equal(_lazy(e.swapaxes(0, 2)), a.swapaxes(0, 2))
    np.testing.assert_array_equal(_lazy(e.flatten()), a.flatten())
    np.testing.assert_array_equal(_lazy(e.ravel()), a.ravel())
    np.testing.assert_array_equal(_lazy(e.flatten("F")), a.flatten("F"))
    s = e.reshape(1, 24, 1)
    np.testing.assert_array_equal(_lazy(s.squeeze()), a.reshape(1, 24, 1).squeeze())
    np.testing.assert_array_equal(_lazy(s.squeeze(0)), a.reshape(1, 24, 1).squeeze(0))
    with pytest.raises(ValueError, match="size not equal to one"):
        s.squeeze(1)
    with pytest.raises(ValueError, match="cannot reshape"):
        e.reshape(5, 5)
    with pytest.raises(ValueError, match="order must be"):
        e.reshape(24, order="X")
    with pytest.raises(ValueError, match="don't match"):
        e.transpose(0, 1)


def test_tensor_methods_are_views_of_its_memory():
    a = np.arange(12.0).reshape(3, 4)
    t = pyet.asarray(a)
    r = t.reshape(4, 3)
    assert isinstance(r, pyet.Tensor) and np.shares_memory(r.numpy(), a)
    assert np.shares_memory(t.transpose().numpy(), a)
    assert np.shares_memory(t.ravel().numpy(), a)
    assert t.numpy() is a


def test_copy_item_tolist_numpy():
    e, a = _tree()
    c = e.copy()
    assert isinstance(c, pyet.Tensor)
    np.testing.assert_array_equal(c.numpy(), a)
    src = np.arange(6.0)
    t = pyet.asarray(src)
    tc = t.copy()
    assert isinstance(tc, pyet.Tensor) and not np.shares_memory(tc.numpy(), src)
    n = e.numpy()
    assert type(n) is np.ndarray
    np.testing.assert_array_equal(n, a)
    assert e.tolist() == a.tolist()
    assert e.item(5) == a.item(5)
    assert e.sum().item() == pytest.approx(a.sum())
    with pytest.raises(ValueError, match="size-1|can only convert"):
        e.item()


def test_clip_and_round_methods():
    e, a = _tree()
    np.testing.assert_array_equal(_lazy(e.clip(-1, 1)), a.clip(-1, 1))
    np.testing.assert_array_equal(_lazy(e.clip(min=0)), a.clip(min=0))
    np.testing.assert_array_equal(_lazy(e.clip(max=0.5)), a.clip(max=0.5))
    np.testing.assert_array_equal(_lazy(e.clip()), np.clip(a, None, None))
    for d in (0, 1, 2, -1):
        np.testing.assert_array_equal(_lazy(e.round(d)), a.round(d))
        f = (a * 100).astype(np.float32)
        np.testing.assert_array_equal(_lazy(pyet.asarray(f).round(d)), f.round(d))
    i = np.array([15, 25, -15, -25, 7, 123456789], np.int64)
    for d in (0, 2, -1, -2):
        got = _lazy(pyet.asarray(i).round(d))
        assert got.dtype == i.dtype
        np.testing.assert_array_equal(got, i.round(d))
    b = np.array([True, False])
    np.testing.assert_array_equal(pyet.asarray(b).round(), b.round())
    x = np.array([0.5, 1.5, 2.5, -0.5, np.nan, np.inf])
    np.testing.assert_array_equal(_lazy(pyet.asarray(x).round()), x.round())
    out = np.empty(3)
    assert pyet.asarray(np.array([0.4, 1.6, 2.5])).round(out=out) is out
    np.testing.assert_array_equal(out, [0.0, 2.0, 2.0])


# ------------------------------------------------ len, iteration, indexing

def test_len_and_iteration_over_axis_0():
    e, a = _tree((3, 2))
    assert len(e) == 3
    rows = list(e)
    assert len(rows) == 3 and all(isinstance(r, pyet.Expr) for r in rows)
    for r, want in zip(rows, a, strict=True):
        np.testing.assert_array_equal(np.asarray(r), want)
    z = e.sum()
    with pytest.raises(TypeError, match="unsized"):
        len(z)
    with pytest.raises(TypeError, match="0-d"):
        iter(z)


@pytest.mark.parametrize("key", [0, -1, (1, 2), (slice(None), slice(1, 3)),
                                 (Ellipsis, None), (None, 1), slice(None, None, -1),
                                 (slice(0, 3, 2), -2), (Ellipsis, 0), ()])
def test_basic_indexing_of_any_expression_is_a_lazy_view(key):
    e, a = _tree((3, 4))
    got = e[key]
    assert isinstance(got, pyet.Expr)
    np.testing.assert_array_equal(np.asarray(got), a[key])
    # of a special node (a reduction), and of a broadcast tree
    s = pyet.sum(pyet.asarray(a), axis=1, keepdims=True) + pyet.asarray(a)
    np.testing.assert_allclose(np.asarray(s[key]), (a.sum(1, keepdims=True) + a)[key])
    r = pyet.dot(pyet.asarray(a), pyet.asarray(a.T))
    np.testing.assert_allclose(np.asarray(r[key[:2] if isinstance(key, tuple) else key]),
                               (a @ a.T)[key[:2] if isinstance(key, tuple) else key])


def test_indexing_pushes_down_to_leaves_and_errors():
    a, b = np.arange(12.0).reshape(3, 4), np.arange(4.0)
    ta, tb = pyet.asarray(a), pyet.asarray(b)
    row = (ta * tb + 1)[1]
    assert not isinstance(row, core.SpecialNode)  # a tree over views of a and b
    np.testing.assert_array_equal(np.asarray(row), (a * b + 1)[1])
    with pytest.raises(IndexError, match="out of bounds"):
        (ta + 1)[3]
    with pytest.raises(IndexError, match="too many indices"):
        (ta + 1)[0, 0, 0]
    with pytest.raises(IndexError, match="basic indices only"):
        (ta + 1)[[0, 1]]


def test_indexing_gradient():
    a = np.arange(6.0).reshape(2, 3)
    ta = pyet.asarray(a)
    (g,) = pyet.grad(pyet.sum(pyet.exp(ta * 2)[1, ::2]), [ta])
    want = np.zeros_like(a)
    want[1, ::2] = 2 * np.exp(2 * a[1, ::2])
    np.testing.assert_allclose(np.asarray(g), want)


# ---------------------------------------------------------- 0-d values

def test_zero_d_expressions_convert_when_python_needs_a_value():
    a = np.array([1.5, 2.5, -1.0])
    t = pyet.asarray(a)
    s = t.sum()
    assert float(s) == 3.0 and isinstance(float(s), float)
    assert int(s) == 3
    assert bool(s) is True and bool(t.min() > 0) is False
    assert f"{s:.3f}" == "3.000" and format(s, "") == "3.0"
    i = pyet.asarray(np.arange(5)).argmax()
    assert operator.index(i) == 4
    assert [10, 11, 12, 13, 14][i] == 14
    assert range(10)[i] == 4
    with pytest.raises(TypeError, match="ambiguous"):
        bool(t > 0)
    with pytest.raises(TypeError, match="0-dimensional"):
        float(t + 1)
    with pytest.raises(TypeError, match="0-dimensional"):
        int(t + 1)
    with pytest.raises(TypeError, match="0-dimensional"):
        operator.index(t + 1)
    with pytest.raises(TypeError, match="format string"):
        f"{t + 1:.3f}"
    assert "add" in f"{t + 1}"
    with pytest.raises(TypeError):
        operator.index(pyet.asarray(np.array(1.5)) + 1)  # a float is no index


# --------------------------------------------------- __array_function__

def _both(fn, *arrays):
    """fn on pyet operands (lazy) and on the ndarrays."""
    return fn(*[pyet.asarray(x) for x in arrays]), fn(*arrays)


LAZY_FUNCTIONS = [
    ("sum", lambda x: np.sum(x)), ("sum0", lambda x: np.sum(x, 0, keepdims=True)),
    ("mean", lambda x: np.mean(x, axis=1)), ("prod", lambda x: np.prod(x, axis=(0, 1))),
    ("max", lambda x: np.max(x, 0)), ("amax", lambda x: np.amax(x)),
    ("min", lambda x: np.min(x, axis=-1)), ("amin", lambda x: np.amin(x, 1)),
    ("argmax", lambda x: np.argmax(x, axis=0)), ("argmin", lambda x: np.argmin(x)),
    ("any", lambda x: np.any(x > 1, axis=0)), ("all", lambda x: np.all(x < 3)),
    ("transpose", lambda x: np.transpose(x)), ("transpose2", lambda x: np.transpose(x, (1, 0))),
    ("reshape", lambda x: np.reshape(x, (4, 3))), ("reshapeF", lambda x: np.reshape(x, -1, "F")),
    ("ravel", lambda x: np.ravel(x)), ("swapaxes", lambda x: np.swapaxes(x, 0, 1)),
    ("squeeze", lambda x: np.squeeze(x[None])),
    ("concatenate", lambda x: np.concatenate([x, x * 2], axis=1)),
    ("concatenateNone", lambda x: np.concatenate((x, x), axis=None)),
    ("stack", lambda x: np.stack([x, x + 1], -1)),
    ("where", lambda x: np.where(x > 0, x, -x)),
    ("clip", lambda x: np.clip(x, -0.5, 0.5)), ("clipmin", lambda x: np.clip(x, min=0)),
    ("round", lambda x: np.round(x, 1)), ("around", lambda x: np.around(x)),
    ("broadcast_to", lambda x: np.broadcast_to(x, (2, 3, 4))),
    ("flip", lambda x: np.flip(x)), ("flip0", lambda x: np.flip(x, 0)),
    ("pad", lambda x: np.pad(x, 1)),
    ("pad2", lambda x: np.pad(x, ((1, 2), (0, 3)), constant_values=7)),
    ("pad_axis0", lambda x: np.pad(x, ((2, 1), (0, 0)), "constant", constant_values=-1)),
    ("pad_pairs", lambda x: np.pad(x, ((1, 1), (2, 0)), constant_values=((1, 2), (3, 4)))),
    ("dot", lambda x: np.dot(x, x.T)), ("dotv", lambda x: np.dot(x, x[0])),
    ("dot0", lambda x: np.dot(x, 2.0)),
    ("matmul", lambda x: np.matmul(x.T, x)), ("tensordot", lambda x: np.tensordot(x, x, 2)),
    ("tensordot1", lambda x: np.tensordot(x, x.T, axes=1)),
    ("tensordot_pairs", lambda x: np.tensordot(x, x, axes=([0], [0]))),
]


@pytest.mark.parametrize("name, fn", LAZY_FUNCTIONS, ids=[n for n, _ in LAZY_FUNCTIONS])
def test_numpy_functions_build_lazy_nodes(name, fn):
    a = RNG.uniform(-2, 2, (3, 4))
    got, want = _both(fn, a)
    assert isinstance(got, pyet.Expr), (name, type(got))
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # on a tree, not only a leaf
    e = pyet.asarray(a) + 0.5
    np.testing.assert_allclose(np.asarray(fn(e)), fn(a + 0.5), rtol=1e-12, atol=1e-12)


def test_numpy_shape_queries_do_not_evaluate():
    # an expression that fails if evaluated
    e = pyet.F(lambda x: x if x.size == 0 else 1 // 0, pyet.asarray(np.ones((2, 3))))
    assert np.shape(e) == (2, 3) and np.ndim(e) == 2 and np.size(e) == 6
    assert np.size(e, 1) == 3


def test_numpy_function_outputs():
    a = RNG.uniform(-2, 2, (3, 4))
    out = np.empty(4)
    assert np.sum(pyet.asarray(a), axis=0, out=out) is out
    np.testing.assert_allclose(out, a.sum(0))
    o = pyet.empty((3, 8))
    assert np.concatenate([pyet.asarray(a), a], axis=1, out=o) is o
    np.testing.assert_array_equal(o.numpy(), np.concatenate([a, a], 1))
    o2 = pyet.empty((3, 3))
    assert np.dot(pyet.asarray(a), a.T, out=o2) is o2
    np.testing.assert_allclose(o2.numpy(), a @ a.T)


OTHER_FUNCTIONS = [
    ("cumsum", lambda x: np.cumsum(x, axis=1)), ("sort", lambda x: np.sort(x, axis=0)),
    ("linalg.norm", lambda x: np.linalg.norm(x)), ("mean_where", lambda x: np.mean(x, where=x > 0)),
    ("sum_initial", lambda x: np.sum(x, initial=3.0)), ("nonzero", lambda x: np.nonzero(x > 0)),
    ("where1", lambda x: np.where(x > 0)), ("diff", lambda x: np.diff(x)),
    ("unique", lambda x: np.unique(np.round(x))),
    ("reshape_copy", lambda x: np.reshape(x, -1, copy=True)),
    ("pad_edge", lambda x: np.pad(x, 1, mode="edge")), ("dot3d", lambda x: np.dot(x[None], x.T)),
    ("concat_dtype", lambda x: np.concatenate([x, x], dtype=np.float32)),
    ("allclose", lambda x: np.allclose(x, x)), ("array_equal", lambda x: np.array_equal(x, x)),
    ("sum_f16", lambda x: np.sum(x, dtype=np.float16)), ("median", lambda x: np.median(x)),
    ("einsum", lambda x: np.einsum("ij,ij->i", x, x)), ("outer", lambda x: np.outer(x, x)),
]


@pytest.mark.parametrize("name, fn", OTHER_FUNCTIONS, ids=[n for n, _ in OTHER_FUNCTIONS])
def test_any_other_numpy_function_evaluates_and_calls_numpy(name, fn):
    a = RNG.uniform(-2, 2, (3, 4))
    for operand in (pyet.asarray(a), pyet.asarray(a) * 1.0):
        got, want = fn(operand), fn(a)
        if isinstance(want, tuple):
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
            assert not isinstance(got, pyet.Expr) or name in ()


def test_numpy_in_place_functions_write_a_tensors_memory():
    a = np.zeros((3, 3))
    t = pyet.asarray(a)
    np.fill_diagonal(t, 5.0)
    np.copyto(t[0], 1.0)
    np.testing.assert_array_equal(a, [[1, 1, 1], [0, 5, 0], [0, 0, 5]])


def test_numpy_errors_stay_numpys():
    t = pyet.asarray(np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError, match="cannot reshape"):
        np.reshape(t, (4, 4))
    with pytest.raises(np.exceptions.AxisError):
        np.sum(t, axis=3)
    with pytest.raises(TypeError):
        np.sum(t, bogus=1)
    with pytest.raises(ValueError, match="dimensions except for the concatenation axis"):
        np.concatenate([t, pyet.asarray(np.ones((2, 2)))], axis=0)


def test_foreign_array_types_get_their_turn():
    class Other:
        def __array_function__(self, func, types, args, kwargs):
            return "other"

    assert np.concatenate([pyet.asarray(np.ones(2)), Other()]) == "other"


# ------------------------------------------------------------ ufuncs

@pytest.mark.parametrize("ufunc, kind", [(np.add, "sum"), (np.multiply, "prod"),
                                         (np.maximum, "max"), (np.minimum, "min"),
                                         (np.logical_and, "all"), (np.logical_or, "any")])
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int64, np.float32, np.float64])
def test_ufunc_reduce_builds_reductions(ufunc, kind, dtype):
    a = RNG.uniform(0, 3, (3, 4)).astype(dtype)
    t = pyet.asarray(a)
    for kwargs in ({}, {"axis": 1}, {"axis": None}, {"axis": (0, 1), "keepdims": True}):
        got = ufunc.reduce(t, **kwargs)
        assert isinstance(got, core.SpecialNode)
        want = ufunc.reduce(a, **kwargs)
        got = np.asarray(got)
        assert got.dtype == want.dtype and got.shape == np.shape(want), kwargs
        np.testing.assert_allclose(got, want, rtol=1e-6)
    out = np.empty(3, ufunc.reduce(a, axis=1).dtype)
    assert ufunc.reduce(t, 1, out=out) is out
    np.testing.assert_allclose(out, ufunc.reduce(a, 1), rtol=1e-6)


@pytest.mark.parametrize("method, call", [
    ("subtract.reduce", lambda x: np.subtract.reduce(x, axis=1)),
    ("add.accumulate", lambda x: np.add.accumulate(x)),
    ("multiply.outer", lambda x: np.multiply.outer(x[0], x[1])),
    ("add.reduceat", lambda x: np.add.reduceat(x, [0, 2], axis=1)),
    ("add.reduce_where", lambda x: np.add.reduce(x, where=x > 0, axis=0)),
    ("add.reduce_initial", lambda x: np.add.reduce(x, initial=1.0)),
    ("add_dtype", lambda x: np.add(x, 1, dtype=np.float32)),
    ("add_casting", lambda x: np.add(x, 1, casting="unsafe")),
    ("frexp", lambda x: np.frexp(x)),
])
def test_other_ufunc_methods_and_keywords_are_numpys(method, call):
    a = RNG.uniform(-2, 2, (3, 4))
    got, want = call(pyet.asarray(a)), call(a)
    if isinstance(want, tuple):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(g), w)
    else:
        np.testing.assert_array_equal(np.asarray(got), want)


def test_ufunc_at_writes_a_tensors_memory():
    a = np.zeros(4)
    t = pyet.asarray(a)
    np.add.at(t, [0, 0, 2], 1.0)
    np.testing.assert_array_equal(a, [2, 0, 1, 0])


@pytest.mark.parametrize("call", [
    lambda x, i: np.gcd(i, 6), lambda x, i: np.lcm(i, i + 1), lambda x, i: np.heaviside(x, 0.5),
    lambda x, i: np.spacing(x), lambda x, i: np.fabs(x), lambda x, i: np.left_shift(i, 2),
    lambda x, i: np.nextafter(x, 1.0), lambda x, i: np.logical_xor(x > 0, i > 2),
    lambda x, i: np.logical_and(x > 0, 1), lambda x, i: np.signbit(x),
    lambda x, i: np.float_power(x, 2), lambda x, i: np.ldexp(x, i),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ufunc_without_a_kernel_builds_a_lazy_F_node(call, dtype):
    x = RNG.uniform(-2, 2, (3, 5)).astype(dtype)
    i = np.arange(15, dtype=np.int32).reshape(3, 5)
    e = call(pyet.asarray(x) * 1, pyet.asarray(i))
    assert isinstance(e, pyet.Expr)
    assert "F[" in repr(e)
    got, want = np.asarray(e), call(x, i)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_ufunc_F_node_fuses_with_the_tree_and_takes_out():
    x = RNG.uniform(0.5, 2, 1000)
    t = pyet.asarray(x)
    out = np.empty(1000)
    assert np.heaviside(t - 1, 0.5, out=out) is out
    np.testing.assert_array_equal(out, np.heaviside(x - 1, 0.5))
    e = pyet.exp(np.spacing(t * 2)) + 1
    np.testing.assert_array_equal(np.asarray(e), np.exp(np.spacing(x * 2)) + 1)


def test_ufunc_with_a_result_dtype_pyet_lacks_is_numpys():
    x = np.array([1.0, 2.0])
    got = np.divmod(pyet.asarray(x), 0.75)  # two outputs
    np.testing.assert_array_equal(got[0], np.divmod(x, 0.75)[0])
    with pytest.raises(TypeError):
        np.gcd(pyet.asarray(x), 2)  # NumPy has no float gcd


def test_compute_evaluates_into_a_new_tensor():
    a = np.arange(6.0).reshape(2, 3)
    t = pyet.asarray(a)
    got = (t * 2 + 1).compute()
    assert isinstance(got, pyet.Tensor)
    np.testing.assert_array_equal(got.numpy(), a * 2 + 1)
    c = t.compute()  # a Tensor: a copy, new memory
    assert not np.shares_memory(c.numpy(), a)
    np.testing.assert_array_equal(pyet.sum(t, axis=1).compute().numpy(), a.sum(1))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_python_divmod_round_and_in(dtype):
    # Python's divmod(), round() and `in` on expressions, as on ndarrays
    x = (np.arange(-7, 8).reshape(3, 5) * 3).astype(dtype)
    t = pyet.asarray(x)
    for got, want in zip(divmod(t, 4), divmod(x, 4), strict=True):
        assert isinstance(got, pyet.Expr)
        np.testing.assert_array_equal(pyet.evaluate(got), want)
    for got, want in zip(divmod(5, t[:, 1:2] + 100), divmod(5, x[:, 1:2] + 100), strict=True):
        np.testing.assert_array_equal(pyet.evaluate(got), want)
    np.testing.assert_array_equal(pyet.evaluate(divmod(t, t * 0 + 3)[1]), x % 3)
    r = round(t / 4)
    assert isinstance(r, pyet.Expr)
    np.testing.assert_array_equal(pyet.evaluate(r), np.round(x / 4))
    np.testing.assert_array_equal(pyet.evaluate(round(t / 7, 2)), np.round(x / 7, 2))
    assert 6 in t and 6 in t * 1 and 7 not in t and (-21 in t[0]) and (21 not in t[0])
    assert 0 not in pyet.asarray(np.zeros((0, 3), dtype))


def test_contains_incomparable_value():
    t = pyet.asarray(np.arange(3.0))
    assert "a" not in t and None not in t and ("a" in np.arange(3.0)) is False
