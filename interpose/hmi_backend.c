/* hmi_backend.c — the tier backends' entry points (hmi_backend.h): opening and
 * closing a tier, its statistics and policy, and the dispatch of every allocation,
 * free, size and resize to the small-object arena (hmi_arena.c) or a block of its own
 * (hmi_mmap.c, hmi_split.c), or the UMF pool of a umf:* tier (hmi_backend_umf.c), by
 * the page map (hmi_pagemap.h). Spec parsing is in
 * hmi_spec.c, capacity accounting in hmi_capacity.c. The arena path (lookup, class,
 * charge, count) stays in this file or inline in its headers: it runs for every
 * placed small object. */
#include "hmi_backend.h"
#include "hmi_arena.h"
#include "hmi_charge.h"
#include "hmi_mmap.h"
#include "hmi_pagemap.h"
#include "hm_options.h"

#include <string.h>
#include <sys/mman.h>

static int umf_kind(const struct hmi_bk *b)
{
    return b->kind == HMI_BK_UMF_NUMA || b->kind == HMI_BK_UMF_HUGETLB;
}

int hmi_backend_open(uint32_t index, const char *name, const char *spec,
                     uint64_t capacity, int unlimited, char *reason, size_t reasonlen)
{
    struct hmi_msg why;
    char scratch[HMI_REASON_MAX];
    if (!reason || !reasonlen)
        reason = scratch, reasonlen = sizeof scratch;
    hmi_msg_init(&why, reason, reasonlen);
    if (index >= HMI_MAX_TIERS) {
        hmi_msg_str(&why, "tier index out of range");
        return -1;
    }
    struct hmi_bk *b = &hmi_bks[index];
    if (b->state != HMI_TIER_UNUSED) {
        hmi_msg_str(&why, "tier index already open");
        return -1;
    }
    memset(b, 0, sizeof *b);
    b->capacity = unlimited ? 0 : capacity;
    b->state = HMI_TIER_UNAVAILABLE;
    hmi_msg_str(&why, "tier ");
    hmi_msg_str(&why, name ? name : "?");
    hmi_msg_str(&why, ": ");
    hmi_msg_str(&why, spec ? spec : "(none)");
    hmi_msg_str(&why, ": ");
    int rc = hmi_spec_open(b, spec, capacity, unlimited, &why);
    /* Small objects are packed in 2 MiB chunks (hmi_arena.h): up to 1 MiB where a
     * block of its own would take a whole 2 MiB page (hugetlb, umf:hugetlb, the
     * memkind hugepage kinds), would get none (thp: the kernel backs only 2 MiB-aligned
     * ranges a mapping covers whole) or a 2 MiB granule of UMF's (umf:numa), up to
     * 256 KiB on 4 KiB pages (a larger block of its own wastes < 4 KiB, 1.6 %). */
    if (rc == 0 && b->kind != HMI_BK_DEFAULT)
        b->arena_max = b->map_huge || b->thp || umf_kind(b) ? HMI_ARENA_MAX
                                                             : HMI_ARENA_MAX / 4;
    /* freed blocks of their own and split objects kept for reuse (hmi_keep.c); the
     * UMF tiers' blocks are UMF's */
    uint64_t keep;
    hm_opt_num(HM_OPT_KEEP_FREED, &keep);   /* malformed: the default (hmi_boot warns) */
    if (rc == 0 && b->kind != HMI_BK_DEFAULT && !umf_kind(b))
        b->keep_max = keep;
    if (rc == 0 && hmi_arena_reset(index, b->arena_max != 0) != 0) {
        hmi_msg_str(&why, "cannot map the small-object arena's state");
        rc = -1;
    }
    if (rc == 0) {
        b->state = HMI_TIER_OK;
        hmi_msg_init(&why, reason, reasonlen);
    }
    return rc;
}

