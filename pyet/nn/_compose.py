"""Composite layers: Compose (sublayers wired by a declared topology, checked
and topologically sorted at construction), SingleLayerPerceptron and MLP."""

from pyet.nn._layer import Layer, zeros_tree
from pyet.nn._layers import ACTIVATION_LAYERS, Linear
from pyet.nn._policy import Policy


def _is_port_name(s):
    return isinstance(s, str) and s.isidentifier()


class Compose(Layer):
    """Sublayers wired by connections (MetaNN's ComposeKernel).

    Parameters
    ----------
    sublayers : dict of {name: Layer}
    connections : sequence of (source, destination)
        Endpoints are ``"name.port"`` (a sublayer's port) or a bare ``"port"``
        (one of this layer's ports): a bare source is an input port of the
        composite, a bare destination an output port.
    policy : Policy, optional
        For this layer and, unless overridden, its sublayers.
    sub_policies : dict of {name: Policy}, optional
        Per-sublayer overrides (MetaNN's SubPolicyContainer).

    Raises
    ------
    ValueError
        At construction, naming the offender: a bad sublayer name, a layer used
        twice, an unknown sublayer or port in a connection, a sublayer input (or
        output port) fed by no source or by several, a sublayer that reaches no
        output, a cycle, a contradictory policy.

    Notes
    -----
    Forward runs the sublayers in topological order; backward in reverse,
    summing the gradients a source receives from several consumers.  A
    sublayer downstream of an updatable one feeds back automatically.
    """

    def __init__(self, sublayers, connections, policy=None, sub_policies=None):
        super().__init__(policy)
        if not isinstance(sublayers, dict) or not sublayers:
            raise ValueError("Compose: sublayers must be a non-empty dict {name: Layer}")
        seen = {}
        for name, layer in sublayers.items():
            if not _is_port_name(name):
                raise ValueError(f"Compose: sublayer name {name!r} must be an identifier "
                                 "(no dots)")
            if not isinstance(layer, Layer):
                raise TypeError(f"Compose: sublayer {name!r} is a {type(layer).__name__}, "
                                "not a pyet.nn.Layer")
            if id(layer) in seen:
                raise ValueError(f"Compose: the same layer object is sublayer {seen[id(layer)]!r} "
                                 f"and {name!r}; give each name its own layer")
            seen[id(layer)] = name
        self._sub = dict(sublayers)
        sub_policies = dict(sub_policies or {})
        for name, p in sub_policies.items():
            if name not in self._sub:
                raise ValueError(f"Compose: sub_policies names {name!r}, which is not a sublayer "
                                 f"(sublayers: {', '.join(self._sub)})")
            if not isinstance(p, Policy):
                raise TypeError(f"Compose: sub_policies[{name!r}] must be a Policy")
        self._sub_policies = sub_policies

        feeds, outputs, inputs = {}, {}, []
        for conn in connections:
            if not (isinstance(conn, (tuple, list)) and len(conn) == 2):
                raise ValueError(f"Compose: connection {conn!r} must be a (source, "
                                 "destination) pair")
            src = self._endpoint(conn[0], conn, "output_ports")
            dst = self._endpoint(conn[1], conn, "input_ports")
            if src[0] is None and src[1] not in inputs:
                inputs.append(src[1])
            if dst[0] is None:
                if dst[1] in outputs:
                    raise ValueError(f"Compose: output port {dst[1]!r} is fed twice "
                                     f"({_show(outputs[dst[1]])} and {conn[0]})")
                outputs[dst[1]] = src
            else:
                if dst in feeds:
                    raise ValueError(f"Compose: input {conn[1]!r} is fed twice "
                                     f"({_show(feeds[dst])} and {conn[0]})")
                feeds[dst] = src
        both = sorted(set(inputs) & set(outputs))
        if both:
            raise ValueError(f"Compose: {both[0]!r} is both an input and an output port")
        if not outputs:
            raise ValueError("Compose: no connection reaches an output port")
        for name, layer in self._sub.items():
            for p in layer.input_ports:
                if (name, p) not in feeds:
                    raise ValueError(f"Compose: input {name}.{p} is not fed by any connection")
        self.input_ports = tuple(inputs)
        self.output_ports = tuple(outputs)
        self._feeds, self._outputs = feeds, outputs
        self._order = self._toposort()
        self._check_reaches_output()
        for name, layer in self._sub.items():
            layer._rename(name)
        self._configure(Policy(), None, False)

    def _endpoint(self, text, conn, ports_attr):
        if not isinstance(text, str):
            raise ValueError(f"Compose: endpoint {text!r} of {conn!r} must be a string")
        if "." not in text:
            if not _is_port_name(text):
                raise ValueError(f"Compose: port name {text!r} in {conn!r} is not an identifier")
            return (None, text)
        name, port = text.split(".", 1)
        layer = self._sub.get(name)
        if layer is None:
            raise ValueError(f"Compose: connection {tuple(conn)!r} names unknown sublayer "
                             f"{name!r} (sublayers: {', '.join(self._sub)})")
        ports = getattr(layer, ports_attr)
        if port not in ports:
            kind = "output" if ports_attr == "output_ports" else "input"
            raise ValueError(f"Compose: connection {tuple(conn)!r}: sublayer {name!r} "
                             f"({layer!r}) has no {kind} port {port!r} (its {kind} ports: "
                             f"{', '.join(ports) or 'none'})")
        return (name, port)

    def _toposort(self):
        deps = {name: {src[0] for (n, _), src in self._feeds.items()
                       if n == name and src[0] is not None} for name in self._sub}
        order, done = [], set()
        while len(order) < len(self._sub):
            ready = [n for n in self._sub if n not in done and deps[n] <= done]
            if not ready:
                cycle = [n for n in self._sub if n not in done]
                raise ValueError(f"Compose: the connections form a cycle through "
                                 f"{', '.join(cycle)}")
            for n in ready:
                order.append(n)
                done.add(n)
        return order

    def _check_reaches_output(self):
        live = {src[0] for src in self._outputs.values() if src[0] is not None}
        for name in reversed(self._order):
            if name in live:
                live.update(src[0] for (n, _), src in self._feeds.items()
                            if n == name and src[0] is not None)
        for name in self._order:
            if name not in live:
                raise ValueError(f"Compose: sublayer {name!r} is not connected to any output")

    # ----------------------------------------------------------- policies

    def _rename(self, name):
        self.name = name
        for sub, layer in self._sub.items():
            layer._rename(f"{name}.{sub}")

    def _configure(self, inherited, override, need_feedback):
        policy = self._resolve(inherited, override, need_feedback)
        passed = Policy(**{k: v for k, v in policy._given.items() if k != "feedback_output"})
        hot = set()  # sublayers whose outputs' gradients someone upstream needs
        for name in self._order:
            layer = self._sub[name]
            need = any((src[0] is None and self._feedback) or src[0] in hot
                       for (n, _), src in self._feeds.items() if n == name)
            layer._configure(passed, self._sub_policies.get(name), need)
            if layer._needs_backward():
                hot.add(name)

    @property
    def updatable(self):
        return any(layer.updatable for layer in self._sub.values())

    def _walk(self, prefix=""):
        yield prefix, self
        for name, layer in self._sub.items():
            yield from layer._walk(f"{prefix}{name}.")

    def __getitem__(self, name):
        """The sublayer ``name``."""
        return self._sub[name]

    # ----------------------------------------------------------- passes

    def _forward(self, inputs):
        values = {(None, k): v for k, v in inputs.items()}
        for name in self._order:
            layer = self._sub[name]
            out = layer.forward(**{p: values[self._feeds[(name, p)]] for p in layer.input_ports})
            values.update(((name, p), v) for p, v in out.items())
        outputs = {p: values[src] for p, src in self._outputs.items()}
        shapes = {k: (v.shape, v.dtype) for k, v in values.items()
                  if k[0] is not None and hasattr(v, "shape")}
        return outputs, shapes

    def _backward(self, shapes, grads):
        cot = {}

        def add(src, g):
            prev = cot.get(src)
            cot[src] = g if prev is None else prev + g

        for port, g in grads.items():
            add(self._outputs[port], g)
        for name in reversed(self._order):
            layer = self._sub[name]
            if not layer._needs_backward():
                continue
            gs = {}
            for p in layer.output_ports:
                g = cot.pop((name, p), None)
                gs[p] = zeros_tree(*shapes[(name, p)]) if g is None else g
            for p, g in layer.backward(**gs).items():
                add(self._feeds[(name, p)], g)
        if not self._feedback:
            return {}
        return {p: cot[(None, p)] for p in self.input_ports if (None, p) in cot}

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self._sub.items())
        return f"{type(self).__name__}({inner})"


