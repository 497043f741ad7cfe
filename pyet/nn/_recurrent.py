"""Recurrent layers: GRUStep (PyTorch's GRUCell equations and gate order) and
Recurrent, which runs a step layer over a sequence and back through time."""

import itertools
import math

import numpy as np

from pyet._core import core
from pyet._core.core import Special, SpecialNode, Tensor
from pyet._nodes.reductions import sum as _sum
from pyet._nodes.views import concatenate, index, reshape, stack
from pyet.nn._layer import Layer, zeros_tree
from pyet.nn._policy import Policy
from pyet.nn._store import Checkpoint, Store, checkpoint, store

_fmt = core.fmt_shape


def _act(name, e):
    return core.apply(name, (e,))


class GRUStep(Layer):
    """One step of a GRU (PyTorch's GRUCell): with gates in the order r, z, n,

    ``r = sigmoid(x W_ir + b_ir + h W_hr + b_hr)``,
    ``z = sigmoid(x W_iz + b_iz + h W_hz + b_hz)``,
    ``n = tanh(x W_in + b_in + r * (h W_hn + b_hn))``,
    ``output = (1 - z) * n + z * h``.

    Ports: ``input`` (N, input_size), ``hidden`` (N, hidden_size) -> ``output``.
    Parameters: ``W_ih`` (input, 3*hidden), ``W_hh`` (hidden, 3*hidden), ``b_ih``,
    ``b_hh`` (3*hidden,): PyTorch's ``weight_ih``/``weight_hh`` transposed.
    """

    input_ports = ("input", "hidden")

    def __init__(self, input_size, hidden_size, bias=True, policy=None):
        super().__init__(policy)
        if not (isinstance(input_size, int) and input_size > 0 and isinstance(hidden_size, int)
                and hidden_size > 0):
            raise ValueError(f"GRUStep: sizes must be positive ints, got {input_size}, "
                             f"{hidden_size}")
        self.input_size, self.hidden_size = input_size, hidden_size
        self.bias = bool(bias) and self.policy.bias
        h3 = 3 * hidden_size
        bound = 1.0 / math.sqrt(hidden_size)
        self._param("W_ih", (input_size, h3), input_size, h3, bound)
        self._param("W_hh", (hidden_size, h3), hidden_size, h3, bound)
        if self.bias:
            self._param("b_ih", (h3,), input_size, h3, bound)
            self._param("b_hh", (h3,), hidden_size, h3, bound)

    def _check(self, input_shape, hidden_shape):
        n_, hs = self.input_size, self.hidden_size
        if len(input_shape) != 2 or input_shape[1] != n_:
            raise ValueError(f"GRUStep: input must be (N, {n_}), got {_fmt(input_shape)}")
        if hidden_shape != (input_shape[0], hs):
            raise ValueError(f"GRUStep: hidden must be ({input_shape[0]}, {hs}), got "
                             f"{_fmt(hidden_shape)}")

    def _input_gates(self, input):
        """``input W_ih + b_ih``: every gate's input part (rows of inputs)."""
        gi = core.dot(store(input), self._params["W_ih"])
        return gi + self._params["b_ih"] if self.bias else gi

    def _cell(self, gi, hidden, in_bias=None):
        """The step from the input gates' values ``gi`` (N, 3*hidden): its
        output, the hidden gates' tree ``h W_hh + b_hh``, and what the
        backward reads (the stored gates r, z, n, the hidden part of n's
        pre-activation, the stored state).  ``in_bias``: ``(b_ih[:2H] +
        b_hh[:2H], b_ih)`` when ``gi`` does not hold the input bias (it is then
        added in the gates' passes)."""
        p, hs = self._params, self.hidden_size
        h = store(hidden)
        gh_tree = core.dot(h, p["W_hh"])
        # computed once, then sliced into gates (an index of a tree would
        # evaluate the tree, product included, for each gate); the bias is
        # added in the gates' passes, not in a pass of its own
        gh = store(gh_tree)
        gates = [(slice(None), slice(k * hs, (k + 1) * hs)) for k in range(3)]
        gi_r, gi_z, gi_n = (index(gi, g) for g in gates)
        gh_r, gh_z, gh_n = (index(gh, g) for g in gates)
        if in_bias is not None:
            b_rz, b_ih = in_bias
            gh_r, gh_z = (v + index(b_rz, g[1:]) for v, g in zip((gh_r, gh_z), gates,
                                                                 strict=False))
            gh_n = gh_n + index(p["b_hh"], gates[2][1:])
            gi_n = gi_n + index(b_ih, gates[2][1:])
        elif self.bias:
            b = p["b_hh"]
            gh_r, gh_z, gh_n = (v + index(b, g[1:]) for v, g in zip((gh_r, gh_z, gh_n), gates,
                                                                     strict=True))
        r = store(_act("sigmoid", gi_r + gh_r))
        z = store(_act("sigmoid", gi_z + gh_z))
        n = store(_act("tanh", gi_n + r * gh_n))
        return (1 - z) * n + z * h, gh_tree, (r, z, n, gh_n, h)

    def compute(self, input, hidden):
        self._check(input.shape, hidden.shape)
        return {"output": self._cell(store(self._input_gates(input)), hidden)[0]}

    def __repr__(self):
        return f"GRUStep({self.input_size}, {self.hidden_size}, bias={self.bias})"


