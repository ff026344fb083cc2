/* ps_main.c — hmtune-prvscan: command line, the scan loop, errors, progress, and
 * the all-or-nothing output step.
 *
 *   hmtune-prvscan TRACE.prv[.gz] -o OUTDIR [--skip-bad] [--progress] [--per-thread-time]
 *                  [--lookahead] [--profile-granularity BYTES] [--phases N]
 *
 * Outputs (docs/formats.md): allocs.csv, the per-allocation table in its final form
 * (DESIGN.md §4); sites.tsv, one row per (task, site) with its lifetime facts and
 * sampled accesses; profile.csv, each site's sampled weight by offset in its blocks;
 * counters.csv, the hardware counters over the samples, threads and phases (its header
 * alone without counters); scan.json, the trace's totals. They are written under temporary names and
 * renamed only once all five are complete (scan.json last), so
 * a failed scan never leaves a half-written file that the Python layer could mistake
 * for a result. */
#include "ps.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *g_outs[] = { "allocs.csv", "sites.tsv", "profile.csv", "counters.csv",
                                "scan.json" };
enum { NOUT = 5 };
static char g_tmp[NOUT][PATH_MAX];     /* temp names to remove if we fail */
static char g_created_dir[PATH_MAX];   /* OUTDIR, when this run created it */
static int g_done;

static void cleanup(void)
{
    if (g_done)
        return;
    for (int i = 0; i < NOUT; i++)
        if (g_tmp[i][0])
            unlink(g_tmp[i]);
    if (g_created_dir[0])
        rmdir(g_created_dir);          /* only if still empty */
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* mkdir -p; remembers the outermost directory it created so a failure can undo it */
static int make_dirs(const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
        return errno = ENAMETOOLONG, -1;
    for (char *p = path + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(path, 0777) == 0) {
                if (!g_created_dir[0])
                    snprintf(g_created_dir, sizeof(g_created_dir), "%s", path);
            } else if (errno != EEXIST) {
                return -1;
            }
            *p = c;
            if (!c)
                break;
        }
    }
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return -1;
    if (!S_ISDIR(sb.st_mode))
        return errno = ENOTDIR, -1;
    return 0;
}

struct progress {
    int on, tty, shown;
    double t0, last;
};

static void progress_tick(struct progress *pg, struct ps_input *in, uint64_t records, int final)
{
    double t = now_s(), el = t - pg->t0;
    if (!pg->on || el <= 1.0)
        return;
    /* a terminal gets a live line 4x/s; a log file one line per 5 s, not thousands */
    if (!final && t - pg->last < (pg->tty ? 0.25 : 5.0))
        return;
    if (final && !pg->shown)
        return;
    pg->last = t;
    pg->shown = 1;
    double done = (double)ps_input_done(in), total = (double)ps_input_total(in);
    fprintf(stderr, "%shmtune-prvscan: %.1f/%.1f MB (%.0f%%), %.2f M records/s%s",
            pg->tty ? "\r" : "", done / 1e6, total / 1e6, total > 0 ? 100.0 * done / total : 100.0,
            (double)records / el / 1e6, pg->tty && !final ? "" : "\n");
}

static FILE *open_tmp(int i, const char *outdir)
{
    snprintf(g_tmp[i], sizeof(g_tmp[i]), "%s/.%s.tmp.%ld", outdir, g_outs[i], (long)getpid());
    FILE *f = fopen(g_tmp[i], "w");
    if (!f)
        ps_die("%s: cannot write: %s", g_tmp[i], strerror(errno));
    static char bufs[NOUT][1 << 20];   /* big stdio buffers: allocs.csv can be 100s of MB */
    setvbuf(f, bufs[i], _IOFBF, sizeof(bufs[i]));
    return f;
}

static void close_tmp(FILE *f, int i)
{
    if (fflush(f) != 0 || ferror(f) || fclose(f) != 0)
        ps_die("%s: write error: %s", g_tmp[i], strerror(errno));
}

struct scan {
    const char *path;
    int skip_bad;
    struct progress *pg;
    const struct ps_header *h;
    struct ps_stats *st;
    struct ps_model *m;
    struct ps_record r;
    uint64_t lineno, first_bad;
    char err[512], first_err[512];
};

