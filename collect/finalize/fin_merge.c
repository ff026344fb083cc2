/* fin_merge.c — merge every thread of every process by time and write the .prv
 * records. Memory is bounded by the number of streams, sites and live objects,
 * not by the trace length: each stream is read chunk by chunk through a heap. */
#include "fin.h"

#include "hm_util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- sites -------------------------------------------------------------------- */

static uint32_t site_for(struct fin_ctx *c, struct fin_proc *p, const uint64_t *packed, int n)
{
    if (n <= 0)
        return 1;                                   /* unknown dynamic object */
    struct fin_frame fr[64];
    char key[64 * 80 + 1];
    size_t kl = 0;
    if (n > 64)
        n = 64;
    for (int i = 0; i < n; i++) {
        uint32_t mid = (uint32_t)(packed[i] >> 48);
        fr[i].off = packed[i] & ((1ull << 48) - 1);
        fr[i].path = mid < p->nmods ? p->mod_path[mid] : NULL;
        int w = snprintf(key + kl, sizeof(key) - kl, "%s%s+0x%llx", i ? " > " : "",
                         fr[i].path ? fr[i].path : "??", (unsigned long long)fr[i].off);
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

/* ---- output ------------------------------------------------------------------- */

struct out { FILE *f; char *buf; size_t len, cap; uint64_t total; };

static void out_flush(struct out *o)
{
    if (o->len && fwrite(o->buf, 1, o->len, o->f) != o->len)
        fin_die("cannot write the trace: disk full or unwritable output");
    o->total += o->len;
    o->len = 0;
}

static inline void out_u64(struct out *o, uint64_t v)
{
    o->len += hm_fmt_u64(o->buf + o->len, v);
}

static inline void out_ch(struct out *o, char ch) { o->buf[o->len++] = ch; }

/* "<rt>:cpu:1:task:thread:" */
static void out_head(struct out *o, int rt, const struct fin_stream *s)
{
    if (o->len + 512 > o->cap)
        out_flush(o);
    out_u64(o, (uint64_t)rt);
    out_ch(o, ':');
    out_u64(o, (uint64_t)s->cpu);
    out_ch(o, ':');
    out_ch(o, '1');
    out_ch(o, ':');
    out_u64(o, (uint64_t)s->task);
    out_ch(o, ':');
    out_u64(o, (uint64_t)s->thread);
    out_ch(o, ':');
}

static inline void out_ev(struct out *o, uint64_t type, uint64_t value)
{
    out_ch(o, ':');
    out_u64(o, type);
    out_ch(o, ':');
    out_u64(o, value);
}

/* Extrae's 40000040 has five kinds of the C library; ours add the rest under
 * 41000000. fin_pcf.c labels the 40000040 values up to HM_CALL_POSIX_MEMALIGN. */
static int extrae_kind(int k)
{
    switch (k) {
    case HMK_MALLOC: case HMK_VALLOC: case HMK_PVALLOC: return HM_CALL_MALLOC;
    case HMK_FREE: return HM_CALL_FREE;
    case HMK_REALLOC: case HMK_REALLOCARRAY: return HM_CALL_REALLOC;
    case HMK_CALLOC: return HM_CALL_CALLOC;
    default: return HM_CALL_POSIX_MEMALIGN;     /* the aligned kinds */
    }
}

/* ---- the merge ----------------------------------------------------------------- */

enum { NX_DONE = 0, NX_START = 1, NX_ENTRY = 2, NX_EXIT = 3, NX_SAMPLE = 4 };

struct cur {            /* the stream's current call */
    uint64_t t_next;
    int what;
    struct hmr_call call;
    struct hmr_sample sample;
    int drop;
    uint32_t site;
    uint64_t weight;      /* a call of small-call sampling: the calls it stands for; else 0 */
};

static struct cur *g_cur;     /* parallel to the stream list */

static void advance(struct fin_ctx *c, struct fin_stream *s, struct cur *u)
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
            if (len < sizeof(struct hmr_sample))
                break;
            memcpy(&u->sample, r, sizeof(u->sample));
            u->what = NX_SAMPLE;
            u->t_next = fin_rec_ns(s->proc, r);
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
    const struct cur *x = &g_cur[a], *y = &g_cur[b];
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

static uint64_t rel(const struct fin_ctx *c, uint64_t t) { return t > c->t_zero ? t - c->t_zero : 0; }

static enum fin_class classify(struct fin_ctx *c, struct fin_proc *p, uint64_t addr,
                               uint32_t *obj, uint64_t *weight)
{
    *weight = 0;
    *obj = fin_live_find(p->live, addr, NULL, weight);
    if (*obj)
        return FC_HEAP;
    *obj = fin_static_object(c, p, addr);
    if (*obj)
        return FC_STATIC;
    for (size_t k = 0; k < p->nstreams; k++)
        if (addr >= p->streams[k].stack_lo && addr < p->streams[k].stack_hi)
            return FC_STACK;
    return FC_UNKNOWN;
}

/* A sampled minor page fault: its address, the object (site) live there, the faults
 * the sample stands for, the address class; or a count of fault samples lost. */
static void emit_fault(struct fin_ctx *c, struct out *o, struct fin_proc *p,
                       const struct hmr_sample *x)
{
    if (x->h.aux & HMS_LOST) {
        p->n_lost_faults += x->weight;
        out_ev(o, HM_EV_LOST_FAULTS, x->weight);
        out_ch(o, '\n');
        return;
    }
    uint32_t obj = 0;
    enum fin_class cls = FC_NOADDR;
    if (x->h.aux & HMS_ADDR_OK) {
        uint64_t scale;                 /* faults are not scaled: they are counted once */
        cls = classify(c, p, x->addr, &obj, &scale);
        out_ev(o, HM_EV_FAULT_ADDR, x->addr);
        if (obj)
            out_ev(o, HM_EV_FAULT_OBJECT, obj);
    }
    p->n_fault_samples[cls]++;
    p->n_faults[cls] += x->weight;
    out_ev(o, HM_EV_FAULT_COUNT, x->weight);
    out_ev(o, HM_EV_FAULT_CLASS, cls);
    out_ch(o, '\n');
}

static void emit_sample(struct fin_ctx *c, struct out *o, struct fin_stream *s, struct cur *u)
{
    struct fin_proc *p = s->proc;
    const struct hmr_sample *x = &u->sample;
    uint32_t flags = x->h.aux;
    out_head(o, 2, s);
    out_u64(o, rel(c, u->t_next));
    if (x->h.kind == HMS_SRC_FAULT) {
        emit_fault(c, o, p, x);
        return;
    }
    if (flags & HMS_LOST) {                   /* the kernel dropped this many samples */
        p->n_lost_samples += x->weight;
        out_ev(o, HM_EV_LOST_SAMPLES, x->weight);
        out_ch(o, '\n');
        return;
    }
    uint32_t obj = 0;
    uint64_t weight = 0;
    enum fin_class cls = FC_NOADDR;
    if (flags & HMS_ADDR_OK) {
        cls = classify(c, p, x->addr, &obj, &weight);
        out_ev(o, (flags & HMS_STORE) ? HM_EV_SAMPLE_STORE : HM_EV_SAMPLE_LOAD, x->addr);
        unsigned lvl = (flags >> HMS_LEVEL_SHIFT) & 0xff, hit = (flags >> HMS_HIT_SHIFT) & 3;
        if (lvl)
            out_ev(o, HM_EV_SAMPLE_LEVEL, lvl);
        if (hit)
            out_ev(o, HM_EV_SAMPLE_HIT, hit);
        if (x->h.kind == HMS_SRC_PEBS || x->h.kind == HMS_SRC_IBS)
            out_ev(o, HM_EV_SAMPLE_LATENCY, x->weight);
        if (obj)
            out_ev(o, HM_EV_SAMPLE_OBJECT, obj);
        if (weight)
            out_ev(o, HM_EV_SAMPLE_SCALE, weight);      /* the block stands for weight blocks */
    }
    p->n_samples[cls]++;
    fin_recov_count(&p->recov, flags, cls);
    p->w_samples[cls] += x->weight;
    uint32_t fid, lid;
    fin_sample_code(c, p, x->ip, &fid, &lid);
    out_ev(o, HM_EV_SAMPLE_FUNC, fid);
    out_ev(o, HM_EV_SAMPLE_LINE, lid);
    out_ev(o, HM_EV_SAMPLE_WEIGHT, x->weight);
    out_ev(o, HM_EV_SAMPLE_CLASS, cls);
    int rule = fin_recov_rule(flags);
    if (rule != FR_DIRECT)
        out_ev(o, HM_EV_SAMPLE_RECOVERED, (uint64_t)rule);
    if (rule == FR_AHEAD) {
        out_ev(o, HM_EV_SAMPLE_LOOKAHEAD, (flags >> HMS_LOOK_SHIFT) & 15);
        if (fin_recov_verified(flags))
            out_ev(o, HM_EV_SAMPLE_VERIFIED, fin_recov_verified(flags));
    }
    if (flags >> HMS_WHY_SHIFT)
        out_ev(o, HM_EV_SAMPLE_WHY, flags >> HMS_WHY_SHIFT);
    out_ch(o, '\n');
}

static void emit(struct fin_ctx *c, struct out *o, struct fin_stream *s, struct cur *u)
{
    struct fin_proc *p = s->proc;
    const struct hmr_call *k = &u->call;
    int kind = k->h.kind;
    if (u->what == NX_SAMPLE) {
        emit_sample(c, o, s, u);
        return;
    }
    if (u->what == NX_START) {
        s->started = 1;
        out_head(o, 2, s);
        out_u64(o, rel(c, u->t_next));
        out_ev(o, HM_EV_TID, s->tid);
        if (s->thread == 1) {
            out_ev(o, HM_EV_PID, p->hdr.pid);
            out_ev(o, HM_EV_PPID, p->hdr.ppid);
            if (p->hdr.rank >= 0)
                out_ev(o, HM_EV_RANK, (uint64_t)p->hdr.rank);
            out_ev(o, HM_EV_SAMPLER, (uint64_t)p->sampler);
        }
        out_ch(o, '\n');
        return;
    }
    if (u->what == NX_ENTRY) {
        int is_realloc = kind == HMK_REALLOC || kind == HMK_REALLOCARRAY;
        if (kind == HMK_FREE) {
            u->drop = fin_live_take(p->live, k->ptr_in, 1) == 0;
            if (u->drop)
                p->n_dropped_frees++;
            else
                p->n_frees++;
        } else if (is_realloc) {
            int in_live = fin_live_take(p->live, k->ptr_in, 0) != 0;
            u->drop = !(in_live || k->size >= p->hdr.min_size || u->weight);
            if (!u->drop && in_live && k->ptr_out != k->ptr_in && (k->ptr_out || k->size == 0))
                fin_live_take(p->live, k->ptr_in, 1);
        } else {
            u->drop = 0;
        }
        if (u->drop)
            return;
        if (kind != HMK_FREE) {
            p->n_allocs++;
            if (u->weight) {
                p->n_small++;
                if (u->weight > p->small_weight)
                    p->small_weight = u->weight;
            }
            if (u->site >= FIN_SITE0 && u->site - FIN_SITE0 < c->nsites)
                c->sites[u->site - FIN_SITE0].n_allocs++;
        }
        p->n_events++;
        out_head(o, 1, s);
        out_u64(o, rel(c, k->t0));
        out_ch(o, ':');
        out_u64(o, rel(c, k->t1));
        out_ch(o, ':');
        out_u64(o, kind == HMK_FREE ? 31 : 30);
        out_ch(o, '\n');
        out_head(o, 2, s);
        out_u64(o, rel(c, k->t0));
        out_ev(o, HM_EV_CALL, (uint64_t)extrae_kind(kind));
        out_ev(o, HM_EV_CALL_KIND, (uint64_t)kind);
        if (kind != HMK_FREE) {
            out_ev(o, HM_EV_SIZE, k->size);
            out_ev(o, HM_EV_SITE, u->site);
        }
        if (kind == HMK_FREE || is_realloc)
            out_ev(o, HM_EV_IN_PTR, k->ptr_in);
        if (k->align)
            out_ev(o, HM_EV_ALIGN, k->align);
        if (u->weight)
            out_ev(o, HM_EV_CALL_SCALE, u->weight);
        out_ch(o, '\n');
        return;
    }
    /* NX_EXIT */
    if (u->drop)
        return;
    if (kind != HMK_FREE && k->ptr_out)
        fin_live_put(p->live, k->ptr_out, k->size, u->site, u->weight);
    out_head(o, 2, s);
    out_u64(o, rel(c, k->t1));
    out_ev(o, HM_EV_CALL, HM_CALL_END);
    out_ev(o, HM_EV_CALL_KIND, HM_CALL_KIND_END);
    if (kind != HMK_FREE)
        out_ev(o, HM_EV_OUT_PTR, k->ptr_out);
    out_ch(o, '\n');
}

static void write_header(struct fin_ctx *c, struct out *o)
{
    char date[64] = "01/01/1970 at 00:00";
    time_t secs = (time_t)(c->t_real0 / 1000000000ull);
    struct tm tm;
    if (localtime_r(&secs, &tm))
        strftime(date, sizeof(date), "%d/%m/%Y at %H:%M", &tm);
    o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, "#Paraver (%s):%llu_ns:%d(",
                               date, (unsigned long long)(c->t_end - c->t_zero), c->nnodes);
    for (int n = 0; n < c->nnodes; n++) {
        if (o->len + 64 > o->cap) out_flush(o);
        o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, "%s%d", n ? "," : "", c->node_cpus[n]);
    }
    o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, "):1:%zu(", c->nprocs);
    for (size_t i = 0; i < c->nprocs; i++) {
        if (o->len + 64 > o->cap) out_flush(o);
        struct fin_proc *p = &c->procs[i];
        int nthr = 0;
        for (size_t k = 0; k < p->nstreams; k++)
            if (p->streams[k].thread > 0 && !p->streams[k].merged)
                nthr++;
        o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, "%s%d:%d", i ? "," : "",
                                   nthr, p->node + 1);
    }
    o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, "),0\n");
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
    struct out o = { fopen(prv_path, "w"), NULL, 0, 1 << 20, 0 };
    if (!o.f)
        return -1;
    o.buf = fin_xmalloc(o.cap);
    write_header(c, &o);
    for (size_t i = 0; i < nst; i++) {
        advance(c, g_all[i], &g_cur[i]);
        if (g_cur[i].what != NX_DONE)
            heap_push(i);
    }
    while (g_nheap) {
        size_t i = heap_pop();
        emit(c, &o, g_all[i], &g_cur[i]);
        advance(c, g_all[i], &g_cur[i]);
        if (g_cur[i].what != NX_DONE)
            heap_push(i);
    }
    out_flush(&o);
    if (fclose(o.f) != 0)
        fin_die("cannot write %s: disk full?", prv_path);
    c->bytes_written += o.total;
    free(o.buf);
    return 0;
}
