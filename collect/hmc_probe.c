/* hmtune-probe [auto|pebs|ibs|soft|none] — which sampler this machine offers, by the
 * tracer's own detection code. Prints "sampler=<name>" and "why=<one line>"; exits 0
 * when the chosen sampler is usable, 3 when the one asked for is not. `hmtune trace`
 * runs it before starting the application so the choice is stated up front.
 *
 * hmtune-probe --counters [LIST] — the PAPI counters of LIST (default: the tracer's,
 * HMC_COUNTERS_DEFAULT) a trace would record here, chosen as the tracer chooses them:
 * a "counter=NAME<TAB>code=0xCODE<TAB>type=TYPE<TAB>descr=TEXT" line each, then
 * "software=0|1" and "unavailable=NAME (why), ..."; or "error=<one line>". Exits 0
 * when some counter can be recorded, 3 otherwise (`hmtune machine` lists them). */
#include "hmc_papi.h"
#include "hmc_perf.h"

#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int try_open(const struct hmc_perf_caps *caps, int kind, char *why, size_t n)
{
    struct hmc_perf_ring rings[HMC_PERF_MAX_RINGS];
    int r = hmc_perf_open(caps, kind, 0, 0, (pid_t)syscall(SYS_gettid), rings,
                          HMC_PERF_MAX_RINGS);
    if (r > 0) {
        hmc_perf_close(rings, r);
        return 1;
    }
    snprintf(why, n, "perf_event_open failed: %s (see /proc/sys/kernel/perf_event_paranoid)",
             strerror(-r));
    return 0;
}

/* The software sampler needs a per-thread CPU-time timer; execute breakpoints make
 * it exact for loads that overwrite their own address register. */
static int soft_ok(char *why, size_t n)
{
    timer_t t;
    struct sigevent sev;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_NONE;
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t) != 0) {
        snprintf(why, n, "no per-thread CPU-time timer: %s", strerror(errno));
        return 0;
    }
    timer_delete(t);
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.type = PERF_TYPE_BREAKPOINT;
    a.size = sizeof(a);
    a.bp_type = HW_BREAKPOINT_X;
    a.bp_addr = (uint64_t)(uintptr_t)&soft_ok;
    a.bp_len = sizeof(long);
    a.sample_period = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.disabled = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (fd >= 0) {
        close(fd);
        snprintf(why, n, "CPU-time timers with execute-breakpoint address recovery");
    } else {
        snprintf(why, n, "CPU-time timers; no execute breakpoints (%s): loads that overwrite "
                 "their address register stay unattributed", strerror(errno));
    }
    return 1;
}

static int counters(const char *list)
{
    struct hmc_papi p;
    struct hmc_counter_set set;
    char why[256];
    if (hmc_papi_open(&p, why, sizeof(why)) != 0 ||
        hmc_papi_choose(&p, list, &set, why, sizeof(why)) != 0) {
        printf("error=%s\n", why);
        return 3;
    }
    for (int i = 0; i < set.n; i++)
        printf("counter=%s\tcode=0x%x\ttype=%llu\tdescr=%s\n", set.c[i].name,
               (unsigned)set.c[i].code,
               (unsigned long long)hmr_counter_type((uint32_t)set.c[i].code), set.c[i].descr);
    printf("software=%d\nunavailable=%s\n", set.software, set.unavailable);
    return set.n ? 0 : 3;
}

int main(int argc, char **argv)
{
    const char *want = argc > 1 ? argv[1] : "auto";
    if (strcmp(want, "-h") == 0 || strcmp(want, "--help") == 0) {
        printf("usage: hmtune-probe [auto|pebs|ibs|soft|none]\n"
               "       hmtune-probe --counters [LIST]\n");
        return 0;
    }
    if (strcmp(want, "--counters") == 0)
        return counters(argc > 2 ? argv[2] : "default");
    struct hmc_perf_caps caps;
    char dwhy[512] = "", pebs[300] = "", ibs[300] = "", soft[300] = "";
    unsigned have = hmc_perf_detect(NULL, &caps, dwhy, sizeof(dwhy));
    int pebs_ok = (have & HMC_PERF_PEBS) && try_open(&caps, HMS_SRC_PEBS, pebs, sizeof(pebs));
    int ibs_ok = (have & HMC_PERF_IBS) && try_open(&caps, HMS_SRC_IBS, ibs, sizeof(ibs));
    if (!(have & HMC_PERF_PEBS))
        snprintf(pebs, sizeof(pebs), "%s", caps.why_pebs);
    if (!(have & HMC_PERF_IBS))
        snprintf(ibs, sizeof(ibs), "%s", caps.why_ibs);
    int sw_ok = soft_ok(soft, sizeof(soft));
    if (strcmp(want, "none") == 0) {
        printf("sampler=none\nwhy=sampling turned off (--sampler none)\n");
        return 0;
    }
    if (strcmp(want, "pebs") == 0 || (strcmp(want, "auto") == 0 && pebs_ok)) {
        printf("sampler=%s\nwhy=%s\n", pebs_ok ? "pebs" : "none",
               pebs_ok ? "Intel PEBS load-latency and store sampling" : pebs);
        return pebs_ok ? 0 : 3;
    }
    if (strcmp(want, "ibs") == 0 || (strcmp(want, "auto") == 0 && ibs_ok)) {
        printf("sampler=%s\nwhy=%s\n", ibs_ok ? "ibs" : "none",
               ibs_ok ? "AMD IBS op sampling" : ibs);
        return ibs_ok ? 0 : 3;
    }
    if (strcmp(want, "soft") == 0 || strcmp(want, "auto") == 0) {
        if (strcmp(want, "auto") == 0)
            printf("sampler=%s\nwhy=%s (%s; %s)\n", sw_ok ? "soft" : "none",
                   soft, pebs, ibs);
        else
            printf("sampler=%s\nwhy=%s\n", sw_ok ? "soft" : "none", soft);
        return sw_ok || strcmp(want, "auto") == 0 ? 0 : 3;
    }
    fprintf(stderr, "hmtune-probe: unknown sampler '%s' (auto, pebs, ibs, soft, none)\n", want);
    return 2;
}
