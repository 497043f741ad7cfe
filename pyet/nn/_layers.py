"""Elementary layers: each forward builds lazy trees; backward comes from
pyet's gradient rules (``pyet.vjp``), except the view layers (the view's
adjoint rule) and CrossEntropy (the fused softmax + NLL gradient)."""

import math

import numpy as np

from pyet._core import core
from pyet._core.core import Expr, Tensor
from pyet._nodes.grad import _view_adjoint
from pyet._nodes.nn import choose_row_element
from pyet._nodes.reductions import sum as _sum
from pyet._nodes.softmax import log_softmax, softmax, softmax_xent_grad
from pyet._nodes.views import reshape
from pyet.nn._layer import Layer, operand
from pyet.nn._store import store

_fmt = core.fmt_shape


def _features(value, cls, what):
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise TypeError(f"{cls}: {what} must be an integer, got {value!r}") from None
    if n != value or n <= 0:
        raise ValueError(f"{cls}: {what} must be a positive integer, got {value!r}")
    return n


class _Binary(Layer):
    input_ports = ("left", "right")


class Add(_Binary):
    """``output = left + right``."""

    def compute(self, left, right):
        return {"output": left + right}


class Sub(_Binary):
    """``output = left - right``."""

    def compute(self, left, right):
        return {"output": left - right}


class Multiply(_Binary):
    """``output = left * right`` (elementwise)."""

    def compute(self, left, right):
        return {"output": left * right}


class Dot(_Binary):
    """``output = left @ right`` (matrix product)."""

    def compute(self, left, right):
        return {"output": core.dot(store(left), store(right))}


class Interpolate(Layer):
    """``output = weight * left + (1 - weight) * right`` (MetaNN's Interpolate)."""

    input_ports = ("weight", "left", "right")

    def compute(self, weight, left, right):
        return {"output": weight * left + (1 - weight) * right}


class Abs(Layer):
    """``output = abs(input)`` (gradient 0 at 0)."""

    def compute(self, input):
        return {"output": core.apply("absolute", (input,))}


class Sigmoid(Layer):
    """``output = 1 / (1 + exp(-input))``."""

    def compute(self, input):
        return {"output": core.apply("sigmoid", (input,))}


class Tanh(Layer):
    """``output = tanh(input)``."""

    def compute(self, input):
        return {"output": core.apply("tanh", (input,))}


class ReLU(Layer):
    """``output = max(input, 0)`` (gradient 0 at 0, as PyTorch)."""

    def compute(self, input):
        return {"output": core.apply("relu", (input,))}

    def _forward(self, inputs):
        outputs = self.compute(**inputs)
        if self._feedback:
            # stored: the backward reads it (output > 0 exactly where input > 0)
            # instead of evaluating the input's tree a second time
            outputs = {"output": store(outputs["output"])}
        return outputs, (inputs, outputs)

    def _backward(self, saved, grads):
        inputs, outputs = saved
        x, y, g = inputs["input"], outputs["output"], grads["output"]
        if not self._feedback or x.dtype.kind != "f" or not (x.dtype == y.dtype == g.dtype) \
                or g.shape != x.shape:
            return super()._backward(saved, grads)
        return {"input": core.where(y > 0, g, 0)}


class Softmax(Layer):
    """Softmax along ``dim``."""

    def __init__(self, dim=-1, policy=None):
        super().__init__(policy)
        self.dim = dim

    def compute(self, input):
        return {"output": softmax(input, self.dim)}


class LogSoftmax(Softmax):
    """Log-softmax along ``dim``."""

    def compute(self, input):
        return {"output": log_softmax(input, self.dim)}


