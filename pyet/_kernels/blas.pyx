"""Matrix products: BLAS through scipy's Cython bindings, and a plain loop for
integers and bools.  Every entry point takes 3-D ndarrays (a stack of
matrices; 2-D products are stacks of one) and writes C in place:

    C[i] := alpha * A[i] @ B[i] + beta * C[i]

Row-major operands go to column-major BLAS by swapping the operands and their
transpose flags; a row stride is a leading dimension.  Operands BLAS cannot
take (non-unit inner strides, negative strides, misaligned data, leading
dimensions beyond BLAS's int) are copied by the caller (``products.py``)
before they get here.  Dimensions beyond BLAS's int are split into several
calls.
"""

cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uintptr_t
from libc.stdlib cimport free, malloc
from scipy.linalg.cython_blas cimport ddot, dgemm, dgemv, sdot, sgemm, sgemv

from pyet._kernels.gemm cimport (PYET_GEMM_MIN_M, PYET_GEMM_MIN_N, pyet_dgemm_dots,
                                 pyet_dgemm_small, pyet_gemm_epi, pyet_gemm_small_available,
                                 pyet_gemm_tiles_large, pyet_sgemm_dots, pyet_sgemm_small)
from pyet._kernels.nn cimport aligned, readable, shp, specialization
from pyet._kernels.parallel cimport pool_threads, run_chunks, threads_for
from pyet._kernels.types cimport pyet_intp

import numpy as np

cnp.import_array()


cdef extern from "gemv.h" nogil:
    int pyet_gemv_v3
    int pyet_gemv_use_v3() noexcept
    void pyet_sgemv_n(Py_ssize_t rows, Py_ssize_t cols, const float *p, Py_ssize_t ld,
                      const float *x, Py_ssize_t incx, float *y, float alpha,
                      float beta) noexcept
    void pyet_dgemv_n(Py_ssize_t rows, Py_ssize_t cols, const double *p, Py_ssize_t ld,
                      const double *x, Py_ssize_t incx, double *y, double alpha,
                      double beta) noexcept
    void pyet_sgemv_t(Py_ssize_t rows, Py_ssize_t cols, const float *p, Py_ssize_t ld,
                      const float *x, float *y, Py_ssize_t incy, float alpha,
                      float beta) noexcept
    void pyet_dgemv_t(Py_ssize_t rows, Py_ssize_t cols, const double *p, Py_ssize_t ld,
                      const double *x, double *y, Py_ssize_t incy, double alpha,
                      double beta) noexcept

ctypedef fused real:
    float
    double

ctypedef unsigned char bool_t

ctypedef fused integral:
    bool_t          # bool: or of ands
    int32_t
    int64_t

# products of at most this many multiply-adds keep the GIL: releasing and
# taking it back (~0.1-0.2 us) was a tenth of an 8x8 product's time, and
# another thread gains nothing in a call this short
DEF NOGIL_FLOPS = 32768

# BLAS takes int dimensions and leading dimensions; larger ones are split
# (dimensions) or refused (leading dimensions).  A variable so tests can
# exercise the splitting with small arrays (``_set_int_limit``).
cdef Py_ssize_t INT_LIMIT = 2 ** 31 - 1


def _set_int_limit(Py_ssize_t n):
    """Set the largest dimension passed to one BLAS call (tests only); returns the old one."""
    global INT_LIMIT
    if n < 1 or n > 2 ** 31 - 1:
        raise ValueError(f"_set_int_limit: n must be in [1, 2**31 - 1], got {n}")
    old, INT_LIMIT = INT_LIMIT, n
    return old


def int_limit():
    """The largest dimension or leading dimension passed to one BLAS call."""
    return INT_LIMIT


cdef inline void gemm(char ta, char tb, int m, int n, int k, real alpha, real *a, int lda,
                      real *b, int ldb, real beta, real *c, int ldc) noexcept nogil:
    """C := alpha*op(A)·op(B) + beta*C, column-major (BLAS's own convention)."""
    if real is float:
        sgemm(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc)
    else:
        dgemm(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc)


cdef inline void gemv(char t, int m, int n, real alpha, real *a, int lda, real *x, int incx,
                      real beta, real *y, int incy) noexcept nogil:
    """y := alpha*op(A)·x + beta*y, A column-major m x n."""
    if real is float:
        sgemv(&t, &m, &n, &alpha, a, &lda, x, &incx, &beta, y, &incy)
    else:
        dgemv(&t, &m, &n, &alpha, a, &lda, x, &incx, &beta, y, &incy)


cdef void gemv_split(char trans, Py_ssize_t rows, Py_ssize_t cols, real *p, int ld,
                     real *x, int incx, real *y, int incy, real alpha, real beta,
                     Py_ssize_t lim) noexcept nogil:
    # P column-major rows x cols.  "N": y(rows) := alpha*P·x(cols) + beta*y;
    # "T": y(cols) := alpha*P^T·x(rows) + beta*y.  Both dimensions cut into
    # blocks of at most lim (BLAS's int), the summed blocks added with beta = 1
    cdef Py_ssize_t i = 0, j = 0, rr, cc
    cdef real bt
    if trans == b"N":
        while i < rows:
            rr = min(lim, rows - i)
            bt = beta
            j = 0
            while j < cols:
                cc = min(lim, cols - j)
                gemv(trans, <int>rr, <int>cc, alpha, p + i + j * ld, ld, x + j * incx, incx,
                     bt, y + i * incy, incy)
                bt = 1
                j += cc
            i += rr
    else:
        while j < cols:
            cc = min(lim, cols - j)
            bt = beta
            i = 0
            while i < rows:
                rr = min(lim, rows - i)
                gemv(trans, <int>rr, <int>cc, alpha, p + i + j * ld, ld, x + i * incx, incx,
                     bt, y + j * incy, incy)
                bt = 1
                i += rr
            j += cc


