/* hmc_insn.c — what one x86-64 instruction accesses, as a register-independent
 * descriptor (hmc_insn.h). Part of hmc_decode; runs in signal handlers: no malloc,
 * no locks, no stdio.
 *
 * Capstone 4.0.2 is the decoder. Checked against Zydis 4 over libc, libpython,
 * libcrypto, libdav1d and libx265 (5 M instructions), it gets wrong what this file
 * works around:
 *  - stores of the mov family (movups, vmovdqu*, movq, stos, setcc, fstp, stmxcsr...)
 *    have access READ instead of WRITE: see hmc_store_pfx;
 *  - cmpxchg does not list rax among the registers it writes, nor syscall and enter
 *    any: see hmc_insn_writes();
 *  - EVEX instructions whose vvvv names zmm16-31 (EVEX.V' = 0) get a vector index
 *    register instead of the SIB's general one: the index is re-read from the bytes;
 *  - scatters are decoded with a general index register (a plausible wrong address)
 *    and gathers indexed by zmm16-31 not at all: every VSIB opcode is rejected from
 *    the raw bytes, whatever capstone says;
 *  - many AVX-512 instructions do not decode (11 % of libx265's): their length comes
 *    from hmc_raw_parse() so that decoding stays aligned, and they are REJECTED when they
 *    have a memory operand;
 *  - xlat and enter come with no operands: REJECTED; frstor is marked a store. */
#include "hmc_insn.h"
#include "hmc_access.h"

#include <string.h>

/* Capstone register -> general register number (any width), -1 if not one. */
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

int hmc_insn_gpr(unsigned r)
{
    return gpr_of(r);
}

/* Legacy prefixes, then either the first legacy opcode byte, or a VEX/EVEX prefix
 * (always one in 64-bit mode: C4/C5/62 are no longer LES/LDS/BOUND) with its map,
 * opcode, ModRM, SIB and length: those encodings are regular (prefix, opcode, ModRM,
 * SIB, displacement, imm8 for map 0F3A and a few 0F opcodes). */
void hmc_raw_parse(const uint8_t *p, int n, struct hmc_raw *r)
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
    int rex = i < n && (p[i] & 0xf0) == 0x40;       /* then a legacy opcode follows */
    if ((i += rex) >= n)
        return;
    uint8_t b = p[i];
    r->op = b;
    if (rex || (b != 0xc4 && b != 0xc5 && b != 0x62)) {
        switch (b) {
        /* loop*, jrcxz, in/out/ins/outs, ret imm16, far returns and jumps, int n,
         * hlt, cli/sti, moffs movabs, icebp, xlat, enter; string ops without rep.
         * Misaligned decodes produce them all the time; compiled code does not. */
        case 0xe0: case 0xe1: case 0xe2: case 0xe3: case 0xe4: case 0xe5: case 0xe6:
        case 0xe7: case 0xec: case 0xed: case 0xee: case 0xef: case 0x6c: case 0x6d:
        case 0x6e: case 0x6f: case 0xc2: case 0xca: case 0xcb: case 0xcf: case 0xcd:
        case 0xce: case 0xf4: case 0xfa: case 0xfb: case 0xa0: case 0xa1: case 0xa2:
        case 0xa3: case 0xf1: case 0xd7: case 0xc8: case 0x9a: case 0xea:
            r->odd = 1;
            break;
        case 0xa4: case 0xa5: case 0xa6: case 0xa7: case 0xaa: case 0xab: case 0xac:
        case 0xad: case 0xae: case 0xaf:
            r->odd = !r->rep;
            break;
        }
        return;
    }
    r->vex = b == 0xc5 ? 2 : b == 0xc4 ? 3 : 4;
    if (i + r->vex >= n)
        return;
    r->map = b == 0xc5 ? 1 : b == 0xc4 ? (p[i + 1] & 0x1f) : (p[i + 1] & 7);
    r->evex_x = b == 0x62 && !(p[i + 1] & 0x40);     /* X is stored inverted */
    i += r->vex;
    r->op = p[i++];
    if (r->map == 1 && r->op == 0x77 && b != 0x62) { /* vzeroupper/all: no ModRM */
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
        disp = mod == 0 && (r->sib & 7) == 5 ? 4 : disp;
    }
    i += disp + (r->map == 3 || (r->map == 1 && ((r->op >= 0x70 && r->op <= 0x73) ||
                                                 r->op == 0xc2 || (r->op >= 0xc4 && r->op <= 0xc6))));
    r->len = i <= n && i <= 15 ? i : 0;
    /* VSIB: gathers (0F38 90-93); with EVEX also scatters (A0-A3) and their
     * prefetches (C6, C7). */
    r->vsib = r->map == 2 && mod != 3 && rm == 4 &&
              ((r->op >= 0x90 && r->op <= 0x93) ||
               (b == 0x62 && ((r->op >= 0xa0 && r->op <= 0xa3) || r->op == 0xc6 ||
                              r->op == 0xc7)));
}

