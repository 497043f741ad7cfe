"""Spatial blocks of convolutional networks (MShadow's ``unpack_patch2col``,
``pack_col2patch``, ``pool`` and ``unpool``) as special nodes, usable anywhere
inside a tree and computed by compiled kernels (``pyet/_kernels/spatial.pyx``).

Images are (..., C, H, W) for patches and (..., H, W) for pooling; the
leading axes are folded into one (N images, or planes).  Inputs are read
through their strides; at the root of an assignment the result is written
straight into the destination when it can be viewed with the kernel's shape.
"""

import math
import operator

import numpy as np

from pyet._core import core
from pyet._core.core import node
from pyet._kernels import spatial as _spatial_kernels
from pyet._nodes.nn import Kernel, _count, _fmt
from pyet._nodes.views import broadcast_to

_operand = core.as_expr
_NUMERIC = frozenset(np.dtype(t) for t in (np.int32, np.int64, np.float32, np.float64))


def _positive(value, fname, what):
    return _count(value, fname, what, least=1)


def _pair(value, fname, what):
    """(y, x) from an int or a pair of ints, each >= 1."""
    if type(value) is int or np.ndim(value) == 0:  # (np.ndim: ~0.4 us)
        n = _positive(value, fname, what)
        return n, n
    if len(value) != 2:
        raise ValueError(f"{fname}: {what} must be an int or a pair (y, x), got {value!r}")
    return tuple(_positive(v, fname, what) for v in value)


def _numeric(x, fname, what="the input"):
    if x.dtype not in _NUMERIC:
        raise TypeError(f"{fname}: {what} must be int32, int64, float32 or float64, "
                        f"got {x.dtype}")


def _fold(shape, k):
    """(prod(leading axes),) + the last k axes of ``shape``."""
    return (math.prod(shape[:-k]),) + tuple(shape[-k:])


# ---------------------------------------------------------------- patches

def _patches(shape, ky, kx, sy, sx, dy, dx, fname):
    """The number of patch positions (oH, oW) in an image of ``shape`` (..., C, H, W)."""
    H, W = shape[-2:]
    ey, ex = dy * (ky - 1) + 1, dx * (kx - 1) + 1  # the dilated kernel's extent
    if ey > H or ex > W:
        raise ValueError(f"{fname}: a {ky}x{kx} kernel (dilated extent {ey}x{ex}) does not fit "
                         f"in a {H}x{W} image")
    return (H - ey) // sy + 1, (W - ex) // sx + 1


class Im2Col(Kernel):
    """The patches of the image (args[0]) as columns."""

    __slots__ = ("ky", "kx", "sy", "sx", "dy", "dx", "_geom")
    name = "unpack_patch2col"
    # a 4-D image leaf into a 2-D destination: the compiled entry, no Python frame
    into_leaves = _spatial_kernels.im2col_leaves

    def __init__(self, ky, kx, sy, sx, dy, dx):
        self.ky, self.kx, self.sy, self.sx, self.dy, self.dx = ky, kx, sy, sx, dy, dx
        self._geom = (ky, kx, sy, sx, dy, dx)

    def geometry(self):
        return self._geom

    def params(self):
        return self._geom

    def describe(self):
        return [f"kernel=({self.ky}, {self.kx})", f"stride=({self.sy}, {self.sx})",
                f"dilate=({self.dy}, {self.dx})"]

    def shape(self, args):
        img = args[0].shape
        ky, kx, sy, sx, dy, dx = self._geom
        oh, ow = _patches(img, ky, kx, sy, sx, dy, dx, self.name)
        n = 1
        for d in img[:-3]:
            n *= d
        return (img[-3] * ky * kx, n * oh * ow)

    def dtype(self, args):
        return args[0].dtype

    work_is_shape = True

    def work_shape(self, arrays):
        return self.shape(arrays)

    def compute(self, out, arrays):
        img = arrays[0]
        if img.ndim != 4:  # leading axes folded into N
            img = img.reshape(_fold(img.shape, 3))
        _spatial_kernels.im2col_into(out, img, *self.geometry())

    def vjp(self, node, g):
        """Reverse mode: the columns summed back into images (col2im)."""
        return (pack_col2patch(g, node._args[0].shape, self.ky, self.kx, (self.sy, self.sx),
                               (self.dy, self.dx)),)


