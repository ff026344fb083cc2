/* hm_unwind.c — see hm_unwind.h. libunwind's unw_backtrace with a per-thread
 * cache walks a depth-8 stack in ~100-200 ns without any lock; glibc's backtrace()
 * reinterprets CFI on every call (FlexMalloc's 1-2 us per call, STYLE.md). */
#define UNW_LOCAL_ONLY
#include "hm_unwind.h"
#include "hm_modmap.h"

#include <libunwind.h>

static uint64_t g_self_lo, g_self_hi;

void hm_unwind_init(void *self_addr)
{
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    const struct hm_module *m = hm_modmap_find((uint64_t)(uintptr_t)self_addr);
    if (m) {
        g_self_lo = m->lo;
        g_self_hi = m->hi;
    }
}

int hm_backtrace(uint64_t *out, int depth)
{
    void *buf[HM_MAX_DEPTH + 4];
    if (depth > HM_MAX_DEPTH)
        depth = HM_MAX_DEPTH;
    /* + our own frames: hm_backtrace, the shim's slow path, the entry point */
    int n = unw_backtrace(buf, depth + 4);
    /* Our frames are dropped wherever they are: the entry points at the top, and
     * a thread-start trampoline near the bottom, which the other preload library
     * (collect vs interpose) does not have — the keys must match. */
    int k = 0;
    for (int i = 0; i < n && k < depth; i++) {
        uint64_t a = (uint64_t)(uintptr_t)buf[i];
        if (a < g_self_lo || a >= g_self_hi)
            out[k++] = a;
    }
    return k;
}

int hm_in_self(uint64_t addr) { return addr >= g_self_lo && addr < g_self_hi; }

void hm_frames_pack(uint64_t *frames, int n)
{
    for (int i = 0; i < n; i++)
        frames[i] = hm_modmap_frame(frames[i]);
}