def _target(target, logits, cls):
    """A target as int indices (an ndarray, checked) or a float tree of the
    input's shape (probabilities, e.g. one-hot rows)."""
    if isinstance(target, Tensor) and target.dtype.kind in "iu":
        target = target.numpy()
    if isinstance(target, Expr):
        if target.dtype.kind != "f":
            raise TypeError(f"{cls}: a target expression must be float (probabilities); give "
                            "class indices as an integer array")
        if target.shape != logits.shape:
            raise ValueError(f"{cls}: target of shape {_fmt(target.shape)} does not match the "
                             f"input's {_fmt(logits.shape)}")
        return target
    t = np.asarray(target)
    if t.dtype.kind in "iu":
        if t.shape != logits.shape[:1]:
            raise ValueError(f"{cls}: target indices of shape {_fmt(t.shape)} do not match the "
                             f"input's batch of {logits.shape[0]}")
        return t
    return _target(operand(t.astype(logits.dtype, copy=False)), logits, cls)


def _check_2d(x, cls):
    if x.ndim != 2:
        raise ValueError(f"{cls}: input must be (batch, classes), got shape {_fmt(x.shape)}")
    if x.dtype.kind != "f":
        raise TypeError(f"{cls}: input must be float, got {x.dtype}")


class NLLLoss(Layer):
    """Negative log-likelihood, averaged over the batch (PyTorch's NLLLoss).

    ``input``: log-probabilities (batch, classes); ``target``: class indices
    (batch,) or probabilities of the input's shape.  ``output``: 0-d.
    """

    input_ports = ("input", "target")
    _index_ports = ("target",)

    def _loss(self, logp, t):
        n = logp.shape[0]
        if isinstance(t, np.ndarray):
            return _sum(choose_row_element(logp, t)) * (-1.0 / n)
        return _sum(t * logp) * (-1.0 / n)

    def compute(self, input, target):
        _check_2d(input, type(self).__name__)
        t = _target(target, input, type(self).__name__)
        return {"output": self._loss(input, t)}


class CrossEntropy(NLLLoss):
    """Softmax + NLL loss on logits, averaged over the batch (PyTorch's
    CrossEntropyLoss), with the fused gradient ``(softmax(x) - onehot) / N``
    (``softmax(x) * sum(t) - t`` for probability targets)."""

    def _forward(self, inputs):
        x = inputs["input"]
        _check_2d(x, type(self).__name__)
        t = _target(inputs["target"], x, type(self).__name__)
        # the logits once, read by log_softmax here and softmax in backward (a
        # product at the root of their tree would be written straight into each)
        x = store(x)
        logp = log_softmax(x, 1)
        return {"output": self._loss(logp, t)}, (logp, t)

    def _backward(self, saved, grads):
        if not self._feedback:
            return {}
        # one row pass reading the forward's log_softmax node (computed once
        # in a plan): c * (exp(logp) * sum(t) - t), any targets
        logp, t = saved
        return {"input": softmax_xent_grad(logp, t, grads["output"] * (1.0 / logp.shape[0]), 1)}


class Weight(Layer):
    """``output = input @ W``, W of shape (in_features, out_features)."""

    def __init__(self, in_features, out_features, policy=None):
        super().__init__(policy)
        self.in_features = _features(in_features, "Weight", "in_features")
        self.out_features = _features(out_features, "Weight", "out_features")
        self._param("W", (self.in_features, self.out_features), self.in_features,
                    self.out_features)

    def compute(self, input):
        return {"output": core.dot(store(input), self._params["W"])}

    def __repr__(self):
        return f"{type(self).__name__}({self.in_features}, {self.out_features})"


class Bias(Layer):
    """``output = input + b``, b of shape (features,) (broadcast over rows)."""

    def __init__(self, features, policy=None):
        super().__init__(policy)
        self.features = _features(features, "Bias", "features")
        self._param("b", (self.features,), self.features, self.features)

    def compute(self, input):
        return {"output": input + self._params["b"]}

    def __repr__(self):
        return f"Bias({self.features})"


