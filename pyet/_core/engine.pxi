# The engine: how a root is written, decided in one place.
#
# ``assign(dst, expr)`` checks everything first (nothing is written on an
# error), then writes the root in the first of these ways that applies:
#
# 1. a root form (rewrite.ROOT_FORMS): ``[D ±] alpha * dot(A, B)`` as one gemm
#    straight into dst, alpha and beta folded in (MShadow's DotExp engine);
# 2. a special node of dst's shape and dtype straight into dst (Special.into);
# 3. the elementwise program (lower.pxi, passes.pxi), after every special node below the
#    root has been computed into scratch (it then stands in the tree as a leaf).
#
# Trees deeper than MAX_DEPTH or with more than MAX_LEAVES leaves are cut into
# pieces first, so lowering's recursion and a program's operands stay bounded.

# the nodes computed so far by this thread's evaluation: a node that appears
# twice in a tree (softmax's max, shared subtrees) is computed once
# (class defaults: reading an unset attribute raises and formats an
# AttributeError inside getattr, ~0.2 us an assignment)
class _EvaluationState(threading.local):
    recorder = None
    done = None
    structural = False


_evaluation = _EvaluationState()
# recordings under way (any thread): none, and _recorder() skips the lookup
cdef int _RECORDINGS = 0


cpdef check_assignment(object dst, object value):
    """The checks of ``dst[...] = value`` (destination type, writeable, shape,
    casting) without evaluating anything: ``value`` as an Expr, or an error."""
    cdef Expr e = as_operand(value)
    if not isinstance(dst, cnp.ndarray):  # (the C type: no lookup of np.ndarray)
        raise TypeError(f"destination must be an ndarray or pyet.Tensor, got "
                        f"{type(dst).__name__}")
    cdef cnp.ndarray d = <cnp.ndarray>dst
    if not cnp.PyArray_ISWRITEABLE(d):
        raise ValueError("assignment destination is read-only")
    check_target(e, d, array_dtype_code(d))
    return e


cpdef assign(object dst, object value):
    """Evaluate ``value`` (an expression, array or scalar) into ndarray ``dst``.

    Every check happens before the first write: on any error dst is untouched.
    """
    cdef Expr e = check_assignment(dst, value)
    cdef cnp.ndarray d = <cnp.ndarray>dst
    assign_checked(d, e, array_dtype_code(d))


cdef assign_checked(cnp.ndarray d, Expr e, int dst_dt):
    # assign after check_assignment (or into scratch of e's shape and dtype)
    if e._depth > MAX_DEPTH or e._nleaves > MAX_LEAVES:
        e = split(e)
    if e._flags & HAS_INT_POWER:
        check_int_powers(e)
    if may_hoist(e):
        e = hoist_for(d, e)
    if e._op == OP_special and (<SpecialNode>e)._kernel is _PRODUCT and _recorder() is None \
            and assign_leaf_product(d, <SpecialNode>e):
        return
    if e._flags & HAS_SPECIAL:
        assign_special(d, e, dst_dt)
    else:
        assign_elementwise(d, e, dst_dt)


def evaluated(Expr e):
    """A new aligned tensor of e's value (``pyet.evaluate`` without out= of a
    tree without Dask leaves), in C: its three steps from Python cost ~0.3 us
    of a 16 x 16 ``evaluate(a*b + 1)``'s ~1.1."""
    arr = aligned_empty(e.shape, e._dt)
    if e._op == OP_special and (<SpecialNode>e)._kind != SPECIAL_PRODUCT \
            and _recorder() is None and into_directly(arr, <SpecialNode>e, e._dt, True):
        # a special node over leaves (a reduction's, NumPy's or its own call):
        # new memory of its shape and dtype needs none of assign's checks
        return wrap(arr)
    assign(arr, e)
    return wrap(arr)


# dst = leaf of at most this many elements that the direct pass does not take
# (the layouts differ) is NumPy's copy (PyArray_CopyInto)
DEF SMALL_COPY_MAX = 1024


cdef assign_elementwise(cnp.ndarray d, Expr e, int dst_dt):
    if e._flags & HAS_PYFUNC and hoist_pyfunc(d, e, dst_dt):
        return
    cdef Program prog = get_program(e, dst_dt)
    if may_share(prog, e, cnp.PyArray_SIZE(d)) and shared_pass(d, e, dst_dt):
        return
    if not e._flags & HAS_PYFUNC and _recorder() is None and direct_tree(prog, d, e):
        STATS[0] += 1
        return
    if prog.copies_leaf and e._op == OP_leaf and cnp.PyArray_SIZE(d) <= SMALL_COPY_MAX \
            and _recorder() is None \
            and not _bounds_overlap(<cnp.ndarray>(<Tensor>e)._array, d):
        # a small copy across layouts (C rows into Fortran order): NumPy's
        # own, without a pass's planning (not where the leaf overlaps dst:
        # NumPy's a[::2] = a[:5] reads what it wrote; the pass copies first)
        STATS[0] += 1
        cnp.PyArray_CopyInto(d, <cnp.ndarray>(<Tensor>e)._array)
        return
    cdef list leaves = [], scalars = [], pyfuncs = []
    collect(e, leaves, scalars, pyfuncs)
    if e._flags & HAS_PYFUNC:
        _not_recordable()
        STATS[0] += 1
        if ufuncs_only(prog, pyfuncs):  # cannot raise midway: straight into d
            execute_group(prog, [d], leaves, scalars, pyfuncs)
            return
        # a user function may raise midway: compute aside, then copy
        tmp = np.empty((<object>d).shape, (<object>d).dtype)
        execute(prog, tmp, leaves, scalars, pyfuncs)
        np.copyto(d, tmp)
        return
    if _recorder() is None:  # (perform's work without the Pass object)
        STATS[0] += 1
        execute_group(prog, [d], leaves, scalars, pyfuncs)
    else:
        perform(Pass(prog, [d], leaves, scalars))


cdef bint shared_pass(cnp.ndarray d, Expr e, int dst_dt) except -1:
    """A tree reading a costly subtree more than once over the same arrays
    (``1 - t*t`` of ``t = tanh(x)``, ``s * (1 - s)`` of a sigmoid s, as
    gradients build them), lowered as a one-statement group (lower_group),
    which computes that subtree once a block and keeps it in a register for
    its readers: the single tree's program computed it at each occurrence
    (float64 1 - t*t of 65,536: 1.41x NumPy's tanh and two ufuncs); a plan
    recording records the pass.  False, nothing done, where no leaf array
    repeats."""
    cdef list leaves = [], scalars = [], pyfuncs = [], arrays = []
    prog = shared_program(e, dst_dt, leaves, scalars, pyfuncs, arrays)
    if prog is None:
        return False
    STATS[0] += 1
    count_shared()
    if _recorder() is None:
        execute_group(<Program>prog, [d], arrays, scalars, pyfuncs)
    else:  # (shared_program takes no user functions: nothing to hold the GIL for)
        perform(Pass(<Program>prog, [d], arrays, scalars))
    return True


cdef bint hoist_pyfunc(cnp.ndarray d, Expr e, int dst_dt) except -1:
    """A user ufunc of dst's shape and dtype over leaves (pyet.F(np.expm1, A)
    in ``F(np.expm1, A) + 1``) called once on the whole operands straight into
    dst, as NumPy's code would, then the rest of the tree evaluated in place
    over dst (that node now a leaf of dst's memory): its blocks were a
    Python call each, through the GIL, with views made per block (at 4096
    elements 1.5x, at 2^18 1.2-1.3x NumPy's two calls).  Only where the pass
    could not raise midway anyway (every user function a ufunc run in place)
    and no leaf shares memory with dst; no memory besides dst's.  Its
    floating-point errors are the pass's, reported after the rest.  False,
    nothing done, for other trees."""
    # one walk: every user function a ufunc run in place, no leaf sharing
    # memory with dst, and the node to hoist (each node visited once: a set
    # of those seen past the first 64, which small trees never need)
    cdef list stack = [e], dts, pdts = None
    cdef set seen = None
    cdef Expr x, p = None, a
    cdef bint leaves
    cdef Py_ssize_t visited = 0
    while stack:
        x = stack.pop()
        if x._op == OP_leaf:
            if _bounds_overlap(<cnp.ndarray>(<Tensor>x)._array, d):
                return False
            continue
        if x._op == OP_pyfunc:
            fn = (<PyFunc>x)._fn
            dts = [(<Expr>a)._dt for a in x._args]
            if type(fn) is not _UFUNC_TYPE or not _ufunc_in_place(fn, dts, x._dt):
                return False  # it may raise midway: computed aside (assign_elementwise)
            if p is None and not (<PyFunc>x)._in_pass and x._dt == dst_dt \
                    and has_shape(d, x.shape):
                leaves = True
                for a in x._args:
                    leaves = leaves and a._op == OP_leaf
                if leaves:
                    p, pdts = x, dts
        if x._args:
            visited += 1
            if visited > 64:
                if seen is None:
                    seen = set()
                if id(x) in seen:
                    continue
                seen.add(id(x))
            stack.extend(x._args)
    if p is None:
        return False
    _not_recordable()
    STATS[0] += 1
    arrays = [(<Tensor>a)._array for a in p._args]
    fn = (<PyFunc>p)._fn
    cdef int before = pyet_fs_get(), raised, j, n = len(arrays), k = -1
    cdef char *args[PYET_MAX_IN + 1]
    cdef cnp.npy_intp steps[PYET_MAX_IN + 1]
    cdef cnp.npy_intp size = cnp.PyArray_SIZE(d)
    cdef np_loop loop
    cdef void *data
    if size and _same_memory_order(d, arrays):
        k = _c_loop_index(fn, pdts, p._dt)
    pyet_fs_clear(before)
    if k >= 0:  # NumPy's inner loop called in C: no ufunc call, no errstate (~1.5 us)
        for j in range(n):
            args[j] = <char *>cnp.PyArray_DATA(<cnp.ndarray>arrays[j])
            steps[j] = cnp.PyArray_ITEMSIZE(<cnp.ndarray>arrays[j])
        args[n] = <char *>cnp.PyArray_DATA(d)
        steps[n] = cnp.PyArray_ITEMSIZE(d)
        loop = <np_loop>(<cnp.ufunc>fn).functions[k]
        data = (<cnp.ufunc>fn).data[k]
        if size >= GIL_HELD_PASS:
            with nogil:
                loop(args, &size, steps, data)
        else:
            loop(args, &size, steps, data)
    else:
        token = quiet_numpy()
        try:
            fn(*arrays, out=d)
        finally:
            loud_numpy(token)
    raised = pyet_fs_get()
    pyet_fs_clear(raised)
    pyet_fs_set(before)
    if p is not e:
        assign_elementwise(d, _replaced(e, p, wrap(d), {}), dst_dt)
    report_status(raised)
    return True


