"""Shape-changing expressions (MShadow's kChainer expressions, xtensor's
views): broadcast_to, broadcast_with_axis, repmat, reshape, flip, crop, pad,
concatenate and stack, each usable anywhere inside a tree.

A view of an elementwise tree is pushed down to the tree's leaves, where it
is NumPy's view of the leaf's memory (strides, 0 for a broadcast axis,
negative for a flip): ``flip(a*b + c, 0)`` evaluates as ``flip(a)*flip(b) +
flip(c)``, in one pass, with no copy.  Below a product, a reduction or a
special node the view applies to that node's computed value.  Padding and
concatenation are special nodes that write their pieces into slices of the
destination.
"""

import operator

import numpy as np

from pyet._core import core
from pyet._core.core import VIEWS, Special, array_of, node, view_of, view_of_leaf


class _NoView(Exception):
    """A leaf's memory cannot be viewed with the asked-for shape."""


_fmt = core.fmt_shape


def is_int_tuple(t):
    """Whether t is a tuple of Python ints (a shape as it is)."""
    if type(t) is not tuple:
        return False
    for n in t:
        if type(n) is not int:
            return False
    return True


def _int_shape(shape):
    """A shape argument (an int or a sequence of them, NumPy's) as a tuple of
    ints: an int or a tuple of ints as it is (np.ndim alone costs ~1 us)."""
    if type(shape) is int:
        return (shape,)
    if is_int_tuple(shape):
        return shape
    return (operator.index(shape),) if np.ndim(shape) == 0 else tuple(
        operator.index(n) for n in shape)


def _view_leaf(arr, kind, arg):
    if kind == "reshape":
        view = core.reshaped_view(arr, arg)
        if view is None:
            raise _NoView
        return view
    return VIEWS[kind](arr, arg)


def _push(e, kind, arg, shape):
    """``e`` seen through the view (kind, arg), of the new ``shape``: pushed
    down to the leaves of elementwise nodes, a View node above others."""
    pushed = core.push_view(e, kind, arg)  # (leaves and elementwise trees, in C)
    if pushed is not None:
        return pushed
    if isinstance(e, core.Tensor):  # (VIEWS[kind] inline but reshape's: a frame less a leaf)
        arr = e._array
        return view_of_leaf(e, kind, arg, VIEWS[kind](arr, arg) if kind != "reshape"
                            else _view_leaf(arr, kind, arg))
    if isinstance(e, core.Scalar):
        return core.tensor(_view_leaf(array_of(e), kind, arg))
    if isinstance(e, core.SpecialNode):  # (an index key holds slices: Index hashes them)
        return index(e, arg) if kind == "index" else view_of(e, kind, arg, shape)
    args = []
    for a in e._args:
        if not isinstance(a, core.Scalar):
            if a.shape != e.shape:  # align every operand with the node first
                a = _push(a, "broadcast_to", e.shape, e.shape)
            a = _push(a, kind, arg, shape)
        args.append(a)
    return core.with_args(e, tuple(args))


_operand = core.as_expr
_Tensor = core.Tensor



# ------------------------------------------------------------- views

def broadcast_to(e, shape):
    """``e`` broadcast to ``shape`` by NumPy's rules, lazily (NumPy's ``broadcast_to``).

    Parameters
    ----------
    e : Expr, array_like or scalar
    shape : int or tuple of ints

    Returns
    -------
    Expr
        Of ``shape``; a broadcast axis reads its operand with stride 0, no copy.

    Raises
    ------
    ValueError
        If ``e``'s shape cannot be broadcast to ``shape``.
    """
    x = _operand(e)
    shape = _int_shape(shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"broadcast_to: all elements of the shape must be non-negative, "
                         f"got {_fmt(shape)}")
    k = len(shape) - x.ndim
    if k < 0 or any(a != 1 and a != b for a, b in zip(x.shape, shape[k:], strict=True)):
        raise ValueError(f"cannot broadcast an expression of shape {_fmt(x.shape)} to shape "
                         f"{_fmt(shape)}")
    if x.shape == shape:
        return x
    return _push(x, "broadcast_to", shape, shape)


