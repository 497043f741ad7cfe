"""Convolution and pooling layers: Conv2d as im2col + one gemm in MShadow's
layout (``dot(weight, unpack_patch2col(x))``), MaxPool2d and AvgPool2d with
PyTorch's window count (floor mode)."""

import math

from pyet._core import core
from pyet._nodes.spatial import pool, unpack_patch2col
from pyet._nodes.views import crop, pad, reshape
from pyet.nn._layer import Layer

_fmt = core.fmt_shape


def _pair(value, cls, what, least=1):
    v = (value, value) if isinstance(value, int) else tuple(value)
    if len(v) != 2 or not all(isinstance(n, int) and n >= least for n in v):
        raise ValueError(f"{cls}: {what} must be an int >= {least} or a pair of them, got "
                         f"{value!r}")
    return v


def _check_image(x, cls, channels=None):
    if x.ndim != 4:
        raise ValueError(f"{cls}: input must be (N, C, H, W), got shape {_fmt(x.shape)}")
    if channels is not None and x.shape[1] != channels:
        raise ValueError(f"{cls}: input has {x.shape[1]} channels, the layer {channels}")
    if x.dtype.kind != "f":
        raise TypeError(f"{cls}: input must be float, got {x.dtype}")


class Conv2d(Layer):
    """2-D convolution (cross-correlation, as PyTorch's Conv2d) of (N, C, H, W)
    inputs: zero ``padding``, then the patches as columns (im2col) and one
    matrix product with the weight, in MShadow's layout.

    Parameters
    ----------
    in_channels, out_channels : int
    kernel_size, stride, padding, dilation : int or (int, int)
    bias : bool, default True
    policy : Policy, optional

    Parameters (tensors): ``weight`` (out, in, kh, kw) and ``bias`` (out,), as PyTorch.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 bias=True, policy=None):
        super().__init__(policy)
        if not (isinstance(in_channels, int) and in_channels > 0 and
                isinstance(out_channels, int) and out_channels > 0):
            raise ValueError(f"Conv2d: channels must be positive ints, got {in_channels}, "
                             f"{out_channels}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _pair(kernel_size, "Conv2d", "kernel_size")
        self.stride = _pair(stride, "Conv2d", "stride")
        self.padding = _pair(padding, "Conv2d", "padding", 0)
        self.dilation = _pair(dilation, "Conv2d", "dilation")
        self.bias = bool(bias) and self.policy.bias
        kh, kw = self.kernel_size
        fan_in, fan_out = in_channels * kh * kw, out_channels * kh * kw
        bound = 1.0 / math.sqrt(fan_in)
        self._param("weight", (out_channels, in_channels, kh, kw), fan_in, fan_out, bound)
        if self.bias:
            self._param("bias", (out_channels,), fan_in, fan_out, bound)

    def compute(self, input):
        _check_image(input, "Conv2d", self.in_channels)
        x = input
        ph, pw = self.padding
        if ph or pw:
            x = pad(x, ((ph, ph), (pw, pw)))
        kh, kw = self.kernel_size
        cols = unpack_patch2col(x, kh, kw, self.stride, self.dilation)  # (C*kh*kw, N*oH*oW)
        n = x.shape[0]
        ohw = cols.shape[1] // n if n else 0
        oh = (x.shape[2] - (self.dilation[0] * (kh - 1) + 1)) // self.stride[0] + 1
        ow = ohw // oh if oh else 0
        w = reshape(self._params["weight"], (self.out_channels, -1))
        y = core.dot(w, cols)  # (out, N*oH*oW)
        y = core.transpose(reshape(y, (self.out_channels, n, oh, ow)), (1, 0, 2, 3))
        if self.bias:
            y = y + reshape(self._params["bias"], (self.out_channels, 1, 1))
        return {"output": y}

    def __repr__(self):
        return (f"Conv2d({self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size},"
                f" stride={self.stride}, padding={self.padding}, dilation={self.dilation}, "
                f"bias={self.bias})")


class _Pool2d(Layer):
    op = "max"

    def __init__(self, kernel_size, stride=None, policy=None):
        super().__init__(policy)
        cls = type(self).__name__
        self.kernel_size = _pair(kernel_size, cls, "kernel_size")
        self.stride = self.kernel_size if stride is None else _pair(stride, cls, "stride")

    def compute(self, input):
        _check_image(input, type(self).__name__)
        (kh, kw), (sh, sw) = self.kernel_size, self.stride
        H, W = input.shape[-2:]
        if kh > H or kw > W:
            raise ValueError(f"{type(self).__name__}: a {kh}x{kw} window does not fit in a "
                             f"{H}x{W} image")
        # PyTorch's floor mode: drop the rows and columns no whole window covers
        h, w = (H - kh) // sh * sh + kh, (W - kw) // sw * sw + kw
        x = input if (h, w) == (H, W) else crop(input, (h, w), (0, 0))
        return {"output": pool(x, kh, kw, sh, sw, self.op)}

    def __repr__(self):
        return f"{type(self).__name__}(kernel_size={self.kernel_size}, stride={self.stride})"


class MaxPool2d(_Pool2d):
    """Max over windows of (N, C, H, W) inputs (PyTorch's MaxPool2d, floor mode;
    a tied maximum's gradient goes to every tied element, as MShadow's)."""

    op = "max"


class AvgPool2d(_Pool2d):
    """Mean over windows of (N, C, H, W) inputs (PyTorch's AvgPool2d, floor mode)."""

    op = "avg"
