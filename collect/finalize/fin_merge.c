/* fin_merge.c — merge every thread of every process by time; fin_prv.c writes the
 * .prv records. Memory is bounded by the number of streams, sites and live objects,
 * not by the trace length: each stream is read chunk by chunk through a heap. */
#include "fin_prv.h"

#include <stdlib.h>
#include <string.h>

/* ---- sites -------------------------------------------------------------------- */

static uint32_t site_for(struct fin_ctx *c, struct fin_proc *p, const uint64_t *packed, int n)
{
    if (n <= 0)
        return 1;                                   /* unknown dynamic object */
    struct fin_frame fr[HM_KEY_MAX_FRAMES];
    char key[HM_KEY_MAX_FRAMES * 80 + 1];
    size_t kl = 0;
    if (n > HM_KEY_MAX_FRAMES)
        n = HM_KEY_MAX_FRAMES;
    for (int i = 0; i < n; i++) {
        uint32_t mid = (uint32_t)(packed[i] >> HM_KEY_OFFSET_BITS);
        fr[i].off = packed[i] & ((1ull << HM_KEY_OFFSET_BITS) - 1);
        fr[i].path = mid < p->nmods ? p->mod_path[mid] : NULL;
        int w = snprintf(key + kl, sizeof(key) - kl, "%s%s" HM_KEY_OFFSET "%llx",
                         i ? HM_KEY_SEP : "", fr[i].path ? fr[i].path : HM_KEY_UNKNOWN,
                         (unsigned long long)fr[i].off);
        if (w < 0 || (size_t)w >= sizeof(key) - kl)
            break;
        kl += (size_t)w;
    }
    key[kl] = 0;
    struct fin_site *s;
    uint32_t id = fin_key_id(c, key, &s);
    if (s) {
        s->nframes = n;
        s->frames = fin_xmalloc((size_t)n * sizeof(*fr));
        memcpy(s->frames, fr, (size_t)n * sizeof(*fr));
    }
    return id;
}

/* ---- the merge ----------------------------------------------------------------- */

static struct fin_cur *g_cur;     /* parallel to the stream list */

