/* hmc_behind.c — the producer load of a sample whose instruction has no memory
 * operand (hmc_behind.h): backward from the sampled instruction, one instruction at a
 * time by hmc_decode.c's backward vote, to the nearest writer of each register it
 * reads. Part of the decoder; runs in signal handlers: no malloc, no locks, no stdio. */
#include "hmc_behind.h"
#include "hmc_dec.h"

#include <errno.h>
#include <string.h>

/* Cache key tag: below hmc_decode.c's (bits 60..63; the look ahead's keys always have
 * bit 60), above any user address. */
#define HMC_TAG_BEHIND  (1ull << 59)
#define FWD_BYTES       64      /* after rip, searched for branches back into the range */
#define FWD_INSNS       16
#define GPRS            0xffffull
#define BIT_VEC         16      /* xmm/ymm/zmm 0..31: bits 16..47 */
#define BIT_X87         48      /* the x87 stack and the MMX registers it holds */
#define BIT_K           49      /* k0..k7: bits 49..56 */

/* A register as a bit of the sets followed (0: not followed: flags, rip, segments). */
static uint64_t reg_bit(unsigned r)
{
    int g = hmc_insn_gpr(r);
    if (g >= 0)
        return 1ull << g;
    if (r >= X86_REG_XMM0 && r <= X86_REG_XMM31)
        return 1ull << (BIT_VEC + r - X86_REG_XMM0);
    if (r >= X86_REG_YMM0 && r <= X86_REG_YMM31)
        return 1ull << (BIT_VEC + r - X86_REG_YMM0);
    if (r >= X86_REG_ZMM0 && r <= X86_REG_ZMM31)
        return 1ull << (BIT_VEC + r - X86_REG_ZMM0);
    if ((r >= X86_REG_ST0 && r <= X86_REG_ST7) || (r >= X86_REG_FP0 && r <= X86_REG_FP7) ||
        (r >= X86_REG_MM0 && r <= X86_REG_MM7))
        return 1ull << BIT_X87;
    if (r >= X86_REG_K0 && r <= X86_REG_K7)
        return 1ull << (BIT_K + r - X86_REG_K0);
    return 0;
}

/* The registers the decoded instruction reads and writes: capstone's lists, operands
 * whose access capstone leaves unknown both ways, hmc_insn_writes' additions, and
 * every x87 instruction as reading and writing the stack. -1 if capstone cannot say. */
static int regs_of(csh cs, const cs_insn *in, uint64_t *rd, uint64_t *wr)
{
    const cs_x86 *x = &in->detail->x86;
    cs_regs rr, ww;
    uint8_t nr, nw;
    *rd = *wr = 0;
    if (cs_regs_access(cs, in, rr, &nr, ww, &nw) != CS_ERR_OK)
        return -1;
    for (int i = 0; i < nr; i++)
        *rd |= reg_bit(rr[i]);
    for (int i = 0; i < nw; i++)
        *wr |= reg_bit(ww[i]);
    for (int i = 0; i < x->op_count; i++) {
        const cs_x86_op *op = &x->operands[i];
        uint64_t b = op->type == X86_OP_REG ? reg_bit(op->reg) : 0;
        *rd |= !op->access || (op->access & CS_AC_READ) ? b : 0;
        *wr |= !op->access || (op->access & CS_AC_WRITE) ? b : 0;
    }
    *wr |= hmc_insn_writes(cs, in);
    if (cs_insn_group(cs, in, X86_GRP_FPU)) {
        *rd |= 1ull << BIT_X87;
        *wr |= 1ull << BIT_X87;
    }
    return 0;
}

/* A direct jump or branch (not a call: it lands on a function's entry): its target. */
static int branch_target(csh cs, const cs_insn *in, uint64_t *t)
{
    const cs_x86 *x = &in->detail->x86;
    if (!cs_insn_group(cs, in, X86_GRP_BRANCH_RELATIVE) || cs_insn_group(cs, in, X86_GRP_CALL) ||
        x->op_count < 1 || x->operands[0].type != X86_OP_IMM)
        return 0;
    *t = (uint64_t)x->operands[0].imm;
    return 1;
}

