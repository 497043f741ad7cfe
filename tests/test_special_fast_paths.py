"""The fast paths that cut special roots' fixed Python cost: the engine's one
check that sends a special root over leaves straight to its kernel
(into_directly), the node family decided at construction, a small leaf's
ufunc reduction with arguments made once, joins as block copies
(core.join_into), stack without concatenate's checks, and evaluate()'s
aligned allocation.  Each against NumPy on the layouts it serves and on the
ones it hands to the general path, with the general path's errors."""

import numpy as np
import pytest

import pyet
from pyet._core import core

RNG = np.random.default_rng(15)


def _dsts(shape, dtype):
    """(name, destination, the buffer around it, a mask of dst inside the
    buffer): C, Fortran, strided, negative steps."""
    out = []
    c = np.full(shape, -7, dtype)
    out.append(("C", c, c, np.ones(shape, bool)))
    f = np.asfortranarray(np.full(shape, -7, dtype))
    out.append(("F", f, f, np.ones(shape, bool)))
    if len(shape):
        big = tuple(2 * d + 1 for d in shape)
        buf = np.full(big, -7, dtype)
        key = tuple(slice(1, 1 + 2 * d, 2) for d in shape)
        mask = np.zeros(big, bool)
        mask[key] = True
        out.append(("strided", buf[key], buf, mask))
        neg = np.full(shape, -7, dtype)
        out.append(("negative", neg[(slice(None, None, -1),) * len(shape)], neg,
                    np.ones(shape, bool)))
    return out


def _check_into(build, want, dtype=None):
    """dst[...] = build() for each destination layout: want's bits, and nothing
    written outside dst."""
    want = np.asarray(want)
    for name, dst, buf, mask in _dsts(want.shape, dtype or want.dtype):
        before = buf.copy()
        pyet.asarray(dst)[...] = build()
        np.testing.assert_array_equal(dst, want, err_msg=name)
        np.testing.assert_array_equal(buf[~mask], before[~mask], err_msg=name)


# ----------------------------------------------------------- special roots

def test_take_root_every_destination_layout():
    w = RNG.standard_normal((50, 7)).astype(np.float32)
    idx = RNG.integers(-50, 50, 13)
    for W in (w, w[::-1], np.asfortranarray(w), w[:, ::2]):
        _check_into(lambda W=W: pyet.take(idx, W), np.take(W, idx, axis=0))
    # 2-D indices and a 3-D table: the kernel's reshapes
    w3 = RNG.standard_normal((9, 2, 3))
    idx2 = RNG.integers(0, 9, (4, 5))
    _check_into(lambda: pyet.take(idx2, w3), w3[idx2])
    # no rows
    _check_into(lambda: pyet.take(np.zeros(0, np.int64), w), w[:0])


def test_take_errors_before_any_write():
    w = np.ones((4, 3))
    dst = np.full((2, 3), 5.0)
    with pytest.raises(IndexError, match="take: index 4 is out of bounds for axis 0 of W "
                                         "of size 4"):
        pyet.asarray(dst)[...] = pyet.take([0, 4], w)
    with pytest.raises(ValueError):
        pyet.asarray(np.empty((3, 3)))[...] = pyet.take([0, 1], w)  # wrong shape
    assert (dst == 5).all()


def test_special_root_reading_its_destination_goes_the_general_way():
    # dst overlaps a leaf: the kernel never writes what it still reads
    w = np.arange(24.0).reshape(8, 3)
    want = w[[7, 6, 5, 4, 3, 2, 1, 0]]
    W = pyet.asarray(w)
    W[...] = pyet.take([7, 6, 5, 4, 3, 2, 1, 0], W)
    np.testing.assert_array_equal(w, want)
    a = np.arange(16.0).reshape(4, 4)
    want = a.sum(axis=0, keepdims=True)
    pyet.asarray(a[:1])[...] = pyet.sum(pyet.asarray(a), axis=0, keepdims=True)
    np.testing.assert_array_equal(a[:1], want)


