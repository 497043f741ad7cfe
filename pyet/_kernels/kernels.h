/* pyet's elementwise kernels: one tight loop per (op, dtype) over a block.
 *
 * Every array operand of a kernel is contiguous (the Cython driver gathers
 * strided or broadcast leaves into an L1 block first), so each loop is a
 * plain `o[i] = f(a[i], b[i])` that gcc vectorizes.  Scalar operands are
 * loaded once before the loop.  Floating-point order is exactly the order
 * written in the expression (the build disables FMA contraction), so results
 * equal NumPy's.
 */
#ifndef PYET_KERNELS_H
#define PYET_KERNELS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef ptrdiff_t pyet_intp;

/* Scalar helpers must inline into their loops, or the loops cannot
 * vectorize: Cython's large translation units exhaust gcc's inlining budget. */
#if defined(__GNUC__)
#define PYET_INLINE static inline __attribute__((always_inline))
#else
#define PYET_INLINE static inline
#endif
typedef unsigned char pyet_bool;
/* a bool's value: any byte but 0 is true (NumPy's loops read x != 0) */
#define PYET_AS_IS(x) (x)
#define PYET_NONZERO(x) ((x) != 0)

/* dtype codes, in NumPy's promotion order */
enum { DT_BOOL = 0, DT_I32 = 1, DT_I64 = 2, DT_F32 = 3, DT_F64 = 4, DT_COUNT = 5 };

/* CASES(T) for dtype code dt's C type */
#define PYET_SWITCH_DT(dt, CASES)                                           \
    switch (dt) {                                                           \
    case DT_BOOL: CASES(pyet_bool); break;                                  \
    case DT_I32: CASES(int32_t); break;                                     \
    case DT_I64: CASES(int64_t); break;                                     \
    case DT_F32: CASES(float); break;                                       \
    case DT_F64: CASES(double); break;                                      \
    }

/* The op table, C side.  The Python side (_ops.py) names the same ops and
 * gives each its NumPy reference; codes are shared through pyet_op_names. */
#define PYET_OPS(X)                                                        \
    /* nodes that are not kernels */                                       \
    X(leaf) X(scalar) X(pyfunc) X(dot) X(reduce) X(special)               \
    /* data movement */                                                    \
    X(copy) X(cast)                                                        \
    /* unary, floating point */                                            \
    X(exp) X(log) X(log1p) X(expm1) X(log2) X(log10) X(sqrt) X(sin)        \
    X(cos) X(tan) X(arcsin) X(arccos) X(arctan) X(sinh) X(cosh) X(tanh)    \
    X(arcsinh) X(arccosh) X(arctanh) X(rint) X(sigmoid)                    \
    X(floor) X(ceil) X(trunc)                                              \
    /* unary, any number */                                                \
    X(negative) X(positive) X(absolute) X(square) X(sign) X(relu)          \
    /* unary predicates (-> bool) */                                       \
    X(isnan) X(isinf) X(isfinite)                                          \
    /* unary bitwise (bool, ints) */                                       \
    X(invert)                                                              \
    /* binary, any number */                                               \
    X(add) X(subtract) X(multiply) X(floor_divide) X(remainder) X(power)   \
    X(maximum) X(minimum) X(fmod)                                          \
    /* binary, floating point */                                           \
    X(divide) X(arctan2) X(hypot) X(copysign)                              \
    /* comparisons (-> bool) */                                            \
    X(less) X(less_equal) X(greater) X(greater_equal) X(equal)             \
    X(not_equal)                                                           \
    /* bitwise (bool, ints) */                                             \
    X(bitwise_and) X(bitwise_or) X(bitwise_xor)                            \
    /* select */                                                           \
    X(where)                                                               \
    /* fused patterns (see _rewrite.py for the rules that produce them) */ \
    X(axpy) X(scale_sum) X(scale_axpy) X(axpby) X(muladd) X(mulsub)        \
    X(submul) X(logistic)                                                  \
    /* later additions (appended: earlier codes keep their values) */     \
    X(cbrt) X(exp2) X(erf) X(deg2rad) X(rad2deg) X(reciprocal)            \
    X(logaddexp) X(logaddexp2)                                             \
    /* fused patterns with a division or a square root (rewrite.py) */     \
    X(scale_mul) X(scale_div) X(div_sqrt) X(sub_div_sqrt)                  \
    /* fused patterns of five operands (rewrite.py) */                     \
    X(ema_mul) X(ema_prod) X(div_sqrt_div) X(sub_div_sqrt_div)             \
    /* optimizer steps over several destinations (rewrite.PASS_RULES) */   \
    X(adam) X(adam_torch)                                                  \
    /* x - s*y, s1*x + s2, x*y + s (rewrite.py) */                         \
    X(sub_scaled) X(scale_shift) X(mul_shift)                              \
    /* x*y + z*w, x*y - z*w (rewrite.py) */                                \
    X(mul_add_mul) X(mul_sub_mul)

#define PYET_ENUM_ITEM(name) OP_##name,
enum { PYET_OPS(PYET_ENUM_ITEM) OP_COUNT };
#undef PYET_ENUM_ITEM

#define PYET_NAME_ITEM(name) #name,
static const char *const pyet_op_names[] = { PYET_OPS(PYET_NAME_ITEM) };
#undef PYET_NAME_ITEM

/* operand kinds of an instruction; SRC_DST reads the block a multi-output
 * pass has just written for one of its destinations */
enum { SRC_REG = 0, SRC_LEAF = 1, SRC_SCALAR = 2, SRC_DST = 3 };

/* operands of an instruction, at most (a fused optimizer step: four arrays,
 * eight scalars and the two destinations it writes besides out) */
#define PYET_MAX_IN 14

/* One step of a lowered program: out := op(src...) over a block. */
typedef struct {
    int op;                     /* OP_* */
    int dt;                     /* dtype of the inputs (the loop's dtype) */
    int dt_out;                 /* dtype of the output */
    int out;                    /* register, or -1 - k for destination k */
    int nin;
    int sflags;                 /* bit k: operand k is a scalar */
    int src_kind[PYET_MAX_IN];  /* SRC_* */
    int src[PYET_MAX_IN];       /* register, leaf or scalar index */
} pyet_instr;

/* The kernels are compiled once, into a static library the extensions link,
 * as two units that compile side by side: kernels_elementwise.c and
 * kernels_narrow512_reduce.c each define PYET_KERNELS_IMPL and their
 * PYET_KERNELS_PART_* (the #ifdefs below), which selects the functions that
 * unit defines; every unit sees the shared inline helpers and macros (a new
 * non-static function goes inside one unit's #ifdef, or it is defined twice).
 * Every other includer sees only the tables and the declarations at the end
 * of this file. */
#ifdef PYET_KERNELS_IMPL

#include "fpstatus.h"

/* ---------------------------------------------------------------- loops */

/* Where the toolchain can, compile each kernel twice, for the x86-64
 * baseline and for AVX2 (x86-64-v3), and pick one at load time, as NumPy's
 * dispatch does.  The compute-bound loops (pyet_kernel_wide) get an AVX-512
 * (x86-64-v4) clone too: twice the lanes.  The other loops are memory-bound
 * and stay at 256 bits but on Intel (pyet_kernel_narrow512): NumPy's large
 * arrays start 16 bytes into a cache line, and 512-bit loads and stores that
 * split lines made them up to 1.6x slower on AMD Zen 5.  FMA stays off (the
 * build passes -ffp-contract=off), so every clone rounds alike. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    defined(__linux__) && !defined(PYET_NO_DISPATCH)
#define PYET_DISPATCH __attribute__((target_clones("arch=x86-64-v3", "default")))
#define PYET_DISPATCH_WIDE \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
/* The memory-bound loops once more at 512 bits, run on Intel only (see
 * pyet_kernel_narrow512); generic tuning would pick 256-bit vectors. */
#define PYET_NARROW512 1
#define PYET_TARGET512 __attribute__((target("arch=x86-64-v4,prefer-vector-width=512")))
/* float32 sin and cos use fmaf: one instruction in the x86-64-v3 and v4
 * clones, a libm call in the baseline one, so they run where v3 does */
#define PYET_HAVE_FMA() __builtin_cpu_supports("x86-64-v3")
#else
#define PYET_DISPATCH
#define PYET_DISPATCH_WIDE
#if defined(__FMA__) || defined(__aarch64__)
#define PYET_HAVE_FMA() 1
#else
#define PYET_HAVE_FMA() 0
#endif
#endif

#ifdef PYET_NARROW512
/* pyet_kernel's 512-bit loops (PYET_KERNELS_PART_NARROW512_REDUCE), as its
 * dispatch (PYET_KERNELS_PART_ELEMENTWISE) calls them */
int pyet_kernel_narrow512(int op, int dt, int sflags, pyet_intp n, void *out, void *const *in);
#endif

#if defined(__GNUC__) && !defined(__clang__)
#define PYET_IVDEP _Pragma("GCC ivdep")
#elif defined(__clang__)
#define PYET_IVDEP _Pragma("clang loop vectorize(enable)")
#else
#define PYET_IVDEP
#endif

/* In the 512-bit loops (PYET_PEEL 1, pyet_kernel_narrow512) the first
 * elements run one at a time up to a 64-byte boundary of the widest array:
 * NumPy's large arrays start 16 bytes into a line, and every 512-bit access
 * to them would split two lines (Intel Xeon, one thread: a+b float32 in L1
 * 2.1x, a<b 1.5x faster peeled).  Arrays of bytes are not peeled (up to 63
 * scalar steps cost more than they save).  The empty asm keeps gcc from
 * vectorizing the short loop. */
#define PYET_PEEL 0
#if defined(__GNUC__)
#define PYET_NOVEC() __asm__ volatile("" ::: "memory")
#else
#define PYET_NOVEC() ((void)0)
#endif
PYET_INLINE pyet_intp pyet_peel(const void *p, size_t size, pyet_intp n)
{
    if (size < 4) return 0;
    const pyet_intp k = (pyet_intp)(((size_t)0 - (size_t)(uintptr_t)p) & 63) / (pyet_intp)size;
    return k < n ? k : n;
}
#define PYET_PEEL_COUNT(TO, O, TI, X)                                       \
    (PYET_PEEL ? (sizeof(TO) >= sizeof(TI) ? pyet_peel((O), sizeof(TO), n)  \
                                          : pyet_peel((X), sizeof(TI), n)) : 0)

/* Output and inputs are either the same block or disjoint, so every loop
 * below is free of loop-carried dependences (hence ivdep). */
#define PYET_LOOP1(TI, TO, EXPR)                                            \
    do {                                                                    \
        const TI *X_ = (const TI *)in[0];                                   \
        TO *O_ = (TO *)out;                                                 \
        if (sflags & 1) {                                                   \
            const TI x = X_[0];                                             \
            const TO v_ = (TO)(EXPR);                                       \
            for (pyet_intp i = 0; i < n; i++) O_[i] = v_;                   \
        } else {                                                            \
            const pyet_intp p_ = PYET_PEEL_COUNT(TO, O_, TI, X_);           \
            for (pyet_intp i = 0; i < p_; i++) {                            \
                const TI x = X_[i];                                         \
                O_[i] = (TO)(EXPR);                                         \
                PYET_NOVEC();                                               \
            }                                                               \
            PYET_IVDEP for (pyet_intp i = p_; i < n; i++) {                 \
                const TI x = X_[i];                                         \
                O_[i] = (TO)(EXPR);                                         \
            }                                                               \
        }                                                                   \
    } while (0)

#define PYET_LOOP2(TI, TO, EXPR)                                            \
    do {                                                                    \
        const TI *A_ = (const TI *)in[0], *B_ = (const TI *)in[1];          \
        TO *O_ = (TO *)out;                                                 \
        switch (sflags & 3) {                                               \
        case 0: {                                                           \
            const pyet_intp p_ = PYET_PEEL_COUNT(TO, O_, TI, A_);           \
            for (pyet_intp i = 0; i < p_; i++) {                            \
                const TI x = A_[i], y = B_[i];                              \
                O_[i] = (TO)(EXPR);                                         \
                PYET_NOVEC();                                               \
            }                                                               \
            PYET_IVDEP for (pyet_intp i = p_; i < n; i++) {                 \
                const TI x = A_[i], y = B_[i];                              \
                O_[i] = (TO)(EXPR);                                         \
            }                                                               \
        } break;                                                            \
        case 1: {                                                           \
            const TI x = A_[0];                                             \
            const pyet_intp p_ = PYET_PEEL_COUNT(TO, O_, TI, B_);           \
            for (pyet_intp i = 0; i < p_; i++) {                            \
                const TI y = B_[i];                                         \
                O_[i] = (TO)(EXPR);                                         \
                PYET_NOVEC();                                               \
            }                                                               \
            PYET_IVDEP for (pyet_intp i = p_; i < n; i++) {                 \
                const TI y = B_[i];                                         \
                O_[i] = (TO)(EXPR);                                         \
            }                                                               \
        } break;                                                            \
        case 2: {                                                           \
            const TI y = B_[0];                                             \
            const pyet_intp p_ = PYET_PEEL_COUNT(TO, O_, TI, A_);           \
            for (pyet_intp i = 0; i < p_; i++) {                            \
                const TI x = A_[i];                                         \
                O_[i] = (TO)(EXPR);                                         \
                PYET_NOVEC();                                               \
            }                                                               \
            PYET_IVDEP for (pyet_intp i = p_; i < n; i++) {                 \
                const TI x = A_[i];                                         \
                O_[i] = (TO)(EXPR);                                         \
            }                                                               \
        } break;                                                            \
        default: {                                                          \
            const TI x = A_[0], y = B_[0];                                  \
            const TO v_ = (TO)(EXPR);                                       \
            for (pyet_intp i = 0; i < n; i++) O_[i] = v_;                   \
        }                                                                   \
        }                                                                   \
    } while (0)

/* ------------------------------------------------- scalar semantics */

/* Integer // and % as NumPy: floor semantics, division by zero gives 0,
 * MIN // -1 wraps to MIN (the build passes -fwrapv). */
#define PYET_INT_FUNCS(T, SUF)                                              \
    PYET_INLINE T pyet_floordiv_##SUF(T a, T b) {                         \
        if (b == 0) return 0;                                               \
        if (b == -1) return (T)(0 - a);                                     \
        T q = a / b;                                                        \
        if ((a % b != 0) && ((a < 0) != (b < 0))) q--;                      \
        return q;                                                           \
    }                                                                       \
    PYET_INLINE T pyet_remainder_##SUF(T a, T b) {                        \
        if (b == 0 || b == -1) return 0;                                    \
        T r = a % b;                                                        \
        if (r != 0 && ((r < 0) != (b < 0))) r += b;                         \
        return r;                                                           \
    }                                                                       \
    PYET_INLINE T pyet_fmod_##SUF(T a, T b) {                             \
        if (b == 0 || b == -1) return 0;                                    \
        return a % b;                                                       \
    }                                                                       \
    PYET_INLINE T pyet_power_##SUF(T a, T b) {                            \
        /* negative exponents are refused before evaluation */              \
        T r = 1;                                                            \
        while (b > 0) {                                                     \
            if (b & 1) r = (T)(r * a);                                      \
            a = (T)(a * a);                                                 \
            b >>= 1;                                                        \
        }                                                                   \
        return r;                                                           \
    }                                                                       \
    PYET_INLINE T pyet_max_##SUF(T a, T b) { return a >= b ? a : b; }     \
    PYET_INLINE T pyet_min_##SUF(T a, T b) { return a <= b ? a : b; }     \
    PYET_INLINE T pyet_abs_##SUF(T a) { return a < 0 ? (T)(0 - a) : a; }  \
    PYET_INLINE T pyet_sign_##SUF(T a) { return (T)(a > 0) - (T)(a < 0); } \
    /* NumPy casts 1.0 / a to T: 0 for |a| > 1; x86-64 converts 1.0 / 0 */ \
    /* (inf) to the integer indefinite, T's minimum */                    \
    PYET_INLINE T pyet_reciprocal_##SUF(T a) {                            \
        if (a == 0) return (T)((uint64_t)1 << (8 * sizeof(T) - 1));         \
        return (a == 1 || a == -1) ? a : 0;                                 \
    }

PYET_INT_FUNCS(int32_t, i32)
PYET_INT_FUNCS(int64_t, i64)

/* Integer //, % and fmod by a scalar divisor d: a hardware division per
 * element (with its branches) is 4-20x NumPy, which divides by a constant
 * as libdivide does.  So do we: |a| / |d| is a multiply-high and shifts
 * (Granlund and Montgomery's round-up method, valid for every divisor
 * 1 <= D < 2^N: m = floor(2^N (2^l - D) / D) + 1, l = ceil(log2 D)), and the
 * signs are fixed branch-free, so the int32 loop vectorizes.  d == 0 gives
 * 0 (NumPy's result); MIN // -1 wraps to MIN, as NumPy's. */
typedef struct { uint64_t m; int sh1, sh2; } pyet_udiv;

PYET_INLINE pyet_udiv pyet_udiv_gen(uint64_t D, int N)
{
    pyet_udiv r;
    int l = 0;
    while (l < 64 && ((uint64_t)1 << l) < D) l++;
    if (N == 32) {
        r.m = (((uint64_t)1 << l) - D) * ((uint64_t)1 << 32) / D + 1;
    } else {
        unsigned __int128 t = (unsigned __int128)(((uint64_t)1 << l) - D) << 64;
        r.m = (uint64_t)(t / D) + 1;
    }
    r.sh1 = l < 1 ? l : 1;
    r.sh2 = l < 1 ? 0 : l - 1;
    return r;
}

/* The floor quotient of a by d != 0 from |a| / |d| (UT: the unsigned type;
 * MULHI: the high half of m * |a|).  q: floor quotient, qt: truncated.
 * Signs are fixed by masks, not selects: gcc branches on selects of
 * 64-bit values, and random signs mispredict. */
#define PYET_SDIV(T, UT, MULHI, a, d, dv, q, qt)                            \
    do {                                                                    \
        const UT sa_ = (UT)0 - ((UT)(a) >> (8 * sizeof(T) - 1));            \
        const UT ua_ = ((UT)(a) ^ sa_) - sa_;                               \
        const UT t_ = (UT)(MULHI);                                          \
        const UT uq_ = (UT)((UT)(t_ + (UT)((UT)(ua_ - t_) >> (dv).sh1)) >> (dv).sh2); \
        const UT ur_ = (UT)(ua_ - (UT)(uq_ * ad_));                         \
        const UT neg_ = (UT)0 - (((UT)(a) ^ (UT)(d)) >> (8 * sizeof(T) - 1)); \
        const UT qt_ = (UT)((uq_ ^ neg_) - neg_);                           \
        qt = (T)qt_;                                                        \
        q = (T)(qt_ - (neg_ & (UT)(ur_ != 0)));                             \
    } while (0)

#define PYET_MULHI32(m, u) (((uint64_t)(m) * (uint64_t)(u)) >> 32)
/* The high half of a 64x64-bit product from four 32x32-bit ones, which
 * vectorize (vpmuludq); an __int128 product does not. */
PYET_INLINE uint64_t pyet_mulhi64(uint64_t m, uint64_t u)
{
    const uint64_t m0 = m & 0xffffffffu, m1 = m >> 32, u0 = u & 0xffffffffu, u1 = u >> 32;
    const uint64_t p00 = m0 * u0, p01 = m0 * u1, p10 = m1 * u0, p11 = m1 * u1;
    const uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}
#define PYET_MULHI64(m, u) pyet_mulhi64((m), (u))

/* op: OP_floor_divide, OP_remainder or OP_fmod; a is a block. */
#define PYET_DIV_BY_SCALAR(T, UT, N, MULHI)                                 \
    do {                                                                    \
        const T *A_ = (const T *)in[0];                                     \
        const T d = *(const T *)in[1];                                      \
        T *O_ = (T *)out;                                                   \
        if (d == 0) { /* NumPy's 0 */                                       \
            for (pyet_intp i = 0; i < n; i++) O_[i] = 0;                    \
            break;                                                          \
        }                                                                   \
        if (d == 1 || d == -1) { /* NumPy's x and -x (MIN wraps); % 0 */   \
            const UT s_ = (UT)0 - (UT)(d < 0 && op == OP_floor_divide);     \
            const UT k_ = (UT)0 - (UT)(op == OP_floor_divide);              \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++)                    \
                O_[i] = (T)(((((UT)A_[i]) ^ s_) - s_) & k_);                \
            break;                                                          \
        }                                                                   \
        const UT ad_ = d < 0 ? (UT)0 - (UT)d : (UT)d;                       \
        if (d > 0 && (ad_ & (ad_ - 1)) == 0 && op != OP_fmod) {             \
            /* floor by a power of two: an arithmetic shift and a mask */   \
            int k = 0;                                                      \
            while (((UT)1 << k) != ad_) k++;                                \
            if (op == OP_floor_divide) {                                    \
                PYET_IVDEP for (pyet_intp i = 0; i < n; i++) O_[i] = (T)(A_[i] >> k); \
            } else {                                                        \
                PYET_IVDEP for (pyet_intp i = 0; i < n; i++)                \
                    O_[i] = (T)((UT)A_[i] & (ad_ - 1));                     \
            }                                                               \
            break;                                                          \
        }                                                                   \
        const pyet_udiv dv = pyet_udiv_gen(ad_, N);                         \
        const UT m_ = (UT)dv.m;                                             \
        if (op == OP_floor_divide) {                                        \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                const T a = A_[i]; T q, qt;                            \
                PYET_SDIV(T, UT, MULHI(m_, ua_), a, d, dv, q, qt);          \
                (void)qt; O_[i] = q;                                        \
            }                                                               \
        } else if (op == OP_remainder) { /* a - floor(a/d) d: sign of d */  \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                const T a = A_[i]; T q, qt;                            \
                PYET_SDIV(T, UT, MULHI(m_, ua_), a, d, dv, q, qt);          \
                (void)qt; O_[i] = (T)((UT)a - (UT)q * (UT)d);               \
            }                                                               \
        } else { /* fmod: a - trunc(a/d) d, sign of a */                    \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                const T a = A_[i]; T q, qt;                            \
                PYET_SDIV(T, UT, MULHI(m_, ua_), a, d, dv, q, qt);          \
                (void)q; O_[i] = (T)((UT)a - (UT)qt * (UT)d);               \
            }                                                               \
        }                                                                   \
    } while (0)

/* x ** b for a scalar exponent b >= 0: 1, x and x*x directly; above, the
 * same square-and-multiply as pyet_power_*, turned inside out (the bits of
 * b outside, the elements inside) so each step is a vectorizable loop.
 * Integer products wrap, so any order gives NumPy's result. */
#define PYET_IPOW_BY_SCALAR(T)                                              \
    do {                                                                    \
        const T *X_ = (const T *)in[0];                                     \
        const T b = *(const T *)in[1];                                      \
        T *O_ = (T *)out;                                                   \
        if (b == 0) { PYET_LOOP1(T, T, (T)1); break; }                      \
        if (b == 1) { PYET_LOOP1(T, T, x); break; }                         \
        if (b == 2) { PYET_LOOP1(T, T, x * x); break; }                     \
        /* int64: AVX2 has no 64-bit multiply, the per-element loop is faster */ \
        if ((sflags & 1) || sizeof(T) == 8) {                               \
            PYET_LOOP1(T, T, pyet_power_##T(x, b)); break;                  \
        }                                                                   \
        for (pyet_intp i0 = 0; i0 < n; i0 += 256) {                         \
            const pyet_intp m = n - i0 < 256 ? n - i0 : 256;                \
            T base[256], r[256];                                            \
            for (pyet_intp i = 0; i < m; i++) { base[i] = X_[i0 + i]; r[i] = 1; } \
            for (T e = b; e > 0; e >>= 1) {                                 \
                if (e & 1)                                                  \
                    for (pyet_intp i = 0; i < m; i++) r[i] = (T)(r[i] * base[i]); \
                if (e > 1)                                                  \
                    for (pyet_intp i = 0; i < m; i++) base[i] = (T)(base[i] * base[i]); \
            }                                                               \
            memcpy(O_ + i0, r, (size_t)m * sizeof(T));                      \
        }                                                                   \
    } while (0)
#define pyet_power_int32_t pyet_power_i32
#define pyet_power_int64_t pyet_power_i64

/* Float // and % exactly as NumPy's npy_divmod / npy_floor_divide. */
#define PYET_FLOAT_FUNCS(T, SUF, M)                                         \
    PYET_INLINE T pyet_divmod_##SUF(T a, T b, T *modulus) {               \
        /* NaN in, NaN out, no flag (NumPy's): -fno-trapping-math lets gcc  \
         * compile isless/isgreater below as signaling compares */          \
        if (__builtin_isnan(a) || __builtin_isnan(b)) {                     \
            *modulus = a + b;                                               \
            return a + b;                                                   \
        }                                                                   \
        T mod = M(fmod)(a, b);                                              \
        if (!b) { *modulus = mod; return a / b; }                           \
        T div = (a - mod) / b;                                              \
        if (mod) {                                                          \
            if (__builtin_isless(b, 0) != __builtin_isless(mod, 0)) {      \
                mod += b; div -= (T)1;                                      \
            }                                                               \
        } else {                                                            \
            mod = M(copysign)((T)0, b);                                     \
        }                                                                   \
        T floordiv;                                                         \
        if (div) {                                                          \
            floordiv = M(floor)(div);                                       \
            if (__builtin_isgreater(div - floordiv, (T)0.5)) floordiv += (T)1; \
        } else {                                                            \
            floordiv = M(copysign)((T)0, a / b);                            \
        }                                                                   \
        *modulus = mod;                                                     \
        return floordiv;                                                    \
    }                                                                       \
    PYET_INLINE T pyet_floordiv_##SUF(T a, T b) {                         \
        T mod;                                                              \
        if (!b) return a / b;                                               \
        return pyet_divmod_##SUF(a, b, &mod);                               \
    }                                                                       \
    PYET_INLINE T pyet_remainder_##SUF(T a, T b) {                        \
        T mod;                                                              \
        if (!b) return M(fmod)(a, b);                                       \
        pyet_divmod_##SUF(a, b, &mod);                                      \
        return mod;                                                         \
    }                                                                       \
    /* op: OP_floor_divide, OP_remainder or OP_fmod */                    \
    PYET_INLINE T pyet_fdivmod_one_##SUF(int op, T a, T b) {              \
        return op == OP_fmod ? M(fmod)(a, b) : op == OP_remainder          \
            ? pyet_remainder_##SUF(a, b) : pyet_floordiv_##SUF(a, b);       \
    }                                                                       \
    /* NaN propagates (a's when both are); on ties (-0.0 against 0.0) b, \
     * as NumPy's.  Three plain selects, not one on an or of two compares: \
     * gcc 12 vectorizes a chain of these (the four-row folds), not of   \
     * those. */                                                          \
    PYET_INLINE T pyet_max_##SUF(T a, T b) {                              \
        const T m = a <= b ? b : a, n = b != b ? b : m;                     \
        return a != a ? a : n;                                              \
    }                                                                       \
    PYET_INLINE T pyet_min_##SUF(T a, T b) {                              \
        const T m = a >= b ? b : a, n = b != b ? b : m;                     \
        return a != a ? a : n;                                              \
    }                                                                       \
    PYET_INLINE T pyet_sign_##SUF(T a) {                                  \
        return a > 0 ? (T)1 : (a < 0 ? (T)-1 : (a == 0 ? (T)0 : a));        \
    }                                                                       \
    /* as NumPy's npy_logaddexp: x == y first, so inf with inf gives inf */ \
    PYET_INLINE T pyet_logaddexp_##SUF(T x, T y) {                        \
        if (x == y) return x + (T)0.693147180559945309417232121458176568;   \
        const T d = x - y;                                                  \
        if (d > 0) return x + M(log1p)(M(exp)(-d));                         \
        if (d <= 0) return y + M(log1p)(M(exp)(d));                         \
        return d; /* NaN */                                                 \
    }                                                                       \
    PYET_INLINE T pyet_logaddexp2_##SUF(T x, T y) {                       \
        const T log2e = (T)1.442695040888963407359924681001892137;          \
        if (x == y) return x + 1;                                           \
        const T d = x - y;                                                  \
        if (d > 0) return x + log2e * M(log1p)(M(exp2)(-d));                \
        if (d <= 0) return y + log2e * M(log1p)(M(exp2)(d));                \
        return d;                                                           \
    }

/* exp(x) without branches, so loops over it vectorize: Cody-Waite reduction
 * by ln 2, the degree-13 Taylor polynomial on |r| <= ln2/2, and 2^n applied
 * in two exact steps, 2^floor(n/2) then 2^(n - floor(n/2)), so results that
 * overflow, underflow or are subnormal round once, as NumPy's.  x is clamped
 * to [-746, 710] (NaN passes), which takes inf, -inf and the edges there.
 * Within 1 ulp of NumPy's exp. */
PYET_INLINE double pyet_bits2d(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
PYET_INLINE uint64_t pyet_d2bits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }

/* n = round(x / ln2) and the reduced argument r = x - n ln2, |r| <= ln2/2;
 * *t gets x/ln2 + 1.5 * 2^52, whose low bits hold n as an integer. */
PYET_INLINE double pyet_exp_reduce(double x, double *n, double *t)
{
    *t = x * 1.4426950408889634 + 0x1.8p52;
    *n = *t - 0x1.8p52;
    return (x - *n * 6.93147180369123816490e-01) - *n * 1.90821492927058770002e-10;
}

/* exp(r) = 1 + (r + r^2 q(r)), q of degree 11 evaluated by Estrin's scheme:
 * a short dependency chain (Horner's is latency-bound), and q's rounding
 * is damped by r^2 <= 0.12. */
PYET_INLINE double pyet_exp_poly(double r)
{
    const double r2 = r * r, r4 = r2 * r2;
    const double c01 = 1.0 / 2 + r * (1.0 / 6), c23 = 1.0 / 24 + r * (1.0 / 120);
    const double c45 = 1.0 / 720 + r * (1.0 / 5040), c67 = 1.0 / 40320 + r * (1.0 / 362880);
    const double c89 = 1.0 / 3628800 + r * (1.0 / 39916800);
    const double cab = 1.0 / 479001600 + r * (1.0 / 6227020800.0);
    const double c03 = c01 + r2 * c23, c47 = c45 + r2 * c67, c8b = c89 + r2 * cab;
    const double q = c03 + r4 * (c47 + r4 * c8b);
    return 1.0 + (r + r2 * q);
}

PYET_INLINE double pyet_exp(double x)
{
    const double xc = x < -746.0 ? -746.0 : (x > 710.0 ? 710.0 : x);
    double n, t;
    const double p = pyet_exp_poly(pyet_exp_reduce(xc, &n, &t));
    /* exponent fields from n's bits: u = n + 2048 > 0, h = floor(n/2) + 1024 */
    const uint64_t u = pyet_d2bits(t) - 0x4338000000000000ull + 2048, h = u >> 1;
    return p * pyet_bits2d((h - 1) << 52) * pyet_bits2d((u - h - 1) << 52);
}

/* tanh as Cephes computes it (within 2 ulp): a rational function p/q for
 * |x| < 0.625, 1 - 2/(exp(2|x|) + 1) above.  Both are computed and one
 * division serves the one selected.  exp(2|x|) is taken on [0, 44], where
 * 2^n needs no edge handling (and equals pyet_exp's). */
PYET_INLINE double pyet_tanh(double x)
{
    const double a = fabs(x);
    const int big = a >= 0.625;
    double n, t;
    const double r = pyet_exp_reduce(2.0 * (a < 22.0 ? a : 22.0), &n, &t); /* tanh(22) = 1 */
    const double s = pyet_exp_poly(r) * pyet_bits2d((pyet_d2bits(t) + 1023) << 52); /* 2^n */
    const double z = x * x;
    const double p = (-9.64399179425052238628E-1 * z - 9.92877231001918586564E1) * z
                     - 1.61468768441708447952E3;
    const double q = ((z + 1.12811678491632931402E2) * z + 2.23548839060100448583E3) * z
                     + 4.84406305325125486048E3;
    const double d = (big ? 2.0 : p) / (big ? s + 1.0 : q);
    return copysign(big ? 1.0 - d : x + x * (z * d), x); /* tanh(-0) = -0 */
}

/* float32 exp and tanh in float arithmetic (16 lanes at AVX-512, where
 * double would give 8).  exp: Cody-Waite by ln 2 (0.693359375 has 9 bits,
 * so n * it is exact), the degree-7 Taylor polynomial, 2^n in two exact
 * steps as above; within 1.05 ulp of the exact result.  tanh: Cephes's
 * tanhf, within 1.33 ulp.  NumPy's own float32 exp and tanh are up to 2.4
 * and 1.4 ulp off, so results differ from NumPy's by at most 2 ulp, and
 * in rare cases (about one in a million) 3 ulp for exp. */
PYET_INLINE float pyet_bits2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
PYET_INLINE uint32_t pyet_f2bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* as pyet_exp_reduce: *t = x/ln2 + 1.5 * 2^23, whose low bits hold n */
PYET_INLINE float pyet_expf_reduce(float x, float *t)
{
    *t = x * 1.44269504f + 0x1.8p23f;
    const float n = *t - 0x1.8p23f;
    return (x - n * 0.693359375f) - n * -2.12194440e-4f;
}

PYET_INLINE float pyet_expf_poly(float r)
{
    const float r2 = r * r, r4 = r2 * r2;
    const float c01 = 1.0f / 2 + r * (1.0f / 6), c23 = 1.0f / 24 + r * (1.0f / 120);
    const float c45 = 1.0f / 720 + r * (1.0f / 5040);
    return 1.0f + (r + r2 * ((c01 + r2 * c23) + r4 * c45));
}

PYET_INLINE float pyet_expf(float x)
{
    const float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
    float t;
    const float p = pyet_expf_poly(pyet_expf_reduce(xc, &t));
    /* u = n + 256 > 0, h = floor(n/2) + 128 */
    const uint32_t u = pyet_f2bits(t) - 0x4b400000u + 256, h = u >> 1;
    return p * pyet_bits2f((h - 1) << 23) * pyet_bits2f((u - h - 1) << 23);
}

PYET_INLINE float pyet_tanhf(float x)
{
    const float a = fabsf(x), z = x * x;
    float t;
    const float r = pyet_expf_reduce(2.0f * (a < 10.0f ? a : 10.0f), &t); /* tanhf(10) = 1 */
    const float s = pyet_expf_poly(r) * pyet_bits2f((pyet_f2bits(t) - 0x4b400000u + 127) << 23);
    const float small = ((((-5.70498872745E-3f * z + 2.06390887954E-2f) * z - 5.37397155531E-2f) * z
                          + 1.33314422036E-1f) * z - 3.33332819422E-1f) * z * x + x;
    return copysignf(a >= 0.625f ? 1.0f - 2.0f / (s + 1.0f) : small, x); /* tanh(-0) = -0 */
}

/* per-dtype names for the kernel macros */
#define pyet_exp_f64 pyet_exp
#define pyet_exp_f32 pyet_expf
#define pyet_tanh_f64 pyet_tanh
#define pyet_tanh_f32 pyet_tanhf

#define PYET_M32(name) name##f
#define PYET_M64(name) name
PYET_FLOAT_FUNCS(float, f32, PYET_M32)
PYET_FLOAT_FUNCS(double, f64, PYET_M64)

/* ------------------------------------------------------ op families */

/* comparisons of VALUE(x) and VALUE(y) (a bool's: x != 0) */
#define PYET_CMP_CASES_OF(T, VALUE)                                         \
    case OP_less: PYET_LOOP2(T, pyet_bool, VALUE(x) < VALUE(y)); return 1;  \
    case OP_less_equal: PYET_LOOP2(T, pyet_bool, VALUE(x) <= VALUE(y)); return 1; \
    case OP_greater: PYET_LOOP2(T, pyet_bool, VALUE(x) > VALUE(y)); return 1; \
    case OP_greater_equal: PYET_LOOP2(T, pyet_bool, VALUE(x) >= VALUE(y)); return 1; \
    case OP_equal: PYET_LOOP2(T, pyet_bool, VALUE(x) == VALUE(y)); return 1; \
    case OP_not_equal: PYET_LOOP2(T, pyet_bool, VALUE(x) != VALUE(y)); return 1;
#define PYET_CMP_CASES(T) PYET_CMP_CASES_OF(T, PYET_AS_IS)

#define PYET_COPY_CASES(T)                                                  \
    case OP_copy: case OP_positive: PYET_LOOP1(T, T, x); return 1;

/* the ops that vectorize (pyet_kernel_narrow512 has these) */
#define PYET_SIMPLE_CASES(T, SUF)                                           \
    case OP_add: PYET_LOOP2(T, T, x + y); return 1;                         \
    case OP_subtract: PYET_LOOP2(T, T, x - y); return 1;                    \
    case OP_multiply: PYET_LOOP2(T, T, x * y); return 1;                    \
    case OP_maximum: PYET_LOOP2(T, T, pyet_max_##SUF(x, y)); return 1;      \
    case OP_minimum: PYET_LOOP2(T, T, pyet_min_##SUF(x, y)); return 1;      \
    case OP_negative: PYET_LOOP1(T, T, -x); return 1;                       \
    case OP_square: PYET_LOOP1(T, T, x * x); return 1;                      \
    case OP_sign: PYET_LOOP1(T, T, pyet_sign_##SUF(x)); return 1;           \
    case OP_relu: PYET_LOOP1(T, T, pyet_max_##SUF(x, (T)0)); return 1;      \
    case OP_isnan: PYET_LOOP1(T, pyet_bool, x != x); return 1;              \
    PYET_CMP_CASES(T)                                                       \
    PYET_COPY_CASES(T)

#define PYET_NUM_CASES(T, SUF)                                              \
    PYET_SIMPLE_CASES(T, SUF)                                               \
    case OP_floor_divide: PYET_LOOP2(T, T, pyet_floordiv_##SUF(x, y));      \
        return 1;                                                           \
    case OP_remainder: PYET_LOOP2(T, T, pyet_remainder_##SUF(x, y));        \
        return 1;

#define PYET_INT_CASES(T, SUF)                                              \
    PYET_NUM_CASES(T, SUF)                                                  \
    case OP_fmod: PYET_LOOP2(T, T, pyet_fmod_##SUF(x, y)); return 1;        \
    case OP_power:                                                          \
        if ((sflags & 2) && n > 0) { PYET_IPOW_BY_SCALAR(T); return 1; }               \
        PYET_LOOP2(T, T, pyet_power_##SUF(x, y)); return 1;                 \
    PYET_INT_SIMPLE_CASES(T, SUF)

#define PYET_INT_SIMPLE_CASES(T, SUF)                                       \
    case OP_absolute: PYET_LOOP1(T, T, pyet_abs_##SUF(x)); return 1;        \
    case OP_isinf: PYET_LOOP1(T, pyet_bool, 0); return 1;                   \
    case OP_isfinite: PYET_LOOP1(T, pyet_bool, 1); return 1;                \
    case OP_floor: case OP_ceil: case OP_trunc: PYET_LOOP1(T, T, x);        \
        return 1;                                                           \
    case OP_invert: PYET_LOOP1(T, T, ~x); return 1;                         \
    case OP_reciprocal: PYET_LOOP1(T, T, pyet_reciprocal_##SUF(x)); return 1; \
    case OP_bitwise_and: PYET_LOOP2(T, T, x & y); return 1;                 \
    case OP_bitwise_or: PYET_LOOP2(T, T, x | y); return 1;                  \
    case OP_bitwise_xor: PYET_LOOP2(T, T, x ^ y); return 1;

#define PYET_FLOAT_CASES(T, SUF, M)                                         \
    PYET_NUM_CASES(T, SUF)                                                  \
    case OP_fmod: PYET_LOOP2(T, T, M(fmod)(x, y)); return 1;                \
    case OP_power:                                                          \
        /* NumPy's loop, for a scalar exponent, computes these directly */ \
        /* (sqrt and pow differ at -0.0 and -inf; pow's NaNs lose their */ \
        /* payloads); the rest are libm's pow, as NumPy's */                \
        if ((sflags & 2) && n > 0) {                                        \
            const T y_ = *(const T *)in[1];                                 \
            if (y_ == (T)2) { PYET_LOOP1(T, T, x * x); return 1; }          \
            if (y_ == (T)1) { PYET_LOOP1(T, T, x); return 1; }              \
            if (y_ == (T)-1) { PYET_LOOP1(T, T, (T)1 / x); return 1; }      \
            if (y_ == (T)0.5) { PYET_LOOP1(T, T, M(sqrt)(x)); return 1; }   \
            if (y_ == (T)0) { PYET_LOOP1(T, T, (T)1); return 1; }           \
        }                                                                   \
        PYET_LOOP2(T, T, M(pow)(x, y)); return 1;                           \
    case OP_arctan2: PYET_LOOP2(T, T, M(atan2)(x, y)); return 1;            \
    case OP_hypot: PYET_LOOP2(T, T, M(hypot)(x, y)); return 1;              \
    PYET_FLOAT_SIMPLE_CASES(T, SUF, M)                                      \
    case OP_log: PYET_LOOP1(T, T, M(log)(x)); return 1;                     \
    case OP_log1p: PYET_LOOP1(T, T, M(log1p)(x)); return 1;                 \
    case OP_expm1: PYET_LOOP1(T, T, M(expm1)(x)); return 1;                 \
    case OP_log2: PYET_LOOP1(T, T, M(log2)(x)); return 1;                   \
    case OP_log10: PYET_LOOP1(T, T, M(log10)(x)); return 1;                 \
    case OP_sin: PYET_LOOP1(T, T, M(sin)(x)); return 1;                     \
    case OP_cos: PYET_LOOP1(T, T, M(cos)(x)); return 1;                     \
    case OP_tan: PYET_LOOP1(T, T, M(tan)(x)); return 1;                     \
    case OP_arcsin: PYET_LOOP1(T, T, M(asin)(x)); return 1;                 \
    case OP_arccos: PYET_LOOP1(T, T, M(acos)(x)); return 1;                 \
    case OP_arctan: PYET_LOOP1(T, T, M(atan)(x)); return 1;                 \
    case OP_sinh: PYET_LOOP1(T, T, M(sinh)(x)); return 1;                   \
    case OP_cosh: PYET_LOOP1(T, T, M(cosh)(x)); return 1;                   \
    case OP_arcsinh: PYET_LOOP1(T, T, M(asinh)(x)); return 1;               \
    case OP_arccosh: PYET_LOOP1(T, T, M(acosh)(x)); return 1;               \
    case OP_arctanh: PYET_LOOP1(T, T, M(atanh)(x)); return 1;               \
    case OP_cbrt: PYET_LOOP1(T, T, M(cbrt)(x)); return 1;                   \
    case OP_exp2: PYET_LOOP1(T, T, M(exp2)(x)); return 1;                   \
    case OP_erf: PYET_LOOP1(T, T, M(erf)(x)); return 1;                     \
    case OP_logaddexp: PYET_LOOP2(T, T, pyet_logaddexp_##SUF(x, y)); return 1; \
    case OP_logaddexp2: PYET_LOOP2(T, T, pyet_logaddexp2_##SUF(x, y));      \
        return 1;

#define PYET_FLOAT_SIMPLE_CASES(T, SUF, M)                                  \
    case OP_divide: PYET_LOOP2(T, T, x / y); return 1;                      \
    case OP_copysign: PYET_LOOP2(T, T, M(copysign)(x, y)); return 1;        \
    case OP_absolute: PYET_LOOP1(T, T, M(fabs)(x)); return 1;               \
    case OP_isinf: PYET_LOOP1(T, pyet_bool, isinf(x) != 0); return 1;       \
    case OP_isfinite: PYET_LOOP1(T, pyet_bool, isfinite(x) != 0); return 1; \
    case OP_rint: PYET_LOOP1(T, T, M(rint)(x)); return 1;                   \
    case OP_floor: PYET_LOOP1(T, T, M(floor)(x)); return 1;                 \
    case OP_ceil: PYET_LOOP1(T, T, M(ceil)(x)); return 1;                   \
    case OP_trunc: PYET_LOOP1(T, T, M(trunc)(x)); return 1;                 \
    /* NumPy's constants, rounded in T: pi/180 and 180/pi */               \
    case OP_deg2rad: PYET_LOOP1(T, T, x * ((T)3.14159265358979323846 / (T)180)); \
        return 1;                                                           \
    case OP_rad2deg: PYET_LOOP1(T, T, x * ((T)180 / (T)3.14159265358979323846)); \
        return 1;                                                           \
    case OP_reciprocal: PYET_LOOP1(T, T, (T)1 / x); return 1;

/* an Adam kernel's arrays (m, g, v, w) and its first seven scalars */
#define PYET_ADAM_OPERANDS(T)                                               \
    const T *M_ = (const T *)in[0], *G_ = (const T *)in[1];                 \
    const T *V_ = (const T *)in[2], *W_ = (const T *)in[3];                 \
    const T s1 = *(const T *)in[4], s2 = *(const T *)in[5];                 \
    const T s3 = *(const T *)in[6], s4 = *(const T *)in[7];                 \
    const T s5 = *(const T *)in[8], s6 = *(const T *)in[9];                 \
    const T s7 = *(const T *)in[10]

/* The compute-bound float loops (see PYET_DISPATCH_WIDE). */
#define PYET_WIDE_CASES(T, SUF, M)                                          \
    case OP_exp: PYET_LOOP1(T, T, pyet_exp_##SUF(x)); return 1;             \
    /* NaN-propagating: three compares and selects, one mask op each in */  \
    /* AVX-512 where AVX2 blends take two */                                \
    case OP_maximum: PYET_LOOP2(T, T, pyet_max_##SUF(x, y)); return 1;      \
    case OP_minimum: PYET_LOOP2(T, T, pyet_min_##SUF(x, y)); return 1;      \
    case OP_tanh: PYET_LOOP1(T, T, pyet_tanh_##SUF(x)); return 1;           \
    case OP_sqrt: PYET_LOOP1(T, T, M(sqrt)(x)); return 1;                   \
    case OP_sigmoid:                                                        \
        PYET_LOOP1(T, T, (T)1 / ((T)1 + pyet_exp_##SUF(-x))); return 1;     \
    case OP_logistic: { /* s1/(s2 + exp(-x)), rounded as the unfused tree */ \
        const T s1 = *(const T *)in[0], s2 = *(const T *)in[1];             \
        const T *X_ = (const T *)in[2]; T *O_ = (T *)out;                   \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T e = pyet_exp_##SUF(-X_[i]); O_[i] = s1 / (s2 + e); }   \
        return 1; }                                                         \
    /* fused patterns holding a division or a square root: compute-bound, */ \
    /* so the other operations run while the divider works */              \
    case OP_scale_div: { /* s1*(x/s2) */                                    \
        const T s1 = *(const T *)in[0], s2 = *(const T *)in[2];             \
        const T *X_ = (const T *)in[1]; T *O_ = (T *)out;                   \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T q = X_[i] / s2; O_[i] = s1 * q; }                       \
        return 1; }                                                         \
    case OP_div_sqrt: { /* x/(sqrt(y) + s) */                               \
        const T *X_ = (const T *)in[0], *Y_ = (const T *)in[1];             \
        const T s = *(const T *)in[2]; T *O_ = (T *)out;                    \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T d = M(sqrt)(Y_[i]) + s; O_[i] = X_[i] / d; }            \
        return 1; }                                                         \
    case OP_sub_div_sqrt: { /* z - x/(sqrt(y) + s) */                       \
        const T *Z_ = (const T *)in[0], *X_ = (const T *)in[1];             \
        const T *Y_ = (const T *)in[2], s = *(const T *)in[3];              \
        T *O_ = (T *)out;                                                   \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T d = M(sqrt)(Y_[i]) + s; const T q = X_[i] / d;          \
            O_[i] = Z_[i] - q; }                                            \
        return 1; }                                                                            \
    case OP_div_sqrt_div: { /* x/(sqrt(y/s1) + s2) */                       \
        const T *X_ = (const T *)in[0], *Y_ = (const T *)in[1];             \
        const T s1 = *(const T *)in[2], s2 = *(const T *)in[3];             \
        T *O_ = (T *)out;                                                   \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T d = M(sqrt)(Y_[i] / s1) + s2; O_[i] = X_[i] / d; }      \
        return 1; }                                                         \
    case OP_sub_div_sqrt_div: { /* z - x/(sqrt(y/s1) + s2) */               \
        const T *Z_ = (const T *)in[0], *X_ = (const T *)in[1];             \
        const T *Y_ = (const T *)in[2];                                     \
        const T s1 = *(const T *)in[3], s2 = *(const T *)in[4];             \
        T *O_ = (T *)out;                                                   \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T d = M(sqrt)(Y_[i] / s1) + s2; const T q = X_[i] / d;    \
            O_[i] = Z_[i] - q; }                                            \
        return 1; }                                                         \
    /* Adam's three statements in one loop, each value in registers (the  */ \
    /* kernels one after another over a block stall on memory: 1.4x the   */ \
    /* C loop at 1e7): m = s1*m + s2*g; v = s3*v + (s4*g)*g;               */ \
    /* w = w - s5*(m/s6) / (sqrt(v/s7) + s8); in[12], in[13] take m and v  */ \
    case OP_adam: {                                                         \
        PYET_ADAM_OPERANDS(T);                                              \
        const T s8 = *(const T *)in[11];                                    \
        T *MO_ = (T *)in[12], *VO_ = (T *)in[13], *O_ = (T *)out;           \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T g = G_[i];                                              \
            const T m = s1 * M_[i] + s2 * g, v = s3 * V_[i] + (s4 * g) * g; \
            MO_[i] = m; VO_[i] = v;                                         \
            O_[i] = W_[i] - s5 * (m / s6) / (M(sqrt)(v / s7) + s8); }      \
        return 1; }                                                         \
    /* PyTorch's form (pyet.nn.Adam): m as above; v = s3*v + s4*(g*g);     */ \
    /* w = w - (s5*m) / (sqrt(v)*s6 + s7)                                  */ \
    case OP_adam_torch: {                                                   \
        PYET_ADAM_OPERANDS(T);                                              \
        T *MO_ = (T *)in[11], *VO_ = (T *)in[12], *O_ = (T *)out;           \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T g = G_[i];                                              \
            const T m = s1 * M_[i] + s2 * g, v = s3 * V_[i] + s4 * (g * g); \
            MO_[i] = m; VO_[i] = v;                                         \
            O_[i] = W_[i] - (s5 * m) / (M(sqrt)(v) * s6 + s7); }           \
        return 1; }

#ifdef PYET_KERNELS_PART_ELEMENTWISE
PYET_DISPATCH_WIDE static int pyet_kernel_wide(int op, int dt, int sflags, pyet_intp n,
                                               void *out, void *const *in)
{
    if (dt == DT_F32) {
        switch (op) { PYET_WIDE_CASES(float, f32, PYET_M32) default: return 0; }
    }
    if (dt == DT_F64) {
        switch (op) { PYET_WIDE_CASES(double, f64, PYET_M64) default: return 0; }
    }
    return 0;
}
#endif

/* bool: + and max are or, * and min are and (NumPy's ??->? loops).  A bool
 * byte other than 0 or 1 (an array viewed from other bytes) is true, and
 * every result is 0 or 1, as in NumPy's loops: each value is read as x != 0
 * (one compare a vector; copies keep the bytes, as NumPy's do). */
#define PYET_BOOL_CASES                                                     \
    case OP_add: case OP_maximum: case OP_bitwise_or:                       \
        PYET_LOOP2(pyet_bool, pyet_bool, (x | y) != 0); return 1;           \
    case OP_multiply: case OP_minimum: case OP_bitwise_and:                 \
        PYET_LOOP2(pyet_bool, pyet_bool, (x != 0) & (y != 0)); return 1;    \
    case OP_bitwise_xor:                                                    \
        PYET_LOOP2(pyet_bool, pyet_bool, (x != 0) ^ (y != 0)); return 1;    \
    case OP_invert: PYET_LOOP1(pyet_bool, pyet_bool, !x); return 1;         \
    case OP_absolute: PYET_LOOP1(pyet_bool, pyet_bool, x != 0); return 1;   \
    case OP_floor: case OP_ceil: case OP_trunc: /* NumPy's keep the bytes */\
        PYET_LOOP1(pyet_bool, pyet_bool, x); return 1;                      \
    case OP_isnan: case OP_isinf: PYET_LOOP1(pyet_bool, pyet_bool, 0);      \
        return 1;                                                           \
    case OP_isfinite: PYET_LOOP1(pyet_bool, pyet_bool, 1); return 1;        \
    PYET_CMP_CASES_OF(pyet_bool, PYET_NONZERO)                              \
    PYET_COPY_CASES(pyet_bool)

/* Fused patterns: arrays are contiguous blocks (or rows every steps[j]
 * bytes, PYET_AT_STEP), scalars loaded once.
 * Each computes exactly the rounding sequence of the unfused tree. */
#define PYET_FUSED_CASES_AT(T, AT)                                          \
    case OP_axpy: { /* x + s*y */                                           \
        const T *X_ = (const T *)in[0], *Y_ = (const T *)in[2];             \
        const T s = *(const T *)in[1]; T *O_ = (T *)out;                    \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T t = s * AT(T, Y_, 2); O_[i] = AT(T, X_, 0) + t; }       \
        return 1; }                                                         \
    case OP_sub_scaled: { /* x - s*y: SGD's w - lr*g */                     \
        const T *X_ = (const T *)in[0], *Y_ = (const T *)in[2];             \
        const T s = *(const T *)in[1]; T *O_ = (T *)out;                    \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T t = s * AT(T, Y_, 2); O_[i] = AT(T, X_, 0) - t; }       \
        return 1; }                                                         \
    case OP_scale_shift: { /* s1*x + s2: a scale and a shift */             \
        const T s1 = *(const T *)in[0], s2 = *(const T *)in[2];             \
        const T *X_ = (const T *)in[1]; T *O_ = (T *)out;                   \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T t = s1 * AT(T, X_, 1); O_[i] = t + s2; }                \
        return 1; }                                                         \
    case OP_mul_shift: { /* x*y + s: a product and a shift */               \
        const T *X_ = (const T *)in[0], *Y_ = (const T *)in[1];             \
        const T s = *(const T *)in[2]; T *O_ = (T *)out;                    \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T t = AT(T, X_, 0) * AT(T, Y_, 1); O_[i] = t + s; }       \
        return 1; }                                                         \
    case OP_scale_sum: { /* s*(x + y) */                                    \
        const T s = *(const T *)in[0]; T *O_ = (T *)out;                    \
        const T *X_ = (const T *)in[1], *Y_ = (const T *)in[2];             \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T t = AT(T, X_, 1) + AT(T, Y_, 2); O_[i] = s * t; }       \
        return 1; }                                                         \
    case OP_scale_axpy: { /* s1*(x + s2*y) */                               \
        const T s1 = *(const T *)in[0], s2 = *(const T *)in[2];             \
        const T *X_ = (const T *)in[1], *Y_ = (const T *)in[3];             \
        T *O_ = (T *)out;                                                   \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T t = s2 * AT(T, Y_, 3); const T u = AT(T, X_, 1) + t; O_[i] = s1 * u; } \
        return 1; }                                                         \
    case OP_axpby: { /* s1*x + s2*y */                                      \
        const T s1 = *(const T *)in[0], s2 = *(const T *)in[2];             \
        const T *X_ = (const T *)in[1], *Y_ = (const T *)in[3];             \
        T *O_ = (T *)out;                                                   \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T t = s1 * AT(T, X_, 1); const T u = s2 * AT(T, Y_, 3); O_[i] = t + u; } \
        return 1; }                                                         \
    case OP_muladd: case OP_mulsub: case OP_submul: {                       \
        const T *X_ = (const T *)in[0], *Y_ = (const T *)in[1];             \
        const T *Z_ = (const T *)in[2]; T *O_ = (T *)out;                   \
        if (op == OP_muladd) {                                              \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                const T t = AT(T, X_, 0) * AT(T, Y_, 1); O_[i] = t + AT(T, Z_, 2); } \
        } else if (op == OP_mulsub) {                                       \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                const T t = AT(T, X_, 0) * AT(T, Y_, 1); O_[i] = t - AT(T, Z_, 2); } \
        } else {                                                            \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                const T t = AT(T, X_, 0) * AT(T, Y_, 1); O_[i] = AT(T, Z_, 2) - t; } \
        }                                                                   \
        return 1; }                                                         \
    case OP_mul_add_mul: case OP_mul_sub_mul: { /* x*y + z*w, x*y - z*w */  \
        const T *X_ = (const T *)in[0], *Y_ = (const T *)in[1];             \
        const T *Z_ = (const T *)in[2], *W_ = (const T *)in[3];             \
        T *O_ = (T *)out;                                                   \
        if (op == OP_mul_add_mul) {                                         \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                const T t = AT(T, X_, 0) * AT(T, Y_, 1);                    \
                const T u = AT(T, Z_, 2) * AT(T, W_, 3); O_[i] = t + u; }   \
        } else {                                                            \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                const T t = AT(T, X_, 0) * AT(T, Y_, 1);                    \
                const T u = AT(T, Z_, 2) * AT(T, W_, 3); O_[i] = t - u; }   \
        }                                                                   \
        return 1; }                                                         \
    case OP_scale_mul: { /* (s*x)*y */                                      \
        const T s = *(const T *)in[0]; T *O_ = (T *)out;                    \
        const T *X_ = (const T *)in[1], *Y_ = (const T *)in[2];             \
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                      \
            const T t = s * AT(T, X_, 1); O_[i] = t * AT(T, Y_, 2); }       \
        return 1; }                                                         \
    case OP_ema_mul: case OP_ema_prod: {                                    \
        const T s1 = *(const T *)in[0], s2 = *(const T *)in[2];             \
        const T *X_ = (const T *)in[1], *Y_ = (const T *)in[3];             \
        const T *Z_ = (const T *)in[4]; T *O_ = (T *)out;                   \
        if (op == OP_ema_mul) { /* s1*x + (s2*y)*z */                       \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                const T t = s1 * AT(T, X_, 1); const T u = s2 * AT(T, Y_, 3); \
                const T p = u * AT(T, Z_, 4); O_[i] = t + p; }              \
        } else { /* s1*x + s2*(y*z) */                                      \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                const T t = s1 * AT(T, X_, 1); const T u = AT(T, Y_, 3) * AT(T, Z_, 4); \
                const T p = s2 * u; O_[i] = t + p; }                        \
        }                                                                   \
        return 1; }

/* the fused kernels' inputs: in place (contiguous) or every steps[j] bytes */
#define PYET_AT_CONTIG(T, P, J) P[i]
#define PYET_AT_STEP(T, P, J) (*(const T *)((const char *)(P) + i * steps[J]))
#define PYET_FUSED_CASES(T) PYET_FUSED_CASES_AT(T, PYET_AT_CONTIG)

#define PYET_WHERE_LOOP(T)                                                  \
    do {                                                                    \
        const pyet_bool *C_ = (const pyet_bool *)in[0];                     \
        const T *A_ = (const T *)in[1], *B_ = (const T *)in[2];             \
        T *O_ = (T *)out;                                                   \
        const pyet_intp sa = (sflags & 2) ? 0 : 1, sb = (sflags & 4) ? 0 : 1;\
        if (sa && sb) {                                                     \
            const pyet_intp p_ = PYET_PEEL_COUNT(T, O_, T, A_);             \
            for (pyet_intp i = 0; i < p_; i++) {                            \
                O_[i] = C_[i] ? A_[i] : B_[i];                              \
                PYET_NOVEC();                                               \
            }                                                               \
            PYET_IVDEP for (pyet_intp i = p_; i < n; i++) {                 \
                const T a_ = A_[i], b_ = B_[i]; /* both loads: branch-free */\
                O_[i] = C_[i] ? a_ : b_;                                    \
            }                                                               \
        } else if (sa) { /* one value loaded once: the loop vectorizes */   \
            const T b_ = B_[0];                                             \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                const T a_ = A_[i];                                         \
                O_[i] = C_[i] ? a_ : b_;                                    \
            }                                                               \
        } else if (sb) {                                                    \
            const T a_ = A_[0];                                             \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                const T b_ = B_[i];                                         \
                O_[i] = C_[i] ? a_ : b_;                                    \
            }                                                               \
        } else {                                                            \
            const T a_ = A_[0], b_ = B_[0];                                 \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++)                    \
                O_[i] = C_[i] ? a_ : b_;                                    \
        }                                                                   \
    } while (0)

#define PYET_IS_DIV(op) \
    ((op) == OP_floor_divide || (op) == OP_remainder || (op) == OP_fmod)

#ifdef PYET_KERNELS_PART_ELEMENTWISE
/* Integer //, % and fmod by a scalar: multiply-high and shifts, compute-bound
 * (NumPy's AVX-512 loops run them at 512 bits), so cloned as the wide loops
 * (and reached from pyet_kernel: a narrow clone would call its own target's). */
PYET_DISPATCH_WIDE static int pyet_kernel_idiv(int op, int dt, pyet_intp n, void *out,
                                               void *const *in)
{
    if (dt == DT_I32)
        PYET_DIV_BY_SCALAR(int32_t, uint32_t, 32, PYET_MULHI32);
    else
        PYET_DIV_BY_SCALAR(int64_t, uint64_t, 64, PYET_MULHI64);
    return 1;
}

/* The memory-bound loops (all but pyet_kernel_wide's), at 256 bits; called
 * straight by a pass once pyet_kernel_routed has said pyet_kernel would. */
PYET_DISPATCH int pyet_kernel_narrow(int op, int dt, int sflags, pyet_intp n,
                                     void *out, void *const *in)
{
    switch (dt) {
    case DT_BOOL:
        if (op == OP_where) { PYET_WHERE_LOOP(pyet_bool); return 1; }
        switch (op) { PYET_BOOL_CASES default: return 0; }
    case DT_I32:
        if (op == OP_where) { PYET_WHERE_LOOP(int32_t); return 1; }
        switch (op) { PYET_INT_CASES(int32_t, i32) PYET_FUSED_CASES(int32_t)
                      default: return 0; }
    case DT_I64:
        if (op == OP_where) { PYET_WHERE_LOOP(int64_t); return 1; }
        switch (op) { PYET_INT_CASES(int64_t, i64) PYET_FUSED_CASES(int64_t)
                      default: return 0; }
    case DT_F32:
        if (op == OP_where) { PYET_WHERE_LOOP(float); return 1; }
        switch (op) { PYET_FLOAT_CASES(float, f32, PYET_M32)
                      PYET_FUSED_CASES(float) default: return 0; }
    case DT_F64:
        if (op == OP_where) { PYET_WHERE_LOOP(double); return 1; }
        switch (op) { PYET_FLOAT_CASES(double, f64, PYET_M64)
                      PYET_FUSED_CASES(double) default: return 0; }
    }
    return 0;
}
#endif

#ifdef PYET_NARROW512
/* The vectorizing ops of pyet_kernel_narrow at 512 bits, peeled (PYET_PEEL).
 * NumPy's AVX-512 loops beat the 256-bit ones while the data are in L1 or
 * L2 (Intel Xeon, one thread, the kernel alone on 65536 float32 in blocks of
 * 8192: abs 1.5x, a+b 1.5x, a<b 2x faster than at 256 bits; at 1e6 and 1e7
 * elements, memory-bound, alike).  Run on
 * Intel CPUs only: on AMD Zen 5, 512-bit loads and stores that split cache
 * lines made these loops up to 1.6x slower, and no AMD host was at hand to
 * measure the peeled ones (pyet_use_narrow512). */
#include <immintrin.h>
#ifdef PYET_KERNELS_PART_NARROW512_REDUCE

/* Comparisons of two blocks into bool, as NumPy's AVX-512 loops do them:
 * compare into mask registers, join four masks in a general register and
 * store the bytes of one masked move.  gcc's own loop widens each mask to
 * lanes and narrows them with shuffles, which took twice as long (the
 * shuffle port).  The peel and the tail are masked vector steps.  NaNs
 * compare unordered as C's (!= true, the others false). */
#define PYET_CMP512(T, W, MT, LOAD, MLOAD, CMP, PRED)                       \
    do {                                                                    \
        const T *A_ = (const T *)in[0], *B_ = (const T *)in[1];             \
        pyet_bool *O_ = (pyet_bool *)out;                                   \
        const __m512i one64_ = _mm512_set1_epi8(1);                         \
        const __m128i one16_ = _mm_set1_epi8(1);                            \
        pyet_intp i = 0, m_ = pyet_peel(A_, sizeof(T), n);                  \
        if (m_ == 0) m_ = n < W ? n : 0;                                    \
        for (;;) {                                                          \
            if (m_ > 0) { /* m_ <= W elements: a masked step */             \
                const MT k_ = (MT)((1u << m_) - 1);                         \
                const MT r_ = CMP(MLOAD(k_, A_ + i), MLOAD(k_, B_ + i), PRED) & k_; \
                _mm_mask_storeu_epi8(O_ + i, (__mmask16)k_,                 \
                                     _mm_maskz_mov_epi8((__mmask16)r_, one16_)); \
                i += m_;                                                    \
            }                                                               \
            for (; i + 4 * W <= n; i += 4 * W) {                            \
                const uint64_t r0_ = CMP(LOAD(A_ + i), LOAD(B_ + i), PRED); \
                const uint64_t r1_ = CMP(LOAD(A_ + i + W), LOAD(B_ + i + W), PRED); \
                const uint64_t r2_ = CMP(LOAD(A_ + i + 2 * W), LOAD(B_ + i + 2 * W), PRED); \
                const uint64_t r3_ = CMP(LOAD(A_ + i + 3 * W), LOAD(B_ + i + 3 * W), PRED); \
                const uint64_t r_ = r0_ | r1_ << W | r2_ << (2 * W) | r3_ << (3 * W); \
                if (W == 16)                                                \
                    _mm512_storeu_si512(O_ + i, _mm512_maskz_mov_epi8(r_, one64_)); \
                else                                                        \
                    _mm256_storeu_si256((__m256i *)(O_ + i),                \
                        _mm256_maskz_mov_epi8((__mmask32)r_, _mm512_castsi512_si256(one64_))); \
            }                                                               \
            if (i >= n) break;                                              \
            m_ = n - i < W ? n - i : W;                                     \
        }                                                                   \
    } while (0)

#define PYET_CMP512_OPS(T, W, MT, LOAD, MLOAD, CMP, LT, LE, GT, GE, EQ, NE)  \
    switch (op) {                                                           \
    case OP_less: PYET_CMP512(T, W, MT, LOAD, MLOAD, CMP, LT); return 1;    \
    case OP_less_equal: PYET_CMP512(T, W, MT, LOAD, MLOAD, CMP, LE); return 1; \
    case OP_greater: PYET_CMP512(T, W, MT, LOAD, MLOAD, CMP, GT); return 1; \
    case OP_greater_equal: PYET_CMP512(T, W, MT, LOAD, MLOAD, CMP, GE); return 1; \
    case OP_equal: PYET_CMP512(T, W, MT, LOAD, MLOAD, CMP, EQ); return 1;   \
    case OP_not_equal: PYET_CMP512(T, W, MT, LOAD, MLOAD, CMP, NE); return 1; \
    default: break;                                                         \
    }

#define PYET_LOADI(p) _mm512_loadu_si512((const void *)(p))
#define PYET_MLOAD32(k, p) _mm512_maskz_loadu_epi32((k), (const void *)(p))
#define PYET_MLOAD64(k, p) _mm512_maskz_loadu_epi64((k), (const void *)(p))
#define PYET_CMP512_FLOAT_OPS(T, W, MT, LOAD, MLOAD, CMP)                   \
    PYET_CMP512_OPS(T, W, MT, LOAD, MLOAD, CMP, _CMP_LT_OQ, _CMP_LE_OQ, _CMP_GT_OQ, \
                    _CMP_GE_OQ, _CMP_EQ_OQ, _CMP_NEQ_UQ)
#define PYET_CMP512_INT_OPS(T, W, MT, MLOAD, CMP)                           \
    PYET_CMP512_OPS(T, W, MT, PYET_LOADI, MLOAD, CMP, _MM_CMPINT_LT, _MM_CMPINT_LE, \
                    _MM_CMPINT_NLE, _MM_CMPINT_NLT, _MM_CMPINT_EQ, _MM_CMPINT_NE)

PYET_TARGET512 static int pyet_cmp512(int op, int dt, pyet_intp n, void *out,
                                      void *const *in)
{
    switch (dt) {
    case DT_F32:
        PYET_CMP512_FLOAT_OPS(float, 16, __mmask16, _mm512_loadu_ps, _mm512_maskz_loadu_ps,
                              _mm512_cmp_ps_mask)
        break;
    case DT_F64:
        PYET_CMP512_FLOAT_OPS(double, 8, __mmask8, _mm512_loadu_pd, _mm512_maskz_loadu_pd,
                              _mm512_cmp_pd_mask)
        break;
    case DT_I32:
        PYET_CMP512_INT_OPS(int32_t, 16, __mmask16, PYET_MLOAD32, _mm512_cmp_epi32_mask)
        break;
    case DT_I64:
        PYET_CMP512_INT_OPS(int64_t, 8, __mmask8, PYET_MLOAD64, _mm512_cmp_epi64_mask)
        break;
    }
    return 0;
}

#undef PYET_PEEL
#define PYET_PEEL 1
PYET_TARGET512 int pyet_kernel_narrow512(int op, int dt, int sflags, pyet_intp n,
                                         void *out, void *const *in)
{
    if (sflags == 0 && n > 0 && op >= OP_less && op <= OP_not_equal && dt != DT_BOOL &&
        pyet_cmp512(op, dt, n, out, in))
        return 1;
    switch (dt) {
    case DT_BOOL:
        if (op == OP_where) { PYET_WHERE_LOOP(pyet_bool); return 1; }
        switch (op) { PYET_BOOL_CASES default: return 0; }
    case DT_I32:
        if (op == OP_where) { PYET_WHERE_LOOP(int32_t); return 1; }
        switch (op) { PYET_SIMPLE_CASES(int32_t, i32) PYET_INT_SIMPLE_CASES(int32_t, i32)
                      PYET_FUSED_CASES(int32_t) default: return 0; }
    case DT_I64:
        if (op == OP_where) { PYET_WHERE_LOOP(int64_t); return 1; }
        switch (op) { PYET_SIMPLE_CASES(int64_t, i64) PYET_INT_SIMPLE_CASES(int64_t, i64)
                      PYET_FUSED_CASES(int64_t) default: return 0; }
    case DT_F32:
        if (op == OP_where) { PYET_WHERE_LOOP(float); return 1; }
        switch (op) { PYET_SIMPLE_CASES(float, f32) PYET_FLOAT_SIMPLE_CASES(float, f32, PYET_M32)
                      PYET_FUSED_CASES(float) default: return 0; }
    case DT_F64:
        if (op == OP_where) { PYET_WHERE_LOOP(double); return 1; }
        switch (op) { PYET_SIMPLE_CASES(double, f64)
                      PYET_FLOAT_SIMPLE_CASES(double, f64, PYET_M64)
                      PYET_FUSED_CASES(double) default: return 0; }
    }
    return 0;
}
#undef PYET_PEEL
#define PYET_PEEL 0
#endif

/* Intel with AVX-512 (x86-64-v4) only; PYET_NO_NARROW512=1 in the
 * environment keeps the 256-bit loops (tests compare both). */
static int pyet_use_narrow512(void)
{
    static int use_ = -1;  /* a benign race: every thread stores the same */
    if (use_ < 0) {
        const char *e = getenv("PYET_NO_NARROW512");
        use_ = __builtin_cpu_supports("x86-64-v4") && __builtin_cpu_is("intel")
               && !(e && e[0] && e[0] != '0');
    }
    return use_;
}
#endif

#ifdef PYET_KERNELS_PART_ELEMENTWISE
/* Run one op over n elements.  in[k] points at a contiguous block, or at
 * one value when bit k of sflags is set; an op whose operands are all one
 * value is run with n = 1 (the engine repeats the result: blocks.pxi
 * run_block), so unary kernels read blocks only.  Returns 0 when (op, dt) has no
 * kernel, so the planner can refuse it before anything runs; with n == 0
 * it only answers that question.  Not itself cloned: a clone's calls to
 * another cloned function are bound to that function's clone for the same
 * target, so the wide kernels are reached from here, through their own
 * load-time choice. */
/* float32 sin and cos on CPUs without FMA (pyet_kernel_f32math has the
 * float-lane ones): each value is widened to double, reduced (x - n*pi/2 in
 * three exact-ish steps, fdlibm's 33-bit split of pi/2) and evaluated with
 * musl's double polynomials, then rounded once to float: correctly rounded
 * but for rare near-ties.  Lanes the reduction does not cover (|x| >= 2^18,
 * tiny, inf, nan) take libm's float function in a scalar fix-up (its
 * flags, and NumPy's underflow on tiny ones: pyet_sinf_np), and are replaced
 * by 0 in the vector loop, which so raises no floating-point flag of its
 * own.  Chunks of PYET_TRIG_CHUNK keep the input readable when out is the
 * input's block. */
#define PYET_TRIG_CHUNK 256

PYET_INLINE uint32_t pyet_f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

PYET_INLINE double pyet_sincos_core(double x, int want_cos)
{
    /* x - n*pi/2; n*pio2_1 and n*pio2_2 are exact for |n| < 2^20 */
    const double invpio2 = 6.36619772367581382433e-01;
    const double pio2_1 = 1.57079632673412561417e+00, pio2_2 = 6.07710050630396597660e-11,
                 pio2_2t = 2.02226624879595063154e-21;
    const double fn = rint(x * invpio2);
    const double r = ((x - fn * pio2_1) - fn * pio2_2) - fn * pio2_2t;
    /* musl's __sindf and __cosdf: |error| < 2^-37.5 and 2^-34.1 on |r| <= pi/4 */
    const double z = r * r, w = z * z;
    const double s = (r + r * z * (-0x15555554cbac77.0p-55 + z * 0x111110896efbb2.0p-59))
                     + r * z * w * (-0x1a00f9e2cae774.0p-65 + z * 0x16cd878c3b46a7.0p-71);
    const double c = ((1.0 + z * -0x1ffffffd0c5e81.0p-54) + w * 0x155553e1053a42.0p-57)
                     + (w * z) * (-0x16c087e80f1e27.0p-62 + z * 0x199342e0ee5069.0p-68);
    const int q = ((int)fn + want_cos) & 3;
    const double v = (q & 1) ? c : s;
    return (q & 2) ? -v : v;
}

/* k log 2 + log(1 + f), f in [sqrt(2)/2 - 1, sqrt(2) - 1): fdlibm's polynomial */
PYET_INLINE double pyet_log_poly(double k, double f)
{
    const double sv = f / (2.0 + f), z = sv * sv, w = z * z;
    const double t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01
                      + w * 1.531383769920937332e-01));
    const double t2 = z * (6.666666666666735130e-01 + w * (2.857142874366239149e-01
                      + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
    const double hfsq = 0.5 * f * f, R = t2 + t1;
    return k * 6.93147180559945286227e-01 + (f - (hfsq - sv * (hfsq + R)));
}

#define PYET_TRIG_LOOP(SLOW, FAST, LIBM)                                    \
    do {                                                                    \
        const float *X_ = (const float *)in[0];                             \
        float *O_ = (float *)out;                                           \
        float tmp[PYET_TRIG_CHUNK];                                         \
        for (pyet_intp i0 = 0; i0 < n; i0 += PYET_TRIG_CHUNK) {             \
            const int m = n - i0 < PYET_TRIG_CHUNK ? (int)(n - i0) : PYET_TRIG_CHUNK; \
            const float *x_ = X_ + i0;                                      \
            int slow = 0;                                                   \
            PYET_IVDEP for (int j = 0; j < m; j++) {                        \
                const float x = x_[j];                                      \
                const uint32_t u = pyet_f32_bits(x);                        \
                const int sl = (SLOW);                                      \
                slow |= sl;                                                 \
                tmp[j] = (float)(FAST);                                     \
            }                                                               \
            if (slow) {                                                     \
                for (int j = 0; j < m; j++) {                               \
                    const float x = x_[j];                                  \
                    const uint32_t u = pyet_f32_bits(x);                    \
                    if (SLOW) tmp[j] = LIBM(x);                             \
                }                                                           \
            }                                                               \
            memcpy(O_ + i0, tmp, (size_t)m * sizeof(float));                \
        }                                                                   \
    } while (0)

/* sin and cos of the slow lanes.  NumPy's SIMD loops raise underflow for
 * 0 < |x| <= 0x1.3988e0p-62 (bits 0x209cc470: x^2/6 underflows in their
 * polynomial) and subnormal x, where sin x rounds to x and cos x to 1 (libm
 * raises it on subnormal sin only); elsewhere libm's values and flags.
 * Integer compares: an ordered compare with NaN would raise invalid. */
#define PYET_SINCOS_UNDERFLOW(a) ((a) - 1u < 0x209cc470u)
static float pyet_sinf_np(float x)
{
    if (PYET_SINCOS_UNDERFLOW(pyet_f2bits(x) & 0x7fffffffu)) {
        volatile float t = 0x1p-126f;
        t = t * t;
        return x;
    }
    return sinf(x);
}

static float pyet_cosf_np(float x)
{
    if (PYET_SINCOS_UNDERFLOW(pyet_f2bits(x) & 0x7fffffffu)) {
        volatile float t = 0x1p-126f;
        t = t * t;
        return 1.0f;
    }
    return cosf(x);
}

#define PYET_SINCOS_SLOW                                                    \
    (((u & 0x7fffffffu) >= 0x48800000u) | PYET_SINCOS_UNDERFLOW(u & 0x7fffffffu))
/* |x| < 2^-12 (normal): sin x rounds to x and cos x to 1 */
#define PYET_SIN_FAST                                                       \
    ((u & 0x7fffffffu) < 0x39800000u ? (double)x                            \
     : pyet_sincos_core(sl ? 0.0 : (double)x, 0))
#define PYET_COS_FAST                                                       \
    ((u & 0x7fffffffu) < 0x39800000u ? 1.0                                  \
     : pyet_sincos_core(sl ? 0.0 : (double)x, 1))

/* float32 log, sin and cos in float arithmetic: 16 lanes at AVX-512 (the
 * double ones above get 8), branch-free so gcc vectorizes them.  Each is
 * within 1 ulp of the correctly rounded result over every float32 the
 * vector loop takes (checked exhaustively against double libm); NumPy's
 * own SIMD loops are up to 1.5 ulp (sin, cos) and 3 ulp (log) off.
 *
 * log: x = 2^k m, m in [sqrt(2)/2, sqrt(2)), f = m - 1 (exact),
 * log x = k ln2 + f - f^2/2 + f^3 P(f), Cephes's logf polynomial, ln 2 split
 * so k*ln2_hi (9 bits) is exact; fmaf where the CPU has FMA (a multiply and
 * an add each on CPUs without, also within 1 ulp).  Zero, negative,
 * subnormal, inf and nan lanes are slow (libm's logf, its values and flags).
 *
 * sin, cos: n = round(x 2/pi); r = x - n pi/2 as hi + lo: x - n P1 (P1 =
 * pi/2 to float) is exact with an fma, n (pi/2 - P1) is taken in two parts,
 * the first product exact by fma and the sum error-free (Fast2Sum), so r
 * keeps about 48 bits where |r| >= 2^-27.8 (the nearest any float below
 * 2^20 comes to a multiple of pi/2, so no intermediate underflows).
 * sin r = hi + (lo + hi z P(z)), cos r = 1 + (z Q(z) - hi lo), z = hi^2
 * (Cephes's P and Q, Q(0) = -1/2).
 * |x| >= 2^20, inf, nan and tiny lanes (pyet_sinf_np) are slow; other
 * |x| < 2^-12 lanes give x and 1 (sin x, cos x round to them there) and
 * reduce 0, so the loop raises no underflow on them. */
/* use_fma (a constant where it inlines): fmaf, else a multiply and an add */
#define PYET_MADDF(a, b, c) (use_fma ? fmaf((a), (b), (c)) : (a) * (b) + (c))
PYET_INLINE float pyet_logf_core(float x, int use_fma)
{
    const uint32_t u = pyet_f2bits(x);
    const uint32_t top = (u - 0x3f3504f3u) & 0xff800000u;  /* k's exponent field */
    const float k = (float)((int32_t)top >> 23);
    const float f = pyet_bits2f(u - top) - 1.0f;
    const float z = f * f, z2 = z * z;
    /* Estrin's scheme: a short dependency chain */
    const float p01 = PYET_MADDF(f, -2.4999993993E-1f, 3.3333331174E-1f);
    const float p23 = PYET_MADDF(f, -1.6668057665E-1f, 2.0000714765E-1f);
    const float p45 = PYET_MADDF(f, -1.2420140846E-1f, 1.4249322787E-1f);
    const float p67 = PYET_MADDF(f, -1.1514610310E-1f, 1.1676998740E-1f);
    const float p = PYET_MADDF(z2, PYET_MADDF(z2, 7.0376836292E-2f, PYET_MADDF(z, p67, p45)),
                               PYET_MADDF(z, p23, p01));
    float y = PYET_MADDF(p * f, z, -2.12194440e-4f * k);
    y = PYET_MADDF(-0.5f, z, y);
    return PYET_MADDF(0.693359375f, k, f + y);
}
#undef PYET_MADDF

PYET_INLINE float pyet_sincosf_core(float x, int want_cos)
{
    const float t = fmaf(x, 0x1.45f306p-1f, 0x1.8p23f);    /* n + 1.5 * 2^23 */
    const float n = t - 0x1.8p23f;
    const float r1 = fmaf(-n, 0x1.921fb6p+0f, x);           /* exact */
    const float dh = -0x1.777a5cp-25f, dl = -0x1.ee59dap-50f; /* pi/2 - P1 */
    const float ch = n * dh, cl = fmaf(n, dh, -ch);          /* n dh = ch + cl */
    const float hi = r1 - ch, e = (r1 - hi) - ch;
    const float lo = fmaf(-n, dl, e - cl);
    const uint32_t q = pyet_f2bits(t) + (uint32_t)want_cos;  /* quadrant in bits 0-1 */
    const float z = hi * hi;
    const float ps = fmaf(fmaf(-1.9515295891E-4f, z, 8.3321608736E-3f), z, -1.6666654611E-1f);
    const float s = hi + fmaf(hi * z, ps, lo);
    const float pc = fmaf(fmaf(fmaf(2.443315711809948E-5f, z, -1.388731625493765E-3f), z,
                               4.166664568298827E-2f), z, -0.5f);
    const float c = 1.0f + fmaf(z, pc, -hi * lo);
    const float v = (q & 1) ? c : s;
    return (q & 2) ? -v : v;
}

/* tanh with fmaf (pyet_tanhf's formulas, Cephes's small-|x| polynomial,
 * exp's by a degree-7 Taylor polynomial): 1.5x its speed; within 1 ulp of
 * the correctly rounded result (checked exhaustively) */
PYET_INLINE float pyet_tanhf_fma(float x)
{
    const float a = fabsf(x), z = x * x;
    const float y = 2.0f * (a < 10.0f ? a : 10.0f);           /* tanhf(10) = 1 */
    const float t = fmaf(y, 1.44269504f, 0x1.8p23f), n = t - 0x1.8p23f;
    const float r = fmaf(-n, -2.12194440e-4f, fmaf(-n, 0.693359375f, y));
    const float q = fmaf(fmaf(fmaf(fmaf(fmaf(1.0f / 5040, r, 1.0f / 720), r, 1.0f / 120), r,
                                    1.0f / 24), r, 1.0f / 6), r, 0.5f);
    const float s = (1.0f + fmaf(q, r * r, r))
                    * pyet_bits2f((pyet_f2bits(t) - 0x4b400000u + 127) << 23); /* e^y */
    const float small = fmaf(fmaf(fmaf(fmaf(fmaf(-5.70498872745E-3f, z, 2.06390887954E-2f), z,
                                            -5.37397155531E-2f), z, 1.33314422036E-1f), z,
                                  -3.33332819422E-1f) * z, x, x);
    return copysignf(a >= 0.625f ? 1.0f - 2.0f / (s + 1.0f) : small, x); /* tanh(-0) = -0 */
}

#define PYET_SINCOSF_SLOW                                                   \
    (((u & 0x7fffffffu) >= 0x49800000u) | PYET_SINCOS_UNDERFLOW(u & 0x7fffffffu))
#define PYET_SINCOSF_TINY ((u & 0x7fffffffu) < 0x39800000u)
#define PYET_SINF_FAST                                                      \
    (PYET_SINCOSF_TINY ? x : pyet_sincosf_core((sl | PYET_SINCOSF_TINY) ? 0.0f : x, 0))
#define PYET_COSF_FAST                                                      \
    (PYET_SINCOSF_TINY ? 1.0f : pyet_sincosf_core((sl | PYET_SINCOSF_TINY) ? 0.0f : x, 1))

PYET_DISPATCH_WIDE static int pyet_kernel_f32math(int op, int sflags, pyet_intp n, void *out,
                                                 void *const *in)
{
    switch (op) {
    case OP_tanh:
        PYET_LOOP1(float, float, pyet_tanhf_fma(x));
        return 1;
    case OP_sin:
        PYET_TRIG_LOOP(PYET_SINCOSF_SLOW, PYET_SINF_FAST, pyet_sinf_np);
        return 1;
    case OP_cos:
        PYET_TRIG_LOOP(PYET_SINCOSF_SLOW, PYET_COSF_FAST, pyet_cosf_np);
        return 1;
    case OP_log:
        PYET_TRIG_LOOP(u - 0x00800000u >= 0x7f000000u, pyet_logf_core(sl ? 1.0f : x, 1), logf);
        return 1;
    }
    return 0;
}

/* the same without FMA (log: the same polynomial, a multiply and an add
 * for each fmaf; sin, cos: the double ones above) */
PYET_DISPATCH_WIDE static int pyet_kernel_trig_f32(int op, pyet_intp n, void *out,
                                                  void *const *in)
{
    switch (op) {
    case OP_sin:
        PYET_TRIG_LOOP(PYET_SINCOS_SLOW, PYET_SIN_FAST, pyet_sinf_np);
        return 1;
    case OP_cos:
        PYET_TRIG_LOOP(PYET_SINCOS_SLOW, PYET_COS_FAST, pyet_cosf_np);
        return 1;
    case OP_log:
        PYET_TRIG_LOOP(u - 0x00800000u >= 0x7f000000u, pyet_logf_core(sl ? 1.0f : x, 0), logf);
        return 1;
    }
    return 0;
}

/* ------------------------------------------ pow and float64 log, vectorized
 *
 * float64 log(x) as hi + lo, for x positive, normal and finite: x = 2^k m,
 * m in [sqrt(2)/2, sqrt(2)), log m = 2 atanh(s) = 2s + 2s^3/3 + s^5 R(s^2),
 * s = (m - 1)/(m + 1), |s| < 0.172.  s and the s^3 term are carried in
 * double-double (fma), the rest of the series, under 2^-12 of the whole, in
 * double: |hi + lo - log x| < 2^-64 |log x|.  Branch-free, so its loops
 * vectorize (no table: no gathers).  (float64 log itself is pyet_log_fd's,
 * within 1 ulp and faster.)  These are the kernels without AVX-512, and
 * those of lanes pyet_log_avx512 and pyet_pow_avx512 hand to libm are
 * libm's.  pow(x, y) = exp(y log x): y
 * times hi + lo in double-double, then pyet_exp's reduction and polynomial
 * with the low parts carried: correctly rounded but for near-ties (|y log x|
 * <= 708).
 * float32 pow: pyet_powf_avx512 where the CPU has AVX-512 (DQ), else
 * pyet_powf_lane; small integer exponents: pyet_kernel_powi_f32.  Without
 * AVX-512, gcc vectorizes none of these loops (64-bit compares). */
PYET_INLINE double pyet_log_dd(double x, double *lo)
{
    const uint64_t u = pyet_d2bits(x);
    const uint64_t top = (u - 0x3fe6a09e667f3bcdull) & 0xfff0000000000000ull;
    /* k = top's signed exponent, as a double without int64 -> double
     * conversion or arithmetic shifts (AVX2 has neither): 2^52 + k + 2048 */
    const double kd = pyet_bits2d(0x4330000000000000ull | (((top >> 52) + 2048) & 4095))
                      - (0x1p52 + 2048.0);
    const double m = pyet_bits2d(u - top);
    const double f = m - 1.0;                 /* exact */
    const double d = 2.0 + f, dl = (2.0 - d) + f;   /* 2 + f as d + dl */
    const double s = f / d;
    const double sl = (fma(-s, d, f) - s * dl) / d;  /* f/(d + dl) = s + sl */
    /* s^2 = zh + zl, s^3 = ch + cl, (2/3) s^3 = bh + bl */
    const double zh = s * s, zl = fma(s, s, -zh) + 2.0 * s * sl;
    const double ch = zh * s, cl = fma(zh, s, -ch) + (zl * s + zh * sl);
    const double t23h = 0x1.5555555555555p-1, t23l = 0x1.5555555555555p-55;
    const double bh = t23h * ch, bl = fma(t23h, ch, -bh) + (t23h * cl + t23l * ch);
    /* s^5 (2/5 + 2/7 z + ... + 2/23 z^9); the next term is < 2^-66 |log m| */
    const double z = zh, z2 = z * z, z4 = z2 * z2;
    const double r = (0.4 + z * (2.0 / 7)) + z2 * ((2.0 / 9) + z * (2.0 / 11))
                     + z4 * (((2.0 / 13) + z * (2.0 / 15)) + z2 * ((2.0 / 17) + z * (2.0 / 19))
                             + z4 * ((2.0 / 21) + z * (2.0 / 23)));
    const double c5 = ch * zh * r;
    /* k ln2 + 2s + bh, the large parts, by two exact sums */
    const double ln2h = 0x1.62e42fefa3800p-1, ln2l = 0x1.ef35793c76730p-45;
    const double s2 = 2.0 * s;
    const double a1 = s2 + bh, e1 = (s2 - a1) + bh;          /* |2s| >= |bh| */
    const double kh = kd * ln2h;                              /* exact: ln2h has 43 bits */
    const double a2 = kh + a1, bb = a2 - kh, e2 = (kh - (a2 - bb)) + (a1 - bb);
    const double tail = (e1 + e2) + (((2.0 * sl + bl) + c5) + kd * ln2l);
    const double hi = a2 + tail;
    *lo = (a2 - hi) + tail;
    return hi;
}

/* float64 log x for x positive, normal and finite: fdlibm's e_log.c made
 * branch-free, k ln2_hi + (f - f^2/2) summed error-free (fma, Fast2Sum) and
 * the rest, s (f^2/2 + R(s^2)) + k ln2_lo, added to the low part.  Within
 * 1 ulp; equal to glibc's log (correctly rounded) but on about 0.35 % of
 * inputs, as NumPy's AVX-512 loop is but on 0.4 %.  2.4x the speed of
 * pyet_log_dd's double-double, whose extra bits only pow needs. */
PYET_INLINE double pyet_log_fd(double x)
{
    const uint64_t u = pyet_d2bits(x);
    const uint64_t top = (u - 0x3fe6a09e667f3bcdull) & 0xfff0000000000000ull;
    const double k = pyet_bits2d(0x4330000000000000ull | (((top >> 52) + 2048) & 4095))
                     - (0x1p52 + 2048.0);                     /* as pyet_log_dd's kd */
    const double f = pyet_bits2d(u - top) - 1.0;
    const double sv = f / (2.0 + f), z = sv * sv, w = z * z;
    const double t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01
                      + w * 1.531383769920937332e-01));
    const double t2 = z * (6.666666666666735130e-01 + w * (2.857142874366239149e-01
                      + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
    const double hfsq = 0.5 * f * f, hl = fma(0.5 * f, f, -hfsq);  /* f^2/2 = hfsq + hl */
    const double a = f - hfsq, ae = (f - a) - hfsq;              /* |f| >= hfsq */
    const double kh = k * 6.93147180369123816490e-01;            /* exact: ln2_hi has 33 bits */
    const double b = kh + a, be = (kh - b) + a;                  /* |kh| >= |a| or k = 0 */
    const double tail = (ae - hl) + sv * (hfsq + (t2 + t1)) + k * 1.90821492927058770002e-10;
    return b + (be + tail);
}

/* log x; zero, negative, subnormal, inf and nan lanes are slow (libm) */
PYET_INLINE double pyet_log_lane(double x, unsigned char *slow)
{
    const uint64_t u = pyet_d2bits(x);
    const int sl = u - 0x0010000000000000ull >= 0x7fe0000000000000ull;
    *slow = (unsigned char)sl;
    return pyet_log_fd(sl ? 1.0 : x);
}

/* x ** y; slow (libm's pow) unless x is positive, normal and finite, y is
 * finite and |y log x| <= bound (708 for float64, 87 for float32: the result
 * is normal) */
PYET_INLINE double pyet_pow_lane(double x, double y, double bound, unsigned char *slow)
{
    const uint64_t ux = pyet_d2bits(x), uy = pyet_d2bits(y);
    const int sl0 = (ux - 0x0010000000000000ull >= 0x7fe0000000000000ull)
                    | ((uy & 0x7fffffffffffffffull) >= 0x7ff0000000000000ull);
    const double ys = sl0 ? 0.0 : y;
    double ll;
    const double lh = pyet_log_dd(sl0 ? 1.0 : x, &ll);
    const double th = ys * lh, tl = fma(ys, lh, -th) + ys * ll;
    /* one comparison: two, -ftrapping-math keeps as branches */
    const int sl = sl0 | (fabs(th) > bound);
    *slow = (unsigned char)sl;
    /* exp(th + tl) = 2^n exp(r + c): r = th - n ln2 (its rounding error goes
     * to c); exp(r) = 1 + r + r^2/2 + r^3 q(r), q to r^11/14!, summed in
     * double-double; exp(r + c) = exp(r) (1 + c).  Within about 0.01 ulp
     * before the last rounding: correctly rounded but for near-ties. */
    const double x0 = sl ? 0.0 : th;
    const double t = x0 * 1.4426950408889634 + 0x1.8p52, n = t - 0x1.8p52;
    const double r1 = x0 - n * 6.93147180369123816490e-01;   /* exact */
    const double r2 = n * 1.90821492927058770002e-10;
    const double r = r1 - r2, c = (((r1 - r) - r2) + (sl ? 0.0 : tl));
    const double hh = r * r, hl = fma(r, r, -hh), h4 = hh * hh;
    const double d0 = 1.0 / 6 + r * (1.0 / 24), d1 = 1.0 / 120 + r * (1.0 / 720);
    const double d2 = 1.0 / 5040 + r * (1.0 / 40320), d3 = 1.0 / 362880 + r * (1.0 / 3628800);
    const double d4 = 1.0 / 39916800 + r * (1.0 / 479001600);
    const double d5 = 1.0 / 6227020800.0 + r * (1.0 / 87178291200.0);
    const double q = (d0 + hh * d1) + h4 * ((d2 + hh * d3) + h4 * (d4 + hh * d5));
    const double w = (r * hh) * q, h2 = 0.5 * hh;
    const double s1 = r + h2, e1 = (r - s1) + h2;      /* |r| >= r^2/2 */
    const double s2 = s1 + w, e2 = (s1 - s2) + w;      /* |s1| >= |w| */
    const double b = 1.0 + s2, be = (1.0 - b) + s2;    /* 1 >= |s2| */
    const double p = b + (((be + e2) + (e1 + 0.5 * hl)) + b * c);
    return p * pyet_bits2d((pyet_d2bits(t) + 1023) << 52);  /* 2^n */
}

/* log x in double alone (fdlibm's polynomial, within 1 ulp), for float32 pow */
PYET_INLINE double pyet_log_d(double x)
{
    const uint64_t u = pyet_d2bits(x);
    const uint64_t top = (u - 0x3fe6a09e667f3bcdull) & 0xfff0000000000000ull;
    const double kd = pyet_bits2d(0x4330000000000000ull | (((top >> 52) + 2048) & 4095))
                      - (0x1p52 + 2048.0);
    const double f = pyet_bits2d(u - top) - 1.0;
    return pyet_log_poly(kd, f);
}

/* float32 x ** y (x, y widened) on CPUs without AVX-512 (pyet_powf_avx512
 * has the fast one): exp(y log x) in plain double, within about
 * 2^-45 of x ** y for |y log x| <= 87, so rounded to float correctly but for
 * near-ties.  Slow lanes are sanitized by masking bits: with selects, gcc
 * folds log(1) and splits the lane into branches, which do not vectorize. */
PYET_INLINE double pyet_powf_lane(double x, double y, unsigned char *slow)
{
    const uint64_t ux = pyet_d2bits(x), uy = pyet_d2bits(y);
    const int sl0 = (ux - 0x0010000000000000ull >= 0x7fe0000000000000ull)
                    | ((uy & 0x7fffffffffffffffull) >= 0x7ff0000000000000ull);
    const uint64_t msk = (uint64_t)0 - (uint64_t)sl0;
    const double t = pyet_bits2d(uy & ~msk)
                     * pyet_log_d(pyet_bits2d((ux & ~msk) | (0x3ff0000000000000ull & msk)));
    const int sl = sl0 | (fabs(t) > 87.0);
    *slow = (unsigned char)sl;
    double n, tt;
    const double r = pyet_exp_reduce(sl ? 0.0 : t, &n, &tt);
    return pyet_exp_poly(r) * pyet_bits2d((pyet_d2bits(tt) + 1023) << 52);
}

#define PYET_POW_CHUNK 256

/* out = x ** y (or log x), a chunk at a time: the operands widened to
 * double, the vector loop, then libm's function on the slow lanes (its
 * values and flags: the vector loop sees only sanitized lanes, so raises no
 * flag of its own), then the narrowing store.  Separate simple loops:
 * gcc vectorizes none of them fused (narrowing after selects) or split per
 * scalar case (it merges those into one loop with masked loads).  The
 * chunk buffers let out be an input's block. */
#define PYET_POW_KERNEL(T, LANE, LIBM)                                      \
    do {                                                                    \
        const T *A_ = (const T *)in[0], *B_ = (const T *)in[1];             \
        T *O_ = (T *)out;                                                   \
        double xd[PYET_POW_CHUNK], yd[PYET_POW_CHUNK], od[PYET_POW_CHUNK];  \
        unsigned char slw[PYET_POW_CHUNK];                                  \
        if (sflags & 1)                                                     \
            for (int j = 0; j < PYET_POW_CHUNK; j++) xd[j] = (double)A_[0]; \
        if (sflags & 2)                                                     \
            for (int j = 0; j < PYET_POW_CHUNK; j++) yd[j] = (double)B_[0]; \
        for (pyet_intp i0 = 0; i0 < n; i0 += PYET_POW_CHUNK) {              \
            const int m = n - i0 < PYET_POW_CHUNK ? (int)(n - i0) : PYET_POW_CHUNK; \
            const T *a_ = A_ + i0, *b_ = B_ + i0;                           \
            if (!(sflags & 1))                                              \
                PYET_IVDEP for (int j = 0; j < m; j++) xd[j] = (double)a_[j]; \
            if (!(sflags & 2))                                              \
                PYET_IVDEP for (int j = 0; j < m; j++) yd[j] = (double)b_[j]; \
            int slow = 0;                                                   \
            PYET_IVDEP for (int j = 0; j < m; j++) {                        \
                od[j] = LANE(xd[j], yd[j], &slw[j]);                        \
                slow |= slw[j];                                             \
            }                                                               \
            if (slow) {                                                     \
                for (int j = 0; j < m; j++)                                 \
                    if (slw[j]) od[j] = (double)LIBM((T)xd[j], (T)yd[j]);   \
            }                                                               \
            PYET_IVDEP for (int j = 0; j < m; j++) O_[i0 + j] = (T)od[j];   \
        }                                                                   \
    } while (0)

#define PYET_POW_LANE64(x, y, slow) pyet_pow_lane(x, y, 708.0, slow)
#define PYET_POW_LANE32(x, y, slow) pyet_powf_lane(x, y, slow)

/* float pow and float64 log (op OP_power or OP_log, dt DT_F32 or DT_F64) */
PYET_DISPATCH_WIDE static int pyet_kernel_pow(int op, int dt, int sflags, pyet_intp n,
                                              void *out, void *const *in)
{
    if (n == 0) return 1;
    if (op == OP_log) {
        /* one loop, as the float32 ones (PYET_TRIG_LOOP): pow's copies in and
         * out of double chunks cost log 1.7x */
        const double *X_ = (const double *)in[0];
        double *O_ = (double *)out, tmp[PYET_POW_CHUNK];
        if (sflags & 1) {
            const double v = log(X_[0]);
            for (pyet_intp i = 0; i < n; i++) O_[i] = v;
            return 1;
        }
        for (pyet_intp i0 = 0; i0 < n; i0 += PYET_POW_CHUNK) {
            const int m = n - i0 < PYET_POW_CHUNK ? (int)(n - i0) : PYET_POW_CHUNK;
            const double *x_ = X_ + i0;
            int slow = 0;
            PYET_IVDEP for (int j = 0; j < m; j++) {
                unsigned char sl;
                tmp[j] = pyet_log_lane(x_[j], &sl);
                slow |= sl;
            }
            if (slow) {
                for (int j = 0; j < m; j++)
                    if (pyet_d2bits(x_[j]) - 0x0010000000000000ull >= 0x7fe0000000000000ull)
                        tmp[j] = log(x_[j]);
            }
            memcpy(O_ + i0, tmp, (size_t)m * sizeof(double));
        }
    } else if (dt == DT_F64) {
        PYET_POW_KERNEL(double, PYET_POW_LANE64, pow);
    } else {
        PYET_POW_KERNEL(float, PYET_POW_LANE32, powf);
    }
    return 1;
}

/* float32 x ** y for a small integer y (3..8, -6..-2): x^|y| in double by
 * multiplications, one of them rounded for |y| <= 4 and two above (so the
 * result is correctly rounded but for near-ties), then 1/ for y < 0.  For
 * |y| <= 6 no double product of floats overflows or underflows (|x|^6 is in
 * [2^-894, 2^768]): the narrowing raises the flags libm's powf would
 * (overflow, underflow; divide for 0 ** -k), as it does for y = 7, 8, where a
 * double overflow or underflow means the float result does too. */
PYET_INLINE int pyet_powf_small_int(int sflags, pyet_intp n, void *const *in)
{
    if ((sflags & 3) != 2) return 0;
    const float y = *(const float *)in[1];
    return (y >= 3.0f && y <= 8.0f && y == (float)(int)y)
           || (y >= -6.0f && y <= -2.0f && y == (float)(int)y) ? (int)y : 0;
}

#define PYET_POWI_LOOP(EXPR)                                                \
    PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                          \
        const double x = (double)X_[i], x2 = x * x;                         \
        O_[i] = (float)(EXPR);                                              \
    }                                                                       \
    break

PYET_DISPATCH_WIDE static int pyet_kernel_powi_f32(int k, pyet_intp n, void *out,
                                                  void *const *in)
{
    const float *X_ = (const float *)in[0];
    float *O_ = (float *)out;
    switch (k) {
    case 3: PYET_POWI_LOOP(x2 * x);
    case 4: PYET_POWI_LOOP(x2 * x2);
    case 5: PYET_POWI_LOOP((x2 * x2) * x);
    case 6: PYET_POWI_LOOP((x2 * x2) * x2);
    case 7: PYET_POWI_LOOP((x2 * x2) * (x2 * x));
    case 8: PYET_POWI_LOOP((x2 * x2) * (x2 * x2));
    case -2: PYET_POWI_LOOP(1.0 / x2);
    case -3: PYET_POWI_LOOP(1.0 / (x2 * x));
    case -4: PYET_POWI_LOOP(1.0 / (x2 * x2));
    case -5: PYET_POWI_LOOP(1.0 / ((x2 * x2) * x));
    case -6: PYET_POWI_LOOP(1.0 / ((x2 * x2) * x2));
    default: return 0;
    }
    return 1;
}
#undef PYET_POWI_LOOP

/* float32 x ** y with AVX-512 (where the CPU has it): 16 floats a step, the
 * arithmetic in two halves of 8 doubles, tables held in registers (vpermt2pd:
 * a 16-entry lookup in one instruction, where gcc's vectorized table loads
 * would be gathers).  As ARM's optimized-routines powf, with longer
 * polynomials: log2 x = k + log2 c + log2(1 + r), r = z/c - 1, x = 2^k z,
 * z in [0.699, 1.398) split into 16 intervals by 4 mantissa bits, c near
 * each one's centre (c = 1 on the one holding 1, so r = z - 1 there, exact,
 * and log2 x keeps its relative accuracy near x = 1), |r| < 0.0297,
 * log2(1 + r) = r P(r), P of degree 5 fitted for relative error 2^-38.3;
 * t = y log2 x; 2^t = 2^(j/16) 2^(n/16 - j/16) (1 + s Q(s)), s = t - n/16,
 * |s| <= 1/32, Q of degree 3 (2^-38.5).  The result before its rounding to
 * float is within 2^-35 of x ** y for |t| < 8 (2^-31 at |t| = 150): within
 * 1 ulp of the correctly rounded float, and equal to it but on about 2e-5 of
 * inputs (checked against float64 pow over 2^22 each of random, edge-of-range
 * and near-1 inputs).  t is clamped to +-200, where the double 2^t is still
 * normal: overflowing and underflowing results round once, narrowing from
 * double, and raise overflow and underflow there.  Lanes with x not
 * positive, normal and finite or y not finite are slow: libm's powf (its
 * values and flags); the vector arithmetic sees 1 ** 0 on them. */
#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(PYET_NO_DISPATCH)
#define PYET_POWF_AVX512 1
#include <immintrin.h>

static const double pyet_powf_invc[16] __attribute__((aligned(64))) = {
    0x1.661ec79f8f3bep+0, 0x1.571ed4aaf883dp+0, 0x1.49539f0f010b0p+0, 0x1.3c995b0b80385p+0,
    0x1.30d190c8864a5p+0, 0x1.25e227b0b8ea0p+0, 0x1.1bb4a4a1a343fp+0, 0x1.12358f08ae5bap+0,
    0x1.0953f419900a7p+0, 0x1.0000000000000p+0, 0x1.e573ae5c66190p-1, 0x1.ca4b31f026aa0p-1,
    0x1.b2036576afce6p-1, 0x1.9c2d163a1aa2dp-1, 0x1.886e6037841edp-1, 0x1.767dcf5534862p-1};
/* -log2(invc) */
static const double pyet_powf_logc[16] __attribute__((aligned(64))) = {
    -0x1.efec65b963019p-2, -0x1.b0b6832d4fca4p-2, -0x1.7418b0a1fb77bp-2, -0x1.39de91a6dcf7bp-2,
    -0x1.01d9bf3f2b631p-2, -0x1.97c1d1b3b7af0p-3, -0x1.2f9e393af3c9fp-3, -0x1.960cbbf788d5cp-4,
    -0x1.a6f9db6475fcep-5, 0.0, 0x1.3aa2e7ef9fe13p-4, 0x1.476a9543891bap-3,
    0x1.e840b4ac4e4d2p-3, 0x1.40645f0c6651cp-2, 0x1.88e9c2c1b9ff8p-2, 0x1.ce0a44eb17bccp-2};
/* bits of 2^(j/16) less j << 48, so adding n << 48 (n = t*16 rounded) gives 2^(n/16) */
static const uint64_t pyet_powf_exp2t[16] __attribute__((aligned(64))) = {
    0x3ff0000000000000ull, 0x3fefb5586cf9890full, 0x3fef72b83c7d517bull, 0x3fef387a6e756238ull,
    0x3fef06fe0a31b715ull, 0x3feedea64c123422ull, 0x3feebfdad5362a27ull, 0x3feeab07dd485429ull,
    0x3feea09e667f3bcdull, 0x3feea11473eb0187ull, 0x3feeace5422aa0dbull, 0x3feec49182a3f090ull,
    0x3feee89f995ad3adull, 0x3fef199bdd85529cull, 0x3fef5818dcfba487ull, 0x3fefa4afa2a490daull};

#define PYET_AVX512 __attribute__((target("avx512f,avx512dq")))

/* 8 lanes: z, k, the table index (as int32) and y -> x ** y in double */
PYET_AVX512 static inline __attribute__((always_inline)) __m512d
pyet_powf_half(__m256 zf, __m256i kf, __m256i jf, __m512d y)
{
    const __m512i j = _mm512_cvtepu32_epi64(jf);
    const __m512d invc = _mm512_permutex2var_pd(_mm512_load_pd(pyet_powf_invc), j,
                                                _mm512_load_pd(pyet_powf_invc + 8));
    const __m512d logc = _mm512_permutex2var_pd(_mm512_load_pd(pyet_powf_logc), j,
                                                _mm512_load_pd(pyet_powf_logc + 8));
    const __m512d r = _mm512_fmsub_pd(_mm512_cvtps_pd(zf), invc, _mm512_set1_pd(1.0));
    __m512d p = _mm512_fmadd_pd(_mm512_set1_pd(-0x1.ed020194172a2p-3), r,
                                _mm512_set1_pd(0x1.27bdf94bb0f92p-2));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(-0x1.71546e26d6553p-2));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0x1.ec7097c2f33aep-2));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(-0x1.71547652d5937p-1));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0x1.71547652bcfbfp+0));
    const __m512d l = _mm512_fmadd_pd(r, p, _mm512_add_pd(logc, _mm512_cvtepi32_pd(kf)));
    /* vrangepd: the one of t and 200 smaller in magnitude, with t's sign */
    const __m512d t = _mm512_range_pd(_mm512_mul_pd(y, l), _mm512_set1_pd(200.0), 0x2);
    /* n = 16 t rounded, in the low bits of ki; s = t - n/16 by vreducepd */
    const __m512i ki = _mm512_castpd_si512(_mm512_add_pd(t, _mm512_set1_pd(0x1.8p48)));
    const __m512d s = _mm512_reduce_pd(t, 4 << 4);
    const __m512d sc = _mm512_castsi512_pd(_mm512_add_epi64(
        _mm512_permutex2var_epi64(_mm512_load_si512(pyet_powf_exp2t), ki,
                                  _mm512_load_si512(pyet_powf_exp2t + 8)),
        _mm512_slli_epi64(ki, 48)));
    __m512d q = _mm512_fmadd_pd(_mm512_set1_pd(0x1.3b2c7b3b69730p-7), s,
                                _mm512_set1_pd(0x1.c6b3f746e47f6p-5));
    q = _mm512_fmadd_pd(q, s, _mm512_set1_pd(0x1.ebfbdff5f70a5p-3));
    q = _mm512_fmadd_pd(q, s, _mm512_set1_pd(0x1.62e42fec39c74p-1));
    return _mm512_fmadd_pd(_mm512_mul_pd(sc, s), q, sc);
}

/* FY: y is a scalar (loop-invariant: no loads, checks or conversions of it) */
#define PYET_POWF_STEP(FY)                                                  \
    do {                                                                    \
        const __mmask16 lm = n - i >= 16 ? (__mmask16)0xffff                \
                                         : (__mmask16)((1u << (n - i)) - 1); \
        const __m512 x = (sflags & 1) ? xb : _mm512_maskz_loadu_ps(lm, X_ + i); \
        const __m512 y = FY ? yb : _mm512_maskz_loadu_ps(lm, Y_ + i);       \
        __m512i ix = _mm512_castps_si512(x);                                \
        /* slow: x zero, subnormal, negative, inf or nan; y inf or nan */   \
        __mmask16 sl = _mm512_fpclass_ps_mask(x, 0xff);                     \
        if (!FY) sl |= _mm512_fpclass_ps_mask(y, 0x99);                     \
        __m512 ys = y;                                                      \
        if (sl) {  /* rare: no blends on the common path */                 \
            ix = _mm512_mask_mov_epi32(ix, sl, _mm512_set1_epi32(0x3f800000)); \
            if (!FY) ys = _mm512_mask_mov_ps(y, sl, _mm512_setzero_ps());   \
        }                                                                   \
        /* x = 2^k z, z in [0x3f330000, 0x3fb30000) as bits */              \
        const __m512i tmp = _mm512_sub_epi32(ix, _mm512_set1_epi32(0x3f330000)); \
        const __m512i jj = _mm512_srli_epi32(tmp, 19);  /* 4 bits kept by vpermt2pd */ \
        const __m512i top = _mm512_and_si512(tmp, _mm512_set1_epi32((int)0xff800000u)); \
        const __m512i k = _mm512_srai_epi32(top, 23);                       \
        const __m512 z = _mm512_castsi512_ps(_mm512_sub_epi32(ix, top));    \
        const __m512d r0 = pyet_powf_half(                                  \
            _mm512_castps512_ps256(z), _mm512_castsi512_si256(k), _mm512_castsi512_si256(jj), \
            FY ? yd : _mm512_cvtps_pd(_mm512_castps512_ps256(ys)));         \
        const __m512d r1 = pyet_powf_half(                                  \
            _mm512_extractf32x8_ps(z, 1), _mm512_extracti32x8_epi32(k, 1), \
            _mm512_extracti32x8_epi32(jj, 1),                               \
            FY ? yd : _mm512_cvtps_pd(_mm512_extractf32x8_ps(ys, 1)));      \
        __m512 res = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(r0)), \
                                        _mm512_cvtpd_ps(r1), 1);            \
        sl &= lm;                                                           \
        if (sl) {                                                           \
            float xs[16], ysl[16], rs[16];                                  \
            _mm512_storeu_ps(xs, x);                                        \
            _mm512_storeu_ps(ysl, y);                                       \
            _mm512_storeu_ps(rs, res);                                      \
            for (int j = 0; j < 16; j++)                                    \
                if ((sl >> j) & 1) rs[j] = powf(xs[j], ysl[j]);             \
            res = _mm512_loadu_ps(rs);                                      \
        }                                                                   \
        _mm512_mask_storeu_ps(O_ + i, lm, res);                             \
    } while (0)

PYET_AVX512 static void pyet_powf_avx512(int sflags, pyet_intp n, void *out, void *const *in)
{
    const float *X_ = (const float *)in[0], *Y_ = (const float *)in[1];
    float *O_ = (float *)out;
    const __m512 xb = _mm512_set1_ps(X_[0]), yb = _mm512_set1_ps(Y_[0]);
    const __m512d yd = _mm512_set1_pd((double)Y_[0]);
    if ((sflags & 2) && !isfinite(Y_[0])) {  /* every lane slow */
        const float y = Y_[0];
        for (pyet_intp i = 0; i < n; i++) O_[i] = powf(X_[(sflags & 1) ? 0 : i], y);
        return;
    }
    if (sflags & 2) {
        for (pyet_intp i = 0; i < n; i += 16) PYET_POWF_STEP(1);
    } else {
        for (pyet_intp i = 0; i < n; i += 16) PYET_POWF_STEP(0);
    }
}
#undef PYET_POWF_STEP

/* float64 exp at AVX-512 (8 lanes, FMA, tables in registers), where
 * pyet_exp's gcc-vectorized loop ran at 1.8x NumPy's own AVX-512 exp.  As
 * Tang's table-driven method: k = x 16/ln2 rounded, r = x - k ln2/16 (fma:
 * the first step exact), exp(x) = 2^(k/16) (1 + t_j)(1 + p(r)), j = k mod 16,
 * 2^(j/16) from pyet_powf_exp2t (vpermt2pd) and t_j its rounding error
 * relative to it, p the degree-7 Taylor polynomial of exp(r) - 1 on
 * |r| <= ln2/32 (truncation under 2^-59): within 0.52 ulp of exp(x).
 * Lanes with |x| > 708 (near overflow, subnormal or zero results, inf,
 * NaN) take libm's exp (its values and flags), but NaNs, which are quieted
 * without a flag, and inf and -inf, exact, as NumPy's.  Those lanes and
 * |x| < 2^-54, whose result is 1, see x = 0 in the vector arithmetic, so
 * r * r cannot underflow. */
#define PYET_EXP_AVX512 1

static const double pyet_exp_tail[16] __attribute__((aligned(64))) = {
    0x0.0p+0, 0x1.79aa65d837b6dp-54, -0x1.01b15eaa59348p-55, 0x1.68efde3a8a894p-54,
    0x1.34d754db0abb6p-55, 0x1.59f48a72a4c6dp-55, 0x1.690cebb7aafb0p-56, 0x1.063e1e21c5409p-54,
    -0x1.3b3efbf5e2228p-54, -0x1.b32dcb94da51dp-56, 0x1.db72fc1f0eab4p-55, 0x1.1affc2b91ce27p-56,
    0x1.c1a7792cb3387p-55, 0x1.36eae30af0cb3p-56, 0x1.4a385a63d07a7p-56, -0x1.ff7128fd391f0p-55};

/* res with the lanes of m replaced by f of x's: the arguments a vector
 * path does not cover, one at a time (libm's values and flags) */
PYET_AVX512 static inline __m512d pyet_lanes_by(__m512d res, __m512d x, __mmask8 m,
                                                double (*f)(double))
{
    double xs[8], rs[8];
    _mm512_storeu_pd(xs, x);
    _mm512_storeu_pd(rs, res);
    for (int j = 0; j < 8; j++)
        if ((m >> j) & 1) rs[j] = f(xs[j]);
    return _mm512_loadu_pd(rs);
}

/* the lanes of x outside the vector path's range, one at a time */
PYET_INLINE double pyet_exp_special(double x)
{
    const uint64_t u = pyet_d2bits(x);
    if ((u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull)  /* NaN: quieted, no flag */
        return pyet_bits2d(u | 0x0008000000000000ull);
    if (u == 0x7ff0000000000000ull) return x;
    if (u == 0xfff0000000000000ull) return 0.0;
    return exp(x);
}

/* exp of 8 lanes (lm: those loaded) */
PYET_AVX512 static inline __attribute__((always_inline)) __m512d
pyet_exp8_avx512(__m512d x, __mmask8 lm)
{
    /* |x| as bits - 2^-54's, unsigned: at most 708's - 2^-54's in the vector path's range */
    const __m512d ax = _mm512_abs_pd(x);
    const __mmask8 out_ = _mm512_cmpgt_epu64_mask(
        _mm512_sub_epi64(_mm512_castpd_si512(ax), _mm512_set1_epi64(0x3c90000000000000ll)),
        _mm512_set1_epi64(0x4086200000000000ll - 0x3c90000000000000ll));
    __mmask8 sl = 0;
    __m512d xv = x;
    if (out_) {  /* rare: no blends on the common path */
        sl = _mm512_cmp_pd_mask(ax, _mm512_set1_pd(708.0), _CMP_NLE_UQ) & lm;
        xv = _mm512_mask_mov_pd(x, out_, _mm512_setzero_pd());
    }
    const __m512d z = _mm512_fmadd_pd(xv, _mm512_set1_pd(0x1.71547652b82fep+4),
                                      _mm512_set1_pd(0x1.8p52));
    const __m512i ki = _mm512_castpd_si512(z);  /* k in the low bits */
    const __m512d kd = _mm512_sub_pd(z, _mm512_set1_pd(0x1.8p52));
    __m512d r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(0x1.62e42fefa39efp-5), xv);
    r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(0x1.abc9e3b39803fp-60), r);
    const __m512d sc = _mm512_castsi512_pd(_mm512_add_epi64(
        _mm512_permutex2var_epi64(_mm512_load_si512(pyet_powf_exp2t), ki,
                                  _mm512_load_si512(pyet_powf_exp2t + 8)),
        _mm512_slli_epi64(ki, 48)));
    const __m512d tl = _mm512_permutex2var_pd(_mm512_load_pd(pyet_exp_tail), ki,
                                              _mm512_load_pd(pyet_exp_tail + 8));
    /* p = r + r^2 (c2 + c3 r + ... + c7 r^5), Estrin's scheme */
    const __m512d r2 = _mm512_mul_pd(r, r), r4 = _mm512_mul_pd(r2, r2);
    const __m512d a = _mm512_fmadd_pd(r, _mm512_set1_pd(0x1.5555555555555p-3),
                                      _mm512_set1_pd(0.5));
    const __m512d b = _mm512_fmadd_pd(r, _mm512_set1_pd(0x1.1111111111111p-7),
                                      _mm512_set1_pd(0x1.5555555555555p-5));
    const __m512d c = _mm512_fmadd_pd(r, _mm512_set1_pd(0x1.a01a01a01a01ap-13),
                                      _mm512_set1_pd(0x1.6c16c16c16c17p-10));
    const __m512d q = _mm512_fmadd_pd(r4, c, _mm512_fmadd_pd(r2, b, a));
    const __m512d p = _mm512_fmadd_pd(r2, q, _mm512_add_pd(r, tl));
    __m512d res = _mm512_fmadd_pd(sc, p, sc);
    if (sl) res = pyet_lanes_by(res, x, sl, pyet_exp_special);
    return res;
}

/* float32 tanh at AVX-512 without a division (NumPy's AVX-512 loop is built
 * alike): |x| (clamped to 10, where tanh rounds to 1) falls in one of 31
 * intervals, [0, 2^-4) then four per octave up to [10, 12) (4 bits of the
 * float: the index and the interval's start a_j by shifts and masks), and
 * tanh |x| = b + (t P(t) + c0l), t = |x| - a_j, P of degree 4 from tables
 * held in registers (vpermt2ps: a 32-entry lookup), b + c0l = tanh(a_j) in
 * two floats, or b = t, c0l = 0 on [0, 2^-4) (P there fits (tanh t - t)/t:
 * tanh t keeps its relative accuracy down to subnormal t).  The fits are
 * within 2^-26.1 relative (pyet/_kernels/gen_tanh32.py makes them): within
 * 0.73 ulp of tanh (every 7th float below 12), 1 ulp of the correctly
 * rounded float (every float; tests/test_transcendental_avx512.py).  The
 * division-based kernel it replaces ran at 1.37x NumPy's time, this one at
 * 1.06x (262144 and 65536 elements, one thread; NumPy's is as fast per
 * element, pyet's call overhead is the rest).  NaN passes through the clamp
 * and t; inf clamps to 10;
 * the sign is x's (tanh(-0) = -0). */
static const float pyet_tanhf_tab[7][32] __attribute__((aligned(64))) = {
   {0.0f, 0x1.ff559ap-5f, 0x1.3f59bep-4f, 0x1.7ee102p-4f,
    0x1.be38d8p-4f, 0x1.fd5992p-4f, 0x1.3d6bc8p-3f, 0x1.7b8ffap-3f,
    0x1.b8fd04p-3f, 0x1.f597eap-3f, 0x1.35f98ap-2f, 0x1.6ef53ep-2f,
    0x1.a5729ep-2f, 0x1.d9353ep-2f, 0x1.1bf47ep-1f, 0x1.45323ep-1f,
    0x1.686650p-1f, 0x1.85efacp-1f, 0x1.b2523cp-1f, 0x1.cf6f98p-1f,
    0x1.e1fbfap-1f, 0x1.ed9506p-1f, 0x1.f92582p-1f, 0x1.fd77d2p-1f,
    0x1.ff112cp-1f, 0x1.ffa818p-1f, 0x1.fff41ap-1f, 0x1.fffe64p-1f,
    0x1.ffffc8p-1f, 0x1.fffff8p-1f, 0x1.000000p+0f, 0.0f},
   {-0x1.2edfc2p-36f, 0x1.fe0154p-1f, 0x1.fce33ep-1f, 0x1.fb86b8p-1f,
    0x1.f9ec6cp-1f, 0x1.f81526p-1f, 0x1.f3b360p-1f, 0x1.ee69e4p-1f,
    0x1.e842cap-1f, 0x1.e149a0p-1f, 0x1.d11574p-1f, 0x1.be3fbap-1f,
    0x1.a945bap-1f, 0x1.92a946p-1f, 0x1.6284c2p-1f, 0x1.3173b2p-1f,
    0x1.02500ap-1f, 0x1.ae0ddep-2f, 0x1.1f2526p-2f, 0x1.721660p-3f,
    0x1.d22ca6p-4f, 0x1.216230p-4f, 0x1.b3ae02p-6f, 0x1.43489ep-7f,
    0x1.dd3524p-9f, 0x1.5f5adap-10f, 0x1.7c9ffcp-13f, 0x1.9c20c6p-16f,
    0x1.be355ap-19f, 0x1.dfed22p-22f, 0.0f, 0.0f},
   {0x1.c6571cp-27f, -0x1.fd44acp-5f, -0x1.3d614ap-4f, -0x1.7b91c2p-4f,
    -0x1.b8f0e8p-4f, -0x1.f57e5cp-4f, -0x1.35cf0ap-3f, -0x1.6e89fep-3f,
    -0x1.a489aep-3f, -0x1.d7809ap-3f, -0x1.199162p-2f, -0x1.3fd440p-2f,
    -0x1.5e0f40p-2f, -0x1.742662p-2f, -0x1.893a9ap-2f, -0x1.8403eap-2f,
    -0x1.6ba7eep-2f, -0x1.478d4cp-2f, -0x1.e73178p-3f, -0x1.4efef8p-3f,
    -0x1.b6d96cp-4f, -0x1.16ea0ap-4f, -0x1.ada5bap-6f, -0x1.4180a4p-7f,
    -0x1.dc0cd8p-9f, -0x1.5cdafcp-10f, -0x1.7a1e08p-13f, -0x1.997136p-16f,
    -0x1.bb4e06p-19f, -0x1.c985d4p-22f, 0.0f, 0.0f},
   {-0x1.5555c0p-2f, -0x1.51a16ap-2f, -0x1.4e55dcp-2f, -0x1.47ee5ap-2f,
    -0x1.44a2c0p-2f, -0x1.4007cep-2f, -0x1.349258p-2f, -0x1.270ac0p-2f,
    -0x1.18668ap-2f, -0x1.073172p-2f, -0x1.c1eab0p-3f, -0x1.6e2572p-3f,
    -0x1.16d47ap-3f, -0x1.825c1ap-4f, -0x1.257a2ep-6f, 0x1.569d36p-5f,
    0x1.4f36b8p-4f, 0x1.aa4522p-4f, 0x1.bcdceap-4f, 0x1.682a40p-4f,
    0x1.01d018p-4f, 0x1.57dbeep-5f, 0x1.14f070p-6f, 0x1.a521fap-8f,
    0x1.399b22p-9f, 0x1.bc3d20p-11f, 0x1.e1e708p-14f, 0x1.04f134p-16f,
    0x1.1a8706p-19f, 0x1.ff6d2cp-23f, 0.0f, 0.0f},
   {0x1.098fb6p-14f, 0x1.36a32ep-3f, 0x1.1b08c6p-3f, -0x1.75aa42p-5f,
    0x1.b54aeep-6f, 0x1.096db8p-4f, 0x1.4055c2p-4f, 0x1.7b0c80p-4f,
    0x1.110628p-3f, 0x1.218776p-3f, 0x1.497c8ap-3f, 0x1.5fb59ap-3f,
    0x1.5be918p-3f, 0x1.557c7ap-3f, 0x1.1ca13ap-3f, 0x1.97b258p-4f,
    0x1.ecc63ap-5f, 0x1.8802d8p-6f, -0x1.ed5250p-7f, -0x1.a91564p-6f,
    -0x1.84887cp-6f, -0x1.1cd2bep-6f, -0x1.ef9cdap-8f, -0x1.82ba20p-9f,
    -0x1.22aa4cp-10f, -0x1.6b2aecp-12f, -0x1.8a5c28p-15f, -0x1.ab2354p-18f,
    -0x1.ce7ac0p-21f, -0x1.3f9fccp-24f, 0.0f, 0.0f},
   {0x1.0f49d0p-3f, -0x1.4eec4ep+1f, -0x1.042a24p+1f, 0x1.61b7f6p+1f,
    0x1.34184ep+0f, 0x1.32741cp-2f, 0x1.5c4116p-2f, 0x1.65632ap-2f,
    0x1.04c116p-7f, 0x1.bd1364p-5f, 0x1.532412p-6f, -0x1.67aebep-7f,
    -0x1.7f687cp-7f, -0x1.61d4a6p-5f, -0x1.fff728p-5f, -0x1.015beep-4f,
    -0x1.b7ed6ap-5f, -0x1.08ee0ep-5f, -0x1.3c47cap-7f, 0x1.5aedc4p-10f,
    0x1.2c8558p-8f, 0x1.05b866p-8f, 0x1.f95ba6p-10f, 0x1.96f742p-11f,
    0x1.353dc0p-12f, 0x1.231cbep-14f, 0x1.3c6bbep-17f, 0x1.56c40cp-20f,
    0x1.7321fcp-23f, 0x1.545f8ep-27f, 0.0f, 0.0f},
   {0.0f, -0x1.03f9e6p-30f, -0x1.836ef0p-29f, 0x1.1fec24p-30f,
    0x1.9a5ae0p-31f, 0x1.789706p-29f, -0x1.3bdcf6p-29f, -0x1.f88112p-28f,
    0x1.6a7c92p-31f, 0x1.a68722p-29f, 0x1.d4ca1cp-31f, -0x1.737050p-30f,
    0x1.c91006p-27f, -0x1.152ea2p-27f, 0x1.5771f2p-26f, 0x1.54bc8ap-27f,
    0x1.718402p-26f, -0x1.5d618ep-26f, -0x1.253484p-27f, -0x1.e482a2p-27f,
    -0x1.03995cp-26f, -0x1.e43c2cp-29f, 0x1.829c70p-27f, -0x1.dcbea0p-26f,
    0x1.8ea41ep-27f, -0x1.eebe98p-26f, -0x1.32e41ep-26f, -0x1.5076b2p-27f,
    0x1.93a878p-28f, 0x1.caa47ep-27f, 0.0f, 0.0f},
};

/* Item i of an operand: contiguous, or (strided, a constant where these
 * inline) at a step of ``stride`` bytes: full vectors by one scalar load per
 * lane (vgatherqpd and vgatherdps took 1.4x and 1.14x the time of float64
 * and float32 erf of a[::3], 1.4x float64 tanh's, on Zen 4), the last
 * partial one gathered from lanes' offsets vidx (masked lanes read
 * nothing): the kernels' strided variants (see pyet_kernel_strided) are
 * their loops with this load; the contiguous ones compile as before */
PYET_AVX512 static inline __attribute__((always_inline)) __m512
pyet_load16f(const char *p, pyet_intp i, pyet_intp stride, int strided, __mmask16 lm,
             __m512i vidx)
{
    if (!strided) return _mm512_maskz_loadu_ps(lm, (const float *)p + i);
    if (lm == 0xffff) {
        const char *q = p + i * stride;
        float v[16];
        for (int k = 0; k < 16; k++) memcpy(&v[k], q + k * stride, 4);
        return _mm512_setr_ps(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9],
                              v[10], v[11], v[12], v[13], v[14], v[15]);
    }
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), lm, vidx, p + i * stride, 1);
}

PYET_AVX512 static inline __attribute__((always_inline)) __m512d
pyet_load8d(const char *p, pyet_intp i, pyet_intp stride, int strided, __mmask8 lm,
            __m512i vidx)
{
    if (!strided) return _mm512_maskz_loadu_pd(lm, (const double *)p + i);
    if (lm == 0xff) {
        const char *q = p + i * stride;
        double v[8];
        for (int k = 0; k < 8; k++) memcpy(&v[k], q + k * stride, 8);
        return _mm512_setr_pd(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
    }
    return _mm512_mask_i64gather_pd(_mm512_setzero_pd(), lm, vidx, p + i * stride, 1);
}

/* The items before out's next 64-byte boundary (at most n): the strided
 * variants run them first, so that their other 512-bit stores do not split
 * cache lines (NumPy's large arrays start 16 bytes into a line; float32 sin
 * of a[::2] and a[::3] at 2^18: 1.06 -> 0.80x NumPy's time) */
PYET_INLINE pyet_intp pyet_head64(const void *out, int size, pyet_intp n)
{
    const pyet_intp m = (pyet_intp)(((uintptr_t)0 - (uintptr_t)out) & 63) / size;
    return m < n ? m : n;
}

PYET_AVX512 static inline __attribute__((always_inline)) __m512i pyet_lanes16(pyet_intp stride)
{
    return _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                                13, 14, 15), _mm512_set1_epi32((int)stride));
}

PYET_AVX512 static inline __attribute__((always_inline)) __m512i pyet_lanes8(pyet_intp stride)
{
    return _mm512_mullo_epi64(_mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7),
                              _mm512_set1_epi64((long long)stride));
}

PYET_AVX512 static inline __attribute__((always_inline)) void
pyet_tanhf_avx512_body(pyet_intp n, void *out, const void *in, pyet_intp stride, int strided)
{
    const char *X_ = (const char *)in;
    float *O_ = (float *)out;
    const __m512i vidx = pyet_lanes16(stride);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    const __m512 c0l = _mm512_load_ps(pyet_tanhf_tab[0]), c0h = _mm512_load_ps(pyet_tanhf_tab[0] + 16);
    const __m512 c1l = _mm512_load_ps(pyet_tanhf_tab[1]), c1h = _mm512_load_ps(pyet_tanhf_tab[1] + 16);
    const __m512 c2l = _mm512_load_ps(pyet_tanhf_tab[2]), c2h = _mm512_load_ps(pyet_tanhf_tab[2] + 16);
    const __m512 c3l = _mm512_load_ps(pyet_tanhf_tab[3]), c3h = _mm512_load_ps(pyet_tanhf_tab[3] + 16);
    const __m512 c4l = _mm512_load_ps(pyet_tanhf_tab[4]), c4h = _mm512_load_ps(pyet_tanhf_tab[4] + 16);
    const __m512 c5l = _mm512_load_ps(pyet_tanhf_tab[5]), c5h = _mm512_load_ps(pyet_tanhf_tab[5] + 16);
    const __m512 c6l = _mm512_load_ps(pyet_tanhf_tab[6]), c6h = _mm512_load_ps(pyet_tanhf_tab[6] + 16);
    for (pyet_intp i = 0; i < n; i += 16) {
        const __mmask16 lm = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512 x = pyet_load16f(X_, i, stride, strided, lm, vidx);
        /* min(|x|, 10), NaN kept (vminps returns its second operand; vrangeps
         * would give 10) */
        const __m512 a = _mm512_min_ps(_mm512_set1_ps(10.0f), _mm512_abs_ps(x));
        const __m512i ia = _mm512_castps_si512(a);
        const __mmask16 m = _mm512_cmpge_epi32_mask(ia, _mm512_set1_epi32(0x3d800000));
        /* j = ((bits - 2^-4's) >> 21) + 1, or 0; a_j = bits with the low 21 cleared, or 0 */
        const __m512i j = _mm512_maskz_srli_epi32(
            m, _mm512_sub_epi32(ia, _mm512_set1_epi32(0x3d600000)), 21);
        const __m512 aj = _mm512_castsi512_ps(
            _mm512_maskz_and_epi32(m, ia, _mm512_set1_epi32((int)0xffe00000u)));
        const __m512 t = _mm512_sub_ps(a, aj);  /* exact */
        __m512 p = _mm512_fmadd_ps(_mm512_permutex2var_ps(c5l, j, c5h), t,
                                   _mm512_permutex2var_ps(c4l, j, c4h));
        p = _mm512_fmadd_ps(p, t, _mm512_permutex2var_ps(c3l, j, c3h));
        p = _mm512_fmadd_ps(p, t, _mm512_permutex2var_ps(c2l, j, c2h));
        p = _mm512_fmadd_ps(p, t, _mm512_permutex2var_ps(c1l, j, c1h));
        const __m512 b = _mm512_mask_blend_ps(m, t, _mm512_permutex2var_ps(c0l, j, c0h));
        /* b + (t p + c0l): one rounding that counts */
        const __m512 v = _mm512_add_ps(b, _mm512_fmadd_ps(p, t, _mm512_permutex2var_ps(c6l, j, c6h)));
        /* copysign(v, x): sign ? x : v, bitwise */
        const __m512i res = _mm512_ternarylogic_epi32(sign, _mm512_castps_si512(v),
                                                      _mm512_castps_si512(x), 0xac);
        _mm512_mask_storeu_ps(O_ + i, lm, _mm512_castsi512_ps(res));
    }
}

/* A unary AVX-512 loop's two entries: contiguous, and strided (running to
 * the output's 64-byte boundary first, aligned stores after) */
#define PYET_AVX512_ENTRIES(NAME, T)                                                 \
PYET_AVX512 static void NAME(pyet_intp n, void *out, const void *in)                 \
{                                                                                    \
    NAME##_body(n, out, in, (pyet_intp)sizeof(T), 0);                                \
}                                                                                    \
PYET_AVX512 static void NAME##_strided(pyet_intp n, void *out, const void *in,       \
                                       pyet_intp stride)                             \
{                                                                                    \
    const pyet_intp h = pyet_head64(out, (int)sizeof(T), n);                         \
    if (h) NAME##_body(h, out, in, stride, 1);                                       \
    NAME##_body(n - h, (T *)out + h, (const char *)in + h * stride, stride, 1);      \
}

PYET_AVX512_ENTRIES(pyet_tanhf_avx512, float)

/* float32 exp at AVX-512 (the gcc-vectorized pyet_expf, without FMA, ran at
 * 1.1-1.38x NumPy's time, this at 0.64-0.69x): n = x/ln2 rounded, r = x - n ln2 (ln2 in two parts,
 * the first product exact by fma), |r| <= ln2/2, e^r = 1 + r (1 + r (1/2 +
 * ... + r^5/7!)) (truncation under 2^-27.5), 2^n by vscalefps, which rounds
 * overflowing and subnormal results once from that float (raising overflow
 * and underflow there).  Within 1 ulp of the correctly rounded float,
 * checked against float64 exp on every float in [-104, 89]
 * (tests/test_transcendental_avx512.py).  x is clamped to [-104, 89] (NaN
 * passes: max and min return their second operand); inf and -inf lanes,
 * rare, compute 0 and get inf and 0 (no flag, as NumPy's).  sigmoid and
 * logistic (fused s1/(s2 + exp(-x))) use it too, so they round as their
 * trees over it. */
PYET_AVX512 static inline __attribute__((always_inline)) __m512 pyet_exp16f_avx512(__m512 x)
{
    const __mmask16 inf = _mm512_fpclass_ps_mask(x, 0x18);
    __m512 xc = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
    if (inf) xc = _mm512_mask_mov_ps(xc, inf, _mm512_setzero_ps());
    const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(0x1.715476p+0f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0x1.62e4p-1f), xc);      /* exact */
    r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0x1.7f7d1cp-20f), r);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.0f / 5040), r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512 res = _mm512_scalef_ps(p, k);
    if (inf) res = _mm512_mask_mov_ps(res, inf, _mm512_max_ps(x, _mm512_setzero_ps()));
    return res;
}

/* op: OP_exp, OP_sigmoid or OP_logistic, as pyet_exp_avx512 */
PYET_AVX512 static void pyet_expf_avx512(int op, pyet_intp n, void *out, const void *in,
                                         float s1, float s2)
{
    const float *X_ = (const float *)in;
    float *O_ = (float *)out;
    const __m512 v1 = _mm512_set1_ps(s1), v2 = _mm512_set1_ps(s2);
    for (pyet_intp i = 0; i < n; i += 16) {
        const __mmask16 lm = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512 x = _mm512_maskz_loadu_ps(lm, X_ + i);
        __m512 res;
        if (op == OP_exp) {
            res = pyet_exp16f_avx512(x);
        } else {  /* masked: the lanes not loaded raise no flags */
            const __m512 e = pyet_exp16f_avx512(_mm512_castsi512_ps(
                _mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN))));
            res = _mm512_maskz_div_ps(lm, v1, _mm512_maskz_add_ps(lm, v2, e));
        }
        _mm512_mask_storeu_ps(O_ + i, lm, res);
    }
}

/* float32 sin and cos at AVX-512: pyet_sincosf_core and its wrapper
 * (PYET_TRIG_LOOP with PYET_SINCOSF_SLOW, PYET_SINF_FAST, PYET_COSF_FAST)
 * written in intrinsics, the same operations in the same order, so the same
 * bits (all 2^32 floats compared with that loop once; tests/test_f32_math_kernels.py
 * checks 1 ulp and the flags); stores
 * straight into out, slow lanes (|x| >= 2^20, inf, nan, tiny) fixed up by
 * pyet_sinf_np / pyet_cosf_np after the vector's store, from its copy of
 * x (out may be in's block).  Strided operands are gathered in the loop. */
PYET_AVX512 static inline __attribute__((always_inline)) void
pyet_sincosf_avx512_body(int want_cos, pyet_intp n, void *out, const void *in, pyet_intp stride)
{
    const int strided = 1;
    const char *X_ = (const char *)in;
    float *O_ = (float *)out;
    const __m512i vidx = pyet_lanes16(stride);
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), qc = _mm512_set1_epi32(want_cos);
    const __m512 big = _mm512_set1_ps(0x1.8p23f);
    float xs[16];
    for (pyet_intp i = 0; i < n; i += 16) {
        const __mmask16 lm = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512 x0 = pyet_load16f(X_, i, stride, strided, lm, vidx);
        const __m512i a = _mm512_and_si512(_mm512_castps_si512(x0), absm);
        const __mmask16 slow = (__mmask16)(
            _mm512_mask_cmpge_epu32_mask(lm, a, _mm512_set1_epi32(0x49800000))
            | _mm512_mask_cmplt_epu32_mask(lm, _mm512_sub_epi32(a, _mm512_set1_epi32(1)),
                                           _mm512_set1_epi32(0x209cc470)));
        const __mmask16 tiny = _mm512_cmplt_epu32_mask(a, _mm512_set1_epi32(0x39800000));
        const __m512 x = _mm512_mask_mov_ps(x0, (__mmask16)(slow | tiny), _mm512_setzero_ps());
        const __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.45f306p-1f), big);
        const __m512 nn = _mm512_sub_ps(t, big);
        const __m512 r1 = _mm512_fnmadd_ps(nn, _mm512_set1_ps(0x1.921fb6p+0f), x);
        const __m512 dh = _mm512_set1_ps(-0x1.777a5cp-25f);
        const __m512 ch = _mm512_mul_ps(nn, dh), cl = _mm512_fmsub_ps(nn, dh, ch);
        const __m512 hi = _mm512_sub_ps(r1, ch);
        const __m512 e = _mm512_sub_ps(_mm512_sub_ps(r1, hi), ch);
        const __m512 lo = _mm512_fnmadd_ps(nn, _mm512_set1_ps(-0x1.ee59dap-50f),
                                           _mm512_sub_ps(e, cl));
        const __m512i q = _mm512_add_epi32(_mm512_castps_si512(t), qc);
        const __m512 z = _mm512_mul_ps(hi, hi);
        const __m512 ps = _mm512_fmadd_ps(
            _mm512_fmadd_ps(_mm512_set1_ps(-1.9515295891E-4f), z, _mm512_set1_ps(8.3321608736E-3f)),
            z, _mm512_set1_ps(-1.6666654611E-1f));
        const __m512 sv = _mm512_add_ps(hi, _mm512_fmadd_ps(_mm512_mul_ps(hi, z), ps, lo));
        const __m512 pc = _mm512_fmadd_ps(
            _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(2.443315711809948E-5f), z,
                                            _mm512_set1_ps(-1.388731625493765E-3f)),
                            z, _mm512_set1_ps(4.166664568298827E-2f)),
            z, _mm512_set1_ps(-0.5f));
        const __m512 cv = _mm512_add_ps(_mm512_set1_ps(1.0f),
                                        _mm512_fmsub_ps(z, pc, _mm512_mul_ps(hi, lo)));
        const __mmask16 odd = _mm512_test_epi32_mask(q, _mm512_set1_epi32(1));
        __m512 v = _mm512_mask_blend_ps(odd, sv, cv);
        v = _mm512_castsi512_ps(_mm512_xor_si512(
            _mm512_castps_si512(v),
            _mm512_slli_epi32(_mm512_and_si512(q, _mm512_set1_epi32(2)), 30)));
        /* |x| < 2^-12: sin x rounds to x, cos x to 1 */
        v = _mm512_mask_mov_ps(v, tiny, want_cos ? _mm512_set1_ps(1.0f) : x0);
        _mm512_mask_storeu_ps(O_ + i, lm, v);
        if (slow) {
            _mm512_storeu_ps(xs, x0);
            for (int j = 0; j < 16; j++)
                if (slow & (1u << j))
                    O_[i + j] = want_cos ? pyet_cosf_np(xs[j]) : pyet_sinf_np(xs[j]);
        }
    }
}

PYET_AVX512 static void pyet_sincosf_avx512_strided(int want_cos, pyet_intp n, void *out,
                                                    const void *in, pyet_intp stride)
{
    const pyet_intp h = pyet_head64(out, 4, n);
    if (h) pyet_sincosf_avx512_body(want_cos, h, out, in, stride);
    pyet_sincosf_avx512_body(want_cos, n - h, (float *)out + h, (const char *)in + h * stride,
                             stride);
}

/* float64 tanh at AVX-512 (pyet_tanh, Cephes's, ran per lane in the
 * gcc-vectorized loop at 1.33x NumPy's time, this at 0.94x), pyet_tanh's
 * formulas with one division serving both: a = |x| < 0.625, Cephes's
 * a + a z P(z)/Q(z) (z = a^2); above, tanh a = e/(e + 2), e = e^(2a) - 1
 * (a clamped to 20, where tanh rounds to 1), e^(2a) as pyet_exp8_avx512
 * computes it, 2^(k/16) (1 + t_j)(1 + p), and e = (sc - 1) + sc (p + t_j),
 * sc = 2^(k/16) (no cancellation: e > 2.4).  The quotient e/(e + 2) is corrected
 * for the rounding of e + 2 and its own (the residual by fma, times
 * vrcp14pd's 1/d): within 1 ulp (measured 0.8 against np.longdouble on
 * 10^7 random inputs; NumPy's is 1.2; tests/test_transcendental_avx512.py).
 * NaN passes (vminpd returns its second operand); the sign is x's
 * (tanh(-0) = -0). */
PYET_AVX512 static inline __attribute__((always_inline)) void
pyet_tanh_avx512_body(pyet_intp n, void *out, const void *in, pyet_intp stride, int strided)
{
    const char *X_ = (const char *)in;
    double *O_ = (double *)out;
    const __m512i vidx = pyet_lanes8(stride);
    const __m512i sign = _mm512_set1_epi64(INT64_MIN);
    const __m512i e2l = _mm512_load_si512(pyet_powf_exp2t), e2h = _mm512_load_si512(pyet_powf_exp2t + 8);
    const __m512d tll = _mm512_load_pd(pyet_exp_tail), tlh = _mm512_load_pd(pyet_exp_tail + 8);
    for (pyet_intp i = 0; i < n; i += 8) {
        const __mmask8 lm = n - i >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (n - i)) - 1);
        const __m512d x = pyet_load8d(X_, i, stride, strided, lm, vidx);
        const __m512d a = _mm512_min_pd(_mm512_set1_pd(20.0), _mm512_abs_pd(x));
        const __mmask8 big = _mm512_cmp_pd_mask(a, _mm512_set1_pd(0.625), _CMP_GE_OQ);
        /* e^(2a) - 1 */
        const __m512d y = _mm512_add_pd(a, a);
        const __m512d zz = _mm512_fmadd_pd(y, _mm512_set1_pd(0x1.71547652b82fep+4),
                                           _mm512_set1_pd(0x1.8p52));
        const __m512i ki = _mm512_castpd_si512(zz);  /* k in the low bits */
        const __m512d kd = _mm512_sub_pd(zz, _mm512_set1_pd(0x1.8p52));
        __m512d r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(0x1.62e42fefa39efp-5), y);
        r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(0x1.abc9e3b39803fp-60), r);
        const __m512d sc = _mm512_castsi512_pd(_mm512_add_epi64(
            _mm512_permutex2var_epi64(e2l, ki, e2h), _mm512_slli_epi64(ki, 48)));
        const __m512d tl = _mm512_permutex2var_pd(tll, ki, tlh);
        const __m512d r2 = _mm512_mul_pd(r, r), r4 = _mm512_mul_pd(r2, r2);
        const __m512d pa = _mm512_fmadd_pd(r, _mm512_set1_pd(0x1.5555555555555p-3),
                                           _mm512_set1_pd(0.5));
        const __m512d pb = _mm512_fmadd_pd(r, _mm512_set1_pd(0x1.1111111111111p-7),
                                           _mm512_set1_pd(0x1.5555555555555p-5));
        const __m512d pc = _mm512_fmadd_pd(r, _mm512_set1_pd(0x1.a01a01a01a01ap-13),
                                           _mm512_set1_pd(0x1.6c16c16c16c17p-10));
        const __m512d q = _mm512_fmadd_pd(r4, pc, _mm512_fmadd_pd(r2, pb, pa));
        const __m512d p = _mm512_fmadd_pd(r2, q, _mm512_add_pd(r, tl));
        const __m512d e = _mm512_fmadd_pd(sc, p, _mm512_sub_pd(sc, _mm512_set1_pd(1.0)));
        /* d + dl = e + 2 exactly (e > 2: Fast2Sum) */
        const __m512d d = _mm512_add_pd(e, _mm512_set1_pd(2.0));
        const __m512d dl = _mm512_maskz_sub_pd(
            big, _mm512_set1_pd(2.0), _mm512_sub_pd(d, e));
        /* Cephes's P(z) and Q(z) */
        const __m512d z = _mm512_mul_pd(a, a);
        const __m512d cp = _mm512_fmadd_pd(
            _mm512_fmadd_pd(_mm512_set1_pd(-9.64399179425052238628E-1), z,
                            _mm512_set1_pd(-9.92877231001918586564E1)),
            z, _mm512_set1_pd(-1.61468768441708447952E3));
        const __m512d cq = _mm512_fmadd_pd(
            _mm512_fmadd_pd(_mm512_add_pd(z, _mm512_set1_pd(1.12811678491632931402E2)), z,
                            _mm512_set1_pd(2.23548839060100448583E3)),
            z, _mm512_set1_pd(4.84406305325125486048E3));
        const __m512d num = _mm512_mask_blend_pd(big, cp, e);
        const __m512d den = _mm512_mask_blend_pd(big, cq, d);
        const __m512d q0 = _mm512_div_pd(num, den);
        const __m512d res = _mm512_fnmadd_pd(q0, dl, _mm512_fnmadd_pd(q0, den, num));
        const __m512d qb = _mm512_fmadd_pd(res, _mm512_rcp14_pd(den), q0);
        /* small: a + (a z) q */
        const __m512d v = _mm512_mask_blend_pd(big, _mm512_fmadd_pd(_mm512_mul_pd(a, z), qb, a), qb);
        const __m512i o = _mm512_ternarylogic_epi64(sign, _mm512_castpd_si512(v),
                                                    _mm512_castpd_si512(x), 0xac);
        _mm512_mask_storeu_pd(O_ + i, lm, _mm512_castsi512_pd(o));
    }
}

PYET_AVX512_ENTRIES(pyet_tanh_avx512, double)

/* op: OP_exp (exp(x)), OP_sigmoid (1/(1 + exp(-x))) or OP_logistic
 * (s1/(s2 + exp(-x))), each rounded as its unfused tree (with this exp) */
PYET_AVX512 static inline __attribute__((always_inline)) void
pyet_exp_avx512_body(int op, pyet_intp n, void *out, const void *in, double s1, double s2,
                     pyet_intp stride, int strided)
{
    const char *X_ = (const char *)in;
    double *O_ = (double *)out;
    const __m512d v1 = _mm512_set1_pd(s1), v2 = _mm512_set1_pd(s2);
    const __m512i vidx = pyet_lanes8(stride);
    for (pyet_intp i = 0; i < n; i += 8) {
        const __mmask8 lm = n - i >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (n - i)) - 1);
        const __m512d x = pyet_load8d(X_, i, stride, strided, lm, vidx);
        __m512d res;
        if (op == OP_exp) {
            res = pyet_exp8_avx512(x, lm);
        } else {  /* masked: the lanes not loaded raise no flags */
            const __m512d e = pyet_exp8_avx512(
                _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(x),
                                                     _mm512_set1_epi64(INT64_MIN))), lm);
            res = _mm512_maskz_div_pd(lm, v1, _mm512_maskz_add_pd(lm, v2, e));
        }
        _mm512_mask_storeu_pd(O_ + i, lm, res);
    }
}

PYET_AVX512 static void pyet_exp_avx512(int op, pyet_intp n, void *out, const void *in,
                                        double s1, double s2)
{
    pyet_exp_avx512_body(op, n, out, in, s1, s2, 8, 0);
}

PYET_AVX512 static void pyet_exp_avx512_strided(int op, pyet_intp n, void *out,
                                                const void *in, pyet_intp stride)
{
    const pyet_intp h = pyet_head64(out, 8, n);
    if (h) pyet_exp_avx512_body(op, h, out, in, 1.0, 1.0, stride, 1);
    pyet_exp_avx512_body(op, n - h, (double *)out + h, (const char *)in + h * stride, 1.0, 1.0,
                         stride, 1);
}

/* float64 log and pow at AVX-512 (8 lanes, FMA, tables in registers), as
 * ARM's optimized-routines log.c and pow.c (glibc's) with smaller tables:
 * x = 2^k z, z in [0.698, 1.396) split into 16 intervals by 4 mantissa
 * bits, c the centre of z's (c = 1 on the one holding 1, in its middle),
 * log x = k ln2 + log c + log1p(r), r = z/c - 1 = (p - 1) + plo, |r| <
 * 0.0298 (z/c = p + plo by fma; p - 1 exact), log c as logc + tail, logc
 * with 43 fractional bits (so k ln2hi + logc is exact) and c near the
 * centre chosen so that |tail| < 2^-66 (log alone leaves it out: one table
 * fewer, 5-10 % of its time).  1/c, logc and tail by vpermt2pd from
 * 16-entry tables (pyet/_kernels/gen_log16.py makes them):
 * gathers from ARM's 128-entry ones measured 1.4x the whole log's time.
 * No cancellation near 1: k ln2 + log c is 0 there, else |log x| > 0.0206.
 * log: log1p(r) - r = r^2 P(r), P of degree 8 (Chebyshev fit, 2^-57 on
 * |r| < 0.0298), k ln2hi + logc + r exact by Fast2Sum, one rounding at
 * the end: within 0.54 ulp (2e6 random inputs per range against logl).
 * pow: log x as hi + lo within 2^-62.3 relative (measured; the r^3 P(r)
 * term's roundings, r^3/3 being up to 2^-11.2 of log x, bound it), y
 * (hi + lo) in double-double, exp of it as pyet_exp8_avx512 with the low
 * part added to the reduced argument: within 0.52 + |y log x| 2^-9.3 ulp,
 * so lanes with |y log x| > 128 (results outside [2^-184, 2^184]) take
 * libm's pow, as do x not positive, normal and finite and |y| not in
 * [2^-65, 2^63) (inf, nan, 0: there y log x could underflow).  Measured
 * within 0.56 ulp. */
#define PYET_LOG64_AVX512 1

/* 1/c, c the centre of interval j (1 on the one holding 1) */
static const double pyet_log16_invc[16] __attribute__((aligned(64))) = {
    0x1.66c612a88725ep+0, 0x1.57b8643a5cc98p+0, 0x1.49e112de3aac5p+0, 0x1.3d1c13d1ccef0p+0,
    0x1.314abba8178e4p+0, 0x1.2652c740ef788p+0, 0x1.1c1d986660eb7p+0, 0x1.1297990187521p+0,
    0x1.09afbd976210ap+0, 0x1.0000000000000p+0, 0x1.e6a7497c7fde1p-1, 0x1.cb5d4ef8175a0p-1,
    0x1.b2f9342272ff4p-1, 0x1.9d0ac19d09e40p-1, 0x1.89374bc3cc017p-1, 0x1.7734c37202d6dp-1};
/* log c rounded to 43 fractional bits (k ln2hi + logc exact) */
static const double pyet_log16_logc[16] __attribute__((aligned(64))) = {
    -0x1.599d62fd18000p-2, -0x1.2db8ec7c69800p-2, -0x1.03a25db230800p-2, -0x1.b66a774632000p-3,
    -0x1.68a2671540000p-3, -0x1.1db2fe30ac000p-3, -0x1.aad1944dbc000p-4, -0x1.1f2b350ab2000p-4,
    -0x1.303f46d778000p-5, 0.0, 0x1.9fed48f0ec000p-5, 0x1.bc5632ba64000p-4,
    0x1.4de7b8358a000p-3, 0x1.b7dc1d0467000p-3, 0x1.0e4cfbf1f7000p-2, 0x1.3e4f3c0951000p-2};
/* log c - logc */
static const double pyet_log16_tail[16] __attribute__((aligned(64))) = {
    -0x1.c953e88f2f6dcp-67, -0x1.44cc07ef86b49p-68, 0x1.523df6b758639p-70, 0x1.0b3654f43a63bp-68,
    0x1.1aece3d099272p-69, 0x1.c5770f6a7f02fp-68, -0x1.ed27612dd8783p-69, -0x1.004b588d4f1e2p-69,
    -0x1.104bbbbb76ecdp-68, 0.0, -0x1.cf1f20a202045p-67, -0x1.d72126a5aeeacp-67,
    -0x1.ac906e28084fdp-68, -0x1.cb243c55ad5c3p-69, -0x1.dd3684da8af05p-67, -0x1.758d6fca848e7p-67};

/* x = 2^k z as kd, z, and the table index j in the low bits of idx */
#define PYET_LOG16_REDUCE(ix)                                               \
    const __m512i tmp = _mm512_sub_epi64(ix, _mm512_set1_epi64(0x3fe6555555555555ll)); \
    const __m512i idx = _mm512_srli_epi64(tmp, 48);                         \
    const __m512d kd = _mm512_cvtepi64_pd(_mm512_srai_epi64(tmp, 52));     \
    const __m512d z = _mm512_castsi512_pd(_mm512_sub_epi64(                 \
        ix, _mm512_and_si512(tmp, _mm512_set1_epi64((long long)0xfff0000000000000ull)))); \
    const __m512d invc = _mm512_permutex2var_pd(_mm512_load_pd(pyet_log16_invc), idx, \
                                                _mm512_load_pd(pyet_log16_invc + 8)); \
    const __m512d logc = _mm512_permutex2var_pd(_mm512_load_pd(pyet_log16_logc), idx, \
                                                _mm512_load_pd(pyet_log16_logc + 8)); \
    const __m512d pz = _mm512_mul_pd(z, invc);                              \
    const __m512d plo = _mm512_fmsub_pd(z, invc, pz);                       \
    const __m512d r = _mm512_sub_pd(pz, _mm512_set1_pd(1.0));  /* exact */  \
    /* exact: ln2hi has 42 bits, logc 43 fractional ones */                 \
    const __m512d t1 = _mm512_fmadd_pd(kd, _mm512_set1_pd(0x1.62e42fefa3800p-1), logc)

#define PYET_C(v) _mm512_set1_pd(v)

/* log x, ix the bits of x positive, normal and finite */
PYET_AVX512 static inline __attribute__((always_inline)) __m512d pyet_log8_avx512(__m512i ix)
{
    PYET_LOG16_REDUCE(ix);
    const __m512d lo1 = _mm512_mul_pd(kd, PYET_C(0x1.ef35793c76730p-45));  /* tail < 2^-66 */
    const __m512d hi = _mm512_add_pd(t1, r);
    const __m512d lo2 = _mm512_add_pd(_mm512_sub_pd(t1, hi), r);  /* |t1| > |r| or t1 = 0 */
    const __m512d r2 = _mm512_mul_pd(r, r), r4 = _mm512_mul_pd(r2, r2);
    const __m512d q01 = _mm512_fmadd_pd(r, PYET_C(0x1.5555555555532p-2), PYET_C(-0x1.0000000000000p-1));
    const __m512d q23 = _mm512_fmadd_pd(r, PYET_C(0x1.9999999a9cfcdp-3), PYET_C(-0x1.fffffffffffbfp-3));
    const __m512d q45 = _mm512_fmadd_pd(r, PYET_C(0x1.249239070f82cp-3), PYET_C(-0x1.55555556431c3p-3));
    const __m512d q67 = _mm512_fmadd_pd(r, PYET_C(0x1.c7da440e70c8dp-4), PYET_C(-0x1.ffffe2746b223p-4));
    const __m512d q47 = _mm512_fmadd_pd(r2, q67, q45);
    const __m512d q48 = _mm512_fmadd_pd(r4, PYET_C(-0x1.9a479b01404dap-4), q47);
    const __m512d q = _mm512_fmadd_pd(r4, q48, _mm512_fmadd_pd(r2, q23, q01));
    /* plo/(1 + r) to 2^-63 */
    const __m512d tail = _mm512_add_pd(_mm512_add_pd(lo1, lo2), _mm512_fnmadd_pd(plo, r, plo));
    return _mm512_add_pd(hi, _mm512_fmadd_pd(r2, q, tail));
}

/* log x as hi + lo, ix the bits of x positive, normal and finite */
PYET_AVX512 static inline __attribute__((always_inline)) __m512d
pyet_log8_dd(__m512i ix, __m512d *lo)
{
    PYET_LOG16_REDUCE(ix);
    const __m512d ltail = _mm512_permutex2var_pd(_mm512_load_pd(pyet_log16_tail), idx,
                                                 _mm512_load_pd(pyet_log16_tail + 8));
    const __m512d lo1 = _mm512_fmadd_pd(kd, PYET_C(0x1.ef35793c76730p-45), ltail);
    const __m512d t2 = _mm512_add_pd(t1, r);
    const __m512d lo2 = _mm512_add_pd(_mm512_sub_pd(t1, t2), r);
    /* -r^2/2 = ar2 + lo3 exactly, added to t2 as hi + lo4 */
    const __m512d ar = _mm512_mul_pd(PYET_C(-0.5), r);
    const __m512d ar2 = _mm512_mul_pd(r, ar);
    const __m512d lo3 = _mm512_fmsub_pd(ar, r, ar2);
    const __m512d hi = _mm512_add_pd(t2, ar2);
    const __m512d lo4 = _mm512_add_pd(_mm512_sub_pd(t2, hi), ar2);
    /* plo/(1 + r) = plo (1 - r + r^2 - r^3) to 2^-73 */
    const __m512d w = _mm512_fnmadd_pd(r, _mm512_fnmadd_pd(r, _mm512_sub_pd(PYET_C(1.0), r),
                                                          PYET_C(1.0)), PYET_C(1.0));
    const __m512d lo5 = _mm512_mul_pd(plo, w);
    /* log1p(r) - r + r^2/2 = r^3 P(r), P of degree 8 (2^-55.2: its first
     * coefficient's rounding, 2^-55.6, bounds any degree) */
    const __m512d r2 = _mm512_mul_pd(r, r), r4 = _mm512_mul_pd(r2, r2);
    const __m512d r3 = _mm512_mul_pd(r2, r), r8 = _mm512_mul_pd(r4, r4);
    const __m512d q01 = _mm512_fmadd_pd(r, PYET_C(-0x1.fffffffffffbfp-3), PYET_C(0x1.5555555555555p-2));
    const __m512d q23 = _mm512_fmadd_pd(r, PYET_C(-0x1.55555556431c3p-3), PYET_C(0x1.999999999995ep-3));
    const __m512d q45 = _mm512_fmadd_pd(r, PYET_C(-0x1.ffffe2746b223p-4), PYET_C(0x1.249249256dc6bp-3));
    const __m512d q67 = _mm512_fmadd_pd(r, PYET_C(-0x1.9a479b01404dap-4), PYET_C(0x1.c71c56813a42fp-4));
    const __m512d q03 = _mm512_fmadd_pd(r2, q23, q01);
    const __m512d q47 = _mm512_fmadd_pd(r2, q67, q45);
    const __m512d q = _mm512_fmadd_pd(r8, PYET_C(0x1.74fdb6a0aab40p-4), _mm512_fmadd_pd(r4, q47, q03));
    const __m512d l = _mm512_fmadd_pd(
        r3, q, _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(lo1, lo2), _mm512_add_pd(lo3, lo4)), lo5));
    const __m512d y = _mm512_add_pd(hi, l);
    *lo = _mm512_add_pd(_mm512_sub_pd(hi, y), l);
    return y;
}
#undef PYET_C
#undef PYET_LOG16_REDUCE

/* x: zero, subnormal, negative, inf or nan */
#define PYET_X_SLOW(ix)                                                     \
    _mm512_cmpge_epu64_mask(_mm512_sub_epi64(ix, _mm512_set1_epi64(0x0010000000000000ll)), \
                            _mm512_set1_epi64(0x7fe0000000000000ll))

PYET_AVX512 static inline __attribute__((always_inline)) void
pyet_log_avx512_body(pyet_intp n, void *out, const void *in, pyet_intp stride, int strided)
{
    const char *X_ = (const char *)in;
    double *O_ = (double *)out;
    const __m512i vidx = pyet_lanes8(stride);
    for (pyet_intp i = 0; i < n; i += 8) {
        const __mmask8 lm = n - i >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (n - i)) - 1);
        const __m512d x = pyet_load8d(X_, i, stride, strided, lm, vidx);
        __m512i ix = _mm512_castpd_si512(x);
        const __mmask8 sl = PYET_X_SLOW(ix);
        if (sl) ix = _mm512_mask_mov_epi64(ix, sl, _mm512_set1_epi64(0x3ff0000000000000ll));
        __m512d res = pyet_log8_avx512(ix);
        if (sl & lm) res = pyet_lanes_by(res, x, sl & lm, log);
        _mm512_mask_storeu_pd(O_ + i, lm, res);
    }
}

PYET_AVX512_ENTRIES(pyet_log_avx512, double)

/* 8 items at p + i (lanes lm) as float64 lanes: float32 ones (f32) widened */
PYET_AVX512 static inline __attribute__((always_inline)) __m512d
pyet_load8_wide(const void *p, pyet_intp i, int f32, __mmask8 lm)
{
    if (!f32) return _mm512_maskz_loadu_pd(lm, (const double *)p + i);
    return _mm512_cvtps_pd(_mm512_castps512_ps256(
        _mm512_maskz_loadu_ps((__mmask16)lm, (const float *)p + i)));
}

/* and back: v's lanes lm stored at p + i, rounded to float32 (f32) */
PYET_AVX512 static inline __attribute__((always_inline)) void
pyet_store8_narrow(void *p, pyet_intp i, int f32, __mmask8 lm, __m512d v)
{
    if (!f32)
        _mm512_mask_storeu_pd((double *)p + i, lm, v);
    else
        _mm512_mask_storeu_ps((float *)p + i, (__mmask16)lm,
                              _mm512_castps256_ps512(_mm512_cvtpd_ps(v)));
}

/* logaddexp (base2 0) and logaddexp2 (1) at AVX-512, as NumPy's
 * npy_logaddexp: x == y gives x + ln2 (x + 1), else max(x, y) +
 * log1p(exp(-|x - y|)) (log2(e) log1p(exp2(-|x - y|))); NumPy's loop calls
 * libm's exp and log1p per element, 14-16 ns (issue 15).  exp as
 * pyet_exp8_avx512 (exp2's argument times ln2 in two parts), log1p(e) =
 * log(u) + c/u with u = 1 + e and c its rounding error (exact: 1 >= e),
 * log(u) as hi + lo (pyet_log8_dd; log(u) rounded first left 1.06 ulp).  Lanes with x - y NaN or |x - y| > far (where
 * exp underflows toward subnormals; inf among them) are left to the
 * caller: *slow.  float32 lanes compute in double. */
PYET_AVX512 static inline __attribute__((always_inline)) __m512d
pyet_logaddexp8_avx512(__m512d x, __m512d y, int base2, double far, __mmask8 *slow)
{
    const __m512d zero = _mm512_setzero_pd(), one = _mm512_set1_pd(1.0);
    const __mmask8 eq = _mm512_cmp_pd_mask(x, y, _CMP_EQ_OQ);
    const __m512d d = _mm512_mask_sub_pd(zero, (__mmask8)~eq, x, y);  /* no inf - inf */
    const __m512d nd = _mm512_or_pd(d, _mm512_set1_pd(-0.0));  /* -|d| */
    *slow = _mm512_cmp_pd_mask(nd, _mm512_set1_pd(-far), _CMP_NGE_UQ);
    const __m512d a = _mm512_mask_mov_pd(nd, *slow, zero);
    __m512d e;
    if (base2) {
        const __m512d t = _mm512_mul_pd(a, _mm512_set1_pd(0x1.62e42fefa39efp-1));
        const __m512d tlo = _mm512_fmadd_pd(a, _mm512_set1_pd(0x1.abc9e3b39803fp-56),
                                            _mm512_fmsub_pd(a, _mm512_set1_pd(0x1.62e42fefa39efp-1),
                                                            t));
        e = pyet_exp8_avx512(t, 0);
        e = _mm512_fmadd_pd(e, tlo, e);
    } else {
        e = pyet_exp8_avx512(a, 0);
    }
    const __m512d u = _mm512_add_pd(one, e);
    const __m512d c = _mm512_add_pd(_mm512_sub_pd(one, u), e);
    __m512d lo;
    const __m512d hi = pyet_log8_dd(_mm512_castpd_si512(u), &lo);
    __m512d l = _mm512_add_pd(hi, _mm512_add_pd(lo, _mm512_div_pd(c, u)));
    if (base2) l = _mm512_mul_pd(l, _mm512_set1_pd(0x1.71547652b82fep+0));
    /* (vmaxpd raises invalid on a NaN, as NumPy's d > 0 does) */
    const __m512d res = _mm512_add_pd(_mm512_max_pd(x, y), l);
    return _mm512_mask_add_pd(res, eq, x, base2 ? one : _mm512_set1_pd(0x1.62e42fefa39efp-1));
}

/* logaddexp (op) of float64 or float32 (f32) arrays, a scalar where sflags
 * says: float32 lanes widened, computed as float64's and rounded once.  Lanes
 * beyond far (float64: 700, 1000 for logaddexp2, where exp and exp2
 * underflow beyond 708, 1022; float32: 87, 126, where NumPy's expf and exp2f
 * underflow and raise the flag) take NumPy's function in their dtype, one at
 * a time: its values and flags. */
PYET_AVX512 static void pyet_logaddexp_avx512(int op, int f32, int sflags, pyet_intp n,
                                              void *out, void *const *in)
{
    const int base2 = op == OP_logaddexp2;
    const double far = f32 ? (base2 ? 126.0 : 87.0) : (base2 ? 1000.0 : 700.0);
    if (n <= 0) return;
    const __m512d xb = _mm512_set1_pd(f32 ? *(const float *)in[0] : *(const double *)in[0]);
    const __m512d yb = _mm512_set1_pd(f32 ? *(const float *)in[1] : *(const double *)in[1]);
    for (pyet_intp i = 0; i < n; i += 8) {
        const __mmask8 lm = n - i >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (n - i)) - 1);
        const __m512d x = (sflags & 1) ? xb : pyet_load8_wide(in[0], i, f32, lm);
        const __m512d y = (sflags & 2) ? yb : pyet_load8_wide(in[1], i, f32, lm);
        __mmask8 slow;
        __m512d res = pyet_logaddexp8_avx512(x, y, base2, far, &slow);
        slow &= lm;
        if (slow) {
            double xs[8], ys[8], rs[8];
            _mm512_storeu_pd(xs, x);
            _mm512_storeu_pd(ys, y);
            _mm512_storeu_pd(rs, res);
            for (int j = 0; j < 8; j++) {
                if (!((slow >> j) & 1)) continue;
                if (f32)
                    rs[j] = base2 ? pyet_logaddexp2_f32((float)xs[j], (float)ys[j])
                                  : pyet_logaddexp_f32((float)xs[j], (float)ys[j]);
                else
                    rs[j] = base2 ? pyet_logaddexp2_f64(xs[j], ys[j])
                                  : pyet_logaddexp_f64(xs[j], ys[j]);
            }
            res = _mm512_loadu_pd(rs);
        }
        pyet_store8_narrow(out, i, f32, lm, res);
    }
}

/* float64 sin and cos at AVX-512 (libm's, called per element as NumPy
 * does, ran at 1.1-1.15x NumPy's time on random arguments): fdlibm's
 * reduction and kernels in 8 lanes.  n = x 2/pi rounded, y = x - n pi/2 with
 * pi/2 as fdlibm's pio2_1 + pio2_2 + pio2_2t (33, 33 and 53 bits): for
 * |x| < 2^20, n pio2_1 and n pio2_2 are exact, the first difference is
 * exact and the second's error is kept (TwoSum), so y = y0 + y1 to 2^-99;
 * then fdlibm's __kernel_sin and musl's __kernel_cos of y0 + y1: within
 * 1 ulp of the correctly rounded result (libm's, NumPy's bits, are correctly
 * rounded but for rare cases: tests/test_sincos_f64.py).  Slow lanes take
 * libm's sin or cos (values and flags): |x| >= 2^20, inf, nan, subnormal x,
 * and reductions that cancelled below 2^-20 (where fdlibm takes a third
 * step).  |x| < 2^-26 gives sin x = x, |x| < 2^-27 cos x = 1, as libm (no
 * flag).
 * Slow and tiny lanes see x = 0 in the vector arithmetic: no flag of its
 * own. */
#define PYET_C(v) _mm512_set1_pd(v)
PYET_AVX512 static inline __attribute__((always_inline)) void
pyet_sincos_avx512_body(int want_cos, pyet_intp n, void *out, const void *in, pyet_intp stride,
                        int strided)
{
    const char *X_ = (const char *)in;
    double *O_ = (double *)out;
    const __m512i vidx = pyet_lanes8(stride);
    const __m512i absm = _mm512_set1_epi64(0x7fffffffffffffffll);
    const __m512i qc = _mm512_set1_epi64(want_cos);
    /* below: sin x rounds to x (2^-26), cos x to 1 (2^-27) */
    const __m512i tiny_ = _mm512_set1_epi64(want_cos ? 0x3e40000000000000ll : 0x3e50000000000000ll);
    for (pyet_intp i = 0; i < n; i += 8) {
        const __mmask8 lm = n - i >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (n - i)) - 1);
        const __m512d x0 = pyet_load8d(X_, i, stride, strided, lm, vidx);
        const __m512i a = _mm512_and_si512(_mm512_castpd_si512(x0), absm);
        __mmask8 slow = (__mmask8)(
            _mm512_cmpge_epu64_mask(a, _mm512_set1_epi64(0x4130000000000000ll))
            | _mm512_cmplt_epu64_mask(_mm512_sub_epi64(a, _mm512_set1_epi64(1)),
                                      _mm512_set1_epi64(0x000fffffffffffffll)));
        const __mmask8 tiny = _mm512_cmplt_epu64_mask(a, tiny_);
        const __m512d x = _mm512_mask_mov_pd(x0, (__mmask8)(slow | tiny), _mm512_setzero_pd());
        const __m512d t = _mm512_fmadd_pd(x, PYET_C(6.36619772367581382433e-01), PYET_C(0x1.8p52));
        const __m512d fn = _mm512_sub_pd(t, PYET_C(0x1.8p52));
        const __m512d r1 = _mm512_fnmadd_pd(fn, PYET_C(1.57079632673412561417e+00), x);
        const __m512d nw = _mm512_mul_pd(fn, PYET_C(-6.07710050630396597660e-11));
        const __m512d r2 = _mm512_add_pd(r1, nw);
        const __m512d bb = _mm512_sub_pd(r2, r1);
        const __m512d e = _mm512_add_pd(_mm512_sub_pd(r1, _mm512_sub_pd(r2, bb)),
                                        _mm512_sub_pd(nw, bb));
        const __m512d lo = _mm512_fnmadd_pd(fn, PYET_C(2.02226624879595063154e-21), e);
        const __m512d y0 = _mm512_add_pd(r2, lo);
        const __m512d y1 = _mm512_add_pd(_mm512_sub_pd(r2, y0), lo);
        slow |= _mm512_cmp_pd_mask(_mm512_abs_pd(y0), PYET_C(0x1p-20), _CMP_LT_OQ)
                & _mm512_cmp_pd_mask(fn, _mm512_setzero_pd(), _CMP_NEQ_OQ);
        const __m512d z = _mm512_mul_pd(y0, y0), v = _mm512_mul_pd(z, y0);
        /* __kernel_sin(y0, y1, 1) */
        __m512d ps = _mm512_fmadd_pd(z, PYET_C(1.58969099521155010221e-10),
                                     PYET_C(-2.50507602534068634195e-08));
        ps = _mm512_fmadd_pd(z, ps, PYET_C(2.75573137070700676789e-06));
        ps = _mm512_fmadd_pd(z, ps, PYET_C(-1.98412698298579493134e-04));
        ps = _mm512_fmadd_pd(z, ps, PYET_C(8.33333333332248946124e-03));
        const __m512d sv = _mm512_sub_pd(y0, _mm512_fnmadd_pd(
            v, PYET_C(-1.66666666666666324348e-01),
            _mm512_fmsub_pd(z, _mm512_fnmadd_pd(v, ps, _mm512_mul_pd(PYET_C(0.5), y1)), y1)));
        /* __kernel_cos(y0, y1) */
        const __m512d w2 = _mm512_mul_pd(z, z);
        __m512d p1 = _mm512_fmadd_pd(z, PYET_C(2.48015872894767294178e-05),
                                     PYET_C(-1.38888888888741095749e-03));
        p1 = _mm512_fmadd_pd(z, p1, PYET_C(4.16666666666666019037e-02));
        __m512d p2 = _mm512_fmadd_pd(z, PYET_C(-1.13596475577881948265e-11),
                                     PYET_C(2.08757232129817482790e-09));
        p2 = _mm512_fmadd_pd(z, p2, PYET_C(-2.75573143513906633035e-07));
        const __m512d rc = _mm512_fmadd_pd(_mm512_mul_pd(w2, w2), p2, _mm512_mul_pd(z, p1));
        const __m512d hz = _mm512_mul_pd(PYET_C(0.5), z);
        const __m512d wc = _mm512_sub_pd(PYET_C(1.0), hz);
        const __m512d cv = _mm512_add_pd(wc, _mm512_add_pd(
            _mm512_sub_pd(_mm512_sub_pd(PYET_C(1.0), wc), hz),
            _mm512_fmsub_pd(z, rc, _mm512_mul_pd(y0, y1))));
        const __m512i q = _mm512_add_epi64(_mm512_castpd_si512(t), qc);
        const __mmask8 odd = _mm512_test_epi64_mask(q, _mm512_set1_epi64(1));
        __m512d res = _mm512_mask_blend_pd(odd, sv, cv);
        res = _mm512_castsi512_pd(_mm512_xor_si512(
            _mm512_castpd_si512(res),
            _mm512_slli_epi64(_mm512_and_si512(q, _mm512_set1_epi64(2)), 62)));
        res = _mm512_mask_mov_pd(res, tiny, want_cos ? PYET_C(1.0) : x0);
        if (slow & lm) res = pyet_lanes_by(res, x0, slow & lm, want_cos ? cos : sin);
        _mm512_mask_storeu_pd(O_ + i, lm, res);
    }
}
#undef PYET_C

PYET_AVX512 static inline __attribute__((always_inline)) void
pyet_sin_avx512_body(pyet_intp n, void *out, const void *in, pyet_intp stride, int strided)
{
    pyet_sincos_avx512_body(0, n, out, in, stride, strided);
}

PYET_AVX512 static inline __attribute__((always_inline)) void
pyet_cos_avx512_body(pyet_intp n, void *out, const void *in, pyet_intp stride, int strided)
{
    pyet_sincos_avx512_body(1, n, out, in, stride, strided);
}

PYET_AVX512_ENTRIES(pyet_sin_avx512, double)
PYET_AVX512_ENTRIES(pyet_cos_avx512, double)

/* exp(t + tl) for |t| in [2^-54, 708] (or t = tl = 0), |tl| < 2^-40 |t|:
 * pyet_exp8_avx512's reduction, table and polynomial, tl added to r */
PYET_AVX512 static inline __attribute__((always_inline)) __m512d
pyet_exp8_dd(__m512d t, __m512d tl)
{
    const __m512d zz = _mm512_fmadd_pd(t, _mm512_set1_pd(0x1.71547652b82fep+4),
                                       _mm512_set1_pd(0x1.8p52));
    const __m512i ki = _mm512_castpd_si512(zz);
    const __m512d kd = _mm512_sub_pd(zz, _mm512_set1_pd(0x1.8p52));
    __m512d r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(0x1.62e42fefa39efp-5), t);
    r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(0x1.abc9e3b39803fp-60), r);
    r = _mm512_add_pd(r, tl);
    const __m512d sc = _mm512_castsi512_pd(_mm512_add_epi64(
        _mm512_permutex2var_epi64(_mm512_load_si512(pyet_powf_exp2t), ki,
                                  _mm512_load_si512(pyet_powf_exp2t + 8)),
        _mm512_slli_epi64(ki, 48)));
    const __m512d tt = _mm512_permutex2var_pd(_mm512_load_pd(pyet_exp_tail), ki,
                                              _mm512_load_pd(pyet_exp_tail + 8));
    const __m512d r2 = _mm512_mul_pd(r, r), r4 = _mm512_mul_pd(r2, r2);
    const __m512d a = _mm512_fmadd_pd(r, _mm512_set1_pd(0x1.5555555555555p-3),
                                      _mm512_set1_pd(0.5));
    const __m512d b = _mm512_fmadd_pd(r, _mm512_set1_pd(0x1.1111111111111p-7),
                                      _mm512_set1_pd(0x1.5555555555555p-5));
    const __m512d c = _mm512_fmadd_pd(r, _mm512_set1_pd(0x1.a01a01a01a01ap-13),
                                      _mm512_set1_pd(0x1.6c16c16c16c17p-10));
    const __m512d q = _mm512_fmadd_pd(r4, c, _mm512_fmadd_pd(r2, b, a));
    const __m512d p = _mm512_fmadd_pd(r2, q, _mm512_add_pd(r, tt));
    return _mm512_fmadd_pd(sc, p, sc);
}

/* float64 erf at AVX-512 (libm's erf per lane ran at 1.1x SciPy's time):
 * fdlibm's method and coefficients (s_erf.c), a = min(|x|, 6):
 * [0, 0.84375) a + a P/Q in z = a^2; [0.84375, 1.25) erx + P/Q in a - 1;
 * [1.25, 1/0.35) and [1/0.35, 6] 1 - exp(-a^2 - 0.5625 + R/S)/a, R/S in
 * 1/z, here as R/S times z^8 (z^7 on the second): polynomials in z, whose
 * terms have one sign (no cancellation), so every lane's quotient is one
 * Horner pair in u (z, or a - 1) with its interval's coefficients
 * (vpermpd from pyet_erf_tab) and one division; the exp then a second
 * (vrcp14pd and Newton steps instead of either measured 4 % slower).
 * a^2 = z + zl exactly (fma) and the exponent in double-double
 * (pyet_exp8_dd): without them 0.91 ulp on [1.25, 1.45), with 0.63; erf
 * within 0.86 ulp (SciPy's, cephes's, 2.6).  At a = 6 the result rounds
 * to 1 (inf clamps there); the sign is x's; NaN gives SciPy's NaN
 * (positive, quiet) without a flag.  Underflow on tiny x (a^2) is one of
 * erf's quiet flags (blocks.pxi QUIET_FLAGS). */
#define PYET_ERF_AVX512 1

/* row j: the coefficients of u^(8-j), lanes [0, 0.84375), [0.84375, 1.25),
 * [1.25, 1/0.35), [1/0.35, 6] of the numerator, then of the denominator */
static const double pyet_erf_tab[9][8] __attribute__((aligned(64))) = {
    {0.0, 0.0, -0x1.43412600d6435p-7, 0.0, 0.0, 0.0, 0x1p0, 0.0},
    {0.0, 0.0, -0x1.63416e4ba7360p-1, -0x1.4341239e86f4ap-7, 0.0, 0.0, 0x1.3a6b9bd707687p4,
     0x1p0},
    {0.0, -0x1.1bf380a96073fp-9, -0x1.51e0441b0e726p3, -0x1.993ba70c285dep-1, 0.0,
     0x1.88b545735151dp-7, 0x1.1350c526ae721p7, 0x1.e568b261d5190p4},
    {0.0, 0x1.22a36599795ebp-5, -0x1.f300ae4cba38dp5, -0x1.1c209555f995ap4,
     -0x1.09c4342a26120p-18, 0x1.bedc26b51dd1cp-7, 0x1.b290dd58a1a71p8, 0x1.45cae221b9f0ap8},
    {-0x1.8ead6120016acp-16, -0x1.c63983d3e28ecp-4, -0x1.44cb184282266p7, -0x1.4145d43c5ed98p7,
     0x1.15dc9221c1a10p-13, 0x1.02660e763351fp-3, 0x1.42b1921ec2868p9, 0x1.802eb189d5118p10},
    {-0x1.7a291236668e4p-8, 0x1.45fca805120e4p-2, -0x1.7135cebccabb2p7, -0x1.3ec881375f228p9,
     0x1.4d022c4d36b0fp-8, 0x1.2635cd99fe9a7p-4, 0x1.ad02157700314p8, 0x1.8ffb7688c246ap11},
    {-0x1.d2a51dbd7194fp-6, -0x1.7d240fbb8c3f1p-2, -0x1.4526557e4d2f2p6, -0x1.004616a2e5992p10,
     0x1.0a54c5536cebap-4, 0x1.14af092eb6f33p-1, 0x1.b28a3ee48ae2cp6, 0x1.3f219cedf3be6p11},
    {-0x1.4cd7d691cb913p-2, 0x1.a8d00ad92b34dp-2, -0x1.3a0efc69ac25cp3, -0x1.e384e9bdc383fp8,
     0x1.97779cddadc09p-2, 0x1.b3e6618eee323p-4, 0x1.a47ef8e484a93p2, 0x1.da874e79fe763p8},
    {0x1.06eba8214db68p-3, -0x1.359b8bef77538p-9, 0.0, 0.0, 0x1p0, 0x1p0,
     -0x1.eeff2ee749a62p-5, -0x1.670e242712d62p4}};

/* erf of 8 lanes */
PYET_AVX512 static inline __attribute__((always_inline)) __m512d
pyet_erf8_avx512(__m512d x)
{
    /* NaN lanes (bits above inf's) compute 0, quietly (a signaling NaN
     * would raise invalid), and give SciPy's NaN */
    __m512d ax = _mm512_abs_pd(x);
    const __mmask8 nan_ = _mm512_cmpgt_epi64_mask(_mm512_castpd_si512(ax),
                                                  _mm512_set1_epi64(0x7ff0000000000000ll));
    if (nan_) ax = _mm512_mask_mov_pd(ax, nan_, _mm512_setzero_pd());
    const __m512d a = _mm512_min_pd(ax, _mm512_set1_pd(6.0));
    const __mmask8 m1 = _mm512_cmp_pd_mask(a, _mm512_set1_pd(0.84375), _CMP_GE_OQ);
    const __mmask8 m2 = _mm512_cmp_pd_mask(a, _mm512_set1_pd(1.25), _CMP_GE_OQ);
    const __mmask8 m3 = _mm512_cmp_pd_mask(a, _mm512_set1_pd(0x1.6db6ep+1), _CMP_GE_OQ);
    __m512i j = _mm512_maskz_mov_epi64(m1, _mm512_set1_epi64(1));
    j = _mm512_mask_mov_epi64(j, m2, _mm512_set1_epi64(2));
    j = _mm512_mask_mov_epi64(j, m3, _mm512_set1_epi64(3));
    const __m512i jd = _mm512_add_epi64(j, _mm512_set1_epi64(4));
    const __m512d z = _mm512_mul_pd(a, a);
    const __m512d u = _mm512_mask_mov_pd(z, (__mmask8)(m1 & ~m2),
                                         _mm512_sub_pd(a, _mm512_set1_pd(1.0)));
    __m512d num = _mm512_permutexvar_pd(j, _mm512_load_pd(pyet_erf_tab[0]));
    __m512d den = _mm512_permutexvar_pd(jd, _mm512_load_pd(pyet_erf_tab[0]));
    for (int k = 1; k < 9; k++) {
        const __m512d c = _mm512_load_pd(pyet_erf_tab[k]);
        num = _mm512_fmadd_pd(num, u, _mm512_permutexvar_pd(j, c));
        den = _mm512_fmadd_pd(den, u, _mm512_permutexvar_pd(jd, c));
    }
    const __m512d q = _mm512_div_pd(num, den);
    /* a + a q; erx + q */
    __m512d v = _mm512_mask_mov_pd(_mm512_fmadd_pd(a, q, a), m1,
                                   _mm512_add_pd(_mm512_set1_pd(0x1.b0ac16p-1), q));
    if (m2) {
        /* t = -z - 0.5625 + q - zl in double-double (Fast2Sum: z > 1.5 > |q|) */
        const __m512d zl = _mm512_fmsub_pd(a, a, z);
        const __m512d s = _mm512_sub_pd(_mm512_set1_pd(-0.5625), z);
        const __m512d sl = _mm512_sub_pd(_mm512_set1_pd(-0.5625), _mm512_add_pd(s, z));
        const __m512d t = _mm512_add_pd(s, q);
        const __m512d tl = _mm512_sub_pd(
            _mm512_add_pd(sl, _mm512_sub_pd(q, _mm512_sub_pd(t, s))), zl);
        const __m512d e = pyet_exp8_dd(t, tl);
        /* masked: the lanes below 1.25 (a may be 0) raise no flags */
        const __m512d ea = _mm512_maskz_div_pd(m2, e, a);
        v = _mm512_mask_sub_pd(v, m2, _mm512_set1_pd(1.0), ea);
    }
    /* copysign(v, x): sign ? x : v, bitwise */
    const __m512d res = _mm512_castsi512_pd(_mm512_ternarylogic_epi64(
        _mm512_set1_epi64(INT64_MIN), _mm512_castpd_si512(v), _mm512_castpd_si512(x), 0xac));
    return nan_ ? _mm512_mask_mov_pd(res, nan_, _mm512_set1_pd(NAN)) : res;
}

PYET_AVX512 static inline __attribute__((always_inline)) void
pyet_erf_avx512_body(pyet_intp n, void *out, const void *in, pyet_intp stride, int strided)
{
    const char *X_ = (const char *)in;
    double *O_ = (double *)out;
    const __m512i vidx = pyet_lanes8(stride);
    for (pyet_intp i = 0; i < n; i += 8) {
        const __mmask8 lm = n - i >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (n - i)) - 1);
        _mm512_mask_storeu_pd(O_ + i, lm,
                              pyet_erf8_avx512(pyet_load8d(X_, i, stride, strided, lm, vidx)));
    }
}

PYET_AVX512_ENTRIES(pyet_erf_avx512, double)

/* float32 erf: each 8 floats widened, pyet_erf8_avx512's, narrowed (within
 * 1 ulp of the correctly rounded float; SciPy's float32 erf is its float64
 * one narrowed too) */
PYET_AVX512 static inline __attribute__((always_inline)) void
pyet_erff_avx512_body(pyet_intp n, void *out, const void *in, pyet_intp stride, int strided)
{
    const char *X_ = (const char *)in;
    float *O_ = (float *)out;
    const __m512i vidx = pyet_lanes16(stride);
    for (pyet_intp i = 0; i < n; i += 16) {
        const __mmask16 lm = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 x = pyet_load16f(X_, i, stride, strided, lm, vidx);
        /* NaN lanes widen 0 (vcvtps2pd raises invalid on a signaling NaN) */
        const __mmask16 nan_ = _mm512_cmpgt_epi32_mask(
            _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)),
            _mm512_set1_epi32(0x7f800000));
        if (nan_) x = _mm512_mask_mov_ps(x, nan_, _mm512_setzero_ps());
        const __m256 lo = _mm512_cvtpd_ps(pyet_erf8_avx512(
            _mm512_cvtps_pd(_mm512_castps512_ps256(x))));
        const __m256 hi = _mm512_cvtpd_ps(pyet_erf8_avx512(
            _mm512_cvtps_pd(_mm512_extractf32x8_ps(x, 1))));
        __m512 v = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
        if (nan_) v = _mm512_mask_mov_ps(v, nan_, _mm512_set1_ps(NAN));
        _mm512_mask_storeu_ps(O_ + i, lm, v);
    }
}

PYET_AVX512_ENTRIES(pyet_erff_avx512, float)

/* x ** y of 8 lanes; slow lanes (x not positive, normal and finite; |y| not
 * in [2^-65, 2^63), inf, nan; |y log x| > 128) take libm's pow */
#define PYET_POW64_STEP(FX, FY)                                             \
    do {                                                                    \
        const __mmask8 lm = n - i >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (n - i)) - 1); \
        const __m512d x = FX ? xb : _mm512_maskz_loadu_pd(lm, X_ + i);      \
        const __m512d y = FY ? yb : _mm512_maskz_loadu_pd(lm, Y_ + i);      \
        __m512d hi, lo, ys = y;                                             \
        __mmask8 sl = FX ? slx : PYET_X_SLOW(_mm512_castpd_si512(x));       \
        if (!FY) sl |= PYET_Y_SLOW(y);                                      \
        if (FX) {                                                           \
            hi = hib; lo = lob;                                             \
        } else {                                                            \
            __m512i ix = _mm512_castpd_si512(x);                            \
            if (sl) ix = _mm512_mask_mov_epi64(ix, sl, _mm512_set1_epi64(0x3ff0000000000000ll)); \
            hi = pyet_log8_dd(ix, &lo);                                     \
        }                                                                   \
        if (sl && !FY) ys = _mm512_mask_mov_pd(y, sl, _mm512_setzero_pd()); \
        __m512d th = _mm512_mul_pd(ys, hi);                                 \
        __m512d tl = _mm512_fmadd_pd(ys, lo, _mm512_fmsub_pd(ys, hi, th));  \
        /* |th| as bits - 2^-54's, unsigned: at most 128's - 2^-54's */     \
        const __mmask8 out_ = _mm512_cmpgt_epu64_mask(                      \
            _mm512_sub_epi64(_mm512_castpd_si512(_mm512_abs_pd(th)),        \
                             _mm512_set1_epi64(0x3c90000000000000ll)),      \
            _mm512_set1_epi64(0x4060000000000000ll - 0x3c90000000000000ll)); \
        if (out_) {                                                         \
            sl |= _mm512_cmp_pd_mask(_mm512_abs_pd(th), _mm512_set1_pd(128.0), _CMP_GT_OQ); \
            th = _mm512_mask_mov_pd(th, out_, _mm512_setzero_pd());         \
            tl = _mm512_mask_mov_pd(tl, out_, _mm512_setzero_pd());         \
        }                                                                   \
        __m512d res = pyet_exp8_dd(th, tl);                                 \
        sl &= lm;                                                           \
        if (sl) {                                                           \
            double xs[8], yl[8], rs[8];                                     \
            _mm512_storeu_pd(xs, x);                                        \
            _mm512_storeu_pd(yl, y);                                        \
            _mm512_storeu_pd(rs, res);                                      \
            for (int j = 0; j < 8; j++)                                     \
                if ((sl >> j) & 1) rs[j] = pow(xs[j], yl[j]);               \
            res = _mm512_loadu_pd(rs);                                      \
        }                                                                   \
        _mm512_mask_storeu_pd(O_ + i, lm, res);                             \
    } while (0)

/* |y| not in [2^-65, 2^63) (so y log x neither underflows nor needs more
 * than double-double), inf or nan */
#define PYET_Y_SLOW(y)                                                      \
    _mm512_cmpge_epu64_mask(                                                \
        _mm512_sub_epi64(_mm512_castpd_si512(_mm512_abs_pd(y)),             \
                         _mm512_set1_epi64(0x3be0000000000000ll)),          \
        _mm512_set1_epi64(0x43e0000000000000ll - 0x3be0000000000000ll))

PYET_AVX512 static void pyet_pow_avx512(int sflags, pyet_intp n, void *out, void *const *in)
{
    const double *X_ = (const double *)in[0], *Y_ = (const double *)in[1];
    double *O_ = (double *)out;
    if (n <= 0) return;
    const __m512d xb = _mm512_set1_pd(X_[0]), yb = _mm512_set1_pd(Y_[0]);
    /* a scalar operand's checks (and x's log) once */
    const __mmask8 slx = PYET_X_SLOW(_mm512_castpd_si512(xb));
    __m512d lob = _mm512_setzero_pd(), hib = lob;
    if (sflags & 1)
        hib = pyet_log8_dd(slx ? _mm512_set1_epi64(0x3ff0000000000000ll)
                               : _mm512_castpd_si512(xb), &lob);
    if ((sflags & 2) && PYET_Y_SLOW(yb)) {  /* every lane slow */
        const double y = Y_[0];
        for (pyet_intp i = 0; i < n; i++) O_[i] = pow(X_[(sflags & 1) ? 0 : i], y);
        return;
    }
    switch (sflags & 3) {
    case 0: for (pyet_intp i = 0; i < n; i += 8) PYET_POW64_STEP(0, 0); break;
    case 1: for (pyet_intp i = 0; i < n; i += 8) PYET_POW64_STEP(1, 0); break;
    case 2: for (pyet_intp i = 0; i < n; i += 8) PYET_POW64_STEP(0, 1); break;
    default: for (pyet_intp i = 0; i < n; i += 8) PYET_POW64_STEP(1, 1); break;
    }
}
#undef PYET_POW64_STEP
#undef PYET_Y_SLOW
#undef PYET_X_SLOW
#endif

#ifdef PYET_POWF_AVX512
/* Integer //, % and fmod by a scalar divisor at 512 bits (the divisors that
 * are not 0, +-1 or, but for fmod, a positive power of two: those keep
 * pyet_kernel_idiv's loops).  gcc vectorizes pyet_kernel_idiv's
 * multiply-highs with vpmullq (3 uops for 8 lanes; 1.3-1.5x NumPy's time);
 * here they are vpmuludq on the even and odd 32-bit halves, as NumPy's
 * AVX-512 loops.  The floor quotient needs no remainder: for operands of
 * opposite signs it is -ceil(|a|/|d|) = -floor((|a| + |d| - 1)/|d|), and
 * |a| + |d| - 1 < 2^N stays inside the round-up method's range.  |d| >= 2,
 * so pyet_udiv_gen's sh1 is 1. */
#define PYET_IDIV_AVX512 1

/* the high halves of u * m, 32-bit lanes (m in the low half of each 64-bit lane) */
PYET_AVX512 static inline __attribute__((always_inline)) __m512i
pyet_mulhi_epu32(__m512i u, __m512i m)
{
    const __m512i even = _mm512_srli_epi64(_mm512_mul_epu32(u, m), 32);
    const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(u, 32), m);
    return _mm512_mask_blend_epi32((__mmask16)0xAAAA, even, odd);
}

/* the high halves of u * m, 64-bit lanes, from m's halves m0 and m1 (Hacker's
 * Delight's mulhu: four vpmuludq) */
PYET_AVX512 static inline __attribute__((always_inline)) __m512i
pyet_mulhi_epu64(__m512i u, __m512i m0, __m512i m1)
{
    const __m512i u1 = _mm512_srli_epi64(u, 32);
    const __m512i t = _mm512_add_epi64(_mm512_mul_epu32(u1, m0),
                                       _mm512_srli_epi64(_mm512_mul_epu32(u, m0), 32));
    const __m512i w = _mm512_add_epi64(_mm512_and_si512(t, _mm512_set1_epi64(0xffffffffLL)),
                                       _mm512_mul_epu32(u, m1));
    return _mm512_add_epi64(_mm512_add_epi64(_mm512_mul_epu32(u1, m1), _mm512_srli_epi64(t, 32)),
                            _mm512_srli_epi64(w, 32));
}

/* a // d, a % d or fmod(a, d) on 16 int32 lanes; adj: |d| - 1 (0 for fmod) */
PYET_AVX512 static inline __attribute__((always_inline)) __m512i
pyet_idiv_epi32(int op, __m512i a, __m512i d, __m512i adj, __m512i m, __m128i sh2)
{
    const __m512i neg = _mm512_srai_epi32(_mm512_xor_si512(a, d), 31);
    const __m512i u = _mm512_add_epi32(_mm512_abs_epi32(a), _mm512_and_si512(neg, adj));
    const __m512i t = pyet_mulhi_epu32(u, m);
    const __m512i uq = _mm512_srl_epi32(
        _mm512_add_epi32(t, _mm512_srli_epi32(_mm512_sub_epi32(u, t), 1)), sh2);
    const __m512i q = _mm512_sub_epi32(_mm512_xor_si512(uq, neg), neg);
    return op == OP_floor_divide ? q : _mm512_sub_epi32(a, _mm512_mullo_epi32(q, d));
}

/* the same on 8 int64 lanes */
PYET_AVX512 static inline __attribute__((always_inline)) __m512i
pyet_idiv_epi64(int op, __m512i a, __m512i d, __m512i adj, __m512i m0, __m512i m1, __m128i sh2)
{
    const __m512i neg = _mm512_srai_epi64(_mm512_xor_si512(a, d), 63);
    const __m512i u = _mm512_add_epi64(_mm512_abs_epi64(a), _mm512_and_si512(neg, adj));
    const __m512i t = pyet_mulhi_epu64(u, m0, m1);
    const __m512i uq = _mm512_srl_epi64(
        _mm512_add_epi64(t, _mm512_srli_epi64(_mm512_sub_epi64(u, t), 1)), sh2);
    const __m512i q = _mm512_sub_epi64(_mm512_xor_si512(uq, neg), neg);
    return op == OP_floor_divide ? q : _mm512_sub_epi64(a, _mm512_mullo_epi64(q, d));
}

/* one loop per op (the op a constant in each), then a masked tail */
#define PYET_IDIV_AVX512_LOOP(W, LANES, ...)                               \
    do {                                                                    \
        switch (op) {                                                       \
        case OP_floor_divide:                                               \
            for (; i + LANES <= n; i += LANES)                              \
                _mm512_storeu_si512(O_ + i, pyet_idiv_epi##W(               \
                    OP_floor_divide, _mm512_loadu_si512(A_ + i), __VA_ARGS__)); \
            break;                                                          \
        case OP_remainder:                                                  \
            for (; i + LANES <= n; i += LANES)                              \
                _mm512_storeu_si512(O_ + i, pyet_idiv_epi##W(               \
                    OP_remainder, _mm512_loadu_si512(A_ + i), __VA_ARGS__)); \
            break;                                                          \
        default:                                                            \
            for (; i + LANES <= n; i += LANES)                              \
                _mm512_storeu_si512(O_ + i, pyet_idiv_epi##W(               \
                    OP_fmod, _mm512_loadu_si512(A_ + i), __VA_ARGS__));     \
        }                                                                   \
        if (i < n) {                                                        \
            const uint32_t lm_ = (1u << (n - i)) - 1;                       \
            _mm512_mask_storeu_epi##W(O_ + i, lm_, pyet_idiv_epi##W(        \
                op, _mm512_maskz_loadu_epi##W(lm_, A_ + i), __VA_ARGS__));  \
        }                                                                   \
    } while (0)

/* 1 when it ran; 0 leaves the divisor to pyet_kernel_idiv */
PYET_AVX512 static int pyet_idiv_avx512(int op, int dt, pyet_intp n, void *out,
                                        void *const *in)
{
    pyet_intp i = 0;
    if (dt == DT_I32) {
        const int32_t *A_ = (const int32_t *)in[0];
        int32_t *O_ = (int32_t *)out;
        const int32_t d = *(const int32_t *)in[1];
        const uint32_t ad = d < 0 ? 0u - (uint32_t)d : (uint32_t)d;
        if (ad < 2 || (d > 0 && (ad & (ad - 1)) == 0 && op != OP_fmod)) return 0;
        const pyet_udiv dv = pyet_udiv_gen(ad, 32);
        const __m512i vd = _mm512_set1_epi32(d), vm = _mm512_set1_epi64((long long)dv.m);
        const __m512i adj = _mm512_set1_epi32(op == OP_fmod ? 0 : (int32_t)(ad - 1));
        const __m128i sh2 = _mm_cvtsi32_si128(dv.sh2);
        PYET_IDIV_AVX512_LOOP(32, 16, vd, adj, vm, sh2);
    } else {
        const int64_t *A_ = (const int64_t *)in[0];
        int64_t *O_ = (int64_t *)out;
        const int64_t d = *(const int64_t *)in[1];
        const uint64_t ad = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
        if (ad < 2 || (d > 0 && (ad & (ad - 1)) == 0 && op != OP_fmod)) return 0;
        const pyet_udiv dv = pyet_udiv_gen(ad, 64);
        const __m512i vd = _mm512_set1_epi64(d);
        const __m512i m0 = _mm512_set1_epi64((long long)(dv.m & 0xffffffffu));
        const __m512i m1 = _mm512_set1_epi64((long long)(dv.m >> 32));
        const __m512i adj = _mm512_set1_epi64(op == OP_fmod ? 0 : (long long)(ad - 1));
        const __m128i sh2 = _mm_cvtsi32_si128(dv.sh2);
        PYET_IDIV_AVX512_LOOP(64, 8, vd, adj, m0, m1, sh2);
    }
    return 1;
}

/* Integer //, % and fmod by an array divisor at 512 bits (NumPy's loop, and
 * pyet_kernel_narrow's, divide one element at a time: idiv and its sign
 * branches, after a separate pass for the warnings).  A double division
 * rounded down (toward zero for fmod) gives the exact quotient whenever a and
 * d are exact doubles (|a|, |d| < 2^53): an integer k <= a/d is representable,
 * so rounding a/d down cannot pass below k, and floor(rd(a/d)) = floor(a/d).
 * That covers int32 always and int64 but for vectors with a lane outside
 * +-2^53, which take the scalar functions.  Exceptions are suppressed; a zero
 * divisor gives 0 as pyet_floordiv does; NumPy's warnings (divide by zero, and
 * overflow for MIN // -1) are found in the same pass. */
#define PYET_RD_SAE (_MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define PYET_RZ_SAE (_MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)

PYET_AVX512 static inline __attribute__((always_inline)) __m512i
pyet_idiv_arr_epi64(int op, __m512i a, __m512i d)
{
    const __m512d fa = _mm512_cvt_roundepi64_pd(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512d fd = _mm512_cvt_roundepi64_pd(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512i q = op == OP_fmod
        ? _mm512_cvt_roundpd_epi64(_mm512_div_round_pd(fa, fd, PYET_RZ_SAE), PYET_RZ_SAE)
        : _mm512_cvt_roundpd_epi64(_mm512_div_round_pd(fa, fd, PYET_RD_SAE), PYET_RD_SAE);
    const __mmask8 nz = _mm512_test_epi64_mask(d, d);
    if (op == OP_floor_divide) return _mm512_maskz_mov_epi64(nz, q);
    return _mm512_maskz_sub_epi64(nz, a, _mm512_mullo_epi64(q, d));
}

PYET_AVX512 static inline __attribute__((always_inline)) __m256i
pyet_idiv_arr_half32(int op, __m256i a, __m256i d)
{
    const __m512d fa = _mm512_cvtepi32_pd(a), fd = _mm512_cvtepi32_pd(d);  /* exact */
    return op == OP_fmod
        ? _mm512_cvt_roundpd_epi32(_mm512_div_round_pd(fa, fd, PYET_RZ_SAE), PYET_RZ_SAE)
        : _mm512_cvt_roundpd_epi32(_mm512_div_round_pd(fa, fd, PYET_RD_SAE), PYET_RD_SAE);
}

PYET_AVX512 static inline __attribute__((always_inline)) __m512i
pyet_idiv_arr_epi32(int op, __m512i a, __m512i d)
{
    /* an out-of-range quotient (MIN // -1) converts to MIN, NumPy's wrap */
    const __m256i q0 = pyet_idiv_arr_half32(op, _mm512_castsi512_si256(a),
                                            _mm512_castsi512_si256(d));
    const __m256i q1 = pyet_idiv_arr_half32(op, _mm512_extracti64x4_epi64(a, 1),
                                            _mm512_extracti64x4_epi64(d, 1));
    const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
    const __mmask16 nz = _mm512_test_epi32_mask(d, d);
    if (op == OP_floor_divide) return _mm512_maskz_mov_epi32(nz, q);
    return _mm512_maskz_sub_epi32(nz, a, _mm512_mullo_epi32(q, d));
}

/* one vector of LANES at i (lm_: its lanes, all but in the tail): the
 * warnings' lanes noted, then the quotients or remainders stored */
#define PYET_IDIV_ARR_STEP(W, LANES, T, MIN, OPC, lm_)                      \
    do {                                                                    \
        const __m512i a_ = sa ? va : _mm512_maskz_loadu_epi##W(lm_, A_ + i); \
        const __m512i d_ = _mm512_maskz_loadu_epi##W(lm_, B_ + i);         \
        zero_ |= _mm512_mask_cmpeq_epi##W##_mask(lm_, d_, vzero);           \
        if (OPC == OP_floor_divide)                                         \
            over_ |= _mm512_mask_cmpeq_epi##W##_mask(                       \
                _mm512_mask_cmpeq_epi##W##_mask(lm_, d_, vm1), a_, vmin);   \
        if (W == 64 && (_mm512_mask_cmpgt_epu64_mask(lm_, _mm512_abs_epi64(a_), vlim) \
                        | _mm512_mask_cmpgt_epu64_mask(lm_, _mm512_abs_epi64(d_), vlim))) { \
            T ta_[LANES], td_[LANES];                                       \
            _mm512_storeu_si512(ta_, a_);                                   \
            _mm512_storeu_si512(td_, d_);                                   \
            for (int j_ = 0; j_ < LANES; j_++)                              \
                if ((lm_ >> j_) & 1)                                        \
                    O_[i + j_] = OPC == OP_floor_divide ? pyet_floordiv_i64(ta_[j_], td_[j_]) \
                        : OPC == OP_remainder ? pyet_remainder_i64(ta_[j_], td_[j_])        \
                        : pyet_fmod_i64(ta_[j_], td_[j_]);                  \
        } else {                                                            \
            _mm512_mask_storeu_epi##W(O_ + i, lm_, pyet_idiv_arr_epi##W(OPC, a_, d_)); \
        }                                                                   \
    } while (0)

#define PYET_IDIV_ARR_LOOP(W, LANES, T, MIN, FULL, OPC)                     \
    do {                                                                    \
        for (; i + LANES <= n; i += LANES) PYET_IDIV_ARR_STEP(W, LANES, T, MIN, OPC, FULL); \
        if (i < n) {                                                        \
            const uint32_t tm_ = (1u << (n - i)) - 1;                       \
            PYET_IDIV_ARR_STEP(W, LANES, T, MIN, OPC, tm_);                 \
        }                                                                   \
    } while (0)

#define PYET_IDIV_ARR(W, LANES, T, MIN, FULL)                               \
    do {                                                                    \
        const T *A_ = (const T *)in[0], *B_ = (const T *)in[1];             \
        T *O_ = (T *)out;                                                   \
        const int sa = sflags & 1;                                          \
        const __m512i va = _mm512_set1_epi##W(*A_), vzero = _mm512_setzero_si512(); \
        const __m512i vm1 = _mm512_set1_epi##W(-1), vmin = _mm512_set1_epi##W(MIN); \
        const __m512i vlim = _mm512_set1_epi64((1LL << 53) - 1);            \
        (void)vlim;                                                         \
        switch (op) {                                                       \
        case OP_floor_divide: PYET_IDIV_ARR_LOOP(W, LANES, T, MIN, FULL, OP_floor_divide); break; \
        case OP_remainder: PYET_IDIV_ARR_LOOP(W, LANES, T, MIN, FULL, OP_remainder); break; \
        default: PYET_IDIV_ARR_LOOP(W, LANES, T, MIN, FULL, OP_fmod);       \
        }                                                                   \
    } while (0)

/* a // d, a % d or fmod(a, d) for an array d (a an array, or one value when
 * bit 0 of sflags is set), raising NumPy's warnings */
PYET_AVX512 static void pyet_idiv_arrays_avx512(int op, int dt, int sflags, pyet_intp n,
                                                void *out, void *const *in)
{
    pyet_intp i = 0;
    uint32_t zero_ = 0, over_ = 0;
    if (dt == DT_I32)
        PYET_IDIV_ARR(32, 16, int32_t, INT32_MIN, 0xffffu);
    else
        PYET_IDIV_ARR(64, 8, int64_t, INT64_MIN, 0xffu);
    if (zero_ | over_)
        pyet_fs_raise((zero_ ? PYET_FS_DIVIDE : 0) | (over_ ? PYET_FS_OVERFLOW : 0));
}
#undef PYET_IDIV_ARR
#undef PYET_IDIV_ARR_LOOP
#undef PYET_IDIV_ARR_STEP

/* x ** b, int64, for a scalar b >= 3: PYET_IPOW_BY_SCALAR's per-element loop
 * (AVX2 has no 64-bit multiply) was 1.5x NumPy's time; vpmullq on 8 lanes,
 * the bits of b walked once per vector (the same branches for every vector).
 * Products wrap, so any order gives NumPy's result. */
PYET_AVX512 static inline __attribute__((always_inline)) __m512i
pyet_ipow_epi64(__m512i x, int64_t b)
{
    __m512i base = x, r;
    while (!(b & 1)) {
        base = _mm512_mullo_epi64(base, base);
        b >>= 1;
    }
    r = base;
    while (b >>= 1) {
        base = _mm512_mullo_epi64(base, base);
        if (b & 1) r = _mm512_mullo_epi64(r, base);
    }
    return r;
}

PYET_AVX512 static void pyet_ipow64_avx512(pyet_intp n, void *out, const void *in, int64_t b)
{
    const int64_t *X_ = (const int64_t *)in;
    int64_t *O_ = (int64_t *)out;
    pyet_intp i = 0;
    for (; i + 8 <= n; i += 8)
        _mm512_storeu_si512(O_ + i, pyet_ipow_epi64(_mm512_loadu_si512(X_ + i), b));
    if (i < n) {
        const __mmask8 lm = (__mmask8)((1u << (n - i)) - 1);
        _mm512_mask_storeu_epi64(O_ + i, lm,
                                 pyet_ipow_epi64(_mm512_maskz_loadu_epi64(lm, X_ + i), b));
    }
}
#endif

/* Integer powers with an array of exponents (none negative: pyet refuses
 * them before a pass), square and multiply in lanes until every lane's
 * exponent is spent: products wrap modulo 2^w whatever their order, so the
 * bits are NumPy's (whose loop branches per element: int64 a**b with
 * exponents under 40, 2^18 elements, pyet's scalar loop 1.31x its time). */
#define PYET_IPOW_LANES(W, LANES, MASK, T)                                  \
    PYET_AVX512 static __m512i pyet_ipow_lanes##W(__m512i base, __m512i e)   \
    {                                                                       \
        const __m512i one = _mm512_set1_epi##W(1);                          \
        __m512i r = one;                                                    \
        MASK live = _mm512_test_epi##W##_mask(e, e);                        \
        while (live) {                                                      \
            r = _mm512_mask_mullo_epi##W(r, _mm512_test_epi##W##_mask(e, one), r, base); \
            e = _mm512_srli_epi##W(e, 1);                                   \
            live = _mm512_test_epi##W##_mask(e, e);                         \
            base = _mm512_mullo_epi##W(base, base);                         \
        }                                                                   \
        return r;                                                           \
    }                                                                       \
    PYET_AVX512 static void pyet_ipow_arrays##W(int sflags, pyet_intp n, T *out, \
                                                const T *x, const T *y)     \
    {                                                                       \
        const __m512i xs = _mm512_set1_epi##W((sflags & 1) ? x[0] : 0);    \
        pyet_intp i = 0;                                                    \
        for (; i + LANES <= n; i += LANES) {                                \
            const __m512i b = (sflags & 1) ? xs : _mm512_loadu_si512(x + i); \
            _mm512_storeu_si512(out + i, pyet_ipow_lanes##W(b, _mm512_loadu_si512(y + i))); \
        }                                                                   \
        if (i < n) {                                                        \
            const MASK lm = (MASK)((1ull << (n - i)) - 1);                  \
            const __m512i b = (sflags & 1) ? xs : _mm512_maskz_loadu_epi##W(lm, x + i); \
            _mm512_mask_storeu_epi##W(out + i, lm,                          \
                pyet_ipow_lanes##W(b, _mm512_maskz_loadu_epi##W(lm, y + i))); \
        }                                                                   \
    }
#ifdef PYET_IDIV_AVX512
PYET_IPOW_LANES(64, 8, __mmask8, int64_t)
PYET_IPOW_LANES(32, 16, __mmask16, int32_t)
#endif
#undef PYET_IPOW_LANES

/* a scalar exponent NumPy's loop computes directly (pyet_kernel_narrow) */
PYET_INLINE int pyet_pow_direct(int dt, int sflags, pyet_intp n, void *const *in)
{
    if (!(sflags & 2) || n == 0) return n == 0;
    const double y = dt == DT_F64 ? *(const double *)in[1] : (double)*(const float *)in[1];
    return y == 2.0 || y == 1.0 || y == -1.0 || y == 0.5 || y == 0.0;
}

#ifdef PYET_POWF_AVX512
static int pyet_have_avx512(void)
{
    static int avx512_ = -1;  /* a benign race, as fma_'s below */
    if (avx512_ < 0)
        avx512_ = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    return avx512_;
}
#endif

/* NumPy's flags for integer //, % and fmod: divide by zero for a zero
 * divisor, overflow for MIN // -1 (the kernels give 0 and MIN quietly) */
#define PYET_IDIV_FLAGS(T, MIN)                                             \
    do {                                                                    \
        const T *A_ = (const T *)in[0], *B_ = (const T *)in[1];             \
        const pyet_intp na_ = (sflags & 1) ? 1 : n, nb_ = (sflags & 2) ? 1 : n; \
        int zero_ = 0, over_ = 0;                                           \
        for (pyet_intp i = 0; i < nb_; i++) zero_ |= B_[i] == 0;            \
        if (op == OP_floor_divide) {                                        \
            if (sflags & 2) {                                               \
                if (B_[0] == -1)                                            \
                    for (pyet_intp i = 0; i < na_; i++) over_ |= A_[i] == MIN; \
            } else {                                                        \
                for (pyet_intp i = 0; i < n; i++)                           \
                    over_ |= (A_[(sflags & 1) ? 0 : i] == MIN) & (B_[i] == -1); \
            }                                                               \
        }                                                                   \
        if (zero_ | over_)                                                  \
            pyet_fs_raise((zero_ ? PYET_FS_DIVIDE : 0) | (over_ ? PYET_FS_OVERFLOW : 0)); \
    } while (0)

static void pyet_idiv_flags(int op, int dt, int sflags, pyet_intp n, void *const *in)
{
    if (dt == DT_I32)
        PYET_IDIV_FLAGS(int32_t, INT32_MIN);
    else
        PYET_IDIV_FLAGS(int64_t, INT64_MIN);
}

#ifdef PYET_EXP_AVX512
/* float32 // and % (16 lanes) by NumPy's npy_divmodf: its float32 operations
 * in its order, so its bits, but fmodf's remainder from the quotient in
 * double where that is exact: b normal, a zero or normal with
 * 2^-125 < |a / b| < 2^29 (from the exponents).  There a / b is an integer
 * or more than 2^-24 (relative, below 1) from one, and the double quotient
 * within |a / b| 2^-53 of it: its trunc is the truncated quotient, and
 * a - trunc * b (53 bits at most) is exact; no flag but inexact rises (the
 * zero quotient's sign, NumPy's copysign(0, a / b), from the signs: a / b
 * is normal there).  The other lanes see 0 / 1 in the vector arithmetic and
 * are redone one by one (libm's fmodf: NaN, inf, zero and subnormal
 * operands, huge and tiny quotients; their values and flags).  NumPy calls
 * fmodf per element, ~12 ns: a // 2.0 float32 at 4096 was 1.15-1.25x its
 * time. */
PYET_AVX512 static void pyet_fdivmod_f32_avx512(int op, int sflags, pyet_intp n, float *out,
                                                const float *A, const float *B)
{
    const __m512i expm = _mm512_set1_epi32(0xff), absm = _mm512_set1_epi32(0x7fffffff);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u), one_i = _mm512_set1_epi32(1);
    const __m512i e254 = _mm512_set1_epi32(254);
    const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
    for (pyet_intp i = 0; i < n; i += 16) {
        const __mmask16 live = n - i >= 16 ? (__mmask16)0xffff
                                           : (__mmask16)((1u << (unsigned)(n - i)) - 1u);
        const __m512 a = (sflags & 1) ? _mm512_set1_ps(A[0]) : _mm512_maskz_loadu_ps(live, A + i);
        const __m512 b = (sflags & 2) ? _mm512_set1_ps(B[0]) : _mm512_maskz_loadu_ps(live, B + i);
        const __m512i ua = _mm512_castps_si512(a), ub = _mm512_castps_si512(b);
        const __m512i ea = _mm512_and_si512(_mm512_srli_epi32(ua, 23), expm);
        const __m512i eb = _mm512_and_si512(_mm512_srli_epi32(ub, 23), expm);
        const __m512i d = _mm512_sub_epi32(ea, eb);
        const __mmask16 bnorm = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(eb, one_i), e254);
        const __mmask16 anorm = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(ea, one_i), e254)
            & _mm512_cmple_epi32_mask(d, _mm512_set1_epi32(28))
            & _mm512_cmpge_epi32_mask(d, _mm512_set1_epi32(-124));
        const __mmask16 ok = bnorm & (_mm512_testn_epi32_mask(ua, absm) | anorm);
        const __m512 a1 = _mm512_maskz_mov_ps(ok, a), b1 = _mm512_mask_mov_ps(one, ok, b);
        const __m512d alo = _mm512_cvtps_pd(_mm512_castps512_ps256(a1));
        const __m512d ahi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(a1, 1));
        const __m512d blo = _mm512_cvtps_pd(_mm512_castps512_ps256(b1));
        const __m512d bhi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(b1, 1));
        const int tz = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
        const __m512d tlo = _mm512_roundscale_pd(_mm512_div_pd(alo, blo), tz);
        const __m512d thi = _mm512_roundscale_pd(_mm512_div_pd(ahi, bhi), tz);
        const __m512 r = _mm512_insertf32x8(
            _mm512_castps256_ps512(_mm512_cvtpd_ps(_mm512_sub_pd(alo, _mm512_mul_pd(tlo, blo)))),
            _mm512_cvtpd_ps(_mm512_sub_pd(ahi, _mm512_mul_pd(thi, bhi))), 1);
        const __m512i ua1 = _mm512_castps_si512(a1), ub1 = _mm512_castps_si512(b1);
        /* fmodf's sign is a's (zero too) */
        __m512 mod = _mm512_castsi512_ps(_mm512_or_si512(
            _mm512_andnot_si512(sign, _mm512_castps_si512(r)), _mm512_and_si512(sign, ua1)));
        __m512 div = _mm512_div_ps(_mm512_sub_ps(a1, mod), b1);
        /* mod != 0 and b < 0 != mod < 0 (b is not 0) */
        const __m512i umod = _mm512_castps_si512(mod);
        const __mmask16 adj = _mm512_test_epi32_mask(umod, absm)
            & _mm512_test_epi32_mask(_mm512_xor_si512(umod, ub1), sign);
        div = _mm512_mask_sub_ps(div, adj, div, one);
        __m512 res;
        if (op == OP_fmod) {
            res = mod;
        } else if (op == OP_remainder) {
            mod = _mm512_mask_add_ps(mod, adj, mod, b1);
            res = _mm512_mask_blend_ps(_mm512_test_epi32_mask(_mm512_castps_si512(mod), absm),
                                       _mm512_castsi512_ps(_mm512_and_si512(sign, ub1)), mod);
        } else {
            const __m512 fl = _mm512_roundscale_ps(div, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
            const __m512 up = _mm512_mask_add_ps(
                fl, _mm512_cmp_ps_mask(_mm512_sub_ps(div, fl), half, _CMP_GT_OQ), fl, one);
            res = _mm512_mask_blend_ps(
                _mm512_test_epi32_mask(_mm512_castps_si512(div), absm),
                _mm512_castsi512_ps(_mm512_and_si512(sign, _mm512_xor_si512(ua1, ub1))), up);
        }
        /* (a and b are kept: out may be an input, in place) */
        _mm512_mask_storeu_ps(out + i, live, res);
        __mmask16 left = live & (__mmask16)~ok;
        if (left) {
            float av[16], bv[16];
            _mm512_storeu_ps(av, a);
            _mm512_storeu_ps(bv, b);
            for (int j = 0; j < 16; j++)
                if (left & (1u << j))
                    out[i + j] = pyet_fdivmod_one_f32(op, av[j], bv[j]);
        }
    }
}

/* float64 //, % and fmod (8 lanes) as NumPy's npy_divmod and fmod, its
 * operations in its order, so its bits.  fmod's remainder: where b is normal
 * and |a| < |b| by exponent, a; where 0 <= e(a) - e(b) <= 50 (|a / b| < 2^51),
 * q = trunc(a / b) is the truncated quotient or one more in magnitude (a / b
 * rounds up to an integer at most), and a - q b in one fused multiply-add is
 * the remainder, representable so exact, or of the wrong sign, then redone
 * with q one less.  No flag but inexact rises.  The other lanes are redone one
 * by one (libm's fmod: NaN, inf, zero and subnormal divisors, huge
 * quotients).  NumPy calls fmod per element, ~5 ns: float64 a // b at 4096
 * took 0.69x its time with libm per element here, fmod 1.12x. */
PYET_AVX512 static void pyet_fdivmod_f64_avx512(int op, int sflags, pyet_intp n, double *out,
                                                const double *A, const double *B)
{
    const __m512i expm = _mm512_set1_epi64(0x7ff), absm = _mm512_set1_epi64(INT64_MAX);
    const __m512i sign = _mm512_set1_epi64(INT64_MIN), one_i = _mm512_set1_epi64(1);
    const __m512d one = _mm512_set1_pd(1.0), half = _mm512_set1_pd(0.5);
    for (pyet_intp i = 0; i < n; i += 8) {
        const __mmask8 live = n - i >= 8 ? (__mmask8)0xff
                                         : (__mmask8)((1u << (unsigned)(n - i)) - 1u);
        const __m512d a = (sflags & 1) ? _mm512_set1_pd(A[0]) : _mm512_maskz_loadu_pd(live, A + i);
        const __m512d b = (sflags & 2) ? _mm512_set1_pd(B[0]) : _mm512_maskz_loadu_pd(live, B + i);
        const __m512i ua = _mm512_castpd_si512(a), ub = _mm512_castpd_si512(b);
        const __m512i ea = _mm512_and_si512(_mm512_srli_epi64(ua, 52), expm);
        const __m512i eb = _mm512_and_si512(_mm512_srli_epi64(ub, 52), expm);
        const __m512i d = _mm512_sub_epi64(ea, eb);
        const __mmask8 bnorm = _mm512_cmplt_epu64_mask(_mm512_sub_epi64(eb, one_i),
                                                       _mm512_set1_epi64(2046));
        const __mmask8 small = _mm512_cmplt_epi64_mask(d, _mm512_setzero_si512());
        const __mmask8 near = _mm512_cmple_epu64_mask(d, _mm512_set1_epi64(50))
            & _mm512_cmplt_epi64_mask(ea, expm);
        const __mmask8 ok = bnorm & (small | near), quot = ok & near;
        const __m512d a1 = _mm512_maskz_mov_pd(ok, a), b1 = _mm512_mask_mov_pd(one, ok, b);
        const __m512d aq = _mm512_maskz_mov_pd(quot, a);
        const int tz = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
        __m512d q = _mm512_roundscale_pd(_mm512_div_pd(aq, b1), tz);
        __m512d r = _mm512_fnmadd_pd(q, b1, aq);
        /* r != 0 and its sign not a's: q was one too many */
        const __m512i ur = _mm512_castpd_si512(r);
        const __mmask8 over = _mm512_test_epi64_mask(ur, absm)
            & _mm512_test_epi64_mask(_mm512_xor_si512(ur, ua), sign);
        q = _mm512_mask_sub_pd(q, over, q, _mm512_castsi512_pd(_mm512_or_si512(
            _mm512_castpd_si512(one), _mm512_and_si512(sign, _mm512_castpd_si512(q)))));
        r = _mm512_mask_mov_pd(r, over, _mm512_fnmadd_pd(q, b1, aq));
        /* fmod's sign is a's (zero too); a itself where |a| < |b| */
        __m512d mod = _mm512_mask_mov_pd(_mm512_castsi512_pd(_mm512_or_si512(
            _mm512_andnot_si512(sign, _mm512_castpd_si512(r)), _mm512_and_si512(sign, ua))),
            small, a1);
        __m512d res;
        if (op == OP_fmod) {
            res = mod;
        } else {
            const __m512i ua1 = _mm512_castpd_si512(a1), ub1 = _mm512_castpd_si512(b1);
            __m512d div = _mm512_div_pd(_mm512_sub_pd(a1, mod), b1);
            /* mod != 0 and b < 0 != mod < 0 */
            const __m512i umod = _mm512_castpd_si512(mod);
            const __mmask8 adj = _mm512_test_epi64_mask(umod, absm)
                & _mm512_test_epi64_mask(_mm512_xor_si512(umod, ub1), sign);
            div = _mm512_mask_sub_pd(div, adj, div, one);
            if (op == OP_remainder) {
                mod = _mm512_mask_add_pd(mod, adj, mod, b1);
                res = _mm512_mask_blend_pd(
                    _mm512_test_epi64_mask(_mm512_castpd_si512(mod), absm),
                    _mm512_castsi512_pd(_mm512_and_si512(sign, ub1)), mod);
            } else {
                const __m512d fl = _mm512_roundscale_pd(div, _MM_FROUND_TO_NEG_INF
                                                        | _MM_FROUND_NO_EXC);
                const __m512d up = _mm512_mask_add_pd(
                    fl, _mm512_cmp_pd_mask(_mm512_sub_pd(div, fl), half, _CMP_GT_OQ), fl, one);
                /* a zero quotient's sign, NumPy's copysign(0, a / b), from the
                 * signs; where that a / b underflows it raises the flag: those
                 * lanes divide (masked-off lanes raise nothing) */
                __m512i zsign = _mm512_and_si512(sign, _mm512_xor_si512(ua1, ub1));
                const __mmask8 tiny = small & ok & _mm512_testn_epi64_mask(
                    _mm512_castpd_si512(div), absm) & (_mm512_cmplt_epi64_mask(
                    d, _mm512_set1_epi64(-1020)) | _mm512_cmpeq_epi64_mask(
                    ea, _mm512_setzero_si512()));
                if (tiny)
                    zsign = _mm512_mask_and_epi64(zsign, tiny, sign, _mm512_castpd_si512(
                        _mm512_maskz_div_pd(tiny, a1, b1)));
                res = _mm512_mask_blend_pd(
                    _mm512_test_epi64_mask(_mm512_castpd_si512(div), absm),
                    _mm512_castsi512_pd(zsign), up);
            }
        }
        /* (a and b are kept: out may be an input, in place) */
        _mm512_mask_storeu_pd(out + i, live, res);
        __mmask8 left = live & (__mmask8)~ok;
        if (left) {
            double av[8], bv[8];
            _mm512_storeu_pd(av, a);
            _mm512_storeu_pd(bv, b);
            for (int j = 0; j < 8; j++)
                if (left & (1u << j))
                    out[i + j] = pyet_fdivmod_one_f64(op, av[j], bv[j]);
        }
    }
}
#endif


/* pyet_kernel, telling through *narrow (when not NULL) whether it went
 * straight to pyet_kernel_narrow: then every call with the same op, dtype,
 * operand kinds and scalar values (n > 0) does, and a pass may call that loop
 * itself (run_plain), past the ~70 instructions of the choice. */
static inline int pyet_kernel_body(int op, int dt, int sflags, pyet_intp n, void *out,
                                   void *const *in, int *narrow)
{
#ifdef PYET_EXP_AVX512
    if ((dt == DT_F32 || dt == DT_F64) && PYET_IS_DIV(op) && pyet_have_avx512()) {
        if (dt == DT_F32)
            pyet_fdivmod_f32_avx512(op, sflags, n, (float *)out, (const float *)in[0],
                                    (const float *)in[1]);
        else
            pyet_fdivmod_f64_avx512(op, sflags, n, (double *)out, (const double *)in[0],
                                    (const double *)in[1]);
        return 1;
    }
#endif
#ifdef PYET_IDIV_AVX512
    if ((dt == DT_I32 || dt == DT_I64) && !(sflags & 2) && n > 0 && PYET_IS_DIV(op)
        && pyet_have_avx512()) {
        pyet_idiv_arrays_avx512(op, dt, sflags, n, out, in);  /* (its own warnings) */
        return 1;
    }
#endif
    if ((dt == DT_I32 || dt == DT_I64) && n > 0 && PYET_IS_DIV(op))
        pyet_idiv_flags(op, dt, sflags, n, in);
    if ((dt == DT_I32 || dt == DT_I64) && (sflags & 3) == 2 && n > 0 && PYET_IS_DIV(op)) {
#ifdef PYET_IDIV_AVX512
        if (pyet_have_avx512() && pyet_idiv_avx512(op, dt, n, out, in)) return 1;
#endif
        return pyet_kernel_idiv(op, dt, n, out, in);
    }
#ifdef PYET_IDIV_AVX512
    if (dt == DT_I64 && op == OP_power && (sflags & 3) == 2 && n > 0 &&
        *(const int64_t *)in[1] > 2 && pyet_have_avx512()) {
        pyet_ipow64_avx512(n, out, in[0], *(const int64_t *)in[1]);
        return 1;
    }
    if ((dt == DT_I32 || dt == DT_I64) && op == OP_power && !(sflags & 2) && n > 0 &&
        pyet_have_avx512()) {
        if (dt == DT_I64)
            pyet_ipow_arrays64(sflags, n, (int64_t *)out, (const int64_t *)in[0],
                               (const int64_t *)in[1]);
        else
            pyet_ipow_arrays32(sflags, n, (int32_t *)out, (const int32_t *)in[0],
                               (const int32_t *)in[1]);
        return 1;
    }
#endif
    if (dt == DT_F32 && op == OP_power && !pyet_pow_direct(dt, sflags, n, in)) {
        const int k = pyet_powf_small_int(sflags, n, in);
        if (k) return pyet_kernel_powi_f32(k, n, out, in);
#ifdef PYET_POWF_AVX512
        if (pyet_have_avx512()) {
            pyet_powf_avx512(sflags, n, out, in);
            return 1;
        }
#endif
        return pyet_kernel_pow(op, dt, sflags, n, out, in);
    }
#ifdef PYET_EXP_AVX512
    if (dt == DT_F64 && pyet_have_avx512()) {
        if (op == OP_log && !(sflags & 1)) {
            pyet_log_avx512(n, out, in[0]);
            return 1;
        }
        if ((op == OP_sin || op == OP_cos) && !(sflags & 1)) {
            (op == OP_sin ? pyet_sin_avx512 : pyet_cos_avx512)(n, out, in[0]);
            return 1;
        }
        if (op == OP_power && !pyet_pow_direct(dt, sflags, n, in)) {
            pyet_pow_avx512(sflags, n, out, in);
            return 1;
        }
        if ((op == OP_exp || op == OP_sigmoid) && !(sflags & 1)) {
            pyet_exp_avx512(op, n, out, in[0], 1.0, 1.0);
            return 1;
        }
        if (op == OP_tanh && !(sflags & 1)) {
            pyet_tanh_avx512(n, out, in[0]);
            return 1;
        }
        if (op == OP_logaddexp || op == OP_logaddexp2) {
            pyet_logaddexp_avx512(op, 0, sflags, n, out, in);
            return 1;
        }
        if (op == OP_erf && !(sflags & 1)) {
            pyet_erf_avx512(n, out, in[0]);
            return 1;
        }
        if (op == OP_logistic && !(sflags & 4)) {
            pyet_exp_avx512(op, n, out, in[2], *(const double *)in[0], *(const double *)in[1]);
            return 1;
        }
    }
#endif
    if ((dt == DT_F64 && op == OP_log)
        || (dt == DT_F64 && op == OP_power && !pyet_pow_direct(dt, sflags, n, in)))
        return pyet_kernel_pow(op, dt, sflags, n, out, in);
#ifdef PYET_EXP_AVX512
    if (dt == DT_F32 && op == OP_tanh && !(sflags & 1) && pyet_have_avx512()) {
        pyet_tanhf_avx512(n, out, in[0]);
        return 1;
    }
    if (dt == DT_F32 && pyet_have_avx512()) {
        if (op == OP_logaddexp || op == OP_logaddexp2) {
            pyet_logaddexp_avx512(op, 1, sflags, n, out, in);
            return 1;
        }
        if ((op == OP_exp || op == OP_sigmoid) && !(sflags & 1)) {
            pyet_expf_avx512(op, n, out, in[0], 1.0f, 1.0f);
            return 1;
        }
        if (op == OP_erf && !(sflags & 1)) {
            pyet_erff_avx512(n, out, in[0]);
            return 1;
        }
        if (op == OP_logistic && !(sflags & 4)) {
            pyet_expf_avx512(op, n, out, in[2], *(const float *)in[0], *(const float *)in[1]);
            return 1;
        }
    }
#endif
    /* (float32 sin and cos contiguous: pyet_sincosf_avx512_body measured no
     * faster than these 256-bit loops, 0.85-0.9x NumPy's time either way) */
    if (dt == DT_F32 && (op == OP_sin || op == OP_cos || op == OP_log || op == OP_tanh)) {
        static int fma_ = -1;  /* a benign race: every thread stores the same */
        if (fma_ < 0) fma_ = PYET_HAVE_FMA() != 0;
        if (fma_) return pyet_kernel_f32math(op, sflags, n, out, in);
        if (op != OP_tanh) return pyet_kernel_trig_f32(op, n, out, in);
    }
#ifdef PYET_NARROW512
    /* Float arithmetic (+ - * /, max and min, the fused patterns) stays at
     * 256 bits (max and min: the wide loops' clone): alone at 512 bits it
     * gained 5-10 % from L2 (more from L1), but no gain showed in whole
     * assignments on the noisy shared host, where it may cost: Xeons lower
     * their clock after heavy 512-bit float instructions.  Moves, abs,
     * signs, compares (1.5-2x alone) and integer ops take the 512-bit loops. */
    if (pyet_use_narrow512() &&
        (dt == DT_BOOL || dt == DT_I32 || dt == DT_I64 || op == OP_absolute ||
         op == OP_negative || op == OP_positive || op == OP_copy || op == OP_copysign ||
         op == OP_where || op == OP_isnan || op == OP_isinf || op == OP_isfinite ||
         (op >= OP_less && op <= OP_not_equal)) &&
        pyet_kernel_narrow512(op, dt, sflags, n, out, in))
        return 1;
#endif
    if ((dt == DT_F32 || dt == DT_F64) &&
        (op == OP_exp || op == OP_tanh || op == OP_sqrt || op == OP_sigmoid || op == OP_logistic ||
         op == OP_scale_div || op == OP_div_sqrt || op == OP_sub_div_sqrt ||
         op == OP_div_sqrt_div || op == OP_sub_div_sqrt_div ||
         op == OP_adam || op == OP_adam_torch ||
         op == OP_maximum || op == OP_minimum))
        return pyet_kernel_wide(op, dt, sflags, n, out, in);
    if (narrow)  /* (not integer divisions: their flags are raised above, each call) */
        *narrow = n > 0 && !((dt == DT_I32 || dt == DT_I64) && PYET_IS_DIV(op));
    return pyet_kernel_narrow(op, dt, sflags, n, out, in);
}

int pyet_kernel(int op, int dt, int sflags, pyet_intp n, void *out, void *const *in)
{
    return pyet_kernel_body(op, dt, sflags, n, out, in, NULL);
}

int pyet_kernel_routed(int op, int dt, int sflags, pyet_intp n, void *out, void *const *in,
                       int *narrow)
{
    *narrow = 0;
    return pyet_kernel_body(op, dt, sflags, n, out, in, narrow);
}

/* 1 where pyet_kernel computes op in SIMD lanes although ops.NUMPY_LOOPS
 * lists it (its kernel elsewhere is libm per element, as NumPy's loop):
 * logaddexp and logaddexp2 at AVX-512 */
int pyet_kernel_in_lanes(int op)
{
#ifdef PYET_EXP_AVX512
    return (op == OP_logaddexp || op == OP_logaddexp2) && pyet_have_avx512();
#else
    (void)op;
    return 0;
#endif
}

/* 1 where pyet_kernel runs its memory-bound loops at 512 bits (Intel: see
 * pyet_kernel_narrow512); elsewhere they stay at 256 and NumPy's AVX-512
 * loops can be faster (the engine's choice, loops.pxi CONTIG_LOOPS) */
int pyet_kernel_wide512(void)
{
#ifdef PYET_NARROW512
    return pyet_use_narrow512();
#else
    return 0;
#endif
}

/* 1 on Intel CPUs, where the engine's software prefetch was measured to help
 * (blocks.pxi PREFETCH_BYTES); on AMD Zen 4 it cost 1.15-2.5x */
int pyet_cpu_intel(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_cpu_is("intel");
#else
    return 0;
#endif
}

/* int64 relu of x read every stride bytes, four loads in flight as NumPy's
 * maximum(a, 0) loop (gathered into blocks first: 1.27x its time on a[::3];
 * AVX-512 gathers: 1.47x).  x & ~(x >> 63) is pyet_max_i64(x, 0) without its
 * compare and cmov: a[::2] 0.77x NumPy's time, 1.0x with them. */
static void pyet_relu_i64_strided(pyet_intp n, void *out, const void *in, pyet_intp stride)
{
    int64_t *o = (int64_t *)out;
    const char *p = (const char *)in;
    pyet_intp i = 0;
    for (; i + 4 <= n; i += 4, p += 4 * stride) {
        int64_t x0, x1, x2, x3;
        memcpy(&x0, p, 8);
        memcpy(&x1, p + stride, 8);
        memcpy(&x2, p + 2 * stride, 8);
        memcpy(&x3, p + 3 * stride, 8);
        o[i] = x0 & ~(x0 >> 63);
        o[i + 1] = x1 & ~(x1 >> 63);
        o[i + 2] = x2 & ~(x2 >> 63);
        o[i + 3] = x3 & ~(x3 >> 63);
    }
    for (; i < n; i++, p += stride) {
        int64_t x;
        memcpy(&x, p, 8);
        o[i] = x & ~(x >> 63);
    }
}

/* One-operand kernels that read their operand at any step (stride bytes,
 * negative too) and write n contiguous items: AVX-512 gathers in the loop,
 * where the engine's gathering into a block first cost 1.1-1.4x NumPy's
 * strided SIMD loops (float32 sin, cos, tanh, float64 tanh, exp, sigmoid and
 * log; issue 15; erf of both, 1.1x SciPy's loop), and int64 relu (at any
 * step, on any CPU).
 * Returns 0 (nothing done) where it has none: without AVX-512, for other
 * ops, steps beyond 2^26 bytes; with n == 0 it only answers that. */
int pyet_kernel_strided(int op, int dt, pyet_intp n, void *out, const void *in,
                        pyet_intp stride)
{
    if (op == OP_relu && dt == DT_I64) {
        if (n) pyet_relu_i64_strided(n, out, in, stride);
        return 1;
    }
#ifdef PYET_EXP_AVX512
    if (stride > ((pyet_intp)1 << 26) || stride < -((pyet_intp)1 << 26) || !pyet_have_avx512())
        return 0;
    if (dt == DT_F32 && (op == OP_sin || op == OP_cos)) {
        static int fma_ = -1;  /* (the bits of pyet_kernel_f32math's FMA loops) */
        if (fma_ < 0) fma_ = PYET_HAVE_FMA() != 0;
        if (!fma_) return 0;
        if (n) pyet_sincosf_avx512_strided(op == OP_cos, n, out, in, stride);
        return 1;
    }
    if (dt == DT_F32 && op == OP_tanh) {
        if (n) pyet_tanhf_avx512_strided(n, out, in, stride);
        return 1;
    }
    if (dt == DT_F64 && op == OP_tanh) {
        if (n) pyet_tanh_avx512_strided(n, out, in, stride);
        return 1;
    }
    if ((dt == DT_F32 || dt == DT_F64) && op == OP_erf) {
        if (n) (dt == DT_F64 ? pyet_erf_avx512_strided : pyet_erff_avx512_strided)(n, out, in,
                                                                              stride);
        return 1;
    }
    if (dt == DT_F64 && (op == OP_exp || op == OP_sigmoid)) {
        if (n) pyet_exp_avx512_strided(op, n, out, in, stride);
        return 1;
    }
    if (dt == DT_F64 && op == OP_log) {
        if (n) pyet_log_avx512_strided(n, out, in, stride);
        return 1;
    }
    if (dt == DT_F64 && (op == OP_sin || op == OP_cos)) {
        if (n) (op == OP_sin ? pyet_sin_avx512_strided : pyet_cos_avx512_strided)(n, out, in,
                                                                               stride);
        return 1;
    }
#endif
    (void)op; (void)dt; (void)n; (void)out; (void)in; (void)stride;
    return 0;
}

/* A fused op (PYET_FUSED_CASES: s*x + y, x*y + z...) or + - * / maximum
 * minimum reading each array input every steps[j] bytes where it lies (0:
 * one value), the same expressions as pyet_kernel's, so its bits.  Strided rows gathered into
 * blocks first cost a copy pass before the kernel's: float64 a*b + c on
 * three a[::3] rows took 1.3-1.5x NumPy's two passes, which compute as they
 * load.  Returns 0 (nothing done) for other ops; with n == 0 it only
 * answers that. */
/* x op y, each read every steps[j] bytes (pyet_kernel_sx) */
#define PYET_SX2(T, EXPR)                                                   \
    do {                                                                    \
        T *O_ = (T *)out;                                                   \
        for (pyet_intp i = 0; i < n; i++) {                                 \
            const T x = PYET_AT_STEP(T, in[0], 0), y = PYET_AT_STEP(T, in[1], 1); \
            O_[i] = (T)(EXPR);                                              \
        }                                                                   \
    } while (0)
#define PYET_SX_CASES(T, SUF)                                               \
    case OP_add: PYET_SX2(T, x + y); return 1;                              \
    case OP_subtract: PYET_SX2(T, x - y); return 1;                         \
    case OP_multiply: PYET_SX2(T, x * y); return 1;                         \
    case OP_maximum: PYET_SX2(T, pyet_max_##SUF(x, y)); return 1;           \
    case OP_minimum: PYET_SX2(T, pyet_min_##SUF(x, y)); return 1;

PYET_DISPATCH int pyet_kernel_sx(int op, int dt, pyet_intp n, void *out, void *const *in,
                                 const pyet_intp *steps)
{
    int64_t zero_ = 0;
    void *none_[PYET_MAX_IN];
    if (n == 0) {  /* the answer only (the cases load their scalars first) */
        for (int j = 0; j < PYET_MAX_IN; j++) none_[j] = &zero_;
        in = none_;
        out = &zero_;
    }
    switch (dt) {
    case DT_I32: switch (op) { PYET_FUSED_CASES_AT(int32_t, PYET_AT_STEP)
                               PYET_SX_CASES(int32_t, i32) default: return 0; }
    case DT_I64: switch (op) { PYET_FUSED_CASES_AT(int64_t, PYET_AT_STEP)
                               PYET_SX_CASES(int64_t, i64) default: return 0; }
    case DT_F32: switch (op) { PYET_FUSED_CASES_AT(float, PYET_AT_STEP)
                               PYET_SX_CASES(float, f32)
                               case OP_divide: PYET_SX2(float, x / y); return 1;
                               default: return 0; }
    case DT_F64: switch (op) { PYET_FUSED_CASES_AT(double, PYET_AT_STEP)
                               PYET_SX_CASES(double, f64)
                               case OP_divide: PYET_SX2(double, x / y); return 1;
                               default: return 0; }
    }
    return 0;
}
#endif /* PYET_KERNELS_PART_ELEMENTWISE */

#ifdef PYET_KERNELS_PART_NARROW512_REDUCE
/* ------------------------------------------------------ data movement */

/* VALUE(x): what an element means (a bool's x != 0: any byte but 0 is true) */
#define PYET_CAST_LOOP(TI, VALUE)                                           \
    do {                                                                    \
        const TI *X_ = (const TI *)in;                                      \
        switch (dt_out) {                                                   \
        case DT_BOOL:                                                       \
            for (pyet_intp i = 0; i < n; i++) ((pyet_bool *)out)[i] = X_[i] != 0; \
            break;                                                          \
        case DT_I32:                                                        \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++)                    \
                ((int32_t *)out)[i] = (int32_t)VALUE(X_[i]);                \
            break;                                                          \
        case DT_I64:                                                        \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++)                    \
                ((int64_t *)out)[i] = (int64_t)VALUE(X_[i]);                \
            break;                                                          \
        case DT_F32:                                                        \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++)                    \
                ((float *)out)[i] = (float)VALUE(X_[i]);                    \
            break;                                                          \
        case DT_F64:                                                        \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++)                    \
                ((double *)out)[i] = (double)VALUE(X_[i]);                  \
            break;                                                          \
        }                                                                   \
    } while (0)

#define PYET_CAST_FROM(TI) PYET_CAST_LOOP(TI, PYET_AS_IS)
#define PYET_CAST_BODY                                                      \
    if (dt_in == DT_BOOL) PYET_CAST_LOOP(pyet_bool, PYET_NONZERO);          \
    else PYET_SWITCH_DT(dt_in, PYET_CAST_FROM)

PYET_DISPATCH static void pyet_cast_narrow(int dt_in, int dt_out, pyet_intp n, void *out,
                                           const void *in)
{
    PYET_CAST_BODY
}

#ifdef PYET_NARROW512
PYET_TARGET512 static void pyet_cast512(int dt_in, int dt_out, pyet_intp n, void *out,
                                        const void *in)
{
    PYET_CAST_BODY
}
#endif

/* Contiguous dtype conversion (only same_kind-safe casts are planned). */
void pyet_cast(int dt_in, int dt_out, pyet_intp n, void *out, const void *in)
{
#ifdef PYET_NARROW512
    if (pyet_use_narrow512()) {
        pyet_cast512(dt_in, dt_out, n, out, in);
        return;
    }
#endif
    pyet_cast_narrow(dt_in, dt_out, n, out, in);
}

#define PYET_STRIDED_COPY(T)                                                \
    do {                                                                    \
        if (ss == 0 && ds == (pyet_intp)sizeof(T)) {                        \
            /* a value broadcast along the row into a block: vectorized */   \
            const T v_ = *(const T *)src;                                   \
            T *D_ = (T *)dst;                                               \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) D_[i] = v_;        \
        } else if (ss == 0) {                                               \
            const T v_ = *(const T *)src;                                   \
            for (pyet_intp i = 0; i < n; i++) *(T *)(dst + i * ds) = v_;    \
        } else if (ds == (pyet_intp)sizeof(T) && ss == -(pyet_intp)sizeof(T)) { \
            /* a reversed row (a[::-1]) into a block: vectorized, permuted */ \
            T *D_ = (T *)dst;                                               \
            const T *S_ = (const T *)src;                                   \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) D_[i] = S_[-i];    \
        } else if (ss == (pyet_intp)sizeof(T) && ds == -(pyet_intp)sizeof(T)) { \
            T *D_ = (T *)dst;                                               \
            const T *S_ = (const T *)src;                                   \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) D_[-i] = S_[i];    \
        } else if (ds == (pyet_intp)sizeof(T) && ss == 2 * (pyet_intp)sizeof(T)) { \
            /* every other element (a[::2]) into a block: a constant step \
             * the compiler vectorizes with permutes */                     \
            T *D_ = (T *)dst;                                               \
            const T *S_ = (const T *)src;                                   \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) D_[i] = S_[2 * i]; \
        } else if (ss == (pyet_intp)sizeof(T) && ds == 2 * (pyet_intp)sizeof(T)) { \
            T *D_ = (T *)dst;                                               \
            const T *S_ = (const T *)src;                                   \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) D_[2 * i] = S_[i]; \
        } else if (ds == (pyet_intp)sizeof(T) && ss == 3 * (pyet_intp)sizeof(T)) { \
            T *D_ = (T *)dst;                                               \
            const T *S_ = (const T *)src;                                   \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) D_[i] = S_[3 * i]; \
        } else if (ds == (pyet_intp)sizeof(T)) {                            \
            /* any other step into a block: four loads in flight per turn   \
             * (one at a time, each waited for its address, ~0.4 ns/item) */ \
            T *D_ = (T *)dst;                                               \
            pyet_intp i = 0;                                                \
            for (; i + 4 <= n; i += 4, src += 4 * ss) {                     \
                T a_ = *(const T *)src, b_ = *(const T *)(src + ss);        \
                T c_ = *(const T *)(src + 2 * ss), d_ = *(const T *)(src + 3 * ss); \
                D_[i] = a_; D_[i + 1] = b_; D_[i + 2] = c_; D_[i + 3] = d_;  \
            }                                                               \
            for (; i < n; i++, src += ss) D_[i] = *(const T *)src;          \
        } else if (ss == (pyet_intp)sizeof(T)) {                            \
            const T *S_ = (const T *)src;                                   \
            pyet_intp i = 0;                                                \
            for (; i + 4 <= n; i += 4, dst += 4 * ds) {                     \
                T a_ = S_[i], b_ = S_[i + 1], c_ = S_[i + 2], d_ = S_[i + 3]; \
                *(T *)dst = a_; *(T *)(dst + ds) = b_;                      \
                *(T *)(dst + 2 * ds) = c_; *(T *)(dst + 3 * ds) = d_;        \
            }                                                               \
            for (; i < n; i++, dst += ds) *(T *)dst = S_[i];                \
        } else {                                                            \
            for (pyet_intp i = 0; i < n; i++)                               \
                *(T *)(dst + i * ds) = *(const T *)(src + i * ss);          \
        }                                                                   \
    } while (0)

/* take's indices (nn.wrapped_indices): o = x with n added to the negative
 * ones; their least and greatest value (before that) in *lo and *hi.  The
 * x86-64-v3 clone compares 4 a vector (the Cython loop, baseline SSE2 with no
 * 64-bit compare, took 3.4 us for 4096 indices: 11 % of a 2^18-item take) */
PYET_DISPATCH void pyet_wrap_indices(const int64_t *x, int64_t *o, pyet_intp size, int64_t n,
                                     int64_t *lo, int64_t *hi)
{
    int64_t l = size ? x[0] : 0, h = l;
    for (pyet_intp i = 0; i < size; i++) {
        const int64_t v = x[i];
        l = v < l ? v : l;
        h = v > h ? v : h;
        o[i] = v < 0 ? v + n : v;
    }
    *lo = l;
    *hi = h;
}

/* Strided copy of n items; strides in bytes (0 on src broadcasts). */
PYET_DISPATCH void pyet_copy_strided(char *dst, pyet_intp ds, const char *src,
                                     pyet_intp ss, pyet_intp n, int itemsize)
{
    if (ds == itemsize && ss == itemsize) {
        memcpy(dst, src, (size_t)(n * itemsize));
        return;
    }
    switch (itemsize) {
    case 1: PYET_STRIDED_COPY(uint8_t); break;
    case 4: PYET_STRIDED_COPY(uint32_t); break;
    case 8: PYET_STRIDED_COPY(uint64_t); break;
    }
}

/* rows x inner items into the contiguous block dst, row r from src + r * rs,
 * its items cs bytes apart: packed blocks' gathers of short rows, one call
 * for a block's whole rows (a call a row piece cost ~30 instructions a row of
 * 2-8 items).  cs 0 (a column broadcast: one value a row) fills each row,
 * unrolled for rows of 2, 4 and 8. */
#define PYET_FILL_ROWS(T, W)                                                \
    do {                                                                    \
        T *D_ = (T *)dst;                                                   \
        for (pyet_intp r = 0; r < rows; r++) {                              \
            const T v_ = *(const T *)(src + r * rs);                        \
            for (pyet_intp i = 0; i < (W); i++) D_[r * (W) + i] = v_;       \
        }                                                                   \
    } while (0)
#define PYET_FILL_ROWS_W(T)                                                 \
    do {                                                                    \
        if (inner == 2) PYET_FILL_ROWS(T, 2);                               \
        else if (inner == 4) PYET_FILL_ROWS(T, 4);                          \
        else if (inner == 8) PYET_FILL_ROWS(T, 8);                          \
        else PYET_FILL_ROWS(T, inner);                                      \
    } while (0)

/* A block of rows x inner items scattered a column at a time (inner strided
 * copies of all the rows) where the rows lie closer together in dst than a
 * row's items and are more than its items: each column written in order (a
 * C leaf's rows of 2-8 into a Fortran destination were a call of 2-8 items
 * a row: float32 (32768, 2) 10x NumPy's copy). */
static inline int pyet_columns_first(pyet_intp rows, pyet_intp inner, pyet_intp rs,
                                     pyet_intp cs)
{
    const pyet_intp ars = rs < 0 ? -rs : rs, acs = cs < 0 ? -cs : cs;
    return rows > inner && ars < acs;
}

#define PYET_SHORT_ROWS(T, W)                                               \
    do {                                                                    \
        T *D_ = (T *)dst;                                                   \
        for (pyet_intp r = 0; r < rows; r++, D_ += (W), src += rs)          \
            for (pyet_intp i = 0; i < (W); i++) D_[i] = *(const T *)(src + i * cs); \
    } while (0)
#define PYET_SHORT_ROWS_W(T)                                                \
    do {                                                                    \
        switch (inner) {                                                    \
        case 2: PYET_SHORT_ROWS(T, 2); break;                               \
        case 3: PYET_SHORT_ROWS(T, 3); break;                               \
        case 4: PYET_SHORT_ROWS(T, 4); break;                               \
        case 5: PYET_SHORT_ROWS(T, 5); break;                               \
        case 6: PYET_SHORT_ROWS(T, 6); break;                               \
        case 7: PYET_SHORT_ROWS(T, 7); break;                               \
        case 8: PYET_SHORT_ROWS(T, 8); break;                               \
        default: PYET_SHORT_ROWS(T, inner);                                 \
        }                                                                   \
    } while (0)

#define PYET_REVERSED_ROWS(T)                                               \
    do {                                                                    \
        T *D_ = (T *)dst;                                                   \
        for (pyet_intp r = 0; r < rows; r++, D_ += inner) {                 \
            const T *S_ = (const T *)(src + r * rs);                        \
            PYET_IVDEP for (pyet_intp i = 0; i < inner; i++) D_[i] = S_[-i]; \
        }                                                                   \
    } while (0)

PYET_DISPATCH void pyet_copy_rows(char *dst, const char *src, pyet_intp rs, pyet_intp cs,
                                  pyet_intp rows, pyet_intp inner, int itemsize)
{
    if (cs == 0) {
        if (itemsize == 8) PYET_FILL_ROWS_W(uint64_t);
        else if (itemsize == 4) PYET_FILL_ROWS_W(uint32_t);
        else PYET_FILL_ROWS_W(uint8_t);
        return;
    }
    if (cs == -(pyet_intp)itemsize && (itemsize == 8 || itemsize == 4)) {
        /* reversed rows (flip(a + b, -1)): one loop, no call a row (short
         * rows of 16 float64 were ~75 instructions a row in calls) */
        if (itemsize == 8) PYET_REVERSED_ROWS(uint64_t);
        else PYET_REVERSED_ROWS(uint32_t);
        return;
    }
    if (inner <= 8 && rows > inner && (itemsize == 8 || itemsize == 4)) {
        /* short rows (a Fortran leaf's rows in a C-ordered pass): one loop,
         * the rows' items unrolled, dst written in order (a call a row of
         * 2-8 items cost more than the copy; a column at a time wrote dst's
         * lines 2-8 times, float64 (8192, 8) 1.26x NumPy into dst) */
        if (itemsize == 8) PYET_SHORT_ROWS_W(uint64_t);
        else PYET_SHORT_ROWS_W(uint32_t);
        return;
    }
    if (cs == (pyet_intp)itemsize) {
        /* contiguous rows, not a pyet_copy_strided call each; rows of whole
         * 32-byte pieces up to 256 bytes moved inline (a CNN's activations
         * transposed, pyet/NumPy, t(a) + 1: float32 (256, 32, 4, 4) 0.67 ->
         * 0.55-0.59, (512, 8, 16) 0.72 -> 0.54-0.57, (256, 16, 8, 8) 0.87 ->
         * 0.81-0.86; a memcpy call a row: 0.66, 0.66, 0.93) */
        const pyet_intp nb = inner * itemsize;
        if (nb <= 256 && nb % 32 == 0) {
            for (pyet_intp r = 0; r < rows; r++)
                for (pyet_intp o = 0; o < nb; o += 32)
                    __builtin_memcpy(dst + r * nb + o, src + r * rs + o, 32);
        } else {
            for (pyet_intp r = 0; r < rows; r++)
                memcpy(dst + r * nb, src + r * rs, (size_t)nb);
        }
        return;
    }
    for (pyet_intp r = 0; r < rows; r++)
        pyet_copy_strided(dst + r * inner * itemsize, itemsize, src + r * rs, cs, inner,
                          itemsize);
}
#undef PYET_REVERSED_ROWS
#undef PYET_SHORT_ROWS_W
#undef PYET_SHORT_ROWS
#undef PYET_FILL_ROWS_W
#undef PYET_FILL_ROWS

/* The contiguous block src of rows x inner items written back to rows
 * rs bytes apart, items cs apart: packed blocks' scatter into a destination
 * with strided rows, one call for a block's whole rows; one strided copy when
 * the rows follow on (big[:, ::2] of a twice-as-wide big). */
PYET_DISPATCH void pyet_scatter_rows(char *dst, pyet_intp rs, pyet_intp cs, const char *src,
                                     pyet_intp rows, pyet_intp inner, int itemsize)
{
    if (rs == inner * cs) {
        pyet_copy_strided(dst, cs, src, itemsize, rows * inner, itemsize);
        return;
    }
    if (pyet_columns_first(rows, inner, rs, cs)) {
        for (pyet_intp i = 0; i < inner; i++)
            pyet_copy_strided(dst + i * cs, rs, src + i * itemsize, inner * itemsize, rows,
                              itemsize);
        return;
    }
    for (pyet_intp r = 0; r < rows; r++)
        pyet_copy_strided(dst + r * rs, cs, src + r * inner * itemsize, itemsize, inner,
                          itemsize);
}

/* k (2 to 4) strided rows of n items, byte steps ss[j] (none 0), into the
 * contiguous blocks dst[j] in one loop: the rows' loads interleave, where a
 * loop a row waits on one row's misses at a time (float64 a*b + c of three
 * a[::7] rows beyond the caches: 1.19x NumPy's two passes a row at a time,
 * 1.02-1.08x interleaved, in C). */
#define PYET_GATHER_ROWS(T, K)                                              \
    do {                                                                    \
        for (pyet_intp i = 0; i < n; i++)                                   \
            for (int j = 0; j < (K); j++)                                   \
                ((T *)dst[j])[i] = *(const T *)(src[j] + i * ss[j]);       \
    } while (0)
#define PYET_GATHER_ROWS_K(T)                                               \
    do {                                                                    \
        if (k == 2) PYET_GATHER_ROWS(T, 2);                                 \
        else if (k == 3) PYET_GATHER_ROWS(T, 3);                            \
        else PYET_GATHER_ROWS(T, 4);                                        \
    } while (0)

PYET_DISPATCH void pyet_gather_rows(int k, char *const *dst, const char *const *src,
                                    const pyet_intp *ss, pyet_intp n, int itemsize)
{
    if (itemsize == 8) PYET_GATHER_ROWS_K(uint64_t);
    else if (itemsize == 4) PYET_GATHER_ROWS_K(uint32_t);
    else PYET_GATHER_ROWS_K(uint8_t);
}
#undef PYET_GATHER_ROWS_K
#undef PYET_GATHER_ROWS

#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(PYET_NO_DISPATCH)
#define PYET_TILE_AVX2 1
/* A tile of whole source lines (rows * itemsize == 64, srow == itemsize)
 * transposed 8 x 8 (4-byte items) or 4 x 4 (8-byte) in registers: the
 * element-by-element copy stores one element at a time (a transposed
 * 181 x 181 float64 copy 0.88 ns an element, 1.8x NumPy's strided walk).
 * Shuffles move bits: NaN payloads are kept.  Returns the columns done. */
__attribute__((target("avx2"))) static pyet_intp
pyet_tile_lines_avx2(char *dst, pyet_intp drow, const char *src, pyet_intp ss, pyet_intp n,
                     int itemsize, int width, int prefetch)
{
    pyet_intp x = 0;
    if (itemsize == 4) {
        for (; x + 8 <= n; x += 8) {
            for (int i = 0; prefetch && i < 8 && x + 16 + i < n; i++)
                __builtin_prefetch(src + (x + 16 + i) * ss, 0, 3);
            for (int h = 0; h < width; h += 32) {
                const char *s0 = src + x * ss + h;
                const __m256 r0 = _mm256_loadu_ps((const float *)(s0));
                const __m256 r1 = _mm256_loadu_ps((const float *)(s0 + ss));
                const __m256 r2 = _mm256_loadu_ps((const float *)(s0 + 2 * ss));
                const __m256 r3 = _mm256_loadu_ps((const float *)(s0 + 3 * ss));
                const __m256 r4 = _mm256_loadu_ps((const float *)(s0 + 4 * ss));
                const __m256 r5 = _mm256_loadu_ps((const float *)(s0 + 5 * ss));
                const __m256 r6 = _mm256_loadu_ps((const float *)(s0 + 6 * ss));
                const __m256 r7 = _mm256_loadu_ps((const float *)(s0 + 7 * ss));
                const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
                const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
                const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
                const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
                const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
                const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
                const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
                const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
                char *d = dst + (h / 4) * drow + x * 4;
                _mm256_storeu_ps((float *)(d), _mm256_permute2f128_ps(u0, u4, 0x20));
                _mm256_storeu_ps((float *)(d + drow), _mm256_permute2f128_ps(u1, u5, 0x20));
                _mm256_storeu_ps((float *)(d + 2 * drow), _mm256_permute2f128_ps(u2, u6, 0x20));
                _mm256_storeu_ps((float *)(d + 3 * drow), _mm256_permute2f128_ps(u3, u7, 0x20));
                _mm256_storeu_ps((float *)(d + 4 * drow), _mm256_permute2f128_ps(u0, u4, 0x31));
                _mm256_storeu_ps((float *)(d + 5 * drow), _mm256_permute2f128_ps(u1, u5, 0x31));
                _mm256_storeu_ps((float *)(d + 6 * drow), _mm256_permute2f128_ps(u2, u6, 0x31));
                _mm256_storeu_ps((float *)(d + 7 * drow), _mm256_permute2f128_ps(u3, u7, 0x31));
            }
        }
    } else if (itemsize == 8) {
        for (; x + 4 <= n; x += 4) {
            for (int i = 0; prefetch && i < 4 && x + 16 + i < n; i++)  /* 16 rows on */
                __builtin_prefetch(src + (x + 16 + i) * ss, 0, 3);
            for (int h = 0; h < width; h += 32) {
                const char *s0 = src + x * ss + h;
                const __m256d r0 = _mm256_loadu_pd((const double *)(s0));
                const __m256d r1 = _mm256_loadu_pd((const double *)(s0 + ss));
                const __m256d r2 = _mm256_loadu_pd((const double *)(s0 + 2 * ss));
                const __m256d r3 = _mm256_loadu_pd((const double *)(s0 + 3 * ss));
                const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
                const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
                char *d = dst + (h / 8) * drow + x * 8;
                _mm256_storeu_pd((double *)(d), _mm256_permute2f128_pd(t0, t2, 0x20));
                _mm256_storeu_pd((double *)(d + drow), _mm256_permute2f128_pd(t1, t3, 0x20));
                _mm256_storeu_pd((double *)(d + 2 * drow), _mm256_permute2f128_pd(t0, t2, 0x31));
                _mm256_storeu_pd((double *)(d + 3 * drow), _mm256_permute2f128_pd(t1, t3, 0x31));
            }
        }
    }
    return x;
}
#endif

#ifdef __SSE2__
#include <emmintrin.h>
/* pyet_copy_tile's bytes (srow 1, rows a multiple of 8): 8 x 8 blocks
 * transposed in registers (three rounds of unpacks), eight 8-byte stores a
 * block where a byte at a time took 64 (bool F-order a & b into C at 64^2
 * 1.47x NumPy's time, int32 0.57x).  Returns the x done (n & -8). */
static pyet_intp pyet_tile_bytes_sse2(char *dst, pyet_intp drow, const char *src,
                                      pyet_intp ss, pyet_intp rows, pyet_intp n)
{
    pyet_intp x = 0;
    for (; x + 8 <= n; x += 8)
        for (pyet_intp t = 0; t < rows; t += 8) {
            const char *s0 = src + x * ss + t;
            __m128i r[8];
            for (int i = 0; i < 8; i++) r[i] = _mm_loadl_epi64((const __m128i *)(s0 + i * ss));
            const __m128i a = _mm_unpacklo_epi8(r[0], r[1]), b = _mm_unpacklo_epi8(r[2], r[3]);
            const __m128i c = _mm_unpacklo_epi8(r[4], r[5]), d = _mm_unpacklo_epi8(r[6], r[7]);
            const __m128i e = _mm_unpacklo_epi16(a, b), f = _mm_unpackhi_epi16(a, b);
            const __m128i g = _mm_unpacklo_epi16(c, d), h = _mm_unpackhi_epi16(c, d);
            const __m128i o[4] = {_mm_unpacklo_epi32(e, g), _mm_unpackhi_epi32(e, g),
                                  _mm_unpacklo_epi32(f, h), _mm_unpackhi_epi32(f, h)};
            char *d0 = dst + t * drow + x;
            for (int i = 0; i < 4; i++) {  /* rows t + 2i and t + 2i + 1 */
                _mm_storel_epi64((__m128i *)(d0 + 2 * i * drow), o[i]);
                _mm_storel_epi64((__m128i *)(d0 + (2 * i + 1) * drow), _mm_unpackhi_epi64(o[i], o[i]));
            }
        }
    return x;
}
#endif

/* rows rows of n elements into contiguous rows drow bytes apart: row t from
 * src + t * srow, element x at x * ss.  For an operand read across its memory
 * order (A.T in a C-ordered pass: |srow| below a cache line) each source line
 * is read once for all the rows it holds, where a row-by-row gather reads it
 * once per row. */
PYET_DISPATCH void pyet_copy_tile(char *dst, pyet_intp drow, const char *src, pyet_intp srow,
                                  pyet_intp ss, pyet_intp rows, pyet_intp n, int itemsize,
                                  int prefetch)
{
/* a cache line of R adjacent elements per x: a fixed count the compiler unrolls;
 * the lines PYET_TILE_AHEAD further on are prefetched (each is on another page,
 * where the hardware prefetchers do not follow) in passes from memory only
 * (prefetch: passes.pxi's r.from_memory): with the operands in L2/L3 the
 * prefetches cost more than they hid (512^2 float64 A.T copy 0.29 -> 0.20-0.23x
 * NumPy without them, float32 -A 0.16 -> 0.11-0.13; 181^2 the same) */
#define PYET_TILE_AHEAD 16
#define PYET_TILE_LINE(T, R)                                                \
    for (pyet_intp x = 0; x < n; x++) {                                     \
        const T *s_ = (const T *)(src + x * ss);                            \
        if (prefetch && x + PYET_TILE_AHEAD < n)                            \
            __builtin_prefetch(src + (x + PYET_TILE_AHEAD) * ss, 0, 3);     \
        for (int t = 0; t < R; t++)                                         \
            ((T *)(dst + t * drow))[x] = s_[t];                             \
    }
/* the rows from t0 on of the first `done` elements of each, one at a time:
 * a whole tile (t0 0, done n), or what the register transposes below leave
 * of a tile whose rows are not a whole number of their steps (a tile that
 * starts or ends off the leaf's cache lines; a byte at a time, the whole
 * tile had made bool ~A.T of 181 x 181 1.2x NumPy's time at some of the
 * leaf's addresses, 0.74 at others) */
#define PYET_TILE_ROWS(T, t0, done)                                         \
    for (pyet_intp x = 0; x < (done); x++) {                                \
        const char *s_ = src + x * ss;                                      \
        for (pyet_intp t = (t0); t < rows; t++)                             \
            ((T *)(dst + t * drow))[x] = *(const T *)(s_ + t * srow);       \
    }
#ifdef PYET_TILE_AVX2
    if (srow == itemsize && rows * itemsize >= 32 && itemsize != 1 &&
        __builtin_cpu_supports("avx2")) {
        const int width = (int)(rows * itemsize) & ~31;
        const pyet_intp done = pyet_tile_lines_avx2(dst, drow, src, ss, n, itemsize, width,
                                                    prefetch);
        if (itemsize == 4) { PYET_TILE_ROWS(uint32_t, width / 4, done) }
        else { PYET_TILE_ROWS(uint64_t, width / 8, done) }
        dst += done * itemsize;
        src += done * ss;
        n -= done;
    }
#endif
#ifdef __SSE2__
    if (itemsize == 1 && srow == 1 && rows >= 8 && n >= 8) {
        const pyet_intp done = pyet_tile_bytes_sse2(dst, drow, src, ss, rows & ~(pyet_intp)7, n);
        PYET_TILE_ROWS(uint8_t, rows & ~(pyet_intp)7, done)
        dst += done;
        src += done * ss;
        n -= done;
    }
#endif
    if (srow == itemsize && rows * itemsize == 64) {
        switch (itemsize) {
        case 1: PYET_TILE_LINE(uint8_t, 64); return;
        case 4: PYET_TILE_LINE(uint32_t, 16); return;
        case 8: PYET_TILE_LINE(uint64_t, 8); return;
        }
    }
    switch (itemsize) {
    case 1: PYET_TILE_ROWS(uint8_t, 0, n) break;
    case 4: PYET_TILE_ROWS(uint32_t, 0, n) break;
    case 8: PYET_TILE_ROWS(uint64_t, 0, n) break;
    }
#undef PYET_TILE_LINE
#undef PYET_TILE_ROWS
#undef PYET_TILE_AHEAD
}

/* Prefetch nbytes from p (a block the next step reads or writes) into the
 * caches, a line at a time: a pass runs several kernels over each block, and
 * only some of them read memory, so without it the memory stream stalls while
 * the others compute. */
void pyet_prefetch(const char *p, pyet_intp nbytes, int write)
{
    if (write) {
        for (pyet_intp i = 0; i < nbytes; i += 64) __builtin_prefetch(p + i, 1, 3);
    } else {
        for (pyet_intp i = 0; i < nbytes; i += 64) __builtin_prefetch(p + i, 0, 3);
    }
}
#endif /* PYET_KERNELS_PART_NARROW512_REDUCE */

#endif /* PYET_KERNELS_IMPL */

/* ------------------------------------------------------------ reductions */

enum { RED_NONE = 0, RED_SUM = 1, RED_PROD = 2, RED_MAX = 3, RED_MIN = 4, RED_ALL = 5,
       RED_ANY = 6, RED_ARGMAX = 7, RED_ARGMIN = 8,
       RED_SUM_WIDE = 9 /* float32 values summed into float64 accumulators */ };

#if defined(PYET_KERNELS_IMPL) && defined(PYET_KERNELS_PART_NARROW512_REDUCE)

/* Fold a block of n values into the destination: into one element when
 * its stride ds is 0 (the reduced axis runs along the block), else
 * elementwise along ds.  A block folds in 32 independent lanes, combined
 * pairwise at the end: a lane loop of 32 is vectorized as a loop (with its
 * selects if-converted), where 8 lanes were unrolled and left scalar, with
 * a branch per NaN-aware max or min. */
#define PYET_FOLD(T, COMBINE)                                               \
    do {                                                                    \
        const T *X_ = (const T *)src;                                       \
        if (ds == 0) {                                                      \
            T lane[32], a, b;                                               \
            pyet_intp i = 0;                                                \
            if (n >= 64) {                                                  \
                for (int l = 0; l < 32; l++) lane[l] = X_[l];               \
                for (i = 32; i + 32 <= n; i += 32)                          \
                    PYET_IVDEP for (int l = 0; l < 32; l++) {               \
                        a = lane[l]; b = X_[i + l]; lane[l] = (COMBINE);    \
                    }                                                       \
                for (int w = 16; w >= 1; w /= 2)                            \
                    for (int l = 0; l < w; l++) {                           \
                        a = lane[l]; b = lane[l + w]; lane[l] = (COMBINE);  \
                    }                                                       \
            } else {                                                        \
                lane[0] = X_[0];                                            \
                i = 1;                                                      \
            }                                                               \
            for (; i < n; i++) {                                            \
                a = lane[0]; b = X_[i]; lane[0] = (COMBINE);                \
            }                                                               \
            a = *(T *)dst; b = lane[0]; *(T *)dst = (COMBINE);              \
        } else if (ds == (pyet_intp)sizeof(T)) {                            \
            T *D_ = (T *)dst;                                               \
            _Pragma("GCC unroll 4")                                         \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                const T a = D_[i], b = X_[i]; D_[i] = (COMBINE);            \
            }                                                               \
        } else {                                                            \
            for (pyet_intp i = 0; i < n; i++) {                             \
                T *d_ = (T *)(dst + i * ds);                                \
                const T a = *d_, b = X_[i]; *d_ = (COMBINE);                \
            }                                                               \
        }                                                                   \
    } while (0)

#define PYET_FOLD_CASES(T, SUF)                                             \
    switch (red) {                                                          \
    case RED_SUM: PYET_FOLD(T, a + b); break;                               \
    case RED_PROD: PYET_FOLD(T, a * b); break;                              \
    case RED_MAX: PYET_FOLD(T, pyet_max_##SUF(a, b)); break;                \
    case RED_MIN: PYET_FOLD(T, pyet_min_##SUF(a, b)); break;                \
    case RED_ALL: PYET_FOLD(T, (T)(a && b)); break;                         \
    case RED_ANY: PYET_FOLD(T, (T)(a || b)); break;                         \
    }

PYET_INLINE pyet_bool pyet_max_b(pyet_bool a, pyet_bool b) { return (a | b) != 0; }
PYET_INLINE pyet_bool pyet_min_b(pyet_bool a, pyet_bool b) { return (a != 0) & (b != 0); }

/* NumPy's pairwise summation (pairwise_sum in its loops): 8 lanes over
 * chunks of 128, then the chunk sums combined pairwise (a binary counter),
 * so each element meets O(log n) roundings instead of O(n). */
PYET_INLINE double pyet_sum_chunk_f64(const double *x, pyet_intp n)
{
    double r[8], res = 0.;
    pyet_intp i = 0;
    if (n >= 8) {
        for (int l = 0; l < 8; l++) r[l] = x[l];
        for (i = 8; i + 8 <= n; i += 8)
            for (int l = 0; l < 8; l++) r[l] += x[i + l];
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    }
    for (; i < n; i++) res += x[i];
    return res;
}

PYET_INLINE double pyet_pairwise_sum_f64(const double *x, pyet_intp n)
{
    double stack[64], s;
    int level[64], top = 0, l;
    for (pyet_intp i = 0; i < n; i += 128) {
        s = pyet_sum_chunk_f64(x + i, n - i < 128 ? n - i : 128);
        for (l = 0; top > 0 && level[top - 1] == l; l++) s = stack[--top] + s;
        stack[top] = s;
        level[top++] = l;
    }
    s = stack[--top];
    while (top > 0) s = stack[--top] + s;
    return s;
}

/* Float sums accumulate in double.  A block along the reduced axis (ds 0)
 * is summed pairwise and added to the accumulator with Neumaier's
 * compensation, kept comp bytes further on (0: none): the blocks of a long
 * axis arrive one after another, and plain adds would lose accuracy with
 * their count.  Across the reduced axis (ds != 0) the values add in order,
 * as NumPy's do. */
PYET_INLINE void pyet_fold_sum_f64(pyet_intp n, char *dst, pyet_intp comp, const double *x)
{
    double *acc = (double *)dst, *c = (double *)(dst + comp), s, t;
    s = pyet_pairwise_sum_f64(x, n);
    t = *acc + s;
    if (fabs(*acc) >= fabs(s))
        *c += (*acc - t) + s;
    else
        *c += (s - t) + *acc;
    *acc = t;
}

#define PYET_REDUCE_STORE_BODY                                              \
    switch (dt) {                                                           \
    case DT_BOOL: PYET_FOLD_CASES(pyet_bool, b); break;                     \
    case DT_I32: PYET_FOLD_CASES(int32_t, i32); break;                      \
    case DT_I64: PYET_FOLD_CASES(int64_t, i64); break;                      \
    case DT_F32: PYET_FOLD_CASES(float, f32); break;                        \
    case DT_F64: PYET_FOLD_CASES(double, f64); break;                       \
    }

/* A float block of n >= 2L values' max or min into one value (ds 0): L lanes,
 * eight vector accumulators in AVX-512 (sixteen in AVX2), each step an IEEE
 * max (vmaxps: a > b ? a : b, b on ties and NaN) with a's NaN kept (in
 * AVX-512 a compare and a merge-masked vmaxps, a chain of 7 cycles: eight
 * accumulators hide it); the values of pyet_max/pyet_min (NaN propagates,
 * a's when both; ties b).  PYET_FOLD's 32 lanes were two accumulators behind
 * a chain of three selects, latency-bound at half NumPy's L2 bandwidth
 * (float32 block of 8192 in a C loop: 31 us per 2^18 -> 8.7 us, NumPy's
 * AVX-512 loop 15.8 us). */
#define PYET_FMINMAX_DEF(T, SUF)                                            \
    PYET_INLINE T pyet_fmax_##SUF(T a, T b) {                             \
        const T r = a > b ? a : b;                                          \
        return a != a ? a : r;                                              \
    }                                                                       \
    PYET_INLINE T pyet_fmin_##SUF(T a, T b) {                             \
        const T r = a < b ? a : b;                                          \
        return a != a ? a : r;                                              \
    }
/* (two statements: written as one nested select, gcc merged them into a
 * select on an or of two compares and lost the vmaxps) */
PYET_FMINMAX_DEF(float, f32)
PYET_FMINMAX_DEF(double, f64)
#undef PYET_FMINMAX_DEF

#define PYET_FOLD_MINMAX_BLOCK(T, L, F)                                     \
    do {                                                                    \
        const T *X_ = (const T *)src;                                       \
        T lane[L];                                                          \
        pyet_intp i;                                                        \
        for (int l = 0; l < (L); l++) lane[l] = X_[l];                      \
        for (i = (L); i + (L) <= n; i += (L))                               \
            PYET_IVDEP for (int l = 0; l < (L); l++)                        \
                lane[l] = F(lane[l], X_[i + l]);                            \
        for (int w = (L) / 2; w >= 1; w /= 2)                               \
            for (int l = 0; l < w; l++)                                     \
                lane[l] = F(lane[l], lane[l + w]);                          \
        for (; i < n; i++) lane[0] = F(lane[0], X_[i]);                     \
        *(T *)dst = F(*(T *)dst, lane[0]);                                  \
    } while (0)

/* max and min in the AVX-512 clone too: their NaN-propagating selects are one
 * mask op each there (float max of 64^3 into one value: 2.5-4.4x NumPy's
 * AVX-512 loop -> 1.6-2.4x); the sums keep the narrow clones, which measured
 * faster for float32 */
PYET_DISPATCH_WIDE static void pyet_reduce_store_minmax(int red, int dt, pyet_intp n,
                                                        char *dst, pyet_intp ds,
                                                        const void *src)
{
    /* (shorter blocks, rows along the reduced axis, keep PYET_FOLD's 32 lanes) */
    if (ds == 0 && dt == DT_F32 && n >= 256) {
        if (red == RED_MAX) PYET_FOLD_MINMAX_BLOCK(float, 128, pyet_fmax_f32);
        else PYET_FOLD_MINMAX_BLOCK(float, 128, pyet_fmin_f32);
        return;
    }
    if (ds == 0 && dt == DT_F64 && n >= 128) {
        if (red == RED_MAX) PYET_FOLD_MINMAX_BLOCK(double, 64, pyet_fmax_f64);
        else PYET_FOLD_MINMAX_BLOCK(double, 64, pyet_fmin_f64);
        return;
    }
    PYET_REDUCE_STORE_BODY
}

PYET_DISPATCH static void pyet_reduce_store_other(int red, int dt, pyet_intp n, char *dst,
                                                  pyet_intp ds, const void *src)
{
    PYET_REDUCE_STORE_BODY
}

/* Float32 values summed into float64 accumulators, widened as they are read
 * (no cast pass into a block of doubles).  Along the reduced axis (ds 0)
 * sixteen double lanes: every float32 value is exact in double and n stays
 * far below 2^26, so the lane sums carry less error than one float32 rounding
 * and need no pairwise tree; the block sum joins the accumulator as
 * pyet_fold_sum_f64's does. */
PYET_DISPATCH static void pyet_fold_sum_wide(pyet_intp n, char *dst, pyet_intp ds,
                                             pyet_intp comp, const float *x)
{
    if (ds != 0) {
        PYET_IVDEP for (pyet_intp i = 0; i < n; i++)
            *(double *)(dst + i * ds) += (double)x[i];
        return;
    }
    double r[16] = {0.}, s = 0., t;
    pyet_intp i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++) r[l] += (double)x[i + l];
    for (int l = 0; l < 16; l += 2) s += r[l] + r[l + 1];
    for (; i < n; i++) s += (double)x[i];
    double *acc = (double *)dst;
    t = *acc + s;
    if (comp != 0) {
        double *c = (double *)(dst + comp);
        if (fabs(*acc) >= fabs(s))
            *c += (*acc - t) + s;
        else
            *c += (s - t) + *acc;
    }
    *acc = t;
}

void pyet_reduce_store(int red, int dt, pyet_intp n, char *dst, pyet_intp ds, pyet_intp comp,
                       const void *src)
{
    if (n <= 0) return;
    if (red == RED_SUM_WIDE) {
        pyet_fold_sum_wide(n, dst, ds, comp, (const float *)src);
        return;
    }
    if (red == RED_SUM && dt == DT_F64 && ds == 0 && comp != 0) {
        pyet_fold_sum_f64(n, dst, comp, (const double *)src);
        return;
    }
    if (red == RED_MAX || red == RED_MIN)
        pyet_reduce_store_minmax(red, dt, n, dst, ds, src);
    else
        pyet_reduce_store_other(red, dt, n, dst, ds, src);
}

/* Fold nrows rows (xs bytes apart) of n values elementwise into n
 * contiguous accumulators, four rows per pass over them (the last two or
 * three in one pass too): acc = (((acc o x0)
 * o x1) o x2) o x3 is the order row by row folding has, with a quarter of
 * the accumulator traffic.  Returns 0 for a fold it does not do. */
#define PYET_FOLD_ROWS(T, COMBINE)                                          \
    do {                                                                    \
        T *D_ = (T *)dst;                                                   \
        pyet_intp r = 0;                                                    \
        for (; r + 4 <= nrows; r += 4) {                                    \
            const T *X0 = (const T *)(src + r * xs), *X1 = (const T *)(src + (r + 1) * xs); \
            const T *X2 = (const T *)(src + (r + 2) * xs), *X3 = (const T *)(src + (r + 3) * xs); \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                T a = D_[i], b = X0[i];                                     \
                a = (COMBINE); b = X1[i]; a = (COMBINE); b = X2[i];         \
                a = (COMBINE); b = X3[i]; D_[i] = (COMBINE);                \
            }                                                               \
        }                                                                   \
        if (nrows - r == 3) {  /* the last three in one pass too */         \
            const T *X0 = (const T *)(src + r * xs), *X1 = (const T *)(src + (r + 1) * xs); \
            const T *X2 = (const T *)(src + (r + 2) * xs);                  \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                T a = D_[i], b = X0[i];                                     \
                a = (COMBINE); b = X1[i]; a = (COMBINE); b = X2[i];         \
                D_[i] = (COMBINE);                                          \
            }                                                               \
        } else if (nrows - r == 2) {                                        \
            const T *X0 = (const T *)(src + r * xs), *X1 = (const T *)(src + (r + 1) * xs); \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                T a = D_[i], b = X0[i];                                     \
                a = (COMBINE); b = X1[i]; D_[i] = (COMBINE);                \
            }                                                               \
        } else if (nrows - r == 1) {                                        \
            const T *X0 = (const T *)(src + r * xs);                        \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++) {                  \
                const T a = D_[i], b = X0[i]; D_[i] = (COMBINE);            \
            }                                                               \
        }                                                                   \
    } while (0)

#define PYET_FOLD_ROWS_CASES(T, SUF)                                        \
    switch (red) {                                                          \
    case RED_SUM: PYET_FOLD_ROWS(T, a + b); return 1;                       \
    case RED_PROD: PYET_FOLD_ROWS(T, a * b); return 1;                      \
    case RED_MAX: PYET_FOLD_ROWS(T, pyet_max_##SUF(a, b)); return 1;        \
    case RED_MIN: PYET_FOLD_ROWS(T, pyet_min_##SUF(a, b)); return 1;        \
    }                                                                       \
    return 0;

#define PYET_REDUCE_ROWS_BODY                                               \
    switch (dt) {                                                           \
    case DT_I32: PYET_FOLD_ROWS_CASES(int32_t, i32)                         \
    case DT_I64: PYET_FOLD_ROWS_CASES(int64_t, i64)                         \
    case DT_F32: PYET_FOLD_ROWS_CASES(float, f32)                           \
    case DT_F64: PYET_FOLD_ROWS_CASES(double, f64)                          \
    }                                                                       \
    return 0;

/* (as pyet_reduce_store: max and min in the AVX-512 clone too) */
PYET_DISPATCH_WIDE static int pyet_reduce_rows_minmax(int red, int dt, pyet_intp nrows,
                                                      pyet_intp n, char *dst, const char *src,
                                                      pyet_intp xs)
{
    PYET_REDUCE_ROWS_BODY
}

PYET_DISPATCH static int pyet_reduce_rows_other(int red, int dt, pyet_intp nrows, pyet_intp n,
                                                char *dst, const char *src, pyet_intp xs)
{
    PYET_REDUCE_ROWS_BODY
}

int pyet_reduce_rows(int red, int dt, pyet_intp nrows, pyet_intp n, char *dst, const char *src,
                     pyet_intp xs)
{
    if (red == RED_MAX || red == RED_MIN)
        return pyet_reduce_rows_minmax(red, dt, nrows, n, dst, src, xs);
    return pyet_reduce_rows_other(red, dt, nrows, n, dst, src, xs);
}

/* argmax and argmin: fold values and their indices (idx, one int64 per
 * value) into (value, index) accumulators in 8-byte slots, the index comp
 * bytes after the value.  A candidate wins when it is greater (argmax) or less, or NaN
 * where the accumulator is not, or ties (NaN with NaN) with a smaller
 * index: a total order, so lanes, blocks and threads may meet the values
 * in any order and still find NumPy's answer, the first extreme or the
 * first NaN.  32 lanes, as the other folds, so the selects vectorize. */
#define PYET_ARG_TAKES(GT, v, a) ((GT) | (((v) != (v)) & ((a) == (a))))
#define PYET_ARG_WINS(GT, v, j, a, aj)                                      \
    (PYET_ARG_TAKES(GT, v, a) |                                             \
     ((((v) == (a)) | (((v) != (v)) & ((a) != (a)))) & ((j) < (aj))))

#define PYET_ARG_STEP(T, GT, V, J, A, AJ)                                  \
    do {                                                                    \
        const T v = PYET_ARG_VALUE(T, V), a = PYET_ARG_VALUE(T, A);         \
        const int64_t j = (J), aj = (AJ);                                   \
        const int w = PYET_ARG_WINS(GT, v, j, a, aj);                       \
        (A) = w ? v : a;                                                    \
        (AJ) = w ? j : aj;                                                  \
    } while (0)

#define PYET_ARG_FOLD(T, GT)                                                \
    do {                                                                    \
        const T *X_ = (const T *)src;                                       \
        if (ds == 0) {                                                      \
            T lv[32];                                                       \
            int64_t lj[32];                                                 \
            pyet_intp i = 0;                                                \
            for (int l = 0; l < 32; l++) {                                  \
                lv[l] = *(T *)dst;                                          \
                lj[l] = *(int64_t *)(dst + comp);                           \
            }                                                               \
            for (; i + 32 <= n; i += 32)                                    \
                PYET_IVDEP for (int l = 0; l < 32; l++)                     \
                    PYET_ARG_STEP(T, GT, X_[i + l], idx[i + l], lv[l], lj[l]); \
            for (; i < n; i++)                                              \
                PYET_ARG_STEP(T, GT, X_[i], idx[i], lv[0], lj[0]);          \
            for (int l = 1; l < 32; l++)                                    \
                PYET_ARG_STEP(T, GT, lv[l], lj[l], lv[0], lj[0]);           \
            *(T *)dst = lv[0];                                              \
            *(int64_t *)(dst + comp) = lj[0];                               \
        } else if (ds == 8) { /* 8-byte slots in a row: vectorizes */      \
            T *D_ = (T *)dst;                                               \
            int64_t *J_ = (int64_t *)(dst + comp);                          \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++)                    \
                PYET_ARG_STEP(T, GT, X_[i], idx[i], D_[i * (8 / sizeof(T))], J_[i]); \
        } else {                                                            \
            PYET_IVDEP for (pyet_intp i = 0; i < n; i++)                    \
                PYET_ARG_STEP(T, GT, X_[i], idx[i], *(T *)(dst + i * ds),   \
                              *(int64_t *)(dst + comp + i * ds));           \
        }                                                                   \
    } while (0)

#define PYET_ARG_CASES(T)                                                   \
    if (red == RED_ARGMAX) PYET_ARG_FOLD(T, v > a);                         \
    else PYET_ARG_FOLD(T, v < a)

/* what a value compares as: a bool's any byte but 0 is 1 (NumPy's bool
 * argmax finds the first nonzero byte) */
#define PYET_ARG_VALUE(T, x) ((T)(sizeof(T) == 1 ? (x) != 0 : (x)))

PYET_DISPATCH void pyet_reduce_arg(int red, int dt, pyet_intp n, char *dst, pyet_intp ds,
                                   pyet_intp comp, const void *src, const int64_t *idx)
{
    if (n <= 0) return;
    PYET_SWITCH_DT(dt, PYET_ARG_CASES)
}

/* argmax/argmin of each of nrows rows of k values (k >= 1; byte strides rs
 * between rows, cs along them, any sign) into out (int64, os bytes apart):
 * each row in order, a later value winning when greater (less), or NaN where
 * the best is not: NumPy's first extreme or first NaN.  For short rows,
 * where NumPy calls its loop once a row (float64 (87381, 3) along axis 1:
 * ~1 ms); one row after another, the rows' own order. */
#define PYET_ARG_ROWS(T, GT, BEST)                                          \
    do {                                                                    \
        pyet_intp i = 0;                                                    \
        /* 16 rows at a time, their selects in lanes (a branch a value     \
         * mispredicted on random data: ~10 ns a row of 3) */              \
        for (; i + 16 <= nrows; i += 16) {                                  \
            T lv[16];                                                       \
            int64_t lj[16];                                                 \
            for (int l = 0; l < 16; l++) {                                  \
                lv[l] = PYET_ARG_VALUE(T, *(const T *)(src + (i + l) * rs)); \
                lj[l] = 0;                                                  \
            }                                                               \
            for (pyet_intp j = 1; j < k; j++) {                             \
                PYET_IVDEP for (int l = 0; l < 16; l++) {                   \
                    const T v = PYET_ARG_VALUE(T, *(const T *)(src + (i + l) * rs + j * cs)); \
                    const T a = lv[l];                                      \
                    const int w = PYET_ARG_TAKES(GT, v, a);                 \
                    lv[l] = w ? v : a;                                      \
                    lj[l] = w ? j : lj[l];                                  \
                }                                                           \
                /* bools: once every lane holds BEST no later value wins   \
                 * (random (512, 64) along axis 0: 512 steps -> ~8) */     \
                if (sizeof(T) == 1 && (j & 3) == 0) {                       \
                    int settled = 1;                                        \
                    for (int l = 0; l < 16; l++) settled &= lv[l] == (T)(BEST); \
                    if (settled) break;                                     \
                }                                                           \
            }                                                               \
            for (int l = 0; l < 16; l++)                                    \
                *(int64_t *)(out + (i + l) * os) = lj[l];                   \
        }                                                                   \
        for (; i < nrows; i++) {                                            \
            const char *row = src + i * rs;                                 \
            T a = PYET_ARG_VALUE(T, *(const T *)row);                       \
            int64_t aj = 0;                                                 \
            for (pyet_intp j = 1; j < k; j++) {                             \
                const T v = PYET_ARG_VALUE(T, *(const T *)(row + j * cs));  \
                const int w = PYET_ARG_TAKES(GT, v, a);                     \
                a = w ? v : a;                                              \
                aj = w ? j : aj;                                            \
            }                                                               \
            *(int64_t *)(out + i * os) = aj;                                \
        }                                                                   \
    } while (0)

#define PYET_ARG_ROWS_CASES(T)                                              \
    if (red == RED_ARGMAX) PYET_ARG_ROWS(T, v > a, 1);                      \
    else PYET_ARG_ROWS(T, v < a, 0)

/* Bool rows of contiguous bytes: argmax is the first nonzero byte, argmin
 * the first zero (0 when there is none), found eight bytes a word, each
 * byte's "nonzero" in its high bit (exact for any byte, 2-255 too); the last
 * r < 8 bytes one word: the row's last eight shifted, or in rows under 8 the
 * eight from the row's start where they end by hi (the array's last byte + 1:
 * a read inside its buffer), else gathered (4.4 -> ~1 ns a row of 3).
 * NumPy's bool loop a row: ~9 ns on rows of 3, 10 ns of 16, 3 ns from 32;
 * rows that do not decide take its SIMD search from 24-64 (reductions.py). */
PYET_INLINE uint64_t pyet_nonzero_bytes(uint64_t w)
{
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7fULL;
    return (((w & low7) + low7) | w) & ~low7;
}

PYET_INLINE uint64_t pyet_or_words(const unsigned char *p, int nwords)
{
    /* the or of nwords words from p (a constant count: vectorized, inlined) */
    uint64_t any = 0, w;
    for (int l = 0; l < nwords; l++) {
        memcpy(&w, p + 8 * l, 8);
        any |= w;
    }
    return any;
}

/* j + the first deciding byte of the r (1-8) low bytes of w, or 0 where none
 * decides (masked, not selected: gcc made the select a branch, mispredicted
 * on random rows: 4.8 ns a row of 1) */
PYET_INLINE int64_t pyet_last_word(uint64_t w, uint64_t flip, pyet_intp r, pyet_intp j)
{
    const uint64_t m = (pyet_nonzero_bytes(w) ^ flip) & (~0ULL >> (8 * (8 - r)));
    const int64_t at = j + (__builtin_ctzll(m | (1ULL << 63)) >> 3);
    return at & -(int64_t)((m | (0 - m)) >> 63);  /* (m != 0 without a compare) */
}

PYET_INLINE int64_t pyet_first_byte(const unsigned char *row, pyet_intp k, uint64_t flip,
                                    const unsigned char *hi, int first_word)
{
    uint64_t w, m;
    pyet_intp j = 0, r;
    /* argmin: the first zero byte, libc's memchr (vectorized; its call is
     * cheap from rows of 16); argmax: rows tested 256 bytes a branch, then
     * 64 (any nonzero byte: their or, vectorized), the word found after (rows
     * that decide late at NumPy's SIMD search's speed, 6x the words' alone) */
    /* (k >= 16) the first word first, where random rows decide (rows of
     * 64-256: argmax 1.25-1.29 -> 0.75-0.93x NumPy; rows that decide nowhere
     * 0.24 -> 0.32) */
    if (first_word) {
        memcpy(&w, row, 8);
        m = pyet_nonzero_bytes(w) ^ flip;
        if (m) return __builtin_ctzll(m) >> 3;
        j = 8;
    }
    if (flip != 0 && k >= 16) {
        const unsigned char *zero = (const unsigned char *)memchr(row + j, 0, (size_t)(k - j));
        return zero != NULL ? zero - row : 0;
    }
    if (flip == 0) {
        for (; j + 256 <= k; j += 256)
            if (pyet_or_words(row + j, 32)) break;
        for (; j + 64 <= k; j += 64)
            if (pyet_or_words(row + j, 8)) break;
    }
    for (; j + 8 <= k; j += 8) {
        memcpy(&w, row + j, 8);
        m = pyet_nonzero_bytes(w) ^ flip;
        if (m) return j + (__builtin_ctzll(m) >> 3);
    }
    r = k - j;
    if (r == 0) return 0;
    if (k >= 8) {
        memcpy(&w, row + k - 8, 8);
        w >>= 8 * (8 - r);
    } else if (row + 8 <= hi) {
        memcpy(&w, row, 8);  /* (the bytes past the row masked off below) */
    } else {
        w = 0;
        for (pyet_intp t = 0; t < r; t++) w |= (uint64_t)row[t] << (8 * t);
    }
    return pyet_last_word(w, flip, r, j);
}

/* Bool rows at adjacent bytes (rs == 1: a C array's columns), 64 of them a
 * lane each: down the axis, 64 bytes a step tested at once against the lanes
 * still open (argmax: a nonzero byte closes a lane, argmin: a zero), each
 * lane's index set only at a step that closes one; done when all are closed
 * (NumPy copies the axis last first: (512, 64) along axis 0, random 1.25 ->
 * ~0.15x its time, deciding nowhere ~0.2x) */
PYET_INLINE void pyet_bool_lanes(int red, pyet_intp nrows, pyet_intp k,
                                 const unsigned char *src, pyet_intp cs, char *out,
                                 pyet_intp os)
{
    const unsigned char want = red == RED_ARGMAX;
    unsigned char open[64], hit[64];
    int64_t at[64];
    for (pyet_intp i = 0; i < nrows; i += 64) {
        const int n = nrows - i < 64 ? (int)(nrows - i) : 64;
        for (int l = 0; l < 64; l++) {
            open[l] = l < n;
            at[l] = 0;
        }
        for (pyet_intp j = 0; j < k; j++) {
            const unsigned char *row = src + i + j * cs;
            unsigned char any = 0;
            if (n == 64) {  /* (a constant count: one vector) */
                for (int l = 0; l < 64; l++) {
                    hit[l] = open[l] & ((row[l] != 0) == want);
                    any |= hit[l];
                }
            } else {
                for (int l = 0; l < 64; l++) hit[l] = 0;
                for (int l = 0; l < n; l++) {
                    hit[l] = open[l] & ((row[l] != 0) == want);
                    any |= hit[l];
                }
            }
            if (!any) continue;
            unsigned char left = 0;
            for (int l = 0; l < 64; l++) {
                at[l] = hit[l] ? j : at[l];
                open[l] &= (unsigned char)~hit[l];
                left |= open[l];
            }
            if (!left) break;
        }
        for (int l = 0; l < n; l++) *(int64_t *)(out + (i + l) * os) = at[l];
    }
}

/* (an AVX-512 clone too: its mask registers take the selects; int32 lanes
 * over a long axis 0.76-0.89 -> 0.69x NumPy's time, (87381, 3) 0.20 -> 0.16) */
PYET_DISPATCH_WIDE void pyet_arg_rows(int red, int dt, pyet_intp nrows, pyet_intp k,
                                      const char *src, pyet_intp rs, pyet_intp cs, char *out,
                                      pyet_intp os)
{
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (dt == DT_BOOL && cs == 1) {
        const uint64_t flip = red == RED_ARGMIN ? 0x8080808080808080ULL : 0;
        const unsigned char *hi =
            (const unsigned char *)src + k + (rs > 0 ? (nrows - 1) * rs : 0);
        pyet_intp i = 0;
        if (k < 8 && rs > 0) {
            /* rows under 8 bytes whose word from the row's start ends inside
             * the array: one load, no branch a row (pyet_first_byte's tests
             * and its spills made a row of 3 ~3 ns, NumPy's loop 2.8) */
            const pyet_intp span = hi - (const unsigned char *)src;
            const pyet_intp fit = span >= 8 ? (span - 8) / rs + 1 : 0;
            uint64_t w;
            for (; i < fit && i < nrows; i++) {
                memcpy(&w, src + i * rs, 8);
                *(int64_t *)(out + i * os) = pyet_last_word(w, flip, k, 0);
            }
        }
        /* (two loops: a test of k inside one made rows of 8-15 1.4x slower) */
        if (k >= 16)
            for (; i < nrows; i++)
                *(int64_t *)(out + i * os) =
                    pyet_first_byte((const unsigned char *)src + i * rs, k, flip, hi, 1);
        for (; i < nrows; i++)
            *(int64_t *)(out + i * os) =
                pyet_first_byte((const unsigned char *)src + i * rs, k, flip, hi, 0);
        return;
    }
#endif
    if (dt == DT_BOOL && rs == 1) {
        pyet_bool_lanes(red, nrows, k, (const unsigned char *)src, cs, out, os);
        return;
    }
    PYET_SWITCH_DT(dt, PYET_ARG_ROWS_CASES)
}

/* Each of nrows rows of k contiguous values (rows rs bytes apart, any
 * sign) folded into one element of out (os bytes apart): max and min in the
 * row's dtype (pyet_fmax/pyet_fmin for floats: NaN propagates), any and all
 * as bools (x != 0), integer and bool sums and products in int64.  NumPy
 * calls its loop once a row there (~40 ns each: float64 max along rows of 16,
 * 44 ns a row); here a row is L lanes (one 512-bit vector) folded down the
 * row, then across, then its last k % L values one by one.  Returns 0, nothing
 * written, for a fold it does not do (float sums and products: NumPy's
 * pairwise order is theirs). */
/* ACC = the fold of the N values at X: L lanes down them, then across,
 * then the last N % L one by one */
#define PYET_FOLD_RUN(T, TA, L, CONV, F, X, N, ACC)                         \
    do {                                                                    \
        const T *x_ = (X);                                                  \
        TA lane[L];                                                         \
        pyet_intp j = 0;                                                    \
        if ((N) >= (L)) {                                                   \
            for (int l = 0; l < (L); l++) lane[l] = CONV(x_[l]);            \
            for (j = (L); j + (L) <= (N); j += (L))                         \
                PYET_IVDEP for (int l = 0; l < (L); l++)                    \
                    lane[l] = F(lane[l], CONV(x_[j + l]));                  \
            for (int w = (L) / 2; w >= 1; w /= 2)                           \
                for (int l = 0; l < w; l++)                                 \
                    lane[l] = F(lane[l], lane[l + w]);                      \
            ACC = lane[0];                                                  \
        } else {                                                            \
            ACC = CONV(x_[0]);                                              \
            j = 1;                                                          \
        }                                                                   \
        for (; j < (N); j++) ACC = F(ACC, CONV(x_[j]));                     \
    } while (0)

#define PYET_ONE_ROW(T, TA, TO, L, CONV, F, ROW)                            \
    do {                                                                    \
        TA acc;                                                             \
        PYET_FOLD_RUN(T, TA, L, CONV, F, (const T *)(src + (ROW) * rs), k, acc); \
        *(TO *)(out + (ROW) * os) = (TO)acc;                                \
    } while (0)

#define PYET_EACH_ROW(T, TA, TO, L, CONV, F)                                \
    do {                                                                    \
        for (pyet_intp i = 0; i < nrows; i++)                               \
            PYET_ONE_ROW(T, TA, TO, L, CONV, F, i);                         \
    } while (0)

/* float max and min: four rows at a time down their lanes, four independent
 * chains (a NaN-propagating max is a ~7-cycle chain of selects a vector:
 * float64 rows of 512 0.47x NumPy's time, one row at a time 2.7x); the
 * others measured slower so (int64 rows of 512 0.55x -> 1.46x) */
#define PYET_EACH_ROW4(T, TA, TO, L, CONV, F)                               \
    do {                                                                    \
        pyet_intp i = 0;                                                    \
        if (k >= 2 * (L))                                                   \
            for (; i + 4 <= nrows; i += 4) {                                \
                const T *x0 = (const T *)(src + i * rs), *x1 = (const T *)(src + (i + 1) * rs); \
                const T *x2 = (const T *)(src + (i + 2) * rs), *x3 = (const T *)(src + (i + 3) * rs); \
                TA l0[L], l1[L], l2[L], l3[L];                              \
                pyet_intp j;                                                \
                for (int l = 0; l < (L); l++) {                             \
                    l0[l] = CONV(x0[l]); l1[l] = CONV(x1[l]);               \
                    l2[l] = CONV(x2[l]); l3[l] = CONV(x3[l]);               \
                }                                                           \
                for (j = (L); j + (L) <= k; j += (L))                       \
                    PYET_IVDEP for (int l = 0; l < (L); l++) {              \
                        l0[l] = F(l0[l], CONV(x0[j + l]));                  \
                        l1[l] = F(l1[l], CONV(x1[j + l]));                  \
                        l2[l] = F(l2[l], CONV(x2[j + l]));                  \
                        l3[l] = F(l3[l], CONV(x3[j + l]));                  \
                    }                                                       \
                for (int w = (L) / 2; w >= 1; w /= 2)                       \
                    for (int l = 0; l < w; l++) {                           \
                        l0[l] = F(l0[l], l0[l + w]); l1[l] = F(l1[l], l1[l + w]); \
                        l2[l] = F(l2[l], l2[l + w]); l3[l] = F(l3[l], l3[l + w]); \
                    }                                                       \
                TA a0 = l0[0], a1 = l1[0], a2 = l2[0], a3 = l3[0];          \
                for (pyet_intp jj = j; jj < k; jj++) {                      \
                    a0 = F(a0, CONV(x0[jj])); a1 = F(a1, CONV(x1[jj]));     \
                    a2 = F(a2, CONV(x2[jj])); a3 = F(a3, CONV(x3[jj]));     \
                }                                                           \
                *(TO *)(out + i * os) = (TO)a0;                             \
                *(TO *)(out + (i + 1) * os) = (TO)a1;                       \
                *(TO *)(out + (i + 2) * os) = (TO)a2;                       \
                *(TO *)(out + (i + 3) * os) = (TO)a3;                       \
            }                                                               \
        for (; i < nrows; i++)                                              \
            PYET_ONE_ROW4(T, TA, TO, L, CONV, F, i);                        \
    } while (0)

/* one row in four chains over its consecutive blocks of L (fewer than four
 * rows left: float64 max over axis 0 of Fortran (131072, 2) in one chain a
 * row was 6x NumPy's time) */
#define PYET_ONE_ROW4(T, TA, TO, L, CONV, F, ROW)                           \
    do {                                                                    \
        const T *x_ = (const T *)(src + (ROW) * rs);                        \
        if (k >= 4 * (L)) {                                                 \
            TA l0[L], l1[L], l2[L], l3[L], acc;                             \
            pyet_intp j;                                                    \
            for (int l = 0; l < (L); l++) {                                 \
                l0[l] = CONV(x_[l]); l1[l] = CONV(x_[(L) + l]);             \
                l2[l] = CONV(x_[2 * (L) + l]); l3[l] = CONV(x_[3 * (L) + l]); \
            }                                                               \
            for (j = 4 * (L); j + 4 * (L) <= k; j += 4 * (L))               \
                PYET_IVDEP for (int l = 0; l < (L); l++) {                  \
                    l0[l] = F(l0[l], CONV(x_[j + l]));                      \
                    l1[l] = F(l1[l], CONV(x_[j + (L) + l]));                \
                    l2[l] = F(l2[l], CONV(x_[j + 2 * (L) + l]));            \
                    l3[l] = F(l3[l], CONV(x_[j + 3 * (L) + l]));            \
                }                                                           \
            for (int l = 0; l < (L); l++)                                   \
                l0[l] = F(F(l0[l], l1[l]), F(l2[l], l3[l]));                \
            for (int w = (L) / 2; w >= 1; w /= 2)                           \
                for (int l = 0; l < w; l++)                                 \
                    l0[l] = F(l0[l], l0[l + w]);                            \
            acc = l0[0];                                                    \
            for (; j < k; j++) acc = F(acc, CONV(x_[j]));                   \
            *(TO *)(out + (ROW) * os) = (TO)acc;                            \
        } else {                                                            \
            PYET_ONE_ROW(T, TA, TO, L, CONV, F, ROW);                       \
        }                                                                   \
    } while (0)

/* any and all (and a bool max or min) of rows of 32 vectors or more: chunks
 * of 32 vectors, each PYET_FOLD_RUN's loop, the row left once decided, as
 * NumPy's bool loops leave it (bool any along rows of 4096 with 1% true:
 * 1.07 -> 0.45x NumPy's time, float64 any 0.55 -> 0.05; float64 all where
 * nothing stops it 0.54-0.69) */
#define PYET_EACH_ROW_STOP(T, U, L, F, STOP)                                \
    do {                                                                    \
        for (pyet_intp i = 0; i < nrows; i++) {                             \
            const T *row_ = (const T *)(src + i * rs);                      \
            U acc = !(STOP), part;                                          \
            for (pyet_intp c = 0; c < k && acc != (STOP); c += 32 * (L)) {  \
                const pyet_intp n_ = k - c < 32 * (L) ? k - c : 32 * (L);   \
                PYET_FOLD_RUN(T, U, L, PYET_NONZERO, F, row_ + c, n_, part); \
                acc = F(acc, part);                                         \
            }                                                               \
            *(pyet_bool *)(out + i * os) = (pyet_bool)acc;                  \
        }                                                                   \
    } while (0)

/* (any and all fold x != 0 as 0 or 1 in lanes of the values' width: bool
 * lanes beside float64 values measured 1.3x NumPy on rows of 16) */
#define PYET_AS_I64(x) ((int64_t)(x))
#define PYET_BOOL_I64(x) ((int64_t)((x) != 0))
#define PYET_OR(a, b) ((a) | (b))
#define PYET_AND(a, b) ((a) & (b))
#define PYET_ADD(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))  /* wraps, as NumPy's */
#define PYET_MUL(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))

#define PYET_EACH_ROW_CASES(T, U, L, MAXF, MINF, MINMAX)                    \
    switch (red) {                                                          \
    case RED_MAX: MINMAX(T, T, T, L, PYET_AS_IS, MAXF); return 1;           \
    case RED_MIN: MINMAX(T, T, T, L, PYET_AS_IS, MINF); return 1;           \
    case RED_ANY:                                                           \
        if (k >= 32 * (L)) PYET_EACH_ROW_STOP(T, U, L, PYET_OR, 1);           \
        else PYET_EACH_ROW(T, U, pyet_bool, L, PYET_NONZERO, PYET_OR);      \
        return 1;                                                           \
    case RED_ALL:                                                           \
        if (k >= 32 * (L)) PYET_EACH_ROW_STOP(T, U, L, PYET_AND, 0);          \
        else PYET_EACH_ROW(T, U, pyet_bool, L, PYET_NONZERO, PYET_AND);     \
        return 1;                                                           \
    }

#define PYET_EACH_ROW_SUMS(T, CONV)                                         \
    switch (red) {                                                          \
    case RED_SUM: PYET_EACH_ROW(T, int64_t, int64_t, 8, CONV, PYET_ADD); return 1; \
    case RED_PROD: PYET_EACH_ROW(T, int64_t, int64_t, 8, CONV, PYET_MUL); return 1; \
    }

PYET_DISPATCH_WIDE int pyet_fold_each_row(int red, int dt, pyet_intp nrows, pyet_intp k,
                                          const char *src, pyet_intp rs, char *out,
                                          pyet_intp os)
{
    if (nrows <= 0 || k <= 0) return 0;
    switch (dt) {
    case DT_BOOL:
        if (red == RED_MAX) red = RED_ANY;  /* (the same values, the same early stop) */
        else if (red == RED_MIN) red = RED_ALL;
        PYET_EACH_ROW_CASES(pyet_bool, pyet_bool, 32, pyet_max_b, pyet_min_b, PYET_EACH_ROW);
        PYET_EACH_ROW_SUMS(pyet_bool, PYET_BOOL_I64);
        break;
    case DT_I32:
        PYET_EACH_ROW_CASES(int32_t, uint32_t, 16, pyet_max_i32, pyet_min_i32, PYET_EACH_ROW);
        PYET_EACH_ROW_SUMS(int32_t, PYET_AS_I64);
        break;
    case DT_I64:
        PYET_EACH_ROW_CASES(int64_t, uint64_t, 8, pyet_max_i64, pyet_min_i64, PYET_EACH_ROW);
        PYET_EACH_ROW_SUMS(int64_t, PYET_AS_I64);
        break;
    case DT_F32: PYET_EACH_ROW_CASES(float, uint32_t, 16, pyet_fmax_f32, pyet_fmin_f32, PYET_EACH_ROW4); break;
    case DT_F64: PYET_EACH_ROW_CASES(double, uint64_t, 8, pyet_fmax_f64, pyet_fmin_f64, PYET_EACH_ROW4); break;
    }
    return 0;
}

#endif /* PYET_KERNELS_IMPL && PYET_KERNELS_PART_NARROW512_REDUCE */

static const int pyet_itemsize[DT_COUNT] = {1, 4, 8, 4, 8};

/* The kernels, as the kernels_*.c units define them (comments at their definitions). */
int pyet_kernel(int op, int dt, int sflags, pyet_intp n, void *out, void *const *in);
int pyet_kernel_routed(int op, int dt, int sflags, pyet_intp n, void *out, void *const *in,
                       int *narrow);
int pyet_kernel_narrow(int op, int dt, int sflags, pyet_intp n, void *out, void *const *in);
int pyet_kernel_in_lanes(int op);
int pyet_kernel_strided(int op, int dt, pyet_intp n, void *out, const void *in,
                        pyet_intp stride);
int pyet_kernel_sx(int op, int dt, pyet_intp n, void *out, void *const *in,
                   const pyet_intp *steps);
int pyet_kernel_wide512(void);
int pyet_cpu_intel(void);
void pyet_cast(int dt_in, int dt_out, pyet_intp n, void *out, const void *in);
void pyet_prefetch(const char *p, pyet_intp nbytes, int write);
void pyet_copy_strided(char *dst, pyet_intp ds, const char *src, pyet_intp ss, pyet_intp n,
                       int itemsize);
void pyet_gather_rows(int k, char *const *dst, const char *const *src, const pyet_intp *ss,
                      pyet_intp n, int itemsize);
void pyet_copy_rows(char *dst, const char *src, pyet_intp rs, pyet_intp cs, pyet_intp rows,
                    pyet_intp inner, int itemsize);
void pyet_scatter_rows(char *dst, pyet_intp rs, pyet_intp cs, const char *src, pyet_intp rows,
                       pyet_intp inner, int itemsize);
void pyet_wrap_indices(const int64_t *x, int64_t *o, pyet_intp size, int64_t n, int64_t *lo,
                       int64_t *hi);
void pyet_copy_tile(char *dst, pyet_intp drow, const char *src, pyet_intp srow, pyet_intp ss,
                    pyet_intp rows, pyet_intp n, int itemsize, int prefetch);
void pyet_reduce_store(int red, int dt, pyet_intp n, char *dst, pyet_intp ds, pyet_intp comp,
                       const void *src);
int pyet_reduce_rows(int red, int dt, pyet_intp nrows, pyet_intp n, char *dst, const char *src,
                     pyet_intp xs);
void pyet_reduce_arg(int red, int dt, pyet_intp n, char *dst, pyet_intp ds, pyet_intp comp,
                     const void *src, const int64_t *idx);
void pyet_arg_rows(int red, int dt, pyet_intp nrows, pyet_intp k, const char *src,
                   pyet_intp rs, pyet_intp cs, char *out, pyet_intp os);
int pyet_fold_each_row(int red, int dt, pyet_intp nrows, pyet_intp k, const char *src,
                       pyet_intp rs, char *out, pyet_intp os);

#endif /* PYET_KERNELS_H */
