/* hm_options.c — the table of HMTUNE_* variables read by C code and their parsers
 * (hm_options.h). Python-side variables (those only bin/hmtune reads) are not here.
 * Each message below is the one the variable's reader printed before the table
 * existed, kept word for word: scripts and tests match them. */
#include "hm_options.h"

#include <stdlib.h>
#include <string.h>

#define U64_MAX UINT64_MAX

static const struct hm_option g_opts[HM_OPT_N] = {
    [HM_OPT_OUT] = { "HMTUNE_OUT", HM_OPT_PATH, 0, 0, 0, NULL, NULL, NULL, 0,
        "directory the tracer writes its raw streams to; unset: nothing is recorded" },
    [HM_OPT_MIN_SIZE] = { "HMTUNE_MIN_SIZE", HM_OPT_SIZE, 4096, 0, U64_MAX, NULL, NULL,
        "HMTUNE_MIN_SIZE is malformed, using 4K: ", 1,
        "smallest request traced call by call" },
    [HM_OPT_DEPTH] = { "HMTUNE_DEPTH", HM_OPT_INT, 8, 1, 32, NULL, NULL,
        "HMTUNE_DEPTH must be 1..32, using 8: ", 1,
        "call-stack frames recorded per traced call (HM_MAX_DEPTH at most)" },
    [HM_OPT_SMALL_SAMPLE] = { "HMTUNE_SMALL_SAMPLE", HM_OPT_STRING, 0, 0, 0, NULL, NULL, NULL, 0,
        "1 in how many calls below HMTUNE_MIN_SIZE is traced (off: none; default 32)" },
    [HM_OPT_SAMPLER] = { "HMTUNE_SAMPLER", HM_OPT_STRING, 0, 0, 0, "none", "none|soft|pebs|ibs",
        "HMTUNE_SAMPLER must be none, soft, pebs or ibs; not sampling: ", 1,
        "data-address sampler" },
    [HM_OPT_SAMPLE_RATE] = { "HMTUNE_SAMPLE_RATE", HM_OPT_INT, 250, 1, 100000, NULL, NULL,
        "HMTUNE_SAMPLE_RATE must be 1..100000 Hz; not sampling", 0,
        "the software sampler's samples per second of CPU time" },
    [HM_OPT_SAMPLE_PERIOD] = { "HMTUNE_SAMPLE_PERIOD", HM_OPT_INT, 0, 1, U64_MAX, NULL, NULL,
        "HMTUNE_SAMPLE_PERIOD must be a positive count; not sampling", 0,
        "events per PEBS/IBS sample (default: the sampler's, 100003 PEBS, 1048560 IBS)" },
    [HM_OPT_LDLAT] = { "HMTUNE_LDLAT", HM_OPT_INT, 30, 0, 65535, NULL, NULL,
        "HMTUNE_LDLAT must be 0..65535 cycles; not sampling", 0,
        "PEBS load-latency threshold in cycles" },
    [HM_OPT_SAMPLE_SIGNAL] = { "HMTUNE_SAMPLE_SIGNAL", HM_OPT_INT, 0, 1, 64, NULL, NULL,
        "HMTUNE_SAMPLE_SIGNAL must be a signal number; not sampling", 0,
        "signal the samplers use (default SIGRTMIN + 5; never SIGKILL or SIGSTOP)" },
    [HM_OPT_SAMPLE_AHEAD] = { "HMTUNE_SAMPLE_AHEAD", HM_OPT_INT, 4, 0, 15, NULL, NULL,
        "HMTUNE_SAMPLE_AHEAD must be 0..15 instructions; not sampling", 0,
        "instructions the software sampler looks ahead for an address" },
    [HM_OPT_SAMPLE_VERIFY] = { "HMTUNE_SAMPLE_VERIFY", HM_OPT_INT, 0, 0, 1, NULL, NULL,
        "HMTUNE_SAMPLE_VERIFY must be 0 or 1; not sampling", 0,
        "1: check look-ahead addresses with an execute breakpoint" },
    [HM_OPT_SAMPLE_PRODUCER] = { "HMTUNE_SAMPLE_PRODUCER", HM_OPT_INT, 1, 0, 1, NULL, NULL,
        "HMTUNE_SAMPLE_PRODUCER must be 0 or 1; not sampling", 0,
        "0: no address from the load an instruction without memory operand consumed" },
    [HM_OPT_FAULT_PERIOD] = { "HMTUNE_FAULT_PERIOD", HM_OPT_INT, 61, 0, UINT32_MAX, NULL, NULL,
        "HMTUNE_FAULT_PERIOD must be a number of page faults per sample (0: off); "
        "not sampling page faults", 0,
        "page faults per page-fault sample (0: off)" },
    [HM_OPT_COUNTERS] = { "HMTUNE_COUNTERS", HM_OPT_STRING, 0, 0, 0, NULL, NULL, NULL, 0,
        "PAPI counters each sampled thread records, comma-separated (default: cycles, "
        "instructions, last-level misses, memory stalls); unset or none: no counters" },
    [HM_OPT_SYSFS_ROOT] = { "HMTUNE_SYSFS_ROOT", HM_OPT_PATH, 0, 0, 0, "/sys", NULL, NULL, 0,
        "where sysfs is mounted, for the PMU detection (recorded trees in tests)" },
    [HM_OPT_PLACEMENT] = { "HMTUNE_PLACEMENT", HM_OPT_PATH, 0, 0, 0, NULL, NULL, NULL, 0,
        "placement.txt the interposer follows; unset: nothing is placed" },
    [HM_OPT_STATS] = { "HMTUNE_STATS", HM_OPT_PATH, 0, 0, 0, NULL, NULL, NULL, 0,
        "file the interposer writes its statistics (JSON) to at exit" },
    [HM_OPT_SUMMARY] = { "HMTUNE_SUMMARY", HM_OPT_BOOL, 1, 0, 1, NULL, NULL, NULL, 0,
        "0: no exit summary on standard error" },
    [HM_OPT_BASELINE] = { "HMTUNE_BASELINE", HM_OPT_STRING, 0, 0, 0, NULL, NULL, NULL, 0,
        "hmtune compare's reference runs: all, first-come, size-window or size-window:SIZE" },
    [HM_OPT_TARGET] = { "HMTUNE_TARGET", HM_OPT_STRING, 0, 0, 0, NULL, NULL, NULL, 0,
        "the program hmtune run launched (path or name); unset: every process is" },
    [HM_OPT_KEEP_FREED] = { "HMTUNE_KEEP_FREED", HM_OPT_SIZE, 256ull << 20, 0, 1ull << 47,
        NULL, NULL, "HMTUNE_KEEP_FREED must be a size (0: keep none), using 256M: ", 1,
        "bytes of freed placed blocks each tier keeps mapped for the next request of the "
        "same shape (0: none)" },
    [HM_OPT_DEBUG_ROOT] = { "HMTUNE_DEBUG_ROOT", HM_OPT_PATH, 0, 0, 0, "/usr/lib/debug", NULL,
        NULL, 0, "':'-separated roots of separate debug files (.build-id, debuglink)" },
};

