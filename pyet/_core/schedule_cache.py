"""Recorded evaluations by structure: one cache type for value_and_grad's and
EvalPlan's (core.structure_key names what an evaluation's planning depends
on besides the arrays' memory; core.KeptSchedule replays it over new arrays).

A training loop builds the same trees every step over new arrays and
evaluates them again: a cache keeps, per structure, up to ``pool`` recorded
schedules, least recently used structures dropped beyond ``size``.  Several
schedules per structure let a loop that holds the last step's results
alternate between them (each writes its own results) instead of allocating
new ones every call.
"""

import threading
from collections import OrderedDict

from pyet._core import core
from pyet._kernels.parallel import get_num_threads

SEEN = object()  # met once, recorded when met again (caches recording on second sight)
_MISSING = object()


class ScheduleCache:
    """KeptSchedules by structure key.

    ``entries`` maps a key to a list of KeptSchedules, to None (an evaluation
    that cannot be replayed) or to SEEN.  With ``record_first`` a structure is
    recorded the first time it is met (value_and_grad: a tree it
    differentiates is a training step); otherwise the second time (a plan
    run once costs no recording).
    """

    def __init__(self, size=8, pool=2, record_first=True):
        self.size, self.pool, self.record_first = size, pool, record_first
        self.entries = OrderedDict()
        self._lock = threading.Lock()

    def key(self, roots, wrt, extra):
        """(key, slots) of the trees ``roots`` (``wrt``: the leaves
        differentiated), or (None, None) when they cannot be keyed (an
        unhashable kernel parameter)."""
        try:
            # the thread count and block size decide passes' splits and blocks
            key, slots = core.structure_key(roots, wrt, (extra, get_num_threads(),
                                                         core.get_block_size()))
            hash(key)
        except TypeError:
            return None, None
        return key, slots

    def replay(self, key, slots):
        """(arrays, record): the arrays a kept schedule of ``key`` wrote,
        replayed over ``slots``, or None; ``record``: whether the caller's
        ordinary evaluation should be recorded for ``keep``.  None, False
        while another thread uses the cache."""
        if key is None or not self._lock.acquire(blocking=False):
            return None, False
        try:  # (a replay runs under the lock: one schedule, one user at a time)
            entry = self.entries.get(key, _MISSING)
            if entry is _MISSING:
                if self.record_first:
                    return None, True
                self.entries[key] = SEEN
                self._trim()
                return None, False
            if entry is None:
                return None, False
            self.entries.move_to_end(key)
            if entry is SEEN:
                return None, True
            for kept in entry:
                if kept.free():
                    return kept.run(slots), False
            if len(entry) >= self.pool:  # every one's results held: the oldest's memory
                entry.append(entry.pop(0))
                return entry[-1].run(slots), False
            return None, True  # a schedule of its own (its own scratch and results)
        finally:
            self._lock.release()

    def keep(self, key, actions, arrays, nslots):
        """Keep the evaluation ``actions`` recorded (core.run_statements) over
        ``arrays`` (the ``nslots`` slot arrays, then its results) for ``key``."""
        kept = None
        if actions is not None:
            try:
                kept = core.KeptSchedule(actions, arrays, nslots)
            except ValueError:  # not replayable over other memory
                kept = None
        with self._lock:
            entry = self.entries.get(key)
            if kept is None:
                self.entries[key] = None
            elif isinstance(entry, list):
                if len(entry) < self.pool:
                    entry.append(kept)
            else:
                self.entries[key] = [kept]
            self._trim()

    def clear(self):
        """Forget every recorded evaluation (and the arrays it holds)."""
        with self._lock:
            self.entries.clear()

    def _trim(self):
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)
