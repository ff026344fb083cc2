/*
 * stream.c — a STREAM-like bandwidth kernel for hmtune.
 *
 * Three double arrays of equal size (a third of the footprint each), each from its
 * own malloc call site; the line ends with a hmtune-site marker comment naming it:
 * a, b, c.
 * Every iteration runs the four STREAM kernels:
 *   copy   c = a            (reads a, writes c)
 *   scale  b = s*c          (reads c, writes b)
 *   add    c = a + b        (reads a, b, writes c)
 *   triad  a = b + s*c      (reads b, c, writes a)
 * All three arrays are equally hot and purely bandwidth bound (sequential access).
 *
 * Usage: stream [-s MB] [-n ITERS] [-q]
 *   -s MB     total footprint in MiB (default 512)
 *   -n ITERS  timed iterations (default 15; with -q default 5)
 *   -q        quick configuration: 16 MiB, used by the tests
 *
 * Output (stdout, exactly one line):  kernel_time_s=<float> bandwidth_MBs=<float>
 * bandwidth_MBs counts 10 * 8 bytes per element per iteration (STREAM's convention,
 * no write-allocate traffic), in units of 10^6 bytes/s.
 * The results are validated against the closed form; a mismatch is an error.
 * Errors go to stderr, exit status 2.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ex_common.h"

#define DEFAULT_MB     512
#define DEFAULT_ITERS  15
#define QUICK_MB       16
#define QUICK_ITERS    5
#define MAX_MB         65536

__attribute__((noinline))
static void k_copy(double *restrict c, const double *restrict a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        c[i] = a[i];
}

__attribute__((noinline))
static void k_scale(double *restrict b, const double *restrict c, double s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = s * c[i];
}

__attribute__((noinline))
static void k_add(double *restrict c, const double *restrict a, const double *restrict b,
                  size_t n)
{
    for (size_t i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}

__attribute__((noinline))
static void k_triad(double *restrict a, const double *restrict b, const double *restrict c,
                    double s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}

static int close_to(double got, double want)
{
    return fabs(got - want) <= 1e-8 * fabs(want);
}

int main(int argc, char **argv)
{
    static const struct ex_config cfg = { DEFAULT_MB, DEFAULT_ITERS, QUICK_MB, QUICK_ITERS,
                                          MAX_MB };
    const struct ex_args args = ex_parse_args(argc, argv, "stream", &cfg);
    const long mb = args.mb, iters = args.iters;

    const size_t n = (size_t)(((uint64_t)mb << 20) / 3 / sizeof(double));
    /* s*s + 2*s = 1 keeps the values bounded: a is multiplied by s^2+2s per iteration. */
    const double s = 0.41421356237309503;

    double *a = malloc(n * sizeof(double)); /* hmtune-site: a */
    double *b = malloc(n * sizeof(double)); /* hmtune-site: b */
    double *c = malloc(n * sizeof(double)); /* hmtune-site: c */
    if (!a || !b || !c) {
        fprintf(stderr, "stream: out of memory\n");
        return 2;
    }
    for (size_t i = 0; i < n; i++) {
        a[i] = 1.0;
        b[i] = 2.0;
        c[i] = 0.0;
    }

    double t0 = now_s();
    for (long it = 0; it < iters; it++) {
        k_copy(c, a, n);
        k_scale(b, c, s, n);
        k_add(c, a, b, n);
        k_triad(a, b, c, s, n);
    }
    double t1 = now_s();

    /* Closed form (same recurrence on scalars), then check every element. */
    double ea = 1.0, eb = 2.0, ec = 0.0;
    for (long it = 0; it < iters; it++) {
        ec = ea;
        eb = s * ec;
        ec = ea + eb;
        ea = eb + s * ec;
    }
    for (size_t i = 0; i < n; i++) {
        if (!close_to(a[i], ea) || !close_to(b[i], eb) || !close_to(c[i], ec)) {
            fprintf(stderr, "stream: validation failed at element %zu\n", i);
            return 2;
        }
    }

    double secs = t1 - t0;
    double bytes = 10.0 * sizeof(double) * (double)n * (double)iters;
    printf("kernel_time_s=%.6f bandwidth_MBs=%.1f\n", secs, secs > 0 ? bytes / secs / 1e6 : 0.0);

    free(c);
    free(b);
    free(a);
    return 0;
}