def unpack_patch2col(img, ky, kx, stride=1, dilate=1):
    """The ky x kx patches of ``img`` as the columns of a matrix (im2col;
    MShadow's ``unpack_patch2col``): a convolution is then ``dot(weight, cols)``.

    Parameters
    ----------
    img : Expr or array_like, (..., C, H, W)
        (C, H, W) is one image; leading axes fold into the number of images N.
    ky, kx : int
        Kernel height and width.
    stride, dilate : int or (int, int)
        Step between patches, and between a patch's taps, (y, x) or both.

    Returns
    -------
    Expr
        Of shape (C*ky*kx, N*oH*oW) and ``img``'s dtype, with
        ``oH = (H - (dilate_y*(ky-1) + 1)) // stride_y + 1`` (likewise oW):
        row ``(c*ky + py)*kx + px``, column ``(n*oH + oy)*oW + ox`` holds
        ``img[n, c, oy*stride_y + py*dilate_y, ox*stride_x + px*dilate_x]``.
        (MShadow computes a dilated extent of ``k*dilate - 1``, which is
        ``dilate*(k-1) + 1`` for dilations 1 and 2 and drops patches that fit
        for larger ones; pyet uses the exact extent.)

    Raises
    ------
    ValueError
        If ``img`` has fewer than 3 axes, a size, stride or dilation is below 1,
        or the dilated kernel does not fit in the image.
    TypeError
        If a size, stride or dilation is not an integer.
    """
    x = _operand(img)
    fname = "unpack_patch2col"
    if len(x.shape) < 3:
        raise ValueError(f"{fname}: img must be (..., C, H, W), got shape {_fmt(x.shape)}")
    # (sizes, strides and dilations checked once: a kernel per geometry of plain ints)
    key = (ky, kx, stride, dilate)
    plain = type(ky) is int and type(kx) is int and type(stride) is int \
        and type(dilate) is int
    kernel = _IM2COL.get(key) if plain else None
    if kernel is None:
        ky, kx = _positive(ky, fname, "ky"), _positive(kx, fname, "kx")
        (sy, sx), (dy, dx) = _pair(stride, fname, "stride"), _pair(dilate, fname, "dilate")
        kernel = Im2Col(ky, kx, sy, sx, dy, dx)
        if plain:
            if len(_IM2COL) >= 256:
                _IM2COL.clear()
            _IM2COL[key] = kernel
    return node(kernel, (x,), kernel.shape((x,)), x.dtype)


# Im2Col kernels by (ky, kx, stride, dilate) of plain ints (a kernel only holds
# its parameters: one serves every node of its geometry)
_IM2COL = {}


class Col2Im(Im2Col):
    """The columns of args[0] summed back into images of ``img_shape``."""

    __slots__ = ("img_shape",)
    name = "pack_col2patch"
    into_leaves = None  # (not Im2Col's)
    work_is_shape = False  # images folded to (N, C, H, W)

    def __init__(self, img_shape, *params):
        super().__init__(*params)
        self.img_shape = img_shape

    def params(self):
        return (self.img_shape,) + self.geometry()

    def describe(self):
        return [f"img_shape={self.img_shape}"] + super().describe()

    def shape(self, args):
        return self.img_shape

    def dtype(self, args):
        return args[0].dtype

    def work_shape(self, arrays):
        return _fold(self.img_shape, 3)

    def compute(self, out, arrays):
        _spatial_kernels.col2im_into(out, arrays[0], *self.geometry())

    def vjp(self, node, g):
        """Reverse mode: the patches of ``g`` as columns again (im2col)."""
        return (unpack_patch2col(g, self.ky, self.kx, (self.sy, self.sx), (self.dy, self.dx)),)


