"""pyet: lazy tensor expressions evaluated in one fused, compiled pass.

Arithmetic on pyet tensors builds an expression tree (MShadow's expression
templates); assigning the tree into a destination evaluates it block by block
in compiled loops, with no temporary arrays::

    import pyet
    w, g = pyet.asarray(weight), pyet.asarray(grad)
    w[...] = -eta * (g + lam * w)
"""

import os as _os

# OpenMP's idle threads spin for a while after each parallel region; on a busy
# machine they take the core the working thread needs (softmax on 2 threads
# went 35x slower than on 1 here).  Unless the user chose a policy, spin
# briefly, then sleep.  libgomp reads this when it loads, below.
if "OMP_WAIT_POLICY" not in _os.environ:
    _os.environ.setdefault("GOMP_SPINCOUNT", "10000")

try:
    from pyet._core import core as _compiled  # noqa: E402, F401
except ImportError as _exc:  # the source folder, where nothing is compiled
    if "pyet._core" not in str(_exc) and "pyet._kernels" not in str(_exc):
        raise
    raise ImportError(
        f"pyet's compiled modules are not in {_os.path.dirname(__file__)}: this looks like "
        "pyet's source folder, which Python found before the installed pyet. Run from "
        "another folder, or with `python -P` (which keeps the current folder off sys.path); "
        "to build in place: pip install --no-build-isolation -e ."
    ) from None

from pyet._blob import Blob  # noqa: E402
from pyet._core.core import (
    Expr,
    Tensor,
    batch_dot,
    dot,
    fast_math,
    outer,
    swapaxes,
    transpose,
)
from pyet._evalplan import EvalPlan, Handle, clear_plan_cache, evaluate_all, explain, stats
from pyet._functions import *  # noqa: F403
from pyet._functions import __all__ as _function_names
from pyet._kernels.parallel import get_num_threads, set_num_threads
from pyet._nodes.grad import *  # noqa: F403
from pyet._nodes.grad import __all__ as _grad_names
from pyet._nodes.nn import *  # noqa: F403
from pyet._nodes.nn import __all__ as _nn_names
from pyet._nodes.reductions import *  # noqa: F403
from pyet._nodes.reductions import __all__ as _reduce_names
from pyet._nodes.softmax import *  # noqa: F403
from pyet._nodes.softmax import __all__ as _softmax_names
from pyet._nodes.spatial import *  # noqa: F403
from pyet._nodes.spatial import __all__ as _spatial_names
from pyet._nodes.views import *  # noqa: F403
from pyet._nodes.views import __all__ as _view_names
from pyet._tensor_api import (
    Fill,
    OneHot,
    Zero,
    arange,
    asarray,
    empty,
    empty_like,
    evaluate,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)

__version__ = "0.1.0"

__all__ = [
    "Blob", "EvalPlan", "Expr", "Fill", "Handle", "OneHot", "Tensor", "Zero", "arange",
    "asarray", "batch_dot", "clear_plan_cache", "dot",
    "empty", "empty_like", "evaluate", "evaluate_all", "explain", "fast_math", "full",
    "full_like",
    "get_num_threads", "linspace", "ones", "ones_like", "outer", "set_num_threads", "stats",
    "swapaxes", "transpose", "zeros", "zeros_like",
    *_function_names, *_grad_names, *_nn_names, *_reduce_names, *_softmax_names, *_spatial_names,
    *_view_names,
]
