"""Every operator and function of pyet against NumPy, over dtypes and memory layouts.

NumPy is the oracle for values AND result dtypes: wherever NumPy's result dtype falls outside
pyet's set (bool, int32, int64, float32, float64) or NumPy has no loop, pyet must raise TypeError
when the expression is built.
"""

import operator
import zlib

import numpy as np
import pytest

import pyet
from pyet._core import core as _expr
from pyet._core import core as _plan
from pyet._core.ops import OPS, Domain
from pyet._core.rewrite import INTEGER_CONSTANTS

DTYPES = ["bool", "int32", "int64", "float32", "float64"]
SUPPORTED = {np.dtype(d) for d in DTYPES}


def P(name):
    """A pyet function looked up by name when the test runs (so collection never fails)."""

    def call(*args):
        return getattr(pyet, name)(*args)

    call.__name__ = name
    return call


# The function tests are generated from the op table: a row brings its reference, its
# input domain and the dtypes its kernel computes in.  Results must equal NumPy's exactly,
# except for the transcendental functions (within ULP_TOL ulp).
ROWS = {op.name: op for op in OPS}
TRANSCENDENTAL = {
    op.name for op in OPS if op.kind == "float"
    and op.name not in ("sqrt", "rint", "floor", "ceil", "trunc", "deg2rad", "rad2deg")
} | {"power", "arctan2", "hypot"}
ULP_TOL = 2
# glibc's cbrt (pyet's) is within 4 ulp; NumPy's SVML cbrt on AVX512 CPUs is correctly rounded
ULP_TOL_OF = {"cbrt": 4}

# Python operators: (operator, the row whose reference, domain and exactness they share)
OPERATORS = {
    "op_neg": (operator.neg, "negative"),
    "op_abs": (abs, "absolute"),
    "op_invert": (operator.invert, "invert"),
    "op_add": (operator.add, "add"),
    "op_sub": (operator.sub, "subtract"),
    "op_mul": (operator.mul, "multiply"),
    "op_truediv": (operator.truediv, "divide"),
    "op_floordiv": (operator.floordiv, "floor_divide"),
    "op_mod": (operator.mod, "remainder"),
    "op_pow": (operator.pow, "power"),
    "op_lt": (operator.lt, "less"),
    "op_le": (operator.le, "less_equal"),
    "op_gt": (operator.gt, "greater"),
    "op_ge": (operator.ge, "greater_equal"),
    "op_eq": (operator.eq, "equal"),
    "op_ne": (operator.ne, "not_equal"),
    "op_and": (operator.and_, "bitwise_and"),
    "op_or": (operator.or_, "bitwise_or"),
    "op_xor": (operator.xor, "bitwise_xor"),
}


def entry(name):
    """(pyet callable, reference, exact?, domains, row) of a row or an operator."""
    if name in OPERATORS:
        fn, row_name = OPERATORS[name]
        row = ROWS[row_name]
        return fn, fn, row_name not in TRANSCENDENTAL, row.domain, row
    row = ROWS[name]
    reference = row.reference
    if name in IN_FLOAT64_LANES:
        reference = rounded_from_float64(reference)
    return P(name), reference, name not in TRANSCENDENTAL, row.domain, row


# float32 logaddexp and logaddexp2 computed in float64 lanes (where pyet does not
# run NumPy's loop), rounded once: NumPy's float32 loop rounds x - y and exp first,
# up to 1.9e5 ulp off where the result cancels; compared with NumPy's float64 values
IN_FLOAT64_LANES = {"logaddexp", "logaddexp2"} - _plan.NUMPY_LOOP_NAMES


def rounded_from_float64(fn):
    def reference(*args):
        ref = fn(*args)
        if np.asarray(ref).dtype != np.float32:
            return ref
        return fn(*[np.asarray(a, np.float64) for a in args]).astype(np.float32)
    return reference


UNARY = [op.name for op in OPS if op.arity == 1] + [n for n, (_, r) in OPERATORS.items()
                                                     if ROWS[r].arity == 1]
BINARY = [op.name for op in OPS if op.arity == 2] + [n for n, (_, r) in OPERATORS.items()
                                                      if ROWS[r].arity == 2]
# (name, dtype) for the dtypes each row's kernel computes in, and the others
KERNEL_CASES = [(n, d) for n in UNARY + BINARY for d in entry(n)[4].dtypes]
OTHER_CASES = [(n, d) for n in UNARY + BINARY for d in DTYPES if d not in entry(n)[4].dtypes]


