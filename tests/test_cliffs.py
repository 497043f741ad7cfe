"""The kernel fast paths that removed performance cliffs, against NumPy bit for bit.

A scalar exponent 2, 1, -1, 0.5, 0 (NumPy's loop computes x*x, x, 1/x, sqrt(x), 1) and
integer //, % and fmod by a scalar (a multiply-high and shifts instead of a division), on
the layouts that used to be slow: contiguous, strided, reversed, broadcast, Fortran, in
place.  No timing here: bench/bench_grid.py measures.
"""

import warnings

import numpy as np
import pytest

import pyet


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(bits(got), bits(want))


def float_values(dt):
    fi = np.finfo(dt)
    edge = [0.0, -0.0, 1.0, -1.0, 2.0, -2.5, 0.5, np.inf, -np.inf, np.nan, -np.nan,
            fi.tiny, -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal, fi.max, -fi.max,
            np.sqrt(fi.max) * 1.5, 1 / np.sqrt(fi.max)]
    rng = np.random.default_rng(1)
    rand = rng.standard_normal(600) * 10.0 ** rng.integers(-30, 30, 600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = np.concatenate([np.array(edge, dt), rand.astype(dt)])
    payload = np.array([0x7FF8000000000123], np.uint64).view(np.float64).astype(dt)
    return np.concatenate([v, payload])  # a NaN with a payload: x**1 keeps it


def layouts(base):
    """(name, array) views of base's values in the layouts that used to be slow."""
    n = base.size
    yield "contig", base
    yield "step3", np.repeat(base, 3)[::3]
    yield "reversed", base[::-1]
    m = base[: (n // 8) * 8].reshape(8, -1)
    yield "fortran", np.asfortranarray(m)
    yield "transposed", m.T
    yield "bcast_row", np.broadcast_to(base[:37], (5, 37))
    yield "bcast_col", np.broadcast_to(base[:37, None], (37, 5))
    yield "zero_d", base[3].reshape(())


FLOAT_EXPONENTS = [2, 1, -1, 0.5, 0, 3, -2, 1.5]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("k", FLOAT_EXPONENTS)
def test_float_scalar_exponent(dt, k):
    for _name, a in layouts(float_values(dt)):
        t = pyet.asarray(a)
        with np.errstate(all="ignore"):
            want = np.power(a, dt(k))
            for got in (pyet.evaluate(t ** k), pyet.evaluate(pyet.power(t, k)),
                        pyet.evaluate(np.power(t, k)), pyet.evaluate(t ** dt(k))):
                if k in (2, 1, -1, 0.5, 0):
                    assert_bits(got, want)
                else:  # libm's pow, as NumPy's (NaN payloads may differ)
                    np.testing.assert_array_max_ulp(np.asarray(got), want, maxulp=2)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("k", [2, 1, -1, 0.5, 0])
def test_float_scalar_exponent_inplace_and_fused(dt, k):
    v = float_values(dt)
    with np.errstate(all="ignore"):
        a = v.copy()
        t = pyet.asarray(a)
        t **= k
        assert_bits(a, np.power(v, dt(k)))
        # inside a tree, on a strided destination
        w = np.repeat(v, 2)[::2]
        dst = np.zeros(2 * v.size, dt)[::2]
        pyet.asarray(dst)[...] = pyet.asarray(w) ** k + 1
        assert_bits(dst, np.power(v, dt(k)) + dt(1))


def int_values(dt):
    ii = np.iinfo(dt)
    edge = [0, 1, -1, 2, -2, 3, -3, 7, -7, 8, -8, 255, -256, ii.min, ii.min + 1, ii.max,
            ii.max - 1, ii.min // 2, ii.max // 2 + 1, 1000003, -1000003]
    rng = np.random.default_rng(2)
    bits_ = rng.integers(0, 8 * np.dtype(dt).itemsize - 1, 300)
    rand = rng.integers(ii.min, ii.max, 300, dtype=dt, endpoint=True) >> bits_.astype(dt)
    return np.concatenate([np.array(edge, dt), rand])


def divisors(dt):
    ii = np.iinfo(dt)
    return [0, 1, -1, 2, -2, 3, -3, 4, 7, -7, 8, -8, 10, 1 << 20, -(1 << 20), 1000003, -1000003,
            ii.max, ii.min, ii.min + 1, ii.max // 3, -(ii.max // 3), 12345, -65536, 641]


@pytest.mark.parametrize("dt", [np.int32, np.int64])
@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
def test_int_division_by_scalar(dt, op):
    npf, pf = getattr(np, op), getattr(pyet, op, None)
    v = int_values(dt)
    for d in divisors(dt):
        for _name, a in layouts(v):
            t = pyet.asarray(a)
            with np.errstate(all="ignore"):
                want = npf(a, dt(d))
                got = [pyet.evaluate(npf(t, dt(d))), pyet.evaluate(npf(t, d))]
                if pf is not None:
                    got.append(pyet.evaluate(pf(t, d)))
                if op == "floor_divide":
                    got.append(pyet.evaluate(t // d))
                if op == "remainder":
                    got.append(pyet.evaluate(t % d))
            for g in got:
                assert_bits(g, want)


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_int_division_every_edge_pair(dt):
    """Every edge value against every divisor, in one block each."""
    v = int_values(dt)
    for d in divisors(dt) + list(v[:21]):
        with np.errstate(all="ignore"):
            assert_bits(pyet.evaluate(pyet.asarray(v) // d), v // dt(d))
            assert_bits(pyet.evaluate(pyet.asarray(v) % d), v % dt(d))


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_int_division_inplace(dt):
    v = int_values(dt)
    for d in (7, -7, 8, -1, 0):
        with np.errstate(all="ignore"):
            a = v.copy()
            t = pyet.asarray(a)
            t //= d
            assert_bits(a, v // dt(d))
            a = v.copy()
            t = pyet.asarray(a)
            t %= d
            assert_bits(a, v % dt(d))


@pytest.mark.parametrize("dt", [np.int32, np.int64])
@pytest.mark.parametrize("k", [0, 1, 2, 3, 5, 8, 31, 62, 63, 64, 100])
def test_int_scalar_exponent(dt, k):
    v = int_values(dt)
    for _name, a in layouts(v):
        t = pyet.asarray(a)
        want = np.power(a, dt(k))
        assert_bits(pyet.evaluate(t ** k), want)
        assert_bits(pyet.evaluate(pyet.power(t, k)), want)
        assert_bits(pyet.evaluate(np.power(t, dt(k))), want)
    a = v.copy()
    t = pyet.asarray(a)
    t **= k
    assert_bits(a, np.power(v, dt(k)))


# ------------------------------------------------------------- packed short rows

def short_row_layouts(rng, dt=np.float64):
    """(name, a, b) operand pairs whose rows are short after merging: a broadcast
    column, a short last axis in a non-mergeable layout, reversed and strided."""
    base = rng.standard_normal((601, 14)).astype(dt)
    yield "bcast_col", base[:, :2], base[:, 5:6]
    yield "short_step", base[:, ::5], base[:, 1::5]
    yield "reversed", base[::-1, :3], base[:, :3]
    yield "fortran_c", np.asfortranarray(base[:, :4]), base[:, 4:8]
    yield "three_d", base.reshape(601, 7, 2)[:, :6:2], base.reshape(601, 7, 2)[:, 1::2]
    yield "bcast_row", base[:, :3], base[0, 3:6]
    yield "col_1", base[:, :1], base[:, 2:3]


@pytest.mark.parametrize("block", [512, 16, 37])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_short_rows_packed(block, nthreads):
    rng = np.random.default_rng(5)
    before = pyet.get_num_threads()
    pyet.set_num_threads(nthreads)
    pyet._core.core.set_block_size(block)
    try:
        for name, a, b in short_row_layouts(rng):
            # (float64 sin: pyet's kernel, within 1 ulp of NumPy's, on a C copy)
            sin_a = np.asarray(pyet.evaluate(pyet.sin(pyet.asarray(np.ascontiguousarray(a)))))
            want = a * b + sin_a - 1.5
            A, B = pyet.asarray(a), pyet.asarray(b)
            e = A * B + pyet.sin(A) - 1.5
            np.testing.assert_array_equal(np.asarray(pyet.evaluate(e)), want, err_msg=name)
            for dname, out in (("C", np.empty(want.shape)), ("F", np.empty(want.shape, order="F")),
                               ("strided", np.empty(want.shape[:-1] + (2 * want.shape[-1],))
                                [..., ::2]),
                               ("reversed", np.empty(want.shape)[::-1])):
                out[...] = 7.0
                pyet.asarray(out)[...] = e
                np.testing.assert_array_equal(out, want, err_msg=f"{name} into {dname}")
            # an integer tree and a cast on the way
            ai, bi = (a * 100).astype(np.int32), (b * 100).astype(np.int32)
            out = np.empty(np.broadcast_shapes(ai.shape, bi.shape), np.int64)
            pyet.asarray(out)[...] = pyet.asarray(ai) // 7 + pyet.asarray(bi)
            np.testing.assert_array_equal(out, ai // 7 + bi, err_msg=name)
    finally:
        pyet._core.core.set_block_size(512)
        pyet.set_num_threads(before)


def test_short_rows_packed_in_place_and_aliasing():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((500, 3))
    col = rng.standard_normal((500, 1))
    X, Col = pyet.asarray(x.copy()), pyet.asarray(col)
    X += Col * 2.0
    np.testing.assert_array_equal(np.asarray(X), x + col * 2.0)
    # the destination read reversed along the short axis: copied first
    y = x.copy()
    Y = pyet.asarray(y)
    Y[...] = pyet.asarray(y[:, ::-1]) + Col
    np.testing.assert_array_equal(y, x[:, ::-1] + col)
    # a strided destination read in place, element for element
    z = np.repeat(x, 2, axis=1)
    zv = z[:, ::2]
    Z = pyet.asarray(zv)
    Z[...] = Z * Z + Col
    np.testing.assert_array_equal(zv, x * x + col)
    np.testing.assert_array_equal(z[:, 1::2], x)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (), (1, 1), (4, 1, 2)])
def test_short_rows_packed_small_and_empty(shape):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    out = np.empty(shape, order="F")
    pyet.asarray(out)[...] = pyet.asarray(a) * 2 + pyet.asarray(a)[..., ::-1] if a.ndim else \
        pyet.asarray(a) * 2 + 1
    want = a * 2 + a[..., ::-1] if a.ndim else a * 2 + 1
    np.testing.assert_array_equal(out, want)


def test_pyfunc_called_on_large_chunks_across_rows():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((10000, 4))
    col = rng.standard_normal((10000, 1))
    sizes = []

    def sin(x):
        if x.size:  # (F's dtype probe calls it on empty arrays)
            sizes.append(x.size)
        assert x.ndim == 1 and not x.flags.writeable
        return np.sin(x)

    A, Col = pyet.asarray(a), pyet.asarray(col)
    for nthreads in (1, 2):
        before = pyet.get_num_threads()
        pyet.set_num_threads(nthreads)
        try:
            sizes.clear()
            got = np.asarray(pyet.evaluate(pyet.F(sin, A) + Col))
        finally:
            pyet.set_num_threads(before)
        np.testing.assert_array_equal(got, np.sin(a) + col)
        assert sum(sizes) == a.size and len(sizes) == 1  # one call, not one per row
        # a transposed operand and a strided destination: still whole chunks
        out = np.zeros((4, 2 * 10000))[:, ::2]
        sizes.clear()
        pyet.asarray(out)[...] = pyet.F(sin, pyet.asarray(a.T)) * 2
        np.testing.assert_array_equal(out, np.sin(a.T) * 2)
        assert sum(sizes) == a.size and len(sizes) == 1


def test_pyfunc_chunks_of_a_long_operand():
    a = np.linspace(-3, 3, 200_001)
    sizes = []

    def f(x):
        if x.size:
            sizes.append(x.size)
        return np.expm1(x)

    got = np.asarray(pyet.evaluate(pyet.F(f, pyet.asarray(a)) + 1))
    np.testing.assert_array_equal(got, np.expm1(a) + 1)
    assert sum(sizes) == a.size and len(sizes) <= 4


# ------------------------------------------------------------------ all / any

@pytest.mark.parametrize("kind", ["all", "any"])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_all_any_decided_anywhere(kind, nthreads):
    n = 300_000
    before = pyet.get_num_threads()
    pyet.set_num_threads(nthreads)
    try:
        for where in (None, 0, 1, 511, 512, 70_000, n // 2, n // 2 + 1, n - 1):
            a = np.full(n, kind == "all")
            if where is not None:
                a[where] = kind != "all"
            for x in (a, a[::-1], np.asfortranarray(a.reshape(600, 500)), a.reshape(500, 600).T):
                X = pyet.asarray(x)
                want = getattr(np, kind)(x)
                assert bool(np.asarray(getattr(pyet, kind)(X))) == want
                v = np.where(x, 1.0, -1.0)
                assert bool(np.asarray(getattr(pyet, kind)(pyet.asarray(v) > 0))) == want
    finally:
        pyet.set_num_threads(before)


@pytest.mark.parametrize("kind", ["all", "any"])
def test_all_any_stop_at_the_deciding_block(kind):
    # the user function sees how far the fold went: one long block, not all of them
    n = 400_000
    v = np.ones(n) if kind == "any" else -np.ones(n)
    v[3] = -v[3]
    seen = []

    def f(x):
        if x.size:
            seen.append(x.size)
        return x

    before = pyet.get_num_threads()
    pyet.set_num_threads(1)
    try:
        got = np.asarray(getattr(pyet, kind)(pyet.F(f, pyet.asarray(v)) > 0))
    finally:
        pyet.set_num_threads(before)
    assert bool(got) == getattr(np, kind)(v > 0)
    assert len(seen) == 1 and seen[0] < n
    # along an axis every accumulator folds everything (no single decision)
    w = np.ones((3, 5), bool)
    w[1, 2] = False
    np.testing.assert_array_equal(np.asarray(getattr(pyet, kind)(pyet.asarray(w), axis=1)),
                                  getattr(np, kind)(w, axis=1))
    assert bool(np.asarray(getattr(pyet, kind)(pyet.asarray(np.zeros(0, bool))))) == \
        getattr(np, kind)(np.zeros(0, bool))


# -------------------------------------------------------- products with a vector

def vector_layouts(v):
    yield "contig", v
    yield "step2", np.repeat(v, 2)[::2]
    yield "reversed", v[::-1].copy()[::-1]
    yield "negative", v[::-1]


def matrix_layouts(m):
    yield "C", m
    yield "F", np.asfortranarray(m)
    yield "T", np.ascontiguousarray(m.T).T
    yield "step", np.repeat(m, 2, axis=1)[:, ::2]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_gemv_and_dot_paths(dt):
    rng = np.random.default_rng(8)
    tol = 1e-5 if dt == np.float32 else 1e-12
    m = rng.standard_normal((7, 5)).astype(dt)
    for mname, mat in matrix_layouts(m):
        for vname, vec in vector_layouts(rng.standard_normal(5).astype(dt)):
            M, V = pyet.asarray(mat), pyet.asarray(vec)
            np.testing.assert_allclose(pyet.evaluate(pyet.dot(M, V)), mat @ vec, rtol=tol,
                                       err_msg=f"{mname} @ {vname}")
            out = np.full(7, 2.0, dt)
            Out = pyet.asarray(out)
            Out += pyet.dot(M, V) * 3
            np.testing.assert_allclose(out, 2 + 3 * (mat @ vec), rtol=tol)
            np.testing.assert_allclose(pyet.evaluate(pyet.dot(M, V) - 1), mat @ vec - 1,
                                       rtol=tol, atol=tol)
        for vname, vec in vector_layouts(rng.standard_normal(7).astype(dt)):
            M, V = pyet.asarray(mat), pyet.asarray(vec)
            np.testing.assert_allclose(pyet.evaluate(pyet.dot(V, M)), vec @ mat, rtol=tol,
                                       err_msg=f"{vname} @ {mname}")
            out = np.zeros(10, dt)[::2]
            pyet.asarray(out)[...] = pyet.dot(V, M)
            np.testing.assert_allclose(out, vec @ mat, rtol=tol)
    x, y = rng.standard_normal(1000).astype(dt), rng.standard_normal(1000).astype(dt)
    for (xn, xv), (yn, yv) in zip(vector_layouts(x), vector_layouts(y), strict=True):
        X, Y = pyet.asarray(xv), pyet.asarray(yv)
        want = np.dot(xv, yv)
        np.testing.assert_allclose(pyet.evaluate(pyet.dot(X, Y)), want, rtol=tol,
                                   err_msg=f"{xn} . {yn}")
        c = np.array(1.5, dt)
        C = pyet.asarray(c)
        C[...] = pyet.dot(X, Y)
        np.testing.assert_allclose(c, want, rtol=tol)
        C += 2 * pyet.dot(X, Y)
        np.testing.assert_allclose(c, 3 * want, rtol=tol)
    # a zero's sign as NumPy's (BLAS's dot starts from +0.0)
    z, one = np.array([-0.0], dt), np.array([1.0], dt)
    assert np.signbit(np.asarray(pyet.evaluate(pyet.dot(pyet.asarray(z), pyet.asarray(one))))) \
        == np.signbit(z @ one)


def test_gemv_destination_aliasing_an_operand():
    rng = np.random.default_rng(9)
    m = rng.standard_normal((6, 6))
    v = rng.standard_normal(6)
    want = m @ v
    V = pyet.asarray(v)
    V[...] = pyet.dot(pyet.asarray(m), V)
    np.testing.assert_allclose(v, want, rtol=1e-12)
    w = rng.standard_normal(6)
    want = w @ m + w
    W = pyet.asarray(w)
    W += pyet.dot(W, pyet.asarray(m))
    np.testing.assert_allclose(w, want, rtol=1e-12)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_gemv_and_dot_split_beyond_blas_int(dt):
    from pyet._kernels import blas
    rng = np.random.default_rng(10)
    tol = 1e-5 if dt == np.float32 else 1e-12
    old = blas._set_int_limit(3)
    try:
        for shape in ((7, 2), (2, 11), (1, 9), (3, 3)):
            m = rng.standard_normal(shape).astype(dt)
            for mname, mat in (("C", m), ("F", np.asfortranarray(m))):
                v = rng.standard_normal(shape[1]).astype(dt)
                u = rng.standard_normal(shape[0]).astype(dt)
                M = pyet.asarray(mat)
                np.testing.assert_allclose(pyet.evaluate(pyet.dot(M, pyet.asarray(v))),
                                           mat @ v, rtol=tol, err_msg=mname)
                np.testing.assert_allclose(pyet.evaluate(pyet.dot(pyet.asarray(u), M)),
                                           u @ mat, rtol=tol, err_msg=mname)
        x, y = rng.standard_normal(11).astype(dt), rng.standard_normal(11).astype(dt)
        np.testing.assert_allclose(pyet.evaluate(pyet.dot(pyet.asarray(x), pyet.asarray(y))),
                                   x @ y, rtol=tol)
    finally:
        blas._set_int_limit(old)


def test_integer_and_empty_vector_products():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    v = np.arange(4, dtype=np.int64)
    np.testing.assert_array_equal(pyet.evaluate(pyet.dot(pyet.asarray(a), pyet.asarray(v))),
                                  a @ v)
    e = np.zeros((3, 0))
    np.testing.assert_array_equal(pyet.evaluate(pyet.dot(pyet.asarray(e),
                                                         pyet.asarray(np.zeros(0)))),
                                  np.zeros(3))
    assert np.asarray(pyet.evaluate(pyet.dot(pyet.asarray(np.zeros(0)),
                                             pyet.asarray(np.zeros(0))))) == 0


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_vector_products_on_packed_fields_zero_steps_and_sentinels(dt):
    # fields of a packed structured array step by a byte count that is not a
    # whole number of elements; BLAS must never see them as unit steps
    rng = np.random.default_rng(11)
    tol = 1e-5 if dt == np.float32 else 1e-12
    rec = np.dtype([("pad", "u1"), ("x", dt), ("y", dt)], align=False)
    k, m = 9, 6
    src = np.zeros(k, rec)
    src["x"] = rng.standard_normal(k)
    src["y"] = rng.standard_normal(k)
    x, y = src["x"], src["y"]
    assert x.strides[0] % x.itemsize and not x.flags.aligned
    mat = rng.standard_normal((m, k)).astype(dt)
    bcast = np.broadcast_to(dt(0.5), (k,))                      # zero step
    for name, vec in (("packed", x), ("zero step", bcast), ("negative", x[::-1])):
        want = mat @ np.array(vec)
        got = pyet.evaluate(pyet.dot(pyet.asarray(mat), pyet.asarray(vec)))
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=name)
    np.testing.assert_allclose(pyet.evaluate(pyet.dot(pyet.asarray(x), pyet.asarray(y))),
                               np.dot(np.array(x), np.array(y)), rtol=tol, atol=tol)
    # the destination a packed field between sentinel bytes: only its own bytes change
    out = np.zeros(m + 2, rec)
    raw = out.view(np.uint8)
    raw[...] = 0xA5
    before = raw.copy()
    dst = out["x"][1:-1]
    pyet.asarray(dst)[...] = pyet.dot(pyet.asarray(mat), pyet.asarray(y))
    np.testing.assert_allclose(dst, mat @ np.array(y), rtol=tol, atol=tol)
    itemsize = rec.itemsize
    changed = np.flatnonzero(raw != before)
    allowed = {itemsize * i + 1 + b for i in range(1, m + 1) for b in range(np.dtype(dt).itemsize)}
    assert set(changed.tolist()) <= allowed
    row_dst = out["y"][1:-1]
    pyet.asarray(row_dst)[...] = pyet.dot(pyet.asarray(y[:m]), pyet.asarray(mat[:, :m]))
    np.testing.assert_allclose(row_dst, np.array(y[:m]) @ mat[:, :m], rtol=tol, atol=tol)
    np.testing.assert_array_equal(raw[:itemsize], before[:itemsize])       # sentinel record 0
    np.testing.assert_array_equal(raw[-itemsize:], before[-itemsize:])     # sentinel record m+1
