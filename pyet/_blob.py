"""MShadow's TBlob and TShape: a dtype- and dimension-erased view of memory.

A :class:`Blob` remembers where an array's memory is (``ptr``), how it is laid
out (``shape``, ``strides``) and what it holds (``dtype`` / ``type_flag``), and
hands out fixed-dimension, fixed-dtype :class:`pyet.Tensor` views of it on
request (``get``, ``get_with_shape``, ``flat_to_1d/2d/3d``), checking that the
request matches.  Like MShadow's ``TBlob`` it does no arithmetic and never
allocates or copies.
"""

import numpy as np

from pyet._core import core

__all__ = ["Blob", "TYPE_FLAGS"]

#: MShadow's ``mshadow::TypeFlag`` numbering (``mshadow/base.h``).  kBool (7)
#: is the later MShadow's addition; pyet keeps it so that every pyet Tensor,
#: bool ones included, has a blob.
TYPE_FLAGS = {
    np.dtype(np.float32): 0,   # kFloat32
    np.dtype(np.float64): 1,   # kFloat64
    np.dtype(np.float16): 2,   # kFloat16
    np.dtype(np.uint8): 3,     # kUint8
    np.dtype(np.int32): 4,     # kInt32
    np.dtype(np.int8): 5,      # kInt8
    np.dtype(np.int64): 6,     # kInt64
    np.dtype(np.bool_): 7,     # kBool
}
_FLAG_NAMES = ", ".join(f"{dt} {flag}" for dt, flag in TYPE_FLAGS.items())

#: MShadow's ``cpu::kDevMask``; a NumPy array always lives on the CPU.
CPU_DEV_MASK = 1

try:  # NumPy >= 2.1 can refuse to copy in reshape
    np.reshape(np.empty(0), (0,), copy=False)
    _RESHAPE_HAS_COPY = True
except TypeError:  # pragma: no cover - NumPy 2.0
    _RESHAPE_HAS_COPY = False


def _type_flag(dtype):
    flag = TYPE_FLAGS.get(dtype)
    if flag is None:
        raise TypeError(f"Blob does not support dtype {dtype}; MShadow's type flags are "
                        f"{_FLAG_NAMES}")
    return flag


def _as_dtype(dtype, where):
    try:
        return np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"Blob.{where}: {dtype!r} is not a dtype ({exc})") from None


def _as_int(value, what, where):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"Blob.{where}: {what} must be an integer, got {type(value).__name__}")
    return int(value)


