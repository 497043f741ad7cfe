"""Fixed per-call cost at small sizes: building the tree, the plan-cache lookup, binding."""

import numpy as np

import pyet

from ._common import DTYPES, ETA, LAM, agree, rand


class SmallOverhead:
    params = (["update", "2*x + 3*y", "tanh(x)*y + sqrt(z)"], [10, 100], DTYPES)
    param_names = ["expr", "n", "dtype"]

    def setup(self, expr, n, dtype):
        self.x, self.y, self.z = (rand(n, dtype, seed=s) for s in (1, 2, 3))
        self.out = np.empty(n, dtype)
        self.X, self.Y, self.Z, self.Out = map(pyet.asarray, (self.x, self.y, self.z, self.out))
        agree(lambda: self.time_pyet_small(expr, n, dtype),
              lambda: self.time_numpy_small(expr, n, dtype),
              self.x if expr == "update" else self.out, self.x)

    def time_pyet_small(self, expr, n, dtype):
        X, Y, Z, Out = self.X, self.Y, self.Z, self.Out
        if expr == "update":
            X[...] = -ETA * (Y + LAM * X)
        elif expr == "2*x + 3*y":
            Out[...] = 2 * X + 3 * Y
        else:
            Out[...] = pyet.tanh(X) * Y + pyet.sqrt(Z)

    def time_numpy_small(self, expr, n, dtype):
        x, y, z, out = self.x, self.y, self.z, self.out
        if expr == "update":
            x[...] = -ETA * (y + LAM * x)
        elif expr == "2*x + 3*y":
            out[...] = 2 * x + 3 * y
        else:
            out[...] = np.tanh(x) * y + np.sqrt(z)

    def time_pyet_build_only(self, expr, n, dtype):
        """Building the tree alone (no evaluation): the Python-side part of the cost."""
        X, Y, Z = self.X, self.Y, self.Z
        if expr == "update":
            -ETA * (Y + LAM * X)
        elif expr == "2*x + 3*y":
            2 * X + 3 * Y
        else:
            pyet.tanh(X) * Y + pyet.sqrt(Z)
