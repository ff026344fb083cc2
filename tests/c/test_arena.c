/* test_arena.c — the small-object arena (interpose/hmi_arena.c) against the model the
 * advisor and `hmtune run --reserve-hugepages` count it with (hmtune/advisor/
 * granularity.py cut, arena_fit.footprint, workflows/reserve.arena_pages): per class,
 * its most objects live at once plus, for a class of up to 8 KiB, what each thread
 * stripe but the one cutting a slab may hold back (3 batches less one; a batch is
 * 1 KiB of objects, at least one), in slabs, and per slab size in whole 2 MiB chunks. The same objects are allocated by
 * 1, 4 and 16 threads, freed by their own thread, by another one, or all by one
 * thread, round after round: the chunks mapped stay within the model (the same count
 * at every thread count here: tests/py/test_arena_fit.py checks the advisor's and the
 * reservation's count of this workload) and the charges are the objects' classes.
 * Then the reasons counted for requests that did not fit (hmi_backend_stats.refused).
 * Each thread count runs in a child process of its own, so that its threads get
 * stripes of their own (hm_util.h never gives a stripe back). */
#include "hmt.h"
#include "hmi_arena.h"
#include "hmi_backend.h"
#include "hmi_pagemap.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>

#define MiB (1ull << 20)
#define ROUNDS 4
#define MAX_THREADS 16

static char reason[HMI_REASON_MAX];

/* The workload: objects of each size per round, over all threads (divisible by 16). */
static const size_t sizes[] = { 48, 200, 640, 2000, 6000, 20000 };
static const uint32_t counts[] = { 4096, 1024, 512, 512, 256, 128 };
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define PER_THREAD_MAX (4096 + 1024 + 512 + 512 + 256 + 128)

enum { FREE_OWN, FREE_NEXT, FREE_ONE };

/* The chunks the model says for this workload at `stripes` stripes; slack 0: the
 * objects live at once only (what the arena cannot go below). */
static uint64_t model_chunks(unsigned stripes, int slack)
{
    uint64_t bytes[HMI_SLAB_CODES] = { 0 };
    for (size_t k = 0; k < NSIZES; k++) {
        unsigned cls = (unsigned)hmi_arena_class(sizes[k], 16);
        uint64_t cs = hmi_arena_class_size(cls);
        unsigned code = hmi_arena_slab_code(cls);
        uint64_t ss = 64ull << 10 << code, per = ss / cs;
        uint64_t batch = cs < 1024 ? 1024 / cs : 1;
        uint64_t held = cs <= 8192 ? 3 * batch - 1 : 0;
        uint64_t cut = counts[k] + (slack ? (stripes - 1) * held : 0);
        bytes[code] += (cut + per - 1) / per * ss;
    }
    uint64_t chunks = 0;
    for (unsigned c = 0; c < HMI_SLAB_CODES; c++)
        chunks += (bytes[c] + HMI_ARENA_CHUNK - 1) / HMI_ARENA_CHUNK;
    return chunks;
}

struct run {
    uint32_t tier;
    unsigned threads, freer;
    pthread_barrier_t step;
    void *objs[MAX_THREADS][PER_THREAD_MAX];
    uint32_t n[MAX_THREADS];
    int failed;
};

struct targ {
    struct run *r;
    unsigned t;
};

/* Free what thread t frees this round: its own objects, its neighbour's, or (thread 0
 * of FREE_ONE) every thread's. */
static void free_some(struct run *r, unsigned t)
{
    unsigned lo = t, hi = t + 1;
    if (r->freer == FREE_NEXT)
        lo = (t + 1) % r->threads, hi = lo + 1;
    else if (r->freer == FREE_ONE)
        lo = 0, hi = t == 0 ? r->threads : 0;
    for (unsigned w = lo; w < hi; w++)
        for (uint32_t i = 0; i < r->n[w]; i++)
            hmi_backend_free((int)r->tier, r->objs[w][i]);
}

