/* hmi_report.c — see hmi_report.h. The allocation-time parts (placed, freeing,
 * residency) run inside malloc/free: mmap, syscalls and open/read only. The exit
 * report uses snprintf into stack buffers and write(2). */
#include "hmi_report.h"
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

/* Per range of each split site: objects and bytes placed (atomics). */
struct split_count {
    uint64_t objects, bytes;
};
static const struct hmi_placement *g_split_pl;
static uint32_t *g_split_off;              /* by site: its first entry in g_split_rc */
static struct split_count *g_split_rc;

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

static uint64_t unmatched(void)
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

int hmi_report_split_init(const struct hmi_placement *pl)
{
    uint64_t nr = 0;
    if (!pl->nsplit)
        return 0;
    for (uint32_t i = 0; i < pl->nsites; i++)
        nr += pl->sites[i].nranges;
    size_t off = ((size_t)pl->nsites * sizeof(uint32_t) + 63) & ~(size_t)63;
    size_t len = off + (size_t)nr * sizeof(struct split_count);
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    g_split_off = (uint32_t *)m;
    g_split_rc = (struct split_count *)(m + off);
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
    struct split_count *c = &g_split_rc[g_split_off[site]];
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
    uint64_t page = kind == HMI_BK_HUGETLB ? (2u << 20) : 4096u;
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

/* ---- the exit report ---- */

struct out {
    int fd;
    size_t n;
    int err;
    char buf[4096];
};

static void out_flush(struct out *o)
{
    if (o->n && !o->err)
        o->err = hm_write_all(o->fd, o->buf, o->n);
    o->n = 0;
}

__attribute__((format(printf, 2, 3)))
static void outf(struct out *o, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    size_t len = (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1;
    if (o->n + len > sizeof o->buf)
        out_flush(o);
    memcpy(o->buf + o->n, tmp, len);
    o->n += len;
}

/* s as a JSON string body (quotes added by the caller). */
static void out_json_str(struct out *o, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            outf(o, "\\%c", c);
        else if (c < 0x20)
            outf(o, "\\u%04x", c);
        else
            outf(o, "%c", c);
    }
}

static const char *human(uint64_t b, char *buf, size_t len)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    if (u == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)b);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
    return buf;
}

static void check_live(void)
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

static uint64_t tier_bytes(const struct hmi_placement *pl, uint32_t t)
{
    uint64_t b = 0;
    if (g_baseline[0] && t == 0) {
        struct hmi_site_stats st;
        hmi_site_sum(pl->nsites, &st);
        b += st.bytes;
    }
    for (uint32_t s = 0; s < pl->nsites; s++) {
        if (pl->sites[s].tier == t) {
            struct hmi_site_stats st;
            hmi_site_sum(s, &st);
            b += st.bytes;
        }
    }
    return b;
}

#define SUMMARY_SITES 20u

/* ---- static variables (hmi_static.c) ---- */

/* Residency of each placed static, checked once at exit (one entry per static line;
 * NULL without statics or when the table cannot be mapped). */
