"""Reverse-mode differentiation of expression trees, as lazy trees.

``grad(y, wrt)`` walks the tree of ``y`` once, from the root down, giving each
node the sum of the gradients its parents send it; a node passes them on to
its children by its rule: the op table's ``grad`` field for elementwise ops
(``pyet._core.ops``), a ``vjp`` method on the kernel of a special node, the
``grad=`` of a ``pyet.F`` node.  Nothing is computed: the result is a tree
that reads the forward tree's nodes themselves (sigmoid's gradient
``g*s*(1-s)`` reads the node ``s``), so evaluating value and gradients in one
evaluation computes each shared special node once.
"""

import math

import numpy as np

from pyet._core import core
from pyet._core.core import OPNAMES, Expr, PyFunc, Scalar, SpecialNode, Tensor, View
from pyet._core.ops import OPS_BY_NAME
from pyet._core.schedule_cache import ScheduleCache
from pyet._nodes.reductions import sum as _sum
from pyet._nodes.views import broadcast_to, flip, index_adjoint, pad, reshape

_fmt = core.fmt_shape


def _is_float(e):
    return e.dtype.kind == "f"


def _zeros(shape, dtype):
    """A lazy zeros tree of ``shape``: a 0-d zero read with stride 0 (no memory)."""
    return broadcast_to(core.tensor(np.zeros((), dtype)), shape)


def _sum_to(g, shape):
    """``g`` summed over the axes broadcasting added or stretched, to ``shape``."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and g.shape[lead + i] != 1)
    return reshape(_sum(g, axes), shape) if axes else reshape(g, shape)


def _fit(g, shape, dtype):
    """Gradient ``g`` as one of a node of ``shape`` and ``dtype``: broadcast up
    (a rule may give a smaller tree) or summed down, and cast."""
    g = core.as_expr(g)
    if g.shape != shape:
        try:
            g = broadcast_to(g, shape)
        except ValueError:
            g = _sum_to(g, shape)
    return g if g.dtype == dtype else g.astype(dtype)


# ------------------------------------------------------------ views

def _view_shape(shape, kind, arg):
    """The shape of the view (kind, arg) of an array of ``shape``."""
    if kind == "reshape":
        known = math.prod([n for n in arg if n != -1])
        size = math.prod(shape)
        return tuple(size // known if n == -1 else n for n in arg)
    return core.VIEWS[kind](np.broadcast_to(np.zeros((), np.bool_), shape), arg).shape


def _view_adjoint(kind, arg, g, shape):
    """The gradient with respect to an array of ``shape`` given the gradient
    ``g`` of its view (kind, arg)."""
    if kind == "index":
        return index_adjoint(g, arg, shape)
    if kind == "transpose":
        return core.transpose(g, tuple(int(a) for a in np.argsort(arg)))
    if kind == "flip":
        return flip(g, arg)
    if kind == "broadcast_to":
        return _sum_to(g, shape)
    if kind in ("reshape", "expand"):
        return reshape(g, shape)
    if kind == "crop":
        y0, y1, x0, x1 = arg
        return pad(g, ((y0, shape[-2] - y1), (x0, shape[-1] - x1)))
    raise AssertionError(f"unknown view {kind}")  # every kind of core.VIEWS is above


def _through_mapping(g, mapping, shape):
    """The gradient with respect to a tensor of ``shape`` of its view through
    the views ``mapping`` (applied in order), given the view's gradient ``g``."""
    shapes = [shape]
    for kind, arg in mapping:
        shapes.append(_view_shape(shapes[-1], kind, arg))
    for (kind, arg), before in zip(reversed(mapping), reversed(shapes[:-1]), strict=True):
        g = _view_adjoint(kind, arg, g, before)
    return g


def _match(leaf, wrt):
    """The index of the wrt tensor ``leaf`` is (or views) and the views taken
    since, or None."""
    for i, w in enumerate(wrt):
        if w is None:
            continue
        if leaf is w:
            return i, ()
        root = w._base if w._base is not None else w
        n = len(w._mapping)
        if leaf._base is root and leaf._mapping[:n] == w._mapping:
            return i, leaf._mapping[n:]
    return None


# ------------------------------------------------------------ node rules

def _value(a):
    return a._value if isinstance(a, Scalar) else a


