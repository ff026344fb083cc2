/* test_umf.c — the umf:* tier backends (interpose/hmi_backend_umf.c) on the core, as
 * test_backend.c tests the others: allocation, alignment, usable size, ownership
 * against glibc, capacity, the share of a umf:hugetlb tier usable before a request is
 * refused (single sizes and a mix), a hugepage pool smaller than the tier, threads
 * freeing each other's objects, and fork while other threads are inside UMF.
 * Built twice: as test_umf (libumf.so.1 from `make deps`) and as test_umf_missing
 * (HMI_UMF_LIB names no file: the tier must be unavailable with a reason naming
 * `make deps`, unless libumf.so.1 is on the loader's search path). umf:hugetlb
 * reserves hugepages through /proc/sys/vm/nr_hugepages and puts the old value back;
 * where it cannot, its cases are skipped. */
#include "hmt.h"
#include "hmi_backend.h"

#include <numaif.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MiB (1ull << 20)
#define HMT_UNUSED __attribute__((unused))      /* test_umf_missing runs one test */

enum { T_BAD = 0, T_NUMA = 1, T_HUGE = 2, T_OTHER = 3 };

static char reason[HMI_REASON_MAX];
static long g_huge_old = -1;

static int open_tier(uint32_t i, const char *spec, uint64_t cap)
{
    reason[0] = '\0';
    return hmi_backend_open(i, "t", spec, cap, 0, reason, sizeof reason);
}

#define huge_available hmt_huge_available

/* n more hugepages than are available now (1), or 0 when that cannot be done. */
static int reserve(long n)
{
    long old = hmt_read_long(HMT_NR_HUGEPAGES);
    if (old < 0 || geteuid() != 0)
        return 0;
    if (g_huge_old < 0)
        g_huge_old = old;
    long want = old + n - huge_available();
    return (want <= old || hmt_write_long(HMT_NR_HUGEPAGES, want) == 0) && huge_available() >= n;
}

static void restore(void)
{
    if (g_huge_old >= 0)
        hmt_write_long(HMT_NR_HUGEPAGES, g_huge_old);
    g_huge_old = -1;
}

/* alloc + write + ownership + usable size + in-place resize + free; the stats follow. */
static void exercise(uint32_t i, size_t size)
{
    struct hmi_backend_stats s0, s1;
    hmi_backend_stats(i, &s0);
    static const size_t aligns[] = { 0, 64, 4096, 2 * MiB };
    for (size_t k = 0; k < sizeof aligns / sizeof aligns[0]; k++) {
        char *p = hmi_backend_alloc(i, size, aligns[k]);
        CHECK(p != NULL);
        if (!p)
            continue;
        CHECK((uintptr_t)p % (aligns[k] ? aligns[k] : 16) == 0);
        CHECK(hmi_owner(p) == (int)i);
        CHECK(hmi_owner(p + size - 1) == (int)i);
        size_t u = hmi_backend_usable_size((int)i, p);
        CHECK(u >= size);
        memset(p, 0x5a, u);
        CHECK(hmi_backend_resize_in_place((int)i, p, u) == 1);
        CHECK(hmi_backend_resize_in_place((int)i, p, u + 1) == 0);
        hmi_backend_stats(i, &s1);
        CHECK(s1.used >= s0.used + u);
        hmi_backend_free((int)i, p);
    }
    hmi_backend_stats(i, &s1);
    CHECK(s1.placed == s0.placed + 8 && s1.freed == s0.freed + 8);
    CHECK(s1.used == s0.used);
    /* calloc of a reused object is zero */
    char *p = hmi_backend_alloc(i, size, 0);
    if (p) {
        memset(p, 0x77, size);
        hmi_backend_free((int)i, p);
    }
    p = hmi_backend_alloc_zeroed(i, size, 0);
    CHECK(p != NULL);
    size_t nz = 0;
    for (size_t k = 0; p && k < size; k++)
        nz += p[k] != 0;
    CHECK(nz == 0);
    if (p)
        hmi_backend_free((int)i, p);
}

/* Objects of size (or of sizes[k % n] when n > 1) until the tier refuses one: the
 * share of cap they hold; all freed, the same count fits again. */
