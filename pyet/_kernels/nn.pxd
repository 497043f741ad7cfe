# Types and inline helpers shared by the kernels of the neural-network blocks
# (nn.pyx, spatial.pyx).

cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

from pyet._kernels.types cimport pyet_intp

# arithmetic kernels: the numeric dtypes
ctypedef fused num_t:
    float
    double
    int32_t
    int64_t

# gathers copy elements' bits: one type per itemsize (bool, 4 and 8 bytes)
ctypedef fused item_t:
    uint8_t
    uint32_t
    uint64_t


# num_t's specializations, for a chunk function that dispatches on the dtype
cdef enum num_kind:
    KIND_F32
    KIND_F64
    KIND_I32
    KIND_I64


cdef inline num_kind kind_of(num_t *tag) noexcept nogil:
    if num_t is float:
        return KIND_F32
    elif num_t is double:
        return KIND_F64
    elif num_t is int32_t:
        return KIND_I32
    else:
        return KIND_I64


cdef inline int num_kind_of(cnp.ndarray a) noexcept:
    # a's num_kind (native byte order, a num_t's type number), -1 for any other
    cdef int t = cnp.PyArray_TYPE(a)
    if not cnp.PyArray_ISNOTSWAPPED(a):
        return -1
    return KIND_F32 if t == cnp.NPY_FLOAT32 else KIND_F64 if t == cnp.NPY_FLOAT64 else \
        KIND_I32 if t == cnp.NPY_INT32 else KIND_I64 if t == cnp.NPY_INT64 else -1


# ------------------------------------------------------------ threads

# A kernel's work as lines (rows, image rows, columns) that write disjoint
# elements, each computed the same way whatever the split: fn(args, l0, l1)
# computes lines [l0, l1).  run_lines splits them into nchunks ranges that the
# thread pool of parallel.pyx (threads.h) runs.
ctypedef void (*lines_fn)(void *args, pyet_intp l0, pyet_intp l1) noexcept nogil

# the chunks for ``lines`` lines on nthreads threads: 8 per thread (a thread the
# OS delays leaves its chunks to the others), at most one per line
cdef inline pyet_intp chunks_for(pyet_intp lines, int nthreads) noexcept nogil:
    return 1 if nthreads <= 1 else min(lines, 8 * <pyet_intp>nthreads)

cdef void run_lines(lines_fn fn, void *args, pyet_intp lines, int nthreads,
                    pyet_intp nchunks) noexcept nogil


# operands are addressed through byte offsets (strides in bytes, any sign)
cdef inline item_t *at(item_t *p, pyet_intp offset) noexcept nogil:
    return <item_t *>((<char *>p) + offset)


cdef inline num_t get(const num_t *p, pyet_intp offset) noexcept nogil:
    return (<const num_t *>((<const char *>p) + offset))[0]


cdef inline num_t *ref(num_t *p, pyet_intp offset) noexcept nogil:
    return <num_t *>((<char *>p) + offset)


cdef inline void copy_row(item_t *dst, pyet_intp ds, const item_t *src, pyet_intp ss,
                          pyet_intp m) noexcept nogil:
    cdef pyet_intp j, nb
    if ds == sizeof(item_t) and ss == sizeof(item_t):
        # short rows: constant-size copies (a load and a store or two), no call
        nb = m * <pyet_intp>sizeof(item_t)
        if nb == 4:
            memcpy(dst, src, 4)
        elif nb == 8:
            memcpy(dst, src, 8)
        elif nb == 16:
            memcpy(dst, src, 16)
        elif nb == 32:
            memcpy(dst, src, 32)
        elif nb < 64:
            for j in range(m):
                dst[j] = src[j]
        else:
            memcpy(dst, src, nb)
        return
    for j in range(m):
        (<item_t *>((<char *>dst) + j * ds))[0] = \
            (<const item_t *>((<const char *>src) + j * ss))[0]


cdef inline void add_row(num_t *dst, pyet_intp ds, const num_t *src, pyet_intp ss,
                         pyet_intp m) noexcept nogil:
    # dst[j * ds] += src[j * ss] for j < m (byte strides); unit steps vectorize
    cdef pyet_intp j
    if ds == sizeof(num_t) and ss == sizeof(num_t):
        for j in range(m):
            dst[j] += src[j]
    else:
        for j in range(m):
            ref(dst, j * ds)[0] += get(src, j * ss)


# ------------------------------------------------------------ dtype dispatch and layouts

cdef inline str fused_name(cnp.ndarray a, bint bits):
    # the name of a's type in a fused specialization: its C type, or (bits) the
    # unsigned int of its size, for kernels that only copy elements
    cdef int t = cnp.PyArray_TYPE(a)
    cdef Py_ssize_t size = cnp.PyArray_ITEMSIZE(a)
    if bits:
        return "uint8_t" if size == 1 else "uint32_t" if size == 4 else \
            "uint64_t" if size == 8 else ""
    return "float" if t == cnp.NPY_FLOAT32 else "double" if t == cnp.NPY_FLOAT64 else \
        "int32_t" if t == cnp.NPY_INT32 else "int64_t" if t == cnp.NPY_INT64 else \
        "bool_t" if t == cnp.NPY_BOOL else ""


cdef inline object specialization(object fused, cnp.ndarray a, bint bits, str fname):
    # the specialization of fused def function ``fused`` for a's dtype (one
    # dict lookup: the dtype set is the fused type's, written once)
    spec = fused.__signatures__.get(fused_name(a, bits))
    if spec is None:
        raise TypeError(f"{fname}: unsupported dtype {a.dtype}")
    return spec


cdef inline tuple shp(cnp.ndarray a):
    # a's shape as a tuple (for messages)
    return (<object>a).shape


cdef inline bint aligned(cnp.ndarray a) noexcept:
    # data and every stride (of an axis longer than 1) are multiples of the
    # item's alignment: the kernels can address it element by element
    return cnp.PyArray_ISALIGNED(a)


cdef inline cnp.ndarray readable(cnp.ndarray a):
    # a, or an aligned C-contiguous copy when it is misaligned (a field of a
    # packed structured array, an odd byte offset)
    return a if cnp.PyArray_ISALIGNED(a) else cnp.PyArray_NewCopy(a, cnp.NPY_CORDER)


cdef inline cnp.ndarray aligned_target(cnp.ndarray out):
    # out, or an aligned temporary of its shape and type for a misaligned out
    # (the caller copies it in after): the kernels never write a misaligned element
    if aligned(out):
        return out
    return cnp.PyArray_EMPTY(cnp.PyArray_NDIM(out), cnp.PyArray_DIMS(out),
                             cnp.PyArray_TYPE(out), 0)


cdef inline object aside(object kernel, cnp.ndarray out, tuple args):
    # kernel(0, out, *args) (0: the fused tag), or into an aligned temporary
    # copied into a misaligned out: the kernels never write a misaligned element
    if aligned(out):
        kernel(0, out, *args)
    else:
        tmp = cnp.PyArray_EMPTY(cnp.PyArray_NDIM(out), cnp.PyArray_DIMS(out),
                                cnp.PyArray_TYPE(out), 0)
        kernel(0, tmp, *args)
        out[...] = tmp
