/* ps_model.c — fuse the event lines of one thread at one time, then apply the
 * allocation and sample semantics of docs/formats.md §3 to each fused group.
 *
 * This file: fusion, the threads and tasks, the calls' semantics and the lifetimes'
 * sweep; a group's samples and page faults are ps_samples.c's. Both work on the
 * model's state (ps_state.h): each thread's pending group, its open call, each task's
 * live blocks.
 *
 * Fusion: Extrae splits one call over lines with the same (task, thread, time) and
 * puts a state record between them (size on one line, the 40000040 call on the
 * next; the returned pointer before the 40000040 end). So each thread keeps one
 * pending group; it is processed when the trace time moves on (any thread; records
 * are time-sorted, so nothing can join it later) or at EOF. With --per-thread-time
 * only that thread's own time moving on closes its group, for traces sorted per
 * thread but not globally.
 *
 * Calls: an entry takes the sequence number of the row its block will have (so rows
 * come out in entry-time order even when calls of several threads overlap); the row
 * is emitted when the block ends. Frees act at their entry (t_free is the free's
 * entry time, as in the Extrae fixture's ground truth); reallocs act at their end,
 * because only the returned pointer says whether the old block survived, and end the
 * old block at their entry. At one time, all calls are applied before any sample, so
 * a sample taken at a free's time is outside the freed block.
 *
 * Lifetimes: every block start and end goes to ps_life.c, which sweeps them per
 * (task, site) in time order. Each time the trace time moves on, endpoints before
 * the new time are swept, unless a call still open (whose block, when it ends, will
 * start at its entry time) holds them back. With --per-thread-time the bound is the
 * earliest time any thread can still produce, checked when enough endpoints wait. */
#include "ps_state.h"

#include <stdlib.h>
#include <string.h>

struct ps_model *ps_model_new(const struct ps_header *h, struct ps_rows *rows,
                              struct ps_stats *st, int per_thread_time, int use_lookahead,
                              unsigned profile_shift, unsigned phases)
{
    struct ps_model *m = ps_xcalloc(1, sizeof(*m));
    m->h = h;
    m->rows = rows;
    m->st = st;
    m->per_thread = per_thread_time;
    m->use_lookahead = use_lookahead;
    m->sites = ps_sites_new();
    m->life = ps_life_new(m->sites);
    m->prof = ps_profile_new(profile_shift);
    m->cnt = ps_counters_new(h->end_ns, phases);
    m->next_try = 4096;
    m->hcap = 64;
    m->hash = ps_xcalloc(m->hcap, sizeof(uint32_t));
    m->last_key = ~0ull;
    return m;
}

void ps_model_free(struct ps_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nthr; i++)
        free(m->thr[i].g);
    free(m->thr);
    for (size_t i = 0; i < m->ntasks; i++)
        ps_map_free(m->tasks[i].map);
    free(m->tasks);
    free(m->hash);
    free(m->pend);
    ps_life_free(m->life);
    ps_profile_free(m->prof);
    ps_counters_free(m->cnt);
    ps_sites_free(m->sites);
    free(m);
}

struct ps_sites *ps_model_sites(struct ps_model *m) { return m->sites; }
uint64_t ps_model_peak_live(struct ps_model *m) { return m->live.peak; }
uint64_t ps_model_late_endpoints(struct ps_model *m) { return ps_life_late(m->life); }
struct ps_profile *ps_model_profile(struct ps_model *m) { return m->prof; }
struct ps_counters *ps_model_counters(struct ps_model *m) { return m->cnt; }

static size_t hslot(const uint32_t *hash, size_t cap, const struct thr *thr, uint64_t key)
{
    size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
    while (hash[i] && thr[hash[i] - 1].key != key)
        i = (i + 1) & (cap - 1);
    return i;
}

static uint32_t task_index(struct ps_model *m, uint64_t app, uint64_t task)
{
    uint64_t key = app << PS_ID_BITS | task;
    for (size_t i = 0; i < m->ntasks; i++)     /* only on a thread's first record */
        if (m->tasks[i].key == key)
            return (uint32_t)i;
    if (m->ntasks == m->captasks) {
        m->captasks = m->captasks ? m->captasks * 2 : 16;
        m->tasks = ps_xrealloc(m->tasks, m->captasks * sizeof(struct task));
    }
    /* tasks are numbered across applications, as the header lists them */
    uint32_t task_no = m->h->task_base[app - 1] + (uint32_t)task;
    m->tasks[m->ntasks] = (struct task){ .key = key, .map = ps_map_new(&m->live),
                                         .task_no = task_no,
                                         .grp0 = ps_sites_id(m->sites, task_no, 0) };
    m->st->tasks_seen = (uint32_t)(m->ntasks + 1);
    return (uint32_t)m->ntasks++;
}

