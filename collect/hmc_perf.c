/* hmc_perf.c — open and close the per-thread PEBS / IBS events (see hmc_perf.h).
 *
 * Every event is opened by the raw syscall (perf_event_open(2)) for one thread
 * (pid = tid, cpu = -1), counting from the start (disabled = 0), not inherited by
 * children (inherit = 0: each thread opens its own), user space only, with
 *   sample_type = IP | TID | TIME | ADDR | WEIGHT_STRUCT | DATA_SRC
 *     (WEIGHT when the kernel predates WEIGHT_STRUCT, Linux 5.12: EINVAL),
 *   use_clockid = 1, clockid = CLOCK_MONOTONIC: sample times are the clock the
 *     stream's chunk headers use, so they carry HMS_TIME_NS and need no conversion;
 *   sample_id_all = 1: LOST records carry a time too;
 *   watermark = 1, wakeup_watermark = 3/4 of the ring: the kernel wakes pollers
 *     only when the ring is nearly full, never per sample (we set no O_ASYNC, so
 *     there is no signal at all); the tracer drains in bulk.
 * Each sampling event gets its own ring of 1 + 2^n pages, mapped PROT_WRITE so
 * that data_tail is honoured (hmc_perf_ring.c).
 *
 * Default periods — the arithmetic (budget: 1 % of a thread's time).
 *
 * PEBS cost per sample, c_pebs ~ 3 us:
 *  - the PEBS assist that writes the record: 200-300 ns (Akiyama & Hirofuchi,
 *    "Quantitative evaluation of Intel PEBS overhead for online system-noise
 *    analysis", ROSS'17, doi:10.1145/3095770.3095773);
 *  - one PMI per record: use_clockid turns off "large PEBS" (records batched in
 *    the DS buffer, one PMI per many): intel_pmu_large_pebs_flags() in
 *    arch/x86/events/intel/core.c drops PERF_SAMPLE_TIME from the free-running
 *    flags when use_clockid is set. The PMI plus perf's output path is charged at
 *    the kernel's own per-sample budget, 2.5 us: perf_cpu_time_max_percent (25 %)
 *    of the 10 us between samples at perf_event_max_sample_rate (100000/s),
 *    Documentation/admin-guide/sysctl/kernel.rst; the kernel lowers the rate
 *    ("perf: interrupt took too long") when samples cost more;
 *  - our drain: ~11 ns per 56-byte record (measured on synthetic rings in this
 *    VM), plus a cache miss per 64 bytes of a cold ring: noise next to the PMI.
 *  So 1 % allows 0.01 / 3 us = 3333 samples/s per thread.
 * Loads: ldlat = 30 cycles (perf mem's default) is above the L2-hit latency
 *  (14-16 cycles, Skylake-SP to Sapphire Rapids), so L1 and L2 hits — most loads
 *  — do not count; what counts is L3 hits and beyond. Worst case for one thread:
 *  an L3-resident random walk, ~16 misses in flight (fill buffers) x 80 ns =
 *  2e8 loads/s. With 0.6 % for loads: P >= 2e8 x 3e-6 / 0.006 = 100000, so
 *  HMC_PEBS_DEFAULT_PERIOD = 100003 (a prime: no aliasing with power-of-2
 *  strides). A thread with 1e7-3e7 such loads/s gets 100-300 samples/s (0.03-0.1 %).
 * Stores: every retired store counts, up to ~1.5e9/s; with 0.4 %:
 *  P >= 1.5e9 x 3e-6 / 0.004 = 1.1e6, so HMC_PEBS_STORE_MULT x P = 1.6e6 (0.28 %).
 *  Worst case together: 0.6 + 0.28 < 1 %. For comparison, Extrae's PEBS sampling
 *  is reported at 0.15-4.1 % on real applications; these defaults aim at the low end.
 * IBS: one tagged op every P cycles (cnt_ctl = 0, cycle counting: samples
 *  proportional to time, like the software sampler), one NMI per tagged op (IBS
 *  has no hardware buffer) reading ~8 MSRs, then perf's output path: c_ibs ~ 2.5 us
 *  (the same kernel budget; no PEBS assist). At 4 GHz, P = 0xFFFF0 = 1048560
 *  cycles gives 3815 samples/s = 0.95 % (0.72 % at 3 GHz), near perf mem's 4000 Hz
 *  default. 0xFFFF0 is the largest period the 16-bit IbsOpMaxCnt (in units of 16)
 *  holds, so Zen 1 (no IbsOpCntExt) takes no extra NMIs to stretch a longer
 *  period (perf_ibs_set_period() splits periods above max_period). About a third
 *  of the tagged ops are loads or stores; the rest come back with HMS_NO_MEMOP.
 * Rings: HMC_PERF_RING_PAGES = 32 pages (128 KiB) hold 0.7 s at 3333 samples/s of
 *  56 bytes, ~8 s at a typical 300/s, before the kernel counts PERF_RECORD_LOST.
 *  Ring pages are pinned and charged to perf_event_mlock_kb (516 KiB per CPU) then
 *  RLIMIT_MEMLOCK (Documentation/admin-guide/sysctl/kernel.rst); on EPERM/ENOMEM
 *  the ring is halved until it fits.
 *
 * Page faults (hmc_perf_open_faults): PERF_TYPE_SOFTWARE / PERF_COUNT_SW_PAGE_FAULTS_MIN,
 * counted by the kernel's fault path for every minor fault of the thread
 * (mm_account_fault() in mm/memory.c) with the faulting address; sample_type
 * TID | TIME | ADDR, 32-byte records. exclude_kernel = 1 as everywhere (paranoid 2):
 * faults taken in kernel mode (copy_to_user into an untouched buffer by read(2)) are
 * not counted. Measured in this VM (2 vCPU Zen 4, Linux 6.18; 512 MiB touched one
 * store per 4 KiB page, best of 4, interleaved, 3-4 rounds): a minor fault costs
 * ~1.5 us; the event counting alone (sample_period 0) was within the noise (+-3 %);
 * sampling every fault added ~370 ns per fault (+25 %), every 32nd ~+6 %, every
 * 128th ~+3 %: about 370 ns per sample plus a counting cost below the noise. The
 * budget (1 % of the fault's cost, 15 ns here; bare-metal faults are cheaper but so
 * is the sample) gives P >= 370 / 15 ~ 25; HMC_FAULT_DEFAULT_PERIOD = 61, a prime so
 * that the period does not lock onto a program's repeating pattern of faults (two
 * arrays of 64 pages re-touched every iteration would give every sample to one of
 * them with P = 64), costs ~6 ns a fault (0.4 %). A thread faulting back to back at
 * 0.5-1.5 us a fault writes 11-33 thousand samples/s (0.35-1 MB/s); 16 pages
 * (64 KiB, 2048 records) hold 60-180 ms of that, more than the 4 ms (software
 * sampler) or 50 ms (PEBS/IBS) of CPU time between drains. */
