# One pass (MShadow's MapPlan): a call's operands bound to the program (leaves
# prepared, scalars stored), dimensions merged, the blocks, packing, tiles and
# threads chosen, the program run, and trees broadcast along dst's rows or
# outer dimensions computed once and filled or copied after it.

DEF SMALL_META = 8192    # execute_group's per-call metadata up to this: on the stack
DEF SMALL_SCRATCH = 4096  # and its scratch (one thread)
DEF KEPT_SCRATCH = 8 << 20  # larger scratch kept between passes up to this (take_scratch)
DEF GIL_HELD_PASS = 1024  # one-thread passes of at most this many elements keep the GIL
# (NumPy keeps it up to 500 elements; releasing and retaking it cost 1.54x -> 1.26x
# NumPy on a 257-element a+b)
# direct passes (direct_pass): their operands and registers' memory, on the stack
DEF DIRECT_OPS = 8           # dst and up to 7 leaves
DEF DIRECT_SCALARS = 16
DEF DIRECT_REG_BYTES = 16384

# a pass gathering leaves whose rows span GATHER_BLOCK_BYTES or more (their
# steps summed, times the items) runs in blocks of GATHER_BLOCK (plan_blocks)
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
# the block length of passes gathering such rows over GATHER_BLOCK_BYTES (plan_blocks)
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


# rows shorter than this are packed several to a block (a block's fixed cost
# per row dominates below it); a user function gets blocks of PYFUNC_BLOCK
DEF SHORT_ROW = 128
DEF TILE_MIN_ROW = 16      # rows this long and read across are tiled, not packed
# ... and from memory (from_memory), rows of this many bytes: packed, their
# gathers stream as many columns as a row has; a tile reads each a line or
# more at a time (one thread, F into C order, pyet/NumPy: float64 rows of 4
# at 2^20 0.79 -> 0.52, of 5 at 2^22 1.13 -> 0.93; float32 rows of 4-5, 16-20
# bytes, measured 0.84-0.92 -> 1.00-1.27 tiled: they stay packed)
DEF TILE_MIN_ROW_BYTES_FAR = 32
# a tiled pass's blocks are this many BLOCKs long: its tile copies run on
# along the rows, where each new block restarted them (one thread, F-order
# into C: 4000^2 float64 a*b+c 49 -> 45 ms, 1448^2 float32 where(...) 5.1 ->
# 4.5 ms, 724^2 float64 -a 0.24 -> 0.22 ms; 512^2 the same)
DEF TILE_BLOCKS = 8
DEF PYFUNC_BLOCK = 65536
DEF NUMPY_LOOP_BLOCK = 8192


cdef bint PLAIN_PASSES = True
DEF MEMORY_BURST = 512  # bytes a register, float trees from memory (plan_operands)


def set_plain_passes(bint on):
    """Run passes whose rows all lie where the kernels read them through
    run_plain (on) or run_block (a testing knob; on by default).  Returns the
    previous setting."""
    global PLAIN_PASSES
    before = PLAIN_PASSES
    PLAIN_PASSES = on
    return before


# tiles of whole rows read across (run_tiles_flat) of up to this many elements
cdef pyet_intp FLAT_TILE_MAX = 4096
# ... and a copy across the destination's rows (dst.T = A, no tile buffer)
# tiles of up to this many, a line of A's columns a call: each call writes a
# line's worth of dst's rows, not all of them (C into Fortran order, x NumPy,
# one thread: float64 (1024, 64) 1.23 -> 0.56-0.68, (2048, 32) 1.24 -> 0.57,
# (181, 181) 1.05 -> 0.77-0.81, float32 (1024, 64) 0.92 -> 0.48-0.53; tiles
# of BLOCK with the calls by lines: 0.8-1.05)
DEF COPY_TILE_ELEMS = 8192


def set_flat_tile_max(pyet_intp n):
    """Run tiles of rows read across (A.T into C) of up to n elements as one
    block each (a tuning knob; 0 turns it off).  Returns the previous value."""
    global FLAT_TILE_MAX
    before = FLAT_TILE_MAX
    FLAT_TILE_MAX = n
    return before


# rows with a row broadcast (gathered once) or a column packed in whole rows
# (rows_with_broadcast)
cdef bint ROW_BROADCASTS_ONCE = True


def set_row_broadcasts_once(bint on):
    """Pack rows with a row broadcast (a bias, gathered once per chunk) or a
    column broadcast in blocks of whole rows, or run them row by row (a knob
    for measuring and testing; default on).  Returns nothing."""
    global ROW_BROADCASTS_ONCE
    ROW_BROADCASTS_ONCE = on


# every leaf a column along dst's rows: the rows' first elements computed, the
# rest of each row filled from them (fill_rows); every leaf broadcast along
# other dimensions of dst: their index 0 computed, then copied (plan_once)
cdef bint COLUMNS_ONCE = True


def set_columns_once(bint on):
    """Compute a tree whose leaves are all broadcast along the destination's
    rows once a row and fill the rows, and one whose leaves are all broadcast
    along other dimensions of it at their index 0 and copy that, or run them
    element by element (a knob for measuring and testing; default on)."""
    global COLUMNS_ONCE
    COLUMNS_ONCE = on


# ---------------------------------------------------------------- binding

cdef inline bint child_scalar_ok(Expr e, bint scalar_ok, Py_ssize_t i) noexcept:
    # whether e's operand i may be taken as a scalar (lowering's operand()),
    # e's own as scalar_ok: any of a value computed once (Expr._one), else
    # not a user function's, where's condition or an array exponent's
    return (scalar_ok and e._one) or not (
        e._op == OP_pyfunc or (e._op == OP_where and i == 0)
        or (e._op == OP_power and i == 1 and (<Expr>e._args[1]).shape))


cdef inline object bound_array(Expr e):
    # a one-value leaf's array as binding reads it: a constant leaf's one
    # element as a 0-d view (an astype of the broadcast array would copy all)
    return constant_value(e) if is_constant(e) else (<Tensor>e)._array


cdef void collect(Expr e, list leaves, list scalars, list pyfuncs, bint scalar_ok=True):
    # pre-order, left to right: the order lowering numbers leaves, scalars
    # and user functions (none of which is part of a program); scalar_ok as
    # lowering's operand() has it (collect_small: the same walk into C arrays)
    cdef Py_ssize_t i
    if e._op == OP_leaf:
        if not scalar_ok or not e._one:
            leaves.append((<Tensor>e)._array)
        else:  # its one element, read when bound (store_scalar)
            scalars.append(bound_array(e))
    elif e._op == OP_scalar:
        scalars.append((<Scalar>e)._value)
    else:
        if e._op == OP_pyfunc and not (<PyFunc>e)._in_pass:
            pyfuncs.append((<PyFunc>e)._fn)
        for i in range(len(e._args)):
            collect(<Expr>e._args[i], leaves, scalars, pyfuncs, child_scalar_ok(e, scalar_ok, i))


# a tree reading a costly subtree twice over the same arrays runs as a
# one-statement group (shared_program) from this many elements (float64 1 -
# t*t of a tanh t, instructions, the group's way against the costly subtree
# computed at each occurrence by the direct pass: 16 elements 14.8K against
# 13.4K, 64 15.8K / 15.2K, 256 19.6K / 22.2K, 1024 35.3K / 51.3K)
DEF SHARED_MIN = 128


cdef inline bint may_share(Program prog, Expr e, Py_ssize_t size) noexcept:
    # whether e (lowered to prog) over size elements asks shared_program
    return prog.repeats_costly and not e._flags & HAS_PYFUNC and size >= SHARED_MIN


cdef Py_ssize_t _shared_count = 0


cdef inline void count_shared() noexcept:
    global _shared_count
    _shared_count += 1


def shared_count():
    """How many passes and folds have computed a subtree read twice once a
    block (shared_program's; tests check the path)."""
    return _shared_count


cdef object shared_program(Expr e, int dst_dt, list leaves, list scalars, list pyfuncs,
                           list arrays):
    # e's program as a one-statement group over its distinct leaf arrays,
    # which computes a costly subtree read twice once a block (lower_group's
    # shared registers; collected into ``arrays``, e's leaf occurrences,
    # scalars and functions into the others), or None where it shares no
    # subtree (no leaf array repeats, or not below a repeated costly
    # structure).  Callers ask may_share first.
    cdef list leaf_map = []
    cdef dict index = {}
    collect(e, leaves, scalars, pyfuncs)
    for a in leaves:
        i = index.get(id(a))
        if i is None:
            i = index[id(a)] = len(arrays)
            arrays.append(a)
        leaf_map.append((SRC_LEAF, i))
    if len(arrays) == len(leaves):
        return None
    return group_program([e], [dst_dt], leaf_map, len(arrays), True)


cdef struct Small:
    # collect_small's operands: leaves' arrays (borrowed from the tree) and
    # scalar slots, at most DIRECT_OPS - 1 and DIRECT_SCALARS
    int nleaves, nscalars
    PyObject *leaves[DIRECT_OPS - 1]
    char slots[8 * DIRECT_SCALARS]


cdef int collect_small(Expr e, Small *s, Program prog, bint contiguous,
                       bint scalar_ok=True) except -1:
    """collect's walk of a tree without user functions into s, each scalar
    stored in the program's dtype as it is met; 0 when the tree has more
    operands than s holds (s then partly filled), or with ``contiguous`` at
    the first leaf that is not contiguous (direct_tree: the refusal costs
    nothing further), 1 when all were taken."""
    cdef Py_ssize_t i
    cdef cnp.ndarray a
    if e._op == OP_leaf and not (scalar_ok and e._one):
        a = <cnp.ndarray>(<Tensor>e)._array
        if s.nleaves == DIRECT_OPS - 1 or (contiguous and not (
                cnp.PyArray_IS_C_CONTIGUOUS(a) or cnp.PyArray_IS_F_CONTIGUOUS(a))):
            return 0
        s.leaves[s.nleaves] = <PyObject *>(<Tensor>e)._array
        s.nleaves += 1
        return 1
    if e._op == OP_leaf or e._op == OP_scalar:
        if s.nscalars == DIRECT_SCALARS:
            return 0
        store_scalar(s.slots + 8 * s.nscalars, (<Scalar>e)._value if e._op == OP_scalar
                     else bound_array(e), prog.scalar_dt[s.nscalars])
        s.nscalars += 1
        return 1
    for i in range(len(e._args)):
        if not collect_small(<Expr>e._args[i], s, prog, contiguous,
                             child_scalar_ok(e, scalar_ok, i)):
            return 0
    return 1


