"""Thread settings shared by every compiled pass: the elementwise engine,
reductions and the NN kernels ask ``threads_for`` how many threads a piece of
work deserves; one setting, one threshold."""

import os

from pyet._kernels.types cimport pyet_intp


cdef extern from "threads.h" nogil:
    int pyet_omp_max_threads()
    int pyet_have_openmp()


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


cdef int threads_for(pyet_intp work, pyet_intp lines) noexcept nogil:
    cdef pyet_intp n = NUM_THREADS
    if n <= 1 or not pyet_have_openmp():
        return 1
    n = min(n, <pyet_intp>pyet_omp_max_threads(), work // MIN_PER_THREAD, lines)
    return <int>max(n, 1)


set_num_threads(_initial_threads())
