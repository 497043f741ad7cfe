/* Small matrix products: C := alpha * A @ B + beta * C with AVX-512
 * register tiles, no packing.
 *
 * OpenBLAS packs A and B on every call (its copy routines were a quarter of
 * its time in the GRU's per-step products).  These tiles read B's rows in
 * place (a row of a 48-column panel: three vector loads), broadcast A's
 * elements from wherever they are (any strides: A or A.T alike) and keep an
 * 8 x 48 (float32) or 8 x 24 (float64) block of C in 24 registers: 0.36-0.98x
 * OpenBLAS's time on the MLP's and GRU's shapes, one thread (32 x 128 x 384
 * float32 0.62x; bench/bench_dot.py's table 3); the loop over K unrolled by 4
 * gained 8-12 %, prefetching B's rows ahead nothing.  blas.pyx decides which
 * products come here: narrow or large ones stay with BLAS.
 *
 * Layout: A's element (i, p) at a[i * sai + p * sap]; B row-major (row
 * stride ldb, unit columns), or column-major if bt (column stride ldb, copied
 * transposed a panel at a time); C row-major (row stride ldc, unit columns);
 * all in elements.  K is cut in blocks of 256 (float32; 128 float64) so that a
 * panel of B (48 KiB) stays near L1 while every row tile of C passes over it;
 * the blocks after the first accumulate into C.  Copying the panel to
 * consecutive rows first (B's rows a power of two apart share few L1 sets)
 * measured no faster on these shapes: 10 % slower with 32 rows.
 *
 * pyet_sgemm_small and pyet_dgemm_small return 0 (nothing written) where the
 * CPU or the compiler lacks AVX-512: the caller then uses BLAS. */
#ifndef PYET_GEMM_H
#define PYET_GEMM_H

#include <stddef.h>

/* fewer rows or columns leave the tiles part empty (1.1-1.2x BLAS's time) */
#define PYET_GEMM_MIN_M 8
#define PYET_GEMM_MIN_N 48

/* An elementwise pass over C fused into the tiles' stores (rewrite.GEMM_EPILOGUES):
 * each tile, once its K is done, also writes out[i, j] from the value it
 * stores in C and the row vector bias[j] (and z[i, j]), while they sit in
 * registers, instead of a pass reading C again.  The same roundings as the
 * pass's kernels: add, then relu (NaN kept, -0.0 -> 0.0) or a compare and a
 * select.  A NaN reaching a compare sets `bail`: the caller then runs the
 * gemm and the pass unfused, whose kernels decide which flags to report. */
enum { PYET_EPI_BIAS_RELU = 1,   /* out = relu(C + bias) */
       PYET_EPI_BIAS_MASK = 2,   /* out = where(z + bias > s0, C, s1) */
       PYET_EPI_MASK = 3 };      /* out = where(z > s0, C, s1) */
typedef struct {
    int kind;
    void *out;
    ptrdiff_t ldo;      /* out's row stride (unit columns), elements */
    const void *bias;   /* unit stride (NULL: none) */
    const void *z;
    ptrdiff_t ldz;
    double s0, s1;
    int bail;           /* (written, never cleared, by the tiles) */
} pyet_gemm_epi;

int pyet_sgemm_small(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, float alpha, const float *a,
                     ptrdiff_t sai, ptrdiff_t sap, const float *b, ptrdiff_t ldb, int bt,
                     float beta, float *c, ptrdiff_t ldc, pyet_gemm_epi *epi);
int pyet_dgemm_small(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, double alpha, const double *a,
                     ptrdiff_t sai, ptrdiff_t sap, const double *b, ptrdiff_t ldb, int bt,
                     double beta, double *c, ptrdiff_t ldc, pyet_gemm_epi *epi);
/* C := alpha * X @ Y^T + beta * C over a long K where X's m rows and Y's n
 * rows are contiguous along K (A row-major, B column-major), C's element
 * (i, j) at c[i * csi + j * csj]: the dot tiles below.  acc: m * n vectors
 * of 64 bytes, 64-byte aligned, the caller's.  0 where the CPU lacks AVX-512
 * (nothing written). */
int pyet_sgemm_dots(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, float alpha, const float *x,
                    ptrdiff_t ldx, const float *y, ptrdiff_t ldy, float beta, float *c,
                    ptrdiff_t csi, ptrdiff_t csj, void *acc);