cdef int store_scalar(char *slot, object v, int dt) except -1:
    cdef cnp.ndarray a
    if isinstance(v, cnp.ndarray):  # an array of one element: NumPy's cast to the program's dtype
        a = <cnp.ndarray>v
        if cnp.PyArray_ISNOTSWAPPED(a) and array_dtype_code(a) == dt:
            # already the program's dtype: its bytes, no cast (astype costs
            # ~0.4 us); a bool's byte as it is, as an array leaf's: the bool
            # kernels read any byte but 0 as true, copies keep it (NumPy's)
            memcpy(slot, cnp.PyArray_DATA(a), cnp.PyArray_ITEMSIZE(a))
            return 0
        v = a.astype(DTYPES[dt]).reshape(())[()]
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


cdef object prepare_leaf(cnp.ndarray a, cnp.ndarray dst, pyet_intp *bstrides,
                         uintptr_t dlo, uintptr_t dhi, bint *overlaps):
    """The leaf to read (a copy when it is misaligned or overlaps dst other
    than element for element), and its strides broadcast to dst's shape;
    dst's memory spans [dlo, dhi) (extent), and *overlaps tells whether the
    leaf read lies in it (in place, element for element)."""
    cdef int nd = cnp.PyArray_NDIM(dst), lnd = cnp.PyArray_NDIM(a), d, ld
    cdef int itemsize = cnp.PyArray_ITEMSIZE(a)
    cdef bint ok = (<uintptr_t>cnp.PyArray_DATA(a)) % itemsize == 0, empty = False
    for d in range(lnd):
        if cnp.PyArray_STRIDES(a)[d] % itemsize:
            ok = False
        empty = empty or cnp.PyArray_DIMS(a)[d] == 0
    if not ok:
        a = np.array(a, copy=True)
    for d in range(nd):
        ld = d - (nd - lnd)
        if ld < 0 or cnp.PyArray_DIMS(a)[ld] == 1:
            bstrides[d] = 0
        else:
            bstrides[d] = cnp.PyArray_STRIDES(a)[ld]
    overlaps[0] = False
    cdef uintptr_t alo, ahi
    if empty:
        return a
    extent(a, &alo, &ahi)
    if alo >= dhi or dlo >= ahi:
        return a
    # overlapping memory: in place is safe only element for element
    cdef bint same = (cnp.PyArray_DATA(a) == cnp.PyArray_DATA(dst)
                      and itemsize == cnp.PyArray_ITEMSIZE(dst))
    for d in range(nd):
        if cnp.PyArray_DIMS(dst)[d] > 1 and bstrides[d] != cnp.PyArray_STRIDES(dst)[d]:
            same = False
    if same:
        overlaps[0] = True
        return a
    a = np.array(a, copy=True)
    return prepare_leaf(a, dst, bstrides, dlo, dhi, overlaps)


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


cdef bint one_row(int n, const int *dims, const pyet_intp *shape, int nops,
                  const pyet_intp *strides, pyet_intp *ostrides, bint fortran) noexcept nogil:
    # merge_dims' answer for operands that all step forward, each dimension
    # over the next (C order; Fortran: the previous) as a whole: one row of
    # each operand's innermost step, in ostrides.  Found in one look (the
    # sort and the merges cost ~10 ns a dimension; a (4, 3, 5, 2, 3, 1)
    # a / b: 1.4x NumPy's call, 1.2x a 1-d one)
    cdef int i, k, inner = dims[0] if fortran else dims[n - 1], d
    cdef pyet_intp s, step
    for k in range(nops):
        s = strides[k * MAXD + inner]
        if s <= 0:
            return False
        step = s
        for i in range(1, n):
            d = dims[i] if fortran else dims[n - 1 - i]
            step *= shape[dims[i - 1] if fortran else dims[n - i]]
            if strides[k * MAXD + d] != step:
                return False
        ostrides[k * MAXD] = s
    return True


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
    if key_op < 0 and n > 1 and (one_row(n, dims, shape, nops, strides, ostrides, False)
                                 or one_row(n, dims, shape, nops, strides, ostrides, True)):
        oshape[0] = 1
        for i in range(n):
            oshape[0] *= shape[dims[i]]
        return 1
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


cdef bint broadcast_dim(Run *r, int d) noexcept nogil:
    # no leaf moves along dimension d (the last: a column, or a dimension of 1
    # only where dst is one element: merge_dims drops them)
    cdef int k
    for k in range(r.ndst, r.nops):
        if r.strides[k * MAXD + d] != 0:
            return False
    return True


# bytes: the smallest block copied one by one (blocks side by side: any size)
cdef pyet_intp COPY_BLOCK_MIN = 256


def set_copy_block_min(pyet_intp nbytes):
    """Copy blocks of dimensions no leaf moves along (not side by side) from
    ``nbytes`` (a knob for measuring and testing: 0 copies every such block).
    Returns the previous value."""
    global COPY_BLOCK_MIN
    before, COPY_BLOCK_MIN = COPY_BLOCK_MIN, nbytes
    return before


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
    # copy_items' arguments: at each index of the outer dimensions oshape/
    # ostrides (nout of them), the block at index 0 of the rep dimensions
    # rshape/rstrides (nrep; the block: the nin dimensions ishape/istrides
    # after them) copied to every other index of those
    char *base
    int nout, nrep, nin, isz
    pyet_intp nouter, nreps, nchunks  # outer indices; rep indices (0 included); chunks
    const pyet_intp *oshape
    const pyet_intp *ostrides
    const pyet_intp *rshape
    const pyet_intp *rstrides
    const pyet_intp *ishape
    const pyet_intp *istrides


cdef void copy_blocks(BlockCopy *b, char *base, pyet_intp lo, pyet_intp hi) noexcept nogil:
    # rep indices lo..hi-1 (row-major over rshape), each the copy of the block at base
    cdef pyet_intp ridx[MAXD]
    cdef pyet_intp iidx[MAXD]
    cdef pyet_intp at = 0, off, i = lo
    cdef int d, nin = b.nin
    cdef pyet_intp size = b.ishape[0] * b.isz
    if nin == 1 and b.istrides[0] == b.isz and b.nrep == 1 and b.rstrides[0] == size:
        # blocks side by side (a row into a C matrix)
        repeat_block(base + lo * size, base, size, hi - lo)
        return
    for d in range(b.nrep - 1, -1, -1):  # lo's index and block, once
        ridx[d] = i % b.rshape[d]
        i //= b.rshape[d]
        at += ridx[d] * b.rstrides[d]
    for i in range(lo, hi):
        for d in range(nin):
            iidx[d] = 0
        off = 0
        while True:  # the block's rows, each one strided copy
            pyet_copy_strided(base + at + off, b.istrides[nin - 1], base + off,
                              b.istrides[nin - 1], b.ishape[nin - 1], b.isz)
            if not next_index(iidx, b.ishape, b.istrides, nin - 1, &off):
                break
        next_index(ridx, b.rshape, b.rstrides, b.nrep, &at)


cdef void copy_items(BlockCopy *b, pyet_intp lo, pyet_intp hi) noexcept nogil:
    # items lo..hi-1 of the (outer index, rep index 1..nreps-1) pairs, row-major
    cdef pyet_intp per = b.nreps - 1, i = lo, o, r0, r1, off
    cdef int d
    while i < hi:
        o = i // per
        r0 = 1 + i % per
        r1 = min(b.nreps, r0 + hi - i)
        off = 0
        for d in range(b.nout - 1, -1, -1):
            off += (o % b.oshape[d]) * b.ostrides[d]
            o //= b.oshape[d]
        copy_blocks(b, b.base + off, r0, r1)
        i += r1 - r0


