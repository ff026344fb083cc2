/* hmi_tiers.h — what a tier is to every part of libhmalloc: its index (below
 * HMI_MAX_TIERS, a tier line of placement.txt each), the kind of backend it has, why
 * a request did not fit it, and the counters hmi_backend_stats reports for it
 * (run-stats.json's tiers, docs/formats.md §6). The backends' entry points are in
 * hmi_backend.h, which includes this; the files behind them (the tier table and its
 * capacity, the arena, the page map, UMF) need only this. Types and constants only. */
#ifndef HMI_TIERS_H
#define HMI_TIERS_H

#include <stdint.h>

#define HMI_MAX_TIERS   16          /* tier indexes 0..15 */

enum hmi_backend_kind {
    HMI_BK_DEFAULT = 0,
    HMI_BK_HUGETLB,
    HMI_BK_THP,
    HMI_BK_NUMA,
    HMI_BK_MEMKIND,
    HMI_BK_UMF_NUMA,
    HMI_BK_UMF_HUGETLB,
};

/* Why a request did not fit (hmi_backend_stats.refused; run-stats.json's
 * not_fitting_reasons, docs/formats.md §6). */
enum hmi_why {
    HMI_WHY_NONE = 0,       /* not set when counted: counted as HMI_WHY_SPLIT */
    HMI_WHY_CAPACITY,       /* the tier's capacity */
    HMI_WHY_KERNEL,         /* the kernel refused a mapping (also counted in map_failed) */
    HMI_WHY_CHUNKS,         /* the arena's chunk table is full */
    HMI_WHY_ALIGN,          /* an alignment that is not a power of two */
    HMI_WHY_UMF,            /* a umf:* tier's pool or provider had no memory */
    HMI_WHY_SPLIT,          /* a split object none of whose ranges could be placed
                             * (umf:hugetlb places none; elsewhere their mappings
                             * failed: split_refused) */
    HMI_WHY_OTHER,          /* anything else: a request too large for the page map */
    HMI_WHY_N
};

struct hmi_backend_stats {
    uint64_t capacity;      /* bytes, 0 when unlimited */
    uint64_t used;          /* bytes charged by live blocks */
    uint64_t high_water;    /* largest `used` seen */
    uint64_t placed;        /* blocks handed out */
    uint64_t freed;         /* blocks given back */
    uint64_t not_fitting;   /* requests refused: capacity, or the kernel had no memory */
    uint64_t map_failed;    /* mappings of blocks and arena chunks the kernel refused
                             * within the capacity: a hugepage pool or the nodes out
                             * of memory (their requests count in not_fitting too) */
    /* split objects (hmi_backend_alloc_split) */
    uint64_t split_placed;  /* objects with at least one range in the tier */
    uint64_t split_bytes;   /* bytes of their ranges placed (clipped to the objects) */
    uint64_t split_refused; /* ranges of placed-or-not split objects that stayed in
                             * ordinary memory: capacity, or the mapping failed */
    /* freed blocks kept for reuse (hmi_keep.c) */
    uint64_t reused;        /* blocks (whole or split) handed out again, counted in
                             * placed (and split_placed) too */
    uint64_t kept;          /* bytes charged by the freed blocks kept now (not in used;
                             * in high_water, which counts what the tier held) */
    uint64_t refused[HMI_WHY_N];    /* not_fitting by reason (refused[0] is 0) */
    uint64_t chunks;        /* 2 MiB arena chunks mapped (never given back) */
};

#endif
