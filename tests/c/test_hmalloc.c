/* test_hmalloc.c — libhmalloc.so end to end: the things that must never happen when
 * it is preloaded into a program (docs/formats.md §6). The program is hmalloc_app
 * (hmalloc_app.c; its sites and their sizes in hmalloc_app.h). Its call-site chains
 * are learned by running it under libsite_probe.so (site_probe.c: each chain as
 * collect computes it, keyed by the request size that site alone uses), placement.txt
 * files are written from them, and the app is run with LD_PRELOAD=libhmalloc.so of
 * the same build (build-san's under make SAN=1).
 *
 * Checked on behaviour and data only: exit status, stdout/stderr against a run
 * without the library, the app's own content checks and checksum, the statistics
 * JSON (HMTUNE_STATS), and the number of `hmalloc:` lines. Every child runs under a
 * timeout in a process group of its own (a hang fails, nothing is left behind), and
 * any ASan/UBSan report in a child fails the test. Under ASan the children get
 * verify_asan_link_order=0 (libhmalloc comes before libasan: the app calls our malloc,
 * our fallback is ASan's), detect_leaks=0, and allocator_may_return_null=1 (the runs
 * without libhmalloc make the same invalid posix_memalign/calloc/reallocarray calls,
 * which must fail with EINVAL/ENOMEM there too instead of aborting).
 *
 * Cases: output and exit status unchanged (summary off: byte-identical stderr; on:
 * identical without the `hmalloc` lines); unusable placements (unset, missing, empty,
 * garbled, NUL byte, wrong version, a FIFO or a device, another program, another
 * build, a `program` line naming another program) give one warning (none in a process
 * that is not the target) and place nothing, and a process that is not the target
 * (HMTUNE_TARGET, or the `program` line) places nothing and writes no statistics;
 * the whole malloc family on thp, numa:0, memkind:MEMKIND_HBW, hugetlb, umf:numa:0 and
 * umf:hugetlb (UMF from `make deps`), with
 * moves between two tiers and glibc, overflows from listed sites, alignment, usable
 * sizes, malloc(0); a tier smaller than its site (umf tiers too), and a hugetlb pool
 * smaller than its tier; unavailable backends; 16 threads freeing each other's blocks
 * (umf tiers too); fork (umf tiers too)
 * (children free inherited blocks, dlopen, place, and never report); sites in a
 * dlopen'ed library, a copy of it at the same address, a plugin-only placement;
 * allocations from constructors (the app's, a linked library's that runs before
 * libhmalloc's) and from threads they start; a static array bound to numa:0 at
 * start-up beside a static line whose module is not loaded (one warning).
 *
 * hugetlb: hugepages are reserved through /proc/sys/vm/nr_hugepages for its cases
 * and the old value restored; when that is not possible those cases are skipped. */
#include "hmt.h"
#include "hmalloc_app.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if !defined(HMT_APP) || !defined(HMT_DL) || !defined(HMT_EARLY) || !defined(HMT_PROBE) || \
    !defined(HMT_HMALLOC)
#error "build with -DHMT_APP, -DHMT_DL, -DHMT_EARLY, -DHMT_PROBE, -DHMT_HMALLOC (tests/c/build.mk)"
#endif

#ifdef __SANITIZE_ADDRESS__
#define SAN 1
#ifndef CHILD_TIMEOUT_MS
#define CHILD_TIMEOUT_MS 60000
#endif
#else
#define SAN 0
#ifndef CHILD_TIMEOUT_MS
#define CHILD_TIMEOUT_MS 20000
#endif
#endif

#define DEPTH 8                 /* placement depth; the app's sites are deeper */
#define MiB (1ull << 20)
#define CHAIN_MAX 4096

static char g_dir[256];
static char g_app[PATH_MAX], g_dl[PATH_MAX], g_early[PATH_MAX];
static char g_dl_copy[PATH_MAX];               /* libhmalloc_dl.so under another path */
static char g_chain[HA_NSITES][CHAIN_MAX];     /* "" until learned */
static int g_line[HA_NSITES];                  /* line of the site in the last placement */

/* ---- files ---- */

static char *slurp(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 8192, n = 0;
    char *b = malloc(cap + 1);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            b = realloc(b, cap + 1);
        }
        ssize_t k = read(fd, b + n, cap - n);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    close(fd);
    b[n] = '\0';
    if (len)
        *len = n;
    return b;
}

static void spit(const char *path, const char *text, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, text, len) != (ssize_t)len)
        fprintf(stderr, "  cannot write %s: %s\n", path, strerror(errno));
    if (fd >= 0)
        close(fd);
}

static void in_dir(char *dst, const char *name)
{
    snprintf(dst, PATH_MAX, "%s/%s", g_dir, name);
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

/* ---- running the app ---- */

struct run {
    int status, timed_out;
    char *out, *err;
    size_t out_len, err_len;
};

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

static long ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Run prog MODE [ARG [ARG2]] with preload (or none) and env ("K=V"..., NULL) on top
 * of a clean environment; stdout and stderr captured. */
static void run_prog(struct run *r, const char *prog, const char *preload, const char *mode,
                     const char *arg, const char *arg2, const char *const *env)
{
    memset(r, 0, sizeof *r);
    char outp[PATH_MAX], errp[PATH_MAX];
    in_dir(outp, "stdout");
    in_dir(errp, "stderr");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0)
            _exit(126);
        dup2(o, 1);
        dup2(e, 2);
        close(o);
        close(e);
        static const char *const clear[] = {
            "LD_PRELOAD", "HMTUNE_PLACEMENT", "HMTUNE_STATS", "HMTUNE_SUMMARY", "HMTUNE_TARGET",
            "HMT_INFO", "HMT_PROBE_OUT", "HMT_PROBE_LO", "HMT_PROBE_HI", "HMT_PROBE_DEPTH",
            "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", NULL,
        };
        for (int i = 0; clear[i]; i++)
            unsetenv(clear[i]);
        setenv("MEMKIND_HBW_NODES", "0", 1);
        if (SAN) {
            setenv("ASAN_OPTIONS",
                   "verify_asan_link_order=0:detect_leaks=0:allocator_may_return_null=1", 1);
            setenv("UBSAN_OPTIONS", "print_stacktrace=1", 1);
        }
        for (int i = 0; env && env[i]; i++) {
            char kv[3 * PATH_MAX];
            snprintf(kv, sizeof kv, "%s", env[i]);
            char *eq = strchr(kv, '=');
            if (!eq)
                continue;
            *eq = '\0';
            setenv(kv, eq + 1, 1);
        }
        if (preload)
            setenv("LD_PRELOAD", preload, 1);
        char *argv[] = { (char *)prog, (char *)mode, (char *)arg, (char *)arg2, NULL };
        execv(prog, argv);
        _exit(127);
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int st = 0;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid) {
            r->status = st;
            break;
        }
        if (w < 0 || ms_since(&t0) > CHILD_TIMEOUT_MS) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            r->status = st;
            r->timed_out = 1;
            break;
        }
        struct timespec nap = { 0, 2 * 1000 * 1000 };
        nanosleep(&nap, NULL);
    }
    kill(-pid, SIGKILL);            /* grandchildren of a failed run, if any */
    r->out = slurp(outp, &r->out_len);
    r->err = slurp(errp, &r->err_len);
    if (!r->out)
        r->out = calloc(1, 1);
    if (!r->err)
        r->err = calloc(1, 1);
}

/* hmalloc_app MODE [ARG [ARG2]] (run_prog). */
static void run_app(struct run *r, const char *preload, const char *mode, const char *arg,
                    const char *arg2, const char *const *env)
{
    run_prog(r, g_app, preload, mode, arg, arg2, env);
}

static void show_err(const struct run *r)
{
    fprintf(stderr, "  --- child stderr (%zu bytes) ---\n%.*s\n  ---\n", r->err_len,
            (int)(r->err_len > 6000 ? 6000 : r->err_len), r->err);
}

/* Finished in time, no sanitizer report. */
static int clean(const struct run *r, const char *what)
{
    int san = memmem(r->err, r->err_len, "ERROR: AddressSanitizer", 23) ||
              memmem(r->err, r->err_len, "runtime error", 13) ||
              memmem(r->err, r->err_len, "ERROR: LeakSanitizer", 20);
    if (r->timed_out || san) {
        fprintf(stderr, "  %s: %s\n", what, r->timed_out ? "timed out (hang)" : "sanitizer report");
        show_err(r);
    }
    return !r->timed_out && !san;
}

static int exited(const struct run *r, int code, const char *what)
{
    int ok = !r->timed_out && WIFEXITED(r->status) && WEXITSTATUS(r->status) == code;
    if (!ok) {
        if (WIFSIGNALED(r->status))
            fprintf(stderr, "  %s: killed by signal %d (want exit %d)\n", what, WTERMSIG(r->status), code);
        else
            fprintf(stderr, "  %s: exit %d (want %d)\n", what, WEXITSTATUS(r->status), code);
        show_err(r);
    }
    return ok;
}

static int same_text(const char *got, const char *want, const char *what)
{
    if (strcmp(got, want) == 0)
        return 1;
    fprintf(stderr, "  %s differs:\n  --- got ---\n%s\n  --- want ---\n%s\n  ---\n", what, got, want);
    return 0;
}

