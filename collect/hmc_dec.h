/* hmc_dec.h — internal to the software sampler's decoder: the per-thread decoder and
 * the steps (hmc_dec.c) that hmc_decode.c and hmc_behind.c both take: reading our own
 * code, one decode, the cache, evaluating a descriptor against the registers, entering
 * and leaving the decoder; and the backward vote's verdict (hmc_behind.c repeats
 * hmc_decode.c's backward vote, hmc_dec_back, over a window read once).
 * Async-signal-safe, like hmc_decode.h. */
#ifndef HMC_DEC_H
#define HMC_DEC_H

#include <signal.h>
#include <stddef.h>

#include "hm_util.h"
#include "hmc_access.h"
#include "hmc_insn.h"

#define HMC_CACHE_BITS  10
#define HMC_CACHE       (1u << HMC_CACHE_BITS)
#define HMC_PAGE        4096u       /* reads split here: every real page edge is one */
#define HMC_BACK        64          /* bytes scanned before rip (see hmc_dec_back) */

struct hmc_decoder {
    csh cs;
    cs_insn *insn;
    volatile sig_atomic_t busy;
    int no_pvr;                       /* process_vm_readv refused (seccomp) */
    uint64_t anchor;                  /* then only this page (being executed) is read */
    uint64_t builds;                  /* descriptors built (cache misses) */
    struct hmc_desc cache[HMC_CACHE];
    uint8_t buf[HMC_PAGE + 16];       /* forward decoding window */
};

/* Decode at most n bytes at p (address a) into d->insn, and their raw facts into rw.
 * Returns the length; minus the length when only hmc_raw_parse knows it; 0 if neither. */
int hmc_dec_one(struct hmc_decoder *d, const uint8_t *p, size_t n, uint64_t a,
                struct hmc_raw *rw) HM_HIDDEN;
/* Copy [addr, addr+len) of our own memory; the bytes copied (stops at an unreadable page). */
size_t hmc_dec_read(struct hmc_decoder *d, uint64_t addr, void *dst, size_t len) HM_HIDDEN;
/* The cache slot of key. */
struct hmc_desc *hmc_dec_slot(struct hmc_decoder *d, uint64_t key) HM_HIDDEN;
/* out from descriptor e and the registers r; e's status. */
enum hmc_dec hmc_dec_eval(const struct hmc_desc *e, const struct hmc_regs *r,
                          struct hmc_access *out) HM_HIDDEN;
/* Enter (0; -1: nested or no decoder, out zeroed either way) and leave the decoder. */
int hmc_dec_enter(struct hmc_decoder *d, uint64_t anchor, struct hmc_access *out) HM_HIDDEN;
enum hmc_dec hmc_dec_leave(struct hmc_decoder *d, enum hmc_dec st, int saved_errno) HM_HIDDEN;

/* The backward vote's verdict: the instruction length (1..15, at most n) most start
 * offsets land on, 0 when none did or the runner-up has more than two thirds of its
 * votes (the bytes are ambiguous). votes[k]: the offsets landing on length k. */
static inline int hmc_dec_vote_best(const unsigned *votes, int n)
{
    unsigned v1 = 0, v2 = 0;
    int best = 0;
    for (int k = 1; k <= n && k <= 15; k++) {
        if (votes[k] > v1) {
            v2 = v1;
            v1 = votes[k];
            best = k;
        } else if (votes[k] > v2) {
            v2 = votes[k];
        }
    }
    return !v1 || 2 * v1 < 3 * v2 ? 0 : best;
}

#endif