/* Ids must be within what the header declares (Paraver refuses the trace otherwise). */
static int check_ids(const struct ps_header *h, uint64_t app, uint64_t task, uint64_t thread,
                     char *err, size_t errlen)
{
    if (app > h->napps) {
        snprintf(err, errlen, "application %llu is beyond the header's %u application(s)",
                 (unsigned long long)app, h->napps);
        return -1;
    }
    uint32_t base = h->task_base[app - 1];
    uint32_t ntasks = (app < h->napps ? h->task_base[app] : h->ntasks) - base;
    if (task > ntasks) {
        snprintf(err, errlen, "task %llu is beyond the header's %u task(s) of application %llu",
                 (unsigned long long)task, ntasks, (unsigned long long)app);
        return -1;
    }
    if (thread > h->task_threads[base + task - 1]) {
        snprintf(err, errlen, "thread %llu is beyond the header's %u thread(s) of task %llu",
                 (unsigned long long)thread, h->task_threads[base + task - 1],
                 (unsigned long long)task);
        return -1;
    }
    return 0;
}

/* The thread of these ids; NULL (message in err) when the header has no such thread. */
static struct thr *thread_of(struct ps_model *m, uint64_t app, uint64_t task, uint64_t thread,
                             char *err, size_t errlen)
{
    uint64_t key = (app << PS_ID_BITS | task) << PS_ID_BITS | thread;
    if (PS_LIKELY(key == m->last_key))
        return &m->thr[m->last_idx];
    size_t i = hslot(m->hash, m->hcap, m->thr, key);
    if (!m->hash[i]) {
        if (check_ids(m->h, app, task, thread, err, errlen) != 0)
            return NULL;
        if ((m->nthr + 1) * 2 > m->hcap) {
            size_t ncap = m->hcap * 2;
            uint32_t *nh = ps_xcalloc(ncap, sizeof(uint32_t));
            for (size_t k = 0; k < m->nthr; k++)
                nh[hslot(nh, ncap, m->thr, m->thr[k].key)] = (uint32_t)(k + 1);
            free(m->hash);
            m->hash = nh;
            m->hcap = ncap;
            i = hslot(m->hash, m->hcap, m->thr, key);
        }
        if (m->nthr == m->capthr) {
            m->capthr = m->capthr ? m->capthr * 2 : 16;
            m->thr = ps_xrealloc(m->thr, m->capthr * sizeof(struct thr));
        }
        struct thr *t = &m->thr[m->nthr];
        memset(t, 0, sizeof(*t));
        t->key = key;
        t->task = task_index(m, app, task);
        t->thread_no = (uint32_t)thread;
        m->hash[i] = (uint32_t)++m->nthr;
        m->st->threads_seen = (uint32_t)m->nthr;
    }
    m->last_key = key;
    m->last_idx = m->hash[i] - 1;
    return &m->thr[m->last_idx];
}

/* ------------------------------------------------------------ semantics */

static void emit_row(struct ps_rows *rows, const struct ps_block *b, int64_t t_free)
{
    struct ps_row r = { b->seq, b->start, b->size, b->t_alloc, t_free, b->grp, b->thread,
                        b->scale };
    ps_rows_add(rows, &r);
}

/* End a live block of task tk at time t: its row is complete. */
static int end_block(struct ps_model *m, struct task *tk, uint64_t ptr, uint64_t t)
{
    struct ps_block b;
    if (!ps_map_take(tk->map, ptr, &b))
        return 0;
    if (b.start == tk->pc_start)
        tk->pc_valid = 0;
    emit_row(m->rows, &b, (int64_t)t);
    ps_life_end(m->life, b.grp, b.t_alloc, t, b.size, b.scale);
    return 1;
}

/* A new live block. Blocks of one process cannot overlap, so a live block the new
 * one collides with was freed by a call the trace does not show (a free below the
 * tracing threshold, a lost record): end it where the new block begins. */
