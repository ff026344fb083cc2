/* hm_events.h — the Paraver event types of the trace contract and the values
 * of the enumerated ones.
 * Generated from common/trace_events.tsv, common/trace_values.tsv and common/site_key.tsv
 * by `python -m hmtune.core.contract` (make contract); do not edit.
 * The tables say what each code and value means.
 */
#ifndef HM_EVENTS_H
#define HM_EVENTS_H

#define HM_EV_SAMPLE_FUNC      30000000  /* extrae: sampled instruction's function (own label table) */
#define HM_EV_SAMPLE_LINE      30000100  /* extrae: sampled instruction's file:line (own label table) */
#define HM_EV_SAMPLE_LOAD      32000000  /* extrae: sampled load data address */
#define HM_EV_SAMPLE_STORE     32000001  /* extrae: sampled store data address */
#define HM_EV_SAMPLE_LEVEL     32000002  /* extrae: memory level of the sampled access (values in trace_values.tsv; enum hms_level) */
#define HM_EV_SAMPLE_HIT       32000003  /* extrae: hit or miss, qualifying the level (values in trace_values.tsv) */
#define HM_EV_SAMPLE_LATENCY   32000006  /* extrae: access latency, cycles (PEBS/IBS) */
#define HM_EV_SAMPLE_OBJECT    32000007  /* extrae: object of the sampled address (ids as 32000009; statics have their own) */
#define HM_EV_SITE             32000009  /* extrae: allocation site id (>= 3; 1 and 2 the unknown objects, values in trace_values.tsv); label table file:line > ... */
#define HM_EV_PID              40000036  /* extrae: process id, at a task's first thread */
#define HM_EV_PPID             40000037  /* extrae: parent process id, at a task's first thread */
#define HM_EV_CALL             40000040  /* extrae: Extrae's call kind (values in trace_values.tsv); 0 end */
#define HM_EV_SIZE             40000041  /* extrae: requested size, bytes */
#define HM_EV_IN_PTR           40000042  /* extrae: input pointer (free, realloc) */
#define HM_EV_OUT_PTR          40000043  /* extrae: returned pointer (0 on failure) */
#define HM_EV_CALL_KIND        41000000  /* hmtune: exact call kind (values in trace_values.tsv; enum hmr_kind); 0 end */
#define HM_EV_ALIGN            41000001  /* hmtune: requested alignment */
#define HM_EV_TID              41000002  /* hmtune: OS thread id, at a thread's first record */
#define HM_EV_RANK             41000003  /* hmtune: MPI rank, when known */
#define HM_EV_SITE_RAW         41000010  /* hmtune: label table only: site id -> module+0xoffset > ... */
#define HM_EV_SITE_FUNC        41000011  /* hmtune: label table only: site id -> function chain */
#define HM_EV_SITE_LEVELS      41000012  /* hmtune: label table only: site id -> 32000009 frames per 41000010 frame */
#define HM_EV_SAMPLE_WEIGHT    41000020  /* hmtune: sample weight: PEBS/IBS cycles, software sampler ns */
#define HM_EV_SAMPLER          41000021  /* hmtune: sampler of the process (values in trace_values.tsv) */
#define HM_EV_SAMPLE_CLASS     41000023  /* hmtune: address class (values in trace_values.tsv) */
#define HM_EV_SAMPLE_RECOVERED 41000024  /* hmtune: how the address was recovered (values in trace_values.tsv) */
#define HM_EV_LOST_SAMPLES     41000025  /* hmtune: samples the kernel dropped */
#define HM_EV_SAMPLE_WHY       41000026  /* hmtune: software sampler: why the instruction gave no address (values in trace_values.tsv) */
#define HM_EV_SAMPLE_LOOKAHEAD 41000027  /* hmtune: look ahead: instructions to the access */
#define HM_EV_SAMPLE_VERIFIED  41000028  /* hmtune: look-ahead or producer-load address checked by breakpoint (values in trace_values.tsv) */
#define HM_EV_SAMPLE_PRODUCER  41000029  /* hmtune: producer load: instructions from the load to the sampled one */
#define HM_EV_FAULT_ADDR       41000030  /* hmtune: sampled minor page fault: faulting data address */
#define HM_EV_FAULT_COUNT      41000031  /* hmtune: page faults the fault sample stands for */
#define HM_EV_FAULT_OBJECT     41000032  /* hmtune: object of the fault's address (ids as 32000007) */
#define HM_EV_FAULT_CLASS      41000033  /* hmtune: page-fault address class (the values of 41000023, values in trace_values.tsv) */
#define HM_EV_LOST_FAULTS      41000034  /* hmtune: page-fault samples the kernel dropped */
#define HM_EV_ACCESS_KIND      41000035  /* hmtune: sample's access kind, decided per thread and object (values in trace_values.tsv) */
#define HM_EV_ACCESS_INSN      41000036  /* hmtune: software sampler: the accessing instruction's class, a sum of the bits in trace_values.tsv */
#define HM_EV_CALL_SCALE       41000040  /* hmtune: small-call sampling: calls an allocation stands for */
#define HM_EV_SAMPLE_SCALE     41000041  /* hmtune: small-call sampling: blocks the sampled object stands for */
#define HM_EV_STATIC_OFFSET    41000042  /* hmtune: a sample in a static variable: its byte offset from the start of the object (32000007) */
#define HM_EV_AHEAD_OBJECT     41000043  /* hmtune: a look-ahead sample (41000024 = 2): the object its address fell in (ids as 32000007), apart from 32000007 because hmtune analyze attributes it only with --lookahead */
#define HM_EV_HWC_SET          41999999  /* extrae: the active counter set, on a thread's first counter line (1) */
#define HM_EV_HWC_PRESET       42000000  /* extrae: the first type of PAPI presets' counts: 42000000 + the low 16 bits of the preset's code, each the count since the thread's previous reading */
#define HM_EV_HWC_NATIVE       42001000  /* hmtune: the first type of PAPI native events' counts: 42001000 + the low 16 bits of the code PAPI gave the event in that run */

/* The code as a string literal: "6    " HM_EV_STR(HM_EV_CALL) "    ...". */
#define HM_EV_STR_(x) #x
#define HM_EV_STR(x) HM_EV_STR_(x)

/* Values (common/trace_values.tsv): per table HM_<EVENT>_<NAME>, HM_<EVENT>_MAX
 * (the largest value) and the X-macro HM_<EVENT>_VALUES(X):
 * X(HM_<EVENT>_<NAME>, "key", "label") per value in increasing order (the
 * key: the name in lower case; the label: the .pcf's). */

/* values of HM_EV_CALL (40000040) */
#define HM_CALL_END                    0
#define HM_CALL_MALLOC                 1
#define HM_CALL_FREE                   2
#define HM_CALL_REALLOC                3
#define HM_CALL_CALLOC                 4
#define HM_CALL_POSIX_MEMALIGN         5
#define HM_CALL_MEMKIND_MALLOC         6
#define HM_CALL_MEMKIND_CALLOC         7
#define HM_CALL_MEMKIND_REALLOC        8
#define HM_CALL_MEMKIND_POSIX_MEMALIGN 9
#define HM_CALL_MEMKIND_FREE           10
#define HM_CALL_KMPC_MALLOC            11
#define HM_CALL_KMPC_FREE              12
#define HM_CALL_KMPC_REALLOC           13
#define HM_CALL_KMPC_CALLOC            14
#define HM_CALL_KMPC_ALIGNED_MALLOC    15
#define HM_CALL_MAX                    15
#define HM_CALL_VALUES(X) \
    X(HM_CALL_END, "end", "End") \
    X(HM_CALL_MALLOC, "malloc", "malloc()") \
    X(HM_CALL_FREE, "free", "free()") \
    X(HM_CALL_REALLOC, "realloc", "realloc()") \
    X(HM_CALL_CALLOC, "calloc", "calloc()") \
    X(HM_CALL_POSIX_MEMALIGN, "posix_memalign", "posix_memalign()") \
    X(HM_CALL_MEMKIND_MALLOC, "memkind_malloc", "memkind_malloc()") \
    X(HM_CALL_MEMKIND_CALLOC, "memkind_calloc", "memkind_calloc()") \
    X(HM_CALL_MEMKIND_REALLOC, "memkind_realloc", "memkind_realloc()") \
    X(HM_CALL_MEMKIND_POSIX_MEMALIGN, "memkind_posix_memalign", "memkind_posix_memalign()") \
    X(HM_CALL_MEMKIND_FREE, "memkind_free", "memkind_free()") \
    X(HM_CALL_KMPC_MALLOC, "kmpc_malloc", "kmpc_malloc()") \
    X(HM_CALL_KMPC_FREE, "kmpc_free", "kmpc_free()") \
    X(HM_CALL_KMPC_REALLOC, "kmpc_realloc", "kmpc_realloc()") \
    X(HM_CALL_KMPC_CALLOC, "kmpc_calloc", "kmpc_calloc()") \
    X(HM_CALL_KMPC_ALIGNED_MALLOC, "kmpc_aligned_malloc", "kmpc_aligned_malloc()")

