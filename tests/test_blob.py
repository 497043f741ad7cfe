"""pyet.Blob (MShadow's TBlob): attributes, get, get_with_shape, flat_to_*d, no copies."""

import array
import re

import numpy as np
import pytest

import pyet
from pyet._blob import Blob


def data_ptr(a):
    a = a.numpy() if isinstance(a, pyet.Tensor) else np.asarray(a)
    return a.__array_interface__["data"][0]


def assert_view_of(t, a, shape=None):
    """t (a Tensor) is a view of ndarray a: same first-element pointer and shared memory."""
    assert isinstance(t, pyet.Tensor)
    v = t.numpy()
    assert v.dtype == a.dtype
    assert v.shape == (a.shape if shape is None else tuple(shape))
    assert data_ptr(v) == data_ptr(a)
    if a.size:
        assert np.shares_memory(v, a)
    np.testing.assert_array_equal(v, np.reshape(a, v.shape) if shape is not None else a)


LAYOUTS = {
    "contig": lambda: np.arange(24.0).reshape(2, 3, 4),
    "fortran": lambda: np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    "strided": lambda: np.arange(40.0).reshape(4, 10)[::2, 1::3],
    "negative": lambda: np.arange(12.0).reshape(3, 4)[::-1, ::-2],
    "transposed": lambda: np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1),
    "0d": lambda: np.array(3.5),
    "zero_size": lambda: np.empty((0, 3)),
    "zero_size_strided": lambda: np.empty((4, 6))[::2, 3:3],
    "broadcast": lambda: np.broadcast_to(np.arange(4.0), (3, 4)),
    "int32": lambda: np.arange(10, dtype=np.int32)[::3],
    "bool": lambda: np.array([[True, False], [False, True]])[:, ::-1],
}

FLAGS = [(np.float32, 0), (np.float64, 1), (np.float16, 2), (np.uint8, 3), (np.int32, 4),
         (np.int8, 5), (np.int64, 6), (np.bool_, 7)]
TENSOR_DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64]


# ------------------------------------------------------------ construction, attributes

@pytest.mark.parametrize("name", LAYOUTS)
def test_attributes(name):
    a = LAYOUTS[name]()
    b = Blob(a)
    assert b.ptr == data_ptr(a)
    assert isinstance(b.ptr, int)
    assert b.shape == a.shape and isinstance(b.shape, tuple)
    assert b.strides == a.strides
    assert b.dtype == a.dtype
    assert b.ndim == a.ndim
    assert b.size == a.size
    assert b.dev_mask == 1
    assert b.type_flag == dict(FLAGS)[a.dtype.type]
    assert b.is_contiguous() is bool(a.flags.c_contiguous)


@pytest.mark.parametrize("name", LAYOUTS)
def test_tensor_blob_and_sources_agree(name):
    a = LAYOUTS[name]()
    t = pyet.asarray(a)
    for b in (Blob(t), Blob(a), Blob(Blob(a))):
        assert isinstance(b, Blob)
        assert (b.ptr, b.shape, b.strides, b.dtype) == (data_ptr(a), a.shape, a.strides, a.dtype)


def test_is_contiguous():
    a = np.zeros((3, 4))
    assert Blob(a).is_contiguous()
    assert not Blob(a.T).is_contiguous()
    assert not Blob(a[:, ::2]).is_contiguous()
    assert not Blob(a[::-1]).is_contiguous()
    assert Blob(a[1:2]).is_contiguous()          # row slices stay contiguous
    assert Blob(np.array(1.0)).is_contiguous()
    assert Blob(np.empty((0, 5))[:, ::2]).is_contiguous()  # empty: strides do not matter


@pytest.mark.parametrize("dtype,flag", FLAGS)
def test_type_flags(dtype, flag):
    b = Blob(np.zeros((2, 3), dtype=dtype))
    assert b.type_flag == flag
    assert b.dtype == np.dtype(dtype)
    assert f"type_flag={flag}" in repr(b)


@pytest.mark.parametrize("dtype", [np.complex128, np.int16, np.uint32, np.uint64, ">f8",
                                   "U3", object, "datetime64[s]"])
