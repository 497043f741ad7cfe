"""Elementwise functions, generated from the op table (``_ops.OPS``).

Each builds a lazy node; nothing is computed until the tree is evaluated.
"""

import inspect

from pyet._core import core
from pyet._core.ops import OPS


def _make(op):
    fn = core.op_function(core.OPCODES[op.name], op.arity, op.name)
    fn.__name__ = fn.__qualname__ = op.name
    fn.__module__ = "pyet"
    fn.__signature__ = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD)
         for p in (("x",) if op.arity == 1 else ("x1", "x2"))])
    fn.__doc__ = (f"Lazy elementwise ``{op.name}`` (reference: NumPy's "
                  f"``{getattr(op.reference, '__name__', op.name)}``); returns an Expr.")
    return fn


_ALIASES = {"abs": "absolute", "mod": "remainder", "true_divide": "divide",
            "bitwise_not": "invert", "pow": "power"}

__all__ = [op.name for op in OPS] + list(_ALIASES) + ["where", "clip", "F"]

globals().update({op.name: _make(op) for op in OPS})
globals().update({alias: globals()[name] for alias, name in _ALIASES.items()})


def where(condition, x, y):
    """``x`` where ``condition`` is true, else ``y``, lazily (NumPy's ``where``)."""
    return core.where(condition, x, y)


def clip(a, a_min, a_max):
    """``minimum(maximum(a, a_min), a_max)`` lazily, as NumPy's ``clip`` (its dtype)."""
    if a_min is None and a_max is None:
        raise ValueError("One of max or min must be given")
    from pyet._nodes import numpy_api  # (imports the node modules: not at pyet's import)
    return numpy_api.clip(a, a_min, a_max)


def F(fn, *operands, dtype=None, grad=None):
    """A user-defined elementwise function as a node of the tree (MShadow's ``F<OP>``).

    Parameters
    ----------
    fn : numpy.ufunc or callable
        Maps NumPy arrays to an array of the same shape, elementwise.  During
        evaluation it is called block by block on read-only 1-D arrays of its
        own (copies of the operand blocks); each result is checked (not None,
        the block's shape, the expected dtype kind).
    *operands : Expr, array_like or scalar
        At most four.
    dtype : data-type, optional
        What ``fn`` returns.  By default a ufunc's own rule, or for any other
        callable the dtype it returns for empty operands of the operands' dtypes.
    grad : callable, optional
        Its gradient rule for :func:`pyet.grad`: ``grad(args, out, g)`` gets the
        operand expressions, this node and the incoming gradient (all lazy)
        and returns one lazy gradient per operand (None: no gradient).
        Without it, differentiating through the node raises NotImplementedError.

    Returns
    -------
    Expr
    """
    return core.F(fn, operands, dtype, grad)
