/* hmi_placement.c — see hmi_placement.h. The grammar, the checks and the limits are
 * those of hmtune/advisor/placement.py's reader, which `hmtune run` applies first: the two
 * must give the same verdict on every file (tests/py/test_placement_grammar.py).
 * Lines split at \n, \r\n, \r, \v, \f and \x1c-\x1e (Python's str.splitlines on
 * ASCII). "White space" is space, \t-\r and \x1c-\x1f (str.strip() and regex \s in
 * ASCII). Non-ASCII bytes are ordinary path bytes.
 *
 * One file of over 500 lines on purpose: it mirrors hmtune/advisor/placement.py's reader
 * check for check, and the two are compared side by side. */
#include "hmi_placement.h"
#include "hm_modmap.h"
#include "hmi_fields.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FNV_SEED  0xcbf29ce484222325ull   /* as hm_modmap.c, so hashes compare */
#define NOT_FOUND UINT32_MAX
#define BAD_TIER  "expected 'tier NAME BACKEND CAPACITY' (bytes or 'unlimited')"
#define BAD_CHAIN "site chain is not module+0xHEX frames joined by ' > '"
#define BAD_STATIC "expected 'static TIER SIZE module+0xHEX' (SIZE 1 or more)"
#define BAD_SPLIT "expected 'split TIER START-END[,START-END...] CHAIN': byte offsets, " \
                  "multiples of 4096, START < END <= 2^48, increasing and not touching"
#define BAD_STATIC_SPLIT "expected 'static-split TIER SIZE START-END[,START-END...] " \
                  "module+0xHEX': byte offsets in the object, multiples of 4096, START < " \
                  "END <= SIZE rounded up to 4096, increasing and not touching"

/* Open-addressing set of byte strings; slot holds key index + 1, 0 when empty. */
struct strset {
    struct span *keys;
    uint64_t *hashes;
    uint32_t *slot;
    size_t mask;
    uint32_t n;
};

struct parser {
    const char *text;
    size_t len, pos;
    uint32_t lineno;
    char *err;
    size_t errlen;
    struct hmi_placement *out;
    char *arena;
    size_t used, sused;                   /* struct cursor, string cursor */
    struct strset tiers, chains, modules, objects;
    struct hmi_frame *frames;
    uint32_t nframes;
    struct hmi_range *ranges;
    uint32_t nranges;
    int have_depth, have_window, have_program;
};

static const struct span NONE = { 0, 0 };

static int is_break(unsigned char c)
{
    return c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e);
}

