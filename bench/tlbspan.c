/* tlbspan: what 2 MiB pages gain on access as a function of the span of the data
 * accessed, the figure behind a hugepage tier's access gain (docs/formats.md §5).
 *
 *   tlbspan [ROUNDS [ACCESSES]]     (default 7 rounds of 20,000,000 accesses)
 *
 * For each span from 16 KiB to 256 MiB, each round maps the span twice, in 4 KiB pages
 * (MADV_NOHUGEPAGE) and in 2 MiB hugetlb pages (MAP_HUGETLB; the pool must hold
 * 128 pages, which the caller reserves), links its 64-byte lines into one random
 * cycle (a dependent pointer chase: every access waits for the previous one, so a
 * page walk is never hidden) and times ACCESSES steps of it after a warm-up of a
 * tenth as many. The two kinds alternate which goes first from round to round.
 * Prints one line per span:
 *   span_kib=N ns_4k=MEDIAN ns_2m=MEDIAN gain=MEDIAN [MIN, MAX]
 * where gain is the per-round ratio ns_4k / ns_2m (1.00: no gain), its median over
 * the rounds and the smallest and largest round. Where the spans' gain stays at 1.00
 * the second-level TLB holds every 4 KiB page of the span; a hot site that small gains
 * nothing on access from 2 MiB pages (first touch aside). Exit 2 on bad arguments, 1
 * when a mapping fails (say which). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define LINE 64u
#define HUGE (2u << 20)
#define MAX_ROUNDS 99

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_rand(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

/* ns per access of a dependent chase over span bytes, in 2 MiB pages when huge */
static double chase(size_t span, int huge, long accesses)
{
    size_t len = (span + HUGE - 1) & ~(size_t)(HUGE - 1);
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (huge ? MAP_HUGETLB : 0), -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "tlbspan: mmap of %zu bytes in %s pages failed%s\n", len,
                huge ? "2 MiB hugetlb" : "4 KiB",
                huge ? " (reserve 128 hugepages: echo 128 > /proc/sys/vm/nr_hugepages)" : "");
        exit(1);
    }
    if (!huge)
        madvise(p, len, MADV_NOHUGEPAGE);
    size_t lines = span / LINE;
    uint32_t *perm = malloc(lines * sizeof *perm);
    if (!perm) {
        fprintf(stderr, "tlbspan: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < lines; i++)
        perm[i] = (uint32_t)i;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = (size_t)(next_rand() % (i + 1));
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (size_t i = 0; i < lines; i++)
        *(uint64_t *)(p + (size_t)perm[i] * LINE) = (uint64_t)perm[(i + 1) % lines] * LINE;
    uint64_t off = (uint64_t)perm[0] * LINE;
    free(perm);
    for (long i = 0; i < accesses / 10; i++)
        off = *(volatile uint64_t *)(p + off);
    double t0 = now_ns();
    for (long i = 0; i < accesses; i++)
        off = *(volatile uint64_t *)(p + off);
    double t = now_ns() - t0;
    if (off == UINT64_MAX)          /* never: keeps the chase's result live */
        puts("");
    munmap(p, len);
    return t / (double)accesses;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static long arg(const char *s, long lo, long hi, const char *what)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "tlbspan: %s must be a whole number from %ld to %ld, not '%s'\n",
                what, lo, hi, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc > 3 || (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
        fprintf(stderr, "usage: tlbspan [ROUNDS [ACCESSES]]  (default 7 20000000)\n");
        return argc > 3 ? 2 : 0;
    }
    int rounds = argc > 1 ? (int)arg(argv[1], 1, MAX_ROUNDS, "ROUNDS") : 7;
    long accesses = argc > 2 ? arg(argv[2], 1000, 1000000000L, "ACCESSES") : 20000000L;
    for (size_t span = 16u << 10; span <= (256u << 20); span *= 4) {
        double small[MAX_ROUNDS], big[MAX_ROUNDS], gain[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            int first = r % 2;
            double t[2];
            t[first] = chase(span, first, accesses);
            t[!first] = chase(span, !first, accesses);
            small[r] = t[0];
            big[r] = t[1];
            gain[r] = t[0] / t[1];
        }
        double ns4 = median(small, rounds), ns2 = median(big, rounds);
        double g = median(gain, rounds);        /* sorts gain: [0] and [rounds-1] */
        printf("span_kib=%zu ns_4k=%.2f ns_2m=%.2f gain=%.3f [%.3f, %.3f]\n", span >> 10,
               ns4, ns2, g, gain[0], gain[rounds - 1]);
        fflush(stdout);
    }
    return 0;
}
