/* ps_parse.c — the #Paraver header and record lines, parsed by hand.
 *
 * sscanf/strtoull per field would cost more than the rest of the scan together, so
 * a record is one left-to-right walk, each field's digits taken eight at a time. Only plain unsigned decimal is accepted (no sign, no spaces), as the Python
 * reader and the validator do; a value past 2^64-1 is an error, not a wrap. */
#include "ps.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- header */

struct hscan { const char *p, *e; char *err; size_t errlen; };

static int herr(struct hscan *s, const char *what)
{
    size_t left = (size_t)(s->e - s->p);
    snprintf(s->err, s->errlen, "bad header: %s, got '%.*s'", what,
             (int)(left > 12 ? 12 : left), left ? s->p : "end of line");
    return -1;
}

static int hexpect(struct hscan *s, char c, const char *what)
{
    if (s->p < s->e && *s->p == c) {
        s->p++;
        return 0;
    }
    return herr(s, what);
}

static int hint(struct hscan *s, uint64_t *v, const char *what)
{
    const char *b = s->p;
    uint64_t x = 0;
    while (s->p < s->e && *s->p >= '0' && *s->p <= '9') {
        if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, (uint64_t)(*s->p - '0'), &x))
            return herr(s, "number out of range");
        s->p++;
    }
    if (s->p == b)
        return herr(s, what);
    *v = x;
    return 0;
}

static int hpeek(const struct hscan *s, char c) { return s->p < s->e && *s->p == c; }

/* `ntasks(nthreads:node,...)` of one application */
static int happ(struct hscan *s, struct ps_header *h, uint32_t app)
{
    uint64_t ntasks, nthr, node, listed = 0;
    if (hint(s, &ntasks, "expected an application's task count") ||
        hexpect(s, '(', "expected '(' after the task count"))
        return -1;
    for (;;) {
        if (hint(s, &nthr, "expected a task's thread count") ||
            hexpect(s, ':', "expected ':' between thread count and node") ||
            hint(s, &node, "expected a task's node"))
            return -1;
        listed++;
        h->nthreads += (uint32_t)nthr;
        uint32_t t = h->ntasks + (uint32_t)listed - 1;
        if (t % 64 == 0)
            h->task_threads = ps_xrealloc(h->task_threads, ((size_t)t + 64) * sizeof(uint32_t));
        h->task_threads[t] = nthr > UINT32_MAX ? UINT32_MAX : (uint32_t)nthr;
        if (!hpeek(s, ','))
            break;
        s->p++;
    }
    if (hexpect(s, ')', "expected ')' after the task list"))
        return -1;
    if (listed != ntasks) {
        snprintf(s->err, s->errlen, "bad header: application %u declares %llu task(s) but lists %llu",
                 app + 1, (unsigned long long)ntasks, (unsigned long long)listed);
        return -1;
    }
    h->task_base[app] = h->ntasks;
    h->ntasks += (uint32_t)ntasks;
    return 0;
}

