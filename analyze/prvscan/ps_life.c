/* ps_life.c — per-(task, site) lifetime facts, swept in time order while the trace
 * streams by.
 *
 * A block is live on [t_alloc, t_end): t_alloc is its call's entry time, t_end the
 * entry time of the free (or of the realloc that moved or resized it, or of the call
 * whose new block overlapped it), or the trace end when it is never freed. An end
 * before the start (broken input) is clamped to the start.
 *
 * Per group the facts are:
 *   n_allocs, max_size, total_bytes, first_alloc — counted when the block starts;
 *   last_free   — the latest t_end;
 *   peak        — the most bytes live at once: after all starts and ends at one time
 *                 are applied, so ends come first at equal times (a realloc's old and
 *                 new blocks never add up; a block ending at its own start is never
 *                 live);
 *   live_ns     — the length of the union of the blocks' intervals.
 *
 * Starts and ends do not reach us in time order: a block's start is known only when
 * its call ends, and a realloc ends its old block at the realloc's entry, also known
 * only at its end. So every endpoint goes into a min-heap on time, and is swept once
 * no endpoint can come earlier any more: the model says when (the current trace time,
 * held back by the entry time of every call still open — the open calls are a second,
 * lazily pruned heap). The heap holds the endpoints of a few calls' duration, not of
 * the trace. A call that never ends (a process killed inside malloc) would hold the
 * sweep back for good, so the model trims the heap to its oldest half once it passes
 * a fixed size; an endpoint that then comes after its time is applied at its group's
 * current time and counted (late_endpoints in scan.json). */
#include "ps.h"

#include <stdlib.h>

struct ev {
    uint64_t t, x;           /* endpoints: time, bytes; open calls: entry time, serial */
    uint32_t g;              /* endpoints: group; open calls: thread */
    int32_t d;               /* endpoints: +1 start, -1 end */
};

struct heap { struct ev *a; size_t n, cap; };

struct ps_life {
    struct ps_sites *sites;
    struct heap ends;        /* endpoints not yet swept */
    struct heap open;        /* calls that may start a block, possibly already ended */
    uint64_t *serial;        /* per thread: serial of its open call, 0 none */
    size_t nserial;
    uint64_t next_serial, late;
};

static void push(struct heap *h, struct ev e)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 64;
        h->a = ps_xrealloc(h->a, h->cap * sizeof(struct ev));
    }
    size_t i = h->n++;
    while (i && h->a[(i - 1) / 2].t > e.t) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = e;
}

static struct ev pop(struct heap *h)
{
    struct ev top = h->a[0], last = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->a[c + 1].t < h->a[c].t)
            c++;
        if (h->a[c].t >= last.t)
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n)
        h->a[i] = last;
    return top;
}

struct ps_life *ps_life_new(struct ps_sites *s)
{
    struct ps_life *l = ps_xcalloc(1, sizeof(*l));
    l->sites = s;
    return l;
}

void ps_life_free(struct ps_life *l)
{
    if (l) {
        free(l->ends.a);
        free(l->open.a);
        free(l->serial);
        free(l);
    }
}

void ps_life_start(struct ps_life *l, uint32_t grp, uint64_t t_alloc, uint64_t size,
                   uint32_t scale)
{
    struct ps_site *g = ps_site_at(l->sites, grp);
    if (!g->n_allocs || t_alloc < g->first_alloc)
        g->first_alloc = t_alloc;
    g->n_allocs += scale;
    g->total_bytes += ps_scaled(size, scale);
    if (size > g->max_size)
        g->max_size = size;
    push(&l->ends, (struct ev){ t_alloc, ps_scaled(size, scale), grp, 1 });
}

