"""Compiled kernels of the spatial blocks (``pyet/_nodes/spatial.py``): im2col, col2im,
pooling and its gradient.

Each kernel splits its work into independent lines (a matrix row segment, an
image row, a pooled row) that write disjoint elements, so threads never race,
and sums every element in the same order whatever the thread count.  Operands
are read and written through byte strides.  Arguments are checked by the
callers: the kernels trust their shapes.  Each entry point copies a
misaligned operand and computes aside for a misaligned destination, so the
kernels address whole, aligned elements only; the dtype selects a
specialization of the kernel's fused type once (``specialization``).
"""

cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport NAN

from pyet._kernels.types cimport pyet_intp
from pyet._kernels.nn cimport (aside, at, copy_row, get, item_t, num_t, readable, ref, shp,
                               specialization)
from pyet._kernels.parallel cimport threads_for

cnp.import_array()


cdef int check_dtypes(cnp.ndarray out, tuple arrays, str fname) except -1:
    for a in arrays:
        if (<cnp.ndarray>a).dtype != out.dtype:
            raise TypeError(f"{fname}: operands must share out's dtype {out.dtype}, got "
                            f"{(<cnp.ndarray>a).dtype}")
    return 0

cdef struct geom:
    # an image batch (N, C, H, W), kernel ky x kx, strides, dilations, and
    # the number of patch positions oH x oW
    pyet_intp N, C, H, W, ky, kx, sy, sx, dy, dx, oH, oW


cdef inline void im2col_row(item_t *out, pyet_intp os0, pyet_intp os1, const item_t *img,
                            const pyet_intp *s, const geom *g, pyet_intp r) noexcept nogil:
    # row r = (c, py, px) of the matrix: that kernel tap at every patch position
    # of every image, one run of oW columns per (image, patch row)
    cdef pyet_intp c = r // (g.ky * g.kx), py = r // g.kx % g.ky, px = r % g.kx, n, oy
    cdef item_t *dst = at(out, r * os0)
    cdef const item_t *src
    for n in range(g.N):
        src = <const item_t *>at(<item_t *>img, n * s[0] + c * s[1] + py * g.dy * s[2]
                                 + px * g.dx * s[3])
        for oy in range(g.oH):
            copy_row(dst, os1, <const item_t *>at(<item_t *>src, oy * g.sy * s[2]),
                     g.sx * s[3], g.oW)
            dst = at(dst, g.oW * os1)


cdef void im2col_kernel(item_t *out, pyet_intp os0, pyet_intp os1, const item_t *img,
                        const pyet_intp *s, const geom *g, int nthreads) noexcept nogil:
    cdef pyet_intp r, rows = g.C * g.ky * g.kx
    if nthreads > 1:
        for r in prange(rows, num_threads=nthreads, schedule="dynamic"):
            im2col_row(out, os0, os1, img, s, g, r)
    else:
        for r in range(rows):
            im2col_row(out, os0, os1, img, s, g, r)


cdef inline void col2im_line(num_t *out, const pyet_intp *o, const num_t *col, pyet_intp cs0,
                             pyet_intp cs1, const geom *g, pyet_intp line) noexcept nogil:
    # line = (image n, channel c, image row y): the sum of every patch
    # element that came from that row, in the order of (py, px, ox)
    cdef pyet_intp n = line // (g.C * g.H), c = line // g.H % g.C, y = line % g.H
    cdef pyet_intp py, px, ox, t, oy
    cdef num_t *row = ref(out, n * o[0] + c * o[1] + y * o[2])
    cdef const num_t *src
    for ox in range(g.W):
        ref(row, ox * o[3])[0] = 0
    for py in range(g.ky):
        t = y - py * g.dy
        if t < 0:
            break
        if t % g.sy:
            continue
        oy = t // g.sy
        if oy >= g.oH:
            continue
        for px in range(g.kx):
            src = <const num_t *>ref(<num_t *>col, ((c * g.ky + py) * g.kx + px) * cs0
                                     + (n * g.oH + oy) * g.oW * cs1)
            for ox in range(g.oW):
                ref(row, (ox * g.sx + px * g.dx) * o[3])[0] += get(src, ox * cs1)


