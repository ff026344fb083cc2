/* hmc_perf_ring.h — a perf event's ring buffer drained into struct hmr_sample
 * records, and perf's data_src decoded (hmc_perf_ring.c). Part of hmc_perf.h, which
 * includes it; tests build rings over synthetic memory with hmc_perf_ring_init. */
#ifndef HMC_PERF_RING_H
#define HMC_PERF_RING_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"
#include "hmc_stream.h"

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
