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
 * stride ldb, unit columns), or column-major if bt (column stride ldb, below
 * 2^27: gathered a panel at a time); C row-major (row stride ldc, unit
 * columns); all in elements.  K is cut in blocks of 256 (float32; 128 float64) so that a
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

int pyet_sgemm_small(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, float alpha, const float *a,
                     ptrdiff_t sai, ptrdiff_t sap, const float *b, ptrdiff_t ldb, int bt,
                     float beta, float *c, ptrdiff_t ldc);
int pyet_dgemm_small(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, double alpha, const double *a,
                     ptrdiff_t sai, ptrdiff_t sap, const double *b, ptrdiff_t ldb, int bt,
                     double beta, double *c, ptrdiff_t ldc);
int pyet_gemm_small_available(void);

#ifdef PYET_GEMM_IMPL

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
                       SET1, FMADD, MUL, ADD)                                           \
PYET_GEMM_TARGET static inline __attribute__((always_inline)) void                      \
NAME(int mr, int nv, MASK last, ptrdiff_t kc, const T *a, ptrdiff_t sai, ptrdiff_t sap,  \
     const T *b, ptrdiff_t ldb, T *c, ptrdiff_t ldc, T alpha, T beta, int first)       \
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
        }                                                                               \
}

#define PYET_GEMM_CASE(TILE, MR)                                                        \
    case MR:                                                                            \
        if (nv == 3)                                                                    \
            TILE(MR, 3, last, kc, a, sai, sap, b, ldp, c, ldc, alpha, beta, first);     \
        else if (nv == 2)                                                               \
            TILE(MR, 2, last, kc, a, sai, sap, b, ldp, c, ldc, alpha, beta, first);     \
        else                                                                            \
            TILE(MR, 1, last, kc, a, sai, sap, b, ldp, c, ldc, alpha, beta, first);     \
        break;

/* The whole product: panels of 48 (24) columns, blocks of KC, tiles of 8 rows
 * (the last ones shorter, masked columns at the right edge). */
/* A panel of a column-major B (element (p, j) at b[j * ldb + p]) as the tiles
 * read it: row q, columns jj < nv * W, at pack[q * ldp + jj] (zeros past the
 * last column), each vector gathered from W columns ldb apart. */
PYET_GEMM_TARGET static void
pyet_spack_cols(float *pack, ptrdiff_t ldp, const float *b, ptrdiff_t ldb, ptrdiff_t kc, int nv,
                __mmask16 last)
{
    /* 16 columns x 16 rows at a time, transposed in registers (the gathers
     * this replaced cost as much as the tiles' work with 32 rows) */
    for (int v = 0; v < nv; v++) {
        const int cols = v == nv - 1 ? __builtin_popcount(last) : 16;
        for (ptrdiff_t q0 = 0; q0 < kc; q0 += 16) {
            const int qn = kc - q0 < 16 ? (int)(kc - q0) : 16;
            const __mmask16 km = (__mmask16)((1u << qn) - 1);
            __m512 r[16], t[16], u[16];
            _Pragma("GCC unroll 16") for (int jj = 0; jj < 16; jj++)
                r[jj] = jj < cols ? _mm512_maskz_loadu_ps(km, b + (16 * v + jj) * ldb + q0)
                                  : _mm512_setzero_ps();
            /* per 128-bit lane: pairs of rows interleaved, then groups of four */
            _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) {
                t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
                t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
            }
            _Pragma("GCC unroll 4") for (int g = 0; g < 4; g++) {
                const __m512d t0 = _mm512_castps_pd(t[4 * g]), t1 = _mm512_castps_pd(t[4 * g + 1]);
                const __m512d t2 = _mm512_castps_pd(t[4 * g + 2]);
                const __m512d t3 = _mm512_castps_pd(t[4 * g + 3]);
                u[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
                u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
                u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
                u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
            }
            /* u[4g + c], lane L: rows 4g..4g+3 of column 4L + c; lanes regrouped */
            _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
                const __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
                const __m512 v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xdd);
                const __m512 v2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
                const __m512 v3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xdd);
                r[c] = _mm512_shuffle_f32x4(v0, v2, 0x88);
                r[8 + c] = _mm512_shuffle_f32x4(v0, v2, 0xdd);
                r[4 + c] = _mm512_shuffle_f32x4(v1, v3, 0x88);
                r[12 + c] = _mm512_shuffle_f32x4(v1, v3, 0xdd);
            }
            for (int c = 0; c < qn; c++)
                _mm512_store_ps(pack + (q0 + c) * ldp + 16 * v, r[c]);
        }
    }
}

