/* hmc_access.h — what the software sampler's decoder works with and answers: the
 * general registers of an interrupted context (in x86 encoding order, the numbers
 * ModRM and SIB use), the decoder's verdicts and the access it found. Shared by the
 * decoder's files (hmc_decode.c, hmc_dec.c, hmc_behind.c, what one instruction
 * accesses in hmc_insn.c and hmc_stride.c) and by their users through hmc_decode.h
 * and hmc_behind.h. Types and constants only. */
#ifndef HMC_ACCESS_H
#define HMC_ACCESS_H

#include <stdint.h>

#include "hmc_stream.h"   /* enum hms_why, enum hms_look: the reasons, as the stream has them */

/* General registers in x86 encoding order (the ModRM/SIB register numbers). */
enum { HMC_RAX, HMC_RCX, HMC_RDX, HMC_RBX, HMC_RSP, HMC_RBP, HMC_RSI, HMC_RDI,
       HMC_R8, HMC_R9, HMC_R10, HMC_R11, HMC_R12, HMC_R13, HMC_R14, HMC_R15 };

struct hmc_regs {
    uint64_t gpr[16];   /* rax rcx rdx rbx rsp rbp rsi rdi r8..r15 */
    uint64_t rip, fs_base, gs_base;
    uint64_t flags;     /* rflags: DF (0x400) gives a string instruction's direction */
};

enum hmc_dec {
    HMC_DEC_OK,         /* out->addr is the accessed address */
    HMC_DEC_NO_MEMOP,   /* the instruction accesses no data (lea, nop, prefetch, alu) */
    HMC_DEC_CLOBBERED,  /* it overwrote an address register: out->insn set, addr not */
    HMC_DEC_REJECTED,   /* it accesses memory in a way we cannot compute safely
                         * (gather/scatter, xlat, enter, undecodable by capstone 4) */
    HMC_DEC_FAIL        /* no trustworthy previous instruction (ambiguous bytes,
                         * rip is a branch target, unreadable code, nested call) */
};

struct hmc_access {
    uint64_t insn;     /* address of the accessing instruction */
    uint64_t addr;     /* data address (HMC_DEC_OK only) */
    int is_store;      /* 1: pure store; 0: load or read-modify-write (the load part is
                        * what stalls retirement) */
    int len;           /* instruction length in bytes */
    int size;          /* access bytes when known, else 0 (broadcast: one element) */
    int why;           /* enum hms_why (hmc_decode_prev/at), enum hms_look (ahead) */
    int ahead;         /* hmc_decode_ahead: instructions between rip and insn */
    unsigned cls;      /* HMS_CLS_* bits of the accessing instruction; hmc_decode_ahead
                        * adds HMS_CLS_SPIN when the instruction at rip is a pause */
};

#endif