cdef int copy_chunk(void *ctx, pyet_intp c, int slot) noexcept nogil:
    # chunk c of the items (run_chunks' callback)
    cdef BlockCopy *b = <BlockCopy *>ctx
    cdef pyet_intp n = b.nouter * (b.nreps - 1)
    copy_items(b, c * n // b.nchunks, (c + 1) * n // b.nchunks)
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


cdef struct Once:
    # a tree whose leaves are all broadcast along dst's rows (col: the pass
    # computes one element a row, each row filled from it after the pass) or
    # along other dimensions of dst (copied: the pass computes their index 0,
    # copied to the others after it); value: along every dimension (one
    # value, computed into value_slot); dst's merged dimensions as they were
    # before the pass dropped those
    bint col, value
    int nd, ncopied
    char copied[MAXD]        # 1: dimension d (< nd - 1) copied from its index 0
    pyet_intp shape[MAXD]
    pyet_intp strides[MAXD]
    char *base               # dst's (merge_dims may have moved it from dst's data)
    pyet_intp written        # elements the pass writes, with the filled rows
    pyet_intp value_slot[2]  # (16 bytes, aligned for every dtype)


cdef inline int copied_run(Once *o, int d) noexcept nogil:
    # the first dimension of the run of copied dimensions that ends at d
    while d > 0 and o.copied[d - 1]:
        d -= 1
    return d


cdef list bind_operands(Run *r, pyet_intp *bstrides, list dsts, list leaves, list scalars,
                        Program prog, bint *apart):
    # r's destinations, then leaves (copied where they overlap a destination
    # other than in place: the copies returned, to be kept alive), their
    # strides before merging, and the scalar slots; *apart turns false when a
    # leaf lies in dst's memory (Run.dst_reg)
    cdef cnp.ndarray dst = <cnp.ndarray>dsts[0], dk
    cdef int ndst = len(dsts), nops = r.nops, nd = cnp.PyArray_NDIM(dst), k, d
    cdef list keep = None
    cdef uintptr_t dlo, dhi, klo, khi
    cdef bint overlaps
    extent(dst, &dlo, &dhi)
    for k in range(ndst):
        dk = <cnp.ndarray>dsts[k]
        r.base[k] = <char *>cnp.PyArray_DATA(dk)
        r.itemsize[k] = cnp.PyArray_ITEMSIZE(dk)
        for d in range(nd):
            bstrides[k * MAXD + d] = cnp.PyArray_STRIDES(dk)[d]
    for k in range(ndst, nops):
        a = prepare_leaf(leaves[k - ndst], dst, bstrides + k * MAXD, dlo, dhi, &overlaps)
        for d in range(1, ndst):  # copied when it overlaps a destination other than in place
            if _bounds_overlap(<cnp.ndarray>a, <cnp.ndarray>dsts[d]):
                dk = <cnp.ndarray>dsts[d]
                extent(dk, &klo, &khi)
                a = prepare_leaf(a, dk, bstrides + k * MAXD, klo, khi, &overlaps)
                overlaps = _bounds_overlap(<cnp.ndarray>a, dst)
        if overlaps and cnp.PyArray_SIZE(dst):
            apart[0] = False
        if a is not leaves[k - ndst]:
            if keep is None:
                keep = []
            keep.append(a)
        r.base[k] = <char *>cnp.PyArray_DATA(a)
        r.itemsize[k] = cnp.PyArray_ITEMSIZE(a)
    for k in range(len(scalars)):
        store_scalar(r.scalars + 8 * k, scalars[k], prog.scalar_dt[k])
    if prog.nonce:
        run_once(prog, r.scalars)
    return keep


cdef int run_once(Program prog, char *slots) except -1:
    """The program's instructions on one value each (Program.once), after
    its scalars are stored: each into its slot; their floating-point errors
    reported now, before the pass writes anything (NumPy's A + np.exp(b)
    raises in exp)."""
    cdef char *args[PYET_MAX_IN + 1]  # (the operands' slots, then the output's)
    cdef cnp.npy_intp steps[PYET_MAX_IN + 1]
    cdef cnp.npy_intp one = 1
    cdef pyet_instr *ins
    cdef int i, j, before = pyet_fs_get(), raised
    pyet_fs_clear(before)
    for i in range(prog.nonce):
        ins = &prog.once[i]
        for j in range(ins.nin + 1):
            args[j] = slots + 8 * (ins.src[j] if j < ins.nin else ins.out)
            steps[j] = 8
        if prog.once_loop[i] != NULL:
            prog.once_loop[i](args, &one, steps, prog.once_data[i])
        elif ins.op == OP_cast:
            pyet_cast(ins.dt, ins.dt_out, 1, args[1], args[0])
        else:
            call_kernel(ins, 1, args[ins.nin], <void **>args)
    raised = pyet_fs_get()
    pyet_fs_clear(raised)
    pyet_fs_set(before)
    return report_status(raised)


cdef void plan_once(Run *r, Once *o) noexcept nogil:
    # leaves broadcast along dst's rows (np.broadcast_to of an (n, 1), 0-d
    # tensors: bool ~a of a (512, 1) column into 512^2, a kernel call a row,
    # was 1.47x NumPy's time) or other dimensions (exp(b) of a row b into a
    # matrix, every element computed: 3.8-6.5x NumPy's out[...] = np.exp(b)*2
    # + 1, which computes the row once; of a (100, 1, 100) b into 100^3,
    # 6.2x): the pass computes one element a row, and index 0 of the others;
    # the rows are filled, the blocks copied, after it (finish_once).  A 0-d
    # tree's value is computed aside, its errors raised before dst is written
    # (as NumPy's 0-d temporary).
    cdef int k, d, d0, n = 0, last = r.nd - 1
    cdef pyet_intp block
    cdef bint dense
    o.col = broadcast_dim(r, last)
    o.ncopied = 0
    for d in range(last):
        o.copied[d] = broadcast_dim(r, d)
        o.ncopied += o.copied[d]
    o.value = o.col and o.ncopied == last
    if o.value:
        o.ncopied = 0  # (the fill writes every element)
        for d in range(last):
            o.copied[d] = 0
    # each run d0..d of copied dimensions copies the block after it, a call a
    # block (or a row) unless blocks lie side by side: blocks of 256 bytes and
    # more (float64 rows of 16 were 1.16x the pass computing them, of 64
    # 0.67; bool rows of 64 2.7x)
    block = r.itemsize[0] * r.shape[last]  # bytes of the dimensions after d
    dense = r.strides[last] == r.itemsize[0]  # those contiguous in dst
    d = last - 1
    while d >= 0:
        if not o.copied[d]:
            dense = dense and r.strides[d] == block
            block *= r.shape[d]
            d -= 1
            continue
        d0 = copied_run(o, d)
        if block < COPY_BLOCK_MIN and not (d0 == d and dense and r.strides[d] == block):
            for k in range(d0, d + 1):
                o.copied[k] = 0
            o.ncopied -= d - d0 + 1
        for k in range(d0, d + 1):
            dense = dense and r.strides[k] == block
            block *= r.shape[k]
        d = d0 - 1
    if not o.col and not o.ncopied:
        return
    o.nd, o.base, o.written = r.nd, r.base[0], 1
    for d in range(r.nd):
        o.shape[d], o.strides[d] = r.shape[d], r.strides[d]
        if d == last or not o.copied[d]:
            o.written *= r.shape[d]
    if o.value:
        r.base[0] = <char *>o.value_slot
        r.nd = 1
        r.shape[0] = 1
        for k in range(r.nops):
            r.strides[k * MAXD] = 0
        return
    for d in range(r.nd - o.col):  # the pass: the dimensions neither copied nor filled
        if d < last and o.copied[d]:
            continue
        r.shape[n] = r.shape[d]
        for k in range(r.nops):
            r.strides[k * MAXD + n] = r.strides[k * MAXD + d]
        n += 1
    r.nd = n


cdef inline pyet_intp itemsize_sum(const int *itemsize, int nops) noexcept nogil:
    cdef pyet_intp b = 0
    cdef int k
    for k in range(nops):
        b += itemsize[k]
    return b


cdef pyet_intp kernel_blocklen(Program prog, pyet_intp units, const int *itemsize,
                               int nops) noexcept:
    # the block length a pass of contiguous rows starts from (plan_blocks,
    # direct_layout); units: dst's elements, itemsize: the operands'
    cdef int k
    cdef pyet_intp nbytes = itemsize_sum(itemsize, nops), blocklen = BLOCK
    # one kernel reading leaves straight into dst keeps no block in L1,
    # so it takes long blocks: less per-block overhead
    # (a block's registers are BLOCK 8-byte items: passes of 4-byte items
    # moving under LOOP_THREADS_BYTES fill them with 2 * BLOCK, the same
    # lines, half the blocks, each ~36 ns of set-up and calls: float32 at
    # 2^18, pyet/NumPy, (a + 0.5)*2 1.37 -> 0.84, x*y + y*z - z 0.74 ->
    # 0.65; from memory (2^21) x*y + y*z - z took 1.1x the time)
    if prog.max_isz <= 4 and units * nbytes < LOOP_THREADS_BYTES:
        blocklen = 2 * BLOCK
        for k in range(nops):
            if itemsize[k] > 4:
                blocklen = BLOCK
    if prog.nregs == 0:
        # (128 KiB of the widest item: 8192 bools were 32 blocks of 2^18,
        # each ~36 ns: contiguous bool a & b 1.11-1.16x NumPy -> 1.00-1.09)
        blocklen = max(BLOCK, 131072 // prog.max_isz)
    if prog.ninstr == 1 and scalars_only(&prog.code[0]):
        # one value repeated (an op of 0-d operands): a fill per block,
        # each block ~30 ns of set-up (bool s != t into 2^18: 5.4 -> 3.4
        # us with the fill, NumPy's fill 2.4)
        blocklen = max(BLOCK, PYFUNC_BLOCK)
    return blocklen


cdef inline pyet_intp call_blocklen(Program prog, pyet_intp blocklen) noexcept:
    # a user function or an op's NumPy loop: a call per block (~3 us from
    # Python), on long blocks when it is the whole program (no register
    # kept in L1); called in C too (Program.cloop): NumPy's SVML loops on
    # blocks of 8 Ki cost 1.3x their time on 64 Ki (log10, exp2 float32)
    if prog.user_pyfunc:
        return max(BLOCK, PYFUNC_BLOCK)
    if prog.np_loops:
        return max(BLOCK, PYFUNC_BLOCK if prog.ninstr == 1 else NUMPY_LOOP_BLOCK)
    return blocklen


cdef pyet_intp plan_blocks(Run *r, Program prog, pyet_intp units) noexcept:
    # the block length, and rows packed or tiled; units: dst's elements.
    # Returns the block length the packing and gathers start from.
    cdef int k, nops = r.nops, ndst = r.ndst
    cdef pyet_intp spread, lines, far, tile
    cdef pyet_intp blocklen = kernel_blocklen(prog, units, r.itemsize, nops)
    r.from_memory = units * pass_itemsizes(r) >= SX_FAR_BYTES
    # a strided leaf that Program.strided_kernel's kernel reads where
    # it lies (not a broadcast: those are filled into a block)
    r.direct = (prog.strided_kernel and not r.red and r.strides[MAXD + r.nd - 1] != 0
                and r.strides[MAXD + r.nd - 1] != r.itemsize[1])
    if prog.strided_fused and not r.red:
        # a leaf's rows strided: all read in place (float64 a*b + c on
        # a[::3] rows: 1.2-1.3x NumPy gathered, 0.87-0.89 in place)
        for k in range(ndst, nops):
            if sx_strided(r, k):
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
    blocklen = call_blocklen(prog, blocklen)
    r.total = 1
    for k in range(r.nd):
        r.total *= r.shape[k]
    r.nrows = r.total // r.shape[r.nd - 1]
    # an operand read across its rows (its next row is nearer than its
    # next element: A.T) is walked in tiles of rows, a cache line each
    tile = 0
    if not r.red and r.nrows > 1:
        for k in range(nops):
            if across_rows(r, k):
                tile = max(tile, 64 // r.itemsize[k])
    # rows shorter than a block (or than a user function's block) are
    # packed: blocks run across row ends; but rows of TILE_MIN_ROW and
    # more read across are tiled (a 64 x 64 float32 A.T copied 1.5x
    # NumPy packed, element by element; float32 a ** b of two F-order
    # 512^2 arrays as NumPy's loop called in C: 1.37x np.power packed)
    r.packed = not r.red and ndst == 1 and r.nd > 1 and (
        (r.shape[r.nd - 1] < SHORT_ROW and not (tile and (
            r.shape[r.nd - 1] >= TILE_MIN_ROW or (r.from_memory and r.shape[r.nd - 1]
                                                  * r.itemsize[0] >= TILE_MIN_ROW_BYTES_FAR))))
        or ((prog.has_pyfunc or (prog.np_loops and not tile))
            and r.shape[r.nd - 1] < blocklen)
        or (ROW_BROADCASTS_ONCE and 2 * r.shape[r.nd - 1] <= BLOCK
            and rows_with_broadcast(r)))
    r.early = r.red if (r.red == RED_ALL or r.red == RED_ANY) else 0
    r.stop = 0
    for k in range(r.nd):
        if r.strides[k] != 0:  # several accumulators: no single decision
            r.early = 0
    r.tile = 0 if r.packed else tile
    if r.direct and (r.packed or r.tile):  # the leaf is gathered after all
        r.direct = False
        blocklen = BLOCK
    if r.tile:
        blocklen = TILE_BLOCKS * BLOCK
    elif r.from_memory and prog.ninstr > 1 and not r.red and not r.packed \
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
            4 * FLAT_TILE_MAX if across_rows(r, 0) else FLAT_TILE_MAX) and tiles_flat(r):
        # short rows read across: tiles of whole rows, each one block
        # (from memory, tiles as long as a copy's: each column read a longer
        # run at a time; F into C order rows of 17, pyet/NumPy at 2^22:
        # float64 1.26 -> 1.00, float32 1.36 -> 0.96; of 64, float64 0.77 -> 0.26)
        while 2 * r.tile * r.shape[r.nd - 1] <= (
                COPY_TILE_ELEMS if (prog.copies_leaf and across_rows(r, 0)) or r.from_memory
                else BLOCK) \
                and r.tile < r.shape[r.nd - 2]:
            r.tile *= 2
        r.block = r.tile * r.shape[r.nd - 1]
        r.tpp = (r.shape[r.nd - 2] + r.tile - 1) // r.tile
    return blocklen


cdef uint64_t uniform_instructions(Run *r, Program prog, uint64_t leaves,
                                   uint64_t exclude=0) noexcept nogil:
    """The instructions (bits; none in programs of more than 64) but those of
    ``exclude`` that read only the operands of ``leaves`` (bits), scalars and
    registers such instructions wrote, each register they write written by
    them alone (so its value stays until the block's end): where those
    operands repeat (a row broadcast along the rows of a chunk, a column
    along each row), so do their values."""
    cdef uint64_t found = 0, written = 0, twice = 0, bit
    cdef int i, j, k, nd = r.ndst
    cdef bint ok
    cdef pyet_instr *ins
    if prog.nregs > 64 or prog.ninstr > 64:
        return 0
    for i in range(prog.ninstr):  # registers written by more than one instruction
        if prog.code[i].out >= 0:
            bit = (<uint64_t>1) << prog.code[i].out
            twice |= written & bit
            written |= bit
    for i in range(prog.ninstr):
        ins = &prog.code[i]
        ok = ins.out >= 0 and not (twice >> ins.out) & 1 and not (exclude >> i) & 1 \
            and (ins.op != OP_pyfunc or prog.cloop[i] != NULL)  # (not Python: NumPy's loop)
        for j in range(ins.nin):
            if not ok:
                break
            if ins.src_kind[j] == SRC_LEAF:
                k = nd + ins.src[j]
                ok = k < 64 and (leaves >> k) & 1
            elif ins.src_kind[j] == SRC_REG:
                ok = written_by(prog, found, i, ins.src[j])
            else:
                ok = ins.src_kind[j] == SRC_SCALAR
        if ok:
            found |= (<uint64_t>1) << i
    return found


cdef inline bint written_by(Program prog, uint64_t instrs, int before, int reg) noexcept nogil:
    # register reg was last written (before instruction `before`) by one of instrs
    cdef int i
    for i in range(before - 1, -1, -1):
        if prog.code[i].out == reg:
            return (instrs >> i) & 1
    return False


cdef uint64_t chunk_invariant(Run *r, Program prog) noexcept nogil:
    """Packed rows with row broadcasts gathered once a chunk (r.nonce): the
    instructions that read only those (uniform_instructions) compute one row
    on a chunk's first block, tiled over the block where others read it
    (r.once_tile), as NumPy computes exp(b) of a row once in A * exp(b) (one
    thread, pyet/NumPy, every block -> once a chunk: 64 x 64 float32 1.26 ->
    0.90, 128 x 128 float64 exp 2.4 -> 0.69, sin 4.8 -> 0.69; one row, then
    tiled: 0.84, 0.70, 0.63-0.71)."""
    cdef uint64_t once = 0
    cdef int k
    for k in range(r.ndst, min(r.nops, 64)):
        if 0 <= r.gather[k] < r.nonce:
            once |= (<uint64_t>1) << k
    return uniform_instructions(r, prog, once)


# a pass with row_instr takes blocks this many times longer: each block's
# two phases and fills cost ~100 ns (one thread, pyet/NumPy, A * exp(c):
# float32 128 x 128 1.23-1.30 -> 0.91-0.96, (100, 200) 1.47-1.56 -> 0.96-1.04,
# float64 (256, 128) 0.92-1.04 -> 0.78-0.85; twice: 0.98-1.39 and 0.77-0.86)
DEF COLUMN_BLOCKS = 4


cdef void plan_columns(Run *r, Program prog) noexcept nogil:
    """Packed whole rows with column broadcasts: the instructions that read
    only those (uniform_instructions, not chunk_invariant's) compute one
    element a row (r.row_instr), on the columns gathered one element a row
    (r.col_compact); what the other instructions read of theirs is then
    filled along the rows (r.col_expand, r.reg_expand): tanh(c) in
    A * tanh(c) is computed on the column, as NumPy computes it (one thread,
    pyet/NumPy, every element -> once a row: 64 x 64 float64 2.4 -> 0.9,
    float32 1.56 -> 0.95)."""
    cdef uint64_t cols = 0, row, leaf_other = 0, leaf_row = 0, bit
    cdef int i, j, k, d, nd = r.ndst
    cdef pyet_instr *ins
    r.row_instr = r.col_compact = r.col_expand = r.reg_expand = 0
    r.reg_compact = r.row_scalar = 0
    for k in range(nd, min(r.nops, 64)):
        if column_broadcast(r, k) and r.gather[k] >= 0:
            cols |= (<uint64_t>1) << k
    if not cols:
        return
    row = uniform_instructions(r, prog, cols, r.once_instr)
    if not row:
        return
    for i in range(prog.ninstr):
        ins = &prog.code[i]
        for j in range(ins.nin):
            k = nd + ins.src[j]
            if ins.src_kind[j] == SRC_LEAF and k < 64:
                bit = (<uint64_t>1) << k
                if (row >> i) & 1:
                    leaf_row |= bit
                else:
                    leaf_other |= bit
    # a leaf read twice shares its original's block: the original decides
    for k in range(nd, min(r.nops, 64)):
        if r.dup[k] and (cols >> k) & 1:
            for d in range(nd, k):
                if r.gather[d] == r.gather[k] and not r.dup[d]:
                    bit = (<uint64_t>1) << d
                    if (leaf_row >> k) & 1:
                        leaf_row |= bit
                    if (leaf_other >> k) & 1:
                        leaf_other |= bit
                    break
    r.row_instr = row
    r.col_compact = cols & leaf_row
    r.col_expand = cols & leaf_row & leaf_other
    r.reg_expand = read_by_others(prog, row)
    plan_row_scalars(r, prog)


cdef void plan_row_scalars(Run *r, Program prog) noexcept nogil:
    """Of row_instr's registers that other instructions read (r.reg_expand),
    those every reader takes as its kernel's scalar a row at a time
    (r.row_scalar: an op that computes the same values so, on another input
    that is not a scalar, on rows of COLUMN_ROW_MIN or more) stay one element
    a row (r.reg_compact) and are not filled along the rows."""
    global _row_scalar_count
    cdef uint64_t reads, refused = 0, takers = 0, bit
    cdef int i, j, nreg
    cdef pyet_instr *ins
    r.reg_compact = r.row_scalar = 0
    if not r.reg_expand or r.shape[r.nd - 1] < COLUMN_ROW_MIN:
        return
    for i in range(min(prog.ninstr, 64)):
        bit = (<uint64_t>1) << i
        if (r.row_instr >> i) & 1:
            continue
        ins = &prog.code[i]
        reads = 0
        nreg = 0
        for j in range(ins.nin):
            if ins.src_kind[j] == SRC_REG and (r.reg_expand >> ins.src[j]) & 1:
                reads |= (<uint64_t>1) << ins.src[j]
                nreg += 1
        if not reads:
            continue
        if nreg == 1 and (prog.row_scalar_ok >> i) & 1 and not (r.insx >> i) & 1 \
                and not ins.sflags:
            takers |= bit
        else:
            refused |= reads
    for i in range(min(prog.ninstr, 64)):  # a register filled for one reader is read filled
        if (takers >> i) & 1:
            for j in range(prog.code[i].nin):
                if prog.code[i].src_kind[j] == SRC_REG \
                        and (refused >> prog.code[i].src[j]) & 1:
                    takers &= ~((<uint64_t>1) << i)
    r.row_scalar = takers
    r.reg_compact = r.reg_expand & ~refused
    r.reg_expand &= refused
    if takers:
        _row_scalar_count += 1


cdef Py_ssize_t _row_scalar_count = 0


def row_scalar_count():
    """How many passes have taken a column's computed values as their
    kernels' scalars a row at a time (plan_row_scalars; tests check the path)."""
    return _row_scalar_count


cdef uint64_t read_by_others(Program prog, uint64_t instrs) noexcept nogil:
    # the registers (bits) instructions of instrs write that others read
    cdef uint64_t written = 0, read = 0
    cdef int i, j
    if not instrs:  # (else at most 64 instructions and registers: uniform_instructions)
        return 0
    for i in range(prog.ninstr):
        if (instrs >> i) & 1:
            written |= (<uint64_t>1) << prog.code[i].out
        else:
            for j in range(prog.code[i].nin):
                if prog.code[i].src_kind[j] == SRC_REG:
                    read |= (<uint64_t>1) << prog.code[i].src[j]
    return written & read


cdef void plan_operands(Run *r, Program prog, pyet_intp blocklen, pyet_intp units,
                        bint apart) noexcept:
    # which operands are gathered into blocks (or tiles, or once), read in
    # place, or shared; run_plain or run_block, dst's register, the block
    # counts the threads split, and the prefetched streams
    cdef int k, d, nops = r.nops, ndst = r.ndst, ngather = 0, ntiled = 0
    cdef uint64_t inplace = sx_leaves(r, prog, r.red)
    cdef bint columns = False
    for k in range(nops):
        r.gather[k] = -1
        r.dup[k] = 0
    if ROW_BROADCASTS_ONCE and r.packed and not prog.has_pyfunc \
            and 2 * r.shape[r.nd - 1] <= blocklen:
        # row broadcasts in blocks of whole rows (two or more): the same
        # block for every block, gathered once (their gather blocks first)
        for k in range(nops):
            if row_broadcast(r, k):
                r.gather[k] = ngather
                ngather += 1
            elif k >= ndst and column_broadcast(r, k):
                columns = True
        if ngather or columns:  # (columns: plan_columns)
            r.block = min(blocklen // r.shape[r.nd - 1] * r.shape[r.nd - 1], r.total)
    r.nonce = ngather
    for k in range(nops):
        if r.gather[k] >= 0:
            continue  # a row broadcast, above
        if r.tile and k >= ndst and tiled_leaf(r, k):
            r.gather[k] = -2 - ntiled  # copied a tile at a time (run_tiled)
            ntiled += 1
        elif r.packed:
            if not flat_operand(r, k):
                r.gather[k] = ngather
                ngather += 1
        elif (r.strides[k * MAXD + r.nd - 1] != r.itemsize[k] or (k < ndst and r.red)) \
                and not (r.direct and k >= ndst) and not (k < 64 and (inplace >> k) & 1):
            r.gather[k] = ngather
            ngather += 1
        if r.gather[k] != -1 and k >= ndst:
            # a leaf read twice (where(a > b, a, b)) is gathered once: its
            # block (tile) shared (a Fortran where into C 2x NumPy's time)
            d = same_leaf(r, k)
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
    r.plain = (PLAIN_PASSES and prog.plain and not r.red and not r.packed and not r.tile
               and not r.direct and ngather == 0 and r.insx == 0
               and prog.nregs + prog.nscalars + nops <= PLAIN_SLOTS)
    # a NumPy loop's result written into dst's block, the cheap
    # instructions after it then in place there: dst's lines are fetched
    # while the loop computes, not in the last kernel's stream (one
    # thread, 2e6 float64, against the register: cbrt(a) + 1 0.67-0.71,
    # expm1(a) + 1 0.71-0.77 at four relative alignments of a and dst;
    # 4096: 0.80.  pyet's own kernels in run_plain's short blocks gained
    # nothing: exp(a) + 1 1.0-1.1, tanh(a)*b 0.99-1.08)
    r.dst_reg = prog.dst_reg if (apart and not r.red and not r.packed and not r.tile
                                 and r.gather[0] == -1) else -1
    r.once_instr = r.once_tile = 0
    if r.nonce:
        r.once_instr = chunk_invariant(r, prog)
        r.once_tile = read_by_others(prog, r.once_instr)
    r.row_instr = r.col_compact = r.col_expand = r.reg_expand = 0
    r.reg_compact = r.row_scalar = 0
    if columns and r.block % r.shape[r.nd - 1] == 0:
        plan_columns(r, prog)
        if r.row_instr and r.block <= 2 * BLOCK:  # (kernel-sized blocks, not a NumPy loop's)
            r.block = min(r.block * COLUMN_BLOCKS, r.total)
    if r.once_instr and r.block > BLOCK:
        # the row tiled over blocks of BLOCK's rows, not a NumPy loop's 8 Ki:
        # the tiled register stays in L1 (float64 A * log(b), NumPy's loop,
        # 64 x 128: 1.14x NumPy tiled over 8 Ki, 0.77 over BLOCK)
        r.block = max(BLOCK // r.shape[r.nd - 1], 2) * r.shape[r.nd - 1]
    if r.plain and r.from_memory and r.block == BLOCK // 2 and prog.float_arith \
            and units * pass_itemsizes(r) >= 2 * SX_FAR_BYTES \
            and (PREFETCH_BYTES < 0 or units * pass_itemsizes(r) <= PREFETCH_BYTES):
        # float kernels streaming from beyond the L3 (BLOCK // 2 above):
        # bursts of MEMORY_BURST bytes a register, as run_plain's calls are
        # cheap enough (one thread, 2e6-1e7 elements, time against BLOCK // 2,
        # geometric mean of 10 trees: float64 0.80-0.88, float32 0.81-0.91;
        # 1024 bytes 0.97-1.0, 256 bytes 1.10-1.20; integer trees lost at
        # 2e6 (int64 products 1.04-1.24), float32 under 32 MiB lost too;
        # not where the software prefetch runs (Intel: run_block's, measured
        # with BLOCK // 2))
        r.block = max(16, MEMORY_BURST // prog.max_isz)
    if r.packed:
        r.nblocks = (r.total + r.block - 1) // r.block
        r.nitems = r.nblocks
    else:
        r.nblocks = (r.shape[r.nd - 1] + r.block - 1) // r.block
        r.tile_lead = tile_lead(r) if r.tile and not r.tpp else 0
        r.nitems = r.nblocks * (r.nrows if not r.tile else
                                (r.nrows + r.tile_lead + r.tile - 1) // r.tile)
        if r.tpp:
            r.nitems = r.nrows // r.shape[r.nd - 2] * r.tpp


cdef int reduction_threads(Run *r, int red_threads, pyet_intp red_stride, char *acc,
                           int *nsets) noexcept:
    # a reduction's threads: as many as the caller made accumulators for, 0
    # when it cannot split (refused); *nsets the accumulator sets folded into
    cdef int nthreads = max(1, min(red_threads, r.nitems)), k, d
    cdef pyet_intp units = 1
    if nthreads > 1:
        # units: the outer dimensions along which no accumulator is shared
        # (the leading ones of nonzero stride in dst); split in whole units,
        # the threads share one set of accumulators, each folded by one
        # thread in the order one thread folds it
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
            nsets[0] = nthreads  # per thread: set 0's starting values copied
            for k in range(1, nthreads):
                memcpy(acc + k * red_stride, acc, red_stride)
    return nthreads


cdef int run_pass(Run *r, Program prog, int nthreads, list pyfuncs) except -1:
    # the scratch (registers, gather blocks, tiles a thread), the GIL
    # released or kept, the program run on the pool; a user function's
    # exception raised
    cdef pyet_intp small_buf[512]  # SMALL_SCRATCH bytes
    cdef char *buf = NULL
    cdef bint buf_kept = False
    cdef pyet_intp regbytes = r.block * MAX_REG_BYTES
    cdef int rc
    r.npf = 0
    if not r.red and not r.packed and not r.tile and PREFETCH_BYTES >= 0 \
            and r.nblocks > PREFETCH_AHEAD and not prog.streams:
        prefetch_streams(r)
        if r.npf:  # (run_block's prefetches)
            r.plain = False
    r.tilebuf = (prog.nregs + r.gathers) * regbytes
    r.scratch_bytes = (r.tilebuf + (r.ntiled + r.dtile) * (
        regbytes if r.tpp else r.tile * (regbytes + TILE_SKEW)) + 63) & ~(<pyet_intp>63)
    if nthreads * r.scratch_bytes + 64 <= SMALL_SCRATCH:
        r.scratch = <char *>((<uintptr_t>small_buf + 63) & ~(<uintptr_t>63))
    else:
        buf = take_scratch(nthreads * r.scratch_bytes + 64, &buf_kept)
        if buf == NULL:
            raise MemoryError()
        r.scratch = <char *>((<uintptr_t>buf + 63) & ~(<uintptr_t>63))
    try:
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
            rc = run_parallel(r, prog, nthreads)
        elif quiet:
            token = quiet_numpy()
            try:
                with nogil:
                    rc = run_parallel(r, prog, nthreads)
            finally:
                loud_numpy(token)
        else:
            with nogil:
                rc = run_parallel(r, prog, nthreads)
        if rc < 0:
            if errors:
                raise errors[0]
            raise RuntimeError("pyet: an elementwise pass failed")
    finally:
        give_scratch(buf, buf_kept)
    return 0


cdef void finish_once(Run *r, Once *o) noexcept:
    # dst's rows filled from their first elements (or the 0-d value), then
    # each run of copied dimensions, the innermost first, copied from its
    # index 0 (plan_once)
    cdef BlockCopy bc
    cdef pyet_intp kshape[MAXD]  # the dimensions neither copied nor the last
    cdef pyet_intp kstrides[MAXD]
    cdef pyet_intp ishape[MAXD]
    cdef pyet_intp istrides[MAXD]
    cdef pyet_intp s, items
    cdef int k, d, d0, n = 0, nthreads, rc, last = o.nd - 1
    for d in range(last):
        if not o.copied[d]:
            kshape[n], kstrides[n] = o.shape[d], o.strides[d]
            n += 1
    if o.col:
        if o.written <= GIL_HELD_PASS:
            fill_rows(o.base, n, kshape, kstrides, o.shape[last], o.strides[last],
                      r.itemsize[0], <char *>o.value_slot if o.value else NULL)
        else:
            with nogil:
                fill_rows(o.base, n, kshape, kstrides, o.shape[last], o.strides[last],
                          r.itemsize[0], <char *>o.value_slot if o.value else NULL)
    bc.base, bc.isz, bc.oshape, bc.ostrides = o.base, r.itemsize[0], kshape, kstrides
    bc.ishape, bc.istrides = ishape, istrides
    d = last - 1
    while d >= 0:
        if not o.copied[d]:
            d -= 1
            continue
        d0 = copied_run(o, d)
        bc.nout, bc.nouter = 0, 1
        for k in range(d0):  # (copied dimensions further out stay at index 0)
            if not o.copied[k]:
                bc.nouter *= kshape[bc.nout]
                bc.nout += 1
        bc.nrep, bc.rshape, bc.rstrides = d - d0 + 1, o.shape + d0, o.strides + d0
        bc.nin = 0  # the block: the dimensions after d, merged where contiguous
        for k in range(d + 1, o.nd):
            if bc.nin and istrides[bc.nin - 1] == o.shape[k] * o.strides[k]:
                ishape[bc.nin - 1] *= o.shape[k]
                istrides[bc.nin - 1] = o.strides[k]
            else:
                ishape[bc.nin], istrides[bc.nin] = o.shape[k], o.strides[k]
                bc.nin += 1
        bc.nreps = 1
        for k in range(d0, d + 1):
            bc.nreps *= o.shape[k]
        items = bc.nouter * (bc.nreps - 1)
        s = items
        for k in range(d + 1, o.nd):
            s *= o.shape[k]
        # (threads by bytes: a copy's element is cheaper than a kernel's;
        # bool 512^2 on two threads by elements took 1.3x one's time)
        nthreads = 1 if s <= GIL_HELD_PASS else threads_for(
            s * bc.isz // COPY_BYTES_PER_ELEMENT, items)
        if nthreads <= 1 and s <= GIL_HELD_PASS:
            copy_items(&bc, 0, items)
        else:
            bc.nchunks = 1 if nthreads <= 1 else min(items, 8 * nthreads)
            with nogil:
                run_chunks(copy_chunk, &bc, bc.nchunks, nthreads, &rc)
        d = d0 - 1


# A small pass of kernels and NumPy loops (Program.direct_ok: at most
# DIRECT_MAX elements on one thread, every leaf of dst's shape and memory
# order, contiguous, aligned, and apart from dst or dst itself) runs as one
# row of run_plain's blocks, with none of execute_group's binding, merging and
# planning: a 256-element a + b spent ~2,600 of its ~5,400 instructions there
# (callgrind; NumPy's call ~3,800).  Operands of one axis longer than 1 may
# step any whole number of items for a one-op program's NumPy loop (at most
# GIL_HELD_PASS elements).
cdef bint DIRECT_PASSES = True
cdef Py_ssize_t _direct_count = 0
# passes of up to this many elements may run direct, the GIL released above
# GIL_HELD_PASS: planning a 4096-element bool a & b was ~2,300 of its ~6,800
# instructions (NumPy's call ~5,800).  Direct / planned time, one thread, ten
# trees: 2048 0.52-1.01, 8192 0.67-1.00, 65536 0.91-0.99; from 2^17 no gain
cdef pyet_intp DIRECT_MAX = 65536


def set_direct_max(pyet_intp n):
    """Largest pass (elements) that may run direct (a tuning knob; at most
    GIL_HELD_PASS for operands stepping other than their item size).
    Returns the old value."""
    global DIRECT_MAX
    old, DIRECT_MAX = DIRECT_MAX, n
    return old


def set_direct_passes(bint on):
    """Let small passes skip execute_group's planning (direct_pass; on by
    default; tests compare both).  Returns the old setting."""
    global DIRECT_PASSES
    old, DIRECT_PASSES = DIRECT_PASSES, on
    return old


def direct_pass_count():
    """How many passes have run as direct passes (tests check the path)."""
    return _direct_count


cdef inline bint direct_on(Program prog) noexcept:
    # direct passes are on and prog is one they run, its scalar slots (bound
    # and computed once) within a Small's
    return DIRECT_PASSES and PLAIN_PASSES and prog.direct_ok and prog.nscalars <= DIRECT_SCALARS


cdef inline bint copy_or_fill(Program prog) noexcept:
    # dst = leaf or dst = scalar: the one program a pass of 0-d operands alone
    # runs directly (nothing in it can raise)
    return prog.ninstr == 1 and prog.code[0].op == OP_copy


cdef int direct_pass(Program prog, cnp.ndarray dst, list leaves, list scalars) except -1:
    """Run prog over dst as described above (a recorded pass's operands,
    Pass.run): 1, or 0 (nothing done) when the pass is not such a pass."""
    cdef Small s
    cdef int k
    s.nleaves, s.nscalars = len(leaves), len(scalars)
    if s.nleaves > DIRECT_OPS - 1 or not direct_on(prog):  # (direct_on: the scalars fit)
        return 0
    for k in range(s.nleaves):
        s.leaves[k] = <PyObject *>leaves[k]
    return direct_laid_out(prog, dst, &s, scalars)


cdef int direct_tree(Program prog, cnp.ndarray dst, Expr e) except -1:
    """direct_pass straight from the tree (assign_elementwise), its operands
    collected into C arrays (collect's three lists and their appends were
    ~900 of a small pass's ~3,400 instructions)."""
    cdef Small s
    s.nleaves = s.nscalars = 0
    if not direct_on(prog) or (cnp.PyArray_NDIM(dst) == 0 and not copy_or_fill(prog)):
        return 0  # (a 0-d dst's operands are 0-d: direct_layout's refusal, before the walk)
    # operands stepping other than their item size only for a one-op
    # program's NumPy loop (direct_run)
    cdef bint contiguous = prog.ninstr != 1 or prog.whole_loop == NULL
    if contiguous and not (cnp.PyArray_IS_C_CONTIGUOUS(dst) or cnp.PyArray_IS_F_CONTIGUOUS(dst)):
        return 0
    if not collect_small(e, &s, prog, contiguous):
        return 0
    return direct_laid_out(prog, dst, &s, None)


cdef int direct_laid_out(Program prog, cnp.ndarray dst, Small *s, list scalars) except -1:
    # the layout's checks and the run, scalars (when not stored yet) stored
    # between them (the layout's 4 KiB in this frame, not the walk's: a
    # refused walk costs no stack pages)
    cdef DirectLayout lay
    cdef int k
    if not direct_layout(prog, dst, s, &lay) or (prog.nonce and lay.strided):
        return 0  # (strided operands may refuse after the values computed once)
    if scalars is not None:
        for k in range(s.nscalars):
            store_scalar(s.slots + 8 * k, scalars[k], prog.scalar_dt[k])
    if prog.nonce:
        run_once(prog, s.slots)
    return direct_run(prog, s, &lay)


cdef struct DirectLayout:
    pyet_intp n, block
    bint strided             # an operand's items step other than its item size
    char *base[DIRECT_OPS]
    int itemsize[DIRECT_OPS]
    pyet_intp strides[DIRECT_OPS * MAXD]  # (run_plain reads [k * MAXD])


cdef inline int only_axis(cnp.ndarray a) noexcept:
    # a's one axis longer than 1; -1: none, -2: several
    cdef int d, k = -1
    for d in range(cnp.PyArray_NDIM(a)):
        if cnp.PyArray_DIMS(a)[d] > 1:
            if k >= 0:
                return -2
            k = d
    return k


cdef bint direct_layout(Program prog, cnp.ndarray dst, Small *s, DirectLayout *lay) noexcept:
    # whether dst and s's leaves make a direct pass (above), its operands in
    # lay: contiguous in dst's memory order, or of one axis longer than 1
    # stepping any whole number of items (lay.strided: NumPy's loop, below)
    cdef int nd = cnp.PyArray_NDIM(dst), k, d, isz, dsz = cnp.PyArray_ITEMSIZE(dst)
    cdef int axis = only_axis(dst)
    cdef bint c_order = cnp.PyArray_IS_C_CONTIGUOUS(dst)
    cdef pyet_intp n = 1, step, blocklen
    cdef cnp.ndarray a
    if axis < 0 and not (c_order or cnp.PyArray_IS_F_CONTIGUOUS(dst)):
        return False
    if s.nleaves == 0 and not copy_or_fill(prog):
        # a value of 0-d operands alone, which may raise: computed before dst
        # is written (execute_group's plan_once), as NumPy's temporary
        return False
    for d in range(nd):
        n *= cnp.PyArray_DIMS(dst)[d]
    lay.n = n
    lay.strided = False
    if n == 0 or n > DIRECT_MAX or threads_for(n, n) > 1:
        return False  # (one thread: the threads' least work set lower, not here)
    cdef uintptr_t lo = 0, hi = 0, p, plo, phi
    for k in range(s.nleaves + 1):
        a = dst if k == 0 else <cnp.ndarray>s.leaves[k - 1]
        if k:
            if cnp.PyArray_NDIM(a) != nd:
                return False
            for d in range(nd):
                if cnp.PyArray_DIMS(a)[d] != cnp.PyArray_DIMS(dst)[d]:
                    return False
        isz = cnp.PyArray_ITEMSIZE(a)
        p = <uintptr_t>cnp.PyArray_DATA(a)
        if axis >= 0:
            step = cnp.PyArray_STRIDES(a)[axis]
        elif cnp.PyArray_IS_C_CONTIGUOUS(a) if c_order else cnp.PyArray_IS_F_CONTIGUOUS(a):
            step = isz
        else:
            return False
        if p & (isz - 1):  # (item sizes are powers of two; a strided operand's
            return False   # steps: whole_wanted's _items_aligned, direct_run)
        extent(a, &plo, &phi)
        if k == 0:
            lo, hi = plo, phi
        elif plo < hi and lo < phi and not (
                p == <uintptr_t>lay.base[0] and step == lay.strides[0] and isz == dsz):
            return False  # overlapping dst other than element for element
        lay.base[k], lay.itemsize[k], lay.strides[k * MAXD] = <char *>p, isz, step
        if step != isz:
            if prog.ninstr != 1 or prog.whole_loop == NULL or n > GIL_HELD_PASS:
                return False  # (strided operands: a one-op program's NumPy loop only,
            lay.strided = True  # measured up to GIL_HELD_PASS; longer: the planner's)
    # the normal pass's blocks (kernel_blocklen), or BLOCK where their
    # registers would not fit the stack's DIRECT_REG_BYTES
    blocklen = call_blocklen(prog, kernel_blocklen(prog, n, lay.itemsize, s.nleaves + 1))
    lay.block = n if n < blocklen else blocklen
    if prog.nregs * lay.block * MAX_REG_BYTES > DIRECT_REG_BYTES:
        lay.block = n if n < BLOCK else BLOCK
        if prog.nregs * lay.block * MAX_REG_BYTES > DIRECT_REG_BYTES:
            return False
    return True


cdef int direct_run(Program prog, Small *s, DirectLayout *lay) except -1:
    # run_plain's blocks over contiguous operands; strided ones (one axis)
    # only as a one-op program's NumPy loop where the pass would call it
    # (whole_wanted, run_loop_rows), else 0: nothing done.  Above
    # GIL_HELD_PASS contiguous operands too ask whole_wanted whether the
    # pass would run the op's NumPy loop (CONTIG_LOOPS): in pyet's blocks,
    # float64 abs, maximum and isnan of 32768 took 1.26-1.29x NumPy's loop
    global _direct_count
    cdef char regs[DIRECT_REG_BYTES + 64]
    cdef Run r
    if lay.strided or (lay.n > GIL_HELD_PASS and prog.whole_loop != NULL):
        # (whole_wanted's and run_loop_rows' fields: no memset of the Run)
        r.nd, r.nops, r.ndst, r.shape[0], r.total = 1, s.nleaves + 1, 1, lay.n, lay.n
        r.base, r.strides, r.itemsize, r.scalars = lay.base, lay.strides, lay.itemsize, s.slots
        r.tile, r.packed, r.fpflags = 0, False, 0
        if whole_wanted(&r, prog) and run_loop_rows(&r, prog) >= 0:
            _direct_count += 1
            return 1
        if lay.strided:
            return 0
    memset(&r, 0, sizeof(Run))
    r.nd, r.nops, r.ndst, r.shape[0], r.total = 1, s.nleaves + 1, 1, lay.n, lay.n
    r.base, r.strides, r.itemsize, r.scalars = lay.base, lay.strides, lay.itemsize, s.slots
    r.block, r.nblocks = lay.block, (lay.n + lay.block - 1) // lay.block
    r.nitems = r.nblocks
    r.plain, r.dst_reg, r.red = True, -1, RED_NONE
    r.prog = <void *>prog
    r.scratch = <char *>((<uintptr_t>regs + 63) & ~(<uintptr_t>63))
    if lay.n > GIL_HELD_PASS:
        with nogil:
            run_parallel(&r, prog, 1)
    else:
        run_parallel(&r, prog, 1)
    _direct_count += 1
    if r.fpflags:
        report_fp(r.fpflags)
    return 1


cdef int execute_group(Program prog, list dsts, list leaves, list scalars, list pyfuncs,
                       int red=RED_NONE, int red_threads=1, pyet_intp red_stride=0,
                       pyet_intp red_comp=0) except -1:
    """Run prog over destinations of one shape (several: a multi-output pass,
    each written in statement order within a block).  A reduction returns the
    accumulator sets it folded into (see reduce_into), 0 when it refused."""
    cdef cnp.ndarray dst = <cnp.ndarray>dsts[0]
    cdef int ndst = len(dsts)
    cdef int nops = ndst + len(leaves), nd = cnp.PyArray_NDIM(dst), d, nthreads, col
    cdef int nsets = 1
    cdef pyet_intp units, blocklen
    cdef Once once
    once.col = once.value = False
    once.ncopied = 0
    if nops > 255:
        raise ValueError(f"pyet evaluates trees of at most {255 - ndst} array operands, "
                         f"got {nops - ndst}")
    cdef Run r
    # one allocation for the per-call metadata: strides before and after
    # merging, base pointers, gather buffers, item sizes, scalar slots
    cdef size_t meta = (2 * nops * MAXD * sizeof(pyet_intp) + nops * sizeof(char *)
                        + 8 * (prog.nscalars + 1) + 2 * nops * sizeof(int) + nops)
    # small passes take it on the stack (malloc's arena lock is a good part
    # of a tiny assignment's cost)
    cdef pyet_intp small_meta[1024]  # SMALL_META bytes
    cdef char *mem = <char *>small_meta if meta <= SMALL_META else <char *>malloc(meta)
    cdef pyet_intp *bstrides = <pyet_intp *>mem
    if mem == NULL:
        raise MemoryError()
    r.strides = bstrides + nops * MAXD
    r.base = <char **>(r.strides + nops * MAXD)
    r.scalars = <char *>(r.base + nops)
    r.itemsize = <int *>(r.scalars + 8 * (prog.nscalars + 1))
    r.gather = r.itemsize + nops
    r.dup = <char *>(r.gather + nops)
    r.nops = nops
    r.ndst = ndst
    r.red = red
    r.red_stride = red_stride
    r.red_comp = red_comp
    r.red_units = 0
    cdef bint apart = prog.dst_reg >= 0 and DST_REGISTER  # (Run.dst_reg) no leaf in dst
    try:
        keep = bind_operands(&r, bstrides, dsts, leaves, scalars, prog, &apart)
        # a reduction walks its input's memory order (dst has zero strides)
        r.nd = merge_dims(nd, <pyet_intp *>cnp.PyArray_DIMS(dst), nops, bstrides,
                          r.shape, r.strides, reduce_key(nops, nd, dst, bstrides) if red else -1,
                          r.base)
        if r.nd == 0:
            return 1 if red else 0
        if COLUMNS_ONCE and ndst == 1 and not red:
            plan_once(&r, &once)
        if prog.column_rows and not (once.col or once.ncopied or once.value):
            col = column_slot(&r, prog)
            if col >= 0:
                run_column_rows(&r, prog, col)
                return 0
        units = 1  # the destination's elements
        for d in range(nd):
            units *= cnp.PyArray_DIMS(dst)[d]
        blocklen = plan_blocks(&r, prog, units)
        plan_operands(&r, prog, blocklen, units, apart)
        if red:
            nthreads = reduction_threads(&r, red_threads, red_stride,
                                         <char *>cnp.PyArray_DATA(dst), &nsets)
            if nthreads == 0:
                return 0
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
                    and not once.col and not once.ncopied and whole_wanted(&r, prog):
                if prog.whole_loop != NULL:
                    if run_loop_rows(&r, prog) >= 0:
                        return 0
                elif run_whole(prog, dst, leaves, r.scalars):
                    return 0
        run_pass(&r, prog, nthreads, pyfuncs)
        if once.value:
            if r.fpflags:  # (the 0-d value's errors: dst untouched)
                report_fp(r.fpflags)
            finish_once(&r, &once)
        else:
            if once.col or once.ncopied:
                finish_once(&r, &once)
            if r.fpflags:  # np.errstate's answer to the pass's errors
                report_fp(r.fpflags)
        return nsets if red else 0
    finally:
        if mem != <char *>small_meta:
            free(mem)


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
    # multi-output pass's); a full leaf beside a column: run_column_rows first)
    if not strided and not near and not bcast and CONTIG_LOOPS and prog.whole_contig \
            and prog.whole_loop != NULL and (r.nd == 1 or r.shape[r.nd - 1] >= CONTIG_ROW_MIN):
        return True  # (rows contiguous)
    return strided


cdef inline pyet_intp pass_itemsizes(Run *r) noexcept nogil:
    # bytes a pass moves per element: its operands' item sizes
    return itemsize_sum(r.itemsize, r.nops)


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
    if ins.op == OP_power:  # np.reciprocal: x ** -1 only
        if ins.src_kind[1] != SRC_SCALAR or (
                (<double *>(r.scalars + 8 * ins.src[1]))[0] != -1.0 if ins.dt == DT_F64
                else (<float *>(r.scalars + 8 * ins.src[1]))[0] != -1.0):
            return -1
    cdef LoopRows lr
    lr.r, lr.fn, lr.data, lr.ins = r, prog.whole_loop, prog.whole_data, ins
    r.nchunks, r.nblocks = 1, 1  # (first_row: a row an item)
    run_rows(r, loop_rows_chunk, &lr, 1)
    return 0


cdef void run_rows(Run *r, chunk_fn fn, void *ctx, int nthreads) except *:
    # a row runner's chunks (r.nchunks of them, on up to nthreads threads),
    # the GIL released above GIL_HELD_PASS elements; their flags reported
    r.fpflags = 0
    if r.total <= GIL_HELD_PASS:
        run_chunks(fn, ctx, r.nchunks, nthreads, &r.fpflags)
    else:
        with nogil:
            run_chunks(fn, ctx, r.nchunks, nthreads, &r.fpflags)
    if r.fpflags:
        report_fp(r.fpflags)


cdef struct LoopRows:
    Run *r
    np_loop fn
    void *data
    pyet_instr *ins


# Ops whose kernel computes the same values with an operand as its scalar
# (sflags) as with that operand's values repeated (PYET_LOOP2's one EXPR;
# not power, whose scalar exponents 2, -1 and 0.5 take other formulas, nor
# the integer divisions' precomputed divisors): a column beside a full leaf
# is passed as the kernel's scalar a row at a time (run_column_rows), not
# filled into blocks (packed rows: the fill and its gathers were ~8,000 of
# the ~12,000 instructions of float32 A * col on (20, 200)), nor left to
# NumPy's loops, whose min/max run a stride-0 input in their scalar loop
# (float32 maximum(A, col) of (64, 4096) 1.79x NumPy's own call, which
# buffers the column; 0.44 a row at a time)
cdef set COLUMN_SCALAR_OPS = {OPCODES[name] for name in (
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "copysign", "less",
    "less_equal", "greater", "greater_equal", "equal", "not_equal", "bitwise_and",
    "bitwise_or", "bitwise_xor")}
# on rows of at least this many elements: a kernel call costs ~10 ns, so
# shorter rows stay packed (one thread, pyet/NumPy, blocks -> a call a row:
# float32 A * col (128, 32) 0.94 -> 1.25, float64 (256, 16) 0.82 -> 1.40;
# float32 maximum (64, 64) 1.04 -> 0.96, (181, 181) 1.11 -> 0.75, (512, 512)
# 0.87 -> 0.51; float64 A * col (64, 64) 0.85 -> 0.76, (20, 200) 0.91 -> 0.68)
cdef pyet_intp COLUMN_ROW_MIN = 64
# ... or where there are at most this many: the packed blocks' planning
# costs more than their calls (float32 maximum(A, col), packed -> a call a
# row: (16, 16) 766 -> 706 ns, (24, 32) 915 -> 824, (8, 8) 725 -> 606;
# (32, 16) and (32, 32) the same, (400, 62) 6288 -> 7616: kept packed)
DEF COLUMN_FEW_ROWS = 24
# a strided row (dst's or the full leaf's, not both) from this many elements:
# float32 A * col of (64, 64) into big[:, ::2] 0.95 -> 1.09x NumPy, of
# A[:, ::2] 0.82 -> 0.94; (181, 181) 1.06 -> 0.82 and 0.81 -> 0.56
cdef pyet_intp COLUMN_STRIDED_ROW = 128
cdef bint COLUMN_ROWS = True
cdef Py_ssize_t _column_rows_count = 0


def set_column_rows(bint on, pyet_intp min_row=64):
    """Let one-op passes on a full leaf and a column call the kernel a row
    at a time with the column's element as its scalar, on rows of at least
    ``min_row`` elements or on up to COLUMN_FEW_ROWS (24) rows (tests compare
    with the blocks); returns the old setting."""
    global COLUMN_ROWS, COLUMN_ROW_MIN
    old, COLUMN_ROWS, COLUMN_ROW_MIN = COLUMN_ROWS, on, max(min_row, 1)
    return old


def column_rows_count():
    """How many passes have run a row at a time on a column (tests check
    the path)."""
    return _column_rows_count


cdef int column_slot(Run *r, Program prog) noexcept:
    # which input of prog's one instruction is a column beside a full leaf,
    # both in the kernel's dtype and dst in its result's, every item aligned
    # (strided rows of dst and the full leaf too: run in pieces through
    # buffers): -1 where there is none (or not prog.column_rows)
    cdef pyet_instr *ins = &prog.code[0]
    cdef int last = r.nd - 1, j, k, other, isz = pyet_itemsize[ins.dt]
    cdef pyet_intp nrows = 1
    if not (COLUMN_ROWS and prog.column_rows and r.ndst == 1 and r.red == RED_NONE
            and r.strides[last] != 0 and r.itemsize[0] == pyet_itemsize[ins.dt_out]):
        return -1
    if r.shape[last] < COLUMN_ROW_MIN:
        for j in range(last):
            nrows *= r.shape[j]
        if nrows > COLUMN_FEW_ROWS:
            return -1
    for j in range(2):
        k = 1 + ins.src[j]
        if r.itemsize[k] != isz:
            return -1
    cdef pyet_intp fs
    for j in range(2):
        k, other = 1 + ins.src[j], 1 + ins.src[1 - j]
        fs = r.strides[other * MAXD + last]
        if r.strides[k * MAXD + last] != 0 or fs == 0:
            continue
        if fs != isz or r.strides[last] != r.itemsize[0]:
            # one strided row, from rows of COLUMN_STRIDED_ROW (both strided,
            # float64: the blocks' in-place reads were 0.64-0.84x NumPy, the
            # pieces 0.89-1.00)
            if (fs != isz and r.strides[last] != r.itemsize[0]) \
                    or r.shape[last] < COLUMN_STRIDED_ROW:
                return -1
        return j if _items_aligned(r) else -1
    return -1


cdef struct ColumnRows:
    Run *r
    pyet_instr ins   # the program's instruction, its column input a scalar
    int full         # its other input
    pyet_intp nrows


DEF COLUMN_PIECE = 512  # elements of a strided row a kernel call takes (its buffers)


cdef inline void column_row(ColumnRows *cr, char *out, char **inp, int *route) noexcept nogil:
    # one row: the kernel straight on contiguous rows; on strided ones in
    # pieces, the full leaf gathered into a buffer and dst's piece written
    # from one (in place on a strided view: each piece read before written);
    # its calls routed (call_row)
    cdef Run *r = cr.r
    cdef pyet_intp n = r.shape[r.nd - 1], c, m, ds = r.strides[r.nd - 1]
    cdef pyet_intp fs = r.strides[(1 + cr.ins.src[cr.full]) * MAXD + r.nd - 1]
    cdef int isz = pyet_itemsize[cr.ins.dt], osz = r.itemsize[0]
    cdef uint64_t gathered[COLUMN_PIECE]
    cdef uint64_t written[COLUMN_PIECE]
    cdef void *piece[2]
    if ds == osz and fs == isz:
        call_row(&cr.ins, n, out, <void **>inp, route)
        return
    piece[1 - cr.full] = inp[1 - cr.full]
    c = 0
    while c < n:
        m = n - c if n - c < COLUMN_PIECE else COLUMN_PIECE
        if fs == isz:
            piece[cr.full] = inp[cr.full] + c * isz
        else:
            pyet_copy_strided(<char *>gathered, isz, inp[cr.full] + c * fs, fs, m, isz)
            piece[cr.full] = gathered
        if ds == osz:
            call_row(&cr.ins, m, out + c * osz, piece, route)
        else:
            call_row(&cr.ins, m, written, piece, route)
            pyet_copy_strided(out + c * ds, ds, <char *>written, osz, m, osz)
        c += m


cdef int column_rows_chunk(void *ctx, pyet_intp c, int slot) noexcept nogil:
    # rows [c * nrows / nchunks, (c + 1) * nrows / nchunks) of run_column_rows
    cdef ColumnRows *cr = <ColumnRows *>ctx
    cdef Run *r = cr.r
    cdef pyet_intp idx[MAXD]
    cdef char *row[256]
    cdef char *inp[2]
    cdef pyet_intp r0 = cr.nrows * c // r.nchunks, r1 = cr.nrows * (c + 1) // r.nchunks
    cdef int before = quiet_start(cr.ins.op), route = 0  # (once: ~5 ns a row)
    if r0 < r1:
        first_row(r, r0, idx, row)
    for _ in range(r0, r1):
        inp[0], inp[1] = row[1 + cr.ins.src[0]], row[1 + cr.ins.src[1]]
        column_row(cr, row[0], inp, &route)
        next_row(r, idx, row)
    quiet_end(cr.ins.op, before)
    return 0


cdef int run_column_rows(Run *r, Program prog, int col) except -1:
    """prog's one instruction on each row of the merged operands, input col
    (a column: its row stride 0) as the kernel's scalar, the rows split over
    the pass's threads; its flags reported as a pass's."""
    global _column_rows_count
    cdef ColumnRows cr
    cdef int d, nthreads
    r.total = 1
    for d in range(r.nd):
        r.total *= r.shape[d]
    cr.r, cr.ins, cr.nrows = r, prog.code[0], r.total // r.shape[r.nd - 1]
    cr.ins.sflags, cr.full = 1 << col, 1 - col
    nthreads = threads_for(r.total, cr.nrows)
    r.nchunks, r.nblocks = nthreads, 1  # (first_row: a row an item)
    _column_rows_count += 1
    run_rows(r, column_rows_chunk, &cr, nthreads)
    return 0


cdef int loop_rows_chunk(void *ctx, pyet_intp c, int slot) noexcept nogil:
    # run_loop_rows' one chunk: Program.whole_loop on each row, NumPy's steps
    cdef LoopRows *lr = <LoopRows *>ctx
    cdef Run *r = lr.r
    cdef pyet_instr *ins = lr.ins
    cdef int nd = r.nd, nin = 1 if ins.op == OP_power else ins.nin, j
    cdef char *args[3]
    cdef cnp.npy_intp dims[1]
    cdef cnp.npy_intp steps[3]
    cdef pyet_intp idx[MAXD]
    cdef char *row[256]
    cdef pyet_intp nrows = r.total // r.shape[nd - 1]
    steps[nin] = r.strides[nd - 1]  # the destination, operand 0, last
    for j in range(nin):  # a scalar: step 0, its slot every row
        if ins.src_kind[j] == SRC_LEAF:
            steps[j] = r.strides[(1 + ins.src[j]) * MAXD + nd - 1]
        else:
            args[j], steps[j] = r.scalars + 8 * ins.src[j], 0
    dims[0] = r.shape[nd - 1]
    first_row(r, 0, idx, row)
    for _ in range(nrows):
        args[nin] = row[0]
        for j in range(nin):
            if ins.src_kind[j] == SRC_LEAF:
                args[j] = row[1 + ins.src[j]]
        lr.fn(args, dims, steps, lr.data)
        next_row(r, idx, row)
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


cdef object slot_value(const char *slot, int dt):
    # a scalar slot's value as a NumPy scalar of dtype dt (exact)
    if dt == DT_F64:
        return np.float64((<const double *>slot)[0])
    if dt == DT_F32:
        return np.float32((<const float *>slot)[0])
    if dt == DT_I64:
        return np.int64((<const int64_t *>slot)[0])
    if dt == DT_I32:
        return np.int32((<const int32_t *>slot)[0])
    return np.bool_((<const char *>slot)[0] != 0)


cdef bint run_whole(Program prog, cnp.ndarray dst, list leaves, const char *slots) except -1:
    """Run a one-op program as its NumPy ufunc (prog.whole_fn) on the whole
    operands, NumPy's errors ignored and its flags reported as a pass's;
    False (nothing done) when the op's operands do not allow it.  ``slots``:
    the bound scalars and the values computed once."""
    cdef pyet_instr *ins = &prog.code[0]
    cdef int j, flags = 0, rc
    args = []
    for j in range(ins.nin):
        if ins.src_kind[j] == SRC_LEAF:
            args.append(leaves[ins.src[j]])
        else:  # the scalar in the program's dtype, as store_scalar stored it
            args.append(slot_value(slots + 8 * ins.src[j], ins.dt))
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
