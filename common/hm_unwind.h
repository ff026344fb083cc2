/* hm_unwind.h — the call-site chain of an allocation (DESIGN.md §2): raw return
 * addresses above the interposed call, the tool's own frames removed. Shared by
 * collect and interpose so both compute the same key for the same call. */
#ifndef HM_UNWIND_H
#define HM_UNWIND_H

#include <stdint.h>
#include "hm_util.h"

#define HM_MAX_DEPTH 32

/* Once per process, before the first hm_backtrace: per-thread unwind caches (no
 * global lock on the hot path) and the address range of the calling library. */
void hm_unwind_init(void *self_addr) HM_HIDDEN;
/* libunwind's walker (libunwind-common.h; the name carries no per-arch prefix). */
int unw_backtrace(void **buffer, int size);

/* The calling library's address range, set by hm_unwind_init. */
extern uint64_t hm_self_lo HM_HIDDEN, hm_self_hi HM_HIDDEN;

/* Frames of the calling library that may sit above the interposed call (the entry
 * point, its slow path, one spare): asked for beyond the depth. Each extra frame
 * costs ~6.5 ns here (bench-interpose), so the count is kept tight; it is inline so
 * that it is not a frame itself. */
#define HM_OWN_FRAMES 3

/* Fill out[0..depth) with return addresses, innermost first, excluding every frame
 * in the library that called hm_unwind_init — wherever they are: the entry points at
 * the top, and a thread-start trampoline near the bottom, which the other preload
 * library (collect vs interpose) does not have (the keys must match). Returns the
 * number stored. libunwind's unw_backtrace with a per-thread cache walks a depth-8
 * stack in ~100 ns without a lock; glibc's backtrace() reinterprets CFI on every call
 * (FlexMalloc's 1-2 us per call, STYLE.md). */
HM_INLINE int hm_backtrace(uint64_t *out, int depth)
{
    void *buf[HM_MAX_DEPTH + HM_OWN_FRAMES];
    if (depth > HM_MAX_DEPTH)
        depth = HM_MAX_DEPTH;
    int n = unw_backtrace(buf, depth + HM_OWN_FRAMES);
    int k = 0;
    for (int i = 0; i < n && k < depth; i++) {
        uint64_t a = (uint64_t)(uintptr_t)buf[i];
        if (a < hm_self_lo || a >= hm_self_hi)
            out[k++] = a;
    }
    return k;
}

/* The same chain as hm_backtrace (same frames removed, same count), each return
 * address with the stack address it was read from (where the call stored it), by
 * stepping libunwind's cursor: several times slower than hm_backtrace, for callers
 * that cache the result (the interposer's stack fingerprints). Returns the number of
 * frames, or -1 when a frame's return address is not where it should be (a signal
 * frame, unusual unwind info): then no addresses can be trusted. */
int hm_backtrace_where(uint64_t *out, uint64_t *where, int depth) HM_HIDDEN;

/* Whether addr is in the library that called hm_unwind_init. */
HM_INLINE int hm_in_self(uint64_t addr) { return addr >= hm_self_lo && addr < hm_self_hi; }
/* Pack each raw address as (module id << 48 | offset), in place. */
void hm_frames_pack(uint64_t *frames, int n) HM_HIDDEN;

#endif
