"""The Paraver event types of the trace contract and the values of the enumerated
ones (docs/formats.md §3).

Generated from common/trace_events.tsv, common/trace_values.tsv and common/site_key.tsv
by `python -m hmtune.core.contract` (make contract); do not edit.
The tables say what each code and value means.
"""

from typing import Final

# extrae: sampled instruction's function (own label table)
HM_EV_SAMPLE_FUNC: Final = 30000000
# extrae: sampled instruction's file:line (own label table)
HM_EV_SAMPLE_LINE: Final = 30000100
# extrae: sampled load data address
HM_EV_SAMPLE_LOAD: Final = 32000000
# extrae: sampled store data address
HM_EV_SAMPLE_STORE: Final = 32000001
# extrae: memory level of the sampled access (values in trace_values.tsv; enum hms_level)
HM_EV_SAMPLE_LEVEL: Final = 32000002
# extrae: hit or miss, qualifying the level (values in trace_values.tsv)
HM_EV_SAMPLE_HIT: Final = 32000003
# extrae: access latency, cycles (PEBS/IBS)
HM_EV_SAMPLE_LATENCY: Final = 32000006
# extrae: object of the sampled address (ids as 32000009; statics have their own)
HM_EV_SAMPLE_OBJECT: Final = 32000007
# extrae: allocation site id (>= 3; 1 and 2 the unknown objects, values in trace_values.tsv);
#   label table file:line > ...
HM_EV_SITE: Final = 32000009
# extrae: process id, at a task's first thread
HM_EV_PID: Final = 40000036
# extrae: parent process id, at a task's first thread
HM_EV_PPID: Final = 40000037
# extrae: Extrae's call kind (values in trace_values.tsv); 0 end
HM_EV_CALL: Final = 40000040
# extrae: requested size, bytes
HM_EV_SIZE: Final = 40000041
# extrae: input pointer (free, realloc)
HM_EV_IN_PTR: Final = 40000042
# extrae: returned pointer (0 on failure)
HM_EV_OUT_PTR: Final = 40000043
# hmtune: exact call kind (values in trace_values.tsv; enum hmr_kind); 0 end
HM_EV_CALL_KIND: Final = 41000000
# hmtune: requested alignment
HM_EV_ALIGN: Final = 41000001
# hmtune: OS thread id, at a thread's first record
HM_EV_TID: Final = 41000002
# hmtune: MPI rank, when known
HM_EV_RANK: Final = 41000003
# hmtune: label table only: site id -> module+0xoffset > ...
HM_EV_SITE_RAW: Final = 41000010
# hmtune: label table only: site id -> function chain
HM_EV_SITE_FUNC: Final = 41000011
# hmtune: label table only: site id -> 32000009 frames per 41000010 frame
HM_EV_SITE_LEVELS: Final = 41000012
# hmtune: sample weight: PEBS/IBS cycles, software sampler ns
HM_EV_SAMPLE_WEIGHT: Final = 41000020
# hmtune: sampler of the process (values in trace_values.tsv)
HM_EV_SAMPLER: Final = 41000021
# hmtune: address class (values in trace_values.tsv)
HM_EV_SAMPLE_CLASS: Final = 41000023
# hmtune: how the address was recovered (values in trace_values.tsv)
HM_EV_SAMPLE_RECOVERED: Final = 41000024
# hmtune: samples the kernel dropped
HM_EV_LOST_SAMPLES: Final = 41000025
# hmtune: software sampler: why the instruction gave no address (values in trace_values.tsv)
HM_EV_SAMPLE_WHY: Final = 41000026
# hmtune: look ahead: instructions to the access
HM_EV_SAMPLE_LOOKAHEAD: Final = 41000027
# hmtune: look-ahead or producer-load address checked by breakpoint (values in trace_values.tsv)
HM_EV_SAMPLE_VERIFIED: Final = 41000028
# hmtune: producer load: instructions from the load to the sampled one
HM_EV_SAMPLE_PRODUCER: Final = 41000029
# hmtune: sampled minor page fault: faulting data address
HM_EV_FAULT_ADDR: Final = 41000030
# hmtune: page faults the fault sample stands for
HM_EV_FAULT_COUNT: Final = 41000031
# hmtune: object of the fault's address (ids as 32000007)
HM_EV_FAULT_OBJECT: Final = 41000032
# hmtune: page-fault address class (the values of 41000023, values in trace_values.tsv)
HM_EV_FAULT_CLASS: Final = 41000033
# hmtune: page-fault samples the kernel dropped
HM_EV_LOST_FAULTS: Final = 41000034
# hmtune: sample's access kind, decided per thread and object (values in trace_values.tsv)
HM_EV_ACCESS_KIND: Final = 41000035
# hmtune: software sampler: the accessing instruction's class, a sum of the bits in
#   trace_values.tsv
HM_EV_ACCESS_INSN: Final = 41000036
# hmtune: small-call sampling: calls an allocation stands for
HM_EV_CALL_SCALE: Final = 41000040
# hmtune: small-call sampling: blocks the sampled object stands for
HM_EV_SAMPLE_SCALE: Final = 41000041
# hmtune: a sample in a static variable: its byte offset from the start of the object (32000007)
HM_EV_STATIC_OFFSET: Final = 41000042
# hmtune: a look-ahead sample (41000024 = 2): the object its address fell in (ids as 32000007),
#   apart from 32000007 because hmtune analyze attributes it only with --lookahead
HM_EV_AHEAD_OBJECT: Final = 41000043
# extrae: the active counter set, on a thread's first counter line (1)
HM_EV_HWC_SET: Final = 41999999
# extrae: the first type of PAPI presets' counts: 42000000 + the low 16 bits of the preset's
#   code, each the count since the thread's previous reading
HM_EV_HWC_PRESET: Final = 42000000
# hmtune: the first type of PAPI native events' counts: 42001000 + the low 16 bits of the code
#   PAPI gave the event in that run
HM_EV_HWC_NATIVE: Final = 42001000

