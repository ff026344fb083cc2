/* hmi_pagemap.h — the 2 MiB page map that says which tier owns each mmap'd block and
 * arena chunk (hmi_pagemap.c), and the table of every arena chunk mapped. The lookups
 * are inline: hmi_owner runs them on every free of the application. Internal to the
 * tier backends (hmi_backend.c, hmi_mmap.c, hmi_split.c, hmi_spec.c). */
#ifndef HMI_PAGEMAP_H
#define HMI_PAGEMAP_H

#include <stddef.h>
#include <stdint.h>
#include "hmi_classes.h"   /* the arena's slabs and size classes */
#include "hmi_capacity.h"

#define HMI_GRAN_SHIFT  21                  /* one page-map entry per 2 MiB */
#define HMI_ADDR_BITS   47                  /* user address space mapped here */

/* Page-map entry: bits 0-4 tier + 1 (0: not ours), bit 5 set on a block's first
 * granule, bits 6-31 on that granule the block's mapped length in 4 KiB pages.
 * Without bit 5, bits 6-31 nonzero: the granule is an arena chunk (hmi_arena.h),
 * bits 6-8 its slab size code and bits 9-31 its row of the chunk table + 1, where
 * each slab's class + 1 is (0: not cut yet); zero: a later granule of a block. */
#define HMI_E_TIER_MASK 0x1fu
#define HMI_E_HEAD      0x20u
#define HMI_E_PAGES_SHIFT 6
#define HMI_E_MAX_PAGES ((1ull << (32 - HMI_E_PAGES_SHIFT)) - 1)   /* 256 GiB blocks */
/* Without bit 5, bits 6-31 all set: a granule of a umf:* tier's UMF memory (no chunk
 * table has that many rows, so hmi_arena_object says -1). */
#define HMI_E_UMF       ((uint32_t)HMI_E_MAX_PAGES << HMI_E_PAGES_SHIFT)
#define HMI_E_ROW_SHIFT 9
#define HMI_CHUNKS_MAX  (1u << 18)          /* chunk table rows: 512 GiB of chunks */

extern uint32_t *hmi_pagemap HM_HIDDEN;    /* published with a release store */
/* Per chunk table row, the class + 1 of each of its chunk's slabs (0: none). */
extern uint16_t (*hmi_chunk_slabs)[HMI_SLABS_MAX] HM_HIDDEN;

/* Map the page map and the arena chunk table once (hmi_backend_open,
 * single-threaded); -1 with why appended. */
int hmi_pagemap_init(struct hmi_msg *why) HM_HIDDEN;
int hmi_chunks_init(struct hmi_msg *why) HM_HIDDEN;

/* Granules [a, a + span) belong to tier index; the first one records pages. */
void hmi_pagemap_set(uintptr_t a, uint64_t span, uint32_t index, uint64_t pages) HM_HIDDEN;
/* Granules [a, a + span) are tier index's UMF memory (HMI_E_UMF). */
void hmi_pagemap_set_umf(uintptr_t a, uint64_t span, uint32_t index) HM_HIDDEN;
/* Whether entry e is a granule of UMF memory. */
static inline int hmi_is_umf(uint32_t e)
{
    return (e & ~HMI_E_TIER_MASK) == HMI_E_UMF;
}
/* Granules [a, a + span) are no tier's. */
void hmi_pagemap_clear(uintptr_t a, uint64_t span) HM_HIDDEN;

/* A slot for one more arena chunk in the chunk table, or -1 when it is full. */
int64_t hmi_chunk_slot(void) HM_HIDDEN;
/* Chunk a (2 MiB aligned, mapped) of tier index, cut into slabs of size code, goes
 * in slot k and in the page map. */
void hmi_chunk_record(int64_t k, uintptr_t a, uint32_t index, unsigned code) HM_HIDDEN;
/* Unmap tier index's arena chunks (hmi_backend_close: nothing of them is live). */
void hmi_chunks_unmap(uint32_t index) HM_HIDDEN;

/* Whether a block mapped at a can be recorded in the page map: below 2^HMI_ADDR_BITS
 * and on a granule (2 MiB) boundary. */
static inline int hmi_pagemap_covers(const void *a)
{
    uintptr_t x = (uintptr_t)a;
    return !(x >> HMI_ADDR_BITS) && !(x & (HMI_PAGE_2M - 1));
}

/* The page-map entry of p's granule (0: not ours). */
HM_INLINE uint32_t hmi_pagemap_get(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    uint32_t *m = __atomic_load_n(&hmi_pagemap, __ATOMIC_ACQUIRE);
    if (!m || (a >> HMI_ADDR_BITS))
        return 0;
    return __atomic_load_n(&m[a >> HMI_GRAN_SHIFT], __ATOMIC_ACQUIRE);
}

/* The class of p when it is an object's start in an arena chunk (entry e), else -1. */
static inline int hmi_arena_object(uint32_t e, const void *p)
{
    if ((e & HMI_E_HEAD) || !(e >> HMI_E_PAGES_SHIFT))
        return -1;
    uint32_t row = (e >> HMI_E_ROW_SHIFT) - 1;
    unsigned shift = HMI_SLAB_SHIFT + ((e >> HMI_E_PAGES_SHIFT) & 7u);
    if (row >= HMI_CHUNKS_MAX || shift > 21)
        return -1;
    uintptr_t off = (uintptr_t)p & (HMI_PAGE_2M - 1);
    unsigned c1 = __atomic_load_n(&hmi_chunk_slabs[row][off >> shift], __ATOMIC_ACQUIRE);
    if (!c1 || c1 > HMI_ARENA_CLASSES)
        return -1;
    size_t cs = hmi_arena_class_size(c1 - 1), so = off & (((uintptr_t)1 << shift) - 1);
    return so % cs == 0 && so + cs <= ((size_t)1 << shift) ? (int)c1 - 1 : -1;
}

#endif
