"""A subtree with a costly op or a user function computed on fewer elements
than its pass (``A + exp(b)`` of a row ``b``, ``A * tanh(c)`` of a column) is
computed once into scratch, as NumPy's eager ufuncs compute it (engine.pxi
hoist_small; in plans, share_subtrees' Shared nodes).  Values against NumPy,
and bit for bit against the same trees computed element by element
(core.set_hoist_saved(-1)); errors, aliasing, plans and gradients."""

import warnings

import numpy as np
import pytest
from conftest import pyet_threads

import pyet
from pyet._core import core

SENTINEL = 0xA5


def _trees(A, b, c):
    # (name, pyet tree builder, NumPy reference) over A (n, m), a row b (m,), a column c (n, 1)
    return [
        ("A + exp(b)", lambda: A + pyet.exp(b), lambda a, b, c: a + np.exp(b)),
        ("A * tanh(c)", lambda: A * pyet.tanh(c), lambda a, b, c: a * np.tanh(c)),
        ("A*sin(b) + cos(c)", lambda: A * pyet.sin(b) + pyet.cos(c),
         lambda a, b, c: a * np.sin(b) + np.cos(c)),
        ("where(A > 0, exp(b), A)", lambda: pyet.where(A > 0, pyet.exp(b), A),
         lambda a, b, c: np.where(a > 0, np.exp(b), a)),
        ("exp(b + sin(b)) * A - log1p(abs(c))",
         lambda: pyet.exp(b + pyet.sin(b)) * A - pyet.log1p(pyet.abs(c)),
         lambda a, b, c: np.exp(b + np.sin(b)) * a - np.log1p(np.abs(c))),
    ]


def _framed(shape, dtype, layout):
    # a destination inside a sentinel-filled buffer: (buffer, view)
    isz = np.dtype(dtype).itemsize
    n = int(np.prod(shape))
    buf = np.full((2 * n + 64) * isz, SENTINEL, np.uint8)
    body = buf[32 * isz:(32 + 2 * n) * isz].view(dtype)
    if layout == "C":
        return buf, body[:n].reshape(shape)
    if layout == "F":
        return buf, body[:n].reshape(shape[::-1]).T
    return buf, body[::2].reshape(shape)  # step2


def _outside(buf, out):
    mask = np.ones(buf.size, bool)
    isz = out.itemsize
    start = out.__array_interface__["data"][0] - buf.__array_interface__["data"][0]
    idx = start + np.indices(out.shape).reshape(out.ndim, -1).T @ np.array(out.strides)
    for k in range(isz):
        mask[idx + k] = False
    return buf[mask]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(300, 200), (5000, 3), (4, 3000), (70, 70)])
@pytest.mark.parametrize("layout", ["C", "F", "F leaves", "step2"])
@pytest.mark.parametrize("tree", range(5))
def test_hoisted_trees_equal_numpy_and_element_by_element(dtype, shape, layout, tree):
    rng = np.random.default_rng(tree)
    a = rng.standard_normal(shape).astype(dtype)
    if layout == "F leaves":  # (dst and A in Fortran order: rows along the first axis)
        a = np.asfortranarray(a)
    b = rng.uniform(-2, 2, shape[1]).astype(dtype)
    c = rng.uniform(-2, 2, (shape[0], 1)).astype(dtype)
    name, build, ref = _trees(*map(pyet.asarray, (a, b, c)))[tree]
    dst_layout = "F" if layout == "F leaves" else layout
    buf, out = _framed(shape, dtype, dst_layout)
    # rows and columns of passes in rows of at most half a block, dst and A
    # alike in C or in Fortran order (or dst's rows strided, A in C order),
    # are the pass's to compute once (packed rows: chunk_invariant,
    # plan_columns): nothing hoisted there; every other case hoists
    block = core.get_block_size()
    rows_in_pass = (layout in ("C", "step2") and 2 * shape[1] <= block) or (
        layout == "F leaves" and 2 * shape[0] <= block)
    before = core.set_hoist_saved(0)
    try:
        pyet.stats(reset=True)
        pyet.asarray(out)[...] = build()
        assert (pyet.stats()["scratch_bytes"] > 0) != rows_in_pass
        core.set_hoist_saved(-1)
        ref_buf, ref_out = _framed(shape, dtype, dst_layout)
        pyet.asarray(ref_out)[...] = build()
    finally:
        core.set_hoist_saved(before)
    np.testing.assert_array_equal(buf, ref_buf)  # the same bits, sentinels kept
    assert (_outside(buf, out) == SENTINEL).all()
    tol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(out, ref(a, b, c), rtol=tol, atol=tol)


