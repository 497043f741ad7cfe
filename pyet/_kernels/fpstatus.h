/* Floating-point exception flags, read and cleared cheaply per kernel call (x86:
 * MXCSR only, where the SSE/AVX kernels raise them; elsewhere fenv.h).  The engine
 * clears the flags a kernel raises where NumPy's kernel for the op stays quiet
 * (comparisons on NaN, the internals of vectorized exp and tanh). */
#ifndef PYET_FPSTATUS_H
#define PYET_FPSTATUS_H
enum { PYET_FS_INVALID = 1, PYET_FS_DIVIDE = 2, PYET_FS_OVERFLOW = 4, PYET_FS_UNDERFLOW = 8 };
#if defined(PYET_NO_FP_FLAGS)
/* For measuring what reading the flags costs (-Dc_args=-DPYET_NO_FP_FLAGS, see
 * bench/bench_fpflags.py): no flag is ever read, so no error is reported. */
static inline int pyet_fs_get(void) { return 0; }
static inline void pyet_fs_clear(int f) { (void)f; }
static inline void pyet_fs_set(int f) { (void)f; }
static inline void pyet_fs_raise(int f) { (void)f; }
#elif defined(__SSE__) || defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
static inline int pyet_fs_get(void) {
    unsigned m = _mm_getcsr();
    return ((m & _MM_EXCEPT_INVALID) ? PYET_FS_INVALID : 0) |
           ((m & _MM_EXCEPT_DIV_ZERO) ? PYET_FS_DIVIDE : 0) |
           ((m & _MM_EXCEPT_OVERFLOW) ? PYET_FS_OVERFLOW : 0) |
           ((m & _MM_EXCEPT_UNDERFLOW) ? PYET_FS_UNDERFLOW : 0);
}
static inline unsigned pyet_fs_csr_bits(int f) {  /* PYET_FS_* as MXCSR's bits */
    return ((f & PYET_FS_INVALID) ? _MM_EXCEPT_INVALID : 0) |
           ((f & PYET_FS_DIVIDE) ? _MM_EXCEPT_DIV_ZERO : 0) |
           ((f & PYET_FS_OVERFLOW) ? _MM_EXCEPT_OVERFLOW : 0) |
           ((f & PYET_FS_UNDERFLOW) ? _MM_EXCEPT_UNDERFLOW : 0);
}
static inline void pyet_fs_clear(int f) {
    _mm_setcsr(_mm_getcsr() & ~pyet_fs_csr_bits(f));
}
/* exactly the flags f raised (the others cleared) */
static inline void pyet_fs_set(int f) {
    _mm_setcsr((_mm_getcsr() & ~(unsigned)_MM_EXCEPT_MASK) | pyet_fs_csr_bits(f));
}
/* the flags f raised too (the integer kernels' division by zero and MIN // -1) */
static inline void pyet_fs_raise(int f) { _mm_setcsr(_mm_getcsr() | pyet_fs_csr_bits(f)); }
#else
#include <fenv.h>
static inline int pyet_fs_get(void) {
    int e = fetestexcept(FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW);
    return ((e & FE_INVALID) ? PYET_FS_INVALID : 0) | ((e & FE_DIVBYZERO) ? PYET_FS_DIVIDE : 0) |
           ((e & FE_OVERFLOW) ? PYET_FS_OVERFLOW : 0) | ((e & FE_UNDERFLOW) ? PYET_FS_UNDERFLOW : 0);
}
static inline void pyet_fs_clear(int f) {
    feclearexcept(((f & PYET_FS_INVALID) ? FE_INVALID : 0) | ((f & PYET_FS_DIVIDE) ? FE_DIVBYZERO : 0) |
                  ((f & PYET_FS_OVERFLOW) ? FE_OVERFLOW : 0) | ((f & PYET_FS_UNDERFLOW) ? FE_UNDERFLOW : 0));
}
static inline void pyet_fs_set(int f) {
    feclearexcept(FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW);
    feraiseexcept(((f & PYET_FS_INVALID) ? FE_INVALID : 0) | ((f & PYET_FS_DIVIDE) ? FE_DIVBYZERO : 0) |
                  ((f & PYET_FS_OVERFLOW) ? FE_OVERFLOW : 0) | ((f & PYET_FS_UNDERFLOW) ? FE_UNDERFLOW : 0));
}
static inline void pyet_fs_raise(int f) {
    feraiseexcept(((f & PYET_FS_INVALID) ? FE_INVALID : 0) | ((f & PYET_FS_DIVIDE) ? FE_DIVBYZERO : 0) |
                  ((f & PYET_FS_OVERFLOW) ? FE_OVERFLOW : 0) | ((f & PYET_FS_UNDERFLOW) ? FE_UNDERFLOW : 0));
}
#endif
#endif