static void *body(void *arg)
{
    struct targ *a = arg;
    struct run *r = a->r;
    unsigned t = a->t;
    for (int round = 0; round < ROUNDS; round++) {
        uint32_t n = 0;
        for (size_t k = 0; k < NSIZES; k++) {
            for (uint32_t i = 0; i < counts[k] / r->threads; i++) {
                char *p = hmi_backend_alloc(r->tier, sizes[k], 0);
                if (!p || hmi_owner(p) != (int)r->tier) {
                    __atomic_store_n(&r->failed, 1, __ATOMIC_RELAXED);
                    continue;
                }
                memset(p, (int)(t + 1), sizes[k]);
                r->objs[t][n++] = p;
            }
        }
        r->n[t] = n;
        pthread_barrier_wait(&r->step);     /* every object live: the main thread looks */
        pthread_barrier_wait(&r->step);
        free_some(r, t);
        pthread_barrier_wait(&r->step);
    }
    return NULL;
}

/* One thread count and way of freeing, in this (child) process; the checks' failures. */
static void scenario(unsigned threads, unsigned freer)
{
    static struct run r;
    memset(&r, 0, sizeof r);
    r.tier = 1;
    r.threads = threads;
    r.freer = freer;
    CHECK(hmi_backend_open(r.tier, "t", "numa:0", 1024 * MiB, 0, reason, sizeof reason) == 0);
    pthread_barrier_init(&r.step, NULL, threads + 1);
    pthread_t th[MAX_THREADS];
    struct targ a[MAX_THREADS];
    for (unsigned t = 0; t < threads; t++) {
        a[t] = (struct targ){ &r, t };
        CHECK(pthread_create(&th[t], NULL, body, &a[t]) == 0);
    }
    uint64_t charged = 0;
    for (size_t k = 0; k < NSIZES; k++)
        charged += counts[k] * hmi_arena_class_size((unsigned)hmi_arena_class(sizes[k], 16));
    uint64_t lo = model_chunks(threads, 0), hi = model_chunks(threads, 1), chunks = 0;
    for (int round = 0; round < ROUNDS; round++) {
        pthread_barrier_wait(&r.step);
        struct hmi_backend_stats s;
        hmi_backend_stats(r.tier, &s);
        /* the charges are the objects' classes, whatever the threads (exact: the
         * stripes' reserves are not counted in used) */
        CHECK(s.used == charged);
        chunks = s.chunks;
        CHECK(chunks >= lo && chunks <= hi);
        if (chunks < lo || chunks > hi)
            fprintf(stderr, "  %u thread(s), freer %u, round %d: %llu chunks, model %llu-%llu\n",
                    threads, freer, round, (unsigned long long)chunks,
                    (unsigned long long)lo, (unsigned long long)hi);
        pthread_barrier_wait(&r.step);
        pthread_barrier_wait(&r.step);
    }
    for (unsigned t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    CHECK(!r.failed);
    struct hmi_backend_stats s;
    hmi_backend_stats(r.tier, &s);
    CHECK(s.used == 0 && s.placed == s.freed && s.not_fitting == 0);
    CHECK(s.chunks == chunks);              /* nothing mapped after the first peak's */
    if (freer == FREE_OWN)
        fprintf(stderr, "  %u thread(s): %llu chunks (model %llu-%llu)\n", threads,
                (unsigned long long)chunks, (unsigned long long)lo, (unsigned long long)hi);
    CHECK(hmi_backend_close(r.tier) == 0);
}

static void in_child(unsigned threads, unsigned freer)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        scenario(threads, freer);
        fflush(stderr);
        _exit(hmt_failed_checks > 100 ? 100 : hmt_failed_checks);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st));
    if (WIFEXITED(st))
        hmt_failed_checks += WEXITSTATUS(st);
}

