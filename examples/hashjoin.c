/*
 * hashjoin.c — an in-memory hash join (build, then probe) for hmtune.
 *
 * Four heap arrays, each from its own malloc call site (the line ends with a
 * hmtune-site marker comment naming it), allocated in the order a database operator
 * allocates them: its inputs first, its result buffer, the hash table last:
 *
 *   probe   5/16 of the footprint  uint64_t keys of the probe relation, streamed
 *                                  once per pass (bandwidth, little latency)
 *   build   1/8                    (key, value) tuples of the build relation, read
 *                                  once, sequentially, to fill the table
 *   out     5/16                   uint64_t, one result per probe key, written
 *                                  sequentially once per pass
 *   table   1/4                    open-addressing hash table of (key, value) slots
 *                                  at load factor 1/2: filled once, then one random
 *                                  lookup (a short linear scan) per probe key (HOT:
 *                                  random, TLB-bound loads)
 *
 * Half of the probe keys are in the build relation. Allocation order is not the order
 * of value: a first-come or size-window placement of a quarter of the footprint gets
 * the probe keys, the advisor should put the table there.
 *
 * Usage: hashjoin [-s MB] [-n ITERS] [-q]
 *   -s MB     total footprint in MiB (default 512, at least 16)
 *   -n ITERS  timed probe passes (default 2; with -q default 3)
 *   -q        quick configuration: 16 MiB, used by the tests
 *
 * The timed kernel is the build and ITERS probe passes.
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
#define MIN_MB         16
#define MAX_MB         65536

static uint64_t rng = 0xD1B54A32D192ED03ull;

static inline uint64_t xorshift64(void)
{
    uint64_t x = rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rng = x;
    return x;
}

struct tuple {
    uint64_t key;           /* never 0: 0 marks an empty slot */
    uint64_t value;
};

static inline uint64_t slot_of(uint64_t key, uint64_t mask)
{
    return (key * 0x9E3779B97F4A7C15ull >> 17) & mask;
}

__attribute__((noinline))
static void k_build(struct tuple *table, uint64_t mask, const struct tuple *build, size_t nb)
{
    for (size_t i = 0; i < nb; i++) {
        uint64_t s = slot_of(build[i].key, mask);
        while (table[s].key != 0)
            s = (s + 1) & mask;
        table[s] = build[i];
    }
}

__attribute__((noinline))
static void k_probe(const struct tuple *table, uint64_t mask, const uint64_t *probe,
                    uint64_t *out, size_t np)
{
    for (size_t i = 0; i < np; i++) {
        const uint64_t key = probe[i];
        uint64_t s = slot_of(key, mask), v = 0;
        for (;;) {
            const uint64_t k = table[s].key;
            if (k == key) {
                v = table[s].value;
                break;
            }
            if (k == 0)
                break;
            s = (s + 1) & mask;
        }
        out[i] = v;
    }
}

int main(int argc, char **argv)
{
    static const struct ex_config cfg = { DEFAULT_MB, DEFAULT_ITERS, QUICK_MB, QUICK_ITERS,
                                          MAX_MB };
    const struct ex_args args = ex_parse_args(argc, argv, "hashjoin", &cfg);
    const long mb = args.mb, iters = args.iters;
    if (mb < MIN_MB) {
        fprintf(stderr, "hashjoin: -s %ld MiB is too small (need >= %d MiB)\n", mb, MIN_MB);
        return 2;
    }
    const uint64_t total = (uint64_t)mb << 20;

    /* The table: the largest power of two of slots within a quarter of the footprint. */
    size_t nslots = 1;
    while ((nslots * 2) * sizeof(struct tuple) <= total / 4)
        nslots *= 2;
    const uint64_t mask = nslots - 1;
    const size_t nbuild = nslots / 2;
    const size_t nprobe = (size_t)((total / 16 * 5) / sizeof(uint64_t));

    uint64_t *probe = malloc(nprobe * sizeof(uint64_t));           /* hmtune-site: probe */
    struct tuple *build = malloc(nbuild * sizeof(struct tuple));    /* hmtune-site: build */
    uint64_t *out = malloc(nprobe * sizeof(uint64_t));             /* hmtune-site: out */
    struct tuple *table = malloc(nslots * sizeof(struct tuple));    /* hmtune-site: table */
    if (!probe || !build || !out || !table) {
        fprintf(stderr, "hashjoin: out of memory\n");
        return 2;
    }
    /* Distinct build keys: odd multiples of a random odd constant (a bijection of the
     * odd numbers, so never 0 and never equal); misses are even keys. */
    const uint64_t mult = xorshift64() | 1;
    for (size_t i = 0; i < nbuild; i++) {
        build[i].key = (2 * (uint64_t)i + 1) * mult;
        build[i].value = xorshift64() >> 16;
    }
    for (size_t i = 0; i < nprobe; i++) {
        const uint64_t r = xorshift64();
        probe[i] = (r & 1) ? (2 * ((r >> 1) % nbuild) + 1) * mult : (r >> 1) << 1 | 2;
    }
    for (size_t i = 0; i < nslots; i++)
        table[i].key = table[i].value = 0;
    for (size_t i = 0; i < nprobe; i++)
        out[i] = 0;

    double t0 = now_s();
    k_build(table, mask, build, nbuild);
    for (long it = 0; it < iters; it++)
        k_probe(table, mask, probe, out, nprobe);
    double t1 = now_s();

    uint64_t checksum = 0;
    for (size_t i = 0; i < nprobe; i++)
        checksum += out[i] ^ (uint64_t)i;

    printf("kernel_time_s=%.6f checksum=%" PRIu64 "\n", t1 - t0, checksum);

    free(table);
    free(out);
    free(build);
    free(probe);
    return 0;
}
