/* gen_check.c — `hmtune-gentrace --check OUT.prv OUTDIR`: compare hmtune-prvscan's
 * outputs with the answers the generator wrote to OUT.prv.expected.json.
 *
 * Checked: every (task, site) row of sites.tsv — its lifetime facts (n_allocs,
 * max_size, peak_live_bytes, total_bytes, first_alloc_ns, last_free_ns, live_ns) and
 * sample counters — against the expected ones, with no row missing or extra;
 * allocs.csv's version line and header, its rows aggregated per (task, site) against
 * the expected counts and bytes, rows in allocation-time order, t_free never before
 * t_alloc, the number of never-freed rows; scan.json's record, weight, class and
 * unknown-free totals, and its sampled page faults (samples, faults, faults by class). Exit 0 when everything matches, 1 with one line per mismatch. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps.h"   /* PS_SITES_VERSION */

int gen_check(const char *prv, const char *outdir);

#define MAXT 64
#define MAXS 4096
#define NV 18            /* the sites.tsv columns after task and site_id */

static const char *g_names[NV] = { "n_allocs", "max_size", "peak_live_bytes", "total_bytes",
                                   "first_alloc_ns", "last_free_ns", "live_ns", "samples",
                                   "loads", "stores", "misses", "weight", "fault_samples",
                                   "faults", "sampled_blocks", "weight_streaming",
                                   "weight_scattered", "weight_sync" };

struct agg {
    int64_t want[NV], got[NV];
    int64_t rows, bytes;         /* from allocs.csv */
    int seen_exp, seen_out;
};

static struct agg g_agg[MAXT + 1][MAXS];
static int g_bad;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("MISMATCH cannot open %s\n", path);
        g_bad = 1;
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = s ? fread(s, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!s)
        return NULL;
    s[got] = 0;
    return s;
}

