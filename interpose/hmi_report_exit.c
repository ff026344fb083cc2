/* hmi_report_exit.c — libhmalloc's exit report (hmi_report.h, docs/formats.md §6):
 * the summary lines on standard error and the JSON statistics file, per tier, per
 * site, per split range and per static variable, from the counters hmi_report.c
 * keeps. Uses snprintf into stack buffers and write(2): it runs from the destructor,
 * outside any allocator lock. */
#include "hmi_report_int.h"
#include "hmi_backend.h"
#include "hmi_advise.h"
#include "hmi_fork.h"
#include "hmi_placement.h"
#include "hmi_static.h"
#include "hm_version.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

static uint64_t tier_bytes(const struct hmi_placement *pl, uint32_t t)
{
    uint64_t b = 0;
    if (hmi_report_baseline_name()[0] && t == 0) {
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
    for (uint32_t i = 0; i < n; i++) {
        if (r[i].state != HMI_STATIC_PLACED)
            continue;
        int t = (int)pl->statics[i].tier;
        if (!r[i].nparts) {
            hmi_report_residency(t, (void *)(uintptr_t)r[i].addr, (size_t)r[i].len, &res[i]);
            continue;
        }
        for (uint32_t k = 0; k < r[i].nparts; k++) {    /* its placed ranges, as one */
            struct hmi_residency one;
            if (!r[i].part[k].len)
                continue;
            hmi_report_residency(t, (void *)(uintptr_t)r[i].part[k].addr,
                                 (size_t)r[i].part[k].len, &one);
            res[i].blocks_checked |= one.blocks_checked;
            res[i].blocks_unchecked |= one.blocks_unchecked && !one.blocks_checked;
            res[i].bytes_checked += one.bytes_checked;
            res[i].bytes_intended += one.bytes_intended;
            res[i].bytes_elsewhere += one.bytes_elsewhere;
            res[i].bytes_absent += one.bytes_absent;
        }
    }
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
        if (r[k].nparts)
            outf(o, " (%u of %u ranges)", r[k].nparts - r[k].parts_left, r[k].nparts);
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

/* Why requests did not fit (enum hmi_why): run-stats.json's keys, the summary's words. */
static const char *const why_key[HMI_WHY_N] = {
    [HMI_WHY_CAPACITY] = "capacity", [HMI_WHY_KERNEL] = "kernel",
    [HMI_WHY_CHUNKS] = "chunk_table", [HMI_WHY_ALIGN] = "alignment", [HMI_WHY_UMF] = "umf",
    [HMI_WHY_SPLIT] = "split", [HMI_WHY_OTHER] = "other",
};
static const char *const why_text[HMI_WHY_N] = {
    [HMI_WHY_CAPACITY] = "over its capacity", [HMI_WHY_KERNEL] = "the kernel could not map",
    [HMI_WHY_CHUNKS] = "the arena's chunk table full",
    [HMI_WHY_ALIGN] = "an alignment not a power of two", [HMI_WHY_UMF] = "UMF had no memory",
    [HMI_WHY_SPLIT] = "split objects with no range placed",
    [HMI_WHY_OTHER] = "too large for the page map",
};

/* The tier's arena chunks and its refusals by reason (after its residency). */
static void out_refused(struct out *o, const struct hmi_backend_stats *s)
{
    outf(o, ",\n     \"arena_chunks\": %llu, \"not_fitting_reasons\": {",
         (unsigned long long)s->chunks);
    for (uint32_t w = 1; w < HMI_WHY_N; w++)
        outf(o, "%s\"%s\": %llu", w > 1 ? ", " : "", why_key[w],
             (unsigned long long)s->refused[w]);
    outf(o, "}");
}

/* `hmalloc: tier NAME: N not fitting: K over its capacity, ...` when some did not. */
static void refused_line(struct out *o, const char *who, const char *tier,
                         const struct hmi_backend_stats *s)
{
    if (!s->not_fitting)
        return;
    outf(o, "hmalloc%s: tier %s: %llu not fitting:", who, tier,
         (unsigned long long)s->not_fitting);
    const char *sep = " ";
    for (uint32_t w = 1; w < HMI_WHY_N; w++) {
        if (s->refused[w]) {
            outf(o, "%s%llu %s", sep, (unsigned long long)s->refused[w], why_text[w]);
            sep = ", ";
        }
    }
    outf(o, "\n");
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
        out_json_str(o, placed && !r[i].parts_left ? "" : r[i].why);
        outf(o, "\", ");
        if (s->nranges) {       /* static-split: per range, what was placed where */
            outf(o, "\"ranges\": [");
            for (uint32_t k = 0; k < s->nranges; k++) {
                const struct hmi_static_part *q = &r[i].part[k];
                outf(o, "%s{\"start\": %llu, \"end\": %llu, \"address\": %llu, "
                     "\"placed_bytes\": %llu}", k ? ", " : "",
                     (unsigned long long)s->ranges[k].start,
                     (unsigned long long)s->ranges[k].end,
                     (unsigned long long)(k < r[i].nparts ? q->addr : 0),
                     (unsigned long long)(k < r[i].nparts ? q->len : 0));
            }
            outf(o, "], ");
        }
        outf(o, "\"residency\": ");
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
    for (uint32_t i = 0; hmi_report_split_counts(0) && i < pl->nsites && shown < SUMMARY_SITES; i++) {
        const struct hmi_site *si = &pl->sites[i];
        struct hmi_site_stats sum;
        hmi_site_sum(i, &sum);
        if (!si->nranges || !sum.matches)
            continue;
        shown++;
        const struct hmi_split_count *c = hmi_report_split_counts(i);
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

/* What fork (hmi_fork.h), madvise and mprotect (hmi_advise.h) changed of the hugetlb
 * tiers: a line each when they did. */
static void fork_lines(struct out *o, const char *who)
{
    struct hmi_fork_stats f;
    char a[32], b[32];
    uint64_t zeroed, demoted;
    hmi_advise_stats(&zeroed, &demoted);
    if (zeroed || demoted)
        outf(o, "hmalloc%s: hugetlb: madvise cleared %s in partial hugepages; mprotect of "
             "part of a hugepage put %s back in ordinary pages\n", who,
             human(zeroed, a, sizeof a), human(demoted, b, sizeof b));
    hmi_fork_stats(&f);
    if (f.copied_bytes || f.left_bytes || f.unknown)
        outf(o, "hmalloc%s: fork: %llu of %llu child(ren) took private copies of %s of "
             "hugetlb pages in ordinary memory, %s left in hugepages, %llu did not say\n", who,
             (unsigned long long)f.copied_children, (unsigned long long)f.forks,
             human(f.copied_bytes, a, sizeof a), human(f.left_bytes, b, sizeof b),
             (unsigned long long)f.unknown);
}

static void fork_json(struct out *o)
{
    struct hmi_fork_stats f;
    uint64_t zeroed, demoted;
    hmi_fork_stats(&f);
    hmi_advise_stats(&zeroed, &demoted);
    outf(o, ",\n  \"hugetlb_partial\": {\"madvise_zeroed_bytes\": %llu, "
         "\"mprotect_demoted_bytes\": %llu}", (unsigned long long)zeroed,
         (unsigned long long)demoted);
    outf(o, ",\n  \"fork\": {\"forks\": %llu, \"children_copied\": %llu, "
         "\"hugetlb_maps_copied\": %llu, \"hugetlb_bytes_copied\": %llu, "
         "\"hugetlb_bytes_left\": %llu, \"children_unreported\": %llu}",
         (unsigned long long)f.forks, (unsigned long long)f.copied_children,
         (unsigned long long)f.copied_maps, (unsigned long long)f.copied_bytes,
         (unsigned long long)f.left_bytes, (unsigned long long)f.unknown);
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
        refused_line(&o, who, ti->name, &s);
        if (s.map_failed) {
            char host[256];
            if (gethostname(host, sizeof host - 1) != 0)
                strcpy(host, "this node");
            host[sizeof host - 1] = '\0';
            struct hmi_backend_policy pol;
            int huge = hmi_backend_policy(t, &pol) == 0 && pol.map_huge;
            outf(&o, "hmalloc%s: tier %s: the kernel refused %llu mapping(s) within the "
                 "capacity on %s: %s\n", who, ti->name, (unsigned long long)s.map_failed, host,
                 huge ? "its hugepage pool ran out (reserve more pages there)"
                      : "its nodes ran out of memory");
        }
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
        if (s.reused)
            outf(&o, "hmalloc%s: tier %s: %llu of its blocks were freed ones taken back "
                 "without a new mapping\n", who, ti->name, (unsigned long long)s.reused);
    }
    static_lines(&o, who, pl, sres);
    fork_lines(&o, who);
    uint32_t shown = 0, matched = 0;
    struct hmi_site_stats sum;
    for (uint32_t i = 0; i < pl->nsites; i++) {
        hmi_site_sum(i, &sum);
        matched += sum.matches != 0;
    }
    outf(&o, "hmalloc%s: sites: %u of %u matched; %llu calls in the size window matched none\n",
         who, matched, pl->nsites, (unsigned long long)hmi_report_unmatched());
    for (uint32_t i = 0; i < pl->nsites && shown < SUMMARY_SITES; i++) {
        hmi_site_sum(i, &sum);
        const struct hmi_site_stats *st = &sum;
        if (!st->matches)
            continue;
        shown++;
        outf(&o, "hmalloc%s:   %s line %u -> %s: %llu matches, %llu placed (%s%s), %llu fell "
             "back\n", who, pl->sites[i].nranges ? "split" : "site", pl->sites[i].line,
             pl->tiers[pl->sites[i].tier].name, (unsigned long long)st->matches,
             (unsigned long long)st->placed, human(st->bytes, a, sizeof a),
             pl->sites[i].nranges ? " in their ranges" : "", (unsigned long long)st->fell_back);
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
    outf(o, "{\n  \"version\": 1,\n  \"hmtune\": \"" HMTUNE_VERSION "\",\n  \"placement\": \"");
    out_json_str(o, path);
    outf(o, "\",\n  \"program\": \"");
    out_json_str(o, exe);
    char host[256];
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    outf(o, "\",\n  \"host\": \"");
    out_json_str(o, host);
    outf(o, "\",\n  \"pid\": %d,\n  \"rank\": ", (int)getpid());
    if (rank >= 0)
        outf(o, "%d", rank);
    else
        outf(o, "null");
    outf(o, ",\n  \"baseline\": ");
    if (hmi_report_baseline_name()[0]) {
        outf(o, "\"");
        out_json_str(o, hmi_report_baseline_name());
        outf(o, "\"");
    } else {
        outf(o, "null");
    }
    outf(o, ",\n  \"unmatched_in_window\": %llu,\n  \"tiers\": [", (unsigned long long)hmi_report_unmatched());
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
             "\"not_fitting\": %llu, \"map_failed\": %llu, \"static_placed\": %llu, "
             "\"static_bytes\": %llu, \"static_refused\": %llu, \"split_placed\": %llu, "
             "\"split_bytes\": %llu, \"split_ranges_not_fitting\": %llu, \"reused_blocks\": %llu, "
             "\"kept_bytes_at_exit\": %llu,\n     \"residency\": ",
             hmi_backend_available(t) ? "true" : "false", (unsigned long long)s.placed,
             (unsigned long long)tier_bytes(pl, t), (unsigned long long)s.freed,
             (unsigned long long)s.high_water, (unsigned long long)s.used,
             (unsigned long long)s.not_fitting, (unsigned long long)s.map_failed,
             (unsigned long long)sp, (unsigned long long)sb, (unsigned long long)sr,
             (unsigned long long)s.split_placed, (unsigned long long)s.split_bytes,
             (unsigned long long)s.split_refused, (unsigned long long)s.reused,
             (unsigned long long)s.kept);
        out_residency(o, &r);
        out_refused(o, &s);
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
        if (si->nranges && hmi_report_split_counts(i)) {
            const struct hmi_split_count *c = hmi_report_split_counts(i);
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
    fork_json(o);
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
    hmi_report_check_live();
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