ALL: Final[dict[str, int]] = {
    "HM_EV_SAMPLE_FUNC": HM_EV_SAMPLE_FUNC,
    "HM_EV_SAMPLE_LINE": HM_EV_SAMPLE_LINE,
    "HM_EV_SAMPLE_LOAD": HM_EV_SAMPLE_LOAD,
    "HM_EV_SAMPLE_STORE": HM_EV_SAMPLE_STORE,
    "HM_EV_SAMPLE_LEVEL": HM_EV_SAMPLE_LEVEL,
    "HM_EV_SAMPLE_HIT": HM_EV_SAMPLE_HIT,
    "HM_EV_SAMPLE_LATENCY": HM_EV_SAMPLE_LATENCY,
    "HM_EV_SAMPLE_OBJECT": HM_EV_SAMPLE_OBJECT,
    "HM_EV_SITE": HM_EV_SITE,
    "HM_EV_PID": HM_EV_PID,
    "HM_EV_PPID": HM_EV_PPID,
    "HM_EV_CALL": HM_EV_CALL,
    "HM_EV_SIZE": HM_EV_SIZE,
    "HM_EV_IN_PTR": HM_EV_IN_PTR,
    "HM_EV_OUT_PTR": HM_EV_OUT_PTR,
    "HM_EV_CALL_KIND": HM_EV_CALL_KIND,
    "HM_EV_ALIGN": HM_EV_ALIGN,
    "HM_EV_TID": HM_EV_TID,
    "HM_EV_RANK": HM_EV_RANK,
    "HM_EV_SITE_RAW": HM_EV_SITE_RAW,
    "HM_EV_SITE_FUNC": HM_EV_SITE_FUNC,
    "HM_EV_SITE_LEVELS": HM_EV_SITE_LEVELS,
    "HM_EV_SAMPLE_WEIGHT": HM_EV_SAMPLE_WEIGHT,
    "HM_EV_SAMPLER": HM_EV_SAMPLER,
    "HM_EV_SAMPLE_CLASS": HM_EV_SAMPLE_CLASS,
    "HM_EV_SAMPLE_RECOVERED": HM_EV_SAMPLE_RECOVERED,
    "HM_EV_LOST_SAMPLES": HM_EV_LOST_SAMPLES,
    "HM_EV_SAMPLE_WHY": HM_EV_SAMPLE_WHY,
    "HM_EV_SAMPLE_LOOKAHEAD": HM_EV_SAMPLE_LOOKAHEAD,
    "HM_EV_SAMPLE_VERIFIED": HM_EV_SAMPLE_VERIFIED,
    "HM_EV_SAMPLE_PRODUCER": HM_EV_SAMPLE_PRODUCER,
    "HM_EV_FAULT_ADDR": HM_EV_FAULT_ADDR,
    "HM_EV_FAULT_COUNT": HM_EV_FAULT_COUNT,
    "HM_EV_FAULT_OBJECT": HM_EV_FAULT_OBJECT,
    "HM_EV_FAULT_CLASS": HM_EV_FAULT_CLASS,
    "HM_EV_LOST_FAULTS": HM_EV_LOST_FAULTS,
    "HM_EV_ACCESS_KIND": HM_EV_ACCESS_KIND,
    "HM_EV_ACCESS_INSN": HM_EV_ACCESS_INSN,
    "HM_EV_CALL_SCALE": HM_EV_CALL_SCALE,
    "HM_EV_SAMPLE_SCALE": HM_EV_SAMPLE_SCALE,
    "HM_EV_STATIC_OFFSET": HM_EV_STATIC_OFFSET,
    "HM_EV_AHEAD_OBJECT": HM_EV_AHEAD_OBJECT,
    "HM_EV_HWC_SET": HM_EV_HWC_SET,
    "HM_EV_HWC_PRESET": HM_EV_HWC_PRESET,
    "HM_EV_HWC_NATIVE": HM_EV_HWC_NATIVE,
}
"""Every event type above by name."""


