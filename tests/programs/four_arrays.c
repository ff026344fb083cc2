/*
 * four_arrays.c — the software sampler's accuracy target (issue 3).
 *
 * Four arrays, each from its own malloc call site:
 *   big_random    large, read at random (latency-bound)        (site big_random)
 *   big_stream    large, read sequentially (prefetched)        (site big_stream)
 *   mid_random    medium, read at random                       (site mid_random)
 *   small_hot     small, cache-resident, read at random        (site small_hot)
 * Usage: four_arrays separate|mixed [SECONDS_PER_LOOP] [BIG_MB]
 *   separate  one timed loop per array, of 1.6, 0.8, 1.2 and 0.4 x SECONDS_PER_LOOP
 *             (unequal on purpose); prints "cpu_<name>=<seconds>" for each (the thread
 *             CPU time of that loop), so tests can compare sample shares with time
 *             shares. Array initialization only stores; the loops only load.
 *   mixed     one loop touching all four per iteration; prints "cpu_mixed=<s>"
 *   threads   the mixed loop in 3 threads at once (SECONDS_PER_LOOP each); prints
 *             "threads=3"
 * Every loop also prints a checksum line so no load is optimized away.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static __thread uint64_t rng = 88172645463325252ull;
static uint64_t loop_count[8];   /* a static variable (.bss) for attribution tests */

static inline uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* runs body in chunks of 1M accesses until `secs` of thread CPU time passed */
#define TIMED(secs, body)                                                           \
    do {                                                                            \
        double t0_ = cpu_now();                                                     \
        while (cpu_now() - t0_ < (secs)) {                                          \
            for (int k_ = 0; k_ < (1 << 20); k_++) {                                \
                body;                                                               \
            }                                                                       \
        }                                                                           \
    } while (0)

struct shared {
    uint64_t *big_random, *big_stream, *mid_random, *small_hot;
    size_t nbig, mbig, mmid, msmall;
    double secs;
    uint64_t sum;
};

static void *mixed_thread(void *arg)
{
    struct shared *a = arg;
    uint64_t sum = 0;
    size_t s = 0;
    rng ^= (uint64_t)(uintptr_t)&sum;      /* each thread its own sequence */
    TIMED(a->secs, {
        sum += a->big_random[next() & a->mbig];
        sum += a->big_stream[s];
        s = s + 1 < a->nbig ? s + 1 : 0;
        sum += a->mid_random[next() & a->mmid];
        sum += a->small_hot[next() & a->msmall];
    });
    __atomic_add_fetch(&a->sum, sum, __ATOMIC_RELAXED);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "separate") != 0 && strcmp(argv[1], "mixed") != 0 &&
                     strcmp(argv[1], "threads") != 0)) {
        fprintf(stderr, "usage: four_arrays separate|mixed|threads [SECONDS_PER_LOOP] [BIG_MB]\n");
        return 2;
    }
    double secs = argc > 2 ? atof(argv[2]) : 0.6;
    size_t big_mb = argc > 3 ? (size_t)atol(argv[3]) : 256;
    if (secs <= 0 || big_mb < 16) {
        fprintf(stderr, "four_arrays: bad arguments\n");
        return 2;
    }
    size_t nbig = big_mb * 1024 * 1024 / 8, nmid = 32u * 1024 * 1024 / 8, nsmall = 16 * 1024 / 8;
    uint64_t *big_random = malloc(nbig * 8);     /* SITE:big_random */
    uint64_t *big_stream = malloc(nbig * 8);     /* SITE:big_stream */
    uint64_t *mid_random = malloc(nmid * 8);     /* SITE:mid_random */
    uint64_t *small_hot = malloc(nsmall * 8);    /* SITE:small_hot */
    if (!big_random || !big_stream || !mid_random || !small_hot)
        return 1;
    for (size_t i = 0; i < nbig; i++) {
        big_random[i] = i;
        big_stream[i] = i ^ 7;
    }
    for (size_t i = 0; i < nmid; i++)
        mid_random[i] = i * 3;
    for (size_t i = 0; i < nsmall; i++)
        small_hot[i] = i * 5;
    /* power-of-two masks keep index arithmetic to one AND next to each load */
    size_t mbig = 1, mmid = 1, msmall = nsmall - 1;
    while (mbig * 2 <= nbig) mbig *= 2;
    while (mmid * 2 <= nmid) mmid *= 2;
    mbig--, mmid--;
    uint64_t sum = 0;
    size_t s = 0;
    if (strcmp(argv[1], "threads") == 0) {
        struct shared a = { big_random, big_stream, mid_random, small_hot,
                            nbig, mbig, mmid, msmall, secs, 0 };
        pthread_t th[3];
        for (int i = 0; i < 3; i++)
            if (pthread_create(&th[i], NULL, mixed_thread, &a) != 0)
                return 1;
        for (int i = 0; i < 3; i++)
            pthread_join(th[i], NULL);
        sum = a.sum;
        printf("threads=3\n");
    } else if (strcmp(argv[1], "separate") == 0) {
        double t;
        t = cpu_now();
        TIMED(1.6 * secs, sum += big_random[next() & mbig]);
        printf("cpu_big_random=%.6f\n", cpu_now() - t);
        t = cpu_now();
        TIMED(0.8 * secs, { sum += big_stream[s]; s = s + 1 < nbig ? s + 1 : 0; });
        printf("cpu_big_stream=%.6f\n", cpu_now() - t);
        t = cpu_now();
        TIMED(1.2 * secs, sum += mid_random[next() & mmid]);
        printf("cpu_mid_random=%.6f\n", cpu_now() - t);
        t = cpu_now();
        TIMED(0.4 * secs, sum += small_hot[next() & msmall]);
        printf("cpu_small_hot=%.6f\n", cpu_now() - t);
    } else {
        double t = cpu_now();
        TIMED(4 * secs, {
            sum += big_random[next() & mbig];
            sum += big_stream[s];
            s = s + 1 < nbig ? s + 1 : 0;
            sum += mid_random[next() & mmid];
            sum += small_hot[next() & msmall];
        });
        printf("cpu_mixed=%.6f\n", cpu_now() - t);
    }
    loop_count[argv[1][0] & 7]++;
    printf("checksum=%llu loops=%llu\n", (unsigned long long)sum,
           (unsigned long long)loop_count[argv[1][0] & 7]);
    free(big_random);
    free(big_stream);
    free(mid_random);
    free(small_hot);
    return 0;
}