int pyet_dgemm_dots(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, double alpha, const double *x,
                    ptrdiff_t ldx, const double *y, ptrdiff_t ldy, double beta, double *c,
                    ptrdiff_t csi, ptrdiff_t csj, void *acc);
int pyet_gemm_small_available(void);
/* 1 where the tiles measured ahead of OpenBLAS beyond 2^25 multiply-adds (AMD) */
int pyet_gemm_tiles_large(void);

#ifdef PYET_GEMM_IMPL

#include "kernels.h"  /* pyet_copy_tile */

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

#define PYET_GEMM_TARGET __attribute__((target("avx512f,avx512dq")))
#define PYET_GEMM_MR 8   /* rows of a register tile */
#define PYET_GEMM_NV 3   /* vectors per row of a tile */

/* One tile: rows mr <= 8, nv <= 3 vectors per row, the last one masked by
 * `last`; kc steps of p.  `first`: this K block writes alpha*AB + beta*C,
 * the later ones add alpha*AB.  mr and nv are constants in every call (the
 * switch below), so the accumulators live in registers. */
#define PYET_GEMM_TILE(NAME, T, V, MASK, W, SETZERO, LOADU, MASKZ_LOADU, MASK_STOREU,   \
                       SET1, FMADD, MUL, ADD, CMP_MASK, MASKZ_MOV, MASK_BLEND)          \
PYET_GEMM_TARGET static inline __attribute__((always_inline)) void                      \
NAME(int mr, int nv, MASK last, ptrdiff_t kc, const T *a, ptrdiff_t sai, ptrdiff_t sap,  \
     const T *b, ptrdiff_t ldb, T *c, ptrdiff_t ldc, T alpha, T beta, int first,       \
     pyet_gemm_epi *epi, T *eo, const T *eb, const T *ez)                              \
{                                                                                       \
    V r[PYET_GEMM_MR][PYET_GEMM_NV];                                                    \
    _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++)                                \
        _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++) r[i][v] = SETZERO();       \
    _Pragma("GCC unroll 4") for (ptrdiff_t p = 0; p < kc; p++) {                        \
        const T *bp = b + p * ldb;                                                      \
        const T *ap = a + p * sap;                                                      \
        V b0 = nv == 1 ? MASKZ_LOADU(last, bp) : LOADU(bp), b1 = b0, b2 = b0;           \
        if (nv > 1) b1 = nv == 2 ? MASKZ_LOADU(last, bp + W) : LOADU(bp + W);           \
        if (nv > 2) b2 = MASKZ_LOADU(last, bp + 2 * W);                                 \
        _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) {                          \
            V ai = SET1(ap[i * sai]);                                                   \
            r[i][0] = FMADD(ai, b0, r[i][0]);                                           \
            if (nv > 1) r[i][1] = FMADD(ai, b1, r[i][1]);                               \
            if (nv > 2) r[i][2] = FMADD(ai, b2, r[i][2]);                               \
        }                                                                               \
    }                                                                                   \
    V va = SET1(alpha), vb = SET1(beta);                                                \
    _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++)                                \
        _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++) {                          \
            T *cp = c + i * ldc + v * W;                                                \
            MASK mk = v == nv - 1 ? last : (MASK)-1;                                    \
            V x = alpha == 1 ? r[i][v] : MUL(va, r[i][v]);                              \
            if (!first)                                                                 \
                x = ADD(x, MASKZ_LOADU(mk, cp));                                        \
            else if (beta != 0)                                                         \
                x = FMADD(vb, MASKZ_LOADU(mk, cp), x);                                  \
            MASK_STOREU(cp, mk, x);                                                     \
            if (eo != NULL) {  /* the epilogue: this tile's K is done */                \
                const V zero = SETZERO();                                               \
                T *op = eo + i * epi->ldo + v * W;                                      \
                if (epi->kind == PYET_EPI_BIAS_RELU) {                                  \
                    const V y = ADD(x, MASKZ_LOADU(mk, eb + v * W));                    \
                    if (CMP_MASK(y, y, _CMP_UNORD_Q) & mk)                              \
                        epi->bail = 1;                                                  \
                    /* relu keeps y > 0 and NaN (not y <= 0), else +0.0 */              \
                    MASK_STOREU(op, mk, MASKZ_MOV(CMP_MASK(y, zero, _CMP_NLE_UQ), y));  \
                } else {                                                                \
                    V r = MASKZ_LOADU(mk, ez + i * epi->ldz + v * W);                   \
                    if (epi->kind == PYET_EPI_BIAS_MASK)                                \
                        r = ADD(r, MASKZ_LOADU(mk, eb + v * W));                        \
                    if (CMP_MASK(r, r, _CMP_UNORD_Q) & mk)                              \
                        epi->bail = 1;                                                  \
                    const MASK gt = CMP_MASK(r, SET1((T)epi->s0), _CMP_GT_OQ);          \
                    MASK_STOREU(op, mk, MASK_BLEND(gt, SET1((T)epi->s1), x));           \
                }                                                                       \
            }                                                                           \
        }                                                                               \
}