def test_costly_subtree_computed_once_into_scratch():
    # the row's exp is one scratch array of the row's size; off: none
    a, b = np.ones((500, 400)), np.linspace(0, 1, 400)
    out = np.empty_like(a)
    A, B, Out = pyet.asarray(a), pyet.asarray(b), pyet.asarray(out)
    pyet.stats(reset=True)
    Out[...] = A + pyet.exp(B)
    assert pyet.stats()["scratch_bytes"] == b.nbytes
    before = core.set_hoist_saved(-1)
    try:
        pyet.stats(reset=True)
        Out[...] = A + pyet.exp(B)
        assert pyet.stats()["scratch_bytes"] == 0
    finally:
        core.set_hoist_saved(before)
    # a subtree as large as the pass is fused, not hoisted
    pyet.stats(reset=True)
    Out[...] = pyet.exp(A) + B
    assert pyet.stats()["scratch_bytes"] == 0
    # too little work saved (HOIST_SAVED_NS): fused
    small = pyet.asarray(np.ones((4, 400)))  # (1200 elements saved: 0.55 us of exp)
    pyet.stats(reset=True)
    pyet.evaluate(small + pyet.exp(B))
    assert pyet.stats()["scratch_bytes"] == 0


def test_user_function_called_on_the_small_operand_once():
    seen = []

    def fn(x):
        seen.append(x.size)
        return np.sin(x)

    a, b = np.ones((300, 200)), np.linspace(0, 1, 200)
    out = np.empty_like(a)
    pyet.asarray(out)[...] = pyet.asarray(a) * pyet.F(fn, pyet.asarray(b))
    np.testing.assert_allclose(out, a * np.sin(b))
    assert sum(seen) == b.size


def test_errors_raised_before_dst_is_written():
    # exp overflows in the row: raised by its own pass, dst untouched (NumPy's
    # np.exp(b) temporary raises before out is written too)
    a, b = np.ones((400, 300)), np.full(300, 1000.0)
    out = np.full((400, 300), 7.0)
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            np.add(a, np.exp(b), out=out)
        with pytest.raises(FloatingPointError):
            pyet.asarray(out)[...] = pyet.asarray(a) + pyet.exp(pyet.asarray(b))
    assert (out == 7.0).all()


def test_errors_reported_once():
    calls = []
    a, b = np.ones((400, 300)), np.full(300, 1000.0)
    out = np.empty_like(a)
    with np.errstate(all="call", call=lambda kind, flag: calls.append(kind)):
        pyet.asarray(out)[...] = pyet.asarray(a) + pyet.exp(pyet.asarray(b))
    assert calls == ["overflow"]
    assert np.isinf(out).all()


def test_destination_read_by_the_hoisted_subtree():
    # the row read from dst itself: computed before dst is written (NumPy's order)
    d = np.random.default_rng(1).standard_normal((300, 200))
    want = d + np.exp(d[7])
    D = pyet.asarray(d)
    D[...] = D + pyet.exp(D[7])
    np.testing.assert_allclose(d, want, rtol=1e-13, atol=1e-15)


