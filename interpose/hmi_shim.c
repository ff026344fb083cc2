/* hmi_shim.c — libhmalloc.so's malloc family and bootstrap (DESIGN.md §2, §6;
 * docs/formats.md §6).
 *
 * Every allocating entry point first checks the request against the placement's
 * size window (one subtraction and one compare): outside it the call goes straight
 * to the wrapped allocator (hm_real.h). Inside it the slow path unwinds (common/
 * hm_unwind, as collect does), matches the chain (hmi_match: per-thread cache, then
 * the site hash) and, for a placed site whose tier has room, allocates from the
 * tier's backend (a split site of placement v2: hmi_backend_alloc_split, only its
 * ranges in the tier); anything else goes to the wrapped allocator. free, realloc and
 * malloc_usable_size ask hmi_owner which allocator owns the pointer (two loads once
 * any tier is open, none before).
 *
 * Bootstrap: the first call in the size window (or the constructor, whichever comes
 * first) loads the placement, opens the tiers and builds the site table: the
 * constructors of the application's own libraries run before a preloaded library's,
 * and their allocations are placed too. Calls made meanwhile — by dlsym, by memkind's
 * dlopen, by libunwind — go to the wrapped allocator, resolved on first use (before
 * it is known: the static arena), never into the slow path (a thread-local flag).
 * Under AddressSanitizer (test builds) only the constructor initializes: ASan's
 * start-up allocates before its interceptors work, and initializing there would
 * call them (readlink, open). Initialization also places the placement's static
 * variables (hmi_static.h), before the application's main. Nothing here can end the
 * process: a placement that is missing, empty, malformed, or made for another program
 * gives one warning and then every call is passed through. */
#include "hmi_accept.h"
#include "hmi_backend.h"
#include "hmi_match.h"
#include "hmi_placement.h"
#include "hmi_report.h"
#include "hmi_static.h"
#include "hm_env.h"
#include "hm_modmap.h"
#include "hm_real.h"
#include "hm_unwind.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The entry points and the pass-through path run before AddressSanitizer has set up
 * its shadow memory when its start-up itself allocates (sanitizer test builds):
 * they are not ASan-instrumented; what they call once initialized is. */
#define NOASAN __attribute__((no_sanitize("address")))
#define EXPORT __attribute__((visibility("default"))) NOASAN

static struct hm_alloc_fns rm;
static int (*real_dlclose)(void *);

enum { ST_NONE, ST_INIT, ST_READY, ST_OFF };
static _Atomic int g_state;
/* The size window as lo and span = hi - lo: n is in it when n - lo <= span
 * (unsigned). Until initialized everything is "in" (the slow path initializes);
 * afterwards an empty window is lo = SIZE_MAX, span = 0. */
static size_t g_lo = 0, g_span = SIZE_MAX;
static int g_owning;                /* a tier is open: pointers may be ours */
static int g_lazy;                  /* the first call may initialize (no ASan) */
/* HMTUNE_BASELINE (hmtune compare's reference runs): no site matching; every request
 * of at least g_base_min bytes goes to the first tier while it has room. Counted as
 * the virtual site index g_pl.nsites. */
static int g_baseline;
static uint64_t g_base_min;
static int g_depth;
static uint32_t g_ntiers;
static int g_quiet, g_rank = -1, g_report;
static pid_t g_pid;
static struct hmi_placement g_pl;
static char g_path[PATH_MAX];
static char g_stats[PATH_MAX];
static __thread int t_busy __attribute__((tls_model("initial-exec")));

static void warn(const char *msg, const char *detail)
{
    hm_log("hmalloc: ", msg, detail);
}

/* The standard error the program started with, kept as a copy: at exit fd 2 may be
 * closed and reused for the application's own file, which the summary must not
 * touch. The copy is used only while it is still the same file (a program may close
 * every descriptor and reuse the number); else fd 2 if it still is; else nothing. */
static int g_errfd = -1;
static dev_t g_err_dev;
static ino_t g_err_ino;

static void keep_stderr(void)
{
    struct stat st;
    if (fstat(2, &st) != 0)
        return;
    g_err_dev = st.st_dev;
    g_err_ino = st.st_ino;
    g_errfd = fcntl(2, F_DUPFD_CLOEXEC, 64);
}

static int same_stderr(int fd)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == g_err_dev && st.st_ino == g_err_ino;
}

