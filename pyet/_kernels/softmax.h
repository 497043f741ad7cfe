/* Row softmax and log-softmax, one row at a time while it sits in L1:
 * the row's max, then exp(x - max) written out and summed, then one more
 * pass (divide, or subtract the log of the sum).  Memory is read once and
 * written once; NumPy's formula makes five passes and three temporaries.
 *
 * Rows are contiguous (the Cython caller arranges it) and the output does not
 * overlap the input (the output row holds the exps); row strides are in
 * elements.  Each step rounds as NumPy's formula does: exp(x - m), then
 * e / sum(e), or (x - m) - log(sum(e)); max and sum fold in 32 lanes
 * combined pairwise (the sum at NumPy's pairwise accuracy); the max
 * propagates NaN, as NumPy's.
 */
#ifndef PYET_SOFTMAX_H
#define PYET_SOFTMAX_H

#include "kernels.h"

#define PYET_COLS 256  /* the widest column tile of pyet_softmax_cols (nn.pyx reads it) */

/* defined once, in kernels_narrow512_reduce.c (see kernels.h) */
void pyet_softmax_rows_f32(pyet_intp nrows, pyet_intp n, const float *x, pyet_intp xs, float *o,
                           pyet_intp os, int take_log);
void pyet_softmax_rows_f64(pyet_intp nrows, pyet_intp n, const double *x, pyet_intp xs,
                           double *o, pyet_intp os, int take_log);
void pyet_softmax_cols_f32(pyet_intp n, pyet_intp w, const float *x, pyet_intp xs, float *o,
                           pyet_intp os, int take_log);
void pyet_softmax_cols_f64(pyet_intp n, pyet_intp w, const double *x, pyet_intp xs, double *o,
                           pyet_intp os, int take_log);
void pyet_xent_grad_rows_f32(pyet_intp nrows, pyet_intp n, const float *l, pyet_intp ls,
                             const float *t, pyet_intp ts, const pyet_intp *idx, const float *c,
                             pyet_intp cs, float *o, pyet_intp os);
void pyet_xent_grad_rows_f64(pyet_intp nrows, pyet_intp n, const double *l, pyet_intp ls,
                             const double *t, pyet_intp ts, const pyet_intp *idx,
                             const double *c, pyet_intp cs, double *o, pyet_intp os);

#ifdef PYET_KERNELS_IMPL

#define PYET_LANES 32  /* a lane loop of 32 vectorizes (see PYET_FOLD) */
#define PYET_SHORT_ROWS 64  /* rows shorter than PYET_LANES taken together */

/* One block of nr short rows of N items back to back (PYET_SOFTMAX_ROWS):
 * each row's max and sum in its own order, the rows side by side (one lane a
 * row: no chain of N dependent steps), the exps of the block in one loop;
 * the subtraction and the last step in EACH's order: a lane a row
 * (PYET_BY_LANES) where N is a constant (rows of 1-4: the loops' strides are
 * constants too and vectorize; a row's own loop of N items cost ~60
 * instructions a row: float32 (65536, 1) 74 instructions an item -> 12, 3.8x
 * NumPy; (16384, 4) 35 -> 18), else a row at a time (PYET_BY_ROWS: a lane a
 * row at a runtime stride cost 1.1-1.35x that on rows of 8-16).  Both orders
 * compute each item the same way: the same bits. */
#define PYET_BY_LANES(N, ITEM)                                              \
    for (pyet_intp j = 0; j < (N); j++)                                     \
        PYET_IVDEP for (pyet_intp r = 0; r < nr; r++) { ITEM; }
#define PYET_BY_ROWS(N, ITEM)                                               \
    for (pyet_intp r = 0; r < nr; r++)                                      \
        for (pyet_intp j = 0; j < (N); j++) { ITEM; }
