/* hmi_backend_int.h — the core every tier backend file shares: a tier's state
 * (struct hmi_bk), one-line reasons (hmi_msg.c), mbind plus the probe mapping that
 * says whether a tier can map memory (hmi_mmap.c), memkind's and UMF's opening and
 * objects, and node lists (hmi_nodes.c). hmi_backend_memkind.c needs only this; the
 * tier table, its capacity and block counts are in hmi_capacity.h (charging a block:
 * hmi_charge.h), the page map and the block and chunk mapping in hmi_pagemap.h and
 * hmi_mmap.h. Not for the rest of the interposer: use hmi_backend.h. */
#ifndef HMI_BACKEND_INT_H
#define HMI_BACKEND_INT_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"
#include "hmi_tiers.h"

#define HMI_MAX_NODES 1024u                 /* numa:LIST node ids are < this */
#define HMI_NODE_WORDS (HMI_MAX_NODES / (8 * sizeof(unsigned long)))

enum { HMI_TIER_UNUSED = 0, HMI_TIER_OK, HMI_TIER_UNAVAILABLE };

struct hmi_bk {
    int state;                              /* HMI_TIER_* */
    enum hmi_backend_kind kind;
    uint64_t capacity;                      /* 0: unlimited */
    /* how a block or chunk is mapped (hmi_backend_open, hmi_mk_open) */
    int map_huge;                           /* MAP_HUGETLB, 2 MiB pages */
    int thp;                                /* madvise(MADV_HUGEPAGE) */
    int mpol;                               /* mbind mode, 0: none (MPOL_DEFAULT) */
    unsigned long nodes[HMI_NODE_WORDS];    /* the mbind mask */
    size_t arena_max;                       /* requests up to this go to the arena */
    void *umf_pool;                         /* umf:* tiers: the UMF pool (hmi_backend_umf.c) */
    size_t umf_poolable;                    /* objects up to this are in its slabs */
    uint64_t keep_max;                      /* bytes of freed blocks kept (hmi_keep.c) */
    /* written by every allocation: a line of their own, away from the fields
     * above that every allocation reads */
    uint64_t used __attribute__((aligned(64)));     /* atomics */
    uint64_t high_water;
};

#define HMI_PAGE_4K 4096ull
#define HMI_PAGE_2M (2ull << 20)

HM_INLINE uint64_t hmi_round_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

/* ---- messages (hmi_msg.c) ---- */

/* A bounded one-line message builder for reasons (no stdio). */
struct hmi_msg {
    char *buf;
    size_t cap, pos;
};
void hmi_msg_init(struct hmi_msg *m, char *buf, size_t cap) HM_HIDDEN;
void hmi_msg_str(struct hmi_msg *m, const char *s) HM_HIDDEN;
void hmi_msg_u64(struct hmi_msg *m, uint64_t v) HM_HIDDEN;
/* strerror's description of err (no allocation, no locale). */
void hmi_msg_errno(struct hmi_msg *m, int err) HM_HIDDEN;

/* ---- mapping (hmi_mmap.c) ---- */

/* mbind(2) by raw syscall (no libnuma): mask has HMI_MAX_NODES + 1 bits. */
long hmi_mbind(void *a, size_t len, int mode, const unsigned long *mask) HM_HIDDEN;

/* Map and release the smallest block b can map: 0 when b's mapping and mbind work,
 * else -1 with the reason appended. */
int hmi_probe_map(struct hmi_bk *b, struct hmi_msg *why) HM_HIDDEN;

/* ---- memkind (hmi_backend_memkind.c) ---- */

/* Set b's map_huge, mpol and nodes from the kind; 0, or -1 with the reason appended. */
int hmi_mk_open(struct hmi_bk *b, const char *kind, struct hmi_msg *why) HM_HIDDEN;

/* ---- UMF (hmi_backend_umf.c; opening and closing: hmi_umf_providers.c) ---- */

/* Set up b (tier index) as umf:numa:ARGS or umf:hugetlb (spec after "umf:"): 0, or -1
 * with the reason appended. */
int hmi_umf_open(struct hmi_bk *b, uint32_t index, const char *spec, uint64_t capacity,
                 int unlimited, struct hmi_msg *why) HM_HIDDEN;
/* An object of size bytes aligned to align (>= 16, a power of two) from b's pool,
 * charged to b's capacity; NULL when it does not fit. zero: cleared. */
void *hmi_umf_alloc(struct hmi_bk *b, size_t size, size_t align, int zero) HM_HIDDEN;
/* Free p, an object of b's pools, and give back its charge; usable: what
 * hmi_umf_usable says of p when the caller has it, else 0. */
void hmi_umf_free(struct hmi_bk *b, void *p, size_t usable) HM_HIDDEN;
/* One zero-filled, 2 MiB-aligned arena chunk (hmi_arena.h) from tier index's UMF
 * provider, recorded as a chunk of slabs of size code; NULL when the provider has
 * none. */
void *hmi_umf_chunk(uint32_t index, unsigned code) HM_HIDDEN;
/* Bytes usable at p, an object of b's pool. */
size_t hmi_umf_usable(const struct hmi_bk *b, const void *p) HM_HIDDEN;
/* Destroy b's pool and give its memory back (hmi_backend_close: nothing is live). */
void hmi_umf_close(struct hmi_bk *b) HM_HIDDEN;
void hmi_umf_atfork_prepare(void) HM_HIDDEN;
void hmi_umf_atfork_release(void) HM_HIDDEN;

/* ---- node lists (hmi_nodes.c) ---- */

/* "0,2,4-7" into mask (HMI_NODE_WORDS words): 0, or -1 with the reason appended. */
int hmi_parse_nodes(const char *s, unsigned long *mask, struct hmi_msg *why) HM_HIDDEN;
/* Every node of mask present (/sys/devices/system/node/nodeN): 0, or -1 with why. */
int hmi_nodes_present(const unsigned long *mask, struct hmi_msg *why) HM_HIDDEN;

#endif