#include "hmc_perf.h"
#include "hm_fds.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef PERF_SAMPLE_WEIGHT_STRUCT
#define PERF_SAMPLE_WEIGHT_STRUCT (1u << 24)
#endif
#define HMC_SAMPLE_BASE                                                                 \
    (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |            \
     PERF_SAMPLE_DATA_SRC)

static int sys_perf_event_open(struct perf_event_attr *a, pid_t tid, int group_fd)
{
    long fd = syscall(SYS_perf_event_open, a, tid, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}

static unsigned ring_pages(const struct hmc_perf_caps *caps)
{
    unsigned p = caps->ring_pages ? caps->ring_pages : HMC_PERF_RING_PAGES;
    while (p & (p - 1))
        p &= p - 1;   /* round down to a power of 2 */
    return p;
}

static void attr_init(struct perf_event_attr *a, uint32_t type, const uint64_t cfg[3])
{
    memset(a, 0, sizeof(*a));
    a->size = sizeof(*a);
    a->type = type;
    a->config = cfg[0];
    a->config1 = cfg[1];
    a->config2 = cfg[2];
    a->exclude_kernel = 1;   /* perf_event_paranoid 2 allows user space only */
    a->exclude_hv = 1;
}

static void attr_sampling(struct perf_event_attr *a, uint64_t period, unsigned pages)
{
    uint64_t bytes = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
    a->sample_period = period;
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC;
    a->sample_id_all = 1;
    a->watermark = 1;
    a->wakeup_watermark = (uint32_t)(bytes - bytes / 4);
}

/* Open a sampling event, falling back from WEIGHT_STRUCT to WEIGHT and from
 * precise_ip max_precise down to 1 (0 when max_precise is 0) on the errors the
 * kernel gives for an unsupported combination: EINVAL (unknown sample_type bit,
 * or a constraint with no counter, e.g. :ppp on a PEBS event that cannot use
 * counter 0 on Sapphire Rapids) and EOPNOTSUPP (precise_ip above the PMU's
 * maximum, x86_pmu_hw_config()). Other errors (ENOENT: no such PMU; EACCES:
 * paranoid setting; EMFILE) end the search. fd, or -errno. */
static int open_sampling(struct perf_event_attr *a, pid_t tid, int group_fd, int max_precise)
{
    int err = -EINVAL;
    for (int ws = 1; ws >= 0; ws--) {
        a->sample_type = HMC_SAMPLE_BASE | (ws ? PERF_SAMPLE_WEIGHT_STRUCT : PERF_SAMPLE_WEIGHT);
        for (int p = max_precise > 3 ? 3 : max_precise; p >= (max_precise ? 1 : 0); p--) {
            a->precise_ip = (unsigned)p & 3u;
            int fd = sys_perf_event_open(a, tid, group_fd);
            if (fd >= 0)
                return fd;
            err = fd;
            if (err != -EINVAL && err != -EOPNOTSUPP)
                return err;
        }
    }
    return err;
}

/* Map a ring for fd, halving it while the pinned-memory limits refuse it. */
static int map_ring(struct hmc_perf_ring *r, int fd, unsigned pages, int kind, int store,
                    uint64_t sample_type)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    for (; pages >= 1; pages /= 2) {
        size_t len = (1 + (size_t)pages) * pg;
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            if (errno != EPERM && errno != ENOMEM)
                return -errno;
            continue;
        }
        int rc = hmc_perf_ring_init(r, m, len, kind, store, sample_type, 1);
        if (rc) {
            munmap(m, len);
            return rc;
        }
        hm_fd_keep(fd, &r->fd, HM_FD_PERF);   /* above the application's numbers */
        return 0;
    }
    return -ENOMEM;
}

