/* hm_options.h — every HMTUNE_* environment variable the C code reads, from one table
 * (hm_options.c): its name, kind, default, range and description, one parser per
 * kind and one way to say a value is malformed.
 *
 * Kinds and their syntax (a variable that is unset or empty takes its default):
 *   bool    "0" is off, any other value on.
 *   size    a number with an optional K/M/G/T suffix (powers of 1024), optionally
 *           followed by B or iB (hm_parse_size), within [min, max].
 *   int     the same syntax as size (so "1K" is 1024), within [min, max].
 *   string  the text as it is; with choices ("a|b|c"), one of them.
 *   path    the text as it is: a file, a directory or a ':'-separated list.
 *
 * Safe in a preload constructor before the allocator is ready: lookups call getenv
 * and parse in place, nothing allocates, nothing is cached (a test may set a variable
 * and look again). */
#ifndef HM_OPTIONS_H
#define HM_OPTIONS_H

#include <stdint.h>
#include "hm_util.h"

typedef enum hm_opt {
    /* the tracer (libhmtrace.so) */
    HM_OPT_OUT,                 /* path: the raw trace directory */
    HM_OPT_MIN_SIZE,            /* size: calls of this size and more are traced */
    HM_OPT_DEPTH,               /* int: frames recorded per call */
    HM_OPT_SMALL_SAMPLE,        /* string: off or N, parsed by hmc_small_parse */
    HM_OPT_SAMPLER,             /* string: none|soft|pebs|ibs */
    HM_OPT_SAMPLE_RATE,         /* int: timer samples per second */
    HM_OPT_SAMPLE_PERIOD,       /* int: events per PEBS/IBS sample */
    HM_OPT_LDLAT,               /* int: PEBS load-latency threshold */
    HM_OPT_SAMPLE_SIGNAL,       /* int: the sampler's signal */
    HM_OPT_SAMPLE_AHEAD,        /* int: instructions looked ahead for an address */
    HM_OPT_SAMPLE_VERIFY,       /* int: 1 checks look-ahead addresses by breakpoint */
    HM_OPT_SAMPLE_PRODUCER,     /* int: 1 recovers the producer load's address */
    HM_OPT_FAULT_PERIOD,        /* int: page faults per fault sample */
    HM_OPT_COUNTERS,            /* string: PAPI counters per thread, "default" or none */
    HM_OPT_SYSFS_ROOT,          /* path: where sysfs is (tests) */
    /* the interposer (libhmalloc.so) */
    HM_OPT_PLACEMENT,           /* path: placement.txt */
    HM_OPT_STATS,               /* path: run-stats.json */
    HM_OPT_SUMMARY,             /* bool: the exit summary on standard error */
    HM_OPT_BASELINE,            /* string: first-come, size-window[:SIZE] */
    HM_OPT_TARGET,              /* string: the program hmtune run launched */
    HM_OPT_KEEP_FREED,          /* size: freed blocks kept for reuse, per tier */
    /* both libraries and hmtune-finalize */
    HM_OPT_DEBUG_ROOT,          /* path: ':'-separated separate-debug-file roots */
    HM_OPT_N
} hm_opt_t;

enum hm_opt_kind { HM_OPT_BOOL, HM_OPT_SIZE, HM_OPT_INT, HM_OPT_STRING, HM_OPT_PATH };

struct hm_option {
    const char *name;           /* HMTUNE_... */
    enum hm_opt_kind kind;
    uint64_t def;               /* bool, size, int: the default */
    uint64_t min, max;          /* size, int: the accepted range */
    const char *def_str;        /* string, path: the default (NULL: none) */
    const char *choices;        /* string: "a|b|c", or NULL for any text */
    /* The warning for a malformed value (hm_opt_warn): the text, and whether the
     * value follows it. NULL: the caller checks the value and says what is wrong. */
    const char *bad;
    int bad_shows_value;
    const char *desc;
};

/* The table's entry of o. */
const struct hm_option *hm_opt_desc(hm_opt_t o) HM_HIDDEN;

/* The variable's text, NULL when unset or empty (any kind). */
const char *hm_opt_raw(hm_opt_t o) HM_HIDDEN;
/* string, path: the text, or the default (possibly NULL) when unset or empty. */
const char *hm_opt_str(hm_opt_t o) HM_HIDDEN;
/* bool: 0 or 1, the default when unset or empty. */
int hm_opt_bool(hm_opt_t o) HM_HIDDEN;
/* size, int: 0 with the value (the default when unset or empty) in *out; -1 when
 * the value is malformed or out of range, with the default in *out. */
int hm_opt_num(hm_opt_t o, uint64_t *out) HM_HIDDEN;
/* The same with a default known only at run time (def replaces the table's). */
int hm_opt_num_or(hm_opt_t o, uint64_t def, uint64_t *out) HM_HIDDEN;
/* string with choices: the index of the value among them (the default's when unset
 * or empty), -1 when it is none of them. */
int hm_opt_choice(hm_opt_t o) HM_HIDDEN;
/* One line on standard error: prefix, the table's message for o, and the value when
 * the entry says so. */
void hm_opt_warn(hm_opt_t o, const char *prefix) HM_HIDDEN;

#endif
