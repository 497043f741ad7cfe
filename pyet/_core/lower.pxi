# Lowering (MShadow's Plan classes, built once): an elementwise tree becomes a
# program of block kernels, cached by its structure.
#
# A program is a list of instructions ``out := op(src...)`` over registers
# (L1-sized blocks), leaves (operand memory, read in place), scalars and user
# functions (both bound at each call: passes.pxi).

# same_kind casting, as NumPy's ufunc out= (rows: from, columns: to)
cdef bint CAN_CAST[5][5]
for _i in range(DT_COUNT):
    for _j in range(DT_COUNT):
        CAN_CAST[_i][_j] = np.can_cast(DTYPES[_i], DTYPES[_j], "same_kind")


# which (op, dtype) kernels the compiled module has: asked once, at import
HAS_KERNEL = []
cdef char _probe[64]
cdef void *_probe_in[PYET_MAX_IN]
memset(_probe, 0, 64)
for _j in range(PYET_MAX_IN):
    _probe_in[_j] = _probe
for _op in range(OP_COUNT):
    HAS_KERNEL.append([bool(pyet_kernel(_op, _dt, 0, 0, _probe, _probe_in))
                       for _dt in range(DT_COUNT)])


# the ops a pass runs as NumPy's ufunc on each block (ops.NUMPY_LOOPS, but
# those pyet's kernel computes in SIMD lanes here: kernels.h pyet_kernel_in_lanes)
NUMPY_LOOP_NAMES = frozenset(name for name in NUMPY_LOOPS
                             if not pyet_kernel_in_lanes(OPCODES[name]))
NUMPY_LOOP_OPS = {OPCODES[name]: getattr(np, name) for name in NUMPY_LOOP_NAMES}
# float32 x ** y of two arrays as NumPy's loop (ops.NUMPY_POWER_F32)
cdef bint POWER_F32_NUMPY = NUMPY_POWER_F32
# (op, dtype) pairs run as NumPy's loop where it is AVX-512 (ops.NUMPY_SIMD_LOOPS)
cdef dict SIMD_LOOPS = {(OPCODES[name], DTYPES.index(np.dtype(dt))): getattr(np, name)
                        for name, dt in NUMPY_SIMD_LOOPS}
cdef bint SIMD_LOOPS_ON = True


cdef inline object numpy_loop_op(int op, int dt):
    # the NumPy ufunc a pass runs for op in dtype dt on each block, or None
    if SIMD_LOOPS_ON and SIMD_LOOPS:
        fn = SIMD_LOOPS.get((op, dt))
        if fn is not None:
            return fn
    return NUMPY_LOOP_OPS.get(op)
# compute-bound float ops whose pass, when it is the op alone on strided
# operands (steps 2, 3, 7), runs as NumPy's ufunc on the whole arrays:
# NumPy's SIMD loops load strided operands directly, where gathering them
# into blocks for pyet's kernel cost 1.15-1.7x NumPy (one thread).  Only
# where NumPy's loop gives pyet's kernel's bits, so values never depend on
# the layout: sqrt, divide and reciprocal (power -1) are exact.  (pyet's own
# float32 sin, cos, tanh and float64 sin, cos, tanh, exp, log read strided
# operands in their loops instead: Program.strided_kernel.  float32 divide:
# pyet's blocks measured 0.79x NumPy at 32768 elements, NumPy's loop 1.06x,
# and even at 2^18.)  WHOLE_UFUNC_BACKWARDS: those that run on negative steps.
WHOLE_UFUNC_OPS = {(OPCODES[name], dt): getattr(np, name) for name, dt in (
    ("sqrt", DT_F32), ("sqrt", DT_F64), ("divide", DT_F64))}
WHOLE_UFUNC_BACKWARDS = {(OPCODES[name], dt) for name, dt in (
    ("sqrt", DT_F32), ("sqrt", DT_F64), ("divide", DT_F64), ("power", DT_F32),
    ("power", DT_F64))}
# strided passes of fewer elements keep pyet's blocks (a ufunc call and
# np.errstate cost a few microseconds)
cdef pyet_intp WHOLE_UFUNC_MIN = 4096
# (a ufunc's C loop called on each row, Program.whole_loop, from any size:
# strided sqrt, divide and x ** -1 at 300-1500 elements, 1.03-1.35x NumPy,
# were 1.2-3x in pyet's blocks)
cdef pyet_intp WHOLE_LOOP_MIN = 0


def set_whole_ufunc_min(pyet_intp n, pyet_intp loop_n=0):
    """Strided one-op passes of at least ``n`` elements run as NumPy's ufunc
    on the whole operands, those of at least ``loop_n`` as its C loop on each
    row where pyet has it (a tuning knob; ``n = -1`` turns both off)."""
    global WHOLE_UFUNC_MIN, WHOLE_LOOP_MIN
    WHOLE_UFUNC_MIN = n if n >= 0 else (<pyet_intp>1) << 62
    WHOLE_LOOP_MIN = loop_n if n >= 0 and loop_n >= 0 else (<pyet_intp>1) << 62


def check_op_table():
    """Every dtype the op table declares for a row (``dtypes``) has a compiled
    kernel: ImportError naming the first row that lacks one.  (A kernel may
    have more: bool ``positive`` shares the copy loop NumPy never asks for.)"""
    for row in OPS:
        have = {DTYPES[d].name for d in range(DT_COUNT) if HAS_KERNEL[OPCODES[row.name]][d]}
        if not set(row.dtypes) <= have:
            raise ImportError(f"pyet's op table says {row.name} computes in "
                              f"{sorted(row.dtypes)}, the compiled kernels only in "
                              f"{sorted(have)}")


# fused ops and + - * / maximum minimum (pyet_kernel_sx) read strided leaves
# where they lie (a knob: tests compare it with the gathered blocks)
cdef bint STRIDED_FUSED = True
cdef set SX_PLAIN_OPS = {OPCODES[name] for name in (
    "add", "subtract", "multiply", "divide", "maximum", "minimum")}