static void start_block(struct ps_model *m, struct thr *th, uint64_t ptr)
{
    struct task *tk = &m->tasks[th->task];
    const struct ps_block *old;
    while ((old = ps_map_conflict(tk->map, ptr, th->c_size)) != NULL) {
        end_block(m, tk, old->start, th->c_t0);
        m->st->evictions++;
    }
    struct ps_block b = { .start = ptr, .size = th->c_size, .seq = th->c_seq,
                          .t_alloc = th->c_t0,
                          .grp = ps_sites_id(m->sites, tk->task_no, th->c_site),
                          .thread = th->thread_no, .scale = th->c_scale ? th->c_scale : 1 };
    m->st->allocs++;
    if (th->c_scale)
        ps_site_at(m->sites, b.grp)->sampled_blocks++;
    ps_map_insert(tk->map, &b);
    ps_life_start(m->life, b.grp, b.t_alloc, b.size, b.scale);
}

/* Call kinds to CALL_*: hmtune's exact kind (41000000) when the group has it, else
 * Extrae's 40000040, whose values past 5 are memkind and kmpc variants. */
static int call_class(uint64_t kind, int exact)
{
    if (exact) {
        switch (kind) {
        case HM_CALL_KIND_FREE: return CALL_FREE;
        case HM_CALL_KIND_REALLOC: case HM_CALL_KIND_REALLOCARRAY: return CALL_REALLOC;
        case HM_CALL_KIND_MALLOC: case HM_CALL_KIND_CALLOC: case HM_CALL_KIND_POSIX_MEMALIGN:
        case HM_CALL_KIND_ALIGNED_ALLOC: case HM_CALL_KIND_MEMALIGN: case HM_CALL_KIND_VALLOC:
        case HM_CALL_KIND_PVALLOC:
            return CALL_ALLOC;
        default: return CALL_NONE;
        }
    }
    switch (kind) {
    case HM_CALL_FREE: case HM_CALL_MEMKIND_FREE: case HM_CALL_KMPC_FREE: return CALL_FREE;
    case HM_CALL_REALLOC: case HM_CALL_MEMKIND_REALLOC: case HM_CALL_KMPC_REALLOC:
        return CALL_REALLOC;
    case HM_CALL_MALLOC: case HM_CALL_CALLOC: case HM_CALL_POSIX_MEMALIGN:
    case HM_CALL_MEMKIND_MALLOC: case HM_CALL_MEMKIND_CALLOC: case HM_CALL_MEMKIND_POSIX_MEMALIGN:
    case HM_CALL_KMPC_MALLOC: case HM_CALL_KMPC_CALLOC: case HM_CALL_KMPC_ALIGNED_MALLOC:
        return CALL_ALLOC;
    default: return CALL_NONE;
    }
}

static void call_entry(struct ps_model *m, struct thr *th, uint64_t t, int cls, uint64_t size,
                       uint64_t in, uint64_t site, uint64_t scale)
{
    if (th->call != CALL_NONE)
        m->st->nested_calls++;            /* the open one never ended: drop it */
    th->call = cls;
    th->c_t0 = t;
    th->c_scale = scale > UINT32_MAX ? UINT32_MAX : (uint32_t)scale;
    th->c_size = size;
    th->c_in = in;
    if (cls == CALL_FREE) {
        if (in && !end_block(m, &m->tasks[th->task], in, t))
            m->st->unknown_frees++;
        else if (in)
            m->st->frees++;
        return;
    }
    if (cls == CALL_NONE)
        return;
    /* site 0 or none: Extrae's "unknown dynamic object" (1) */
    th->c_site = site ? site : 1;
    th->c_seq = ps_rows_seq(m->rows);    /* rows are ordered by call entry */
    ps_life_call_open(m->life, (uint32_t)(th - m->thr), t);
}

static void call_end(struct ps_model *m, struct thr *th, int has_ret, uint64_t ret)
{
    int cls = th->call;
    th->call = CALL_NONE;
    if (cls == CALL_ALLOC || cls == CALL_REALLOC)
        ps_life_call_close(m->life, (uint32_t)(th - m->thr));
    if (cls == CALL_NONE) {
        m->st->unmatched_ends++;
        return;
    }
    if (cls == CALL_FREE)
        return;
    if (!has_ret)
        ret = 0;
    struct task *tk = &m->tasks[th->task];
    if (cls == CALL_REALLOC && th->c_in) {
        if (ret) {                          /* moved or resized: the old block ends */
            if (!end_block(m, tk, th->c_in, th->c_t0))
                m->st->unknown_realloc_inputs++;
            else
                m->st->frees++;
        } else if (th->c_size == 0) {       /* realloc(p, 0) -> NULL: a free */
            if (!end_block(m, tk, th->c_in, th->c_t0))
                m->st->unknown_frees++;
            else
                m->st->frees++;
            return;
        }
    }
    if (!ret) {                             /* failed: no block (the old one stays) */
        m->st->failed_calls++;
        return;
    }
    start_block(m, th, ret);
}