def rng_for(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


# named domains of the tests that are not generated from a row (where, clip, ...)
DOMAINS = {
    "any": Domain(-3, 3),
    "small": Domain(-2, 2),
    "pos": Domain(0.1, 5),
    "nonzero": Domain(-3, 3, nonzero=True),
}


def values(dtype, domain, shape, rng, coarse=False):
    """Random values of ``dtype`` from ``domain`` (a Domain or a name in DOMAINS);
    ``coarse`` rounds floats to halves, so comparisons meet equal pairs."""
    dtype = np.dtype(dtype)
    domain = DOMAINS.get(domain, domain)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        v = rng.integers(int(np.ceil(domain.lo)), int(np.floor(domain.hi)) + 1, size=shape)
    else:
        v = rng.uniform(domain.lo, domain.hi, size=shape)
        if coarse or domain == DOMAINS["small"]:
            v = np.clip(np.round(v * 2) / 2, domain.lo, domain.hi)
    if domain.nonzero:
        v = np.where(v == 0, domain.hi, v)
    return np.asarray(v).astype(dtype)


def with_layout(vals, layout):
    """An array equal to vals (whose shape suits the layout) laid out in memory as asked."""
    if layout in ("contig", "0d", "empty", "bcast"):
        return vals.copy()
    if layout == "fortran":
        return np.asfortranarray(vals)
    if layout in ("strided", "large"):
        base = np.zeros(tuple(2 * s for s in vals.shape), vals.dtype)
        view = base[tuple(slice(None, None, 2) for _ in vals.shape)]
        view[...] = vals
        return view
    if layout == "negstride":
        rev = tuple(slice(None, None, -1) for _ in vals.shape)
        return vals[rev].copy()[rev]
    if layout == "transposed":
        return vals.T.copy().T
    raise AssertionError(layout)


LAYOUTS = [
    "contig",
    "strided",
    "negstride",
    "fortran",
    "transposed",
    "bcast",
    "constant",
    "0d",
    "empty",
    "large",
]
SHAPES = {"0d": (), "empty": (0, 5), "large": (37, 101)}


def make_unary_operand(dtype, domain, layout, rng, coarse=False):
    if layout == "bcast":  # a stride-0 (broadcast) operand
        return np.broadcast_to(values(dtype, domain, (1, 5), rng, coarse), (3, 5))
    if layout == "constant":  # one value everywhere: folded into a constant when built
        return np.broadcast_to(values(dtype, domain, (1, 1), rng, coarse), (3, 5))
    return with_layout(values(dtype, domain, SHAPES.get(layout, (3, 5)), rng, coarse), layout)


def make_binary_operands(dtype_a, dtype_b, dom_a, dom_b, layout, rng, coarse=False):
    if layout == "bcast":
        return (values(dtype_a, dom_a, (3, 1), rng, coarse),
                values(dtype_b, dom_b, (1, 5), rng, coarse))
    if layout == "constant":  # one operand one value everywhere, the other not
        return (np.broadcast_to(values(dtype_a, dom_a, (1, 1), rng, coarse), (3, 5)),
                values(dtype_b, dom_b, (3, 5), rng, coarse))
    shape = SHAPES.get(layout, (3, 5))
    a = with_layout(values(dtype_a, dom_a, shape, rng, coarse), layout)
    b_layout = "negstride" if layout == "transposed" else layout
    b = with_layout(values(dtype_b, dom_b, shape, rng, coarse), b_layout)
    return a, b


def numpy_ref(fn, *args):
    """(result, None) or (None, exception); results with dtypes pyet lacks count as TypeError."""
    try:
        with np.errstate(all="ignore"):
            r = np.asarray(fn(*args))
    except Exception as e:  # noqa: BLE001 - oracle: any NumPy error
        return None, e
    if r.dtype not in SUPPORTED:
        return None, ResultDtypeOutsideSet(r.dtype)
    return r, None


class ResultDtypeOutsideSet(TypeError):
    def __init__(self, dtype):
        super().__init__(f"result dtype {dtype}")
        self.dtype = dtype


def ulps(got, ref):
    """Distance of got from ref in units of ref's last place (0 where both are equal,
    NaN or the same infinity; inf where only one is)."""
    got, ref = np.asarray(got), np.asarray(ref)
    with np.errstate(all="ignore"):
        same = (got == ref) | (np.isnan(got) & np.isnan(ref))
        d = np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(ref)).astype(np.float64)
    d = np.where(np.isfinite(ref) & np.isfinite(got), d, np.inf)
    return np.where(same, 0.0, d)


