/* hmc_sampler_cfg.c — the sampler's HMTUNE_* settings (hmc_sampler_cfg.h); the
 * sampler itself is hmc_sampler.c. */
#include "hmc_sampler_cfg.h"
#include "hmc_perf.h"
#include "hm_options.h"

#include <signal.h>
#include <string.h>

int hmc_sampler_config(struct hmc_sampler_cfg *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->rate_hz = 250;
    cfg->signo = SIGRTMIN + 5;
    uint64_t fp;
    if (hm_opt_num(HM_OPT_FAULT_PERIOD, &fp) != 0) {
        hm_opt_warn(HM_OPT_FAULT_PERIOD, "hmtune: ");
        fp = 0;
    }
    cfg->fault_period = fp;
    /* in the order of HM_OPT_SAMPLER's choices */
    static const int kinds[] = { HMS_SRC_NONE, HMS_SRC_SOFT, HMS_SRC_PEBS, HMS_SRC_IBS };
    int k = hm_opt_choice(HM_OPT_SAMPLER);
    if (k < 0 || k >= (int)(sizeof kinds / sizeof kinds[0])) {
        hm_opt_warn(HM_OPT_SAMPLER, "hmtune: ");
        return -1;
    }
    cfg->kind = kinds[k];
    /* Every other setting: a malformed value turns sampling off, with the table's
     * message. */
    uint64_t v;
    if (hm_opt_num(HM_OPT_SAMPLE_RATE, &v) != 0)
        return hm_opt_warn(HM_OPT_SAMPLE_RATE, "hmtune: "), -1;
    cfg->rate_hz = (unsigned)v;
    cfg->period = cfg->kind == HMS_SRC_IBS ? HMC_IBS_DEFAULT_PERIOD : HMC_PEBS_DEFAULT_PERIOD;
    if (hm_opt_num_or(HM_OPT_SAMPLE_PERIOD, cfg->period, &cfg->period) != 0)
        return hm_opt_warn(HM_OPT_SAMPLE_PERIOD, "hmtune: "), -1;
    if (hm_opt_num(HM_OPT_LDLAT, &v) != 0)
        return hm_opt_warn(HM_OPT_LDLAT, "hmtune: "), -1;
    cfg->ldlat = (uint32_t)v;
    if (hm_opt_num_or(HM_OPT_SAMPLE_SIGNAL, (uint64_t)cfg->signo, &v) != 0 ||
        v >= (uint64_t)NSIG || v == SIGKILL || v == SIGSTOP)
        return hm_opt_warn(HM_OPT_SAMPLE_SIGNAL, "hmtune: "), -1;
    cfg->signo = (int)v;
    if (hm_opt_num(HM_OPT_SAMPLE_AHEAD, &v) != 0)
        return hm_opt_warn(HM_OPT_SAMPLE_AHEAD, "hmtune: "), -1;
    cfg->ahead = (int)v;
    if (hm_opt_num(HM_OPT_SAMPLE_VERIFY, &v) != 0)
        return hm_opt_warn(HM_OPT_SAMPLE_VERIFY, "hmtune: "), -1;
    cfg->verify = (int)v;
    if (hm_opt_num(HM_OPT_SAMPLE_PRODUCER, &v) != 0)
        return hm_opt_warn(HM_OPT_SAMPLE_PRODUCER, "hmtune: "), -1;
    cfg->producer = (int)v;
    return 0;
}
