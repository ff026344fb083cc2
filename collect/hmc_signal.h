/* hmc_signal.h — the tracer's signals (the sampler's timer signal and breakpoint
 * SIGTRAP, the crash handlers) stay the tracer's whatever handlers and masks the
 * application sets (issue 13). hmc_shim.c exports sigaction, signal, sigprocmask, ...
 * and calls the functions below (signal and siginterrupt: hmc_signal_compat.h);
 * hmc_signal.c says how and why. */
#ifndef HMC_SIGNAL_H
#define HMC_SIGNAL_H

#include <signal.h>
#include <stdint.h>
#include "hm_util.h"
#include "hmc_signal_real.h"   /* hmc_sig_resolve, hmc_sig_set_fatal: the kernel's side */

/* The tracer's part of a claimed signal: 1 when the delivery was the tracer's own
 * (consumed), 0 to give it to the application's disposition. Async-signal-safe. */
typedef int (*hmc_sig_own_fn)(int sig, siginfo_t *si, void *uc);

#define HMC_SIG_KEEP    1u  /* never blocked for real; the application's blocking is emulated */
#define HMC_SIG_RESTART 2u  /* the real action always has SA_RESTART (samples never cause EINTR) */
#define HMC_SIG_NODEFER 4u  /* the real action always has SA_NODEFER (a breakpoint may hit in a handler) */

/* Take sig over (1..64, not SIGKILL/SIGSTOP): the disposition found now becomes the
 * application's, the dispatcher is installed. own may be NULL. 0, or -1. Called at
 * start-up, before the application's threads. */
int hmc_sig_claim(int sig, hmc_sig_own_fn own, unsigned flags) HM_HIDDEN;

/* The interposed calls (same contracts as glibc's). */
int hmc_sig_action(int sig, const struct sigaction *act, struct sigaction *old) HM_HIDDEN;
int hmc_sig_mask(int how, const sigset_t *set, sigset_t *old) HM_HIDDEN;   /* pthread_sigmask's */
int hmc_sig_pending(sigset_t *set) HM_HIDDEN;

/* Threads: the creator's view of the kept signals' mask (pass it to the new thread);
 * at the start of the new thread (before sampling), adopt it, or the mask the thread
 * really started with when attr_mask (pthread_attr_setsigmask_np) is set. */
uint64_t hmc_sig_thread_mask(void) HM_HIDDEN;
void hmc_sig_thread_begin(uint64_t inherited, int attr_mask) HM_HIDDEN;
void hmc_sig_atfork_child(void) HM_HIDDEN;
/* exec: give the new image the application's mask and ignored signals; undo on failure. */
void hmc_sig_exec_begin(void) HM_HIDDEN;
void hmc_sig_exec_failed(void) HM_HIDDEN;

#endif