static int span_is(struct span s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

static struct span strip(struct span s)
{
    while (s.n && hmi_is_ws((unsigned char)s.p[0])) { s.p++; s.n--; }
    while (s.n && hmi_is_ws((unsigned char)s.p[s.n - 1])) s.n--;
    return s;
}

/* The next line without its terminator; 0 at the end of the text (a final line
 * break does not start an empty line, as in str.splitlines). */
static int next_line(const char *t, size_t len, size_t *pos, struct span *line)
{
    size_t i = *pos;
    if (i >= len)
        return 0;
    while (i < len && !is_break((unsigned char)t[i]))
        i++;
    line->p = t + *pos;
    line->n = i - *pos;
    if (i < len)
        i += (t[i] == '\r' && i + 1 < len && t[i + 1] == '\n') ? 2 : 1;
    *pos = i;
    return 1;
}

/* ---- errors: "line N: why[ 'what'][ NUM]", no stdio ---- */

static void errcat(char *err, size_t errlen, size_t *k, const char *s, size_t n)
{
    for (size_t i = 0; i < n && *k + 1 < errlen; i++)
        err[(*k)++] = s[i];
    if (errlen)
        err[*k] = 0;
}

static void errnum(char *err, size_t errlen, size_t *k, uint64_t v)
{
    char b[24];
    errcat(err, errlen, k, b, hm_fmt_u64(b, v));
}

static int fail_at(struct parser *ps, uint32_t line, const char *why, struct span what,
                   int has_num, uint64_t num)
{
    size_t k = 0;
    if (!ps->err || !ps->errlen)
        return -1;
    errcat(ps->err, ps->errlen, &k, "line ", 5);
    errnum(ps->err, ps->errlen, &k, line);
    errcat(ps->err, ps->errlen, &k, ": ", 2);
    errcat(ps->err, ps->errlen, &k, why, strlen(why));
    if (what.p) {
        char q[64];
        size_t n = what.n < sizeof q ? what.n : sizeof q;
        for (size_t i = 0; i < n; i++)   /* keep the message one printable line */
            q[i] = (what.p[i] >= 0x20 && what.p[i] < 0x7f) ? what.p[i] : '?';
        errcat(ps->err, ps->errlen, &k, " '", 2);
        errcat(ps->err, ps->errlen, &k, q, n);
        errcat(ps->err, ps->errlen, &k, what.n > n ? "...'" : "'", what.n > n ? 4 : 1);
    }
    if (has_num) {
        errcat(ps->err, ps->errlen, &k, " ", 1);
        errnum(ps->err, ps->errlen, &k, num);
    }
    return -1;
}

static int fail(struct parser *ps, const char *why, struct span what)
{
    return fail_at(ps, ps->lineno, why, what, 0, 0);
}

/* ---- arena and string sets ---- */

static void *carve(struct parser *ps, size_t bytes)
{
    void *p = ps->arena + ps->used;
    ps->used += (bytes + 7) & ~(size_t)7;
    return p;
}

static const char *copy_str(struct parser *ps, struct span s)
{
    char *d = ps->arena + ps->sused;
    memcpy(d, s.p, s.n);
    d[s.n] = 0;
    ps->sused += s.n + 1;
    return d;
}

static size_t set_bytes(size_t cap, size_t *slots)
{
    size_t n = 1;
    while (n < 2 * cap)
        n <<= 1;
    *slots = n;
    return ((cap * sizeof(struct span) + 7) & ~(size_t)7) + cap * 8 + ((n * 4 + 7) & ~(size_t)7);
}

static void set_init(struct parser *ps, struct strset *s, size_t cap)
{
    size_t slots;
    set_bytes(cap, &slots);
    s->keys = carve(ps, cap * sizeof(struct span));
    s->hashes = carve(ps, cap * 8);
    s->slot = carve(ps, slots * 4);
    s->mask = slots - 1;
    s->n = 0;
}

/* Index of (p, n) in s, or NOT_FOUND with *where = the free slot to add it at. */
static uint32_t set_find(const struct strset *s, struct span k, uint64_t h, size_t *where)
{
    size_t i = (h ^ (h >> 29)) & s->mask;
    for (;; i = (i + 1) & s->mask) {
        uint32_t v = s->slot[i];
        if (!v)
            break;
        v--;
        if (s->hashes[v] == h && s->keys[v].n == k.n && memcmp(s->keys[v].p, k.p, k.n) == 0)
            return v;
    }
    *where = i;
    return NOT_FOUND;
}

/* Capacity is sized from the input, so the table never fills (slots >= 2 * keys). */
static uint32_t set_add(struct strset *s, size_t where, struct span k, uint64_t h)
{
    s->keys[s->n] = k;
    s->hashes[s->n] = h;
    s->slot[where] = s->n + 1;
    return s->n++;
}

/* ---- fields ---- */

/* Python's str.split(" "): counts all fields, stores the first max. */
static size_t split_sp(struct span s, struct span *f, size_t max)
{
    const char *p = s.p, *end = s.p + s.n;
    size_t n = 0;
    for (;;) {
        const char *q = memchr(p, ' ', (size_t)(end - p));
        if (!q)
            q = end;
        if (n < max)
            f[n] = (struct span){ p, (size_t)(q - p) };
        n++;
        if (q == end)
            return n;
        p = q + 1;
    }
}

/* ---- line kinds ---- */

static int do_tier(struct parser *ps, struct span rest)
{
    struct hmi_placement *o = ps->out;
    struct span f[3];
    uint64_t cap = 0;
    size_t where;
    int unl, r;
    if (o->nsites || o->nstatics || ps->have_depth || ps->have_window)
        return fail(ps, "tier lines must come before depth, size-window, site, split and "
                        "static lines", NONE);
    if (split_sp(rest, f, 3) != 3)
        return fail(ps, BAD_TIER, NONE);
    if (o->ntiers >= HMI_MAX_TIER_LINES)     /* the backends have that many slots */
        return fail_at(ps, ps->lineno, "more tier lines than", NONE, 1, HMI_MAX_TIER_LINES);
    unl = span_is(f[2], "unlimited");
    if (!unl && (r = hmi_dec(f[2], &cap)) != 0)
        return fail(ps, r == -2 ? "capacity does not fit in 64 bits" : BAD_TIER, f[2]);
    if (!hmi_backend_ok(f[1]))
        return fail(ps, "unknown or malformed backend", f[1]);
    if (!hmi_name_ok(f[0]))
        return fail(ps, "tier name is not 1-64 letters, digits, '_', '.' or '-'", f[0]);
    if (!unl && cap == 0)
        return fail(ps, "capacity must be > 0 bytes or 'unlimited'", NONE);
    if (o->ntiers && o->tiers[o->ntiers - 1].unlimited)
        return fail(ps, "only the last tier may be unlimited; a tier follows", f[0]);
    uint64_t h = hm_fnv1a(f[0].p, f[0].n, FNV_SEED);
    if (set_find(&ps->tiers, f[0], h, &where) != NOT_FOUND)
        return fail(ps, "a tier name is used twice", f[0]);
    struct hmi_tier *t = &o->tiers[o->ntiers++];
    t->name = copy_str(ps, f[0]);
    t->backend = copy_str(ps, f[1]);
    t->capacity = cap;
    t->unlimited = unl;
    t->line = ps->lineno;
    set_add(&ps->tiers, where, (struct span){ t->name, f[0].n }, h);
    return 0;
}

static int do_number(struct parser *ps, struct span rest, size_t want, uint64_t *v,
                     const char *usage)
{
    struct span f[2];
    if (split_sp(rest, f, 2) != want)
        return fail(ps, usage, NONE);
    for (size_t i = 0; i < want; i++) {
        int r = hmi_dec(f[i], &v[i]);
        if (r)
            return fail(ps, r == -2 ? "number does not fit in 64 bits" : usage, f[i]);
    }
    return 0;
}

static uint32_t intern_module(struct parser *ps, struct span m)
{
    size_t where;
    uint64_t h = hm_fnv1a(m.p, m.n, FNV_SEED);
    uint32_t i = set_find(&ps->modules, m, h, &where);
    if (i != NOT_FOUND)
        return i;
    struct hmi_module *mod = &ps->out->modules[ps->out->nmodules++];
    mod->path = copy_str(ps, m);
    mod->len = (uint32_t)m.n;
    mod->hash = h;
    return set_add(&ps->modules, where, (struct span){ mod->path, m.n }, h);
}

/* The chain of a site or split line (the rest of the line up to a comment,
 * stripped): frames checked, the chain listed at most once over site and split
 * lines; then the site is added with its ranges (none for a site line). */
static int add_site(struct parser *ps, uint32_t ti, struct span chain,
                    const struct hmi_range *ranges, uint32_t nranges)
{
    struct hmi_placement *o = ps->out;
    size_t where;
    if (!chain.n || memchr(chain.p, '#', chain.n))
        return fail(ps, BAD_CHAIN, chain);
    uint32_t first = ps->nframes, k = 0;
    const char *p = chain.p, *end = chain.p + chain.n;
    for (;;) {                         /* chain.split(" > "), each frame stripped */
        const char *q = memmem(p, (size_t)(end - p), " > ", 3);
        struct span f = strip((struct span){ p, (size_t)((q ? q : end) - p) }), mod;
        uint64_t off;
        int r = hmi_frame_parse(f, &mod, &off);
        if (r)
            return fail(ps, r == -2 ? "frame offset does not fit in 48 bits" : BAD_CHAIN, f);
        if (++k > HMI_MAX_FRAMES)
            return fail_at(ps, ps->lineno, "site chain has more frames than", NONE, 1,
                           HMI_MAX_FRAMES);
        ps->frames[ps->nframes].module = intern_module(ps, mod);
        ps->frames[ps->nframes++].offset = off;
        if (!q)
            break;
        p = q + 3;
    }
    uint64_t h = hm_fnv1a(chain.p, chain.n, FNV_SEED);
    uint32_t dup = set_find(&ps->chains, chain, h, &where);
    if (dup != NOT_FOUND)
        return fail_at(ps, ps->lineno, "site chain already listed at line", NONE, 1,
                       o->sites[dup].line);
    set_add(&ps->chains, where, chain, h);
    struct hmi_site *s = &o->sites[o->nsites++];
    s->tier = ti;
    s->nframes = k;
    s->frames = ps->frames + first;
    s->line = ps->lineno;
    s->nranges = nranges;
    s->ranges = nranges ? ranges : NULL;
    o->nsplit += nranges != 0;
    return 0;
}

static int do_site(struct parser *ps, struct span rest)
{
    const char *sp = memchr(rest.p, ' ', rest.n);
    struct span tier = { rest.p, sp ? (size_t)(sp - rest.p) : rest.n };
    struct span chain = strip(sp ? (struct span){ sp + 1, rest.n - tier.n - 1 } : NONE);
    size_t where;
    uint32_t ti = set_find(&ps->tiers, tier, hm_fnv1a(tier.p, tier.n, FNV_SEED), &where);
    if (ti == NOT_FOUND)
        return fail(ps, "site in undeclared tier", tier);
    return add_site(ps, ti, chain, NULL, 0);
}

/* RANGES: 1..HMI_MAX_RANGES comma-separated START-END decimal byte offsets, multiples
 * of HMI_RANGE_ALIGN, START < END <= max, each range starting after the previous one's
 * end; written to ps->ranges (not yet kept: the caller adds *n to ps->nranges). */
static int parse_ranges(struct parser *ps, struct span rs, uint64_t max, const char *bad,
                        uint32_t *n)
{
    struct hmi_range *r = ps->ranges + ps->nranges;
    const char *p = rs.p, *end = rs.p + rs.n;
    for (*n = 0;;) {                   /* RANGES.split(","), each START-END */
        const char *q = p ? memchr(p, ',', (size_t)(end - p)) : NULL;
        struct span item = { p, (size_t)((q ? q : end) - p) };
        const char *dash = item.n ? memchr(item.p, '-', item.n) : NULL;
        uint64_t a, b;
        if (*n >= HMI_MAX_RANGES)
            return fail_at(ps, ps->lineno, "split line has more ranges than", NONE, 1,
                           HMI_MAX_RANGES);
        if (!dash || hmi_dec((struct span){ item.p, (size_t)(dash - item.p) }, &a) != 0 ||
            hmi_dec((struct span){ dash + 1, item.n - (size_t)(dash - item.p) - 1 }, &b) != 0 ||
            a >= b || a % HMI_RANGE_ALIGN || b % HMI_RANGE_ALIGN || b > max ||
            (*n && a <= r[*n - 1].end))
            return fail(ps, bad, item);
        r[*n].start = a;
        r[*n].end = b;
        (*n)++;
        if (!q)
            return 0;
        p = q + 1;
    }
}

/* The first field of s as *f, the rest (after one space) as the return value. */
static struct span field1(struct span s, struct span *f)
{
    const char *sp = s.n ? memchr(s.p, ' ', s.n) : NULL;
    *f = (struct span){ s.p, sp ? (size_t)(sp - s.p) : s.n };
    return sp ? (struct span){ sp + 1, s.n - f->n - 1 } : NONE;
}

/* A tier of a split or static-split line: declared, and not the fallback (last). */
static int split_tier(struct parser *ps, struct span tier, const char *what, uint32_t *ti)
{
    size_t where;
    *ti = set_find(&ps->tiers, tier, hm_fnv1a(tier.p, tier.n, FNV_SEED), &where);
    int split = strcmp(what, "split") == 0;
    if (*ti == NOT_FOUND)
        return fail(ps, split ? "split in undeclared tier" : "static-split in undeclared tier",
                    tier);
    if (*ti + 1 == ps->out->ntiers)
        return fail(ps, split ? "split in the fallback (last) tier"
                              : "static-split in the fallback (last) tier", tier);
    return 0;
}

/* `split TIER RANGES CHAIN` (v2 only): RANGES as parse_ranges's, ends at most
 * HMI_RANGE_END_MAX; TIER declared and not the fallback (last) tier; CHAIN as a site
 * line's. */
static int do_split(struct parser *ps, struct span rest)
{
    if (ps->out->version < 2)
        return fail(ps, "split lines need '# hmtune placement v2' as the first line", NONE);
    struct span tier, rs, chain;
    chain = strip(field1(field1(rest, &tier), &rs));
    uint32_t ti, n;
    if (split_tier(ps, tier, "split", &ti) || parse_ranges(ps, rs, HMI_RANGE_END_MAX,
                                                           BAD_SPLIT, &n))
        return -1;
    if (add_site(ps, ti, chain, ps->ranges + ps->nranges, n))
        return -1;
    ps->nranges += n;
    return 0;
}

/* `static TIER SIZE FRAME`, and in v2 `static-split TIER SIZE RANGES FRAME` (TIER not
 * the fallback; RANGES as parse_ranges's, ends at most SIZE rounded up to
 * HMI_RANGE_ALIGN): FRAME (one module+0xHEX frame, the rest of the line up to a
 * comment, stripped) at most once over both, SIZE >= 1 and the object below 2^48. */
static int do_static(struct parser *ps, struct span rest, int split)
{
    struct hmi_placement *o = ps->out;
    if (split && o->version < 2)
        return fail(ps, "static-split lines need '# hmtune placement v2' as the first line",
                    NONE);
    struct span tier, size, rs = NONE, frame, mod;
    frame = field1(field1(rest, &tier), &size);
    if (split)
        frame = field1(frame, &rs);
    frame = strip(frame);
    uint64_t sz = 0, off = 0;
    size_t where;
    uint32_t ti = set_find(&ps->tiers, tier, hm_fnv1a(tier.p, tier.n, FNV_SEED), &where), n = 0;
    if (!split && ti == NOT_FOUND)
        return fail(ps, "static in undeclared tier", tier);
    if (split && split_tier(ps, tier, "static-split", &ti))
        return -1;
    if (hmi_dec(size, &sz) != 0 || sz == 0 || !frame.n || memchr(frame.p, '#', frame.n) ||
        memmem(frame.p, frame.n, " > ", 3))
        return fail(ps, split ? BAD_STATIC_SPLIT : BAD_STATIC, frame.n ? frame : size);
    int r = hmi_frame_parse(frame, &mod, &off);
    if (r == -1)
        return fail(ps, split ? BAD_STATIC_SPLIT : BAD_STATIC, frame);
    if (r == -2 || sz > (1ull << HM_FRAME_MODSHIFT) - off)
        return fail(ps, "static object does not end below 2^48 (offset + size)", frame);
    if (split && parse_ranges(ps, rs, (sz + HMI_RANGE_ALIGN - 1) / HMI_RANGE_ALIGN *
                              HMI_RANGE_ALIGN, BAD_STATIC_SPLIT, &n))
        return -1;
    uint64_t h = hm_fnv1a(frame.p, frame.n, FNV_SEED);
    uint32_t dup = set_find(&ps->objects, frame, h, &where);
    if (dup != NOT_FOUND)
        return fail_at(ps, ps->lineno, "static object already listed at line", NONE, 1,
                       o->statics[dup].line);
    set_add(&ps->objects, where, frame, h);
    struct hmi_static *s = &o->statics[o->nstatics++];
    s->tier = ti;
    s->line = ps->lineno;
    s->module = copy_str(ps, mod);
    s->module_len = (uint32_t)mod.n;
    s->offset = off;
    s->size = sz;
    s->nranges = n;
    s->ranges = n ? ps->ranges + ps->nranges : NULL;
    ps->nranges += n;
    return 0;
}

/* `program PATH`: the program the placement was made for (an absolute path, as
 * /proc/self/exe names it), at most once. PATH is the rest of the line up to a
 * comment, stripped; no '#' in it (as in a chain). */
static int do_program(struct parser *ps, struct span rest)
{
    struct span path = strip(rest);
    const char *use = "expected one 'program PATH' line, PATH absolute, without '#'";
    if (ps->have_program || !path.n || path.p[0] != '/' || memchr(path.p, '#', path.n))
        return fail(ps, use, path.n ? path : NONE);
    if (path.n > HMI_PROGRAM_MAX)
        return fail_at(ps, ps->lineno, "program path longer than", NONE, 1, HMI_PROGRAM_MAX);
    ps->out->program = copy_str(ps, path);
    ps->have_program = 1;
    return 0;
}

static int do_line(struct parser *ps, struct span raw)
{
    struct span line = raw, key, rest;
    for (size_t i = 1; i < raw.n; i++)    /* placement._COMMENT: \s#.*$ */
        if (raw.p[i] == '#' && hmi_is_ws((unsigned char)raw.p[i - 1])) {
            line.n = i - 1;
            break;
        }
    while (line.n && hmi_is_ws((unsigned char)line.p[line.n - 1]))
        line.n--;
    struct span body = strip(line);
    if (!body.n || body.p[0] == '#')
        return 0;
    const char *sp = memchr(line.p, ' ', line.n);
    key = (struct span){ line.p, sp ? (size_t)(sp - line.p) : line.n };
    rest = sp ? (struct span){ sp + 1, line.n - key.n - 1 } : (struct span){ line.p + line.n, 0 };
    if (span_is(key, "tier"))
        return do_tier(ps, rest);
    if (span_is(key, "site"))
        return do_site(ps, rest);
    if (span_is(key, "split"))
        return do_split(ps, rest);
    if (span_is(key, "static"))
        return do_static(ps, rest, 0);
    if (span_is(key, "static-split"))
        return do_static(ps, rest, 1);
    if (span_is(key, "program"))
        return do_program(ps, rest);
    if (span_is(key, "depth")) {
        uint64_t d;
        const char *use = "expected one 'depth N' line, N >= 1";
        if (ps->have_depth || do_number(ps, rest, 1, &d, use))
            return ps->have_depth ? fail(ps, use, NONE) : -1;
        if (d == 0)
            return fail(ps, use, NONE);
        ps->out->depth = d;
        ps->have_depth = 1;
        return 0;
    }
    if (span_is(key, "size-window")) {
        uint64_t w[2];
        const char *use = "expected one 'size-window MIN MAX' line (bytes)";
        if (ps->have_window || do_number(ps, rest, 2, w, use))
            return ps->have_window ? fail(ps, use, NONE) : -1;
        if (w[0] > w[1])
            return fail(ps, "size-window: need MIN <= MAX", NONE);
        ps->out->size_min = w[0];
        ps->out->size_max = w[1];
        ps->have_window = 1;
        return 0;
    }
    return fail(ps, "unknown keyword", key);
}

/* placement._VERSION_LINE: ^# hmtune placement v(\d+)\s*$, and the number must be 1
 * or 2 (HMI_VERSION_MAX; v2 adds split lines). */
static int check_version(struct parser *ps, struct span l)
{
    static const char head[] = "# hmtune placement v";
    size_t h = sizeof head - 1, i = h;
    if (l.n < h || memcmp(l.p, head, h) != 0)
        return fail(ps, "not an hmtune placement file (the first line must be "
                        "'# hmtune placement v1')", NONE);
    while (i < l.n && hmi_is_digit((unsigned char)l.p[i]))
        i++;
    struct span num = { l.p + h, i - h };
    while (i < l.n && hmi_is_ws((unsigned char)l.p[i]))
        i++;
    if (!num.n || i != l.n)
        return fail(ps, "not an hmtune placement file (the first line must be "
                        "'# hmtune placement v1')", NONE);
    if (hmi_numcmp(num, (struct span){ "1", 1 }) == 0)
        ps->out->version = 1;
    else if (hmi_numcmp(num, (struct span){ "2", 1 }) == 0)
        ps->out->version = 2;
    else
        return fail(ps, "this hmtune reads placement v1 and v2, not version", num);
    return 0;
}

/* Upper bounds for the arena: lines starting "tier", lines starting "site" or
 * "split", the '+' in the latter (every frame holds one), the '-' in split lines
 * and static(-split) lines (every range holds one), and lines starting "static". */
static void prescan(const char *t, size_t len, size_t *nt, size_t *ns, size_t *np,
                    size_t *nst, size_t *nr)
{
    size_t pos = 0;
    struct span l;
    *nt = *ns = *np = *nst = *nr = 0;
    while (next_line(t, len, &pos, &l)) {
        if (l.n >= 4 && memcmp(l.p, "tier", 4) == 0) {
            (*nt)++;
        } else if (l.n >= 6 && memcmp(l.p, "static", 6) == 0) {
            (*nst)++;
            for (const char *p = l.p; (p = memchr(p, '-', l.n - (size_t)(p - l.p))); p++)
                (*nr)++;
        } else if ((l.n >= 4 && memcmp(l.p, "site", 4) == 0) ||
                   (l.n >= 5 && memcmp(l.p, "split", 5) == 0)) {
            (*ns)++;
            for (const char *p = l.p; (p = memchr(p, '+', l.n - (size_t)(p - l.p))); p++)
                (*np)++;
            if (l.p[1] == 'p')
                for (const char *p = l.p; (p = memchr(p, '-', l.n - (size_t)(p - l.p))); p++)
                    (*nr)++;
        }
    }
}

static int parse(struct parser *ps)
{
    struct hmi_placement *o = ps->out;
    size_t nt, ns, np, nst, nr, sl, first = 1;
    struct span l;
    if (ps->len > HMI_INPUT_MAX)
        return fail_at(ps, 0, "input of 4 GiB - 1 bytes or more", NONE, 0, 0);
    prescan(ps->text, ps->len, &nt, &ns, &np, &nst, &nr);
    size_t structs = nt * sizeof(struct hmi_tier) + ns * sizeof(struct hmi_site) +
                     nr * sizeof(struct hmi_range) +
                     np * (sizeof(struct hmi_frame) + sizeof(struct hmi_module)) +
                     nst * sizeof(struct hmi_static) + set_bytes(nt, &sl) +
                     set_bytes(ns, &sl) + set_bytes(np, &sl) + set_bytes(nst, &sl) + 64;
    /* strings: each a part of the input, with its NUL: 2 per tier, 1 per module, 1
     * per static's module, 1 for the program path, within the 16 spare */
    size_t total = structs + ps->len + 2 * nt + np + nst + 16;
    total = (total + 4095) & ~(size_t)4095;
    void *a = mmap(NULL, total, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a == MAP_FAILED)
        return fail_at(ps, 0, "cannot mmap memory for the placement, bytes:", NONE, 1, total);
    ps->arena = a;
    o->arena = a;
    o->arena_size = total;
    ps->sused = structs;
    o->tiers = carve(ps, nt * sizeof(struct hmi_tier));
    o->sites = carve(ps, ns * sizeof(struct hmi_site));
    ps->frames = carve(ps, np * sizeof(struct hmi_frame));
    o->modules = carve(ps, np * sizeof(struct hmi_module));
    o->statics = carve(ps, nst * sizeof(struct hmi_static));
    ps->ranges = carve(ps, nr * sizeof(struct hmi_range));
    set_init(ps, &ps->tiers, nt);
    set_init(ps, &ps->chains, ns);
    set_init(ps, &ps->modules, np);
    set_init(ps, &ps->objects, nst);

    ps->pos = 0;
    for (;;) {
        if (!next_line(ps->text, ps->len, &ps->pos, &l)) {
            if (!first)
                break;
            l = (struct span){ "", 0 };    /* empty input: an empty first line */
        }
        ps->lineno++;
        if (l.n > HMI_LINE_MAX)
            return fail_at(ps, ps->lineno, "line longer than", NONE, 1, HMI_LINE_MAX);
        if (memchr(l.p, 0, l.n))
            return fail(ps, "NUL byte", NONE);
        if (first ? check_version(ps, l) : do_line(ps, l))
            return -1;
        first = 0;
    }
    ps->lineno++;                           /* checks of the whole file: "line" = EOF */
    if (!ps->have_depth)
        return fail(ps, "end of file: missing depth line", NONE);
    if (!ps->have_window)
        return fail(ps, "end of file: missing size-window line", NONE);
    if (!o->ntiers)
        return fail(ps, "end of file: no tier lines", NONE);
    const struct hmi_tier *last = &o->tiers[o->ntiers - 1];
    if (!last->unlimited)
        return fail_at(ps, last->line, "the last tier is the fallback and must be unlimited",
                       (struct span){ last->name, strlen(last->name) }, 0, 0);
    for (uint32_t i = 0; i < o->nsites; i++)
        if (o->sites[i].nframes > o->depth)
            return fail_at(ps, o->sites[i].line, "site chain has more frames than depth",
                           NONE, 1, o->depth);
    return 0;
}

int hmi_placement_parse(const char *text, size_t len, struct hmi_placement *out,
                        char *err, size_t errlen)
{
    struct parser ps;
    memset(&ps, 0, sizeof ps);
    memset(out, 0, sizeof *out);
    if (err && errlen)
        err[0] = 0;
    ps.text = text ? text : "";
    ps.len = text ? len : 0;
    ps.err = err;
    ps.errlen = errlen;
    ps.out = out;
    if (parse(&ps) == 0)
        return 0;
    hmi_placement_free(out);
    return -1;
}

void hmi_placement_free(struct hmi_placement *p)
{
    if (p->arena)
        munmap(p->arena, p->arena_size);
    memset(p, 0, sizeof *p);
}