class Recurrent(Layer):
    """A step layer run over a sequence (time first), backward through time.

    Ports: ``input`` (T, N, ...) and ``hidden`` (the initial state) ->
    ``output`` (T, N, ...: every step's state, stacked) and ``hidden`` (the
    last state), like ``torch.nn.GRU``'s (output, h_n) for one layer.

    The states are chained through checkpoints (values held outside the
    tree), so differentiate through :meth:`backward`, not ``pyet.grad``.

    Parameters
    ----------
    step : Layer
        With input ports ``input`` and ``hidden`` and output port ``output``
        (e.g. :class:`GRUStep`); it always feeds back (the hidden state's
        gradient flows from step to step).
    policy : Policy, optional
    """

    input_ports = ("input", "hidden")
    output_ports = ("output", "hidden")

    def __init__(self, step, policy=None):
        super().__init__(policy)
        if not isinstance(step, Layer):
            raise TypeError(f"Recurrent: step must be a pyet.nn.Layer, got "
                            f"{type(step).__name__}")
        if set(step.input_ports) != {"input", "hidden"} or "output" not in step.output_ports:
            raise ValueError(f"Recurrent: the step layer {step!r} must have input ports "
                             "input, hidden and an output port output")
        self.step = step
        step._rename(f"{self.name}.step")
        self._configure(Policy(), None, False)

    def _configure(self, inherited, override, need_feedback):
        policy = self._resolve(inherited, override, need_feedback)
        passed = Policy(**{k: v for k, v in policy._given.items() if k != "feedback_output"})
        self.step._configure(passed, None, True)
        if not (self.step.updatable or self._feedback):  # no gradient needed at all
            self.step._configure(passed, None, False)

    @property
    def updatable(self):
        return self.step.updatable

    def _rename(self, name):
        self.name = name
        self.step._rename(f"{name}.step")

    def _walk(self, prefix=""):
        yield prefix, self
        yield from self.step._walk(f"{prefix}step.")

    def _forward(self, inputs):
        x, h = inputs["input"], inputs["hidden"]
        if x.ndim < 2 or x.shape[0] == 0:
            raise ValueError(f"Recurrent: input must be (T, N, ...) with T >= 1, got "
                             f"{_fmt(x.shape)}")
        if isinstance(self.step, GRUStep) and x.ndim == 3:
            call = self._template_call(x, h)
            if call is not None:
                return call.forward_outputs(), ("template", call)
            return self._gru_forward(x, h)
        states = []
        for t in range(x.shape[0]):
            # each state behind a checkpoint: the next step reads it from
            # several gates, and the engine walks trees without memo
            h = checkpoint(self.step.forward(input=index(x, t), hidden=h)["output"])
            states.append(h)
        return {"output": stack(states, 0), "hidden": h}, (x.shape, x.dtype, len(states))

    def _gru_forward(self, x, h):
        # as PyTorch's GRU: the input gates of every step in ONE product of
        # (T*N, input) rows, each step reading its rows; the backward gives
        # the weights' gradients as one product each over all steps
        step, (steps, rows) = self.step, x.shape[:2]
        step._check(x.shape[1:], h.shape)
        xs = store(reshape(x, (steps * rows, x.shape[2])))
        # the input bias is added in each step's gate passes (with the hidden
        # one for r and z): no pass over all steps' gates of its own
        gi_tree = core.dot(xs, step._params["W_ih"])
        gi_all = store(gi_tree)
        in_bias = None
        if step.bias:
            b_ih, b_hh = step._params["b_ih"], step._params["b_hh"]
            rz = (slice(0, 2 * step.hidden_size),)
            in_bias = (store(index(b_ih, rz) + index(b_hh, rz)), b_ih)
        states, saved = [], []
        for t in range(steps):
            gi = index(gi_all, (slice(t * rows, (t + 1) * rows),))
            out, gh_tree, kept = step._cell(gi, h, in_bias)
            saved.append((gh_tree, kept))
            h = checkpoint(out)  # (see _forward)
            states.append(h)
        return {"output": stack(states, 0), "hidden": h}, ("gru", xs, gi_tree, saved)

    def _backward(self, saved, grads):
        if saved[0] == "template":
            call = saved[1]
            if call.takes(grads):
                out, found = call.backward_outputs(grads)
                for name, g in found.items():
                    self.step._accumulate(name, g)
                return out
            # gradients the template was not built for: the plain trees
            saved = self._gru_forward(call.x, call.h)[1]
        if saved[0] == "gru":
            return self._gru_backward(saved, grads)
        shape, dtype, steps = saved
        g_out, carry = grads["output"], grads["hidden"]
        gx = []
        for t in reversed(range(steps)):
            g = store(index(g_out, t) + carry)
            res = self.step.backward(output=g)
            carry = checkpoint(res["hidden"])
            if self._feedback:
                gx.append(res.get("input", zeros_tree(shape[1:], dtype)))
        if not self._feedback:
            return {}
        return {"input": stack(gx[::-1], 0), "hidden": carry}

    def _gru_backward(self, saved, grads):
        out, found = self._gru_backward_trees(saved, grads)
        for name, g in found.items():
            self.step._accumulate(name, g)
        return out

    def _gru_backward_trees(self, saved, grads):
        """The backward's trees: ``{input port: gradient}`` and the step's
        parameter gradients (in the parameters' order), not accumulated."""
        _, xs, _, steps = saved
        step, p = self.step, self.step._params
        g_out, carry = grads["output"], grads["hidden"]
        dgi, dgh, hs = [], [], []  # per step: d_an, d_gh, the state
        two = (slice(None), slice(0, 2 * step.hidden_size))
        # W_hh transposed, copied once per evaluation: a product with a
        # C-ordered operand, not a transposed one, per step (OpenBLAS's sgemm
        # with B transposed took twice as long at (32, 384) x (384, 128))
        w_hh_t = _copy(core.transpose(p["W_hh"]))
        g = store(index(g_out, len(steps) - 1) + carry)
        for t in reversed(range(len(steps))):
            _, (r, z, n, gh_n, h) = steps[t]
            # the gates' gradients by hand (PyTorch's GRU backward), reading
            # the stored gates: the chain rule through sigmoid and tanh would
            # evaluate them again from their inputs
            d_an = checkpoint(g * (1 - z) * (1 - n * n))  # (one leaf in the join below)
            d_az = g * (h - n) * (z * (1 - z))
            d_ar = d_an * gh_n * (r * (1 - r))
            # behind a checkpoint: the joins over all steps below would
            # otherwise be trees of 3*T pieces, wider than the engine takes in
            # one piece (MAX_LEAVES), cut up and evaluated again by every
            # statement that reads them
            d_gh = checkpoint(concatenate([d_ar, d_az, d_an * r], 1))
            # through the hidden gates' product, per step: the next step back
            # reads the state
            d_h_gates = core.dot(d_gh, w_hh_t)
            carry = g * z + d_h_gates
            # the previous step's gradient in the same pass
            g = checkpoint(carry + index(g_out, t - 1) if t else carry)
            dgi.append(d_an)
            dgh.append(d_gh)
            hs.append(h)
        out = {}
        # the input gates' gradient differs from the hidden gates' in n's
        # part only (d_an, not d_an * r): the products over all steps read r's
        # and z's part from the join of d_gh and n's from the join of d_an,
        # each product split in two (no join of the input gates' gradient)
        d_gh_all = concatenate(dgh[::-1], 0)
        d_rz, d_n = index(d_gh_all, two), concatenate(dgi[::-1], 0)
        if self._feedback:
            w_ih_t = _copy(core.transpose(p["W_ih"]))  # (as w_hh_t)
            d_xs = (core.dot(d_rz, index(w_ih_t, two[1:]))
                    + core.dot(d_n, index(w_ih_t, (slice(two[1].stop, None),))))
            out = {"input": reshape(d_xs, g_out.shape[:2] + (xs.shape[1],)), "hidden": g}
        if step.updatable:
            xs_t = core.transpose(xs)
            found = {"W_ih": concatenate([core.dot(xs_t, d_rz), core.dot(xs_t, d_n)], 1)}
            # the hidden weights' gradient: one product over every step's state
            found["W_hh"] = core.dot(core.transpose(concatenate(hs[::-1], 0)), d_gh_all)
            if step.bias:
                # r's and z's parts of both biases' gradients are equal
                found["b_hh"] = _sum(d_gh_all, 0)
                found["b_ih"] = concatenate([index(found["b_hh"], two[1:]), _sum(d_n, 0)], 0)
            # in the parameters' order, as the step's own backward
            return out, {name: found[name] for name in p}
        return out, {}

    # ------------------------------------------------ trees built once

    def _template_call(self, x, h):
        """The trees of this forward (and its backward) as nodes over a
        template built once per signature, or None when the signature does
        not take one (see _Template)."""
        if not (_plain_leaf(x, True) and _plain_leaf(h, False)):
            return None
        step = self.step
        params = tuple(step._params.values())
        key = (x.shape, x.dtype, h.shape, h.dtype, step.bias, step.updatable, self._feedback,
               self._needs_backward(), tuple(map(id, params)))
        templates = self.__dict__.setdefault("_templates", {})
        tpl = templates.pop(key, None)
        if tpl is None or any(a is not b for a, b in zip(tpl.params, params, strict=True)):
            tpl = _Template(self, x, h)
            while len(templates) >= 4:  # a few signatures, least recently used dropped
                templates.pop(next(iter(templates)))
        templates[key] = tpl
        return _Call(tpl, x, h)

    def __repr__(self):
        return f"Recurrent({self.step!r})"


