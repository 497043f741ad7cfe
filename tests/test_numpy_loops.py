"""ops.NUMPY_LOOPS (here core.NUMPY_LOOP_NAMES): float functions a pass runs as
NumPy's own ufunc loop on each block (SIMD where NumPy has it), so their values
are NumPy's bit for bit, on every layout, inside fused trees, in place, on
threads and in kept plans; the loop called straight in C (Program.cloop) or,
where that is not found, as its ufunc (one call on the whole arrays when rows
are contiguous): both run here."""

import numpy as np
import pytest

import pyet
from pyet._core import core
from pyet._core.ops import OPS_BY_NAME

NUMPY_LOOP_NAMES = core.NUMPY_LOOP_NAMES  # ops.NUMPY_LOOPS but those pyet computes in lanes here


@pytest.fixture(params=["C", "ufunc"], autouse=True)
def how_called(request):
    """The loop called straight in C (found and probed) or as its ufunc."""
    before = core.set_numpy_c_loops(request.param == "C")
    yield request.param
    core.set_numpy_c_loops(before)


def values(name, shape, dtype, rng, operand=0):
    lo, hi = OPS_BY_NAME[name].domain[operand][:2]
    return rng.uniform(lo, hi, shape).astype(dtype)


def operands(name, shape, dtype, rng):
    """One array per operand of the op (arctan2 and logaddexp take two)."""
    return [values(name, shape, dtype, rng, k) for k in range(OPS_BY_NAME[name].arity)]


def layout(a, kind):
    return {"C": a, "F": np.asfortranarray(a), "strided": np.repeat(a, 2, axis=1)[:, ::2],
            "reversed": np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1], "empty": a[:0],
            "broadcast row": np.broadcast_to(a[0], a.shape)}[kind]


def assert_same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("name", sorted(NUMPY_LOOP_NAMES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["C", "F", "strided", "reversed", "empty", "broadcast row"])
def test_op_alone_gives_numpys_bits(name, dtype, kind):
    args = [layout(a, kind) for a in operands(name, (9, 70), dtype, np.random.default_rng(0))]
    # NumPy's values on contiguous memory (its SIMD loop): on an all-reversed view
    # NumPy itself takes its scalar loop and rounds differently, pyet flips the axes
    want = getattr(np, name)(*[np.ascontiguousarray(a) for a in args])
    out = np.full(args[0].shape, 7, dtype)
    pyet.evaluate(getattr(pyet, name)(*[pyet.asarray(a) for a in args]), out=out)
    assert_same_bits(out, want)
    assert_same_bits(pyet.evaluate(getattr(pyet, name)(*[pyet.asarray(a) for a in args])), want)


@pytest.mark.parametrize("name", sorted(NUMPY_LOOP_NAMES))
def test_inside_a_fused_tree_and_in_place(name, how_called):
    rng = np.random.default_rng(1)
    x, *rest = operands(name, (300, 41), np.float32, rng)
    y = rng.standard_normal((300, 41)).astype(np.float32)
    leaves = "".join(f", leaf{k + 1}" for k in range(len(rest)))
    e = getattr(pyet, name)(pyet.asarray(x), *map(pyet.asarray, rest)) * pyet.asarray(y) + 1.5
    text = pyet.explain(e)
    # the inner loop called straight where found in the ufunc's table and probed
    assert f"{name}[float32->float32](leaf0{leaves}) (NumPy's loop" + (
        ")\n" if how_called == "C" else ", its ufunc called)\n") in text, text
    assert_same_bits(pyet.evaluate(e), getattr(np, name)(x, *rest) * y + np.float32(1.5))
    inplace = x.copy()
    t = pyet.asarray(inplace)
    t[...] = getattr(pyet, name)(t, *map(pyet.asarray, rest))
    assert_same_bits(inplace, getattr(np, name)(x, *rest))


def test_integer_input_is_cast_and_scalars_take_the_kernel():
    a = np.arange(1, 50, dtype=np.int32)
    assert_same_bits(pyet.evaluate(pyet.log1p(pyet.asarray(a))), np.log1p(a))
    zero_d = np.array(0.25)
    np.testing.assert_allclose(pyet.evaluate(pyet.arcsin(pyet.asarray(zero_d))),
                               np.arcsin(zero_d), rtol=1e-15)


def test_errors_are_reported_once_as_numpys_errstate_says():
    a = np.array([-2.0, 0.5, 2.0])  # log10(-2): invalid; arctanh(2): invalid
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError, match="invalid value"):
            pyet.evaluate(pyet.log10(pyet.asarray(a)))
    out = np.zeros(3)
    with np.errstate(invalid="ignore"):
        pyet.evaluate(pyet.arctanh(pyet.asarray(a)) + 1, out=out)
    with np.errstate(invalid="ignore"):
        assert_same_bits(out, np.arctanh(a) + 1)
    with pytest.warns(RuntimeWarning, match="invalid value") as record:
        pyet.evaluate(pyet.log2(pyet.asarray(a)))
    assert len(record) == 1