static double fill(uint32_t i, uint64_t cap, const size_t *sizes, size_t n)
{
    size_t maxobj = (1 << 22) + 64, cnt = 0;
    char **v = malloc(maxobj * sizeof *v);
    uint64_t bytes = 0;
    struct hmi_backend_stats s;
    for (int round = 0; round < 2; round++) {
        size_t k = 0;
        bytes = 0;
        while (k < maxobj && (v[k] = hmi_backend_alloc(i, sizes[k % n], 0)) != NULL) {
            v[k][0] = 1;
            v[k][sizes[k % n] - 1] = 2;
            bytes += sizes[k % n];
            k++;
        }
        hmi_backend_stats(i, &s);
        CHECK(s.used <= cap && s.high_water <= cap);
        CHECK(k < maxobj);
        if (round == 1 && k != cnt)
            fprintf(stderr, "  refilled %zu objects, first time %zu\n", k, cnt);
        CHECK(round == 0 || k == cnt);
        cnt = k;
        for (size_t j = 0; j < k; j++)
            hmi_backend_free(i, v[j]);
        hmi_backend_stats(i, &s);
        CHECK(s.used == 0 && s.placed == s.freed);
    }
    free(v);
    return (double)bytes / (double)cap;
}

static HMT_UNUSED void test_unavailable(void)
{
    static const char *const bad[] = {
        "umf:", "umf:numa:", "umf:numa:5", "umf:numa:0:sideways", "umf:numa:x", "umf:bogus",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        CHECK(open_tier(T_BAD, bad[k], 64 * MiB) == -1);
        CHECK(strstr(reason, bad[k]) != NULL && !strchr(reason, '\n'));
        fprintf(stderr, "  %s -> %s\n", bad[k], reason);
        CHECK(hmi_backend_available(T_BAD) == 0);
        CHECK(hmi_backend_alloc(T_BAD, 100, 0) == NULL);
        CHECK(hmi_backend_close(T_BAD) == 0);
    }
    CHECK(open_tier(T_BAD, "umf:hugetlb", MiB) == -1);        /* below one hugepage */
    CHECK(strstr(reason, "capacity") != NULL);
    CHECK(hmi_backend_close(T_BAD) == 0);
}

static HMT_UNUSED void test_numa(void)
{
    CHECK(open_tier(T_NUMA, "umf:numa:0", 64 * MiB) == 0);
    if (reason[0])
        fprintf(stderr, "  umf:numa:0 -> %s\n", reason);
    CHECK(hmi_backend_kind(T_NUMA) == HMI_BK_UMF_NUMA);
    exercise(T_NUMA, 24);
    exercise(T_NUMA, 1000);
    exercise(T_NUMA, 100000);
    exercise(T_NUMA, 3 * MiB + 5);
    char *p = hmi_backend_alloc(T_NUMA, 3 * MiB, 0);
    CHECK(p != NULL);
    if (p) {
        memset(p, 1, 3 * MiB);
        int mode = -1, node = -1;
        unsigned long mask[16] = { 0 };
        CHECK(syscall(SYS_get_mempolicy, &mode, mask, 1025ul, p + MiB, MPOL_F_ADDR) == 0);
        CHECK(mode == MPOL_BIND && mask[0] == 1ul);
        CHECK(syscall(SYS_get_mempolicy, &node, NULL, 0ul, p, MPOL_F_ADDR | MPOL_F_NODE) == 0);
        CHECK(node == 0);
        hmi_backend_free(hmi_owner(p), p);
    }
    /* glibc's pointers stay glibc's beside the tier's */
    void *g = malloc(100);
    CHECK(hmi_owner(g) == HMI_OWNER_LIBC);
    free(g);
    /* the capacity: 3 MiB objects charged by their 4 KiB pages, 21 fit in 64 MiB */
    static const size_t three[] = { 3 * MiB };
    double share = fill(T_NUMA, 64 * MiB, three, 1);
    CHECK(share > 0.98);
    static const size_t small[] = { 48 };
    CHECK(fill(T_NUMA, 64 * MiB, small, 1) > 0.99);
    CHECK(hmi_backend_close(T_NUMA) == 0);
    CHECK(open_tier(T_NUMA, "umf:numa:0:preferred", 16 * MiB) == 0);
    exercise(T_NUMA, 5000);
    CHECK(hmi_backend_close(T_NUMA) == 0);
    CHECK(open_tier(T_NUMA, "umf:numa:0:interleave", 16 * MiB) == 0);
    exercise(T_NUMA, 5000);
    CHECK(hmi_backend_close(T_NUMA) == 0);
}

