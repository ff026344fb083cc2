/* hmc_perf_ring.c — drain a perf ring buffer into struct hmr_sample records, and
 * decode perf's data_src (hmc_perf_ring.h; hmc_perf.h says how the steps fit).
 *
 * The ring (perf_event_open(2), "MMAP layout"; include/uapi/linux/perf_event.h,
 * struct perf_event_mmap_page): a metadata page, then data_size bytes (a power of
 * 2) at data_offset. data_head and data_tail are free-running byte counts; the
 * kernel writes whole records, 8-byte aligned, each starting with struct
 * perf_event_header {type, misc, size}, and publishes them by advancing
 * data_head. We read data_head with acquire semantics (the man page's rmb()
 * after reading it), decode records up to it, and store data_tail with release
 * semantics (its smp_mb() before the store) so the kernel reuses the space only
 * after we read it; the mapping is PROT_WRITE, so the kernel never overwrites
 * unread data and reports what it could not write as PERF_RECORD_LOST. The
 * same pairing is used by the kernel's own tools/include/linux/ring_buffer.h.
 *
 * Runs in the application's threads: no stdio, no malloc, no locks. */
#include "hmc_perf_ring.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <unistd.h>

/* Constants newer than some installed uapi headers (values are kernel ABI). */
#ifndef PERF_SAMPLE_WEIGHT_STRUCT
#define PERF_SAMPLE_WEIGHT_STRUCT (1u << 24)
#endif
#define HMC_LOST_SAMPLES 13u             /* PERF_RECORD_LOST_SAMPLES, Linux 4.2 */
#define HMC_LVLNUM_L2_MHB 0x05u          /* L2 miss handling buffer, Linux 6.12 */
#define HMC_LVLNUM_MSC    0x06u          /* memory-side cache, Linux 6.12 */
#define HMC_LVLNUM_L0     0x07u          /* L0, newer still */
#define HMC_LVLNUM_UNC    0x08u          /* uncached, Linux 6.1 */

/* sample_type bits this decoder understands: the fixed-size fields. Variable
 * ones (READ, CALLCHAIN, RAW, BRANCH_STACK, REGS_*, STACK_USER) are never opened. */
#define HMC_DECODABLE                                                                  \
    (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |    \
     PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |     \
     PERF_SAMPLE_PERIOD | PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT |              \
     PERF_SAMPLE_DATA_SRC)

int hmc_perf_ring_init(struct hmc_perf_ring *r, void *base, size_t len, int kind, int store,
                       uint64_t sample_type, int sample_id_all)
{
    struct perf_event_mmap_page *pg = base;
    if (!base || len < sizeof(*pg) || (sample_type & ~(uint64_t)HMC_DECODABLE))
        return -EINVAL;
    if ((sample_type & PERF_SAMPLE_WEIGHT) && (sample_type & PERF_SAMPLE_WEIGHT_STRUCT))
        return -EINVAL;   /* the kernel rejects both at once too */
    uint64_t off = pg->data_offset, size = pg->data_size;
    if (!size) {   /* kernels before 4.1 leave these 0: data starts at page 1 */
        off = (uint64_t)sysconf(_SC_PAGESIZE);
        size = len > off ? len - off : 0;
    }
    if (size < 64 || (size & (size - 1)) || off < sizeof(*pg) || off > len || size > len - off)
        return -EINVAL;
    memset(r, 0, sizeof(*r));
    r->fd = -1;
    r->aux_fd = -1;
    r->map = base;
    r->map_len = len;
    r->data = (unsigned char *)base + off;
    r->data_size = size;
    r->sample_type = sample_type;
    r->kind = (uint8_t)kind;
    r->store = store ? 1 : 0;
    r->sample_id_all = sample_id_all ? 1 : 0;
    return 0;
}

static inline uint64_t rd64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Copy n bytes at ring offset off (already masked), across the end if needed. */
static void ring_copy(const struct hmc_perf_ring *r, uint64_t off, unsigned char *dst, size_t n)
{
    size_t first = off + n <= r->data_size ? n : (size_t)(r->data_size - off);
    memcpy(dst, r->data + off, first);
    memcpy(dst + first, r->data, n - first);
}

/* Bytes of a PERF_RECORD_SAMPLE with this sample_type (every field is a u64). */
static size_t sample_len(uint64_t st)
{
    return 8 + 8 * (size_t)__builtin_popcountll(st & HMC_DECODABLE);
}

