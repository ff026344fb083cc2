/*
 * sig_blocked.c — an application that blocks the signals the tracer samples with
 * (SIGTRAP, the software sampler's timer signal SIGRTMIN+5) and SIGPROF while it runs
 * a pointer chase long enough to be sampled, in main and in two threads:
 *   main      sigprocmask(SIG_BLOCK, {SIGTRAP, SIGPROF, SIGRTMIN+5}), then chases
 *   inherit   created by main while they are blocked: checks it inherited them, then
 *             pthread_sigmask(SIG_SETMASK, every signal) and chases
 *   attr      created with pthread_attr_setsigmask_np({SIGTRAP, SIGRTMIN+5}): checks
 *             it started with exactly those blocked (SIGPROF not), then chases
 * Every mask query (old sets, sigpending) must show what the application set. After
 * the threads: raise(SIGTRAP) and sigqueue(SIGRTMIN+5, 7) while blocked stay pending
 * (handlers not called, sigpending shows them) until main unblocks them, when each
 * handler runs once, with its siginfo.
 * Usage: sig_blocked [STEPS]   (chase steps per thread, default 3000000)
 *        sig_blocked int3      block SIGTRAP, then int3: the kernel kills the process
 *                              with SIGTRAP (a synchronous trap cannot wait)
 * Output: one line per check, "chase <sum>", "ok"; exit 0 (1 when a check failed).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N (1u << 22)

static size_t *nxt;
static size_t steps = 3000000;
static volatile sig_atomic_t n_trap, n_rt;
static volatile int trap_code, rt_value;

static void on_trap(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    n_trap++;
    trap_code = si->si_code;
}

static void on_rt(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    n_rt++;
    rt_value = si->si_value.sival_int;
}

static uint64_t chase(size_t start)
{
    size_t p = start;
    uint64_t s = 0;
    for (size_t i = 0; i < steps; i++) {
        p = nxt[p];
        s += p;
    }
    return s;
}

/* "TRAP PROF RT" membership of a set, e.g. "1 1 0" */
static void members(const sigset_t *s, char *out)
{
    int rt = SIGRTMIN + 5;
    sprintf(out, "%d %d %d", sigismember(s, SIGTRAP), sigismember(s, SIGPROF), sigismember(s, rt));
}

static void current(char *out)
{
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    members(&cur, out);
}

static int count_blocked(void)
{
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    int n = 0;
    for (int s = 1; s <= 64; s++)
        if (s != SIGKILL && s != SIGSTOP && s != 32 && s != 33)
            n += sigismember(&cur, s) == 1;
    return n;
}

struct job { char start_mask[32], after[32]; int nblocked; uint64_t sum; size_t start; };

static void *inherit(void *arg)
{
    struct job *j = arg;
    current(j->start_mask);
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    j->nblocked = count_blocked();
    j->sum = chase(j->start);
    current(j->after);
    return NULL;
}

static void *attr_thread(void *arg)
{
    struct job *j = arg;
    current(j->start_mask);
    j->nblocked = count_blocked();
    j->sum = chase(j->start);
    current(j->after);
    return NULL;
}

int main(int argc, char **argv)
{
    int rt = SIGRTMIN + 5, bad = 0;
    char m[32];
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sa.sa_sigaction = on_trap;
    sigaction(SIGTRAP, &sa, NULL);
    sa.sa_sigaction = on_rt;
    sigaction(rt, &sa, NULL);

    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTRAP);
    if (argc > 1 && strcmp(argv[1], "int3") == 0) {
        sigprocmask(SIG_BLOCK, &block, NULL);
        printf("int3 with SIGTRAP blocked\n");
        fflush(stdout);
        __asm__ volatile("int3");
        printf("survived\n");
        return 1;
    }
    if (argc > 1)
        steps = strtoul(argv[1], NULL, 10);
    sigaddset(&block, SIGPROF);
    sigaddset(&block, rt);
    sigprocmask(SIG_BLOCK, &block, &old);
    members(&old, m);
    printf("old set: %s\n", m);
    bad |= strcmp(m, "0 0 0") != 0;
    current(m);
    printf("blocked in main: %s\n", m);
    bad |= strcmp(m, "1 1 1") != 0;

    nxt = malloc(N * sizeof(size_t));   /* SITE:chase */
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

    struct job a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    a.start = 1;
    b.start = 2;
    pthread_t ta, tb;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    sigset_t am;
    sigemptyset(&am);
    sigaddset(&am, SIGTRAP);
    sigaddset(&am, rt);
    pthread_attr_setsigmask_np(&attr, &am);
    if (pthread_create(&ta, NULL, inherit, &a) != 0 || pthread_create(&tb, &attr, attr_thread, &b) != 0)
        return 1;
    uint64_t sum = chase(0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    printf("inherit: started with %s, %d blocked after SIG_SETMASK of all, ended with %s\n",
           a.start_mask, a.nblocked, a.after);
    printf("attr: started with %s, %d blocked, ended with %s\n", b.start_mask, b.nblocked, b.after);
    bad |= strcmp(a.start_mask, "1 1 1") != 0 || strcmp(a.after, "1 1 1") != 0;
    bad |= strcmp(b.start_mask, "1 0 1") != 0 || b.nblocked != 2 || strcmp(b.after, "1 0 1") != 0;

    /* the application's own signals wait while blocked */
    raise(SIGTRAP);
    union sigval v = { .sival_int = 7 };
    sigqueue(getpid(), rt, v);
    sigset_t pend;
    sigpending(&pend);
    members(&pend, m);
    printf("pending: %s, handlers called: %d %d\n", m, (int)n_trap, (int)n_rt);
    bad |= strcmp(m, "1 0 1") != 0 || n_trap != 0 || n_rt != 0;
    sigset_t t;
    sigemptyset(&t);
    sigaddset(&t, SIGTRAP);
    sigprocmask(SIG_UNBLOCK, &t, NULL);
    printf("SIGTRAP unblocked: %d call, si_code %s\n", (int)n_trap,
           trap_code == SI_TKILL ? "SI_TKILL" : "other");
    bad |= n_trap != 1 || trap_code != SI_TKILL;
    sigset_t prev;
    pthread_sigmask(SIG_SETMASK, &old, &prev);
    members(&prev, m);
    printf("restored, was: %s; SIGRTMIN+5 handler: %d call, value %d\n", m, (int)n_rt, rt_value);
    bad |= strcmp(m, "0 1 1") != 0 || n_rt != 1 || rt_value != 7;
    current(m);
    printf("blocked at the end: %s\n", m);
    bad |= strcmp(m, "0 0 0") != 0;

    printf("chase %llu\n", (unsigned long long)(sum + a.sum + b.sum));
    free(nxt);
    printf(bad ? "bad\n" : "ok\n");
    return bad;
}