cdef bint _same_memory_order(cnp.ndarray d, list arrays):
    # dst and every operand of one shape, aligned, all C- or all Fortran-contiguous
    cdef cnp.ndarray a
    cdef bint c = cnp.PyArray_IS_C_CONTIGUOUS(d), f = cnp.PyArray_IS_F_CONTIGUOUS(d)
    if not cnp.PyArray_ISALIGNED(d):
        return False
    for x in arrays:
        a = <cnp.ndarray>x
        if not cnp.PyArray_ISALIGNED(a) or not cnp.PyArray_ISNOTSWAPPED(a) \
                or not cnp.PyArray_SAMESHAPE(a, d):
            return False
        c = c and cnp.PyArray_IS_C_CONTIGUOUS(a)
        f = f and cnp.PyArray_IS_F_CONTIGUOUS(a)
    return c or f


cdef Expr _replaced(Expr e, Expr old, Expr new, dict memo):
    # e with node ``old`` replaced by ``new`` (shared nodes rebuilt once)
    if e is old:
        return new
    if not (e._flags & HAS_PYFUNC) or not e._args:
        return e
    hit = memo.get(id(e))
    if hit is not None:
        return hit
    cdef Expr out = with_args(e, tuple([_replaced(<Expr>a, old, new, memo) for a in e._args]))
    memo[id(e)] = out
    return out


cdef bint assign_leaf_product(cnp.ndarray d, SpecialNode e) except -1:
    """dst[...] = dot(A, B) of two leaves as one BLAS call, checked in C
    (gemm_2d_ready: one float dtype, BLAS layouts, shapes, A and B disjoint
    from dst): what the root form "P" does, without matching the forms or
    making a Gemm action (vec @ vec of 256: ~1.2 us of ~1.9 above the call).
    False, nothing written, for any other product."""
    cdef Expr x = <Expr>e._args[0], y = <Expr>e._args[1]
    if x._op != OP_leaf or y._op != OP_leaf:
        return False
    cdef cnp.ndarray a = <cnp.ndarray>(<Tensor>x)._array, b = <cnp.ndarray>(<Tensor>y)._array
    if not gemm_2d_ready(d, a, b):
        return False
    gemm_2d(d, a, b, 1.0, 0.0)
    STATS[1] += 1
    return True


cdef assign_special(cnp.ndarray d, Expr e, int dst_dt):
    cdef Compute action
    if e._op == OP_special and (<SpecialNode>e)._kind != SPECIAL_PRODUCT \
            and _recorder() is None and into_directly(d, <SpecialNode>e, dst_dt):
        return
    if assign_root_form(d, e, dst_dt):
        return
    outer = getattr(_evaluation, "done", None) is None  # not nested in an evaluation
    if outer:
        _evaluation.done = {}
    try:
        if e._op == OP_special and has_shape(d, e.shape) and e._dt == dst_dt \
                and not leaves_overlap(e, d):
            # straight into dst, no scratch
            args = _special_args(e)
            kernel = (<SpecialNode>e)._kernel
            if _recorder() is not None and (getattr(kernel, "records_into", False)
                                            or hasattr(kernel, "view")):
                # its assignments are recorded (a view's: its child's, then a copy)
                if hasattr(kernel, "view"):
                    assign(d, wrap(_special_value(e)))
                else:
                    kernel.into(d, args)
                    _count_special(e, 0)
                return
            if _recorder() is not None and getattr(kernel, "scratch_operands", False):
                args = tuple([_scratch_operand(<Expr>a) for a in args])
            action = Compute(e, d, args, 0)
            if _recorder() is not None:
                action.bind()
            perform(action)
            return
        assign_elementwise(d, materialize_node(e), dst_dt)
    finally:
        if outer:
            _evaluation.done = None


cdef tuple _arrays_of(tuple args):
    # the arrays of leaves ``args``, a tuple made in place (a list made and
    # copied: ~0.1 us)
    cdef Py_ssize_t i, n = len(args)
    cdef tuple out = PyTuple_New(n)
    for i in range(n):
        arr = (<Tensor>args[i])._array
        Py_INCREF(arr)
        PyTuple_SET_ITEM(out, i, arr)
    return out


cdef bint into_directly(cnp.ndarray d, SpecialNode e, int dst_dt, bint fresh=False) except -1:
    """The common special root, decided by one check: a node other than a
    product (no root form matches it) of dst's shape and dtype over leaves
    (or scalars) that do not overlap dst, with no plan recording -- its kernel's into()
    straight into dst, without the evaluation table (no special node below
    to share), the Compute action or the walk of the tree (~1 us a call).
    False, nothing done, for any other root: assign_special's general way.
    ``fresh``: d is new memory of e's shape and dtype (evaluated)."""
    cdef Expr a
    cdef bint leaves = True
    if not fresh and (e._dt != dst_dt or not has_shape(d, e.shape)):
        return False
    for a in e._args:
        if a._op == OP_scalar:
            leaves = False
            continue
        if a._op != OP_leaf or (not fresh and _bounds_overlap(<cnp.ndarray>(<Tensor>a)._array, d)):
            return False
    kernel = e._kernel
    fast = getattr(kernel, "into_leaves", None) if leaves else None
    if fast is not None and fast(d, _arrays_of(e._args)):
        # its compiled entry on the leaves' arrays (Special.into_leaves): no
        # Python frame of into() (take of 64 rows: ~0.3 us of ~1.2)
        _count_special(e, 0)
        return True
    kernel.into(d, e._args)
    _count_special(e, 0)
    return True


# -------------------------------------------------------------- root forms

cdef bint _root_fits(object pattern, Expr e, dict binding):
    if isinstance(pattern, str):
        if pattern == "P":  # a product node
            if e._op != OP_special or not isinstance((<SpecialNode>e)._kernel, Product):
                return False
        elif pattern == "a":  # alpha: a nonzero number (0 would lose 0*inf = nan)
            if e._op != OP_scalar or isinstance((<Scalar>e)._value, (bool, np.bool_)) \
                    or (<Scalar>e)._value == 0:
                return False
        elif e._flags & HAS_SPECIAL:  # D: written elementwise before the gemm
            return False
        binding[pattern] = e
        return True
    if OPNAMES.get(e._op) != pattern[0] or e._cdt != e._dt:
        return False
    if len(pattern) == 2:
        return _root_fits(pattern[1], e._args[0], binding)
    trial = {}
    if _root_fits(pattern[1], e._args[0], trial) and _root_fits(pattern[2], e._args[1], trial):
        binding.update(trial)
        return True
    if pattern[0] in COMMUTATIVE:
        trial = {}
        if _root_fits(pattern[1], e._args[1], trial) and \
                _root_fits(pattern[2], e._args[0], trial):
            binding.update(trial)
            return True
    return False


cdef object match_root_form(cnp.ndarray d, Expr e, int dst_dt):
    """(product, D or None, alpha, beta) when e is a root form whose every node
    has d's float dtype (so nothing rounds in between) and whose product has
    d's shape; None otherwise.  The one place that decides it."""
    cdef Expr p, dd
    if e._dt != dst_dt or (dst_dt != DT_F32 and dst_dt != DT_F64):
        return None
    if e._op == OP_special and not isinstance((<SpecialNode>e)._kernel, Product):
        return None  # (a special root matches only "P")
    for pattern, sign, beta in ROOT_FORMS:
        binding = {}
        if not _root_fits(pattern, e, binding):
            continue
        p = binding["P"]
        dd = binding.get("D")
        if p._dt != dst_dt or not has_shape(d, p.shape) or \
                (dd is not None and dd._dt != dst_dt):
            return None
        x, y = p._args
        if dot_dtypes((<Expr>x)._dt, (<Expr>y)._dt)[0] != dst_dt:
            return None
        alpha = sign * (float((<Scalar>binding["a"])._value) if "a" in binding else 1.0)
        return p, dd, alpha, (beta if dd is not None else 0.0)
    return None


cdef bint assign_root_form(cnp.ndarray d, Expr e, int dst_dt) except -1:
    """Write e into d as one gemm when it is a root form (match_root_form);
    False, nothing written, otherwise."""
    cdef Expr p, dd
    form = match_root_form(d, e, dst_dt)
    if form is None:
        return False
    p, dd, alpha, beta = form
    x, y = p._args
    if _recorder() is not None:
        # operands made BLAS-ready by recorded passes (read before D is
        # written): a replay is one gemm call
        xa = _blas_operand(materialize_node(x), dst_dt, d)
        ya = _blas_operand(materialize_node(y), dst_dt, d)
        if gemm_2d_ready(d, xa, ya):
            if dd is not None and not same_view(dd, d):
                assign(d, dd)
            perform(Gemm(d, xa, ya, alpha, beta, None))
            return True
    if (<Expr>x)._op == OP_leaf and (<Expr>y)._op == OP_leaf and \
            gemm_2d_ready(d, (<Tensor>x)._array, (<Tensor>y)._array):
        # the common case, checked and run in C: A and B are disjoint from d,
        # so writing D first cannot change them
        if dd is not None and not same_view(dd, d):
            assign(d, dd)
        perform(Gemm(d, (<Tensor>x)._array, (<Tensor>y)._array, alpha, beta, None))
        return True
    # the operands are read (copied when they overlap d) before D is written
    perform(Gemm(d, materialize_node(x), materialize_node(y), alpha, beta,
                 dd if dd is not None and not same_view(dd, d) else None))
    return True


cdef bint same_view(Expr x, cnp.ndarray dst):
    # x is dst itself (C += dot(A, B)): D is already in place
    cdef cnp.ndarray v
    if x._op != OP_leaf:
        return False
    v = <cnp.ndarray>(<Tensor>x)._array
    return (cnp.PyArray_DATA(v) == cnp.PyArray_DATA(dst) and v.ndim == dst.ndim
            and v.descr.type_num == dst.descr.type_num
            and (<object>v).shape == (<object>dst).shape
            and (<object>v).strides == (<object>dst).strides)


# ---------------------------------------------------------- special nodes

cdef Expr materialize_node(Expr e):
    """e with every special node below it replaced by a leaf holding its value."""
    if not (e._flags & HAS_SPECIAL):
        return e
    done = getattr(_evaluation, "done", None)
    key = None
    if done is not None:
        # a node is itself (kept alive in the table: its id stays its own); in a
        # plan's scope equal structures over the same memory share a value too
        hit = done.get(id(e))
        if hit is not None:
            return hit[1]
        if getattr(_evaluation, "structural", False):
            key = value_key(e)
            hit = done.get(key)
            if hit is not None:
                done[id(e)] = (e, hit[1], hit[2])
                return hit[1]
    cdef Expr leaf
    if e._op == OP_special:
        leaf = wrap(_special_value(e))
    else:
        leaf = with_args(e, tuple([materialize_node(a) for a in e._args]))
    if done is not None:
        # (with the arrays it read, so a write can forget it without a walk)
        entry = (e, leaf, _leaf_arrays(e))
        done[id(e)] = entry
        if key is not None:
            done[key] = entry
    return leaf


