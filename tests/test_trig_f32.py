"""float32 sin, cos and log: pyet's vectorized kernels (float lanes where the CPU has
FMA, else double lanes rounded once; tests/test_f32_math_kernels.py holds them to the
correctly rounded result) against NumPy's SIMD ones, over a sample of every float32 bit
pattern, the special values, in place, across the kernels' chunk boundaries, and with
NumPy's floating-point flags.  No timing here: bench/bench_grid.py measures.
"""

import numpy as np
import pytest
from conftest import ulps_f32 as ulps

import pyet
from pyet._core.ops import NUMPY_SIMD_LOOPS

pytestmark = pytest.mark.usefixtures("simd_lowering")  # conftest's: both lowerings

F32 = np.float32


def sample_of_all_floats(step=4099):
    return np.arange(0, 2 ** 32, step, dtype=np.uint64).astype(np.uint32).view(F32)


def special_values():
    fi = np.finfo(F32)
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, fi.tiny, -fi.tiny,
                     fi.smallest_subnormal, -fi.smallest_subnormal, fi.tiny / 3, fi.max,
                     -fi.max, 2.0 ** -12, -(2.0 ** -12), 2.0 ** -13, 2.0 ** 18, -(2.0 ** 18),
                     2.0 ** 18 - 0.015625, 1e10, 1e30, np.pi / 2, np.pi, 3 * np.pi / 2, 1.0,
                     0.5, 2.0, 1e-30, 0.6147, 1.4142135, 0.70710677], F32)


def run(name, x):
    with np.errstate(all="ignore"):
        return pyet.evaluate(getattr(pyet, name)(pyet.asarray(x))).numpy()


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_cos_within_two_ulp_of_numpy_over_all_floats(name, simd_lowering):
    x = np.concatenate([sample_of_all_floats(), special_values()])
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
    got = run(name, x)
    assert got.dtype == F32
    assert ulps(got, want).max() <= 2
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    if simd_lowering == "numpy_loop" and (name, "float32") in NUMPY_SIMD_LOOPS:
        np.testing.assert_array_equal(got, want)  # NumPy's own loop: its bits


def test_log_within_one_ulp_and_near_numpy_over_all_floats():
    x = np.concatenate([sample_of_all_floats(), special_values()])
    with np.errstate(all="ignore"):
        want = np.log(x)
        exact = np.log(x.astype(np.float64)).astype(F32)
    got = run("log", x)
    assert ulps(got, exact).max() <= 1
    # NumPy's own float32 log is up to 3 ulp off in [0.6, 0.66]
    assert ulps(got, want).max() <= 3
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("name", ["sin", "cos", "log"])
def test_special_values_exact(name):
    x = special_values()
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
        exact = getattr(np, name)(x.astype(np.float64)).astype(F32)
    got = run(name, x)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    assert ulps(got[finite], exact[finite]).max() <= 1
    if name == "sin":  # the sign of zero and of tiny values is kept
        np.testing.assert_array_equal(np.signbit(got[:2]), [False, True])


@pytest.mark.parametrize("name", ["sin", "cos", "log"])
@pytest.mark.parametrize("n", [1, 255, 256, 257, 1000, 5000])
def test_in_place_with_slow_lanes_across_chunks(name, n):
    # the fix-up lanes (huge, subnormal, inf, nan, <= 0 for log) fall on both
    # sides of the kernel's 256-element chunks while out is the input's block
    rng = np.random.default_rng(n)
    a = (rng.standard_normal(n) * 10).astype(F32)
    slow = special_values()
    picks = rng.integers(0, n, max(n // 20, 1))
    a[picks] = slow[rng.integers(0, slow.size, picks.size)]
    if n > 256:
        a[255], a[256] = F32(1e30), F32(-np.inf)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a)
    t = pyet.asarray(a.copy())
    with np.errstate(all="ignore"):
        t[...] = getattr(pyet, name)(t)
    assert ulps(t.numpy(), want).max() <= (3 if name == "log" else 2)
    # strided and reversed operands gather first, then the same kernel
    with np.errstate(all="ignore"):
        got = pyet.evaluate(getattr(pyet, name)(pyet.asarray(a[::-1]))).numpy()
    assert ulps(got, want[::-1]).max() <= (3 if name == "log" else 2)


@pytest.mark.parametrize("name,value,flag", [
    ("sin", np.inf, "invalid"), ("cos", -np.inf, "invalid"), ("log", -1.0, "invalid"),
    ("log", 0.0, "divide"), ("sin", 1e-45, "under"), ("cos", 1e-39, "under"),
])
def test_floating_point_flags_as_numpy(name, value, flag):
    x = np.full(300, 0.5, F32)
    x[123] = value
    with np.errstate(**{flag: "raise"}):
        with pytest.raises(FloatingPointError):
            getattr(np, name)(x)
        with pytest.raises(FloatingPointError, match=flag if flag != "under" else "underflow"):
            pyet.evaluate(getattr(pyet, name)(pyet.asarray(x)))


@pytest.mark.parametrize("name", ["sin", "cos", "log"])
def test_no_flag_on_ordinary_values(name):
    rng = np.random.default_rng(2)
    x = (rng.random(3000) * 1000 + 1e-3).astype(F32)
    with np.errstate(all="raise"):
        np.testing.assert_array_equal(np.isfinite(run(name, x)), True)
        pyet.evaluate(getattr(pyet, name)(pyet.asarray(x)))
