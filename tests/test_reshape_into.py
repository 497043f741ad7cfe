"""A reshape NumPy cannot view (of a transposed value, say) writes its child
straight into the destination seen in the child's shape (View.into): one
pass, the same bits as NumPy's reshape, in a plain evaluation, as the root of
an assignment into guarded or strided destinations, and in a kept plan's
replays (the CNN's backward reshapes its transposed activations so)."""

import numpy as np
import pytest

import pyet

SENTINEL = 0x5A


def transposed_reshape(X, W, shape3, axes, shape2):
    # a product's value (scratch), its axes permuted, then a reshape NumPy copies
    return pyet.reshape(pyet.transpose(pyet.reshape(pyet.dot(X, W), shape3), axes), shape2)


def reference(x, w, shape3, axes, shape2):
    return pyet.evaluate(pyet.dot(pyet.asarray(x), pyet.asarray(w))).numpy() \
        .reshape(shape3).transpose(axes).reshape(shape2)


CASES = [((8, 4, 15), (8, 3, 5), (1, 0, 2), (3, 40)),
         ((6, 3, 20), (6, 4, 5), (2, 1, 0), (10, 12)),
         ((5, 2, 7), (5, 7), (1, 0), (35,))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dims,shape3,axes,shape2", CASES)
def test_root_reshape_into_guarded_and_strided_destinations(dtype, dims, shape3, axes, shape2):
    m, k, n = dims
    rng = np.random.default_rng(0)
    x, w = rng.random((m, k)).astype(dtype), rng.random((k, n)).astype(dtype)
    want = reference(x, w, shape3, axes, shape2)
    e = transposed_reshape(pyet.asarray(x), pyet.asarray(w), shape3, axes, shape2)
    size = want.nbytes
    buf = np.full(size + 64, SENTINEL, np.uint8)
    out = buf[32:32 + size].view(dtype).reshape(shape2)
    pyet.evaluate(e, out=out)
    np.testing.assert_array_equal(out, want)
    assert np.all(buf[:32] == SENTINEL) and np.all(buf[32 + size:] == SENTINEL)
    # a destination no reshape can view: the value, then one assignment
    big = np.zeros(tuple(2 * s for s in shape2), dtype)
    strided = big[tuple(slice(None, None, 2) for _ in shape2)]
    pyet.evaluate(e, out=strided)
    np.testing.assert_array_equal(strided, want)
    assert not big[tuple(slice(1, None, 2) for _ in shape2)].any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kept_plan_replays_the_reshape_from_memory_as_it_is_then(dtype):
    rng = np.random.default_rng(1)
    x, w = rng.random((8, 4)).astype(dtype), rng.random((4, 15)).astype(dtype)
    g = rng.random((3, 40)).astype(dtype)
    X, W, G = pyet.asarray(x), pyet.asarray(w), pyet.asarray(g)
    e = transposed_reshape(X, W, (8, 3, 5), (1, 0, 2), (3, 40))
    dst = np.empty((3, 40), dtype)
    plan = pyet.EvalPlan()
    plan.assign(dst, pyet.where(e > 2, G, 0))
    plan.run(keep=True)
    assert "Compute(reshape(3,40)" in pyet.explain(plan)  # the path under test
    for _ in range(3):
        want = np.where(reference(x, w, (8, 3, 5), (1, 0, 2), (3, 40)) > 2, g, 0)
        np.testing.assert_array_equal(dst, want)
        x[...] = rng.random(x.shape)
        plan.run(keep=True)
    np.testing.assert_array_equal(
        dst, np.where(reference(x, w, (8, 3, 5), (1, 0, 2), (3, 40)) > 2, g, 0))


def test_reshape_of_a_transposed_tensor_into_its_own_memory():
    # the child overlaps dst: read before written
    a = np.arange(12.0).reshape(3, 4)
    want = a.T.reshape(3, 4).copy()
    pyet.evaluate(pyet.reshape(pyet.asarray(a).T, (3, 4)), out=a)
    np.testing.assert_array_equal(a, want)
