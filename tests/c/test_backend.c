/* test_backend.c — the interposer's tier backends (interpose/hmi_backend*.c):
 * allocation, alignment, usable size, capacity accounting, ownership against glibc
 * from 8 threads, and unavailable backends reporting why. The hugetlb test reserves
 * hugepages through /proc/sys/vm/nr_hugepages when it can (and restores the old
 * value); when it cannot, it checks that the backend reports itself unavailable. */
#include "hmt.h"
#include "hmi_arena.h"
#include "hmi_backend.h"
#include "smaps_split.h"

#include <malloc.h>
#include <numaif.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1ull << 20)

enum { T_BAD = 0, T_THP = 1, T_NUMA = 2, T_MK = 3, T_HUGE = 4, T_DEF = 5, T_MK2 = 6 };

static char reason[HMI_REASON_MAX];

static int open_tier(uint32_t i, const char *spec, uint64_t cap)
{
    return hmi_backend_open(i, "t", spec, cap, 0, reason, sizeof reason);
}

/* alloc + write + ownership + usable size + free; the stats follow. */
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
        size_t a = aligns[k] ? aligns[k] : 16;
        CHECK((uintptr_t)p % a == 0);
        CHECK(hmi_owner(p) == (int)i);
        size_t u = hmi_backend_usable_size((int)i, p);
        CHECK(u >= size);
        memset(p, 0x5a, u);
        CHECK(hmi_backend_resize_in_place((int)i, p, u) == 1);
        CHECK(hmi_backend_resize_in_place((int)i, p, u + 1) == 0);
        hmi_backend_stats(i, &s1);
        CHECK(s1.used >= s0.used + u);
        if (u > 4096) {
            /* a pointer into the object is none: no size, and freeing it frees nothing */
            CHECK(hmi_backend_usable_size((int)i, p + 16) == 0);
            CHECK(hmi_backend_usable_size((int)i, p + 4096) == 0);
            CHECK(hmi_backend_resize_in_place((int)i, p + 16, 1) == 0);
            hmi_backend_free((int)i, p + 16);
            hmi_backend_free((int)i, p + 4096);
            struct hmi_backend_stats s2;
            hmi_backend_stats(i, &s2);
            CHECK(s2.used == s1.used && s2.freed == s1.freed);
            CHECK(hmi_backend_usable_size((int)i, p) == u);
        }
        hmi_backend_free((int)i, p);
    }
    /* each block, plus the one in-place resize (counted as a realloc: one block
     * ended, one started) */
    hmi_backend_stats(i, &s1);
    CHECK(s1.placed == s0.placed + 8);
    CHECK(s1.freed == s0.freed + 8);
    CHECK(s1.used == s0.used);
    CHECK(s1.high_water >= size);
}

/* The permissions of the mapping that holds p ("rw-p", "---p"), "" when none does. */
static const char *perms_at(const void *p)
{
    static char perms[8];
    perms[0] = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return perms;
    unsigned long lo, hi;
    char pm[8];
    while (fscanf(f, "%lx-%lx %7s%*[^\n]", &lo, &hi, pm) == 3) {
        if ((uintptr_t)p >= lo && (uintptr_t)p < hi) {
            memcpy(perms, pm, sizeof perms);
            break;
        }
    }
    fclose(f);
    return perms;
}

/* A block of 4 KiB pages owns its span (its length rounded up to 2 MiB) from a 2 MiB
 * (or larger requested) boundary: read-write up to the length, PROT_NONE past it,
 * with or without the kernel's own alignment of the first mapping. */
static void check_span(uint32_t i, size_t align)
{
    char *p = hmi_backend_alloc(i, 3 * MiB, align);
    CHECK(p != NULL);
    if (!p)
        return;
    CHECK((uintptr_t)p % (align > 2 * MiB ? align : 2 * MiB) == 0);
    CHECK(strcmp(perms_at(p), "rw-p") == 0);
    CHECK(strcmp(perms_at(p + 3 * MiB - 1), "rw-p") == 0);
    CHECK(strcmp(perms_at(p + 3 * MiB), "---p") == 0);
    CHECK(strcmp(perms_at(p + 4 * MiB - 1), "---p") == 0);
    memset(p, 7, 3 * MiB);
    hmi_backend_free((int)i, p);
}

/* Fill a tier of capacity cap with blocks of size until refused; free them. */
static void fill(uint32_t i, uint64_t cap, size_t size, int expect_min)
{
    struct hmi_backend_stats s0, s1;
    hmi_backend_stats(i, &s0);
    void *blk[256];
    int n = 0;
    while (n < 256 && (blk[n] = hmi_backend_alloc(i, size, 0)) != NULL) {
        memset(blk[n], n, size);
        n++;
    }
    CHECK(n >= expect_min && n < 256);
    hmi_backend_stats(i, &s1);
    CHECK(s1.not_fitting == s0.not_fitting + 1);
    CHECK(s1.used <= cap && s1.used + size > cap - size);
    CHECK(s1.high_water == s1.used);
    while (n--)
        hmi_backend_free(hmi_owner(blk[n]), blk[n]);
    hmi_backend_stats(i, &s1);
    CHECK(s1.used == 0);
    CHECK(s1.placed == s1.freed);
}

