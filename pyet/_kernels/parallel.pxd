# How many threads a pass uses: one setting and one threshold for every kernel.

from pyet._kernels.types cimport pyet_intp

# threads for ``work`` elements split over ``lines`` independent pieces
cdef int threads_for(pyet_intp work, pyet_intp lines) noexcept nogil