def broadcast_with_axis(e, axis, n):
    """``e`` with a new axis of length ``n`` inserted after ``axis``, its
    values repeated along it (MShadow's ``broadcast_with_axis``).

    ``axis`` runs from -1 (insert in front) to ``e.ndim - 1`` (insert last):
    for ``e`` of shape (2, 3), ``broadcast_with_axis(e, 0, 4)`` has shape (2, 4, 3).
    """
    x = _operand(e)
    axis = operator.index(axis)
    n = operator.index(n)
    if not -1 <= axis < x.ndim:
        raise ValueError(f"broadcast_with_axis: axis must be between -1 and {x.ndim - 1} for "
                         f"an expression of {x.ndim} dimensions, got {axis}")
    if n < 0:
        raise ValueError(f"broadcast_with_axis: the new axis' length must be >= 0, got {n}")
    expanded = x.shape[:axis + 1] + (1,) + x.shape[axis + 1:]
    shape = x.shape[:axis + 1] + (n,) + x.shape[axis + 1:]
    return broadcast_to(_push(x, "expand", axis + 1, expanded), shape)


def repmat(v, n):
    """``n`` copies of ``v`` stacked along a new first axis (MShadow's ``repmat``):
    for ``v`` of shape (m,) the result has shape (n, m), row i equal to ``v``."""
    x = _operand(v)
    return broadcast_with_axis(x, -1, n)