/* The model gives the same chunks at 1, 4 and 16 threads for this workload, and the
 * arena stays within it however the objects are freed. */
static void test_threads_1(void)
{
    CHECK(model_chunks(1, 1) == model_chunks(16, 1) && model_chunks(16, 1) == 4);
    for (unsigned f = FREE_OWN; f <= FREE_ONE; f++)
        in_child(1, f);
}

static void test_threads_4(void)
{
    for (unsigned f = FREE_OWN; f <= FREE_ONE; f++)
        in_child(4, f);
}

static void test_threads_16(void)
{
    for (unsigned f = FREE_OWN; f <= FREE_ONE; f++)
        in_child(16, f);
}

/* ---- why requests did not fit ---- */

static uint64_t refused_sum(const struct hmi_backend_stats *s)
{
    uint64_t n = 0;
    for (int w = 0; w < HMI_WHY_N; w++)
        n += s->refused[w];
    return n;
}

/* Capacity, alignment, a split object with no range in the tier, a request too large
 * for the page map, the arena's chunk table full; on hugetlb (as root) the kernel's
 * pool run dry. Each refusal is counted once, under its reason, and not_fitting is
 * their sum. */
static void test_not_fitting_reasons(void)
{
    pid_t pid = fork();
    if (pid != 0) {
        int st = 0;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st));
        if (WIFEXITED(st))
            hmt_failed_checks += WEXITSTATUS(st);
        return;
    }
    /* in a child: the chunk table stays full after this test */
    struct hmi_backend_stats s;
    CHECK(hmi_backend_open(2, "t", "numa:0", 4 * MiB, 0, reason, sizeof reason) == 0);
    void *a = hmi_backend_alloc(2, 3 * MiB, 0);
    CHECK(a != NULL);
    CHECK(hmi_backend_alloc(2, 2 * MiB, 0) == NULL);               /* capacity */
    CHECK(hmi_backend_alloc(2, 100, 48) == NULL);                  /* alignment */
    CHECK(hmi_backend_alloc(2, 100, 48) == NULL);
    /* a split object whose only range lies past its end: nothing of it in the tier */
    struct hmi_range rg = { .start = 8 * MiB, .end = 10 * MiB };
    uint64_t placed[1], mask;
    CHECK(hmi_backend_alloc_split(2, 4 * MiB, 0, 0, &rg, 1, placed, &mask) == NULL);
    hmi_backend_free(2, a);
    hmi_backend_stats(2, &s);
    CHECK(s.not_fitting == 4 && refused_sum(&s) == 4);
    CHECK(s.refused[HMI_WHY_CAPACITY] == 1 && s.refused[HMI_WHY_ALIGN] == 2 &&
          s.refused[HMI_WHY_SPLIT] == 1 && s.map_failed == 0);
    CHECK(hmi_backend_close(2) == 0);
    /* unlimited: too large for the page map (more than 2^47 bytes) */
    CHECK(hmi_backend_open(2, "t", "numa:0", 0, 1, reason, sizeof reason) == 0);
    CHECK(hmi_backend_alloc(2, (1ull << 47) + 4096, 0) == NULL);
    /* the chunk table full: a new chunk cannot be recorded */
    char *small = hmi_backend_alloc(2, 64, 0);
    CHECK(small != NULL);
    while (hmi_chunk_slot() >= 0)
        ;
    CHECK(hmi_backend_alloc(2, 200000, 0) == NULL);                /* its class's first chunk */
    hmi_backend_free(2, small);
    hmi_backend_stats(2, &s);
    CHECK(s.not_fitting == 2 && refused_sum(&s) == 2);
    CHECK(s.refused[HMI_WHY_OTHER] == 1 && s.refused[HMI_WHY_CHUNKS] == 1);
    CHECK(hmi_backend_close(2) == 0);
    _exit(hmt_failed_checks > 100 ? 100 : hmt_failed_checks);
}

