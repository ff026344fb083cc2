/*
 * latency.c — a latency-bound multi-array application for hmtune.
 *
 * Six heap arrays, each from its own malloc call site (the line ends with a
 * hmtune-site marker comment naming it), allocated in this order, which is not the
 * order of their value in fast memory (as in many real codes: input and bulk data
 * first, the working structures last):
 *
 *   cold1   4/32 of the footprint  uint64_t  written once at init, one load per
 *   cold2   4/32                   uint64_t  iteration (COLD)
 *   stream  8/32                   uint64_t  summed sequentially (bandwidth, not latency)
 *   gidx    1/32                   uint32_t  random indices, read sequentially (warm)
 *   gdata   4/32                   uint64_t  gathered through gidx (random loads)
 *   chase  11/32                   a pool of 64-byte node slots; 2048 live nodes
 *                                            scattered over the whole pool (one per
 *                                            few pages) and linked in one random cycle,
 *                                            walked with dependent loads (HOT: about
 *                                            90 % of the kernel time)
 *
 * The walk's nodes fit in the caches, its pages do not fit in the TLB of 4 KiB pages:
 * the chase is TLB-bound, the access pattern that 2 MiB pages (the fast tier of the
 * development VM) speed up most (about 2x there), as HBM speeds up latency- and
 * bandwidth-bound objects on the machines it is built into.
 *
 * Usage: latency [-s MB] [-n ITERS] [-q]
 *   -s MB     total footprint in MiB (default 512)
 *   -n ITERS  timed kernel iterations (default 3, also with -q)
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
#define DEFAULT_ITERS  3
#define QUICK_MB       16
#define QUICK_ITERS    3
#define MAX_MB         65536   /* keeps every index within uint32_t */
#define LIVE_NODES     2048    /* nodes in the cycle (128 KiB of cache lines) */

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static inline uint64_t xorshift64(void)
{
    uint64_t x = rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rng = x;
    return x;
}

/* Uniform-enough value in [0, n) for n < 2^32. */
static inline uint64_t rnd_below(uint64_t n)
{
    return (xorshift64() >> 32) * n >> 32;
}

static void die(const char *msg)
{
    fprintf(stderr, "latency: %s\n", msg);
    exit(2);
}

/* One cache line: the link and the payload the walk adds up. */
struct node {
    uint64_t next;
    uint64_t payload[7];
};

/* A bijection of [0, 2^bits): add, multiply by odd constants and xor-shift, each
 * invertible modulo 2^bits. */
static inline uint64_t mix(uint64_t x, unsigned bits)
{
    const uint64_t mask = (bits == 64) ? ~0ull : (1ull << bits) - 1;
    x = (x + 0x632BE59BD9B4E019ull) & mask;
    x = (x * 0x9E3779B97F4A7C15ull) & mask;
    x ^= x >> (bits / 2 + 1);
    x = (x * 0xBF58476D1CE4E5B9ull) & mask;
    x ^= x >> (bits / 3 + 1);
    return x;
}

/* A pseudo-random bijection of [0, n) (cycle-walking mix over the next power of two):
 * visiting the nodes in the order sigma(0), sigma(1), ... jumps across the whole pool,
 * so every step of the walk lands on another page, with no stride a prefetcher follows. */
static inline uint64_t sigma(uint64_t i, uint64_t n, unsigned bits)
{
    uint64_t x = mix(i, bits);
    while (x >= n)
        x = mix(x, bits);
    return x;
}

/* ---- kernels (noinline so that each shows up as its own frame) ---- */

/* Follow the cycle for `steps` dependent loads starting at *cursor. */
__attribute__((noinline))
static uint64_t k_chase(const struct node *chase, uint64_t *cursor, uint64_t steps)
{
    uint64_t p = *cursor, acc = 0;
    for (uint64_t i = 0; i < steps; i++) {
        acc += chase[p].payload[0];
        p = chase[p].next;
    }
    *cursor = p;
    return acc;
}

__attribute__((noinline))
static uint64_t k_gather(const uint32_t *gidx, const uint64_t *gdata, uint64_t n, uint64_t it)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < n; i++)
        acc += gdata[gidx[i]] ^ it;
    return acc;
}

__attribute__((noinline))
static uint64_t k_stream(const uint64_t *s, uint64_t n, uint64_t it)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < n; i++)
        acc += s[i] ^ it;
    return acc;
}

