"""Fast paths that cut fixed costs: joins of plain leaves through NumPy's
concatenate, pad's common arguments, take's one-pass index check.  Each
against NumPy, with the general path's results and errors."""

import inspect
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyet


def test_joins_of_leaves_into_every_destination():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 6)), rng.standard_normal((5, 6))
    A, B = pyet.asarray(a), pyet.asarray(b[:, ::-1])
    for axis in (0, 1, -1):
        want = np.concatenate([a, b[:, ::-1]], axis)
        np.testing.assert_array_equal(np.asarray(pyet.concatenate([A, B], axis)), want)
        buf = np.full((want.shape[0] + 2, 2 * want.shape[1] + 2), -9.0)
        dst = buf[1:-1, 1:-1:2]  # strided, inside sentinels
        pyet.asarray(dst)[...] = pyet.concatenate([A, B], axis)
        np.testing.assert_array_equal(dst, want)
        assert (buf[0] == -9).all() and (buf[-1] == -9).all() and (buf[1:-1, 2:-1:2] == -9).all()
    for axis in (0, 1, 2):
        np.testing.assert_array_equal(np.asarray(pyet.stack([A, B], axis)),
                                      np.stack([a, b[:, ::-1]], axis))
    # mixed dtypes: the pieces cast by pyet's passes, as NumPy promotes
    i = pyet.asarray(np.arange(30, dtype=np.int32).reshape(5, 6))
    got = np.asarray(pyet.concatenate([A, i], 0))
    np.testing.assert_array_equal(got, np.concatenate([a, np.arange(30).reshape(5, 6)], 0))


def test_join_into_a_destination_its_pieces_read():
    x = np.arange(12.0).reshape(2, 6)
    X = pyet.asarray(x)
    want = np.concatenate([x[:, :3], x[:, 3:]], 0)
    out = pyet.asarray(x.reshape(4, 3))  # the same memory as the pieces
    out[...] = pyet.concatenate([X[:, :3], X[:, 3:]], 0)
    np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize("width", [0, 1, 3, (1, 2), ((0, 1), (2, 3))])
@pytest.mark.parametrize("value", [0, 1.5, np.float32(2.5), -3])
def test_pad_arguments(width, value):
    a = np.arange(20.0, dtype=np.float32).reshape(4, 5)
    got = np.asarray(pyet.pad(pyet.asarray(a), width, value))
    w = width if isinstance(width, int) else (
        np.asarray(width) if np.ndim(width) == 2 else [(width[0],) * 2, (width[1],) * 2])
    np.testing.assert_array_equal(got, np.pad(a, w, constant_values=value))


def test_pad_errors():
    x = pyet.asarray(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="non-negative"):
        pyet.pad(x, -1)
    with pytest.raises(ValueError, match="must be a scalar"):
        pyet.pad(x, 1, np.zeros(2))
    with pytest.raises(TypeError, match="complex"):
        pyet.pad(x, 1, 1j)
    with pytest.raises(ValueError, match="pad_width must be an int"):
        pyet.pad(x, 1.5)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint16, np.intp])
def test_take_indices_every_integer_dtype(dtype):
    W = np.arange(40.0).reshape(10, 4)
    idx = np.array([0, 9, 3, 3, 5], dtype)
    np.testing.assert_array_equal(np.asarray(pyet.take(idx, pyet.asarray(W))), W[idx])
    if np.dtype(dtype).kind == "i":
        neg = np.array([[-1, -10], [2, -3]], dtype)
        np.testing.assert_array_equal(np.asarray(pyet.take(neg, pyet.asarray(W))), W[neg])


@pytest.mark.parametrize("size", [0, 1, 3, 4, 5, 17, 4099, 70_000])
def test_take_index_wrapping_every_length(size):
    # nn.wrapped_indices (pyet_wrap_indices' vector loop and its tail, the
    # GIL released past 65536): the negatives wrapped, the least and greatest
    # before wrapping, the extremes of int64 included
    from pyet._kernels import nn
    rng = np.random.default_rng(size)
    x = rng.integers(-1000, 1000, size)
    if size >= 3:
        x[rng.integers(0, size, 2)] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max]
    out, lo, hi = nn.wrapped_indices(x, 1000)
    if size:
        assert (lo, hi) == (x.min(), x.max())
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(out, np.where(x < 0, x + 1000, x))
    else:
        assert out.size == 0
    # a valid vector through take, against NumPy
    W = np.arange(4000.0).reshape(1000, 4)
    ok = rng.integers(-1000, 1000, size)
    np.testing.assert_array_equal(np.asarray(pyet.take(ok, pyet.asarray(W))), W[ok])


