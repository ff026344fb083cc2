/* test_keep.c — freed blocks kept for reuse (interpose/hmi_keep.c), through the tier
 * backends' entry points: a freed block of its own or split object comes back, with its
 * pages and its placement, for the next request of the same shape; calloc, another
 * shape, a capacity refusal, HMTUNE_KEEP_FREED and closing the tier give kept blocks
 * back; 4 threads never get the same block at once; a fork child has its own copy.
 * The hugetlb cases reserve hugepages through /proc/sys/vm/nr_hugepages as root (and
 * put the old value back); without root they are skipped with a note. */
#include "hmt.h"
#include "hmi_backend.h"
#include "smaps_split.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1ull << 20)

enum { T_THP = 0, T_HUGE = 1 };

static char reason[HMI_REASON_MAX];

static int open_tier(uint32_t i, const char *spec, uint64_t cap)
{
    int rc = hmi_backend_open(i, "t", spec, cap, cap == 0, reason, sizeof reason);
    if (rc)
        fprintf(stderr, "  cannot open %s: %s\n", spec, reason);
    return rc;
}

static struct hmi_backend_stats stats(uint32_t i)
{
    struct hmi_backend_stats s;
    hmi_backend_stats(i, &s);
    return s;
}

/* 1 when some mapping holds p (/proc/self/maps). */
static int mapped(const void *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    unsigned long lo, hi;
    int in = 0;
    while (f && !in && fscanf(f, "%lx-%lx%*[^\n]", &lo, &hi) == 2)
        in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    if (f)
        fclose(f);
    return in;
}

/* A whole block: freed, it is kept (charged, not used) and comes back with its data
 * for the same length; calloc and another length give it back instead. */
static void test_whole_block(void)
{
    CHECK(open_tier(T_THP, "thp", 64 * MiB) == 0);
    char *p = hmi_backend_alloc(T_THP, 8 * MiB, 0);
    CHECK(p != NULL);
    if (!p)
        return;
    memset(p, 0x11, 8 * MiB);
    hmi_backend_free(T_THP, p);
    struct hmi_backend_stats s = stats(T_THP);
    CHECK(s.used == 0 && s.kept == 8 * MiB && s.freed == 1 && s.reused == 0);
    CHECK(mapped(p) && hmi_owner(p) == HMI_OWNER_LIBC);
    /* a request a little smaller rounds to the same length */
    char *q = hmi_backend_alloc(T_THP, 8 * MiB - 100, 0);
    CHECK(q == p && hmi_owner(q) == T_THP);
    CHECK(hmi_backend_usable_size(T_THP, q) == 8 * MiB);
    s = stats(T_THP);
    CHECK(s.used == 8 * MiB && s.kept == 0 && s.reused == 1 && s.placed == 2);
    if (q)
        CHECK(q[0] == 0x11 && q[8 * MiB - 1] == 0x11);     /* not mapped again */
    hmi_backend_free(T_THP, q);
    /* zeroed memory is never a kept block: the kept one is unmapped first */
    char *z = hmi_backend_alloc_zeroed(T_THP, 8 * MiB, 0);
    CHECK(z && hmt_all_zero(z, 8 * MiB));
    s = stats(T_THP);
    CHECK(s.used == 8 * MiB && s.kept == 0 && s.reused == 1);
    hmi_backend_free(T_THP, z);
    /* another length: the kept block is unmapped before the new one is charged */
    char *w = hmi_backend_alloc(T_THP, 10 * MiB, 4 * MiB);
    CHECK(w && (uintptr_t)w % (4 * MiB) == 0);
    s = stats(T_THP);
    CHECK(s.used == 10 * MiB && s.kept == 0 && s.reused == 1 && s.high_water == 10 * MiB);
    hmi_backend_free(T_THP, w);
    /* a kept block whose start does not meet a larger alignment is not handed out */
    char *v = hmi_backend_alloc(T_THP, 10 * MiB, 64 * MiB);
    CHECK(v && (uintptr_t)v % (64 * MiB) == 0);
    CHECK(v == w || (uintptr_t)w % (64 * MiB) != 0);
    hmi_backend_free(T_THP, v);
    /* closing the tier unmaps what it keeps */
    CHECK(stats(T_THP).kept == 10 * MiB);
    CHECK(hmi_backend_close(T_THP) == 0);
    CHECK(!mapped(v));
}