/* values of HM_EV_CALL_KIND (41000000) */
#define HM_CALL_KIND_END            0
#define HM_CALL_KIND_MALLOC         1
#define HM_CALL_KIND_FREE           2
#define HM_CALL_KIND_REALLOC        3
#define HM_CALL_KIND_CALLOC         4
#define HM_CALL_KIND_POSIX_MEMALIGN 5
#define HM_CALL_KIND_ALIGNED_ALLOC  6
#define HM_CALL_KIND_MEMALIGN       7
#define HM_CALL_KIND_VALLOC         8
#define HM_CALL_KIND_PVALLOC        9
#define HM_CALL_KIND_REALLOCARRAY   10
#define HM_CALL_KIND_MAX            10
#define HM_CALL_KIND_VALUES(X) \
    X(HM_CALL_KIND_END, "end", "End") \
    X(HM_CALL_KIND_MALLOC, "malloc", "malloc()") \
    X(HM_CALL_KIND_FREE, "free", "free()") \
    X(HM_CALL_KIND_REALLOC, "realloc", "realloc()") \
    X(HM_CALL_KIND_CALLOC, "calloc", "calloc()") \
    X(HM_CALL_KIND_POSIX_MEMALIGN, "posix_memalign", "posix_memalign()") \
    X(HM_CALL_KIND_ALIGNED_ALLOC, "aligned_alloc", "aligned_alloc()") \
    X(HM_CALL_KIND_MEMALIGN, "memalign", "memalign()") \
    X(HM_CALL_KIND_VALLOC, "valloc", "valloc()") \
    X(HM_CALL_KIND_PVALLOC, "pvalloc", "pvalloc()") \
    X(HM_CALL_KIND_REALLOCARRAY, "reallocarray", "reallocarray()")

/* values of HM_EV_SITE (32000009), HM_EV_SAMPLE_OBJECT (32000007), HM_EV_FAULT_OBJECT
 * (41000032), HM_EV_SITE_RAW (41000010), HM_EV_SITE_FUNC (41000011), HM_EV_SITE_LEVELS
 * (41000012) */
#define HM_SITE_END             0
#define HM_SITE_UNKNOWN_DYNAMIC 1
#define HM_SITE_UNKNOWN_STATIC  2
#define HM_SITE_MAX             2
#define HM_SITE_VALUES(X) \
    X(HM_SITE_END, "end", "End") \
    X(HM_SITE_UNKNOWN_DYNAMIC, "unknown_dynamic", "??") \
    X(HM_SITE_UNKNOWN_STATIC, "unknown_static", "??")

/* values of HM_EV_SAMPLE_FUNC (30000000), HM_EV_SAMPLE_LINE (30000100) */
#define HM_SAMPLE_FUNC_END 0
#define HM_SAMPLE_FUNC_MAX 0
#define HM_SAMPLE_FUNC_VALUES(X) \
    X(HM_SAMPLE_FUNC_END, "end", "End")

