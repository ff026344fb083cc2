/* hmi_boot.c — libhmalloc.so's bootstrap (DESIGN.md §6; docs/formats.md §6): the
 * wrapped allocator resolved, the options read, the placement loaded and checked, the
 * tiers opened, the site table built, the exit report written. The entry points are
 * in hmi_shim.c.
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
#include "hmi_boot.h"
#include "hmi_fork.h"
#include "hmi_backend.h"
#include "hmi_match.h"
#include "hmi_placement.h"
#include "hmi_report.h"
#include "hmi_static.h"
#include "hm_env.h"
#include "hm_fdwrap.h"
#include "hm_options.h"
#include "hm_proc.h"
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

static uint64_t g_base_min;         /* HMTUNE_BASELINE's smallest request placed */
static int g_base_all;              /* HMTUNE_BASELINE=all: the placement's statics too */
static int g_depth;
static uint32_t g_ntiers;
static int g_quiet, g_rank = -1, g_report;
static pid_t g_pid;
static char g_path[PATH_MAX];
static char g_stats[PATH_MAX];

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

/* The descriptor wrappers' (hmi_fdshim.c) real calls, and this process owns the
 * library's descriptors (before hm_unwind_init makes libunwind's pipe; again in a
 * fork child). */
static void fd_setup(void)
{
    hm_fdw_resolve_real();
    hm_proc_claim();
}

NOASAN int hmi_resolve_real(void)
{
    static _Atomic int state;           /* 0 not tried, 1 resolving, 2 done */
    if (hm_likely(atomic_load_explicit(&state, memory_order_acquire) == 2))
        return hmi_rm.malloc ? 0 : -1;
    int z = 0;
    if (!atomic_compare_exchange_strong(&state, &z, 1))
        return -1;
    hm_real_resolve(&hmi_rm);
    void *d = dlsym(RTLD_NEXT, "dlclose");
    memcpy(&hmi_real_dlclose, &d, sizeof d);
    hmi_lazy = dlsym(RTLD_DEFAULT, "__asan_init") == NULL;
    atomic_store(&state, 2);
    return hmi_rm.malloc ? 0 : -1;
}

/* ---- initialization ---- */

/* From prepare to parent/child the forking thread is busy: the prepare handlers that
 * run after ours (those registered before, such as libumf's, which may build hwloc's
 * topology) allocate from glibc, never from a tier whose locks ours hold. */
static void atfork_prepare(void)
{
    hmi_t_busy++;
    hm_modmap_atfork_prepare();
    hmi_backend_atfork_prepare();
    hmi_fork_prepare(hmi_backend_hugetlb_open());
}
static void atfork_parent(void)
{
    hmi_fork_parent();                      /* waits for the child's copies */
    hmi_backend_atfork_release();
    hm_modmap_atfork_release();
    hmi_t_busy--;
}
static void atfork_child(void)
{
    hmi_fork_child();                       /* before anything may write a hugepage */
    hmi_backend_atfork_release();
    hm_modmap_atfork_release();
    fd_setup();
    hmi_t_busy--;
    g_report = 0;           /* the parent reports; a child's counters start mixed */
}