def _copy(e):
    """``e``'s value in C-ordered scratch, once per evaluation (store() keeps
    a leaf, a transposed view included, as it is)."""
    return core.node(Store(), (e,), e.shape, e.dtype)


def _plain_leaf(e, contiguous):
    # a leaf whose views the template's are (reshape views only C order)
    if not isinstance(e, Tensor) or e.dtype.kind != "f":
        return False
    return not contiguous or e.numpy().flags.c_contiguous


_SERIAL = itertools.count()


class _Template:
    """A GRU Recurrent's forward and backward trees for one signature (input
    and state shapes and dtypes, the step's parameters and policy), built
    once over placeholder leaves.  Each call's trees are nodes (_Replayed)
    over its own leaves: a plan of a known structure replays its recorded
    schedule without the trees being built again; anything that evaluates
    them otherwise gets the template with the call's leaves put in (the
    trees a fresh build gives)."""

    def __init__(self, rec, x, h):
        self.serial = next(_SERIAL)
        self.params = tuple(rec.step._params.values())
        X = core.tensor(np.zeros(x.shape, x.dtype))
        H = core.tensor(np.zeros(h.shape, h.dtype))
        outs, saved = rec._gru_forward(X, H)
        self.roots = dict(outs)
        self.placeholders = [X, H]
        self.backward_names, self.grad_names = [], []
        if rec._needs_backward():
            o, hn = outs["output"], outs["hidden"]
            G = core.tensor(np.zeros(o.shape, o.dtype))
            GH = core.tensor(np.zeros(hn.shape, hn.dtype))
            self.placeholders += [G, GH]
            out, found = rec._gru_backward_trees(saved, {"output": G, "hidden": GH})
            for k, e in out.items():
                self.roots["d " + k] = e
                self.backward_names.append(k)
            for k, e in found.items():
                self.roots["grad " + k] = e
                self.grad_names.append(k)


