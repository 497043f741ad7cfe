# Running a program (MShadow's Plan::Eval, block by block): the pass's sizes
# and switches, the Run a pass is described by, and the runners that walk its
# rows in blocks, packed rows and tiles, on the pool's threads with the GIL
# released.  Leaves whose row is strided or broadcast are gathered into a
# block first, so every kernel loop is contiguous and vectorizes.

DEF MAXD = 64          # NumPy 2's largest ndim
DEF MAX_REG_BYTES = 8  # largest itemsize
DEF PLAIN_SLOTS = 512  # run_plain's operand table: registers, scalars and operands

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
# a compute-bound kernel on strided leaves runs in pieces of this many bytes
# of input, each gathered just before (run_block)
cdef pyet_intp GATHER_PIECE = 1024
DEF TILE_SKEW = 64  # bytes added to a tile buffer's row pitch (run_tiled)
DEF TILE_DIRECT_ROWS = 16  # at most this many rows of dst = A.T copied straight into dst


def set_gather_piece(pyet_intp nbytes):
    """Bytes of input per gathered piece of a compute-bound kernel (a tuning
    knob; more than a block turns the pieces off).  Returns the old value."""
    global GATHER_PIECE
    old, GATHER_PIECE = GATHER_PIECE, max(nbytes, 128)
    return old


def set_prefetch(pyet_intp min_bytes, pyet_intp ahead=2):
    """Prefetch in passes over more than ``min_bytes`` of operands, ``ahead``
    blocks ahead (a tuning knob; -1 turns it off)."""
    global PREFETCH_BYTES, PREFETCH_AHEAD
    PREFETCH_BYTES, PREFETCH_AHEAD = min_bytes, max(ahead, 1)


def get_prefetch():
    """(min_bytes, ahead), as set_prefetch takes them."""
    return PREFETCH_BYTES, PREFETCH_AHEAD


def set_block_size(pyet_intp n):
    """Set the number of elements per block (a tuning knob; default 512)."""
    global BLOCK
    if n < 16:
        raise ValueError(f"block size must be at least 16, got {n}")
    BLOCK = n


def get_block_size():
    return BLOCK


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
    uint64_t once_instr     # packed: bit i, instruction i computed on a chunk's first row
    uint64_t once_tile      # registers (bits) once_instr wrote that others read: the row tiled
    uint64_t row_instr      # packed whole rows: bit i, instruction i computed one element a row
    uint64_t col_compact    # operands (bits): columns gathered one element a row (plan_columns)
    uint64_t col_expand     # of those, filled along the rows after row_instr
    uint64_t reg_expand     # registers (bits) row_instr wrote, filled along the rows likewise
    uint64_t reg_compact    # registers (bits) row_instr wrote that stay one element a row
    uint64_t row_scalar     # bit i: instruction i reads one of them as its scalar, a row at a time
    int pfk[MAX_PREFETCH]


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


cdef int report_status(int raised) except -1:
    # report_fp for flags read from the floating-point status (PYET_FS_*)
    if not raised:
        return 0
    return report_fp((PYET_FP_INVALID if raised & PYET_FS_INVALID else 0)
                     | (PYET_FP_DIVIDE if raised & PYET_FS_DIVIDE else 0)
                     | (PYET_FP_OVERFLOW if raised & PYET_FS_OVERFLOW else 0)
                     | (PYET_FP_UNDERFLOW if raised & PYET_FS_UNDERFLOW else 0))


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


DEF COPY_RUN_BYTES = 8192  # repeat_block: the run copied again once this long


cdef void repeat_block(char *dst, const char *src, pyet_intp size, pyet_intp n) noexcept nogil:
    # n copies of the size-byte block at src side by side from dst (src is
    # dst or lies outside them): runs growing to COPY_RUN_BYTES, then that run again, a
    # source still in L1 (a call a row of 2 float64 was 6.7x the pass
    # computing them; doubling to the end read its own megabytes back:
    # float64 512^2 1.46x, 0.9 with the run)
    cdef pyet_intp have = 1, run = 1, c
    if n <= 0:
        return
    memmove(dst, src, size)
    while have < n:
        c = min(run, n - have)
        memmove(dst + have * size, dst, c * size)
        have += c
        if run * size < COPY_RUN_BYTES:
            run = have


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


