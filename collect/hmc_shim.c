/* hmc_shim.c — libhmtrace.so's symbol interposition and bootstrap.
 *
 * Every malloc-family entry point has a fast path that decides "not traced" from
 * the size alone and the thread's small-call countdown (hmc_small.h: 1 in N calls
 * below the threshold is traced anyway, with weight N), frees from
 * malloc_usable_size, which is never smaller than the request, and the mark of a
 * traced small block; one shared slow path unwinds, calls the real function and
 * records. A thread-local flag stops recursion (libunwind, pthread_setspecific and
 * dlsym may all call malloc); allocations made while dlsym resolves the real
 * functions come from the static arena of hm_real.h and are never freed. */
#include "hmc_core.h"
#include "hmc_sampler.h"
#include "hmc_signal.h"
#include "hmc_small.h"
#include "hm_options.h"
#include "hm_modmap.h"
#include "hm_real.h"
#include "hm_unwind.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static struct hm_alloc_fns rm;     /* the allocator wrapped (hm_real.h) */
static struct {
    int (*dlclose)(void *);
    void (*exit_)(int) __attribute__((noreturn));
    void (*Exit_)(int) __attribute__((noreturn));
    int (*execve)(const char *, char *const[], char *const[]);
    int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
} real;

enum { ST_NONE, ST_INIT, ST_READY, ST_OFF };
static _Atomic int g_state;
static uint64_t g_min;             /* 0 until ready: every call takes the slow path */
static uint64_t g_free_min;        /* likewise for the free/realloc filter */
static int g_depth = 8;
static int g_sampling;             /* threads get a sampler when they start */

/* ---- the untraced call -------------------------------------------------- */

struct call { int kind; void *in; size_t a, b; void **memptr; int rc; };

static void *plain(struct call *c)
{
    size_t page = 4096;
    if (hm_unlikely(rm.malloc == NULL)) {          /* still resolving */
        switch (c->kind) {
        case HMK_MALLOC: return hm_boot_alloc(c->a, 16);
        case HMK_CALLOC: return c->b && c->a > SIZE_MAX / c->b ? NULL : hm_boot_alloc(c->a * c->b, 16);
        case HMK_POSIX_MEMALIGN: {
            void *p = hm_boot_alloc(c->b, c->a);
            c->rc = p ? 0 : ENOMEM;
            if (p)
                *c->memptr = p;
            return p;
        }
        case HMK_ALIGNED_ALLOC: case HMK_MEMALIGN: return hm_boot_alloc(c->b, c->a);
        case HMK_VALLOC: case HMK_PVALLOC: return hm_boot_alloc(c->a, page);
        default: break;
        }
    }
    if (hm_unlikely(c->in && hm_in_boot(c->in))) {     /* realloc of an arena block */
        size_t n = c->kind == HMK_REALLOCARRAY ? c->a * c->b : c->a;
        void *p = rm.malloc ? rm.malloc(n) : hm_boot_alloc(n, 16);
        if (p) {
            size_t old = hm_boot_size(c->in);
            memcpy(p, c->in, old < n ? old : n);
        }
        return p;
    }
    switch (c->kind) {
    case HMK_MALLOC: return rm.malloc(c->a);
    case HMK_CALLOC: return rm.calloc(c->a, c->b);
    case HMK_REALLOC: return rm.realloc(c->in, c->a);
    case HMK_REALLOCARRAY: return rm.reallocarray(c->in, c->a, c->b);
    case HMK_POSIX_MEMALIGN:
        c->rc = rm.posix_memalign(c->memptr, c->a, c->b);
        return c->rc == 0 ? *c->memptr : NULL;
    case HMK_ALIGNED_ALLOC: return rm.aligned_alloc(c->a, c->b);
    case HMK_MEMALIGN: return rm.memalign(c->a, c->b);
    case HMK_VALLOC: return rm.valloc(c->a);
    case HMK_PVALLOC: return rm.pvalloc(c->a);
    default: return NULL;
    }
}

/* ---- initialization ----------------------------------------------------- */

static void atfork_prepare(void) { hmc_atfork_prepare(); }
static void atfork_parent(void) { hmc_atfork_parent(); }
static void atfork_child(void)
{
    hmc_atfork_child();
    hmc_sig_atfork_child();
    hmc_sampler_atfork_child();
}

