/* ps_xalloc.c — hmtune-prvscan's way out: ps_die (one message, exit(1): ps_main.c's
 * atexit handler removes the partial outputs) and the malloc, realloc and calloc that
 * die when memory runs out. Zero-byte requests get one byte, so a NULL result always
 * means no memory. */
#include "ps.h"

#include <stdarg.h>
#include <stdlib.h>

void ps_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("hmtune-prvscan: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

void *ps_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        ps_die("out of memory (%zu bytes)", n);
    return p;
}

void *ps_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        ps_die("out of memory (%zu bytes)", n);
    return q;
}

void *ps_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        ps_die("out of memory (%zu x %zu bytes)", n, size);
    return p;
}
