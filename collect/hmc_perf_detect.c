/* hmc_perf_detect.c — find PEBS and IBS in sysfs and turn named events into raw
 * perf_event_attr configs (hmc_perf_detect.h; hmc_perf.h says how the steps fit).
 *
 * The sysfs ABI (Documentation/ABI/testing/sysfs-bus-event_source-devices-format
 * and -events): every PMU is a directory bus/event_source/devices/<pmu>/ with
 *   type            the attr.type to pass to perf_event_open(2);
 *   events/<name>   "term=value,term=value,..." (a term without "=" means 1),
 *                   e.g. cpu/events/mem-loads = "event=0xcd,umask=0x1,ldlat=3";
 *   format/<term>   where a term's bits go, "config:0-7", "config1:0-15",
 *                   "config:19", possibly several ranges "config:0-7,32-35",
 *                   filled from the value's low bits upwards like perf(1) does;
 *   caps/max_precise  the highest attr.precise_ip the core PMU accepts
 *                   (arch/x86/events/core.c; absent on older kernels).
 * Intel: "cpu" (or "cpu_core" + "cpu_atom" on hybrids) with events/mem-loads and
 * events/mem-stores; Sapphire Rapids-style P-cores add events/mem-loads-aux, which
 * the kernel requires in the group ahead of mem-loads (intel_pmu_hw_config(),
 * arch/x86/events/intel/core.c: "-ENODATA" otherwise). AMD: "ibs_op" with
 * format/cnt_ctl (config:19), format/l3missonly (config:16, Zen 4+), format/swfilt
 * (config2:0, 6.14+: privilege filtering in software), format/ldlat (config1,
 * Zen 5+), all in arch/x86/events/amd/ibs.c.
 *
 * Runs at tracer start-up inside the application: open/read/close only, no stdio,
 * no malloc. */
#include "hmc_perf_detect.h"
#include "hm_options.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEVS "/bus/event_source/devices/"

/* Bounded string building: always NUL-terminated, silently truncated. */
static void sb_add(char *b, size_t cap, size_t *n, const char *s)
{
    while (*s && *n + 1 < cap)
        b[(*n)++] = *s++;
    if (cap)
        b[*n < cap ? *n : cap - 1] = 0;
}

/* Read a small sysfs file into buf with trailing whitespace trimmed.
 * Length, or -errno. */
static int read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        n--;
    buf[n] = 0;
    return (int)n;
}

/* <root>/bus/event_source/devices/<pmu>/<rel> into path. */
static void pmu_path(char *path, size_t cap, const char *root, const char *pmu, const char *rel)
{
    size_t n = 0;
    path[0] = 0;
    sb_add(path, cap, &n, root);
    sb_add(path, cap, &n, DEVS);
    sb_add(path, cap, &n, pmu);
    sb_add(path, cap, &n, "/");
    sb_add(path, cap, &n, rel);
}

/* Decimal or 0x-hex unsigned number; returns the end, or NULL if none/overflow. */
static const char *parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    int base = 10, digits = 0;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }
    for (;; s++, digits++) {
        unsigned d;
        if (*s >= '0' && *s <= '9')
            d = (unsigned)(*s - '0');
        else if (base == 16 && *s >= 'a' && *s <= 'f')
            d = (unsigned)(*s - 'a' + 10);
        else if (base == 16 && *s >= 'A' && *s <= 'F')
            d = (unsigned)(*s - 'A' + 10);
        else
            break;
        if (v > (UINT64_MAX - d) / (uint64_t)base)
            return NULL;
        v = v * (uint64_t)base + d;
    }
    if (!digits)
        return NULL;
    *out = v;
    return s;
}

int hmc_perf_parse_format(const char *text, struct hmc_perf_field *f)
{
    memset(f, 0, sizeof(*f));
    if (strncmp(text, "config", 6) != 0)
        return -1;
    const char *p = text + 6;
    if (*p == ':')
        f->word = 0;
    else if ((p[0] == '1' || p[0] == '2') && p[1] == ':')
        f->word = (uint8_t)(*p++ - '0');
    else
        return -1;
    p++;   /* the ':' */
    for (;;) {
        uint64_t lo, hi;
        p = parse_u64(p, &lo);
        if (!p)
            return -1;
        hi = lo;
        if (*p == '-' && !(p = parse_u64(p + 1, &hi)))
            return -1;
        if (lo > hi || hi > 63 || f->nr == 4)
            return -1;
        f->lo[f->nr] = (uint8_t)lo;
        f->hi[f->nr] = (uint8_t)hi;
        f->nr++;
        if (*p != ',')
            break;
        p++;
    }
    while (*p == '\n' || *p == ' ')
        p++;
    return *p ? -1 : 0;
}

