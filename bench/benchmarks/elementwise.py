"""Elementwise trees on contiguous 1-D operands, evaluated into a preallocated destination."""

import numpy as np

import pyet

from ._common import DTYPES, ETA, LAM, agree, rand


class UpdateWeight:
    """The seed's update ``W[...] = -eta * (G + lam * W)``, in place."""

    params = ([1_000, 100_000, 10_000_000], DTYPES)
    param_names = ["n", "dtype"]

    def setup(self, n, dtype):
        self.w = rand(n, dtype, seed=1)
        self.g = rand(n, dtype, seed=2)
        self.W, self.G = pyet.asarray(self.w), pyet.asarray(self.g)
        agree(lambda: self.time_pyet_update(n, dtype), lambda: self.time_numpy_update(n, dtype),
              self.w, self.w)

    def time_pyet_update(self, n, dtype):
        W, G = self.W, self.G
        W[...] = -ETA * (G + LAM * W)

    def time_numpy_update(self, n, dtype):
        w, g = self.w, self.g
        w[...] = -ETA * (g + LAM * w)


class Trees:
    """``out[...] = expr`` for a cheap and a transcendental tree."""

    params = (["2*x + 3*y", "tanh(x)*y + sqrt(z)"], [1_000, 100_000, 1_000_000], DTYPES)
    param_names = ["expr", "n", "dtype"]

    def setup(self, expr, n, dtype):
        self.x, self.y, self.z = (rand(n, dtype, seed=s) for s in (1, 2, 3))
        self.out = np.empty(n, dtype)
        self.X, self.Y, self.Z, self.Out = map(pyet.asarray, (self.x, self.y, self.z, self.out))
        agree(lambda: self.time_pyet_tree(expr, n, dtype),
              lambda: self.time_numpy_tree(expr, n, dtype), self.out)

    def time_pyet_tree(self, expr, n, dtype):
        X, Y, Z, Out = self.X, self.Y, self.Z, self.Out
        if expr == "2*x + 3*y":
            Out[...] = 2 * X + 3 * Y
        else:
            Out[...] = pyet.tanh(X) * Y + pyet.sqrt(Z)

    def time_numpy_tree(self, expr, n, dtype):
        x, y, z, out = self.x, self.y, self.z, self.out
        if expr == "2*x + 3*y":
            out[...] = 2 * x + 3 * y
        else:
            out[...] = np.tanh(x) * y + np.sqrt(z)