def _show(src):
    return src[1] if src[0] is None else f"{src[0]}.{src[1]}"


def _activation(name, policy, where):
    act = name if name is not None else policy.activation
    if act != "identity" and act not in ACTIVATION_LAYERS:
        raise ValueError(f"{where}: activation must be one of sigmoid, tanh, relu, identity; "
                         f"got {act!r}")
    return act


class SingleLayerPerceptron(Compose):
    """``activation(input @ W + b)``: sublayers ``linear`` and ``act``.

    Parameters
    ----------
    in_features, out_features : int
    activation : {"sigmoid", "tanh", "relu", "identity"}, optional
        By default the policy's (sigmoid).
    bias : bool, default True
    policy, sub_policies : as for :class:`Compose`
    """

    def __init__(self, in_features, out_features, activation=None, bias=True, policy=None,
                 sub_policies=None):
        pol = policy if policy is not None else Policy()
        act = _activation(activation, pol, "SingleLayerPerceptron")
        subs = {"linear": Linear(in_features, out_features, bias=bias, policy=pol)}
        conns = [("input", "linear.input")]
        if act == "identity":
            conns.append(("linear.output", "output"))
        else:
            subs["act"] = ACTIVATION_LAYERS[act]()
            conns += [("linear.output", "act.input"), ("act.output", "output")]
        super().__init__(subs, conns, policy=policy, sub_policies=sub_policies)