void ps_life_end(struct ps_life *l, uint32_t grp, uint64_t t_alloc, uint64_t t_end,
                 uint64_t size, uint32_t scale)
{
    size = ps_scaled(size, scale);
    struct ps_site *g = ps_site_at(l->sites, grp);
    if (t_end < t_alloc)
        t_end = t_alloc;
    if (t_end > g->last_free)
        g->last_free = t_end;
    push(&l->ends, (struct ev){ t_end, size, grp, -1 });
}

void ps_life_call_open(struct ps_life *l, uint32_t thr, uint64_t t)
{
    if (thr >= l->nserial) {
        size_t n = l->nserial ? l->nserial : 16;
        while (n <= thr)
            n *= 2;
        l->serial = ps_xrealloc(l->serial, n * sizeof(uint64_t));
        for (size_t i = l->nserial; i < n; i++)
            l->serial[i] = 0;
        l->nserial = n;
    }
    l->serial[thr] = ++l->next_serial;
    push(&l->open, (struct ev){ t, l->serial[thr], thr, 0 });
    if (l->open.n > 2 * l->nserial + 64) {
        /* entries of ended calls pile up behind one that stays open: keep the open
         * calls only (at most one per thread) and rebuild the heap */
        struct heap old = l->open;
        l->open = (struct heap){ 0 };
        for (size_t i = 0; i < old.n; i++)
            if (l->serial[old.a[i].g] == old.a[i].x)
                push(&l->open, old.a[i]);
        free(old.a);
    }
}

void ps_life_call_close(struct ps_life *l, uint32_t thr)
{
    if (thr < l->nserial)
        l->serial[thr] = 0;
}

int ps_life_open_min(struct ps_life *l, uint64_t *t)
{
    /* entries of calls that ended (or were replaced by a newer call) are dropped here */
    while (l->open.n && l->serial[l->open.a[0].g] != l->open.a[0].x)
        pop(&l->open);
    if (!l->open.n)
        return 0;
    *t = l->open.a[0].t;
    return 1;
}

int ps_life_next(const struct ps_life *l, uint64_t *t)
{
    if (!l->ends.n)
        return 0;
    *t = l->ends.a[0].t;
    return 1;
}

size_t ps_life_queued(const struct ps_life *l) { return l->ends.n; }
uint64_t ps_life_late(const struct ps_life *l) { return l->late; }

/* Apply one endpoint to its group. Its time closes the group's previous time step:
 * only then is the live total a value the group really had (ends first). */
static void apply(struct ps_life *l, const struct ev *e)
{
    struct ps_site *g = ps_site_at(l->sites, e->g);
    if (!g->swept) {
        g->swept = 1;
        g->sweep_t = e->t;
    } else if (e->t > g->sweep_t) {
        if (g->live_bytes > 0 && (uint64_t)g->live_bytes > g->peak)
            g->peak = (uint64_t)g->live_bytes;
        if (g->live_blocks > 0)
            g->live_ns += e->t - g->sweep_t;
        g->sweep_t = e->t;
    } else if (e->t < g->sweep_t) {
        l->late++;                   /* unsorted input: counted at the group's time */
    }
    g->live_bytes += e->d > 0 ? (int64_t)e->x : -(int64_t)e->x;
    g->live_blocks += e->d;
}

void ps_life_sweep(struct ps_life *l, uint64_t t)
{
    while (l->ends.n && l->ends.a[0].t < t) {
        struct ev e = pop(&l->ends);
        apply(l, &e);
    }
}

void ps_life_trim(struct ps_life *l, size_t keep)
{
    while (l->ends.n > keep) {
        struct ev e = pop(&l->ends);
        apply(l, &e);
    }
}

void ps_life_finish(struct ps_life *l)
{
    while (l->ends.n) {
        struct ev e = pop(&l->ends);
        apply(l, &e);
    }
    for (size_t i = 0; i < l->sites->n; i++) {
        struct ps_site *g = &l->sites->e[i];
        if (g->live_bytes > 0 && (uint64_t)g->live_bytes > g->peak)
            g->peak = (uint64_t)g->live_bytes;
    }
}
