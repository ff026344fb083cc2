/* hmi_reader.c — the placement reader's error messages, arena and string sets
 * (hmi_reader.h), shared by hmi_placement.c and hmi_placement_lines.c. */
#include "hmi_reader.h"

#include <string.h>

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

int hmi_pl_fail_at(struct parser *ps, uint32_t line, const char *why, struct span what,
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

int hmi_pl_fail(struct parser *ps, const char *why, struct span what)
{
    return hmi_pl_fail_at(ps, ps->lineno, why, what, 0, 0);
}

/* ---- arena and string sets ---- */

void *hmi_pl_carve(struct parser *ps, size_t bytes)
{
    void *p = ps->arena + ps->used;
    ps->used += (bytes + 7) & ~(size_t)7;
    return p;
}

const char *hmi_pl_copy_str(struct parser *ps, struct span s)
{
    char *d = ps->arena + ps->sused;
    memcpy(d, s.p, s.n);
    d[s.n] = 0;
    ps->sused += s.n + 1;
    return d;
}

size_t hmi_pl_set_bytes(size_t cap, size_t *slots)
{
    size_t n = 1;
    while (n < 2 * cap)
        n <<= 1;
    *slots = n;
    return ((cap * sizeof(struct span) + 7) & ~(size_t)7) + cap * 8 + ((n * 4 + 7) & ~(size_t)7);
}

void hmi_pl_set_init(struct parser *ps, struct strset *s, size_t cap)
{
    size_t slots;
    hmi_pl_set_bytes(cap, &slots);
    s->keys = hmi_pl_carve(ps, cap * sizeof(struct span));
    s->hashes = hmi_pl_carve(ps, cap * 8);
    s->slot = hmi_pl_carve(ps, slots * 4);
    s->mask = slots - 1;
    s->n = 0;
}

/* Index of (p, n) in s, or NOT_FOUND with *where = the free slot to add it at. */
uint32_t hmi_pl_set_find(const struct strset *s, struct span k, uint64_t h, size_t *where)
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
uint32_t hmi_pl_set_add(struct strset *s, size_t where, struct span k, uint64_t h)
{
    s->keys[s->n] = k;
    s->hashes[s->n] = h;
    s->slot[where] = s->n + 1;
    return s->n++;
}

