"""``python -P -m pyet``: evaluate the seed's weight update and a few trees,
check each against NumPy and print pyet's time beside NumPy's."""

import timeit

import numpy as np

import pyet


def _best(fn, number):
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def _row(name, dtype, tp, tn, ok, what):
    print(f"{name:<24}{np.dtype(dtype).name:<9}{tp:>11.2e}{tn:>11.2e}{tp / tn:>7.2f}  "
          f"{'ok' if ok else 'MISMATCH'}")
    print(f"    {what}")


def main():
    rng = np.random.default_rng(0)
    n = 1_000_000
    eta, lam = 0.1, 0.01
    x, y, z = (rng.random(n) for _ in range(3))
    X, Y, Z = (pyet.asarray(a) for a in (x, y, z))
    out = pyet.empty(n)
    trees = [
        ("2*x + 3*y", lambda: 2 * X + 3 * Y, lambda: 2 * x + 3 * y,
         "a linear combination of two arrays"),
        ("x*y + y*z - z", lambda: X * Y + Y * Z - Z, lambda: x * y + y * z - z,
         "products and sums of three arrays, read once each"),
        ("1/(1+exp(-x))", lambda: 1 / (1 + pyet.exp(-X)), lambda: 1 / (1 + np.exp(-x)),
         "the logistic sigmoid, written out"),
        ("tanh(x)*y + sqrt(z)", lambda: pyet.tanh(X) * Y + pyet.sqrt(Z),
         lambda: np.tanh(x) * y + np.sqrt(z), "two transcendental functions in one tree"),
        ("where(x > 0.5, x, y)", lambda: pyet.where(X > 0.5, X, Y),
         lambda: np.where(x > 0.5, x, y), "x where it exceeds 0.5, else y (a select)"),
    ]
    nthreads = pyet.get_num_threads()
    print(f"pyet {pyet.__version__} on {nthreads} thread{'s' if nthreads > 1 else ''} "
          f"(pyet.set_num_threads to change), numpy {np.__version__} (its ufuncs: one thread)")
    print("each row: one expression computed by pyet (one fused pass) and by NumPy, "
          "checked against NumPy")
    print(f"n = {n:,} elements per array; seconds per call (best of 5); "
          "ratio = pyet / NumPy (lower is better; below 1, pyet is faster)")
    print()
    print(f"{'expression':<24}{'dtype':<9}{'pyet':>11}{'numpy':>11}{'ratio':>7}  check")
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
        _row("w = -eta*(g + lam*w)", dtype, tp, tn, ok,
             "an SGD step with weight decay (eta = 0.1, lam = 0.01), written in place into w")
    for name, build, ref, what in trees:
        out[...] = build()
        expected = ref()
        ok = np.allclose(out.numpy(), expected, rtol=1e-14, atol=0)

        def run_pyet(build=build):
            out[...] = build()

        tp, tn = _best(run_pyet, 10), _best(ref, 10)
        _row(name, np.float64, tp, tn, ok, what + " (pyet writes into an existing array)")


if __name__ == "__main__":
    main()