/* (the tiles without an epilogue are instances of their own: the epilogue's
 * code inside them cost 2-5 % on every product) */
#define PYET_GEMM_CALL(TILE, MR, NV)                                                    \
    if (eo != NULL)                                                                     \
        TILE(MR, NV, last, kc, a, sai, sap, b, ldp, c, ldc, alpha, beta, first,         \
             epi, eo, eb, ez);                                                          \
    else                                                                                \
        TILE(MR, NV, last, kc, a, sai, sap, b, ldp, c, ldc, alpha, beta, first,         \
             NULL, NULL, NULL, NULL);

#define PYET_GEMM_CASE(TILE, MR)                                                        \
    case MR:                                                                            \
        if (nv == 3) {                                                                  \
            PYET_GEMM_CALL(TILE, MR, 3)                                                 \
        } else if (nv == 2) {                                                           \
            PYET_GEMM_CALL(TILE, MR, 2)                                                 \
        } else {                                                                        \
            PYET_GEMM_CALL(TILE, MR, 1)                                                 \
        }                                                                               \
        break;

/* The whole product: panels of 48 (24) columns, blocks of KC, tiles of 8 rows
 * (the last ones shorter, masked columns at the right edge).  A column-major
 * B (bt) is copied transposed a panel at a time into rows the tiles read, once
 * for all the row tiles. */
#define PYET_GEMM_DEFINE(NAME, TILE, T, MASK, W, KC)                              \
PYET_GEMM_TARGET static void                                                            \
NAME##_avx512(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, T alpha, const T *a0,              \
              ptrdiff_t sai, ptrdiff_t sap, const T *b0, ptrdiff_t ldb, int bt, T beta, \
              T *c0, ptrdiff_t ldc, pyet_gemm_epi *epi)                                 \
{                                                                                       \
    T pack[KC * PYET_GEMM_NV * W] __attribute__((aligned(64)));                         \
    for (ptrdiff_t j = 0; j < n; j += PYET_GEMM_NV * W) {                               \
        ptrdiff_t nn = n - j < PYET_GEMM_NV * W ? n - j : PYET_GEMM_NV * W;             \
        int nv = (int)((nn + W - 1) / W);                                               \
        int tail = (int)(nn - (ptrdiff_t)(nv - 1) * W);                                 \
        MASK last = (MASK)(tail == W ? (MASK)-1 : (MASK)((1u << tail) - 1));             \
        for (ptrdiff_t p = 0; p < k; p += KC) {                                         \
            ptrdiff_t kc = k - p < KC ? k - p : KC;                                     \
            int first = p == 0;                                                         \
            const T *b = b0 + p * ldb + j;                                              \
            ptrdiff_t ldp = ldb;                                                        \
            if (bt) {  /* pack[q][jj] = B(p + q, j + jj): kernels.h's transposing copy */ \
                ldp = (ptrdiff_t)nv * W;                                                \
                pyet_copy_tile((char *)pack, ldp * (ptrdiff_t)sizeof(T),                \
                               (const char *)(b0 + j * ldb + p), (ptrdiff_t)sizeof(T),  \
                               ldb * (ptrdiff_t)sizeof(T), kc, nn, (int)sizeof(T), 1);  \
                b = pack;                                                               \
            }                                                                           \
            const int epi_now = epi != NULL && p + KC >= k;                             \
            const T *eb = epi_now && epi->bias != NULL ? (const T *)epi->bias + j : NULL; \
            for (ptrdiff_t i0 = 0; i0 < m; i0 += PYET_GEMM_MR) {                        \
                int mr = m - i0 < PYET_GEMM_MR ? (int)(m - i0) : PYET_GEMM_MR;          \
                const T *a = a0 + i0 * sai + p * sap;                                   \
                T *c = c0 + i0 * ldc + j;                                               \
                T *eo = epi_now ? (T *)epi->out + i0 * epi->ldo + j : NULL;             \
                const T *ez = epi_now && epi->z != NULL ?                               \
                    (const T *)epi->z + i0 * epi->ldz + j : NULL;                       \
                switch (mr) {                                                           \
                    PYET_GEMM_CASE(TILE, 8) PYET_GEMM_CASE(TILE, 7)                     \
                    PYET_GEMM_CASE(TILE, 6) PYET_GEMM_CASE(TILE, 5)                     \
                    PYET_GEMM_CASE(TILE, 4) PYET_GEMM_CASE(TILE, 3)                     \
                    PYET_GEMM_CASE(TILE, 2) PYET_GEMM_CASE(TILE, 1)                     \
                }                                                                       \
            }                                                                           \
        }                                                                               \
    }                                                                                   \
}

