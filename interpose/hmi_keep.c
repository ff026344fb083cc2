/* hmi_keep.c — freed blocks kept for the next request of the same shape (hmi_mmap.h):
 * a block of its own (hmi_mmap_alloc) or a split object (hmi_split_alloc) that is
 * freed stays mapped, placed and charged in a small table per tier, and a request from
 * that tier for a block of the same length (a split object: of the same site's ranges,
 * all of them placed) takes it back without a system call: no mapping, no hugepage
 * moved over a range, no page fault on the pages it already touched (a program that
 * allocates and frees the same arrays every iteration pays the mapping and the first
 * touch once). A request that finds no such block first unmaps every block the tier
 * keeps, so a tier never holds more than its largest set of live blocks held at once
 * (the hugepage pool hmtune run reserves from the trace stays enough). Requests for
 * zeroed memory (calloc) always get a fresh mapping. HMTUNE_KEEP_FREED bounds the bytes
 * kept per tier (0: every freed block is unmapped, as before). Lock-free: a slot is
 * claimed by CAS, and its fields are checked again once it is claimed. Private memory:
 * a fork child keeps its own copy of the table and of the kept mappings. */
#include "hmi_mmap.h"
#include "hmi_pagemap.h"

#include <sys/mman.h>

#define KEEP_SLOTS 8u
enum { K_EMPTY = 0, K_BUSY, K_FULL };

struct kept {
    uint32_t state;                         /* K_* */
    uint32_t n;                             /* split: its site's range count; 0: whole */
    uintptr_t addr;
    uint64_t len;                           /* the page map's length (a 4 KiB multiple) */
    uint64_t charge;                        /* what it is charged (hmi_charge) */
    uint64_t mask;                          /* split: the ranges placed */
    const struct hmi_range *rg;             /* split: its site's ranges */
};

static struct kept hmi_kept[HMI_MAX_TIERS][KEEP_SLOTS];
__thread int hmi_keep_hit __attribute__((tls_model("initial-exec")));
/* Per tier: bytes of address space kept (the limit's measure), and their charges. */
static uint64_t hmi_kept_len[HMI_MAX_TIERS];
static uint64_t hmi_kept_charge[HMI_MAX_TIERS];

/* Claim slot e when it is in state from (K_EMPTY or K_FULL): 1 when it is the caller's
 * now (K_BUSY), 0 when it is not in that state or another thread claimed it first. */
static int claim(struct kept *e, uint32_t from)
{
    return __atomic_compare_exchange_n(&e->state, &from, K_BUSY, 0, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
}

uint64_t hmi_keep_charged(uint32_t index)
{
    return __atomic_load_n(&hmi_kept_charge[index], __ATOMIC_RELAXED);
}

int hmi_keep_put(struct hmi_bk *b, uintptr_t a, uint64_t len, uint64_t charge,
                 const struct hmi_range *rg, uint32_t n, uint64_t mask)
{
    uint32_t index = (uint32_t)(b - hmi_bks);
    if (!b->keep_max || len > b->keep_max || (rg && !mask))
        return 0;
    uint64_t cur = __atomic_load_n(&hmi_kept_len[index], __ATOMIC_RELAXED);
    do {
        if (cur > b->keep_max - len)
            return 0;
    } while (!__atomic_compare_exchange_n(&hmi_kept_len[index], &cur, cur + len, 1,
                                          __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    for (uint32_t k = 0; k < KEEP_SLOTS; k++) {
        struct kept *e = &hmi_kept[index][k];
        if (!claim(e, K_EMPTY))
            continue;
        e->addr = a, e->len = len, e->charge = charge, e->rg = rg, e->n = n, e->mask = mask;
        __atomic_fetch_add(&hmi_kept_charge[index], charge, __ATOMIC_RELAXED);
        __atomic_store_n(&e->state, K_FULL, __ATOMIC_RELEASE);
        return 1;
    }
    __atomic_fetch_sub(&hmi_kept_len[index], len, __ATOMIC_RELAXED);
    return 0;
}

/* Empty slot e (claimed, K_BUSY) of tier index, giving its bytes back to the counts. */
static void release_slot(uint32_t index, struct kept *e)
{
    __atomic_fetch_sub(&hmi_kept_len[index], e->len, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&hmi_kept_charge[index], e->charge, __ATOMIC_RELAXED);
    __atomic_store_n(&e->state, K_EMPTY, __ATOMIC_RELEASE);
}

static int matches(const struct kept *e, uint64_t len, size_t align,
                   const struct hmi_range *rg, uint32_t n, uint64_t mask)
{
    return e->len == len && e->rg == rg && e->n == n && e->mask == mask &&
           !(e->addr & (align - 1));
}

uintptr_t hmi_keep_take(struct hmi_bk *b, uint64_t len, size_t align,
                        const struct hmi_range *rg, uint32_t n, uint64_t mask,
                        uint64_t *charge)
{
    uint32_t index = (uint32_t)(b - hmi_bks);
    if (!__atomic_load_n(&hmi_kept_len[index], __ATOMIC_RELAXED))
        return 0;
    for (uint32_t k = 0; k < KEEP_SLOTS; k++) {
        struct kept *e = &hmi_kept[index][k];
        if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != K_FULL ||
            !matches(e, len, align, rg, n, mask) || !claim(e, K_FULL))
            continue;
        if (!matches(e, len, align, rg, n, mask)) { /* taken and refilled meanwhile */
            __atomic_store_n(&e->state, K_FULL, __ATOMIC_RELEASE);
            continue;
        }
        uintptr_t a = e->addr;
        *charge = e->charge;
        release_slot(index, e);
        hm_stripe_add(&hmi_bk_counts[index][hm_stripe()].reused, 1);
        hmi_keep_hit = 1;
        return a;
    }
    return 0;
}

int hmi_keep_drain(struct hmi_bk *b)
{
    uint32_t index = (uint32_t)(b - hmi_bks);
    int any = 0;
    if (!__atomic_load_n(&hmi_kept_len[index], __ATOMIC_RELAXED))
        return 0;
    for (uint32_t k = 0; k < KEEP_SLOTS; k++) {
        struct kept *e = &hmi_kept[index][k];
        if (!claim(e, K_FULL))
            continue;
        munmap((void *)e->addr, (size_t)hmi_round_up(e->len, HMI_PAGE_2M));
        if (e->charge)
            hmi_uncharge(b, e->charge);
        release_slot(index, e);
        any = 1;
    }
    return any;
}
