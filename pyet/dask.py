"""pyet trees over Dask arrays: one fused task per output chunk.

A leaf made by :func:`asarray` (or :func:`pyet.asarray`) from a
``dask.array.Array`` stays lazy; operators and functions on it build the same
pyet trees as on NumPy-backed tensors, with the same shape, dtype and
broadcasting checks when each node is built.  :func:`to_dask` turns a tree into
a Dask array:

- an elementwise tree is ONE ``da.blockwise`` layer whose task, per output
  chunk, rebuilds the tree over that chunk's blocks and runs pyet's fused
  evaluator on it (plain Dask makes one task, and one temporary chunk, per
  operation).  Operands' chunks are aligned by Dask's own unification;
  NumPy operands are split into Dask arrays along the same chunks;
- a reduction is Dask's tree reduction (``da.reduction``): each chunk's task
  folds its blocks of the tree below straight into the partial result with
  pyet's fused reduction kernel (that tree is never materialized), and the
  combine and aggregate steps are pyet reductions too;
- ``dot``/``@``/``tensordot``/``batch_dot`` are Dask's blocked products, pyet's
  product (BLAS gemm) on each pair of blocks, the partial products summed;
- views and shape-changing expressions (transpose, broadcast, reshape, flip,
  crop, index, pad, concatenate, stack) are Dask's own.

Tasks pickle: they carry the tree's flattened structure (never a compiled
program), and each worker rebuilds the tree over its blocks; its plan is
lowered there once and cached.  Inside a task pyet uses one thread unless told
otherwise (Dask supplies the parallelism).

Dask is optional: ``import pyet`` never imports it; this module does.
"""

import contextlib
import functools
import threading

import dask
import dask.array as da
import numpy as np
from dask.base import tokenize

from pyet._core import core
from pyet._core.core import Product, Special, View, node
from pyet._kernels import parallel
from pyet._nodes.reductions import Reduction, _accumulator, _result_dtype, reduction
from pyet._nodes.softmax import Softmax, log_softmax, softmax
from pyet._nodes.views import Concat, Index, Pad

__all__ = ["DaskArray", "asarray", "compute", "evaluate", "is_dask_array", "store", "to_dask"]

#: pyet's threads inside a Dask task (None: leave pyet's setting alone)
TASK_THREADS = 1


# ------------------------------------------------------------------ leaves

def is_dask_array(obj):
    """True for a ``dask.array.Array`` (duck typing: Dask is not imported)."""
    return type(obj).__module__.startswith("dask.array") and hasattr(obj, "__dask_graph__") \
        and hasattr(obj, "chunks")


class DaskArray(Special):
    """A leaf standing for a Dask array: no memory here, the array's chunks are
    read by the tasks :func:`to_dask` makes.  Evaluated outside Dask (``dst[...] =
    expr``, ``np.asarray(expr)``), it is computed whole first."""

    __slots__ = ("array",)
    name = "dask_array"
    # found by pyet.evaluate (which must not import this module): a tree with
    # such a leaf is computed through Dask
    dask_source = True

    def __init__(self, array):
        self.array = array

    def params(self):
        # Dask's name is a token of the array's graph: equal names, equal values
        return (self.array.name,)

    def describe(self):
        return [f"chunks={self.array.chunks}"]

    def value(self, args):
        return np.asarray(self.array.compute())

    def evaluate_tree(self, expr):
        # Expr.compute() on a tree with this leaf: the current Dask scheduler
        return evaluate(expr)

    def permuted(self, node, axes):
        return asarray(self.array.transpose(axes))


def asarray(obj, dtype=None):
    """A lazy pyet leaf over a ``dask.array.Array`` (or any array: NumPy data
    becomes an ordinary :class:`pyet.Tensor`).

    Parameters
    ----------
    obj : dask.array.Array or array_like
    dtype : data-type, optional
        Convert to this dtype (lazily, with Dask's ``astype``).

    Returns
    -------
    Expr
        Of the array's shape and dtype; nothing is computed.

    Raises
    ------
    TypeError
        If the dtype is not bool, int32, int64, float32 or float64.
    ValueError
        If the Dask array's shape is unknown (NaN chunk sizes).
    """
    if not is_dask_array(obj):
        from pyet._tensor_api import asarray as numpy_asarray
        return numpy_asarray(obj, dtype)
    if dtype is not None:
        obj = obj.astype(dtype)
    core.dtype_code(obj.dtype)  # TypeError naming an unsupported dtype
    if any(np.isnan(n) for n in obj.shape):
        raise ValueError(f"pyet needs known shapes; this Dask array's shape is {obj.shape} "
                         "(call compute_chunk_sizes() first)")
    return node(DaskArray(obj), (), obj.shape, obj.dtype)