/* Bytes of the sample_id trailer that sample_id_all appends to other records. */
static size_t trailer_len(uint64_t st)
{
    uint64_t m = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
                 PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
    return 8 * (size_t)__builtin_popcountll(st & m);
}

/* perf's data_src -> (enum hms_level, hit) — include/uapi/linux/perf_event.h
 * (union perf_mem_data_src). The composite mem_lvl_num (+ mem_remote, mem_hops)
 * is preferred; the older mem_lvl bit set (deprecated there "in favour of" the
 * composite fields) is used when mem_lvl_num is 0 or NA. hit comes from
 * PERF_MEM_LVL_HIT / _MISS, which qualify the level as in `perf mem report`:
 * "Local RAM hit" means an L3 miss served by local DRAM.
 *
 *   mem_lvl_num               remote / hops            -> level
 *   L0, L1                    -                        -> L1
 *   LFB, L2_MHB               -                        -> LFB (an in-flight miss)
 *   L2                        -                        -> L2
 *   L3, ANY_CACHE, L4, MSC    not remote, or HOPS_0    -> L3 (a cache on this node)
 *   L3, ANY_CACHE             remote, mem_lvl REM_RAM* -> REMOTE_RAM (Intel's
 *                                                        "L3 miss, shared" 0x0b)
 *   L3, ANY_CACHE             remote, other hops       -> REMOTE_CACHE
 *   RAM                       not remote / remote      -> LOCAL_RAM / REMOTE_RAM
 *   PMEM                      either                   -> PMEM
 *   CXL                       either                   -> CXL
 *   IO / UNC                  -                        -> IO / UNCACHED
 *   0 or NA: mem_lvl bits, nearest first: L1, LFB, L2, L3, LOC_RAM -> LOCAL_RAM,
 *   REM_RAM1|2 -> REMOTE_RAM, REM_CCE1|2 -> REMOTE_CACHE, IO, UNC -> UNCACHED,
 *   else UNKNOWN.
 * L4 (eDRAM) and MSC (memory-side cache) have no level of their own in
 * enum hms_level; they are the last cache before memory, so L3. */
void hmc_datasrc_decode(uint64_t ds, unsigned *level, unsigned *hit)
{
    unsigned lvl = (unsigned)(ds >> PERF_MEM_LVL_SHIFT) & 0x3fffu;
    unsigned num = (unsigned)(ds >> PERF_MEM_LVLNUM_SHIFT) & 0xfu;
    unsigned rem = (unsigned)(ds >> PERF_MEM_REMOTE_SHIFT) & 1u;
    unsigned hops = (unsigned)(ds >> PERF_MEM_HOPS_SHIFT) & 7u;
    unsigned l = HMS_LVL_UNKNOWN;

    *hit = (lvl & PERF_MEM_LVL_HIT) ? HM_SAMPLE_HIT_HIT
           : (lvl & PERF_MEM_LVL_MISS) ? HM_SAMPLE_HIT_MISS : HM_SAMPLE_HIT_UNKNOWN;
    switch (num) {
    case HMC_LVLNUM_L0:
    case PERF_MEM_LVLNUM_L1:
        l = HMS_LVL_L1;
        break;
    case PERF_MEM_LVLNUM_LFB:
    case HMC_LVLNUM_L2_MHB:
        l = HMS_LVL_LFB;
        break;
    case PERF_MEM_LVLNUM_L2:
        l = HMS_LVL_L2;
        break;
    case PERF_MEM_LVLNUM_L3:
    case PERF_MEM_LVLNUM_ANY_CACHE:
        if (rem && (lvl & (PERF_MEM_LVL_REM_RAM1 | PERF_MEM_LVL_REM_RAM2)))
            l = HMS_LVL_REMOTE_RAM;
        else if (rem && hops != PERF_MEM_HOPS_0)
            l = HMS_LVL_REMOTE_CACHE;
        else
            l = HMS_LVL_L3;
        break;
    case PERF_MEM_LVLNUM_L4:
    case HMC_LVLNUM_MSC:
        l = HMS_LVL_L3;
        break;
    case PERF_MEM_LVLNUM_RAM:
        l = rem ? HMS_LVL_REMOTE_RAM : HMS_LVL_LOCAL_RAM;
        break;
    case PERF_MEM_LVLNUM_PMEM:
        l = HMS_LVL_PMEM;
        break;
    case PERF_MEM_LVLNUM_CXL:
        l = HMS_LVL_CXL;
        break;
    case PERF_MEM_LVLNUM_IO:
        l = HMS_LVL_IO;
        break;
    case HMC_LVLNUM_UNC:
        l = HMS_LVL_UNCACHED;
        break;
    default:   /* 0 (not provided) or NA: the older bit set */
        if (lvl & PERF_MEM_LVL_L1)
            l = HMS_LVL_L1;
        else if (lvl & PERF_MEM_LVL_LFB)
            l = HMS_LVL_LFB;
        else if (lvl & PERF_MEM_LVL_L2)
            l = HMS_LVL_L2;
        else if (lvl & PERF_MEM_LVL_L3)
            l = HMS_LVL_L3;
        else if (lvl & PERF_MEM_LVL_LOC_RAM)
            l = HMS_LVL_LOCAL_RAM;
        else if (lvl & (PERF_MEM_LVL_REM_RAM1 | PERF_MEM_LVL_REM_RAM2))
            l = HMS_LVL_REMOTE_RAM;
        else if (lvl & (PERF_MEM_LVL_REM_CCE1 | PERF_MEM_LVL_REM_CCE2))
            l = HMS_LVL_REMOTE_CACHE;
        else if (lvl & PERF_MEM_LVL_IO)
            l = HMS_LVL_IO;
        else if (lvl & PERF_MEM_LVL_UNC)
            l = HMS_LVL_UNCACHED;
        break;
    }
    *level = l;
}

