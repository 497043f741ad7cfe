# Plans (MShadow's Plan classes): lower an elementwise tree once to a program
# of block kernels, cache it by structure, and run it over the destination
# block by block with the GIL released.
#
# A program is a list of instructions ``out := op(src...)`` over registers
# (L1-sized blocks), leaves (operand memory, read in place), scalars and user
# functions (both bound at each call).  The driver merges contiguous
# dimensions, walks the outer ones row by row, and cuts each row into blocks;
# leaves whose row is strided or broadcast are gathered into a block first, so
# every kernel loop is contiguous and vectorizes.

DEF MAXD = 64          # NumPy 2's largest ndim
DEF MAX_REG_BYTES = 8  # largest itemsize
DEF PLAIN_SLOTS = 512  # run_plain's operand table: registers, scalars and operands
DEF SMALL_META = 8192    # execute_group's per-call metadata up to this: on the stack
DEF SMALL_SCRATCH = 4096  # and its scratch (one thread)
DEF KEPT_SCRATCH = 8 << 20  # larger scratch kept between passes up to this (take_scratch)
DEF GIL_HELD_PASS = 1024  # one-thread passes of at most this many elements keep the GIL
# (NumPy keeps it up to 500 elements; releasing and retaking it cost 1.54x -> 1.26x
# NumPy on a 257-element a+b)

# block length in elements: registers are BLOCK * 8 bytes; chosen by
# measurement so that a few registers stay in L1
cdef pyet_intp BLOCK = 512
# a pass over more operand memory than this (bytes) prefetches each next
# block while it computes the current one (see run_block); below it the data
# come from the caches and prefetching cost 12-26 % (update, Adam, x*y+y*z-z
# at 8-24 MB), above it saved 7-26 % (32-240 MB; Intel Xeon, one thread).
# Intel only (-1: off): on AMD Zen 4 its hardware prefetchers do better alone
# (1e7 elements: the update 1.55-1.73x the C loop with it, 1.00 without;
# x*y+y*z-z 1.15x, where(x>y, x, z) 2.5x the time without)
cdef pyet_intp PREFETCH_BYTES = (1 << 25) if pyet_cpu_intel() else -1
cdef pyet_intp PREFETCH_AHEAD = 2   # blocks (the last slice then still arrives a block early)
DEF MAX_PREFETCH = 16               # operand streams prefetched, at most
# a compute-bound instruction (rewrite.COMPUTE_BOUND) of a prefetching pass
# runs in pieces of this many elements, a slice of the prefetches after each
DEF PREFETCH_PIECE = 256
# a pass gathering leaves whose rows span GATHER_BLOCK_BYTES or more (their
# steps summed, times the items) runs in blocks of GATHER_BLOCK (execute_group)
cdef pyet_intp GATHER_BLOCK = 128
cdef pyet_intp GATHER_BLOCK_BYTES = 1 << 23
# a core's L1 data cache (AMD Zen 4, Intel before Ice Lake: 32 KiB)
cdef pyet_intp GATHER_L1_BYTES = 32768


def set_gather_block(pyet_intp n, pyet_intp min_bytes=1 << 23, pyet_intp l1_bytes=32768):
    """Passes gathering strided leaves over at least ``min_bytes``, whose
    blocks and lines exceed ``l1_bytes``, run in blocks of ``n`` elements (a
    tuning knob; ``n = 0`` turns it off)."""
    global GATHER_BLOCK, GATHER_BLOCK_BYTES, GATHER_L1_BYTES
    if n < 0:
        raise ValueError("the block length must be positive, or 0 (off)")
    GATHER_BLOCK = n if n else BLOCK
    GATHER_BLOCK_BYTES = min_bytes if n else (<pyet_intp>1) << 62
    GATHER_L1_BYTES = l1_bytes


# a compute-bound kernel on strided leaves runs in pieces of this many bytes
# of input, each gathered just before (run_block)
cdef pyet_intp GATHER_PIECE = 1024
# passes moving this many bytes or more (from memory) read reversed rows and
# 4-byte rows stepping 2 items where they lie too (sx_strided): copied into
# blocks an operand at a time, each copy waited on its own stream's misses
# (one thread, 1448^2, pyet/NumPy: float64 a*b + c reversed 1.92 -> 0.76,
# (a+b)*c 2.45 -> 0.89, float32 a*b + c on a[:, ::2] 1.59 -> 0.89; 724^2
# float64, 16 MiB, a+b+c 2.08 -> 1.13); below, the vectorized copies win
# (512^2 float64 (a+b)*c, 8 MiB: 1.18 copied, 1.39 in place); and in trees,
# 4-byte leaves as 8-byte ones (sx_leaves; 1448^2 float32 (a+b)*c on
# a[:, ::2] 1.70 -> 0.77, reversed 1.45 -> 1.05)
cdef pyet_intp SX_FAR_BYTES = 1 << 24


def set_sx_far(pyet_intp nbytes):
    """Read reversed and 4-byte step-2 rows in place in passes moving nbytes
    or more (tests use 0: always); returns the old setting."""
    global SX_FAR_BYTES
    old, SX_FAR_BYTES = SX_FAR_BYTES, nbytes
    return old


# a block's leaves whose rows step GATHER_FAR_BYTES or more (about an item a
# cache line) are gathered in one loop, their loads interleaved
# (pyet_gather_rows): loop by loop, each waited on its own misses (2^18
# float64 from memory: a*b + c on a[::7] 1.26-1.39x NumPy -> 1.09-1.19,
# a[::8] 1.23 -> 1.01, (a+b)*(c-a) a[::8] 0.98 -> 0.81; float32 a[::16] 1.35
# -> 1.01); at 40 bytes and less it lost (float64 a - 2.5*b a[::5] 1.03 ->
# 1.31, a[::4] 0.68 -> 1.14), where the copies of one row vectorize
cdef pyet_intp GATHER_FAR_BYTES = 48
# the block length of passes gathering such rows over GATHER_BLOCK_BYTES (execute_group)
cdef pyet_intp GATHER_FAR_BLOCK = 4096


def set_gather_far(pyet_intp nbytes, pyet_intp block=4096):
    """Gather a block's leaves whose rows step ``nbytes`` or more in one
    loop (0: one by one), and run passes gathering rows of under two items a
    cache line over set_gather_block's ``min_bytes`` in blocks of ``block``
    (0: the usual blocks); tuning knobs.  Returns the old (nbytes, block)."""
    global GATHER_FAR_BYTES, GATHER_FAR_BLOCK
    old = (GATHER_FAR_BYTES, GATHER_FAR_BLOCK)
    GATHER_FAR_BYTES = nbytes if nbytes > 0 else (<pyet_intp>1) << 62
    GATHER_FAR_BLOCK = block if block > 0 else BLOCK
    return old


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


def set_gather_piece(pyet_intp nbytes):
    """Bytes of input per gathered piece of a compute-bound kernel (a tuning
    knob; more than a block turns the pieces off)."""
    global GATHER_PIECE
    GATHER_PIECE = max(nbytes, 128)


def set_prefetch(pyet_intp min_bytes, pyet_intp ahead=2):
    """Prefetch in passes over more than ``min_bytes`` of operands, ``ahead``
    blocks ahead (a tuning knob; -1 turns it off)."""
    global PREFETCH_BYTES, PREFETCH_AHEAD
    PREFETCH_BYTES, PREFETCH_AHEAD = min_bytes, max(ahead, 1)


def get_prefetch():
    """(min_bytes, ahead), as set_prefetch takes them."""
    return PREFETCH_BYTES, PREFETCH_AHEAD


# rows shorter than this are packed several to a block (a block's fixed cost
# per row dominates below it); a user function gets blocks of PYFUNC_BLOCK
DEF SHORT_ROW = 128
DEF TILE_SKEW = 64  # bytes added to a tile buffer's row pitch (run_tiled)
DEF TILE_DIRECT_ROWS = 16  # at most this many rows of dst = A.T copied straight into dst
DEF TILE_MIN_ROW = 16      # rows this long and read across are tiled, not packed
# a tiled pass's blocks are this many BLOCKs long: its tile copies run on
# along the rows, where each new block restarted them (one thread, F-order
# into C: 4000^2 float64 a*b+c 49 -> 45 ms, 1448^2 float32 where(...) 5.1 ->
# 4.5 ms, 724^2 float64 -a 0.24 -> 0.22 ms; 512^2 the same)
DEF TILE_BLOCKS = 8
DEF PYFUNC_BLOCK = 65536
DEF NUMPY_LOOP_BLOCK = 8192


cdef bint PLAIN_PASSES = True
DEF MEMORY_BURST = 512  # bytes a register, float trees from memory (execute_group)


def set_plain_passes(bint on):
    """Run passes whose rows all lie where the kernels read them through
    run_plain (on) or run_block (a testing knob; on by default).  Returns the
    previous setting."""
    global PLAIN_PASSES
    before = PLAIN_PASSES
    PLAIN_PASSES = on
    return before


def set_block_size(pyet_intp n):
    """Set the number of elements per block (a tuning knob; default 512)."""
    global BLOCK
    if n < 16:
        raise ValueError(f"block size must be at least 16, got {n}")
    BLOCK = n


def get_block_size():
    return BLOCK


# tiles of whole rows read across (run_tiles_flat) of up to this many elements
cdef pyet_intp FLAT_TILE_MAX = 4096


def set_flat_tile_max(pyet_intp n):
    """Run tiles of rows read across (A.T into C) of up to n elements as one
    block each (a tuning knob; 0 turns it off).  Returns the previous value."""
    global FLAT_TILE_MAX
    before = FLAT_TILE_MAX
    FLAT_TILE_MAX = n
    return before


# row broadcasts packed in whole rows, gathered once (rows_with_broadcast)
cdef bint ROW_BROADCASTS_ONCE = True


def set_row_broadcasts_once(bint on):
    """Pack rows with a row broadcast (a bias), gathered once per chunk, or run
    them row by row as before (a knob for measuring and testing; default on)."""
    global ROW_BROADCASTS_ONCE
    ROW_BROADCASTS_ONCE = on


# every leaf a column along dst's rows: the rows' first elements computed, the
# rest of each row filled from them (fill_rows); every leaf broadcast along
# dst's leading dimensions: the first block computed, then copied (copy_blocks)
cdef bint COLUMNS_ONCE = True


def set_columns_once(bint on):
    """Compute a tree whose leaves are all broadcast along the destination's
    rows once a row and fill the rows, and one whose leaves are all broadcast
    along its outer dimensions once and copy the block, or run them element
    by element (a knob for measuring and testing; default on)."""
    global COLUMNS_ONCE
    COLUMNS_ONCE = on


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


# ------------------------------------------------------------------ programs

# NumPy's inner loops (PyUFuncGenericFunction), called without the GIL
ctypedef void (*np_loop)(char **, cnp.npy_intp *, cnp.npy_intp *, void *) noexcept nogil


cdef class Program:
    """A lowered tree: instructions plus what binding needs."""
    cdef pyet_instr *code
    cdef int ninstr, nregs, nleaves, nscalars, dt_out
    cdef int max_isz  # the widest item an instruction reads or writes
    cdef int ndst              # destinations written (several: a multi-output pass)
    cdef int *scalar_dt
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
    # dst = a fused op of leaves and scalars (s*x + y, x*y + z...) whose
    # kernel reads strided leaves where they lie (pyet_kernel_sx)
    cdef bint strided_fused
    # bit i: instruction i has a pyet_kernel_sx kernel (first 64)
    cdef uint64_t sx_instr
    # run_plain's operand table: per instruction, PYET_MAX_IN inputs then the
    # output, each a slot: registers, then scalars, then the pass's operand
    # rows (destinations, then leaves); plain: no instruction needs more
    # than pointers and a kernel call (no user function, NumPy loop,
    # instruction on scalars only)
    cdef short *slots
    cdef bint plain
    # float arithmetic only: every instruction float in and out, no where or cast
    cdef bint float_arith
    cdef readonly str text     # a readable listing, for debugging and tests

    def __dealloc__(self):
        free(self.code)
        free(self.scalar_dt)
        free(self.costly)
        free(self.cloop)
        free(self.cdata)
        free(self.slots)

    def __repr__(self):
        return self.text


cdef class _Lowering:
    cdef list code, scalar_dt, free_regs, pyfuncs
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

    cdef tuple operand(self, Expr e, int want, bint scalar_ok=True):
        """Lower e so that its value is available in dtype ``want``; a 0-d leaf
        becomes a scalar unless the consumer's kernel cannot take one."""
        cdef tuple src
        if e._op == OP_scalar or (scalar_ok and e._op == OP_leaf and one_value(e)):
            self.scalar_dt.append(want)
            self.nscalars += 1
            return (SRC_SCALAR, self.nscalars - 1)
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
        if fn is not None and e._cdt == e._dt and not any([is_scalar(a) for a in e._args]):
            # NumPy's ufunc on each block (ops.NUMPY_LOOPS, NUMPY_SIMD_LOOPS), in place
            srcs = [self.operand(a, e._cdt, False) for a in e._args]
            return self.emit(OP_pyfunc, e._cdt, e._dt, srcs, (fn, [e._cdt] * len(srcs)))
        if e._op == OP_where:
            # the where kernel reads its condition as an array
            srcs = [self.operand(e._args[0], DT_BOOL, False), self.operand(e._args[1], e._cdt),
                    self.operand(e._args[2], e._cdt)]
            return self.emit(OP_where, e._cdt, e._dt, srcs)
        if e._op == OP_power and POWER_F32_NUMPY and e._cdt == e._dt == DT_F32 \
                and e._args[1].shape and not is_scalar(e._args[0]):
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


cdef inline bint one_value(Expr e) noexcept:
    # a 0-d or constant leaf: lowered as a scalar, its value read when bound
    return not e.shape or is_constant(e)


cdef inline bint is_scalar(Expr e):
    # scalars, 0-d and constant leaves: one value, bound when the program runs
    return e._op == OP_scalar or (e._op == OP_leaf and one_value(e))


cdef bint _fits(object pattern, Expr e, tuple path, int dt, dict binding):
    if isinstance(pattern, str):
        if pattern in binding:
            return False
        if pattern[0] == "s":
            if not is_scalar(e):
                return False
        elif is_scalar(e) or e._dt != dt:
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
    _count_regs(lw)
    return _assemble(lw, 1, dst_dt)


cdef void _count_regs(_Lowering lw) except *:
    # the registers still used, once the root's writes dst (none: the pass
    # takes long blocks, see execute_group)
    lw.nregs = 1 + max([out for _, _, _, out, _ in lw.code if out >= 0]
                       + [i for *_, srcs in lw.code for k, i in srcs if k == SRC_REG],
                       default=-1)


def lower_group(list exprs, list dst_dts, list leaf_map, int nleaves):
    """Lower several trees to one program writing destination k with tree k,
    in order, block by block (a multi-output pass).  ``leaf_map`` gives each
    leaf occurrence's source: a shared leaf, or an earlier destination."""
    cdef _Lowering lw = _Lowering(leaf_map)
    _count_shared(lw, exprs)
    for k in range(len(exprs)):
        _write_root(lw, lw.operand(exprs[k], dst_dts[k]), k, dst_dts[k])
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
        return pos + 1 if not scalar_ok or not one_value(e) else pos, \
            not scalar_ok or not one_value(e)
    if e._op == OP_scalar:
        return pos, False
    for i in range(len(e._args)):
        pos, ok = _signatures(lw, <Expr>e._args[i], pos, not (
            e._op == OP_pyfunc or (e._op == OP_where and i == 0)
            or (e._op == OP_power and i == 1 and (<Expr>e._args[1]).shape)), sigs, counts)
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
    if p.code == NULL or p.scalar_dt == NULL or p.costly == NULL or p.cloop == NULL \
            or p.cdata == NULL or p.slots == NULL:
        raise MemoryError()
    p.nregs, p.nleaves, p.nscalars, p.dt_out = lw.nregs, lw.nleaves, lw.nscalars, dst_dt
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
    for i, (op, dt, dt_out, out, srcs) in enumerate(lw.code):
        p.code[i].op, p.code[i].dt, p.code[i].dt_out, p.code[i].out = op, dt, dt_out, out
        p.code[i].nin = len(srcs)
        p.code[i].sflags = 0
        for j, (kind, idx) in enumerate(srcs):
            p.code[i].src_kind[j] = kind
            p.code[i].src[j] = idx
            if kind == SRC_SCALAR:
                p.code[i].sflags |= 1 << j
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
    p.sx_instr = 0
    if STRIDED_FUSED:
        for i in range(min(p.ninstr, 64)):
            if p.code[i].dt == p.code[i].dt_out \
                    and pyet_kernel_sx(p.code[i].op, p.code[i].dt, 0, NULL, NULL, NULL):
                p.sx_instr |= (<uint64_t>1) << i
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
    # Program.slots, .plain and .float_arith
    cdef int i, j
    cdef short *sl
    # (the table's size is checked per pass, against its operands: execute_group)
    p.plain = not p.np_loops and not p.has_pyfunc and not p.user_pyfunc and not p.copies_leaf
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


# ---------------------------------------------------------------- binding

cdef void collect(Expr e, list leaves, list scalars, list pyfuncs, bint scalar_ok=True):
    # pre-order, left to right: the order lowering numbers leaves, scalars
    # and user functions (none of which is part of a program); scalar_ok as
    # lowering's operand() has it
    cdef Py_ssize_t i
    if e._op == OP_leaf:
        if not scalar_ok or not one_value(e):
            leaves.append((<Tensor>e)._array)
        elif not e.shape:  # a 0-d array: its value now, in the program's dtype (store_scalar)
            scalars.append((<Tensor>e)._array)
        else:  # a constant leaf: its one value
            scalars.append(constant_value(e))
    elif e._op == OP_scalar:
        scalars.append((<Scalar>e)._value)
    else:
        if e._op == OP_pyfunc and not (<PyFunc>e)._in_pass:
            pyfuncs.append((<PyFunc>e)._fn)
        for i in range(len(e._args)):
            collect(<Expr>e._args[i], leaves, scalars, pyfuncs,
                    not (e._op == OP_pyfunc or (e._op == OP_where and i == 0)
                         or (e._op == OP_power and i == 1 and (<Expr>e._args[1]).shape)))


cdef int store_scalar(char *slot, object v, int dt) except -1:
    cdef cnp.ndarray a
    if isinstance(v, cnp.ndarray):  # a 0-d leaf: NumPy's cast to the program's dtype
        a = <cnp.ndarray>v
        if cnp.PyArray_ISNOTSWAPPED(a) and array_dtype_code(a) == dt:
            # already the program's dtype: its bytes, no cast (astype costs
            # ~0.4 us); a bool's byte as it is, as an array leaf's: the bool
            # kernels read any byte but 0 as true, copies keep it (NumPy's)
            memcpy(slot, cnp.PyArray_DATA(a), cnp.PyArray_ITEMSIZE(a))
            return 0
        v = a.astype(DTYPES[dt])[()]
    if dt == DT_F64:
        (<double *>slot)[0] = v
    elif dt == DT_F32:
        (<float *>slot)[0] = <float>(<double>v)
    elif dt == DT_I64:
        (<int64_t *>slot)[0] = v
    elif dt == DT_I32:
        if not -2147483648 <= v <= 2147483647:
            raise OverflowError(f"Python integer {v} out of bounds for int32")
        (<int32_t *>slot)[0] = v
    else:
        (<unsigned char *>slot)[0] = 1 if v else 0
    return 0


cdef inline void extent(cnp.ndarray a, uintptr_t *lo, uintptr_t *hi):
    cdef uintptr_t p = <uintptr_t>cnp.PyArray_DATA(a)
    cdef Py_ssize_t d, s
    lo[0] = hi[0] = p
    for d in range(cnp.PyArray_NDIM(a)):
        s = cnp.PyArray_STRIDES(a)[d] * (cnp.PyArray_DIMS(a)[d] - 1)
        if s < 0:
            lo[0] += s
        else:
            hi[0] += s
    hi[0] += cnp.PyArray_ITEMSIZE(a)


