"""Parameter initializers (MetaNN's constant, Gaussian, uniform and VarScale
fillers).  Each is called with a parameter's shape, fans, generator and dtype
and returns a new array."""

import math

import numpy as np


class Initializer:
    """Base class: ``init(shape, fan_in, fan_out, rng, dtype) -> ndarray``.

    Fan-based initializers (the VarScale family) fill 1-D parameters (biases)
    with zeros; the others fill every parameter.
    """

    fan_based = False

    def __call__(self, shape, fan_in, fan_out, rng, dtype):
        if self.fan_based and len(shape) < 2:
            return np.zeros(shape, dtype)
        return np.asarray(self.sample(shape, fan_in, fan_out, rng), dtype=dtype)

    def sample(self, shape, fan_in, fan_out, rng):
        raise NotImplementedError  # every concrete initializer below overrides it

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class Constant(Initializer):
    """Every element ``value``."""

    def __init__(self, value=0.0):
        self.value = float(value)

    def sample(self, shape, fan_in, fan_out, rng):
        return np.full(shape, self.value)


class Normal(Initializer):
    """Gaussian with ``mean`` and ``std``."""

    def __init__(self, mean=0.0, std=1.0):
        if std < 0:
            raise ValueError(f"Normal: std must be >= 0, got {std}")
        self.mean, self.std = float(mean), float(std)

    def sample(self, shape, fan_in, fan_out, rng):
        return rng.normal(self.mean, self.std, shape)


class Uniform(Initializer):
    """Uniform on [low, high)."""

    def __init__(self, low=0.0, high=1.0):
        if high < low:
            raise ValueError(f"Uniform: high ({high}) must be >= low ({low})")
        self.low, self.high = float(low), float(high)

    def sample(self, shape, fan_in, fan_out, rng):
        return rng.uniform(self.low, self.high, shape)


class XavierUniform(Initializer):
    """U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot; torch.nn.init's)."""

    fan_based = True

    def __init__(self, gain=1.0):
        self.gain = float(gain)

    def sample(self, shape, fan_in, fan_out, rng):
        a = self.gain * math.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-a, a, shape)


class XavierNormal(Initializer):
    """N(0, std), std = gain * sqrt(2 / (fan_in + fan_out))."""

    fan_based = True

    def __init__(self, gain=1.0):
        self.gain = float(gain)

    def sample(self, shape, fan_in, fan_out, rng):
        return rng.normal(0.0, self.gain * math.sqrt(2.0 / (fan_in + fan_out)), shape)


class KaimingNormal(Initializer):
    """N(0, std), std = gain / sqrt(fan) with gain sqrt(2 / (1 + a**2)) (He;
    ``a`` = 0 for ReLU), fan = fan_in or fan_out (``mode``)."""

    fan_based = True

    def __init__(self, a=0.0, mode="fan_in"):
        if mode not in ("fan_in", "fan_out"):
            raise ValueError(f"KaimingNormal: mode must be 'fan_in' or 'fan_out', got {mode!r}")
        self.a, self.mode = float(a), mode

    def sample(self, shape, fan_in, fan_out, rng):
        fan = fan_in if self.mode == "fan_in" else fan_out
        return rng.normal(0.0, math.sqrt(2.0 / (1 + self.a ** 2)) / math.sqrt(fan), shape)


class _TorchDefault(Initializer):
    """PyTorch's default for Linear, Conv2d and GRU parameters: U(-b, b) with
    b = 1/sqrt(fan_in) (the layer may give its own ``bound``)."""

    def __call__(self, shape, fan_in, fan_out, rng, dtype, bound=None):
        b = bound if bound is not None else (1.0 / math.sqrt(fan_in) if fan_in else 0.0)
        return rng.uniform(-b, b, shape).astype(dtype)


DEFAULT = _TorchDefault()

__all__ = ["Constant", "Initializer", "KaimingNormal", "Normal", "Uniform", "XavierNormal",
           "XavierUniform"]
