/* hmi_placement.c — see hmi_placement.h. The grammar, the checks and the limits are
 * those of hmtune/core/placement.py's reader, which `hmtune run` applies first: the two
 * must give the same verdict on every file (tests/py/test_placement_grammar.py).
 * Lines split at \n, \r\n, \r, \v, \f and \x1c-\x1e (Python's str.splitlines on
 * ASCII). "White space" is space, \t-\r and \x1c-\x1f (str.strip() and regex \s in
 * ASCII). Non-ASCII bytes are ordinary path bytes.
 *
 * This file: the input as a whole (its size, the arena sized from it, the lines in
 * order, the checks of the whole file); each line is hmi_placement_lines.c's, which
 * mirrors hmtune/core/placement.py's reader check for check, and the arena, string
 * sets and messages are hmi_reader.c's. */
#include "hmi_placement.h"
#include "hmi_placement_lines.h"

#include <string.h>
#include <sys/mman.h>

static int is_break(unsigned char c)
{
    return c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e);
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
        return hmi_pl_fail_at(ps, 0, "input of 4 GiB - 1 bytes or more", NONE, 0, 0);
    prescan(ps->text, ps->len, &nt, &ns, &np, &nst, &nr);
    size_t structs = nt * sizeof(struct hmi_tier) + ns * sizeof(struct hmi_site) +
                     nr * sizeof(struct hmi_range) +
                     np * (sizeof(struct hmi_frame) + sizeof(struct hmi_module)) +
                     nst * sizeof(struct hmi_static) + hmi_pl_set_bytes(nt, &sl) +
                     hmi_pl_set_bytes(ns, &sl) + hmi_pl_set_bytes(np, &sl) +
                     hmi_pl_set_bytes(nst, &sl) + 64;
    /* strings: each a part of the input, with its NUL: 2 per tier, 1 per module, 1
     * per static's module, 1 for the program path, within the 16 spare */
    size_t total = structs + ps->len + 2 * nt + np + nst + 16;
    total = (total + 4095) & ~(size_t)4095;
    void *a = mmap(NULL, total, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a == MAP_FAILED)
        return hmi_pl_fail_at(ps, 0, "cannot mmap memory for the placement, bytes:", NONE, 1,
                              total);
    ps->arena = a;
    o->arena = a;
    o->arena_size = total;
    ps->sused = structs;
    o->tiers = hmi_pl_carve(ps, nt * sizeof(struct hmi_tier));
    o->sites = hmi_pl_carve(ps, ns * sizeof(struct hmi_site));
    ps->frames = hmi_pl_carve(ps, np * sizeof(struct hmi_frame));
    o->modules = hmi_pl_carve(ps, np * sizeof(struct hmi_module));
    o->statics = hmi_pl_carve(ps, nst * sizeof(struct hmi_static));
    ps->ranges = hmi_pl_carve(ps, nr * sizeof(struct hmi_range));
    hmi_pl_set_init(ps, &ps->tiers, nt);
    hmi_pl_set_init(ps, &ps->chains, ns);
    hmi_pl_set_init(ps, &ps->modules, np);
    hmi_pl_set_init(ps, &ps->objects, nst);

    ps->pos = 0;
    for (;;) {
        if (!next_line(ps->text, ps->len, &ps->pos, &l)) {
            if (!first)
                break;
            l = (struct span){ "", 0 };    /* empty input: an empty first line */
        }
        ps->lineno++;
        if (l.n > HMI_LINE_MAX)
            return hmi_pl_fail_at(ps, ps->lineno, "line longer than", NONE, 1, HMI_LINE_MAX);
        if (memchr(l.p, 0, l.n))
            return hmi_pl_fail(ps, "NUL byte", NONE);
        if (first ? hmi_pl_version(ps, l) : hmi_pl_line(ps, l))
            return -1;
        first = 0;
    }
    ps->lineno++;                           /* checks of the whole file: "line" = EOF */
    if (!ps->have_depth)
        return hmi_pl_fail(ps, "end of file: missing depth line", NONE);
    if (!ps->have_window)
        return hmi_pl_fail(ps, "end of file: missing size-window line", NONE);
    if (!o->ntiers)
        return hmi_pl_fail(ps, "end of file: no tier lines", NONE);
    const struct hmi_tier *last = &o->tiers[o->ntiers - 1];
    if (!last->unlimited)
        return hmi_pl_fail_at(ps, last->line,
                              "the last tier is the fallback and must be unlimited",
                              (struct span){ last->name, strlen(last->name) }, 0, 0);
    for (uint32_t i = 0; i < o->nsites; i++)
        if (o->sites[i].nframes > o->depth)
            return hmi_pl_fail_at(ps, o->sites[i].line,
                                  "site chain has more frames than depth", NONE, 1, o->depth);
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
