"""``dst[...] = leaf`` of at most SMALL_COPY_MAX (1024) elements across layouts
the direct pass does not take (C rows into Fortran order, strided, reversed,
broadcast) is NumPy's own copy (PyArray_CopyInto) rather than a planned pass:
the same bytes as NumPy's copyto, sentinels intact; a leaf overlapping dst still
takes the pass, which reads it whole first (NumPy's a[::2] = a[:5] does not)."""

import numpy as np
import pytest

import pyet

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]


def _values(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    return (rng.random(shape) * 100).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(51, 5), (128, 2), (15, 17), (4, 64), (1024, 1), (2, 3, 7)])
@pytest.mark.parametrize("layout", ["F", "::2", "::-1", "T"])
def test_small_copies_across_layouts_equal_numpy(dtype, shape, layout):
    rng = np.random.default_rng(sum(shape))
    a = _values(rng, shape, dtype)
    want = a.copy()
    if layout == "F":
        buf = np.zeros(a.size + 16, dtype)
        out = buf[8:-8].reshape(shape[::-1]).T
    elif layout == "::2":
        buf = np.zeros(shape[:-1] + (2 * shape[-1] + 2,), dtype)
        out = buf[..., 1:-1:2]
    elif layout == "::-1":
        buf = np.zeros(shape[:-1] + (shape[-1] + 2,), dtype)
        out = buf[..., -2:0:-1]
    else:  # a C array's transpose, written from a transposed C leaf
        buf = np.zeros(a.size + 16, dtype)
        out = buf[8:-8].reshape(shape)
        a = np.ascontiguousarray(np.swapaxes(a, 0, -1)).swapaxes(0, -1)
    pyet.asarray(out)[...] = pyet.asarray(a)
    np.testing.assert_array_equal(out, want)
    probe = buf.copy()
    np.ndarray(out.shape, out.dtype, probe, out.ctypes.data - buf.ctypes.data,
               out.strides)[...] = 0
    assert not probe.any()  # every byte outside out's items still zero


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_small_copies_of_overlapping_views_read_the_leaf_first(dtype):
    # a square's transpose into itself, a shifted view and every other item of
    # the first half: as if the leaf were copied before dst is written
    x = np.arange(400, dtype=dtype).reshape(20, 20)
    want = x.T.copy()
    X = pyet.asarray(x)
    X[...] = X.T
    np.testing.assert_array_equal(x, want)
    y = np.arange(300, dtype=dtype)
    want = y.copy()
    want[1:] = y[:-1]
    Y = pyet.asarray(y)
    Y[1:] = Y[:-1][::-1][::-1]  # (a view of the same memory, not the same view)
    np.testing.assert_array_equal(y, want)
    z = np.arange(300, dtype=dtype)
    want = z.copy()
    want[::2] = z[:150].copy()
    Z = pyet.asarray(z)
    Z[::2] = Z[:150]
    np.testing.assert_array_equal(z, want)


def test_small_broadcast_copy_and_packed_field():
    row = np.arange(7.0)
    out = np.zeros((30, 7), order="F")
    pyet.asarray(out)[...] = pyet.asarray(row)
    np.testing.assert_array_equal(out, np.broadcast_to(row, (30, 7)))
    rec = np.zeros(50, dtype=[("a", "u1"), ("b", "<f8")])  # packed: b steps 9 bytes
    rec["b"] = np.arange(50.0)
    out = np.zeros(50)[::-1]
    pyet.asarray(out)[...] = pyet.asarray(rec["b"])
    np.testing.assert_array_equal(out, np.arange(50.0))


def test_small_copy_errors_leave_the_destination_untouched():
    a = np.arange(20.0).reshape(4, 5)
    ro = np.zeros((4, 5), order="F")
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        pyet.asarray(ro)[...] = pyet.asarray(a)
    ints = np.full((4, 5), 7, np.int32, order="F")
    with pytest.raises(TypeError, match="cast"):
        pyet.asarray(ints)[...] = pyet.asarray(a)
    small = np.full((5, 4), 7.0).T
    with pytest.raises(ValueError, match="shape"):
        pyet.asarray(small)[...] = pyet.asarray(np.ones((3, 5)))
    assert (ints == 7).all() and (small == 7).all() and (ro == 0).all()
