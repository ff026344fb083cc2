/* hmc_perf.h — hardware address sampling through perf_event_open(2): Intel PEBS
 * load-latency / precise-store events and AMD IBS op sampling.
 *
 * Three steps, each testable without the hardware:
 *   hmc_perf_detect()  reads a sysfs tree (default /sys, or $HMTUNE_SYSFS_ROOT) and
 *                      turns the PMU's events/ and format/ files into raw configs;
 *   hmc_perf_open()    opens the events for one thread and maps a ring per event;
 *   hmc_perf_drain()   decodes the ring's PERF_RECORD_SAMPLE / _LOST records into
 *                      struct hmr_sample (hmc_stream.h) and frees the ring space.
 * None of them allocates or uses stdio: they run inside the application's
 * threads (thread start, buffer flushes). Files: hmc_perf_detect.c (sysfs),
 * hmc_perf.c (open/close, default periods), hmc_perf_ring.c (drain, data_src). */
#ifndef HMC_PERF_H
#define HMC_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "hm_util.h"
#include "hmc_stream.h"

/* Default sampling parameters; the arithmetic behind them is in hmc_perf.c.
 * PEBS: one load sample per HMC_PEBS_DEFAULT_PERIOD loads slower than
 * HMC_PEBS_DEFAULT_LDLAT cycles; stores at HMC_PEBS_STORE_MULT times that period.
 * IBS: one tagged op per HMC_IBS_DEFAULT_PERIOD cycles (a multiple of 16). */
#define HMC_PEBS_DEFAULT_PERIOD 100003u
#define HMC_PEBS_DEFAULT_LDLAT  30u
#define HMC_PEBS_STORE_MULT     16u
#define HMC_IBS_DEFAULT_PERIOD  0xFFFF0u   /* 1048560 cycles */
#define HMC_PERF_RING_PAGES     32u        /* data pages per ring (a power of 2) */
/* Page faults (hmc_perf_open_faults): one sample per HMC_FAULT_DEFAULT_PERIOD minor
 * faults of the thread, into a ring of HMC_FAULT_RING_PAGES pages (arithmetic in
 * hmc_perf.c). */
#define HMC_FAULT_DEFAULT_PERIOD 61u
#define HMC_FAULT_RING_PAGES     16u

/* Bits of hmc_perf_detect()'s result. */
#define HMC_PERF_PEBS (1 << HMS_SRC_PEBS)
#define HMC_PERF_IBS  (1 << HMS_SRC_IBS)

#define HMC_PERF_MAX_PEBS_PMUS 2   /* "cpu", or "cpu_core" + "cpu_atom" on hybrids */
#define HMC_PERF_MAX_RINGS     4   /* enough for any hmc_perf_open() */

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

/* One event and its mapped ring. The fields after map_len are what the drain
 * needs; tests build a ring over synthetic memory with hmc_perf_ring_init(). */
struct hmc_perf_ring {
    int fd;                /* the sampling event; -1 = none (synthetic ring) */
    int aux_fd;            /* Sapphire Rapids mem-loads-aux group leader, or -1 */
    void *map;             /* the mmap'ed 1 + 2^n pages */
    size_t map_len;
    unsigned char *data;   /* data area: map + data_offset */
    uint64_t data_size;    /* a power of 2 */
    uint64_t sample_type;  /* attr.sample_type the event was opened with */
    uint8_t kind;          /* HMS_SRC_PEBS, HMS_SRC_IBS or HMS_SRC_FAULT */
    uint8_t store;         /* 1: the PEBS store event */
    uint8_t sample_id_all; /* attr.sample_id_all: non-sample records end with sample_id */
    uint8_t user_only;     /* drop kernel-mode samples (IBS opened without exclude_kernel) */
    uint64_t last_t;       /* time of the last record, for LOST records without one */
    uint64_t period;       /* HMS_SRC_FAULT rings: faults per sample, each sample's weight */
    /* counters, for the thread's end record and for tests */
    uint64_t n_samples, n_lost, n_kernel, n_throttle, n_other, n_corrupt;
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

/* Open kind (HMS_SRC_PEBS or HMS_SRC_IBS) events for thread tid: PEBS loads (with
 * the ldlat threshold) and stores on every PEBS PMU, or one IBS op event; each
 * with a ring of 1 + caps->ring_pages pages. period 0 / ldlat 0 take the defaults
 * above. For IBS, ldlat applies only where ibs_op has format/ldlat (Zen 5) and
 * only from 128 cycles (the hardware's minimum); 0 samples every op. Returns the
 * number of rings filled in rings[0..max_rings), or -errno (-ENODEV when caps says
 * the kind is not usable). Never signals per sample. One thread drains a ring. */
int hmc_perf_open(const struct hmc_perf_caps *caps, int kind, uint64_t period, uint32_t ldlat,
                  pid_t tid, struct hmc_perf_ring *rings, int max_rings) HM_HIDDEN;
/* Open the minor page-fault software event for thread tid, sampling one fault in
 * `period` (0: HMC_FAULT_DEFAULT_PERIOD) with its data address and time, into r
 * (a ring of `pages` data pages, halved while the pinned-memory limits refuse it).
 * 0, or -errno. Works without a PMU (PERF_TYPE_SOFTWARE). */
int hmc_perf_open_faults(uint64_t period, pid_t tid, unsigned pages, struct hmc_perf_ring *r)
    HM_HIDDEN;
/* Unmap and close rings[0..n) as filled by hmc_perf_open() (safe to repeat). */
void hmc_perf_close(struct hmc_perf_ring *rings, int n) HM_HIDDEN;

/* Set up r over a mapping base[0..len) that starts with struct
 * perf_event_mmap_page. 0, or -EINVAL for a layout or sample_type it cannot decode. */
int hmc_perf_ring_init(struct hmc_perf_ring *r, void *base, size_t len, int kind, int store,
                       uint64_t sample_type, int sample_id_all) HM_HIDDEN;
/* Decode every complete record between data_tail and data_head, call emit for
 * each sample and each loss report, then release the space (data_tail).
 * Returns the number of emitted records. */
size_t hmc_perf_drain(struct hmc_perf_ring *r,
                      void (*emit)(const struct hmr_sample *s, void *arg), void *arg) HM_HIDDEN;

/* perf's data_src -> enum hms_level and 0 unknown / 1 hit / 2 miss (table in
 * hmc_perf_ring.c). */
void hmc_datasrc_decode(uint64_t data_src, unsigned *level, unsigned *hit) HM_HIDDEN;

#endif