cdef inline void call_row(pyet_instr *ins, pyet_intp n, void *out, void **inp,
                          int *route) noexcept nogil:
    # a row runner's kernel call, its quiet flags the runner's (taken once):
    # the first asks pyet_kernel_routed whether pyet_kernel goes straight to
    # its narrow loops (*route: 0 not asked, 1 straight, 2 not), the later
    # ones go there directly (the choice does not depend on the scalars'
    # values for the ops the row runners take with a changing scalar)
    cdef int straight
    if route[0] == 1:
        pyet_kernel_narrow(ins.op, ins.dt, ins.sflags, n, out, inp)
    elif route[0] == 2:
        pyet_kernel(ins.op, ins.dt, ins.sflags, n, out, inp)
    else:
        pyet_kernel_routed(ins.op, ins.dt, ins.sflags, n, out, inp, &straight)
        route[0] = 1 if straight else 2


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


cdef void row_scalar_rows(Run *r, pyet_instr *ins, pyet_intp n, void *out,
                          void **inp) noexcept nogil:
    # instruction ins on a block of whole rows, its input holding one element
    # a row (a register of r.reg_compact) the kernel's scalar a row at a time:
    # not filled along the rows first (float64 A * tanh(c) of (181, 181):
    # 133.7K -> 109.6K instructions; into big[:, ::2] 1.14 -> 0.91x NumPy)
    cdef pyet_intp m = r.shape[r.nd - 1], rows = n // m, w
    cdef int j, one = 0, route = 0, isz = pyet_itemsize[ins.dt]
    cdef int osz = pyet_itemsize[ins.dt_out], before = quiet_start(ins.op)
    cdef pyet_instr row_ins = ins[0]
    cdef void *row_in[PYET_MAX_IN]
    for j in range(ins.nin):
        if ins.src_kind[j] == SRC_REG and (r.reg_compact >> ins.src[j]) & 1:
            one = j
    row_ins.sflags |= 1 << one
    for w in range(rows):
        for j in range(ins.nin):
            row_in[j] = <char *>inp[j] + (w * isz if j == one else w * m * isz)
        call_row(&row_ins, m, <char *>out + w * m * osz, row_in, &route)
    quiet_end(ins.op, before)


cdef int run_block(Run *r, Program prog, pyet_intp n, char **ptr, char *regs,
                   uint64_t *route, char **pf=NULL, pyet_intp pfn=0,
                   uint64_t skip=0) noexcept nogil:
    """Evaluate the program on one block of n elements at ptr (per operand),
    with this thread's registers.  With pf, the r.npf operand blocks there
    (pfn elements each) are prefetched meanwhile, in slices: the memory
    stream keeps flowing while kernels that read no memory compute, as in a
    loop that keeps each element in registers.  Compute-bound instructions
    (divisions, square roots, exp...) leave the memory idle longest: they run
    in pieces of PREFETCH_PIECE elements with a slice after each (a burst
    before the instruction stalls on the line fill buffers, then the memory
    waits for the next one); a program with none takes a slice before each
    instruction.  Instructions of skip (bits, the first 64) are not run: their
    registers hold what they computed for an earlier block."""
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
                # (a column's fill has no loads to overlap: a kernel call a
                # piece for nothing; float64 a ** b of a column a, 512^2:
                # 1.17 -> NumPy's time)
                pieces = pieces or r.strides[k * MAXD + r.nd - 1] != 0
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
        if skip and i < 64 and (skip >> i) & 1:
            continue
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
        if i < 64 and (r.row_scalar >> i) & 1:  # a register of one element a row
            row_scalar_rows(r, ins, n, out, inp)
        elif i < 64 and (r.insx >> i) & 1:  # strided leaves read where they lie
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
            elif call_pyfunc(r.prog, r.state, i, ni, out, inp) < 0:
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
    cdef pyet_intp inner = r.shape[r.nd - 1], regbytes = r.block * MAX_REG_BYTES, blk, x0, n, ni
    cdef int i, j, k, nops = r.nops, last = r.nd - 1
    cdef const short *sl
    cdef pyet_instr *ins
    cdef uint64_t route[2]  # (call_routed)
    route[0] = route[1] = 0
    for k in range(prog.nregs):
        slot[k] = regs + k * regbytes
    for k in range(prog.nscalars):
        slot[prog.nregs + k] = r.scalars + 8 * k
    if prog.ninstr == 1 and r.nblocks == 1 and prog.code[0].op != OP_pyfunc \
            and prog.code[0].out < 0:
        return plain_rows(r, prog, w0, w1, slot)
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
            # (a direct pass's (Program.direct_ok) NumPy loops, and its
            # instructions on scalars only: one value computed, then repeated)
            ni = 1 if n > 1 and scalars_only(ins) else n
            if ins.op == OP_cast:
                pyet_cast(ins.dt, ins.dt_out, ni, slot[sl[PYET_MAX_IN]], inp[0])
            elif ins.op == OP_pyfunc:
                call_np_loop(prog, i, ins, ni, slot[sl[PYET_MAX_IN]], inp)
            else:
                call_routed(ins, ni, slot[sl[PYET_MAX_IN]], inp, route, i)
            if ni < n:
                repeat_first(<char *>slot[sl[PYET_MAX_IN]], pyet_itemsize[ins.dt_out], n)
        blk += 1
        if blk == r.nblocks:
            blk = 0
            next_row(r, idx, row)
    return 0


