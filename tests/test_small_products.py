"""dst[...] = dot(A, B) of two leaves straight to BLAS (engine.pxi
assign_leaf_product, the product node built in C, small calls keeping the
GIL) against NumPy: every layout the fast path takes or must hand back to
the general path, destinations between sentinel bytes, one and two threads."""

import numpy as np
import pytest
from conftest import pyet_threads

import pyet
from pyet._core import core

FLOATS = [np.float32, np.float64]
TOL = {np.float32: 2e-5, np.float64: 1e-12}


def operands(shape, dt, rng):
    """(name, array) layouts of one logical shape: C, Fortran, transposed,
    strided, negative steps, a packed structured field."""
    base = lambda s: rng.standard_normal(s).astype(dt)  # noqa: E731
    out = [("C", base(shape))]
    if len(shape) == 2:
        out += [("fortran", np.asfortranarray(base(shape))),
                ("transposed", base(shape[::-1]).T),
                ("row step 2", base((shape[0] * 2, shape[1]))[::2]),
                ("col step 3", base((shape[0], shape[1] * 3))[:, ::3]),
                ("negative", base(shape)[::-1, ::-1])]
    else:
        out += [("step 3", base(shape[0] * 3)[::3]), ("negative", base(shape)[::-1])]
    rec = np.dtype([("pad", "u1"), ("x", dt)], align=False)
    packed = np.zeros(int(np.prod(shape)), rec)
    packed["x"] = base(packed.shape)
    out.append(("packed", packed["x"].reshape(shape) if len(shape) == 1 else
                np.lib.stride_tricks.as_strided(
                    packed["x"], shape, (shape[1] * rec.itemsize, rec.itemsize))))
    return out


CASES = [((8, 8), (8, 8)), ((64, 64), (64, 64)), ((256,), (256,)), ((64, 48), (48,)),
         ((48,), (48, 64)), ((1, 5), (5, 1)), ((7,), (7,)), ((96, 96), (96, 96)),
         ((3, 190), (190, 60))]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("sa,sb", CASES)
def test_layouts_against_numpy(sa, sb, dt, threads):
    rng = np.random.default_rng(7)
    with pyet_threads(threads):
        for na, a in operands(sa, dt, rng):
            for nb, b in operands(sb, dt, rng)[:3] + operands(sb, dt, rng)[-2:]:
                want = np.dot(np.array(a), np.array(b))
                for order in ("C", "F"):
                    out = np.zeros(want.shape, dt, order=order)
                    pyet.asarray(out)[...] = pyet.dot(pyet.asarray(a), pyet.asarray(b))
                    np.testing.assert_allclose(out, want, rtol=TOL[dt], atol=TOL[dt],
                                               err_msg=f"{na} @ {nb}")
                got = pyet.evaluate(pyet.dot(pyet.asarray(a), pyet.asarray(b)))
                np.testing.assert_allclose(got, want, rtol=TOL[dt], atol=TOL[dt])


@pytest.mark.parametrize("dt", FLOATS)
def test_strided_and_negative_destinations(dt):
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((16, 12)).astype(dt), rng.standard_normal((12, 10)).astype(dt)
    v = rng.standard_normal(12).astype(dt)
    big = np.zeros((32, 30), dt)
    for dst in (big[::2, ::3], big[::-2, ::3], big[:16, :10].T.T, big[1:17, 2:12]):
        pyet.asarray(dst)[...] = pyet.dot(pyet.asarray(a), pyet.asarray(b))
        np.testing.assert_allclose(dst, a @ b, rtol=TOL[dt], atol=TOL[dt])
    vec = np.zeros(48, dt)
    for dst in (vec[::3], vec[::-3], vec[5:21]):
        pyet.asarray(dst)[...] = pyet.dot(pyet.asarray(a), pyet.asarray(v))
        np.testing.assert_allclose(dst, a @ v, rtol=TOL[dt], atol=TOL[dt])


@pytest.mark.parametrize("dt", FLOATS)
def test_zero_d_empty_and_special_values(dt):
    x = np.array([1.0, np.inf, -0.0, 2.0], dt)
    y = np.array([0.5, 1.0, 3.0, -0.0], dt)
    out = np.zeros((), dt)
    pyet.asarray(out)[...] = pyet.dot(pyet.asarray(x), pyet.asarray(y))
    assert out == np.dot(x, y) == np.inf
    y[1] = np.nan
    pyet.asarray(out)[...] = pyet.dot(pyet.asarray(x), pyet.asarray(y))
    assert np.isnan(out)
    e = np.zeros((3, 0), dt)
    res = np.full(3, 7.0, dt)
    pyet.asarray(res)[...] = pyet.dot(pyet.asarray(e), pyet.asarray(np.zeros(0, dt)))
    np.testing.assert_array_equal(res, np.zeros(3, dt))
    out[...] = 5
    pyet.asarray(out)[...] = pyet.dot(pyet.asarray(np.zeros(0, dt)),
                                      pyet.asarray(np.zeros(0, dt)))
    assert out == 0


