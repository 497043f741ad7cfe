"""Compiled kernels of the index blocks (``_nn.py``): take (gather rows),
choose_row_element, take_grad (scatter-add rows).

Every kernel reads its operands through byte strides (any layout, negative
strides included), writes through byte strides and runs without the GIL;
threads own disjoint parts of the output, and each element is accumulated in
the same order whatever the thread count.  Arguments are checked by the
callers: the kernels trust their shapes and indices.
"""

cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from pyet._kernels.kernels cimport pyet_intp
from pyet._kernels.parallel cimport threads_for

cnp.import_array()

cdef inline const pyet_intp *index_data(cnp.ndarray idx):
    return <const pyet_intp *>cnp.PyArray_DATA(idx)


# ------------------------------------------------------------------ gathers


cdef void take_kernel(item_t *out, pyet_intp os0, pyet_intp os1, const item_t *w,
                      pyet_intp ws0, pyet_intp ws1, const pyet_intp *idx, pyet_intp n,
                      pyet_intp m, int nthreads) noexcept nogil:
    # out[i, :] = w[idx[i], :]
    cdef pyet_intp i
    if nthreads > 1:
        for i in prange(n, num_threads=nthreads, schedule="static"):
            copy_row(at(out, i * os0), os1, <const item_t *>at(<item_t *>w, idx[i] * ws0),
                     ws1, m)
    else:
        for i in range(n):
            copy_row(at(out, i * os0), os1, <const item_t *>at(<item_t *>w, idx[i] * ws0),
                     ws1, m)


cdef void choose_kernel(item_t *out, pyet_intp os, const item_t *a, pyet_intp as0,
                        pyet_intp as1, const pyet_intp *idx, pyet_intp n,
                        int nthreads) noexcept nogil:
    # out[i] = a[i, idx[i]]
    cdef pyet_intp i
    if nthreads > 1:
        for i in prange(n, num_threads=nthreads, schedule="static"):
            at(out, i * os)[0] = at(<item_t *>a, i * as0 + idx[i] * as1)[0]
    else:
        for i in range(n):
            at(out, i * os)[0] = at(<item_t *>a, i * as0 + idx[i] * as1)[0]


def take_into(cnp.ndarray out, cnp.ndarray w, cnp.ndarray idx):
    """``out[i, :] = w[idx[i], :]``: out (n, m), w (rows, m), idx (n,) intp, contiguous."""
    cdef pyet_intp n = out.shape[0], m = out.shape[1]
    cdef pyet_intp os0 = out.strides[0], os1 = out.strides[1]
    cdef pyet_intp ws0 = w.strides[0], ws1 = w.strides[1]
    cdef const pyet_intp *ip = index_data(idx)
    cdef void *po = cnp.PyArray_DATA(out)
    cdef const void *pw = cnp.PyArray_DATA(w)
    cdef int nt = threads_for(n * m, n), size = out.itemsize
    with nogil:
        if size == 1:
            take_kernel(<uint8_t *>po, os0, os1, <const uint8_t *>pw, ws0, ws1, ip, n, m, nt)
        elif size == 4:
            take_kernel(<uint32_t *>po, os0, os1, <const uint32_t *>pw, ws0, ws1, ip, n, m, nt)
        else:
            take_kernel(<uint64_t *>po, os0, os1, <const uint64_t *>pw, ws0, ws1, ip, n, m, nt)


def choose_into(cnp.ndarray out, cnp.ndarray a, cnp.ndarray idx):
    """``out[i] = a[i, idx[i]]``: out (n,), a (n, m), idx (n,) intp, contiguous."""
    cdef pyet_intp n = out.shape[0], os = out.strides[0]
    cdef pyet_intp as0 = a.strides[0], as1 = a.strides[1]
    cdef const pyet_intp *ip = index_data(idx)
    cdef void *po = cnp.PyArray_DATA(out)
    cdef const void *pa = cnp.PyArray_DATA(a)
    cdef int nt = threads_for(n, n), size = out.itemsize
    with nogil:
        if size == 1:
            choose_kernel(<uint8_t *>po, os, <const uint8_t *>pa, as0, as1, ip, n, nt)
        elif size == 4:
            choose_kernel(<uint32_t *>po, os, <const uint32_t *>pa, as0, as1, ip, n, nt)
        else:
            choose_kernel(<uint64_t *>po, os, <const uint64_t *>pa, as0, as1, ip, n, nt)


# ------------------------------------------------------------------ scatter-add

cdef void take_grad_part(num_t *out, pyet_intp os0, pyet_intp os1, const num_t *g,
                         pyet_intp gs0, pyet_intp gs1, const pyet_intp *idx, pyet_intp n,
                         pyet_intp r0, pyet_intp r1, pyet_intp c0, pyet_intp c1) noexcept nogil:
    # the part of out in rows [r0, r1) and columns [c0, c1): zeroed, then every
    # g[i, c0:c1] with idx[i] in [r0, r1) added into it, in the order of i
    cdef pyet_intp i, j, r
    cdef num_t *row
    cdef const num_t *src
    for r in range(r0, r1):
        row = ref(out, r * os0)
        for j in range(c0, c1):
            ref(row, j * os1)[0] = 0
    for i in range(n):
        r = idx[i]
        if r < r0 or r >= r1:
            continue
        row = ref(out, r * os0)
        src = <const num_t *>ref(<num_t *>g, i * gs0)
        if os1 == sizeof(num_t) and gs1 == sizeof(num_t):
            for j in range(c0, c1):
                row[j] += src[j]
        else:
            for j in range(c0, c1):
                ref(row, j * os1)[0] += get(src, j * gs1)


