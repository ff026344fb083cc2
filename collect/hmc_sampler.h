/* hmc_sampler.h — sampled data addresses (issue 3): the software sampler (per-thread
 * CPU-time timers + instruction decoding + one-shot execute breakpoints) and the
 * PEBS/IBS ring-buffer drain, both feeding the thread's sample stream. */
#ifndef HMC_SAMPLER_H
#define HMC_SAMPLER_H

#include <stdint.h>
#include "hm_util.h"
#include "hmc_core.h"
#include "hmc_sampler_cfg.h"   /* struct hmc_sampler_cfg, hmc_sampler_config */

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
