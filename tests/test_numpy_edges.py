"""NumPy's results on edge inputs, each checked against NumPy itself (NumPy 2 is the oracle).

Signed zeros and NaN through maximum/minimum/relu, the spellings of power (NumPy's ndarray
``**`` and its power loop take fast paths for some scalar exponents), Python scalars staying
weak when every operand is one, int32 tensors compared with Python ints outside int32,
reductions of 63- and 64-dimensional arrays, and ``np.matrix`` operands (plain 2-D arrays).
"""

import operator

import numpy as np
import pytest

import pyet

FLOATS = ["float32", "float64"]


def ev(e):
    return np.asarray(pyet.evaluate(e))


def assert_same_bits(got, ref):
    """Equal dtype, shape and bytes: -0.0 is not 0.0, and NaN equals NaN."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, got.shape, ref.dtype,
                                                               ref.shape)
    if got.tobytes() != ref.tobytes():
        raise AssertionError(f"got {got!r} ({np.signbit(got)}), NumPy {ref!r} ({np.signbit(ref)})")


# ---------------------------------------------------------------- signed zeros and NaN

ZEROS_NAN = [0.0, -0.0, np.nan, 1.0, -np.inf]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_signed_zeros_arrays(name, dtype):
    """Every pair of {0.0, -0.0, nan, 1, -inf}, in both orders, array against array."""
    v = np.array(ZEROS_NAN, dtype)
    a, b = np.repeat(v, v.size), np.tile(v, v.size)  # all pairs, both orders
    ref = getattr(np, name)(a, b)
    for fn in (getattr(pyet, name), getattr(np, name)):
        assert_same_bits(ev(fn(pyet.asarray(a), pyet.asarray(b))), ref)
    # long enough for the vector loops, and broadcast rows against columns
    big_a, big_b = np.tile(a, 9), np.tile(b, 9)
    assert_same_bits(ev(getattr(pyet, name)(pyet.asarray(big_a), pyet.asarray(big_b))),
                     getattr(np, name)(big_a, big_b))
    col, row = v[:, None], v[None, :]
    assert_same_bits(ev(getattr(pyet, name)(pyet.asarray(col), pyet.asarray(row))),
                     getattr(np, name)(col, row))


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("scalar", [0.0, -0.0, np.nan, 0, "np0", "np-0"], ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_signed_zeros_scalars(name, dtype, scalar, side):
    """A signed zero (or NaN) as a Python scalar or NumPy scalar operand, on either side."""
    if isinstance(scalar, str):
        scalar = np.dtype(dtype).type(-0.0 if scalar == "np-0" else 0.0)
    a = np.array(ZEROS_NAN * 5, dtype)
    args = (a, scalar) if side == "right" else (scalar, a)
    targs = (pyet.asarray(a), scalar) if side == "right" else (scalar, pyet.asarray(a))
    ref = getattr(np, name)(*args)
    assert_same_bits(ev(getattr(pyet, name)(*targs)), ref)
    assert_same_bits(ev(getattr(np, name)(*targs)), ref)


@pytest.mark.parametrize("dtype", FLOATS)
def test_relu_signed_zeros_and_nan(dtype):
    """relu(x) is maximum(x, 0): relu(-0.0) is 0.0 (NumPy returns its second operand on ties)."""
    a = np.array(ZEROS_NAN * 7, dtype)
    assert_same_bits(ev(pyet.relu(pyet.asarray(a))), np.maximum(a, 0))
    assert_same_bits(ev(pyet.relu(pyet.asarray(a[::-3]))), np.maximum(a[::-3], 0))
    assert np.signbit(ev(pyet.relu(pyet.asarray(np.array([-0.0], dtype))))).tolist() == [False]


# ---------------------------------------------------------------- powers

POWER_VALUES = [-0.0, 0.0, -np.inf, np.inf, np.nan, 1.0, -1.0, 2.0, -2.5, 0.5, 1e-300, 1e300,
                5e-324, -3.0, 7.0]


def _pow_operand(dtype):
    with np.errstate(over="ignore"):  # 1e300 overflows float32: inf, also an edge
        return np.array(POWER_VALUES * 3, dtype)


SPELLINGS = {
    "a ** k": (lambda a, k: a ** k, lambda t, k: t ** k),
    "np.power(a, k)": (np.power, np.power),
    "pyet.power(a, k)": (np.power, pyet.power),
}


@pytest.mark.parametrize("k", [2, 1, -1, 0.5, 0, 2.0, 1.0, -1.0, 0.0, 3, -2, 1.5],
                         ids=lambda k: repr(k))
@pytest.mark.parametrize("spelling", list(SPELLINGS))
@pytest.mark.parametrize("dtype", FLOATS)
def test_power_scalar_exponent_bit_exact(dtype, spelling, k):
    """Each spelling bit-exact to NumPy's same spelling (NumPy takes sqrt for ** 0.5 and
    np.power(a, 0.5): -0.0 ** 0.5 is -0.0 and -inf ** 0.5 is nan, where pow gives 0.0, inf)."""
    np_fn, pyet_fn = SPELLINGS[spelling]
    a = _pow_operand(dtype)
    with np.errstate(all="ignore"):
        ref = np_fn(a, k)
        got = ev(pyet_fn(pyet.asarray(a), k))
    if k in (2, 1, -1, 0.5, 0):
        assert_same_bits(got, ref)
    else:  # pow itself: NumPy's loop is libm's, or SVML's (within 1 ulp) on AVX512 CPUs
        np.testing.assert_array_max_ulp(got, ref, maxulp=1)


@pytest.mark.parametrize("k", [2, 1, -1, 0.5, 0, 2.0, -1.0], ids=lambda k: repr(k))
@pytest.mark.parametrize("dtype", FLOATS)
def test_power_in_place_bit_exact(dtype, k):
    """t **= k against NumPy's a **= k."""
    a = _pow_operand(dtype)
    t = pyet.asarray(a.copy())
    with np.errstate(all="ignore"):
        a **= k
        t **= k
    assert_same_bits(t.numpy(), a)


