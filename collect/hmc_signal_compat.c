/* hmc_signal_compat.c — signal(), its BSD and System V variants and siginterrupt
 * (hmc_signal_compat.h) on top of the tracer's sigaction (hmc_sig_action,
 * hmc_signal.c), with glibc's flags, and siginterrupt's choice per signal kept for
 * later signal() calls. */
#include "hmc_signal_compat.h"
#include "hmc_signal.h"
#include "hmc_sigset.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

static _Atomic uint64_t g_intr;                  /* siginterrupt(sig, 1) */

void (*hmc_sig_signal(int sig, void (*h)(int), int sysv))(int)
{
    if (h == SIG_ERR || sig < 1 || sig >= NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = h;
    sigemptyset(&sa.sa_mask);
    if (sysv) {
        sa.sa_flags = SA_RESETHAND | SA_NODEFER;     /* glibc's sysv_signal */
    } else {
        /* glibc's signal: BSD semantics, the signal blocked in its handler, restarting
         * unless siginterrupt said otherwise */
        sigaddset(&sa.sa_mask, sig);
        sa.sa_flags = sig < NSIG_K && (atomic_load(&g_intr) & BIT(sig)) ? 0 : SA_RESTART;
    }
    if (hmc_sig_action(sig, &sa, &old) < 0)
        return SIG_ERR;
    return old.sa_handler;
}

int hmc_sig_interrupt(int sig, int flag)
{
    struct sigaction sa;
    if (hmc_sig_action(sig, NULL, &sa) < 0)
        return -1;
    if (flag) {
        if (sig < NSIG_K)
            atomic_fetch_or(&g_intr, BIT(sig));
        sa.sa_flags &= ~SA_RESTART;
    } else {
        if (sig < NSIG_K)
            atomic_fetch_and(&g_intr, ~BIT(sig));
        sa.sa_flags |= SA_RESTART;
    }
    return hmc_sig_action(sig, &sa, NULL) < 0 ? -1 : 0;
}
