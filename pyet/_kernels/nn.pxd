# Types and inline helpers shared by the kernels of the neural-network blocks
# (nn.pyx, spatial.pyx).

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

from pyet._kernels.kernels cimport pyet_intp

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


# operands are addressed through byte offsets (strides in bytes, any sign)
cdef inline item_t *at(item_t *p, pyet_intp offset) noexcept nogil:
    return <item_t *>((<char *>p) + offset)


cdef inline num_t get(const num_t *p, pyet_intp offset) noexcept nogil:
    return (<const num_t *>((<const char *>p) + offset))[0]


cdef inline num_t *ref(num_t *p, pyet_intp offset) noexcept nogil:
    return <num_t *>((<char *>p) + offset)


cdef inline void copy_row(item_t *dst, pyet_intp ds, const item_t *src, pyet_intp ss,
                          pyet_intp m) noexcept nogil:
    cdef pyet_intp j
    if ds == sizeof(item_t) and ss == sizeof(item_t):
        memcpy(dst, src, m * sizeof(item_t))
        return
    for j in range(m):
        (<item_t *>((<char *>dst) + j * ds))[0] = \
            (<const item_t *>((<const char *>src) + j * ss))[0]