PYET_GEMM_TILE(pyet_stile, float, __m512, __mmask16, 16, _mm512_setzero_ps, _mm512_loadu_ps,
               _mm512_maskz_loadu_ps, _mm512_mask_storeu_ps, _mm512_set1_ps,
               _mm512_fmadd_ps, _mm512_mul_ps, _mm512_add_ps, _mm512_cmp_ps_mask,
               _mm512_maskz_mov_ps, _mm512_mask_blend_ps)
PYET_GEMM_TILE(pyet_dtile, double, __m512d, __mmask8, 8, _mm512_setzero_pd, _mm512_loadu_pd,
               _mm512_maskz_loadu_pd, _mm512_mask_storeu_pd, _mm512_set1_pd,
               _mm512_fmadd_pd, _mm512_mul_pd, _mm512_add_pd, _mm512_cmp_pd_mask,
               _mm512_maskz_mov_pd, _mm512_mask_blend_pd)
PYET_GEMM_DEFINE(pyet_sgemm, pyet_stile, float, __mmask16, 16, 256)
PYET_GEMM_DEFINE(pyet_dgemm, pyet_dtile, double, __mmask8, 8, 128)

/* Dot tiles: a product with few outputs and a long K (a convolution's weight
 * gradient dY @ cols^T over few input channels: (16, 16384) @ (16384, 9)) leaves the
 * tiles above a 48-column panel mostly empty, and BLAS packs both operands
 * for 144 outputs.  Here a tile of 4 x 3 outputs keeps a vector accumulator
 * each (12 registers: 7 loads for 12 multiply-adds) over a block of K that
 * X's and Y's rows keep in L2 while every tile passes over it; between blocks
 * the accumulators wait in acc (m * n vectors), and each is reduced once, at
 * the end, in a fixed order: the same bits whatever rows a thread takes. */
