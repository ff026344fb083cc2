/* hmi_static.c — see hmi_static.h. Runs once, from the interposer's initialization
 * (its constructor, or the first placed allocation before it), single-threaded. The
 * checks against the module (loaded, segment, symbol tables) are hmi_static_elf.c's;
 * here each static is checked against its tier, its whole pages placed, and the
 * results and warnings kept. */
#include "hmi_static.h"
#include "hmi_sys.h"
#include "hmi_static_int.h"
#include "hm_util.h"

#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE_4K       4096ull
#define PAGE_2M       (2ull << 20)
#define MPOL_MF_MOVE_ (1 << 1)              /* <linux/mempolicy.h> */
#define MAP_HUGE_2MB_ (21 << 26)            /* MAP_HUGE_SHIFT 26: 2 MiB pages, whatever
                                               the kernel's default hugepage size */
#define WARN_LINES    8u                    /* refusals written one by one, then a count */

static struct hmi_static_result *g_res;
static uint32_t g_nres;
static size_t g_res_bytes;

/* ---- a one-line message in a fixed buffer ---- */

struct line { char *buf; size_t cap, n; };

static void put(struct line *l, const char *s)
{
    while (*s && l->n + 1 < l->cap)
        l->buf[l->n++] = *s++;
    l->buf[l->n] = '\0';
}

static void put_u64(struct line *l, uint64_t v)
{
    char t[24];
    t[hm_fmt_u64(t, v)] = '\0';
    put(l, t);
}

