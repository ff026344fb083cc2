/*
 * dlopen_lib.c — libdlalloc.so, loaded at run time by dlopen_main.
 *
 * Sites by marker name (the call line ends with a SITE-colon-<name> comment):
 *   dl_alloc   malloc(n) inside the library; dlopen_main calls it with
 *              n = 600000 (first load) and n = 700000 (second load).
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>

void *dl_alloc(size_t n);

void *dl_alloc(size_t n)
{
    volatile char *p = malloc(n);                /* SITE:dl_alloc */
    if (p) {                                     /* touch: also keeps the call */
        for (size_t i = 0; i < n; i += 4096)     /* out of tail position */
            p[i] = 1;
        p[n - 1] = 1;
    }
    return (void *)p;
}