static int is_hm_line(const char *s)
{
    return !strncmp(s, "hmalloc: ", 9) || !strncmp(s, "hmalloc[", 8);
}

/* Lines of stderr starting `hmalloc: ` (or `hmalloc[rank N]: `). */
static int hm_lines(const struct run *r)
{
    int n = 0;
    for (const char *s = r->err; *s;) {
        n += is_hm_line(s);
        const char *nl = strchr(s, '\n');
        if (!nl)
            break;
        s = nl + 1;
    }
    return n;
}

/* stderr without the lines starting with `hmalloc` (malloc'd). */
static char *strip_hm(const struct run *r)
{
    char *o = malloc(r->err_len + 1);
    size_t k = 0;
    for (const char *s = r->err; *s;) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) + 1 : strlen(s);
        if (strncmp(s, "hmalloc", 7) != 0) {
            memcpy(o + k, s, len);
            k += len;
        }
        s += len;
    }
    o[k] = '\0';
    return o;
}

/* ---- the app's modes, their baselines and chains ---- */

enum { M_IO, M_FAMILY, M_CAP, M_THREADS, M_FORK, M_DL, M_BOOT, M_FD2, M_SPLIT, M_N };

static struct mode {
    const char *name;
    int first, last;            /* its sites */
    int code;                   /* exit status */
    struct run base;            /* without any preload */
} g_modes[M_N] = {
    { "io", HA_IO_MALLOC, HA_IO_CALLOC, 7, { 0 } },
    { "family", HA_F_MALLOC, HA_F_B_MALLOC, 0, { 0 } },
    { "cap", HA_CAP, HA_CAP, 0, { 0 } },
    { "threads", HA_T_MALLOC, HA_T_REALLOC, 0, { 0 } },
    { "fork", HA_K_PARENT, HA_K_CHILD, 0, { 0 } },
    { "dl", HA_D_LIB, HA_D_LIB_REALLOC, 0, { 0 } },
    { "boot", HA_B_CTOR, HA_E_CTOR, 0, { 0 } },
    { "fd2", HA_FD_MALLOC, HA_FD_MALLOC, 0, { 0 } },
    { "split", HA_S_CALLOC, HA_S_EXIT, 0, { 0 } },
};

static char g_fd2_file[PATH_MAX];               /* mode fd2's file */

static const char *mode_arg(int m)
{
    return m == M_DL || m == M_FORK ? g_dl : m == M_FD2 ? g_fd2_file : NULL;
}
static const char *mode_arg2(int m) { return m == M_DL ? g_dl_copy : NULL; }

/* The size window of a mode's sites: every one of them, listed or not, is in it. */
static void window(int m, size_t *lo, size_t *hi)
{
    *lo = SIZE_MAX;
    *hi = 0;
    for (int s = g_modes[m].first; s <= g_modes[m].last; s++) {
        if (ha_size[s] < *lo)
            *lo = ha_size[s];
        if (ha_size[s] > *hi)
            *hi = ha_size[s];
    }
    *hi += 8192;                /* pvalloc's page-rounded size */
}

/* Run mode m without preload (its baseline), then under the probe; keep the one
 * chain each of its sites has (innermost frame in the app, or in the dl library). */
static void learn(int m)
{
    struct mode *md = &g_modes[m];
    run_app(&md->base, NULL, md->name, mode_arg(m), mode_arg2(m), NULL);
    CHECK(clean(&md->base, md->name));
    CHECK(exited(&md->base, md->code, md->name));
    char want[64];
    snprintf(want, sizeof want, "%s errors=0 ", md->name);
    CHECK(strstr(md->base.out, want) != NULL);

    char out[PATH_MAX], e_out[PATH_MAX + 32], e_lo[64], e_hi[64], e_depth[64];
    in_dir(out, "probe.txt");
    unlink(out);
    size_t lo, hi;
    window(m, &lo, &hi);
    snprintf(e_out, sizeof e_out, "HMT_PROBE_OUT=%s", out);
    snprintf(e_lo, sizeof e_lo, "HMT_PROBE_LO=%zu", lo);
    snprintf(e_hi, sizeof e_hi, "HMT_PROBE_HI=%zu", hi);
    snprintf(e_depth, sizeof e_depth, "HMT_PROBE_DEPTH=%d", DEPTH);
    const char *env[] = { e_out, e_lo, e_hi, e_depth, NULL };
    struct run r;
    run_app(&r, HMT_PROBE, md->name, mode_arg(m), mode_arg2(m), env);
    CHECK(clean(&r, "probe run"));
    CHECK(exited(&r, md->code, "probe run"));
    CHECK(same_text(r.out, md->base.out, "stdout under the probe"));
    run_free(&r);

    char *text = slurp(out, NULL);
    CHECK(text != NULL);
    if (!text)
        return;
    for (int s = md->first; s <= md->last; s++) {
        const char *mod = (s == HA_D_LIB || s == HA_D_LIB_REALLOC) ? g_dl
                          : s == HA_E_CTOR                        ? g_early
                                                                  : g_app;
        char prefix[PATH_MAX + 8];
        snprintf(prefix, sizeof prefix, "%s+0x", mod);
        int found = 0;
        g_chain[s][0] = '\0';
        for (char *line = text; *line;) {
            char *nl = strchr(line, '\n');
            size_t len = nl ? (size_t)(nl - line) : strlen(line);
            char *end;
            unsigned long long size = strtoull(line, &end, 10);
            if (end > line && *end == ' ' && size == ha_size[s]) {
                const char *chain = end + 1;
                size_t cl = len - (size_t)(chain - line);
                if (cl < CHAIN_MAX && !strncmp(chain, prefix, strlen(prefix)) &&
                    (strlen(g_chain[s]) != cl || strncmp(g_chain[s], chain, cl) != 0)) {
                    found++;
                    memcpy(g_chain[s], chain, cl);
                    g_chain[s][cl] = '\0';
                }
            }
            if (!nl)
                break;
            line = nl + 1;
        }
        /* Under ASan neither the probe nor libhmalloc starts before its constructor,
         * which runs after libhmalloc_early's: that site is not seen there. */
        if (SAN && s == HA_E_CTOR && found == 0)
            continue;
        if (found != 1) {
            fprintf(stderr, "  mode %s: site %d (size %zu): %d chains under the probe\n", md->name,
                    s, ha_size[s], found);
            g_chain[s][0] = '\0';
        }
        CHECK(found == 1);
    }
    free(text);
}

/* ---- placement.txt ---- */

struct tier {
    const char *name, *backend;
    uint64_t cap;               /* 0: unlimited */
};

struct place {
    int site;
    const char *tier;
};
/* Sites written as v2 split lines with these RANGES (NULL: a site line). */
static const char *g_split[HA_NSITES];

/* Tiers t (the default tier is added last), the sites s; 0, or -1 when a chain is
 * unknown. */
static int write_placement(const char *path, const struct tier *t, int nt, const struct place *s,
                           int ns, size_t lo, size_t hi)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int line = 0, rc = 0, v2 = 0;
    for (int i = 0; i < ns; i++)
        v2 |= g_split[s[i].site] != NULL;
    fprintf(f, "# hmtune placement v%d\n# written by tests/c/test_hmalloc.c\n", v2 ? 2 : 1);
    line += 2;
    for (int i = 0; i < nt; i++, line++)
        fprintf(f, "tier %s %s %llu\n", t[i].name, t[i].backend, (unsigned long long)t[i].cap);
    fprintf(f, "tier default default unlimited\ndepth %d\nsize-window %zu %zu\n", DEPTH, lo, hi);
    line += 3;
    memset(g_line, 0, sizeof g_line);
    for (int i = 0; i < ns; i++) {
        if (!g_chain[s[i].site][0]) {
            fprintf(stderr, "  no chain for site %d\n", s[i].site);
            rc = -1;
            continue;
        }
        if (g_split[s[i].site])
            fprintf(f, "split %s %s %s   # site %d, %zu bytes\n", s[i].tier, g_split[s[i].site],
                    g_chain[s[i].site], s[i].site, ha_size[s[i].site]);
        else
            fprintf(f, "site %s %s   # site %d, %zu bytes\n", s[i].tier, g_chain[s[i].site],
                    s[i].site, ha_size[s[i].site]);
        g_line[s[i].site] = ++line;
    }
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

/* ---- the statistics JSON and the app's info file ---- */

static long long num_after(const char *from, const char *end, const char *field)
{
    char key[96];
    snprintf(key, sizeof key, "\"%s\": ", field);
    const char *p = strstr(from, key);
    if (!p || (end && p >= end))
        return -1;
    p += strlen(key);
    if (!strncmp(p, "true", 4))
        return 1;
    if (!strncmp(p, "false", 5))
        return 0;
    if (!strncmp(p, "null", 4))
        return -2;
    return strtoll(p, NULL, 10);
}

/* A field of the tier object named tier (-1: missing). */
static long long tier_f(const char *js, const char *tier, const char *field)
{
    if (!js)
        return -1;
    char key[128];
    snprintf(key, sizeof key, "{\"name\": \"%s\"", tier);
    const char *p = strstr(js, key);
    if (!p)
        return -1;
    const char *end = strstr(p + 1, "{\"name\": ");
    const char *sites = strstr(p, "\"sites\"");
    if (!end || (sites && sites < end))
        end = sites;
    return num_after(p, end, field);
}

