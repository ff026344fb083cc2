/*
 * allfamily.c — one call to every allocation entry point the tracer wraps.
 * Built twice: allfamily (PIE, the default) and allfamily-nopie (-no-pie -fno-pie).
 *
 * Sites by marker name (the call line ends with a SITE-colon-<name> comment):
 *   malloc            malloc(110000)                       110000
 *   calloc            calloc(1000, 100)                    100000 (nmemb*size)
 *   realloc_src       malloc(120000)                       120000
 *   realloc           realloc(<realloc_src block>, 240000) 240000 (grows it)
 *   reallocarray_src  malloc(149000)                       149000
 *   reallocarray      reallocarray(<block>, 1500, 100)     150000 (grows it)
 *   posix_memalign    posix_memalign(&p, 4096, 160000)     160000
 *   aligned_alloc     aligned_alloc(4096, 172032)          172032 (42 pages)
 *   memalign          memalign(4096, 180000)               180000
 *   valloc            valloc(190000)                       190000
 *   pvalloc           pvalloc(200000)                      200000 (glibc rounds the
 *                                                               block up to 200704)
 * Every block above is freed exactly once (realloc_src and reallocarray_src are
 * consumed by their realloc, so 9 frees of traced blocks in all).
 * Note: glibc (2.36) implements reallocarray as a tail call to realloc through the
 * PLT, so a wrapper of reallocarray sees a nested realloc(p, 150000) coming from
 * inside itself unless it guards against re-entry.
 *
 * Small calls that a tracer with the default size threshold must NOT record
 * (marked SMALL-colon-<name>): malloc(16), malloc(1000), calloc(10, 10) = 100,
 * malloc(4000) realloc'd to 3000. All freed.
 *
 * Output: "ok", exit 0.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int failures;

/* Write one byte per page through a volatile pointer: the allocation is used,
 * so the compiler cannot drop the malloc/free pair. */
static void touch(void *p, size_t n, unsigned char v)
{
    volatile unsigned char *c = p;
    if (!p) {
        failures++;
        return;
    }
    for (size_t i = 0; i < n; i += 4096)
        c[i] = v;
    c[n - 1] = v;
}

static void check_aligned(void *p, size_t align)
{
    if (((uintptr_t)p & (align - 1)) != 0)
        failures++;
}

int main(void)
{
    /* small, untraced */
    char *s1 = malloc(16);                       /* SMALL:malloc16 */
    char *s2 = malloc(1000);                     /* SMALL:malloc1000 */
    char *s3 = calloc(10, 10);                   /* SMALL:calloc100 */
    char *s4 = malloc(4000);                     /* SMALL:malloc4000 */
    touch(s1, 16, 1);
    touch(s2, 1000, 2);
    touch(s3, 100, 3);
    touch(s4, 4000, 4);
    s4 = realloc(s4, 3000);                      /* SMALL:realloc3000 */
    touch(s4, 3000, 5);

    char *m = malloc(110000);                    /* SITE:malloc */
    touch(m, 110000, 6);

    char *c = calloc(1000, 100);                 /* SITE:calloc */
    if (c && (c[0] != 0 || c[99999] != 0))
        failures++;
    touch(c, 100000, 7);

    char *r = malloc(120000);                    /* SITE:realloc_src */
    touch(r, 120000, 8);
    r = realloc(r, 240000);                      /* SITE:realloc */
    if (r && ((volatile char *)r)[0] != 8)
        failures++;
    touch(r, 240000, 9);

    char *ra = malloc(149000);                   /* SITE:reallocarray_src */
    touch(ra, 149000, 10);
    ra = reallocarray(ra, 1500, 100);            /* SITE:reallocarray */
    if (ra && ((volatile char *)ra)[0] != 10)
        failures++;
    touch(ra, 150000, 11);

    void *pm = NULL;
    if (posix_memalign(&pm, 4096, 160000) != 0) /* SITE:posix_memalign */
        failures++;
    check_aligned(pm, 4096);
    touch(pm, 160000, 12);

    void *aa = aligned_alloc(4096, 172032);      /* SITE:aligned_alloc */
    check_aligned(aa, 4096);
    touch(aa, 172032, 13);

    void *ma = memalign(4096, 180000);           /* SITE:memalign */
    check_aligned(ma, 4096);
    touch(ma, 180000, 14);

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    void *va = valloc(190000);                   /* SITE:valloc */
    void *pv = pvalloc(200000);                  /* SITE:pvalloc */
#pragma GCC diagnostic pop
    check_aligned(va, 4096);
    check_aligned(pv, 4096);
    touch(va, 190000, 15);
    touch(pv, 200000, 16);

    free(pv);
    free(va);
    free(ma);
    free(aa);
    free(pm);
    free(ra);
    free(r);
    free(c);
    free(m);
    free(s4);
    free(s3);
    free(s2);
    free(s1);

    if (failures) {
        fprintf(stderr, "allfamily: %d failures\n", failures);
        return 1;
    }
    puts("ok");
    return 0;
}