def _node_grads(e, g):
    """One gradient (or None) per child of node ``e``, given ``e``'s gradient."""
    if isinstance(e, SpecialNode):
        kernel = e._kernel
        if isinstance(kernel, View):  # a core class: its adjoint needs the node families
            return (_view_adjoint(kernel.kind, kernel.arg, g, e._args[0].shape),)
        vjp = getattr(kernel, "vjp", None)
        if vjp is None:
            raise NotImplementedError(f"pyet.grad: no gradient rule for {kernel.name}")
        return vjp(e, g)
    if isinstance(e, PyFunc):
        if e._grad is None:
            name = getattr(e._fn, "__name__", repr(e._fn))
            raise NotImplementedError(
                f"pyet.grad: pyet.F({name}, ...) has no gradient; give one with "
                f"pyet.F({name}, ..., grad=fn), fn(args, out, g) -> one gradient per operand")
        return e._grad(e._args, e, g)
    name = OPNAMES[e._op]
    if name == "cast":
        return (g,)
    if name == "where":
        c = e._args[0]
        return (None, core.where(c, g, 0), core.where(c, 0, g))
    op = OPS_BY_NAME[name]
    if op.grad is None:  # piecewise constant (floor, sign, ...), comparisons, bitwise
        return (None,) * len(e._args)
    return op.grad(tuple(_value(a) for a in e._args), e, g)


def _order(root):
    """The nodes below ``root`` (each once), children before parents."""
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        e, ready = stack.pop()
        if ready:
            order.append(e)
            continue
        if id(e) in seen:
            continue
        seen.add(id(e))
        stack.append((e, True))
        stack.extend((a, False) for a in e._args if id(a) not in seen)
    return order


def _check_wrt(wrt):
    single = isinstance(wrt, Expr)
    leaves = [wrt] if single else list(wrt)
    for i, w in enumerate(leaves):
        what = "wrt" if single else f"wrt[{i}]"
        if not isinstance(w, Tensor):
            kernel = getattr(w, "_kernel", None)
            if kernel is not None and kernel.name == "dask_array":
                got = "a Dask-backed leaf: gradients are taken over NumPy-backed Tensors"
            elif isinstance(w, Expr):
                got = "an expression: take the gradient with respect to the leaves it reads"
            else:
                got = type(w).__name__
            raise TypeError(f"pyet.grad: {what} must be a pyet.Tensor (a leaf), got {got}")
        if not _is_float(w):
            raise TypeError(f"pyet.grad: {what}, a Tensor of shape {_fmt(w.shape)} and dtype "
                            f"{w.dtype}, is not differentiable: gradients need float32 or "
                            f"float64 leaves")
    return single, leaves


def grad(y, wrt, seed=None):
    """Gradients of ``y`` with respect to the leaves ``wrt``, as lazy trees.

    Parameters
    ----------
    y : Expr
        A float32 or float64 expression; 0-d unless ``seed`` is given.
    wrt : Tensor or sequence of Tensor
        Leaves of ``y`` (a view of one, ``x.T`` or ``x[1:]``, counts as the
        leaf); a leaf ``y`` does not depend on gets zeros.
    seed : Expr, array_like or scalar, optional
        The gradient with respect to ``y`` (broadcastable to its shape): the
        result is then the vector-Jacobian product.  Default 1 (``y`` 0-d).

    Returns
    -------
    Expr or list of Expr
        One per ``wrt`` (a list when ``wrt`` is a sequence), of the leaf's shape
        and dtype; nothing is computed.  Trees read ``y``'s own nodes, and a
        leaf used several times gets the sum of its contributions.

    Raises
    ------
    TypeError
        If a ``wrt`` is not a Tensor, or is an integer or bool one; if ``y`` is
        not float.
    ValueError
        If ``y`` is not 0-d and no ``seed`` is given, or ``seed`` does not
        broadcast to ``y``'s shape.
    NotImplementedError
        If the tree holds ``pyet.F`` without ``grad=``.
    """
    single, leaves = _check_wrt(wrt)
    y = core.as_expr(y)
    if not _is_float(y):
        raise TypeError(f"pyet.grad: y must be float32 or float64, got {y.dtype}")
    if seed is None:
        if y.shape != ():
            raise ValueError(f"pyet.grad: y has shape {_fmt(y.shape)}; gradients need a 0-d y "
                             "(a loss) or a seed (the gradient with respect to y)")
        seed = core.tensor(np.ones((), y.dtype))
    return _backprop(y, leaves, _seed(y, seed, "grad"), single)


