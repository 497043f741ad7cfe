/* pyet's C kernels (kernels.h: elementwise, casts, reductions; softmax.h),
 * compiled once with their CPU clones into a static library that the
 * extensions calling them (core, nn) link, instead of in each extension. */
#define PYET_KERNELS_IMPL
#include "kernels.h"
#include "softmax.h"
