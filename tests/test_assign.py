"""Evaluation into destinations: dst[key] = expr, in-place operators, evaluate(), casting,
errors, aliasing."""

import numpy as np
import pytest

import pyet


def arr(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-3, 3, size=shape).round(3).astype(dtype)


# ---------------------------------------------------------------- dst[key] = expr


@pytest.mark.parametrize(
    "key",
    [
        Ellipsis,
        (),
        slice(None),
        slice(1, 5, 2),
        slice(None, None, -1),
        slice(None, None, -3),
        (slice(None), slice(None, None, 2)),
        (slice(None, None, -1), slice(1, None, 3)),
        (1,),
        (2, slice(None, None, -1)),
        (slice(0, 0),),
        (Ellipsis, 3),
        (1, 4),
    ],
    ids=str,
)
def test_setitem_expr_matches_numpy(key):
    base = arr((6, 5))
    a = base.copy()
    ta = pyet.asarray(a)
    xs = arr(base[key].shape, seed=1)
    txs = pyet.asarray(xs)
    ta[key] = txs * 2 + pyet.exp(txs) - 1
    ref = base.copy()
    ref[key] = xs * 2 + np.exp(xs) - 1
    np.testing.assert_allclose(a, ref, rtol=1e-14, atol=0)
    mask = np.ones(base.shape, bool)  # elements outside the key are untouched
    mask[key] = False
    np.testing.assert_array_equal(a[mask], base[mask])
    np.testing.assert_array_equal(xs, arr(base[key].shape, seed=1))  # operand untouched


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "float32", "float64"])
def test_scalar_fill(dtype):
    a = np.zeros((4, 5), dtype)
    t = pyet.asarray(a)
    t[...] = True if dtype == "bool" else 1  # (a Python int into bool is not same_kind)
    assert (a == 1).all()
    t[1:3, ::2] = False if dtype == "bool" else 0
    ref = np.ones((4, 5), dtype)
    ref[1:3, ::2] = 0
    np.testing.assert_array_equal(a, ref)
    if dtype.startswith("float"):
        t[::-1, 1] = 2.5
        ref[::-1, 1] = 2.5
        np.testing.assert_array_equal(a, ref)
    t[...] = np.int32(0) if dtype != "bool" else np.bool_(False)
    assert (a == 0).all()


@pytest.mark.parametrize("value_shape", [(5,), (1, 5), (4, 1), (), (1, 1), (4, 5)], ids=str)
def test_broadcast_into_dst(value_shape):
    a = np.zeros((4, 5))
    v = arr(value_shape, seed=3)
    t = pyet.asarray(a)
    t[...] = pyet.asarray(v) + 1.0
    np.testing.assert_array_equal(a, np.broadcast_to(v + 1.0, (4, 5)))
    t[...] = v  # plain ndarray on the right
    np.testing.assert_array_equal(a, np.broadcast_to(v, (4, 5)))
    t[...] = pyet.asarray(v)  # plain tensor on the right
    np.testing.assert_array_equal(a, np.broadcast_to(v, (4, 5)))


@pytest.mark.parametrize(
    "dst_shape,val_shape",
    [((3,), (2, 3)), ((3, 1), (3, 4)), ((4, 5), (5, 5)), ((4, 5), (4,)), ((0,), (2,)), ((), (3,))],
    ids=str,
)
def test_growing_dst_raises_and_leaves_dst(dst_shape, val_shape):
    a = arr(dst_shape)
    before = a.copy()
    t = pyet.asarray(a)
    with pytest.raises(ValueError, match=r"(?i)shape|broadcast"):
        t[...] = pyet.asarray(arr(val_shape)) * 2
    np.testing.assert_array_equal(a, before)
    with pytest.raises(ValueError, match=r"(?i)shape|broadcast"):
        t[...] = arr(val_shape)
    np.testing.assert_array_equal(a, before)