def _seed(y, seed, who):
    # the gradient with respect to y as an expression of y's shape; a Python
    # scalar takes y's dtype (it is weak, as in NumPy)
    seed = core.as_expr(seed)
    if isinstance(seed, Scalar):
        seed = core.tensor(np.asarray(seed._value, y.dtype))
    try:
        return broadcast_to(seed, y.shape)
    except ValueError:
        raise ValueError(f"pyet.{who}: seed of shape {_fmt(seed.shape)} does not broadcast to "
                         f"y's shape {_fmt(y.shape)}") from None


def _backprop(y, leaves, seed, single):
    """The gradients of ``y`` (seeded with ``seed``, of y's shape) with
    respect to ``leaves``: Tensors (matched with their views) or inner nodes of
    y's tree (matched by identity, nothing below them is followed)."""
    order = _order(y)
    inner = {id(w): i for i, w in enumerate(leaves) if not isinstance(w, Tensor)}
    tensors = [w if isinstance(w, Tensor) else None for w in leaves]
    # the nodes on a path to a wrt node: the rest get no gradient built
    needed, matches = set(), {}
    for e in order:
        if id(e) in inner:
            matches[id(e)] = inner[id(e)], ()
            needed.add(id(e))
        elif isinstance(e, Tensor):
            m = _match(e, tensors)
            if m is not None:
                matches[id(e)] = m
                needed.add(id(e))
        elif any(id(a) in needed for a in e._args):
            needed.add(id(e))

    cot = {id(y): seed} if id(y) in needed else {}
    out = [[] for _ in leaves]
    for e in reversed(order):
        g = cot.pop(id(e), None)
        if g is None:
            continue
        if id(e) in matches:
            i, mapping = matches[id(e)]
            out[i].append(_through_mapping(g, mapping, leaves[i].shape))
            continue
        if g.shape != e.shape:
            g = broadcast_to(g, e.shape)
        for a, ga in zip(e._args, _node_grads(e, g), strict=True):
            if ga is None or id(a) not in needed or not _is_float(a):
                continue
            ga = _fit(ga, a.shape, a.dtype)
            prev = cot.get(id(a))
            cot[id(a)] = ga if prev is None else prev + ga

    grads = []
    for w, parts in zip(leaves, out, strict=True):
        total = None
        for p in parts:
            p = _fit(p, w.shape, w.dtype)
            total = p if total is None else total + p
        grads.append(_zeros(w.shape, w.dtype) if total is None else total)
    return grads[0] if single else grads


def vjp(y, wrt, seed):
    """The vector-Jacobian product of ``y`` with respect to nodes of its tree.

    Like :func:`grad` with a ``seed``, but a ``wrt`` may also be an inner node
    of ``y``'s tree (any Expr, matched by identity; nothing below it is
    followed), as a layer's backward pass needs for its input trees.

    Parameters
    ----------
    y : Expr
        A float expression.
    wrt : sequence of Expr
        Float Tensors (a view of one counts as the leaf) or nodes of ``y``'s tree.
    seed : Expr, array_like or scalar
        The gradient with respect to ``y``, broadcastable to its shape.

    Returns
    -------
    list of Expr
        One lazy tree per ``wrt``, of its shape and dtype (zeros for a node
        ``y`` does not reach).
    """
    leaves = [core.as_expr(w) for w in wrt]
    for i, w in enumerate(leaves):
        if not _is_float(w):
            raise TypeError(f"pyet.vjp: wrt[{i}] of dtype {w.dtype} is not differentiable: "
                            "gradients need float32 or float64 nodes")
    y = core.as_expr(y)
    if not _is_float(y):
        raise TypeError(f"pyet.vjp: y must be float32 or float64, got {y.dtype}")
    return _backprop(y, leaves, _seed(y, seed, "vjp"), False)


