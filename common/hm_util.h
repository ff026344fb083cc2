/* hm_util.h — small helpers shared by collect and interpose: branch hints, the
 * clock, async-signal-safe formatting and writing. No stdio, no malloc. */
#ifndef HM_UTIL_H
#define HM_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define hm_likely(x)   __builtin_expect(!!(x), 1)
#define hm_unlikely(x) __builtin_expect(!!(x), 0)
#define HM_HIDDEN      __attribute__((visibility("hidden")))
#define HM_NOINLINE    __attribute__((noinline))
#define HM_INLINE      static inline __attribute__((always_inline))

/* CLOCK_MONOTONIC: one clock for every process on a node, so the finalize step can
 * merge threads and MPI ranks by time. Through the vDSO it costs ~20 ns here
 * (clocksource tsc). */
HM_INLINE uint64_t hm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Timestamps on the hot path: the invariant TSC (~11 ns to read here, against
 * ~35 ns for clock_gettime in this VM) when the CPU has one, else ns. Readers
 * convert ticks to CLOCK_MONOTONIC ns with the (ticks, ns) pairs the streams
 * carry (docs/formats.md). */
extern int hm_tsc HM_HIDDEN;
void hm_clock_init(void) HM_HIDDEN;
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
HM_INLINE uint64_t hm_ticks(void) { return hm_likely(hm_tsc) ? __rdtsc() : hm_now_ns(); }
#else
HM_INLINE uint64_t hm_ticks(void) { return hm_now_ns(); }
#endif

/* Striped counters: statistics every thread bumps (per site, per tier) are kept in
 * HM_STRIPES copies on separate cache lines, a thread writing the copy of its stripe
 * and readers summing them. The first HM_STRIPES - 1 threads that count get stripes
 * 1.. of their own and update them without a locked instruction; later threads share
 * stripe 0 and use atomic adds. One shared counter written by 2 threads cost ~25 ns
 * per update here, a locked add on an unshared line ~5-8 ns, a plain add ~1 ns
 * (bench-interpose). A signal handler that counts on the same thread between the load
 * and the store of a plain add can lose one count: these are statistics. */
#define HM_STRIPES 16u
extern __thread uint32_t hm_t_stripe __attribute__((tls_model("initial-exec"))) HM_HIDDEN;
uint32_t hm_stripe_assign(void) HM_HIDDEN;
HM_INLINE uint32_t hm_stripe(void)
{
    uint32_t s = hm_t_stripe;
    return hm_likely(s) ? s - 1 : hm_stripe_assign();
}
/* Add v to the calling thread's copy c of a striped counter. */
HM_INLINE void hm_stripe_add(uint64_t *c, uint64_t v)
{
    if (hm_likely(hm_stripe() != 0))
        __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
    else
        __atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}

/* write(2) all of buf, retrying on EINTR and short writes. Returns 0 or an errno. */
int hm_write_all(int fd, const void *buf, size_t len) HM_HIDDEN;

/* Format helpers into a caller buffer; return the number of chars written (no NUL).
 * hm_fmt_u64 is inline: the trace writers (finalize, the analyzer's scanner) format
 * millions of numbers with it, where printf would cost ~100 ns each. */
HM_INLINE size_t hm_fmt_u64(char *dst, uint64_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        dst[i] = tmp[n - 1 - i];
    return n;
}
size_t hm_fmt_str(char *dst, const char *s) HM_HIDDEN;

/* Parse "4K", "64KiB", "1M", "2G", "123" (bytes; K/M/G/T and KiB/MiB/... are
 * powers of 1024). Returns 0 and *out on success, -1 on a malformed or overflowing
 * value. */
int hm_parse_size(const char *s, uint64_t *out) HM_HIDDEN;

/* One line "hmtune: <msg>\n" to stderr, async-signal-safe. */
void hm_log(const char *prefix, const char *msg, const char *detail) HM_HIDDEN;

#endif
