/*
 * histogram.c — a many-bins histogram for hmtune.
 *
 * Two heap arrays, each from its own malloc call site (the line ends with a
 * hmtune-site marker comment naming it):
 *   keys  uint32_t  precomputed random bin numbers; streamed sequentially once per
 *                   iteration (large, bandwidth bound, low value per MiB)
 *   bins  uint32_t  2^22 counters (16 MiB; 2^20 = 4 MiB with -q); incremented at
 *                   random positions (HOT: small and latency bound)
 * keys takes the rest of the footprint (-s MB minus the bins).
 *
 * Usage: histogram [-s MB] [-n ITERS] [-q]
 *   -s MB     total footprint in MiB (default 512, at least 2x the bins)
 *   -n ITERS  timed iterations (default 2; with -q default 3)
 *   -q        quick configuration: 16 MiB, used by the tests
 *
 * Output (stdout, exactly one line):  kernel_time_s=<float> checksum=<integer>
 * The checksum depends only on the size and iteration count (fixed-seed xorshift).
 * Errors go to stderr, exit status 2.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ex_common.h"

#define DEFAULT_MB     512
#define DEFAULT_ITERS  2
#define QUICK_MB       16
#define QUICK_ITERS    3
#define MAX_MB         65536
#define BINS_LOG2      22
#define QUICK_BINS_LOG2 20

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static inline uint64_t xorshift64(void)
{
    uint64_t x = rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rng = x;
    return x;
}

/* One pass over the keys. The bin number is perturbed by the iteration so that
 * every pass touches a different pattern (and cannot be hoisted). */
__attribute__((noinline))
static void k_hist(uint32_t *bins, const uint32_t *keys, size_t n, uint32_t mask, uint32_t it)
{
    uint32_t perturb = it * 0x9E3779B1u;
    for (size_t i = 0; i < n; i++)
        bins[(keys[i] ^ perturb) & mask]++;
}

int main(int argc, char **argv)
{
    static const struct ex_config cfg = { DEFAULT_MB, DEFAULT_ITERS, QUICK_MB, QUICK_ITERS,
                                          MAX_MB };
    const struct ex_args args = ex_parse_args(argc, argv, "histogram", &cfg);
    const long mb = args.mb, iters = args.iters;

    const unsigned log2 = args.quick ? QUICK_BINS_LOG2 : BINS_LOG2;
    const size_t nbins = (size_t)1 << log2;
    const uint32_t mask = (uint32_t)(nbins - 1);
    const uint64_t total = (uint64_t)mb << 20;
    if (total < 2 * nbins * sizeof(uint32_t)) {
        fprintf(stderr, "histogram: -s %ld MiB is too small for %zu bins (need >= %zu MiB)\n",
                mb, nbins, (2 * nbins * sizeof(uint32_t)) >> 20);
        return 2;
    }
    const size_t nkeys = (size_t)((total - nbins * sizeof(uint32_t)) / sizeof(uint32_t));

    uint32_t *keys = malloc(nkeys * sizeof(uint32_t)); /* hmtune-site: keys */
    uint32_t *bins = malloc(nbins * sizeof(uint32_t)); /* hmtune-site: bins */
    if (!keys || !bins) {
        fprintf(stderr, "histogram: out of memory\n");
        return 2;
    }
    for (size_t i = 0; i < nkeys; i++)
        keys[i] = (uint32_t)(xorshift64() >> 32);
    for (size_t i = 0; i < nbins; i++)
        bins[i] = 0;

    double t0 = now_s();
    for (long it = 0; it < iters; it++)
        k_hist(bins, keys, nkeys, mask, (uint32_t)it);
    double t1 = now_s();

    uint64_t checksum = 0;
    for (size_t i = 0; i < nbins; i++)
        checksum += (uint64_t)bins[i] * (i + 1);

    printf("kernel_time_s=%.6f checksum=%" PRIu64 "\n", t1 - t0, checksum);

    free(bins);
    free(keys);
    return 0;
}
