/* hmc_stream.h — the raw per-process stream libhmtrace.so writes during the run
 * and hmtune-finalize reads afterwards (docs/formats.md, "raw stream").
 *
 * A file is a sequence of chunks, each written with one write(2) on an O_APPEND
 * descriptor: a 32-byte chunk header, then whole records. Times in thread
 * records are ticks (TSC, or ns when ticks_are_ns); the (ticks, ns) pairs in the
 * chunk headers and the process records map them to CLOCK_MONOTONIC ns. Records are 8-byte
 * aligned, little-endian, and start with struct hmr_hdr whose len8 gives the
 * record length in 8-byte words, so a reader can skip types it does not know. */
#ifndef HMC_STREAM_H
#define HMC_STREAM_H

#include <stdint.h>

#include "hm_events.h"   /* the trace's value tables, which the enums below mirror */

#define HMR_MAGIC   0x31524d48u   /* "HMR1" */
#define HMR_VERSION 1u

struct hmr_chunk {
    uint32_t magic;
    uint32_t stream;   /* per-process stream id: one per thread lifetime; 0 = process */
    uint32_t nbytes;   /* bytes of records after this header */
    uint32_t seq;      /* per-stream chunk number, from 0 */
    uint64_t ticks;    /* clock pair taken when the chunk was written: record */
    uint64_t ns;       /*   times are ticks, converted with these pairs */
};

enum hmr_type {
    HMR_PROC   = 1,  /* first record of the file (stream 0) */
    HMR_MODULE = 2,  /* a loaded module: aux = module id */
    HMR_THREAD = 3,  /* stream start: the OS thread behind the stream */
    HMR_STACK  = 4,  /* aux = per-stream stack id, kind = depth, then packed frames */
    HMR_CALL   = 5,  /* an allocating call, kind = enum hmr_kind, aux = stack id */
    HMR_FREE   = 6,  /* free of a pointer that may have been traced */
    HMR_TEND   = 7,  /* stream end with the thread's counters */
    HMR_PEND   = 8,  /* process end: kind = enum hmr_end */
    HMR_SAMPLE = 9,  /* a sampled memory access: kind = enum hmr_src, aux = HMS_* flags */
    HMR_SAMPLER = 10, /* the sampler in use: kind = enum hmr_src, then its name
                       * (kind HMS_SRC_FAULT: the page-fault sampler, a record of its own) */
    HMR_SCOST  = 11, /* the sampler's own cost so far, in a sample stream (cumulative) */
    HMR_CNTSET = 12, /* the counters asked for (process stream): kind = 1 when none could be
                      * counted and the software events were taken, then the text
                      * "NAME (why), ..." of those not counted */
    HMR_CNTDEF = 13, /* a counter the threads record (process stream): kind = its index,
                      * aux = PAPI's event code, then its name and description */
    HMR_COUNTERS = 14, /* a thread's counters (sample stream): struct hmr_counters */
    HMR_SCALL  = 20, /* a CALL below min_size traced by small-call sampling, with its weight */
};

/* Hardware counters (hmc_counters.c) as Extrae writes PAPI's: the Paraver event type
 * of a counter is HMR_HWC_BASE plus the low 16 bits of a preset's PAPI code, or
 * HMR_HWC_BASE_NATIVE plus those of a native event's; HMR_HWC_SET is the active
 * counter set (1), at a thread's first reading. Values are the counts since the
 * thread's previous reading. */
#define HMR_MAX_COUNTERS 8
#define HMR_HWC_BASE ((uint64_t)HM_EV_HWC_PRESET)
#define HMR_HWC_BASE_NATIVE ((uint64_t)HM_EV_HWC_NATIVE)
#define HMR_HWC_SET ((uint64_t)HM_EV_HWC_SET)
#define HMR_PAPI_PRESET 0x80000000u
static inline uint64_t hmr_counter_type(uint32_t code)
{
    return (code & HMR_PAPI_PRESET ? HMR_HWC_BASE : HMR_HWC_BASE_NATIVE) + (code & 0xffffu);
}

/* Where a sample came from: the access samplers are the values of event 41000021
 * (common/trace_values.tsv). HMS_SRC_FAULT samples are minor page faults (perf's
 * software event), taken alongside the access sampler: addr is the faulting data
 * address and weight the faults the sample stands for (the sampling period). It is
 * never a process's access sampler, so never a value of 41000021. */