def test_special_root_of_another_dtype_is_cast():
    # not dst's dtype: computed aside, then cast by a pass (as NumPy's casting)
    w = RNG.standard_normal((6, 4)).astype(np.float32)
    dst = np.empty((3, 4))
    pyet.asarray(dst)[...] = pyet.take([1, 3, 5], w)
    np.testing.assert_array_equal(dst, w[[1, 3, 5]].astype(np.float64))
    a = RNG.integers(-9, 9, (5, 6)).astype(np.int32)
    dst = np.empty(6)
    pyet.asarray(dst)[...] = pyet.sum(a, axis=0)
    np.testing.assert_array_equal(dst, a.sum(axis=0).astype(np.float64))


def test_special_roots_with_scalar_children_and_inner_trees():
    x = RNG.standard_normal((5, 8)).astype(np.float32)
    lab = RNG.integers(0, 8, 5)
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    want = np.asarray(pyet.softmax_xent_grad(logp, lab, 0.5, axis=1))
    _check_into(lambda: pyet.softmax_xent_grad(pyet.asarray(logp), lab, 0.5, axis=1), want)
    # class indices of every integer dtype, negative ones counted from the end
    onehot = np.eye(8, dtype=np.float32)[lab]
    want = np.float32(0.5) * (np.exp(logp) * onehot.sum(1, keepdims=True) - onehot)
    for idx in (lab, lab - 8, (lab - 8).astype(np.int32), lab.astype(np.uint8),
                np.repeat(lab, 2)[::2]):
        got = np.asarray(pyet.softmax_xent_grad(pyet.asarray(logp), idx, 0.5, axis=1))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    for bad in (np.array([0, 1, 2, 3, 8]), np.array([0, -9, 1, 2, 3]),
                np.array([0, -9, 1, 2, 3], np.int32)):
        with pytest.raises(IndexError, match=r"softmax_xent_grad: class index out of range "
                                             r"\[-8, 8\)"):
            pyet.softmax_xent_grad(logp, bad, 0.5, axis=1)
    # a tree below the special root: the general way (its value computed first)
    a = RNG.standard_normal((4, 5))
    _check_into(lambda: pyet.sum(pyet.asarray(a) * 2 + 1, axis=1), (a * 2 + 1).sum(axis=1))


def test_counters_see_each_family():
    a = RNG.standard_normal((6, 6))
    dst, out = np.empty(6), np.empty((6, 6))
    pyet.stats(reset=True)
    pyet.asarray(dst)[...] = pyet.sum(a, axis=0)
    pyet.asarray(out)[...] = pyet.take([0, 1, 2, 3, 4, 5], a)
    pyet.asarray(out)[...] = pyet.dot(a, a)
    s = pyet.stats()
    assert (s["reductions"], s["special_nodes"], s["gemm_calls"]) == (1, 1, 1)
    np.testing.assert_array_equal(out, np.dot(a, a))


def test_im2col_root_every_destination_layout():
    img = RNG.standard_normal((2, 3, 6, 5)).astype(np.float32)
    win = np.lib.stride_tricks.sliding_window_view(img, (3, 3), axis=(2, 3))
    want = win.transpose(1, 4, 5, 0, 2, 3).reshape(3 * 9, 2 * 4 * 3)
    _check_into(lambda: pyet.unpack_patch2col(img, 3, 3), want)
    # one image (C, H, W) and leading axes folded into N; int and pair strides
    for shape in ((3, 6, 5), (2, 2, 3, 6, 5)):
        im = RNG.standard_normal(shape).astype(np.float32)
        win = np.lib.stride_tricks.sliding_window_view(im.reshape((-1,) + shape[-3:]), (3, 3),
                                                       axis=(2, 3))
        n = win.shape[0]
        cols = win.transpose(1, 4, 5, 0, 2, 3).reshape(3 * 9, n * 4 * 3)
        _check_into(lambda im=im: pyet.unpack_patch2col(im, 3, 3), cols)
        _check_into(lambda im=im: pyet.unpack_patch2col(im, 3, 3, stride=(1, 1)), cols)
    with pytest.raises(ValueError, match="unpack_patch2col: stride must be an int or a pair"):
        pyet.unpack_patch2col(img, 3, 3, stride=(1, 1, 1))
    with pytest.raises(ValueError, match="unpack_patch2col: ky must be >= 1, got 0"):
        pyet.unpack_patch2col(img, 0, 3)
    # col2im (images folded to (N, C, H, W)) is not written as its own shape
    col = RNG.standard_normal(want.shape).astype(np.float32)
    got = np.asarray(pyet.pack_col2patch(col, (2, 3, 6, 5), 3, 3))
    _check_into(lambda: pyet.pack_col2patch(col, (2, 3, 6, 5), 3, 3), got)


