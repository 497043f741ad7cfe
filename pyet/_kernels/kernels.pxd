# The elementwise kernels of kernels.h, as the core calls them.

from libc.stdint cimport int64_t

from pyet._kernels.types cimport pyet_intp


cdef extern from "kernels.h" nogil:
    ctypedef unsigned char pyet_bool

    enum:
        DT_BOOL
        DT_I32
        DT_I64
        DT_F32
        DT_F64
        DT_COUNT

    enum:
        OP_leaf
        OP_scalar
        OP_pyfunc
        OP_special
        OP_copy
        OP_cast
        OP_where
        OP_add
        OP_subtract
        OP_multiply
        OP_divide
        OP_floor_divide
        OP_remainder
        OP_power
        OP_square
        OP_sqrt
        OP_negative
        OP_positive
        OP_absolute
        OP_invert
        OP_relu
        OP_maximum
        OP_minimum
        OP_less
        OP_less_equal
        OP_greater
        OP_greater_equal
        OP_equal
        OP_not_equal
        OP_bitwise_and
        OP_bitwise_or
        OP_bitwise_xor
        OP_COUNT

    enum:
        SRC_REG
        SRC_LEAF
        SRC_SCALAR
        SRC_DST
        PYET_MAX_IN

    ctypedef struct pyet_instr:
        int op
        int dt
        int dt_out
        int out
        int nin
        int sflags
        int src_kind[PYET_MAX_IN]
        int src[PYET_MAX_IN]

    const char *const pyet_op_names[]
    const int pyet_itemsize[]

    int pyet_kernel(int op, int dt, int sflags, pyet_intp n, void *out,
                    void *const *inp) noexcept
    int pyet_kernel_routed(int op, int dt, int sflags, pyet_intp n, void *out,
                           void *const *inp, int *narrow) noexcept
    int pyet_kernel_narrow(int op, int dt, int sflags, pyet_intp n, void *out,
                           void *const *inp) noexcept
    int pyet_kernel_strided(int op, int dt, pyet_intp n, void *out, const void *inp,
                            pyet_intp stride) noexcept
    int pyet_kernel_sx(int op, int dt, pyet_intp n, void *out, void *const *inp,
                       const pyet_intp *steps) noexcept
    int pyet_kernel_wide512() noexcept
    int pyet_kernel_in_lanes(int op) noexcept
    int pyet_cpu_intel() noexcept
    void pyet_cast(int dt_in, int dt_out, pyet_intp n, void *out,
                   const void *inp) noexcept
    void pyet_prefetch(const char *p, pyet_intp nbytes, int write) noexcept
    enum:
        RED_NONE
        RED_SUM
        RED_PROD
        RED_MAX
        RED_MIN
        RED_ALL
        RED_ANY
        RED_ARGMAX
        RED_ARGMIN
        RED_SUM_WIDE

    int pyet_reduce_rows(int red, int dt, pyet_intp nrows, pyet_intp n, char *dst,
                         const char *src, pyet_intp xs) noexcept
    void pyet_reduce_store(int red, int dt, pyet_intp n, char *dst, pyet_intp ds,
                           pyet_intp comp, const void *src) noexcept
    void pyet_reduce_arg(int red, int dt, pyet_intp n, char *dst, pyet_intp ds,
                         pyet_intp comp, const void *src, const int64_t *idx) noexcept
    void pyet_arg_rows(int red, int dt, pyet_intp nrows, pyet_intp k, const char *src,
                       pyet_intp rs, pyet_intp cs, char *out, pyet_intp os) noexcept
    int pyet_fold_each_row(int red, int dt, pyet_intp nrows, pyet_intp k, const char *src,
                           pyet_intp rs, char *out, pyet_intp os) noexcept
    void pyet_copy_strided(char *dst, pyet_intp ds, const char *src,
                           pyet_intp ss, pyet_intp n, int itemsize) noexcept
    void pyet_gather_rows(int k, char *const *dst, const char *const *src,
                          const pyet_intp *ss, pyet_intp n, int itemsize) noexcept
    void pyet_copy_rows(char *dst, const char *src, pyet_intp rs, pyet_intp cs,
                        pyet_intp rows, pyet_intp inner, int itemsize) noexcept
    void pyet_scatter_rows(char *dst, pyet_intp rs, pyet_intp cs, const char *src,
                           pyet_intp rows, pyet_intp inner, int itemsize) noexcept
    void pyet_copy_tile(char *dst, pyet_intp drow, const char *src, pyet_intp srow,
                        pyet_intp ss, pyet_intp rows, pyet_intp n, int itemsize,
                        int prefetch) noexcept
