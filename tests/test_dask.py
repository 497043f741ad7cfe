"""pyet trees over Dask arrays (pyet.dask): results equal Dask's own on the same
expressions; one fused task per output chunk; reductions, products, views;
evaluate, store; pyet's threads inside tasks; dask.distributed."""

import os
import pickle
import signal
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import pyet  # noqa: E402
import pyet.dask as pd  # noqa: E402
from pyet._nodes.views import index  # noqa: E402

RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def _threads():
    with dask.config.set(scheduler="threads"):
        yield


def darr(shape, chunks, dtype=np.float64, low=0.1, high=2.0):
    a = RNG.uniform(low, high, shape).astype(dtype)
    return a, da.from_array(a, chunks=chunks)


def close(got, want, rtol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def pyet_layers(x):
    return {k: v for k, v in x.dask.layers.items() if k.startswith("pyet")}


# --------------------------------------------------------------- leaves

def test_asarray_is_lazy_leaf_with_build_time_checks():
    a, x = darr((6, 4), (4, 3))
    t = pyet.asarray(x)
    assert isinstance(t, pyet.Expr) and t.shape == (6, 4) and t.dtype == np.float64
    assert pd.asarray(x).shape == (6, 4)
    e = pyet.tanh(t) * 2 + a
    assert e.shape == (6, 4) and e.dtype == np.float64
    with pytest.raises(ValueError, match=r"could not be broadcast together with shapes \(6,4\) "
                                          r"\(5,\)"):
        t + np.ones(5)
    with pytest.raises(ValueError, match="could not be broadcast"):
        t + pyet.asarray(da.ones((3,), chunks=2))
    assert (t + pyet.asarray(x.astype(np.float32))).dtype == np.float64
    assert (pyet.asarray(x, dtype=np.float32) + np.float32(1)).dtype == np.float32


def test_asarray_errors():
    with pytest.raises(TypeError, match="pyet does not support dtype complex128"):
        pyet.asarray(da.ones(3, chunks=2, dtype=complex))
    x = da.ones(6, chunks=2)
    unknown = x[x > 0]
    with pytest.raises(ValueError, match="pyet needs known shapes"):
        pyet.asarray(unknown)


def test_dask_leaf_outside_dask_is_computed_whole():
    a, x = darr((5, 3), (2, 2))
    e = pyet.exp(pyet.asarray(x)) + 1
    np.testing.assert_allclose(np.asarray(e), np.exp(a) + 1)  # Expr.__array__: in memory
    dst = np.empty((5, 3))
    dst[...] = 0
    t = pyet.asarray(dst)
    t[...] = e
    np.testing.assert_allclose(dst, np.exp(a) + 1)


def test_to_dask_of_numpy_trees_and_dask_arrays():
    a = RNG.random((4, 3))
    close(pd.to_dask(pyet.asarray(a) * 2).compute(), a * 2)
    close(pd.to_dask(pyet.asarray(a)).compute(), a)
    x = da.ones(3, chunks=2)
    assert pd.to_dask(x) is x
    assert pd.to_dask(pyet.asarray(x)) is x


# ---------------------------------------------------------- elementwise

def test_elementwise_one_task_per_output_chunk():
    (a, x), (b, y), (c, z) = (darr((100, 60), (30, 25)) for _ in range(3))
    X, Y, Z = (pyet.asarray(t) for t in (x, y, z))
    d = pd.to_dask(pyet.tanh(X) * Y + pyet.sqrt(Z) - 0.5 * X)
    layers = pyet_layers(d)
    assert list(layers) == [d.name]
    assert len(layers[d.name]) == np.prod(d.numblocks) == 4 * 3
    # the whole graph: the three inputs' chunks and one task per output chunk
    assert len(d.__dask_graph__()) == 4 * 12
    plain = da.tanh(x) * y + da.sqrt(z) - 0.5 * x
    assert len(plain.__dask_graph__()) > len(d.__dask_graph__())
    close(d.compute(), plain.compute())
    close(pyet.evaluate(pyet.tanh(X) * Y + pyet.sqrt(Z) - 0.5 * X), plain.compute())


def test_unaligned_chunks_are_unified():
    (_a, x), (_b, y) = darr((50, 40), (7, 40)), darr((50, 40), (20, 9))
    X, Y = pyet.asarray(x), pyet.asarray(y)
    d = pd.to_dask(X * Y + X)
    close(d.compute(), (x * y + x).compute())
    assert d.chunks == (x * y).chunks


def test_broadcasting_chunked_and_numpy_operands():
    a, x = darr((30, 20), (8, 6))
    row = RNG.random(20)
    col = RNG.random((30, 1))
    zero_d = np.array(2.5)
    _, v = darr((20,), (5,))
    X, V = pyet.asarray(x), pyet.asarray(v)
    e = X * row + col - zero_d * V + 3
    want = x * row + col - zero_d * v + 3
    d = pd.to_dask(e)
    assert list(pyet_layers(d)) == [d.name]
    close(d.compute(), want.compute())
    # a NumPy operand of the full shape is split along the Dask operand's chunks
    full = RNG.random((30, 20))
    close(pd.compute(X + full), a + full)
    # broadcast views (0 strides) of NumPy data
    close(pd.compute(X + np.broadcast_to(row, (30, 20))), a + row)
    # a chunked operand broadcast against a bigger one
    _, w = darr((1, 20), (1, 7))
    close(pd.compute(X * pyet.asarray(w)), (x * w).compute())


def test_dtypes_and_casts():
    a = RNG.integers(-50, 50, (20, 10)).astype(np.int32)
    x = da.from_array(a, chunks=(6, 4))
    X = pyet.asarray(x)
    cases = [
        (X * 3 + 1, x * 3 + 1),
        (X // 7, x // 7),
        (X % 7, x % 7),
        (X > 3, x > 3),
        ((X > 3) & (X < 20), (x > 3) & (x < 20)),
        (X.astype(np.float32) / 2, x.astype(np.float32) / 2),
        (pyet.where(X > 0, X, -X), da.where(x > 0, x, -x)),
        (X * 2.5, x * 2.5),
    ]
    for e, want in cases:
        close(pd.compute(e), want.compute())


def test_user_function_in_tree():
    a, x = darr((12,), (5,))
    e = pyet.F(np.hypot, pyet.asarray(x), 2.0) + 1
    close(pd.compute(e), np.hypot(a, 2.0) + 1)


_UNARY = [("tanh", np.tanh), ("exp", np.exp), ("sqrt", np.sqrt), ("log1p", np.log1p),
          ("negative", np.negative), ("square", np.square), ("sin", np.sin)]
_BINARY = [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
           ("maximum", np.maximum), ("divide", np.divide)]


@st.composite
def trees(draw):
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=1, max_size=3)))
    n_leaves = draw(st.integers(1, 3))
    leaves = []
    for _ in range(n_leaves):
        # each operand: the full shape or a broadcastable suffix, its own chunks
        k = draw(st.integers(0, len(shape)))
        sub = tuple(1 if draw(st.booleans()) and k < len(shape) else n for n in shape[k:]) \
            if draw(st.booleans()) else shape
        sub = sub or shape
        chunks = tuple(draw(st.integers(1, max(n, 1))) for n in sub)
        leaves.append((sub, chunks, draw(st.booleans())))
    ops = draw(st.lists(st.tuples(st.sampled_from(range(len(_UNARY) + len(_BINARY))),
                                  st.integers(0, 8), st.integers(0, 8)),
                        min_size=1, max_size=6))
    return leaves, ops


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees())
def test_random_trees_equal_dask(spec):
    leaves, ops = spec
    pyet_nodes, dask_nodes = [], []
    for shape, chunks, is_dask in leaves:
        a = RNG.uniform(0.1, 2.0, shape)
        dx = da.from_array(a, chunks=chunks)
        pyet_nodes.append(pyet.asarray(dx) if is_dask else pyet.asarray(a))
        dask_nodes.append(dx)
    if not any(is_dask for _, _, is_dask in leaves):
        pyet_nodes[0] = pyet.asarray(dask_nodes[0])
    for code, i, j in ops:
        i, j = i % len(pyet_nodes), j % len(pyet_nodes)
        if code < len(_UNARY):
            name, fn = _UNARY[code]
            p, d = getattr(pyet, name)(pyet_nodes[i]), fn(dask_nodes[i])
            if name in ("exp", "square"):  # keep values small
                p, d = pyet.tanh(p), np.tanh(d)
            if name in ("negative", "sin"):
                p, d = pyet.abs(p) + 0.1, np.abs(d) + 0.1
        else:
            name, fn = _BINARY[code - len(_UNARY)]
            p = getattr(pyet, name)(pyet_nodes[i], pyet_nodes[j])
            d = fn(dask_nodes[i], dask_nodes[j])
        pyet_nodes.append(p)
        dask_nodes.append(d)
    root, want = pyet_nodes[-1], dask_nodes[-1]
    got = pd.to_dask(root)
    if isinstance(root, pyet.Expr) and not isinstance(root, pyet.Tensor):
        layers = pyet_layers(got)
        if got.name in layers:  # an elementwise root: one task per output chunk
            assert len(layers[got.name]) == int(np.prod(got.numblocks))
    close(got.compute(), want.compute(), rtol=1e-13)