# ------------------------------------------------------------- threads

_threads_lock = threading.Lock()
_threads_users = 0
_threads_saved = None


@contextlib.contextmanager
def _task_threads():
    """pyet on TASK_THREADS threads while any task of this process runs (the
    setting is process-wide; the first task in saves it, the last out restores it)."""
    global _threads_users, _threads_saved
    if TASK_THREADS is None:
        yield
        return
    with _threads_lock:
        if _threads_users == 0:
            _threads_saved = parallel.get_num_threads()
            parallel.set_num_threads(TASK_THREADS)
        _threads_users += 1
    try:
        yield
    finally:
        with _threads_lock:
            _threads_users -= 1
            if _threads_users == 0:
                parallel.set_num_threads(_threads_saved)


# ----------------------------------------------------- trees as templates

_LEAF, _SCALAR, _PYFUNC = (core.OPCODES[name] for name in ("leaf", "scalar", "pyfunc"))


class _Template:
    """An elementwise tree cut at its operands: the flattened structure (the
    format of pyet's pickling, ``core._unflatten``) with each array operand a
    numbered slot, and the operands as Dask arrays.  Scalars and 0-d arrays
    stay in the structure."""

    def __init__(self, root, convert):
        self.order = []
        self.inputs = []
        index = {}
        stack = [(root, False)]
        while stack:
            e, done = stack.pop()
            if id(e) in index:
                continue
            if _is_operand(e):
                index[id(e)] = len(self.order)
                self.order.append((("input", len(self.inputs)), ()))
                self.inputs.append(convert(e))
                continue
            if not done:
                stack.append((e, True))
                stack.extend((a, False) for a in reversed(e._args) if id(a) not in index)
                continue
            kids = tuple(index[id(a)] for a in e._args)
            index[id(e)] = len(self.order)
            if e._op == _LEAF:  # (0-d: the others are operands)
                state = ("leaf", np.array(e._array))
            elif e._op == _SCALAR:
                state = ("scalar", e._value, e._dt, e._weak)
            elif e._op == _PYFUNC:
                state = ("pyfunc", e._fn, e._dt, e._grad)
            else:
                state = ("op", core.OPNAMES[e._op], e._cdt, e._dt)
            self.order.append((state, kids))


def _is_operand(e):
    # a slot of the template: a special node, or a leaf with at least one axis
    return isinstance(e, core.SpecialNode) or (isinstance(e, core.Tensor) and e.ndim > 0)


def _rebuild(order, blocks):
    """The tree of a template over ndarray ``blocks`` (one per slot)."""
    return core._unflatten([((("leaf", blocks[s[1]]) if s[0] == "input" else s), kids)
                            for s, kids in order])


def _evaluate_block(order, dtype, *blocks):
    tree = _rebuild(order, blocks)
    out = np.empty(tree.shape, dtype)
    with _task_threads():
        core.assign(out, tree)
    return out


def _reduce_block(order, kind, axes, dtype, *blocks):
    """A chunk's partial reduction (keepdims) of the tree over its blocks, in
    one fused pass; an empty block gives the reduction's identity."""
    tree = _rebuild(order, blocks)
    shape = tuple(1 if i in axes else n for i, n in enumerate(tree.shape))
    if 0 in [tree.shape[a] for a in axes]:
        return np.full(shape, _identity(kind, dtype), dtype)
    if tree.dtype != dtype:
        tree = tree.astype(dtype)
    with _task_threads():
        return core.array_of(reduction(kind, tree, axes, keepdims=True))


def _softmax_block(x, axis, log):
    with _task_threads():
        return core.array_of((log_softmax if log else softmax)(core.tensor(x), axis))


def _identity(kind, dtype):
    return _accumulator(kind, np.dtype(dtype))[1]


def _combine_block(x, axis, keepdims, kind):
    with _task_threads():
        return core.array_of(reduction(kind, core.tensor(np.ascontiguousarray(x)), axis,
                                       keepdims=keepdims))


def _first_step(x, axis, keepdims):
    # the partials are already reduced per chunk (keepdims): nothing left to do
    return x


def _aggregate_block(x, axis, keepdims, kind, count, dtype):
    total = _combine_block(x, axis, keepdims, _PARTIAL_KIND[kind])
    if kind == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            total = total / count if count else np.full(total.shape, np.nan)
    return np.asarray(total, dtype=dtype)


