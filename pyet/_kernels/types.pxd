# The C types every compiled module shares.  Only the core includes kernels.h
# (its loops, compiled for several CPUs); the other modules need just these.

# an index or byte offset: kernels.h's pyet_intp is the same type
ctypedef Py_ssize_t pyet_intp
