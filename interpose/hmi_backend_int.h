/* hmi_backend_int.h — what hmi_backend.c (table, accounting, page map, mmap
 * backends) and hmi_backend_memkind.c (the dlopen'ed memkind backend and its
 * pointer registry) share. Not for the rest of the interposer: use hmi_backend.h. */
#ifndef HMI_BACKEND_INT_H
#define HMI_BACKEND_INT_H

#include <stddef.h>
#include <stdint.h>
#include "hmi_backend.h"

#define HMI_MAX_NODES 1024u                 /* numa:LIST node ids are < this */
#define HMI_NODE_WORDS (HMI_MAX_NODES / (8 * sizeof(unsigned long)))

enum { HMI_TIER_UNUSED = 0, HMI_TIER_OK, HMI_TIER_UNAVAILABLE };

struct hmi_bk {
    int state;                              /* HMI_TIER_* */
    enum hmi_backend_kind kind;
    uint64_t capacity;                      /* 0: unlimited */
    unsigned long nodes[HMI_NODE_WORDS];    /* numa: the mbind mask */
    void *mk_kind;                          /* memkind: the memkind_t */
    /* written by every allocation: a line of their own, away from the fields
     * above that every allocation reads */
    uint64_t used __attribute__((aligned(64)));     /* atomics */
    uint64_t high_water;
};

/* Block counts, striped (hm_util.h). */
struct hmi_bk_counts {
    uint64_t placed, freed, not_fitting, small;
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

/* Capacity: charge n bytes (0) or refuse (-1, nothing changed); give them back. */
int hmi_charge(struct hmi_bk *b, uint64_t n) HM_HIDDEN;
void hmi_uncharge(struct hmi_bk *b, uint64_t n) HM_HIDDEN;

/* A bounded one-line message builder for reasons (no stdio). */
struct hmi_msg {
    char *buf;
    size_t cap, pos;
};
void hmi_msg_init(struct hmi_msg *m, char *buf, size_t cap) HM_HIDDEN;
void hmi_msg_str(struct hmi_msg *m, const char *s) HM_HIDDEN;
void hmi_msg_u64(struct hmi_msg *m, uint64_t v) HM_HIDDEN;

/* Page map entries for memkind blocks (hmi_backend.c): mark counts a live block
 * starting at p, with its tier, on p's 4 KiB page (0, or -1 when the map has no room);
 * unmark undoes it. A glibc pointer never lies on a page where a live memkind block
 * starts (the two allocators never share a page), so hmi_owner needs no header. */
int hmi_mk_mark(const void *p, uint32_t tier) HM_HIDDEN;
void hmi_mk_unmark(const void *p) HM_HIDDEN;

/* memkind (hmi_backend_memkind.c). open: 0 or -1 with the reason appended. */
int hmi_mk_open(struct hmi_bk *b, const char *kind, struct hmi_msg *why) HM_HIDDEN;
void *hmi_mk_alloc(struct hmi_bk *b, uint32_t index, size_t size, size_t align,
                   int zero) HM_HIDDEN;
void hmi_mk_free(struct hmi_bk *b, void *p, size_t usable) HM_HIDDEN;
size_t hmi_mk_usable(struct hmi_bk *b, const void *p) HM_HIDDEN;
extern int hmi_mk_in_use HM_HIDDEN;            /* a memkind tier was opened */

#endif