def set_strided_fused(bint on):
    """Let one fused op read strided leaves where they lie (on, the default)
    or gather them into blocks (a testing knob; trees lowered later take it:
    the program cache is dropped).  Returns the previous setting."""
    global STRIDED_FUSED, _PROGRAMS
    old, STRIDED_FUSED = STRIDED_FUSED, on
    _PROGRAMS = {}
    return old


# ------------------------------------------------------------------ programs

# NumPy's inner loops (PyUFuncGenericFunction), called without the GIL
ctypedef void (*np_loop)(char **, cnp.npy_intp *, cnp.npy_intp *, void *) noexcept nogil


cdef class Program:
    """A lowered tree: instructions plus what binding needs."""
    cdef pyet_instr *code
    cdef int ninstr, nregs, nleaves, nscalars, dt_out
    cdef int max_isz  # the widest item an instruction reads or writes
    cdef int ndst              # destinations written (several: a multi-output pass)
    cdef int *scalar_dt        # the bound scalars' dtypes (nscalars - nonce of them)
    # instructions on one value each, run when the pass is bound (run_once):
    # ops of scalars and one-value leaves (Expr._one), each writing the
    # scalar slot ``out`` after the bound ones; nscalars counts both
    cdef pyet_instr *once
    cdef int nonce
    cdef np_loop *once_loop    # per once instruction: the op's NumPy loop, or NULL
    cdef void **once_data
    cdef list pyfuncs          # callable per instruction (None when not a pyfunc)
    # per instruction: NumPy's inner loop an op's NumPy loop calls straight
    # (NULL: none, or not an op's NumPy loop), and its data
    cdef np_loop *cloop
    cdef void **cdata
    cdef bint has_pyfunc       # an instruction calls Python (not cloop)
    cdef bint np_loops         # an instruction is an op's NumPy loop (either way)
    cdef bint user_pyfunc      # one of them a pyet.F function (not an op's NumPy loop)
    cdef bint copies_leaf      # the whole program is dst = leaf0 (same dtype)
    # prefetching (run_block): which instructions are compute-bound, and how many
    cdef bint *costly
    cdef int ncostly
    # the register the last NumPy loop (or user function) writes, kept in
    # dst's block where no leaf reads dst's memory (Run.dst_reg); -1: none
    cdef int dst_reg
    # one fused pass kernel (PASS_RULES), which reads its memory in one loop:
    # prefetching slowed it (Adam at 1e7: 0.9x -> 1.1x the C loop)
    cdef bint streams
    # one op from leaves (and scalars) straight into dst, run on strided
    # operands as this NumPy ufunc on the whole arrays (execute_group); None
    # when there is none with the op's bits (WHOLE_UFUNC_OPS)
    cdef object whole_fn
    # whole_fn's C loop for the program's dtype (NULL: none or not its bits):
    # execute_group calls it on each row itself (run_loop_rows)
    cdef np_loop whole_loop
    cdef void *whole_data
    cdef bint whole_far        # whole_loop only where an operand steps 3 items or more
    cdef bint whole_contig     # whole_far, and on contiguous rows too (CONTIG_LOOPS)
    cdef bint whole_near       # whole_far, and where float rows step 2 items (NEAR_LOOP_OPS)
    cdef bint whole_backwards  # also where an operand's rows step backwards
    cdef bint whole_any_dst    # whole_loop into strided destination rows too (_kernel_loop)
    # whole_fn is the op's own NumPy loop (ops.NUMPY_LOOPS, float32 power of
    # two arrays: ops.NUMPY_POWER_F32): run whole where
    # every operand's rows are contiguous (whole_wanted), not where strided
    cdef bint whole_contiguous
    # dst = op(leaf0) with a kernel that reads a strided leaf where it lies
    # (pyet_kernel_strided): the leaf is not gathered into blocks
    cdef bint strided_kernel
    # dst = op(leaf0, leaf1) of COLUMN_SCALAR_OPS: where one leaf is broadcast
    # along the rows, a kernel call a row with its element as the scalar
    # (passes.pxi column_slot, run_column_rows)
    cdef bint column_rows
    # dst = a fused op of leaves and scalars (s*x + y, x*y + z...) whose
    # kernel reads strided leaves where they lie (pyet_kernel_sx)
    cdef bint strided_fused
    # bit i: instruction i has a pyet_kernel_sx kernel (first 64)
    cdef uint64_t sx_instr
    # a costly subtree of the same structure appears more than once (1 - t*t
    # of t = tanh(x)): where its leaves are the same arrays, the tree runs as
    # a one-statement group, which computes it once (engine.pxi shared_pass)
    cdef bint repeats_costly
    # bit i: instruction i is pyet's kernel of a COLUMN_SCALAR_OPS op on two
    # inputs (first 64): it may take a value a row as its scalar (plan_columns)
    cdef uint64_t row_scalar_ok
    # run_plain's operand table: per instruction, PYET_MAX_IN inputs then the
    # output, each a slot: registers, then scalars, then the pass's operand
    # rows (destinations, then leaves); plain: no instruction needs more
    # than pointers and a kernel call (no user function, NumPy loop,
    # instruction on scalars only)
    cdef short *slots
    cdef bint plain
    # what a direct pass runs: plain but for NumPy loops called straight
    # (cloop), dst = leaf, and instructions on scalars only
    cdef bint direct_ok
    # float arithmetic only: every instruction float in and out, no where or cast
    cdef bint float_arith
    cdef readonly str text     # a readable listing, for debugging and tests

    def __dealloc__(self):
        free(self.code)
        free(self.once)
        free(self.once_loop)
        free(self.once_data)
        free(self.scalar_dt)
        free(self.costly)
        free(self.cloop)
        free(self.cdata)
        free(self.slots)

    def __repr__(self):
        return self.text


# lowering's own source kind: value k of _Lowering.once, a scalar slot after
# the bound ones once the tree is lowered (_place_once)
cdef enum:
    SRC_ONCE = 16


