/* fin_prv.c — the .prv records of the merged streams (fin_merge.c gives them in time
 * order): a thread's start, a call's entry and exit (which update the process's live
 * blocks), a sample with the class and object of its address, a sampled page fault;
 * and the header line. Written through one buffer. */
#include "fin_prv.h"

#include "hm_util.h"

#include <time.h>

/* ---- output ------------------------------------------------------------------- */

void fin_out_flush(struct fin_out *o)
{
    if (o->len && o->f && fwrite(o->buf, 1, o->len, o->f) != o->len)
        fin_die("cannot write the trace: disk full or unwritable output");
    o->total += o->f ? o->len : 0;      /* no file: the merge's first pass */
    o->len = 0;
}

static inline void out_u64(struct fin_out *o, uint64_t v)
{
    o->len += hm_fmt_u64(o->buf + o->len, v);
}

static inline void out_ch(struct fin_out *o, char ch) { o->buf[o->len++] = ch; }

/* "<rt>:cpu:1:task:thread:" */
static void out_head(struct fin_out *o, int rt, const struct fin_stream *s)
{
    if (o->len + 512 > o->cap)
        fin_out_flush(o);
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

static inline void out_ev(struct fin_out *o, uint64_t type, uint64_t value)
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

/* ---- the records -------------------------------------------------------------- */

static uint64_t rel(const struct fin_ctx *c, uint64_t t) { return t > c->t_zero ? t - c->t_zero : 0; }

/* The class of addr and the object holding it; *start: a static's start (where a
 * static holds it, when start is not NULL). */
static enum fin_class classify(struct fin_ctx *c, struct fin_proc *p, uint64_t addr,
                               uint32_t *obj, uint64_t *weight, uint64_t *start)
{
    *weight = 0;
    *obj = fin_live_find(p->live, addr, NULL, weight);
    if (*obj)
        return FC_HEAP;
    *obj = fin_static_object(c, p, addr, start);
    if (*obj)
        return FC_STATIC;
    for (size_t k = 0; k < p->nstreams; k++)
        if (addr >= p->streams[k].stack_lo && addr < p->streams[k].stack_hi)
            return FC_STACK;
    return FC_UNKNOWN;
}

/* A sampled minor page fault: its address, the object (site) live there, the faults
 * the sample stands for, the address class; or a count of fault samples lost. */
static void emit_fault(struct fin_ctx *c, struct fin_out *o, struct fin_proc *p,
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
        cls = classify(c, p, x->addr, &obj, &scale, NULL);
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

static void emit_sample(struct fin_ctx *c, struct fin_out *o, struct fin_stream *s,
                        struct fin_cur *u)
{
    struct fin_proc *p = s->proc;
    const struct hmr_sample *x = &u->sample;
    uint32_t flags = x->h.aux;
    out_head(o, 2, s);
    out_u64(o, rel(c, u->t_next));
    if (c->planning && (x->h.kind == HMS_SRC_FAULT || (flags & HMS_LOST)))
        return;
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
    if (c->planning) {                        /* the first pass: the address sequence */
        if (flags & HMS_ADDR_OK) {
            classify(c, p, x->addr, &obj, &weight, NULL);
            fin_kinds_observe(s->task, s->thread, obj, x->addr);
        }
        return;
    }
    if (flags & HMS_ADDR_OK) {
        uint64_t start = 0;
        cls = classify(c, p, x->addr, &obj, &weight, &start);
        out_ev(o, (flags & HMS_STORE) ? HM_EV_SAMPLE_STORE : HM_EV_SAMPLE_LOAD, x->addr);
        unsigned lvl = (flags >> HMS_LEVEL_SHIFT) & 0xff, hit = (flags >> HMS_HIT_SHIFT) & 3;
        if (lvl)
            out_ev(o, HM_EV_SAMPLE_LEVEL, lvl);
        if (hit)
            out_ev(o, HM_EV_SAMPLE_HIT, hit);
        if (x->h.kind == HMS_SRC_PEBS || x->h.kind == HMS_SRC_IBS)
            out_ev(o, HM_EV_SAMPLE_LATENCY, x->weight);
        /* a look-ahead address's object under a type of its own: 32000007 is what
         * hmtune analyze attributes by default, and what Paraver's configurations count */
        if (obj)
            out_ev(o, (flags & HMS_AHEAD) ? HM_EV_AHEAD_OBJECT : HM_EV_SAMPLE_OBJECT, obj);
        if (weight)
            out_ev(o, HM_EV_SAMPLE_SCALE, weight);      /* the block stands for weight blocks */
        if (cls == FC_STATIC)           /* where in the static: its start is per process */
            out_ev(o, HM_EV_STATIC_OFFSET, x->addr - start);
    }
    p->n_samples[cls]++;
    uint64_t ic = fin_recov_iclass(x);
    fin_recov_count(&p->recov, flags, ic, cls);
    p->w_samples[cls] += x->weight;
    uint32_t fid, lid;
    fin_sample_code(c, p, x->ip, &fid, &lid);
    out_ev(o, HM_EV_SAMPLE_FUNC, fid);
    out_ev(o, HM_EV_SAMPLE_LINE, lid);
    out_ev(o, HM_EV_SAMPLE_WEIGHT, x->weight);
    out_ev(o, HM_EV_SAMPLE_CLASS, cls);
    int rule = fin_recov_rule(flags, ic);
    if (rule != FR_DIRECT)
        out_ev(o, HM_EV_SAMPLE_RECOVERED, (uint64_t)rule);
    if (rule == FR_PRODUCER)
        out_ev(o, HM_EV_SAMPLE_PRODUCER, HMS_BEHIND_DIST(ic));
    if (rule == FR_AHEAD)
        out_ev(o, HM_EV_SAMPLE_LOOKAHEAD, (flags >> HMS_LOOK_SHIFT) & 15);
    if (fin_recov_verified(flags, ic))
        out_ev(o, HM_EV_SAMPLE_VERIFIED, fin_recov_verified(flags, ic));
    if (flags >> HMS_WHY_SHIFT)
        out_ev(o, HM_EV_SAMPLE_WHY, flags >> HMS_WHY_SHIFT);
    unsigned icls = fin_sample_iclass(x);
    unsigned kind = fin_kinds_sample(s->task, s->thread, obj, flags, icls);
    if (kind) {
        out_ev(o, HM_EV_ACCESS_KIND, kind);
        c->n_kind[kind]++;
        c->w_kind[kind] += x->weight;
    }
    if (icls)
        out_ev(o, HM_EV_ACCESS_INSN, icls);
    out_ch(o, '\n');
}

/* A counter reading: the counts since the stream's previous reading, as Extrae
 * writes them (the first with the active set, 41999999). A count that went back (an
 * event set started again) counts from 0. */
static void emit_counters(struct fin_ctx *c, struct fin_out *o, struct fin_stream *s,
                          const struct fin_cur *u)
{
    const struct fin_proc *p = s->proc;
    out_head(o, 2, s);
    out_u64(o, rel(c, u->t_next));
    if (!s->cnt_seen)
        out_ev(o, HMR_HWC_SET, 1);
    for (int i = 0; i < u->cnt.h.kind; i++) {
        uint64_t v = u->cnt.v[i], prev = s->cnt_seen ? s->cnt_prev[i] : 0;
        out_ev(o, hmr_counter_type(p->cnt_code[i]), v >= prev ? v - prev : v);
        s->cnt_prev[i] = v;
    }
    s->cnt_seen = 1;
    s->proc->n_cnt_readings++;
    out_ch(o, '\n');
}

void fin_prv_emit(struct fin_ctx *c, struct fin_out *o, struct fin_stream *s,
                  struct fin_cur *u)
{
    struct fin_proc *p = s->proc;
    const struct hmr_call *k = &u->call;
    int kind = k->h.kind;
    if (u->what == NX_SAMPLE) {
        emit_sample(c, o, s, u);
        return;
    }
    if (u->what == NX_COUNTERS) {
        emit_counters(c, o, s, u);
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

void fin_prv_header(struct fin_ctx *c, struct fin_out *o)
{
    char date[64] = "01/01/1970 at 00:00";
    time_t secs = (time_t)(c->t_real0 / 1000000000ull);
    struct tm tm;
    if (localtime_r(&secs, &tm))
        strftime(date, sizeof(date), "%d/%m/%Y at %H:%M", &tm);
    o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, "#Paraver (%s):%llu_ns:%d(",
                               date, (unsigned long long)(c->t_end - c->t_zero), c->nnodes);
    for (int n = 0; n < c->nnodes; n++) {
        if (o->len + 64 > o->cap) fin_out_flush(o);
        o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, "%s%d", n ? "," : "", c->node_cpus[n]);
    }
    o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, "):1:%zu(", c->nprocs);
    for (size_t i = 0; i < c->nprocs; i++) {
        if (o->len + 64 > o->cap) fin_out_flush(o);
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
