/* hmc_dec.c — the decoder's steps (hmc_dec.h) that hmc_decode.c and hmc_behind.c
 * share: one instruction decoded (capstone, or hmc_raw_parse's length where capstone
 * fails), our own code bytes read without faulting, the per-thread cache's slot, a
 * cached descriptor evaluated against the registers, and entering and leaving the
 * decoder (a nested signal is refused). Runs in signal handlers: no malloc, no locks,
 * no stdio. */
#include "hmc_dec.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* capstone 4 fails on many AVX-512 forms: then the length is hmc_raw_parse's, so that
 * decoding stays aligned. */
int hmc_dec_one(struct hmc_decoder *d, const uint8_t *p, size_t n, uint64_t a, struct hmc_raw *rw)
{
    hmc_raw_parse(p, (int)n, rw);
    if (cs_disasm_iter(d->cs, &p, &n, &a, d->insn))
        return d->insn->size;
    return -rw->len;
}

/* Copy [addr, addr+len) of our own memory; stop at the first unreadable page and
 * return how many bytes were copied. process_vm_readv on ourselves fails with EFAULT
 * instead of faulting; iovecs are split at page edges because it never splits one. */
size_t hmc_dec_read(struct hmc_decoder *d, uint64_t addr, void *dst, size_t len)
{
    struct iovec loc = { dst, len }, rem[3];
    uint64_t a = addr, end = addr + len;
    int n = 0;
    if (hm_unlikely(d->no_pvr)) {
        uint64_t pg = d->anchor & ~(uint64_t)(HMC_PAGE - 1);
        if (addr < pg || addr >= pg + HMC_PAGE)
            return 0;
        len = end > pg + HMC_PAGE ? pg + HMC_PAGE - addr : len;
        memcpy(dst, (const void *)(uintptr_t)addr, len);
        return len;
    }
    for (; a < end && n < 3; n++) {
        uint64_t e = (a | (HMC_PAGE - 1)) + 1;
        rem[n].iov_base = (void *)(uintptr_t)a;
        rem[n].iov_len = (e < end ? e : end) - a;
        a += rem[n].iov_len;
    }
    loc.iov_len = a - addr;
    ssize_t got = process_vm_readv(getpid(), &loc, 1, rem, (unsigned long)n, 0);
    if (got < 0 && (errno == ENOSYS || errno == EPERM)) {
        d->no_pvr = 1;
        return hmc_dec_read(d, addr, dst, len);
    }
    return got > 0 ? (size_t)got : 0;
}

struct hmc_desc *hmc_dec_slot(struct hmc_decoder *d, uint64_t key)
{
    return &d->cache[(key * 0x9e3779b97f4a7c15ull) >> (64 - HMC_CACHE_BITS)];
}

enum hmc_dec hmc_dec_eval(const struct hmc_desc *e, const struct hmc_regs *r,
                         struct hmc_access *out)
{
    out->insn = e->insn;
    out->len = e->len;
    out->is_store = e->is_store;
    out->size = e->size;
    out->why = e->why;
    out->ahead = e->ahead;
    out->cls = e->cls;
    if (e->status != HMC_DEC_OK)
        return (enum hmc_dec)e->status;
    uint64_t a = (uint64_t)e->disp;
    a += e->base != HMC_NOREG ? r->gpr[e->base] : 0;
    a += e->index != HMC_NOREG ? r->gpr[e->index] * e->scale : 0;
    if (e->str)                     /* undo the step: back by one element, or on if DF */
        a += (r->flags & 0x400) ? e->size : -(uint64_t)e->size;
    a = e->addr32 ? (uint32_t)a : a;
    out->addr = a + (e->seg == 1 ? r->fs_base : e->seg == 2 ? r->gs_base : 0);
    return HMC_DEC_OK;
}

/* A decoder is per thread; busy only refuses a nested signal. */
int hmc_dec_enter(struct hmc_decoder *d, uint64_t anchor, struct hmc_access *out)
{
    memset(out, 0, sizeof(*out));
    if (!d || d->busy)
        return -1;
    d->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    d->anchor = anchor;
    return 0;
}

enum hmc_dec hmc_dec_leave(struct hmc_decoder *d, enum hmc_dec st, int saved_errno)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    d->busy = 0;
    errno = saved_errno;
    return st;
}