def test_mixed_dtypes_and_ints_take_the_general_path():
    rng = np.random.default_rng(9)
    a32 = rng.standard_normal((8, 8)).astype(np.float32)
    b64 = rng.standard_normal((8, 8))
    out = np.zeros((8, 8))
    pyet.asarray(out)[...] = pyet.dot(pyet.asarray(a32), pyet.asarray(b64))
    np.testing.assert_allclose(out, a32 @ b64, rtol=1e-12)
    out32 = np.zeros((8, 8), np.float32)  # float64 product into float32: same_kind cast
    pyet.asarray(out32)[...] = pyet.dot(pyet.asarray(b64), pyet.asarray(b64))
    np.testing.assert_allclose(out32, (b64 @ b64).astype(np.float32), rtol=1e-6)
    ia, ib = rng.integers(-9, 9, (5, 4)), rng.integers(-9, 9, (4, 3))
    iout = np.zeros((5, 3), np.int64)
    pyet.asarray(iout)[...] = pyet.dot(pyet.asarray(ia), pyet.asarray(ib))
    np.testing.assert_array_equal(iout, ia @ ib)


@pytest.mark.parametrize("dt", FLOATS)
def test_destination_overlapping_an_operand(dt):
    # dst is A itself (or a view of it): the product reads A before it is written
    rng = np.random.default_rng(10)
    for n in (8, 64):
        a = rng.standard_normal((n, n)).astype(dt)
        b = rng.standard_normal((n, n)).astype(dt)
        want = a @ b
        pyet.asarray(a)[...] = pyet.dot(pyet.asarray(a), pyet.asarray(b))
        np.testing.assert_allclose(a, want, rtol=TOL[dt] * n, atol=TOL[dt] * n)
        v = rng.standard_normal(n).astype(dt)
        m = rng.standard_normal((n, n)).astype(dt)
        want = m @ v
        pyet.asarray(v)[...] = pyet.dot(pyet.asarray(m), pyet.asarray(v))
        np.testing.assert_allclose(v, want, rtol=TOL[dt] * n, atol=TOL[dt] * n)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dt", FLOATS)
def test_destinations_between_sentinel_bytes(dt, threads):
    rng = np.random.default_rng(11)
    rec = np.dtype([("pad", "u1"), ("v", dt)], align=False)
    a, b = rng.standard_normal((6, 9)).astype(dt), rng.standard_normal((9, 4)).astype(dt)
    v = rng.standard_normal(9).astype(dt)
    with pyet_threads(threads):
        for want, x, y in ((a @ b, a, b), (a @ v, a, v), (v @ v, v, v)):
            n = want.size
            out = np.zeros(n + 2, rec)
            raw = out.view(np.uint8)
            raw[...] = 0xA5
            before = raw.copy()
            dst = out["v"][1:-1].reshape(want.shape)
            pyet.asarray(dst)[...] = pyet.dot(pyet.asarray(x), pyet.asarray(y))
            np.testing.assert_allclose(dst, want, rtol=TOL[dt], atol=TOL[dt])
            changed = set(np.flatnonzero(raw != before).tolist())
            isz, vsz = rec.itemsize, np.dtype(dt).itemsize
            assert changed <= {isz * i + 1 + b for i in range(1, n + 1) for b in range(vsz)}


def test_counts_one_gemm_and_bad_input_writes_nothing():
    rng = np.random.default_rng(12)
    a, b = rng.standard_normal((8, 8)), rng.standard_normal((8, 8))
    out = np.zeros((8, 8))
    core.stats(reset=True)
    pyet.asarray(out)[...] = pyet.dot(pyet.asarray(a), pyet.asarray(b))
    assert core.stats()["gemm_calls"] == 1
    bad = np.full((8, 7), 3.0)
    with pytest.raises(ValueError):
        pyet.asarray(bad)[...] = pyet.dot(pyet.asarray(a), pyet.asarray(b))
    assert (bad == 3.0).all()
    ro = np.zeros((8, 8))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        pyet.asarray(ro)[...] = pyet.dot(pyet.asarray(a), pyet.asarray(b))
    with pytest.raises(ValueError, match="not aligned"):
        pyet.dot(pyet.asarray(a), pyet.asarray(np.zeros(5)))
    with pytest.raises(ValueError, match="scalars"):
        pyet.dot(pyet.asarray(a), 2.0)
    with pytest.raises(TypeError, match="ndarray"):
        core.assign([1, 2], pyet.dot(pyet.asarray(a), pyet.asarray(b)))


@pytest.mark.parametrize("dt", FLOATS)
def test_products_around_the_gil_threshold(dt):
    # calls of at most NOGIL_FLOPS multiply-adds keep the GIL, larger ones release it
    rng = np.random.default_rng(13)
    for m, k, n in ((32, 32, 32), (32, 32, 33), (1, 32768, 1), (1, 32769, 1), (181, 181, 1),
                    (2, 16384, 1), (2, 16385, 1)):
        a = rng.standard_normal((m, k)).astype(dt)
        b = rng.standard_normal((k, n)).astype(dt)
        tol = TOL[dt] * 50
        for x, y in ((a, b), (a, b[:, 0])):
            want = np.dot(x, y)
            out = np.zeros(want.shape, dt)
            pyet.asarray(out)[...] = pyet.dot(pyet.asarray(x), pyet.asarray(y))
            np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
        if m == 1:
            out = np.zeros((), dt)
            pyet.asarray(out)[...] = pyet.dot(pyet.asarray(a[0]), pyet.asarray(b[:, 0]))
            np.testing.assert_allclose(out, a[0] @ b[:, 0], rtol=tol, atol=tol)
