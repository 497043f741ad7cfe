# Matrix products (MShadow's DotExp): nodes, shapes, dtypes, and evaluation
# through BLAS (pyet._kernels.blas).  At the root, scale and accumulation fold
# into BLAS's alpha and beta (the root forms of rewrite.py, matched in
# engine.pxi); anywhere else a product is computed into scratch first.

cdef tuple dot_shape(tuple a, tuple b, bint batch=False):
    """Shape of a @ b for 1-D and 2-D operands, or of stacks of matrices
    (``batch``: 2-D or 3-D operands); ValueError naming both shapes."""
    cdef Py_ssize_t na = len(a), nb = len(b)
    if batch:
        if na not in (2, 3) or nb not in (2, 3) or (na == 2 and nb == 2):
            raise ValueError(f"pyet.batch_dot takes stacks of matrices (3-D; one may be 2-D), "
                             f"got shapes {fmt_shape(a)} and {fmt_shape(b)}")
        if a[na - 1] != b[nb - 2]:
            raise ValueError(f"pyet.batch_dot: shapes {fmt_shape(a)} and {fmt_shape(b)} not "
                             f"aligned: {a[na - 1]} (dim {na - 1}) != {b[nb - 2]} (dim {nb - 2})")
        ba = a[0] if na == 3 else 1
        bb = b[0] if nb == 3 else 1
        if ba != bb and ba != 1 and bb != 1:
            raise ValueError(f"pyet.batch_dot: batch sizes of shapes {fmt_shape(a)} and "
                             f"{fmt_shape(b)} differ: {ba} != {bb}")
        return (ba if bb == 1 else bb, a[na - 2], b[nb - 1])  # NumPy's: 1 with 0 is 0
    if na == 0 or nb == 0 or na > 2 or nb > 2:
        raise ValueError(f"pyet.dot takes 1-D and 2-D operands, got shapes {fmt_shape(a)} "
                         f"and {fmt_shape(b)}")
    k_a = a[na - 1]
    k_b = b[0]
    if k_a != k_b:
        raise ValueError(f"pyet.dot: shapes {fmt_shape(a)} and {fmt_shape(b)} not aligned: "
                         f"{k_a} (dim {na - 1}) != {k_b} (dim 0)")
    return a[:na - 1] + b[1:]


def dot(a, b):
    """The matrix product ``a @ b`` of 1-D and 2-D operands, lazily (MShadow's DotExp).

    Evaluated through BLAS (float32, float64) or an exact loop (bool, int32,
    int64); scale and accumulation around it fold into BLAS's alpha and beta.
    """
    return _dot_node(a, b, False)


def batch_dot(a, b):
    """Stacks of matrix products ``a[i] @ b[i]``, lazily: 3-D operands (either
    may be a transposed view); a 2-D operand or a batch of length 1 broadcasts."""
    return _dot_node(a, b, True)


cdef dict _DOT_DTYPES = {}  # (dtype codes of A and B) -> (compute, result) codes


cdef tuple dot_dtypes(int da, int db):
    cdef int k = da * DT_COUNT + db
    dts = _DOT_DTYPES.get(k)
    if dts is None:
        try:
            res = np.matmul.resolve_dtypes((DTYPES[da], DTYPES[db], None))
        except Exception as exc:
            raise TypeError(f"pyet.dot of {DTYPES[da]} and {DTYPES[db]}: {exc}") from None
        dts = _DOT_DTYPES[k] = (dtype_code(res[0]), dtype_code(res[2]))
    return dts


cdef Expr _dot_node(object a, object b, bint batch):
    cdef Expr x = as_operand(a), y = as_operand(b)
    if x._op == OP_scalar or y._op == OP_scalar:
        raise ValueError("pyet.dot takes 1-D and 2-D operands, not scalars; use * to scale")
    cdef tuple shape = dot_shape(x.shape, y.shape, batch)
    cdef int dt = <int>dot_dtypes(x._dt, y._dt)[1]
    # special()'s node, built here: no Python call, no attribute lookups (dot
    # of small operands: the node was a third of pyet's time above BLAS)
    cdef SpecialNode e = SpecialNode.__new__(SpecialNode)
    seal(e, OP_special, (x, y), shape, dt, dt, _BATCH_EXTRA if batch else _PRODUCT_EXTRA)
    e._kernel = _BATCH_PRODUCT if batch else _PRODUCT
    e._kind = SPECIAL_PRODUCT
    e._flags |= HAS_SPECIAL
    return e


