"""float64 exp (and the sigmoid and logistic kernels built on it): within 1 ulp of the correctly
rounded result, NumPy's values at the edges (0, inf, NaN payloads, overflow, subnormal results)
and NumPy's floating-point flags, on every lane position, length and layout.  On AVX-512 CPUs
this is pyet's table-driven AVX-512 kernel, elsewhere the vectorized branch-free one."""

import math

import numpy as np
import pytest
from conftest import fp_flags_raised

import pyet

EXTENDED = np.finfo(np.longdouble).nmant >= 63  # x87 80-bit: exp's reference to 2^-11 ulp

EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0**-54, -(2.0**-54), 2.0**-60,
         -(2.0**-60), 1e-300, -1e-300, 5e-324, -5e-324, 2.0**-53, 1e-10, -1e-10,
         708.0, 708.0000000000001, -708.0, -708.0000000000001, 709.0, 709.78,
         709.782712893384, 709.7827128933841, 710.0, 1e300, -708.39, -708.3964185322641,
         -708.4, -720.0, -745.0, -745.13, -745.1332191019411, -745.1332191019412, -746.0,
         -1e300, np.log(2) / 32, -np.log(2) / 32, 0.5 * np.log(2), 100 * np.log(2)]


def pexp(x):
    return np.asarray(pyet.evaluate(pyet.exp(pyet.asarray(x))))


def ulps(got, x):
    """|got - exp(x)| in units of the last place of the double nearest exp(x)."""
    ref = np.exp(np.asarray(x, np.longdouble))
    sp = np.spacing(np.abs(ref.astype(np.float64))).astype(np.longdouble)
    return np.abs(got.astype(np.longdouble) - ref) / sp


def test_edges_match_numpy_bit_for_bit_or_by_one_ulp():
    x = np.array(EDGES)
    with np.errstate(all="ignore"):
        got, want = pexp(x), np.exp(x)
    for v, g, w in zip(x, got, want, strict=True):
        if math.isnan(w) or math.isinf(w) or w == 0.0 or w == 1.0 or v == 0.0:
            assert g.tobytes() == w.tobytes(), (v, g, w)
        else:
            assert abs(int(g.view(np.int64)) - int(w.view(np.int64))) <= 1, (v, g, w)
    assert pexp(np.array([0.0, -0.0]))[0] == 1.0 and pexp(np.array([-0.0]))[0] == 1.0


def test_nan_payloads_are_quieted_as_numpys_and_raise_nothing():
    bits = np.array([0x7FF0000000000001, 0x7FF8000000000123, 0xFFF4000000000ABC,
                     0x7FF8000000000000, 0xFFFFFFFFFFFFFFFF, 0x7FF7FFFFFFFFFFFF], np.uint64)
    x = np.tile(bits.view(np.float64), 3)
    with np.errstate(all="ignore"):
        want = np.exp(x)
    got = None

    def run():
        nonlocal got
        got = pexp(x)

    assert fp_flags_raised(run) == fp_flags_raised(lambda: np.exp(x)) == set()
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))


@pytest.mark.parametrize("lo, hi", [(-708, 708), (-1, 1), (-0.05, 0.05), (-1e-6, 1e-6),
                                    (700, 709.78), (-745.2, -700), (-40, 40)])
def test_within_one_ulp_of_the_correctly_rounded_result(lo, hi):
    if not EXTENDED:
        pytest.skip("np.longdouble is not x87 extended precision: no reference")
    x = np.random.default_rng(int(abs(lo * 7 + hi))).uniform(lo, hi, 200_003)
    with np.errstate(all="ignore"):
        got = pexp(x)
    u = ulps(got, x)
    assert np.nanmax(u) < 1.0, x[np.nanargmax(u)]
    # and no further than 1 ulp from NumPy's own (both within 1 ulp of exp)
    with np.errstate(all="ignore"):
        want = np.exp(x)
    assert np.max(np.abs(got.view(np.int64) - want.view(np.int64))) <= 1


def test_tiny_arguments_give_exactly_one():
    x = np.array([2.0**-55, -(2.0**-55), 2.0**-54, -(2.0**-54), 1e-20, -1e-20, 1e-310, 5e-324])
    np.testing.assert_array_equal(pexp(x), np.ones(x.size))


