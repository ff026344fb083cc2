/* mmap_threshold: one big block allocated, touched and freed, then a mid-size block
 * allocated, touched and freed ITERATIONS times. Under glibc alone the big block's
 * free raises the mmap threshold above the mid size, so every mid-size block comes
 * from the heap and only the first one faults its pages in. libhmalloc placing the
 * big block must leave glibc's thresholds as they would have been (hmi_shim.c).
 *
 *   mmap_threshold [BIG_KIB [MID_KIB [ITERATIONS]]]   (default 4096 1024 40)
 *
 * Prints `loop_minflt=N` (minor faults during the mid-size loop, getrusage),
 * `mid_pages=N` (4 KiB pages of one mid-size block) and `sum=N`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static long minflt(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_minflt;
}

int main(int argc, char **argv)
{
    size_t big = (size_t)strtoull(argc > 1 ? argv[1] : "4096", NULL, 10) << 10;
    size_t mid = (size_t)strtoull(argc > 2 ? argv[2] : "1024", NULL, 10) << 10;
    int iters = argc > 3 ? atoi(argv[3]) : 40;
    if (!big || !mid || iters < 1)
        return 2;
    char *p = malloc(big);
    if (!p)
        return 1;
    memset(p, 1, big);
    volatile char keep = p[big / 3];           /* the block is used: not elided */
    unsigned sum = (unsigned char)keep;
    free(p);
    long before = minflt();
    for (int i = 0; i < iters; i++) {
        char *q = malloc(mid);
        if (!q)
            return 1;
        memset(q, i, mid);
        sum += (unsigned char)q[mid / 2];
        free(q);
    }
    printf("loop_minflt=%ld mid_pages=%zu sum=%u\n", minflt() - before, mid / 4096, sum);
    return 0;
}
