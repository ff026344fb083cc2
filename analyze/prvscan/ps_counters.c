/* ps_counters.c — hardware counters over the samples: counters.csv.
 *
 * A counter reading (an event line with 42xxxxxx types: PAPI's counts since the
 * thread's previous reading, as hmtune and Extrae write them) covers the interval
 * since that thread's previous reading. Its counts, and the interval's wall time, go
 * to the samples that stand for that interval (docs/formats.md §4 "counters.csv"):
 * - software sampler (41000021 = 3): the reading is taken in the timer's signal just
 *   before that signal's sample, and the sample stands for the CPU time since the
 *   previous signal, so the thread's next sample takes the whole reading ("next");
 * - any other trace (PEBS/IBS drain readings, Extrae's readings at its own events):
 *   the samples of the thread since its previous reading, the reading's own line
 *   included, share it in proportion to their number ("spread").
 * A reading no sample takes (thread start and end, an interval without samples) counts
 * for its thread and phase only. Sums are per (task, site, access kind), per thread
 * and per (task, phase): the run cut into `phases` equal spans of the header's time. */
#include "ps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NV (PS_CNT_MAX + 1)          /* v[0]: the intervals' wall ns, v[1..]: counters */

struct acc { uint32_t grp; uint32_t kind; uint64_t n; };

struct cthr {
    uint32_t task_no, thread_no;
    int has_last, pending;
    uint64_t last_t, readings, samples;  /* samples: those that took a reading */
    double pend[NV], total[NV];
    struct acc *acc;                     /* spread: the samples since the last reading */
    size_t nacc, capacc;
};

struct centry {                          /* one (task, site, kind) */
    uint32_t grp, kind, task_no;
    uint64_t samples;
    double v[NV];
};

struct cphase { uint64_t readings; double v[NV]; };

struct ps_counters {
    int active;                          /* some reading was seen */
    unsigned phases;
    uint64_t end_ns;
    uint64_t type[PS_CNT_MAX];           /* column c + 1's event type, first seen first */
    unsigned ntypes;
    uint64_t dropped;                    /* counts of types beyond PS_CNT_MAX */
    struct cthr *thr;
    size_t nthr, capthr;
    struct centry *e;
    size_t ne, cape;
    uint32_t *hash;                      /* (grp, kind) -> index + 1 */
    size_t hcap;
    struct cphase *ph;                   /* [task_no - 1][phase] */
    size_t ntask_ph;
};

struct ps_counters *ps_counters_new(uint64_t end_ns, unsigned phases)
{
    struct ps_counters *c = ps_xcalloc(1, sizeof(*c));
    c->end_ns = end_ns;
    c->phases = phases ? phases : 1;
    return c;
}

void ps_counters_free(struct ps_counters *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nthr; i++)
        free(c->thr[i].acc);
    free(c->thr);
    free(c->e);
    free(c->hash);
    free(c->ph);
    free(c);
}

int ps_counters_any(const struct ps_counters *c) { return c->active && c->ntypes; }

static struct cthr *thread_slot(struct ps_counters *c, uint32_t *slot, uint32_t task_no,
                                uint32_t thread_no)
{
    if (*slot)
        return &c->thr[*slot - 1];
    if (c->nthr == c->capthr) {
        c->capthr = c->capthr ? 2 * c->capthr : 16;
        c->thr = ps_xrealloc(c->thr, c->capthr * sizeof(*c->thr));
    }
    struct cthr *t = &c->thr[c->nthr++];
    memset(t, 0, sizeof(*t));
    t->task_no = task_no;
    t->thread_no = thread_no;
    *slot = (uint32_t)c->nthr;
    return t;
}

static uint64_t entry_key(uint32_t grp, uint32_t kind) { return (uint64_t)grp * 8u + kind; }