@pytest.mark.parametrize(
    "dst,val,ok",
    [
        ("float32", "float64", True),
        ("float64", "float32", True),
        ("float64", "int64", True),
        ("float32", "int64", True),
        ("int32", "int64", True),
        ("int64", "int32", True),
        ("int32", "bool", True),
        ("float64", "bool", True),
        ("bool", "bool", True),
        ("int32", "float64", False),
        ("int64", "float32", False),
        ("bool", "int32", False),
        ("bool", "float64", False),
    ],
)
def test_same_kind_casting(dst, val, ok):
    assert np.can_cast(val, dst, "same_kind") == ok  # the oracle agrees with the table
    a = np.ones((3, 4), dst)
    before = a.copy()
    v = (arr((3, 4), seed=5) > 0) if val == "bool" else (arr((3, 4), seed=5) * 10).astype(val)
    t = pyet.asarray(a)
    tv = pyet.asarray(v)
    if ok:
        t[...] = tv + tv if val != "bool" else tv | tv
        with np.errstate(all="ignore"):
            ref = (v + v).astype(dst)
        np.testing.assert_array_equal(a, ref)
    else:
        with pytest.raises(TypeError, match=f"{val}|{dst}|same_kind|cast"):
            t[...] = tv * 1 if val != "bool" else ~tv
        np.testing.assert_array_equal(a, before)
        with pytest.raises(TypeError, match=f"{val}|{dst}|same_kind|cast"):
            pyet.evaluate(tv * 1 if val != "bool" else ~tv, out=a)
        np.testing.assert_array_equal(a, before)


def test_float_expr_into_int_via_inplace_ops_raises():
    a = np.arange(6, dtype=np.int32)
    before = a.copy()
    t = pyet.asarray(a)
    f = pyet.asarray(np.full(6, 0.5))
    for op in ("+=", "-=", "*=", "/="):
        with pytest.raises(TypeError, match=r"(?i)cast|same_kind|float|int"):
            exec(f"t {op} f", {"t": t, "f": f})
        np.testing.assert_array_equal(a, before)
    with pytest.raises(
        TypeError, match=r"(?i)cast|same_kind|float|int"
    ):  # int /= int is a float64 result, as in NumPy
        t /= pyet.asarray(np.full(6, 2, np.int32))
    np.testing.assert_array_equal(a, before)


@pytest.mark.parametrize("target", ["setitem", "evaluate_out", "iadd"])
def test_non_writeable_dst_raises(target):
    a = np.arange(6.0)
    a.flags.writeable = False
    t = pyet.asarray(a)
    with pytest.raises(ValueError, match="(?i)read|writ"):
        if target == "setitem":
            t[...] = t + 1
        elif target == "evaluate_out":
            pyet.evaluate(pyet.asarray(np.ones(6)) + 1, out=a)
        else:
            t += 1.0
    np.testing.assert_array_equal(a, np.arange(6.0))


def test_broadcast_view_dst_is_not_writeable():
    a = np.broadcast_to(np.arange(3.0), (4, 3))
    with pytest.raises(ValueError, match="(?i)read|writ"):
        pyet.asarray(a)[...] = 1.0
    np.testing.assert_array_equal(a, np.broadcast_to(np.arange(3.0), (4, 3)))


def test_evaluation_error_leaves_dst():
    a = np.arange(6, dtype=np.int64)
    t = pyet.asarray(a)
    exps = pyet.asarray(np.array([1, 2, 3, -1, 1, 1]))
    with pytest.raises(ValueError, match="[Nn]egative"):
        t[...] = t**exps + 1  # int ** negative int is found while evaluating
    np.testing.assert_array_equal(a, np.arange(6))
    with pytest.raises(ValueError, match="[Nn]egative"):
        t += t**exps
    np.testing.assert_array_equal(a, np.arange(6))


def test_build_error_leaves_dst():
    a = np.arange(6.0)
    t = pyet.asarray(a)
    with pytest.raises(ValueError, match=r"\(6,?\).*\(4,?\)"):
        t[...] = t + pyet.asarray(np.ones(4))
    with pytest.raises(TypeError, match="complex"):
        t[...] = t + pyet.asarray(np.ones(6, np.complex128))
    np.testing.assert_array_equal(a, np.arange(6.0))


# ---------------------------------------------------------------- in-place operators


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/="])
@pytest.mark.parametrize("layout", ["contig", "strided", "reversed", "fortran"])
def test_inplace_ops(op, dtype, layout):
    base = (arr((6, 8), seed=7) * 4).astype(dtype)
    if layout == "strided":
        base = np.zeros((12, 16), dtype)
        base[::2, 1::2] = (arr((6, 8), seed=7) * 4).astype(dtype)
    a = {
        "contig": base,
        "strided": base[::2, 1::2],
        "reversed": base[::-1, ::-1],
        "fortran": np.asfortranarray(base),
    }[layout]
    ref = a.copy()
    rhs = (arr((8,), seed=8) * 3 + 5).astype(dtype)  # nonzero, broadcast over rows
    t = pyet.asarray(a)
    tr = pyet.asarray(rhs)
    ns = {"t": t, "tr": tr, "ref": ref, "rhs": rhs}
    if op == "/=" and dtype.startswith("int"):
        with pytest.raises(TypeError, match=r"(?i)cast|same_kind|float|int"):
            exec(f"t {op} tr + 1", ns)
        np.testing.assert_array_equal(a, ref)
        return
    exec(f"t {op} tr + 1", ns)
    exec(f"ref {op} rhs + 1", ns)
    assert ns["t"] is t  # in place: the same Tensor object
    assert np.shares_memory(t.numpy(), a)
    np.testing.assert_array_equal(a, ns["ref"])
    exec(f"t {op} 2", ns)  # scalar right-hand side
    exec(f"ref {op} 2", ns)
    np.testing.assert_array_equal(a, ns["ref"])


def test_inplace_float64_into_float32():
    a = np.ones(5, np.float32)
    t = pyet.asarray(a)
    t += pyet.asarray(np.full(5, 0.1))
    ref = np.ones(5, np.float32)
    ref += np.full(5, 0.1)
    np.testing.assert_array_equal(a, ref)


def test_inplace_on_view_key():
    a = np.zeros((4, 4))
    t = pyet.asarray(a)
    v = t[1::2, ::-1]
    v += pyet.asarray(np.arange(4.0))
    ref = np.zeros((4, 4))
    ref[1::2, ::-1] += np.arange(4.0)
    np.testing.assert_array_equal(a, ref)


# ---------------------------------------------------------------- evaluate


def test_evaluate_new_tensor():
    x = arr((3, 4))
    e = pyet.asarray(x) * 2 + 1
    r = pyet.evaluate(e)
    assert isinstance(r, pyet.Tensor)
    assert r.shape == (3, 4) and r.dtype == np.float64
    np.testing.assert_array_equal(r.numpy(), x * 2 + 1)
    assert not np.shares_memory(r.numpy(), x)
    np.testing.assert_array_equal(np.asarray(e), x * 2 + 1)  # np.asarray(expr) evaluates too


def test_evaluate_0d_and_empty():
    r = pyet.evaluate(pyet.asarray(np.array(2.0)) + 1)
    assert r.shape == ()
    assert r.numpy() == 3.0
    r = pyet.evaluate(pyet.asarray(np.empty((0, 3), np.int32)) + 1)
    assert r.shape == (0, 3) and r.dtype == np.int32


@pytest.mark.parametrize("kind", ["ndarray", "tensor", "strided_ndarray", "fortran"])
def test_evaluate_out(kind):
    x = arr((3, 4))
    if kind == "strided_ndarray":
        base = np.zeros((6, 8))
        out = base[::2, ::-2]
    elif kind == "fortran":
        out = np.zeros((3, 4), order="F")
    else:
        out = np.zeros((3, 4))
    target = pyet.asarray(out) if kind == "tensor" else out
    res = pyet.evaluate(pyet.sqrt(pyet.asarray(x) * pyet.asarray(x)) - 1, out=target)
    assert res is target
    np.testing.assert_array_equal(out, np.sqrt(x * x) - 1)


def test_evaluate_out_broadcast_and_errors():
    out = np.zeros((3, 4))
    pyet.evaluate(pyet.asarray(np.arange(4.0)) + 1, out=out)
    np.testing.assert_array_equal(out, np.broadcast_to(np.arange(4.0) + 1, (3, 4)))
    before = out.copy()
    with pytest.raises(ValueError, match=r"(?i)shape|broadcast"):
        pyet.evaluate(pyet.asarray(np.ones((3, 5))) + 1, out=out)
    with pytest.raises(ValueError, match=r"(?i)shape|broadcast"):
        pyet.evaluate(pyet.asarray(np.ones((2, 3, 4))) + 1, out=out)
    with pytest.raises(TypeError, match=r"(?i)cast|same_kind|float|int"):
        pyet.evaluate(pyet.asarray(np.ones((3, 4))) + 1, out=np.zeros((3, 4), np.int64))
    np.testing.assert_array_equal(out, before)