# per reduction kind: what the chunks compute (a mean is a sum, divided at the end)
_PARTIAL_KIND = {"sum": "sum", "mean": "sum", "prod": "prod", "max": "max", "min": "min",
                 "all": "all", "any": "any"}


# ------------------------------------------------------------- conversion

def to_dask(expr):
    """The ``dask.array.Array`` of pyet expression ``expr``.

    Parameters
    ----------
    expr : Expr, dask.array.Array or array_like

    Returns
    -------
    dask.array.Array
        Of ``expr``'s shape and dtype.  An elementwise tree is one task per
        output chunk; reductions, products and views are Dask's own layers with
        pyet's fused kernels in their tasks.  Nothing is computed.

    Raises
    ------
    TypeError
        For a special node Dask has no blocked form of here (the
        neural-network blocks but softmax and log_softmax, whose axis is
        rechunked into one chunk): compute it from NumPy data instead.
    """
    if is_dask_array(expr):
        return expr
    e = core.as_expr(expr)
    return _Converter().array(e)


class _Converter:
    """Converts one tree; a node seen twice becomes one Dask array."""

    def __init__(self):
        self.memo = {}

    def array(self, e):
        hit = self.memo.get(id(e))
        if hit is None:
            hit = self.memo[id(e)] = (e, self._convert(e))  # (e kept alive: its id stays)
        return hit[1]

    def _convert(self, e):
        if isinstance(e, core.Tensor):
            return _from_numpy(e._array)
        if isinstance(e, core.Scalar):
            return da.from_array(np.asarray(e._value, dtype=e.dtype))
        if isinstance(e, core.SpecialNode):
            return self._special(e)
        return self._elementwise(e)

    def _operand(self, e):
        if isinstance(e, core.Tensor):
            return _strip_broadcast(e._array)
        return self.array(e)

    def _elementwise(self, e):
        t = _Template(e, self._operand)
        nd = e.ndim
        out_ind = tuple(range(nd))
        args = _blockwise_args(t, nd)
        return da.blockwise(functools.partial(_evaluate_block, t.order, e.dtype), out_ind, *args,
                            dtype=e.dtype, meta=np.empty((0,) * nd, e.dtype),
                            name="pyet-" + tokenize(t.order, *t.inputs), align_arrays=True)

    def _special(self, e):
        k = e._kernel
        if isinstance(k, DaskArray):
            return k.array
        if isinstance(k, Reduction):
            return self._reduction(e, k)
        if isinstance(k, Product):
            return self._product(e, k)
        if isinstance(k, View):
            return _dask_view(self.array(e._args[0]), k.kind, k.arg)
        if isinstance(k, Index):
            return self.array(e._args[0])[k.key]
        if isinstance(k, Concat):
            return da.concatenate([self.array(a).astype(e.dtype) for a in e._args], axis=k.axis)
        if isinstance(k, Softmax):
            # rows are whole in every chunk: the axis in one chunk, a task per chunk
            x = self.array(e._args[0]).rechunk({k.axis: -1})
            return x.map_blocks(_softmax_block, axis=k.axis, log=k.log, dtype=e.dtype,
                                meta=np.empty((0,) * e.ndim, e.dtype),
                                name="pyet-" + k.name + "-" + tokenize(x, k.axis, k.log))
        if isinstance(k, Pad):
            x = self.array(e._args[0])
            widths = ((0, 0),) * (x.ndim - 2) + tuple(k.widths)
            return da.pad(x, widths, mode="constant", constant_values=k.fill)
        raise TypeError(f"pyet.dask: no blocked form of {k.name} nodes; evaluate them on "
                        "NumPy data (pyet.asarray(dask_array.compute())) or in a "
                        "map_blocks of your own")

    def _reduction(self, e, k):
        child = e._args[0]
        if k.kind in ("argmax", "argmin"):  # Dask's own (value, index) reduction
            axis = None if k.whole else k.axes[0]
            x = self.array(child)
            # Dask's arg reductions fail on empty chunks: drop them (the whole is not empty)
            drop = {i: tuple(n for n in c if n) for i, c in enumerate(x.chunks)
                    if 0 in c and (axis is None or i == axis)}
            return getattr(da, k.kind)(x.rechunk(drop) if drop else x, axis=axis,
                                       keepdims=k.keepdims)
        axes = k.axes
        if not axes:  # nothing reduced: the value itself, in the result's dtype
            return self.array(child).astype(e.dtype)
        part = _PARTIAL_KIND[k.kind]
        part_dtype = _partial_dtype(k.kind, child.dtype)
        t = _Template(child, self._operand)
        nd = child.ndim
        ind = tuple(range(nd))
        args = _blockwise_args(t, nd)
        partial = da.blockwise(
            functools.partial(_reduce_block, t.order, part, axes, part_dtype), ind, *args,
            dtype=part_dtype, meta=np.empty((0,) * nd, part_dtype),
            adjust_chunks={a: 1 for a in axes}, name="pyet-" + part + "-" + tokenize(
                t.order, axes, *t.inputs), align_arrays=True)
        count = int(np.prod([child.shape[a] for a in axes], dtype=np.int64))
        out_dtype = e.dtype
        return da.reduction(
            partial, _first_step,
            _partial_fn(_aggregate_block, kind=k.kind, count=count, dtype=out_dtype),
            axis=axes, keepdims=k.keepdims, dtype=out_dtype,
            combine=_partial_fn(_combine_block, kind=part), concatenate=True,
            meta=np.empty((0,) * e.ndim, out_dtype), name="pyet-" + k.kind)

    def _product(self, e, k):
        x, y = e._args
        a, b = self.array(x), self.array(y)
        if k.batch:
            return _blocked_product(a if a.ndim == 3 else a[None], b if b.ndim == 3 else b[None],
                                    e.dtype, batch=True)
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        out = _blocked_product(a2, b2, e.dtype, batch=False)
        if a.ndim == 1 and b.ndim == 1:
            return out[0, 0]
        if a.ndim == 1:
            return out[0]
        if b.ndim == 1:
            return out[:, 0]
        return out


