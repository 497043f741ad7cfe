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