# ----------------------------------------------------------- reductions

@pytest.mark.parametrize("kind", ["sum", "mean", "prod", "max", "min", "argmax", "argmin",
                                  "all", "any"])
def test_reductions_over_each_axis(kind):
    # unaligned chunks (unified to 4 x 2 x 2 blocks), few enough to stay fast
    (_a, x), (_b, y) = darr((13, 11, 7), (5, 6, 4), low=0.5, high=1.5), \
        darr((13, 11, 7), (7, 6, 7), low=0.5, high=1.5)
    X, Y = pyet.asarray(x), pyet.asarray(y)
    axes = [None, 0, 1, 2, -1] + ([] if kind.startswith("arg") else [(0, 2), (0, 1, 2)])
    for axis in axes:
        for keepdims in (False, True):
            if kind in ("all", "any"):
                e, d = (X * Y) > 1, (x * y) > 1
            else:
                e, d = X * Y + 0.25 * X, x * y + 0.25 * x
            got = pd.to_dask(getattr(pyet, kind)(e, axis=axis, keepdims=keepdims))
            want = getattr(da, kind)(d, axis=axis, keepdims=keepdims)
            close(got.compute(), want.compute(), rtol=1e-12)
            close(pyet.evaluate(getattr(pyet, kind)(e, axis=axis, keepdims=keepdims)),
                  want.compute(), rtol=1e-12)