int hmi_backend_close(uint32_t index)
{
    if (index >= HMI_MAX_TIERS)
        return -1;
    struct hmi_backend_stats st;
    hmi_backend_stats(index, &st);
    if (st.placed != st.freed)
        return -1;
    hmi_keep_drain(&hmi_bks[index]);
    hmi_chunks_unmap(index);
    if (umf_kind(&hmi_bks[index]))
        hmi_umf_close(&hmi_bks[index]);
    hmi_arena_reset(index, 0);
    hmi_bks[index].state = HMI_TIER_UNUSED;
    memset(hmi_bk_counts[index], 0, sizeof hmi_bk_counts[index]);
    memset(hmi_bk_credit[index], 0, sizeof hmi_bk_credit[index]);
    return 0;
}

int hmi_backend_available(uint32_t index)
{
    return index < HMI_MAX_TIERS && hmi_bks[index].state == HMI_TIER_OK;
}

enum hmi_backend_kind hmi_backend_kind(uint32_t index)
{
    return index < HMI_MAX_TIERS ? hmi_bks[index].kind : HMI_BK_DEFAULT;
}

void hmi_backend_stats(uint32_t index, struct hmi_backend_stats *out)
{
    memset(out, 0, sizeof *out);
    if (index >= HMI_MAX_TIERS)
        return;
    const struct hmi_bk *b = &hmi_bks[index];
    out->capacity = b->capacity;
    uint64_t used = __atomic_load_n(&b->used, __ATOMIC_RELAXED), r = hmi_reserves(b);
    out->kept = hmi_keep_charged(index);
    r += out->kept;
    out->used = used > r ? used - r : 0;
    out->high_water = __atomic_load_n(&b->high_water, __ATOMIC_RELAXED);
    out->chunks = hmi_arena_chunks(index);
    hmi_count_sum(index, out);
}

int hmi_backend_policy(uint32_t index, struct hmi_backend_policy *out)
{
    memset(out, 0, sizeof *out);
    if (!hmi_backend_available(index))
        return -1;
    const struct hmi_bk *b = &hmi_bks[index];
    out->kind = b->kind;
    out->map_huge = b->map_huge;
    out->thp = b->thp;
    out->mpol = b->mpol;
    out->nodes = b->nodes;
    out->maxnode = (unsigned long)HMI_MAX_NODES + 1;
    return 0;
}

int hmi_backend_charge(uint32_t index, uint64_t n)
{
    /* umf:hugetlb's region already holds every hugepage of its capacity */
    if (!hmi_backend_available(index) || hmi_bks[index].kind == HMI_BK_UMF_HUGETLB)
        return -1;
    return hmi_charge(&hmi_bks[index], n);
}

void hmi_backend_uncharge(uint32_t index, uint64_t n)
{
    if (index < HMI_MAX_TIERS)
        hmi_uncharge(&hmi_bks[index], n);
}

/* The tier that serves a request of size and align (both normalized: at least 1
 * byte, at least 16-byte alignment), or NULL: no such tier, not placing, or an
 * alignment that is not a power of two (counted as not fitting). */
static struct hmi_bk *request_tier(uint32_t index, size_t *size, size_t *align)
{
    if (index >= HMI_MAX_TIERS)
        return NULL;
    struct hmi_bk *b = &hmi_bks[index];
    if (b->state != HMI_TIER_OK || b->kind == HMI_BK_DEFAULT)
        return NULL;
    hmi_why = HMI_WHY_NONE;                 /* the reason of this request's refusal */
    if (*align < 16)
        *align = 16;
    if (*align & (*align - 1)) {
        hmi_why = HMI_WHY_ALIGN;
        hmi_count(b, HMI_C_NOT_FITTING);
        return NULL;
    }
    if (*size == 0)
        *size = 1;
    return b;
}

void *hmi_backend_alloc_split(uint32_t index, size_t size, size_t align, int zero,
                              const struct hmi_range *ranges, uint32_t n,
                              uint64_t *placed, uint64_t *mask)
{
    *mask = 0;
    hmi_keep_hit = 0;
    for (uint32_t i = 0; i < n; i++)
        placed[i] = 0;
    struct hmi_bk *b = request_tier(index, &size, &align);
    if (!b)
        return NULL;
    if (b->kind == HMI_BK_UMF_HUGETLB) {    /* as for static variables (charge) */
        hmi_count(b, HMI_C_NOT_FITTING);
        return NULL;
    }
    void *p = hmi_split_alloc(b, index, size, align, zero, ranges, n, placed, mask);
    hmi_count(b, p ? HMI_C_PLACED : HMI_C_NOT_FITTING);
    return p;
}

