"""``2*x + 3*y`` over non-contiguous views: every other element, reversed, transposed, and a
strided destination."""

import numpy as np

import pyet

from ._common import DTYPES, agree, rand


class StridedViews:
    params = (["step2", "reversed", "transposed", "strided_out"], [10_000, 1_000_000], DTYPES)
    param_names = ["layout", "n", "dtype"]

    def setup(self, layout, n, dtype):
        if layout == "transposed":
            m = int(round(n**0.5))
            x, y = rand((m, m), dtype, seed=1), rand((m, m), dtype, seed=2)
            self.x, self.y, self.out = x.T, y, np.empty((m, m), dtype)
        elif layout == "step2":
            self.x = rand(2 * n, dtype, seed=1)[::2]
            self.y = rand(2 * n, dtype, seed=2)[::2]
            self.out = np.empty(n, dtype)
        elif layout == "reversed":
            self.x = rand(n, dtype, seed=1)[::-1]
            self.y = rand(n, dtype, seed=2)
            self.out = np.empty(n, dtype)
        else:  # contiguous operands, every other element of the destination
            self.x, self.y = rand(n, dtype, seed=1), rand(n, dtype, seed=2)
            self.out = np.empty(2 * n, dtype)[::2]
        self.X, self.Y, self.Out = map(pyet.asarray, (self.x, self.y, self.out))
        agree(lambda: self.time_pyet_strided(layout, n, dtype),
              lambda: self.time_numpy_strided(layout, n, dtype), self.out)

    def time_pyet_strided(self, layout, n, dtype):
        X, Y, Out = self.X, self.Y, self.Out
        Out[...] = 2 * X + 3 * Y

    def time_numpy_strided(self, layout, n, dtype):
        x, y, out = self.x, self.y, self.out
        out[...] = 2 * x + 3 * y