static void advance(struct fin_ctx *c, struct fin_stream *s, struct fin_cur *u)
{
    (void)c;
    if (u->what == NX_ENTRY) {
        u->what = NX_EXIT;
        u->t_next = u->call.t1;
        return;
    }
    const struct hmr_hdr *r;
    while (fin_stream_next(s, &r)) {
        uint32_t len = (uint32_t)r->len8 * 8;
        switch (r->type) {
        case HMR_THREAD:
            if (len >= sizeof(struct hmr_thread)) {
                const struct hmr_thread *t = (const void *)r;
                s->tid = t->tid;
                if (t->stack_hi > t->stack_lo) {
                    s->stack_lo = t->stack_lo;
                    s->stack_hi = t->stack_hi;
                }
                if (!s->started) {
                    u->what = NX_START;
                    u->t_next = fin_ns(s->proc, t->t);
                    return;
                }
            }
            break;
        case HMR_SAMPLE:
            if (len < HMR_SAMPLE_V1_BYTES)
                break;
            /* a record without iclass (an older tracer's) has class 0 */
            memset(&u->sample, 0, sizeof(u->sample));
            memcpy(&u->sample, r, len < sizeof(u->sample) ? len : sizeof(u->sample));
            u->what = NX_SAMPLE;
            u->t_next = fin_rec_ns(s->proc, r);
            return;
        case HMR_COUNTERS:
            if (r->kind > HMR_MAX_COUNTERS || r->kind != s->proc->ncnt ||
                len < HMR_COUNTERS_BYTES(r->kind))
                break;
            memset(&u->cnt, 0, sizeof(u->cnt));
            memcpy(&u->cnt, r, HMR_COUNTERS_BYTES(r->kind));
            u->what = NX_COUNTERS;
            u->t_next = fin_ns(s->proc, u->cnt.t);
            return;
        case HMR_STACK: {
            uint32_t id = r->aux;
            if (id > 100000000u || len < sizeof(*r) + (uint32_t)r->kind * 8)
                break;
            if (id >= s->nstack) {
                size_t n = (size_t)id * 2 + 16;
                s->stack_site = fin_xrealloc(s->stack_site, n * sizeof(uint32_t));
                memset(s->stack_site + s->nstack, 0, (n - s->nstack) * sizeof(uint32_t));
                s->nstack = n;
            }
            s->stack_site[id] = site_for(c, s->proc, (const uint64_t *)(r + 1), r->kind);
            break;
        }
        case HMR_CALL:
        case HMR_SCALL:
            if (len < (r->type == HMR_SCALL ? sizeof(struct hmr_scall) : sizeof(struct hmr_call)))
                break;
            /* a sampled call is a CALL record with its weight after it */
            memcpy(&u->call, r, sizeof(u->call));
            u->weight = 0;
            if (r->type == HMR_SCALL) {
                const struct hmr_scall *sc = (const void *)r;
                u->weight = sc->weight ? sc->weight : 1;
            }
            u->call.t0 = fin_ns(s->proc, u->call.t0);
            u->call.t1 = fin_ns(s->proc, u->call.t1);
            u->site = r->aux < s->nstack && s->stack_site[r->aux] ? s->stack_site[r->aux] : 1;
            u->what = NX_ENTRY;
            u->t_next = u->call.t0;
            return;
        case HMR_FREE: {
            if (len < sizeof(struct hmr_free))
                break;
            const struct hmr_free *f = (const void *)r;
            memset(&u->call, 0, sizeof(u->call));
            u->call.h = f->h;
            u->call.h.kind = HMK_FREE;
            u->call.t0 = fin_ns(s->proc, f->t0);
            u->call.t1 = fin_ns(s->proc, f->t1);
            u->call.ptr_in = f->ptr;
            u->site = 0;
            u->weight = 0;
            u->what = NX_ENTRY;
            u->t_next = u->call.t0;
            return;
        }
        case HMR_SCOST:
            if (len >= sizeof(struct hmr_scost))
                memcpy(&s->scost, r, sizeof(s->scost));
            break;
        case HMR_TEND:
            if (len >= sizeof(struct hmr_tend)) {
                const struct hmr_tend *t = (const void *)r;
                s->has_tend = 1;
                s->tracer_tk = t->tracer_tk;
                s->n_calls = t->n_calls;
                s->n_traced = t->n_traced;
                s->n_lost = t->n_lost;
            }
            break;
        default:
            break;
        }
    }
    u->what = NX_DONE;
}

/* heap of stream indices ordered by (t_next, exit before start before entry) */
static struct fin_stream **g_all;
static size_t *g_heap, g_nheap;

static int before(size_t a, size_t b)
{
    const struct fin_cur *x = &g_cur[a], *y = &g_cur[b];
    if (x->t_next != y->t_next)
        return x->t_next < y->t_next;
    int px = x->what == NX_EXIT ? 0 : x->what == NX_START ? 1 : 2;
    int py = y->what == NX_EXIT ? 0 : y->what == NX_START ? 1 : 2;
    if (px != py)
        return px < py;
    return a < b;
}

static void heap_push(size_t v)
{
    size_t i = g_nheap++;
    g_heap[i] = v;
    while (i && before(g_heap[i], g_heap[(i - 1) / 2])) {
        size_t p = (i - 1) / 2, t = g_heap[p];
        g_heap[p] = g_heap[i];
        g_heap[i] = t;
        i = p;
    }
}

static size_t heap_pop(void)
{
    size_t top = g_heap[0];
    g_heap[0] = g_heap[--g_nheap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < g_nheap && before(g_heap[l], g_heap[m])) m = l;
        if (r < g_nheap && before(g_heap[r], g_heap[m])) m = r;
        if (m == i)
            break;
        size_t t = g_heap[m];
        g_heap[m] = g_heap[i];
        g_heap[i] = t;
        i = m;
    }
    return top;
}

