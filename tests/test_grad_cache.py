"""value_and_grad's recorded evaluations kept by structure: a call whose tree
has the structure of an earlier one replays that evaluation over its own
leaves' memory.  Every replay must give the bits a fresh evaluation gives, and
a structure that differs in anything (layout, dtype, scalar, aliasing, which
leaves are wrt) must not reuse another's evaluation."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import pyet
from pyet._core import core
from pyet._kernels import parallel
from pyet._nodes import grad as G


@pytest.fixture(autouse=True)
def _empty_cache():
    pyet.clear_grad_cache()
    # a test's structures keep their keys: the key table, dropped when it
    # reaches its limit, starts empty (a drop midway made a test miss once more)
    core.forget_structure_keys()
    yield
    pyet.clear_grad_cache()


def entries(n=1):
    """The cache holds n structures; else an AssertionError naming the parts
    in which its keys differ from the first."""
    keys = list(G.SCHEDULES.entries)
    diff = [[(i, a, b) for i, (a, b) in enumerate(zip(keys[0], k, strict=False)) if a != b]
            for k in keys[1:]]
    assert len(keys) == n, f"{len(keys)} keys, differing from the first in (part, first, it): " \
        f"{diff}"


def fresh(y, wrt, seed=None):
    """value_and_grad's evaluation without the cache."""
    single = isinstance(wrt, pyet.Tensor)
    grads = pyet.grad(y, wrt, seed)
    exprs = [y, grads] if single else [y, *grads]
    dsts = [np.empty(e.shape, e.dtype) for e in exprs]
    core.run_statements(dsts, exprs)
    return dsts


def cached(y, wrt, seed=None):
    v, g = pyet.value_and_grad(y, wrt, seed)
    return [v.numpy()] + ([g.numpy()] if isinstance(wrt, pyet.Tensor) else
                          [x.numpy() for x in g])


