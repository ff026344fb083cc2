/* hmc_signal.c — the tracer's signals stay the tracer's, whatever the application
 * installs or blocks (issue 13, "Nothing lost, nothing killed").
 *
 * This file: the dispatcher, the interposed calls and the per-thread virtual mask,
 * which share the tables the delivery path reads. The real calls under them, a
 * signal's default action and the synchronous faults are hmc_signal_real.c's;
 * signal() and siginterrupt on top of sigaction are hmc_signal_compat.c's.
 *
 * Why: gfortran's default -fbacktrace makes libgfortran call signal() for SIGTRAP,
 * SIGSEGV, SIGBUS, ... when main starts, after the tracer's constructor. The software
 * sampler's breakpoint traps then reached libgfortran's handler ("Program received
 * signal SIGTRAP", exit 133, no trace) and the crash handlers were gone. So
 * libhmtrace.so interposes sigaction, signal (bsd_signal, ssignal), sysv_signal,
 * siginterrupt, sigprocmask, pthread_sigmask and sigpending (hmc_shim.c exports them,
 * the bodies are here) and keeps one dispatcher installed for each signal it claims:
 *   - the tracer's own deliveries (its timer's SI_TIMER signals and its breakpoints'
 *     TRAP_PERF traps, recognized by the values the tracer put in them) go to the
 *     tracer and nowhere else;
 *   - every other delivery gets the application's disposition as the kernel would
 *     apply it: its handler, called with or without SA_SIGINFO, SA_RESETHAND done
 *     here, SA_RESTART, SA_NODEFER and sa_mask through the real action's flags and
 *     mask; SIG_IGN; or SIG_DFL, which for a terminating signal writes the trace
 *     first (the fatal hook) and then dies of the same signal;
 *   - sigaction's old action is the one the application set: it looks installed.
 * Signals the tracer does not claim pass through, except that the kept signals
 * (below) are taken out of their sa_mask (and put back in what sigaction reports):
 * a breakpoint may hit inside any handler.
 *
 * Blocking. A breakpoint hit while SIGTRAP is blocked kills the process on kernels
 * 5.13-5.17 (force_sig_perf used force_sig); since 5.18 (commit 78ed93d72ded) the
 * trap is queued instead and delivered late, with registers that are no longer the
 * breakpoint's, while the armed breakpoint traps on every execution. A blocked timer
 * signal delays a sample and gives its weight to the instruction that unblocked it.
 * So the kept signals (SIGTRAP and the timer's) are never blocked for real:
 * sigprocmask/pthread_sigmask take them out of the mask they apply and keep the
 * application's choice for them in a per-thread virtual mask, which is what their
 * old set, sigpending and a handler's uc_sigmask show. A foreign delivery of a kept
 * signal while it is virtually blocked is held (one per signal) and sent again to
 * the thread when the application unblocks it, except a synchronous SIGTRAP (int3,
 * single step), which the kernel would have delivered with the default action
 * (force_sig_info_to_task): so does this. The alternative, disarming the sampler while
 * the application blocks them, was not taken: it loses every sample of threads that
 * run with all signals blocked (helper threads, pthread_attr_setsigmask_np), and
 * still dies when a mask is applied behind the wrappers' back.
 *
 * Not covered (would need more interposition, none seen in HPC codes): the kept
 * signals waited for with sigwait/sigwaitinfo/sigtimedwait/signalfd, or sigsuspend
 * with a held one; one sent to the whole process (kill, sigqueue) is held by the
 * thread the kernel chose even if another thread has it unblocked, and lost if that
 * thread exits first; siglongjmp out of a handler that changed the virtual mask; a
 * handler of an unclaimed signal that changes it and returns; the obsolete
 * sigset/sighold/sigvec/sigblock; raw rt_sigaction syscalls; an application SIGABRT
 * handler that returns (glibc's abort then resets it behind us: no end record).
 * A handler's sa_mask does not block the kept signals (they are taken out of it),
 * and inside the application's SIGTRAP handler SIGTRAP is not blocked (the tracer's
 * next breakpoint must get through; emulating the block would leave it blocked for
 * good after a siglongjmp out of the handler). Kept signals' handlers run on the thread's stack even with SA_ONSTACK (the tracer's work there
 * needs more than an alternate stack may have). With SIGTRAP or the timer signal
 * ignored, exec'd programs get them ignored only through execve.
 *
 * Everything on the delivery path is async-signal-safe: fixed tables, atomics,
 * thread-locals, no locks, no allocation. */