cdef class _Lowering:
    cdef list code, scalar_dt, free_regs, pyfuncs
    # instructions on one value each, run once when the pass is bound
    # (Program.once): their outputs are SRC_ONCE sources; and the NumPy
    # ufunc of each an op's NumPy loop computes (None: its kernel)
    cdef list once, once_fn, once_sflags
    cdef int nleaves, nscalars, nregs, npyfuncs
    # a multi-output pass: the source of each leaf occurrence (pre-order), a
    # leaf shared by several statements or an earlier statement's destination
    cdef list leaf_map
    cdef int nleaf_seen
    # common subexpressions of a multi-output pass (see _count_shared): the
    # signature of the costly subtree at (node, first leaf occurrence), the
    # value of each signature computed so far, its uses still to come, and
    # the registers held for them
    cdef dict sig_at, memo, uses
    cdef set pinned
    # such a value's register, per reader handed it whose instruction is not
    # emitted yet: the register is free only once every one of them has read it
    cdef dict pending

    def __init__(self, list leaf_map=None):
        self.code = []
        self.once, self.once_fn, self.once_sflags = [], [], []
        self.scalar_dt = []
        self.free_regs = []
        self.pyfuncs = []
        self.nleaves = self.nscalars = self.nregs = self.npyfuncs = 0
        self.leaf_map = leaf_map
        self.nleaf_seen = 0
        self.sig_at, self.memo, self.uses, self.pinned = {}, {}, {}, set()
        self.pending = {}

    cdef int alloc(self):
        if self.free_regs:
            return self.free_regs.pop()
        self.nregs += 1
        return self.nregs - 1

    cdef void release(self, list srcs):
        for kind, idx in srcs:
            if kind != SRC_REG:
                continue
            n = self.pending.get(idx)
            if n is not None:  # a shared value: free after its last pending reader
                if n > 1:
                    self.pending[idx] = n - 1
                    continue
                del self.pending[idx]
            if idx not in self.free_regs and idx not in self.pinned:
                self.free_regs.append(idx)

    cdef tuple emit(self, int op, int dt, int dt_out, list srcs, object fn=None):
        # the output never shares a block with an input: casts and where
        # change the element size, which an in-place loop cannot do
        cdef int r = self.alloc()
        self.release(srcs)
        self.code.append((op, dt, dt_out, r, srcs))
        self.pyfuncs.append(fn)
        return (SRC_REG, r)

    cdef tuple emit_once(self, int op, int dt, int dt_out, list srcs, object fn=None,
                         int sflags=0):
        # an instruction run once when bound: one value, into a slot of its
        # own; fn: the op's NumPy ufunc, whose C loop computes it; sflags:
        # which operands its kernel takes as scalars
        self.once.append((op, dt, dt_out, len(self.once), srcs))
        self.once_fn.append(fn)
        self.once_sflags.append(sflags)
        return (SRC_ONCE, len(self.once) - 1)

    cdef tuple operand(self, Expr e, int want, bint scalar_ok=True):
        """Lower e so that its value is available in dtype ``want``; a leaf of
        one value becomes a scalar, and an op of such operands a value
        computed once (Expr._one), unless the consumer's kernel cannot take one."""
        cdef tuple src
        if e._op == OP_scalar or (scalar_ok and e._op == OP_leaf and e._one):
            self.scalar_dt.append(want)
            self.nscalars += 1
            return (SRC_SCALAR, self.nscalars - 1)
        if scalar_ok and e._one:
            # its kernel (or the op's NumPy loop, as the pass would run it) on
            # one value, once a pass: NumPy's eager op on its 0-d temporary
            # (a hoisted pass of its own cost ~14,000 instructions)
            if e._op == OP_cast:
                src = self.operand(e._args[0], e._dt)
            else:
                srcs = [self.operand(e._args[i], DT_BOOL if e._op == OP_where and i == 0
                                     else e._cdt) for i in range(len(e._args))]
                # the kernel told which operands are scalars as the pass over
                # arrays of these values tells it: numbers (x ** 2's fast
                # path), not arrays (AVX-512 exp takes arrays; its scalar
                # path rounds otherwise)
                sflags = 0
                for i in range(len(e._args)):
                    if (<Expr>e._args[i])._op == OP_scalar:
                        sflags |= 1 << i
                src = self.emit_once(e._op, e._cdt, e._dt, srcs,
                                     numpy_loop_op(e._op, e._cdt) if e._cdt == e._dt else None,
                                     sflags)
            if e._dt != want:
                src = self.emit_once(OP_cast, e._dt, want, [src])
            return src
        if e._op == OP_leaf and self.leaf_map is not None:
            src = self.leaf_map[self.nleaf_seen]
            self.nleaf_seen += 1
        elif e._op == OP_leaf:
            self.nleaves += 1
            src = (SRC_LEAF, self.nleaves - 1)
        else:
            src = self.node(e)
        if e._dt != want:
            src = self.emit(OP_cast, e._dt, want, [src])
        return src

    cdef tuple node(self, Expr e):
        cdef tuple src
        sig = self.sig_at.get((id(e), self.nleaf_seen)) if self.sig_at else None
        if sig is None:
            return self.node_once(e)
        src = self.memo.get(sig)
        if src is not None:  # computed before in this pass: its leaves are skipped
            self.nleaf_seen += len((<tuple>sig)[1])
        else:
            src = self.node_once(e)
        self.uses[sig] -= 1
        if self.uses[sig] > 0:
            self.memo[sig] = src
            self.pinned.add(src[1])
        else:  # the last use: the register is free once its readers have it
            self.memo.pop(sig, None)
            self.pinned.discard(src[1])
        if src[0] == SRC_REG:
            self.pending[src[1]] = self.pending.get(src[1], 0) + 1
        return src

    cdef tuple node_once(self, Expr e):
        cdef Expr a
        fused = _match(e)
        if fused is not None:
            op_name, order, slots = fused
            lowered = {}
            self.bound_walk(e, (), slots, lowered, e._cdt)
            return self.emit(OPCODES[op_name], e._cdt, e._dt, [lowered[n] for n in order])
        if e._op == OP_cast:
            return self.operand(e._args[0], e._dt)
        if e._op == OP_pyfunc and (<PyFunc>e)._in_pass:
            # NumPy's loop on each block, as an op's (fn is in the node's key)
            srcs = [self.operand(a, e._dt, False) for a in e._args]
            return self.emit(OP_pyfunc, e._dt, e._dt, srcs, ((<PyFunc>e)._fn, [e._dt] * len(srcs)))
        if e._op == OP_pyfunc:  # numbered in pre-order, as binding collects them
            slot = self.npyfuncs
            self.npyfuncs += 1
            srcs = [self.operand(a, a._dt, False) for a in e._args]  # fn gets arrays
            return self.emit(OP_pyfunc, e._dt, e._dt, srcs,
                             (slot, [(<Expr>a)._dt for a in e._args]))
        fn = numpy_loop_op(e._op, e._cdt)
        if fn is not None and e._cdt == e._dt and not any([(<Expr>a)._one for a in e._args]):
            # NumPy's ufunc on each block (ops.NUMPY_LOOPS, NUMPY_SIMD_LOOPS), in place
            srcs = [self.operand(a, e._cdt, False) for a in e._args]
            return self.emit(OP_pyfunc, e._cdt, e._dt, srcs, (fn, [e._cdt] * len(srcs)))
        if e._op == OP_where:
            # the where kernel reads its condition as an array
            srcs = [self.operand(e._args[0], DT_BOOL, False), self.operand(e._args[1], e._cdt),
                    self.operand(e._args[2], e._cdt)]
            return self.emit(OP_where, e._cdt, e._dt, srcs)
        if e._op == OP_power and POWER_F32_NUMPY and e._cdt == e._dt == DT_F32 \
                and e._args[1].shape and not (<Expr>e._args[0])._one:
            # NumPy's SIMD loop on each block (ops.NUMPY_POWER_F32), in place
            srcs = [self.operand(a, e._cdt, False) for a in e._args]
            return self.emit(OP_pyfunc, e._cdt, e._dt, srcs, (np.power, [e._cdt, e._cdt]))
        if e._op == OP_power and e._args[1].shape:
            # an array exponent, even one constant value, takes pow per element
            # (as NumPy's loop); scalar exponents the kernel's fast paths
            srcs = [self.operand(e._args[0], e._cdt),
                    self.operand(e._args[1], e._cdt, False)]
            return self.emit(e._op, e._cdt, e._dt, srcs)
        srcs = [self.operand(a, e._cdt) for a in e._args]
        return self.emit(e._op, e._cdt, e._dt, srcs)

    cdef void bound_walk(self, Expr e, tuple path, dict slots, dict lowered, int dt):
        # Lower the subtrees a rule bound, in the tree's own order, so leaves
        # and scalars are numbered as binding (a pre-order walk) numbers them.
        # Slots are keyed by position: one tensor filling two slots is two leaves.
        name = slots.get(path)
        if name is not None:
            lowered[name] = self.operand(e, dt)
            return
        for i, a in enumerate(e._args):
            self.bound_walk(a, path + (i,), slots, lowered, dt)