class _Call:
    """One forward (and backward) of a template: the call's leaves, and the
    template's trees with them put in, built the first time anything asks."""

    def __init__(self, tpl, x, h):
        self.tpl, self.x, self.h = tpl, x, h
        self.leaves = [x, h]
        self.memo = {}

    def _node(self, name, nleaves):
        e = self.tpl.roots[name]
        args = tuple(self.leaves[:nleaves]) + self.tpl.params
        return core.node(_Replayed(self, name), args, e.shape, e.dtype)

    def forward_outputs(self):
        return {k: self._node(k, 2) for k in ("output", "hidden")}

    def takes(self, grads):
        """Whether the gradients fit the template's placeholders."""
        G, GH = self.tpl.placeholders[2:] or (None, None)
        if G is None:
            return False
        g, gh = grads["output"], grads["hidden"]
        return (_plain_leaf(g, False) and _plain_leaf(gh, False) and g.shape == G.shape
                and g.dtype == G.dtype and gh.shape == GH.shape and gh.dtype == GH.dtype)

    def backward_outputs(self, grads):
        self.leaves[2:] = [grads["output"], grads["hidden"]]
        self.memo = {}  # (new placeholders bound)
        out = {k: self._node("d " + k, 4) for k in self.tpl.backward_names}
        return out, {k: self._node("grad " + k, 4) for k in self.tpl.grad_names}

    def tree(self, name):
        """The template's tree ``name`` over this call's leaves."""
        # (before the backward, the gradients' placeholders have no leaf)
        leaves = dict(zip(map(id, self.tpl.placeholders), self.leaves, strict=False))
        return _put_in(self.tpl.roots[name], leaves, self.memo)


