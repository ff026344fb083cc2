/* hmc_sampler_bp.h — the software sampler's one-shot execute breakpoint as the kernel
 * sees it (hmc_sampler_bp.c): the perf_event_attr of a hardware execute breakpoint that
 * signals SIGTRAP with our cookie, and what the siginfo of a TRAP_PERF delivery says
 * (ours or not, delivered late). Async-signal-safe: the handlers use it. */
#ifndef HMC_SAMPLER_BP_H
#define HMC_SAMPLER_BP_H

#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include "hm_util.h"

/* A disabled execute breakpoint at addr, one signal per hit (sigtrap, our cookie in
 * sig_data), user space only, removed on exec; 0. */
int hmc_bp_attr(struct perf_event_attr *a, uint64_t addr) HM_HIDDEN;
/* SIGTRAP: 1 when it is our breakpoint's (TRAP_PERF with our cookie). */
int hmc_bp_ours(const siginfo_t *si) HM_HIDDEN;
/* 1 when the kernel delivered it late: SIGTRAP was blocked (5.18+), the registers are
 * no longer the breakpoint's. */
int hmc_bp_late(const siginfo_t *si) HM_HIDDEN;

#endif