#define RESOLVE(field, name) \
    do { void *s_ = dlsym(RTLD_NEXT, name); memcpy(&real.field, &s_, sizeof(s_)); } while (0)

/* Crash handling: a terminating signal still leaves a complete trace. hmc_signal.c
 * keeps these claimed whatever the application installs (gfortran's -fbacktrace
 * replaces SIGSEGV, SIGBUS, ... at start-up), calls the application's handler when it
 * has one, and calls on_fatal just before a signal takes its default action. */
static const int g_sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS,
                              SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGXCPU, SIGXFSZ, SIGPIPE };

static void on_fatal(int sig)
{
    hmc_busy++;
    hmc_finish(HME_SIGNAL, sig);
    hmc_busy--;
}

static void install_signals(void)
{
    hmc_sig_set_fatal(on_fatal);
    for (unsigned i = 0; i < sizeof(g_sigs) / sizeof(g_sigs[0]); i++)
        hmc_sig_claim(g_sigs[i], NULL, 0);
}

/* HMTUNE_SMALL_SAMPLE: 1 in how many calls below HMTUNE_MIN_SIZE is traced. */
static void small_config(void)
{
    const char *v = hm_opt_raw(HM_OPT_SMALL_SAMPLE);
    uint64_t n = HMC_SMALL_DEFAULT;
    int rc = v ? hmc_small_parse(v, &n) : 0;
    if (rc == -2)
        hm_log("hmtune: ", "HMTUNE_SMALL_SAMPLE=0 is no interval (off traces no small call); "
               "tracing 1 in " HMC_SMALL_DEFAULT_STR " calls below HMTUNE_MIN_SIZE", NULL);
    else if (rc == -3)
        hm_log("hmtune: ", "HMTUNE_SMALL_SAMPLE is above 1048576 calls; tracing 1 in "
               HMC_SMALL_DEFAULT_STR " calls below HMTUNE_MIN_SIZE instead of ", v);
    else if (rc != 0)
        hm_log("hmtune: ", "HMTUNE_SMALL_SAMPLE must be off or a whole number 1..1048576; "
               "tracing 1 in " HMC_SMALL_DEFAULT_STR " calls below HMTUNE_MIN_SIZE instead of ", v);
    if (rc != 0)
        n = HMC_SMALL_DEFAULT;
    hmc_small_set(n);
}

static void do_init(void)
{
    hmc_busy++;
    int ok = hm_real_resolve(&rm) == 0;
    hmc_sig_resolve();
    RESOLVE(dlclose, "dlclose");
    RESOLVE(exit_, "_exit");
    RESOLVE(Exit_, "_Exit");
    RESOLVE(execve, "execve");
    RESOLVE(pthread_create, "pthread_create");
    const char *out = hm_opt_str(HM_OPT_OUT);
    uint64_t min_size = 4096, depth = 8;
    if (!ok) {
        hm_log("hmtune: ", "cannot find the malloc functions to wrap; tracing is off", NULL);
    } else if (!out || !*out) {
        hm_log("hmtune: ", "HMTUNE_OUT is not set; libhmtrace.so records nothing "
               "(run the application through 'hmtune trace')", NULL);
        ok = 0;
    } else {
        /* a malformed value: the table's message, and the default in place */
        if (hm_opt_num(HM_OPT_MIN_SIZE, &min_size) != 0)
            hm_opt_warn(HM_OPT_MIN_SIZE, "hmtune: ");
        if (hm_opt_num(HM_OPT_DEPTH, &depth) != 0)
            hm_opt_warn(HM_OPT_DEPTH, "hmtune: ");
        small_config();
        struct hmc_config cfg = { out, min_size, (int)depth };
        ok = hmc_core_init(&cfg) == 0;
    }
    if (ok) {
        g_depth = (int)depth;
        hm_modmap_init(hmc_module_cb);
        hm_unwind_init((void *)&do_init);
        pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
        install_signals();
        struct hmc_sampler_cfg scfg;
        if (hmc_sampler_config(&scfg) != 0)
            scfg.kind = HMS_SRC_NONE;
        hmc_set_thread_exit_hook(hmc_sampler_thread_stop);
        hmc_set_finish_hook(hmc_sampler_drain_self);
        hmc_set_thread_finish_hook(hmc_sampler_finish_thread);
        g_sampling = hmc_sampler_init(&scfg) == 0 && scfg.kind != HMS_SRC_NONE;
        g_min = min_size;
        g_free_min = min_size;
        atomic_store(&g_state, ST_READY);
        if (g_sampling)
            hmc_sampler_thread_start();       /* the thread that initialized: main */
    } else {
        g_min = UINT64_MAX;
        g_free_min = UINT64_MAX;
        atomic_store(&g_state, ST_OFF);
    }
    hmc_busy--;
}

