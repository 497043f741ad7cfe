"""Recurrent layers: GRUStep (PyTorch's GRUCell equations and gate order) and
Recurrent, which runs a step layer over a sequence and back through time."""

import math

from pyet._core import core
from pyet._nodes.grad import vjp
from pyet._nodes.views import concatenate, index, reshape, stack
from pyet.nn._layer import Layer, zeros_tree
from pyet.nn._policy import Policy
from pyet.nn._store import checkpoint, store

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

    def _cell(self, gi, hidden):
        """The step from the input gates' values ``gi`` (N, 3*hidden): its
        output, the hidden gates' tree ``h W_hh + b_hh``, and what the
        backward reads (the stored gates r, z, n, the hidden part of n's
        pre-activation, the stored state)."""
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
        if self.bias:
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
        gi_tree = step._input_gates(xs)
        gi_all = store(gi_tree)
        states, saved = [], []
        for t in range(steps):
            gi = index(gi_all, (slice(t * rows, (t + 1) * rows),))
            out, gh_tree, kept = step._cell(gi, h)
            saved.append((gh_tree, kept))
            h = checkpoint(out)  # (see _forward)
            states.append(h)
        return {"output": stack(states, 0), "hidden": h}, ("gru", xs, gi_tree, saved)

    def _backward(self, saved, grads):
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
        _, xs, gi_tree, steps = saved
        step, p = self.step, self.step._params
        g_out, carry = grads["output"], grads["hidden"]
        dgi, dgh, hs = [], [], []
        g = store(index(g_out, len(steps) - 1) + carry)
        for t in reversed(range(len(steps))):
            gh_tree, (r, z, n, gh_n, h) = steps[t]
            # the gates' gradients by hand (PyTorch's GRU backward), reading
            # the stored gates: the chain rule through sigmoid and tanh would
            # evaluate them again from their inputs
            d_an = store(g * (1 - z) * (1 - n * n))
            d_az = g * (h - n) * (z * (1 - z))
            d_ar = d_an * gh_n * (r * (1 - r))
            # each behind a checkpoint: the joins over all steps below would
            # otherwise be trees of 3*T pieces, wider than the engine takes in
            # one piece (MAX_LEAVES), cut up and evaluated again by every
            # statement that reads them
            d_gi = checkpoint(concatenate([d_ar, d_az, d_an], 1))
            d_gh = checkpoint(concatenate([d_ar, d_az, d_an * r], 1))
            # through the hidden gates' product, per step: the next step back
            # reads the state
            (d_h_gates,) = vjp(gh_tree, [h], d_gh)
            carry = g * z + d_h_gates
            # the previous step's gradient in the same pass
            g = checkpoint(carry + index(g_out, t - 1) if t else carry)
            dgi.append(d_gi)
            dgh.append(d_gh)
            hs.append(h)
        out = {}
        d_gi_all = store(concatenate(dgi[::-1], 0))
        wrt = ([xs] if self._feedback else []) + (
            [p["W_ih"]] + ([p["b_ih"]] if step.bias else []) if step.updatable else [])
        parts = vjp(gi_tree, wrt, d_gi_all)
        if self._feedback:
            out = {"input": reshape(parts.pop(0), g_out.shape[:2] + (xs.shape[1],)),
                   "hidden": g}
        if step.updatable:
            names = ["W_ih", "b_ih"] if step.bias else ["W_ih"]
            found = dict(zip(names, parts, strict=True))
            # the hidden weights' gradient: one product over every step's state
            hs_all, d_gh_all = concatenate(hs[::-1], 0), store(concatenate(dgh[::-1], 0))
            gh_all = core.dot(hs_all, p["W_hh"])
            names = ["W_hh", "b_hh"] if step.bias else ["W_hh"]
            if step.bias:
                gh_all = gh_all + p["b_hh"]
            found.update(zip(names, vjp(gh_all, [p[n] for n in names], d_gh_all), strict=True))
            for name in p:  # in the parameters' order, as the step's own backward
                step._accumulate(name, found[name])
        return out

    def __repr__(self):
        return f"Recurrent({self.step!r})"
