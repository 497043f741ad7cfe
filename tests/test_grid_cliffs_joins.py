"""stack of leaves builds its node in one pass (views._stack_leaves: the
expand views and the join as stack's general way makes them), and joins of
leaves copy through join_into without a Python call, keeping the GIL below
256 KiB: NumPy's values on every axis, dtype and layout, the same node as the
general way, the general way for trees, scalars, mixed dtypes and shapes,
and NumPy's errors before any write."""

import numpy as np
import pytest

import pyet
from pyet._nodes import views


def pieces(shape, dt, rng, k=3):
    base = [(rng.standard_normal(shape) * 5).astype(dt) for _ in range(k)]
    big = (rng.standard_normal(shape[:-1] + (2 * shape[-1],)) * 5).astype(dt)
    return base[:1] + [np.asfortranarray(base[1]), big[..., ::2]] + base[3:]


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int32, np.bool_])
@pytest.mark.parametrize("shape", [(5,), (4, 6), (3, 4, 5), (64, 64)])
def test_stack_of_leaves_on_every_axis(dt, shape):
    rng = np.random.default_rng(len(shape))
    arrs = pieces(shape, dt, rng)
    T = [pyet.asarray(a) for a in arrs]
    for axis in range(-len(shape) - 1, len(shape) + 1):
        want = np.stack(arrs, axis)
        got = np.empty_like(want)
        pyet.asarray(got)[...] = pyet.stack(T, axis)
        np.testing.assert_array_equal(got, want, err_msg=f"axis {axis}")
        np.testing.assert_array_equal(np.asarray(pyet.stack(tuple(T), axis)), want)
        # a strided destination
        buf = np.zeros(want.shape[:-1] + (2 * want.shape[-1],), want.dtype)
        pyet.asarray(buf[..., ::2])[...] = pyet.stack(T, axis)
        np.testing.assert_array_equal(buf[..., ::2], want)


def test_fast_node_is_the_general_ones():
    rng = np.random.default_rng(1)
    T = [pyet.asarray(a) for a in pieces((4, 5), np.float64, rng)]
    for axis in range(3):
        fast = views._stack_leaves(T, axis)
        assert fast is not None
        general = views.concatenate([views._push(t, "expand", axis, t.shape[:axis] + (1,)
                                                 + t.shape[axis:]) for t in T], axis)
        assert fast._key == general._key and fast.shape == general.shape
        assert fast._kernel is general._kernel
    assert views._stack_leaves(T, -1) is None  # (a negative axis: the general way)
    assert views._stack_leaves(T, True) is None
    assert views._stack_leaves(iter(T), 0) is None


def test_general_way_for_trees_scalars_and_mixed_dtypes():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)).astype(np.float32)
    A, B = pyet.asarray(a), pyet.asarray(b)
    np.testing.assert_array_equal(np.asarray(pyet.stack([A, B], 1)), np.stack([a, b], 1))
    np.testing.assert_array_equal(np.asarray(pyet.stack([A * 2, A], 0)),
                                  np.stack([a * 2, a], 0))
    np.testing.assert_array_equal(np.asarray(pyet.stack([a, A], 2)), np.stack([a, a], 2))
    np.testing.assert_array_equal(np.asarray(pyet.stack([A], 0)), np.stack([a], 0))
    z = pyet.asarray(np.array(2.0))
    np.testing.assert_array_equal(np.asarray(pyet.stack([z, z], 0)), np.array([2.0, 2.0]))


def test_stack_errors_before_any_write():
    A, C = pyet.asarray(np.ones((3, 4))), pyet.asarray(np.ones((4, 3)))
    dst = np.full((2, 3, 4), 5.0)
    with pytest.raises(ValueError, match="same shape"):
        pyet.asarray(dst)[...] = pyet.stack([A, C], 0)
    with pytest.raises(np.exceptions.AxisError):
        pyet.asarray(dst)[...] = pyet.stack([A, A], 3)
    with pytest.raises(ValueError, match="at least one"):
        pyet.stack([], 0)
    with pytest.raises(ValueError):
        pyet.asarray(dst[:1])[...] = pyet.stack([A, A], 0)
    assert (dst == 5).all()


@pytest.mark.parametrize("n", [100, 128 * 64, 512 * 64 + 1])
def test_joins_below_and_above_the_nogil_size(n):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal((n // 64 + 1, 64)), rng.standard_normal((n // 64 + 1, 64))
    A, B = pyet.asarray(a), pyet.asarray(b)
    for axis in (0, 1):
        want = np.concatenate([a, b], axis)
        got = np.empty_like(want)
        pyet.asarray(got)[...] = pyet.concatenate([A, B], axis)
        np.testing.assert_array_equal(got, want)
    got = np.empty((a.shape[0], 64, 2))
    pyet.asarray(got)[...] = pyet.stack([A, B], 2)  # 8-byte blocks: the pair copy
    np.testing.assert_array_equal(got, np.stack([a, b], 2))
    # join_into itself, and overlap refused
    out = np.empty((2 * a.shape[0], 64))
    assert pyet._core.core.join_into(out, [a, b], 0)
    np.testing.assert_array_equal(out, np.concatenate([a, b], 0))
    assert not pyet._core.core.join_into(out, [out[:a.shape[0]], b], 0)