cdef int plain_rows(Run *r, Program prog, pyet_intp w0, pyet_intp w1,
                    void **slot) noexcept nogil:
    """run_plain for one instruction writing dst, rows w0 <= w < w1 of one
    block each: the kernel a row, its operands a row apart, its loop chosen
    and its quiet flags taken once (~a of (179, 181) rows 184 bytes apart:
    ~190 -> ~80 instructions a row around the kernel's call)."""
    cdef pyet_instr *ins = &prog.code[0]
    cdef const short *sl = prog.slots
    cdef int j, k, nin = ins.nin, first = prog.nregs + prog.nscalars, route = 0
    cdef int opk[PYET_MAX_IN]
    cdef void *inp[PYET_MAX_IN]
    cdef char *row[256]
    cdef pyet_intp idx[MAXD], n = r.shape[r.nd - 1]
    cdef int before = quiet_start(ins.op)
    for j in range(nin):  # an operand's row, or a scalar's slot (-1)
        opk[j] = sl[j] - first if sl[j] >= first else -1
        inp[j] = slot[sl[j]]
    k = sl[PYET_MAX_IN] - first  # (dst's operand)
    first_row(r, w0, idx, row)
    for _ in range(w0, w1):
        for j in range(nin):
            if opk[j] >= 0:
                inp[j] = row[opk[j]]
        if ins.op == OP_cast:
            pyet_cast(ins.dt, ins.dt_out, n, row[k], inp[0])
        else:
            call_row(ins, n, row[k], inp, &route)
        next_row(r, idx, row)
    quiet_end(ins.op, before)
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
                      bint scatter, bint again=False, char *block=NULL) noexcept nogil:
    """Packed blocks: gather the n elements from flat position p0 (C order over
    the merged dimensions) of every operand that is not flat into its block
    (again: but the row broadcasts gathered for an earlier block), or
    (scatter) write the destination's block back (its whole rows at once);
    with block, the one operand's block is there (dst = a leaf: the leaf's
    elements, or dst's)."""
    cdef int nd = r.nd, d, k, k0 = 1, k1 = r.nops, isz, skip = r.nonce if again else 0
    cdef pyet_intp idx[MAXD]
    cdef char *row[256]
    cdef pyet_intp inner = r.shape[nd - 1], rest = p0 // inner, x = p0 % inner, off = 0
    cdef pyet_intp seg, s, regbytes = r.block * MAX_REG_BYTES
    if scatter:
        k0, k1 = 0, 1
        if block == NULL:
            block = gathered + r.gather[0] * regbytes
    for k in range(k0, k1):
        row[k] = r.base[k]
    for d in range(nd - 2, -1, -1):
        idx[d] = rest % r.shape[d]
        rest //= r.shape[d]
        for k in range(k0, k1):
            row[k] += idx[d] * r.strides[k * MAXD + d]
    while True:
        if x == 0 and n - off >= 2 * inner:
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
                if scatter:
                    pyet_scatter_rows(row[k], r.strides[k * MAXD + nd - 2],
                                      r.strides[k * MAXD + nd - 1], block + off * isz, seg,
                                      inner, isz)
                    continue
                if k < 64 and (r.col_compact >> k) & 1:  # one element a row
                    pyet_copy_strided(gathered + r.gather[k] * regbytes + off // inner * isz,
                                      isz, row[k], r.strides[k * MAXD + nd - 2], seg, isz)
                    continue
                pyet_copy_rows((block if block != NULL else gathered + r.gather[k] * regbytes)
                               + off * isz, row[k], r.strides[k * MAXD + nd - 2],
                               r.strides[k * MAXD + nd - 1], seg, inner, isz)
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
                    pyet_copy_strided(row[k] + x * s, s, block + off * isz, isz, seg, isz)
                elif k < 64 and (r.col_compact >> k) & 1:  # (whole rows: x == 0)
                    memcpy(gathered + r.gather[k] * regbytes + off // inner * isz, row[k], isz)
                else:
                    pyet_copy_strided((block if block != NULL else
                                       gathered + r.gather[k] * regbytes) + off * isz, isz,
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
    cdef pyet_intp p0, n, rows, regbytes = r.block * MAX_REG_BYTES
    cdef char *gathered = regs + prog.nregs * regbytes
    cdef pyet_intp w
    cdef int k
    cdef uint64_t skip
    cdef uint64_t route[2]  # (call_routed)
    route[0] = route[1] = 0
    if prog.copies_leaf and (r.gather[0] >= 0) != (r.gather[1] >= 0) \
            and r.itemsize[0] == r.itemsize[1] and not r.nonce and not r.row_instr:
        # dst = a leaf, one of them flat: the other's elements copied
        # straight from (into) it, no block between (C (32768, 2) into
        # Fortran order, x NumPy: float64 1.44 -> 0.86, float32 0.70 -> 0.43)
        for w in range(w0, w1):
            p0 = w * r.block
            n = r.total - p0 if r.total - p0 < r.block else r.block
            if r.gather[0] >= 0:
                packed_copy(r, p0, n, gathered, True, False, r.base[1] + p0 * r.itemsize[1])
            else:
                packed_copy(r, p0, n, gathered, False, False, r.base[0] + p0 * r.itemsize[0])
        return 0
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
        if r.once_instr and w == w0:  # the row's own values once, tiled over the block
            if run_block(r, prog, r.shape[r.nd - 1], ptr, regs, route, NULL, 0,
                         ~r.once_instr) < 0:
                return -1
            tile_rows(r, prog, regs)
        skip = r.once_instr
        if r.row_instr:  # one element a row first, then filled along the rows
            rows = n // r.shape[r.nd - 1]
            if run_block(r, prog, rows, ptr, regs, route, NULL, 0, ~r.row_instr | skip) < 0:
                return -1
            fill_columns(r, prog, rows, regs, gathered)
            skip |= r.row_instr
        if run_block(r, prog, n, ptr, regs, route, NULL, 0, skip) < 0:
            return -1
        if r.gather[0] >= 0:
            packed_copy(r, p0, n, gathered, True)
    return 0


DEF FILL_ROWS_MAX = 512


cdef void tile_rows(Run *r, Program prog, char *regs) noexcept nogil:
    # once_instr's registers that other instructions read: their first row
    # copied to the block's other rows
    cdef pyet_intp regbytes = r.block * MAX_REG_BYTES, row
    cdef pyet_intp rows = r.block // r.shape[r.nd - 1]
    cdef char *buf
    cdef int i
    for i in range(prog.ninstr):
        if (r.once_instr >> i) & 1 and (r.once_tile >> prog.code[i].out) & 1:
            buf = regs + prog.code[i].out * regbytes
            row = r.shape[r.nd - 1] * pyet_itemsize[prog.code[i].dt_out]
            repeat_block(buf + row, buf, row, rows - 1)


cdef void fill_columns(Run *r, Program prog, pyet_intp rows, char *regs,
                       char *gathered) noexcept nogil:
    # the compact columns and row_instr's registers that other instructions
    # read, one element a row, filled along their rows
    cdef pyet_intp regbytes = r.block * MAX_REG_BYTES
    cdef int k, i
    for k in range(r.ndst, min(r.nops, 64)):
        if (r.col_expand >> k) & 1 and not r.dup[k]:
            fill_rows_from(gathered + r.gather[k] * regbytes, r.itemsize[k], rows,
                           r.shape[r.nd - 1])
    for i in range(prog.ninstr):
        if (r.row_instr >> i) & 1 and (r.reg_expand >> prog.code[i].out) & 1:
            fill_rows_from(regs + prog.code[i].out * regbytes,
                           pyet_itemsize[prog.code[i].dt_out], rows, r.shape[r.nd - 1])


cdef inline void fill_rows_from(char *buf, int isz, pyet_intp rows, pyet_intp m) noexcept nogil:
    # rows of m items, row i every item buf[i]: one copy_rows a chunk of
    # FILL_ROWS_MAX rows from a copy of their items (a fill a row cost 2x:
    # float32 A * tanh(c) 128 x 128 6.1 us against NumPy's 4.8; rows of 2,
    # 1024 a block, were 1.6-1.9x NumPy), the last chunk first: element i
    # sits before row i's place, so the rows written never cover an item
    # still to copy
    cdef uint64_t items[FILL_ROWS_MAX]
    cdef pyet_intp lo, hi = rows
    while hi > 0:
        lo = hi - FILL_ROWS_MAX if hi > FILL_ROWS_MAX else 0
        memcpy(items, buf + lo * isz, (hi - lo) * isz)
        pyet_copy_rows(buf + lo * m * isz, <char *>items, isz, 0, hi - lo, m, isz)
        hi = lo


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
    cdef pyet_intp w, plane, r0, rows, i, c, g, inner = r.shape[nd - 1], h = r.shape[nd - 2]
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
            if r.dtile:  # dst.T = A: A's rows copied across dst's, a line of its columns a call
                g = 64 // r.itemsize[1]
                c = 0
                while c < inner:
                    pyet_copy_tile(ptr[0] + c * r.strides[nd - 1], r.strides[nd - 1],
                                   ptr[1] + c * r.itemsize[1], r.itemsize[1],
                                   r.strides[MAXD + nd - 2], min(g, inner - c), rows,
                                   r.itemsize[1], r.from_memory)
                    c += g
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
                if not r.dup[k] and across_rows(r, k):
                    pyet_copy_tile(tb, inner * r.itemsize[k], ptr[k],
                                   r.strides[k * MAXD + nd - 2], r.strides[k * MAXD + nd - 1],
                                   rows, inner, r.itemsize[k], r.from_memory)
                elif not r.dup[k]:
                    pyet_copy_rows(tb, ptr[k], r.strides[k * MAXD + nd - 2],
                                   r.strides[k * MAXD + nd - 1], rows, inner, r.itemsize[k])
                ptr[k] = tb
        if run_block(r, prog, rows * inner, ptr, regs, route) < 0:
            return -1
        if r.dtile:  # the tile's rows across the destination's
            pyet_copy_tile(dst, r.strides[nd - 1], ptr[0], r.itemsize[0], inner * r.itemsize[0],
                           inner, rows, r.itemsize[0], r.from_memory)
    return 0


cdef bint tiles_flat(Run *r) noexcept nogil:
    # every destination holds consecutive rows one after another, or is one
    # tile computed into a buffer and copied across (run_tiles_flat); the
    # leaves are any (tiled_leaf)
    cdef int k
    for k in range(r.ndst):
        if k == 0 and r.ndst == 1 and across_rows(r, 0) \
                and r.strides[r.nd - 2] == r.itemsize[0]:
            continue
        if not consecutive_rows(r, k):
            return False
    return True


cdef inline bint consecutive_rows(Run *r, int k) noexcept nogil:
    # operand k's rows are contiguous and follow one another
    return r.strides[k * MAXD + r.nd - 1] == r.itemsize[k] \
        and r.strides[k * MAXD + r.nd - 2] == r.shape[r.nd - 1] * r.itemsize[k]


cdef inline bint tiled_leaf(Run *r, int k) noexcept nogil:
    # leaf k of a tiled pass is copied a tile at a time: read across its rows
    # (pyet_copy_tile), or in flat tiles any leaf whose rows do not follow
    # one another (a column, a row, strided rows: pyet_copy_rows; each row
    # a block and its scatter were ~550 instructions a row of 17: float32
    # A + col into Fortran order 3.1x NumPy)
    return across_rows(r, k) or (r.tpp and not consecutive_rows(r, k))


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


cdef bint column_broadcast(Run *r, int k) noexcept nogil:
    # operand k is one element a row, read again along the row (a column)
    return r.nd >= 2 and r.strides[k * MAXD + r.nd - 1] == 0 \
        and r.strides[k * MAXD + r.nd - 2] != 0


cdef bint rows_with_broadcast(Run *r) noexcept nogil:
    # flat operands (or a destination with strided rows, scattered as it is
    # unpacked) and at least one row or column broadcast: packed in whole
    # rows, a row broadcast gathered once (a bias on rows of 128, run row by
    # row, took 2.4x the time of the same pass with the bias repeated in
    # memory; rows longer than half a block gain nothing from it), a column
    # filled for a block of rows at a time (one thread, pyet/NumPy, row by
    # row: float32 A * c on (256, 128) 1.48x, (512, 200) 1.20, float64
    # exp(A) * c on (256, 128) 1.14; packed 0.88, 1.10, 0.93)
    cdef int k
    cdef bint any_row = False
    for k in range(r.nops):
        if row_broadcast(r, k) or (k >= r.ndst and column_broadcast(r, k)):
            any_row = True
        elif not flat_operand(r, k) and not (k < r.ndst and strided_rows(r, k)):
            return False
    return any_row


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


cdef inline bint strided_rows(Run *r, int k) noexcept nogil:
    # operand k's rows are strided (not contiguous), each after the last
    # (not read across them): big[:, ::2], big[:, ::-1]
    cdef pyet_intp s = r.strides[k * MAXD + r.nd - 1]
    return s != r.itemsize[k] and s != 0 and not across_rows(r, k)


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
