/* kinds: three allocation sites of similar sampled time, one per access kind
 * (tests/py/test_kinds.py): a 64 MiB array summed in order (streaming), a 64 MiB
 * array of indices chased around one random cycle (scattered), and a small array of
 * counters two threads hammer with atomic adds (synchronization). A pass over the
 * streamed array lasts ~40 ms, ten sampling periods of 4 ms (a kernel of HZ=250
 * rounds the sampler's CPU-time timer to its tick): most consecutive samples in
 * it step forward.
 * kinds [MILLISECONDS]: each phase runs about that long (default 700) of CPU time;
 * prints `kinds <checksum>` and `ok`. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N (64u << 20) / sizeof(uint64_t)     /* 64 MiB of 8-byte elements */
#define NLOCK 8
#define LOCK_STRIDE 8      /* counters a cache line apart, in a traced block */

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* s += *p with the load in the add itself: every instruction of the pass but the loop's
 * own is an access to the streamed array, so a sample's previous instruction is one
 * on any CPU, wherever its timer lands in the loop (with a separate load and add, the
 * add is what most samples follow on some: they have no address of their own). */
#define ADD_MEM(s, p) __asm__ volatile("add (%1), %0" : "+r"(s) : "r"(p) : "memory")
#define ADD4(s, p) do { ADD_MEM(s, p); ADD_MEM(s, p); ADD_MEM(s, p); ADD_MEM(s, p); } while (0)

static uint64_t stream(uint64_t *a, double ms)
{
    uint64_t s = 0;
    double t0 = cpu_ms();
    while (cpu_ms() - t0 < ms)
        for (size_t i = 0; i < N; i++) {    /* each element read 16 times: a pass */
            ADD4(s, &a[i]);                 /* lasts ~40 ms */
            ADD4(s, &a[i]);
            ADD4(s, &a[i]);
            ADD4(s, &a[i]);
        }
    return s;
}

static uint64_t chase(const uint64_t *next, double ms)
{
    uint64_t p = 0, s = 0;
    double t0 = cpu_ms();
    while (cpu_ms() - t0 < ms) {
        for (int k = 0; k < 100000; k++)
            p = next[p];
        s += p;
    }
    return s;
}

static uint64_t *g_lock;
static double g_ms;

static void *hammer(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    uint64_t s = 0;
    double t0 = cpu_ms();
    while (cpu_ms() - t0 < g_ms)
        for (int k = 0; k < 10000; k++)
            s += __atomic_fetch_add(&g_lock[(k + id) % NLOCK * LOCK_STRIDE], 1,
                                    __ATOMIC_SEQ_CST);
    return (void *)(uintptr_t)s;
}

int main(int argc, char **argv)
{
    double ms = argc > 1 ? atof(argv[1]) : 700;
    uint64_t *a = malloc(N * sizeof(uint64_t));                 /* SITE:streamed */
    uint64_t *next = malloc(N * sizeof(uint64_t));              /* SITE:chased */
    g_lock = calloc(NLOCK * LOCK_STRIDE, sizeof(uint64_t) * 8); /* SITE:locks */
    if (!a || !next || !g_lock)
        return 1;
    for (size_t i = 0; i < N; i++)
        a[i] = i;
    /* one random cycle through every element (Sattolo's shuffle) */
    for (size_t i = 0; i < N; i++)
        next[i] = i;
    uint64_t x = 88172645463325252ull;
    for (size_t i = N - 1; i > 0; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t j = x % i, t = next[i];
        next[i] = next[j];
        next[j] = t;
    }
    uint64_t sum = stream(a, ms);
    sum += chase(next, ms);
    g_ms = ms / 2;                  /* two threads: the same CPU time in all */
    pthread_t th[2];
    for (uintptr_t i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, hammer, (void *)i) != 0)
            return 1;
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(th[i], &r);
        sum += (uint64_t)(uintptr_t)r;
    }
    printf("kinds %llu\nok\n", (unsigned long long)sum);
    free(a);
    free(next);
    free(g_lock);
    return 0;
}
