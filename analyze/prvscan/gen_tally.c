/* gen_tally.c — hmtune-gentrace's answers (gen_tally.h): the tallies gen_trace.c adds
 * to as it writes each record, and the expected-answers file written from them. */
#include "gen_tally.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

uint64_t g_records, g_events, g_states;
uint64_t g_allocs, g_frees, g_unknown_frees, g_weight, g_samples,
         g_classes[HM_SAMPLE_CLASS_MAX + 1];
uint64_t g_fault_samples, g_faults, g_fault_classes[HM_SAMPLE_CLASS_MAX + 1];
struct exp_site *g_exp;

void gen_life_start(unsigned task, uint64_t site, uint64_t size, uint64_t t, uint64_t scale)
{
    struct exp_site *x = E(task, site);
    if (!x->n_allocs)
        x->first_alloc = t;
    x->n_allocs += scale;
    x->bytes += size * scale;
    x->sampled_blocks += scale > 1;
    if (size > x->max_size)
        x->max_size = size;
    if (!x->live_blocks++)
        x->since = t;
    x->live_bytes += size * scale;
    if (x->live_bytes > x->peak)
        x->peak = x->live_bytes;
}

void gen_life_end(unsigned task, uint64_t site, uint64_t size, uint64_t t)
{
    struct exp_site *x = E(task, site);
    x->live_bytes -= size;
    if (!--x->live_blocks)
        x->live_ns += t - x->since;
    if (t > x->last_free)
        x->last_free = t;
}

/* Keep the share f of x's added weight (and of each kind's), as the scanner does. */
static void lower(struct exp_site *x, double f)
{
    uint64_t keep = (uint64_t)((double)x->extra * f);
    x->weight -= x->extra - keep;
    x->extra = keep;
    for (int k = 0; k <= HM_ACCESS_KIND_MAX; k++) {
        uint64_t kk = (uint64_t)((double)x->kextra[k] * f);
        x->kw[k] -= x->kextra[k] - kk;
        x->kextra[k] = kk;
    }
}

void gen_write_expected(const char *prv, uint64_t never_freed, unsigned ntasks)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s.expected.json", prv);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    for (unsigned t = 0; t < ntasks; t++) {     /* the bounds of ps_sites_cap */
        uint64_t extra = 0;
        for (unsigned s = 0; s < NIDS; s++) {
            struct exp_site *x = E(t, s);
            if (x->extra)
                lower(x, x->scaled_samples ? 1.0 - 1.0 / sqrt((double)x->scaled_samples) : 0.0);
            extra += x->extra;
        }
        if (!E(t, 0)->has_class || extra <= E(t, 0)->unknown)
            continue;
        double f = (double)E(t, 0)->unknown / (double)extra;
        for (unsigned s = 0; s < NIDS; s++)
            lower(E(t, s), f);
    }
    fprintf(f, "{\"records\":%" PRIu64 ",\"events\":%" PRIu64 ",\"states\":%" PRIu64
            ",\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"never_freed\":%" PRIu64
            ",\"unknown_frees\":%" PRIu64 ",\"samples\":%" PRIu64 ",\"total_weight\":%" PRIu64
            ",\"sampler\":1,\"classes\":{\"1\":%" PRIu64 ",\"2\":0,\"3\":%" PRIu64 ",\"4\":%" PRIu64
            ",\"5\":%" PRIu64 "},\"fault_samples\":%" PRIu64 ",\"faults\":%" PRIu64
            ",\"fault_classes\":{\"1\":%" PRIu64 ",\"3\":%" PRIu64 ",\"4\":%" PRIu64
            "},\n\"sites\":[\n",
            g_records, g_events, g_states, g_allocs, g_frees, never_freed, g_unknown_frees,
            g_samples, g_weight, g_classes[HM_SAMPLE_CLASS_HEAP],
            g_classes[HM_SAMPLE_CLASS_STACK], g_classes[HM_SAMPLE_CLASS_UNKNOWN],
            g_classes[HM_SAMPLE_CLASS_NO_ADDRESS], g_fault_samples, g_faults,
            g_fault_classes[HM_SAMPLE_CLASS_HEAP], g_fault_classes[HM_SAMPLE_CLASS_STACK],
            g_fault_classes[HM_SAMPLE_CLASS_UNKNOWN]);
    int first = 1;
    for (unsigned t = 0; t < ntasks; t++)
        for (unsigned s = 0; s < NIDS; s++) {
            const struct exp_site *x = E(t, s);
            if (!x->n_allocs && !x->samples && !x->fault_samples)
                continue;
            fprintf(f, "%s{\"task\":%u,\"site_id\":%u,\"n_allocs\":%" PRIu64
                    ",\"max_size\":%" PRIu64 ",\"peak_live_bytes\":%" PRIu64
                    ",\"total_bytes\":%" PRIu64 ",\"first_alloc_ns\":%" PRIu64
                    ",\"last_free_ns\":%" PRIu64 ",\"live_ns\":%" PRIu64
                    ",\"samples\":%" PRIu64 ",\"loads\":%" PRIu64 ",\"stores\":%" PRIu64
                    ",\"misses\":%" PRIu64 ",\"weight\":%" PRIu64
                    ",\"fault_samples\":%" PRIu64 ",\"faults\":%" PRIu64
                    ",\"sampled_blocks\":%" PRIu64 ",\"weight_streaming\":%" PRIu64
                    ",\"weight_scattered\":%" PRIu64 ",\"weight_sync\":%" PRIu64 "}",
                    first ? "" : ",\n", t + 1, s, x->n_allocs, x->max_size, x->peak, x->bytes,
                    x->first_alloc, x->last_free, x->live_ns, x->samples, x->loads, x->stores,
                    x->misses, x->weight, x->fault_samples, x->faults, x->sampled_blocks,
                    x->kw[HM_ACCESS_KIND_STREAMING], x->kw[HM_ACCESS_KIND_SCATTERED],
                    x->kw[HM_ACCESS_KIND_SYNC]);
            first = 0;
        }
    fputs("\n]}\n", f);
    if (fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}