@pytest.mark.parametrize("v", EDGES)
def test_flags_of_each_edge_as_numpys_at_every_lane(v):
    base = np.linspace(-3, 3, 8)
    for pos in range(8):
        x = base.copy()
        x[pos] = v
        want = fp_flags_raised(lambda x=x: np.exp(x))
        assert fp_flags_raised(lambda x=x: pexp(x)) == want, (v, pos)
        with np.errstate(all="ignore"):
            ref = np.exp(x)
            got = pexp(x)
        assert np.max(np.abs(got.view(np.int64) - ref.view(np.int64))) <= 1, (v, pos)
        # the other lanes are unaffected by the special one
        np.testing.assert_array_equal(np.delete(got, pos), pexp(np.delete(x, pos)))


def test_quiet_inputs_raise_nothing():
    x = np.random.default_rng(3).uniform(-700, 700, 10_001)
    x[::5] = 0.0
    x[1::7] = -np.inf
    x[2::11] = np.nan
    x[3::13] = 1e-300
    assert fp_flags_raised(lambda: pexp(x)) == fp_flags_raised(lambda: np.exp(x)) == set()


@pytest.mark.parametrize("n", range(1, 101))
def test_every_length(n):
    x = np.random.default_rng(n).uniform(-30, 30, n)
    x[n // 2] = [0.0, np.inf, -np.inf, np.nan, 800.0, -740.0][n % 6]
    with np.errstate(all="ignore"):
        got, want = pexp(x), np.exp(x)
    assert got.shape == want.shape
    assert np.max(np.abs(got.view(np.int64) - want.view(np.int64))) <= 1


def test_layouts():
    rng = np.random.default_rng(5)
    a = rng.uniform(-20, 20, (37, 53))
    for x in (a[::2, ::3], a[::-1], a[:, ::-1], a.T, np.asfortranarray(a), a[5],
              np.broadcast_to(a[:, :1], (37, 53)), np.broadcast_to(a[3], (37, 53)),
              np.float64(1.5), a[:0]):
        x = np.asarray(x)
        got, want = pexp(x), np.exp(x)
        assert got.shape == want.shape
        if want.size:
            assert np.max(np.abs(got.view(np.int64) - want.view(np.int64))) <= 1


def test_into_an_aliased_destination():
    x = np.random.default_rng(6).uniform(-20, 20, 1001)
    want = np.exp(x)
    t = pyet.asarray(x)
    t[...] = pyet.exp(t)
    assert np.max(np.abs(x.view(np.int64) - want.view(np.int64))) <= 1


def test_sigmoid_and_logistic_round_as_the_tree_over_this_exp():
    x = np.random.default_rng(7).uniform(-40, 40, 1003)
    x[:9] = [0.0, -0.0, 800.0, -800.0, 710.0, -710.0, np.inf, -np.inf, np.nan]
    t = pyet.asarray(x)
    e = pexp(-x)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(np.asarray(pyet.evaluate(pyet.sigmoid(t))), 1 / (1 + e))
        np.testing.assert_array_equal(np.asarray(pyet.evaluate(2.5 / (0.5 + pyet.exp(-t)))),
                                      2.5 / (0.5 + e))


def test_float32_tanh_on_every_float_around_its_branch_and_clamp():
    """float32 tanh's table-driven e^(2|x|) (AVX-512) loses most near |x| = 0.625, where
    1 - 2/(e^(2|x|) + 1) cancels: every float there, and around the clamp at 10."""
    lo, hi = np.array([0.55, 0.75, 8.5, 11.0], np.float32).view(np.uint32).reshape(2, 2).T
    b = np.concatenate([np.arange(lo[0], hi[0], dtype=np.uint32),
                        np.arange(lo[1], hi[1], dtype=np.uint32)])
    x = np.concatenate([b.view(np.float32), -b.view(np.float32)])
    got = np.asarray(pyet.evaluate(pyet.tanh(pyet.asarray(x))))
    cr = np.tanh(x.astype(np.float64)).astype(np.float32)
    assert np.max(np.abs(got.view(np.int32).astype(np.int64) - cr.view(np.int32))) <= 1
