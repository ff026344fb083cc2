/* hmc_small.c — see hmc_small.h. No malloc, no stdio, no locks: runs inside the
 * malloc wrappers. */
#include "hmc_small.h"

#include <math.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

_Atomic(uint64_t *) hmc_small_leaf[HMC_SMALL_LEAVES];
__thread int64_t hmc_small_left __attribute__((tls_model("initial-exec")));

static uint64_t g_n;                          /* 0: off */
static __thread uint64_t t_rng __attribute__((tls_model("initial-exec")));

#define LEAF_BYTES ((1ull << HMC_SMALL_LEAF_SHIFT) / 8 / 8)   /* one bit per 8 bytes */

int hmc_small_parse(const char *s, uint64_t *n)
{
    if (s[0] == 'o' && s[1] == 'f' && s[2] == 'f' && s[3] == '\0') {
        *n = 0;
        return 0;
    }
    uint64_t v = 0;
    if (!*s)
        return -1;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
        if (v > HMC_SMALL_MAX)
            return -3;                        /* stop before it can overflow */
    }
    if (v == 0)
        return -2;
    *n = v;
    return 0;
}

void hmc_small_set(uint64_t n) { g_n = n; }
uint64_t hmc_small_interval(void) { return g_n; }

/* xorshift64*: a per-thread generator, seeded from the thread id and the clock so
 * that threads (and runs) draw different gaps. */
static uint64_t next_u64(void)
{
    uint64_t x = t_rng;
    if (hm_unlikely(x == 0)) {
        x = ((uint64_t)syscall(SYS_gettid) << 32) ^ hm_ticks() ^ (uint64_t)(uintptr_t)&t_rng;
        x = x ? x : 0x9e3779b97f4a7c15ull;
    }
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    t_rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

int64_t hmc_small_draw(uint64_t n)
{
    if (n <= 1)
        return 1;
    /* Inverse transform: G = 1 + floor(ln U / ln(1 - 1/n)), U uniform in (0, 1]. */
    double u = (double)((next_u64() >> 11) + 1) * 0x1.0p-53;
    double g = floor(log(u) / log1p(-1.0 / (double)n));
    if (!(g < 1e15))
        g = 1e15;                             /* U tiny: a gap far beyond any run */
    return 1 + (int64_t)g;
}

int hmc_small_pick(void)
{
    if (hmc_small_left > 0)
        return 0;
    if (g_n == 0) {
        hmc_small_left = INT64_MAX;           /* never comes back here */
        return 0;
    }
    if (hm_unlikely(t_rng == 0)) {
        /* a new thread: this call is the first of its first gap */
        hmc_small_left = hmc_small_draw(g_n) - 1;
        if (hmc_small_left > 0)
            return 0;
    }
    hmc_small_left = hmc_small_draw(g_n);
    return 1;
}

static uint64_t *leaf_for(uintptr_t a)
{
    _Atomic(uint64_t *) *slot = &hmc_small_leaf[a >> HMC_SMALL_LEAF_SHIFT];
    uint64_t *leaf = atomic_load_explicit(slot, memory_order_acquire);
    if (hm_likely(leaf != NULL))
        return leaf;
    void *m = mmap(NULL, LEAF_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uint64_t *want = NULL;
    if (!atomic_compare_exchange_strong_explicit(slot, &want, (uint64_t *)m,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        munmap(m, LEAF_BYTES);                /* another thread installed one */
        return want;
    }
    return m;
}

int hmc_small_mark(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    if ((a >> HMC_SMALL_ADDR_BITS) || (a & 7))
        return -1;
    uint64_t *leaf = leaf_for(a);
    if (!leaf)
        return -1;
    uint64_t bit = (a & ((1ull << HMC_SMALL_LEAF_SHIFT) - 1)) >> 3;
    __atomic_fetch_or(&leaf[bit >> 6], 1ull << (bit & 63), __ATOMIC_RELAXED);
    return 0;
}

int hmc_small_unmark(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    if ((a >> HMC_SMALL_ADDR_BITS) | (a & 7))
        return 0;
    uint64_t *leaf = atomic_load_explicit(&hmc_small_leaf[a >> HMC_SMALL_LEAF_SHIFT],
                                          memory_order_acquire);
    if (!leaf)
        return 0;
    uint64_t bit = (a & ((1ull << HMC_SMALL_LEAF_SHIFT) - 1)) >> 3;
    uint64_t m = 1ull << (bit & 63);
    return (__atomic_fetch_and(&leaf[bit >> 6], ~m, __ATOMIC_RELAXED) & m) != 0;
}