def test_reduction_fuses_the_tree_below():
    (a, x), (b, y), (c, z) = (darr((40, 30), (10, 30)) for _ in range(3))
    A, B, C = (pyet.asarray(t) for t in (x, y, z))
    got = pd.to_dask(pyet.sum(A * B + C, axis=0))
    # no layer of the elementwise tree alone: the chunks' tasks fold it into partial sums
    deps = got.dask.dependencies
    partial = [k for k, v in deps.items() if v == {x.name, y.name, z.name}]
    assert len(partial) == 1 and partial[0].startswith("pyet-sum-")
    assert len(got.dask.layers[partial[0]]) == 4  # one task per chunk
    assert all(k.startswith("pyet-sum") for k in got.dask.layers if k.startswith("pyet"))
    close(got.compute(), (x * y + z).sum(axis=0).compute())


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.bool_])
def test_reduction_dtypes(dtype):
    a = (RNG.random((25, 9)) * 10).astype(dtype)
    x = da.from_array(a, chunks=(4, 5))
    X = pyet.asarray(x)
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    for kind in ("sum", "mean", "max", "min", "prod"):
        if kind == "prod" and dtype != np.bool_:
            e, d = X % 3 if dtype != np.float32 else X / 10, x % 3 if dtype != np.float32 \
                else x / 10
        else:
            e, d = X, x
        for axis in (None, 0, 1):
            close(pd.compute(getattr(pyet, kind)(e, axis=axis)),
                  getattr(da, kind)(d, axis=axis).compute(), rtol=rtol)