/* ---- the wrapped allocator, arena while resolving ---- */

enum kind { K_MALLOC, K_CALLOC, K_MEMALIGN, K_POSIX_MEMALIGN, K_ALIGNED_ALLOC, K_VALLOC,
            K_PVALLOC };

/* Resolve the wrapped allocator once; 0 when rm is usable. Nested and concurrent
 * callers meanwhile get -1 (and use the arena). */
NOASAN static int resolve_real(void)
{
    static _Atomic int state;           /* 0 not tried, 1 resolving, 2 done */
    if (hm_likely(atomic_load_explicit(&state, memory_order_acquire) == 2))
        return rm.malloc ? 0 : -1;
    int z = 0;
    if (!atomic_compare_exchange_strong(&state, &z, 1))
        return -1;
    hm_real_resolve(&rm);
    void *d = dlsym(RTLD_NEXT, "dlclose");
    memcpy(&real_dlclose, &d, sizeof d);
    g_lazy = dlsym(RTLD_DEFAULT, "__asan_init") == NULL;
    atomic_store(&state, 2);
    return rm.malloc ? 0 : -1;
}

NOASAN static void *plain(enum kind k, size_t a, size_t b, int *rc, void **memptr)
{
    if (hm_unlikely(__atomic_load_n(&rm.malloc, __ATOMIC_ACQUIRE) == NULL) && resolve_real() != 0) {
        void *p = NULL;
        switch (k) {
        case K_MALLOC: p = hm_boot_alloc(a, 16); break;
        case K_CALLOC: p = b && a > SIZE_MAX / b ? NULL : hm_boot_alloc(a * b, 16); break;
        case K_VALLOC: case K_PVALLOC: p = hm_boot_alloc(a, 4096); break;
        default: p = hm_boot_alloc(b, a); break;
        }
        if (k == K_POSIX_MEMALIGN) {
            *rc = p ? 0 : ENOMEM;
            if (p)
                *memptr = p;
        }
        return p;
    }
    switch (k) {
    case K_MALLOC: return rm.malloc(a);
    case K_CALLOC: return rm.calloc(a, b);
    case K_MEMALIGN: return rm.memalign(a, b);
    case K_POSIX_MEMALIGN:
        *rc = rm.posix_memalign(memptr, a, b);
        return *rc == 0 ? *memptr : NULL;
    case K_ALIGNED_ALLOC: return rm.aligned_alloc(a, b);
    case K_VALLOC: return rm.valloc(a);
    case K_PVALLOC: return rm.pvalloc(a);
    }
    return NULL;
}

/* ---- initialization ---- */

static void atfork_prepare(void)
{
    hm_modmap_atfork_prepare();
    hmi_backend_atfork_prepare();
}
static void atfork_parent(void)
{
    hmi_backend_atfork_release();
    hm_modmap_atfork_release();
}
static void atfork_child(void)
{
    hmi_backend_atfork_release();
    hm_modmap_atfork_release();
    g_report = 0;           /* the parent reports; a child's counters start mixed */
}

static int open_tiers(void)
{
    int usable = 0;
    uint32_t n = g_pl.ntiers < HMI_MAX_TIERS ? g_pl.ntiers : HMI_MAX_TIERS;
    for (uint32_t i = 0; i < n; i++) {
        const struct hmi_tier *t = &g_pl.tiers[i];
        char why[HMI_REASON_MAX];
        if (hmi_backend_open(i, t->name, t->backend, t->capacity, t->unlimited, why,
                             sizeof why) != 0) {
            warn(why, "; its sites go to the default allocator");
            continue;
        }
        if (hmi_backend_kind(i) != HMI_BK_DEFAULT)
            usable++;
    }
    g_ntiers = n;
    return usable;
}

_Static_assert(HMI_MAX_TIER_LINES <= HMI_MAX_TIERS, "a placement's tiers must fit the backends");

/* 1 when this process places (hmi_places_here); -1 after at most one warning (only
 * from the target, hmi_is_target) when it passes everything through. */