#include "hmc_signal.h"
#include "hmc_sigset.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000   /* glibc sets it on every action; the kernel reports it */
#endif

#define NSLOT 8                  /* versions of an application action (see store) */
/* Flags the kernel keeps (do_sigaction clears the others, UAPI_SA_FLAGS). */
#define KFLAGS (SA_NOCLDSTOP | SA_NOCLDWAIT | SA_SIGINFO | SA_ONSTACK | SA_RESTART | \
                SA_NODEFER | SA_RESETHAND | SA_RESTORER)

/* An application's action as it set it. */
struct app {
    union { void (*h)(int); void (*sa)(int, siginfo_t *, void *); } u;
    uint64_t mask;
    int flags;
};

/* A claimed signal. The application's action is versioned: a writer fills a fresh
 * slot and swaps `cur`, so a handler never sees half an update and sigaction's old
 * action is exactly the one it replaced; a slot is reused only NSLOT updates later. */
struct claim {
    hmc_sig_own_fn own;
    unsigned flags;
    struct app slot[NSLOT];
    _Atomic unsigned cur, next;
};

static struct claim g_c[NSIG_K];
static _Atomic uint64_t g_claimed;
static _Atomic uint64_t g_keep;                  /* the kept signals */
static int g_keep_sig[2];                        /* their numbers (held[] index) */
static _Atomic uint64_t g_tmask[NSIG_K];         /* unclaimed: kept bits taken out of sa_mask */

/* The application's mask for the kept signals, and foreign ones held while blocked. */
static __thread volatile uint64_t t_vblocked __attribute__((tls_model("initial-exec")));
static __thread volatile uint64_t t_vpending __attribute__((tls_model("initial-exec")));
static __thread siginfo_t t_held[2] __attribute__((tls_model("initial-exec")));

static int claimed(int sig) { return sig >= 1 && sig < NSIG_K && (atomic_load(&g_claimed) & BIT(sig)); }

/* ---- the application's actions ----------------------------------------- */

static struct app load(int sig, unsigned *idx)
{
    struct claim *c = &g_c[sig];
    unsigned i = atomic_load_explicit(&c->cur, memory_order_acquire) % NSLOT;
    if (idx)
        *idx = i;
    return c->slot[i];
}

/* Make a the application's action; returns the one it replaced. */
static struct app store(int sig, const struct app *a)
{
    struct claim *c = &g_c[sig];
    unsigned n = (atomic_fetch_add(&c->next, 1) + 1) % NSLOT;
    c->slot[n] = *a;
    unsigned prev = atomic_exchange_explicit(&c->cur, n, memory_order_acq_rel) % NSLOT;
    return c->slot[prev];
}

static struct app app_of(const struct sigaction *sa)
{
    struct app a;
    memset(&a, 0, sizeof(a));
    a.u.sa = sa->sa_sigaction;
    a.mask = bits_of(&sa->sa_mask) & ~(BIT(SIGKILL) | BIT(SIGSTOP));
    a.flags = sa->sa_flags & KFLAGS;
    return a;
}

static void dispatch(int sig, siginfo_t *si, void *uc);