def value_and_grad(y, wrt, seed=None):
    """``y`` and its gradients with respect to ``wrt``, evaluated together.

    Parameters
    ----------
    y, wrt, seed
        As in :func:`grad`.

    Returns
    -------
    (Tensor, Tensor or list of Tensor)
        The value of ``y`` and the gradients (a list when ``wrt`` is a
        sequence).  One evaluation: each special node (product, reduction,
        softmax, ...) shared by ``y`` and the gradient trees is computed once;
        elementwise nodes are fused into each tree that reads them.

    Notes
    -----
    A training loop builds the same tree every step over new or updated
    arrays.  The first call with a given structure -- ops, scalars, kernel
    parameters, each leaf's shape, strides and dtype, which leaves are the
    same array or overlap, which are ``wrt`` -- records its evaluation; later
    calls with that structure replay it over their own leaves' memory, without
    differentiating, grouping or lowering again (the same operations in the
    same order: the same results as a fresh evaluation).  A few structures are
    kept (least recently used dropped); :func:`clear_grad_cache` empties them.
    Results are handed out without copies: a call writes new memory while an
    earlier call's results are still referenced.
    """
    single, leaves = _check_wrt(wrt)
    y = core.as_expr(y)
    roots = [y] if seed is None else [y, core.as_expr(seed)]
    key = slots = None
    record = False
    if not y._flags & core.UNCACHEABLE:
        key, slots = SCHEDULES.key(roots, leaves, len(roots))
        arrays, record = SCHEDULES.replay(key, slots)
        if arrays is not None:
            return _results(arrays, single)
    grads = grad(y, leaves, seed)
    # one plan: what the value and the gradients share is computed once
    exprs = [y, *grads]
    dsts = [np.empty(e.shape, e.dtype) for e in exprs]
    actions = core.run_statements(dsts, exprs, record)
    if record:
        SCHEDULES.keep(key, actions, slots + dsts, len(slots))
    return _results(dsts, single)


def _results(arrays, single):
    value, *results = [core.tensor(d) for d in arrays]
    return value, (results[0] if single else results)


# value_and_grad's recorded evaluations by structure (recorded on first sight)
SCHEDULES = ScheduleCache(size=8, pool=2, record_first=True)


def clear_grad_cache():
    """Forget value_and_grad's recorded evaluations (and the arrays they hold)."""
    SCHEDULES.clear()


def tensordot(a, b, axes=2):
    """Sum products over the last ``axes`` axes of ``a`` and the first of ``b``,
    lazily (NumPy's ``tensordot``), as one matrix product between reshapes.

    Parameters
    ----------
    a, b : Expr or array_like
    axes : int or (sequence of int, sequence of int)
        ``k``: the last k axes of ``a`` with the first k of ``b``; or the axes
        of ``a`` and of ``b`` to contract, pairwise.

    Returns
    -------
    Expr
        Of shape ``a``'s free axes + ``b``'s free axes.
    """
    x, z = core.as_expr(a), core.as_expr(b)
    if isinstance(axes, (int, np.integer)):
        k = int(axes)
        if k < 0 or k > x.ndim or k > z.ndim:
            raise ValueError(f"tensordot: axes={k} does not fit shapes {_fmt(x.shape)} and "
                             f"{_fmt(z.shape)}")
        ax_a, ax_b = list(range(x.ndim - k, x.ndim)), list(range(k))
    else:
        ax_a, ax_b = ([int(i) for i in np.atleast_1d(s)] for s in axes)
        if len(ax_a) != len(ax_b):
            raise ValueError("tensordot: shape-mismatch for sum")
        ax_a = [i % x.ndim for i in ax_a]
        ax_b = [i % z.ndim for i in ax_b]
    if [x.shape[i] for i in ax_a] != [z.shape[i] for i in ax_b]:
        raise ValueError(f"tensordot: shape-mismatch for sum: {_fmt(x.shape)} axes {ax_a}, "
                         f"{_fmt(z.shape)} axes {ax_b}")
    free_a = [i for i in range(x.ndim) if i not in ax_a]
    free_b = [i for i in range(z.ndim) if i not in ax_b]
    x = core.transpose(x, free_a + ax_a)
    z = core.transpose(z, ax_b + free_b)
    k = math.prod([x.shape[i] for i in range(len(free_a), x.ndim)])
    m = math.prod(x.shape[:len(free_a)])
    n = z.size // k if k else math.prod(z.shape[len(ax_b):])
    out = core.dot(reshape(x, (m, k)), reshape(z, (k, n)))
    return reshape(out, x.shape[:len(free_a)] + z.shape[len(ax_b):])


__all__ = ["clear_grad_cache", "grad", "tensordot", "value_and_grad", "vjp"]
