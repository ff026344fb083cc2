/* hmc_decode.c — which instruction a CPU-time sample hit and what address it
 * accessed (hmc_decode.h). Runs in signal handlers: no malloc, no locks, no stdio.
 *
 * Capstone 4.0.2 is the decoder. Measured against Zydis 4 over libc, libcrypto,
 * libdav1d, libx265 and libpython (3.3 M instructions), it gets wrong what this file
 * works around:
 *  - stores of the mov family (movups, vmovdqu*, movq, stos, setcc, fstp, stmxcsr...)
 *    carry access READ instead of WRITE: see store_class();
 *  - cmpxchg does not list rax among the registers it writes: see wmask();
 *  - EVEX instructions whose vvvv names zmm16-31 (EVEX.V' = 0) get a vector index
 *    register instead of the SIB's general one: the index is re-read from the bytes;
 *  - scatters are decoded with a general index register (a plausible wrong address)
 *    and gathers indexed by zmm16-31 are not decoded: every VSIB opcode is rejected
 *    from the raw bytes, whatever capstone says;
 *  - many AVX-512 instructions do not decode at all (11 % of libx265's): their length
 *    comes from a small VEX/EVEX length decoder so that decoding keeps its alignment;
 *    they are REJECTED when they have a memory operand;
 *  - xlat and enter come with no operands at all: REJECTED. */
#include "hmc_decode.h"

#include <capstone/capstone.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#define HMC_CACHE       256         /* decoded instructions remembered, by key */
#define HMC_BACK        15          /* bytes looked at before rip (max insn length) */
#define HMC_FWD_BYTES   65536u      /* forward decoding from func_start: bounds */
#define HMC_FWD_INSNS   20000
#define HMC_PAGE        4096u       /* split reads here: every real page edge is one */
#define HMC_NOREG       0xff
/* Cache key tags above any user address (< 2^56 even with 5-level paging). */
#define HMC_TAG_AT      (1ull << 63)
#define HMC_TAG_FWD     (1ull << 62)
#define HMC_TAG_BACK    (1ull << 61)

/* What an instruction accesses, independent of register values: a cache entry.
 * addr = disp + gpr[base] + gpr[index] * scale, truncated to 32 bits if addr32,
 * plus the fs/gs base. RIP-relative displacements are already absolute. */
struct hmc_desc {
    uint64_t key, insn;
    int64_t disp;
    uint16_t size;
    uint8_t status, base, index, scale, seg, addr32, len, is_store, rep;
};

struct hmc_decoder {
    csh cs;
    cs_insn *insn;
    volatile sig_atomic_t busy;
    int no_pvr;                       /* process_vm_readv refused (seccomp) */
    uint64_t anchor;                  /* without it only this page is read */
    struct hmc_desc cache[HMC_CACHE];
    uint8_t buf[HMC_PAGE + 16];       /* forward decoding window */
};

/* Raw-byte facts capstone 4 cannot be trusted with. */
struct hmc_raw {
    int rep, vex, map, op, modrm, sib, evex_x, vsib;
    int len;                          /* VEX/EVEX length when known, else 0 */
};

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
    out->fs_base = fs_base;
    out->gs_base = gs_base;
}

/* Capstone register -> general register number, -1 if it is not one. */
static int gpr_of(unsigned r)
{
    switch (r) {
    case X86_REG_AL: case X86_REG_AH: case X86_REG_AX: case X86_REG_EAX: case X86_REG_RAX: return 0;
    case X86_REG_CL: case X86_REG_CH: case X86_REG_CX: case X86_REG_ECX: case X86_REG_RCX: return 1;
    case X86_REG_DL: case X86_REG_DH: case X86_REG_DX: case X86_REG_EDX: case X86_REG_RDX: return 2;
    case X86_REG_BL: case X86_REG_BH: case X86_REG_BX: case X86_REG_EBX: case X86_REG_RBX: return 3;
    case X86_REG_SPL: case X86_REG_SP: case X86_REG_ESP: case X86_REG_RSP: return 4;
    case X86_REG_BPL: case X86_REG_BP: case X86_REG_EBP: case X86_REG_RBP: return 5;
    case X86_REG_SIL: case X86_REG_SI: case X86_REG_ESI: case X86_REG_RSI: return 6;
    case X86_REG_DIL: case X86_REG_DI: case X86_REG_EDI: case X86_REG_RDI: return 7;
    }
    if (r >= X86_REG_R8 && r <= X86_REG_R15) return 8 + (int)(r - X86_REG_R8);
    if (r >= X86_REG_R8B && r <= X86_REG_R15B) return 8 + (int)(r - X86_REG_R8B);
    if (r >= X86_REG_R8D && r <= X86_REG_R15D) return 8 + (int)(r - X86_REG_R8D);
    if (r >= X86_REG_R8W && r <= X86_REG_R15W) return 8 + (int)(r - X86_REG_R8W);
    return -1;
}

