"""Expression building: metadata at build time, repr, bool, broadcasting errors, NumPy
interop, F, dtypes."""

import numpy as np
import pytest

import pyet


def t_(shape=(3, 4), dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 2.0, size=shape).astype(dtype)
    return a, pyet.asarray(a)


def ev(e):
    return np.asarray(pyet.evaluate(e))


def assert_close(got, ref, rtol=1e-14):
    assert got.dtype == ref.dtype and got.shape == ref.shape
    if ref.dtype == np.bool_ or ref.dtype.kind == "i":
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=rtol)


# ---------------------------------------------------------------- metadata at build time


@pytest.mark.parametrize(
    "sa,sb,dta,dtb",
    [
        ((3, 1), (1, 4), "float32", "float32"),
        ((5,), (2, 1, 5), "int32", "float64"),
        ((), (3,), "int64", "int32"),
        ((0, 3), (1, 3), "bool", "float32"),
        ((2, 1, 1), (7,), "bool", "bool"),
        ((1,), (0,), "float64", "int64"),
    ],
)
def test_shape_dtype_ndim_at_build(sa, sb, dta, dtb):
    a, ta = t_(sa, dta)
    b, tb = t_(sb, dtb, seed=1)
    e = ta + tb
    ref = a + b
    assert e.shape == ref.shape and isinstance(e.shape, tuple)
    assert e.dtype == ref.dtype and isinstance(e.dtype, np.dtype)
    assert e.ndim == ref.ndim
    c = e < 1
    assert c.dtype == np.bool_ and c.shape == ref.shape
    np.testing.assert_array_equal(ev(c), ref < 1)


def test_metadata_of_deep_tree_without_evaluating():
    _, x = t_((4, 1), np.float32)
    _, y = t_((5,), np.float32, seed=2)
    e = pyet.where(x > y, pyet.exp(x) * 0.5, pyet.sqrt(y) + 1) - pyet.maximum(x, y)
    assert e.shape == (4, 5) and e.dtype == np.float32 and e.ndim == 2
    e2 = e / 2 + pyet.asarray(np.ones((3, 1, 1), np.int32))
    assert e2.shape == (3, 4, 5) and e2.dtype == np.float64


def test_expr_is_lazy():
    a, ta = t_((3,))
    e = ta * 2
    a[...] = 10.0  # change the leaf after building: evaluation sees the new values
    np.testing.assert_array_equal(ev(e), np.full(3, 20.0))


def test_expr_reuse_and_shared_subtrees():
    a, ta = t_((3, 4))
    s = pyet.exp(ta) + 1
    e = s * s - s / 2
    r = np.exp(a) + 1
    np.testing.assert_allclose(ev(e), r * r - r / 2, rtol=1e-14)
    np.testing.assert_allclose(ev(e), r * r - r / 2, rtol=1e-14)  # evaluating twice gives the same


def test_repr_shows_tree():
    _, x = t_((3,))
    _, y = t_((3,), seed=1)
    r = repr(pyet.exp(x) + y * 2)
    assert "exp" in r
    assert any(k in r for k in ("add", "+", "Add"))
    assert any(k in r for k in ("mul", "*", "Mul"))
    r2 = repr(pyet.maximum(pyet.tanh(x), y))
    assert "maximum" in r2 and "tanh" in r2
    assert isinstance(repr(x), str) and repr(x)


@pytest.mark.parametrize("use", ["bool", "and", "or", "if", "not"])
def test_bool_of_expr_raises(use):
    _, x = t_((3,))
    e = x > 1
    with pytest.raises(TypeError, match="(?i)truth|ambiguous|bool"):
        if use == "bool":
            bool(e)
        elif use == "and":
            _ = (x > 1) and (x < 2)
        elif use == "or":
            _ = (x > 1) or (x < 2)
        elif use == "if":
            if e:
                pass
        else:
            _ = not e


# ---------------------------------------------------------------- broadcasting errors at build


