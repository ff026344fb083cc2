/* Unit tests of common/hm_options.c: the table of HMTUNE_* variables, each kind's
 * parser, defaults when unset or empty, and the default in place of a malformed or
 * out-of-range value. The defaults the collect code also names as constants are
 * checked against them. */
#include "hmt.h"
#include "hm_options.h"
#include "hm_unwind.h"
#include "hmc_decode.h"
#include "hmc_perf.h"
#include "hmc_sampler.h"

#include <string.h>
#include <unistd.h>

static void set(hm_opt_t o, const char *v)
{
    if (v)
        setenv(hm_opt_desc(o)->name, v, 1);
    else
        unsetenv(hm_opt_desc(o)->name);
}

static void test_table(void)
{
    for (int i = 0; i < HM_OPT_N; i++) {
        const struct hm_option *d = hm_opt_desc((hm_opt_t)i);
        CHECK(d->name && strncmp(d->name, "HMTUNE_", 7) == 0);
        CHECK(d->desc && *d->desc);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(d->name, hm_opt_desc((hm_opt_t)j)->name) != 0);
        if (d->kind == HM_OPT_SIZE || d->kind == HM_OPT_INT) {
            CHECK(d->min <= d->max);
            CHECK(d->bad != NULL);
            /* the two whose default the caller knows only at run time */
            if (i != HM_OPT_SAMPLE_PERIOD && i != HM_OPT_SAMPLE_SIGNAL)
                CHECK(d->def >= d->min && d->def <= d->max);
        }
    }
    /* the table's defaults and limits are the collect code's constants */
    CHECK(hm_opt_desc(HM_OPT_DEPTH)->max == HM_MAX_DEPTH);
    CHECK(hm_opt_desc(HM_OPT_LDLAT)->def == HMC_PEBS_DEFAULT_LDLAT);
    CHECK(hm_opt_desc(HM_OPT_SAMPLE_AHEAD)->def == HMC_AHEAD_DEFAULT);
    CHECK(hm_opt_desc(HM_OPT_SAMPLE_AHEAD)->max == HMC_AHEAD_MAX);
    CHECK(hm_opt_desc(HM_OPT_FAULT_PERIOD)->def == HMC_FAULT_DEFAULT_PERIOD);
}

static void test_size(void)
{
    uint64_t v = 0;
    set(HM_OPT_MIN_SIZE, NULL);
    CHECK(hm_opt_num(HM_OPT_MIN_SIZE, &v) == 0 && v == 4096);
    set(HM_OPT_MIN_SIZE, "");
    CHECK(hm_opt_num(HM_OPT_MIN_SIZE, &v) == 0 && v == 4096);
    set(HM_OPT_MIN_SIZE, "8K");
    CHECK(hm_opt_num(HM_OPT_MIN_SIZE, &v) == 0 && v == 8192);
    set(HM_OPT_MIN_SIZE, "64KiB");
    CHECK(hm_opt_num(HM_OPT_MIN_SIZE, &v) == 0 && v == 65536);
    set(HM_OPT_MIN_SIZE, "0");
    CHECK(hm_opt_num(HM_OPT_MIN_SIZE, &v) == 0 && v == 0);
    v = 1;
    set(HM_OPT_MIN_SIZE, "eight");
    CHECK(hm_opt_num(HM_OPT_MIN_SIZE, &v) == -1 && v == 4096);
    set(HM_OPT_MIN_SIZE, "4 K");
    CHECK(hm_opt_num(HM_OPT_MIN_SIZE, &v) == -1 && v == 4096);
    set(HM_OPT_MIN_SIZE, NULL);
}

