/* pyet's C kernels, one of three units of one static library that the
 * extensions calling them (core, nn) link; the units compile side by side
 * (see kernels.h).  This one: pyet_kernel's 256-bit loops, every elementwise
 * op and fused pattern per dtype (baseline and AVX2 clones), and integer
 * division by a scalar. */
#define PYET_KERNELS_IMPL
#define PYET_KERNELS_PART_NARROW
#include "kernels.h"