static int load_placement(char *exe)
{
    const char *path = getenv("HMTUNE_PLACEMENT");
    ssize_t el = readlink("/proc/self/exe", exe, PATH_MAX - 1);
    exe[el > 0 ? el : 0] = '\0';
    int target = hmi_is_target(exe);
    if (!path || !*path) {
        if (target)
            warn("HMTUNE_PLACEMENT is not set: every allocation goes to the default "
                 "allocator (run the program with 'hmtune run --placement FILE')", NULL);
        return -1;
    }
    size_t pl = strlen(path);
    if (pl >= sizeof g_path) {
        if (target)
            warn("HMTUNE_PLACEMENT is too long; passing every allocation through", NULL);
        return -1;
    }
    memcpy(g_path, path, pl + 1);
    char err[256];
    if (hmi_placement_load(g_path, &g_pl, err, sizeof err) != 0) {
        if (target) {
            char msg[PATH_MAX + 320];
            size_t k = hm_fmt_str(msg, "cannot use placement ");
            k += hm_fmt_str(msg + k, g_path);
            k += hm_fmt_str(msg + k, ": ");
            k += hm_fmt_str(msg + k, err);
            msg[k] = '\0';
            warn(msg, "; every allocation goes to the default allocator");
        }
        return -1;
    }
    if (!hmi_places_here(&g_pl, exe)) {     /* a helper (env, timeout, a shell) */
        if (target) {
            char msg[3 * PATH_MAX + 100];
            size_t k = hm_fmt_str(msg, "placement ");
            k += hm_fmt_str(msg + k, g_path);
            k += hm_fmt_str(msg + k, " was made for ");
            k += hm_fmt_str(msg + k, g_pl.program);
            k += hm_fmt_str(msg + k, ", not ");
            k += hm_fmt_str(msg + k, exe);
            msg[k] = '\0';
            warn(msg, "; every allocation goes to the default allocator");
        }
        hmi_placement_free(&g_pl);
        return -1;
    }
    return 1;
}

static void do_init(void)
{
    t_busy++;
    char exe[PATH_MAX];
    int ok = resolve_real() == 0 && rm.free && rm.calloc && rm.realloc && rm.usable &&
             rm.posix_memalign && rm.memalign && rm.aligned_alloc && rm.valloc && rm.pvalloc;
    int target = 0;
    if (!ok)
        warn("cannot find the malloc functions to wrap; passing every call through", NULL);
    else if ((target = load_placement(exe)) < 0)
        ok = 0;
    if (ok) {
        hm_modmap_init(NULL);
        hm_unwind_init((void *)&do_init);
        const char *missing;
        int fits = hmi_fits_program(&g_pl, exe, &missing);
        if (fits != 1) {
            if (target || fits < 0) {
                char msg[2 * PATH_MAX + 200];
                size_t k = hm_fmt_str(msg, "placement ");
                k += hm_fmt_str(msg + k, g_path);
                k += hm_fmt_str(msg + k, fits < 0 ? " names offsets past the end of "
                                                  : " was made for another program: it names ");
                k += hm_fmt_str(msg + k, missing);
                k += hm_fmt_str(msg + k, fits < 0 ? " as loaded here (another build?)"
                                                  : ", which cannot be loaded here, and never ");
                if (fits >= 0)
                    k += hm_fmt_str(msg + k, exe);
                msg[k] = '\0';
                warn(msg, "; every allocation goes to the default allocator");
            }
            ok = 0;
        }
    }
    if (ok) {
        g_rank = hm_env_rank(NULL);
        const char *q = getenv("HMTUNE_SUMMARY");
        g_quiet = q && !strcmp(q, "0");
        const char *bl = getenv("HMTUNE_BASELINE");
        if (bl && *bl) {
            g_baseline = 1;
            if (!strcmp(bl, "first-come"))
                g_base_min = 4096;
            else if (!strcmp(bl, "size-window"))
                g_base_min = 1u << 20;
            else if (strncmp(bl, "size-window:", 12) || hm_parse_size(bl + 12, &g_base_min) ||
                     !g_base_min)
                g_baseline = -1;
            if (g_baseline > 0)
                hmi_report_baseline(bl);
            if (g_baseline < 0) {
                warn("HMTUNE_BASELINE must be first-come, size-window or size-window:SIZE; "
                     "every allocation goes to the default allocator: ", bl);
                ok = 0;
            }
        }
        const char *sp = getenv("HMTUNE_STATS");
        if (sp && strlen(sp) < sizeof g_stats)
            memcpy(g_stats, sp, strlen(sp) + 1);
        int usable = ok ? open_tiers() : 0;
        ok = ok && hmi_report_init(g_pl.nsites + 1) == 0 && hmi_report_split_init(&g_pl) == 0 &&
             hmi_match_init(&g_pl) == 0;
        /* static variables: bound or remapped now, before main (a baseline run
         * places by request size only) */
        if (ok && usable && !g_baseline && hmi_static_place(&g_pl, exe, 1) != 0)
            warn("cannot map the table of static variables; they stay where they are", NULL);
        if (ok) {
            g_owning = usable > 0;
            g_depth = hmi_match_depth();
            pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
            g_pid = getpid();
            g_report = 1;
            keep_stderr();
            if (usable && g_baseline) {
                g_lo = (size_t)g_base_min;
                g_span = SIZE_MAX - g_lo;
            } else if (usable && hmi_match_size_lo <= hmi_match_size_hi) {
                g_lo = hmi_match_size_lo;
                g_span = hmi_match_size_hi - hmi_match_size_lo;
            } else {
                g_lo = SIZE_MAX;
                g_span = 0;
            }
            atomic_store(&g_state, ST_READY);
        } else if (g_baseline >= 0) {
            warn("cannot set up the site table (mmap failed); passing every call through", NULL);
        }
    }
    if (!ok) {
        g_lo = SIZE_MAX;
        g_span = 0;
        atomic_store(&g_state, ST_OFF);
    }
    t_busy--;
}