/* The event types group_calls handles; the others are samples' or not ours. */
_Static_assert(HM_EV_SIZE == HM_EV_CALL + 1 && HM_EV_IN_PTR == HM_EV_CALL + 2 &&
               HM_EV_OUT_PTR == HM_EV_CALL + 3, "the call's four types are consecutive");
static inline int is_call_type(uint64_t type)
{
    return type - HM_EV_CALL < 4u ||       /* HM_EV_CALL, _SIZE, _IN_PTR, _OUT_PTR */
           type == HM_EV_CALL_KIND || type == HM_EV_SITE || type == HM_EV_SAMPLER ||
           type == HM_EV_LOST_SAMPLES || type == HM_EV_CALL_SCALE;
}

/* A group's calls: an end and an entry in one group mean the previous call ended as
 * the next began. */
static void group_calls(struct ps_model *m, struct thr *th)
{
    int entry = 0, end = 0, has_ret = 0;
    uint64_t kind = 0, exact = 0, size = 0, in = 0, ret = 0, site = 0, scale = 0;
    for (size_t i = 0; i < th->gn; i++) {
        uint64_t v = th->g[i].value;
        switch (th->g[i].type) {
        case HM_EV_CALL: if (v) { entry = 1; kind = v; } else end = 1; break;
        case HM_EV_CALL_KIND: if (v) exact = v; break;
        case HM_EV_SIZE: size = v; break;
        case HM_EV_IN_PTR: in = v; break;
        case HM_EV_OUT_PTR: ret = v; has_ret = 1; break;
        case HM_EV_SITE: site = v; break;
        case HM_EV_CALL_SCALE: scale = v; break;  /* small-call sampling: blocks it stands for */
        case HM_EV_SAMPLER:
            if (!m->st->has_sampler) {
                m->st->has_sampler = 1;
                m->st->sampler = v;
            }
            break;
        case HM_EV_LOST_SAMPLES: m->st->lost_samples += v; break;
        default: break;                     /* other types are legal and not ours */
        }
    }
    if (end)
        call_end(m, th, has_ret, ret);
    if (entry)
        call_entry(m, th, th->gtime, call_class(exact ? exact : kind, exact != 0), size, in, site,
                   scale);
}

/* Calls before samples: a block lives on [t_alloc, t_free), so a sample taken at the
 * time of a free (the free's entry) is outside the block, and one taken when an
 * allocation returns is inside the new block. */
static void process_group(struct ps_model *m, struct thr *th)
{
    m->st->groups++;
    if (th->gcalls)
        group_calls(m, th);
    ps_group_samples(m, th);
    th->gn = 0;
    th->pending = th->gcalls = 0;
}

/* Every group at the current time: all their calls, then all their samples, so the
 * order of threads' lines at one time does not matter. */
static void flush_all(struct ps_model *m)
{
    for (size_t i = 0; i < m->npend; i++) {
        struct thr *th = &m->thr[m->pend[i]];
        if (th->pending && th->gcalls)
            group_calls(m, th);
    }
    for (size_t i = 0; i < m->npend; i++) {
        struct thr *th = &m->thr[m->pend[i]];
        if (!th->pending)
            continue;
        m->st->groups++;
        ps_group_samples(m, th);
        th->gn = 0;
        th->pending = th->gcalls = 0;
    }
    m->npend = 0;
}

/* Sweep the endpoints before `bound` (no later one can be earlier), held back by
 * the entry of any call still open. */
#define PS_LIFE_CAP (1u << 18)        /* queued endpoints (6 MiB) before a forced sweep */

static void sweep_to(struct ps_model *m, uint64_t bound)
{
    uint64_t t;
    if (ps_life_next(m->life, &t) && t < bound) {
        if (ps_life_open_min(m->life, &t) && t < bound)
            bound = t;
        ps_life_sweep(m->life, bound);
    }
    if (PS_UNLIKELY(ps_life_queued(m->life) > PS_LIFE_CAP))
        ps_life_trim(m->life, PS_LIFE_CAP / 2);     /* held back for too long */
}

