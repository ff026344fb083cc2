/* hmc_boot.c — libhmtrace.so's bootstrap: the wrapped functions resolved, the
 * HMTUNE_* options read (hm_options.h), the trace stream opened (hmc_core.c), the
 * crash signals claimed and the sampler started, from the constructor or the first
 * call, whichever comes first; and the end of the trace at exit. The entry points are
 * in hmc_shim.c. */
#include "hmc_boot.h"
#include "hmc_core.h"
#include "hmc_sampler.h"
#include "hmc_signal.h"
#include "hmc_small.h"
#include "hm_fds.h"
#include "hm_fdwrap.h"
#include "hm_proc.h"
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

struct hm_alloc_fns hmc_rm;
struct hmc_real_fns hmc_real;
_Atomic int hmc_state;
uint64_t hmc_min;
uint64_t hmc_free_min;
int hmc_depth = 8;
int hmc_sampling;

/* ---- initialization ----------------------------------------------------- */

static void atfork_prepare(void) { hmc_atfork_prepare(); }
static void atfork_parent(void) { hmc_atfork_parent(); }
static void atfork_child(void)
{
    hmc_atfork_child();
    if (hm_proc_mine())               /* the parent's threads' events: the child opens its own */
        hm_fd_close_kind(HM_FD_PERF);
    hmc_sig_atfork_child();
    hmc_sampler_atfork_child();
}

#define RESOLVE(field, name) \
    do { void *s_ = dlsym(RTLD_NEXT, name); memcpy(&hmc_real.field, &s_, sizeof(s_)); } while (0)

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
    int ok = hm_real_resolve(&hmc_rm) == 0;
    hmc_sig_resolve();
    RESOLVE(dlclose, "dlclose");
    RESOLVE(exit_, "_exit");
    RESOLVE(Exit_, "_Exit");
    RESOLVE(execve, "execve");
    RESOLVE(pthread_create, "pthread_create");
    hm_fdw_resolve_real();        /* the descriptor wrappers' (hmc_fdshim.c) */
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
        hmc_depth = (int)depth;
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
        hmc_sampling = hmc_sampler_init(&scfg) == 0 && scfg.kind != HMS_SRC_NONE;
        hmc_min = min_size;
        hmc_free_min = min_size;
        atomic_store(&hmc_state, HMC_ST_READY);
        if (hmc_sampling)
            hmc_sampler_thread_start();       /* the thread that initialized: main */
    } else {
        hmc_min = UINT64_MAX;
        hmc_free_min = UINT64_MAX;
        atomic_store(&hmc_state, HMC_ST_OFF);
    }
    hmc_busy--;
}

static void init_now(void)
{
    int z = HMC_ST_NONE;
    if (atomic_compare_exchange_strong(&hmc_state, &z, HMC_ST_INIT))
        do_init();
}

/* An allocation before the C library's own start-up has run (an AddressSanitizer
 * program: its runtime's dlsym allocates from the executable's preinit array) finds
 * no environment yet, so no HMTUNE_OUT: it is served untraced (hm_real.h's arena),
 * and the tracer starts from its constructor, which never waits. */
void hmc_init_once(void)
{
    if (hm_likely(environ != NULL))
        init_now();
}

__attribute__((constructor)) static void hmc_ctor(void) { init_now(); }
__attribute__((destructor)) static void hmc_dtor(void)
{
    if (atomic_load(&hmc_state) == HMC_ST_READY)
        hmc_finish(HME_EXIT, 0);
}
