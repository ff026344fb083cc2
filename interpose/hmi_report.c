/* hmi_report.c — see hmi_report.h. The allocation-time parts: the per-site counters,
 * the table of live placed blocks, the split sites' per-range counts and the
 * residency checks. They run inside malloc/free: mmap, syscalls and open/read only.
 * The exit report that reads them is hmi_report_exit.c. */
#include "hmi_report_int.h"
#include "hmi_backend.h"
#include "hmi_placement.h"
#include "hmi_static.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct hmi_site_stats *hmi_site_stripes;
uint32_t hmi_site_stride;
static struct { uint64_t n; } __attribute__((aligned(64))) g_unmatched[HM_STRIPES];

struct live {
    uintptr_t ptr;          /* 0: free slot */
    uint64_t len_tier;      /* len << 5 | tier */
    uint64_t mask;          /* split object: its ranges placed */
    uint64_t site1;         /* split object: its site + 1; 0: a whole block */
};

static const struct hmi_placement *g_split_pl;
static uint32_t *g_split_off;              /* by site: its first entry in g_split_rc */
static struct hmi_split_count *g_split_rc;

static struct live *g_live;
static char g_baseline[64];
static struct hmi_residency g_res[HMI_MAX_TIERS];   /* atomics */
static uint32_t g_thp_checks;

#define MPOL_DEFAULT_ 0
#define MPOL_LOCAL_   4
#define MPOL_F_ADDR_  (1 << 1)
#define NODE_BITS     1024

int hmi_report_init(uint32_t nsites)
{
    /* rows of whole cache lines (two entries each): no line is shared by stripes */
    hmi_site_stride = (nsites + 1) & ~1u;
    if (!hmi_site_stride)
        hmi_site_stride = 2;
    size_t sites = (size_t)HM_STRIPES * hmi_site_stride * sizeof(struct hmi_site_stats);
    sites = (sites + 4095) & ~(size_t)4095;
    size_t live = (size_t)HMI_LIVE_SLOTS * sizeof(struct live);
    char *m = mmap(NULL, sites + live, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    hmi_site_stripes = (struct hmi_site_stats *)m;
    g_live = (struct live *)(m + sites);
    return 0;
}

void hmi_site_sum(uint32_t site, struct hmi_site_stats *out)
{
    memset(out, 0, sizeof *out);
    for (uint32_t k = 0; k < HM_STRIPES; k++) {
        const struct hmi_site_stats *s = &hmi_site_stripes[(size_t)k * hmi_site_stride + site];
        out->matches += __atomic_load_n(&s->matches, __ATOMIC_RELAXED);
        out->placed += __atomic_load_n(&s->placed, __ATOMIC_RELAXED);
        out->bytes += __atomic_load_n(&s->bytes, __ATOMIC_RELAXED);
        out->fell_back += __atomic_load_n(&s->fell_back, __ATOMIC_RELAXED);
    }
}

void hmi_count_unmatched(void)
{
    hm_stripe_add(&g_unmatched[hm_stripe()].n, 1);
}

uint64_t hmi_report_unmatched(void)
{
    uint64_t n = 0;
    for (uint32_t k = 0; k < HM_STRIPES; k++)
        n += __atomic_load_n(&g_unmatched[k].n, __ATOMIC_RELAXED);
    return n;
}

static uint64_t ptr_hash(uintptr_t p)
{
    uint64_t h = (uint64_t)p * 0x9e3779b97f4a7c15ull;
    return h >> 40;
}

static void add(uint64_t *c, uint64_t v) { __atomic_fetch_add(c, v, __ATOMIC_RELAXED); }

void hmi_report_baseline(const char *name)
{
    snprintf(g_baseline, sizeof g_baseline, "%s", name);
}

const char *hmi_report_baseline_name(void) { return g_baseline; }

const struct hmi_split_count *hmi_report_split_counts(uint32_t site)
{
    return g_split_rc ? &g_split_rc[g_split_off[site]] : NULL;
}

int hmi_report_split_init(const struct hmi_placement *pl)
{
    uint64_t nr = 0;
    if (!pl->nsplit)
        return 0;
    for (uint32_t i = 0; i < pl->nsites; i++)
        nr += pl->sites[i].nranges;
    size_t off = ((size_t)pl->nsites * sizeof(uint32_t) + 63) & ~(size_t)63;
    size_t len = off + (size_t)nr * sizeof(struct hmi_split_count);
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    g_split_off = (uint32_t *)m;
    g_split_rc = (struct hmi_split_count *)(m + off);
    uint32_t k = 0;
    for (uint32_t i = 0; i < pl->nsites; i++) {
        g_split_off[i] = k;
        k += pl->sites[i].nranges;
    }
    g_split_pl = pl;
    return 0;
}

void hmi_report_split(int site, const uint64_t *placed, uint32_t n)
{
    if (!g_split_rc || site < 0 || (uint32_t)site >= g_split_pl->nsites)
        return;
    struct hmi_split_count *c = &g_split_rc[g_split_off[site]];
    for (uint32_t i = 0; i < n && i < g_split_pl->sites[site].nranges; i++) {
        if (!placed[i])
            continue;
        __atomic_fetch_add(&c[i].objects, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&c[i].bytes, placed[i], __ATOMIC_RELAXED);
    }
}

static void live_enter(int tier, void *p, size_t len, uint64_t site1, uint64_t mask)
{
    if (len < HMI_LIVE_MIN || !g_live)
        return;
    uint64_t h = ptr_hash((uintptr_t)p);
    for (uint32_t k = 0; k < HMI_LIVE_PROBE; k++) {
        struct live *s = &g_live[(h + k) & (HMI_LIVE_SLOTS - 1)];
        uintptr_t z = 0;
        if (__atomic_load_n(&s->ptr, __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&s->ptr, &z, (uintptr_t)p, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            __atomic_store_n(&s->mask, mask, __ATOMIC_RELAXED);
            __atomic_store_n(&s->site1, site1, __ATOMIC_RELAXED);
            __atomic_store_n(&s->len_tier, ((uint64_t)len << 5) | (uint64_t)tier, __ATOMIC_RELEASE);
            return;
        }
    }
    add(&g_res[tier].blocks_unchecked, 1);
}

void hmi_report_placed(int tier, void *p, size_t len)
{
    live_enter(tier, p, len, 0, 0);
}

void hmi_report_placed_split(int tier, void *p, size_t len, int site, uint64_t mask)
{
    live_enter(tier, p, len, (uint64_t)site + 1, mask);
}

/* ---- residency ---- */

static int in_mask(const unsigned long *mask, long node)
{
    if (node < 0 || node >= NODE_BITS)
        return 0;
    return (mask[node / (8 * sizeof(long))] >> (node % (8 * sizeof(long)))) & 1;
}

/* Bytes of [p, p + len) in huge pages, from /proc/self/smaps (AnonHugePages of the
 * mappings inside the range); -1 when it cannot be read. */
static int64_t thp_bytes(uintptr_t p, uint64_t len)
{
    int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[8192], line[512];
    size_t ll = 0;
    int inside = 0;
    int64_t total = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (ll < sizeof line - 1)
                    line[ll++] = buf[i];
                continue;
            }
            line[ll] = '\0';
            ll = 0;
            unsigned long lo, hi, kb;
            if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
                inside = lo >= p && hi <= p + len + (2u << 20);
            else if (inside && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
                total += (int64_t)kb * 1024;
        }
    }
    close(fd);
    return n < 0 ? -1 : total;
}