def pack_col2patch(col, img_shape, ky, kx, stride=1, dilate=1):
    """Sum the patch columns of ``col`` back into images (col2im; MShadow's
    ``pack_col2patch``): the adjoint of :func:`unpack_patch2col`, used for
    the gradient of a convolution with respect to its input.

    Parameters
    ----------
    col : Expr or array_like, 2-D (C*ky*kx, N*oH*oW)
        int32, int64, float32 or float64.
    img_shape : tuple of int, (..., C, H, W)
    ky, kx, stride, dilate
        As in :func:`unpack_patch2col`.

    Returns
    -------
    Expr
        Of shape ``img_shape`` and ``col``'s dtype: each pixel is the sum of
        every column entry :func:`unpack_patch2col` would have read from it
        (overlapping patches accumulate), summed in the order of (py, px, ox).

    Raises
    ------
    ValueError
        If ``img_shape`` has fewer than 3 axes, the kernel does not fit, or
        ``col``'s shape is not (C*ky*kx, N*oH*oW).
    TypeError
        If ``col`` is bool, or a size, stride or dilation is not an integer.
    """
    c = _operand(col)
    fname = "pack_col2patch"
    shape = tuple(operator.index(n) for n in img_shape)
    if len(shape) < 3 or any(n < 0 for n in shape):
        raise ValueError(f"{fname}: img_shape must be (..., C, H, W), got {img_shape!r}")
    _numeric(c, fname, "col")
    ky, kx = _positive(ky, fname, "ky"), _positive(kx, fname, "kx")
    (sy, sx), (dy, dx) = _pair(stride, fname, "stride"), _pair(dilate, fname, "dilate")
    oh, ow = _patches(shape, ky, kx, sy, sx, dy, dx, fname)
    want = (shape[-3] * ky * kx, _fold(shape, 3)[0] * oh * ow)
    if c.shape != want:
        raise ValueError(f"{fname}: col must have shape {_fmt(want)} for images of shape "
                         f"{_fmt(shape)}, got {_fmt(c.shape)}")
    kernel = Col2Im(shape, ky, kx, sy, sx, dy, dx)
    return node(kernel, (c,), shape, c.dtype)


# ---------------------------------------------------------------- pooling

_POOL_OPS = ("max", "sum", "avg")