# -- values of HM_EV_CALL (40000040)

HM_CALL_END: Final = 0
HM_CALL_MALLOC: Final = 1
HM_CALL_FREE: Final = 2
HM_CALL_REALLOC: Final = 3
HM_CALL_CALLOC: Final = 4
HM_CALL_POSIX_MEMALIGN: Final = 5
HM_CALL_MEMKIND_MALLOC: Final = 6
HM_CALL_MEMKIND_CALLOC: Final = 7
HM_CALL_MEMKIND_REALLOC: Final = 8
HM_CALL_MEMKIND_POSIX_MEMALIGN: Final = 9
HM_CALL_MEMKIND_FREE: Final = 10
HM_CALL_KMPC_MALLOC: Final = 11
HM_CALL_KMPC_FREE: Final = 12
HM_CALL_KMPC_REALLOC: Final = 13
HM_CALL_KMPC_CALLOC: Final = 14
HM_CALL_KMPC_ALIGNED_MALLOC: Final = 15
HM_CALL_LABELS: Final[dict[int, str]] = {
    HM_CALL_END: "End",
    HM_CALL_MALLOC: "malloc()",
    HM_CALL_FREE: "free()",
    HM_CALL_REALLOC: "realloc()",
    HM_CALL_CALLOC: "calloc()",
    HM_CALL_POSIX_MEMALIGN: "posix_memalign()",
    HM_CALL_MEMKIND_MALLOC: "memkind_malloc()",
    HM_CALL_MEMKIND_CALLOC: "memkind_calloc()",
    HM_CALL_MEMKIND_REALLOC: "memkind_realloc()",
    HM_CALL_MEMKIND_POSIX_MEMALIGN: "memkind_posix_memalign()",
    HM_CALL_MEMKIND_FREE: "memkind_free()",
    HM_CALL_KMPC_MALLOC: "kmpc_malloc()",
    HM_CALL_KMPC_FREE: "kmpc_free()",
    HM_CALL_KMPC_REALLOC: "kmpc_realloc()",
    HM_CALL_KMPC_CALLOC: "kmpc_calloc()",
    HM_CALL_KMPC_ALIGNED_MALLOC: "kmpc_aligned_malloc()",
}
HM_CALL_KEYS: Final[dict[int, str]] = {
    HM_CALL_END: "end",
    HM_CALL_MALLOC: "malloc",
    HM_CALL_FREE: "free",
    HM_CALL_REALLOC: "realloc",
    HM_CALL_CALLOC: "calloc",
    HM_CALL_POSIX_MEMALIGN: "posix_memalign",
    HM_CALL_MEMKIND_MALLOC: "memkind_malloc",
    HM_CALL_MEMKIND_CALLOC: "memkind_calloc",
    HM_CALL_MEMKIND_REALLOC: "memkind_realloc",
    HM_CALL_MEMKIND_POSIX_MEMALIGN: "memkind_posix_memalign",
    HM_CALL_MEMKIND_FREE: "memkind_free",
    HM_CALL_KMPC_MALLOC: "kmpc_malloc",
    HM_CALL_KMPC_FREE: "kmpc_free",
    HM_CALL_KMPC_REALLOC: "kmpc_realloc",
    HM_CALL_KMPC_CALLOC: "kmpc_calloc",
    HM_CALL_KMPC_ALIGNED_MALLOC: "kmpc_aligned_malloc",
}
"""HM_CALL_LABELS: value -> .pcf label; HM_CALL_KEYS: value -> key."""


# -- values of HM_EV_CALL_KIND (41000000)