def outer(x, y):
    """The outer product ``x[:, None] * y[None, :]``, lazily (NumPy's ``outer``:
    operands are flattened first)."""
    cdef Expr a = _flat(as_operand(x)), b = _flat(as_operand(y))
    return binary(OP_multiply, permute(pad_to(a, 2), (1, 0)), b)


cdef Expr _flat(Expr e):
    if len(e.shape) == 1:
        return e
    if e._op == OP_scalar:
        return wrap(np.ravel(np.asarray((<Scalar>e)._value)))
    if e._op == OP_leaf and (<Tensor>e)._array.flags.c_contiguous:
        return view_leaf(e, "reshape", (-1,), (<Tensor>e)._array.reshape(-1))
    cdef Py_ssize_t n = 1
    for d in e.shape:
        n *= d
    return view_node(e, "reshape", (n,), (n,))


# ----------------------------------------------------------- evaluation

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class Product(Special):
    """The kernel of ``A @ B`` (1-D and 2-D operands) or of stacks of matrix
    products (``batch``): BLAS for float32/float64, an exact loop otherwise."""

    __slots__ = ("batch",)

    def __init__(self, batch):
        self.batch = batch

    @property
    def name(self):
        return "batch_dot" if self.batch else "dot"

    def params(self):
        return (self.batch,)

    def describe(self):
        return []

    def value(self, args):
        x, y = args
        cdt, dt = dot_dtypes(x._dt, y._dt)
        a = operand_array(x, DTYPES[cdt])
        b = operand_array(y, DTYPES[cdt])
        shape = dot_shape(x.shape, y.shape, self.batch)
        out = np.empty(shape, DTYPES[cdt])
        matmul_into(out, a, b)
        return out if cdt == dt else out.astype(DTYPES[dt])

    def permuted(self, node, axes):
        x, y = node._args
        if not self.batch and len(axes) == 2:  # (A @ B).T == B.T @ A.T
            return dot(permute(y, (1, 0)), permute(x, (1, 0)))
        if self.batch and axes == (0, 2, 1):  # per matrix: (A[i] @ B[i]).T
            return batch_dot(matrix_t(y), matrix_t(x))
        return None

    def vjp(self, node, g):
        """Reverse mode: the gradients with respect to A and B given the product's
        gradient ``g``, as lazy products (pyet.grad sums a broadcast batch back)."""
        x, y = node._args
        if self.batch:
            return batch_dot(g, _shared_t(y)), batch_dot(_shared_t(x), g)
        nx, ny = len(x.shape), len(y.shape)
        if nx == 2 and ny == 2:
            return dot(g, _shared_t(y)), dot(_shared_t(x), g)
        if nx == 2:  # matrix @ vector
            return outer(g, y), dot(_shared_t(x), g)
        if ny == 2:  # vector @ matrix
            return dot(y, g), outer(x, g)
        return binary(OP_multiply, g, y), binary(OP_multiply, g, x)

    def gemm_into(self, dst, args, alpha, beta):
        """dst := alpha * A @ B + beta * dst as one BLAS call when dst has the
        product's float dtype (no rounding in between); False otherwise, nothing
        written.  Operands overlapping dst are copied first."""
        x, y = args
        cdt, dt = dot_dtypes(x._dt, y._dt)
        if cdt != dt or DTYPES[dt] != dst.dtype or dst.dtype not in _FLOATS:
            return False
        matmul_into(dst, operand_array(x, dst.dtype, dst), operand_array(y, dst.dtype, dst),
                    alpha, beta)
        return True


cdef Expr _shared_t(Expr e):
    # An operand transposed for a gradient product.  permute() would push the
    # transpose into a tree and rewrite a product below it ((A @ B).T is
    # B.T @ A.T): a new node, so the forward's product would be computed again.
    # A view of the tree's value keeps the forward's nodes shared; BLAS reads it
    # transposed, without a copy.
    if e._op == OP_leaf or e._op == OP_scalar:
        return matrix_t(e)
    cdef tuple axes = (0, 2, 1)
    if len(e.shape) == 2:
        axes = (1, 0)
    return view_node(e, "transpose", axes, tuple([e.shape[a] for a in axes]))


_PRODUCT = Product(False)
_BATCH_PRODUCT = Product(True)
# special()'s structure extras for them
cdef tuple _PRODUCT_EXTRA = (Product, False), _BATCH_EXTRA = (Product, True)