__attribute__((noinline))
static uint64_t k_cold(const uint64_t *c1, const uint64_t *c2, uint64_t n, uint64_t it)
{
    uint64_t j = (it * 7919u + 13u) % n;
    return c1[j] * 3u + c2[n - 1 - j];
}

int main(int argc, char **argv)
{
    static const struct ex_config cfg = { DEFAULT_MB, DEFAULT_ITERS, QUICK_MB, QUICK_ITERS,
                                          MAX_MB };
    const struct ex_args args = ex_parse_args(argc, argv, "latency", &cfg);
    const long mb = args.mb, iters = args.iters;

    const uint64_t unit = ((uint64_t)mb << 20) / 32;
    const uint64_t n_cold = 4 * unit / sizeof(uint64_t);
    const uint64_t n_stream = 8 * unit / sizeof(uint64_t);
    const uint64_t n_gidx = unit / sizeof(uint32_t);
    const uint64_t n_gdata = 4 * unit / sizeof(uint64_t);
    const uint64_t n_chase = 11 * unit / sizeof(struct node);
    const uint64_t n_live = n_chase < LIVE_NODES ? n_chase : LIVE_NODES;
    const uint64_t stride = n_chase / n_live;

    uint64_t *cold1 = malloc(n_cold * sizeof(uint64_t));          /* hmtune-site: cold1 */
    uint64_t *cold2 = malloc(n_cold * sizeof(uint64_t));          /* hmtune-site: cold2 */
    uint64_t *stream = malloc(n_stream * sizeof(uint64_t));       /* hmtune-site: stream */
    uint32_t *gidx = malloc(n_gidx * sizeof(uint32_t));           /* hmtune-site: gidx */
    uint64_t *gdata = malloc(n_gdata * sizeof(uint64_t));         /* hmtune-site: gdata */
    struct node *chase = malloc(n_chase * sizeof(struct node));   /* hmtune-site: chase */
    if (!chase || !gidx || !gdata || !stream || !cold1 || !cold2)
        die("out of memory");

    /* Initialise. chase: every slot gets a payload; live node k sits at a varying line
     * of the k-th stretch of the pool, and node sigma(k) links to sigma(k + 1). */
    for (uint64_t i = 0; i < n_chase; i++) {
        chase[i].next = i;
        for (int j = 0; j < 7; j++)
            chase[i].payload[j] = (i * 7 + (uint64_t)j) & 0xFFFF;
    }
    unsigned bits = 1;
    while ((1ull << bits) < n_live)
        bits++;
#define SLOT(k) ((k) * stride + (k) * 37 % stride)
    const uint64_t first = SLOT(sigma(0, n_live, bits));
    uint64_t prev = first;
    for (uint64_t k = 1; k < n_live; k++) {
        uint64_t cur = SLOT(sigma(k, n_live, bits));
        chase[prev].next = cur;
        prev = cur;
    }
    chase[prev].next = first;
#undef SLOT
    for (uint64_t i = 0; i < n_gidx; i++)
        gidx[i] = (uint32_t)rnd_below(n_gdata);
    for (uint64_t i = 0; i < n_gdata; i++)
        gdata[i] = xorshift64() & 0xFFFFF;
    for (uint64_t i = 0; i < n_stream; i++)
        stream[i] = i * 2654435761u;
    for (uint64_t i = 0; i < n_cold; i++) {
        cold1[i] = i + 1;
        cold2[i] = (i ^ 0x5555u) + 7;
    }

    /* Per iteration: 4 * n_gidx dependent loads around the cycle, one pass of the
     * gather, one pass of the stream, two cold loads. */
    uint64_t cursor = first, checksum = 0;

    double t0 = now_s();
    for (long it = 0; it < iters; it++) {
        checksum += k_chase(chase, &cursor, 4 * n_gidx);
        checksum += k_gather(gidx, gdata, n_gidx, (uint64_t)it);
        checksum += k_stream(stream, n_stream, (uint64_t)it);
        checksum += k_cold(cold1, cold2, n_cold, (uint64_t)it);
    }
    double t1 = now_s();

    printf("kernel_time_s=%.6f checksum=%" PRIu64 "\n", t1 - t0, checksum);

    free(chase);
    free(gdata);
    free(gidx);
    free(stream);
    free(cold2);
    free(cold1);
    return 0;
}