/* Loads (behind the mem-loads-aux leader when the PMU needs it) and stores on
 * one core PMU. 0, or -errno when the load event could not be set up. */
static int open_pebs_pmu(const struct hmc_perf_caps *caps, const struct hmc_perf_pebs_pmu *p,
                         uint64_t period, uint32_t ldlat, pid_t tid, struct hmc_perf_ring *rings,
                         int *n, int max_rings)
{
    struct perf_event_attr a;
    unsigned pages = ring_pages(caps);
    int aux = -1, fd, rc;
    if (*n >= max_rings)
        return -ENOSPC;
    if (p->has_aux) {
        /* Sapphire Rapids: mem-loads "needs to always be co-scheduled with" the
         * auxiliary event 0x03/0x82, "in front of the load latency event"; its
         * count is irrelevant (intel_pmu_hw_config()), so it only counts. */
        uint64_t cfg[3] = { p->aux.config, p->aux.config1, p->aux.config2 };
        attr_init(&a, p->type, cfg);
        aux = sys_perf_event_open(&a, tid, -1);
        if (aux < 0)
            return aux;
    }
    uint64_t cfg[3] = { p->loads.config, p->loads.config1, p->loads.config2 };
    if (p->ldlat.nr) {
        /* ldlat is a 16-bit threshold (MSR_PEBS_LD_LAT_THRESHOLD); the sysfs
         * default 3 is the smallest meaningful one */
        uint32_t v = ldlat < 3 ? 3 : ldlat > 0xffff ? 0xffff : ldlat;
        hmc_perf_field_put(&p->ldlat, v, cfg);
    }
    attr_init(&a, p->type, cfg);
    attr_sampling(&a, period, pages);
    fd = open_sampling(&a, tid, aux, p->max_precise);
    if (fd < 0) {
        if (aux >= 0)
            close(aux);
        return fd;
    }
    rc = map_ring(&rings[*n], fd, pages, HMS_SRC_PEBS, 0, a.sample_type);
    if (rc) {
        close(fd);
        if (aux >= 0)
            close(aux);
        return rc;
    }
    hm_fd_keep(aux, &rings[*n].aux_fd, HM_FD_PERF);
    (*n)++;

    if (p->has_stores && *n < max_rings) {
        uint64_t sp = period > UINT64_MAX / HMC_PEBS_STORE_MULT ? UINT64_MAX
                                                                 : period * HMC_PEBS_STORE_MULT;
        uint64_t scfg[3] = { p->stores.config, p->stores.config1, p->stores.config2 };
        attr_init(&a, p->type, scfg);
        attr_sampling(&a, sp, pages);
        fd = open_sampling(&a, tid, -1, p->max_precise);
        if (fd >= 0 && map_ring(&rings[*n], fd, pages, HMS_SRC_PEBS, 1, a.sample_type) == 0)
            (*n)++;
        else if (fd >= 0)
            close(fd);   /* loads alone are still worth having */
    }
    return 0;
}

