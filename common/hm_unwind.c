/* hm_unwind.c — see hm_unwind.h (hm_backtrace itself is inline there). */
#define UNW_LOCAL_ONLY
#include "hm_unwind.h"
#include "hm_modmap.h"

#include <libunwind.h>

uint64_t hm_self_lo, hm_self_hi;

void hm_unwind_init(void *self_addr)
{
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    const struct hm_module *m = hm_modmap_find((uint64_t)(uintptr_t)self_addr);
    if (m) {
        hm_self_lo = m->lo;
        hm_self_hi = m->hi;
    }
}

int hm_backtrace_where(uint64_t *out, uint64_t *where, int depth)
{
    unw_context_t uc;
    unw_cursor_t c;
    if (depth > HM_MAX_DEPTH)
        depth = HM_MAX_DEPTH;
    if (unw_getcontext(&uc) != 0 || unw_init_local(&c, &uc) != 0)
        return -1;
    int k = 0;
    /* Frame 0 is this function's own, in the calling library like every frame up to
     * the interposed call: all removed. */
    while (k < depth && unw_step(&c) > 0) {
        unw_word_t ip, sp;
        if (unw_get_reg(&c, UNW_REG_IP, &ip) != 0 || unw_get_reg(&c, UNW_REG_SP, &sp) != 0)
            return -1;
        if (ip >= hm_self_lo && ip < hm_self_hi)
            continue;
        /* x86-64: a call pushes the return address just below the caller's stack
         * pointer at the call, which is this frame's SP once the callee returned. */
        const uint64_t *slot = (const uint64_t *)(uintptr_t)(sp - 8);
        if (*slot != ip)
            return -1;
        out[k] = ip;
        where[k] = (uint64_t)(uintptr_t)slot;
        k++;
    }
    return k;
}

void hm_frames_pack(uint64_t *frames, int n)
{
    for (int i = 0; i < n; i++)
        frames[i] = hm_modmap_frame(frames[i]);
}
