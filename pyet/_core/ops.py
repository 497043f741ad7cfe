"""The op table: one row per elementwise op, in the style of tinygrad.

Each row names the op (the same name as its C kernel in ``src/kernels.h``),
its arity, the NumPy ufunc that is both its reference implementation and the
source of its dtype rules, and the Python operator that builds it, if any.
Public functions, ``__array_ufunc__`` dispatch and the tests are all driven
from this table.
"""

from typing import NamedTuple

import numpy as np


class Op(NamedTuple):
    name: str
    arity: int
    ufunc: object  # NumPy ufunc: reference values and dtype resolution
    reference: object  # callable computing the op with NumPy
    kind: str  # float | number | predicate | bitwise | compare


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _relu(x):
    return np.maximum(x, 0)


def _row(name, arity, ufunc, kind, reference=None):
    return Op(name, arity, ufunc, reference or ufunc, kind)


OPS = (
    # unary, floating point (integers are computed in float64, as NumPy does)
    *(_row(n, 1, getattr(np, n), "float") for n in (
        "exp", "log", "log1p", "expm1", "log2", "log10", "sqrt", "sin", "cos", "tan",
        "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
        "arctanh", "rint", "floor", "ceil", "trunc")),
    _row("sigmoid", 1, np.exp, "float", _sigmoid),  # dtype rules of exp
    # unary, any number
    *(_row(n, 1, getattr(np, n), "number") for n in (
        "negative", "positive", "absolute", "square", "sign")),
    _row("relu", 1, np.maximum, "number", _relu),  # dtype rules of maximum(x, 0)
    *(_row(n, 1, getattr(np, n), "predicate") for n in ("isnan", "isinf", "isfinite")),
    _row("invert", 1, np.invert, "bitwise"),
    # binary
    *(_row(n, 2, getattr(np, n), "number") for n in (
        "add", "subtract", "multiply", "floor_divide", "remainder", "power", "maximum",
        "minimum", "fmod", "divide", "arctan2", "hypot", "copysign")),
    *(_row(n, 2, getattr(np, n), "compare") for n in (
        "less", "less_equal", "greater", "greater_equal", "equal", "not_equal")),
    *(_row(n, 2, getattr(np, n), "bitwise") for n in (
        "bitwise_and", "bitwise_or", "bitwise_xor")),
)

OPS_BY_NAME = {op.name: op for op in OPS}

# NumPy ufuncs that build a pyet node when applied to a pyet operand.
UFUNC_TO_OP = {op.ufunc: op.name for op in OPS if op.name not in ("sigmoid", "relu")}