cdef object prepare_leaf(cnp.ndarray a, cnp.ndarray dst, pyet_intp *bstrides):
    """The leaf to read (a copy when it is misaligned or overlaps dst other
    than element for element), and its strides broadcast to dst's shape."""
    cdef int nd = cnp.PyArray_NDIM(dst), lnd = cnp.PyArray_NDIM(a), d, ld
    cdef int itemsize = cnp.PyArray_ITEMSIZE(a)
    cdef bint ok = (<uintptr_t>cnp.PyArray_DATA(a)) % itemsize == 0
    for d in range(lnd):
        if cnp.PyArray_STRIDES(a)[d] % itemsize:
            ok = False
    if not ok:
        a = np.array(a, copy=True)
    for d in range(nd):
        ld = d - (nd - lnd)
        if ld < 0 or cnp.PyArray_DIMS(a)[ld] == 1:
            bstrides[d] = 0
        else:
            bstrides[d] = cnp.PyArray_STRIDES(a)[ld]
    cdef uintptr_t alo, ahi, dlo, dhi
    if cnp.PyArray_SIZE(a) == 0:
        return a
    extent(a, &alo, &ahi)
    extent(dst, &dlo, &dhi)
    if alo >= dhi or dlo >= ahi:
        return a
    # overlapping memory: in place is safe only element for element
    cdef bint same = (cnp.PyArray_DATA(a) == cnp.PyArray_DATA(dst)
                      and itemsize == cnp.PyArray_ITEMSIZE(dst))
    for d in range(nd):
        if cnp.PyArray_DIMS(dst)[d] > 1 and bstrides[d] != cnp.PyArray_STRIDES(dst)[d]:
            same = False
    if same:
        return a
    a = np.array(a, copy=True)
    return prepare_leaf(a, dst, bstrides)


cdef bint _bounds_overlap(cnp.ndarray a, cnp.ndarray b) noexcept:
    # the memory spans of a and b intersect (they may share elements)
    cdef uintptr_t alo, ahi, blo, bhi
    if cnp.PyArray_SIZE(a) == 0 or cnp.PyArray_SIZE(b) == 0:
        return False
    extent(a, &alo, &ahi)
    extent(b, &blo, &bhi)
    return alo < bhi and blo < ahi


# ------------------------------------------------------------------ layout

cdef inline pyet_intp iabs(pyet_intp x) noexcept nogil:
    return x if x >= 0 else -x


cdef bint outer_of(int nops, pyet_intp *strides, int t, int u) noexcept nogil:
    # NumPy's iterator's rule: dimension t goes outside u when some operand
    # steps further along t than along u and none steps less (operands
    # broadcast along either say nothing); ties keep C order
    cdef int k
    cdef bint swap = False
    cdef pyet_intp a, b
    for k in range(nops):
        a = strides[k * MAXD + t]
        b = strides[k * MAXD + u]
        if a != 0 and b != 0:
            if iabs(a) <= iabs(b):
                return False
            swap = True
    return swap


cdef int merge_dims(int ndim, pyet_intp *shape, int nops, pyet_intp *strides,
                    pyet_intp *oshape, pyet_intp *ostrides, int key_op,
                    char **base) noexcept nogil:
    """Drop size-1 dimensions, order the rest (largest stride outer, like
    NumPy's iterator), and merge dimensions that are contiguous in every
    operand.  strides is [nops][MAXD]; operand key_op's strides order the
    dimensions, or with key_op < 0 all operands' as NumPy's iterator does,
    after flipping the dimensions every operand walks backwards (base
    pointers moved to their other end).  Returns the new ndim (at least 1),
    or 0 when the destination is empty."""
    cdef pyet_intp *key = strides + (key_op if key_op > 0 else 0) * MAXD
    cdef int dims[MAXD]
    cdef int n = 0, d, i, j, k, t
    cdef pyet_intp a, b
    cdef bint flip
    for d in range(ndim):
        if shape[d] == 0:
            return 0
        if shape[d] != 1:
            dims[n] = d
            n += 1
    if key_op < 0:
        for i in range(n):
            d = dims[i]
            flip = strides[d] < 0
            for k in range(1, nops):
                if strides[k * MAXD + d] > 0:
                    flip = False
            if flip:
                for k in range(nops):
                    base[k] += strides[k * MAXD + d] * (shape[d] - 1)
                    strides[k * MAXD + d] = -strides[k * MAXD + d]
        for i in range(1, n):  # insertion sort, as NumPy's iterator
            t = dims[i]
            j = i - 1
            while j >= 0 and outer_of(nops, strides, t, dims[j]):
                dims[j + 1] = dims[j]
                j -= 1
            dims[j + 1] = t
    else:
        # stable insertion sort by |key stride|, descending
        for i in range(1, n):
            t = dims[i]
            a = key[t] if key[t] >= 0 else -key[t]
            j = i - 1
            while j >= 0:
                b = key[dims[j]] if key[dims[j]] >= 0 else -key[dims[j]]
                if b >= a:
                    break
                dims[j + 1] = dims[j]
                j -= 1
            dims[j + 1] = t
    cdef int m = 0
    cdef bint contiguous
    for i in range(n):
        d = dims[i]
        if m > 0:
            # merge into the previous (outer) dimension when it steps exactly
            # over this one in every operand
            contiguous = True
            for k in range(nops):
                if ostrides[k * MAXD + m - 1] != strides[k * MAXD + d] * shape[d]:
                    contiguous = False
                    break
            if contiguous:
                oshape[m - 1] *= shape[d]
                for k in range(nops):
                    ostrides[k * MAXD + m - 1] = strides[k * MAXD + d]
                continue
        oshape[m] = shape[d]
        for k in range(nops):
            ostrides[k * MAXD + m] = strides[k * MAXD + d]
        m += 1
    if m == 0:
        oshape[0] = 1
        for k in range(nops):
            ostrides[k * MAXD] = 0
        m = 1
    return m


# ------------------------------------------------------------------ running

cdef struct Run:
    int nd, nops, ndst
    pyet_intp shape[MAXD]
    pyet_intp *strides      # [nops][MAXD]
    char **base             # [nops]: the ndst destinations, then leaves
    int *itemsize           # [nops]
    int *gather             # [nops]: gather block index when the row is strided, else -1
    char *dup               # [nops]: a leaf whose memory an earlier leaf's block (or tile) holds
    char *scalars           # 8 bytes per scalar
    char *scratch           # per thread: the program's registers, then gather blocks
    pyet_intp scratch_bytes  # per thread
    pyet_intp block, nblocks  # block length; blocks per row
    pyet_intp nitems          # rows * nblocks: the work threads split
    int red                   # RED_*: fold each block into dst instead of storing it
    pyet_intp red_stride      # bytes between the threads' private accumulators
    pyet_intp red_comp        # bytes from an accumulator to its compensation (0: none)
    pyet_intp red_units       # >0: the threads share one set of accumulators; a chunk is
    pyet_intp unit_items      # whole units (unit_items items each) none of the others touch
    void *prog              # Program (borrowed; needed only for pyfuncs)
    void *state             # list collecting a pyfunc's exception
    pyet_intp nchunks         # the work items split into this many chunks (threads claim them)
    int fpflags               # floating-point errors the pass raised (threads.h PYET_FP_*)
    bint packed             # blocks run across rows (short rows, user functions)
    int gathers             # operands gathered into blocks
    int nonce               # packed: gather blocks 0..nonce-1, row broadcasts, gathered once
    pyet_intp total         # elements (packed: the flat range the blocks cut)
    int early               # RED_ALL/RED_ANY into one accumulator: stop once decided
    int stop                # set by the thread that decided (others stop too)
    pyet_intp tile, nrows   # tiled: rows per tile (0: rows one by one); rows
    pyet_intp tile_lead     # run_tiled: tile t starts at row t * tile - tile_lead (tile_lead())
    pyet_intp tilebuf       # tiled: offset in the scratch of the leaves' tile buffers
    pyet_intp tpp           # flat tiles (run_tiles_flat): tiles per plane; 0: run_tiled
    bint from_memory        # the pass moves SX_FAR_BYTES or more (sx_strided, tile prefetches)
    bint dtile              # flat tiles: the destination read across rows, written a tile at a time
    int ntiled              # leaves copied a tile at a time (their buffers, then dst's)
    int npf                 # operands whose next block is prefetched (distinct memory)
    bint direct             # strided leaves read where they lie (Program.strided_kernel, _fused)
    bint plain              # run_plain: every row read (written) where it lies, Program.plain
    uint64_t insx           # bit i: instruction i reads a strided leaf where it lies
    int dst_reg             # Program.dst_reg kept in dst's block (run_block); -1: none
    int pfk[MAX_PREFETCH]


cdef int TYPENUM[5]
for _i in range(DT_COUNT):
    TYPENUM[_i] = DTYPES[_i].num


cdef inline void call_np_loop(Program prog, int i, pyet_instr *ins, pyet_intp n, void *out,
                              void **inp) noexcept nogil:
    # an op's NumPy loop called straight (Program.cloop): contiguous blocks in
    # and out, as NumPy's ufunc hands them to it; the flags it raises are the
    # pass's, as a kernel's
    cdef char *args[PYET_MAX_IN + 1]
    cdef cnp.npy_intp steps[PYET_MAX_IN + 1]
    cdef cnp.npy_intp dim = n
    cdef int j
    for j in range(ins.nin):
        args[j] = <char *>inp[j]
        steps[j] = pyet_itemsize[ins.dt]
    args[ins.nin] = <char *>out
    steps[ins.nin] = pyet_itemsize[ins.dt_out]
    prog.cloop[i](args, &dim, steps, prog.cdata[i])


cdef dict _C_LOOPS = {}
cdef bint C_LOOPS_ON = True
cdef bint DST_REGISTER = True
cdef bint UFUNCS_IN_PASS = True


def set_ufuncs_in_pass(bint on):
    """Run pyet.F of NumPy's own ufuncs in the pass as their C loops (on by
    default; PyFunc._in_pass) or as user functions, hoisted or called on
    each block (a testing knob): nodes built later take it.  Returns the
    previous setting."""
    global UFUNCS_IN_PASS
    before = UFUNCS_IN_PASS
    UFUNCS_IN_PASS = on
    _forget_in_pass()
    return before


cdef void _forget_in_pass() noexcept:
    # the F slots' in_pass answers, asked again (a knob changed them)
    cdef int h
    for h in range(N_FN_SLOTS):
        _FN_SLOTS[h].in_pass = -1


def set_dst_register(bint on):
    """Keep the last NumPy loop's register in dst's block (Run.dst_reg; on by
    default) or in the scratch (a testing knob).  Returns the previous
    setting."""
    global DST_REGISTER
    before = DST_REGISTER
    DST_REGISTER = on
    return before


def set_numpy_c_loops(bint on):
    """Call an op's NumPy loop (ops.NUMPY_LOOPS) straight in C (on) or as its
    ufunc from Python (a testing knob; on by default); trees lowered later take
    it (the program cache is dropped).  Returns the previous setting."""
    global C_LOOPS_ON, _PROGRAMS
    before = C_LOOPS_ON
    C_LOOPS_ON = on
    _PROGRAMS = {}
    _forget_in_pass()
    return before


# _c_loop_index's and _ufunc_in_place's answers for recent (function,
# operand dtypes, result dtype), direct-mapped in C in front of their dicts:
# a tuple key made, hashed and compared in each was ~1.2k instructions of a
# hoisted F's call.  A slot keeps its function alive (_FN_SLOT_REFS), so the
# address it holds names that function alone.
cdef struct fn_slot:
    void *fn
    unsigned long long packed    # result dtype, operand count, operand dtypes
    signed char in_place         # -1: not asked yet
    int loop                     # -2: not asked yet
    signed char result           # pyet.F's result dtype (asked as FN_RESULT); -1: not yet
    signed char in_pass          # F's node runs fn's C loop in the pass (FN_RESULT); -1: not yet
cdef enum:
    N_FN_SLOTS = 64  # (_fn_slot's hash keeps its top 6 bits)
cdef fn_slot _FN_SLOTS[N_FN_SLOTS]
cdef int FN_RESULT = 8  # (the result dtype's question: no dtype code)
cdef list _FN_SLOT_REFS = [None] * N_FN_SLOTS


cdef fn_slot *_fn_slot(object fn, object dts, int dt_out) except? NULL:
    # fn's slot for these dtypes, emptied of another's answers first (NULL:
    # more operands than the packing holds, asked of the dicts alone)
    cdef Py_ssize_t i, n = len(dts)
    if n > 15:
        return NULL
    cdef unsigned long long packed = <unsigned long long>dt_out | (<unsigned long long>n << 4)
    for i in range(n):
        packed |= <unsigned long long>(<int>dts[i]) << (8 + 3 * i)
    cdef int h = <int>((((<uintptr_t><void *>fn) >> 4) ^ packed) * 0x9E3779B97F4A7C15ULL >> 58)
    cdef fn_slot *slot = &_FN_SLOTS[h]
    if slot.fn != <void *>fn or slot.packed != packed:
        _FN_SLOT_REFS[h] = fn
        slot.fn, slot.packed, slot.in_place, slot.loop = <void *>fn, packed, -1, -2
        slot.result = slot.in_pass = -1
    return slot


cdef int _c_loop_index(object fn, object dts, int dt_out) except -2:
    """The index in ufunc fn's loop table of the inner loop NumPy runs for
    these dtypes, when calling it straight gives fn's values (probed once per
    ufunc and dtypes); -1 when there is none (then fn is called)."""
    if not C_LOOPS_ON:
        return -1
    cdef fn_slot *slot = _fn_slot(fn, dts, dt_out)
    if slot != NULL and slot.loop != -2:
        return slot.loop
    key = (fn, tuple(dts), dt_out)
    k = _C_LOOPS.get(key)
    if k is None:
        k = _find_c_loop(fn, dts, dt_out)
        _C_LOOPS[key] = k
    slot = _fn_slot(fn, dts, dt_out)  # (again: the probe may have taken it)
    if slot != NULL:
        slot.loop = k
    return k


cdef int _find_c_loop(object fn, object dts, int dt_out) except -2:
    cdef cnp.ufunc uf
    cdef int k, j, nargs, flags
    cdef char *args[PYET_MAX_IN + 1]
    cdef cnp.npy_intp steps[PYET_MAX_IN + 1]
    cdef cnp.npy_intp dim
    if type(fn) is not np.ufunc or not _ufunc_in_place(fn, dts, dt_out) \
            or len(dts) > PYET_MAX_IN:
        return -1
    uf = <cnp.ufunc>fn
    nargs = uf.nargs
    want = [TYPENUM[<int>d] for d in dts] + [TYPENUM[dt_out]]
    for k in range(uf.ntypes):
        if all(uf.types[k * nargs + j] == want[j] for j in range(nargs)):
            break
    else:
        return -1
    if uf.functions[k] == NULL:
        return -1
    # the probe: ordinary values, edges and specials (both signs), in every
    # operand's position; NumPy's own call must give the same bits.  The
    # flags it raises (in the casts, in NumPy's call) are nobody's
    flags = pyet_fs_get()
    base = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 0.25, 1e-3,
                     0.999, 1.001, 10.0, 100.0, 1e30, -1e30, 1e-30, 1e-40, np.inf, -np.inf,
                     np.nan, 7.5, -7.5, 0.1, -0.9, 0.9, 40.0, -40.0, 1e5, 123.456, 3.0])
    rng = np.random.default_rng(12345)
    vals = np.concatenate([base, rng.uniform(-4, 4, 300), rng.uniform(0, 1, 300),
                           np.exp(rng.uniform(-80, 80, 300))])
    try:
        with np.errstate(all="ignore"):
            ins = [np.ascontiguousarray(np.roll(vals, 37 * j).astype(DTYPES[<int>dts[j]]))
                   for j in range(len(dts))]
            expect = fn(*ins)
            got = np.empty_like(expect)
            for j in range(len(dts)):
                args[j] = <char *>cnp.PyArray_DATA(<cnp.ndarray>ins[j])
                steps[j] = cnp.PyArray_ITEMSIZE(<cnp.ndarray>ins[j])
            args[len(dts)] = <char *>cnp.PyArray_DATA(<cnp.ndarray>got)
            steps[len(dts)] = cnp.PyArray_ITEMSIZE(<cnp.ndarray>got)
            dim = got.shape[0]
            (<np_loop>uf.functions[k])(args, &dim, steps, uf.data[k])
    finally:
        pyet_fs_set(flags)
    if got.dtype != expect.dtype or got.tobytes() != expect.tobytes():
        return -1
    return k


cdef int call_pyfunc(Run *r, int i, pyet_intp n, void *out, void **inp) noexcept nogil:
    # F(fn, ...) nodes: fn gets read-only arrays of its own (copies of the
    # operand blocks: a reference it keeps never sees scratch memory reused)
    cdef cnp.npy_intp dims[1]
    cdef int dt_out, rc
    # NumPy clears the flags before each ufunc loop and reports its own (fn's
    # errors are NumPy's to report, once): the pass's flags so far are kept
    cdef int flags = pyet_fs_get()
    dims[0] = n
    rc = _call_pyfunc(r, i, n, out, inp, dims)
    if rc == 1:  # a ufunc with its errors ignored: what it raised is the pass's
        pyet_fs_set(flags | pyet_fs_get())
        return 0
    pyet_fs_set(flags)
    return rc


cdef object _operand_block(Program prog, int i, int j, int dt, void *p, cnp.npy_intp *dims):
    # operand j of instruction i as a read-only array of the block's length;
    # a scalar slot holds one value (8 bytes): read with step 0, never as a block
    cdef cnp.npy_intp one = 1
    if prog.code[i].sflags & (1 << j):
        return broadcast_view(cnp.PyArray_SimpleNewFromData(1, &one, TYPENUM[dt], p), (dims[0],))
    view = cnp.PyArray_SimpleNewFromData(1, dims, TYPENUM[dt], p)
    view.flags.writeable = False
    return view


cdef int _call_pyfunc(Run *r, int i, pyet_intp n, void *out, void **inp,
                      cnp.npy_intp *dims) noexcept nogil:
    cdef int dt_out
    with gil:
        try:
            prog = <Program>r.prog
            errors, fns, quiet = <tuple>r.state
            dt_out = prog.code[i].dt_out
            dts = prog.pyfuncs[i][1]
            fn = _pyfunc_at(prog, i, fns)
            if _ufunc_in_place(fn, dts, dt_out):
                # a NumPy ufunc keeps no reference: it reads the blocks where
                # they are and writes its loop's result straight into out; its
                # errors ignored, its flags are reported with the pass's (it
                # cannot raise midway, so the pass may write its destination)
                args = [_operand_block(prog, i, j, <int>dts[j], inp[j], dims)
                        for j in range(len(dts))]
                res = cnp.PyArray_SimpleNewFromData(1, dims, TYPENUM[dt_out], out)
                if quiet:
                    fn(*args, out=res)
                else:
                    with np.errstate(all="ignore"):
                        fn(*args, out=res)
                return 1
            args = []
            for j in range(len(dts)):
                arg = _operand_block(prog, i, j, <int>dts[j], inp[j], dims).copy()
                arg.flags.writeable = False
                args.append(arg)
            res = fn(*args)
            memcpy(out, cnp.PyArray_DATA(_pyfunc_result(fn, res, n, dt_out)),
                   n * pyet_itemsize[dt_out])
            return 0
        except BaseException as exc:
            (<list>errors).append(exc)
            return -1


# (ufunc, dtype code) -> (loop, data) as integers, or None: _direct_loop's answers
cdef dict _DIRECT_LOOPS = {}


cdef object _ufunc_loop(object fn, int nin, int dt, int dt_out):
    # (loop, data) as integers: ufunc fn's loop for nin operands of dtype dt
    # and a result of dt_out, from its loop table; None when it has none
    cdef cnp.ufunc uf
    cdef int k, j, t
    if type(fn) is not np.ufunc or (<object>fn).nin != nin or (<object>fn).nout != 1:
        return None
    uf = <cnp.ufunc>fn
    for k in range(uf.ntypes):
        for j in range(nin + 1):
            t = TYPENUM[dt_out] if j == nin else TYPENUM[dt]
            if uf.types[(nin + 1) * k + j] != t:
                break
        else:
            if uf.functions[k] == NULL:
                return None
            return (<uintptr_t>uf.functions[k], <uintptr_t>uf.data[k])
    return None


cdef object _direct_loop(object fn, int dt):
    """The C loop (and its data) of a unary or binary float ufunc fn for dtype dt
    from the ufunc's loop table, when it gives the ufunc's own bits on a probe
    of values (its domain's edges, specials, odd lengths); None otherwise
    (the ufunc is called on each block then).  A pass calls it on each
    block without the GIL: a ufunc call per block, with its views and
    np.errstate, cost ~3 us (log10 of 64 x 64 float32: 4.1 us, NumPy 1.4)."""
    key = (fn, dt)
    if key in _DIRECT_LOOPS:
        return _DIRECT_LOOPS[key]
    res = None
    if (dt == DT_F32 or dt == DT_F64) and type(fn) is np.ufunc:
        res = _ufunc_loop(fn, (<object>fn).nin, dt, dt)
        if res is not None and not _same_bits(fn, dt, res):
            res = None
    _DIRECT_LOOPS[key] = res
    return res