/* A field of the site object of placement line `line`. */
static long long site_f(const char *js, int line, const char *field)
{
    if (!js || line <= 0)
        return -1;
    char key[64];
    snprintf(key, sizeof key, "{\"line\": %d,", line);
    const char *p = strstr(js, key);
    if (!p)
        return -1;
    return num_after(p, strstr(p + 1, "{\"line\": "), field);
}

static long long top_f(const char *js, const char *field)
{
    return js ? num_after(js, strstr(js, "\"tiers\""), field) : -1;
}

/* "key value" from the app's HMT_INFO file (-1: missing). */
static long long info_f(const char *info, const char *key)
{
    if (!info)
        return -1;
    size_t kl = strlen(key);
    for (const char *s = info; *s;) {
        if (!strncmp(s, key, kl) && s[kl] == ' ')
            return strtoll(s + kl + 1, NULL, 10);
        const char *nl = strchr(s, '\n');
        if (!nl)
            break;
        s = nl + 1;
    }
    return -1;
}

/* Report the JSON when a check on it fails. */
static void show_json(const char *js)
{
    fprintf(stderr, "  --- stats ---\n%s\n  ---\n", js ? js : "(no statistics file)");
}

#define CHECK_EQ(got, want)                                                           \
    do {                                                                              \
        long long g_ = (got), w_ = (want);                                            \
        if (g_ != w_)                                                                 \
            fprintf(stderr, "  %s = %lld, want %lld\n", #got, g_, w_);                \
        CHECK(g_ == w_);                                                              \
    } while (0)

/* A placed run: placement file, stats and info paths, summary off unless asked. */
struct placed {
    char placement[PATH_MAX], stats[PATH_MAX], info[PATH_MAX];
    struct run r;
    char *js, *inf;
};

static void placed_run(struct placed *p, int m, int summary, const char *const *extra)
{
    in_dir(p->stats, "stats.json");
    in_dir(p->info, "info.txt");
    unlink(p->stats);
    unlink(p->info);
    char e_pl[PATH_MAX + 32], e_st[PATH_MAX + 32], e_in[PATH_MAX + 32];
    snprintf(e_pl, sizeof e_pl, "HMTUNE_PLACEMENT=%s", p->placement);
    snprintf(e_st, sizeof e_st, "HMTUNE_STATS=%s", p->stats);
    snprintf(e_in, sizeof e_in, "HMT_INFO=%s", p->info);
    const char *env[8] = { e_pl, e_st, e_in, summary ? "HMTUNE_SUMMARY=1" : "HMTUNE_SUMMARY=0" };
    int k = 4;
    for (int i = 0; extra && extra[i] && k < 7; i++)
        env[k++] = extra[i];
    env[k] = NULL;
    run_app(&p->r, HMT_HMALLOC, g_modes[m].name, mode_arg(m), mode_arg2(m), env);
    p->js = slurp(p->stats, NULL);
    p->inf = slurp(p->info, NULL);
}

static void placed_free(struct placed *p)
{
    run_free(&p->r);
    free(p->js);
    free(p->inf);
    p->js = p->inf = NULL;
}

/* The app behaved as without the library: in time, no sanitizer report, same exit
 * status and stdout (its checks and checksum), and with the summary off the same
 * stderr and no hmalloc line. */
static void same_as_base(const struct placed *p, int m, const char *what)
{
    const struct mode *md = &g_modes[m];
    CHECK(clean(&p->r, what));
    CHECK(exited(&p->r, md->code, what));
    CHECK(same_text(p->r.out, md->base.out, "stdout"));
    CHECK(same_text(p->r.err, md->base.err, "stderr"));
    CHECK_EQ(hm_lines(&p->r), 0);
}

/* ---- hugepages ---- */

static long g_huge_old = -1;

static void restore_hugepages(void)
{
    if (g_huge_old >= 0 && hmt_write_long(HMT_NR_HUGEPAGES, g_huge_old) != 0)
        fprintf(stderr, "  cannot restore %s to %ld\n", HMT_NR_HUGEPAGES, g_huge_old);
    g_huge_old = -1;
}

/* 1 when n more hugepages are free (the old count is restored by restore_hugepages). */
static int reserve_hugepages(long n)
{
    long old = hmt_huge_reserve(n);
    if (old < 0)
        return 0;
    g_huge_old = old;
    return 1;
}

/* ---- the cases ---- */

static void test_chains(void)
{
    for (int m = 0; m < M_N; m++)
        learn(m);
}

static const struct place io_sites[] = { { HA_IO_MALLOC, "a" }, { HA_IO_CALLOC, "a" } };

/* What a tier charges for an object of the small-object arena (up to 1 MiB on thp):
 * its size class, 16..512 in steps of 16, then 32 classes per doubling. */
static unsigned long long arena_class_bytes(size_t n)
{
    if (n <= 512)
        return n ? (n + 15) / 16 * 16 : 16;
    size_t lo = 512;
    while (lo * 2 < n)
        lo *= 2;
    size_t step = lo / 32;
    return lo + (n - lo + step - 1) / step * step;
}

/* Exit status, stdout and stderr are the program's: byte-identical with the summary
 * off; with it, identical once the `hmalloc` lines are removed. */
static void test_output_unchanged(void)
{
    struct placed p;
    size_t lo, hi;
    window(M_IO, &lo, &hi);
    in_dir(p.placement, "placement.txt");
    struct tier t[] = { { "a", "thp", 64 * MiB } };
    CHECK(write_placement(p.placement, t, 1, io_sites, 2, lo, hi) == 0);

    placed_run(&p, M_IO, 0, NULL);
    same_as_base(&p, M_IO, "io, summary off");
    CHECK_EQ(tier_f(p.js, "a", "placed_blocks"), 2);          /* it did place */
    CHECK_EQ(tier_f(p.js, "a", "freed_blocks"), 1);           /* one stays live */
    CHECK_EQ(tier_f(p.js, "a", "used_bytes_at_exit"), arena_class_bytes(ha_size[HA_IO_CALLOC]));
    CHECK_EQ(tier_f(p.js, "a", "blocks_checked"), 2);         /* freed, and live at exit */
    CHECK_EQ(tier_f(p.js, "a", "bytes_checked"), ha_size[HA_IO_MALLOC] + ha_size[HA_IO_CALLOC]);
    placed_free(&p);

    placed_run(&p, M_IO, 1, NULL);
    CHECK(clean(&p.r, "io, summary on"));
    CHECK(exited(&p.r, 7, "io, summary on"));
    CHECK(same_text(p.r.out, g_modes[M_IO].base.out, "stdout"));
    char *app = strip_hm(&p.r);
    CHECK(same_text(app, g_modes[M_IO].base.err, "stderr without the hmalloc lines"));
    free(app);
    CHECK(hm_lines(&p.r) >= 1);
    CHECK_EQ(tier_f(p.js, "a", "placed_blocks"), 2);
    placed_free(&p);

    /* statistics that cannot be written: one warning, nothing else changes */
    const char *nowhere[] = { "HMTUNE_STATS=/nonexistent-dir/stats.json", NULL };
    placed_run(&p, M_IO, 0, nowhere);
    CHECK(clean(&p.r, "io, statistics unwritable"));
    CHECK(exited(&p.r, 7, "io, statistics unwritable"));
    CHECK(same_text(p.r.out, g_modes[M_IO].base.out, "stdout"));
    app = strip_hm(&p.r);
    CHECK(same_text(app, g_modes[M_IO].base.err, "stderr without the hmalloc lines"));
    free(app);
    CHECK_EQ(hm_lines(&p.r), 1);
    placed_free(&p);

    /* under MPI: the statistics file gets the rank (%r, else .RANK), the summary
     * lines say which rank */
    char e_st[PATH_MAX + 32], want[PATH_MAX + 16];
    snprintf(e_st, sizeof e_st, "HMTUNE_STATS=%s/stats-%%r.json", g_dir);
    const char *mpi[] = { "OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4", e_st, NULL };
    placed_run(&p, M_IO, 1, mpi);
    CHECK(clean(&p.r, "io, rank 3"));
    CHECK(exited(&p.r, 7, "io, rank 3"));
    CHECK(same_text(p.r.out, g_modes[M_IO].base.out, "stdout"));
    app = strip_hm(&p.r);
    CHECK(same_text(app, g_modes[M_IO].base.err, "stderr without the hmalloc lines"));
    free(app);
    CHECK(hm_lines(&p.r) >= 1 && strstr(p.r.err, "hmalloc[rank 3]: ") != NULL);
    snprintf(want, sizeof want, "%s/stats-3.json", g_dir);
    char *js = slurp(want, NULL);
    CHECK(js != NULL);
    CHECK_EQ(top_f(js, "rank"), 3);
    CHECK_EQ(tier_f(js, "a", "placed_blocks"), 2);
    free(js);
    unlink(want);
    placed_free(&p);
}

/* The program closes stderr and opens a file of its own, which gets descriptor 2:
 * nothing of libhmalloc's (the exit summary) may land in that file. */
static void test_stderr_reused(void)
{
    char *want = slurp(g_fd2_file, NULL);       /* written by the baseline run */
    CHECK(want != NULL && strstr(want, "record 3") != NULL);
    struct placed p;
    size_t lo, hi;
    window(M_FD2, &lo, &hi);
    in_dir(p.placement, "placement.txt");
    struct tier t[] = { { "a", "thp", 64 * MiB } };
    struct place s[] = { { HA_FD_MALLOC, "a" } };
    CHECK(write_placement(p.placement, t, 1, s, 1, lo, hi) == 0);
    unlink(g_fd2_file);
    placed_run(&p, M_FD2, 1, NULL);                 /* summary on */
    CHECK(clean(&p.r, "fd2"));
    CHECK(exited(&p.r, 0, "fd2"));
    CHECK(same_text(p.r.out, g_modes[M_FD2].base.out, "stdout"));
    CHECK_EQ(tier_f(p.js, "a", "placed_blocks"), 4);
    char *got = slurp(g_fd2_file, NULL);
    CHECK(got != NULL && want != NULL);
    if (got && want)
        CHECK(same_text(got, want, "the application's file on descriptor 2"));
    free(got);
    free(want);
    placed_free(&p);
}

/* A placement that cannot be used: one warning line, everything passes through. */
static void bad_case_env(const char *what, const char *text, size_t len, int set,
                         const char *extra, int want_lines);

static void bad_case(const char *what, const char *text, size_t len, int set)
{
    bad_case_env(what, text, len, set, NULL, 1);
}

/* The same with one more variable (HMTUNE_TARGET) and want_lines warning lines. */
static void bad_case_env(const char *what, const char *text, size_t len, int set,
                         const char *extra, int want_lines)
{
    struct placed p;
    in_dir(p.placement, "bad-placement.txt");
    unlink(p.placement);
    if (text)
        spit(p.placement, text, len);
    in_dir(p.stats, "stats.json");
    unlink(p.stats);
    char e_pl[PATH_MAX + 32], e_st[PATH_MAX + 32];
    snprintf(e_pl, sizeof e_pl, "HMTUNE_PLACEMENT=%s", p.placement);
    snprintf(e_st, sizeof e_st, "HMTUNE_STATS=%s", p.stats);
    const char *env[] = { e_st, extra ? extra : e_st, set ? e_pl : NULL, NULL };
    struct run r;
    run_app(&r, HMT_HMALLOC, "io", NULL, NULL, env);
    CHECK(clean(&r, what));
    CHECK(exited(&r, 7, what));
    CHECK(same_text(r.out, g_modes[M_IO].base.out, "stdout"));
    char *app = strip_hm(&r);
    CHECK(same_text(app, g_modes[M_IO].base.err, "stderr without the hmalloc lines"));
    free(app);
    int n = hm_lines(&r);
    if (n != want_lines) {
        fprintf(stderr, "  %s: %d hmalloc lines, want %d\n", what, n, want_lines);
        show_err(&r);
    }
    CHECK(n == want_lines);
    CHECK(!exists(p.stats));        /* nothing placed, nothing to report */
    run_free(&r);
}

static void test_bad_placement(void)
{
    char good[16384], text[20000];
    size_t lo, hi;
    window(M_IO, &lo, &hi);
    snprintf(good, sizeof good, "tier a thp 67108864\ntier default default unlimited\n"
             "depth %d\nsize-window %zu %zu\nsite a %s\nsite a %s\n", DEPTH, lo, hi,
             g_chain[HA_IO_MALLOC], g_chain[HA_IO_CALLOC]);
    bad_case("HMTUNE_PLACEMENT unset", NULL, 0, 0);
    bad_case("missing file", NULL, 0, 1);
    bad_case("empty file", "", 0, 1);
    bad_case_env("a directory", NULL, 0, 0, "HMTUNE_PLACEMENT=/", 1);
    static char longp[PATH_MAX + 200] = "HMTUNE_PLACEMENT=/";
    for (size_t i = strlen(longp); i < sizeof longp - 1; i++)
        longp[i] = i % 100 ? 'x' : '/';
    bad_case_env("a path too long", NULL, 0, 0, longp, 1);
    static const char garbled[] = "# hmtune placement v1\ntier a thp lots\nsite ??? \x01\x02\n"
                                  "\xff\xfe garbage > > >\n";
    bad_case("garbled file", garbled, sizeof garbled - 1, 1);
    static const char nul[] = "# hmtune placement v1\ntier a thp 1\0\n";
    bad_case("NUL byte", nul, sizeof nul - 1, 1);
    int n = snprintf(text, sizeof text, "# hmtune placement v3\n%s", good);
    bad_case("wrong version", text, (size_t)n, 1);
    n = snprintf(text, sizeof text, "# hmtune placement v1\ntier a thp 67108864\n"
                 "tier default default unlimited\ndepth 2\nsize-window %zu %zu\n"
                 "site a /usr/bin/not-this-program+0x1234 > /usr/bin/not-this-program+0x5678\n",
                 lo, hi);
    bad_case("another program", text, (size_t)n, 1);
    n = snprintf(text, sizeof text, "# hmtune placement v1\ntier a thp 67108864\n"
                 "tier default default unlimited\ndepth 1\nsize-window %zu %zu\n"
                 "site a /usr/bin/env+0x1234\n", lo, hi);
    bad_case("another program that exists", text, (size_t)n, 1);
    n = snprintf(text, sizeof text, "# hmtune placement v1\ntier a thp 67108864\n"
                 "tier default default unlimited\ndepth 1\nsize-window %zu %zu\nsite a %s+0x7ffffff0\n",
                 lo, hi, g_app);
    bad_case("another build", text, (size_t)n, 1);
    /* HMTUNE_TARGET names the program that warns: this one (by path or name), or
     * another one (then this process is a helper and stays silent) */
    bad_case_env("missing file, this target", NULL, 0, 1, "HMTUNE_TARGET=hmalloc_app", 1);
    char tgt[PATH_MAX + 32];
    snprintf(tgt, sizeof tgt, "HMTUNE_TARGET=%s", g_app);
    bad_case_env("missing file, this target by path", NULL, 0, 1, tgt, 1);
    bad_case_env("missing file, another target", NULL, 0, 1, "HMTUNE_TARGET=mpirun", 0);
    bad_case_env("garbled file, another target", garbled, sizeof garbled - 1, 1,
                 "HMTUNE_TARGET=sh", 0);
    /* not a regular file: a FIFO without a writer would block open(2) in the
     * constructor forever; a device is refused as well */
    char fifo[PATH_MAX], e_fifo[PATH_MAX + 32];
    in_dir(fifo, "placement.fifo");
    unlink(fifo);
    CHECK(mkfifo(fifo, 0600) == 0);
    snprintf(e_fifo, sizeof e_fifo, "HMTUNE_PLACEMENT=%s", fifo);
    bad_case_env("a FIFO", NULL, 0, 0, e_fifo, 1);
    bad_case_env("/dev/zero", NULL, 0, 0, "HMTUNE_PLACEMENT=/dev/zero", 1);
    unlink(fifo);
    /* only the program the placement was made for places and reports: a good placement
     * in a process that is not the target (a helper: env, timeout, a shell) passes
     * everything through and writes no statistics, silently */
    n = snprintf(text, sizeof text, "# hmtune placement v1\n%s", good);
    bad_case_env("good placement, another target", text, (size_t)n, 1, "HMTUNE_TARGET=sh", 0);
    bad_case_env("good placement, another target by path", text, (size_t)n, 1,
                 "HMTUNE_TARGET=/usr/bin/env", 0);
    /* ... and with a `program` line naming another program: the target warns */
    n = snprintf(text, sizeof text, "# hmtune placement v1\nprogram /usr/bin/env\n%s", good);
    bad_case("program line of another program", text, (size_t)n, 1);
    bad_case_env("program line of another program, another target", text, (size_t)n, 1,
                 "HMTUNE_TARGET=env", 0);
    /* sanity: the good body with the right header places (so the cases above failed
     * for the reason they were meant to) */
    n = snprintf(text, sizeof text, "# hmtune placement v1\n%s", good);
    struct placed p;
    in_dir(p.placement, "placement.txt");
    spit(p.placement, text, (size_t)n);
    placed_run(&p, M_IO, 0, NULL);
    same_as_base(&p, M_IO, "good placement");
    CHECK_EQ(tier_f(p.js, "a", "placed_blocks"), 2);
    placed_free(&p);
    /* a program line naming this program, by a symbolic link to it, places whatever
     * HMTUNE_TARGET says: the line decides */
    char link[PATH_MAX];
    in_dir(link, "app-link");
    unlink(link);
    CHECK(symlink(g_app, link) == 0);
    n = snprintf(text, sizeof text, "# hmtune placement v1\nprogram %s\n%s", link, good);
    spit(p.placement, text, (size_t)n);
    const char *other[] = { "HMTUNE_TARGET=sh", NULL };
    placed_run(&p, M_IO, 0, other);
    same_as_base(&p, M_IO, "program line naming this program");
    CHECK_EQ(tier_f(p.js, "a", "placed_blocks"), 2);
    placed_free(&p);
    unlink(link);
}

/* The family on tier a (backend), with tier b (other) for moves between tiers. */
static void family(const char *backend, const char *other, int huge)
{
    static const struct place s[] = {
        { HA_F_MALLOC, "a" }, { HA_F_INPLACE, "a" }, { HA_F_TO_B, "b" }, { HA_F_BACK_A, "a" },
        { HA_F_LIBC_TO_A, "a" }, { HA_F_RARRAY, "b" }, { HA_F_DIRTY, "a" }, { HA_F_CALLOC, "a" },
        { HA_F_ZERO_SRC, "a" }, { HA_F_CFREE, "a" }, { HA_F_PMEMALIGN, "a" },
        { HA_F_ALIGNED, "a" }, { HA_F_MEMALIGN, "a" }, { HA_F_VALLOC, "a" },
        { HA_F_PVALLOC, "a" }, { HA_F_REALLOC_NULL, "a" }, { HA_F_RARRAY_NULL, "a" },
        { HA_F_MALLOC0, "a" }, { HA_F_B_MALLOC, "b" },
    };
    const int ns = (int)(sizeof s / sizeof s[0]);
    struct placed p;
    size_t lo, hi;
    window(M_FAMILY, &lo, &hi);
    in_dir(p.placement, "placement.txt");
    struct tier t[] = { { "a", backend, (huge ? 30 : 256) * MiB }, { "b", other, 256 * MiB } };
    CHECK(write_placement(p.placement, t, 2, s, ns, lo, hi) == 0);
    placed_run(&p, M_FAMILY, 0, NULL);
    same_as_base(&p, M_FAMILY, backend);
    CHECK_EQ(info_f(p.inf, "inplace_same"), 1);      /* grew in place in its tier */
    CHECK_EQ(info_f(p.inf, "cfree_bound"), 1);
    int before = hmt_failed_checks;
    /* a: malloc, the realloc in place (counted as a block freed and one placed, as
     * the trace counts a realloc: hmi_backend.h), back to a, glibc to a, dirty,
     * calloc, zero src, cfree, the five aligned ones, realloc(NULL),
     * reallocarray(NULL) and three malloc(0) (on every backend: small objects go to
     * the tier's arena) */
    long long want_a = 18;
    CHECK_EQ(tier_f(p.js, "a", "available"), 1);
    CHECK_EQ(tier_f(p.js, "a", "placed_blocks"), want_a);
    CHECK_EQ(tier_f(p.js, "a", "freed_blocks"), want_a);
    CHECK_EQ(tier_f(p.js, "a", "used_bytes_at_exit"), 0);
    CHECK_EQ(tier_f(p.js, "a", "not_fitting"), 0);
    CHECK(tier_f(p.js, "a", "high_water_bytes") >= (long long)ha_size[HA_F_MEMALIGN]);
    CHECK(tier_f(p.js, "a", "blocks_checked") > 0);
    if (strcmp(backend, "thp") != 0)    /* thp: blocks under 2 MiB get no huge page */
        CHECK(tier_f(p.js, "a", "bytes_intended") > 0);
    /* b: to b, reallocarray to b, malloc b */
    CHECK_EQ(tier_f(p.js, "b", "placed_blocks"), 3);
    CHECK_EQ(tier_f(p.js, "b", "freed_blocks"), 3);
    CHECK_EQ(tier_f(p.js, "b", "used_bytes_at_exit"), 0);
    CHECK_EQ(tier_f(p.js, "default", "placed_blocks"), 0);
    for (int i = 0; i < ns; i++) {
        int site = s[i].site, line = g_line[site];
        long long calls = site == HA_F_MALLOC0 ? HA_MALLOC0_N : 1;
        long long placed = calls;
        long long got_m = site_f(p.js, line, "matches"), got_p = site_f(p.js, line, "placed");
        long long got_f = site_f(p.js, line, "fell_back");
        if (got_m != calls || got_p != placed || got_f != calls - placed)
            fprintf(stderr, "  %s: site %d (line %d, %zu bytes): matches %lld placed %lld "
                    "fell_back %lld, want %lld %lld %lld\n", backend, site, line, ha_size[site],
                    got_m, got_p, got_f, calls, placed, calls - placed);
        CHECK(got_m == calls && got_p == placed && got_f == calls - placed);
        /* placed_bytes sums the placed requests (pvalloc's: page-rounded or not) */
        long long bytes = site_f(p.js, line, "placed_bytes");
        long long lo_b = placed * (long long)ha_size[site], hi_b = lo_b;
        if (site == HA_F_PVALLOC)
            hi_b = placed * (long long)((ha_size[site] + 4095) & ~(size_t)4095);
        if (bytes < lo_b || bytes > hi_b)
            fprintf(stderr, "  %s: site %d (line %d): placed_bytes %lld, want %lld..%lld\n",
                    backend, site, line, bytes, lo_b, hi_b);
        CHECK(bytes >= lo_b && bytes <= hi_b);
    }
    if (hmt_failed_checks != before)
        show_json(p.js);
    placed_free(&p);
}

static void test_family_thp(void) { family("thp", "numa:0", 0); }
static void test_family_numa(void) { family("numa:0", "thp", 0); }
static void test_family_memkind(void) { family("memkind:MEMKIND_HBW", "thp", 0); }

static void test_family_umf(void)
{
    family("umf:numa:0", "thp", 0);
    if (!reserve_hugepages(16)) {
        fprintf(stderr, "  umf:hugetlb: cannot reserve 16 hugepages here: skipped\n");
        return;
    }
    family("umf:hugetlb", "thp", 1);
    restore_hugepages();
}

static void test_family_hugetlb(void)
{
    if (!reserve_hugepages(16)) {
        fprintf(stderr, "  hugetlb: cannot reserve 16 hugepages here: skipped\n");
        return;
    }
    family("hugetlb", "thp", 1);
    restore_hugepages();
}

/* A tier smaller than its site's total (or a hugetlb pool smaller than the tier):
 * fit blocks of each round of HA_CAP_N are placed, the rest falls back, the program
 * is right. */
static void capacity(const char *backend, uint64_t cap, int fit)
{
    struct placed p;
    size_t lo, hi;
    window(M_CAP, &lo, &hi);
    in_dir(p.placement, "placement.txt");
    struct tier t[] = { { "a", backend, cap } };
    struct place s[] = { { HA_CAP, "a" } };
    CHECK(write_placement(p.placement, t, 1, s, 1, lo, hi) == 0);
    placed_run(&p, M_CAP, 0, NULL);
    same_as_base(&p, M_CAP, backend);
    int before = hmt_failed_checks;
    CHECK_EQ(tier_f(p.js, "a", "placed_blocks"), 2 * fit);
    CHECK_EQ(tier_f(p.js, "a", "freed_blocks"), 2 * fit);
    CHECK_EQ(tier_f(p.js, "a", "not_fitting"), 2 * (HA_CAP_N - fit));
    CHECK(tier_f(p.js, "a", "high_water_bytes") <= (long long)cap);
    CHECK_EQ(tier_f(p.js, "a", "used_bytes_at_exit"), 0);
    CHECK_EQ(site_f(p.js, g_line[HA_CAP], "matches"), 2 * HA_CAP_N);
    CHECK_EQ(site_f(p.js, g_line[HA_CAP], "placed"), 2 * fit);
    CHECK_EQ(site_f(p.js, g_line[HA_CAP], "fell_back"), 2 * (HA_CAP_N - fit));
    if (hmt_failed_checks != before)
        show_json(p.js);
    placed_free(&p);
}

static void test_capacity(void)
{
    uint64_t page = (ha_size[HA_CAP] + 4095) & ~(size_t)4095;     /* thp: page-rounded */
    capacity("thp", 4 * page + page / 2, 4);
    capacity("memkind:MEMKIND_HBW", 4 * 1310720 + 655360, 4);     /* jemalloc's 1.25 MiB class */
    capacity("umf:numa:0", 4 * page + page / 2, 4);               /* page-rounded */
    if (!reserve_hugepages(16)) {
        fprintf(stderr, "  hugetlb: cannot reserve 16 hugepages here: skipped\n");
        return;
    }
    capacity("hugetlb", 9 * MiB, 4);                 /* 2 MiB a block */
    capacity("umf:hugetlb", 6 * MiB, 4);             /* 4 KiB pages, 6 MiB charged */
    restore_hugepages();
    /* the pool, not the tier, runs out: 3 free hugepages, a 1 GiB tier */
    long old = hmt_read_long(HMT_NR_HUGEPAGES);
    long fit = -1;
    if (old >= 0 && hmt_write_long(HMT_NR_HUGEPAGES, old + 3) == 0) {
        g_huge_old = old;
        fit = hmt_huge_free();
    }
    if (fit >= 0 && fit < HA_CAP_N)
        capacity("hugetlb", 1024 * MiB, (int)fit);
    else
        fprintf(stderr, "  hugetlb: cannot leave fewer than %d hugepages free: pool case skipped\n",
                HA_CAP_N);
    restore_hugepages();
}

/* A backend that cannot allocate: one warning, everything to glibc, right results. */
static void unavailable(const char *backend)
{
    struct placed p;
    size_t lo, hi;
    window(M_FAMILY, &lo, &hi);
    in_dir(p.placement, "placement.txt");
    struct tier t[] = { { "a", backend, 256 * MiB } };
    struct place s[HA_F_B_MALLOC + 1];
    int ns = 0;
    for (int i = HA_F_MALLOC; i <= HA_F_B_MALLOC; i++)
        if (i != HA_F_TO_LIBC && i != HA_F_LIBC_MALLOC)
            s[ns++] = (struct place){ i, "a" };
    CHECK(write_placement(p.placement, t, 1, s, ns, lo, hi) == 0);
    placed_run(&p, M_FAMILY, 0, NULL);
    CHECK(clean(&p.r, backend));
    CHECK(exited(&p.r, 0, backend));
    CHECK(same_text(p.r.out, g_modes[M_FAMILY].base.out, "stdout"));
    char *app = strip_hm(&p.r);
    CHECK(same_text(app, g_modes[M_FAMILY].base.err, "stderr without the hmalloc lines"));
    free(app);
    CHECK_EQ(hm_lines(&p.r), 1);
    CHECK_EQ(tier_f(p.js, "a", "available"), 0);
    CHECK_EQ(tier_f(p.js, "a", "placed_blocks"), 0);
    CHECK_EQ(tier_f(p.js, "default", "placed_blocks"), 0);
    for (int i = 0; i < ns; i++)
        CHECK_EQ(site_f(p.js, g_line[s[i].site], "placed"), 0);
    placed_free(&p);
}

static void test_unavailable_backend(void)
{
    unavailable("numa:7");
    unavailable("umf:numa:7");
    unavailable("memkind:MEMKIND_DAX_KMEM");
    if (hmt_huge_free() == 0)                        /* the usual state here */
        unavailable("hugetlb");
}

/* 16 threads, placed and unplaced blocks, each freed by another thread. */
static void threads(const char *backend, uint64_t cap)
{
    struct placed p;
    size_t lo, hi;
    window(M_THREADS, &lo, &hi);
    in_dir(p.placement, "placement.txt");
    struct tier t[] = { { "a", backend, cap } };
    struct place s[] = { { HA_T_MALLOC, "a" }, { HA_T_CALLOC, "a" }, { HA_T_REALLOC_SRC, "a" },
                         { HA_T_REALLOC, "a" } };
    CHECK(write_placement(p.placement, t, 1, s, 4, lo, hi) == 0);
    placed_run(&p, M_THREADS, 0, NULL);
    same_as_base(&p, M_THREADS, backend);
    int before = hmt_failed_checks;
    /* per thread and round: two of each placed site (HA_T_SLOTS / 4) */
    long long per_site = (long long)HA_T_THREADS * HA_T_ROUNDS * (HA_T_SLOTS / 4);
    CHECK_EQ(tier_f(p.js, "a", "placed_blocks"), 4 * per_site);
    CHECK_EQ(tier_f(p.js, "a", "freed_blocks"), 4 * per_site);
    CHECK_EQ(tier_f(p.js, "a", "used_bytes_at_exit"), 0);
    CHECK_EQ(tier_f(p.js, "a", "not_fitting"), 0);
    for (int i = 0; i < 4; i++) {
        CHECK_EQ(site_f(p.js, g_line[s[i].site], "matches"), per_site);
        CHECK_EQ(site_f(p.js, g_line[s[i].site], "placed"), per_site);
    }
    CHECK(top_f(p.js, "unmatched_in_window") >= per_site);      /* HA_T_UNPLACED */
    if (hmt_failed_checks != before)
        show_json(p.js);
    placed_free(&p);
}

static void test_threads(void)
{
    threads("thp", 1024 * MiB);
    threads("memkind:MEMKIND_HBW", 1024 * MiB);
    threads("umf:numa:0", 1024 * MiB);
    if (reserve_hugepages(40)) {                    /* umf:hugetlb maps its capacity */
        threads("umf:hugetlb", 64 * MiB);
        restore_hugepages();
    } else {
        fprintf(stderr, "  umf:hugetlb: cannot reserve 40 hugepages here: skipped\n");
    }
}

/* fork: children free inherited blocks and place their own; the parent reports. */
static void forking(const char *backend, uint64_t cap)
{
    struct placed p;
    size_t lo, hi;
    window(M_FORK, &lo, &hi);
    in_dir(p.placement, "placement.txt");
    struct tier t[] = { { "a", backend, cap } };
    struct place s[] = { { HA_K_PARENT, "a" }, { HA_K_THREAD, "a" }, { HA_K_CHILD, "a" } };
    CHECK(write_placement(p.placement, t, 1, s, 3, lo, hi) == 0);
    placed_run(&p, M_FORK, 0, NULL);
    same_as_base(&p, M_FORK, backend);
    int before = hmt_failed_checks;
    long long bg = info_f(p.inf, "bg_allocs");
    CHECK(bg >= 5 * HA_K_CHILDREN);
    CHECK_EQ(top_f(p.js, "pid"), info_f(p.inf, "pid"));         /* written by the parent */
    CHECK_EQ(tier_f(p.js, "a", "placed_blocks"), HA_K_NPARENT + bg);
    CHECK_EQ(tier_f(p.js, "a", "freed_blocks"), HA_K_NPARENT + bg);
    CHECK_EQ(tier_f(p.js, "a", "used_bytes_at_exit"), 0);
    CHECK_EQ(site_f(p.js, g_line[HA_K_PARENT], "placed"), HA_K_NPARENT);
    CHECK_EQ(site_f(p.js, g_line[HA_K_THREAD], "placed"), bg);
    CHECK_EQ(site_f(p.js, g_line[HA_K_CHILD], "matches"), 0);   /* children's counts */
    if (hmt_failed_checks != before)
        show_json(p.js);
    DIR *d = opendir(g_dir);
    for (struct dirent *e; d && (e = readdir(d));)
        CHECK(strncmp(e->d_name, "stats.json.tmp.", 15) != 0);
    if (d)
        closedir(d);
    placed_free(&p);
}

static void test_fork(void)
{
    forking("thp", 1024 * MiB);
    forking("memkind:MEMKIND_HBW", 1024 * MiB);
    forking("umf:numa:0", 1024 * MiB);
    if (reserve_hugepages(40)) {
        forking("umf:hugetlb", 64 * MiB);
        restore_hugepages();
    } else {
        fprintf(stderr, "  umf:hugetlb: cannot reserve 40 hugepages here: skipped\n");
    }
}

/* Sites inside a dlopen'ed library; dlclose, a copy of the library under another
 * path (unlisted: not placed, though its code likely sits at the addresses the
 * library had), the library again. */
static void dlopened(const char *backend)
{
    struct placed p;
    size_t lo, hi;
    window(M_DL, &lo, &hi);
    in_dir(p.placement, "placement.txt");
    struct tier t[] = { { "a", backend, 256 * MiB } };
    struct place s[] = { { HA_D_LIB, "a" }, { HA_D_LIB_REALLOC, "a" } };
    CHECK(write_placement(p.placement, t, 1, s, 2, lo, hi) == 0);
    placed_run(&p, M_DL, 0, NULL);
    same_as_base(&p, M_DL, backend);
    int before = hmt_failed_checks;
    CHECK_EQ(site_f(p.js, g_line[HA_D_LIB], "matches"), 2 * HA_D_N);
    CHECK_EQ(site_f(p.js, g_line[HA_D_LIB], "placed"), 2 * HA_D_N);
    CHECK_EQ(site_f(p.js, g_line[HA_D_LIB_REALLOC], "placed"), 2);
    CHECK_EQ(tier_f(p.js, "a", "placed_blocks"), 2 * HA_D_N + 2);
    CHECK_EQ(tier_f(p.js, "a", "freed_blocks"), 2 * HA_D_N + 2);
    CHECK(top_f(p.js, "unmatched_in_window") >= HA_D_N + 1);    /* the copy's calls */
    if (hmt_failed_checks != before)
        show_json(p.js);
    placed_free(&p);

    /* A placement of the plugin's sites only (depth 1: the frame in the library),
     * which is not loaded when libhmalloc starts: accepted, placed once dlopen'ed. */
    char text[4 * CHAIN_MAX + 512], f1[CHAIN_MAX], f2[CHAIN_MAX];
    snprintf(f1, sizeof f1, "%s", g_chain[HA_D_LIB]);
    snprintf(f2, sizeof f2, "%s", g_chain[HA_D_LIB_REALLOC]);
    if (strstr(f1, " > "))
        *strstr(f1, " > ") = '\0';
    if (strstr(f2, " > "))
        *strstr(f2, " > ") = '\0';
    int n = snprintf(text, sizeof text, "# hmtune placement v1\ntier a %s 268435456\n"
                     "tier default default unlimited\ndepth 1\nsize-window %zu %zu\n"
                     "site a %s\nsite a %s\n", backend, lo, hi, f1, f2);
    spit(p.placement, text, (size_t)n);
    placed_run(&p, M_DL, 0, NULL);
    same_as_base(&p, M_DL, "plugin-only placement");
    before = hmt_failed_checks;
    CHECK_EQ(site_f(p.js, 6, "placed"), 2 * HA_D_N);                /* line 6: HA_D_LIB */
    CHECK_EQ(site_f(p.js, 7, "placed"), 2);
    CHECK_EQ(tier_f(p.js, "a", "placed_blocks"), 2 * HA_D_N + 2);
    if (hmt_failed_checks != before)
        show_json(p.js);
    placed_free(&p);
}

static void test_dlopen(void)
{
    dlopened("thp");
    dlopened("memkind:MEMKIND_HBW");
    dlopened("umf:numa:0");
}

/* Allocations from a constructor and from threads it starts at once: no deadlock,
 * no recursion (a timeout fails the run), placed as listed. */
static void boot(const char *backend, int runs)
{
    struct placed p;
    size_t lo, hi;
    window(M_BOOT, &lo, &hi);
    in_dir(p.placement, "placement.txt");
    struct tier t[] = { { "a", backend, 256 * MiB } };
    struct place s[] = { { HA_B_CTOR, "a" }, { HA_B_THREAD, "a" }, { HA_E_CTOR, "a" } };
    int early = g_chain[HA_E_CTOR][0] != '\0';     /* not under ASan (learn) */
    CHECK(write_placement(p.placement, t, 1, s, early ? 3 : 2, lo, hi) == 0);
    long long want = HA_B_NCTOR + HA_B_THREADS * HA_B_ITERS + (early ? HA_E_N : 0);
    for (int i = 0; i < runs; i++) {
        placed_run(&p, M_BOOT, 0, NULL);
        same_as_base(&p, M_BOOT, backend);
        int before = hmt_failed_checks;
        CHECK_EQ(site_f(p.js, g_line[HA_B_CTOR], "placed"), HA_B_NCTOR);
        CHECK_EQ(site_f(p.js, g_line[HA_B_THREAD], "placed"), HA_B_THREADS * HA_B_ITERS);
        if (early)      /* before libhmalloc's constructor: the first call initialized */
            CHECK_EQ(site_f(p.js, g_line[HA_E_CTOR], "placed"), HA_E_N);
        CHECK_EQ(tier_f(p.js, "a", "placed_blocks"), want);
        CHECK_EQ(tier_f(p.js, "a", "freed_blocks"), want);
        if (hmt_failed_checks != before)
            show_json(p.js);
        placed_free(&p);
    }
}

static void test_bootstrap(void)
{
    boot("thp", 3);
    boot("memkind:MEMKIND_HBW", 2);
    boot("umf:numa:0", 2);                  /* libumf dlopen'ed by the first placed call */
    /* and with nothing to place: a missing placement */
    struct placed p;
    in_dir(p.placement, "no-such-placement.txt");
    unlink(p.placement);
    placed_run(&p, M_BOOT, 0, NULL);
    CHECK(clean(&p.r, "boot, missing placement"));
    CHECK(exited(&p.r, 0, "boot, missing placement"));
    CHECK(same_text(p.r.out, g_modes[M_BOOT].base.out, "stdout"));
    CHECK_EQ(hm_lines(&p.r), 1);
    placed_free(&p);
}

/* ---- main ---- */

/* ---- exit safety: placed memory stays valid until the process is gone ---- */

/* Bytes equal, NULs included (a placed stdio buffer torn down at exit reads as NULs). */
static int same_bytes(const char *got, size_t gl, const char *want, size_t wl, const char *what)
{
    if (gl == wl && memcmp(got, want, gl) == 0)
        return 1;
    size_t nul = 0;
    for (size_t i = 0; i < gl; i++)
        nul += got[i] == '\0';
    fprintf(stderr, "  %s differs: %zu bytes (%zu NUL) vs %zu\n  --- got ---\n%.*s\n"
            "  --- want ---\n%.*s\n  ---\n", what, gl, nul, wl, (int)(gl > 2000 ? 2000 : gl),
            got, (int)(wl > 2000 ? 2000 : wl), want);
    return 0;
}

static const struct exit_mode {
    const char *name;
    int code;
} exit_modes[] = {
    { "stdout", 0 }, { "setvbuf", 0 }, { "file", 0 }, { "atexit", 0 }, { "cxx", 0 },
    { "needed", 0 }, { "plugin", 0 }, { "thread", 7 }, { "fork", 0 },
};

/* Every request goes to tier fast (HMTUNE_BASELINE=all, compare's all-fast bound):
 * stdio's buffers, the blocks destructors read, libc's and the loader's own. */
static void exit_case(const struct exit_mode *m, const char *backend, const char *file,
                      const struct run *base, const char *base_file, size_t base_file_len)
{
    char pl[PATH_MAX], stats[PATH_MAX], what[160];
    in_dir(pl, "exit-placement.txt");
    in_dir(stats, "exit-stats.json");
    unlink(stats);
    unlink(file);
    char text[256];
    int n = snprintf(text, sizeof text, "# hmtune placement v1\ntier fast %s %llu\n"
                     "tier slow default unlimited\ndepth 1\nsize-window 0 0\n", backend, 256 * MiB);
    spit(pl, text, (size_t)n);
    char e_pl[PATH_MAX + 32], e_st[PATH_MAX + 32];
    snprintf(e_pl, sizeof e_pl, "HMTUNE_PLACEMENT=%s", pl);
    snprintf(e_st, sizeof e_st, "HMTUNE_STATS=%s", stats);
    const char *env[] = { e_pl, e_st, "HMTUNE_SUMMARY=0", "HMTUNE_BASELINE=all", NULL };
    struct run r;
    const char *arg = !strcmp(m->name, "file") ? file : !strcmp(m->name, "plugin") ? HMT_EXIT_PLUGIN : NULL;
    run_prog(&r, HMT_EXIT_APP, HMT_HMALLOC, m->name, arg, NULL, env);
    snprintf(what, sizeof what, "exit_app %s on %s", m->name, backend);
    CHECK(clean(&r, what));
    CHECK(exited(&r, m->code, what));
    CHECK(same_bytes(r.out, r.out_len, base->out, base->out_len, "stdout"));
    if (base_file) {
        size_t fl = 0;
        char *got = slurp(file, &fl);
        CHECK(got && same_bytes(got, fl, base_file, base_file_len, "the unclosed file"));
        free(got);
    }
    char *js = slurp(stats, NULL);
    /* not vacuous: something was placed (stdio's buffer among the rest, on every
     * backend) */
    long long placed = tier_f(js, "fast", "placed_blocks");
    if (placed < 1) {
        fprintf(stderr, "  %s: nothing placed\n", what);
        show_json(js);
    }
    CHECK(placed >= 1);
    free(js);
    run_free(&r);
}

/* A static line for the app's static array on numa:0, and one for a module that is not
 * loaded: the array's pages are bound before main (the app reads numa_maps), its
 * contents and the app's output unchanged, the other line left with one warning. */
static void test_static_variable(void)
{
    struct run base;
    char inf[PATH_MAX], e_in[PATH_MAX + 16];
    in_dir(inf, "static-info.txt");
    snprintf(e_in, sizeof e_in, "HMT_INFO=%s", inf);
    const char *env[] = { e_in, NULL };
    run_app(&base, NULL, "static", NULL, NULL, env);
    CHECK(clean(&base, "static") && exited(&base, 0, "static"));
    char *bi = slurp(inf, NULL);
    long long off = info_f(bi, "static_offset"), size = info_f(bi, "static_size");
    CHECK(off > 0 && size == 6 * MiB && info_f(bi, "static_bound") == 0);
    free(bi);
    struct placed p;
    in_dir(p.placement, "placement.txt");
    char text[2 * PATH_MAX + 512];
    int n = snprintf(text, sizeof text,
                     "# hmtune placement v1\ntier a numa:0 %llu\ntier default default unlimited\n"
                     "depth %d\nsize-window 0 0\nstatic a %lld %s+0x%llx\n"
                     "static a 4096 /nonexistent/libnone.so+0x1000\n",
                     64 * MiB, DEPTH, size, g_app, (unsigned long long)off);
    spit(p.placement, text, (size_t)n);
    in_dir(p.stats, "stats.json");
    in_dir(p.info, "info.txt");
    unlink(p.stats);
    unlink(p.info);
    char e_pl[PATH_MAX + 32], e_st[PATH_MAX + 32], e_pi[PATH_MAX + 32];
    snprintf(e_pl, sizeof e_pl, "HMTUNE_PLACEMENT=%s", p.placement);
    snprintf(e_st, sizeof e_st, "HMTUNE_STATS=%s", p.stats);
    snprintf(e_pi, sizeof e_pi, "HMT_INFO=%s", p.info);
    const char *penv[] = { e_pl, e_st, e_pi, "HMTUNE_SUMMARY=0", NULL };
    run_app(&p.r, HMT_HMALLOC, "static", NULL, NULL, penv);
    p.js = slurp(p.stats, NULL);
    p.inf = slurp(p.info, NULL);
    CHECK(clean(&p.r, "static placed") && exited(&p.r, 0, "static placed"));
    CHECK(same_text(p.r.out, base.out, "stdout"));
    CHECK_EQ(info_f(p.inf, "static_bound"), 1);
    CHECK_EQ(site_f(p.js, 6, "placed"), 1);
    CHECK_EQ(site_f(p.js, 7, "placed"), 0);
    CHECK_EQ(tier_f(p.js, "a", "static_placed"), 1);
    CHECK_EQ(tier_f(p.js, "a", "static_refused"), 1);
    CHECK_EQ(hm_lines(&p.r), 1);
    if (hmt_failed_checks)
        show_json(p.js);
    placed_free(&p);
    run_free(&base);
}

static void test_exit_safety(void)
{
    static const char *const backends[] = {
        "thp", "numa:0", "memkind:MEMKIND_HBW", "memkind:MEMKIND_DEFAULT", "hugetlb",
        "umf:numa:0", "umf:hugetlb",
    };
    int huge = reserve_hugepages(136);              /* umf:hugetlb maps its 256 MiB */
    if (!huge)
        fprintf(stderr, "  hugetlb: no hugepages could be reserved here: its cases not run\n");
    char file[PATH_MAX];
    in_dir(file, "exit-file.txt");
    for (size_t k = 0; k < sizeof exit_modes / sizeof exit_modes[0]; k++) {
        const struct exit_mode *m = &exit_modes[k];
        unlink(file);
        struct run base;
        int is_file = !strcmp(m->name, "file");
        run_prog(&base, HMT_EXIT_APP, NULL, m->name, is_file ? file
                 : !strcmp(m->name, "plugin") ? HMT_EXIT_PLUGIN : NULL, NULL, NULL);
        CHECK(exited(&base, m->code, m->name));
        CHECK(base.out_len > 0);
        size_t bfl = 0;
        char *bfile = is_file ? slurp(file, &bfl) : NULL;
        CHECK(!is_file || (bfile && bfl > 10000));
        for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
            if (!huge && strstr(backends[b], "hugetlb"))
                continue;
            exit_case(m, backends[b], file, &base, bfile, bfl);
        }
        free(bfile);
        run_free(&base);
    }
    restore_hugepages();
}

