/* fin_main.c — hmtune-finalize RAWDIR -o OUT_STEM [--summary FILE.json] [--quiet]
 *
 * Reads the raw streams libhmtrace.so wrote under RAWDIR and writes OUT_STEM.prv,
 * .pcf and .row. Prints what could not be recovered (processes killed before
 * their end record, truncated chunks) and, with --summary, a JSON summary. */
#include "fin.h"
#include "hm_version.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* First record time (thread start) and the latest time of the last chunk. */
static void prescan(struct fin_stream *s)
{
    const struct hmr_hdr *r;
    s->ci = 0;
    s->blen = s->bpos = 0;
    if (fin_stream_next(s, &r)) {
        s->t_start = fin_rec_ns(s->proc, r);
        if (r->type == HMR_THREAD && r->len8 * 8u >= sizeof(struct hmr_thread))
            s->tid = ((const struct hmr_thread *)r)->tid;
    }
    s->ci = s->nchunks ? s->nchunks - 1 : 0;
    s->blen = s->bpos = 0;
    while (fin_stream_next(s, &r)) {
        uint64_t t = fin_rec_ns(s->proc, r);
        if (t > s->t_last)
            s->t_last = t;
    }
    if (s->tend_tk && fin_ns(s->proc, s->tend_tk) > s->t_last)
        s->t_last = fin_ns(s->proc, s->tend_tk);
    s->ci = 0;
    s->blen = s->bpos = 0;
}

static int cmp_proc(const void *a, const void *b)
{
    const struct fin_proc *x = a, *y = b;
    long long rx = x->hdr.rank < 0 ? LLONG_MAX : x->hdr.rank;
    long long ry = y->hdr.rank < 0 ? LLONG_MAX : y->hdr.rank;
    if (rx != ry)
        return rx < ry ? -1 : 1;
    if (x->hdr.t_start != y->hdr.t_start)
        return x->hdr.t_start < y->hdr.t_start ? -1 : 1;
    return x->hdr.pid < y->hdr.pid ? -1 : x->hdr.pid > y->hdr.pid;
}

