/*
 * realloc_chain.c — a block that moves through three call sites by realloc, plus
 * realloc(NULL, n) acting as malloc.
 *
 * Sites by marker name (the call line ends with a SITE-colon-<name> comment):
 *   chain_a       malloc(100000)              100000
 *   chain_b       realloc(<chain_a>, 200000)  200000
 *   chain_c       realloc(<chain_b>, 400000)  400000  (a different line from b),
 *                                                     then free
 *   realloc_null  realloc(NULL, 250000)       250000  (acts as malloc), then free
 * realloc(p, 0) is deliberately not used (its semantics vary).
 * The contents are checked after each move.
 *
 * Output: "ok", exit 0.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

static void fill(volatile unsigned char *p, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        p[i] = (unsigned char)(i % 251);
}

static int check(volatile unsigned char *p, size_t to)
{
    for (size_t i = 0; i < to; i++)
        if (p[i] != (unsigned char)(i % 251))
            return 0;
    return 1;
}

int main(void)
{
    unsigned char *p = malloc(100000);           /* SITE:chain_a */
    if (!p)
        return 1;
    fill(p, 0, 100000);

    unsigned char *q = realloc(p, 200000);       /* SITE:chain_b */
    if (!q || !check(q, 100000))
        return 1;
    fill(q, 100000, 200000);

    unsigned char *r = realloc(q, 400000);       /* SITE:chain_c */
    if (!r || !check(r, 200000))
        return 1;
    fill(r, 200000, 400000);
    if (!check(r, 400000))
        return 1;
    free(r);

    unsigned char *n = realloc(NULL, 250000);    /* SITE:realloc_null */
    if (!n)
        return 1;
    fill(n, 0, 250000);
    if (!check(n, 250000))
        return 1;
    free(n);

    puts("ok");
    return 0;
}