# ------------------------------------------------------------- reductions

@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min", "mean", "all", "any"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_small_leaf_reductions_every_axis_and_layout(kind, dtype):
    a = (RNG.standard_normal((4, 5, 6)) * 3).astype(dtype)
    for leaf in (a, a[::-1, :, ::2], np.asfortranarray(a), a.transpose(2, 0, 1)):
        for axis in (None, 0, 1, 2, (0, 2), -1):
            for keepdims in (False, True):
                want = getattr(np, kind)(leaf, axis=axis, keepdims=keepdims)
                if kind in ("sum", "mean") and np.dtype(dtype).kind == "f":
                    got = np.asarray(getattr(pyet, kind)(leaf, axis=axis, keepdims=keepdims))
                    np.testing.assert_allclose(got, want, rtol=1e-5)
                    continue
                _check_into(lambda leaf=leaf, axis=axis, keepdims=keepdims: getattr(
                    pyet, kind)(leaf, axis=axis, keepdims=keepdims), want)


def test_small_leaf_sums_are_numpys_bits():
    # the ufunc reduce NumPy's np.sum calls: the same pairwise sums
    for dtype in (np.float32, np.float64):
        a = RNG.standard_normal((16, 16, 16)).astype(dtype)
        for axis in (None, 0, 1, 2):
            _check_into(lambda a=a, axis=axis: pyet.sum(a, axis=axis), np.sum(a, axis=axis))
            _check_into(lambda a=a, axis=axis: pyet.max(a, axis=axis), np.max(a, axis=axis))


def test_reductions_of_empty_and_0d_leaves():
    e = np.zeros((0, 3))
    _check_into(lambda: pyet.sum(e, axis=0), np.sum(e, axis=0))
    _check_into(lambda: pyet.prod(e, axis=0), np.prod(e, axis=0))
    z = np.array(2.5)
    _check_into(lambda: pyet.sum(z), np.sum(z))
    _check_into(lambda: pyet.max(z), np.max(z))
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum "
                                         "which has no identity"):
        pyet.max(e, axis=0)
    with pytest.raises(np.exceptions.AxisError):
        pyet.sum(e, axis=2)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        pyet.sum(e, axis=(0, 0))


def test_reduction_layouts_cached_by_dtype_code_stay_apart():
    # float32 and float64 of one shape: different kernels' result dtypes
    a64 = RNG.standard_normal((3, 4))
    a32 = a64.astype(np.float32)
    assert pyet.sum(a64, axis=0).dtype == np.float64
    assert pyet.sum(a32, axis=0).dtype == np.float32
    assert pyet.sum(a32.astype(np.int32), axis=0).dtype == np.int64
    assert pyet.mean(a32.astype(np.int32), axis=0).dtype == np.float64


# ------------------------------------------------------------------ joins

@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64, np.bool_])
def test_joins_of_contiguous_leaves_block_copies(dtype):
    def arr(shape):
        return (RNG.standard_normal(shape) > 0 if dtype is np.bool_
                else (RNG.standard_normal(shape) * 9).astype(dtype))

    for shapes, axis in (([(3, 40), (5, 40)], 0), ([(4, 16), (4, 24), (4, 8)], 1),
                         ([(2, 3, 20), (2, 3, 12)], 2), ([(0, 40), (3, 40)], 0),
                         ([(2, 3, 16), (2, 0, 16), (2, 1, 16)], 1)):
        pieces = [arr(s) for s in shapes]
        _check_into(lambda pieces=pieces, axis=axis: pyet.concatenate(pieces, axis),
                    np.concatenate(pieces, axis))


def test_joins_hand_other_layouts_to_numpy_or_passes():
    a, b = RNG.standard_normal((6, 16)), RNG.standard_normal((6, 16))
    for pa, pb in ((a, b[::-1]), (np.asfortranarray(a), b), (a[:, ::2], b[:, ::2]),
                   (a, b.astype(np.float32)), (a.astype(np.int32), b)):
        for axis in (0, 1):
            want = np.concatenate([pa, pb], axis)
            _check_into(lambda pa=pa, pb=pb, axis=axis: pyet.concatenate([pa, pb], axis), want)
    # stacks: short blocks (NumPy's strided copies) and long ones
    for axis in (0, 1, 2, -1):
        _check_into(lambda axis=axis: pyet.stack([a, b, a], axis), np.stack([a, b, a], axis))


