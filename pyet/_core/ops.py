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
    # reverse-mode rule (args, out, g) -> one gradient tree per argument (None:
    # no gradient), built with pyet's lazy ops; None for a non-differentiable
    # op, whose arguments get zero gradients.  Scalar arguments come as their
    # Python/NumPy values; ``out`` is the node itself, so gradients share it.
    grad: object = None


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
    return Op(name, arity, ufunc, reference or ufunc, kind, domain, dtypes, GRADS.get(name))


# ------------------------------------------------------------ gradient rules

def _f(name, *operands):
    """The lazy op ``name`` on operands (core is imported at call time: it
    imports this module when it loads)."""
    from pyet._core import core
    return core.apply(name, operands)


def _is_expr(v):
    from pyet._core import core
    return isinstance(v, core.Expr)


def _where(c, x, y):
    from pyet._core import core
    return core.where(c, x, y)


_LN2, _LN10 = float(np.log(2)), float(np.log(10))
_TWO_OVER_SQRT_PI = float(2 / np.sqrt(np.pi))


def _extremum_grad(x, y, wins, g):
    # PyTorch's tie rules: two arrays share the gradient of a tie equally
    # (torch.maximum); against a constant bound the array keeps all of it
    # (torch.clamp, so clip(x, lo, hi) passes the gradient at lo and hi)
    if not _is_expr(y):
        return _where(wins(y, x), 0, g), None
    if not _is_expr(x):
        return None, _where(wins(x, y), 0, g)
    half = g * 0.5
    return (_where(wins(x, y), g, _where(x == y, half, 0)),
            _where(wins(y, x), g, _where(x == y, half, 0)))


def _max_grad(args, out, g):
    return _extremum_grad(*args, lambda a, b: a > b, g)


def _min_grad(args, out, g):
    return _extremum_grad(*args, lambda a, b: a < b, g)


def _power_grad(args, out, g):
    x, y = args
    # d/dy: out*log(x), and 0 where x == 0 and y >= 0 (PyTorch's convention)
    dy = g * _where((x == 0) & (y >= 0), 0, out * _f("log", x))
    return g * y * x ** (y - 1), dy


def _atan2_grad(args, out, g):
    y, x = args
    r = g / (x * x + y * y)
    return r * x, -r * y


# one rule per differentiable op; the rows above pick theirs up by name
GRADS = {
    "exp": lambda a, o, g: (g * o,),
    "log": lambda a, o, g: (g / a[0],),
    "log1p": lambda a, o, g: (g / (a[0] + 1),),
    "expm1": lambda a, o, g: (g * (o + 1),),
    "log2": lambda a, o, g: (g / (a[0] * _LN2),),
    "log10": lambda a, o, g: (g / (a[0] * _LN10),),
    "sqrt": lambda a, o, g: (g * 0.5 / o,),
    "sin": lambda a, o, g: (g * _f("cos", a[0]),),
    "cos": lambda a, o, g: (-g * _f("sin", a[0]),),
    "tan": lambda a, o, g: (g * (o * o + 1),),
    "arcsin": lambda a, o, g: (g / _f("sqrt", 1 - a[0] * a[0]),),
    "arccos": lambda a, o, g: (-g / _f("sqrt", 1 - a[0] * a[0]),),
    "arctan": lambda a, o, g: (g / (a[0] * a[0] + 1),),
    "sinh": lambda a, o, g: (g * _f("cosh", a[0]),),
    "cosh": lambda a, o, g: (g * _f("sinh", a[0]),),
    "tanh": lambda a, o, g: (g * (1 - o * o),),
    "arcsinh": lambda a, o, g: (g / _f("sqrt", a[0] * a[0] + 1),),
    "arccosh": lambda a, o, g: (g / _f("sqrt", a[0] * a[0] - 1),),
    "arctanh": lambda a, o, g: (g / (1 - a[0] * a[0]),),
    "sigmoid": lambda a, o, g: (g * o * (1 - o),),
    "negative": lambda a, o, g: (-g,),
    "positive": lambda a, o, g: (g,),
    "square": lambda a, o, g: (g * 2 * a[0],),
    "absolute": lambda a, o, g: (g * _f("sign", a[0]),),  # sign(0) = 0: 0 at 0
    "relu": lambda a, o, g: (_where(a[0] > 0, g, 0),),    # 0 at 0
    "add": lambda a, o, g: (g, g),
    "subtract": lambda a, o, g: (g, -g),
    "multiply": lambda a, o, g: (g * a[1], g * a[0]),
    "divide": lambda a, o, g: (g / a[1], -g * o / a[1]),
    "maximum": _max_grad,
    "minimum": _min_grad,
    "power": _power_grad,
    # x - floor(x/y)*y and x - trunc(x/y)*y: the quotient is piecewise constant
    "remainder": lambda a, o, g: (g, -g * _f("floor_divide", a[0], a[1])),
    "fmod": lambda a, o, g: (g, -g * _f("trunc", a[0] / a[1])),
    "arctan2": _atan2_grad,
    "hypot": lambda a, o, g: (g * a[0] / o, g * a[1] / o),
    "copysign": lambda a, o, g: (g * _f("sign", a[0]) * _f("sign", o), None),
    "cbrt": lambda a, o, g: (g / (3 * o * o),),
    "exp2": lambda a, o, g: (g * o * _LN2,),
    "erf": lambda a, o, g: (g * _TWO_OVER_SQRT_PI * _f("exp", -(a[0] * a[0])),),
    "deg2rad": lambda a, o, g: (g * float(np.pi / 180),),
    "rad2deg": lambda a, o, g: (g * float(180 / np.pi),),
    "reciprocal": lambda a, o, g: (-g * o * o,),
    "logaddexp": lambda a, o, g: (g * _f("exp", a[0] - o), g * _f("exp", a[1] - o)),
    "logaddexp2": lambda a, o, g: (g * _f("exp2", a[0] - o), g * _f("exp2", a[1] - o)),
}


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

