/* hmc_decode.c — which instruction a CPU-time sample hit and what address it
 * accessed (hmc_decode.h): finding the instruction before rip, the instruction at a
 * breakpoint, the look ahead, the decoder's set-up. Reading code bytes safely, one
 * decode and the per-thread cache are hmc_dec.c's; what one instruction accesses is
 * hmc_insn.c.
 * Runs in signal handlers: no malloc, no locks, no stdio.
 *
 * Capstone 4.0.2's first decode allocates a per-handle table: hmc_decoder_new()
 * decodes every kind of input first. It formats operand text with vsnprintf into a
 * fixed buffer, which allocates nothing for those formats. */
#include "hmc_decode.h"
#include "hmc_dec.h"
#include "hmc_behind.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

/* Decoded instructions remembered, by key (direct-mapped, 40 bytes each). LAMMPS's LJ
 * run samples ~180 distinct rips, and the look ahead adds a key for most: with 256
 * slots a third of the signals decoded afresh (measured 2026-11-26), with 1024 few. */
#define HMC_FWD_BYTES   65536u      /* forward decoding from func_start: bounds */
#define HMC_FWD_INSNS   20000
/* Cache key tags above any user address (< 2^56 even with 5-level paging). */
#define HMC_TAG_AT      (1ull << 63)
#define HMC_TAG_FWD     (1ull << 62)
#define HMC_TAG_BACK    (1ull << 61)
#define HMC_TAG_AHEAD   (1ull << 60)    /* with the look-ahead's instruction limit at bit 56 */
/* (hmc_behind.c's producer-load keys: bit 59, without bit 60) */
#define HMC_AHEAD_BYTES 64              /* bytes decoded forward from rip */

void hmc_regs_from_ucontext(const void *ucv, uint64_t fs_base, uint64_t gs_base,
                            struct hmc_regs *out)
{
    static const int map[16] = { REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP,
                                 REG_RSI, REG_RDI, REG_R8, REG_R9, REG_R10, REG_R11,
                                 REG_R12, REG_R13, REG_R14, REG_R15 };
    const ucontext_t *uc = ucv;
    for (int i = 0; i < 16; i++)
        out->gpr[i] = (uint64_t)uc->uc_mcontext.gregs[map[i]];
    out->rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    out->flags = (uint64_t)uc->uc_mcontext.gregs[REG_EFL];
    out->fs_base = fs_base;
    out->gs_base = gs_base;
}

/* The HMC_BACK bytes before end, right-aligned in w: the same page first, so that an
 * unmapped page before it only shortens the window. Returns how many were read. */
static int rd_back(struct hmc_decoder *d, uint64_t end, uint8_t *w)
{
    int n = HMC_BACK, near = (int)(end & (HMC_PAGE - 1));
    near = near < n ? near : n;
    if (near && hmc_dec_read(d, end - (uint64_t)near, w + n - near, (size_t)near) != (size_t)near)
        return 0;
    if (near == n || hmc_dec_read(d, end - (uint64_t)n, w, (size_t)(n - near)) != (size_t)(n - near))
        return near;
    return n;
}

/* Describe the instruction in the n bytes b at address a. */
static void describe_bytes(struct hmc_decoder *d, const uint8_t *b, size_t n, uint64_t a,
                           int post, struct hmc_desc *o)
{
    struct hmc_raw rw;
    int l = hmc_dec_one(d, b, n, a, &rw);
    hmc_desc_init(o, a);
    o->len = (uint8_t)(l < 0 ? -l : l);
    if (l > 0) {
        hmc_describe(d->cs, d->insn, &rw, post, o);
    } else if (l < 0) {             /* length known, operands not */
        int mem = rw.vsib || (rw.modrm >= 0 && rw.modrm >> 6 != 3);
        o->status = mem ? HMC_DEC_REJECTED : HMC_DEC_NO_MEMOP;
        o->why = rw.vsib ? HMS_WHY_VSIB : mem ? HMS_WHY_UNDECODED : HMS_WHY_VEC;
    }
}

/* HMS_CLS_STRIDE on a described access whose address registers step by a constant in
 * its loop (hmc_insn_stride), over HMC_STRIDE_BACK bytes before it and
 * HMC_STRIDE_FWD from it. */
