"""softmax_xent_grad at the root over leaves takes a compiled entry (nn.pyx
xent_grad_leaves: 2-D rows along axis 1, class indices or targets, one
factor): against NumPy on the layouts it takes and the ones it hands back to
the general path (strided, Fortran and negative rows, broadcast targets, a
factor per row, axis 0, aliasing), float32 and float64, empty, and errors
before any write."""

import numpy as np
import pytest
from pyet._kernels.nn import xent_grad_leaves

import pyet

FLOATS = [np.float32, np.float64]


def log_softmax(x, axis=1):
    m = x - x.max(axis, keepdims=True)
    return m - np.log(np.exp(m).sum(axis, keepdims=True))


def ref(logp, t, c, axis=1):
    return c * (np.exp(logp) * t.sum(axis, keepdims=True) - t)


def onehot(lab, n, dt):
    t = np.zeros((lab.size, n), dt)
    t[np.arange(lab.size), lab] = 1
    return t


def layouts(a):
    big = np.zeros((a.shape[0], 2 * a.shape[1]), a.dtype)
    big[:, ::2] = a
    return {"C": a, "F": np.asfortranarray(a), "col step 2": big[:, ::2],
            "row step": np.repeat(a, 2, axis=0)[::2], "negative": a[::-1].copy()[::-1]}


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (64, 64), (3, 300)])
def test_class_indices_and_targets_on_every_layout(dt, shape):
    rng = np.random.default_rng(sum(shape))
    tol = 1e-6 if dt == np.float32 else 1e-14
    lab = rng.integers(-shape[1], shape[1], shape[0])
    for name, lp in layouts(log_softmax(rng.standard_normal(shape)).astype(dt)).items():
        LP = pyet.asarray(lp)
        for dname in ("C", "F", "strided"):
            dst = np.full((shape[0], 2 * shape[1]), 7, dt)[:, ::2] if dname == "strided" \
                else np.full(shape, 7, dt, order=dname)
            pyet.asarray(dst)[...] = pyet.softmax_xent_grad(LP, lab, 0.5, axis=1)
            want = ref(lp.astype(np.float64), onehot(lab % shape[1], shape[1], np.float64), 0.5)
            np.testing.assert_allclose(dst, want, rtol=tol, atol=tol, err_msg=f"{name} {dname}")
            t = rng.uniform(-1, 1, shape).astype(dt)
            for tname, tt in layouts(t).items():
                pyet.asarray(dst)[...] = pyet.softmax_xent_grad(LP, pyet.asarray(tt),
                                                                pyet.asarray(dt(2.0)), axis=-1)
                np.testing.assert_allclose(dst, ref(lp.astype(np.float64), t.astype(np.float64),
                                                    2.0), rtol=tol * 10, atol=tol * 10,
                                           err_msg=f"{name} {dname} t {tname}")


@pytest.mark.parametrize("dt", FLOATS)
def test_general_path_cases(dt):
    rng = np.random.default_rng(1)
    tol = 1e-6 if dt == np.float32 else 1e-14
    lp = log_softmax(rng.standard_normal((6, 5))).astype(dt)
    LP = pyet.asarray(lp)
    # a factor per row
    c = rng.uniform(0.5, 2, (6, 1)).astype(dt)
    t = rng.uniform(0, 1, (6, 5)).astype(dt)
    got = np.asarray(pyet.softmax_xent_grad(LP, pyet.asarray(t), pyet.asarray(c), axis=1))
    np.testing.assert_allclose(got, ref(lp, t, c), rtol=tol, atol=tol)
    # broadcast targets
    row = rng.uniform(0, 1, 5).astype(dt)
    dst = np.empty((6, 5), dt)
    pyet.asarray(dst)[...] = pyet.softmax_xent_grad(LP, pyet.asarray(row), 1.0, axis=1)
    np.testing.assert_allclose(dst, ref(lp, np.broadcast_to(row, (6, 5)), 1.0), rtol=tol,
                               atol=tol)
    # axis 0
    lp0 = log_softmax(rng.standard_normal((6, 5)), axis=0).astype(dt)
    pyet.asarray(dst)[...] = pyet.softmax_xent_grad(pyet.asarray(lp0), pyet.asarray(t), 1.0,
                                                    axis=0)
    np.testing.assert_allclose(dst, ref(lp0, t, 1.0, axis=0), rtol=tol, atol=tol)
    # in place over logp
    lpi = lp.copy()
    L = pyet.asarray(lpi)
    L[...] = pyet.softmax_xent_grad(L, np.arange(6) % 5, 1.0)
    np.testing.assert_allclose(lpi, ref(lp, onehot(np.arange(6) % 5, 5, dt), 1.0), rtol=tol,
                               atol=tol)
    # 3-D along the last axis
    lp3 = log_softmax(rng.standard_normal((2, 3, 4)), axis=2).astype(dt)
    t3 = rng.uniform(0, 1, (2, 3, 4)).astype(dt)
    got = np.asarray(pyet.softmax_xent_grad(pyet.asarray(lp3), pyet.asarray(t3), 1.0))
    np.testing.assert_allclose(got, ref(lp3, t3, 1.0, axis=2), rtol=tol, atol=tol)
    # empty
    e = np.asarray(pyet.softmax_xent_grad(pyet.asarray(np.zeros((0, 3), dt)),
                                          np.zeros(0, np.int64), 1.0))
    assert e.shape == (0, 3)