def operand_array(Expr x, dtype, dst=None):
    """A product's operand as an ndarray: a leaf as it is when its dtype fits
    (BLAS layouts are checked later); anything else computed.  A leaf that
    overlaps the destination is copied first."""
    if x._op == OP_special:  # through the evaluation's table: computed once per evaluation
        x = materialize_node(x)
    if x._op == OP_leaf:
        arr = (<Tensor>x)._array
        if dst is not None and np.may_share_memory(arr, dst):
            arr = arr.copy()
    else:
        arr = np.asarray(x)
    return arr if arr.dtype == dtype else arr.astype(dtype)


def _stacks(out, a, b):
    """3-D views (stacks of matrices) of out, a and b for out := a @ b: a vector
    a is a row, a vector b a column.  Indexing makes views, never copies."""
    a3 = a[None, None, :] if a.ndim == 1 else (a[None] if a.ndim == 2 else a)
    b3 = b[None, :, None] if b.ndim == 1 else (b[None] if b.ndim == 2 else b)
    c3 = out
    if b.ndim == 1:
        c3 = c3[..., None]
    if a.ndim == 1:
        c3 = c3[..., None, :]
    while c3.ndim < 3:
        c3 = c3[None]
    return c3, a3, b3


def _blas_ready(arr):
    """``arr`` when BLAS can read it in place, else an aligned copy whose
    leading dimension fits BLAS's int: row-major, or column-major when the
    rows are too long."""
    if _blas.blas_ok(arr):
        return arr
    _check_int(arr.shape)
    if arr.shape[arr.ndim - 1] <= _blas.int_limit():
        return np.array(arr, order="C")  # a copy, aligned even when arr is C-contiguous
    return np.array(arr.swapaxes(arr.ndim - 1, arr.ndim - 2), order="C").swapaxes(
        arr.ndim - 1, arr.ndim - 2)


def _check_int(shape):
    # one side of a matrix is its leading dimension: BLAS's int must hold it
    rows, cols = shape[len(shape) - 2], shape[len(shape) - 1]
    if min(rows, cols) > _blas.int_limit():
        raise ValueError(f"matmul: a {rows}x{cols} matrix is too large for BLAS: "
                         f"one side must be at most {_blas.int_limit()}")


def _blas_empty(shape, dtype):
    """An uninitialized stack BLAS can write, its leading dimension within BLAS's int."""
    _check_int(shape)
    # (no negative indices: this module is compiled with wraparound off)
    nd = len(shape)
    if shape[nd - 1] <= _blas.int_limit():
        return np.empty(shape, dtype)
    transposed = np.empty(shape[:nd - 2] + (shape[nd - 1], shape[nd - 2]), dtype)
    return transposed.swapaxes(nd - 1, nd - 2)


def _check_batches(c3, a3, b3):
    # NumPy broadcasts a batch of 1 against 0 to 0: an empty operand never fills C
    if c3.size and (a3.shape[0] == 0 or b3.shape[0] == 0):
        raise ValueError(f"matmul: batches of shapes {a3.shape} and {b3.shape} broadcast to "
                         f"an empty batch, not to {c3.shape}")


def matmul_into(out, a, b, alpha=1.0, beta=0.0):
    """out := alpha * a @ b + beta * out for ndarrays of one dtype (a, b 1-D,
    2-D or stacks; out of the product's shape).  BLAS for float32/float64,
    never copying an operand BLAS can read (dimensions beyond BLAS's int are
    split into several calls); an exact loop for bool and ints (alpha 1, beta
    0 only).  Misaligned operands are copied, and a destination BLAS cannot
    address is computed aside and copied in."""
    if gemm_2d_ready(out, a, b):  # one gemm, gemv or dot, checked in C
        gemm_2d(out, a, b, alpha, beta)
        return out
    c3, a3, b3 = _stacks(out, a, b)
    _check_batches(c3, a3, b3)
    if c3.size == 0:
        return out
    if a3.shape[2] == 0:  # empty sums: C := beta*C
        c3[...] = c3 * beta if beta else 0
        return out
    if out.dtype not in _FLOATS:
        _blas.loop_matmul_into(c3, a3, b3)
        return out
    a3, b3 = _blas_ready(a3), _blas_ready(b3)
    if _blas.blas_ok(c3):
        _blas.gemm_into(c3, a3, b3, alpha, beta)
        return out
    tmp = _blas_ready(c3) if beta else _blas_empty(c3.shape, out.dtype)
    _blas.gemm_into(tmp, a3, b3, alpha, beta)
    c3[...] = tmp
    return out
