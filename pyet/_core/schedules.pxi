# ------------------------------------------- schedules cached by structure
#
# value_and_grad on a tree built anew every step (as PyTorch builds its graph)
# would differentiate, share, group, lower and record the same work every
# step.  A structure key (structure_key: one walk, no per-node Python) names
# everything that work depends on except the leaves' memory; a schedule
# recorded once for that key is kept with, for each array its actions read or
# write, where that array lies in a "slot" (a leaf's array, or a statement's
# destination).  A later call with an equal key moves the arrays in changed
# slots to the new leaves' memory (same offsets, shapes, strides: the key
# holds them) and replays.

from cpython.ref cimport Py_INCREF, Py_REFCNT
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.object cimport PyObject, PyTypeObject


cdef extern from "numpy/arrayobject.h":
    object _new_from_descr "PyArray_NewFromDescr" (
        PyTypeObject *subtype, cnp.PyArray_Descr *descr, int nd, cnp.npy_intp *dims,
        cnp.npy_intp *strides, void *data, int flags, PyObject *obj)


cdef object _scalar_part(object v, int dt):
    # a scalar by its bits (0.0 and -0.0 give different results)
    if isinstance(v, (float, np.floating)):
        return (dt, type(v), float(v).hex())
    if isinstance(v, (complex, np.complexfloating)):
        c = complex(v)
        return (dt, type(v), c.real.hex(), c.imag.hex())
    return (dt, type(v), v)


cdef object _wrt_match(Tensor leaf, list wrt, dict wrt_ids):
    # as grad's _match: the wrt a leaf is, or is a view of (and the views since)
    i = wrt_ids.get(id(leaf))
    if i is not None:
        return i
    if leaf._base is None:
        return None
    cdef Tensor w
    cdef Py_ssize_t k, n
    for k in range(len(wrt)):
        w = <Tensor>wrt[k]
        root = w._base if w._base is not None else w
        n = len(w._mapping)
        if leaf._base is root and leaf._mapping[:n] == w._mapping:
            return (k, repr(leaf._mapping[n:]))  # (a slice is unhashable before 3.12)
    return None


def structure_key(list roots, list wrt, object settings):
    """(key, slots): what a recorded evaluation of ``roots`` (and gradients
    with respect to ``wrt``) depends on besides the leaves' memory, and the
    leaves' distinct arrays in the order the key numbers them.

    The key holds the roots' structure keys (ops, dtypes, kernel parameters),
    pre-order: per leaf its array's slot (the same array object, the same
    slot), shape, strides, dtype and alignment, how its memory overlaps earlier slots
    (offsets), which wrt it is (or views), a constant leaf's value; per scalar
    its value's bits; a node met again as a reference to where it was first
    met (sharing changes the plan).  ``settings``: anything global the plan
    depends on (threads, block size)."""
    cdef list parts = [settings], slots = [], stack
    cdef dict seen = {}, slot_of = {}, wrt_ids = {}
    cdef Expr e
    cdef Tensor t
    cdef cnp.ndarray a, b
    cdef Py_ssize_t j
    for j in range(len(wrt)):
        w = <Expr>wrt[j]
        wrt_ids.setdefault(id(w), j)
        parts.append((w.shape, w._dt))
    for r in roots:
        e = <Expr>r
        parts.append(key_of(e))
        stack = [e]
        while stack:
            e = stack.pop()
            n = seen.get(id(e))
            if n is not None:
                parts.append(n)  # an int: the node met again
                continue
            seen[id(e)] = len(parts)
            if e._op == OP_leaf:
                t = <Tensor>e
                a = <cnp.ndarray>t._array
                s = slot_of.get(id(a))
                if s is None:
                    s = slot_of[id(a)] = len(slots)
                    overlaps = []
                    for j in range(len(slots)):
                        b = <cnp.ndarray>slots[j]
                        if _bounds_overlap(a, b):
                            overlaps.append((j, <Py_ssize_t>cnp.PyArray_DATA(a)
                                             - <Py_ssize_t>cnp.PyArray_DATA(b)))
                    slots.append(a)
                    parts.append((s, (<object>a).shape, (<object>a).strides, e._dt,
                                  cnp.PyArray_ISALIGNED(a), tuple(overlaps),
                                  _wrt_match(t, wrt, wrt_ids),
                                  _scalar_part(constant_value(e), e._dt)
                                  if is_constant(e) else None))
                else:
                    parts.append((s, _wrt_match(t, wrt, wrt_ids)))
            elif e._op == OP_scalar:
                parts.append(_scalar_part((<Scalar>e)._value, e._dt))
            else:
                if e._op == OP_pyfunc:
                    parts.append((<PyFunc>e)._fn)
                elif e._op == OP_special:
                    # an expression a kernel holds outside its children (a
                    # checkpoint's): its structure and leaves count as well
                    hidden = getattr((<SpecialNode>e)._kernel, "hidden", None)
                    if hidden:
                        parts.append(("hidden", len(hidden)))
                        stack.extend(reversed(hidden))
                stack.extend(reversed(e._args))
    return tuple(parts), slots