cdef tuple _leaf_arrays(Expr root):
    # the distinct arrays below root (each shared node walked once)
    cdef list stack = [root], out = []
    cdef set seen = set(), arrays = set()
    cdef Expr x
    while stack:
        x = stack.pop()
        if x._op == OP_leaf:
            if id((<Tensor>x)._array) not in arrays:
                arrays.add(id((<Tensor>x)._array))
                out.append((<Tensor>x)._array)
        elif x._args and id(x) not in seen:
            seen.add(id(x))
            stack.extend(x._args)
    return tuple(out)


# -------------------------------------------------------------- schedules
#
# A kept plan (EvalPlan.run(keep=True)) runs the same statements over the same
# memory every time, so what its first run decided -- passes and their
# programs, which statements share a pass, which special nodes are shared,
# gemm calls, scratch buffers -- holds for every later run.  The first run
# records its work as a list of actions; later runs replay them, without
# registering, checking, grouping, keying or lowering anything again.  Only
# the outermost level is recorded: an action's own inner evaluations (a
# kernel evaluating its operands) run again inside it.

cdef class Action:
    """One recorded piece of a plan's work, rerun as it ran."""

    cdef int run(self) except -1:
        return 0

    def __call__(self):
        self.run()


cdef class Pass(Action):
    """An elementwise pass (one destination, or several: a multi-output pass)."""
    cdef Program prog
    cdef list dsts, leaves, scalars

    def __cinit__(self, Program prog, list dsts, list leaves, list scalars):
        self.prog, self.dsts, self.leaves, self.scalars = prog, dsts, leaves, scalars

    def __repr__(self):
        return (f"Pass({len(self.dsts)} dst{fmt_shape((<object>self.dsts[0]).shape)}, "
                f"{len(self.leaves)} leaves, {self.prog.ninstr} instructions)")

    cdef int run(self) except -1:
        STATS[0] += 1
        if len(self.dsts) == 1 and direct_pass(self.prog, self.dsts[0], self.leaves,
                                               self.scalars):
            return 0
        return execute_group(self.prog, self.dsts, self.leaves, self.scalars, [])


cdef str _layout(cnp.ndarray a):
    # how BLAS sees a matrix operand: rows contiguous (C), columns (F), or neither
    if cnp.PyArray_IS_C_CONTIGUOUS(a):
        return "C"
    if cnp.PyArray_IS_F_CONTIGUOUS(a):
        return "F"
    return "strided"


cdef class Gemm(Action):
    """dst := alpha * a.b + beta * dst: leaf arrays checked for one BLAS call,
    or expressions read (copied when they overlap dst) before ``first``, the
    root form's D, is written into dst."""
    cdef cnp.ndarray dst
    cdef object a, b, first
    cdef double alpha, beta

    def __cinit__(self, cnp.ndarray dst, a, b, double alpha, double beta, first):
        self.dst, self.a, self.b, self.alpha, self.beta, self.first = dst, a, b, alpha, beta, first

    def __repr__(self):
        if not isinstance(self.a, np.ndarray):
            return "Gemm(general)"
        return (f"Gemm(2d {_layout(self.a)}{fmt_shape(self.a.shape)} @ "
                f"{_layout(self.b)}{fmt_shape(self.b.shape)} -> {_layout(self.dst)}, "
                f"alpha={self.alpha:g}, beta={self.beta:g})")

    cdef int run(self) except -1:
        if isinstance(self.a, np.ndarray):
            gemm_2d(self.dst, self.a, self.b, self.alpha, self.beta)
        else:
            dtype = (<object>self.dst).dtype
            a = operand_array(self.a, dtype, self.dst)
            b = operand_array(self.b, dtype, self.dst)
            if self.first is not None:
                assign(self.dst, self.first)
            matmul_into(self.dst, a, b, self.alpha, self.beta)
        STATS[1] += 1
        return 0


cdef class Compute(Action):
    """A special node's kernel writing its value into ``out`` (the root's
    destination, or the node's scratch); through the function the kernel's
    ``bind(out, args)`` made once, when it has one."""
    cdef SpecialNode node
    cdef cnp.ndarray out
    cdef tuple args
    cdef object bound
    cdef Py_ssize_t nbytes     # scratch allocated for it (counted once)

    def __cinit__(self, SpecialNode node, cnp.ndarray out, tuple args, Py_ssize_t nbytes):
        self.node, self.out, self.args, self.nbytes = node, out, args, nbytes
        self.bound = None

    cdef int run(self) except -1:
        if self.bound is not None:
            self.bound()
        else:
            self.node._kernel.into(self.out, self.args)
        _count_special(self.node, self.nbytes)
        self.nbytes = 0  # a replay writes the same scratch
        return 0

    def __repr__(self):
        return (f"Compute({self.node._kernel.name}{fmt_shape(self.node.shape)}, "
                f"bound={self.bound is not None})")

    cdef bind(self):
        # for replays, once the recorded run has computed the value
        bind = getattr(self.node._kernel, "bind", None)
        if bind is not None:
            self.bound = bind(self.out, self.args)


# ------------------------------------------------------- gemm epilogues

cdef dict _EPILOGUE_KINDS = {"bias_relu": PYET_EPI_BIAS_RELU, "bias_mask": PYET_EPI_BIAS_MASK,
                             "mask": PYET_EPI_MASK}
cdef bint EPILOGUES = True


def set_gemm_epilogues(bint on):
    """Let kept schedules fuse passes into products' stores (or not: tests and
    benchmarks compare the two); returns the old setting."""
    global EPILOGUES
    old, EPILOGUES = EPILOGUES, on
    return old


cdef object _match_epilogue(Program prog):
    """(kind, {operand name: leaf or scalar index}) of the GEMM_EPILOGUES row
    ``prog`` is, or None."""
    cdef pyet_instr *ins
    cdef int k, j
    if prog.ndst != 1 or prog.has_pyfunc or prog.np_loops or prog.whole_fn is not None \
            or prog.nonce:  # (its scalars are the pass's bound ones)
        return None
    if prog.dt_out != DT_F32 and prog.dt_out != DT_F64:
        return None
    for instrs, kind in GEMM_EPILOGUES:
        if prog.ninstr != len(instrs):
            continue
        binding = {}
        for k in range(prog.ninstr):
            ins = &prog.code[k]
            pat = instrs[k]
            if OPNAMES.get(ins.op) != pat[0] or ins.nin != len(pat) - 2:
                break
            if ins.dt != prog.dt_out and pat[0] != "where":
                break
            srcs = [(ins.src_kind[j], ins.src[j]) for j in range(ins.nin)]
            trial = _bind_epilogue(pat[2:], srcs, binding)
            if trial is None and pat[0] in COMMUTATIVE:
                trial = _bind_epilogue(pat[:1:-1], srcs, binding)
            if trial is None:
                break
            binding = trial
            if pat[1] == "D":
                if ins.out != -1 or ins.dt_out != prog.dt_out:
                    break
            elif ins.out < 0 or pat[1] in binding:
                break
            else:
                binding[pat[1]] = (SRC_REG, ins.out)
        else:
            return _EPILOGUE_KINDS[kind], {name: src[1] for name, src in binding.items()
                                           if name[0] != "R"}
    return None


cdef object _bind_epilogue(tuple names, list srcs, dict binding):
    # binding extended by names[j] -> srcs[j] ("C", "b", "z": leaves; "s*":
    # scalars; "R*": registers), or None where they disagree
    trial = dict(binding)
    for name, src in zip(names, srcs):
        want = SRC_REG if name[0] == "R" else SRC_SCALAR if name[0] == "s" else SRC_LEAF
        if src[0] != want or trial.get(name, src) != src:
            return None
        if name[0] != "R" and any(v == src for n, v in trial.items() if n != name):
            return None  # (one array or scalar per name)
        trial[name] = src
    return trial


cdef bint _row_vector(cnp.ndarray x, Py_ssize_t m, Py_ssize_t n, int dt) noexcept:
    # x holds one row of n unit-stride elements, broadcast down m rows
    cdef cnp.npy_intp *st = cnp.PyArray_STRIDES(x)
    cdef cnp.npy_intp *sh = cnp.PyArray_DIMS(x)
    cdef Py_ssize_t size = cnp.PyArray_ITEMSIZE(x)
    if cnp.PyArray_TYPE(x) != cnp.PyArray_TYPE(<cnp.ndarray>np.empty(0, DTYPES[dt])) or \
            not cnp.PyArray_ISALIGNED(x):
        return False
    if cnp.PyArray_NDIM(x) == 1:
        return sh[0] == n and (n == 1 or st[0] == size)
    return (cnp.PyArray_NDIM(x) == 2 and sh[1] == n and (sh[0] == 1 or sh[0] == m)
            and (sh[0] == 1 or st[0] == 0) and (n == 1 or st[1] == size))


cdef bint _rows_of(cnp.ndarray x, Py_ssize_t m, Py_ssize_t n, int dt) noexcept:
    # x is m x n with unit-stride rows a whole number of elements apart
    cdef Py_ssize_t size = cnp.PyArray_ITEMSIZE(x)
    return (cnp.PyArray_NDIM(x) == 2 and cnp.PyArray_DIM(x, 0) == m
            and cnp.PyArray_DIM(x, 1) == n and cnp.PyArray_ISALIGNED(x)
            and cnp.PyArray_TYPE(x) == cnp.PyArray_TYPE(<cnp.ndarray>np.empty(0, DTYPES[dt]))
            and cnp.PyArray_STRIDE(x, 1) == size and cnp.PyArray_STRIDE(x, 0) >= 0
            and cnp.PyArray_STRIDE(x, 0) % size == 0)


