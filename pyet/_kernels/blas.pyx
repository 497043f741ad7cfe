"""Matrix products: BLAS through scipy's Cython bindings, and a plain loop for
integers and bools.  Every entry point takes 3-D ndarrays (a stack of
matrices; 2-D products are stacks of one) and writes C in place:

    C[i] := alpha * A[i] @ B[i] + beta * C[i]

Row-major operands go to column-major BLAS by swapping the operands and their
transpose flags; a row stride is a leading dimension.  Operands BLAS cannot
take (non-unit inner strides, negative strides) are copied by the caller
(``_dot.py``) before they get here.
"""

cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t
from scipy.linalg.cython_blas cimport dgemm, sgemm

import numpy as np

cnp.import_array()

ctypedef fused real:
    float
    double

ctypedef unsigned char bool_t

ctypedef fused integral:
    bool_t          # bool: or of ands
    int32_t
    int64_t


cdef inline void gemm(char ta, char tb, int m, int n, int k, real alpha, real *a, int lda,
                      real *b, int ldb, real beta, real *c, int ldc) noexcept nogil:
    """C := alpha*op(A)·op(B) + beta*C, column-major (BLAS's own convention)."""
    if real is float:
        sgemm(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc)
    else:
        dgemm(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc)


cdef int blas_layout(cnp.ndarray x, int *ld) except -2:
    """1 if the last two axes of x are row-major with unit inner stride,
    0 if column-major, -1 if BLAS cannot take them; sets the leading dimension."""
    cdef int nd = x.ndim, isz = x.itemsize
    cdef Py_ssize_t r = x.shape[nd - 2], c = x.shape[nd - 1]
    cdef Py_ssize_t s0 = x.strides[nd - 2], s1 = x.strides[nd - 1]
    if r <= 1:
        s0 = max(c, 1) * isz
    if c <= 1:
        s1 = isz
    if s1 == isz and s0 % isz == 0 and s0 >= max(c, 1) * isz and s0 // isz < 2 ** 31:
        ld[0] = <int>(s0 // isz)
        return 1
    if r <= 1 and c > 1:
        s0 = isz
    if c <= 1:
        s1 = max(r, 1) * isz
    if s0 == isz and s1 % isz == 0 and s1 >= max(r, 1) * isz and s1 // isz < 2 ** 31:
        ld[0] = <int>(s1 // isz)
        return 0
    return -1


def blas_ok(cnp.ndarray x):
    """Whether BLAS can read the last two axes of x in place."""
    cdef int ld
    return blas_layout(x, &ld) >= 0


cdef void gemm_stack(real *a, Py_ssize_t sa, bint a_rows, int lda,
                     real *b, Py_ssize_t sb, bint b_rows, int ldb,
                     real *c, Py_ssize_t sc, bint c_rows, int ldc,
                     Py_ssize_t batch, int m, int n, int k,
                     real alpha, real beta) noexcept nogil:
    # batch strides sa, sb, sc are in elements (0 broadcasts an operand)
    cdef Py_ssize_t i
    cdef char ta, tb
    for i in range(batch):
        if c_rows:
            # row-major C is column-major C^T = B^T A^T: swap the operands;
            # a row-major operand is its own transpose in column-major
            ta = b"N" if b_rows else b"T"
            tb = b"N" if a_rows else b"T"
            gemm(ta, tb, n, m, k, alpha, b + i * sb, ldb, a + i * sa, lda,
                 beta, c + i * sc, ldc)
        else:
            ta = b"T" if a_rows else b"N"
            tb = b"T" if b_rows else b"N"
            gemm(ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb,
                 beta, c + i * sc, ldc)


def gemm_into(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b, double alpha, double beta):
    """C[i] := alpha * A[i] @ B[i] + beta * C[i] for 3-D float32/float64 stacks.

    A's and B's leading (batch) axis may have length 1 (broadcast); all three
    must have BLAS layouts (see ``blas_ok``) and one dtype.
    """
    cdef int lda, ldb, ldc
    cdef int la = blas_layout(a, &lda), lb = blas_layout(b, &ldb), lc = blas_layout(c, &ldc)
    if la < 0 or lb < 0 or lc < 0:
        raise ValueError("gemm_into needs BLAS layouts")
    cdef Py_ssize_t batch = c.shape[0], isz = c.itemsize
    cdef int m = <int>c.shape[1], n = <int>c.shape[2], k = <int>a.shape[2]
    cdef Py_ssize_t sa = 0 if a.shape[0] == 1 else a.strides[0] // isz
    cdef Py_ssize_t sb = 0 if b.shape[0] == 1 else b.strides[0] // isz
    cdef Py_ssize_t sc = c.strides[0] // isz
    if m == 0 or n == 0 or batch == 0:
        return
    if c.dtype == np.float32:
        with nogil:
            gemm_stack(<float *>cnp.PyArray_DATA(a), sa, la == 1, lda,
                       <float *>cnp.PyArray_DATA(b), sb, lb == 1, ldb,
                       <float *>cnp.PyArray_DATA(c), sc, lc == 1, ldc,
                       batch, m, n, k, <float>alpha, <float>beta)
    else:
        with nogil:
            gemm_stack(<double *>cnp.PyArray_DATA(a), sa, la == 1, lda,
                       <double *>cnp.PyArray_DATA(b), sb, lb == 1, ldb,
                       <double *>cnp.PyArray_DATA(c), sc, lc == 1, ldc,
                       batch, m, n, k, alpha, beta)


cdef void loop_matmul(integral *a, Py_ssize_t a0, Py_ssize_t a1, Py_ssize_t a2,
                      integral *b, Py_ssize_t b0, Py_ssize_t b1, Py_ssize_t b2,
                      integral *c, Py_ssize_t c0, Py_ssize_t c1, Py_ssize_t c2,
                      Py_ssize_t batch, Py_ssize_t m, Py_ssize_t n,
                      Py_ssize_t k) noexcept nogil:
    # strides in elements; i-p-j order so the innermost loop walks rows of B and C
    cdef Py_ssize_t t, i, j, p
    cdef integral x
    for t in range(batch):
        for i in range(m):
            for j in range(n):
                c[t * c0 + i * c1 + j * c2] = 0
            for p in range(k):
                x = a[t * a0 + i * a1 + p * a2]
                if integral is bool_t:
                    if x:
                        for j in range(n):
                            c[t * c0 + i * c1 + j * c2] |= b[t * b0 + p * b1 + j * b2]
                else:
                    for j in range(n):
                        c[t * c0 + i * c1 + j * c2] += x * b[t * b0 + p * b1 + j * b2]


def loop_matmul_into(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b):
    """C[i] := A[i] @ B[i] for 3-D bool/int32/int64 stacks of any strides
    (integer arithmetic wraps, as NumPy's; bools are or-ed ands)."""
    cdef Py_ssize_t isz = c.itemsize
    cdef Py_ssize_t a0 = 0 if a.shape[0] == 1 else a.strides[0] // isz
    cdef Py_ssize_t b0 = 0 if b.shape[0] == 1 else b.strides[0] // isz
    cdef Py_ssize_t a1 = a.strides[1] // isz, a2 = a.strides[2] // isz
    cdef Py_ssize_t b1 = b.strides[1] // isz, b2 = b.strides[2] // isz
    cdef Py_ssize_t c0 = c.strides[0] // isz, c1 = c.strides[1] // isz, c2 = c.strides[2] // isz
    cdef Py_ssize_t batch = c.shape[0], m = c.shape[1], n = c.shape[2], k = a.shape[2]
    if c.dtype == np.bool_:
        with nogil:
            loop_matmul(<unsigned char *>cnp.PyArray_DATA(a), a0, a1, a2,
                        <unsigned char *>cnp.PyArray_DATA(b), b0, b1, b2,
                        <unsigned char *>cnp.PyArray_DATA(c), c0, c1, c2, batch, m, n, k)
    elif c.dtype == np.int32:
        with nogil:
            loop_matmul(<int32_t *>cnp.PyArray_DATA(a), a0, a1, a2,
                        <int32_t *>cnp.PyArray_DATA(b), b0, b1, b2,
                        <int32_t *>cnp.PyArray_DATA(c), c0, c1, c2, batch, m, n, k)
    else:
        with nogil:
            loop_matmul(<int64_t *>cnp.PyArray_DATA(a), a0, a1, a2,
                        <int64_t *>cnp.PyArray_DATA(b), b0, b1, b2,
                        <int64_t *>cnp.PyArray_DATA(c), c0, c1, c2, batch, m, n, k)


# ---------------------------------------------------------------- fast path

cdef inline bint _disjoint(cnp.ndarray x, cnp.ndarray y):
    # byte extents do not intersect (so writing y cannot change x)
    cdef Py_ssize_t xlo = <Py_ssize_t>cnp.PyArray_DATA(x), ylo = <Py_ssize_t>cnp.PyArray_DATA(y)
    cdef Py_ssize_t xhi = xlo, yhi = ylo, d, s
    for d in range(x.ndim):
        s = x.strides[d] * (x.shape[d] - 1)
        if s < 0:
            xlo += s
        else:
            xhi += s
    for d in range(y.ndim):
        s = y.strides[d] * (y.shape[d] - 1)
        if s < 0:
            ylo += s
        else:
            yhi += s
    return xhi + x.itemsize <= ylo or yhi + y.itemsize <= xlo


cdef int gemm_2d_ready(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b) except -1:
    """1 when C := alpha*A@B + beta*C can go to BLAS as it is: 2-D non-empty
    float32/float64 operands of one dtype in BLAS layouts, A and B disjoint from C."""
    cdef int ld
    if c.ndim != 2 or a.ndim != 2 or b.ndim != 2:
        return 0
    if c.descr.type_num != a.descr.type_num or c.descr.type_num != b.descr.type_num:
        return 0
    if c.descr.type_num != cnp.NPY_FLOAT and c.descr.type_num != cnp.NPY_DOUBLE:
        return 0
    if c.size == 0 or a.shape[1] == 0:
        return 0
    if blas_layout(a, &ld) < 0 or blas_layout(b, &ld) < 0 or blas_layout(c, &ld) < 0:
        return 0
    return _disjoint(a, c) and _disjoint(b, c)


cdef int gemm_2d(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b, double alpha,
                 double beta) except -1:
    """C := alpha*A@B + beta*C for operands gemm_2d_ready accepted."""
    cdef int lda, ldb, ldc
    cdef int la = blas_layout(a, &lda), lb = blas_layout(b, &ldb), lc = blas_layout(c, &ldc)
    cdef int m = <int>c.shape[0], n = <int>c.shape[1], k = <int>a.shape[1]
    if c.descr.type_num == cnp.NPY_FLOAT:
        with nogil:
            gemm_stack(<float *>cnp.PyArray_DATA(a), 0, la == 1, lda,
                       <float *>cnp.PyArray_DATA(b), 0, lb == 1, ldb,
                       <float *>cnp.PyArray_DATA(c), 0, lc == 1, ldc,
                       1, m, n, k, <float>alpha, <float>beta)
    else:
        with nogil:
            gemm_stack(<double *>cnp.PyArray_DATA(a), 0, la == 1, lda,
                       <double *>cnp.PyArray_DATA(b), 0, lb == 1, ldb,
                       <double *>cnp.PyArray_DATA(c), 0, lc == 1, ldc,
                       1, m, n, k, alpha, beta)
    return 1