static void test_glibc_pointers(void)
{
    void *p[5] = { malloc(24), malloc(4 * MiB), memalign(4096, 100), calloc(3, 1000), NULL };
    CHECK(posix_memalign(&p[4], 2 * MiB, 100) == 0);
    for (int k = 0; k < 5; k++) {
        CHECK(p[k] != NULL);
        CHECK(hmi_owner(p[k]) == HMI_OWNER_LIBC);
        free(p[k]);
    }
    CHECK(hmi_owner(NULL) == HMI_OWNER_LIBC);
}

static void test_unavailable(void)
{
    CHECK(open_tier(T_BAD, "numa:5", 64 * MiB) == -1);
    CHECK(strstr(reason, "node 5 is not present") != NULL);
    fprintf(stderr, "  numa:5 -> %s\n", reason);
    CHECK(hmi_backend_available(T_BAD) == 0);
    CHECK(hmi_backend_alloc(T_BAD, 100, 0) == NULL);
    CHECK(hmi_backend_close(T_BAD) == 0);
    static const char *const bad[] = {
        "numa:", "numa:1-0", "numa:0,", "numa:4096", "bogus", "memkind:", "memkind:hbw",
        "memkind:memkind_malloc", "memkind:MEMKIND_NO_SUCH_KIND", "memkind:MEMKIND_DAX_KMEM",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        reason[0] = '\0';
        CHECK(open_tier(T_BAD, bad[k], 64 * MiB) == -1);
        CHECK(strlen(reason) > strlen(bad[k]) + 8 && !strchr(reason, '\n'));
        CHECK(strstr(reason, bad[k]) != NULL);
        fprintf(stderr, "  %s -> %s\n", bad[k], reason);
        CHECK(hmi_backend_close(T_BAD) == 0);
    }
    CHECK(open_tier(T_BAD, "thp", 0) == -1);         /* zero capacity, not unlimited */
    CHECK(hmi_backend_close(T_BAD) == 0);
    /* default: opens, never allocates (the interposer calls glibc) */
    CHECK(hmi_backend_open(T_DEF, "ddr", "default", 0, 1, reason, sizeof reason) == 0);
    CHECK(reason[0] == '\0');
    CHECK(hmi_backend_kind(T_DEF) == HMI_BK_DEFAULT);
    CHECK(hmi_backend_alloc(T_DEF, 100, 0) == NULL);
    CHECK(open_tier(T_DEF, "thp", MiB) == -1);       /* index in use */
    CHECK(hmi_backend_close(T_DEF) == 0);
    CHECK(open_tier(HMI_MAX_TIERS, "thp", MiB) == -1);
}

/* 1 when the smaps entry of the mapping holding p says THPeligible: 1. */
static int thp_eligible(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int in = 0, r = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (in && !strncmp(line, "THPeligible:", 12))
            r = atoi(line + 12) == 1;
    }
    fclose(f);
    return r;
}

static void test_thp(void)
{
    CHECK(open_tier(T_THP, "thp", 16 * MiB) == 0);
    CHECK(hmi_backend_kind(T_THP) == HMI_BK_THP);
    exercise(T_THP, 1000);
    exercise(T_THP, 3 * MiB + 5);
    char *p = hmi_backend_alloc(T_THP, 4 * MiB, 0);
    CHECK(p && (uintptr_t)p % (2 * MiB) == 0);
    if (p) {
        memset(p, 1, 4 * MiB);
        CHECK(thp_eligible(p) == 1);
        hmi_backend_free(T_THP, p);
    }
    /* 4 KiB rounding: 5 blocks of 3 MiB fit in 16 MiB, the sixth does not */
    fill(T_THP, 16 * MiB, 3 * MiB, 5);
    struct hmi_backend_stats s;
    hmi_backend_stats(T_THP, &s);
    CHECK(s.high_water == 15 * MiB);
    p = hmi_backend_alloc(T_THP, 17 * MiB, 0);       /* larger than the capacity */
    CHECK(p == NULL);
    /* small objects (the arena's 4 KiB class) are charged from per-thread reserves:
     * still exactly 4096 of them fit (reserves go back before a refusal), mixed with
     * large ones */
    static char *small[4100];
    char *big = hmi_backend_alloc(T_THP, 2 * MiB, 0);
    CHECK(big != NULL);
    int n = 0;
    while (n < 4100 && (small[n] = hmi_backend_alloc(T_THP, 4096, 0)) != NULL)
        n++;
    CHECK(n == 4096 - 512);
    hmi_backend_stats(T_THP, &s);
    CHECK(s.used == 16 * MiB);
    hmi_backend_free(T_THP, big);
    for (int i = 0; i < n; i++)
        hmi_backend_free(T_THP, small[i]);
    hmi_backend_stats(T_THP, &s);
    CHECK(s.used == 0 && s.placed == s.freed);
    /* the mark is taken when the shared counter moves: it may lag by < one chunk */
    CHECK(s.high_water <= 16 * MiB && s.high_water > 16 * MiB - (64u << 10));
    CHECK(hmi_backend_close(T_THP) == 0);
}