static void init_once(void)
{
    int z = ST_NONE;
    if (atomic_compare_exchange_strong(&g_state, &z, ST_INIT))
        do_init();
}

/* 1 when placing; 0 while initializing (nested, or another thread), when off, and
 * under ASan before the constructor. */
NOASAN static inline int ensure_ready(void)
{
    int st = atomic_load_explicit(&g_state, memory_order_acquire);
    if (hm_likely(st == ST_READY))
        return 1;
    if (st == ST_NONE && resolve_real() == 0 && g_lazy)
        init_once();
    return atomic_load(&g_state) == ST_READY;
}

__attribute__((constructor)) static void hmi_ctor(void)
{
    init_once();
}

__attribute__((destructor)) static void hmi_dtor(void)
{
    if (atomic_load(&g_state) != ST_READY || !g_report || getpid() != g_pid)
        return;
    t_busy++;
    int fd = same_stderr(g_errfd) ? g_errfd : same_stderr(2) ? 2 : -1;
    hmi_report_exit(fd, &g_pl, g_path, g_rank, g_quiet, g_stats[0] ? g_stats : NULL);
    t_busy--;
}

/* ---- the placing path ---- */

NOASAN HM_INLINE int in_window(size_t n) { return n - g_lo <= g_span; }

/* Site index of the caller's chain, or -1: the stack fingerprint of the call when
 * this thread made it before from the same stack depth (hmi_match.h), else unwound
 * and matched. Always inlined into the slow paths, whose CFA identifies the call;
 * the entry point, the slow path and hmi_match_fp_decide are the frames removed. */
#define site_here() (g_baseline ? (int)g_pl.nsites \
                               : site_at((uint64_t)(uintptr_t)__builtin_dwarf_cfa()))
NOASAN HM_INLINE int site_at(uint64_t cfa)
{
    int site = hmi_match_fp(cfa);
    return site != HMI_FP_MISS ? site : hmi_match_fp_decide(cfa);
}

/* A tier block for a matched site, or NULL (counted) for the default allocator. */
static int tier_of(int site)
{
    return g_baseline && site == (int)g_pl.nsites ? 0 : hmi_match_site_tier(site);
}

/* A split site's object (placement v2): its ranges in the tier, the rest ordinary
 * memory, one mapping (hmi_backend_alloc_split). */
static HM_NOINLINE void *place_split(int site, int tier, size_t size, size_t align, int zero)
{
    const struct hmi_site *si = &g_pl.sites[site];
    uint64_t placed[HMI_MAX_RANGES], mask = 0;
    void *p = hmi_backend_alloc_split((uint32_t)tier, size, align, zero, si->ranges,
                                      si->nranges, placed, &mask);
    if (p) {
        hmi_report_split(site, placed, si->nranges);
        hmi_report_placed_split(tier, p, size, site, mask);
    }
    return p;
}

