"""asv benchmarks for pyet (see bench/asv.conf.json).

Every class times pyet (``time_pyet_*``) beside its NumPy twin (``time_numpy_*``) on the
same data, so ``asv run`` / ``asv compare`` show both; ``setup`` runs both once and fails the
benchmark unless they agree.  Benchmarks for features that are not in the pyet being measured
(``pyet.dot``, ``pyet.sum``, ``pyet.softmax`` in older commits) raise NotImplementedError in
``setup``, which asv reports as skipped.
"""
