/* hmallocbench — cost of allocate+free pairs per thread, for bench_interpose.py:
 *
 *   hmallocbench MODE THREADS PAIRS SIZE [DEPTH]
 *
 * MODE malloc: malloc(SIZE) + free, from one call site (loop_malloc), DEPTH frames of
 *   our own deep (default 8): the site libhmalloc.so matches when it is preloaded
 *   with a placement made from a trace of this program. Only argv differs between the
 *   traced run and the measured ones, so the chain is the same.
 * MODE untouched: as malloc, from a call site of its own (loop_untouched), without
 *   writing to the block: what allocating and freeing cost (the mapping calls), no
 *   page fault (bench_split.py).
 * MODE memkind[:KIND]: memkind_malloc(KIND, SIZE) + memkind_free(KIND, p) called
 *   directly (libmemkind.so.0 dlopen'ed here; KIND default MEMKIND_HBW, which needs
 *   MEMKIND_HBW_NODES on a machine without HBM): the backend's own cost.
 * MODE locks:K: no allocation; K lock/unlock pairs of a mutex of the thread's own, as
 *   libhmalloc's small-object arena takes its stripe's shard lock once to hand out a
 *   block and once to take it back (K = 2 per placed pair).
 * MODE unwind:N: no allocation; unw_backtrace(buf, N) four frames below the loop, as
 *   libhmalloc's slow path calls it on a stack-fingerprint miss (below its entry
 *   point, slow path and hmi_match_fp_decide; it asks for the placement's depth + 3
 *   frames), with the same per-thread cache policy: what a miss costs.
 * MODE atomics:K: no allocation; K relaxed fetch-adds on one cache line shared by all
 *   threads (libhmalloc's site and tier counters are such lines).
 *
 * The threads start together (a barrier) after a warm-up pass of their own. Prints
 * ns_per_pair=<mean of the threads' wall ns per pair> cpu_ns_per_pair=<mean of their
 * thread-CPU ns per pair> max_cpu_ns_per_pair=<the largest> min_cpu_share=<the smallest
 * of the threads' CPU / wall time> overlap=<the part of the measured span during which
 * every thread was in its timed loop>: with both near 1 the threads ran at once. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void *mk_kind_t;

static long g_pairs;
static size_t g_size;
static int g_depth;
static long (*g_loop)(long pairs);
static pthread_barrier_t g_start;
static int g_arg;                               /* unwind:N, atomics:K, locks:K */
static _Atomic unsigned long g_shared[8] __attribute__((aligned(64)));

static struct {
    mk_kind_t kind;
    void *(*malloc)(mk_kind_t, size_t);
    void (*free)(mk_kind_t, void *);
} mk;

static double clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The measured call site: keep it the only malloc call of this function. */
__attribute__((noinline)) static long loop_malloc(long pairs)
{
    long sum = 0;
    for (long i = 0; i < pairs; i++) {
        volatile char *p = malloc(g_size);
        p[0] = (char)i;
        sum += p[0];
        free((void *)p);
    }
    return sum;
}

static void *volatile g_sink;                   /* keeps the untouched blocks alive */

__attribute__((noinline)) static long loop_untouched(long pairs)
{
    for (long i = 0; i < pairs; i++) {
        void *p = malloc(g_size);
        g_sink = p;
        free(p);
    }
    return pairs;
}

__attribute__((noinline)) static long loop_memkind(long pairs)
{
    long sum = 0;
    for (long i = 0; i < pairs; i++) {
        volatile char *p = mk.malloc(mk.kind, g_size);
        p[0] = (char)i;
        sum += p[0];
        mk.free(mk.kind, (void *)p);
    }
    return sum;
}

__attribute__((noinline)) static long loop_locks(long pairs)
{
    static __thread pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static __thread volatile long held;
    for (long i = 0; i < pairs; i++)
        for (int k = 0; k < g_arg; k++) {
            pthread_mutex_lock(&lock);
            held++;
            pthread_mutex_unlock(&lock);
        }
    return held;
}

/* libhmalloc's frames above unw_backtrace: entry point, slow path, site_here,
 * hm_backtrace */
__attribute__((noinline)) static int unwind_below(int d)
{
    void *buf[64];
    int r = d > 1 ? unwind_below(d - 1) : unw_backtrace(buf, g_arg);
    __asm__ volatile("" ::: "memory");
    return r;
}

__attribute__((noinline)) static long loop_unwind(long pairs)
{
    long sum = 0;
    for (long i = 0; i < pairs; i++)
        sum += unwind_below(4);
    return sum;
}

__attribute__((noinline)) static long loop_atomics(long pairs)
{
    for (long i = 0; i < pairs; i++)
        for (int k = 0; k < g_arg; k++)
            atomic_fetch_add_explicit(&g_shared[k & 7], 1, memory_order_relaxed);
    return (long)atomic_load(&g_shared[0]);
}

/* d - 1 frames of our own above the loop (the loop is the d-th) */
__attribute__((noinline)) static long nest(int d, long pairs)
{
    long r = d > 1 ? nest(d - 1, pairs) : g_loop(pairs);
    __asm__ volatile("" ::: "memory");
    return r;
}