@pytest.mark.parametrize(
    "sa,sb", [((3,), (4,)), ((2, 3), (3, 2)), ((5, 1, 4), (3, 5)), ((0,), (2,))]
)
def test_broadcast_error_at_build_names_both_shapes(sa, sb):
    _, ta = t_(sa)
    _, tb = t_(sb, seed=1)
    pat = r"\(" + r",\s?".join(map(str, sa)) + r",?\).*\(" + r",\s?".join(map(str, sb)) + r",?\)"
    with pytest.raises(ValueError, match=pat):
        ta + tb  # no evaluation needed: building fails
    with pytest.raises(ValueError, match=pat):
        pyet.maximum(ta, tb)
    with pytest.raises(ValueError, match=pat):
        ta * np.ones(sb)


def test_broadcast_error_in_nested_tree_and_where():
    _, ta = t_((3,))
    _, tb = t_((4,), seed=1)
    with pytest.raises(ValueError, match=r"\(3,?\).*\(4,?\)"):
        pyet.exp(ta) * 2 + pyet.sqrt(tb)
    with pytest.raises(ValueError, match=r"\(3,?\).*\(4,?\)|\(4,?\).*\(3,?\)"):
        pyet.where(ta > 0, ta, tb)
    with pytest.raises(ValueError, match=r"\(3,?\).*\(4,?\)|\(4,?\).*\(3,?\)"):
        pyet.clip(ta, tb, 3.0)


# ---------------------------------------------------------------- NumPy interop


def test_ndarray_on_the_left():
    a, ta = t_((3, 4))
    n = np.arange(4.0)
    for e, ref in (
        (n + ta, n + a),
        (n - ta, n - a),
        (n * ta, n * a),
        (n / ta, n / a),
        (n**ta, n**a),
        (n < ta, n < a),
        (n // ta, n // a),
        (n % ta, n % a),
        (n == ta, n == a),
    ):
        assert isinstance(e, pyet.Expr), type(e)
        assert e.shape == ref.shape and e.dtype == ref.dtype
        assert_close(ev(e), ref, rtol=1e-15)


def test_numpy_scalar_on_the_left():
    a, ta = t_((3,), np.float32)
    e = np.float32(2) * ta
    assert isinstance(e, pyet.Expr) and e.dtype == np.float32
    np.testing.assert_array_equal(ev(e), np.float32(2) * a)
    e = np.float64(2) * ta
    assert isinstance(e, pyet.Expr) and e.dtype == np.float64
    np.testing.assert_array_equal(ev(e), np.float64(2) * a)
    e = np.int32(3) - ta
    assert isinstance(e, pyet.Expr) and e.dtype == np.float64
    np.testing.assert_array_equal(ev(e), np.int32(3) - a)


def test_ndarray_left_with_expression_right():
    a, ta = t_((3,))
    n = np.array([1.0, 2.0, 3.0])
    e = n + pyet.exp(ta)
    assert isinstance(e, pyet.Expr)
    np.testing.assert_allclose(ev(e), n + np.exp(a), rtol=1e-14)


@pytest.mark.parametrize(
    "name,args",
    [
        ("exp", 1),
        ("sqrt", 1),
        ("tanh", 1),
        ("negative", 1),
        ("maximum", 2),
        ("add", 2),
        ("arctan2", 2),
        ("less", 2),
        ("isnan", 1),
    ],
)
def test_np_ufunc_builds_lazy_expr(name, args):
    a, ta = t_((3, 4))
    uf = getattr(np, name)
    e = uf(ta) if args == 1 else uf(ta, 0.75)
    assert isinstance(e, pyet.Expr)
    ref = uf(a) if args == 1 else uf(a, 0.75)
    assert e.dtype == ref.dtype and e.shape == ref.shape
    assert_close(ev(e), ref)
    e2 = (
        uf(ta * 1) if args == 1 else uf(0.75, ta * 1)
    )  # on an expression, and with the scalar first
    ref2 = uf(a) if args == 1 else uf(0.75, a)
    assert isinstance(e2, pyet.Expr)
    assert_close(ev(e2), ref2)


def test_np_maximum_with_zero():
    a = np.array([-1.0, 0.5, -0.0, 2.0])
    e = np.maximum(pyet.asarray(a), 0)
    assert isinstance(e, pyet.Expr)
    np.testing.assert_array_equal(ev(e), np.maximum(a, 0))


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda t, ti: np.gcd(ti, ti), "gcd"),
        (lambda t, ti: np.heaviside(t, t), "heaviside"),
        (lambda t, ti: np.spacing(t), "spacing"),
        (lambda t, ti: np.fabs(t), "fabs"),
        (lambda t, ti: np.left_shift(ti, 1), "left_shift"),
        (lambda t, ti: np.nextafter(t, 1.0), "nextafter"),
    ],
)
def test_ufunc_without_a_kernel_is_a_lazy_F_node(call, name):
    a = np.arange(1.0, 4.0)
    t, ti = pyet.asarray(a), pyet.asarray(np.arange(1, 4))
    e = call(t, ti)
    assert isinstance(e, pyet.Expr) and f"F[{name}]" in repr(e)
    np.testing.assert_array_equal(np.asarray(e), call(a, np.arange(1, 4)))