/* Legacy prefixes, then a VEX/EVEX prefix (always one in 64-bit mode: C4/C5/62 are
 * no longer LES/LDS/BOUND) with its map, opcode, ModRM and SIB, or the first legacy
 * opcode byte. For VEX/EVEX also the length: those encodings are regular (prefix,
 * opcode, ModRM, SIB, displacement, imm8 for map 0F3A and a few 0F opcodes). */
static void raw_parse(const uint8_t *p, int n, struct hmc_raw *r)
{
    int i = 0;
    memset(r, 0, sizeof(*r));
    r->modrm = -1;
    for (; i < n && i < 14; i++) {
        uint8_t b = p[i];
        if (b == 0xf2 || b == 0xf3)
            r->rep = 1;
        else if (b != 0x66 && b != 0x67 && b != 0xf0 && b != 0x2e && b != 0x36 &&
                 b != 0x3e && b != 0x26 && b != 0x64 && b != 0x65)
            break;
    }
    if (i >= n)
        return;
    uint8_t b = p[i];
    if ((b & 0xf0) == 0x40) {                       /* REX: a legacy opcode follows */
        r->op = i + 1 < n ? p[i + 1] : -1;
        return;
    }
    if (b != 0xc4 && b != 0xc5 && b != 0x62) {
        r->op = b;
        return;
    }
    r->vex = b == 0xc5 ? 2 : b == 0xc4 ? 3 : 4;
    if (i + r->vex >= n)
        return;
    r->map = b == 0xc5 ? 1 : b == 0xc4 ? (p[i + 1] & 0x1f) : (p[i + 1] & 7);
    r->evex_x = b == 0x62 && !(p[i + 1] & 0x40);     /* X is stored inverted */
    i += r->vex;
    r->op = p[i++];
    if (r->map == 1 && r->op == 0x77 && b != 0x62) { /* vzeroupper/vzeroall: no ModRM */
        r->len = i;
        return;
    }
    if (i >= n)
        return;
    r->modrm = p[i++];
    int mod = r->modrm >> 6, rm = r->modrm & 7;
    int disp = mod == 1 ? 1 : mod == 2 ? 4 : (mod == 0 && rm == 5) ? 4 : 0;
    if (mod != 3 && rm == 4) {
        if (i >= n)
            return;
        r->sib = p[i++];
        if (mod == 0 && (r->sib & 7) == 5)
            disp = 4;
    }
    int imm = r->map == 3 || (r->map == 1 && ((r->op >= 0x70 && r->op <= 0x73) ||
                                              r->op == 0xc2 || (r->op >= 0xc4 && r->op <= 0xc6)));
    i += disp + imm;
    if (i <= n && i <= 15)
        r->len = i;
    /* VSIB: gathers (0F38 90-93), and with EVEX scatters (A0-A3) and their
     * prefetches (C6, C7). Rejected from the bytes: capstone 4 mis-decodes them. */
    r->vsib = r->map == 2 && mod != 3 && rm == 4 &&
              ((r->op >= 0x90 && r->op <= 0x93) ||
               (b == 0x62 && ((r->op >= 0xa0 && r->op <= 0xa3) || r->op == 0xc6 || r->op == 0xc7)));
}