def reshape(e, shape):
    """``e`` with a new ``shape`` of the same size, in C order (NumPy's ``reshape``).

    One axis may be -1 (inferred).  A tensor NumPy can view with the new shape
    (a contiguous one, say) is viewed, not copied; anything else stays lazy:
    the new shape is pushed down to a tree's leaves when each can be viewed
    that way, else the tensor or tree is read (copied) once, when evaluated.
    """
    x = _operand(e)
    shape = _int_shape(shape)
    # one loop (generators and np.prod took ~4 us); the product in Python ints:
    # int64's wrapped, and a huge shape of an empty operand was let through
    unknown, negative, known = 0, False, 1
    for n in shape:
        if n == -1:
            unknown += 1
        else:
            negative = negative or n < 0
            known *= n
    if unknown > 1:
        raise ValueError("can only specify one unknown dimension (-1)")
    if negative:
        raise ValueError(f"reshape: negative dimensions not allowed, got {_fmt(shape)}")
    size = x.size
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape an expression of size {size} into shape "
                             f"{_fmt(shape)}")
        i = shape.index(-1)
        shape = shape[:i] + (size // known,) + shape[i + 1:]
    elif known != size:
        raise ValueError(f"cannot reshape an expression of size {size} into shape "
                         f"{_fmt(shape)}")
    if shape == x.shape:
        return x
    try:  # a view of a leaf's memory when NumPy can make one, never a copy made now
        return _push(x, "reshape", shape, shape)
    except _NoView:
        return view_of(x, "reshape", shape, shape)


def flip(e, axis=None):
    """``e`` reversed along ``axis`` (an int, a tuple, or None for every axis),
    lazily (NumPy's ``flip``): leaves are read through negative strides."""
    if type(axis) is int:  # one axis, in C (flip(a + b) of 16 x 16: 1.2 -> 0.6 us)
        pushed = core.flip_axis(e, axis)
        if pushed is not None:
            return pushed
    x = _operand(e)
    if type(axis) is int:
        axes = (core.axis_index(axis, x.ndim),)
    elif axis is None:
        axes = tuple(range(x.ndim))
    else:
        axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
        axes = tuple([core.axis_index(a, x.ndim) for a in axes])
        if len(set(axes)) != len(axes):
            raise ValueError(f"flip: repeated axis in {axis!r}")
    if not axes:
        return x
    return _push(x, "flip", axes, x.shape)


def _two_axes(x, fname):
    if x.ndim < 2:
        raise ValueError(f"{fname} works on the last two axes; got an expression of shape "
                         f"{_fmt(x.shape)}")


def _pair(p, what):
    if np.ndim(p) != 1 or len(p) != 2:
        raise ValueError(f"crop: {what} must be a pair of ints (along the last two axes), "
                         f"got {p!r}")
    return operator.index(p[0]), operator.index(p[1])


def crop(e, shape, offset=None):
    """The (h, w) window of ``e``'s last two axes (MShadow's ``crop``).

    Parameters
    ----------
    e : Expr or array_like, at least 2-D
    shape : (int, int)
        Height and width of the window.
    offset : (int, int), optional
        Its top-left corner; by default the window is centred (MShadow's
        ``(H - h) // 2, (W - w) // 2``).
    """
    x = _operand(e)
    _two_axes(x, "crop")
    h, w = _pair(shape, "shape")
    H, W = x.shape[-2:]
    if offset is None:
        y0, x0 = (H - h) // 2, (W - w) // 2
    else:
        y0, x0 = _pair(offset, "offset")
    if h < 0 or w < 0 or y0 < 0 or x0 < 0 or y0 + h > H or x0 + w > W:
        raise ValueError(f"crop: a ({h}, {w}) window at offset ({y0}, {x0}) does not fit in "
                         f"the last two axes of shape {_fmt(x.shape)}")
    out = x.shape[:-2] + (h, w)
    return _push(x, "crop", (y0, y0 + h, x0, x0 + w), out)


# ------------------------------------------------------ special nodes

def _pad_widths(pad_width):
    """((top, bottom), (left, right)) from p, (py, px) or ((t, b), (l, r))."""
    if type(pad_width) is int and pad_width >= 0:  # the common form, without NumPy's set-up
        return ((pad_width, pad_width), (pad_width, pad_width))
    try:
        pw = np.asarray(pad_width)
    except ValueError:  # ragged nesting
        pw = np.asarray(0.0)
    if pw.dtype.kind not in "iu" or pw.shape not in ((), (2,), (2, 2)):
        raise ValueError("pad_width must be an int p, a pair (py, px) or a pair of pairs "
                         f"((top, bottom), (left, right)), got {pad_width!r}")
    if pw.ndim == 0:
        pw = np.full((2, 2), pw)
    elif pw.ndim == 1:
        pw = np.stack([pw, pw], axis=1)
    if (pw < 0).any():
        raise ValueError(f"pad_width must be non-negative, got {pad_width!r}")
    return tuple(tuple(int(v) for v in row) for row in pw)


class Pad(Special):
    """``value`` around the last two axes of the child, the child inside."""

    __slots__ = ("widths", "fill")
    name = "pad"
    records_into = True  # into() only assigns: a kept plan records its passes

    def __init__(self, widths, fill):
        self.widths, self.fill = widths, fill

    def params(self):
        return (self.widths, self.fill.dtype.str, self.fill.tobytes())

    def describe(self):
        return [f"pad_width={self.widths}", f"value={self.fill!r}"]

    def value(self, args):
        out = np.empty(self.out_shape(args[0].shape), self.fill.dtype)
        self.into(out, args)
        return out

    def out_shape(self, shape):
        (top, bottom), (left, right) = self.widths
        return shape[:-2] + (shape[-2] + top + bottom, shape[-1] + left + right)

    def vjp(self, node, g):
        """Reverse mode: the interior of ``g`` (the border is a constant)."""
        (top, _), (left, _) = self.widths
        return (crop(g, node._args[0].shape[-2:], (top, left)),)

    def into(self, dst, args):
        (top, _), (left, _) = self.widths
        H, W = args[0].shape[-2:]
        rows, cols = slice(top, top + H), slice(left, left + W)
        for border in (dst[..., :top, :], dst[..., top + H:, :], dst[..., rows, :left],
                       dst[..., rows, left + W:]):
            core.assign(border, self.fill)
        core.assign(dst[..., rows, cols], args[0])


def pad(e, pad_width, value=0):
    """``e`` with a border of ``value`` around its last two axes (MShadow's ``pad``).

    Parameters
    ----------
    e : Expr or array_like, at least 2-D
    pad_width : int, (int, int) or ((int, int), (int, int))
        ``p`` pads every side by p; ``(py, px)`` pads top and bottom by py, left
        and right by px; ``((top, bottom), (left, right))`` gives each side.
    value : scalar
        Converted to ``e``'s dtype, as NumPy's ``pad`` does with ``constant_values``.

    Returns
    -------
    Expr
        Of shape (..., H + top + bottom, W + left + right), ``e``'s dtype.  As the
        root of an assignment it fills the border and evaluates ``e`` straight
        into the destination's interior.
    """
    x = _operand(e)
    _two_axes(x, "pad")
    widths = _pad_widths(pad_width)
    if type(value) not in (int, float):  # (Python numbers are scalars and not complex)
        if np.ndim(value):
            raise ValueError(f"pad: value must be a scalar, got an array of shape "
                             f"{np.shape(value)}")
        if np.iscomplexobj(value):
            raise TypeError(f"pad: pyet does not support complex values, got {value!r}")
    fill = np.empty((), x.dtype)
    fill[()] = value  # NumPy's scalar assignment, as np.pad does: errors on overflow and NaN
    kernel = Pad(widths, fill[()])
    return node(kernel, (x,), kernel.out_shape(x.shape), x.dtype)


class Concat(Special):
    """The children side by side along ``axis``."""

    __slots__ = ("axis", "_params")
    name = "concatenate"
    records_into = True  # into() only assigns: a kept plan records its passes
    into_leaves = core.join_leaves  # block copies of leaves, no Python frame

    def __init__(self, axis):
        self.axis = axis
        self._params = (axis,)

    def params(self):
        return self._params

    def describe(self):
        return [f"axis={self.axis}"]

    def value(self, args):
        shape = list(args[0].shape)
        shape[self.axis] = sum(a.shape[self.axis] for a in args)
        out = np.empty(shape, np.result_type(*[a.dtype for a in args]))
        self.into(out, args)
        return out

    def into(self, dst, args):
        if not core.recording():
            # nothing to fuse: block copies (join_into checks the leaves and
            # their dtype itself), or NumPy's own join, straight into dst (not
            # while a plan is recorded: its replays redo only the passes
            # assign() makes)
            if core.join_into(dst, args, self.axis):
                return
            if all([type(a) is core.Tensor and a.dtype == dst.dtype for a in args]):
                np.concatenate([a._array for a in args], self.axis, out=dst)
                return
        lead = (slice(None),) * self.axis
        start = 0
        for a in args:
            stop = start + a.shape[self.axis]
            core.assign(dst[lead + (slice(start, stop),)], a)
            start = stop

    def vjp(self, node, g):
        """Reverse mode: each piece's slice of ``g``."""
        lead = (slice(None),) * self.axis
        out, start = [], 0
        for a in node._args:
            stop = start + a.shape[self.axis]
            out.append(index(g, lead + (slice(start, stop), Ellipsis)))
            start = stop
        return tuple(out)


def _hashable(key):
    """A basic-indexing key with its slices as tuples (slices are unhashable
    before Python 3.12; params() must hash)."""
    return tuple(("slice", k.start, k.stop, k.step) if isinstance(k, slice) else
                 ("...",) if k is Ellipsis else k for k in key)


class Index(Special):
    """NumPy's basic indexing ``child[key]`` of a computed child."""

    __slots__ = ("key",)
    name = "index"

    def __init__(self, key):
        self.key = key

    def params(self):
        return _hashable(self.key)

    def value(self, args):
        return array_of(args[0])[self.key]

    def view(self, a):
        """The node's value from its child's value ``a`` (a view)."""
        return a[self.key]

    def vjp(self, node, g):
        return (index_adjoint(g, self.key, node._args[0].shape),)


class IndexAdjoint(Special):
    """Zeros of ``shape`` with the view ``[key]`` set to the child: the adjoint
    (reverse-mode gradient) of basic indexing."""

    __slots__ = ("key", "shape")
    name = "index_adjoint"
    records_into = True

    def __init__(self, key, shape):
        self.key, self.shape = key, shape

    def params(self):
        return (_hashable(self.key), self.shape)

    def value(self, args):
        out = np.empty(self.shape, args[0].dtype)
        self.into(out, args)
        return out

    def into(self, dst, args):
        core.assign(dst, 0)
        core.assign(dst[self.key], args[0])

    def vjp(self, node, g):
        return (index(g, self.key),)


def index(e, key):
    """``e[key]`` for a basic-indexing ``key`` (a tuple), lazily: a view of a
    tensor's memory, else the computed value's view."""
    x = _operand(e)
    if isinstance(x, core.Tensor):
        return view_of_leaf(x, "index", key, x._array[key])
    shape = np.broadcast_to(np.zeros((), np.bool_), x.shape)[key].shape
    return node(Index(key), (x,), shape, x.dtype)


def index_adjoint(g, key, shape):
    """Zeros of ``shape`` with ``[key]`` set to ``g``, lazily."""
    x = _operand(g)
    return node(IndexAdjoint(key, tuple(shape)), (x,), tuple(shape), x.dtype)


def _pieces(seq, fname):
    try:
        seq = list(seq)
    except TypeError:
        raise TypeError(f"{fname} takes a sequence of expressions or arrays, got "
                        f"{type(seq).__name__}") from None
    pieces = [_operand(p) for p in seq]  # TypeError naming an unsupported dtype
    if not pieces:
        raise ValueError(f"need at least one array to {fname.split('.')[-1]}")
    return pieces


def concatenate(seq, axis=0):
    """The expressions of ``seq`` joined along an existing ``axis`` (NumPy's
    ``concatenate``; ``axis=None`` flattens them first), lazily.

    The result's dtype is NumPy's ``result_type`` of the pieces.  As the root
    of an assignment each piece is evaluated straight into its slice of the
    destination.
    """
    kernel = _CONCAT.get(axis) if type(axis) is int else None
    if kernel is not None:  # (an axis joined before: the common join in one call)
        e = core.join_node(kernel, seq, axis)
        if e is not None:
            return e
    pieces = _pieces(seq, "concatenate")
    if axis is None:
        pieces = [reshape(p, -1) for p in pieces]
        axis = 0
    first = pieces[0]
    if first.ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    fshape = first.shape
    nd = len(fshape)
    if type(axis) is not int or not 0 <= axis < nd:
        axis = core.axis_index(axis, nd)
    lead, tail = fshape[:axis], fshape[axis + 1:]
    for i, p in enumerate(pieces[1:], 1):
        s = p.shape
        if len(s) == nd and s[:axis] == lead and s[axis + 1:] == tail:
            continue  # (the common case in one comparison; the messages below)
        if p.ndim != first.ndim:
            raise ValueError("all the input arrays must have same number of dimensions, but the "
                             f"array at index 0 has {first.ndim} dimension(s) and the array at "
                             f"index {i} has {p.ndim} dimension(s)")
        for d in range(first.ndim):
            if d != axis and p.shape[d] != first.shape[d]:
                raise ValueError("all the input array dimensions except for the concatenation "
                                 f"axis must match exactly, but along dimension {d}, the array "
                                 f"at index 0 has size {first.shape[d]} and the array at index "
                                 f"{i} has size {p.shape[d]}")
    shape = list(first.shape)
    shape[axis] = sum([p.shape[axis] for p in pieces])
    return _concat_node(pieces, axis, shape)


def _concat_node(pieces, axis, shape):
    # the join of checked pieces: NumPy's result_type only for mixed dtypes (~1 us)
    kernel = _CONCAT.get(axis)
    if kernel is None:
        kernel = _CONCAT[axis] = Concat(axis)
    e = core.join_node(kernel, pieces, axis)  # one dtype
    if e is not None:
        return e
    dtype = np.result_type(*[p.dtype for p in pieces])
    core.dtype_code(dtype)
    return node(kernel, pieces, shape, dtype)


# Concat kernels by axis (a kernel only holds its parameters: one per axis serves every node)
_CONCAT = {}


# the index key of a new axis at k, (:, ..., :, None, ...), by k (as core's expand view)
_EXPAND_KEYS = [(slice(None),) * k + (None, Ellipsis) for k in range(65)]


def _stack_leaves(seq, axis):
    """stack's node for the common call in one pass (leaves of one shape in a
    list or tuple, a plain int axis in range): each leaf's expand view made
    as _push makes it, then the join; None otherwise (stack's general way,
    with its checks and messages).  Two 64 x 64 leaves: ~3.7 us -> ~1.5."""
    if (type(seq) is not list and type(seq) is not tuple) or not seq \
            or type(axis) is not int or type(seq[0]) is not _Tensor:
        return None
    shape = seq[0].shape
    if not 0 <= axis <= len(shape) or len(shape) >= 64:
        return None
    key = _EXPAND_KEYS[axis]
    pieces = []
    for p in seq:
        if type(p) is not _Tensor or p.shape != shape:
            return None
        pieces.append(view_of_leaf(p, "expand", axis, p._array[key]))
    kernel = _CONCAT.get(axis)
    if kernel is None:
        kernel = _CONCAT[axis] = Concat(axis)
    return core.join_node(kernel, pieces, axis)


def stack(seq, axis=0):
    """The expressions of ``seq``, all of one shape, joined along a new ``axis``
    (NumPy's ``stack``), lazily."""
    e = _stack_leaves(seq, axis)
    if e is not None:
        return e
    pieces = _pieces(seq, "stack")
    shape = pieces[0].shape
    for i, p in enumerate(pieces[1:], 1):
        if p.shape != shape:
            raise ValueError(f"all input arrays must have the same shape: the array at index 0 "
                             f"has shape {_fmt(shape)} and the array at index {i} has shape "
                             f"{_fmt(p.shape)}")
    if type(axis) is not int or not 0 <= axis <= len(shape):  # (the common axis as it is)
        axis = core.axis_index(axis, len(shape) + 1)
    new = shape[:axis] + (1,) + shape[axis:]
    # the pieces are checked: their join without concatenate's checks again
    return _concat_node([_push(p, "expand", axis, new) for p in pieces], axis,
                        shape[:axis] + (len(pieces),) + shape[axis:])


__all__ = ["broadcast_to", "broadcast_with_axis", "concatenate", "crop", "flip", "pad", "repmat",
           "reshape", "stack"]
