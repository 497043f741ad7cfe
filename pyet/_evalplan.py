"""Deferred evaluation of many statements (MetaNN's ``EvalRegister`` /
``EvalPlan::Eval``): statements are registered, checked at once, and run
together; what they share is computed once."""

import numpy as np

from pyet._core import core
from pyet._core.core import Tensor
from pyet._core.schedule_cache import ScheduleCache
from pyet._tensor_api import empty

_UPDATES = {"=": None, "+=": "__add__", "-=": "__sub__", "*=": "__mul__", "/=": "__truediv__"}


class Handle:
    """A result registered with :meth:`EvalPlan.register`; ``value`` is its
    Tensor once the plan has run."""

    __slots__ = ("expr", "_value")

    def __init__(self, expr):
        self.expr = expr
        self._value = None

    @property
    def value(self):
        if self._value is None:
            raise RuntimeError("the plan holding this result has not run yet")
        return self._value

    def __repr__(self):
        state = "computed" if self._value is not None else "pending"
        return f"Handle({state}, shape={self.expr.shape}, dtype={self.expr.dtype})"


class EvalPlan:
    """Statements evaluated together, with the result of running them one by
    one in the order registered.

    Every check (shapes, dtypes, casting, a writable destination) happens when
    a statement is registered.  When the plan runs, a product, reduction or
    other special node that several statements compute -- the same structure
    over the same memory, whether or not the same Python object -- is computed
    once, unless a statement in between wrote memory it reads.

    Examples
    --------
    >>> plan = pyet.EvalPlan()
    >>> plan.assign(y1, pyet.sigmoid(pyet.dot(x, W) + b))
    >>> h = plan.register(2 * pyet.sigmoid(pyet.dot(x, W) + b))
    >>> plan.run()          # one gemm for both statements
    >>> h.value
    """

    def __init__(self):
        self._statements = []
        # a kept plan's recorded run: (actions, KeptSchedule over the results or
        # None, the result handles, the results' scratch when there is no KeptSchedule)
        self._schedule = None

    def __len__(self):
        return len(self._statements)

    def assign(self, dst, expr, op="="):
        """Register ``dst[...] op expr`` (op one of ``= += -= *= /=``)."""
        if op not in _UPDATES:
            raise ValueError(f"EvalPlan.assign: op must be one of {sorted(_UPDATES)}, "
                             f"got {op!r}")
        if not isinstance(dst, (Tensor, np.ndarray)):
            raise TypeError(f"EvalPlan.assign: destination must be an ndarray or "
                            f"pyet.Tensor, got {type(dst).__name__}")
        if _UPDATES[op] is None:  # dst = expr: no node over dst needed
            arr = dst.numpy() if isinstance(dst, Tensor) else dst
            value = expr
        else:
            target = dst if isinstance(dst, Tensor) else core.as_expr(dst)
            arr = target.numpy()
            value = getattr(target, _UPDATES[op])(expr)
        self._statements.append((arr, core.check_assignment(arr, value), None))
        self._schedule = None

    def register(self, expr):
        """Register a result; returns a :class:`Handle` whose ``value`` exists
        once the plan has run."""
        e = core.as_expr(expr)
        handle = Handle(e)
        self._statements.append((None, e, handle))
        self._schedule = None
        return handle

    def run(self, keep=False):
        """Evaluate every registered statement in order, then empty the plan
        (with ``keep=True`` the statements stay registered: running again
        reads the operands' memory as it is then, as a training loop does;
        each registered result gets a new Tensor per run).

        Consecutive elementwise statements over destinations of one shape run
        as one pass over memory (an optimizer's statements on one parameter
        read each operand once per block and write every destination).  If a
        statement raises (a user function, a negative integer power), every
        destination is put back as it was: nothing has been written.

        A kept plan records what its first run did (passes, products, shared
        special nodes, scratch) and later runs replay it: the same work,
        without registering, grouping or lowering again (the statements and
        their memory are the same; only the values in it change).
        """
        if keep and self._schedule is not None:
            actions, kept, handles, outs = self._schedule
            if kept is None:  # (not replayable over other memory: copies)
                core.replay(actions)
                self._hand_out(list(zip(handles, outs, strict=True)))
                return
            # the results' memory is written again unless the caller still
            # holds what the last run handed out (then new memory: kept.run)
            for handle in handles:
                handle._value = None
            for handle, arr in zip(handles, kept.run([]), strict=True):
                handle._value = core.tensor(arr)
            return
        statements = self._statements
        self._schedule = None
        if not keep:
            self._statements = []
            if _run_by_structure(statements):
                return
        dsts, exprs, results = [], [], []
        for dst, e, handle in statements:
            if handle is not None:
                out = empty(e.shape, e.dtype)
                dst = out.numpy()
                results.append((handle, out))
            dsts.append(dst)
            exprs.append(e)
        actions = core.run_statements(dsts, exprs, keep)
        if actions is None:
            for handle, out in results:
                handle._value = out
            return
        try:  # later runs write results in memory of their own (handed out as it is)
            kept = core.KeptSchedule(actions, [out.numpy() for _, out in results], 0)
        except ValueError:
            kept = None
        for handle, out in results:
            handle._value = out
        self._schedule = (actions, kept, [handle for handle, _ in results],
                          [out for _, out in results] if kept is None else None)

    @staticmethod
    def _hand_out(results):
        # a kept plan writes its results into the same scratch every run:
        # each run hands out new Tensors
        for handle, out in results:
            t = empty(out.shape, out.dtype)
            np.copyto(t.numpy(), out.numpy())
            handle._value = t

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.run()
        else:
            self._statements = []
            self._schedule = None
        return False

    def __repr__(self):
        return explain(self)