/* One merge of every stream, through fin_prv_emit. */
static void merge(struct fin_ctx *c, struct fin_out *o, size_t nst)
{
    for (size_t i = 0; i < nst; i++) {
        advance(c, g_all[i], &g_cur[i]);
        if (g_cur[i].what != NX_DONE)
            heap_push(i);
    }
    while (g_nheap) {
        size_t i = heap_pop();
        fin_prv_emit(c, o, g_all[i], &g_cur[i]);
        advance(c, g_all[i], &g_cur[i]);
        if (g_cur[i].what != NX_DONE)
            heap_push(i);
    }
}

/* The first pass (c->planning): the same merge, so that samples meet the same live
 * blocks, writing nothing; it feeds fin_kinds. Then every process and stream is put
 * back as it was before it (the counters it moved, the cursors), keeping the buffers
 * it grew, and the live blocks start again empty. */
static void plan(struct fin_ctx *c, size_t nst)
{
    struct fin_proc *saved = fin_xmalloc((c->nprocs + 1) * sizeof(*saved));
    memcpy(saved, c->procs, c->nprocs * sizeof(*saved));
    struct fin_stream *ss = fin_xmalloc((nst + 1) * sizeof(*ss));
    for (size_t i = 0; i < nst; i++)
        ss[i] = *g_all[i];
    char scratch[4096];
    struct fin_out o = { NULL, scratch, 0, sizeof(scratch), 0 };
    c->planning = 1;
    merge(c, &o, nst);
    c->planning = 0;
    fin_kinds_decide();
    for (size_t i = 0; i < c->nprocs; i++) {
        fin_live_free(c->procs[i].live);
        c->procs[i] = saved[i];
        c->procs[i].live = fin_live_new();
    }
    for (size_t i = 0; i < nst; i++) {
        struct fin_stream *s = g_all[i];
        unsigned char *buf = s->buf;
        uint32_t *stack_site = s->stack_site;
        size_t nstack = s->nstack;
        *s = ss[i];
        s->buf = buf;
        s->stack_site = stack_site;
        s->nstack = nstack;
        s->ci = 0;
        s->blen = s->bpos = 0;
    }
    for (size_t i = 0; i < c->nsites; i++)
        c->sites[i].n_allocs = 0;
    free(ss);
    free(saved);
}

int fin_write_prv(struct fin_ctx *c, const char *prv_path)
{
    size_t nst = 0;
    for (size_t i = 0; i < c->nprocs; i++)
        for (size_t k = 0; k < c->procs[i].nstreams; k++)
            if (c->procs[i].streams[k].thread > 0)
                nst++;
    g_all = fin_xmalloc((nst + 1) * sizeof(*g_all));
    g_cur = fin_xmalloc((nst + 1) * sizeof(*g_cur));
    g_heap = fin_xmalloc((nst + 1) * sizeof(*g_heap));
    g_nheap = 0;
    size_t k = 0;
    for (size_t i = 0; i < c->nprocs; i++) {
        struct fin_proc *p = &c->procs[i];
        p->live = fin_live_new();
        for (size_t j = 0; j < p->nstreams; j++)
            if (p->streams[j].thread > 0)
                g_all[k++] = &p->streams[j];
    }
    plan(c, nst);
    struct fin_out o = { fopen(prv_path, "w"), NULL, 0, 1 << 20, 0 };
    if (!o.f)
        return -1;
    o.buf = fin_xmalloc(o.cap);
    fin_prv_header(c, &o);
    merge(c, &o, nst);
    fin_out_flush(&o);
    if (fclose(o.f) != 0)
        fin_die("cannot write %s: disk full?", prv_path);
    c->bytes_written += o.total;
    free(o.buf);
    return 0;
}
