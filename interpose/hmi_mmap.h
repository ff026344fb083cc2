/* hmi_mmap.h — how the tier backends map memory: blocks of their own for every mmap
 * backend and 2 MiB chunks for the arena (hmi_mmap.c), split objects (hmi_split.c),
 * and a tier's spec turned into its mapping (hmi_spec.c). Internal to the tier
 * backends: the interposer uses hmi_backend.h. */
#ifndef HMI_MMAP_H
#define HMI_MMAP_H

#include <stddef.h>
#include <stdint.h>
#include "hmi_capacity.h"
#include "hmi_placement.h"   /* struct hmi_range */

/* ---- blocks and chunks (hmi_mmap.c) ---- */

/* Map a block of len bytes (len a multiple of 4 KiB; of 2 MiB for hugetlb) whose
 * start is aligned to max(align, 2 MiB), owning span = len rounded to 2 MiB of
 * address space (the tail past len stays PROT_NONE). NULL on failure. */
void *hmi_map_span(int huge, uint64_t len, uint64_t span, size_t align) HM_HIDDEN;
/* A block of its own for size bytes from tier index (b), charged and recorded in the
 * page map, or NULL: a kept block of the same length (hmi_keep_take) unless zero. */
void *hmi_mmap_alloc(struct hmi_bk *b, uint32_t index, size_t size, size_t align,
                     int zero) HM_HIDDEN;
/* Map a 2 MiB chunk for the arena (hmi_chunk_fn): the tier's pages, policy and nodes. */
void *hmi_map_chunk(uint32_t index, unsigned code) HM_HIDDEN;

/* ---- split objects (hmi_split.c) ---- */

/* Live split blocks: while 0, no freed block needs hmi_split_take. */
extern uint64_t hmi_split_live HM_HIDDEN;
/* Map the split block table once (hmi_backend_open); -1 with why appended. */
int hmi_split_init(struct hmi_msg *why) HM_HIDDEN;
/* What a live split block was given: its charge, its site's ranges and which of them
 * were placed. */
struct hmi_split_rec {
    uint64_t charge, mask;
    const struct hmi_range *rg;
    uint32_t n;
};
/* Take block a out of the table: 1 with its record, 0 when it is not a split block. */
int hmi_split_take(uintptr_t a, struct hmi_split_rec *r) HM_HIDDEN;
/* hmi_backend_alloc_split's work once the tier is known (b, index; size and align
 * normalized); zero: never a kept block. */
void *hmi_split_alloc(struct hmi_bk *b, uint32_t index, size_t size, size_t align,
                      int zero, const struct hmi_range *rg, uint32_t n, uint64_t *placed,
                      uint64_t *mask) HM_HIDDEN;

/* ---- freed blocks kept for reuse (hmi_keep.c) ---- */

/* Keep block a (len bytes in the page map, charged charge; a split object: rg, n and
 * the mask of its ranges placed, 0 when one was left out; a whole block: rg NULL,
 * n 0) for a later request of the same shape: 1 kept (the caller has cleared its page
 * map entries and must not unmap it), 0 when not kept (the tier keeps no more:
 * HMTUNE_KEEP_FREED; a split object with a range left out). */
int hmi_keep_put(struct hmi_bk *b, uintptr_t a, uint64_t len, uint64_t charge,
                 const struct hmi_range *rg, uint32_t n, uint64_t mask) HM_HIDDEN;
/* A kept block of exactly that shape whose start is aligned to align (a power of
 * two), taken out of the table with its charge (still charged to the tier; the caller
 * records it in the page map), counted as reused; 0 when none. */
uintptr_t hmi_keep_take(struct hmi_bk *b, uint64_t len, size_t align,
                        const struct hmi_range *rg, uint32_t n, uint64_t mask,
                        uint64_t *charge) HM_HIDDEN;
/* Unmap every block b keeps and give back their charges: 1 when there was one. */
int hmi_keep_drain(struct hmi_bk *b) HM_HIDDEN;
/* The calling thread's last allocation was a kept block (hmi_backend_reused). */
extern __thread int hmi_keep_hit HM_HIDDEN;
/* Bytes charged to tier index by the blocks it keeps. */
uint64_t hmi_keep_charged(uint32_t index) HM_HIDDEN;

/* ---- specs (hmi_spec.c) ---- */

/* Set up b (zeroed, capacity set) as spec: its kind and mapping, the page map and
 * chunk tables mapped, the mapping probed. 0, or -1 with the reason appended to why
 * (which already names the tier and spec). */
int hmi_spec_open(struct hmi_bk *b, const char *spec, uint64_t capacity, int unlimited,
                  struct hmi_msg *why) HM_HIDDEN;

#endif