cdef object _match(Expr e):
    """(fused op, operand order, {path: name}) of the first rule that fits;
    a path is the child indices leading from e to the bound subtree."""
    if e._cdt == DT_BOOL or e._dt != e._cdt or e._op < 0:
        return None
    for pattern, op_name, order in RULES:
        binding = {}
        if _fits(pattern, e, (), e._cdt, binding):
            return op_name, order, {path: name for name, path in binding.items()}
    return None


cdef bint _fits(object pattern, Expr e, tuple path, int dt, dict binding):
    if isinstance(pattern, str):
        if pattern in binding:
            return False
        if pattern[0] == "s":  # (a scalar slot: Expr._one)
            if not e._one:
                return False
        elif e._one or e._dt != dt:
            return False
        binding[pattern] = path
        return True
    if OPNAMES.get(e._op) != pattern[0] or e._cdt != dt or e._dt != dt:
        return False
    if len(e._args) != len(pattern) - 1:
        return False
    trial = dict(binding)
    if all(_fits(p, a, path + (i,), dt, trial)
           for i, (p, a) in enumerate(zip(pattern[1:], e._args))):
        binding.update(trial)
        return True
    if pattern[0] in COMMUTATIVE:
        trial = dict(binding)
        if _fits(pattern[1], e._args[1], path + (1,), dt, trial) and \
                _fits(pattern[2], e._args[0], path + (0,), dt, trial):
            binding.update(trial)
            return True
    return False


cdef dict _PROGRAMS = {}
cdef Py_ssize_t PROGRAM_LIMIT = 1 << 12   # programs kept; the cache is dropped past it


cdef Program get_program(Expr e, int dst_dt):
    global _PROGRAMS
    cdef Py_ssize_t key = key_of(e) * 8 + dst_dt
    prog = _PROGRAMS.get(key)
    if prog is None:
        prog = lower(e, dst_dt)
        if len(_PROGRAMS) >= PROGRAM_LIMIT:
            _PROGRAMS = {}
        _PROGRAMS[key] = prog
    return <Program>prog


def cache_size():
    """Number of cached programs (each distinct tree structure and dtypes)."""
    return len(_PROGRAMS)


def cache_info():
    """Sizes and limits of the structure-key table and the program cache."""
    return {"keys": len(_INTERN), "key_limit": INTERN_LIMIT,
            "programs": len(_PROGRAMS), "program_limit": PROGRAM_LIMIT}


def set_numpy_simd_loops(bint on):
    """Lower the ops of ops.NUMPY_SIMD_LOOPS (float64 log, float32 sin and cos,
    where NumPy's loops are AVX-512) to NumPy's loop (on, the default) or to
    pyet's kernels (a testing knob); trees lowered later take it (the program
    cache is dropped).  Returns the previous setting."""
    global SIMD_LOOPS_ON, _PROGRAMS
    before = SIMD_LOOPS_ON
    SIMD_LOOPS_ON = on
    _PROGRAMS = {}
    return before