def assert_within_ulp(got, ref, tol=ULP_TOL):
    d = ulps(got, ref)
    if d.size and d.max() > tol:
        i = np.unravel_index(np.argmax(d), d.shape)
        raise AssertionError(f"{d.max()} ulp (> {tol}) at {i}: got {got[i]!r}, NumPy {ref[i]!r}")


def builtin_class(err):
    for cls in (TypeError, ValueError, OverflowError, ZeroDivisionError):
        if isinstance(err, cls):
            return cls
    return type(err)


def expected_message(err, np_args):
    """The dtype a rejection should name: NumPy's result dtype, else an operand's dtype."""
    if isinstance(err, ResultDtypeOutsideSet):
        return err.dtype.name
    return "|".join(sorted({np.asarray(a).dtype.name for a in np_args}))


def check(pyet_fn, np_fn, exact, np_args, pyet_args, tol=ULP_TOL):
    ref, err = numpy_ref(np_fn, *np_args)
    if err is not None:
        with pytest.raises(builtin_class(err), match=expected_message(err, np_args)):
            np.asarray(pyet.evaluate(pyet_fn(*pyet_args)))
        return
    expr = pyet_fn(*pyet_args)
    assert isinstance(expr, pyet.Expr)
    assert expr.shape == ref.shape
    assert expr.dtype == ref.dtype
    assert expr.ndim == ref.ndim
    got = np.asarray(pyet.evaluate(expr))
    assert got.dtype == ref.dtype and got.shape == ref.shape
    if exact or ref.dtype.kind in "bi":
        np.testing.assert_array_equal(got, ref)
        if ref.dtype.kind == "f":  # -0.0 versus +0.0 too
            np.testing.assert_array_equal(np.signbit(got), np.signbit(ref), err_msg="sign of zero")
    else:
        assert_within_ulp(got, ref, tol)


def test_table_rows_are_complete():
    """Every row names a kernel, a public function, a domain per operand and its dtypes."""
    for op in OPS:
        assert op.name in _expr.OPCODES, op.name
        assert op.name in pyet.__all__ and callable(getattr(pyet, op.name))
        assert len(op.domain) == op.arity and all(isinstance(d, Domain) for d in op.domain)
        assert op.dtypes and set(op.dtypes) <= set(DTYPES), op.name
        assert op.kind in ("float", "number", "predicate", "bitwise", "compare")


def test_generated_functions_take_their_arity():
    """Each function takes its op's operands (NumPy's names x, x1 and x2), builds the
    op's node, a function of scalars alone a 0-d expression of NumPy's type."""
    a = np.arange(1.0, 4.0)
    for op in OPS:
        fn = getattr(pyet, op.name)
        with pytest.raises(TypeError, match="positional argument"):
            fn(*([a] * (op.arity + 1)))
        with pytest.raises(TypeError, match="missing"):
            fn()
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(pyet.exp(x=a))), np.exp(a))
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(pyet.subtract(x2=a, x1=1))),
                                  1 - a)
    for got, want in ((pyet.add(2, 3), np.add(2, 3)), (pyet.sqrt(4.0), np.sqrt(4.0)),
                      (pyet.power(np.float32(2), 3), np.power(np.float32(2), 3)),
                      (pyet.power(a, 2), a ** 2)):
        v = np.asarray(pyet.evaluate(got))
        assert v.dtype == np.asarray(want).dtype and v.shape == np.shape(want)
        np.testing.assert_array_equal(v, want)
    with pytest.raises(OverflowError, match="out of bounds for int64"):
        pyet.negative(2**63)


@pytest.mark.parametrize("name", [op.name for op in OPS if op.arity == 2])
def test_binary_functions_build_the_ufuncs_node(name):
    """pyet.<op>(x1, x2) builds the node np.<op> on tensors builds (NEP 50 scalars,
    folding, dtypes): the same dtype and shape, NumPy's values."""
    row = ROWS[name]
    rng = np.random.default_rng(3)
    dom = row.domain
    a = rng.uniform(dom[0].lo, dom[0].hi, (3, 4)).astype(row.dtypes[-1])
    b = rng.uniform(dom[1].lo, dom[1].hi, (3, 1)).astype(row.dtypes[-1])
    if dom[1].nonzero:
        b[b == 0] = dom[1].hi
    A, B = pyet.asarray(a), pyet.asarray(b)
    fn, uf = getattr(pyet, name), row.ufunc
    scalar = 2 if "int" in row.dtypes[-1] else 0.75
    with np.errstate(all="ignore"):
        for got, via_ufunc, want in ((fn(A, B), uf(A, B), uf(a, b)),
                                     (fn(A, scalar), uf(A, scalar), uf(a, scalar)),
                                     (fn(scalar, B), uf(scalar, B), uf(scalar, b))):
            assert got.dtype == via_ufunc.dtype == want.dtype and got.shape == want.shape
            if want.dtype.kind == "f":  # (libm's functions: within an ulp or two of NumPy's)
                np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
            else:
                np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", [op.name for op in OPS])
