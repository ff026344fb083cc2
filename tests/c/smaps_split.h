/* smaps_split.h — what /proc/self/smaps says of a split object's pages, for the tests
 * of split objects (test_backend.c calls the backend directly, hmalloc_app.c runs under
 * the preloaded library). Test code only: stdio, no allocator constraints. */
#ifndef SMAPS_SPLIT_H
#define SMAPS_SPLIT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Over [p, p + len): bytes of mappings with 2 MiB kernel pages (hugetlb) and
 * AnonHugePages (THP), counted inside [p + lo, p + hi) and outside it, and the bytes
 * mapped at all. */
struct split_view {
    uint64_t huge_in, huge_out, thp_in, thp_out, mapped;
};

static inline void smaps_view(const char *p, uint64_t len, uint64_t lo, uint64_t hi,
                              struct split_view *v)
{
    memset(v, 0, sizeof *v);
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return;
    char line[512];
    uintptr_t a = (uintptr_t)p, vlo = 0, vhi = 0;
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long l, h, kb;
        if (sscanf(line, "%lx-%lx ", &l, &h) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            vlo = l > a ? l : a;
            vhi = h < a + len ? h : a + len;
            in = vlo < vhi;
            if (in)
                v->mapped += vhi - vlo;
            continue;
        }
        if (!in)
            continue;
        int inside = vlo >= a + lo && vhi <= a + hi;
        if (sscanf(line, "KernelPageSize: %lu kB", &kb) == 1 && kb == 2048)
            *(inside ? &v->huge_in : &v->huge_out) += vhi - vlo;
        else if (sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
            *(inside ? &v->thp_in : &v->thp_out) += kb * 1024;
    }
    fclose(f);
}

#endif
