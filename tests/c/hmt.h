/* hmt.h — a minimal C test harness: each TEST prints "PASS name" or "FAIL name"
 * (with the failing check) and tests/c/run.sh totals them. */
#ifndef HMT_H
#define HMT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int hmt_failed_checks;
static int hmt_failures;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "  check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            hmt_failed_checks++;                                                      \
        }                                                                             \
    } while (0)

#define RUN(fn)                                                                       \
    do {                                                                              \
        int before_ = hmt_failed_checks;                                              \
        fn();                                                                         \
        if (hmt_failed_checks == before_)                                             \
            printf("PASS %s\n", #fn);                                                 \
        else {                                                                        \
            printf("FAIL %s\n", #fn);                                                 \
            hmt_failures++;                                                           \
        }                                                                             \
        fflush(stdout);                                                               \
    } while (0)

#define HMT_END() return hmt_failures ? 1 : 0

/* A number read from / written to a one-number file (/proc/sys/vm/nr_hugepages):
 * -1 when it cannot be read; 0, or -1 when it cannot be written. */
static inline long hmt_read_long(const char *path)
{
    long v = -1;
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

static inline int hmt_write_long(const char *path, long v)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int ok = fprintf(f, "%ld\n", v) > 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* The number after key (e.g. "HugePages_Free:") in /proc/meminfo, -1 when it cannot
 * be read. */
static inline long hmt_meminfo(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && sscanf(line + kl, "%ld", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

/* HugePages_Free, -1 when it cannot be read. */
static inline long hmt_huge_free(void) { return hmt_meminfo("HugePages_Free:"); }

/* Free hugepages not promised to a mapping yet (HugePages_Free - HugePages_Rsvd), -1
 * when they cannot be read. */
static inline long hmt_huge_available(void)
{
    long fr = hmt_meminfo("HugePages_Free:"), rs = hmt_meminfo("HugePages_Rsvd:");
    return fr < 0 || rs < 0 ? -1 : fr - rs;
}

#define HMT_NR_HUGEPAGES "/proc/sys/vm/nr_hugepages"

/* As root, n more hugepages in the pool (nr_hugepages raised by n, and n of them
 * free): the old nr_hugepages, to write back when done; -1, with nr_hugepages as it
 * was, when they cannot be had. */
static inline long hmt_huge_reserve(long n)
{
    long old = hmt_read_long(HMT_NR_HUGEPAGES);
    if (old >= 0 && geteuid() == 0 && hmt_write_long(HMT_NR_HUGEPAGES, old + n) == 0 &&
        hmt_huge_free() >= n)
        return old;
    if (old >= 0)
        hmt_write_long(HMT_NR_HUGEPAGES, old);
    return -1;
}

/* 1 when the n bytes at p read zero (one byte in 512, and the last). */
static inline int hmt_all_zero(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 512)
        if (p[i])
            return 0;
    return p[n - 1] == 0;
}

#endif