static int open_tiers(void)
{
    int usable = 0;
    uint32_t n = hmi_pl.ntiers < HMI_MAX_TIERS ? hmi_pl.ntiers : HMI_MAX_TIERS;
    for (uint32_t i = 0; i < n; i++) {
        const struct hmi_tier *t = &hmi_pl.tiers[i];
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
    const char *path = hm_opt_raw(HM_OPT_PLACEMENT);
    ssize_t el = readlink("/proc/self/exe", exe, PATH_MAX - 1);
    exe[el > 0 ? el : 0] = '\0';
    int target = hmi_is_target(exe);
    if (!path) {
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
    if (hmi_placement_load(g_path, &hmi_pl, err, sizeof err) != 0) {
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
    if (!hmi_places_here(&hmi_pl, exe)) {     /* a helper (env, timeout, a shell) */
        if (target) {
            char msg[3 * PATH_MAX + 100];
            size_t k = hm_fmt_str(msg, "placement ");
            k += hm_fmt_str(msg + k, g_path);
            k += hm_fmt_str(msg + k, " was made for ");
            k += hm_fmt_str(msg + k, hmi_pl.program);
            k += hm_fmt_str(msg + k, ", not ");
            k += hm_fmt_str(msg + k, exe);
            msg[k] = '\0';
            warn(msg, "; every allocation goes to the default allocator");
        }
        hmi_placement_free(&hmi_pl);
        return -1;
    }
    return 1;
}

static void do_init(void)
{
    hmi_t_busy++;
    char exe[PATH_MAX];
    int ok = hmi_resolve_real() == 0 && hmi_rm.free && hmi_rm.calloc && hmi_rm.realloc &&
             hmi_rm.usable && hmi_rm.posix_memalign && hmi_rm.memalign && hmi_rm.aligned_alloc &&
             hmi_rm.valloc && hmi_rm.pvalloc;
    int target = 0;
    if (!ok)
        warn("cannot find the malloc functions to wrap; passing every call through", NULL);
    else if ((target = load_placement(exe)) < 0)
        ok = 0;
    if (ok) {
        hm_modmap_init(NULL);
        fd_setup();
        hm_unwind_init((void *)&do_init);
        const char *missing;
        int fits = hmi_fits_program(&hmi_pl, exe, &missing);
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
        g_quiet = !hm_opt_bool(HM_OPT_SUMMARY);
        const char *bl = hm_opt_raw(HM_OPT_BASELINE);
        if (bl) {
            hmi_baseline = 1;
            if (!strcmp(bl, "all")) {
                g_base_min = 1;
                g_base_all = 1;
            } else if (!strcmp(bl, "first-come"))
                g_base_min = 4096;
            else if (!strcmp(bl, "size-window"))
                g_base_min = 1u << 20;
            else if (strncmp(bl, "size-window:", 12) || hm_parse_size(bl + 12, &g_base_min) ||
                     !g_base_min)
                hmi_baseline = -1;
            if (hmi_baseline > 0)
                hmi_report_baseline(bl);
            if (hmi_baseline < 0) {
                warn("HMTUNE_BASELINE must be all, first-come, size-window or size-window:SIZE; "
                     "every allocation goes to the default allocator: ", bl);
                ok = 0;
            }
        }
        uint64_t keep;
        if (hm_opt_num(HM_OPT_KEEP_FREED, &keep) != 0)
            hm_opt_warn(HM_OPT_KEEP_FREED, "hmalloc: ");
        const char *sp = hm_opt_raw(HM_OPT_STATS);
        if (sp && strlen(sp) < sizeof g_stats)
            memcpy(g_stats, sp, strlen(sp) + 1);
        int usable = ok ? open_tiers() : 0;
        ok = ok && hmi_report_init(hmi_pl.nsites + 1) == 0 && hmi_report_split_init(&hmi_pl) == 0 &&
             hmi_match_init(&hmi_pl) == 0;
        /* static variables: bound or remapped now, before main (a baseline run
         * places by request size only, but for all's the placement's statics) */
        if (ok && usable && (!hmi_baseline || g_base_all) && hmi_static_place(&hmi_pl, exe, 1) != 0)
            warn("cannot map the table of static variables; they stay where they are", NULL);
        if (ok) {
            hmi_owning = usable > 0;
            g_depth = hmi_match_depth();
            pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
            g_pid = getpid();
            g_report = 1;
            keep_stderr();
            if (usable && hmi_baseline) {
                hmi_win_lo = (size_t)g_base_min;
                hmi_win_span = SIZE_MAX - hmi_win_lo;
            } else if (usable && hmi_match_size_lo <= hmi_match_size_hi) {
                hmi_win_lo = hmi_match_size_lo;
                hmi_win_span = hmi_match_size_hi - hmi_match_size_lo;
            } else {
                hmi_win_lo = SIZE_MAX;
                hmi_win_span = 0;
            }
            atomic_store(&hmi_state, HMI_ST_READY);
        } else if (hmi_baseline >= 0) {
            warn("cannot set up the site table (mmap failed); passing every call through", NULL);
        }
    }
    if (!ok) {
        hmi_win_lo = SIZE_MAX;
        hmi_win_span = 0;
        atomic_store(&hmi_state, HMI_ST_OFF);
    }
    hmi_t_busy--;
}

void hmi_init_once(void)
{
    int z = HMI_ST_NONE;
    if (atomic_compare_exchange_strong(&hmi_state, &z, HMI_ST_INIT))
        do_init();
}

__attribute__((constructor)) static void hmi_ctor(void)
{
    hmi_init_once();
}

__attribute__((destructor)) static void hmi_dtor(void)
{
    if (atomic_load(&hmi_state) != HMI_ST_READY || !g_report || getpid() != g_pid)
        return;
    hmi_t_busy++;
    int fd = same_stderr(g_errfd) ? g_errfd : same_stderr(2) ? 2 : -1;
    hmi_report_exit(fd, &hmi_pl, g_path, g_rank, g_quiet, g_stats[0] ? g_stats : NULL);
    hmi_t_busy--;
}
