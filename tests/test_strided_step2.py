"""Rows read or written every other element (a[::2], dst[::2]) go through a
constant-step copy the compiler vectorizes: every item size, odd lengths,
several blocks, destinations inside sentinels, against NumPy."""

import numpy as np
import pytest

import pyet


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float32, np.int64, np.float64])
@pytest.mark.parametrize("n", [1, 7, 16, 33, 4097, 20001])
def test_step2_gather_and_scatter(dtype, n):
    rng = np.random.default_rng(n)
    src = (rng.standard_normal(2 * n + 3) * 100).astype(dtype)
    other = (rng.standard_normal(n) * 100).astype(dtype)
    a = src[1:2 * n + 1:2]  # read every other element
    want = a ^ other if dtype == np.bool_ else a + other
    got = np.asarray(pyet.asarray(a) ^ pyet.asarray(other) if dtype == np.bool_
                     else pyet.asarray(a) + pyet.asarray(other))
    np.testing.assert_array_equal(got, want)
    sentinel = np.array(1 if dtype == np.bool_ else -7).astype(dtype)
    buf = np.full(2 * n + 3, sentinel, dtype)
    dst = buf[1:2 * n + 1:2]  # written every other element
    pyet.asarray(dst)[...] = pyet.asarray(a) ^ pyet.asarray(other) if dtype == np.bool_ \
        else pyet.asarray(a) + pyet.asarray(other)
    np.testing.assert_array_equal(dst, want)
    assert (buf[0] == sentinel) and (buf[2:2 * n + 1:2] == sentinel).all() \
        and (buf[2 * n + 1:] == sentinel).all()
    # 2-D: every other column of each row, rows of odd length
    rows = (rng.standard_normal((5, 2 * n + 1)) * 100).astype(dtype)
    m = rows[:, ::2]
    want = ~m if dtype == np.bool_ else m * 2
    got = np.asarray(~pyet.asarray(m) if dtype == np.bool_ else pyet.asarray(m) * 2)
    np.testing.assert_array_equal(got, want)