static HMT_UNUSED void test_hugetlb(void)
{
    if (!reserve(40)) {
        fprintf(stderr, "  umf:hugetlb: cannot reserve 40 hugepages here: skipped\n");
        restore();
        return;
    }
    long before = huge_available();
    CHECK(open_tier(T_HUGE, "umf:hugetlb", 64 * MiB) == 0);        /* 128 MiB of range */
    if (reason[0])
        fprintf(stderr, "  umf:hugetlb -> %s\n", reason);
    CHECK(hmi_backend_kind(T_HUGE) == HMI_BK_UMF_HUGETLB);
    CHECK(huge_available() == before);              /* hugepages are taken as it fills */
    exercise(T_HUGE, 24);
    exercise(T_HUGE, 20000);
    exercise(T_HUGE, 3 * MiB + 5);
    /* a split object or a static variable is not placed on it */
    struct hmi_range r = { 0, 2 * MiB };
    uint64_t placed[1], mask;
    CHECK(hmi_backend_alloc_split(T_HUGE, 4 * MiB, 0, 0, &r, 1, placed, &mask) == NULL);
    CHECK(hmi_backend_charge(T_HUGE, 4096) == -1);
    CHECK(hmi_backend_close(T_HUGE) == 0);
    /* the share usable before a refusal, each on a tier of its own (the arena keeps a
     * slab for the class it was cut for): >= 95 % for one size (of what is left once
     * every object is rounded to the 16 bytes malloc aligns to: 24-byte objects take
     * 32), >= 85 % for a mix; the hugepages taken: the objects' 32, the slabs' unused
     * ends, never more than the range */
    static const size_t sizes[] = { 16, 24, 64, 100, 1000, 4096, 5000, 20000, 50000, 100000,
                                    300000, MiB, 3000000, 64 * MiB };
    static const size_t mix[] = { 16, 24, 64, 100, 256, 1000, 4096, 5000, 20000, 100000, MiB };
    uint64_t cap = 64 * MiB;
    double share = 0;
    struct hmi_backend_stats s;
    for (size_t k = 0; k <= sizeof sizes / sizeof sizes[0]; k++) {
        int m = k == sizeof sizes / sizeof sizes[0];
        CHECK(open_tier(T_HUGE, "umf:hugetlb", cap) == 0);
        share = m ? fill(T_HUGE, cap, mix, sizeof mix / sizeof mix[0])
                  : fill(T_HUGE, cap, &sizes[k], 1);
        double want = m ? 0.85
                        : 0.95 * (double)sizes[k] / (double)((sizes[k] + 15) / 16 * 16);
        long taken = before - huge_available();
        fprintf(stderr, "  umf:hugetlb, %zu-byte objects: %.1f %% of the tier, %ld hugepages\n",
                m ? 0 : sizes[k], 100 * share, taken);
        CHECK(share >= want);
        CHECK(taken >= 32 && taken <= 64);
        hmi_backend_stats(T_HUGE, &s);
        CHECK(s.map_failed == 0 && s.used == 0 && s.placed == s.freed);
        CHECK(hmi_backend_close(T_HUGE) == 0);
        CHECK(huge_available() == before);
    }
    /* a pool with fewer pages free than the tier: what they hold is placed, the rest
     * refused (counted as refused mappings) */
    long have = huge_available();
    CHECK(open_tier(T_HUGE, "umf:hugetlb", 1024 * MiB) == 0);
    static const size_t one[] = { MiB };
    share = fill(T_HUGE, (uint64_t)have * 2 * MiB, one, 1);
    fprintf(stderr, "  umf:hugetlb, a 1 GiB tier on %ld free hugepages: %.1f %% of them\n",
            have, 100 * share);
    CHECK(share >= 0.95);
    hmi_backend_stats(T_HUGE, &s);
    CHECK(s.map_failed >= 1 && s.not_fitting == 2 && huge_available() == 0);
    CHECK(hmi_backend_close(T_HUGE) == 0);
    restore();
}

/* ---- threads and fork ---- */

#define NSLOT 4096
static void *volatile slots[NSLOT];
static uint32_t g_tiers[2];
static int g_ntiers;
static volatile int g_stop;

/* Each thread puts objects in random slots and frees what it finds there (another
 * thread's, glibc's or a tier's). */
static void *worker(void *arg)
{
    uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15ull;
    for (int n = 0; n < 40000; n++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t size = 16 + x % 6000;
        int k = (int)((x >> 20) % NSLOT), t = (int)((x >> 40) % (uint64_t)(g_ntiers + 1));
        void *p = t < g_ntiers ? hmi_backend_alloc(g_tiers[t], size, 0) : malloc(size);
        if (p)
            memset(p, (int)n, size);
        void *old = __atomic_exchange_n(&slots[k], p, __ATOMIC_ACQ_REL);
        if (old) {
            int o = hmi_owner(old);
            if (o == HMI_OWNER_LIBC)
                free(old);
            else
                hmi_backend_free(o, old);
        }
    }
    return NULL;
}

static void drain(void)
{
    for (int k = 0; k < NSLOT; k++) {
        void *p = slots[k];
        slots[k] = NULL;
        int o = hmi_owner(p);
        if (o == HMI_OWNER_LIBC)
            free(p);
        else if (p)
            hmi_backend_free(o, p);
    }
}