static void test_int(void)
{
    uint64_t v = 0;
    set(HM_OPT_DEPTH, NULL);
    CHECK(hm_opt_num(HM_OPT_DEPTH, &v) == 0 && v == 8);
    set(HM_OPT_DEPTH, "32");
    CHECK(hm_opt_num(HM_OPT_DEPTH, &v) == 0 && v == 32);
    set(HM_OPT_DEPTH, "1");
    CHECK(hm_opt_num(HM_OPT_DEPTH, &v) == 0 && v == 1);
    set(HM_OPT_DEPTH, "33");
    CHECK(hm_opt_num(HM_OPT_DEPTH, &v) == -1 && v == 8);
    set(HM_OPT_DEPTH, "0");
    CHECK(hm_opt_num(HM_OPT_DEPTH, &v) == -1 && v == 8);
    set(HM_OPT_DEPTH, "-1");
    CHECK(hm_opt_num(HM_OPT_DEPTH, &v) == -1 && v == 8);
    set(HM_OPT_DEPTH, NULL);

    set(HM_OPT_SAMPLE_RATE, "100000");
    CHECK(hm_opt_num(HM_OPT_SAMPLE_RATE, &v) == 0 && v == 100000);
    set(HM_OPT_SAMPLE_RATE, "1K");                  /* sizes' syntax, as before */
    CHECK(hm_opt_num(HM_OPT_SAMPLE_RATE, &v) == 0 && v == 1024);
    set(HM_OPT_SAMPLE_RATE, "100001");
    CHECK(hm_opt_num(HM_OPT_SAMPLE_RATE, &v) == -1 && v == 250);
    set(HM_OPT_SAMPLE_RATE, NULL);

    set(HM_OPT_SAMPLE_VERIFY, "1");
    CHECK(hm_opt_num(HM_OPT_SAMPLE_VERIFY, &v) == 0 && v == 1);
    set(HM_OPT_SAMPLE_VERIFY, "2");
    CHECK(hm_opt_num(HM_OPT_SAMPLE_VERIFY, &v) == -1 && v == 0);
    set(HM_OPT_SAMPLE_VERIFY, NULL);

    set(HM_OPT_FAULT_PERIOD, "0");
    CHECK(hm_opt_num(HM_OPT_FAULT_PERIOD, &v) == 0 && v == 0);
    set(HM_OPT_FAULT_PERIOD, "4294967295");
    CHECK(hm_opt_num(HM_OPT_FAULT_PERIOD, &v) == 0 && v == 4294967295ull);
    set(HM_OPT_FAULT_PERIOD, "4294967296");
    CHECK(hm_opt_num(HM_OPT_FAULT_PERIOD, &v) == -1 && v == 61);
    set(HM_OPT_FAULT_PERIOD, NULL);

    set(HM_OPT_LDLAT, "65536");
    CHECK(hm_opt_num(HM_OPT_LDLAT, &v) == -1 && v == 30);
    set(HM_OPT_LDLAT, NULL);
    set(HM_OPT_SAMPLE_AHEAD, "16");
    CHECK(hm_opt_num(HM_OPT_SAMPLE_AHEAD, &v) == -1 && v == 4);
    set(HM_OPT_SAMPLE_AHEAD, NULL);
}

static void test_num_or(void)
{
    uint64_t v = 0;
    set(HM_OPT_SAMPLE_PERIOD, NULL);
    CHECK(hm_opt_num_or(HM_OPT_SAMPLE_PERIOD, 100003, &v) == 0 && v == 100003);
    set(HM_OPT_SAMPLE_PERIOD, "5");
    CHECK(hm_opt_num_or(HM_OPT_SAMPLE_PERIOD, 100003, &v) == 0 && v == 5);
    set(HM_OPT_SAMPLE_PERIOD, "0");
    CHECK(hm_opt_num_or(HM_OPT_SAMPLE_PERIOD, 100003, &v) == -1 && v == 100003);
    set(HM_OPT_SAMPLE_PERIOD, NULL);
    set(HM_OPT_SAMPLE_SIGNAL, "64");
    CHECK(hm_opt_num_or(HM_OPT_SAMPLE_SIGNAL, 39, &v) == 0 && v == 64);
    set(HM_OPT_SAMPLE_SIGNAL, "65");
    CHECK(hm_opt_num_or(HM_OPT_SAMPLE_SIGNAL, 39, &v) == -1 && v == 39);
    set(HM_OPT_SAMPLE_SIGNAL, NULL);
}

static void test_choice(void)
{
    set(HM_OPT_SAMPLER, NULL);
    CHECK(hm_opt_choice(HM_OPT_SAMPLER) == 0);
    set(HM_OPT_SAMPLER, "");
    CHECK(hm_opt_choice(HM_OPT_SAMPLER) == 0);
    const char *names[] = { "none", "soft", "pebs", "ibs" };
    for (int i = 0; i < 4; i++) {
        set(HM_OPT_SAMPLER, names[i]);
        CHECK(hm_opt_choice(HM_OPT_SAMPLER) == i);
    }
    set(HM_OPT_SAMPLER, "Soft");
    CHECK(hm_opt_choice(HM_OPT_SAMPLER) == -1);
    set(HM_OPT_SAMPLER, "so");
    CHECK(hm_opt_choice(HM_OPT_SAMPLER) == -1);
    set(HM_OPT_SAMPLER, "softx");
    CHECK(hm_opt_choice(HM_OPT_SAMPLER) == -1);
    set(HM_OPT_SAMPLER, "soft|pebs");
    CHECK(hm_opt_choice(HM_OPT_SAMPLER) == -1);
    set(HM_OPT_SAMPLER, NULL);
}