/* Decode at most n bytes at p (address a) into d->insn. Returns the length; minus the
 * length when only raw_parse knows it (capstone 4 fails on many AVX-512 forms), so
 * that decoding stays aligned; 0 when undecodable. */
static int dec1(struct hmc_decoder *d, const uint8_t *p, size_t n, uint64_t a)
{
    if (cs_disasm_iter(d->cs, &p, &n, &a, d->insn))
        return d->insn->size;
    struct hmc_raw rw;
    raw_parse(p, (int)n, &rw);
    return -rw.len;
}

/* Copy [addr, addr+len) of our own memory; stop at the first unreadable page and
 * return how many bytes were copied. process_vm_readv on ourselves fails with EFAULT
 * instead of faulting; iovecs are split at page edges because it never splits one. */
static size_t rd(struct hmc_decoder *d, uint64_t addr, void *dst, size_t len)
{
    struct iovec loc = { dst, len }, rem[3];
    int n = 0;
    uint64_t a = addr, end = addr + len;
    if (hm_unlikely(d->no_pvr)) {   /* only the page being executed is surely mapped */
        uint64_t pg = d->anchor & ~(uint64_t)(HMC_PAGE - 1);
        if (addr < pg || addr >= pg + HMC_PAGE)
            return 0;
        len = end > pg + HMC_PAGE ? pg + HMC_PAGE - addr : len;
        memcpy(dst, (const void *)(uintptr_t)addr, len);
        return len;
    }
    while (a < end && n < 3) {
        uint64_t e = (a | (HMC_PAGE - 1)) + 1;
        e = e < end ? e : end;
        rem[n].iov_base = (void *)(uintptr_t)a;
        rem[n++].iov_len = e - a;
        a = e;
    }
    loc.iov_len = a - addr;
    ssize_t got = process_vm_readv(getpid(), &loc, 1, rem, (unsigned long)n, 0);
    if (got < 0 && (errno == ENOSYS || errno == EPERM)) {
        d->no_pvr = 1;
        return rd(d, addr, dst, len);
    }
    return got > 0 ? (size_t)got : 0;
}

/* The n bytes before end into w[HMC_BACK - got ..]: the same page first, so that an
 * unmapped page before it only shortens the window. Returns got. */
static int rd_back(struct hmc_decoder *d, uint64_t end, uint8_t *w, int n)
{
    int near = (int)(end & (HMC_PAGE - 1));
    near = near < n ? near : n;
    if (near && rd(d, end - (uint64_t)near, w + HMC_BACK - near, (size_t)near) != (size_t)near)
        return 0;
    if (near == n || rd(d, end - (uint64_t)n, w + HMC_BACK - n, (size_t)(n - near)) != (size_t)(n - near))
        return near;
    return n;
}

static int pfx_in(const char *mn, const char *const *pfx)
{
    for (int i = 0; pfx[i]; i++)
        if (strncmp(mn, pfx[i], strlen(pfx[i])) == 0)
            return 1;
    return 0;
}

/* Pure stores of the mov family, whose memory operand capstone 4 marks READ (the
 * destination is operand 0 in capstone's default Intel order). */
static const char *const hmc_store_pfx[] = {
    "mov", "vmov", "st", "vst", "fst", "fnst", "fist", "fbst", "fnsave", "set", "pextr",
    "vpextr", "extractps", "vextract", "vpmov", "vcompress", "vpcompress", "vcvtps2ph",
    "vmaskmov", "vpmaskmov", "kmov", NULL };
/* x87/SSE/AVX state save and restore: capstone says 8 bytes, the size varies. */
static const char *const hmc_state_pfx[] = {
    "fx", "xsave", "xrstor", "fnsave", "frstor", "fldenv", "fnstenv", NULL };

