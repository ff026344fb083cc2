/* hmc_sampler.h — sampled data addresses (issue 3): the software sampler (per-thread
 * CPU-time timers + instruction decoding + one-shot execute breakpoints) and the
 * PEBS/IBS ring-buffer drain, both feeding the thread's sample stream. */
#ifndef HMC_SAMPLER_H
#define HMC_SAMPLER_H

#include <stdint.h>
#include "hm_util.h"
#include "hmc_core.h"

struct hmc_sampler_cfg {
    int kind;            /* enum hmr_src; HMS_SRC_NONE: no sampling */
    unsigned rate_hz;    /* software sampler: timer rate (the kernel tick caps it) */
    uint64_t period;     /* PEBS/IBS: events per sample */
    uint32_t ldlat;      /* PEBS: load-latency threshold, cycles */
    int signo;           /* timer signal */
    uint64_t fault_period;   /* minor page faults per fault sample; 0: no fault sampling */
    int ahead;           /* software sampler: instructions looked ahead of rip, 0 = off */
    int verify;          /* software sampler: check look-ahead addresses by breakpoint */
    int producer;        /* software sampler: the producer-load rule (hmc_behind.h) */
};

#define HMC_AHEAD_DEFAULT 4

/* Read HMTUNE_SAMPLER (none|soft|pebs|ibs), HMTUNE_SAMPLE_RATE, HMTUNE_SAMPLE_PERIOD,
 * HMTUNE_LDLAT, HMTUNE_SAMPLE_SIGNAL, HMTUNE_SAMPLE_AHEAD, HMTUNE_SAMPLE_VERIFY and
 * HMTUNE_SAMPLE_PRODUCER into cfg; -1 (message printed) when malformed.
 * HMTUNE_FAULT_PERIOD (default HMC_FAULT_DEFAULT_PERIOD, 0 off): page faults sampled
 * alongside the access sampler; a malformed value prints one line and turns only the
 * fault sampling off. */
int hmc_sampler_config(struct hmc_sampler_cfg *cfg) HM_HIDDEN;
/* Process-wide setup (signal handlers); 0, or -1 with sampling off. Writes the
 * HMR_SAMPLER record. */
int hmc_sampler_init(const struct hmc_sampler_cfg *cfg) HM_HIDDEN;
/* Start sampling the calling thread (outside any handler: warms the decoder up). */
void hmc_sampler_thread_start(void) HM_HIDDEN;
/* Stop sampling t (the calling thread), drain and flush its samples. */
void hmc_sampler_thread_stop(struct hmc_thread *t) HM_HIDDEN;
/* Move what the calling thread's rings hold to its sample stream (normal exit, exec:
 * the last samples since the timer's previous tick). Not from a signal handler. */
void hmc_sampler_drain_self(void) HM_HIDDEN;
/* At process end (hmc_finish), for a thread still sampling: its cost record. */
void hmc_sampler_finish_thread(struct hmc_thread *t) HM_HIDDEN;
/* After fork, in the child: the forking thread samples again into the new file. */
void hmc_sampler_atfork_child(void) HM_HIDDEN;

#endif