def _prod(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def _tensor(arr, where):
    try:
        return core.tensor(arr)
    except TypeError as exc:
        raise TypeError(f"Blob.{where}: the blob holds {arr.dtype}, which a pyet Tensor "
                        f"cannot view ({exc})") from None


class Blob:
    """A dtype- and dimension-erased view of memory (MShadow's ``TBlob``).

    Parameters
    ----------
    obj : Tensor, ndarray, Blob or buffer
        The memory to view: a :class:`pyet.Tensor`, an ndarray of any layout
        (non-contiguous, negative strides, 0-d, empty), another Blob, or
        anything :func:`numpy.asarray` can view without copying (the buffer
        protocol, ``__array_interface__``).  Nothing is ever copied.

    Attributes
    ----------
    ptr : int
        Address of the element at index ``(0, ..., 0)`` (MShadow's ``dptr_``).
        With negative strides this is not the lowest address of the block.
    shape : tuple of int
        The shape (MShadow's ``TShape``).
    strides : tuple of int
        Strides **in bytes**, as in NumPy, one per dimension.  MShadow's
        ``stride_`` is instead the distance in *elements* between consecutive
        rows of the last dimension; for a contiguous blob it equals
        ``shape[-1]``.
    dtype : numpy.dtype
        The element type.
    type_flag : int
        MShadow's type number: float32 0, float64 1, float16 2, uint8 3,
        int32 4, int8 5, int64 6 (and bool 7, as in later MShadow).
    dev_mask : int
        The device mask, always 1 (MShadow's ``cpu::kDevMask``).
    ndim : int
        Number of dimensions.
    size : int
        Number of elements (1 for a 0-d blob).

    Raises
    ------
    TypeError
        If the dtype has no MShadow type flag, or ``obj`` is not memory that
        can be viewed without a copy (a list, a scalar, a lazy expression).

    Notes
    -----
    Every method returns a view of the same memory, so writing through one
    view is visible through the blob, the original array and every other
    view.  A blob may hold float16, uint8 and int8, which pyet Tensors do not
    support: the blob's attributes work, but asking for a Tensor raises
    TypeError.

    Examples
    --------
    >>> import numpy as np, pyet
    >>> b = pyet.Blob(np.zeros((2, 3, 4), dtype=np.float32))
    >>> b.type_flag, b.flat_to_2d().shape, b.flat_to_3d(0, 1).shape
    (0, (6, 4), (1, 6, 4))
    """

    __slots__ = ("_arr", "_flag")

    def __init__(self, obj):
        if isinstance(obj, Blob):
            arr = obj._arr
        elif isinstance(obj, core.Tensor):
            arr = obj.numpy()
        elif isinstance(obj, np.ndarray):
            arr = obj
        else:
            try:
                arr = np.asarray(obj, copy=False)
            except (ValueError, TypeError):
                raise TypeError("Blob views memory without copying, and NumPy cannot view "
                                f"a {type(obj).__name__} object without copying or "
                                "computing it") from None
        self._flag = _type_flag(arr.dtype)
        self._arr = arr.view(np.ndarray)  # our own base-class ndarray: same memory and layout

    # ------------------------------------------------------------ attributes

    @property
    def ptr(self):
        """Address (int) of the element at index ``(0, ..., 0)``."""
        return self._arr.__array_interface__["data"][0]

    @property
    def shape(self):
        """The shape, a tuple of ints."""
        return self._arr.shape

    @property
    def strides(self):
        """Strides in bytes (NumPy's convention, not MShadow's element ``stride_``)."""
        return self._arr.strides

    @property
    def dtype(self):
        """The element dtype."""
        return self._arr.dtype

    @property
    def type_flag(self):
        """MShadow's type number of the dtype (float32 0, float64 1, ...)."""
        return self._flag

    @property
    def dev_mask(self):
        """The device mask: 1, MShadow's CPU."""
        return CPU_DEV_MASK

    @property
    def ndim(self):
        """Number of dimensions."""
        return self._arr.ndim

    @property
    def size(self):
        """Number of elements (MShadow's ``shape_.Size()``)."""
        return self._arr.size

    def is_contiguous(self):
        """Whether the memory is one dense row-major block (MShadow's ``CheckContiguous``).

        Returns
        -------
        bool
            True for a C-contiguous layout (NumPy's ``flags.c_contiguous``;
            strides of length-1 dimensions and of empty blobs do not matter).
        """
        return bool(self._arr.flags.c_contiguous)

    def __repr__(self):
        return (f"Blob(ptr={self.ptr:#x}, shape={self.shape}, strides={self.strides}, "
                f"dtype={self.dtype}, type_flag={self._flag}, dev_mask={CPU_DEV_MASK})")

    # ------------------------------------------------------------ views

    def _check_dtype(self, dtype, where):
        if dtype is None:
            return
        dt = _as_dtype(dtype, where)
        if dt != self._arr.dtype:
            flag = TYPE_FLAGS.get(dt)
            given = f"{dt}" if flag is None else f"{dt} (type_flag {flag})"
            raise TypeError(f"Blob.{where}: data type does not match: the blob holds "
                            f"{self._arr.dtype} (type_flag {self._flag}), requested {given}")

    def get(self, ndim, dtype):
        """The blob as a Tensor of ``ndim`` dimensions and ``dtype`` (MShadow's ``get``).

        Parameters
        ----------
        ndim : int
            The dimensionality expected; must equal ``self.ndim``.
        dtype : data-type
            The dtype expected; must equal ``self.dtype``.

        Returns
        -------
        Tensor
            A view of the same memory, with the blob's shape and strides.

        Raises
        ------
        TypeError
            If ``dtype`` differs from the blob's (the message names both), or
            the dtype is one a pyet Tensor cannot hold.
        ValueError
            If ``ndim`` differs from the blob's (the message names both).
        """
        ndim = _as_int(ndim, "ndim", "get")
        self._check_dtype(dtype, "get")
        if ndim != self._arr.ndim:
            raise ValueError(f"Blob.get: dimensionality does not match: the blob has ndim "
                             f"{self._arr.ndim} (shape {self._arr.shape}), requested ndim {ndim}")
        return _tensor(self._arr.view(), "get")

    def get_with_shape(self, shape, dtype):
        """The contiguous blob reinterpreted with ``shape`` (MShadow's ``get_with_shape``).

        Parameters
        ----------
        shape : int or tuple of int
            The new shape; its element count must equal ``self.size``.
            Entries must be non-negative (no ``-1`` inference).
        dtype : data-type
            The dtype expected; must equal ``self.dtype``.

        Returns
        -------
        Tensor
            A C-contiguous view of the same memory with ``shape``.

        Raises
        ------
        TypeError
            If ``dtype`` differs from the blob's (the message names both).
        ValueError
            If the blob is not contiguous (the message names its shape and
            strides), or the element counts differ (naming both shapes).
        """
        if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
            shape = (shape,)
        try:
            shape = tuple(_as_int(d, "shape entries", "get_with_shape") for d in shape)
        except TypeError:
            raise TypeError("Blob.get_with_shape: shape must be an integer or a sequence of "
                            f"integers, got {shape!r}") from None
        if any(d < 0 for d in shape):
            raise ValueError(f"Blob.get_with_shape: shape {shape} has a negative dimension")
        self._check_dtype(dtype, "get_with_shape")
        arr = self._arr
        if not arr.flags.c_contiguous:
            raise ValueError(f"Blob.get_with_shape: the blob must be contiguous, but shape "
                             f"{arr.shape} has strides {arr.strides} (itemsize "
                             f"{arr.itemsize}); requested shape {shape}")
        if _prod(shape) != arr.size:
            raise ValueError(f"Blob.get_with_shape: new and old shape do not match total "
                             f"elements: the blob has shape {arr.shape} ({arr.size} elements), "
                             f"requested shape {shape} ({_prod(shape)} elements)")
        return _tensor(self._view(shape, "get_with_shape"), "get_with_shape")

    def _view(self, shape, where):
        # A reshaped view of the same memory, or ValueError: never a silent copy.
        arr = self._arr
        if _RESHAPE_HAS_COPY:
            try:
                out = np.reshape(arr, shape, copy=False)
            except ValueError:
                out = None
        else:  # pragma: no cover - NumPy 2.0: set the shape of a view, which cannot copy
            out = arr.view()
            try:
                out.shape = shape
            except AttributeError:
                out = None
        if out is None:
            raise ValueError(f"Blob.{where}: a blob of shape {arr.shape} with strides "
                             f"{arr.strides} cannot be viewed as shape {shape} without "
                             "copying, and a Blob never copies")
        return out

    def flat_to_1d(self, dtype=None):
        """All elements as a 1-D Tensor of ``size`` elements (MShadow's ``FlatTo1D``).

        Parameters
        ----------
        dtype : data-type, optional
            If given, must equal ``self.dtype`` (TypeError naming both).

        Returns
        -------
        Tensor
            A view of the same memory, shape ``(size,)``.

        Raises
        ------
        ValueError
            If the layout cannot be flattened without copying (the message
            names the shape and strides).
        """
        self._check_dtype(dtype, "flat_to_1d")
        return _tensor(self._view((self._arr.size,), "flat_to_1d"), "flat_to_1d")

    def flat_to_2d(self, dtype=None):
        """The blob as a 2-D Tensor (MShadow's ``FlatTo2D``).

        The columns are the last dimension and the rows the product of all
        the others: shape ``(2, 3, 4)`` becomes ``(6, 4)``, a 1-D ``(n,)``
        becomes ``(1, n)`` and a 0-d blob ``(1, 1)``.

        Parameters
        ----------
        dtype : data-type, optional
            If given, must equal ``self.dtype`` (TypeError naming both).

        Returns
        -------
        Tensor
            A view of the same memory.

        Raises
        ------
        ValueError
            If the layout cannot be flattened without copying (the message
            names the shape and strides).
        """
        self._check_dtype(dtype, "flat_to_2d")
        s = self._arr.shape
        shape = (1, 1) if not s else (_prod(s[:-1]), s[-1])
        return _tensor(self._view(shape, "flat_to_2d"), "flat_to_2d")

    def flat_to_3d(self, begin, end=None, dtype=None):
        """The blob as a 3-D Tensor around an axis range (MShadow's ``FlatTo3D``).

        ``flat_to_3d(begin, end)`` has shape ``(prod(shape[:begin]),
        prod(shape[begin:end + 1]), prod(shape[end + 1:]))``: the axes before
        ``begin``, the axes ``begin`` to ``end`` inclusive, and the axes after
        ``end``, each multiplied together.  ``flat_to_3d(axis)`` is
        ``flat_to_3d(axis, axis)``.  For shape ``(2, 3, 4)``,
        ``flat_to_3d(1)`` is ``(2, 3, 4)`` and ``flat_to_3d(0, 1)`` is
        ``(1, 6, 4)``.

        Parameters
        ----------
        begin : int
            First axis of the middle group; negative counts from the end.
        end : int, optional
            Last axis of the middle group (inclusive); defaults to ``begin``.
        dtype : data-type, optional
            If given, must equal ``self.dtype`` (TypeError naming both).

        Returns
        -------
        Tensor
            A view of the same memory.

        Raises
        ------
        numpy.exceptions.AxisError
            (a ValueError and an IndexError) if an axis is out of range.
        ValueError
            If ``begin > end``, or the layout cannot be flattened without
            copying (the message names the shape and strides).

        Notes
        -----
        A 0-d blob accepts axis 0 (or -1) and gives ``(1, 1, 1)``.
        """
        begin = _as_int(begin, "begin", "flat_to_3d")
        end = begin if end is None else _as_int(end, "end", "flat_to_3d")
        self._check_dtype(dtype, "flat_to_3d")
        s = self._arr.shape
        n = max(len(s), 1)
        axes = []
        for name, axis in (("begin", begin), ("end", end)):
            if not -n <= axis < n:
                raise np.exceptions.AxisError(
                    f"Blob.flat_to_3d: {name} axis {axis} is out of range for a blob of "
                    f"shape {s} (ndim {len(s)})")
            axes.append(axis % n)
        b, e = axes
        if b > e:
            raise ValueError(f"Blob.flat_to_3d: begin axis {begin} comes after end axis {end} "
                             f"(shape {s})")
        shape = (_prod(s[:b]), _prod(s[b:e + 1]), _prod(s[e + 1:]))
        return _tensor(self._view(shape, "flat_to_3d"), "flat_to_3d")
