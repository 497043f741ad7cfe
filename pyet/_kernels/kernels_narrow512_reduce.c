/* pyet's C kernels, one of two units of one static library (see kernels.h).
 * This one: pyet_kernel's 512-bit memory-bound loops (Intel), casts, strided
 * and tiled copies, reductions (kernels.h) and the row softmax, log-softmax
 * and cross-entropy gradient (softmax.h). */
#define PYET_KERNELS_IMPL
#define PYET_KERNELS_PART_NARROW512_REDUCE
#include "kernels.h"
#include "softmax.h"
#define PYET_GEMM_IMPL
#include "gemm.h"
