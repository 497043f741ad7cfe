# How many threads a pass uses: one setting and one threshold for every kernel.

from pyet._kernels.types cimport pyet_intp

# threads for ``work`` elements split over ``lines`` independent pieces
cdef int threads_for(pyet_intp work, pyet_intp lines) noexcept nogil

# the threads a pass asking for nthreads would run on now (busy machine: fewer)
cdef int pool_threads(int nthreads) noexcept nogil

# chunk c of a pass, run in participant slot (0: the caller)
ctypedef int (*chunk_fn)(void *ctx, pyet_intp chunk, int slot) noexcept nogil

# run chunks 0..n-1 on up to nthreads threads (the caller claims what is left and
# waits only for chunks others claimed); *fpflags: the floating-point flags raised
cdef int run_chunks(chunk_fn fn, void *ctx, pyet_intp n, int nthreads,
                    int *fpflags) noexcept nogil

# np.errstate's handling of those flags (a warning, an error, ...)
cpdef int report_fp(int flags) except -1