# Float functions whose kernel would be libm per element where NumPy's own loop
# is SIMD (SVML on AVX-512 hosts: 4.7-37x faster at 2^18): a pass calls the
# NumPy ufunc on each block instead (in place, its bits; elsewhere NumPy's loop
# is libm too, and a call per block costs ~0.1 ns an element).
NUMPY_LOOPS = frozenset({
    "exp2", "log2", "log10", "expm1", "log1p", "cbrt", "tan", "arcsin", "arccos", "arctan",
    "sinh", "cosh", "arcsinh", "arccosh", "arctanh",
    # (libm's atan2 per element took 9-38x NumPy's SIMD loop at 2^18; logaddexp
    # and logaddexp2 are libm in both, pyet's 1.2x NumPy's, but on AVX-512 CPUs,
    # where pyet's lanes take 0.22-0.33x: core.NUMPY_LOOP_NAMES leaves them out)
    "arctan2", "logaddexp", "logaddexp2"})


def _numpy_simd_powf():
    """Whether NumPy's float32 power loop is SIMD: SVML's powf16, in a NumPy
    built with SVML (Linux x86-64) on a CPU with AVX-512 (SKX)."""
    try:
        import ctypes

        from numpy._core import _multiarray_umath as umath
        if not umath.__cpu_features__.get("AVX512_SKX"):
            return False
        return hasattr(ctypes.CDLL(umath.__file__), "__svml_powf16")
    except Exception:  # another NumPy layout or platform: pyet's kernel
        return False


# float32 x ** y, both arrays: NumPy's loop where it is SVML's (pyet's AVX-512
# kernel, in double, ran at 1.2-1.47x its time at 2^18; values within 1 ulp of
# the correctly rounded ones either way, and NumPy's own bits this way).
NUMPY_POWER_F32 = _numpy_simd_powf()


def _numpy_avx512_loop(name, dtype):
    """Whether NumPy's ``name`` loop for ``dtype`` runs its AVX-512 code here
    (NumPy's own report of the loop it dispatched to, numpy.lib.introspect)."""
    try:
        from numpy.lib.introspect import opt_func_info
        sig = np.dtype(dtype).char * 2
        info = opt_func_info(func_name=f"^{name}$", signature=dtype)
        return info[name][sig]["current"].startswith(("X86_V4", "AVX512"))
    except Exception:  # NumPy 1, another platform: pyet's kernel
        return False


# Functions pyet has its own SIMD kernels for that NumPy's AVX-512 loops beat
# (AMD Zen 4, 2^18): a pass runs NumPy's loop on each block there (its bits,
# values within 0.61 ulp (log) and 1.5 ulp (sin, cos) of the exact ones), also
# on pyet's gathered blocks of strided rows.  float64 log: pyet's kernel 1.12-1.16x
# the loop's time on contiguous rows, its strided kernel 0.77-0.90x NumPy's strided
# loop where the loop on gathered blocks takes 0.62-0.69x; float32 sin, cos:
# 1.09-1.11x contiguous, strided 0.95-1.0 where the loop on blocks takes 0.63-0.73.
NUMPY_SIMD_LOOPS = frozenset(
    (name, dt) for name, dt in (("log", "float64"), ("sin", "float32"), ("cos", "float32"))
    if _numpy_avx512_loop(name, dt))

# NumPy ufuncs that build a pyet node when applied to a pyet operand: the rows
# whose ufunc is their own reference (not sigmoid, relu or erf, which only
# borrow a ufunc's dtype rules).
UFUNC_TO_OP = {op.ufunc: op.name for op in OPS if op.reference is op.ufunc}