def test_take_index_errors_name_the_bad_index():
    W = pyet.asarray(np.zeros((10, 4)))
    with pytest.raises(IndexError,
                       match="take: index 10 is out of bounds for axis 0 of W of size 10"):
        pyet.take(np.array([1, 10, -11]), W)  # the greatest is reported first
    with pytest.raises(IndexError, match="index -11 is out of bounds"):
        pyet.take(np.array([1, -11]), W)
    with pytest.raises(TypeError, match="indices must be integers"):
        pyet.take(np.array([1.0]), W)
    W.numpy()[...] = np.arange(40.0).reshape(10, 4)
    idx = np.array([1, 2, 3])
    t = pyet.take(idx, W)
    idx[0] = 99  # the node keeps the values checked when it was built
    np.testing.assert_array_equal(np.asarray(t), W.numpy()[[1, 2, 3]])
    strided = np.arange(10, dtype=np.int64)[::-3]
    np.testing.assert_array_equal(np.asarray(pyet.take(strided, W)), W.numpy()[strided])


def test_kept_plan_replays_a_join_of_leaves_over_new_values():
    # NumPy's join is not recorded: while a plan records, pieces are assigned
    a, b = np.zeros((2, 3)), np.zeros((2, 3))
    plan = pyet.EvalPlan()
    h = plan.register(pyet.stack([pyet.asarray(a), pyet.asarray(b)], 1) * 1.0)
    out = np.empty((4, 3))
    plan.assign(out, pyet.concatenate([pyet.asarray(a), pyet.asarray(b)], 0))
    for step in range(4):
        a[...], b[...] = step, -step
        plan.run(keep=True)
        np.testing.assert_array_equal(h.value.numpy(), np.stack([a, b], 1))
        np.testing.assert_array_equal(out, np.concatenate([a, b], 0))


def test_evaluate_into_every_kind_of_out():
    # evaluate(tree, out=...) straight to the engine: a Tensor, an ndarray (a
    # strided view between sentinels), a cast, and errors before any write
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    e = pyet.asarray(a) * pyet.asarray(b) + 1
    want = a * b + 1
    t = pyet.empty((4, 5))
    assert pyet.evaluate(e, out=t) is t
    np.testing.assert_array_equal(t.numpy(), want)
    buf = np.full((6, 12), -9.0)
    dst = buf[1:-1, 1:-1:2]
    assert pyet.evaluate(e, out=dst) is dst
    np.testing.assert_array_equal(dst, want)
    assert (buf[0] == -9).all() and (buf[-1] == -9).all() and (buf[1:-1, 2:-1:2] == -9).all()
    f32 = np.zeros((4, 5), np.float32)
    with pytest.raises(TypeError):  # same_kind: float64 into float32 is allowed, int is not
        pyet.evaluate(e, out=np.zeros((4, 5), np.int64))
    pyet.evaluate(e, out=f32)
    np.testing.assert_array_equal(f32, want.astype(np.float32))
    with pytest.raises(TypeError, match="destination"):
        pyet.evaluate(e, out=[0.0] * 20)
    ro = np.zeros((4, 5))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        pyet.evaluate(e, out=ro)
    assert (ro == 0).all()


def test_structure_keys_of_one_and_two_children():
    # operators and the op functions give a structure one key (op_key packs
    # it); op, dtypes, arity and child order each make another
    a32 = pyet.asarray(np.ones(3, np.float32))
    A, B = pyet.asarray(np.ones(3)), pyet.asarray(np.zeros(3))
    assert (A * B)._key == pyet.multiply(A, B)._key == np.multiply(A, B)._key
    assert (-A)._key == pyet.negative(A)._key
    assert (A * A)._key == (A * B)._key  # (leaves of one dtype: one structure)
    keys = [(A * B)._key, (A + B)._key, (A * a32)._key, (a32 * A)._key,
            (A * 2)._key, (A * 2.0)._key, (a32 * 2.0)._key, pyet.negative(A)._key,
            pyet.negative(a32)._key, (A * B * B)._key, (A * (B * B))._key,
            pyet.sqrt(A)._key, pyet.exp(A)._key, A.astype(np.float32)._key,
            A.astype(np.int32)._key]
    assert len(set(keys)) == len(keys)
    # each its own program: evaluated as NumPy computes them
    a, b = np.arange(1.0, 4.0), np.arange(4.0, 7.0)
    A, B = pyet.asarray(a), pyet.asarray(b)
    for got, want in [(A - B, a - b), (B - A, b - a), (A / B, a / b), (B / A, b / a),
                      (-(A - B), -(a - b)), (pyet.sqrt(B - A), np.sqrt(b - a))]:
        np.testing.assert_array_equal(np.asarray(got), want)