/* 1 when the tracer is ready; 0 while initializing (nested) or when off. */
static inline int ensure_ready(void)
{
    int st = atomic_load_explicit(&g_state, memory_order_acquire);
    if (hm_likely(st == ST_READY))
        return 1;
    if (st == ST_NONE) {
        int z = ST_NONE;
        if (atomic_compare_exchange_strong(&g_state, &z, ST_INIT))
            do_init();
    }
    return atomic_load(&g_state) == ST_READY;
}

__attribute__((constructor)) static void hmc_ctor(void) { ensure_ready(); }
__attribute__((destructor)) static void hmc_dtor(void)
{
    if (atomic_load(&g_state) == ST_READY)
        hmc_finish(HME_EXIT, 0);
}

/* ---- the traced path ---------------------------------------------------- */

static HM_NOINLINE void *slow(struct call *c)
{
    if (hmc_busy)
        return plain(c);
    struct hmc_thread *t = ensure_ready() ? hmc_thread_get() : NULL;
    if (!t) {
        int st = atomic_load(&g_state);
        if (st == ST_OFF || (st == ST_READY && !hmc_core_active()))
            hmc_small_left = INT64_MAX;      /* nothing is recorded: keep small calls fast */
        return plain(c);
    }
    size_t size = c->a;
    switch (c->kind) {
    case HMK_CALLOC: case HMK_REALLOCARRAY:
        if (c->b && c->a > SIZE_MAX / c->b)
            return plain(c);                 /* overflow: the real call fails it */
        size = c->a * c->b;
        break;
    case HMK_POSIX_MEMALIGN: case HMK_ALIGNED_ALLOC: case HMK_MEMALIGN:
        size = c->b;
        break;
    default:
        break;
    }
    int small = size < g_min, in_marked = 0, in_big = 0;
    if (c->in && !hm_in_boot(c->in)) {
        in_marked = hmc_small_unmark(c->in);  /* a traced small block: ends here */
        in_big = rm.usable(c->in) >= g_free_min;
    }
    /* sampled: traced because small-call sampling picked it (or its input block) */
    int sampled = small && !in_big && (hmc_small_pick() || in_marked);
    if (small && !in_big && !sampled) {
        hmc_count_call(t);
        return plain(c);
    }
    hmc_busy = 1;
    uint64_t t0 = hm_ticks();
    uint64_t frames[HM_MAX_DEPTH];
    int n = hm_backtrace(frames, g_depth);
    uint64_t t1 = hm_ticks();
    void *r = plain(c);
    int err = errno;
    uint64_t t2 = hm_ticks();
    if (in_marked && !r && size != 0)
        hmc_small_mark(c->in);               /* a failed realloc keeps its block */
    /* A small block that is recorded is marked, so that its free is recorded too; a
     * sampled one that cannot be (hmc_small_mark) stays unrecorded, unless it ended a
     * traced block. */
    if (r && size < g_free_min && hmc_small_mark(r) != 0 && sampled && !in_marked) {
        hmc_add_tracer_ns(t, (t1 - t0) + (hm_ticks() - t2), 1);
        hmc_busy = 0;
        errno = err;
        return r;
    }
    uint64_t align = 0;
    if (c->kind == HMK_POSIX_MEMALIGN || c->kind == HMK_ALIGNED_ALLOC || c->kind == HMK_MEMALIGN)
        align = c->a;
    else if (c->kind == HMK_VALLOC || c->kind == HMK_PVALLOC)
        align = (uint64_t)sysconf(_SC_PAGESIZE);
    if (sampled)
        hmc_record_sampled_call(t, c->kind, t0, t2, size, align, (uint64_t)(uintptr_t)c->in,
                                (uint64_t)(uintptr_t)r, frames, n, hmc_small_interval());
    else
        hmc_record_call(t, c->kind, t0, t2, size, align, (uint64_t)(uintptr_t)c->in,
                        (uint64_t)(uintptr_t)r, frames, n);
    hmc_add_tracer_ns(t, (t1 - t0) + (hm_ticks() - t2), 1);
    hmc_busy = 0;
    errno = err;
    return r;
}