# ------------------------------------------- plans recorded by structure
#
# A training loop builds the same trees every step over new arrays (as
# PyTorch builds its graph) and evaluates them with a new plan.  A plan's
# structure key (core.structure_key: ops, scalars, kernel parameters, each
# leaf's and destination's shape, strides, dtype and overlaps) names
# everything its planning depends on besides the arrays' memory: the second
# run of a structure is recorded as a KeptSchedule, later runs replay it over
# their own arrays (the same actions in the same order: the same results as a
# fresh evaluation) without sharing, grouping or lowering again.  Results are
# handed out without copies: a run writes new memory while an earlier run's
# results are still referenced.  value_and_grad keeps its own schedules (it
# records on the first call: a tree it differentiates is a training step).

# recorded on second sight: a plan run once costs no recording
SCHEDULES = ScheduleCache(size=8, pool=2, record_first=False)


def clear_plan_cache():
    """Forget the schedules plans recorded by structure (and the arrays they hold)."""
    SCHEDULES.clear()


def _run_by_structure(statements):
    """Run a plan's statements ``(dst or None, expr, handle or None)`` through
    a schedule recorded for their structure; False when the plan is to be run
    the ordinary way (a structure met for the first time, not replayable, or
    a plan run inside another evaluation)."""
    if not statements or core.evaluating():
        return False
    flags = 0
    for _, e, _ in statements:
        flags |= e._flags
    if flags & core.UNCACHEABLE or not flags & core.PLANNED:
        # (only elementwise statements: their programs are cached by structure
        # already, and grouping them costs less than a structure key: 10
        # statements of n = 100 ran in 91 us with the key, 57 without)
        return False
    roots, which = [], []
    for dst, e, handle in statements:
        if handle is None:  # the destination's memory, as a leaf of the key
            roots.append(core.tensor(dst))
        roots.append(e)
        which.append(handle is None)
    key, slots = SCHEDULES.key(roots, [], ("plan", tuple(which)))
    results, record = SCHEDULES.replay(key, slots)
    if results is None and not record:
        return False
    if results is None:  # recorded, with results of its own
        dsts, results = [], []
        for dst, e, handle in statements:
            if handle is not None:
                dst = empty(e.shape, e.dtype).numpy()
                results.append(dst)
            dsts.append(dst)
        actions = core.run_statements(dsts, [e for _, e, _ in statements], True)
        SCHEDULES.keep(key, actions, slots + results, len(slots))
    it = iter(results)
    for _, _, handle in statements:
        if handle is not None:
            handle._value = core.tensor(next(it))
    return True


