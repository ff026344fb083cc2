/* hmc_sampler_rec.h — the sampler's process records (HMR_SAMPLER: which sampler, and
 * the page-fault sampler's outcome) and the opening of a thread's page-fault ring,
 * apart from the handlers in hmc_sampler.c. */
#ifndef HMC_SAMPLER_REC_H
#define HMC_SAMPLER_REC_H

#include "hmc_core.h"
#include "hmc_perf.h"
#include "hmc_sampler_cfg.h"

/* One HMR_SAMPLER record of this kind and name (cut to fit). */
void hmc_sampler_record(int kind, const char *name) HM_HIDDEN;
/* The HMR_SAMPLER record of the sampler cfg sets up: its kind, its rate or period, and
 * the software sampler's producer-load rule and look ahead. */
void hmc_sampler_record_cfg(const struct hmc_sampler_cfg *cfg) HM_HIDDEN;

/* The calling thread's page-fault ring, one sample per `period` minor faults: 1 when
 * it is open (and the thread's fault stream begun), 0 when the kernel refused it. The
 * first call in the process writes the fault sampler's record; a refusal is said once
 * per process, and sampling goes on without it. */
int hmc_sampler_fault_open(struct hmc_thread *t, uint64_t period, struct hmc_perf_ring *ring,
                           uint64_t stack_lo, uint64_t stack_hi) HM_HIDDEN;

#endif