struct result { double t0, t1, cpu; long sum; };

static void *worker(void *arg)
{
    struct result *out = arg;
    long warm = g_pairs < 20000 ? g_pairs : 20000;
    out->sum = nest(g_depth, warm);                 /* first-call costs, cache fill */
    pthread_barrier_wait(&g_start);
    out->t0 = clock_ns(CLOCK_MONOTONIC);
    double c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    out->sum += nest(g_depth, g_pairs);
    out->t1 = clock_ns(CLOCK_MONOTONIC);
    out->cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    return NULL;
}

static int load_memkind(const char *kind)
{
    void *h = dlopen("libmemkind.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "hmallocbench: %s\n", dlerror());
        return -1;
    }
    void *k = dlsym(h, kind), *m = dlsym(h, "memkind_malloc"), *f = dlsym(h, "memkind_free");
    if (!k || !m || !f) {
        fprintf(stderr, "hmallocbench: libmemkind.so.0 lacks %s or its functions\n", kind);
        return -1;
    }
    mk.kind = *(mk_kind_t *)k;
    memcpy(&mk.malloc, &m, sizeof m);
    memcpy(&mk.free, &f, sizeof f);
    void *probe = mk.malloc(mk.kind, g_size);
    if (!probe) {
        fprintf(stderr, "hmallocbench: memkind_malloc(%s, %zu) failed (MEMKIND_HBW needs "
                "MEMKIND_HBW_NODES without HBM)\n", kind, g_size);
        return -1;
    }
    mk.free(mk.kind, probe);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: hmallocbench malloc|memkind[:KIND]|unwind:N|"
                "atomics:K|locks:K THREADS PAIRS SIZE [DEPTH]\n");
        return 2;
    }
    const char *mode = argv[1];
    int n = atoi(argv[2]);
    g_pairs = atol(argv[3]);
    g_size = (size_t)atol(argv[4]);
    g_depth = argc > 5 ? atoi(argv[5]) : 8;
    if (n < 1 || n > 64 || g_pairs < 1 || g_size < 1 || g_depth < 1 || g_depth > 64) {
        fprintf(stderr, "hmallocbench: bad arguments\n");
        return 2;
    }
    const char *colon = strchr(mode, ':');
    const char *kind = colon ? colon + 1 : "MEMKIND_HBW";
    size_t ml = colon ? (size_t)(colon - mode) : strlen(mode);
    if (ml == 6 && !strncmp(mode, "malloc", 6) && !colon) {
        g_loop = loop_malloc;
    } else if (ml == 9 && !strncmp(mode, "untouched", 9) && !colon) {
        g_loop = loop_untouched;
    } else if (ml == 7 && !strncmp(mode, "memkind", 7)) {
        if (load_memkind(kind))
            return 1;
        g_loop = loop_memkind;
    } else if (colon && ((ml == 6 && !strncmp(mode, "unwind", 6)) ||
                         (ml == 7 && !strncmp(mode, "atomics", 7)) ||
                         (ml == 5 && !strncmp(mode, "locks", 5)))) {
        g_arg = atoi(colon + 1);
        if (g_arg < 1 || g_arg > 64) {
            fprintf(stderr, "hmallocbench: %s: want 1..64\n", mode);
            return 2;
        }
        g_loop = ml == 6 ? loop_unwind : ml == 7 ? loop_atomics : loop_locks;
        unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    } else {
        fprintf(stderr, "hmallocbench: unknown mode %s\n", mode);
        return 2;
    }
    pthread_t th[64];
    struct result res[64];
    double wall = 0, cpu = 0, max_cpu = 0, share = 1;
    double first = 0, last_start = 0, first_end = 0, last = 0;
    pthread_barrier_init(&g_start, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        if (pthread_create(&th[i], NULL, worker, &res[i]) != 0) {
            fprintf(stderr, "hmallocbench: pthread_create failed\n");
            return 1;
        }
    }
    long sum = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        double w = res[i].t1 - res[i].t0, c = res[i].cpu;
        wall += w / (double)g_pairs / n;
        cpu += c / (double)g_pairs / n;
        max_cpu = c / (double)g_pairs > max_cpu ? c / (double)g_pairs : max_cpu;
        share = c / w < share ? c / w : share;
        if (i == 0 || res[i].t0 < first)
            first = res[i].t0;
        if (i == 0 || res[i].t0 > last_start)
            last_start = res[i].t0;
        if (i == 0 || res[i].t1 < first_end)
            first_end = res[i].t1;
        if (i == 0 || res[i].t1 > last)
            last = res[i].t1;
        sum += res[i].sum;
    }
    double overlap = first_end > last_start ? (first_end - last_start) / (last - first) : 0;
    printf("ns_per_pair=%.1f cpu_ns_per_pair=%.1f max_cpu_ns_per_pair=%.1f min_cpu_share=%.3f "
           "overlap=%.3f checksum=%ld\n", wall, cpu, max_cpu, share, overlap, sum);
    return 0;
}
