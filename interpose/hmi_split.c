/* hmi_split.c — split objects (placement v2 `split` lines, hmi_backend_alloc_split):
 * one anonymous mapping of 4 KiB pages in which only the object's hot ranges are put
 * in the tier (hugepages moved over them, THP advice, or the tier's mbind policy),
 * and the table of live split blocks with what each was charged, which a free of any
 * mmap block consults while split blocks are live. */
#include "hmi_mmap.h"
#include "hmi_sys.h"
#include "hmi_charge.h"
#include "hmi_pagemap.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

/* Live split blocks (hmi_backend_alloc_split) and what each was charged: open
 * addressing keyed by the block's start (2 MiB aligned, so SPLIT_TOMB is no key),
 * lock-free (a slot is claimed by CAS; only the thread freeing a block removes it,
 * leaving a tombstone). Consulted only when an mmap block is freed while split
 * blocks are live, never for arena objects or glibc's pointers. Private memory: a
 * fork child has its own copy of the entries of the blocks it inherits. */
#define SPLIT_SLOTS (1u << 14)
#define SPLIT_PROBE 512u
#define SPLIT_TOMB  ((uintptr_t)1)
struct split_ent {
    uintptr_t start;                        /* 0 never used, SPLIT_TOMB freed */
    struct hmi_split_rec rec;
};
static struct split_ent *hmi_split_tab;
uint64_t hmi_split_live;

int hmi_split_init(struct hmi_msg *why)
{
    if (__atomic_load_n(&hmi_split_tab, __ATOMIC_ACQUIRE))
        return 0;
    void *m = mmap(NULL, SPLIT_SLOTS * sizeof(struct split_ent), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        int e = errno;
        hmi_msg_str(why, "cannot map the split block table: ");
        hmi_msg_errno(why, e);
        return -1;
    }
    __atomic_store_n(&hmi_split_tab, (struct split_ent *)m, __ATOMIC_RELEASE);
    return 0;
}

static uint64_t split_hash(uintptr_t a)
{
    return ((uint64_t)(a >> 21) * 0x9e3779b97f4a7c15ull) >> 40;
}

/* Record block a (not yet published) with what it was given; -1 when no slot. */
static int split_put(uintptr_t a, const struct hmi_split_rec *r)
{
    struct split_ent *t = __atomic_load_n(&hmi_split_tab, __ATOMIC_ACQUIRE);
    uint64_t h = split_hash(a);
    for (uint32_t k = 0; t && k < SPLIT_PROBE; k++) {
        struct split_ent *e = &t[(h + k) & (SPLIT_SLOTS - 1)];
        uintptr_t cur = __atomic_load_n(&e->start, __ATOMIC_RELAXED);
        while (cur == 0 || cur == SPLIT_TOMB) {
            if (__atomic_compare_exchange_n(&e->start, &cur, a, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_RELAXED)) {
                e->rec = *r;
                __atomic_thread_fence(__ATOMIC_RELEASE);
                __atomic_fetch_add(&hmi_split_live, 1, __ATOMIC_RELEASE);
                return 0;
            }
        }
    }
    return -1;
}

/* Take block a out of the table: 1 with its record, 0 when it is not a split block. */
int hmi_split_take(uintptr_t a, struct hmi_split_rec *r)
{
    struct split_ent *t = __atomic_load_n(&hmi_split_tab, __ATOMIC_ACQUIRE);
    uint64_t h = split_hash(a);
    for (uint32_t k = 0; t && k < SPLIT_PROBE; k++) {
        struct split_ent *e = &t[(h + k) & (SPLIT_SLOTS - 1)];
        uintptr_t cur = __atomic_load_n(&e->start, __ATOMIC_ACQUIRE);
        if (cur == 0)
            return 0;
        if (cur != a)
            continue;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        *r = e->rec;
        __atomic_store_n(&e->start, SPLIT_TOMB, __ATOMIC_RELEASE);
        __atomic_fetch_sub(&hmi_split_live, 1, __ATOMIC_RELEASE);
        return 1;
    }
    return 0;
}


/* Put [a + hs, a + he) (2 MiB aligned) in hugepages over the block's 4 KiB pages
 * (len: the block's read-write length; past it the span is PROT_NONE). The pages are
 * taken first in a mapping of their own, so an empty pool leaves the range as it was;
 * mremap then moves that mapping over the range in one step. Where mremap cannot
 * (hugetlb mremap needs Linux >= 5.17), a MAP_FIXED hugetlb mapping replaces the
 * range; a failed one leaves a hole (seen on 6.18), so the ordinary pages are mapped
 * back. 0 placed, -1 not placed (ordinary pages there), -2 neither. */