cdef class GemmEpilogue(Action):
    """A product on the register tiles and the pass after it, fused (see
    rewrite.GEMM_EPILOGUES): the tiles write the pass's destination as they
    store C.  Both actions are kept as they were recorded (a kept schedule
    moves their arrays); where the fused run cannot be done, or bails, they
    run as before."""
    cdef Gemm gemm
    cdef Pass tail
    cdef int kind, ic, ib, iz, s0, s1

    def __cinit__(self, Gemm gemm, Pass tail, int kind, dict where):
        self.gemm, self.tail, self.kind = gemm, tail, kind
        self.ic, self.ib = where["C"], where.get("b", -1)
        self.iz, self.s0, self.s1 = where.get("z", -1), where.get("s0", -1), where.get("s1", -1)

    def __repr__(self):
        return f"GemmEpilogue({self.gemm!r} + {self.tail!r})"

    cdef bint _fits(self, pyet_gemm_epi *epi) except -1:
        # the arrays as they are now (a kept schedule moves them) fit the tiles'
        # epilogue: fill epi
        cdef cnp.ndarray c = self.gemm.dst, out = <cnp.ndarray>self.tail.dsts[0]
        cdef cnp.ndarray bias = None, z
        cdef Py_ssize_t m = cnp.PyArray_DIM(c, 0), n = cnp.PyArray_DIM(c, 1)
        cdef Py_ssize_t size = cnp.PyArray_ITEMSIZE(c)
        cdef int dt = self.tail.prog.dt_out
        leaf_c = self.tail.leaves[self.ic]
        if not (leaf_c is c or (isinstance(leaf_c, np.ndarray) and _rows_of(leaf_c, m, n, dt)
                                and cnp.PyArray_DATA(<cnp.ndarray>leaf_c) == cnp.PyArray_DATA(c)
                                and cnp.PyArray_STRIDE(<cnp.ndarray>leaf_c, 0)
                                == cnp.PyArray_STRIDE(c, 0))):
            return False
        if not (_rows_of(c, m, n, dt) and _rows_of(out, m, n, dt)):
            return False
        reads = [c, <cnp.ndarray>self.gemm.a, <cnp.ndarray>self.gemm.b]
        epi.bias = NULL
        if self.ib >= 0:
            bias = <cnp.ndarray>self.tail.leaves[self.ib]
            if not _row_vector(bias, m, n, dt):
                return False
            epi.bias = cnp.PyArray_DATA(bias)
            reads.append(bias)
        epi.z, epi.ldz = NULL, 0
        if self.iz >= 0:
            z = <cnp.ndarray>self.tail.leaves[self.iz]
            if not _rows_of(z, m, n, dt):
                return False
            epi.z, epi.ldz = cnp.PyArray_DATA(z), cnp.PyArray_STRIDE(z, 0) // size
            reads.append(z)
        for x in reads:
            if _bounds_overlap(out, <cnp.ndarray>x):
                return False
        # (the tiles read z and b beside C's tiles already stored: not inside C)
        for x in reads[3:]:
            if _bounds_overlap(c, <cnp.ndarray>x):
                return False
        epi.s0 = float(self.tail.scalars[self.s0]) if self.s0 >= 0 else 0.0
        epi.s1 = float(self.tail.scalars[self.s1]) if self.s1 >= 0 else 0.0
        if epi.s0 != epi.s0:  # (a NaN threshold: the pass's compare decides its flags)
            return False
        epi.kind = self.kind
        epi.out, epi.ldo = cnp.PyArray_DATA(out), cnp.PyArray_STRIDE(out, 0) // size
        return True

    cdef int run(self) except -1:
        cdef pyet_gemm_epi epi
        cdef int rc = 0
        if self._fits(&epi):
            rc = gemm_2d_epilogue(self.gemm.dst, self.gemm.a, self.gemm.b, self.gemm.alpha,
                                  self.gemm.beta, &epi)
        if rc == 0:
            return self.gemm.run() or self.tail.run()
        STATS[1] += 1
        if rc == 1:
            STATS[0] += 1
            return 0
        return self.tail.run()  # (bailed: the pass as it was)


cdef object _epilogue_of(Gemm g, Pass p):
    # the GemmEpilogue of g and the pass p after it, or None
    if not isinstance(g.a, np.ndarray) or g.first is not None or len(p.dsts) != 1:
        return None
    if cnp.PyArray_NDIM(g.dst) != 2 or cnp.PyArray_NDIM(<cnp.ndarray>p.dsts[0]) != 2:
        return None
    found = _match_epilogue(p.prog)
    if found is None:
        return None
    kind, where = found
    if not _blas.tiles_take_2d(g.dst, g.a):
        return None
    # the add's operands either way round: which is the bias the arrays say
    tries = [where]
    if "b" in where:
        other = "C" if kind == PYET_EPI_BIAS_RELU else "z"
        tries.append(dict(where))
        tries[1][other], tries[1]["b"] = where["b"], where[other]
    cdef pyet_gemm_epi epi
    for w in tries:
        e = GemmEpilogue(g, p, kind, w)
        if e._fits(&epi):
            return e
    return None


def fuse_epilogues(list actions):
    """``actions`` with each product the register tiles compute followed by a
    pass rewrite.GEMM_EPILOGUES fuses into its stores as one GemmEpilogue."""
    cdef list out = []
    cdef Py_ssize_t i = 0
    while i < len(actions):
        a = actions[i]
        if isinstance(a, Gemm) and i + 1 < len(actions) and isinstance(actions[i + 1], Pass):
            e = _epilogue_of(<Gemm>a, <Pass>actions[i + 1])
            if e is not None:
                out.append(e)
                i += 2
                continue
        out.append(a)
        i += 1
    return out


cdef inline object _recorder():
    if _RECORDINGS == 0:
        return None
    return _evaluation.recorder


def recording():
    """Whether a plan is being recorded on this thread (a kernel's into() must
    then only assign: its replay redoes the recorded passes, nothing else)."""
    return _recorder() is not None


def evaluating():
    """Whether this thread is inside an evaluation (a plan or an evaluation
    scope): a nested plan runs the ordinary way."""
    return getattr(_evaluation, "done", None) is not None


cdef _not_recordable():
    # work that cannot be replayed (a user function's pass, which may raise
    # midway): the recording is dropped
    rec = _recorder()
    if rec is not None:
        rec.append(None)


cdef int perform(Action a) except -1:
    """Run ``a``, recording it first when a plan is being recorded (its own
    inner evaluations are not: they run again inside it)."""
    rec = _recorder()
    if rec is None:
        return a.run()
    rec.append(a)
    _evaluation.recorder = None
    try:
        a.run()
    finally:
        _evaluation.recorder = rec
    return 0


cdef tuple _special_args(Expr e):
    # a special node's children; when recording, with their special nodes
    # computed first (recorded before it), so the kernel's replay reads them,
    # and a child a product's operand already put in scratch read from there
    # (a reduction's only where the scratch folds to the same bits: a small
    # leaf takes NumPy's loop, whose float32 sums along a row round
    # differently from the tree's fold)
    if _recorder() is None:
        return e._args
    cdef list args = []
    cdef Expr m
    done = _evaluation.done
    reduction = (<SpecialNode>e)._kind == SPECIAL_REDUCTION
    for a in e._args:
        m = materialize_node(a)
        if m._args and done is not None and not (
                reduction and not (<SpecialNode>e)._kernel.scratch_agrees(m)):
            hit = done.get(("scratch value", value_key(m), m._dt))
            if hit is not None:
                m = <Expr>hit[1]
        args.append(m)
    return tuple(args)


cdef object _special_value(Expr e):
    """A special node's value, computed into new scratch."""
    cdef tuple args = _special_args(e)
    rec = _recorder()
    if rec is None:
        value = (<SpecialNode>e)._kernel.value(args)
        _count_special(e, (<cnp.ndarray>value).nbytes)
        return value
    # recording: the value is fresh scratch the replay writes again, or a view
    # of memory the plan reads (a View node's), which stays current by itself
    kernel = (<SpecialNode>e)._kernel
    if getattr(kernel, "records_into", False):
        # into() only assigns expressions: the passes it makes are recorded
        out = np.empty(e.shape, DTYPES[e._dt])
        kernel.into(out, args)
        _count_special(e, (<cnp.ndarray>out).nbytes)
        return out
    view = getattr(kernel, "view", None)
    if view is not None and (<Expr>args[0])._op != OP_scalar:
        # a view of the child's value: of its memory, or of scratch a
        # recorded pass writes
        child = <Expr>args[0]
        if child._op == OP_leaf:
            arr = (<Tensor>child)._array
        else:
            arr = np.empty(child.shape, DTYPES[child._dt])
            assign(arr, child)
            STATS[4] += (<cnp.ndarray>arr).nbytes
        out = view(arr)
        if not _bounds_overlap(<cnp.ndarray>out, <cnp.ndarray>arr):
            # not a view after all (a reshape of a transposed array copies):
            # the copy is redone by each replay
            rec.append(Compute(<SpecialNode>e, out, (wrap(arr),), 0))
        _count_special(e, 0)
        return out
    if isinstance(kernel, Product) and not kernel.batch:
        out = _product_scratch(e, args)
        if out is not None:
            return out
    if getattr(kernel, "scratch_operands", False):
        # its elementwise operands evaluated into scratch by recorded passes:
        # the replay is one bound kernel call (the values its own evaluation
        # of them would give)
        args = tuple([_scratch_operand(<Expr>a) for a in args])
    _evaluation.recorder = None
    try:
        computed = (<SpecialNode>e)._kernel.value(args)
    finally:
        _evaluation.recorder = rec
    for a in args:
        for arr in _leaf_arrays(<Expr>a):
            if _bounds_overlap(<cnp.ndarray>computed, <cnp.ndarray>arr):
                _count_special(e, 0)
                return computed
    _count_special(e, (<cnp.ndarray>computed).nbytes)
    cdef Compute action = Compute(<SpecialNode>e, computed, args, 0)
    action.bind()
    rec.append(action)
    return computed


cdef object _product_scratch(Expr e, tuple args):
    # a float product, recorded as one gemm into new scratch, its operands
    # made BLAS-ready first (None when it is not one: the kernel's own way)
    cdef Expr x = args[0], y = args[1]
    if dot_dtypes(x._dt, y._dt)[0] != e._dt or (e._dt != DT_F32 and e._dt != DT_F64):
        return None
    out = np.empty(e.shape, DTYPES[e._dt])
    a, b = _blas_operand(x, e._dt, out), _blas_operand(y, e._dt, out)
    if not gemm_2d_ready(out, a, b):
        return None
    perform(Gemm(out, a, b, 1.0, 0.0, None))
    STATS[4] += (<cnp.ndarray>out).nbytes
    return out


cdef cnp.ndarray _blas_operand(Expr x, int dt, cnp.ndarray dst):
    """x as an array a product into dst can read (recording): a leaf as it
    is when BLAS takes it, else x evaluated into C-ordered scratch by a
    recorded pass -- once per run for equal trees over the same memory (the
    gradient both products of a layer's backward read)."""
    cdef cnp.ndarray a
    if x._op == OP_leaf and x._dt == dt:
        a = <cnp.ndarray>(<Tensor>x)._array
        if a.ndim == 2 and _blas.blas_ok(a) and not _bounds_overlap(a, dst):
            return a
    return (<Tensor>_scratch_leaf(x, dt))._array


