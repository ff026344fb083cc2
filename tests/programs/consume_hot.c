/*
 * consume_hot.c — the software sampler's producer-load rule (issue 43): a loop whose
 * time is integer divisions by values loaded from one hot array, each division
 * reading the loaded register itself (the load is not folded into it), and no other
 * access before the loop's branch. Most samples land after the division, an
 * instruction without a memory operand, whose next access in straight-line code is
 * past a branch: without the rule they have no address; with it they get the
 * address of the load the division waited for.
 *
 * Sites: hot (8 MiB of 64-bit values, the loop's only memory), cold (16 MiB,
 * written once at start and never again).
 * Usage: consume_hot [SECONDS]   thread CPU seconds of the loop (default 1.0)
 * Output: "hot=<address> size=<bytes>" (where the array is, for the tests),
 *         "sum=<checksum>", "ok"; exit 0 (2 on a bad argument or allocation failure).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HOT_N  (1u << 20)            /* 64-bit values: 8 MiB */
#define COLD_N (2u << 20)

static volatile uint64_t g_num = 0xfedcba9876543210ull;   /* kept in a register below */

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One pass of n divisions of num by hot[0..n). The division reads the loaded
 * register itself (div %reg), with the load's address registers untouched in between;
 * written in assembly so that no compiler folds the load into the division or moves
 * the index update between them (GCC 12 bumps a pointer there). */
static uint64_t divide(const uint64_t *hot, size_t n, uint64_t num)
{
    uint64_t acc = 0;
    for (size_t j = 0; j < n; j++) {
        uint64_t v, q, r;
        __asm__("mov (%[p],%[j],8), %[v]\n\t"
                "xor %%edx, %%edx\n\t"
                "mov %[num], %%rax\n\t"
                "div %[v]"
                : [v] "=&r"(v), "=&a"(q), "=&d"(r)
                : [p] "r"(hot), [j] "r"(j), [num] "r"(num)
                : "cc");
        acc += q + (r & 1);
    }
    return acc;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? strtod(argv[1], NULL) : 1.0;
    if (secs <= 0 || secs > 600)
        return 2;
    uint64_t *hot = malloc(HOT_N * sizeof(uint64_t));     /* SITE:hot */
    uint64_t *cold = malloc(COLD_N * sizeof(uint64_t));   /* SITE:cold */
    if (!hot || !cold)
        return 2;
    for (size_t i = 0; i < HOT_N; i++)
        hot[i] = 3 + (i & 0xffff);
    memset(cold, 1, COLD_N * sizeof(uint64_t));
    printf("hot=%p size=%zu\n", (void *)hot, (size_t)HOT_N * sizeof(uint64_t));
    const uint64_t num = g_num;
    uint64_t sum = 0;
    double t0 = cpu_now();
    while (cpu_now() - t0 < secs)
        for (size_t k = 0; k < HOT_N; k += 1u << 16)
            sum += divide(hot + k, 1u << 16, num);
    printf("sum=%llu\nok\n", (unsigned long long)(sum + ((volatile uint64_t *)cold)[7]));
    free(cold);
    free(hot);
    return 0;
}