#define PYET_SOFTMAX_BLOCK(T, SUF, LOG, N, EACH)                            \
    do {                                                                    \
        for (pyet_intp r = 0; r < nr; r++) mr[r] = xb[r * (N)];             \
        PYET_BY_LANES(N, mr[r] = pyet_max_##SUF(mr[r], xb[r * (N) + j]))    \
        EACH(N, ob[r * (N) + j] = xb[r * (N) + j] - mr[r])                  \
        PYET_IVDEP for (pyet_intp k = 0; k < nr * (N); k++)                 \
            ob[k] = pyet_exp_##SUF(ob[k]);                                  \
        for (pyet_intp r = 0; r < nr; r++) sr[r] = 0;                       \
        PYET_BY_LANES(N, sr[r] += ob[r * (N) + j])                          \
        if (take_log) {                                                     \
            for (pyet_intp r = 0; r < nr; r++) sr[r] = LOG(sr[r]);          \
            EACH(N, ob[r * (N) + j] = (xb[r * (N) + j] - mr[r]) - sr[r])    \
        } else {                                                            \
            EACH(N, ob[r * (N) + j] = ob[r * (N) + j] / sr[r])              \
        }                                                                   \
    } while (0)

#define PYET_SOFTMAX_ROWS(T, SUF, LOG)                                       \
    PYET_DISPATCH_WIDE void pyet_softmax_rows_##SUF(                        \
        pyet_intp nrows, pyet_intp n, const T *x, pyet_intp xs, T *o,       \
        pyet_intp os, int take_log)                                         \
    {                                                                       \
        if (n < PYET_LANES && xs == n && os == n) {                         \
            /* short rows back to back (a classifier's logits): a block of  \
             * rows at a time (PYET_SOFTMAX_BLOCK); the same steps, in the  \
             * same order, as the loop below takes for a row shorter than   \
             * PYET_LANES */                                                \
            for (pyet_intp r0 = 0; r0 < nrows; r0 += PYET_SHORT_ROWS) {     \
                const pyet_intp nr = nrows - r0 < PYET_SHORT_ROWS ?          \
                    nrows - r0 : PYET_SHORT_ROWS;                           \
                const T *xb = x + r0 * n;                                   \
                T *ob = o + r0 * n;                                         \
                T mr[PYET_SHORT_ROWS], sr[PYET_SHORT_ROWS];                 \
                switch (n) {                                                \
                case 1: PYET_SOFTMAX_BLOCK(T, SUF, LOG, 1, PYET_BY_LANES); break; \
                case 2: PYET_SOFTMAX_BLOCK(T, SUF, LOG, 2, PYET_BY_LANES); break; \
                case 3: PYET_SOFTMAX_BLOCK(T, SUF, LOG, 3, PYET_BY_LANES); break; \
                case 4: PYET_SOFTMAX_BLOCK(T, SUF, LOG, 4, PYET_BY_LANES); break; \
                default: PYET_SOFTMAX_BLOCK(T, SUF, LOG, n, PYET_BY_ROWS);  \
                }                                                           \
            }                                                               \
            return;                                                         \
        }                                                                   \
        for (pyet_intp r = 0; r < nrows; r++, x += xs, o += os) {           \
            T lane[PYET_LANES];                                             \
            pyet_intp i = 0;                                                \
            T m = x[0];                                                     \
            for (int l = 0; l < PYET_LANES; l++) lane[l] = m;               \
            for (; i + PYET_LANES <= n; i += PYET_LANES)                    \
                PYET_IVDEP for (int l = 0; l < PYET_LANES; l++)             \
                    lane[l] = pyet_max_##SUF(lane[l], x[i + l]);            \
            for (; i < n; i++) m = pyet_max_##SUF(m, x[i]);                 \
            for (int w = PYET_LANES / 2; w >= 1; w /= 2)  /* pairwise: no 32-long chain */ \
                for (int l = 0; l < w; l++) lane[l] = pyet_max_##SUF(lane[l], lane[l + w]); \
            m = pyet_max_##SUF(m, lane[0]);                                 \
            /* exp into the output row (a plain loop: vectorizes), then its sum */ \
            T *e_ = o;                                                      \
            PYET_IVDEP for (pyet_intp j = 0; j < n; j++) {                  \
                const T d = x[j] - m;                                       \
                e_[j] = pyet_exp_##SUF(d);                                  \
            }                                                               \
            for (int l = 0; l < PYET_LANES; l++) lane[l] = 0;               \
            for (i = 0; i + PYET_LANES <= n; i += PYET_LANES)               \
                PYET_IVDEP for (int l = 0; l < PYET_LANES; l++) lane[l] += e_[i + l]; \
            T tail = 0;                                                     \
            for (; i < n; i++) tail += e_[i];                               \
            for (int w = PYET_LANES / 2; w >= 1; w /= 2)                    \
                for (int l = 0; l < w; l++) lane[l] += lane[l + w];         \
            const T s = lane[0] + tail;                                     \
            if (take_log) {                                                 \
                const T ls = LOG(s);                                        \
                PYET_IVDEP for (pyet_intp j = 0; j < n; j++) {              \
                    const T d = x[j] - m;                                   \
                    o[j] = d - ls;                                          \
                }                                                           \
            } else {                                                        \
                PYET_IVDEP for (pyet_intp j = 0; j < n; j++) o[j] = o[j] / s; \
            }                                                               \
        }                                                                   \
    }

