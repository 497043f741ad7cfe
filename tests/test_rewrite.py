"""Rewrite rules against NumPy when operands repeat: a cached program must
never run for a tree it does not compute (one tensor filling two slots of a
rule, then another tree of the same structure with different tensors)."""

import itertools
import random

import numpy as np
import pytest

import pyet
from pyet._core.rewrite import RULES

_UFUNCS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
           "divide": np.divide, "exp": np.exp, "negative": np.negative,
           "sqrt": np.sqrt}


def _slots(pattern, out):
    if isinstance(pattern, str):
        out.append(pattern)
    else:
        for p in pattern[1:]:
            _slots(p, out)
    return out


def _build(pattern, env, lib):
    """The pattern's tree over env's operands: pyet nodes or NumPy values."""
    if isinstance(pattern, str):
        return env[pattern]
    args = [_build(p, env, lib) for p in pattern[1:]]
    fn = _UFUNCS[pattern[0]] if lib == "numpy" else getattr(pyet, pattern[0])
    return fn(*args)


def _cases():
    rng = np.random.default_rng(0)
    pool = [rng.uniform(0.5, 2.0, 7) for _ in range(3)]
    cases = []
    for pattern, op_name, _ in RULES:
        names = _slots(pattern, [])
        arrays = [n for n in names if not n.startswith("s")]
        # every way of filling the array slots from the pool: repeats included
        for choice in itertools.product(range(len(pool)), repeat=len(arrays)):
            env_np = {n: pool[i] for n, i in zip(arrays, choice, strict=True)}
            for n in names:
                if n.startswith("s"):
                    env_np[n] = float(1 + names.index(n))
            cases.append((op_name, pattern, env_np))
    return pool, cases


def test_rules_with_repeated_operands_in_random_order():
    pool, cases = _cases()
    tensors = {id(a): pyet.asarray(a) for a in pool}
    # the first tree of a structure is the one lowered: repeated operands first
    # (the case that once cached a program binding slots by object identity),
    # then every case again in random order
    def repeats(case):
        arrays = [id(v) for v in case[2].values() if isinstance(v, np.ndarray)]
        return len(set(arrays)) - len(arrays)

    shuffled = list(cases)
    random.Random(1).shuffle(shuffled)
    order = sorted(cases, key=repeats) + shuffled
    for op_name, pattern, env_np in order:
        env = {k: (tensors[id(v)] if isinstance(v, np.ndarray) else v) for k, v in env_np.items()}
        got = np.asarray(pyet.evaluate(_build(pattern, env, "pyet")))
        want = _build(pattern, env_np, "numpy")
        np.testing.assert_array_equal(got, want, err_msg=f"{op_name}: {pattern}")


def test_reported_case_x2_plus_x_then_y2_plus_x():
    x = pyet.asarray(np.array([1.0, 2.0]))
    y = pyet.asarray(np.array([10.0, 20.0]))
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(x * 2.0 + x)), [3.0, 6.0])
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(y * 2.0 + x)), [21.0, 42.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rules_fire_for_repeated_operands(dtype):
    """The fused kernel still runs when one tensor fills several slots."""
    from pyet._core import core
    x = pyet.asarray(np.arange(4, dtype=dtype))
    text = core.lower(x * 2.0 + x, core.dtype_code(dtype)).text
    assert text.startswith("dst = axpy"), text


# ----------------------------------------------------------- build-time folds

EDGES = {"float32": [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -3.25, 1e-45],
         "float64": [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -3.25, 5e-324],
         "int32": [0, 1, -1, 2**31 - 1, -2**31],
         "int64": [0, 1, -1, 2**63 - 1, -2**63],
         "bool": [True, False]}

FOLDS = [  # (the tree, NumPy's unfolded value)
    (lambda x: x * 1, lambda a: a * 1),
    (lambda x: 1 * x, lambda a: 1 * a),
    (lambda x: x / 1, lambda a: a / 1),
    (lambda x: x - 0, lambda a: a - 0),
    (lambda x: np.negative(np.negative(x)), lambda a: np.negative(np.negative(a))),
    (lambda x: ~~x, lambda a: ~~a),
    (lambda x: x + 0, lambda a: a + 0),          # not a fold: -0.0 + 0 is 0.0
    (lambda x: x * 1.0, lambda a: a * 1.0),
    (lambda x: x * np.float64(1), lambda a: a * np.float64(1)),
]


@pytest.mark.parametrize("dtype", sorted(EDGES))
@pytest.mark.parametrize("k", range(len(FOLDS)))
def test_folds_give_the_unfolded_value(dtype, k):
    tree, ref = FOLDS[k]
    a = np.array(EDGES[dtype], dtype)
    try:
        with np.errstate(all="ignore"):
            want = ref(a)
    except TypeError:  # NumPy refuses (-bool, ~float): so does pyet
        with pytest.raises(TypeError):
            pyet.evaluate(tree(pyet.asarray(a)))
        return
    with np.errstate(all="ignore"):
        e = tree(pyet.asarray(a))
        got = np.asarray(pyet.evaluate(e))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want)) if got.dtype.kind == "f" else True


