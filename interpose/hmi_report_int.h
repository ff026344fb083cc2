/* hmi_report_int.h — what the exit report (hmi_report_exit.c) reads of the counters
 * hmi_report.c keeps while the program runs. Internal to libhmalloc.so. */
#ifndef HMI_REPORT_INT_H
#define HMI_REPORT_INT_H

#include "hmi_report.h"

/* Per range of each split site: objects and bytes placed (atomics). */
struct hmi_split_count {
    uint64_t objects, bytes;
};
/* Site's per-range counts (its ranges in order), NULL without split sites. */
const struct hmi_split_count *hmi_report_split_counts(uint32_t site) HM_HIDDEN;
/* In-window allocations that matched no site, all threads. */
uint64_t hmi_report_unmatched(void) HM_HIDDEN;
/* HMTUNE_BASELINE's name, "" when not a baseline run. */
const char *hmi_report_baseline_name(void) HM_HIDDEN;
/* Check the residency of every block still live (at exit). */
void hmi_report_check_live(void) HM_HIDDEN;

#endif
