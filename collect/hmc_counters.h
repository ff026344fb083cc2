/* hmc_counters.h — each thread's hardware counters through PAPI (hmc_counters.c):
 * HMTUNE_COUNTERS (`hmtune trace --counters LIST`) names them. */
#ifndef HMC_COUNTERS_H
#define HMC_COUNTERS_H

#include "hm_util.h"

struct hmc_thread;

/* A thread's event set: es -1 when the thread records no counters. */
struct hmc_cnt_thread { int es; };

/* Process start, with the sampler: load PAPI, choose the counters, record their
 * definitions; says once what could not be counted. 0 when counters are recorded or
 * were not asked for, -1 when asked for and none can be (tracing goes on). */
int hmc_counters_init(void) HM_HIDDEN;
/* The calling thread's event set, started, and its first reading (before its
 * sampler's timer is armed). */
void hmc_counters_thread_start(struct hmc_thread *t, struct hmc_cnt_thread *c) HM_HIDDEN;
/* A reading at a timer signal of the sampler: async-signal-safe as PAPI_read is on
 * the perf_event component (a read(2) of the event group). */
void hmc_counters_tick(struct hmc_thread *t, struct hmc_cnt_thread *c) HM_HIDDEN;
/* The last reading and the event set stopped (after the timer is deleted). */
void hmc_counters_thread_stop(struct hmc_thread *t, struct hmc_cnt_thread *c) HM_HIDDEN;
/* In a forked child: the parent's PAPI state does not describe its threads; the child
 * records no counters (said in docs/formats.md). */
void hmc_counters_atfork_child(void) HM_HIDDEN;

#endif
