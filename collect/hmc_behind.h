/* hmc_behind.h — the producer load of a sample whose instruction has no memory operand
 * (software address sampling, issue 43): a CPU-time sample often lands after the
 * arithmetic that waited for a load (`mov (%rbx,%rcx,8),%rax; add %rax,%rdx`,
 * sampled after the add). The load that produced a register the sampled instruction
 * reads, earlier in the same straight-line code, is the access the time was spent
 * on; when its address registers still hold what they held when it ran, its address
 * is computed from the sample's registers.
 *
 * The rule (hmc_behind.c) refuses, saying why (enum hms_behind):
 *  - when an instruction between the load and the sample cannot be told from the
 *    bytes (the backward vote is ambiguous) or cannot be decoded;
 *  - when a jump, branch, call, return, syscall or trap lies in between, or a direct
 *    branch (decoded before the load, or within HMC_AHEAD_BYTES after rip) lands
 *    between the load and the sampled instruction: the load may not have run;
 *  - when an instruction after the load (the sampled one included) writes its base or
 *    index register, or the load overwrote one itself;
 *  - when two loads feed the instruction (which one it waited for is not known), or
 *    none within HMC_BEHIND_MAX instructions does;
 *  - when the load's address cannot be computed (gather, string, segment, moffs).
 * A register's producer is the nearest instruction before that writes it (any part);
 * general, vector (xmm/ymm/zmm n: one register), mask and x87/MMX registers (the x87
 * stack: one) are followed, flags are not, and only the direct producer counts (a
 * load copied to another register first is not followed).
 *
 * Async-signal-safe like hmc_decode.h; the result depends on the code bytes only and
 * is cached in the decoder by rip. */
#ifndef HMC_BEHIND_H
#define HMC_BEHIND_H

#include "hm_util.h"
#include "hmc_access.h"

struct hmc_decoder;             /* hmc_decode.h */

#define HMC_BEHIND_MAX 8        /* instructions searched before the sampled one */

/* For a sample at r->rip (registers after the instruction before rip executed, as
 * hmc_decode_prev): HMC_DEC_OK with out->insn the producer load, out->addr its
 * address, out->ahead its distance in instructions (1: right before the sampled
 * one), out->cls its HMS_CLS_* bits and out->why HMS_BEHIND_OK; else HMC_DEC_FAIL
 * with out->why an enum hms_behind. Call it only for samples whose instruction has no
 * memory operand (hmc_decode_prev said HMC_DEC_NO_MEMOP); it checks again. */
enum hmc_dec hmc_decode_behind(struct hmc_decoder *d, const struct hmc_regs *r,
                               struct hmc_access *out) HM_HIDDEN;

#endif
