/* ps_fmt.c — the number formatting the scanner's tables share (sites.tsv, allocs.csv,
 * profile.csv): decimal and hexadecimal digits written in place, without printf
 * (printf costs ~100 ns per number; allocs.csv can have millions of rows of seven
 * numbers). */
#include "ps.h"

#include <string.h>

#include "hm_util.h"

char *ps_fmt_u64(char *p, uint64_t v)
{
    return p + hm_fmt_u64(p, v);
}

char *ps_fmt_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return ps_fmt_u64(p, (uint64_t)0 - (uint64_t)v);
    }
    return ps_fmt_u64(p, (uint64_t)v);
}

char *ps_fmt_hex(char *p, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = digits[v & 15];
        v >>= 4;
    } while (v);
    *p++ = '0';
    *p++ = 'x';
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* A version line's value, percent-encoded as hmtune/analyze/sites_io.py's version_line
 * does (UTF-8 bytes outside its safe set). */
void ps_put_encoded(FILE *out, const char *text)
{
    static const char safe[] = "/:+!,.-_~@()[]";
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
            strchr(safe, *c))
            fputc(*c, out);
        else
            fprintf(out, "%%%02X", *c);
    }
}
