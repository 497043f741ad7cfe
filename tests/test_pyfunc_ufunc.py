"""pyet.F over a NumPy ufunc reads the operand blocks in place and writes its
loop's result straight into the block (no copies), its floating-point errors
reported with the pass's: NumPy's values on every layout, the copying path
where the loop's dtype is not the node's, nothing written when a Python
function raises midway."""

import numpy as np
import pytest

import pyet


def layouts(a):
    packed = np.zeros(a.shape, dtype=[("pad", np.int8), ("x", a.dtype)])
    packed["x"] = a
    big = np.zeros((a.shape[0] * 2, a.shape[1] * 3), a.dtype)
    big[::2, ::3] = a
    return {"C": a, "F": np.asfortranarray(a), "strided": big[::2, ::3],
            "reversed": np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1],
            "packed": packed["x"], "transposed": np.ascontiguousarray(a.T).T}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 4), (300, 700)])
def test_unary_ufunc_on_every_layout(dtype, shape):
    a = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    for name, x in layouts(a).items():
        X = pyet.asarray(x)
        got = np.asarray(pyet.F(np.expm1, X * 2) + 1)
        want = np.expm1(x * 2) + 1
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=name)
        # at the root, into a strided destination inside sentinels
        buf = np.full((shape[0] + 2, 2 * shape[1] + 2), -7, dtype)
        dst = buf[1:-1, 1:-1:2]
        pyet.asarray(dst)[...] = pyet.F(np.sin, X)  # evaluated into dst
        np.testing.assert_array_equal(dst, np.sin(x), err_msg=name)
        assert (buf[0] == -7).all() and (buf[-1] == -7).all() and (buf[1:-1, 2:-1:2] == -7).all()


def test_binary_ufunc_broadcast_and_mixed_dtypes():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((50, 70))
    b = rng.standard_normal(70).astype(np.float32)
    got = np.asarray(pyet.F(np.hypot, pyet.asarray(a), pyet.asarray(b)))
    np.testing.assert_array_equal(got, np.hypot(a, b))
    i = np.arange(12, dtype=np.int64).reshape(3, 4)
    got = np.asarray(pyet.F(np.left_shift, pyet.asarray(i), pyet.asarray(i % 3)))
    np.testing.assert_array_equal(got, np.left_shift(i, i % 3))


def test_declared_dtype_other_than_the_loops_takes_the_copying_path():
    a = np.linspace(-3, 3, 40).reshape(5, 8)
    got = np.asarray(pyet.F(np.sqrt, pyet.asarray(np.abs(a)), dtype=np.float32))
    np.testing.assert_array_equal(got, np.sqrt(np.abs(a)).astype(np.float32))
    with pytest.raises(TypeError, match="returned bool where float64 was expected"):
        np.asarray(pyet.F(np.isnan, pyet.asarray(a), dtype=np.float64))


def test_ufunc_errors_are_the_passs_and_a_raising_function_writes_nothing():
    a = np.ones((4, 70000))
    a[3, -1] = 0  # in the last block
    # a ufunc runs with its errors ignored and its flags reported after the
    # pass, as pyet's own ops and np.log(a, out=dst): dst written, then raised
    dst = np.full(a.shape, 5.0)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="in a pyet evaluation"):
            pyet.asarray(dst)[...] = pyet.F(np.log, pyet.asarray(a)) + 1
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(dst, np.log(a) + 1)
    # a Python function may raise midway: nothing is written
    dst = np.full(a.shape, 5.0)
    calls = []

    def fails_late(v):
        calls.append(len(v))
        if len(calls) == 3:
            raise RuntimeError("third block")
        return v * 2

    with pytest.raises(RuntimeError, match="third block"):
        pyet.asarray(dst)[...] = pyet.F(fails_late, pyet.asarray(a)) + 1
    assert (dst == 5).all() and len(calls) == 3


def test_in_place_register_reuse_and_nested_ufuncs():
    x = np.random.default_rng(2).uniform(0.1, 2, (64, 65))
    X = pyet.asarray(x)
    e = pyet.F(np.log1p, pyet.F(np.expm1, X) * 0.5) - pyet.F(np.sqrt, X)
    np.testing.assert_array_equal(np.asarray(e), np.log1p(np.expm1(x) * 0.5) - np.sqrt(x))


def _messages(fn):
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("build", [
    lambda X, Z, f: f(X / Z),            # pyet's division before the call, in one block
    lambda X, Z, f: X / Z + f(X),
    lambda X, Z, f: f(X) + X / Z,
])
@pytest.mark.parametrize("kind", ["ufunc", "function"])
def test_pass_flags_survive_a_user_function(build, kind):
    # NumPy clears the floating-point flags before each ufunc loop: the pass's
    # own (x / 0 here) must still be reported, once
    X, Z = pyet.asarray(np.ones(10)), pyet.asarray(np.zeros(10))
    f = (lambda e: pyet.F(np.expm1, e)) if kind == "ufunc" else \
        (lambda e: pyet.F(lambda v: v * 2, e))
    assert _messages(lambda: np.asarray(build(X, Z, f))) == [
        "divide by zero encountered in a pyet evaluation"]
    with np.errstate(divide="ignore"):
        assert _messages(lambda: np.asarray(build(X, Z, f))) == []


def test_a_functions_own_errors_are_reported_once():
    Z = pyet.asarray(np.zeros(10))
    # a ufunc's with the pass's; a Python function's by NumPy inside it
    assert _messages(lambda: np.asarray(pyet.F(np.log, Z))) == [
        "divide by zero encountered in a pyet evaluation"]
    assert _messages(lambda: np.asarray(pyet.F(lambda v: np.log(v), Z) + 1)) == [
        "divide by zero encountered in log"]
    with np.errstate(divide="ignore"):
        assert _messages(lambda: np.asarray(pyet.F(np.log, Z))) == []