static int cmp_stream(const void *a, const void *b)
{
    const struct fin_stream *x = a, *y = b;
    if (x->t_start != y->t_start)
        return x->t_start < y->t_start ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static void layout(struct fin_ctx *c)
{
    qsort(c->procs, c->nprocs, sizeof(*c->procs), cmp_proc);
    c->t_zero = UINT64_MAX;
    c->t_end = 0;
    int cpu = 0;
    for (size_t i = 0; i < c->nprocs; i++) {
        struct fin_proc *p = &c->procs[i];
        p->task = (int)i + 1;
        if (p->hdr.t_start < c->t_zero) {
            c->t_zero = p->hdr.t_start;
            c->t_real0 = p->hdr.t_real;
        }
        if (p->t_end > c->t_end)
            c->t_end = p->t_end;
        for (size_t k = 0; k < p->nstreams; k++) {
            p->streams[k].proc = p;
            if (p->streams[k].nchunks)
                prescan(&p->streams[k]);
        }
        if (p->nstreams > 1)         /* (a process that wrote no stream has none) */
            qsort(p->streams, p->nstreams, sizeof(*p->streams), cmp_stream);
        /* the main thread (tid == pid) is Paraver thread 1 when it traced anything */
        for (size_t k = 1; k < p->nstreams; k++) {
            if (p->streams[k].tid == p->hdr.pid && p->streams[k].nchunks) {
                struct fin_stream m = p->streams[k];
                memmove(&p->streams[1], &p->streams[0], k * sizeof(m));
                p->streams[0] = m;
                break;
            }
        }
        int thr = 0;
        for (size_t k = 0; k < p->nstreams; k++) {
            struct fin_stream *s = &p->streams[k];
            s->proc = p;
            if (!s->nchunks)
                continue;
            s->task = p->task;
            /* a thread's sample stream goes on the thread's own Paraver line */
            struct fin_stream *base = NULL;
            if (s->id & HMR_SAMPLE_STREAM)
                for (size_t b = 0; b < p->nstreams; b++)
                    if (p->streams[b].id == HMR_STREAM_BASE(s->id) && p->streams[b].nchunks)
                        base = &p->streams[b];
            if (base && base->thread) {
                s->merged = 1;
                s->started = 1;
                s->thread = base->thread;
                s->cpu = base->cpu;
            } else if (base) {
                continue;   /* the base is numbered below; this stream is fixed up after */
            } else {
                s->thread = ++thr;
                s->cpu = ++cpu;
            }
            if (s->t_last > c->t_end)
                c->t_end = s->t_last;
            if (s->t_start && s->t_start < c->t_zero)
                c->t_zero = s->t_start;
        }
        for (size_t k = 0; k < p->nstreams; k++) {   /* sample streams sorted before their base */
            struct fin_stream *s = &p->streams[k];
            if (!s->nchunks || s->thread || !(s->id & HMR_SAMPLE_STREAM))
                continue;
            for (size_t b = 0; b < p->nstreams; b++)
                if (p->streams[b].id == HMR_STREAM_BASE(s->id)) {
                    s->merged = 1;
                    s->started = 1;
                    s->thread = p->streams[b].thread;
                    s->cpu = p->streams[b].cpu;
                }
            if (s->t_last > c->t_end)
                c->t_end = s->t_last;
        }
        /* nodes: distinct host names, in task order */
        int node = -1;
        for (int n = 0; n < c->nnodes; n++)
            if (strcmp(c->node_names[n], p->host) == 0)
                node = n;
        if (node < 0) {
            c->node_names = fin_xrealloc(c->node_names, (size_t)(c->nnodes + 1) * sizeof(char *));
            c->node_cpus = fin_xrealloc(c->node_cpus, (size_t)(c->nnodes + 1) * sizeof(int));
            c->node_names[c->nnodes] = fin_xstrdup(p->host);
            c->node_cpus[c->nnodes] = 0;
            node = c->nnodes++;
        }
        p->node = node;
        c->node_cpus[node] += thr;
    }
    c->total_threads = cpu;
    if (c->t_zero == UINT64_MAX)
        c->t_zero = 0;
    if (c->t_end < c->t_zero)
        c->t_end = c->t_zero;
    c->t_end += 1;       /* strictly after the last record (Paramedir drops records at the end) */
}

void fin_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* sep, then ""name": {"heap": N, ..., "no_address": N}": v by enum fin_class, under the
 * keys of the address classes (the values of 41000023, common/trace_values.tsv). */
static void class_json(FILE *f, const char *sep, const char *name, const uint64_t *v)
{
#define CLASS_KEY(value, key, label) [value] = key,
    static const char *const keys[] = { HM_SAMPLE_CLASS_VALUES(CLASS_KEY) };
#undef CLASS_KEY
    fprintf(f, "%s\"%s\": {", sep, name);
    for (int k = FC_HEAP; k <= FC_NOADDR; k++)
        fprintf(f, "%s\"%s\": %llu", k > FC_HEAP ? ", " : "", keys[k],
                (unsigned long long)v[k]);
    fputc('}', f);
}

/* ", fault_samples": {by class}, "faults": {by class}, "lost_fault_samples": N */
static void json_faults(FILE *f, const uint64_t *n, const uint64_t *est, uint64_t lost)
{
    class_json(f, ", ", "fault_samples", n);
    class_json(f, ", ", "faults", est);
    fprintf(f, ", \"lost_fault_samples\": %llu", (unsigned long long)lost);
}

/* The sampler's own cost: time in its handlers, per timer signal. */
static void cost_json(FILE *f, double ns, const uint64_t n[3])
{
    fprintf(f, "{\"handler_ns\": %.0f, \"timer_signals\": %llu, \"traps\": %llu, "
            "\"decodes\": %llu, \"ns_per_signal\": %.0f}", ns, (unsigned long long)n[0],
            (unsigned long long)n[1], (unsigned long long)n[2], n[0] ? ns / (double)n[0] : 0.0);
}

/* ", "weight": {...}": the samples' weights (41000020) by address class. */
static void weight_json(FILE *f, const uint64_t *w)
{
    class_json(f, ", ", "weight", w);
}

static void report(struct fin_ctx *c, const char *summary, const char *stem)
{
    FILE *f = summary ? fopen(summary, "w") : NULL;
    if (summary && !f)
        fin_die("cannot write %s", summary);
    uint64_t allocs = 0, frees = 0, tracer_ns = 0, calls = 0, lost = 0, tbytes = 0;
    uint64_t samples[8] = { 0 }, weights[8] = { 0 }, lost_samples = 0;
    uint64_t small = 0, small_weight = 0;
    uint64_t fsamples[8] = { 0 }, faults[8] = { 0 }, lost_faults = 0;
    const char *sampler = "none", *fault_sampler = "none";
    struct fin_recov recov;
    memset(&recov, 0, sizeof(recov));
    double cost_ns = 0;
    uint64_t cost_n[3] = { 0 };
    if (f)
        fprintf(f, "{\n  \"hmtune\": \"" HMTUNE_VERSION "\",\n  \"trace\": ");
    if (f)
        fin_json_str(f, stem);
    if (f)
        fprintf(f, ",\n  \"processes\": [\n");
    for (size_t i = 0; i < c->nprocs; i++) {
        struct fin_proc *p = &c->procs[i];
        uint64_t ptracer = 0, pcalls = 0, plost = 0, pn[3] = { 0 };
        double pcost = 0;
        int no_tend = 0, gaps = 0, threads = 0;
        for (size_t k = 0; k < p->nstreams; k++) {
            struct fin_stream *s = &p->streams[k];
            if (!s->nchunks)
                continue;
            threads += !s->merged;
            ptracer += (uint64_t)((double)s->tracer_tk * p->ns_per_tick);
            pcalls += s->n_calls;
            plost += s->n_lost;
            no_tend += !s->has_tend;
            gaps += (int)s->seq_gaps;
            pcost += (double)s->scost.handler_tk * p->ns_per_tick;
            pn[0] += s->scost.n_timer;
            pn[1] += s->scost.n_trap;
            pn[2] += s->scost.n_decode;
        }
        cost_ns += pcost;
        for (int k = 0; k < 3; k++)
            cost_n[k] += pn[k];
        for (int k = 0; k < 8; k++) {
            samples[k] += p->n_samples[k];
            fsamples[k] += p->n_fault_samples[k];
            faults[k] += p->n_faults[k];
            weights[k] += p->w_samples[k];
        }
        lost_samples += p->n_lost_samples;
        lost_faults += p->n_lost_faults;
        if (p->fault_name[0] && strncmp(p->fault_name, "none", 4) != 0)
            fault_sampler = p->fault_name;
        fin_recov_add(&recov, &p->recov);
        if (p->sampler_name[0] && strcmp(p->sampler_name, "none") != 0)
            sampler = p->sampler_name;
        allocs += p->n_allocs;
        frees += p->n_frees;
        small += p->n_small;
        small_weight = p->small_weight > small_weight ? p->small_weight : small_weight;
        tracer_ns += ptracer;
        calls += pcalls;
        lost += plost;
        tbytes += p->fsize;
        const char *end = !p->has_end ? "missing"
                          : p->end_kind == HME_EXIT ? "exit"
                          : p->end_kind == HME__EXIT ? "_exit"
                          : p->end_kind == HME_EXEC ? "exec" : "signal";
        if (!p->has_end && !c->quiet)
            fin_warn("process %u (task %d%s): no end record, so it was killed (SIGKILL?) or "
                     "is still running; recovered %llu calls that were written; up to 64 KiB "
                     "of records per thread that were still buffered are lost",
                     p->hdr.pid, p->task, p->hdr.rank >= 0 ? ", MPI rank" : "",
                     (unsigned long long)(p->n_allocs + p->n_frees));
        if ((p->truncated_bytes || p->bad_chunks || gaps) && !c->quiet)
            fin_warn("process %u: %llu damaged bytes at the end of %s, %d missing chunks, %u bad "
                     "records skipped (a full disk or a kill while writing)", p->hdr.pid,
                     (unsigned long long)p->truncated_bytes, p->path, gaps, p->bad_chunks);
        if (plost && !c->quiet)
            fin_warn("process %u: %llu record buffers could not be written (full disk?)",
                     p->hdr.pid, (unsigned long long)plost);
        if (!f)
            continue;
        fprintf(f, "    {\"task\": %d, \"pid\": %u, \"ppid\": %u, \"rank\": %d, \"host\": ",
                p->task, p->hdr.pid, p->hdr.ppid, p->hdr.rank);
        fin_json_str(f, p->host);
        fprintf(f, ", \"exe\": ");
        fin_json_str(f, p->exe);
        fprintf(f, ", \"sampler\": ");
        fin_json_str(f, p->sampler_name[0] ? p->sampler_name : "none");
        class_json(f, ", ", "samples", p->n_samples);
        fprintf(f, ", \"lost_samples\": %llu", (unsigned long long)p->n_lost_samples);
        weight_json(f, p->w_samples);
        fprintf(f, ", \"fault_sampler\": ");
        fin_json_str(f, p->fault_name[0] ? p->fault_name : "none");
        json_faults(f, p->n_fault_samples, p->n_faults, p->n_lost_faults);
        fprintf(f, ", \"address_recovery\": ");
        fin_recov_json(f, &p->recov);
        fprintf(f, ", \"sampler_cost\": ");
        cost_json(f, pcost, pn);
        fprintf(f, ", \"counters\": ");
        fin_counters_json(f, p);
        fprintf(f, ", \"threads\": %d, \"allocs\": %llu, \"frees\": %llu, \"calls_seen\": %llu, "
                "\"tracer_ns\": %llu, \"end\": \"%s\", \"signal\": %d, \"truncated_bytes\": %llu, "
                "\"missing_chunks\": %d, \"bad_records\": %u, \"threads_without_end\": %d, "
                "\"lost_buffers\": %llu, \"raw_bytes\": %llu, \"small_sampled\": %llu, "
                "\"small_weight\": %llu}%s\n",
                threads, (unsigned long long)p->n_allocs, (unsigned long long)p->n_frees,
                (unsigned long long)pcalls, (unsigned long long)ptracer, end, p->end_signo,
                (unsigned long long)p->truncated_bytes, gaps, p->bad_chunks, no_tend,
                (unsigned long long)plost, (unsigned long long)p->fsize,
                (unsigned long long)p->n_small, (unsigned long long)p->small_weight,
                i + 1 < c->nprocs ? "," : "");
    }
    if (!f)
        return;
    fprintf(f, "  ],\n  \"sampler\": ");
    fin_json_str(f, sampler);
    class_json(f, ",\n  ", "samples", samples);
    fprintf(f, ", \"lost_samples\": %llu", (unsigned long long)lost_samples);
    weight_json(f, weights);
    fprintf(f, ",\n");
    fprintf(f, "  \"fault_sampler\": ");
    fin_json_str(f, fault_sampler);
    json_faults(f, fsamples, faults, lost_faults);
    fprintf(f, ",\n  \"address_recovery\": ");
    fin_recov_json(f, &recov);
    fprintf(f, ",\n  \"sampler_cost\": ");
    cost_json(f, cost_ns, cost_n);
    fprintf(f, ",\n  \"tasks\": %zu, \"threads\": %d, \"allocs\": %llu, \"frees\": %llu, "
            "\"sites\": %zu, \"calls_seen\": %llu, \"tracer_ns\": %llu, \"lost_buffers\": %llu, "
            "\"raw_bytes\": %llu, \"prv_bytes\": %llu, \"duration_ns\": %llu, "
            "\"small_sampled\": %llu, \"small_weight\": %llu\n}\n",
            c->nprocs, c->total_threads, (unsigned long long)allocs, (unsigned long long)frees,
            c->nsites, (unsigned long long)calls, (unsigned long long)tracer_ns,
            (unsigned long long)lost, (unsigned long long)tbytes,
            (unsigned long long)c->bytes_written, (unsigned long long)(c->t_end - c->t_zero),
            (unsigned long long)small, (unsigned long long)small_weight);
    if (fclose(f) != 0)
        fin_die("cannot write %s", summary);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: hmtune-finalize RAWDIR -o OUT_STEM [--summary FILE.json] [--quiet] "
               "[--summary-only]\n"
               "Merge the raw streams libhmtrace.so wrote in RAWDIR into OUT_STEM.prv/.pcf/.row.\n"
               "--summary-only merges and counts but writes only the summary.\n");
}

