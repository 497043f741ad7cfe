"""Packed blocks of short rows gather an operand's whole rows in one call
(pyet_copy_rows, packed_copy): column broadcasts (one value a row), strided
rows, rows of a wider array, reversed rows; across block edges, partial rows
at a block's start and end, and the carry into outer dimensions.  NumPy is
the oracle; destinations between sentinels."""

import numpy as np
import pytest

import pyet

DTYPES = [np.bool_, np.int32, np.float32, np.int64, np.float64]


def values(rng, shape, dtype):
    if dtype is np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-50, 50, shape).astype(dtype)


def operand_layouts(rng, shape, dtype):
    """Operands of ``shape`` that packed blocks gather (not flat in C order)."""
    inner = shape[-1]
    col = values(rng, shape[:-1] + (1,), dtype)
    wide = values(rng, shape[:-1] + (inner + 3,), dtype)
    every_other = values(rng, shape[:-1] + (2 * inner,), dtype)
    rev = values(rng, shape, dtype)
    return {
        "column broadcast": np.broadcast_to(col, shape),
        "rows of a wider array": wide[..., 1:inner + 1],
        "every other item": every_other[..., ::2],
        "reversed rows": rev[..., ::-1],
        "flat": values(rng, shape, dtype),
    }


def between_sentinels(shape, dtype):
    buf = np.zeros(int(np.prod(shape)) + 2, dtype)
    buf[0] = buf[-1] = 1
    return buf, buf[1:-1].reshape(shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(700, 1), (700, 2), (3, 700, 3), (700, 4), (5, 90, 5),
                                   (700, 7), (700, 8), (2, 3, 150, 9), (300, 16), (1, 4),
                                   (2, 2), (1031, 2)])
def test_each_layout_against_numpy(dtype, shape):
    rng = np.random.default_rng(hash(shape) % 2**32)
    ops = operand_layouts(rng, shape, dtype)
    flat = pyet.asarray(ops["flat"])
    for name, x in ops.items():
        X = pyet.asarray(x)
        if dtype is np.bool_:
            e, want = (X ^ flat) | X, (x ^ ops["flat"]) | x
        else:
            e, want = X * 3 - flat, x * dtype(3) - ops["flat"]
        buf, dst = between_sentinels(shape, dtype)
        pyet.asarray(dst)[...] = e
        np.testing.assert_array_equal(dst, want, err_msg=name)
        assert buf[0] == 1 and buf[-1] == 1, name


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_several_gathered_operands_and_threads(dtype, threads):
    rng = np.random.default_rng(7)
    shape = (4, 2501, 3)  # rows of 3 cut by every block edge; carries into axis 0
    ops = operand_layouts(rng, shape, dtype)
    X = {k: pyet.asarray(v) for k, v in ops.items()}
    e = (X["column broadcast"] + X["every other item"]) * X["reversed rows"] \
        - X["rows of a wider array"] / (X["flat"] ** 2 + 1)
    with np.errstate(all="ignore"):
        want = (ops["column broadcast"] + ops["every other item"]) * ops["reversed rows"] \
            - ops["rows of a wider array"] / (ops["flat"] ** 2 + 1)
    pyet.set_num_threads(threads)
    try:
        buf, dst = between_sentinels(shape, dtype)
        pyet.asarray(dst)[...] = e
    finally:
        pyet.set_num_threads(1)
    np.testing.assert_array_equal(dst, want)
    assert buf[0] == 1 and buf[-1] == 1


def test_a_column_broadcast_into_a_strided_destination():
    # the destination's rows scattered back piece by piece (not batched)
    rng = np.random.default_rng(8)
    m, col = rng.random((999, 4)), rng.random((999, 1))
    big = np.full((999, 9), -1.0)
    dst = big[:, 1::2]
    pyet.asarray(dst)[...] = pyet.asarray(m) + pyet.asarray(col)
    np.testing.assert_array_equal(dst, m + col)
    assert (big[:, ::2] == -1).all()


def test_a_ufunc_plus_a_column():
    # the pyet.F(np.sin, A) + col on rows of 4, smaller
    rng = np.random.default_rng(9)
    m, col = rng.random((5000, 4)), rng.random((5000, 1))
    out = np.empty_like(m)
    pyet.asarray(out)[...] = pyet.F(np.sin, pyet.asarray(m)) + pyet.asarray(col)
    np.testing.assert_array_equal(out, np.sin(m) + col)