def set_numpy_power_f32(bint on):
    """Lower float32 ``x ** y`` of two arrays to NumPy's loop (on) or to pyet's
    kernel (a testing knob; the default is ops.NUMPY_POWER_F32); trees lowered
    later take it (the program cache is dropped).  Returns the previous setting."""
    global POWER_F32_NUMPY, _PROGRAMS
    before = POWER_F32_NUMPY
    POWER_F32_NUMPY = on
    _PROGRAMS = {}
    return before


cdef void _write_root(_Lowering lw, tuple src, int k, int dst_dt):
    # destination k takes the root's value: the last instruction writes it
    # there, or a copy (or fill) does for a bare leaf or scalar
    cdef Py_ssize_t last = len(lw.code) - 1
    # (a value later statements read again stays in its register: copied)
    if src[0] == SRC_REG and last >= 0 and lw.code[last][3] == src[1] \
            and src[1] not in lw.pinned:
        op, dt, dt_out, _, srcs = lw.code[last]
        lw.code[last] = (op, dt, dt_out, -1 - k, srcs)
    else:
        lw.code.append((OP_copy, dst_dt, dst_dt, -1 - k, [src]))
        lw.pyfuncs.append(None)
    lw.release([src])


def lower(Expr e, int dst_dt):
    """Lower a tree to a program that writes dtype ``dst_dt`` into the destination."""
    cdef _Lowering lw = _Lowering()
    _write_root(lw, lw.operand(e, dst_dt), 0, dst_dt)
    _place_once(lw)
    _count_regs(lw)
    cdef Program p = _assemble(lw, 1, dst_dt)
    p.repeats_costly = bool(e._flags & HAS_COSTLY) and _repeats_costly(e)
    return p


cdef bint _repeats_costly(Expr e) except -1:
    # a costly subtree lower_group could share appears twice by structure
    # (every leaf occurrence alike)
    return shares_subtree(e, [(SRC_LEAF, 0)] * (e._nleaves + 1))


cdef bint shares_subtree(Expr e, list leaf_map) except -1:
    # lower_group([e], ..., leaf_map) computes a costly subtree of e once for
    # several readers (_count_shared's signatures)
    cdef _Lowering lw = _Lowering(leaf_map)
    cdef dict sigs = {}, counts = {}
    _signatures(lw, e, 0, True, sigs, counts)
    for n in counts.values():
        if n > 1:
            return True
    return False


cdef void _place_once(_Lowering lw) except *:
    # the values computed once take the scalar slots after the bound ones
    cdef int first = lw.nscalars
    for code in (lw.code, lw.once):
        for i, (op, dt, dt_out, out, srcs) in enumerate(code):
            code[i] = (op, dt, dt_out, out, [(SRC_SCALAR, first + k) if kind == SRC_ONCE
                                             else (kind, k) for kind, k in srcs])


cdef void _count_regs(_Lowering lw) except *:
    # the registers still used, once the root's writes dst (none: the pass
    # takes long blocks, see plan_blocks)
    lw.nregs = 1 + max([out for _, _, _, out, _ in lw.code if out >= 0]
                       + [i for *_, srcs in lw.code for k, i in srcs if k == SRC_REG],
                       default=-1)


cdef object group_program(list exprs, list dst_dts, list leaf_map, int nleaves,
                          bint sharing=False):
    # lower_group's program, cached by the statements' structure keys and the
    # leaf map (a multi-output pass's); with ``sharing`` (one statement whose
    # costly subtree may repeat), None where the map shares no subtree, an
    # answer cached too (asking shares_subtree was ~17K instructions a call)
    cdef Py_ssize_t i
    key = (tuple([key_of(<Expr>exprs[i]) * 8 + <int>dst_dts[i] for i in range(len(exprs))]),
           tuple(leaf_map))
    prog = _PROGRAMS.get(key)
    if prog is None:  # (False: shares nothing)
        prog = lower_group(exprs, dst_dts, leaf_map, nleaves) \
            if not sharing or shares_subtree(<Expr>exprs[0], leaf_map) else False
        if len(_PROGRAMS) >= PROGRAM_LIMIT:
            _PROGRAMS.clear()
        _PROGRAMS[key] = prog
    return prog if prog is not False else None


def lower_group(list exprs, list dst_dts, list leaf_map, int nleaves):
    """Lower several trees to one program writing destination k with tree k,
    in order, block by block (a multi-output pass).  ``leaf_map`` gives each
    leaf occurrence's source: a shared leaf, or an earlier destination."""
    cdef _Lowering lw = _Lowering(leaf_map)
    _count_shared(lw, exprs)
    for k in range(len(exprs)):
        _write_root(lw, lw.operand(exprs[k], dst_dts[k]), k, dst_dts[k])
    _place_once(lw)
    lw.nleaves = nleaves
    if _apply_pass_rules(lw.code, lw.pyfuncs):
        _count_regs(lw)
    return _assemble(lw, len(exprs), dst_dts[0])


cdef bint _apply_pass_rules(list code, list pyfuncs) except -1:
    # each run of instructions that a rewrite.PASS_RULES row matches becomes its
    # fused instruction (the destinations it writes besides out among its operands)
    cdef Py_ssize_t i = 0
    cdef bint applied = False
    while i < len(code):
        for instrs, op_name, order in PASS_RULES:
            binding = _match_run(code, i, instrs)
            if binding is not None:
                dt, last = code[i][1], binding[instrs[len(instrs) - 1][1]]
                code[i:i + len(instrs)] = [(OPCODES[op_name], dt, dt, -1 - last[1],
                                            [binding[name] for name in order])]
                pyfuncs[i:i + len(instrs)] = [None]
                applied = True
                break
        i += 1
    return applied


