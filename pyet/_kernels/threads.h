/* Threads for pyet's passes, and the floating-point status flags they raise.
 *
 * OpenMP (for its thread count; every pass and NN kernel runs on the pool below)
 * when the compiler has it; one thread otherwise.
 *
 * pyet_run_chunks: a pass's chunks run on a small pool of worker threads and the
 * calling thread.  Each participant has a home range of the chunks (slot s the
 * s-th of nthreads equal parts, as OpenMP's static schedule), so on a quiet
 * machine a thread passes over the same memory each call and finds it in its
 * own core's cache; a participant whose range is done claims chunks left in
 * the others'.  Chunks are claimed one at a time from a range's atomic counter;
 * the caller claims whatever is left and then waits only for the chunks other
 * threads have already claimed -- never for a worker the OS has not scheduled
 * yet (on a busy machine an OpenMP region's closing barrier waited for exactly
 * that).  A worker waking late finds no chunk left and goes back to sleep.
 * One pass at a time uses the pool; a pass that finds it busy (another Python
 * thread's) runs on its caller alone.
 *
 * On a busy machine the workers get a CPU late or not at all: a pass they
 * barely helped (less than half their fair share of chunks) then costs the
 * caller a wake-up, a closing wait and a shared cache for nothing.  After such
 * a pass the next passes run on the caller alone for a while (1 ms, doubling
 * after each pass the workers again barely helped, up to 64 ms; a pass they
 * helped resets it), so a single call on a busy machine costs about what one
 * thread costs, and a quiet machine gets its threads back within 64 ms.
 * Before that, on Linux, a pass wakes only as many workers as there are CPUs
 * no other task is running on (the running tasks of /proc/loadavg, read at
 * most every 2 ms, less the caller and its own awake workers), as OpenMP's
 * dynamic thread count does from the load average; not when the process may
 * run on only some of the CPUs (its affinity), which that count does not see.
 *
 * Floating-point status: each thread reads and clears its flags (fenv.h) after
 * its chunks; the pass gets their union, which the caller turns into NumPy's
 * warnings or errors (np.errstate).
 */
#ifndef PYET_THREADS_H
#define PYET_THREADS_H
#include <fenv.h>
#include <stddef.h>
#ifdef _OPENMP
#include <omp.h>
static int pyet_omp_max_threads(void) { return omp_get_max_threads(); }
static int pyet_have_openmp(void) { return 1; }
#else
static int pyet_omp_max_threads(void) { return 1; }
static int pyet_have_openmp(void) { return 0; }
#endif

/* NumPy's order and names: divide, over, under, invalid */
enum { PYET_FP_DIVIDE = 1, PYET_FP_OVERFLOW = 2, PYET_FP_UNDERFLOW = 4, PYET_FP_INVALID = 8 };

/* This thread's floating-point flags as PYET_FP_* bits; they are cleared. */
static inline int pyet_fp_take(void) {
#ifdef PYET_NO_FP_FLAGS
    return 0;  /* a build that measures the flags' cost (fpstatus.h) */
#endif
    int f = fetestexcept(FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID), bits = 0;
    if (!f)
        return 0;
    feclearexcept(f);
    if (f & FE_DIVBYZERO) bits |= PYET_FP_DIVIDE;
    if (f & FE_OVERFLOW) bits |= PYET_FP_OVERFLOW;
    if (f & FE_UNDERFLOW) bits |= PYET_FP_UNDERFLOW;
    if (f & FE_INVALID) bits |= PYET_FP_INVALID;
    return bits;
}

/* 0: every pass uses the threads it is given (tests); 1: fewer on a busy machine */
static int pyet_dynamic_threads = 1;
/* the threads the last pass ran on (the caller included) */
static int pyet_last_nthreads = 1;

/* chunk c of a pass, run in participant slot (0: the caller; < nthreads) */
typedef int (*pyet_chunk_fn)(void *ctx, ptrdiff_t chunk, int slot);

#if defined(_OPENMP) && !defined(_WIN32)
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#ifdef __linux__
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PYET_PAUSE() _mm_pause()
#else
#define PYET_PAUSE() ((void)0)
#endif

#define PYET_POOL_MAX 256
#define PYET_CLOSED 0xFFFFFFFFu
#define PYET_SPIN 2000   /* polls before an idle worker sleeps (a few microseconds) */
#define PYET_ALONE_MIN_NS 1000000LL    /* the first caller-alone period after a pass */
#define PYET_ALONE_MAX_NS 64000000LL   /* the workers barely helped: 1 ms, doubling to 64 */
#define PYET_LOAD_EVERY_NS 2000000LL   /* how often the machine's running tasks are read */

