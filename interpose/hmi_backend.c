/* hmi_backend.c — the tier table, capacity accounting, the 2 MiB page map that
 * records which tier owns each mmap'd block and arena chunk, and the mapping of
 * blocks and chunks for every backend (hugetlb, thp, numa:LIST, memkind:KIND; the
 * memkind kind's nodes and policy come from hmi_backend_memkind.c, small objects are
 * packed by hmi_arena.c). See hmi_backend.h. */
#include "hmi_arena.h"
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
 * Without bit 5, bits 6-31 nonzero: the granule is an arena chunk (hmi_arena.h)
 * and they hold its size class + 1; zero: a later granule of a block. */
#define E_TIER_MASK 0x1fu
#define E_HEAD      0x20u
#define E_PAGES_SHIFT 6
#define E_MAX_PAGES ((1ull << (32 - E_PAGES_SHIFT)) - 1)   /* 256 GiB blocks */

static uint32_t *hmi_pagemap;               /* published with a release store */
/* Live split blocks (hmi_backend_alloc_split) and what each was charged: open
 * addressing keyed by the block's start (2 MiB aligned, so SPLIT_TOMB is no key),
 * lock-free (a slot is claimed by CAS; only the thread freeing a block removes it,
 * leaving a tombstone). Consulted only when an mmap block is freed while split
 * blocks are live, never for arena objects or glibc's pointers. Private memory: a
 * fork child has its own copy of the entries of the blocks it inherits. */
#define SPLIT_SLOTS (1u << 14)
#define SPLIT_PROBE 512u
#define SPLIT_TOMB  ((uintptr_t)1)
struct split_ent {
    uintptr_t start;                        /* 0 never used, SPLIT_TOMB freed */
    uint64_t charge;
};
static struct split_ent *hmi_split_tab;
static uint64_t hmi_split_live;
/* Every arena chunk mapped, so that hmi_backend_close can unmap a tier's: append-
 * only, MAP_NORESERVE. */
#define CHUNKS_MAX  (1u << 18)              /* 512 GiB of chunks */
static uint32_t *hmi_chunks;                /* chunk address >> GRAN_SHIFT; 0: none */
static uint32_t hmi_nchunks;
/* map_span's one-call path gave an unaligned mapping this often: past SPAN_MISSES
 * the kernel is taken not to align anonymous mappings and the path is skipped. */
static uint32_t hmi_span_misses;
#define SPAN_MISSES 8

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

enum { C_PLACED, C_FREED, C_NOT_FITTING };

static void count(const struct hmi_bk *b, int which)
{
    struct hmi_bk_counts *c = &hmi_bk_counts[b - hmi_bks][hm_stripe()];
    uint64_t *f = which == C_PLACED ? &c->placed : which == C_FREED ? &c->freed
                : &c->not_fitting;
    hm_stripe_add(f, 1);
}

