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

/* defined once, in kernels.c (see kernels.h) */
void pyet_softmax_rows_f32(pyet_intp nrows, pyet_intp n, const float *x, pyet_intp xs, float *o,
                           pyet_intp os, int take_log);
void pyet_softmax_rows_f64(pyet_intp nrows, pyet_intp n, const double *x, pyet_intp xs,
                           double *o, pyet_intp os, int take_log);

#ifdef PYET_KERNELS_IMPL

#define PYET_LANES 32  /* a lane loop of 32 vectorizes (see PYET_FOLD) */

#define PYET_SOFTMAX_ROWS(T, SUF, LOG)                                       \
    PYET_DISPATCH_WIDE void pyet_softmax_rows_##SUF(                        \
        pyet_intp nrows, pyet_intp n, const T *x, pyet_intp xs, T *o,       \
        pyet_intp os, int take_log)                                         \
    {                                                                       \
        for (pyet_intp r = 0; r < nrows; r++, x += xs, o += os) {           \
            T lane[PYET_LANES];                                             \
            pyet_intp i = 0;                                                \
            T m = x[0];                                                     \
            for (int l = 0; l < PYET_LANES; l++) lane[l] = m;               \
            for (; i + PYET_LANES <= n; i += PYET_LANES)                    \
                PYET_IVDEP for (int l = 0; l < PYET_LANES; l++)             \
                    lane[l] = pyet_max_##SUF(lane[l], x[i + l]);            \
            for (; i < n; i++) m = pyet_max_##SUF(m, x[i]);                 \
            for (int l = 0; l < PYET_LANES; l++) m = pyet_max_##SUF(m, lane[l]); \
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

PYET_SOFTMAX_ROWS(float, f32, logf)
PYET_SOFTMAX_ROWS(double, f64, log)

#undef PYET_LANES
#endif /* PYET_KERNELS_IMPL */
#endif /* PYET_SOFTMAX_H */