@pytest.mark.parametrize("dtype", FLOATS)
def test_power_half_at_minus_zero_and_minus_inf(dtype):
    """The two values where sqrt and pow differ, spelled every way NumPy 2.4 spells them."""
    a = np.array([-0.0, -np.inf], dtype)
    t = pyet.asarray(a)
    with np.errstate(invalid="ignore"):
        for ref in (a ** 0.5, np.power(a, 0.5)):  # NumPy 2.4's own answer: sqrt's
            assert ref[0] == 0 and np.signbit(ref[0]) and np.isnan(ref[1])
        for e in (t ** 0.5, np.power(t, 0.5), pyet.power(t, 0.5)):
            assert_same_bits(ev(e), np.power(a, 0.5))
        # an array of exponents runs pow, in NumPy and in pyet
        half = np.full(2, 0.5, dtype)
        assert_same_bits(ev(pyet.power(t, pyet.asarray(half))), np.power(a, half))
        assert np.power(a, half).tolist() == [0.0, np.inf]
        assert not np.signbit(np.power(a, half)[0])


@pytest.mark.parametrize("dtype", FLOATS)
def test_power_zero_d_exponent_half(dtype):
    """NumPy's loop sees a 0-d exponent with stride 0, like a scalar: sqrt again."""
    a = np.array([-0.0, -np.inf, 4.0], dtype)
    half = np.array(0.5, dtype)
    with np.errstate(invalid="ignore"):
        assert_same_bits(ev(np.power(pyet.asarray(a), half)), np.power(a, half))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_powers(dtype):
    """Integer bases with exponents 2, 1, 0 stay integers; 0.5 goes to float64; -1 raises."""
    a = np.array([-3, -1, 0, 1, 2, 7], dtype)
    t = pyet.asarray(a)
    for k in (2, 1, 0, 0.5):
        with np.errstate(invalid="ignore"):
            assert_same_bits(ev(t ** k), a ** k)
            assert_same_bits(ev(pyet.power(t, k)), np.power(a, k))
    with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
        a ** -1
    with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
        ev(t ** -1)