/* Softmax along a non-last axis, with no transposed copy: a tile of w <=
 * PYET_COLS contiguous columns over the n rows of the reduced axis (row
 * strides xs, os in elements), so every inner loop runs along contiguous
 * memory.  The columns' max, then exp(x - max) written out and summed row by
 * row (the order NumPy's sum along a non-last axis adds in), then one more
 * pass (divide, or subtract the log).  The caller picks w so that the tile
 * stays in cache between the passes. */

#define PYET_SOFTMAX_COLS(T, SUF, LOG)                                       \
    PYET_DISPATCH_WIDE void pyet_softmax_cols_##SUF(                        \
        pyet_intp n, pyet_intp w, const T *x, pyet_intp xs, T *o,           \
        pyet_intp os, int take_log)                                         \
    {                                                                       \
        T m[PYET_COLS], s[PYET_COLS];                                       \
        for (pyet_intp k = 0; k < w; k++) { m[k] = x[k]; s[k] = 0; }        \
        for (pyet_intp i = 1; i < n; i++) {                                 \
            const T *xi = x + i * xs;                                       \
            PYET_IVDEP for (pyet_intp k = 0; k < w; k++)                    \
                m[k] = pyet_max_##SUF(m[k], xi[k]);                         \
        }                                                                   \
        for (pyet_intp i = 0; i < n; i++) {                                 \
            const T *xi = x + i * xs;                                       \
            T *oi = o + i * os;                                             \
            PYET_IVDEP for (pyet_intp k = 0; k < w; k++) {                  \
                const T d = xi[k] - m[k];                                   \
                const T e = pyet_exp_##SUF(d);                              \
                oi[k] = e;                                                  \
                s[k] += e;                                                  \
            }                                                               \
        }                                                                   \
        if (take_log) {                                                     \
            for (pyet_intp k = 0; k < w; k++) s[k] = LOG(s[k]);             \
            for (pyet_intp i = 0; i < n; i++) {                             \
                const T *xi = x + i * xs;                                   \
                T *oi = o + i * os;                                         \
                PYET_IVDEP for (pyet_intp k = 0; k < w; k++) {              \
                    const T d = xi[k] - m[k];                               \
                    oi[k] = d - s[k];                                       \
                }                                                           \
            }                                                               \
        } else {                                                            \
            for (pyet_intp i = 0; i < n; i++) {                             \
                T *oi = o + i * os;                                         \
                PYET_IVDEP for (pyet_intp k = 0; k < w; k++) oi[k] = oi[k] / s[k]; \
            }                                                               \
        }                                                                   \
    }

/* The gradient of softmax cross-entropy, per row, in one pass over the row
 * while it sits in L1: out = c * (exp(l) * sum(t) - t), l = log_softmax(x)
 * (so exp(l) is softmax(x)), for any t (rows need not sum to 1) and a
 * factor c per row (cs = 0: one for all rows).  It is the vector-Jacobian
 * product of log_softmax for the cotangent -c*t.  With index targets (t NULL,
 * idx given) t is the one-hot row of idx: sum(t) = 1 and only out[idx] has
 * the "- 1".  sum(t) folds in 32 lanes combined pairwise, as the forward
 * kernel's sum; the rest rounds as the unfused tree does. */