/* General registers the instruction writes (explicitly, implicitly, partially). */
static unsigned wmask(struct hmc_decoder *d, const cs_insn *in)
{
    cs_regs rr, ww;
    uint8_t nr, nw;
    unsigned m = 0;
    if (cs_regs_access(d->cs, in, rr, &nr, ww, &nw) != CS_ERR_OK)
        return 0xffff;
    for (int i = 0; i < nw; i++) {
        int g = gpr_of(ww[i]);
        m |= g >= 0 ? 1u << g : 0;
    }
    const cs_x86 *x = &in->detail->x86;
    for (int i = 0; i < x->op_count; i++) {     /* access unknown: may be written */
        int g = x->operands[i].type == X86_OP_REG ? gpr_of(x->operands[i].reg) : -1;
        m |= g >= 0 && !x->operands[i].access ? 1u << g : 0;
    }
    if (in->id == X86_INS_CMPXCHG)              /* capstone 4 omits rax */
        m |= 1u << HMC_RAX;
    if (in->id == X86_INS_CMPXCHG8B || in->id == X86_INS_CMPXCHG16B)
        m |= 1u << HMC_RAX | 1u << HMC_RDX;
    return m;
}

/* push/pop/pushf/popf/leave/call/ret without an explicit memory operand: the stack
 * slot. After execution (post) rsp has moved by a known amount, which is undone. */
static void stack_access(const cs_insn *in, int post, int sz, struct hmc_desc *o)
{
    const cs_x86 *x = &in->detail->x86;
    int load;
    switch (in->id) {
    case X86_INS_PUSH: case X86_INS_PUSHF: case X86_INS_PUSHFQ: case X86_INS_PUSHFD:
        load = 0;
        break;
    case X86_INS_POP: case X86_INS_POPF: case X86_INS_POPFQ: case X86_INS_POPFD:
        load = 1;
        if (post && x->op_count && x->operands[0].type == X86_OP_REG &&
            gpr_of(x->operands[0].reg) == HMC_RSP) {
            o->status = HMC_DEC_CLOBBERED;              /* pop %rsp */
            return;
        }
        break;
    case X86_INS_LEAVE:                 /* mov %rbp,%rsp; pop %rbp */
        load = 1;
        sz = 8;
        if (!post) {
            o->base = HMC_RBP;
            o->size = 8;
            o->status = HMC_DEC_OK;
            return;
        }
        break;
    case X86_INS_CALL:
        load = 0;
        sz = 8;
        break;
    case X86_INS_RET:
        load = 1;
        sz = 8;
        break;
    default:
        o->status = HMC_DEC_NO_MEMOP;
        return;
    }
    o->base = HMC_RSP;
    o->disp = post ? (load ? -sz : 0) : (load ? 0 : -sz);
    o->size = (uint16_t)sz;
    o->is_store = !load;
    o->status = HMC_DEC_OK;
}

/* What the decoded instruction accesses. post: registers are those after it executed
 * (the sample case); else before (breakpoint, or a rep-string at rip). */
