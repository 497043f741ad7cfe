"""Shared helpers for the asv benchmarks (no benchmarks here)."""

import numpy as np

import pyet

DTYPES = ["float32", "float64"]
ETA, LAM = 0.1, 0.5


def rand(shape, dtype, seed=0, low=0.1, high=1.0):
    """Uniform random ndarray in [low, high) of ``dtype`` (reproducible)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(low, high, size=shape).astype(dtype)


def agree(run_pyet, run_numpy, result, *state):
    """Run the pyet and NumPy twins once each and fail unless they agree.

    Both start from the same values of ``state`` (arrays the benchmark updates in place, restored
    afterwards); ``result`` is the array each writes.  Called from ``setup``, so a wrong pyet result
    fails the benchmark (AssertionError) and pyet's plan cache is warm before timing.
    """
    saved = [s.copy() for s in state]

    def restore():
        for s, v in zip(state, saved, strict=True):
            s[...] = v

    run_pyet()
    got = result.copy()
    restore()
    run_numpy()
    rtol = 1e-4 if result.dtype == np.float32 else 1e-9
    np.testing.assert_allclose(got, result, rtol=rtol, err_msg="pyet disagrees with NumPy")
    restore()


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
