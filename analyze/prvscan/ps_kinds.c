/* ps_kinds.c — the sampled weight by access kind (event 41000035, written by
 * hmtune-finalize: streaming, scattered, synchronization, compute; docs/formats.md
 * §3): per (task, site) for sites.tsv's weight_streaming, weight_scattered and
 * weight_sync columns, scaled as the weight column is (small-call sampling, and
 * ps_sites_cap's bound); per trace in scan.json (kind_samples, kind_weight: "0" the
 * samples that carried no kind). */
#include "ps.h"

void ps_kinds_count(struct ps_site *g, struct ps_stats *st, const struct ps_sample *x,
                    uint64_t w, uint64_t scale)
{
    uint64_t k = (x->seen & PS_SA_KIND) && x->kind <= HM_ACCESS_KIND_MAX ? x->kind : 0;
    g->kind_weight[k] += w * scale;
    g->kind_extra[k] += w * (scale - 1);
    st->kind_samples[k]++;
    st->kind_weight[k] += w;
}

void ps_kinds_cap(struct ps_site *g, double f)
{
    for (int k = 0; k <= HM_ACCESS_KIND_MAX; k++) {
        uint64_t keep = (uint64_t)((double)g->kind_extra[k] * f);
        g->kind_weight[k] -= g->kind_extra[k] - keep;
        g->kind_extra[k] = keep;
    }
}

char *ps_kinds_fmt(char *p, const struct ps_site *g)
{
    static const int cols[] = { HM_ACCESS_KIND_STREAMING, HM_ACCESS_KIND_SCATTERED,
                                HM_ACCESS_KIND_SYNC };
    for (size_t i = 0; i < sizeof(cols) / sizeof(*cols); i++) {
        *p++ = '\t';
        p = ps_fmt_u64(p, g->kind_weight[cols[i]]);
    }
    return p;
}

static void kinds_obj(FILE *out, const char *name, const uint64_t *v)
{
    fprintf(out, "\"%s\":{", name);
    for (int k = 0; k <= HM_ACCESS_KIND_MAX; k++)
        fprintf(out, "%s\"%d\":%llu", k ? "," : "", k, (unsigned long long)v[k]);
    fputs("},", out);
}

void ps_kinds_json(FILE *out, const struct ps_stats *st)
{
    kinds_obj(out, "kind_samples", st->kind_samples);
    kinds_obj(out, "kind_weight", st->kind_weight);
}