static HMT_UNUSED void test_threads(void)
{
    int huge = reserve(40);
    g_ntiers = 0;
    CHECK(open_tier(T_NUMA, "umf:numa:0", 256 * MiB) == 0);
    g_tiers[g_ntiers++] = T_NUMA;
    if (huge && open_tier(T_HUGE, "umf:hugetlb", 64 * MiB) == 0)
        g_tiers[g_ntiers++] = T_HUGE;
    pthread_t th[8];
    for (uintptr_t t = 0; t < 8; t++)
        CHECK(pthread_create(&th[t], NULL, worker, (void *)(t + 1)) == 0);
    for (int t = 0; t < 8; t++)
        pthread_join(th[t], NULL);
    drain();
    for (int k = 0; k < g_ntiers; k++) {
        struct hmi_backend_stats s;
        hmi_backend_stats(g_tiers[k], &s);
        CHECK(s.used == 0 && s.placed == s.freed && s.placed > 10000);
        CHECK(hmi_backend_close(g_tiers[k]) == 0);
    }
    restore();
}

static void *churn(void *arg)
{
    (void)arg;
    while (!g_stop) {
        void *p = hmi_backend_alloc(g_tiers[0], 100, 0);
        void *q = hmi_backend_alloc(g_tiers[g_ntiers - 1], 300000, 0);
        if (p)
            hmi_backend_free(g_tiers[0], p);
        if (q)
            hmi_backend_free(g_tiers[g_ntiers - 1], q);
    }
    return NULL;
}

/* fork while two threads allocate and free: the child allocates, frees and exits
 * within its time (a UMF lock held across fork would hang it). */
static HMT_UNUSED void test_fork(void)
{
    /* the child's 100 sizes take a slab each (up to 1 MiB), and a copy of every
     * hugepage it writes that the parent has */
    int huge = reserve(120);
    g_ntiers = 0;
    CHECK(open_tier(T_NUMA, "umf:numa:0", 256 * MiB) == 0);
    g_tiers[g_ntiers++] = T_NUMA;
    if (huge && open_tier(T_HUGE, "umf:hugetlb", 64 * MiB) == 0)
        g_tiers[g_ntiers++] = T_HUGE;
    g_stop = 0;
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        CHECK(pthread_create(&th[t], NULL, churn, NULL) == 0);
    int hung = 0, bad = 0;
    for (int n = 0; n < 200; n++) {
        hmi_backend_atfork_prepare();
        pid_t c = fork();
        hmi_backend_atfork_release();
        if (c == 0) {
            for (int k = 0; k < 100; k++) {
                for (int t = 0; t < g_ntiers; t++) {
                    char *p = hmi_backend_alloc(g_tiers[t], 64 + 1000 * (size_t)k, 0);
                    if (!p)
                        _exit(3);
                    p[0] = 1;
                    hmi_backend_free(g_tiers[t], p);
                }
            }
            _exit(0);
        }
        int st = 0;
        struct timespec d = { 0, 1000000 };
        int w = 0;
        for (int ms = 0; ms < 10000 && (w = (int)waitpid(c, &st, WNOHANG)) == 0; ms++)
            nanosleep(&d, NULL);
        if (w == 0) {
            kill(c, SIGKILL);
            waitpid(c, &st, 0);
            hung++;
        } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            bad++;
        }
    }
    g_stop = 1;
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    if (hung || bad)
        fprintf(stderr, "  fork: %d children hung, %d failed\n", hung, bad);
    CHECK(hung == 0 && bad == 0);
    for (int k = 0; k < g_ntiers; k++)
        CHECK(hmi_backend_close(g_tiers[k]) == 0);
    restore();
}

#ifdef HMT_UMF_MISSING
/* No libumf.so.1 where the build says: unavailable, with the way to install it. */
static void test_missing(void)
{
    int rc = open_tier(T_OTHER, "umf:numa:0", 64 * MiB);
    if (rc == 0) {
        fprintf(stderr, "  libumf.so.1 is on the loader's search path: skipped\n");
    } else {
        fprintf(stderr, "  umf:numa:0 without UMF -> %s\n", reason);
        CHECK(strstr(reason, "make deps") != NULL && !strchr(reason, '\n'));
        CHECK(hmi_backend_available(T_OTHER) == 0);
        CHECK(hmi_backend_alloc(T_OTHER, 100, 0) == NULL);
    }
    CHECK(hmi_backend_close(T_OTHER) == 0);
}
#endif

int main(void)
{
    atexit(restore);
#ifdef HMT_UMF_MISSING
    RUN(test_missing);
#else
    RUN(test_unavailable);
    RUN(test_numa);
    RUN(test_hugetlb);
    RUN(test_threads);
    RUN(test_fork);
#endif
    HMT_END();
}
