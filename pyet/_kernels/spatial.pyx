"""Compiled kernels of the spatial blocks (``_spatial.py``): im2col, col2im,
pooling and its gradient.

Each kernel splits its work into independent lines (a matrix row segment, an
image row, a pooled row) that write disjoint elements, so threads never race,
and sums every element in the same order whatever the thread count.  Operands
are read and written through byte strides.  Arguments are checked by the
callers: the kernels trust their shapes.
"""

cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport NAN
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from pyet._kernels.kernels cimport pyet_intp
from pyet._kernels.nn cimport at, copy_row, get, item_t, num_t, ref
from pyet._kernels.parallel cimport threads_for

cnp.import_array()

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


def im2col_into(cnp.ndarray out, cnp.ndarray img, pyet_intp ky, pyet_intp kx, pyet_intp sy,
                pyet_intp sx, pyet_intp dy, pyet_intp dx):
    """Patches of img (N, C, H, W) as the columns of out (C*ky*kx, N*oH*oW)."""
    cdef geom g = make_geom(img, ky, kx, sy, sx, dy, dx)
    cdef pyet_intp s[4]
    cdef pyet_intp os0 = out.strides[0], os1 = out.strides[1]
    for d in range(4):
        s[d] = img.strides[d]
    cdef void *po = cnp.PyArray_DATA(out)
    cdef const void *pi = cnp.PyArray_DATA(img)
    cdef int nt = threads_for(out.size, out.shape[0]), size = out.itemsize
    if out.size == 0:
        return
    with nogil:
        if size == 1:
            im2col_kernel(<uint8_t *>po, os0, os1, <const uint8_t *>pi, s, &g, nt)
        elif size == 4:
            im2col_kernel(<uint32_t *>po, os0, os1, <const uint32_t *>pi, s, &g, nt)
        else:
            im2col_kernel(<uint64_t *>po, os0, os1, <const uint64_t *>pi, s, &g, nt)


def col2im_into(cnp.ndarray out, cnp.ndarray col, pyet_intp ky, pyet_intp kx, pyet_intp sy,
                pyet_intp sx, pyet_intp dy, pyet_intp dx):
    """Sum the patches in the columns of col back into out (N, C, H, W)."""
    cdef geom g = make_geom(out, ky, kx, sy, sx, dy, dx)
    cdef pyet_intp o[4]
    cdef pyet_intp cs0 = col.strides[0], cs1 = col.strides[1]
    for d in range(4):
        o[d] = out.strides[d]
    cdef void *po = cnp.PyArray_DATA(out)
    cdef const void *pc = cnp.PyArray_DATA(col)
    cdef int nt = threads_for(col.size + out.size, g.N * g.C * g.H)
    cdef int typ = out.descr.type_num
    if out.size == 0:
        return
    with nogil:
        if typ == cnp.NPY_FLOAT32:
            col2im_kernel(<float *>po, o, <const float *>pc, cs0, cs1, &g, nt)
        elif typ == cnp.NPY_FLOAT64:
            col2im_kernel(<double *>po, o, <const double *>pc, cs0, cs1, &g, nt)
        elif typ == cnp.NPY_INT32:
            col2im_kernel(<int32_t *>po, o, <const int32_t *>pc, cs0, cs1, &g, nt)
        else:
            col2im_kernel(<int64_t *>po, o, <const int64_t *>pc, cs0, cs1, &g, nt)


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


def pool_into(cnp.ndarray out, cnp.ndarray src, pyet_intp ky, pyet_intp kx, pyet_intp sy,
              pyet_intp sx, str op):
    """Pool src (P, H, W) into out (P, pH, pW)."""
    cdef pool_geom g = make_pool_geom(src, out, ky, kx, sy, sx, op)
    cdef pyet_intp o[3]
    cdef pyet_intp s[3]
    strides3(out, o)
    strides3(src, s)
    cdef void *po = cnp.PyArray_DATA(out)
    cdef const void *ps = cnp.PyArray_DATA(src)
    cdef int nt = threads_for(out.size * min(ky, g.H) * min(kx, g.W), g.P * g.pH)
    cdef int typ = out.descr.type_num
    if out.size == 0:
        return
    with nogil:
        if typ == cnp.NPY_FLOAT32:
            pool_kernel(<float *>po, o, <const float *>ps, s, &g, nt)
        elif typ == cnp.NPY_FLOAT64:
            pool_kernel(<double *>po, o, <const double *>ps, s, &g, nt)
        elif typ == cnp.NPY_INT32:
            pool_kernel(<int32_t *>po, o, <const int32_t *>ps, s, &g, nt)
        else:
            pool_kernel(<int64_t *>po, o, <const int64_t *>ps, s, &g, nt)


def unpool_into(cnp.ndarray out, cnp.ndarray src, cnp.ndarray pooled, cnp.ndarray grad,
                pyet_intp ky, pyet_intp kx, pyet_intp sy, pyet_intp sx, str op):
    """The gradient of pooling src (P, H, W) into pooled (P, pH, pW), given
    grad (P, pH, pW), into out (P, H, W)."""
    cdef pool_geom g = make_pool_geom(src, pooled, ky, kx, sy, sx, op)
    cdef pyet_intp o[3]
    cdef pyet_intp s[3]
    cdef pyet_intp ps[3]
    cdef pyet_intp gs[3]
    strides3(out, o)
    strides3(src, s)
    strides3(pooled, ps)
    strides3(grad, gs)
    cdef void *po = cnp.PyArray_DATA(out)
    cdef const void *pi = cnp.PyArray_DATA(src)
    cdef const void *pp = cnp.PyArray_DATA(pooled)
    cdef const void *pg = cnp.PyArray_DATA(grad)
    cdef int nt = threads_for(out.size * (1 + (ky // sy + 1) * (kx // sx + 1)), g.P * g.H)
    cdef int typ = out.descr.type_num
    if out.size == 0:
        return
    with nogil:
        if typ == cnp.NPY_FLOAT32:
            unpool_kernel(<float *>po, o, <const float *>pi, s, <const float *>pp, ps,
                          <const float *>pg, gs, &g, nt)
        elif typ == cnp.NPY_FLOAT64:
            unpool_kernel(<double *>po, o, <const double *>pi, s, <const double *>pp, ps,
                          <const double *>pg, gs, &g, nt)
        elif typ == cnp.NPY_INT32:
            unpool_kernel(<int32_t *>po, o, <const int32_t *>pi, s, <const int32_t *>pp, ps,
                          <const int32_t *>pg, gs, &g, nt)
        else:
            unpool_kernel(<int64_t *>po, o, <const int64_t *>pi, s, <const int64_t *>pp, ps,
                          <const int64_t *>pg, gs, &g, nt)