def test_two_threads_and_kept_plans_give_the_same_bits():
    rng = np.random.default_rng(2)
    x = rng.uniform(0.1, 0.9, 200_000)
    y = rng.standard_normal(200_000)
    want = np.expm1(x) * y - np.cbrt(y)
    before = pyet.get_num_threads()
    try:
        pyet.set_num_threads(2)
        got = pyet.evaluate(pyet.expm1(pyet.asarray(x)) * pyet.asarray(y)
                            - pyet.cbrt(pyet.asarray(y)))
    finally:
        pyet.set_num_threads(before)
    assert_same_bits(got, want)
    out = np.empty_like(x)
    plan = pyet.EvalPlan()
    plan.assign(out, pyet.sinh(pyet.asarray(x)) + pyet.asarray(y))
    for _ in range(3):
        plan.run(keep=True)
        assert_same_bits(out, np.sinh(x) + y)
        x[:] = rng.uniform(0.1, 0.9, x.size)


@pytest.mark.parametrize("name", ["log10", "arcsin", "cosh", "exp2"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_call_on_contiguous_rows_gives_the_blocks_bits(name, dtype):
    # dst = op(leaf) on contiguous rows runs as one call of NumPy's loop on
    # the whole arrays; every other layout keeps the blocks: the same bits
    rng = np.random.default_rng(3)
    a = values(name, (300, 700), dtype, rng)
    want = getattr(np, name)(a)
    cases = {
        "C": (a, np.empty_like(a), want),
        "F both": (np.asfortranarray(a), np.empty(a.shape, dtype, order="F"), want),
        "rows with gaps": (a[1:, 2:-3], np.empty((299, 695), dtype), want[1:, 2:-3]),
        "dst rows with gaps": (a[:, :600], np.full((300, 650), 7, dtype)[:, :600],
                               want[:, :600]),
        "long thin": (a.reshape(-1, 3), np.empty((70000, 3), dtype), want.reshape(-1, 3)),
        "short wide": (a.reshape(3, -1), np.empty((3, 70000), dtype), want.reshape(3, -1)),
        "broadcast row": (np.broadcast_to(a[0], a.shape), np.empty_like(a),
                          np.broadcast_to(want[0], a.shape)),
        "both reversed": (np.ascontiguousarray(a[::-1])[::-1],
                          np.empty_like(a)[::-1], want),
        "F into C": (np.asfortranarray(a), np.empty_like(a), want),
        "0-d": (a[0, 0].reshape(()), np.empty((), dtype), want[0, 0].reshape(())),
        "empty": (a[:0], np.empty((0, 700), dtype), want[:0]),
    }
    for x, out, expect in cases.values():
        pyet.asarray(out)[...] = getattr(pyet, name)(pyet.asarray(x))
        assert_same_bits(out, expect)
    inplace = a.copy()
    t = pyet.asarray(inplace)
    t[...] = getattr(pyet, name)(t)
    assert_same_bits(inplace, want)
    shifted = a.copy()  # dst overlapping the leaf one row on
    pyet.asarray(shifted)[1:] = getattr(pyet, name)(pyet.asarray(shifted)[:-1])
    assert_same_bits(shifted[1:], want[:-1])
