/* hmc_shim.c — libhmtrace.so's symbol interposition (its bootstrap: hmc_boot.c).
 *
 * Every malloc-family entry point has a fast path that decides "not traced" from
 * the size alone and the thread's small-call countdown (hmc_small.h: 1 in N calls
 * below the threshold is traced anyway, with weight N), frees from
 * malloc_usable_size, which is never smaller than the request, and the mark of a
 * traced small block; one shared slow path unwinds, calls the real function and
 * records. A thread-local flag stops recursion (libunwind, pthread_setspecific and
 * dlsym may all call malloc); allocations made while dlsym resolves the real
 * functions come from the static arena of hm_real.h and are never freed. */
#include "hmc_boot.h"
#include "hmc_core.h"
#include "hmc_sampler.h"
#include "hmc_signal.h"
#include "hmc_signal_compat.h"
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

/* ---- the untraced call -------------------------------------------------- */

struct call { int kind; void *in; size_t a, b; void **memptr; int rc; };

static void *plain(struct call *c)
{
    size_t page = 4096;
    if (hm_unlikely(hmc_rm.malloc == NULL)) {          /* still resolving */
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
        void *p = hmc_rm.malloc ? hmc_rm.malloc(n) : hm_boot_alloc(n, 16);
        if (p) {
            size_t old = hm_boot_size(c->in);
            memcpy(p, c->in, old < n ? old : n);
        }
        return p;
    }
    switch (c->kind) {
    case HMK_MALLOC: return hmc_rm.malloc(c->a);
    case HMK_CALLOC: return hmc_rm.calloc(c->a, c->b);
    case HMK_REALLOC: return hmc_rm.realloc(c->in, c->a);
    case HMK_REALLOCARRAY: return hmc_rm.reallocarray(c->in, c->a, c->b);
    case HMK_POSIX_MEMALIGN:
        c->rc = hmc_rm.posix_memalign(c->memptr, c->a, c->b);
        return c->rc == 0 ? *c->memptr : NULL;
    case HMK_ALIGNED_ALLOC: return hmc_rm.aligned_alloc(c->a, c->b);
    case HMK_MEMALIGN: return hmc_rm.memalign(c->a, c->b);
    case HMK_VALLOC: return hmc_rm.valloc(c->a);
    case HMK_PVALLOC: return hmc_rm.pvalloc(c->a);
    default: return NULL;
    }
}

/* A call from inside the tracer (capstone, libunwind, dlsym). In a program built with
 * AddressSanitizer its LeakSanitizer would report the blocks the tracer keeps (its
 * decoders, held from mmap'd per-thread state it does not scan) as the program's leaks
 * and change its exit status: they are made with leak checking off. The weak
 * references are NULL unless an ASan or LSan runtime is loaded. */
extern void __lsan_disable(void) __attribute__((weak));
extern void __lsan_enable(void) __attribute__((weak));

static void *inside(struct call *c)
{
    if (hm_likely(__lsan_disable == NULL || __lsan_enable == NULL))
        return plain(c);
    __lsan_disable();
    void *r = plain(c);
    __lsan_enable();
    return r;
}

/* 1 when the tracer is ready; 0 while initializing (nested) or when off. */
static inline int ensure_ready(void)
{
    int st = atomic_load_explicit(&hmc_state, memory_order_acquire);
    if (hm_likely(st == HMC_ST_READY))
        return 1;
    if (st == HMC_ST_NONE)
        hmc_init_once();
    return atomic_load(&hmc_state) == HMC_ST_READY;
}

/* ---- the traced path ---------------------------------------------------- */