static void *place(int site, size_t size, size_t align, int zero)
{
    struct hmi_site_stats *st = hmi_site_mine(site);
    hm_stripe_add(&st->matches, 1);
    int tier = tier_of(site);
    void *p = NULL;
    if (hm_unlikely(g_pl.nsplit != 0) && site < (int)g_pl.nsites && g_pl.sites[site].nranges) {
        if (hmi_backend_available((uint32_t)tier))
            p = place_split(site, tier, size, align, zero);
        if (p) {
            hm_stripe_add(&st->placed, 1);
            hm_stripe_add(&st->bytes, size);
        } else {
            hm_stripe_add(&st->fell_back, 1);
        }
        return p;
    }
    if (hmi_backend_available((uint32_t)tier))
        p = zero ? hmi_backend_alloc_zeroed((uint32_t)tier, size, align)
                 : hmi_backend_alloc((uint32_t)tier, size, align);
    if (p) {
        hm_stripe_add(&st->placed, 1);
        hm_stripe_add(&st->bytes, size);
        hmi_report_placed(tier, p, size);
    } else {
        hm_stripe_add(&st->fell_back, 1);
    }
    return p;
}

/* The slow path of every allocating call but realloc: size is the request, align
 * the alignment (0: malloc's). */
NOASAN static HM_NOINLINE void *slow_alloc(enum kind k, size_t a, size_t b, size_t size, size_t align,
                                    int *rc, void **memptr)
{
    if (t_busy || !ensure_ready() || !in_window(size))
        return plain(k, a, b, rc, memptr);
    int err = errno;
    t_busy++;
    int site = site_here();
    void *p = NULL;
    if (site >= 0 && k == K_PVALLOC)        /* pvalloc(0) is one page */
        p = place(site, size ? (size + align - 1) & ~(align - 1) : align, align, 0);
    else if (site >= 0)
        p = place(site, size, align, k == K_CALLOC);
    else
        hmi_count_unmatched();
    t_busy--;
    if (!p)
        return plain(k, a, b, rc, memptr);
    if (k == K_POSIX_MEMALIGN) {
        *memptr = p;
        *rc = 0;
    }
    errno = err;
    return p;
}

static size_t usable_of(int owner, void *p)
{
    if (owner >= 0)
        return hmi_backend_usable_size(owner, p);
    if (hm_in_boot(p))
        return hm_boot_size(p);
    return rm.usable(p);
}

static void free_owned(int owner, void *p)
{
    size_t u = hmi_backend_usable_size(owner, p);
    hmi_report_freeing(owner, p, u);
    hmi_backend_free_usable(owner, p, u);
}

/* realloc of a non-NULL p to n > 0 bytes, decided by this call's site. */
static HM_NOINLINE void *slow_realloc(void *p, size_t n)
{
    int owner = g_owning ? hmi_owner(p) : HMI_OWNER_LIBC;
    int boot = owner < 0 && hm_in_boot(p);
    int tier = -1, site = -1;
    if (!t_busy && ensure_ready() && in_window(n)) {
        int err = errno;
        t_busy++;
        site = site_here();
        tier = tier_of(site);
        if (site < 0)
            hmi_count_unmatched();
        t_busy--;
        errno = err;
    }
    if (owner < 0 && tier < 0 && !boot)
        return rm.realloc(p, n);
    if (owner >= 0 && owner == tier && hmi_backend_resize_in_place(owner, p, n)) {
        struct hmi_site_stats *st = hmi_site_mine(site);
        hm_stripe_add(&st->matches, 1);
        hm_stripe_add(&st->placed, 1);
        hm_stripe_add(&st->bytes, n);
        return p;                                   /* grows in place */
    }
    void *q = NULL;
    if (site >= 0) {
        t_busy++;
        q = place(site, n, 0, 0);
        t_busy--;
    }
    if (!q && owner < 0 && !boot)
        return rm.realloc(p, n);                    /* tier full: stays with glibc */
    if (!q)
        q = rm.malloc ? rm.malloc(n) : hm_boot_alloc(n, 16);
    if (!q) {
        errno = ENOMEM;
        return NULL;                                /* p is kept */
    }
    size_t old = usable_of(owner, p);
    memcpy(q, p, old < n ? old : n);
    if (owner >= 0)
        free_owned(owner, p);
    else if (!boot)
        rm.free(p);
    return q;
}

/* ---- the interposed entry points ---- */

EXPORT void *malloc(size_t n)
{
    if (hm_likely(!in_window(n)))
        return rm.malloc(n);
    return slow_alloc(K_MALLOC, n, 0, n, 0, NULL, NULL);
}