def test_resolved_dtypes_cached_by_weakness():
    # one table slot per (op, child dtype, weakness): a Python scalar, a NumPy
    # scalar and a 0-d array resolve as NumPy resolves them, asked again too
    i32 = pyet.asarray(np.arange(3, dtype=np.int32))
    for _ in range(2):
        assert (i32 + 1).dtype == np.int32
        assert (i32 + 1.5).dtype == np.float64
        assert (i32 + np.int64(1)).dtype == np.int64
        assert (i32 + np.float32(1)).dtype == np.float64
        assert (i32 > 1).dtype == np.bool_
        assert pyet.negative(i32).dtype == np.int32
        assert pyet.sqrt(i32).dtype == np.float64
        with pytest.raises(TypeError):
            i32 << 1.5


def test_special_node_keys_made_when_asked():
    # a special node's key is made when first asked (a root written straight
    # into dst never asks): by kernel class, parameters, shape, dtype and
    # children, the same each time, and in trees the programs it selects
    rng = np.random.default_rng(1)
    w = rng.standard_normal((7, 3))
    W, W32 = pyet.asarray(w), pyet.asarray(w.astype(np.float32))
    i3, j3, i4 = np.array([0, 6, -1]), np.array([2, 2, 5]), np.array([1, 0, 3, 3])
    t = pyet.take(i3, W)
    assert t._key == t._key == pyet.take(j3, W)._key  # (indices' values: not structure)
    flips = [pyet.flip(pyet.take(i3, W), ax) for ax in (0, 1)]  # views of a special node
    keys = [t._key, pyet.take(i4, W)._key, pyet.take(i3, W32)._key,
            pyet.take(i3, W * 2)._key, pyet.take(i3.reshape(3, 1), W)._key,
            pyet.concatenate([W, W], 0)._key, pyet.concatenate([W, W], 1)._key,
            flips[0]._key, flips[1]._key]
    assert len(set(keys)) == len(keys)
    # keys asked first inside trees: each tree computes its own value
    for ax, f in enumerate(flips):
        np.testing.assert_array_equal(np.asarray(f * 2 + 1), np.flip(w[i3], ax) * 2 + 1)
    for idx in (i3, i4, j3):
        out = np.full((len(idx) + 2, 3), -7.0)
        pyet.asarray(out)[1:-1] = pyet.take(idx, W) * 2 - pyet.take(idx[::-1], W)
        np.testing.assert_array_equal(out[1:-1], w[idx] * 2 - w[idx[::-1]])
        assert (out[0] == -7).all() and (out[-1] == -7).all()


@pytest.mark.parametrize("lead", [(), (1,), (2,)])
def test_roots_straight_into_dst_only_of_its_shape(lead):
    # a special root (take) and a hoisted ufunc (F) go straight into dst only
    # when dst has the root's shape (has_shape, dims read in place); a
    # broadcast destination takes the general path, 0-d roots included
    rng = np.random.default_rng(2)
    w, a = rng.standard_normal((5, 3)), rng.standard_normal(3)
    W, A = pyet.asarray(w), pyet.asarray(a)
    idx = np.array([4, 0])
    for root, want in [(pyet.take(idx, W), w[idx]),
                       (pyet.F(np.expm1, A) + 1, np.expm1(a) + 1),
                       (pyet.F(np.expm1, A[1]) * 2, np.expm1(a[1]) * 2)]:
        buf = np.full((8,) + lead + want.shape, -3.0)
        dst = buf[6:1:-2]  # negative step, inside sentinels
        pyet.asarray(dst)[...] = root
        np.testing.assert_array_equal(dst, np.broadcast_to(want, dst.shape))
        assert (buf[1::2] == -3).all() and (buf[0] == -3).all()
    with pytest.raises(ValueError):
        pyet.asarray(np.zeros(6))[...] = pyet.take(idx, W)  # same size, other shape