/* The action the kernel gets for a claimed signal whose application action is a. */
static void real_action(int sig, const struct app *a, struct sigaction *ra)
{
    const struct claim *c = &g_c[sig];
    uint64_t keep = atomic_load(&g_keep);
    memset(ra, 0, sizeof(*ra));
    sigemptyset(&ra->sa_mask);
    if (a->u.h == SIG_IGN && !(keep & BIT(sig))) {
        /* nothing to deliver; and exec'd programs inherit it ignored */
        ra->sa_handler = SIG_IGN;
        ra->sa_flags = a->flags & ~SA_RESTORER;
        return;
    }
    ra->sa_sigaction = dispatch;
    int f = SA_SIGINFO;
    if (a->u.h == SIG_DFL || a->u.h == SIG_IGN) {
        if (!(keep & BIT(sig)))
            f |= SA_ONSTACK;   /* the crash path, on the alternate stack if there is one */
    } else {
        f |= a->flags & (SA_RESTART | SA_NODEFER);
        if (!(keep & BIT(sig)))
            f |= a->flags & SA_ONSTACK;
        set_bits(&ra->sa_mask, a->mask & ~keep);
    }
    if (c->flags & HMC_SIG_RESTART)
        f |= SA_RESTART;
    if (c->flags & HMC_SIG_NODEFER)
        f |= SA_NODEFER;
    ra->sa_flags = f;
}

/* ---- delivery ------------------------------------------------------------ */

static int keep_index(int sig) { return g_keep_sig[0] == sig ? 0 : 1; }

static void flush_held(void)
{
    uint64_t p = t_vpending & ~t_vblocked;
    if (!p)
        return;
    int saved = errno;
    for (int k = 0; k < 2; k++) {
        int sig = g_keep_sig[k];
        if (!sig || !(p & BIT(sig)))
            continue;
        t_vpending &= ~BIT(sig);
        siginfo_t si = t_held[k];
        /* to this thread, with its original siginfo (allowed for one's own process) */
        syscall(SYS_rt_tgsigqueueinfo, getpid(), (pid_t)syscall(SYS_gettid), sig, &si);
    }
    errno = saved;
}

static void reset_to_default(int sig, unsigned i)
{
    /* SA_RESETHAND: the kernel resets the handler only (flags and mask stay) */
    struct claim *c = &g_c[sig];
    unsigned n = (atomic_fetch_add(&c->next, 1) + 1) % NSLOT;
    c->slot[n] = c->slot[i];
    c->slot[n].u.h = SIG_DFL;
    unsigned expect = i;
    atomic_compare_exchange_strong(&c->cur, &expect, n);   /* lost to a sigaction: theirs wins */
}

static void deliver(int sig, siginfo_t *si, void *uc)
{
    uint64_t keep = atomic_load_explicit(&g_keep, memory_order_relaxed);
    if ((keep & BIT(sig)) && (t_vblocked & BIT(sig))) {
        if (hmc_sig_synchronous(sig, si)) {
            hmc_sig_default(sig);
            return;
        }
        t_held[keep_index(sig)] = *si;
        t_vpending |= BIT(sig);
        return;
    }
    unsigned i;
    struct app a = load(sig, &i);
    if (a.u.h == SIG_IGN)
        return;
    if (a.u.h == SIG_DFL) {
        hmc_sig_default(sig);
        return;
    }
    if (a.flags & SA_RESETHAND)
        reset_to_default(sig, i);
    ucontext_t *u = uc;
    if (keep && u) {
        /* the handler's context shows, and its return restores, the application's mask */
        set_bits(&u->uc_sigmask, bits_of(&u->uc_sigmask) | t_vblocked);
    }
    if (a.flags & SA_SIGINFO)
        a.u.sa(sig, si, uc);
    else
        a.u.h(sig);
    if (keep && u) {
        uint64_t m = bits_of(&u->uc_sigmask);
        t_vblocked = m & keep;
        set_bits(&u->uc_sigmask, m & ~keep);
        flush_held();
    }
}

static void dispatch(int sig, siginfo_t *si, void *uc)
{
    hmc_sig_own_fn own = g_c[sig].own;
    int saved = errno;
    if (own && own(sig, si, uc)) {
        errno = saved;
        return;
    }
    errno = saved;
    deliver(sig, si, uc);
}

/* ---- set-up -------------------------------------------------------------- */

