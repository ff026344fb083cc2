/* hotwindow: one large array whose hot part is a window inside it, beside smaller warm
 * arrays (bench-apps' object-splitting case, issue "Place the hot part of an object").
 *
 *   hotwindow [-b BIG_MIB] [-w WINDOW_MIB] [-o OFFSET_MIB] [-m WARM_MIB] [-k WARM_COUNT]
 *             [-n MILLION_UPDATES] [-f WARM_PERCENT]
 *
 * The big array (default 256 MiB) is written whole once (so all of it is memory the
 * program uses), then random read-modify-writes go to the window (default 32 MiB at
 * 96 MiB) and, WARM_PERCENT of them (default 30), to the warm arrays (default two of
 * 8 MiB). Random updates over tens of MiB miss the TLB on 4 KiB pages and mostly hit it
 * on 2 MiB pages: a fast tier of hugepages speeds up exactly the data placed there.
 * Each update's index depends on the value the one before read (a dependent chain,
 * as in pointer chasing), so every TLB miss is waited for; it goes to one of the first
 * LINES cache lines of a random page, so the data stays in the caches and the pages'
 * translations are what the loop waits for (sparse accesses over many pages, as in
 * hash tables and graph codes).
 * Prints `kernel_time_s=` (the update loop only) and `checksum=` (equal on every run:
 * the updates depend only on the seed). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB (1ull << 20)
#define LINES 2         /* cache lines used per 4 KiB page */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static inline uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t pow2_below(uint64_t n)
{
    uint64_t p = 1;
    while (p * 2 <= n)
        p *= 2;
    return p;
}

static unsigned long arg(const char *s, const char *what)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "hotwindow: %s: not a number: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    unsigned long big_mib = 256, win_mib = 32, off_mib = 96, warm_mib = 8, warm_n = 2;
    unsigned long updates_m = 100, warm_pct = 30;
    int c;
    while ((c = getopt(argc, argv, "b:w:o:m:k:n:f:")) != -1) {
        switch (c) {
        case 'b': big_mib = arg(optarg, "-b"); break;
        case 'w': win_mib = arg(optarg, "-w"); break;
        case 'o': off_mib = arg(optarg, "-o"); break;
        case 'm': warm_mib = arg(optarg, "-m"); break;
        case 'k': warm_n = arg(optarg, "-k"); break;
        case 'n': updates_m = arg(optarg, "-n"); break;
        case 'f': warm_pct = arg(optarg, "-f"); break;
        default:
            fprintf(stderr, "usage: hotwindow [-b BIG_MIB] [-w WINDOW_MIB] [-o OFFSET_MIB] "
                            "[-m WARM_MIB] [-k WARM_COUNT] [-n MILLION_UPDATES] "
                            "[-f WARM_PERCENT]\n");
            return 2;
        }
    }
    if (win_mib == 0 || off_mib + win_mib > big_mib || warm_pct > 100 || warm_n > 64 ||
        (warm_n && warm_mib == 0)) {
        fprintf(stderr, "hotwindow: the window must lie inside the big array, -f is a "
                        "percentage, at most 64 warm arrays of at least 1 MiB\n");
        return 2;
    }
    uint64_t *big = malloc(big_mib * MIB);
    uint64_t *warm[64];
    if (!big) {
        fprintf(stderr, "hotwindow: cannot allocate %lu MiB\n", big_mib);
        return 1;
    }
    for (unsigned long k = 0; k < warm_n; k++) {
        warm[k] = malloc(warm_mib * MIB);
        if (!warm[k]) {
            fprintf(stderr, "hotwindow: cannot allocate %lu MiB\n", warm_mib);
            return 1;
        }
        memset(warm[k], (int)k, warm_mib * MIB);
    }
    memset(big, 1, big_mib * MIB);
    uint64_t *win = big + off_mib * MIB / sizeof(uint64_t);
    uint64_t win_mask = pow2_below(win_mib * MIB / sizeof(uint64_t)) - 1;
    uint64_t warm_mask = pow2_below(warm_mib * MIB / sizeof(uint64_t)) - 1;
    uint64_t warm_cut = warm_n ? (uint64_t)warm_pct * (UINT64_MAX / 100) : 0;
    uint64_t n = (uint64_t)updates_m * 1000000ull;
    double t0 = now();
    /* each update's index depends on the value the previous one read: the loop waits
     * for every access (and its TLB miss) in turn, as pointer-chasing codes do */
    uint64_t x = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = next() ^ x;
        uint64_t *p;
        /* one of the first LINES cache lines of a random 4 KiB page */
        uint64_t at = ((r >> 17) & ~(uint64_t)511) | (((r >> 9) % LINES) * 8);
        if (r < warm_cut)
            p = &warm[(r >> 7) % warm_n][at & warm_mask];
        else
            p = &win[at & win_mask];
        x = *p;
        *p = x + i;
        x = (x * 0x9e3779b97f4a7c15ull) >> 1;
    }
    double t1 = now();
    uint64_t sum = 0;
    for (uint64_t j = 0; j <= win_mask; j++)
        sum += win[j] * (j | 1);
    for (unsigned long k = 0; k < warm_n; k++)
        for (uint64_t j = 0; j <= warm_mask; j++)
            sum += warm[k][j] ^ j;
    printf("kernel_time_s=%.4f\n", t1 - t0);
    printf("checksum=%llu\n", (unsigned long long)sum);
    for (unsigned long k = 0; k < warm_n; k++)
        free(warm[k]);
    free(big);
    return 0;
}