/* hugetlb with a capacity beyond the pool: the kernel refuses the mapping (counted in
 * map_failed too), for blocks and for arena chunks. The pool may hold free hugepages
 * before the test (the host's own, or another run's): the capacity is 4 pages more
 * than are free once 2 are added. */
enum { KERNEL_POOL_MAX = 512 };
static void test_not_fitting_kernel(void)
{
    long old = hmt_huge_reserve(2);
    if (old < 0) {
        fprintf(stderr, "  cannot reserve 2 hugepages (not root?): skipped\n");
        return;
    }
    long avail = hmt_huge_available();
    if (avail > KERNEL_POOL_MAX) {
        fprintf(stderr, "  %ld hugepages free: too many to drain, skipped\n", avail);
        hmt_write_long(HMT_NR_HUGEPAGES, old);
        return;
    }
    int cap = (int)avail + 4;
    void *blk[KERNEL_POOL_MAX + 4];
    CHECK(hmi_backend_open(3, "t", "hugetlb", (size_t)cap * 2 * MiB, 0, reason,
                           sizeof reason) == 0);
    int n = 0;
    while (n < cap && (blk[n] = hmi_backend_alloc(3, 2 * MiB, 0)) != NULL)
        n++;
    CHECK(n >= 1 && n < cap);
    /* the pool is dry: a small object's chunk is refused as well */
    void *small = hmi_backend_alloc(3, 64, 0);
    struct hmi_backend_stats s;
    hmi_backend_stats(3, &s);
    CHECK(s.refused[HMI_WHY_KERNEL] == (small ? 1u : 2u));
    CHECK(s.not_fitting == s.refused[HMI_WHY_KERNEL] && s.map_failed == s.not_fitting);
    if (small)
        hmi_backend_free(3, small);
    while (n--)
        hmi_backend_free(3, blk[n]);
    CHECK(hmi_backend_close(3) == 0);
    hmt_write_long(HMT_NR_HUGEPAGES, old);
}

/* umf:hugetlb: its range (twice the capacity) holds 4 chunks; a fifth class of
 * objects over 256 KiB (a whole chunk each) finds none: refused by UMF's provider,
 * within the capacity and with no mapping refused. */
static void test_not_fitting_umf(void)
{
    long old = hmt_huge_reserve(6);
    if (old < 0) {
        fprintf(stderr, "  cannot reserve 6 hugepages (not root?): skipped\n");
        return;
    }
    if (hmi_backend_open(4, "t", "umf:hugetlb", 4 * MiB, 0, reason, sizeof reason) != 0) {
        fprintf(stderr, "  umf:hugetlb unavailable (%s): skipped\n", reason);
        hmi_backend_close(4);
        hmt_write_long(HMT_NR_HUGEPAGES, old);
        return;
    }
    static const size_t big[] = { 270000, 300000, 330000, 360000, 390000 };
    void *p[5];
    for (int k = 0; k < 5; k++)
        p[k] = hmi_backend_alloc(4, big[k], 0);
    CHECK(p[0] && p[1] && p[2] && p[3] && !p[4]);
    struct hmi_backend_stats s;
    hmi_backend_stats(4, &s);
    CHECK(s.chunks == 4 && s.not_fitting == 1 && s.refused[HMI_WHY_UMF] == 1);
    CHECK(s.map_failed == 0 && s.refused[HMI_WHY_CAPACITY] == 0);
    for (int k = 0; k < 4; k++)
        if (p[k])
            hmi_backend_free(4, p[k]);
    CHECK(hmi_backend_close(4) == 0);
    hmt_write_long(HMT_NR_HUGEPAGES, old);
}

int main(void)
{
    RUN(test_threads_1);
    RUN(test_threads_4);
    RUN(test_threads_16);
    RUN(test_not_fitting_reasons);
    RUN(test_not_fitting_kernel);
    RUN(test_not_fitting_umf);
    HMT_END();
}