def test_reduction_inside_a_tree():
    a, x = darr((20, 12), (6, 5))
    X = pyet.asarray(x)
    e = X - pyet.max(X, axis=1, keepdims=True) + pyet.mean(X, axis=0)
    want = x - x.max(axis=1, keepdims=True) + x.mean(axis=0)
    close(pd.compute(e), want.compute())
    close(pd.compute(pyet.sum(X * 2) + 1), (x * 2).sum().compute() + 1)


def test_empty_chunks():
    a = RNG.random(9)
    x = da.from_array(a, chunks=((3, 0, 4, 0, 2),))
    X = pyet.asarray(x)
    close(pd.compute(X * 2 + 1), a * 2 + 1)
    for kind in ("sum", "mean", "max", "min", "prod", "argmax"):
        close(pd.compute(getattr(pyet, kind)(X + 1)), getattr(np, kind)(a + 1))
    m = RNG.random((6, 5))
    y = da.from_array(m, chunks=((2, 0, 4), (0, 3, 2)))
    Y = pyet.asarray(y)
    for axis in (None, 0, 1):
        close(pd.compute(pyet.max(Y, axis=axis)), m.max(axis=axis))
        close(pd.compute(pyet.sum(Y * Y, axis=axis)), (m * m).sum(axis=axis))
    empty = da.from_array(np.empty((0, 4)), chunks=(2, 2))
    E = pyet.asarray(empty)
    close(pd.compute(E * 2), np.empty((0, 4)))
    close(pd.compute(pyet.sum(E, axis=0)), np.zeros(4))
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        pyet.max(E, axis=0)


# ------------------------------------------------------------- products

def test_products_with_chunked_inner_dimensions():
    (a, x) = darr((23, 31), (7, 9))
    (b, y) = darr((31, 17), (8, 5))  # inner chunks differ from x's: Dask unifies them
    (v, w) = darr((31,), (10,))
    (u, s) = darr((23,), (6,))
    X, Y, W, S = (pyet.asarray(t) for t in (x, y, w, s))
    close(pd.compute(pyet.dot(X, Y)), a @ b, rtol=1e-12)
    close(pd.compute(X @ Y * 2 + 1), (a @ b) * 2 + 1, rtol=1e-12)
    close(pd.compute(pyet.dot(X, W)), a @ v, rtol=1e-12)
    close(pd.compute(pyet.dot(S, X)), u @ a, rtol=1e-12)
    close(pd.compute(pyet.dot(W, W)), v @ v, rtol=1e-12)
    close(pd.compute(pyet.sigmoid(pyet.dot(X + 1, Y) - 3)),
          1 / (1 + np.exp(-((a + 1) @ b - 3))), rtol=1e-12)
    close(pd.compute(pyet.dot(X.T, X)), a.T @ a, rtol=1e-12)
    close(pd.compute(pyet.tensordot(X, Y, 1)), (da.tensordot(x, y, 1)).compute(), rtol=1e-12)
    close(pd.compute(pyet.dot(X, b)), a @ b, rtol=1e-12)  # a NumPy operand
    # one inner block: one task per output block, no sum
    (c, z) = darr((12, 8), (5, 8))
    (d, t) = darr((8, 6), (8, 4))
    got = pd.to_dask(pyet.dot(pyet.asarray(z), pyet.asarray(t)))
    assert len(pyet_layers(got)) == 1 and len(got.dask.layers[got.name]) == 3 * 2
    close(got.compute(), c @ d)