static int pfx_in(const char *mn, const char *const *pfx)
{
    for (int i = 0; pfx[i]; i++)
        if (strncmp(mn, pfx[i], strlen(pfx[i])) == 0)
            return 1;
    return 0;
}

/* Pure stores of the mov family, whose memory operand capstone 4 marks READ. The
 * destination is operand 0 in capstone's default Intel order. */
static const char *const hmc_store_pfx[] = {
    "mov", "vmov", "st", "vst", "fst", "fnst", "fist", "fbst", "fnsave", "set", "pextr",
    "vpextr", "extractps", "vextract", "vpmov", "vcompress", "vpcompress", "vcvtps2ph",
    "vmaskmov", "vpmaskmov", "kmov", NULL };
/* x87/SSE/AVX state save and restore: capstone says 8 bytes; the size varies. */
static const char *const hmc_state_pfx[] = {
    "fx", "xsave", "xrstor", "fnsave", "frstor", "fldenv", "fnstenv", NULL };

/* General registers the instruction writes (explicitly, implicitly, partially).
 * Capstone 4 lists no register for syscall (the kernel returns in rax and the
 * instruction itself writes rcx and r11) nor for enter (rbp, rsp); both are added. */
unsigned hmc_insn_writes(csh cs, const cs_insn *in)
{
    const cs_x86 *x = &in->detail->x86;
    cs_regs rr, ww;
    uint8_t nr, nw;
    unsigned m = 0;
    if (cs_regs_access(cs, in, rr, &nr, ww, &nw) != CS_ERR_OK)
        return 0xffff;
    for (int i = 0; i < nw; i++)
        m |= gpr_of(ww[i]) >= 0 ? 1u << gpr_of(ww[i]) : 0;
    for (int i = 0; i < x->op_count; i++) {     /* access unknown: may be written */
        int g = x->operands[i].type == X86_OP_REG ? gpr_of(x->operands[i].reg) : -1;
        m |= g >= 0 && !x->operands[i].access ? 1u << g : 0;
    }
    if (in->id == X86_INS_CMPXCHG)              /* capstone 4 omits rax */
        m |= 1u << HMC_RAX;
    if (in->id == X86_INS_CMPXCHG8B || in->id == X86_INS_CMPXCHG16B)
        m |= 1u << HMC_RAX | 1u << HMC_RDX;
    if (in->id == X86_INS_SYSCALL || in->id == X86_INS_SYSENTER)
        m |= 1u << HMC_RAX | 1u << HMC_RCX | 1u << HMC_R11;
    if (in->id == X86_INS_ENTER)
        m |= 1u << HMC_RBP | 1u << HMC_RSP;
    return m;
}