cdef void col2im_kernel(num_t *out, const pyet_intp *o, const num_t *col, pyet_intp cs0,
                        pyet_intp cs1, const geom *g, int nthreads) noexcept nogil:
    cdef pyet_intp line, lines = g.N * g.C * g.H
    if nthreads > 1:
        for line in prange(lines, num_threads=nthreads, schedule="static"):
            col2im_line(out, o, col, cs0, cs1, g, line)
    else:
        for line in range(lines):
            col2im_line(out, o, col, cs0, cs1, g, line)


cdef geom make_geom(cnp.ndarray img, pyet_intp ky, pyet_intp kx, pyet_intp sy, pyet_intp sx,
                    pyet_intp dy, pyet_intp dx):
    cdef geom g
    g.N, g.C, g.H, g.W = img.shape[0], img.shape[1], img.shape[2], img.shape[3]
    g.ky, g.kx, g.sy, g.sx, g.dy, g.dx = ky, kx, sy, sx, dy, dx
    g.oH = (g.H - (dy * (ky - 1) + 1)) // sy + 1
    g.oW = (g.W - (dx * (kx - 1) + 1)) // sx + 1
    return g


def _im2col(item_t tag, cnp.ndarray out, cnp.ndarray img, tuple geometry):
    cdef pyet_intp ky, kx, sy, sx, dy, dx
    ky, kx, sy, sx, dy, dx = geometry
    cdef geom g = make_geom(img, ky, kx, sy, sx, dy, dx)
    cdef pyet_intp s[4]
    cdef pyet_intp os0 = out.strides[0], os1 = out.strides[1]
    for d in range(4):
        s[d] = img.strides[d]
    cdef item_t *po = <item_t *>cnp.PyArray_DATA(out)
    cdef const item_t *pi = <const item_t *>cnp.PyArray_DATA(img)
    cdef int nt = threads_for(out.size, out.shape[0])
    with nogil:
        im2col_kernel(po, os0, os1, pi, s, &g, nt)


def im2col_into(cnp.ndarray out, cnp.ndarray img, pyet_intp ky, pyet_intp kx, pyet_intp sy,
                pyet_intp sx, pyet_intp dy, pyet_intp dx):
    """Patches of img (N, C, H, W) as the columns of out (C*ky*kx, N*oH*oW).

    Parameters
    ----------
    out : ndarray
        Any strides, img's dtype; its shape is checked.
    img : ndarray
        Any strides.
    ky, kx, sy, sx, dy, dx : int
        Kernel size, strides and dilations (>= 1; the kernel fits: checked by the caller).
    """
    cdef geom g = make_geom(img, ky, kx, sy, sx, dy, dx)
    if out.ndim != 2 or out.shape[0] != g.C * ky * kx or out.shape[1] != g.N * g.oH * g.oW:
        raise ValueError(f"im2col_into: out {shp(out)} is not the patch matrix of {shp(img)}")
    check_dtypes(out, (img,), "im2col_into")
    fn = specialization(_im2col, out, True, "im2col_into")
    if out.size:
        aside(fn, out, (readable(img), (ky, kx, sy, sx, dy, dx)))


def _col2im(num_t tag, cnp.ndarray out, cnp.ndarray col, tuple geometry):
    cdef pyet_intp ky, kx, sy, sx, dy, dx
    ky, kx, sy, sx, dy, dx = geometry
    cdef geom g = make_geom(out, ky, kx, sy, sx, dy, dx)
    cdef pyet_intp o[4]
    cdef pyet_intp cs0 = col.strides[0], cs1 = col.strides[1]
    for d in range(4):
        o[d] = out.strides[d]
    cdef num_t *po = <num_t *>cnp.PyArray_DATA(out)
    cdef const num_t *pc = <const num_t *>cnp.PyArray_DATA(col)
    cdef int nt = threads_for(col.size + out.size, g.N * g.C * g.H)
    with nogil:
        col2im_kernel(po, o, pc, cs0, cs1, &g, nt)