/* One ibs_op event. precise_ip stays 0: perf_ibs_init() (arch/x86/events/amd/
 * ibs.c) does not look at it — precise_ip 1-2 matter only for core-PMU events
 * the kernel forwards to IBS (cycles:p, forward_event_to_ibs()) — and the IP is
 * always IbsOpRip, flagged exact. The kernel fills ADDR, DATA_SRC and WEIGHT
 * from IbsDcLinAd / IbsOpData2-3 since Linux 6.1. */
static int open_ibs(const struct hmc_perf_caps *caps, uint64_t period, uint32_t ldlat, pid_t tid,
                    struct hmc_perf_ring *rings, int *n, int max_rings)
{
    struct perf_event_attr a;
    unsigned pages = ring_pages(caps);
    if (*n >= max_rings)
        return -ENOSPC;
    uint64_t cfg[3] = { 0, 0, 0 };
    if (caps->ibs_want_l3missonly && caps->ibs_l3missonly.nr)
        hmc_perf_field_put(&caps->ibs_l3missonly, 1, cfg);
    if (caps->ibs_ldlat.nr && ldlat >= 128)   /* Zen 5: 128-2048 cycles, else EINVAL */
        hmc_perf_field_put(&caps->ibs_ldlat, ldlat > 2048 ? 2048 : ldlat, cfg);
    /* "lower 4 bits can not be set in ibs max cnt" (perf_ibs_init(): EINVAL) */
    period &= ~(uint64_t)0xf;
    if (!period)
        period = 0x10;
    int err = -EINVAL;
    /* Privilege filtering: IBS hardware cannot filter by ring; kernels before
     * 6.14 reject any exclude_* (PERF_PMU_CAP_NO_EXCLUDE: EINVAL); 6.14+ accept
     * exclude_kernel with format/swfilt (config2:0) and drop kernel samples in
     * the NMI handler; parts with the RIP[63] filter accept it without swfilt.
     * Last resort: no exclude_* (needs perf_event_paranoid <= 1 or CAP_PERFMON)
     * and the drain drops kernel-mode samples (user_only). */
    for (int excl = 1; excl >= 0; excl--) {
        uint64_t c[3] = { cfg[0], cfg[1], cfg[2] };
        if (excl && caps->ibs_swfilt.nr)
            hmc_perf_field_put(&caps->ibs_swfilt, 1, c);
        attr_init(&a, caps->ibs_type, c);
        a.exclude_kernel = a.exclude_hv = (unsigned)excl & 1u;
        attr_sampling(&a, period, pages);
        int fd = open_sampling(&a, tid, -1, 0);
        if (fd < 0) {
            err = fd;
            if (fd != -EINVAL)
                return fd;
            continue;
        }
        int rc = map_ring(&rings[*n], fd, pages, HMS_SRC_IBS, 0, a.sample_type);
        if (rc) {
            close(fd);
            return rc;
        }
        rings[(*n)++].user_only = excl ? 0 : 1;
        return 0;
    }
    return err;
}

