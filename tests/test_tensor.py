"""Leaves: pyet.asarray (no copy), allocation functions, attributes, basic indexing views."""

import array

import numpy as np
import pytest

import pyet


def data_ptr(a):
    return np.asarray(a).__array_interface__["data"][0]


def assert_same_memory(t, a):
    """t (a Tensor) views exactly the memory of ndarray a: same pointer, shape, strides, dtype."""
    for view in (t.numpy(), np.asarray(t)):
        assert isinstance(view, np.ndarray)
        assert view.shape == a.shape
        if a.size:  # strides of an empty array carry no meaning
            assert view.strides == a.strides
        assert view.dtype == a.dtype
        assert data_ptr(view) == data_ptr(a)
        if a.size:
            assert np.shares_memory(view, a)


LAYOUTS = {
    "contig": lambda: np.arange(12.0).reshape(3, 4),
    "strided": lambda: np.arange(40.0).reshape(4, 10)[::2, 1::3],
    "negative": lambda: np.arange(12.0).reshape(3, 4)[::-1, ::-2],
    "fortran": lambda: np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    "transposed": lambda: np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1),
    "0d": lambda: np.array(3.5),
    "zero_size": lambda: np.empty((0, 3)),
    "zero_size_strided": lambda: np.empty((4, 6))[::2, 3:3],
    "broadcast": lambda: np.broadcast_to(np.arange(4.0), (3, 4)),
    "int32": lambda: np.arange(10, dtype=np.int32)[::3],
    "bool": lambda: np.array([[True, False], [False, True]])[:, ::-1],
    "float32_1d": lambda: np.arange(7, dtype=np.float32),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_asarray_no_copy(layout):
    a = LAYOUTS[layout]()
    t = pyet.asarray(a)
    assert isinstance(t, pyet.Tensor)
    assert isinstance(t, pyet.Expr)
    assert t.shape == a.shape
    assert t.dtype == a.dtype
    assert isinstance(t.dtype, np.dtype)
    assert t.ndim == a.ndim
    assert t.size == a.size
    if a.size:
        assert t.strides == a.strides
    assert_same_memory(t, a)
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize("layout", ["contig", "strided", "negative", "fortran", "transposed", "0d"])
def test_asarray_writes_are_shared(layout):
    a = LAYOUTS[layout]()
    t = pyet.asarray(a)
    t.numpy()[...] = -1.0
    assert (a == -1).all()
    a[...] = 7.0
    assert (np.asarray(t) == 7).all()
    t[...] = 2.5  # evaluate a scalar fill through the tensor
    assert (a == 2.5).all()


def test_asarray_same_dtype_requested_is_no_copy():
    a = np.arange(6, dtype=np.int32)[::-1]
    t = pyet.asarray(a, dtype=np.int32)
    assert_same_memory(t, a)
    t2 = pyet.asarray(a, dtype="int32")
    assert_same_memory(t2, a)


@pytest.mark.parametrize(
    "src,dst",
    [
        ("int32", "float64"),
        ("float64", "float32"),
        ("bool", "int64"),
        ("float32", "int32"),
        ("int64", "int32"),
    ],
)
def test_asarray_dtype_conversion_copies(src, dst):
    a = (np.arange(-3, 9) % 3 == 1) if src == "bool" else np.arange(-3, 9).astype(src)[::2]
    t = pyet.asarray(a, dtype=dst)
    assert t.dtype == np.dtype(dst)
    out = t.numpy()
    assert not np.shares_memory(out, a)
    np.testing.assert_array_equal(out, a.astype(dst))
    a[...] = 0
    np.testing.assert_array_equal(
        t.numpy(),
        (np.arange(-3, 9) % 3 == 1).astype(dst)
        if src == "bool"
        else np.arange(-3, 9).astype(src)[::2].astype(dst),
    )


def test_asarray_of_tensor_shares_memory():
    a = np.arange(5.0)
    t = pyet.asarray(a)
    t2 = pyet.asarray(t)
    assert isinstance(t2, pyet.Tensor)
    assert_same_memory(t2, a)


def test_asarray_array_module_buffer():
    buf = array.array("d", [1.0, 2.0, 3.0])
    t = pyet.asarray(buf)
    assert t.dtype == np.float64 and t.shape == (3,)
    t[...] = 9.0
    assert list(buf) == [9.0, 9.0, 9.0]
    buf[1] = -1.0
    np.testing.assert_array_equal(t.numpy(), [9.0, -1.0, 9.0])