static void put_hex(struct line *l, uint64_t v)
{
    char t[20];
    int n = 0;
    do {
        t[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    put(l, "0x");
    while (n--) {
        char c[2] = { t[n], '\0' };
        put(l, c);
    }
}

static void put_errno(struct line *l, int e)
{
    const char *d = strerrordesc_np(e);
    put(l, d ? d : "unknown error");
}

/* ---- placing a range ---- */

uint64_t hmi_static_granule(enum hmi_backend_kind kind, int map_huge)
{
    return map_huge || kind == HMI_BK_THP ? PAGE_2M : PAGE_4K;
}

static int all_zero(const unsigned char *p, uint64_t n)
{
    const uint64_t *w = (const uint64_t *)p;
    for (uint64_t i = 0; i < n / 8; i++)
        if (w[i])
            return 0;
    return 1;
}

/* Copy the 2 MiB chunks of [src, src + len) that are not all zero to dst: untouched
 * .bss reads as the zero page and costs no memory at either end. */
static void copy_nonzero(unsigned char *dst, const unsigned char *src, uint64_t len)
{
    for (uint64_t o = 0; o < len; o += PAGE_2M)
        if (!all_zero(src + o, PAGE_2M))
            memcpy(dst + o, src + o, PAGE_2M);
}

static long sys_mbind(void *a, uint64_t len, const struct hmi_backend_policy *pol,
                      unsigned flags)
{
    return syscall(SYS_mbind, a, (unsigned long)len, pol->mpol, pol->nodes, pol->maxnode,
                   flags);
}

/* Map [a, a + len) (2 MiB-aligned) over with anonymous memory holding the nonzero
 * chunks of src: the range as it was, after a failed replacement. */
static void restore(unsigned char *a, uint64_t len, const unsigned char *src)
{
    if (mmap(a, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
        MAP_FAILED)
        copy_nonzero(a, src, len);
}

/* Replace [a, a + len) (2 MiB-aligned) by a hugetlb mapping holding its contents. 0,
 * or -1 with why filled and the range holding what it held.
 *
 * The hugepages are taken first, in a mapping of their own (the kernel reserves a
 * private hugetlb mapping's pages when it is made: a short pool refuses it and the
 * range is never touched); the contents are copied in, and mremap(2) moves the
 * mapping over the range in one step (hugetlb mappings move since Linux 5.17). Where
 * mremap cannot, the copy goes to ordinary memory, the pages back to the pool, and a
 * MAP_FIXED | MAP_HUGETLB mapping replaces the range; the kernel may have unmapped
 * the range before that mapping fails for want of pages (mm/mmap.c mmap_region
 * unmaps before the hugetlbfs mmap hook reserves them), so a failure maps the copy
 * back. */
static int remap_huge(unsigned char *a, uint64_t len, const struct hmi_backend_policy *pol,
                      struct line *why)
{
    int huge = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB_;
    unsigned char *h = mmap(NULL, len, PROT_READ | PROT_WRITE, huge, -1, 0);
    if (h == MAP_FAILED) {
        int e = errno;
        if (e == ENOMEM) {
            put(why, "the hugepage pool does not have ");
            put_u64(why, len / PAGE_2M);
            put(why, " free 2 MiB pages (reserve them: /proc/sys/vm/nr_hugepages)");
        } else {
            put(why, "mmap(MAP_HUGETLB) failed: ");
            put_errno(why, e);
        }
        return -1;
    }
    if (pol->mpol)                      /* before the first touch: pages come from the nodes */
        sys_mbind(h, len, pol, 0);
    copy_nonzero(h, a, len);
    if (hmi_sys_mremap(h, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, a) != MAP_FAILED)
        return 0;
    unsigned char *tmp = mmap(NULL, len, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (tmp == MAP_FAILED) {
        munmap(h, len);
        put(why, "no memory for the copy: ");
        put_errno(why, errno);
        return -1;
    }
    copy_nonzero(tmp, h, len);
    munmap(h, len);
    if (mmap(a, len, PROT_READ | PROT_WRITE, huge | MAP_FIXED, -1, 0) == MAP_FAILED) {
        int e = errno;
        restore(a, len, tmp);
        munmap(tmp, len);
        put(why, "mmap(MAP_HUGETLB | MAP_FIXED) failed: ");
        put_errno(why, e);
        return -1;
    }
    if (pol->mpol)
        sys_mbind(a, len, pol, 0);
    copy_nonzero(a, tmp, len);
    munmap(tmp, len);
    return 0;
}

/* Bind or remap [a, a + len) to the tier; 0, or -1 with why filled. */
static int place_range(unsigned char *a, uint64_t len, const struct hmi_backend_policy *pol,
                       struct line *why)
{
    if (pol->map_huge)
        return remap_huge(a, len, pol, why);
    if (pol->thp && hmi_sys_madvise(a, len, MADV_HUGEPAGE) != 0) {
        put(why, "madvise(MADV_HUGEPAGE) failed: ");
        put_errno(why, errno);
        return -1;
    }
    if (pol->mpol && sys_mbind(a, len, pol, MPOL_MF_MOVE_) != 0) {
        put(why, "mbind failed: ");
        put_errno(why, errno);
        return -1;
    }
    return 0;
}

/* Place the whole pages of granule g inside [start + lo, start + hi) (offsets in the
 * static s, hi <= its size): charged to the tier, then bound or remapped (read_only:
 * refused, the range cannot take hugepages). 0 with the range placed in *addr, *len;
 * -1 with why filled. */
static int place_part(const struct hmi_static *s, uint64_t start, uint64_t lo, uint64_t hi,
                      uint64_t g, const struct hmi_backend_policy *pol, const char *tier,
                      int read_only, struct line *why, uint64_t *addr, uint64_t *len)
{
    uint64_t a = (start + lo + g - 1) & ~(g - 1), b = (start + hi) & ~(g - 1);
    if (b <= a) {
        put(why, g == PAGE_2M ? "no whole 2 MiB page inside the object"
                              : "no whole 4 KiB page inside the object");
        if (s->nranges)
            put(why, "'s range");
        return -1;
    }
    if (read_only) {
        put(why, "read-only data: not remapped to hugepages");
        return -1;
    }
    if (hmi_backend_charge(s->tier, b - a) != 0) {
        put(why, "tier ");
        put(why, tier);
        put(why, " is full");
        return -1;
    }
    if (place_range((unsigned char *)(uintptr_t)a, b - a, pol, why) != 0) {
        hmi_backend_uncharge(s->tier, b - a);
        return -1;
    }
    *addr = a;
    *len = b - a;
    return 0;
}

/* Check and place one static; 0 placed, -1 refused (r->why says why). */
static int place_one(const struct hmi_placement *pl, const struct hmi_static *s, const char *exe,
                     struct hmi_static_result *r)
{
    struct line why = { r->why, sizeof r->why, 0 };
    const struct hmi_tier *t = &pl->tiers[s->tier];
    struct hmi_backend_policy pol;
    if (s->tier >= HMI_MAX_TIERS || hmi_backend_policy(s->tier, &pol) != 0) {
        put(&why, "tier ");
        put(&why, t->name);
        put(&why, " cannot place (see its warning)");
        return -1;
    }
    if (pol.kind == HMI_BK_DEFAULT) {
        put(&why, "tier ");
        put(&why, t->name);
        put(&why, " is the default allocator: nothing to move");
        return -1;
    }
    struct hmi_loaded m = { s->module, exe, s->module_len, 0, 0, NULL, 0 };
    hmi_static_find(&m);
    if (!m.found) {
        put(&why, "module not loaded");
        return -1;
    }
    uint32_t flags = 0;
    int relro = 0;
    if (hmi_static_segment(&m, s->offset, s->size, &flags, &relro) != 0) {
        put(&why, "not inside one loaded segment of the module (a wrong size, or another build)");
        return -1;
    }
    struct hmi_symscan sym = { 0 };
    hmi_static_symbols(&m, s->offset, s->size, &sym);
    if (!sym.read) {
        put(&why, "cannot read the module's symbols to check the object");
        return -1;
    }
    if (!sym.same && !(sym.prev && !sym.inside && sym.at_end)) {
        if (sym.other) {
            put(&why, "size does not match the symbol there (");
            put_u64(&why, sym.other_size);
            put(&why, " bytes; another build?)");
        } else {
            put(&why, "no data symbol, nor unnamed data between two, has that offset and size "
                      "(another build?)");
        }
        return -1;
    }
    int ro = pol.map_huge && (!(flags & PF_W) || relro);
    uint64_t g = hmi_static_granule(pol.kind, pol.map_huge);
    uint64_t start = m.base + s->offset;
    if (!s->nranges)
        return place_part(s, start, 0, s->size, g, &pol, t->name, ro, &why, &r->addr, &r->len);
    /* static-split: each range's whole pages inside the object, on their own */
    r->nparts = s->nranges;
    struct line first = { r->why, sizeof r->why, 0 };
    char tmp[HMI_REASON_MAX];
    for (uint32_t i = 0; i < s->nranges; i++) {
        struct line w = { tmp, sizeof tmp, 0 };
        uint64_t end = s->ranges[i].end < s->size ? s->ranges[i].end : s->size;
        struct hmi_static_part *q = &r->part[i];
        if (place_part(s, start, s->ranges[i].start, end, g, &pol, t->name, ro, &w, &q->addr,
                       &q->len) != 0) {
            q->addr = q->len = 0;
            if (!r->parts_left++) {
                put(&first, "range ");
                put_u64(&first, s->ranges[i].start);
                put(&first, "-");
                put_u64(&first, s->ranges[i].end);
                put(&first, ": ");
                put(&first, tmp);
            }
            continue;
        }
        if (!r->len)
            r->addr = q->addr;
        r->len += q->len;
    }
    return r->len ? 0 : -1;
}

int hmi_static_place(const struct hmi_placement *pl, const char *exe, int warn)
{
    if (!pl->nstatics)
        return 0;
    size_t bytes = ((size_t)pl->nstatics * sizeof(*g_res) + 4095) & ~(size_t)4095;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    if (g_res)                          /* placed before (tests): the old results go */
        munmap(g_res, g_res_bytes);
    g_res = m;
    g_res_bytes = bytes;
    g_nres = 0;
    uint32_t refused = 0;
    for (uint32_t i = 0; i < pl->nstatics; i++) {
        const struct hmi_static *s = &pl->statics[i];
        struct hmi_static_result *r = &g_res[i];
        r->state = place_one(pl, s, exe, r) == 0 ? HMI_STATIC_PLACED : HMI_STATIC_REFUSED;
        int partly = r->state == HMI_STATIC_PLACED && r->parts_left;
        if ((r->state == HMI_STATIC_PLACED && !partly) || !warn || refused++ >= WARN_LINES)
            continue;
        char msg[HMI_REASON_MAX + 4400];
        struct line l = { msg, sizeof msg, 0 };
        put(&l, "placement line ");
        put_u64(&l, s->line);
        put(&l, ": static ");
        put(&l, s->module);
        put(&l, "+");
        put_hex(&l, s->offset);
        put(&l, " (");
        put_u64(&l, s->size);
        if (partly) {
            put(&l, " bytes): ");
            put_u64(&l, r->parts_left);
            put(&l, " of its ");
            put_u64(&l, r->nparts);
            put(&l, " ranges left where they are: ");
        } else {
            put(&l, " bytes) left where it is: ");
        }
        put(&l, r->why);
        hm_log("hmalloc: ", msg, NULL);
    }
    g_nres = pl->nstatics;
    if (warn && refused > WARN_LINES) {
        char msg[160];
        struct line l = { msg, sizeof msg, 0 };
        put_u64(&l, refused - WARN_LINES);
        put(&l, " more static(s) left where they are (HMTUNE_STATS=FILE lists why)");
        hm_log("hmalloc: ", msg, NULL);
    }
    return 0;
}

const struct hmi_static_result *hmi_static_results(uint32_t *n)
{
    *n = g_nres;
    return g_res;
}

int hmi_static_placed_at(uint64_t a, uint64_t *lo, uint64_t *hi)
{
    for (uint32_t i = 0; g_res && i < g_nres; i++) {
        const struct hmi_static_result *r = &g_res[i];
        if (r->state != HMI_STATIC_PLACED)
            continue;
        if (!r->nparts && a >= r->addr && a < r->addr + r->len) {
            *lo = r->addr, *hi = r->addr + r->len;
            return 1;
        }
        for (uint32_t k = 0; k < r->nparts; k++)
            if (r->part[k].len && a >= r->part[k].addr && a < r->part[k].addr + r->part[k].len) {
                *lo = r->part[k].addr, *hi = r->part[k].addr + r->part[k].len;
                return 1;
            }
    }
    return 0;
}