int ps_parse_header(const char *line, size_t len, struct ps_header *h, char *err,
                    size_t errlen)
{
    memset(h, 0, sizeof(*h));
    if (len < 8 || memcmp(line, "#Paraver", 8) != 0) {
        snprintf(err, errlen, "not a Paraver trace: the first line does not start with '#Paraver'");
        return -1;
    }
    /* the date "(DD/MM/YYYY at HH:MM)" holds a ':', so skip it whole first */
    const char *open = memchr(line, '(', len);
    const char *close = open ? memchr(open, ')', len - (size_t)(open - line)) : NULL;
    if (!close) {
        snprintf(err, errlen, "bad header: no '(date)' after '#Paraver'");
        return -1;
    }
    struct hscan s = { close + 1, line + len, err, errlen };
    uint64_t end, nnodes, napps, v;
    if (hexpect(&s, ':', "expected ':' after the date") || hint(&s, &end, "expected the end time"))
        return -1;
    h->scale = 1000;                 /* no suffix: microseconds (Paraver's default) */
    if (hpeek(&s, '_')) {
        if (s.e - s.p < 3 || memcmp(s.p, "_ns", 3) != 0)
            return herr(&s, "unknown time unit (only '_ns' or none)");
        s.p += 3;
        h->scale = 1;
    }
    if (__builtin_mul_overflow(end, h->scale, &h->end_ns))
        return herr(&s, "end time out of range");
    if (hexpect(&s, ':', "expected ':' after the end time") ||
        hint(&s, &nnodes, "expected the node count"))
        return -1;
    if (hpeek(&s, '(') || nnodes) {  /* "0" alone: no node information */
        if (hexpect(&s, '(', "expected '(' before the cpus-per-node list"))
            return -1;
        do {
            if (hpeek(&s, ','))
                s.p++;
            if (hint(&s, &v, "expected a cpu count"))
                return -1;
        } while (hpeek(&s, ','));
        if (hexpect(&s, ')', "expected ')' after the cpus-per-node list"))
            return -1;
    }
    if (hexpect(&s, ':', "expected ':' after the node list") ||
        hint(&s, &napps, "expected the application count") ||
        hexpect(&s, ':', "expected ':' after the application count"))
        return -1;
    if (napps == 0 || napps > PS_ID_MAX)
        return herr(&s, "application count out of range");
    h->napps = (uint32_t)napps;
    h->task_base = ps_xcalloc(napps, sizeof(uint32_t));
    for (uint32_t a = 0; a < napps; a++) {
        if (happ(&s, h, a))
            goto fail;
        if (hpeek(&s, ',')) {          /* ",ncomms" (Extrae) or ",next app" (Dimemas) */
            s.p++;
            const char *mark = s.p;
            if (hint(&s, &v, "expected the communicator count"))
                goto fail;
            if (hpeek(&s, '(')) {
                s.p = mark;
                continue;
            }
        }
        if (a + 1 < napps && hexpect(&s, ':', "expected ':' between applications"))
            goto fail;
    }
    if (s.p != s.e) {
        herr(&s, "unexpected text after the application list");
        goto fail;
    }
    return 0;
fail:
    ps_header_free(h);
    return -1;
}

void ps_header_free(struct ps_header *h)
{
    free(h->task_base);
    free(h->task_threads);
    h->task_base = NULL;
    h->task_threads = NULL;
}

/* ---------------------------------------------------------------- records */

/* Slow path, taken only for a malformed line: say which rule it breaks, in the
 * validator's order (field count first, then the first non-integer field). */
static int bad_record(const char *line, size_t len, char kind, char *err, size_t errlen)
{
    size_t nfields = 1;
    for (size_t i = 0; i < len; i++)
        nfields += line[i] == ':';
    if (kind == '2' && (nfields < 8 || nfields % 2)) {
        snprintf(err, errlen, "event record has %zu fields; expected 6 plus a type:value pair"
                 " per event", nfields);
        return -1;
    }
    if ((kind == '1' && nfields != 8) || (kind == '3' && nfields != 15)) {
        snprintf(err, errlen, "%s record has %zu fields; expected %d",
                 kind == '1' ? "state" : "communication", nfields, kind == '1' ? 8 : 15);
        return -1;
    }
    const char *p = line, *e = line + len;
    for (size_t f = 1; p <= e; f++) {
        const char *q = memchr(p, ':', (size_t)(e - p));
        if (!q)
            q = e;
        size_t n = (size_t)(q - p), k = 0;
        while (k < n && p[k] >= '0' && p[k] <= '9')
            k++;
        if (n == 0 || k != n) {
            snprintf(err, errlen, "field %zu ('%.*s') is not an unsigned integer", f,
                     (int)(n > 24 ? 24 : n), p);
            return -1;
        }
        uint64_t x = 0;
        for (k = 0; k < n; k++)
            if (__builtin_mul_overflow(x, 10, &x) ||
                __builtin_add_overflow(x, (uint64_t)(p[k] - '0'), &x)) {
                snprintf(err, errlen, "field %zu ('%.*s') is out of range (above 2^64-1)", f,
                         (int)(n > 24 ? 24 : n), p);
                return -1;
            }
        p = q + 1;
    }
    snprintf(err, errlen, "malformed record");
    return -1;
}