def test_asarray_int32_array_module_buffer():
    buf = array.array("i", [1, 2, 3, 4])
    t = pyet.asarray(buf)
    assert t.dtype == np.int32 and t.shape == (4,)
    t[1:3] = 0
    assert list(buf) == [1, 0, 0, 4]


def test_asarray_memoryview_cast():
    raw = bytearray(8 * 6)
    mv = memoryview(raw).cast("d", (2, 3))
    t = pyet.asarray(mv)
    assert t.shape == (2, 3) and t.dtype == np.float64
    t[...] = 1.5
    np.testing.assert_array_equal(np.frombuffer(raw, dtype=np.float64), np.full(6, 1.5))


def test_asarray_bytearray_is_uint8_unsupported():
    with pytest.raises(TypeError, match="uint8"):
        pyet.asarray(bytearray(8))


def test_asarray_bytearray_with_dtype_conversion():
    t = pyet.asarray(bytearray(b"\x01\x02\x03"), dtype=np.int32)
    assert t.dtype == np.int32
    np.testing.assert_array_equal(t.numpy(), [1, 2, 3])


class ArrayInterfaceOnly:
    """Exposes memory only through __array_interface__."""

    def __init__(self, arr):
        self._arr = arr
        self.__array_interface__ = arr.__array_interface__


@pytest.mark.parametrize("layout", ["contig", "strided", "negative", "0d", "int32"])
def test_asarray_array_interface(layout):
    a = LAYOUTS[layout]()
    obj = ArrayInterfaceOnly(a)
    t = pyet.asarray(obj)
    assert t.shape == a.shape and t.dtype == a.dtype
    assert_same_memory(t, a)
    a[...] = 3
    assert (t.numpy() == 3).all()


@pytest.mark.parametrize(
    "obj,dtype",
    [
        ([[1, 2], [3, 4]], np.int64),
        ([1.5, 2.0], np.float64),
        (2.5, np.float64),
        (7, np.int64),
        ([True, False], np.bool_),
        (True, np.bool_),
    ],
)
def test_asarray_lists_and_scalars_copy(obj, dtype):
    t = pyet.asarray(obj)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), np.asarray(obj))
    assert t.shape == np.asarray(obj).shape


def test_asarray_list_with_dtype():
    t = pyet.asarray([1, 2, 3], dtype=np.float32)
    assert t.dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), [1, 2, 3])


@pytest.mark.parametrize(
    "dt",
    [
        "complex128",
        "float16",
        "uint8",
        "int8",
        "int16",
        "uint64",
        "object",
        "<U3",
        "datetime64[s]",
        "complex64",
    ],
)
def test_asarray_unsupported_dtype(dt):
    a = np.zeros(3, dtype=dt)
    name = np.dtype(dt).name.split("[")[0] if dt != "<U3" else "(U3|str|<U3)"
    with pytest.raises(TypeError, match=name):
        pyet.asarray(a)


@pytest.mark.parametrize("dt", ["complex128", "float16", "uint8"])
def test_asarray_to_unsupported_dtype(dt):
    with pytest.raises(TypeError, match=np.dtype(dt).name):
        pyet.asarray(np.zeros(3), dtype=dt)


# ---------------------------------------------------------------- allocation

ALLOC_SHAPES = [5, (5,), (3, 4), (2, 3, 7), (), (0,), (4, 0), (1000,), (17, 33)]


def expected_shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


@pytest.mark.parametrize(
    "dtype", [None, "bool", "int32", "int64", "float32", "float64", np.float32, float]
)
@pytest.mark.parametrize("shape", ALLOC_SHAPES, ids=str)
def test_zeros_ones_empty(shape, dtype):
    kw = {} if dtype is None else {"dtype": dtype}
    want = np.dtype(np.float64 if dtype is None else dtype)
    for fn, ref in ((pyet.zeros, np.zeros), (pyet.ones, np.ones), (pyet.empty, None)):
        t = fn(shape, **kw)
        assert isinstance(t, pyet.Tensor)
        assert t.shape == expected_shape(shape)
        assert t.dtype == want
        assert t.size == int(np.prod(expected_shape(shape)))
        a = t.numpy()
        assert a.flags.c_contiguous and a.flags.writeable
        assert a.size == 0 or data_ptr(a) % 64 == 0, "data pointer not 64-byte aligned"
        if ref is not None:
            np.testing.assert_array_equal(a, ref(shape, want))