static uint64_t field_mask(const struct hmc_perf_field *f)
{
    uint64_t m = 0;
    for (unsigned i = 0; i < f->nr; i++)
        for (unsigned b = f->lo[i]; b <= f->hi[i]; b++)
            m |= 1ull << b;
    return m;
}

int hmc_perf_field_put(const struct hmc_perf_field *f, uint64_t value, uint64_t cfg[3])
{
    uint64_t m = field_mask(f), bits = 0;
    if (!m || f->word > 2)
        return -1;
    /* perf(1)'s pmu_format_value(): the value's bits go to the field's bits in
     * ascending order, whatever the order of the ranges in the file. */
    for (unsigned b = 0; b < 64 && value; b++) {
        if (!(m >> b & 1))
            continue;
        bits |= (value & 1) << b;
        value >>= 1;
    }
    if (value)
        return -1;   /* does not fit */
    cfg[f->word] = (cfg[f->word] & ~m) | bits;
    return 0;
}

/* Read <pmu>/format/<term> into f. 0, or -1 if absent or malformed. */
static int load_format(const char *root, const char *pmu, const char *term,
                       struct hmc_perf_field *f)
{
    char path[512], rel[96], text[128];
    size_t n = 0;
    rel[0] = 0;
    sb_add(rel, sizeof(rel), &n, "format/");
    sb_add(rel, sizeof(rel), &n, term);
    pmu_path(path, sizeof(path), root, pmu, rel);
    memset(f, 0, sizeof(*f));
    if (read_small(path, text, sizeof(text)) <= 0)
        return -1;
    return hmc_perf_parse_format(text, f);
}

/* Parse <pmu>/events/<name> through the PMU's format files. 0, -ENOENT when the
 * event file is absent, -EINVAL when a term is malformed or has no format. */
static int load_event(const char *root, const char *pmu, const char *name,
                      struct hmc_perf_evcfg *ev)
{
    char path[512], rel[96], text[256];
    size_t n = 0;
    rel[0] = 0;
    sb_add(rel, sizeof(rel), &n, "events/");
    sb_add(rel, sizeof(rel), &n, name);
    pmu_path(path, sizeof(path), root, pmu, rel);
    int len = read_small(path, text, sizeof(text));
    if (len <= 0)
        return len == 0 ? -EINVAL : -ENOENT;
    uint64_t cfg[3] = { 0, 0, 0 };
    const char *p = text;
    while (*p) {
        char term[48];
        size_t t = 0;
        while (*p && *p != '=' && *p != ',' && t + 1 < sizeof(term))
            term[t++] = *p++;
        term[t] = 0;
        uint64_t v = 1;   /* a bare term is a flag set to 1 */
        if (*p == '=' && !(p = parse_u64(p + 1, &v)))
            return -EINVAL;
        if (*p == ',')
            p++;
        else if (*p)
            return -EINVAL;
        if (!t)
            return -EINVAL;
        struct hmc_perf_field f;
        if (load_format(root, pmu, term, &f) == 0) {
            if (hmc_perf_field_put(&f, v, cfg) != 0)
                return -EINVAL;
        } else if (!strcmp(term, "config") || !strcmp(term, "config1") ||
                   !strcmp(term, "config2")) {
            /* perf(1) also takes the raw words as terms */
            cfg[term[6] ? term[6] - '0' : 0] = v;
        } else {
            return -EINVAL;
        }
    }
    ev->config = cfg[0];
    ev->config1 = cfg[1];
    ev->config2 = cfg[2];
    return 0;
}

static int read_u32(const char *root, const char *pmu, const char *rel, uint32_t *out)
{
    char path[512], text[32];
    uint64_t v;
    pmu_path(path, sizeof(path), root, pmu, rel);
    if (read_small(path, text, sizeof(text)) <= 0)
        return -1;
    const char *e = parse_u64(text, &v);
    if (!e || *e || v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* Reason line: "<kind>: <a><root>/bus/event_source/devices<b>\n". */
static void reason(char *dst, size_t cap, const char *kind, const char *a, const char *root,
                   const char *b)
{
    size_t n = 0;
    dst[0] = 0;
    sb_add(dst, cap, &n, kind);
    sb_add(dst, cap, &n, ": ");
    sb_add(dst, cap, &n, a);
    sb_add(dst, cap, &n, root);
    sb_add(dst, cap, &n, "/bus/event_source/devices");
    sb_add(dst, cap, &n, b);
}

/* One core PMU: 1 usable, 0 absent (no type file), -1 present but unusable
 * (caps->why_pebs says why). */
static int detect_pebs_pmu(const char *root, const char *pmu, struct hmc_perf_caps *caps)
{
    struct hmc_perf_pebs_pmu *p = &caps->pebs[caps->npebs];
    char *why = caps->why_pebs;
    size_t wl = sizeof(caps->why_pebs);
    memset(p, 0, sizeof(*p));
    if (read_u32(root, pmu, "type", &p->type) != 0)
        return 0;
    size_t n = 0;
    sb_add(p->name, sizeof(p->name), &n, pmu);
    int rc = load_event(root, pmu, "mem-loads", &p->loads);
    if (rc == -ENOENT) {
        char a[64];
        n = 0;
        a[0] = 0;
        sb_add(a, sizeof(a), &n, "no ");
        sb_add(a, sizeof(a), &n, pmu);
        sb_add(a, sizeof(a), &n, "/events/mem-loads in ");
        reason(why, wl, "PEBS", a, root,
               ": not an Intel CPU with PEBS or a VM without a PMU");
        return -1;
    }
    if (rc != 0 || load_format(root, pmu, "ldlat", &p->ldlat) != 0) {
        reason(why, wl, "PEBS", "mem-loads or format/ldlat malformed under ", root,
               ": kernel/sysfs layout not understood");
        return -1;
    }
    uint32_t mp;
    p->max_precise = read_u32(root, pmu, "caps/max_precise", &mp) == 0 ? (int)mp : 3;
    if (p->max_precise == 0) {
        reason(why, wl, "PEBS", "caps/max_precise is 0 in ", root,
               ": the PMU has no PEBS (a VM without PEBS passthrough?)");
        return -1;
    }
    p->has_stores = load_event(root, pmu, "mem-stores", &p->stores) == 0;
    rc = load_event(root, pmu, "mem-loads-aux", &p->aux);
    if (rc == 0)
        p->has_aux = 1;
    else if (rc != -ENOENT) {
        reason(why, wl, "PEBS", "mem-loads-aux malformed under ", root,
               ": kernel/sysfs layout not understood");
        return -1;
    }
    caps->npebs++;
    return 1;
}

int hmc_perf_detect(const char *sysfs_root, struct hmc_perf_caps *caps, char *why,
                    size_t whylen)
{
    static const char *const core_pmus[] = { "cpu", "cpu_core", "cpu_atom" };
    const char *root = sysfs_root;
    if (!root)
        root = hm_opt_str(HM_OPT_SYSFS_ROOT);       /* "/sys" unless set */
    memset(caps, 0, sizeof(*caps));
    caps->ring_pages = HMC_PERF_RING_PAGES;

    int seen = 0;
    for (unsigned i = 0; i < 3 && caps->npebs < HMC_PERF_MAX_PEBS_PMUS; i++) {
        int rc = detect_pebs_pmu(root, core_pmus[i], caps);
        seen |= rc != 0;
        if (rc <= 0)
            memset(&caps->pebs[caps->npebs], 0, sizeof(caps->pebs[0]));
    }
    if (caps->npebs)
        caps->why_pebs[0] = 0;   /* a hybrid part may have one PMU without PEBS */
    else if (!seen)
        reason(caps->why_pebs, sizeof(caps->why_pebs), "PEBS", "no cpu PMU in ", root,
               ": a VM without a virtual PMU, or a kernel without perf_events");

    if (read_u32(root, "ibs_op", "type", &caps->ibs_type) == 0) {
        caps->ibs = 1;
        load_format(root, "ibs_op", "cnt_ctl", &caps->ibs_cnt_ctl);
        load_format(root, "ibs_op", "l3missonly", &caps->ibs_l3missonly);
        load_format(root, "ibs_op", "swfilt", &caps->ibs_swfilt);
        load_format(root, "ibs_op", "ldlat", &caps->ibs_ldlat);
    } else {
        reason(caps->why_ibs, sizeof(caps->why_ibs), "IBS", "no ibs_op in ", root,
               ": not an AMD CPU with IBS, or a VM without it");
    }

    if (why && whylen) {
        size_t n = 0;
        why[0] = 0;
        if (!caps->npebs) {
            sb_add(why, whylen, &n, caps->why_pebs);
            sb_add(why, whylen, &n, "\n");
        }
        if (!caps->ibs) {
            sb_add(why, whylen, &n, caps->why_ibs);
            sb_add(why, whylen, &n, "\n");
        }
    }
    return (caps->npebs ? HMC_PERF_PEBS : 0) | (caps->ibs ? HMC_PERF_IBS : 0);
}
