/* hmi_fields.c — see hmi_fields.h. */
#include "hmi_fields.h"
#include "hm_modmap.h"

#include <string.h>

static int span_is(struct span s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

/* Decimal digits: 0 ok, -1 not one or more ASCII digits, -2 over 64 bits. */
int hmi_dec(struct span s, uint64_t *v)
{
    uint64_t x = 0;
    int over = 0;
    if (!s.n)
        return -1;
    for (size_t i = 0; i < s.n; i++) {
        unsigned d = (unsigned char)s.p[i] - '0';
        if (d > 9)
            return -1;
        if (x > (UINT64_MAX - d) / 10)
            over = 1;
        else
            x = x * 10 + d;
    }
    *v = x;
    return over ? -2 : 0;
}

/* Compare two digit strings as numbers of any size. */
int hmi_numcmp(struct span a, struct span b)
{
    while (a.n > 1 && a.p[0] == '0') { a.p++; a.n--; }
    while (b.n > 1 && b.p[0] == '0') { b.p++; b.n--; }
    if (a.n != b.n)
        return a.n < b.n ? -1 : 1;
    return memcmp(a.p, b.p, a.n);
}

/* core.backends _NODES: N[-M](,N[-M])*, each range not running backwards. */
static int numa_ok(struct span a)
{
    size_t i = 0;
    for (;;) {
        size_t lo = i, hi;
        while (i < a.n && hmi_is_digit((unsigned char)a.p[i]))
            i++;
        if (i == lo)
            return 0;
        if (i < a.n && a.p[i] == '-') {
            hi = ++i;
            while (i < a.n && hmi_is_digit((unsigned char)a.p[i]))
                i++;
            if (i == hi || hmi_numcmp((struct span){ a.p + hi, i - hi },
                                  (struct span){ a.p + lo, hi - 1 - lo }) < 0)
                return 0;
        }
        if (i == a.n)
            return 1;
        if (a.p[i++] != ',')
            return 0;
    }
}

/* hmtune.core.backends.grammar_problem returning None. */
/* umf:hugetlb, umf:numa:LIST, umf:numa:LIST:MODE (MODE bind, preferred, interleave):
 * arg is what follows "umf:". */
static int umf_ok(struct span arg)
{
    if (span_is(arg, "hugetlb"))
        return 1;
    if (arg.n < 5 || memcmp(arg.p, "numa:", 5) != 0)
        return 0;
    struct span list = { arg.p + 5, arg.n - 5 };
    const char *colon = memchr(list.p, ':', list.n);
    if (colon) {
        struct span mode = { colon + 1, list.n - (size_t)(colon - list.p) - 1 };
        if (!span_is(mode, "bind") && !span_is(mode, "preferred") && !span_is(mode, "interleave"))
            return 0;
        list.n = (size_t)(colon - list.p);
    }
    return numa_ok(list);
}

int hmi_backend_ok(struct span b)
{
    const char *colon = memchr(b.p, ':', b.n);
    if (!colon)
        return span_is(b, "hugetlb") || span_is(b, "thp") || span_is(b, "default");
    struct span kind = { b.p, (size_t)(colon - b.p) };
    struct span arg = { colon + 1, b.n - kind.n - 1 };
    if (span_is(kind, "numa"))
        return numa_ok(arg);
    if (span_is(kind, "umf"))
        return umf_ok(arg);
    if (!span_is(kind, "memkind") || arg.n <= 8 || memcmp(arg.p, "MEMKIND_", 8) != 0)
        return 0;
    for (size_t i = 8; i < arg.n; i++) {
        char c = arg.p[i];
        if (!((c >= 'A' && c <= 'Z') || hmi_is_digit((unsigned char)c) || c == '_'))
            return 0;
    }
    return 1;
}

int hmi_name_ok(struct span s)
{
    if (s.n < 1 || s.n > 64)
        return 0;
    for (size_t i = 0; i < s.n; i++) {
        char c = s.p[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || hmi_is_digit((unsigned char)c) ||
              c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

/* One stripped frame against placement._FRAME, ^[^\s>](?:[^>]*[^\s>])?\+0x[0-9a-f]+$:
 * the offset follows the last '+'. 0 ok, -1 malformed, -2 offset of 2^48 or more. */
int hmi_frame_parse(struct span f, struct span *mod, uint64_t *off)
{
    const char *plus = f.n ? memrchr(f.p, '+', f.n) : NULL;
    uint64_t x = 0;
    int over = 0;
    if (!plus)
        return -1;
    size_t mlen = (size_t)(plus - f.p), hl = f.n - mlen - 1;
    if (hl < 3 || plus[1] != '0' || plus[2] != 'x' || mlen == 0)
        return -1;
    if (memchr(f.p, '>', mlen) || hmi_is_ws((unsigned char)f.p[0]) ||
        hmi_is_ws((unsigned char)f.p[mlen - 1]))
        return -1;
    for (size_t i = 3; i <= hl; i++) {   /* plus[1..hl] is "0x" HEX */
        char c = plus[i];
        unsigned d = hmi_is_digit((unsigned char)c) ? (unsigned)(c - '0')
                   : (c >= 'a' && c <= 'f') ? (unsigned)(c - 'a' + 10) : 16u;
        if (d == 16)
            return -1;
        if (x >> (HM_FRAME_MODSHIFT - 4))
            over = 1;
        else
            x = (x << 4) | d;
    }
    *mod = (struct span){ f.p, mlen };
    *off = x;
    return over ? -2 : 0;
}