/* values of HM_EV_SAMPLE_LEVEL (32000002) */
#define HM_SAMPLE_LEVEL_UNKNOWN      0
#define HM_SAMPLE_LEVEL_L1           1
#define HM_SAMPLE_LEVEL_LFB          2
#define HM_SAMPLE_LEVEL_L2           3
#define HM_SAMPLE_LEVEL_L3           4
#define HM_SAMPLE_LEVEL_LOCAL_RAM    5
#define HM_SAMPLE_LEVEL_REMOTE_RAM   6
#define HM_SAMPLE_LEVEL_REMOTE_CACHE 7
#define HM_SAMPLE_LEVEL_PMEM         8
#define HM_SAMPLE_LEVEL_CXL          9
#define HM_SAMPLE_LEVEL_IO           10
#define HM_SAMPLE_LEVEL_UNCACHED     11
#define HM_SAMPLE_LEVEL_MAX          11
#define HM_SAMPLE_LEVEL_VALUES(X) \
    X(HM_SAMPLE_LEVEL_UNKNOWN, "unknown", "Unknown") \
    X(HM_SAMPLE_LEVEL_L1, "l1", "L1") \
    X(HM_SAMPLE_LEVEL_LFB, "lfb", "Line fill buffer") \
    X(HM_SAMPLE_LEVEL_L2, "l2", "L2") \
    X(HM_SAMPLE_LEVEL_L3, "l3", "L3") \
    X(HM_SAMPLE_LEVEL_LOCAL_RAM, "local_ram", "Local DRAM") \
    X(HM_SAMPLE_LEVEL_REMOTE_RAM, "remote_ram", "Remote DRAM") \
    X(HM_SAMPLE_LEVEL_REMOTE_CACHE, "remote_cache", "Remote cache") \
    X(HM_SAMPLE_LEVEL_PMEM, "pmem", "PMEM") \
    X(HM_SAMPLE_LEVEL_CXL, "cxl", "CXL") \
    X(HM_SAMPLE_LEVEL_IO, "io", "I/O") \
    X(HM_SAMPLE_LEVEL_UNCACHED, "uncached", "Uncached")

/* values of HM_EV_SAMPLE_HIT (32000003) */
#define HM_SAMPLE_HIT_UNKNOWN 0
#define HM_SAMPLE_HIT_HIT     1
#define HM_SAMPLE_HIT_MISS    2
#define HM_SAMPLE_HIT_MAX     2
#define HM_SAMPLE_HIT_VALUES(X) \
    X(HM_SAMPLE_HIT_UNKNOWN, "unknown", "Unknown") \
    X(HM_SAMPLE_HIT_HIT, "hit", "Hit") \
    X(HM_SAMPLE_HIT_MISS, "miss", "Miss")

/* values of HM_EV_SAMPLER (41000021) */
#define HM_SAMPLER_NONE 0
#define HM_SAMPLER_PEBS 1
#define HM_SAMPLER_IBS  2
#define HM_SAMPLER_SOFT 3
#define HM_SAMPLER_MAX  3
#define HM_SAMPLER_VALUES(X) \
    X(HM_SAMPLER_NONE, "none", "None") \
    X(HM_SAMPLER_PEBS, "pebs", "PEBS") \
    X(HM_SAMPLER_IBS, "ibs", "IBS") \
    X(HM_SAMPLER_SOFT, "soft", "Software (CPU-time timer)")

/* values of HM_EV_SAMPLE_CLASS (41000023), HM_EV_FAULT_CLASS (41000033) */
#define HM_SAMPLE_CLASS_NONE       0
#define HM_SAMPLE_CLASS_HEAP       1
#define HM_SAMPLE_CLASS_STATIC     2
#define HM_SAMPLE_CLASS_STACK      3
#define HM_SAMPLE_CLASS_UNKNOWN    4
#define HM_SAMPLE_CLASS_NO_ADDRESS 5
#define HM_SAMPLE_CLASS_MAX        5
#define HM_SAMPLE_CLASS_VALUES(X) \
    X(HM_SAMPLE_CLASS_NONE, "none", "None") \
    X(HM_SAMPLE_CLASS_HEAP, "heap", "Traced heap object") \
    X(HM_SAMPLE_CLASS_STATIC, "static", "Static variable") \
    X(HM_SAMPLE_CLASS_STACK, "stack", "Stack") \
    X(HM_SAMPLE_CLASS_UNKNOWN, "unknown", "Unknown (untraced heap, mmap, other)") \
    X(HM_SAMPLE_CLASS_NO_ADDRESS, "no_address", "No data address")

