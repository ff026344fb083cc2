/*
 * window_hot.c — profile.csv's end-to-end test: one large array whose hot loop touches
 * only a window of it, so the site's sampled weight is concentrated in known offsets.
 *
 * Sites: big (64 MiB of doubles, written in full once, then only the window
 * [24 MiB, 28 MiB) is read and written, over and over); flat (16 MiB of doubles,
 * written once, then read and written all over, in order, for as long as the window).
 * Usage: window_hot [SECONDS]   thread CPU seconds of each loop (default 0.5)
 * Output: "big=<address> size=<bytes> window=<offset>+<bytes>", "flat=<address>
 *         size=<bytes>", "sum=<checksum>", "ok"; exit 0 (2 on a bad argument or
 *         allocation failure).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BIG_N    (8u << 20)             /* doubles: 64 MiB */
#define FLAT_N   (2u << 20)             /* doubles: 16 MiB */
#define WIN_LO   (3u << 20)             /* doubles: from 24 MiB */
#define WIN_N    (1u << 19)             /* doubles: 4 MiB */

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* a += 1 over [lo, lo + n) of a, in passes, for `secs` of thread CPU time */
static void sweep(volatile double *a, size_t lo, size_t n, double secs)
{
    double t0 = cpu_now();
    while (cpu_now() - t0 < secs)
        for (size_t i = lo; i < lo + n; i++)
            a[i] += 1.0;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? strtod(argv[1], NULL) : 0.5;
    if (secs <= 0 || secs > 600)
        return 2;
    double *big = malloc(BIG_N * sizeof(double));     /* SITE:big */
    double *flat = malloc(FLAT_N * sizeof(double));   /* SITE:flat */
    if (!big || !flat)
        return 2;
    memset(big, 0, BIG_N * sizeof(double));
    memset(flat, 0, FLAT_N * sizeof(double));
    printf("big=%p size=%zu window=%zu+%zu\n", (void *)big, (size_t)BIG_N * sizeof(double),
           (size_t)WIN_LO * sizeof(double), (size_t)WIN_N * sizeof(double));
    printf("flat=%p size=%zu\n", (void *)flat, (size_t)FLAT_N * sizeof(double));
    fflush(stdout);
    sweep(big, WIN_LO, WIN_N, secs);
    sweep(flat, 0, FLAT_N, secs);
    double sum = 0;
    for (size_t i = 0; i < BIG_N; i += 4096)
        sum += big[i];
    for (size_t i = 0; i < FLAT_N; i += 4096)
        sum += flat[i];
    printf("sum=%.1f\nok\n", sum);
    free(flat);
    free(big);
    return 0;
}