static void test_numa0(void)
{
    CHECK(open_tier(T_NUMA, "numa:0", 16 * MiB) == 0);
    CHECK(hmi_backend_kind(T_NUMA) == HMI_BK_NUMA);
    exercise(T_NUMA, 1000);
    exercise(T_NUMA, 3 * MiB);
    char *p = hmi_backend_alloc(T_NUMA, 3 * MiB, 0);
    CHECK(p != NULL);
    if (p) {
        memset(p, 1, 3 * MiB);
        int mode = -1, node = -1;
        unsigned long mask[16] = { 0 };
        CHECK(syscall(SYS_get_mempolicy, &mode, mask, 1025ul, p + MiB, MPOL_F_ADDR) == 0);
        CHECK(mode == MPOL_BIND);
        CHECK(mask[0] == 1ul);
        CHECK(syscall(SYS_get_mempolicy, &node, NULL, 0ul, p + 2 * MiB, MPOL_F_ADDR | MPOL_F_NODE) == 0);
        CHECK(node == 0);
        hmi_backend_free(hmi_owner(p), p);
    }
    fill(T_NUMA, 16 * MiB, 3 * MiB, 5);
    check_span(T_NUMA, 0);
    check_span(T_NUMA, 8 * MiB);
    CHECK(hmi_backend_close(T_NUMA) == 0);
}

static void test_memkind_hbw(void)
{
    /* main() set MEMKIND_HBW_NODES=0 before memkind was loaded */
    CHECK(open_tier(T_MK, "memkind:MEMKIND_HBW", 16 * MiB) == 0);
    CHECK(reason[0] == '\0');
    CHECK(hmi_backend_kind(T_MK) == HMI_BK_MEMKIND);
    exercise(T_MK, 24);
    exercise(T_MK, 100000);
    exercise(T_MK, 3 * MiB);
    fill(T_MK, 16 * MiB, 3 * MiB, 3);
    /* nothing is added to a block: 4096 bytes are charged 4096, and an aligned
     * request costs no alignment bytes */
    void *p = hmi_backend_alloc(T_MK, 4096, 0);
    CHECK(p != NULL);
    struct hmi_backend_stats s;
    hmi_backend_stats(T_MK, &s);
    CHECK(s.used == 4096);
    CHECK(hmi_backend_usable_size(hmi_owner(p), p) == 4096);
    hmi_backend_free(hmi_owner(p), p);
    p = hmi_backend_alloc(T_MK, 8192, 4096);
    CHECK(p && (uintptr_t)p % 4096 == 0 && hmi_owner(p) == T_MK);
    hmi_backend_stats(T_MK, &s);
    CHECK(s.used == 8192);
    hmi_backend_free(hmi_owner(p), p);
    /* zero-filled blocks are zero even when memkind reuses a dirty one */
    for (int k = 0; k < 2; k++) {
        unsigned char *z = hmi_backend_alloc_zeroed(T_MK, 3000, k ? 256 : 0);
        CHECK(z != NULL);
        size_t nz = 0;
        for (size_t i = 0; z && i < 3000; i++)
            nz += z[i] != 0;
        CHECK(nz == 0);
        if (z) {
            memset(z, 0xab, 3000);
            hmi_backend_free(hmi_owner(z), z);
        }
    }
    /* the kind's policy is memkind's (MEMKIND_HBW: bound to the HBW node, node 0
     * here) on small objects (arena chunks) and on blocks of their own */
    for (int k = 0; k < 2; k++) {
        char *b = hmi_backend_alloc(T_MK, k ? 3 * MiB : 100, 0);
        CHECK(b != NULL);
        if (!b)
            continue;
        b[0] = 1;
        int mode = -1, node = -1;
        unsigned long mask[16] = { 0 };
        CHECK(syscall(SYS_get_mempolicy, &mode, mask, 1024ul, b, MPOL_F_ADDR) == 0);
        CHECK(mode == MPOL_BIND && mask[0] == 1ul);
        CHECK(syscall(SYS_get_mempolicy, &node, NULL, 0ul, b, MPOL_F_ADDR | MPOL_F_NODE) == 0);
        CHECK(node == 0);
        hmi_backend_free(hmi_owner(b), b);
    }
    /* two tiers may name one kind: each keeps its blocks and its accounting */
    CHECK(open_tier(T_MK2, "memkind:MEMKIND_HBW", MiB) == 0);
    void *m1 = hmi_backend_alloc(T_MK, 200, 0), *m2 = hmi_backend_alloc(T_MK2, 200, 0);
    CHECK(m1 && m2 && hmi_owner(m1) == T_MK && hmi_owner(m2) == T_MK2);
    hmi_backend_free(hmi_owner(m1), m1);
    hmi_backend_free(hmi_owner(m2), m2);
    CHECK(hmi_backend_close(T_MK2) == 0);
    /* a second memkind tier on another kind keeps its own accounting */
    CHECK(open_tier(T_MK2, "memkind:MEMKIND_DEFAULT", MiB) == 0);
    void *q = hmi_backend_alloc(T_MK2, 1000, 64);
    CHECK(q && hmi_owner(q) == T_MK2 && (uintptr_t)q % 64 == 0);
    hmi_backend_free(hmi_owner(q), q);
    hmi_backend_stats(T_MK2, &s);
    CHECK(s.placed == 1 && s.freed == 1 && s.used == 0);
    CHECK(hmi_backend_close(T_MK2) == 0);
    CHECK(hmi_backend_close(T_MK) == 0);
}

/* Each memkind kind's placement as memkind gives it: policy and nodes. */
static void kind_policy(const char *spec, int want_mode)
{
    CHECK(open_tier(T_MK2, spec, 16 * MiB) == 0);
    for (int k = 0; k < 2; k++) {
        char *b = hmi_backend_alloc(T_MK2, k ? 3 * MiB : 64, 0);
        CHECK(b != NULL);
        if (!b)
            continue;
        b[0] = 1;
        int mode = -1;
        unsigned long mask[16] = { 0 };
        CHECK(syscall(SYS_get_mempolicy, &mode, mask, 1024ul, b, MPOL_F_ADDR) == 0);
        CHECK(mode == want_mode);
        CHECK(want_mode == MPOL_DEFAULT || mask[0] == 1ul);
        hmi_backend_free(hmi_owner(b), b);
    }
    CHECK(hmi_backend_close(T_MK2) == 0);
}

