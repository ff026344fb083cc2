/* ps_sites.c — the per-(task, site) table: sampled accesses and lifetime facts.
 *
 * Site ids are dense in hmtune traces but are arbitrary 64-bit values in general
 * (Extrae object ids, static-object ids), so entries are found through an
 * open-addressing hash keyed by (task, site) rather than an array indexed by site.
 * Entries live in one array and keep their index for the whole scan, so a live block
 * names its group by index and a sample attributed by address needs no lookup. The
 * table holds one entry per (task, site) seen, never per sample or per block. */
#include "ps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct ps_sites *ps_sites_new(void)
{
    struct ps_sites *t = ps_xcalloc(1, sizeof(*t));
    t->cap = 64;
    t->e = ps_xmalloc(t->cap * sizeof(struct ps_site));
    t->hcap = 256;
    t->hash = ps_xcalloc(t->hcap, sizeof(uint32_t));
    return t;
}

void ps_sites_free(struct ps_sites *t)
{
    if (t) {
        free(t->e);
        free(t->hash);
        free(t);
    }
}

static size_t hash(uint32_t task, uint64_t site)
{
    uint64_t h = (site ^ ((uint64_t)task << 40)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h ^ (h >> 29));
}

static size_t slot(const struct ps_sites *t, const uint32_t *tab, size_t cap, uint32_t task,
                   uint64_t site)
{
    size_t i = hash(task, site) & (cap - 1);
    while (tab[i] && (t->e[tab[i] - 1].task != task || t->e[tab[i] - 1].site != site))
        i = (i + 1) & (cap - 1);
    return i;
}

uint32_t ps_sites_id(struct ps_sites *t, uint32_t task, uint64_t site)
{
    size_t i = slot(t, t->hash, t->hcap, task, site);
    if (PS_LIKELY(t->hash[i]))
        return t->hash[i] - 1;
    if ((t->n + 1) * 2 > t->hcap) {      /* keep the load under 1/2: short probe runs */
        size_t ncap = t->hcap * 2;
        uint32_t *nh = ps_xcalloc(ncap, sizeof(uint32_t));
        for (size_t k = 0; k < t->n; k++)
            nh[slot(t, nh, ncap, t->e[k].task, t->e[k].site)] = (uint32_t)(k + 1);
        free(t->hash);
        t->hash = nh;
        t->hcap = ncap;
        i = slot(t, t->hash, t->hcap, task, site);
    }
    if (t->n == t->cap) {
        if (t->cap >= 0x40000000u) {
            fprintf(stderr, "hmtune-prvscan: more than 2^30 (task, site) pairs\n");
            exit(1);
        }
        t->cap *= 2;
        t->e = ps_xrealloc(t->e, t->cap * sizeof(struct ps_site));
    }
    struct ps_site *e = &t->e[t->n];
    memset(e, 0, sizeof(*e));
    e->task = task;
    e->site = site;
    t->hash[i] = (uint32_t)++t->n;
    return (uint32_t)(t->n - 1);
}

static const struct ps_sites *g_sort;     /* qsort has no context argument */

static int cmp_id(const void *a, const void *b)
{
    const struct ps_site *x = &g_sort->e[*(const uint32_t *)a];
    const struct ps_site *y = &g_sort->e[*(const uint32_t *)b];
    if (x->task != y->task)
        return x->task < y->task ? -1 : 1;
    return x->site < y->site ? -1 : x->site > y->site;
}

uint32_t *ps_sites_sorted(const struct ps_sites *t)
{
    uint32_t *ids = ps_xmalloc((t->n + 1) * sizeof(uint32_t));
    for (size_t i = 0; i < t->n; i++)
        ids[i] = (uint32_t)i;
    g_sort = t;
    qsort(ids, t->n, sizeof(uint32_t), cmp_id);
    g_sort = NULL;
    return ids;
}

