"""float32 log, sin, cos and tanh computed in float lanes with FMA (issue 15: the double
ones ran 8 lanes to NumPy's 16), against the correctly rounded result (float64 NumPy
rounded to float32): within 1 ulp over a sweep of every float32 exponent, random bit
patterns with subnormals, hard reduction cases and huge arguments; NumPy's floating-point
flags on special values; the layouts and thread counts the kernels serve.  No timing here:
bench/bench_grid.py measures.
"""

import numpy as np
import pytest
from conftest import fp_flags_raised
from conftest import ulps_f32 as ulps

import pyet

pytestmark = pytest.mark.usefixtures("simd_lowering")  # conftest's: both lowerings

F32 = np.float32
NAMES = ["log", "sin", "cos", "tanh"]


def correctly_rounded(name, x):
    with np.errstate(all="ignore"):
        return getattr(np, name)(x.astype(np.float64)).astype(F32)


def run_raw(name, x):
    return np.asarray(pyet.evaluate(getattr(pyet, name)(pyet.asarray(x))))


def run(name, x):
    with np.errstate(all="ignore"):
        return run_raw(name, x)


def sweep():
    """Every 4099th float32 bit pattern (all exponents, both signs), a million random
    ones, and random subnormals."""
    rng = np.random.default_rng(15)
    every = np.arange(0, 2 ** 32, 4099, dtype=np.uint64).astype(np.uint32)
    rand = rng.integers(0, 2 ** 32, 1_000_000, dtype=np.uint64).astype(np.uint32)
    sub = rng.integers(1, 0x800000, 20_000, dtype=np.uint32) | (
        rng.integers(0, 2, 20_000, dtype=np.uint32) << 31)
    return np.concatenate([every, rand, sub]).view(F32)


def hard_reductions():
    """Floats nearest to multiples of pi/2 below and above the fast path's 2^20 bound (the
    reduction cancels most there), the bound itself, and |x| around 2^-12 (below it sin x
    rounds to x and cos x to 1)."""
    k = np.arange(1, 700_000, 37, dtype=np.float64)
    near = (k * (np.pi / 2)).astype(F32)
    nb = np.concatenate([near, np.nextafter(near, F32(np.inf)), np.nextafter(near, F32(0))])
    edges = np.array([2.0 ** 20, 2.0 ** 20 - 0.0625, 2.0 ** 20 + 0.125, 2.0 ** -12,
                      2.0 ** -12 * (1 - 2 ** -24), 2.0 ** -12 * (1 + 2 ** -23), 1e-30, 2e-38,
                      252.898209, 1e6, 1e10, 3.4e38, np.pi / 4, np.pi / 2, 3.0e5], np.float64)
    edges = np.concatenate([edges, -edges]).astype(F32)
    return np.concatenate([nb, -nb, edges])


@pytest.mark.parametrize("name", NAMES)
def test_within_one_ulp_of_correctly_rounded_over_a_dense_sweep(name):
    x = sweep()
    got = run(name, x)
    want = correctly_rounded(name, x)
    assert got.dtype == F32
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    d = ulps(got, want)
    assert d.max() <= 1, f"{d.max()} ulp at x = {x[np.argmax(d)]!r}"
    # mostly correctly rounded: the ulp misses are rare
    assert np.count_nonzero(d) < 0.1 * x.size


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_cos_hard_reductions_and_huge_arguments(name):
    x = hard_reductions()
    d = ulps(run(name, x), correctly_rounded(name, x))
    assert d.max() <= 1, f"{d.max()} ulp at x = {x[np.argmax(d)]!r}"
    # |x| >= 2^20 lanes are libm's, mixed with fast lanes in each chunk
    rng = np.random.default_rng(3)
    big = (rng.uniform(-1, 1, 5000) * 10.0 ** rng.uniform(0, 38, 5000)).astype(F32)
    assert ulps(run(name, big), correctly_rounded(name, big)).max() <= 1
    if name == "sin":  # the sign of zero and of tiny values is kept
        np.testing.assert_array_equal(np.signbit(run(name, np.array([0.0, -0.0, -1e-30], F32))),
                                      [False, True, True])


