"""Shared pytest setup: the report header names the pyet under test; fixtures
several test files use."""

import contextlib
import os

import numpy as np
import pytest

import pyet
from pyet._core import core as _plan
from pyet._kernels import parallel as _parallel


def pytest_report_header(config):
    # Shows whether the suite ran against an installed wheel or an editable build.
    return f"pyet {pyet.__version__} from {os.path.dirname(pyet.__file__)}"


@contextlib.contextmanager
def pyet_threads(n):
    """pyet on n threads, lifting an OpenMP limit another library set in this
    process (PyTorch sets its runtime's thread count to the physical cores,
    one here, which caps pyet's); everything restored after."""
    before = pyet.get_num_threads()
    with contextlib.ExitStack() as stack:
        try:
            from threadpoolctl import threadpool_limits
            stack.enter_context(threadpool_limits(limits=n, user_api="openmp"))
        except ImportError:
            pass
        pyet.set_num_threads(n)
        try:
            yield pyet.get_num_threads()
        finally:
            pyet.set_num_threads(before)


@pytest.fixture
def threaded():
    """Force threads even on small inputs and on a busy machine, and restore the
    settings after."""
    with pyet_threads(2):
        before = _parallel.get_min_per_thread(), _parallel.get_dynamic(), _plan.get_block_size()
        _parallel.set_min_per_thread(64)
        _parallel.set_dynamic(False)
        _plan.set_block_size(32)
        yield
        _parallel.set_min_per_thread(before[0])
        _parallel.set_dynamic(before[1])
        _plan.set_block_size(before[2])


@pytest.fixture(params=["kernel", "numpy_loop"])
def simd_lowering(request):
    """The ops of ops.NUMPY_SIMD_LOOPS (float64 log, float32 sin and cos) lowered to pyet's
    kernels or, where NumPy's loops are AVX-512, to NumPy's loops; restored after."""
    from pyet._core import core
    before = core.set_numpy_simd_loops(request.param == "numpy_loop")
    yield request.param
    core.set_numpy_simd_loops(before)


@pytest.fixture
def one_thread():
    """pyet on one thread for the test (kernels' one-thread paths), restored after."""
    before = pyet.get_num_threads()
    pyet.set_num_threads(1)
    yield
    pyet.set_num_threads(before)


def ulps_f32(got, want):
    """Distance in float32 units in the last place (0 where both are NaN)."""
    def ordered(a):
        i = np.ascontiguousarray(a, np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    d = np.abs(ordered(got) - ordered(want))
    return np.where(np.isnan(got) & np.isnan(want), 0, d)


def fp_flags_raised(fn):
    """The NumPy floating-point error kinds ('overflow', 'invalid value', ...) fn raised."""
    import numpy as np

    seen = set()
    old = np.seterrcall(lambda what, flag: seen.add(what))
    try:
        with np.errstate(all="call"):
            fn()
    finally:
        np.seterrcall(old)
    return seen


def warning_kinds(fn):
    """The sorted kinds of the warnings fn raised ('divide by zero', 'overflow', ...)."""
    import warnings

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return sorted(str(x.message).split(" encountered")[0] for x in w)


def in_threads(work, n):
    """work(k) for k in range(n), each in its own Python thread at once; the
    exceptions they raised (an empty list when none did)."""
    import threading

    errors = []

    def run(k):
        try:
            work(k)
        except Exception as exc:  # noqa: BLE001 - returned to the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors
