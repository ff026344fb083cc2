/* hmi_placement_lines.c — each line of placement.txt (hmi_placement_lines.h): the
 * version line, and by keyword the tier, site, split, static, static-split, program,
 * depth and size-window lines, with the grammar, checks and limits of
 * hmtune/core/placement.py's reader, check for check (the two are compared side by
 * side: tests/py/test_placement_grammar.py). hmi_placement.c reads the file around
 * them. No malloc family, no stdio. */
#include "hmi_placement_lines.h"
#include "hm_modmap.h"

#include <string.h>

#define FNV_SEED  0xcbf29ce484222325ull   /* as hm_modmap.c, so hashes compare */
#define BAD_TIER  "expected 'tier NAME BACKEND CAPACITY' (bytes or 'unlimited')"
#define BAD_CHAIN "site chain is not module+0xHEX frames joined by ' > '"
#define BAD_STATIC "expected 'static TIER SIZE module+0xHEX' (SIZE 1 or more)"
#define BAD_SPLIT "expected 'split TIER START-END[,START-END...] CHAIN': byte offsets, " \
                  "multiples of 4096, START < END <= 2^48, increasing and not touching"
#define BAD_STATIC_SPLIT "expected 'static-split TIER SIZE START-END[,START-END...] " \
                  "module+0xHEX': byte offsets in the object, multiples of 4096, START < " \
                  "END <= SIZE rounded up to 4096, increasing and not touching"

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
        return hmi_pl_fail(ps, "tier lines must come before depth, size-window, site, split and "
                           "static lines", NONE);
    if (split_sp(rest, f, 3) != 3)
        return hmi_pl_fail(ps, BAD_TIER, NONE);
    if (o->ntiers >= HMI_MAX_TIER_LINES)     /* the backends have that many slots */
        return hmi_pl_fail_at(ps, ps->lineno, "more tier lines than", NONE, 1, HMI_MAX_TIER_LINES);
    unl = span_is(f[2], "unlimited");
    if (!unl && (r = hmi_dec(f[2], &cap)) != 0)
        return hmi_pl_fail(ps, r == -2 ? "capacity does not fit in 64 bits" : BAD_TIER, f[2]);
    if (!hmi_backend_ok(f[1]))
        return hmi_pl_fail(ps, "unknown or malformed backend", f[1]);
    if (!hmi_name_ok(f[0]))
        return hmi_pl_fail(ps, "tier name is not 1-64 letters, digits, '_', '.' or '-'", f[0]);
    if (!unl && cap == 0)
        return hmi_pl_fail(ps, "capacity must be > 0 bytes or 'unlimited'", NONE);
    if (o->ntiers && o->tiers[o->ntiers - 1].unlimited)
        return hmi_pl_fail(ps, "only the last tier may be unlimited; a tier follows", f[0]);
    uint64_t h = hm_fnv1a(f[0].p, f[0].n, FNV_SEED);
    if (hmi_pl_set_find(&ps->tiers, f[0], h, &where) != NOT_FOUND)
        return hmi_pl_fail(ps, "a tier name is used twice", f[0]);
    struct hmi_tier *t = &o->tiers[o->ntiers++];
    t->name = hmi_pl_copy_str(ps, f[0]);
    t->backend = hmi_pl_copy_str(ps, f[1]);
    t->capacity = cap;
    t->unlimited = unl;
    t->line = ps->lineno;
    hmi_pl_set_add(&ps->tiers, where, (struct span){ t->name, f[0].n }, h);
    return 0;
}

static int do_number(struct parser *ps, struct span rest, size_t want, uint64_t *v,
                     const char *usage)
{
    struct span f[2];
    if (split_sp(rest, f, 2) != want)
        return hmi_pl_fail(ps, usage, NONE);
    for (size_t i = 0; i < want; i++) {
        int r = hmi_dec(f[i], &v[i]);
        if (r)
            return hmi_pl_fail(ps, r == -2 ? "number does not fit in 64 bits" : usage, f[i]);
    }
    return 0;
}