def col2im_into(cnp.ndarray out, cnp.ndarray col, pyet_intp ky, pyet_intp kx, pyet_intp sy,
                pyet_intp sx, pyet_intp dy, pyet_intp dx):
    """Sum the patches in the columns of col back into out (N, C, H, W).

    Parameters
    ----------
    out : ndarray
        Any strides; int32, int64, float32 or float64.
    col : ndarray
        (C*ky*kx, N*oH*oW), any strides, out's dtype.
    ky, kx, sy, sx, dy, dx : int
        As for ``im2col_into``.
    """
    cdef geom g = make_geom(out, ky, kx, sy, sx, dy, dx)
    if col.ndim != 2 or col.shape[0] != g.C * ky * kx or col.shape[1] != g.N * g.oH * g.oW:
        raise ValueError(f"col2im_into: col {shp(col)} is not the patch matrix of {shp(out)}")
    check_dtypes(out, (col,), "col2im_into")
    fn = specialization(_col2im, out, False, "col2im_into")
    if out.size:
        aside(fn, out, (readable(col), (ky, kx, sy, sx, dy, dx)))


# ------------------------------------------------------------------ pooling

cdef enum:
    POOL_MAX = 0
    POOL_SUM = 1
    POOL_AVG = 2


cdef struct pool_geom:
    # planes P of H x W pooled into pH x pW by ky x kx windows at strides sy, sx
    pyet_intp P, H, W, pH, pW, ky, kx, sy, sx
    int op


cdef inline void pool_line(num_t *out, const pyet_intp *o, const num_t *src,
                           const pyet_intp *s, const pool_geom *g, pyet_intp line) noexcept nogil:
    # line = (plane p, pooled row oy); windows are clipped at the border
    cdef pyet_intp p = line // g.pH, oy = line % g.pH, ox, y, x, x0, x1
    cdef pyet_intp y0 = oy * g.sy, y1 = min(y0 + g.ky, g.H)
    cdef const num_t *plane = <const num_t *>ref(<num_t *>src, p * s[0])
    cdef const num_t *row
    cdef num_t *dst = ref(out, p * o[0] + oy * o[1])
    cdef num_t acc, v
    cdef bint nan
    for ox in range(g.pW):
        x0 = ox * g.sx
        x1 = min(x0 + g.kx, g.W)
        if g.op == POOL_MAX:
            acc = get(plane, y0 * s[1] + x0 * s[2])
            nan = False
            for y in range(y0, y1):
                row = <const num_t *>ref(<num_t *>plane, y * s[1])
                for x in range(x0, x1):
                    v = get(row, x * s[2])
                    acc = acc if acc > v else v  # branch-free (maxss)
                    if num_t is float or num_t is double:
                        nan = nan | (v != v)
            if num_t is float or num_t is double:
                if nan:  # NaN wins, as in NumPy's max
                    acc = <num_t>NAN
        else:
            acc = 0
            for y in range(y0, y1):
                row = <const num_t *>ref(<num_t *>plane, y * s[1])
                for x in range(x0, x1):
                    acc += get(row, x * s[2])
            if g.op == POOL_AVG:
                acc = acc / <num_t>(g.ky * g.kx)
        ref(dst, ox * o[2])[0] = acc


cdef void pool_kernel(num_t *out, const pyet_intp *o, const num_t *src, const pyet_intp *s,
                      const pool_geom *g, int nthreads) noexcept nogil:
    cdef pyet_intp line, lines = g.P * g.pH
    if nthreads > 1:
        for line in prange(lines, num_threads=nthreads, schedule="static"):
            pool_line(out, o, src, s, g, line)
    else:
        for line in range(lines):
            pool_line(out, o, src, s, g, line)


