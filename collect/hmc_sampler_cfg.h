/* hmc_sampler_cfg.h — the sampler's settings (struct hmc_sampler_cfg), read from the
 * HMTUNE_* options by hmc_sampler_config (hmc_sampler_cfg.c); hmc_sampler.c and the
 * PEBS/IBS part (hmc_sampler_perf.c) work from them. */
#ifndef HMC_SAMPLER_CFG_H
#define HMC_SAMPLER_CFG_H

#include <stdint.h>
#include "hm_util.h"

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

#endif
