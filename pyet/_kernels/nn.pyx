"""Compiled kernels of the index blocks (``pyet/_nodes/nn.py``): take (gather rows),
choose_row_element, take_grad (scatter-add rows).

Every kernel reads its operands through byte strides (any layout, negative
strides included), writes through byte strides and runs without the GIL;
threads own disjoint parts of the output (ranges of lines, ``run_lines``, on
the thread pool of ``parallel.pyx``), and each element is accumulated in the
same order whatever the thread count.  Arguments are checked by the
callers: the kernels trust their shapes and indices.  Each entry point
copies a misaligned operand (a field of a packed structured array) and
computes into an aligned temporary for a misaligned destination
(``aligned_target``), so the kernels address whole, aligned elements only;
the gathers and the scatter dispatch on the item size or dtype in their line
functions, the softmax kernels select a specialization of their fused type
once (``specialization``).
"""

cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memset

from pyet._kernels.types cimport pyet_intp
from pyet._kernels.parallel cimport run_chunks, threads_for

cdef extern from "kernels.h" nogil:
    void pyet_wrap_indices(const int64_t *x, int64_t *o, pyet_intp size, int64_t n,
                           int64_t *lo, int64_t *hi)


import numpy as np

cnp.import_array()


cdef cnp.ndarray indices(cnp.ndarray idx, pyet_intp n, str fname):
    # idx as n contiguous intp (the callers checked the values)
    if idx.ndim != 1 or idx.shape[0] != n or not (
            (cnp.PyArray_TYPE(idx) == cnp.NPY_INTP and cnp.PyArray_ISNOTSWAPPED(idx))
            or idx.dtype == np.intp):
        raise ValueError(f"{fname}: indices must be {n} intp, got {idx.dtype} of shape "
                         f"{shp(idx)}")
    if cnp.PyArray_IS_C_CONTIGUOUS(idx) and aligned(idx) and cnp.PyArray_ISNOTSWAPPED(idx):
        return idx  # (the nodes' own copies: no conversion to make)
    return np.ascontiguousarray(idx) if aligned(idx) else idx.copy()

cdef inline const pyet_intp *index_data(cnp.ndarray idx):
    return <const pyet_intp *>cnp.PyArray_DATA(idx)


# ------------------------------------------------------------------ threads

cdef struct lines_pass:
    lines_fn fn
    void *args
    pyet_intp lines, nchunks