enum hmr_src { HMS_SRC_NONE = HM_SAMPLER_NONE, HMS_SRC_PEBS = HM_SAMPLER_PEBS,
               HMS_SRC_IBS = HM_SAMPLER_IBS, HMS_SRC_SOFT = HM_SAMPLER_SOFT,
               HMS_SRC_FAULT = 4 };
_Static_assert(HMS_SRC_FAULT > HM_SAMPLER_MAX, "the page-fault source is no sampler value");

/* struct hmr_sample flags (in aux) */
#define HMS_STORE      0x1u    /* the access is a store (else a load) */
#define HMS_ADDR_OK    0x2u    /* addr is a data address */
#define HMS_TIME_NS    0x4u    /* t is CLOCK_MONOTONIC ns (perf), not ticks */
#define HMS_BREAKPOINT 0x8u    /* addr recovered by a one-shot execute breakpoint */
#define HMS_REJECTED   0x10u   /* the instruction's address cannot be known (gather...) */
#define HMS_NO_MEMOP   0x20u   /* no memory operand at the sampled instruction */
#define HMS_LOST       0x40u   /* weight = number of samples the kernel dropped */
#define HMS_AHEAD      0x80u   /* addr is the next access in straight-line code from the
                                * interrupted rip (software sampler's look ahead) */
#define HMS_LEVEL_SHIFT 8      /* bits 8..15: enum hms_level */
#define HMS_HIT_SHIFT  16      /* bits 16..17: HM_SAMPLE_HIT_* (0 unknown, 1 hit, 2 miss) */
/* HMS_AHEAD and producer-load samples checked by execute breakpoints
 * (HMTUNE_SAMPLE_VERIFY=1; hmc_sampler.c, enum check): the address the accessing
 * instruction computed when it ran was the same, or different; both bits: it was not
 * reached before the next sample. Neither: not checked. */
#define HMS_VERIFY_SAME 0x40000u
#define HMS_VERIFY_DIFF 0x80000u
#define HMS_LOOK_SHIFT 20      /* bits 20..23: see enum hms_look */
#define HMS_WHY_SHIFT  24      /* bits 24..31: enum hms_why */

/* Software sampler: why the sampled instruction (the one before the interrupted rip)
 * gave no address from the registers as they are (bits 24..31 of a sample's flags; 0
 * on samples of other samplers): the values of event 41000026, declared in
 * common/trace_values.tsv (append only; docs/formats.md §2 lists them). The sampler
 * adds the breakpoint's outcomes 15..17. */
enum hms_why {
    HMS_WHY_NONE = 0,   /* the address was computed (never written to the trace) */
    /* no memory operand: integer/general (alu, mov reg, setcc, ud2) */
    HMS_WHY_INT = HM_SAMPLE_WHY_NO_MEMOP_INT,
    /* no memory operand: SSE/AVX/AVX-512/MMX register-only */
    HMS_WHY_VEC = HM_SAMPLE_WHY_NO_MEMOP_VECTOR,
    HMS_WHY_X87 = HM_SAMPLE_WHY_NO_MEMOP_X87,        /* no memory operand: x87 register-only */
    HMS_WHY_HINT = HM_SAMPLE_WHY_HINT,  /* lea, nop, pause, endbr, prefetch, cache-line flush */
    /* a conditional branch (or loop/jrcxz) without memory */
    HMS_WHY_BRANCH = HM_SAMPLE_WHY_COND_BRANCH,
    /* syscall/sysenter/int: the sampled time was in the kernel */
    HMS_WHY_SYSCALL = HM_SAMPLE_WHY_SYSCALL,
    /* before rip is a jmp/call/ret: rip is a branch target */
    HMS_WHY_AFTER_JUMP = HM_SAMPLE_WHY_AFTER_JUMP,
    /* the backward scan could not tell the previous instruction */
    HMS_WHY_AMBIGUOUS = HM_SAMPLE_WHY_AMBIGUOUS,
    /* the code at rip cannot be read (unmapped, not in a module) */
    HMS_WHY_UNREADABLE = HM_SAMPLE_WHY_UNREADABLE,
    HMS_WHY_NESTED = HM_SAMPLE_WHY_NESTED,  /* the decoder was busy (a signal in the handler) */
    HMS_WHY_VSIB = HM_SAMPLE_WHY_GATHER_SCATTER,     /* gather/scatter */
    /* a memory operand capstone 4 cannot decode (AVX-512 forms) */
    HMS_WHY_UNDECODED = HM_SAMPLE_WHY_UNDECODED,
    HMS_WHY_ODD = HM_SAMPLE_WHY_ODD,  /* xlat, enter, other segments, > 2 memory operands */
    /* it overwrote its own address register: breakpoint armed */
    HMS_WHY_CLOBBERED = HM_SAMPLE_WHY_CLOBBERED,
    /* ... and no breakpoint was possible (perf refused, tracer code) */
    HMS_WHY_BP_NONE = HM_SAMPLE_WHY_CLOBBERED_NO_BREAKPOINT,
    /* ... the breakpoint did not fire before the next sample */
    HMS_WHY_BP_MISSED = HM_SAMPLE_WHY_BREAKPOINT_MISSED,
    /* ... it fired late (SIGTRAP blocked) or could not be decoded */
    HMS_WHY_BP_LATE = HM_SAMPLE_WHY_BREAKPOINT_LATE,
    /* a string instruction (movs, stos, lods, cmps, scas without rep) that advanced its
     * pointer: the address is recovered by undoing the step (HMS_ADDR_OK is set) */
    HMS_WHY_STRING = HM_SAMPLE_WHY_STRING,
    HMS_WHY_N = HM_SAMPLE_WHY_MAX + 1
};

/* Software sampler, bits 20..23 of a sample's flags: with HMS_AHEAD, how many
 * instructions lie between rip and the access; without it, why the look ahead from
 * rip (hmc_decode_ahead) found no access. */
enum hms_look {
    HMS_LOOK_NOT_TRIED = 0,
    HMS_LOOK_BRANCH = 1,     /* a jump, branch, syscall or trap came first */
    HMS_LOOK_WRITTEN = 2,    /* an instruction in between writes the access's address register */
    HMS_LOOK_UNKNOWN = 3,    /* the access cannot be computed (gather, string, undecodable) */
    HMS_LOOK_UNDECODED = 4,  /* an instruction in between cannot be decoded */
    HMS_LOOK_NONE = 5,       /* no access within the window */
    HMS_LOOK_UNREADABLE = 6, /* the code at rip cannot be read */
    HMS_LOOK_N = 7
};

/* Memory level of a sampled access (the values of event 32000002). */
enum hms_level {
    HMS_LVL_UNKNOWN = HM_SAMPLE_LEVEL_UNKNOWN, HMS_LVL_L1 = HM_SAMPLE_LEVEL_L1,
    HMS_LVL_LFB = HM_SAMPLE_LEVEL_LFB, HMS_LVL_L2 = HM_SAMPLE_LEVEL_L2,
    HMS_LVL_L3 = HM_SAMPLE_LEVEL_L3, HMS_LVL_LOCAL_RAM = HM_SAMPLE_LEVEL_LOCAL_RAM,
    HMS_LVL_REMOTE_RAM = HM_SAMPLE_LEVEL_REMOTE_RAM,
    HMS_LVL_REMOTE_CACHE = HM_SAMPLE_LEVEL_REMOTE_CACHE, HMS_LVL_PMEM = HM_SAMPLE_LEVEL_PMEM,
    HMS_LVL_CXL = HM_SAMPLE_LEVEL_CXL, HMS_LVL_IO = HM_SAMPLE_LEVEL_IO,
    HMS_LVL_UNCACHED = HM_SAMPLE_LEVEL_UNCACHED,
};

enum hmr_kind {  /* the values of 41000000; 40000040 gets the nearest Extrae kind */
    HMK_MALLOC = HM_CALL_KIND_MALLOC, HMK_FREE = HM_CALL_KIND_FREE,
    HMK_REALLOC = HM_CALL_KIND_REALLOC, HMK_CALLOC = HM_CALL_KIND_CALLOC,
    HMK_POSIX_MEMALIGN = HM_CALL_KIND_POSIX_MEMALIGN,
    HMK_ALIGNED_ALLOC = HM_CALL_KIND_ALIGNED_ALLOC, HMK_MEMALIGN = HM_CALL_KIND_MEMALIGN,
    HMK_VALLOC = HM_CALL_KIND_VALLOC, HMK_PVALLOC = HM_CALL_KIND_PVALLOC,
    HMK_REALLOCARRAY = HM_CALL_KIND_REALLOCARRAY,
};
#define HMK_MAX HM_CALL_KIND_MAX

enum hmr_end { HME_EXIT = 0, HME__EXIT = 1, HME_EXEC = 2, HME_SIGNAL = 3 };

struct hmr_hdr {
    uint8_t  type;
    uint8_t  kind;
    uint16_t len8;
    uint32_t aux;
};

struct hmr_proc {
    struct hmr_hdr h;
    uint32_t version, pid, ppid;
    int32_t  rank, nranks;
    uint32_t depth;
    uint64_t min_size;
    uint64_t t_start;      /* CLOCK_MONOTONIC ns */
    uint64_t t_real;       /* CLOCK_REALTIME ns at t_start */
    uint64_t tk_start;     /* ticks at t_start */
    uint16_t host_len, exe_len, cmd_len, pad;
    uint32_t ticks_are_ns;
    /* then host, exe, cmdline (NUL-separated args), padded to 8 bytes */
};

struct hmr_module {
    struct hmr_hdr h;
    uint64_t base, lo, hi;
    uint32_t path_len, pad;
    /* then path, padded to 8 bytes */
};

struct hmr_thread {
    struct hmr_hdr h;
    uint64_t t;
    uint32_t tid, pad;
    uint64_t stack_lo, stack_hi;   /* the thread's stack, when known (sample streams) */
};

/* A thread's samples go to their own stream: its allocation stream's id | this;
 * its sampled page faults to another: id | HMR_SAMPLE_STREAM | HMR_FAULT_STREAM.
 * HMR_STREAM_BASE gives the allocation stream's id back. */
#define HMR_SAMPLE_STREAM 0x80000000u
#define HMR_FAULT_STREAM  0x40000000u
#define HMR_STREAM_BASE(id) ((id) & ~(HMR_SAMPLE_STREAM | HMR_FAULT_STREAM))

struct hmr_stack {
    struct hmr_hdr h;
    /* then kind (depth) packed frames: module id << 48 | offset */
};

struct hmr_call {
    struct hmr_hdr h;
    uint64_t t0, t1;       /* call entry and exit, ticks */
    uint64_t size;         /* requested bytes (calloc/reallocarray: nmemb*size) */
    uint64_t align;        /* alignment for the aligned kinds, else 0 */
    uint64_t ptr_in;       /* realloc/reallocarray input */
    uint64_t ptr_out;      /* result (0 on failure) */
};

/* A call below min_size that small-call sampling traced (hmc_small.h): a CALL
 * record followed by the number of calls it stands for. */
struct hmr_scall {
    struct hmr_hdr h;      /* kind = call kind, aux = stack id, as HMR_CALL */
    uint64_t t0, t1, size, align, ptr_in, ptr_out;
    uint64_t weight;       /* calls this one stands for: the sampling interval N */
};

struct hmr_free {
    struct hmr_hdr h;
    uint64_t t0, t1, ptr;
};

struct hmr_tend {
    struct hmr_hdr h;
    uint64_t t;
    uint64_t tracer_tk;    /* time spent in the tracer by this thread, ticks */
    uint64_t n_calls;      /* interposed calls seen (all sizes) */
    uint64_t n_traced;     /* calls recorded */
    uint64_t n_lost;       /* records dropped (write failures) */
};

struct hmr_pend {
    struct hmr_hdr h;
    uint64_t t;            /* ns */
    uint64_t tk;           /* ticks at t */
    uint32_t signo, pad;
};

/* Written every HMR_SCOST_EVERY timer signals and when the thread's sampling stops;
 * the last one of a stream holds its totals. */
#define HMR_SCOST_EVERY 256
struct hmr_scost {
    struct hmr_hdr h;
    uint64_t handler_tk;   /* ticks spent in the sampler's signal handlers */
    uint64_t n_timer;      /* timer signals handled */
    uint64_t n_trap;       /* breakpoint traps handled */
    uint64_t n_decode;     /* instructions decoded afresh (the decoder's cache missed) */
};

struct hmr_sample {
    struct hmr_hdr h;
    uint64_t t;            /* ticks, or ns with HMS_TIME_NS */
    uint64_t ip;           /* the sampled instruction */
    uint64_t addr;         /* data address (HMS_ADDR_OK) */
    uint64_t weight;       /* PEBS/IBS: latency in cycles; soft: stall ns; fault: faults */
    uint64_t data_src;     /* perf's raw data_src (PEBS/IBS), else 0 */
    uint64_t iclass;       /* software sampler: HMS_CLS_* bits of the accessing
                            * instruction; 0 for other samplers. Appended: a record
                            * of HMR_SAMPLE_V1_BYTES (without it) reads as class 0 */
};
#define HMR_SAMPLE_V1_BYTES 48u

/* When a thread read its counters: at its start, at a timer signal of the sampler
 * (just before that signal's sample), at its end. */
enum hmr_cnt_when { HMR_CNT_START = 0, HMR_CNT_TICK = 1, HMR_CNT_END = 2 };

/* h.kind: how many values (those of the process's HMR_CNTDEF records, in index
 * order); h.aux: enum hmr_cnt_when. v: counts since the thread's event set started
 * (kind values, the record HMR_COUNTERS_BYTES(kind) long). */
struct hmr_counters {
    struct hmr_hdr h;
    uint64_t t;            /* ticks */
    uint64_t v[HMR_MAX_COUNTERS];
};
#define HMR_COUNTERS_BYTES(n) ((uint32_t)(sizeof(struct hmr_hdr) + 8 + 8 * (uint32_t)(n)))

/* struct hmr_sample's iclass: what kind of instruction the accessing one is (the
 * values of event 41000036 are these bits, docs/formats.md §2). */
#define HMS_CLS_ATOMIC HM_ACCESS_INSN_ATOMIC  /* lock prefix, xchg with memory, cmpxchg */
#define HMS_CLS_SPIN   HM_ACCESS_INSN_SPIN    /* pause was the sampled (or interrupted) one */
#define HMS_CLS_VECTOR HM_ACCESS_INSN_VECTOR  /* a memory operand of 16 bytes or more */
#define HMS_CLS_STRING HM_ACCESS_INSN_STRING  /* movs, stos, lods, cmps, scas */
#define HMS_CLS_CHASE  HM_ACCESS_INSN_CHASE   /* the load overwrote its own address register */
#define HMS_CLS_STRIDE HM_ACCESS_INSN_STRIDE  /* an address register steps by a constant in its loop */
#define HMS_CLS_ALL    0x3fu
/* Software sampler, bits 8..11 of iclass: the producer-load rule (hmc_behind.h) for a
 * sample whose instruction has no memory operand: HMS_BEHIND_OK, the address is the
 * load's whose result the instruction consumed, bits 12..15 then the instructions from
 * the load to the sampled one (1..HMC_BEHIND_MAX); else why the rule found none
 * (enum hms_behind). 0: not tried (other samples, other samplers, older tracers). */
#define HMS_BEHIND_SHIFT 8
#define HMS_BEHIND_DIST_SHIFT 12
#define HMS_BEHIND_OF(iclass) ((unsigned)((iclass) >> HMS_BEHIND_SHIFT) & 15u)
#define HMS_BEHIND_DIST(iclass) ((unsigned)((iclass) >> HMS_BEHIND_DIST_SHIFT) & 15u)
enum hms_behind {
    HMS_BEHIND_NOT_TRIED = 0,
    HMS_BEHIND_OK = 1,          /* recovered: the producer load's address */
    HMS_BEHIND_AMBIGUOUS = 2,   /* an instruction before it could not be told (bytes) */
    HMS_BEHIND_BRANCH = 3,      /* a jump, branch, call or return in between */
    HMS_BEHIND_WRITTEN = 4,     /* an instruction in between writes the load's address register */
    HMS_BEHIND_CHASE = 5,       /* the load overwrote its own address register */
    HMS_BEHIND_NO_LOAD = 6,     /* no register it reads comes from a load within the window */
    HMS_BEHIND_TWO_LOADS = 7,   /* two loads feed it: which one it waited for is unknown */
    HMS_BEHIND_UNDECODED = 8,   /* an instruction in between cannot be decoded */
    HMS_BEHIND_UNKNOWN = 9,     /* the load's address cannot be computed (gather, string) */
    HMS_BEHIND_TARGET = 10,     /* a direct branch lands between the load and it */
    HMS_BEHIND_N = 11
};

#define HMR_LEN8(bytes) ((uint16_t)(((bytes) + 7) / 8))

#endif
