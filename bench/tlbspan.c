/* tlbspan: what 2 MiB pages gain on access as a function of the span of the data
 * accessed, the figure behind a hugepage tier's access gain (docs/formats.md §5), and
 * what placing part of a uniformly accessed object gains.
 *
 *   tlbspan [ROUNDS [ACCESSES]]           (default 7 rounds of 20,000,000 accesses)
 *   tlbspan --part SPAN_MIB [ROUNDS [ACCESSES]]
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
 * nothing on access from 2 MiB pages (first touch aside).
 *
 * --part: one object of SPAN_MIB accessed uniformly at random (the chase over all its
 * lines), of which the part 0, 1/4, 1/2, 3/4 or 1 is in 2 MiB pages and the rest in
 * 4 KiB pages, as a tier of a quarter or half of an application's footprint holds
 * part of a uniformly accessed table (HPC Challenge's RandomAccess). Each round runs
 * the five parts in a rotated order. Prints one line per part:
 *   part=F ns=MEDIAN speedup=MEDIAN [LO, HI] share=S [LO, HI] over_linear=X% [LO, HI]
 * speedup: the per-round ratio ns(part 0) / ns(part F), its median and the median's
 * distribution-free 95 % interval (order statistics; from 6 rounds on, else the
 * smallest and largest round); share: (speedup - 1) / (whole object's speedup - 1),
 * the share of the whole object's gain, its interval from the ends of both
 * intervals (none while the whole object's interval reaches 1.00); over_linear: how
 * much longer an access takes than if the time were linear in the part placed
 * (ns(part F) against ns(0) + F (ns(1) - ns(0)) of the same round), the median and
 * its interval: 0 where placing a part gains its share of the whole, as an additive
 * model of sites and pieces assumes (docs/formats.md §5).
 * Exit 2 on bad arguments, 1 when a mapping fails (say which). */
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

/* ns per access of a dependent chase over span bytes, of which the first huge bytes
 * are in 2 MiB hugetlb pages (mapped whole) and the rest in 4 KiB pages */
static double chase(size_t span, size_t huge, long accesses)
{
    size_t len[2] = {(huge + HUGE - 1) & ~(size_t)(HUGE - 1), span - huge};  /* [0] hugetlb */
    char *base[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        if (!len[k])
            continue;
        base[k] = mmap(NULL, len[k], PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | (k ? 0 : MAP_HUGETLB), -1, 0);
        if (base[k] == MAP_FAILED) {
            fprintf(stderr, "tlbspan: mmap of %zu bytes in %s pages failed%s\n", len[k],
                    k ? "4 KiB" : "2 MiB hugetlb",
                    k ? "" : " (reserve 128 hugepages: echo 128 > /proc/sys/vm/nr_hugepages)");
            exit(1);
        }
        if (k)
            madvise(base[k], len[k], MADV_NOHUGEPAGE);
    }
    size_t lines = span / LINE, in_huge = huge / LINE;
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
#define AT(line) ((line) < in_huge ? base[0] + (size_t)(line) * LINE \
                                   : base[1] + (size_t)((line) - in_huge) * LINE)
    for (size_t i = 0; i < lines; i++)
        *(char **)AT(perm[i]) = AT(perm[(i + 1) % lines]);
    char *q = AT(perm[0]);
#undef AT
    free(perm);
    for (long i = 0; i < accesses / 10; i++)
        q = *(char *volatile *)q;
    double t0 = now_ns();
    for (long i = 0; i < accesses; i++)
        q = *(char *volatile *)q;
    double t = now_ns() - t0;
    if (q == NULL)                  /* never: keeps the chase's result live */
        puts("");
    for (int k = 0; k < 2; k++)
        if (len[k])
            munmap(base[k], len[k]);
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

/* the 1-based rank of the lower end of a sorted sample's 95 % interval for its median:
 * the largest k with P(Binomial(n, 1/2) < k) <= 2.5 %, from 6 values on (else 1) */
static int ci_rank(int n)
{
    if (n < 6)
        return 1;
    double p = 1.0, cum = 0.0;          /* P(X = j), P(X < k), X ~ Binomial(n, 1/2) */
    for (int j = 0; j < n; j++)
        p *= 0.5;
    int k = 0;
    while (cum + p <= 0.025) {
        cum += p;
        k++;
        p = p * (double)(n - k + 1) / (double)k;
    }
    return k > 0 ? k : 1;
}