cdef int lines_chunk(void *ctx, pyet_intp c, int slot) noexcept nogil:
    # chunk c: lines [lines * c / nchunks, lines * (c + 1) / nchunks)
    cdef lines_pass *p = <lines_pass *>ctx
    p.fn(p.args, p.lines * c // p.nchunks, p.lines * (c + 1) // p.nchunks)
    return 0


cdef void run_lines(lines_fn fn, void *args, pyet_intp lines, int nthreads,
                    pyet_intp nchunks) noexcept nogil:
    # The pool claims chunks one at a time and never waits for a thread the OS
    # has not scheduled (OpenMP's closing barrier did); the kernels raise no
    # floating-point errors they report, so the pass's flags are dropped.
    cdef lines_pass p
    cdef int fpflags
    if nthreads <= 1 or nchunks <= 1:
        fn(args, 0, lines)
        return
    p.fn, p.args, p.lines, p.nchunks = fn, args, lines, nchunks
    run_chunks(lines_chunk, &p, nchunks, nthreads, &fpflags)


# ------------------------------------------------------------------ gathers


cdef struct take_args:
    # out[i, :] = w[idx[i], :] (take), out[i] = w[i, idx[i]] (choose); byte strides
    char *out
    const char *w
    const pyet_intp *idx
    pyet_intp os0, os1, ws0, ws1, m
    int itemsize


cdef inline void take_rows(const take_args *a, item_t *out, pyet_intp i0,
                           pyet_intp i1) noexcept nogil:
    # the args in locals: read through a, they were reloaded after every memcpy
    cdef pyet_intp i, os0 = a.os0, os1 = a.os1, ws0 = a.ws0, ws1 = a.ws1, m = a.m
    cdef pyet_intp nb = m * <pyet_intp>sizeof(item_t)
    cdef const pyet_intp *idx = a.idx
    cdef item_t *w = <item_t *>a.w
    if os1 == sizeof(item_t) and ws1 == sizeof(item_t) and nb >= 64:
        # contiguous rows of a line or more: a memcpy each, the layout tested
        # once (copy_row's tests each row were ~20 instructions of its ~60)
        for i in range(i0, i1):
            memcpy(at(out, i * os0), at(w, idx[i] * ws0), nb)
        return
    for i in range(i0, i1):
        copy_row(at(out, i * os0), os1, <const item_t *>at(w, idx[i] * ws0), ws1, m)


cdef void take_lines(void *args, pyet_intp i0, pyet_intp i1) noexcept nogil:
    cdef const take_args *a = <const take_args *>args
    if a.itemsize == 1:
        take_rows(a, <uint8_t *>a.out, i0, i1)
    elif a.itemsize == 4:
        take_rows(a, <uint32_t *>a.out, i0, i1)
    else:
        take_rows(a, <uint64_t *>a.out, i0, i1)


cdef inline void choose_rows(const take_args *a, item_t *out, pyet_intp i0,
                             pyet_intp i1) noexcept nogil:
    cdef pyet_intp i, os0 = a.os0, ws0 = a.ws0, ws1 = a.ws1
    cdef const pyet_intp *idx = a.idx
    cdef item_t *w = <item_t *>a.w
    for i in range(i0, i1):
        at(out, i * os0)[0] = at(w, i * ws0 + idx[i] * ws1)[0]


cdef void choose_lines(void *args, pyet_intp i0, pyet_intp i1) noexcept nogil:
    cdef const take_args *a = <const take_args *>args
    if a.itemsize == 1:
        choose_rows(a, <uint8_t *>a.out, i0, i1)
    elif a.itemsize == 4:
        choose_rows(a, <uint32_t *>a.out, i0, i1)
    else:
        choose_rows(a, <uint64_t *>a.out, i0, i1)


cdef take_args gather_args(cnp.ndarray out, cnp.ndarray w, cnp.ndarray idx, pyet_intp m):
    # the operands of take and choose: out (n, m) or (n,), w 2-D
    cdef take_args a
    a.out = <char *>cnp.PyArray_DATA(out)
    a.w = <const char *>cnp.PyArray_DATA(w)
    a.idx = index_data(idx)
    a.os0 = out.strides[0]
    a.os1 = out.strides[1] if out.ndim > 1 else 0
    a.ws0, a.ws1 = w.strides[0], w.strides[1]
    a.m = m
    a.itemsize = cnp.PyArray_ITEMSIZE(out)
    return a


def wrapped_indices(cnp.ndarray idx, pyet_intp n):
    """(a new contiguous intp copy of integer ``idx`` with negatives counted
    from the end (n added), its least and greatest value) in one pass; the
    caller checks the range (out of it, the copy is None or meaningless)."""
    if not cnp.PyArray_ISINTEGER(idx):  # (dtype.kind in "iu", without the lookups)
        raise TypeError(f"indices must be integers, got {idx.dtype}")
    if cnp.PyArray_TYPE(idx) == cnp.NPY_UINT64 and idx.size:
        top = int(idx.max())
        if top > 0x7FFFFFFFFFFFFFFF:  # beyond int64: out of range for any n
            return None, 0, top
    # (an aligned C-contiguous int64 vector, the common case, read in place:
    # NumPy's conversions cost ~0.4 us of a 64-index call's ~0.8)
    src = idx if cnp.PyArray_TYPE(idx) in (cnp.NPY_INT64, cnp.NPY_LONGLONG) \
        and cnp.PyArray_ITEMSIZE(idx) == 8 and cnp.PyArray_ISNOTSWAPPED(idx) \
        and cnp.PyArray_IS_C_CONTIGUOUS(idx) and cnp.PyArray_ISALIGNED(idx) \
        else np.ascontiguousarray(idx, dtype=np.int64)
    out = cnp.PyArray_EMPTY(cnp.PyArray_NDIM(idx), cnp.PyArray_DIMS(idx),
                            cnp.NPY_INTP if sizeof(pyet_intp) == 8 else cnp.NPY_INT64, 0)
    cdef const int64_t *x = <const int64_t *>cnp.PyArray_DATA(src)
    cdef int64_t *o = <int64_t *>cnp.PyArray_DATA(out)
    cdef pyet_intp size = cnp.PyArray_SIZE(src)
    cdef int64_t lo = 0, hi = 0
    if size <= 65536:  # (releasing the GIL cost a third of a 64-index call)
        pyet_wrap_indices(x, o, size, n, &lo, &hi)
    else:
        with nogil:
            pyet_wrap_indices(x, o, size, n, &lo, &hi)
    return (out if sizeof(pyet_intp) == 8 else out.astype(np.intp, copy=False)), lo, hi


def one_hot_rows(cnp.ndarray idx, cnp.ndarray out):
    """Write the one-hot rows of the class indices ``idx`` (negatives counted
    from the end) into ``out``, of shape (len(idx), classes): True.  An index
    outside ``[-classes, classes)`` raises IndexError naming it, nothing
    written.  False, nothing written, for what it does not take: ``idx`` not
    1-D native int64 (aligned, contiguous), ``out`` not float32/float64 and
    C-contiguous aligned writeable, or the shapes not agreeing (a training
    step's per-call fill: one pass instead of NumPy's three, ~5 us of a
    batch-256 step's ~420)."""
    cdef int typ = cnp.PyArray_TYPE(out)
    if cnp.PyArray_NDIM(idx) != 1 or cnp.PyArray_NDIM(out) != 2 \
            or cnp.PyArray_TYPE(idx) not in (cnp.NPY_INT64, cnp.NPY_LONGLONG) \
            or cnp.PyArray_ITEMSIZE(idx) != 8 or not cnp.PyArray_ISNOTSWAPPED(idx) \
            or not cnp.PyArray_IS_C_CONTIGUOUS(idx) or not aligned(idx) \
            or (typ != cnp.NPY_FLOAT and typ != cnp.NPY_DOUBLE) \
            or not cnp.PyArray_IS_C_CONTIGUOUS(out) or not aligned(out) \
            or not cnp.PyArray_ISWRITEABLE(out) or out.shape[0] != idx.shape[0]:
        return False
    cdef const int64_t *x = <const int64_t *>cnp.PyArray_DATA(idx)
    cdef pyet_intp i, rows = out.shape[0], n = out.shape[1]
    cdef int64_t v
    for i in range(rows):  # every index checked before any write
        if x[i] < -n or x[i] >= n:
            raise IndexError(f"index {x[i]} is out of range for {n} classes")
    cdef float *f = <float *>cnp.PyArray_DATA(out)
    cdef double *d = <double *>cnp.PyArray_DATA(out)
    with nogil:
        if typ == cnp.NPY_FLOAT:
            for i in range(rows * n):
                f[i] = 0
            for i in range(rows):
                v = x[i]
                f[i * n + (v + n if v < 0 else v)] = 1
        else:
            for i in range(rows * n):
                d[i] = 0
            for i in range(rows):
                v = x[i]
                d[i * n + (v + n if v < 0 else v)] = 1
    return True


def take_leaves(kernel, cnp.ndarray out, tuple arrays):
    """Take's ``into_leaves`` (pyet's Special): take_into for the arrays
    (indices, table) of a vector of indices and a 2-D table into a 2-D
    ``out``; False, nothing written, for other shapes."""
    cdef cnp.ndarray idx = arrays[0], w = arrays[1]
    if out.ndim != 2 or w.ndim != 2 or idx.ndim != 1:
        return False
    _take_checked(out, w, idx)
    return True


def take_into(cnp.ndarray out, cnp.ndarray w, cnp.ndarray idx):
    """``out[i, :] = w[idx[i], :]``.

    Parameters
    ----------
    out : ndarray (n, m)
        Any strides; w's dtype.
    w : ndarray (rows, m)
        Any strides.
    idx : ndarray (n,) of intp
        Contiguous, each in ``[0, rows)`` (checked by the caller).
    """
    _take_checked(out, w, idx)


cdef _take_checked(cnp.ndarray out, cnp.ndarray w, cnp.ndarray idx):
    if out.ndim != 2 or w.ndim != 2 or w.shape[1] != out.shape[1] or not (
            w.descr is out.descr or cnp.PyArray_EquivTypes(w.descr, out.descr)):
        raise ValueError(f"take_into: cannot take rows of {w.dtype} {shp(w)} into "
                         f"{out.dtype} {shp(out)}")
    if not fused_name(out, True):  # (take copies bits: any 1-, 4- or 8-byte dtype)
        raise TypeError(f"take_into: unsupported dtype {out.dtype}")
    idx = indices(idx, out.shape[0], "take_into")
    if out.size:
        target = aligned_target(out)
        _take_rows(target, readable(w), idx)
        if target is not out:
            out[...] = target


cdef _take_rows(cnp.ndarray out, cnp.ndarray w, cnp.ndarray idx):
    cdef pyet_intp n = out.shape[0], m = out.shape[1]
    cdef take_args a = gather_args(out, w, idx, m)
    cdef int nt = threads_for(n * m, n)
    if nt <= 1 and n * m * a.itemsize <= 65536:
        # in-cache rows on one thread: releasing and retaking the GIL would be
        # a good part of the call
        take_lines(&a, 0, n)
        return
    with nogil:
        run_lines(take_lines, &a, n, nt, chunks_for(n, nt))


cdef _choose_rows(cnp.ndarray out, cnp.ndarray a, cnp.ndarray idx):
    cdef pyet_intp n = out.shape[0]
    cdef take_args args = gather_args(out, a, idx, 1)
    cdef int nt = threads_for(n, n)
    if nt <= 1:  # (releasing the GIL was ~0.1 us of a 128-row call's ~0.5)
        choose_lines(&args, 0, n)
        return
    with nogil:
        run_lines(choose_lines, &args, n, nt, chunks_for(n, nt))


def choose_leaves(kernel, cnp.ndarray out, tuple arrays):
    """ChooseRowElement's ``into_leaves`` (pyet's Special): choose_into for
    the arrays (matrix, indices); the node checked the shapes and the
    indices' range when it was built (choose_row_element of 128 rows at the
    root: into()'s Python frames were ~0.8 us of ~1.3)."""
    _choose_checked(out, arrays[0], arrays[1])
    return True


def choose_into(cnp.ndarray out, cnp.ndarray a, cnp.ndarray idx):
    """``out[i] = a[i, idx[i]]``.

    Parameters
    ----------
    out : ndarray (n,)
        Any strides; a's dtype.
    a : ndarray (n, m)
        Any strides.
    idx : ndarray (n,) of intp
        Each in ``[0, m)`` (checked by the caller).
    """
    _choose_checked(out, a, idx)


cdef _choose_checked(cnp.ndarray out, cnp.ndarray a, cnp.ndarray idx):
    if out.ndim != 1 or a.ndim != 2 or a.shape[0] != out.shape[0] or not (
            a.descr is out.descr or cnp.PyArray_EquivTypes(a.descr, out.descr)):
        raise ValueError(f"choose_into: cannot choose from {a.dtype} {shp(a)} into "
                         f"{out.dtype} {shp(out)}")
    if not fused_name(out, True):  # (choose copies bits: any 1-, 4- or 8-byte dtype)
        raise TypeError(f"choose_into: unsupported dtype {out.dtype}")
    idx = indices(idx, out.shape[0], "choose_into")
    if out.size:
        target = aligned_target(out)
        _choose_rows(target, readable(a), idx)
        if target is not out:
            out[...] = target


# ------------------------------------------------------------------ scatter-add


cdef void take_grad_part(num_t *out, pyet_intp os0, pyet_intp os1, const num_t *g,
                         pyet_intp gs0, pyet_intp gs1, const pyet_intp *idx, pyet_intp n,
                         pyet_intp rows, pyet_intp m, pyet_intp r0, pyet_intp r1) noexcept nogil:
    # rows [r0, r1) of out (rows, m): zeroed, then every g[i, :] with idx[i] in
    # [r0, r1) added into its row, in the order of i
    cdef pyet_intp i, j, k, b, r
    cdef pyet_intp sel[256]
    cdef size_t span = r1 - r0
    # (zero is all-zero bytes in every num_t; memset: 1000 rows of 64 float32
    # zeroed element by element through byte strides took 3.4x NumPy's fill)
    if os1 == sizeof(num_t) and os0 == m * os1:
        memset(ref(out, r0 * os0), 0, span * os0)
    elif os1 == sizeof(num_t):
        for r in range(r0, r1):
            memset(ref(out, r * os0), 0, m * os1)
    else:
        for r in range(r0, r1):
            for j in range(m):
                ref(ref(out, r * os0), j * os1)[0] = 0
    if r0 == 0 and r1 == rows:
        for i in range(n):
            add_row(ref(out, idx[i] * os0), os1, <const num_t *>ref(<num_t *>g, i * gs0), gs1,
                    m)
        return
    # some rows: the indices in them gathered a block at a time without a branch
    # (a test per index would be mispredicted at random), then added
    for b in range(0, n, 256):
        k = 0
        for i in range(b, min(b + 256, n)):
            sel[k] = i
            k += <size_t>(idx[i] - r0) < span
        for j in range(k):
            i = sel[j]
            add_row(ref(out, idx[i] * os0), os1, <const num_t *>ref(<num_t *>g, i * gs0), gs1,
                    m)


cdef struct take_grad_args:
    # out (rows, m) = 0; out[idx[i], :] += g[i, :] for i < n; byte strides.
    # Lines are out's rows.
    char *out
    const char *g
    const pyet_intp *idx
    pyet_intp os0, os1, gs0, gs1, n, rows, m
    num_kind kind


cdef inline void take_grad_lines_t(const take_grad_args *a, num_t *out, pyet_intp r0,
                                   pyet_intp r1) noexcept nogil:
    take_grad_part(out, a.os0, a.os1, <const num_t *>a.g, a.gs0, a.gs1, a.idx, a.n, a.rows,
                   a.m, r0, r1)


cdef void take_grad_lines(void *args, pyet_intp l0, pyet_intp l1) noexcept nogil:
    cdef const take_grad_args *a = <const take_grad_args *>args
    if a.kind == KIND_F32:
        take_grad_lines_t(a, <float *>a.out, l0, l1)
    elif a.kind == KIND_F64:
        take_grad_lines_t(a, <double *>a.out, l0, l1)
    elif a.kind == KIND_I32:
        take_grad_lines_t(a, <int32_t *>a.out, l0, l1)
    else:
        take_grad_lines_t(a, <int64_t *>a.out, l0, l1)


cdef _take_grad_rows(cnp.ndarray out, cnp.ndarray g, cnp.ndarray idx, num_kind kind):
    cdef pyet_intp rows = out.shape[0], m = out.shape[1], n = g.shape[0]
    cdef take_grad_args a
    a.out = <char *>cnp.PyArray_DATA(out)
    a.g = <const char *>cnp.PyArray_DATA(g)
    a.idx = index_data(idx)
    a.os0, a.os1, a.gs0, a.gs1 = out.strides[0], out.strides[1], g.strides[0], g.strides[1]
    a.n, a.rows, a.m = n, rows, m
    a.kind = kind
    cdef int nt = threads_for(n * m + rows * m, max(rows, m))
    # Threads own disjoint row ranges of out, one chunk each (every chunk scans all
    # of idx).  Any split of the scatter costs more work than one pass (row ranges
    # read g's rows sparsely, column ranges read each row once per range: run in
    # turn on a busy machine, either took 1.5-1.7x one pass on 30000 rows of 64
    # float32 into 1000), so threads only when zeroing out's rows dominates
    if rows < 4 * n:
        nt = 1
    if nt <= 1 and rows * m * cnp.PyArray_ITEMSIZE(out) <= 65536:
        take_grad_lines(&a, 0, rows)  # (in cache on one thread: the GIL kept)
        return
    with nogil:
        run_lines(take_grad_lines, &a, rows, nt, min(nt, rows))


def take_grad_leaves(kernel, cnp.ndarray out, tuple arrays):
    """TakeGrad's ``into_leaves`` (pyet's Special): take_grad_into for the
    arrays (indices, G) of a vector of indices and 2-D rows; False, nothing
    written, for other shapes (into() reshapes them).  An embedding
    gradient of 2 rows into 32 at the root: into()'s Python frames were
    ~1.4 us of ~1.9."""
    cdef cnp.ndarray idx = arrays[0], g = arrays[1]
    if out.ndim != 2 or g.ndim != 2 or idx.ndim != 1:
        return False
    _take_grad_checked(out, g, idx)
    return True


def take_grad_into(cnp.ndarray out, cnp.ndarray g, cnp.ndarray idx):
    """``out = 0; out[idx[i], :] += g[i, :]``.

    Parameters
    ----------
    out : ndarray (rows, m)
        Any strides; int32, int64, float32 or float64.
    g : ndarray (n, m)
        Any strides; out's dtype.
    idx : ndarray (n,) of intp
        Each in ``[0, rows)`` (checked by the caller).
    """
    _take_grad_checked(out, g, idx)


cdef _take_grad_checked(cnp.ndarray out, cnp.ndarray g, cnp.ndarray idx):
    if out.ndim != 2 or g.ndim != 2 or g.shape[1] != out.shape[1] or not (
            g.descr is out.descr or cnp.PyArray_EquivTypes(g.descr, out.descr)):
        raise ValueError(f"take_grad_into: cannot add rows of {g.dtype} {shp(g)} into "
                         f"{out.dtype} {shp(out)}")
    cdef int kind = num_kind_of(out)
    if kind < 0:
        raise TypeError(f"take_grad_into: unsupported dtype {out.dtype}")
    idx = indices(idx, g.shape[0], "take_grad_into")
    if out.size:
        target = aligned_target(out)
        _take_grad_rows(target, readable(g), idx, <num_kind>kind)
        if target is not out:
            out[...] = target


# ------------------------------------------------------------------ softmax

cdef extern from "softmax.h" nogil:
    void pyet_softmax_rows_f32(pyet_intp nrows, pyet_intp n, const float *x, pyet_intp xs,
                               float *o, pyet_intp os, int take_log) noexcept
    void pyet_softmax_rows_f64(pyet_intp nrows, pyet_intp n, const double *x, pyet_intp xs,
                               double *o, pyet_intp os, int take_log) noexcept
    void pyet_softmax_cols_f32(pyet_intp n, pyet_intp w, const float *x, pyet_intp xs,
                               float *o, pyet_intp os, int take_log) noexcept
    void pyet_softmax_cols_f64(pyet_intp n, pyet_intp w, const double *x, pyet_intp xs,
                               double *o, pyet_intp os, int take_log) noexcept
    void pyet_xent_grad_rows_f32(pyet_intp nrows, pyet_intp n, const float *l, pyet_intp ls,
                                 const float *t, pyet_intp ts, const pyet_intp *idx,
                                 const float *c, pyet_intp cs, float *o,
                                 pyet_intp os) noexcept
    void pyet_xent_grad_rows_f64(pyet_intp nrows, pyet_intp n, const double *l, pyet_intp ls,
                                 const double *t, pyet_intp ts, const pyet_intp *idx,
                                 const double *c, pyet_intp cs, double *o,
                                 pyet_intp os) noexcept
    enum: PYET_COLS


ctypedef fused real:
    float
    double


cdef struct softmax_args:
    # rows: softmax of x's rows into out's; cols: of (outer, n, inner) arrays
    # along n, a tile of w columns at a time (ntiles per outer index).  Strides
    # in elements.
    const void *x
    void *out
    pyet_intp xs0, xs1, os0, os1, n, ninner, ntiles, w
    bint take_log, f32


cdef void softmax_lines(void *args, pyet_intp r0, pyet_intp r1) noexcept nogil:
    cdef const softmax_args *a = <const softmax_args *>args
    if a.f32:
        pyet_softmax_rows_f32(r1 - r0, a.n, <const float *>a.x + r0 * a.xs0, a.xs0,
                              <float *>a.out + r0 * a.os0, a.os0, a.take_log)
    else:
        pyet_softmax_rows_f64(r1 - r0, a.n, <const double *>a.x + r0 * a.xs0, a.xs0,
                              <double *>a.out + r0 * a.os0, a.os0, a.take_log)


cdef void softmax_tiles(void *args, pyet_intp k0, pyet_intp k1) noexcept nogil:
    # tiles k0..k1-1: tile k is columns [c0, c0 + w) of outer index k // ntiles
    cdef const softmax_args *a = <const softmax_args *>args
    cdef pyet_intp k, i, c0, width
    for k in range(k0, k1):
        i = k // a.ntiles
        c0 = (k % a.ntiles) * a.w
        width = min(a.w, a.ninner - c0)
        if a.f32:
            pyet_softmax_cols_f32(a.n, width, <const float *>a.x + i * a.xs0 + c0, a.xs1,
                                  <float *>a.out + i * a.os0 + c0, a.os1, a.take_log)
        else:
            pyet_softmax_cols_f64(a.n, width, <const double *>a.x + i * a.xs0 + c0, a.xs1,
                                  <double *>a.out + i * a.os0 + c0, a.os1, a.take_log)


cdef softmax_args softmax_operands(cnp.ndarray out, cnp.ndarray x, bint take_log):
    # x, out float32 or float64, (nrows, n) with contiguous rows or (outer, n, inner)
    # with a contiguous inner axis; aligned: the other strides are whole elements
    cdef softmax_args a
    a.x, a.out = cnp.PyArray_DATA(x), cnp.PyArray_DATA(out)
    a.xs0 = x.strides[0] // cnp.PyArray_ITEMSIZE(x)
    a.os0 = out.strides[0] // cnp.PyArray_ITEMSIZE(out)
    a.xs1 = x.strides[1] // cnp.PyArray_ITEMSIZE(x) if x.ndim > 2 else 1
    a.os1 = out.strides[1] // cnp.PyArray_ITEMSIZE(out) if out.ndim > 2 else 1
    a.n = x.shape[1]
    a.take_log, a.f32 = take_log, cnp.PyArray_ITEMSIZE(x) == 4
    return a


def _softmax(real tag, cnp.ndarray out, cnp.ndarray x, bint take_log):
    cdef pyet_intp nrows = x.shape[0]
    cdef softmax_args a = softmax_operands(out, x, take_log)
    cdef int nt = threads_for(nrows * a.n, nrows)
    with nogil:
        run_lines(softmax_lines, &a, nrows, nt, chunks_for(nrows, nt))


cdef inline bint rows_ok(cnp.ndarray a):
    # aligned, each row contiguous: what softmax.h addresses
    return aligned(a) and (a.shape[1] <= 1 or a.strides[1] == cnp.PyArray_ITEMSIZE(a))


def softmax_rows(cnp.ndarray x, cnp.ndarray out, bint take_log):
    """Softmax (or log-softmax) of each row of ``x`` into ``out``.

    Parameters
    ----------
    x, out : ndarray
        2-D float32/float64 of one dtype and shape, not overlapping.  Any
        strides: rows that are not contiguous and aligned are copied (x) or
        computed aside and copied in (out).
    take_log : bool
        Log-softmax.

    Raises
    ------
    ValueError
        If the shapes differ or are not 2-D.
    TypeError
        If the dtypes differ or are not float32/float64.
    """
    if x.ndim != 2 or (<object>x).shape != (<object>out).shape:
        raise ValueError(f"softmax_rows: x {shp(x)} and out {shp(out)} must be one 2-D shape")
    if x.dtype != out.dtype:
        raise TypeError(f"softmax_rows: x and out must share one dtype, got {x.dtype} and "
                        f"{out.dtype}")
    fn = specialization(_softmax, out, False, "softmax_rows")
    if x.size == 0:
        return
    if not rows_ok(x):
        x = np.array(x, order="C")  # a copy, aligned
    if rows_ok(out):
        fn(0, out, x, take_log)
    else:
        tmp = np.empty((<object>out).shape, out.dtype)
        fn(0, tmp, x, take_log)
        out[...] = tmp


def _softmax_cols(real tag, cnp.ndarray out, cnp.ndarray x, bint take_log):
    # (outer, n, inner) arrays, inner contiguous and aligned: tiles of columns
    cdef softmax_args a = softmax_operands(out, x, take_log)
    cdef pyet_intp nouter = x.shape[0]
    a.ninner = x.shape[2]
    # tiles as wide as the kernel takes, split evenly: measured on 1000x1000,
    # 64x128x128 and 8192x128 float32, wide tiles beat tiles sized to stay in
    # L2 (up to 2x): each row of a tile is read as whole cache lines, and the
    # hardware prefetcher follows runs of them
    a.ntiles = (a.ninner + PYET_COLS - 1) // PYET_COLS
    a.w = (a.ninner + a.ntiles - 1) // a.ntiles
    a.w = min(PYET_COLS, (a.w + 15) // 16 * 16)
    a.ntiles = (a.ninner + a.w - 1) // a.w
    cdef pyet_intp ntasks = nouter * a.ntiles
    cdef int nt = threads_for(nouter * a.n * a.ninner, ntasks)
    with nogil:
        run_lines(softmax_tiles, &a, ntasks, nt, chunks_for(ntasks, nt))


cdef inline bint cols_ok(cnp.ndarray a):
    # aligned, the inner axis contiguous: what pyet_softmax_cols addresses
    return aligned(a) and (a.shape[2] <= 1 or a.strides[2] == cnp.PyArray_ITEMSIZE(a))


def softmax_cols(cnp.ndarray x, cnp.ndarray out, bint take_log):
    """Softmax (or log-softmax) along axis 1 of 3-D ``x`` into ``out``.

    The reduced axis is the middle one of (outer, n, inner); the inner axis
    is read along its contiguous memory, a tile of columns at a time, so no
    transposed copy is made.

    Parameters
    ----------
    x, out : ndarray
        3-D float32/float64 of one dtype and shape, not overlapping.  Any
        strides: arrays whose inner axis is not contiguous and aligned are
        copied (x) or computed aside and copied in (out).
    take_log : bool
        Log-softmax.

    Raises
    ------
    ValueError
        If the shapes differ or are not 3-D.
    TypeError
        If the dtypes differ or are not float32/float64.
    """
    if x.ndim != 3 or (<object>x).shape != (<object>out).shape:
        raise ValueError(f"softmax_cols: x {shp(x)} and out {shp(out)} must be one 3-D shape")
    if x.dtype != out.dtype:
        raise TypeError(f"softmax_cols: x and out must share one dtype, got {x.dtype} and "
                        f"{out.dtype}")
    fn = specialization(_softmax_cols, out, False, "softmax_cols")
    if x.size == 0:
        return
    if not cols_ok(x):
        x = np.array(x, order="C")
    if cols_ok(out):
        fn(0, out, x, take_log)
    else:
        tmp = np.empty((<object>out).shape, out.dtype)
        fn(0, tmp, x, take_log)
        out[...] = tmp


cdef struct xent_args:
    # out = c * (exp(l) * sum(t, row) - t) by rows; t rows, or class indices idx
    const void *l
    const void *t
    const pyet_intp *idx
    const void *c
    void *out
    pyet_intp ls, ts, cs, os, n
    bint f32


cdef void xent_lines(void *args, pyet_intp r0, pyet_intp r1) noexcept nogil:
    cdef const xent_args *a = <const xent_args *>args
    cdef const pyet_intp *idx = a.idx + r0 if a.idx != NULL else NULL
    if a.f32:
        pyet_xent_grad_rows_f32(r1 - r0, a.n, <const float *>a.l + r0 * a.ls, a.ls,
                                <const float *>a.t + r0 * a.ts if a.t != NULL else NULL,
                                a.ts, idx, <const float *>a.c + r0 * a.cs, a.cs,
                                <float *>a.out + r0 * a.os, a.os)
    else:
        pyet_xent_grad_rows_f64(r1 - r0, a.n, <const double *>a.l + r0 * a.ls, a.ls,
                                <const double *>a.t + r0 * a.ts if a.t != NULL else NULL,
                                a.ts, idx, <const double *>a.c + r0 * a.cs, a.cs,
                                <double *>a.out + r0 * a.os, a.os)


cdef inline pyet_intp row_step(cnp.ndarray x) noexcept:
    # the row stride in items: callers checked aligned(x), so it is a multiple
    # of the itemsize (a packed field's is not, and is refused there); any sign
    return x.strides[0] // cnp.PyArray_ITEMSIZE(x) if x.shape[0] > 1 else 0


cdef void run_xent(xent_args *a, const void *logp, pyet_intp ls, void *out, pyet_intp os,
                   pyet_intp nrows, pyet_intp n, bint f32) noexcept:
    # the rows' pass, on the runner's threads (a.t/a.ts or a.idx, a.c/a.cs set)
    a.l, a.ls, a.out, a.os, a.n, a.f32 = logp, ls, out, os, n, f32
    cdef int nt = threads_for(nrows * n, nrows)
    with nogil:
        run_lines(xent_lines, a, nrows, nt, chunks_for(nrows, nt))


def _xent_grad(real tag, cnp.ndarray out, cnp.ndarray logp, object t, object idx,
               cnp.ndarray c):
    cdef xent_args a
    a.c, a.cs = cnp.PyArray_DATA(c), row_step(c)
    a.t, a.ts, a.idx = NULL, 0, NULL
    if t is not None:
        a.t, a.ts = cnp.PyArray_DATA(<cnp.ndarray>t), row_step(<cnp.ndarray>t)
    else:
        a.idx = <const pyet_intp *>cnp.PyArray_DATA(<cnp.ndarray>idx)
    run_xent(&a, cnp.PyArray_DATA(logp), row_step(logp), cnp.PyArray_DATA(out), row_step(out),
             logp.shape[0], logp.shape[1], real is float)


def xent_grad_leaves(kernel, cnp.ndarray out, tuple arrays):
    """SoftmaxXentGrad's ``into_leaves`` (pyet's Special): along axis 1 of
    2-D float leaves with aligned contiguous rows, a one-element factor c and
    targets of logp's shape or the node's own intp class indices, checked in
    C: no Python frame of into(), of the row views or of the dtype dispatch
    (64 x 64 float32 with class indices: ~1.5 us of ~10).  False, nothing
    written, for anything else (the general path)."""
    cdef cnp.ndarray logp = arrays[0], t = arrays[1], c = arrays[2]
    cdef int typ = cnp.PyArray_TYPE(out)
    cdef xent_args a
    cdef pyet_intp nrows
    if kernel.axis != 1 or cnp.PyArray_NDIM(out) != 2 or cnp.PyArray_NDIM(logp) != 2 \
            or (typ != cnp.NPY_FLOAT and typ != cnp.NPY_DOUBLE) \
            or cnp.PyArray_TYPE(logp) != typ or cnp.PyArray_TYPE(c) != typ \
            or cnp.PyArray_SIZE(c) != 1 or not aligned(c) \
            or not cnp.PyArray_SAMESHAPE(logp, out) or not rows_ok(logp) or not rows_ok(out):
        return False
    nrows = out.shape[0]
    a.t, a.ts, a.idx = NULL, 0, NULL
    if cnp.PyArray_TYPE(t) == cnp.NPY_INTP and cnp.PyArray_NDIM(t) == 1 \
            and t.shape[0] == nrows and cnp.PyArray_IS_C_CONTIGUOUS(t) and aligned(t) \
            and cnp.PyArray_ISNOTSWAPPED(t):
        a.idx = <const pyet_intp *>cnp.PyArray_DATA(t)
    elif cnp.PyArray_TYPE(t) == typ and cnp.PyArray_SAMESHAPE(t, out) and rows_ok(t):
        a.t, a.ts = cnp.PyArray_DATA(t), row_step(t)
    else:
        return False
    if cnp.PyArray_SIZE(out) == 0:
        return True
    a.c, a.cs = cnp.PyArray_DATA(c), 0
    run_xent(&a, cnp.PyArray_DATA(logp), row_step(logp), cnp.PyArray_DATA(out), row_step(out),
             nrows, logp.shape[1], typ == cnp.NPY_FLOAT)
    return True


def xent_grad_rows(cnp.ndarray logp, object t, cnp.ndarray c, cnp.ndarray out):
    """``out = c * (exp(logp) * sum(t, row) - t)`` row by row, in one pass per row.

    With ``logp`` the log-softmax of logits, ``exp(logp)`` is their softmax: this is
    the gradient of softmax cross-entropy ``-sum(t * log_softmax(x))`` with
    respect to ``x`` scaled by ``c``, for any ``t`` (rows need not sum to 1).

    Parameters
    ----------
    logp, out : ndarray
        2-D float32/float64 of one dtype and shape, not overlapping each other.
    t : ndarray
        2-D of ``logp``'s shape and dtype (the targets), or 1-D intp class
        indices in ``[0, logp.shape[1])`` (one-hot targets; checked by the caller).
    c : ndarray
        1-D of ``logp``'s dtype: one factor per row, or one for all rows.

    Raises
    ------
    ValueError
        If the shapes do not fit.
    TypeError
        If the dtypes differ or are not float32/float64.
    """
    if logp.ndim != 2 or (<object>logp).shape != (<object>out).shape:
        raise ValueError(f"xent_grad_rows: logp {shp(logp)} and out {shp(out)} must be one 2-D "
                         "shape")
    if logp.dtype != out.dtype or c.dtype != out.dtype or \
            (t.dtype != out.dtype and t.dtype != np.intp):
        raise TypeError("xent_grad_rows: logp, t, c and out must share one float dtype "
                        f"(t: or intp indices), got {logp.dtype}, {t.dtype}, {c.dtype} and "
                        f"{out.dtype}")
    if c.ndim != 1 or c.shape[0] not in (1, logp.shape[0]):
        raise ValueError(f"xent_grad_rows: c of shape {shp(c)} must have 1 or {logp.shape[0]} "
                         "elements")
    idx = None
    if t.dtype == np.intp:
        if t.ndim != 1 or t.shape[0] != logp.shape[0]:
            raise ValueError(f"xent_grad_rows: indices of shape {shp(t)} must be "
                             f"({logp.shape[0]},)")
        idx, t = np.ascontiguousarray(t), None
    elif (<object>t).shape != (<object>logp).shape:
        raise ValueError(f"xent_grad_rows: t {shp(t)} must have logp's shape {shp(logp)}")
    fn = specialization(_xent_grad, out, False, "xent_grad_rows")
    if logp.size == 0:
        return
    if not rows_ok(logp):
        logp = np.array(logp, order="C")
    if t is not None and not rows_ok(t):
        t = np.array(t, order="C")
    if not aligned(c):
        c = c.copy()
    if rows_ok(out):
        fn(0, out, logp, t, idx, c)
    else:
        tmp = np.empty((<object>out).shape, out.dtype)
        fn(0, tmp, logp, t, idx, c)
        out[...] = tmp