#define PYET_XENT_GRAD_ROWS(T, SUF)                                         \
    PYET_DISPATCH_WIDE void pyet_xent_grad_rows_##SUF(                     \
        pyet_intp nrows, pyet_intp n, const T *l, pyet_intp ls,             \
        const T *t, pyet_intp ts, const pyet_intp *idx, const T *c,          \
        pyet_intp cs, T *o, pyet_intp os)                                   \
    {                                                                       \
        if (t != NULL && n < 32 && ls == n && ts == n && os == n &&         \
            ((uintptr_t)(o + nrows * n) <= (uintptr_t)t ||                   \
             (uintptr_t)(t + nrows * n) <= (uintptr_t)o)) {                  \
            /* short rows back to back: sum(t) of the rows side by side (one \
             * lane a row, each in its own order) and the exps of a block    \
             * of rows in one loop (t is read after: not under o); the same \
             * steps as the loop below */                                   \
            for (pyet_intp r0 = 0; r0 < nrows; r0 += PYET_SHORT_ROWS) {     \
                const pyet_intp nr = nrows - r0 < PYET_SHORT_ROWS ?          \
                    nrows - r0 : PYET_SHORT_ROWS;                           \
                const T *lb = l + r0 * n, *tb = t + r0 * n;                 \
                T *ob = o + r0 * n, st[PYET_SHORT_ROWS];                    \
                for (pyet_intp r = 0; r < nr; r++) st[r] = 0;               \
                for (pyet_intp j = 0; j < n; j++)                           \
                    PYET_IVDEP for (pyet_intp r = 0; r < nr; r++)           \
                        st[r] += tb[r * n + j];                             \
                PYET_IVDEP for (pyet_intp k = 0; k < nr * n; k++)           \
                    ob[k] = pyet_exp_##SUF(lb[k]);                          \
                for (pyet_intp r = 0; r < nr; r++) {                        \
                    const T cr = c[(r0 + r) * cs], s = (T)0 + st[r];        \
                    PYET_IVDEP for (pyet_intp j = 0; j < n; j++)            \
                        ob[r * n + j] = cr * (ob[r * n + j] * s - tb[r * n + j]); \
                }                                                           \
            }                                                               \
            return;                                                         \
        }                                                                   \
        for (pyet_intp r = 0; r < nrows; r++, l += ls, o += os, c += cs) {  \
            const T cr = *c;                                                \
            if (t == NULL) {                                                \
                PYET_IVDEP for (pyet_intp j = 0; j < n; j++)                \
                    o[j] = cr * pyet_exp_##SUF(l[j]);                       \
                const pyet_intp k = idx[r];                                 \
                o[k] = cr * (pyet_exp_##SUF(l[k]) - (T)1);                  \
                continue;                                                   \
            }                                                               \
            T lane[32];                                                     \
            pyet_intp i = 0;                                                \
            for (int q = 0; q < 32; q++) lane[q] = 0;                       \
            for (; i + 32 <= n; i += 32)                                    \
                PYET_IVDEP for (int q = 0; q < 32; q++) lane[q] += t[i + q]; \
            T tail = 0;                                                     \
            for (; i < n; i++) tail += t[i];                                \
            for (int w = 16; w >= 1; w /= 2)                                \
                for (int q = 0; q < w; q++) lane[q] += lane[q + w];         \
            const T st = lane[0] + tail;                                    \
            PYET_IVDEP for (pyet_intp j = 0; j < n; j++)                    \
                o[j] = cr * (pyet_exp_##SUF(l[j]) * st - t[j]);             \
            t += ts;                                                        \
        }                                                                   \
    }

PYET_SOFTMAX_ROWS(float, f32, logf)
PYET_SOFTMAX_ROWS(double, f64, log)
PYET_SOFTMAX_COLS(float, f32, logf)
PYET_SOFTMAX_COLS(double, f64, log)
PYET_XENT_GRAD_ROWS(float, f32)
PYET_XENT_GRAD_ROWS(double, f64)

#undef PYET_LANES
#undef PYET_SHORT_ROWS
#undef PYET_SOFTMAX_BLOCK
#undef PYET_BY_LANES
#undef PYET_BY_ROWS
#endif /* PYET_KERNELS_IMPL */
#endif /* PYET_SOFTMAX_H */