class Linear(Layer):
    """``output = input @ W + b`` (MetaNN's layout: W is (in, out), b (out,)).

    Parameters
    ----------
    in_features, out_features : int
    bias : bool, default True
        Off also when the policy says ``bias=False``.
    policy : Policy, optional
    """

    def __init__(self, in_features, out_features, bias=True, policy=None):
        super().__init__(policy)
        self.in_features = _features(in_features, "Linear", "in_features")
        self.out_features = _features(out_features, "Linear", "out_features")
        self.bias = bool(bias) and self.policy.bias
        bound = 1.0 / math.sqrt(self.in_features)
        self._param("W", (self.in_features, self.out_features), self.in_features,
                    self.out_features, bound)
        if self.bias:
            self._param("b", (self.out_features,), self.in_features, self.out_features, bound)

    def compute(self, input):
        y = core.dot(store(input), self._params["W"])
        return {"output": y + self._params["b"] if self.bias else y}

    def __repr__(self):
        return f"Linear({self.in_features}, {self.out_features}, bias={self.bias})"


class _View(Layer):
    """A layer that is a view: backward is the view's adjoint rule."""

    def _backward(self, saved, grads):
        if not self._feedback:
            return {}
        shape, kind, arg = saved
        g = core.as_expr(grads["output"])
        return {"input": _view_adjoint(kind, arg, g, shape)}


class Permute(_View):
    """``output = input.transpose(dims)`` (a view)."""

    def __init__(self, dims, policy=None):
        super().__init__(policy)
        self.dims = tuple(int(d) for d in dims)

    def _forward(self, inputs):
        x = inputs["input"]
        if sorted(d % max(x.ndim, 1) for d in self.dims) != list(range(x.ndim)):
            raise ValueError(f"Permute: dims {self.dims} is not a permutation of the "
                             f"{x.ndim} axes of shape {_fmt(x.shape)}")
        dims = tuple(d % x.ndim for d in self.dims)
        return {"output": core.transpose(x, dims)}, (x.shape, "transpose", dims)


class Reshape(_View):
    """``output = input.reshape(shape)`` (one -1 allowed; a view)."""

    def __init__(self, shape, policy=None):
        super().__init__(policy)
        self.shape = tuple(int(n) for n in shape)

    def _forward(self, inputs):
        x = inputs["input"]
        y = reshape(x, self.shape)
        return {"output": y}, (x.shape, "reshape", y.shape)


class Flatten(_View):
    """Axes ``start_dim`` to the last merged into one (PyTorch's Flatten)."""

    def __init__(self, start_dim=1, policy=None):
        super().__init__(policy)
        self.start_dim = int(start_dim)

    def _forward(self, inputs):
        x = inputs["input"]
        d = self.start_dim % max(x.ndim, 1)
        shape = x.shape[:d] + (int(np.prod(x.shape[d:], dtype=np.int64)),)
        return {"output": reshape(x, shape)}, (x.shape, "reshape", shape)


class ParamSource(Layer):
    """A parameter as an output (no inputs): ``output = value``, of ``shape``."""

    input_ports = ()

    def __init__(self, shape, policy=None):
        super().__init__(policy)
        self.shape = tuple(int(n) for n in shape)
        fan = int(self.shape[0]) if self.shape else 1
        self._param("value", self.shape, fan, int(self.shape[-1]) if self.shape else 1)

    def compute(self):
        return {"output": self._params["value"]}

    def _backward(self, saved, grads):
        if self.updatable:
            g = core.as_expr(grads["output"])
            self._accumulate("value", g if g.shape == self.shape else
                             _view_adjoint("broadcast_to", None, g, self.shape))
        return {}


class ValueSource(Layer):
    """A constant as an output (no inputs, no gradient)."""

    input_ports = ()

    def __init__(self, value, policy=None):
        super().__init__(policy)
        self.value = operand(np.asarray(value) if not isinstance(value, Expr) else value)

    def compute(self):
        return {"output": self.value}

    def _needs_backward(self):
        return False


ACTIVATION_LAYERS = {"sigmoid": Sigmoid, "tanh": Tanh, "relu": ReLU}
