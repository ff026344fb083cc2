/* hmc_perf_detect.h — PEBS and IBS found in sysfs (hmc_perf_detect.c): what the PMUs
 * offer (struct hmc_perf_caps), turned from their events/ and format/ files into raw
 * perf_event_attr configs. Part of hmc_perf.h, which includes it. */
#ifndef HMC_PERF_DETECT_H
#define HMC_PERF_DETECT_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"
#include "hmc_stream.h"

#define HMC_PERF_RING_PAGES     32u        /* data pages per ring (a power of 2): the
                                            * default of hmc_perf_caps.ring_pages */

/* Bits of hmc_perf_detect()'s result. */
#define HMC_PERF_PEBS (1 << HMS_SRC_PEBS)
#define HMC_PERF_IBS  (1 << HMS_SRC_IBS)

#define HMC_PERF_MAX_PEBS_PMUS 2   /* "cpu", or "cpu_core" + "cpu_atom" on hybrids */

/* Where a format term's value goes, from a sysfs format file such as
 * "config1:0-15" or "config:0-7,32-35" (low value bits fill the first range). */
struct hmc_perf_field {
    uint8_t word;          /* 0 = attr.config, 1 = config1, 2 = config2 */
    uint8_t nr;            /* ranges used; 0 = the PMU has no such term */
    uint8_t lo[4], hi[4];  /* bit ranges, inclusive */
};

/* attr.config* of one named event, from events/<name> through format/. */
struct hmc_perf_evcfg {
    uint64_t config, config1, config2;
};

struct hmc_perf_pebs_pmu {
    char name[16];               /* "cpu", "cpu_core" or "cpu_atom" */
    uint32_t type;               /* attr.type, from <pmu>/type */
    int max_precise;             /* <pmu>/caps/max_precise (3 when the file is absent) */
    int has_stores, has_aux;     /* events/mem-stores, events/mem-loads-aux present */
    struct hmc_perf_evcfg loads, stores, aux;
    struct hmc_perf_field ldlat; /* format/ldlat */
};

struct hmc_perf_caps {
    int npebs;                               /* usable PEBS PMUs */
    struct hmc_perf_pebs_pmu pebs[HMC_PERF_MAX_PEBS_PMUS];
    int ibs;                                 /* ibs_op usable */
    uint32_t ibs_type;
    /* ibs_op/format/ terms; nr == 0 when the kernel does not offer them */
    struct hmc_perf_field ibs_cnt_ctl, ibs_l3missonly, ibs_swfilt, ibs_ldlat;
    int ibs_want_l3missonly;                 /* caller's choice before hmc_perf_open() */
    unsigned ring_pages;                     /* data pages per ring, a power of 2 */
    char why_pebs[200], why_ibs[200];        /* "" when usable */
};

/* Detect PEBS and IBS from the tree under sysfs_root (NULL: $HMTUNE_SYSFS_ROOT,
 * else "/sys"). Fills caps and, in why, one line per unusable kind ("PEBS: ...\n").
 * Returns HMC_PERF_PEBS | HMC_PERF_IBS for the usable ones (0 = neither). */
int hmc_perf_detect(const char *sysfs_root, struct hmc_perf_caps *caps, char *why,
                    size_t whylen) HM_HIDDEN;

/* Parse a format file's text ("config1:0-15\n") into f. 0, or -1 if malformed. */
int hmc_perf_parse_format(const char *text, struct hmc_perf_field *f) HM_HIDDEN;
/* OR value into the attr word f names (cfg[0..2] = config, config1, config2).
 * -1 when the value does not fit the field's bits. */
int hmc_perf_field_put(const struct hmc_perf_field *f, uint64_t value, uint64_t cfg[3])
    HM_HIDDEN;

#endif
