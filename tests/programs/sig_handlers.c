/*
 * sig_handlers.c — an application that installs its own handlers in main, after the
 * tracer's start-up, for the signals the tracer uses itself (SIGTRAP, the software
 * sampler's timer signal SIGRTMIN+5, SIGSEGV) and for SIGPROF, SIGUSR1 and SIGUSR2;
 * runs a pointer chase long enough to be sampled (breakpoints included) with its own
 * ITIMER_PROF ticking; then uses every handler once or twice and checks they ran
 * exactly as the kernel promises:
 *   SIGTRAP     SA_SIGINFO, sa_mask {SIGUSR1, SIGRTMIN+5}: raise() (SI_TKILL) and an
 *               int3 (SI_KERNEL), two calls and no more
 *   SIGSEGV     SA_SIGINFO, sa_mask {SIGUSR2, SIGTRAP}: two writes to a PROT_NONE
 *               page, recovered with siglongjmp; si_addr is the page, SIGSEGV and
 *               SIGUSR2 are blocked inside the handler
 *   SIGRTMIN+5  SA_SIGINFO|SA_RESETHAND|SA_RESTART: sigqueue(42) -> one call with
 *               SI_QUEUE and 42, then SIG_DFL; then SIG_IGN and one more sigqueue
 *   SIGPROF     signal(), then siginterrupt(1) and signal() again: ticks counted
 *   SIGUSR1     sysv_signal() (SA_RESETHAND|SA_NODEFER): one raise, then SIG_DFL
 *   SIGUSR2     sa_mask {SIGTRAP, SIGRTMIN+5, SIGINT}, never raised
 * It prints what sigaction reports for each (handler, flags, mask) before and after,
 * so a traced run's output can be compared with a bare run's.
 * Usage: sig_handlers [STEPS]   (chase steps, default 4000000)
 * Output: the reports, "chase <sum>", "ok"; exit 0 (1 when a handler misbehaved).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#define N (1u << 22)

static volatile sig_atomic_t n_trap, n_prof, n_segv, n_rt, n_usr1;
static volatile int trap_code[2], rt_value, rt_code, segv_addr_ok, segv_mask_ok;
static char *guard;
static sigjmp_buf env;

static void on_trap(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (n_trap < 2)
        trap_code[n_trap] = si->si_code;
    n_trap++;
}

static void on_prof(int sig) { (void)sig; n_prof++; }
static void on_usr1(int sig) { (void)sig; n_usr1++; }
static void on_usr2(int sig, siginfo_t *si, void *uc) { (void)sig; (void)si; (void)uc; }

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    n_segv++;
    segv_addr_ok = (char *)si->si_addr == guard;
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    segv_mask_ok = sigismember(&cur, SIGSEGV) == 1 && sigismember(&cur, SIGUSR2) == 1 &&
                   sigismember(&cur, SIGUSR1) == 0;
    siglongjmp(env, 1);
}

static void on_rt(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    n_rt++;
    rt_value = si->si_value.sival_int;
    rt_code = si->si_code;
}

static const char *hname(const struct sigaction *a)
{
    if (a->sa_handler == SIG_DFL) return "SIG_DFL";
    if (a->sa_handler == SIG_IGN) return "SIG_IGN";
    if (a->sa_handler == on_prof) return "on_prof";
    if (a->sa_handler == on_usr1) return "on_usr1";
    if (a->sa_sigaction == on_trap) return "on_trap";
    if (a->sa_sigaction == on_segv) return "on_segv";
    if (a->sa_sigaction == on_rt) return "on_rt";
    if (a->sa_sigaction == on_usr2) return "on_usr2";
    return "someone else's";
}

static const char *plain_name(void (*h)(int))
{
    struct sigaction a;
    memset(&a, 0, sizeof(a));
    a.sa_handler = h;
    return hname(&a);
}

static void print_action(const char *what, const struct sigaction *a)
{
    printf("%s: %s flags=%#x mask=", what, hname(a), (unsigned)a->sa_flags);
    for (int s = 1; s <= 64; s++)
        if (s != 32 && s != 33 && sigismember(&a->sa_mask, s) == 1)
            printf(" %d", s);
    printf("\n");
}

static void show(const char *what, int sig)
{
    struct sigaction a;
    if (sigaction(sig, NULL, &a) != 0) {
        printf("%s: sigaction failed\n", what);
        return;
    }
    print_action(what, &a);
}

static void install(const char *what, int sig, void (*fn)(int, siginfo_t *, void *), int flags,
                    const int *mask)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = fn;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    for (; mask && *mask; mask++)
        sigaddset(&sa.sa_mask, *mask);
    if (sigaction(sig, &sa, &old) != 0) {
        printf("%s: sigaction failed\n", what);
        return;
    }
    print_action(what, &old);        /* the old action: the default */
}