# ------------------------------------------------ aliasing (NumPy computes the RHS first)


SCALARS = {"f64": np.float64, "i64": np.int64}


def check_alias(shape, stmt, dtype=np.float64):
    """Run stmt (python source using `a`) with a = Tensor and with a = ndarray copy; compare."""
    base = (arr(shape, seed=11) * 10).astype(dtype)
    mem = base.copy()
    ns_p = {"a": pyet.asarray(mem), "np": pyet, "T": lambda t: pyet.asarray(t.numpy().T), **SCALARS}
    ref = base.copy()
    ns_n = {"a": ref, "np": np, "T": lambda x: x.T, **SCALARS}
    exec(stmt, ns_n)
    exec(stmt, ns_p)
    np.testing.assert_array_equal(mem, ref, err_msg=stmt)
    assert not np.array_equal(mem, base)


ALIAS_CASES = [
    ((5, 5), "a[...] = T(a) + 1"),
    ((4, 6), "a[:, :4] = a[:, 2:] * 2"),
    ((6, 6), "a[...] = T(a) * a"),
    ((6, 6), "a[1:, :] = T(T(a)[:, :-1]) + a[1:, :]"),
    ((20,), "a[1:] = a[:-1] + 1"),
    ((20,), "a[:-1] = a[1:] * 2"),
    ((20,), "a[2:] = a[:-2] + a[1:-1]"),
    ((20,), "a[...] = a[::-1] + a"),
    ((20,), "a[::-1] = a * 3"),
    ((20,), "a[::2] = a[:10] - 1"),
    ((20,), "a[:10] = a[::2] - 1"),
    ((20,), "a[10::-1] = a[5:16] + a[9:]"),
    ((5, 7), "a[1:, 1:] = a[:-1, :-1] * 2 + a[1:, 1:]"),
    ((5, 7), "a[::-1, ::-1] = a + 1"),
    ((5, 7), "a[...] = a[0] + a"),
    ((5, 7), "a[...] = a[:, :1] * 2 + a"),
    ((5, 7), "a[...] = np.maximum(a[::-1], a[:, ::-1])"),
    ((5, 5), "a[...] = np.where(a > 0, T(a), a[::-1])"),
    ((3000,), "a[1:] = a[:-1] + 1"),
    ((3000,), "a[:-1] = a[1:] * 2"),
    ((3000,), "a[...] = a[::-1] + a"),
    ((40, 60), "a[1:, :] = a[:-1, :] + 1"),
    ((64, 64), "a[...] = T(a) + 1"),
    ((10000,), "a[3000:] = a[:-3000] * 2"),
    ((10000,), "a[:-3000] = a[3000:] * 2"),
    ((10000,), "a[::2] = a[::-2] + 1"),
    ((10000,), "a[1::2] = a[:5000] * a[5000:]"),
    ((300, 300), "a[1:, :] = a[:-1, :] * 2"),
    ((300, 300), "a[:, 1:] = a[:, :-1] * 2"),
    ((300, 300), "a[...] = T(a) * 2 + 1"),
    ((300, 300), "a[::-1, 5:] = a[:, :-5] - a[::-1, 5:]"),
    ((5000,), "a[1:] += a[:-1]"),
    ((20,), "a[1:] += a[:-1]"),
    ((20,), "a[:-1] -= a[1:] * 2"),
    ((20,), "a *= a[::-1]"),
    ((5, 5), "a += T(a)"),
    ((5, 5), "a /= T(a) + 100"),
]


@pytest.mark.parametrize("shape,stmt", ALIAS_CASES, ids=[s for _, s in ALIAS_CASES])
def test_aliasing(shape, stmt):
    check_alias(shape, stmt)


@pytest.mark.parametrize(
    "stmt", ["a[1:] = a[:-1] + 1", "a[...] = a[::-1] * 2 + a", "a[:-2] = a[2:] // 3 + a[1:-1]"]
)
def test_aliasing_int(stmt):
    check_alias((50,), stmt, dtype=np.int32)


