/* tiershare — the share of a tier usable before a request is refused, for
 * bench_umf.py: on the interposer's core (libhmi_core.a), a tier of BACKEND with CAP
 * bytes is filled with objects of the sizes given (taken in turn) until one is
 * refused; then everything is freed and it is filled again.
 *
 *   tiershare BACKEND CAP SIZE[,SIZE...]
 *
 * Prints share=<bytes of the objects placed / CAP> objects=<count> refill=<share of the
 * second fill> used=<the tier's charged bytes at the full point> hugepages=<2 MiB
 * hugepages the process took from the pool by then, free and not reserved before minus
 * after>; exit 2 when the tier cannot be opened (the reason on stderr). */
#include "hmi_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXSIZES 64

/* HugePages_Free - HugePages_Rsvd of /proc/meminfo. */
static long huge_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long fr = 0, rs = 0;
    while (f && fgets(line, sizeof line, f)) {
        sscanf(line, "HugePages_Free: %ld", &fr);
        sscanf(line, "HugePages_Rsvd: %ld", &rs);
    }
    if (f)
        fclose(f);
    return fr - rs;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: tiershare BACKEND CAP SIZE[,SIZE...]\n");
        return 2;
    }
    uint64_t cap = strtoull(argv[2], NULL, 0);
    size_t sizes[MAXSIZES], n = 0;
    for (char *s = strtok(argv[3], ","); s && n < MAXSIZES; s = strtok(NULL, ","))
        sizes[n++] = strtoull(s, NULL, 0);
    char why[HMI_REASON_MAX];
    long huge0 = huge_available(), huge = 0;
    if (!n || !cap || hmi_backend_open(0, "fast", argv[1], cap, 0, why, sizeof why) != 0) {
        fprintf(stderr, "tiershare: %s\n", n && cap ? why : "no sizes or capacity");
        return 2;
    }
    size_t max = cap / 16 + 64, k = 0;
    char **v = malloc(max * sizeof *v);
    double share[2] = { 0, 0 };
    uint64_t used = 0;
    for (int round = 0; round < 2; round++) {
        uint64_t bytes = 0;
        for (k = 0; k < max && (v[k] = hmi_backend_alloc(0, sizes[k % n], 0)) != NULL; k++) {
            v[k][0] = 1;
            bytes += sizes[k % n];
        }
        struct hmi_backend_stats st;
        hmi_backend_stats(0, &st);
        if (round == 0) {
            used = st.used;
            huge = huge0 - huge_available();
        }
        share[round] = (double)bytes / (double)cap;
        size_t placed = k;
        while (k--)
            hmi_backend_free(0, v[k]);
        k = placed;
    }
    printf("share=%.4f objects=%zu refill=%.4f used=%llu hugepages=%ld\n", share[0], k,
           share[1], (unsigned long long)used, huge);
    return 0;
}