static void test_memkind_kinds(void)
{
    kind_policy("memkind:MEMKIND_HBW_PREFERRED", MPOL_PREFERRED);
    kind_policy("memkind:MEMKIND_HBW_INTERLEAVE", MPOL_INTERLEAVE);
    kind_policy("memkind:MEMKIND_HBW_ALL", MPOL_BIND);
    kind_policy("memkind:MEMKIND_REGULAR", MPOL_BIND);
    kind_policy("memkind:MEMKIND_DEFAULT", MPOL_DEFAULT);
}

/* The small-object arena: classes, alignment, reuse, zeroing, exact refusals. */
static void test_arena(void)
{
    CHECK(open_tier(T_MK, "memkind:MEMKIND_DEFAULT", 4 * MiB) == 0);
    static const size_t want[][2] = {
        { 1, 16 }, { 16, 16 }, { 17, 32 }, { 24, 32 }, { 129, 144 }, { 512, 512 },
        { 513, 528 }, { 529, 544 }, { 1025, 1056 }, { 4096, 4096 }, { 4097, 4224 },
        { 200000, 200704 }, { 1048576, 1048576 },
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        char *p = hmi_backend_alloc(T_MK, want[k][0], 0);
        CHECK(p && hmi_backend_usable_size(hmi_owner(p), p) == want[k][1]);
        CHECK(p && (uintptr_t)p % 16 == 0);
        hmi_backend_free(hmi_owner(p), p);
    }
    /* aligned requests: the power-of-two class of max(size, align) */
    char *a = hmi_backend_alloc(T_MK, 100, 4096);
    CHECK(a && (uintptr_t)a % 4096 == 0 && hmi_backend_usable_size(hmi_owner(a), a) == 4096);
    hmi_backend_free(hmi_owner(a), a);
    a = hmi_backend_alloc(T_MK, 5000, 64);
    CHECK(a && (uintptr_t)a % 8192 == 0 && hmi_backend_usable_size(hmi_owner(a), a) == 8192);
    /* an interior pointer is not a block: freeing it changes nothing */
    hmi_backend_free(hmi_owner(a + 64), a + 64);
    struct hmi_backend_stats s;
    hmi_backend_stats(T_MK, &s);
    CHECK(s.used == 8192);
    hmi_backend_free(hmi_owner(a), a);
    /* a freed object is reused; zeroed when asked */
    unsigned char *z = hmi_backend_alloc(T_MK, 1000, 0);
    memset(z, 0xcd, 1000);
    hmi_backend_free(hmi_owner(z), z);
    unsigned char *z2 = hmi_backend_alloc_zeroed(T_MK, 1000, 0);
    CHECK(z2 == z);
    size_t nz = 0;
    for (size_t i = 0; z2 && i < 1000; i++)
        nz += z2[i] != 0;
    CHECK(nz == 0);
    hmi_backend_free(hmi_owner(z2), z2);
    /* capacity: exactly 4 MiB of 64 KiB objects fit, the next is refused */
    static void *blk[70];
    int n = 0;
    while (n < 70 && (blk[n] = hmi_backend_alloc(T_MK, 64 << 10, 0)) != NULL)
        n++;
    CHECK(n == 64);
    hmi_backend_stats(T_MK, &s);
    CHECK(s.used == 4 * MiB && s.not_fitting == 1);
    for (int k = 0; k < n; k++)
        hmi_backend_free(hmi_owner(blk[k]), blk[k]);
    hmi_backend_stats(T_MK, &s);
    CHECK(s.used == 0 && s.placed == s.freed);
    CHECK(hmi_backend_close(T_MK) == 0);
}

/* ---- hugetlb ---- */

#define huge_free hmt_huge_free

