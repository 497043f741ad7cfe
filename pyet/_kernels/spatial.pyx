"""Compiled kernels of the spatial blocks (``pyet/_nodes/spatial.py``): im2col, col2im,
pooling and its gradient.

Each kernel splits its work into independent lines (im2col a matrix row,
col2im an image plane, pooling a pooled row, its gradient an image row or a
row of 2 x 2 windows) that write disjoint elements, so threads never race, and
sums every element in the same order whatever the thread count; ranges of
lines run on the thread pool of ``parallel.pyx`` (``run_lines``).  Operands
are read and written through byte strides.  Arguments are checked by the
callers: the kernels trust their shapes.  Each entry point copies a
misaligned operand and computes aside for a misaligned destination, so the
kernels address whole, aligned elements only; the dtype selects a
specialization of the kernel's fused type once (``specialization``).
"""

cimport numpy as cnp
from libc.math cimport NAN
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

from pyet._kernels.types cimport pyet_intp
from pyet._kernels.nn cimport (KIND_F32, KIND_F64, KIND_I32, KIND_I64, add_row, aside, at,
                               chunks_for, copy_row, get, item_t, kind_of, num_kind, num_t,
                               readable, ref, run_lines, shp, specialization)
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


cdef inline void move_runs(char *dst, const char *src, pyet_intp step, pyet_intp count,
                           size_t nb) noexcept nogil:
    # count runs of nb bytes, step bytes apart in src, one after another in dst
    # (inlined where nb is a constant: a move of that size each)
    cdef pyet_intp i
    for i in range(count):
        memcpy(dst + <pyet_intp>nb * i, src + i * step, nb)


cdef inline bint copy_runs(char *dst, const char *src, pyet_intp step, pyet_intp count,
                           pyet_intp nb) noexcept nogil:
    # move_runs for the short run lengths, each with its constant size: no
    # dispatch a run (3x3 patches of 6x6 float32 images: 272 -> 155 us for
    # 144 x 4096); False, nothing copied, for other lengths
    if nb == 16:
        move_runs(dst, src, step, count, 16)
    elif nb == 32:
        move_runs(dst, src, step, count, 32)
    elif nb == 8:
        move_runs(dst, src, step, count, 8)
    elif nb == 64:
        move_runs(dst, src, step, count, 64)
    elif nb == 4:
        move_runs(dst, src, step, count, 4)
    else:
        return False
    return True


cdef inline void im2col_row(item_t *out, pyet_intp os0, pyet_intp os1, const item_t *img,
                            const pyet_intp *s, const geom *g, pyet_intp r) noexcept nogil:
    # row r = (c, py, px) of the matrix: that kernel tap at every patch position
    # of every image, one run of oW columns per (image, patch row)
    cdef pyet_intp c = r // (g.ky * g.kx), py = r // g.kx % g.ky, px = r % g.kx, n, oy
    cdef item_t *dst = at(out, r * os0)
    cdef const item_t *src
    cdef bint runs = os1 == sizeof(item_t) and g.sx * s[3] == sizeof(item_t)
    for n in range(g.N):
        src = <const item_t *>at(<item_t *>img, n * s[0] + c * s[1] + py * g.dy * s[2]
                                 + px * g.dx * s[3])
        if runs and copy_runs(<char *>dst, <const char *>src, g.sy * s[2], g.oH,
                              g.oW * <pyet_intp>sizeof(item_t)):
            dst += g.oH * g.oW
            continue
        for oy in range(g.oH):
            copy_row(dst, os1, <const item_t *>at(<item_t *>src, oy * g.sy * s[2]),
                     g.sx * s[3], g.oW)
            dst = at(dst, g.oW * os1)


cdef struct im2col_args:
    # out (C*ky*kx, N*oH*oW) from img (N, C, H, W); byte strides s of img
    char *out
    const char *img
    pyet_intp os0, os1
    pyet_intp s[4]
    geom g
    int itemsize


cdef inline void im2col_rows(const im2col_args *a, item_t *out, pyet_intp r0,
                             pyet_intp r1) noexcept nogil:
    cdef pyet_intp r
    for r in range(r0, r1):
        im2col_row(out, a.os0, a.os1, <const item_t *>a.img, a.s, &a.g, r)


