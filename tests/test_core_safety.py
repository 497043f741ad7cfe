"""The core's guarantees: any tree depth, pickling by structure, user functions
that cannot see freed memory or grow the caches, checks at evaluation time,
private node fields, leaves that know their base, the one-way layering."""

import ast
import gc
import pathlib
import pickle
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

import pyet
from pyet._core import core

ROOT = pathlib.Path(pyet.__file__).parent


# ------------------------------------------------------------------- depth

def test_fifty_thousand_nested_additions_evaluate():
    x = pyet.asarray(np.arange(4.0))
    e = x
    for _ in range(50_000):
        e = e + x
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(e)), np.arange(4.0) * 50_001)
    assert len(repr(e)) < 10_000  # printed to a depth, not recursing 50,000 levels


def test_deep_scalar_chain_under_a_product_and_a_reduction():
    a = np.linspace(0, 1, 9).reshape(3, 3)
    e, ref = pyet.asarray(a), a.copy()
    for _ in range(20_000):
        e = e * 0.5 + 0.25
        ref = ref * 0.5 + 0.25
    np.testing.assert_allclose(np.asarray(pyet.evaluate(pyet.dot(e, e))), ref @ ref)
    np.testing.assert_allclose(np.asarray(pyet.evaluate(pyet.sum(e, axis=0))), ref.sum(0))


def test_wide_trees_beyond_a_programs_operands():
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(size=5) for _ in range(1000)]
    e = pyet.asarray(arrays[0])
    for a in arrays[1:]:
        e = e + pyet.asarray(a)
    np.testing.assert_allclose(np.asarray(pyet.evaluate(e)), np.sum(arrays, axis=0))


@pytest.mark.parametrize("join", ["concatenate", "stack"])
def test_joins_of_more_pieces_than_a_programs_operands(join):
    # more leaves under one join than a program takes: the join assigns them one
    # by one (this used to loop forever cutting leaves off)
    rng = np.random.default_rng(1)
    pieces = [rng.uniform(size=(2, 3)) for _ in range(300)]
    ts = [pyet.asarray(p) for p in pieces]
    want = getattr(np, join)(pieces)
    build = getattr(pyet, join)
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(build(ts))), want)
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(build(ts) * 2 + 1)), want * 2 + 1)
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(build([t * 2 for t in ts]))), want * 2)
    mixed = [t if k % 2 else t - 1 for k, t in enumerate(ts)]
    np.testing.assert_array_equal(
        np.asarray(pyet.evaluate(build(mixed).sum(axis=0))),
        getattr(np, join)([p if k % 2 else p - 1 for k, p in enumerate(pieces)]).sum(axis=0))
    assert "evaluated in pieces" in pyet.explain(build(ts) * 2)


def test_explain_of_a_deep_tree_computes_nothing():
    # explain cuts a deep tree as evaluation would (it used to recurse
    # 100,000 levels in C and crash), leaving the pieces unwritten
    x = pyet.asarray(np.arange(3.0))
    e = x
    for _ in range(100_000):
        e = e + 1.0
    pyet.stats(reset=True)
    text = pyet.explain(e)
    assert "evaluated in pieces (depth 100000" in text and "elementwise pass" in text
    assert pyet.stats()["elementwise_passes"] == 0


def test_deep_tree_pickles():
    x = pyet.asarray(np.arange(3.0))
    e = x
    for _ in range(20_000):
        e = e - 1.0
    back = pickle.loads(pickle.dumps(e))
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(back)), np.arange(3.0) - 20_000)


# ----------------------------------------------------------------- pickling

def test_pickled_expression_evaluates_in_another_process():
    a = np.arange(12.0).reshape(3, 4)
    t = pyet.asarray(a)
    e = pyet.softmax(pyet.exp(t * 0.1) + pyet.sum(t, axis=0), axis=1) * 2 + pyet.F(np.sin, t)
    want = np.asarray(pyet.evaluate(e))
    code = ("import pickle, sys, numpy as np, pyet\n"
            "e = pickle.loads(sys.stdin.buffer.read())\n"
            "sys.stdout.buffer.write(pickle.dumps(np.asarray(pyet.evaluate(e))))\n")
    out = subprocess.run([sys.executable, "-P", "-c", code], input=pickle.dumps(e),
                         capture_output=True, check=True)
    np.testing.assert_array_equal(pickle.loads(out.stdout), want)