static uint64_t chase(size_t *nxt, size_t steps)
{
    size_t p = 0;
    uint64_t s = 0;
    for (size_t i = 0; i < steps; i++) {
        p = nxt[p];
        s += p;
    }
    return s;
}

/* its own faults, recovered */
static __attribute__((noinline)) int faults(void)
{
    long page = sysconf(_SC_PAGESIZE);
    guard = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (guard == MAP_FAILED)
        return 1;
    volatile int n = 0;
    for (volatile int k = 0; k < 2; k++) {
        if (sigsetjmp(env, 1) == 0)
            *(volatile char *)guard = 1;
        else
            n++;
    }
    printf("segv: %d faults, %d calls, si_addr %s, mask in handler %s\n", n, (int)n_segv,
           segv_addr_ok ? "ok" : "wrong", segv_mask_ok ? "ok" : "wrong");
    return n != 2 || n_segv != 2 || !segv_addr_ok || !segv_mask_ok;
}

int main(int argc, char **argv)
{
    size_t steps = argc > 1 ? strtoul(argv[1], NULL, 10) : 4000000;
    int rt = SIGRTMIN + 5;
    int bad = 0;

    int trap_mask[] = { SIGUSR1, rt, 0 }, segv_mask[] = { SIGUSR2, SIGTRAP, 0 };
    int usr2_mask[] = { SIGTRAP, rt, SIGINT, 0 };
    install("trap was", SIGTRAP, on_trap, SA_SIGINFO, trap_mask);
    install("segv was", SIGSEGV, on_segv, SA_SIGINFO, segv_mask);
    install("rt was", rt, on_rt, SA_SIGINFO | SA_RESETHAND | SA_RESTART, NULL);
    install("usr2 was", SIGUSR2, on_usr2, SA_SIGINFO, usr2_mask);
    printf("prof was: %s\n", plain_name(signal(SIGPROF, on_prof)));
    show("prof signal", SIGPROF);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    siginterrupt(SIGPROF, 1);   /* glibc's signal() then leaves SA_RESTART out */
#pragma GCC diagnostic pop
    show("prof siginterrupt", SIGPROF);
    printf("prof was: %s\n", plain_name(signal(SIGPROF, on_prof)));
    show("prof signal again", SIGPROF);
    printf("usr1 was: %s\n", plain_name(sysv_signal(SIGUSR1, on_usr1)));
    show("usr1", SIGUSR1);
    show("trap", SIGTRAP);
    show("segv", SIGSEGV);
    show("rt", rt);
    show("usr2", SIGUSR2);

    /* the sampled part, with the application's own profiling timer */
    size_t *nxt = malloc(N * sizeof(size_t));   /* SITE:chase */
    if (!nxt)
        return 1;
    for (size_t i = 0; i < N; i++)
        nxt[i] = i;
    uint64_t x = 88172645463325252ull;
    for (size_t i = N - 1; i > 0; i--) {     /* one random cycle (Sattolo) */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t j = x % i, t = nxt[i];
        nxt[i] = nxt[j];
        nxt[j] = t;
    }
    struct itimerval it = { { 0, 5000 }, { 0, 5000 } }, off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_PROF, &it, NULL);
    uint64_t sum = chase(nxt, steps);
    setitimer(ITIMER_PROF, &off, NULL);
    printf("prof: %s\n", n_prof > 0 ? "ticked" : "never ticked");
    bad |= n_prof == 0;

    /* the application's own traps: exactly these two reach its handler */
    raise(SIGTRAP);
    __asm__ volatile("int3");
    printf("trap: %d calls, si_code %s %s\n", (int)n_trap,
           trap_code[0] == SI_TKILL ? "SI_TKILL" : "other",
           trap_code[1] == SI_KERNEL ? "SI_KERNEL" : "other");
    bad |= n_trap != 2 || trap_code[0] != SI_TKILL || trap_code[1] != SI_KERNEL;

    bad |= faults();

    /* the sampler's own signal number, from the application */
    union sigval v = { .sival_int = 42 };
    sigqueue(getpid(), rt, v);
    printf("rt: %d calls, value %d, si_code %s\n", (int)n_rt, rt_value,
           rt_code == SI_QUEUE ? "SI_QUEUE" : "other");
    bad |= n_rt != 1 || rt_value != 42 || rt_code != SI_QUEUE;
    show("rt after one (SA_RESETHAND)", rt);
    struct sigaction ign;
    memset(&ign, 0, sizeof(ign));
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(rt, &ign, NULL);
    sigqueue(getpid(), rt, v);
    printf("rt ignored: %d calls\n", (int)n_rt);
    show("rt ignored", rt);

    raise(SIGUSR1);
    printf("usr1: %d calls\n", (int)n_usr1);
    bad |= n_usr1 != 1;
    show("usr1 after one (sysv_signal)", SIGUSR1);

    printf("chase %llu\n", (unsigned long long)sum);
    free(nxt);
    printf(bad ? "bad\n" : "ok\n");
    return bad;
}