static size_t hash_of(uint64_t k, size_t cap)
{
    return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static struct centry *entry(struct ps_counters *c, uint32_t grp, uint32_t kind, uint32_t task_no)
{
    if (2 * (c->ne + 1) > c->hcap) {
        size_t cap = c->hcap ? 2 * c->hcap : 256;
        uint32_t *h = ps_xcalloc(cap, sizeof(*h));
        for (size_t i = 0; i < c->ne; i++) {
            size_t j = hash_of(entry_key(c->e[i].grp, c->e[i].kind), cap);
            while (h[j])
                j = (j + 1) & (cap - 1);
            h[j] = (uint32_t)i + 1;
        }
        free(c->hash);
        c->hash = h;
        c->hcap = cap;
    }
    uint64_t k = entry_key(grp, kind);
    size_t j = hash_of(k, c->hcap);
    while (c->hash[j]) {
        struct centry *x = &c->e[c->hash[j] - 1];
        if (x->grp == grp && x->kind == kind)
            return x;
        j = (j + 1) & (c->hcap - 1);
    }
    if (c->ne == c->cape) {
        c->cape = c->cape ? 2 * c->cape : 64;
        c->e = ps_xrealloc(c->e, c->cape * sizeof(*c->e));
    }
    struct centry *x = &c->e[c->ne++];
    memset(x, 0, sizeof(*x));
    x->grp = grp;
    x->kind = kind;
    x->task_no = task_no;
    c->hash[j] = (uint32_t)c->ne;
    return x;
}

void ps_counters_sample(struct ps_counters *c, uint32_t *slot, uint32_t task_no,
                        uint32_t thread_no, uint32_t grp, unsigned kind, int next_mode)
{
    if (PS_LIKELY(!c->active))
        return;
    if (kind > HM_ACCESS_KIND_MAX)
        kind = 0;
    struct cthr *t = thread_slot(c, slot, task_no, thread_no);
    if (next_mode) {
        if (!t->pending)
            return;                      /* a sample no reading came before */
        struct centry *x = entry(c, grp, kind, task_no);
        for (int i = 0; i < NV; i++)
            x->v[i] += t->pend[i];
        x->samples++;
        t->samples++;
        t->pending = 0;
        return;
    }
    if (t->nacc && t->acc[t->nacc - 1].grp == grp && t->acc[t->nacc - 1].kind == kind) {
        t->acc[t->nacc - 1].n++;
        return;
    }
    for (size_t i = 0; i < t->nacc; i++)
        if (t->acc[i].grp == grp && t->acc[i].kind == kind) {
            t->acc[i].n++;
            return;
        }
    if (t->nacc == t->capacc) {
        t->capacc = t->capacc ? 2 * t->capacc : 8;
        t->acc = ps_xrealloc(t->acc, t->capacc * sizeof(*t->acc));
    }
    t->acc[t->nacc++] = (struct acc){ grp, kind, 1 };
}

static int column(struct ps_counters *c, uint64_t type)
{
    for (unsigned i = 0; i < c->ntypes; i++)
        if (c->type[i] == type)
            return (int)i + 1;
    if (c->ntypes == PS_CNT_MAX)
        return -1;
    c->type[c->ntypes++] = type;
    return (int)c->ntypes;
}

static struct cphase *phase_of(struct ps_counters *c, uint32_t task_no, uint64_t t)
{
    if (task_no > c->ntask_ph) {
        size_t n = task_no > 2 * c->ntask_ph ? task_no : 2 * c->ntask_ph;
        c->ph = ps_xrealloc(c->ph, n * c->phases * sizeof(*c->ph));
        memset(c->ph + c->ntask_ph * c->phases, 0, (n - c->ntask_ph) * c->phases * sizeof(*c->ph));
        c->ntask_ph = n;
    }
    uint64_t k = c->end_ns ? (uint64_t)((double)t / (double)c->end_ns * c->phases) : 0;
    if (k >= c->phases)
        k = c->phases - 1;
    return &c->ph[(size_t)(task_no - 1) * c->phases + k];
}

void ps_counters_reading(struct ps_counters *c, uint32_t *slot, uint32_t task_no,
                         uint32_t thread_no, uint64_t t, const struct ps_pair *p, size_t n,
                         int next_mode)
{
    double d[NV] = { 0 };
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ps_is_counter(p[i].type))
            continue;
        int col = column(c, p[i].type);
        if (col < 0) {
            c->dropped++;
            continue;
        }
        d[col] += (double)p[i].value;
        any = 1;
    }
    if (!any)
        return;                          /* 41999999 alone, or types beyond the cap */
    c->active = 1;
    struct cthr *th = thread_slot(c, slot, task_no, thread_no);
    d[0] = th->has_last && t > th->last_t ? (double)(t - th->last_t) : 0.0;
    th->has_last = 1;
    th->last_t = t;
    th->readings++;
    struct cphase *ph = phase_of(c, task_no, t);
    ph->readings++;
    for (int i = 0; i < NV; i++) {
        th->total[i] += d[i];
        ph->v[i] += d[i];
    }
    if (next_mode) {                     /* an unclaimed one before stays its thread's */
        memcpy(th->pend, d, sizeof(d));
        th->pending = 1;
        return;
    }
    uint64_t all = 0;
    for (size_t i = 0; i < th->nacc; i++)
        all += th->acc[i].n;
    for (size_t i = 0; i < th->nacc; i++) {
        struct centry *x = entry(c, th->acc[i].grp, th->acc[i].kind, task_no);
        double f = (double)th->acc[i].n / (double)all;
        for (int k = 0; k < NV; k++)
            x->v[k] += f * d[k];
        x->samples += th->acc[i].n;
    }
    th->samples += all;
    th->nacc = 0;
}

