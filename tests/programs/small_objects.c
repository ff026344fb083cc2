/* small_objects: sites whose objects are small (under the hugetlb arena's 1 MiB
 * limit) next to sites of large objects, all live for the whole run and read in
 * proportion to their weight: the granularity test of the advisor and libhmalloc
 * (tests/py/test_run_reserve.py). Prints a checksum that does not depend on where
 * the memory is.
 *   rows: 400 objects of 24 KiB (hot), mids: 12 of 600 KiB (warm),
 *   bigs: 2 of 3 MiB (cool), colds: 100 of 100 KiB (never read after the fill). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB 1024u

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

static uint64_t **alloc_rows(size_t n, size_t size)
{
    uint64_t **p = malloc(n * sizeof *p);
    if (!p)
        exit(2);
    for (size_t i = 0; i < n; i++) {
        p[i] = malloc(size);                    /* one call site per group */
        if (!p[i])
            exit(2);
        for (size_t k = 0; k < size / 8; k++)
            p[i][k] = k * 2654435761u + i;
    }
    return p;
}

static uint64_t **alloc_mids(size_t n, size_t size)
{
    uint64_t **p = malloc(n * sizeof *p);
    if (!p)
        exit(2);
    for (size_t i = 0; i < n; i++) {
        p[i] = malloc(size);
        if (!p[i])
            exit(2);
        for (size_t k = 0; k < size / 8; k++)
            p[i][k] = k ^ i;
    }
    return p;
}

static uint64_t **alloc_bigs(size_t n, size_t size)
{
    uint64_t **p = malloc(n * sizeof *p);
    if (!p)
        exit(2);
    for (size_t i = 0; i < n; i++) {
        p[i] = malloc(size);
        if (!p[i])
            exit(2);
        for (size_t k = 0; k < size / 8; k++)
            p[i][k] = k + i;
    }
    return p;
}

static uint64_t **alloc_colds(size_t n, size_t size)
{
    uint64_t **p = malloc(n * sizeof *p);
    if (!p)
        exit(2);
    for (size_t i = 0; i < n; i++) {
        p[i] = malloc(size);
        if (!p[i])
            exit(2);
        memset(p[i], (int)i, size);
    }
    return p;
}

static uint64_t touch(uint64_t **p, size_t n, size_t size, long reads)
{
    uint64_t s = 0;
    size_t words = size / 8;
    for (long r = 0; r < reads; r++) {
        uint64_t x = next();
        s += p[x % n][(x >> 20) % words];
    }
    return s;
}

int main(int argc, char **argv)
{
    long scale = argc > 1 ? atol(argv[1]) : 20;     /* millions of reads in all */
    if (scale < 1)
        scale = 1;
    size_t nr = 400, sr = 24 * KIB, nm = 12, sm = 600 * KIB, nb = 2, sb = 3072 * KIB;
    size_t nc = 100, sc = 100 * KIB;
    uint64_t **rows = alloc_rows(nr, sr), **mids = alloc_mids(nm, sm);
    uint64_t **bigs = alloc_bigs(nb, sb), **colds = alloc_colds(nc, sc);
    uint64_t sum = 0;
    long m = scale * 1000000;
    for (int rep = 0; rep < 10; rep++) {
        sum += touch(rows, nr, sr, m / 10 * 6 / 10);
        sum += touch(mids, nm, sm, m / 10 * 3 / 10);
        sum += touch(bigs, nb, sb, m / 10 / 10);
    }
    printf("checksum=%llu\n", (unsigned long long)sum);
    for (size_t i = 0; i < nr; i++)
        free(rows[i]);
    for (size_t i = 0; i < nm; i++)
        free(mids[i]);
    for (size_t i = 0; i < nb; i++)
        free(bigs[i]);
    for (size_t i = 0; i < nc; i++)
        free(colds[i]);
    free(rows), free(mids), free(bigs), free(colds);
    return 0;
}