@pytest.mark.parametrize(
    "fill,dtype",
    [
        (3.25, None),
        (2, "int32"),
        (-7, "int64"),
        (True, "bool"),
        (0.1, "float32"),
        (np.inf, "float64"),
        (np.nan, "float32"),
    ],
)
@pytest.mark.parametrize("shape", [(3, 5), (), (0, 2), 129])
def test_full(shape, fill, dtype):
    kw = {} if dtype is None else {"dtype": dtype}
    t = pyet.full(shape, fill, **kw)
    ref = np.full(shape, fill, dtype=np.float64 if dtype is None else dtype)
    assert t.dtype == ref.dtype and t.shape == ref.shape
    assert t.size == 0 or data_ptr(t) % 64 == 0
    np.testing.assert_array_equal(t.numpy(), ref)


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("dt", ["complex128", "float16", "uint8", "object"])
def test_alloc_unsupported_dtype(fn, dt):
    with pytest.raises(TypeError, match=np.dtype(dt).name):
        getattr(pyet, fn)((2, 2), dtype=dt)
    with pytest.raises(TypeError, match=np.dtype(dt).name):
        pyet.full((2, 2), 0, dtype=dt)


def test_many_allocations_aligned():
    ptrs = [data_ptr(pyet.empty(n, dtype=np.float32)) for n in range(1, 40)]
    assert all(p % 64 == 0 for p in ptrs)


# ---------------------------------------------------------------- indexing


def base_4x6():
    return np.arange(24.0).reshape(4, 6)


KEYS = [
    1,
    -1,
    (2,),
    (1, 3),
    (-1, -2),
    slice(1, 3),
    slice(None, None, 2),
    slice(None, None, -1),
    (slice(None), slice(None, None, -2)),
    (slice(3, 0, -2), slice(1, 6, 2)),
    (Ellipsis, 2),
    (Ellipsis, None),
    (None, 1),
    (slice(None), None, slice(1, 4)),
    Ellipsis,
    (),
    (slice(5, 9),),
    (1, slice(None, None, 3)),
    (slice(2, 2), slice(None)),
]


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_basic_indexing_view(key):
    a = base_4x6()
    t = pyet.asarray(a)
    v = t[key]
    k = key if isinstance(key, tuple) else (key,)
    ref = a[k if Ellipsis in k else k + (Ellipsis,)]  # a view even for full integer keys
    assert isinstance(v, pyet.Tensor)
    assert v.shape == ref.shape
    if ref.size:  # strides of length-1 dimensions carry no meaning
        assert [s for s, n in zip(v.strides, ref.shape, strict=True) if n > 1] == [
            s for s, n in zip(ref.strides, ref.shape, strict=True) if n > 1
        ]
    assert v.dtype == ref.dtype
    np.testing.assert_array_equal(v.numpy(), ref)
    if ref.size:
        assert np.shares_memory(v.numpy(), a)
        assert data_ptr(v) == data_ptr(ref)
        v.numpy()[...] = -5.0  # writes through the view are visible in the base
        assert (a[key] == -5).all()


def test_view_of_view_and_setitem():
    a = np.arange(30.0).reshape(5, 6)
    t = pyet.asarray(a)
    v = t[::-1][1:, ::2][::2]
    ref = a[::-1][1:, ::2][::2]
    np.testing.assert_array_equal(v.numpy(), ref)
    v[...] = 0.0
    assert (ref == 0).all()
    t[1, 2] = 99.0
    assert a[1, 2] == 99.0
    t[:, -1] = pyet.asarray(np.arange(5.0))
    np.testing.assert_array_equal(a[:, -1], np.arange(5.0))


def test_full_integer_index_gives_0d_tensor():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = pyet.asarray(a)
    s = t[1, 2]
    assert isinstance(s, pyet.Tensor)
    assert s.shape == () and s.ndim == 0 and s.size == 1 and s.dtype == np.int32
    assert s.numpy() == 5
    s[...] = 42
    assert a[1, 2] == 42


def test_0d_tensor_indexing():
    a = np.array(2.0)
    t = pyet.asarray(a)
    assert t[...].shape == ()
    assert t[()].shape == ()
    assert t[None].shape == (1,)
    t[...] = 4.0
    assert a == 4.0