/* Fast path. A line's ':' and '\n' bytes, and any byte that is neither a digit nor
 * ':', are found 64 at a time with SIMD compares (bit masks), so every field's extent
 * is known and checked before its digits are read, and the fields convert
 * independently: 8 digits at a time (SWAR), no loop per character.
 * The input guarantees a '\n' ending every line (a sentinel one after a last line
 * that lacks it) and 64 readable bytes past it (ps_input.c). */
static inline uint64_t load8(const char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Bits of the 64 bytes at p: ':' (*colon), '\n' (*nl), and bytes that are neither a
 * digit nor ':' (*bad). */
#if defined(__SSE2__)
#include <emmintrin.h>
static inline void masks64(const char *p, uint64_t *colon, uint64_t *nl, uint64_t *bad)
{
    const __m128i c = _mm_set1_epi8(':'), n = _mm_set1_epi8('\n');
    const __m128i zero = _mm_set1_epi8('0'), nine = _mm_set1_epi8(9);
    uint64_t cm = 0, nm = 0, ok = 0;
    for (int k = 0; k < 4; k++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
        __m128i d = _mm_sub_epi8(x, zero);
        __m128i is_c = _mm_cmpeq_epi8(x, c);
        __m128i is_d = _mm_cmpeq_epi8(_mm_min_epu8(d, nine), d);   /* x - '0' <= 9 */
        cm |= (uint64_t)(uint32_t)_mm_movemask_epi8(is_c) << (16 * k);
        nm |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, n)) << (16 * k);
        ok |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_or_si128(is_c, is_d)) << (16 * k);
    }
    *colon = cm;
    *nl = nm;
    *bad = ~ok;
}
#else
static inline void masks64(const char *p, uint64_t *colon, uint64_t *nl, uint64_t *bad)
{
    uint64_t cm = 0, nm = 0, ok = 0;
    for (int k = 0; k < 64; k++) {
        cm |= (uint64_t)(p[k] == ':') << k;
        nm |= (uint64_t)(p[k] == '\n') << k;
        ok |= (uint64_t)(p[k] == ':' || (unsigned)(p[k] - '0') < 10u) << k;
    }
    *colon = cm;
    *nl = nm;
    *bad = ~ok;
}
#endif

/* The value of the first n (1..8) bytes of v, digits, first one most significant. */
static inline uint64_t first_n(uint64_t v, size_t n)
{
    uint64_t d = (v - 0x3030303030303030ull) << (8 * (8 - n));
    d = d * 10 + (d >> 8);
    return (((d & 0x000000ff000000ffull) * (100 + (1000000ull << 32))) +
            (((d >> 16) & 0x000000ff000000ffull) * (1 + (10000ull << 32)))) >> 32;
}

/* The unsigned decimal [s, e), all digits (checked by the caller); 0 when it is empty
 * or past 2^64-1. */
static inline int num(const char *s, const char *e, uint64_t *out)
{
    static const uint64_t pow10[9] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                       100000000 };
    size_t n = (size_t)(e - s);
    if (PS_LIKELY(n - 1 < 8)) {
        *out = first_n(load8(s), n);
        return 1;
    }
    if (n - 9 < 8) {
        *out = first_n(load8(s), 8) * pow10[n - 8] + first_n(load8(s + 8), n - 8);
        return 1;
    }
    uint64_t x = 0;
    for (; s < e; s++)
        if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, (uint64_t)(*s - '0'), &x))
            return 0;
    *out = x;
    return n != 0;
}

/* A line the fast path does not take: skipped kinds, or an error message. */
static int slow_line(const char *line, size_t len, struct ps_record *r, char *err, size_t errlen)
{
    if (len == 0 || line[0] == '#' || (line[0] == 'c' && len > 1 && line[1] == ':')) {
        r->kind = PS_REC_SKIP;        /* blank, comment, communicator definition */
        return 0;
    }
    if (len >= 2 && line[1] == ':' && (line[0] == '1' || line[0] == '2' || line[0] == '3'))
        return bad_record(line, len, line[0], err, errlen);
    snprintf(err, errlen, "unknown record type '%.*s' (expected 1, 2 or 3)",
             (int)(len > 20 ? 20 : len), line);
    return -1;
}