def test_unsupported_dtype(dtype):
    a = np.zeros(3, dtype=dtype)
    with pytest.raises(TypeError, match=re.escape(str(a.dtype))):
        Blob(a)
    if np.dtype(dtype) in (np.dtype(np.complex128), np.dtype(np.int16)):
        with pytest.raises(TypeError, match="float32 0.*int64 6"):
            Blob(a)


def test_buffer_sources_are_views():
    buf = bytearray(8)
    b = Blob(buf)
    assert (b.dtype, b.shape, b.type_flag) == (np.dtype(np.uint8), (8,), 3)
    arr = array.array("d", [1.0, 2.0, 3.0])
    t = Blob(arr).get(1, np.float64)
    t[...] = 7
    assert list(arr) == [7.0, 7.0, 7.0]


@pytest.mark.parametrize("obj", [[1.0, 2.0], 3.0, (1, 2), b"abcd"])
def test_objects_that_need_a_copy(obj):
    with pytest.raises(TypeError, match=f"without copying.*{type(obj).__name__}"):
        Blob(obj)


def test_lazy_expression_is_not_memory():
    e = pyet.asarray(np.ones(3)) + 1
    with pytest.raises(TypeError, match="Expr"):
        Blob(e)


def test_subclass_is_viewed_as_plain_ndarray():
    m = np.ma.masked_array(np.arange(6.0).reshape(2, 3))
    b = Blob(m)
    assert b.ptr == data_ptr(m.data)
    assert b.flat_to_3d(0).shape == (1, 2, 3)


def test_slots_and_readonly():
    b = Blob(np.zeros(3))
    assert not hasattr(b, "__dict__")
    with pytest.raises(AttributeError):
        b.extra = 1
    with pytest.raises(AttributeError):
        b.shape = (1, 3)


def test_repr():
    a = np.zeros((2, 3), dtype=np.float32)
    r = repr(Blob(a))
    assert r == (f"Blob(ptr={data_ptr(a):#x}, shape=(2, 3), strides=(12, 4), dtype=float32, "
                 "type_flag=0, dev_mask=1)")
    assert "shape=()" in repr(Blob(np.array(1)))


def test_blob_does_not_keep_reshaping_the_source():
    # The blob holds its own view: reshaping a view object later does not affect it.
    a = np.arange(6.0)
    v = a.view()
    b = Blob(v)
    v.shape = (2, 3)
    assert b.shape == (6,)


# ------------------------------------------------------------ get

@pytest.mark.parametrize("name", LAYOUTS)
def test_get(name):
    a = LAYOUTS[name]()
    t = Blob(a).get(a.ndim, a.dtype)
    assert_view_of(t, a)
    assert t.numpy().strides == a.strides


@pytest.mark.parametrize("dtype", TENSOR_DTYPES)
def test_get_each_tensor_dtype(dtype):
    a = np.zeros((2, 2), dtype=dtype)
    assert_view_of(Blob(a).get(2, dtype), a)
    assert_view_of(Blob(a).get(np.int64(2), np.dtype(dtype).str), a)


def test_get_dtype_mismatch_names_both():
    b = Blob(np.zeros((2, 3)))
    with pytest.raises(TypeError, match=r"holds float64 \(type_flag 1\).*requested float32 "
                                        r"\(type_flag 0\)"):
        b.get(2, np.float32)
    with pytest.raises(TypeError, match=r"holds float64.*requested complex64"):
        b.get(2, np.complex64)
    with pytest.raises(TypeError, match="not a dtype"):
        b.get(2, "nonsense")


def test_get_dtype_checked_before_ndim():
    with pytest.raises(TypeError, match="float64.*int32"):
        Blob(np.zeros((2, 3))).get(3, np.int32)


def test_get_ndim_mismatch_names_both():
    b = Blob(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"ndim 2 \(shape \(2, 3\)\), requested ndim 3"):
        b.get(3, np.float64)
    with pytest.raises(ValueError, match="ndim 0.*requested ndim 1"):
        Blob(np.array(1.0)).get(1, np.float64)