const struct hm_option *hm_opt_desc(hm_opt_t o) { return &g_opts[o]; }

const char *hm_opt_raw(hm_opt_t o)
{
    const char *v = getenv(g_opts[o].name);
    return v && *v ? v : NULL;
}

const char *hm_opt_str(hm_opt_t o)
{
    const char *v = hm_opt_raw(o);
    return v ? v : g_opts[o].def_str;
}

int hm_opt_bool(hm_opt_t o)
{
    const char *v = hm_opt_raw(o);
    if (!v)
        return g_opts[o].def != 0;
    return strcmp(v, "0") != 0;
}

int hm_opt_num_or(hm_opt_t o, uint64_t def, uint64_t *out)
{
    const struct hm_option *d = &g_opts[o];
    const char *v = hm_opt_raw(o);
    uint64_t x;
    *out = def;
    if (!v)
        return 0;
    if (hm_parse_size(v, &x) != 0 || x < d->min || x > d->max)
        return -1;
    *out = x;
    return 0;
}

int hm_opt_num(hm_opt_t o, uint64_t *out)
{
    return hm_opt_num_or(o, g_opts[o].def, out);
}

/* The index of the n bytes at s among the '|'-separated choices, or -1. */
static int choice_index(const char *choices, const char *s, size_t n)
{
    int i = 0;
    for (const char *c = choices; *c; i++) {
        size_t l = strcspn(c, "|");
        if (l == n && memcmp(c, s, n) == 0)
            return i;
        c += l;
        if (*c == '|')
            c++;
    }
    return -1;
}

int hm_opt_choice(hm_opt_t o)
{
    const struct hm_option *d = &g_opts[o];
    const char *v = hm_opt_str(o);
    if (!d->choices || !v)
        return -1;
    return choice_index(d->choices, v, strlen(v));
}

void hm_opt_warn(hm_opt_t o, const char *prefix)
{
    const struct hm_option *d = &g_opts[o];
    hm_log(prefix, d->bad ? d->bad : d->name, d->bad_shows_value ? hm_opt_raw(o) : NULL);
}
