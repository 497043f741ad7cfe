"""A pass that is one kernel from leaves straight into the destination keeps no
block register, so it runs on long blocks (plan_blocks: 8192 elements, not
BLOCK): its values on every layout and around the block edges, against NumPy."""

import numpy as np
import pytest

import pyet

OPS = {
    "abs": (abs, np.abs),
    "invert": (lambda a: ~a, np.invert),
    "less": (lambda a: a < a[..., ::-1] if a.ndim else a < 0, None),
    "floor_divide": (lambda a: a // 7, lambda a: np.floor_divide(a, 7)),
    "add": (lambda a: a + 3, lambda a: a + 3),
}


def test_one_kernel_keeps_no_register_and_a_tree_does():
    a = pyet.asarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    for e in (abs(a), ~a, a // 7, a * 2 + a):
        assert "0 block register(s)" in pyet.explain(e)
    assert "0 block register(s)" not in pyet.explain(abs(a) * (a + 1) - a // 3)


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("n", [1, 8191, 8192, 8193, 2 * 8192 + 3, 70001])
@pytest.mark.parametrize("layout", ["C", "short_wide", "size1", "small_dims", "strided",
                                    "negative", "fortran", "0-d", "empty"])
def test_values_around_the_long_blocks(name, n, layout):
    rng = np.random.default_rng(n)
    flat = rng.integers(-1000, 1000, 2 * n + 6).astype(np.int32)
    a = {"C": flat[:n],
         "short_wide": flat[:3 * (n // 3)].reshape(3, -1) if n >= 3 else flat[:n],
         "size1": flat[:n].reshape(1, n, 1),
         "small_dims": flat[:2 * (n // 2)].reshape(2, 1, -1) if n >= 2 else flat[:n],
         "strided": flat[:2 * n:2],
         "negative": flat[:n][::-1],
         "fortran": np.asfortranarray(flat[:3 * (n // 3)].reshape(-1, 3)) if n >= 3 else flat[:n],
         "0-d": flat[0].reshape(()),
         "empty": flat[:0].reshape(0, 4)}[layout]
    pe, ref = OPS[name]
    want = np.asarray(pe(a)) if ref is None else ref(a)  # NumPy's own operators for less
    out = np.full(np.shape(want), 99, np.asarray(want).dtype)
    pyet.asarray(out)[...] = pe(pyet.asarray(a))
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(pe(pyet.asarray(a)))), want)


def test_long_blocks_on_two_threads():
    x = np.random.default_rng(5).integers(-9, 9, 200_003).astype(np.int64)
    before = pyet.get_num_threads()
    try:
        pyet.set_num_threads(2)
        out = np.empty_like(x)
        pyet.asarray(out)[...] = abs(pyet.asarray(x))
    finally:
        pyet.set_num_threads(before)
    np.testing.assert_array_equal(out, np.abs(x))