class MLP(Compose):
    """Linear layers of ``sizes`` with an activation between them: sublayers
    ``fc1, act1, fc2, act2, ..., fcN`` (no activation after the last unless
    ``output_activation``).

    Parameters
    ----------
    sizes : sequence of int
        Input size, hidden sizes, output size (at least two).
    activation : {"sigmoid", "tanh", "relu", "identity"}, optional
        Of the hidden layers; by default the policy's.
    output_activation : str, optional
    bias : bool, default True
    policy, sub_policies : as for :class:`Compose`
    """

    def __init__(self, sizes, activation=None, output_activation=None, bias=True, policy=None,
                 sub_policies=None):
        sizes = list(sizes)
        if len(sizes) < 2:
            raise ValueError(f"MLP: sizes needs an input and an output size, got {sizes}")
        pol = policy if policy is not None else Policy()
        act = _activation(activation, pol, "MLP")
        out_act = _activation(output_activation or "identity", pol, "MLP")
        subs, conns, src = {}, [], "input"
        n = len(sizes) - 1
        for i in range(n):
            fc = f"fc{i + 1}"
            subs[fc] = Linear(sizes[i], sizes[i + 1], bias=bias, policy=pol)
            conns.append((src, f"{fc}.input"))
            src = f"{fc}.output"
            a = act if i < n - 1 else out_act
            if a != "identity":
                name = f"act{i + 1}"
                subs[name] = ACTIVATION_LAYERS[a]()
                conns.append((src, f"{name}.input"))
                src = f"{name}.output"
        conns.append((src, "output"))
        super().__init__(subs, conns, policy=policy, sub_policies=sub_policies)
