/*
 * static_app.c — a statically linked program (-static). LD_PRELOAD has no effect on
 * it, so a tracer cannot interpose; tests check that the tool says so.
 *
 * Sites by marker name (the call line ends with a SITE-colon-<name> comment):
 *   static   malloc(123456)   touched, freed (invisible to an LD_PRELOAD tracer)
 *
 * Output: "static ok", exit 0.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    volatile char *p = malloc(123456);           /* SITE:static */
    if (!p)
        return 1;
    for (size_t i = 0; i < 123456; i += 4096)
        p[i] = 1;
    free((void *)p);
    puts("static ok");
    return 0;
}
