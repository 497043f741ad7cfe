"""Prints kernels.h's float64 log tables (pyet_log16_invc, _logc, _tail) and the coefficients
of its two polynomials (pyet_log8_avx512's P, degree 8; pyet_log8_dd's, degree 8), with each
fit's maximum error.  A development tool, not built or installed; needs mpmath:

    python pyet/_kernels/gen_log16.py
"""

import struct

import mpmath as mp

mp.mp.dps = 80
OFF = 0x3FE6555555555555  # z in [OFF, OFF + 2^52) as bits: 1.0 in the middle of interval 9


def bits2d(b):
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def near_centre(centre):
    """1/c near 1/centre, with log c within 2^-66 of a multiple of 2^-43 (logc: then k ln2hi +
    logc is exact, and log alone needs no tail): tried for logc = m 2^-43 outwards from the
    centre's, 1/c = exp(-logc) rounded to double."""
    m0 = int(mp.nint(mp.log(centre) * 2**43))
    for d in range(100_000):
        for m in (m0 + d, m0 - d):
            ic = float(mp.exp(-mp.mpf(m) / 2**43))
            tail = -mp.log(mp.mpf(ic)) - mp.mpf(m) / 2**43
            if abs(tail) < mp.mpf(2) ** -66:
                return ic, float(mp.mpf(m) / 2**43), float(tail)
    raise RuntimeError("no candidate")


def tables():
    invc, logc, tail, rmax = [], [], [], mp.mpf(0)
    for j in range(16):
        lo, hi = bits2d(OFF + (j << 48)), bits2d(OFF + ((j + 1) << 48) - 1)
        ic, lc, tl = (1.0, 0.0, 0.0) if lo < 1 < hi else near_centre((mp.mpf(lo) + mp.mpf(hi)) / 2)
        invc.append(ic)
        logc.append(lc)
        tail.append(tl)
        rmax = max(rmax, abs(mp.mpf(lo) * ic - 1), abs(mp.mpf(hi) * ic - 1))
    return invc, logc, tail, rmax


def fit(g, deg, a):
    """g's interpolant at deg + 1 Chebyshev nodes on [-a, a], coefficients rounded to double."""
    nodes = [a * mp.cos(mp.pi * (k + mp.mpf(0.5)) / (deg + 1)) for k in range(deg + 1)]
    c = mp.lu_solve(mp.matrix([[x**j for j in range(deg + 1)] for x in nodes]),
                    mp.matrix([g(x) for x in nodes]))
    cd = [float(v) for v in c]
    err = max(abs(sum(mp.mpf(cd[j]) * x**j for j in range(deg + 1)) - g(x))
              for x in (a * (2 * mp.mpf(k) / 2000 - 1) for k in range(2001)))
    return cd, err


def main():
    invc, logc, tail, rmax = tables()
    print(f"|r| < {float(rmax):.6f}")
    for name, vals in (("invc", invc), ("logc", logc), ("tail", tail)):
        print(f"static const double pyet_log16_{name}[16] __attribute__((aligned(64))) = {{")
        for i in range(0, 16, 4):
            row = ", ".join(float.hex(v) if v else "0.0" for v in vals[i:i + 4])
            print(f"    {row}" + ("," if i < 12 else "};"))
    a = rmax * mp.mpf("1.001")
    # log1p(r) - r = r^2 P2(r); log1p(r) - r + r^2/2 = r^3 P3(r) (series: no cancellation)
    p2 = lambda r: mp.fsum((-1) ** (k + 1) * r**k / (k + 2) for k in range(80))  # noqa: E731
    p3 = lambda r: mp.fsum((-1) ** k * r**k / (k + 3) for k in range(80))  # noqa: E731
    for label, g, deg in (("P2 (log)", p2, 8), ("P3 (pow)", p3, 8)):
        cd, err = fit(g, deg, a)
        print(f"{label}, max error 2^{float(mp.log(err, 2)):.2f}:")
        print("    " + ", ".join(float.hex(v) for v in cd))


if __name__ == "__main__":
    main()
