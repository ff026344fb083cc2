/* hmc_papi.h — PAPI for the tracer's counters, loaded in a link namespace of its own
 * (hmc_papi.c), and the choice of the counters a trace records.
 *
 * dlmopen(LM_ID_NEWLM) gives the tracer a PAPI whose state is not the application's:
 * PAPI runs one event set per component per thread, so a tracer sharing the
 * application's PAPI would make the application's own PAPI_start fail (PAPI_EISRUN).
 * Two PAPIs open their own perf events, which the kernel counts side by side. PAPI's
 * allocations there go to that namespace's C library, never through the tracer's
 * malloc. Used by libhmtrace.so (hmc_counters.c) and by hmtune-probe --counters. */
#ifndef HMC_PAPI_H
#define HMC_PAPI_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"
#include "hmc_stream.h"

#define HMC_MAX_COUNTERS HMR_MAX_COUNTERS
#define HMC_COUNTER_NAME 64      /* bytes of a counter's name, its NUL included */
#define HMC_COUNTER_DESCR 128    /* and of its description */

/* What --counters with no list (HMTUNE_COUNTERS=default) asks for: cycles,
 * instructions, last-level cache misses, cycles stalled on memory. */
#define HMC_COUNTERS_DEFAULT "PAPI_TOT_CYC,PAPI_TOT_INS,PAPI_L3_TCM,PAPI_MEM_SCY"
/* What is recorded when none of the counters asked for can be counted here (no PMU):
 * the kernel's software events through PAPI's perf_event component. */
#define HMC_COUNTERS_SOFTWARE "perf::TASK-CLOCK,perf::PAGE-FAULTS,perf::CONTEXT-SWITCHES"

struct hmc_papi {
    void *h;
    int (*create_eventset)(int *);
    int (*add_named_event)(int, const char *);
    int (*event_name_to_code)(const char *, int *);
    int (*start)(int);
    int (*read)(int, long long *);
    int (*stop)(int, long long *);
    int (*cleanup_eventset)(int);
    int (*destroy_eventset)(int *);
    int (*register_thread)(void);
    int (*unregister_thread)(void);
    const char *(*strerror)(int);
    int (*get_event_info)(int, void *);
};

struct hmc_counter {
    int code;                    /* PAPI's event code: preset (0x8...) or native (0x4...) */
    char name[HMC_COUNTER_NAME];
    char descr[HMC_COUNTER_DESCR];
};

struct hmc_counter_set {
    int n;
    struct hmc_counter c[HMC_MAX_COUNTERS];
    int software;                /* none asked for could be counted: HMC_COUNTERS_SOFTWARE */
    char unavailable[512];       /* "NAME (why), ..." of those asked for and not counted */
};

/* Load and initialise PAPI in its own namespace (threads known by their kernel tid).
 * 0, or -1 with why set. */
int hmc_papi_open(struct hmc_papi *p, char *why, size_t n) HM_HIDDEN;

/* The counters of list (comma-separated PAPI names; "default": HMC_COUNTERS_DEFAULT)
 * that can be counted together here, in list order, tried in one event set of the
 * calling thread; when none can, HMC_COUNTERS_SOFTWARE's instead (set->software).
 * 0, or -1 with why set (PAPI refused even an empty event set). */
int hmc_papi_choose(struct hmc_papi *p, const char *list, struct hmc_counter_set *set,
                    char *why, size_t n) HM_HIDDEN;

/* The event set of the calling thread with set's counters, started: its handle, or
 * -1. */
int hmc_papi_thread_start(struct hmc_papi *p, const struct hmc_counter_set *set) HM_HIDDEN;
void hmc_papi_thread_stop(struct hmc_papi *p, int es) HM_HIDDEN;

#endif
