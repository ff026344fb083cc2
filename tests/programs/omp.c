/*
 * omp.c — allocations from OpenMP threads (libgomp), one call site.
 *
 * A parallel region with num_threads(4) (dynamic adjustment off): the thread with
 * omp_get_thread_num() == tid mallocs (tid+1)*200000 bytes, touches it, frees it.
 * Sites by marker name (the call line ends with a SITE-colon-<name> comment):
 *   omp   sizes 200000 (tid 0, the initial thread), 400000 (1), 600000 (2),
 *         800000 (3); one each, each freed.
 * Note: libgomp itself makes small allocations of its own (thread team structures);
 * they are not marked here.
 *
 * Output: "ok", exit 0 (exit 1 if the team did not have 4 threads).
 */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    int team = 0, failed = 0;

    omp_set_dynamic(0);
#pragma omp parallel num_threads(4) reduction(+ : failed)
    {
        int tid = omp_get_thread_num();
        size_t size = (size_t)(tid + 1) * 200000;
        volatile char *p = malloc(size);           /* SITE:omp */
        if (!p) {
            failed++;
        } else {
            for (size_t k = 0; k < size; k += 4096)
                p[k] = (char)tid;
            p[size - 1] = 1;
            free((void *)p);
        }
#pragma omp master
        team = omp_get_num_threads();
    }
    if (failed || team != 4) {
        fprintf(stderr, "omp: team of %d threads, %d failures\n", team, failed);
        return 1;
    }
    puts("ok");
    return 0;
}
