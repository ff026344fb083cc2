/* fin_main.c — hmtune-finalize RAWDIR -o OUT_STEM [--summary FILE.json] [--quiet]
 *
 * Reads the raw streams libhmtrace.so wrote under RAWDIR and writes OUT_STEM.prv,
 * .pcf and .row. fin_summary.c prints what could not be recovered (processes killed
 * before their end record, truncated chunks) and, with --summary, writes the JSON
 * summary. */
#include "fin.h"

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
        fin_write_summary(&c, summary, stem);
        return 0;
    }
    if (fin_write_prv(&c, prv) != 0)
        fin_die("cannot write %s", prv);
    if (fin_write_pcf(&c, pcf) != 0)
        fin_die("cannot write %s", pcf);
    if (fin_write_row(&c, row) != 0)
        fin_die("cannot write %s", row);
    fin_write_summary(&c, summary, stem);
    fin_symbols_close();
    return 0;
}