# -------------------------------------------------------- a kept schedule

cdef tuple _locate(cnp.ndarray a, list slots):
    """(slot, byte offset) of the slot whose memory holds all of ``a``; None
    when ``a`` is outside every slot; ValueError when it straddles one."""
    cdef uintptr_t alo, ahi, slo, shi
    cdef cnp.ndarray s
    cdef Py_ssize_t k
    if cnp.PyArray_SIZE(a) == 0:
        return None
    extent(a, &alo, &ahi)
    found = None
    for k in range(len(slots)):
        s = <cnp.ndarray>slots[k]
        if cnp.PyArray_SIZE(s) == 0:
            continue
        extent(s, &slo, &shi)
        if alo < shi and slo < ahi:
            if slo <= alo and ahi <= shi:
                return (k, <Py_ssize_t>cnp.PyArray_DATA(a) - <Py_ssize_t>cnp.PyArray_DATA(s))
            found = k
    if found is not None:
        raise ValueError("an array straddles a slot")
    return None


cdef cnp.ndarray _moved(cnp.ndarray tmpl, cnp.ndarray slot, Py_ssize_t offset):
    """An array of ``tmpl``'s shape, strides and dtype at ``offset`` bytes
    from ``slot``'s data (which it keeps alive)."""
    cdef cnp.PyArray_Descr *descr = cnp.PyArray_DESCR(tmpl)
    Py_INCREF(<object>descr)  # (stolen)
    cdef int flags = 0
    if cnp.PyArray_FLAGS(tmpl) & cnp.NPY_ARRAY_WRITEABLE and \
            cnp.PyArray_FLAGS(slot) & cnp.NPY_ARRAY_WRITEABLE:
        flags = cnp.NPY_ARRAY_WRITEABLE
    out = _new_from_descr(<PyTypeObject *>cnp.ndarray, descr, cnp.PyArray_NDIM(tmpl),
                          cnp.PyArray_DIMS(tmpl), cnp.PyArray_STRIDES(tmpl),
                          <char *>cnp.PyArray_DATA(slot) + offset, flags, NULL)
    cnp.set_array_base(<cnp.ndarray>out, slot)
    return <cnp.ndarray>out


# what a site is: an array field, an entry of a list field, an expression
cdef enum:
    S_PASS_DST, S_PASS_LEAF, S_PASS_SCALAR, S_GEMM_DST, S_GEMM_A, S_GEMM_B, S_GEMM_FIRST
    S_COMPUTE_OUT, S_COMPUTE_ARGS


cdef class _Site:
    cdef Action action
    cdef int field
    cdef Py_ssize_t index
    cdef object tmpl          # the recorded array, or expression
    cdef object where         # array: (slot, offset); expression: {id(leaf): (leaf, slot, offset)}
    cdef frozenset slots      # the slots it reads
    cdef bint whole           # an array site: the slot's array itself


