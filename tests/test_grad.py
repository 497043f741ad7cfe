"""pyet.grad: reverse-mode gradients as lazy trees, checked against central
finite differences in float64 (of the same forward tree), MetaNN's worked
values and, where installed, torch.autograd."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import pyet
from pyet._core.ops import OPS, OPS_BY_NAME


def ev(e):
    return np.asarray(pyet.evaluate(e))


def numeric_grads(build, arrays, seed, eps=1e-6):
    """Central differences of sum(build(tensors) * seed) w.r.t. each array
    (perturbed in place: the tree reads their memory when evaluated)."""
    tensors = [pyet.asarray(a) for a in arrays]
    y = build(*tensors)
    out = []
    for a in arrays:
        g = np.zeros(a.shape)
        for i in np.ndindex(a.shape):
            x0 = a[i]
            h = eps * max(1.0, abs(x0))
            a[i] = x0 + h
            fp = np.sum(ev(y) * seed)
            a[i] = x0 - h
            fm = np.sum(ev(y) * seed)
            a[i] = x0
            g[i] = (fp - fm) / (2 * h)
        out.append(g)
    return out


def check(build, arrays, rtol=1e-5, seed=0):
    """pyet.grad of build(*arrays) (a vector-Jacobian product with a random
    seed) against finite differences; returns the gradients."""
    rng = np.random.default_rng(seed)
    tensors = [pyet.asarray(a) for a in arrays]
    y = build(*tensors)
    s = rng.uniform(0.5, 1.5, y.shape) if y.shape else np.float64(1.0)
    grads = pyet.grad(y, tensors, seed=None if not y.shape else s)
    got = [ev(g) for g in grads]
    want = numeric_grads(build, arrays, s)
    for a, g, w in zip(arrays, got, want, strict=True):
        assert g.shape == a.shape and g.dtype == a.dtype
        scale = max(1.0, float(np.abs(w).max(initial=0)))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale)
    return got


def rand(shape, lo=-2.0, hi=2.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


# ---------------------------------------------------------- elementwise ops

# values away from poles, kinks and domain edges, so differences are smooth
SAFE = {"arcsin": (-0.9, 0.9), "arccos": (-0.9, 0.9), "arctanh": (-0.9, 0.9),
        "arccosh": (1.2, 5), "sqrt": (0.2, 10), "log": (0.2, 10), "log2": (0.2, 10),
        "log10": (0.2, 10), "log1p": (-0.5, 10), "tan": (-1.2, 1.2), "exp": (-5, 5),
        "expm1": (-5, 5), "sinh": (-5, 5), "cosh": (-5, 5), "exp2": (-5, 5),
        "cbrt": (0.2, 10), "power": (0.2, 3), "reciprocal": (0.2, 5)}
AWAY_FROM_ZERO = {"divide", "remainder", "fmod", "absolute", "sign", "relu", "copysign",
                  "reciprocal", "arctan2", "hypot"}
DIFFERENTIABLE = [op for op in OPS if op.grad is not None]


def draw_values(op, shape, seed):
    lo, hi = SAFE.get(op.name, (-3, 3))
    v = rand(shape, lo, hi, seed)
    if op.name in AWAY_FROM_ZERO:
        v = np.where(np.abs(v) < 0.3, 0.3 + np.abs(v), v)
    return v


def test_table_rules():
    """Exactly the non-differentiable rows have no rule."""
    none = {op.name for op in OPS if op.grad is None}
    assert none == {"floor", "ceil", "trunc", "rint", "sign", "isnan", "isinf", "isfinite",
                    "invert", "floor_divide", "less", "less_equal", "greater",
                    "greater_equal", "equal", "not_equal", "bitwise_and", "bitwise_or",
                    "bitwise_xor"}


@pytest.mark.parametrize("op", DIFFERENTIABLE, ids=lambda op: op.name)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_elementwise_finite_differences(op, data):
    if op.arity == 1:
        shapes = (data.draw(array_shapes(min_dims=0, max_dims=3, max_side=3)),)
    else:
        shapes = data.draw(mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                                          max_side=3)).input_shapes
    seed = data.draw(st.integers(0, 2**16))
    arrays = [draw_values(op, s, seed + i) for i, s in enumerate(shapes)]
    if op.name in ("remainder", "fmod"):  # keep away from the quotient's jumps
        q = arrays[0] / arrays[1]
        assume(np.all(np.abs(q - np.round(q)) > 1e-3))
    if op.name in ("maximum", "minimum", "fmax", "fmin"):
        # keep away from the kink where the operands meet: finite differences
        # straddle it (a gap of 1e-6 read 0.77 for a slope of 0.57)
        assume(np.all(np.abs(arrays[0] - arrays[1]) > 1e-3))
    fn = getattr(pyet, op.name)
    check(lambda *ts: fn(*ts), arrays, rtol=1e-4)


@pytest.mark.parametrize("op", [op for op in DIFFERENTIABLE if op.arity == 2],
                         ids=lambda op: op.name)
def test_binary_with_scalar(op):
    fn = getattr(pyet, op.name)
    x = draw_values(op, (3, 2), 1)
    c = float(draw_values(op, (), 2))
    check(lambda t: fn(t, c), [x.copy()], rtol=1e-4)
    check(lambda t: fn(c, t), [x.copy()], rtol=1e-4)


@pytest.mark.parametrize("op", DIFFERENTIABLE, ids=lambda op: op.name)
def test_float32_close_to_float64(op):
    fn = getattr(pyet, op.name)
    arrays = [draw_values(op, (4, 3), i) for i in range(op.arity)]
    if op.name in ("remainder", "fmod"):
        arrays[1] = np.full((4, 3), 7.5)
    seed = rand((4, 3), 0.5, 1.5, 9)
    t64 = [pyet.asarray(a) for a in arrays]
    g64 = [ev(g) for g in pyet.grad(fn(*t64), t64, seed)]
    t32 = [pyet.asarray(a.astype(np.float32)) for a in arrays]
    g32 = [ev(g) for g in pyet.grad(fn(*t32), t32, seed.astype(np.float32))]
    for a, b in zip(g32, g64, strict=True):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3 * max(1, np.abs(b).max()))


def test_metann_sigmoid_rule():
    # the rule on the forward output: g*y*(1-y) with y = 9, g = 3
    x = pyet.asarray(np.array([0.5]))
    rule = OPS_BY_NAME["sigmoid"].grad
    (dx,) = rule((x,), pyet.asarray(np.array([9.0])), pyet.asarray(np.array([3.0])))
    assert ev(dx)[0] == -216


def test_metann_softmax():
    s = np.array([0.5484, 0.3292, 0.1224])
    g = np.array([0.5911, 0.6659, 0.7868])
    x = pyet.asarray(np.log(s / s.sum()))
    dx = ev(pyet.grad(pyet.softmax(x), x, seed=g))
    np.testing.assert_allclose(dx, [-0.0266, 0.0086, 0.0180], atol=1e-4)


def test_metann_dot():
    W = pyet.asarray(np.array([[1.1, 3.1], [0.1, 1.17]]))
    x = pyet.asarray(np.array([0.999, 0.0067]))
    dx, dW = pyet.grad(x @ W, [x, W], seed=np.array([0.0469, -0.0394]))
    np.testing.assert_allclose(ev(dx), [-0.07055, -0.041408], atol=1e-5)
    np.testing.assert_allclose(ev(dW), [[0.0468531, -0.0393606], [0.00031423, -0.00026398]],
                               rtol=1e-4)


# -------------------------------------------------------------- core nodes

def test_where_clip_relu_abs():
    x = np.array([-2.0, -0.5, 0.0, 0.5, 2.0])
    t = pyet.asarray(x)
    np.testing.assert_array_equal(ev(pyet.grad(pyet.sum(pyet.relu(t)), t)), [0, 0, 0, 1, 1])
    np.testing.assert_array_equal(ev(pyet.grad(pyet.sum(abs(t)), t)), [-1, -1, 0, 1, 1])
    np.testing.assert_array_equal(ev(pyet.grad(pyet.sum(pyet.clip(t, -1, 1)), t)),
                                  [0, 1, 1, 1, 0])
    y = rand(5, seed=3)
    check(lambda a, b: pyet.where(a > 0.1, a * b, b * b), [rand(5, seed=1), y])


def test_maximum_ties_split():
    a, b = pyet.asarray(np.array([1.0, 2.0, 3.0])), pyet.asarray(np.array([1.0, 3.0, 2.0]))
    ga, gb = pyet.grad(pyet.sum(pyet.maximum(a, b)), [a, b])
    np.testing.assert_array_equal(ev(ga), [0.5, 0, 1])
    np.testing.assert_array_equal(ev(gb), [0.5, 1, 0])
    ga, gb = pyet.grad(pyet.sum(pyet.minimum(a, b)), [a, b])
    np.testing.assert_array_equal(ev(ga), [0.5, 1, 0])
    # against a constant bound the array keeps a tie's gradient (torch.clamp)
    t = pyet.asarray(np.array([-1.0, 0.0, 1.0]))
    np.testing.assert_array_equal(ev(pyet.grad(pyet.sum(pyet.clip(t, -1, 1)), t)), [1, 1, 1])
    np.testing.assert_array_equal(ev(pyet.grad(pyet.sum(pyet.maximum(0.0, t)), t)), [0, 1, 1])


def test_broadcast_strided_and_repeated_leaves():
    base = rand((6, 8), seed=4)
    strided = base[::2, 1::3]  # a strided view as the leaf
    check(lambda s, b: pyet.sum(pyet.tanh(s * b[:, None]) + s), [strided, rand(3, seed=5)])
    # the same leaf three times: contributions summed
    x = pyet.asarray(rand(4, seed=6))
    np.testing.assert_allclose(ev(pyet.grad(pyet.sum(x * x + x), x)),
                               2 * x.numpy() + 1)
    check(lambda a: a * a * pyet.sin(a) + a.T @ a, [rand((3, 3), seed=7)])


def test_power_both_args_and_cast():
    check(lambda a, b: a ** b, [rand((3,), 0.5, 2, 1), rand((2, 1), 0, 2, 2)])
    check(lambda a: a ** 3 + a ** 2 + a ** 0.5, [rand(4, 0.5, 2, 3)])
    x32, y = pyet.asarray(rand(3, seed=2).astype(np.float32)), pyet.asarray(rand(3, seed=3))
    gx, gy = pyet.grad(pyet.sum(x32.astype(np.float64) * y), [x32, y])
    assert gx.dtype == np.float32 and gy.dtype == np.float64
    np.testing.assert_array_equal(ev(gx), y.numpy().astype(np.float32))
    np.testing.assert_array_equal(ev(gy), x32.numpy())


# ---------------------------------------------------------------- reductions

@pytest.mark.parametrize("kind", ["sum", "mean", "prod", "max", "min"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), ((0, 2), False),
                                           (-1, True)])
def test_reductions(kind, axis, keepdims):
    fn = getattr(pyet, kind)
    check(lambda a: fn(a * a, axis=axis, keepdims=keepdims), [rand((2, 3, 4), 0.5, 1.5, 3)],
          rtol=1e-4)


def test_prod_with_zeros():
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 4.0]])
    t = pyet.asarray(x)
    g = ev(pyet.grad(pyet.sum(pyet.prod(t, axis=1)), t))
    np.testing.assert_array_equal(g, [[0, 6, 0], [0, 0, 0], [8, 4, 2]])


def test_max_ties_share():
    t = pyet.asarray(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]))
    g = ev(pyet.grad(pyet.sum(pyet.max(t, axis=1)), t))
    np.testing.assert_allclose(g, [[0, 0.5, 0.5], [1 / 3] * 3])


# ------------------------------------------------------------------ products

@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 2)), ((3, 4), (4,)), ((4,), (4, 2)),
                                   ((4,), (4,))])
def test_dot(sa, sb):
    check(lambda a, b: pyet.dot(a, b), [rand(sa, seed=1), rand(sb, seed=2)])
    check(lambda a, b: pyet.sigmoid(a @ b) * 2, [rand(sa, seed=1), rand(sb, seed=2)])


@pytest.mark.parametrize("sa,sb", [((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)),
                                   ((3, 4), (2, 4, 5)), ((1, 3, 4), (2, 4, 5))])
def test_batch_dot(sa, sb):
    check(lambda a, b: pyet.batch_dot(a, b), [rand(sa, seed=1), rand(sb, seed=2)])


def test_outer_and_transposed_operands():
    check(lambda a, b: pyet.outer(a, b), [rand(3, seed=1), rand(4, seed=2)])
    check(lambda a, b: pyet.dot(a.T, b).T, [rand((4, 3), seed=1), rand((4, 2), seed=2)])


def test_tensordot():
    a, b = np.arange(60.).reshape(5, 4, 3), np.arange(24.).reshape(4, 3, 2)
    r = ev(pyet.tensordot(pyet.asarray(a), pyet.asarray(b), 2))
    np.testing.assert_array_equal(r, [[1012, 1078], [2596, 2806], [4180, 4534], [5764, 6262],
                                      [7348, 7990]])
    c = rand((3, 5), seed=1)
    np.testing.assert_allclose(ev(pyet.tensordot(pyet.asarray(a), pyet.asarray(c), ([2, 0],
                                                                                  [0, 1]))),
                               np.tensordot(a, c, ([2, 0], [0, 1])))
    check(lambda x, y: pyet.tensordot(x, y, 2), [rand((2, 4, 3), seed=1), rand((4, 3, 2), seed=2)])
    check(lambda x, y: pyet.tensordot(x, y, 0), [rand(2, seed=1), rand(3, seed=2)])


# --------------------------------------------------------------------- views

VIEW_CASES = {
    "T": lambda a: a.T * 2,
    "transpose": lambda a: pyet.transpose(a * a, (1, 2, 0)),
    "swapaxes": lambda a: pyet.swapaxes(a, 0, 2) + 1,
    "reshape": lambda a: pyet.reshape(a, (4, 6)) * pyet.reshape(a, (6, 4)).T,
    "reshape_strided": lambda a: pyet.reshape(pyet.transpose(a, (2, 1, 0)), (24,)),
    "flip": lambda a: pyet.flip(a, 1) * a,
    "pad": lambda a: pyet.pad(a, ((1, 2), (0, 1))) * 3,
    "crop": lambda a: pyet.crop(a, (2, 2), offset=(1, 1)),
    "broadcast_to": lambda a: pyet.broadcast_to(a, (2, 2, 3, 4)),
    "broadcast_with_axis": lambda a: pyet.broadcast_with_axis(a, 0, 3),
    "repmat": lambda a: pyet.repmat(pyet.reshape(a, -1), 2),
    "concatenate": lambda a: pyet.concatenate([a, a * a, pyet.exp(a)], axis=1),
    "stack": lambda a: pyet.stack([a, 2 * a], axis=3),
    "index": lambda a: a[1:, ::2, 1] * a[0, 0, 0] + a[None, -1, 0, :2],
    "slice": lambda a: a.slice(0, 1) * 2,
    "view_of_special": lambda a: pyet.flip(pyet.softmax(a, 1), 2).T,
    "index_of_special": lambda a: a[0] * 2,
}


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
def test_views(name):
    check(VIEW_CASES[name], [rand((2, 3, 4), seed=5)])


def test_views_of_view_leaves():
    base = pyet.asarray(rand((4, 5), seed=1))
    v = base[1:, ::2]  # wrt a view: leaves taken from it count, base ones do not
    y = pyet.sum(v.T * v.T) + pyet.sum(base)
    g = ev(pyet.grad(y, v))
    np.testing.assert_allclose(g, 2 * v.numpy())


# ---------------------------------------------------------- special kernels

@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("axis", [0, -1])
def test_softmax(log, axis):
    fn = pyet.log_softmax if log else pyet.softmax
    check(lambda a: fn(a * 2, axis), [rand((3, 4), seed=2)])


def test_nn_blocks():
    idx = np.array([[0, 2], [2, 1]])
    check(lambda w: pyet.take(idx, w) * 2, [rand((3, 4), seed=1)])
    check(lambda m: pyet.choose_row_element(m * m, np.array([1, 0, 3])), [rand((3, 4), seed=2)])
    check(lambda m, x: pyet.mask(m, x), [rand(3, seed=3), rand((3, 2), seed=4)])
    check(lambda w: pyet.one_hot(np.array([1, 0, 2]), 3, np.float64) @ w, [rand((3, 2), seed=5)])
    check(lambda g: pyet.take_grad(np.array([0, 0, 2]), g, 4), [rand((3, 2), seed=6)])


@pytest.mark.parametrize("stride,dilate", [(1, 1), (2, 1), (1, 2)])
def test_im2col(stride, dilate):
    check(lambda x: pyet.unpack_patch2col(x, 2, 2, stride, dilate),
          [rand((2, 2, 5, 5), seed=1)])
    check(lambda c: pyet.pack_col2patch(c, (1, 2, 4, 4), 2, 2, stride, 1),
          [rand((8, 9 if stride == 1 else 4), seed=2)])


@pytest.mark.parametrize("op", ["max", "sum", "avg"])
@pytest.mark.parametrize("k,s", [(2, 2), (3, 2)])
def test_pool(op, k, s):
    check(lambda x: pyet.pool(x, k, k, s, s, op), [rand((2, 5, 5), seed=3)])


def test_conv_layer():
    # convolution as im2col + dot, then relu, max pool and a sum
    def net(img, w):
        cols = pyet.unpack_patch2col(img, 3, 3)
        out = pyet.reshape(w @ cols, (2, 1, 4, 4))
        return pyet.sum(pyet.pool(pyet.tanh(out), 2, 2) ** 2)
    check(net, [rand((1, 2, 6, 6), seed=1), rand((2, 18), seed=2)], rtol=1e-4)


# ------------------------------------------------------------------ F, API

def test_F_with_and_without_grad():
    x = rand(4, seed=1)
    check(lambda t: pyet.F(np.sin, t, grad=lambda a, o, g: (g * pyet.cos(a[0]),)) * t, [x])
    t = pyet.asarray(x)
    with pytest.raises(NotImplementedError, match=r"pyet.F\(sin, \.\.\.\) has no gradient"):
        pyet.grad(pyet.sum(pyet.F(np.sin, t)), t)
    with pytest.raises(TypeError, match="grad must be callable"):
        pyet.F(np.sin, t, grad=3)


def test_errors_and_zero_gradients():
    x = pyet.asarray(rand(3, seed=1))
    i = pyet.asarray(np.arange(3))
    with pytest.raises(TypeError, match=r"wrt\[1\], a Tensor of shape \(3,\) and dtype int64"):
        pyet.grad(pyet.sum(x * i), [x, i])
    with pytest.raises(TypeError, match="must be a pyet.Tensor .a leaf., got an expression: "
                       "take the gradient with respect to the leaves it reads"):
        pyet.grad(pyet.sum(x), x * 2)
    with pytest.raises(TypeError, match=r"wrt\[0\] must be a pyet.Tensor .a leaf., got list"):
        pyet.grad(pyet.sum(x), [[x]])
    with pytest.raises(ValueError, match=r"y has shape \(3,\)"):
        pyet.grad(x * 2, x)
    with pytest.raises(ValueError, match="does not broadcast"):
        pyet.grad(x * 2, x, seed=np.ones(4))
    with pytest.raises(TypeError, match="y must be float"):
        pyet.grad(pyet.sum(i), x)
    other = pyet.asarray(np.ones((2, 2), np.float32))
    z = pyet.grad(pyet.sum(x), other)  # not in the tree: zeros
    assert z.shape == (2, 2) and z.dtype == np.float32
    np.testing.assert_array_equal(ev(z), 0)
    # through integer parts: none
    np.testing.assert_array_equal(ev(pyet.grad(pyet.sum(pyet.floor(x) * 2 + (x > 0)), x)), 0)


def test_lazy_and_shared():
    x = pyet.asarray(rand(5, seed=1))
    s = pyet.sigmoid(x)
    g = pyet.grad(pyet.sum(s), x)
    assert isinstance(g, pyet.Expr)
    seen, stack = set(), [g]  # the gradient tree reads the node s itself

    while stack:
        e = stack.pop()
        if id(e) not in seen:
            seen.add(id(e))
            stack.extend(e._args)
    assert id(s) in seen


def test_value_and_grad():
    x = pyet.asarray(rand((8, 5), seed=1))
    W = pyet.asarray(rand((5, 3), seed=2))
    y = pyet.sum(pyet.log_softmax(x @ W, 1) * pyet.softmax(x @ W, 1))
    v, (gx, gW) = pyet.value_and_grad(y, [x, W])
    assert v.shape == ()
    np.testing.assert_allclose(np.asarray(v), ev(y))
    np.testing.assert_allclose(np.asarray(gx), ev(pyet.grad(y, x)))
    np.testing.assert_allclose(np.asarray(gW), ev(pyet.grad(y, W)))
    v, g = pyet.value_and_grad(pyet.sum(x * x), x)
    np.testing.assert_allclose(np.asarray(g), 2 * x.numpy())


def test_second_order():
    x = rand(4, 0.5, 1.5, seed=1)
    v = rand(4, seed=2)
    t = pyet.asarray(x)
    g = pyet.grad(pyet.sum(t ** 3 * pyet.sin(t)), t)
    h = pyet.grad(pyet.sum(g * v), t)  # Hessian-vector product (diagonal here)
    want = v * (6 * x * np.sin(x) + 6 * x ** 2 * np.cos(x) - x ** 3 * np.sin(x))
    np.testing.assert_allclose(ev(h), want, rtol=1e-10)
    # through products, reductions and softmax: grad of the grad against differences
    W = rand((3, 2), seed=3)

    def gradnorm(a, w):
        y = pyet.sum(pyet.log_softmax(pyet.tanh(a @ w), 1) * pyet.asarray(np.eye(2)[[0, 1, 1]]))
        ga = pyet.grad(y, a)
        return pyet.sum(ga * ga) + pyet.max(pyet.mean(ga, 0))
    check(gradnorm, [rand((3, 3), seed=4), W], rtol=1e-4)
    def padded(a):
        inner = pyet.sum(pyet.crop(pyet.pad(a, 1), (3, 2), (0, 1)) ** 2)
        return pyet.sum(pyet.grad(inner, a) ** 2)
    check(padded, [rand((3, 4), seed=5)], rtol=1e-4)


# -------------------------------------------------------------------- torch

def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x, W1, b1, W2 = (rng.standard_normal(s) for s in [(6, 5), (5, 4), (4,), (4, 3)])
    labels = np.array([0, 2, 1, 1, 0, 2])
    a = rng.standard_normal((3, 4))
    a[0, 1] = a[0, 2]  # a tie for maximum and amax

    def loss_pyet(x, W1, b1, W2, a):
        h = pyet.relu(x @ W1 + b1)
        logp = pyet.log_softmax(h @ W2, 1)
        ce = -pyet.mean(pyet.choose_row_element(logp, labels))
        return ce + pyet.sum(pyet.max(a, axis=1)) + pyet.sum(pyet.maximum(a, a[:, ::-1] * 1))

    def loss_torch(x, W1, b1, W2, a):
        h = torch.relu(x @ W1 + b1)
        ce = torch.nn.functional.cross_entropy(h @ W2, torch.as_tensor(labels))
        return ce + torch.amax(a, 1).sum() + torch.maximum(a, a.flip(1) * 1).sum()

    arrays = [x, W1, b1, W2, a]
    ts = [pyet.asarray(v) for v in arrays]
    got = [ev(g) for g in pyet.grad(loss_pyet(*ts), ts)]
    tt = [torch.tensor(v, requires_grad=True) for v in arrays]
    loss_torch(*tt).backward()
    for g, t in zip(got, tt, strict=True):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_against_torch_blocks():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(1)
    img, w, v = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 27)), rng.uniform(
        0.5, 2, (3, 5))
    v[0, :2] = [0.5, 2.0]  # clip's bounds exactly

    def loss_pyet(img, w, v):
        cols = pyet.unpack_patch2col(img, 3, 3)  # (27, 2*4*4)
        conv = pyet.transpose(pyet.reshape(w @ cols, (4, 2, 4, 4)), (1, 0, 2, 3))
        pooled = pyet.pool(pyet.tanh(conv), 2, 2, op="avg")
        return (pyet.sum(pyet.sigmoid(pooled) ** 1.5) + pyet.sum(pyet.clip(v, 0.5, 2.0) ** v)
                + pyet.sum(pyet.softmax(v * 2, 0) * pyet.log(v)))

    def loss_torch(img, w, v):
        conv = F.conv2d(img, w.reshape(4, 3, 3, 3))
        pooled = F.avg_pool2d(torch.tanh(conv), 2)
        return (torch.sum(torch.sigmoid(pooled) ** 1.5) + torch.sum(v.clamp(0.5, 2.0) ** v)
                + torch.sum(torch.softmax(v * 2, 0) * torch.log(v)))

    arrays = [img, w, v]
    ts = [pyet.asarray(a) for a in arrays]
    got = [ev(g) for g in pyet.grad(loss_pyet(*ts), ts)]
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    loss_torch(*tt).backward()
    for g, t in zip(got, tt, strict=True):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-9, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(shape=array_shapes(min_dims=1, max_dims=3, max_side=4), data=st.data())
def test_random_shapes_reductions_softmax_views(shape, data):
    """Reductions, softmax and views of random shapes and axes."""
    nd = len(shape)
    axis = data.draw(st.integers(0, nd - 1))
    kind = data.draw(st.sampled_from(["sum", "mean", "prod", "max", "min", "softmax",
                                      "log_softmax", "flip", "transpose", "reshape", "bcast"]))
    keep = data.draw(st.booleans())
    x = rand(shape, 0.5, 1.5, data.draw(st.integers(0, 2**16)))
    if kind in ("softmax", "log_softmax"):
        build = lambda a: getattr(pyet, kind)(a * 3, axis)  # noqa: E731
    elif kind == "flip":
        build = lambda a: pyet.flip(a, axis) * a  # noqa: E731
    elif kind == "transpose":
        perm = data.draw(st.permutations(range(nd)))
        build = lambda a: pyet.transpose(a * a, perm)  # noqa: E731
    elif kind == "reshape":
        build = lambda a: pyet.reshape(a.T, (-1,)) * 2  # noqa: E731
    elif kind == "bcast":
        build = lambda a: pyet.broadcast_to(a, (2,) + shape) * a  # noqa: E731
    else:
        build = lambda a: getattr(pyet, kind)(pyet.exp(a), axis, keepdims=keep)  # noqa: E731
    check(build, [x], rtol=1e-4)


@pytest.mark.parametrize("block", ["take", "pool_max", "pool_avg", "im2col", "choose"])
def test_second_order_blocks(block):
    idx = np.array([2, 0, 2])
    f = {"take": lambda a: pyet.take(idx, a * a),
         "pool_max": lambda a: pyet.pool(a * a, 2, 2, 2, 2, "max"),
         "pool_avg": lambda a: pyet.pool(a * a, 2, 2, 1, 1, "avg"),
         "im2col": lambda a: pyet.unpack_patch2col(pyet.reshape(a * a, (1, 1, 3, 4)), 2, 2),
         "choose": lambda a: pyet.choose_row_element(a * a, idx)}[block]

    def gradnorm(a):
        return pyet.sum(pyet.grad(pyet.sum(pyet.tanh(f(a))), a) ** 2)
    check(gradnorm, [rand((3, 4), 0.2, 1.5, seed=3)], rtol=1e-4)


def test_deep_tree():
    x = pyet.asarray(np.array([0.3, 0.7]))
    e = x
    for _ in range(3000):
        e = pyet.sin(e) * 0.5 + x
    g = ev(pyet.grad(pyet.sum(e), x))
    h = 1e-7
    xp = np.array([0.3, 0.7])
    fd = []
    for i in range(2):
        vals = []
        for s in (h, -h):
            v = xp.copy()
            v[i] += s
            z = v.copy()
            for _ in range(3000):
                z = np.sin(z) * 0.5 + v
            vals.append(z[i])
        fd.append((vals[0] - vals[1]) / (2 * h))
    np.testing.assert_allclose(g, fd, rtol=1e-5)


def test_a_python_scalar_seed_keeps_float32():
    x = pyet.asarray(np.arange(3, dtype=np.float32))
    for g in (pyet.grad(x * x, x, seed=2.0), pyet.vjp(x * x, [x], 2.0)[0]):
        assert g.dtype == np.float32
        np.testing.assert_array_equal(pyet.evaluate(g), np.float32([0, 4, 8]))
