"""pyet.Fill, pyet.Zero and pyet.OneHot (MetaNN's TrivialTensor, ZeroTensor
and one-hot vectors): leaves with no memory of their shape, usable anywhere,
folded only where every result is unchanged."""

import operator
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet

EDGES = np.array([1.5, -0.0, 0.0, np.nan, np.inf, -np.inf, -2.25])


def test_fill_is_a_read_only_leaf_of_one_element():
    f = pyet.Fill(2.5, (1000, 1000))
    a = f.numpy()
    assert a.shape == (1000, 1000) and a.strides == (0, 0) and not a.flags.writeable
    assert f.dtype == np.float64
    assert pyet.Fill(3, 4).dtype == np.int64 and pyet.Fill(True, 2).dtype == np.bool_
    assert pyet.Zero((2, 3), np.float32).dtype == np.float32
    np.testing.assert_array_equal(pyet.evaluate(pyet.Zero((2, 3))), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="shape must be non-negative ints"):
        pyet.Fill(1.0, (2, -1))
    with pytest.raises(ValueError, match="shape must be non-negative ints"):
        pyet.Fill(1.0, (2.0,))


def test_folds_keep_every_value():
    x = pyet.asarray(EDGES)
    assert x * pyet.Fill(1.0, EDGES.shape) is x
    assert pyet.Fill(1.0, EDGES.shape) * x is x
    assert x / pyet.Fill(1.0, EDGES.shape) is x
    assert x - pyet.Zero(EDGES.shape) is x
    # not folded: x + 0 turns -0.0 into 0.0; a broadcast changes the shape; an
    # int64 fill against float32 changes the dtype
    for e in (x + pyet.Zero(EDGES.shape), x * pyet.Fill(1.0, (2, 7)),
              pyet.asarray(EDGES.astype(np.float32)) * pyet.Fill(1, 7)):
        assert isinstance(e, pyet.Expr) and not isinstance(e, pyet.Tensor)
    np.testing.assert_array_equal(pyet.evaluate(x + pyet.Zero(7)), EDGES + np.zeros(7))
    np.testing.assert_array_equal(pyet.evaluate(x * pyet.Fill(1.0, (2, 7))),
                                  EDGES * np.ones((2, 7)))


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum", "power",
                                "arctan2", "floor_divide"])
def test_constants_alone_are_computed_when_built_as_numpy_does(op):
    for a in EDGES:
        for b in (2, 0.5, -0.0, np.nan):
            e = getattr(pyet, op)(pyet.Fill(a, (3, 2)), pyet.Fill(b, (2,)))
            try:
                with np.errstate(all="raise"):
                    getattr(np, op)(np.full((3, 2), a), np.full(2, b))
                quiet = True
            except FloatingPointError:
                quiet = False
            # (power is left to the kernels: their scalar fast paths decide it;
            # a value that raises a floating-point error is the evaluation's,
            # reported there by np.errstate's rules)
            assert isinstance(e, pyet.Tensor) == (op != "power" and quiet)
            with np.errstate(all="ignore"):
                want = getattr(np, op)(np.full((3, 2), a), np.full(2, b))
                np.testing.assert_array_equal(pyet.evaluate(e), want)
            if not quiet:
                with np.errstate(all="raise"), pytest.raises(FloatingPointError):
                    pyet.evaluate(e)
            assert e.dtype == want.dtype
    z = pyet.Zero((4,)) + pyet.Zero((4,))
    assert isinstance(z, pyet.Tensor) and z.numpy().strides == (0,)
    assert (pyet.Fill(2, 3, np.int32) + 1).dtype == np.int32  # NEP 50, as NumPy
    with pytest.raises(OverflowError):
        pyet.Fill(2, 3, np.int32) + 2 ** 40


def test_constant_leaves_are_read_as_scalars():
    x = pyet.asarray(np.arange(6.0).reshape(2, 3))
    text = pyet.explain(x * pyet.Fill(3.0, (2, 3)) + pyet.Fill(0.5, (3,)))
    assert "leaf1" not in text and "s0" in text
    np.testing.assert_array_equal(pyet.evaluate(x * pyet.Fill(3.0, (2, 3)) + pyet.Fill(0.5, 3)),
                                  np.arange(6.0).reshape(2, 3) * 3 + 0.5)
    # a constant in where's condition is read as an array (the kernel needs one)
    c = pyet.Fill(True, (2, 3))
    np.testing.assert_array_equal(pyet.evaluate(pyet.where(c, x, -x)), x.numpy())
    # np.broadcast_to of one element is a constant too
    b = pyet.asarray(np.broadcast_to(np.float32(2), (2, 3)))
    np.testing.assert_array_equal(pyet.evaluate(x * b), x.numpy() * np.float32(2))


@settings(max_examples=40, deadline=None)
@given(value=st.sampled_from(list(EDGES)), op=st.sampled_from(["+", "-", "*", "/", "**"]),
       left=st.booleans(), shape=st.sampled_from([(), (1,), (5,), (2, 5)]))
def test_trees_with_constants_equal_numpy(value, op, left, shape):
    x = np.linspace(-2, 2, 10).reshape(2, 5)
    f, fa = pyet.Fill(value, shape), np.full(shape, value)
    X = pyet.asarray(x)
    fn = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "**": operator.pow}[op]
    ours = fn(f, X) if left else fn(X, f)
    with np.errstate(all="ignore"):
        want = fn(fa, x) if left else fn(x, fa)
        np.testing.assert_array_equal(pyet.evaluate(ours), want)


def test_one_hot():
    idx = np.array([[0, 2], [1, 0]])
    e = pyet.OneHot(idx, 3, value=2.0, dtype=np.float32)
    assert e.shape == (2, 2, 3) and e.dtype == np.float32
    np.testing.assert_array_equal(pyet.evaluate(e), 2.0 * np.eye(3, dtype=np.float32)[idx])
    np.testing.assert_array_equal(pyet.evaluate(pyet.OneHot(pyet.asarray(idx[0]), 3)),
                                  np.eye(3)[idx[0]])
    logits = pyet.asarray(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(pyet.evaluate(pyet.sum(logits * pyet.OneHot([2, 0], 3),
                                                         axis=1)), [2.0, 3.0])
    with pytest.raises(ValueError, match=r"index values must be in \[0, 3\), got -1..2"):
        pyet.OneHot([2, -1], 3)
    with pytest.raises(ValueError, match="depth must be a positive int"):
        pyet.OneHot([0], 0)
    with pytest.raises(TypeError, match="index must hold integers"):
        pyet.OneHot([0.5], 2)


def test_constants_pickle_and_join_plans():
    e = pyet.asarray(np.arange(3.0)) + pyet.Fill(1.0, 3)
    np.testing.assert_array_equal(pyet.evaluate(pickle.loads(pickle.dumps(e))), [1, 2, 3])
    out = np.zeros(3)
    w = np.arange(3.0)
    plan = pyet.EvalPlan()
    plan.assign(out, pyet.asarray(w) * pyet.Fill(2.0, 3))
    plan.assign(w, pyet.asarray(out) + pyet.Zero(3))
    plan.run()
    np.testing.assert_array_equal(w, [0, 2, 4])
