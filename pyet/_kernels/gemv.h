/* Small matrix-vector products for blas.pyx (gemv_arrays), in BLAS's
 * column-major terms: a column-major matrix p (rows x cols, leading dimension
 * ld, columns contiguous) times a vector.  On products of a few thousand
 * elements OpenBLAS's call (argument checks, its kernel's set-up) cost about
 * as much as the arithmetic: a 32 x 32 float64 gemv took ~0.25 us of pyet's
 * ~0.75 us call.  These loops keep BLAS's order of accumulation along each
 * output element (no FMA: the build passes -ffp-contract=off, so the AVX2
 * clone rounds as the baseline one).
 *
 *   pyet_?gemv_n: y[0:rows] = alpha * p @ x + beta * y, y contiguous, x any step
 *   pyet_?gemv_t: y[c] = alpha * p[:, c] . x + beta * y[c], x contiguous, y any step
 *
 * beta == 0: y is not read (BLAS's rule).  Static: only blas.pyx includes it. */
#ifndef PYET_GEMV_H
#define PYET_GEMV_H

#include <stddef.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    !defined(PYET_NO_DISPATCH)
/* (O3: blas.pyx's glue compiles at O2, whose cost model leaves these loops scalar) */
#define PYET_GEMV_BASE __attribute__((optimize("O3")))
#define PYET_GEMV_V3 __attribute__((target("arch=x86-64-v3"), optimize("O3")))
#define PYET_GEMV_HAS_V3() __builtin_cpu_supports("x86-64-v3")
#else
#define PYET_GEMV_BASE
#define PYET_GEMV_V3
#define PYET_GEMV_HAS_V3() 0
#endif

/* y = alpha * p x + beta y: columns four at a time, each y[i] updated in
 * column order (((y + t0 c0) + t1 c1) + ...), as one column at a time would */
#define PYET_GEMV_N(NAME, T, ATTR)                                                       \
    ATTR static void NAME(ptrdiff_t rows, ptrdiff_t cols, const T *p, ptrdiff_t ld,     \
                          const T *x, ptrdiff_t incx, T *y, T alpha, T beta) {          \
        ptrdiff_t i, c = 0;                                                              \
        if (beta == 0) {                                                                 \
            for (i = 0; i < rows; i++)                                                   \
                y[i] = 0;                                                                \
        } else if (beta != 1) {                                                          \
            for (i = 0; i < rows; i++)                                                   \
                y[i] *= beta;                                                            \
        }                                                                                \
        for (; c + 4 <= cols; c += 4) {                                                  \
            const T t0 = alpha * x[c * incx], t1 = alpha * x[(c + 1) * incx];            \
            const T t2 = alpha * x[(c + 2) * incx], t3 = alpha * x[(c + 3) * incx];      \
            const T *c0 = p + c * ld, *c1 = c0 + ld, *c2 = c1 + ld, *c3 = c2 + ld;       \
            for (i = 0; i < rows; i++)                                                   \
                y[i] = (((y[i] + t0 * c0[i]) + t1 * c1[i]) + t2 * c2[i]) + t3 * c3[i];   \
        }                                                                                \
        for (; c < cols; c++) {                                                          \
            const T t0 = alpha * x[c * incx];                                            \
            const T *c0 = p + c * ld;                                                    \
            for (i = 0; i < rows; i++)                                                   \
                y[i] += t0 * c0[i];                                                      \
        }                                                                                \
    }

/* y[c] = alpha * (p[:, c] . x) + beta y[c]: each dot in the lanes of a
 * 32-byte vector (lane k takes elements k, k + L, ...; GCC's vector types,
 * two SSE halves in the baseline clone), the lanes added pairwise in a fixed
 * order, then the tail; four columns at a time share x's loads.  (Plain
 * arrays of partial sums were left to the vectorizer: 5x slower on 100 x 100.) */
typedef float pyet_gemv_vs __attribute__((vector_size(32), aligned(4), may_alias));
typedef double pyet_gemv_vd __attribute__((vector_size(32), aligned(8), may_alias));