static void describe(struct hmc_decoder *d, const cs_insn *in, int post, struct hmc_desc *o)
{
    const cs_x86 *x = &in->detail->x86;
    const cs_x86_op *m = NULL;
    struct hmc_raw rw;
    int nm = 0, mi = -1, sz = x->prefix[2] == 0x66 ? 2 : 8;
    unsigned id = in->id;

    raw_parse(in->bytes, in->size, &rw);
    o->status = HMC_DEC_REJECTED;
    if (rw.vsib)
        return;
    switch (id) {
    case X86_INS_LEA: case X86_INS_NOP:
    /* Prefetches are hints: they retire without waiting for the line and may name
     * any address (even past an object's end), so a stall is never theirs. Cache
     * line flushes carry no data either. */
    case X86_INS_PREFETCH: case X86_INS_PREFETCHW: case X86_INS_PREFETCHNTA:
    case X86_INS_PREFETCHT0: case X86_INS_PREFETCHT1: case X86_INS_PREFETCHT2:
    case X86_INS_CLFLUSH: case X86_INS_CLFLUSHOPT: case X86_INS_CLWB:
        o->status = HMC_DEC_NO_MEMOP;
        return;
    case X86_INS_ENTER: case X86_INS_XLATB:     /* capstone 4: no operands at all */
        return;
    }
    /* After a jump, call or return the next instruction is not at rip: the sample's
     * predecessor is elsewhere. */
    if (post && (id == X86_INS_JMP || id == X86_INS_LJMP || cs_insn_group(d->cs, in, X86_GRP_CALL) ||
                 cs_insn_group(d->cs, in, X86_GRP_RET) || cs_insn_group(d->cs, in, X86_GRP_IRET))) {
        o->status = HMC_DEC_FAIL;
        return;
    }
    for (int i = 0; i < x->op_count; i++) {
        const cs_x86_op *op = &x->operands[i];
        if (op->type == X86_OP_INVALID)
            return;
        if (op->type != X86_OP_MEM)
            continue;
        nm++;
        /* Two memory operands (movs, cmps): the load, and for cmps the one at rsi. */
        if (!m || ((op->access & CS_AC_READ) &&
                   (!(m->access & CS_AC_READ) || gpr_of(op->mem.base) == HMC_RSI))) {
            m = op;
            mi = i;
        }
    }
    if (nm > 2)
        return;
    if (!m) {
        stack_access(in, post, sz, o);
        return;
    }
    switch (m->mem.segment) {
    case X86_REG_INVALID: case X86_REG_CS: case X86_REG_DS: case X86_REG_ES: case X86_REG_SS:
        break;
    case X86_REG_FS: o->seg = 1; break;
    case X86_REG_GS: o->seg = 2; break;
    default: return;
    }
    if (m->mem.base == X86_REG_RIP || m->mem.base == X86_REG_EIP) {
        o->disp = (int64_t)(in->address + in->size);
    } else if (m->mem.base != X86_REG_INVALID) {
        int g = gpr_of(m->mem.base);
        if (g < 0)
            return;
        o->base = (uint8_t)g;
    }
    if (m->mem.index != X86_REG_INVALID && m->mem.index != X86_REG_RIZ &&
        m->mem.index != X86_REG_EIZ) {
        int g = gpr_of(m->mem.index);
        if (g < 0 && rw.vex == 4 && rw.modrm >= 0 && (rw.modrm & 7) == 4 && rw.modrm >> 6 != 3)
            g = rw.evex_x << 3 | (rw.sib >> 3 & 7);     /* capstone's EVEX.V' bug */
        if (g < 0 || (m->mem.scale != 1 && m->mem.scale != 2 && m->mem.scale != 4 &&
                      m->mem.scale != 8))
            return;
        if (g != HMC_RSP) {                             /* SIB index 100: none */
            o->index = (uint8_t)g;
            o->scale = (uint8_t)m->mem.scale;
        }
    }
    o->disp += m->mem.disp;
    o->addr32 = x->addr_size == 4;
    o->size = m->size;
    if (pfx_in(in->mnemonic, hmc_state_pfx))
        o->size = 0;
    int w = m->access & CS_AC_WRITE, r = m->access & CS_AC_READ;
    if (mi == 0 && !w && pfx_in(in->mnemonic, hmc_store_pfx)) {
        w = 1;
        r = 0;
    }
    o->is_store = w && !r;

    /* push computes its operand's address before moving rsp, pop after. */
    unsigned wm = post ? wmask(d, in) : 0;
    if (id == X86_INS_PUSH || id == X86_INS_POP) {
        if (o->base == HMC_RSP && post == (id == X86_INS_PUSH))
            o->disp += sz;
        wm &= ~(1u << HMC_RSP);
    }
    unsigned am = (o->base != HMC_NOREG ? 1u << o->base : 0) |
                  (o->index != HMC_NOREG ? 1u << o->index : 0);
    o->status = (wm & am) ? HMC_DEC_CLOBBERED : HMC_DEC_OK;
}

/* Describe the n bytes b at address a as one instruction, or say why not. */
static void describe_bytes(struct hmc_decoder *d, const uint8_t *b, size_t n, uint64_t a,
                           int post, struct hmc_desc *o)
{
    int l = dec1(d, b, n, a);
    o->insn = a;
    if (l > 0) {
        o->len = (uint8_t)l;
        describe(d, d->insn, post, o);
    } else if (l < 0) {             /* only the length is known */
        struct hmc_raw rw;
        raw_parse(b, (int)n, &rw);
        o->len = (uint8_t)-l;
        o->status = rw.vsib || (rw.modrm >= 0 && rw.modrm >> 6 != 3) ? HMC_DEC_REJECTED
                                                                      : HMC_DEC_NO_MEMOP;
    }
}

