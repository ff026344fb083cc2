/* hmi_shim.c — libhmalloc.so's malloc family: the interposed entry points and the
 * placing path (DESIGN.md §2, §6; docs/formats.md §6).
 *
 * Every allocating entry point first checks the request against the placement's
 * size window (one subtraction and one compare): outside it the call goes straight
 * to the wrapped allocator (hm_real.h). Inside it the slow path unwinds (common/
 * hm_unwind, as collect does), matches the chain (hmi_match: per-thread cache, then
 * the site hash) and, for a placed site whose tier has room, allocates from the
 * tier's backend (a split site of placement v2: hmi_backend_alloc_split, only its
 * ranges in the tier); anything else goes to the wrapped allocator. free, realloc and
 * malloc_usable_size ask hmi_owner which allocator owns the pointer (two loads once
 * any tier is open, none before).
 *
 * Bootstrap, options and the exit report's call: hmi_boot.c. */
#include "hmi_boot.h"
#include "hmi_backend.h"
#include "hmi_match.h"
#include "hmi_report.h"
#include "hm_modmap.h"
#include "hm_real.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the wrapped allocator, arena while resolving ---- */

enum kind { K_MALLOC, K_CALLOC, K_MEMALIGN, K_POSIX_MEMALIGN, K_ALIGNED_ALLOC, K_VALLOC,
            K_PVALLOC };

NOASAN static void *plain(enum kind k, size_t a, size_t b, int *rc, void **memptr)
{
    if (hm_unlikely(__atomic_load_n(&hmi_rm.malloc, __ATOMIC_ACQUIRE) == NULL) &&
        hmi_resolve_real() != 0) {
        void *p = NULL;
        switch (k) {
        case K_MALLOC: p = hm_boot_alloc(a, 16); break;
        case K_CALLOC: p = b && a > SIZE_MAX / b ? NULL : hm_boot_alloc(a * b, 16); break;
        case K_VALLOC: case K_PVALLOC: p = hm_boot_alloc(a, 4096); break;
        default: p = hm_boot_alloc(b, a); break;
        }
        if (k == K_POSIX_MEMALIGN) {
            *rc = p ? 0 : ENOMEM;
            if (p)
                *memptr = p;
        }
        return p;
    }
    switch (k) {
    case K_MALLOC: return hmi_rm.malloc(a);
    case K_CALLOC: return hmi_rm.calloc(a, b);
    case K_MEMALIGN: return hmi_rm.memalign(a, b);
    case K_POSIX_MEMALIGN:
        *rc = hmi_rm.posix_memalign(memptr, a, b);
        return *rc == 0 ? *memptr : NULL;
    case K_ALIGNED_ALLOC: return hmi_rm.aligned_alloc(a, b);
    case K_VALLOC: return hmi_rm.valloc(a);
    case K_PVALLOC: return hmi_rm.pvalloc(a);
    }
    return NULL;
}

/* 1 when placing; 0 while initializing (nested, or another thread), when off, and
 * under ASan before the constructor. */
NOASAN static inline int ensure_ready(void)
{
    int st = atomic_load_explicit(&hmi_state, memory_order_acquire);
    if (hm_likely(st == HMI_ST_READY))
        return 1;
    if (st == HMI_ST_NONE && hmi_resolve_real() == 0 && hmi_lazy)
        hmi_init_once();
    return atomic_load(&hmi_state) == HMI_ST_READY;
}

/* ---- the placing path ---- */

NOASAN HM_INLINE int in_window(size_t n) { return n - hmi_win_lo <= hmi_win_span; }

/* Site index of the caller's chain, or -1: the stack fingerprint of the call when
 * this thread made it before from the same stack depth (hmi_match.h), else unwound
 * and matched. Always inlined into the slow paths, whose CFA identifies the call;
 * the entry point, the slow path and hmi_match_fp_decide are the frames removed. */
#define site_here() (hmi_baseline ? (int)hmi_pl.nsites \
                                 : site_at((uint64_t)(uintptr_t)__builtin_dwarf_cfa()))
NOASAN HM_INLINE int site_at(uint64_t cfa)
{
    int site = hmi_match_fp(cfa);
    return site != HMI_FP_MISS ? site : hmi_match_fp_decide(cfa);
}

/* A tier block for a matched site, or NULL (counted) for the default allocator. */
static int tier_of(int site)
{
    return hmi_baseline && site == (int)hmi_pl.nsites ? 0 : hmi_match_site_tier(site);
}