def test_unpickled_tree_has_this_process_keys():
    x = pyet.asarray(np.ones(2))
    e = x * 2.0 + 1.0
    back = pickle.loads(pickle.dumps(e))
    assert back._key == (pyet.asarray(np.zeros(2)) * 2.0 + 1.0)._key


# --------------------------------------------------------------- pyet.F

def test_F_arrays_are_read_only_and_a_kept_reference_stays_valid():
    kept = []

    def keep(x):
        assert not x.flags.writeable
        kept.append(x)
        return x * 2

    a = np.arange(2000.0)
    out = np.asarray(pyet.evaluate(pyet.F(keep, pyet.asarray(a)) + 1))
    np.testing.assert_array_equal(out, a * 2 + 1)
    gc.collect()
    junk = [np.full(4096, -7.0) for _ in range(64)]  # reuse whatever memory was freed
    np.testing.assert_array_equal(np.concatenate([k for k in kept if k.size]), a)
    del junk


@pytest.mark.parametrize("fn, error, match", [
    (lambda x: None, TypeError, "returned None"),
    (lambda x: x[:1], ValueError, r"returned shape \(1,\)"),
    (lambda x: np.zeros(len(x), bool) if len(x) else x, TypeError, "returned bool"),
])
def test_F_result_checked_on_every_block_before_writing(fn, error, match):
    dst = np.full(5, 3.0)
    with pytest.raises(error, match=match):
        pyet.asarray(dst)[...] = pyet.F(fn, pyet.asarray(np.arange(5.0)), dtype=np.float64)
    np.testing.assert_array_equal(dst, 3.0)


def test_F_names_the_function():
    def halve(x):
        return None

    with pytest.raises(TypeError, match="halve returned None"):
        pyet.F(halve, np.ones(3))


def test_F_dtype_from_empty_operands_and_explicit():
    e = pyet.F(lambda x: x > 0, np.arange(3.0))
    assert e.dtype == np.bool_
    e = pyet.F(lambda x: (x * 2).astype(np.float32), np.arange(3.0), dtype=np.float32)
    assert e.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(e)), [0, 2, 4])


def test_fresh_F_callables_do_not_accumulate():
    a = pyet.asarray(np.ones(64))
    out = np.empty(64)

    def run(i):
        pyet.evaluate(pyet.F(lambda x: x + i, a) * 2.0, out=out)

    for i in range(50):
        run(i)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(3000):
        run(i)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < 2_000_000, grown
    np.testing.assert_array_equal(out, (1 + 2999) * 2.0)


def test_key_and_program_caches_are_bounded():
    a = pyet.asarray(np.ones((4, 4)))
    info = core.cache_info()
    for i in range(info["key_limit"] + 10):  # a per-call parameter in every key
        pyet.pad(a, 1, value=float(i))
    info = core.cache_info()
    assert info["keys"] <= info["key_limit"]
    assert info["programs"] <= info["program_limit"]


# ------------------------------------------------- checks at evaluation time

def test_integer_negative_power_checked_when_evaluated():
    base = np.array([2, 3, 4], np.int64)
    exponent = np.array([1, 2, 3], np.int64)
    e = pyet.asarray(base) ** pyet.asarray(exponent)
    np.testing.assert_array_equal(np.asarray(pyet.evaluate(e)), base ** exponent)
    exponent[1] = -1  # after the tree was built
    dst = np.full(3, 7, np.int64)
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        pyet.evaluate(e, out=dst)
    np.testing.assert_array_equal(dst, 7)
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        pyet.asarray(base) ** -1


# ------------------------------------------------------------ typed fields

