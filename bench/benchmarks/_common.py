"""Shared helpers for the asv benchmarks (no benchmarks here)."""

import numpy as np

import pyet

DTYPES = ["float32", "float64"]
ETA, LAM = 0.1, 0.5


def rand(shape, dtype, seed=0, low=0.1, high=1.0):
    """Uniform random ndarray in [low, high) of ``dtype`` (reproducible)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(low, high, size=shape).astype(dtype)


def require(*names):
    """Skip (asv's convention: NotImplementedError in setup) unless pyet has ``names``."""
    missing = [n for n in names if not hasattr(pyet, n)]
    if missing:
        raise NotImplementedError("this pyet has no " + ", ".join("pyet." + n for n in missing))


def transposed(t, a):
    """``t.T`` when pyet's tensors have a lazy transpose, else a transposed leaf of ``a``."""
    try:
        return t.T
    except AttributeError:
        return pyet.asarray(a.T)
