"""A tree that reads one costly subtree more than once over the same arrays
(``1 - t*t`` of ``t = tanh(x)``, ``s * (1 - s)`` of a sigmoid, as gradients
build them) computes it once a block (engine.pxi shared_pass: a one-statement
group, lower_group's shared registers) from SHARED_MIN (128) elements.  Bit
for bit against the same trees over a copy of the array (computed at each
occurrence), against NumPy, with sentinels; explain() tells the path."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet
from pyet._core import core

FLOATS = [np.float32, np.float64]


def _trees():
    # (name, tree over X (read twice through the same subtree) and Y, NumPy's)
    def sig(a):
        return 1 / (1 + np.exp(-a))

    return [
        ("1-t*t", lambda X, X2, Y: 1 - pyet.tanh(X) * pyet.tanh(X2),
         lambda x, y: 1 - np.tanh(x) * np.tanh(x)),
        ("s*(1-s)", lambda X, X2, Y: pyet.sigmoid(X) * (1 - pyet.sigmoid(X2)),
         lambda x, y: sig(x) * (1 - sig(x))),
        ("x*exp(x)+exp(x)", lambda X, X2, Y: X * pyet.exp(X) + pyet.exp(X2),
         lambda x, y: x * np.exp(x) + np.exp(x)),
        ("tanh(x)*y+tanh(x)", lambda X, X2, Y: pyet.tanh(X) * Y + pyet.tanh(X2),
         lambda x, y: np.tanh(x) * y + np.tanh(x)),
        ("where(x>0,exp(x),exp(x)*y)",
         lambda X, X2, Y: pyet.where(X > 0, pyet.exp(X), pyet.exp(X2) * Y),
         lambda x, y: np.where(x > 0, np.exp(x), np.exp(x) * y)),
        ("sin(x+y)*cos(x)+sin(x+y)",
         lambda X, X2, Y: pyet.sin(X + Y) * pyet.cos(X) + pyet.sin(X2 + Y),
         lambda x, y: np.sin(x + y) * np.cos(x) + np.sin(x + y)),
    ]


def _operands(rng, shape, dtype, layout):
    x = rng.uniform(-3, 3, shape).astype(dtype)
    y = rng.uniform(-3, 3, shape).astype(dtype)
    if layout == "F":
        x, y = np.asfortranarray(x), np.asfortranarray(y)
    elif layout == "::2":
        x = np.repeat(x, 2, axis=-1)[..., ::2]
    return x, y


def _run(build, x, y, dtype, shared):
    # build's tree over X and, as its second reader, X (the same array: one
    # value) or a copy of it (another array: each occurrence computed),
    # evaluated into dst inside sentinels
    X, Y = pyet.asarray(x), pyet.asarray(y)
    X2 = X if shared else pyet.asarray(x.copy())
    buf = np.full(x.size + 32, 77, dtype)
    out = buf[16:-16].reshape(x.shape)
    count = core.shared_count()
    pyet.asarray(out)[...] = build(X, X2, Y)
    assert core.shared_count() - count == shared
    assert (buf[:16] == 77).all() and (buf[-16:] == 77).all()
    return out


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(128,), (1000,), (65536,), (300, 257), (7, 9, 11)])
@pytest.mark.parametrize("layout", ["C", "F", "::2"])
@pytest.mark.parametrize("tree", range(6))
def test_shared_subtree_equals_each_occurrence_computed(dtype, shape, layout, tree):
    rng = np.random.default_rng(tree)
    x, y = _operands(rng, shape, dtype, layout)
    name, build, ref = _trees()[tree]
    got = _run(build, x, y, dtype, True)
    each = _run(build, x, y, dtype, False)
    np.testing.assert_array_equal(got.view(np.uint8), each.view(np.uint8), err_msg=name)
    tol = 3e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, ref(x, y), rtol=tol, atol=tol, err_msg=name)


@pytest.mark.parametrize("tree,op", enumerate(["tanh", "sigmoid", "exp", "tanh", "exp",
                                               "sin"]))
def test_explain_shows_the_subtree_computed_once(tree, op):
    x = np.linspace(-1, 1, 4096)
    name, build, _ = _trees()[tree]
    X, Y = pyet.asarray(x), pyet.asarray(x[::-1].copy())
    text = pyet.explain(build(X, X, Y), out=np.empty(4096))
    assert "computed once a block" in text, name
    assert text.count(f"= {op}[") == 1, text
    text = pyet.explain(build(X, pyet.asarray(x.copy()), Y), out=np.empty(4096))
    assert "computed once a block" not in text
    assert text.count(f"= {op}[") == 2, text


def test_small_trees_keep_their_direct_pass():
    # below SHARED_MIN the group's way costs more than the second tanh
    x = np.linspace(-1, 1, 64)
    X = pyet.asarray(x)
    t = pyet.tanh(X)
    text = pyet.explain(1 - t * t, out=np.empty(64))
    assert "computed once a block" not in text and text.count("= tanh[") == 2
    out = np.empty(64)
    pyet.asarray(out)[...] = 1 - t * t
    np.testing.assert_allclose(out, 1 - np.tanh(x) ** 2, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("dtype", FLOATS)
def test_in_place_over_the_shared_array(dtype):
    x = np.linspace(-2, 2, 5000).astype(dtype)
    want = 1 - np.tanh(x) * np.tanh(x)
    X = pyet.asarray(x)
    t = pyet.tanh(X)
    X[...] = 1 - t * t
    np.testing.assert_allclose(x, want, rtol=2e-6, atol=2e-7)
    # and through a reversed view of itself: copied first, then shared
    x = np.linspace(-2, 2, 5000).astype(dtype)
    want = np.tanh(x[::-1]) * x + np.tanh(x[::-1])
    X = pyet.asarray(x)
    t = pyet.tanh(X[::-1])
    X[...] = t * X + t
    np.testing.assert_allclose(x, want, rtol=2e-6, atol=2e-7)


def test_floating_point_errors_are_raised_once():
    x = np.full(1000, 800.0)
    X = pyet.asarray(x)
    e = pyet.exp(X)
    out = np.empty(1000)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        pyet.asarray(out)[...] = e * 0.5 + e
    with pytest.warns(RuntimeWarning, match="overflow") as record, np.errstate(over="warn"):
        pyet.asarray(out)[...] = e * 0.5 + e
    assert len(record) == 1
    assert np.isinf(out).all()


def test_two_threads_equal_one():
    rng = np.random.default_rng(9)
    x = rng.uniform(-3, 3, (1000, 600))
    X = pyet.asarray(x)
    s = pyet.sigmoid(X)
    outs = []
    before = pyet.get_num_threads()
    try:
        for threads in (1, 2):
            pyet.set_num_threads(threads)
            out = np.empty_like(x)
            pyet.asarray(out)[...] = s * (1 - s)
            outs.append(out)
    finally:
        pyet.set_num_threads(before)
    np.testing.assert_array_equal(outs[0], outs[1])
    sx = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(outs[0], sx * (1 - sx), rtol=1e-13, atol=1e-16)


def test_the_same_structure_over_other_arrays_is_not_shared():
    # one program per leaf map: the tree over two arrays after the one over one
    x = np.linspace(-1, 1, 1000)
    z = np.linspace(1, 2, 1000)
    X, Z = pyet.asarray(x), pyet.asarray(z)
    out = np.empty(1000)
    for a, b in ((X, X), (X, Z), (Z, Z), (Z, X)):
        pyet.asarray(out)[...] = 1 - pyet.tanh(a) * pyet.tanh(b)
        np.testing.assert_allclose(out, 1 - np.tanh(a.numpy()) * np.tanh(b.numpy()),
                                   rtol=1e-15, atol=1e-15)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(100, 3000), dtype=st.sampled_from(FLOATS), data=st.data())
def test_random_trees_reading_a_subtree_twice(n, dtype, data):
    # a random costly subtree u of x, read twice in a random tree with y
    rng = np.random.default_rng(n)
    x = rng.uniform(-2, 2, n).astype(dtype)
    y = rng.uniform(-2, 2, n).astype(dtype)
    unary = [(pyet.tanh, np.tanh), (pyet.exp, np.exp), (pyet.sin, np.sin),
             (pyet.sigmoid, lambda a: 1 / (1 + np.exp(-a))), (pyet.sqrt, np.sqrt)]
    binary = [(lambda a, b: a * b, np.multiply), (lambda a, b: a + b, np.add),
              (lambda a, b: a - b, np.subtract), (pyet.maximum, np.maximum)]
    pu, nu = unary[data.draw(st.integers(0, len(unary) - 1))]
    inner = data.draw(st.sampled_from(["x", "x*y", "x+1"]))

    def u(X, Y):
        base = X if inner == "x" else X * Y if inner == "x*y" else X + 1
        return pu(pyet.abs(base) if nu is np.sqrt else base)

    def nu_(x, y):
        base = x if inner == "x" else x * y if inner == "x*y" else x + 1
        return nu(np.abs(base) if nu is np.sqrt else base)

    (p1, n1), (p2, n2) = (binary[data.draw(st.integers(0, 3))] for _ in range(2))
    Y = pyet.asarray(y)
    outs = []
    for shared in (True, False):
        X = pyet.asarray(x)
        X2 = X if shared else pyet.asarray(x.copy())
        out = np.empty(n, dtype)
        pyet.asarray(out)[...] = p2(p1(u(X, Y), Y), u(X2, Y))
        outs.append(out)
    np.testing.assert_array_equal(outs[0].view(np.uint8), outs[1].view(np.uint8))
    want = n2(n1(nu_(x, y), y), nu_(x, y))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(outs[0], want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("red", ["sum", "mean", "max", "min", "argmax"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions_of_a_tree_reading_a_subtree_twice(dtype, red, axis):
    # the fold's program is the one-statement group's too (reduce_into)
    rng = np.random.default_rng(11)
    x = rng.uniform(-3, 3, (300, 200)).astype(dtype)
    X, X2 = pyet.asarray(x), pyet.asarray(x.copy())
    count = core.shared_count()
    got = np.asarray(pyet.evaluate(getattr(pyet, red)(
        pyet.sigmoid(X) * (1 - pyet.sigmoid(X)), axis=axis)))
    assert core.shared_count() == count + 1
    each = np.asarray(pyet.evaluate(getattr(pyet, red)(
        pyet.sigmoid(X) * (1 - pyet.sigmoid(X2)), axis=axis)))
    assert core.shared_count() == count + 1
    np.testing.assert_array_equal(got, each)
    sx = 1 / (1 + np.exp(-x.astype(np.float64)))
    want = getattr(np, red)(sx * (1 - sx), axis=axis)
    if red == "argmax":  # (NumPy's first index over pyet's values: ties of float32 rounding)
        values = np.asarray(pyet.evaluate(pyet.sigmoid(X) * (1 - pyet.sigmoid(X2))))
        np.testing.assert_array_equal(got, np.argmax(values, axis=axis))
    else:
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