def _partial_fn(fn, **kw):
    """``fn`` with keywords bound (a picklable, tokenizable callable)."""
    return functools.partial(fn, **kw)


def _partial_dtype(kind, dtype):
    """The dtype chunks reduce into: float sums and means in float64 (pyet's
    accumulator), integer sums in int64, others in the result's dtype."""
    if kind in ("sum", "mean"):
        return np.dtype(np.float64) if dtype.kind == "f" or kind == "mean" else \
            np.dtype(np.int64)
    return _result_dtype(kind, dtype)


def _product_block(a, b, dtype, batch):
    # one block pair's product with pyet's gemm; a new axis for the inner block index
    with _task_threads():
        fn = core.batch_dot if batch else core.dot
        out = np.empty(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) +
                       (a.shape[-2], b.shape[-1]), dtype)
        core.assign(out, fn(core.tensor(a), core.tensor(b)))
    return out


def _blocked_product(a, b, dtype, batch):
    """Dask's blocked matrix product of 2-D (or stacked 3-D) ``a`` and ``b``:
    pyet's product on each pair of blocks, the partial products of the inner
    blocks summed."""
    lead = "z" if batch else ""
    ai, bi = lead + "ij", lead + "jk"
    if len(a.chunks[-1]) == 1 and len(b.chunks[-2]) == 1:  # one inner block: no sum
        return da.blockwise(functools.partial(_product_block, dtype=dtype, batch=batch),
                            lead + "ik", a, ai, b, bi, dtype=dtype, concatenate=True,
                            meta=np.empty((0,) * a.ndim, dtype),
                            name="pyet-dot-" + tokenize(a, b, batch))
    parts = da.blockwise(functools.partial(_product_partial, dtype=dtype, batch=batch),
                         lead + "ijk", a, ai, b, bi, dtype=dtype,
                         adjust_chunks={"j": lambda n: 1},
                         meta=np.empty((0,) * (a.ndim + 1), dtype),
                         name="pyet-dot-" + tokenize(a, b, batch))
    inner = a.ndim - 1
    return da.reduction(parts, _first_step,
                        _partial_fn(_aggregate_block, kind="sum", count=1, dtype=dtype),
                        axis=inner, keepdims=False, dtype=dtype,
                        combine=_partial_fn(_combine_block, kind="sum"), concatenate=True,
                        meta=np.empty((0,) * a.ndim, dtype), name="pyet-dot-sum")


def _product_partial(a, b, dtype, batch):
    return _product_block(a, b, dtype, batch)[..., None, :]


def _strip_broadcast(arr):
    """A NumPy operand without its broadcast (0-stride) axes, which become
    axes of length 1: Dask broadcasts those, and a task never ships the
    broadcast copy."""
    if 0 not in arr.strides or arr.size == 0:
        return arr
    return arr[tuple(slice(0, 1) if s == 0 and n > 1 else slice(None)
                     for s, n in zip(arr.strides, arr.shape, strict=True))]


