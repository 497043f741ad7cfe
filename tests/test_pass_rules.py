"""rewrite.PASS_RULES: an optimizer step registered as three statements runs as
one fused kernel writing every destination, with the bits of running the
statements one by one (and NumPy's), on every layout and with aliasing."""

import numpy as np
import pytest

import pyet
from pyet._core import core, rewrite

B1, B2, LR, EPS = 0.9, 0.999, 1e-3, 1e-8


def adam_bias_corrected(M, V, W, G, t, eps=EPS):
    """The statements of the issue's Adam (and bench_plan's): rule ``adam``."""
    bc1, bc2 = 1 - B1 ** t, 1 - B2 ** t
    return [(M, B1 * M + (1 - B1) * G), (V, B2 * V + (1 - B2) * G * G),
            (W, W - LR * (M / bc1) / (pyet.sqrt(V / bc2) + eps))]


def adam_torch_form(M, V, W, G, t, eps=EPS):
    """pyet.nn.Adam's statements (PyTorch's formula): rule ``adam_torch``."""
    dt = W.dtype
    step = pyet.asarray(np.array(LR / (1 - B1 ** t), dt))
    inv = pyet.asarray(np.array(1 / np.sqrt(1 - B2 ** t), dt))
    return [(M, B1 * M + (1 - B1) * G), (V, B2 * V + (1 - B2) * (G * G)),
            (W, W - step * M / (pyet.sqrt(V) * inv + eps))]


def numpy_bias_corrected(m, v, w, g, t, eps=EPS):
    m[...] = B1 * m + (1 - B1) * g
    v[...] = B2 * v + (1 - B2) * g * g
    w[...] = w - LR * (m / (1 - B1 ** t)) / (np.sqrt(v / (1 - B2 ** t)) + eps)


FORMS = {"adam": adam_bias_corrected, "adam_torch": adam_torch_form}


def run(statements, plan=True):
    if not plan:
        for dst, e in statements:
            dst[...] = e
        return None
    p = pyet.EvalPlan()
    for dst, e in statements:
        p.assign(dst, e)
    text = pyet.explain(p)
    p.run()
    return text


def layout(a, kind):
    return {"C": lambda: a.copy(),
            "F": lambda: np.asfortranarray(a),
            "strided": lambda: np.repeat(a, 3, axis=1)[:, ::3],
            "reversed": lambda: np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1],
            "0-d": lambda: a[0, 0].copy()[()] * np.ones((), a.dtype),
            "empty": lambda: a[:0]}[kind]()


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["C", "F", "strided", "reversed", "0-d", "empty"])
def test_fused_step_has_the_bits_of_the_statements_one_by_one(form, dtype, kind):
    rng = np.random.default_rng(0)
    base = [rng.standard_normal((23, 37)).astype(dtype) for _ in range(4)]
    base[1] = np.abs(base[1])
    outs = []
    for plan in (True, False):
        m, v, w, g = (layout(a, kind) for a in base)
        tensors = [pyet.asarray(a) for a in (m, v, w, g)]
        for t in (1, 2, 3):
            text = run(FORMS[form](*tensors, t), plan)
            if plan and kind not in ("empty", "0-d"):  # 0-d leaves are scalars
                assert f"dst0, dst1, dst2 = {form}[" in text
        outs.append([m, v, w])
    for ours, theirs in zip(*outs, strict=True):
        assert ours.tobytes() == theirs.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_corrected_form_gives_numpys_bits(dtype):
    rng = np.random.default_rng(1)
    m, v, w, g = (rng.standard_normal(1000).astype(dtype) for _ in range(4))
    v = np.abs(v)
    ref = [a.copy() for a in (m, v, w, g)]
    for t in (1, 2):
        run(adam_bias_corrected(*(pyet.asarray(a) for a in (m, v, w, g)), t))
        numpy_bias_corrected(*ref, t)
    for ours, theirs in zip((m, v, w), ref[:3], strict=True):
        assert ours.tobytes() == theirs.tobytes()


def test_a_broadcast_gradient_and_a_later_statement_reading_the_new_values():
    rng = np.random.default_rng(2)
    m, v, w = (rng.standard_normal((16, 9)).astype(np.float32) for _ in range(3))
    v = np.abs(v)
    g = rng.standard_normal(9).astype(np.float32)     # stride 0 along rows
    p = np.zeros((16, 9), np.float32)
    outs = []
    for plan in (True, False):
        arrays = [a.copy() for a in (m, v, w, g, p)]
        M, V, W, G, P = (pyet.asarray(a) for a in arrays)
        statements = adam_bias_corrected(M, V, W, G, 1) + [(P, M * W + V)]
        text = run(statements, plan)
        if plan:
            assert "dst0, dst1, dst2 = adam[" in text
        outs.append(arrays)
    for ours, theirs in zip(*outs, strict=True):
        assert ours.tobytes() == theirs.tobytes()