int hmc_insn_breaks_flow(csh cs, const cs_insn *in)
{
    switch (in->id) {
    case X86_INS_SYSCALL: case X86_INS_SYSENTER: case X86_INS_SYSEXIT: case X86_INS_SYSRET:
    case X86_INS_UD2: case X86_INS_UD0: case X86_INS_HLT: case X86_INS_XBEGIN:
    case X86_INS_XABORT: case X86_INS_XEND: case X86_INS_WRFSBASE: case X86_INS_WRGSBASE:
        return 1;
    }
    return cs_insn_group(cs, in, X86_GRP_JUMP) || cs_insn_group(cs, in, X86_GRP_CALL) ||
           cs_insn_group(cs, in, X86_GRP_RET) || cs_insn_group(cs, in, X86_GRP_INT) ||
           cs_insn_group(cs, in, X86_GRP_IRET) || cs_insn_group(cs, in, X86_GRP_BRANCH_RELATIVE) ||
           cs_insn_group(cs, in, X86_GRP_PRIVILEGE);
}

/* Why an instruction without a memory operand (and not a push, pop, call or
 * return) gives no address: its kind. */
static int nomem_why(csh cs, const cs_insn *in)
{
    static const uint8_t vec[] = {
        X86_GRP_3DNOW, X86_GRP_AES, X86_GRP_AVX, X86_GRP_AVX2, X86_GRP_AVX512, X86_GRP_F16C,
        X86_GRP_FMA, X86_GRP_FMA4, X86_GRP_MMX, X86_GRP_SHA, X86_GRP_SSE1, X86_GRP_SSE2,
        X86_GRP_SSE3, X86_GRP_SSE41, X86_GRP_SSE42, X86_GRP_SSE4A, X86_GRP_SSSE3,
        X86_GRP_PCLMUL, X86_GRP_XOP, X86_GRP_CDI, X86_GRP_ERI, X86_GRP_DQI, X86_GRP_BWI,
        X86_GRP_PFI, X86_GRP_VLX };
    switch (in->id) {
    case X86_INS_SYSCALL: case X86_INS_SYSENTER:
        return HMS_WHY_SYSCALL;
    case X86_INS_PAUSE: case X86_INS_ENDBR64: case X86_INS_ENDBR32: case X86_INS_FNOP:
        return HMS_WHY_HINT;
    }
    if (cs_insn_group(cs, in, X86_GRP_INT))
        return HMS_WHY_SYSCALL;
    if (cs_insn_group(cs, in, X86_GRP_JUMP) || cs_insn_group(cs, in, X86_GRP_BRANCH_RELATIVE))
        return HMS_WHY_BRANCH;
    if (cs_insn_group(cs, in, X86_GRP_FPU))
        return HMS_WHY_X87;
    for (size_t i = 0; i < sizeof(vec); i++)
        if (cs_insn_group(cs, in, vec[i]))
            return HMS_WHY_VEC;
    return HMS_WHY_INT;
}

/* push/pop/pushf/popf/leave/call/ret without an explicit memory operand: the stack
 * slot. After execution (post) rsp has moved by a known amount, which is undone. */
static void stack_access(const cs_insn *in, int post, int sz, struct hmc_desc *o)
{
    const cs_x86 *x = &in->detail->x86;
    unsigned id = in->id;
    int push = id == X86_INS_PUSH || id == X86_INS_PUSHF || id == X86_INS_PUSHFQ ||
               id == X86_INS_CALL;
    int pop = id == X86_INS_POP || id == X86_INS_POPF || id == X86_INS_POPFQ ||
              id == X86_INS_RET || id == X86_INS_LEAVE;     /* leave: rsp = rbp; pop */
    o->status = push || pop ? HMC_DEC_OK : HMC_DEC_NO_MEMOP;
    if (!push && !pop)
        return;
    if (post && id == X86_INS_POP && x->op_count && x->operands[0].type == X86_OP_REG &&
        gpr_of(x->operands[0].reg) == HMC_RSP)
        o->status = HMC_DEC_CLOBBERED;                      /* pop %rsp */
    sz = id == X86_INS_CALL || id == X86_INS_RET || id == X86_INS_LEAVE ? 8 : sz;
    o->base = id == X86_INS_LEAVE && !post ? HMC_RBP : HMC_RSP;
    o->disp = post ? (pop ? -sz : 0) : (pop ? 0 : -sz);
    o->size = (uint16_t)sz;
    o->is_store = push;
}

