"""``store(e)``: an identity special node.  Its value is computed once per
evaluation (or EvalPlan run) into scratch and read by every tree that holds
it, like any special node; a layer wraps an activation read by several
consumers in it so the forward pass is not recomputed by the backward one
(the engine shares special nodes, not elementwise trees)."""

import numpy as np

from pyet._core import core
from pyet._core.core import Special, SpecialNode, Tensor, node


class Store(Special):
    """The child's value, computed once into scratch."""

    __slots__ = ()
    name = "store"
    records_into = True  # into() only assigns: a kept plan records its passes

    def params(self):
        return ()

    def value(self, args):
        (child,) = args
        out = np.empty(child.shape, child.dtype)
        core.assign(out, child)
        return out

    def into(self, dst, args):
        core.assign(dst, args[0])

    def vjp(self, node, g):
        """The identity's: ``g``."""
        return (g,)


def store(e):
    """``e`` itself when it is a leaf or a special node, else ``e`` wrapped in a
    Store node (computed once per evaluation)."""
    e = core.as_expr(e)
    if isinstance(e, (Tensor, SpecialNode)):
        return e
    return node(Store(), (e,), e.shape, e.dtype)


class Checkpoint(Special):
    """The value of an expression held privately (not as a child): the engine's
    walks (structure keys, overlap checks) stop here, so a chain of steps
    that each read the previous one's value several times (a recurrent net's
    state) costs linear, not exponential, time to look up.  The node's one
    child is a 0-d token of its own, whose memory makes its value key unique."""

    __slots__ = ("expr",)
    name = "checkpoint"
    records_into = True

    def __init__(self, expr):
        self.expr = expr

    def params(self):
        return ()

    def value(self, args):
        out = np.empty(self.expr.shape, self.expr.dtype)
        core.assign(out, self.expr)
        return out

    def into(self, dst, args):
        core.assign(dst, self.expr)

    @property
    def hidden(self):
        """The expression held outside the children (structure_key walks it:
        two checkpoints of different expressions are different structures)."""
        return (self.expr,)

    def vjp(self, node, g):
        """None: gradients do not pass a checkpoint (layers chain them)."""
        return (None,)


def checkpoint(e):
    """``e``'s value behind a Checkpoint node (see there); pyet.grad does not see
    through it: the layer that makes it chains the gradients itself."""
    e = core.as_expr(e)
    token = core.tensor(np.zeros((), np.bool_))
    return node(Checkpoint(e), (token,), e.shape, e.dtype)