static int split_huge(struct hmi_bk *b, char *a, uint64_t hs, uint64_t he, uint64_t len)
{
    size_t n = (size_t)(he - hs);
    void *t = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
                   -1, 0);
    if (t == MAP_FAILED)
        return -1;
    if (b->mpol && hmi_mbind(t, n, b->mpol, b->nodes) != 0) {
        munmap(t, n);
        return -1;
    }
    if (hmi_sys_mremap(t, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, a + hs) != MAP_FAILED)
        return 0;
    munmap(t, n);
    if (mmap(a + hs, n, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_HUGETLB, -1, 0) != MAP_FAILED) {
        if (!b->mpol || hmi_mbind(a + hs, n, b->mpol, b->nodes) == 0)
            return 0;
    }
    uint64_t rw = he < len ? he : len;
    if (mmap(a + hs, rw - hs, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
        return -2;
    if (he > rw && mmap(a + rw, he - rw, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
        return -2;
    return -1;
}

/* Split block a (len bytes, bytes of its ranges placed) handed out by tier index:
 * counted and recorded in the page map. */
static char *split_live(uint32_t index, char *a, uint64_t len, uint64_t bytes)
{
    struct hmi_bk_counts *c = &hmi_bk_counts[index][hm_stripe()];
    hm_stripe_add(&c->split_placed, 1);
    hm_stripe_add(&c->split_bytes, bytes);
    hmi_pagemap_set((uintptr_t)a, hmi_round_up(len, HMI_PAGE_2M), index, len / HMI_PAGE_4K);
    return a;
}

/* A kept split block of rg's shape for size bytes (hmi_keep_take: every range with a
 * byte in the object placed), recorded as live: its start, placed and *mask set as a
 * fresh one's would be; NULL when there is none. */
static char *split_reuse(struct hmi_bk *b, uint32_t index, size_t size, uint64_t len,
                         size_t align, const struct hmi_range *rg, uint32_t n,
                         uint64_t *placed, uint64_t *mask)
{
    uint64_t want = 0, bytes = 0;
    for (uint32_t i = 0; i < n; i++)
        if (rg[i].start < (rg[i].end < size ? rg[i].end : size))
            want |= 1ull << i;
    struct hmi_split_rec r = { .mask = want, .rg = rg, .n = n };
    char *a = (char *)hmi_keep_take(b, len, align, rg, n, want, &r.charge);
    if (!a)
        return NULL;
    if (split_put((uintptr_t)a, &r) != 0) { /* no room to remember it: give it up */
        hmi_keep_hit = 0;
        munmap(a, hmi_round_up(len, HMI_PAGE_2M));
        if (r.charge)
            hmi_uncharge(b, r.charge);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t e = rg[i].end < size ? rg[i].end : size;
        placed[i] = want >> i & 1 ? e - rg[i].start : 0;
        bytes += placed[i];
    }
    *mask = want;
    return split_live(index, a, len, bytes);
}

void *hmi_split_alloc(struct hmi_bk *b, uint32_t index, size_t size, size_t align,
                      int zero, const struct hmi_range *rg, uint32_t n, uint64_t *placed,
                      uint64_t *mask)
{
    struct hmi_bk_counts *c = &hmi_bk_counts[index][hm_stripe()];
    if (size > (1ull << HMI_ADDR_BITS) || n > 64)
        return NULL;
    uint64_t len = hmi_round_up(size, HMI_PAGE_4K);
    uint64_t span = hmi_round_up(len, HMI_PAGE_2M);
    if (len / HMI_PAGE_4K > HMI_E_MAX_PAGES)
        return NULL;
    char *a = zero ? NULL : split_reuse(b, index, size, len, align, rg, n, placed, mask);
    if (a)
        return a;
    hmi_keep_drain(b);                      /* a tier holds no more than it had live */
    a = hmi_map_span(0, len, span, align);
    if (a && !hmi_pagemap_covers(a)) {
        munmap(a, span);
        a = NULL;
    }
    if (!a)
        return NULL;
    uint64_t charged = 0, bytes = 0, refused = 0, huge_end = 0;
    uint32_t nplaced = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t s = rg[i].start, e = rg[i].end < size ? rg[i].end : size;
        placed[i] = 0;
        if (s >= e)
            continue;                       /* past the object's end */
        uint64_t lo = s, hi = hmi_round_up(e, HMI_PAGE_4K), ch;
        if (b->map_huge) {
            lo = s & ~(HMI_PAGE_2M - 1);
            hi = hmi_round_up(e, HMI_PAGE_2M);
            if (lo < huge_end)
                lo = huge_end;              /* the page is the previous range's */
            ch = hi > lo ? hi - lo : 0;
        } else {
            ch = hi - lo;
        }
        if (ch && hmi_charge(b, ch) != 0) {
            refused++;
            continue;
        }
        int r = 0;
        if (ch && b->map_huge) {
            r = split_huge(b, a, lo, hi, len);
        } else if (ch) {
            if (b->thp && hmi_sys_madvise(a + lo, hi - lo, MADV_HUGEPAGE) != 0)
                r = -1;
            if (!r && b->mpol && hmi_mbind(a + lo, hi - lo, b->mpol, b->nodes) != 0)
                r = -1;
        }
        if (r) {
            if (ch)
                hmi_uncharge(b, ch);
            refused++;
            if (r == -2) {                  /* a hole in the object: give it up */
                munmap(a, span);
                if (charged)
                    hmi_uncharge(b, charged);
                hm_stripe_add(&c->split_refused, n);
                return NULL;
            }
            continue;
        }
        if (b->map_huge && hi > huge_end)
            huge_end = hi;
        charged += ch;
        placed[i] = e - s;
        bytes += e - s;
        *mask |= 1ull << i;
        nplaced++;
    }
    /* a block with a range left out is never kept (mask 0): a later request may fit */
    struct hmi_split_rec rec = { .charge = charged, .mask = refused ? 0 : *mask, .rg = rg,
                                 .n = n };
    if (nplaced && split_put((uintptr_t)a, &rec) != 0)
        nplaced = 0, refused = n;           /* no room to remember its charge */
    if (refused)
        hm_stripe_add(&c->split_refused, refused);
    if (!nplaced) {
        munmap(a, span);
        if (charged)
            hmi_uncharge(b, charged);
        memset(placed, 0, n * sizeof *placed);
        *mask = 0;
        return NULL;
    }
    return split_live(index, a, len, bytes);
}
