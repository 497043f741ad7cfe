"""Thread settings shared by every compiled pass: the elementwise engine,
reductions and the NN kernels ask ``threads_for`` how many threads a piece of
work deserves; one setting, one threshold.  ``run_chunks`` runs a pass's chunks
on the pool of threads.h; ``report_fp`` turns the floating-point flags a pass
raised into NumPy's warnings or errors."""

import os

cimport numpy as cnp

from pyet._kernels.types cimport pyet_intp


cdef extern from "threads.h" nogil:
    int pyet_omp_max_threads()
    int pyet_have_openmp()
    ctypedef int (*pyet_chunk_fn)(void *ctx, pyet_intp chunk, int slot) noexcept nogil
    int pyet_run_chunks(pyet_chunk_fn fn, void *ctx, pyet_intp n, int nthreads, int *fpflags)
    int pyet_pool_threads(int nthreads)
    int pyet_dynamic_threads
    int pyet_last_nthreads
    enum:
        PYET_FP_DIVIDE
        PYET_FP_OVERFLOW
        PYET_FP_UNDERFLOW
        PYET_FP_INVALID


cdef int NUM_THREADS = 1
# below this many elements per thread, starting threads costs more than it saves
cdef pyet_intp MIN_PER_THREAD = 1 << 16


def _initial_threads():
    for var in ("PYET_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(var, "").split(",")[0].strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return os.cpu_count() or 1


def set_num_threads(int n):
    """Use at most ``n`` threads for large evaluations."""
    global NUM_THREADS
    if n < 1:
        raise ValueError(f"the number of threads must be at least 1, got {n}")
    NUM_THREADS = n if pyet_have_openmp() else 1


def get_num_threads():
    """The most threads an evaluation uses (also capped by threadpoolctl's OpenMP limit)."""
    return min(NUM_THREADS, pyet_omp_max_threads()) if pyet_have_openmp() else 1


def set_min_per_thread(pyet_intp n):
    """Set the work (elements) each extra thread needs before it is started."""
    global MIN_PER_THREAD
    MIN_PER_THREAD = max(n, 1)


def get_min_per_thread():
    """The work (elements) each extra thread needs before it is started."""
    return MIN_PER_THREAD


def set_dynamic(bint on):
    """On (the default), a pass on a busy machine wakes only the workers there are idle
    CPUs for, and after passes the workers barely helped runs on its caller alone for a
    while (threads.h); off, every pass uses every thread it is given (tests)."""
    global pyet_dynamic_threads
    pyet_dynamic_threads = on


def get_dynamic():
    """Whether passes use fewer threads on a busy machine (see set_dynamic)."""
    return bool(pyet_dynamic_threads)


def last_pass_threads():
    """The threads (the caller included) the last pass of the thread pool ran on."""
    return pyet_last_nthreads


cdef int threads_for(pyet_intp work, pyet_intp lines) noexcept nogil:
    cdef pyet_intp n = NUM_THREADS
    if n <= 1 or not pyet_have_openmp():
        return 1
    n = min(n, <pyet_intp>pyet_omp_max_threads(), work // MIN_PER_THREAD, lines)
    return <int>max(n, 1)


cdef int pool_threads(int nthreads) noexcept nogil:
    return pyet_pool_threads(nthreads)


cdef int run_chunks(chunk_fn fn, void *ctx, pyet_intp n, int nthreads,
                    int *fpflags) noexcept nogil:
    return pyet_run_chunks(<pyet_chunk_fn>fn, ctx, n, nthreads, fpflags)


cdef extern from "numpy/ufuncobject.h":
    # NumPy's own handling of a ufunc's flags (NPY_FPE_* bits, the same as
    # PYET_FP_*): np.errstate read in C, its messages and seterrcall's arguments
    int PyUFunc_GiveFloatingpointErrors(const char *name, int fpe_errors) except -1
    enum:
        UFUNC_FPE_DIVIDEBYZERO
        UFUNC_FPE_OVERFLOW
        UFUNC_FPE_UNDERFLOW
        UFUNC_FPE_INVALID

assert (PYET_FP_DIVIDE, PYET_FP_OVERFLOW, PYET_FP_UNDERFLOW, PYET_FP_INVALID) == (
    UFUNC_FPE_DIVIDEBYZERO, UFUNC_FPE_OVERFLOW, UFUNC_FPE_UNDERFLOW, UFUNC_FPE_INVALID)

cnp.import_ufunc()


cpdef int report_fp(int flags) except -1:
    """NumPy's handling (np.seterr / np.errstate) of the floating-point errors
    a pass raised (PYET_FP_* bits): ignore, warn, raise, call, print or log,
    as "<error> encountered in a pyet evaluation"."""
    if flags:
        PyUFunc_GiveFloatingpointErrors(b"a pyet evaluation", flags)
    return 0


set_num_threads(_initial_threads())