/* A split site's object (placement v2): its ranges in the tier, the rest ordinary
 * memory, one mapping (hmi_backend_alloc_split); *in_tier the bytes of its ranges. */
static HM_NOINLINE void *place_split(int site, int tier, size_t size, size_t align, int zero,
                                     uint64_t *in_tier)
{
    const struct hmi_site *si = &hmi_pl.sites[site];
    uint64_t placed[HMI_MAX_RANGES], mask = 0;
    void *p = hmi_backend_alloc_split((uint32_t)tier, size, align, zero, si->ranges,
                                      si->nranges, placed, &mask);
    if (p) {
        for (uint32_t i = 0; i < si->nranges; i++)
            *in_tier += placed[i];
        hmi_report_split(site, placed, si->nranges);
        if (!hmi_backend_reused())
            hmi_report_placed_split(tier, p, size, site, mask);
    }
    return p;
}

static void *place(int site, size_t size, size_t align, int zero)
{
    struct hmi_site_stats *st = hmi_site_mine(site);
    hm_stripe_add(&st->matches, 1);
    int tier = tier_of(site);
    void *p = NULL;
    if (hm_unlikely(hmi_pl.nsplit != 0) && site < (int)hmi_pl.nsites && hmi_pl.sites[site].nranges) {
        uint64_t in_tier = 0;              /* a split object's bytes: those in the tier */
        if (hmi_backend_available((uint32_t)tier))
            p = place_split(site, tier, size, align, zero, &in_tier);
        if (p) {
            hm_stripe_add(&st->placed, 1);
            hm_stripe_add(&st->bytes, in_tier);
        } else {
            hm_stripe_add(&st->fell_back, 1);
        }
        return p;
    }
    if (hmi_backend_available((uint32_t)tier))
        p = zero ? hmi_backend_alloc_zeroed((uint32_t)tier, size, align)
                 : hmi_backend_alloc((uint32_t)tier, size, align);
    if (p) {
        hm_stripe_add(&st->placed, 1);
        hm_stripe_add(&st->bytes, size);
        if (!hmi_backend_reused())
            hmi_report_placed(tier, p, size);
    } else {
        hm_stripe_add(&st->fell_back, 1);
    }
    return p;
}

/* The slow path of every allocating call but realloc: size is the request, align
 * the alignment (0: malloc's). */
NOASAN static HM_NOINLINE void *slow_alloc(enum kind k, size_t a, size_t b, size_t size, size_t align,
                                    int *rc, void **memptr)
{
    if (hmi_t_busy || !ensure_ready() || !in_window(size))
        return plain(k, a, b, rc, memptr);
    int err = errno;
    hmi_t_busy++;
    int site = site_here();
    void *p = NULL;
    if (site >= 0 && k == K_PVALLOC)        /* pvalloc(0) is one page */
        p = place(site, size ? (size + align - 1) & ~(align - 1) : align, align, 0);
    else if (site >= 0)
        p = place(site, size, align, k == K_CALLOC);
    else
        hmi_count_unmatched();
    hmi_t_busy--;
    if (!p)
        return plain(k, a, b, rc, memptr);
    if (k == K_POSIX_MEMALIGN) {
        *memptr = p;
        *rc = 0;
    }
    errno = err;
    return p;
}

static size_t usable_of(int owner, void *p)
{
    if (owner >= 0)
        return hmi_backend_usable_size(owner, p);
    if (hm_in_boot(p))
        return hm_boot_size(p);
    return hmi_rm.usable(p);
}

/* glibc raises its mmap threshold to the size of each mmapped chunk it frees (up to
 * 32 MiB, malloc.c's DEFAULT_MMAP_THRESHOLD_MAX; the trim threshold to twice that), so
 * that the program's later requests of up to that size come from its heap and reuse
 * pages already faulted in. A tier block glibc never sees would leave the threshold
 * where it was: the program's next mid-size block would be a fresh mapping, faulted
 * in once more (tests/programs/mmap_threshold: a placed 4 MiB block, then 1 MiB blocks
 * faulted 512 pages where glibc alone faults 256). So the first time a freed tier block is
 * larger than any before, glibc frees a block of its size too: one malloc and free of
 * the wrapped allocator, which maps and unmaps it (one page touched) and moves glibc's
 * thresholds as the placed block would have. Bigger than the 128 KiB glibc starts at,
 * at most 32 MiB; a race between threads costs one more such pair. */
#define GLIBC_MMAP_MIN ((size_t)128 << 10)
#define GLIBC_MMAP_MAX ((size_t)32 << 20)
static size_t g_thr_seen = GLIBC_MMAP_MIN;