/* ---- dispatch ---- */

static void *arena_alloc(struct hmi_bk *b, uint32_t index, unsigned cls, size_t size,
                         int zero)
{
    size_t cs = hmi_arena_class_size(cls);
    /* small ones from the thread's credit (marked then); a larger one marks the high-
     * water mark once it is there: a chunk the pool refuses leaves no mark */
    if (hmi_charge_unmarked(b, cs))
        return NULL;
    void *p = hmi_arena_alloc(index, cls, size, zero,
                              umf_kind(b) ? hmi_umf_chunk : hmi_map_chunk);
    if (!p)
        hmi_uncharge(b, cs);
    else if (cs > HMI_CREDIT_SMALL)
        hmi_mark_high_water(b);
    return p;
}

static void *backend_alloc(uint32_t index, size_t size, size_t align, int zero)
{
    hmi_keep_hit = 0;
    struct hmi_bk *b = request_tier(index, &size, &align);
    if (!b)
        return NULL;
    /* fresh chunks and mappings are zero: only reused arena objects need clearing
     * (and a kept block is never handed out for zeroed memory) */
    int cls = b->arena_max ? hmi_arena_class(size, align) : -1;
    void *p = cls >= 0 && hmi_arena_class_size((unsigned)cls) <= b->arena_max
                  ? arena_alloc(b, index, (unsigned)cls, size, zero)
              : umf_kind(b) ? hmi_umf_alloc(b, size, align, zero)
                            : hmi_mmap_alloc(b, index, size, align, zero);
    /* a refusal the capacity, the kernel or the chunk table did not name: UMF's, or
     * a request the page map cannot hold */
    if (!p && !hmi_why)
        hmi_why = umf_kind(b) ? HMI_WHY_UMF : HMI_WHY_OTHER;
    hmi_count(b, p ? HMI_C_PLACED : HMI_C_NOT_FITTING);
    return p;
}

void *hmi_backend_alloc(uint32_t index, size_t size, size_t align)
{
    return backend_alloc(index, size, align, 0);
}

void *hmi_backend_alloc_zeroed(uint32_t index, size_t size, size_t align)
{
    return backend_alloc(index, size, align, 1);
}

int hmi_backend_reused(void)
{
    return hmi_keep_hit;
}

int hmi_owner(const void *p)
{
    if (!p)
        return HMI_OWNER_LIBC;
    uint32_t t = hmi_pagemap_get(p) & HMI_E_TIER_MASK;
    return hm_likely(t == 0) ? HMI_OWNER_LIBC : (int)t - 1;
}

/* Whether p is the start of the block whose first granule has entry e: blocks of
 * their own start on a granule (hmi_mmap.c); a pointer further in is not one. */
static inline int block_start(uint32_t e, const void *p)
{
    return (e & HMI_E_HEAD) && !((uintptr_t)p & (HMI_PAGE_2M - 1));
}

void hmi_backend_free(int owner, void *p)
{
    hmi_backend_free_usable(owner, p, 0);
}

void hmi_backend_free_usable(int owner, void *p, size_t usable)
{
    if (owner < 0 || owner >= HMI_MAX_TIERS || !p)
        return;
    struct hmi_bk *b = &hmi_bks[owner];
    uint32_t e = hmi_pagemap_get(p);
    int cls = hmi_arena_object(e, p);
    if (hmi_is_umf(e)) {
        hmi_umf_free(b, p, usable);
    } else if (cls >= 0) {
        hmi_arena_free((uint32_t)owner, (unsigned)cls, p);
        hmi_uncharge(b, hmi_arena_class_size((unsigned)cls));
    } else {
        if (!block_start(e, p))
            return;                         /* not a block's start: never freed here */
        uint64_t len = (uint64_t)(e >> HMI_E_PAGES_SHIFT) * HMI_PAGE_4K;
        uint64_t span = hmi_round_up(len, HMI_PAGE_2M);
        struct hmi_split_rec r = { .charge = len };
        if (hm_unlikely(__atomic_load_n(&hmi_split_live, __ATOMIC_ACQUIRE) != 0))
            hmi_split_take((uintptr_t)p, &r);   /* a split block: its own charge */
        hmi_pagemap_clear((uintptr_t)p, span);
        if (!hmi_keep_put(b, (uintptr_t)p, len, r.charge, r.rg, r.n, r.mask)) {
            munmap(p, span);
            if (r.charge)
                hmi_uncharge(b, r.charge);
        }
    }
    hmi_count(b, HMI_C_FREED);
}

