/* hmc_insn.h — internal to hmc_decode: what one x86-64 instruction accesses, as a
 * descriptor that does not depend on register values (so it can be cached), built
 * from capstone 4's decode corrected where capstone is wrong (hmc_insn.c). */
#ifndef HMC_INSN_H
#define HMC_INSN_H

#include <capstone/capstone.h>
#include <stdint.h>

#include "hm_util.h"

#define HMC_NOREG 0xff
#define HMC_STRING_OP(rw) (!(rw)->vex && (((rw)->op >= 0xa4 && (rw)->op <= 0xa7) || \
                                         ((rw)->op >= 0xaa && (rw)->op <= 0xaf)))

/* addr = disp + gpr[base] + gpr[index] * scale (HMC_NOREG: absent), truncated to
 * 32 bits if addr32, plus the fs (seg 1) or gs (seg 2) base. RIP-relative
 * displacements are already absolute. status is an enum hmc_dec. */
struct hmc_desc {
    uint64_t key, insn;     /* key: the cache's */
    int64_t disp;
    uint16_t size;
    uint8_t status, base, index, scale, seg, addr32, len, is_store;
    uint8_t rep;            /* a rep-string at the sampled rip (hmc_decode_prev) */
    uint8_t why;            /* enum hmc_why (hmc_decode_ahead's cache: enum hmc_ahead_why) */
    uint8_t ahead;          /* hmc_decode_ahead's cache: instructions before the access */
    uint8_t str;            /* a string instruction that ran: base moved by size (DF) */
    uint8_t cls;            /* HMS_CLS_* bits of the instruction (hmc_stream.h) */
};

/* Facts read from the bytes themselves. */
struct hmc_raw {
    int rep, vex, map, op, modrm, sib, evex_x, vsib;
    int len;        /* VEX/EVEX instruction length when complete, else 0 */
    int odd;        /* an opcode compilers do not emit in 64-bit user code */
};

/* Prefixes, and the opcode; for VEX/EVEX also map, ModRM, SIB, length and VSIB. */
void hmc_raw_parse(const uint8_t *p, int n, struct hmc_raw *r) HM_HIDDEN;

/* "Nothing known" (HMC_DEC_FAIL) about the instruction at a. */
void hmc_desc_init(struct hmc_desc *o, uint64_t a) HM_HIDDEN;

/* Fill o (initialised by hmc_desc_init, len set) for the instruction in (decoded
 * with detail) whose raw facts are rw. post: the registers will be those after it
 * executed (a sample), else before (a breakpoint). */
void hmc_describe(csh cs, const cs_insn *in, const struct hmc_raw *rw, int post,
                  struct hmc_desc *o) HM_HIDDEN;

/* The general register (encoding order) a capstone register is, at any width; -1 if
 * it is not one. */
int hmc_insn_gpr(unsigned r) HM_HIDDEN;

/* General registers the instruction writes (bit i: register i in encoding order),
 * explicitly, implicitly or partially, with capstone 4's omissions added; all of
 * them when capstone cannot say. */
unsigned hmc_insn_writes(csh cs, const cs_insn *in) HM_HIDDEN;

/* Nonzero when execution may not continue at the next instruction with the
 * registers the instruction leaves: jumps, branches, calls, returns, syscalls, traps,
 * transactional-memory boundaries, and fs/gs base writes. */
int hmc_insn_breaks_flow(csh cs, const cs_insn *in) HM_HIDDEN;

/* Whether the access of the instruction at insn (len bytes) walks memory by a
 * constant step: from it to the first instruction that breaks the flow, which must be
 * a direct jump back to at most insn (a loop), and from that jump's target to insn,
 * some of its address registers (mask regs, encoding order) are moved by a constant
 * (add/sub of an immediate, inc, dec, lea of itself plus a displacement) and none is
 * written otherwise. code holds the n bytes at code_addr, insn's among them; at most
 * HMC_STRIDE_INSNS instructions each way. Decodes into in (capstone's buffer). */
#define HMC_STRIDE_INSNS 64
int hmc_insn_stride(csh cs, cs_insn *in, const uint8_t *code, size_t n, uint64_t code_addr,
                    uint64_t insn, unsigned len, unsigned regs) HM_HIDDEN;

#endif