def test_row_dtypes_are_the_kernels(name, dtype):
    """``dtypes`` is the truth: on operands of a listed dtype the lowered program runs the
    op's kernel in that dtype; on any other dtype it computes in another or is refused."""
    row = ROWS[name]
    t = pyet.asarray(np.ones(3, dtype))
    try:
        e = getattr(pyet, name)(*[t] * row.arity)
        listing = _plan.lower(e, _expr.dtype_code(e.dtype)).text
    except TypeError:
        assert dtype not in row.dtypes
        return
    constants = dict(INTEGER_CONSTANTS)
    if name in constants and dtype in ("bool", "int32", "int64"):
        # folded when built: a constant of NumPy's answer, no kernel run
        assert listing == "dst = copy[bool->bool](s0)", listing
        np.testing.assert_array_equal(e.numpy(), getattr(np, name)(np.ones(3, dtype)))
        assert e.numpy().tolist() == [constants[name]] * 3
        return
    assert (f"{name}[{dtype}->" in listing) == (dtype in row.dtypes), listing


def _operand_check(name, dtype, layouts):
    pyet_fn, np_fn, exact, domains, row = entry(name)
    coarse = row.kind == "compare"
    rng = rng_for(name, dtype, layouts)
    if row.arity == 1:
        a = make_unary_operand(dtype, domains[0], layouts, rng, coarse)
        check(pyet_fn, np_fn, exact, (a,), (pyet.asarray(a),), ULP_TOL_OF.get(name, ULP_TOL))
        return
    if layouts == "mixed":  # Fortran-order against negative strides against contiguous
        a = np.asfortranarray(values(dtype, domains[0], (4, 6), rng, coarse))
        b = with_layout(values(dtype, domains[1], (4, 6), rng, coarse), "negstride")
    else:
        a, b = make_binary_operands(dtype, dtype, *domains, layouts, rng, coarse)
    check(pyet_fn, np_fn, exact, (a, b), (pyet.asarray(a), pyet.asarray(b)))


@pytest.mark.parametrize(
    "name,dtype,layout",
    [(n, d, lay) for n, d in KERNEL_CASES
     for lay in LAYOUTS + (["mixed"] if entry(n)[4].arity == 2 else [])],
)
def test_op(name, dtype, layout):
    """Each row (and operator) on each dtype its kernel computes in, over memory layouts."""
    _operand_check(name, dtype, layout)


@pytest.mark.parametrize("layout", ["contig", "negstride"])
@pytest.mark.parametrize("name,dtype", OTHER_CASES)
def test_op_other_dtypes(name, dtype, layout):
    """Other input dtypes: NumPy's promotion (bool and ints to float64...) or its refusal."""
    _operand_check(name, dtype, layout)