def test_plan_reads_the_row_a_statement_before_wrote():
    # statement 2 reads exp of the row statement 1 writes: the value after it
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((300, 200)), rng.standard_normal(200)
    b0, out = b.copy(), np.empty_like(a)
    A, B, Out = pyet.asarray(a), pyet.asarray(b), pyet.asarray(out)
    plan = pyet.EvalPlan()
    plan.assign(B, B * 0.5)
    plan.assign(Out, A + pyet.exp(B))
    plan.run()
    np.testing.assert_array_equal(b, b0 * 0.5)
    np.testing.assert_allclose(out, a + np.exp(b0 * 0.5), rtol=1e-13, atol=1e-15)


def test_kept_plan_replays_with_the_values_of_the_time():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((300, 200)), rng.standard_normal(200)
    out1, out2 = np.empty_like(a), np.empty_like(a)
    A, B = pyet.asarray(a), pyet.asarray(b)
    plan = pyet.EvalPlan()
    plan.assign(out1, A + pyet.exp(B))
    plan.assign(out2, A * pyet.tanh(B) - pyet.exp(B))
    for _ in range(3):
        b[...] = rng.standard_normal(200)
        plan.run(keep=True)
        np.testing.assert_allclose(out1, a + np.exp(b), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(out2, a * np.tanh(b) - np.exp(b), rtol=1e-13, atol=1e-13)


def test_gradients_equal_element_by_element():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((300, 200)), rng.standard_normal(200)

    def run():
        A, B = pyet.asarray(a), pyet.asarray(b)
        value, grads = pyet.value_and_grad(pyet.sum(A * pyet.exp(B) + pyet.tanh(B)), [A, B])
        return [np.array(value)] + [np.array(g) for g in grads]

    got = run()
    before = core.set_hoist_saved(-1)
    try:
        want = run()
    finally:
        core.set_hoist_saved(before)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    np.testing.assert_allclose(got[2], (a * np.exp(b)).sum(0) + 300 * (1 - np.tanh(b) ** 2),
                               rtol=1e-10)


def test_two_threads_equal_one():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2000, 700)), rng.standard_normal(700)
    outs = []
    for n in (1, 2):
        out = np.empty_like(a)
        with pyet_threads(n):
            pyet.asarray(out)[...] = pyet.asarray(a) * pyet.sin(pyet.asarray(b))
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])


def test_explain_says_what_is_computed_once():
    A, B = pyet.asarray(np.ones((300, 600))), pyet.asarray(np.ones(600))
    out = np.empty((300, 600))
    text = pyet.explain(A + pyet.exp(B), out=out)
    assert "computed once (600 elements, the pass 180000)" in text
    before = core.set_hoist_saved(-1)
    try:
        assert "computed once" not in pyet.explain(A + pyet.exp(B), out=out)
    finally:
        core.set_hoist_saved(before)
    # a row of 200 into C order: the packed pass computes it once a chunk
    A, B = pyet.asarray(np.ones((300, 200))), pyet.asarray(np.ones(200))
    assert "computed once" not in pyet.explain(A + pyet.exp(B), out=np.empty((300, 200)))
    # ... but not into Fortran order from a C-ordered A (no packed rows): hoisted
    text = pyet.explain(A + pyet.exp(B), out=np.empty((300, 200), order="F"))
    assert "computed once (200 elements, the pass 60000)" in text
    # Fortran order throughout, rows of 200 along the first axis: the pass's
    # (B, one element a row there, and a column of 200 alike)
    AF, C = pyet.asarray(np.ones((200, 300), order="F")), pyet.asarray(np.ones((200, 1)))
    for tree in (AF + pyet.exp(C), AF + pyet.exp(pyet.asarray(np.ones(300))),
                 AF * pyet.sin(pyet.asarray(np.ones((1, 300)))) + pyet.cos(C)):
        assert "computed once" not in pyet.explain(tree, out=np.empty((200, 300), order="F"))
    # ... but rows over half a block along it, or a dst in C order: hoisted
    AF, C = pyet.asarray(np.ones((3000, 20), order="F")), pyet.asarray(np.ones((3000, 1)))
    assert "computed once (3000 elements" in pyet.explain(
        AF + pyet.exp(C), out=np.empty((3000, 20), order="F"))
    assert "computed once (3000 elements" in pyet.explain(
        AF + pyet.exp(C), out=np.empty((3000, 20)))


