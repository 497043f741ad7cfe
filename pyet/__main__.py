"""``python -P -m pyet``: evaluate the seed's weight update and a few trees,
check each against NumPy and print pyet's time beside NumPy's, in seconds."""

import timeit

import numpy as np

import pyet


def _best(fn, number):
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def main():
    rng = np.random.default_rng(0)
    n = 1_000_000
    eta, lam = 0.1, 0.01
    x, y, z = (rng.random(n) for _ in range(3))
    X, Y, Z = (pyet.asarray(a) for a in (x, y, z))
    out = pyet.empty(n)
    trees = [
        ("2*x + 3*y", lambda: 2 * X + 3 * Y, lambda: 2 * x + 3 * y),
        ("x*y + y*z - z", lambda: X * Y + Y * Z - Z, lambda: x * y + y * z - z),
        ("1/(1+exp(-x))", lambda: 1 / (1 + pyet.exp(-X)), lambda: 1 / (1 + np.exp(-x))),
        ("tanh(x)*y + sqrt(z)", lambda: pyet.tanh(X) * Y + pyet.sqrt(Z),
         lambda: np.tanh(x) * y + np.sqrt(z)),
        ("where(x > 0.5, x, y)", lambda: pyet.where(X > 0.5, X, Y),
         lambda: np.where(x > 0.5, x, y)),
    ]
    print(f"pyet {pyet.__version__}, numpy {np.__version__}; n = {n:,} float64, seconds")
    print(f"{'expression':<36}{'pyet':>11}{'numpy':>11}{'ratio':>8}  check")
    for dtype in (np.float32, np.float64):
        w, g = rng.random(n).astype(dtype), rng.random(n).astype(dtype)
        W, G = pyet.asarray(w.copy()), pyet.asarray(g)
        W[...] = -eta * (G + lam * W)
        ok = np.array_equal(W.numpy(), -eta * (g + lam * w))

        def run_pyet(W=W, G=G):
            W[...] = -eta * (G + lam * W)

        def run_numpy(w=w, g=g):
            w[...] = -eta * (g + lam * w)

        tp, tn = _best(run_pyet, 20), _best(run_numpy, 20)
        name = f"w = -eta*(g + lam*w) [{np.dtype(dtype).name}]"
        print(f"{name:<36}{tp:>11.2e}{tn:>11.2e}{tp / tn:>8.2f}  {'ok' if ok else 'MISMATCH'}")
    for name, build, ref in trees:
        out[...] = build()
        expected = ref()
        ok = np.allclose(out.numpy(), expected, rtol=1e-14, atol=0)

        def run_pyet(build=build):
            out[...] = build()

        tp, tn = _best(run_pyet, 10), _best(ref, 10)
        print(f"{name:<36}{tp:>11.2e}{tn:>11.2e}{tp / tn:>8.2f}  {'ok' if ok else 'MISMATCH'}")


if __name__ == "__main__":
    main()
