"""The Paraver event types of the trace contract (docs/formats.md §3).

Generated from common/trace_events.tsv by `python -m hmtune.core.contract`
(make contract); do not edit. The table says what each value means.
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
# extrae: memory level of the sampled access (enum hmr_level, collect/hmc_stream.h)
HM_EV_SAMPLE_LEVEL: Final = 32000002
# extrae: 1 hit, 2 miss (qualifies the level)
HM_EV_SAMPLE_HIT: Final = 32000003
# extrae: access latency, cycles (PEBS/IBS)
HM_EV_SAMPLE_LATENCY: Final = 32000006
# extrae: object of the sampled address (ids as 32000009; statics have their own)
HM_EV_SAMPLE_OBJECT: Final = 32000007
# extrae: allocation site id (>= 3; 1 unknown dynamic, 2 unknown static); label table file:line
#   > ...
HM_EV_SITE: Final = 32000009
# extrae: process id, at a task's first thread
HM_EV_PID: Final = 40000036
# extrae: parent process id, at a task's first thread
HM_EV_PPID: Final = 40000037
# extrae: Extrae's call kind: 1 malloc, 2 free, 3 realloc, 4 calloc, 5 posix_memalign, ...; 0
#   end
HM_EV_CALL: Final = 40000040
# extrae: requested size, bytes
HM_EV_SIZE: Final = 40000041
# extrae: input pointer (free, realloc)
HM_EV_IN_PTR: Final = 40000042
# extrae: returned pointer (0 on failure)
HM_EV_OUT_PTR: Final = 40000043
# hmtune: exact call kind (enum hmr_kind, collect/hmc_stream.h); 0 end
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
# hmtune: sampler of the process: 0 none, 1 PEBS, 2 IBS, 3 software
HM_EV_SAMPLER: Final = 41000021
# hmtune: address class: 1 heap object, 2 static, 3 stack, 4 unknown, 5 no address
HM_EV_SAMPLE_CLASS: Final = 41000023
# hmtune: how the address was recovered: 1 breakpoint, 2 look ahead, 3 string instruction
HM_EV_SAMPLE_RECOVERED: Final = 41000024
# hmtune: samples the kernel dropped
HM_EV_LOST_SAMPLES: Final = 41000025
# hmtune: software sampler: why the instruction gave no address (WHY, §2)
HM_EV_SAMPLE_WHY: Final = 41000026
# hmtune: look ahead: instructions to the access
HM_EV_SAMPLE_LOOKAHEAD: Final = 41000027
# hmtune: look ahead checked by breakpoint: 1 same, 2 different, 3 not reached
HM_EV_SAMPLE_VERIFIED: Final = 41000028
# hmtune: sampled minor page fault: faulting data address
HM_EV_FAULT_ADDR: Final = 41000030
# hmtune: page faults the fault sample stands for
HM_EV_FAULT_COUNT: Final = 41000031
# hmtune: object of the fault's address (ids as 32000007)
HM_EV_FAULT_OBJECT: Final = 41000032
# hmtune: page-fault address class (values of 41000023)
HM_EV_FAULT_CLASS: Final = 41000033
# hmtune: page-fault samples the kernel dropped
HM_EV_LOST_FAULTS: Final = 41000034
# hmtune: small-call sampling: calls an allocation stands for
HM_EV_CALL_SCALE: Final = 41000040
# hmtune: small-call sampling: blocks the sampled object stands for
HM_EV_SAMPLE_SCALE: Final = 41000041

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
    "HM_EV_FAULT_ADDR": HM_EV_FAULT_ADDR,
    "HM_EV_FAULT_COUNT": HM_EV_FAULT_COUNT,
    "HM_EV_FAULT_OBJECT": HM_EV_FAULT_OBJECT,
    "HM_EV_FAULT_CLASS": HM_EV_FAULT_CLASS,
    "HM_EV_LOST_FAULTS": HM_EV_LOST_FAULTS,
    "HM_EV_CALL_SCALE": HM_EV_CALL_SCALE,
    "HM_EV_SAMPLE_SCALE": HM_EV_SAMPLE_SCALE,
}
"""Every constant above by name."""
