"""Short blocks for gathered leaves (passes.pxi plan_blocks, GATHER_BLOCK): a pass that
gathers strided leaves (two items or more a cache line) spanning GATHER_BLOCK_BYTES or
more, whose lines and blocks overflow L1, runs in blocks of GATHER_BLOCK elements.
Forced here on small operands (core.set_gather_block with low byte thresholds and odd
block lengths) and checked
against NumPy bit for bit: steps 2, 3 and 7 of 4- and 8-byte items, reversed rows, 2-D
strided rows with a broadcast row and column, scalars, casts, NaN and signed zeros,
strided and reversed destinations between sentinels, in place, threads, kept plans."""

import numpy as np
import pytest

import pyet
from pyet._core import core


@pytest.fixture(params=[7, 37, 128], autouse=True)
def short_blocks(request):
    core.set_gather_block(request.param, 64, 0)
    yield request.param
    core.set_gather_block(128)


def make(n, step, dtype, rng):
    if np.dtype(dtype).kind == "f":
        base = (rng.standard_normal(n * abs(step)) * 3).astype(dtype)
        specials = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5], dtype)[:n]
        base[: specials.size * abs(step)][:: abs(step)] = specials
    else:
        base = rng.integers(-1000, 1000, n * abs(step)).astype(dtype)
    return base[::step]


LEAF_DTYPES = [np.float32, np.float64, np.int32, np.int64]


@pytest.mark.parametrize("dtype", LEAF_DTYPES)
@pytest.mark.parametrize("step", [2, 3, 7, -1, -3])
@pytest.mark.parametrize("n", [1, 130, 1001])
def test_fused_trees_on_gathered_leaves(dtype, step, n):
    rng = np.random.default_rng(abs(step) * 31 + n)
    a, b, c = (make(n, step, dtype, rng) for _ in range(3))
    A, B, C = (pyet.asarray(x) for x in (a, b, c))
    with np.errstate(all="ignore"):
        for fp, fn in ((lambda: A * B + C, lambda: a * b + c),
                       (lambda: A - 2 * B, lambda: a - dtype(2) * b),
                       (lambda: pyet.where(A > B, A, C), lambda: np.where(a > b, a, c)),
                       (lambda: (A + B).astype(np.float64) * 0.5,
                        lambda: (a + b).astype(np.float64) * 0.5)):
            want = fn()
            got = np.asarray(pyet.evaluate(fp()))
            assert got.tobytes() == want.tobytes()
            # into a reversed strided destination between sentinels
            big = np.full(2 * n + 2, 5, want.dtype)
            fresh = big.copy()
            view = big[1:-1][::-2]
            pyet.asarray(view)[...] = fp()
            assert view.tobytes() == want.tobytes()
            big[1:-1][::-2] = fresh[1:-1][::-2]
            assert big.tobytes() == fresh.tobytes()


def test_2d_rows_broadcasts_in_place_and_aliasing():
    rng = np.random.default_rng(3)
    m = rng.standard_normal((60, 2 * 70))[:, ::2]
    row, col = rng.standard_normal(70), rng.standard_normal((60, 1))
    M, R, C = pyet.asarray(m), pyet.asarray(row), pyet.asarray(col)
    want = m * row + col - 1.25
    out = np.asfortranarray(np.zeros((60, 70)))
    pyet.asarray(out)[...] = M * R + C - 1.25
    assert out.tobytes(order="C") == want.tobytes()
    # in place on the strided view, and the destination shifted over its operand
    x = rng.standard_normal(3 * 500)
    v = x[::3]
    want = v * v + 1.0
    t = pyet.asarray(v)
    t[...] = t * t + 1.0
    assert v.tobytes() == want.tobytes()
    x = rng.standard_normal(3 * 500)
    src, dst = x[:-3:3], x[3::3]
    want = src * 2.0 + src
    pyet.asarray(dst)[...] = pyet.asarray(src) * 2.0 + pyet.asarray(src)
    assert dst.tobytes() == want.tobytes()


def test_threads_and_kept_plans(threaded):
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal(3 * 5000)[::3], rng.standard_normal(3 * 5000)[::3]
    A, B = pyet.asarray(a), pyet.asarray(b)
    assert np.asarray(pyet.evaluate(A * B + A)).tobytes() == (a * b + a).tobytes()
    out = np.empty(5000)
    plan = pyet.EvalPlan()
    plan.assign(out, A * B - B)
    for _ in range(3):
        plan.run(keep=True)
        assert out.tobytes() == (a * b - b).tobytes()
        a[...] = rng.standard_normal(5000)


def test_knob_checks():
    with pytest.raises(ValueError):
        core.set_gather_block(-1)