#define HMC_STRIDE_BACK 256
#define HMC_STRIDE_FWD  256
static void add_stride(struct hmc_decoder *d, struct hmc_desc *o)
{
    unsigned regs = (o->base != HMC_NOREG ? 1u << o->base : 0) |
                    (o->index != HMC_NOREG ? 1u << o->index : 0);
    if (o->status != HMC_DEC_OK || !regs || (o->cls & (HMS_CLS_CHASE | HMS_CLS_STRING)) ||
        o->insn < HMC_STRIDE_BACK)
        return;
    uint8_t b[HMC_STRIDE_BACK + HMC_STRIDE_FWD];
    uint64_t lo = o->insn - HMC_STRIDE_BACK;
    size_t got = hmc_dec_read(d, lo, b, sizeof(b)), skip = 0;
    if (got < (size_t)HMC_STRIDE_BACK + o->len) {   /* the page before is not mapped: from insn */
        lo = o->insn;
        skip = HMC_STRIDE_BACK;
        got = hmc_dec_read(d, lo, b + skip, sizeof(b) - skip);
    }
    if (got && hmc_insn_stride(d->cs, d->insn, b + skip, got, lo, o->insn, o->len, regs))
        o->cls |= HMS_CLS_STRIDE;
}

/* Forward from the boundary fs to the instruction that ends at rip; its bytes are
 * left in b. 0 on success. Lengths only: capstone's detail is off meanwhile. */
static int fwd_prev(struct hmc_decoder *d, uint64_t fs, uint64_t rip, uint64_t *start, uint8_t *b)
{
    uint64_t base = fs, pos = fs;
    size_t have = 0, off = 0;
    int ret = -1;
    if (rip <= fs || rip - fs > HMC_FWD_BYTES)
        return -1;
    cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_OFF);
    for (int k = 0; k < HMC_FWD_INSNS; k++) {
        if (have - off < 16 && base + have < rip) {
            memmove(d->buf, d->buf + off, have - off);
            base += off;
            have -= off;
            off = 0;
            size_t want = sizeof(d->buf) - have;
            want = want < rip - base - have ? want : rip - base - have;
            have += hmc_dec_read(d, base + have, d->buf + have, want);
        }
        /* The buffer ends at rip: an instruction that would cross it fails here. */
        struct hmc_raw rw;
        int l = hmc_dec_one(d, d->buf + off, have - off, pos, &rw);
        l = l < 0 ? -l : l;
        if (!l)
            break;
        if (pos + (uint64_t)l == rip) {
            memcpy(b, d->buf + off, (size_t)l);
            *start = pos;
            ret = 0;
            break;
        }
        pos += (uint64_t)l;
        off += (size_t)l;
    }
    cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
    return ret;
}

/* Backward, without a known boundary. Every start rip-s (s = 1..64) is decoded and
 * followed forward (s -> s - len) through the window; a path that ends exactly at
 * rip votes for its last instruction. x86 decoding resynchronises within a few
 * instructions, so the real predecessor collects the votes of the real boundaries
 * before it and of most misaligned starts, while a suffix of it (8b 04 c6 inside
 * 49 8b 04 c6) or a false instruction reaching into it collects few. Paths through
 * opcodes compilers never emit (hmc_raw's odd) are dropped. The winner needs 1.5x
 * the votes of the runner-up, else HMC_DEC_FAIL.
 * Measured against Zydis linear sweeps, over every instruction not after a jump or
 * return (a wrong pick that has a memory operand gives a plausible wrong address):
 *   window  libc (302k)          libpython (618k)     libx265 (2.99M)
 *   15      1.8-2.7 % wrong      -                    1.7-2.5 % wrong
 *   64      0.001 % wrong,       0.0003 % wrong,      0.0015 % wrong,
 *           0.03 % FAIL          0.015 % FAIL         0.4 % FAIL (dense AVX-512)
 * so the scan reads 64 bytes, not only the 15 an instruction can span. It costs about
 * 25 us per new rip (one read, 64 decodes); the cache answers the next samples. */
static int hmc_dec_back(struct hmc_decoder *d, uint64_t rip, uint64_t *start, uint8_t *b)
{
    uint8_t w[HMC_BACK], land[HMC_BACK + 1] = { 0 };
    unsigned votes[HMC_BACK + 1] = { 0 };
    int n = rd_back(d, rip, w);
    if (!n)
        return -2;
    cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_OFF);
    for (int s = 1; s <= n; s++) {
        struct hmc_raw rw;
        int l = hmc_dec_one(d, w + HMC_BACK - s, (size_t)(s < 15 ? s : 15), rip - (uint64_t)s, &rw);
        l = l < 0 ? -l : l;
        land[s] = !l || rw.odd ? 0 : l == s ? (uint8_t)s : land[s - l];
        votes[land[s]]++;
    }
    cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
    int best = hmc_dec_vote_best(votes, n);
    if (!best)
        return -1;
    memcpy(b, w + HMC_BACK - best, (size_t)best);
    *start = rip - (uint64_t)best;
    return 0;
}