static void test_hugetlb(void)
{
    static const char *nr = HMT_NR_HUGEPAGES;
    long old = hmt_read_long(nr);
    CHECK(old >= 0);
    if (huge_free() == 0) {
        CHECK(open_tier(T_HUGE, "hugetlb", 64 * MiB) == -1);
        CHECK(strstr(reason, "hugepage") != NULL);
        fprintf(stderr, "  hugetlb without hugepages -> %s\n", reason);
        CHECK(hmi_backend_close(T_HUGE) == 0);
    }
    if (hmt_huge_reserve(8) < 0) {         /* nr_hugepages is back at old */
        fprintf(stderr, "  cannot reserve hugepages: checking that hugetlb is unavailable\n");
        if (huge_free() == 0) {
            CHECK(open_tier(T_HUGE, "hugetlb", 64 * MiB) == -1);
            CHECK(reason[0] != '\0');
        } else {
            CHECK(!"hugepages free but none could be reserved for the test");
        }
        hmi_backend_close(T_HUGE);
        return;
    }
    CHECK(open_tier(T_HUGE, "hugetlb", 6 * MiB) == 0);
    CHECK(hmi_backend_kind(T_HUGE) == HMI_BK_HUGETLB);
    struct hmi_backend_stats s;
    /* objects up to 1 MiB share a hugepage chunk per class (100000 bytes: the
     * 100352-byte class, 20 to a chunk), charged by their class */
    long f0 = huge_free();
    char *so[10];
    for (int k = 0; k < 10; k++) {
        so[k] = hmi_backend_alloc(T_HUGE, 100000, 0);
        CHECK(so[k] && hmi_owner(so[k]) == T_HUGE);
        CHECK(hmi_backend_usable_size(T_HUGE, so[k]) == 100352);
        if (so[k])
            memset(so[k], k + 1, 100000);
    }
    CHECK(huge_free() == f0 - 1);
    hmi_backend_stats(T_HUGE, &s);
    CHECK(s.placed == 10 && s.not_fitting == 0 && s.used == 10 * 100352ull);
    for (int k = 0; k < 10; k++) {
        CHECK(so[k] && so[k][0] == k + 1 && so[k][99999] == k + 1);
        hmi_backend_free(T_HUGE, so[k]);
    }
    hmi_backend_stats(T_HUGE, &s);
    CHECK(s.used == 0 && s.freed == 10);
    /* classes of up to 8 KiB take 64 KiB slabs, which share one chunk: four classes,
     * one more hugepage; each object's class is found again from its slab */
    f0 = huge_free();
    static const size_t sl[] = { 64, 4096, 8192, 200 };
    char *sp[4];
    for (int k = 0; k < 4; k++) {
        sp[k] = hmi_backend_alloc(T_HUGE, sl[k], 0);
        CHECK(sp[k] && hmi_backend_usable_size(T_HUGE, sp[k]) == (sl[k] == 200 ? 208 : sl[k]));
        if (sp[k])
            memset(sp[k], k + 1, sl[k]);
    }
    CHECK(huge_free() == f0 - 1);
    CHECK(hmi_arena_slab_code(0) == 0 && hmi_arena_slab_code(159) == 0 &&
          hmi_arena_slab_code(160) == 1 && hmi_arena_slab_code(383) == 5);
    for (int k = 0; k < 4; k++) {
        CHECK(sp[k] && sp[k][0] == k + 1 && sp[k][sl[k] - 1] == k + 1);
        hmi_backend_free(T_HUGE, sp[k]);
    }
    hmi_backend_stats(T_HUGE, &s);
    CHECK(s.used == 0 && s.freed == 14);
    /* 2 MiB rounding (the chunk above stays the tier's) */
    f0 = huge_free();
    char *p = hmi_backend_alloc(T_HUGE, MiB + 1, 0);
    CHECK(p && hmi_owner(p) == T_HUGE);
    CHECK(hmi_backend_usable_size(T_HUGE, p) == 2 * MiB);
    if (p) {
        memset(p, 7, 2 * MiB);
        CHECK(huge_free() == f0 - 1);               /* really a hugepage */
        hmi_backend_free(T_HUGE, p);
    }
    exercise(T_HUGE, MiB);
    fill(T_HUGE, 6 * MiB, 2 * MiB, 3);
    CHECK(hmi_backend_close(T_HUGE) == 0);
    /* capacity beyond the pool: the kernel refuses, counted as not fitting */
    CHECK(open_tier(T_HUGE, "hugetlb", 1024 * MiB) == 0);
    void *blk[64];
    int n = 0;
    while (n < 64 && (blk[n] = hmi_backend_alloc(T_HUGE, 2 * MiB, 0)) != NULL)
        n++;
    CHECK(n >= 1 && n <= 8 + old);
    hmi_backend_stats(T_HUGE, &s);
    CHECK(s.not_fitting == 1 && s.map_failed == 1 && s.used == (uint64_t)n * 2 * MiB);
    while (n--)
        hmi_backend_free(hmi_owner(blk[n]), blk[n]);
    hmi_backend_stats(T_HUGE, &s);
    CHECK(s.used == 0);
    CHECK(hmi_backend_close(T_HUGE) == 0);
    /* memkind's hugepage kind: small objects share one hugepage chunk per class,
     * objects over 1 MiB get hugepages of their own */
    CHECK(open_tier(T_MK2, "memkind:MEMKIND_HUGETLB", 64 * MiB) == 0);
    f0 = huge_free();
    char *sm[100];
    for (int k = 0; k < 100; k++) {
        sm[k] = hmi_backend_alloc(T_MK2, 5000, 0);
        CHECK(sm[k] && hmi_owner(sm[k]) == T_MK2);
        if (sm[k])
            memset(sm[k], k, 5000);
    }
    CHECK(huge_free() == f0 - 1);
    char *big = hmi_backend_alloc(T_MK2, 3 * MiB, 0);
    CHECK(big && hmi_backend_usable_size(T_MK2, big) == 4 * MiB);
    if (big)
        memset(big, 1, 3 * MiB);
    CHECK(huge_free() == f0 - 3);
    hmi_backend_free(T_MK2, big);
    for (int k = 0; k < 100; k++)
        hmi_backend_free(T_MK2, sm[k]);
    hmi_backend_stats(T_MK2, &s);
    CHECK(s.used == 0 && s.placed == 101 && s.freed == 101);
    CHECK(hmi_backend_close(T_MK2) == 0);
    CHECK(huge_free() == f0);                       /* close gave the chunk back */
    CHECK(hmt_write_long(nr, old) == 0);
    CHECK(hmt_read_long(nr) == old);
}

/* ---- 8 threads allocate from thp, numa:0, memkind and glibc and free each other's
 * blocks; every block records its source in its first word. ---- */

#define NSLOT 512
static void *slots[NSLOT];
static const uint32_t thread_tiers[3] = { T_THP, T_NUMA, T_MK };

