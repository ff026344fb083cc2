/* hmi_pagemap.c — the 2 MiB page map: one 32-bit entry per 2 MiB of the 47-bit
 * address space (256 MiB of MAP_NORESERVE address space, touched only where blocks
 * live) holding the tier of each mmap'd block and arena chunk (hmi_pagemap.h gives the
 * entry's layout and the inline lookups); and the table of every arena chunk mapped,
 * so that hmi_backend_close can unmap a tier's. See hmi_backend.h, "Ownership". */
#include "hmi_pagemap.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#define MAP_ENTRIES (1ull << (HMI_ADDR_BITS - HMI_GRAN_SHIFT))

uint32_t *hmi_pagemap;                      /* published with a release store */
/* Every arena chunk mapped, so that hmi_backend_close can unmap a tier's: append-
 * only, MAP_NORESERVE. */
#define CHUNKS_MAX  HMI_CHUNKS_MAX
static uint32_t *hmi_chunks;                /* chunk address >> GRAN_SHIFT; 0: none */
uint16_t (*hmi_chunk_slabs)[HMI_SLABS_MAX]; /* its slabs' classes + 1 */
static uint32_t hmi_nchunks;

/* Map *slot once: bytes of MAP_NORESERVE zeroes, published with a release store (the
 * tables are set up by hmi_backend_open, single-threaded). -1 with why appended. */
static int map_table(uint32_t **slot, size_t bytes, const char *what, struct hmi_msg *why)
{
    if (__atomic_load_n(slot, __ATOMIC_ACQUIRE))
        return 0;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        int e = errno;
        hmi_msg_str(why, "cannot map the ");
        hmi_msg_str(why, what);
        hmi_msg_str(why, ": ");
        hmi_msg_errno(why, e);
        return -1;
    }
    __atomic_store_n(slot, (uint32_t *)m, __ATOMIC_RELEASE);
    return 0;
}

int hmi_pagemap_init(struct hmi_msg *why)
{
    return map_table(&hmi_pagemap, MAP_ENTRIES * sizeof(uint32_t), "ownership page map", why);
}

void hmi_pagemap_set(uintptr_t a, uint64_t span, uint32_t index, uint64_t pages)
{
    uint32_t *m = hmi_pagemap;
    uint64_t g0 = a >> HMI_GRAN_SHIFT, n = span >> HMI_GRAN_SHIFT;
    for (uint64_t g = 1; g < n; g++)
        __atomic_store_n(&m[g0 + g], index + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&m[g0], (uint32_t)((index + 1) | HMI_E_HEAD | (pages << HMI_E_PAGES_SHIFT)),
                     __ATOMIC_RELEASE);
}

void hmi_pagemap_set_umf(uintptr_t a, uint64_t span, uint32_t index)
{
    uint32_t *m = hmi_pagemap;
    uint64_t g0 = a >> HMI_GRAN_SHIFT, n = span >> HMI_GRAN_SHIFT;
    for (uint64_t g = 0; g < n; g++)
        __atomic_store_n(&m[g0 + g], (index + 1) | HMI_E_UMF, __ATOMIC_RELEASE);
}

void hmi_pagemap_clear(uintptr_t a, uint64_t span)
{
    uint32_t *m = hmi_pagemap;
    uint64_t g0 = a >> HMI_GRAN_SHIFT, n = span >> HMI_GRAN_SHIFT;
    for (uint64_t g = 0; g < n; g++)
        __atomic_store_n(&m[g0 + g], 0, __ATOMIC_RELEASE);
}

/* ---- arena chunks in the page map ---- */

int hmi_chunks_init(struct hmi_msg *why)
{
    uint32_t *slabs = (uint32_t *)hmi_chunk_slabs;
    if (map_table(&slabs, CHUNKS_MAX * sizeof hmi_chunk_slabs[0], "arena slab table", why))
        return -1;
    hmi_chunk_slabs = (uint16_t (*)[HMI_SLABS_MAX])slabs;
    return map_table(&hmi_chunks, CHUNKS_MAX * sizeof(uint32_t), "arena chunk table", why);
}

int64_t hmi_chunk_slot(void)
{
    uint32_t k = __atomic_fetch_add(&hmi_nchunks, 1, __ATOMIC_RELAXED);
    if (k >= CHUNKS_MAX) {
        hmi_why = HMI_WHY_CHUNKS;
        return -1;
    }
    return (int64_t)k;
}

void hmi_chunk_record(int64_t k, uintptr_t a, uint32_t index, unsigned code)
{
    hmi_chunks[k] = (uint32_t)(a >> HMI_GRAN_SHIFT);
    __atomic_store_n(&hmi_pagemap[a >> HMI_GRAN_SHIFT],
                     (index + 1) | (code << HMI_E_PAGES_SHIFT) |
                         ((uint32_t)(k + 1) << HMI_E_ROW_SHIFT), __ATOMIC_RELEASE);
}

void hmi_chunks_unmap(uint32_t index)
{
    uint32_t n = __atomic_load_n(&hmi_nchunks, __ATOMIC_RELAXED);
    for (uint32_t k = 0; hmi_chunks && k < n && k < CHUNKS_MAX; k++) {
        uintptr_t a = (uintptr_t)hmi_chunks[k] << HMI_GRAN_SHIFT;
        if (!a || (hmi_pagemap_get((void *)a) & HMI_E_TIER_MASK) != index + 1)
            continue;
        hmi_pagemap_clear(a, HMI_PAGE_2M);
        munmap((void *)a, HMI_PAGE_2M);
        hmi_chunks[k] = 0;
        memset(hmi_chunk_slabs[k], 0, sizeof hmi_chunk_slabs[k]);
    }
}
