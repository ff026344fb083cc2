/*
 * static_half.c — parts of a static array (issue 43): one large array in .bss whose
 * first half is hot and whose second half is touched once, so a static is worth
 * placing by page ranges, half of it in the fast tier.
 *
 * Static (the declaration line ends with a STATIC-colon-<name> comment):
 *   big   double[BIG_MIB << 17]   BIG_MIB MiB (default 64; -DBIG_MIB=512 for NPB IS's
 *                                 size), .bss: written once in full, then the first half
 *                                 read and written PASSES times, the second half once more
 *
 * Usage: static_half [PASSES [MAPS]] (default 300 passes). Output: "static_half
 * <checksum>" (the same for every run with the same PASSES), then "ok"; exit 0 (2 on a
 * bad argument, 3 when MAPS cannot be written). MAPS: a file to write, after the passes,
 * "object big ADDRESS SIZE" (hex address, decimal size), then "smaps" and
 * /proc/self/smaps, then "numa_maps" and /proc/self/numa_maps.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef BIG_MIB
#define BIG_MIB 64
#endif
#define BIG_N ((size_t)BIG_MIB << 17)     /* doubles */

static double big[BIG_N];                 /* STATIC:big */

static void copy_file(FILE *out, const char *path)
{
    char buf[4096];
    size_t n;
    FILE *in = fopen(path, "r");
    while (in && (n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    if (in)
        fclose(in);
}

/* a[i] = a[i] * 0.5 + 1 over [lo, hi): stays finite and exact in binary */
static void pass(volatile double *a, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        a[i] = a[i] * 0.5 + 1.0;
}

int main(int argc, char **argv)
{
    long passes = argc > 1 ? strtol(argv[1], NULL, 10) : 300;
    if (passes < 1 || passes > 1000000)
        return 2;
    for (size_t i = 0; i < BIG_N; i++)
        big[i] = (double)(i & 1023);
    for (long p = 0; p < passes; p++)
        pass(big, 0, BIG_N / 2);
    pass(big, BIG_N / 2, BIG_N);
    double sum = 0;
    for (size_t i = 0; i < BIG_N; i += 511)
        sum += big[i];
    if (argc > 2) {
        FILE *f = fopen(argv[2], "w");
        if (!f)
            return 3;
        fprintf(f, "object big %p %zu\nsmaps\n", (void *)big, sizeof(big));
        copy_file(f, "/proc/self/smaps");
        fprintf(f, "numa_maps\n");
        copy_file(f, "/proc/self/numa_maps");
        fclose(f);
    }
    printf("static_half %.6f\n", sum);
    puts("ok");
    return 0;
}