static HM_NOINLINE void slow_free(void *p)
{
    if (hm_in_boot(p))
        return;
    int marked = hmc_small_unmark(p);        /* before the block can be reused */
    if (hmc_busy || !ensure_ready() || (!marked && rm.usable(p) < g_free_min)) {
        if (rm.free)
            rm.free(p);
        return;
    }
    struct hmc_thread *t = hmc_thread_get();
    if (!t) {
        rm.free(p);
        return;
    }
    hmc_busy = 1;
    int err = errno;
    uint64_t t0 = hm_ticks();
    rm.free(p);
    uint64_t t1 = hm_ticks();
    hmc_record_free(t, t0, t1, (uint64_t)(uintptr_t)p);
    hmc_add_tracer_ns(t, hm_ticks() - t1, 1);
    hmc_busy = 0;
    errno = err;
}

/* ---- the interposed entry points ---------------------------------------- */

EXPORT void *malloc(size_t n)
{
    if (hm_likely(n < g_min) && hm_likely(--hmc_small_left > 0))
        return rm.malloc(n);
    struct call c = { HMK_MALLOC, NULL, n, 0, NULL, 0 };
    return slow(&c);
}

EXPORT void free(void *p)
{
    if (hm_unlikely(p == NULL))
        return;
    if (hm_likely(g_free_min != 0 && !hm_in_boot(p) && rm.usable(p) < g_free_min &&
                  !hmc_small_marked(p))) {
        rm.free(p);
        return;
    }
    slow_free(p);
}

EXPORT void *calloc(size_t nmemb, size_t size)
{
    if (hm_likely(nmemb < g_min && size < g_min && nmemb * size < g_min) &&
        hm_likely(--hmc_small_left > 0))
        return rm.calloc(nmemb, size);
    struct call c = { HMK_CALLOC, NULL, nmemb, size, NULL, 0 };
    return slow(&c);
}

EXPORT void *realloc(void *p, size_t n)
{
    if (hm_likely(n < g_min && g_free_min != 0 &&
                  (p == NULL || (!hm_in_boot(p) && rm.usable(p) < g_free_min &&
                                 !hmc_small_marked(p)))) &&
        hm_likely(--hmc_small_left > 0))
        return rm.realloc(p, n);
    struct call c = { HMK_REALLOC, p, n, 0, NULL, 0 };
    return slow(&c);
}

/* The kinds below always take the slow path; a small request counts down here. */
static inline void count_small(size_t n)
{
    if (n < g_min)
        hmc_small_left--;
}

EXPORT void *reallocarray(void *p, size_t nmemb, size_t size)
{
    size_t total;
    if (!__builtin_mul_overflow(nmemb, size, &total))
        count_small(total);
    struct call c = { HMK_REALLOCARRAY, p, nmemb, size, NULL, 0 };
    return slow(&c);
}

EXPORT int posix_memalign(void **memptr, size_t align, size_t size)
{
    struct call c = { HMK_POSIX_MEMALIGN, NULL, align, size, memptr, 0 };
    if (hm_likely(size < g_min) && hm_likely(--hmc_small_left > 0))
        return rm.posix_memalign(memptr, align, size);
    slow(&c);
    return c.rc;
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
    if (hm_likely(size < g_min) && hm_likely(--hmc_small_left > 0))
        return rm.aligned_alloc(align, size);
    struct call c = { HMK_ALIGNED_ALLOC, NULL, align, size, NULL, 0 };
    return slow(&c);
}

EXPORT void *memalign(size_t align, size_t size)
{
    if (hm_likely(size < g_min) && hm_likely(--hmc_small_left > 0))
        return rm.memalign(align, size);
    struct call c = { HMK_MEMALIGN, NULL, align, size, NULL, 0 };
    return slow(&c);
}