def test_user_ufuncs_asked_again_in_any_order():
    # a ufunc's result dtype, whether it runs in place and which NumPy loop it
    # takes are remembered per (ufunc, operand dtypes, result dtype): many asked
    # in turns, as NumPy computes each (the slots they share are re-filled)
    rng = np.random.default_rng(3)
    fns = [np.expm1, np.sqrt, np.negative, np.sin, np.floor, np.absolute, np.isnan,
           np.square, np.cbrt, np.sign, np.exp2, np.log1p, np.positive, np.rint]
    xs = [rng.uniform(0.5, 2, 40).astype(dt) for dt in (np.float64, np.float32)] + \
        [rng.integers(-5, 5, 40).astype(dt) for dt in (np.int32, np.int64)]
    for rnd in range(2):
        for fn in fns if rnd == 0 else fns[::-1]:
            for x in xs:
                try:
                    want = fn(x)
                except TypeError:  # (no loop for this dtype: pyet.F says so too)
                    with pytest.raises(TypeError):
                        pyet.F(fn, pyet.asarray(x))
                    continue
                assert pyet.F(fn, pyet.asarray(x)).dtype == want.dtype
                buf = np.zeros(42, want.dtype)
                pyet.asarray(buf[1:-1])[...] = pyet.F(fn, pyet.asarray(x))
                np.testing.assert_array_equal(buf[1:-1], want)
                assert buf[0] == 0 and buf[-1] == 0
                np.testing.assert_array_equal(  # (a pass over it: the loop in blocks)
                    np.asarray(pyet.F(fn, pyet.asarray(x)) * 1), want * 1)


def test_user_function_keys():
    # a user function's node of one or two operands: op_key's packed key, by
    # operand count, dtypes and order (the function itself is bound per call);
    # NumPy's own ufunc run in the pass as its C loop has itself in the key
    A, B = pyet.asarray(np.ones(3)), pyet.asarray(np.ones(3, np.float32))
    assert pyet.F(lambda x: x + 1, A)._key == pyet.F(lambda x: x * 2, A)._key
    assert pyet.F(np.exp, A)._key != pyet.F(np.expm1, A)._key
    keys = [pyet.F(np.exp, A)._key, pyet.F(np.exp, B)._key, pyet.F(np.add, A, B)._key,
            pyet.F(np.add, B, A)._key, pyet.F(np.add, A, A)._key, (-A)._key,
            pyet.F(np.exp, A + 1)._key, pyet.F(np.exp, A, dtype=np.float32)._key,
            pyet.F(lambda x, y, z: x + y + z, A, A, A)._key]
    assert len(set(keys)) == len(keys)
    a = np.arange(3.0)
    got = pyet.F(np.exp, pyet.asarray(a)) + pyet.F(np.expm1, pyet.asarray(a))
    np.testing.assert_array_equal(np.asarray(got), np.exp(a) + np.expm1(a))


def _flip_layouts():
    base = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)
    ro = base.copy()
    ro.flags.writeable = False
    rec = np.zeros((5, 2), dtype=[("a", "i1"), ("b", "f8")])  # a packed field: 9-byte steps
    return [base, base.T, base[:, ::2], base[::-1, :, 1:], base[:, :0], base[:1],
            np.asfortranarray(base), np.zeros((3, 0, 2)), np.zeros((1, 1)),
            base.view(np.int64)[:, 1:, ::-3], ro, rec["b"], np.ones(7, bool)[::2]]


@pytest.mark.parametrize("k", range(13))
def test_flip_view_made_in_c_is_numpys(k):
    # VIEWS['flip'] of a plain array: NumPy's slicing view exactly (shape,
    # strides, data pointer, flags, base), and flip trees over such leaves as
    # NumPy computes them, into a destination they read too
    from pyet._core import core
    a = _flip_layouts()[k]
    for axes in [(0,), (a.ndim - 1,), tuple(range(a.ndim)), (0, 0)]:
        got = core.VIEWS["flip"](a, axes)
        want = a[tuple(slice(None, None, -1) if d in axes else slice(None)
                       for d in range(a.ndim))]
        assert (got.shape, got.strides, got.dtype) == (want.shape, want.strides, want.dtype)
        assert got.__array_interface__["data"] == want.__array_interface__["data"]
        assert str(got.flags) == str(want.flags) and got.base is want.base
    for ax in range(a.ndim):
        want = np.flip(a, ax) * 2
        np.testing.assert_array_equal(np.asarray(pyet.flip(pyet.asarray(a) * 2, ax)), want)
        if a.flags.writeable and a.dtype == np.float64:
            c = a.copy()
            pyet.asarray(c)[...] = pyet.flip(pyet.asarray(c) + 0.0, ax)  # (aliasing dst)
            np.testing.assert_array_equal(c, np.flip(a, ax))
    with pytest.raises(np.exceptions.AxisError):
        core.VIEWS["flip"](a, (a.ndim,))