/* The descriptor for a sample at rip (see hmc_decode_prev). */
static void build_prev(struct hmc_decoder *d, uint64_t rip, uint64_t fs, int skip_rep,
                       struct hmc_desc *o)
{
    uint8_t b[16];
    uint64_t start;
    hmc_desc_init(o, 0);
    if (!skip_rep) {
        struct hmc_raw rw;
        size_t n = hmc_dec_read(d, rip, b, 15);
        hmc_raw_parse(b, (int)n, &rw);
        if (rw.rep && HMC_STRING_OP(&rw)) {
            describe_bytes(d, b, n, rip, 0, o);
            if ((o->rep = o->status != HMC_DEC_FAIL))
                return;
            hmc_desc_init(o, 0);
        }
    }
    int st = fs ? fwd_prev(d, fs, rip, &start, b) : hmc_dec_back(d, rip, &start, b);
    if (!st) {
        describe_bytes(d, b, rip - start, start, 1, o);
        add_stride(d, o);
    } else {
        o->why = st == -2 || !hmc_dec_read(d, rip - 1, b, 1) ? HMS_WHY_UNREADABLE
                                                               : HMS_WHY_AMBIGUOUS;
    }
}

/* The look-ahead descriptor for rip (see hmc_decode_ahead): the first access in
 * straight-line code, with its distance in ahead, or why there is none in why. It
 * depends on the code bytes only, so it is cached like the others. */
static void build_ahead(struct hmc_decoder *d, uint64_t rip, int max, struct hmc_desc *o)
{
    uint8_t b[HMC_AHEAD_BYTES];
    size_t n = hmc_dec_read(d, rip, b, sizeof(b)), off = 0;
    unsigned written = 0, spin = 0;
    hmc_desc_init(o, rip);
    o->why = n ? HMS_LOOK_NONE : HMS_LOOK_UNREADABLE;
    for (int k = 0; k < max && off < n; k++) {
        struct hmc_raw rw;
        struct hmc_desc t;
        uint64_t a = rip + off;
        int l = hmc_dec_one(d, b + off, n - off, a, &rw);
        if (l <= 0) {
            /* cut by the end of the window, or capstone cannot decode it: then its
             * register writes are unknown, and so is its access if it has one */
            int mem = rw.vsib || (rw.modrm >= 0 && rw.modrm >> 6 != 3);
            o->why = !l && n - off < 15 ? HMS_LOOK_NONE
                     : l < 0 && mem ? HMS_LOOK_UNKNOWN : HMS_LOOK_UNDECODED;
            return;
        }
        if (HMC_STRING_OP(&rw)) {       /* its count decides whether it accesses at all */
            o->why = HMS_LOOK_UNKNOWN;
            return;
        }
        hmc_desc_init(&t, a);
        t.len = (uint8_t)l;
        hmc_describe(d->cs, d->insn, &rw, 0, &t);
        if (t.status == HMC_DEC_OK && rw.odd) {     /* moffs, ins/outs: not trusted */
            o->why = HMS_LOOK_UNKNOWN;
            return;
        }
        if (t.status == HMC_DEC_OK) {
            unsigned am = (t.base != HMC_NOREG ? 1u << t.base : 0) |
                          (t.index != HMC_NOREG ? 1u << t.index : 0);
            if (am & written) {
                o->why = HMS_LOOK_WRITTEN;
                return;
            }
            *o = t;
            o->cls |= (uint8_t)spin;
            o->why = HMS_LOOK_NOT_TRIED;
            o->ahead = (uint8_t)k;
            return;
        }
        spin |= k == 0 ? (t.cls & HMS_CLS_SPIN) : 0;    /* interrupted at a pause */
        if (t.status != HMC_DEC_NO_MEMOP) {
            o->why = HMS_LOOK_UNKNOWN;
            return;
        }
        if (hmc_insn_breaks_flow(d->cs, d->insn)) {
            o->why = HMS_LOOK_BRANCH;
            return;
        }
        if (rw.odd) {                   /* in/out, cli/sti...: not ordinary user code */
            o->why = HMS_LOOK_UNDECODED;
            return;
        }
        written |= hmc_insn_writes(d->cs, d->insn);
        off += (size_t)l;
    }
}

enum hmc_dec hmc_decode_prev(struct hmc_decoder *d, const struct hmc_regs *r,
                             uint64_t func_start, struct hmc_access *out)
{
    int saved = errno;
    if (hmc_dec_enter(d, r->rip, out)) {
        out->why = HMS_WHY_NESTED;
        return HMC_DEC_FAIL;
    }
    uint64_t key = r->rip | (func_start ? HMC_TAG_FWD : HMC_TAG_BACK);
    struct hmc_desc tmp, *e = hmc_dec_slot(d, key);
    if (e->key != key) {
        build_prev(d, r->rip, func_start, 0, e);
        e->key = key;
        d->builds++;
    }
    /* A rep-string at rip with nothing left to do has not started: the sample
     * belongs to the instruction before it. */
    if (e->rep && !(e->addr32 ? (uint32_t)r->gpr[HMC_RCX] : r->gpr[HMC_RCX])) {
        build_prev(d, r->rip, func_start, 1, &tmp);
        e = &tmp;
    }
    return hmc_dec_leave(d, hmc_dec_eval(e, r, out), saved);
}

