/*
 * latency.c — a latency-bound multi-array application for hmtune.
 *
 * Five heap arrays, each from its own malloc call site (the line ends with a
 * hmtune-site marker comment naming it):
 *
 *   chase   25% of the footprint  uint64_t  random cyclic permutation; the kernel
 *                                            follows it with dependent loads (HOT,
 *                                            purely latency bound)
 *   gidx    12.5%                 uint32_t  random indices, read sequentially (warm)
 *   gdata   25%                   uint64_t  gathered through gidx (HOT, random loads)
 *   stream  25%                   uint64_t  summed sequentially (bandwidth, not latency)
 *   cold1    6.25%                uint64_t  written once at init, one load per iteration
 *   cold2    6.25%                uint64_t  written once at init, one load per iteration
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

/* ---- kernels (noinline so that each shows up as its own frame) ---- */

/* Follow the permutation for `steps` dependent loads starting at *cursor. */
__attribute__((noinline))
static uint64_t k_chase(const uint64_t *chase, uint64_t *cursor, uint64_t steps)
{
    uint64_t p = *cursor, acc = 0;
    for (uint64_t i = 0; i < steps; i++) {
        p = chase[p];
        acc += p;
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

    const uint64_t total = (uint64_t)mb << 20;
    const uint64_t n_chase = total / 4 / sizeof(uint64_t);
    const uint64_t n_gidx = total / 8 / sizeof(uint32_t);
    const uint64_t n_gdata = total / 4 / sizeof(uint64_t);
    const uint64_t n_stream = total / 4 / sizeof(uint64_t);
    const uint64_t n_cold = total / 16 / sizeof(uint64_t);

    uint64_t *chase = malloc(n_chase * sizeof(uint64_t));   /* hmtune-site: chase */
    uint32_t *gidx = malloc(n_gidx * sizeof(uint32_t));     /* hmtune-site: gidx */
    uint64_t *gdata = malloc(n_gdata * sizeof(uint64_t));   /* hmtune-site: gdata */
    uint64_t *stream = malloc(n_stream * sizeof(uint64_t)); /* hmtune-site: stream */
    uint64_t *cold1 = malloc(n_cold * sizeof(uint64_t));    /* hmtune-site: cold1 */
    uint64_t *cold2 = malloc(n_cold * sizeof(uint64_t));    /* hmtune-site: cold2 */
    if (!chase || !gidx || !gdata || !stream || !cold1 || !cold2)
        die("out of memory");

    /* Initialise. chase: Sattolo's algorithm gives one cycle through all slots. */
    for (uint64_t i = 0; i < n_chase; i++)
        chase[i] = i;
    for (uint64_t i = n_chase - 1; i > 0; i--) {
        uint64_t j = rnd_below(i);          /* j in [0, i): single cycle */
        uint64_t t = chase[i];
        chase[i] = chase[j];
        chase[j] = t;
    }
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

    /* Per iteration: n_chase/8 dependent loads (~ 1/8 of the chase array),
     * one pass of the gather, one pass of the stream, two cold loads. */
    const uint64_t chase_steps = n_chase / 8;
    uint64_t cursor = 0, checksum = 0;

    double t0 = now_s();
    for (long it = 0; it < iters; it++) {
        checksum += k_chase(chase, &cursor, chase_steps);
        checksum += k_gather(gidx, gdata, n_gidx, (uint64_t)it);
        checksum += k_stream(stream, n_stream, (uint64_t)it);
        checksum += k_cold(cold1, cold2, n_cold, (uint64_t)it);
    }
    double t1 = now_s();

    printf("kernel_time_s=%.6f checksum=%" PRIu64 "\n", t1 - t0, checksum);

    free(cold2);
    free(cold1);
    free(stream);
    free(gdata);
    free(gidx);
    free(chase);
    return 0;
}
