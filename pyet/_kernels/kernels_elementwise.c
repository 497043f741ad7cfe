/* pyet's C kernels, one of two units of one static library that the
 * extensions calling them (core, nn) link; the units compile side by side
 * (see kernels.h).  This one: pyet_kernel, the dispatch, and its loops but
 * the 512-bit memory-bound ones: every elementwise op and fused pattern per
 * dtype at 256 bits, the compute-bound (wide) loops, integer division, float32
 * sin, cos, log and tanh, pow and float64 log, the AVX-512 math. */
#define PYET_KERNELS_IMPL
#define PYET_KERNELS_PART_ELEMENTWISE
#include "kernels.h"
