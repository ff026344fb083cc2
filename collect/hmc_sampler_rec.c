/* hmc_sampler_rec.c — the sampler's process records and a thread's page-fault ring
 * (hmc_sampler_rec.h). */
#include "hmc_sampler_rec.h"
#include "hmc_stream.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic int g_fault_said;      /* the page-fault sampler's record is written */
static _Atomic int g_fault_refused;   /* a thread could not open the fault event */

void hmc_sampler_record(int kind, const char *name)
{
    hmc_write_text_record(HMR_SAMPLER, kind, 0, name, NULL);
}

void hmc_sampler_record_cfg(const struct hmc_sampler_cfg *cfg)
{
    char name[128];
    size_t n = hm_fmt_str(name, cfg->kind == HMS_SRC_SOFT ? "soft " :
                                cfg->kind == HMS_SRC_PEBS ? "pebs period " : "ibs period ");
    n += hm_fmt_u64(name + n, cfg->kind == HMS_SRC_SOFT ? cfg->rate_hz : cfg->period);
    n += hm_fmt_str(name + n, cfg->kind == HMS_SRC_SOFT ? " Hz" : "");
    if (cfg->kind == HMS_SRC_SOFT && cfg->producer)
        n += hm_fmt_str(name + n, " producer");
    if (cfg->kind == HMS_SRC_SOFT && cfg->ahead) {
        n += hm_fmt_str(name + n, " lookahead ");
        n += hm_fmt_u64(name + n, (uint64_t)cfg->ahead);
    }
    name[n] = 0;
    hmc_sampler_record(cfg->kind, name);
}

/* The thread's page-fault ring. The process's fault sampler record says what the
 * first thread got; a refusal is said once per process, and sampling goes on
 * without it. */
int hmc_sampler_fault_open(struct hmc_thread *t, uint64_t period, struct hmc_perf_ring *ring,
                           uint64_t stack_lo, uint64_t stack_hi)
{
    int rc = hmc_perf_open_faults(period, (pid_t)syscall(SYS_gettid), HMC_FAULT_RING_PAGES,
                                  ring);
    if (rc == 0)
        hmc_faults_begin(t, stack_lo, stack_hi);
    int z = 0;
    if (atomic_compare_exchange_strong(&g_fault_said, &z, 1)) {
        char name[128];
        size_t n = hm_fmt_str(name, rc == 0 ? "faults period " : "none (perf_event_open: ");
        if (rc == 0) {
            n += hm_fmt_u64(name + n, period);
        } else {
            const char *why = strerror(-rc);
            size_t wl = strlen(why) < 80 ? strlen(why) : 80;
            memcpy(name + n, why, wl);
            n += wl;
            name[n++] = ')';
        }
        name[n] = 0;
        hmc_sampler_record(HMS_SRC_FAULT, name);
    }
    z = 0;
    if (rc != 0 && atomic_compare_exchange_strong(&g_fault_refused, &z, 1))
        hm_log("hmtune: page faults are not sampled (perf_event_open(page-faults): ",
               strerror(-rc), "); the access sampler goes on (HMTUNE_FAULT_PERIOD=0 "
               "turns fault sampling off)");
    return rc == 0;
}
