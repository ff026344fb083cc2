/* gen_tally.h — hmtune-gentrace's answers (gen_tally.c): per (task, site) the facts
 * of its blocks and the samples that land in them, and the trace's totals, kept as
 * gen_trace.c writes each record, then written to OUT.prv.expected.json. */
#ifndef GEN_TALLY_H
#define GEN_TALLY_H

#include <stdint.h>

#include "hm_events.h"

#define NSITES   64u
#define SITE0    (HM_SITE_MAX + 1)       /* the first site id: 1 and 2 are reserved */
#define NIDS     (SITE0 + NSITES)        /* ids 0 (no site) to the last site */

struct exp_site {
    uint64_t n_allocs, bytes, samples, loads, stores, misses, weight, fault_samples, faults;
    uint64_t sampled_blocks, extra, unknown;   /* extra: weight added by scaling */
    uint64_t scaled_samples;                   /* samples in blocks scaled > 1 */
    uint64_t kw[HM_ACCESS_KIND_MAX + 1], kextra[HM_ACCESS_KIND_MAX + 1];  /* by 41000035 */
    int has_class;
    uint64_t max_size, peak, first_alloc, last_free, live_ns;
    uint64_t live_bytes, live_blocks, since;   /* the sweep, in time order */
};

/* The trace's totals as written (records, calls, samples, their weight and classes,
 * sampled page faults), and the per-(task, site) answers ([task][site], NIDS a task). */
extern uint64_t g_records, g_events, g_states;
extern uint64_t g_allocs, g_frees, g_unknown_frees, g_weight, g_samples,
                g_classes[HM_SAMPLE_CLASS_MAX + 1];
extern uint64_t g_fault_samples, g_faults, g_fault_classes[HM_SAMPLE_CLASS_MAX + 1];
extern struct exp_site *g_exp;

static inline struct exp_site *E(unsigned task, uint64_t site)
{
    return &g_exp[task * NIDS + site];
}

/* A block of (task, site) of size bytes, standing for scale blocks, live from t; its
 * end at t. Every start and end comes in time order, and at one time (a realloc) the
 * end of the old block before the start of the new. */
void gen_life_start(unsigned task, uint64_t site, uint64_t size, uint64_t t, uint64_t scale);
void gen_life_end(unsigned task, uint64_t site, uint64_t size, uint64_t t);
/* OUT.prv.expected.json for prv: the totals, never_freed blocks live at the end, and
 * every (task, site) of ntasks tasks that allocated or was sampled, its weights bounded
 * as the scanner bounds them (ps_sites_cap). Exits 1 when it cannot be written. */
void gen_write_expected(const char *prv, uint64_t never_freed, unsigned ntasks);

#endif