def test_no_warning_where_numpy_gives_none():
    a, b = np.ones((400, 300)), np.linspace(-1, 1, 300)
    out = np.empty_like(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pyet.asarray(out)[...] = pyet.asarray(a) + pyet.log1p(pyet.asarray(b) + 1)
    np.testing.assert_allclose(out, a + np.log1p(b + 1), rtol=1e-13)


def test_nodes_record_their_smallest_costly_subtree():
    # Expr._hoist_min: 1 + the fewest elements of a costly subtree (0: none);
    # the engine walks a tree for hoisting only where it is small enough
    A, b = pyet.asarray(np.ones((300, 200))), pyet.asarray(np.ones(200))
    assert (A * 2 + b)._hoist_min == 0
    assert pyet.exp(b)._hoist_min == 201
    assert (A + pyet.exp(b))._hoist_min == 201
    assert (pyet.exp(A) + b)._hoist_min == 60001
    assert (pyet.exp(A) * pyet.tanh(b) + 1)._hoist_min == 201
    assert (A * pyet.F(np.sin, b))._hoist_min == 201
    assert (A + pyet.sum(pyet.exp(b)))._hoist_min == 0  # (a special node's operands: its own)


def test_nodes_record_their_work_per_element():
    # Expr._ns: the ns per element of the costly ops here and below
    # (rewrite.ELEMENT_NS, by compute dtype); cheap ops and leaves add none
    ns = core.ELEMENT_NS
    A32, A = pyet.asarray(np.ones((3, 4), np.float32)), pyet.asarray(np.ones((3, 4)))
    assert (A * 2 + 1)._ns == 0
    assert pyet.exp(A32)._ns == ns["exp"][0]
    assert pyet.exp(A)._ns == ns["exp"][1]
    assert (pyet.tanh(A) * pyet.sin(A) + 1)._ns == pytest.approx(ns["tanh"][1] + ns["sin"][1])
    assert pyet.F(np.sin, A)._ns == core.PYFUNC_ELEMENT_NS
    ints = pyet.asarray(np.arange(12).reshape(3, 4))
    assert (ints // 3)._ns == core.INT_ELEMENT_NS
    assert (A + pyet.sum(pyet.exp(A)))._ns == 0  # (a special node's operands: its own)


@pytest.mark.parametrize("layout", ["F", "row gaps"])
def test_the_floor_weighs_the_ops_not_the_bytes(layout):
    # 64 x 64: float64 tanh of a column saves ~4 us (hoisted, though its
    # results are 32 KiB), float32 exp of a column ~0.5 us (fused); into
    # C order (or rows strided), or Fortran order from Fortran-ordered
    # leaves, the packed pass computes columns itself (plan_columns): here A
    # is in C order, dst in Fortran order or every other row of a wider array
    for dtype, fn, hoists in [(np.float64, pyet.tanh, True), (np.float32, pyet.exp, False),
                              (np.float64, pyet.sin, True), (np.float32, pyet.sqrt, False)]:
        a, c = np.ones((64, 64), dtype), np.linspace(0, 1, 64, dtype=dtype).reshape(64, 1)
        out = np.empty((64, 64), dtype, order="F") if layout == "F" else \
            np.empty((128, 64), dtype)[::2]
        pyet.stats(reset=True)
        pyet.asarray(out)[...] = pyet.asarray(a) * fn(pyet.asarray(c))
        assert (pyet.stats()["scratch_bytes"] == c.nbytes) == hoists, (dtype, fn)
        np.testing.assert_allclose(out, a * getattr(np, fn.__name__)(c), rtol=1e-6)