# gemvs of at most this many matrix elements run pyet's loops (gemv.h), with the GIL
DEF SMALL_GEMV = 16384


def _gemv_clone(int v3=-1):
    """The clone of gemv.h's loops that runs: 1 x86-64-v3, 0 the baseline;
    ``v3`` 0 or 1 picks one (tests: the baseline clone on any CPU), -1 asks."""
    old = pyet_gemv_use_v3()
    if v3 == 0 or v3 == 1:
        global pyet_gemv_v3
        pyet_gemv_v3 = v3
    return old


cdef inline void small_gemv(bint n, Py_ssize_t rows, Py_ssize_t cols, real *p, Py_ssize_t ld,
                            real *x, Py_ssize_t incx, real *y, Py_ssize_t incy, real alpha,
                            real beta) noexcept nogil:
    if real is float:
        if n:
            pyet_sgemv_n(rows, cols, p, ld, x, incx, y, alpha, beta)
        else:
            pyet_sgemv_t(rows, cols, p, ld, x, y, incy, alpha, beta)
    else:
        if n:
            pyet_dgemv_n(rows, cols, p, ld, x, incx, y, alpha, beta)
        else:
            pyet_dgemv_t(rows, cols, p, ld, x, y, incy, alpha, beta)


cdef real dot_split(real *x, int incx, real *y, int incy, Py_ssize_t n,
                    Py_ssize_t lim) noexcept nogil:
    # x·y in calls of at most lim elements
    cdef real acc = 0
    cdef int nn
    cdef Py_ssize_t i = 0
    while i < n:
        nn = <int>min(lim, n - i)
        if real is float:
            acc += sdot(&nn, x + i * incx, &incx, y + i * incy, &incy)
        else:
            acc += ddot(&nn, x + i * incx, &incx, y + i * incy, &incy)
        i += nn
    return acc


cdef inline int vector_inc(cnp.ndarray v) noexcept:
    # a vector's BLAS increment in elements, or 0 when BLAS cannot take it:
    # a step that is not a whole number of elements (a field of a packed
    # structured array), negative or zero (BLAS reads a negative one from the
    # other end), or beyond BLAS's int
    cdef Py_ssize_t s = v.strides[0]
    if v.shape[0] <= 1:
        return 1
    if s <= 0 or s % cnp.PyArray_ITEMSIZE(v):
        return 0
    s //= cnp.PyArray_ITEMSIZE(v)
    if s > INT_LIMIT:
        return 0
    return <int>s