static struct {
    pthread_mutex_t busy;            /* held by the pass using the pool */
    pthread_mutex_t sleep;
    pthread_cond_t wake;
    int nworkers;                    /* started (slots 1..nworkers) */
    unsigned posted;                 /* the last generation announced (under sleep) */
    /* generation << 32 | PYET_CLOSED while a pass is being set up, 0 once open */
    _Atomic unsigned long long ticket;
    /* the current generation's pass, written while its ticket is closed */
    _Atomic(pyet_chunk_fn) fn;
    _Atomic(void *) ctx;
    _Atomic ptrdiff_t nchunks;
    _Atomic int nslots;
    _Atomic ptrdiff_t done;          /* chunks finished */
    _Atomic int failed;
    _Atomic int fpflags;
    /* under busy: passes run on the caller alone until alone_until (CLOCK_MONOTONIC
       ns); alone_ns is the next such period (0: the workers helped last time) */
    long long alone_until, alone_ns;
    long long load_at;               /* when idle_cpus was read (under busy) */
    int idle_cpus;                   /* CPUs besides the caller's no other task ran on */
    _Atomic int awake;               /* workers spinning or working, not asleep */
} pyet_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

/* slot s's home range of the current pass: generation << 32 | chunks not yet
 * claimed (claimed from the front).  A claim is a compare-and-swap of the whole
 * word, so it succeeds only within the generation it read; every pass ends with
 * all its words at 0 left and the next writes its words after fn, ctx and
 * nchunks, so a claim that succeeds proves the pass it read was the word's. */
static struct {
    _Alignas(64) _Atomic unsigned long long left;
} pyet_ranges[PYET_POOL_MAX];

static long long pyet_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Claim and run chunks of generation gen in slot until none is left, its home
 * range first, then the others' in turn; returns how many it ran. */
static ptrdiff_t pyet_pool_work(unsigned gen, int slot) {
    ptrdiff_t ran = 0;
    unsigned long long t = atomic_load(&pyet_pool.ticket);
    if ((unsigned)(t >> 32) != gen || (unsigned)t == PYET_CLOSED)
        return 0;
    /* read the pass, then claim: see pyet_ranges */
    pyet_chunk_fn fn = atomic_load(&pyet_pool.fn);
    void *ctx = atomic_load(&pyet_pool.ctx);
    ptrdiff_t n = atomic_load(&pyet_pool.nchunks);
    int nslots = atomic_load(&pyet_pool.nslots);
    if (slot >= nslots)
        return 0;
    for (int k = 0; k < nslots; k++) {
        int r = (slot + k) % nslots;
        ptrdiff_t end = n * (r + 1) / nslots;
        unsigned long long w = atomic_load(&pyet_ranges[r].left);
        for (;;) {
            unsigned left = (unsigned)w;
            if ((unsigned)(w >> 32) != gen)
                return ran;  /* a later pass's: this one is over */
            if (left == 0)
                break;
            if (!atomic_compare_exchange_weak(&pyet_ranges[r].left, &w, w - 1))
                continue;
            if (fn(ctx, end - (ptrdiff_t)left, slot) < 0)
                atomic_store(&pyet_pool.failed, 1);
            int f = pyet_fp_take();
            if (f)
                atomic_fetch_or(&pyet_pool.fpflags, f);
            atomic_fetch_add(&pyet_pool.done, 1);
            ran++;
            w = atomic_load(&pyet_ranges[r].left);
        }
    }
    return ran;
}

static void *pyet_pool_worker(void *arg) {
    int slot = (int)(intptr_t)arg;
    unsigned seen = (unsigned)(atomic_load(&pyet_pool.ticket) >> 32);
    for (;;) {
        unsigned gen = seen;
        /* a new generation once its pass is open: one still being set up
           (ticket closed) would be taken as seen and its pass missed */
        for (int i = 0; i < PYET_SPIN; i++) {
            PYET_PAUSE();
            unsigned long long t = atomic_load(&pyet_pool.ticket);
            if ((unsigned)(t >> 32) != seen && (unsigned)t != PYET_CLOSED) {
                gen = (unsigned)(t >> 32);
                break;
            }
        }
        if (gen == seen) {
            atomic_fetch_sub(&pyet_pool.awake, 1);
            pthread_mutex_lock(&pyet_pool.sleep);
            while (pyet_pool.posted == seen)
                pthread_cond_wait(&pyet_pool.wake, &pyet_pool.sleep);
            gen = pyet_pool.posted;
            pthread_mutex_unlock(&pyet_pool.sleep);
            atomic_fetch_add(&pyet_pool.awake, 1);
        }
        seen = gen;
        pyet_pool_work(gen, slot);
    }
    return NULL;
}

