"""A pass's scratch beyond the stack's (gathered strided rows, block registers)
is kept from one pass to the next (passes.pxi take_scratch): malloc'd and freed
each pass, glibc gave it back to the system whenever its heap was trimmed or it
was mapped alone, and every pass faulted its pages in again (float32 exp2 of
a[::3] at 2^18: 65 page faults a pass, 0.58 -> 1.08x NumPy's time).  One buffer:
a pass that starts while another holds it (another thread, a pyet.F function
evaluating pyet inside a pass) takes its own.  The two-thread test fails where
the buffer is shared; a pass inside an F function did not show sharing (the
inner pass's scratch fell on the outer one's registers, dead by then)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import in_threads

import pyet

FAULTS = textwrap.dedent("""
    import resource
    import numpy as np
    import pyet
    pyet.set_num_threads(1)
    n = 1 << 18
    a = np.linspace(-3, 3, 3 * n).astype(np.float32)[::3]      # gathered: a scratch block
    b = np.linspace(0, 5, 3 * n)[::3]
    d32, d64 = np.empty(n, np.float32), np.empty(n)
    A, B, D32, D64 = map(pyet.asarray, (a, b, d32, d64))
    e32, e64 = pyet.exp2(A), pyet.sqrt(B) * B + pyet.exp(B)
    for _ in range(3):
        D32[...] = e32
        D64[...] = e64
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(40):
        D32[...] = e32
        D64[...] = e64
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    assert np.array_equal(d32, np.exp2(a)), "values"
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc settings")
def test_passes_do_not_fault_their_scratch_in_again():
    # glibc told to map every block of 64 KiB or more alone (as a long process's
    # trimmed heap does): a scratch malloc'd per pass faulted ~65 pages a pass here
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-P", "-c", FAULTS], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[-1]) < 40, out.stdout  # 80 passes: under one fault in two


def test_passes_in_two_threads_each_get_scratch():
    n = 1 << 17
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(3 * n).astype(np.float32)[::3] for _ in range(2)]
    wants = [np.exp2(x) for x in xs]

    def work(k):
        out = np.empty(n, np.float32)
        for _ in range(30):
            pyet.asarray(out)[...] = pyet.exp2(pyet.asarray(xs[k]))
            np.testing.assert_array_equal(out, wants[k])

    errors = in_threads(work, 2)
    assert not errors, errors

