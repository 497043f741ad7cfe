"""Optimizers whose ``step(grads)`` registers each parameter's update as fused
statements in an EvalPlan, and ``train_step``: forward, loss, backward and
every update evaluated as one plan."""

import numpy as np

from pyet._core import core
from pyet._core.core import Tensor
from pyet._evalplan import EvalPlan
from pyet._kernels.nn import one_hot_rows as _one_hot_rows
from pyet._tensor_api import empty, zeros
from pyet.nn._layer import Layer, operand
from pyet.nn._policy import Policy

_fmt = core.fmt_shape


def _params_dict(params, where):
    if isinstance(params, dict):
        items = list(params.items())
    else:
        items = [(str(i), p) for i, p in enumerate(params)]
    if not items:
        raise ValueError(f"{where}: no parameters to optimize")
    for name, p in items:
        if not isinstance(p, Tensor) or p.dtype.kind != "f":
            raise TypeError(f"{where}: parameter {name!r} must be a float pyet.Tensor")
        if not p.numpy().flags.writeable:
            raise ValueError(f"{where}: parameter {name!r} is read-only")
    return dict(items)


class Optimizer:
    """Base of SGD and Adam: per-parameter state and the update statements.

    Hyperparameters that change between steps (the learning rate, Adam's bias
    corrections) are 0-d tensors read when the plan runs, so the statements
    are built once per set of parameters and reused.
    """

    def __init__(self, params, lr):
        self.params = _params_dict(params, type(self).__name__)
        if not lr > 0:
            raise ValueError(f"{type(self).__name__}: lr must be > 0, got {lr}")
        self._scalars = {}
        self._grad_bufs = {}
        self._cache = {}
        self._train_steps = {}
        self.lr = lr

    def _scalar(self, key, dtype):
        """A 0-d tensor of ``dtype`` (one per key and dtype)."""
        k = (key, np.dtype(dtype))
        if k not in self._scalars:
            self._scalars[k] = core.tensor(np.zeros((), dtype))
        return self._scalars[k]

    def _set(self, key, value):
        """Write ``value`` into the 0-d tensors ``key`` of every parameter dtype."""
        for p in self.params.values():
            self._scalar(key, p.dtype).numpy()[...] = value

    @property
    def lr(self):
        return self._lr

    @lr.setter
    def lr(self, value):
        self._lr = float(value)
        self._lr_changed()

    def _lr_changed(self):
        self._set("lr", self._lr)

    def _grad_buffer(self, name):
        if name not in self._grad_bufs:
            p = self.params[name]
            self._grad_bufs[name] = empty(p.shape, p.dtype)
        return self._grad_bufs[name]

    def step(self, grads, plan=None):
        """Register the update of every parameter in ``grads`` and (without
        ``plan``) run it.

        Parameters
        ----------
        grads : dict of {name: Expr or array}
            From ``model.grad_collect()``; names as in ``params``.  A gradient
            tree is first evaluated into a buffer (it reads parameters other
            updates write); a Tensor is read as it is.
        plan : EvalPlan, optional
            Where to register the statements; run here when not given.
        """
        for name, g in grads.items():
            if name not in self.params:
                raise KeyError(f"{type(self).__name__}.step: gradient {name!r} names no "
                               f"parameter (parameters: {', '.join(self.params)})")
            if tuple(np.shape(g)) != self.params[name].shape:
                raise ValueError(f"{type(self).__name__}.step: gradient {name!r} has shape "
                                 f"{_fmt(tuple(np.shape(g)))}, the parameter "
                                 f"{_fmt(self.params[name].shape)}")
        run = plan is None
        if run:
            plan = EvalPlan()
        bufs = {}
        for name, g in grads.items():
            g = operand(g)
            if isinstance(g, Tensor):
                bufs[name] = g
            else:
                bufs[name] = self._grad_buffer(name)
                plan.assign(bufs[name], g)
        self._register_updates(plan, bufs)
        if run:
            plan.run()

    def _register_updates(self, plan, bufs):
        self._advance()
        for dst, e, op in self._update_statements(bufs):
            plan.assign(dst, e, op)

    def _update_statements(self, bufs):
        """The update statements (dst, expr, op) reading gradients ``bufs``,
        built once per set of gradient buffers."""
        key = tuple((n, id(b)) for n, b in bufs.items())
        statements = self._cache.get(key)
        if statements is None:
            statements = []
            for name, g in bufs.items():
                statements += self._update(name, self.params[name], g)
            self._cache = {key: statements}
        return statements

    def _advance(self):
        """Per-step scalars (bias corrections) before the plan runs."""

    def zero_state(self):
        """Forget momentum / moment estimates and the step count."""
        for t in self._state_tensors():
            t.numpy()[...] = 0