/* in a forked child the workers are gone: start new ones when needed */
static void pyet_pool_after_fork(void) {
    pthread_mutex_init(&pyet_pool.busy, NULL);
    pthread_mutex_init(&pyet_pool.sleep, NULL);
    pthread_cond_init(&pyet_pool.wake, NULL);
    pyet_pool.nworkers = 0;
    pyet_pool.awake = 0;
}

/* CPUs besides the caller's that no other task is running on (Linux: the running
 * tasks in /proc/loadavg, "0.52 0.58 0.59 3/467 12345", less the caller and its
 * awake workers); a large number where unknown, or where the process may run on
 * only some of the machine's CPUs. */
static int pyet_idle_cpus(void) {
#ifdef __linux__
    char buf[128], *p = buf;
    int fd, running, others, ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    ssize_t len;
#ifdef CPU_COUNT
    /* the machine's count says nothing about a subset of its CPUs (a cpuset
       container on a busy host): then assume they are ours */
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) < ncpu)
        return PYET_POOL_MAX;
#endif
    fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return PYET_POOL_MAX;
    len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0)
        return PYET_POOL_MAX;
    buf[len] = 0;
    for (int field = 0; field < 3 && p; field++)
        if ((p = strchr(p, ' ')) != NULL)
            p++;
    if (!p)
        return PYET_POOL_MAX;
    running = atoi(p);
    others = running - 1 - atomic_load(&pyet_pool.awake);
    return ncpu - 1 - (others > 0 ? others : 0);
#else
    return PYET_POOL_MAX;
#endif
}

static void pyet_pool_grow(int nworkers) {
    static int atfork = 0;
    if (!atfork) {
        pthread_atfork(NULL, NULL, pyet_pool_after_fork);
        atfork = 1;
    }
    if (nworkers > PYET_POOL_MAX)
        nworkers = PYET_POOL_MAX;
    while (pyet_pool.nworkers < nworkers) {
        atomic_fetch_add(&pyet_pool.awake, 1);  /* a new worker starts awake */
        pthread_t th;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int err = pthread_create(&th, &attr, pyet_pool_worker,
                                 (void *)(intptr_t)(pyet_pool.nworkers + 1));
        pthread_attr_destroy(&attr);
        if (err) {
            atomic_fetch_sub(&pyet_pool.awake, 1);
            break;  /* fewer workers: the caller does their share */
        }
        pyet_pool.nworkers++;
    }
}

/* Run chunks 0..n-1 of fn on up to nthreads threads (the caller included).
 * Returns -1 if a chunk failed; *fpflags gets the union of the flags raised. */