@pytest.mark.parametrize("dtype_a,dtype_b", [(a, b) for a in DTYPES for b in DTYPES if a != b])
@pytest.mark.parametrize("name", BINARY)
def test_binary_mixed_dtypes(name, dtype_a, dtype_b):
    pyet_fn, np_fn, exact, (dom_a, dom_b), _ = entry(name)
    rng = rng_for(name, dtype_a, dtype_b)
    a, b = values(dtype_a, dom_a, (2, 7), rng), values(dtype_b, dom_b, (2, 7), rng)
    check(pyet_fn, np_fn, exact, (a, b), (pyet.asarray(a), pyet.asarray(b)))


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("scalar", [3, 0.5, True], ids=["int", "float", "bool"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_binary_python_scalar(name, dtype, scalar, side):
    """Python scalars are weak (NEP 50): float32 tensor * 0.5 stays float32, int32 + 3 int32."""
    pyet_fn, np_fn, exact, (dom_a, dom_b), _ = entry(name)
    a = values(dtype, dom_a if side == "right" else dom_b, (2, 5), rng_for(name, dtype, side))
    if side == "right":
        check(pyet_fn, np_fn, exact, (a, scalar), (pyet.asarray(a), scalar))
    else:
        check(pyet_fn, np_fn, exact, (scalar, a), (scalar, pyet.asarray(a)))


@pytest.mark.parametrize(
    "scalar",
    [np.float64(0.5), np.float32(0.5), np.int32(3), np.int64(3), np.bool_(True)],
    ids=lambda s: type(s).__name__,
)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["op_add", "op_mul", "op_truediv", "maximum", "op_lt"])
def test_binary_numpy_scalar(name, dtype, scalar):
    """NumPy scalars are strong: np.float64(0.5) * float32 tensor -> float64; also on the left."""
    pyet_fn, np_fn, exact, _, _ = entry(name)
    a = values(dtype, "nonzero", (2, 5), rng_for(name, dtype))
    check(pyet_fn, np_fn, exact, (a, scalar), (pyet.asarray(a), scalar))
    check(pyet_fn, np_fn, exact, (scalar, a), (scalar, pyet.asarray(a)))


UFUNC_NAMES = [n for n in ROWS if ROWS[n].reference is ROWS[n].ufunc]


def test_ufunc_mapping_is_the_table():
    """np.<ufunc> dispatches exactly the rows that are their ufunc (not sigmoid, relu, erf)."""
    from pyet._core.ops import UFUNC_TO_OP

    assert sorted(UFUNC_TO_OP.values()) == sorted(UFUNC_NAMES)
    assert {"sigmoid", "relu", "erf"}.isdisjoint(UFUNC_NAMES)
    e = np.logical_and(pyet.asarray(np.ones(2)), 1)  # no kernel: a pyet.F node of the ufunc
    assert "F[logical_and]" in repr(e)
    np.testing.assert_array_equal(np.asarray(e), [True, True])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UFUNC_NAMES)
def test_numpy_ufunc_on_tensor(name, dtype):
    """np.<ufunc>(tensor) builds the same lazy node as pyet.<ufunc>(tensor)."""
    _, np_fn, exact, domains, row = entry(name)
    rng = rng_for("ufunc", name, dtype)
    args = [values(dtype, dom, (3, 4), rng) for dom in domains]
    check(row.ufunc, np_fn, exact, args, [pyet.asarray(x) for x in args])
    ref, err = numpy_ref(np_fn, *args)
    if err is None:
        assert isinstance(row.ufunc(*[pyet.asarray(x) for x in args]), pyet.Expr)


# ---------------------------------------------------------------- where / clip