/* A kept block's charge goes back when another request would be refused without it. */
static void test_capacity(void)
{
    CHECK(open_tier(T_THP, "thp", 10 * MiB) == 0);
    char *p = hmi_backend_alloc(T_THP, 8 * MiB, 0);
    CHECK(p != NULL);
    hmi_backend_free(T_THP, p);
    CHECK(stats(T_THP).kept == 8 * MiB);
    /* 512 KiB objects go to the small-object arena: all 20 fit once the block is gone */
    void *o[24];
    int n = 0;
    while (n < 24 && (o[n] = hmi_backend_alloc(T_THP, 512 << 10, 0)) != NULL)
        n++;
    CHECK(n == 20);
    struct hmi_backend_stats s = stats(T_THP);
    CHECK(s.kept == 0 && s.used == 10 * MiB && s.not_fitting == 1);
    CHECK(!mapped(p) || hmi_owner(p) == T_THP);     /* unmapped, or an arena chunk now */
    while (n--)
        hmi_backend_free(T_THP, o[n]);
    CHECK(hmi_backend_close(T_THP) == 0);
}

/* HMTUNE_KEEP_FREED: blocks over it are unmapped; 0 keeps none. */
static void test_limit(void)
{
    setenv("HMTUNE_KEEP_FREED", "12M", 1);
    CHECK(open_tier(T_THP, "thp", 0) == 0);
    char *a = hmi_backend_alloc(T_THP, 8 * MiB, 0), *b = hmi_backend_alloc(T_THP, 6 * MiB, 0);
    char *c = hmi_backend_alloc(T_THP, 16 * MiB, 0);
    CHECK(a && b && c);
    hmi_backend_free(T_THP, a);
    hmi_backend_free(T_THP, b);                     /* 8 + 6 > 12: not kept */
    hmi_backend_free(T_THP, c);                     /* over the limit alone */
    CHECK(stats(T_THP).kept == 8 * MiB);
    CHECK(mapped(a) && !mapped(b) && !mapped(c));
    CHECK(hmi_backend_close(T_THP) == 0);
    setenv("HMTUNE_KEEP_FREED", "0", 1);
    CHECK(open_tier(T_THP, "thp", 0) == 0);
    a = hmi_backend_alloc(T_THP, 8 * MiB, 0);
    CHECK(a != NULL);
    hmi_backend_free(T_THP, a);
    CHECK(stats(T_THP).kept == 0 && !mapped(a));
    CHECK(hmi_backend_close(T_THP) == 0);
    setenv("HMTUNE_KEEP_FREED", "lots", 1);         /* malformed: the default */
    CHECK(open_tier(T_THP, "thp", 0) == 0);
    a = hmi_backend_alloc(T_THP, 8 * MiB, 0);
    hmi_backend_free(T_THP, a);
    CHECK(stats(T_THP).kept == 8 * MiB);
    CHECK(hmi_backend_close(T_THP) == 0);
    unsetenv("HMTUNE_KEEP_FREED");
}

/* A split object of tier i comes back for the same site's ranges with its range still
 * in the tier (hugetlb: its hugepages; thp: advised) and the placed bytes recounted;
 * another site's ranges, calloc, or an object with a range left out get a fresh one. */