def pooled_shape(shape, ky, kx, sy, sx):
    """MShadow's pooled size: ``min(H - ky + sy - 1, H - 1) // sy + 1`` rows
    (likewise columns), the last window clipped at the border."""
    H, W = shape[-2:]
    return (shape[:-2] + (min(H - ky + sy - 1, H - 1) // sy + 1,
                          min(W - kx + sx - 1, W - 1) // sx + 1))


def _pool_args(x, ky, kx, sy, sx, op, fname):
    if x.ndim < 2:
        raise ValueError(f"{fname}: the input must be (..., H, W), got shape {_fmt(x.shape)}")
    ky, kx = _positive(ky, fname, "ky"), _positive(kx, fname, "kx")
    sy = ky if sy is None else _positive(sy, fname, "sy")
    sx = kx if sx is None else _positive(sx, fname, "sx")
    if op not in _POOL_OPS:
        raise ValueError(f"{fname}: op must be one of {_POOL_OPS}, got {op!r}")
    H, W = x.shape[-2:]
    if ky > H or kx > W:
        raise ValueError(f"{fname}: a {ky}x{kx} window does not fit in a {H}x{W} image")
    _numeric(x, fname)
    if op == "avg" and x.dtype.kind != "f":
        raise TypeError(f"{fname}: op='avg' needs a float32 or float64 input, got {x.dtype}; "
                        f"cast it first (x.astype(np.float64))")
    return ky, kx, sy, sx


class Pool(Kernel):
    """args[0] pooled by ky x kx windows at strides sy, sx."""

    __slots__ = ("ky", "kx", "sy", "sx", "op", "_params")
    name = "pool"

    def __init__(self, ky, kx, sy, sx, op):
        self.ky, self.kx, self.sy, self.sx, self.op = ky, kx, sy, sx, op
        self._params = (ky, kx, sy, sx, op)

    def params(self):
        return self._params

    def describe(self):
        return [f"kernel=({self.ky}, {self.kx})", f"stride=({self.sy}, {self.sx})",
                f"op={self.op!r}"]

    def shape(self, args):
        return pooled_shape(args[0].shape, self.ky, self.kx, self.sy, self.sx)

    def dtype(self, args):
        return args[0].dtype

    def work_shape(self, arrays):
        return _fold(self.shape(arrays), 2)

    def compute(self, out, arrays):
        src = arrays[0]
        _spatial_kernels.pool_into(out, src.reshape(_fold(src.shape, 2)), *self.params())

    def vjp(self, node, g):
        """Reverse mode: :func:`unpool` (every tied maximum gets the window's gradient)."""
        x = node._args[0]
        return (unpool(x, node, g.astype(x.dtype), self.ky, self.kx, self.sy, self.sx,
                       self.op),)


def pool(e, ky, kx, sy=None, sx=None, op="max"):
    """Pool the last two axes of ``e`` over ky x kx windows (MShadow's ``pool``).

    Parameters
    ----------
    e : Expr or array_like, (..., H, W)
        int32, int64, float32 or float64 (float only for ``op="avg"``).
    ky, kx : int
        Window height and width, at most H and W.
    sy, sx : int, optional
        Steps between windows; the window size by default.
    op : {"max", "sum", "avg"}
        ``avg`` is the window's sum divided by ``ky*kx``, as MShadow's, also
        for windows clipped at the border.  ``max`` propagates NaN, as NumPy's.

    Returns
    -------
    Expr
        Of shape (..., pH, pW) and ``e``'s dtype, with MShadow's
        ``pH = min(H - ky + sy - 1, H - 1) // sy + 1`` (likewise pW): when the
        windows do not tile the image exactly, a last window clipped at the
        border is kept (Caffe's ceil mode).  Sums accumulate in ``e``'s dtype.

    Raises
    ------
    ValueError
        If ``e`` has fewer than 2 axes, a size or stride is below 1, the window
        is larger than the image, or ``op`` is unknown.
    TypeError
        If ``e`` is bool, ``op="avg"`` on integers, or a size or stride is not an integer.
    """
    x = _operand(e)
    params = _pool_args(x, ky, kx, sy, sx, op, "pool")
    kernel = Pool(*params, op)
    return node(kernel, (x,), kernel.shape((x,)), x.dtype)


class Unpool(Pool):
    """The gradient of pooling args[0] into args[1], given args[2]."""

    __slots__ = ()
    name = "unpool"
    # leaves of one dtype into dst: the compiled entry, no Python frame
    into_leaves = _spatial_kernels.unpool_leaves

    def shape(self, args):
        return args[0].shape

    def work_shape(self, arrays):
        return _fold(arrays[0].shape, 2)

    def compute(self, out, arrays):
        src, pooled, grad = (a.reshape(_fold(a.shape, 2)) for a in arrays)
        _spatial_kernels.unpool_into(out, src, pooled, grad, *self.params())

    def vjp(self, node, g):
        """Reverse mode with respect to the pooled gradient (args[2]): pooling ``g``
        again (sum, avg), or for max the sum of ``g`` at each window's maxima
        (:class:`PoolMaskedSum` where windows overlap).  src and pooled get
        none (piecewise constant)."""
        src, pooled, _ = node._args
        if self.op != "max":
            return (None, None, pool(g, self.ky, self.kx, self.sy, self.sx, self.op))
        if self.sy < self.ky or self.sx < self.kx:  # an element in several windows
            k = PoolMaskedSum(self.ky, self.kx, self.sy, self.sx, "max")
            return (None, None, core.node(k, (src, pooled, g), pooled.shape, pooled.dtype))
        ones = broadcast_to(core.tensor(np.ones((), pooled.dtype)), pooled.shape)
        hits = unpool(src, pooled, ones, self.ky, self.kx, self.sy, self.sx, "max")
        return (None, None, pool(g * hits, self.ky, self.kx, self.sy, self.sx, "sum"))


class PoolMaskedSum(Pool):
    """For each max-pooling window, the sum of args[2] (of the input's shape)
    over the window's elements equal to its maximum (args[1]): the adjoint of
    max :func:`unpool` in its gradient, so the gradient of unpool for
    windows that overlap (each element counted in every window holding it).
    NaN never equals the maximum, as in unpool."""

    __slots__ = ()
    name = "pool_masked_sum"

    def shape(self, args):
        return args[1].shape

    def work_shape(self, arrays):
        return _fold(arrays[1].shape, 2)

    def compute(self, out, arrays):
        src, pooled, g = (a.reshape(_fold(a.shape, 2)) for a in arrays)
        H, W = src.shape[-2:]
        pH, pW = pooled.shape[-2:]
        out[...] = 0
        # one window offset (dy, dx) at a time: the elements at that offset of
        # every window that reaches it (windows clipped at the border stop short)
        for dy in range(self.ky):
            ny = min(pH, (H - 1 - dy) // self.sy + 1)
            for dx in range(self.kx):
                nx = min(pW, (W - 1 - dx) // self.sx + 1)
                if ny <= 0 or nx <= 0:
                    continue
                rows = slice(dy, dy + self.sy * (ny - 1) + 1, self.sy)
                cols = slice(dx, dx + self.sx * (nx - 1) + 1, self.sx)
                hit = src[:, rows, cols] == pooled[:, :ny, :nx]
                out[:, :ny, :nx] += np.where(hit, g[:, rows, cols], 0).astype(out.dtype)

    def vjp(self, node, g):
        """Linear in args[2]: its adjoint is max :func:`unpool`."""
        src, pooled, _ = node._args
        return (None, None, unpool(src, pooled, g.astype(src.dtype), self.ky, self.kx,
                                   self.sy, self.sx, "max"))


def unpool(src, pooled, grad, ky, kx, sy=None, sx=None, op="max"):
    """The gradient of :func:`pool` with respect to its input (MShadow's ``unpool``).

    Parameters
    ----------
    src : Expr or array_like, (..., H, W)
        The pooled input.
    pooled : Expr or array_like
        ``pool(src, ky, kx, sy, sx, op)``, of shape (..., pH, pW).
    grad : Expr or array_like
        The gradient with respect to the pooled values, of ``pooled``'s shape.
    ky, kx, sy, sx, op
        As given to :func:`pool`.

    Returns
    -------
    Expr
        Of ``src``'s shape and dtype.  Each input element receives the sum, over
        the windows containing it, of: for ``max``, the window's gradient when
        the element equals the window's maximum (MShadow's rule: every tied
        maximum receives the full gradient, and NaN never equals the maximum);
        for ``sum``, the window's gradient; for ``avg``, the window's gradient
        divided by ``ky*kx``.

    Raises
    ------
    ValueError
        As :func:`pool`; and if ``pooled`` or ``grad`` do not have the pooled shape.
    TypeError
        As :func:`pool`; and if ``src``, ``pooled`` and ``grad`` differ in dtype.
    """
    x, p, g = _operand(src), _operand(pooled), _operand(grad)
    fname = "unpool"
    params = _pool_args(x, ky, kx, sy, sx, op, fname)
    want = pooled_shape(x.shape, *params)
    for what, a in (("pooled", p), ("grad", g)):
        if a.shape != want:
            raise ValueError(f"{fname}: {what} must have the pooled shape {_fmt(want)} of an "
                             f"input of shape {_fmt(x.shape)}, got {_fmt(a.shape)}")
    if not x.dtype == p.dtype == g.dtype:
        raise TypeError(f"{fname}: src, pooled and grad must share one dtype, got {x.dtype}, "
                        f"{p.dtype} and {g.dtype}")
    kernel = Unpool(*params, op)
    return node(kernel, (x, p, g), x.shape, x.dtype)


__all__ = ["pack_col2patch", "pool", "unpack_patch2col", "unpool"]
