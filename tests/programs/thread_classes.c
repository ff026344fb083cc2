/*
 * thread_classes.c — many threads allocating small objects of several size classes
 * from a few sites, next to one large array whose hot loop touches only a window of
 * it: the arena's per-thread slabs and chunks against the advisor's charge and the
 * hugepage reservation (issue 42; tests/py/test_thread_arena.py).
 *
 * Usage: thread_classes [ROUNDS [THREADS [SECONDS [FREER]]]]  (default 3 16 0.05 own)
 * Each worker thread t, ROUNDS times, in step with the others and the main thread
 * (barriers): allocates its objects (below) and fills them; reads them over and over
 * for SECONDS of its CPU time; then its objects are freed by FREER: `own` (t itself),
 * `next` (worker t - 1 frees them, so each worker frees another's) or `main` (the
 * main thread frees every worker's, as a consumer of a work queue does). The main
 * thread allocates the large array before the workers start, sweeps its window while
 * they read, and frees it at the end.
 * Sites (per thread and round):
 *   node   256 x 48 B
 *   key    128 x 200 B
 *   vary   256 objects cycling over 96, 320, 640, 1000, 2000, 3000, 5000 and 7000 B
 *          (eight classes from one site)
 *   page   32 x 6000 B
 *   mid    8 x 20000 B (a class over 8 KiB: one shard for all threads)
 *   big    one array of 24 MiB (main), whose window [8 MiB, 12 MiB) is hot
 * Output: "sum=<checksum> big=<count>" (independent of where the memory is), "ok";
 * exit 0 (2 on a bad argument or an allocation failure, 3 on a wrong sum).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 64
#define N_NODE 256
#define N_KEY  128
#define N_VARY 256
#define N_PAGE 32
#define N_MID  8
#define BIG    (24u << 20)
#define WIN_LO (8u << 20)
#define WIN_N  (4u << 20)

static const size_t vary_size[8] = { 96, 320, 640, 1000, 2000, 3000, 5000, 7000 };
static int rounds = 3, nthreads = 16, freer;    /* 0 own, 1 next, 2 main */
static pthread_barrier_t step;
static double secs = 0.05;
static uint64_t sums[MAX_THREADS];

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct obj {
    unsigned char *p;
    size_t n;
};

static void fill(struct obj *o, size_t seed)
{
    for (size_t k = 0; k < o->n; k++)
        o->p[k] = (unsigned char)(k * 31 + seed);
}

static uint64_t read_all(const struct obj *o, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) {
        const volatile unsigned char *p = o[i].p;
        for (size_t k = 0; k < o[i].n; k += 8)
            s += p[k];
    }
    return s;
}

/* The sum a thread's objects give, whatever their memory: computed from the fill. */
static uint64_t expect_all(const struct obj *o, size_t n, size_t seed0)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < o[i].n; k += 8)
            s += (unsigned char)(k * 31 + seed0 + i);
    return s;
}

static struct obj *alloc_nodes(struct obj *o)
{
    for (size_t i = 0; i < N_NODE; i++, o++)
        o->p = malloc(o->n = 48);               /* SITE:node */
    return o;
}

static struct obj *alloc_keys(struct obj *o)
{
    for (size_t i = 0; i < N_KEY; i++, o++)
        o->p = malloc(o->n = 200);              /* SITE:key */
    return o;
}

static struct obj *alloc_vary(struct obj *o)
{
    for (size_t i = 0; i < N_VARY; i++, o++)
        o->p = malloc(o->n = vary_size[i % 8]); /* SITE:vary */
    return o;
}

static struct obj *alloc_pages(struct obj *o)
{
    for (size_t i = 0; i < N_PAGE; i++, o++)
        o->p = malloc(o->n = 6000);             /* SITE:page */
    return o;
}

static struct obj *alloc_mids(struct obj *o)
{
    for (size_t i = 0; i < N_MID; i++, o++)
        o->p = malloc(o->n = 20000);            /* SITE:mid */
    return o;
}

#define N_ALL (N_NODE + N_KEY + N_VARY + N_PAGE + N_MID)

static void free_all(struct obj *o)
{
    for (size_t i = 0; i < N_ALL; i++)
        free(o[i].p);
}

static struct obj objs[MAX_THREADS][N_ALL];

static void *worker(void *arg)
{
    size_t t = (size_t)arg;
    struct obj *o = objs[t];
    uint64_t *sum = &sums[t];
    for (int r = 0; r < rounds; r++) {
        struct obj *e = alloc_mids(alloc_pages(alloc_vary(alloc_keys(alloc_nodes(o)))));
        size_t n = (size_t)(e - o), seed = t * 7 + (size_t)r;
        for (size_t i = 0; i < n; i++) {
            if (!o[i].p)
                exit(2);
            fill(&o[i], seed + i);
        }
        uint64_t want = expect_all(o, n, seed), got = 0;
        double t0 = cpu_now();
        do {
            got = read_all(o, n);
            if (got != want)
                exit(3);
        } while (cpu_now() - t0 < secs);
        *sum += got;
        pthread_barrier_wait(&step);
        if (freer < 2)
            free_all(objs[(t + (size_t)freer) % (size_t)nthreads]);
        pthread_barrier_wait(&step);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = atoi(argv[1]);
    if (argc > 2)
        nthreads = atoi(argv[2]);
    if (argc > 3)
        secs = strtod(argv[3], NULL);
    if (argc > 4)
        freer = !strcmp(argv[4], "own") ? 0 : !strcmp(argv[4], "next") ? 1
              : !strcmp(argv[4], "main") ? 2 : -1;
    int threads = nthreads;
    if (rounds < 1 || rounds > 1000 || threads < 1 || threads > MAX_THREADS || secs < 0 ||
        secs > 60 || freer < 0)
        return 2;
    pthread_barrier_init(&step, NULL, (unsigned)threads + 1);
    unsigned char *big = malloc(BIG);           /* SITE:big */
    if (!big)
        return 2;
    memset(big, 1, BIG);
    pthread_t th[MAX_THREADS];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(size_t)i) != 0)
            return 2;
    /* each round: the window while the workers read, then their frees */
    uint64_t sink = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = cpu_now();
        do {
            const volatile unsigned char *w = big + WIN_LO;
            for (size_t k = 0; k < WIN_N; k += 64)
                sink += w[k];
        } while (cpu_now() - t0 < secs);
        pthread_barrier_wait(&step);
        if (freer == 2)
            for (int i = 0; i < threads; i++)
                free_all(objs[i]);
        pthread_barrier_wait(&step);
    }
    uint64_t sum = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        sum += sums[i];
    }
    uint64_t bigsum = sink ? 0 : 1;         /* the window holds ones: sink > 0 */
    for (size_t k = 0; k < BIG; k += 4096)
        bigsum += big[k];
    free(big);
    printf("sum=%llu big=%llu\nok\n", (unsigned long long)sum, (unsigned long long)bigsum);
    return 0;
}