@pytest.mark.parametrize(
    "layout", ["contig", "strided", "negstride", "fortran", "bcast", "0d", "empty"]
)
@pytest.mark.parametrize("dtype_b", DTYPES)
@pytest.mark.parametrize("dtype_a", DTYPES)
def test_where(dtype_a, dtype_b, layout):
    rng = rng_for("where", dtype_a, dtype_b, layout)
    a, b = make_binary_operands(dtype_a, dtype_b, "any", "any", layout, rng)
    c = with_layout(values("bool", "any", np.broadcast_shapes(a.shape, b.shape), rng), layout)
    check(P("where"), np.where, True, (c, a, b), tuple(pyet.asarray(x) for x in (c, a, b)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_scalars_and_expr_condition(dtype):
    rng = rng_for("where2", dtype)
    a = values(dtype, "any", (4, 3), rng)
    b = values(dtype, "any", (3,), rng)
    ta, tb = pyet.asarray(a), pyet.asarray(b)
    check(
        lambda x, y: pyet.where(x > y, x, 0),
        lambda x, y: np.where(x > y, x, 0),
        True,
        (a, b),
        (ta, tb),
    )
    check(
        lambda x, y: pyet.where(x > 0.5, 2.5, y),
        lambda x, y: np.where(x > 0.5, 2.5, y),
        True,
        (a, b),
        (ta, tb),
    )


@pytest.mark.parametrize(
    "lo_hi",
    [(0, 1), (-1.5, 2.5), (np.float64(-1), np.float64(1)), "arrays"],
    ids=["int", "float", "np_float64", "arrays"],
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_clip(dtype, lo_hi):
    rng = rng_for("clip", dtype, str(lo_hi))
    a = values(dtype, "any", (3, 5), rng)
    if lo_hi == "arrays":
        if dtype == "bool":
            lo, hi = np.zeros((1, 5), bool), values(dtype, "any", (3, 1), rng)
        else:
            lo = values(dtype, "small", (1, 5), rng) - 1
            hi = (lo + values(dtype, "pos", (3, 1), rng)).astype(dtype)
        check(
            P("clip"),
            np.clip,
            True,
            (a, lo, hi),
            (pyet.asarray(a), pyet.asarray(lo), pyet.asarray(hi)),
        )
    else:
        lo, hi = lo_hi
        check(P("clip"), np.clip, True, (a, lo, hi), (pyet.asarray(a), lo, hi))


# ---------------------------------------------------------------- NaN, inf, signed zeros

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e300, -1e-300, 5e-324, 1e30]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", [n for n in UNARY if n not in ("op_invert", "invert")])
def test_unary_special_values(name, dtype):
    pyet_fn, np_fn, exact, _, _ = entry(name)
    with np.errstate(all="ignore"):
        a = np.array(SPECIAL).astype(dtype)
    check(pyet_fn, np_fn, exact, (a,), (pyet.asarray(a),))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", [n for n in BINARY if entry(n)[4].kind != "bitwise"])
def test_binary_special_values(name, dtype):
    """Every pair of special values, zero denominators included (x/0, x//0, x%0, fmod(x, 0))."""
    pyet_fn, np_fn, exact, _, _ = entry(name)
    with np.errstate(all="ignore"):
        s = np.array(SPECIAL).astype(dtype)
    a, b = s[:, None], s[None, :]
    check(pyet_fn, np_fn, exact, (a, b), (pyet.asarray(a), pyet.asarray(b)))


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_propagate_nan(name):
    a = np.array([np.nan, 1.0, np.nan, -np.inf, 2.0])
    b = np.array([0.0, np.nan, np.nan, np.nan, 3.0])
    for fn in (P(name), getattr(np, name)):
        got = np.asarray(pyet.evaluate(fn(pyet.asarray(a), pyet.asarray(b))))
        np.testing.assert_array_equal(got, [np.nan] * 4 + [3.0 if name == "maximum" else 2.0])
        got = np.asarray(pyet.evaluate(fn(pyet.asarray(a), 0.0)))
        np.testing.assert_array_equal(got, getattr(np, name)(a, 0.0))
        assert np.isnan(got[[0, 2]]).all()
    relu = np.asarray(pyet.evaluate(pyet.relu(pyet.asarray(a))))
    np.testing.assert_array_equal(relu, np.maximum(a, 0))


# ---------------------------------------------------------------- integer semantics


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_overflow_wraps(dtype):
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, info.max, -1, info.min], dtype)
    t = pyet.asarray(a)
    with np.errstate(all="ignore"):
        for fn in (
            lambda x: x + 1,
            lambda x: x - 1,
            lambda x: x * 2,
            lambda x: x * x,
            lambda x: -x,
            lambda x: abs(x),
            lambda x: x + x,
            lambda x: x**3,
        ):
            got = np.asarray(pyet.evaluate(fn(t)))
            np.testing.assert_array_equal(got, fn(a))
            assert got.dtype == np.dtype(dtype)
    assert np.asarray(pyet.evaluate(t + 1))[0] == info.min


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_division_by_zero_gives_zero(dtype):
    a = np.array([7, -7, 0, np.iinfo(dtype).max, np.iinfo(dtype).min], dtype)
    z = np.zeros(5, dtype)
    ta, tz = pyet.asarray(a), pyet.asarray(z)
    for fn in (operator.floordiv, operator.mod, P("fmod"), P("floor_divide"), P("remainder")):
        got = np.asarray(pyet.evaluate(fn(ta, tz)))
        np.testing.assert_array_equal(got, np.zeros(5))
        assert got.dtype == np.dtype(dtype)
        got = np.asarray(pyet.evaluate(fn(ta, 0)))
        np.testing.assert_array_equal(got, np.zeros(5))
    with np.errstate(all="ignore"):  # int / 0 is a float64 division
        np.testing.assert_array_equal(np.asarray(pyet.evaluate(ta / tz)), a / z)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int_min_floordiv_minus_one(dtype):
    a = np.array([np.iinfo(dtype).min] * 3, dtype)
    b = np.array([-1, 1, 2], dtype)
    with np.errstate(all="ignore"):
        for fn, ref in (
            (operator.floordiv, a // b),
            (operator.mod, a % b),
            (P("fmod"), np.fmod(a, b)),
        ):
            got = np.asarray(pyet.evaluate(fn(pyet.asarray(a), pyet.asarray(b))))
            np.testing.assert_array_equal(got, ref)
            assert got.dtype == np.dtype(dtype)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_floor_semantics_negative_operands(dtype):
    a = np.array([7, -7, 7, -7, 0, 5, -5], dtype)
    b = np.array([2, 2, -2, -2, 3, -5, 5], dtype)
    ta, tb = pyet.asarray(a), pyet.asarray(b)
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(ta // tb)), a // b)
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(ta % tb)), a % b)
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(pyet.fmod(ta, tb))), np.fmod(a, b))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_power_negative_exponent_raises(dtype):
    a = pyet.asarray(np.arange(1, 5, dtype=dtype))
    b = pyet.asarray(np.array([1, 2, -1, 0], dtype))
    with pytest.raises(ValueError, match="[Nn]egative"):
        np.asarray(pyet.evaluate(a**b))
    with pytest.raises(ValueError, match="[Nn]egative"):
        np.asarray(pyet.evaluate(a**-1))
    with pytest.raises(ValueError, match="[Nn]egative"):
        np.asarray(pyet.evaluate(pyet.power(a, b)))
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(a**2)), np.arange(1, 5) ** 2)


def test_int_true_divide_is_float64():
    a = np.array([1, 2, 3, -7], np.int32)
    b = np.array([3, 3, 3, 2], np.int64)
    e = pyet.asarray(a) / pyet.asarray(b)
    assert e.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(e)), a / b)
    e = pyet.asarray(a) / 3
    assert e.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(e)), a / 3)


def test_weak_scalar_promotion_examples():
    f32 = pyet.asarray(np.arange(4, dtype=np.float32))
    i32 = pyet.asarray(np.arange(4, dtype=np.int32))
    b = pyet.asarray(np.array([True, False, True, False]))
    assert (f32 * 0.5).dtype == np.float32
    assert (0.5 * f32).dtype == np.float32
    assert (np.float64(0.5) * f32).dtype == np.float64
    assert (f32 * np.float64(0.5)).dtype == np.float64
    assert (i32 + 1).dtype == np.int32
    assert (1 + i32).dtype == np.int32
    assert (i32 + 1.5).dtype == np.float64
    assert (i32 + np.int64(1)).dtype == np.int64
    assert (b + 1).dtype == np.int64
    assert (b & True).dtype == np.bool_
    assert (f32 > 1).dtype == np.bool_
    np.testing.assert_array_equal(
        np.asarray(pyet.evaluate(f32 * 0.1)), np.arange(4, dtype=np.float32) * 0.1
    )


def test_zero_d_arrays_are_strong():
    """NEP 50: 0-d arrays (NumPy or pyet) are not weak like Python scalars."""
    f32 = np.ones(3, np.float32)
    t = pyet.asarray(f32)
    for other in (np.array(0.5), pyet.asarray(np.array(0.5))):
        for e in (t * other, other * t):
            assert e.dtype == np.float64
            np.testing.assert_array_equal(np.asarray(pyet.evaluate(e)), f32 * np.float64(0.5))
    assert (pyet.asarray(np.ones(3, np.int32)) + np.array(1)).dtype == np.int64
    assert (t * np.array(0.5, np.float32)).dtype == np.float32


@pytest.mark.parametrize(
    "x,y", [(np.float32(1), 0.5), (1, 2), (1, 2.5), (True, False), (np.int32(1), 2)], ids=str
)
def test_where_scalar_branches_promotion(x, y):
    c = np.array([True, False, True])
    ref = np.where(c, x, y)
    e = pyet.where(pyet.asarray(c), x, y)
    assert e.dtype == ref.dtype and e.shape == ref.shape
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(e)), ref)


# ---------------------------------------------------------------- accuracy over wide ranges, in ulp

# function -> (lowest, highest) decimal exponent of |x| (float64; float32 ranges are clamped)
WIDE = {
    "exp": (-30, 2.8),
    "expm1": (-30, 2.8),
    "log": (-300, 300),
    "log1p": (-300, 300),
    "log2": (-300, 300),
    "log10": (-300, 300),
    "sin": (-300, 5),
    "cos": (-300, 5),
    "tan": (-300, 5),
    "arcsin": (-300, -1e-4),
    "arccos": (-300, -1e-4),
    "arctan": (-300, 300),
    "sinh": (-300, 2.8),
    "cosh": (-300, 2.8),
    "tanh": (-300, 3),
    "arcsinh": (-300, 300),
    "arccosh": (0, 300),
    "arctanh": (-300, -1e-4),
    "sqrt": (-300, 300),
    "sigmoid": (-300, 2.8),
    "cbrt": (-300, 300),
    "exp2": (-30, 2.9),
    "erf": (-300, 0.7),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(WIDE))