def test_batch_dot_and_integer_products():
    (a, x), (b, y) = darr((5, 6, 7), (2, 3, 4)), darr((5, 7, 3), (3, 4, 2))
    close(pd.compute(pyet.batch_dot(pyet.asarray(x), pyet.asarray(y))), a @ b, rtol=1e-12)
    (m, z) = darr((7, 3), (4, 2))
    close(pd.compute(pyet.batch_dot(pyet.asarray(x), pyet.asarray(z))), a @ m, rtol=1e-12)
    i = RNG.integers(-9, 9, (9, 8))
    j = RNG.integers(-9, 9, (8, 5))
    xi, yi = da.from_array(i, chunks=(4, 3)), da.from_array(j, chunks=(3, 2))
    close(pd.compute(pyet.dot(pyet.asarray(xi), pyet.asarray(yi))), i @ j)


# ---------------------------------------------------------------- views

def test_views_and_shape_changes_map_to_dask():
    a, x = darr((6, 8, 10), (4, 3, 5))
    X = pyet.asarray(x)
    cases = [
        (X.T + 1, a.T + 1),
        (pyet.transpose(X * 2, (1, 0, 2)), np.transpose(a * 2, (1, 0, 2))),
        (pyet.swapaxes(X, 0, 2) - 1, np.swapaxes(a, 0, 2) - 1),
        (pyet.flip(X * X, 1), np.flip(a * a, 1)),
        (pyet.broadcast_to(index(X, (0,)) + 1, (3, 8, 10)), np.broadcast_to(a[0] + 1, (3, 8, 10))),
        (pyet.reshape(X + 1, (48, 10)), (a + 1).reshape(48, 10)),
        (pyet.reshape(X, (-1,)) * 2, a.reshape(-1) * 2),
        (pyet.crop(X + 1, (4, 6)), (a + 1)[:, 2:6, 2:8]),
        (pyet.pad(X * 2, 1, value=-1.0), np.pad(a * 2, ((0, 0), (1, 1), (1, 1)),
                                                constant_values=-1.0)),
        (pyet.concatenate([X, X * 2], axis=1), np.concatenate([a, a * 2], axis=1)),
        (pyet.stack([X, X + 1], axis=0), np.stack([a, a + 1], axis=0)),
        (index(X * 2, (slice(1, 5), slice(None, None, 2), 3)), (a * 2)[1:5, ::2, 3]),
        (pyet.asarray(x[1:5, ::2, 3]) * 2, a[1:5, ::2, 3] * 2),
        (pyet.broadcast_with_axis(pyet.sum(X, axis=2), 0, 3),
         np.broadcast_to(a.sum(axis=2)[:, None, :], (6, 3, 8))),
    ]
    for e, want in cases:
        close(pd.compute(e), want)


def test_nodes_without_a_blocked_form_raise():
    _, x = darr((4, 5), (2, 5))
    with pytest.raises(TypeError, match="pyet.dask: no blocked form of take nodes"):
        pd.to_dask(pyet.take(pyet.asarray(np.array([0, 2])), pyet.asarray(x)))


def test_gradients_over_dask_leaves_refused_by_name():
    _, x = darr((4, 5), (2, 5))
    X = pyet.asarray(x)
    with pytest.raises(TypeError, match="pyet.grad: wrt must be a pyet.Tensor .a leaf., "
                       "got a Dask-backed leaf"):
        pyet.grad(pyet.sum(X * X), X)


