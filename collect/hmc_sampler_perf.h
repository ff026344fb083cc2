/* hmc_sampler_perf.h — the sampler's use of PEBS/IBS (hmc_perf.h): per-process
 * detection once, per-thread rings, drained in bulk into the sample stream. */
#ifndef HMC_SAMPLER_PERF_H
#define HMC_SAMPLER_PERF_H

#include "hmc_perf.h"
#include "hmc_core.h"

struct hmc_sampler_cfg;

struct hmc_perf_thread {
    struct hmc_perf_ring rings[HMC_PERF_MAX_RINGS];
    int n;
};

/* Detect the PMU for cfg->kind; 0 when usable, else -1 with one line printed. */
int hmc_perf_process_init(const struct hmc_sampler_cfg *cfg) HM_HIDDEN;
/* Open the calling thread's events; the number of rings, 0 or less on failure. */
int hmc_perf_thread_open(struct hmc_perf_thread *pt, const struct hmc_sampler_cfg *cfg) HM_HIDDEN;
/* Move every complete record from the rings to t's sample stream (signal-safe). */
void hmc_perf_thread_drain(struct hmc_perf_thread *pt, struct hmc_thread *t) HM_HIDDEN;
void hmc_perf_thread_close(struct hmc_perf_thread *pt) HM_HIDDEN;

#endif
