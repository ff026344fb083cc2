/* fin_raw.c — read the raw stream files of one run: index every chunk by stream
 * (keeping the longest copy of a chunk written twice), read the process records,
 * and iterate a stream's records in order. Damage (a truncated last chunk after
 * a kill or a full disk, garbage after a crash) ends the reading of that file and
 * is counted, never fatal: what was written before it is kept. */
#include "fin.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void *fin_xmalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p)
        fin_die("out of memory (%zu bytes)", n);
    return p;
}

void *fin_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        fin_die("out of memory (%zu bytes)", n);
    return p;
}

char *fin_xstrdup(const char *s)
{
    size_t n = strlen(s);
    char *p = fin_xmalloc(n + 1);
    memcpy(p, s, n + 1);
    return p;
}

void fin_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("hmtune-finalize: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

void fin_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("hmtune-finalize: warning: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Interned strings: a small open-addressing set; pointers stay valid. */
static char **g_strs;
static size_t g_nstrs, g_capstrs;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

const char *fin_intern(const char *s)
{
    if (g_nstrs * 2 >= g_capstrs) {
        size_t ncap = g_capstrs ? g_capstrs * 2 : 256;
        char **n = fin_xmalloc(ncap * sizeof(char *));
        for (size_t i = 0; i < g_capstrs; i++) {
            if (!g_strs[i])
                continue;
            size_t j = hash_str(g_strs[i]) & (ncap - 1);
            while (n[j])
                j = (j + 1) & (ncap - 1);
            n[j] = g_strs[i];
        }
        free(g_strs);
        g_strs = n;
        g_capstrs = ncap;
    }
    size_t j = hash_str(s) & (g_capstrs - 1);
    while (g_strs[j]) {
        if (strcmp(g_strs[j], s) == 0)
            return g_strs[j];
        j = (j + 1) & (g_capstrs - 1);
    }
    g_strs[j] = fin_xstrdup(s);
    g_nstrs++;
    return g_strs[j];
}

static struct fin_stream *get_stream(struct fin_proc *p, uint32_t id)
{
    for (size_t i = 0; i < p->nstreams; i++)
        if (p->streams[i].id == id)
            return &p->streams[i];
    p->streams = fin_xrealloc(p->streams, (p->nstreams + 1) * sizeof(*p->streams));
    struct fin_stream *s = &p->streams[p->nstreams++];
    memset(s, 0, sizeof(*s));
    s->id = id;
    return s;
}

static void add_chunk(struct fin_proc *p, const struct hmr_chunk *h, uint64_t off)
{
    struct fin_stream *s = get_stream(p, h->stream);
    for (size_t i = 0; i < s->nchunks; i++) {
        if (s->chunks[i].seq == h->seq) {        /* written twice: keep the longest */
            if (h->nbytes > s->chunks[i].nbytes) {
                s->chunks[i].off = off;
                s->chunks[i].nbytes = h->nbytes;
            }
            return;
        }
    }
    if (s->nchunks == s->capchunks) {
        s->capchunks = s->capchunks ? s->capchunks * 2 : 16;
        s->chunks = fin_xrealloc(s->chunks, s->capchunks * sizeof(*s->chunks));
    }
    s->chunks[s->nchunks++] = (struct fin_chunk){ off, h->nbytes, h->seq };
}

static int cmp_chunk(const void *a, const void *b)
{
    const struct fin_chunk *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void calib(struct fin_proc *p, uint64_t tk, uint64_t ns)
{
    if (tk == 0 || ns == 0)
        return;
    if (!p->ncal++ || tk < p->cal_tk0) {
        p->cal_tk0 = tk;
        p->cal_ns0 = ns;
    }
    if (p->ncal == 1 || tk > p->cal_tk1) {
        p->cal_tk1 = tk;
        p->cal_ns1 = ns;
    }
}

uint64_t fin_ns(const struct fin_proc *p, uint64_t ticks)
{
    double d = ((double)ticks - (double)p->cal_tk0) * p->ns_per_tick + (double)p->cal_ns0;
    return d <= 0 ? 0 : (uint64_t)d;
}

/* ns of a record's time (0 for records without one) */
uint64_t fin_rec_ns(const struct fin_proc *p, const struct hmr_hdr *r)
{
    uint32_t len = (uint32_t)r->len8 * 8;
    switch (r->type) {
    case HMR_THREAD:
        return len >= sizeof(struct hmr_thread) ? fin_ns(p, ((const struct hmr_thread *)r)->t) : 0;
    case HMR_CALL:
        return len >= sizeof(struct hmr_call) ? fin_ns(p, ((const struct hmr_call *)r)->t1) : 0;
    case HMR_SCALL:
        return len >= sizeof(struct hmr_scall) ? fin_ns(p, ((const struct hmr_scall *)r)->t1) : 0;
    case HMR_FREE:
        return len >= sizeof(struct hmr_free) ? fin_ns(p, ((const struct hmr_free *)r)->t1) : 0;
    case HMR_TEND:
        return len >= sizeof(struct hmr_tend) ? fin_ns(p, ((const struct hmr_tend *)r)->t) : 0;
    case HMR_SAMPLE: {
        if (len < HMR_SAMPLE_V1_BYTES)
            return 0;
        const struct hmr_sample *x = (const void *)r;
        return (x->h.aux & HMS_TIME_NS) ? x->t : fin_ns(p, x->t);
    }
    default:
        return 0;
    }
}

/* A NUL-terminated text at *pos of the record's len - sizeof(hdr) bytes after it. */
static void cnt_text(const struct hmr_hdr *h, uint32_t len, size_t *pos, char *out, size_t cap)
{
    const char *s = (const char *)(h + 1);
    size_t room = len > sizeof(*h) ? len - sizeof(*h) : 0, k = 0;
    while (*pos < room && s[*pos] && k + 1 < cap)
        out[k++] = s[(*pos)++];
    while (*pos < room && s[*pos])
        (*pos)++;
    if (*pos < room)
        (*pos)++;
    out[k] = 0;
}

/* The counters of HMR_CNTSET and HMR_CNTDEF records (hmc_counters.c). */
static void counters_def(struct fin_proc *p, const struct hmr_hdr *h, uint32_t len)
{
    size_t pos = 0;
    if (h->type == HMR_CNTSET) {
        p->cnt_asked = 1;
        p->cnt_software = h->kind;
        cnt_text(h, len, &pos, p->cnt_unavailable, sizeof(p->cnt_unavailable));
        return;
    }
    int i = h->kind;                    /* HMR_CNTDEF, in index order */
    if (i != p->ncnt || i >= HMR_MAX_COUNTERS)
        return;
    p->cnt_code[i] = h->aux;
    cnt_text(h, len, &pos, p->cnt_name[i], sizeof(p->cnt_name[i]));
    cnt_text(h, len, &pos, p->cnt_descr[i], sizeof(p->cnt_descr[i]));
    if (!p->cnt_name[i][0])
        return;
    p->ncnt++;
}

static void read_proc_record(struct fin_proc *p, const struct hmr_hdr *h, uint32_t len)
{
    switch (h->type) {
    case HMR_PROC: {
        if (len < sizeof(struct hmr_proc))
            return;
        const struct hmr_proc *r = (const void *)h;
        p->hdr = *r;
        p->has_hdr = 1;
        calib(p, r->tk_start, r->t_start);
        const char *s = (const char *)(r + 1);
        size_t room = len - sizeof(*r);
        size_t hl = r->host_len < room ? r->host_len : room;
        if (hl >= sizeof(p->host)) hl = sizeof(p->host) - 1;
        memcpy(p->host, s, hl);
        p->host[hl] = 0;
        size_t el = r->exe_len;
        if (hl + el > room) el = room - hl;
        if (el >= sizeof(p->exe)) el = sizeof(p->exe) - 1;
        memcpy(p->exe, s + hl, el);
        p->exe[el] = 0;
        size_t cl = r->cmd_len;
        if (hl + el + cl > room) cl = room - hl - el;
        p->cmd = fin_xmalloc(cl + 1);
        memcpy(p->cmd, s + hl + el, cl);
        for (size_t i = 0; i + 1 < cl; i++)
            if (p->cmd[i] == 0)
                p->cmd[i] = ' ';
        break;
    }
    case HMR_MODULE: {
        const struct hmr_module *r = (const void *)h;
        if (len < sizeof(*r) || r->path_len > len - sizeof(*r))
            return;
        uint32_t id = h->aux;
        if (id == 0 || id > 1000000)
            return;
        if (id >= p->nmods) {
            p->mod_path = fin_xrealloc(p->mod_path, (id + 1) * sizeof(char *));
            p->mod_base = fin_xrealloc(p->mod_base, (id + 1) * sizeof(uint64_t));
            p->mod_lo = fin_xrealloc(p->mod_lo, (id + 1) * sizeof(uint64_t));
            p->mod_hi = fin_xrealloc(p->mod_hi, (id + 1) * sizeof(uint64_t));
            for (size_t i = p->nmods; i <= id; i++) {
                p->mod_path[i] = NULL;
                p->mod_base[i] = p->mod_lo[i] = p->mod_hi[i] = 0;
            }
            p->nmods = id + 1;
        }
        p->mod_base[id] = r->base;
        p->mod_lo[id] = r->lo;
        p->mod_hi[id] = r->hi;
        char tmp[4096];
        size_t n = r->path_len < sizeof(tmp) - 1 ? r->path_len : sizeof(tmp) - 1;
        memcpy(tmp, r + 1, n);
        tmp[n] = 0;
        p->mod_path[id] = fin_intern(tmp);
        break;
    }
    case HMR_TEND: {
        const struct hmr_tend *r = (const void *)h;
        if (len < sizeof(*r))
            return;
        struct fin_stream *s = get_stream(p, h->aux);
        if (!s->has_tend) {
            s->tracer_tk = r->tracer_tk;
            s->n_calls = r->n_calls;
            s->n_traced = r->n_traced;
            s->n_lost = r->n_lost;
            s->has_tend = 2;               /* reported for a thread still running at exit */
        }
        if (r->t > s->tend_tk) s->tend_tk = r->t;
        break;
    }
    case HMR_SAMPLER: {
        if (h->kind == HMS_SRC_FAULT) {    /* the page-fault sampler, next to the access one */
            size_t n = len - sizeof(*h) < sizeof(p->fault_name) - 1 ? len - sizeof(*h)
                                                                     : sizeof(p->fault_name) - 1;
            memcpy(p->fault_name, h + 1, n);
            p->fault_name[n] = 0;
            break;
        }
        p->sampler = h->kind;
        size_t n = len - sizeof(*h) < sizeof(p->sampler_name) - 1 ? len - sizeof(*h)
                                                                  : sizeof(p->sampler_name) - 1;
        memcpy(p->sampler_name, h + 1, n);
        p->sampler_name[n] = 0;
        break;
    }
    case HMR_CNTSET:
    case HMR_CNTDEF:
        counters_def(p, h, len);
        break;
    case HMR_PEND: {
        const struct hmr_pend *r = (const void *)h;
        if (len < sizeof(*r))
            return;
        p->has_end = 1;
        p->end_kind = h->kind;
        p->end_signo = (int)r->signo;
        if (r->t > p->t_end) p->t_end = r->t;
        calib(p, r->tk, r->t);
        break;
    }
    default:
        break;
    }
}

/* Index one file. */
static void load_file(struct fin_proc *p)
{
    struct stat st;
    if (fstat(p->fd, &st) != 0)
        fin_die("cannot stat %s: %s", p->path, strerror(errno));
    p->fsize = (uint64_t)st.st_size;
    uint64_t off = 0;
    unsigned char *pbuf = NULL;
    while (off + sizeof(struct hmr_chunk) <= p->fsize) {
        struct hmr_chunk h;
        if (pread(p->fd, &h, sizeof(h), (off_t)off) != (ssize_t)sizeof(h))
            break;
        if (h.magic != HMR_MAGIC || h.nbytes % 8 != 0 || h.nbytes > (1u << 26)) {
            p->bad_chunks++;
            p->truncated_bytes += p->fsize - off;
            break;
        }
        if (off + sizeof(h) + h.nbytes > p->fsize) {   /* cut short: kill or full disk */
            p->truncated_bytes += p->fsize - off;
            break;
        }
        calib(p, h.ticks, h.ns);
        if (h.stream == 0) {
            pbuf = fin_xrealloc(pbuf, h.nbytes);
            if (pread(p->fd, pbuf, h.nbytes, (off_t)(off + sizeof(h))) != (ssize_t)h.nbytes)
                break;
            uint32_t pos = 0;
            while (pos + sizeof(struct hmr_hdr) <= h.nbytes) {
                const struct hmr_hdr *r = (const void *)(pbuf + pos);
                uint32_t len = (uint32_t)r->len8 * 8;
                if (len == 0 || pos + len > h.nbytes)
                    break;
                read_proc_record(p, r, len);
                pos += len;
            }
        } else {
            add_chunk(p, &h, off);
        }
        off += sizeof(h) + h.nbytes;
    }
    free(pbuf);
    if (p->hdr.ticks_are_ns || p->cal_tk1 <= p->cal_tk0) {
        p->ns_per_tick = 1.0;        /* ticks are ns, or one pair only: identity */
        if (!p->hdr.ticks_are_ns && p->has_hdr)
            fin_warn("%s: one clock pair only; times may be off", p->path);
        p->cal_tk0 = p->cal_ns0 = 0;
    } else {
        p->ns_per_tick = (double)(p->cal_ns1 - p->cal_ns0) / (double)(p->cal_tk1 - p->cal_tk0);
    }
    for (size_t i = 0; i < p->nstreams; i++) {
        struct fin_stream *s = &p->streams[i];
        s->proc = p;
        qsort(s->chunks, s->nchunks, sizeof(*s->chunks), cmp_chunk);
        if (s->nchunks)
            s->seq_gaps = s->chunks[s->nchunks - 1].seq + 1 - (uint32_t)s->nchunks;
    }
}

int fin_load_dir(struct fin_ctx *c, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        fin_die("cannot open the raw trace directory %s: %s", dir, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".hmr") != 0)
            continue;
        c->procs = fin_xrealloc(c->procs, (c->nprocs + 1) * sizeof(*c->procs));
        struct fin_proc *p = &c->procs[c->nprocs];
        memset(p, 0, sizeof(*p));
        size_t pl = strlen(dir) + n + 2;
        p->path = fin_xmalloc(pl);
        snprintf(p->path, pl, "%s/%s", dir, e->d_name);
        p->fd = open(p->path, O_RDONLY | O_CLOEXEC);
        if (p->fd < 0) {
            fin_warn("cannot read %s: %s (skipped)", p->path, strerror(errno));
            continue;
        }
        load_file(p);
        if (!p->has_hdr) {
            fin_warn("%s has no process header (empty or damaged); skipped", p->path);
            close(p->fd);
            continue;
        }
        c->nprocs++;
    }
    closedir(d);
    return (int)c->nprocs;
}

/* Next record of a stream, in order; 0 at the end. */
int fin_stream_next(struct fin_stream *s, const struct hmr_hdr **rec)
{
    for (;;) {
        if (s->buf && s->bpos + sizeof(struct hmr_hdr) <= s->blen) {
            const struct hmr_hdr *r = (const void *)(s->buf + s->bpos);
            uint32_t len = (uint32_t)r->len8 * 8;
            if (len >= sizeof(*r) && s->bpos + len <= s->blen) {
                s->bpos += len;
                *rec = r;
                return 1;
            }
            s->proc->bad_chunks++;    /* malformed record: skip the rest of the chunk */
        }
        if (s->ci >= s->nchunks)
            return 0;
        const struct fin_chunk *ch = &s->chunks[s->ci++];
        s->buf = fin_xrealloc(s->buf, ch->nbytes);
        if (pread(s->proc->fd, s->buf, ch->nbytes, (off_t)(ch->off + sizeof(struct hmr_chunk))) !=
            (ssize_t)ch->nbytes)
            fin_die("cannot read %s: %s", s->proc->path, strerror(errno));
        s->blen = ch->nbytes;
        s->bpos = 0;
    }
}

void fin_free_ctx(struct fin_ctx *c)
{
    for (size_t i = 0; i < c->nprocs; i++) {
        struct fin_proc *p = &c->procs[i];
        for (size_t k = 0; k < p->nstreams; k++) {
            free(p->streams[k].chunks);
            free(p->streams[k].buf);
            free(p->streams[k].stack_site);
        }
        free(p->streams);
        free(p->mod_path);
        free(p->mod_base);
        free(p->mod_lo);
        free(p->mod_hi);
        free(p->cmd);
        free(p->path);
        if (p->fd >= 0)
            close(p->fd);
    }
    free(c->procs);
    c->procs = NULL;
    c->nprocs = 0;
}
