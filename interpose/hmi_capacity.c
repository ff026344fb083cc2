/* hmi_capacity.c — each tier's per-process capacity: the tier table, the shared
 * `used` counter with its striped reserves (hmi_capacity.h says why), the high-water
 * mark, and the striped block counts. Lock-free. Charging a block is hmi_charge.c's. */
#include "hmi_capacity.h"

struct hmi_bk hmi_bks[HMI_MAX_TIERS];
struct hmi_bk_counts hmi_bk_counts[HMI_MAX_TIERS][HM_STRIPES];
struct hmi_bk_credit hmi_bk_credit[HMI_MAX_TIERS][HM_STRIPES];
__thread uint8_t hmi_why __attribute__((tls_model("initial-exec")));

/* ---- capacity ---- */

uint64_t hmi_reserves(const struct hmi_bk *b)
{
    uint64_t r = 0;
    for (uint32_t k = 0; k < HM_STRIPES; k++)
        r += __atomic_load_n(&hmi_bk_credit[b - hmi_bks][k].bytes, __ATOMIC_RELAXED);
    return r;
}

void hmi_mark_high_water(struct hmi_bk *b)
{
    uint64_t used = __atomic_load_n(&b->used, __ATOMIC_RELAXED), r = hmi_reserves(b);
    uint64_t now = used > r ? used - r : 0;
    uint64_t hw = __atomic_load_n(&b->high_water, __ATOMIC_RELAXED);
    while (now > hw && !__atomic_compare_exchange_n(&b->high_water, &hw, now, 1,
                                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

void hmi_reserves_back(struct hmi_bk *b)
{
    for (uint32_t k = 0; k < HM_STRIPES; k++) {
        uint64_t x = __atomic_exchange_n(&hmi_bk_credit[b - hmi_bks][k].bytes, 0, __ATOMIC_RELAXED);
        if (x)
            __atomic_fetch_sub(&b->used, x, __ATOMIC_RELAXED);
    }
}

void hmi_uncharge(struct hmi_bk *b, uint64_t n)
{
    if (n <= HMI_CREDIT_SMALL && b->capacity) {
        uint64_t *c = &hmi_bk_credit[b - hmi_bks][hm_stripe()].bytes;
        uint64_t now = __atomic_add_fetch(c, n, __ATOMIC_RELAXED);
        /* keep one chunk, give the rest back (the CAS fails only when another
         * thread of a shared stripe moved it: then that thread decides) */
        if (now > 2 * HMI_CREDIT_CHUNK &&
            __atomic_compare_exchange_n(c, &now, HMI_CREDIT_CHUNK, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            __atomic_fetch_sub(&b->used, now - HMI_CREDIT_CHUNK, __ATOMIC_RELAXED);
        return;
    }
    __atomic_fetch_sub(&b->used, n, __ATOMIC_RELAXED);
}

void hmi_count_sum(uint32_t index, struct hmi_backend_stats *out)
{
    for (uint32_t k = 0; k < HM_STRIPES; k++) {
        const struct hmi_bk_counts *c = &hmi_bk_counts[index][k];
        out->placed += __atomic_load_n(&c->placed, __ATOMIC_RELAXED);
        out->freed += __atomic_load_n(&c->freed, __ATOMIC_RELAXED);
        out->not_fitting += __atomic_load_n(&c->not_fitting, __ATOMIC_RELAXED);
        out->map_failed += __atomic_load_n(&c->map_failed, __ATOMIC_RELAXED);
        out->split_placed += __atomic_load_n(&c->split_placed, __ATOMIC_RELAXED);
        out->split_bytes += __atomic_load_n(&c->split_bytes, __ATOMIC_RELAXED);
        out->split_refused += __atomic_load_n(&c->split_refused, __ATOMIC_RELAXED);
        out->reused += __atomic_load_n(&c->reused, __ATOMIC_RELAXED);
        for (uint32_t w = 1; w < HMI_WHY_N; w++)
            out->refused[w] += __atomic_load_n(&c->refused[w], __ATOMIC_RELAXED);
    }
}