static void *worker(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
    for (int it = 0; it < 3000; it++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int src = (int)(x % 4);                      /* 3: glibc */
        size_t size = 16 + (size_t)((x >> 8) % (src == 2 ? 20000 : 3000));
        size_t align = ((x >> 24) & 3) == 0 ? 64 : 0;
        uint64_t *p = src == 3 ? malloc(size)
                               : hmi_backend_alloc(thread_tiers[src], size, align);
        CHECK(p != NULL);
        if (!p)
            continue;
        p[0] = src == 3 ? (uint64_t)HMI_OWNER_LIBC : thread_tiers[src];
        memset(p + 1, (int)it, size - 8);
        uint64_t *old = __atomic_exchange_n(&slots[(x >> 32) % NSLOT], p, __ATOMIC_ACQ_REL);
        if (old) {
            int o = hmi_owner(old);
            CHECK((uint64_t)(int64_t)o == old[0]);
            if (o == HMI_OWNER_LIBC)
                free(old);
            else
                hmi_backend_free(o, old);
        }
    }
    return NULL;
}

/* ---- split objects (hmi_backend_alloc_split) ---- */

#define all_zero hmt_all_zero

/* A 16 MiB object with [2 MiB, 6 MiB) in tier i: exactly that range is in huge pages
 * (hugetlb: its mapping; thp: AnonHugePages once touched), it is zero, readable and
 * writable over its whole length, in a fork child too, and freeing it gives back
 * what it was charged. */
static void split_basic(uint32_t i, int hugetlb)
{
    static const struct hmi_range r[] = { { 2 * MiB, 6 * MiB } };
    uint64_t placed[1], mask;
    struct hmi_backend_stats s0, s1;
    hmi_backend_stats(i, &s0);
    char *p = hmi_backend_alloc_split(i, 16 * MiB, 0, 1, r, 1, placed, &mask);
    CHECK(p != NULL);
    if (!p)
        return;
    CHECK((uintptr_t)p % (2 * MiB) == 0 && hmi_owner(p) == (int)i);
    CHECK(hmi_owner(p + 16 * MiB - 1) == (int)i);
    CHECK(hmi_backend_usable_size((int)i, p) == 16 * MiB);
    CHECK(placed[0] == 4 * MiB && mask == 1);
    hmi_backend_stats(i, &s1);
    CHECK(s1.used == s0.used + 4 * MiB);
    CHECK(s1.split_placed == s0.split_placed + 1 && s1.split_bytes == s0.split_bytes + 4 * MiB);
    CHECK(s1.placed == s0.placed + 1 && s1.split_refused == s0.split_refused);
    CHECK(all_zero(p, 16 * MiB));
    memset(p, 0x5a, 16 * MiB);
    struct split_view v;
    smaps_view(p, 16 * MiB, 2 * MiB, 6 * MiB, &v);
    CHECK(v.mapped == 16 * MiB);
    if (hugetlb) {
        CHECK(v.huge_in == 4 * MiB && v.huge_out == 0);
    } else {
        CHECK(v.thp_in == 4 * MiB && v.thp_out == 0);
        CHECK(v.huge_in == 0 && v.huge_out == 0);
    }
    if (v.huge_in + v.thp_in != 4 * MiB || v.huge_out + v.thp_out)
        fprintf(stderr, "  smaps: hugetlb %llu in / %llu out, thp %llu in / %llu out\n",
                (unsigned long long)v.huge_in, (unsigned long long)v.huge_out,
                (unsigned long long)v.thp_in, (unsigned long long)v.thp_out);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        for (size_t k = 0; k < 16 * MiB; k += 4096)
            bad |= p[k] != 0x5a;
        memset(p, 0x33, 16 * MiB);
        _exit(bad || p[16 * MiB - 1] != 0x33);
    }
    int st = -1;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(p[0] == 0x5a && p[3 * MiB] == 0x5a && p[16 * MiB - 1] == 0x5a);
    CHECK(hmi_backend_resize_in_place((int)i, p, 16 * MiB) == 1);
    hmi_backend_free((int)i, p);
    hmi_backend_stats(i, &s1);
    CHECK(s1.used == s0.used && s1.placed == s1.freed);
}

static void test_split_thp(void)
{
    CHECK(open_tier(T_THP, "thp", 16 * MiB) == 0);
    split_basic(T_THP, 0);
    /* ranges past the object are not placed; an object with none placed falls back */
    static const struct hmi_range far[] = { { 8 * MiB, 12 * MiB } };
    uint64_t placed[2], mask;
    struct hmi_backend_stats s;
    CHECK(hmi_backend_alloc_split(T_THP, 4 * MiB, 0, 0, far, 1, placed, &mask) == NULL);
    hmi_backend_stats(T_THP, &s);
    CHECK(s.not_fitting == 1 && s.used == 0);
    /* the capacity: of [0, 12 MiB) and [12 MiB, 20 MiB) only the first fits 16 MiB */
    static const struct hmi_range two[] = { { 0, 12 * MiB }, { 12 * MiB + 4096, 20 * MiB } };
    char *p = hmi_backend_alloc_split(T_THP, 24 * MiB + 5, 64, 0, two, 2, placed, &mask);
    CHECK(p != NULL && mask == 1 && placed[0] == 12 * MiB && placed[1] == 0);
    hmi_backend_stats(T_THP, &s);
    CHECK(s.used == 12 * MiB && s.split_refused == 1);
    /* a clipped range: [12 MiB + 4 KiB, 20 MiB) of a 14 MiB object is charged its
     * 4 KiB pages inside the object */
    static const struct hmi_range clip[] = { { 12 * MiB + 4096, 20 * MiB } };
    char *q = hmi_backend_alloc_split(T_THP, 14 * MiB - 100, 0, 0, clip, 1, placed, &mask);
    CHECK(q != NULL && placed[0] == 2 * MiB - 4096 - 100);
    hmi_backend_stats(T_THP, &s);
    CHECK(s.used == 14 * MiB - 4096);
    if (p)
        hmi_backend_free(T_THP, p);
    if (q)
        hmi_backend_free(T_THP, q);
    hmi_backend_stats(T_THP, &s);
    CHECK(s.used == 0 && s.placed == s.freed && s.split_placed == 3);
    CHECK(hmi_backend_close(T_THP) == 0);
}

