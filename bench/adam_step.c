/* A hand-written fused Adam step (one pass reading g, m, v, w and writing m, v, w), the
 * baseline of bench/bench_plan.py, compiled there with `cc -O3 -shared -fPIC
 * -ffp-contract=off`.  The operations are pyet's statements in the same order:
 *   m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g;  w -= lr*(m/bc1) / (sqrt(v/bc2) + eps) */
#include <math.h>
#include <stddef.h>

void AdamStep(float *w, const float *g, float *m, float *v, ptrdiff_t n, float lr, float b1,
              float c1, float b2, float c2, float bc1, float bc2, float eps) {
    for (ptrdiff_t i = 0; i < n; ++i) {
        float mi = b1 * m[i] + c1 * g[i];
        float vi = b2 * v[i] + c2 * g[i] * g[i];
        m[i] = mi;
        v[i] = vi;
        w[i] = w[i] - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
    }
}

/* The same three statements as three loops, each over the whole arrays: the
 * fastest the statements can run one by one.  C loop / this is the least a
 * plan fusing them can reach against pyet's one-by-one run on this machine. */
void AdamThreeLoops(float *w, const float *g, float *m, float *v, ptrdiff_t n, float lr,
                    float b1, float c1, float b2, float c2, float bc1, float bc2, float eps) {
    for (ptrdiff_t i = 0; i < n; ++i)
        m[i] = b1 * m[i] + c1 * g[i];
    for (ptrdiff_t i = 0; i < n; ++i)
        v[i] = b2 * v[i] + c2 * g[i] * g[i];
    for (ptrdiff_t i = 0; i < n; ++i)
        w[i] = w[i] - lr * (m[i] / bc1) / (sqrtf(v[i] / bc2) + eps);
}
