/* pyet's C kernels, one of three units of one static library (see kernels.h).
 * This one: pyet_kernel, the dispatch, and the loops it calls but the
 * 256-bit ones: the compute-bound (wide) loops, float32 sin, cos, log and
 * tanh, pow and float64 log, the AVX-512 math and integer division, and the
 * 512-bit memory-bound loops. */
#define PYET_KERNELS_IMPL
#define PYET_KERNELS_PART_MATH
#include "kernels.h"
