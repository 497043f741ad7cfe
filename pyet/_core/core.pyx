"""pyet's core: node types, lowering and the evaluation engine.

One compiled module, written as the layers it is made of (each an included
file, in the order a tree goes through them):

- ``nodes.pxi``: the node types (MShadow's Exp) with typed fields, NumPy 2's
  dtype rules and broadcasting, structure keys; building a tree computes its
  shape, dtype and key once and evaluates nothing.
- ``products.pxi``: matrix products (MShadow's DotExp): nodes, shapes, dtypes,
  and their evaluation through BLAS (``pyet._kernels.blas``).
- ``lower.pxi``: lowering an elementwise tree into a program of block
  kernels (rewrite rules applied), cached by structure.
- ``loops.pxi``: the loops an instruction calls besides pyet's kernels:
  NumPy's ufunc loops, pyet's kernels as whole loops, user functions.
- ``blocks.pxi``: running a program over a pass's blocks (rows, packed rows,
  tiles) on the pool's threads with the GIL released.
- ``passes.pxi``: one pass: the call's operands bound, dimensions merged,
  blocks and threads chosen, the program run; trees broadcast along dst
  computed once, then filled or copied.
- ``folds.pxi``: reductions' folds into accumulators and NumPy's row folds.
- ``engine.pxi``: how a root is written -- a root form (one gemm with alpha,
  beta and D), a special node straight into the destination, or the
  elementwise program -- and special nodes computed into scratch first.
- ``schedules.pxi``: recorded evaluations kept by structure (value_and_grad's
  cache): a structure key without the leaves' memory, and replays that follow
  new leaves' arrays.

Node families (``pyet._nodes``) build on this module; they subclass
``Special`` for their kernels, and nothing here imports them.
"""

cimport numpy as cnp
from cpython.object cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memmove, memset
from libc.math cimport INFINITY, isfinite

import contextvars
import itertools
import operator
import threading
from abc import ABC, abstractmethod

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from pyet._core.ops import (
    NUMPY_LOOPS, NUMPY_POWER_F32, NUMPY_SIMD_LOOPS, OPS, OPS_BY_NAME, UFUNC_TO_OP)
from pyet._core.rewrite import (
    COMMUTATIVE,
    COMPUTE_BOUND,
    COSTLY_OPS,
    ELEMENT_NS,
    FAST_MATH_FOLDS,
    GEMM_EPILOGUES,
    INT_ELEMENT_NS,
    INTEGER_CONSTANTS,
    INVOLUTIONS,
    NEUTRAL_FOLDS,
    PASS_RULES,
    PYFUNC_ELEMENT_NS,
    ROOT_FORMS,
    RULES,
    SPECIAL_FOLDS,
)
from pyet._kernels import blas as _blas

from pyet._kernels.blas cimport gemm_2d, gemm_2d_epilogue, gemm_2d_ready
from pyet._kernels.gemm cimport (PYET_EPI_BIAS_MASK, PYET_EPI_BIAS_RELU, PYET_EPI_MASK,
                                 pyet_gemm_epi)
from pyet._kernels.kernels cimport *
from pyet._kernels.parallel cimport chunk_fn, pool_threads, report_fp, run_chunks, threads_for

cnp.import_array()

include "nodes.pxi"
include "products.pxi"
include "lower.pxi"
include "loops.pxi"
include "blocks.pxi"
include "passes.pxi"
include "folds.pxi"
include "engine.pxi"
include "schedules.pxi"

# the op table and the compiled kernels agree, or pyet does not import
check_op_table()
