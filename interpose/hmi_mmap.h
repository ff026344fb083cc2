/* hmi_mmap.h — how the tier backends map memory: blocks of their own for every mmap
 * backend and 2 MiB chunks for the arena (hmi_mmap.c), split objects (hmi_split.c),
 * and a tier's spec turned into its mapping (hmi_spec.c). Internal to the tier
 * backends: the interposer uses hmi_backend.h. */
#ifndef HMI_MMAP_H
#define HMI_MMAP_H

#include <stddef.h>
#include <stdint.h>
#include "hmi_backend_int.h"

/* ---- blocks and chunks (hmi_mmap.c) ---- */

/* Map a block of len bytes (len a multiple of 4 KiB; of 2 MiB for hugetlb) whose
 * start is aligned to max(align, 2 MiB), owning span = len rounded to 2 MiB of
 * address space (the tail past len stays PROT_NONE). NULL on failure. */
void *hmi_map_span(int huge, uint64_t len, uint64_t span, size_t align) HM_HIDDEN;
/* A block of its own for size bytes from tier index (b), charged and recorded in the
 * page map, or NULL. */
void *hmi_mmap_alloc(struct hmi_bk *b, uint32_t index, size_t size, size_t align) HM_HIDDEN;
/* Map a 2 MiB chunk for the arena (hmi_chunk_fn): the tier's pages, policy and nodes. */
void *hmi_map_chunk(uint32_t index, unsigned code) HM_HIDDEN;

/* ---- split objects (hmi_split.c) ---- */

/* Live split blocks: while 0, no freed block needs hmi_split_take. */
extern uint64_t hmi_split_live HM_HIDDEN;
/* Map the split block table once (hmi_backend_open); -1 with why appended. */
int hmi_split_init(struct hmi_msg *why) HM_HIDDEN;
/* Take block a out of the table: 1 with its charge, 0 when it is not a split block. */
int hmi_split_take(uintptr_t a, uint64_t *charge) HM_HIDDEN;
/* hmi_backend_alloc_split's work once the tier is known (b, index; size and align
 * normalized). */
void *hmi_split_alloc(struct hmi_bk *b, uint32_t index, size_t size, size_t align,
                      const struct hmi_range *rg, uint32_t n, uint64_t *placed,
                      uint64_t *mask) HM_HIDDEN;

/* ---- specs (hmi_spec.c) ---- */

/* Set up b (zeroed, capacity set) as spec: its kind and mapping, the page map and
 * chunk tables mapped, the mapping probed. 0, or -1 with the reason appended to why
 * (which already names the tier and spec). */
int hmi_spec_open(struct hmi_bk *b, const char *spec, uint64_t capacity, int unlimited,
                  struct hmi_msg *why) HM_HIDDEN;

#endif