def test_a_gradient_that_is_the_weight_fuses_and_one_that_is_the_new_m_does_not():
    rng = np.random.default_rng(3)
    m, v, w = (rng.standard_normal(500) for _ in range(3))
    v = np.abs(v)
    for gradient_is, fused in (("w", True), ("m", False)):
        outs = []
        for plan in (True, False):
            arrays = [a.copy() for a in (m, v, w)]
            M, V, W = (pyet.asarray(a) for a in arrays)
            G = {"w": W, "m": M}[gradient_is]
            text = run(adam_bias_corrected(M, V, W, G, 1), plan)
            if plan:
                # statement 1 reads the m statement 0 wrote: not the kernel's g
                assert ("= adam[" in text) == fused
            outs.append(arrays)
        for ours, theirs in zip(*outs, strict=True):
            assert ours.tobytes() == theirs.tobytes()


def test_a_step_with_other_scalars_or_a_different_order_is_not_fused_and_still_right():
    rng = np.random.default_rng(4)
    m, v, w, g = (rng.standard_normal(300) for _ in range(4))
    v = np.abs(v)
    outs = []
    for plan in (True, False):
        arrays = [a.copy() for a in (m, v, w, g)]
        M, V, W, G = (pyet.asarray(a) for a in arrays)
        # v updated first: its statement comes before m's
        statements = [(V, B2 * V + (1 - B2) * G * G), (M, B1 * M + (1 - B1) * G),
                      (W, W - LR * (M / 0.5) / (pyet.sqrt(V / 0.25) + EPS))]
        text = run(statements, plan)
        if plan:
            assert "adam" not in text
        outs.append(arrays)
    for ours, theirs in zip(*outs, strict=True):
        assert ours.tobytes() == theirs.tobytes()


def test_invalid_and_zero_division_warn_as_the_statements_do():
    m = np.ones(64)
    v = np.full(64, -1.0)          # b2*v < 0: sqrt is NaN
    v[:32] = 0.0                   # and sqrt(0) + 0 = 0: m / 0
    g = np.zeros(64)
    outs, caught = [], []
    for plan in (True, False):
        arrays = [a.copy() for a in (m, v, np.ones(64), g)]
        with pytest.warns(RuntimeWarning) as record:
            run(adam_bias_corrected(*(pyet.asarray(a) for a in arrays), 1, eps=0.0), plan)
        caught.append(sorted({str(r.message) for r in record}))
        outs.append(arrays)
    assert caught[0] == caught[1]
    assert any("invalid value" in c for c in caught[0])
    assert any("divide by zero" in c for c in caught[0])
    for ours, theirs in zip(*outs, strict=True):
        assert ours.tobytes() == theirs.tobytes()


def test_two_threads_and_prefetching_passes_give_the_same_bits():
    rng = np.random.default_rng(5)
    n = 300_000
    m, v, w, g = (rng.standard_normal(n).astype(np.float32) for _ in range(4))
    v = np.abs(v)
    p = np.zeros(n, np.float32)
    saved, threads_before = core.get_prefetch(), pyet.get_num_threads()
    outs = []
    try:
        core.set_prefetch(0)        # every pass prefetches (and the fused kernel alone does not)
        for threads, plan in ((2, True), (1, True), (1, False)):
            pyet.set_num_threads(threads)
            arrays = [a.copy() for a in (m, v, w, g, p)]
            M, V, W, G, P = (pyet.asarray(a) for a in arrays)
            for t in (1, 2):
                run(adam_torch_form(M, V, W, G, t), plan)
                run(adam_bias_corrected(M, V, W, G, t) + [(P, P + W)], plan)
            outs.append(arrays)
    finally:
        core.set_prefetch(*saved)
        pyet.set_num_threads(threads_before)
    for other in outs[1:]:
        for ours, theirs in zip(outs[0], other, strict=True):
            assert ours.tobytes() == theirs.tobytes()


def test_nn_adam_runs_the_fused_kernel_with_the_statements_bits():
    from pyet import nn
    rng = np.random.default_rng(6)
    w0 = rng.standard_normal((5, 7)).astype(np.float32)
    grads = [rng.standard_normal((5, 7)).astype(np.float32) for _ in range(3)]
    w = pyet.asarray(w0.copy())
    opt = nn.Adam([w], lr=LR)
    m, v, ref = np.zeros_like(w0), np.zeros_like(w0), w0.copy()
    for t, g in enumerate(grads, 1):
        opt.step({"0": pyet.asarray(g)})
        M, V, W, G = (pyet.asarray(a) for a in (m, v, ref, g))
        run(adam_torch_form(M, V, W, G, t), plan=False)
    assert w.numpy().tobytes() == ref.tobytes()


def test_every_rule_names_a_kernel_and_binds_every_operand():
    for instrs, op_name, order in rewrite.PASS_RULES:
        code = core.OPCODES[op_name]
        for dtype in (np.float32, np.float64):
            assert core.HAS_KERNEL[code][core.DTYPES.index(np.dtype(dtype))]
        bound = {name for ins in instrs for name in ins[1:]}
        assert set(order) <= bound
        assert instrs[-1][1][0] == "D"
        assert all(name in order for ins in instrs for name in ins[1:] if name[0] == "s")