/* Forward from a known boundary fs to the instruction that ends at rip. Its bytes are
 * left in b. 0 on success. */
static int fwd_prev(struct hmc_decoder *d, uint64_t fs, uint64_t rip, uint64_t *start, uint8_t *b)
{
    uint64_t base = fs, pos = fs;
    size_t have = 0, off = 0;
    if (rip <= fs || rip - fs > HMC_FWD_BYTES)
        return -1;
    for (int k = 0; k < HMC_FWD_INSNS; k++) {
        if (have - off < 16 && base + have < rip) {
            memmove(d->buf, d->buf + off, have - off);
            base += off;
            have -= off;
            off = 0;
            size_t want = sizeof(d->buf) - have;
            want = want < rip - base - have ? want : rip - base - have;
            have += rd(d, base + have, d->buf + have, want);
        }
        /* The buffer ends at rip: an instruction crossing it does not decode. */
        int l = dec1(d, d->buf + off, have - off, pos);
        l = l < 0 ? -l : l;
        if (!l)
            return -1;
        if (pos + (uint64_t)l == rip) {
            memcpy(b, d->buf + off, (size_t)l);
            *start = pos;
            return 0;
        }
        pos += (uint64_t)l;
        off += (size_t)l;
    }
    return -1;
}

/* Backward without a known boundary. Every start rip-s (s = 1..15) is decoded with
 * only the s bytes up to rip, and followed forward (s -> s - len) through the window;
 * a path that ends exactly at rip votes for its last instruction. x86 decoding
 * resynchronises within a few instructions, so the real predecessor collects the
 * votes of the real boundaries before it and of most misaligned starts, while a
 * suffix of it (8b 04 c6 inside 49 8b 04 c6) or a longer false instruction reaching
 * into it collects few. The candidate with the most votes wins; a tie is ambiguous and
 * fails rather than guess. */
static int back_prev(struct hmc_decoder *d, uint64_t rip, uint64_t *start, uint8_t *b)
{
    uint8_t w[HMC_BACK];
    uint8_t land[HMC_BACK + 1] = { 0 }, votes[HMC_BACK + 1] = { 0 };
    int n = rd_back(d, rip, w, HMC_BACK), best = 0, tie = 0;
    for (int s = 1; s <= n; s++) {
        int l = dec1(d, w + HMC_BACK - s, (size_t)s, rip - (uint64_t)s);
        l = l < 0 ? -l : l;
        land[s] = !l ? 0 : l == s ? (uint8_t)s : land[s - l];
        votes[land[s]]++;
    }
    for (int k = 1; k <= n; k++) {
        if (votes[k] > votes[best] || !best) {
            tie = 0;
            best = votes[k] ? k : best;
        } else if (votes[k] && votes[k] == votes[best]) {
            tie = 1;
        }
    }
    if (!best || tie)
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
    memset(o, 0, sizeof(*o));
    o->base = o->index = HMC_NOREG;
    o->scale = 1;
    o->status = HMC_DEC_FAIL;
    if (!skip_rep) {
        struct hmc_raw rw;
        size_t n = rd(d, rip, b, 15);
        raw_parse(b, (int)n, &rw);
        int op = rw.op;
        if (rw.rep && !rw.vex && ((op >= 0xa4 && op <= 0xa7) || (op >= 0xaa && op <= 0xaf) ||
                                  (op >= 0x6c && op <= 0x6f))) {
            describe_bytes(d, b, n, rip, 0, o);
            o->rep = o->status != HMC_DEC_FAIL;
            if (o->rep)
                return;
            o->status = HMC_DEC_FAIL;
        }
    }
    if (fs ? fwd_prev(d, fs, rip, &start, b) : back_prev(d, rip, &start, b))
        return;
    describe_bytes(d, b, rip - start, start, 1, o);
}

static struct hmc_desc *slot(struct hmc_decoder *d, uint64_t key)
{
    return &d->cache[(key * 0x9e3779b97f4a7c15ull) >> 56];
}

