/* The hand-written loop of seed 000 (MShadow's expression-template tutorial), used as the
 * baseline of bench/bench_core.py. bench_core.py compiles it at run time with
 * `cc -O3 -shared -fPIC -ffp-contract=off` (no -ffast-math: the order of the floating-point
 * operations stays as written, as in pyet and NumPy). n is a ptrdiff_t so that 1e7 works.
 * bench_threads.py compiles it with -fopenmp for UpdateWeightThreads, its reference for how
 * far two threads can speed this memory-bound loop up on the machine. */
#include <stddef.h>

void UpdateWeight(const float *grad, float eta, float lambda, ptrdiff_t n, float *weight) {
    for (ptrdiff_t i = 0; i < n; ++i) weight[i] = -eta * (grad[i] + lambda * weight[i]);
}

void UpdateWeightD(const double *grad, double eta, double lambda, ptrdiff_t n, double *weight) {
    for (ptrdiff_t i = 0; i < n; ++i) weight[i] = -eta * (grad[i] + lambda * weight[i]);
}

void UpdateWeightThreads(const float *grad, float eta, float lambda, ptrdiff_t n, float *weight,
                         int nthreads) {
#pragma omp parallel for num_threads(nthreads) schedule(static)
    for (ptrdiff_t i = 0; i < n; ++i) weight[i] = -eta * (grad[i] + lambda * weight[i]);
}
