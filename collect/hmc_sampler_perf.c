/* hmc_sampler_perf.c — see hmc_sampler_perf.h. */
#include "hmc_sampler_perf.h"
#include "hmc_sampler_cfg.h"

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct hmc_perf_caps g_caps;

int hmc_perf_process_init(const struct hmc_sampler_cfg *cfg)
{
    char why[512];
    unsigned have = hmc_perf_detect(NULL, &g_caps, why, sizeof(why));
    unsigned want = cfg->kind == HMS_SRC_PEBS ? HMC_PERF_PEBS : HMC_PERF_IBS;
    if (have & want)
        return 0;
    hm_log("hmtune: the requested sampler is not available here; not sampling: ",
           cfg->kind == HMS_SRC_PEBS ? g_caps.why_pebs : g_caps.why_ibs, NULL);
    return -1;
}

int hmc_perf_thread_open(struct hmc_perf_thread *pt, const struct hmc_sampler_cfg *cfg)
{
    memset(pt, 0, sizeof(*pt));
    int n = hmc_perf_open(&g_caps, cfg->kind, cfg->period, cfg->ldlat,
                          (pid_t)syscall(SYS_gettid), pt->rings, HMC_PERF_MAX_RINGS);
    pt->n = n > 0 ? n : 0;
    return n;
}

static void emit(const struct hmr_sample *s, void *arg)
{
    hmc_record_sample(arg, s, sizeof(*s));
}

void hmc_perf_thread_drain(struct hmc_perf_thread *pt, struct hmc_thread *t)
{
    for (int i = 0; i < pt->n; i++)
        hmc_perf_drain(&pt->rings[i], emit, t);
}

void hmc_perf_thread_close(struct hmc_perf_thread *pt)
{
    hmc_perf_close(pt->rings, pt->n);
    pt->n = 0;
}
