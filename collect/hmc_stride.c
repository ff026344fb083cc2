/* hmc_stride.c — whether an accessing instruction walks memory by a constant step:
 * one of its address registers is an induction variable of the loop it is in (see
 * hmc_insn.h, hmc_insn_stride). Runs inside the sampler's signal handler when a
 * descriptor is built (then cached): no allocation, capstone's buffer only. */
#include "hmc_insn.h"
#include "hmc_access.h"

/* Capstone register -> general register number (any width), -1 if not one. */
static int gpr(unsigned r)
{
    switch (r) {
    case X86_REG_EAX: case X86_REG_RAX: return HMC_RAX;
    case X86_REG_ECX: case X86_REG_RCX: return HMC_RCX;
    case X86_REG_EDX: case X86_REG_RDX: return HMC_RDX;
    case X86_REG_EBX: case X86_REG_RBX: return HMC_RBX;
    case X86_REG_ESP: case X86_REG_RSP: return HMC_RSP;
    case X86_REG_EBP: case X86_REG_RBP: return HMC_RBP;
    case X86_REG_ESI: case X86_REG_RSI: return HMC_RSI;
    case X86_REG_EDI: case X86_REG_RDI: return HMC_RDI;
    }
    if (r >= X86_REG_R8 && r <= X86_REG_R15) return HMC_R8 + (int)(r - X86_REG_R8);
    if (r >= X86_REG_R8D && r <= X86_REG_R15D) return HMC_R8 + (int)(r - X86_REG_R8D);
    return -1;
}

/* The register of mask `regs` that `in` moves by a constant (add/sub of an
 * immediate, inc, dec, lea of itself plus a displacement): its bit; 0 if none. */
static unsigned steps(const cs_insn *in, unsigned regs)
{
    const cs_x86 *x = &in->detail->x86;
    if (!x->op_count || x->operands[0].type != X86_OP_REG)
        return 0;
    int r = gpr(x->operands[0].reg);
    if (r < 0 || !(regs & 1u << r))
        return 0;
    switch (in->id) {
    case X86_INS_ADD: case X86_INS_SUB:
        return x->op_count == 2 && x->operands[1].type == X86_OP_IMM ? 1u << r : 0;
    case X86_INS_INC: case X86_INS_DEC:
        return 1u << r;
    case X86_INS_LEA: {
        const x86_op_mem *m = &x->operands[1].mem;
        return x->op_count == 2 && gpr(m->base) == r && m->index == X86_REG_INVALID &&
               m->segment == X86_REG_INVALID && m->disp != 0 ? 1u << r : 0;
    }
    }
    return 0;
}

/* Scan [a, a + n) of bytes p (a is an instruction boundary) up to `stop` or the first
 * instruction that breaks the flow: the address registers stepped by a constant, or
 * ~0u when one of them is written otherwise or the bytes do not decode. *target: the
 * backward jump's target when the scan ended on a direct jump to at most `stop`. */
static unsigned scan(csh cs, cs_insn *in, const uint8_t *p, size_t n, uint64_t a,
                     uint64_t stop, unsigned regs, uint64_t *target)
{
    unsigned stepped = 0;
    *target = 0;
    for (int k = 0; k < HMC_STRIDE_INSNS && n && a != stop; k++) {
        if (!cs_disasm_iter(cs, &p, &n, &a, in))
            return ~0u;
        if (hmc_insn_breaks_flow(cs, in)) {
            const cs_x86 *x = &in->detail->x86;
            if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM &&
                (cs_insn_group(cs, in, X86_GRP_JUMP)))
                *target = (uint64_t)x->operands[0].imm;
            return stepped;
        }
        unsigned w = hmc_insn_writes(cs, in) & regs, s = steps(in, regs);
        if (w & ~s)
            return ~0u;
        stepped |= s;
    }
    return a == stop ? stepped : ~0u;
}

int hmc_insn_stride(csh cs, cs_insn *in, const uint8_t *code, size_t n, uint64_t code_addr,
                    uint64_t insn, unsigned len, unsigned regs)
{
    if (!regs || insn < code_addr || insn + len > code_addr + n)
        return 0;
    uint64_t end = code_addr + n, target;
    size_t off = (size_t)(insn + len - code_addr);
    /* after the access, to the loop's branch */
    unsigned s = scan(cs, in, code + off, n - off, insn + len, end, regs, &target);
    if (s == ~0u || target > insn || target < code_addr)
        return 0;
    /* the loop's top, from the branch's target to the access */
    unsigned top;
    uint64_t t2;
    top = scan(cs, in, code + (target - code_addr), (size_t)(insn - target), target, insn, regs,
               &t2);
    return top != ~0u && (s | top) != 0;
}