int ps_parse_line(const char *p, struct ps_record *r, const char **next, char *err,
                  size_t errlen)
{
    const char kind = p[0];
    if (PS_LIKELY((kind == '2' || kind == '1' || kind == '3') && p[1] == ':')) {
        uint64_t *v = r->v;           /* locals: stores to v[] cannot alias them */
        size_t nv = 0, cap = r->cap;
        const char *base = p, *fs = p + 2;
        uint64_t skip = 2;             /* colons already consumed: the one after the kind */
        if (PS_UNLIKELY(cap < 8)) {
            r->cap = cap = 64;
            r->v = v = ps_xrealloc(r->v, cap * sizeof(uint64_t));
        }
        /* the usual start "cpu:app:task:thread:" with one digit each, in one go */
        uint64_t w = load8(p + 2);
        const uint64_t even = 0x00f000f000f000f0ull, three = 0x0030003000300030ull;
        if (((w ^ 0x3a003a003a003a00ull) & 0xff00ff00ff00ff00ull) == 0 &&
            (w & even) == three && ((w + 0x0006000600060006ull) & even) == three) {
            v[0] = w & 15;
            v[1] = (w >> 16) & 15;
            v[2] = (w >> 32) & 15;
            v[3] = (w >> 48) & 15;
            nv = 4;
            fs = p + 10;
            skip = 0x2aa;              /* bits 1, 3, 5, 7, 9 */
        }
        int ok = 1;
        uint64_t bad_before = 0, bad_prev = 0;     /* blocks before the last two; the one before */
        for (;;) {
            uint64_t cm, nm, bad;
            masks64(base, &cm, &nm, &bad);
            if (base == p)
                cm &= ~skip;
            unsigned k = nm ? (unsigned)__builtin_ctzll(nm) : 64;
            if (k < 64) {
                cm &= (1ull << k) - 1; /* this line's bytes only */
                bad &= (1ull << k) - 1;
            }
            while (cm) {
                const char *fe = base + __builtin_ctzll(cm);
                cm &= cm - 1;
                if (PS_UNLIKELY(nv == cap)) {
                    r->cap = cap = cap * 2;
                    r->v = v = ps_xrealloc(v, cap * sizeof(uint64_t));
                }
                ok &= num(fs, fe, &v[nv++]);
                fs = fe + 1;
            }
            if (k < 64) {
                const char *le = base + k;
                *next = le + 1;
                if (le > p && le[-1] == '\r') {   /* CRLF: the '\r' is no field byte */
                    le--;
                    if (k)
                        bad &= ~(1ull << (k - 1));
                    else
                        bad_prev &= ~(1ull << 63);
                }
                if (PS_UNLIKELY(nv == cap)) {
                    r->cap = cap = cap * 2;
                    r->v = v = ps_xrealloc(v, cap * sizeof(uint64_t));
                }
                ok &= num(fs, le, &v[nv++]);
                size_t nf = kind == '1' ? 7 : kind == '3' ? 14 : 5;
                if (PS_UNLIKELY(!ok || (bad_before | bad_prev | bad) || nv < nf ||
                                (kind != '2' && nv != nf) ||
                                (kind == '2' && (nv == nf || (nv - nf) % 2))))
                    return bad_record(p, (size_t)(le - p), kind, err, errlen);
                r->kind = kind == '2' ? PS_REC_EVENT : kind == '1' ? PS_REC_STATE : PS_REC_COMM;
                r->npairs = (nv - nf) / 2;
                return 0;
            }
            bad_before |= bad_prev;
            bad_prev = bad;
            base += 64;
        }
    }
    const char *nl = rawmemchr(p, '\n');      /* a '\n' always ends the line */
    *next = nl + 1;
    size_t len = (size_t)(nl - p);
    if (len && p[len - 1] == '\r')
        len--;
    return slow_line(p, len, r, err, errlen);
}
