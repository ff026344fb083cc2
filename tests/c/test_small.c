/* test_small.c — small-call sampling's parts without LD_PRELOAD (collect/hmc_small.c):
 * the knob's parser, the per-thread countdown, the gap distribution and the marks of
 * recorded small blocks (set, read, cleared from another thread). */
#include "hmt.h"
#include "hmc_small.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void test_parse(void)
{
    uint64_t n = 7;
    CHECK(hmc_small_parse("off", &n) == 0 && n == 0);
    CHECK(hmc_small_parse("1", &n) == 0 && n == 1);
    CHECK(hmc_small_parse("32", &n) == 0 && n == 32);
    CHECK(hmc_small_parse("1048576", &n) == 0 && n == 1048576);
    n = 5;
    CHECK(hmc_small_parse("0", &n) == -2 && n == 5);
    CHECK(hmc_small_parse("000", &n) == -2);
    CHECK(hmc_small_parse("1048577", &n) == -3 && n == 5);
    CHECK(hmc_small_parse("99999999999999999999999999", &n) == -3);
    CHECK(hmc_small_parse("", &n) == -1);
    CHECK(hmc_small_parse("-3", &n) == -1);
    CHECK(hmc_small_parse("32x", &n) == -1);
    CHECK(hmc_small_parse(" 8", &n) == -1);
    CHECK(hmc_small_parse("of", &n) == -1);
    CHECK(hmc_small_parse("offf", &n) == -1);
    CHECK(n == 5);
}

/* Gaps of mean n: the sample mean of 200000 draws is within 5 standard errors of n
 * (a geometric variable of mean n has variance n(n - 1)), and P(gap = 1) is 1/n. */
static void test_draw(void)
{
    static const uint64_t ns[] = { 2, 8, 32, 1000 };
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        uint64_t n = ns[k];
        const int draws = 200000;
        double sum = 0;
        int ones = 0;
        for (int i = 0; i < draws; i++) {
            int64_t g = hmc_small_draw(n);
            CHECK(g >= 1);
            sum += (double)g;
            ones += g == 1;
        }
        double mean = sum / draws, se = sqrt((double)n * (double)(n - 1) / draws);
        CHECK(fabs(mean - (double)n) < 5 * se);
        double p = 1.0 / (double)n, pse = sqrt(p * (1 - p) / draws);
        CHECK(fabs((double)ones / draws - p) < 5 * pse);
    }
    CHECK(hmc_small_draw(1) == 1);
}

/* The entry points' countdown: with the interval set, about 1 call in n picks; off,
 * none does and the thread's countdown leaves the slow path for good. */
static void test_pick(void)
{
    hmc_small_set(16);
    hmc_small_left = 0;
    long picks = 0, calls = 320000;
    for (long i = 0; i < calls; i++)
        if (--hmc_small_left <= 0)            /* what an entry point does */
            picks += hmc_small_pick();
    double want = (double)calls / 16, sd = sqrt(want);
    CHECK(fabs((double)picks - want) < 5 * sd);
    hmc_small_set(0);
    hmc_small_left = 0;
    CHECK(hmc_small_pick() == 0 && hmc_small_left == INT64_MAX);
    hmc_small_set(1);
    hmc_small_left = 0;
    int all = 1;
    for (int i = 0; i < 100; i++)
        all &= --hmc_small_left <= 0 && hmc_small_pick() == 1;
    CHECK(all);
    hmc_small_left = 5;
    CHECK(hmc_small_pick() == 0);           /* the slow path taken for another reason */
}

struct unmark_arg { char *base; int n, cleared; };

static void *unmark_all(void *p)
{
    struct unmark_arg *a = p;
    for (int i = 0; i < a->n; i++)
        a->cleared += hmc_small_unmark(a->base + 16 * i);
    return NULL;
}

static void test_marks(void)
{
    enum { N = 4096 };
    char *heap = malloc(16 * N + 64);
    CHECK(heap != NULL);
    if (!heap)
        return;
    char *base = (char *)(((uintptr_t)heap + 15) & ~(uintptr_t)15);
    for (int i = 0; i < N; i += 2)
        CHECK(hmc_small_mark(base + 16 * i) == 0);
    int right = 1;
    for (int i = 0; i < N; i++) {
        right &= hmc_small_marked(base + 16 * i) == !(i & 1);
        right &= !hmc_small_marked(base + 16 * i + 8);   /* the next granule */
    }
    CHECK(right);
    CHECK(!hmc_small_marked(base + 1));                   /* not 8-aligned: never */
    CHECK(hmc_small_mark(base + 4) == -1);
    CHECK(hmc_small_mark((void *)(uintptr_t)(1ull << 47)) == -1);   /* above the map */
    CHECK(!hmc_small_marked((void *)(uintptr_t)(1ull << 47)));
    CHECK(!hmc_small_marked(NULL) && hmc_small_unmark(NULL) == 0);
    /* another thread clears them: each mark is seen cleared exactly once */
    struct unmark_arg a = { base, N, 0 };
    pthread_t th;
    CHECK(pthread_create(&th, NULL, unmark_all, &a) == 0);
    pthread_join(th, NULL);
    CHECK(a.cleared == N / 2);
    int none = 1;
    for (int i = 0; i < N; i++)
        none &= !hmc_small_marked(base + 16 * i);
    CHECK(none);
    CHECK(hmc_small_unmark(base) == 0);
    free(heap);
}

int main(void)
{
    RUN(test_parse);
    RUN(test_draw);
    RUN(test_pick);
    RUN(test_marks);
    HMT_END();
}
