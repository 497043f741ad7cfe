"""Reductions and softmax (issue 4); skipped where pyet has no ``sum`` / ``softmax``."""

import numpy as np

import pyet

from ._common import DTYPES, agree, rand, require


class Sum:
    """``out[...] = pyet.sum(X, axis=axis)`` over an (n, n) matrix."""

    params = ([0, 1, None], [300, 2_000], DTYPES)
    param_names = ["axis", "n", "dtype"]

    def setup(self, axis, n, dtype):
        require("sum")
        self.x = rand((n, n), dtype, seed=1)
        self.out = np.empty(np.sum(self.x, axis=axis).shape, dtype)
        self.X, self.Out = pyet.asarray(self.x), pyet.asarray(self.out)
        agree(lambda: self.time_pyet_sum(axis, n, dtype),
              lambda: self.time_numpy_sum(axis, n, dtype), self.out)

    def time_pyet_sum(self, axis, n, dtype):
        self.Out[...] = pyet.sum(self.X, axis=axis)

    def time_numpy_sum(self, axis, n, dtype):
        np.sum(self.x, axis=axis, out=self.out)


class SumOfTree:
    """``pyet.sum(a*b + c)``: one pass, no full-size temporary."""

    params = ([100_000, 4_000_000], DTYPES)
    param_names = ["n", "dtype"]

    def setup(self, n, dtype):
        require("sum")
        self.a, self.b, self.c = (rand(n, dtype, seed=s) for s in (1, 2, 3))
        self.out = np.empty((), dtype)
        self.A, self.B, self.C = map(pyet.asarray, (self.a, self.b, self.c))
        self.Out = pyet.asarray(self.out)
        agree(lambda: self.time_pyet_sum_tree(n, dtype),
              lambda: self.time_numpy_sum_tree(n, dtype), self.out)

    def time_pyet_sum_tree(self, n, dtype):
        self.Out[...] = pyet.sum(self.A * self.B + self.C)

    def time_numpy_sum_tree(self, n, dtype):
        self.out[...] = np.sum(self.a * self.b + self.c)


class Softmax:
    """Row softmax ``out[...] = pyet.softmax(X, axis=-1)``."""

    params = ([100, 1_000], DTYPES)
    param_names = ["n", "dtype"]

    def setup(self, n, dtype):
        require("softmax")
        self.x = rand((n, n), dtype, seed=1, low=-5.0, high=5.0)
        self.out = np.empty((n, n), dtype)
        self.X, self.Out = pyet.asarray(self.x), pyet.asarray(self.out)
        agree(lambda: self.time_pyet_softmax(n, dtype),
              lambda: self.time_numpy_softmax(n, dtype), self.out)

    def time_pyet_softmax(self, n, dtype):
        self.Out[...] = pyet.softmax(self.X, axis=-1)

    def time_numpy_softmax(self, n, dtype):
        x = self.x
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        self.out[...] = e / e.sum(axis=-1, keepdims=True)
