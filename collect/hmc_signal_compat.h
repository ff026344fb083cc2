/* hmc_signal_compat.h — signal(), bsd_signal, ssignal, sysv_signal and siginterrupt
 * for the application (hmc_shim.c exports them), made of the tracer's sigaction
 * (hmc_signal.h) as glibc makes them of its own (hmc_signal_compat.c). */
#ifndef HMC_SIGNAL_COMPAT_H
#define HMC_SIGNAL_COMPAT_H

#include "hm_util.h"

/* signal (sysv 0: BSD semantics, restarting unless siginterrupt said otherwise) and
 * sysv_signal (sysv 1: reset to SIG_DFL and not blocked in the handler). */
void (*hmc_sig_signal(int sig, void (*h)(int), int sysv))(int) HM_HIDDEN;
int hmc_sig_interrupt(int sig, int flag) HM_HIDDEN;

#endif
