"""float64 sin and cos: within 1 ulp of the correctly rounded result (NumPy's are libm's,
correctly rounded but for rare cases, so at most 1 ulp from NumPy's), NumPy's bits at the
edges (zeros, tiny, subnormal, huge, inf, NaN, arguments near a multiple of pi/2) and NumPy's
floating-point flags, on every lane position, length and layout.  On AVX-512 CPUs this is
pyet's vector kernel (fdlibm's reduction and kernels), elsewhere libm per element."""

import numpy as np
import pytest
from conftest import fp_flags_raised

import pyet

EXTENDED = np.finfo(np.longdouble).nmant >= 63  # x87 80-bit: sinl/cosl as the reference
FUNCS = [("sin", pyet.sin, np.sin), ("cos", pyet.cos, np.cos)]

EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
         -2.2250738585072009e-308, 1e-300, 2.0**-27, -(2.0**-27), 2.0**-26, -(2.0**-26),
         np.nextafter(2.0**-26, 0), np.nextafter(2.0**-27, 0), 2.0**-26.5, 1e-8, 0.5,
         0.7853981633974483, -0.7853981633974483,
         1.5707963267948966, 3.141592653589793, -3.141592653589793, 4.71238898038469,
         6.283185307179586, 2.0**19, np.nextafter(2.0**20, 0), 2.0**20, -(2.0**20), 1e6, 1e22,
         1e300, -1.7976931348623157e308]


def run(f, x):
    return np.asarray(pyet.evaluate(f(pyet.asarray(x))))


def ulp_apart(got, want):
    return np.abs(got.view(np.int64) - want.view(np.int64))


def near_multiples_of_half_pi(n):
    """The doubles nearest k pi/2 (and their neighbours) for k up to 2^20: the reductions
    that cancel most, which the kernel hands to libm."""
    k = np.unique(np.geomspace(1, 2 ** 20, n).astype(np.int64))
    half_pi = np.longdouble("1.57079632679489661923132169163975144")
    x = (k.astype(np.longdouble) * half_pi).astype(np.float64)
    return np.concatenate([x, np.nextafter(x, 0), np.nextafter(x, np.inf), -x])


@pytest.mark.parametrize("name, fp, fn", FUNCS)
def test_edges_give_numpys_bits_and_flags(name, fp, fn):
    x = np.array(EDGES + list(near_multiples_of_half_pi(200)))
    with np.errstate(all="ignore"):
        got, want = run(fp, x), fn(x)
    # NaN results, tiny and slow lanes: libm's bits, NumPy's; the rest within 1 ulp
    assert np.isnan(got).tolist() == np.isnan(want).tolist()
    ok = np.isnan(want) | (ulp_apart(got, want) <= 1)
    assert ok.all(), x[~ok]
    tiny = np.abs(x) < 2.0**-26
    assert got[tiny].tobytes() == want[tiny].tobytes()
    big = ~np.isnan(x) & (np.abs(x) >= 2.0**20)
    assert got[big].tobytes() == want[big].tobytes()
    for v in x:
        one = np.array([v])
        assert fp_flags_raised(lambda one=one: run(fp, one)) == \
            fp_flags_raised(lambda one=one: fn(one)), v


@pytest.mark.parametrize("name, fp, fn", FUNCS)
@pytest.mark.parametrize("lo, hi", [(-np.pi / 4, np.pi / 4), (0.25, 4.25), (-10, 10),
                                    (-1e3, 1e3), (-2.0**20, 2.0**20), (-1e-5, 1e-5)])
def test_within_one_ulp_of_the_correctly_rounded_result(name, fp, fn, lo, hi):
    x = np.random.default_rng(int(abs(lo * 7 + hi)) % 1000).uniform(lo, hi, 100_003)
    got, want = run(fp, x), fn(x)
    assert ulp_apart(got, want).max() <= 1
    if not EXTENDED:
        pytest.skip("np.longdouble is not x87 extended precision: no reference")
    ref = fn(x.astype(np.longdouble))
    err = np.abs(got.astype(np.longdouble) - ref) / np.spacing(
        np.abs(ref.astype(np.float64))).astype(np.longdouble)
    assert err.max() < 1.0, x[np.argmax(err)]


@pytest.mark.parametrize("name, fp, fn", FUNCS)
def test_every_length_lane_and_layout_gives_the_same_bits(name, fp, fn):
    rng = np.random.default_rng(3)
    x = rng.uniform(-20, 20, 700)
    x[rng.integers(0, 700, 60)] = rng.choice(np.array(EDGES), 60)
    with np.errstate(all="ignore"):
        want = run(fp, x)
        for n in range(0, 20):
            for start in (0, 1, 5):
                got = run(fp, x[start:start + n])
                assert got.tobytes() == want[start:start + n].tobytes(), (n, start)
        for step in (2, 3, 7, -1, -3):
            base = np.zeros(700 * abs(step))
            view = base[::step]
            view[...] = x
            assert run(fp, view).tobytes() == want.tobytes(), step
            # into a strided destination between sentinels, and in place
            out = np.full(2 * 700 + 2, 7.0)
            pyet.asarray(out[1:-1][::-2])[...] = fp(pyet.asarray(view))
            assert out[1:-1][::-2].tobytes() == want.tobytes()
            assert out[0] == out[-1] == 7.0 and (out[1:-1][-2::-2] == 7.0).all()
            pyet.asarray(view)[...] = fp(pyet.asarray(view))
            assert view.tobytes() == want.tobytes()
        two = x[:600].reshape(20, 30)
        for a in (two.T, two[::-1, ::2], np.asfortranarray(two), two[:, :1]):
            assert run(fp, a).tobytes() == fp_ref(fp, a).tobytes()


def fp_ref(fp, a):
    """The kernel on a contiguous copy of a."""
    return run(fp, np.ascontiguousarray(a))


@pytest.mark.parametrize("name, fp, fn", FUNCS)
def test_in_trees_threads_and_errstate(name, fp, fn, threaded):
    rng = np.random.default_rng(4)
    x = rng.uniform(-30, 30, 50_000)
    x[::997] = np.inf
    with np.errstate(all="ignore"):
        want = fn(x)
        got = run(fp, x)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        assert np.nanmax(ulp_apart(got, want)) <= 1
        tree = run(lambda t: fp(t) * 2 + 1, x)
    np.testing.assert_allclose(tree, want * 2 + 1, rtol=1e-15, atol=1e-15)
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        run(fp, x)
    with np.errstate(all="raise"):
        run(fp, x[1:997])  # finite arguments raise nothing
