/* Hand-written loops of bench/bench_core.py's five expressions (its table 2), float64, one
 * pass each, compiled at run time as update_weight.c is (-O3, no -ffast-math; exp, tanh and
 * sqrt are libm's). Each writes o[i] from x[i], y[i], z[i]: the fused loop a tree's single
 * pass is measured against. */
#include <math.h>
#include <stddef.h>

void Expr0(const double *x, const double *y, const double *z, ptrdiff_t n, double *o) {
    (void)z;
    for (ptrdiff_t i = 0; i < n; ++i) o[i] = 2 * x[i] + 3 * y[i];
}

void Expr1(const double *x, const double *y, const double *z, ptrdiff_t n, double *o) {
    for (ptrdiff_t i = 0; i < n; ++i) o[i] = x[i] * y[i] + y[i] * z[i] - z[i];
}

void Expr2(const double *x, const double *y, const double *z, ptrdiff_t n, double *o) {
    (void)y; (void)z;
    for (ptrdiff_t i = 0; i < n; ++i) o[i] = 1 / (1 + exp(-x[i]));
}

void Expr3(const double *x, const double *y, const double *z, ptrdiff_t n, double *o) {
    for (ptrdiff_t i = 0; i < n; ++i) o[i] = tanh(x[i]) * y[i] + sqrt(z[i]);
}

void Expr4(const double *x, const double *y, const double *z, ptrdiff_t n, double *o) {
    (void)z;
    for (ptrdiff_t i = 0; i < n; ++i) o[i] = x[i] > 0.5 ? x[i] : y[i];
}