def test_np_ufunc_out_ndarray_evaluates():
    a, ta = t_((3, 4))
    out = np.zeros((3, 4))
    r = np.add(ta, 1, out=out)
    np.testing.assert_array_equal(out, a + 1)
    assert np.shares_memory(np.asarray(r), out)
    out2 = np.zeros((3, 4))
    np.exp(ta * 2, out=out2)
    np.testing.assert_allclose(out2, np.exp(a * 2), rtol=1e-14)
    out3 = np.zeros((3, 4))
    np.maximum(np.ones(4) * 1.5, ta, out=(out3,))  # NumPy array first, out as a tuple
    np.testing.assert_array_equal(out3, np.maximum(1.5, a))


def test_np_ufunc_out_tensor_evaluates():
    a, ta = t_((3, 4))
    buf = np.zeros((3, 4))
    dst = pyet.asarray(buf)
    np.multiply(ta, ta, out=dst)
    np.testing.assert_array_equal(buf, a * a)
    np.subtract(dst, 1, out=dst)  # in place through the ufunc
    np.testing.assert_array_equal(buf, a * a - 1)


def test_np_ufunc_out_tensor_errors_leave_it_untouched():
    # the common form's own path (two operands, out= one pyet tensor): the
    # assignment's checks, before anything is written
    a, ta = t_((3, 4))
    ro = np.zeros((3, 4))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        np.add(ta, ta, out=pyet.asarray(ro))
    small = np.full((2, 4), 7.0)
    with pytest.raises(ValueError, match="shape"):
        np.add(ta, 1, out=pyet.asarray(small))
    ints = np.full((3, 4), 7, np.int32)
    with pytest.raises(TypeError, match="cast"):
        np.multiply(ta, 2, out=pyet.asarray(ints))
    assert (small == 7).all() and (ints == 7).all() and (ro == 0).all()
    wide = np.zeros((2, 3, 4))
    r = np.add(ta, pyet.asarray(np.ones(4)), out=pyet.asarray(wide))  # broadcast into out
    np.testing.assert_array_equal(wide, np.broadcast_to(a + 1, (2, 3, 4)))
    assert isinstance(r, pyet.Tensor) and np.shares_memory(r.numpy(), wide)


def test_np_asarray_of_expr_evaluates():
    a, ta = t_((2, 3), np.float32)
    r = np.asarray(pyet.sqrt(ta) + 1)
    assert isinstance(r, np.ndarray) and r.dtype == np.float32
    np.testing.assert_array_equal(r, np.sqrt(a) + np.float32(1))


# ---------------------------------------------------------------- pyet.F


def test_F_with_unary_ufunc():
    a, ta = t_((5, 7))
    e = pyet.F(np.cbrt, ta)
    assert isinstance(e, pyet.Expr) and e.shape == (5, 7)
    np.testing.assert_array_equal(ev(e), np.cbrt(a))
    e2 = pyet.F(np.cbrt, ta * 2) + 1
    np.testing.assert_array_equal(ev(e2), np.cbrt(a * 2) + 1)


def test_F_with_binary_ufunc_broadcast():
    a, ta = t_((4, 1))
    b, tb = t_((1, 6), seed=1)
    e = pyet.F(np.logaddexp, ta, tb)
    assert e.shape == (4, 6)
    np.testing.assert_allclose(ev(e), np.logaddexp(a, b), rtol=1e-14)


def test_F_with_python_lambda():
    a, ta = t_((3, 4))
    e = pyet.F(lambda x: x * 2 + np.sin(x), ta)
    assert e.shape == (3, 4)
    np.testing.assert_allclose(ev(e), a * 2 + np.sin(a), rtol=1e-14)
    b, tb = t_((3, 4), seed=3)
    e = pyet.F(lambda x, y: np.where(x > y, x - y, 0.0), ta, tb)
    np.testing.assert_array_equal(ev(e), np.where(a > b, a - b, 0.0))