@pytest.mark.parametrize("ndim", [2.0, "2", None, True])
def test_get_ndim_type(ndim):
    with pytest.raises(TypeError, match="ndim must be an integer"):
        Blob(np.zeros((2, 3))).get(ndim, np.float64)


@pytest.mark.parametrize("dtype", [np.float16, np.uint8, np.int8])
def test_get_dtype_a_tensor_cannot_hold(dtype):
    b = Blob(np.zeros((2, 3), dtype=dtype))
    name = str(np.dtype(dtype))
    for call in (lambda: b.get(2, dtype), lambda: b.flat_to_2d(),
                 lambda: b.get_with_shape(6, dtype)):
        with pytest.raises(TypeError, match=f"holds {name}, which a pyet Tensor cannot"):
            call()


# ------------------------------------------------------------ get_with_shape

@pytest.mark.parametrize("shape", [(6, 4), (24,), 24, (2, 2, 2, 3), (1, 24, 1), [4, 6],
                                   (np.int64(3), 8)])
def test_get_with_shape(shape):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = Blob(a).get_with_shape(shape, np.float32)
    expect = (shape,) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)
    assert_view_of(t, a, expect)
    assert t.numpy().flags.c_contiguous


def test_get_with_shape_zero_size_and_0d():
    e = np.empty((0, 3))
    assert Blob(e).get_with_shape((3, 0, 5), np.float64).shape == (3, 0, 5)
    z = np.array(2.5)
    t = Blob(z).get_with_shape((1, 1), np.float64)
    assert_view_of(t, z, (1, 1))
    assert Blob(np.arange(1.0)).get_with_shape((), np.float64).shape == ()


def test_get_with_shape_dtype_mismatch_names_both():
    with pytest.raises(TypeError, match=r"holds int32 \(type_flag 4\).*requested int64 "
                                        r"\(type_flag 6\)"):
        Blob(np.zeros(4, np.int32)).get_with_shape((2, 2), np.int64)


@pytest.mark.parametrize("make", [lambda a: a.T, lambda a: a[:, ::2], lambda a: a[::-1],
                                  lambda a: np.broadcast_to(a[:1], (3, 4))])
def test_get_with_shape_not_contiguous(make):
    a = make(np.arange(12.0).reshape(3, 4))
    with pytest.raises(ValueError, match=(r"must be contiguous, but shape "
                                          + re.escape(f"{a.shape} has strides {a.strides}")
                                          + r".*requested shape \(" + str(a.size))):
        Blob(a).get_with_shape((a.size,), np.float64)


def test_get_with_shape_count_mismatch_names_both():
    b = Blob(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"shape \(2, 3\) \(6 elements\), requested shape "
                                         r"\(4, 2\) \(8 elements\)"):
        b.get_with_shape((4, 2), np.float64)


def test_get_with_shape_bad_shapes():
    b = Blob(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="negative"):
        b.get_with_shape((-1, 3), np.float64)
    for bad in ((2.0, 3), "ab", None, (True, 6)):
        with pytest.raises(TypeError, match="shape must be"):
            b.get_with_shape(bad, np.float64)


# ------------------------------------------------------------ flat_to_*d

SHAPE_CASES = {
    (2, 3, 4): ((24,), (6, 4)),
    (5,): ((5,), (1, 5)),
    (): ((1,), (1, 1)),
    (0, 3): ((0,), (0, 3)),
    (2, 0, 3): ((0,), (0, 3)),
    (2, 3, 1, 2, 2): ((24,), (12, 2)),
}


@pytest.mark.parametrize("shape", SHAPE_CASES)
def test_flat_to_1d_2d(shape):
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    b = Blob(a)
    s1, s2 = SHAPE_CASES[shape]
    assert_view_of(b.flat_to_1d(), a, s1)
    assert_view_of(b.flat_to_2d(), a, s2)
    assert_view_of(b.flat_to_1d(np.int64), a, s1)
    assert_view_of(b.flat_to_2d(dtype="int64"), a, s2)