cdef void take_grad_kernel(num_t *out, pyet_intp os0, pyet_intp os1, const num_t *g,
                           pyet_intp gs0, pyet_intp gs1, const pyet_intp *idx, pyet_intp n,
                           pyet_intp rows, pyet_intp m, int nthreads) noexcept nogil:
    # Threads own disjoint parts of out: column ranges when rows are wide
    # enough (every thread reads every index once), else row ranges.
    cdef pyet_intp t
    if nthreads <= 1:
        take_grad_part(out, os0, os1, g, gs0, gs1, idx, n, 0, rows, 0, m)
    elif m >= 64 * nthreads:
        for t in prange(nthreads, num_threads=nthreads, schedule="static"):
            take_grad_part(out, os0, os1, g, gs0, gs1, idx, n, 0, rows,
                           m * t // nthreads, m * (t + 1) // nthreads)
    else:
        for t in prange(nthreads, num_threads=nthreads, schedule="static"):
            take_grad_part(out, os0, os1, g, gs0, gs1, idx, n,
                           rows * t // nthreads, rows * (t + 1) // nthreads, 0, m)


def take_grad_into(cnp.ndarray out, cnp.ndarray g, cnp.ndarray idx):
    """``out = 0; out[idx[i], :] += g[i, :]``: out (rows, m), g (n, m), idx (n,) intp."""
    cdef pyet_intp rows = out.shape[0], m = out.shape[1], n = g.shape[0]
    cdef pyet_intp os0 = out.strides[0], os1 = out.strides[1]
    cdef pyet_intp gs0 = g.strides[0], gs1 = g.strides[1]
    cdef const pyet_intp *ip = index_data(idx)
    cdef void *po = cnp.PyArray_DATA(out)
    cdef const void *pg = cnp.PyArray_DATA(g)
    cdef int nt = threads_for(n * m + rows * m, max(rows, m)), typ = out.descr.type_num
    with nogil:
        if typ == cnp.NPY_FLOAT32:
            take_grad_kernel(<float *>po, os0, os1, <const float *>pg, gs0, gs1, ip, n, rows,
                             m, nt)
        elif typ == cnp.NPY_FLOAT64:
            take_grad_kernel(<double *>po, os0, os1, <const double *>pg, gs0, gs1, ip, n, rows,
                             m, nt)
        elif typ == cnp.NPY_INT32:
            take_grad_kernel(<int32_t *>po, os0, os1, <const int32_t *>pg, gs0, gs1, ip, n,
                             rows, m, nt)
        else:
            take_grad_kernel(<int64_t *>po, os0, os1, <const int64_t *>pg, gs0, gs1, ip, n,
                             rows, m, nt)


# ------------------------------------------------------------------ softmax

cdef extern from "softmax.h" nogil:
    void pyet_softmax_rows_f32(pyet_intp nrows, pyet_intp n, const float *x, pyet_intp xs,
                               float *o, pyet_intp os, int take_log) noexcept
    void pyet_softmax_rows_f64(pyet_intp nrows, pyet_intp n, const double *x, pyet_intp xs,
                               double *o, pyet_intp os, int take_log) noexcept


def softmax_rows(cnp.ndarray x, cnp.ndarray out, bint take_log):
    """Softmax (or log-softmax) of each row of x into out: 2-D float32/float64
    arrays of one dtype and shape whose rows are contiguous (n >= 1)."""
    cdef pyet_intp nrows = x.shape[0], n = x.shape[1], r0, r1, c
    cdef pyet_intp xs = x.strides[0] // x.itemsize, os = out.strides[0] // out.itemsize
    cdef char *px = <char *>cnp.PyArray_DATA(x)
    cdef char *po = <char *>cnp.PyArray_DATA(out)
    cdef bint single = x.dtype.num == cnp.NPY_FLOAT
    cdef int nt = threads_for(nrows * n, nrows), k = x.itemsize
    # chunks handed out dynamically: a thread the OS delays does not hold the others up
    cdef pyet_intp nchunks = min(nrows, 8 * nt) if nt > 1 else 1
    with nogil:
        for c in prange(nchunks, num_threads=nt, schedule="dynamic", chunksize=1):
            r0 = nrows * c // nchunks
            r1 = nrows * (c + 1) // nchunks
            if single:
                pyet_softmax_rows_f32(r1 - r0, n, <const float *>(px + r0 * xs * k), xs,
                                      <float *>(po + r0 * os * k), os, take_log)
            else:
                pyet_softmax_rows_f64(r1 - r0, n, <const double *>(px + r0 * xs * k), xs,
                                      <double *>(po + r0 * os * k), os, take_log)