static void test_bool(void)
{
    set(HM_OPT_SUMMARY, NULL);
    CHECK(hm_opt_bool(HM_OPT_SUMMARY) == 1);
    set(HM_OPT_SUMMARY, "");
    CHECK(hm_opt_bool(HM_OPT_SUMMARY) == 1);
    set(HM_OPT_SUMMARY, "0");
    CHECK(hm_opt_bool(HM_OPT_SUMMARY) == 0);
    set(HM_OPT_SUMMARY, "1");
    CHECK(hm_opt_bool(HM_OPT_SUMMARY) == 1);
    set(HM_OPT_SUMMARY, "no");                     /* only "0" is off, as before */
    CHECK(hm_opt_bool(HM_OPT_SUMMARY) == 1);
    set(HM_OPT_SUMMARY, NULL);
}

static void test_strings(void)
{
    set(HM_OPT_DEBUG_ROOT, NULL);
    CHECK(strcmp(hm_opt_str(HM_OPT_DEBUG_ROOT), "/usr/lib/debug") == 0);
    CHECK(hm_opt_raw(HM_OPT_DEBUG_ROOT) == NULL);
    set(HM_OPT_DEBUG_ROOT, "");
    CHECK(strcmp(hm_opt_str(HM_OPT_DEBUG_ROOT), "/usr/lib/debug") == 0);
    set(HM_OPT_DEBUG_ROOT, "/a:/b");
    CHECK(strcmp(hm_opt_str(HM_OPT_DEBUG_ROOT), "/a:/b") == 0);
    set(HM_OPT_DEBUG_ROOT, NULL);
    set(HM_OPT_SYSFS_ROOT, NULL);
    CHECK(strcmp(hm_opt_str(HM_OPT_SYSFS_ROOT), "/sys") == 0);
    set(HM_OPT_PLACEMENT, NULL);
    CHECK(hm_opt_str(HM_OPT_PLACEMENT) == NULL);
    set(HM_OPT_PLACEMENT, "");
    CHECK(hm_opt_str(HM_OPT_PLACEMENT) == NULL && hm_opt_raw(HM_OPT_PLACEMENT) == NULL);
    set(HM_OPT_PLACEMENT, "/tmp/p.txt");
    CHECK(strcmp(hm_opt_str(HM_OPT_PLACEMENT), "/tmp/p.txt") == 0);
    set(HM_OPT_PLACEMENT, NULL);
    set(HM_OPT_BASELINE, "size-window:1M");
    CHECK(strcmp(hm_opt_raw(HM_OPT_BASELINE), "size-window:1M") == 0);
    set(HM_OPT_BASELINE, NULL);
}

/* What hm_opt_warn writes: one line, the prefix, the entry's text, and the value when
 * the entry shows it. */
static void warned(hm_opt_t o, const char *value, char *out, size_t outlen)
{
    int p[2];
    out[0] = '\0';
    if (pipe(p) != 0)
        return;
    int saved = dup(2);
    dup2(p[1], 2);
    set(o, value);
    hm_opt_warn(o, "P: ");
    set(o, NULL);
    dup2(saved, 2);
    close(saved);
    close(p[1]);
    ssize_t n = read(p[0], out, outlen - 1);
    out[n > 0 ? n : 0] = '\0';
    close(p[0]);
}

static void test_warn(void)
{
    char line[600], want[600];
    const struct hm_option *d = hm_opt_desc(HM_OPT_DEPTH);
    warned(HM_OPT_DEPTH, "99", line, sizeof line);
    snprintf(want, sizeof want, "P: %s99\n", d->bad);
    CHECK(strcmp(line, want) == 0);
    d = hm_opt_desc(HM_OPT_SAMPLE_RATE);
    warned(HM_OPT_SAMPLE_RATE, "0", line, sizeof line);
    snprintf(want, sizeof want, "P: %s\n", d->bad);
    CHECK(strcmp(line, want) == 0);
}

int main(void)
{
    RUN(test_table);
    RUN(test_size);
    RUN(test_int);
    RUN(test_num_or);
    RUN(test_choice);
    RUN(test_bool);
    RUN(test_strings);
    RUN(test_warn);
    HMT_END();
}
