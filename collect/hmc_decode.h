/* hmc_decode.h — the data address of a sampled instruction, computed from the
 * registers of the interrupted context (software address sampling, see
 * MACHINE-NOTES "Software address sampling works").
 *
 * A CPU-time timer interrupts a thread after the stalled instruction retired, so the
 * access of interest is the instruction *before* the interrupted RIP, and the
 * registers are the ones after it executed. When that instruction overwrote one of its
 * own address registers the decoder says HMC_DEC_CLOBBERED; the caller then arms a
 * one-shot execute breakpoint on it and calls hmc_decode_at() from the SIGTRAP, which
 * fires before the instruction executes.
 *
 * Everything below except hmc_decoder_new/free is async-signal-safe: no malloc, no
 * locks, no stdio; code bytes are read with process_vm_readv(2) on ourselves, which
 * fails cleanly on an unmapped page instead of faulting. errno is preserved.
 * A decoder belongs to one thread and is not reentrant: a nested call (a second
 * sampling signal inside the handler) gets HMC_DEC_FAIL. */
#ifndef HMC_DECODE_H
#define HMC_DECODE_H

#include <stdint.h>

#include "hm_util.h"
#include "hmc_access.h"   /* the registers, the verdicts (enum hmc_dec), struct hmc_access */

struct hmc_decoder;   /* per thread, opaque, memory from mmap (hmc_dec.h) */

/* Fill *out from a ucontext_t (the third argument of an SA_SIGINFO handler). The
 * segment bases are not in the context: pass the thread's own (fs_base is its
 * thread pointer, e.g. __builtin_thread_pointer(); gs_base is 0 in user space
 * unless the program set it). */
void hmc_regs_from_ucontext(const void *uc, uint64_t fs_base, uint64_t gs_base,
                            struct hmc_regs *out) HM_HIDDEN;

/* Opens capstone (x86-64, detail on), allocates its instruction buffer and warms it
 * up (capstone allocates on its first decode). Call outside signal handlers, in the
 * thread that will use it, before arming its timer. NULL on failure. */
struct hmc_decoder *hmc_decoder_new(void) HM_HIDDEN;
void hmc_decoder_free(struct hmc_decoder *d) HM_HIDDEN;
/* Descriptors built (cache misses) since hmc_decoder_new. */
uint64_t hmc_decoder_builds(const struct hmc_decoder *d) HM_HIDDEN;

/* The access of the instruction before r->rip, with r holding the registers after it
 * executed; or of the instruction AT rip when that is a rep-string instruction with
 * rcx != 0 (interrupted mid-way, not retired). func_start, when nonzero, is a known
 * instruction boundary at or before rip in the same mapping (the function's start):
 * decoding runs forward from it (at most 64 KiB / 20000 instructions). Without it a
 * backward heuristic picks the previous instruction and says HMC_DEC_FAIL when the
 * bytes are ambiguous. Results are cached per decoder (1024 entries by rip). */
enum hmc_dec hmc_decode_prev(struct hmc_decoder *d, const struct hmc_regs *r,
                             uint64_t func_start, struct hmc_access *out) HM_HIDDEN;

/* The access of the instruction at insn, with r holding the registers before it
 * executes (the execute-breakpoint case). Never HMC_DEC_CLOBBERED. */
enum hmc_dec hmc_decode_at(struct hmc_decoder *d, const struct hmc_regs *r,
                           uint64_t insn, struct hmc_access *out) HM_HIDDEN;

/* The next access in straight-line code from r->rip, with r holding the registers
 * before the instruction at rip executes (a sample: rip has not run yet). The
 * instructions are decoded forward from rip, at most max_insns of them within 64
 * bytes; the first one that accesses memory is the answer, with out->ahead the
 * number of instructions before it (0: the one at rip). Its address is exact as
 * long as execution goes straight there, which the scan makes sure of: it stops
 * with HMC_DEC_FAIL (out->why an enum hms_look) at any jump, branch, syscall or
 * trap (a call or return is itself an access, to the stack), at any instruction it
 * cannot decode (its register writes are unknown), and when an instruction in
 * between writes a register the access's address uses. Never HMC_DEC_CLOBBERED. */
#define HMC_AHEAD_MAX 15
enum hmc_dec hmc_decode_ahead(struct hmc_decoder *d, const struct hmc_regs *r, int max_insns,
                              struct hmc_access *out) HM_HIDDEN;

#endif