static HM_NOINLINE void *slow(struct call *c)
{
    if (hmc_busy)
        return inside(c);
    struct hmc_thread *t = ensure_ready() ? hmc_thread_get() : NULL;
    if (!t) {
        int st = atomic_load(&hmc_state);
        if (st == HMC_ST_OFF || (st == HMC_ST_READY && !hmc_core_active()))
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
    int small = size < hmc_min, in_marked = 0, in_big = 0;
    if (c->in && !hm_in_boot(c->in)) {
        in_marked = hmc_small_unmark(c->in);  /* a traced small block: ends here */
        in_big = hmc_rm.usable(c->in) >= hmc_free_min;
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
    int n = hm_backtrace(frames, hmc_depth);
    uint64_t t1 = hm_ticks();
    void *r = plain(c);
    int err = errno;
    uint64_t t2 = hm_ticks();
    if (in_marked && !r && size != 0)
        hmc_small_mark(c->in);               /* a failed realloc keeps its block */
    /* A small block that is recorded is marked, so that its free is recorded too; a
     * sampled one that cannot be (hmc_small_mark) stays unrecorded, unless it ended a
     * traced block. */
    if (r && size < hmc_free_min && hmc_small_mark(r) != 0 && sampled && !in_marked) {
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
    if (hmc_busy || !ensure_ready() || (!marked && hmc_rm.usable(p) < hmc_free_min)) {
        if (hmc_rm.free)
            hmc_rm.free(p);
        return;
    }
    struct hmc_thread *t = hmc_thread_get();
    if (!t) {
        hmc_rm.free(p);
        return;
    }
    hmc_busy = 1;
    int err = errno;
    uint64_t t0 = hm_ticks();
    hmc_rm.free(p);
    uint64_t t1 = hm_ticks();
    hmc_record_free(t, t0, t1, (uint64_t)(uintptr_t)p);
    hmc_add_tracer_ns(t, hm_ticks() - t1, 1);
    hmc_busy = 0;
    errno = err;
}

/* ---- the interposed entry points ---------------------------------------- */

EXPORT void *malloc(size_t n)
{
    if (hm_likely(n < hmc_min) && hm_likely(--hmc_small_left > 0))
        return hmc_rm.malloc(n);
    struct call c = { HMK_MALLOC, NULL, n, 0, NULL, 0 };
    return slow(&c);
}

EXPORT void free(void *p)
{
    if (hm_unlikely(p == NULL))
        return;
    if (hm_likely(hmc_free_min != 0 && !hm_in_boot(p) && hmc_rm.usable(p) < hmc_free_min &&
                  !hmc_small_marked(p))) {
        hmc_rm.free(p);
        return;
    }
    slow_free(p);
}

EXPORT void *calloc(size_t nmemb, size_t size)
{
    if (hm_likely(nmemb < hmc_min && size < hmc_min && nmemb * size < hmc_min) &&
        hm_likely(--hmc_small_left > 0))
        return hmc_rm.calloc(nmemb, size);
    struct call c = { HMK_CALLOC, NULL, nmemb, size, NULL, 0 };
    return slow(&c);
}

EXPORT void *realloc(void *p, size_t n)
{
    if (hm_likely(n < hmc_min && hmc_free_min != 0 &&
                  (p == NULL || (!hm_in_boot(p) && hmc_rm.usable(p) < hmc_free_min &&
                                 !hmc_small_marked(p)))) &&
        hm_likely(--hmc_small_left > 0))
        return hmc_rm.realloc(p, n);
    struct call c = { HMK_REALLOC, p, n, 0, NULL, 0 };
    return slow(&c);
}

/* The kinds below always take the slow path; a small request counts down here. */
static inline void count_small(size_t n)
{
    if (n < hmc_min)
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
    if (hm_likely(size < hmc_min) && hm_likely(--hmc_small_left > 0))
        return hmc_rm.posix_memalign(memptr, align, size);
    slow(&c);
    return c.rc;
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
    if (hm_likely(size < hmc_min) && hm_likely(--hmc_small_left > 0))
        return hmc_rm.aligned_alloc(align, size);
    struct call c = { HMK_ALIGNED_ALLOC, NULL, align, size, NULL, 0 };
    return slow(&c);
}

EXPORT void *memalign(size_t align, size_t size)
{
    if (hm_likely(size < hmc_min) && hm_likely(--hmc_small_left > 0))
        return hmc_rm.memalign(align, size);
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
    if (!hmc_real.dlclose)
        ensure_ready();
    int r = hmc_real.dlclose(h);
    hm_modmap_invalidate();
    return r;
}

EXPORT void _exit(int status)
{
    if (atomic_load(&hmc_state) == HMC_ST_READY)
        hmc_finish(HME__EXIT, 0);
    if (hmc_real.exit_)
        hmc_real.exit_(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

EXPORT void _Exit(int status)
{
    if (atomic_load(&hmc_state) == HMC_ST_READY)
        hmc_finish(HME__EXIT, 0);
    if (hmc_real.Exit_)
        hmc_real.Exit_(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

/* exec replaces the image without running destructors: write what we have. */
EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    if (!hmc_real.execve)
        ensure_ready();
    if (atomic_load(&hmc_state) == HMC_ST_READY)
        hmc_finish(HME_EXEC, 0);
    hmc_sig_exec_begin();
    int r = hmc_real.execve(path, argv, envp);
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
    hmc_rm.free(p);
    hmc_sig_thread_begin(st.sigmask, st.attr_mask);   /* before the first sample */
    hmc_sampler_thread_start();
    return st.fn(st.arg);
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (!hmc_real.pthread_create)
        ensure_ready();
    if (!hmc_real.pthread_create)
        return EAGAIN;
    if (!hmc_sampling)
        return hmc_real.pthread_create(th, attr, fn, arg);
    struct start *st = hmc_rm.malloc(sizeof(*st));
    if (!st)
        return hmc_real.pthread_create(th, attr, fn, arg);
    st->fn = fn;
    st->arg = arg;
    st->sigmask = hmc_sig_thread_mask();             /* a new thread inherits its mask */
    sigset_t am;
    st->attr_mask = attr && pthread_attr_getsigmask_np(attr, &am) == 0;
    int r = hmc_real.pthread_create(th, attr, thread_trampoline, st);
    if (r != 0)
        hmc_rm.free(st);
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