/* --per-thread-time: each thread's records are sorted, so no thread can produce an
 * endpoint before its last time. Checked only when the queue has doubled, since it
 * visits every thread (a thread that stops early holds the sweep back). */
static void sweep_per_thread(struct ps_model *m)
{
    if (ps_life_queued(m->life) < m->next_try)
        return;
    uint64_t bound = UINT64_MAX;
    for (size_t i = 0; i < m->nthr; i++)
        if (m->thr[i].has_time && m->thr[i].last_time < bound)
            bound = m->thr[i].last_time;
    sweep_to(m, bound);
    m->next_try = ps_life_queued(m->life) * 2 > 4096 ? ps_life_queued(m->life) * 2 : 4096;
}

int ps_model_event(struct ps_model *m, const struct ps_record *r, char *err, size_t errlen)
{
    uint64_t app = r->v[1], task = r->v[2], thread = r->v[3], time;
    if (PS_UNLIKELY(app - 1 >= PS_ID_MAX || task - 1 >= PS_ID_MAX || thread - 1 >= PS_ID_MAX)) {
        snprintf(err, errlen, "application, task or thread id out of range (1..%u)", PS_ID_MAX);
        return -1;
    }
    if (PS_UNLIKELY(__builtin_mul_overflow(r->v[4], m->h->scale, &time))) {
        snprintf(err, errlen, "time out of range");
        return -1;
    }
    struct thr *th = thread_of(m, app, task, thread, err, errlen);
    if (PS_UNLIKELY(!th))
        return -1;
    if (m->per_thread) {
        if (th->pending && th->gtime != time)
            process_group(m, th);
        if (th->has_time && time < th->last_time)
            m->st->time_regressions++;
        th->last_time = time;
        th->has_time = 1;
        sweep_per_thread(m);
    } else if (!m->has_now || time != m->now) {
        if (m->has_now && time < m->now)
            m->st->time_regressions++;
        flush_all(m);
        m->now = time;
        m->has_now = 1;
        sweep_to(m, time);
    }
    if (!th->pending) {
        th->pending = 1;
        th->gtime = time;
        if (!m->per_thread) {
            if (m->npend == m->cappend) {
                m->cappend = m->cappend ? m->cappend * 2 : 16;
                m->pend = ps_xrealloc(m->pend, m->cappend * sizeof(uint32_t));
            }
            m->pend[m->npend++] = (uint32_t)(th - m->thr);
        }
    }
    if (th->gn + r->npairs > th->gcap) {
        th->gcap = (th->gn + r->npairs) * 2;
        th->g = ps_xrealloc(th->g, th->gcap * sizeof(struct ps_pair));
    }
    const uint64_t *v = r->v + 5;          /* type, value, type, value, ... */
    int calls = 0;
    for (size_t i = 0; i < r->npairs; i++) {
        th->g[th->gn + i] = (struct ps_pair){ v[2 * i], v[2 * i + 1] };
        calls |= is_call_type(v[2 * i]);
    }
    th->gcalls |= calls;
    th->gn += r->npairs;
    return 0;
}

struct never_freed { struct ps_model *m; uint64_t end; };

static void end_at_trace_end(void *ctx, const struct ps_block *b)
{
    const struct never_freed *nf = ctx;
    emit_row(nf->m->rows, b, -1);         /* never freed */
    ps_life_end(nf->m->life, b->grp, b->t_alloc, nf->end, b->size, b->scale);
}

void ps_model_finish(struct ps_model *m, uint64_t end_ns)
{
    flush_all(m);
    for (size_t i = 0; i < m->nthr; i++) {
        if (m->thr[i].pending)
            process_group(m, &m->thr[i]);
        if (m->thr[i].call != CALL_NONE)
            m->st->unterminated_calls++;
    }
    /* blocks never freed are live until the trace end; their rows keep t_free -1 */
    struct never_freed nf = { m, end_ns };
    for (size_t i = 0; i < m->ntasks; i++)
        ps_map_each(m->tasks[i].map, end_at_trace_end, &nf);
    ps_life_finish(m->life);
    ps_profile_snapshot(m->prof, m->sites);
    m->st->small_capped = ps_sites_cap(m->sites, &m->st->small_unsupported);
}