#define PYET_DOTS_MR 4
#define PYET_DOTS_NR 3
#define PYET_DOTS_DEFINE(NAME, T, V, MASK, W, SETZERO, LOADU, MASKZ_LOADU, FMADD, REDUCE, KD) \
PYET_GEMM_TARGET static inline __attribute__((always_inline)) void                      \
NAME##_tile(int mr, int nr, ptrdiff_t kc, const T *x, ptrdiff_t ldx, const T *y,        \
            ptrdiff_t ldy, V *acc, ptrdiff_t n)                                         \
{                                                                                       \
    V s[PYET_DOTS_MR][PYET_DOTS_NR];                                                    \
    _Pragma("GCC unroll 4") for (int i = 0; i < mr; i++)                                \
        _Pragma("GCC unroll 3") for (int j = 0; j < nr; j++) s[i][j] = acc[i * n + j];  \
    ptrdiff_t p = 0;                                                                    \
    for (; p + W <= kc; p += W) {                                                       \
        V yv[PYET_DOTS_NR];                                                             \
        _Pragma("GCC unroll 3") for (int j = 0; j < nr; j++) yv[j] = LOADU(y + j * ldy + p); \
        _Pragma("GCC unroll 4") for (int i = 0; i < mr; i++) {                          \
            const V xv = LOADU(x + i * ldx + p);                                        \
            _Pragma("GCC unroll 3") for (int j = 0; j < nr; j++)                        \
                s[i][j] = FMADD(xv, yv[j], s[i][j]);                                    \
        }                                                                               \
    }                                                                                   \
    if (p < kc) {  /* K's last, partial vector (zeros beyond it add nothing) */         \
        const MASK mk = (MASK)((1u << (kc - p)) - 1);                                   \
        V yv[PYET_DOTS_NR];                                                             \
        _Pragma("GCC unroll 3") for (int j = 0; j < nr; j++)                            \
            yv[j] = MASKZ_LOADU(mk, y + j * ldy + p);                                   \
        _Pragma("GCC unroll 4") for (int i = 0; i < mr; i++) {                          \
            const V xv = MASKZ_LOADU(mk, x + i * ldx + p);                              \
            _Pragma("GCC unroll 3") for (int j = 0; j < nr; j++)                        \
                s[i][j] = FMADD(xv, yv[j], s[i][j]);                                    \
        }                                                                               \
    }                                                                                   \
    _Pragma("GCC unroll 4") for (int i = 0; i < mr; i++)                                \
        _Pragma("GCC unroll 3") for (int j = 0; j < nr; j++) acc[i * n + j] = s[i][j];  \
}                                                                                       \
                                                                                        \
PYET_GEMM_TARGET static void                                                            \
NAME##_run(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, T alpha, const T *x, ptrdiff_t ldx,   \
           const T *y, ptrdiff_t ldy, T beta, T *c, ptrdiff_t csi, ptrdiff_t csj, V *acc) \
{                                                                                       \
    for (ptrdiff_t q = 0; q < m * n; q++)                                               \
        acc[q] = SETZERO();                                                             \
    for (ptrdiff_t p = 0; p < k; p += KD) {                                             \
        const ptrdiff_t kc = k - p < KD ? k - p : KD;                                   \
        for (ptrdiff_t i0 = 0; i0 < m; i0 += PYET_DOTS_MR) {                            \
            const int mr = m - i0 < PYET_DOTS_MR ? (int)(m - i0) : PYET_DOTS_MR;        \
            for (ptrdiff_t j0 = 0; j0 < n; j0 += PYET_DOTS_NR) {                        \
                const int nr = n - j0 < PYET_DOTS_NR ? (int)(n - j0) : PYET_DOTS_NR;    \
                const T *xp = x + i0 * ldx + p, *yp = y + j0 * ldy + p;                 \
                V *ap = acc + i0 * n + j0;                                              \
                if (mr == PYET_DOTS_MR && nr == PYET_DOTS_NR)  /* registers */          \
                    NAME##_tile(PYET_DOTS_MR, PYET_DOTS_NR, kc, xp, ldx, yp, ldy, ap, n); \
                else                                                                    \
                    NAME##_tile(mr, nr, kc, xp, ldx, yp, ldy, ap, n);                   \
            }                                                                           \
        }                                                                               \
    }                                                                                   \
    for (ptrdiff_t i = 0; i < m; i++)                                                   \
        for (ptrdiff_t j = 0; j < n; j++) {                                             \
            T v = alpha * REDUCE(acc[i * n + j]);                                       \
            T *cp = c + i * csi + j * csj;                                              \
            *cp = beta != 0 ? v + beta * *cp : v;                                       \
        }                                                                               \
}

/* blocks of K: 4 KiB of each row (float32 (16, 16384) @ (16384, 9): blocks of
 * 1 KiB 103 us, 4 KiB 67, 8 KiB 95: the 25 rows' blocks in L2, few
 * accumulator round trips) */
PYET_DOTS_DEFINE(pyet_sdots, float, __m512, __mmask16, 16, _mm512_setzero_ps, _mm512_loadu_ps,
                 _mm512_maskz_loadu_ps, _mm512_fmadd_ps, _mm512_reduce_add_ps, 1024)