/* --part: the five parts of one object of span bytes in 2 MiB pages (top comment) */
static void parts(size_t span, int rounds, long accesses)
{
    enum { PARTS = 5 };
    double ns[PARTS][MAX_ROUNDS], up[PARTS][MAX_ROUNDS], over[PARTS][MAX_ROUNDS];
    double med[PARTS], sp[PARTS], ov[PARTS];
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < PARTS; i++) {
            int k = (i + r) % PARTS;
            size_t huge = span / HUGE * (size_t)k / (PARTS - 1) * HUGE;
            ns[k][r] = chase(span, huge, accesses);
        }
        for (int k = 0; k < PARTS; k++) {
            double f = (double)k / (PARTS - 1);
            up[k][r] = ns[0][r] / ns[k][r];
            over[k][r] = ns[k][r] / (ns[0][r] + f * (ns[PARTS - 1][r] - ns[0][r])) - 1.0;
        }
    }
    for (int k = 0; k < PARTS; k++) {       /* median() sorts: the intervals' ends below */
        med[k] = median(ns[k], rounds);
        sp[k] = median(up[k], rounds);
        ov[k] = median(over[k], rounds);
    }
    int lo = ci_rank(rounds) - 1, hi = rounds - 1 - lo;      /* 0-based, up[] sorted */
    double all = sp[PARTS - 1] - 1.0, all_lo = up[PARTS - 1][lo] - 1.0,
           all_hi = up[PARTS - 1][hi] - 1.0;
    for (int k = 0; k < PARTS; k++) {
        printf("part=%.2f ns=%.2f speedup=%.3f [%.3f, %.3f] ", (double)k / (PARTS - 1),
               med[k], sp[k], up[k][lo], up[k][hi]);
        if (all <= 0.0)
            printf("share=- (the whole object gains nothing)");
        else if (k == 0 || k == PARTS - 1)
            printf("share=%d%%", k ? 100 : 0);
        else if (all_lo <= 0.0)
            printf("share=%.0f%% (no interval: the whole object's reaches 1.00)",
                   100.0 * (sp[k] - 1.0) / all);
        else {
            double a = (up[k][lo] - 1.0), b = (up[k][hi] - 1.0);
            double s_lo = a < 0 ? a / all_lo : a / all_hi, s_hi = b < 0 ? b / all_hi : b / all_lo;
            printf("share=%.0f%% [%.0f%%, %.0f%%]", 100.0 * (sp[k] - 1.0) / all,
                   100.0 * s_lo, 100.0 * s_hi);
        }
        if (k > 0 && k < PARTS - 1)
            printf(" over_linear=%+.1f%% [%+.1f%%, %+.1f%%]", 100.0 * ov[k],
                   100.0 * over[k][lo], 100.0 * over[k][hi]);
        printf("\n");
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int part = argc > 1 && !strcmp(argv[1], "--part");
    if (argc > 3 + 2 * part || (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
        || (part && argc < 3)) {
        fprintf(stderr, "usage: tlbspan [ROUNDS [ACCESSES]]  (default 7 20000000)\n"
                        "       tlbspan --part SPAN_MIB [ROUNDS [ACCESSES]]  (SPAN_MIB 8-256)\n");
        return argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? 0 : 2;
    }
    char **a = argv + 2 * part;
    int n = argc - 2 * part;
    int rounds = n > 1 ? (int)arg(a[1], 1, MAX_ROUNDS, "ROUNDS") : 7;
    long accesses = n > 2 ? arg(a[2], 1000, 1000000000L, "ACCESSES") : 20000000L;
    if (part) {
        parts((size_t)arg(argv[2], 8, 256, "SPAN_MIB") << 20, rounds, accesses);
        return 0;
    }
    for (size_t span = 16u << 10; span <= (256u << 20); span *= 4) {
        double small[MAX_ROUNDS], big[MAX_ROUNDS], gain[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            double t[2];
            for (int j = 0; j < 2; j++) {
                int h = (r + j) % 2;            /* which kind goes first alternates */
                t[h] = chase(span, h ? span : 0, accesses);
            }
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