def same_bits(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        assert np.array_equal(a, b, equal_nan=True), (a, b)


class Counting:
    """Counts value_and_grad's differentiations (cache misses)."""

    def __init__(self, monkeypatch):
        self.misses = 0
        real = G.grad

        def counting(*args, **kw):
            self.misses += 1
            return real(*args, **kw)
        monkeypatch.setattr(G, "grad", counting)


def check_call(build, arrays, seed=None):
    """value_and_grad of build(tensors) equals a fresh evaluation, bit for bit."""
    ts = [pyet.asarray(a) for a in arrays]
    y, wrt = build(ts)
    got = [a.copy() for a in cached(y, wrt, seed)]
    y2, wrt2 = build(ts)
    same_bits(got, fresh(y2, wrt2, seed))
    return got


# ------------------------------------------------------------- the models

def mlp(labels):
    def build(ts):
        x, W1, b1, W2, b2 = ts
        h = pyet.relu(x @ W1 + b1)
        logp = pyet.log_softmax(h @ W2 + b2, 1)
        return -pyet.mean(pyet.choose_row_element(logp, labels)), [W1, b1, W2, b2]
    return build


def mlp_arrays(rng, n=7, dtype=np.float64):
    return [rng.standard_normal(s).astype(dtype) for s in [(n, 5), (5, 6), (6,), (6, 3), (3,)]]


def test_hits_replay_over_new_arrays_and_values(monkeypatch):
    count = Counting(monkeypatch)
    rng = np.random.default_rng(0)
    for _ in range(5):
        labels = rng.integers(0, 3, 7)  # new indices every step: read, not copied
        check_call(mlp(labels), mlp_arrays(rng))
    assert count.misses == 1  # the recording call only
    entries()


def test_in_place_updates_are_read(monkeypatch):
    count = Counting(monkeypatch)
    rng = np.random.default_rng(1)
    arrays = mlp_arrays(rng)
    labels = rng.integers(0, 3, 7)
    for _ in range(4):
        check_call(mlp(labels), arrays)
        for a in arrays[1:]:
            a -= 0.1 * rng.standard_normal(a.shape)
    entries()
    assert count.misses == 1


def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    for _ in range(3):
        arrays = mlp_arrays(rng, n=9)
        labels = rng.integers(0, 3, 9)
        got = check_call(mlp(labels), arrays)
        tt = [torch.tensor(a, requires_grad=True) for a in arrays]
        x, W1, b1, W2, b2 = tt
        loss = torch.nn.functional.cross_entropy(torch.relu(x @ W1 + b1) @ W2 + b2,
                                                 torch.as_tensor(labels))
        loss.backward()
        np.testing.assert_allclose(got[0], loss.detach().numpy(), rtol=1e-12)
        for g, t in zip(got[1:], tt[1:], strict=True):
            np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------ results and aliasing

def test_held_results_are_not_overwritten():
    rng = np.random.default_rng(3)
    arrays = mlp_arrays(rng)
    labels = rng.integers(0, 3, 7)
    build = mlp(labels)
    ts = [pyet.asarray(a) for a in arrays]
    results = []
    for _ in range(4):
        v, g = pyet.value_and_grad(*build(ts))
        results.append((v.numpy().copy(), [x.numpy().copy() for x in g], v, g))
        for a in arrays[1:]:
            a *= 1.5
    for want_v, want_g, v, g in results:  # every held result as it was handed out
        assert np.array_equal(v.numpy(), want_v)
        for x, w in zip(g, want_g, strict=True):
            assert np.array_equal(x.numpy(), w)


def test_a_loop_holding_the_last_results_alternates_two_schedules(monkeypatch):
    count = Counting(monkeypatch)
    rng = np.random.default_rng(18)
    arrays = mlp_arrays(rng)
    labels = rng.integers(0, 3, 7)
    build = mlp(labels)
    ts = [pyet.asarray(a) for a in arrays]
    v = g = None
    for _ in range(6):
        prev = (v, g, None if v is None else [x.numpy().copy() for x in g])
        v, g = pyet.value_and_grad(*build(ts))
        same_bits([v.numpy()] + [x.numpy() for x in g], fresh(*build(ts)))
        if prev[0] is not None:  # the last step's results, held during this call
            for x, want in zip(prev[1], prev[2], strict=True):
                assert np.array_equal(x.numpy(), want)
        for a in arrays[1:]:
            a -= 0.01 * rng.standard_normal(a.shape)
    (entry,) = G.SCHEDULES.entries.values()
    assert count.misses == G.SCHEDULES.pool and len(entry) == 2


def test_held_result_view_is_not_overwritten():
    rng = np.random.default_rng(4)
    x = pyet.asarray(rng.standard_normal((4, 3)))
    for _ in range(2):  # recorded, then replayed
        _, g = pyet.value_and_grad(pyet.sum(pyet.exp(x)), x)
    row = g.numpy()[1]  # a view of the result; the Tensor is dropped
    want = row.copy()
    del g
    x.numpy()[...] += 1
    pyet.value_and_grad(pyet.sum(pyet.exp(x)), x)
    assert np.array_equal(row, want)


def test_a_result_as_the_next_leaf():
    # an optimizer step reads the last gradient while the next call runs
    rng = np.random.default_rng(5)
    W = rng.standard_normal((3, 3))
    x = rng.standard_normal((4, 3))
    w = pyet.asarray(W)
    for _ in range(4):
        _, g = pyet.value_and_grad(pyet.sum(pyet.tanh(pyet.asarray(x) @ w)), w)
        g_prev = g
        y = pyet.sum(pyet.tanh(pyet.asarray(x) @ w) * g_prev[0])
        got = [a.copy() for a in cached(y, w)]
        same_bits(got, fresh(pyet.sum(pyet.tanh(pyet.asarray(x) @ w) * g_prev[0]), w))
        W -= 0.1 * g.numpy()


def test_aliased_leaves_are_a_different_structure(monkeypatch):
    count = Counting(monkeypatch)
    rng = np.random.default_rng(6)
    a = rng.standard_normal((5, 5))

    def build(p, q):
        return pyet.sum(pyet.sin(p @ q) * p), [p, q]

    # the same array twice, two arrays over the same memory, two arrays
    pairs = [(a, a), (a, a.view()), (a, a.copy()), (a.T, a), (a.T, a.T.copy())]
    for p, q in pairs * 2:
        tp, tq = pyet.asarray(p), pyet.asarray(q)
        got = [x.copy() for x in cached(*build(tp, tq))]
        same_bits(got, fresh(*build(tp, tq)))
    assert len(G.SCHEDULES.entries) == len(pairs) and count.misses == len(pairs)


def test_same_tensor_twice_and_overlapping_views():
    rng = np.random.default_rng(7)
    base = rng.standard_normal(12)
    for off in (0, 1, 2, 0, 1):
        a, b = base[off:off + 6], base[3:9]  # overlapping, then not the same way
        ta, tb = pyet.asarray(a), pyet.asarray(b)
        y = pyet.sum(pyet.exp(ta) * tb + ta * ta)
        got = [x.copy() for x in cached(y, [ta, tb])]
        same_bits(got, fresh(pyet.sum(pyet.exp(ta) * tb + ta * ta), [ta, tb]))


# ---------------------------------------------------------- invalidation

@pytest.mark.parametrize("second", [
    lambda a: np.asfortranarray(a),      # other strides
    lambda a: a.astype(np.float32),      # other dtype
    lambda a: a[:, ::-1],                # negative strides
    lambda a: a[:3],                     # other shape
    lambda a: np.broadcast_to(a[:1], a.shape),  # stride 0
])
def test_layouts_are_different_structures(second):
    rng = np.random.default_rng(8)
    a = rng.standard_normal((4, 4))
    W = rng.standard_normal((4, 4))
    for arr in (a, second(a), a.copy(), second(a.copy())):
        x, w = pyet.asarray(arr), pyet.asarray(W.astype(arr.dtype))
        got = [g.copy() for g in cached(pyet.sum(pyet.sigmoid(x @ w) * x), [x, w])]
        same_bits(got, fresh(pyet.sum(pyet.sigmoid(x @ w) * x), [x, w]))
    assert len(G.SCHEDULES.entries) == 2


def test_misaligned_leaves_are_a_different_structure():
    rng = np.random.default_rng(19)
    for off in (0, 1, 0, 1):
        buf = np.zeros(8 * 12 + 1, np.uint8)
        a = buf[off:off + 96].view(np.float64).reshape(3, 4)  # misaligned at off 1
        a[...] = rng.standard_normal((3, 4))
        W = pyet.asarray(rng.standard_normal((4, 4)))
        x = pyet.asarray(a)
        got = [g.copy() for g in cached(pyet.sum(pyet.tanh(x @ W) + x), [x, W])]
        same_bits(got, fresh(pyet.sum(pyet.tanh(x @ W) + x), [x, W]))
    assert len(G.SCHEDULES.entries) == 2


@pytest.mark.parametrize("c1, c2", [(2.0, 3.0), (0.0, -0.0), (1, 1.0), (2.0, np.float32(2.0)),
                                    (1.0, 0.0)])
def test_scalars_by_value_bits_and_type(c1, c2):
    rng = np.random.default_rng(9)
    a = rng.standard_normal(6).astype(np.float32)
    a[0] = -0.0
    for c in (c1, c2, c1, c2):
        x = pyet.asarray(a)
        got = [g.copy() for g in cached(pyet.sum((x + c) * c * pyet.exp(x * c)), x)]
        same_bits(got, fresh(pyet.sum((x + c) * c * pyet.exp(x * c)), x))


def test_constant_leaf_values():
    # a stride-0 leaf is lowered as its one value: other values, other structures
    rng = np.random.default_rng(10)
    a = rng.standard_normal((3, 4))
    for v in (2.0, 0.0, 1.0, 2.0, 5.0):
        x, c = pyet.asarray(a), pyet.asarray(np.broadcast_to(np.float64(v), (3, 4)))
        got = [g.copy() for g in cached(pyet.sum(x * c + c), x)]
        same_bits(got, fresh(pyet.sum(x * c + c), x))


def test_wrt_positions(monkeypatch):
    count = Counting(monkeypatch)
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    for pick in ([0], [1], [0, 1], [1, 0], [0], [1, 0]):
        ta, tb = pyet.asarray(a), pyet.asarray(b)
        wrt = [(ta, tb)[i] for i in pick]
        y = pyet.sum(pyet.tanh(ta @ tb) * ta)
        got = [g.copy() for g in cached(y, wrt)]
        same_bits(got, fresh(pyet.sum(pyet.tanh(ta @ tb) * ta), wrt))
    entries(4)
    assert count.misses == 4


def test_views_of_wrt_and_not():
    rng = np.random.default_rng(12)
    a = rng.standard_normal((4, 4))
    for _ in range(2):
        w = pyet.asarray(a)
        other = pyet.asarray(a)  # the same memory, not the wrt Tensor
        for y in (pyet.sum(pyet.exp(w.T) * w), pyet.sum(pyet.exp(other.T) * w),
                  pyet.sum(w[1:] * 2)):
            got = [g.copy() for g in cached(y, w)]
            same_bits(got, fresh(y, w))


def test_seed_and_sharing():
    rng = np.random.default_rng(13)
    a = rng.standard_normal((3, 4))
    for seed in (None, 2.0, rng.standard_normal(4), 3.0, None):
        x = pyet.asarray(a)
        s = pyet.sigmoid(x)
        y = pyet.sum(s * s, axis=0) if seed is not None else pyet.sum(s * s)
        got = [g.copy() for g in cached(y, x, seed)]
        same_bits(got, fresh(y, x, seed))
    # the same structure without sharing the node is another structure
    x = pyet.asarray(a)
    got = [g.copy() for g in cached(pyet.sum(pyet.sigmoid(x) * pyet.sigmoid(x)), x)]
    same_bits(got, fresh(pyet.sum(pyet.sigmoid(x) * pyet.sigmoid(x)), x))


def test_threads_are_part_of_the_key(monkeypatch):
    from conftest import pyet_threads

    count = Counting(monkeypatch)
    rng = np.random.default_rng(14)
    a = rng.standard_normal((50, 40))
    for n in (1, 2, 1):
        with pyet_threads(n):  # lifts the OpenMP cap PyTorch's tests leave behind
            x = pyet.asarray(a)
            cached(pyet.sum(pyet.exp(x)), x)
    assert count.misses == 2


def test_replays_follow_the_thread_split(threaded):
    # a reduction's accumulators follow the threads a pass splits into; a
    # schedule replayed after the minimum of work per thread changed splits as
    # a fresh run does (the split is decided per pass, not recorded)
    rng = np.random.default_rng(1)  # values whose sum the two splits round differently
    a = rng.standard_normal(5000) * 10.0 ** rng.integers(-8, 8, 5000)
    seen = {}
    for m in (64, 64, 4096, 4096, 64):
        parallel.set_min_per_thread(m)
        x = pyet.asarray(a)
        y = pyet.sum(x * 1.5)
        want = fresh(y, x)
        same_bits([g.copy() for g in cached(y, x)], want)
        seen.setdefault(m, want[0].tobytes())
    assert seen[64] != seen[4096]


def test_user_functions_are_not_kept():
    a = np.linspace(-1, 1, 6)
    for _ in range(3):
        x = pyet.asarray(a)
        f = pyet.F(np.sin, x, grad=lambda args, out, g: (g * pyet.cos(args[0]),))
        v, g = pyet.value_and_grad(pyet.sum(f), x)
        np.testing.assert_allclose(g.numpy(), np.cos(a))
    assert all(e is None for e in G.SCHEDULES.entries.values())


def test_the_cache_is_bounded():
    rng = np.random.default_rng(15)
    for n in range(1, G.SCHEDULES.size + 5):
        x = pyet.asarray(rng.standard_normal(n))
        cached(pyet.sum(pyet.exp(x)), x)
    assert len(G.SCHEDULES.entries) == G.SCHEDULES.size
    pyet.clear_grad_cache()
    assert not G.SCHEDULES.entries


def test_take_indices_are_read_on_replay(monkeypatch):
    count = Counting(monkeypatch)
    rng = np.random.default_rng(16)
    W = rng.standard_normal((6, 3))
    for _ in range(4):
        idx = rng.integers(-6, 6, 5)
        w = pyet.asarray(W)
        y = pyet.sum(pyet.take(idx, w) ** 2 * pyet.arange(3.0))
        got = [g.copy() for g in cached(y, w)]
        want = np.zeros_like(W)
        np.add.at(want, idx, 2 * W[idx] * np.arange(3.0))
        np.testing.assert_allclose(got[1], want)
        same_bits(got, fresh(pyet.sum(pyet.take(idx, w) ** 2 * pyet.arange(3.0)), w))
    entries()
    assert count.misses == 1


# ------------------------------------------------------- random trees

UNARY = [pyet.exp, pyet.tanh, pyet.sigmoid, pyet.sin, lambda e: e * e, pyet.relu, pyet.abs]
LAYOUTS = ["c", "f", "rev", "step", "bcast"]


def layout(a, kind):
    if kind == "f":
        return np.asfortranarray(a)
    if kind == "rev":
        return np.ascontiguousarray(a[::-1])[::-1]
    if kind == "step":
        big = np.empty((a.shape[0], 2 * a.shape[1]), a.dtype)
        big[:, ::2] = a
        return big[:, ::2]
    if kind == "bcast":
        return np.broadcast_to(a[:1], a.shape)
    return np.ascontiguousarray(a)


@st.composite
def trees(draw):
    n, m = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    nleaves = draw(st.integers(1, 3))
    kinds = [draw(st.sampled_from(LAYOUTS)) for _ in range(nleaves)]
    ops = draw(st.lists(st.tuples(st.integers(0, len(UNARY) - 1), st.integers(0, 3),
                                  st.integers(0, 2), st.floats(-2, 2, width=32)),
                        min_size=1, max_size=6))
    wrt = draw(st.lists(st.integers(0, nleaves - 1), min_size=1, max_size=3, unique=True))
    reduce = draw(st.sampled_from(["sum", "mean", "max", "dot", "ce", "softmax", "tdot",
                                   "axis0"]))
    return n, m, dtype, kinds, ops, wrt, reduce


def build_tree(spec, ts, W, labels=None):
    n, m, dtype, kinds, ops, wrt, reduce = spec
    nodes = list(ts)
    for f, how, src, c in ops:
        a = nodes[src % len(nodes)]
        b = nodes[(src + 1) % len(nodes)]
        e = UNARY[f](a)
        e = (e + b, e * b, e * c, pyet.maximum(e, b))[how]
        nodes.append(e)
    top = nodes[-1]
    if reduce == "dot":
        top = pyet.sum(top @ W)
    elif reduce == "ce":  # labels: new indices every call
        top = -pyet.mean(pyet.choose_row_element(pyet.log_softmax(top, 1), labels))
    elif reduce == "softmax":
        top = pyet.sum(pyet.softmax(top, 1) * ts[0])
    elif reduce == "tdot":  # a transposed view into a product
        top = pyet.sum(pyet.tanh(top.T @ ts[0]))
    elif reduce == "axis0":  # a reduction along the rows, a broadcast bias
        top = pyet.sum(pyet.sum(top, axis=0) * W[:, 0] + pyet.sum(top * W[:, 1], axis=0))
    elif reduce == "max":
        top = pyet.sum(pyet.max(top, axis=1))
    else:
        top = getattr(pyet, reduce)(top)
    return top, [ts[i] for i in wrt]


@settings(max_examples=60, deadline=None)
@given(trees(), st.integers(0, 2**32 - 1))
def test_random_trees_replay_bit_for_bit(spec, seed):
    n, m, dtype, kinds, ops, wrt, reduce = spec
    rng = np.random.default_rng(seed)
    W = pyet.asarray(rng.standard_normal((m, 2)).astype(dtype))
    for _ in range(3):  # recorded, then replayed over new arrays of the same layouts
        arrays = [layout(rng.standard_normal((n, m)).astype(dtype), k) for k in kinds]
        ts = [pyet.asarray(a) for a in arrays]
        labels = rng.integers(0, m, n)
        got = [g.copy() for g in cached(*build_tree(spec, ts, W, labels))]
        same_bits(got, fresh(*build_tree(spec, ts, W, labels)))


@settings(max_examples=25, deadline=None)
@given(trees(), st.integers(0, 2**32 - 1))
def test_random_trees_against_torch(spec, seed):
    torch = pytest.importorskip("torch")
    n, m, dtype, kinds, ops, wrt, reduce = spec
    # a stride-0 leaf is folded as a constant when the tree is built: it gets
    # no gradient (torch's would be the sum), so it is not a wrt here
    wrt = [i for i in wrt if kinds[i] != "bcast"]
    assume(wrt)
    spec = n, m, dtype, kinds, ops, wrt, reduce
    rng = np.random.default_rng(seed)
    Wa = rng.standard_normal((m, 2))
    for _ in range(2):
        arrays = [layout(rng.standard_normal((n, m)), k) for k in kinds]
        arrays = [a + 1e-3 * np.arange(a.size).reshape(a.shape) if k != "bcast" else a
                  for a, k in zip(arrays, kinds, strict=True)]  # few ties for max/relu
        ts = [pyet.asarray(a) for a in arrays]
        labels = rng.integers(0, m, n)
        got = cached(*build_tree(spec, ts, pyet.asarray(Wa), labels))
        tt = [torch.tensor(np.array(a), requires_grad=True) for a in arrays]
        tw = torch.tensor(Wa)
        y = _torch_tree(torch, spec, tt, tw, labels)
        y.backward()
        np.testing.assert_allclose(got[0], y.detach().numpy(), rtol=1e-9, atol=1e-12)
        for g, i in zip(got[1:], wrt, strict=True):
            want = tt[i].grad.numpy() if tt[i].grad is not None else np.zeros(g.shape)
            np.testing.assert_allclose(g, want, rtol=1e-8, atol=1e-10)


def _torch_tree(torch, spec, tt, tw, labels):
    n, m, dtype, kinds, ops, wrt, reduce = spec
    unary = [torch.exp, torch.tanh, torch.sigmoid, torch.sin, lambda e: e * e, torch.relu,
             torch.abs]
    nodes = list(tt)
    for f, how, src, c in ops:
        a = nodes[src % len(nodes)]
        b = nodes[(src + 1) % len(nodes)]
        e = unary[f](a)
        e = (e + b, e * b, e * c, torch.maximum(e, b))[how]
        nodes.append(e)
    top = nodes[-1]
    if reduce == "dot":
        return torch.sum(top @ tw)
    if reduce == "ce":
        return torch.nn.functional.cross_entropy(top, torch.as_tensor(labels))
    if reduce == "softmax":
        return torch.sum(torch.softmax(top, 1) * tt[0])
    if reduce == "tdot":
        return torch.sum(torch.tanh(top.T @ tt[0]))
    if reduce == "axis0":
        return torch.sum(torch.sum(top, 0) * tw[:, 0] + torch.sum(top * tw[:, 1], 0))
    if reduce == "max":
        return torch.sum(torch.amax(top, 1))
    return getattr(torch, reduce)(top)


# ------------------------------------- the kernels these schedules lean on

def test_relu_of_a_constant_leaf():
    # (constant folding called np.maximum with relu's one operand)
    for v in (-1.5, 0.0, 2.5):
        c = pyet.asarray(np.broadcast_to(np.float32(v), (2, 3)))
        assert np.array_equal(np.asarray(pyet.evaluate(pyet.relu(c))),
                              np.maximum(np.full((2, 3), v, np.float32), 0))

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("n", [0, 1, 7, 16, 33, 1000])
def test_where_with_a_scalar_branch(dtype, n):
    # where(c, x, 0) (relu's gradient) and where(c, 0, x), where(c, a, b) of
    # two scalars: vectorized loops, NumPy's values
    rng = np.random.default_rng(n)
    c = rng.random(n) > 0.5
    x = (rng.standard_normal(2 * n) * 10).astype(dtype)[::2]  # strided
    one = dtype(1) if dtype is not np.bool_ else True
    for e, want in [(pyet.where(c, x, 0), np.where(c, x, 0)),
                    (pyet.where(c, x, dtype(0)), np.where(c, x, dtype(0))),
                    (pyet.where(c, dtype(0), x), np.where(c, dtype(0), x)),
                    (pyet.where(c, one, dtype(0)), np.where(c, one, dtype(0))),
                    (pyet.where(pyet.asarray(c), x, x[::-1]), np.where(c, x, x[::-1]))]:
        got = np.asarray(pyet.evaluate(e))
        assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("log", [False, True])
def test_kept_softmax_of_a_tree_is_bound_and_exact(log):
    # a kept plan evaluates a softmax's tree child into scratch by a recorded
    # pass and replays one bound kernel call: the values a fresh evaluation gives
    rng = np.random.default_rng(17)
    a = rng.standard_normal((9, 10)).astype(np.float32)
    b = rng.standard_normal(10).astype(np.float32)
    labels = rng.integers(0, 10, 9)
    ta, tb = pyet.asarray(a), pyet.asarray(b)
    f = pyet.log_softmax if log else pyet.softmax
    y = f(pyet.tanh(ta) + tb, 1)
    loss = -pyet.mean(pyet.choose_row_element(pyet.log_softmax(ta * 2 + tb, 1), labels))
    plan = pyet.EvalPlan()
    hs = [plan.register(y), plan.register(pyet.grad(loss, ta))]
    for _ in range(3):
        plan.run(keep=True)
        want = [np.asarray(pyet.evaluate(f(pyet.tanh(ta) + tb, 1))), fresh(loss, ta)[1]]
        for h, w in zip(hs, want, strict=True):
            assert np.array_equal(h.value.numpy(), w)
        a += 0.5
    text = pyet.explain(plan)
    assert f"Compute({f.__name__}(9,10), bound=True)" in text
    assert "Compute(softmax_xent_grad(9,10), bound=True)" in text


def test_a_rule_that_copies_a_leaf_is_not_replayed(monkeypatch):
    # a gradient rule that copies index values when it builds its tree would go
    # stale on replay: such a schedule is refused and evaluated plainly
    from pyet._nodes import nn as nn_nodes
    from pyet._nodes.views import broadcast_to

    def copying_vjp(self, node, g):
        m, idx = node._args
        zeros = broadcast_to(core.tensor(np.zeros((), g.dtype)), m.shape)
        return (nn_nodes.fill_row_element(zeros, g, idx), None)  # copies idx
    monkeypatch.setattr(nn_nodes.ChooseRowElement, "vjp", copying_vjp)
    rng = np.random.default_rng(20)
    arrays = mlp_arrays(rng)
    for _ in range(4):
        check_call(mlp(rng.integers(0, 3, 7)), arrays)
    assert list(G.SCHEDULES.entries.values()) == [None]


def test_zero_d_leaves_are_read_on_replay(monkeypatch):
    count = Counting(monkeypatch)
    rng = np.random.default_rng(21)
    for _ in range(4):
        x = pyet.asarray(rng.standard_normal((3, 4)))
        s = pyet.asarray(np.array(rng.standard_normal()))  # a new 0-d array each call
        y = pyet.sum(pyet.exp(x * s) + s * s)
        got = [g.copy() for g in cached(y, [x, s])]
        same_bits(got, fresh(pyet.sum(pyet.exp(x * s) + s * s), [x, s]))
    assert count.misses == 1
