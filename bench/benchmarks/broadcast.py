"""Broadcasting: (n, 1) and (1, n) operands evaluated into an (n, n) destination."""

import numpy as np

import pyet

from ._common import DTYPES, agree, rand


class Broadcast:
    params = (["col + row", "X*col + row"], [100, 1_000, 3_000], DTYPES)
    param_names = ["expr", "n", "dtype"]

    def setup(self, expr, n, dtype):
        self.col = rand((n, 1), dtype, seed=1)
        self.row = rand((1, n), dtype, seed=2)
        self.x = rand((n, n), dtype, seed=3)
        self.out = np.empty((n, n), dtype)
        self.C, self.R, self.X, self.Out = map(pyet.asarray, (self.col, self.row, self.x, self.out))
        agree(lambda: self.time_pyet_broadcast(expr, n, dtype),
              lambda: self.time_numpy_broadcast(expr, n, dtype), self.out)

    def time_pyet_broadcast(self, expr, n, dtype):
        C, R, X, Out = self.C, self.R, self.X, self.Out
        if expr == "col + row":
            Out[...] = C + R
        else:
            Out[...] = X * C + R

    def time_numpy_broadcast(self, expr, n, dtype):
        col, row, x, out = self.col, self.row, self.x, self.out
        if expr == "col + row":
            out[...] = col + row
        else:
            out[...] = x * col + row
