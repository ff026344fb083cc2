/* hmi_charge.c — a block charged to its tier's capacity (hmi_charge.h): the stripe's
 * reserve, the tier's shared counter, and before a refusal every reserve and kept
 * block given back (hmi_capacity.c holds the counters, hmi_keep.c the kept blocks).
 * Lock-free. */
#include "hmi_charge.h"
#include "hmi_mmap.h"   /* hmi_keep_drain */

/* Before n bytes are refused: every reserve back to the tier, then the freed blocks
 * it keeps unmapped (hmi_keep.c); 0 when n fits then. */
static int refill(struct hmi_bk *b, uint64_t n)
{
    hmi_reserves_back(b);
    if (hmi_charge_shared(b, n) == 0)
        return 0;
    return hmi_keep_drain(b) ? hmi_charge_shared(b, n) : -1;
}

int hmi_charge(struct hmi_bk *b, uint64_t n)
{
    if (n <= HMI_CREDIT_SMALL && b->capacity) {
        uint64_t *c = &hmi_bk_credit[b - hmi_bks][hm_stripe()].bytes;
        uint64_t have = __atomic_load_n(c, __ATOMIC_RELAXED);
        while (have >= n) {
            if (__atomic_compare_exchange_n(c, &have, have - n, 1, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                return 0;
        }
        if (hmi_charge_shared(b, HMI_CREDIT_CHUNK) == 0) {
            __atomic_fetch_add(c, HMI_CREDIT_CHUNK - n, __ATOMIC_RELAXED);
            hmi_mark_high_water(b);
            return 0;
        }
    }
    if (hmi_charge_shared(b, n) != 0 && refill(b, n) != 0) {
        hmi_why = HMI_WHY_CAPACITY;
        return -1;
    }
    hmi_mark_high_water(b);
    return 0;
}

int hmi_charge_unmarked(struct hmi_bk *b, uint64_t n)
{
    if (n <= HMI_CREDIT_SMALL && b->capacity)
        return hmi_charge(b, n);
    if (hmi_charge_shared(b, n) != 0 && refill(b, n) != 0) {
        hmi_why = HMI_WHY_CAPACITY;
        return -1;
    }
    return 0;
}
