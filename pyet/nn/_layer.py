"""The Layer base class: named ports, a stack of saved forward state,
parameters, gradients accumulated by backward, init, save and load."""

import os
import zipfile

import numpy as np

from pyet._core import core
from pyet._core.core import Expr
from pyet._evalplan import evaluate_all
from pyet._nodes.grad import vjp
from pyet._nodes.views import broadcast_to
from pyet._tensor_api import asarray, empty
from pyet.nn._init import DEFAULT, Initializer, _TorchDefault
from pyet.nn._policy import as_policy


def zeros_tree(shape, dtype):
    """A lazy tree of zeros (a 0-d zero read with stride 0: no memory)."""
    return broadcast_to(core.tensor(np.zeros((), dtype)), shape)


def operand(value):
    """A port's value as an expression (an ndarray is viewed, not copied)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, np.ndarray):
        return asarray(value)
    return core.as_expr(value)


class _Spec:
    """A parameter's fans (for initializers) and PyTorch's default bound."""

    __slots__ = ("shape", "fan_in", "fan_out", "bound")

    def __init__(self, shape, fan_in, fan_out, bound):
        self.shape, self.fan_in, self.fan_out, self.bound = shape, fan_in, fan_out, bound


class Layer:
    """Base class of every layer (MetaNN's layer interface).

    ``forward(**inputs)`` takes one lazy tree (or array) per input port and
    returns ``{output port: lazy tree}``; ``backward(**grads)`` takes one
    gradient per output port and returns ``{input port: lazy tree}`` (empty
    unless the layer feeds back) while accumulating each parameter's gradient
    (when the layer updates).  Each forward pushes what backward needs on a
    stack, so several forwards (time steps) are undone by backwards in reverse
    order; ``neutral_invariant()`` raises when state is left over.

    Parameters
    ----------
    policy : Policy, optional
        The layer's behaviour (see :class:`Policy`).
    """

    input_ports = ("input",)
    output_ports = ("output",)
    _index_ports = ()  # ports that take integer indices, passed on as they are

    def __init__(self, policy=None):
        self._own_policy = as_policy(policy, type(self).__name__)
        self.policy = self._own_policy
        self._feedback = self.policy.feedback_output
        self.name = type(self).__name__
        self._stack = []
        self._params = {}
        self._specs = {}
        self._grads = {}

    # ----------------------------------------------------------- policies

    def _resolve(self, inherited, override, need_feedback):
        """This layer's policy from its parent's, its own and the parent's
        override for it; ``need_feedback``: a layer upstream needs gradients."""
        policy = inherited.merged(self._own_policy).merged(override)
        if need_feedback and policy.given("feedback_output") and not policy.feedback_output:
            raise ValueError(
                f"{self.name}: {policy!r} turns feedback off, but the layer is downstream of an "
                f"updatable layer whose gradients must pass through it (sublayer policy "
                f"{override!r}, layer policy {self._own_policy!r})")
        self.policy = policy
        self._feedback = policy.feedback_output or need_feedback
        return policy

    def _configure(self, inherited, override, need_feedback):
        policy = self._resolve(inherited, override, need_feedback)
        for name, t in list(self._params.items()):
            if t.dtype != policy.dtype:
                self._params[name] = self._new_param(self._specs[name], policy)

    @property
    def updatable(self):
        """True when backward accumulates parameter gradients."""
        return bool(self.policy.update and self._params)

    def _needs_backward(self):
        return self._feedback or self.updatable

    # ----------------------------------------------------------- ports

    def _check_ports(self, what, given, ports, kind):
        for k in given:
            if k not in ports:
                raise KeyError(f"{self.name}.{what}: unknown {kind} port {k!r} "
                               f"(ports: {', '.join(ports) or 'none'})")
        for k in ports:
            if k not in given:
                raise KeyError(f"{self.name}.{what}: missing {kind} port {k!r}")

    def forward(self, **inputs):
        """The layer's outputs as lazy trees, ``{output port: Expr}``.

        Raises
        ------
        KeyError
            On an unknown, missing or extra input port (naming it and the layer).
        """
        self._check_ports("forward", inputs, self.input_ports, "input")
        inputs = {k: (v if k in self._index_ports else operand(v)) for k, v in inputs.items()}
        outputs, saved = self._forward(inputs)
        if self._needs_backward():
            self._stack.append(saved)
        return outputs

    __call__ = forward

    def backward(self, **grads):
        """Undo the latest forward: ``{input port: gradient tree}`` (empty
        unless the layer feeds back); parameter gradients are accumulated for
        :meth:`grad_collect` when the layer updates.

        Raises
        ------
        KeyError
            On an unknown, missing or extra output port.
        RuntimeError
            When no forward pass is left to undo.
        """
        self._check_ports("backward", grads, self.output_ports, "output")
        if not self._needs_backward():
            return {}
        if not self._stack:
            raise RuntimeError(f"{self.name}.backward: no forward pass left to undo "
                               "(each backward undoes one forward, latest first)")
        saved = self._stack.pop()
        return self._backward(saved, {k: operand(g) for k, g in grads.items()})

    def _forward(self, inputs):
        outputs = self.compute(**inputs)
        return outputs, (inputs, outputs)

    def _backward(self, saved, grads):
        """By pyet's gradient rules: the vjp of each output with respect to the
        float inputs (feedback) and the parameters (update)."""
        inputs, outputs = saved
        in_names = [k for k in self.input_ports
                    if self._feedback and k not in self._index_ports
                    and inputs[k].dtype.kind == "f"]
        p_names = list(self._params) if self.updatable else []
        targets = [inputs[k] for k in in_names] + [self._params[p] for p in p_names]
        if not targets:
            return {}
        total = None
        for port, g in grads.items():
            parts = vjp(outputs[port], targets, g)
            total = parts if total is None else [a + b for a, b in zip(total, parts, strict=True)]
        for p, gp in zip(p_names, total[len(in_names):], strict=True):
            self._accumulate(p, gp)
        return dict(zip(in_names, total[:len(in_names)], strict=True))

    def compute(self, **inputs):
        """The forward trees of an elementary layer (subclasses define it)."""
        raise NotImplementedError(f"{type(self).__name__} defines neither compute nor _forward")

    def _accumulate(self, name, g):
        prev = self._grads.get(name)
        self._grads[name] = g if prev is None else prev + g

    def neutral_invariant(self):
        """Raise RuntimeError when a forward pass has not been undone by a
        backward (MetaNN's NeutralInvariant)."""
        for name, layer in self._walk():
            if layer._stack:
                raise RuntimeError(f"{name or layer.name}: {len(layer._stack)} forward pass(es) "
                                   "not undone by backward")

    def clear(self):
        """Drop saved forward state and accumulated gradients (after forwards
        used for inference only)."""
        for _, layer in self._walk():
            layer._stack.clear()
            layer._grads.clear()

    def evaluate(self, **inputs):
        """Forward and evaluate now: ``{output port: Tensor}``; no state is kept."""
        depth = {id(lay): len(lay._stack) for _, lay in self._walk()}
        try:
            out = self.forward(**inputs)
            values = evaluate_all(list(out.values()))
        finally:
            for _, lay in self._walk():
                del lay._stack[depth[id(lay)]:]
        return dict(zip(out, values, strict=True))

    # ----------------------------------------------------------- parameters

    def _param(self, name, shape, fan_in, fan_out, bound=None):
        spec = _Spec(tuple(shape), fan_in, fan_out, bound)
        self._specs[name] = spec
        self._params[name] = self._new_param(spec, self.policy)
        return self._params[name]

    def _new_param(self, spec, policy):
        t = empty(spec.shape, policy.dtype)
        init = policy.initializer or DEFAULT
        t.numpy()[...] = _draw(init, spec, np.random.default_rng(), policy.dtype)
        return t

    def _rename(self, name):
        self.name = name

    def _walk(self, prefix=""):
        """(dotted name, layer) of this layer and every sublayer."""
        yield prefix, self

    def parameters(self):
        """``{dotted name: Tensor}`` of every parameter (sublayers' as ``sub.name``)."""
        out = {}
        for prefix, layer in self._walk():
            for name, t in layer._params.items():
                out[prefix + name] = t
        return out

    def grad_collect(self):
        """``{dotted parameter name: gradient tree}`` accumulated by backward
        since the last call, which clears them (MetaNN's GradCollector)."""
        out = {}
        for prefix, layer in self._walk():
            for name, g in layer._grads.items():
                out[prefix + name] = g
            layer._grads = {}
        return out

    def init(self, initializer=None, seed=None):
        """Fill every parameter, in ``parameters()`` order, from one generator.

        Parameters
        ----------
        initializer : Initializer, optional
            For every parameter; by default each layer's policy initializer,
            else PyTorch's default (U(-1/sqrt(fan_in), 1/sqrt(fan_in))).
        seed : int or None
            Seed of ``numpy.random.default_rng``.

        Returns
        -------
        self
        """
        if initializer is not None and not isinstance(initializer, Initializer):
            raise TypeError(f"{self.name}.init: initializer must be a pyet.nn Initializer, got "
                            f"{type(initializer).__name__}")
        rng = np.random.default_rng(seed)
        for _, layer in self._walk():
            init = initializer or layer.policy.initializer or DEFAULT
            for name, t in layer._params.items():
                t.numpy()[...] = _draw(init, layer._specs[name], rng, t.dtype)
        return self

    def save(self, path):
        """Write every parameter to a NumPy ``.npz`` file (keys: dotted names)."""
        np.savez(path, **{k: t.numpy() for k, t in self.parameters().items()})

    def load(self, path):
        """Read parameters written by :meth:`save` (``allow_pickle=False``).

        Every entry is checked (present, no extra ones, same shape, a float or
        integer array) before any parameter is written: on any error nothing
        is loaded.

        Raises
        ------
        ValueError
            On a missing, extra, mis-shaped or non-numeric entry, or a file
            that is not a readable ``.npz``.
        """
        params = self.parameters()
        try:
            archive = np.load(path, allow_pickle=False)
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise ValueError(f"{self.name}.load: {os.fspath(path)!r} is a single "
                                 ".npy array, not an .npz archive of parameters")
            with archive as f:
                names = set(f.files)
                missing = sorted(set(params) - names)
                extra = sorted(names - set(params))
                if missing:
                    raise ValueError(f"{self.name}.load: {os.fspath(path)!r} has no entry for "
                                     f"{', '.join(missing)}; nothing loaded")
                if extra:
                    raise ValueError(f"{self.name}.load: {os.fspath(path)!r} has unexpected "
                                     f"entries {', '.join(extra)}; nothing loaded")
                arrays = {}
                for k, t in params.items():
                    try:
                        a = f[k]
                    except ValueError as exc:  # object arrays need pickle: refused
                        raise ValueError(f"{self.name}.load: entry {k!r} of "
                                         f"{os.fspath(path)!r} cannot be read without pickle "
                                         f"({exc}); nothing loaded") from None
                    if a.shape != t.shape:
                        raise ValueError(f"{self.name}.load: entry {k!r} has shape {a.shape}, "
                                         f"the parameter {t.shape}; nothing loaded")
                    if a.dtype.kind not in "fiu":
                        raise ValueError(f"{self.name}.load: entry {k!r} has dtype {a.dtype}, "
                                         "not a number; nothing loaded")
                    arrays[k] = a
        except (zipfile.BadZipFile, EOFError, OSError) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise ValueError(f"{self.name}.load: {os.fspath(path)!r} is not a readable .npz "
                             f"file ({exc}); nothing loaded") from None
        for k, a in arrays.items():
            params[k].numpy()[...] = a
        return self

    def __repr__(self):
        return f"{type(self).__name__}()"


def _draw(init, spec, rng, dtype):
    if isinstance(init, _TorchDefault):
        return init(spec.shape, spec.fan_in, spec.fan_out, rng, dtype, spec.bound)
    return init(spec.shape, spec.fan_in, spec.fan_out, rng, dtype)


__all__ = ["Layer"]