/* values of HM_EV_SAMPLE_RECOVERED (41000024) */
#define HM_SAMPLE_RECOVERED_BREAKPOINT 1
#define HM_SAMPLE_RECOVERED_LOOKAHEAD  2
#define HM_SAMPLE_RECOVERED_STRING     3
#define HM_SAMPLE_RECOVERED_PRODUCER   4
#define HM_SAMPLE_RECOVERED_MAX        4
#define HM_SAMPLE_RECOVERED_VALUES(X) \
    X(HM_SAMPLE_RECOVERED_BREAKPOINT, "breakpoint", "Execute breakpoint") \
    X(HM_SAMPLE_RECOVERED_LOOKAHEAD, "lookahead", "Look ahead (the next access from the interrupted instruction)") \
    X(HM_SAMPLE_RECOVERED_STRING, "string", "String instruction (its pointer's step undone)") \
    X(HM_SAMPLE_RECOVERED_PRODUCER, "producer", "Producer load (the load the sampled instruction consumed)")

/* values of HM_EV_SAMPLE_WHY (41000026) */
#define HM_SAMPLE_WHY_NO_MEMOP_INT            1
#define HM_SAMPLE_WHY_NO_MEMOP_VECTOR         2
#define HM_SAMPLE_WHY_NO_MEMOP_X87            3
#define HM_SAMPLE_WHY_HINT                    4
#define HM_SAMPLE_WHY_COND_BRANCH             5
#define HM_SAMPLE_WHY_SYSCALL                 6
#define HM_SAMPLE_WHY_AFTER_JUMP              7
#define HM_SAMPLE_WHY_AMBIGUOUS               8
#define HM_SAMPLE_WHY_UNREADABLE              9
#define HM_SAMPLE_WHY_NESTED                  10
#define HM_SAMPLE_WHY_GATHER_SCATTER          11
#define HM_SAMPLE_WHY_UNDECODED               12
#define HM_SAMPLE_WHY_ODD                     13
#define HM_SAMPLE_WHY_CLOBBERED               14
#define HM_SAMPLE_WHY_CLOBBERED_NO_BREAKPOINT 15
#define HM_SAMPLE_WHY_BREAKPOINT_MISSED       16
#define HM_SAMPLE_WHY_BREAKPOINT_LATE         17
#define HM_SAMPLE_WHY_STRING                  18
#define HM_SAMPLE_WHY_MAX                     18
#define HM_SAMPLE_WHY_VALUES(X) \
    X(HM_SAMPLE_WHY_NO_MEMOP_INT, "no_memop_int", "No memory operand (integer/general)") \
    X(HM_SAMPLE_WHY_NO_MEMOP_VECTOR, "no_memop_vector", "No memory operand (SSE/AVX register-only)") \
    X(HM_SAMPLE_WHY_NO_MEMOP_X87, "no_memop_x87", "No memory operand (x87)") \
    X(HM_SAMPLE_WHY_HINT, "hint", "lea, nop, pause, prefetch, cache-line flush") \
    X(HM_SAMPLE_WHY_COND_BRANCH, "cond_branch", "Conditional branch") \
    X(HM_SAMPLE_WHY_SYSCALL, "syscall", "syscall or trap (time in the kernel)") \
    X(HM_SAMPLE_WHY_AFTER_JUMP, "after_jump", "After a jump, call or return (rip is a branch target)") \
    X(HM_SAMPLE_WHY_AMBIGUOUS, "ambiguous", "Previous instruction ambiguous (backward decoding)") \
    X(HM_SAMPLE_WHY_UNREADABLE, "unreadable", "Code not readable") \
    X(HM_SAMPLE_WHY_NESTED, "nested", "Decoder busy (nested signal)") \
    X(HM_SAMPLE_WHY_GATHER_SCATTER, "gather_scatter", "Gather or scatter") \
    X(HM_SAMPLE_WHY_UNDECODED, "undecoded", "Memory operand the decoder cannot decode") \
    X(HM_SAMPLE_WHY_ODD, "odd", "Other memory operand (xlat, enter, segment, several)") \
    X(HM_SAMPLE_WHY_CLOBBERED, "clobbered", "Address register overwritten: breakpoint") \
    X(HM_SAMPLE_WHY_CLOBBERED_NO_BREAKPOINT, "clobbered_no_breakpoint", "Address register overwritten, no breakpoint possible") \
    X(HM_SAMPLE_WHY_BREAKPOINT_MISSED, "breakpoint_missed", "Address register overwritten, breakpoint did not fire") \
    X(HM_SAMPLE_WHY_BREAKPOINT_LATE, "breakpoint_late", "Address register overwritten, breakpoint fired late") \
    X(HM_SAMPLE_WHY_STRING, "string", "String instruction (its pointer's step undone)")

