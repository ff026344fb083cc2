/* hmi_mmap.c — the mmap backends' memory: mbind by raw syscall, the probe mapping
 * hmi_backend_open makes before it calls a tier usable, blocks of their own (every
 * start on a 2 MiB boundary, so the page map can own their granules) and the 2 MiB
 * chunks of the small-object arena, each mapped with the tier's pages, THP advice,
 * policy and nodes. See hmi_backend.h. */
#include "hmi_mmap.h"
#include "hmi_sys.h"
#include "hmi_charge.h"
#include "hmi_pagemap.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* map_span's one-call path gave an unaligned mapping this often: past SPAN_MISSES
 * the kernel is taken not to align anonymous mappings and the path is skipped. */
static uint32_t hmi_span_misses;
#define SPAN_MISSES 8

long hmi_mbind(void *a, size_t len, int mode, const unsigned long *mask)
{
    return syscall(SYS_mbind, a, len, mode, mask, (unsigned long)HMI_MAX_NODES + 1, 0ul);
}

int hmi_probe_map(struct hmi_bk *b, struct hmi_msg *why)
{
    size_t len = b->map_huge ? HMI_PAGE_2M : HMI_PAGE_4K;
    void *a = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (b->map_huge ? MAP_HUGETLB : 0), -1, 0);
    if (a == MAP_FAILED) {
        int e = errno;
        if (!b->map_huge)
            return hmi_msg_str(why, "mmap failed"), -1;
        hmi_msg_str(why, "no 2 MiB hugepage can be mapped (mmap MAP_HUGETLB: ");
        hmi_msg_errno(why, e);
        hmi_msg_str(why, "); reserve some with /proc/sys/vm/nr_hugepages");
        return -1;
    }
    long r = b->mpol ? hmi_mbind(a, len, b->mpol, b->nodes) : 0;
    int e = errno;
    munmap(a, len);
    if (r != 0) {
        hmi_msg_str(why, "mbind refused the nodes: ");
        hmi_msg_errno(why, e);
        return -1;
    }
    return 0;
}

/* Map a block of len bytes (len a multiple of 4 KiB; of 2 MiB for hugetlb) whose
 * start is aligned to max(align, 2 MiB), owning span = len rounded to 2 MiB of
 * address space (the tail past len stays PROT_NONE). NULL on failure. */
void *hmi_map_span(int huge, uint64_t len, uint64_t span, size_t align)
{
    if (huge && align <= HMI_PAGE_2M) {
        /* The kernel places hugetlb mappings on 2 MiB boundaries. */
        void *a = mmap(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        return a == MAP_FAILED ? NULL : a;
    }
    if (align <= HMI_PAGE_2M && __atomic_load_n(&hmi_span_misses, __ATOMIC_RELAXED) < SPAN_MISSES) {
        /* Recent kernels put an anonymous mapping whose length is a multiple of 2 MiB
         * on a 2 MiB boundary (upstream "mm: align larger anonymous mappings on THP
         * boundaries"; seen on 6.18): one call instead of reserve, trim twice, map.
         * Older kernels (or no room for the aligned gap) give an unaligned one: it is
         * unmapped, and after SPAN_MISSES of them only the general path is taken. */
        char *a = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (a != MAP_FAILED && !((uintptr_t)a & (HMI_PAGE_2M - 1))) {
            if (span > len && hmi_sys_mprotect(a + len, span - len, PROT_NONE) != 0) {
                munmap(a, span);
                return NULL;
            }
            return a;
        }
        if (a != MAP_FAILED)
            munmap(a, span);
        __atomic_fetch_add(&hmi_span_misses, 1, __ATOMIC_RELAXED);
    }
    uint64_t al = align > HMI_PAGE_2M ? align : HMI_PAGE_2M;
    if (span > UINT64_MAX - al)
        return NULL;
    char *r = mmap(NULL, span + al, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED)
        return NULL;
    char *a = (char *)hmi_round_up((uintptr_t)r, al);
    if (a > r)
        munmap(r, (size_t)(a - r));
    if (r + span + al > a + span)
        munmap(a + span, (size_t)(r + span + al - (a + span)));
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | (huge ? MAP_HUGETLB : 0);
    if (mmap(a, len, PROT_READ | PROT_WRITE, flags, -1, 0) == MAP_FAILED) {
        munmap(a, span);
        return NULL;
    }
    return a;
}

/* A block of b's pages (hmi_map_span), with b's page advice and memory policy over its
 * len bytes, where the page map can cover it; NULL (nothing left mapped) otherwise. */
static char *map_block(struct hmi_bk *b, uint64_t len, uint64_t span, size_t align)
{
    char *a = hmi_map_span(b->map_huge, len, span, align);
    if (a && b->thp)
        hmi_sys_madvise(a, len, MADV_HUGEPAGE);
    if (a && b->mpol && hmi_mbind(a, len, b->mpol, b->nodes) != 0) {
        munmap(a, span);
        a = NULL;
    }
    if (a && !hmi_pagemap_covers(a)) {
        munmap(a, span);                    /* outside what the page map covers */
        a = NULL;
    }
    if (!a)
        hmi_count(b, HMI_C_MAP_FAILED);
    return a;
}

void *hmi_map_chunk(uint32_t index, unsigned code)
{
    struct hmi_bk *b = &hmi_bks[index];
    /* the slot after the mapping: slots are never given back, and a pool run dry
     * must not use them up */
    char *a = map_block(b, HMI_PAGE_2M, HMI_PAGE_2M, HMI_PAGE_2M);
    if (!a)
        return NULL;
    int64_t k = hmi_chunk_slot();
    if (k < 0) {
        munmap(a, HMI_PAGE_2M);
        return NULL;
    }
    hmi_chunk_record(k, (uintptr_t)a, index, code);
    return a;
}

void *hmi_mmap_alloc(struct hmi_bk *b, uint32_t index, size_t size, size_t align, int zero)
{
    int huge = b->map_huge;
    if (size > (1ull << HMI_ADDR_BITS))
        return NULL;
    uint64_t len = hmi_round_up(size, huge ? HMI_PAGE_2M : HMI_PAGE_4K);
    uint64_t span = hmi_round_up(len, HMI_PAGE_2M);
    if (len / HMI_PAGE_4K > HMI_E_MAX_PAGES)
        return NULL;
    uint64_t charge;
    char *a = zero ? NULL : (char *)hmi_keep_take(b, len, align, NULL, 0, 0, &charge);
    if (a) {
        hmi_pagemap_set((uintptr_t)a, span, index, len / HMI_PAGE_4K);
        return a;
    }
    hmi_keep_drain(b);                      /* a tier holds no more than it had live */
    if (hmi_charge_unmarked(b, len))
        return NULL;
    a = map_block(b, len, span, align);
    if (!a) {
        hmi_uncharge(b, len);
        return NULL;
    }
    hmi_mark_high_water(b);
    hmi_pagemap_set((uintptr_t)a, span, index, len / HMI_PAGE_4K);
    return a;
}