cdef void im2col_lines(void *args, pyet_intp r0, pyet_intp r1) noexcept nogil:
    cdef const im2col_args *a = <const im2col_args *>args
    if a.itemsize == 1:
        im2col_rows(a, <uint8_t *>a.out, r0, r1)
    elif a.itemsize == 4:
        im2col_rows(a, <uint32_t *>a.out, r0, r1)
    else:
        im2col_rows(a, <uint64_t *>a.out, r0, r1)


cdef inline void col2im_plane(num_t *out, const pyet_intp *o, const num_t *col, pyet_intp cs0,
                              pyet_intp cs1, const geom *g, pyet_intp line) noexcept nogil:
    # line = (channel c, image n), channel-major: a channel's ky*kx rows of col
    # are read front to back across images.  Each patch row adds into the
    # (n, c) plane, taps in the order of (py, px): an element's sum in that
    # order, whatever the split into lines.
    cdef pyet_intp c = line // g.N, n = line % g.N, y, x, py, px, oy
    cdef num_t *plane = ref(out, n * o[0] + c * o[1])
    cdef const num_t *src
    for y in range(g.H):
        for x in range(g.W):
            ref(plane, y * o[2] + x * o[3])[0] = 0
    for py in range(g.ky):
        for px in range(g.kx):
            src = <const num_t *>ref(<num_t *>col, ((c * g.ky + py) * g.kx + px) * cs0
                                     + n * g.oH * g.oW * cs1)
            for oy in range(g.oH):
                add_row(ref(plane, (oy * g.sy + py * g.dy) * o[2] + px * g.dx * o[3]),
                        g.sx * o[3], <const num_t *>ref(<num_t *>src, oy * g.oW * cs1),
                        cs1, g.oW)


cdef struct col2im_args:
    # out (N, C, H, W), byte strides o, from col (C*ky*kx, N*oH*oW)
    char *out
    const char *col
    pyet_intp o[4]
    pyet_intp cs0, cs1
    geom g
    num_kind kind


cdef inline void col2im_lines_t(const col2im_args *a, num_t *out, pyet_intp l0,
                                pyet_intp l1) noexcept nogil:
    cdef pyet_intp line
    for line in range(l0, l1):
        col2im_plane(out, a.o, <const num_t *>a.col, a.cs0, a.cs1, &a.g, line)


cdef void col2im_lines(void *args, pyet_intp l0, pyet_intp l1) noexcept nogil:
    cdef const col2im_args *a = <const col2im_args *>args
    if a.kind == KIND_F32:
        col2im_lines_t(a, <float *>a.out, l0, l1)
    elif a.kind == KIND_F64:
        col2im_lines_t(a, <double *>a.out, l0, l1)
    elif a.kind == KIND_I32:
        col2im_lines_t(a, <int32_t *>a.out, l0, l1)
    else:
        col2im_lines_t(a, <int64_t *>a.out, l0, l1)


cdef geom make_geom(cnp.ndarray img, pyet_intp ky, pyet_intp kx, pyet_intp sy, pyet_intp sx,
                    pyet_intp dy, pyet_intp dx):
    cdef geom g
    g.N, g.C, g.H, g.W = img.shape[0], img.shape[1], img.shape[2], img.shape[3]
    g.ky, g.kx, g.sy, g.sx, g.dy, g.dx = ky, kx, sy, sx, dy, dx
    g.oH = (g.H - (dy * (ky - 1) + 1)) // sy + 1
    g.oW = (g.W - (dx * (kx - 1) + 1)) // sx + 1
    return g


cdef void im2col_run(cnp.ndarray out, cnp.ndarray img, const geom *g, int itemsize):
    # the kernel on aligned operands of one item size, their shapes checked
    cdef im2col_args a
    cdef int d
    a.g = g[0]
    a.out, a.img = <char *>cnp.PyArray_DATA(out), <const char *>cnp.PyArray_DATA(img)
    a.os0, a.os1 = out.strides[0], out.strides[1]
    for d in range(4):
        a.s[d] = img.strides[d]
    a.itemsize = itemsize
    cdef pyet_intp rows = out.shape[0]
    cdef int nt = threads_for(cnp.PyArray_SIZE(out), rows)
    with nogil:
        run_lines(im2col_lines, &a, rows, nt, chunks_for(rows, nt))