void hmi_report_residency(int tier, void *p, size_t len, struct hmi_residency *r)
{
    memset(r, 0, sizeof *r);
    enum hmi_backend_kind kind = hmi_backend_kind((uint32_t)tier);
    uint64_t page = kind == HMI_BK_HUGETLB || kind == HMI_BK_UMF_HUGETLB ? (2u << 20) : 4096u;
    uint64_t npages = (len + page - 1) / page;
    uint32_t ns = npages < HMI_RES_SAMPLES ? (uint32_t)npages : HMI_RES_SAMPLES;
    if (ns == 0)
        return;
    void *pages[HMI_RES_SAMPLES];
    int status[HMI_RES_SAMPLES];
    uintptr_t base = (uintptr_t)p & ~(uintptr_t)4095;
    for (uint32_t i = 0; i < ns; i++)
        pages[i] = (void *)(base + (uintptr_t)((uint64_t)i * npages / ns * page));
    unsigned long mask[NODE_BITS / (8 * sizeof(long))];
    int mode = MPOL_DEFAULT_;
    if (syscall(SYS_move_pages, 0, (unsigned long)ns, pages, NULL, status, 0) != 0 ||
        syscall(SYS_get_mempolicy, &mode, mask, (unsigned long)NODE_BITS, p, MPOL_F_ADDR_) != 0) {
        r->blocks_unchecked = 1;
        return;
    }
    int any = mode == MPOL_DEFAULT_ || mode == MPOL_LOCAL_;
    uint32_t ok = 0, other = 0, absent = 0;
    for (uint32_t i = 0; i < ns; i++) {
        if (status[i] < 0)
            absent++;
        else if (any || in_mask(mask, status[i]))
            ok++;
        else
            other++;
    }
    r->blocks_checked = 1;
    r->bytes_checked = len;
    r->bytes_absent = len * absent / ns;
    uint64_t present = len - r->bytes_absent;
    r->bytes_intended = ok == ns - absent ? present : len * ok / ns;
    r->bytes_elsewhere = present - r->bytes_intended;
    if (kind == HMI_BK_THP && r->bytes_intended) {
        /* the node is right; what matters here is the page size */
        int64_t huge = -1;
        if (__atomic_fetch_add(&g_thp_checks, 1, __ATOMIC_RELAXED) < HMI_THP_CHECKS)
            huge = thp_bytes((uintptr_t)p, len);
        if (huge < 0) {
            memset(r, 0, sizeof *r);
            r->blocks_unchecked = 1;
            return;
        }
        uint64_t h = (uint64_t)huge < present ? (uint64_t)huge : present;
        r->bytes_intended = h;
        r->bytes_elsewhere = present - h;
    }
}

