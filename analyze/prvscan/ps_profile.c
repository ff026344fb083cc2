/* ps_profile.c — where in its blocks each site's sampled weight falls (profile.csv).
 *
 * A sample that the model places in a live block (found by address, or the block at
 * the address of the object the trace names, when it is that object's) adds its
 * weight to the bucket (task, site) x (offset >> shift): the same weight and scaling as
 * ps_sample_count, so the buckets of a (task, site) add up to its sites.tsv weight.
 *
 * Buckets below DENSE of a group are an array indexed by the bucket, grown to the
 * furthest one sampled (at most DENSE x 16 bytes = 64 KiB per group, plus 8 bytes a
 * bucket for the added weight of small-call sampling once a group has such samples):
 * one array increment per sample. The increment is applied RING samples later, its
 * bin prefetched when the sample is seen, so that samples spread over many blocks do
 * not each wait for a cache miss. Buckets further out go to an open-addressing table
 * of (group, bucket) with a one-entry cache in front, which holds one entry per
 * sampled (task, site, bucket): never more than one per sample.
 *
 * Small-call sampling's bound (ps_sites_cap) lowers a group's added weight after the
 * scan: the buckets' added parts are lowered with it, by cumulative rounding in bucket
 * order, so that they add up to exactly the group's kept part when every sample of the
 * group was placed.
 *
 * Output: `# hmtune profile v1 trace=NAME granularity=G`, then `site_id,offset,weight,
 * samples`, one row per (site, bucket) with samples, summed over tasks, sorted by site
 * and offset (docs/formats.md §4). */
#include "ps.h"

#include <stdlib.h>
#include <string.h>

struct ent {
    uint64_t bucket;
    uint32_t grp;                /* (task, site) group + 1; 0 empty slot */
    uint32_t pad;
    uint64_t samples, weight, extra;   /* extra: the part of weight that scaling added */
};

#define DENSE 4096u                  /* buckets of a group kept in its array */
#define RING  16u                    /* increments in flight (a power of two) */

struct bin { uint64_t weight, samples; };
struct dense {
    struct bin *b;
    uint64_t *x;                 /* added weight per bucket (small-call sampling), or NULL */
    size_t n;
};
struct pend { struct bin *b; uint64_t w; };

struct ps_profile {
    unsigned shift;
    struct dense *dn;            /* per group */
    size_t ndn;
    struct pend ring[RING];      /* increments not applied yet */
    unsigned ri;
    struct ent *e;               /* the table of buckets at or past DENSE */
    size_t n, cap;
    unsigned bits;               /* cap == 1 << bits */
    struct ent *last;            /* the entry the previous far sample went to */
    uint64_t *extra0;            /* per group: weight_extra before ps_sites_cap */
    size_t nextra0;
};

struct ps_profile *ps_profile_new(unsigned shift)
{
    struct ps_profile *p = ps_xcalloc(1, sizeof(*p));
    p->shift = shift;
    p->bits = 10;
    p->cap = (size_t)1 << p->bits;
    p->e = ps_xcalloc(p->cap, sizeof(struct ent));
    return p;
}

void ps_profile_free(struct ps_profile *p)
{
    if (p) {
        for (size_t i = 0; i < p->ndn; i++) {
            free(p->dn[i].b);
            free(p->dn[i].x);
        }
        free(p->dn);
        free(p->e);
        free(p->extra0);
        free(p);
    }
}

unsigned ps_profile_shift(const struct ps_profile *p) { return p->shift; }

/* Fibonacci hashing: the product's high bits depend on every bit of the key (the
 * bucket in the low bits, the group above). */
static size_t slot_of(const struct ent *tab, unsigned bits, uint32_t grp1, uint64_t bucket)
{
    size_t cap = (size_t)1 << bits;
    uint64_t h = (bucket ^ ((uint64_t)grp1 << 34) ^ ((uint64_t)grp1 >> 30)) *
                 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h >> (64 - bits));
    while (tab[i].grp && (tab[i].grp != grp1 || tab[i].bucket != bucket))
        i = (i + 1) & (cap - 1);
    return i;
}