def test_F_large_strided_operand_applied_blockwise():
    base = np.random.default_rng(0).uniform(-1, 1, size=(300, 200))
    a = base[::-2, ::3]
    seen = []

    def fn(x):
        seen.append(x.size)
        return x * x - 1

    e = pyet.F(fn, pyet.asarray(a)) * 2
    np.testing.assert_array_equal(ev(e), (a * a - 1) * 2)
    assert sum(seen) >= a.size  # every element went through fn


def test_F_into_destination_and_inplace():
    a, ta = t_((6,))
    dst = pyet.zeros(6)
    dst[...] = pyet.F(np.negative, ta)
    np.testing.assert_array_equal(dst.numpy(), -a)
    dst += pyet.F(lambda x: x + 1, ta)
    np.testing.assert_array_equal(dst.numpy(), -a + (a + 1))


# ---------------------------------------------------------------- unsupported dtypes

UNSUPPORTED = [
    "complex128",
    "complex64",
    "float16",
    "uint8",
    "int8",
    "uint32",
    "object",
    "<U3",
    "datetime64[s]",
]


def dtype_pattern(dt):
    return "(U3|str|<U3)" if dt == "<U3" else np.dtype(dt).name.split("[")[0]


@pytest.mark.parametrize("dt", UNSUPPORTED)
def test_unsupported_dtype_operand_in_expression(dt):
    _, t = t_((3,))
    arr = np.zeros(3, dtype=dt)
    with pytest.raises(TypeError, match=dtype_pattern(dt)):
        t + arr
    with pytest.raises(TypeError, match=dtype_pattern(dt)):
        pyet.asarray(arr)


@pytest.mark.parametrize("dt", ["complex128", "float16", "uint8", "int16"])
def test_unsupported_dtype_numpy_left_and_scalars(dt):
    _, t = t_((3,))
    with pytest.raises(TypeError, match=dtype_pattern(dt)):
        np.ones(3, dtype=dt) * t
    with pytest.raises(TypeError, match=dtype_pattern(dt).rstrip("0123456789")):
        np.dtype(dt).type(1) + t


def test_python_complex_scalar_raises():
    _, t = t_((3,))
    with pytest.raises(TypeError, match="complex"):
        t * 1j


def test_result_dtype_outside_set_raises():
    b = pyet.asarray(np.array([True, False]))
    with pytest.raises(TypeError, match="float16"):
        pyet.exp(b)
    with pytest.raises(TypeError, match="int8"):
        b // b
    with pytest.raises(TypeError, match="bool"):
        b - b  # NumPy has no boolean subtract
    with pytest.raises(TypeError, match="bool"):
        _ = -b
    with pytest.raises(TypeError, match="float64"):
        ~pyet.asarray(np.ones(2))


@pytest.mark.parametrize(
    "kw",
    [{"where": np.array([True, False] * 3)}, {"dtype": np.float32}, {"casting": "unsafe"}],
    ids=["where", "dtype", "casting"],
)
def test_np_ufunc_keywords_rejected_or_honoured(kw):
    """A ufunc keyword pyet does not implement must not be silently ignored."""
    a = np.arange(6.0)
    out = np.full(6, -1.0)
    ref = np.full(6, -1.0)
    np.add(a, 1, out=ref, **kw)
    try:
        np.add(pyet.asarray(a), 1, out=out, **kw)
    except TypeError as e:
        assert next(iter(kw)) in str(e)
        np.testing.assert_array_equal(out, np.full(6, -1.0))
    else:
        np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("method", ["reduce", "accumulate", "outer"])
def test_np_ufunc_methods_rejected_or_correct(method):
    a = np.arange(1.0, 6.0)
    ref = getattr(np.add, method)(a, a) if method == "outer" else getattr(np.add, method)(a)
    t = pyet.asarray(a)
    try:
        r = getattr(np.add, method)(t, t) if method == "outer" else getattr(np.add, method)(t)
    except TypeError as e:
        assert method in str(e)
    else:
        np.testing.assert_array_equal(np.asarray(r), ref)
