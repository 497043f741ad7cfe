"""Shape-changing expressions (issue 4, section 2): broadcast_to, broadcast_with_axis, repmat,
reshape, flip, crop, pad, concatenate and stack, against NumPy: of leaves of every layout and
supported dtype, of trees, products, reductions and special nodes, inside bigger trees, as
assignment sources (also aliasing their destination), lazily, and every error path."""

import itertools
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet

DTYPES = ["bool", "int32", "int64", "float32", "float64"]
LAYOUTS = ["C", "F", "strided", "neg", "bcast"]


def rand(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        return rng.integers(-9, 10, size=shape).astype(dtype)
    return rng.uniform(-2, 2, size=shape).astype(dtype)


def operand(layout, shape, dtype, seed=0):
    """An ndarray of ``shape`` with the given memory layout."""
    nd = len(shape)
    if layout == "C" or nd == 0:
        return rand(shape, dtype, seed)
    if layout == "F":
        return np.asfortranarray(rand(shape, dtype, seed))
    if layout == "strided":
        return rand(tuple(2 * n + 1 for n in shape), dtype, seed)[(slice(1, None, 2),) * nd]
    if layout == "neg":
        return rand(tuple(2 * n for n in shape), dtype, seed)[(slice(None, None, -2),) * nd]
    assert layout == "bcast"  # stride 0 along the first axis
    return np.broadcast_to(rand(shape[1:], dtype, seed), shape)


def ev(e):
    return np.asarray(pyet.evaluate(e))


def exact(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def close(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    rtol = 1e-5 if want.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


# ------------------------------------------------------- each function, of leaves
# name: (operand shape, pyet function of a Tensor, NumPy function of an ndarray)

CASES = {
    "broadcast_to new axes": ((3, 4), lambda x: pyet.broadcast_to(x, (2, 3, 4)),
                              lambda x: np.broadcast_to(x, (2, 3, 4))),
    "broadcast_to size-1 axis": ((1, 4), lambda x: pyet.broadcast_to(x, (3, 4)),
                                 lambda x: np.broadcast_to(x, (3, 4))),
    "broadcast_to int shape": ((1,), lambda x: pyet.broadcast_to(x, 5),
                               lambda x: np.broadcast_to(x, 5)),
    "broadcast_with_axis -1": ((3, 4), lambda x: pyet.broadcast_with_axis(x, -1, 2),
                               lambda x: np.broadcast_to(x[None], (2, 3, 4))),
    "broadcast_with_axis 0": ((3, 4), lambda x: pyet.broadcast_with_axis(x, 0, 2),
                              lambda x: np.broadcast_to(np.expand_dims(x, 1), (3, 2, 4))),
    "broadcast_with_axis last": ((3, 4), lambda x: pyet.broadcast_with_axis(x, 1, 5),
                                 lambda x: np.broadcast_to(np.expand_dims(x, 2), (3, 4, 5))),
    "repmat vector": ((4,), lambda x: pyet.repmat(x, 3), lambda x: np.tile(x, (3, 1))),
    "repmat matrix": ((3, 4), lambda x: pyet.repmat(x, 2),
                      lambda x: np.broadcast_to(x, (2, 3, 4))),
    "reshape": ((3, 4), lambda x: pyet.reshape(x, (2, 6)), lambda x: np.reshape(x, (2, 6))),
    "reshape -1": ((3, 4), lambda x: pyet.reshape(x, (-1, 3)),
                   lambda x: np.reshape(x, (-1, 3))),
    "reshape 3-D": ((3, 4), lambda x: pyet.reshape(x, (2, -1, 2)),
                    lambda x: np.reshape(x, (2, -1, 2))),
    "reshape flat": ((2, 3, 4), lambda x: pyet.reshape(x, -1), lambda x: np.reshape(x, -1)),
    "flip 0": ((3, 4), lambda x: pyet.flip(x, 0), lambda x: np.flip(x, 0)),
    "flip -1": ((2, 3, 4), lambda x: pyet.flip(x, -1), lambda x: np.flip(x, -1)),
    "flip tuple": ((2, 3, 4), lambda x: pyet.flip(x, (0, 2)), lambda x: np.flip(x, (0, 2))),
    "flip all": ((3, 4), lambda x: pyet.flip(x), lambda x: np.flip(x)),
    "crop centred": ((5, 7), lambda x: pyet.crop(x, (3, 4)), lambda x: x[1:4, 1:5]),
    "crop centred odd": ((6, 7), lambda x: pyet.crop(x, (3, 3)), lambda x: x[1:4, 2:5]),
    "crop offset": ((5, 7), lambda x: pyet.crop(x, (2, 3), (3, 4)), lambda x: x[3:5, 4:7]),
    "crop 3-D": ((2, 5, 7), lambda x: pyet.crop(x, (5, 2), (0, 1)), lambda x: x[:, 0:5, 1:3]),
    "pad int": ((3, 4), lambda x: pyet.pad(x, 1), lambda x: np.pad(x, 1)),
    "pad pair": ((3, 4), lambda x: pyet.pad(x, (1, 2), value=1),
                 lambda x: np.pad(x, ((1, 1), (2, 2)), constant_values=1)),
    "pad pairs 3-D": ((2, 3, 4), lambda x: pyet.pad(x, ((0, 2), (3, 1)), value=5),
                      lambda x: np.pad(x, ((0, 0), (0, 2), (3, 1)), constant_values=5)),
    "pad zero": ((3, 4), lambda x: pyet.pad(x, 0), lambda x: np.pad(x, 0)),
    "concatenate 0": ((3, 4), lambda x: pyet.concatenate([x, x[:1], pyet.flip(x, 0)]),
                      lambda x: np.concatenate([x, x[:1], np.flip(x, 0)])),
    "concatenate -1": ((3, 4), lambda x: pyet.concatenate((x[:, 1:], x), axis=-1),
                       lambda x: np.concatenate((x[:, 1:], x), axis=-1)),
    "concatenate None": ((3, 4), lambda x: pyet.concatenate([x, x[0]], axis=None),
                         lambda x: np.concatenate([x, x[0]], axis=None)),
    "concatenate one": ((3, 4), lambda x: pyet.concatenate([x], 1),
                        lambda x: np.concatenate([x], 1)),
    "stack 0": ((3, 4), lambda x: pyet.stack([x, x[::-1]]), lambda x: np.stack([x, x[::-1]])),
    "stack 1": ((3, 4), lambda x: pyet.stack([x, x, x], 1), lambda x: np.stack([x, x, x], 1)),
    "stack -1": ((3, 4), lambda x: pyet.stack([x[::-1], x], -1),
                 lambda x: np.stack([x[::-1], x], -1)),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", CASES)
def test_function_of_a_leaf_matches_numpy(name, dtype, layout):
    shape, f, fnp = CASES[name]
    x = operand(layout, shape, dtype)
    e = f(pyet.asarray(x))
    want = fnp(x)
    assert e.shape == want.shape and e.dtype == want.dtype  # known when built
    exact(ev(e), want)
    exact(f(x).__array__(), want)  # an ndarray operand works too


ZERO_D = {
    "broadcast_to": (lambda x: pyet.broadcast_to(x, (2, 3)),
                     lambda x: np.broadcast_to(x, (2, 3))),
    "broadcast_with_axis": (lambda x: pyet.broadcast_with_axis(x, -1, 3),
                            lambda x: np.broadcast_to(x, (3,))),
    "repmat": (lambda x: pyet.repmat(x, 4), lambda x: np.tile(x, 4)),
    "reshape (1,1)": (lambda x: pyet.reshape(x, (1, 1)), lambda x: np.reshape(x, (1, 1))),
    "reshape -1": (lambda x: pyet.reshape(x, -1), lambda x: np.reshape(x, -1)),
    "reshape ()": (lambda x: pyet.reshape(x, ()), lambda x: np.reshape(x, ())),
    "flip": (lambda x: pyet.flip(x), lambda x: np.flip(x)),
    "flip ()": (lambda x: pyet.flip(x, ()), lambda x: np.flip(x, ())),
    "concatenate None": (lambda x: pyet.concatenate([x, x], None),
                         lambda x: np.concatenate([x, x], None)),
    "stack": (lambda x: pyet.stack([x, x, x]), lambda x: np.stack([x, x, x])),
    "pad of reshape": (lambda x: pyet.pad(pyet.reshape(x, (1, 1)), 1, value=1),
                       lambda x: np.pad(np.reshape(x, (1, 1)), 1, constant_values=1)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ZERO_D)
def test_zero_d_operands(name, dtype):
    f, fnp = ZERO_D[name]
    x = rand((), dtype)
    exact(ev(f(pyet.asarray(x))), fnp(x))


@pytest.mark.parametrize("value, dtype", [(2.5, "float64"), (3, "int64"), (True, "bool")])
def test_python_scalar_operands(value, dtype):
    exact(ev(pyet.broadcast_to(value, (2, 3))), np.broadcast_to(np.asarray(value), (2, 3)))
    exact(ev(pyet.repmat(value, 3)), np.tile(np.asarray(value), 3))
    exact(ev(pyet.stack([value, value])), np.stack([value, value]))
    assert pyet.stack([value, value]).dtype == dtype


EMPTY = {
    "broadcast_to": ((0, 3), lambda x: pyet.broadcast_to(x, (2, 0, 3)),
                     lambda x: np.broadcast_to(x, (2, 0, 3))),
    "broadcast_with_axis n=0": ((2, 3), lambda x: pyet.broadcast_with_axis(x, 0, 0),
                                lambda x: np.empty((2, 0, 3), x.dtype)),
    "repmat 0": ((3,), lambda x: pyet.repmat(x, 0), lambda x: np.tile(x, (0, 1))),
    "reshape": ((0, 3), lambda x: pyet.reshape(x, (3, -1, 1)),
                lambda x: np.reshape(x, (3, -1, 1))),
    "flip": ((0, 3), lambda x: pyet.flip(x, 1), lambda x: np.flip(x, 1)),
    "crop": ((4, 5), lambda x: pyet.crop(x, (0, 2)), lambda x: x[2:2, 1:3]),
    "pad": ((0, 3), lambda x: pyet.pad(x, 1, value=1),
            lambda x: np.pad(x, 1, constant_values=1)),
    "pad 3-D": ((0, 2, 3), lambda x: pyet.pad(x, 1), lambda x: np.pad(x, ((0, 0), (1, 1), (1, 1)))),
    "concatenate": ((0, 3), lambda x: pyet.concatenate([x, x, x]),
                    lambda x: np.concatenate([x, x, x])),
    "concatenate with non-empty": (
        (0, 3), lambda x: pyet.concatenate([x, np.ones((2, 3), x.dtype)]),
        lambda x: np.concatenate([x, np.ones((2, 3), x.dtype)])),
    "stack": ((0, 3), lambda x: pyet.stack([x, x], 1), lambda x: np.stack([x, x], 1)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", EMPTY)
def test_empty_operands(name, dtype):
    shape, f, fnp = EMPTY[name]
    x = rand(shape, dtype)
    exact(ev(f(pyet.asarray(x))), fnp(x))


@pytest.mark.parametrize("a_dt, b_dt", [("bool", "int32"), ("int32", "float32"),
                                        ("int64", "float32"), ("float32", "float64"),
                                        ("int32", "int64"), ("bool", "float64")])
def test_concatenate_and_stack_take_the_result_type(a_dt, b_dt):
    a, b = rand((2, 3), a_dt), rand((2, 3), b_dt, seed=1)
    A, B = pyet.asarray(a), pyet.asarray(b)
    assert pyet.concatenate([A, B]).dtype == np.result_type(a, b)
    exact(ev(pyet.concatenate([A, B], 1)), np.concatenate([a, b], 1))
    exact(ev(pyet.stack([B, A], 2)), np.stack([b, a], 2))
    d = np.zeros((4, 3), np.result_type(a, b))  # at the root, straight into d
    pyet.asarray(d)[...] = pyet.concatenate([A, B])
    exact(d, np.concatenate([a, b]))


@pytest.mark.parametrize("dtype, value", [("int32", 2.7), ("int32", -2.7), ("bool", -1),
                                          ("bool", 0.5), ("float32", 0.1), ("int64", True),
                                          ("float64", np.inf)])
def test_pad_value_is_cast_like_np_pad(dtype, value):
    x = rand((2, 3), dtype)
    e = pyet.pad(x, 1, value)
    assert e.dtype == dtype
    exact(ev(e), np.pad(x, 1, constant_values=value))


def test_crop_and_pad_are_inverse():
    x = rand((2, 3, 4))
    exact(ev(pyet.crop(pyet.pad(x, ((1, 2), (3, 0))), (3, 4), (1, 3))), x)


def test_reshape_of_a_contiguous_tensor_is_a_view():
    x = rand((3, 4))
    r = pyet.reshape(pyet.asarray(x), (2, -1))
    assert isinstance(r, pyet.Tensor) and r.shape == (2, 6)
    assert np.shares_memory(r.numpy(), x)
    r[0] = 7.0  # writes through to x
    assert (x.reshape(-1)[:6] == 7.0).all()
    t = pyet.asarray(x)
    assert pyet.reshape(t, (3, 4)) is t


@pytest.mark.parametrize("make", [lambda x: pyet.flip(x, 0), lambda x: pyet.crop(x, (2, 2)),
                                  lambda x: pyet.broadcast_to(x, (2, 4, 5)),
                                  lambda x: pyet.broadcast_with_axis(x, 0, 3),
                                  lambda x: pyet.reshape(x[1:3], (5, 2))],
                         ids=["flip", "crop", "broadcast_to", "broadcast_with_axis", "reshape"])
def test_views_of_tensors_share_their_memory(make):
    x = rand((4, 5))
    v = make(pyet.asarray(x))
    assert isinstance(v, pyet.Tensor)
    assert np.shares_memory(v.numpy(), x)


# ------------------------------------------------------------------- of trees

def _tree_inputs(dtype):
    return rand((4, 6), dtype), rand((4, 6), dtype, 1), rand(6, dtype, 2), rand((3, 4, 6), dtype, 3)


TREES = {
    "flip(a*b + c, 0)": (lambda a, b, c, x: pyet.flip(a * b + c, 0),
                         lambda a, b, c, x: np.flip(a * b + c, 0)),
    "flip(a*b + c) all axes": (lambda a, b, c, x: pyet.flip(a * b + c),
                               lambda a, b, c, x: np.flip(a * b + c)),
    "reshape(a.T + 1) (fallback)": (lambda a, b, c, x: pyet.reshape(a.T + 1, (3, -1)),
                                    lambda a, b, c, x: np.reshape(a.T + 1, (3, -1))),
    "reshape(a + c) (broadcast operand: fallback)": (
        lambda a, b, c, x: pyet.reshape(a + c, (8, 3)),
        lambda a, b, c, x: np.reshape(a + c, (8, 3))),
    "reshape(a*b) (pushed down)": (lambda a, b, c, x: pyet.reshape(a * b, (2, 12)),
                                   lambda a, b, c, x: np.reshape(a * b, (2, 12))),
    "pad(sum(x, 0), 1)": (lambda a, b, c, x: pyet.pad(pyet.sum(x, 0), 1),
                          lambda a, b, c, x: np.pad(np.sum(x, 0), 1)),
    "broadcast_to(sum(x, 2))": (lambda a, b, c, x: pyet.broadcast_to(pyet.sum(x, 2), (2, 3, 4)),
                                lambda a, b, c, x: np.broadcast_to(np.sum(x, 2), (2, 3, 4))),
    "flip(reshape(sum(x, 0)))": (
        lambda a, b, c, x: pyet.flip(pyet.reshape(pyet.sum(x, 0) + c, (3, 8)), 1),
        lambda a, b, c, x: np.flip(np.reshape(np.sum(x, 0) + c, (3, 8)), 1)),
    "crop(pad(x, 2))": (lambda a, b, c, x: pyet.crop(pyet.pad(x, 2), (5, 7), (1, 3)),
                        lambda a, b, c, x: np.pad(x, ((0, 0), (2, 2), (2, 2)))[:, 1:6, 3:10]),
    "flip(pad(a))": (lambda a, b, c, x: pyet.flip(pyet.pad(a, (1, 2), value=1), (0, 1)),
                     lambda a, b, c, x: np.flip(np.pad(a, ((1, 1), (2, 2)), constant_values=1))),
    "reshape(concatenate)": (lambda a, b, c, x: pyet.reshape(pyet.concatenate([a, b]), (6, 8)),
                             lambda a, b, c, x: np.reshape(np.concatenate([a, b]), (6, 8))),
    "nested views": (
        lambda a, b, c, x: pyet.crop(pyet.flip(pyet.broadcast_with_axis(a * b, -1, 2), 2),
                                     (3, 4), (1, 1)),
        lambda a, b, c, x: np.flip(np.broadcast_to(a * b, (2, 4, 6)), 2)[:, 1:4, 1:5]),
    "pad(x, 1) * 2 + y": (lambda a, b, c, x: pyet.pad(a, 1) * 2 + pyet.pad(b, 1),
                          lambda a, b, c, x: np.pad(a, 1) * 2 + np.pad(b, 1)),
    "concatenate([a, b*2], 1) - c": (
        lambda a, b, c, x: pyet.concatenate([a, b * 2], 1) - pyet.concatenate([c, c]),
        lambda a, b, c, x: np.concatenate([a, b * 2], 1) - np.concatenate([c, c])),
    "stack([a, flip(b)], 1) + 1": (lambda a, b, c, x: pyet.stack([a, pyet.flip(b, 0)], 1) + 1,
                                   lambda a, b, c, x: np.stack([a, np.flip(b, 0)], 1) + 1),
    "repmat(c * 2, 4) + a": (lambda a, b, c, x: pyet.repmat(c * 2, 4) + a,
                             lambda a, b, c, x: np.tile(c * 2, (4, 1)) + a),
    "broadcast_with_axis(a + c) * x": (
        lambda a, b, c, x: pyet.broadcast_with_axis(a[:3] + c, 0, 4) * pyet.reshape(x, (3, 4, 6)),
        lambda a, b, c, x: np.broadcast_to((a[:3] + c)[:, None], (3, 4, 6)) * x),
    "where(a > b, flip(a), crop(x))": (
        lambda a, b, c, x: pyet.where(a > b, pyet.flip(a, 0), pyet.crop(x[0] + b, (4, 6))),
        lambda a, b, c, x: np.where(a > b, np.flip(a, 0), x[0] + b)),
    "concatenate of pads, crops, stacks": (
        lambda a, b, c, x: pyet.concatenate(
            [pyet.pad(a, ((0, 0), (1, 1))),
             pyet.crop(pyet.reshape(pyet.stack([a, b], 2), (4, 12)), (4, 8), (0, 2))], 0),
        lambda a, b, c, x: np.concatenate(
            [np.pad(a, ((0, 0), (1, 1))), np.reshape(np.stack([a, b], 2), (4, 12))[:, 2:10]], 0)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", TREES)
def test_function_of_a_tree_matches_numpy(name, dtype):
    f, fnp = TREES[name]
    a, b, c, x = _tree_inputs(dtype)
    want = fnp(a, b, c, x)
    e = f(*map(pyet.asarray, (a, b, c, x)))
    assert e.shape == want.shape and e.dtype == want.dtype
    close(ev(e), want)


PRODUCTS = {
    "flip(dot(A, B), 1)": (lambda A, B: pyet.flip(pyet.dot(A, B), 1),
                           lambda a, b: np.flip(a @ b, 1)),
    "reshape(dot(A, B) + 1)": (lambda A, B: pyet.reshape(pyet.dot(A, B) + 1, -1),
                               lambda a, b: np.reshape(a @ b + 1, -1)),
    "crop(flip(dot))": (lambda A, B: pyet.crop(pyet.flip(pyet.dot(A, B), 0), (2, 3)),
                        lambda a, b: np.flip(a @ b, 0)[1:3, 1:4]),
    "pad(dot) * 2": (lambda A, B: pyet.pad(pyet.dot(A, B), 1, value=-1) * 2,
                     lambda a, b: np.pad(a @ b, 1, constant_values=-1) * 2),
    "repmat(dot(A, v))": (lambda A, B: pyet.repmat(pyet.dot(A, B[:, 0]), 3),
                          lambda a, b: np.tile(a @ b[:, 0], (3, 1))),
    "concatenate([dot, A[:, :5]], 0)": (lambda A, B: pyet.concatenate([pyet.dot(A, B), A[:, :5]]),
                                        lambda a, b: np.concatenate([a @ b, a[:, :5]])),
    "stack([dot, flip(dot)])": (
        lambda A, B: pyet.stack([pyet.dot(A, B), pyet.flip(pyet.dot(A, B), 1)], -1),
        lambda a, b: np.stack([a @ b, np.flip(a @ b, 1)], -1)),
    "broadcast_to(dot.T)": (lambda A, B: pyet.broadcast_to(pyet.dot(A, B).T, (2, 5, 4)),
                            lambda a, b: np.broadcast_to((a @ b).T, (2, 5, 4))),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("name", PRODUCTS)
def test_views_of_products(name, dtype):
    f, fnp = PRODUCTS[name]
    a, b = rand((4, 6), dtype), rand((6, 5), dtype, 1)
    close(ev(f(pyet.asarray(a), pyet.asarray(b))), fnp(a, b))


# ------------------------------------------------------ as assignment sources
# name: (pyet function of Tensors x (4, 6) and y (4, 6), NumPy function, result shape)

SOURCES = {
    "broadcast_to": (lambda x, y: pyet.broadcast_to(x[0], (3, 6)),
                     lambda x, y: np.broadcast_to(x[0], (3, 6))),
    "broadcast_with_axis": (lambda x, y: pyet.broadcast_with_axis(x[0] * 2, -1, 3),
                            lambda x, y: np.broadcast_to(x[0] * 2, (3, 6))),
    "repmat": (lambda x, y: pyet.repmat(x[1] + y[0], 3), lambda x, y: np.tile(x[1] + y[0], (3, 1))),
    "reshape": (lambda x, y: pyet.reshape(x[:3].T, (3, 6)),
                lambda x, y: np.reshape(x[:3].T, (3, 6))),
    "flip": (lambda x, y: pyet.flip(x[1:] - y[:3], (0, 1)), lambda x, y: np.flip(x[1:] - y[:3])),
    "crop": (lambda x, y: pyet.crop(x * y, (3, 6)), lambda x, y: (x * y)[0:3]),
    "pad": (lambda x, y: pyet.pad(x[:1, 1:5] * 2, 1, value=-3),
            lambda x, y: np.pad(x[:1, 1:5] * 2, 1, constant_values=-3)),
    "pad of a dot": (lambda x, y: pyet.pad(pyet.dot(x[:1], y.T), 1),
                     lambda x, y: np.pad(x[:1] @ y.T, 1)),
    "concatenate": (lambda x, y: pyet.concatenate([x[:2, :6], y[:1] + 1]),
                    lambda x, y: np.concatenate([x[:2, :6], y[:1] + 1])),
    "stack": (lambda x, y: pyet.stack([x[0], y[1], x[2] * y[3]]),
              lambda x, y: np.stack([x[0], y[1], x[2] * y[3]])),
    "pad of pad": (lambda x, y: pyet.pad(pyet.pad(x[:1, :2], 1, value=1), (0, 1), value=2),
                   lambda x, y: np.pad(np.pad(x[:1, :2], 1, constant_values=1), ((0, 0), (1, 1)),
                                       constant_values=2)),
    "stack of special nodes": (
        lambda x, y: pyet.stack([pyet.concatenate([x[0, :3], y[0, :3]]),
                                 pyet.reshape(pyet.pad(x[:1, :2], ((0, 0), (2, 2))), -1), x[3]]),
        lambda x, y: np.stack([np.concatenate([x[0, :3], y[0, :3]]),
                               np.reshape(np.pad(x[:1, :2], ((0, 0), (2, 2))), -1), x[3]])),
    "crop of pad": (lambda x, y: pyet.crop(pyet.pad(x, 1), (3, 6), (0, 2)),
                    lambda x, y: np.pad(x, 1)[0:3, 2:8]),
}
# every source above has shape (3, 6)
DESTS = {
    "contiguous": lambda: (np.zeros((3, 6)), (Ellipsis,)),
    "strided rows dst[::2]": lambda: (np.zeros((5, 6)), (slice(None, None, 2),)),
    "negative strides": lambda: (np.zeros((3, 6)), (slice(None, None, -1), slice(None, None, -1))),
    "columns": lambda: (np.zeros((3, 12)), (slice(None), slice(1, None, 2))),
    "Fortran": lambda: (np.zeros((3, 6), order="F"), (Ellipsis,)),
    "bigger: broadcast": lambda: (np.zeros((2, 3, 6)), (Ellipsis,)),
    "float32": lambda: (np.zeros((3, 6), np.float32), (Ellipsis,)),
}


@pytest.mark.parametrize("dest", DESTS)
@pytest.mark.parametrize("name", SOURCES)
def test_as_assignment_source(name, dest):
    f, fnp = SOURCES[name]
    x, y = rand((4, 6)), rand((4, 6), seed=1)
    d, key = DESTS[dest]()
    want = d.copy()
    want[key] = fnp(x, y)
    pyet.asarray(d)[key] = f(pyet.asarray(x), pyet.asarray(y))
    close(d, want)
    exact(x, rand((4, 6)))  # operands untouched


@pytest.mark.parametrize("name", SOURCES)
def test_in_place_add_and_evaluate_out(name):
    f, fnp = SOURCES[name]
    x, y = rand((4, 6)), rand((4, 6), seed=1)
    X, Y = pyet.asarray(x), pyet.asarray(y)
    d = rand((3, 6), seed=5)
    want = d + fnp(x, y)
    D = pyet.asarray(d)
    D += f(X, Y)
    close(d, want)
    out = np.full((5, 6), 9.0)
    rows = out[::2]
    assert pyet.evaluate(f(X, Y), out=rows) is rows
    close(rows, fnp(x, y))
    close(out[1::2], np.full((2, 6), 9.0))
    got = pyet.evaluate(f(X, Y))
    assert isinstance(got, pyet.Tensor)
    close(got, fnp(x, y))


def test_int_source_into_float_destination_and_same_kind_error():
    x = rand((2, 3), np.int32)
    d = np.zeros((4, 5))
    pyet.asarray(d)[...] = pyet.pad(x, 1, value=2)
    exact(d, np.pad(x, 1, constant_values=2).astype(np.float64))
    di = np.zeros((4, 5), np.int32)
    with pytest.raises(TypeError, match="cannot cast the expression's float64 result"):
        pyet.asarray(di)[...] = pyet.pad(rand((2, 3)), 1)
    assert (di == 0).all()  # nothing written


# ------------------------------------------------------------------ aliasing
# the destination overlaps the operands: NumPy's result (computed from a copy) all the same

ALIASING = {
    "x[...] = flip(x, 0)": (lambda X: X.__setitem__(Ellipsis, pyet.flip(X, 0)),
                            lambda x: np.flip(x, 0)),
    "x[...] = flip(x) * 2 + x": (lambda X: X.__setitem__(Ellipsis, pyet.flip(X) * 2 + X),
                                 lambda x: np.flip(x) * 2 + x),
    "x += flip(x, 1)": (lambda X: X.__iadd__(pyet.flip(X, 1)), lambda x: x + np.flip(x, 1)),
    "x[1:] = flip(x[:-1], 1) * 2": (
        lambda X: X.__setitem__(slice(1, None), pyet.flip(X[:-1], 1) * 2),
        lambda x: np.concatenate([x[:1], np.flip(x[:-1], 1) * 2])),
    "x[...] = concatenate([x[2:], x[:2]])": (
        lambda X: X.__setitem__(Ellipsis, pyet.concatenate([X[2:], X[:2]])),
        lambda x: np.concatenate([x[2:], x[:2]])),
    "x[...] = concatenate(axis 1)": (
        lambda X: X.__setitem__(Ellipsis, pyet.concatenate([X[:, 3:], X[:, :3] + 1], 1)),
        lambda x: np.concatenate([x[:, 3:], x[:, :3] + 1], 1)),
    "x += concatenate": (lambda X: X.__iadd__(pyet.concatenate([X[2:], X[:2]])),
                         lambda x: x + np.concatenate([x[2:], x[:2]])),
    "x[1:] = pad(x[:-1, 1:-1], (0, 1))": (
        lambda X: X.__setitem__(slice(1, None), pyet.pad(X[:-1, 1:-1], (0, 1), value=-1)),
        lambda x: np.concatenate([x[:1], np.pad(x[:-1, 1:-1], ((0, 0), (1, 1)),
                                                constant_values=-1)])),
    "x[...] = pad(x[1:3, 1:5], 1)": (
        lambda X: X.__setitem__(Ellipsis, pyet.pad(X[1:3, 1:5], 1)),
        lambda x: np.pad(x[1:3, 1:5], 1)),
    "x[...] = reshape(x.T, x.shape)": (
        lambda X: X.__setitem__(Ellipsis, pyet.reshape(X.T, (4, 6))),
        lambda x: np.reshape(x.T, (4, 6))),
    "x[...] = reshape(x, (6, 4)).T": (
        lambda X: X.__setitem__(Ellipsis, pyet.reshape(X, (6, 4)).T),
        lambda x: np.reshape(x, (6, 4)).T),
    "x[...] = reshape(x.T + 1, x.shape)": (
        lambda X: X.__setitem__(Ellipsis, pyet.reshape(X.T + 1, (4, 6))),
        lambda x: np.reshape(x.T + 1, (4, 6))),
    "x[...] = broadcast_to(x[:1]) + x": (
        lambda X: X.__setitem__(Ellipsis, pyet.broadcast_to(X[:1], (4, 6)) + X),
        lambda x: x[:1] + x),
    "x[::2] = stack([x[1], x[3]]) * 2": (
        lambda X: X.__setitem__(slice(None, None, 2), pyet.stack([X[1], X[3]]) * 2),
        lambda x: np.stack([x[1] * 2, x[1], x[3] * 2, x[3]])),
    "x[...] = repmat(x[2], 4)": (lambda X: X.__setitem__(Ellipsis, pyet.repmat(X[2], 4)),
                                 lambda x: np.tile(x[2], (4, 1))),
    "x[...] = crop(pad(x, 1), (4, 6), (0, 0))": (
        lambda X: X.__setitem__(Ellipsis, pyet.crop(pyet.pad(X, 1), (4, 6), (0, 0))),
        lambda x: np.pad(x, 1)[:4, :6]),
    "x[0] = flip(sum(x, 0))": (lambda X: X.__setitem__(0, pyet.flip(pyet.sum(X, 0), 0)),
                               lambda x: np.concatenate([np.flip(x.sum(0))[None], x[1:]])),
    "x[...] = broadcast_to(sum(x, 0))": (
        lambda X: X.__setitem__(Ellipsis, pyet.broadcast_to(pyet.sum(X, 0), (4, 6))),
        lambda x: np.broadcast_to(x.sum(0), (4, 6))),
    "x[...] = flip(dot(x[:, :4], x[:4]), 0)": (
        lambda X: X.__setitem__(Ellipsis, pyet.flip(pyet.dot(X[:, :4], X[:4]), 0)),
        lambda x: np.flip(x[:, :4] @ x[:4], 0)),
}


@pytest.mark.parametrize("name", ALIASING)
def test_destination_overlapping_operands(name):
    run, fnp = ALIASING[name]
    x = rand((4, 6))
    want = fnp(x.copy())
    run(pyet.asarray(x))
    close(x, want)


# ------------------------------------------------ no copy, no scratch at the root

def _peak(fn):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_pad_and_concatenate_at_the_root_write_straight_into_the_destination():
    x = rand((300, 300))
    X = pyet.asarray(x)
    d = np.empty((302, 302))
    D = pyet.asarray(d)
    D[...] = pyet.pad(X * 2, 1, value=5)  # warm the program caches
    peak = _peak(lambda: D.__setitem__(Ellipsis, pyet.pad(X * 2, 1, value=5)))
    assert peak < x.nbytes // 10  # no scratch of the result's size
    exact(d, np.pad(x * 2, 1, constant_values=5))
    e = pyet.concatenate([X[:150] + 1, pyet.flip(X, 0), pyet.pad(X[:2, 1:], ((0, 0), (1, 0)))])
    d2 = np.empty((452, 300))
    D2 = pyet.asarray(d2)
    D2[...] = e
    peak = _peak(lambda: D2.__setitem__(Ellipsis, e))
    assert peak < x.nbytes // 10
    exact(d2, np.concatenate([x[:150] + 1, np.flip(x, 0), np.pad(x[:2, 1:], ((0, 0), (1, 0)))]))


def test_building_views_copies_nothing():
    x = rand((300, 300))
    X = pyet.asarray(x)
    for build in (lambda: pyet.reshape(X.T, -1), lambda: pyet.reshape(X.T * 2, (900, 100)),
                  lambda: pyet.flip(X * 2 + 1, 0), lambda: pyet.pad(X, 3),
                  lambda: pyet.concatenate([X, X.T]), lambda: pyet.stack([X, X.T]),
                  lambda: pyet.crop(pyet.pad(X, 2), (10, 10)),
                  lambda: pyet.broadcast_with_axis(X, 0, 50)):
        assert _peak(build) < x.nbytes // 10


# ------------------------------------------------------------------ laziness

LAZY = {
    "broadcast_to": (lambda X: pyet.broadcast_to(X[0], (3, 6)),
                     lambda x: np.broadcast_to(x[0], (3, 6))),
    "broadcast_with_axis": (lambda X: pyet.broadcast_with_axis(X, 0, 2),
                            lambda x: np.broadcast_to(x[:, None], (4, 2, 6))),
    "repmat": (lambda X: pyet.repmat(X[1], 2), lambda x: np.tile(x[1], (2, 1))),
    "reshape": (lambda X: pyet.reshape(X, (3, 8)), lambda x: np.reshape(x, (3, 8))),
    "reshape of a transpose": (lambda X: pyet.reshape(X.T, -1), lambda x: np.reshape(x.T, -1)),
    "reshape of a tree (fallback)": (lambda X: pyet.reshape(X.T + 1, (3, 8)),
                                     lambda x: np.reshape(x.T + 1, (3, 8))),
    "flip": (lambda X: pyet.flip(X * 2, 1), lambda x: np.flip(x * 2, 1)),
    "crop": (lambda X: pyet.crop(X, (2, 3)), lambda x: x[1:3, 1:4]),
    "pad": (lambda X: pyet.pad(X, 1), lambda x: np.pad(x, 1)),
    "concatenate": (lambda X: pyet.concatenate([X, X[:1]]), lambda x: np.concatenate([x, x[:1]])),
    "stack": (lambda X: pyet.stack([X, X + 1], 1), lambda x: np.stack([x, x + 1], 1)),
    "flip of a dot": (lambda X: pyet.flip(pyet.dot(X, X.T), 0), lambda x: np.flip(x @ x.T, 0)),
    "broadcast_to of a sum": (lambda X: pyet.broadcast_to(pyet.sum(X, 0), (2, 6)),
                              lambda x: np.broadcast_to(x.sum(0), (2, 6))),
    "crop of a pad": (lambda X: pyet.crop(pyet.pad(X, 2), (4, 6), (1, 1)),
                      lambda x: np.pad(x, 2)[1:5, 1:7]),
}


@pytest.mark.parametrize("name", LAZY)
def test_building_computes_nothing(name):
    f, fnp = LAZY[name]
    x = rand((4, 6))
    e = f(pyet.asarray(x))
    x[...] = rand((4, 6), seed=9)  # written after the expression is built
    close(ev(e), fnp(x))
    x *= -1  # and evaluating again sees the newest values
    close(ev(e), fnp(x))


def test_shape_and_dtype_known_when_built_and_repr_shows_the_node():
    x, i = pyet.asarray(rand((3, 4))), pyet.asarray(rand((3, 4), np.int32))
    p = pyet.pad(i * 2, ((1, 0), (2, 3)), value=7)
    assert (p.shape, p.dtype) == ((4, 9), np.int32)
    assert repr(p).startswith("pad(multiply(Tensor(shape=(3,4), dtype=int32), 2), "
                              "pad_width=((1, 0), (2, 3)), value=")
    c = pyet.concatenate([x, i], 1)
    assert (c.shape, c.dtype) == ((3, 8), np.float64)
    assert repr(c) == ("concatenate(Tensor(shape=(3,4), dtype=float64), "
                       "Tensor(shape=(3,4), dtype=int32), axis=1)")
    f = pyet.flip(pyet.dot(x, x.T), 1)
    assert (f.shape, f.dtype) == ((3, 3), np.float64)
    assert repr(f).startswith("flip(dot(")
    r = pyet.reshape(x.T + 1, -1)
    assert r.shape == (12,)
    assert repr(r) == "reshape(add(Tensor(shape=(4,3), dtype=float64), 1), (12,))"
    s = pyet.stack([i, i], -1)
    assert (s.shape, s.dtype) == ((3, 4, 2), np.int32)
    assert repr(s).startswith("concatenate(") and repr(s).endswith("axis=2)")
    # views of elementwise trees are pushed down to the leaves
    assert repr(pyet.flip(x * 2, 0)) == "multiply(Tensor(shape=(3,4), dtype=float64), 2)"
    b = pyet.broadcast_with_axis(pyet.sum(x, 0), 0, 5)
    assert b.shape == (4, 5) and repr(b).startswith("broadcast_to(expand(sum(")


def test_same_structure_different_parameters_give_different_values():
    x = rand((5, 7))
    X = pyet.asarray(x)
    exact(ev(pyet.crop(X, (2, 2), (0, 0))), x[:2, :2])
    exact(ev(pyet.crop(X, (2, 2), (3, 5))), x[3:, 5:])
    exact(ev(pyet.pad(X, 1, value=1) + 0), np.pad(x, 1, constant_values=1))
    exact(ev(pyet.pad(X, 1, value=2) + 0), np.pad(x, 1, constant_values=2))
    exact(ev(pyet.pad(X, (2, 0)) + 0), np.pad(x, ((2, 2), (0, 0))))


def test_threaded(threaded):
    x, y = rand((60, 50)), rand((60, 50), seed=1)
    X, Y = pyet.asarray(x), pyet.asarray(y)
    close(ev(pyet.flip(X[::-1, ::2] * Y[:, :25] + 1, (0, 1))),
          np.flip(x[::-1, ::2] * y[:, :25] + 1))
    close(ev(pyet.pad(X * Y, (3, 5), value=2)),
          np.pad(x * y, ((3, 3), (5, 5)), constant_values=2))
    close(ev(pyet.concatenate([X, pyet.flip(Y, 1)], 1) * 2),
          np.concatenate([x, np.flip(y, 1)], 1) * 2)
    close(ev(pyet.reshape(X.T * Y.T, (100, 30))), np.reshape(x.T * y.T, (100, 30)))
    close(ev(pyet.sum(pyet.pad(X, 1), 1)), np.pad(x, 1).sum(1))
    d = np.zeros((120, 50))
    pyet.asarray(d)[::2] = pyet.crop(pyet.pad(X, 2), (60, 50))
    exact(d[::2], x)
    exact(d[1::2], np.zeros((60, 50)))
    X[...] = pyet.flip(X, 0) + X  # aliasing
    close(x, np.flip(rand((60, 50)), 0) + rand((60, 50)))


# ------------------------------------------------------------------- errors

A = np.ones((4, 6))
V = np.ones(6)
ERRORS = [
    (lambda: pyet.broadcast_to(A, (4, 5)), ValueError,
     r"cannot broadcast an expression of shape \(4,6\) to shape \(4,5\)"),
    (lambda: pyet.broadcast_to(pyet.asarray(A) + 1, (6,)), ValueError,
     r"cannot broadcast an expression of shape \(4,6\) to shape \(6,\)"),
    (lambda: pyet.broadcast_to(A, (-1, 6)), ValueError, "shape must be non-negative"),
    (lambda: pyet.broadcast_with_axis(A, 2, 3), ValueError,
     "axis must be between -1 and 1 for an expression of 2 dimensions, got 2"),
    (lambda: pyet.broadcast_with_axis(A, -2, 3), ValueError, "between -1 and 1"),
    (lambda: pyet.broadcast_with_axis(A, 0, -1), ValueError, "length must be >= 0, got -1"),
    (lambda: pyet.repmat(V, -2), ValueError, "length must be >= 0, got -2"),
    (lambda: pyet.reshape(A, (-1, -1)), ValueError, r"can only specify one unknown dimension"),
    (lambda: pyet.reshape(A, (5, 5)), ValueError,
     r"cannot reshape an expression of size 24 into shape \(5,5\)"),
    (lambda: pyet.reshape(pyet.asarray(A) * 2, (5, -1)), ValueError,
     r"cannot reshape an expression of size 24 into shape \(5,-1\)"),
    (lambda: pyet.reshape(A[:0], (0, -1)), ValueError, "size 0 into shape"),
    (lambda: pyet.reshape(A, (-2, -12)), ValueError, "negative dimensions not allowed"),
    (lambda: pyet.flip(A, 2), np.exceptions.AxisError,
     "axis 2 is out of bounds for array of dimension 2"),
    (lambda: pyet.flip(A, -3), np.exceptions.AxisError,
     "axis -3 is out of bounds for array of dimension 2"),
    (lambda: pyet.flip(pyet.asarray(A) + 1, 2), np.exceptions.AxisError,
     "axis 2 is out of bounds for array of dimension 2"),
    (lambda: pyet.flip(pyet.softmax(pyet.asarray(A), 1), 2), np.exceptions.AxisError,
     "axis 2 is out of bounds for array of dimension 2"),
    (lambda: pyet.flip(3.0, 0), np.exceptions.AxisError,
     "axis 0 is out of bounds for array of dimension 0"),
    (lambda: pyet.flip(A, (0, -3)), np.exceptions.AxisError, "axis -3 is out of bounds"),
    (lambda: pyet.flip(A, (0, -2)), ValueError, "flip: repeated axis"),
    (lambda: pyet.pad(A, -1), ValueError, "pad_width must be non-negative, got -1"),
    (lambda: pyet.pad(A, ((1, -1), (0, 0))), ValueError, "pad_width must be non-negative"),
    (lambda: pyet.pad(A, (1, 2, 3)), ValueError, r"pad_width must be an int p, a pair \(py, px\)"),
    (lambda: pyet.pad(A, 1.5), ValueError, "pad_width must be an int p"),
    (lambda: pyet.pad(A, ((1, 2), 3)), ValueError, "pad_width must be an int p"),
    (lambda: pyet.pad(A, ((1, 2, 3), (1, 2, 3))), ValueError, "pad_width must be an int p"),
    (lambda: pyet.pad(A, "1"), ValueError, "pad_width must be an int p"),
    (lambda: pyet.pad(V, 1), ValueError,
     r"pad works on the last two axes; got an expression of shape \(6,\)"),
    (lambda: pyet.pad(3.0, 1), ValueError, r"pad works on the last two axes.*shape \(\)"),
    (lambda: pyet.pad(A, 1, value=[1, 2]), ValueError,
     r"value must be a scalar, got an array of shape \(2,\)"),
    (lambda: pyet.pad(A.astype(np.int32), 1, value=2 ** 40), OverflowError,
     "out of bounds for int32"),
    (lambda: pyet.pad(A.astype(np.int32), 1, value=np.nan), ValueError,
     "cannot convert float NaN to integer"),
    (lambda: pyet.pad(A, 1, value=1j), TypeError, "pad: pyet does not support complex values"),
    (lambda: pyet.crop(V, (1, 1)), ValueError, "crop works on the last two axes"),
    (lambda: pyet.crop(A, (5, 6)), ValueError,
     r"crop: a \(5, 6\) window at offset \(-1, 0\) does not fit in the last two axes of shape "
     r"\(4,6\)"),
    (lambda: pyet.crop(A, (2, 2), (3, 0)), ValueError,
     r"a \(2, 2\) window at offset \(3, 0\) does not fit"),
    (lambda: pyet.crop(A, (2, 2), (0, 5)), ValueError, r"offset \(0, 5\) does not fit"),
    (lambda: pyet.crop(A, (2, 2), (-1, 0)), ValueError, r"offset \(-1, 0\) does not fit"),
    (lambda: pyet.crop(A, (-1, 2)), ValueError, r"a \(-1, 2\) window"),
    (lambda: pyet.crop(A, 2), ValueError, "crop: shape must be a pair of ints"),
    (lambda: pyet.crop(A, (1, 2, 3)), ValueError, "crop: shape must be a pair of ints"),
    (lambda: pyet.crop(A, (1, 2), 0), ValueError, "crop: offset must be a pair of ints"),
    (lambda: pyet.concatenate([3.0, 4.0]), ValueError,
     "zero-dimensional arrays cannot be concatenated"),
    (lambda: pyet.concatenate([A, V]), ValueError,
     "all the input arrays must have same number of dimensions, but the array at index 0 has 2 "
     r"dimension\(s\) and the array at index 1 has 1 dimension\(s\)"),
    (lambda: pyet.concatenate([A, A, A[:, :3]]), ValueError,
     "except for the concatenation axis must match exactly, but along dimension 1, the array "
     "at index 0 has size 6 and the array at index 2 has size 3"),
    (lambda: pyet.concatenate([A, A], 2), np.exceptions.AxisError,
     "axis 2 is out of bounds for array of dimension 2"),
    (lambda: pyet.concatenate([]), ValueError, "need at least one array to concatenate"),
    (lambda: pyet.concatenate(3), TypeError,
     "concatenate takes a sequence of expressions or arrays, got int"),
    (lambda: pyet.stack([A, A[:3]]), ValueError,
     r"all input arrays must have the same shape: the array at index 0 has shape \(4,6\) and "
     r"the array at index 1 has shape \(3,6\)"),
    (lambda: pyet.stack([]), ValueError, "need at least one array to stack"),
    (lambda: pyet.stack([A, A], 3), np.exceptions.AxisError,
     "axis 3 is out of bounds for array of dimension 3"),
    (lambda: pyet.stack(None), TypeError, "stack takes a sequence"),
    (lambda: pyet.flip(np.ones((2, 2), complex)), TypeError,
     "pyet does not support dtype complex128"),
    (lambda: pyet.broadcast_to(1j, (2,)), TypeError, "pyet does not support dtype complex"),
    (lambda: pyet.pad(np.ones((2, 2), np.float16), 1), TypeError,
     "pyet does not support dtype float16"),
    (lambda: pyet.concatenate([V, V.astype(np.float16)]), TypeError,
     "pyet does not support dtype float16"),
    (lambda: pyet.stack([V.astype(np.int8)]), TypeError, "pyet does not support dtype int8"),
    (lambda: pyet.reshape(V.astype(np.uint32), -1), TypeError,
     "pyet does not support dtype uint32"),
    (lambda: pyet.crop(np.ones((3, 3), np.complex64), (1, 1)), TypeError,
     "pyet does not support dtype complex64"),
]


@pytest.mark.parametrize("f, exc, match", ERRORS,
                         ids=[f"{i}-{m[:40]}" for i, (_, _, m) in enumerate(ERRORS)])
def test_errors(f, exc, match):
    with pytest.raises(exc, match=match):
        f()


def test_errors_write_nothing():
    d = np.zeros((4, 6))
    D = pyet.asarray(d)
    with pytest.raises(ValueError, match=r"shape \(6,8\) into a destination of shape \(4,6\)"):
        D[...] = pyet.pad(D, 1)
    with pytest.raises(ValueError, match="destination of shape"):
        D[...] = pyet.concatenate([D, D])
    with pytest.raises(ValueError, match="destination of shape"):
        D[...] = pyet.flip(pyet.stack([D, D]), 0)
    assert (d == 0).all()


# ---------------------------------------------------------------- hypothesis

shapes = st.lists(st.integers(0, 4), min_size=2, max_size=4).map(tuple)
dtypes = st.sampled_from(DTYPES)


@settings(max_examples=40, deadline=None)
@given(shape=shapes, dtype=dtypes, data=st.data())
def test_hyp_flip_and_broadcast(shape, dtype, data):
    x = rand(shape, dtype, seed=len(shape))
    X = pyet.asarray(x)
    axes = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), unique_by=lambda a: a
                              % len(shape), max_size=len(shape)).map(tuple))
    exact(ev(pyet.flip(X, axes)), np.flip(x, axes))
    exact(ev(pyet.flip(X + X, axes)), np.flip(x + x, axes))
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2).map(tuple))
    exact(ev(pyet.broadcast_to(X[..., :1], lead + shape)),
          np.broadcast_to(x[..., :1], lead + shape))
    axis = data.draw(st.integers(-1, len(shape) - 1))
    n = data.draw(st.integers(0, 3))
    want = np.broadcast_to(np.expand_dims(x, axis + 1),
                           shape[:axis + 1] + (n,) + shape[axis + 1:])
    exact(ev(pyet.broadcast_with_axis(X, axis, n)), want)
    exact(ev(pyet.broadcast_with_axis(X + X, axis, n)),
          np.broadcast_to(np.expand_dims(x + x, axis + 1), want.shape))


@settings(max_examples=40, deadline=None)
@given(shape=shapes, dtype=dtypes, data=st.data())
def test_hyp_reshape(shape, dtype, data):
    x = rand(shape, dtype, seed=1)
    size = x.size
    divisors = [d for d in range(1, max(size, 1) + 1) if size % d == 0] if size else [0, 1, 3]
    first = data.draw(st.sampled_from(divisors))
    new = (first, -1) if size else (first, 0, 2)
    layout = data.draw(st.sampled_from(["C", "neg", "T"]))
    src = {"C": x, "neg": x[::-1], "T": x.T}[layout]
    exact(ev(pyet.reshape(pyet.asarray(src), new)), np.reshape(src, new))
    exact(ev(pyet.reshape(pyet.asarray(src) + src, new)), np.reshape(src + src, new))


@settings(max_examples=40, deadline=None)
@given(shape=shapes, dtype=dtypes, data=st.data())
def test_hyp_pad_and_crop(shape, dtype, data):
    x = rand(shape, dtype, seed=2)
    X = pyet.asarray(x)
    widths = data.draw(st.tuples(st.tuples(st.integers(0, 3), st.integers(0, 3)),
                                 st.tuples(st.integers(0, 3), st.integers(0, 3))))
    value = data.draw(st.integers(-5, 5))
    lead = ((0, 0),) * (len(shape) - 2)
    want = np.pad(x, lead + widths, constant_values=value)
    exact(ev(pyet.pad(X, widths, value)), want)
    H, W = shape[-2:]
    h, w = data.draw(st.integers(0, H)), data.draw(st.integers(0, W))
    y0, x0 = data.draw(st.integers(0, H - h)), data.draw(st.integers(0, W - w))
    exact(ev(pyet.crop(X, (h, w), (y0, x0))), x[..., y0:y0 + h, x0:x0 + w])
    cy, cx = (H - h) // 2, (W - w) // 2
    exact(ev(pyet.crop(X + X, (h, w))), (x + x)[..., cy:cy + h, cx:cx + w])
    # pad, then crop back the original
    exact(ev(pyet.crop(pyet.pad(X, widths, value), (H, W), (widths[0][0], widths[1][0]))), x)


@settings(max_examples=40, deadline=None)
@given(shape=shapes, data=st.data())
def test_hyp_concatenate_and_stack(shape, data):
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    k = data.draw(st.integers(1, 4))
    pieces = []
    for i in range(k):
        s = list(shape)
        s[axis] = data.draw(st.integers(0, 3))
        pieces.append(rand(tuple(s), data.draw(dtypes), seed=i))
    P = [pyet.asarray(p) for p in pieces]
    want = np.concatenate(pieces, axis)
    exact(ev(pyet.concatenate(P, axis)), want)
    d = np.zeros((2,) + want.shape, want.dtype)  # through a scratch, broadcast into d
    pyet.asarray(d)[...] = pyet.concatenate(P, axis)
    exact(d, np.broadcast_to(want, d.shape))
    same = [rand(shape, pieces[i].dtype, seed=i) for i in range(k)]
    saxis = data.draw(st.integers(-nd - 1, nd))
    exact(ev(pyet.stack([pyet.asarray(s) for s in same], saxis)), np.stack(same, saxis))


def test_reshape_argument_forms_and_errors():
    # every shape form NumPy takes (the fast ones for ints and tuples of ints
    # and the general one), and its errors
    a = np.arange(24.0).reshape(4, 6)
    t = pyet.asarray(a)
    for args in [(24,), ((24,),), ((2, 12),), ([2, 12],), (2, 12), (2, -1), ((-1, 3),),
                 ((np.int64(3), 8),), (np.array([3, 8]),), (np.int32(24),)]:
        np.testing.assert_array_equal(np.asarray(t.reshape(*args)), a.reshape(*args))
        np.testing.assert_array_equal(np.asarray((t * 1).reshape(*args)), a.reshape(*args))
    np.testing.assert_array_equal(np.asarray(pyet.reshape(t, (3, 8))), a.reshape(3, 8))
    np.testing.assert_array_equal(np.asarray(pyet.reshape(t.T, -1)), a.T.reshape(-1))
    for bad, err, msg in [((-1, -1), ValueError, "one unknown"),
                          ((-2, -12), ValueError, "negative dimensions"),
                          ((5, 5), ValueError, "cannot reshape"),
                          ((0, -1), ValueError, "cannot reshape"),
                          ((2.0, 12), TypeError, "float"), (((2, 12),), TypeError, "tuple")]:
        with pytest.raises(err, match=msg):
            t.reshape(bad)
        with pytest.raises(err, match=msg):
            pyet.reshape(t * 1, bad)


def test_reshape_of_a_huge_shape_is_refused_when_built():
    # the size in Python ints: int64's product wrapped to 0, so an empty
    # operand took (2**32, 2**32) and was left a lazy view no one could evaluate
    e = pyet.asarray(np.zeros(0))
    with pytest.raises(ValueError, match="cannot reshape"):
        pyet.reshape(e, (2**32, 2**32))
    with pytest.raises(ValueError, match="cannot reshape"):
        e.reshape(2**32, 2**32, 0, -1)


def test_broadcast_view_is_numpys_broadcast_to():
    # the C-made view: NumPy's shape, strides (0 along axes of length 1 too),
    # flags (read-only) and values, for every layout and a size 0; NumPy's errors
    from pyet._core import core
    rng = np.random.default_rng(0)
    checked = 0
    for lshape in [(), (1,), (3,), (0,), (1, 1), (3, 1), (1, 3), (0, 1), (2, 3), (0, 3)]:
        a = rng.random(lshape) if lshape else np.array(2.0)
        for base in ([a, a[..., ::-1], a.astype(">f8")] if a.ndim else [a]):
            for extra in [(), (1,), (2,), (0,), (2, 1)]:
                for tail in itertools.product(*[(1, 2, 0) if d == 1 else (d,) for d in lshape]):
                    shape = extra + tail
                    want = np.broadcast_to(base, shape)
                    got = core.broadcast_view(base, shape)
                    assert (got.shape, got.strides, got.dtype) == \
                        (want.shape, want.strides, want.dtype)
                    for flag in ("WRITEABLE", "C_CONTIGUOUS", "F_CONTIGUOUS", "ALIGNED"):
                        assert got.flags[flag] == want.flags[flag], (shape, flag)
                    np.testing.assert_array_equal(got, want)
                    checked += 1
    assert checked > 300
    for arr, shape in [(np.ones(5), (3, 4)), (np.ones((2, 3)), (3,)), (np.ones(3), (-1, 3)),
                       (np.ones(3), (np.int64(2), 3))]:
        try:
            want = np.broadcast_to(arr, shape)
        except ValueError as exc:
            with pytest.raises(ValueError, match=str(exc)[:20]):
                core.broadcast_view(arr, shape)
        else:
            np.testing.assert_array_equal(core.broadcast_view(arr, shape), want)
    row = pyet.broadcast_to(pyet.asarray(np.arange(3.0)), (2, 3))
    np.testing.assert_array_equal(np.asarray(row), [[0, 1, 2], [0, 1, 2]])
    with pytest.raises(ValueError, match="read-only"):
        row[...] = 1.0


@pytest.mark.parametrize("depth", [3, 64, 65, 200])
def test_views_of_elementwise_trees_in_c_and_in_python(depth):
    # core.push_view pushes views down trees up to 64 deep (deeper ones take
    # views.py's path): the same values, a broadcast operand aligned first,
    # scalars kept, and the view reaches the leaves (no View node above the tree)
    rng = np.random.default_rng(depth)
    a, b = rng.standard_normal((4, 6)), rng.standard_normal(6)
    ta, tb = pyet.asarray(a), pyet.asarray(b)
    e, want = ta, a
    for i in range(depth):
        e, want = (e + tb, want + b) if i % 2 else (e * 0.5, want * 0.5)
    assert e._depth == depth
    cases = [(pyet.flip(e, 1), np.flip(want, 1)), (pyet.flip(e), np.flip(want)),
             (pyet.crop(e, (2, 3), (1, 2)), want[1:3, 2:5]),
             (pyet.broadcast_to(e, (2, 4, 6)), np.broadcast_to(want, (2, 4, 6))),
             (e[::-2, 1:], want[::-2, 1:])]
    for got, expected in cases:
        assert not got._flags & 1, "a View node where the view reaches the leaves"
        np.testing.assert_allclose(pyet.evaluate(got).numpy(), expected, rtol=1e-12)


def test_flip_of_one_int_axis_in_c_equals_the_general_path():
    # flip(e, axis) of one int axis is pushed down in C (core.flip_axis); the
    # general path (a tuple of axes) and NumPy give the same values and the
    # same leaves' views; trees it cannot push (a special node below, a
    # scalar) fall back to views.flip's
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 4, 5))
    row = rng.standard_normal(5)
    A, B, R = pyet.asarray(a), pyet.asarray(b), pyet.asarray(row)
    cases = [
        (lambda: A, a),
        (lambda: A + B, a + b),
        (lambda: A * 2 + B[:, ::-1], a * 2 + b[:, ::-1]),
        (lambda: A - R, a - row),  # (the row is broadcast to the node first)
        (lambda: pyet.softmax(A, 2) + 1, np.exp(a) / np.exp(a).sum(2, keepdims=True) + 1),
        (lambda: a, a),  # an ndarray operand
        (lambda: pyet.asarray(a.astype(np.float32)) > 0, a.astype(np.float32) > 0),
    ]
    for build, value in cases:
        for axis in range(-3, 3):
            fast, general = pyet.flip(build(), axis), pyet.flip(build(), (axis,))
            assert fast.shape == general.shape == value.shape
            np.testing.assert_allclose(pyet.evaluate(fast).numpy(), np.flip(value, axis),
                                       rtol=1e-14)
            np.testing.assert_array_equal(pyet.evaluate(fast).numpy(),
                                          pyet.evaluate(general).numpy())
    assert pyet.flip(pyet.asarray(np.float64(2.5)), None).shape == ()
    # a leaf's flip is NumPy's view of the same memory, its strides negated
    flipped = pyet.flip(A, 1)
    view = flipped.numpy()
    assert np.shares_memory(view, a) and view.strides == a[:, ::-1].strides