HM_CALL_KIND_END: Final = 0
HM_CALL_KIND_MALLOC: Final = 1
HM_CALL_KIND_FREE: Final = 2
HM_CALL_KIND_REALLOC: Final = 3
HM_CALL_KIND_CALLOC: Final = 4
HM_CALL_KIND_POSIX_MEMALIGN: Final = 5
HM_CALL_KIND_ALIGNED_ALLOC: Final = 6
HM_CALL_KIND_MEMALIGN: Final = 7
HM_CALL_KIND_VALLOC: Final = 8
HM_CALL_KIND_PVALLOC: Final = 9
HM_CALL_KIND_REALLOCARRAY: Final = 10
HM_CALL_KIND_LABELS: Final[dict[int, str]] = {
    HM_CALL_KIND_END: "End",
    HM_CALL_KIND_MALLOC: "malloc()",
    HM_CALL_KIND_FREE: "free()",
    HM_CALL_KIND_REALLOC: "realloc()",
    HM_CALL_KIND_CALLOC: "calloc()",
    HM_CALL_KIND_POSIX_MEMALIGN: "posix_memalign()",
    HM_CALL_KIND_ALIGNED_ALLOC: "aligned_alloc()",
    HM_CALL_KIND_MEMALIGN: "memalign()",
    HM_CALL_KIND_VALLOC: "valloc()",
    HM_CALL_KIND_PVALLOC: "pvalloc()",
    HM_CALL_KIND_REALLOCARRAY: "reallocarray()",
}
HM_CALL_KIND_KEYS: Final[dict[int, str]] = {
    HM_CALL_KIND_END: "end",
    HM_CALL_KIND_MALLOC: "malloc",
    HM_CALL_KIND_FREE: "free",
    HM_CALL_KIND_REALLOC: "realloc",
    HM_CALL_KIND_CALLOC: "calloc",
    HM_CALL_KIND_POSIX_MEMALIGN: "posix_memalign",
    HM_CALL_KIND_ALIGNED_ALLOC: "aligned_alloc",
    HM_CALL_KIND_MEMALIGN: "memalign",
    HM_CALL_KIND_VALLOC: "valloc",
    HM_CALL_KIND_PVALLOC: "pvalloc",
    HM_CALL_KIND_REALLOCARRAY: "reallocarray",
}
"""HM_CALL_KIND_LABELS: value -> .pcf label; HM_CALL_KIND_KEYS: value -> key."""


# -- values of HM_EV_SITE (32000009), HM_EV_SAMPLE_OBJECT (32000007), HM_EV_FAULT_OBJECT
#   (41000032), HM_EV_SITE_RAW (41000010), HM_EV_SITE_FUNC (41000011), HM_EV_SITE_LEVELS
#   (41000012)

HM_SITE_END: Final = 0
HM_SITE_UNKNOWN_DYNAMIC: Final = 1
HM_SITE_UNKNOWN_STATIC: Final = 2
HM_SITE_LABELS: Final[dict[int, str]] = {
    HM_SITE_END: "End",
    HM_SITE_UNKNOWN_DYNAMIC: "??",
    HM_SITE_UNKNOWN_STATIC: "??",
}
HM_SITE_KEYS: Final[dict[int, str]] = {
    HM_SITE_END: "end",
    HM_SITE_UNKNOWN_DYNAMIC: "unknown_dynamic",
    HM_SITE_UNKNOWN_STATIC: "unknown_static",
}
"""HM_SITE_LABELS: value -> .pcf label; HM_SITE_KEYS: value -> key."""


# -- values of HM_EV_SAMPLE_FUNC (30000000), HM_EV_SAMPLE_LINE (30000100)

HM_SAMPLE_FUNC_END: Final = 0
HM_SAMPLE_FUNC_LABELS: Final[dict[int, str]] = {
    HM_SAMPLE_FUNC_END: "End",
}
HM_SAMPLE_FUNC_KEYS: Final[dict[int, str]] = {
    HM_SAMPLE_FUNC_END: "end",
}
"""HM_SAMPLE_FUNC_LABELS: value -> .pcf label; HM_SAMPLE_FUNC_KEYS: value -> key."""


# -- values of HM_EV_SAMPLE_LEVEL (32000002)