cdef object _match_run(list code, Py_ssize_t i, tuple instrs):
    """{name: source} binding the run of instructions at code[i] to a
    PASS_RULES row, or None."""
    cdef Py_ssize_t k
    if i + len(instrs) > len(code) or code[i][1] not in (DT_F32, DT_F64):
        return None
    dt = code[i][1]
    binding, written = {}, set()
    for k, pat in enumerate(instrs):
        op, dt_in, dt_out, out, srcs = code[i + k]
        if OPNAMES.get(op) != pat[0] or dt_in != dt or dt_out != dt \
                or len(srcs) != len(pat) - 2:
            return None
        trial = _bind_operands(pat[2:], srcs, binding, written)
        if trial is None and pat[0] in COMMUTATIVE:
            trial = _bind_operands(pat[:1:-1], srcs, binding, written)
        if trial is None:
            return None
        binding = trial
        name = pat[1]
        if (name[0] == "D") != (out < 0) or name in binding:
            return None
        binding[name] = (SRC_DST, -1 - out) if out < 0 else (SRC_REG, out)
        written.add(binding[name])
    # the run's registers hold nothing read after it (their last reader is in it)
    regs = {src[1] for src in written if src[0] == SRC_REG}
    for k in range(i + len(instrs), len(code)):
        if not regs:
            break
        for src in code[k][4]:
            if src[0] == SRC_REG and src[1] in regs:
                return None
        regs.discard(code[k][3])
    return binding


cdef object _bind_operands(tuple names, list srcs, dict binding, set written):
    # the binding extended by names[j] -> srcs[j], or None where they disagree
    trial = dict(binding)
    for name, src in zip(names, srcs):
        src = tuple(src)
        if name in trial:
            if trial[name] != src:
                return None
        elif name[0] == "s":
            if src[0] != SRC_SCALAR:
                return None
            trial[name] = src
        elif name[0] in "DR" or src[0] == SRC_SCALAR or src in written:
            return None  # (a D or R operand is bound where the run wrote it)
        else:
            trial[name] = src
    return trial


cdef tuple _signatures(_Lowering lw, Expr e, Py_ssize_t pos, bint scalar_ok, dict sigs,
                       dict counts):
    # Walk e as collect() numbers leaf occurrences, from occurrence pos:
    # (next position, whether e's subtree is free of scalars, 0-d and
    # constant leaves and user functions, whose values binding supplies and
    # the program's cache key does not hold).  Records the signature of every
    # costly subtree free of them: its structure and the source of each leaf
    # (a shared leaf or an earlier statement's destination), which decide
    # its value within a block.
    cdef Py_ssize_t i, start = pos
    cdef bint plain = True
    if e._op == OP_leaf:
        return pos + 1 if not scalar_ok or not e._one else pos, \
            not scalar_ok or not e._one
    if e._op == OP_scalar:
        return pos, False
    for i in range(len(e._args)):
        pos, ok = _signatures(lw, <Expr>e._args[i], pos, child_scalar_ok(e, scalar_ok, i),
                              sigs, counts)
        plain = plain and ok
    if not plain or e._op == OP_pyfunc:
        return pos, False
    if e._flags & HAS_COSTLY:
        sig = (key_of(e), tuple(lw.leaf_map[start:pos]))
        sigs[(id(e), start)] = sig
        counts[sig] = counts.get(sig, 0) + 1
    return pos, True


cdef void _count_shared(_Lowering lw, list exprs) except *:
    # A multi-output pass computes a costly subtree that several of its
    # statements (or one, twice) hold once per block, in a register until
    # its last reader: two sigmoid(dot(x, W) + b) trees built separately read
    # one gemm's scratch, and the sigmoid runs once.
    cdef dict sigs = {}, counts = {}
    cdef Py_ssize_t pos = 0
    for e in exprs:
        pos = _signatures(lw, <Expr>e, pos, True, sigs, counts)[0]
    for key, sig in sigs.items():
        if counts[sig] > 1:
            lw.sig_at[key] = sig
            lw.uses[sig] = counts[sig]