cdef class KeptSchedule:
    """A recorded evaluation whose arrays in the slots (leaves' arrays, then
    the statements' destinations) follow new leaves on each run; see
    structure_key.  Build with ``KeptSchedule(actions, slots, nleaves)``;
    ValueError when an array the actions use straddles a slot's memory or
    holds a copy of a leaf's values (a rule that read values when it built
    its tree: not replayable for other values)."""
    cdef list actions, slots, sites, baselines, written
    cdef Py_ssize_t nleaves
    cdef bint dirty           # a run raised midway: every site moved again next run

    def __init__(self, list actions, list slots, Py_ssize_t nleaves):
        self.actions, self.slots, self.nleaves = actions, list(slots), nleaves
        self.sites = []
        cdef Action a
        self.written = []  # what the actions write: rewritten by every replay
        for a in actions:
            if isinstance(a, Pass):
                self.written.extend((<Pass>a).dsts)
            elif isinstance(a, Gemm):
                self.written.append((<Gemm>a).dst)
            elif isinstance(a, Compute):
                self.written.append((<Compute>a).out)
        for a in actions:
            if isinstance(a, Pass):
                for i, d in enumerate((<Pass>a).dsts):
                    self._array_site(a, S_PASS_DST, i, d)
                for i, x in enumerate((<Pass>a).leaves):
                    self._array_site(a, S_PASS_LEAF, i, x)
                for i, x in enumerate((<Pass>a).scalars):
                    if isinstance(x, np.ndarray):
                        self._array_site(a, S_PASS_SCALAR, i, x)
            elif isinstance(a, Gemm):
                self._array_site(a, S_GEMM_DST, 0, (<Gemm>a).dst)
                for field, x in ((S_GEMM_A, (<Gemm>a).a), (S_GEMM_B, (<Gemm>a).b),
                                 (S_GEMM_FIRST, (<Gemm>a).first)):
                    if isinstance(x, np.ndarray):
                        self._array_site(a, field, 0, x)
                    elif x is not None:
                        self._expr_site(a, field, (x,))
            elif isinstance(a, Compute):
                self._array_site(a, S_COMPUTE_OUT, 0, (<Compute>a).out)
                self._expr_site(a, S_COMPUTE_ARGS, (<Compute>a).args)
            else:
                raise ValueError(f"an action of unknown kind: {a!r}")
        # the recorded destinations are handed out by the recording call: the
        # schedule writes new ones, which nothing else holds yet
        cdef Py_ssize_t k
        for k in range(nleaves, len(self.slots)):
            old = self.slots[k]
            self.slots[k] = np.empty(old.shape, old.dtype)
        self._move(set(range(nleaves, len(self.slots))))
        self.baselines = self._refs()
        self.written = None
        # (the sites above point into the recorded actions, which the fused ones hold)
        self.actions = fuse_epilogues(actions) if EPILOGUES else actions

    cdef _array_site(self, Action a, int field, Py_ssize_t i, cnp.ndarray x):
        where = _locate(x, self.slots)
        if where is None:
            self._check_not_copy(x)
            return
        cdef _Site s = _Site()
        s.action, s.field, s.index, s.tmpl, s.where = a, field, i, x, where
        s.slots = frozenset([where[0]])
        s.whole = x is self.slots[where[0]]
        self.sites.append(s)

    cdef _expr_site(self, Action a, int field, tuple exprs):
        cdef dict where = {}
        cdef list stack = list(exprs)
        cdef set seen = set()
        cdef Expr e
        while stack:
            e = stack.pop()
            if id(e) in seen:
                continue
            seen.add(id(e))
            if e._op == OP_leaf:
                x = (<Tensor>e)._array
                w = _locate(x, self.slots)
                if w is None:
                    self._check_not_copy(x)
                else:
                    where[id(e)] = (e, w[0], w[1], x is self.slots[w[0]])
            elif e._op == OP_pyfunc:
                raise ValueError("a user function")
            else:
                stack.extend(e._args)
        if not where:
            return
        cdef _Site s = _Site()
        s.action, s.field, s.index, s.tmpl, s.where = a, field, 0, exprs, where
        s.slots = frozenset([v[1] for v in where.values()])
        self.sites.append(s)

    cdef _check_not_copy(self, cnp.ndarray x):
        # an array outside the slots is scratch or a constant a rule made from
        # the structure; one equal to a leaf's values may be a copy of them
        cdef cnp.ndarray s
        cdef Py_ssize_t k
        if cnp.PyArray_SIZE(x) <= 1:
            return
        for w in self.written:  # (scratch, or holding scratch, a replay writes again)
            if _bounds_overlap(x, <cnp.ndarray>w):
                return
        for k in range(self.nleaves):
            s = <cnp.ndarray>self.slots[k]
            if cnp.PyArray_SIZE(s) == cnp.PyArray_SIZE(x) and \
                    cnp.PyArray_TYPE(s) == cnp.PyArray_TYPE(x) and \
                    np.array_equal((<object>s).ravel(), (<object>x).ravel()):
                raise ValueError("an array holds a copy of a leaf's values")

    cdef list _refs(self):
        cdef list out = []
        for k in range(self.nleaves, len(self.slots)):
            o = self.slots[k]
            out.append(Py_REFCNT(o))
        return out

    @property
    def replays(self):
        """The actions each run replays (products with a pass fused into their
        stores as one GemmEpilogue)."""
        return list(self.actions)

    def free(self):
        """Whether no result a run handed out is still held (a run then
        writes the same destinations again)."""
        return self._refs() == self.baselines

    def run(self, list leaves):
        """Replay over ``leaves`` (the new leaves' arrays, as structure_key
        gives them); returns the destinations, new ones where a result handed
        out before is still held."""
        cdef Py_ssize_t k, n = self.nleaves
        cdef cnp.ndarray old, new
        changed = set(range(len(self.slots))) if self.dirty else set()
        self.dirty = True
        for k in range(n):
            old, new = <cnp.ndarray>self.slots[k], <cnp.ndarray>leaves[k]
            if old is not new and cnp.PyArray_DATA(old) != cnp.PyArray_DATA(new):
                changed.add(k)
            self.slots[k] = new
        cdef list refs = self._refs()
        for k in range(n, len(self.slots)):
            if refs[k - n] != self.baselines[k - n]:  # a result still held: new memory
                old = <cnp.ndarray>self.slots[k]
                self.slots[k] = np.empty((<object>old).shape, (<object>old).dtype)
                changed.add(k)
        if changed:
            self._move(changed)
            self.baselines = self._refs()
        self.dirty = False
        replay(self.actions)
        return self.slots[n:]

    cdef _move(self, set changed):
        cdef _Site s
        cdef set rebind = set()
        cdef list actions = []
        for s in self.sites:
            if s.slots.isdisjoint(changed):
                continue
            if s.field == S_COMPUTE_ARGS or s.field == S_GEMM_A or s.field == S_GEMM_B or \
                    s.field == S_GEMM_FIRST:
                if isinstance(s.tmpl, tuple):
                    new = self._moved_exprs(s)
                elif s.whole:
                    new = self.slots[s.where[0]]
                else:
                    new = _moved(<cnp.ndarray>s.tmpl, self.slots[s.where[0]], s.where[1])
            elif s.whole:
                new = self.slots[s.where[0]]
            else:
                new = _moved(<cnp.ndarray>s.tmpl, self.slots[s.where[0]], s.where[1])
            a = s.action
            if s.field == S_PASS_DST:
                (<Pass>a).dsts[s.index] = new
            elif s.field == S_PASS_LEAF:
                (<Pass>a).leaves[s.index] = new
            elif s.field == S_PASS_SCALAR:
                (<Pass>a).scalars[s.index] = new
            elif s.field == S_GEMM_DST:
                (<Gemm>a).dst = new
            elif s.field == S_GEMM_A:
                (<Gemm>a).a = new[0] if isinstance(new, tuple) else new
            elif s.field == S_GEMM_B:
                (<Gemm>a).b = new[0] if isinstance(new, tuple) else new
            elif s.field == S_GEMM_FIRST:
                (<Gemm>a).first = new[0]
            elif s.field == S_COMPUTE_OUT:
                (<Compute>a).out = new
            else:
                (<Compute>a).args = new
            if isinstance(a, Compute) and id(a) not in rebind:
                rebind.add(id(a))
                actions.append(a)
        for a in actions:
            if (<Compute>a).bound is not None:
                (<Compute>a).bind()

    cdef tuple _moved_exprs(self, _Site s):
        cdef dict memo = {}
        return tuple([self._moved_expr(<Expr>e, <dict>s.where, memo) for e in s.tmpl])

    cdef Expr _moved_expr(self, Expr e, dict where, dict memo):
        hit = memo.get(id(e))
        if hit is not None:
            return hit
        cdef Expr out = e
        if e._op == OP_leaf:
            w = where.get(id(e))
            if w is not None:
                out = wrap(self.slots[w[1]] if w[3] else
                           _moved(<cnp.ndarray>(<Tensor>e)._array, self.slots[w[1]], w[2]))
        elif e._args:
            args = tuple([self._moved_expr(<Expr>c, where, memo) for c in e._args])
            if any([x is not y for x, y in zip(args, e._args)]):
                if e._op == OP_special:
                    out = special((<SpecialNode>e)._kernel, args, e.shape, DTYPES[e._dt])
                else:
                    out = with_args(e, args)
        memo[id(e)] = out
        return out

    def __len__(self):
        return len(self.actions)

    def __repr__(self):
        return (f"KeptSchedule({len(self.actions)} actions, {self.nleaves} leaf slots, "
                f"{len(self.slots) - self.nleaves} destinations, {len(self.sites)} sites)")


# trees whose evaluation cannot be recorded (value-dependent errors)
UNCACHEABLE = HAS_PYFUNC | HAS_INT_POWER
# trees with special nodes (products, reductions...): the planning a record saves
PLANNED = HAS_SPECIAL