def _im2col(item_t tag, cnp.ndarray out, cnp.ndarray img, tuple geometry):
    cdef pyet_intp ky, kx, sy, sx, dy, dx
    ky, kx, sy, sx, dy, dx = geometry
    cdef geom g = make_geom(img, ky, kx, sy, sx, dy, dx)
    im2col_run(out, img, &g, sizeof(item_t))


def im2col_leaves(kernel, cnp.ndarray out, tuple arrays):
    """Im2Col's ``into_leaves`` (pyet's Special): the patches of a 4-D image
    (arrays[0]) straight into a 2-D ``out`` of its dtype, both aligned, from
    the kernel's ``_geom`` (ky, kx, sy, sx, dy, dx), checked in C: no Python
    frame of into(), of the dtype dispatch or of the argument checks (3x3
    patches of a 4 x 32 x 32 float32 image: ~1 us of ~6).  False, nothing
    written, for anything else (the general path)."""
    cdef cnp.ndarray img = arrays[0]
    cdef pyet_intp ky, kx, sy, sx, dy, dx
    cdef int isz = cnp.PyArray_ITEMSIZE(out)
    if cnp.PyArray_NDIM(img) != 4 or cnp.PyArray_NDIM(out) != 2 \
            or cnp.PyArray_TYPE(img) != cnp.PyArray_TYPE(out) \
            or not cnp.PyArray_ISALIGNED(img) or not cnp.PyArray_ISALIGNED(out) \
            or not (isz == 1 or isz == 4 or isz == 8):
        return False
    ky, kx, sy, sx, dy, dx = kernel._geom
    cdef geom g = make_geom(img, ky, kx, sy, sx, dy, dx)
    if g.oH < 1 or g.oW < 1 or out.shape[0] != g.C * ky * kx \
            or out.shape[1] != g.N * g.oH * g.oW:
        return False
    if cnp.PyArray_SIZE(out):
        im2col_run(out, img, &g, isz)
    return True


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
    cdef col2im_args a
    a.g = make_geom(out, ky, kx, sy, sx, dy, dx)
    a.out, a.col = <char *>cnp.PyArray_DATA(out), <const char *>cnp.PyArray_DATA(col)
    a.cs0, a.cs1 = col.strides[0], col.strides[1]
    for d in range(4):
        a.o[d] = out.strides[d]
    a.kind = kind_of(&tag)
    cdef pyet_intp lines = a.g.N * a.g.C
    cdef int nt = threads_for(col.size + out.size, lines)
    with nogil:
        run_lines(col2im_lines, &a, lines, nt, chunks_for(lines, nt))


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
    # 2 x 2 windows at steps of 2 that tile the planes (set by set_tile2)
    bint tile2


cdef inline void set_tile2(pool_geom *g) noexcept nogil:
    g.tile2 = g.ky == 2 and g.kx == 2 and g.sy == 2 and g.sx == 2 \
        and g.H == 2 * g.pH and g.W == 2 * g.pW


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


cdef struct pool_args:
    # pool: out (P, pH, pW) from src (P, H, W); unpool: out (P, H, W) from src,
    # pooled and grad (P, pH, pW).  Byte strides o, s, ps, gs.
    char *out
    const char *src
    const char *pooled
    const char *grad
    pyet_intp o[3]
    pyet_intp s[3]
    pyet_intp ps[3]
    pyet_intp gs[3]
    pool_geom g
    num_kind kind


