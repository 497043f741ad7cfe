"""Timing helpers shared by the plain benchmark scripts (bench_*.py): the CPU's
name, and interleaved min-of-repeats timing sized like timeit's autorange.  The
machine is shared and noisy, so competitors run in turn and each keeps its best."""

import gc
import platform
import time
from pathlib import Path


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


# the clock bench() reads: wall time, or (use_cpu_time) this thread's CPU
# time, which leaves out the time other jobs of a busy machine held the core
# (one-thread runs only: other threads' work is not counted)
_clock = time.perf_counter


def use_cpu_time(on=True):
    """Time one-thread runs on this thread's CPU time instead of wall time."""
    global _clock
    _clock = time.thread_time if on else time.perf_counter


def call_at(depth, fn):
    """fn() under ``depth`` more C-level frames (each a map's next and a lambda,
    a few hundred bytes of C stack): some SIMD loops (NumPy's SVML ones on AMD
    Zen 4) run up to 2.8x slower under a few particular stack addresses, so a
    call timed at one depth can stand for that address, not the code
    (bench_call_depth.py)."""
    if depth == 0:
        return fn()
    return next(map(lambda _: call_at(depth - 1, fn), (0,)))


def times_by_depth(fns, depths, repeats, min_time, setup=None):
    """{name: fn} -> {name: [seconds per call under call depth 0 .. depths-1]},
    the competitors in turn at each depth (bench), each depth's own cost (a
    no-op under the same frames) taken off: at 256 elements it is a third of
    a call."""
    fns = dict(fns, _nop=lambda: None)
    times = {k: [] for k in fns if k != "_nop"}
    for d in range(depths):
        t = bench({k: (lambda f=f, d=d: call_at(d, f)) for k, f in fns.items()},
                  repeats, min_time, setup)
        for k in times:
            times[k].append(t[k] - t["_nop"])
    return times


def loop_time(fn, number):
    t0 = _clock()
    for _ in range(number):
        fn()
    return _clock() - t0


def autorange(fn, min_time):
    """Smallest loop count in 1, 2, 5, 10, 20, ... whose loop takes >= min_time seconds."""
    number = 1
    while True:
        for k in (1, 2, 5):
            if loop_time(fn, number * k) >= min_time:
                return number * k
        number *= 10


def bench(fns, repeats, min_time, setup=None):
    """{name: fn or None} -> {name: best seconds per call}, competitors interleaved.
    ``setup``: {name: callable} run (untimed) before each of that competitor's loops,
    e.g. to set the thread count it runs on."""
    fns = {k: f for k, f in fns.items() if f is not None}
    setup = setup or {}
    nop = lambda: None  # noqa: E731
    numbers = {}
    for k, f in fns.items():
        setup.get(k, nop)()
        numbers[k] = autorange(f, min_time)
    best, names = dict.fromkeys(fns, float("inf")), list(fns)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for r in range(repeats):
            for k in names[r % len(names):] + names[:r % len(names)]:
                setup.get(k, nop)()
                best[k] = min(best[k], loop_time(fns[k], numbers[k]) / numbers[k])
    finally:
        if gc_was_enabled:
            gc.enable()
    return best