@pytest.mark.parametrize("name", ["value", "op", "key", "flags", "args", "weak", "dt"])
def test_node_fields_are_private(name):
    t = pyet.asarray(np.ones((2, 2)))
    for e in (t, t + 1, pyet.sum(t), pyet.F(np.sin, t)):
        assert not hasattr(e, name), (type(e).__name__, name)


def test_node_kinds_have_their_own_fields():
    t = pyet.asarray(np.ones((2, 3)))
    assert type(t) is pyet.Tensor and t._array is t.numpy()
    s = (t + 2)._args[1]
    assert isinstance(s, core.Scalar) and s._value == 2 and s._weak == 1
    f = pyet.F(np.sin, t)
    assert isinstance(f, core.PyFunc) and f._fn is np.sin
    for e in (pyet.dot(t, t.T), pyet.sum(t, axis=1), pyet.softmax(t)):
        assert isinstance(e, core.SpecialNode) and isinstance(e._kernel, core.Special)


def test_views_of_a_leaf_keep_their_base_and_mapping():
    a = np.arange(24.0).reshape(2, 3, 4)
    t = pyet.asarray(a)
    v = pyet.flip(pyet.transpose(t[1:], (0, 2, 1)), 1)
    assert v._base is t
    assert [kind for kind, _ in v._mapping] == ["index", "transpose", "flip"]
    np.testing.assert_array_equal(np.asarray(v), np.flip(a[1:].transpose(0, 2, 1), 1))
    w = pyet.broadcast_to(pyet.reshape(t[0], (12,)), (2, 12))
    assert w._base is t and [k for k, _ in w._mapping] == ["index", "reshape", "broadcast_to"]
    # a reshape NumPy could only copy is a lazy View node, not a leaf
    assert isinstance(pyet.reshape(t.T, (24,)), core.SpecialNode)
    assert t._base is None and t._mapping == ()
    assert t.T.T is t


# ------------------------------------------------------------- root forms

def test_product_plus_wider_d_rounds_once_as_numpy():
    rng = np.random.default_rng(3)
    A = rng.uniform(-1, 1, (8, 8)).astype(np.float32)
    B = rng.uniform(-1, 1, (8, 8)).astype(np.float32)
    D = rng.uniform(-1, 1, (8, 8)) * 1e-3 + 1.0
    C = np.empty((8, 8), np.float32)
    pyet.asarray(C)[...] = pyet.dot(A, B) + D
    np.testing.assert_array_equal(C, (A @ B + D).astype(np.float32))