def test_join_into_refuses_without_writing():
    a, b = np.ones((2, 16)), np.full((3, 16), 2.0)
    dst = np.full((5, 16), -1.0)
    assert not core.join_into(dst[::-1], [a, b], 0)       # dst not C-contiguous
    assert not core.join_into(dst, [a, b[:, ::-1]], 0)    # a piece not C-contiguous
    assert not core.join_into(dst, [a, b.astype(np.float32)], 0)  # another dtype
    assert not core.join_into(dst, [a, b[:2]], 0)         # pieces short of dst
    assert not core.join_into(dst, [a, dst[2:]], 0)       # a piece in dst's memory
    assert not core.join_into(dst, [a, b], 2)             # no such axis
    # short blocks (but a pair of 4- or 8-byte ones: _join_pair)
    assert not core.join_into(np.full((2, 3), -1.0), [np.ones((2, 1))] * 3, 1)
    assert not core.join_into(np.full((2, 3), -1.0), [np.ones((2, 1)), np.ones((2, 2))], 1)
    assert (dst == -1).all()
    assert core.join_into(dst, [a, b], 0)
    np.testing.assert_array_equal(dst, np.concatenate([a, b], 0))


def test_join_errors_keep_numpys_messages():
    a, b = np.ones((2, 3)), np.ones((2, 4))
    with pytest.raises(ValueError, match="all the input array dimensions except for the "
                                         "concatenation axis must match exactly, but along "
                                         "dimension 1, the array at index 0 has size 3 and "
                                         "the array at index 1 has size 4"):
        pyet.concatenate([a, b], 0)
    with pytest.raises(ValueError, match="all input arrays must have the same shape: the "
                                         r"array at index 0 has shape \(2,3\) and the array "
                                         r"at index 1 has shape \(2,4\)"):
        pyet.stack([a, b])
    with pytest.raises(np.exceptions.AxisError):
        pyet.stack([a, a], 3)
    with pytest.raises(ValueError, match="all the input arrays must have same number of "
                                         "dimensions, but the array at index 0 has 2 "
                                         r"dimension\(s\) and the array at index 1 has 1"):
        pyet.concatenate([a, np.ones(3)], 0)
    for axis in (2, -3, np.int64(2)):
        with pytest.raises(np.exceptions.AxisError):
            pyet.concatenate([a, a], axis)
    for axis in (np.int64(1), -1, True):
        np.testing.assert_array_equal(np.asarray(pyet.concatenate([a, b], axis)),
                                      np.concatenate([a, b], int(axis)))
    with pytest.raises(ValueError, match="zero-dimensional arrays cannot be concatenated"):
        pyet.concatenate([np.float64(1), np.float64(2)])


def test_stack_of_trees_and_mixed_dtypes():
    a = RNG.standard_normal((3, 4))
    i = np.arange(12, dtype=np.int32).reshape(3, 4)
    A = pyet.asarray(a)
    for axis in (0, 1, 2):
        got = pyet.stack([A * 2, i], axis)
        want = np.stack([a * 2, i], axis)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), want)


def test_expand_views_as_numpys():
    a = RNG.standard_normal((3, 4))[:, ::-1]
    for axis in (0, 1, 2, -1, -3, (0, 1), (0, 3)):
        np.testing.assert_array_equal(core.VIEWS["expand"](a, axis), np.expand_dims(a, axis))


def test_flip_views_as_numpys():
    a = RNG.standard_normal((3, 4, 5))
    for leaf in (a, a[::-1, :, ::2], np.asfortranarray(a)):
        A = pyet.asarray(leaf)
        for axis in (None, 0, 1, 2, -1, (0, 2), (2, 0), (-1, -3), np.int64(1), [1]):
            want = np.flip(leaf, axis) * 2 + 1
            _check_into(lambda A=A, axis=axis: pyet.flip(A * 2 + 1, axis), want)
            np.testing.assert_array_equal(core.VIEWS["flip"](leaf, axis if axis is None or
                                                            np.ndim(axis) else (int(axis),)),
                                          np.flip(leaf, axis))
    with pytest.raises(np.exceptions.AxisError):
        pyet.flip(a, 3)
    with pytest.raises(ValueError, match="flip: repeated axis"):
        pyet.flip(a, (0, -3))