HM_SAMPLE_LEVEL_UNKNOWN: Final = 0
HM_SAMPLE_LEVEL_L1: Final = 1
HM_SAMPLE_LEVEL_LFB: Final = 2
HM_SAMPLE_LEVEL_L2: Final = 3
HM_SAMPLE_LEVEL_L3: Final = 4
HM_SAMPLE_LEVEL_LOCAL_RAM: Final = 5
HM_SAMPLE_LEVEL_REMOTE_RAM: Final = 6
HM_SAMPLE_LEVEL_REMOTE_CACHE: Final = 7
HM_SAMPLE_LEVEL_PMEM: Final = 8
HM_SAMPLE_LEVEL_CXL: Final = 9
HM_SAMPLE_LEVEL_IO: Final = 10
HM_SAMPLE_LEVEL_UNCACHED: Final = 11
HM_SAMPLE_LEVEL_LABELS: Final[dict[int, str]] = {
    HM_SAMPLE_LEVEL_UNKNOWN: "Unknown",
    HM_SAMPLE_LEVEL_L1: "L1",
    HM_SAMPLE_LEVEL_LFB: "Line fill buffer",
    HM_SAMPLE_LEVEL_L2: "L2",
    HM_SAMPLE_LEVEL_L3: "L3",
    HM_SAMPLE_LEVEL_LOCAL_RAM: "Local DRAM",
    HM_SAMPLE_LEVEL_REMOTE_RAM: "Remote DRAM",
    HM_SAMPLE_LEVEL_REMOTE_CACHE: "Remote cache",
    HM_SAMPLE_LEVEL_PMEM: "PMEM",
    HM_SAMPLE_LEVEL_CXL: "CXL",
    HM_SAMPLE_LEVEL_IO: "I/O",
    HM_SAMPLE_LEVEL_UNCACHED: "Uncached",
}
HM_SAMPLE_LEVEL_KEYS: Final[dict[int, str]] = {
    HM_SAMPLE_LEVEL_UNKNOWN: "unknown",
    HM_SAMPLE_LEVEL_L1: "l1",
    HM_SAMPLE_LEVEL_LFB: "lfb",
    HM_SAMPLE_LEVEL_L2: "l2",
    HM_SAMPLE_LEVEL_L3: "l3",
    HM_SAMPLE_LEVEL_LOCAL_RAM: "local_ram",
    HM_SAMPLE_LEVEL_REMOTE_RAM: "remote_ram",
    HM_SAMPLE_LEVEL_REMOTE_CACHE: "remote_cache",
    HM_SAMPLE_LEVEL_PMEM: "pmem",
    HM_SAMPLE_LEVEL_CXL: "cxl",
    HM_SAMPLE_LEVEL_IO: "io",
    HM_SAMPLE_LEVEL_UNCACHED: "uncached",
}
"""HM_SAMPLE_LEVEL_LABELS: value -> .pcf label; HM_SAMPLE_LEVEL_KEYS: value -> key."""


# -- values of HM_EV_SAMPLE_HIT (32000003)

HM_SAMPLE_HIT_UNKNOWN: Final = 0
HM_SAMPLE_HIT_HIT: Final = 1
HM_SAMPLE_HIT_MISS: Final = 2
HM_SAMPLE_HIT_LABELS: Final[dict[int, str]] = {
    HM_SAMPLE_HIT_UNKNOWN: "Unknown",
    HM_SAMPLE_HIT_HIT: "Hit",
    HM_SAMPLE_HIT_MISS: "Miss",
}
HM_SAMPLE_HIT_KEYS: Final[dict[int, str]] = {
    HM_SAMPLE_HIT_UNKNOWN: "unknown",
    HM_SAMPLE_HIT_HIT: "hit",
    HM_SAMPLE_HIT_MISS: "miss",
}
"""HM_SAMPLE_HIT_LABELS: value -> .pcf label; HM_SAMPLE_HIT_KEYS: value -> key."""


# -- values of HM_EV_SAMPLER (41000021)

HM_SAMPLER_NONE: Final = 0
HM_SAMPLER_PEBS: Final = 1
HM_SAMPLER_IBS: Final = 2
HM_SAMPLER_SOFT: Final = 3
HM_SAMPLER_LABELS: Final[dict[int, str]] = {
    HM_SAMPLER_NONE: "None",
    HM_SAMPLER_PEBS: "PEBS",
    HM_SAMPLER_IBS: "IBS",
    HM_SAMPLER_SOFT: "Software (CPU-time timer)",
}
HM_SAMPLER_KEYS: Final[dict[int, str]] = {
    HM_SAMPLER_NONE: "none",
    HM_SAMPLER_PEBS: "pebs",
    HM_SAMPLER_IBS: "ibs",
    HM_SAMPLER_SOFT: "soft",
}
"""HM_SAMPLER_LABELS: value -> .pcf label; HM_SAMPLER_KEYS: value -> key."""


# -- values of HM_EV_SAMPLE_CLASS (41000023), HM_EV_FAULT_CLASS (41000033)

