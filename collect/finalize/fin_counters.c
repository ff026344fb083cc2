/* fin_counters.c — the PAPI counters the processes recorded (hmc_counters.c; their
 * definitions read by fin_raw.c, their readings written by fin_prv.c): the .pcf event
 * types, labelled as Extrae labels PAPI's ("Total cycles (PAPI_TOT_CYC)"), and the set
 * type 41999999. fin_summary.c writes the summary's counters. */
#include "fin.h"

#include <string.h>

void fin_counters_pcf(struct fin_ctx *c, FILE *f)
{
    uint64_t seen[64];
    size_t nseen = 0;
    int any = 0;
    for (size_t k = 0; k < c->nprocs; k++) {
        const struct fin_proc *p = &c->procs[k];
        for (int i = 0; i < p->ncnt; i++) {
            uint64_t type = hmr_counter_type(p->cnt_code[i]);
            int dup = 0;
            for (size_t j = 0; j < nseen; j++)
                dup |= seen[j] == type;
            if (dup || nseen == sizeof(seen) / sizeof(seen[0]))
                continue;
            seen[nseen++] = type;
            if (!any)
                fputs("EVENT_TYPE\n", f);
            any = 1;
            const char *d = p->cnt_descr[i][0] ? p->cnt_descr[i] : p->cnt_name[i];
            fprintf(f, "7  %llu %s (%s)\n", (unsigned long long)type, d, p->cnt_name[i]);
        }
    }
    if (any)
        fprintf(f, "\n\nEVENT_TYPE\n7  %llu Active hardware counter set\nVALUES\n1 Set 1\n\n\n",
                (unsigned long long)HMR_HWC_SET);
}
