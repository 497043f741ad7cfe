# Reductions' folds: the accumulators a reduction's pass folds blocks into,
# their threads and compensations, and the row folds NumPy's layouts take.

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


def add_compensations(cnp.ndarray accs, pyet_intp size, int nthreads,
                      pyet_intp thread_elems=0):
    """Compensated float64 sums (``accs`` C-ordered float64: per thread, size
    accumulators then their compensations, each thread's set ``thread_elems``
    after the last's, 2 * size when 0): each compensation added to its finite
    accumulator (after an inf the compensation is nan: left out)."""
    cdef double *a = <double *>cnp.PyArray_DATA(accs)
    cdef double *c
    cdef pyet_intp i
    cdef int t
    if cnp.PyArray_TYPE(accs) != cnp.NPY_DOUBLE or not cnp.PyArray_IS_C_CONTIGUOUS(accs) \
            or thread_elems < 0 or (thread_elems and thread_elems < 2 * size) \
            or cnp.PyArray_SIZE(accs) < (thread_elems or 2 * size) * (nthreads - 1) + 2 * size:
        raise ValueError("add_compensations takes C-ordered float64 accumulators")
    if thread_elems == 0:
        thread_elems = 2 * size
    for t in range(nthreads):
        c = a + size
        for i in range(size):
            if isfinite(a[i]):
                a[i] += c[i]
        a += thread_elems
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


cpdef bint sum_rows_first(cnp.ndarray dst, cnp.ndarray src) except -1:
    """A small float leaf's sum over its first axis folded into ``dst`` row
    after row by fold_rows (NumPy's order there: its bits; a bias gradient
    of (256, 128) float32 0.3x the time of np.add.reduce's row by row loop),
    rows of 2 elements or more (rows of 1 of a (16384, 1) column were 5x
    NumPy's time).  False, nothing written, where it does not apply."""
    return (cnp.PyArray_NDIM(src) > 1 and cnp.PyArray_SIZE(src) >= 2 * cnp.PyArray_DIMS(src)[0]
            and fold_rows(dst, src, RED_SUM, 1))


# Reduction._way_of's answer that NumPy's loop takes a leaf on one thread only
# (pyet._nodes.reductions asserts its _NUMPY_ONE_THREAD is this)
LEAF_NUMPY_ONE_THREAD = 2


def reduce_leaves(kernel, cnp.ndarray dst, tuple arrays):
    """A reduction's ``into_leaves`` (pyet._nodes.reductions.Reduction, at
    the root over a leaf; dst of the result's dtype): the leaf's reduction
    by a way of its own (``kernel._run``) or NumPy's own call straight into
    dst, as ``kernel._way_of`` decided for the leaf's layout (kept by its
    strides).  ``kernel._leaf_call`` holds what the calls take: (ways by
    strides, ndarray's argmax or argmin or None, whether it is argmax,
    NumPy's axis, keepdims, whether a sum over axis 0 folds rows first, the
    ufunc's reduce or None, its dtype argument, the smallest leaf a way of
    its own takes).  Compiled: its Python frame was ~3K instructions, a
    fifth of a small argmax into dst.  False, nothing written, where the
    pass takes it."""
    cdef tuple call = kernel._leaf_call
    cdef cnp.ndarray a = <cnp.ndarray?>arrays[0]
    cdef pyet_intp size = cnp.PyArray_SIZE(a)
    cdef int axis
    if not 0 < size < <pyet_intp>call[8]:  # (smaller: NumPy's, no lookup)
        ways = (<dict>call[0]).get((<object>a).strides)
        if ways is None:
            ways = kernel._way_of(a)
        way, numpy = ways
        if way and kernel._run(way, dst, a):
            return True
        if not numpy or (numpy == LEAF_NUMPY_ONE_THREAD
                         and pool_threads(threads_for(size, size)) > 1):
            return False
    arg, numpy_axis, keepdims = call[1], call[3], call[4]
    if arg is not None:
        if keepdims:
            arg(a, numpy_axis, dst, keepdims=True)
        elif type(numpy_axis) is int:  # (NumPy's C call: no method's argument parsing)
            axis = numpy_axis
            if call[2]:
                cnp.PyArray_ArgMax(a, axis, dst)
            else:
                cnp.PyArray_ArgMin(a, axis, dst)
        else:
            arg(a, numpy_axis, dst)
        return True
    if call[5] and sum_rows_first(dst, a):
        return True
    reduce = call[6]
    if reduce is not None:
        reduce(a, numpy_axis, call[7], dst, keepdims)
    else:
        kernel._numpy_into(dst, a)
    return True


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
    cdef list leaves = [], scalars = [], pyfuncs = [], arrays = []
    if may_share(prog, e, shape_size(e.shape)):
        # a costly subtree read twice (sum(s * (1 - s)) of a sigmoid s): once a block
        shared = shared_program(e, acc_dt, leaves, scalars, pyfuncs, arrays)
        if shared is not None:
            prog, leaves = <Program>shared, arrays
            count_shared()
    else:
        collect(e, leaves, scalars, pyfuncs)
    if red == RED_ARGMAX or red == RED_ARGMIN:
        if index is None or index.dtype != np.int64:
            raise TypeError("argmax and argmin fold an int64 index array")
        leaves.append(index)
    return execute(prog, acc, leaves, scalars, pyfuncs, red, nthreads, stride, comp)
