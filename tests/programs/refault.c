/* refault: transient arrays allocated, first-touched and freed every iteration (each
 * iteration's page faults are new: the arrays are larger than glibc's largest mmap
 * threshold, 32 MiB, so every malloc is a fresh mapping), next to a persistent array
 * touched once and then read at random every iteration (accessed, never re-faulted).
 *
 *   refault [ITERATIONS [TRANSIENT_MIB [PERSIST_MIB [READS]]]]   (default 8 40 32 2000000)
 *
 * Prints `minflt=N` (this process's minor faults, getrusage, at the end),
 * `transient_pages=N` (4 KiB pages the transient arrays span over all iterations),
 * `persist_pages=N`, `sum=N` and `ok`. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#define NTRANSIENT 2

static uint64_t arg(int argc, char **argv, int i, uint64_t def)
{
    return argc > i ? strtoull(argv[i], NULL, 10) : def;
}

int main(int argc, char **argv)
{
    uint64_t iters = arg(argc, argv, 1, 8), tmib = arg(argc, argv, 2, 40);
    uint64_t pmib = arg(argc, argv, 3, 32), reads = arg(argc, argv, 4, 2000000);
    if (!iters || !tmib || !pmib)
        return 2;
    size_t tn = (size_t)(tmib << 20) / sizeof(uint64_t), pn = (size_t)(pmib << 20) / sizeof(uint64_t);
    volatile uint64_t *persist = malloc(pn * sizeof(uint64_t)); /* SITE:persist */
    if (!persist)
        return 1;
    for (size_t i = 0; i < pn; i++)
        persist[i] = i * 2654435761u;
    uint64_t sum = 0, x = 88172645463325252ull;
    volatile int ntransient = NTRANSIENT;   /* one call site: the loop is not unrolled */
    for (uint64_t it = 0; it < iters; it++) {
        volatile uint64_t *t[NTRANSIENT];
        for (int k = 0; k < ntransient; k++) {
            t[k] = malloc(tn * sizeof(uint64_t)); /* SITE:transient */
            if (!t[k])
                return 1;
        }
        for (int k = 0; k < NTRANSIENT; k++)          /* first touch: a store per word */
            for (size_t i = 0; i < tn; i++)
                t[k][i] = i + it;
        for (size_t i = 0; i < tn; i += 512)
            sum += t[0][i] ^ t[NTRANSIENT - 1][i];
        for (uint64_t r = 0; r < reads; r++) {       /* random reads, no new page */
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            sum += persist[x % pn];
        }
        for (int k = 0; k < NTRANSIENT; k++)
            free((void *)t[k]);
    }
    free((void *)persist);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("minflt=%ld\ntransient_pages=%llu\npersist_pages=%llu\nsum=%llu\nok\n",
           ru.ru_minflt, (unsigned long long)(iters * NTRANSIENT * ((tmib << 20) >> 12)),
           (unsigned long long)((pmib << 20) >> 12), (unsigned long long)sum);
    return 0;
}