size_t hmi_backend_usable_size(int owner, const void *p)
{
    if (owner < 0 || owner >= HMI_MAX_TIERS || !p)
        return 0;
    uint32_t e = hmi_pagemap_get(p);
    if (hmi_is_umf(e))
        return hmi_umf_usable(&hmi_bks[owner], p);
    int cls = hmi_arena_object(e, p);
    if (cls >= 0)
        return hmi_arena_class_size((unsigned)cls);
    return block_start(e, p) ? (size_t)(e >> HMI_E_PAGES_SHIFT) * HMI_PAGE_4K : 0;
}

int hmi_backend_resize_in_place(int owner, void *p, size_t newsize)
{
    size_t u = hmi_backend_usable_size(owner, p);
    if (!u || newsize > u)
        return 0;
    /* As in the trace, a realloc ends one block and starts another (DESIGN.md §2). */
    hmi_count(&hmi_bks[owner], HMI_C_FREED);
    hmi_count(&hmi_bks[owner], HMI_C_PLACED);
    return 1;
}

void hmi_backend_atfork_prepare(void)
{
    hmi_arena_atfork_prepare();
    hmi_umf_atfork_prepare();
}

void hmi_backend_atfork_release(void)
{
    hmi_umf_atfork_release();
    hmi_arena_atfork_release();
}

int hmi_backend_hugetlb_open(void)
{
    for (uint32_t i = 0; i < HMI_MAX_TIERS; i++)
        if (hmi_bks[i].state == HMI_TIER_OK &&
            (hmi_bks[i].map_huge || hmi_bks[i].kind == HMI_BK_UMF_HUGETLB))
            return 1;
    return 0;
}

/* A tier whose memory may be hugetlb pages. */
static int huge_tier(const struct hmi_bk *b)
{
    return b->state == HMI_TIER_OK && (b->map_huge || b->kind == HMI_BK_UMF_HUGETLB);
}

int hmi_backend_hugetlb_at(const void *p, uintptr_t *lo, uintptr_t *hi)
{
    uintptr_t a = (uintptr_t)p, g = a & ~(uintptr_t)(HMI_PAGE_2M - 1);
    uint32_t e = hmi_pagemap_get(p), t = e & HMI_E_TIER_MASK;
    if (!t || !huge_tier(&hmi_bks[t - 1]))
        return 0;
    if (hmi_is_umf(e) || (!(e & HMI_E_HEAD) && (e >> HMI_E_PAGES_SHIFT))) {
        *lo = g, *hi = g + HMI_PAGE_2M;     /* a UMF granule or an arena chunk */
        return 1;
    }
    /* a granule of a block: its first one holds the length (at most 256 GiB back) */
    for (uint64_t k = 0; k <= (HMI_E_MAX_PAGES * HMI_PAGE_4K) >> HMI_GRAN_SHIFT; k++) {
        uintptr_t h = g - (uintptr_t)(k << HMI_GRAN_SHIFT);
        uint32_t eh = hmi_pagemap_get((const void *)h);
        if ((eh & HMI_E_TIER_MASK) != t)
            return 0;
        if (eh & HMI_E_HEAD) {
            *lo = h, *hi = h + (uintptr_t)(eh >> HMI_E_PAGES_SHIFT) * HMI_PAGE_4K;
            return a < *hi;
        }
        if (h == 0)
            break;
    }
    return 0;
}
