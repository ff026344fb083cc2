/* hmi_backend_int.h — the core every tier backend file shares: the tier table
 * (struct hmi_bk), capacity accounting and block counts (hmi_capacity.c), one-line
 * reasons (hmi_msg.c), and mbind plus the probe mapping that says whether a tier can
 * map memory (hmi_mmap.c). hmi_backend_memkind.c needs only this; the page map and
 * the block and chunk mapping are in hmi_pagemap.h and hmi_mmap.h. Not for the rest
 * of the interposer: use hmi_backend.h. */
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

#define HMI_PAGE_4K 4096ull
#define HMI_PAGE_2M (2ull << 20)

HM_INLINE uint64_t hmi_round_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

/* ---- capacity (hmi_capacity.c) ---- */

/* Capacity: charge n bytes (0) or refuse (-1, nothing changed); give them back. */
int hmi_charge(struct hmi_bk *b, uint64_t n) HM_HIDDEN;
void hmi_uncharge(struct hmi_bk *b, uint64_t n) HM_HIDDEN;
/* As hmi_charge for a block about to be mapped, but the high-water mark moves only
 * when hmi_mark_high_water says the mapping succeeded: a mapping the kernel refuses
 * (a hugepage pool run dry) leaves no mark. */
int hmi_charge_unmarked(struct hmi_bk *b, uint64_t n) HM_HIDDEN;
void hmi_mark_high_water(struct hmi_bk *b) HM_HIDDEN;
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

/* ---- UMF (hmi_backend_umf.c) ---- */

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
