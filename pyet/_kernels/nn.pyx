"""Compiled kernels of the index blocks (``pyet/_nodes/nn.py``): take (gather rows),
choose_row_element, take_grad (scatter-add rows).

Every kernel reads its operands through byte strides (any layout, negative
strides included), writes through byte strides and runs without the GIL;
threads own disjoint parts of the output, and each element is accumulated in
the same order whatever the thread count.  Arguments are checked by the
callers: the kernels trust their shapes and indices.  Each entry point
copies a misaligned operand (a field of a packed structured array) and
computes aside for a misaligned destination, so the kernels address whole,
aligned elements only; the dtype selects a specialization of the kernel's
fused type once (``specialization``).
"""

cimport numpy as cnp
from cython.parallel cimport prange

from pyet._kernels.types cimport pyet_intp
from pyet._kernels.parallel cimport threads_for

import numpy as np

cnp.import_array()


cdef cnp.ndarray indices(cnp.ndarray idx, pyet_intp n, str fname):
    # idx as n contiguous intp (the callers checked the values)
    if idx.ndim != 1 or idx.shape[0] != n or idx.dtype != np.intp:
        raise ValueError(f"{fname}: indices must be {n} intp, got {idx.dtype} of shape "
                         f"{shp(idx)}")
    return np.ascontiguousarray(idx) if aligned(idx) else idx.copy()

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


def _take(item_t tag, cnp.ndarray out, cnp.ndarray w, cnp.ndarray idx):
    cdef pyet_intp n = out.shape[0], m = out.shape[1]
    cdef pyet_intp os0 = out.strides[0], os1 = out.strides[1]
    cdef pyet_intp ws0 = w.strides[0], ws1 = w.strides[1]
    cdef const pyet_intp *ip = index_data(idx)
    cdef item_t *po = <item_t *>cnp.PyArray_DATA(out)
    cdef const item_t *pw = <const item_t *>cnp.PyArray_DATA(w)
    cdef int nt = threads_for(n * m, n)
    with nogil:
        take_kernel(po, os0, os1, pw, ws0, ws1, ip, n, m, nt)


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
    if out.ndim != 2 or w.ndim != 2 or w.shape[1] != out.shape[1] or w.dtype != out.dtype:
        raise ValueError(f"take_into: cannot take rows of {w.dtype} {shp(w)} into "
                         f"{out.dtype} {shp(out)}")
    fn = specialization(_take, out, True, "take_into")
    idx = indices(idx, out.shape[0], "take_into")
    if out.size:
        aside(fn, out, (readable(w), idx))


def _choose(item_t tag, cnp.ndarray out, cnp.ndarray a, cnp.ndarray idx):
    cdef pyet_intp n = out.shape[0], os = out.strides[0]
    cdef pyet_intp as0 = a.strides[0], as1 = a.strides[1]
    cdef const pyet_intp *ip = index_data(idx)
    cdef item_t *po = <item_t *>cnp.PyArray_DATA(out)
    cdef const item_t *pa = <const item_t *>cnp.PyArray_DATA(a)
    cdef int nt = threads_for(n, n)
    with nogil:
        choose_kernel(po, os, pa, as0, as1, ip, n, nt)


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
    if out.ndim != 1 or a.ndim != 2 or a.shape[0] != out.shape[0] or a.dtype != out.dtype:
        raise ValueError(f"choose_into: cannot choose from {a.dtype} {shp(a)} into "
                         f"{out.dtype} {shp(out)}")
    fn = specialization(_choose, out, True, "choose_into")
    idx = indices(idx, out.shape[0], "choose_into")
    if out.size:
        aside(fn, out, (readable(a), idx))


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


def _take_grad(num_t tag, cnp.ndarray out, cnp.ndarray g, cnp.ndarray idx):
    cdef pyet_intp rows = out.shape[0], m = out.shape[1], n = g.shape[0]
    cdef pyet_intp os0 = out.strides[0], os1 = out.strides[1]
    cdef pyet_intp gs0 = g.strides[0], gs1 = g.strides[1]
    cdef const pyet_intp *ip = index_data(idx)
    cdef num_t *po = <num_t *>cnp.PyArray_DATA(out)
    cdef const num_t *pg = <const num_t *>cnp.PyArray_DATA(g)
    cdef int nt = threads_for(n * m + rows * m, max(rows, m))
    with nogil:
        take_grad_kernel(po, os0, os1, pg, gs0, gs1, ip, n, rows, m, nt)


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
    if out.ndim != 2 or g.ndim != 2 or g.shape[1] != out.shape[1] or g.dtype != out.dtype:
        raise ValueError(f"take_grad_into: cannot add rows of {g.dtype} {shp(g)} into "
                         f"{out.dtype} {shp(out)}")
    fn = specialization(_take_grad, out, False, "take_grad_into")
    idx = indices(idx, g.shape[0], "take_grad_into")
    if out.size:
        aside(fn, out, (readable(g), idx))


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


