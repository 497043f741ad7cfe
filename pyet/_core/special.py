"""Special nodes (MShadow's kComplex expressions): nodes the elementwise
evaluator cannot run at (y, x) -- padding, concatenation, pooling, gathers --
each computed by a kernel object into its own array.

Inside a bigger tree a special node is computed first and stands in the tree
as a leaf (``Special.value``); as the root of an assignment it writes straight
into the destination (``Special.into``) when the destination has its shape and
dtype and no leaf below it overlaps the destination.

Products (``_dot.py``) and reductions (``_reduce.py``) are evaluated the same
way: this module is the engine of every tree the elementwise evaluator cannot
run alone (``_plan.assign`` hands them to ``assign`` here).

Views (transpose, flip, crop, broadcast, reshape) of a node that cannot push
them down to its leaves -- a product, a reduction, another special node --
are the ``View`` kernel: NumPy's view of the node's computed value.
"""

import threading
from abc import ABC, abstractmethod

import numpy as np

from pyet._core import expr as _expr
from pyet._core import plan as _plan

_OPS = _expr.OPCODES
_LEAF, _SCALAR, _SPECIAL = _OPS["leaf"], _OPS["scalar"], _OPS["special"]


class Special(ABC):
    """The kernel of a special node; instances hold the node's parameters."""

    __slots__ = ()
    name = "special"

    @abstractmethod
    def params(self):
        """The parameters as a hashable tuple (part of the node's structure key)."""

    @abstractmethod
    def value(self, args):
        """The node's value, an ndarray of its shape and dtype, from its children."""

    def into(self, dst, args):
        """Write the node's value into ndarray ``dst`` (the node's shape and dtype)."""
        _plan.assign(dst, _expr.tensor(self.value(args)))

    def describe(self):
        """The parameters as strings, for ``repr`` of the tree."""
        return [repr(p) for p in self.params()]


# op code -> function(node) -> ndarray: the value of a product or a reduction
_VALUES = {}
# functions(dst, e) -> bool that write a whole tree straight into dst when they
# can (a gemm with alpha and beta folded in), else write nothing
_ROOT_FORMS = []
# the nodes computed so far by this thread's evaluation: a node that appears
# twice in a tree (softmax's max, MetaNN's shared subtrees) is computed once
_evaluation = threading.local()


def register_value(op, fn):
    """Compute nodes of ``op`` with ``fn(node) -> ndarray`` (products, reductions)."""
    _VALUES[op] = fn


def register_root_form(fn):
    """Try ``fn(dst, e) -> bool`` on the root of every tree evaluated here."""
    _ROOT_FORMS.append(fn)


def materialize(e):
    """e with every product, reduction and special node replaced by a leaf
    holding its value."""
    if not e.flags:
        return e
    done = getattr(_evaluation, "done", None)
    if done is not None and id(e) in done:
        return done[id(e)][1]
    if e.op == _SPECIAL:
        leaf = _expr.tensor(e.value.value(e.args))
    elif e.op in _VALUES:
        leaf = _expr.tensor(_VALUES[e.op](e))
    else:
        leaf = _expr.with_args(e, tuple(materialize(a) for a in e.args))
    if done is not None:
        done[id(e)] = (e, leaf)  # e kept alive: its id stays its own
    return leaf


def assign(dst, e):
    """Evaluate a tree containing products, reductions or special nodes into
    ndarray dst (checks done): a root special node or gemm straight into dst,
    else those nodes computed first and the elementwise rest fused."""
    outer = getattr(_evaluation, "done", None) is None  # not nested in an evaluation
    if outer:
        _evaluation.done = {}
    try:
        if e.op == _SPECIAL and e.shape == dst.shape and _expr.DTYPES[e.dt] == dst.dtype \
                and not leaves_overlap(e, dst):
            e.value.into(dst, e.args)  # straight into dst, no scratch
            return
        if not any(form(dst, e) for form in _ROOT_FORMS):
            _plan.assign(dst, materialize(e))
    finally:
        if outer:
            _evaluation.done = None


def node(kernel, args, shape, dtype):
    """A lazy special node of ``shape`` and ``dtype`` over child expressions ``args``."""
    return _expr.special(kernel, tuple(args), tuple(shape), dtype)


def array_of(e, dtype=None):
    """The value of expression ``e`` as an ndarray: a leaf's own array (no
    copy unless a dtype conversion is asked for), anything else computed."""
    if e.op == _LEAF:
        arr = e.value
    elif e.op == _SCALAR:
        arr = np.asarray(e.value, dtype=_expr.DTYPES[e.dt])
    else:
        arr = np.asarray(e)
    return arr if dtype is None else arr.astype(dtype, copy=False)


def leaves_overlap(e, dst):
    """True when any array below ``e`` may share memory with ``dst``."""
    if e.op == _LEAF:
        return np.may_share_memory(e.value, dst)
    return any(leaves_overlap(a, dst) for a in e.args)


# ------------------------------------------------------------------- views

def _crop(a, box):
    y0, y1, x0, x1 = box
    return a[..., y0:y1, x0:x1]


# NumPy's view for each kind of view node: (array, parameter) -> view
VIEWS = {
    "broadcast_to": lambda a, shape: np.broadcast_to(a, shape),
    "transpose": lambda a, axes: a.transpose(axes),
    "flip": lambda a, axes: np.flip(a, axes),
    "crop": _crop,
    "expand": lambda a, axis: np.expand_dims(a, axis),
    "reshape": lambda a, shape: a.reshape(shape),
}


class View(Special):
    """NumPy's view (``VIEWS[kind]``) of the child's computed value."""

    __slots__ = ("kind", "arg")

    def __init__(self, kind, arg):
        self.kind, self.arg = kind, arg

    @property
    def name(self):
        return self.kind

    def params(self):
        return (self.kind, self.arg)

    def describe(self):
        return [repr(self.arg)]

    def value(self, args):
        return VIEWS[self.kind](array_of(args[0]), self.arg)


def view_node(e, kind, arg, shape):
    """A lazy ``kind`` view of node ``e`` with the resulting ``shape``."""
    return node(View(kind, arg), (e,), shape, _expr.DTYPES[e.dt])


_plan.set_complex_assigner(assign)