cdef inline void unpool_line(num_t *out, const pyet_intp *o, const num_t *src,
                             const pyet_intp *s, const num_t *pooled, const pyet_intp *ps,
                             const num_t *grad, const pyet_intp *gs, const pool_geom *g,
                             pyet_intp line) noexcept nogil:
    # line = (plane p, input row y): each window containing row y adds its
    # gradient into the row's elements it covers (for max: those equal to the
    # window's pooled value), windows taken in the order of (py, px)
    cdef pyet_intp p = line // g.H, y = line % g.H, x, x0, x1, py, px
    cdef pyet_intp py0 = 0 if y < g.ky else (y - g.ky) // g.sy + 1
    cdef pyet_intp py1 = min(y // g.sy + 1, g.pH)
    cdef num_t *dst = ref(out, p * o[0] + y * o[1])
    cdef const num_t *row = <const num_t *>ref(<num_t *>src, p * s[0] + y * s[1])
    cdef const num_t *prow
    cdef const num_t *grow
    cdef num_t gv, pv
    cdef num_t pick[2]
    pick[0] = 0
    for x in range(g.W):
        ref(dst, x * o[2])[0] = 0
    for py in range(py0, py1):
        prow = <const num_t *>ref(<num_t *>pooled, p * ps[0] + py * ps[1])
        grow = <const num_t *>ref(<num_t *>grad, p * gs[0] + py * gs[1])
        for px in range(g.pW):
            x0 = px * g.sx
            x1 = min(x0 + g.kx, g.W)
            gv = get(grow, px * gs[2])
            if g.op == POOL_MAX:
                pv = get(prow, px * ps[2])
                pick[1] = gv
                for x in range(x0, x1):  # branch-free; adding 0 leaves the (+0-started) sum
                    ref(dst, x * o[2])[0] += pick[get(row, x * s[2]) == pv]
            else:
                for x in range(x0, x1):
                    ref(dst, x * o[2])[0] += gv
    if g.op == POOL_AVG:
        for x in range(g.W):
            ref(dst, x * o[2])[0] /= <num_t>(g.ky * g.kx)


cdef void unpool_kernel(num_t *out, const pyet_intp *o, const num_t *src, const pyet_intp *s,
                        const num_t *pooled, const pyet_intp *ps, const num_t *grad,
                        const pyet_intp *gs, const pool_geom *g, int nthreads) noexcept nogil:
    cdef pyet_intp line, lines = g.P * g.H
    if nthreads > 1:
        for line in prange(lines, num_threads=nthreads, schedule="static"):
            unpool_line(out, o, src, s, pooled, ps, grad, gs, g, line)
    else:
        for line in range(lines):
            unpool_line(out, o, src, s, pooled, ps, grad, gs, g, line)


POOL_OPS = {"max": POOL_MAX, "sum": POOL_SUM, "avg": POOL_AVG}


cdef pool_geom make_pool_geom(cnp.ndarray src, cnp.ndarray pooled, pyet_intp ky, pyet_intp kx,
                              pyet_intp sy, pyet_intp sx, str op):
    cdef pool_geom g
    g.P, g.H, g.W = src.shape[0], src.shape[1], src.shape[2]
    g.pH, g.pW = pooled.shape[1], pooled.shape[2]
    g.ky, g.kx, g.sy, g.sx = ky, kx, sy, sx
    g.op = POOL_OPS[op]
    return g


cdef inline void strides3(cnp.ndarray a, pyet_intp *s):
    s[0], s[1], s[2] = a.strides[0], a.strides[1], a.strides[2]


def _pool(num_t tag, cnp.ndarray out, cnp.ndarray src, tuple params):
    cdef pyet_intp ky, kx, sy, sx
    ky, kx, sy, sx, op = params
    cdef pool_geom g = make_pool_geom(src, out, ky, kx, sy, sx, op)
    cdef pyet_intp o[3]
    cdef pyet_intp s[3]
    strides3(out, o)
    strides3(src, s)
    cdef num_t *po = <num_t *>cnp.PyArray_DATA(out)
    cdef const num_t *ps = <const num_t *>cnp.PyArray_DATA(src)
    cdef int nt = threads_for(out.size * min(g.ky, g.H) * min(g.kx, g.W), g.P * g.pH)
    with nogil:
        pool_kernel(po, o, ps, s, &g, nt)


cdef int check_pooled(cnp.ndarray src, cnp.ndarray pooled, pyet_intp ky, pyet_intp kx,
                      pyet_intp sy, pyet_intp sx, str what, str fname) except -1:
    # pooled has MShadow's pooled shape of src (see pooled_shape in _nodes/spatial.py)
    cdef pyet_intp H = src.shape[1], W = src.shape[2]
    if (pooled.ndim != 3 or pooled.shape[0] != src.shape[0]
            or pooled.shape[1] != min(H - ky + sy - 1, H - 1) // sy + 1
            or pooled.shape[2] != min(W - kx + sx - 1, W - 1) // sx + 1):
        raise ValueError(f"{fname}: {what} {shp(pooled)} is not the pooled shape of "
                         f"{shp(src)}")
    return 0


def pool_into(cnp.ndarray out, cnp.ndarray src, pyet_intp ky, pyet_intp kx, pyet_intp sy,
              pyet_intp sx, str op):
    """Pool src (P, H, W) into out (P, pH, pW).

    Parameters
    ----------
    out : ndarray
        Any strides; int32, int64, float32 or float64.
    src : ndarray
        Any strides, out's dtype.
    ky, kx, sy, sx : int
        Window and steps (>= 1, the window fits: checked by the caller).
    op : {"max", "sum", "avg"}
    """
    if src.ndim != 3:
        raise ValueError(f"pool_into: src must be 3-D, got {shp(src)}")
    check_pooled(src, out, ky, kx, sy, sx, "out", "pool_into")
    check_dtypes(out, (src,), "pool_into")
    fn = specialization(_pool, out, False, "pool_into")
    if out.size:
        aside(fn, out, (readable(src), (ky, kx, sy, sx, op)))


def _unpool(num_t tag, cnp.ndarray out, cnp.ndarray src, cnp.ndarray pooled,
            cnp.ndarray grad, tuple params):
    cdef pyet_intp ky, kx, sy, sx
    ky, kx, sy, sx, op = params
    cdef pool_geom g = make_pool_geom(src, pooled, ky, kx, sy, sx, op)
    cdef pyet_intp o[3]
    cdef pyet_intp s[3]
    cdef pyet_intp ps[3]
    cdef pyet_intp gs[3]
    strides3(out, o)
    strides3(src, s)
    strides3(pooled, ps)
    strides3(grad, gs)
    cdef num_t *po = <num_t *>cnp.PyArray_DATA(out)
    cdef const num_t *pi = <const num_t *>cnp.PyArray_DATA(src)
    cdef const num_t *pp = <const num_t *>cnp.PyArray_DATA(pooled)
    cdef const num_t *pg = <const num_t *>cnp.PyArray_DATA(grad)
    cdef int nt = threads_for(out.size * (1 + (g.ky // g.sy + 1) * (g.kx // g.sx + 1)),
                              g.P * g.H)
    with nogil:
        unpool_kernel(po, o, pi, s, pp, ps, pg, gs, &g, nt)


def unpool_into(cnp.ndarray out, cnp.ndarray src, cnp.ndarray pooled, cnp.ndarray grad,
                pyet_intp ky, pyet_intp kx, pyet_intp sy, pyet_intp sx, str op):
    """The gradient of pooling src (P, H, W) into pooled (P, pH, pW), given
    grad (P, pH, pW), into out (P, H, W).

    Parameters
    ----------
    out, src, pooled, grad : ndarray
        Any strides, one dtype (int32, int64, float32 or float64).
    ky, kx, sy, sx, op
        As for ``pool_into``.
    """
    if src.ndim != 3 or (<object>out).shape != (<object>src).shape:
        raise ValueError(f"unpool_into: out {shp(out)} and src {shp(src)} must be one 3-D shape")
    check_pooled(src, pooled, ky, kx, sy, sx, "pooled", "unpool_into")
    check_pooled(src, grad, ky, kx, sy, sx, "grad", "unpool_into")
    check_dtypes(out, (src, pooled, grad), "unpool_into")
    fn = specialization(_unpool, out, False, "unpool_into")
    if out.size:
        aside(fn, out, (readable(src), readable(pooled), readable(grad),
                        (ky, kx, sy, sx, op)))