/* Take the kept signals out of every installed action's mask. */
static void strip_kept_everywhere(void)
{
    uint64_t keep = atomic_load(&g_keep);
    for (int sig = 1; sig < NSIG_K; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP || sig == 32 || sig == 33)
            continue;
        struct sigaction sa;
        if (claimed(sig)) {
            struct app a = load(sig, NULL);
            real_action(sig, &a, &sa);
            hmc_sig_real_action(sig, &sa, NULL);
            continue;
        }
        if (hmc_sig_real_action(sig, NULL, &sa) != 0 || !(bits_of(&sa.sa_mask) & keep))
            continue;
        atomic_fetch_or(&g_tmask[sig], bits_of(&sa.sa_mask) & keep);
        set_bits(&sa.sa_mask, bits_of(&sa.sa_mask) & ~keep);
        hmc_sig_real_action(sig, &sa, NULL);
    }
}

int hmc_sig_claim(int sig, hmc_sig_own_fn own, unsigned flags)
{
    if (sig < 1 || sig >= NSIG_K || sig == SIGKILL || sig == SIGSTOP)
        return -1;
    struct claim *c = &g_c[sig];
    if (own && c->own && c->own != own)
        return -1;                               /* two tracer parts on one signal */
    uint64_t keep = atomic_load(&g_keep);
    if ((flags & HMC_SIG_KEEP) && !(keep & BIT(sig))) {
        if (g_keep_sig[0] && g_keep_sig[1])
            return -1;
        g_keep_sig[g_keep_sig[0] ? 1 : 0] = sig;
    }
    if (!claimed(sig)) {
        struct sigaction old;
        if (hmc_sig_real_action(sig, NULL, &old) != 0)
            return -1;
        c->slot[0] = app_of(&old);               /* whatever was there is the application's */
        atomic_store(&c->cur, 0);
        atomic_store(&c->next, 0);
    }
    if (own)
        c->own = own;
    c->flags |= flags;
    atomic_fetch_or(&g_claimed, BIT(sig));
    struct sigaction ra;
    struct app a = load(sig, NULL);
    if (flags & HMC_SIG_KEEP) {
        atomic_fetch_or(&g_keep, BIT(sig));
        strip_kept_everywhere();                 /* installs this one too */
        /* blocked already (inherited through exec): the application's, virtually */
        sigset_t s, old;
        sigemptyset(&s);
        sigaddset(&s, sig);
        if (hmc_sig_real_mask(SIG_UNBLOCK, &s, &old) == 0 && sigismember(&old, sig))
            t_vblocked |= BIT(sig);
        return 0;
    }
    real_action(sig, &a, &ra);
    return hmc_sig_real_action(sig, &ra, NULL) == 0 ? 0 : -1;
}

/* ---- the interposed calls ------------------------------------------------ */

int hmc_sig_action(int sig, const struct sigaction *act, struct sigaction *old)
{
    uint64_t keep = atomic_load_explicit(&g_keep, memory_order_relaxed);
    if (!claimed(sig)) {
        if (!keep || sig < 1 || sig >= NSIG_K)
            return hmc_sig_real_action(sig, act, old);
        struct sigaction in;
        uint64_t tb = 0;
        if (act) {
            in = *act;
            tb = bits_of(&in.sa_mask) & keep;
            set_bits(&in.sa_mask, bits_of(&in.sa_mask) & ~keep);
            act = &in;
        }
        uint64_t prev = atomic_load(&g_tmask[sig]);
        int r = hmc_sig_real_action(sig, act, old);
        if (r == 0) {
            if (act)
                prev = atomic_exchange(&g_tmask[sig], tb);
            if (old && prev)
                set_bits(&old->sa_mask, bits_of(&old->sa_mask) | prev);
        }
        return r;
    }
    struct sigaction in, kold;
    struct app prev;
    int r;
    if (act)
        in = *act;                   /* act and old may be the same struct */
    if (act && in.sa_sigaction != dispatch) {
        struct app a = app_of(&in);
        a.flags |= SA_RESTORER;
        struct sigaction ra;
        real_action(sig, &a, &ra);
        r = hmc_sig_real_action(sig, &ra, &kold);
        if (r != 0)
            return r;
        prev = store(sig, &a);
    } else {
        /* a query; or our dispatcher handed back by code that read it behind our
         * back (a raw syscall): the application's action stays */
        r = hmc_sig_real_action(sig, NULL, &kold);
        if (r != 0)
            return r;
        prev = load(sig, NULL);
    }
    if (old) {
        *old = kold;
        old->sa_sigaction = prev.u.sa;
        old->sa_flags = prev.flags;
        set_bits(&old->sa_mask, prev.mask);
    }
    return 0;
}

