"""Evaluating trees that contain matrix products (MShadow's DotExp engine).

At the root, ``[D ±] alpha * dot(A, B)`` goes straight into the destination as
one gemm: D (any elementwise tree) is written into C first and BLAS adds the
product with beta = 1, as MShadow folds scale and ``+=`` into alpha and beta.
Any other product in a tree is computed into a scratch array, which then
stands in the tree as a leaf for the elementwise evaluator (``_special.py``
evaluates such trees).
"""

import numpy as np

from pyet._core import expr as _expr
from pyet._core import plan as _plan
from pyet._core.special import materialize, register_root_form, register_value
from pyet._kernels import blas as _blas

_OPS = _expr.OPCODES
_DOT, _SCALAR, _LEAF = _OPS["dot"], _OPS["scalar"], _OPS["leaf"]
_MUL, _ADD, _SUB, _NEG = _OPS["multiply"], _OPS["add"], _OPS["subtract"], _OPS["negative"]
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _gemm_form(e):
    """(dot node, alpha, D, beta) when e is ``[D ±] alpha*dot(A, B)`` or
    ``alpha*dot(A, B) - D`` with D free of products, else None."""
    if e.op == _DOT:
        return e, 1.0, None, 0.0
    if e.op == _NEG:
        form = _gemm_form(e.args[0])
        return (form[0], -form[1], None, 0.0) if form and form[2] is None else None
    if e.op == _MUL:
        for s, x in (e.args, e.args[::-1]):
            if s.op == _SCALAR and x.flags:
                form = _gemm_form(x)
                if form and form[2] is None and form[0].dt == e.dt:
                    return form[0], float(s.value) * form[1], None, 0.0
        return None
    if e.op in (_ADD, _SUB):
        a, b = e.args
        # (D, product term, sign of the product, beta)
        cases = ((a, b, 1.0, 1.0), (b, a, 1.0, 1.0)) if e.op == _ADD else \
            ((a, b, -1.0, 1.0), (b, a, 1.0, -1.0))
        for d, x, sign, beta in cases:
            if d.flags or not x.flags:
                continue
            form = _gemm_form(x)
            if form and form[2] is None and form[0].dt == e.dt:
                return form[0], sign * form[1], d, beta
    return None


def _as_matrix(x, dtype, dst=None):
    """Operand x (an Expr) as an ndarray: a leaf as it is when its dtype fits
    (BLAS layouts are checked later); anything else computed.  A leaf that
    overlaps the destination is copied first."""
    if x.op == _LEAF:
        arr = x.value
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
    if arr.shape[-1] <= _blas.int_limit():
        return np.array(arr, order="C")  # a copy, aligned even when arr is C-contiguous
    return np.array(arr.swapaxes(-1, -2), order="C").swapaxes(-1, -2)


def _check_int(shape):
    # one side of a matrix is its leading dimension: BLAS's int must hold it
    if min(shape[-2:]) > _blas.int_limit():
        raise ValueError(f"matmul: a {shape[-2]}x{shape[-1]} matrix is too large for BLAS: "
                         f"one side must be at most {_blas.int_limit()}")


def _blas_empty(shape, dtype):
    """An uninitialized stack BLAS can write, its leading dimension within BLAS's int."""
    _check_int(shape)
    if shape[-1] <= _blas.int_limit():
        return np.empty(shape, dtype)
    return np.empty(shape[:-2] + shape[:-3:-1], dtype).swapaxes(-1, -2)


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


def _product(node):
    """The value of a dot node, computed into a new array."""
    cdtype = _expr.DTYPES[node.cdt]
    a = _as_matrix(materialize(node.args[0]), cdtype)
    b = _as_matrix(materialize(node.args[1]), cdtype)
    out = np.empty(node.shape, cdtype)
    matmul_into(out, a, b)
    return out if node.cdt == node.dt else out.astype(_expr.DTYPES[node.dt])


def _is_view_of(d, dst):
    return (d.op == _LEAF and d.value.shape == dst.shape and d.value.strides == dst.strides
            and d.value.dtype == dst.dtype
            and d.value.__array_interface__["data"][0] == dst.__array_interface__["data"][0])


def assign_gemm(dst, e):
    """Evaluate e into dst as one gemm when e is ``[D +-] alpha*dot(A, B)`` of
    dst's shape and float dtype; False (nothing written) otherwise."""
    form = _gemm_form(e)
    # alpha 0 would let BLAS skip the product, losing NumPy's 0*inf = nan
    if form is None or form[1] == 0:
        return False
    node, alpha, d, beta = form
    if not (node.shape == dst.shape and dst.dtype in _FLOATS
            and _expr.DTYPES[node.dt] == dst.dtype and node.cdt == node.dt):
        return False
    a = _as_matrix(node.args[0], dst.dtype, dst)
    b = _as_matrix(node.args[1], dst.dtype, dst)
    if d is not None and not _is_view_of(d, dst):
        _plan.assign(dst, d)
    matmul_into(dst, a, b, alpha, beta if d is not None else 0.0)
    return True


register_value(_DOT, _product)
register_root_form(assign_gemm)