cdef int blas_layout(cnp.ndarray x, int *ld) except -2:
    """1 if the last two axes of x are row-major with unit inner stride,
    0 if column-major, -1 if BLAS cannot take them; sets the leading dimension.
    Misaligned arrays (every stride must be a whole number of elements) and
    leading dimensions beyond INT_LIMIT are refused."""
    cdef int nd = x.ndim, isz = cnp.PyArray_ITEMSIZE(x)
    cdef Py_ssize_t r = x.shape[nd - 2], c = x.shape[nd - 1]
    cdef Py_ssize_t s0 = x.strides[nd - 2], s1 = x.strides[nd - 1]
    if not aligned(x) or (nd == 3 and x.shape[0] > 1 and x.strides[0] % isz):
        return -1
    if r <= 1:
        s0 = max(c, 1) * isz
    if c <= 1:
        s1 = isz
    if s1 == isz and s0 % isz == 0 and s0 >= max(c, 1) * isz and s0 // isz <= INT_LIMIT:
        ld[0] = <int>(s0 // isz)
        return 1
    if r <= 1 and c > 1:
        s0 = isz
    if c <= 1:
        s1 = max(r, 1) * isz
    if s0 == isz and s1 % isz == 0 and s1 >= max(r, 1) * isz and s1 // isz <= INT_LIMIT:
        ld[0] = <int>(s1 // isz)
        return 0
    return -1


def blas_ok(cnp.ndarray x):
    """Whether BLAS can read the last two axes of ``x`` in place.

    Parameters
    ----------
    x : ndarray
        2-D or 3-D (a stack of matrices).

    Returns
    -------
    bool
        True when x is aligned and its matrices are row- or column-major with
        a leading dimension BLAS's int can hold.
    """
    cdef int ld
    return blas_layout(x, &ld) >= 0


# Products of at most this many multiply-adds, with at least PYET_GEMM_MIN_M
# rows and PYET_GEMM_MIN_N columns in C's row-major orientation, run on
# gemm.h's register tiles, not BLAS: one thread, 0.36-0.98x OpenBLAS's time on
# the MLP's and GRU's shapes (32 x 128 x 384 float32: 0.62; its packing of A
# and B on every call was a quarter of its time in the GRU), 0.96-1.04x at
# 512 x 256 x 256 (2^25); beyond, BLAS's packing and blocking pay, except over
# a short K: with K <= 128 and C at most 512 columns wide, packing A costs BLAS
# as much as the products (0.81-0.89x: the GRU's 1600 x 64 x 384 input gates,
# 4096 x 64 x 256, 8192 x 32 x 512; 1.03-1.10x from 1000 columns).  Those
# numbers are an Intel Xeon's.  On AMD's Zen 4 the tiles stay ahead of the
# same OpenBLAS (its SkylakeX kernels) up to 2^30: 0.87 on the GRU's weight
# gradient 128 x 1600 x 384 (A transposed), 0.90-0.96 on 512 x 256 x 256 up
# to 1024 x 1024 x 1024, 0.91 with B transposed, float64 alike (measured on
# one thread, so taken on one: gemm.h's pyet_gemm_tiles_large says where).
DEF TILE_GEMM_MAX = 1 << 25
DEF TILE_GEMM_MAX_LARGE = 1 << 30
DEF TILE_SHORT_K = 128
DEF TILE_SHORT_K_MAX_N = 512
# the tiles' columns per panel (float32; float64 panels are 24 wide)
DEF TILE_PANEL = 48
cdef bint TILES = True
cdef Py_ssize_t TILE_MAX = TILE_GEMM_MAX_LARGE if pyet_gemm_tiles_large() else TILE_GEMM_MAX


cdef inline Py_ssize_t tile_max(Py_ssize_t flops) noexcept nogil:
    # the largest product on the tiles (short K aside) for one of `flops`
    # multiply-adds: TILE_MAX only where it runs on one thread (measured there)
    return TILE_MAX if threads_for(flops // 8, 2) == 1 else TILE_GEMM_MAX
cdef Py_ssize_t TILE_PRODUCTS = 0  # products the tiles computed (tests read it)
cdef Py_ssize_t DOTS_PRODUCTS = 0  # and the dot tiles


def _set_tiles(bint on):
    """Let products use the register tiles (or only BLAS: tests and
    benchmarks compare the two); returns the old setting."""
    global TILES
    old, TILES = TILES, on
    return old


def _tile_max():
    """The most multiply-adds a product has on the tiles now (short K aside)."""
    return tile_max(TILE_MAX)


def _tile_products():
    """How many products (stacks) the register tiles have computed."""
    return TILE_PRODUCTS


def _dots_products():
    """How many products the dot tiles have computed."""
    return DOTS_PRODUCTS


def tiles_available():
    """True where this CPU runs the register tiles (AVX-512)."""
    return bool(pyet_gemm_small_available())


cdef extern from "fpstatus.h" nogil:
    enum:
        PYET_FS_INVALID
        PYET_FS_DIVIDE
        PYET_FS_OVERFLOW
        PYET_FS_UNDERFLOW
    int pyet_fs_get()
    void pyet_fs_clear(int flags)
    void pyet_fs_set(int flags)


cdef struct tile_gemm_args:
    bint single                     # float32, else float64
    bint bt                         # B column-major (ldb its column stride)
    char *a
    char *b
    char *c
    Py_ssize_t sa, sb, sc           # batch strides (elements; 0 broadcasts)
    Py_ssize_t m, n, k, sai, sap, ldb, ldc
    Py_ssize_t groups               # column groups per matrix (chunks = batch * groups)
    double alpha, beta
    pyet_gemm_epi *epi              # a pass fused into the stores (2-D, row-major C), or NULL


cdef int tile_gemm_chunk(void *ctx, pyet_intp chunk, int slot) noexcept nogil:
    # chunk: matrix chunk // groups, whole panels of its columns
    cdef tile_gemm_args *g = <tile_gemm_args *>ctx
    cdef Py_ssize_t t = chunk // g.groups, q = chunk % g.groups
    cdef Py_ssize_t panels = (g.n + TILE_PANEL - 1) // TILE_PANEL
    cdef Py_ssize_t j0 = panels * q // g.groups * TILE_PANEL
    cdef Py_ssize_t j1 = min(g.n, panels * (q + 1) // g.groups * TILE_PANEL)
    cdef Py_ssize_t bj = t * g.sb + (j0 * g.ldb if g.bt else j0)  # B's column j0
    cdef pyet_gemm_epi epi
    cdef pyet_gemm_epi *e = NULL
    cdef Py_ssize_t size = 4 if g.single else 8
    if j1 <= j0:
        return 0
    if g.epi != NULL:  # this chunk's columns of the epilogue's operands
        epi = g.epi[0]
        epi.bail = 0
        epi.out = <char *>epi.out + j0 * size
        if epi.bias != NULL:
            epi.bias = <const char *>epi.bias + j0 * size
        if epi.z != NULL:
            epi.z = <const char *>epi.z + j0 * size
        e = &epi
    if g.single:
        pyet_sgemm_small(g.m, j1 - j0, g.k, <float>g.alpha, <float *>g.a + t * g.sa, g.sai,
                         g.sap, <float *>g.b + bj, g.ldb, g.bt, <float>g.beta,
                         <float *>g.c + t * g.sc + j0, g.ldc, e)
    else:
        pyet_dgemm_small(g.m, j1 - j0, g.k, g.alpha, <double *>g.a + t * g.sa, g.sai,
                         g.sap, <double *>g.b + bj, g.ldb, g.bt, g.beta,
                         <double *>g.c + t * g.sc + j0, g.ldc, e)
    if e != NULL and epi.bail:
        g.epi.bail = 1  # (a benign race: every writer writes 1)
    return 0


cdef inline bint tiles_take(Py_ssize_t m, Py_ssize_t n, Py_ssize_t k,
                            Py_ssize_t flops) noexcept nogil:
    # the register tiles take a product of `flops` multiply-adds (a stack of
    # m x n x k ones) into a row-major m x n C
    return (TILES and m >= PYET_GEMM_MIN_M and n >= PYET_GEMM_MIN_N
            and (flops <= TILE_GEMM_MAX or (k <= TILE_SHORT_K and n <= TILE_SHORT_K_MAX_N)
                 or flops <= tile_max(flops))
            and pyet_gemm_small_available())


def tiles_take_2d(cnp.ndarray c, cnp.ndarray a):
    """Whether the register tiles take C := A @ B into this row-major 2-D C."""
    cdef Py_ssize_t m = c.shape[0], n = c.shape[1], k = a.shape[1]
    return bool(tiles_take(m, n, k, m * n * k))


# Few outputs over a long K, A's rows and B's columns contiguous along it (a
# convolution's weight gradient dY @ cols^T over few input channels), run on
# gemm.h's dot tiles: neither the register tiles (a 48-column panel mostly
# empty) nor BLAS (packing both operands for a few outputs) suit them.  One
# thread, Zen 4, against OpenBLAS: float32 (16, 16384) @ (16384, 9) 0.46x (the
# demo CNN's first weight gradient), (32, 4096) @ (4096, 9) 0.59x, (3, 100000)
# @ (100000, 2) 0.91x; float64 0.61x, 0.69x, 0.87x.  Not taken where BLAS
# led: K of 1024-2048 (1.3-1.6x: the accumulators' setup and reductions) and
# 1728 or more outputs (float64 (64, 8192) @ (8192, 27) 1.27x, (47, 4096) @
# (4096, 47) 1.20x).
DEF DOTS_MIN_K = 4096
DEF DOTS_MAX_OUTPUTS = 512
DEF DOTS_ROWS = 4   # a chunk's rows: whole row tiles of the dot tiles


cdef struct dots_args:
    bint single
    char *x
    char *y
    char *c
    char *acc                       # m * n vectors of 64 bytes
    Py_ssize_t m, n, k, ldx, ldy, csi, csj, rows
    double alpha, beta


cdef int dots_chunk(void *ctx, pyet_intp chunk, int slot) noexcept nogil:
    # chunk: rows [chunk * rows, ...) of C with their accumulators
    cdef dots_args *g = <dots_args *>ctx
    cdef Py_ssize_t i0 = chunk * g.rows, mm = min(g.rows, g.m - chunk * g.rows)
    cdef char *acc = g.acc + i0 * g.n * 64
    if g.single:
        pyet_sgemm_dots(mm, g.n, g.k, <float>g.alpha, <float *>g.x + i0 * g.ldx, g.ldx,
                        <float *>g.y, g.ldy, <float>g.beta, <float *>g.c + i0 * g.csi, g.csi,
                        g.csj, acc)
    else:
        pyet_dgemm_dots(mm, g.n, g.k, g.alpha, <double *>g.x + i0 * g.ldx, g.ldx,
                        <double *>g.y, g.ldy, g.beta, <double *>g.c + i0 * g.csi, g.csi,
                        g.csj, acc)
    return 0


cdef inline bint dots_take(Py_ssize_t m, Py_ssize_t n, Py_ssize_t k) noexcept nogil:
    # the dot tiles take an m x n x k product with A row-major, B column-major
    return (TILES and k >= DOTS_MIN_K and m * n <= DOTS_MAX_OUTPUTS
            and (m < PYET_GEMM_MIN_N or n < PYET_GEMM_MIN_N) and pyet_gemm_small_available())


cdef bint dots_gemm(real *a, int lda, real *b, int ldb, real *c, bint c_rows, int ldc,
                    Py_ssize_t m, Py_ssize_t n, Py_ssize_t k, real alpha,
                    real beta) noexcept nogil:
    # C := alpha * A @ B + beta * C on the dot tiles, A row-major and B
    # column-major, when they take it (False: nothing written)
    global DOTS_PRODUCTS
    cdef dots_args g
    cdef int nthreads, fpflags = 0
    cdef Py_ssize_t chunks
    if not dots_take(m, n, k):
        return False
    # the accumulators 64-byte aligned by hand (MSVC has no aligned_alloc)
    cdef char *raw = <char *>malloc(m * n * 64 + 63)
    if raw == NULL:
        return False
    g.acc = <char *>((<uintptr_t>raw + 63) & ~(<uintptr_t>63))
    g.single = real is float
    g.x, g.y, g.c = <char *>a, <char *>b, <char *>c
    g.m, g.n, g.k, g.ldx, g.ldy = m, n, k, lda, ldb
    g.csi = ldc if c_rows else 1
    g.csj = 1 if c_rows else ldc
    g.alpha, g.beta = alpha, beta
    chunks = (m + DOTS_ROWS - 1) // DOTS_ROWS
    # an FMA lane is about an eighth of an elementwise element's work
    nthreads = threads_for(m * n * k // 8, chunks)
    if nthreads > 1:
        nthreads = pool_threads(nthreads)
    # threads take whole row tiles (each C element computed alike in any split)
    g.rows = DOTS_ROWS * ((chunks + nthreads - 1) // nthreads) if nthreads > 1 else m
    if nthreads <= 1:
        dots_chunk(&g, 0, 0)
    else:
        run_chunks(dots_chunk, &g, (m + g.rows - 1) // g.rows, nthreads, &fpflags)
    free(raw)
    DOTS_PRODUCTS += 1
    return True


cdef bint tile_gemm(real *a, Py_ssize_t sa, bint a_rows, int lda,
                    real *b, Py_ssize_t sb, bint b_rows, int ldb,
                    real *c, Py_ssize_t sc, bint c_rows, int ldc,
                    Py_ssize_t batch, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k,
                    real alpha, real beta, pyet_gemm_epi *epi=NULL) noexcept nogil:
    # gemm_stack's product on the register tiles when they take it (False:
    # nothing written).  The tiles write C by rows; a column-major C is the
    # row-major C^T = B^T A^T.  With an epilogue (one row-major matrix only),
    # epi.bail is set where the fused run met a NaN in a compare or raised a
    # floating-point flag: the caller runs the unfused pass (the flags the
    # caller had are put back as they were).
    global TILE_PRODUCTS
    cdef tile_gemm_args g
    cdef int nthreads, fpflags = 0, saved = 0
    cdef Py_ssize_t t
    g.single = real is float
    g.alpha, g.beta, g.k, g.ldc, g.sc, g.c = alpha, beta, k, ldc, sc, <char *>c
    g.epi = epi
    if epi != NULL and (not c_rows or batch != 1):
        return False
    if epi == NULL and batch == 1 and a_rows and not b_rows and \
            dots_gemm(a, lda, b, ldb, c, c_rows, ldc, m, n, k, alpha, beta):
        return True
    if c_rows:
        if not tiles_take(m, n, k, batch * m * n * k):
            return False
        g.m, g.n, g.a, g.sa, g.b, g.sb, g.ldb, g.bt = m, n, <char *>a, sa, <char *>b, sb, ldb, \
            not b_rows
        g.sai = lda if a_rows else 1
        g.sap = 1 if a_rows else lda
    else:
        if not tiles_take(n, m, k, batch * m * n * k):
            return False
        g.m, g.n, g.a, g.sa, g.b, g.sb, g.ldb, g.bt = n, m, <char *>b, sb, <char *>a, sa, lda, \
            a_rows
        g.sai = 1 if b_rows else ldb
        g.sap = ldb if b_rows else 1
    if g.bt and g.sai == 1 and g.m < 64:
        # both operands transposed (A's rows and B's columns strided): with
        # few rows the gathers cost more than BLAS's packing (32x64x128: 1.23x)
        return False
    TILE_PRODUCTS += 1
    # an FMA lane is about an eighth of an elementwise element's work
    nthreads = threads_for(batch * m * n * k // 8, batch * ((g.n + TILE_PANEL - 1) // TILE_PANEL))
    if nthreads > 1:
        nthreads = pool_threads(nthreads)
    g.groups = nthreads if batch < nthreads else 1
    if epi != NULL:
        epi.bail = 0
        saved = pyet_fs_get()
        pyet_fs_clear(PYET_FS_INVALID | PYET_FS_DIVIDE | PYET_FS_OVERFLOW | PYET_FS_UNDERFLOW)
    if nthreads <= 1:
        for t in range(batch):
            tile_gemm_chunk(&g, t, 0)
    else:
        run_chunks(tile_gemm_chunk, &g, batch * g.groups, nthreads, &fpflags)
    if epi != NULL:
        if fpflags or pyet_fs_get():
            epi.bail = 1
        pyet_fs_set(saved)
    return True


cdef void gemm_stack(real *a, Py_ssize_t sa, bint a_rows, int lda,
                     real *b, Py_ssize_t sb, bint b_rows, int ldb,
                     real *c, Py_ssize_t sc, bint c_rows, int ldc,
                     Py_ssize_t batch, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k,
                     real alpha, real beta, Py_ssize_t lim) noexcept nogil:
    # batch strides sa, sb, sc are in elements (0 broadcasts an operand);
    # m, n and k are cut into blocks of at most lim (BLAS's int), the blocks
    # of k accumulated with beta = 1 after the first
    cdef Py_ssize_t t, i, j, p, mm, nn, kk
    cdef Py_ssize_t ai = lda if a_rows else 1, ap = 1 if a_rows else lda
    cdef Py_ssize_t bp = ldb if b_rows else 1, bj = 1 if b_rows else ldb
    cdef Py_ssize_t ci = ldc if c_rows else 1, cj = 1 if c_rows else ldc
    cdef real *pa
    cdef real *pb
    cdef real *pc
    cdef real bt
    cdef char ta, tb
    for t in range(batch):
        i = 0
        while i < m:
            mm = min(lim, m - i)
            j = 0
            while j < n:
                nn = min(lim, n - j)
                pc = c + t * sc + i * ci + j * cj
                bt = beta
                p = 0
                while p < k:
                    kk = min(lim, k - p)
                    pa = a + t * sa + i * ai + p * ap
                    pb = b + t * sb + p * bp + j * bj
                    if c_rows:
                        # row-major C is column-major C^T = B^T A^T: swap the operands;
                        # a row-major operand is its own transpose in column-major
                        ta = b"N" if b_rows else b"T"
                        tb = b"N" if a_rows else b"T"
                        gemm(ta, tb, <int>nn, <int>mm, <int>kk, alpha, pb, ldb, pa, lda,
                             bt, pc, ldc)
                    else:
                        ta = b"T" if a_rows else b"N"
                        tb = b"T" if b_rows else b"N"
                        gemm(ta, tb, <int>mm, <int>nn, <int>kk, alpha, pa, lda, pb, ldb,
                             bt, pc, ldc)
                    bt = 1
                    p += kk
                j += nn
            i += mm


cdef int check_stacks(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b, str fname) except -1:
    # shapes of C := A @ B as 3-D stacks; a batch of A or B may be 1 (broadcast),
    # never 0 when C's is not (an empty operand is never read)
    if c.ndim != 3 or a.ndim != 3 or b.ndim != 3:
        raise ValueError(f"{fname}: needs 3-D stacks, got {c.ndim}-D, {a.ndim}-D and {b.ndim}-D")
    if c.size and (a.shape[0] == 0 or b.shape[0] == 0):
        raise ValueError(f"{fname}: an empty batch {shp(a)} @ {shp(b)} cannot fill {shp(c)}")
    if (a.shape[1] != c.shape[1] or b.shape[2] != c.shape[2] or a.shape[2] != b.shape[1]
            or a.shape[0] not in (1, c.shape[0]) or b.shape[0] not in (1, c.shape[0])):
        raise ValueError(f"{fname}: shapes {shp(a)} @ {shp(b)} do not give {shp(c)}")
    if not (c.dtype == a.dtype == b.dtype):
        raise TypeError(f"{fname}: operands must share one dtype, got {c.dtype}, {a.dtype} "
                        f"and {b.dtype}")
    return 0


cdef inline Py_ssize_t batch_stride(cnp.ndarray x):
    # elements between matrices (0 broadcasts); x is aligned
    return 0 if x.shape[0] == 1 else x.strides[0] // cnp.PyArray_ITEMSIZE(x)


cdef int gemm_arrays(real *tag, cnp.ndarray c, cnp.ndarray a, cnp.ndarray b, double alpha,
                     double beta) except -1:
    # tag (NULL) only selects the specialization
    cdef int lda, ldb, ldc
    cdef int la = blas_layout(a, &lda), lb = blas_layout(b, &ldb), lc = blas_layout(c, &ldc)
    if la < 0 or lb < 0 or lc < 0:
        raise ValueError("gemm_into needs BLAS layouts (see blas_ok)")
    cdef Py_ssize_t batch = c.shape[0] if c.ndim == 3 else 1
    cdef Py_ssize_t m = c.shape[c.ndim - 2], n = c.shape[c.ndim - 1], k = a.shape[a.ndim - 1]
    cdef Py_ssize_t sa = 0, sb = 0, sc = 0, lim = INT_LIMIT
    if c.ndim == 3:
        sa, sb, sc = batch_stride(a), batch_stride(b), batch_stride(c)
    if m == 0 or n == 0 or batch == 0:
        return 0
    if k == 0:  # empty sums: BLAS would only scale C
        c[...] = c * beta if beta else 0
        return 0
    if batch * m * n * k <= NOGIL_FLOPS:  # (see NOGIL_FLOPS)
        if tile_gemm(<real *>cnp.PyArray_DATA(a), sa, la == 1, lda,
                     <real *>cnp.PyArray_DATA(b), sb, lb == 1, ldb,
                     <real *>cnp.PyArray_DATA(c), sc, lc == 1, ldc,
                     batch, m, n, k, <real>alpha, <real>beta):
            return 0
        gemm_stack(<real *>cnp.PyArray_DATA(a), sa, la == 1, lda,
                   <real *>cnp.PyArray_DATA(b), sb, lb == 1, ldb,
                   <real *>cnp.PyArray_DATA(c), sc, lc == 1, ldc,
                   batch, m, n, k, <real>alpha, <real>beta, lim)
    else:
        with nogil:
            if not tile_gemm(<real *>cnp.PyArray_DATA(a), sa, la == 1, lda,
                             <real *>cnp.PyArray_DATA(b), sb, lb == 1, ldb,
                             <real *>cnp.PyArray_DATA(c), sc, lc == 1, ldc,
                             batch, m, n, k, <real>alpha, <real>beta):
                gemm_stack(<real *>cnp.PyArray_DATA(a), sa, la == 1, lda,
                           <real *>cnp.PyArray_DATA(b), sb, lb == 1, ldb,
                           <real *>cnp.PyArray_DATA(c), sc, lc == 1, ldc,
                           batch, m, n, k, <real>alpha, <real>beta, lim)
    return 0


cdef inline int gemm_any(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b, double alpha,
                         double beta) except -1:
    # the one place a dtype selects gemm's specialization (callers checked it)
    if c.descr.type_num == cnp.NPY_FLOAT:
        return gemm_arrays(<float *>NULL, c, a, b, alpha, beta)
    return gemm_arrays(<double *>NULL, c, a, b, alpha, beta)


def gemm_into(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b, double alpha, double beta):
    """``C[i] := alpha * A[i] @ B[i] + beta * C[i]`` for 3-D float32/float64 stacks.

    Parameters
    ----------
    c, a, b : ndarray
        3-D, one dtype, each in a BLAS layout (see ``blas_ok``); A's and B's
        leading (batch) axis may have length 1 (broadcast).
    alpha, beta : float

    Raises
    ------
    ValueError
        If the shapes do not match or an operand is not in a BLAS layout.
    TypeError
        If the dtypes differ or are not float32/float64.
    """
    check_stacks(c, a, b, "gemm_into")
    if c.descr.type_num != cnp.NPY_FLOAT and c.descr.type_num != cnp.NPY_DOUBLE:
        raise TypeError(f"gemm_into: unsupported dtype {c.dtype}")
    gemm_any(c, a, b, alpha, beta)


def _loop_matmul(integral tag, cnp.ndarray c, cnp.ndarray a, cnp.ndarray b):
    # strides in elements: every operand is aligned here
    cdef Py_ssize_t isz = cnp.PyArray_ITEMSIZE(c)
    cdef Py_ssize_t a0 = batch_stride(a), b0 = batch_stride(b), c0 = batch_stride(c)
    cdef Py_ssize_t a1 = a.strides[1] // isz, a2 = a.strides[2] // isz
    cdef Py_ssize_t b1 = b.strides[1] // isz, b2 = b.strides[2] // isz
    cdef Py_ssize_t c1 = c.strides[1] // isz, c2 = c.strides[2] // isz
    cdef Py_ssize_t batch = c.shape[0], m = c.shape[1], n = c.shape[2], k = a.shape[2]
    with nogil:
        loop_matmul(<integral *>cnp.PyArray_DATA(a), a0, a1, a2,
                    <integral *>cnp.PyArray_DATA(b), b0, b1, b2,
                    <integral *>cnp.PyArray_DATA(c), c0, c1, c2, batch, m, n, k)


cdef void loop_matmul(integral *a, Py_ssize_t a0, Py_ssize_t a1, Py_ssize_t a2,
                      integral *b, Py_ssize_t b0, Py_ssize_t b1, Py_ssize_t b2,
                      integral *c, Py_ssize_t c0, Py_ssize_t c1, Py_ssize_t c2,
                      Py_ssize_t batch, Py_ssize_t m, Py_ssize_t n,
                      Py_ssize_t k) noexcept nogil:
    # strides in elements; i-p-j order so the innermost loop walks rows of B and C
    cdef Py_ssize_t t, i, j, p
    cdef integral x
    for t in range(batch):
        for i in range(m):
            for j in range(n):
                c[t * c0 + i * c1 + j * c2] = 0
            for p in range(k):
                x = a[t * a0 + i * a1 + p * a2]
                if integral is bool_t:
                    if x:
                        for j in range(n):
                            c[t * c0 + i * c1 + j * c2] |= b[t * b0 + p * b1 + j * b2] != 0
                else:
                    for j in range(n):
                        c[t * c0 + i * c1 + j * c2] += x * b[t * b0 + p * b1 + j * b2]


def loop_matmul_into(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b):
    """``C[i] := A[i] @ B[i]`` for 3-D bool/int32/int64 stacks of any strides.

    Integer arithmetic wraps, as NumPy's; bools are or-ed ands.  Misaligned
    operands are copied, and a misaligned C is computed aside and copied in.

    Raises
    ------
    ValueError
        If the shapes do not match.
    TypeError
        If the dtypes differ or are not bool/int32/int64.
    """
    check_stacks(c, a, b, "loop_matmul_into")
    fn = specialization(_loop_matmul, c, False, "loop_matmul_into")
    if c.size == 0:
        return
    a, b = readable(a), readable(b)
    if aligned(c):
        fn(0, c, a, b)
    else:
        tmp = np.empty((<object>c).shape, c.dtype)
        fn(0, tmp, a, b)
        c[...] = tmp


# ---------------------------------------------------------------- fast path

cdef inline bint _disjoint(cnp.ndarray x, cnp.ndarray y):
    # byte extents do not intersect (so writing y cannot change x)
    cdef Py_ssize_t xlo = <Py_ssize_t>cnp.PyArray_DATA(x), ylo = <Py_ssize_t>cnp.PyArray_DATA(y)
    cdef Py_ssize_t xhi = xlo, yhi = ylo, d, s
    for d in range(x.ndim):
        s = x.strides[d] * (x.shape[d] - 1)
        if s < 0:
            xlo += s
        else:
            xhi += s
    for d in range(y.ndim):
        s = y.strides[d] * (y.shape[d] - 1)
        if s < 0:
            ylo += s
        else:
            yhi += s
    return xhi + cnp.PyArray_ITEMSIZE(x) <= ylo or yhi + cnp.PyArray_ITEMSIZE(y) <= xlo


cdef int gemm_2d_ready(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b) except -1:
    """1 when C := alpha*A@B + beta*C can go to BLAS as it is: non-empty
    float32/float64 operands of one dtype, A and B disjoint from C, either
    matrix @ matrix (2-D, BLAS layouts: gemm), matrix @ vector or vector @
    matrix (gemv) or vector @ vector (dot; C 0-d), vectors with positive steps."""
    cdef int ld
    cdef int na = a.ndim, nb = b.ndim
    if na < 1 or na > 2 or nb < 1 or nb > 2 or c.ndim != (na - 1) + (nb - 1):
        return 0
    if c.descr.type_num != a.descr.type_num or c.descr.type_num != b.descr.type_num:
        return 0
    if c.descr.type_num != cnp.NPY_FLOAT and c.descr.type_num != cnp.NPY_DOUBLE:
        return 0
    if c.size == 0 or a.shape[na - 1] == 0 or a.shape[na - 1] != b.shape[0]:
        return 0
    if na == 2 and a.shape[0] != c.shape[0]:
        return 0
    if nb == 2 and b.shape[1] != c.shape[c.ndim - 1]:
        return 0
    if not (aligned(a) and aligned(b) and aligned(c)):
        return 0
    if na == 2 and blas_layout(a, &ld) < 0 or nb == 2 and blas_layout(b, &ld) < 0:
        return 0
    if na == 1 and vector_inc(a) == 0 or nb == 1 and vector_inc(b) == 0:
        return 0
    if c.ndim == 2 and blas_layout(c, &ld) < 0 or c.ndim == 1 and vector_inc(c) == 0:
        return 0
    return _disjoint(a, c) and _disjoint(b, c)


cdef int gemv_arrays(real *tag, cnp.ndarray c, cnp.ndarray a, cnp.ndarray b, double alpha,
                     double beta) except -1:
    # one vector operand (gemv) or two (dot), as gemm_2d_ready accepted them
    cdef int ld, incx, incy = 1
    cdef int lay
    cdef cnp.ndarray mat, vec
    cdef real *pc = <real *>cnp.PyArray_DATA(c)
    cdef real r
    cdef char trans
    cdef Py_ssize_t rows, cols
    cdef Py_ssize_t n = a.shape[0]
    if a.ndim == 1 and b.ndim == 1:  # c is 0-d
        incx, incy = vector_inc(a), vector_inc(b)
        if n <= NOGIL_FLOPS:
            r = dot_split(<real *>cnp.PyArray_DATA(a), incx,
                          <real *>cnp.PyArray_DATA(b), incy, n, INT_LIMIT)
        else:
            with nogil:
                r = dot_split(<real *>cnp.PyArray_DATA(a), incx,
                              <real *>cnp.PyArray_DATA(b), incy, n, INT_LIMIT)
        r = r if alpha == 1 else <real>alpha * r  # (-0.0 stays -0.0)
        pc[0] = r + <real>beta * pc[0] if beta else r
        return 0
    if a.ndim == 2:  # c(m) = A(m, k) x(k)
        mat, vec = a, b
    else:            # c(n) = a(k) B(k, n) = B^T a
        mat, vec = b, a
    lay = blas_layout(mat, &ld)
    rows, cols = mat.shape[0], mat.shape[1]
    # column-major BLAS: a row-major matrix is its transpose with the same ld
    if lay == 1:
        rows, cols = cols, rows
    trans = b"T" if (lay == 1) == (a.ndim == 2) else b"N"
    incx, incy = vector_inc(vec), vector_inc(c)
    if rows * cols <= SMALL_GEMV and alpha != 0 and (incy == 1 if trans == b"N" else incx == 1):
        # pyet's loop: no BLAS call to set up (a contiguous vector on the side it reads
        # or writes in runs; alpha 0 stays BLAS's, which reads no matrix)
        small_gemv(trans == b"N", rows, cols, <real *>cnp.PyArray_DATA(mat), ld,
                   <real *>cnp.PyArray_DATA(vec), incx, pc, incy, <real>alpha, <real>beta)
        return 0
    if rows * cols <= NOGIL_FLOPS:
        gemv_split(trans, rows, cols, <real *>cnp.PyArray_DATA(mat), ld,
                   <real *>cnp.PyArray_DATA(vec), incx, pc, incy, <real>alpha, <real>beta,
                   INT_LIMIT)
    else:
        with nogil:
            gemv_split(trans, rows, cols, <real *>cnp.PyArray_DATA(mat), ld,
                       <real *>cnp.PyArray_DATA(vec), incx, pc, incy, <real>alpha, <real>beta,
                       INT_LIMIT)
    return 0


# Products of at least this many multiply-adds, C := A @ B into a row-major C,
# go through NumPy's matmul, that is NumPy's BLAS.  NumPy and SciPy each bring
# an OpenBLAS with its own worker threads, which spin for a while after a
# call: a program calling np.matmul and pyet.dot in turn had two pools
# fighting over the same cores (interleaved 256^2 products 4-36x slower than
# each alone on 2 cores).  Through NumPy's, one pool serves both.  Smaller
# products stay on SciPy's BLAS, called directly: np.matmul's own call costs
# ~1.5 us, a tenth of a 262,144 multiply-add product (MLP b32 0.91 -> 1.01x
# NumPy with the threshold there); OpenBLAS threads products from 262,144.
DEF NUMPY_BLAS_MIN = 1048576
DEF NUMPY_VECTOR_MIN = 10240
cdef object _NP_DOT = np.dot


cdef int gemm_epi_arrays(real *tag, cnp.ndarray c, cnp.ndarray a, cnp.ndarray b,
                         double alpha, double beta, pyet_gemm_epi *epi) except -2:
    # tag (NULL) only selects the specialization
    cdef int lda, ldb, ldc
    cdef int la = blas_layout(a, &lda), lb = blas_layout(b, &ldb), lc = blas_layout(c, &ldc)
    cdef Py_ssize_t m = c.shape[0], n = c.shape[1], k = a.shape[1]
    cdef bint done
    if la < 0 or lb < 0 or lc != 1 or m == 0 or n == 0 or k == 0:
        return 0
    if m * n * k <= NOGIL_FLOPS:
        done = tile_gemm(<real *>cnp.PyArray_DATA(a), 0, la == 1, lda,
                         <real *>cnp.PyArray_DATA(b), 0, lb == 1, ldb,
                         <real *>cnp.PyArray_DATA(c), 0, True, ldc,
                         1, m, n, k, <real>alpha, <real>beta, epi)
    else:
        with nogil:
            done = tile_gemm(<real *>cnp.PyArray_DATA(a), 0, la == 1, lda,
                             <real *>cnp.PyArray_DATA(b), 0, lb == 1, ldb,
                             <real *>cnp.PyArray_DATA(c), 0, True, ldc,
                             1, m, n, k, <real>alpha, <real>beta, epi)
    if not done:
        return 0
    return -1 if epi.bail else 1


cdef int gemm_2d_epilogue(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b, double alpha,
                          double beta, pyet_gemm_epi *epi) except -2:
    """C := alpha*A@B + beta*C (2-D operands gemm_2d_ready accepted, a
    row-major C) on the register tiles with the pass ``epi`` fused into their
    stores.  Returns 1: both done; -1: C done, the pass not (a NaN met its
    compare or a flag was raised: the caller runs it); 0: nothing written (the
    tiles do not take the product)."""
    if c.descr.type_num == cnp.NPY_FLOAT:
        return gemm_epi_arrays(<float *>NULL, c, a, b, alpha, beta, epi)
    return gemm_epi_arrays(<double *>NULL, c, a, b, alpha, beta, epi)


cdef int gemm_2d(cnp.ndarray c, cnp.ndarray a, cnp.ndarray b, double alpha,
                 double beta) except -1:
    """C := alpha*A@B + beta*C for operands gemm_2d_ready accepted."""
    cdef Py_ssize_t flops
    if a.ndim == 2 and b.ndim == 2:
        flops = c.shape[0] * c.shape[1] * a.shape[1]
        if (alpha == 1 and beta == 0 and c.strides[1] == c.itemsize and flops >= NUMPY_BLAS_MIN
                and not tiles_take(c.shape[0], c.shape[1], a.shape[1], flops)
                and not (a.strides[1] == a.itemsize and b.strides[0] == b.itemsize
                         and dots_take(c.shape[0], c.shape[1], a.shape[1]))):
            np.matmul(a, b, out=c)
            return 0
        return gemm_any(c, a, b, alpha, beta)
    # matrix-vector and vector-vector products as large as OpenBLAS runs on its
    # threads (gemv from 9216 elements, dot beyond 10000): NumPy's pool too,
    # through np.dot (np.matmul's gufunc took 5-10 % longer on 256-512 gemvs)
    if alpha == 1 and beta == 0 and (c.ndim == 0 or c.strides[0] == cnp.PyArray_ITEMSIZE(c)) \
            and a.size * (b.shape[1] if b.ndim == 2 else 1) >= NUMPY_VECTOR_MIN:
        _NP_DOT(a, b, c)  # (out positional, np.dot kept: no keyword dict, no lookups)
        return 0
    if c.descr.type_num == cnp.NPY_FLOAT:
        return gemv_arrays(<float *>NULL, c, a, b, alpha, beta)
    return gemv_arrays(<double *>NULL, c, a, b, alpha, beta)