#define PYET_GEMV_T(NAME, T, VT, ATTR)                                                   \
    ATTR static T NAME##_hsum(VT v) {                                                    \
        enum { L = sizeof(VT) / sizeof(T) };                                             \
        T t[L];                                                                          \
        int w, k;                                                                        \
        __builtin_memcpy(t, &v, sizeof(VT));                                             \
        for (w = L / 2; w >= 1; w /= 2)                                                  \
            for (k = 0; k < w; k++)                                                      \
                t[k] = t[2 * k] + t[2 * k + 1];                                          \
        return t[0];                                                                     \
    }                                                                                    \
    ATTR static void NAME(ptrdiff_t rows, ptrdiff_t cols, const T *p, ptrdiff_t ld,     \
                          const T *x, T *y, ptrdiff_t incy, T alpha, T beta) {          \
        enum { L = sizeof(VT) / sizeof(T) };                                             \
        ptrdiff_t i, c = 0, j;                                                           \
        T s[4];                                                                          \
        for (; c < cols; c += 4) {                                                       \
            const ptrdiff_t nc = cols - c < 4 ? cols - c : 4;                            \
            const T *c0 = p + c * ld;                                                    \
            const T *c1 = nc > 1 ? c0 + ld : c0, *c2 = nc > 2 ? c0 + 2 * ld : c0;        \
            const T *c3 = nc > 3 ? c0 + 3 * ld : c0;                                     \
            VT a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};                                   \
            for (i = 0; i + L <= rows; i += L) {                                         \
                const VT xv = *(const VT *)(x + i);                                      \
                a0 += *(const VT *)(c0 + i) * xv;                                        \
                a1 += *(const VT *)(c1 + i) * xv;                                        \
                a2 += *(const VT *)(c2 + i) * xv;                                        \
                a3 += *(const VT *)(c3 + i) * xv;                                        \
            }                                                                            \
            s[0] = NAME##_hsum(a0);                                                      \
            s[1] = NAME##_hsum(a1);                                                      \
            s[2] = NAME##_hsum(a2);                                                      \
            s[3] = NAME##_hsum(a3);                                                      \
            for (; i < rows; i++) {                                                      \
                s[0] += c0[i] * x[i];                                                    \
                s[1] += c1[i] * x[i];                                                    \
                s[2] += c2[i] * x[i];                                                    \
                s[3] += c3[i] * x[i];                                                    \
            }                                                                            \
            for (j = 0; j < nc; j++)                                                     \
                y[(c + j) * incy] = beta == 0 ? alpha * s[j]                             \
                                              : alpha * s[j] + beta * y[(c + j) * incy]; \
        }                                                                                \
    }

PYET_GEMV_N(pyet_sgemv_n_base, float, PYET_GEMV_BASE)
PYET_GEMV_N(pyet_dgemv_n_base, double, PYET_GEMV_BASE)
PYET_GEMV_T(pyet_sgemv_t_base, float, pyet_gemv_vs, PYET_GEMV_BASE)
PYET_GEMV_T(pyet_dgemv_t_base, double, pyet_gemv_vd, PYET_GEMV_BASE)
PYET_GEMV_N(pyet_sgemv_n_v3, float, PYET_GEMV_V3)
PYET_GEMV_N(pyet_dgemv_n_v3, double, PYET_GEMV_V3)
PYET_GEMV_T(pyet_sgemv_t_v3, float, pyet_gemv_vs, PYET_GEMV_V3)
PYET_GEMV_T(pyet_dgemv_t_v3, double, pyet_gemv_vd, PYET_GEMV_V3)

static int pyet_gemv_v3 = -1;  /* whether the CPU runs the x86-64-v3 clones (once) */

static inline int pyet_gemv_use_v3(void) {
    if (pyet_gemv_v3 < 0)
        pyet_gemv_v3 = PYET_GEMV_HAS_V3() ? 1 : 0;
    return pyet_gemv_v3;
}

static inline void pyet_sgemv_n(ptrdiff_t rows, ptrdiff_t cols, const float *p, ptrdiff_t ld,
                                const float *x, ptrdiff_t incx, float *y, float alpha,
                                float beta) {
    (pyet_gemv_use_v3() ? pyet_sgemv_n_v3 : pyet_sgemv_n_base)(rows, cols, p, ld, x, incx, y,
                                                               alpha, beta);
}

static inline void pyet_dgemv_n(ptrdiff_t rows, ptrdiff_t cols, const double *p, ptrdiff_t ld,
                                const double *x, ptrdiff_t incx, double *y, double alpha,
                                double beta) {
    (pyet_gemv_use_v3() ? pyet_dgemv_n_v3 : pyet_dgemv_n_base)(rows, cols, p, ld, x, incx, y,
                                                               alpha, beta);
}

static inline void pyet_sgemv_t(ptrdiff_t rows, ptrdiff_t cols, const float *p, ptrdiff_t ld,
                                const float *x, float *y, ptrdiff_t incy, float alpha,
                                float beta) {
    (pyet_gemv_use_v3() ? pyet_sgemv_t_v3 : pyet_sgemv_t_base)(rows, cols, p, ld, x, y, incy,
                                                               alpha, beta);
}

static inline void pyet_dgemv_t(ptrdiff_t rows, ptrdiff_t cols, const double *p, ptrdiff_t ld,
                                const double *x, double *y, ptrdiff_t incy, double alpha,
                                double beta) {
    (pyet_gemv_use_v3() ? pyet_dgemv_t_v3 : pyet_dgemv_t_base)(rows, cols, p, ld, x, y, incy,
                                                               alpha, beta);
}

#endif
