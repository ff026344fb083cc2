/* hmc_small.h — small-call sampling: the calls below the tracing threshold that are
 * traced anyway, and the live blocks they made (docs/formats.md §2, "small-call
 * sampling").
 *
 * Why: a site whose blocks are small but many (a sparse matrix's rows, a tree's
 * nodes) can hold most of an application's sampled accesses, and below
 * HMTUNE_MIN_SIZE the tracer sees none of its calls. Tracing every small call costs
 * an unwind each (hundreds of ns, bench-collect), so each thread traces 1 in N of
 * them, at random: the gaps between traced calls are drawn from a geometric
 * distribution of mean N, so every small call is traced with probability 1/N
 * whatever loop it sits in (a fixed stride would alias with the application's
 * loops). A traced small call is recorded with its weight N: the number of calls it
 * stands for, by which the analyzer scales its block's counts, bytes and sampled
 * accesses (Horvitz-Thompson: unbiased for sums).
 *
 * Frees: the free fast path keeps deciding "not traced" from malloc_usable_size;
 * a block from a traced small call is recognized before that by one bit per 8-byte
 * granule of the address space (every malloc returns at least 8-aligned pointers, so
 * the bit of a block's start is its own). The bits live in 16 MiB leaves, one per GiB
 * of address space that holds a marked block, mapped on first use without swap
 * reservation (a page of bits, 256 KiB of heap, becomes resident when a bit in it is
 * first set), under a 1 MiB table in .bss; a free outside every leaf costs one load.
 * Setting and clearing are atomic: a block may be freed by another thread. */
#ifndef HMC_SMALL_H
#define HMC_SMALL_H

#include <stdatomic.h>
#include <stdint.h>
#include "hm_util.h"

/* Mean calls between traced small calls: a traced small malloc+free pair adds ~190 ns
 * when its stack is in libunwind's cache (bench-collect, 64-byte pairs at depth 8, 1 in
 * 1), so 1 in 32 adds ~6 ns a pair, within the 20 ns budget of an untraced pair. */
#define HMC_SMALL_DEFAULT 32u
#define HMC_SMALL_DEFAULT_STR "32"
#define HMC_SMALL_MAX     (1u << 20)   /* larger intervals are refused as absurd */
#define HMC_SMALL_LEAF_SHIFT 30        /* one leaf per GiB of address space */
#define HMC_SMALL_ADDR_BITS  47        /* user addresses on x86-64 (4-level paging) */
#define HMC_SMALL_LEAVES (1u << (HMC_SMALL_ADDR_BITS - HMC_SMALL_LEAF_SHIFT))

extern _Atomic(uint64_t *) hmc_small_leaf[HMC_SMALL_LEAVES] HM_HIDDEN;
/* Calls this thread makes below the threshold before the next traced one; the entry
 * points decrement it and take the slow path when it reaches 0 (a new thread starts
 * at 0, so its first small call sets it up). */
extern __thread int64_t hmc_small_left __attribute__((tls_model("initial-exec"))) HM_HIDDEN;

/* Whether p is the start of a live block from a traced small call. */
HM_INLINE int hmc_small_marked(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    if (hm_unlikely((a >> HMC_SMALL_ADDR_BITS) | (a & 7)))
        return 0;
    uint64_t *leaf = atomic_load_explicit(&hmc_small_leaf[a >> HMC_SMALL_LEAF_SHIFT],
                                          memory_order_acquire);
    if (hm_likely(leaf == NULL))
        return 0;
    uint64_t bit = (a & ((1ull << HMC_SMALL_LEAF_SHIFT) - 1)) >> 3;
    return (int)(__atomic_load_n(&leaf[bit >> 6], __ATOMIC_RELAXED) >> (bit & 63) & 1);
}

/* HMTUNE_SMALL_SAMPLE's value: "off" (*n = 0), or a whole number 1..HMC_SMALL_MAX.
 * 0 ok; -1 malformed, -2 zero, -3 above HMC_SMALL_MAX (*n untouched). */
int hmc_small_parse(const char *s, uint64_t *n) HM_HIDDEN;
/* The interval to use from now on (0: no small call is traced). */
void hmc_small_set(uint64_t n) HM_HIDDEN;
uint64_t hmc_small_interval(void) HM_HIDDEN;
/* Called by the slow path for a call below the threshold: 1 when this call is one
 * to trace (the countdown ran out; the next gap is drawn), else 0 (the slow path was
 * taken for another reason, or this was a new thread's first call). */
int hmc_small_pick(void) HM_HIDDEN;
/* Mark p (a block's start) as a live traced small block: 0, or -1 when it cannot be
 * marked (an address past the map, no memory for a leaf): its free would go unseen,
 * so it must not be recorded as a sampled block. */
int hmc_small_mark(const void *p) HM_HIDDEN;
/* Clear p's mark; 1 when it was set. */
int hmc_small_unmark(const void *p) HM_HIDDEN;
/* The gap to the next traced call: a draw from a geometric distribution on 1, 2, ...
 * of mean n, from the calling thread's generator (tests). */
int64_t hmc_small_draw(uint64_t n) HM_HIDDEN;

#endif
