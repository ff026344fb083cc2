/* ex_common.h — what the example programs share: a monotonic clock and their common
 * command line, [-s MB] [-n ITERS] [-q], with -q a quick configuration for the tests
 * (its own footprint unless -s is given, its own iteration count unless -n is). */
#ifndef EX_COMMON_H
#define EX_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void ex_usage(const char *name)
{
    fprintf(stderr, "usage: %s [-s MB] [-n ITERS] [-q]\n", name);
    exit(2);
}

static long ex_parse_pos(const char *name, const char *s, long max)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 1 || v > max)
        ex_usage(name);
    return v;
}

struct ex_config {
    long mb, iters;          /* defaults */
    long quick_mb, quick_iters, max_mb;
};

struct ex_args {
    long mb, iters;
    int quick;
};

static struct ex_args ex_parse_args(int argc, char **argv, const char *name,
                                    const struct ex_config *c)
{
    struct ex_args a = { c->mb, -1, 0 };
    int have_s = 0, opt;
    while ((opt = getopt(argc, argv, "s:n:q")) != -1) {
        switch (opt) {
        case 's': a.mb = ex_parse_pos(name, optarg, c->max_mb); have_s = 1; break;
        case 'n': a.iters = ex_parse_pos(name, optarg, 1000000); break;
        case 'q': a.quick = 1; break;
        default: ex_usage(name);
        }
    }
    if (optind != argc)
        ex_usage(name);
    if (a.quick && !have_s)
        a.mb = c->quick_mb;
    if (a.iters < 0)
        a.iters = a.quick ? c->quick_iters : c->iters;
    return a;
}

#endif