EXPORT void *valloc(size_t n)
{
    count_small(n);
    struct call c = { HMK_VALLOC, NULL, n, 0, NULL, 0 };
    return slow(&c);
}

EXPORT void *pvalloc(size_t n)
{
    count_small(n);
    struct call c = { HMK_PVALLOC, NULL, n, 0, NULL, 0 };
    return slow(&c);
}

/* A dlclose may unmap a library whose addresses the next dlopen reuses. (dlopen
 * itself is not wrapped: glibc resolves RUNPATH/$ORIGIN from the caller's
 * object, which a wrapper would change.) */
EXPORT int dlclose(void *h)
{
    if (!real.dlclose)
        ensure_ready();
    int r = real.dlclose(h);
    hm_modmap_invalidate();
    return r;
}

EXPORT void _exit(int status)
{
    if (atomic_load(&g_state) == ST_READY)
        hmc_finish(HME__EXIT, 0);
    if (real.exit_)
        real.exit_(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

EXPORT void _Exit(int status)
{
    if (atomic_load(&g_state) == ST_READY)
        hmc_finish(HME__EXIT, 0);
    if (real.Exit_)
        real.Exit_(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

/* exec replaces the image without running destructors: write what we have. */
EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    if (!real.execve)
        ensure_ready();
    if (atomic_load(&g_state) == ST_READY)
        hmc_finish(HME_EXEC, 0);
    hmc_sig_exec_begin();
    int r = real.execve(path, argv, envp);
    int err = errno;
    hmc_sig_exec_failed();
    hmc_exec_failed();
    errno = err;
    return r;
}

/* Threads start sampling before their own code runs: the trampoline below runs
 * the sampler's per-thread setup (outside any signal handler). Its frame is
 * removed from call stacks with the rest of this library's. */
struct start { void *(*fn)(void *); void *arg; uint64_t sigmask; int attr_mask; };

static void *thread_trampoline(void *p)
{
    struct start st = *(struct start *)p;
    rm.free(p);
    hmc_sig_thread_begin(st.sigmask, st.attr_mask);   /* before the first sample */
    hmc_sampler_thread_start();
    return st.fn(st.arg);
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (!real.pthread_create)
        ensure_ready();
    if (!real.pthread_create)
        return EAGAIN;
    if (!g_sampling)
        return real.pthread_create(th, attr, fn, arg);
    struct start *st = rm.malloc(sizeof(*st));
    if (!st)
        return real.pthread_create(th, attr, fn, arg);
    st->fn = fn;
    st->arg = arg;
    st->sigmask = hmc_sig_thread_mask();             /* a new thread inherits its mask */
    sigset_t am;
    st->attr_mask = attr && pthread_attr_getsigmask_np(attr, &am) == 0;
    int r = real.pthread_create(th, attr, thread_trampoline, st);
    if (r != 0)
        rm.free(st);
    return r;
}

/* Signals (hmc_signal.c): the application's handlers and masks are recorded and
 * emulated around the tracer's own. glibc's signal, sysv_signal and siginterrupt call
 * its sigaction internally, past this library, so they are interposed too. */
EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    return hmc_sig_action(sig, act, old);
}

EXPORT sighandler_t signal(int sig, sighandler_t h) { return hmc_sig_signal(sig, h, 0); }
EXPORT sighandler_t bsd_signal(int sig, sighandler_t h) { return hmc_sig_signal(sig, h, 0); }
EXPORT sighandler_t ssignal(int sig, sighandler_t h) { return hmc_sig_signal(sig, h, 0); }
EXPORT sighandler_t sysv_signal(int sig, sighandler_t h) { return hmc_sig_signal(sig, h, 1); }
EXPORT sighandler_t __sysv_signal(int sig, sighandler_t h) { return hmc_sig_signal(sig, h, 1); }
EXPORT int siginterrupt(int sig, int flag) { return hmc_sig_interrupt(sig, flag); }

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    return hmc_sig_mask(how, set, old);
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    int r = hmc_sig_mask(how, set, old);
    if (r == 0)
        return 0;
    errno = r;
    return -1;
}

EXPORT int sigpending(sigset_t *set) { return hmc_sig_pending(set); }