@pytest.mark.parametrize("form", [
    lambda P, D: P, lambda P, D: 0.5 * P, lambda P, D: -P, lambda P, D: -(2.0 * P),
    lambda P, D: D + P, lambda P, D: P + D, lambda P, D: D + 3.0 * P, lambda P, D: D - P,
    lambda P, D: D - P * 0.25, lambda P, D: P - D, lambda P, D: 2.0 * P - D,
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_root_form_against_numpy(form, dtype):
    rng = np.random.default_rng(4)
    A, B, D = (rng.uniform(-1, 1, (5, 5)).astype(dtype) for _ in range(3))
    C = np.empty((5, 5), dtype)
    pyet.asarray(C)[...] = form(pyet.dot(A, B), pyet.asarray(D))
    np.testing.assert_allclose(C, form(A @ B, D), rtol=1e-5 if dtype == np.float32 else 1e-12)


# ---------------------------------------------------------------- layers

def _imports(path):
    """(module, indented) for each import in a source file; indented: inside a
    function, so run when the function is called, not when the file is imported."""
    tree = ast.parse(path.read_text()) if path.suffix == ".py" else None
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                yield node.module, node.col_offset > 0
            elif isinstance(node, ast.Import):
                yield from ((a.name, node.col_offset > 0) for a in node.names)
        return
    for line in path.read_text().splitlines():  # .pyx / .pxi / .pxd
        words = line.split()
        if words[:1] in (["from"], ["import"], ["cimport"]) and len(words) > 1:
            yield words[1], line[:1].isspace()


# The imports against the layering that are allowed, each deferred (inside a
# function) and listed with its reason.  Expr's ndarray methods (e.sum(),
# e.reshape(), e[0], __array_function__) need reductions and views, which are
# node families built on core: nodes.pxi's array_api() imports
# pyet._nodes.numpy_api on the first such call (as Dask's Array methods import
# dask.array.reductions).  Importing core still imports no family.
DEFERRED_IMPORTS = {("_core", "nodes.pxi", "pyet._nodes")}


@pytest.mark.parametrize("layer, forbidden", [
    ("_kernels", ("pyet._core", "pyet._nodes", "pyet._functions", "pyet._tensor_api",
                  "pyet._blob")),
    ("_core", ("pyet._nodes", "pyet._functions", "pyet._tensor_api", "pyet._blob")),
    ("_nodes", ("pyet._functions", "pyet._tensor_api", "pyet._blob")),
])
def test_imports_go_one_way(layer, forbidden):
    src = pathlib.Path(__file__).parents[1] / "pyet" / layer
    if not src.is_dir():
        pytest.skip("source tree not beside the tests")
    deferred = []
    for path in sorted(src.iterdir()):
        if path.suffix in (".py", ".pyx", ".pxi", ".pxd"):
            for module, indented in _imports(path):
                if not module.startswith(forbidden):
                    continue
                allowed = (layer, path.name, module) in DEFERRED_IMPORTS
                assert allowed and indented, f"{path.name} imports {module}"
                deferred.append(module)
    # each allowed import is there exactly once (array_api(): one place)
    assert len(deferred) == len({d for d in DEFERRED_IMPORTS if d[0] == layer})


def test_core_imports_no_node_family_until_a_method_needs_one():
    code = ("import sys, numpy as np, pyet\n"
            "assert 'pyet._nodes.numpy_api' not in sys.modules\n"
            "assert float(pyet.asarray(np.arange(4.0)).sum()) == 6.0\n"
            "assert 'pyet._nodes.numpy_api' in sys.modules\n")
    run = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         cwd=pathlib.Path(__file__).parent)
    assert run.returncode == 0, run.stderr


def test_no_registration_hooks():
    for name in ("set_evaluator", "set_complex_assigner", "register_value",
                 "register_root_form"):
        assert not hasattr(core, name)


# ------------------------------------------------------------- 0-d leaves

@pytest.mark.parametrize("n", [1, 7, 1000, 5000])
def test_zero_d_leaves_in_every_position(n):
    """0-d arrays are read as scalars where a kernel takes one, as arrays where
    it does not (where's condition, F's operands): never past a scalar's slot."""
    x = np.linspace(-2, 2, n)
    c, h, k = np.array(True), np.array(0.5), np.array(3, np.int32)
    tx = pyet.asarray(x)
    cases = [
        (pyet.where(c, tx, -tx), np.where(c, x, -x)),
        (pyet.where(~pyet.asarray(c), tx, h), np.where(~c, x, h)),
        (pyet.where(pyet.asarray(h) > 0.1, tx, 0.0), np.where(h > 0.1, x, 0.0)),
        (pyet.F(np.add, tx, h), x + h),
        (pyet.F(lambda a, b: a * b, h, tx), h * x),
        (pyet.exp(pyet.asarray(h)) * tx, np.exp(h) * x),
        (pyet.asarray(k) * tx + h, k * x + h),
        (tx * h + pyet.asarray(k), x * h + k),
        (pyet.power(tx, h), np.power(x, h)),
    ]
    with np.errstate(invalid="ignore"):
        for e, want in cases:
            for _ in range(3):
                np.testing.assert_array_equal(np.asarray(pyet.evaluate(e)), want)


def test_import_from_the_source_folder_says_what_is_wrong():
    src = pathlib.Path(__file__).parents[1]
    if not (src / "pyet" / "__init__.py").is_file() or \
            list((src / "pyet" / "_core").glob("core*.so")):
        pytest.skip("no uncompiled source folder beside the tests")
    code = f"import sys; sys.path.insert(0, {str(src)!r}); import pyet"
    run = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True)
    assert run.returncode != 0
    assert "pyet's compiled modules are not in" in run.stderr
    assert "circular import" not in run.stderr
