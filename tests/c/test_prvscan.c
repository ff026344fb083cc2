/* test_prvscan.c — hmtune-prvscan (the analyzer's streaming scanner) run as a
 * program, so that `make SAN=1 test-c` exercises it under ASan/UBSan: the real
 * Extrae fixture, generated traces checked against their known per-site answers
 * (plain, allocation-heavy, gzipped, many tasks and threads), and broken inputs,
 * which must fail with status 1 and leave no output behind; profile.csv's bucket
 * option. The data checks of
 * every column live in tests/py; here the point is memory safety on all paths. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hmt.h"

static char tmp[256];

static int sh(const char *fmt, const char *a, const char *b)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int exists(const char *dir, const char *name)
{
    char p[512];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0;
}

static int scan(const char *trace, const char *outdir, const char *opts)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -rf %s && %s/hmtune-prvscan %s -o %s %s 2>%s/err",
             outdir, HMT_BIN, trace, outdir, opts, tmp);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_extrae_fixture(void)
{
    char out[300];
    snprintf(out, sizeof out, "%s/fx", tmp);
    CHECK(scan(HMT_ROOT "/tests/py/data/extrae-malloc-trace/malloc_test.prv", out, "") == 0);
    CHECK(exists(out, "allocs.csv") && exists(out, "sites.tsv") && exists(out, "scan.json") &&
          exists(out, "profile.csv"));
    /* the four blocks of the fixture's ground truth */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test $(grep -c '^[0-9]' %s/allocs.csv) -eq 4", out);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "grep -q '^5,0,1,0x7f97a1d3f040,67108864,4826877,172597945,1$' "
             "%s/allocs.csv", out);
    CHECK(system(cmd) == 0);
}

static void generated(const char *name, const char *genopts, int gz)
{
    char prv[300], out[300], opts[700];
    snprintf(prv, sizeof prv, "%s/%s.prv", tmp, name);
    snprintf(out, sizeof out, "%s/%s.out", tmp, name);
    snprintf(opts, sizeof opts, "200000 %s %s", prv, genopts);
    CHECK(sh(HMT_BIN "/hmtune-gentrace %s >/dev/null", opts, NULL) == 0);
    if (gz) {
        CHECK(sh("gzip -kf %s", prv, NULL) == 0);
        char gzp[310];
        snprintf(gzp, sizeof gzp, "%s.gz", prv);
        CHECK(scan(gzp, out, "") == 0);
    } else {
        CHECK(scan(prv, out, "--progress") == 0);
    }
    CHECK(sh(HMT_BIN "/hmtune-gentrace --check %s %s >/dev/null", prv, out) == 0);
}

static void test_generated(void) { generated("plain", "--tasks 3 --threads 4 --seed 7", 0); }
static void test_generated_alloc_heavy(void) { generated("heavy", "--alloc-heavy --seed 3", 0); }
static void test_generated_gzip(void) { generated("gz", "--tasks 2 --threads 2 --seed 5", 1); }
static void test_generated_many_threads(void)
{
    generated("many", "--tasks 40 --threads 64 --seed 11", 0);
}

/* A broken copy of the generated trace: exit 1, nothing written; with --skip-bad
 * the scan completes. */
static void broken(const char *edit, int skip_ok)
{
    char src[300], bad[300], out[300];
    snprintf(src, sizeof src, "%s/plain.prv", tmp);
    snprintf(bad, sizeof bad, "%s/bad.prv", tmp);
    snprintf(out, sizeof out, "%s/bad.out", tmp);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s < %s > %s", edit, src, bad);
    CHECK(system(cmd) == 0);
    CHECK(scan(bad, out, "") == 1);
    CHECK(!exists(out, "allocs.csv") && !exists(out, "sites.tsv") && !exists(out, "scan.json") &&
          !exists(out, "profile.csv"));
    if (skip_ok)
        CHECK(scan(bad, out, "--skip-bad") == 0);
}

static void test_corrupt_line(void) { broken("sed '500s/:/x:/3'", 1); }
static void test_truncated(void) { broken("head -c 1000001", 1); }
static void test_garbage_header(void) { broken("sed '1s/^#Paraver/#Parabor/'", 0); }
static void test_binary_noise(void) { broken("sed '300s/.*/\\x01\\xff\\xfe:2:1/'", 1); }

static void test_broken_gzip(void)
{
    char gz[300], bad[300], out[300];
    snprintf(gz, sizeof gz, "%s/gz.prv.gz", tmp);
    snprintf(bad, sizeof bad, "%s/cut.prv.gz", tmp);
    snprintf(out, sizeof out, "%s/cut.out", tmp);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "head -c 20000 %s > %s", gz, bad);
    CHECK(system(cmd) == 0);
    CHECK(scan(bad, out, "") == 1);
    CHECK(!exists(out, "allocs.csv"));
}

/* profile.csv's buckets: a power of two from 4 KiB to 1 GiB, else a usage error (2)
 * and nothing written. */
static void test_profile_granularity(void)
{
    char prv[300], out[300], cmd[1024];
    snprintf(prv, sizeof prv, "%s/plain.prv", tmp);
    snprintf(out, sizeof out, "%s/gran.out", tmp);
    CHECK(scan(prv, out, "--profile-granularity 2097152") == 0);
    snprintf(cmd, sizeof cmd, "head -1 %s/profile.csv | grep -q ' granularity=2097152$' && "
             "test -z \"$(awk -F, 'NR > 2 && $2 %% 2097152' %s/profile.csv)\"", out, out);
    CHECK(system(cmd) == 0);
    CHECK(scan(prv, out, "--profile-granularity 1073741824") == 0);
    static const char *bad[] = { "3000", "2048", "2147483648", "4096x", "-4096", "" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        char opt[64];
        snprintf(opt, sizeof opt, "--profile-granularity '%s'", bad[i]);
        CHECK(scan(prv, out, opt) == 2);
        CHECK(!exists(out, "profile.csv"));
    }
}

static void test_missing_file(void)
{
    char out[300];
    snprintf(out, sizeof out, "%s/none.out", tmp);
    CHECK(scan("/nonexistent/trace.prv", out, "") == 1);
}

int main(void)
{
    /* a sanitizer report must not pass for the scanner's own "bad input" status 1 */
    setenv("ASAN_OPTIONS", "exitcode=86", 1);
    setenv("UBSAN_OPTIONS", "exitcode=87:print_stacktrace=1", 1);
    snprintf(tmp, sizeof tmp, "/tmp/hmt-prvscan.%ld", (long)getpid());
    if (mkdir(tmp, 0700) != 0) {
        perror(tmp);
        return 2;
    }
    RUN(test_extrae_fixture);
    RUN(test_generated);
    RUN(test_generated_alloc_heavy);
    RUN(test_generated_gzip);
    RUN(test_generated_many_threads);
    RUN(test_corrupt_line);
    RUN(test_truncated);
    RUN(test_garbage_header);
    RUN(test_binary_noise);
    RUN(test_broken_gzip);
    RUN(test_profile_granularity);
    RUN(test_missing_file);
    sh("rm -rf %s", tmp, NULL);
    HMT_END();
}