def _put_in(root, leaves, memo):
    """``root`` with each placeholder leaf (by id, in ``leaves``) and each view
    of one replaced by the call's leaf and the same views of it; every other
    node rebuilt where a child changed (a checkpoint with its expression and a
    new token), each once (``memo``, shared by one call's trees)."""
    stack = [(root, False)]
    while stack:
        e, ready = stack.pop()
        if id(e) in memo:
            continue
        kernel = e._kernel if isinstance(e, SpecialNode) else None
        kids = list(e._args) + ([kernel.expr] if isinstance(kernel, Checkpoint) else [])
        if not ready:
            stack.append((e, True))
            stack.extend((c, False) for c in kids if id(c) not in memo)
            continue
        if isinstance(e, Tensor):
            base = e._base if e._base is not None else e
            new = leaves.get(id(base))
            if new is None:
                new = e
            else:
                for kind, arg in e._mapping:
                    new = core.view_of_leaf(new, kind, arg, core.VIEWS[kind](new.numpy(), arg))
        elif isinstance(kernel, Checkpoint):
            inner = memo[id(kernel.expr)]
            new = e if inner is kernel.expr else checkpoint(inner)
        elif not e._args:
            new = e
        else:
            args = tuple(memo[id(c)] for c in e._args)
            if all(a is b for a, b in zip(args, e._args, strict=True)):
                new = e
            elif kernel is not None:
                new = core.node(kernel, args, e.shape, e.dtype)
            else:
                new = core.with_args(e, args)
        memo[id(e)] = new
    return memo[id(root)]


class _Replayed(Special):
    """One of a template's trees for one call (see _Template): its children
    are the call's leaves and the parameters, its structure the template's
    serial number and the tree's name."""

    __slots__ = ("call", "root")
    name = "recurrent"
    records_into = True  # into() only assigns: a kept plan records its work

    def __init__(self, call, root):
        self.call, self.root = call, root

    def params(self):
        return (self.call.tpl.serial, self.root)

    def describe(self):
        return [repr(self.root)]

    def value(self, args):
        e = self.call.tpl.roots[self.root]
        out = np.empty(e.shape, e.dtype)
        core.assign(out, self.call.tree(self.root))
        return out

    def into(self, dst, args):
        core.assign(dst, self.call.tree(self.root))

    def vjp(self, node, g):
        """None: differentiate through the layer's backward."""
        return (None,) * len(node._args)