cdef inline void pool2_lines(const pool_args *a, num_t *out, pyet_intp l0,
                             pyet_intp l1) noexcept nogil:
    # pool_line's lines for tile2 windows: a window's four elements loaded and
    # combined in pool_line's order (its bits), no window loops; each line's
    # (plane, row) counted on from the last, not divided out
    cdef const pool_geom *g = &a.g
    cdef pyet_intp p = l0 // g.pH, oy = l0 % g.pH, ox
    cdef pyet_intp s1 = a.s[1], s2 = a.s[2], o2 = a.o[2]
    cdef const num_t *r0
    cdef const num_t *r1
    cdef num_t *dst
    cdef num_t acc, v0, v1, v2, v3
    for _ in range(l0, l1):
        r0 = <const num_t *>ref(<num_t *>a.src, p * a.s[0] + 2 * oy * s1)
        r1 = <const num_t *>ref(<num_t *>r0, s1)
        dst = ref(out, p * a.o[0] + oy * a.o[1])
        for ox in range(g.pW):
            v0, v1 = get(r0, 2 * ox * s2), get(r0, (2 * ox + 1) * s2)
            v2, v3 = get(r1, 2 * ox * s2), get(r1, (2 * ox + 1) * s2)
            if g.op == POOL_MAX:
                acc = v0
                acc = acc if acc > v1 else v1
                acc = acc if acc > v2 else v2
                acc = acc if acc > v3 else v3
                if num_t is float or num_t is double:
                    if (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3):
                        acc = <num_t>NAN
            else:
                acc = 0
                acc += v0
                acc += v1
                acc += v2
                acc += v3
                if g.op == POOL_AVG:
                    acc = acc / <num_t>4
            ref(dst, ox * o2)[0] = acc
        oy += 1
        if oy == g.pH:
            oy = 0
            p += 1


cdef inline void pool_lines_t(const pool_args *a, num_t *out, pyet_intp l0,
                              pyet_intp l1) noexcept nogil:
    cdef pyet_intp line
    if a.g.tile2:
        pool2_lines(a, out, l0, l1)
        return
    for line in range(l0, l1):
        pool_line(out, a.o, <const num_t *>a.src, a.s, &a.g, line)


cdef void pool_lines(void *args, pyet_intp l0, pyet_intp l1) noexcept nogil:
    cdef const pool_args *a = <const pool_args *>args
    if a.kind == KIND_F32:
        pool_lines_t(a, <float *>a.out, l0, l1)
    elif a.kind == KIND_F64:
        pool_lines_t(a, <double *>a.out, l0, l1)
    elif a.kind == KIND_I32:
        pool_lines_t(a, <int32_t *>a.out, l0, l1)
    else:
        pool_lines_t(a, <int64_t *>a.out, l0, l1)


cdef inline void unpool_max_windows(num_t *dst, pyet_intp o2, const num_t *row, pyet_intp s2,
                                    const num_t *prow, pyet_intp ps2, const num_t *grow,
                                    pyet_intp gs2, const pool_geom *g, pyet_intp px0,
                                    pyet_intp *xe) noexcept nogil:
    # unpool_max_line's windows px0.. along one row, any width and layout,
    # from column xe[0] on (the columns before are done); xe: where they end
    cdef pyet_intp px, x, x0, x1
    cdef num_t gv, pv, zero = 0
    for px in range(px0, g.pW):
        x0 = px * g.sx
        x1 = min(x0 + g.kx, g.W)
        for x in range(xe[0], x0):  # between windows (strides beyond the window)
            ref(dst, x * o2)[0] = 0
        gv = zero + get(grow, px * gs2)
        pv = get(prow, px * ps2)
        if o2 == sizeof(num_t) and s2 == sizeof(num_t):
            for x in range(x0, x1):
                dst[x] = gv if row[x] == pv else zero
        else:
            for x in range(x0, x1):
                ref(dst, x * o2)[0] = gv if get(row, x * s2) == pv else zero
        xe[0] = x1


