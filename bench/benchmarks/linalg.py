"""Matrix products (``pyet.dot``, issue 3); skipped where pyet has no ``dot``."""

import numpy as np

import pyet

from ._common import DTYPES, agree, rand, require, transposed


class Dot:
    """``C[...] = pyet.dot(A, B)`` against ``np.matmul(A, B, out=C)``."""

    params = ([64, 256, 1024], DTYPES)
    param_names = ["n", "dtype"]

    def setup(self, n, dtype):
        require("dot")
        self.a, self.b = rand((n, n), dtype, seed=1), rand((n, n), dtype, seed=2)
        self.c = np.zeros((n, n), dtype)
        self.A, self.B, self.C = map(pyet.asarray, (self.a, self.b, self.c))
        agree(lambda: self.time_pyet_dot(n, dtype), lambda: self.time_numpy_dot(n, dtype), self.c)

    def time_pyet_dot(self, n, dtype):
        self.C[...] = pyet.dot(self.A, self.B)

    def time_numpy_dot(self, n, dtype):
        np.matmul(self.a, self.b, out=self.c)


class DotTransposedFused:
    """``C[...] = 0.5 * pyet.dot(A.T, B) + C`` (one gemm, alpha 0.5, beta 1)."""

    params = ([64, 256, 1024], DTYPES)
    param_names = ["n", "dtype"]

    def setup(self, n, dtype):
        require("dot")
        self.a, self.b = rand((n, n), dtype, seed=1), rand((n, n), dtype, seed=2)
        self.c = np.zeros((n, n), dtype)
        self.A, self.B, self.C = map(pyet.asarray, (self.a, self.b, self.c))
        self.At = transposed(self.A, self.a)
        agree(lambda: self.time_pyet_dot_t_fused(n, dtype),
              lambda: self.time_numpy_dot_t_fused(n, dtype), self.c, self.c)

    def time_pyet_dot_t_fused(self, n, dtype):
        C = self.C
        C[...] = 0.5 * pyet.dot(self.At, self.B) + C

    def time_numpy_dot_t_fused(self, n, dtype):
        c = self.c
        c[...] = 0.5 * (self.a.T @ self.b) + c
