/*
 * static_arrays.c — hot static arrays, like an integer-sort benchmark (NPB IS): the
 * keys and the bucket counts are file-scope arrays in .bss, a small table is in
 * .data, and only the ranks come from malloc.
 *
 * Statics by marker name (the declaration line ends with a STATIC-colon-<name>
 * comment):
 *   key_count  int[1 << 22]     16777216 bytes, .bss, global: counted into at random (hot)
 *   keys       int[1 << 22]     16777216 bytes, .bss, file-local: read in order
 *   weights    double[512]      4096 bytes, .data (initialized), read in every round
 * Site (the call line ends with a SITE-colon-<name> comment):
 *   ranks      malloc(1 << 24)  16777216 bytes, written in order in every round
 *
 * Usage: static_arrays [ROUNDS [MAPS]] (default 12 rounds). Each round counts the
 * keys into key_count, turns the counts into bucket starts and writes each key's
 * rank (its bucket's next place). Output: "static_arrays <checksum>" (the same for every run with
 * the same ROUNDS), then "ok"; exit 0. MAPS: a file to write, after the rounds, how
 * the kernel holds the statics: lines "object NAME ADDRESS SIZE" (hex address,
 * decimal size) for key_count and keys, then "smaps" and /proc/self/smaps, then
 * "numa_maps" and /proc/self/numa_maps (tests check where their pages are).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#define NKEYS (1 << 22)
#define NBUCKETS (1 << 22)

int key_count[NBUCKETS];                     /* STATIC:key_count */
static int keys[NKEYS];                      /* STATIC:keys */
double weights[512] = { 1.0, 2.0, 3.0 };     /* STATIC:weights */

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 12;
    if (rounds < 1)
        return 2;
    int *ranks = malloc((size_t)NKEYS * sizeof(int));   /* SITE:ranks */
    if (!ranks)
        return 1;
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < NKEYS; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        keys[i] = (int)(x % NBUCKETS);
    }
    for (int i = 3; i < 512; i++)
        weights[i] = weights[i - 1] * 0.5 + weights[i - 3] * 0.25;
    uint64_t sum = 0;
    for (int r = 0; r < rounds; r++) {
        memset(key_count, 0, sizeof(key_count));
        for (int i = 0; i < NKEYS; i++)
            key_count[keys[i]]++;
        int start = 0;
        for (int b = 0; b < NBUCKETS; b++) {
            int c = key_count[b];
            key_count[b] = start;
            start += c;
        }
        for (int i = 0; i < NKEYS; i++)
            ranks[i] = key_count[keys[i]]++;
        sum += (uint64_t)ranks[(r * 7919) % NKEYS] + (uint64_t)weights[r % 512];
    }
    if (argc > 2) {
        FILE *f = fopen(argv[2], "w");
        if (!f)
            return 3;
        fprintf(f, "object key_count %p %zu\nobject keys %p %zu\nsmaps\n", (void *)key_count,
                sizeof(key_count), (void *)keys, sizeof(keys));
        copy_file(f, "/proc/self/smaps");
        fprintf(f, "numa_maps\n");
        copy_file(f, "/proc/self/numa_maps");
        fclose(f);
    }
    printf("static_arrays %llu\n", (unsigned long long)sum);
    free(ranks);
    puts("ok");
    return 0;
}