/* value of "key": in a flat JSON text (first occurrence); -1 when absent */
static int64_t jget(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    const char *p = strstr(text, pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static void same(const char *what, int64_t want, int64_t got)
{
    if (want != got) {
        printf("MISMATCH %s: expected %" PRId64 ", got %" PRId64 "\n", what, want, got);
        g_bad = 1;
    }
}

static FILE *open_out(const char *outdir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", outdir, name);
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("MISMATCH cannot open %s\n", path);
        g_bad = 1;
    }
    return f;
}

static void check_allocs(const char *outdir, const char *exp)
{
    FILE *f = open_out(outdir, "allocs.csv");
    if (!f)
        return;
    char line[512];
    uint64_t last_t = 0, rows = 0, live = 0, order_bad = 0, free_bad = 0;
    if (!fgets(line, sizeof(line), f) || strncmp(line, "# hmtune allocs v1 trace=", 25) != 0 ||
        !fgets(line, sizeof(line), f) ||
        strcmp(line, "site_id,rank,thread,ptr,size,t_alloc,t_free,scale\n")) {
        printf("MISMATCH allocs.csv version line or header\n");
        g_bad = 1;
    }
    while (fgets(line, sizeof(line), f)) {
        unsigned long long site, rank, thread, ptr, size, ta, scale;
        long long tf;
        if (sscanf(line, "%llu,%llu,%llu,0x%llx,%llu,%llu,%lld,%llu", &site, &rank, &thread, &ptr,
                   &size, &ta, &tf, &scale) != 8 || rank >= MAXT || site >= MAXS || !scale) {
            printf("MISMATCH allocs.csv row: %s", line);
            g_bad = 1;
            continue;
        }
        rows++;
        order_bad += ta < last_t;
        last_t = ta;
        live += tf == -1;
        free_bad += tf != -1 && (tf < 0 || (unsigned long long)tf < ta);
        g_agg[rank + 1][site].rows += (int64_t)scale;            /* the blocks it stands for */
        g_agg[rank + 1][site].bytes += (int64_t)(size * scale);
    }
    fclose(f);
    same("allocs.csv rows", jget(exp, "allocs"), (int64_t)rows);
    same("allocs.csv rows never freed", jget(exp, "never_freed"), (int64_t)live);
    same("allocs.csv rows out of t_alloc order", 0, (int64_t)order_bad);
    same("allocs.csv rows with t_free before t_alloc", 0, (int64_t)free_bad);
}

static void check_sites(const char *outdir)
{
    FILE *f = open_out(outdir, "sites.tsv");
    if (!f)
        return;
    char line[1024], head[1024] = "task\tsite_id";
    if (!fgets(line, sizeof(line), f) || strcmp(line, PS_SITES_VERSION "\n")) {
        printf("MISMATCH sites.tsv version line\n");
        g_bad = 1;
    }
    for (int k = 0; k < NV; k++)
        snprintf(head + strlen(head), sizeof(head) - strlen(head), "\t%s", g_names[k]);
    strcat(head, "\n");
    if (!fgets(line, sizeof(line), f) || strcmp(line, head)) {
        printf("MISMATCH sites.tsv header\n");
        g_bad = 1;
    }
    while (fgets(line, sizeof(line), f)) {
        char *p = line, *end;
        unsigned long long task = strtoull(p, &end, 10), site = strtoull(end, &end, 10);
        if (end == p || task > MAXT || site >= MAXS) {
            printf("MISMATCH sites.tsv row: %s", line);
            g_bad = 1;
            continue;
        }
        struct agg *a = &g_agg[task][site];
        a->seen_out = 1;
        for (int k = 0; k < NV; k++)
            a->got[k] = strtoll(end, &end, 10);
    }
    fclose(f);
}

int gen_check(const char *prv, const char *outdir)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s.expected.json", prv);
    char *exp = slurp(path);
    snprintf(path, sizeof(path), "%s/scan.json", outdir);
    char *scan = slurp(path);
    if (!exp || !scan)
        return 1;
    for (const char *p = strstr(exp, "{\"task\":"); p; p = strstr(p + 1, "{\"task\":")) {
        int64_t task = jget(p, "task"), site = jget(p, "site_id");
        if (task < 1 || task > MAXT || site < 0 || site >= MAXS)
            continue;
        struct agg *a = &g_agg[task][site];
        a->seen_exp = 1;
        for (int k = 0; k < NV; k++)
            a->want[k] = jget(p, g_names[k]);
    }
    check_allocs(outdir, exp);
    check_sites(outdir);
    for (int t = 0; t <= MAXT; t++)
        for (int s = 0; s < MAXS; s++) {
            struct agg *a = &g_agg[t][s];
            char what[128];
            if (a->seen_out != a->seen_exp) {
                printf("MISMATCH task %d site %d: %s\n", t, s,
                       a->seen_out ? "in sites.tsv, not expected" : "expected, not in sites.tsv");
                g_bad = 1;
            }
            for (int k = 0; k < NV && a->seen_exp && a->seen_out; k++) {
                snprintf(what, sizeof(what), "task %d site %d %s", t, s, g_names[k]);
                same(what, a->want[k], a->got[k]);
            }
            snprintf(what, sizeof(what), "task %d site %d allocs.csv rows", t, s);
            same(what, a->seen_exp ? a->want[0] : 0, a->rows);
            snprintf(what, sizeof(what), "task %d site %d allocs.csv bytes", t, s);
            same(what, a->seen_exp ? a->want[3] : 0, a->bytes);
        }
    static const char *keys[] = { "records", "events", "states", "unknown_frees", "total_weight",
                                  "sampler", "\"1\"", "\"3\"", "\"4\"", "\"5\"" };
    for (size_t k = 0; k < sizeof(keys) / sizeof(*keys); k++) {
        const char *key = keys[k];
        char bare[32];
        if (key[0] == '"') {            /* class counters: look inside "classes" */
            snprintf(bare, sizeof(bare), "%.*s", (int)strlen(key) - 2, key + 1);
            const char *ce = strstr(exp, "\"classes\""), *cs = strstr(scan, "\"classes\"");
            same(key, ce ? jget(ce, bare) : -2, cs ? jget(cs, bare) : -3);
        } else {
            same(key, jget(exp, key), jget(scan, key));
        }
    }
    same("fault_samples", jget(exp, "fault_samples"), jget(scan, "fault_samples"));
    same("faults", jget(exp, "faults"), jget(scan, "faults"));
    static const char *fcls[] = { "1", "3", "4" };
    const char *fe = strstr(exp, "\"fault_classes\""), *fs = strstr(scan, "\"fault_classes\"");
    for (size_t k = 0; k < sizeof(fcls) / sizeof(*fcls); k++) {
        char what[64];
        snprintf(what, sizeof(what), "faults of class %s", fcls[k]);
        same(what, fe ? jget(fe, fcls[k]) : -2, fs ? jget(fs, fcls[k]) : -3);
    }
    same("bad_lines", 0, jget(scan, "bad_lines"));
    same("late_endpoints", 0, jget(scan, "late_endpoints"));
    free(exp);
    free(scan);
    if (!g_bad)
        printf("OK %s: outputs in %s match the expected answers\n", prv, outdir);
    return g_bad;
}
