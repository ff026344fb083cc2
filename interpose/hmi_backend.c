/* hmi_backend.c — the tier table, capacity accounting, the 2 MiB page map that
 * records which tier owns each mmap'd block, and the mmap backends (hugetlb, thp,
 * numa:LIST). The memkind backend is in hmi_backend_memkind.c. See hmi_backend.h. */
#include "hmi_backend_int.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct hmi_bk hmi_bks[HMI_MAX_TIERS];
struct hmi_bk_counts hmi_bk_counts[HMI_MAX_TIERS][HM_STRIPES];
struct hmi_bk_credit hmi_bk_credit[HMI_MAX_TIERS][HM_STRIPES];

#define PAGE_4K     4096ull
#define PAGE_2M     (2ull << 20)
#define GRAN_SHIFT  21                      /* one page-map entry per 2 MiB */
#define ADDR_BITS   47                      /* user address space mapped here */
#define MAP_ENTRIES (1ull << (ADDR_BITS - GRAN_SHIFT))

/* Page-map entry: bits 0-4 tier + 1 (0: not ours), bit 5 set on a block's first
 * granule, bits 6-31 on that granule the block's mapped length in 4 KiB pages.
 * Tier field E_LEAF: the granule holds memkind blocks; bits 6-31 index a leaf of
 * 512 entries, one per 4 KiB page: bits 0-4 tier, bits 5-31 the number of live
 * memkind blocks starting on that page. */
#define E_TIER_MASK 0x1fu
#define E_HEAD      0x20u
#define E_PAGES_SHIFT 6
#define E_MAX_PAGES ((1ull << (32 - E_PAGES_SHIFT)) - 1)   /* 256 GiB blocks */
#define E_LEAF      0x1fu
#define LEAF_ENTRIES 512u
#define LEAF_MAX    (1u << 18)              /* 512 GiB of granules holding memkind blocks */
#define L_COUNT_ONE 32u

static uint32_t *hmi_pagemap;               /* published with a release store */
static uint32_t *hmi_leaves;                /* LEAF_MAX leaves, MAP_NORESERVE */
static uint32_t hmi_nleaves;

#define MPOL_BIND_ 2                        /* <linux/mempolicy.h> MPOL_BIND */

static uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

/* ---- messages ---- */

void hmi_msg_init(struct hmi_msg *m, char *buf, size_t cap)
{
    m->buf = buf;
    m->cap = cap;
    m->pos = 0;
    if (cap)
        buf[0] = '\0';
}

void hmi_msg_str(struct hmi_msg *m, const char *s)
{
    if (!m->cap)
        return;
    while (*s && m->pos + 1 < m->cap)
        m->buf[m->pos++] = *s++;
    m->buf[m->pos] = '\0';
}

void hmi_msg_u64(struct hmi_msg *m, uint64_t v)
{
    char tmp[24];
    size_t n = hm_fmt_u64(tmp, v);
    tmp[n] = '\0';
    hmi_msg_str(m, tmp);
}

static void msg_errno(struct hmi_msg *m, int err)
{
    const char *d = strerrordesc_np(err);
    hmi_msg_str(m, d ? d : "unknown error");
}

/* ---- capacity ---- */