EXPORT void free(void *p)
{
    if (hm_unlikely(p == NULL))
        return;
    if (g_owning) {
        int o = hmi_owner(p);
        if (hm_unlikely(o >= 0)) {
            free_owned(o, p);
            return;
        }
    }
    if (hm_unlikely(hm_in_boot(p)))
        return;
    rm.free(p);
}

EXPORT void cfree(void *p);
EXPORT void cfree(void *p) { free(p); }

EXPORT void *calloc(size_t nmemb, size_t size)
{
    size_t total;
    if (hm_unlikely(__builtin_mul_overflow(nmemb, size, &total))) {
        errno = ENOMEM;
        return NULL;
    }
    if (hm_likely(!in_window(total)))
        return rm.calloc(nmemb, size);
    return slow_alloc(K_CALLOC, nmemb, size, total, 0, NULL, NULL);
}

/* realloc and reallocarray share this body, inlined into each, so that the slow
 * paths are at the same frame depth below the application's call (hm_backtrace
 * removes our frames but looks only a few frames past its depth). */
NOASAN HM_INLINE void *realloc_body(void *p, size_t n)
{
    if (p == NULL) {
        if (hm_likely(!in_window(n)))
            return rm.malloc(n);
        return slow_alloc(K_MALLOC, n, 0, n, 0, NULL, NULL);
    }
    if (n == 0) {                       /* glibc: frees p, returns NULL */
        int o = g_owning ? hmi_owner(p) : HMI_OWNER_LIBC;
        if (o >= 0) {
            free_owned(o, p);
            return NULL;
        }
        if (hm_in_boot(p))
            return NULL;
        return rm.realloc(p, 0);
    }
    if (hm_likely(!in_window(n) && !g_owning && !hm_in_boot(p)))
        return rm.realloc(p, n);
    return slow_realloc(p, n);
}

EXPORT void *realloc(void *p, size_t n)
{
    return realloc_body(p, n);
}

EXPORT void *reallocarray(void *p, size_t nmemb, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(nmemb, size, &total)) {
        errno = ENOMEM;
        return NULL;                    /* p is kept */
    }
    return realloc_body(p, total);
}

NOASAN static int pow2(size_t a) { return a && !(a & (a - 1)); }

EXPORT int posix_memalign(void **memptr, size_t align, size_t size)
{
    if (!pow2(align) || align % sizeof(void *))
        return EINVAL;
    int rc = 0;
    if (hm_likely(!in_window(size)))
        return plain(K_POSIX_MEMALIGN, align, size, &rc, memptr), rc;
    slow_alloc(K_POSIX_MEMALIGN, align, size, size, align, &rc, memptr);
    return rc;
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
    if (hm_likely(!in_window(size) || !pow2(align)))
        return plain(K_ALIGNED_ALLOC, align, size, NULL, NULL);
    return slow_alloc(K_ALIGNED_ALLOC, align, size, size, align, NULL, NULL);
}

EXPORT void *memalign(size_t align, size_t size)
{
    if (hm_likely(!in_window(size) || !pow2(align)))
        return plain(K_MEMALIGN, align, size, NULL, NULL);
    return slow_alloc(K_MEMALIGN, align, size, size, align, NULL, NULL);
}

EXPORT void *valloc(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (hm_likely(!in_window(n)))
        return plain(K_VALLOC, n, 0, NULL, NULL);
    return slow_alloc(K_VALLOC, n, 0, n, page, NULL, NULL);
}

/* The window holds request sizes (the advisor's, from the trace): pvalloc is
 * matched on its request and served page-rounded. */
EXPORT void *pvalloc(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t r = n ? n : 1;
    if (hm_likely(!in_window(n)) || r > SIZE_MAX - page)
        return plain(K_PVALLOC, n, 0, NULL, NULL);
    return slow_alloc(K_PVALLOC, n, 0, n, page, NULL, NULL);
}

EXPORT size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    int o = g_owning ? hmi_owner(p) : HMI_OWNER_LIBC;
    if (o < 0 && !rm.usable && !hm_in_boot(p))
        return 0;
    return usable_of(o, p);
}

/* A dlclose may unmap a library whose addresses the next dlopen reuses: the
 * matcher's per-thread caches must forget raw addresses. */
EXPORT int dlclose(void *h)
{
    if (!real_dlclose && resolve_real() != 0 && !real_dlclose)
        return -1;
    int r = real_dlclose(h);
    hm_modmap_invalidate();
    return r;
}