static void sample_init(struct hmr_sample *s, const struct hmc_perf_ring *r)
{
    memset(s, 0, sizeof(*s));
    s->h.type = HMR_SAMPLE;
    s->h.kind = r->kind;
    s->h.len8 = HMR_LEN8(sizeof(*s));
}

/* PERF_RECORD_SAMPLE at rec[0..len). 1 if s was filled, 0 if dropped. */
static int decode_sample(struct hmc_perf_ring *r, const unsigned char *rec, uint16_t misc,
                         struct hmr_sample *s)
{
    uint64_t st = r->sample_type, w = 0;
    size_t o = 8;
    sample_init(s, r);
    if (r->user_only && (misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER) {
        r->n_kernel++;
        return 0;
    }
    o += (st & PERF_SAMPLE_IDENTIFIER) ? 8 : 0;
    if (st & PERF_SAMPLE_IP)
        s->ip = rd64(rec + o), o += 8;
    o += (st & PERF_SAMPLE_TID) ? 8 : 0;   /* u32 pid, tid: the ring is per thread */
    if (st & PERF_SAMPLE_TIME) {
        s->t = rd64(rec + o), o += 8;
        s->h.aux |= HMS_TIME_NS;   /* use_clockid = CLOCK_MONOTONIC */
        r->last_t = s->t;
    }
    if (st & PERF_SAMPLE_ADDR)
        s->addr = rd64(rec + o), o += 8;
    o += (st & PERF_SAMPLE_ID) ? 8 : 0;
    o += (st & PERF_SAMPLE_STREAM_ID) ? 8 : 0;
    o += (st & PERF_SAMPLE_CPU) ? 8 : 0;
    o += (st & PERF_SAMPLE_PERIOD) ? 8 : 0;
    if (st & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT))
        w = rd64(rec + o), o += 8;
    if (st & PERF_SAMPLE_DATA_SRC)
        s->data_src = rd64(rec + o);
    /* Latency in cycles. WEIGHT_STRUCT: var1_dw, the low half on little-endian
     * (PEBS cache latency; IBS IbsDcMissLat). WEIGHT: the kernel fills only the
     * low 32 bits with the latency (arch/x86/events/intel/ds.c, amd/ibs.c). */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    if (st & PERF_SAMPLE_WEIGHT_STRUCT)
        w >>= 32;
#endif
    s->weight = (uint32_t)w;
    if (s->addr && (st & PERF_SAMPLE_ADDR))
        s->h.aux |= HMS_ADDR_OK;
    if (st & PERF_SAMPLE_DATA_SRC) {
        unsigned op = (unsigned)(s->data_src >> PERF_MEM_OP_SHIFT) & 0x1fu, lvl, hit;
        hmc_datasrc_decode(s->data_src, &lvl, &hit);
        s->h.aux |= (uint32_t)lvl << HMS_LEVEL_SHIFT | (uint32_t)hit << HMS_HIT_SHIFT;
        if (op == PERF_MEM_OP_STORE)
            s->h.aux |= HMS_STORE;
        /* IBS tags every kind of op; non-memory ops come with mem_op NA */
        if (r->kind == HMS_SRC_IBS && !(op & (PERF_MEM_OP_LOAD | PERF_MEM_OP_STORE)))
            s->h.aux |= HMS_NO_MEMOP;
    }
    if (r->store)
        s->h.aux |= HMS_STORE;
    if (r->kind == HMS_SRC_FAULT)
        s->weight = r->period ? r->period : 1;   /* the faults this sample stands for */
    r->n_samples++;
    return 1;
}

