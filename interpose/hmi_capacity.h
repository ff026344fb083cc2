/* hmi_capacity.h — the tier table (hmi_bks) and what each tier counts (hmi_capacity.c):
 * its shared `used` counter with the stripes' reserves, the high-water mark, and the
 * striped block counts with the reasons of refusals. Charging a block against the
 * capacity, which may give kept blocks back first, is hmi_charge.h's. Internal to the
 * tier backends. */
#ifndef HMI_CAPACITY_H
#define HMI_CAPACITY_H

#include <stdint.h>
#include "hmi_backend_int.h"

/* Why a request did not fit (enum hmi_why, hmi_tiers.h): the calling thread's
 * hmi_why, set where the request was refused, cleared when the next request comes
 * (request_tier in hmi_backend.c) and read when the refusal is counted (hmi_count). */
extern __thread uint8_t hmi_why __attribute__((tls_model("initial-exec"))) HM_HIDDEN;

/* Block counts, striped (hm_util.h). */
struct hmi_bk_counts {
    uint64_t placed, freed, not_fitting, map_failed;
    uint64_t split_placed, split_bytes, split_refused;
    uint64_t reused;                        /* blocks handed out again (hmi_keep.c) */
    uint64_t refused[HMI_WHY_N];            /* not_fitting by hmi_why (0 unused) */
} __attribute__((aligned(64)));

/* Capacity reserves, striped: a charge of at most HMI_CREDIT_SMALL bytes comes out
 * of the calling thread's stripe's reserve, refilled HMI_CREDIT_CHUNK at a time from
 * the tier's shared counter; an uncharge goes back to it, the excess over two chunks
 * to the tier. Small blocks allocated at a high rate by several threads then write
 * no shared line (bench-interpose). Before a request is refused every reserve goes
 * back to the tier, so refusals stay exact; the tier's `used` counts the reserves
 * and hmi_backend_stats subtracts them. The high-water mark is taken whenever the
 * shared counter moves (exact for blocks over HMI_CREDIT_SMALL), so with small
 * blocks it may lag by less than a chunk per allocating thread. */
#define HMI_CREDIT_SMALL (16u << 10)
#define HMI_CREDIT_CHUNK (64u << 10)
struct hmi_bk_credit {
    uint64_t bytes;
} __attribute__((aligned(64)));

extern struct hmi_bk hmi_bks[HMI_MAX_TIERS] HM_HIDDEN;
extern struct hmi_bk_credit hmi_bk_credit[HMI_MAX_TIERS][HM_STRIPES] HM_HIDDEN;
extern struct hmi_bk_counts hmi_bk_counts[HMI_MAX_TIERS][HM_STRIPES] HM_HIDDEN;

/* The tier's shared counter: used + n <= capacity or refused (-1, nothing changed). */
HM_INLINE int hmi_charge_shared(struct hmi_bk *b, uint64_t n)
{
    uint64_t cur = __atomic_load_n(&b->used, __ATOMIC_RELAXED), next;
    do {
        if (b->capacity && (n > b->capacity || cur > b->capacity - n))
            return -1;
        next = cur + n;
    } while (!__atomic_compare_exchange_n(&b->used, &cur, next, 1, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return 0;
}
/* Give n bytes back (to the stripe's reserve when small, else to the tier). */
void hmi_uncharge(struct hmi_bk *b, uint64_t n) HM_HIDDEN;
/* After the shared counter moved: the bytes charged now (without the reserves) raise
 * the high-water mark. Charges served from a reserve do not look, so the mark may lag
 * by less than a chunk per thread allocating small blocks. */
void hmi_mark_high_water(struct hmi_bk *b) HM_HIDDEN;
/* Give every stripe's reserve back to the tier (before refusing a request). */
void hmi_reserves_back(struct hmi_bk *b) HM_HIDDEN;
/* The bytes the stripes' reserves hold of b's `used`. */
uint64_t hmi_reserves(const struct hmi_bk *b) HM_HIDDEN;
/* Add tier index's block counts (every stripe) to out. */
void hmi_count_sum(uint32_t index, struct hmi_backend_stats *out) HM_HIDDEN;

enum { HMI_C_PLACED, HMI_C_FREED, HMI_C_NOT_FITTING, HMI_C_MAP_FAILED };

/* Count one block placed, freed or not fitting (with its reason, hmi_why), or one
 * mapping the kernel refused (which is the reason of its request), in b's calling
 * thread's stripe (inline: every allocation and free counts one). */
HM_INLINE void hmi_count(const struct hmi_bk *b, int which)
{
    struct hmi_bk_counts *c = &hmi_bk_counts[b - hmi_bks][hm_stripe()];
    uint64_t *f = which == HMI_C_PLACED ? &c->placed : which == HMI_C_FREED ? &c->freed
                : which == HMI_C_NOT_FITTING ? &c->not_fitting : &c->map_failed;
    hm_stripe_add(f, 1);
    if (which == HMI_C_MAP_FAILED)
        hmi_why = HMI_WHY_KERNEL;
    if (which == HMI_C_NOT_FITTING) {
        hm_stripe_add(&c->refused[hmi_why ? hmi_why : HMI_WHY_SPLIT], 1);
        hmi_why = HMI_WHY_NONE;
    }
}

#endif