PYET_DOTS_DEFINE(pyet_ddots, double, __m512d, __mmask8, 8, _mm512_setzero_pd, _mm512_loadu_pd,
                 _mm512_maskz_loadu_pd, _mm512_fmadd_pd, _mm512_reduce_add_pd, 512)

int pyet_gemm_small_available(void)
{
    static int have = -1;  /* a benign race: every thread computes the same */
    if (have < 0)
        have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    return have;
}

/* Zen 4 runs AVX-512 as two 256-bit halves: there the tiles stayed ahead of
 * OpenBLAS's SkylakeX kernels up to 2^30 multiply-adds, where on Intel its
 * packing and blocking paid beyond 2^25 (blas.pyx has the numbers) */
int pyet_gemm_tiles_large(void)
{
    return pyet_gemm_small_available() && __builtin_cpu_is("amd");
}

/* the entry points: the tiles where the CPU has AVX-512, else 0 (BLAS's turn) */
#define PYET_GEMM_ENTRY(NAME, T)                                                        \
int NAME##_small(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, T alpha, const T *a, ptrdiff_t sai,  \
                 ptrdiff_t sap, const T *b, ptrdiff_t ldb, int bt, T beta, T *c,        \
                 ptrdiff_t ldc, pyet_gemm_epi *epi)                                     \
{                                                                                       \
    if (!pyet_gemm_small_available())                                                   \
        return 0;                                                                       \
    NAME##_avx512(m, n, k, alpha, a, sai, sap, b, ldb, bt, beta, c, ldc, epi);          \
    return 1;                                                                           \
}

PYET_GEMM_ENTRY(pyet_sgemm, float)
PYET_GEMM_ENTRY(pyet_dgemm, double)

#define PYET_DOTS_ENTRY(NAME, RUN, T, V)                                                \
int NAME(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, T alpha, const T *x, ptrdiff_t ldx,     \
         const T *y, ptrdiff_t ldy, T beta, T *c, ptrdiff_t csi, ptrdiff_t csj, void *acc) \
{                                                                                       \
    if (!pyet_gemm_small_available())                                                   \
        return 0;                                                                       \
    RUN(m, n, k, alpha, x, ldx, y, ldy, beta, c, csi, csj, (V *)acc);                   \
    return 1;                                                                           \
}

PYET_DOTS_ENTRY(pyet_sgemm_dots, pyet_sdots_run, float, __m512)
PYET_DOTS_ENTRY(pyet_dgemm_dots, pyet_ddots_run, double, __m512d)

#else  /* no AVX-512 tiles on this compiler or CPU family: BLAS does it all */

int pyet_gemm_small_available(void) { return 0; }
int pyet_gemm_tiles_large(void) { return 0; }

#define PYET_GEMM_NONE(NAME, T)                                                         \
int NAME##_small(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, T alpha, const T *a, ptrdiff_t sai,  \
                 ptrdiff_t sap, const T *b, ptrdiff_t ldb, int bt, T beta, T *c,        \
                 ptrdiff_t ldc, pyet_gemm_epi *epi)                                     \
{                                                                                       \
    (void)m; (void)n; (void)k; (void)alpha; (void)a; (void)sai; (void)sap; (void)b;     \
    (void)ldb; (void)bt; (void)beta; (void)c; (void)ldc; (void)epi;                     \
    return 0;                                                                           \
}

PYET_GEMM_NONE(pyet_sgemm, float)
PYET_GEMM_NONE(pyet_dgemm, double)

#define PYET_DOTS_NONE(NAME, T)                                                         \
int NAME(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, T alpha, const T *x, ptrdiff_t ldx,     \
         const T *y, ptrdiff_t ldy, T beta, T *c, ptrdiff_t csi, ptrdiff_t csj, void *acc) \
{                                                                                       \
    (void)m; (void)n; (void)k; (void)alpha; (void)x; (void)ldx; (void)y; (void)ldy;     \
    (void)beta; (void)c; (void)csi; (void)csj; (void)acc;                               \
    return 0;                                                                           \
}

PYET_DOTS_NONE(pyet_sgemm_dots, float)
PYET_DOTS_NONE(pyet_dgemm_dots, double)

#endif
#endif  /* PYET_GEMM_IMPL */
#endif  /* PYET_GEMM_H */
