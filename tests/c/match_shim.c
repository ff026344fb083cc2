/* match_shim.c — libtm_match.so: the site matcher, the module map and the unwinder
 * in a shared library of their own, so that hm_backtrace removes this library's
 * frames the way it removes libhmalloc.so's (tests/c/test_match.c). */
#include "match_shim.h"
#include "hmi_match.h"
#include "hm_modmap.h"
#include "hm_unwind.h"

#include <stdio.h>
#include <string.h>

static struct hmi_placement g_pl;
static int g_have, g_started;

int tm_init(const char *text, char *err, size_t errlen)
{
    if (!g_started) {
        hm_modmap_init(NULL);
        hm_unwind_init((void *)&tm_init);
        g_started = 1;
    }
    hmi_match_fini();
    if (g_have)
        hmi_placement_free(&g_pl);
    g_have = 0;
    if (hmi_placement_parse(text, strlen(text), &g_pl, err, errlen) != 0)
        return -1;
    g_have = 1;
    return hmi_match_init(&g_pl);
}

int tm_probe(int capture_depth, uint64_t *out)
{
    int r = capture_depth > 0 ? hm_backtrace(out, capture_depth) : hmi_match_here();
    __asm__ volatile("" ::: "memory");
    return r;
}

int tm_probe_fp(int capture_depth, uint64_t *out)
{
    uint64_t cfa = (uint64_t)(uintptr_t)__builtin_dwarf_cfa();
    int r;
    if (capture_depth > 0)
        r = hm_backtrace(out, capture_depth);
    else if ((r = hmi_match_fp(cfa)) == HMI_FP_MISS)
        r = hmi_match_fp_decide(cfa);
    __asm__ volatile("" ::: "memory");
    return r;
}

uint64_t tm_fp_hits(void) { return hmi_match_thread_fp_hits(); }

int tm_chain(const uint64_t *raw, int n) { return hmi_match_chain(raw, n); }
int tm_size_ok(size_t size) { return hmi_match_size_ok(size); }
int tm_depth(void) { return hmi_match_depth(); }
uint64_t tm_misses(void) { return hmi_match_thread_misses(); }
void tm_invalidate(void) { hm_modmap_invalidate(); }

void tm_frame(uint64_t addr, char *buf, size_t len)
{
    uint64_t f = hm_modmap_frame(addr);
    const struct hm_module *m = hm_modmap_get((uint32_t)(f >> HM_FRAME_MODSHIFT));
    snprintf(buf, len, "%s+0x%llx", m ? m->path : "??",
             (unsigned long long)(f & HM_FRAME_OFFMASK));
}