static struct ent *find(struct ps_profile *p, uint32_t grp1, uint64_t bucket)
{
    size_t i = slot_of(p->e, p->bits, grp1, bucket);
    if (PS_LIKELY(p->e[i].grp))
        return &p->e[i];
    if ((p->n + 1) * 2 > p->cap) {       /* load under 1/2 */
        unsigned nbits = p->bits + 1;
        struct ent *ne = ps_xcalloc((size_t)1 << nbits, sizeof(struct ent));
        for (size_t k = 0; k < p->cap; k++)
            if (p->e[k].grp)
                ne[slot_of(ne, nbits, p->e[k].grp, p->e[k].bucket)] = p->e[k];
        free(p->e);
        p->e = ne;
        p->bits = nbits;
        p->cap = (size_t)1 << nbits;
        i = slot_of(p->e, p->bits, grp1, bucket);
    }
    p->n++;
    p->e[i].grp = grp1;
    p->e[i].bucket = bucket;
    return &p->e[i];
}

/* Apply every increment in flight (before bins move, and at the end). */
static void flush(struct ps_profile *p)
{
    for (unsigned i = 0; i < RING; i++) {
        struct pend *q = &p->ring[i];
        if (q->b) {
            q->b->weight += q->w;
            q->b->samples++;
            q->b = NULL;
        }
    }
}

static void grow_groups(struct ps_profile *p, uint32_t grp)
{
    size_t n = p->ndn ? p->ndn : 64;
    while (n <= grp)
        n *= 2;
    p->dn = ps_xrealloc(p->dn, n * sizeof(struct dense));   /* the bins stay where they are */
    memset(p->dn + p->ndn, 0, (n - p->ndn) * sizeof(struct dense));
    p->ndn = n;
}

static void grow_bins(struct ps_profile *p, struct dense *d, uint64_t bucket)
{
    size_t n = d->n ? d->n * 2 : 16;
    while (n <= bucket)
        n *= 2;
    if (n > DENSE)
        n = DENSE;
    flush(p);                            /* the ring points into the bins */
    d->b = ps_xrealloc(d->b, n * sizeof(struct bin));
    memset(d->b + d->n, 0, (n - d->n) * sizeof(struct bin));
    if (d->x) {
        d->x = ps_xrealloc(d->x, n * sizeof(uint64_t));
        memset(d->x + d->n, 0, (n - d->n) * sizeof(uint64_t));
    }
    d->n = n;
}

void ps_profile_add(struct ps_profile *p, uint32_t grp, uint64_t offset, uint64_t w,
                    uint64_t scale)
{
    uint64_t bucket = offset >> p->shift;
    if (PS_LIKELY(bucket < DENSE)) {
        if (PS_UNLIKELY(grp >= p->ndn))
            grow_groups(p, grp);
        struct dense *d = &p->dn[grp];
        if (PS_UNLIKELY(bucket >= d->n))
            grow_bins(p, d, bucket);
        struct bin *b = &d->b[bucket];
        if (PS_UNLIKELY(scale != 1)) {   /* a block of small-call sampling: at once */
            if (!d->x)
                d->x = ps_xcalloc(d->n, sizeof(uint64_t));
            b->weight += w * scale;
            b->samples++;
            d->x[bucket] += w * (scale - 1);
            return;
        }
        __builtin_prefetch(b, 1);
        struct pend *q = &p->ring[p->ri];
        if (q->b) {
            q->b->weight += q->w;
            q->b->samples++;
        }
        q->b = b;
        q->w = w;
        p->ri = (p->ri + 1) & (RING - 1);
        return;
    }
    struct ent *e = p->last;
    if (!e || e->grp != grp + 1 || e->bucket != bucket)
        p->last = e = find(p, grp + 1, bucket);
    e->samples++;
    e->weight += w * scale;
    e->extra += w * (scale - 1);
}

void ps_profile_snapshot(struct ps_profile *p, const struct ps_sites *s)
{
    flush(p);
    p->nextra0 = s->n;
    p->extra0 = ps_xrealloc(p->extra0, (s->n + 1) * sizeof(uint64_t));
    for (size_t i = 0; i < s->n; i++)
        p->extra0[i] = s->e[i].weight_extra;
}