HM_SAMPLE_CLASS_NONE: Final = 0
HM_SAMPLE_CLASS_HEAP: Final = 1
HM_SAMPLE_CLASS_STATIC: Final = 2
HM_SAMPLE_CLASS_STACK: Final = 3
HM_SAMPLE_CLASS_UNKNOWN: Final = 4
HM_SAMPLE_CLASS_NO_ADDRESS: Final = 5
HM_SAMPLE_CLASS_LABELS: Final[dict[int, str]] = {
    HM_SAMPLE_CLASS_NONE: "None",
    HM_SAMPLE_CLASS_HEAP: "Traced heap object",
    HM_SAMPLE_CLASS_STATIC: "Static variable",
    HM_SAMPLE_CLASS_STACK: "Stack",
    HM_SAMPLE_CLASS_UNKNOWN: "Unknown (untraced heap, mmap, other)",
    HM_SAMPLE_CLASS_NO_ADDRESS: "No data address",
}
HM_SAMPLE_CLASS_KEYS: Final[dict[int, str]] = {
    HM_SAMPLE_CLASS_NONE: "none",
    HM_SAMPLE_CLASS_HEAP: "heap",
    HM_SAMPLE_CLASS_STATIC: "static",
    HM_SAMPLE_CLASS_STACK: "stack",
    HM_SAMPLE_CLASS_UNKNOWN: "unknown",
    HM_SAMPLE_CLASS_NO_ADDRESS: "no_address",
}
"""HM_SAMPLE_CLASS_LABELS: value -> .pcf label; HM_SAMPLE_CLASS_KEYS: value -> key."""


# -- values of HM_EV_SAMPLE_RECOVERED (41000024)

HM_SAMPLE_RECOVERED_BREAKPOINT: Final = 1
HM_SAMPLE_RECOVERED_LOOKAHEAD: Final = 2
HM_SAMPLE_RECOVERED_STRING: Final = 3
HM_SAMPLE_RECOVERED_PRODUCER: Final = 4
HM_SAMPLE_RECOVERED_LABELS: Final[dict[int, str]] = {
    HM_SAMPLE_RECOVERED_BREAKPOINT: "Execute breakpoint",
    HM_SAMPLE_RECOVERED_LOOKAHEAD: "Look ahead (the next access from the interrupted instruction)",
    HM_SAMPLE_RECOVERED_STRING: "String instruction (its pointer's step undone)",
    HM_SAMPLE_RECOVERED_PRODUCER: "Producer load (the load the sampled instruction consumed)",
}
HM_SAMPLE_RECOVERED_KEYS: Final[dict[int, str]] = {
    HM_SAMPLE_RECOVERED_BREAKPOINT: "breakpoint",
    HM_SAMPLE_RECOVERED_LOOKAHEAD: "lookahead",
    HM_SAMPLE_RECOVERED_STRING: "string",
    HM_SAMPLE_RECOVERED_PRODUCER: "producer",
}
"""HM_SAMPLE_RECOVERED_LABELS: value -> .pcf label; HM_SAMPLE_RECOVERED_KEYS: value -> key."""


# -- values of HM_EV_SAMPLE_WHY (41000026)