cdef Expr _scratch_operand(Expr x):
    # x as a leaf (recording): itself, or its value in scratch (_scratch_leaf)
    return x if not x._args else _scratch_leaf(x, x._dt)


cdef Expr _scratch_leaf(Expr x, int dt):
    # x's value (as dt) in C-ordered scratch written by a recorded pass, once
    # per run for equal trees over the same memory; _special_args finds it
    done = _evaluation.done
    key = ("scratch value", value_key(x), dt) if done is not None else None
    hit = done.get(key) if done is not None else None
    if hit is not None:
        return <Expr>hit[1]
    a = aligned_empty(x.shape, dt)
    if x._dt == dt:
        assign_checked(<cnp.ndarray>a, x, dt)
    else:
        assign(a, x)
    STATS[4] += (<cnp.ndarray>a).nbytes
    leaf = wrap(a)
    if done is not None:
        done[key] = (x, leaf, _leaf_arrays(x))
    return leaf


def replay(list actions):
    """Run a recorded plan's actions again (see ``run_statements(record=True)``)."""
    cdef Action a
    for a in actions:
        a.run()


# ------------------------------------------------------------ statistics

# elementwise passes, gemm calls, reductions, special-node computations,
# scratch bytes: counted since the last stats(reset=True)
cdef Py_ssize_t STATS[5]
STATS[:] = [0, 0, 0, 0, 0]
_STAT_NAMES = ("elementwise_passes", "gemm_calls", "reductions", "special_nodes",
               "scratch_bytes")


cdef _count_special(Expr e, Py_ssize_t nbytes):
    cdef int kind = (<SpecialNode>e)._kind
    if kind == SPECIAL_PRODUCT:
        STATS[1] += 1
    elif kind == SPECIAL_REDUCTION:
        STATS[2] += 1
    else:
        STATS[3] += 1
    STATS[4] += nbytes


def stats(bint reset=False):
    """Counters of the work evaluations did since the last ``stats(reset=True)``:
    elementwise passes, gemm calls, reductions, other special-node computations
    and scratch bytes allocated for special nodes' values."""
    out = {name: STATS[i] for i, name in enumerate(_STAT_NAMES)}
    if reset:
        for i in range(5):
            STATS[i] = 0
    return out


# ----------------------------------------------------------------- joins

cdef void _join_blocks(char *d, char **src, Py_ssize_t *blk, Py_ssize_t n,
                       Py_ssize_t outer, Py_ssize_t row) noexcept nogil:
    # piece by piece: its ``outer`` blocks, each after the other pieces' blocks
    # before it (rows of ``row`` bytes in d)
    cdef Py_ssize_t o, p, b, off = 0
    cdef char *s
    cdef char *t
    for p in range(n):
        b, s, t = blk[p], src[p], d + off
        for o in range(outer):
            memcpy(t + o * row, s + o * b, b)
        off += b


cdef void _join_pair(char *d, char *s0, char *s1, Py_ssize_t b,
                     Py_ssize_t outer) noexcept nogil:
    # two pieces in blocks of b = 4 or 8 bytes (a pair stacked along a new
    # last axis), dst written in order, each block a load and a store: NumPy's
    # strided join 1.6x slower (two 64 x 64 float64: 5.9 -> 3.7 us); the
    # sources in registers (through an array a char store could alias them:
    # reloaded every element, slower than NumPy)
    cdef Py_ssize_t o
    if b == 8:
        for o in range(outer):
            memcpy(d + 16 * o, s0 + 8 * o, 8)
            memcpy(d + 16 * o + 8, s1 + 8 * o, 8)
    else:
        for o in range(outer):
            memcpy(d + 8 * o, s0 + 4 * o, 4)
            memcpy(d + 8 * o + 4, s1 + 4 * o, 4)


cdef inline object _join_piece(object x):
    # a piece of a join: an ndarray, or a leaf's (a Concat node's children as
    # they are); None for anything else (no block copies then)
    if type(x) is Tensor:
        return (<Tensor>x)._array
    return x if isinstance(x, cnp.ndarray) else None


def join_leaves(kernel, cnp.ndarray dst, tuple arrays):
    """A join's ``into_leaves`` (Special): join_into along ``kernel.axis``."""
    return _join_into(dst, arrays, kernel.axis)


def join_into(cnp.ndarray dst, arrays, int axis):
    """``np.concatenate(arrays, axis, out=dst)`` as block copies when dst and
    every array (ndarrays or leaves, in a list or tuple) are C-contiguous,
    aligned, of dst's dtype and disjoint from dst, with the shapes of a join
    along ``axis``, in blocks of 64 bytes or more: True, done; False, nothing
    written (NumPy's join then).  Its argument handling is most of
    np.concatenate's time on in-cache pieces (~2 us of two 4096-element ones)."""
    return _join_into(dst, arrays, axis)


# joins of at least this many bytes copy without the GIL (releasing and taking
# it back was ~5 % of a 64 KiB join's in-cache copy)
DEF JOIN_NOGIL_BYTES = 1 << 18


