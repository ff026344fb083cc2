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
 * threads (thread start, buffer flushes). Files: hmc_perf_detect.c (sysfs;
 * hmc_perf_detect.h), hmc_perf.c (open/close, default periods; this header),
 * hmc_perf_ring.c (drain, data_src; hmc_perf_ring.h). This header includes the other
 * two. */
#ifndef HMC_PERF_H
#define HMC_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "hm_util.h"
#include "hmc_stream.h"
#include "hmc_perf_detect.h"   /* struct hmc_perf_caps: what hmc_perf_detect found */
#include "hmc_perf_ring.h"     /* struct hmc_perf_ring: an event's ring and its drain */

/* Default sampling parameters; the arithmetic behind them is in hmc_perf.c.
 * PEBS: one load sample per HMC_PEBS_DEFAULT_PERIOD loads slower than
 * HMC_PEBS_DEFAULT_LDLAT cycles; stores at HMC_PEBS_STORE_MULT times that period.
 * IBS: one tagged op per HMC_IBS_DEFAULT_PERIOD cycles (a multiple of 16). */
#define HMC_PEBS_DEFAULT_PERIOD 100003u
#define HMC_PEBS_DEFAULT_LDLAT  30u
#define HMC_PEBS_STORE_MULT     16u
#define HMC_IBS_DEFAULT_PERIOD  0xFFFF0u   /* 1048560 cycles */
/* Page faults (hmc_perf_open_faults): one sample per HMC_FAULT_DEFAULT_PERIOD minor
 * faults of the thread, into a ring of HMC_FAULT_RING_PAGES pages (arithmetic in
 * hmc_perf.c). */
#define HMC_FAULT_DEFAULT_PERIOD 61u
#define HMC_FAULT_RING_PAGES     16u

#define HMC_PERF_MAX_RINGS     4   /* enough for any hmc_perf_open() */

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

#endif