static int lands_in(csh cs, const cs_insn *in, uint64_t lo, uint64_t hi)
{
    uint64_t t;
    return branch_target(cs, in, &t) && t > lo && t <= hi;
}

/* A direct branch within FWD_BYTES after rip (a loop's closing branch, say) that lands
 * in (lo, rip]: the instructions there may run without the one at lo. Stops at an
 * unconditional jump or return, and at what it cannot decode. */
static int target_ahead(struct hmc_decoder *d, uint64_t rip, uint64_t lo)
{
    uint8_t b[FWD_BYTES];
    size_t n = hmc_dec_read(d, rip, b, sizeof(b)), off = 0;
    for (int k = 0; k < FWD_INSNS && off < n; k++) {
        struct hmc_raw rw;
        int l = hmc_dec_one(d, b + off, n - off, rip + off, &rw);
        if (l <= 0)
            return 0;
        if (lands_in(d->cs, d->insn, lo, rip))
            return 1;
        if (d->insn->id == X86_INS_JMP || cs_insn_group(d->cs, d->insn, X86_GRP_RET))
            return 0;
        off += (size_t)l;
    }
    return 0;
}

/* The bytes before rip, read once, and the length of the instruction at each of them,
 * decoded when first needed: every step of the walk votes as hmc_dec_back does, on
 * the same bytes, without decoding them again. Position i is address rip - WIN + i;
 * the bytes read are the last n. */
#define WIN         (HMC_BACK + (HMC_BEHIND_MAX + 1) * 15)
struct back_win {
    uint64_t rip;
    int n;
    uint8_t w[WIN];
    uint8_t len[WIN];           /* 0xff: not decoded yet; 0: none, or an odd opcode */
};

/* The same page first, so that an unreadable page before it only shortens the window. */
static void win_read(struct hmc_decoder *d, uint64_t rip, struct back_win *b)
{
    int near = (int)(rip & (HMC_PAGE - 1));
    near = near < WIN ? near : WIN;
    b->rip = rip;
    b->n = 0;
    memset(b->len, 0xff, sizeof(b->len));
    if (near && hmc_dec_read(d, rip - (uint64_t)near, b->w + WIN - near, (size_t)near) !=
                    (size_t)near)
        return;
    b->n = near;
    if (near < WIN && hmc_dec_read(d, rip - WIN, b->w, (size_t)(WIN - near)) ==
                          (size_t)(WIN - near))
        b->n = WIN;
}

static int len_at(struct hmc_decoder *d, struct back_win *b, int i)
{
    if (b->len[i] == 0xff) {
        struct hmc_raw rw;
        int avail = WIN - i < 15 ? WIN - i : 15;
        int l = hmc_dec_one(d, b->w + i, (size_t)avail, b->rip - (uint64_t)(WIN - i), &rw);
        l = l < 0 ? -l : l;
        b->len[i] = (uint8_t)(rw.odd ? 0 : l);
    }
    return b->len[i];
}

/* hmc_dec_back's vote (hmc_decode.c) for the instruction that ends at position e: its
 * length, 0 when the bytes are ambiguous or none were read. Detail off meanwhile. */
static int vote(struct hmc_decoder *d, struct back_win *b, int e)
{
    uint8_t land[HMC_BACK + 1] = { 0 };
    unsigned votes[HMC_BACK + 1] = { 0 };
    int n = e - (WIN - b->n);
    n = n < HMC_BACK ? n : HMC_BACK;
    cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_OFF);
    for (int s = 1; s <= n; s++) {
        int l = len_at(d, b, e - s);        /* one that would cross e: none */
        land[s] = !l || l > s ? 0 : l == s ? (uint8_t)s : land[s - l];
        votes[land[s]]++;
    }
    cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
    return hmc_dec_vote_best(votes, n);
}

/* The descriptor for a sample at rip: the producer load's, with its distance in
 * ahead and HMS_BEHIND_OK in why; else status HMC_DEC_FAIL and why an enum hms_behind. */