HM_SAMPLE_WHY_NO_MEMOP_INT: Final = 1
HM_SAMPLE_WHY_NO_MEMOP_VECTOR: Final = 2
HM_SAMPLE_WHY_NO_MEMOP_X87: Final = 3
HM_SAMPLE_WHY_HINT: Final = 4
HM_SAMPLE_WHY_COND_BRANCH: Final = 5
HM_SAMPLE_WHY_SYSCALL: Final = 6
HM_SAMPLE_WHY_AFTER_JUMP: Final = 7
HM_SAMPLE_WHY_AMBIGUOUS: Final = 8
HM_SAMPLE_WHY_UNREADABLE: Final = 9
HM_SAMPLE_WHY_NESTED: Final = 10
HM_SAMPLE_WHY_GATHER_SCATTER: Final = 11
HM_SAMPLE_WHY_UNDECODED: Final = 12
HM_SAMPLE_WHY_ODD: Final = 13
HM_SAMPLE_WHY_CLOBBERED: Final = 14
HM_SAMPLE_WHY_CLOBBERED_NO_BREAKPOINT: Final = 15
HM_SAMPLE_WHY_BREAKPOINT_MISSED: Final = 16
HM_SAMPLE_WHY_BREAKPOINT_LATE: Final = 17
HM_SAMPLE_WHY_STRING: Final = 18
HM_SAMPLE_WHY_LABELS: Final[dict[int, str]] = {
    HM_SAMPLE_WHY_NO_MEMOP_INT: "No memory operand (integer/general)",
    HM_SAMPLE_WHY_NO_MEMOP_VECTOR: "No memory operand (SSE/AVX register-only)",
    HM_SAMPLE_WHY_NO_MEMOP_X87: "No memory operand (x87)",
    HM_SAMPLE_WHY_HINT: "lea, nop, pause, prefetch, cache-line flush",
    HM_SAMPLE_WHY_COND_BRANCH: "Conditional branch",
    HM_SAMPLE_WHY_SYSCALL: "syscall or trap (time in the kernel)",
    HM_SAMPLE_WHY_AFTER_JUMP: "After a jump, call or return (rip is a branch target)",
    HM_SAMPLE_WHY_AMBIGUOUS: "Previous instruction ambiguous (backward decoding)",
    HM_SAMPLE_WHY_UNREADABLE: "Code not readable",
    HM_SAMPLE_WHY_NESTED: "Decoder busy (nested signal)",
    HM_SAMPLE_WHY_GATHER_SCATTER: "Gather or scatter",
    HM_SAMPLE_WHY_UNDECODED: "Memory operand the decoder cannot decode",
    HM_SAMPLE_WHY_ODD: "Other memory operand (xlat, enter, segment, several)",
    HM_SAMPLE_WHY_CLOBBERED: "Address register overwritten: breakpoint",
    HM_SAMPLE_WHY_CLOBBERED_NO_BREAKPOINT: "Address register overwritten, no breakpoint possible",
    HM_SAMPLE_WHY_BREAKPOINT_MISSED: "Address register overwritten, breakpoint did not fire",
    HM_SAMPLE_WHY_BREAKPOINT_LATE: "Address register overwritten, breakpoint fired late",
    HM_SAMPLE_WHY_STRING: "String instruction (its pointer's step undone)",
}
HM_SAMPLE_WHY_KEYS: Final[dict[int, str]] = {
    HM_SAMPLE_WHY_NO_MEMOP_INT: "no_memop_int",
    HM_SAMPLE_WHY_NO_MEMOP_VECTOR: "no_memop_vector",
    HM_SAMPLE_WHY_NO_MEMOP_X87: "no_memop_x87",
    HM_SAMPLE_WHY_HINT: "hint",
    HM_SAMPLE_WHY_COND_BRANCH: "cond_branch",
    HM_SAMPLE_WHY_SYSCALL: "syscall",
    HM_SAMPLE_WHY_AFTER_JUMP: "after_jump",
    HM_SAMPLE_WHY_AMBIGUOUS: "ambiguous",
    HM_SAMPLE_WHY_UNREADABLE: "unreadable",
    HM_SAMPLE_WHY_NESTED: "nested",
    HM_SAMPLE_WHY_GATHER_SCATTER: "gather_scatter",
    HM_SAMPLE_WHY_UNDECODED: "undecoded",
    HM_SAMPLE_WHY_ODD: "odd",
    HM_SAMPLE_WHY_CLOBBERED: "clobbered",
    HM_SAMPLE_WHY_CLOBBERED_NO_BREAKPOINT: "clobbered_no_breakpoint",
    HM_SAMPLE_WHY_BREAKPOINT_MISSED: "breakpoint_missed",
    HM_SAMPLE_WHY_BREAKPOINT_LATE: "breakpoint_late",
    HM_SAMPLE_WHY_STRING: "string",
}
"""HM_SAMPLE_WHY_LABELS: value -> .pcf label; HM_SAMPLE_WHY_KEYS: value -> key."""


# -- values of HM_EV_SAMPLE_VERIFIED (41000028)

HM_SAMPLE_VERIFIED_SAME: Final = 1
HM_SAMPLE_VERIFIED_DIFFERENT: Final = 2
HM_SAMPLE_VERIFIED_NOT_REACHED: Final = 3
HM_SAMPLE_VERIFIED_LABELS: Final[dict[int, str]] = {
    HM_SAMPLE_VERIFIED_SAME: "Same",
    HM_SAMPLE_VERIFIED_DIFFERENT: "Different",
    HM_SAMPLE_VERIFIED_NOT_REACHED: "Not reached",
}
HM_SAMPLE_VERIFIED_KEYS: Final[dict[int, str]] = {
    HM_SAMPLE_VERIFIED_SAME: "same",
    HM_SAMPLE_VERIFIED_DIFFERENT: "different",
    HM_SAMPLE_VERIFIED_NOT_REACHED: "not_reached",
}
"""HM_SAMPLE_VERIFIED_LABELS: value -> .pcf label; HM_SAMPLE_VERIFIED_KEYS: value -> key."""


# -- values of HM_EV_ACCESS_KIND (41000035)

HM_ACCESS_KIND_STREAMING: Final = 1
HM_ACCESS_KIND_SCATTERED: Final = 2
HM_ACCESS_KIND_SYNC: Final = 3
HM_ACCESS_KIND_COMPUTE: Final = 4
HM_ACCESS_KIND_LABELS: Final[dict[int, str]] = {
    HM_ACCESS_KIND_STREAMING: "Streaming (one direction through the object)",
    HM_ACCESS_KIND_SCATTERED: "Scattered (latency-bound)",
    HM_ACCESS_KIND_SYNC: "Synchronization (atomic or spin)",
    HM_ACCESS_KIND_COMPUTE: "Compute (no memory operand)",
}
HM_ACCESS_KIND_KEYS: Final[dict[int, str]] = {
    HM_ACCESS_KIND_STREAMING: "streaming",
    HM_ACCESS_KIND_SCATTERED: "scattered",
    HM_ACCESS_KIND_SYNC: "sync",
    HM_ACCESS_KIND_COMPUTE: "compute",
}
"""HM_ACCESS_KIND_LABELS: value -> .pcf label; HM_ACCESS_KIND_KEYS: value -> key."""