cdef bint _join_into(cnp.ndarray dst, arrays, int axis) except -1:
    # join_into's work (join_leaves calls it without a Python call)
    cdef Py_ssize_t n = len(arrays), p, k, outer = 1, inner, along = 0, total
    cdef int nd = cnp.PyArray_NDIM(dst)
    cdef cnp.ndarray a
    if not (0 <= axis < nd) or not cnp.PyArray_IS_C_CONTIGUOUS(dst) \
            or not cnp.PyArray_ISALIGNED(dst) or not cnp.PyArray_ISNOTSWAPPED(dst) \
            or not (cnp.PyArray_ISNUMBER(dst) or cnp.PyArray_ISBOOL(dst)):  # (bits only)
        return False
    inner = cnp.PyArray_ITEMSIZE(dst)
    for k in range(nd):
        if k < axis:
            outer *= cnp.PyArray_DIM(dst, k)
        elif k > axis:
            inner *= cnp.PyArray_DIM(dst, k)
    for p in range(n):
        x = _join_piece(arrays[p])
        if x is None:
            return False
        a = <cnp.ndarray>x
        if cnp.PyArray_NDIM(a) != nd or not cnp.PyArray_IS_C_CONTIGUOUS(a) \
                or not cnp.PyArray_ISALIGNED(a) \
                or cnp.PyArray_TYPE(a) != cnp.PyArray_TYPE(dst) or not cnp.PyArray_ISNOTSWAPPED(a) \
                or _bounds_overlap(a, dst):
            return False
        for k in range(nd):
            if k != axis and cnp.PyArray_DIM(a, k) != cnp.PyArray_DIM(dst, k):
                return False
        along += cnp.PyArray_DIM(a, axis)
    if along != cnp.PyArray_DIM(dst, axis):
        return False
    total = cnp.PyArray_NBYTES(dst)
    if total == 0:
        return True
    cdef char **src = <char **>malloc(n * (sizeof(char *) + sizeof(Py_ssize_t)))
    if src == NULL:
        raise MemoryError()
    cdef Py_ssize_t *blk = <Py_ssize_t *>(src + n)
    cdef bint pair = False
    for p in range(n):
        a = <cnp.ndarray>_join_piece(arrays[p])
        src[p] = <char *>cnp.PyArray_DATA(a)
        blk[p] = cnp.PyArray_DIM(a, axis) * inner
        if blk[p] < 64 and outer > 1:
            if n == 2 and (blk[p] == 4 or blk[p] == 8) and blk[p] == blk[0]:
                pair = True  # (_join_pair: a block a load and a store)
            else:
                # other short blocks: NumPy's strided copy loops are faster than
                # a memcpy call per block (stack of 2 x 16384 float64 along a
                # new last axis: 32 us, blocks 42 us)
                free(src)
                return False
    if pair and blk[0] != blk[1]:  # (a short block beside a long one)
        free(src)
        return False
    if pair:
        if total >= JOIN_NOGIL_BYTES:
            with nogil:
                _join_pair(<char *>cnp.PyArray_DATA(dst), src[0], src[1], blk[0], outer)
        else:
            _join_pair(<char *>cnp.PyArray_DATA(dst), src[0], src[1], blk[0], outer)
    elif total >= JOIN_NOGIL_BYTES:
        with nogil:
            _join_blocks(<char *>cnp.PyArray_DATA(dst), src, blk, n, outer, total // outer)
    else:
        _join_blocks(<char *>cnp.PyArray_DATA(dst), src, blk, n, outer, total // outer)
    free(src)
    return True


# ------------------------------------------------------- plan evaluation

cdef tuple value_key(Expr root):
    """What makes a subtree's value: its structure, and per leaf its memory,
    shape, strides and dtype, per scalar its value, per user function itself
    (pre-order; a node met again is a reference, so a graph that reads one
    node along several paths is walked once).  Equal keys, equal values, as
    long as no memory is written."""
    cdef list parts = [key_of(root)], stack = [root]
    cdef dict seen = {}
    cdef Expr e
    while stack:
        e = stack.pop()
        if e._args:
            n = seen.get(id(e))
            if n is not None:
                parts.append(("node", n))
                continue
            seen[id(e)] = len(parts)
        if e._op == OP_leaf:
            a = (<Tensor>e)._array
            parts.append((<Py_ssize_t>cnp.PyArray_DATA(<cnp.ndarray>a), a.shape, a.strides,
                          e._dt))
        elif e._op == OP_scalar:
            parts.append(((<Scalar>e)._value, e._dt))
        else:
            if e._op == OP_pyfunc:
                parts.append((<PyFunc>e)._fn)
            stack.extend(reversed(e._args))
    return tuple(parts)


class EvaluationScope:
    """Evaluations sharing one table of computed special nodes (an EvalPlan's
    run): equal subtrees over the same memory are computed once, and a value
    is forgotten once a later statement writes memory it was computed from."""

    def __enter__(self):
        self.outer = getattr(_evaluation, "done", None) is not None
        if not self.outer:
            _evaluation.done = {}
            _evaluation.structural = True
        return self

    def __exit__(self, *exc):
        if not self.outer:
            _evaluation.done = None
            _evaluation.structural = False
        return False

    def forget(self, dst):
        """Drop the values computed from memory that ``dst`` overlaps."""
        forget_values(dst)


cdef forget_values(cnp.ndarray dst):
    # the values in this evaluation's table computed from memory dst overlaps
    done = _evaluation.done
    if done:
        stale = []
        for key, entry in done.items():
            for a in <tuple>entry[2]:
                if _bounds_overlap(<cnp.ndarray>a, dst):
                    stale.append(key)
                    break
        for key in stale:
            del done[key]


def materialize(e):
    """e with every special node replaced by a leaf holding its value."""
    return materialize_node(as_operand(e))


cdef bint leaves_overlap(Expr e, cnp.ndarray dst) except -1:
    """True when any array below ``e`` may share memory with ``dst`` (their
    memory bounds intersect, as np.may_share_memory decides); each node of a
    graph that reads one node along several paths is visited once."""
    if e._op == OP_leaf:
        return _bounds_overlap(<cnp.ndarray>(<Tensor>e)._array, dst)
    cdef list stack = [e]
    cdef set seen = set()
    cdef Expr x
    while stack:
        x = stack.pop()
        if x._op == OP_leaf:
            if _bounds_overlap(<cnp.ndarray>(<Tensor>x)._array, dst):
                return True
        elif x._args:
            if id(x) in seen:
                continue
            seen.add(id(x))
            stack.extend(x._args)
    return False


def overlaps(e, dst):
    """True when any array below expression ``e`` may share memory with ``dst``."""
    return leaves_overlap(as_operand(e), dst)


# ------------------------------------------------------- evaluation guards

cdef Expr split(Expr root, bint compute=True):
    """root with pieces computed into scratch leaves, bottom up, wherever a
    subtree is deeper than MAX_DEPTH or has more than MAX_LEAVES leaves
    (compute off: the leaves are left unwritten, for explain)."""
    cdef dict new = {}
    cdef list stack = [(root, False)]
    cdef Expr e, c
    while stack:
        e, ready = stack.pop()
        if id(e) in new:
            continue
        if e._depth <= MAX_DEPTH and e._nleaves <= MAX_LEAVES:
            new[id(e)] = e
            continue
        if not ready:
            stack.append((e, True))
            stack.extend([(a, False) for a in e._args])
            continue
        args = [new[id(a)] for a in e._args]
        c = _rebuilt(e, tuple(args))
        while c._depth > MAX_DEPTH or c._nleaves > MAX_LEAVES:
            # evaluate the deepest (or widest) child into scratch
            k = 0
            for i in range(1, len(args)):
                if ((<Expr>args[i])._depth, (<Expr>args[i])._nleaves) > \
                        ((<Expr>args[k])._depth, (<Expr>args[k])._nleaves):
                    k = i
            if (<Expr>args[k])._depth == 0:
                # operands all leaves: only a special node (a join) has this
                # many, and its kernel assigns them one by one
                break
            piece = np.empty(args[k].shape, DTYPES[(<Expr>args[k])._dt])
            if compute:
                assign(piece, args[k])
            args[k] = wrap(piece)
            c = _rebuilt(e, tuple(args))
        new[id(e)] = c
    return new[id(root)]


# a subtree with a costly op or a user function computed on fewer elements
# than the pass (A + exp(b) of a row b, x * tanh(c) of a column c) is computed
# once into scratch, as NumPy's eager ufuncs compute it, when the work that
# saves (its elements fewer than the pass's times its ops' ns per element,
# rewrite.ELEMENT_NS) is at least HOIST_SAVED_NS (-1: never): in the pass,
# every element computed it again (1000^2 float64, pyet/NumPy: A + exp(b)
# 2.46x, A*tanh(c) 3.51x, A*sin(b) + cos(c) 5.46x).  Its own pass costs ~2 us
# (a second assignment, scratch, the tree rebuilt): hoisted/fused A * f(row)
# at 64 x 64 float64 tanh (4072 ns saved) 0.60, float32 tanh at 64 x 128
# (1532) 0.93, float32 exp at 64 x 64 (524) 1.33; at 2000 ns saved 0.8-0.9
cdef double HOIST_SAVED_NS = 2000


def set_hoist_saved(double ns):
    """Compute costly subtrees smaller than the pass once into scratch when
    that saves at least ``ns`` nanoseconds of their ops' work (a knob for
    measuring and testing; -1 turns it off).  Returns the previous value."""
    global HOIST_SAVED_NS
    before, HOIST_SAVED_NS = HOIST_SAVED_NS, ns
    return before


cdef inline Py_ssize_t _node_id(Expr e) noexcept:
    # id(e) without the builtin's call (and its audit hook)
    return <Py_ssize_t><void *>e


cdef inline bint may_hoist(Expr root):
    # whether a subtree below root may be hoisted (its smallest, _hoist_min,
    # with all of root's work, _ns): else no walk looks for one
    cdef Py_ssize_t size, m = root._hoist_min - 1
    if m < 0 or HOIST_SAVED_NS < 0:
        return False
    size = shape_size(root.shape)
    return 2 * m <= size and (size - m) * root._ns >= HOIST_SAVED_NS


cdef struct Packed:
    # a pass packed in blocks of whole rows (packed_pass): its rows
    Py_ssize_t m     # their length (0: the pass is not packed)
    bint fortran     # along the first axis (dst and leaves in Fortran order), else the last
    Py_ssize_t nd    # the pass's axes (an operand of fewer is broadcast along the first)


cdef inline bint hoisted(Expr e, Py_ssize_t size, const Packed *packed=NULL):
    # e is computed once into scratch in a pass of size elements
    # (HOIST_SAVED_NS), but for a row or column of a ``packed`` pass
    # (packed_pass), which computes it once itself
    cdef Py_ssize_t n = shape_size(e.shape)
    return HOIST_SAVED_NS >= 0 and 2 * n <= size and (size - n) * e._ns >= HOIST_SAVED_NS \
        and not (packed != NULL and in_pass(e, size, packed))


cdef Expr hoist_for(cnp.ndarray d, Expr e, list lines=None):
    # e with the subtrees dst[...] = e computes once hoisted (hoist_small,
    # after a read-only walk says there is one); with lines, explain's.
    # Callers ask may_hoist first.
    cdef Packed packed = packed_pass(d, e)
    if lines is None and not any_hoisted(e, &packed):
        return e
    return hoist_small(e, lines, &packed)


cdef Packed packed_pass(cnp.ndarray d, Expr root) except *:
    """How ``d[...] = root`` runs packed in blocks of whole rows with row and
    column broadcasts (rows_with_broadcast: every leaf flat in C order, a
    row of m or a column, dst too or its rows strided; or all in Fortran
    order; 2m <= BLOCK):
    the pass then computes a subtree of rows once a chunk (chunk_invariant)
    and one of columns once a row (plan_columns) itself, with no pass of its
    own (A * exp(row), 128 x 128 float32, pyet/NumPy: hoisted 1.00, in the
    pass 0.72; Fortran order, A * tanh(c) of a column of 64: 1.15-1.46
    hoisted, 0.65-0.78 in the pass).  Not packed (m 0): trees with special
    nodes or user functions, roots broadcast into d."""
    cdef Packed packed
    cdef Py_ssize_t nd = cnp.PyArray_NDIM(d), k
    packed.m = 0
    packed.fortran = False
    packed.nd = nd
    if nd < 2 or not ROW_BROADCASTS_ONCE or root._nleaves > 64 \
            or root._flags & (HAS_SPECIAL | HAS_PYFUNC) or len(root.shape) != nd:
        return packed
    for k in range(nd):  # (a root broadcast into dst: plan_once's)
        if root.shape[k] != cnp.PyArray_DIMS(d)[k]:
            return packed
    if not cnp.PyArray_IS_C_CONTIGUOUS(d):
        if cnp.PyArray_IS_F_CONTIGUOUS(d):
            packed.fortran = True
        elif not rows_in_c_order(d):
            return packed
    packed.m = cnp.PyArray_DIMS(d)[0 if packed.fortran else nd - 1]
    if 2 * packed.m > BLOCK or packed.m < 2 \
            or not leaves_pack(root, root, shape_size(root.shape), &packed):
        packed.m = 0
    return packed


cdef bint rows_in_c_order(cnp.ndarray d):
    # d's rows (last axis) are strided and the pass walks them in C order,
    # each written from a packed block (rows_with_broadcast, strided_rows):
    # each axis' step spans the axes after it (big[:, ::2], big[:, ::-1])
    cdef int k, nd = cnp.PyArray_NDIM(d)
    cdef cnp.npy_intp *s = cnp.PyArray_STRIDES(d)
    cdef cnp.npy_intp *n = cnp.PyArray_DIMS(d)
    cdef cnp.npy_intp step = s[nd - 1] if s[nd - 1] >= 0 else -s[nd - 1], span = n[nd - 1] * step
    if step == 0 or s[nd - 1] == cnp.PyArray_ITEMSIZE(d):
        return False
    for k in range(nd - 2, -1, -1):
        if n[k] > 1:  # (a size-1 axis' step is any)
            step = s[k] if s[k] >= 0 else -s[k]
            if step < span:
                return False
            span = n[k] * step
    return True


cdef bint leaves_pack(Expr x, Expr root, Py_ssize_t size, const Packed *packed) except -1:
    # every leaf below x flat in the pass's order (root's shape), a row or a
    # column (recursive: callers split trees deeper than MAX_DEPTH; a walk
    # with a list cost ~0.3 us a call in list churn and the collector)
    cdef cnp.ndarray a
    if x._op == OP_leaf and x.shape and not is_column(x, size, packed):
        a = <cnp.ndarray>(<Tensor>x)._array
        return (cnp.PyArray_IS_F_CONTIGUOUS(a) if packed.fortran
                else cnp.PyArray_IS_C_CONTIGUOUS(a)) \
            and (x.shape == root.shape or is_row(x, packed))
    for y in x._args:
        if not leaves_pack(<Expr>y, root, size, packed):
            return False
    return True


cdef inline Py_ssize_t row_axis_len(tuple shape, const Packed *packed):
    # the length of an operand's axis along the pass's rows (shape not
    # empty; broadcasting aligns the last axes: an operand of fewer axes has
    # none along a Fortran pass's first; no wraparound: shape[-1] would read
    # before the tuple's items)
    if packed.fortran:
        return shape[0] if len(shape) == packed.nd else 1
    return shape[len(shape) - 1]


cdef inline bint is_row(Expr e, const Packed *packed):
    # e is a row of the pass (any other axes of one)
    return len(e.shape) > 0 and row_axis_len(e.shape, packed) == packed.m \
        and shape_size(e.shape) == packed.m


cdef inline bint is_column(Expr e, Py_ssize_t size, const Packed *packed):
    # e is a column of a pass of size elements: one element a row
    return len(e.shape) > (0 if packed.fortran else 1) and row_axis_len(e.shape, packed) == 1 \
        and shape_size(e.shape) * packed.m == size


cdef inline bint in_pass(Expr e, Py_ssize_t size, const Packed *packed):
    # e is a row or column a packed pass computes once itself (packed_pass)
    return packed.m and (is_row(e, packed) or is_column(e, size, packed))


cdef bint any_hoisted(Expr root, const Packed *packed) except -1:
    # whether hoist_small would hoist a subtree: a walk with no memo and no
    # new objects (the rebuild's walk cost ~1.2 us where it found nothing);
    # it visits a node once a path, at most _nleaves paths
    cdef Py_ssize_t size = shape_size(root.shape)
    for e in root._args:
        if hoists_below(<Expr>e, size, packed):
            return True
    return False


cdef bint hoists_below(Expr e, Py_ssize_t size, const Packed *packed) except -1:
    # any_hoisted under e (recursive: callers split trees deeper than MAX_DEPTH)
    if e._hoist_min == 0 or not e._args:
        return False
    if hoisted(e, size, packed):
        return True
    for a in e._args:
        if hoists_below(<Expr>a, size, packed):
            return True
    return False


cdef Expr hoist_small(Expr root, list lines=None, const Packed *packed=NULL):
    """root with each largest subtree below it holding a costly op or a user
    function, of at most half root's elements and saving HOIST_SAVED_NS, replaced
    by a leaf holding its value (_scratch_leaf: recorded, and shared within an
    evaluation); special nodes' operands are theirs to evaluate.  (A root
    broadcast into dst whole is the pass's to compute once: plan_once.)  With
    ``lines`` (explain), nothing is computed: a line says what would be.
    Rows and columns of a ``packed`` pass (packed_pass) are left to it.  Callers
    ask may_hoist first (hoist_for)."""
    cdef Py_ssize_t size = shape_size(root.shape), i
    cdef dict new = {}  # (nodes with nothing costly below: not entered, themselves)
    cdef list stack = [root], ready = [False], args  # (no tuples: the walk cost ~1 us)
    cdef Expr e, a
    while stack:
        e = stack.pop()
        done = ready.pop()
        if e._hoist_min == 0 or not e._args or _node_id(e) in new:
            continue  # (special nodes' _hoist_min: 0)
        if not done and e is not root and hoisted(e, size, packed):
            if lines is None:
                new[_node_id(e)] = _scratch_leaf(e, e._dt)
            else:
                new[_node_id(e)] = wrap(np.empty(e.shape, DTYPES[e._dt]))
                lines.append(f"scratch: {node_repr(e, 48)} {fmt_shape(e.shape)} "
                             f"{DTYPES[e._dt]}, computed once ({shape_size(e.shape)} "
                             f"elements, the pass {size})")
            continue
        if not done:
            stack.append(e)
            ready.append(True)
            stack.extend(e._args)
            ready.extend([False] * len(e._args))
            continue
        args = None
        for i in range(len(e._args)):
            a = e._args[i]
            c = new.get(_node_id(a), a)
            if c is not a:
                if args is None:
                    args = list(e._args)
                args[i] = c
        new[_node_id(e)] = e if args is None else with_args(e, tuple(args))
    return new.get(_node_id(root), root)


cdef Expr _rebuilt(Expr e, tuple args):
    if e._op == OP_special:
        return special((<SpecialNode>e)._kernel, args, e.shape, DTYPES[e._dt])
    return with_args(e, args)


cdef check_int_powers(Expr root):
    # NumPy refuses integer ** negative integer: look at the exponents' values
    # as they are now, before anything is written
    cdef list stack = [root]
    cdef Expr e
    while stack:
        e = stack.pop()
        if not (e._flags & HAS_INT_POWER):
            continue
        if e._op == OP_power and (e._cdt == DT_I32 or e._cdt == DT_I64) and \
                (<Expr>e._args[1])._op != OP_scalar:
            if np.any(np.less(array_of(e._args[1]), 0)):
                raise ValueError("Integers to negative integer powers are not allowed.")
        stack.extend(e._args)


# ----------------------------------------------------------------- explain

def explain_assignment(object dst, object value):
    """Lines saying how ``dst[...] = value`` would be evaluated (nothing is
    computed): the root's way, special nodes and their scratch, shared nodes,
    the elementwise program, operands copied because they overlap dst."""
    cdef Expr e = check_assignment(dst, value)
    cdef cnp.ndarray d = <cnp.ndarray>dst
    cdef int dst_dt = array_dtype_code(d)
    lines = []
    if e._depth > MAX_DEPTH or e._nleaves > MAX_LEAVES:
        lines.append(f"evaluated in pieces (depth {e._depth}, {e._nleaves} leaves; "
                     f"limits {MAX_DEPTH}, {MAX_LEAVES}); the last piece:")
        e = split(e, False)
    if may_hoist(e):
        e = hoist_for(d, e, lines)
    form = _explain_root_form(d, e, dst_dt)
    if form is not None:
        lines.append(form)
        return lines + _scratch_lines(list(e._args))
    if e._op == OP_special and e.shape == (<object>d).shape and e._dt == dst_dt \
            and not leaves_overlap(e, d):
        lines.append(f"{(<SpecialNode>e)._kernel.name} straight into dst")
        return lines + _scratch_lines(list(e._args))
    lines += _scratch_lines([e])
    leafy = _stand_in(e)
    cdef Program prog = lower(leafy, dst_dt)
    if may_share(prog, leafy, cnp.PyArray_SIZE(d)):
        shared = shared_program(leafy, dst_dt, [], [], [], [])
        if shared is not None:
            prog = <Program>shared
            lines.append("a costly subtree read more than once over the same arrays: "
                         "computed once a block")
    lines.append(f"elementwise pass, {prog.nregs} block register(s):")
    lines.extend("  " + line for line in prog.text.split("\n"))
    cdef list leaves = [], scalars = [], fns = []
    collect(leafy, leaves, scalars, fns)
    for i, a in enumerate(leaves):
        if (<cnp.ndarray>a).size and np.may_share_memory(a, d) and not (
                (<cnp.ndarray>a).ctypes.data == d.ctypes.data
                and (<object>a).strides == (<object>d).strides):
            lines.append(f"  leaf{i} overlaps dst: copied first")
    size = shape_size((<object>d).shape)
    lines.append(f"threads: up to {threads_for(size, size)}")
    return lines


cdef list _scratch_lines(list roots):
    # the special nodes below roots (computed into scratch), each once, with
    # how often it is read where that is more than once
    cdef dict seen = {}
    cdef list specials = [], lines = [], stack = list(roots)
    cdef Expr x
    while stack:
        x = stack.pop()
        if not (x._flags & HAS_SPECIAL):
            continue
        if x._op == OP_special:
            seen[id(x)] = seen.get(id(x), 0) + 1
            if seen[id(x)] == 1:
                specials.append(x)
                stack.extend(x._args)
            continue
        stack.extend(x._args)
    for x in specials:
        kernel = (<SpecialNode>x)._kernel
        nbytes = DTYPES[x._dt].itemsize * shape_size(x.shape)
        uses = f", used {seen[id(x)]} times, computed once" if seen[id(x)] > 1 else ""
        lines.append(f"scratch: {kernel.name}({', '.join(kernel.describe())}) "
                     f"{fmt_shape(x.shape)} {DTYPES[x._dt]}, {nbytes} bytes{uses}")
    return lines


cdef Expr _stand_in(Expr e, dict memo=None):
    # e with special nodes replaced by uninitialized leaves of their shape and
    # dtype, as materialize_node would leave it (nothing computed); with memo,
    # one leaf for special nodes of equal structure over the same memory, as
    # a plan computes them once
    if not (e._flags & HAS_SPECIAL):
        return e
    if e._op == OP_special:
        key = value_key(e) if memo is not None else None
        if key is not None and key in memo:
            return memo[key]
        leaf = wrap(np.empty(e.shape, DTYPES[e._dt]))
        if key is not None:
            memo[key] = leaf
        return leaf
    return with_args(e, tuple([_stand_in(a, memo) for a in e._args]))


cdef object _explain_root_form(cnp.ndarray d, Expr e, int dst_dt):
    form = match_root_form(d, e, dst_dt)
    if form is None:
        return None
    p, dd, alpha, beta = form
    x, y = (<Expr>p)._args
    first = "D written into dst, then " if dd is not None and not same_view(dd, d) else ""
    return (f"one gemm into dst: {first}dst := {alpha:g} * "
            f"{(<SpecialNode>p)._kernel.name}(A{fmt_shape(x.shape)}, "
            f"B{fmt_shape(y.shape)}) + {beta:g} * dst")


# ------------------------------------------------------------- statements

cpdef run_statements(list dsts, list exprs, bint record=False):
    """Run ``dsts[k][...] = exprs[k]`` in order, as one plan (EvalPlan.run):
    the result of running them one by one, with special nodes of equal
    structure over the same memory computed once, and consecutive elementwise
    statements over destinations of one shape run as ONE multi-output pass.

    A statement whose errors depend on values (a user function, an integer
    power) makes the plan keep copies of every destination first and put them
    back if anything raises: on an error, no destination has been written.

    With ``record``, returns the run's work as actions for ``replay`` (None
    when it cannot be replayed: value-dependent errors, or a plan run inside
    another evaluation).
    """
    global _RECORDINGS
    cdef Py_ssize_t k
    cdef Expr e
    saved = None
    for k in range(len(exprs)):
        e = <Expr>exprs[k]
        if e._flags & (HAS_PYFUNC | HAS_INT_POWER):
            saved = [np.array(d, copy=True) for d in dsts]
            break
    outer = getattr(_evaluation, "done", None) is not None  # (an EvaluationScope's)
    exprs = share_subtrees(exprs, dsts)
    rec = [] if record and saved is None and not outer else None
    if not outer:
        _evaluation.done = {}
        _evaluation.structural = True
        _evaluation.recorder = rec
        if rec is not None:
            _RECORDINGS += 1
    try:
        _run_in_scope(dsts, exprs)
    except BaseException:
        if saved is not None:
            for d, old in zip(dsts, saved):
                np.copyto(d, old)
        raise
    finally:
        if not outer:
            _evaluation.done = None
            _evaluation.structural = False
            _evaluation.recorder = None
            if rec is not None:
                _RECORDINGS -= 1
    if rec is None or None in rec:
        return None
    return rec


class Shared(Special):
    """An elementwise subtree read more than once in a plan, computed once per
    run into scratch (its value is forgotten when a statement writes memory
    it read, as any special node's)."""

    __slots__ = ()
    name = "shared"
    records_into = True  # into() only assigns: a kept plan records its pass

    def params(self):
        return ()

    def value(self, args):
        out = np.empty(args[0].shape, args[0].dtype)
        assign(out, args[0])
        return out

    def into(self, dst, args):
        assign(dst, args[0])

    def vjp(self, node, g):
        return (g,)


_SHARED = Shared()


cdef list share_subtrees(list exprs, list dsts):
    """The statements with each costly elementwise subtree (rewrite.COSTLY_OPS)
    that they read more than once -- one node reached along several paths, in
    one tree or several, special nodes' operands included -- or that is
    smaller than its statement (hoisted: an operand broadcast, A + exp(b) of a
    row b) wrapped in a Shared node, computed once per run.  Not one read
    more than once only inside elementwise statements that one pass runs
    (``_in_one_pass``): the pass computes it once a block, in a register,
    where scratch would cost a full-size write and read (float64 1 - t*t
    and t*y of 2^20 elements: 2.42 ms through scratch)."""
    cdef dict uses = {}, costly = {}, new = {}, top = {}, spans = None
    cdef list order = [], stack = []
    cdef Expr e, c
    cdef Py_ssize_t n
    cdef bint small = False
    for e in exprs:
        if e._flags & HAS_COSTLY:
            break
    else:
        return exprs  # nothing costly anywhere (the flag is set when nodes are built)
    for e in exprs:  # a costly subtree that may be small in its statement
        small = small or may_hoist(e)
    for e in (exprs if small else []):  # top: the most elements of a statement each node is in
        n = shape_size(e.shape)
        stack.append(e)
        while stack:
            c = stack.pop()
            if top.get(id(c), -1) < n:
                top[id(c)] = n
                stack.extend(c._args)
    for e in exprs:
        uses[id(e)] = uses.get(id(e), 0) + 1
        stack.append((e, False))
    while stack:  # post-order, every node once; uses: how many parents read it
        e, expanded = stack.pop()
        if expanded:
            order.append(e)
            continue
        if id(e) in costly:
            continue
        costly[id(e)] = False
        stack.append((e, True))
        for c in e._args:
            uses[id(c)] = uses.get(id(c), 0) + 1
            stack.append((c, False))
    cdef dict wrap = {}
    for e in order:  # children before parents
        if e._op == OP_leaf or e._op == OP_scalar or e._op == OP_special:
            continue
        # costly in its own elementwise part (a special child is a leaf here)
        costly[id(e)] = COSTLY[e._op] or any([costly[id(c)] for c in e._args])
        if not costly[id(e)] or e._flags & HAS_PYFUNC:
            continue
        if small and hoisted(e, top[id(e)]):
            wrap[id(e)] = True
        elif uses[id(e)] > 1:
            if spans is None:
                spans = _statement_spans(exprs)
            if not _in_one_pass(e, spans[id(e)], exprs, dsts):
                wrap[id(e)] = True
    if not wrap:
        return exprs
    for e in order:  # rebuilt bottom up, each node once
        if e._op == OP_leaf or e._op == OP_scalar:
            new[id(e)] = e
            continue
        args = tuple([new[id(c)] for c in e._args])
        c = e if all([a is b for a, b in zip(args, e._args)]) else _rebuilt(e, args)
        if id(e) in wrap:
            c = special(_SHARED, (c,), e.shape, DTYPES[e._dt])
        new[id(e)] = c
    return [new[id(e)] for e in exprs]


cdef dict _statement_spans(list exprs):
    # each node's (first, last) statement reaching it
    cdef dict spans = {}
    cdef list stack
    cdef set seen
    cdef Expr x
    cdef Py_ssize_t k
    for k in range(len(exprs)):
        stack, seen = [exprs[k]], set()
        while stack:
            x = stack.pop()
            if id(x) in seen:
                continue
            seen.add(id(x))
            first_last = spans.get(id(x))
            spans[id(x)] = (k, k) if first_last is None else (first_last[0], k)
            stack.extend(x._args)
    return spans


cdef bint _in_one_pass(Expr e, tuple span, list exprs, list dsts) except -1:
    """Whether every statement from the first reading e to the last is an
    elementwise tree of e's shape (no special node, none that runs alone:
    _runs_alone) into destinations of that shape, so that one pass (a
    _Group, or a lone statement's shared_pass) computes e once a block in a
    register."""
    cdef Py_ssize_t k, first = span[0], last = span[1]
    cdef Expr x
    cdef cnp.ndarray d
    for k in range(first, last + 1):
        x, d = <Expr>exprs[k], <cnp.ndarray>dsts[k]
        if x._flags & HAS_SPECIAL or x.shape != e.shape or (<object>d).shape != e.shape \
                or _runs_alone(x, d, array_dtype_code(d)):
            return False
    return True


def shared_statements(list exprs, list dsts):
    """The statements ``dsts[k][...] = exprs[k]`` as a plan runs them: costly
    subtrees read more than once wrapped in Shared nodes where no one pass
    shares them (see share_subtrees)."""
    return share_subtrees(exprs, dsts)


cdef object _view_key(cnp.ndarray a):
    # what makes two arrays the same view: memory, shape, strides, dtype
    return (<Py_ssize_t>cnp.PyArray_DATA(a), (<object>a).shape, (<object>a).strides,
            cnp.PyArray_TYPE(a), cnp.PyArray_ITEMSIZE(a))


cdef class _Group:
    """Consecutive elementwise statements over destinations of one shape,
    lowered and run as one pass; each leaf that is an earlier statement's
    destination reads what that statement wrote into the block."""
    cdef list dsts, exprs, dts, leaf_map, leaves, scalars, index, sources
    cdef dict leaf_index
    cdef tuple shape
    cdef list log              # explain: groups recorded, nothing run

    def __init__(self, log=None):
        self.log = log
        self.clear()

    cdef clear(self):
        self.dsts, self.exprs, self.dts, self.leaf_map, self.index = [], [], [], [], []
        self.leaves, self.scalars, self.sources = [], [], []
        self.leaf_index = {}
        self.shape = None

    cdef bint accepts(self, cnp.ndarray d, Expr e, list leaves, list scalars):
        """Whether dst d = e can join: the same shape, d and e's leaves either
        disjoint from every destination so far or exactly the view the last
        statement writing that memory wrote (then read from the block).
        Leaves the source of each leaf in ``sources``."""
        cdef cnp.ndarray x
        cdef Py_ssize_t k
        self.sources = [None] * len(leaves)
        if self.shape is None:
            return True
        if (<object>d).shape != self.shape or \
                len(self.leaves) + len(leaves) + len(self.dsts) >= 250:
            return False
        for dk in self.dsts:
            if _bounds_overlap(d, <cnp.ndarray>dk) and \
                    _view_key(d) != _view_key(<cnp.ndarray>dk):
                return False
        for i in range(len(leaves)):
            x = <cnp.ndarray>leaves[i]
            for k in range(len(self.dsts) - 1, -1, -1):  # the last writer first
                if _bounds_overlap(x, <cnp.ndarray>self.dsts[k]):
                    if _view_key(x) != _view_key(<cnp.ndarray>self.dsts[k]):
                        return False
                    self.sources[i] = (SRC_DST, k)
                    break
        for a in scalars:  # one-value leaves are read when the pass is bound: before it writes
            if isinstance(a, np.ndarray):
                for dk in self.dsts:
                    if _bounds_overlap(<cnp.ndarray>a, <cnp.ndarray>dk):
                        return False
        return True

    cdef add(self, Py_ssize_t index, cnp.ndarray d, Expr e, int dt, list leaves,
             list scalars):
        # after accepts() (its sources)
        self.index.append(index)
        for a, src in zip(leaves, self.sources):
            if src is None:
                i = self.leaf_index.get(id(a))
                if i is None:
                    i = self.leaf_index[id(a)] = len(self.leaves)
                    self.leaves.append(a)
                src = (SRC_LEAF, i)
            self.leaf_map.append(src)
        self.scalars.extend(scalars)
        self.dsts.append(d)
        self.exprs.append(e)
        self.dts.append(dt)
        self.shape = (<object>d).shape

    cdef run(self):
        cdef Program prog
        if not self.dsts:
            return
        if self.log is not None:
            if len(self.dsts) > 1:
                prog = lower_group(self.exprs, self.dts, self.leaf_map, len(self.leaves))
                self.log.append((list(self.index), prog.nregs, prog.text))
            self.clear()
            return
        if len(self.dsts) == 1:
            assign_elementwise(<cnp.ndarray>self.dsts[0], <Expr>self.exprs[0], self.dts[0])
        else:
            prog = <Program>group_program(self.exprs, self.dts, self.leaf_map,
                                          len(self.leaves))
            perform(Pass(prog, self.dsts, self.leaves, self.scalars))
        for d in self.dsts:  # values computed from memory just written are stale
            forget_values(d)
        self.clear()


cdef bint _specials_overlap(Expr e, cnp.ndarray d) except -1:
    # a special node below e reads memory that d may share
    cdef list stack = [e]
    cdef Expr x
    while stack:
        x = stack.pop()
        if not (x._flags & HAS_SPECIAL):
            continue
        if x._op == OP_special:
            if leaves_overlap(x, d):
                return True
        else:
            stack.extend(x._args)
    return False


cdef bint _runs_alone(Expr e, cnp.ndarray d, int dt) except -1:
    # statement d = e is written its own way, never in a multi-output pass:
    # a user function or an integer power (may raise midway), a special root,
    # a tree evaluated in pieces, a 0-d destination, a product's root form
    return (e._flags & (HAS_PYFUNC | HAS_INT_POWER) or e._op == OP_special
            or e._depth > MAX_DEPTH or e._nleaves > MAX_LEAVES or not (<object>d).shape
            or (e._flags & HAS_SPECIAL and match_root_form(d, e, dt) is not None))


cdef _run_in_scope(list dsts, list exprs, list log=None):
    # log: record the multi-output passes (statement numbers, registers,
    # listing) instead of running anything
    cdef _Group group = _Group(log)
    cdef dict stand_ins = {}
    cdef Expr e
    cdef cnp.ndarray d
    cdef int dt
    cdef list leaves, scalars, pyfuncs
    for k in range(len(exprs)):
        d = <cnp.ndarray>dsts[k]
        e = <Expr>exprs[k]
        dt = array_dtype_code(d)
        if _runs_alone(e, d, dt):
            group.run()  # written its own way: alone
            if log is None:
                assign(d, e)
                forget_values(d)
            continue
        if e._flags & HAS_SPECIAL:
            for dk in group.dsts:  # special nodes read what the statements before wrote
                if _specials_overlap(e, <cnp.ndarray>dk):
                    group.run()
                    break
            e = materialize_node(e) if log is None else _stand_in(e, stand_ins)
        leaves, scalars, pyfuncs = [], [], []
        collect(e, leaves, scalars, pyfuncs)
        if not group.accepts(d, e, leaves, scalars):
            group.run()
            group.accepts(d, e, leaves, scalars)  # the first of a new pass
        group.add(k, d, e, dt, leaves, scalars)
    group.run()


def explain_statements(list dsts, list exprs):
    """The multi-output passes run_statements would make, as (statement
    numbers, registers, program listing); nothing is computed."""
    log = []
    _run_in_scope(dsts, share_subtrees(exprs, dsts), log)
    return log