def _from_numpy(arr):
    x = da.from_array(_strip_broadcast(arr), name=False)
    return x if x.shape == arr.shape else da.broadcast_to(x, arr.shape)


def _blockwise_args(t, nd):
    # da.blockwise's (array, index) pairs for a template's inputs, broadcast
    # against nd output dimensions, NumPy operands chunked like the Dask ones
    ind = tuple(range(nd))
    args = []
    for x in t.inputs:
        args += [x, ind[nd - x.ndim:]]
    return _chunk_numpy_like(args, nd)


def _chunk_numpy_like(args, nd):
    """(array, index) pairs with every NumPy array split into a Dask array
    along the chunks the Dask operands have on the same output axes, so that
    the tasks each get their block and nothing is rechunked."""
    chunks = [None] * nd
    for x, ind in zip(args[::2], args[1::2], strict=True):
        if is_dask_array(x):
            for c, i in zip(x.chunks, ind, strict=True):
                if chunks[i] is None and (len(c) > 1 or sum(c) > 1):
                    chunks[i] = c
    out = []
    for x, ind in zip(args[::2], args[1::2], strict=True):
        if isinstance(x, np.ndarray):
            want = tuple(c if n > 1 and c is not None and sum(c) == n else (n,)
                         for n, c in zip(x.shape, (chunks[i] for i in ind), strict=True))
            x = da.from_array(x, chunks=want, name=False)  # (name=False: no hash of the data)
        out += [x, ind]
    return out


def _dask_view(x, kind, arg):
    """Dask's own form of a pyet view (``core.VIEWS``)."""
    if kind == "broadcast_to":
        return da.broadcast_to(x, arg)
    if kind == "transpose":
        return x.transpose(arg)
    if kind == "flip":
        return da.flip(x, arg)
    if kind == "crop":
        y0, y1, x0, x1 = arg
        return x[..., y0:y1, x0:x1]
    if kind == "expand":
        return da.expand_dims(x, arg)
    if kind == "reshape":
        return x.reshape(arg)
    if kind == "index":
        return x[arg]
    raise TypeError(f"pyet.dask: unknown view {kind!r}")


# ------------------------------------------------------------ computing

def _local_scheduler():
    get = dask.base.get_scheduler()
    return get is None or get in (dask.threaded.get, dask.local.get_sync)


def compute(expr, **kwargs):
    """``expr``'s value as an ndarray, computed by the current Dask scheduler
    (``kwargs`` go to ``dask.compute``)."""
    return np.asarray(dask.compute(to_dask(expr), **kwargs)[0])


def evaluate(expr, out=None):
    """:func:`pyet.evaluate` for a tree with Dask-backed leaves: computed by
    the current Dask scheduler, one fused task per chunk.

    Parameters
    ----------
    expr : Expr
    out : ndarray or Tensor, optional
        Destination: ``expr`` is broadcast to its shape and cast to its dtype
        (``same_kind``); checked before anything is computed.  With a local
        scheduler each chunk is written straight into it.

    Returns
    -------
    Tensor or the given ``out``
    """
    from pyet._tensor_api import empty

    e = core.as_expr(expr)
    result = out
    if out is None:
        result = empty(e.shape, e.dtype)
    dst = result.numpy() if isinstance(result, core.Tensor) else result
    core.check_assignment(dst, e)  # shape, dtype casting, writable: before any work
    x = to_dask(e)
    if x.shape != dst.shape:
        x = da.broadcast_to(x, dst.shape)
    if x.dtype != dst.dtype:
        x = x.astype(dst.dtype, casting="same_kind")
    if _local_scheduler():
        da.store(x, dst, lock=False)  # each chunk written into its region of dst
    else:
        np.copyto(dst, np.asarray(x.compute()))
    return result


def store(expr, target, **kwargs):
    """Write ``expr`` into ``target`` (a zarr array, an HDF5 dataset, an ndarray
    or anything else ``dask.array.store`` accepts), chunk by chunk: only a few
    chunks per worker are in memory at once.

    Parameters
    ----------
    expr : Expr
        Of ``target``'s shape.
    target : array-like supporting ``target[region] = block``
    **kwargs
        Passed to ``dask.array.store`` (``lock``, ``compute``, ``return_stored``...).

    Returns
    -------
    What ``dask.array.store`` returns (None once computed, by default).
    """
    x = to_dask(expr)
    if tuple(target.shape) != x.shape:
        raise ValueError(f"pyet.dask.store: the expression's shape {x.shape} differs from "
                         f"the target's {tuple(target.shape)}")
    return da.store(x, target, **kwargs)
