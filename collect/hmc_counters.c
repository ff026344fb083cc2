/* hmc_counters.c — see hmc_counters.h. The readings go to the thread's sample stream
 * (HMR_COUNTERS, cumulative); hmtune-finalize writes the deltas as Extrae's counter
 * events (hmc_stream.h). */
#include "hmc_counters.h"
#include "hmc_core.h"
#include "hmc_papi.h"
#include "hm_options.h"

#include <stdio.h>
#include <string.h>

static struct hmc_papi g_papi;
static struct hmc_counter_set g_set;
static int g_on;                  /* this process's threads record counters */

int hmc_counters_init(void)
{
    const char *list = hm_opt_str(HM_OPT_COUNTERS);
    if (!list || !strcmp(list, "none"))
        return 0;
    char why[sizeof(g_set.unavailable) + 64] = "";
    hmc_busy++;
    int ok = hmc_papi_open(&g_papi, why, sizeof(why)) == 0 &&
             hmc_papi_choose(&g_papi, list, &g_set, why, sizeof(why)) == 0;
    hmc_busy--;
    if (!ok || g_set.n == 0) {
        if (ok)
            snprintf(why, sizeof(why), "none of them, and no software event: %.*s",
                     (int)sizeof(g_set.unavailable) - 1, g_set.unavailable);
        hmc_write_text_record(HMR_CNTSET, 0, 0, why, NULL);
        hm_log("hmtune: no hardware counters are recorded: ", why, "; tracing goes on");
        return -1;
    }
    hmc_write_text_record(HMR_CNTSET, g_set.software, 0, g_set.unavailable, NULL);
    for (int i = 0; i < g_set.n; i++)
        hmc_write_text_record(HMR_CNTDEF, i, (uint32_t)g_set.c[i].code, g_set.c[i].name,
                    g_set.c[i].descr);
    if (g_set.unavailable[0]) {
        char names[HMC_MAX_COUNTERS * HMC_COUNTER_NAME + 64];
        size_t k = 0;
        for (int i = 0; i < g_set.n; i++)
            k += (size_t)snprintf(names + k, sizeof(names) - k, "%s%s", i ? ", " : "",
                                  g_set.c[i].name);
        hm_log("hmtune: counters not available here: ", g_set.unavailable,
               g_set.software ? "; recording PAPI's software events instead" : "");
        hm_log("hmtune: counters recorded: ", names, "");
    }
    g_on = 1;
    return 0;
}

static void reading(struct hmc_thread *t, int es, int when)
{
    struct hmr_counters r;
    long long v[HMC_MAX_COUNTERS];
    if (g_papi.read(es, v) != 0)
        return;
    memset(&r, 0, sizeof(r));
    r.h.type = HMR_COUNTERS;
    r.h.kind = (uint8_t)g_set.n;
    r.h.aux = (uint32_t)when;
    r.h.len8 = HMR_LEN8(HMR_COUNTERS_BYTES(g_set.n));
    r.t = hm_ticks();
    for (int i = 0; i < g_set.n; i++)
        r.v[i] = v[i] < 0 ? 0 : (uint64_t)v[i];
    hmc_record_sample(t, &r, HMR_COUNTERS_BYTES(g_set.n));
}

void hmc_counters_thread_start(struct hmc_thread *t, struct hmc_cnt_thread *c)
{
    c->es = -1;
    if (!g_on)
        return;
    hmc_busy++;
    c->es = hmc_papi_thread_start(&g_papi, &g_set);
    hmc_busy--;
    if (c->es >= 0)
        reading(t, c->es, HMR_CNT_START);
}

void hmc_counters_tick(struct hmc_thread *t, struct hmc_cnt_thread *c)
{
    if (c->es >= 0)
        reading(t, c->es, HMR_CNT_TICK);
}

void hmc_counters_thread_stop(struct hmc_thread *t, struct hmc_cnt_thread *c)
{
    if (c->es < 0)
        return;
    reading(t, c->es, HMR_CNT_END);
    hmc_busy++;
    hmc_papi_thread_stop(&g_papi, c->es);
    hmc_busy--;
    c->es = -1;
}

void hmc_counters_atfork_child(void)
{
    g_on = 0;
}