@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.int64])
@pytest.mark.parametrize("nbytes", [56, 64, 72, 256])
def test_take_rows_of_a_line_or_more(dtype, nbytes):
    # contiguous rows of 64 bytes or more: one memcpy each (the layout tested
    # once); shorter or strided rows copy_row's way. Rows padded, reversed,
    # into reversed and column-strided destinations, against NumPy's W[idx]
    from pyet._kernels import nn
    m = nbytes // np.dtype(dtype).itemsize
    rng = np.random.default_rng(nbytes)
    big = (rng.standard_normal((9, m + 3)) * 10).astype(dtype)
    idx = np.array([8, 0, 3, 3, 5])
    # destination columns: contiguous, reversed, every other (copy_row's loop)
    cols = [slice(1, 1 + m), slice(m, 0, -1), slice(1, 1 + 2 * m, 2)]
    for w in (np.ascontiguousarray(big[:, :m]), big[:, :m], big[::-1, 2:m + 2],
              big[:, :m][:, ::-1]):
        for col in cols:
            buf = np.zeros((7, 2 * m + 2), dtype)
            out = buf[5:0:-1, col]
            nn.take_into(out, w, idx)
            np.testing.assert_array_equal(out, w[idx])
            mask = np.ones(buf.shape, bool)
            mask[5:0:-1, col] = False
            assert not buf[mask].any()  # (sentinels: zeros)
        D = np.zeros((5, m), dtype)
        pyet.asarray(D)[...] = pyet.take(idx, pyet.asarray(w))
        np.testing.assert_array_equal(D, w[idx])


@given(st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.booleans()), max_size=6),
       st.integers(0, 6), st.integers(0, 6))
@settings(max_examples=150, deadline=None)
def test_broadcast_shapes_are_numpys(dims, cut_a, cut_b):
    """The node's shape is NumPy's broadcast of its operands' (its own tuple
    returned where it is one operand's shape); mismatches name both shapes."""
    a_shape = tuple(1 if one else n for n, one, _ in dims)[cut_a:]
    b_shape = tuple(1 if one else n for n, _, one in dims)[cut_b:]
    A, B = pyet.asarray(np.zeros(a_shape)), pyet.asarray(np.ones(b_shape))
    want = np.broadcast_shapes(a_shape, b_shape)
    for got in ((A + B).shape, pyet.maximum(B, A).shape):
        assert got == want
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(pyet.maximum(A, B))),
                                  np.maximum(np.zeros(a_shape), np.ones(b_shape)))


def test_broadcast_shapes_errors():
    A, B = pyet.asarray(np.zeros((2, 3))), pyet.asarray(np.zeros((4, 1, 2)))
    with pytest.raises(ValueError, match=r"could not be broadcast together with shapes "
                                         r"\(2,3\) \(4,1,2\)"):
        A + B
    deep = pyet.asarray(np.zeros(1)).reshape((1,) * 65)
    with pytest.raises(ValueError, match="at most 64 dimensions .NumPy's limit., got 65"):
        deep + A


def test_generated_functions_fail_as_python_functions_do():
    """pyet's compiled op functions raise Python's own messages for a bad call."""
    def maximum(x1, x2):
        pass

    def sin(x):
        pass

    def own_name(exc):  # (Python names the local function by its qualified name)
        return str(exc).split(".<locals>.")[-1]

    a = np.ones(3)
    for mine, python in ((pyet.maximum, maximum), (pyet.sin, sin)):
        n = 1 if python is sin else 2
        calls = [(), (a,) * (n + 1), (a,) * (n - 1)]
        for args in calls:
            with pytest.raises(TypeError) as want:
                python(*args)
            with pytest.raises(TypeError, match=f"^{re.escape(own_name(want.value))}$"):
                mine(*args)
        for kwargs in ({"y": a}, {"x2": a} if n == 2 else {"x1": a}):
            with pytest.raises(TypeError) as want:
                python(**kwargs)
            with pytest.raises(TypeError, match=f"^{re.escape(own_name(want.value))}$"):
                mine(**kwargs)
    assert str(inspect.signature(pyet.maximum)) == "(x1, x2)"
    assert str(inspect.signature(pyet.sin)) == "(x)"
    assert pyet.maximum.__name__ == "maximum" and pyet.maximum.__module__ == "pyet"
