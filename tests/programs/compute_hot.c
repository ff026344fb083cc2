/*
 * compute_hot.c — the software sampler's look ahead (issue 15): a loop whose time is
 * mostly dependent floating-point divisions between a load and a store of one hot
 * array, so most samples land after an instruction without a memory operand and the
 * next access in straight-line code is the store into that array.
 *
 * Sites: hot (8 MiB of doubles, the loop's only memory), cold (16 MiB, written once
 * at start and never again).
 * Usage: compute_hot [SECONDS]   thread CPU seconds of the loop (default 1.0)
 * Output: "hot=<address> size=<bytes>" (where the array is, for the tests),
 *         "sum=<checksum>", "ok"; exit 0 (2 on a bad argument or allocation failure).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HOT_N  (1u << 20)            /* doubles: 8 MiB */
#define COLD_N (2u << 20)

static volatile double g_div = 1.0000001, g_add = 0.25;   /* kept in registers below */

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? strtod(argv[1], NULL) : 1.0;
    if (secs <= 0 || secs > 600)
        return 2;
    double *hot = malloc(HOT_N * sizeof(double));     /* SITE:hot */
    double *cold = malloc(COLD_N * sizeof(double));   /* SITE:cold */
    if (!hot || !cold)
        return 2;
    for (size_t i = 0; i < HOT_N; i++)
        hot[i] = (double)i;
    memset(cold, 1, COLD_N * sizeof(double));
    printf("hot=%p size=%zu\n", (void *)hot, (size_t)HOT_N * sizeof(double));
    const double d = g_div, c = g_add;
    double t0 = cpu_now();
    size_t j = 0;
    while (cpu_now() - t0 < secs) {
        for (int k = 0; k < (1 << 16); k++) {
            double s = hot[j];
            s = s / d;
            s = s / d;
            hot[j] = s + c;
            j = (j + 1) & (HOT_N - 1);     /* sequential: the load hits, the divisions cost */
        }
    }
    double sum = 0;
    for (size_t i = 0; i < HOT_N; i += 4096)
        sum += hot[i];
    printf("sum=%.3f\nok\n", sum + (double)((volatile double *)cold)[7]);
    free(cold);
    free(hot);
    return 0;
}