static uint32_t intern_module(struct parser *ps, struct span m)
{
    size_t where;
    uint64_t h = hm_fnv1a(m.p, m.n, FNV_SEED);
    uint32_t i = hmi_pl_set_find(&ps->modules, m, h, &where);
    if (i != NOT_FOUND)
        return i;
    struct hmi_module *mod = &ps->out->modules[ps->out->nmodules++];
    mod->path = hmi_pl_copy_str(ps, m);
    mod->len = (uint32_t)m.n;
    mod->hash = h;
    return hmi_pl_set_add(&ps->modules, where, (struct span){ mod->path, m.n }, h);
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
        return hmi_pl_fail(ps, BAD_CHAIN, chain);
    uint32_t first = ps->nframes, k = 0;
    const char *p = chain.p, *end = chain.p + chain.n;
    for (;;) {                         /* chain.split(" > "), each frame stripped */
        const char *q = memmem(p, (size_t)(end - p), " > ", 3);
        struct span f = strip((struct span){ p, (size_t)((q ? q : end) - p) }), mod;
        uint64_t off;
        int r = hmi_frame_parse(f, &mod, &off);
        if (r)
            return hmi_pl_fail(ps, r == -2 ? "frame offset does not fit in 48 bits" : BAD_CHAIN, f);
        if (++k > HMI_MAX_FRAMES)
            return hmi_pl_fail_at(ps, ps->lineno, "site chain has more frames than", NONE, 1,
                                  HMI_MAX_FRAMES);
        ps->frames[ps->nframes].module = intern_module(ps, mod);
        ps->frames[ps->nframes++].offset = off;
        if (!q)
            break;
        p = q + 3;
    }
    uint64_t h = hm_fnv1a(chain.p, chain.n, FNV_SEED);
    uint32_t dup = hmi_pl_set_find(&ps->chains, chain, h, &where);
    if (dup != NOT_FOUND)
        return hmi_pl_fail_at(ps, ps->lineno, "site chain already listed at line", NONE, 1,
                              o->sites[dup].line);
    hmi_pl_set_add(&ps->chains, where, chain, h);
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
    uint32_t ti = hmi_pl_set_find(&ps->tiers, tier, hm_fnv1a(tier.p, tier.n, FNV_SEED), &where);
    if (ti == NOT_FOUND)
        return hmi_pl_fail(ps, "site in undeclared tier", tier);
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
            return hmi_pl_fail_at(ps, ps->lineno, "split line has more ranges than", NONE, 1,
                                  HMI_MAX_RANGES);
        if (!dash || hmi_dec((struct span){ item.p, (size_t)(dash - item.p) }, &a) != 0 ||
            hmi_dec((struct span){ dash + 1, item.n - (size_t)(dash - item.p) - 1 }, &b) != 0 ||
            a >= b || a % HMI_RANGE_ALIGN || b % HMI_RANGE_ALIGN || b > max ||
            (*n && a <= r[*n - 1].end))
            return hmi_pl_fail(ps, bad, item);
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
    *ti = hmi_pl_set_find(&ps->tiers, tier, hm_fnv1a(tier.p, tier.n, FNV_SEED), &where);
    int split = strcmp(what, "split") == 0;
    if (*ti == NOT_FOUND)
        return hmi_pl_fail(ps, split ? "split in undeclared tier"
                                     : "static-split in undeclared tier", tier);
    if (*ti + 1 == ps->out->ntiers)
        return hmi_pl_fail(ps, split ? "split in the fallback (last) tier"
                                     : "static-split in the fallback (last) tier", tier);
    return 0;
}

/* `split TIER RANGES CHAIN` (v2 only): RANGES as parse_ranges's, ends at most
 * HMI_RANGE_END_MAX; TIER declared and not the fallback (last) tier; CHAIN as a site
 * line's. */
