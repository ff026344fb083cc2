/* hmi_charge.h — a block charged to its tier's capacity (hmi_charge.c): from the
 * calling thread's stripe's reserve when small, else from the tier's shared counter;
 * before a refusal every reserve goes back to the tier and the freed blocks the tier
 * keeps are unmapped (hmi_keep.c), so a refusal is exact. Internal to the tier
 * backends. */
#ifndef HMI_CHARGE_H
#define HMI_CHARGE_H

#include <stdint.h>
#include "hmi_capacity.h"

/* Capacity: charge n bytes (0) or refuse (-1, nothing changed, hmi_why set); they
 * are given back with hmi_uncharge (hmi_capacity.h). */
int hmi_charge(struct hmi_bk *b, uint64_t n) HM_HIDDEN;
/* As hmi_charge for a block about to be mapped, but the high-water mark moves only
 * when hmi_mark_high_water says the mapping succeeded: a mapping the kernel refuses
 * (a hugepage pool run dry) leaves no mark. */
int hmi_charge_unmarked(struct hmi_bk *b, uint64_t n) HM_HIDDEN;

#endif