# -- values of HM_EV_ACCESS_INSN (41000036)

HM_ACCESS_INSN_ATOMIC: Final = 1
HM_ACCESS_INSN_SPIN: Final = 2
HM_ACCESS_INSN_VECTOR: Final = 4
HM_ACCESS_INSN_STRING: Final = 8
HM_ACCESS_INSN_CHASE: Final = 16
HM_ACCESS_INSN_STRIDE: Final = 32
HM_ACCESS_INSN_LABELS: Final[dict[int, str]] = {
    HM_ACCESS_INSN_ATOMIC: "Atomic (lock, xchg, cmpxchg)",
    HM_ACCESS_INSN_SPIN: "Spin (pause)",
    HM_ACCESS_INSN_VECTOR: "Vector (16 bytes or more)",
    HM_ACCESS_INSN_STRING: "String instruction",
    HM_ACCESS_INSN_CHASE: "Pointer chase (overwrote its address register)",
    HM_ACCESS_INSN_STRIDE: "Strided (its address register steps by a constant in its loop)",
}
HM_ACCESS_INSN_KEYS: Final[dict[int, str]] = {
    HM_ACCESS_INSN_ATOMIC: "atomic",
    HM_ACCESS_INSN_SPIN: "spin",
    HM_ACCESS_INSN_VECTOR: "vector",
    HM_ACCESS_INSN_STRING: "string",
    HM_ACCESS_INSN_CHASE: "chase",
    HM_ACCESS_INSN_STRIDE: "stride",
}
"""HM_ACCESS_INSN_LABELS: value -> .pcf label; HM_ACCESS_INSN_KEYS: value -> key."""


# -- the site key's grammar (common/site_key.tsv)

# between the frames of a chain, the allocation call's caller first
HM_KEY_SEP: Final = " > "
# between a frame's module path and its offset (lower-case hex) in the key
HM_KEY_OFFSET: Final = "+0x"
# the module of a frame outside every loaded module; "??+0xADDR" keeps a key, a bare "??" or
#   file:line frame leaves the chain without one (unplaceable)
HM_KEY_UNKNOWN: Final = "??"
# frames in a chain at most (placement.txt's depth)
HM_KEY_MAX_FRAMES: Final = 64
# a frame's offset is below 2^OFFSET_BITS; a packed frame holds its module above them
HM_KEY_OFFSET_BITS: Final = 48


VALUES: Final[dict[int, dict[int, str]]] = {
    HM_EV_CALL: HM_CALL_LABELS,
    HM_EV_CALL_KIND: HM_CALL_KIND_LABELS,
    HM_EV_SITE: HM_SITE_LABELS,
    HM_EV_SAMPLE_OBJECT: HM_SITE_LABELS,
    HM_EV_FAULT_OBJECT: HM_SITE_LABELS,
    HM_EV_SITE_RAW: HM_SITE_LABELS,
    HM_EV_SITE_FUNC: HM_SITE_LABELS,
    HM_EV_SITE_LEVELS: HM_SITE_LABELS,
    HM_EV_SAMPLE_FUNC: HM_SAMPLE_FUNC_LABELS,
    HM_EV_SAMPLE_LINE: HM_SAMPLE_FUNC_LABELS,
    HM_EV_SAMPLE_LEVEL: HM_SAMPLE_LEVEL_LABELS,
    HM_EV_SAMPLE_HIT: HM_SAMPLE_HIT_LABELS,
    HM_EV_SAMPLER: HM_SAMPLER_LABELS,
    HM_EV_SAMPLE_CLASS: HM_SAMPLE_CLASS_LABELS,
    HM_EV_FAULT_CLASS: HM_SAMPLE_CLASS_LABELS,
    HM_EV_SAMPLE_RECOVERED: HM_SAMPLE_RECOVERED_LABELS,
    HM_EV_SAMPLE_WHY: HM_SAMPLE_WHY_LABELS,
    HM_EV_SAMPLE_VERIFIED: HM_SAMPLE_VERIFIED_LABELS,
    HM_EV_ACCESS_KIND: HM_ACCESS_KIND_LABELS,
    HM_EV_ACCESS_INSN: HM_ACCESS_INSN_LABELS,
}
"""The labels of each enumerated event type's values, by its code."""