int main(int argc, char **argv)
{
    const char *raw = NULL, *stem = NULL, *summary = NULL;
    int summary_only = 0;
    struct fin_ctx c;
    memset(&c, 0, sizeof(c));
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            stem = argv[++i];
        else if (strcmp(argv[i], "--summary") == 0 && i + 1 < argc)
            summary = argv[++i];
        else if (strcmp(argv[i], "--quiet") == 0)
            c.quiet = 1;
        else if (strcmp(argv[i], "--summary-only") == 0)
            summary_only = 1;
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' || raw) {
            usage(stderr);
            return 2;
        } else
            raw = argv[i];
    }
    if (!raw || !stem) {
        usage(stderr);
        return 2;
    }
    if (fin_load_dir(&c, raw) == 0)
        fin_die("no trace streams in %s: the application did not start, was statically "
                "linked, or could not write there", raw);
    layout(&c);
    size_t sl = strlen(stem) + 8;
    char *prv = fin_xmalloc(sl), *pcf = fin_xmalloc(sl), *row = fin_xmalloc(sl);
    snprintf(prv, sl, "%s.prv", stem);
    snprintf(pcf, sl, "%s.pcf", stem);
    snprintf(row, sl, "%s.row", stem);
    if (summary_only) {
        /* merge and count as for a trace, but write nothing big (stress tests) */
        if (fin_write_prv(&c, "/dev/null") != 0)
            fin_die("cannot merge the streams");
        report(&c, summary, stem);
        return 0;
    }
    if (fin_write_prv(&c, prv) != 0)
        fin_die("cannot write %s", prv);
    if (fin_write_pcf(&c, pcf) != 0)
        fin_die("cannot write %s", pcf);
    if (fin_write_row(&c, row) != 0)
        fin_die("cannot write %s", row);
    report(&c, summary, stem);
    fin_symbols_close();
    return 0;
}