def evaluate_all(exprs, outs=None):
    """Evaluate several expressions together (one :class:`EvalPlan`).

    Parameters
    ----------
    exprs : sequence of Expr, array_like or scalar
    outs : sequence of (ndarray, Tensor or None), optional
        Destinations; None entries (or no ``outs``) get new tensors.

    Returns
    -------
    list of Tensor or the given destinations
    """
    exprs = list(exprs)
    outs = [None] * len(exprs) if outs is None else list(outs)
    if len(outs) != len(exprs):
        raise ValueError(f"evaluate_all: {len(exprs)} expressions but {len(outs)} outs")
    plan = EvalPlan()
    results = []
    for e, out in zip(exprs, outs, strict=True):
        if out is None:
            results.append(plan.register(e))
        else:
            plan.assign(out, e)
            results.append(out)
    plan.run()
    return [r.value if isinstance(r, Handle) else r for r in results]


def explain(what, out=None):
    """What evaluating an expression, or running a plan, will do: for each
    statement the root's way (one gemm with its alpha and beta, a special node
    straight into the destination, or an elementwise pass), the special nodes
    computed into scratch (with sizes, and how often a shared one is used), the
    elementwise program after the rewrite rules, operands copied because they
    overlap the destination, and the threads.  Nothing is computed.

    Parameters
    ----------
    what : Expr or EvalPlan
    out : ndarray or Tensor, optional
        The destination of an expression (by default a new array).

    Returns
    -------
    str
    """
    if isinstance(what, EvalPlan):
        lines = [f"EvalPlan of {len(what)} statement(s); special nodes of equal structure "
                 "over the same memory, and costly elementwise subtrees read more than "
                 "once (shown as shared), are computed once per run"]
        arrays = [dst if dst is not None else np.empty(e.shape, e.dtype)
                  for dst, e, handle in what._statements]
        exprs = [e for _, e, _ in what._statements]
        passes = {ks[0]: (ks, nregs, text) for ks, nregs, text in
                  core.explain_statements(arrays, exprs)}
        fused = {k for ks, _, _ in passes.values() for k in ks}
        run_as = core.shared_statements(exprs, arrays)
        for k, (dst, e, handle) in enumerate(what._statements):
            target = "result" if handle is not None else f"dst{tuple(dst.shape)}"
            lines.append(f"[{k}] {target} = {e!r}")
            lines.extend("    " + line for line in core.rewrite_notes(e))
            if k in passes:
                ks, nregs, text = passes[k]
                lines.append(f"    one pass writing statements {ks} (dst{{k}} is statement "
                             f"k's destination), {nregs} block register(s):")
                lines.extend("      " + line for line in text.split("\n"))
            elif k in fused:
                lines.append("    (in the pass above)")
            else:
                lines.extend("    " + line
                             for line in core.explain_assignment(arrays[k], run_as[k]))
        if what._schedule is not None:
            actions, kept = what._schedule[:2]
            actions = actions if kept is None else kept.replays
            lines.append(f"kept and recorded: each run replays {len(actions)} action(s):")
            lines.extend(f"  {a!r}" for a in actions)
        return "\n".join(lines)
    e = core.as_expr(what)
    if out is None:
        out = np.empty(e.shape, e.dtype)
    dst = out.numpy() if isinstance(out, Tensor) else out
    return "\n".join([repr(e)] + core.rewrite_notes(e) + core.explain_assignment(dst, e))


def stats(reset=False):
    """Counters of the work done since the last ``stats(reset=True)``:
    ``elementwise_passes``, ``gemm_calls``, ``reductions``, ``special_nodes``
    (other special-node computations) and ``scratch_bytes``."""
    return core.stats(reset)


__all__ = ["EvalPlan", "Handle", "clear_plan_cache", "evaluate_all", "explain", "stats"]