static void build_behind(struct hmc_decoder *d, uint64_t rip, struct hmc_desc *o)
{
    struct back_win bw;
    uint64_t pend = 0, since = 0;
    struct hmc_desc load;
    int dist = 0, e = WIN;
    hmc_desc_init(&load, 0);
    hmc_desc_init(o, rip);
    o->why = HMS_BEHIND_NO_LOAD;
    win_read(d, rip, &bw);
    for (int k = 0; k <= HMC_BEHIND_MAX; k++) {
        struct hmc_raw rw;
        struct hmc_desc t;
        uint64_t rd, wr;
        int pl = vote(d, &bw, e);
        uint64_t start = rip - (uint64_t)(WIN - e + pl);
        int l = pl ? hmc_dec_one(d, bw.w + e - pl, (size_t)pl, start, &rw) : 0;
        if (!pl || l != pl || regs_of(d->cs, d->insn, &rd, &wr)) {
            o->why = dist ? o->why : !pl ? HMS_BEHIND_AMBIGUOUS : HMS_BEHIND_UNDECODED;
            break;
        }
        e -= pl;
        hmc_desc_init(&t, start);
        t.len = (uint8_t)l;
        if (k == 0) {                   /* the sampled instruction, after it executed */
            hmc_describe(d->cs, d->insn, &rw, 1, &t);
            if (t.status != HMC_DEC_NO_MEMOP || rw.odd || hmc_insn_breaks_flow(d->cs, d->insn)) {
                o->why = HMS_BEHIND_NOT_TRIED;
                return;
            }
            pend = rd;
            since = wr & GPRS;
            if (!pend)
                return;                 /* reads no register: HMS_BEHIND_NO_LOAD */
            continue;
        }
        if (hmc_insn_breaks_flow(d->cs, d->insn)) {
            if (dist && lands_in(d->cs, d->insn, load.insn, rip)) {
                o->why = HMS_BEHIND_TARGET;
                return;
            }
            o->why = dist ? o->why : HMS_BEHIND_BRANCH;
            break;
        }
        if (rw.odd && !HMC_STRING_OP(&rw)) {    /* in/out, cli/sti...: not user code */
            o->why = dist ? o->why : HMS_BEHIND_UNDECODED;
            break;
        }
        uint64_t hit = wr & pend;
        if (hit) {                      /* the nearest writer of some register it reads */
            pend &= ~hit;
            hmc_describe(d->cs, d->insn, &rw, 0, &t);
            if (t.status == HMC_DEC_NO_MEMOP || (t.status == HMC_DEC_OK && t.is_store)) {
                /* computed in registers (or a store's side result): no load there */
            } else if (t.status != HMC_DEC_OK || HMC_STRING_OP(&rw) || dist) {
                o->why = dist ? HMS_BEHIND_TWO_LOADS : HMS_BEHIND_UNKNOWN;
                return;
            } else {
                unsigned am = (t.base != HMC_NOREG ? 1u << t.base : 0) |
                              (t.index != HMC_NOREG ? 1u << t.index : 0);
                if (am & since) {
                    o->why = HMS_BEHIND_WRITTEN;
                    return;
                }
                if (am & wr) {
                    o->why = HMS_BEHIND_CHASE;
                    return;
                }
                load = t;
                dist = k;
            }
        }
        since |= wr & GPRS;
        if (!pend)                      /* every register it reads has its producer */
            break;
    }
    if (!dist)
        return;
    if (target_ahead(d, rip, load.insn)) {
        o->why = HMS_BEHIND_TARGET;
        return;
    }
    *o = load;
    o->ahead = (uint8_t)dist;
    o->why = HMS_BEHIND_OK;
}

enum hmc_dec hmc_decode_behind(struct hmc_decoder *d, const struct hmc_regs *r,
                               struct hmc_access *out)
{
    int saved = errno;
    if (hmc_dec_enter(d, r->rip, out)) {
        out->why = HMS_BEHIND_NOT_TRIED;
        return HMC_DEC_FAIL;
    }
    uint64_t key = r->rip | HMC_TAG_BEHIND;
    struct hmc_desc *e = hmc_dec_slot(d, key);
    if (e->key != key) {
        build_behind(d, r->rip, e);
        e->key = key;
        d->builds++;
    }
    return hmc_dec_leave(d, hmc_dec_eval(e, r, out), saved);
}