class SGD(Optimizer):
    """Stochastic gradient descent, PyTorch's update:
    ``g += weight_decay * w``; with momentum ``buf = momentum * buf + g`` and
    ``w -= lr * buf``, else ``w -= lr * g`` (seed 000's ``w -= eta * (g + lam * w)``).

    Parameters
    ----------
    params : dict of {name: Tensor} or sequence of Tensor
        ``model.parameters()``.
    lr : float
    momentum : float, default 0
    weight_decay : float, default 0
    """

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0):
        if momentum < 0 or weight_decay < 0:
            raise ValueError(f"SGD: momentum and weight_decay must be >= 0, got {momentum}, "
                             f"{weight_decay}")
        self.momentum, self.weight_decay = float(momentum), float(weight_decay)
        super().__init__(params, lr)
        self.momentum_buffers = ({n: zeros(p.shape, p.dtype) for n, p in self.params.items()}
                                 if self.momentum else {})

    def _state_tensors(self):
        return list(self.momentum_buffers.values())

    def _update(self, name, w, g):
        lr = self._scalar("lr", w.dtype)
        if self.weight_decay:
            g = g + self.weight_decay * w
        if not self.momentum:
            return [(w, lr * g, "-=")]
        buf = self.momentum_buffers[name]
        return [(buf, self.momentum * buf + g, "="), (w, lr * buf, "-=")]


