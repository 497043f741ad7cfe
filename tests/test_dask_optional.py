"""Dask stays optional: importing and using pyet never imports it."""

import subprocess
import sys


def test_import_pyet_never_imports_dask():
    code = (
        "import sys, numpy as np, pyet\n"
        "x = pyet.asarray(np.arange(6.0).reshape(2, 3))\n"
        "y = pyet.evaluate(pyet.sum(pyet.tanh(x) * 2 + 1, axis=0))\n"
        "np.asarray(x + 1); pyet.asarray([1, 2, 3])\n"
        "bad = sorted(m for m in sys.modules if m == 'dask' or m.startswith('dask.'))\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