@pytest.mark.parametrize("args,expect", [
    ((0,), (1, 2, 12)), ((1,), (2, 3, 4)), ((2,), (6, 4, 1)), ((-1,), (6, 4, 1)),
    ((0, 1), (1, 6, 4)), ((1, 2), (2, 12, 1)), ((0, 2), (1, 24, 1)), ((1, 1), (2, 3, 4)),
    ((-3, -2), (1, 6, 4)), ((0, -1), (1, 24, 1)), ((np.int32(1), None), (2, 3, 4)),
])
def test_flat_to_3d(args, expect):
    a = np.arange(24.0).reshape(2, 3, 4)
    assert_view_of(Blob(a).flat_to_3d(*args), a, expect)
    assert_view_of(Blob(a).flat_to_3d(*args, dtype=np.float64), a, expect)


def test_flat_to_3d_matches_mshadow_formula():
    shape = (2, 3, 4, 5)
    a = np.zeros(shape, dtype=np.float32)
    for begin in range(4):
        for end in range(begin, 4):
            want = (int(np.prod(shape[:begin])), int(np.prod(shape[begin:end + 1])),
                    int(np.prod(shape[end + 1:])))
            assert Blob(a).flat_to_3d(begin, end).shape == want


def test_flat_to_3d_0d_and_1d():
    z = np.array(4.0)
    assert_view_of(Blob(z).flat_to_3d(0), z, (1, 1, 1))
    assert Blob(z).flat_to_3d(-1).shape == (1, 1, 1)
    v = np.arange(3.0)
    assert Blob(v).flat_to_3d(0).shape == (1, 3, 1)


def test_flat_to_3d_errors():
    b = Blob(np.zeros((2, 3, 4)))
    for args, name, axis in (((3,), "begin", 3), ((-4,), "begin", -4), ((0, 3), "end", 3)):
        with pytest.raises(np.exceptions.AxisError,
                           match=rf"{name} axis {axis} is out of range.*\(2, 3, 4\)"):
            b.flat_to_3d(*args)
    with pytest.raises(ValueError, match=r"begin axis 2 comes after end axis 1 \(shape"):
        b.flat_to_3d(2, 1)
    with pytest.raises(ValueError, match="out of range"):
        Blob(np.array(1.0)).flat_to_3d(1)
    with pytest.raises(TypeError, match="begin must be an integer"):
        b.flat_to_3d(1.0)
    with pytest.raises(TypeError, match="end must be an integer"):
        b.flat_to_3d(0, "1")


@pytest.mark.parametrize("method,args", [("flat_to_1d", ()), ("flat_to_2d", ()),
                                         ("flat_to_3d", (1,))])
def test_flat_dtype_mismatch_names_both(method, args):
    b = Blob(np.zeros((2, 3, 4), dtype=np.float32))
    with pytest.raises(TypeError, match=rf"{method}: .*holds float32.*requested float64"):
        getattr(b, method)(*args, dtype=np.float64)


def test_flat_non_contiguous_views():
    # Layouts NumPy can reshape without copying give views with the right strides.
    a = np.arange(48.0).reshape(4, 3, 4)
    s = a[:, :, :2]                              # (4, 3, 2), rows strided
    t = Blob(s).flat_to_2d()
    assert t.shape == (12, 2) and t.strides == (32, 8)
    assert np.shares_memory(t.numpy(), a)
    np.testing.assert_array_equal(t.numpy(), s.reshape(12, 2))
    u = a[:, :, ::2]                             # every other element, uniformly strided
    t1 = Blob(u).flat_to_1d()
    assert t1.strides == (16,)
    np.testing.assert_array_equal(t1.numpy(), u.ravel())
    n = a[::-1]                                  # negative outer stride
    t3 = Blob(n).flat_to_3d(1, 2)
    assert t3.shape == (4, 12, 1) and data_ptr(t3) == data_ptr(n)
    np.testing.assert_array_equal(t3.numpy(), n.reshape(4, 12, 1))
    f = np.asfortranarray(np.zeros((3, 4)))      # Fortran: 3-D grouping around all axes
    assert Blob(f).flat_to_3d(0).shape == (1, 3, 4)


