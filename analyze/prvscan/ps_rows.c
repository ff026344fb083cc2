/* ps_rows.c — the per-allocation table (allocs.csv), in allocation order, with memory
 * bounded by a constant.
 *
 * allocs.csv lists blocks in the order their calls began, but a row is complete only
 * when its block ends, possibly at the very end of the trace. So a call's entry takes
 * the next sequence number, the live block carries it, and the row is emitted when
 * the block ends (or at the end of the trace, for blocks never freed), in completion
 * order, into a buffer of RUN rows. A full buffer is sorted by sequence number and
 * appended to an (unlinked) temporary file as one sorted run; at the end the runs and
 * the last buffer are merged back into sequence order while formatting. Every row is
 * written and read once, sequentially; a trace with fewer than RUN rows never touches
 * the file. Sorting is a radix sort on (sequence << 17 | index) keys. */
#include "ps.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RUN_BITS 17
#define RUN (1u << RUN_BITS)              /* rows per run: 6 MiB of rows */
#define MERGE_BUDGET (8u << 20)           /* bytes of read buffers for the final merge */

_Static_assert(sizeof(struct ps_row) == 56, "rows are 56 bytes");

struct run { uint64_t off, n; };          /* in rows, within the file */

struct ps_rows {
    int fd, failed;
    struct ps_row *buf;                    /* the current run, unsorted */
    size_t n;
    uint64_t *keys, *tmp;                  /* radix sort scratch */
    uint64_t next_seq, file_rows, emitted;
    struct run *runs;
    size_t nruns, capruns;
};

struct ps_rows *ps_rows_new(int fd)
{
    struct ps_rows *w = ps_xcalloc(1, sizeof(*w));
    w->fd = fd;
    w->buf = ps_xmalloc(RUN * sizeof(struct ps_row));
    w->keys = ps_xmalloc(RUN * sizeof(uint64_t));
    w->tmp = ps_xmalloc(RUN * sizeof(uint64_t));
    return w;
}

void ps_rows_free(struct ps_rows *w)
{
    if (w) {
        free(w->buf);
        free(w->keys);
        free(w->tmp);
        free(w->runs);
        free(w);
    }
}

uint64_t ps_rows_seq(struct ps_rows *w) { return w->next_seq++; }

/* keys[i] = (seq - min) << RUN_BITS | i, sorted by an LSD radix sort over the bits
 * the sequence range needs (11 bits per pass). */
static void sort_buf(struct ps_rows *w)
{
    if (!w->n)
        return;
    uint64_t lo = w->buf[0].seq, hi = lo;
    for (size_t i = 1; i < w->n; i++) {
        lo = w->buf[i].seq < lo ? w->buf[i].seq : lo;
        hi = w->buf[i].seq > hi ? w->buf[i].seq : hi;
    }
    for (size_t i = 0; i < w->n; i++)
        w->keys[i] = (w->buf[i].seq - lo) << RUN_BITS | i;
    unsigned bits = 0;
    while (bits < 64 && ((hi - lo) >> bits))
        bits++;
    uint64_t *a = w->keys, *b = w->tmp;
    for (unsigned shift = RUN_BITS; shift < RUN_BITS + bits; shift += 11) {
        size_t count[2048] = { 0 };
        for (size_t i = 0; i < w->n; i++)
            count[(a[i] >> shift) & 2047]++;
        size_t sum = 0;
        for (size_t d = 0; d < 2048; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < w->n; i++)
            b[count[(a[i] >> shift) & 2047]++] = a[i];
        uint64_t *t = a;
        a = b;
        b = t;
    }
    if (a != w->keys)
        memcpy(w->keys, a, w->n * sizeof(uint64_t));
}

static void put(struct ps_rows *w, const void *src, size_t n, off_t off)
{
    const char *s = src;
    while (n && !w->failed) {
        ssize_t k = pwrite(w->fd, s, n, off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            w->failed = errno ? errno : EIO;
            return;
        }
        s += k;
        n -= (size_t)k;
        off += k;
    }
}

/* The current buffer, sorted, becomes a run at the end of the file. */
static void spill(struct ps_rows *w)
{
    sort_buf(w);
    struct ps_row out[1024];
    for (size_t i = 0; i < w->n;) {
        size_t k = 0;
        for (; k < 1024 && i < w->n; k++, i++)
            out[k] = w->buf[w->keys[i] & (RUN - 1)];
        put(w, out, k * sizeof(struct ps_row), (off_t)((w->file_rows + i - k) * sizeof(struct ps_row)));
    }
    if (w->nruns == w->capruns) {
        w->capruns = w->capruns ? w->capruns * 2 : 16;
        w->runs = ps_xrealloc(w->runs, w->capruns * sizeof(struct run));
    }
    w->runs[w->nruns++] = (struct run){ w->file_rows, w->n };
    w->file_rows += w->n;
    w->n = 0;
}

void ps_rows_add(struct ps_rows *w, const struct ps_row *r)
{
    if (PS_UNLIKELY(w->n == RUN))
        spill(w);
    w->buf[w->n++] = *r;
    w->emitted++;
}

/* allocs.csv's version line: `# hmtune allocs v1 trace=NAME`, NAME percent-encoded. */
static void version_line(FILE *out, const char *trace)
{
    fputs("# hmtune allocs v1 trace=", out);
    ps_put_encoded(out, trace);
    fputc('\n', out);
}