enum hmc_dec hmc_decode_at(struct hmc_decoder *d, const struct hmc_regs *r,
                           uint64_t insn, struct hmc_access *out)
{
    int saved = errno;
    if (hmc_dec_enter(d, insn, out)) {
        out->why = HMS_WHY_NESTED;
        return HMC_DEC_FAIL;
    }
    uint64_t key = insn | HMC_TAG_AT;
    struct hmc_desc *e = hmc_dec_slot(d, key);
    if (e->key != key) {
        uint8_t b[16];
        size_t n = hmc_dec_read(d, insn, b, 15);
        hmc_desc_init(e, insn);
        if (n)
            describe_bytes(d, b, n, insn, 0, e);
        else
            e->why = HMS_WHY_UNREADABLE;
        e->key = key;
        d->builds++;
    }
    return hmc_dec_leave(d, hmc_dec_eval(e, r, out), saved);
}

enum hmc_dec hmc_decode_ahead(struct hmc_decoder *d, const struct hmc_regs *r, int max_insns,
                              struct hmc_access *out)
{
    int saved = errno;
    if (hmc_dec_enter(d, r->rip, out) || max_insns < 1) {
        out->why = HMS_LOOK_NOT_TRIED;
        return HMC_DEC_FAIL;
    }
    max_insns = max_insns < HMC_AHEAD_MAX ? max_insns : HMC_AHEAD_MAX;
    uint64_t key = r->rip | HMC_TAG_AHEAD | (uint64_t)max_insns << 56;
    struct hmc_desc *e = hmc_dec_slot(d, key);
    if (e->key != key) {
        build_ahead(d, r->rip, max_insns, e);
        e->key = key;
        d->builds++;
    }
    return hmc_dec_leave(d, hmc_dec_eval(e, r, out), saved);
}

struct hmc_decoder *hmc_decoder_new(void)
{
    /* One of each kind capstone handles differently (legacy, VEX, EVEX, VSIB, an
     * EVEX form it cannot decode, rep-string, stack, call), decoded backward,
     * forward and in place, so that nothing is first done in a signal handler. */
    static const uint8_t warm[] = {
        0x49, 0x8b, 0x04, 0xc6,                     /* mov (%r14,%rax,8),%rax */
        0xc5, 0xfe, 0x7f, 0x07,                     /* vmovdqu %ymm0,(%rdi) */
        0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x08,         /* vmovdqu64 (%rax),%zmm1 */
        0xc4, 0xe2, 0x6d, 0x90, 0x04, 0x88,         /* vpgatherdd %ymm2,(%rax,%ymm1,4),%ymm0 */
        0x62, 0xa1, 0x5d, 0x40, 0x61, 0xe1,         /* vpunpcklwd (capstone 4 fails) */
        0xf3, 0xa4,                                 /* rep movsb */
        0x53, 0xff, 0x10, 0xc3,                     /* push %rbx; call *(%rax); ret */
        0xf0, 0x48, 0x0f, 0xb1, 0x0a,               /* lock cmpxchg %rcx,(%rdx) */
    };
    struct hmc_decoder *d = mmap(NULL, sizeof(*d), PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (d == MAP_FAILED)
        return NULL;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &d->cs) != CS_ERR_OK) {
        munmap(d, sizeof(*d));
        return NULL;
    }
    cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
    if (!(d->insn = cs_malloc(d->cs))) {
        hmc_decoder_free(d);
        return NULL;
    }
    struct hmc_regs r;
    struct hmc_access a;
    memset(&r, 0, sizeof(r));
    for (size_t i = 1; i <= sizeof(warm); i++) {
        r.rip = (uint64_t)(uintptr_t)warm + i;
        hmc_decode_prev(d, &r, 0, &a);
        hmc_decode_prev(d, &r, (uint64_t)(uintptr_t)warm, &a);
        hmc_decode_behind(d, &r, &a);
        hmc_decode_at(d, &r, r.rip - 1, &a);
        r.rip -= 1;
        hmc_decode_ahead(d, &r, HMC_AHEAD_MAX, &a);
    }
    memset(d->cache, 0, sizeof(d->cache));
    d->builds = 0;
    return d;
}

uint64_t hmc_decoder_builds(const struct hmc_decoder *d)
{
    return d ? d->builds : 0;
}

void hmc_decoder_free(struct hmc_decoder *d)
{
    if (!d)
        return;
    if (d->insn)
        cs_free(d->insn, 1);
    cs_close(&d->cs);
    munmap(d, sizeof(*d));
}