@pytest.mark.parametrize("make", [
    lambda a: a.transpose(1, 0, 2),
    lambda a: a[:, :, ::-1][:, :, :3],
    lambda a: a[:, ::2, :3],
    lambda a: np.asfortranarray(a),
])
def test_flat_non_contiguous_refuses_to_copy(make):
    x = make(np.arange(48.0).reshape(4, 3, 4))
    b = Blob(x)
    with pytest.raises(ValueError, match=re.escape(f"shape {x.shape} with strides {x.strides}")
                       + ".*without copying"):
        b.flat_to_1d()
    with pytest.raises(ValueError, match="flat_to_3d.*never copies"):
        b.flat_to_3d(0, 2)


def test_flat_negative_inner_stride():
    a = np.arange(12.0).reshape(3, 4)[:, ::-1]
    t = Blob(a).flat_to_2d()                     # (3, 4) -> (3, 4): always a view
    assert t.strides == (32, -8) and data_ptr(t) == data_ptr(a)
    with pytest.raises(ValueError, match=r"strides \(32, -8\)"):
        Blob(a).flat_to_1d()
    r = np.arange(12.0)[::-1]
    assert Blob(r).flat_to_1d().strides == (-8,)
    assert Blob(r).flat_to_3d(0).shape == (1, 12, 1)


def test_flat_zero_size_strided():
    e = np.empty((4, 6))[::2, 3:3]
    assert Blob(e).flat_to_1d().shape == (0,)
    assert Blob(e).flat_to_3d(0, 1).shape == (1, 0, 1)


# ------------------------------------------------------------ shared memory, no copies

def test_writes_are_shared_between_all_views():
    a = np.zeros((2, 3, 4), dtype=np.float32)
    t = pyet.asarray(a)
    b = Blob(t)
    g = b.get(3, np.float32)
    g[...] = 5
    assert (a == 5).all()
    assert (b.flat_to_1d().numpy() == 5).all()
    a[0, 1, 2] = -1                              # through the original ndarray
    assert g.numpy()[0, 1, 2] == -1
    assert b.flat_to_2d().numpy()[1, 2] == -1
    assert b.flat_to_3d(0, 1).numpy()[0, 1, 2] == -1
    assert b.get_with_shape((4, 6), np.float32).numpy()[1, 0] == -1
    w = b.get_with_shape((24,), np.float32)
    w[...] = w * 2 + 1                           # an expression evaluated into a view
    np.testing.assert_array_equal(a.ravel()[:3], [11, 11, 11])
    assert a[0, 1, 2] == -1
    f3 = b.flat_to_3d(1)
    f3[...] = 0
    assert not a.any()


def test_writes_through_non_contiguous_blob():
    base = np.zeros((4, 6))
    a = base[::2, ::-3]                          # strided and negative
    b = Blob(a)
    b.get(2, np.float64)[...] = 3
    assert (base[::2, ::-3] == 3).all()
    assert base.sum() == 3 * a.size
    b.flat_to_2d()[...] = 9
    assert (a == 9).all()


def test_every_view_shares_the_blob_pointer():
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)[::-1]
    b = Blob(a)
    views = [b.get(3, np.int32), b.flat_to_3d(0), b.flat_to_3d(1, 2)]
    with pytest.raises(ValueError, match=r"strides \(-48, 16, 4\)"):
        b.flat_to_2d()                           # axes 0 and 1 cannot merge
    for v in views:
        assert data_ptr(v) == b.ptr
        assert np.shares_memory(v.numpy(), a)


def test_readonly_source_stays_readonly():
    a = np.arange(4.0)
    a.flags.writeable = False
    t = Blob(a).get(1, np.float64)
    assert not t.numpy().flags.writeable


def test_public_name():
    assert pyet.Blob is Blob
    assert "Blob" in pyet.__all__
    assert type(pyet.Blob(pyet.zeros((2, 2)))) is pyet.Blob
