/* hmc_signal_real.c — the kernel's side of the tracer's signal layer
 * (hmc_signal_real.h): the real sigaction and pthread_sigmask (RTLD_NEXT once
 * hmc_sig_resolve found them, glibc's own before), a signal's default action, and the
 * synchronous faults and traps. hmc_signal.c says why the layer is there. */
#include "hmc_signal_real.h"
#include "hmc_sigset.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

extern int __sigaction(int, const struct sigaction *, struct sigaction *);

static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static int (*real_sigmask)(int, const sigset_t *, sigset_t *);
static void (*g_fatal)(int);

void hmc_sig_set_fatal(void (*fn)(int)) { g_fatal = fn; }

int hmc_sig_real_action(int sig, const struct sigaction *act, struct sigaction *old)
{
    return real_sigaction ? real_sigaction(sig, act, old) : __sigaction(sig, act, old);
}

/* glibc's pthread_sigmask, for the time before hmc_sig_resolve: it never lets its
 * two internal signals (32, 33: cancellation, setxid) be blocked. */
static int sys_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    sigset_t s;
    if (set && how != SIG_UNBLOCK) {
        s = *set;
        set_bits(&s, bits_of(&s) & ~(BIT(32) | BIT(33)));
        set = &s;
    }
    int saved = errno;
    long r = syscall(SYS_rt_sigprocmask, how, set, old, (size_t)8);
    int err = r == 0 ? 0 : errno;
    errno = saved;
    return err;
}

int hmc_sig_real_mask(int how, const sigset_t *set, sigset_t *old)
{
    return real_sigmask ? real_sigmask(how, set, old) : sys_sigmask(how, set, old);
}

void hmc_sig_resolve(void)
{
    void *a = dlsym(RTLD_NEXT, "sigaction");
    void *m = dlsym(RTLD_NEXT, "pthread_sigmask");
    if (a)
        memcpy(&real_sigaction, &a, sizeof(a));
    if (m)
        memcpy(&real_sigmask, &m, sizeof(m));
}

void hmc_sig_default(int sig)
{
    switch (sig) {
    case SIGCHLD: case SIGCONT: case SIGURG: case SIGWINCH:
        return;                                     /* default: ignore */
    case SIGTSTP: case SIGTTIN: case SIGTTOU:
        raise(SIGSTOP);                             /* default: stop */
        return;
    default:
        break;
    }
    static _Atomic int once;
    if (g_fatal && !atomic_exchange(&once, 1))
        g_fatal(sig);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    hmc_sig_real_action(sig, &sa, NULL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    hmc_sig_real_mask(SIG_UNBLOCK, &s, NULL);
    raise(sig);          /* dies here; a fault also dies when its instruction runs again */
}

int hmc_sig_synchronous(int sig, const siginfo_t *si)
{
    if (si->si_code <= 0 || (sig == SIGTRAP && si->si_code == TRAP_PERF))
        return 0;
    return sig == SIGTRAP || sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
}