def test_folds_apply_only_where_exact():
    x = pyet.asarray(np.ones(3, np.float32))
    assert x * 1 is x and 1 * x is x and x / 1 is x and x - 0 is x
    assert pyet.negative(pyet.negative(x)) is x
    assert x + 0 is not x                  # -0.0 + 0 == 0.0
    assert x * np.float64(1) is not x      # the result is float64
    b = pyet.asarray(np.ones(3, bool))
    assert b * 1 is not b                  # bool * 1 is int64
    i = pyet.asarray(np.ones(3, np.int32))
    assert i / 1 is not i and ~~i is i     # int / 1 is float64


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_sgd_step_is_one_fused_kernel(dtype):
    """w - lr*g (either factor order) runs as sub_scaled: one kernel, NumPy's bits."""
    rng = np.random.default_rng(5)
    w = (rng.standard_normal(3000) * 10).astype(dtype)
    g = (rng.standard_normal(3000) * 10).astype(dtype)
    lr = 3 if dtype.startswith("int") else 0.1
    W, G = pyet.asarray(w), pyet.asarray(g)
    for e, ref in ((W - lr * G, w - lr * g), (W - G * lr, w - g * lr)):
        assert "dst = sub_scaled[" in pyet.explain(e)
        out = np.asarray(pyet.evaluate(e))
        assert out.tobytes() == ref.tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_scale_and_shift_is_one_fused_kernel(dtype):
    """s1*x + s2 (either order of each, 0-d operands as scalars) runs as scale_shift: one
    kernel, NumPy's bits; x*y + s (y an array) is mul_shift's."""
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(3000) * 10).astype(dtype)
    s, t = (3, -7) if dtype.startswith("int") else (0.1, 2.5)
    X = pyet.asarray(x)
    T = pyet.asarray(np.array(t, dtype))
    for e, ref in ((X * s + t, x * s + t), (t + s * X, t + s * x), (X * s + T, x * s + t)):
        assert "dst = scale_shift[" in pyet.explain(e)
        out = np.asarray(pyet.evaluate(e))
        assert out.tobytes() == np.asarray(ref, dtype).tobytes()
    assert "scale_shift" not in pyet.explain(X * X + t)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_product_and_shift_is_one_fused_kernel(dtype):
    """x*y + s (either order, 0-d operands as scalars) runs as mul_shift: one kernel
    reading x and y, NumPy's bits (its rounding of x*y, then of the sum)."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(3001) * 10).astype(dtype)
    y = (rng.standard_normal(3001) * 10).astype(dtype)
    t = -7 if dtype.startswith("int") else 2.5
    X, Y, T = pyet.asarray(x), pyet.asarray(y), pyet.asarray(np.array(t, dtype))
    for e, ref in ((X * Y + t, x * y + t), (t + Y * X, t + y * x), (X * Y + T, x * y + t),
                   (X * X + t, x * x + t)):
        assert "dst = mul_shift[" in pyet.explain(e)
        out = np.asarray(pyet.evaluate(e))
        assert out.tobytes() == np.asarray(ref, dtype).tobytes()
    assert "mul_shift" not in pyet.explain(X * Y + Y)  # muladd's


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_two_products_summed_is_one_fused_kernel(dtype):
    """x*y + z*w and x*y - z*w (any order of the sum's terms and of each
    product's factors, a leaf in both products) run as mul_add_mul and
    mul_sub_mul: one kernel reading the four leaves, NumPy's bits (each
    product rounded, then the sum); x*y + y*z - z is two kernels."""
    rng = np.random.default_rng(8)
    x, y, z, w = ((rng.standard_normal(3003) * 10).astype(dtype) for _ in range(4))
    X, Y, Z, W = (pyet.asarray(v) for v in (x, y, z, w))
    with np.errstate(over="ignore"):
        for e, ref, op in ((X * Y + Z * W, x * y + z * w, "mul_add_mul"),
                           (W * Z + Y * X, w * z + y * x, "mul_add_mul"),
                           (X * Y + Y * Z, x * y + y * z, "mul_add_mul"),
                           (X * Y - Z * W, x * y - z * w, "mul_sub_mul"),
                           (W * Z - X * X, w * z - x * x, "mul_sub_mul")):
            assert f"dst = {op}[" in pyet.explain(e)
            out = np.asarray(pyet.evaluate(e))
            assert out.tobytes() == np.asarray(ref, dtype).tobytes()
        e = X * Y + Y * Z - Z
        lines = [ln for ln in pyet.explain(e).splitlines() if " = " in ln]
        assert len(lines) == 2 and "mul_add_mul[" in lines[0]
        assert np.asarray(pyet.evaluate(e)).tobytes() == np.asarray(x * y + y * z - z,
                                                                     dtype).tobytes()
    # a scalar factor is axpby's or the ema rules'; 0-d operands are scalars
    assert "mul_add_mul" not in pyet.explain(2 * X + Z * W)
    assert "mul_add_mul" not in pyet.explain(X * pyet.asarray(np.array(2, dtype)) + Z * W)
    # mixed dtypes: a cast between, no fusion (each node must be one dtype)
    other = "float64" if dtype != "float64" else "float32"
    V = pyet.asarray(w.astype(other))
    assert "mul_add_mul" not in pyet.explain(X * Y + Z * V)
    assert np.allclose(np.asarray(pyet.evaluate(X * Y + Z * V)), x * y + z * w.astype(other))