static const struct hmi_residency *static_residency(const struct hmi_placement *pl)
{
    static struct hmi_residency *res;
    uint32_t n;
    const struct hmi_static_result *r = hmi_static_results(&n);
    if (res || !n || n > pl->nstatics)
        return res;
    void *m = mmap(NULL, (size_t)n * sizeof(*res), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    res = m;
    for (uint32_t i = 0; i < n; i++)
        if (r[i].state == HMI_STATIC_PLACED)
            hmi_report_residency((int)pl->statics[i].tier, (void *)(uintptr_t)r[i].addr,
                                 (size_t)r[i].len, &res[i]);
    return res;
}

/* The statics of tier t: placed, their bytes, left where they were. */
static void static_counts(const struct hmi_placement *pl, uint32_t t, uint64_t *placed,
                          uint64_t *bytes, uint64_t *refused)
{
    uint32_t n;
    const struct hmi_static_result *r = hmi_static_results(&n);
    *placed = *bytes = *refused = 0;
    for (uint32_t i = 0; i < n && i < pl->nstatics; i++) {
        if (pl->statics[i].tier != t)
            continue;
        if (r[i].state == HMI_STATIC_PLACED) {
            (*placed)++;
            *bytes += r[i].len;
        } else {
            (*refused)++;
        }
    }
}

static void static_lines(struct out *o, const char *who, const struct hmi_placement *pl,
                         const struct hmi_residency *res)
{
    uint32_t n, k;
    const struct hmi_static_result *r = hmi_static_results(&n);
    char a[32], b[32], c[32];
    for (k = 0; k < n && k < pl->nstatics && k < SUMMARY_SITES; k++) {
        const struct hmi_static *s = &pl->statics[k];
        const char *tier = pl->tiers[s->tier].name;
        if (r[k].state != HMI_STATIC_PLACED) {
            outf(o, "hmalloc%s:   static line %u -> %s: left where it is: %s\n", who, s->line,
                 tier, r[k].why);
            continue;
        }
        outf(o, "hmalloc%s:   static line %u -> %s: %s of its %s placed", who, s->line, tier,
             human(r[k].len, a, sizeof a), human(s->size, b, sizeof b));
        if (res && res[k].blocks_checked)
            outf(o, "; %s as intended, %s elsewhere, %s never touched",
                 human(res[k].bytes_intended, a, sizeof a),
                 human(res[k].bytes_elsewhere, b, sizeof b),
                 human(res[k].bytes_absent, c, sizeof c));
        outf(o, "\n");
    }
    if (n > k)
        outf(o, "hmalloc%s:   ... %u more statics (HMTUNE_STATS=FILE lists all)\n", who, n - k);
}

static void out_residency(struct out *o, const struct hmi_residency *r)
{
    outf(o, "{\"blocks_checked\": %llu, \"blocks_unchecked\": %llu, \"bytes_checked\": %llu, "
         "\"bytes_intended\": %llu, \"bytes_elsewhere\": %llu, \"bytes_absent\": %llu}",
         (unsigned long long)r->blocks_checked, (unsigned long long)r->blocks_unchecked,
         (unsigned long long)r->bytes_checked, (unsigned long long)r->bytes_intended,
         (unsigned long long)r->bytes_elsewhere, (unsigned long long)r->bytes_absent);
}

static void static_json(struct out *o, const struct hmi_placement *pl,
                        const struct hmi_residency *res)
{
    uint32_t n;
    const struct hmi_static_result *r = hmi_static_results(&n);
    outf(o, ",\n  \"statics\": [");
    for (uint32_t i = 0; i < n && i < pl->nstatics; i++) {
        const struct hmi_static *s = &pl->statics[i];
        int placed = r[i].state == HMI_STATIC_PLACED;
        outf(o, "%s\n    {\"line\": %u, \"tier\": \"%s\", \"object\": \"", i ? "," : "", s->line,
             pl->tiers[s->tier].name);
        out_json_str(o, s->module);
        outf(o, "+0x%llx\", \"size\": %llu, \"placed\": %s, \"placed_bytes\": %llu, "
             "\"address\": %llu, \"why\": \"", (unsigned long long)s->offset,
             (unsigned long long)s->size, placed ? "true" : "false",
             (unsigned long long)r[i].len, (unsigned long long)r[i].addr);
        out_json_str(o, placed ? "" : r[i].why);
        outf(o, "\", \"residency\": ");
        struct hmi_residency none = { 0 };
        out_residency(o, placed && res ? &res[i] : &none);
        outf(o, "}");
    }
    outf(o, "%s]", n ? "\n  " : "");
}

#define SUMMARY_RANGES 8u

/* Per matched split site (the first SUMMARY_SITES), per range (the first
 * SUMMARY_RANGES): objects and bytes placed. */
static void split_lines(struct out *o, const char *who, const struct hmi_placement *pl)
{
    char a[32];
    uint32_t shown = 0;
    for (uint32_t i = 0; g_split_rc && i < pl->nsites && shown < SUMMARY_SITES; i++) {
        const struct hmi_site *si = &pl->sites[i];
        struct hmi_site_stats sum;
        hmi_site_sum(i, &sum);
        if (!si->nranges || !sum.matches)
            continue;
        shown++;
        const struct split_count *c = &g_split_rc[g_split_off[i]];
        for (uint32_t k = 0; k < si->nranges && k < SUMMARY_RANGES; k++)
            outf(o, "hmalloc%s:   split line %u -> %s: range %llu-%llu: %llu objects, %s placed\n",
                 who, si->line, pl->tiers[si->tier].name,
                 (unsigned long long)si->ranges[k].start, (unsigned long long)si->ranges[k].end,
                 (unsigned long long)__atomic_load_n(&c[k].objects, __ATOMIC_RELAXED),
                 human(__atomic_load_n(&c[k].bytes, __ATOMIC_RELAXED), a, sizeof a));
        if (si->nranges > SUMMARY_RANGES)
            outf(o, "hmalloc%s:   split line %u: ... %u more ranges (HMTUNE_STATS=FILE lists all)\n",
                 who, si->line, si->nranges - SUMMARY_RANGES);
    }
}

static void write_summary(int fd, const struct hmi_placement *pl, const char *path, int rank,
                          const struct hmi_residency *sres)
{
    struct out o = { .fd = fd };
    char who[48] = "";
    if (rank >= 0)
        snprintf(who, sizeof who, "[rank %d]", rank);
    char a[32], b[32], c[32], d[32], e[32], exe[PATH_MAX];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[el > 0 ? el : 0] = '\0';
    outf(&o, "hmalloc%s: placement %s: %u tiers, %u sites; placed in %s, pid %d\n", who,
         path, pl->ntiers, pl->nsites, exe, (int)getpid());
    for (uint32_t t = 0; t < pl->ntiers && t < HMI_MAX_TIERS; t++) {
        const struct hmi_tier *ti = &pl->tiers[t];
        struct hmi_backend_stats s;
        hmi_backend_stats(t, &s);
        if (hmi_backend_kind(t) == HMI_BK_DEFAULT || !hmi_backend_available(t)) {
            outf(&o, "hmalloc%s: tier %s (%s): %s\n", who, ti->name, ti->backend,
                 hmi_backend_available(t) ? "the default allocator" : "unavailable, its sites went to the default allocator");
            continue;
        }
        struct hmi_residency r;
        hmi_report_tier_residency((int)t, &r);
        outf(&o, "hmalloc%s: tier %s (%s, %s): %llu blocks placed (%s), high-water %s, "
             "%llu not fitting\n", who, ti->name, ti->backend,
             ti->unlimited ? "unlimited" : human(ti->capacity, a, sizeof a),
             (unsigned long long)s.placed, human(tier_bytes(pl, t), b, sizeof b),
             human(s.high_water, c, sizeof c), (unsigned long long)s.not_fitting);
        if (r.blocks_checked)
            outf(&o, "hmalloc%s: tier %s residency: %s of %s checked as intended, %s elsewhere, "
                 "%s never touched (%llu blocks sampled%s)\n", who, ti->name,
                 human(r.bytes_intended, a, sizeof a), human(r.bytes_checked, b, sizeof b),
                 human(r.bytes_elsewhere, d, sizeof d), human(r.bytes_absent, e, sizeof e),
                 (unsigned long long)r.blocks_checked, r.blocks_unchecked ? ", some unchecked" : "");
        uint64_t sp, sb, sr;
        static_counts(pl, t, &sp, &sb, &sr);
        if (sp || sr)
            outf(&o, "hmalloc%s: tier %s statics: %llu placed (%s), %llu left where they were\n",
                 who, ti->name, (unsigned long long)sp, human(sb, a, sizeof a),
                 (unsigned long long)sr);
        if (s.split_placed || s.split_refused)
            outf(&o, "hmalloc%s: tier %s split objects: %llu placed, %s in their ranges, "
                 "%llu ranges did not fit\n", who, ti->name, (unsigned long long)s.split_placed,
                 human(s.split_bytes, a, sizeof a), (unsigned long long)s.split_refused);
    }
    static_lines(&o, who, pl, sres);
    uint32_t shown = 0, matched = 0;
    struct hmi_site_stats sum;
    for (uint32_t i = 0; i < pl->nsites; i++) {
        hmi_site_sum(i, &sum);
        matched += sum.matches != 0;
    }
    outf(&o, "hmalloc%s: sites: %u of %u matched; %llu calls in the size window matched none\n",
         who, matched, pl->nsites, (unsigned long long)unmatched());
    for (uint32_t i = 0; i < pl->nsites && shown < SUMMARY_SITES; i++) {
        hmi_site_sum(i, &sum);
        const struct hmi_site_stats *st = &sum;
        if (!st->matches)
            continue;
        shown++;
        outf(&o, "hmalloc%s:   site line %u -> %s: %llu matches, %llu placed (%s), %llu fell back\n",
             who, pl->sites[i].line, pl->tiers[pl->sites[i].tier].name,
             (unsigned long long)st->matches, (unsigned long long)st->placed,
             human(st->bytes, a, sizeof a), (unsigned long long)st->fell_back);
    }
    if (matched > shown)
        outf(&o, "hmalloc%s:   ... %u more matched sites (HMTUNE_STATS=FILE lists all)\n", who,
             matched - shown);
    split_lines(&o, who, pl);
    out_flush(&o);
}

static void write_json(struct out *o, const struct hmi_placement *pl, const char *path, int rank,
                       const struct hmi_residency *sres)
{
    char exe[PATH_MAX];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[el > 0 ? el : 0] = '\0';
    outf(o, "{\n  \"version\": 1,\n  \"placement\": \"");
    out_json_str(o, path);
    outf(o, "\",\n  \"program\": \"");
    out_json_str(o, exe);
    outf(o, "\",\n  \"pid\": %d,\n  \"rank\": ", (int)getpid());
    if (rank >= 0)
        outf(o, "%d", rank);
    else
        outf(o, "null");
    outf(o, ",\n  \"baseline\": ");
    if (g_baseline[0]) {
        outf(o, "\"");
        out_json_str(o, g_baseline);
        outf(o, "\"");
    } else {
        outf(o, "null");
    }
    outf(o, ",\n  \"unmatched_in_window\": %llu,\n  \"tiers\": [", (unsigned long long)unmatched());
    for (uint32_t t = 0; t < pl->ntiers && t < HMI_MAX_TIERS; t++) {
        const struct hmi_tier *ti = &pl->tiers[t];
        struct hmi_backend_stats s;
        struct hmi_residency r;
        hmi_backend_stats(t, &s);
        hmi_report_tier_residency((int)t, &r);
        outf(o, "%s\n    {\"name\": \"%s\", \"backend\": \"", t ? "," : "", ti->name);
        out_json_str(o, ti->backend);
        outf(o, "\", \"capacity\": ");
        if (ti->unlimited)
            outf(o, "null");
        else
            outf(o, "%llu", (unsigned long long)ti->capacity);
        uint64_t sp, sb, sr;
        static_counts(pl, t, &sp, &sb, &sr);
        outf(o, ", \"available\": %s, \"placed_blocks\": %llu, \"placed_bytes\": %llu, "
             "\"freed_blocks\": %llu, \"high_water_bytes\": %llu, \"used_bytes_at_exit\": %llu, "
             "\"not_fitting\": %llu, \"static_placed\": %llu, "
             "\"static_bytes\": %llu, \"static_refused\": %llu, \"split_placed\": %llu, "
             "\"split_bytes\": %llu, \"split_ranges_not_fitting\": %llu,\n     \"residency\": ",
             hmi_backend_available(t) ? "true" : "false", (unsigned long long)s.placed,
             (unsigned long long)tier_bytes(pl, t), (unsigned long long)s.freed,
             (unsigned long long)s.high_water, (unsigned long long)s.used,
             (unsigned long long)s.not_fitting,
             (unsigned long long)sp, (unsigned long long)sb, (unsigned long long)sr,
             (unsigned long long)s.split_placed, (unsigned long long)s.split_bytes,
             (unsigned long long)s.split_refused);
        out_residency(o, &r);
        outf(o, "}");
    }
    outf(o, "\n  ],\n  \"sites\": [");
    for (uint32_t i = 0; i < pl->nsites; i++) {
        const struct hmi_site *si = &pl->sites[i];
        struct hmi_site_stats sum;
        hmi_site_sum(i, &sum);
        const struct hmi_site_stats *st = &sum;
        outf(o, "%s\n    {\"line\": %u, \"tier\": \"%s\", \"chain\": \"", i ? "," : "", si->line,
             pl->tiers[si->tier].name);
        for (uint32_t f = 0; f < si->nframes; f++) {
            if (f)
                outf(o, " > ");
            out_json_str(o, pl->modules[si->frames[f].module].path);
            outf(o, "+0x%llx", (unsigned long long)si->frames[f].offset);
        }
        outf(o, "\", \"matches\": %llu, \"placed\": %llu, \"placed_bytes\": %llu, \"fell_back\": %llu",
             (unsigned long long)st->matches, (unsigned long long)st->placed,
             (unsigned long long)st->bytes, (unsigned long long)st->fell_back);
        if (si->nranges && g_split_rc) {
            const struct split_count *c = &g_split_rc[g_split_off[i]];
            outf(o, ",\n     \"ranges\": [");
            for (uint32_t k = 0; k < si->nranges; k++)
                outf(o, "%s{\"start\": %llu, \"end\": %llu, \"objects\": %llu, "
                     "\"placed_bytes\": %llu}", k ? ", " : "",
                     (unsigned long long)si->ranges[k].start,
                     (unsigned long long)si->ranges[k].end,
                     (unsigned long long)__atomic_load_n(&c[k].objects, __ATOMIC_RELAXED),
                     (unsigned long long)__atomic_load_n(&c[k].bytes, __ATOMIC_RELAXED));
            outf(o, "]");
        }
        outf(o, "}");
    }
    outf(o, "\n  ]");
    static_json(o, pl, sres);
    outf(o, "\n}\n");
}

/* FILE, or FILE with %r replaced by the rank (else ".RANK" appended) under MPI. */
static int stats_path(const char *json, int rank, char *dst, size_t cap)
{
    const char *r = strstr(json, "%r");
    int k;
    if (rank < 0)
        k = snprintf(dst, cap, "%s", json);
    else if (r)
        k = snprintf(dst, cap, "%.*s%d%s", (int)(r - json), json, rank, r + 2);
    else
        k = snprintf(dst, cap, "%s.%d", json, rank);
    return k > 0 && (size_t)k < cap ? 0 : -1;
}

static void stats_error(int fd, const char *path, int err)
{
    char msg[PATH_MAX + 160];
    int k = snprintf(msg, sizeof msg, "hmalloc: cannot write the statistics (HMTUNE_STATS) to %s: %s\n",
                     path, strerror(err));
    if (fd >= 0 && k > 0)
        (void)hm_write_all(fd, msg, (size_t)k < sizeof msg ? (size_t)k : sizeof msg - 1);
}

void hmi_report_exit(int errfd, const struct hmi_placement *pl, const char *placement_path,
                     int rank, int quiet, const char *json_path)
{
    check_live();
    const struct hmi_residency *sres = static_residency(pl);
    if (!quiet && errfd >= 0)
        write_summary(errfd, pl, placement_path, rank, sres);
    if (!json_path)
        return;
    char dst[PATH_MAX], tmp[PATH_MAX + 32];
    if (stats_path(json_path, rank, dst, sizeof dst) != 0 ||
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", dst, (int)getpid()) >= (int)sizeof tmp) {
        stats_error(errfd, json_path, ENAMETOOLONG);
        return;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        stats_error(errfd, tmp, errno);
        return;
    }
    struct out o = { .fd = fd };
    write_json(&o, pl, placement_path, rank, sres);
    out_flush(&o);
    int err = o.err;
    if (fsync(fd) != 0 && !err)
        err = errno;
    if (close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, dst) != 0)
        err = errno;
    if (err) {
        unlink(tmp);
        stats_error(errfd, dst, err);
    }
}