def _softmax(real tag, cnp.ndarray out, cnp.ndarray x, bint take_log):
    # rows contiguous and aligned: row strides are whole elements
    cdef pyet_intp nrows = x.shape[0], n = x.shape[1], r0, r1, c
    cdef pyet_intp xs = x.strides[0] // x.itemsize, os = out.strides[0] // out.itemsize
    cdef const real *px = <const real *>cnp.PyArray_DATA(x)
    cdef real *po = <real *>cnp.PyArray_DATA(out)
    cdef int nt = threads_for(nrows * n, nrows)
    # chunks handed out dynamically: a thread the OS delays does not hold the others up
    cdef pyet_intp nchunks = min(nrows, 8 * nt) if nt > 1 else 1
    with nogil:
        for c in prange(nchunks, num_threads=nt, schedule="dynamic", chunksize=1):
            r0 = nrows * c // nchunks
            r1 = nrows * (c + 1) // nchunks
            if real is float:
                pyet_softmax_rows_f32(r1 - r0, n, px + r0 * xs, xs, po + r0 * os, os, take_log)
            else:
                pyet_softmax_rows_f64(r1 - r0, n, px + r0 * xs, xs, po + r0 * os, os, take_log)


cdef inline bint rows_ok(cnp.ndarray a):
    # aligned, each row contiguous: what softmax.h addresses
    return aligned(a) and (a.shape[1] <= 1 or a.strides[1] == a.itemsize)


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
    cdef pyet_intp nouter = x.shape[0], n = x.shape[1], ninner = x.shape[2]
    cdef pyet_intp xs0 = x.strides[0] // x.itemsize, xs1 = x.strides[1] // x.itemsize
    cdef pyet_intp os0 = out.strides[0] // out.itemsize, os1 = out.strides[1] // out.itemsize
    # tiles as wide as the kernel takes, split evenly: measured on 1000x1000,
    # 64x128x128 and 8192x128 float32, wide tiles beat tiles sized to stay in
    # L2 (up to 2x): each row of a tile is read as whole cache lines, and the
    # hardware prefetcher follows runs of them
    cdef pyet_intp ntiles = (ninner + PYET_COLS - 1) // PYET_COLS
    cdef pyet_intp w = (ninner + ntiles - 1) // ntiles
    w = min(PYET_COLS, (w + 15) // 16 * 16)
    ntiles = (ninner + w - 1) // w
    cdef pyet_intp ntasks = nouter * ntiles, k, a, c0, width
    cdef const real *px = <const real *>cnp.PyArray_DATA(x)
    cdef real *po = <real *>cnp.PyArray_DATA(out)
    cdef int nt = threads_for(nouter * n * ninner, ntasks)
    with nogil:
        for k in prange(ntasks, num_threads=nt, schedule="dynamic", chunksize=1):
            a = k // ntiles
            c0 = (k % ntiles) * w
            width = min(w, ninner - c0)
            if real is float:
                pyet_softmax_cols_f32(n, width, px + a * xs0 + c0, xs1, po + a * os0 + c0, os1,
                                      take_log)
            else:
                pyet_softmax_cols_f64(n, width, px + a * xs0 + c0, xs1, po + a * os0 + c0, os1,
                                      take_log)


cdef inline bint cols_ok(cnp.ndarray a):
    # aligned, the inner axis contiguous: what pyet_softmax_cols addresses
    return aligned(a) and (a.shape[2] <= 1 or a.strides[2] == a.itemsize)


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


def _xent_grad(real tag, cnp.ndarray out, cnp.ndarray logp, object t, object idx,
               cnp.ndarray c):
    cdef pyet_intp nrows = logp.shape[0], n = logp.shape[1], r0, r1, k
    cdef pyet_intp ls = logp.strides[0] // logp.itemsize, os = out.strides[0] // out.itemsize
    cdef pyet_intp ts = 0, cs = c.strides[0] // c.itemsize if c.shape[0] > 1 else 0
    cdef const real *pl = <const real *>cnp.PyArray_DATA(logp)
    cdef const real *pc = <const real *>cnp.PyArray_DATA(c)
    cdef real *po = <real *>cnp.PyArray_DATA(out)
    cdef const real *pt = NULL
    cdef const pyet_intp *pi = NULL
    if t is not None:
        pt = <const real *>cnp.PyArray_DATA(<cnp.ndarray>t)
        ts = (<cnp.ndarray>t).strides[0] // (<cnp.ndarray>t).itemsize
    else:
        pi = <const pyet_intp *>cnp.PyArray_DATA(<cnp.ndarray>idx)
    cdef int nt = threads_for(nrows * n, nrows)
    cdef pyet_intp nchunks = min(nrows, 8 * nt) if nt > 1 else 1
    with nogil:
        for k in prange(nchunks, num_threads=nt, schedule="dynamic", chunksize=1):
            r0 = nrows * k // nchunks
            r1 = nrows * (k + 1) // nchunks
            if real is float:
                pyet_xent_grad_rows_f32(r1 - r0, n, pl + r0 * ls, ls,
                                        pt + r0 * ts if pt != NULL else NULL, ts,
                                        pi + r0 if pi != NULL else NULL, pc + r0 * cs, cs,
                                        po + r0 * os, os)
            else:
                pyet_xent_grad_rows_f64(r1 - r0, n, pl + r0 * ls, ls,
                                        pt + r0 * ts if pt != NULL else NULL, ts,
                                        pi + r0 if pi != NULL else NULL, pc + r0 * cs, cs,
                                        po + r0 * os, os)


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