struct out { uint64_t site, bucket, weight, samples; };

static int cmp_grp(const void *a, const void *b)
{
    const struct ent *x = a, *y = b;
    if (x->grp != y->grp)
        return x->grp < y->grp ? -1 : 1;
    return x->bucket < y->bucket ? -1 : x->bucket > y->bucket;
}

static int cmp_out(const void *a, const void *b)
{
    const struct out *x = a, *y = b;
    if (x->site != y->site)
        return x->site < y->site ? -1 : 1;
    return x->bucket < y->bucket ? -1 : x->bucket > y->bucket;
}

int ps_profile_write(struct ps_profile *p, const struct ps_sites *s, FILE *out,
                     const char *trace, uint64_t *unplaced)
{
    flush(p);
    /* every sampled (group, bucket): the arrays' and the table's (disjoint: the table
     * has the buckets from DENSE on), grouped by group in bucket order */
    size_t n = p->n;
    for (size_t k = 0; k < p->ndn; k++)
        for (size_t b = 0; b < p->dn[k].n; b++)
            n += p->dn[k].b[b].samples != 0;
    struct ent *v = ps_xmalloc((n + 1) * sizeof(struct ent));
    n = 0;
    for (size_t k = 0; k < p->ndn; k++)
        for (size_t b = 0; b < p->dn[k].n; b++)
            if (p->dn[k].b[b].samples)
                v[n++] = (struct ent){ .bucket = b, .grp = (uint32_t)k + 1,
                                       .samples = p->dn[k].b[b].samples,
                                       .weight = p->dn[k].b[b].weight,
                                       .extra = p->dn[k].x ? p->dn[k].x[b] : 0 };
    for (size_t k = 0; k < p->cap; k++)
        if (p->e[k].grp)
            v[n++] = p->e[k];
    qsort(v, n, sizeof(struct ent), cmp_grp);
    struct out *o = ps_xmalloc((n + 1) * sizeof(struct out));
    for (size_t i = 0; i < n;) {
        uint32_t grp = v[i].grp - 1;
        const struct ps_site *g = &s->e[grp];
        uint64_t was = grp < p->nextra0 ? p->extra0[grp] : g->weight_extra;
        uint64_t kept = g->weight_extra, cum = 0, given = 0;
        for (; i < n && v[i].grp == grp + 1; i++) {
            uint64_t w = v[i].weight;
            if (kept != was && was > 0) {   /* the bound lowered the added weight */
                cum += v[i].extra;
                uint64_t upto = (uint64_t)((unsigned __int128)cum * kept / was);
                w = w - v[i].extra + (upto - given);
                given = upto;
            }
            o[i] = (struct out){ g->site, v[i].bucket, w, v[i].samples };
        }
    }
    *unplaced = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->e[i].n_allocs)
            *unplaced += s->e[i].prof_missed;
    qsort(o, n, sizeof(struct out), cmp_out);

    fprintf(out, "# hmtune profile v1 trace=");
    ps_put_encoded(out, trace);
    fprintf(out, " granularity=%llu\nsite_id,offset,weight,samples\n",
            (unsigned long long)(1ull << p->shift));
    for (size_t i = 0; i < n;) {
        struct out r = o[i++];
        for (; i < n && o[i].site == r.site && o[i].bucket == r.bucket; i++) {
            r.weight += o[i].weight;          /* the same site and bucket in another task */
            r.samples += o[i].samples;
        }
        char line[4 * 24], *c = line;
        c = ps_fmt_u64(c, r.site);
        *c++ = ',';
        c = ps_fmt_u64(c, r.bucket << p->shift);
        *c++ = ',';
        c = ps_fmt_u64(c, r.weight);
        *c++ = ',';
        c = ps_fmt_u64(c, r.samples);
        *c++ = '\n';
        fwrite(line, 1, (size_t)(c - line), out);
    }
    free(o);
    free(v);
    return ferror(out) ? -1 : 0;
}
