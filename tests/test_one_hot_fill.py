"""train_step's per-call fill of class-index targets: one compiled pass
(pyet._kernels.nn.one_hot_rows) where it can, NumPy otherwise; the same
one-hot rows, the same errors, nothing written on a bad index."""

import numpy as np
import pytest
from pyet._kernels.nn import one_hot_rows

import pyet.nn as nn


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_one_hot_rows_values_negatives_and_sentinels(dt):
    idx = np.array([0, 3, -1, -4, 2, 1, 3], np.int64)
    buf = np.full((9, 4), 7, dt)
    assert one_hot_rows(idx, buf[1:8]) is True
    want = np.eye(4, dtype=dt)[idx]
    np.testing.assert_array_equal(buf[1:8], want)
    assert (buf[0] == 7).all() and (buf[8] == 7).all()


@pytest.mark.parametrize("bad", [4, -5, 2**62, -2**63])
def test_one_hot_rows_out_of_range_writes_nothing(bad):
    idx = np.array([0, 1, bad, 2], np.int64)
    out = np.full((4, 4), 7, np.float32)
    with pytest.raises(IndexError, match=f"index {bad} is out of range for 4 classes"):
        one_hot_rows(idx, out)
    assert (out == 7).all()


def test_one_hot_rows_declines_other_layouts_without_writing():
    out = np.full((4, 3), 7, np.float32)
    idx = np.array([0, 1, 2, 1])
    for i, o in [(idx.astype(np.int32), out), (idx.astype(">i8"), out),
                 (np.repeat(idx, 2)[::2], out), (idx, np.full((3, 4), 7, np.float32).T),
                 (idx, out.astype(np.int64)), (idx[:3], out), (idx[:, None], out)]:
        assert one_hot_rows(i, o) is False
    assert (out == 7).all()
    ro = np.zeros((4, 3), np.float32)
    ro.flags.writeable = False
    assert one_hot_rows(idx, ro) is False


def data(n=32, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    x = (np.eye(4)[y] @ rng.normal(0, 1, (4, 8)) + 0.3 * rng.normal(0, 1, (n, 8)))
    return x.astype(np.float32), y


def train(targets, x, steps=3):
    model = nn.MLP([8, 16, 4], activation="relu", policy=nn.Policy(update=True)).init(seed=0)
    opt = nn.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = [nn.train_step(model, nn.CrossEntropy(), {"input": x, "target": targets}, opt)
              for _ in range(steps)]
    return losses, model.parameters()["fc1.W"].numpy().copy()


@pytest.mark.parametrize("convert", [
    lambda y: y.astype(np.int32),           # the NumPy path
    lambda y: y.astype(np.uint8),
    lambda y: np.where(y == 3, -1, y),       # negatives, compiled
    lambda y: np.where(y == 3, -1, y).astype(np.int16),  # negatives, NumPy
    lambda y: np.repeat(y, 2)[::2],          # strided int64
])
def test_train_step_targets_of_every_kind_agree(convert):
    x, y = data()
    want = train(y, x)
    got = train(convert(y), x)
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("dt", [np.int64, np.int32])
def test_train_step_bad_target_updates_nothing(dt):
    x, y = data(8)
    model = nn.MLP([8, 4], policy=nn.Policy(update=True)).init(seed=0)
    opt = nn.SGD(model.parameters(), lr=0.1)
    nn.train_step(model, nn.CrossEntropy(), {"input": x, "target": y.astype(dt)}, opt)
    before = model.parameters()["fc1.W"].numpy().copy()
    for bad in (4, -5):
        y2 = y.astype(dt)
        y2[5] = bad
        with pytest.raises(IndexError, match="target index out of range for 4 classes"):
            nn.train_step(model, nn.CrossEntropy(), {"input": x, "target": y2}, opt)
        np.testing.assert_array_equal(model.parameters()["fc1.W"].numpy(), before)
