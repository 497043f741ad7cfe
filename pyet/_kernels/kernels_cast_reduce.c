/* pyet's C kernels, one of three units of one static library (see kernels.h).
 * This one: casts, strided and tiled copies, reductions (kernels.h) and the
 * row softmax, log-softmax and cross-entropy gradient (softmax.h). */
#define PYET_KERNELS_IMPL
#define PYET_KERNELS_PART_CAST_REDUCE
#include "kernels.h"
#include "softmax.h"