int hmc_sig_mask(int how, const sigset_t *set, sigset_t *old)
{
    uint64_t keep = atomic_load_explicit(&g_keep, memory_order_relaxed);
    if (!keep)
        return hmc_sig_real_mask(how, set, old);
    uint64_t vb = t_vblocked, nvb = vb;
    sigset_t in, kold;
    if (set) {
        uint64_t m = bits_of(set);
        switch (how) {
        case SIG_BLOCK: nvb |= m & keep; break;
        case SIG_UNBLOCK: nvb &= ~m; break;
        case SIG_SETMASK: nvb = m & keep; break;
        default: return EINVAL;
        }
        in = *set;
        set_bits(&in, m & ~keep);
        set = &in;
    }
    int r = hmc_sig_real_mask(how, set, &kold);
    if (r != 0)
        return r;
    uint64_t behind = bits_of(&kold) & keep;
    if (behind) {
        /* blocked for real behind the wrappers' back (a handler's mask, glibc):
         * the application's now, virtually */
        if (!set || how != SIG_SETMASK)
            nvb |= behind & ~(set && how == SIG_UNBLOCK ? bits_of(set) : 0);
        sigset_t u;
        sigemptyset(&u);
        set_bits(&u, behind);
        hmc_sig_real_mask(SIG_UNBLOCK, &u, NULL);
        vb |= behind;
    }
    if (old) {
        *old = kold;
        set_bits(old, (bits_of(&kold) & ~keep) | vb);
    }
    t_vblocked = nvb;
    flush_held();
    return 0;
}

int hmc_sig_pending(sigset_t *set)
{
    if (syscall(SYS_rt_sigpending, set, (size_t)8) != 0)
        return -1;
    if (atomic_load_explicit(&g_keep, memory_order_relaxed))
        set_bits(set, bits_of(set) | t_vpending);
    return 0;
}

/* ---- threads, fork, exec ------------------------------------------------- */

uint64_t hmc_sig_thread_mask(void) { return t_vblocked; }

void hmc_sig_thread_begin(uint64_t inherited, int attr_mask)
{
    uint64_t keep = atomic_load(&g_keep);
    if (!keep)
        return;
    t_vpending = 0;
    sigset_t cur;
    if (hmc_sig_real_mask(SIG_BLOCK, NULL, &cur) != 0)
        return;
    uint64_t real = bits_of(&cur) & keep;
    t_vblocked = (attr_mask ? 0 : inherited & keep) | real;
    if (real) {
        sigset_t s;
        sigemptyset(&s);
        set_bits(&s, real);
        hmc_sig_real_mask(SIG_UNBLOCK, &s, NULL);
    }
}

void hmc_sig_atfork_child(void) { t_vpending = 0; }   /* the kernel clears pending signals */

static void exec_dispositions(int restore)
{
    uint64_t keep = atomic_load(&g_keep);
    for (int k = 0; k < 2; k++) {
        int sig = g_keep_sig[k];
        if (!sig)
            continue;
        struct app a = load(sig, NULL);
        if (a.u.h != SIG_IGN)
            continue;
        struct sigaction sa;
        if (restore) {
            real_action(sig, &a, &sa);
        } else {
            memset(&sa, 0, sizeof(sa));
            sa.sa_handler = SIG_IGN;
            sigemptyset(&sa.sa_mask);
        }
        hmc_sig_real_action(sig, &sa, NULL);
    }
    if (t_vblocked & keep) {
        sigset_t s;
        sigemptyset(&s);
        set_bits(&s, t_vblocked & keep);
        hmc_sig_real_mask(restore ? SIG_UNBLOCK : SIG_BLOCK, &s, NULL);
    }
}

void hmc_sig_exec_begin(void) { exec_dispositions(0); }
void hmc_sig_exec_failed(void) { exec_dispositions(1); }