static int do_split(struct parser *ps, struct span rest)
{
    if (ps->out->version < 2)
        return hmi_pl_fail(ps, "split lines need '# hmtune placement v2' as the first line", NONE);
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
        return hmi_pl_fail(ps, "static-split lines need '# hmtune placement v2' as the first line",
                           NONE);
    struct span tier, size, rs = NONE, frame, mod;
    frame = field1(field1(rest, &tier), &size);
    if (split)
        frame = field1(frame, &rs);
    frame = strip(frame);
    uint64_t sz = 0, off = 0;
    size_t where;
    uint32_t n = 0;
    uint32_t ti = hmi_pl_set_find(&ps->tiers, tier, hm_fnv1a(tier.p, tier.n, FNV_SEED), &where);
    if (!split && ti == NOT_FOUND)
        return hmi_pl_fail(ps, "static in undeclared tier", tier);
    if (split && split_tier(ps, tier, "static-split", &ti))
        return -1;
    if (hmi_dec(size, &sz) != 0 || sz == 0 || !frame.n || memchr(frame.p, '#', frame.n) ||
        memmem(frame.p, frame.n, " > ", 3))
        return hmi_pl_fail(ps, split ? BAD_STATIC_SPLIT : BAD_STATIC, frame.n ? frame : size);
    int r = hmi_frame_parse(frame, &mod, &off);
    if (r == -1)
        return hmi_pl_fail(ps, split ? BAD_STATIC_SPLIT : BAD_STATIC, frame);
    if (r == -2 || sz > (1ull << HM_FRAME_MODSHIFT) - off)
        return hmi_pl_fail(ps, "static object does not end below 2^48 (offset + size)", frame);
    if (split && parse_ranges(ps, rs, (sz + HMI_RANGE_ALIGN - 1) / HMI_RANGE_ALIGN *
                              HMI_RANGE_ALIGN, BAD_STATIC_SPLIT, &n))
        return -1;
    uint64_t h = hm_fnv1a(frame.p, frame.n, FNV_SEED);
    uint32_t dup = hmi_pl_set_find(&ps->objects, frame, h, &where);
    if (dup != NOT_FOUND)
        return hmi_pl_fail_at(ps, ps->lineno, "static object already listed at line", NONE, 1,
                              o->statics[dup].line);
    hmi_pl_set_add(&ps->objects, where, frame, h);
    struct hmi_static *s = &o->statics[o->nstatics++];
    s->tier = ti;
    s->line = ps->lineno;
    s->module = hmi_pl_copy_str(ps, mod);
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
        return hmi_pl_fail(ps, use, path.n ? path : NONE);
    if (path.n > HMI_PROGRAM_MAX)
        return hmi_pl_fail_at(ps, ps->lineno, "program path longer than", NONE, 1, HMI_PROGRAM_MAX);
    ps->out->program = hmi_pl_copy_str(ps, path);
    ps->have_program = 1;
    return 0;
}

int hmi_pl_line(struct parser *ps, struct span raw)
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
            return ps->have_depth ? hmi_pl_fail(ps, use, NONE) : -1;
        if (d == 0)
            return hmi_pl_fail(ps, use, NONE);
        ps->out->depth = d;
        ps->have_depth = 1;
        return 0;
    }
    if (span_is(key, "size-window")) {
        uint64_t w[2];
        const char *use = "expected one 'size-window MIN MAX' line (bytes)";
        if (ps->have_window || do_number(ps, rest, 2, w, use))
            return ps->have_window ? hmi_pl_fail(ps, use, NONE) : -1;
        if (w[0] > w[1])
            return hmi_pl_fail(ps, "size-window: need MIN <= MAX", NONE);
        ps->out->size_min = w[0];
        ps->out->size_max = w[1];
        ps->have_window = 1;
        return 0;
    }
    return hmi_pl_fail(ps, "unknown keyword", key);
}

/* placement._VERSION_LINE: ^# hmtune placement v(\d+)\s*$, and the number must be 1
 * or 2 (HMI_VERSION_MAX; v2 adds split lines). */
int hmi_pl_version(struct parser *ps, struct span l)
{
    static const char head[] = "# hmtune placement v";
    size_t h = sizeof head - 1, i = h;
    if (l.n < h || memcmp(l.p, head, h) != 0)
        return hmi_pl_fail(ps, "not an hmtune placement file (the first line must be "
                           "'# hmtune placement v1')", NONE);
    while (i < l.n && hmi_is_digit((unsigned char)l.p[i]))
        i++;
    struct span num = { l.p + h, i - h };
    while (i < l.n && hmi_is_ws((unsigned char)l.p[i]))
        i++;
    if (!num.n || i != l.n)
        return hmi_pl_fail(ps, "not an hmtune placement file (the first line must be "
                           "'# hmtune placement v1')", NONE);
    if (hmi_numcmp(num, (struct span){ "1", 1 }) == 0)
        ps->out->version = 1;
    else if (hmi_numcmp(num, (struct span){ "2", 1 }) == 0)
        ps->out->version = 2;
    else
        return hmi_pl_fail(ps, "this hmtune reads placement v1 and v2, not version", num);
    return 0;
}