static void glibc_sees_free(size_t u)
{
    size_t seen = __atomic_load_n(&g_thr_seen, __ATOMIC_RELAXED);
    if (hm_likely(u <= seen) || u > GLIBC_MMAP_MAX || !hmi_rm.malloc ||
        !__atomic_compare_exchange_n(&g_thr_seen, &seen, u, 0, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED))
        return;
    void *d = hmi_rm.malloc(u - 2 * sizeof(size_t));  /* glibc's chunk: u bytes */
    if (d)
        hmi_rm.free(d);
}

/* A pointer into a tier's memory that is not the start of an object it handed out
 * was given to free or realloc (what glibc calls an invalid pointer): freeing or
 * keeping the block would hand its memory out twice, so, as glibc does, the process
 * is stopped, naming the call and the pointer. */
static HM_NOINLINE void bad_pointer(const char *call, const void *p, int owner)
{
    char line[160], *w = line;
    static const char hex[] = "0123456789abcdef";
    w += hm_fmt_str(w, call);
    w += hm_fmt_str(w, "(0x");
    uintptr_t v = (uintptr_t)p;
    int shift = 60;
    while (shift > 0 && !(v >> shift))
        shift -= 4;
    for (; shift >= 0; shift -= 4)
        *w++ = hex[(v >> shift) & 15];
    w += hm_fmt_str(w, "): invalid pointer: inside memory of placed tier ");
    w += hm_fmt_u64(w, (uint64_t)owner);
    w += hm_fmt_str(w, " but not the start of a block (a bad free in the application)");
    *w = 0;
    hm_log("hmtune: libhmalloc: ", line, NULL);
    abort();
}

/* Busy while in the backend: a UMF pool's provider may call malloc (hwloc), which
 * must go to glibc, never back into a tier. */
static void free_owned(int owner, void *p)
{
    hmi_t_busy++;
    size_t u = hmi_backend_usable_size(owner, p);
    if (hm_unlikely(u == 0))
        bad_pointer("free", p, owner);
    hmi_report_freeing(owner, p, u);
    hmi_backend_free_usable(owner, p, u);
    glibc_sees_free(u);
    hmi_t_busy--;
}

/* realloc of a non-NULL p to n > 0 bytes, decided by this call's site. */
static HM_NOINLINE void *slow_realloc(void *p, size_t n)
{
    int owner = hmi_owning ? hmi_owner(p) : HMI_OWNER_LIBC;
    int boot = owner < 0 && hm_in_boot(p);
    if (owner >= 0 && hmi_backend_usable_size(owner, p) == 0)
        bad_pointer("realloc", p, owner);
    int tier = -1, site = -1;
    if (!hmi_t_busy && ensure_ready() && in_window(n)) {
        int err = errno;
        hmi_t_busy++;
        site = site_here();
        tier = tier_of(site);
        if (site < 0)
            hmi_count_unmatched();
        hmi_t_busy--;
        errno = err;
    }
    if (owner < 0 && tier < 0 && !boot)
        return hmi_rm.realloc(p, n);
    if (owner >= 0 && owner == tier && hmi_backend_resize_in_place(owner, p, n)) {
        struct hmi_site_stats *st = hmi_site_mine(site);
        hm_stripe_add(&st->matches, 1);
        hm_stripe_add(&st->placed, 1);
        hm_stripe_add(&st->bytes, n);
        return p;                                   /* grows in place */
    }
    void *q = NULL;
    if (site >= 0) {
        hmi_t_busy++;
        q = place(site, n, 0, 0);
        hmi_t_busy--;
    }
    if (!q && owner < 0 && !boot)
        return hmi_rm.realloc(p, n);                    /* tier full: stays with glibc */
    if (!q)
        q = hmi_rm.malloc ? hmi_rm.malloc(n) : hm_boot_alloc(n, 16);
    if (!q) {
        errno = ENOMEM;
        return NULL;                                /* p is kept */
    }
    size_t old = usable_of(owner, p);
    memcpy(q, p, old < n ? old : n);
    if (owner >= 0)
        free_owned(owner, p);
    else if (!boot)
        hmi_rm.free(p);
    return q;
}

/* ---- the interposed entry points ---- */

EXPORT void *malloc(size_t n)
{
    if (hm_likely(!in_window(n)))
        return hmi_rm.malloc(n);
    return slow_alloc(K_MALLOC, n, 0, n, 0, NULL, NULL);
}