# ops whose NumPy C loop a one-op pass calls on each row where an operand's
# rows step 3 items or more, 2 for 8-byte operands and results
# (Program.whole_far): NumPy's loops read them in place, where pyet's gathers
# cost 1.2-1.5x NumPy at 4096-32768 elements (a+b float64 step 3, abs,
# maximum; 1.05-1.13x at 2^18); other step-2 gathers vectorize (pyet's float32
# a - b on a[::2] 0.7x NumPy, float64 a < b 0.63x).  Only where the loop gives pyet's
# kernel's bits on a probe (_kernel_bits), so values never depend on the layout.
WHOLE_LOOP_UFUNCS = {OPCODES[name]: getattr(np, name) for name in (
    "add", "subtract", "multiply", "divide", "absolute", "negative", "maximum", "minimum",
    "square", "floor", "ceil", "trunc", "rint", "reciprocal", "positive", "copysign",
    "isnan", "isinf", "isfinite",
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "less", "less_equal", "greater",
    "greater_equal", "equal", "not_equal")}
cdef dict _KERNEL_LOOPS = {}
# the layouts (input step, output step, in items) a loop is probed on: the
# strided inputs it is called for, then strided destination rows (NumPy 2.4's
# AVX-512 isnan, isinf, isfinite loops leave bool rows stepping 2 or
# backwards unwritten: such destinations take pyet's blocks)
_READ_LAYOUTS = ((1, 1), (3, 1), (-1, 1))
_WRITE_LAYOUTS = ((1, 2), (1, -1))
# of those, the ones whose NumPy float loops read rows stepping 2 items in SIMD
# (strided loads): such rows take the loop too, where the others keep pyet's
# blocks (float32 a[::2] at 2^18: abs, square, floor, ceil, trunc, rint 1.2-1.3x
# the loop's time, isnan, isinf, isfinite 1.39; negative's loop is scalar there:
# pyet's blocks 0.47x it)
cdef set NEAR_LOOP_OPS = {OPCODES[name] for name in (
    "absolute", "square", "floor", "ceil", "trunc", "rint", "isnan", "isinf", "isfinite")}
# Those loops on contiguous rows too, on one thread, where pyet's memory-bound
# loops stay at 256 bits (not Intel: kernels.h pyet_kernel_wide512): on AMD
# Zen 4 NumPy's AVX-512 loops took 0.85-0.93x the time of pyet's blocks (abs,
# ~, maximum, add, float32/float64/int32, 2^18-2^21 elements); same bits (the
# probe above).  Rows shorter than CONTIG_ROW_MIN keep the blocks (a loop call
# per row).
cdef bint CONTIG_LOOPS = not pyet_kernel_wide512()
cdef pyet_intp CONTIG_ROW_MIN = 1024
# a pass moving fewer bytes than this takes such a loop on one thread even
# where threads are allowed (their blocks gained nothing below it here; at 2^21
# float64 elements, 32 MiB, two threads' blocks took 0.72-0.79x the loop's time)
DEF LOOP_THREADS_BYTES = 1 << 24
# except these, whose contiguous blocks beat NumPy's loop (reciprocal: 0.55x
# its time; strided, step 3 and more, its loop wins: float32 step 7 1.26 -> 1.0)
cdef set CONTIG_BLOCKS_OPS = {OPCODES["reciprocal"]}


def set_contiguous_loops(bint on):
    """Let one-op exact passes on contiguous rows run NumPy's C loop (or
    pyet's blocks: tests compare the two); returns the old setting."""
    global CONTIG_LOOPS
    old, CONTIG_LOOPS = CONTIG_LOOPS, on
    return old


cdef tuple _kernel_loop(int op, int dt, int dt_out):
    """(NumPy's C loop for pyet op (WHOLE_LOOP_UFUNCS) from dt to dt_out, or
    None; whether it may write strided destination rows): the loop when it
    gives pyet's kernel's bits on a probe of _READ_LAYOUTS (and of
    _WRITE_LAYOUTS for the second)."""
    key = (op, dt, dt_out)
    if key in _KERNEL_LOOPS:
        return _KERNEL_LOOPS[key]
    res, any_dst = None, False
    fn = WHOLE_LOOP_UFUNCS.get(op)
    if fn is not None and dt != DT_BOOL and HAS_KERNEL[op][dt]:
        res = _ufunc_loop(fn, (<object>fn).nin, dt, dt_out)
        if res is not None and not _kernel_bits(op, dt, dt_out, (<object>fn).nin, res,
                                                _READ_LAYOUTS):
            res = None
        any_dst = res is not None and _kernel_bits(op, dt, dt_out, (<object>fn).nin, res,
                                                   _WRITE_LAYOUTS)
    _KERNEL_LOOPS[key] = (res, any_dst)
    return res, any_dst


cdef bint _kernel_bits(int op, int dt, int dt_out, int nin, tuple loop,
                       tuple layouts) except -1:
    # the loop's results, for each (istep, ostep) of layouts its inputs read
    # every istep items and its output written every ostep, against pyet's
    # kernel's on a probe (floats: specials, signed zeros, NaN; integers:
    # their extremes), bit for bit
    cdef int flags = pyet_fs_get(), j, istep, ostep
    cdef char *args[3]
    cdef void *inp[3]
    cdef cnp.npy_intp dims[1]
    cdef cnp.npy_intp steps[3]
    dtype = DTYPES[dt]
    rng = np.random.default_rng(0)
    if dtype.kind == "f":
        big = float(np.finfo(dtype).max)
        mags = np.concatenate([np.geomspace(1e-30, 1e30, 61), rng.random(60) * 10])
        x = np.concatenate([mags, -mags, [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0,
                                          -1.0, big, -big]]).astype(dtype)
        pairs = [(x, rng.permutation(x)), (x, x), (x, -x), (x, x[::-1].copy())]
    else:
        info = np.iinfo(dtype)
        x = np.concatenate([rng.integers(info.min, info.max, 200, dtype=dtype, endpoint=True),
                            np.array([info.min, info.max, 0, -1, 1, info.min + 1], dtype)])
        pairs = [(x, rng.permutation(x)), (x, x), (x, x[::-1].copy())]
    for (istep, ostep), pair in itertools.product(layouts, pairs):
        rows = np.full(x.size * abs(ostep) * pyet_itemsize[dt_out], 0x55, np.uint8).view(
            DTYPES[dt_out])  # (no value a loop writes: an item left unwritten shows)
        got, want = rows[::ostep], np.empty(x.size, DTYPES[dt_out])
        spread = [np.zeros(x.size * abs(istep), dtype)[::istep] for j in range(nin)]
        for j in range(nin):
            spread[j][...] = pair[j]
            args[j] = <char *>cnp.PyArray_DATA(<cnp.ndarray>spread[j])
            inp[j] = cnp.PyArray_DATA(<cnp.ndarray>pair[j])
            steps[j] = istep * pyet_itemsize[dt]
        args[nin] = <char *>cnp.PyArray_DATA(<cnp.ndarray>got)
        steps[nin] = ostep * pyet_itemsize[dt_out]
        dims[0] = x.size
        (<np_loop><uintptr_t>loop[0])(args, dims, steps, <void *><uintptr_t>loop[1])
        got = got.copy()
        pyet_kernel(op, dt, 0, x.size, cnp.PyArray_DATA(<cnp.ndarray>want), inp)
        pyet_fs_set(flags)
        if dtype.kind == "f":  # which of two NaNs an op returns is the compiler's
            nan = np.isnan(got)
            if not np.array_equal(nan, np.isnan(want)):
                return False
            got, want = got[~nan], want[~nan]
        if got.tobytes() != want.tobytes():
            return False
    return True


cdef bint _same_bits(object fn, int dt, tuple loop) except -1:
    # the loop's results on a probe, bit for bit, against the ufunc's, on
    # contiguous operands and on steps of 3 and -2
    cdef int flags = pyet_fs_get(), nin = (<object>fn).nin, j
    cdef char *args[3]
    cdef cnp.npy_intp dims[1]
    cdef cnp.npy_intp steps[3]
    cdef cnp.ndarray a
    dtype = DTYPES[dt]
    big = float(np.finfo(dtype).max)
    mags = np.concatenate([np.geomspace(1e-30, 1e30, 97), np.linspace(0, 10, 131)])
    x = np.concatenate([mags, -mags, [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5,
                                      -0.5, 0.999, 1.001, 89.0, 710.0, big, -big]]).astype(dtype)
    xs = [x, np.random.default_rng(0).permutation(x)][:nin]
    uint = np.uint32 if dt == DT_F32 else np.uint64
    for step in (1, 3, -2):
        ops = [np.repeat(v, abs(step))[::step] for v in xs] + [np.repeat(x, abs(step))[::step]]
        with np.errstate(all="ignore"):
            want = fn(*ops[:nin])
        for j in range(nin + 1):
            a = <cnp.ndarray>ops[j]
            args[j] = <char *>cnp.PyArray_DATA(a)
            steps[j] = cnp.PyArray_STRIDES(a)[0]
        dims[0] = x.size
        (<np_loop><uintptr_t>loop[0])(args, dims, steps, <void *><uintptr_t>loop[1])
        pyet_fs_set(flags)
        got = ops[nin]
        if want.dtype != got.dtype or not (want.view(uint) == got.view(uint)).all():
            return False
    return True


cdef dict _UFUNC_IN_PLACE = {}


cdef bint _ufunc_in_place(object fn, object dts, int dt_out) except -1:
    # fn a ufunc whose loop for these operand dtypes gives exactly dt_out
    # (once per ufunc and dtypes); other functions get copies of the blocks
    if type(fn) is not np.ufunc:
        return False
    cdef fn_slot *slot = _fn_slot(fn, dts, dt_out)
    if slot != NULL and slot.in_place >= 0:
        return slot.in_place
    key = (fn, tuple(dts), dt_out)
    ok = _UFUNC_IN_PLACE.get(key)
    if ok is None:
        ok = False
        if (<object>fn).nout == 1 and (<object>fn).nin == len(dts):
            try:
                ok = (<object>fn).resolve_dtypes(
                    tuple([DTYPES[<int>d] for d in dts]) + (None,))[len(dts)] == DTYPES[dt_out]
            except Exception:
                ok = False
        if len(_UFUNC_IN_PLACE) >= 256:
            _UFUNC_IN_PLACE.clear()
        _UFUNC_IN_PLACE[key] = ok
    slot = _fn_slot(fn, dts, dt_out)
    if slot != NULL:
        slot.in_place = ok
    return ok


cdef inline object _pyfunc_at(Program prog, int i, list fns):
    # instruction i's function: a user function's slot among the bound ones,
    # or a NumPy ufunc the op itself lowers to (ops.NUMPY_LOOPS)
    fn_or_slot = prog.pyfuncs[i][0]
    return fns[fn_or_slot] if type(fn_or_slot) is int else fn_or_slot


cdef bint ufuncs_only(Program prog, list fns) except -1:
    """Whether every user function of prog is a ufunc run in place (errors
    ignored, flags kept): then the pass cannot raise midway."""
    cdef int i
    for i in range(prog.ninstr):
        if prog.pyfuncs[i] is not None:
            if not _ufunc_in_place(_pyfunc_at(prog, i, fns), prog.pyfuncs[i][1],
                                   prog.code[i].dt_out):
                return False
    return True


cdef object _pyfunc_result(object fn, object res, pyet_intp n, int dt):
    # every block's result: an array of the block's shape and the node's kind
    name = getattr(fn, "__name__", repr(fn))
    if res is None:
        raise TypeError(f"pyet.F: {name} returned None; it must return an array of "
                        f"shape ({n},)")
    res = np.asarray(res)
    if res.shape != (n,):
        raise ValueError(f"pyet.F: {name} returned shape {fmt_shape(res.shape)} for "
                         f"operands of shape ({n},); it must work elementwise")
    if res.dtype.kind != DTYPES[dt].kind and not (
            res.dtype.kind in "iub" and DTYPES[dt].kind in "iu"):
        raise TypeError(f"pyet.F: {name} returned {res.dtype} where {DTYPES[dt]} was "
                        f"expected (pass dtype= to pyet.F to say what it returns)")
    return np.ascontiguousarray(res, dtype=DTYPES[dt])


cdef extern from "fpstatus.h" nogil:
    enum:
        PYET_FS_INVALID
        PYET_FS_DIVIDE
        PYET_FS_OVERFLOW
        PYET_FS_UNDERFLOW


cdef extern from "threads.h" nogil:
    enum:
        PYET_FP_INVALID
        PYET_FP_OVERFLOW
        PYET_FP_DIVIDE
        PYET_FP_UNDERFLOW
    int pyet_fs_get()
    void pyet_fs_clear(int flags)
    void pyet_fs_set(int flags)


# per op: the flags its kernel may raise where NumPy's stays quiet (comparisons on
# NaN; the internals of the vectorized exp, tanh, sigmoid and erf): the engine
# clears those a kernel call raises (tests/test_fp_errors.py compares every op)
cdef int QUIET_FLAGS[OP_COUNT]
for _op in range(OP_COUNT):
    QUIET_FLAGS[_op] = PYET_FS_INVALID if OPNAMES[_op] in (
        "less", "less_equal", "greater", "greater_equal", "maximum", "minimum", "relu", "sign",
        "isnan", "isinf", "isfinite", "floor", "ceil", "rint",
        "trunc", "absolute", "where", "exp") else 0
    if OPNAMES[_op] in ("tanh", "sigmoid"):
        QUIET_FLAGS[_op] = PYET_FS_INVALID | PYET_FS_OVERFLOW | PYET_FS_UNDERFLOW
    elif OPNAMES[_op] == "erf":
        QUIET_FLAGS[_op] = PYET_FS_UNDERFLOW


cdef inline bint invalid_unset() noexcept nogil:
    # before a fold: whether the invalid flag is down (quiet_fold then lowers
    # what the fold raised: max/min compare NaNs and a compensated sum takes
    # inf - inf where NumPy's reductions stay quiet)
    return not (pyet_fs_get() & PYET_FS_INVALID)


cdef inline void quiet_fold(bint was_unset) noexcept nogil:
    if was_unset and pyet_fs_get() & PYET_FS_INVALID:
        pyet_fs_clear(PYET_FS_INVALID)


cdef inline void fold_block(Run *r, int dt, pyet_intp n, char *acc, const void *src,
                            char **leafp) noexcept nogil:
    # argmax/argmin read each value's index from the last leaf (reduce_into's)
    cdef bint quiet = invalid_unset()
    if r.red == RED_ARGMAX or r.red == RED_ARGMIN:
        pyet_reduce_arg(r.red, dt, n, acc, r.strides[r.nd - 1], r.red_comp, src,
                        <const int64_t *>leafp[r.nops - 1 - r.ndst])
    else:
        pyet_reduce_store(r.red, dt, n, acc, r.strides[r.nd - 1], r.red_comp, src)
    quiet_fold(quiet)


cdef inline void repeat_first(char *out, pyet_intp isz, pyet_intp n) noexcept nogil:
    # out[1:n] = out[0]: the copy's vectorized fill (doubling memcpy's read
    # the block back: a bool fill of 2^18 took 2.3x NumPy's)
    if n > 1:
        pyet_copy_strided(out + isz, isz, out, 0, n - 1, <int>isz)


cdef inline bint scalars_only(pyet_instr *ins) noexcept nogil:
    # every operand one value (0-d tensors): the result is one value too
    return ins.nin > 0 and ins.sflags == (1 << ins.nin) - 1


cdef inline int quiet_start(int op) noexcept nogil:
    # before a kernel of op: the flags raised so far, where op raises some
    # of its own quietly (QUIET_FLAGS; quiet_end clears those it raises)
    return pyet_fs_get() if QUIET_FLAGS[op] else 0


cdef inline void quiet_end(int op, int before) noexcept nogil:
    cdef int raised
    if QUIET_FLAGS[op]:
        raised = pyet_fs_get() & ~before & QUIET_FLAGS[op]
        if raised:
            pyet_fs_clear(raised)


cdef inline void call_kernel(pyet_instr *ins, pyet_intp n, void *out,
                             void **inp) noexcept nogil:
    cdef int before = quiet_start(ins.op)
    pyet_kernel(ins.op, ins.dt, ins.sflags, n, out, inp)
    quiet_end(ins.op, before)


cdef inline void call_routed(pyet_instr *ins, pyet_intp n, void *out, void **inp,
                             uint64_t *route, int i) noexcept nogil:
    # call_kernel for instruction i of a chunk of a pass (route: a chunk's
    # two masks, zeroed at its start): the first call of an instruction
    # below 64 asks pyet_kernel_routed whether pyet_kernel goes straight to
    # its narrow loops (bit i of route[0]; route[1]: asked), and the later
    # ones call those loops directly
    cdef int before = quiet_start(ins.op), straight
    cdef uint64_t bit = (<uint64_t>1) << i if i < 64 else 0
    if route[0] & bit:
        pyet_kernel_narrow(ins.op, ins.dt, ins.sflags, n, out, inp)
    elif route[1] & bit or not bit:
        pyet_kernel(ins.op, ins.dt, ins.sflags, n, out, inp)
    else:
        pyet_kernel_routed(ins.op, ins.dt, ins.sflags, n, out, inp, &straight)
        route[1] |= bit
        if straight:
            route[0] |= bit
    quiet_end(ins.op, before)


cdef inline void call_sx(pyet_instr *ins, pyet_intp n, void *out, void **inp,
                         const pyet_intp *steps) noexcept nogil:
    cdef int before = quiet_start(ins.op)
    pyet_kernel_sx(ins.op, ins.dt, n, out, inp, steps)
    quiet_end(ins.op, before)


cdef inline void call_strided(pyet_instr *ins, pyet_intp n, void *out, const char *src,
                              pyet_intp stride) noexcept nogil:
    cdef int before = quiet_start(ins.op)
    pyet_kernel_strided(ins.op, ins.dt, n, out, src, stride)
    quiet_end(ins.op, before)


cdef inline void prefetch_slice(Run *r, char **pf, pyet_intp *at, const pyet_intp *end,
                                const pyet_intp *step) noexcept nogil:
    # the next slice of each stream's block ahead
    cdef int j
    cdef pyet_intp hi
    for j in range(r.npf):
        if at[j] < end[j]:
            hi = at[j] + step[j] if at[j] + step[j] < end[j] else end[j]
            pyet_prefetch(pf[j] + at[j], hi - at[j], r.pfk[j] < r.ndst)
            at[j] = hi