/* The residency of a live-table entry: a whole block, or a split object's placed
 * ranges (clipped to len), summed as one block. */
static void entry_residency(int tier, uintptr_t p, uint64_t len, uint64_t site1,
                            uint64_t mask, struct hmi_residency *r)
{
    if (!site1 || !g_split_pl || site1 > g_split_pl->nsites) {
        hmi_report_residency(tier, (void *)p, (size_t)len, r);
        return;
    }
    const struct hmi_site *si = &g_split_pl->sites[site1 - 1];
    memset(r, 0, sizeof *r);
    for (uint32_t i = 0; i < si->nranges && i < 64; i++) {
        uint64_t s = si->ranges[i].start, e = si->ranges[i].end < len ? si->ranges[i].end : len;
        if (!(mask >> i & 1) || s >= e)
            continue;
        struct hmi_residency x;
        hmi_report_residency(tier, (void *)(p + s), (size_t)(e - s), &x);
        if (x.blocks_unchecked) {
            memset(r, 0, sizeof *r);
            r->blocks_unchecked = 1;
            return;
        }
        r->bytes_checked += x.bytes_checked;
        r->bytes_intended += x.bytes_intended;
        r->bytes_elsewhere += x.bytes_elsewhere;
        r->bytes_absent += x.bytes_absent;
    }
    r->blocks_checked = 1;
}

static void accumulate(int tier, const struct hmi_residency *r)
{
    struct hmi_residency *t = &g_res[tier];
    add(&t->blocks_checked, r->blocks_checked);
    add(&t->blocks_unchecked, r->blocks_unchecked);
    add(&t->bytes_checked, r->bytes_checked);
    add(&t->bytes_intended, r->bytes_intended);
    add(&t->bytes_elsewhere, r->bytes_elsewhere);
    add(&t->bytes_absent, r->bytes_absent);
}

void hmi_report_freeing(int tier, void *p, size_t usable)
{
    if (!g_live || usable < HMI_LIVE_MIN)
        return;
    uint64_t h = ptr_hash((uintptr_t)p);
    for (uint32_t k = 0; k < HMI_LIVE_PROBE; k++) {
        struct live *s = &g_live[(h + k) & (HMI_LIVE_SLOTS - 1)];
        if (__atomic_load_n(&s->ptr, __ATOMIC_ACQUIRE) != (uintptr_t)p)
            continue;
        uint64_t lt = __atomic_load_n(&s->len_tier, __ATOMIC_ACQUIRE);
        struct hmi_residency r;
        entry_residency(tier, (uintptr_t)p, lt >> 5, __atomic_load_n(&s->site1, __ATOMIC_RELAXED),
                        __atomic_load_n(&s->mask, __ATOMIC_RELAXED), &r);
        accumulate(tier, &r);
        __atomic_store_n(&s->len_tier, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->ptr, 0, __ATOMIC_RELEASE);
        return;
    }
}

void hmi_report_tier_residency(int tier, struct hmi_residency *out)
{
    const struct hmi_residency *t = &g_res[tier];
    out->blocks_checked = __atomic_load_n(&t->blocks_checked, __ATOMIC_RELAXED);
    out->blocks_unchecked = __atomic_load_n(&t->blocks_unchecked, __ATOMIC_RELAXED);
    out->bytes_checked = __atomic_load_n(&t->bytes_checked, __ATOMIC_RELAXED);
    out->bytes_intended = __atomic_load_n(&t->bytes_intended, __ATOMIC_RELAXED);
    out->bytes_elsewhere = __atomic_load_n(&t->bytes_elsewhere, __ATOMIC_RELAXED);
    out->bytes_absent = __atomic_load_n(&t->bytes_absent, __ATOMIC_RELAXED);
}

void hmi_report_check_live(void)
{
    for (uint32_t i = 0; g_live && i < HMI_LIVE_SLOTS; i++) {
        struct live *s = &g_live[i];
        uintptr_t p = __atomic_load_n(&s->ptr, __ATOMIC_ACQUIRE);
        uint64_t lt = __atomic_load_n(&s->len_tier, __ATOMIC_ACQUIRE);
        if (!p || !lt)
            continue;
        struct hmi_residency r;
        entry_residency((int)(lt & 31), p, lt >> 5, __atomic_load_n(&s->site1, __ATOMIC_RELAXED),
                        __atomic_load_n(&s->mask, __ATOMIC_RELAXED), &r);
        accumulate((int)(lt & 31), &r);
    }
}