static int pyet_run_chunks(pyet_chunk_fn fn, void *ctx, ptrdiff_t n, int nthreads,
                           int *fpflags) {
    int failed = 0, f;
    ptrdiff_t c, mine;
    long long now = 0;
    pyet_fp_take();  /* flags raised before the pass are not its own (NumPy clears too) */
    if (nthreads > PYET_POOL_MAX)
        nthreads = PYET_POOL_MAX;
    if (nthreads > 1 && n > 1 && pthread_mutex_trylock(&pyet_pool.busy) == 0) {
        now = pyet_now_ns();
        if (!pyet_dynamic_threads) {
            /* every thread it was given */
        } else if (now >= pyet_pool.load_at + PYET_LOAD_EVERY_NS) {
            pyet_pool.idle_cpus = pyet_idle_cpus();
            pyet_pool.load_at = now;
        }
        if (pyet_dynamic_threads && nthreads > pyet_pool.idle_cpus + 1)  /* no CPU for more */
            nthreads = pyet_pool.idle_cpus > 0 ? pyet_pool.idle_cpus + 1 : 1;
        if (pyet_dynamic_threads && now < pyet_pool.alone_until)  /* workers barely helped */
            nthreads = 1;
        if (nthreads == 1)
            pthread_mutex_unlock(&pyet_pool.busy);
    } else {
        nthreads = 1;
    }
    pyet_last_nthreads = nthreads;
    if (nthreads == 1) {
        for (c = 0; c < n; c++)
            failed |= fn(ctx, c, 0) < 0;
        *fpflags = pyet_fp_take();
        return failed ? -1 : 0;
    }
    pyet_pool_grow(nthreads - 1);
    unsigned gen = (unsigned)(atomic_load(&pyet_pool.ticket) >> 32) + 1;
    atomic_store(&pyet_pool.ticket, ((unsigned long long)gen << 32) | PYET_CLOSED);
    atomic_store(&pyet_pool.fn, fn);
    atomic_store(&pyet_pool.ctx, ctx);
    atomic_store(&pyet_pool.nchunks, n);
    atomic_store(&pyet_pool.nslots, nthreads);
    atomic_store(&pyet_pool.done, 0);
    atomic_store(&pyet_pool.failed, 0);
    atomic_store(&pyet_pool.fpflags, 0);
    for (int r = 0; r < nthreads; r++)
        atomic_store(&pyet_ranges[r].left, ((unsigned long long)gen << 32) |
                     (unsigned long long)(n * (r + 1) / nthreads - n * r / nthreads));
    atomic_store(&pyet_pool.ticket, (unsigned long long)gen << 32);
    pthread_mutex_lock(&pyet_pool.sleep);
    pyet_pool.posted = gen;
    pthread_cond_broadcast(&pyet_pool.wake);
    pthread_mutex_unlock(&pyet_pool.sleep);
    mine = pyet_pool_work(gen, 0);  /* the caller claims whatever is left */
    /* only chunks already claimed remain, each on a thread that was running */
    for (long spins = 0; atomic_load(&pyet_pool.done) < n; spins++) {
        if (spins < 4000)
            PYET_PAUSE();
        else
            sched_yield();
    }
    failed = atomic_load(&pyet_pool.failed);
    f = atomic_load(&pyet_pool.fpflags);
    /* the workers' fair share is n (nthreads - 1) / nthreads chunks: under half of
       it, the next passes run alone for a while (longer each time it recurs) */
    if (2 * (n - mine) * nthreads < n * (nthreads - 1)) {
        if (pyet_pool.alone_ns < PYET_ALONE_MIN_NS)
            pyet_pool.alone_ns = PYET_ALONE_MIN_NS;
        else if (pyet_pool.alone_ns < PYET_ALONE_MAX_NS)
            pyet_pool.alone_ns *= 2;
        pyet_pool.alone_until = now + pyet_pool.alone_ns;
    } else {
        pyet_pool.alone_ns = 0;
    }
    pthread_mutex_unlock(&pyet_pool.busy);
    *fpflags = f;
    return failed ? -1 : 0;
}

/* The threads a pass asking for nthreads would get now (pyet_run_chunks' checks:
 * the pool free, idle CPUs, not running alone), without running one: a caller whose
 * set-up grows with the count (a reduction's accumulators per thread, their
 * combining) sets up for the threads it will get.  A hint: the pass checks again. */
static int pyet_pool_threads(int nthreads) {
    long long now;
    if (nthreads > PYET_POOL_MAX)
        nthreads = PYET_POOL_MAX;
    if (nthreads <= 1 || !pyet_dynamic_threads)
        return nthreads < 1 ? 1 : nthreads;
    if (pthread_mutex_trylock(&pyet_pool.busy) != 0)
        return 1;  /* another pass has the pool: this one would run alone */
    now = pyet_now_ns();
    if (now >= pyet_pool.load_at + PYET_LOAD_EVERY_NS) {
        pyet_pool.idle_cpus = pyet_idle_cpus();
        pyet_pool.load_at = now;
    }
    if (nthreads > pyet_pool.idle_cpus + 1)
        nthreads = pyet_pool.idle_cpus > 0 ? pyet_pool.idle_cpus + 1 : 1;
    if (now < pyet_pool.alone_until)
        nthreads = 1;
    pthread_mutex_unlock(&pyet_pool.busy);
    return nthreads;
}

#else  /* Windows (OpenMP, no pthreads) or no OpenMP: an OpenMP loop, or one thread */

static int pyet_run_chunks(pyet_chunk_fn fn, void *ctx, ptrdiff_t n, int nthreads,
                           int *fpflags) {
    int failed = 0, flags;
    ptrdiff_t c;
    pyet_fp_take();
    flags = 0;
    pyet_last_nthreads = nthreads > 1 && n > 1 ? nthreads : 1;
#ifdef _OPENMP
    if (nthreads > 1 && n > 1) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads) reduction(|: failed, flags)
        for (c = 0; c < n; c++) {
            failed |= fn(ctx, c, omp_get_thread_num()) < 0;
            flags |= pyet_fp_take();
        }
        *fpflags = flags;
        return failed ? -1 : 0;
    }
#endif
    for (c = 0; c < n; c++)
        failed |= fn(ctx, c, 0) < 0;
    *fpflags = pyet_fp_take();
    return failed ? -1 : 0;
}

static int pyet_pool_threads(int nthreads) { return nthreads < 1 ? 1 : nthreads; }
#endif
#endif