def _softmax_ref(a, axis, log):
    z = a - a.max(axis=axis, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return z - lse if log else np.exp(z - lse)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("chunks", [(2, 3, 4), (6, 5, 8), (1, 5, 3)])
def test_softmax_over_chunks_of_any_axis(axis, log, chunks):
    # the softmax axis is rechunked whole; the tree below and above stays blocked
    a, x = darr((6, 5, 8), chunks, low=-3.0, high=3.0)
    X = pyet.asarray(x)
    fn = pyet.log_softmax if log else pyet.softmax
    e = fn(X * 2 - 1, axis=axis) + 1
    d = pd.to_dask(e)
    assert d.chunks[axis if axis >= 0 else 2] == ((6, 5, 8)[axis],)
    close(pd.compute(e), _softmax_ref(a * 2 - 1, axis, log) + 1)
    close(pd.compute(fn(X, axis=axis).sum(axis=0)), _softmax_ref(a, axis, log).sum(axis=0))


def test_softmax_of_integers_over_chunks():
    a = np.arange(24).reshape(4, 6) % 5
    x = da.from_array(a, chunks=(3, 2))
    got = pd.compute(pyet.softmax(pyet.asarray(x)))
    assert got.dtype == np.float64
    close(got, _softmax_ref(a.astype(np.float64), -1, False))


# ------------------------------------------------------ evaluate, store

def test_evaluate_into_out_checks_first():
    a, x = darr((10, 6), (3, 4))
    e = pyet.sqrt(pyet.asarray(x)) + 1
    out = np.zeros((10, 6))
    assert pyet.evaluate(e, out=out) is out
    np.testing.assert_allclose(out, np.sqrt(a) + 1)
    t = pyet.zeros((2, 10, 6), np.float32)
    pyet.evaluate(e, out=t)  # broadcast and cast (same_kind)
    np.testing.assert_allclose(t.numpy(), np.broadcast_to(np.sqrt(a) + 1, (2, 10, 6)), rtol=1e-6)
    ints = np.zeros((10, 6), np.int64)
    with pytest.raises(TypeError, match="same_kind"):
        pyet.evaluate(e, out=ints)
    assert not ints.any()
    with pytest.raises(ValueError):
        pyet.evaluate(e, out=np.zeros((3, 6)))
    r = pyet.evaluate(x)  # a Dask array itself
    assert isinstance(r, pyet.Tensor)
    np.testing.assert_array_equal(r.numpy(), a)


def test_store_into_zarr_and_ndarray(tmp_path):
    zarr = pytest.importorskip("zarr")
    (a, x), (_b, y) = darr((40, 30), (16, 7)), darr((40, 30), (9, 30))
    e = pyet.tanh(pyet.asarray(x)) * pyet.asarray(y) + 1
    target = zarr.create_array(store=str(tmp_path / "out"), shape=(40, 30), chunks=(16, 10),
                               dtype="f8")
    assert pd.store(e, target) is None
    want = (da.tanh(x) * y + 1).compute()
    close(target[...], want)
    dst = np.zeros((40, 30))
    pd.store(e, dst)
    close(dst, want)
    # over zarr-backed operands
    src = zarr.create_array(store=str(tmp_path / "src"), shape=(40, 30), chunks=(10, 10),
                            dtype="f8")
    src[...] = a
    z = da.from_zarr(src)
    target2 = zarr.create_array(store=str(tmp_path / "out2"), shape=(40,), chunks=(10,),
                                dtype="f8")
    pd.store(pyet.sum(pyet.asarray(z) * 2, axis=1), target2)
    close(target2[...], (a * 2).sum(axis=1))
    with pytest.raises(ValueError, match=r"shape \(40, 30\) differs from the target's \(40,\)"):
        pd.store(e, target2)


def test_threads_are_one_inside_tasks_and_restored():
    seen = []

    def probe(block):
        seen.append(pyet.get_num_threads())
        return block * 2

    before = pyet.get_num_threads()
    _, x = darr((40,), (10,))
    pd.compute(pyet.F(probe, pyet.asarray(x), dtype=np.float64))  # (no probe call)
    assert seen and set(seen) == {1}
    assert pyet.get_num_threads() == before
    old = pd.TASK_THREADS
    try:
        pd.TASK_THREADS = None  # leave pyet's setting alone
        seen.clear()
        pd.compute(pyet.F(probe, pyet.asarray(x), dtype=np.float64))  # (no probe call)
        assert set(seen) == {before}
    finally:
        pd.TASK_THREADS = old


def test_graphs_pickle_and_run_in_another_process():
    a, x = darr((20, 10), (7, 4))
    X = pyet.asarray(x)
    d = pd.to_dask(pyet.sum(X * X + 1, axis=0) + index(pyet.dot(X.T, X), (0,)))
    d2 = pickle.loads(pickle.dumps(d))
    close(d2.compute(), (a * a + 1).sum(axis=0) + (a.T @ a)[0])
    tree = pickle.loads(pickle.dumps(X * 2 + 1))  # the pyet tree itself, Dask leaf included
    close(pd.compute(tree), a * 2 + 1)


# ------------------------------------------------------------ distributed

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None,
                                       silence_logs=50)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_distributed_trees_reductions_products(client):
    (a, x), (b, y) = darr((60, 40), (16, 15)), darr((40, 30), (12, 30))
    X, Y = pyet.asarray(x), pyet.asarray(y)
    with dask.config.set(scheduler=client):
        close(pd.compute(pyet.tanh(X) * 2 + pyet.sqrt(X)), np.tanh(a) * 2 + np.sqrt(a))
        close(pd.compute(pyet.sum(X * X + 1, axis=1)), (a * a + 1).sum(axis=1))
        close(pd.compute(pyet.max(X - 1)), (a - 1).max())
        close(pd.compute(pyet.sigmoid(X @ Y)), 1 / (1 + np.exp(-(a @ b))), rtol=1e-12)
        out = np.zeros((60, 40))
        pyet.evaluate(pyet.exp(X) - 1, out=out)  # the client's scheduler
        close(out, np.exp(a) - 1)
    # the tasks ran on the workers, where pyet rebuilt and lowered the trees
    assert client.run(lambda: "pyet._core.core" in __import__("sys").modules)