cdef Program _assemble(_Lowering lw, int ndst, int dst_dt):
    cdef Program p = Program.__new__(Program)
    p.ninstr = len(lw.code)
    p.code = <pyet_instr *>malloc(max(p.ninstr, 1) * sizeof(pyet_instr))
    p.scalar_dt = <int *>malloc(max(lw.nscalars, 1) * sizeof(int))
    p.costly = <bint *>malloc(max(p.ninstr, 1) * sizeof(bint))
    p.cloop = <np_loop *>malloc(max(p.ninstr, 1) * sizeof(np_loop))
    p.cdata = <void **>malloc(max(p.ninstr, 1) * sizeof(void *))
    p.slots = <short *>malloc(max(p.ninstr, 1) * (PYET_MAX_IN + 1) * sizeof(short))
    p.nonce = len(lw.once)
    p.once = <pyet_instr *>malloc(max(p.nonce, 1) * sizeof(pyet_instr))
    p.once_loop = <np_loop *>malloc(max(p.nonce, 1) * sizeof(np_loop))
    p.once_data = <void **>malloc(max(p.nonce, 1) * sizeof(void *))
    if p.code == NULL or p.scalar_dt == NULL or p.costly == NULL or p.cloop == NULL \
            or p.cdata == NULL or p.slots == NULL or p.once == NULL or p.once_loop == NULL \
            or p.once_data == NULL:
        raise MemoryError()
    p.nregs, p.nleaves, p.dt_out = lw.nregs, lw.nleaves, dst_dt
    p.nscalars = lw.nscalars + p.nonce
    p.ndst = ndst
    p.pyfuncs = lw.pyfuncs
    p.has_pyfunc = False
    p.np_loops = any(f is not None and type(f[0]) is not int for f in lw.pyfuncs)
    for i, (op, dt, dt_out, out, srcs) in enumerate(lw.code):
        p.cloop[i], p.cdata[i] = NULL, NULL
        fn = lw.pyfuncs[i]
        if fn is None:
            continue
        k = -1
        if type(fn[0]) is not int and all(d == dt for d in fn[1]) \
                and all(kind != SRC_SCALAR for kind, _ in srcs):
            k = _c_loop_index(fn[0], fn[1], dt_out)
        if k < 0:
            p.has_pyfunc = True
        else:
            p.cloop[i] = <np_loop>(<cnp.ufunc>fn[0]).functions[k]
            p.cdata[i] = (<cnp.ufunc>fn[0]).data[k]
    p.user_pyfunc = any(f is not None and type(f[0]) is int for f in lw.pyfuncs)
    p.copies_leaf = (ndst == 1 and len(lw.code) == 1 and lw.code[0][0] == OP_copy
                     and lw.code[0][4][0][0] == SRC_LEAF)
    for i, d in enumerate(lw.scalar_dt):
        p.scalar_dt[i] = d
    lines = []
    for i, (op, dt, dt_out, out, srcs) in enumerate(lw.once):
        _fill_instr(&p.once[i], op, dt, dt_out, lw.nscalars + out, srcs)
        p.once[i].sflags = lw.once_sflags[i]
        fn = lw.once_fn[i]
        k = _c_loop_index(fn, [dt] * len(srcs), dt_out) if fn is not None else -1
        p.once_loop[i] = <np_loop>(<cnp.ufunc>fn).functions[k] if k >= 0 else NULL
        p.once_data[i] = (<cnp.ufunc>fn).data[k] if k >= 0 else NULL
        lines.append(f"s{lw.nscalars + out} = {OPNAMES[op]}[{DTYPES[dt]}->{DTYPES[dt_out]}]"
                     f"({', '.join(f's{k}' for _, k in srcs)}) (once, when bound"
                     + (", NumPy's loop)" if k >= 0 else ")"))
        if op != OP_cast and not HAS_KERNEL[op][dt] and k < 0:
            raise TypeError(f"pyet has no {OPNAMES[op]} kernel for {DTYPES[dt]}")
    for i, (op, dt, dt_out, out, srcs) in enumerate(lw.code):
        _fill_instr(&p.code[i], op, dt, dt_out, out, srcs)
        line = _listing(op, dt, dt_out, out, srcs, ndst)
        fn = lw.pyfuncs[i]
        if fn is not None and type(fn[0]) is not int:  # an op run as NumPy's loop
            line = line.replace("pyfunc[", f"{fn[0].__name__}[", 1) + (
                " (NumPy's loop)" if p.cloop[i] != NULL else " (NumPy's loop, its ufunc called)")
        lines.append(line)
        if op != OP_cast and op != OP_pyfunc and not HAS_KERNEL[op][dt]:
            raise TypeError(f"pyet has no {OPNAMES[op]} kernel for {DTYPES[dt]}")
    p.text = "\n".join(lines)
    p.streams = p.ninstr == 1 and lw.code[0][0] in PASS_OUTPUTS
    p.ncostly = 0
    p.max_isz = 1
    for i in range(p.ninstr):
        p.max_isz = max(p.max_isz, pyet_itemsize[p.code[i].dt], pyet_itemsize[p.code[i].dt_out])
    for i, (op, *_) in enumerate(lw.code):
        p.costly[i] = OPNAMES[op] in COMPUTE_BOUND
        p.ncostly += p.costly[i]
    p.dst_reg = _dst_register(p)
    p.whole_fn = _whole_fn(lw, ndst, dst_dt)
    p.whole_contiguous = p.whole_fn is not None and lw.code[0][0] == OP_pyfunc
    if p.whole_contiguous and p.cloop[0] != NULL:  # its blocks cost no Python call
        p.whole_fn, p.whole_contiguous = None, False
    p.whole_loop = NULL
    p.whole_data = NULL
    p.whole_far = p.whole_contig = p.whole_near = False
    loop = None
    if p.whole_fn is not None and not p.whole_contiguous:
        loop = _direct_loop(p.whole_fn, p.code[0].dt)
    elif _one_op_from_operands(lw, ndst, dst_dt):
        loop, p.whole_any_dst = _kernel_loop(p.code[0].op, p.code[0].dt, p.code[0].dt_out)
        p.whole_far = loop is not None
        p.whole_contig = p.whole_far and p.code[0].op not in CONTIG_BLOCKS_OPS
        p.whole_near = p.whole_far and p.code[0].op in NEAR_LOOP_OPS \
            and (p.code[0].dt == DT_F32 or p.code[0].dt == DT_F64)
    if loop is not None:
        p.text += " (strided: NumPy's C loop)" if not p.whole_contig or not CONTIG_LOOPS else \
            " (strided, and contiguous on one thread: NumPy's C loop)"
        p.whole_loop = <np_loop><uintptr_t>loop[0]
        p.whole_data = <void *><uintptr_t>loop[1]
    p.strided_kernel = (ndst == 1 and p.ninstr == 1 and p.code[0].nin == 1
                        and p.code[0].src_kind[0] == SRC_LEAF and p.code[0].out == -1
                        and p.code[0].dt == p.code[0].dt_out == dst_dt
                        and pyet_kernel_strided(p.code[0].op, p.code[0].dt, 0, NULL, NULL, 8))
    p.column_rows = (_one_op_from_operands(lw, ndst, dst_dt) and p.code[0].nin == 2
                     and p.code[0].op in COLUMN_SCALAR_OPS and p.cloop[0] == NULL
                     and p.code[0].src_kind[0] == p.code[0].src_kind[1] == SRC_LEAF
                     and p.code[0].src[0] != p.code[0].src[1])
    p.sx_instr = 0
    if STRIDED_FUSED:
        for i in range(min(p.ninstr, 64)):
            if p.code[i].dt == p.code[i].dt_out \
                    and pyet_kernel_sx(p.code[i].op, p.code[i].dt, 0, NULL, NULL, NULL):
                p.sx_instr |= (<uint64_t>1) << i
    p.row_scalar_ok = 0
    for i in range(min(p.ninstr, 64)):
        if p.code[i].nin == 2 and p.code[i].op in COLUMN_SCALAR_OPS and p.cloop[i] == NULL:
            p.row_scalar_ok |= (<uint64_t>1) << i
    # (one op of + - * / maximum minimum keeps its paths: NumPy's loops on
    # strided rows, pyet's vectorized gathers)
    p.strided_fused = (ndst == 1 and p.ninstr == 1 and p.code[0].nin > 1
                       and p.code[0].out == -1 and p.code[0].dt_out == dst_dt
                       and p.sx_instr & 1 and p.code[0].op not in SX_PLAIN_OPS)
    if p.strided_fused:
        p.text += " (strided leaves: read where they lie)"
    p.whole_backwards = p.ninstr == 1 and (lw.code[0][0], lw.code[0][1]) in WHOLE_UFUNC_BACKWARDS
    _plain_slots(p)
    return p