PYET_GEMM_TARGET static void
pyet_dpack_cols(double *pack, ptrdiff_t ldp, const double *b, ptrdiff_t ldb, ptrdiff_t kc,
                int nv, __mmask8 last)
{
    const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                           _mm256_set1_epi32((int)ldb));
    for (ptrdiff_t q = 0; q < kc; q++)
        for (int v = 0; v < nv; v++)
            _mm512_store_pd(pack + q * ldp + 8 * v, _mm512_mask_i32gather_pd(
                _mm512_setzero_pd(), v == nv - 1 ? last : (__mmask8)-1, idx,
                b + 8 * v * ldb + q, 8));
}

/* The whole product: panels of 48 (24) columns, blocks of KC, tiles of 8 rows
 * (the last ones shorter, masked columns at the right edge).  A column-major
 * B (bt) is gathered a panel at a time into rows the tiles read, once for all
 * the row tiles. */
#define PYET_GEMM_DEFINE(NAME, TILE, PACK, T, MASK, W, KC)                              \
PYET_GEMM_TARGET static void                                                            \
NAME##_avx512(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, T alpha, const T *a0,              \
              ptrdiff_t sai, ptrdiff_t sap, const T *b0, ptrdiff_t ldb, int bt, T beta, \
              T *c0, ptrdiff_t ldc)                                                     \
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
            if (bt) {                                                                   \
                ldp = (ptrdiff_t)nv * W;                                                \
                PACK(pack, ldp, b0 + j * ldb + p, ldb, kc, nv, last);                   \
                b = pack;                                                               \
            }                                                                           \
            for (ptrdiff_t i0 = 0; i0 < m; i0 += PYET_GEMM_MR) {                        \
                int mr = m - i0 < PYET_GEMM_MR ? (int)(m - i0) : PYET_GEMM_MR;          \
                const T *a = a0 + i0 * sai + p * sap;                                   \
                T *c = c0 + i0 * ldc + j;                                               \
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
               _mm512_fmadd_ps, _mm512_mul_ps, _mm512_add_ps)
PYET_GEMM_TILE(pyet_dtile, double, __m512d, __mmask8, 8, _mm512_setzero_pd, _mm512_loadu_pd,
               _mm512_maskz_loadu_pd, _mm512_mask_storeu_pd, _mm512_set1_pd,
               _mm512_fmadd_pd, _mm512_mul_pd, _mm512_add_pd)
PYET_GEMM_DEFINE(pyet_sgemm, pyet_stile, pyet_spack_cols, float, __mmask16, 16, 256)
PYET_GEMM_DEFINE(pyet_dgemm, pyet_dtile, pyet_dpack_cols, double, __mmask8, 8, 128)

int pyet_gemm_small_available(void)
{
    static int have = -1;  /* a benign race: every thread computes the same */
    if (have < 0)
        have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    return have;
}

/* the entry points: the tiles where the CPU has AVX-512, else 0 (BLAS's turn) */
#define PYET_GEMM_ENTRY(NAME, T)                                                        \
int NAME##_small(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, T alpha, const T *a, ptrdiff_t sai,  \
                 ptrdiff_t sap, const T *b, ptrdiff_t ldb, int bt, T beta, T *c,        \
                 ptrdiff_t ldc)                                                         \
{                                                                                       \
    if (!pyet_gemm_small_available())                                                   \
        return 0;                                                                       \
    NAME##_avx512(m, n, k, alpha, a, sai, sap, b, ldb, bt, beta, c, ldc);               \
    return 1;                                                                           \
}

PYET_GEMM_ENTRY(pyet_sgemm, float)
PYET_GEMM_ENTRY(pyet_dgemm, double)

#else  /* no AVX-512 tiles on this compiler or CPU family: BLAS does it all */

int pyet_gemm_small_available(void) { return 0; }

#define PYET_GEMM_NONE(NAME, T)                                                         \
int NAME##_small(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, T alpha, const T *a, ptrdiff_t sai,  \
                 ptrdiff_t sap, const T *b, ptrdiff_t ldb, int bt, T beta, T *c,        \
                 ptrdiff_t ldc)                                                         \
{                                                                                       \
    (void)m; (void)n; (void)k; (void)alpha; (void)a; (void)sai; (void)sap; (void)b;     \
    (void)ldb; (void)bt; (void)beta; (void)c; (void)ldc;                                \
    return 0;                                                                           \
}

PYET_GEMM_NONE(pyet_sgemm, float)
PYET_GEMM_NONE(pyet_dgemm, double)

#endif
#endif  /* PYET_GEMM_IMPL */
#endif  /* PYET_GEMM_H */