static void split_case(uint32_t i, int hugetlb)
{
    static const struct hmi_range r[] = { { 2 * MiB, 6 * MiB } };
    static const struct hmi_range other[] = { { 2 * MiB, 6 * MiB } };
    uint64_t placed[2] = { 0, 0 }, mask = 0;
    long f0 = hmt_huge_free();
    char *p = hmi_backend_alloc_split(i, 16 * MiB, 0, 0, r, 1, placed, &mask);
    CHECK(p && mask == 1 && placed[0] == 4 * MiB);
    if (!p)
        return;
    memset(p, 0x22, 16 * MiB);
    hmi_backend_free(i, p);
    struct hmi_backend_stats s = stats(i);
    CHECK(s.kept == 4 * MiB && s.used == 0 && s.split_placed == 1);
    if (hugetlb)
        CHECK(hmt_huge_free() == f0 - 2);           /* the pages stay the block's */
    /* a slightly smaller object (same pages): the same block, the range recounted */
    char *q = hmi_backend_alloc_split(i, 16 * MiB - 100, 0, 0, r, 1, placed, &mask);
    CHECK(q == p && mask == 1 && placed[0] == 4 * MiB);
    s = stats(i);
    CHECK(s.kept == 0 && s.used == 4 * MiB && s.reused == 1 && s.split_placed == 2 &&
          s.split_bytes == 8 * MiB);
    if (q) {
        CHECK(q[0] == 0x22 && q[3 * MiB] == 0x22 && q[16 * MiB - 101] == 0x22);
        struct split_view v;
        smaps_view(q, 16 * MiB, 2 * MiB, 6 * MiB, &v);
        CHECK(v.mapped == 16 * MiB);
        if (hugetlb)
            CHECK(v.huge_in == 4 * MiB && v.huge_out == 0);
        else
            CHECK(v.thp_in == 4 * MiB && v.thp_out == 0);
        hmi_backend_free(i, q);
    }
    /* the same ranges of another site: not that block */
    char *o = hmi_backend_alloc_split(i, 16 * MiB, 0, 0, other, 1, placed, &mask);
    CHECK(o && mask == 1 && stats(i).reused == 1 && stats(i).kept == 0);
    if (o) {
        CHECK(o[3 * MiB] == 0 && o[0] == 0);        /* fresh */
        hmi_backend_free(i, o);
    }
    /* calloc: fresh and zero */
    char *z = hmi_backend_alloc_split(i, 16 * MiB, 0, 1, other, 1, placed, &mask);
    CHECK(z && hmt_all_zero(z, 16 * MiB) && stats(i).reused == 1);
    if (z)
        hmi_backend_free(i, z);
    CHECK(stats(i).kept == 4 * MiB);
}

/* A split object with a range left out (capacity) is not kept: a later one may fit. */
static void split_partial(uint32_t i)
{
    static const struct hmi_range c[] = { { 0, 4 * MiB }, { 6 * MiB, 10 * MiB } };
    uint64_t placed[2], mask;
    char *p = hmi_backend_alloc_split(i, 12 * MiB, 0, 0, c, 2, placed, &mask);
    CHECK(p && mask == 1);
    hmi_backend_free(i, p);
    struct hmi_backend_stats s = stats(i);
    CHECK(s.kept == 0 && s.used == 0 && s.split_refused == 1);
}

static void test_split_thp(void)
{
    CHECK(open_tier(T_THP, "thp", 64 * MiB) == 0);
    split_case(T_THP, 0);
    CHECK(hmi_backend_close(T_THP) == 0);
    CHECK(open_tier(T_THP, "thp", 6 * MiB) == 0);
    split_partial(T_THP);
    CHECK(hmi_backend_close(T_THP) == 0);
}

static void test_hugetlb(void)
{
    long old = hmt_huge_reserve(6);
    if (old < 0) {
        fprintf(stderr, "  cannot reserve hugepages: the hugetlb cases not run\n");
        return;
    }
    long f0 = hmt_huge_free();
    CHECK(open_tier(T_HUGE, "hugetlb", 64 * MiB) == 0);
    split_case(T_HUGE, 1);
    CHECK(hmt_huge_free() == f0 - 2);
    CHECK(hmi_backend_close(T_HUGE) == 0);
    CHECK(hmt_huge_free() == f0);
    CHECK(open_tier(T_HUGE, "hugetlb", 6 * MiB) == 0);
    split_partial(T_HUGE);
    CHECK(hmi_backend_close(T_HUGE) == 0);
    /* the pool holds 6 free pages; a kept 8 MiB block (4 pages) is given back before a
     * 12 MiB one (6 pages) is mapped: no more held than was live at once */
    CHECK(open_tier(T_HUGE, "hugetlb", 0) == 0);
    char *a = hmi_backend_alloc(T_HUGE, 8 * MiB, 0);
    CHECK(a != NULL);
    if (a)
        memset(a, 1, 8 * MiB);
    hmi_backend_free(T_HUGE, a);
    CHECK(hmt_huge_free() == f0 - 4);
    char *b = hmi_backend_alloc(T_HUGE, 12 * MiB, 0);
    CHECK(b != NULL);
    struct hmi_backend_stats s = stats(T_HUGE);
    CHECK(s.map_failed == 0 && s.kept == 0 && s.used == 12 * MiB);
    if (b) {
        memset(b, 2, 12 * MiB);
        CHECK(hmt_huge_free() == f0 - 6);
        hmi_backend_free(T_HUGE, b);
    }
    CHECK(hmi_backend_close(T_HUGE) == 0);
    CHECK(hmt_huge_free() == f0);
    CHECK(hmt_write_long(HMT_NR_HUGEPAGES, old) == 0);
}