@pytest.mark.parametrize(
    "stmt",
    [
        "a[...] = a * f64(0.1)",
        "a[...] = a[::-1] * f64(0.1) + a",
        "a[1:] = a[:-1] * f64(3)",
        "a[::2] += a[1::2] * i64(3)",
        "a[...] = np.where(a > 0, a[::-1], f64(2.5))",
        "a[::-1] += a * f64(0.3)",
    ],
)
def test_aliasing_with_cast_into_float32(stmt):
    """A float64 tree written into an overlapping float32 destination."""
    check_alias((50,), stmt, dtype=np.float32)


def test_aliasing_evaluate_out():
    a = arr((6, 6), seed=2)
    ref = a.T + a[::-1]
    pyet.evaluate(pyet.asarray(a.T) + pyet.asarray(a)[::-1], out=a)
    np.testing.assert_array_equal(a, ref)


def test_aliasing_through_separate_tensor_objects():
    """Overlap must be found by memory, not by object identity."""
    a = arr((30,), seed=4)
    ref = a.copy()
    ref[2:] = ref[:-2] * 3
    dst = pyet.asarray(a[2:])
    src = pyet.asarray(a[:-2])
    dst[...] = src * 3
    np.testing.assert_array_equal(a, ref)


@pytest.mark.parametrize(
    "dst_key,src_key",
    [
        (slice(None, None, -1), slice(None)),
        (slice(1, None), slice(None, -1)),
        (slice(None, -1), slice(1, None)),
        (slice(None, None, 2), slice(None, 5)),
        (slice(None, 5), slice(None, None, 2)),
        (slice(9, None, -2), slice(2, 7)),
    ],
    ids=str,
)
@pytest.mark.parametrize("rhs", ["tensor", "ndarray"])
def test_aliasing_plain_copy(dst_key, src_key, rhs):
    """dst[k1] = a[k2] (no expression): as if the right-hand side were copied first.

    (NumPy's own a[::2] = a[:5] does not buffer; the reference therefore copies explicitly.)"""
    a = np.arange(10.0)
    ref = a.copy()
    ref[dst_key] = ref[src_key].copy()
    t = pyet.asarray(a)
    t[dst_key] = t[src_key] if rhs == "tensor" else a[src_key]
    np.testing.assert_array_equal(a, ref)


def test_copy_between_dtypes():
    a = np.zeros(5, np.float32)
    pyet.asarray(a)[...] = pyet.asarray(np.arange(5, dtype=np.int64))
    np.testing.assert_array_equal(a, np.arange(5, dtype=np.float32))
    b = np.zeros(5, np.int32)
    pyet.asarray(b)[::-1] = pyet.asarray(
        np.arange(5, dtype=np.int64) + 2**32
    )  # same_kind: wraps like astype
    np.testing.assert_array_equal(b, (np.arange(5, dtype=np.int64) + 2**32).astype(np.int32)[::-1])


def test_aliasing_without_common_base():
    """Two ndarrays over one buffer that share no base object."""
    buf = bytearray(8 * 100)
    full = np.frombuffer(buf, dtype=np.float64)
    full[...] = np.arange(100.0)
    dst = np.frombuffer(buf, dtype=np.float64, count=90, offset=80)  # elements 10..99
    src = np.frombuffer(buf, dtype=np.float64, count=90)  # elements 0..89
    assert dst.base is not src.base
    pyet.asarray(dst)[...] = pyet.asarray(src) + 1
    np.testing.assert_array_equal(
        np.frombuffer(buf, dtype=np.float64), np.r_[np.arange(10.0), np.arange(90.0) + 1]
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 10, 1000, 20000])
def test_identical_view_weight_update(n, dtype):
    """The seed's update: w[...] = -eta * (g + lam * w), in place, equal to NumPy."""
    rng = np.random.default_rng(n)
    w = rng.standard_normal(n).astype(dtype)
    g = rng.standard_normal(n).astype(dtype)
    eta, lam = 0.1, 0.01
    ref = -eta * (g + lam * w)
    ptr = w.__array_interface__["data"][0]
    tw, tg = pyet.asarray(w), pyet.asarray(g)
    tw[...] = -eta * (tg + lam * tw)
    assert w.__array_interface__["data"][0] == ptr
    assert ref.dtype == w.dtype
    np.testing.assert_array_equal(w, ref)
    tw[...] = tw * tw + tw  # the identical view read several times
    np.testing.assert_array_equal(w, ref * ref + ref)