/* PERF_RECORD_LOST {id, lost} or PERF_RECORD_LOST_SAMPLES {lost}, each followed
 * by the sample_id trailer (sample_id_all) that carries the time. */
static void decode_lost(struct hmc_perf_ring *r, const unsigned char *rec, size_t len,
                        size_t size, size_t lost_off, struct hmr_sample *s)
{
    uint64_t st = r->sample_type;
    size_t tl = trailer_len(st);
    sample_init(s, r);
    s->weight = rd64(rec + lost_off);
    s->h.aux = HMS_LOST | (r->store ? HMS_STORE : 0u);
    s->t = r->last_t;
    if (r->sample_id_all && (st & PERF_SAMPLE_TIME) && size >= lost_off + 8 + tl &&
        size <= len) {
        size_t o = size - tl + ((st & PERF_SAMPLE_TID) ? 8 : 0);
        s->t = rd64(rec + o);
        r->last_t = s->t;
    }
    if (r->last_t || (r->sample_id_all && (st & PERF_SAMPLE_TIME)))
        s->h.aux |= HMS_TIME_NS;
    r->n_lost += s->weight;
}

size_t hmc_perf_drain(struct hmc_perf_ring *r,
                      void (*emit)(const struct hmr_sample *s, void *arg), void *arg)
{
    struct perf_event_mmap_page *pg = r->map;
    if (!pg || !r->data)
        return 0;
    uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = pg->data_tail;   /* only we write it */
    uint64_t mask = r->data_size - 1;
    size_t emitted = 0, need = sample_len(r->sample_type);
    unsigned char tmp[128];

    if (head - tail > r->data_size || (tail & 7)) {
        r->n_corrupt++;   /* impossible positions: resynchronise below */
        tail = head;
    }
    while (tail != head) {
        uint64_t avail = head - tail, off = tail & mask;
        struct perf_event_header h;
        if (avail < sizeof(h))
            goto corrupt;
        memcpy(&h, r->data + off, sizeof(h));   /* 8-aligned: never wraps */
        if (h.size < sizeof(h) || (h.size & 7) || h.size > avail)
            goto corrupt;
        /* Decode in place, or from a copy when the record wraps the end. */
        const unsigned char *rec = r->data + off;
        size_t len = h.size;
        if (off + h.size > r->data_size) {
            len = h.size < sizeof(tmp) ? h.size : sizeof(tmp);
            ring_copy(r, off, tmp, len);
            rec = tmp;
        }
        struct hmr_sample s;
        int have = 0;
        switch (h.type) {
        case PERF_RECORD_SAMPLE:
            if (h.size < need || len < need)
                goto corrupt;
            have = decode_sample(r, rec, h.misc, &s);
            break;
        case PERF_RECORD_LOST:
            if (len < 24)
                goto corrupt;
            decode_lost(r, rec, len, h.size, 16, &s);
            have = 1;
            break;
        case HMC_LOST_SAMPLES:
            if (len < 16)
                goto corrupt;
            decode_lost(r, rec, len, h.size, 8, &s);
            have = 1;
            break;
        case PERF_RECORD_THROTTLE:
            r->n_throttle++;
            break;
        default:   /* UNTHROTTLE, and anything newer: skip by size */
            r->n_other++;
            break;
        }
        if (have) {
            if (emit)
                emit(&s, arg);
            emitted++;
        }
        tail += h.size;
    }
    goto done;
corrupt:
    /* A header that cannot be right (size 0, unaligned, past data_head). The
     * kernel publishes whole records, so data_head is a record boundary: drop
     * everything up to it rather than leave the ring stuck full. */
    r->n_corrupt++;
    tail = head;
done:
    __atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
    return emitted;
}