# ---------------------------------------------------------------- weak Python scalars


@pytest.mark.parametrize(
    "name,args",
    [("add", (1, 2.5)), ("add", (1, 2)), ("add", (True, 1)), ("add", (True, False)),
     ("maximum", (3, 4)), ("maximum", (3, 4.5)), ("minimum", (True, 0)), ("multiply", (2.5, 2)),
     ("divide", (1, 2)), ("floor_divide", (7, 2)), ("power", (2, 3)), ("less", (1, 2.5)),
     ("sqrt", (4,)), ("sqrt", (2,)), ("negative", (True,)), ("absolute", (-3,)),
     ("add", (2**40, 1)), ("copysign", (1, -0.0))],
    ids=str,
)
def test_all_scalar_operands_stay_weak(name, args):
    """With every operand a Python scalar, NumPy 2 gives int64/float64/bool: pyet too."""
    fn = getattr(pyet, name)
    try:
        ref = np.asarray(getattr(np, name)(*args))
    except TypeError as err:  # -True: NumPy refuses, so must pyet
        with pytest.raises(TypeError):
            ev(fn(*args))
        assert "negative" in str(err)
        return
    got = ev(fn(*args))
    assert_same_bits(got, ref)


def test_all_scalar_operands_python_int_beyond_int64():
    """NumPy cannot hold 2**63 in int64 and refuses (OverflowError); pyet must refuse too."""
    with pytest.raises(OverflowError):
        np.add(2**63, 1)
    with pytest.raises((OverflowError, TypeError)):
        ev(pyet.add(2**63, 1))


def test_all_scalar_operands_python_int_beyond_int64_overflow_error():
    with pytest.raises(OverflowError):
        ev(pyet.add(2**63, 1))


# ---------------------------------------------------------------- ints beyond the dtype's range

BIG = [2**31, -2**31 - 1, 2**40, -2**40, 2**63 - 1, -2**63, 2**63, 2**64, -2**70]
CMPS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


def test_int32_against_in_range_ints_is_exact():
    a = np.array([-2**31, -1, 0, 2**31 - 1], np.int32)
    t = pyet.asarray(a)
    for op in CMPS:
        for v in (2**31 - 1, -2**31, 0):
            assert_same_bits(ev(op(t, v)), op(a, v))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int_compared_with_out_of_range_python_int(dtype):
    """NumPy 2 compares with Python ints outside the dtype mathematically: t < 2**31 is
    all True for int32, t == 2**40 all False."""
    a = np.array([np.iinfo(dtype).min, -1, 0, np.iinfo(dtype).max], dtype)
    t = pyet.asarray(a)
    for op in CMPS:
        for v in BIG:
            if np.iinfo(dtype).min <= v <= np.iinfo(dtype).max:
                continue
            assert_same_bits(ev(op(t, v)), op(a, v))
            assert_same_bits(ev(op(v, t)), op(v, a))


def test_arithmetic_with_out_of_range_python_int_raises_as_numpy():
    a = np.ones(3, np.int32)
    with pytest.raises(OverflowError, match="Python integer 1099511627776 out of bounds for int32"):
        a + 2**40
    with pytest.raises(OverflowError, match="Python integer 1099511627776 out of bounds for int32"):
        pyet.asarray(a) + 2**40


# ---------------------------------------------------------------- 63 and 64 dimensions