def test_errors_before_any_write():
    lp = log_softmax(np.random.default_rng(2).standard_normal((4, 3)))
    dst = np.full((4, 3), 9.0)
    with pytest.raises(IndexError):
        pyet.asarray(dst)[...] = pyet.softmax_xent_grad(pyet.asarray(lp), np.array([0, 1, 3, 0]),
                                                        1.0)
    with pytest.raises(ValueError):
        pyet.asarray(dst)[...] = pyet.softmax_xent_grad(pyet.asarray(lp), np.array([0, 1, 2]), 1.0)
    with pytest.raises(ValueError):
        pyet.asarray(dst[:3])[...] = pyet.softmax_xent_grad(pyet.asarray(lp),
                                                            np.array([0, 1, 2, 0]), 1.0)
    assert (dst == 9).all()


def packed_field(a):
    """``a`` as the float field of a packed structured array (a one-byte field
    before it): row and column strides are not multiples of the itemsize."""
    rec = np.zeros(a.shape, np.dtype([("pad", "u1"), ("v", a.dtype)], align=False))
    rec["pad"] = 0xA5
    rec["v"] = a
    return rec, rec["v"]


@pytest.mark.parametrize("dt", FLOATS)
def test_packed_fields_and_negative_rows_with_sentinels(dt):
    # byte strides that are no multiple of the itemsize are refused by the
    # compiled entry (the general path copies); negative rows are taken.  The
    # destination's neighbours (its record's pad bytes, a border of sentinels)
    # are left as they were
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 9)).astype(dt)
    logp = log_softmax(x).astype(dt)
    lab = rng.integers(0, 9, 6)
    c = np.array(0.25, dt)
    want = ref(logp.astype(np.float64), onehot(lab, 9, np.float64), 0.25)
    tol = 1e-6 if dt == np.float32 else 1e-14
    _, packed_logp = packed_field(logp)
    _, packed_t = packed_field(onehot(lab, 9, dt))
    for lp, t in ((packed_logp, lab), (logp, packed_t), (logp[::-1].copy()[::-1], lab)):
        # destinations: a packed field, negative rows inside a sentinel border
        rec, out_field = packed_field(np.zeros((6, 9), dt))
        big = np.full((8, 11), -7, dt)
        for out in (out_field, big[1:7, 1:10][::-1]):
            pyet.asarray(out)[...] = pyet.softmax_xent_grad(pyet.asarray(lp), t,
                                                             pyet.asarray(c), axis=1)
            np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
        assert (rec["pad"] == 0xA5).all()
        assert (big[0] == -7).all() and (big[7] == -7).all()
        assert (big[:, 0] == -7).all() and (big[:, 10] == -7).all()
    # which layouts the compiled entry itself takes
    kernel = pyet.softmax_xent_grad(pyet.asarray(logp), lab, pyet.asarray(c), axis=1)._kernel
    idx = lab.astype(np.intp)
    out = np.zeros((6, 9), dt)
    assert not xent_grad_leaves(kernel, out, (packed_logp, idx, c))
    assert not xent_grad_leaves(kernel, packed_field(out)[1], (logp, idx, c))
    assert not xent_grad_leaves(kernel, out, (logp, packed_t, c))
    assert (out == 0).all()
    assert xent_grad_leaves(kernel, out[::-1], (logp[::-1], idx[::-1].copy(), c))
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