EXPORT void free(void *p)
{
    if (hm_unlikely(p == NULL))
        return;
    if (hmi_owning) {
        int o = hmi_owner(p);
        if (hm_unlikely(o >= 0)) {
            free_owned(o, p);
            return;
        }
    }
    if (hm_unlikely(hm_in_boot(p)))
        return;
    hmi_rm.free(p);
}

EXPORT void cfree(void *p);
EXPORT void cfree(void *p) { free(p); }

EXPORT void *calloc(size_t nmemb, size_t size)
{
    size_t total;
    if (hm_unlikely(__builtin_mul_overflow(nmemb, size, &total))) {
        errno = ENOMEM;
        return NULL;
    }
    if (hm_likely(!in_window(total)))
        return hmi_rm.calloc(nmemb, size);
    return slow_alloc(K_CALLOC, nmemb, size, total, 0, NULL, NULL);
}

/* realloc and reallocarray share this body, inlined into each, so that the slow
 * paths are at the same frame depth below the application's call (hm_backtrace
 * removes our frames but looks only a few frames past its depth). */
NOASAN HM_INLINE void *realloc_body(void *p, size_t n)
{
    if (p == NULL) {
        if (hm_likely(!in_window(n)))
            return hmi_rm.malloc(n);
        return slow_alloc(K_MALLOC, n, 0, n, 0, NULL, NULL);
    }
    if (n == 0) {                       /* glibc: frees p, returns NULL */
        int o = hmi_owning ? hmi_owner(p) : HMI_OWNER_LIBC;
        if (o >= 0) {
            free_owned(o, p);
            return NULL;
        }
        if (hm_in_boot(p))
            return NULL;
        return hmi_rm.realloc(p, 0);
    }
    if (hm_likely(!in_window(n) && !hmi_owning && !hm_in_boot(p)))
        return hmi_rm.realloc(p, n);
    return slow_realloc(p, n);
}

EXPORT void *realloc(void *p, size_t n)
{
    return realloc_body(p, n);
}

EXPORT void *reallocarray(void *p, size_t nmemb, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(nmemb, size, &total)) {
        errno = ENOMEM;
        return NULL;                    /* p is kept */
    }
    return realloc_body(p, total);
}

NOASAN static int pow2(size_t a) { return a && !(a & (a - 1)); }

EXPORT int posix_memalign(void **memptr, size_t align, size_t size)
{
    if (!pow2(align) || align % sizeof(void *))
        return EINVAL;
    int rc = 0;
    if (hm_likely(!in_window(size)))
        return plain(K_POSIX_MEMALIGN, align, size, &rc, memptr), rc;
    slow_alloc(K_POSIX_MEMALIGN, align, size, size, align, &rc, memptr);
    return rc;
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
    if (hm_likely(!in_window(size) || !pow2(align)))
        return plain(K_ALIGNED_ALLOC, align, size, NULL, NULL);
    return slow_alloc(K_ALIGNED_ALLOC, align, size, size, align, NULL, NULL);
}

EXPORT void *memalign(size_t align, size_t size)
{
    if (hm_likely(!in_window(size) || !pow2(align)))
        return plain(K_MEMALIGN, align, size, NULL, NULL);
    return slow_alloc(K_MEMALIGN, align, size, size, align, NULL, NULL);
}

EXPORT void *valloc(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (hm_likely(!in_window(n)))
        return plain(K_VALLOC, n, 0, NULL, NULL);
    return slow_alloc(K_VALLOC, n, 0, n, page, NULL, NULL);
}

/* The window holds request sizes (the advisor's, from the trace): pvalloc is
 * matched on its request and served page-rounded. */
EXPORT void *pvalloc(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t r = n ? n : 1;
    if (hm_likely(!in_window(n)) || r > SIZE_MAX - page)
        return plain(K_PVALLOC, n, 0, NULL, NULL);
    return slow_alloc(K_PVALLOC, n, 0, n, page, NULL, NULL);
}

EXPORT size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    int o = hmi_owning ? hmi_owner(p) : HMI_OWNER_LIBC;
    if (o < 0 && !hmi_rm.usable && !hm_in_boot(p))
        return 0;
    return usable_of(o, p);
}

/* A dlclose may unmap a library whose addresses the next dlopen reuses: the
 * matcher's per-thread caches must forget raw addresses. */
EXPORT int dlclose(void *h)
{
    if (!hmi_real_dlclose && hmi_resolve_real() != 0 && !hmi_real_dlclose)
        return -1;
    int r = hmi_real_dlclose(h);
    hm_modmap_invalidate();
    return r;
}