static void test_split_numa(void)
{
    CHECK(open_tier(T_NUMA, "numa:0", 64 * MiB) == 0);
    static const struct hmi_range r[] = { { 0, 4096 }, { 1 * MiB, 3 * MiB } };
    uint64_t placed[2], mask;
    char *p = hmi_backend_alloc_split(T_NUMA, 8 * MiB, 0, 1, r, 2, placed, &mask);
    CHECK(p != NULL && mask == 3 && placed[0] == 4096 && placed[1] == 2 * MiB);
    if (p) {
        int mode = -1;
        unsigned long nodes[16] = { 0 };
        CHECK(syscall(SYS_get_mempolicy, &mode, nodes, 1024ul, p + 1 * MiB, 2ul) == 0);
        CHECK(mode == MPOL_BIND && (nodes[0] & 1));
        CHECK(syscall(SYS_get_mempolicy, &mode, nodes, 1024ul, p + 4 * MiB, 2ul) == 0);
        CHECK(mode == MPOL_DEFAULT);
        memset(p, 7, 8 * MiB);
        hmi_backend_free(T_NUMA, p);
    }
    struct hmi_backend_stats s;
    hmi_backend_stats(T_NUMA, &s);
    CHECK(s.used == 0 && s.split_placed == 1 && s.split_bytes == 2 * MiB + 4096);
    CHECK(hmi_backend_close(T_NUMA) == 0);
    /* a memkind kind: the range gets the kind's policy, the rest none */
    CHECK(open_tier(T_MK, "memkind:MEMKIND_HBW", 64 * MiB) == 0);
    p = hmi_backend_alloc_split(T_MK, 8 * MiB, 0, 1, r + 1, 1, placed, &mask);
    CHECK(p != NULL && mask == 1 && placed[0] == 2 * MiB);
    if (p) {
        int mode = -1;
        unsigned long nodes[16] = { 0 };
        CHECK(syscall(SYS_get_mempolicy, &mode, nodes, 1024ul, p + 2 * MiB, 2ul) == 0);
        CHECK(mode != MPOL_DEFAULT && (nodes[0] & 1));
        CHECK(syscall(SYS_get_mempolicy, &mode, nodes, 1024ul, p + 5 * MiB, 2ul) == 0);
        CHECK(mode == MPOL_DEFAULT);
        memset(p, 8, 8 * MiB);
        hmi_backend_free(T_MK, p);
    }
    hmi_backend_stats(T_MK, &s);
    CHECK(s.used == 0 && s.placed == s.freed);
    CHECK(hmi_backend_close(T_MK) == 0);
}

/* Split objects on hugetlb: the ranges in hugepages (widened to 2 MiB), a range that
 * does not fit the capacity or finds the pool empty stays ordinary memory. */
