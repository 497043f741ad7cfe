"""Threads: OpenMP inside one evaluation, and many Python threads at once."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import pyet


def test_set_and_get_num_threads():
    before = pyet.get_num_threads()
    try:
        pyet.set_num_threads(1)
        assert pyet.get_num_threads() == 1
        pyet.set_num_threads(2)
        assert pyet.get_num_threads() in (1, 2)  # 1 when built without OpenMP
    finally:
        pyet.set_num_threads(before)


def test_set_num_threads_refuses_zero():
    with pytest.raises(ValueError, match="at least 1, got 0"):
        pyet.set_num_threads(0)


@pytest.mark.parametrize("var", ["PYET_NUM_THREADS", "OMP_NUM_THREADS"])
def test_thread_count_from_environment(var):
    env = {k: v for k, v in os.environ.items() if k not in ("PYET_NUM_THREADS", "OMP_NUM_THREADS")}
    env[var] = "1"
    out = subprocess.run(
        [sys.executable, "-P", "-c", "import pyet; print(pyet.get_num_threads())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    )
    assert out.stdout.strip() == "1"


def test_pyet_num_threads_wins_over_omp():
    env = dict(os.environ, PYET_NUM_THREADS="1", OMP_NUM_THREADS="2")
    out = subprocess.run(
        [sys.executable, "-P", "-c", "import pyet; print(pyet.get_num_threads())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    )
    assert out.stdout.strip() == "1"


def test_threadpoolctl_limits_pyet():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = pyet.get_num_threads()
    try:
        pyet.set_num_threads(2)
        with threadpoolctl.threadpool_limits(limits=1, user_api="openmp"):
            assert pyet.get_num_threads() == 1
    finally:
        pyet.set_num_threads(before)


LAYOUTS = {
    "contiguous": lambda a: a,
    "strided": lambda a: a[::2, ::3],
    "reversed": lambda a: a[::-1, ::-1],
    "transposed": lambda a: a.T,
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_threaded_evaluation_equals_numpy(threaded, layout):
    rng = np.random.default_rng(1)
    base_x, base_y = rng.random((300, 301)), rng.random((300, 301))
    x, y = LAYOUTS[layout](base_x), LAYOUTS[layout](base_y)
    col = rng.random((x.shape[0], 1))
    out = pyet.empty(x.shape)
    out[...] = pyet.tanh(pyet.asarray(x)) * y + pyet.sqrt(col) - 2 * x
    np.testing.assert_allclose(
        out.numpy(), np.tanh(x) * y + np.sqrt(col) - 2 * x, atol=1e-14, rtol=1e-14
    )


def test_threaded_fixture_runs_passes_on_two_threads_on_a_busy_machine_too(threaded):
    # set_dynamic(False) (the fixture): no pass drops to one thread because the
    # machine is busy, so the threaded tests below exercise the pool
    from pyet._kernels import parallel

    if pyet.get_num_threads() < 2:
        pytest.skip("pyet runs on one thread here (no OpenMP)")
    out = pyet.empty(100_000)
    for _ in range(20):  # (a fused tree: a one-op pass this small takes NumPy's loop, one thread)
        out[...] = pyet.asarray(np.arange(100_000.0)) * 2 + 1
        assert parallel.last_pass_threads() == 2
    np.testing.assert_array_equal(out.numpy(), np.arange(100_000.0) * 2 + 1)


def test_last_pass_threads_reports_a_one_thread_pass():
    from pyet._kernels import parallel

    before = pyet.get_num_threads()
    pyet.set_num_threads(1)
    try:
        out = pyet.empty(200_000)
        out[...] = pyet.asarray(np.ones(200_000)) + 1
        assert parallel.last_pass_threads() == 1
    finally:
        pyet.set_num_threads(before)


def test_threaded_in_place_update_equals_numpy(threaded):
    rng = np.random.default_rng(2)
    w, g = rng.random(100_003).astype(np.float32), rng.random(100_003).astype(np.float32)
    expected = -0.1 * (g + 0.01 * w)
    W = pyet.asarray(w)
    W[...] = -0.1 * (pyet.asarray(g) + 0.01 * W)
    np.testing.assert_array_equal(w, expected)


def test_threaded_aliasing_equals_numpy(threaded):
    a = np.arange(40_000, dtype=np.float64).reshape(200, 200)
    expected = a.T + 1
    A = pyet.asarray(a)
    A[...] = A.numpy().T + 1
    np.testing.assert_array_equal(a, expected)


def test_many_python_threads_evaluate_different_trees_at_once(threaded):
    rng = np.random.default_rng(3)
    trees = [
        (lambda x, y: 2 * x + 3 * y, lambda x, y: 2 * x + 3 * y),
        (lambda x, y: x * y + y * x - x, lambda x, y: x * y + y * x - x),
        (lambda x, y: pyet.exp(-x) * y, lambda x, y: np.exp(-x) * y),
        (lambda x, y: pyet.where(x > 0.5, x, y), lambda x, y: np.where(x > 0.5, x, y)),
        (
            lambda x, y: pyet.maximum(x, y) - pyet.minimum(x, y),
            lambda x, y: np.maximum(x, y) - np.minimum(x, y),
        ),
        (lambda x, y: x / (1 + y), lambda x, y: x / (1 + y)),
        (lambda x, y: pyet.sqrt(x) + pyet.square(y), lambda x, y: np.sqrt(x) + np.square(y)),
        (lambda x, y: (x > y) & (y > 0.25), lambda x, y: (x > y) & (y > 0.25)),
    ]
    errors = []
    barrier = threading.Barrier(len(trees))

    def work(i):
        build, ref = trees[i]
        x, y = rng.random(20_000 + i), rng.random(20_000 + i)
        expected = ref(x, y)
        out = np.empty_like(expected)
        barrier.wait()
        for _ in range(30):
            pyet.evaluate(build(pyet.asarray(x), pyet.asarray(y)), out=out)
            # exact for arithmetic; transcendental functions within a few ulp
            if not np.allclose(out, expected, rtol=1e-15, atol=0):
                errors.append(i)
                return

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(trees))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_many_python_threads_share_the_pool_on_large_passes(threaded):
    """Passes big enough for several threads, from several Python threads at
    once: one uses the pool, the others run on their own thread; all correct."""
    n = 400_000
    rng = np.random.default_rng(5)
    errors = []
    barrier = threading.Barrier(4)

    def work(i):
        x, y = rng.random(n), rng.random(n)
        out = np.empty(n)
        barrier.wait()
        for _ in range(10):
            pyet.evaluate(pyet.tanh(pyet.asarray(x)) * y + i, out=out)
            s = float(pyet.sum(pyet.asarray(x) * y))
            if not (np.allclose(out, np.tanh(x) * y + i, rtol=1e-15, atol=0)
                    and np.isclose(s, np.sum(x * y), rtol=1e-12)):
                errors.append(i)
                return

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_threaded_reductions_give_the_same_bits_every_run(threaded):
    x = np.random.default_rng(6).random(1_000_000)
    sums = {float(pyet.sum(pyet.asarray(x) * 1.5)) for _ in range(20)}
    assert len(sums) == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_pool_works_in_a_forked_child():
    """A child forked after threaded passes (its worker threads are gone)
    evaluates on threads again, without waiting for the parent's workers."""
    code = (
        "import os, numpy as np, pyet\n"
        "pyet.set_num_threads(2)\n"
        "x = np.random.default_rng(0).random(1_000_000)\n"
        "pyet.evaluate(pyet.sqrt(pyet.asarray(x)))\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    ok = np.array_equal(np.asarray(pyet.sqrt(pyet.asarray(x)) + 1), np.sqrt(x) + 1)\n"
        "    os._exit(0 if ok else 3)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "raise SystemExit(os.waitstatus_to_exitcode(status))\n"
    )
    run = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
