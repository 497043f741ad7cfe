cimport numpy as cnp

cdef int gemm_2d_ready(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b) except -1
cdef int gemm_2d(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b, double alpha,
                 double beta) except -1