cdef inline void unpool_max_line(num_t *dst, pyet_intp o2, const num_t *row, pyet_intp s2,
                                 const num_t *pooled, const pyet_intp *ps, const num_t *grad,
                                 const pyet_intp *gs, const pool_geom *g, pyet_intp p,
                                 pyet_intp y) noexcept nogil:
    # unpool_line's max for windows that do not overlap: row y is in window
    # row py = y // sy when y - py * sy < ky, in no window otherwise
    cdef pyet_intp py = y // g.sy, px, x, xe = 0
    cdef const num_t *prow
    cdef const num_t *grow
    cdef num_t gv, pv, zero = 0
    if py < g.pH and y - py * g.sy < g.ky:
        prow = <const num_t *>ref(<num_t *>pooled, p * ps[0] + py * ps[1])
        grow = <const num_t *>ref(<num_t *>grad, p * gs[0] + py * gs[1])
        if g.kx == 2 and g.sx == 2 and o2 == sizeof(num_t) and s2 == sizeof(num_t) \
                and ps[2] == sizeof(num_t) and gs[2] == sizeof(num_t):
            # whole windows two wide side by side, all rows contiguous: two
            # elements a window, no inner loop (the common 2 x 2 pool's
            # gradient; a last window cut by an odd width is the loop's below)
            for px in range(min(g.pW, g.W // 2)):
                gv = zero + grow[px]
                pv = prow[px]
                dst[2 * px] = gv if row[2 * px] == pv else zero
                dst[2 * px + 1] = gv if row[2 * px + 1] == pv else zero
            px = min(g.pW, g.W // 2)
            xe = 2 * px
        else:
            px = 0
        unpool_max_windows(dst, o2, row, s2, prow, ps[2], grow, gs[2], g, px, &xe)
    for x in range(xe, g.W):
        ref(dst, x * o2)[0] = 0


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
    if g.op == POOL_MAX and g.sy >= g.ky and g.sx >= g.kx:
        # windows that do not overlap (2 x 2 at stride 2): each element is
        # written once, 0 + the window's gradient where it equals the maximum
        # (the bits of the sum below, -0.0 gradients made +0.0), else +0
        unpool_max_line(dst, o[2], row, s[2], pooled, ps, grad, gs, g, p, y)
        return
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


cdef inline void unpool2_lines(const pool_args *a, num_t *out, pyet_intp l0,
                               pyet_intp l1) noexcept nogil:
    # unpool_line for tile2 windows, a line a row of windows (plane p, pooled
    # row oy) writing its two input rows: each element in one window, written
    # once with unpool_line's bits; (p, oy) counted on as in pool2_lines
    cdef const pool_geom *g = &a.g
    cdef pyet_intp p = l0 // g.pH, oy = l0 % g.pH, ox
    cdef pyet_intp s1 = a.s[1], s2 = a.s[2], o1 = a.o[1], o2 = a.o[2]
    cdef const num_t *r0
    cdef const num_t *r1
    cdef const num_t *prow
    cdef const num_t *grow
    cdef num_t *d0
    cdef num_t *d1
    cdef num_t gv, pv, v0, v1, v2, v3, zero = 0
    cdef num_t pick[2]
    pick[0] = 0
    for _ in range(l0, l1):
        r0 = <const num_t *>ref(<num_t *>a.src, p * a.s[0] + 2 * oy * s1)
        r1 = <const num_t *>ref(<num_t *>r0, s1)
        d0 = ref(out, p * a.o[0] + 2 * oy * o1)
        d1 = ref(d0, o1)
        prow = <const num_t *>ref(<num_t *>a.pooled, p * a.ps[0] + oy * a.ps[1])
        grow = <const num_t *>ref(<num_t *>a.grad, p * a.gs[0] + oy * a.gs[1])
        for ox in range(g.pW):
            gv = zero + get(grow, ox * a.gs[2])
            if g.op == POOL_MAX:
                pv = get(prow, ox * a.ps[2])
                # all four read before any write: out may be src
                v0, v1 = get(r0, 2 * ox * s2), get(r0, (2 * ox + 1) * s2)
                v2, v3 = get(r1, 2 * ox * s2), get(r1, (2 * ox + 1) * s2)
                pick[1] = gv  # indexed, not branched on: ties are data
                ref(d0, 2 * ox * o2)[0] = pick[v0 == pv]
                ref(d0, (2 * ox + 1) * o2)[0] = pick[v1 == pv]
                ref(d1, 2 * ox * o2)[0] = pick[v2 == pv]
                ref(d1, (2 * ox + 1) * o2)[0] = pick[v3 == pv]
            else:
                if g.op == POOL_AVG:
                    gv = gv / <num_t>4
                ref(d0, 2 * ox * o2)[0] = gv
                ref(d0, (2 * ox + 1) * o2)[0] = gv
                ref(d1, 2 * ox * o2)[0] = gv
                ref(d1, (2 * ox + 1) * o2)[0] = gv
        oy += 1
        if oy == g.pH:
            oy = 0
            p += 1


cdef inline void unpool_lines_t(const pool_args *a, num_t *out, pyet_intp l0,
                                pyet_intp l1) noexcept nogil:
    cdef pyet_intp line
    if a.g.tile2:
        unpool2_lines(a, out, l0, l1)
        return
    for line in range(l0, l1):
        unpool_line(out, a.o, <const num_t *>a.src, a.s, <const num_t *>a.pooled, a.ps,
                    <const num_t *>a.grad, a.gs, &a.g, line)


cdef void unpool_lines(void *args, pyet_intp l0, pyet_intp l1) noexcept nogil:
    cdef const pool_args *a = <const pool_args *>args
    if a.kind == KIND_F32:
        unpool_lines_t(a, <float *>a.out, l0, l1)
    elif a.kind == KIND_F64:
        unpool_lines_t(a, <double *>a.out, l0, l1)
    elif a.kind == KIND_I32:
        unpool_lines_t(a, <int32_t *>a.out, l0, l1)
    else:
        unpool_lines_t(a, <int64_t *>a.out, l0, l1)


POOL_OPS = {"max": POOL_MAX, "sum": POOL_SUM, "avg": POOL_AVG}


cdef pool_geom make_pool_geom(cnp.ndarray src, cnp.ndarray pooled, pyet_intp ky, pyet_intp kx,
                              pyet_intp sy, pyet_intp sx, str op):
    cdef pool_geom g
    g.P, g.H, g.W = src.shape[0], src.shape[1], src.shape[2]
    g.pH, g.pW = pooled.shape[1], pooled.shape[2]
    g.ky, g.kx, g.sy, g.sx = ky, kx, sy, sx
    g.op = POOL_OPS[op]
    set_tile2(&g)
    return g


cdef inline void strides3(cnp.ndarray a, pyet_intp *s):
    s[0], s[1], s[2] = a.strides[0], a.strides[1], a.strides[2]


def _pool(num_t tag, cnp.ndarray out, cnp.ndarray src, tuple params):
    cdef pyet_intp ky, kx, sy, sx
    ky, kx, sy, sx, op = params
    cdef pool_args a
    a.g = make_pool_geom(src, out, ky, kx, sy, sx, op)
    a.out, a.src = <char *>cnp.PyArray_DATA(out), <const char *>cnp.PyArray_DATA(src)
    strides3(out, a.o)
    strides3(src, a.s)
    a.kind = kind_of(&tag)
    cdef pyet_intp lines = a.g.P * a.g.pH
    cdef int nt = threads_for(out.size * min(a.g.ky, a.g.H) * min(a.g.kx, a.g.W), lines)
    with nogil:
        run_lines(pool_lines, &a, lines, nt, chunks_for(lines, nt))


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
    cdef pool_args a
    a.g = make_pool_geom(src, pooled, ky, kx, sy, sx, op)
    a.out, a.src = <char *>cnp.PyArray_DATA(out), <const char *>cnp.PyArray_DATA(src)
    a.pooled = <const char *>cnp.PyArray_DATA(pooled)
    a.grad = <const char *>cnp.PyArray_DATA(grad)
    strides3(out, a.o)
    strides3(src, a.s)
    strides3(pooled, a.ps)
    strides3(grad, a.gs)
    a.kind = kind_of(&tag)
    unpool_run(&a, out.size)


cdef bint fold3(cnp.ndarray a, pyet_intp *dims, pyet_intp *strides) noexcept:
    # a (..., H, W) as (P, H, W) without a copy: the leading axes one run of
    # planes (each a plane apart, or of length 1); False where they are not
    cdef int nd = cnp.PyArray_NDIM(a), k
    cdef pyet_intp p = 1, step = 0
    if nd < 3:
        return False
    for k in range(nd - 3, -1, -1):
        if cnp.PyArray_DIM(a, k) == 1:
            continue
        if p > 1 and cnp.PyArray_STRIDE(a, k) != p * step:
            return False
        if p == 1:
            step = cnp.PyArray_STRIDE(a, k)
        p *= cnp.PyArray_DIM(a, k)
    dims[0], dims[1], dims[2] = p, cnp.PyArray_DIM(a, nd - 2), cnp.PyArray_DIM(a, nd - 1)
    strides[0] = step
    strides[1], strides[2] = cnp.PyArray_STRIDE(a, nd - 2), cnp.PyArray_STRIDE(a, nd - 1)
    return True


def unpool_leaves(kernel, cnp.ndarray out, tuple arrays):
    """Unpool's ``into_leaves`` (pyet's Special): src, pooled and grad
    (arrays) of ``out``'s dtype, all aligned, their leading axes folded
    without copies, checked in C against the kernel's ``_params`` (ky, kx,
    sy, sx, op): no Python frame of into(), of reshapes, of the dtype dispatch
    or of the argument checks (2 x 2 max windows of 4 x 32 x 32 float32:
    ~6 us of ~19).  False, nothing written, for anything else (the general
    path, with its messages)."""
    cdef cnp.ndarray src = arrays[0], pooled = arrays[1], grad = arrays[2]
    cdef pyet_intp od[3]
    cdef pyet_intp sd[3]
    cdef pyet_intp pd[3]
    cdef pyet_intp gd[3]
    cdef pyet_intp ky, kx, sy, sx
    cdef pool_args a
    cdef int t = cnp.PyArray_TYPE(out), k
    for x in arrays:
        if cnp.PyArray_TYPE(<cnp.ndarray>x) != t or not cnp.PyArray_ISALIGNED(<cnp.ndarray>x):
            return False
    if not cnp.PyArray_ISALIGNED(out) or not (fold3(out, od, a.o) and fold3(src, sd, a.s)
                                              and fold3(pooled, pd, a.ps)
                                              and fold3(grad, gd, a.gs)):
        return False
    if t == cnp.NPY_FLOAT:
        a.kind = KIND_F32
    elif t == cnp.NPY_DOUBLE:
        a.kind = KIND_F64
    elif cnp.PyArray_ISINTEGER(out) and cnp.PyArray_ISSIGNED(out) \
            and (cnp.PyArray_ITEMSIZE(out) == 4 or cnp.PyArray_ITEMSIZE(out) == 8):
        a.kind = KIND_I32 if cnp.PyArray_ITEMSIZE(out) == 4 else KIND_I64
    else:
        return False
    ky, kx, sy, sx, op = kernel._params
    if op not in POOL_OPS:
        return False
    for k in range(3):
        if od[k] != sd[k] or pd[k] != gd[k]:
            return False
    if pd[0] != sd[0] or pd[1] != min(sd[1] - ky + sy - 1, sd[1] - 1) // sy + 1 \
            or pd[2] != min(sd[2] - kx + sx - 1, sd[2] - 1) // sx + 1:
        return False
    a.g.P, a.g.H, a.g.W, a.g.pH, a.g.pW = sd[0], sd[1], sd[2], pd[1], pd[2]
    a.g.ky, a.g.kx, a.g.sy, a.g.sx = ky, kx, sy, sx
    a.g.op = POOL_OPS[op]
    set_tile2(&a.g)
    a.out, a.src = <char *>cnp.PyArray_DATA(out), <const char *>cnp.PyArray_DATA(src)
    a.pooled = <const char *>cnp.PyArray_DATA(pooled)
    a.grad = <const char *>cnp.PyArray_DATA(grad)
    if cnp.PyArray_SIZE(out):
        unpool_run(&a, cnp.PyArray_SIZE(out))
    return True


cdef void unpool_run(pool_args *a, pyet_intp size):
    # tile2: a line a row of windows (unpool2_lines)
    cdef pyet_intp lines = a.g.P * (a.g.pH if a.g.tile2 else a.g.H)
    cdef int nt = threads_for(size * (1 + (a.g.ky // a.g.sy + 1) * (a.g.kx // a.g.sx + 1)),
                              lines)
    with nogil:
        run_lines(unpool_lines, a, lines, nt, chunks_for(lines, nt))


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
