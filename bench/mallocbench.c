/* mallocbench — cost of malloc+free pairs from a call chain of a given depth, per
 * thread: `mallocbench THREADS PAIRS SIZE [DEPTH]`, prints ns_per_pair=<median of
 * the threads' figures>. Used by bench_collect.py with and without the tracer. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long g_pairs;
static size_t g_size;
static int g_depth;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline)) static long loop(void)
{
    long sum = 0;
    for (long i = 0; i < g_pairs; i++) {
        volatile char *p = malloc(g_size);
        p[0] = (char)i;
        sum += p[0];
        free((void *)p);
    }
    return sum;
}

/* depth-1 frames of our own above the loop, so the tracer unwinds DEPTH frames */
__attribute__((noinline)) static long nest(int d)
{
    long r = d > 1 ? nest(d - 1) : loop();
    __asm__ volatile("" ::: "memory");
    return r;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

struct result { double wall, cpu; };

/* wall and this thread's CPU ns per pair (a VM whose vCPUs share a core
 * stretches wall time, not CPU time) */
static void *worker(void *arg)
{
    struct result *out = arg;
    nest(g_depth > 3 ? g_depth - 3 : 1);          /* warm-up: first-call costs */
    double t0 = now(), c0 = cpu_now();
    nest(g_depth > 3 ? g_depth - 3 : 1);
    out->wall = (now() - t0) / (double)g_pairs;
    out->cpu = (cpu_now() - c0) / (double)g_pairs;
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: mallocbench THREADS PAIRS SIZE [DEPTH]\n");
        return 2;
    }
    int n = atoi(argv[1]);
    g_pairs = atol(argv[2]);
    g_size = (size_t)atol(argv[3]);
    g_depth = argc > 4 ? atoi(argv[4]) : 8;
    if (n < 1 || n > 256 || g_pairs < 1) {
        fprintf(stderr, "mallocbench: bad arguments\n");
        return 2;
    }
    pthread_t th[256];
    struct result res[256];
    double wall[256], cpu[256];
    for (int i = 0; i < n; i++)
        pthread_create(&th[i], NULL, worker, &res[i]);
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        wall[i] = res[i].wall;
        cpu[i] = res[i].cpu;
    }
    qsort(wall, (size_t)n, sizeof(double), cmp);
    qsort(cpu, (size_t)n, sizeof(double), cmp);
    printf("ns_per_pair=%.1f cpu_ns_per_pair=%.1f\n", wall[n / 2], cpu[n / 2]);
    return 0;
}