/* Split objects (placement v2): of each object of the mode's three sites only
 * [2 MiB, 6 MiB) goes to the tier, seen in smaps by the app (hugetlb: those pages
 * are 2 MiB ones; thp: AnonHugePages there, none elsewhere); calloc's object is zero,
 * a fork child reads and writes it, realloc grows it (to another split object), the
 * object live at exit is written by an atexit handler, and the statistics count the
 * ranges. With a capacity below the ranges, the first range is placed and the
 * second counted as not fitting. */
static void split_case(const char *backend, int hugetlb)
{
    struct placed p;
    size_t lo, hi;
    window(M_SPLIT, &lo, &hi);
    in_dir(p.placement, "placement.txt");
    const char *r = "2097152-6291456";
    struct tier t[] = { { "a", backend, 1024 * MiB } };
    struct place s[] = { { HA_S_CALLOC, "a" }, { HA_S_REALLOC, "a" }, { HA_S_EXIT, "a" } };
    g_split[HA_S_CALLOC] = g_split[HA_S_REALLOC] = g_split[HA_S_EXIT] = r;
    CHECK(write_placement(p.placement, t, 1, s, 3, lo, hi) == 0);
    placed_run(&p, M_SPLIT, 0, NULL);
    same_as_base(&p, M_SPLIT, backend);
    int before = hmt_failed_checks;
    CHECK(strstr(p.r.out, "split atexit errors=0 ") != NULL);
    CHECK_EQ(info_f(p.inf, "obj_aligned"), 1);
    const char *in = hugetlb ? "obj_huge_in" : "obj_thp_in";
    CHECK_EQ(info_f(p.inf, in), 4 * MiB);
    CHECK_EQ(info_f(p.inf, "obj_huge_out") + info_f(p.inf, "obj_thp_out"), 0);
    CHECK_EQ(info_f(p.inf, hugetlb ? "grown_huge_in" : "grown_thp_in"), 4 * MiB);
    CHECK_EQ(info_f(p.inf, "grown_huge_out") + info_f(p.inf, "grown_thp_out"), 0);
    if (!hugetlb)
        CHECK_EQ(info_f(p.inf, "obj_huge_in"), 0);
    CHECK_EQ(tier_f(p.js, "a", "placed_blocks"), 3);
    CHECK_EQ(tier_f(p.js, "a", "freed_blocks"), 2);
    CHECK_EQ(tier_f(p.js, "a", "split_placed"), 3);
    CHECK_EQ(tier_f(p.js, "a", "split_bytes"), 12 * MiB);
    CHECK_EQ(tier_f(p.js, "a", "split_ranges_not_fitting"), 0);
    CHECK_EQ(tier_f(p.js, "a", "used_bytes_at_exit"), 4 * MiB);     /* the exit object */
    CHECK_EQ(tier_f(p.js, "a", "high_water_bytes"), 8 * MiB);        /* during realloc */
    CHECK_EQ(tier_f(p.js, "a", "not_fitting"), 0);
    for (int k = 0; k < 3; k++) {
        CHECK_EQ(site_f(p.js, g_line[s[k].site], "placed"), 1);
        CHECK_EQ(site_f(p.js, g_line[s[k].site], "objects"), 1);
        CHECK_EQ(site_f(p.js, g_line[s[k].site], "start"), 2 * MiB);
        CHECK_EQ(site_f(p.js, g_line[s[k].site], "end"), 6 * MiB);
    }
    /* the range's bytes only (the rest of the object is not the tier's) */
    CHECK_EQ(tier_f(p.js, "a", "bytes_checked"), 12 * MiB);
    CHECK_EQ(tier_f(p.js, "a", "bytes_elsewhere"), 0);
    if (hmt_failed_checks != before)
        show_json(p.js);
    placed_free(&p);

    /* capacity 6 MiB: [0, 4 MiB) of the calloc'ed object fits, [6 MiB, 10 MiB) not */
    struct tier small[] = { { "a", backend, 6 * MiB } };
    struct place one[] = { { HA_S_CALLOC, "a" } };
    g_split[HA_S_CALLOC] = "0-4194304,6291456-10485760";
    CHECK(write_placement(p.placement, small, 1, one, 1, lo, hi) == 0);
    memset(g_split, 0, sizeof g_split);
    placed_run(&p, M_SPLIT, 1, NULL);
    CHECK(clean(&p.r, "split capacity"));
    CHECK(exited(&p.r, 0, "split capacity"));
    CHECK(same_text(p.r.out, g_modes[M_SPLIT].base.out, "stdout"));
    before = hmt_failed_checks;
    CHECK_EQ(tier_f(p.js, "a", "split_placed"), 1);
    CHECK_EQ(tier_f(p.js, "a", "split_bytes"), 4 * MiB);
    CHECK_EQ(tier_f(p.js, "a", "split_ranges_not_fitting"), 1);
    CHECK_EQ(tier_f(p.js, "a", "high_water_bytes"), 4 * MiB);
    CHECK_EQ(tier_f(p.js, "a", "used_bytes_at_exit"), 0);
    /* the site and its tier count what the tier holds of the object: its range */
    CHECK_EQ(site_f(p.js, g_line[HA_S_CALLOC], "placed_bytes"), 4 * MiB);
    CHECK_EQ(tier_f(p.js, "a", "placed_bytes"), 4 * MiB);
    CHECK(strstr(p.r.err, "split objects: 1 placed, 4.0 MiB in their ranges, 1 ranges did not fit")
          != NULL);
    CHECK(strstr(p.r.err, "range 6291456-10485760: 0 objects, 0 B placed") != NULL);
    CHECK(strstr(p.r.err, "range 0-4194304: 1 objects, 4.0 MiB placed") != NULL);
    if (hmt_failed_checks != before) {
        show_json(p.js);
        show_err(&p.r);
    }
    placed_free(&p);
}

