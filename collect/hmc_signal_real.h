/* hmc_signal_real.h — the kernel's side of the tracer's signal layer
 * (hmc_signal_real.c): the real sigaction and pthread_sigmask under the interposed
 * ones, a signal's default action as the kernel would take it (after the fatal hook
 * has written the trace), and which deliveries the kernel cannot hold while they are
 * blocked. hmc_signal.h includes it; async-signal-safe. */
#ifndef HMC_SIGNAL_REAL_H
#define HMC_SIGNAL_REAL_H

#include <signal.h>
#include "hm_util.h"

/* Find the next sigaction/pthread_sigmask (RTLD_NEXT); outside handlers, idempotent.
 * Before it, glibc's own are used. */
void hmc_sig_resolve(void) HM_HIDDEN;
/* Called once, before a claimed signal takes its default action (terminate or core):
 * the tracer writes the trace there. */
void hmc_sig_set_fatal(void (*fn)(int sig)) HM_HIDDEN;

/* The real sigaction (0 or -1, errno) and pthread_sigmask (0 or an errno value). */
int hmc_sig_real_action(int sig, const struct sigaction *act, struct sigaction *old) HM_HIDDEN;
int hmc_sig_real_mask(int how, const sigset_t *set, sigset_t *old) HM_HIDDEN;
/* What SIG_DFL does for sig: ignore, stop, or (after the fatal hook, once) reset the
 * disposition, unblock sig and raise it, so that the process dies of it. */
void hmc_sig_default(int sig) HM_HIDDEN;
/* A fault or a trap the kernel raised for the instruction itself (si_code > 0),
 * which it cannot hold while blocked. A foreign perf event's trap is queued instead. */
int hmc_sig_synchronous(int sig, const siginfo_t *si) HM_HIDDEN;

#endif