static const char *kind_name(uint32_t kind)
{
    switch (kind) {
#define KIND_NAME(v, name, label) case v: return name;
        HM_ACCESS_KIND_VALUES(KIND_NAME)
#undef KIND_NAME
    default: return "none";
    }
}

static void put_values(FILE *out, const struct ps_counters *c, const double *v)
{
    for (unsigned i = 0; i <= c->ntypes; i++)
        fprintf(out, ",%.0f", floor(v[i] + 0.5));
    fputc('\n', out);
}

static const struct ps_sites *g_sort_sites;

static int by_task_site_kind(const void *a, const void *b)
{
    const struct centry *x = a, *y = b;
    const struct ps_site *sx = &g_sort_sites->e[x->grp], *sy = &g_sort_sites->e[y->grp];
    if (x->task_no != y->task_no)
        return x->task_no < y->task_no ? -1 : 1;
    if (sx->site != sy->site)
        return sx->site < sy->site ? -1 : 1;
    return (x->kind > y->kind) - (x->kind < y->kind);
}

static int by_task_thread(const void *a, const void *b)
{
    const struct cthr *x = a, *y = b;
    if (x->task_no != y->task_no)
        return x->task_no < y->task_no ? -1 : 1;
    return (x->thread_no > y->thread_no) - (x->thread_no < y->thread_no);
}

int ps_counters_write(struct ps_counters *c, const struct ps_sites *s, FILE *out,
                      const char *trace)
{
    fprintf(out, "%s trace=", PS_COUNTERS_VERSION);
    ps_put_encoded(out, trace);
    fprintf(out, " phases=%u end_ns=%llu\n", c->phases, (unsigned long long)c->end_ns);
    fputs("scope,rank,thread,site_id,kind,start_ns,end_ns,readings,samples,ns", out);
    if (!ps_counters_any(c)) {
        fputc('\n', out);
        return ferror(out) ? -1 : 0;
    }
    for (unsigned i = 0; i < c->ntypes; i++)
        fprintf(out, ",%llu", (unsigned long long)c->type[i]);
    fputc('\n', out);
    g_sort_sites = s;
    qsort(c->e, c->ne, sizeof(*c->e), by_task_site_kind);
    for (size_t i = 0; i < c->ne; i++) {
        const struct centry *x = &c->e[i];
        fprintf(out, "site,%u,,%llu,%s,,,,%llu", x->task_no - 1,
                (unsigned long long)s->e[x->grp].site, kind_name(x->kind),
                (unsigned long long)x->samples);
        put_values(out, c, x->v);
    }
    qsort(c->thr, c->nthr, sizeof(*c->thr), by_task_thread);
    for (size_t i = 0; i < c->nthr; i++) {
        const struct cthr *t = &c->thr[i];
        if (!t->readings)
            continue;
        fprintf(out, "thread,%u,%u,,,,,%llu,%llu", t->task_no - 1, t->thread_no,
                (unsigned long long)t->readings, (unsigned long long)t->samples);
        put_values(out, c, t->total);
    }
    for (size_t k = 0; k < c->ntask_ph; k++)
        for (unsigned j = 0; j < c->phases; j++) {
            const struct cphase *ph = &c->ph[k * c->phases + j];
            if (!ph->readings)
                continue;
            uint64_t a = (uint64_t)((double)c->end_ns * j / c->phases);
            uint64_t b = (uint64_t)((double)c->end_ns * (j + 1) / c->phases);
            fprintf(out, "phase,%zu,,,,%llu,%llu,%llu,", k, (unsigned long long)a,
                    (unsigned long long)b, (unsigned long long)ph->readings);
            put_values(out, c, ph->v);
        }
    return ferror(out) ? -1 : 0;
}

uint64_t ps_counters_dropped(const struct ps_counters *c) { return c->dropped; }