/* The memory operand to report: the only one, or of two (movs, cmps) the load,
 * and for cmps the one at rsi. NULL if none; sets *nm to their number. */
static const cs_x86_op *pick_mem(const cs_x86 *x, int *nm, int *mi)
{
    const cs_x86_op *m = NULL;
    *nm = 0;
    for (int i = 0; i < x->op_count; i++) {
        const cs_x86_op *op = &x->operands[i];
        if (op->type == X86_OP_INVALID)
            *nm = 99;
        if (op->type != X86_OP_MEM)
            continue;
        ++*nm;
        if (!m || ((op->access & CS_AC_READ) &&
                   (!(m->access & CS_AC_READ) || gpr_of(op->mem.base) == HMC_RSI))) {
            m = op;
            *mi = i;
        }
    }
    return m;
}

/* The HMS_CLS_* bits the instruction has whatever its operands' registers: atomic
 * (a lock prefix; xchg with memory and cmpxchg are locked without one), a pause, a
 * string instruction. */
static uint8_t insn_cls(const cs_insn *in, const struct hmc_raw *rw, int nm)
{
    const cs_x86 *x = &in->detail->x86;
    unsigned c = 0, id = in->id;
    if (x->prefix[0] == X86_PREFIX_LOCK ||
        (nm && (id == X86_INS_XCHG || id == X86_INS_CMPXCHG || id == X86_INS_CMPXCHG8B ||
                id == X86_INS_CMPXCHG16B)))
        c |= HMS_CLS_ATOMIC;
    if (id == X86_INS_PAUSE)
        c |= HMS_CLS_SPIN;
    if (HMC_STRING_OP(rw))
        c |= HMS_CLS_STRING;
    return (uint8_t)c;
}

/* What the decoded instruction accesses. post: the registers are those after it
 * executed (the sample case); else before (breakpoint, or a rep-string at rip). */
void hmc_describe(csh cs, const cs_insn *in, const struct hmc_raw *rw, int post,
                  struct hmc_desc *o)
{
    const cs_x86 *x = &in->detail->x86;
    int nm, mi = -1, sz = x->prefix[2] == 0x66 ? 2 : 8;
    unsigned id = in->id;

