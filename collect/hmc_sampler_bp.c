/* hmc_sampler_bp.c — the software sampler's execute breakpoint as the kernel sees it
 * (hmc_sampler_bp.h): its attributes, and the TRAP_PERF fields of its SIGTRAP. */
#include "hmc_sampler_bp.h"

#include <linux/hw_breakpoint.h>
#include <string.h>

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif
#define BP_COOKIE 0x686d74756e65ull   /* "hmtune": our breakpoint's si_perf_data */
#ifndef TRAP_PERF_FLAG_ASYNC
#define TRAP_PERF_FLAG_ASYNC 1u         /* delivered late: SIGTRAP was blocked (5.18+) */
#endif

int hmc_bp_attr(struct perf_event_attr *a, uint64_t addr)
{
    memset(a, 0, sizeof(*a));
    a->type = PERF_TYPE_BREAKPOINT;
    a->size = sizeof(*a);
    a->bp_type = HW_BREAKPOINT_X;
    a->bp_addr = addr;
    a->bp_len = sizeof(long);
    a->sample_period = 1;
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
    a->disabled = 1;
    a->sigtrap = 1;
    a->remove_on_exec = 1;
    a->sig_data = BP_COOKIE;
    return 0;
}

/* The kernel's siginfo for TRAP_PERF carries si_perf_data right after si_addr
 * (union _sigfault: _addr, then _perf { unsigned long _data; u32 _type; u32 _flags; });
 * glibc 2.36's siginfo_t does not name them yet. */
static unsigned long perf_data(const siginfo_t *si)
{
    unsigned long v;
    memcpy(&v, (const char *)&si->si_addr + sizeof(void *), sizeof(v));
    return v;
}

static uint32_t perf_flags(const siginfo_t *si)
{
    uint32_t v;
    memcpy(&v, (const char *)&si->si_addr + 2 * sizeof(void *) + 4, sizeof(v));
    return v;
}

int hmc_bp_ours(const siginfo_t *si)
{
    return si->si_code == TRAP_PERF && perf_data(si) == BP_COOKIE;
}

int hmc_bp_late(const siginfo_t *si)
{
    return (perf_flags(si) & TRAP_PERF_FLAG_ASYNC) != 0;
}