cdef int run_block(Run *r, Program prog, pyet_intp n, char **ptr, char *regs,
                   uint64_t *route, char **pf=NULL, pyet_intp pfn=0) noexcept nogil:
    """Evaluate the program on one block of n elements at ptr (per operand),
    with this thread's registers.  With pf, the r.npf operand blocks there
    (pfn elements each) are prefetched meanwhile, in slices: the memory
    stream keeps flowing while kernels that read no memory compute, as in a
    loop that keeps each element in registers.  Compute-bound instructions
    (divisions, square roots, exp...) leave the memory idle longest: they run
    in pieces of PREFETCH_PIECE elements with a slice after each (a burst
    before the instruction stalls on the line fill buffers, then the memory
    waits for the next one); a program with none takes a slice before each
    instruction."""
    cdef pyet_intp regbytes = r.block * MAX_REG_BYTES
    cdef char *leafp[256]
    cdef char *dstp[256]
    cdef void *inp[PYET_MAX_IN]
    cdef void *piece[PYET_MAX_IN]
    cdef void *out
    cdef int k, i, j, nd = r.ndst, isz_in, isz_out
    cdef pyet_intp nslices, c, m, ni
    cdef pyet_intp at[MAX_PREFETCH]
    cdef pyet_intp end[MAX_PREFETCH]
    cdef pyet_intp step[MAX_PREFETCH]
    cdef pyet_instr *ins
    cdef char *gathered = regs + prog.nregs * regbytes
    if prog.copies_leaf and r.red == RED_NONE and not r.packed and r.tile == 0 \
            and r.itemsize[0] == r.itemsize[1]:
        # dst = leaf along strided rows: one strided copy, no block between
        pyet_copy_strided(ptr[0], r.strides[r.nd - 1], ptr[1], r.strides[MAXD + r.nd - 1], n,
                          r.itemsize[0])
        return 0
    for k in range(nd):  # a strided destination row is written in a block, then scattered
        dstp[k] = ptr[k] if r.gather[k] < 0 or r.packed else gathered + r.gather[k] * regbytes
    cdef pyet_intp steps[PYET_MAX_IN]
    if r.direct and prog.strided_kernel:  # one op whose kernel reads the strided leaf
        call_strided(&prog.code[0], n, dstp[0], ptr[1], r.strides[MAXD + r.nd - 1])
        if r.gather[0] >= 0:
            pyet_copy_strided(ptr[0], r.strides[r.nd - 1], dstp[0], r.itemsize[0], n,
                              r.itemsize[0])
        return 0
    # one compute-bound float64 kernel on strided leaves: gathered and
    # computed in pieces, so that the next piece's loads run while the kernel
    # computes (sqrt of a[::3] 1.62 -> 1.39x NumPy, a[:, ::2] 1.58 -> 1.33;
    # float32 gained nothing: its step-2 and step-3 copies vectorize); not
    # far rows (GATHER_FAR_BYTES), each gathered in one long run (a[::7] at
    # 2^21, pyet/NumPy: int64 a**3 1.71 -> 1.05, float64 a**3 0.51 -> 0.35)
    cdef bint pieces = (prog.ninstr == 1 and prog.ncostly == 1 and pf == NULL
                        and r.red == RED_NONE and not r.packed
                        and pyet_itemsize[prog.code[0].dt] == 8
                        and n * pyet_itemsize[prog.code[0].dt] > GATHER_PIECE
                        and prog.code[0].op != OP_pyfunc and prog.code[0].op != OP_cast)
    if pieces:
        pieces = False
        for k in range(nd, r.nops):
            if r.gather[k] >= 0:
                if iabs(r.strides[k * MAXD + r.nd - 1]) >= GATHER_FAR_BYTES:
                    pieces = False
                    break
                pieces = True
        for j in range(prog.code[0].nin):
            if prog.code[0].src_kind[j] != SRC_LEAF and prog.code[0].src_kind[j] != SRC_SCALAR:
                pieces = False
    cdef char *far_dst[4]
    cdef const char *far_src[4]
    cdef pyet_intp far_step[4]
    cdef int nfar = 0
    cdef pyet_intp s
    for k in range(nd, r.nops):
        if r.gather[k] < 0 or r.packed:  # (packed: run_packed gathered it)
            leafp[k - nd] = ptr[k]
        else:
            leafp[k - nd] = gathered + r.gather[k] * regbytes
            if not pieces and not r.dup[k]:
                s = r.strides[k * MAXD + r.nd - 1]
                if nfar < 4 and iabs(s) >= GATHER_FAR_BYTES and r.itemsize[k] == r.itemsize[nd]:
                    # (GATHER_FAR_BYTES) gathered together below
                    far_dst[nfar], far_src[nfar], far_step[nfar] = leafp[k - nd], ptr[k], s
                    nfar += 1
                else:
                    pyet_copy_strided(leafp[k - nd], r.itemsize[k], ptr[k], s, n, r.itemsize[k])
    if nfar == 1:
        pyet_copy_strided(far_dst[0], r.itemsize[nd], far_src[0], far_step[0], n, r.itemsize[nd])
    elif nfar:
        pyet_gather_rows(nfar, far_dst, far_src, far_step, n, r.itemsize[nd])
    if pieces:
        ins = &prog.code[0]
        isz_in, isz_out = pyet_itemsize[ins.dt], pyet_itemsize[ins.dt_out]
        step[0] = GATHER_PIECE // isz_in
        for j in range(ins.nin):
            if ins.src_kind[j] == SRC_LEAF:
                inp[j] = leafp[ins.src[j]]
            else:
                inp[j] = r.scalars + 8 * ins.src[j]
        out = dstp[-1 - ins.out] if ins.out < 0 else regs + ins.out * regbytes
        c = 0
        while c < n:
            m = n - c if n - c < step[0] else step[0]
            for k in range(nd, r.nops):
                if r.gather[k] >= 0 and not r.dup[k]:
                    pyet_copy_strided(leafp[k - nd] + c * r.itemsize[k], r.itemsize[k],
                                      ptr[k] + c * r.strides[k * MAXD + r.nd - 1],
                                      r.strides[k * MAXD + r.nd - 1], m, r.itemsize[k])
            for j in range(ins.nin):
                piece[j] = inp[j] if ins.src_kind[j] != SRC_LEAF else <char *>inp[j] + c * isz_in
            call_kernel(ins, m, <char *>out + c * isz_out, piece)
            c += m
        for k in range(nd):
            if r.gather[k] >= 0:
                pyet_copy_strided(ptr[k], r.strides[k * MAXD + r.nd - 1], dstp[k],
                                  r.itemsize[k], n, r.itemsize[k])
        return 0
    if r.red != RED_NONE and prog.copies_leaf:  # fold the leaf where it lies
        fold_block(r, prog.dt_out, n, ptr[0], leafp[0], leafp)
        return 0
    if pf != NULL:  # slices in whole lines (one division per stream and block)
        nslices = (prog.ncostly * ((n + PREFETCH_PIECE - 1) // PREFETCH_PIECE)
                   if prog.ncostly else prog.ninstr)
        for j in range(r.npf):
            at[j] = 0
            end[j] = pfn * r.itemsize[r.pfk[j]]
            step[j] = ((end[j] + nslices - 1) // nslices + 63) & ~(<pyet_intp>63)
    for i in range(prog.ninstr):
        ins = &prog.code[i]
        if pf != NULL and not prog.ncostly:
            prefetch_slice(r, pf, at, end, step)
        for j in range(ins.nin):
            if ins.src_kind[j] == SRC_REG:
                inp[j] = regs + ins.src[j] * regbytes if ins.src[j] != r.dst_reg else dstp[0]
            elif ins.src_kind[j] == SRC_LEAF:
                inp[j] = leafp[ins.src[j]]
            elif ins.src_kind[j] == SRC_SCALAR:
                inp[j] = r.scalars + 8 * ins.src[j]
            else:  # what an earlier statement of the pass wrote into this block
                inp[j] = dstp[ins.src[j]]
        if ins.out < 0:
            out = dstp[-1 - ins.out]
        else:
            out = regs + ins.out * regbytes if ins.out != r.dst_reg else dstp[0]
        # an instruction on scalars only (0-d tensors) computes its one value
        # and repeats it: nothing is asked for n values of operands holding one
        ni = 1 if n > 1 and scalars_only(ins) else n
        if i < 64 and (r.insx >> i) & 1:  # strided leaves read where they lie
            for j in range(ins.nin):
                if ins.sflags & (1 << j):
                    steps[j] = 0
                elif ins.src_kind[j] == SRC_LEAF and r.gather[nd + ins.src[j]] == -1:
                    steps[j] = r.strides[(nd + ins.src[j]) * MAXD + r.nd - 1]
                else:
                    steps[j] = pyet_itemsize[ins.dt]
            call_sx(ins, ni, out, inp, steps)
        elif ins.op == OP_cast:
            pyet_cast(ins.dt, ins.dt_out, ni, out, inp[0])
        elif ins.op == OP_pyfunc:
            if prog.cloop[i] != NULL:
                call_np_loop(prog, i, ins, ni, out, inp)
            elif call_pyfunc(r, i, ni, out, inp) < 0:
                return -1
        elif pf != NULL and prog.costly[i]:  # in pieces, a prefetch slice after each
            isz_in, isz_out = pyet_itemsize[ins.dt], pyet_itemsize[ins.dt_out]
            c = 0
            while c < ni:
                m = ni - c if ni - c < PREFETCH_PIECE else PREFETCH_PIECE
                for j in range(ins.nin):
                    piece[j] = inp[j] if ins.sflags & (1 << j) else <char *>inp[j] + c * isz_in
                call_kernel(ins, m, <char *>out + c * isz_out, piece)
                prefetch_slice(r, pf, at, end, step)
                c += m
        else:
            call_routed(ins, ni, out, inp, route, i)
        if ni < n:
            repeat_first(<char *>out, pyet_itemsize[ins.dt_out], n)
    if pf != NULL:  # what rounding left over
        for j in range(r.npf):
            step[j] = end[j]
        prefetch_slice(r, pf, at, end, step)
    if r.red != RED_NONE:  # fold the block into the accumulators
        fold_block(r, prog.dt_out, n, ptr[0], dstp[0], leafp)
        return 0
    if not r.packed:  # scatter into strided destination rows, in statement order
        for k in range(nd):
            if r.gather[k] >= 0:
                pyet_copy_strided(ptr[k], r.strides[k * MAXD + r.nd - 1], dstp[k],
                                  r.itemsize[k], n, r.itemsize[k])
    return 0


cdef bint fold_whole_rows(Run *r, int dt, pyet_intp w0, pyet_intp w1,
                          pyet_intp dst_shift) noexcept nogil:
    """A leaf's rows that each fold whole (one block a row) without run_block's
    per-row machinery; False (nothing done) for other layouts and folds.  Called
    through FOLD_WHOLE_ROWS: inlined into run_items it slowed the general
    loop (F-order 64^3 int32 min over axis 2: ~20 %)."""
    cdef int nd = r.nd
    cdef pyet_intp inner = r.shape[nd - 1], w, m, rest, blk, n
    cdef bint quiet = invalid_unset()
    if nd == 2 and r.strides[0] == 0 and r.strides[1] == r.itemsize[0]:
        # every row folded into one contiguous row of accumulators, several
        # at a time (sum(x, axis=0))
        if not pyet_reduce_rows(r.red, dt, w1 - w0, inner, r.base[0] + dst_shift,
                                r.base[1] + w0 * r.strides[MAXD], r.strides[MAXD]):
            return False  # a fold it does not do
        quiet_fold(quiet)
        return True
    if nd == 2 and r.strides[0] != 0 and r.strides[1] == 0:
        # the rows reduced whole into their own accumulators (the reduced
        # axes innermost: sum(x, axis=-1)): a kernel call a row, without the
        # block machinery's ~30 ns (64^3 float64: 4096 rows)
        for w in range(w0, w1):
            pyet_reduce_store(r.red, dt, inner, r.base[0] + dst_shift + w * r.strides[0], 0,
                              r.red_comp, r.base[1] + w * r.strides[MAXD])
        quiet_fold(quiet)
        return True
    if nd == 3 and r.strides[0] != 0 and r.strides[1] == 0 and r.strides[2] == r.itemsize[0]:
        # a middle axis reduced (sum(x, axis=1)): the rows of each outer
        # index folded into its row of accumulators, several at a time
        m = r.shape[1]
        w = w0
        while w < w1:
            rest = w // m  # the outer index; blk: the row within it
            blk = w - rest * m
            n = min(w1 - w, m - blk)
            if not pyet_reduce_rows(r.red, dt, n, inner, r.base[0] + dst_shift
                                    + rest * r.strides[0], r.base[1] + rest * r.strides[MAXD]
                                    + blk * r.strides[MAXD + 1], r.strides[MAXD + 1]):
                return False  # a fold it does not do (known at the first call)
            w += n
        quiet_fold(quiet)
        return True
    return False


ctypedef bint (*whole_rows_fn)(Run *r, int dt, pyet_intp w0, pyet_intp w1,
                               pyet_intp dst_shift) noexcept nogil
# (a pointer the compiler does not see through: fold_whole_rows stays out of run_items)
cdef whole_rows_fn FOLD_WHOLE_ROWS = fold_whole_rows


cdef int run_items(Run *r, Program prog, pyet_intp w0, pyet_intp w1,
                   char *regs, pyet_intp dst_shift) noexcept nogil:
    """Run work items w0 <= w < w1: item w is block w % nblocks of row
    w // nblocks, rows numbered in C order over the outer dimensions."""
    cdef int nd = r.nd, nops = r.nops, d, k
    cdef pyet_intp idx[MAXD]
    cdef char *row[256]
    cdef char *ptr[256]
    cdef pyet_intp inner = r.shape[nd - 1], rest, blk, x0, n, ahead = PREFETCH_AHEAD
    cdef char *pf[MAX_PREFETCH]
    cdef uint64_t route[2]  # (call_routed)
    route[0] = route[1] = 0
    if w0 >= w1:
        return 0
    if r.packed:
        return run_packed(r, prog, w0, w1, regs)
    if r.tpp:
        return run_tiles_flat(r, prog, w0, w1, regs)
    if r.tile:
        return run_tiled(r, prog, w0, w1, regs)
    if r.plain:
        return run_plain(r, prog, w0, w1, regs)
    if (r.red != RED_NONE and prog.copies_leaf and r.nblocks == 1 and r.gather[1] < 0
            and r.red != RED_ARGMAX and r.red != RED_ARGMIN
            and FOLD_WHOLE_ROWS(r, prog.dt_out, w0, w1, dst_shift)):
        return 0
    blk = first_row(r, w0, idx, row)
    row[0] += dst_shift  # a thread's own accumulators
    for _ in range(w0, w1):
        x0 = blk * r.block
        n = inner - x0 if inner - x0 < r.block else r.block
        for k in range(nops):
            ptr[k] = row[k] + x0 * r.strides[k * MAXD + nd - 1]
        if r.npf and blk + ahead < r.nblocks:  # the block `ahead` further along the row
            for k in range(r.npf):
                pf[k] = ptr[r.pfk[k]] + ahead * r.block * r.itemsize[r.pfk[k]]
            if run_block(r, prog, n, ptr, regs, route, pf,
                         min(r.block, inner - x0 - ahead * r.block)) < 0:
                return -1
        elif run_block(r, prog, n, ptr, regs, route) < 0:
            return -1
        if r.early:  # all/any into one accumulator: the first deciding block ends it
            if r.stop or (row[0][0] != 0) == (r.early == RED_ANY):
                r.stop = 1
                return 0
        blk += 1
        if blk == r.nblocks:
            blk = 0
            next_row(r, idx, row)
    return 0


cdef inline pyet_intp first_row(Run *r, pyet_intp w, pyet_intp *idx, char **row) noexcept nogil:
    # row and idx (outer index) set to work item w's row; returns its block in the row
    cdef int d, k
    cdef pyet_intp rest = w // r.nblocks
    for k in range(r.nops):
        row[k] = r.base[k]
    for d in range(r.nd - 2, -1, -1):
        idx[d] = rest % r.shape[d]
        rest //= r.shape[d]
        for k in range(r.nops):
            row[k] += idx[d] * r.strides[k * MAXD + d]
    return w % r.nblocks


cdef inline void next_row(Run *r, pyet_intp *idx, char **row) noexcept nogil:
    # the next row: an odometer over the outer dimensions
    cdef int k, d = r.nd - 2
    while d >= 0:
        idx[d] += 1
        for k in range(r.nops):
            row[k] += r.strides[k * MAXD + d]
        if idx[d] < r.shape[d]:
            break
        for k in range(r.nops):
            row[k] -= r.strides[k * MAXD + d] * r.shape[d]
        idx[d] = 0
        d -= 1


cdef int run_plain(Run *r, Program prog, pyet_intp w0, pyet_intp w1,
                   char *regs) noexcept nogil:
    """run_items for a plain pass (Run.plain): every operand's rows are read
    or written where they lie, so a block only points each kernel at them
    through the program's operand table (Program.slots), with none of
    run_block's gathers, folds, prefetches or user functions, and calls the
    kernels' loops through call_routed: a block of three kernels ~290
    instructions of set-up and dispatch, where run_block's took ~800."""
    cdef void *slot[PLAIN_SLOTS]
    cdef void *inp[PYET_MAX_IN]
    cdef void **rows = slot + prog.nregs + prog.nscalars
    cdef char *row[256]
    cdef pyet_intp idx[MAXD]
    cdef pyet_intp inner = r.shape[r.nd - 1], regbytes = r.block * MAX_REG_BYTES, blk, x0, n
    cdef int i, j, k, nops = r.nops, last = r.nd - 1
    cdef const short *sl
    cdef pyet_instr *ins
    cdef uint64_t route[2]  # (call_routed)
    route[0] = route[1] = 0
    for k in range(prog.nregs):
        slot[k] = regs + k * regbytes
    for k in range(prog.nscalars):
        slot[prog.nregs + k] = r.scalars + 8 * k
    blk = first_row(r, w0, idx, row)
    for _ in range(w0, w1):
        x0 = blk * r.block
        n = inner - x0 if inner - x0 < r.block else r.block
        for k in range(nops):
            rows[k] = row[k] + x0 * r.strides[k * MAXD + last]
        for i in range(prog.ninstr):
            ins = &prog.code[i]
            sl = prog.slots + i * (PYET_MAX_IN + 1)
            for j in range(ins.nin):
                inp[j] = slot[sl[j]]
            if ins.op == OP_cast:
                pyet_cast(ins.dt, ins.dt_out, n, slot[sl[PYET_MAX_IN]], inp[0])
            else:
                call_routed(ins, n, slot[sl[PYET_MAX_IN]], inp, route, i)
        blk += 1
        if blk == r.nblocks:
            blk = 0
            next_row(r, idx, row)
    return 0


cdef int run_chunk(void *ctx, pyet_intp c, int slot) noexcept nogil:
    # chunk c of the work items in the scratch of participant slot; a
    # reduction's chunk c folds into accumulator set c: a fixed split, so the
    # order of additions is the same every run, whichever thread runs it
    cdef Run *r = <Run *>ctx
    if r.red_units:  # shared accumulators: chunk c's units are its alone
        return run_items(r, <Program>r.prog, r.red_units * c // r.nchunks * r.unit_items,
                         r.red_units * (c + 1) // r.nchunks * r.unit_items,
                         r.scratch + slot * r.scratch_bytes, 0)
    return run_items(r, <Program>r.prog, r.nitems * c // r.nchunks,
                     r.nitems * (c + 1) // r.nchunks, r.scratch + slot * r.scratch_bytes,
                     c * r.red_stride if r.red != RED_NONE else 0)


cdef void packed_copy(Run *r, pyet_intp p0, pyet_intp n, char *gathered,
                      bint scatter, bint again=False) noexcept nogil:
    """Packed blocks: gather the n elements from flat position p0 (C order over
    the merged dimensions) of every operand that is not flat into its block
    (again: but the row broadcasts gathered for an earlier block), or
    (scatter) write the destination's block back, row piece by row piece."""
    cdef int nd = r.nd, d, k, k0 = 1, k1 = r.nops, isz, skip = r.nonce if again else 0
    cdef pyet_intp idx[MAXD]
    cdef char *row[256]
    cdef pyet_intp inner = r.shape[nd - 1], rest = p0 // inner, x = p0 % inner, off = 0
    cdef pyet_intp seg, s, regbytes = r.block * MAX_REG_BYTES
    if scatter:
        k0, k1 = 0, 1
    for k in range(k0, k1):
        row[k] = r.base[k]
    for d in range(nd - 2, -1, -1):
        idx[d] = rest % r.shape[d]
        rest //= r.shape[d]
        for k in range(k0, k1):
            row[k] += idx[d] * r.strides[k * MAXD + d]
    while True:
        if not scatter and x == 0 and n - off >= 2 * inner:
            # whole rows along dimension nd - 2: one call an operand for all
            # of them (a call a row, ~30 instructions: A + col on (1e5, 4)
            # float64 was 2.45x NumPy)
            seg = (n - off) // inner
            if seg > r.shape[nd - 2] - idx[nd - 2]:
                seg = r.shape[nd - 2] - idx[nd - 2]
            for k in range(k0, k1):
                if r.gather[k] < skip or r.dup[k]:
                    continue
                isz = r.itemsize[k]
                pyet_copy_rows(gathered + r.gather[k] * regbytes + off * isz, row[k],
                               r.strides[k * MAXD + nd - 2], r.strides[k * MAXD + nd - 1],
                               seg, inner, isz)
            off += seg * inner
            if off >= n:
                return
            idx[nd - 2] += seg - 1  # (the odometer below steps over the last)
            for k in range(k0, k1):
                row[k] += (seg - 1) * r.strides[k * MAXD + nd - 2]
        else:
            seg = inner - x if inner - x < n - off else n - off
            for k in range(k0, k1):
                if r.gather[k] < skip or r.dup[k]:
                    continue
                s = r.strides[k * MAXD + nd - 1]
                isz = r.itemsize[k]
                if scatter:
                    pyet_copy_strided(row[k] + x * s, s, gathered + r.gather[k] * regbytes
                                      + off * isz, isz, seg, isz)
                else:
                    pyet_copy_strided(gathered + r.gather[k] * regbytes + off * isz, isz,
                                      row[k] + x * s, s, seg, isz)
            off += seg
            if off >= n:
                return
        x = 0
        d = nd - 2
        while d >= 0:  # next row: odometer over the outer dimensions
            idx[d] += 1
            for k in range(k0, k1):
                row[k] += r.strides[k * MAXD + d]
            if idx[d] < r.shape[d]:
                break
            for k in range(k0, k1):
                row[k] -= r.strides[k * MAXD + d] * r.shape[d]
            idx[d] = 0
            d -= 1


cdef int run_packed(Run *r, Program prog, pyet_intp w0, pyet_intp w1,
                    char *regs) noexcept nogil:
    """Work items w0 <= w < w1 of a packed run: item w is the w-th block of the
    elements in C order over the merged dimensions, across row ends, so short
    rows (and user functions) pay the per-block cost once per block, not per row.
    Flat operands are read (written) in place; the others are gathered."""
    cdef char *ptr[256]
    cdef pyet_intp p0, n, regbytes = r.block * MAX_REG_BYTES
    cdef char *gathered = regs + prog.nregs * regbytes
    cdef pyet_intp w
    cdef int k
    cdef uint64_t route[2]  # (call_routed)
    route[0] = route[1] = 0
    for w in range(w0, w1):
        p0 = w * r.block
        n = r.total - p0 if r.total - p0 < r.block else r.block
        for k in range(r.nops):
            if r.gather[k] < 0:
                ptr[k] = r.base[k] + p0 * r.itemsize[k]
            else:
                ptr[k] = gathered + r.gather[k] * regbytes
        if w == w0 or r.gathers > r.nonce:
            packed_copy(r, p0, n, gathered, False, w > w0)
        if run_block(r, prog, n, ptr, regs, route) < 0:
            return -1
        if r.gather[0] >= 0:
            packed_copy(r, p0, n, gathered, True)
    return 0


cdef int run_tiled(Run *r, Program prog, pyet_intp w0, pyet_intp w1,
                   char *regs) noexcept nogil:
    """Work items of a tiled run: item w is block w % nblocks of the rows of
    tile w // nblocks (r.tile consecutive rows).  A leaf read across its
    memory order (A.T; r.gather[k] <= -2) is copied for the whole tile at
    once, each source line read once for all the rows it holds; its rows are
    then read from that copy."""
    cdef int nd = r.nd, nops = r.nops, d, k
    cdef char *ptr[256]
    cdef char *tb
    cdef pyet_intp w, rw, r0, r1, rest, i, x0, n, inner = r.shape[nd - 1]
    cdef pyet_intp regbytes = r.block * MAX_REG_BYTES
    # a tile buffer's rows a line more than a power of two apart: rows 4 KiB
    # apart share one L1 set, and 16 of them (a float32 tile) thrash it
    cdef pyet_intp pitch = regbytes + TILE_SKEW
    cdef bint adjacent
    cdef uint64_t route[2]  # (call_routed)
    route[0] = route[1] = 0
    for w in range(w0, w1):
        x0 = (w % r.nblocks) * r.block
        n = inner - x0 if inner - x0 < r.block else r.block
        r1 = (w // r.nblocks + 1) * r.tile - r.tile_lead
        r0 = r1 - r.tile if r1 > r.tile else 0
        r1 = r1 if r1 < r.nrows else r.nrows
        # the tile's rows one step apart along the second-last axis
        adjacent = r0 % r.shape[nd - 2] + (r1 - r0) <= r.shape[nd - 2]
        if adjacent and prog.copies_leaf and r.gather[0] == -1 and r.gather[1] <= -2 \
                and r.tile <= TILE_DIRECT_ROWS:
            # dst = A.T: the tile copied straight into the destination's rows (at
            # most TILE_DIRECT_ROWS: with more, a power-of-two row stride
            # thrashes L1; at 16, a 1024^2 float32 copy measured 0.19x NumPy
            # against 0.14x through the tile buffer, 181^2 0.82x against 1.2x)
            rest = r0
            ptr[0] = r.base[0] + x0 * r.strides[nd - 1]
            ptr[1] = r.base[1] + x0 * r.strides[MAXD + nd - 1]
            for d in range(nd - 2, -1, -1):
                i = rest % r.shape[d]
                rest //= r.shape[d]
                ptr[0] += i * r.strides[d]
                ptr[1] += i * r.strides[MAXD + d]
            pyet_copy_tile(ptr[0], r.strides[nd - 2], ptr[1], r.strides[MAXD + nd - 2],
                           r.strides[MAXD + nd - 1], r1 - r0, n, r.itemsize[1], r.from_memory)
            continue
        for rw in range(r0, r1):
            for k in range(nops):
                ptr[k] = r.base[k] + x0 * r.strides[k * MAXD + nd - 1]
            rest = rw
            for d in range(nd - 2, -1, -1):
                i = rest % r.shape[d]
                rest //= r.shape[d]
                for k in range(nops):
                    ptr[k] += i * r.strides[k * MAXD + d]
            for k in range(r.ndst, nops):
                if r.gather[k] > -2:
                    continue
                tb = regs + r.tilebuf + (-2 - r.gather[k]) * r.tile * pitch
                if r.dup[k]:
                    pass
                elif not adjacent:
                    pyet_copy_strided(tb + (rw - r0) * pitch, r.itemsize[k], ptr[k],
                                      r.strides[k * MAXD + nd - 1], n, r.itemsize[k])
                elif rw == r0:
                    pyet_copy_tile(tb, pitch, ptr[k], r.strides[k * MAXD + nd - 2],
                                   r.strides[k * MAXD + nd - 1], r1 - r0, n, r.itemsize[k],
                                   r.from_memory)
                ptr[k] = tb + (rw - r0) * pitch
            if run_block(r, prog, n, ptr, regs, route) < 0:
                return -1
    return 0


cdef int run_tiles_flat(Run *r, Program prog, pyet_intp w0, pyet_intp w1,
                        char *regs) noexcept nogil:
    """Work items of a run in flat tiles (r.tpp > 0): item w is tile w % r.tpp
    of plane w // r.tpp (a plane: the last two merged dimensions), r.tile
    rows that every operand not read across its rows holds one after another.
    The leaves read across rows are copied a tile at a time into contiguous
    buffers and the tile runs as one block: a block's fixed cost per tile,
    not per row (64 x 64 float64 where(A.T > B.T, ...): 64 blocks -> 8)."""
    cdef int nd = r.nd, d, k
    cdef char *ptr[256]
    cdef char *tb
    cdef char *dst = NULL
    cdef pyet_intp w, plane, r0, rows, i, inner = r.shape[nd - 1], h = r.shape[nd - 2]
    cdef pyet_intp regbytes = r.block * MAX_REG_BYTES
    cdef uint64_t route[2]  # (call_routed)
    route[0] = route[1] = 0
    for w in range(w0, w1):
        plane = w // r.tpp
        r0 = (w - plane * r.tpp) * r.tile
        rows = r.tile if r0 + r.tile <= h else h - r0
        for k in range(r.nops):
            ptr[k] = r.base[k] + r0 * r.strides[k * MAXD + nd - 2]
        for d in range(nd - 3, -1, -1):
            i = plane % r.shape[d]
            plane //= r.shape[d]
            for k in range(r.nops):
                ptr[k] += i * r.strides[k * MAXD + d]
        if prog.copies_leaf and r.itemsize[0] == r.itemsize[1] and (
                r.gather[1] == -1 if r.dtile else r.gather[1] <= -2):
            if r.dtile:  # dst.T = A: A's rows copied across dst's
                pyet_copy_tile(ptr[0], r.strides[nd - 1], ptr[1], r.itemsize[1],
                               r.strides[MAXD + nd - 2], inner, rows, r.itemsize[1], r.from_memory)
            else:  # dst = A.T: the tile copied straight into the destination's rows
                pyet_copy_tile(ptr[0], r.strides[nd - 2], ptr[1], r.strides[MAXD + nd - 2],
                               r.strides[MAXD + nd - 1], rows, inner, r.itemsize[1], r.from_memory)
            continue
        if r.dtile:
            dst = ptr[0]
            ptr[0] = regs + r.tilebuf + r.ntiled * regbytes
        for k in range(r.ndst, r.nops):
            if r.gather[k] <= -2:
                tb = regs + r.tilebuf + (-2 - r.gather[k]) * regbytes
                if not r.dup[k]:
                    pyet_copy_tile(tb, inner * r.itemsize[k], ptr[k],
                                   r.strides[k * MAXD + nd - 2], r.strides[k * MAXD + nd - 1],
                                   rows, inner, r.itemsize[k], r.from_memory)
                ptr[k] = tb
        if run_block(r, prog, rows * inner, ptr, regs, route) < 0:
            return -1
        if r.dtile:  # the tile's rows across the destination's
            pyet_copy_tile(dst, r.strides[nd - 1], ptr[0], r.itemsize[0], inner * r.itemsize[0],
                           inner, rows, r.itemsize[0], r.from_memory)
    return 0


cdef bint tiles_flat(Run *r) noexcept nogil:
    # every operand is read across its rows (a leaf, copied a tile at a time)
    # or holds consecutive rows one after another (run_tiles_flat)
    cdef int k, nd = r.nd
    for k in range(r.nops):
        if k >= r.ndst and across_rows(r, k):
            continue
        if k == 0 and r.ndst == 1 and across_rows(r, 0) \
                and r.strides[nd - 2] == r.itemsize[0]:
            continue  # (a tile of dst computed into a buffer, then copied across)
        if r.strides[k * MAXD + nd - 1] != r.itemsize[k] \
                or r.strides[k * MAXD + nd - 2] != r.shape[nd - 1] * r.itemsize[k]:
            return False
    return True


cdef void prefetch_streams(Run *r) noexcept nogil:
    # the operands read (written) in place along contiguous rows, each memory
    # once (a destination its statement reads), when together they exceed
    # PREFETCH_BYTES: too much to stay in the caches from one pass to the next
    cdef int k, j
    cdef pyet_intp nbytes = 0
    for k in range(r.nops):
        if r.gather[k] >= 0 or r.strides[k * MAXD + r.nd - 1] != r.itemsize[k]:
            continue
        for j in range(r.npf):
            if r.base[r.pfk[j]] == r.base[k]:
                break
        else:
            if r.npf < MAX_PREFETCH:
                r.pfk[r.npf] = k
                r.npf += 1
                nbytes += r.total * r.itemsize[k]
    if nbytes <= PREFETCH_BYTES:
        r.npf = 0


cdef int same_leaf(Run *r, int k) noexcept nogil:
    # an earlier leaf with operand k's memory (base, item size, merged
    # strides), which a block or tile holds already; -1 when none
    cdef int j, d
    for j in range(r.ndst, k):
        if r.gather[j] == -1 or r.dup[j] or r.base[j] != r.base[k] \
                or r.itemsize[j] != r.itemsize[k]:
            continue
        for d in range(r.nd):
            if r.strides[j * MAXD + d] != r.strides[k * MAXD + d]:
                break
        else:
            return j
    return -1


cdef bint flat_operand(Run *r, int k) noexcept nogil:
    # operand k's elements lie one after another in the merged C order
    cdef int d
    cdef pyet_intp step = r.itemsize[k]
    for d in range(r.nd - 1, -1, -1):
        if r.strides[k * MAXD + d] != step:
            return False
        step *= r.shape[d]
    return True


cdef bint row_broadcast(Run *r, int k) noexcept nogil:
    # operand k is one contiguous row read again for every row (a bias)
    cdef int d
    if r.nd < 2 or r.strides[k * MAXD + r.nd - 1] != r.itemsize[k]:
        return False
    for d in range(r.nd - 1):
        if r.strides[k * MAXD + d] != 0:
            return False
    return True


cdef bint rows_with_broadcast(Run *r) noexcept nogil:
    # flat operands and at least one row broadcast: packed in whole rows, the
    # broadcast gathered once (a bias on rows of 128, run row by row, took
    # 2.4x the time of the same pass with the bias repeated in memory; rows
    # longer than half a block gain nothing from it)
    cdef int k
    cdef bint any_row = False
    for k in range(r.nops):
        if row_broadcast(r, k):
            any_row = True
        elif not flat_operand(r, k):
            return False
    return any_row


cdef bint columns_only(Run *r) noexcept nogil:
    # no leaf moves along dst's fastest dimension (a dimension of 1 only where
    # dst is one element: merge_dims drops them)
    cdef int k
    for k in range(r.ndst, r.nops):
        if r.strides[k * MAXD + r.nd - 1] != 0:
            return False
    return True


cdef int broadcast_lead(Run *r, int nd) noexcept nogil:
    # how many of the first nd dimensions, from the outermost, no leaf moves along
    cdef int k, d
    for d in range(nd):
        for k in range(r.ndst, r.nops):
            if r.strides[k * MAXD + d] != 0:
                return d
    return nd


DEF COPY_BLOCK_MIN = 256  # bytes: the smallest block copy_blocks copies one by one
DEF COPY_RUN_BYTES = 8192  # side-by-side blocks: the run copied again once this long
DEF COPY_BYTES_PER_ELEMENT = 16  # bytes copied that count as one element of threads_for's work


cdef inline bint next_index(pyet_intp *idx, const pyet_intp *shape, const pyet_intp *strides,
                            int nd, pyet_intp *off) noexcept nogil:
    # an odometer over shape (the last dimension fastest), *off moved by
    # strides; False once it has passed the last index
    cdef int d = nd - 1
    while d >= 0:
        idx[d] += 1
        off[0] += strides[d]
        if idx[d] < shape[d]:
            return True
        off[0] -= strides[d] * shape[d]
        idx[d] = 0
        d -= 1
    return False


cdef struct BlockCopy:
    # copy_blocks' arguments: the block at base (nin dimensions ishape/istrides)
    # copied to every other index of the outer dimensions oshape/ostrides
    char *base
    int nout, nin, isz
    pyet_intp nreps, nchunks  # outer indices (the block's own, 0, included); chunks
    const pyet_intp *oshape
    const pyet_intp *ostrides
    const pyet_intp *ishape
    const pyet_intp *istrides


cdef void copy_blocks(BlockCopy *b, pyet_intp lo, pyet_intp hi) noexcept nogil:
    # outer indices lo..hi-1 (row-major over oshape), each the block's copy
    cdef pyet_intp oidx[MAXD]
    cdef pyet_intp iidx[MAXD]
    cdef pyet_intp at = 0, off, i = lo
    cdef int d, nin = b.nin
    cdef pyet_intp size = b.ishape[0] * b.isz, have, c, run
    cdef char *blk
    if nin == 1 and b.istrides[0] == b.isz and b.nout == 1 and b.ostrides[0] == size:
        # blocks side by side (a row into a C matrix): runs growing to
        # COPY_RUN_BYTES, then that run again, a source still in L1 (a call a
        # row of 2 float64 was 6.7x the pass computing them; doubling to the
        # end read its own megabytes back: float64 512^2 1.46x, 0.9 with the run)
        blk = b.base + lo * size
        memmove(blk, b.base, size)
        have = run = 1
        while have < hi - lo:
            c = min(run, hi - lo - have)
            memmove(blk + have * size, blk, c * size)
            have += c
            if run * size < COPY_RUN_BYTES:
                run = have
        return
    for d in range(b.nout - 1, -1, -1):  # lo's index and block, once
        oidx[d] = i % b.oshape[d]
        i //= b.oshape[d]
        at += oidx[d] * b.ostrides[d]
    for i in range(lo, hi):
        for d in range(nin):
            iidx[d] = 0
        off = 0
        while True:  # the block's rows, each one strided copy
            pyet_copy_strided(b.base + at + off, b.istrides[nin - 1], b.base + off,
                              b.istrides[nin - 1], b.ishape[nin - 1], b.isz)
            if not next_index(iidx, b.ishape, b.istrides, nin - 1, &off):
                break
        next_index(oidx, b.oshape, b.ostrides, b.nout, &at)


cdef int copy_chunk(void *ctx, pyet_intp c, int slot) noexcept nogil:
    # chunk c of outer indices 1..nreps-1 (run_chunks' callback)
    cdef BlockCopy *b = <BlockCopy *>ctx
    copy_blocks(b, 1 + c * (b.nreps - 1) // b.nchunks, 1 + (c + 1) * (b.nreps - 1) // b.nchunks)
    return 0


cdef void fill_rows(char *base, int nd, const pyet_intp *shape, const pyet_intp *strides,
                    pyet_intp n, pyet_intp step, int isz, const char *src) noexcept nogil:
    # rows of n elements (step bytes apart) at base + the odometer over
    # shape/strides (dst's outer dimensions), each set to *src, or with src
    # NULL, the rest of each row to its first element
    cdef pyet_intp idx[MAXD]
    cdef pyet_intp off = 0
    cdef int d
    cdef char *row
    # a value of one repeated byte (bools, zeros) set by memset where rows
    # are contiguous (isnan of an int 2^18 into bool: 3.2 -> 2.6 us, NumPy's
    # memset 2.8)
    cdef bint same = src != NULL and step == isz
    for d in range(1, isz if same else 0):
        same = same and src[d] == src[0]
    for d in range(nd):
        idx[d] = 0
    while True:
        row = base + off
        if same:
            memset(row, src[0], n * isz)
        elif src == NULL and isz == 1 and step == 1:
            memset(row + 1, row[0], n - 1)
        elif src == NULL:
            pyet_copy_strided(row + step, step, row, 0, n - 1, isz)
        else:
            pyet_copy_strided(row, step, src, 0, n, isz)
        if not next_index(idx, shape, strides, nd, &off):
            return


cdef pyet_intp tile_lead(Run *r) noexcept nogil:
    # rows the tiles are moved back by so that they start on the first tiled
    # leaf's cache lines: NumPy's large arrays start 16 bytes into a line, and
    # a tile of a line's worth of rows then reads two lines of each column,
    # the second gone from the caches by the next tile (dst = A.T, float64
    # 4000^2: 29 -> 16 ms; 3000^2 15 -> 7.6 ms)
    cdef int k
    cdef pyet_intp off
    for k in range(r.ndst, r.nops):
        if r.gather[k] <= -2 and not r.dup[k]:
            off = <pyet_intp>(<uintptr_t>r.base[k] % 64)
            if r.strides[k * MAXD + r.nd - 2] != r.itemsize[k] or off % r.itemsize[k]:
                return 0
            return (r.tile - (64 - off) % 64 // r.itemsize[k] % r.tile) % r.tile
    return 0


cdef inline bint across_rows(Run *r, int k) noexcept nogil:
    # operand k's next row is nearer than its next element (A.T in a C pass)
    cdef pyet_intp s_row = r.strides[k * MAXD + r.nd - 2]
    return s_row != 0 and iabs(s_row) < iabs(r.strides[k * MAXD + r.nd - 1])


cdef int run_parallel(Run *r, Program prog, int nthreads) noexcept nogil:
    """Share the work items among nthreads threads: chunks claimed one at a
    time (threads.h), the caller waiting only for chunks others claimed."""
    if nthreads <= 1:
        r.nchunks = 1
    elif r.red_units:
        r.nchunks = min(r.red_units, 8 * nthreads)
    elif r.red != RED_NONE:
        r.nchunks = nthreads
    else:
        r.nchunks = min(r.nitems, 8 * nthreads)
    return run_chunks(run_chunk, r, r.nchunks, nthreads, &r.fpflags)


cdef int reduce_key(int nops, int nd, cnp.ndarray dst, pyet_intp *bstrides) noexcept:
    # The operand whose memory order a reduction walks: the first leaf
    # broadcast along the fewest dimensions (a broadcast row such as
    # arange(n)[None, :] would order a full leaf's dimensions backwards).
    cdef int k, d, zeros, best = 0, fewest = nd + 1
    for k in range(1, nops):
        zeros = 0
        for d in range(nd):
            if cnp.PyArray_DIMS(dst)[d] > 1 and bstrides[k * MAXD + d] == 0:
                zeros += 1
        if zeros < fewest:
            fewest, best = zeros, k
    return best


cdef int execute(Program prog, cnp.ndarray dst, list leaves, list scalars, list pyfuncs,
                 int red=RED_NONE, int red_threads=1, pyet_intp red_stride=0,
                 pyet_intp red_comp=0) except -1:
    return execute_group(prog, [dst], leaves, scalars, pyfuncs, red, red_threads, red_stride,
                         red_comp)


cdef inline bint sx_strided(Run *r, int k) noexcept nogil:
    # leaf k's rows are worth reading where they lie (pyet_kernel_sx): strided,
    # but for reversed rows and 4-byte rows stepping 2 items, whose copies
    # into blocks vectorize (float32 a*b + c on a[::2]: 0.70x NumPy gathered,
    # 0.79-0.85 in place), unless the pass runs from memory (SX_FAR_BYTES)
    cdef pyet_intp st = r.strides[k * MAXD + r.nd - 1], s = iabs(st)
    if st == 0 or st == r.itemsize[k]:
        return False
    if s == r.itemsize[k] or (r.itemsize[k] == 4 and s == 8):
        return r.from_memory
    return True


cdef uint64_t sx_leaves(Run *r, Program prog, int red) noexcept nogil:
    """In programs of several instructions, the 8-byte (from memory, also
    4-byte) leaves (bits, the first 64) of near rows that one instruction
    reads where they lie (pyet_kernel_sx), and those instructions in r.insx;
    none for reductions, packed rows and tiles.  Leaves read twice ((a+b)*(c-a) float64 a[::7]:
    0.85-1.03x NumPy gathered once, 1.06-1.08 read twice), far rows (their
    interleaved gathers did better at 2^18) and 4-byte rows (their step-3
    copies vectorize: float32 a+b+c a[::3] 0.92-1.2 gathered, 1.7-1.85 in
    place) keep their blocks, but for 4-byte rows in passes from memory
    (r.from_memory, SX_FAR_BYTES)."""
    cdef uint64_t leaves = 0, uses
    cdef int k, i, j, nd = r.ndst, nread
    cdef bint ok
    # Program.strided_fused's one instruction reads every leaf where it lies
    r.insx = 1 if r.direct and prog.strided_fused else 0
    # (one instruction: Program.strided_fused, or its own paths; several
    # statements: a leaf may be memory an earlier one writes in the block)
    if prog.ninstr < 2 or nd != 1 or not prog.sx_instr or red or r.direct or r.packed \
            or r.tile:
        return 0
    for k in range(nd, min(r.nops, 64)):
        if (r.itemsize[k] != 8 and not (r.from_memory and r.itemsize[k] == 4)) \
                or not sx_strided(r, k) \
                or iabs(r.strides[k * MAXD + r.nd - 1]) >= GATHER_FAR_BYTES:
            continue
        uses, nread, ok = 0, 0, True
        for i in range(prog.ninstr):
            for j in range(prog.code[i].nin):
                if prog.code[i].src_kind[j] == SRC_LEAF and prog.code[i].src[j] == k - nd:
                    uses |= (<uint64_t>1) << (i if i < 64 else 63)
                    nread += 1
                    ok = ok and i < 64 and (prog.sx_instr >> i) & 1 \
                        and pyet_itemsize[prog.code[i].dt] == r.itemsize[k]
        if ok and nread == 1:
            leaves |= (<uint64_t>1) << k
            r.insx |= uses
    return leaves


cdef int execute_group(Program prog, list dsts, list leaves, list scalars, list pyfuncs,
                       int red=RED_NONE, int red_threads=1, pyet_intp red_stride=0,
                       pyet_intp red_comp=0) except -1:
    """Run prog over destinations of one shape (several: a multi-output pass,
    each written in statement order within a block).  A reduction returns the
    accumulator sets it folded into (see reduce_into), 0 when it refused."""
    cdef cnp.ndarray dst = <cnp.ndarray>dsts[0]
    cdef int ndst = len(dsts)
    cdef int nops = ndst + len(leaves), nd = cnp.PyArray_NDIM(dst), k, d, rc, nthreads
    cdef int nsets = 1
    cdef pyet_intp units, spread, lines, far, s
    cdef uint64_t inplace
    cdef int ngather, ntiled
    cdef pyet_intp tile
    # leaves broadcast along dst's dimensions (columns_only, broadcast_lead):
    # col, the last dimension (rows filled after the pass); lead, the leading
    # ones (the first block copied); value_once, all (one value, computed into
    # fill_one); full_*: dst's merged dimensions before the pass drops them
    cdef bint col = False, value_once = False
    cdef int lead = 0, full_nd = 0
    cdef pyet_intp full_shape[MAXD]
    cdef pyet_intp full_strides[MAXD]
    cdef pyet_intp fill_one[2]  # (16 bytes, aligned for every dtype)
    cdef char *dst_base = NULL  # (merge_dims may have moved it from dst's data)
    cdef pyet_intp written = 1  # elements of the block the pass writes, filled
    cdef BlockCopy bc
    if nops > 255:
        raise ValueError(f"pyet evaluates trees of at most {255 - ndst} array operands, "
                         f"got {nops - ndst}")
    cdef Run r
    # one allocation for the per-call metadata: strides before and after
    # merging, base pointers, gather buffers, item sizes, scalar slots
    cdef size_t meta = (2 * nops * MAXD * sizeof(pyet_intp) + nops * sizeof(char *)
                        + 8 * (len(scalars) + 1) + 2 * nops * sizeof(int) + nops)
    # small passes take both on the stack (malloc's arena lock is a good part
    # of a tiny assignment's cost)
    cdef pyet_intp small_meta[1024]  # SMALL_META bytes
    cdef pyet_intp small_buf[512]  # SMALL_SCRATCH bytes
    cdef char *mem = <char *>small_meta if meta <= SMALL_META else <char *>malloc(meta)
    cdef char *buf = NULL
    cdef bint buf_kept = False
    cdef pyet_intp *bstrides = <pyet_intp *>mem
    cdef pyet_intp blocklen, regbytes
    if mem == NULL:
        raise MemoryError()
    r.strides = bstrides + nops * MAXD
    r.base = <char **>(r.strides + nops * MAXD)
    r.scalars = <char *>(r.base + nops)
    r.itemsize = <int *>(r.scalars + 8 * (len(scalars) + 1))
    r.gather = r.itemsize + nops
    r.dup = <char *>(r.gather + nops)
    cdef list keep = None  # copies prepare_leaf made (the leaves list holds the rest)
    cdef cnp.ndarray dk
    cdef bint apart = prog.dst_reg >= 0 and DST_REGISTER  # (Run.dst_reg) no leaf in dst
    try:
        for k in range(ndst):
            dk = <cnp.ndarray>dsts[k]
            r.base[k] = <char *>cnp.PyArray_DATA(dk)
            r.itemsize[k] = cnp.PyArray_ITEMSIZE(dk)
            for d in range(nd):
                bstrides[k * MAXD + d] = cnp.PyArray_STRIDES(dk)[d]
        for k in range(ndst, nops):
            a = prepare_leaf(leaves[k - ndst], dst, bstrides + k * MAXD)
            for d in range(1, ndst):  # copied when it overlaps a destination other than in place
                if _bounds_overlap(<cnp.ndarray>a, <cnp.ndarray>dsts[d]):
                    a = prepare_leaf(a, <cnp.ndarray>dsts[d], bstrides + k * MAXD)
            if apart and _bounds_overlap(<cnp.ndarray>a, dst):
                apart = False
            if a is not leaves[k - ndst]:
                if keep is None:
                    keep = []
                keep.append(a)
            r.base[k] = <char *>cnp.PyArray_DATA(a)
            r.itemsize[k] = cnp.PyArray_ITEMSIZE(a)
        for k in range(len(scalars)):
            store_scalar(r.scalars + 8 * k, scalars[k], prog.scalar_dt[k])
        # a reduction walks its input's memory order (dst has zero strides)
        r.nd = merge_dims(nd, <pyet_intp *>cnp.PyArray_DIMS(dst), nops, bstrides,
                          r.shape, r.strides, reduce_key(nops, nd, dst, bstrides) if red else -1,
                          r.base)
        if r.nd == 0:
            return 1 if red else 0
        r.nops = nops
        r.ndst = ndst
        r.red = red
        # leaves broadcast along dst's rows (np.broadcast_to of an (n, 1), 0-d
        # tensors: bool ~a of a (512, 1) column into 512^2, a kernel call a
        # row, was 1.47x NumPy's time) or its outer dimensions (exp(b) of a row
        # b into a matrix, every element computed: 3.8-6.5x NumPy's
        # out[...] = np.exp(b)*2 + 1, which computes the row once): the pass
        # computes one element a row of the first block; the rows are filled,
        # the block copied, after it.  A 0-d tree's value is computed aside,
        # its errors raised before dst is written (as NumPy's 0-d temporary).
        if COLUMNS_ONCE and ndst == 1 and not red:
            col = columns_only(&r)
            lead = broadcast_lead(&r, r.nd - col)
            value_once = col and lead == r.nd - 1
            if value_once:
                lead = 0
            elif lead and not (lead == 1 and r.nd == 2 and not col
                               and r.strides[0] == r.shape[1] * r.itemsize[0]
                               and r.strides[1] == r.itemsize[0]):
                # other than side by side, a block is a call (or a call a row):
                # blocks of 256 bytes and more (float64 rows of 16 were 1.16x
                # the pass computing them, of 64 0.67; bool rows of 64 2.7x)
                s = r.itemsize[0]
                for d in range(lead, r.nd):
                    s *= r.shape[d]
                if s < COPY_BLOCK_MIN:
                    lead = 0
            if col or lead:
                full_nd, dst_base = r.nd, r.base[0]
                for d in range(r.nd):
                    full_shape[d], full_strides[d] = r.shape[d], r.strides[d]
                for d in range(lead, r.nd):
                    written *= r.shape[d]
                if value_once:
                    r.base[0] = <char *>fill_one
                    r.nd = 1
                    r.shape[0] = 1
                    for k in range(nops):
                        r.strides[k * MAXD] = 0
                else:
                    r.nd -= col + lead
                    for d in range(r.nd):
                        r.shape[d] = r.shape[lead + d]
                        for k in range(nops):
                            r.strides[k * MAXD + d] = r.strides[k * MAXD + lead + d]
        r.red_stride = red_stride
        r.red_comp = red_comp
        r.red_units = 0
        # one kernel reading leaves straight into dst keeps no block in L1,
        # so it takes long blocks: less per-block overhead; a user function
        # is called on long blocks (each call costs microseconds)
        # (a block's registers are BLOCK 8-byte items: passes of 4-byte items
        # moving under LOOP_THREADS_BYTES fill them with 2 * BLOCK, the same
        # lines, half the blocks, each ~36 ns of set-up and calls: float32 at
        # 2^18, pyet/NumPy, (a + 0.5)*2 1.37 -> 0.84, x*y + y*z - z 0.74 ->
        # 0.65; from memory (2^21) x*y + y*z - z took 1.1x the time)
        units = 1  # the destination's elements
        for d in range(nd):
            units *= cnp.PyArray_DIMS(dst)[d]
        blocklen = BLOCK
        if prog.max_isz <= 4 and units * pass_itemsizes(&r) < LOOP_THREADS_BYTES:
            blocklen = 2 * BLOCK
            for k in range(nops):
                if r.itemsize[k] > 4:
                    blocklen = BLOCK
        if prog.nregs == 0:
            blocklen = max(BLOCK, 8192)
        if prog.ninstr == 1 and scalars_only(&prog.code[0]):
            # one value repeated (an op of 0-d operands): a fill per block,
            # each block ~30 ns of set-up (bool s != t into 2^18: 5.4 -> 3.4
            # us with the fill, NumPy's fill 2.4)
            blocklen = max(BLOCK, PYFUNC_BLOCK)
        r.from_memory = units * pass_itemsizes(&r) >= SX_FAR_BYTES
        # a strided leaf that Program.strided_kernel's kernel reads where
        # it lies (not a broadcast: those are filled into a block)
        r.direct = (prog.strided_kernel and not red and r.strides[MAXD + r.nd - 1] != 0
                    and r.strides[MAXD + r.nd - 1] != r.itemsize[1])
        if prog.strided_fused and not red:
            # a leaf's rows strided: all read in place (float64 a*b + c on
            # a[::3] rows: 1.2-1.3x NumPy gathered, 0.87-0.89 in place)
            for k in range(ndst, nops):
                if sx_strided(&r, k):
                    r.direct = True
        if not prog.copies_leaf:
            # a strided row is gathered into (scattered from) a block that
            # stays in L1 too (8192 float64 were 64 KiB: sqrt of a[::3]
            # 1.66x NumPy, 1.41x with blocks of 512)
            spread = far = 0
            lines = r.itemsize[0]
            for k in range(nops):
                if r.strides[k * MAXD + r.nd - 1] != r.itemsize[k] \
                        and not (r.direct and k >= ndst):
                    blocklen = BLOCK
                    if k >= ndst and 0 < iabs(r.strides[k * MAXD + r.nd - 1]) <= 32:
                        spread += iabs(r.strides[k * MAXD + r.nd - 1])
                        lines += r.itemsize[k]
                    elif k >= ndst and r.strides[k * MAXD + r.nd - 1] != 0:
                        far += 64
            if far and not spread and units * far >= GATHER_BLOCK_BYTES:
                # leaves from beyond the caches, under two items a cache line:
                # long blocks, each row's gather a long run through memory
                # (2^18, blocks of 512 -> 4096, pyet/NumPy: a*b + c float64
                # a[::5] 1.34-1.47 -> 1.13-1.17, a[::7] 1.16-1.21 -> 1.00-1.09,
                # float32 a[::10] 1.41-1.48 -> 1.20-1.21; float64 a[::3] and
                # float32 a[::7], two items a line: no gain)
                blocklen = GATHER_FAR_BLOCK
            elif spread and BLOCK * (spread + lines) > GATHER_L1_BYTES:
                # leaves gathered from beyond the caches, two items or more a
                # cache line, whose lines and blocks overflow L1 in blocks of
                # BLOCK: short blocks (at 2^18, blocks of 512 were 1.2-1.7x
                # NumPy: a*b + c float64 a[::3] and a[::2], float32 a[::7];
                # 128 gained 0.45-0.8x); in cache they only cost more calls;
                # at an item a line (float64 a[::7]) 1.1-1.2x blocks of 512,
                # and within L1 (a < b float64 a[::2]) 1.1-1.2x too
                if units * spread >= GATHER_BLOCK_BYTES:
                    blocklen = min(blocklen, GATHER_BLOCK)
        if prog.user_pyfunc:
            blocklen = max(BLOCK, PYFUNC_BLOCK)
        elif prog.np_loops:  # an op's NumPy loop: a call per block (~3 us from
            # Python), on long blocks when it is the whole program (no register
            # kept in L1); called in C too (Program.cloop): NumPy's SVML loops
            # on blocks of 8 Ki cost 1.3x their time on 64 Ki (log10, exp2 float32)
            blocklen = max(BLOCK, PYFUNC_BLOCK if prog.ninstr == 1 else NUMPY_LOOP_BLOCK)
        r.total = 1
        for d in range(r.nd):
            r.total *= r.shape[d]
        r.nrows = r.total // r.shape[r.nd - 1]
        # an operand read across its rows (its next row is nearer than its
        # next element: A.T) is walked in tiles of rows, a cache line each
        tile = 0
        if not red and r.nrows > 1:
            for k in range(nops):
                if across_rows(&r, k):
                    tile = max(tile, 64 // r.itemsize[k])
        # rows shorter than a block (or than a user function's block) are
        # packed: blocks run across row ends; but rows of TILE_MIN_ROW and
        # more read across are tiled (a 64 x 64 float32 A.T copied 1.5x
        # NumPy packed, element by element; float32 a ** b of two F-order
        # 512^2 arrays as NumPy's loop called in C: 1.37x np.power packed)
        r.packed = not red and ndst == 1 and r.nd > 1 and (
            (r.shape[r.nd - 1] < SHORT_ROW and not (tile and r.shape[r.nd - 1] >= TILE_MIN_ROW))
            or ((prog.has_pyfunc or (prog.np_loops and not tile))
                and r.shape[r.nd - 1] < blocklen)
            or (ROW_BROADCASTS_ONCE and 2 * r.shape[r.nd - 1] <= BLOCK
                and rows_with_broadcast(&r)))
        r.early = red if (red == RED_ALL or red == RED_ANY) else 0
        r.stop = 0
        for d in range(r.nd):
            if r.strides[d] != 0:  # several accumulators: no single decision
                r.early = 0
        r.tile = 0 if r.packed else tile
        if r.direct and (r.packed or r.tile):  # the leaf is gathered after all
            r.direct = False
            blocklen = BLOCK
        if r.tile:
            blocklen = TILE_BLOCKS * BLOCK
        elif r.from_memory and prog.ninstr > 1 and not red and not r.packed \
                and not prog.np_loops and not prog.has_pyfunc and blocklen == BLOCK:
            # a program of several kernels from memory: each kernel streams
            # its leaves a block at a time, and the memory keeps up with
            # shorter bursts (1e6 float64, one thread: x*y + y*z - z 2.3 ->
            # 1.3-1.4x a fused C loop, 1.04 -> 0.53x NumPy; a C model of the
            # blocks: 512 1.7-1.9x the fused loop, 128 1.03-1.07x, but
            # pyet's calls per block cost more below BLOCK // 2)
            blocklen = BLOCK // 2
        r.block = min(blocklen, r.total if r.packed else r.shape[r.nd - 1])
        r.tpp = 0
        # (a destination read across: 4x, its rows otherwise written one by one
        # through a scatter; 1000^2 float32 a + b into F order 1.02x NumPy at
        # 4096, 0.59x at 16384, a where tree 0.41x -> 0.35x)
        if r.tile and r.shape[r.nd - 1] * r.tile <= (
                4 * FLAT_TILE_MAX if across_rows(&r, 0) else FLAT_TILE_MAX) and tiles_flat(&r):
            # short rows read across: tiles of whole rows, each one block
            while 2 * r.tile * r.shape[r.nd - 1] <= BLOCK and r.tile < r.shape[r.nd - 2]:
                r.tile *= 2
            r.block = r.tile * r.shape[r.nd - 1]
            r.tpp = (r.shape[r.nd - 2] + r.tile - 1) // r.tile
        inplace = sx_leaves(&r, prog, red)
        ngather = ntiled = 0
        for k in range(nops):
            r.gather[k] = -1
            r.dup[k] = 0
        if ROW_BROADCASTS_ONCE and r.packed and not prog.has_pyfunc \
                and 2 * r.shape[r.nd - 1] <= blocklen:
            # row broadcasts in blocks of whole rows (two or more): the same
            # block for every block, gathered once (their gather blocks first)
            for k in range(nops):
                if row_broadcast(&r, k):
                    r.gather[k] = ngather
                    ngather += 1
            if ngather:
                r.block = min(blocklen // r.shape[r.nd - 1] * r.shape[r.nd - 1], r.total)
        r.nonce = ngather
        regbytes = r.block * MAX_REG_BYTES
        for k in range(nops):
            if r.gather[k] >= 0:
                continue  # a row broadcast, above
            if r.tile and k >= ndst and across_rows(&r, k):
                r.gather[k] = -2 - ntiled  # copied a tile at a time (run_tiled)
                ntiled += 1
            elif r.packed:
                if not flat_operand(&r, k):
                    r.gather[k] = ngather
                    ngather += 1
            elif (r.strides[k * MAXD + r.nd - 1] != r.itemsize[k] or (k < ndst and red)) \
                    and not (r.direct and k >= ndst) and not (k < 64 and (inplace >> k) & 1):
                r.gather[k] = ngather
                ngather += 1
            if r.gather[k] != -1 and k >= ndst:
                # a leaf read twice (where(a > b, a, b)) is gathered once: its
                # block (tile) shared (a Fortran where into C 2x NumPy's time)
                d = same_leaf(&r, k)
                if d >= 0:
                    if r.gather[k] <= -2:
                        ntiled -= 1
                    else:
                        ngather -= 1
                    r.gather[k] = r.gather[d]
                    r.dup[k] = 1
        r.dtile = False
        if r.tpp and r.gather[0] >= 0:  # (tiles_flat: dst read across rows, ndst 1)
            r.gather[0] = -1
            ngather -= 1
            r.dtile = True
        r.ntiled = ntiled
        r.gathers = ngather
        # every row read and written where it lies: run_plain (1e6 float64
        # x*y + y*z - z, one thread: 0.70x run_block's time; in cache 0.92-0.98x)
        r.plain = (PLAIN_PASSES and prog.plain and not red and not r.packed and not r.tile
                   and not r.direct and ngather == 0 and r.insx == 0
                   and prog.nregs + prog.nscalars + nops <= PLAIN_SLOTS)
        # a NumPy loop's result written into dst's block, the cheap
        # instructions after it then in place there: dst's lines are fetched
        # while the loop computes, not in the last kernel's stream (one
        # thread, 2e6 float64, against the register: cbrt(a) + 1 0.67-0.71,
        # expm1(a) + 1 0.71-0.77 at four relative alignments of a and dst;
        # 4096: 0.80.  pyet's own kernels in run_plain's short blocks gained
        # nothing: exp(a) + 1 1.0-1.1, tanh(a)*b 0.99-1.08)
        r.dst_reg = prog.dst_reg if (apart and not red and not r.packed and not r.tile
                                     and r.gather[0] == -1) else -1
        if r.plain and r.from_memory and r.block == BLOCK // 2 and prog.float_arith \
                and units * pass_itemsizes(&r) >= 2 * SX_FAR_BYTES \
                and (PREFETCH_BYTES < 0 or units * pass_itemsizes(&r) <= PREFETCH_BYTES):
            # float kernels streaming from beyond the L3 (BLOCK // 2 above):
            # bursts of MEMORY_BURST bytes a register, as run_plain's calls are
            # cheap enough (one thread, 2e6-1e7 elements, time against BLOCK // 2,
            # geometric mean of 10 trees: float64 0.80-0.88, float32 0.81-0.91;
            # 1024 bytes 0.97-1.0, 256 bytes 1.10-1.20; integer trees lost at
            # 2e6 (int64 products 1.04-1.24), float32 under 32 MiB lost too;
            # not where the software prefetch runs (Intel: run_block's, measured
            # with BLOCK // 2))
            r.block = max(16, MEMORY_BURST // prog.max_isz)
            regbytes = r.block * MAX_REG_BYTES
        if r.packed:
            r.nblocks = (r.total + r.block - 1) // r.block
            r.nitems = r.nblocks
        else:
            r.nblocks = (r.shape[r.nd - 1] + r.block - 1) // r.block
            r.tile_lead = tile_lead(&r) if r.tile and not r.tpp else 0
            r.nitems = r.nblocks * (r.nrows if not r.tile else
                                    (r.nrows + r.tile_lead + r.tile - 1) // r.tile)
            if r.tpp:
                r.nitems = r.nrows // r.shape[r.nd - 2] * r.tpp
        if red:  # as many threads as the caller made accumulators for
            nthreads = max(1, min(red_threads, r.nitems))
            if nthreads > 1:
                # units: the outer dimensions along which no accumulator is
                # shared (the leading ones of nonzero stride in dst); split in
                # whole units, the threads share one set of accumulators, each
                # folded by one thread in the order one thread folds it
                units = 1
                for d in range(r.nd - 1):
                    if r.strides[d] == 0:
                        break
                    units *= r.shape[d]
                if units % nthreads == 0 or units >= 4 * nthreads:
                    r.red_units = units
                    r.unit_items = r.nitems // units
                elif red_stride == 0:
                    return 0  # no accumulators per thread to fold into: refused
                else:
                    nsets = nthreads  # per thread: set 0's starting values copied
                    for k in range(1, nthreads):
                        memcpy(<char *>cnp.PyArray_DATA(dst) + k * red_stride,
                               cnp.PyArray_DATA(dst), red_stride)
        else:
            nthreads = 1 if prog.has_pyfunc else threads_for(r.total, r.nitems)
            # on any number of threads: pyet's strided blocks on two threads
            # were slower than NumPy's one loop (a**-1 float32 step 2: 206 us
            # against 122 on one thread)
            # (the exact ops' loops, whole_far, on one thread up to
            # LOOP_THREADS_BYTES even where threads are allowed: memory-bound,
            # pyet's blocks on two threads were no faster than on one below it,
            # so 1.1-1.6x the loop's time: float64 ceil, reversed abs, 2^17-2^19)
            if (prog.whole_fn is not None or (prog.whole_loop != NULL and (
                    nthreads == 1 or r.total * pass_itemsizes(&r) < LOOP_THREADS_BYTES))) \
                    and not col and not lead and whole_wanted(&r, prog):
                if prog.whole_loop != NULL:
                    rc = run_loop_rows(&r, prog)
                    if rc >= 0:
                        return 0
                elif run_whole(prog, dst, leaves, scalars):
                    return 0
        r.npf = 0
        if not red and not r.packed and not r.tile and PREFETCH_BYTES >= 0 \
                and r.nblocks > PREFETCH_AHEAD and not prog.streams:
            prefetch_streams(&r)
            if r.npf:  # (run_block's prefetches)
                r.plain = False
        r.tilebuf = (prog.nregs + ngather) * regbytes
        r.scratch_bytes = (r.tilebuf + (ntiled + r.dtile) * (
            regbytes if r.tpp else r.tile * (regbytes + TILE_SKEW)) + 63) & ~(<pyet_intp>63)
        if nthreads * r.scratch_bytes + 64 <= SMALL_SCRATCH:
            r.scratch = <char *>((<uintptr_t>small_buf + 63) & ~(<uintptr_t>63))
        else:
            buf = take_scratch(nthreads * r.scratch_bytes + 64, &buf_kept)
            if buf == NULL:
                raise MemoryError()
            r.scratch = <char *>((<uintptr_t>buf + 63) & ~(<uintptr_t>63))
        r.prog = <void *>prog
        # only a user function fails midway (call_pyfunc): its exception
        errors = state = None
        r.state = NULL
        quiet = False
        if prog.has_pyfunc:
            errors = []
            # ufuncs only: NumPy's errors ignored once for the pass, not per block
            # (np.errstate costs ~1 us; their flags are the pass's, reported below)
            quiet = ufuncs_only(prog, pyfuncs)
            state = (errors, pyfuncs, quiet)
            r.state = <void *>state
        if nthreads == 1 and r.total <= GIL_HELD_PASS and not prog.has_pyfunc:
            # a tiny pass runs with the GIL held: releasing and retaking it
            # costs about as much as the pass
            rc = run_parallel(&r, prog, nthreads)
        elif quiet:
            token = quiet_numpy()
            try:
                with nogil:
                    rc = run_parallel(&r, prog, nthreads)
            finally:
                loud_numpy(token)
        else:
            with nogil:
                rc = run_parallel(&r, prog, nthreads)
        if rc < 0:
            if errors:
                raise errors[0]
            raise RuntimeError("pyet: an elementwise pass failed")
        if value_once and r.fpflags:  # (the 0-d value's: dst untouched)
            report_fp(r.fpflags)
        if col:
            if written <= GIL_HELD_PASS:
                fill_rows(dst_base, full_nd - 1 - lead, full_shape + lead, full_strides + lead,
                          full_shape[full_nd - 1], full_strides[full_nd - 1], r.itemsize[0],
                          <char *>fill_one if value_once else NULL)
            else:
                with nogil:
                    fill_rows(dst_base, full_nd - 1 - lead, full_shape + lead,
                              full_strides + lead, full_shape[full_nd - 1],
                              full_strides[full_nd - 1], r.itemsize[0],
                              <char *>fill_one if value_once else NULL)
        if lead:
            bc.base, bc.isz, bc.nout, bc.nin = dst_base, r.itemsize[0], lead, full_nd - lead
            bc.oshape, bc.ostrides = full_shape, full_strides
            bc.ishape, bc.istrides = full_shape + lead, full_strides + lead
            bc.nreps = 1
            for d in range(lead):
                bc.nreps *= full_shape[d]
            s = written * bc.nreps
            # (threads by bytes: a copy's element is cheaper than a kernel's;
            # bool 512^2 on two threads by elements took 1.3x one's time)
            nthreads = 1 if s <= GIL_HELD_PASS else threads_for(
                s * bc.isz // COPY_BYTES_PER_ELEMENT, bc.nreps - 1)
            if nthreads <= 1 and s <= GIL_HELD_PASS:
                copy_blocks(&bc, 1, bc.nreps)
            else:
                bc.nchunks = 1 if nthreads <= 1 else min(bc.nreps - 1, 8 * nthreads)
                with nogil:
                    run_chunks(copy_chunk, &bc, bc.nchunks, nthreads, &rc)
        if r.fpflags and not value_once:  # np.errstate's answer to the pass's errors
            report_fp(r.fpflags)
        return nsets if red else 0
    finally:
        if mem != <char *>small_meta:
            free(mem)
        give_scratch(buf, buf_kept)


# A pass's scratch beyond SMALL_SCRATCH, kept from one pass to the next (up to
# KEPT_SCRATCH bytes): malloc'd and freed each pass, it went back to the system
# whenever glibc trimmed its heap or mapped it alone (a state a long process
# falls into and stays in), and every pass then faulted its pages in again
# (float32 exp2 of a[::3] at 2^18: 65 page faults a pass, 0.58 -> 1.08x
# NumPy's time).  One buffer, taken and given back with the GIL held; a pass
# that runs while another thread's holds it takes malloc's.
cdef char *_kept_scratch = NULL
cdef size_t _kept_scratch_size = 0
cdef bint _kept_scratch_busy = False


cdef char *take_scratch(size_t nbytes, bint *kept):
    global _kept_scratch, _kept_scratch_size, _kept_scratch_busy
    kept[0] = False
    if nbytes > KEPT_SCRATCH or _kept_scratch_busy:
        return <char *>malloc(nbytes)
    if _kept_scratch_size < nbytes:
        free(_kept_scratch)
        _kept_scratch = <char *>malloc(nbytes)
        _kept_scratch_size = nbytes if _kept_scratch != NULL else 0
        if _kept_scratch == NULL:
            return NULL
    _kept_scratch_busy = True
    kept[0] = True
    return _kept_scratch


cdef void give_scratch(char *buf, bint kept):
    global _kept_scratch_busy
    if kept:
        _kept_scratch_busy = False
    else:
        free(buf)


# NumPy's errors ignored for a pass of its ufuncs, as np.errstate(all="ignore")
# does it in NumPy 2: a context variable set to an extobj; the one made from
# the caller's (its buffer size and error callback kept) is reused while that
# stays.  Entering np.errstate took 3-9 us a pass (sqrt of a float32
# a[:, ::2] at 2^18: 1.06x np.sqrt's time); without the private variable,
# np.errstate.
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _EXTOBJ
except ImportError:
    _EXTOBJ = None
cdef object _extobj_from = None, _extobj_quiet = None


cdef object quiet_numpy():
    """Start ignoring NumPy's errors: a token for loud_numpy."""
    global _extobj_from, _extobj_quiet
    if _EXTOBJ is None:
        ctx = np.errstate(all="ignore")
        ctx.__enter__()
        return ctx
    cur = _EXTOBJ.get()
    if cur is not _extobj_from:
        with np.errstate(all="ignore"):
            _extobj_quiet = _EXTOBJ.get()
        _extobj_from = cur
    return _EXTOBJ.set(_extobj_quiet)


cdef void loud_numpy(object token) except *:
    if _EXTOBJ is None:
        token.__exit__(None, None, None)
    else:
        _EXTOBJ.reset(token)


cdef bint whole_wanted(Run *r, Program prog) noexcept:
    # a one-op pass (Program.whole_fn) runs as NumPy's ufunc on the whole
    # arrays when an operand's rows are strided (not broadcast, not read
    # across rows: tiled; packed short rows stay pyet's), and long enough
    cdef int k
    cdef pyet_intp s
    cdef bint strided = False
    if prog.whole_contiguous:
        # an op's NumPy loop (ops.NUMPY_LOOPS) on contiguous rows: one call
        # instead of one a block (its own loop either way, so the same bits;
        # log10 float32 at 2^18 in blocks of 64 Ki: 1.15-1.3x np.log10).
        # Strided rows keep pyet's blocks (NumPy's strided loops are slower)
        if r.tile or (r.nd > 1 and r.shape[r.nd - 1] < SHORT_ROW):
            return False
        for k in range(r.nops):
            if r.strides[k * MAXD + r.nd - 1] != r.itemsize[k]:
                return False
        return _items_aligned(r)
    if r.total < (WHOLE_LOOP_MIN if prog.whole_loop != NULL else WHOLE_UFUNC_MIN) \
            or r.tile or r.packed:
        return False
    if prog.whole_loop != NULL and not _items_aligned(r):
        return False  # (a ufunc call buffers such operands; its bare loop does not)
    if prog.whole_far and not prog.whole_any_dst and r.strides[r.nd - 1] != r.itemsize[0]:
        return False  # (its loop's values into strided rows are wrong: _kernel_loop)
    # (whole_far: reversed 8-byte rows too, which NumPy's loops read in place;
    # pyet's reversed copy into a block, then the kernel, cost 1.3-2x NumPy
    # at 2^18: abs, a + b, maximum of a float64 a[::-1, ::-1])
    cdef bint near = False  # rows stepping 2 items (not far): pyet's blocks
    cdef bint bcast = True  # every input broadcast along the rows
    for k in range(r.nops):
        s = r.strides[k * MAXD + r.nd - 1]
        bcast = bcast and (k < r.ndst or s == 0)
        if s < 0 and not (prog.whole_backwards or prog.whole_far):
            return False
        if s != 0 and s != r.itemsize[k] and (not prog.whole_far or iabs(s) >= (
                2 if r.itemsize[k] == 8 else 3)
                * r.itemsize[k] or (s < 0 and r.itemsize[k] == 8 and r.itemsize[0] == 8)):
            strided = True
        elif s != 0 and s != r.itemsize[k]:
            strided = strided or prog.whole_near
            near = True
    # (near: int32 a ^ b on a[::2], NumPy's strided loop took 2x pyet's blocks;
    # 8-byte rows stepping 2 items take NumPy's loop into any result: into
    # bool (a < b) pyet's blocks were 1.04-1.48x it at 2^18 and 1448^2
    # float64 a < b on a[:, ::2] from memory 1.4-1.7x, 0.98-1.01 with the loop;
    # bcast: NumPy's loops take rows of stride-0 inputs in their scalar loop,
    # where its own calls buffer them: ~a and abs of an int32 column broadcast
    # to 1448^2 2.3x and 2.0x np.invert's and np.abs's time, 0.80-0.88 in
    # pyet's blocks (one destination: the column fill first, this is a
    # multi-output pass's); one stride-0 input beside a contiguous one is their SIMD
    # scalar case: float64 A * col 1.09 in pyet's blocks, NumPy's loop kept)
    if not strided and not near and not bcast and CONTIG_LOOPS and prog.whole_contig \
            and prog.whole_loop != NULL and (r.nd == 1 or r.shape[r.nd - 1] >= CONTIG_ROW_MIN):
        return True  # (rows contiguous)
    return strided


cdef pyet_intp pass_itemsizes(Run *r) noexcept nogil:
    # bytes a pass moves per element: its operands' item sizes
    cdef pyet_intp b = 0
    cdef int k
    for k in range(r.nops):
        b += r.itemsize[k]
    return b


cdef bint _items_aligned(Run *r) noexcept:
    # every operand's items aligned on every row (no packed record field, no
    # misaligned buffer): NumPy's inner loops, called bare, assume it (its
    # iterator buffers other operands; abs and maximum wrote wrong values and
    # beyond the field into a packed field otherwise)
    cdef int k, d
    for k in range(r.nops):
        if (<uintptr_t>r.base[k]) % r.itemsize[k]:
            return False
        for d in range(r.nd):
            if r.strides[k * MAXD + d] % r.itemsize[k]:
                return False
    return True


cdef int run_loop_rows(Run *r, Program prog) except -2:
    """run_whole without a ufunc call: Program.whole_loop called on each row
    of the merged operands, with their steps, as NumPy's iterator calls it
    (its SIMD loops read strided rows where they lie); its flags reported as
    a pass's.  -1, nothing done, for a power whose exponent is not -1."""
    cdef pyet_instr *ins = &prog.code[0]
    cdef int j, rc
    if ins.op == OP_power:  # np.reciprocal: x ** -1 only
        if ins.src_kind[1] != SRC_SCALAR or (
                (<double *>(r.scalars + 8 * ins.src[1]))[0] != -1.0 if ins.dt == DT_F64
                else (<float *>(r.scalars + 8 * ins.src[1]))[0] != -1.0):
            return -1
    cdef LoopRows lr
    lr.r, lr.fn, lr.data, lr.ins = r, prog.whole_loop, prog.whole_data, ins
    r.fpflags = 0
    if r.total <= GIL_HELD_PASS:
        rc = run_chunks(loop_rows_chunk, &lr, 1, 1, &r.fpflags)
    else:
        with nogil:
            rc = run_chunks(loop_rows_chunk, &lr, 1, 1, &r.fpflags)
    if r.fpflags:
        report_fp(r.fpflags)
    return 0


cdef struct LoopRows:
    Run *r
    np_loop fn
    void *data
    pyet_instr *ins


cdef int loop_rows_chunk(void *ctx, pyet_intp c, int slot) noexcept nogil:
    cdef LoopRows *lr = <LoopRows *>ctx
    cdef Run *r = lr.r
    cdef pyet_instr *ins = lr.ins
    cdef int nd = r.nd, nin = 1 if ins.op == OP_power else ins.nin, j, d
    cdef char *args[3]
    cdef pyet_intp *st[3]
    cdef cnp.npy_intp dims[1]
    cdef cnp.npy_intp steps[3]
    cdef pyet_intp idx[MAXD]
    cdef pyet_intp zero[MAXD]
    cdef pyet_intp row, nrows = r.total // r.shape[nd - 1], off
    for d in range(nd):
        zero[d] = 0
        idx[d] = 0
    for j in range(nin + 1):
        if j == nin:  # the destination, operand 0
            args[j], st[j] = r.base[0], r.strides
        elif ins.src_kind[j] == SRC_LEAF:
            args[j] = r.base[1 + ins.src[j]]
            st[j] = r.strides + (1 + ins.src[j]) * MAXD
        else:  # a scalar: step 0
            args[j], st[j] = r.scalars + 8 * ins.src[j], zero
        steps[j] = st[j][nd - 1]
    dims[0] = r.shape[nd - 1]
    cdef char *rowp[3]
    for row in range(nrows):
        for j in range(nin + 1):
            off = 0
            for d in range(nd - 1):
                off += idx[d] * st[j][d]
            rowp[j] = args[j] + off
        lr.fn(rowp, dims, steps, lr.data)
        d = nd - 2
        while d >= 0:
            idx[d] += 1
            if idx[d] < r.shape[d]:
                break
            idx[d] = 0
            d -= 1
    return 0


cdef int whole_chunk(void *ctx, pyet_intp c, int slot) noexcept nogil:
    # run_whole's one chunk (run_chunks reads the flags it raised)
    with gil:
        fn, args, errors = <tuple>ctx
        try:
            fn(*args)  # (out the last: positional, as NumPy parses it fastest)
            return 0
        except BaseException as exc:
            (<list>errors).append(exc)
            return -1


cdef bint run_whole(Program prog, cnp.ndarray dst, list leaves, list scalars) except -1:
    """Run a one-op program as its NumPy ufunc (prog.whole_fn) on the whole
    operands, NumPy's errors ignored and its flags reported as a pass's;
    False (nothing done) when the op's operands do not allow it."""
    cdef pyet_instr *ins = &prog.code[0]
    cdef int j, flags = 0, rc
    args = []
    for j in range(ins.nin):
        if ins.src_kind[j] == SRC_LEAF:
            args.append(leaves[ins.src[j]])
        else:  # the scalar in the program's dtype, as store_scalar has it
            v = scalars[ins.src[j]]
            t = DTYPES[prog.scalar_dt[ins.src[j]]]
            args.append(v.astype(t)[()] if isinstance(v, cnp.ndarray) else t.type(v))
    fn = prog.whole_fn
    if ins.op == OP_power:  # a scalar exponent: NumPy's reciprocal is x ** -1
        if args[1] != -1:
            return False
        args = args[:1]
    args.append(dst)
    errors = []
    state = (fn, args, errors)
    token = quiet_numpy()
    try:
        rc = run_chunks(whole_chunk, <void *>state, 1, 1, &flags)
    finally:
        loud_numpy(token)
    if rc < 0:
        raise errors[0]
    if flags:
        report_fp(flags)
    return True


# ---------------------------------------------------------------- assigning

cdef int array_dtype_code(cnp.ndarray a) except -1:
    # the dtype code from the type number: no dtype object, no dict
    cdef int t = cnp.PyArray_TYPE(a), size = cnp.PyArray_ITEMSIZE(a)
    if cnp.PyArray_ISNOTSWAPPED(a):
        if t == cnp.NPY_DOUBLE:
            return DT_F64
        if t == cnp.NPY_FLOAT:
            return DT_F32
        if t == cnp.NPY_BOOL:
            return DT_BOOL
        if t == cnp.NPY_INT or t == cnp.NPY_LONG or t == cnp.NPY_LONGLONG:
            if size == 4:
                return DT_I32
            if size == 8:
                return DT_I64
    return dtype_code(a.dtype)


cdef bint has_shape(cnp.ndarray d, tuple shape) except -1:
    # d.shape == shape, d's dims read in place (no shape tuple made, compared, freed)
    cdef Py_ssize_t i, nd = cnp.PyArray_NDIM(d)
    if len(shape) != nd:
        return False
    for i in range(nd):
        if <Py_ssize_t>shape[i] != cnp.PyArray_DIMS(d)[i]:
            return False
    return True


cdef check_target(Expr e, cnp.ndarray dst, int dst_dt):
    # (dst's dims read in place: no shape tuple unless it fails)
    cdef tuple es = e.shape
    cdef Py_ssize_t ne = len(es), nd = cnp.PyArray_NDIM(dst), i, n
    cdef bint fits = ne <= nd
    if fits:
        for i in range(ne):
            n = es[i]
            if n != 1 and n != cnp.PyArray_DIMS(dst)[nd - ne + i]:
                fits = False
                break
    if not fits:
        raise ValueError(f"cannot evaluate an expression of shape {fmt_shape(es)} into a "
                         f"destination of shape {fmt_shape((<object>dst).shape)}")
    cdef bint ok
    cdef int weak = weak_of(e)
    if weak == 1:
        ok = dst_dt != DT_BOOL
    elif weak == 2:
        ok = dst_dt == DT_F32 or dst_dt == DT_F64
    else:
        ok = CAN_CAST[e._dt][dst_dt]
    if not ok:
        raise TypeError(f"cannot cast the expression's {DTYPES[e._dt]} result to the "
                        f"destination's {DTYPES[dst_dt]} with casting rule 'same_kind'")


def folds_across_rows(Expr child, axes):
    """True when a reduction's pass over ``child`` walks a kept axis
    innermost, so that each block folds elementwise into a row of
    accumulators: the innermost axis (least |stride|, size > 1) of the leaf
    whose memory order the pass follows (reduce_key's: the first leaf, in
    collect()'s order, broadcast along the fewest axes) is not reduced."""
    cdef int nd = len(child.shape), lead, d, zeros, fewest = nd + 1, inner = -1
    cdef pyet_intp best[MAXD]
    cdef pyet_intp st[MAXD]
    cdef pyet_intp s
    cdef list stack = [child]
    cdef set seen = set()
    cdef Expr x
    cdef cnp.ndarray arr
    cdef tuple shape = child.shape
    while stack:  # leaves left to right, as the program numbers them
        x = <Expr>stack.pop()
        if x._op == OP_leaf:
            arr = <cnp.ndarray>(<Tensor>x)._array
            lead = nd - cnp.PyArray_NDIM(arr)
            zeros = 0
            for d in range(nd):
                if d < lead or cnp.PyArray_DIMS(arr)[d - lead] == 1:
                    s = 0
                else:
                    s = cnp.PyArray_STRIDES(arr)[d - lead]
                st[d] = s
                if shape[d] > 1 and s == 0:
                    zeros += 1
            if zeros < fewest:
                fewest = zeros
                for d in range(nd):
                    best[d] = st[d]
        elif x._args and id(x) not in seen:
            seen.add(id(x))
            stack.extend(reversed(x._args))
    if fewest > nd:
        return False
    for d in range(nd):  # the first of the least |stride|
        if shape[d] > 1 and best[d] != 0 and (inner < 0 or iabs(best[d]) < iabs(best[inner])):
            inner = d
    return inner >= 0 and inner not in axes


def add_compensations(cnp.ndarray accs, pyet_intp size, int nthreads):
    """Compensated float64 sums (``accs`` C-ordered float64: per thread, size
    accumulators then their compensations): each compensation added to its
    finite accumulator (after an inf the compensation is nan: left out)."""
    cdef double *a = <double *>cnp.PyArray_DATA(accs)
    cdef double *c
    cdef pyet_intp i
    cdef int t
    if cnp.PyArray_TYPE(accs) != cnp.NPY_DOUBLE or not cnp.PyArray_IS_C_CONTIGUOUS(accs) \
            or cnp.PyArray_SIZE(accs) < 2 * size * nthreads:
        raise ValueError("add_compensations takes C-ordered float64 accumulators")
    for t in range(nthreads):
        c = a + size
        for i in range(size):
            if isfinite(a[i]):
                a[i] += c[i]
        a += 2 * size
    return None


def fold_store(cnp.ndarray out, cnp.ndarray accs, cnp.ndarray view, Expr e, int red,
               pyet_intp size, bint compensated, double count):
    """_Fold.result on one thread, stored into ``out``, in one call: the
    float64 accumulators ``accs`` (size of them, then as many compensations
    when ``compensated``) zeroed, e folded into them through ``view``, the
    compensations added, each divided by ``count`` (a mean; 1 otherwise) and
    stored into the C-ordered float32 or float64 ``out`` (size elements) as
    NumPy casts.  The Python steps of the same cost ~2 us of a small sum's 3.
    Returns False, out not written, for anything else."""
    cdef int out_dt = array_dtype_code(out)
    cdef pyet_intp i
    cdef double *a
    cdef double *c
    if (out_dt != DT_F32 and out_dt != DT_F64) or cnp.PyArray_TYPE(accs) != cnp.NPY_DOUBLE \
            or not cnp.PyArray_IS_C_CONTIGUOUS(out) or not cnp.PyArray_ISALIGNED(out) \
            or not cnp.PyArray_ISWRITEABLE(out) or cnp.PyArray_SIZE(out) != size \
            or not cnp.PyArray_IS_C_CONTIGUOUS(accs) \
            or cnp.PyArray_SIZE(accs) < size * (2 if compensated else 1) or size == 0:
        return False
    a = <double *>cnp.PyArray_DATA(accs)
    memset(a, 0, size * (2 if compensated else 1) * sizeof(double))
    if reduce_into(view, e, red, 1, 0, size * sizeof(double) if compensated else 0) != 1:
        return False
    c = a + size
    cdef char *o = <char *>cnp.PyArray_DATA(out)
    cdef bint overflow = False
    cdef float f
    for i in range(size):
        if compensated and isfinite(a[i]):
            a[i] += c[i]
        if count != 1:
            a[i] /= count
        if out_dt == DT_F32:
            f = <float>a[i]
            overflow |= not isfinite(f) and isfinite(a[i])  # (NumPy's cast warns)
            (<float *>o)[i] = f
        else:
            (<double *>o)[i] = a[i]
    if overflow:
        report_fp(PYET_FP_OVERFLOW)
    return True


def reduce_threads(pyet_intp size):
    """How many threads a reduction of size elements should use: as many as
    the thread pool would run it on now (fewer on a busy machine)."""
    return pool_threads(threads_for(size, size))


cdef char *dense_start(cnp.ndarray a) noexcept:
    # the lowest address of a's memory when it is one run of its elements
    # (its axes, reversed or not, tile it in some order), else NULL
    cdef int nd = cnp.PyArray_NDIM(a), m = 0, i, j
    cdef pyet_intp st[MAXD]
    cdef pyet_intp sz[MAXD]
    cdef pyet_intp s, n, step = cnp.PyArray_ITEMSIZE(a)
    cdef char *p = <char *>cnp.PyArray_DATA(a)
    if nd > MAXD:
        return NULL
    for i in range(nd):
        n = cnp.PyArray_DIMS(a)[i]
        s = cnp.PyArray_STRIDES(a)[i]
        if n == 1:
            continue
        if s < 0:
            p += s * (n - 1)
            s = -s
        j = m  # insertion by stride, ascending
        while j > 0 and st[j - 1] > s:
            st[j] = st[j - 1]
            sz[j] = sz[j - 1]
            j -= 1
        st[j] = s
        sz[j] = n
        m += 1
    for i in range(m):
        if st[i] != step:
            return NULL
        step *= sz[i]
    return p


def fold_flat(cnp.ndarray dst, cnp.ndarray src, int red):
    """Fold every value of ``src`` into ``dst``'s one element on this thread:
    a whole float32/float64 max or min (``red``) of an array whose memory is
    one aligned run (C- or Fortran-contiguous, or any order of its axes, each
    either way: x[::-1, :, ::-1], x.transpose(2, 0, 1)), as one kernel call
    over it, in any order (max and min do not depend on it).  The plan's
    set-up (view of dst, program, pass) was ~8 us of a 64^3 float32 max's
    ~30; a reversed float64 64^3 went through the pass's gathers (1.9x
    NumPy).  Returns False, nothing written, for anything else; the value
    lands in dst after the whole of src is read (dst may overlap it)."""
    cdef int dt = array_dtype_code(src)
    cdef pyet_intp n = cnp.PyArray_SIZE(src)
    cdef double acc64
    cdef float acc32
    cdef char *acc = <char *>&acc64 if dt == DT_F64 else <char *>&acc32
    cdef char *start = <char *>cnp.PyArray_DATA(src)
    if (red != RED_MAX and red != RED_MIN) or (dt != DT_F32 and dt != DT_F64) or n == 0 \
            or cnp.PyArray_SIZE(dst) != 1 or cnp.PyArray_TYPE(dst) != cnp.PyArray_TYPE(src) \
            or not cnp.PyArray_ISWRITEABLE(dst) or not cnp.PyArray_ISALIGNED(src):
        return False
    if not (cnp.PyArray_IS_C_CONTIGUOUS(src) or cnp.PyArray_IS_F_CONTIGUOUS(src)):
        start = dense_start(src)
        if start == NULL:
            return False
    acc64 = -INFINITY if red == RED_MAX else INFINITY
    acc32 = <float>acc64
    cdef bint quiet = invalid_unset()
    with nogil:
        pyet_reduce_store(red, dt, n, acc, 0, 0, start)
    quiet_fold(quiet)
    memcpy(cnp.PyArray_DATA(dst), acc, cnp.PyArray_ITEMSIZE(dst))  # (dst may be unaligned)
    return True


cdef bint _rows_apart(cnp.ndarray dst, cnp.ndarray src, int k, pyet_intp *nrows,
                      pyet_intp *inner) noexcept:
    # src's axes before k as rows of the rest's size (nrows, inner; both
    # nonzero, 1 <= k < ndim), src and dst of one dtype, aligned, C-contiguous,
    # dst writeable and apart from src: what fold_rows reads
    # and write; False for anything else
    cdef int nd = cnp.PyArray_NDIM(src), d
    if k < 1 or k >= nd or cnp.PyArray_TYPE(dst) != cnp.PyArray_TYPE(src) \
            or not cnp.PyArray_ISWRITEABLE(dst) or not cnp.PyArray_ISALIGNED(dst) \
            or not cnp.PyArray_ISALIGNED(src) or not cnp.PyArray_IS_C_CONTIGUOUS(src) \
            or not cnp.PyArray_IS_C_CONTIGUOUS(dst):
        return False
    nrows[0] = inner[0] = 1
    for d in range(nd):
        if d < k:
            nrows[0] *= cnp.PyArray_DIMS(src)[d]
        else:
            inner[0] *= cnp.PyArray_DIMS(src)[d]
    return nrows[0] != 0 and inner[0] != 0 and not _bounds_overlap(dst, src)


cdef bint _one_run(cnp.ndarray a, int skip, pyet_intp *nrows, pyet_intp *step) noexcept:
    # a's axes but ``skip`` (-1: none) as one run of nrows rows ``step`` bytes
    # apart: each longer than 1 a whole number of the next one's steps
    cdef int d
    cdef pyet_intp n
    nrows[0], step[0] = 1, 0
    for d in range(cnp.PyArray_NDIM(a)):
        n = cnp.PyArray_DIMS(a)[d]
        if d == skip or n == 1:
            continue
        if nrows[0] > 1 and step[0] != cnp.PyArray_STRIDES(a)[d] * n:
            return False
        step[0] = cnp.PyArray_STRIDES(a)[d]
        nrows[0] *= n
    return True


def kept_run(cnp.ndarray src, int axis):
    """Whether ``src``'s axes but ``axis`` are one run of rows, as arg_rows
    and fold_short_rows take them (asked once per layout: they refuse the
    others on every call)."""
    cdef pyet_intp nrows, step
    return _one_run(src, axis, &nrows, &step)


cdef bint _kept_rows(cnp.ndarray dst, cnp.ndarray src, int axis, pyet_intp *nrows,
                     pyet_intp *rs, pyet_intp *os) noexcept:
    # src's axes but ``axis`` and dst's (the kept axes' shape) each one run
    # of nrows rows (_one_run), rs bytes apart in src and os in dst; dst
    # aligned, writeable and apart from src, src aligned and in native byte
    # order, neither empty; False for anything else
    cdef int nd = cnp.PyArray_NDIM(src), d, j = 0
    cdef pyet_intp drows
    if not 0 <= axis < nd or cnp.PyArray_NDIM(dst) != nd - 1 \
            or not cnp.PyArray_ISWRITEABLE(dst) or not cnp.PyArray_ISALIGNED(dst) \
            or not cnp.PyArray_ISALIGNED(src) or not cnp.PyArray_ISNOTSWAPPED(src) \
            or cnp.PyArray_SIZE(src) == 0:
        return False
    for d in range(nd):
        if d != axis:
            if cnp.PyArray_DIMS(src)[d] != cnp.PyArray_DIMS(dst)[j]:
                return False
            j += 1
    return (_one_run(src, axis, nrows, rs) and _one_run(dst, -1, &drows, os)
            and not _bounds_overlap(dst, src))


def arg_rows(cnp.ndarray dst, cnp.ndarray src, int red, int axis):
    """argmax or argmin (``red``) of ``src`` along ``axis`` into int64
    ``dst`` (the kept axes' shape) on this thread, one row after another
    (pyet_arg_rows): for short axes, where NumPy calls its loop once a row
    and the pass folds each row by itself.  Any strides of src and dst
    whose kept axes merge into one run of rows in both.  Returns False,
    nothing written, for anything else (dst overlapping src, misaligned,
    read-only, not int64)."""
    cdef int dt
    cdef pyet_intp nrows, rs, os
    if (red != RED_ARGMAX and red != RED_ARGMIN) or cnp.PyArray_TYPE(dst) != cnp.NPY_INT64 \
            or not _kept_rows(dst, src, axis, &nrows, &rs, &os):
        return False
    dt = array_dtype_code(src)  # (after _kept_rows: a byte-swapped src refused, not raised)
    cdef const char *data = <const char *>cnp.PyArray_DATA(src)
    cdef char *out = <char *>cnp.PyArray_DATA(dst)
    cdef pyet_intp k = cnp.PyArray_DIMS(src)[axis], cs = cnp.PyArray_STRIDES(src)[axis]
    with nogil:
        pyet_arg_rows(red, dt, nrows, k, data, rs, cs, out, os)
    return True


def fold_short_rows(cnp.ndarray dst, cnp.ndarray src, int red, int axis):
    """max, min, any or all of ``src`` along ``axis``, or an integer or bool
    sum or product (``red``), into ``dst`` (the kept axes' shape; src's
    dtype, bool for any/all, int64 for sums and products) on this thread:
    each row one fold of its contiguous values (pyet_fold_each_row), where
    NumPy calls its loop once a row.  ``axis`` contiguous in src (its step
    the itemsize), the kept axes one run of rows in src and dst (any
    strides).  Returns False, nothing written, for anything else."""
    cdef int dt, done
    cdef int want = cnp.PyArray_TYPE(src)
    cdef pyet_intp nrows, rs, os
    if red == RED_ANY or red == RED_ALL:
        want = cnp.NPY_BOOL
    elif red == RED_SUM or red == RED_PROD:
        want = cnp.NPY_INT64
    if cnp.PyArray_TYPE(dst) != want or not _kept_rows(dst, src, axis, &nrows, &rs, &os) \
            or cnp.PyArray_STRIDES(src)[axis] != cnp.PyArray_ITEMSIZE(src):
        return False
    dt = array_dtype_code(src)  # (after _kept_rows: a byte-swapped src refused, not raised)
    cdef const char *data = <const char *>cnp.PyArray_DATA(src)
    cdef char *out = <char *>cnp.PyArray_DATA(dst)
    cdef pyet_intp k = cnp.PyArray_DIMS(src)[axis]
    cdef bint quiet = invalid_unset()
    with nogil:
        done = pyet_fold_each_row(red, dt, nrows, k, data, rs, out, os)
    quiet_fold(quiet)
    return done != 0


def fold_rows(cnp.ndarray dst, cnp.ndarray src, int red, int k):
    """A float32/float64 max, min or sum (int32/int64 max or min) of a
    C-contiguous leaf over its k leading axes into C-contiguous ``dst`` (the
    rest's size, src's dtype, disjoint from it) on this thread: its rows
    folded into dst in order, four at a time, as the pass's run_items does,
    without the pass's set-up (a sum adds row after row from 0, NumPy's
    order over leading axes: its bits).  Returns False, nothing written, for
    anything else."""
    cdef int dt = array_dtype_code(src)
    cdef pyet_intp nrows, inner
    if (red != RED_MAX and red != RED_MIN and red != RED_SUM) or not (
            dt == DT_F32 or dt == DT_F64 or (red != RED_SUM and (dt == DT_I32 or dt == DT_I64))) \
            or not _rows_apart(dst, src, k, &nrows, &inner) or cnp.PyArray_SIZE(dst) != inner:
        return False
    cdef char *out = <char *>cnp.PyArray_DATA(dst)
    cdef const char *rows = <const char *>cnp.PyArray_DATA(src)
    cdef pyet_intp rowbytes = inner * cnp.PyArray_ITEMSIZE(src)
    cdef bint quiet = invalid_unset()
    cdef int before = pyet_fs_get(), raised
    if red == RED_SUM:  # its flags are NumPy's reduce's (inf - inf, overflow): reported
        pyet_fs_clear(before)
    with nogil:
        # a sum from 0.0 (a column of -0.0 sums to 0.0, as NumPy's); max and
        # min from the first row, the others folded into it (the same values:
        # max(-inf, x) is x); a fill loop here was ~6 us of a (1, 33333)
        # float64 fold's 14
        if red == RED_SUM:
            memset(out, 0, rowbytes)
            pyet_reduce_rows(red, dt, nrows, inner, out, rows, rowbytes)
        else:
            memcpy(out, rows, rowbytes)
            if nrows > 1:
                pyet_reduce_rows(red, dt, nrows - 1, inner, out, rows + rowbytes, rowbytes)
    if red != RED_SUM:
        quiet_fold(quiet)
        return True
    raised = pyet_fs_get()
    pyet_fs_clear(raised)
    pyet_fs_set(before)
    report_fp((PYET_FP_INVALID if raised & PYET_FS_INVALID else 0)
              | (PYET_FP_OVERFLOW if raised & PYET_FS_OVERFLOW else 0))
    return True


def reduce_into(cnp.ndarray acc, Expr e, int red, int nthreads=1, pyet_intp stride=0,
                pyet_intp comp=0, cnp.ndarray index=None):
    """Fold e's values into ``acc``, a view of the accumulators with e's shape
    and zero strides along the reduced axes (the caller initializes them).
    With nthreads > 1, the threads share acc when each accumulator is folded
    by one of them (the pass splits outer dimensions of acc's nonzero
    strides: the result is one thread's, bit for bit); else thread t folds
    into the accumulators ``t * stride`` bytes further on, which start as a
    copy of the first ``stride`` bytes at acc (the caller initializes those
    only, and combines the sets after).  Returns the number of sets folded
    into (1: shared or one thread), 0 when stride is 0 and the threads could
    not share (nothing is read or written then).  Float64 sums take a
    compensation term ``comp`` bytes after each accumulator (zeroed by the
    caller, added to it after); argmax and argmin keep there the int64 index
    of the accumulated value, read from ``index`` (int64, broadcast to e's
    shape)."""
    cdef int acc_dt = array_dtype_code(acc)
    if red == RED_SUM and e._dt == DT_F32 and acc_dt == DT_F64:
        acc_dt, red = DT_F32, RED_SUM_WIDE  # widened as they are folded: no cast pass
    cdef Program prog = get_program(e, acc_dt)
    cdef list leaves = [], scalars = [], pyfuncs = []
    collect(e, leaves, scalars, pyfuncs)
    if red == RED_ARGMAX or red == RED_ARGMIN:
        if index is None or index.dtype != np.int64:
            raise TypeError("argmax and argmin fold an int64 index array")
        leaves.append(index)
    return execute(prog, acc, leaves, scalars, pyfuncs, red, nthreads, stride, comp)