@pytest.mark.parametrize(
    "key",
    [
        [0, 1],
        np.array([0, 2]),
        (slice(None), [1, 2]),
        np.array([True, False, True, False]),
        (np.array([0]), 0),
    ],
    ids=["list", "intarray", "tuple_list", "boolmask", "mixed"],
)
def test_advanced_indexing_raises(key):
    t = pyet.asarray(base_4x6())
    with pytest.raises(IndexError, match="(?i)ind"):
        t[key]
    with pytest.raises(IndexError, match="(?i)ind"):
        t[key] = 1.0


@pytest.mark.parametrize("key", [4, -5, (0, 6), (0, 0, 0)])
def test_out_of_range_index_raises(key):
    t = pyet.asarray(base_4x6())
    with pytest.raises(IndexError, match="(?i)ind|bound|range"):
        t[key]


def test_numpy_and_asarray_return_same_memory():
    a = np.arange(10.0)[::2]
    t = pyet.asarray(a)
    assert np.shares_memory(t.numpy(), np.asarray(t))
    assert data_ptr(t.numpy()) == data_ptr(np.asarray(t)) == data_ptr(a)
    np.asarray(t)[0] = 123.0
    assert a[0] == 123.0


def test_asarray_is_the_leaf_s_own_array_and_conversions_copy_as_numpy():
    # np.asarray goes to __array__ (no __array_interface__: NumPy read that
    # dict first, ~1.6 us a call, and made a new array object)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::-2]
    t = pyet.asarray(a)
    assert np.asarray(t) is t.numpy()
    assert np.asarray(t, dtype=np.float32) is t.numpy()
    c = np.array(t)
    assert not np.shares_memory(c, a)
    np.testing.assert_array_equal(c, a)
    wide = np.asarray(t, dtype=np.float64)
    assert wide.dtype == np.float64 and not np.shares_memory(wide, a)
    np.testing.assert_array_equal(wide, a)
    with pytest.raises(ValueError, match="cannot view float32 as float64 without copying"):
        np.asarray(t, dtype=np.float64, copy=False)
    assert np.asarray(t, copy=False) is t.numpy()
    assert not hasattr(t, "__array_interface__")


def test_allocated_tensor_indexing_and_views():
    t = pyet.zeros((3, 4), dtype=np.int64)
    t[1] = 5
    t[:, ::3] = 7
    ref = np.zeros((3, 4), np.int64)
    ref[1] = 5
    ref[:, ::3] = 7
    np.testing.assert_array_equal(t.numpy(), ref)


def test_tensors_and_exprs_keep_their_memory_alive():
    import gc

    t = pyet.asarray(np.arange(50_000.0) * 1)  # the only reference to a temporary array
    e = pyet.asarray(np.ones(50_000)) + np.arange(50_000.0) * 2
    ti = pyet.asarray(ArrayInterfaceOnly(np.arange(1000.0)))
    tb = pyet.asarray(array.array("d", range(1000)))
    tm = pyet.asarray(memoryview(bytearray(np.arange(1000.0).tobytes())).cast("d"))
    gc.collect()
    junk = [np.full(50_000, -7.0) for _ in range(20)]  # reuse any freed memory
    np.testing.assert_array_equal(t.numpy(), np.arange(50_000.0))
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(e)), 1 + np.arange(50_000.0) * 2)
    for x in (ti, tb, tm):
        np.testing.assert_array_equal(x.numpy(), np.arange(1000.0))
    assert len(junk) == 20


@pytest.mark.parametrize("cls", ["Tensor", "Expr"])
@pytest.mark.parametrize("args", [(), (np.zeros(3),), ((2, 3),)])
def test_direct_construction_refused(cls, args):
    # a direct call used to return a node with every field empty, failing later far away
    msg = rf"pyet\.{cls} cannot be created directly: use pyet\.asarray"
    with pytest.raises(TypeError, match=msg):
        getattr(pyet, cls)(*args)
    t = pyet.asarray(np.arange(3.0))     # the ways that make them still work
    assert isinstance(t, pyet.Tensor) and isinstance(t + 1, pyet.Expr)
    np.testing.assert_array_equal(pyet.evaluate(t * 2), [0.0, 2.0, 4.0])