# --------------------------------------------------------- evaluate, dtypes

def test_evaluate_allocates_aligned_results():
    a = RNG.standard_normal((5, 7))
    A = pyet.asarray(a)
    for e, want in ((A * A + 1, a * a + 1), (A.T - 1, a.T - 1), (pyet.asarray(np.float32(2)) * 2,
                    np.float32(4)), (pyet.asarray(np.zeros((0, 3))) + 1, np.ones((0, 3))),
                    (A > 0, a > 0), (A.astype(np.int32) // 2, a.astype(np.int32) // 2)):
        got = pyet.evaluate(e)
        assert isinstance(got, pyet.Tensor) and got.dtype == want.dtype
        assert got.shape == np.shape(want)
        assert got.numpy().ctypes.data % 64 == 0 and got.numpy().flags.c_contiguous
        np.testing.assert_array_equal(got.numpy(), want)
    # a tree with a special node: the general way
    got = pyet.evaluate(pyet.sum(A, axis=0) + 1)
    np.testing.assert_allclose(got.numpy(), a.sum(axis=0) + 1)


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int64, np.float32, np.float64])
def test_aligned_empty(dtype):
    for shape in ((), (0,), (1,), (3, 5), (2, 1, 7), (65,)):
        a = core.aligned_empty(shape, core.dtype_code(dtype))
        assert a.shape == shape and a.dtype == dtype and a.flags.writeable
        assert a.flags.c_contiguous and a.ctypes.data % 64 == 0
        a[...] = 1
        assert (a == 1).all()
        t = pyet.empty(shape, dtype)
        assert t.numpy().ctypes.data % 64 == 0 and t.shape == shape
    with pytest.raises(ValueError, match="negative dimensions"):
        core.aligned_empty((2, -1), core.dtype_code(dtype))
    with pytest.raises(ValueError):
        pyet.empty((2, -1), dtype)


def test_dtype_codes_by_identity_and_by_name():
    for i, d in enumerate(core.DTYPES):
        assert core.dtype_code(d) == i
        assert core.dtype_code(d.type) == i
        assert core.dtype_code(d.str) == i
    with pytest.raises(TypeError, match="pyet does not support dtype complex128"):
        core.dtype_code(np.complex128)
    swapped = np.dtype(np.float64).newbyteorder()
    with pytest.raises(TypeError, match="pyet does not support dtype"):
        core.dtype_code(swapped)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32, np.uint64])
def test_indices_of_every_integer_dtype_are_checked_and_wrapped_in_one_pass(dtype):
    # take's and softmax_xent_grad's indices share the compiled check (wrapped_indices)
    w = np.arange(12.0).reshape(6, 2)
    idx = np.array([0, 5, 2], dtype)
    if np.dtype(dtype).kind == "i":
        idx = np.array([0, -1, 2], dtype)
    np.testing.assert_array_equal(pyet.evaluate(pyet.take(idx, w)), w[idx.astype(np.int64)])
    logp = np.log(np.full((3, 6), 1 / 6))
    want = np.exp(logp) - np.eye(6)[idx.astype(np.int64)]
    np.testing.assert_allclose(pyet.evaluate(pyet.softmax_xent_grad(logp, idx, 1.0)), want)
    bad = np.array([1, 6], dtype)
    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 of W of size 6"):
        pyet.take(bad, w)
    with pytest.raises(IndexError, match=r"class index out of range \[-6, 6\)"):
        pyet.softmax_xent_grad(logp[:2], bad, 1.0)


def test_uint64_indices_beyond_int64_are_out_of_range_with_their_value():
    big = np.array([1, 2**64 - 1], np.uint64)  # not -1 wrapped from the end
    with pytest.raises(IndexError, match=f"index {2**64 - 1} is out of bounds"):
        pyet.take(big, np.zeros((4, 2)))
    with pytest.raises(IndexError, match="class index out of range"):
        pyet.softmax_xent_grad(np.zeros((2, 4)), big, 1.0)