def _many_dims(nd, dtype):
    shape = [1] * nd
    shape[0], shape[5], shape[-1] = 2, 2, 3
    return (np.arange(12) * 7 % 5).astype(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
@pytest.mark.parametrize("nd", [63, 64])
@pytest.mark.parametrize("kind", ["sum", "max", "min", "argmax", "argmin", "mean", "prod",
                                  "all", "any"])
def test_reductions_of_63_and_64_dims(kind, nd, dtype):
    """The accumulators once had two axes more than the operand: 65 or 66, past NumPy's 64."""
    a = _many_dims(nd, dtype)
    t = pyet.asarray(a)
    axes = [None, 5, -1, 0] + ([] if kind.startswith("arg") else [(0, 5), (0, nd - 1, 5)])
    for axis in axes:
        for keepdims in (False, True):
            ref = np.asarray(getattr(np, kind)(a, axis=axis, keepdims=keepdims))
            got = ev(getattr(pyet, kind)(t, axis=axis, keepdims=keepdims))
            assert got.dtype == ref.dtype and got.shape == ref.shape, (axis, keepdims)
            np.testing.assert_array_equal(got, ref)


def test_reductions_of_64_dims_inside_a_tree():
    a = _many_dims(64, "float64")
    t = pyet.asarray(a)
    got = ev(t - pyet.max(t, axis=-1, keepdims=True))
    np.testing.assert_array_equal(got, a - a.max(axis=-1, keepdims=True))
    np.testing.assert_array_equal(ev(pyet.sum(t * 2 + 1)), (a * 2 + 1).sum())


def test_reduction_on_big_64_dim_array_uses_threads():
    """Large enough for several accumulator sets (threads): the flat buffer's strides."""
    shape = [1] * 64
    shape[3], shape[-1] = 300, 1000
    a = np.random.default_rng(0).uniform(-1, 1, shape)
    t = pyet.asarray(a)
    np.testing.assert_allclose(ev(pyet.sum(t, axis=-1)), a.sum(axis=-1), rtol=1e-12)
    np.testing.assert_array_equal(ev(pyet.max(t, axis=3)), a.max(axis=3))
    np.testing.assert_array_equal(ev(pyet.argmax(t)), a.argmax())
    np.testing.assert_array_equal(ev(pyet.argmin(t, axis=-1)), a.argmin(axis=-1))


# ---------------------------------------------------------------- np.matrix


def test_matrix_operands_are_plain_2d_arrays():
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    a = np.asarray(m)
    t = pyet.asarray(m)
    assert isinstance(t, pyet.Tensor) and t.shape == (2, 2)
    assert type(t.numpy()) is np.ndarray and type(np.asarray(t)) is np.ndarray
    assert t[0].shape == (2,)  # a matrix row would stay 2-D
    for got, ref in [
        (ev(t + 1), a + 1),
        (ev(pyet.asarray(np.ones((2, 2))) * m), a),  # elementwise, not a matrix product
        (ev(m + pyet.asarray(np.ones((2, 2)))), a + 1),
        (ev(pyet.dot(m, m)), a @ a),
        (ev(t @ t), a @ a),
        (ev(pyet.sqrt(m)), np.sqrt(a)),
        (ev(t ** 2), a ** 2),
        (ev(pyet.sum(m, axis=0)), a.sum(axis=0)),  # (2,), where m.sum(axis=0) is (1, 2)
        (ev(pyet.asarray(m, dtype=np.float32)), a.astype(np.float32)),
    ]:
        assert type(got) is np.ndarray
        assert got.shape == ref.shape
        np.testing.assert_array_equal(got, ref)
    assert type(pyet.evaluate(t + 1)) is pyet.Tensor


def test_matrix_as_destination():
    m = np.matrix(np.zeros((2, 2)))
    out = pyet.evaluate(pyet.asarray(np.ones((2, 2))) + 1, out=m)
    assert out is m
    np.testing.assert_array_equal(np.asarray(m), np.full((2, 2), 2.0))
