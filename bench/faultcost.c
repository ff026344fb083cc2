/* faultcost: what first touch costs per page size, and what a 2 MiB page saves per
 * 4 KiB fault it avoids (the fault_cost_ns of a machine file's hugepage tiers,
 * docs/formats.md §5).
 *
 *   faultcost [MIB [ROUNDS]]        (default 256 MiB, 5 rounds)
 *
 * Each round maps MIB MiB three ways, touches it with one store per 4 KiB and unmaps
 * it: 4 KiB pages (MADV_NOHUGEPAGE), 2 MiB hugetlb pages (MAP_HUGETLB; skipped when
 * the pool is short) and THP (MADV_HUGEPAGE on a 2 MiB-aligned range). The kinds
 * alternate within each round; the best time of each over the rounds is kept (the
 * least disturbed by other work). Prints, per kind, the faults (getrusage) and ns per
 * 4 KiB of memory touched, then
 *   saved_per_fault_ns_<kind> = (512 x t_4k - t_2m) / 511
 * the time a 2 MiB page saves per 4 KiB fault it avoids (the same bytes are zeroed
 * either way, so this is the per-fault overhead that goes away). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

enum { SMALL, HUGETLB, THP, NKIND };
static const char *const g_name[NKIND] = { "4k", "hugetlb", "thp" };

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static long minflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* One touch of n bytes of the kind; ns, with the faults it took in *faults; < 0
 * when the memory could not be mapped. */
static double touch(int kind, size_t n, long *faults)
{
    size_t align = 2u << 20, len = kind == THP ? n + align : n;
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | (kind == HUGETLB ? MAP_HUGETLB : 0);
    char *map = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (map == MAP_FAILED)
        return -1;
    char *p = kind == THP ? (char *)(((uintptr_t)map + align - 1) & ~(uintptr_t)(align - 1)) : map;
    if (kind == SMALL)
        madvise(p, n, MADV_NOHUGEPAGE);
    if (kind == THP)
        madvise(p, n, MADV_HUGEPAGE);
    long f0 = minflt();
    double t0 = now_ns();
    for (size_t i = 0; i < n; i += 4096)
        ((volatile char *)p)[i] = 1;
    double t = now_ns() - t0;
    *faults = minflt() - f0;
    munmap(map, len);
    return t;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 256;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    if (mib < 2 || rounds < 1)
        return 2;
    size_t n = (mib >> 1) << 21, pages = n >> 12;
    double best[NKIND] = { -1, -1, -1 };
    long faults[NKIND] = { 0, 0, 0 };
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < NKIND; k++) {
            int kind = (k + r) % NKIND;
            long f;
            double t = touch(kind, n, &f);
            if (t >= 0 && (best[kind] < 0 || t < best[kind])) {
                best[kind] = t;
                faults[kind] = f;
            }
        }
    printf("mib=%zu rounds=%d\n", n >> 20, rounds);
    for (int k = 0; k < NKIND; k++)
        if (best[k] >= 0)
            printf("%s: faults=%ld ns_per_4k=%.1f\n", g_name[k], faults[k], best[k] / (double)pages);
        else
            printf("%s: unavailable\n", g_name[k]);
    for (int k = HUGETLB; k < NKIND; k++)
        if (best[SMALL] >= 0 && best[k] >= 0) {
            double t4k = best[SMALL] / (double)pages, t2m = best[k] / (double)(pages / 512);
            printf("saved_per_fault_ns_%s=%.0f\n", g_name[k], (512 * t4k - t2m) / 511);
        }
    return 0;
}