def test_transcendental_ulp_over_wide_ranges(name, dtype):
    lo, hi = WIDE[name]
    if dtype == "float32":
        lo, hi = max(lo, -37), (min(hi, 37) if hi > 3 else min(hi, 1.6))
    rng = rng_for("wide", name, dtype)
    x = rng.uniform(1, 10, 3000) * 10.0 ** rng.uniform(lo, hi, 3000)
    if name == "arccosh":
        x = 1 + x
    elif name == "log1p":
        x = np.where(x < 1, x * rng.choice([-1, 1], x.size), x)
    elif name not in ("log", "log2", "log10", "sqrt"):
        x = x * rng.choice([-1, 1], x.size)
    x = x.astype(dtype)
    pyet_fn, np_fn = entry(name)[:2]
    with np.errstate(all="ignore"):
        ref = np_fn(x)
        got = np.asarray(pyet.evaluate(pyet_fn(pyet.asarray(x))))
    assert got.dtype == ref.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got) * np.sign(got), np.isinf(ref) * np.sign(ref))
    fin = np.isfinite(ref)
    ulp = np.abs(got[fin].astype(np.float64) - ref[fin]) / np.spacing(np.abs(ref[fin])).astype(
        np.float64
    )
    worst = int(np.argmax(ulp)) if ulp.size else 0
    assert ulp.size == 0 or ulp.max() <= 4, (
        f"{ulp.max()} ulp at x={x[fin][worst]!r}: "
        f"got {got[fin][worst]!r}, NumPy {ref[fin][worst]!r}"
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["power", "arctan2", "hypot"])
def test_binary_transcendental_ulp(name, dtype):
    rng = rng_for("wide2", name, dtype)
    big = 30 if dtype == "float32" else 300
    if name == "power":
        a = rng.uniform(0.01, 100, 3000)
        b = rng.uniform(-big / 2, big / 2, 3000) / 2
    else:
        a = (
            rng.uniform(1, 10, 3000)
            * 10.0 ** rng.uniform(-big, big, 3000)
            * rng.choice([-1, 1], 3000)
        )
        b = (
            rng.uniform(1, 10, 3000)
            * 10.0 ** rng.uniform(-big, big, 3000)
            * rng.choice([-1, 1], 3000)
        )
    a, b = a.astype(dtype), b.astype(dtype)
    with np.errstate(all="ignore"):
        ref = getattr(np, name)(a, b)
        got = np.asarray(pyet.evaluate(getattr(pyet, name)(pyet.asarray(a), pyet.asarray(b))))
    assert got.dtype == ref.dtype
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(ref))
    fin = np.isfinite(ref) & (ref != 0)
    ulp = np.abs(got[fin].astype(np.float64) - ref[fin]) / np.spacing(np.abs(ref[fin])).astype(
        np.float64
    )
    assert ulp.max() <= 4, ulp.max()


CLIP_BOUNDS = {
    "int": lambda: 0,
    "float": lambda: 0.5,
    "np_float32": lambda: np.float32(0.25),
    "0d_float32": lambda: np.array(0.75, np.float32),
    "0d_tensor_float32": lambda: pyet.asarray(np.array(0.75, np.float32)),
    "0d_int32": lambda: np.array(1, np.int32),
    "bool": lambda: True,
}


@pytest.mark.parametrize("way", ["pyet.clip", "method", "np.clip"])
@pytest.mark.parametrize("hi", sorted(CLIP_BOUNDS))
@pytest.mark.parametrize("lo", sorted(CLIP_BOUNDS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_clip_dtype_from_all_three_operands(dtype, lo, hi, way):
    """NumPy's clip resolves one dtype over a, a_min and a_max: a bool array between 0
    and a float32 0-d array is float32 (hypothesis: pyet gave float64, as maximum then
    minimum promote step by step)."""
    a = values(dtype, "any", (4, 3), rng_for("clip3", dtype))
    lo_v, hi_v = CLIP_BOUNDS[lo](), CLIP_BOUNDS[hi]()
    as_np = [np.asarray(v) if isinstance(v, pyet.Expr) else v for v in (lo_v, hi_v)]
    ref = np.clip(a, *as_np)
    t = pyet.asarray(a)
    e = {"pyet.clip": lambda: pyet.clip(t, lo_v, hi_v), "method": lambda: t.clip(lo_v, hi_v),
         "np.clip": lambda: np.clip(t, lo_v, hi_v)}[way]()
    assert e.dtype == ref.dtype
    got = np.asarray(pyet.evaluate(e))
    assert got.dtype == ref.dtype
    np.testing.assert_array_equal(got, ref)
