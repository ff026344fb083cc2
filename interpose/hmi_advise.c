/* hmi_advise.c — madvise and mprotect keep, over placed hugetlb memory, what they do
 * on the ordinary anonymous memory glibc would have given, and mremap does not move a
 * placed block (docs/formats.md §6).
 *
 * The kernel changes hugetlb mappings only in whole 2 MiB pages: MADV_DONTNEED of a
 * 4 KiB page inside one leaves its data (or is refused), MADV_FREE is refused, and
 * mprotect of a 4 KiB page fails with EINVAL. Programs do both (freeing parts of big
 * buffers, guard pages). So, where a call touches memory of a tier that maps hugetlb
 * pages (hmi_backend_hugetlb_at, or a placed static array):
 *   MADV_DONTNEED, MADV_FREE: the whole 2 MiB pages of the range go to the kernel as
 *     MADV_DONTNEED (it frees hugepages whole, and their reservation comes back; a
 *     valid MADV_FREE too, which may zero at once); in the partial pages at either end
 *     that are hugetlb the bytes are cleared, as a fresh page would read; ordinary
 *     pages there go to the kernel. The call succeeds where glibc's memory would.
 *   mprotect: when the kernel refuses, the hugepage at each unaligned end of the range
 *     is put back in ordinary pages (hmi_demote) and the call is made again; those
 *     bytes stay in the tier's charge but no longer in hugepages (counted, and said in
 *     the run statistics).
 * mremap of a placed block's start (which starts a mapping of the library's, where
 * glibc's blocks are never page aligned and the kernel refuses them) fails with
 * EINVAL as it would on glibc's: moved, the block would leave the page map behind,
 * and its free would go to glibc. The library's own mremap calls move fresh mappings
 * over its memory, never from it.
 * Everything else goes straight to the kernel, as does every call before a tier is
 * open or when no tier maps hugetlb pages. */
#include "hmi_advise.h"
#include "hmi_entry.h"
#include "hmi_backend.h"
#include "hmi_demote.h"
#include "hmi_static.h"
#include "hmi_sys.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE   ((uintptr_t)4096)
#define HUGE2M ((uintptr_t)2 << 20)

static uint64_t g_zeroed, g_demoted;       /* atomics */

/* Whether a is memory of the interposer's that may be hugetlb: its read-write extent
 * in [*lo, *hi). */
static int placed_huge(uintptr_t a, uintptr_t *lo, uintptr_t *hi)
{
    uint64_t slo, shi;
    if (hmi_backend_hugetlb_at((const void *)a, lo, hi))
        return 1;
    if (!hmi_static_placed_at(a, &slo, &shi))
        return 0;
    *lo = (uintptr_t)slo, *hi = (uintptr_t)shi;
    return 1;
}

static int active(void)
{
    return __atomic_load_n(&hmi_owning, __ATOMIC_RELAXED) && hmi_backend_hugetlb_open();
}

/* [x, y) is inside one 2 MiB page: clear it where that page is hugetlb of ours (only
 * what is not zero yet, page by page), else let the kernel discard it. */
static int discard_part(uintptr_t x, uintptr_t y, int advice)
{
    uintptr_t lo, hi;
    if (!placed_huge(x, &lo, &hi))
        return hmi_sys_madvise((void *)x, y - x, advice);
    if (y > hi) {                           /* past ours (after a static's pages) */
        if (hmi_sys_madvise((void *)hi, y - hi, advice) != 0)
            return -1;
        y = hi;
    }
    if (!hmi_is_hugetlb(x))
        return hmi_sys_madvise((void *)x, y - x, advice);
    for (uintptr_t p = x; p < y;) {
        uintptr_t e = (p & ~(PAGE - 1)) + PAGE;
        if (e > y)
            e = y;
        const unsigned char *c = (const unsigned char *)p;
        size_t n = (size_t)(e - p);
        if (c[0] || memcmp(c, c + 1, n - 1))
            memset((void *)p, 0, n);
        p = e;
    }
    __atomic_fetch_add(&g_zeroed, (uint64_t)(y - x), __ATOMIC_RELAXED);
    return 0;
}

