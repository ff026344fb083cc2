/* hm_events.h — the Paraver event types of the trace contract.
 * Generated from common/trace_events.tsv by `python -m hmtune.core.contract`
 * (make contract); do not edit. The table says what each value means.
 */
#ifndef HM_EVENTS_H
#define HM_EVENTS_H

#define HM_EV_SAMPLE_FUNC      30000000  /* extrae: sampled instruction's function (own label table) */
#define HM_EV_SAMPLE_LINE      30000100  /* extrae: sampled instruction's file:line (own label table) */
#define HM_EV_SAMPLE_LOAD      32000000  /* extrae: sampled load data address */
#define HM_EV_SAMPLE_STORE     32000001  /* extrae: sampled store data address */
#define HM_EV_SAMPLE_LEVEL     32000002  /* extrae: memory level of the sampled access (enum hmr_level, collect/hmc_stream.h) */
#define HM_EV_SAMPLE_HIT       32000003  /* extrae: 1 hit, 2 miss (qualifies the level) */
#define HM_EV_SAMPLE_LATENCY   32000006  /* extrae: access latency, cycles (PEBS/IBS) */
#define HM_EV_SAMPLE_OBJECT    32000007  /* extrae: object of the sampled address (ids as 32000009; statics have their own) */
#define HM_EV_SITE             32000009  /* extrae: allocation site id (>= 3; 1 unknown dynamic, 2 unknown static); label table file:line > ... */
#define HM_EV_PID              40000036  /* extrae: process id, at a task's first thread */
#define HM_EV_PPID             40000037  /* extrae: parent process id, at a task's first thread */
#define HM_EV_CALL             40000040  /* extrae: Extrae's call kind: 1 malloc, 2 free, 3 realloc, 4 calloc, 5 posix_memalign, ...; 0 end */
#define HM_EV_SIZE             40000041  /* extrae: requested size, bytes */
#define HM_EV_IN_PTR           40000042  /* extrae: input pointer (free, realloc) */
#define HM_EV_OUT_PTR          40000043  /* extrae: returned pointer (0 on failure) */
#define HM_EV_CALL_KIND        41000000  /* hmtune: exact call kind (enum hmr_kind, collect/hmc_stream.h); 0 end */
#define HM_EV_ALIGN            41000001  /* hmtune: requested alignment */
#define HM_EV_TID              41000002  /* hmtune: OS thread id, at a thread's first record */
#define HM_EV_RANK             41000003  /* hmtune: MPI rank, when known */
#define HM_EV_SITE_RAW         41000010  /* hmtune: label table only: site id -> module+0xoffset > ... */
#define HM_EV_SITE_FUNC        41000011  /* hmtune: label table only: site id -> function chain */
#define HM_EV_SITE_LEVELS      41000012  /* hmtune: label table only: site id -> 32000009 frames per 41000010 frame */
#define HM_EV_SAMPLE_WEIGHT    41000020  /* hmtune: sample weight: PEBS/IBS cycles, software sampler ns */
#define HM_EV_SAMPLER          41000021  /* hmtune: sampler of the process: 0 none, 1 PEBS, 2 IBS, 3 software */
#define HM_EV_SAMPLE_CLASS     41000023  /* hmtune: address class: 1 heap object, 2 static, 3 stack, 4 unknown, 5 no address */
#define HM_EV_SAMPLE_RECOVERED 41000024  /* hmtune: how the address was recovered: 1 breakpoint, 2 look ahead, 3 string instruction */
#define HM_EV_LOST_SAMPLES     41000025  /* hmtune: samples the kernel dropped */
#define HM_EV_SAMPLE_WHY       41000026  /* hmtune: software sampler: why the instruction gave no address (WHY, §2) */
#define HM_EV_SAMPLE_LOOKAHEAD 41000027  /* hmtune: look ahead: instructions to the access */
#define HM_EV_SAMPLE_VERIFIED  41000028  /* hmtune: look ahead checked by breakpoint: 1 same, 2 different, 3 not reached */
#define HM_EV_FAULT_ADDR       41000030  /* hmtune: sampled minor page fault: faulting data address */
#define HM_EV_FAULT_COUNT      41000031  /* hmtune: page faults the fault sample stands for */
#define HM_EV_FAULT_OBJECT     41000032  /* hmtune: object of the fault's address (ids as 32000007) */
#define HM_EV_FAULT_CLASS      41000033  /* hmtune: page-fault address class (values of 41000023) */
#define HM_EV_LOST_FAULTS      41000034  /* hmtune: page-fault samples the kernel dropped */
#define HM_EV_CALL_SCALE       41000040  /* hmtune: small-call sampling: calls an allocation stands for */
#define HM_EV_SAMPLE_SCALE     41000041  /* hmtune: small-call sampling: blocks the sampled object stands for */

/* The code as a string literal: "6    " HM_EV_STR(HM_EV_CALL) "    ...". */
#define HM_EV_STR_(x) #x
#define HM_EV_STR(x) HM_EV_STR_(x)

#endif