int hmc_perf_open(const struct hmc_perf_caps *caps, int kind, uint64_t period, uint32_t ldlat,
                  pid_t tid, struct hmc_perf_ring *rings, int max_rings)
{
    int n = 0, err = -ENODEV;
    if (!caps || !rings || max_rings <= 0)
        return -EINVAL;
    if (kind == HMS_SRC_PEBS && caps->npebs > 0) {
        if (!period)
            period = HMC_PEBS_DEFAULT_PERIOD;
        if (!ldlat)
            ldlat = HMC_PEBS_DEFAULT_LDLAT;
        int ok = 0;
        /* Hybrid parts: one set per core type, each counting while the thread
         * runs on that type of core. */
        for (int i = 0; i < caps->npebs && i < HMC_PERF_MAX_PEBS_PMUS; i++) {
            int rc = open_pebs_pmu(caps, &caps->pebs[i], period, ldlat, tid, rings, &n,
                                   max_rings);
            if (rc == 0)
                ok = 1;
            else if (err == -ENODEV)
                err = rc;
        }
        return ok ? n : err;
    }
    if (kind == HMS_SRC_IBS && caps->ibs) {
        if (!period)
            period = HMC_IBS_DEFAULT_PERIOD;
        int rc = open_ibs(caps, period, ldlat, tid, rings, &n, max_rings);
        return rc ? rc : n;
    }
    return -ENODEV;
}

int hmc_perf_open_faults(uint64_t period, pid_t tid, unsigned pages, struct hmc_perf_ring *r)
{
    struct perf_event_attr a;
    uint64_t cfg[3] = { PERF_COUNT_SW_PAGE_FAULTS_MIN, 0, 0 };
    if (!r)
        return -EINVAL;
    if (!period)
        period = HMC_FAULT_DEFAULT_PERIOD;
    while (pages & (pages - 1))
        pages &= pages - 1;
    attr_init(&a, PERF_TYPE_SOFTWARE, cfg);
    attr_sampling(&a, period, pages ? pages : HMC_FAULT_RING_PAGES);
    a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR;
    int fd = sys_perf_event_open(&a, tid, -1);
    if (fd < 0)
        return fd;
    int rc = map_ring(r, fd, pages ? pages : HMC_FAULT_RING_PAGES, HMS_SRC_FAULT, 0,
                      a.sample_type);
    if (rc) {
        close(fd);
        return rc;
    }
    r->period = period;
    return 0;
}

void hmc_perf_close(struct hmc_perf_ring *rings, int n)
{
    for (int i = 0; rings && i < n; i++) {
        struct hmc_perf_ring *r = &rings[i];
        /* rings of synthetic memory (fd < 0) are not ours to unmap */
        if (r->fd >= 0 && r->map)
            munmap(r->map, r->map_len);
        hm_fd_drop(&r->fd);
        hm_fd_drop(&r->aux_fd);   /* after its group member */
        r->fd = r->aux_fd = -1;
        r->map = NULL;
        r->data = NULL;
    }
}
