# The small matrix products of gemm.h (AVX-512 register tiles), as blas.pyx
# calls them: C := alpha*A@B + beta*C, 0 returned where the CPU lacks AVX-512.

from pyet._kernels.types cimport pyet_intp


cdef extern from "gemm.h" nogil:
    enum:
        PYET_GEMM_MIN_M
        PYET_GEMM_MIN_N

    enum:
        PYET_EPI_BIAS_RELU
        PYET_EPI_BIAS_MASK
        PYET_EPI_MASK

    # an elementwise pass fused into the tiles' stores (gemm.h)
    ctypedef struct pyet_gemm_epi:
        int kind
        void *out
        pyet_intp ldo
        const void *bias
        const void *z
        pyet_intp ldz
        double s0, s1
        int bail

    int pyet_gemm_small_available() noexcept
    int pyet_gemm_tiles_large() noexcept
    # bt: B column-major (ldb its column stride), else row-major
    int pyet_sgemm_small(pyet_intp m, pyet_intp n, pyet_intp k, float alpha, const float *a,
                         pyet_intp sai, pyet_intp sap, const float *b, pyet_intp ldb, int bt,
                         float beta, float *c, pyet_intp ldc, pyet_gemm_epi *epi) noexcept
    int pyet_dgemm_small(pyet_intp m, pyet_intp n, pyet_intp k, double alpha, const double *a,
                         pyet_intp sai, pyet_intp sap, const double *b, pyet_intp ldb, int bt,
                         double beta, double *c, pyet_intp ldc, pyet_gemm_epi *epi) noexcept
    # C := alpha * X @ Y^T + beta * C, X's and Y's rows contiguous along K, C's
    # element (i, j) at c[i * csi + j * csj] (the dot tiles for few outputs); acc:
    # m * n vectors of 64 bytes, 64-byte aligned
    int pyet_sgemm_dots(pyet_intp m, pyet_intp n, pyet_intp k, float alpha, const float *x,
                        pyet_intp ldx, const float *y, pyet_intp ldy, float beta, float *c,
                        pyet_intp csi, pyet_intp csj, void *acc) noexcept
    int pyet_dgemm_dots(pyet_intp m, pyet_intp n, pyet_intp k, double alpha, const double *x,
                        pyet_intp ldx, const double *y, pyet_intp ldy, double beta, double *c,
                        pyet_intp csi, pyet_intp csj, void *acc) noexcept
