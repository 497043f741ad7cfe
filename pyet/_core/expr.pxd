cdef class Expr:
    cdef readonly int op            # OP_* code (src/kernels.h)
    cdef readonly tuple args        # child nodes
    cdef readonly tuple shape       # broadcast shape, computed when built
    cdef readonly int dt            # result dtype code (DT_*)
    cdef readonly int cdt           # dtype the op computes in (its loop's inputs)
    cdef readonly int weak          # scalars: 1 Python int, 2 Python float (NEP 50)
    cdef readonly Py_ssize_t key    # interned structure: equal keys, equal programs
    cdef readonly object value      # leaf: ndarray; scalar: number; pyfunc: callable
    cdef readonly int flags         # HAS_DOT: a matrix product somewhere below
    cdef readonly object origin     # a transposed node: (the node it transposes, axes)


cdef class Tensor(Expr):
    pass


cdef Expr as_operand(object obj)
cdef Tensor wrap(object arr)
cpdef Expr with_args(Expr e, tuple args)
cpdef str fmt_shape(tuple s)