EXPORT int madvise(void *addr, size_t len, int advice)
{
    uintptr_t a = (uintptr_t)addr, end = a + ((len + PAGE - 1) & ~(PAGE - 1));
    if (hm_likely(!active()) || (advice != MADV_DONTNEED && advice != MADV_FREE) ||
        (a & (PAGE - 1)) || end <= a)
        return hmi_sys_madvise(addr, len, advice);
    /* [a, g0) and [g1, end): the partial 2 MiB pages; [g0, g1) the whole ones */
    uintptr_t g0 = (a + HUGE2M - 1) & ~(HUGE2M - 1), g1 = end & ~(HUGE2M - 1), lo, hi;
    if (g0 > g1)
        g0 = g1 = end;                      /* inside one 2 MiB page */
    int ours = (a < g0 && placed_huge(a, &lo, &hi)) || (g1 < end && placed_huge(g1, &lo, &hi));
    for (uintptr_t g = g0; !ours && advice == MADV_FREE && g < g1; g += HUGE2M)
        ours = placed_huge(g, &lo, &hi);    /* MADV_FREE: refused on hugetlb pages */
    if (!ours)
        return hmi_sys_madvise(addr, len, advice);
    if (g0 < g1 && hmi_sys_madvise((void *)g0, g1 - g0, MADV_DONTNEED) != 0)
        return -1;
    if (a < g0 && discard_part(a, g0, MADV_DONTNEED) != 0)
        return -1;
    if (g1 < end && discard_part(g1 > a ? g1 : a, end, MADV_DONTNEED) != 0)
        return -1;
    return 0;
}

/* The 2 MiB page holding a, when a is not on its edge and it is a hugetlb page of
 * ours, put back in ordinary pages: 1 done, 0 nothing to do, -1 not possible. */
static int demote_at(uintptr_t a)
{
    uintptr_t lo, hi, g = a & ~(HUGE2M - 1);
    if (!(a & (HUGE2M - 1)) || !placed_huge(g, &lo, &hi) || !hmi_is_hugetlb(g))
        return 0;
    if (hmi_demote(g, HUGE2M, PROT_READ | PROT_WRITE, 0) != 0)
        return -1;
    __atomic_fetch_add(&g_demoted, HUGE2M, __ATOMIC_RELAXED);
    return 1;
}

EXPORT int mprotect(void *addr, size_t len, int prot)
{
    int r = hmi_sys_mprotect(addr, len, prot);
    if (hm_likely(r == 0) || errno != EINVAL || !active())
        return r;
    uintptr_t a = (uintptr_t)addr, end = a + ((len + PAGE - 1) & ~(PAGE - 1));
    if ((a & (PAGE - 1)) || end <= a)
        return r;
    int d1 = demote_at(a), d2 = demote_at(end);
    if (d1 < 0 || d2 < 0 || (!d1 && !d2)) {
        errno = EINVAL;
        return -1;
    }
    return hmi_sys_mprotect(addr, len, prot);
}

EXPORT void *mremap(void *old, size_t old_size, size_t new_size, int flags, ...)
{
    void *to = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        to = va_arg(ap, void *);
        va_end(ap);
    }
    if (__atomic_load_n(&hmi_owning, __ATOMIC_RELAXED) && hmi_owner(old) >= 0) {
        errno = EINVAL;
        return MAP_FAILED;
    }
    return (void *)syscall(SYS_mremap, old, old_size, new_size, flags, to);
}

void hmi_advise_stats(uint64_t *zeroed, uint64_t *demoted)
{
    *zeroed = __atomic_load_n(&g_zeroed, __ATOMIC_RELAXED);
    *demoted = __atomic_load_n(&g_demoted, __ATOMIC_RELAXED);
}