/* values of HM_EV_SAMPLE_VERIFIED (41000028) */
#define HM_SAMPLE_VERIFIED_SAME        1
#define HM_SAMPLE_VERIFIED_DIFFERENT   2
#define HM_SAMPLE_VERIFIED_NOT_REACHED 3
#define HM_SAMPLE_VERIFIED_MAX         3
#define HM_SAMPLE_VERIFIED_VALUES(X) \
    X(HM_SAMPLE_VERIFIED_SAME, "same", "Same") \
    X(HM_SAMPLE_VERIFIED_DIFFERENT, "different", "Different") \
    X(HM_SAMPLE_VERIFIED_NOT_REACHED, "not_reached", "Not reached")

/* values of HM_EV_ACCESS_KIND (41000035) */
#define HM_ACCESS_KIND_STREAMING 1
#define HM_ACCESS_KIND_SCATTERED 2
#define HM_ACCESS_KIND_SYNC      3
#define HM_ACCESS_KIND_COMPUTE   4
#define HM_ACCESS_KIND_MAX       4
#define HM_ACCESS_KIND_VALUES(X) \
    X(HM_ACCESS_KIND_STREAMING, "streaming", "Streaming (one direction through the object)") \
    X(HM_ACCESS_KIND_SCATTERED, "scattered", "Scattered (latency-bound)") \
    X(HM_ACCESS_KIND_SYNC, "sync", "Synchronization (atomic or spin)") \
    X(HM_ACCESS_KIND_COMPUTE, "compute", "Compute (no memory operand)")

/* values of HM_EV_ACCESS_INSN (41000036) */
#define HM_ACCESS_INSN_ATOMIC 1
#define HM_ACCESS_INSN_SPIN   2
#define HM_ACCESS_INSN_VECTOR 4
#define HM_ACCESS_INSN_STRING 8
#define HM_ACCESS_INSN_CHASE  16
#define HM_ACCESS_INSN_STRIDE 32
#define HM_ACCESS_INSN_MAX    32
#define HM_ACCESS_INSN_VALUES(X) \
    X(HM_ACCESS_INSN_ATOMIC, "atomic", "Atomic (lock, xchg, cmpxchg)") \
    X(HM_ACCESS_INSN_SPIN, "spin", "Spin (pause)") \
    X(HM_ACCESS_INSN_VECTOR, "vector", "Vector (16 bytes or more)") \
    X(HM_ACCESS_INSN_STRING, "string", "String instruction") \
    X(HM_ACCESS_INSN_CHASE, "chase", "Pointer chase (overwrote its address register)") \
    X(HM_ACCESS_INSN_STRIDE, "stride", "Strided (its address register steps by a constant in its loop)")

/* The site key's grammar (common/site_key.tsv). */
#define HM_KEY_SEP         " > "  /* between the frames of a chain, the allocation call's caller first */
#define HM_KEY_OFFSET      "+0x"  /* between a frame's module path and its offset (lower-case hex) in the key */
#define HM_KEY_UNKNOWN     "??"  /* the module of a frame outside every loaded module; "??+0xADDR" keeps a key, a bare "??" or file:line frame leaves the chain without one (unplaceable) */
#define HM_KEY_MAX_FRAMES  64  /* frames in a chain at most (placement.txt's depth) */
#define HM_KEY_OFFSET_BITS 48  /* a frame's offset is below 2^OFFSET_BITS; a packed frame holds its module above them */

#endif