/* The records of one run of whole lines [p, e) (see ps_input_lines). */
static void scan_run(struct scan *sc, const char *p, const char *e, int partial)
{
    struct ps_stats *st = sc->st;
    struct ps_record *r = &sc->r;
    while (p < e) {
        sc->lineno++;
        const char *what = NULL;
        if (PS_UNLIKELY(partial)) {
            what = "truncated last line (the file ends without a newline)";
            p = e;
        } else if (PS_UNLIKELY(ps_parse_line(p, r, &p, sc->err, sizeof(sc->err)) != 0)) {
            what = sc->err;
        } else if (PS_LIKELY(r->kind == PS_REC_EVENT)) {
            if (PS_UNLIKELY(ps_model_event(sc->m, r, sc->err, sizeof(sc->err)) != 0))
                what = sc->err;
            else
                st->events++;
        } else if (r->kind == PS_REC_STATE) {
            st->states++;
        } else if (r->kind == PS_REC_COMM) {
            st->comms++;
        } else {
            continue;                  /* blank, comment, communicator line */
        }
        if (PS_UNLIKELY(what != NULL)) {
            if (!sc->skip_bad) {
                if (sc->pg->shown && sc->pg->tty)
                    fputc('\n', stderr);
                fprintf(stderr, "%s:%llu: %s\n", sc->path, (unsigned long long)sc->lineno, what);
                exit(1);
            }
            if (!st->bad_lines++) {
                sc->first_bad = sc->lineno;
                snprintf(sc->first_err, sizeof(sc->first_err), "%s", what);
            }
            continue;
        }
        st->records++;
        /* Paramedir ignores records at or past the header's end; Extrae writes its
         * last one exactly there. Warn, keep them. */
        uint64_t t = r->v[4] * sc->h->scale;
        if (PS_UNLIKELY(t >= sc->h->end_ns))
            st->late_records++;
        if (t > st->max_time)
            st->max_time = t;
    }
}

