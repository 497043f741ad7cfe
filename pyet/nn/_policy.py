"""Policies: keyword objects that choose a layer's behaviour (MetaNN's policy
objects and ``PolicyContainer``), merged from a composite layer down to its
sublayers with per-sublayer overrides (MetaNN's ``SubPolicyContainer``)."""

import numpy as np

_DEFAULTS = {
    "update": False,
    "feedback_output": False,
    "initializer": None,
    "activation": "sigmoid",
    "bias": True,
    "dtype": np.dtype(np.float32),
}
ACTIVATIONS = ("sigmoid", "tanh", "relu", "identity")


class Policy:
    """How a layer behaves; every field not given keeps its default.

    Parameters
    ----------
    update : bool, default False
        The layer's parameters get gradients (``grad_collect``) in backward.
    feedback_output : bool, default False
        Backward returns the gradients with respect to the layer's inputs.
        Turned on automatically for a sublayer downstream of an updatable one.
    initializer : Initializer or None
        What ``init()`` uses for this layer's parameters when given none.
    activation : {"sigmoid", "tanh", "relu", "identity"}, default "sigmoid"
        The activation of a SingleLayerPerceptron (and of an MLP's hidden layers).
    bias : bool, default True
        Layers with a bias have one (``Linear(..., bias=False)`` turns it off too).
    dtype : float32 or float64, default float32
        The dtype of the layer's parameters.

    Examples
    --------
    >>> net = pyet.nn.MLP([64, 128, 10], policy=Policy(update=True, activation="relu"),
    ...                   sub_policies={"fc1": Policy(update=False)})
    """

    __slots__ = ("_given",)

    def __init__(self, **fields):
        unknown = sorted(set(fields) - set(_DEFAULTS))
        if unknown:
            raise TypeError(f"Policy: unknown field(s) {', '.join(unknown)}; fields are "
                            f"{', '.join(_DEFAULTS)}")
        for key in ("update", "feedback_output", "bias"):
            if key in fields and not isinstance(fields[key], (bool, np.bool_)):
                raise TypeError(f"Policy: {key} must be a bool, got {fields[key]!r}")
        if "activation" in fields and fields["activation"] not in ACTIVATIONS:
            raise ValueError(f"Policy: activation must be one of {', '.join(ACTIVATIONS)}, "
                             f"got {fields['activation']!r}")
        if "dtype" in fields:
            dt = np.dtype(fields["dtype"])
            if dt not in (np.float32, np.float64):
                raise TypeError(f"Policy: dtype must be float32 or float64, got {dt}")
            fields["dtype"] = dt
        if fields.get("initializer") is not None and not callable(fields["initializer"]):
            raise TypeError("Policy: initializer must be an Initializer (a callable)")
        self._given = {k: (bool(v) if isinstance(v, np.bool_) else v) for k, v in fields.items()}

    def __getattr__(self, name):
        try:
            return _DEFAULTS[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getattribute__(self, name):
        if name in _DEFAULTS:
            given = object.__getattribute__(self, "_given")
            return given.get(name, _DEFAULTS[name])
        return object.__getattribute__(self, name)

    def given(self, name):
        """True when the field ``name`` was set explicitly."""
        return name in self._given

    def merged(self, other):
        """This policy with ``other``'s explicit fields on top."""
        if other is None:
            return self
        return Policy(**{**self._given, **other._given})

    def __eq__(self, other):
        return isinstance(other, Policy) and self._given == other._given

    def __hash__(self):
        return hash(tuple(sorted((k, repr(v)) for k, v in self._given.items())))

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" if k != "dtype" else f"dtype={v.name}"
                           for k, v in self._given.items())
        return f"Policy({fields})"


def as_policy(policy, where):
    if policy is None:
        return Policy()
    if not isinstance(policy, Policy):
        raise TypeError(f"{where}: policy must be a pyet.nn.Policy, got {type(policy).__name__}")
    return policy