void ps_sample_count(struct ps_site *c, struct ps_stats *st, const struct ps_sample *x,
                     uint64_t cls, uint64_t scale)
{
    uint64_t w = ps_sample_weight(x);
    c->samples++;
    if (x->seen & PS_SA_ADDR) {
        if (x->is_store)
            c->stores++;
        else
            c->loads++;
    }
    if ((x->seen & PS_SA_HIT) && x->hit == HM_SAMPLE_HIT_MISS)
        c->misses++;
    c->weight += w * scale;
    c->weight_extra += w * (scale - 1);
    c->scaled_samples += scale > 1;
    ps_kinds_count(c, st, x, w, scale);
    if (c->site == 0 && (x->seen & PS_SA_CLS)) {
        c->has_class = 1;
        if (x->cls == HM_SAMPLE_CLASS_UNKNOWN)
            c->unknown_weight += w;
    }
    st->samples++;
    /* the producer load's address is exact and the time the waiting consumer's, which
     * is that load's: attributed as a direct sample is (docs/formats.md §4) */
    st->producer_samples += (x->seen & PS_SA_REC) && x->recovered == HM_SAMPLE_RECOVERED_PRODUCER;
    st->total_weight += w;
    st->class_events += (x->seen & PS_SA_CLS) != 0;
    if (cls >= HM_SAMPLE_CLASS_HEAP && cls <= HM_SAMPLE_CLASS_MAX) {
        st->classes[cls]++;
        st->class_weight[cls] += w;
    }
}

void ps_fault_count(struct ps_site *c, struct ps_stats *st, const struct ps_fault *f)
{
    /* each sample stands for the faults of its sampling period (41000031); 1 when a
     * trace does not say */
    uint64_t n = (f->seen & PS_FA_N) ? f->faults : 1;
    c->fault_samples++;
    c->faults += n;
    st->fault_samples++;
    st->faults += n;
    if ((f->seen & PS_FA_CLS) && f->cls >= HM_SAMPLE_CLASS_HEAP && f->cls <= HM_SAMPLE_CLASS_MAX)
        st->fault_classes[f->cls] += n;
}

/* A sample in a block of small-call sampling counts scale times for its site: the
 * blocks sampling did not trace are assumed to be accessed as the traced ones are, as
 * far as the site's samples support it (ps_small_support: a block sampled once says
 * nothing about the others). Their accesses are samples in untraced memory (class 4: not in a traced block, a
 * static variable or a stack), so the weight scaling adds to a task's sites cannot
 * be more than the weight of those: when it is, every site's added part is scaled
 * down by one factor, so that together they take exactly that weight. A task whose
 * samples carry no class (not an hmtune trace) is left as it is. */
double ps_small_support(uint64_t k)
{
    return k ? 1.0 - 1.0 / sqrt((double)k) : 0.0;
}

/* Keep the share f of g's added weight (and of each kind's). */
static void lower(struct ps_site *g, double f)
{
    uint64_t keep = (uint64_t)((double)g->weight_extra * f);
    g->weight -= g->weight_extra - keep;
    g->weight_extra = keep;
    ps_kinds_cap(g, f);
}

uint64_t ps_sites_cap(struct ps_sites *t, uint64_t *unsupported)
{
    uint32_t *ids = ps_sites_sorted(t);
    uint64_t capped = 0;
    for (size_t i = 0; i < t->n;) {
        size_t j = i;
        uint64_t extra = 0, unknown = 0;
        int has_class = 0;
        for (; j < t->n && t->e[ids[j]].task == t->e[ids[i]].task; j++) {
            struct ps_site *g = &t->e[ids[j]];
            if (g->weight_extra) {
                lower(g, ps_small_support(g->scaled_samples));
                if (unsupported)
                    (*unsupported)++;
            }
            extra += g->weight_extra;
            if (g->site == 0) {
                unknown = g->unknown_weight;
                has_class = g->has_class;
            }
        }
        if (has_class && extra > unknown) {
            double f = (double)unknown / (double)extra;
            for (size_t k = i; k < j; k++)
                lower(&t->e[ids[k]], f);
            capped++;
        }
        i = j;
    }
    free(ids);
    return capped;
}