static void usage(FILE *f)
{
    fputs("usage: hmtune-prvscan TRACE.prv[.gz] -o OUTDIR [--skip-bad]"
          " [--progress|--progress-live] [--per-thread-time] [--lookahead]\n"
          "       [--profile-granularity BYTES] [--phases N]\n"
          "Writes OUTDIR/allocs.csv, sites.tsv, profile.csv, counters.csv and scan.json\n"
          "(docs/formats.md).\n"
          "  --skip-bad         skip malformed lines (counted in scan.json bad_lines)\n"
          "  --progress         report progress on stderr when the scan takes over 1 s\n"
          "                     (a live line on a terminal, else a line every 5 s)\n"
          "  --progress-live    the live line even when stderr is a pipe (for a caller\n"
          "                     that relays it to a terminal)\n"
          "  --per-thread-time  the trace is time-sorted per thread only, not globally\n"
          "  --lookahead        attribute samples whose address came from the software\n"
          "                     sampler's look ahead (" HM_EV_STR(HM_EV_SAMPLE_RECOVERED)
          " = 2) to their objects\n"
          "  --profile-granularity BYTES\n"
          "                     profile.csv's bucket size: a power of two from 4096 to\n"
          "                     1073741824 (default 4096)\n"
          "  --phases N         counters.csv's phases: the run cut into N equal spans,\n"
          "                     1 to 1000 (default 20)\n", f);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "output", required_argument, 0, 'o' }, { "skip-bad", no_argument, 0, 's' },
        { "progress", no_argument, 0, 'p' },     { "per-thread-time", no_argument, 0, 't' },
        { "progress-live", no_argument, 0, 'l' }, { "lookahead", no_argument, 0, 'a' },
        { "profile-granularity", required_argument, 0, 'g' },
        { "phases", required_argument, 0, 'n' },
        { "help", no_argument, 0, 'h' },         { 0, 0, 0, 0 },
    };
    const char *outdir = NULL;
    int skip_bad = 0, per_thread = 0, live = 0, lookahead = 0, c;
    unsigned shift = PS_PROFILE_MIN_SHIFT, phases = PS_PHASES_DEFAULT;
    struct progress pg = { 0 };
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': outdir = optarg; break;
        case 's': skip_bad = 1; break;
        case 'p': pg.on = 1; break;
        case 'l': pg.on = live = 1; break;
        case 't': per_thread = 1; break;
        case 'a': lookahead = 1; break;
        case 'g': {
            char *end;
            errno = 0;
            unsigned long long g = strtoull(optarg, &end, 10);
            shift = 0;
            while (shift < 63 && (1ull << shift) < g)
                shift++;
            if (errno || end == optarg || *end || optarg[0] == '-' || g != 1ull << shift ||
                shift < PS_PROFILE_MIN_SHIFT || shift > PS_PROFILE_MAX_SHIFT) {
                fprintf(stderr, "hmtune-prvscan: --profile-granularity %s: not a power of two "
                        "from 4096 to 1073741824\n", optarg);
                return 2;
            }
            break;
        }
        case 'n': {
            char *end;
            errno = 0;
            unsigned long n = strtoul(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-' || n < 1 || n > 1000) {
                fprintf(stderr, "hmtune-prvscan: --phases %s: not a number from 1 to 1000\n",
                        optarg);
                return 2;
            }
            phases = (unsigned)n;
            break;
        }
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc - 1 || !outdir) {
        usage(stderr);
        return 2;
    }
    const char *path = argv[optind];
    atexit(cleanup);
    pg.t0 = pg.last = now_s();
    pg.tty = live || isatty(2);

    char err[512];
    struct ps_input *in = ps_input_open(path, err, sizeof(err));
    if (!in)
        ps_die("%s", err);
    const char *p, *e;
    int partial, rc;
    rc = ps_input_lines(in, &p, &e, &partial, err, sizeof(err));
    if (rc < 0)
        ps_die("%s: %s", path, err);
    if (rc == 0)
        ps_die("%s: empty file: not a Paraver trace (no '#Paraver' header)", path);
    const char *nl = memchr(p, '\n', (size_t)(e - p + partial));   /* the sentinel too */
    size_t len = (size_t)(nl - p) - (nl > p && nl[-1] == '\r');
    struct ps_header h;
    if (ps_parse_header(p, len, &h, err, sizeof(err)) != 0)
        ps_die("%s:1: %s", path, err);
    p = nl + 1;

    if (make_dirs(outdir) != 0)
        ps_die("%s: cannot create the output directory: %s", outdir, strerror(errno));
    char binpath[PATH_MAX];
    snprintf(binpath, sizeof(binpath), "%s/.allocs.bin.tmp.%ld", outdir, (long)getpid());
    int binfd = open(binpath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (binfd < 0)
        ps_die("%s: cannot write: %s", binpath, strerror(errno));
    unlink(binpath);                   /* anonymous from now on: nothing to clean up */

    struct ps_stats st;
    memset(&st, 0, sizeof(st));
    struct ps_rows *rows = ps_rows_new(binfd);
    struct scan sc = { .path = path, .skip_bad = skip_bad, .pg = &pg, .h = &h, .st = &st,
                       .m = ps_model_new(&h, rows, &st, per_thread, lookahead, shift, phases),
                       .lineno = 1 };
    for (;;) {
        scan_run(&sc, p, e, partial);
        progress_tick(&pg, in, st.records, 0);
        if ((rc = ps_input_lines(in, &p, &e, &partial, err, sizeof(err))) <= 0)
            break;
    }
    struct ps_model *m = sc.m;
    if (rc < 0)
        ps_die("%s: %s", path, err);
    progress_tick(&pg, in, st.records, 1);
    if (st.records == 0)
        ps_die("%s: empty trace: no records after the header%s", path,
            st.bad_lines ? " (all lines were malformed)" : "");
    uint64_t end_ns = st.max_time > h.end_ns ? st.max_time : h.end_ns;
    ps_model_finish(m, end_ns);

    FILE *fa = open_tmp(0, outdir), *fs = open_tmp(1, outdir), *fp = open_tmp(2, outdir);
    FILE *fc = open_tmp(3, outdir), *fj = open_tmp(4, outdir);
    int64_t nrows = ps_rows_write_csv(rows, fa, path, ps_model_sites(m));
    if (nrows < 0)
        ps_die("%s: write error: %s", g_tmp[0], strerror(errno));
    close_tmp(fa, 0);
    if (ps_write_sites(ps_model_sites(m), fs) != 0)
        ps_die("%s: write error: %s", g_tmp[1], strerror(errno));
    close_tmp(fs, 1);
    if (ps_profile_write(ps_model_profile(m), ps_model_sites(m), fp, path,
                         &st.profile_unplaced) != 0)
        ps_die("%s: write error: %s", g_tmp[2], strerror(errno));
    close_tmp(fp, 2);
    st.counter_counts_dropped = ps_counters_dropped(ps_model_counters(m));
    if (ps_counters_write(ps_model_counters(m), ps_model_sites(m), fc, path) != 0)
        ps_die("%s: write error: %s", g_tmp[3], strerror(errno));
    close_tmp(fc, 3);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double elapsed = now_s() - pg.t0;
    ps_write_scan_json(fj, &h, &st, end_ns, elapsed, ru.ru_maxrss, ps_model_peak_live(m),
                       (uint64_t)nrows, ps_model_late_endpoints(m));
    close_tmp(fj, 4);
    /* scan.json last: its presence means the others are complete */
    for (int i = 0; i < NOUT; i++) {
        char final[PATH_MAX];
        snprintf(final, sizeof(final), "%s/%s", outdir, g_outs[i]);
        if (rename(g_tmp[i], final) != 0)
            ps_die("%s: cannot rename to %s: %s", g_tmp[i], final, strerror(errno));
        g_tmp[i][0] = 0;
    }
    g_done = 1;

    if (st.late_records)
        fprintf(stderr, "hmtune-prvscan: %s: warning: %llu record(s) at or after the header's"
                " end time (%llu ns); kept (Extrae writes its last record at the end time)\n",
                path, (unsigned long long)st.late_records, (unsigned long long)h.end_ns);
    if (st.time_regressions)
        fprintf(stderr, "hmtune-prvscan: %s: warning: %llu event record(s) earlier than the one"
                " before%s; samples were attributed in file order\n", path,
                (unsigned long long)st.time_regressions,
                per_thread ? " on the same thread" : " (try --per-thread-time)");
    if (st.bad_lines)
        fprintf(stderr, "hmtune-prvscan: %s: skipped %llu malformed line(s); first at line %llu: %s\n",
                path, (unsigned long long)st.bad_lines, (unsigned long long)sc.first_bad,
                sc.first_err);
    ps_model_free(m);
    ps_rows_free(rows);
    close(binfd);
    ps_input_close(in);
    ps_header_free(&h);
    free(sc.r.v);
    return 0;
}
