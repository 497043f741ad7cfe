/* OpenMP when the compiler has it; one thread otherwise. */
#ifndef PYET_THREADS_H
#define PYET_THREADS_H
#ifdef _OPENMP
#include <omp.h>
static int pyet_omp_max_threads(void) { return omp_get_max_threads(); }
static int pyet_have_openmp(void) { return 1; }
#else
static int pyet_omp_max_threads(void) { return 1; }
static int pyet_have_openmp(void) { return 0; }
#endif
#endif