static void count_sum(uint32_t index, struct hmi_backend_stats *out)
{
    for (uint32_t k = 0; k < HM_STRIPES; k++) {
        const struct hmi_bk_counts *c = &hmi_bk_counts[index][k];
        out->placed += __atomic_load_n(&c->placed, __ATOMIC_RELAXED);
        out->freed += __atomic_load_n(&c->freed, __ATOMIC_RELAXED);
        out->not_fitting += __atomic_load_n(&c->not_fitting, __ATOMIC_RELAXED);
        out->split_placed += __atomic_load_n(&c->split_placed, __ATOMIC_RELAXED);
        out->split_bytes += __atomic_load_n(&c->split_bytes, __ATOMIC_RELAXED);
        out->split_refused += __atomic_load_n(&c->split_refused, __ATOMIC_RELAXED);
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
    if (map_table(&hmi_pagemap, MAP_ENTRIES * sizeof(uint32_t), "ownership page map", why))
        return -1;
    if (__atomic_load_n(&hmi_split_tab, __ATOMIC_ACQUIRE))
        return 0;
    void *m = mmap(NULL, SPLIT_SLOTS * sizeof(struct split_ent), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        int e = errno;
        hmi_msg_str(why, "cannot map the split block table: ");
        msg_errno(why, e);
        return -1;
    }
    __atomic_store_n(&hmi_split_tab, (struct split_ent *)m, __ATOMIC_RELEASE);
    return 0;
}

static uint64_t split_hash(uintptr_t a)
{
    return ((uint64_t)(a >> 21) * 0x9e3779b97f4a7c15ull) >> 40;
}

/* Record block a (not yet published) as charged charge bytes; -1 when no slot. */
static int split_put(uintptr_t a, uint64_t charge)
{
    struct split_ent *t = __atomic_load_n(&hmi_split_tab, __ATOMIC_ACQUIRE);
    uint64_t h = split_hash(a);
    for (uint32_t k = 0; t && k < SPLIT_PROBE; k++) {
        struct split_ent *e = &t[(h + k) & (SPLIT_SLOTS - 1)];
        uintptr_t cur = __atomic_load_n(&e->start, __ATOMIC_RELAXED);
        while (cur == 0 || cur == SPLIT_TOMB) {
            if (__atomic_compare_exchange_n(&e->start, &cur, a, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_RELAXED)) {
                __atomic_store_n(&e->charge, charge, __ATOMIC_RELEASE);
                __atomic_fetch_add(&hmi_split_live, 1, __ATOMIC_RELEASE);
                return 0;
            }
        }
    }
    return -1;
}

/* Take block a out of the table: 1 with its charge, 0 when it is not a split block. */
static int split_take(uintptr_t a, uint64_t *charge)
{
    struct split_ent *t = __atomic_load_n(&hmi_split_tab, __ATOMIC_ACQUIRE);
    uint64_t h = split_hash(a);
    for (uint32_t k = 0; t && k < SPLIT_PROBE; k++) {
        struct split_ent *e = &t[(h + k) & (SPLIT_SLOTS - 1)];
        uintptr_t cur = __atomic_load_n(&e->start, __ATOMIC_ACQUIRE);
        if (cur == 0)
            return 0;
        if (cur != a)
            continue;
        *charge = __atomic_load_n(&e->charge, __ATOMIC_ACQUIRE);
        __atomic_store_n(&e->start, SPLIT_TOMB, __ATOMIC_RELEASE);
        __atomic_fetch_sub(&hmi_split_live, 1, __ATOMIC_RELEASE);
        return 1;
    }
    return 0;
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

/* ---- arena chunks in the page map ---- */

static int chunks_init(struct hmi_msg *why)
{
    return map_table(&hmi_chunks, CHUNKS_MAX * sizeof(uint32_t), "arena chunk table", why);
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

static long sys_mbind(void *a, size_t len, int mode, const unsigned long *mask)
{
    return syscall(SYS_mbind, a, len, mode, mask, (unsigned long)HMI_MAX_NODES + 1, 0ul);
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
    b->mpol = MPOL_BIND_;
    return hmi_probe_map(b, why);
}

int hmi_probe_map(struct hmi_bk *b, struct hmi_msg *why)
{
    size_t len = b->map_huge ? PAGE_2M : PAGE_4K;
    void *a = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (b->map_huge ? MAP_HUGETLB : 0), -1, 0);
    if (a == MAP_FAILED) {
        int e = errno;
        if (!b->map_huge)
            return hmi_msg_str(why, "mmap failed"), -1;
        hmi_msg_str(why, "no 2 MiB hugepage can be mapped (mmap MAP_HUGETLB: ");
        msg_errno(why, e);
        hmi_msg_str(why, "); reserve some with /proc/sys/vm/nr_hugepages");
        return -1;
    }
    long r = b->mpol ? sys_mbind(a, len, b->mpol, b->nodes) : 0;
    int e = errno;
    munmap(a, len);
    if (r != 0) {
        hmi_msg_str(why, "mbind refused the nodes: ");
        msg_errno(why, e);
        return -1;
    }
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
        b->map_huge = 1;
        rc = pagemap_init(&why) || chunks_init(&why) ? -1 : hmi_probe_map(b, &why);
    } else if (!strcmp(spec, "thp")) {
        b->kind = HMI_BK_THP;
        b->thp = 1;
        rc = pagemap_init(&why) || chunks_init(&why) ? -1 : 0;
    } else if (!strncmp(spec, "numa:", 5)) {
        b->kind = HMI_BK_NUMA;
        rc = pagemap_init(&why) || chunks_init(&why) ? -1 : numa_open(b, spec + 5, &why);
    } else if (!strncmp(spec, "memkind:", 8)) {
        b->kind = HMI_BK_MEMKIND;
        rc = pagemap_init(&why) || chunks_init(&why) ? -1 : hmi_mk_open(b, spec + 8, &why);
    } else {
        hmi_msg_str(&why, "unknown backend (want memkind:KIND, numa:NODES, hugetlb, thp or default)");
    }
    /* Small objects are packed in 2 MiB chunks (hmi_arena.h): up to 1 MiB where a
     * block of its own would take a whole 2 MiB page (hugetlb, the memkind hugepage
     * kinds) or would get none (thp: the kernel backs only 2 MiB-aligned ranges a
     * mapping covers whole), up to 256 KiB on 4 KiB pages (larger blocks of their own
     * waste < 4 KiB, an arena class up to 25 %). */
    if (rc == 0 && b->kind != HMI_BK_DEFAULT)
        b->arena_max = b->map_huge || b->thp ? HMI_ARENA_MAX : HMI_ARENA_MAX / 4;
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

/* Unmap tier index's arena chunks (hmi_backend_close: nothing of them is live). */
static void unmap_chunks(uint32_t index)
{
    uint32_t n = __atomic_load_n(&hmi_nchunks, __ATOMIC_RELAXED);
    for (uint32_t k = 0; hmi_chunks && k < n && k < CHUNKS_MAX; k++) {
        uintptr_t a = (uintptr_t)hmi_chunks[k] << GRAN_SHIFT;
        if (!a || (pagemap_get((void *)a) & E_TIER_MASK) != index + 1)
            continue;
        pagemap_clear(a, PAGE_2M);
        munmap((void *)a, PAGE_2M);
        hmi_chunks[k] = 0;
    }
}

int hmi_backend_close(uint32_t index)
{
    if (index >= HMI_MAX_TIERS)
        return -1;
    struct hmi_backend_stats st;
    hmi_backend_stats(index, &st);
    if (st.placed != st.freed)
        return -1;
    unmap_chunks(index);
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
    uint64_t used = __atomic_load_n(&b->used, __ATOMIC_RELAXED), r = reserves(b);
    out->used = used > r ? used - r : 0;
    out->high_water = __atomic_load_n(&b->high_water, __ATOMIC_RELAXED);
    count_sum(index, out);
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
    if (!hmi_backend_available(index))
        return -1;
    return hmi_charge(&hmi_bks[index], n);
}

void hmi_backend_uncharge(uint32_t index, uint64_t n)
{
    if (index < HMI_MAX_TIERS)
        hmi_uncharge(&hmi_bks[index], n);
}

/* ---- the mmap backends ---- */

/* Map a block of len bytes (len a multiple of 4 KiB; of 2 MiB for hugetlb) whose
 * start is aligned to max(align, 2 MiB), owning span = len rounded to 2 MiB of
 * address space (the tail past len stays PROT_NONE). NULL on failure. */
static void *map_span(int huge, uint64_t len, uint64_t span, size_t align)
{
    if (huge && align <= PAGE_2M) {
        /* The kernel places hugetlb mappings on 2 MiB boundaries. */
        void *a = mmap(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        return a == MAP_FAILED ? NULL : a;
    }
    if (align <= PAGE_2M && __atomic_load_n(&hmi_span_misses, __ATOMIC_RELAXED) < SPAN_MISSES) {
        /* Recent kernels put an anonymous mapping whose length is a multiple of 2 MiB
         * on a 2 MiB boundary (upstream "mm: align larger anonymous mappings on THP
         * boundaries"; seen on 6.18): one call instead of reserve, trim twice, map.
         * Older kernels (or no room for the aligned gap) give an unaligned one: it is
         * unmapped, and after SPAN_MISSES of them only the general path is taken. */
        char *a = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (a != MAP_FAILED && !((uintptr_t)a & (PAGE_2M - 1))) {
            if (span > len && mprotect(a + len, span - len, PROT_NONE) != 0) {
                munmap(a, span);
                return NULL;
            }
            return a;
        }
        if (a != MAP_FAILED)
            munmap(a, span);
        __atomic_fetch_add(&hmi_span_misses, 1, __ATOMIC_RELAXED);
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

static void *map_block(struct hmi_bk *b, uint64_t len, uint64_t span, size_t align)
{
    return map_span(b->map_huge, len, span, align);
}

/* Map a 2 MiB chunk for the arena (hmi_chunk_fn): b's pages, policy and nodes. */
static void *map_chunk(uint32_t index, unsigned cls)
{
    struct hmi_bk *b = &hmi_bks[index];
    uint32_t k = __atomic_fetch_add(&hmi_nchunks, 1, __ATOMIC_RELAXED);
    if (k >= CHUNKS_MAX)
        return NULL;
    char *a = map_block(b, PAGE_2M, PAGE_2M, PAGE_2M);
    if (a && b->thp)
        madvise(a, PAGE_2M, MADV_HUGEPAGE);
    if (a && b->mpol && sys_mbind(a, PAGE_2M, b->mpol, b->nodes) != 0) {
        munmap(a, PAGE_2M);
        a = NULL;
    }
    if (a && ((uintptr_t)a >> ADDR_BITS || ((uintptr_t)a & (PAGE_2M - 1)))) {
        munmap(a, PAGE_2M);
        a = NULL;
    }
    if (!a)
        return NULL;
    hmi_chunks[k] = (uint32_t)((uintptr_t)a >> GRAN_SHIFT);
    __atomic_store_n(&hmi_pagemap[(uintptr_t)a >> GRAN_SHIFT],
                     (index + 1) | ((cls + 1) << E_PAGES_SHIFT), __ATOMIC_RELEASE);
    return a;
}

/* The class of p when it is an object's start in an arena chunk (entry e), else -1. */
static int arena_object(uint32_t e, const void *p)
{
    if ((e & E_HEAD) || !(e >> E_PAGES_SHIFT))
        return -1;
    unsigned cls = (e >> E_PAGES_SHIFT) - 1;
    if (cls >= HMI_ARENA_CLASSES)
        return -1;
    size_t cs = hmi_arena_class_size(cls);
    uintptr_t off = (uintptr_t)p & (PAGE_2M - 1);
    return off % cs == 0 && off + cs <= PAGE_2M ? (int)cls : -1;
}

static void *arena_alloc(struct hmi_bk *b, uint32_t index, unsigned cls, size_t size,
                         int zero)
{
    size_t cs = hmi_arena_class_size(cls);
    if (hmi_charge(b, cs))
        return NULL;
    void *p = hmi_arena_alloc(index, cls, size, zero, map_chunk);
    if (!p)
        hmi_uncharge(b, cs);
    return p;
}

static void *mmap_alloc(struct hmi_bk *b, uint32_t index, size_t size, size_t align)
{
    int huge = b->map_huge;
    if (size > (1ull << ADDR_BITS))
        return NULL;
    uint64_t len = round_up(size, huge ? PAGE_2M : PAGE_4K);
    uint64_t span = round_up(len, PAGE_2M);
    if (len / PAGE_4K > E_MAX_PAGES)
        return NULL;
    if (hmi_charge(b, len))
        return NULL;
    char *a = map_block(b, len, span, align);
    if (a && b->thp)
        madvise(a, len, MADV_HUGEPAGE);
    if (a && b->mpol && sys_mbind(a, len, b->mpol, b->nodes) != 0) {
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

/* ---- split objects ---- */

/* Put [a + hs, a + he) (2 MiB aligned) in hugepages over the block's 4 KiB pages
 * (len: the block's read-write length; past it the span is PROT_NONE). The pages are
 * taken first in a mapping of their own, so an empty pool leaves the range as it was;
 * mremap then moves that mapping over the range in one step. Where mremap cannot
 * (hugetlb mremap needs Linux >= 5.17), a MAP_FIXED hugetlb mapping replaces the
 * range; a failed one leaves a hole (seen on 6.18), so the ordinary pages are mapped
 * back. 0 placed, -1 not placed (ordinary pages there), -2 neither. */
static int split_huge(struct hmi_bk *b, char *a, uint64_t hs, uint64_t he, uint64_t len)
{
    size_t n = (size_t)(he - hs);
    void *t = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
                   -1, 0);
    if (t == MAP_FAILED)
        return -1;
    if (b->mpol && sys_mbind(t, n, b->mpol, b->nodes) != 0) {
        munmap(t, n);
        return -1;
    }
    if (mremap(t, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, a + hs) != MAP_FAILED)
        return 0;
    munmap(t, n);
    if (mmap(a + hs, n, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_HUGETLB, -1, 0) != MAP_FAILED) {
        if (!b->mpol || sys_mbind(a + hs, n, b->mpol, b->nodes) == 0)
            return 0;
    }
    uint64_t rw = he < len ? he : len;
    if (mmap(a + hs, rw - hs, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
        return -2;
    if (he > rw && mmap(a + rw, he - rw, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
        return -2;
    return -1;
}

static void *split_alloc(struct hmi_bk *b, uint32_t index, size_t size, size_t align,
                         const struct hmi_range *rg, uint32_t n, uint64_t *placed,
                         uint64_t *mask)
{
    struct hmi_bk_counts *c = &hmi_bk_counts[index][hm_stripe()];
    if (size > (1ull << ADDR_BITS) || n > 64)
        return NULL;
    uint64_t len = round_up(size, PAGE_4K);
    uint64_t span = round_up(len, PAGE_2M);
    if (len / PAGE_4K > E_MAX_PAGES)
        return NULL;
    char *a = map_span(0, len, span, align);
    if (a && ((uintptr_t)a >> ADDR_BITS || ((uintptr_t)a & (PAGE_2M - 1)))) {
        munmap(a, span);
        a = NULL;
    }
    if (!a)
        return NULL;
    uint64_t charged = 0, bytes = 0, refused = 0, huge_end = 0;
    uint32_t nplaced = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t s = rg[i].start, e = rg[i].end < size ? rg[i].end : size;
        placed[i] = 0;
        if (s >= e)
            continue;                       /* past the object's end */
        uint64_t lo = s, hi = round_up(e, PAGE_4K), ch;
        if (b->map_huge) {
            lo = s & ~(PAGE_2M - 1);
            hi = round_up(e, PAGE_2M);
            if (lo < huge_end)
                lo = huge_end;              /* the page is the previous range's */
            ch = hi > lo ? hi - lo : 0;
        } else {
            ch = hi - lo;
        }
        if (ch && hmi_charge(b, ch) != 0) {
            refused++;
            continue;
        }
        int r = 0;
        if (ch && b->map_huge) {
            r = split_huge(b, a, lo, hi, len);
        } else if (ch) {
            if (b->thp && madvise(a + lo, hi - lo, MADV_HUGEPAGE) != 0)
                r = -1;
            if (!r && b->mpol && sys_mbind(a + lo, hi - lo, b->mpol, b->nodes) != 0)
                r = -1;
        }
        if (r) {
            if (ch)
                hmi_uncharge(b, ch);
            refused++;
            if (r == -2) {                  /* a hole in the object: give it up */
                munmap(a, span);
                if (charged)
                    hmi_uncharge(b, charged);
                hm_stripe_add(&c->split_refused, n);
                return NULL;
            }
            continue;
        }
        if (b->map_huge && hi > huge_end)
            huge_end = hi;
        charged += ch;
        placed[i] = e - s;
        bytes += e - s;
        *mask |= 1ull << i;
        nplaced++;
    }
    if (nplaced && split_put((uintptr_t)a, charged) != 0)
        nplaced = 0, refused = n;           /* no room to remember its charge */
    if (refused)
        hm_stripe_add(&c->split_refused, refused);
    if (!nplaced) {
        munmap(a, span);
        if (charged)
            hmi_uncharge(b, charged);
        memset(placed, 0, n * sizeof *placed);
        *mask = 0;
        return NULL;
    }
    hm_stripe_add(&c->split_placed, 1);
    hm_stripe_add(&c->split_bytes, bytes);
    pagemap_set((uintptr_t)a, span, index, len / PAGE_4K);
    return a;
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
    if (*align < 16)
        *align = 16;
    if (*align & (*align - 1)) {
        count(b, C_NOT_FITTING);
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
    (void)zero;                             /* a fresh mapping is zero */
    *mask = 0;
    for (uint32_t i = 0; i < n; i++)
        placed[i] = 0;
    struct hmi_bk *b = request_tier(index, &size, &align);
    if (!b)
        return NULL;
    void *p = split_alloc(b, index, size, align, ranges, n, placed, mask);
    count(b, p ? C_PLACED : C_NOT_FITTING);
    return p;
}

/* ---- dispatch ---- */

static void *backend_alloc(uint32_t index, size_t size, size_t align, int zero)
{
    struct hmi_bk *b = request_tier(index, &size, &align);
    if (!b)
        return NULL;
    /* fresh anonymous mappings are zero: only reused arena objects need clearing */
    int cls = b->arena_max ? hmi_arena_class(size, align) : -1;
    void *p = cls >= 0 && hmi_arena_class_size((unsigned)cls) <= b->arena_max
                  ? arena_alloc(b, index, (unsigned)cls, size, zero)
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
    uint32_t t = pagemap_get(p) & E_TIER_MASK;
    return hm_likely(t == 0) ? HMI_OWNER_LIBC : (int)t - 1;
}

void hmi_backend_free(int owner, void *p)
{
    hmi_backend_free_usable(owner, p, 0);
}

void hmi_backend_free_usable(int owner, void *p, size_t usable)
{
    if (owner < 0 || owner >= HMI_MAX_TIERS || !p)
        return;
    (void)usable;
    struct hmi_bk *b = &hmi_bks[owner];
    uint32_t e = pagemap_get(p);
    int cls = arena_object(e, p);
    if (cls >= 0) {
        hmi_arena_free((uint32_t)owner, (unsigned)cls, p);
        hmi_uncharge(b, hmi_arena_class_size((unsigned)cls));
    } else {
        if (!(e & E_HEAD))
            return;                         /* not a block start: ignore */
        uint64_t len = (uint64_t)(e >> E_PAGES_SHIFT) * PAGE_4K;
        uint64_t span = round_up(len, PAGE_2M), charge = len;
        if (hm_unlikely(__atomic_load_n(&hmi_split_live, __ATOMIC_ACQUIRE) != 0))
            split_take((uintptr_t)p, &charge);      /* a split block: its own charge */
        pagemap_clear((uintptr_t)p, span);
        munmap(p, span);
        if (charge)
            hmi_uncharge(b, charge);
    }
    count(b, C_FREED);
}

size_t hmi_backend_usable_size(int owner, const void *p)
{
    if (owner < 0 || owner >= HMI_MAX_TIERS || !p)
        return 0;
    uint32_t e = pagemap_get(p);
    int cls = arena_object(e, p);
    if (cls >= 0)
        return hmi_arena_class_size((unsigned)cls);
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

void hmi_backend_atfork_prepare(void) { hmi_arena_atfork_prepare(); }
void hmi_backend_atfork_release(void) { hmi_arena_atfork_release(); }