def test_log_near_one_and_at_the_mantissa_split():
    # f = m - 1 near 0 (no cancellation loss) and m at sqrt(2)/2, where k changes
    one = np.float32(1) + np.arange(-3000, 3000, dtype=F32) * np.finfo(F32).eps / 2
    split = np.float32(np.sqrt(0.5)) * (np.float32(1) + np.arange(-50, 50, dtype=F32) * 2 ** -23)
    x = np.concatenate([one, split, split * 2 ** 60, split * 2 ** -100]).astype(F32)
    assert ulps(run("log", x), correctly_rounded("log", x)).max() <= 1
    assert run("log", np.array([1.0], F32))[0] == 0


# NumPy's sin and cos raise underflow up to |x| = 2.655742e-19 (x^2/6 underflows inside)
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 1e-45, -1e-45, 1e-39, 1.1754944e-38,
            1e-30, 2.655742e-19, -2.655742e-19, 2.6557422e-19, 1e-10, 3.4028235e38,
            -3.4028235e38, 1.0, 2.0 ** 20, 1e30]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("value", SPECIALS)
def test_special_values_and_their_flags_as_numpy(name, value):
    # the special lane in a chunk of ordinary ones, at both sides of a 256-element chunk
    x = np.full(600, 0.75, F32)
    x[[3, 255, 256, 599]] = F32(value)
    want = getattr(np, name)
    with np.errstate(all="ignore"):
        ref = want(x)
    got = run(name, x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(got[~finite], ref[~finite])
    assert ulps(got[finite], correctly_rounded(name, x)[finite]).max() <= 1
    assert fp_flags_raised(lambda: run_raw(name, x)) == fp_flags_raised(lambda: want(x))


@pytest.mark.parametrize("name", NAMES)
def test_no_flags_on_ordinary_values_and_hard_reductions(name):
    rng = np.random.default_rng(4)
    x = (rng.random(5000) * 2000 + 1e-3).astype(F32)
    if name != "log":  # (NumPy raises underflow on |x| <= 2.655742e-19)
        hard = hard_reductions()
        x = np.concatenate([x, -x, hard[np.abs(hard) > 1e-18]])
    assert fp_flags_raised(lambda: run_raw(name, x)) == set()


LAYOUTS = {
    "C": lambda a: a,
    "fortran": np.asfortranarray,
    "transposed": lambda a: a.T,
    "step3": lambda a: a[:, ::3],
    "negative": lambda a: a[::-1, ::-2],
    "0d": lambda a: a[3, 5],
    "empty": lambda a: a[:0],
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layouts_and_thread_counts(name, layout, threads):
    before = pyet.get_num_threads()
    pyet.set_num_threads(threads)
    try:
        rng = np.random.default_rng(5)
        a = (rng.random((300, 700)) * 40 - (0 if name == "log" else 20)).astype(F32)
        a[7, ::50] = np.array([0.0, np.inf, -np.inf, np.nan, 1e-40, 3e30, -5.0] * 2, F32)
        x = LAYOUTS[layout](a)
        want = correctly_rounded(name, np.asarray(x))
        got = run(name, x)
        assert got.shape == np.shape(x) and got.dtype == F32
        assert ulps(got, want).max(initial=0) <= 1
        # into a destination, and in place (the destination is the operand's block)
        out = np.empty(np.shape(x), F32)
        with np.errstate(all="ignore"):
            pyet.asarray(out)[...] = getattr(pyet, name)(pyet.asarray(x))
        np.testing.assert_array_equal(out, got)
        if np.ndim(x):
            y = np.array(x, copy=True)
            T = pyet.asarray(y)
            with np.errstate(all="ignore"):
                T[...] = getattr(pyet, name)(T)
            np.testing.assert_array_equal(y, got)
    finally:
        pyet.set_num_threads(before)


def test_fused_with_other_ops_matches_the_kernels_alone():
    rng = np.random.default_rng(6)
    x = (rng.random(10_000) * 10 + 0.1).astype(F32)
    X = pyet.asarray(x)
    got = np.asarray(pyet.evaluate(pyet.sin(X) * pyet.cos(X) + pyet.log(X)))
    want = run("sin", x) * run("cos", x) + run("log", x)
    np.testing.assert_array_equal(got, want)
