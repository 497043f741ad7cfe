cimport numpy as cnp

from pyet._kernels.gemm cimport pyet_gemm_epi

cdef int gemm_2d_ready(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b) except -1
cdef int gemm_2d(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b, double alpha,
                 double beta) except -1
cdef int gemm_2d_epilogue(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b, double alpha,
                          double beta, pyet_gemm_epi *epi) except -2