static void test_split_hugetlb(void)
{
    long old = hmt_huge_reserve(8);
    if (old < 0) {
        fprintf(stderr, "  cannot reserve hugepages: split hugetlb not run\n");
        return;
    }
    struct hmi_backend_stats s;
    uint64_t placed[2], mask;
    /* what a free gives back to the pool: no freed block kept (test_keep.c) */
    setenv("HMTUNE_KEEP_FREED", "0", 1);
    CHECK(open_tier(T_HUGE, "hugetlb", 64 * MiB) == 0);
    long f0 = huge_free();
    split_basic(T_HUGE, 1);
    CHECK(huge_free() == f0);
    /* two ranges in one 2 MiB page: one page for both, then the next page */
    static const struct hmi_range w[] = { { MiB, MiB + 4096 }, { MiB + 8192, 3 * MiB } };
    char *p = hmi_backend_alloc_split(T_HUGE, 5 * MiB, 0, 0, w, 2, placed, &mask);
    CHECK(p && mask == 3 && placed[0] == 4096 && placed[1] == 2 * MiB - 8192);
    hmi_backend_stats(T_HUGE, &s);
    CHECK(s.used == 4 * MiB);
    if (p) {
        memset(p, 3, 5 * MiB);
        CHECK(huge_free() == f0 - 2);
        struct split_view v;
        smaps_view(p, 5 * MiB, 0, 4 * MiB, &v);
        CHECK(v.huge_in == 4 * MiB && v.huge_out == 0 && v.mapped == 5 * MiB);
        hmi_backend_free(T_HUGE, p);
    }
    CHECK(huge_free() == f0);
    CHECK(hmi_backend_close(T_HUGE) == 0);
    /* capacity 6 MiB: [0, 4 MiB) fits, [6 MiB, 10 MiB) does not */
    CHECK(open_tier(T_HUGE, "hugetlb", 6 * MiB) == 0);
    static const struct hmi_range c[] = { { 0, 4 * MiB }, { 6 * MiB, 10 * MiB } };
    p = hmi_backend_alloc_split(T_HUGE, 12 * MiB, 0, 0, c, 2, placed, &mask);
    CHECK(p && mask == 1 && placed[0] == 4 * MiB && placed[1] == 0);
    hmi_backend_stats(T_HUGE, &s);
    CHECK(s.used == 4 * MiB && s.split_refused == 1 && s.split_bytes == 4 * MiB);
    if (p) {
        memset(p, 4, 12 * MiB);
        struct split_view v;
        smaps_view(p, 12 * MiB, 0, 4 * MiB, &v);
        CHECK(v.huge_in == 4 * MiB && v.huge_out == 0);
        hmi_backend_free(T_HUGE, p);
    }
    hmi_backend_stats(T_HUGE, &s);
    CHECK(s.used == 0);
    CHECK(hmi_backend_close(T_HUGE) == 0);
    /* the pool: one page left; [0, 4 MiB) cannot have its two, [8 MiB, 10 MiB) gets
     * the last; then nothing can be placed and the object falls back */
    CHECK(open_tier(T_HUGE, "hugetlb", 1024 * MiB) == 0);
    long fr = huge_free();
    void *hold = fr > 1 ? mmap(NULL, (size_t)(fr - 1) * 2 * MiB, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0) : NULL;
    CHECK(hold != MAP_FAILED);
    static const struct hmi_range e[] = { { 0, 4 * MiB }, { 8 * MiB, 10 * MiB } };
    p = hmi_backend_alloc_split(T_HUGE, 10 * MiB, 0, 1, e, 2, placed, &mask);
    CHECK(p && mask == 2 && placed[0] == 0 && placed[1] == 2 * MiB);
    hmi_backend_stats(T_HUGE, &s);
    CHECK(s.used == 2 * MiB && s.split_refused == 1);
    if (p) {
        CHECK(all_zero(p, 10 * MiB));
        memset(p, 5, 10 * MiB);
        struct split_view v;
        smaps_view(p, 10 * MiB, 8 * MiB, 10 * MiB, &v);
        CHECK(v.huge_in == 2 * MiB && v.huge_out == 0 && v.mapped == 10 * MiB);
        CHECK(p[0] == 5 && p[4 * MiB - 1] == 5 && p[10 * MiB - 1] == 5);
    }
    char *q = hmi_backend_alloc_split(T_HUGE, 10 * MiB, 0, 0, e, 2, placed, &mask);
    CHECK(q == NULL && mask == 0);
    hmi_backend_stats(T_HUGE, &s);
    CHECK(s.not_fitting == 1 && s.split_refused == 3 && s.used == 2 * MiB);
    if (p)
        hmi_backend_free(T_HUGE, p);
    if (hold && hold != MAP_FAILED)
        munmap(hold, (size_t)(fr - 1) * 2 * MiB);
    hmi_backend_stats(T_HUGE, &s);
    CHECK(s.used == 0 && s.placed == s.freed);
    CHECK(hmi_backend_close(T_HUGE) == 0);
    /* memkind's hugepage kind behaves as hugetlb */
    CHECK(open_tier(T_MK2, "memkind:MEMKIND_HUGETLB", 64 * MiB) == 0);
    split_basic(T_MK2, 1);
    CHECK(hmi_backend_close(T_MK2) == 0);
    unsetenv("HMTUNE_KEEP_FREED");
    CHECK(hmt_write_long(HMT_NR_HUGEPAGES, old) == 0);
}

static void test_threads_ownership(void)
{
    CHECK(open_tier(T_THP, "thp", 64 * MiB) == 0);
    CHECK(open_tier(T_NUMA, "numa:0", 64 * MiB) == 0);
    CHECK(open_tier(T_MK, "memkind:MEMKIND_HBW", 64 * MiB) == 0);
    pthread_t th[8];
    for (uintptr_t t = 0; t < 8; t++)
        CHECK(pthread_create(&th[t], NULL, worker, (void *)(t + 1)) == 0);
    for (int t = 0; t < 8; t++)
        pthread_join(th[t], NULL);
    for (int k = 0; k < NSLOT; k++) {
        uint64_t *p = slots[k];
        if (!p)
            continue;
        int o = hmi_owner(p);
        CHECK((uint64_t)(int64_t)o == p[0]);
        if (o == HMI_OWNER_LIBC)
            free(p);
        else
            hmi_backend_free(o, p);
    }
    for (int k = 0; k < 3; k++) {
        struct hmi_backend_stats s;
        hmi_backend_stats(thread_tiers[k], &s);
        CHECK(s.used == 0 && s.placed == s.freed && s.placed > 1000 && s.not_fitting == 0);
        CHECK(hmi_backend_close(thread_tiers[k]) == 0);
    }
}

int main(void)
{
    /* No HBM here: MEMKIND_HBW uses node 0 (read when memkind loads). */
    setenv("MEMKIND_HBW_NODES", "0", 1);
    RUN(test_glibc_pointers);
    RUN(test_unavailable);
    RUN(test_thp);
    RUN(test_numa0);
    RUN(test_memkind_hbw);
    RUN(test_memkind_kinds);
    RUN(test_arena);
    RUN(test_hugetlb);
    RUN(test_split_thp);
    RUN(test_split_numa);
    RUN(test_split_hugetlb);
    RUN(test_threads_ownership);
    RUN(test_glibc_pointers);
    HMT_END();
}