static char *format(char *p, const struct ps_row *r, const struct ps_sites *s)
{
    const struct ps_site *g = &s->e[r->grp];
    p = ps_fmt_u64(p, g->site);
    *p++ = ',';
    p = ps_fmt_u64(p, (uint64_t)g->task - 1);     /* rank = task - 1 */
    *p++ = ',';
    p = ps_fmt_u64(p, r->thread);
    *p++ = ',';
    p = ps_fmt_hex(p, r->ptr);
    *p++ = ',';
    p = ps_fmt_u64(p, r->size);
    *p++ = ',';
    p = ps_fmt_u64(p, r->t_alloc);
    *p++ = ',';
    p = ps_fmt_i64(p, r->t_free);
    *p++ = ',';
    p = ps_fmt_u64(p, r->scale);
    *p++ = '\n';
    return p;
}

/* One source of the merge: a run being read back, or the sorted last buffer. */
struct src {
    const struct ps_row *rows;
    size_t pos, n;                /* rows[pos, n) not yet merged */
    uint64_t off, left;           /* file runs: next row to read, rows not yet read */
    struct ps_row *buf;
};

static int refill(struct ps_rows *w, struct src *s, size_t cap)
{
    size_t want = s->left < cap ? (size_t)s->left : cap, got = 0;
    while (got < want * sizeof(struct ps_row)) {
        ssize_t k = pread(w->fd, (char *)s->buf + got, want * sizeof(struct ps_row) - got,
                          (off_t)(s->off * sizeof(struct ps_row) + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k == 0 ? (errno = EIO, -1) : -1;
        got += (size_t)k;
    }
    s->rows = s->buf;
    s->pos = 0;
    s->n = want;
    s->off += want;
    s->left -= want;
    return 0;
}

static uint64_t head(const struct src *s) { return s->rows[s->pos].seq; }

static void sift_up(const struct src *src, uint32_t *h, size_t i)
{
    while (i && head(&src[h[(i - 1) / 2]]) > head(&src[h[i]])) {
        uint32_t t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static void sift_down(const struct src *src, uint32_t *h, size_t n)
{
    for (size_t i = 0;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && head(&src[h[c + 1]]) < head(&src[h[c]]))
            c++;
        if (head(&src[h[i]]) <= head(&src[h[c]]))
            return;
        uint32_t t = h[i];
        h[i] = h[c];
        h[c] = t;
        i = c;
    }
}

int64_t ps_rows_write_csv(struct ps_rows *w, FILE *out, const char *trace,
                          const struct ps_sites *sites)
{
    if (w->nruns && w->n)
        spill(w);
    if (w->failed) {
        errno = w->failed;
        return -1;
    }
    version_line(out, trace);
    fputs("site_id,rank,thread,ptr,size,t_alloc,t_free,scale\n", out);
    char text[1024 * 8 * 24];
    size_t used = 0;
    if (!w->nruns) {                   /* everything is still in memory */
        sort_buf(w);
        for (size_t i = 0; i < w->n; i++) {
            used = (size_t)(format(text + used, &w->buf[w->keys[i] & (RUN - 1)], sites) - text);
            if (used > sizeof(text) - 8 * 24) {
                fwrite(text, 1, used, out);
                used = 0;
            }
        }
        fwrite(text, 1, used, out);
        return ferror(out) ? -1 : (int64_t)w->emitted;
    }
    /* k-way merge of the runs: a min-heap of runs by the sequence number at their head */
    size_t k = w->nruns, cap = MERGE_BUDGET / sizeof(struct ps_row) / k;
    cap = cap < 64 ? 64 : cap;
    struct src *src = ps_xcalloc(k, sizeof(struct src));
    struct ps_row *mem = ps_xmalloc(k * cap * sizeof(struct ps_row));
    uint32_t *heap = ps_xmalloc(k * sizeof(uint32_t));
    size_t nh = 0;
    int rc = 0;
    for (size_t i = 0; i < k && !rc; i++) {
        src[i] = (struct src){ .off = w->runs[i].off, .left = w->runs[i].n, .buf = mem + i * cap };
        rc = refill(w, &src[i], cap);
        heap[nh++] = (uint32_t)i;
        sift_up(src, heap, nh - 1);
    }
    while (nh && !rc) {
        struct src *s = &src[heap[0]];
        /* every row of the top run below the other runs' smallest head, in one go */
        uint64_t limit = UINT64_MAX;
        for (size_t c = 1; c <= 2 && c < nh; c++)
            if (head(&src[heap[c]]) < limit)
                limit = head(&src[heap[c]]);
        while (s->pos < s->n && s->rows[s->pos].seq < limit) {
            used = (size_t)(format(text + used, &s->rows[s->pos++], sites) - text);
            if (used > sizeof(text) - 8 * 24) {
                fwrite(text, 1, used, out);
                used = 0;
            }
        }
        if (s->pos == s->n && s->left)
            rc = refill(w, s, cap);
        if (s->pos == s->n)
            heap[0] = heap[--nh];
        sift_down(src, heap, nh);
    }
    fwrite(text, 1, used, out);
    free(heap);
    free(mem);
    free(src);
    if (rc)
        return -1;
    return ferror(out) ? -1 : (int64_t)w->emitted;
}