    o->status = HMC_DEC_REJECTED;
    o->why = HMS_WHY_ODD;
    if (rw->vsib) {
        o->why = HMS_WHY_VSIB;
        return;
    }
    switch (id) {
    /* Prefetches are hints: they retire without waiting for the line and may name
     * any address (even past an object's end), so a stall is never theirs. Cache
     * line flushes carry no data either. */
    case X86_INS_LEA: case X86_INS_NOP: case X86_INS_PREFETCH: case X86_INS_PREFETCHW:
    case X86_INS_PREFETCHNTA: case X86_INS_PREFETCHT0: case X86_INS_PREFETCHT1:
    case X86_INS_PREFETCHT2: case X86_INS_CLFLUSH: case X86_INS_CLFLUSHOPT: case X86_INS_CLWB:
        o->status = HMC_DEC_NO_MEMOP;
        o->why = HMS_WHY_HINT;
        return;
    case X86_INS_ENTER: case X86_INS_XLATB:
        return;
    }
    /* After a jump, call or return the next instruction executed is not at rip:
     * what ran before the sample is elsewhere. */
    if (post && (id == X86_INS_JMP || id == X86_INS_LJMP || cs_insn_group(cs, in, X86_GRP_CALL) ||
                 cs_insn_group(cs, in, X86_GRP_RET) || cs_insn_group(cs, in, X86_GRP_IRET))) {
        o->status = HMC_DEC_FAIL;
        o->why = HMS_WHY_AFTER_JUMP;
        return;
    }
    const cs_x86_op *m = pick_mem(x, &nm, &mi);
    o->cls = insn_cls(in, rw, nm);
    if (nm > 2)
        return;
    if (!m) {
        stack_access(in, post, sz, o);
        o->why = o->status == HMC_DEC_OK ? HMS_WHY_NONE
                 : o->status == HMC_DEC_CLOBBERED ? HMS_WHY_CLOBBERED : (uint8_t)nomem_why(cs, in);
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
        if (gpr_of(m->mem.base) < 0)
            return;
        o->base = (uint8_t)gpr_of(m->mem.base);
    }
    if (m->mem.index != X86_REG_INVALID && m->mem.index != X86_REG_RIZ &&
        m->mem.index != X86_REG_EIZ) {
        int g = gpr_of(m->mem.index), sc = m->mem.scale;
        if (g < 0 && rw->vex == 4 && rw->modrm >= 0 && (rw->modrm & 7) == 4 && rw->modrm >> 6 != 3)
            g = rw->evex_x << 3 | (rw->sib >> 3 & 7);   /* capstone's EVEX.V' bug */
        if (g < 0 || (sc != 1 && sc != 2 && sc != 4 && sc != 8))
            return;
        if (g != HMC_RSP) {                             /* SIB index 100: none */
            o->index = (uint8_t)g;
            o->scale = (uint8_t)sc;
        }
    }
    o->disp += m->mem.disp;
    o->addr32 = x->addr_size == 4;
    o->size = m->size;
    o->cls |= m->size >= 16 ? HMS_CLS_VECTOR : 0;
    int w = m->access & CS_AC_WRITE, r = m->access & CS_AC_READ;
    if (mi == 0 && !w && pfx_in(in->mnemonic, hmc_store_pfx))
        w = 1, r = 0;
    if (pfx_in(in->mnemonic, hmc_state_pfx)) {
        o->size = 0;
        w = !strstr(in->mnemonic, "rstor") && strcmp(in->mnemonic, "fldenv") != 0;
        r = !w;
    }
    o->is_store = w && !r;

    /* push computes its operand's address before moving rsp, pop after. */
    unsigned wm = post ? hmc_insn_writes(cs, in) : 0;
    if (id == X86_INS_PUSH || id == X86_INS_POP) {
        if (o->base == HMC_RSP && post == (id == X86_INS_PUSH))
            o->disp += sz;
        wm &= ~(1u << HMC_RSP);
    }
    unsigned am = (o->base != HMC_NOREG ? 1u << o->base : 0) |
                  (o->index != HMC_NOREG ? 1u << o->index : 0);
    /* A string instruction without rep accessed one element and moved its pointer by
     * exactly that much (down when DF is set): the address is recovered by undoing
     * the step (hmc_dec.c's hmc_dec_eval). With rep the count may have been 0, when
     * nothing was accessed: the breakpoint handles those. */
    if (post && HMC_STRING_OP(rw) && !rw->rep && o->base != HMC_NOREG && o->index == HMC_NOREG &&
        o->size && !o->seg && (wm & am) == (1u << o->base)) {
        o->str = 1;
        o->status = HMC_DEC_OK;
        o->why = HMS_WHY_STRING;
        return;
    }
    o->cls |= (wm & am) ? HMS_CLS_CHASE : 0;
    o->status = (wm & am) ? HMC_DEC_CLOBBERED : HMC_DEC_OK;
    o->why = (wm & am) ? HMS_WHY_CLOBBERED : HMS_WHY_NONE;
}

void hmc_desc_init(struct hmc_desc *o, uint64_t a)
{
    memset(o, 0, sizeof(*o));
    o->insn = a;
    o->base = o->index = HMC_NOREG;
    o->scale = 1;
    o->status = HMC_DEC_FAIL;
    o->why = HMS_WHY_AMBIGUOUS;
}