class Adam(Optimizer):
    """Adam, PyTorch's update (L2 ``weight_decay`` added to the gradient):
    ``m = b1*m + (1-b1)*g``, ``v = b2*v + (1-b2)*g*g``,
    ``w -= lr/(1-b1**t) * m / (sqrt(v)/sqrt(1-b2**t) + eps)``.

    Parameters
    ----------
    params : dict of {name: Tensor} or sequence of Tensor
    lr : float, default 1e-3
    betas : (float, float), default (0.9, 0.999)
    eps : float, default 1e-8
    weight_decay : float, default 0
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        b1, b2 = (float(b) for b in betas)
        if not (0 <= b1 < 1 and 0 <= b2 < 1):
            raise ValueError(f"Adam: betas must be in [0, 1), got {betas}")
        if eps < 0 or weight_decay < 0:
            raise ValueError(f"Adam: eps and weight_decay must be >= 0, got {eps}, "
                             f"{weight_decay}")
        self.betas, self.eps, self.weight_decay = (b1, b2), float(eps), float(weight_decay)
        self.t = 0
        super().__init__(params, lr)
        self.exp_avg = {n: zeros(p.shape, p.dtype) for n, p in self.params.items()}
        self.exp_avg_sq = {n: zeros(p.shape, p.dtype) for n, p in self.params.items()}

    def _state_tensors(self):
        self.t = 0
        return list(self.exp_avg.values()) + list(self.exp_avg_sq.values())

    def _advance(self):
        self.t += 1
        b1, b2 = self.betas
        self._set("step_size", self._lr / (1 - b1 ** self.t))
        self._set("inv_sqrt_bc2", 1 / np.sqrt(1 - b2 ** self.t))

    def _update(self, name, w, g):
        b1, b2 = self.betas
        step_size = self._scalar("step_size", w.dtype)
        inv = self._scalar("inv_sqrt_bc2", w.dtype)
        if self.weight_decay:
            g = g + self.weight_decay * w
        m, v = self.exp_avg[name], self.exp_avg_sq[name]
        return [(m, b1 * m + (1 - b1) * g, "="),
                (v, b2 * v + (1 - b2) * (g * g), "="),
                (w, step_size * m / (core.apply("sqrt", (v,)) * inv + self.eps), "-=")]


# ------------------------------------------------------------ training step

class TrainStep:
    """One training step of ``model`` under ``loss`` with ``optimizer``, as one
    EvalPlan: the loss, the gradient of every parameter and every update.

    The trees are built once per input signature (shapes and dtypes) over input
    buffers the data is copied into, and reused on later calls: forward
    activations are shared with the backward pass (special nodes -- products,
    softmax, stored activations -- are computed once per run).  The step is
    one kept EvalPlan: its first run is recorded and every later step replays
    it (no trees built, registered, grouped or lowered again).  Integer targets
    become one-hot rows.  Build a new TrainStep after changing the model.
    """

    def __init__(self, model, loss, optimizer, output="output", loss_input="input"):
        for what, obj, cls in (("model", model, Layer), ("loss", loss, Layer),
                               ("optimizer", optimizer, Optimizer)):
            if not isinstance(obj, cls):
                raise TypeError(f"train_step: {what} must be a pyet.nn.{cls.__name__}, got "
                                f"{type(obj).__name__}")
        if output not in model.output_ports:
            raise KeyError(f"train_step: the model has no output port {output!r}")
        if loss_input not in loss.input_ports:
            raise KeyError(f"train_step: the loss has no input port {loss_input!r}")
        self.model, self.loss, self.optimizer = model, loss, optimizer
        self.output, self.loss_input = output, loss_input
        loss._configure(Policy(), None, True)  # the loss feeds its gradient back to the model
        self._built = {}

    def _split(self, inputs):
        model_in = {k: v for k, v in inputs.items() if k in self.model.input_ports}
        loss_in = {k: v for k, v in inputs.items() if k not in self.model.input_ports}
        return model_in, loss_in

    def _build(self, model_in, loss_in, outputs):
        # fills: (input name, its buffer's array, the class numbers when it
        # takes class indices as one-hot rows, else None)
        bufs, fills = {}, []
        for k, v in model_in.items():
            a = np.asarray(v)
            t = empty(a.shape, a.dtype if a.dtype.kind == "f" else np.float32)
            bufs[k] = t
            fills.append((k, t.numpy(), None))
        out = self.model.forward(**bufs)
        y = out[self.output]
        loss_bufs = {}
        for k, v in loss_in.items():
            a = np.asarray(v)
            if a.dtype.kind in "iub" and a.ndim == 1 and y.ndim == 2:  # class indices
                t = empty(y.shape, y.dtype)
                fills.append((k, t.numpy(), np.arange(y.shape[1])))
            else:
                t = empty(a.shape, a.dtype)
                fills.append((k, t.numpy(), None))
            loss_bufs[k] = t
        value = self.loss.forward(**{self.loss_input: y}, **loss_bufs)["output"]
        g = self.loss.backward(output=core.tensor(np.ones((), value.dtype)))
        self.model.backward(**{self.output: g[self.loss_input]},
                            **{p: _zero_like(v) for p, v in out.items() if p != self.output})
        grads = self.model.grad_collect()
        self.model.neutral_invariant()
        self.loss.neutral_invariant()
        if not grads:
            raise ValueError("train_step: the model has no updatable parameters (build it with "
                             "policy=pyet.nn.Policy(update=True))")
        names = [n for n in self.optimizer.params if n in grads]
        missing = sorted(set(grads) - set(self.optimizer.params))
        if missing:
            raise KeyError(f"train_step: gradients of {', '.join(missing)} have no parameter "
                           "in the optimizer")
        gbufs = {n: self.optimizer._grad_buffer(n) for n in names}
        # one kept plan: its first run is recorded, later steps replay it
        plan = EvalPlan()
        # the loss into a buffer of its own: a kept plan writes it in place, no
        # new Tensor handed out per step
        h = np.empty(value.shape, value.dtype)
        plan.assign(h, value)
        handles = {k: plan.register(v) for k, v in out.items()} if outputs else None
        for n in names:
            plan.assign(gbufs[n], grads[n])
        for dst, e, op in self.optimizer._update_statements(gbufs):
            plan.assign(dst, e, op)
        return fills, plan, h, handles

    def __call__(self, inputs, return_outputs=False):
        arrays = {k: v if type(v) is np.ndarray else np.asarray(v) for k, v in inputs.items()}
        key = (tuple([(k, a.shape, a.dtype.str) for k, a in sorted(arrays.items())]),
               bool(return_outputs))
        built = self._built.get(key)
        if built is None:
            built = self._built[key] = self._build(*self._split(inputs), return_outputs)
        fills, plan, h, handles = built
        for k, dst, classes in fills:  # class indices first: a bad one raises before any update
            if classes is None:
                continue
            a = arrays[k]
            try:
                if _one_hot_rows(a, dst):  # checked and written in one compiled pass
                    continue
            except IndexError:
                raise IndexError(f"train_step: target index out of range for {dst.shape[1]} "
                                 "classes") from None
            lo = np.minimum.reduce(a) if a.size else 0
            if lo < -dst.shape[1] or (a.size and np.maximum.reduce(a) >= dst.shape[1]):
                raise IndexError(f"train_step: target index out of range for {dst.shape[1]} "
                                 "classes")
            if lo >= 0:  # (bool and unsigned targets too)
                np.equal(a[:, None], classes, out=dst, casting="unsafe")
            else:
                dst[...] = 0
                dst[np.arange(a.shape[0]), a] = 1
        for k, dst, classes in fills:
            if classes is None:
                np.copyto(dst, arrays[k], casting="same_kind")
        self.optimizer._advance()
        plan.run(keep=True)
        loss_value = float(h)
        if handles is None:
            return loss_value
        return loss_value, {k: hv.value.numpy() for k, hv in handles.items()}


def _zero_like(e):
    from pyet.nn._layer import zeros_tree

    return zeros_tree(e.shape, e.dtype)


def train_step(model, loss, inputs, optimizer, return_outputs=False):
    """Forward, loss, backward and every parameter update as ONE EvalPlan.

    Parameters
    ----------
    model : Layer
        Its ``output`` port feeds the loss's ``input`` port.
    loss : Layer
        E.g. ``CrossEntropy()``.
    inputs : dict
        The model's input ports (e.g. ``input``) and the loss's other ports
        (e.g. ``target``: class indices or probabilities), as arrays.
    optimizer : Optimizer
    return_outputs : bool, default False
        Also return the model's outputs (evaluated in the same plan).

    Returns
    -------
    float, or (float, dict of ndarray)
        The loss before the update (and the outputs).

    Notes
    -----
    The trees are built on the first call for each input signature and cached
    on the optimizer (see :class:`TrainStep`).
    """
    key = (id(model), id(loss))
    step = optimizer._train_steps.get(key) if isinstance(optimizer, Optimizer) else None
    if step is None:
        step = TrainStep(model, loss, optimizer)
        optimizer._train_steps[key] = step
    return step(inputs, return_outputs)
