"""The op table: one row per elementwise op, in the style of tinygrad.

Each row names the op (the same name as its C kernel in ``_kernels/kernels.h``),
its arity, the NumPy ufunc that is the source of its dtype rules (and, unless
the row gives another, its reference implementation), the Python operator
family it belongs to, the input range its tests draw values from, and the
dtypes its compiled kernel computes in.  Public functions, ``__array_ufunc__``
dispatch and the tests are all driven from this table: adding a row (and its
kernel line) adds the function and its tests.
"""

from typing import NamedTuple

import numpy as np


class Domain(NamedTuple):
    """The values one operand's tests draw: ``[lo, hi]`` (integers: the whole
    numbers in it), with zeros replaced by ``hi`` when ``nonzero`` (divisors)."""

    lo: float
    hi: float
    nonzero: bool = False


class Op(NamedTuple):
    name: str
    arity: int
    ufunc: object  # NumPy ufunc: dtype resolution (and reference values by default)
    reference: object  # callable computing the op with NumPy (or SciPy)
    kind: str  # float | number | predicate | bitwise | compare
    domain: tuple  # one Domain per operand
    dtypes: tuple  # NumPy dtype names the compiled kernel computes in


_FLOATS = ("float32", "float64")
_NUMBERS = ("int32", "int64", *_FLOATS)
_ALL = ("bool", *_NUMBERS)
_INTS = ("bool", "int32", "int64")

_ANY = Domain(-10, 10)
_POS = Domain(0.01, 100)
_DIVISOR = Domain(-10, 10, nonzero=True)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _relu(x):
    return np.maximum(x, 0)


def _erf(x):
    """SciPy's erf in the dtype np.exp gives (erf's dtype rules are exp's: bool gives
    float16, which pyet refuses; SciPy alone would give float32)."""
    from scipy.special import erf  # imported on first use: SciPy's import is slow

    x = np.asarray(x)
    return erf(x).astype(np.exp.resolve_dtypes((x.dtype, None))[-1])


def _row(name, arity, kind, dtypes, domain=_ANY, ufunc=None, reference=None):
    ufunc = ufunc or getattr(np, name)
    domain = domain if isinstance(domain, tuple) and isinstance(domain[0], Domain) else \
        (domain,) * arity
    return Op(name, arity, ufunc, reference or ufunc, kind, domain, dtypes)


# unary, floating point (integers are computed in float64, as NumPy does)
_UNARY_FLOAT_DOMAINS = {
    "exp": Domain(-20, 20), "log": _POS, "log1p": Domain(-0.9, 100),
    "expm1": Domain(-20, 20), "log2": _POS, "log10": _POS, "sqrt": Domain(0, 100),
    "sin": _ANY, "cos": _ANY, "tan": Domain(-1.5, 1.5), "arcsin": Domain(-1, 1),
    "arccos": Domain(-1, 1), "arctan": _ANY, "sinh": Domain(-20, 20),
    "cosh": Domain(-20, 20), "tanh": _ANY, "arcsinh": _ANY, "arccosh": Domain(1, 100),
    "arctanh": Domain(-0.99, 0.99), "rint": _ANY,
}

OPS = (
    *(_row(n, 1, "float", _FLOATS, d) for n, d in _UNARY_FLOAT_DOMAINS.items()),
    # floor, ceil and trunc keep integer and bool dtypes (NumPy 2)
    *(_row(n, 1, "float", _ALL) for n in ("floor", "ceil", "trunc")),
    _row("sigmoid", 1, "float", _FLOATS, ufunc=np.exp, reference=_sigmoid),  # exp's dtypes
    # unary, any number
    *(_row(n, 1, "number", _NUMBERS) for n in ("negative", "positive", "square", "sign")),
    _row("absolute", 1, "number", _ALL),
    # dtype rules of maximum(x, 0): bool becomes int64
    _row("relu", 1, "number", _NUMBERS, ufunc=np.maximum, reference=_relu),
    *(_row(n, 1, "predicate", _ALL) for n in ("isnan", "isinf", "isfinite")),
    _row("invert", 1, "bitwise", _INTS),
    # binary
    *(_row(n, 2, "number", _ALL) for n in ("add", "multiply", "maximum", "minimum")),
    _row("subtract", 2, "number", _NUMBERS),
    *(_row(n, 2, "number", _NUMBERS, (_ANY, _DIVISOR))
      for n in ("floor_divide", "remainder", "fmod")),
    # integer powers take small non-negative exponents (negative ones raise)
    _row("power", 2, "number", _NUMBERS, (Domain(0.1, 4), Domain(0, 4))),
    _row("divide", 2, "number", _FLOATS, (_ANY, _DIVISOR)),
    *(_row(n, 2, "number", _FLOATS) for n in ("arctan2", "hypot", "copysign")),
    # small values, so equal pairs are common
    *(_row(n, 2, "compare", _ALL, Domain(-2, 2)) for n in (
        "less", "less_equal", "greater", "greater_equal", "equal", "not_equal")),
    *(_row(n, 2, "bitwise", _INTS) for n in ("bitwise_and", "bitwise_or", "bitwise_xor")),
    # later additions
    _row("cbrt", 1, "float", _FLOATS, Domain(-1000, 1000)),
    _row("exp2", 1, "float", _FLOATS, Domain(-30, 30)),
    _row("erf", 1, "float", _FLOATS, Domain(-4, 4), ufunc=np.exp, reference=_erf),
    _row("deg2rad", 1, "float", _FLOATS, Domain(-720, 720)),
    _row("rad2deg", 1, "float", _FLOATS),
    # NumPy's integer reciprocal is the C cast of 1.0/x: 0 for |x| > 1
    _row("reciprocal", 1, "number", _NUMBERS),
    *(_row(n, 2, "float", _FLOATS, Domain(-50, 50)) for n in ("logaddexp", "logaddexp2")),
)

OPS_BY_NAME = {op.name: op for op in OPS}

# NumPy ufuncs that build a pyet node when applied to a pyet operand: the rows
# whose ufunc is their own reference (not sigmoid, relu or erf, which only
# borrow a ufunc's dtype rules).
UFUNC_TO_OP = {op.ufunc: op.name for op in OPS if op.reference is op.ufunc}