cdef int _fill_instr(pyet_instr *ins, int op, int dt, int dt_out, int out,
                     list srcs) except -1:
    cdef int j
    ins.op, ins.dt, ins.dt_out, ins.out = op, dt, dt_out, out
    ins.nin = len(srcs)
    ins.sflags = 0
    for j, (kind, idx) in enumerate(srcs):
        ins.src_kind[j] = kind
        ins.src[j] = idx
        if kind == SRC_SCALAR:
            ins.sflags |= 1 << j
    return 0


cdef int _dst_register(Program p) noexcept:
    # Program.dst_reg: one destination, written by the last instruction only;
    # every value the register holds of dst's item size (its block is dst's)
    cdef int i, reg = -1, last = p.ninstr - 1
    if p.ndst != 1 or last < 1 or p.code[last].out != -1:
        return -1
    for i in range(last):
        if p.code[i].out < 0:
            return -1
        if p.code[i].op == OP_pyfunc:
            reg = p.code[i].out
    for i in range(last):
        if p.code[i].out == reg and pyet_itemsize[p.code[i].dt_out] != pyet_itemsize[p.dt_out]:
            return -1
    return reg


cdef void _plain_slots(Program p) noexcept:
    # Program.slots, .plain, .direct_ok and .float_arith
    cdef int i, j
    cdef short *sl
    # (the table's size is checked per pass, against its operands: plan_operands)
    p.direct_ok = not p.has_pyfunc and not p.user_pyfunc
    p.plain = p.direct_ok and not p.np_loops and not p.copies_leaf
    p.float_arith = True
    for i in range(p.ninstr):
        sl = p.slots + i * (PYET_MAX_IN + 1)
        if p.code[i].op == OP_pyfunc or scalars_only(&p.code[i]):
            p.plain = False
        if (p.code[i].dt != DT_F32 and p.code[i].dt != DT_F64) \
                or p.code[i].dt_out != p.code[i].dt or p.code[i].op == OP_where \
                or p.code[i].op == OP_cast:
            p.float_arith = False
        for j in range(p.code[i].nin):
            sl[j] = _slot(p, p.code[i].src_kind[j], p.code[i].src[j])
        sl[PYET_MAX_IN] = _slot(p, SRC_REG, p.code[i].out) if p.code[i].out >= 0 \
            else _slot(p, SRC_DST, -1 - p.code[i].out)


cdef inline short _slot(Program p, int kind, int idx) noexcept:
    if kind == SRC_REG:
        return idx
    if kind == SRC_SCALAR:
        return p.nregs + idx
    if kind == SRC_DST:
        return p.nregs + p.nscalars + idx
    return p.nregs + p.nscalars + p.ndst + idx  # SRC_LEAF


cdef bint _one_op_from_operands(_Lowering lw, int ndst, int dst_dt):
    # dst = op(leaves and scalars, one leaf at least), no cast, no fused op
    if ndst != 1 or len(lw.code) != 1:
        return False
    op, dt, dt_out, out, srcs = lw.code[0]
    return out == -1 and dt_out == dst_dt and lw.pyfuncs[0] is None \
        and all(kind == SRC_LEAF or kind == SRC_SCALAR for kind, _ in srcs) \
        and any(kind == SRC_LEAF for kind, _ in srcs)


cdef object _whole_fn(_Lowering lw, int ndst, int dst_dt):
    # the NumPy ufunc that computes the whole program, dst = op(leaves,
    # scalars), with the program's bits, or None: a WHOLE_UFUNC_OPS op, or
    # power with a scalar exponent (np.reciprocal when it is -1, see
    # run_whole), or an op's own NumPy loop (ops.NUMPY_LOOPS, float32 power:
    # Program.whole_contiguous, as most of those loops are 2-40x slower
    # strided than contiguous, strided operands keep its blocks).
    if ndst != 1 or len(lw.code) != 1:
        return None
    op, dt, dt_out, out, srcs = lw.code[0]
    if op == OP_pyfunc:  # an op's NumPy loop, alone on leaves
        fn = lw.pyfuncs[0]
        if type(fn[0]) is int or out != -1 or dt != dt_out or dt != dst_dt \
                or not all(kind == SRC_LEAF for kind, _ in srcs):
            return None
        return fn[0]
    if out != -1 or dt != dt_out or dt != dst_dt or (dt != DT_F32 and dt != DT_F64):
        return None
    if not all(kind == SRC_LEAF or kind == SRC_SCALAR for kind, _ in srcs) \
            or not any(kind == SRC_LEAF for kind, _ in srcs):
        return None
    if op == OP_power and srcs[0][0] == SRC_LEAF and srcs[1][0] == SRC_SCALAR:
        return np.reciprocal
    return WHOLE_UFUNC_OPS.get((op, dt))


# per fused op of rewrite.PASS_RULES: how many of its last operands it writes
PASS_OUTPUTS = {OPCODES[op_name]: sum(name[0] == "D" for name in order)
                for _, op_name, order in PASS_RULES}


cdef str _listing(int op, int dt, int dt_out, int out, list srcs, int ndst):
    names = {SRC_REG: "r", SRC_LEAF: "leaf", SRC_SCALAR: "s", SRC_DST: "dst"}
    dst = f"r{out}" if out >= 0 else "dst" if ndst == 1 else f"dst{-1 - out}"
    nout = PASS_OUTPUTS.get(op, 0)
    if nout:  # the destinations it writes besides out, then out
        dst = ", ".join([f"dst{i}" for _, i in srcs[len(srcs) - nout:]] + [dst])
        srcs = srcs[:len(srcs) - nout]
    args = ", ".join(f"{names[k]}{i}" for k, i in srcs)
    return f"{dst} = {OPNAMES[op]}[{DTYPES[dt]}->{DTYPES[dt_out]}]({args})"