/* The tier's shared counter: used + n <= capacity or refused. */
static int global_charge(struct hmi_bk *b, uint64_t n)
{
    uint64_t cur = __atomic_load_n(&b->used, __ATOMIC_RELAXED), next;
    do {
        if (b->capacity && (n > b->capacity || cur > b->capacity - n))
            return -1;
        next = cur + n;
    } while (!__atomic_compare_exchange_n(&b->used, &cur, next, 1, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return 0;
}

static uint64_t reserves(const struct hmi_bk *b)
{
    uint64_t r = 0;
    for (uint32_t k = 0; k < HM_STRIPES; k++)
        r += __atomic_load_n(&hmi_bk_credit[b - hmi_bks][k].bytes, __ATOMIC_RELAXED);
    return r;
}

/* After the shared counter moved: the bytes charged now (without the reserves)
 * raise the high-water mark. Charges served from a reserve do not look, so the mark
 * may lag by less than a chunk per thread allocating small blocks. */
static void high_water(struct hmi_bk *b)
{
    uint64_t used = __atomic_load_n(&b->used, __ATOMIC_RELAXED), r = reserves(b);
    uint64_t now = used > r ? used - r : 0;
    uint64_t hw = __atomic_load_n(&b->high_water, __ATOMIC_RELAXED);
    while (now > hw && !__atomic_compare_exchange_n(&b->high_water, &hw, now, 1,
                                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

/* Give every stripe's reserve back to the tier (before refusing a request). */
static void drain_credits(struct hmi_bk *b)
{
    for (uint32_t k = 0; k < HM_STRIPES; k++) {
        uint64_t x = __atomic_exchange_n(&hmi_bk_credit[b - hmi_bks][k].bytes, 0, __ATOMIC_RELAXED);
        if (x)
            __atomic_fetch_sub(&b->used, x, __ATOMIC_RELAXED);
    }
}

int hmi_charge(struct hmi_bk *b, uint64_t n)
{
    if (n <= HMI_CREDIT_SMALL && b->capacity) {
        uint64_t *c = &hmi_bk_credit[b - hmi_bks][hm_stripe()].bytes;
        uint64_t have = __atomic_load_n(c, __ATOMIC_RELAXED);
        while (have >= n) {
            if (__atomic_compare_exchange_n(c, &have, have - n, 1, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                return 0;
        }
        if (global_charge(b, HMI_CREDIT_CHUNK) == 0) {
            __atomic_fetch_add(c, HMI_CREDIT_CHUNK - n, __ATOMIC_RELAXED);
            high_water(b);
            return 0;
        }
    }
    if (global_charge(b, n) != 0) {
        drain_credits(b);
        if (global_charge(b, n) != 0)
            return -1;
    }
    high_water(b);
    return 0;
}

void hmi_uncharge(struct hmi_bk *b, uint64_t n)
{
    if (n <= HMI_CREDIT_SMALL && b->capacity) {
        uint64_t *c = &hmi_bk_credit[b - hmi_bks][hm_stripe()].bytes;
        uint64_t now = __atomic_add_fetch(c, n, __ATOMIC_RELAXED);
        /* keep one chunk, give the rest back (the CAS fails only when another
         * thread of a shared stripe moved it: then that thread decides) */
        if (now > 2 * HMI_CREDIT_CHUNK &&
            __atomic_compare_exchange_n(c, &now, HMI_CREDIT_CHUNK, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            __atomic_fetch_sub(&b->used, now - HMI_CREDIT_CHUNK, __ATOMIC_RELAXED);
        return;
    }
    __atomic_fetch_sub(&b->used, n, __ATOMIC_RELAXED);
}

enum { C_PLACED, C_FREED, C_NOT_FITTING, C_SMALL };

static void count(const struct hmi_bk *b, int which)
{
    struct hmi_bk_counts *c = &hmi_bk_counts[b - hmi_bks][hm_stripe()];
    uint64_t *f = which == C_PLACED ? &c->placed : which == C_FREED ? &c->freed
                : which == C_NOT_FITTING ? &c->not_fitting : &c->small;
    hm_stripe_add(f, 1);
}

static void count_sum(uint32_t index, struct hmi_backend_stats *out)
{
    for (uint32_t k = 0; k < HM_STRIPES; k++) {
        const struct hmi_bk_counts *c = &hmi_bk_counts[index][k];
        out->placed += __atomic_load_n(&c->placed, __ATOMIC_RELAXED);
        out->freed += __atomic_load_n(&c->freed, __ATOMIC_RELAXED);
        out->not_fitting += __atomic_load_n(&c->not_fitting, __ATOMIC_RELAXED);
        out->small += __atomic_load_n(&c->small, __ATOMIC_RELAXED);
    }
}

/* ---- the page map ---- */

/* Map *slot once: bytes of MAP_NORESERVE zeroes, published with a release store (the
 * tables are set up by hmi_backend_open, single-threaded). -1 with why appended. */
static int map_table(uint32_t **slot, size_t bytes, const char *what, struct hmi_msg *why)
{
    if (__atomic_load_n(slot, __ATOMIC_ACQUIRE))
        return 0;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        int e = errno;
        hmi_msg_str(why, "cannot map the ");
        hmi_msg_str(why, what);
        hmi_msg_str(why, ": ");
        msg_errno(why, e);
        return -1;
    }
    __atomic_store_n(slot, (uint32_t *)m, __ATOMIC_RELEASE);
    return 0;
}

static int pagemap_init(struct hmi_msg *why)
{
    return map_table(&hmi_pagemap, MAP_ENTRIES * sizeof(uint32_t), "ownership page map", why);
}

/* Granules [a, a + span) belong to tier index; the first one records pages. */
static void pagemap_set(uintptr_t a, uint64_t span, uint32_t index, uint64_t pages)
{
    uint32_t *m = hmi_pagemap;
    uint64_t g0 = a >> GRAN_SHIFT, n = span >> GRAN_SHIFT;
    for (uint64_t g = 1; g < n; g++)
        __atomic_store_n(&m[g0 + g], index + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&m[g0], (uint32_t)((index + 1) | E_HEAD | (pages << E_PAGES_SHIFT)),
                     __ATOMIC_RELEASE);
}

/* ---- memkind blocks in the page map ---- */

static int leaves_init(struct hmi_msg *why)
{
    return map_table(&hmi_leaves, (size_t)LEAF_MAX * LEAF_ENTRIES * sizeof(uint32_t),
                     "memkind page map", why);
}

/* Entry of the page of a in the leaf of granule entry e. Neighbouring pages go to
 * different cache lines (page i to line i % 32): threads allocating side by side
 * do not write one line. */
static uint32_t *leaf_entry(uint32_t e, uintptr_t a)
{
    uint32_t pg = (uint32_t)(a >> 12) & (LEAF_ENTRIES - 1);
    return hmi_leaves + (size_t)(e >> E_PAGES_SHIFT) * LEAF_ENTRIES + (((pg & 31) << 4) | (pg >> 5));
}

int hmi_mk_mark(const void *p, uint32_t tier)
{
    uintptr_t a = (uintptr_t)p;
    if (a >> ADDR_BITS)
        return -1;
    uint32_t *slot = &hmi_pagemap[a >> GRAN_SHIFT];
    uint32_t e = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if ((e & E_TIER_MASK) != E_LEAF) {
        if (e != 0)
            return -1;                      /* an mmap block's granule: cannot happen */
        uint32_t li = __atomic_fetch_add(&hmi_nleaves, 1, __ATOMIC_RELAXED);
        if (li >= LEAF_MAX)
            return -1;
        uint32_t ne = E_LEAF | (li << E_PAGES_SHIFT);
        /* A racing thread may install its leaf first: use that one (li stays unused). */
        if (__atomic_compare_exchange_n(slot, &e, ne, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            e = ne;
        else if ((e & E_TIER_MASK) != E_LEAF)
            return -1;
    }
    uint32_t *c = leaf_entry(e, a);
    uint32_t v = __atomic_load_n(c, __ATOMIC_RELAXED), nv;
    do {
        nv = ((v & ~E_TIER_MASK) + L_COUNT_ONE) | tier;
    } while (!__atomic_compare_exchange_n(c, &v, nv, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    return 0;
}

void hmi_mk_unmark(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    uint32_t e = __atomic_load_n(&hmi_pagemap[a >> GRAN_SHIFT], __ATOMIC_ACQUIRE);
    if ((e & E_TIER_MASK) == E_LEAF)
        __atomic_fetch_sub(leaf_entry(e, a), L_COUNT_ONE, __ATOMIC_RELEASE);
}

static void pagemap_clear(uintptr_t a, uint64_t span)
{
    uint32_t *m = hmi_pagemap;
    uint64_t g0 = a >> GRAN_SHIFT, n = span >> GRAN_SHIFT;
    for (uint64_t g = 0; g < n; g++)
        __atomic_store_n(&m[g0 + g], 0, __ATOMIC_RELEASE);
}

static uint32_t pagemap_get(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    uint32_t *m = __atomic_load_n(&hmi_pagemap, __ATOMIC_ACQUIRE);
    if (!m || (a >> ADDR_BITS))
        return 0;
    return __atomic_load_n(&m[a >> GRAN_SHIFT], __ATOMIC_ACQUIRE);
}

/* ---- spec parsing ---- */

static int parse_nodes(const char *s, unsigned long *mask, struct hmi_msg *why)
{
    memset(mask, 0, HMI_NODE_WORDS * sizeof(unsigned long));
    const char *p = s;
    for (;;) {
        uint64_t lo = 0, hi;
        if (*p < '0' || *p > '9')
            goto bad;
        while (*p >= '0' && *p <= '9' && lo < HMI_MAX_NODES)
            lo = lo * 10 + (uint64_t)(*p++ - '0');
        hi = lo;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9')
                goto bad;
            hi = 0;
            while (*p >= '0' && *p <= '9' && hi < HMI_MAX_NODES)
                hi = hi * 10 + (uint64_t)(*p++ - '0');
        }
        if (lo >= HMI_MAX_NODES || hi >= HMI_MAX_NODES || hi < lo)
            goto bad;
        for (uint64_t n = lo; n <= hi; n++)
            mask[n / (8 * sizeof(unsigned long))] |= 1ul << (n % (8 * sizeof(unsigned long)));
        if (*p == '\0')
            return 0;
        if (*p++ != ',')
            goto bad;
    }
bad:
    hmi_msg_str(why, "malformed node list (want e.g. 0, 8-15, 0,2,4-7; nodes < 1024)");
    return -1;
}

static long sys_mbind(void *a, size_t len, const unsigned long *mask)
{
    return syscall(SYS_mbind, a, len, MPOL_BIND_, mask, (unsigned long)HMI_MAX_NODES + 1, 0ul);
}

static int numa_open(struct hmi_bk *b, const char *list, struct hmi_msg *why)
{
    if (parse_nodes(list, b->nodes, why))
        return -1;
    for (unsigned n = 0; n < HMI_MAX_NODES; n++) {
        if (!(b->nodes[n / (8 * sizeof(unsigned long))] & (1ul << (n % (8 * sizeof(unsigned long))))))
            continue;
        char path[64];
        size_t k = hm_fmt_str(path, "/sys/devices/system/node/node");
        k += hm_fmt_u64(path + k, n);
        path[k] = '\0';
        if (access(path, F_OK) != 0) {
            hmi_msg_str(why, "node ");
            hmi_msg_u64(why, n);
            hmi_msg_str(why, " is not present (no ");
            hmi_msg_str(why, path);
            hmi_msg_str(why, ")");
            return -1;
        }
    }
    void *a = mmap(NULL, PAGE_4K, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED)
        return hmi_msg_str(why, "mmap failed"), -1;
    long r = sys_mbind(a, PAGE_4K, b->nodes);
    int e = errno;
    munmap(a, PAGE_4K);
    if (r != 0) {
        hmi_msg_str(why, "mbind refused the nodes: ");
        msg_errno(why, e);
        return -1;
    }
    return 0;
}

static int hugetlb_open(struct hmi_msg *why)
{
    void *a = mmap(NULL, PAGE_2M, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (a == MAP_FAILED) {
        int e = errno;
        hmi_msg_str(why, "no 2 MiB hugepage can be mapped (mmap MAP_HUGETLB: ");
        msg_errno(why, e);
        hmi_msg_str(why, "); reserve some with /proc/sys/vm/nr_hugepages");
        return -1;
    }
    munmap(a, PAGE_2M);
    return 0;
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
    int rc = -1;
    if (!spec) {
        hmi_msg_str(&why, "no backend");
    } else if (!strcmp(spec, "default")) {
        b->kind = HMI_BK_DEFAULT;
        rc = 0;
    } else if (!unlimited && capacity == 0) {
        hmi_msg_str(&why, "zero capacity");
    } else if (!strcmp(spec, "hugetlb")) {
        b->kind = HMI_BK_HUGETLB;
        rc = pagemap_init(&why) ? -1 : hugetlb_open(&why);
    } else if (!strcmp(spec, "thp")) {
        b->kind = HMI_BK_THP;
        rc = pagemap_init(&why);
    } else if (!strncmp(spec, "numa:", 5)) {
        b->kind = HMI_BK_NUMA;
        rc = pagemap_init(&why) ? -1 : numa_open(b, spec + 5, &why);
    } else if (!strncmp(spec, "memkind:", 8)) {
        b->kind = HMI_BK_MEMKIND;
        rc = pagemap_init(&why) || leaves_init(&why) ? -1 : hmi_mk_open(b, spec + 8, &why);
    } else {
        hmi_msg_str(&why, "unknown backend (want memkind:KIND, numa:NODES, hugetlb, thp or default)");
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
    uint64_t used = __atomic_load_n(&b->used, __ATOMIC_RELAXED), r = reserves(b);
    out->used = used > r ? used - r : 0;
    out->high_water = __atomic_load_n(&b->high_water, __ATOMIC_RELAXED);
    count_sum(index, out);
}

/* ---- the mmap backends ---- */

/* Map a block of len bytes (len a multiple of 4 KiB; of 2 MiB for hugetlb) whose
 * start is aligned to max(align, 2 MiB), owning span = len rounded to 2 MiB of
 * address space (the tail past len stays PROT_NONE). NULL on failure. */
static void *map_block(struct hmi_bk *b, uint64_t len, uint64_t span, size_t align)
{
    int huge = b->kind == HMI_BK_HUGETLB;
    if (huge && align <= PAGE_2M) {
        /* The kernel places hugetlb mappings on 2 MiB boundaries. */
        void *a = mmap(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        return a == MAP_FAILED ? NULL : a;
    }
    uint64_t al = align > PAGE_2M ? align : PAGE_2M;
    if (span > UINT64_MAX - al)
        return NULL;
    char *r = mmap(NULL, span + al, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED)
        return NULL;
    char *a = (char *)round_up((uintptr_t)r, al);
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

static void *mmap_alloc(struct hmi_bk *b, uint32_t index, size_t size, size_t align)
{
    int huge = b->kind == HMI_BK_HUGETLB;
    if (huge && size < HMI_HUGETLB_MIN) {
        count(b, C_SMALL);
        return NULL;
    }
    if (size > (1ull << ADDR_BITS))
        return NULL;
    uint64_t len = round_up(size, huge ? PAGE_2M : PAGE_4K);
    uint64_t span = round_up(len, PAGE_2M);
    if (len / PAGE_4K > E_MAX_PAGES)
        return NULL;
    if (hmi_charge(b, len))
        return NULL;
    char *a = map_block(b, len, span, align);
    if (a && b->kind == HMI_BK_THP)
        madvise(a, len, MADV_HUGEPAGE);
    if (a && b->kind == HMI_BK_NUMA && sys_mbind(a, len, b->nodes) != 0) {
        munmap(a, span);
        a = NULL;
    }
    if (a && ((uintptr_t)a >> ADDR_BITS || ((uintptr_t)a & (PAGE_2M - 1)))) {
        munmap(a, span);                    /* outside what the page map covers */
        a = NULL;
    }
    if (!a) {
        hmi_uncharge(b, len);
        return NULL;
    }
    pagemap_set((uintptr_t)a, span, index, len / PAGE_4K);
    return a;
}

/* ---- dispatch ---- */

static void *backend_alloc(uint32_t index, size_t size, size_t align, int zero)
{
    if (index >= HMI_MAX_TIERS)
        return NULL;
    struct hmi_bk *b = &hmi_bks[index];
    if (b->state != HMI_TIER_OK || b->kind == HMI_BK_DEFAULT)
        return NULL;
    if (align < 16)
        align = 16;
    if (align & (align - 1)) {
        count(b, C_NOT_FITTING);
        return NULL;
    }
    if (size == 0)
        size = 1;
    /* fresh anonymous mappings are zero: only memkind needs to clear */
    void *p = b->kind == HMI_BK_MEMKIND ? hmi_mk_alloc(b, index, size, align, zero)
                                        : mmap_alloc(b, index, size, align);
    count(b, p ? C_PLACED : C_NOT_FITTING);
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

int hmi_owner(const void *p)
{
    if (!p)
        return HMI_OWNER_LIBC;
    uint32_t e = pagemap_get(p);
    uint32_t t = e & E_TIER_MASK;
    if (hm_likely(t == 0))
        return HMI_OWNER_LIBC;
    if (t != E_LEAF)
        return (int)t - 1;
    uint32_t v = __atomic_load_n(leaf_entry(e, (uintptr_t)p), __ATOMIC_ACQUIRE);
    return v >= L_COUNT_ONE ? (int)(v & E_TIER_MASK) : HMI_OWNER_LIBC;
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
    if (b->kind == HMI_BK_MEMKIND) {
        hmi_mk_free(b, p, usable ? usable : hmi_mk_usable(b, p));
    } else {
        uint32_t e = pagemap_get(p);
        if (!(e & E_HEAD))
            return;                         /* not a block start: ignore */
        uint64_t len = (uint64_t)(e >> E_PAGES_SHIFT) * PAGE_4K;
        uint64_t span = round_up(len, PAGE_2M);
        pagemap_clear((uintptr_t)p, span);
        munmap(p, span);
        hmi_uncharge(b, len);
    }
    count(b, C_FREED);
}

size_t hmi_backend_usable_size(int owner, const void *p)
{
    if (owner < 0 || owner >= HMI_MAX_TIERS || !p)
        return 0;
    if (hmi_bks[owner].kind == HMI_BK_MEMKIND)
        return hmi_mk_usable(&hmi_bks[owner], p);
    uint32_t e = pagemap_get(p);
    return (e & E_HEAD) ? (size_t)(e >> E_PAGES_SHIFT) * PAGE_4K : 0;
}

int hmi_backend_resize_in_place(int owner, void *p, size_t newsize)
{
    size_t u = hmi_backend_usable_size(owner, p);
    if (!u || newsize > u)
        return 0;
    /* As in the trace, a realloc ends one block and starts another (DESIGN.md §2). */
    count(&hmi_bks[owner], C_FREED);
    count(&hmi_bks[owner], C_PLACED);
    return 1;
}
