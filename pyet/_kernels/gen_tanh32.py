"""Prints kernels.h's float32 tanh tables (pyet_tanhf_avx512: 31 intervals of |x|, a
polynomial on each) with each fit's maximum relative error.  A development tool, not built
or installed; needs mpmath:

    python pyet/_kernels/gen_tanh32.py [degree]

Interval 0 is [0, 2^-4): tanh t = t + t P(t).  Interval j >= 1 starts at the float with bits
0x3d800000 + (j - 1) << 21 (4 per octave, up to [10, 12), where tanh rounds to 1), t = |x| -
its start: tanh = c0 + (t P(t) + c0l), c0 + c0l its tanh in two floats.  P(t) = c1 + c2 t +
... + cd t^(d-1).  Rows of the table: c0, c1, ..., cd, c0l.  Each fit is a weighted
least-squares one on Chebyshev nodes (relative error), its coefficients rounded to float one
at a time, the later ones refitted after each rounding.
"""

import struct
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 40
DEG = int(sys.argv[1]) if len(sys.argv) > 1 else 5
NTAB = 32


def bits2f(b):
    return struct.unpack("<f", struct.pack("<I", b))[0]


def interval(j):
    if j == 0:
        return 0.0, 2.0 ** -4
    b = 0x3D800000 + ((j - 1) << 21)
    return bits2f(b), bits2f(b + (1 << 21))


def fit(j):
    lo, hi = interval(j)
    w = hi - lo
    if lo >= 10.0:  # only |x| = 10 (clamped) lands here: tanh 10 rounds to 1
        return [1.0] + [0.0] * (DEG + 1), 0.0
    m = 400
    s = (np.cos(np.pi * (np.arange(m) + 0.5) / m) + 1) / 2  # nodes in (0, 1)
    t = s * w
    ff = np.array([mp.tanh(mp.mpf(lo) + mp.mpf(float(v))) for v in t])
    coef = []
    if j == 0:
        c0 = 0.0
    else:
        c0 = float(np.float32(mp.tanh(mp.mpf(lo))))
    # residual to fit: P(t) = (tanh(lo + t) - tanh(lo))/t (tanh lo exact: c0's rounding is
    # a constant offset, no P could take it up)
    b0 = [mp.mpf(float(v)) for v in t] if j == 0 else [mp.tanh(mp.mpf(lo))] * m
    target = [(ff[i] - b0[i]) / mp.mpf(float(t[i])) for i in range(m)]
    wgt = np.array([float(mp.mpf(float(t[i])) / ff[i]) for i in range(m)])  # relative to tanh
    fixed = []
    for _ in range(DEG):
        # fit the remaining coefficients in s (scaled), given the fixed (rounded) ones
        rem = np.array([float(target[i] - sum(mp.mpf(c) * mp.mpf(float(t[i])) ** q
                                                for q, c in enumerate(fixed))) for i in range(m)])
        nfree = DEG - len(fixed)
        A = np.stack([s ** (len(fixed) + q) for q in range(nfree)], 1) * wgt[:, None]
        sol, *_ = np.linalg.lstsq(A, rem * wgt, rcond=None)
        c = sol[0] / w ** len(fixed)
        fixed.append(float(np.float32(c)))
    c0l = 0.0 if j == 0 else float(np.float32(mp.tanh(mp.mpf(lo)) - mp.mpf(c0)))
    coef = [c0] + fixed + [c0l]
    # the fit's error, relative to tanh, on a fine grid
    tt = np.linspace(0, w, 2001)[:-1] if j else np.linspace(w / 2000, w, 2000)[:-1]
    err = 0.0
    for v in tt:
        p = mp.mpf(0)
        for c in reversed(fixed):
            p = p * mp.mpf(float(v)) + mp.mpf(c)
        b = mp.mpf(float(v)) if j == 0 else mp.mpf(c0) + mp.mpf(c0l)
        exact = mp.tanh(mp.mpf(lo) + mp.mpf(float(v)))
        err = max(err, abs((b + mp.mpf(float(v)) * p) / exact - 1))
    return coef, float(err)


def main():
    coefs, errs = [], []
    for j in range(NTAB):
        if j == 31:
            coefs.append([0.0] * (DEG + 2))
            errs.append(0.0)
            continue
        c, e = fit(j)
        coefs.append(c)
        errs.append(e)
        lo, hi = interval(j)
        print(f"/* {j:2d} [{lo:.6g}, {hi:.6g}): 2^{np.log2(e + 1e-300):.1f} */", file=sys.stderr)
    print(f"max relative error 2^{np.log2(max(errs)):.2f}", file=sys.stderr)
    print(f"static const float pyet_tanhf_tab[{DEG + 2}][32] __attribute__((aligned(64))) = {{")
    for k in range(DEG + 2):
        vals = [float(np.float32(c[k])).hex() for c in coefs]
        vals = [("0.0f" if v in ("0x0.0p+0", "-0x0.0p+0") else v.replace("0000000p", "p") + "f")
                for v in vals]
        lines = ["    " + ", ".join(vals[i:i + 4]) for i in range(0, 32, 4)]
        print("   {" + ",\n".join(lines).lstrip() + "},")
    print("};")

if __name__ == "__main__":
    main()
