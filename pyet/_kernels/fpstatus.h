/* The invalid-operation flag, read and cleared cheaply (x86: MXCSR only, which
 * is where the SSE/AVX kernels raise it; elsewhere fenv.h).  The engine clears
 * what comparisons raise on NaN operands, where NumPy's kernels stay quiet. */
#ifndef PYET_FPSTATUS_H
#define PYET_FPSTATUS_H
#if defined(__SSE__) || defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
static inline int pyet_fp_invalid(void) { return (_mm_getcsr() & _MM_EXCEPT_INVALID) != 0; }
static inline void pyet_fp_clear_invalid(void) { _mm_setcsr(_mm_getcsr() & ~_MM_EXCEPT_INVALID); }
#else
#include <fenv.h>
static inline int pyet_fp_invalid(void) { return fetestexcept(FE_INVALID) != 0; }
static inline void pyet_fp_clear_invalid(void) { feclearexcept(FE_INVALID); }
#endif
#endif