def test_distributed_survives_a_killed_worker(client):
    def slow(block):
        time.sleep(0.2)
        return block + 1

    a, x = darr((24, 10), (1, 10))  # 24 chunks of 0.2 s each on 2 one-thread workers
    e = pyet.sum(pyet.F(slow, pyet.asarray(x)) * 2, axis=1)
    future = client.compute(pd.to_dask(e))
    time.sleep(1.0)
    pids = client.run(os.getpid)
    os.kill(next(iter(pids.values())), signal.SIGKILL)
    close(future.result(timeout=120), ((a + 1) * 2).sum(axis=1))


def test_compute_method_runs_on_the_current_scheduler():
    x = da.from_array(np.arange(12.0).reshape(3, 4), chunks=(2, 2))
    e = pyet.tanh(pyet.asarray(x)) * 2 + 1
    calls = []

    def counting_get(dsk, keys, **kwargs):
        calls.append(keys)
        return dask.get(dsk, keys, **kwargs)

    with dask.config.set(scheduler=counting_get):
        got = e.compute()
    assert isinstance(got, pyet.Tensor) and calls  # Dask's scheduler ran it
    np.testing.assert_allclose(got.numpy(), np.tanh(np.arange(12.0).reshape(3, 4)) * 2 + 1,
                               rtol=1e-15)
    s = pyet.sum(pyet.asarray(x), axis=0).compute()
    np.testing.assert_array_equal(s.numpy(), np.arange(12.0).reshape(3, 4).sum(0))


def test_dask_leaf_flag_reaches_the_root():
    # evaluate finds a Dask leaf by the node flag (no tree walk): under
    # elementwise ops, special nodes (a reduction, a product) and views
    from pyet._core import core
    x = pyet.asarray(da.from_array(np.arange(12.0).reshape(3, 4), chunks=2))
    plain = pyet.asarray(np.ones((3, 4)))
    assert not (plain * 2)._flags & core.DASK_BELOW
    trees = [x * 2 + plain, pyet.sum(pyet.tanh(x) + plain, axis=0),
             pyet.dot(plain.T, x + 1), 1 - x.T[::-1]]
    wants = [np.arange(12.0).reshape(3, 4) * 2 + 1,
             (np.tanh(np.arange(12.0).reshape(3, 4)) + 1).sum(0),
             np.ones((4, 3)) @ (np.arange(12.0).reshape(3, 4) + 1),
             1 - np.arange(12.0).reshape(3, 4).T[::-1]]
    for e, want in zip(trees, wants, strict=True):
        assert e._flags & core.DASK_BELOW
        close(pyet.evaluate(e), want)