/* 4 threads allocate, stamp, check and free blocks of one length: a block handed to
 * two threads at once would show another thread's stamp. */
#define ROUNDS 3000
static void *hammer(void *arg)
{
    long id = (long)(intptr_t)arg, bad = 0;
    for (int k = 0; k < ROUNDS; k++) {
        volatile long *p = hmi_backend_alloc(T_THP, 4 * MiB, 0);
        if (!p) {
            bad++;
            continue;
        }
        p[0] = id, p[(4 * MiB) / sizeof(long) - 1] = id;
        for (int spin = 0; spin < 50; spin++)
            bad += p[0] != id;
        bad += p[(4 * MiB) / sizeof(long) - 1] != id;
        hmi_backend_free(T_THP, (void *)p);
    }
    return (void *)(intptr_t)bad;
}

static void test_threads(void)
{
    CHECK(open_tier(T_THP, "thp", 0) == 0);
    pthread_t t[4];
    for (long k = 0; k < 4; k++)
        CHECK(pthread_create(&t[k], NULL, hammer, (void *)(intptr_t)(k + 1)) == 0);
    long bad = 0;
    for (int k = 0; k < 4; k++) {
        void *r;
        pthread_join(t[k], &r);
        bad += (long)(intptr_t)r;
    }
    CHECK(bad == 0);
    struct hmi_backend_stats s = stats(T_THP);
    CHECK(s.placed == 4 * ROUNDS && s.freed == 4 * ROUNDS && s.used == 0);
    CHECK(s.reused > 4 * ROUNDS / 2);               /* most rounds took a kept block */
    CHECK(s.kept > 0 && s.kept <= 4 * 4 * MiB);
    fprintf(stderr, "  %llu of %d blocks were kept ones\n", (unsigned long long)s.reused,
            4 * ROUNDS);
    CHECK(hmi_backend_close(T_THP) == 0);
}

/* A fork child takes its copy of a kept block; the parent's stays its own. */
static void test_fork(void)
{
    CHECK(open_tier(T_THP, "thp", 0) == 0);
    char *p = hmi_backend_alloc(T_THP, 4 * MiB, 0);
    CHECK(p != NULL);
    if (!p)
        return;
    memset(p, 0x44, 4 * MiB);
    hmi_backend_free(T_THP, p);
    pid_t pid = fork();
    if (pid == 0) {
        char *c = hmi_backend_alloc(T_THP, 4 * MiB, 0);
        int ok = c == p && c[0] == 0x44 && stats(T_THP).reused == 1;
        if (c)
            memset(c, 0x55, 4 * MiB);
        _exit(ok ? 0 : 1);
    }
    int st = -1;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char *q = hmi_backend_alloc(T_THP, 4 * MiB, 0);
    CHECK(q == p && q[0] == 0x44 && q[4 * MiB - 1] == 0x44);
    hmi_backend_free(T_THP, q);
    CHECK(hmi_backend_close(T_THP) == 0);
}

int main(void)
{
    unsetenv("HMTUNE_KEEP_FREED");
    RUN(test_whole_block);
    RUN(test_capacity);
    RUN(test_limit);
    RUN(test_split_thp);
    RUN(test_hugetlb);
    RUN(test_threads);
    RUN(test_fork);
    HMT_END();
}