static void test_split(void)
{
    split_case("thp", 0);
    if (reserve_hugepages(16))
        split_case("hugetlb", 1);
    else
        fprintf(stderr, "  hugetlb: cannot reserve 16 hugepages here: skipped\n");
    restore_hugepages();
}

static void remove_dir(void)
{
    DIR *d = opendir(g_dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[PATH_MAX + 300];
        snprintf(p, sizeof p, "%s/%s", g_dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(g_dir);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "%s/hmt-hmalloc-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_dir) || !realpath(HMT_APP, g_app) || !realpath(HMT_DL, g_dl) ||
        !realpath(HMT_EARLY, g_early) ||
        access(HMT_HMALLOC, R_OK) != 0 || access(HMT_PROBE, R_OK) != 0) {
        fprintf(stderr, "test_hmalloc: setup failed (%s): %s\n", g_dir, strerror(errno));
        printf("FAIL setup\n");
        return 1;
    }
    atexit(restore_hugepages);
    size_t dl_len = 0;
    char *dl_text = slurp(g_dl, &dl_len);
    snprintf(g_dl_copy, sizeof g_dl_copy, "%s/libhmalloc_dl_copy.so", g_dir);
    snprintf(g_fd2_file, sizeof g_fd2_file, "%s/fd2-data.txt", g_dir);
    if (dl_text)
        spit(g_dl_copy, dl_text, dl_len);
    free(dl_text);
    RUN(test_chains);
    RUN(test_output_unchanged);
    RUN(test_stderr_reused);
    RUN(test_bad_placement);
    RUN(test_family_thp);
    RUN(test_family_numa);
    RUN(test_family_memkind);
    RUN(test_family_hugetlb);
    RUN(test_family_umf);
    RUN(test_capacity);
    RUN(test_unavailable_backend);
    RUN(test_threads);
    RUN(test_fork);
    RUN(test_dlopen);
    RUN(test_bootstrap);
    RUN(test_static_variable);
    RUN(test_exit_safety);
    RUN(test_split);
    for (int m = 0; m < M_N; m++)
        run_free(&g_modes[m].base);
    remove_dir();
    HMT_END();
}