static enum hmc_dec eval(const struct hmc_desc *e, const struct hmc_regs *r,
                         struct hmc_access *out)
{
    out->insn = e->insn;
    out->len = e->len;
    out->is_store = e->is_store;
    out->size = e->size;
    out->addr = 0;
    if (e->status != HMC_DEC_OK)
        return (enum hmc_dec)e->status;
    uint64_t a = (uint64_t)e->disp;
    a += e->base != HMC_NOREG ? r->gpr[e->base] : 0;
    a += e->index != HMC_NOREG ? r->gpr[e->index] * e->scale : 0;
    a = e->addr32 ? (uint32_t)a : a;
    out->addr = a + (e->seg == 1 ? r->fs_base : e->seg == 2 ? r->gs_base : 0);
    return HMC_DEC_OK;
}

static int dec_enter(struct hmc_decoder *d, uint64_t anchor, struct hmc_access *out)
{
    memset(out, 0, sizeof(*out));
    if (!d || d->busy)
        return -1;
    d->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    d->anchor = anchor;
    return 0;
}

static void dec_leave(struct hmc_decoder *d)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    d->busy = 0;
}

enum hmc_dec hmc_decode_prev(struct hmc_decoder *d, const struct hmc_regs *r,
                             uint64_t func_start, struct hmc_access *out)
{
    int saved = errno;
    if (dec_enter(d, r->rip, out))
        return HMC_DEC_FAIL;
    uint64_t key = r->rip | (func_start ? HMC_TAG_FWD : HMC_TAG_BACK);
    struct hmc_desc tmp, *e = slot(d, key);
    if (e->key != key) {
        e->key = 0;
        build_prev(d, r->rip, func_start, 0, e);
        e->key = key;
    }
    /* A rep-string at rip with nothing left to do has not started: the sample
     * belongs to the instruction before it. */
    if (e->rep && !(e->addr32 ? (uint32_t)r->gpr[HMC_RCX] : r->gpr[HMC_RCX])) {
        build_prev(d, r->rip, func_start, 1, &tmp);
        e = &tmp;
    }
    enum hmc_dec st = eval(e, r, out);
    dec_leave(d);
    errno = saved;
    return st;
}

enum hmc_dec hmc_decode_at(struct hmc_decoder *d, const struct hmc_regs *r,
                           uint64_t insn, struct hmc_access *out)
{
    int saved = errno;
    if (dec_enter(d, insn, out))
        return HMC_DEC_FAIL;
    uint64_t key = insn | HMC_TAG_AT;
    struct hmc_desc *e = slot(d, key);
    if (e->key != key) {
        uint8_t b[16];
        e->key = 0;
        memset(e, 0, sizeof(*e));
        e->base = e->index = HMC_NOREG;
        e->scale = 1;
        e->status = HMC_DEC_FAIL;
        size_t n = rd(d, insn, b, 15);
        if (n)
            describe_bytes(d, b, n, insn, 0, e);
        e->key = key;
    }
    enum hmc_dec st = eval(e, r, out);
    dec_leave(d);
    errno = saved;
    return st;
}

struct hmc_decoder *hmc_decoder_new(void)
{
    /* Warm-up: one of each kind capstone handles differently (legacy, VEX, EVEX,
     * a VSIB gather, an EVEX form it cannot decode, rep-string, stack, call), so
     * that every lazily allocated table exists before a signal handler decodes. */
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
    d->insn = cs_malloc(d->cs);
    if (!d->insn) {
        hmc_decoder_free(d);
        return NULL;
    }
    struct hmc_regs r;
    struct hmc_access a;
    memset(&r, 0, sizeof(r));
    for (size_t i = 1; i <= sizeof(warm); i++) {
        r.rip = (uint64_t)(uintptr_t)warm + i;
        hmc_decode_prev(d, &r, 0, &a);
        hmc_decode_at(d, &r, r.rip - 1, &a);
    }
    r.rip = (uint64_t)(uintptr_t)warm + 4;
    hmc_decode_prev(d, &r, (uint64_t)(uintptr_t)warm, &a);
    memset(d->cache, 0, sizeof(d->cache));
    return d;
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
