/* test_decode.c — the software sampler's address decoder (collect/hmc_decode.c) on
 * hand-assembled x86-64 code: addressing modes, stores, RIP- and fs-relative
 * operands, stack operations, clobbered address registers, rep strings, broadcasts,
 * and AVX2/AVX-512 gathers and scatters, which must be rejected, never given an
 * address. The code bytes live in ordinary memory: the decoder reads them with
 * process_vm_readv and never executes them. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hmc_decode.h"
#include "hmt.h"

/* One instruction followed by a nop, in a fresh page-aligned buffer so that the
 * decoder's per-rip cache never sees two different byte strings at one address. */
struct code {
    uint8_t *buf;
    size_t len;    /* of the instruction under test */
};

static struct code put(const uint8_t *insn, size_t len)
{
    struct code c;
    c.buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c.buf == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    memcpy(c.buf, insn, len);
    c.buf[len] = 0x90;
    c.buf[len + 1] = 0xc3;
    c.len = len;
    return c;
}

static void drop(struct code c) { munmap(c.buf, 4096); }

static struct hmc_regs regs(void)
{
    struct hmc_regs r;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < 16; i++)
        r.gpr[i] = 0x100000 + (uint64_t)i * 0x1000;   /* distinct, recognisable */
    return r;
}

/* Decode the instruction both ways: before it ran (breakpoint) and after it
 * retired (timer sample at the next instruction, forward from the buffer start). */
static enum hmc_dec at(struct code c, const struct hmc_regs *r, struct hmc_access *a)
{
    struct hmc_decoder *d = hmc_decoder_new();
    if (!d)
        exit(2);
    enum hmc_dec st = hmc_decode_at(d, r, (uint64_t)(uintptr_t)c.buf, a);
    hmc_decoder_free(d);
    return st;
}

static enum hmc_dec prev(struct code c, struct hmc_regs r, uint64_t func_start,
                         struct hmc_access *a)
{
    struct hmc_decoder *d = hmc_decoder_new();
    if (!d)
        exit(2);
    r.rip = (uint64_t)(uintptr_t)c.buf + c.len;
    enum hmc_dec st = hmc_decode_prev(d, &r, func_start, a);
    hmc_decoder_free(d);
    return st;
}

static void test_base_index_scale_disp(void)
{
    /* mov rax, [rbx+rcx*8+0x10] */
    static const uint8_t b[] = {0x48, 0x8b, 0x44, 0xcb, 0x10};
    struct code c = put(b, sizeof b);
    struct hmc_regs r = regs();
    r.gpr[HMC_RBX] = 0x7f0000001000;
    r.gpr[HMC_RCX] = 3;
    struct hmc_access a;
    CHECK(at(c, &r, &a) == HMC_DEC_OK);
    CHECK(a.addr == 0x7f0000001000 + 24 + 0x10);
    CHECK(a.insn == (uint64_t)(uintptr_t)c.buf);
    CHECK(a.size == 8 && a.len == 5 && a.is_store == 0);
    /* after it retired: rax changed, rbx/rcx did not, so the address still holds */
    memset(&a, 0, sizeof a);
    CHECK(prev(c, r, (uint64_t)(uintptr_t)c.buf, &a) == HMC_DEC_OK);
    CHECK(a.addr == 0x7f0000001000 + 24 + 0x10);
    CHECK(a.insn == (uint64_t)(uintptr_t)c.buf && a.len == 5);
    drop(c);
}

static void test_clobbered_base(void)
{
    /* mov rbx, [rbx+8]: after it ran rbx no longer holds the base */
    static const uint8_t b[] = {0x48, 0x8b, 0x5b, 0x08};
    struct code c = put(b, sizeof b);
    struct hmc_regs r = regs();
    struct hmc_access a;
    memset(&a, 0, sizeof a);
    CHECK(prev(c, r, (uint64_t)(uintptr_t)c.buf, &a) == HMC_DEC_CLOBBERED);
    CHECK(a.insn == (uint64_t)(uintptr_t)c.buf);
    /* the breakpoint path sees the registers before it ran */
    r.gpr[HMC_RBX] = 0x5550;
    CHECK(at(c, &r, &a) == HMC_DEC_OK);
    CHECK(a.addr == 0x5558);
    drop(c);
}

static void test_store_and_rmw(void)
{
    static const uint8_t st[] = {0x89, 0x07};          /* mov [rdi], eax */
    static const uint8_t rmw[] = {0x01, 0x11};         /* add [rcx], edx */
    struct hmc_regs r = regs();
    struct hmc_access a;
    struct code c = put(st, sizeof st);
    CHECK(at(c, &r, &a) == HMC_DEC_OK);
    CHECK(a.addr == r.gpr[HMC_RDI] && a.is_store == 1 && a.size == 4);
    drop(c);
    c = put(rmw, sizeof rmw);
    CHECK(at(c, &r, &a) == HMC_DEC_OK);
    CHECK(a.addr == r.gpr[HMC_RCX] && a.is_store == 0 && a.size == 4);
    drop(c);
}

static void test_rip_fs_and_addr32(void)
{
    static const uint8_t rip[] = {0x8b, 0x05, 0x00, 0x01, 0x00, 0x00};  /* mov eax,[rip+0x100] */
    static const uint8_t fs[] = {0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0};  /* fs:0x28 */
    static const uint8_t a32[] = {0x67, 0x8b, 0x43, 0x04};  /* mov eax, [ebx+4] */
    struct hmc_regs r = regs();
    struct hmc_access a;
    struct code c = put(rip, sizeof rip);
    CHECK(at(c, &r, &a) == HMC_DEC_OK);
    CHECK(a.addr == (uint64_t)(uintptr_t)c.buf + 6 + 0x100);
    drop(c);
    c = put(fs, sizeof fs);
    r.fs_base = 0x7ff000000000;
    CHECK(at(c, &r, &a) == HMC_DEC_OK);
    CHECK(a.addr == 0x7ff000000028 && a.size == 8);
    drop(c);
    c = put(a32, sizeof a32);
    r.gpr[HMC_RBX] = 0x12345678fffffffeULL;   /* the upper half must be ignored */
    CHECK(at(c, &r, &a) == HMC_DEC_OK);
    CHECK(a.addr == 0x2);
    drop(c);
}

static void test_no_memop(void)
{
    static const uint8_t lea[] = {0x48, 0x8d, 0x43, 0x08};   /* lea rax, [rbx+8] */
    struct hmc_regs r = regs();
    struct hmc_access a;
    struct code c = put(lea, sizeof lea);
    CHECK(at(c, &r, &a) == HMC_DEC_NO_MEMOP);
    CHECK(prev(c, r, (uint64_t)(uintptr_t)c.buf, &a) == HMC_DEC_NO_MEMOP);
    drop(c);
}

static void test_push_after(void)
{
    /* push rax retired: rsp already points at the stored slot */
    static const uint8_t b[] = {0x50};
    struct hmc_regs r = regs();
    r.gpr[HMC_RSP] = 0x7ffd0000fff8;
    struct hmc_access a;
    struct code c = put(b, sizeof b);
    CHECK(prev(c, r, (uint64_t)(uintptr_t)c.buf, &a) == HMC_DEC_OK);
    CHECK(a.addr == 0x7ffd0000fff8 && a.is_store == 1 && a.size == 8);
    /* before it runs, the slot is 8 below rsp */
    r.gpr[HMC_RSP] = 0x7ffd00010000;
    CHECK(at(c, &r, &a) == HMC_DEC_OK);
    CHECK(a.addr == 0x7ffd0000fff8);
    drop(c);
}

static void test_rep_string_in_progress(void)
{
    /* rep movsb interrupted mid-way: rip still points at it, rcx != 0; the access is
     * the one at rsi/rdi now, not the instruction before it. */
    static const uint8_t b[] = {0x90, 0xf3, 0xa4};
    struct code c = put(b, sizeof b);
    struct hmc_regs r = regs();
    r.rip = (uint64_t)(uintptr_t)c.buf + 1;
    r.gpr[HMC_RCX] = 100;
    r.gpr[HMC_RSI] = 0x600000;
    r.gpr[HMC_RDI] = 0x700000;
    struct hmc_decoder *d = hmc_decoder_new();
    struct hmc_access a;
    CHECK(hmc_decode_prev(d, &r, (uint64_t)(uintptr_t)c.buf, &a) == HMC_DEC_OK);
    CHECK(a.insn == r.rip);
    CHECK(a.addr == 0x600000 || a.addr == 0x700000);
    hmc_decoder_free(d);
    drop(c);
}

static void test_gather_scatter_rejected(void)
{
    static const uint8_t g2[] = {0xc4, 0xe2, 0x6d, 0x90, 0x04, 0x88};        /* AVX2 gather */
    static const uint8_t g5[] = {0x62, 0xf2, 0x7d, 0x49, 0x90, 0x04, 0x88};  /* AVX-512 gather */
    static const uint8_t s5[] = {0x62, 0xf2, 0x7d, 0x49, 0xa0, 0x04, 0x88};  /* scatter */
    const uint8_t *all[] = {g2, g5, s5};
    const size_t lens[] = {sizeof g2, sizeof g5, sizeof s5};
    for (int i = 0; i < 3; i++) {
        struct code c = put(all[i], lens[i]);
        struct hmc_regs r = regs();
        struct hmc_access a;
        a.addr = 0;
        enum hmc_dec s1 = at(c, &r, &a);
        enum hmc_dec s2 = prev(c, r, (uint64_t)(uintptr_t)c.buf, &a);
        if (s1 != HMC_DEC_REJECTED || s2 != HMC_DEC_REJECTED)
            fprintf(stderr, "  case %d: at=%d prev=%d\n", i, s1, s2);
        CHECK(s1 == HMC_DEC_REJECTED);
        CHECK(s2 == HMC_DEC_REJECTED);
        /* the backward heuristic, which sees whatever bytes precede the buffer, may
         * pick a different instruction boundary (and then find no memory operand), but
         * it must never produce an address for a gather or scatter */
        a.addr = 0;
        enum hmc_dec s3 = prev(c, r, 0, &a);
        CHECK(s3 != HMC_DEC_OK && s3 != HMC_DEC_CLOBBERED);
        drop(c);
    }
}

static void test_evex_broadcast_and_disp8(void)
{
    /* vaddps zmm0, zmm1, dword bcst [rax]: one 4-byte element */
    static const uint8_t bc[] = {0x62, 0xf1, 0x74, 0x58, 0x58, 0x00};
    /* vmovdqu64 zmm3, [rsi+rdx+0x40]: EVEX disp8 scaled by 64 (encoded as 0x01) */
    static const uint8_t mv[] = {0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x5c, 0x16, 0x01};
    struct hmc_regs r = regs();
    struct hmc_access a;
    struct code c = put(bc, sizeof bc);
    CHECK(at(c, &r, &a) == HMC_DEC_OK);
    CHECK(a.addr == r.gpr[HMC_RAX] && a.size == 4);
    drop(c);
    c = put(mv, sizeof mv);
    CHECK(at(c, &r, &a) == HMC_DEC_OK);
    CHECK(a.addr == r.gpr[HMC_RSI] + r.gpr[HMC_RDX] + 0x40 && a.size == 64);
    drop(c);
}

static void test_unreadable_code(void)
{
    uint8_t *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    munmap(p + 4096, 4096);
    /* the instruction runs off the end of the readable page */
    p[4094] = 0x48;
    p[4095] = 0x8b;
    struct hmc_regs r = regs();
    struct hmc_access a;
    struct hmc_decoder *d = hmc_decoder_new();
    CHECK(hmc_decode_at(d, &r, (uint64_t)(uintptr_t)(p + 4094), &a) == HMC_DEC_FAIL);
    r.rip = (uint64_t)(uintptr_t)(p + 4096 + 16);
    CHECK(hmc_decode_prev(d, &r, 0, &a) == HMC_DEC_FAIL);
    hmc_decoder_free(d);
    munmap(p, 4096);
}

static void test_backward_without_func_start(void)
{
    /* 64 bytes of nops (what the backward scan reads) and then the load: every
     * candidate boundary agrees, so the heuristic must find the load, never another
     * address */
    uint8_t b[64 + 5];
    memset(b, 0x90, 64);
    memcpy(b + 64, (const uint8_t[]){0x48, 0x8b, 0x44, 0xcb, 0x10}, 5);
    struct code c = put(b, sizeof b);
    struct hmc_regs r = regs();
    struct hmc_access a;
    CHECK(prev(c, r, 0, &a) == HMC_DEC_OK);
    CHECK(a.insn == (uint64_t)(uintptr_t)c.buf + 64);
    CHECK(a.addr == r.gpr[HMC_RBX] + r.gpr[HMC_RCX] * 8 + 0x10);
    drop(c);
}

/* ---- why an instruction gives no address (enum hms_why) ------------------------ */

static void test_why_no_address(void)
{
    static const struct { uint8_t b[8]; size_t n; enum hmc_dec st; int why; } cases[] = {
        {{0x48, 0x83, 0xc2, 0x01}, 4, HMC_DEC_NO_MEMOP, HMS_WHY_INT},        /* add rdx,1 */
        {{0xf2, 0x0f, 0x59, 0xc1}, 4, HMC_DEC_NO_MEMOP, HMS_WHY_VEC},        /* mulsd */
        {{0xc5, 0xfb, 0x5e, 0xc1}, 4, HMC_DEC_NO_MEMOP, HMS_WHY_VEC},        /* vdivsd */
        {{0xde, 0xc9}, 2, HMC_DEC_NO_MEMOP, HMS_WHY_X87},                    /* fmulp */
        {{0x75, 0x00}, 2, HMC_DEC_NO_MEMOP, HMS_WHY_BRANCH},                 /* jne */
        {{0x0f, 0x05}, 2, HMC_DEC_NO_MEMOP, HMS_WHY_SYSCALL},                /* syscall */
        {{0x48, 0x8d, 0x43, 0x08}, 4, HMC_DEC_NO_MEMOP, HMS_WHY_HINT},       /* lea */
        {{0x0f, 0x18, 0x0f}, 3, HMC_DEC_NO_MEMOP, HMS_WHY_HINT},             /* prefetcht0 */
        {{0xeb, 0x00}, 2, HMC_DEC_FAIL, HMS_WHY_AFTER_JUMP},                 /* jmp */
        {{0xc4, 0xe2, 0x6d, 0x90, 0x04, 0x88}, 6, HMC_DEC_REJECTED, HMS_WHY_VSIB},
        {{0x48, 0x8b, 0x5b, 0x08}, 4, HMC_DEC_CLOBBERED, HMS_WHY_CLOBBERED}, /* mov rbx,[rbx+8] */
        {{0xd7}, 1, HMC_DEC_REJECTED, HMS_WHY_ODD},                          /* xlat */
        {{0x48, 0x8b, 0x44, 0xcb, 0x10}, 5, HMC_DEC_OK, HMS_WHY_NONE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct code c = put(cases[i].b, cases[i].n);
        struct hmc_access a;
        enum hmc_dec st = prev(c, regs(), (uint64_t)(uintptr_t)c.buf, &a);
        if (st != cases[i].st || a.why != cases[i].why)
            fprintf(stderr, "  case %zu: status %d why %d\n", i, st, a.why);
        CHECK(st == cases[i].st && a.why == cases[i].why);
        drop(c);
    }
    /* nothing readable before rip (the decoder's own mmap first, so that it cannot
     * take the hole) */
    struct hmc_decoder *d = hmc_decoder_new();
    uint8_t *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    munmap(p, 4096);
    struct hmc_regs r = regs();
    struct hmc_access a;
    r.rip = (uint64_t)(uintptr_t)(p + 4096);
    enum hmc_dec st = hmc_decode_prev(d, &r, 0, &a);
    if (st != HMC_DEC_FAIL || a.why != HMS_WHY_UNREADABLE)
        fprintf(stderr, "  unreadable: status %d why %d\n", st, a.why);
    CHECK(st == HMC_DEC_FAIL && a.why == HMS_WHY_UNREADABLE);
    hmc_decoder_free(d);
    munmap(p + 4096, 4096);
}

/* ---- string instructions before rip ------------------------------------------- */

static void test_string_step_undone(void)
{
    /* after movsq the pointers moved by 8: the element read was at rsi - 8 */
    static const uint8_t movsq[] = {0x48, 0xa5};
    static const uint8_t stosb[] = {0xaa};
    static const uint8_t lodsd[] = {0xad};
    static const uint8_t stos32[] = {0x67, 0xaa};          /* stosb [edi] */
    static const uint8_t rep[] = {0xf3, 0xa4};             /* rep movsb */
    struct hmc_regs r = regs();
    struct hmc_access a;
    struct code c = put(movsq, sizeof movsq);
    r.gpr[HMC_RSI] = 0x600008;
    r.gpr[HMC_RDI] = 0x700008;
    CHECK(prev(c, r, (uint64_t)(uintptr_t)c.buf, &a) == HMC_DEC_OK);
    CHECK(a.addr == 0x600000 && a.size == 8 && !a.is_store && a.why == HMS_WHY_STRING);
    drop(c);
    /* DF set: stosb went down, the byte written was at rdi + 1 */
    c = put(stosb, sizeof stosb);
    r.flags = 0x400;
    r.gpr[HMC_RDI] = 0x6fffff;
    CHECK(prev(c, r, (uint64_t)(uintptr_t)c.buf, &a) == HMC_DEC_OK);
    CHECK(a.addr == 0x700000 && a.size == 1 && a.is_store == 1);
    drop(c);
    c = put(lodsd, sizeof lodsd);
    r.flags = 0;
    r.gpr[HMC_RSI] = 0x600004;
    CHECK(prev(c, r, (uint64_t)(uintptr_t)c.buf, &a) == HMC_DEC_OK);
    CHECK(a.addr == 0x600000 && a.size == 4 && !a.is_store);
    drop(c);
    c = put(stos32, sizeof stos32);
    r.gpr[HMC_RDI] = 0xabcd00000000ull;                    /* edi 0 after the step: 2^32 - 1 */
    CHECK(prev(c, r, (uint64_t)(uintptr_t)c.buf, &a) == HMC_DEC_OK);
    CHECK(a.addr == 0xffffffffull);
    drop(c);
    /* with rep the count may have been 0 (nothing accessed): not computed */
    c = put(rep, sizeof rep);
    r.gpr[HMC_RCX] = 0;
    CHECK(prev(c, r, (uint64_t)(uintptr_t)c.buf, &a) == HMC_DEC_CLOBBERED &&
          a.why == HMS_WHY_CLOBBERED);
    drop(c);
}

/* ---- the look ahead from rip (hmc_decode_ahead) ------------------------------- */

/* Code at rip (the sample's interrupted instruction, not executed yet): the first
 * access of at most max instructions. */
static enum hmc_dec ahead(const uint8_t *b, size_t n, struct hmc_regs r, int max,
                          struct hmc_access *a, uint64_t *rip)
{
    struct code c = put(b, n);
    struct hmc_decoder *d = hmc_decoder_new();
    if (!d)
        exit(2);
    r.rip = *rip = (uint64_t)(uintptr_t)c.buf;
    enum hmc_dec st = hmc_decode_ahead(d, &r, max, a);
    hmc_decoder_free(d);
    drop(c);
    return st;
}

static void test_ahead_at_rip(void)
{
    /* the instruction at rip has not run: its registers are exact */
    static const uint8_t b[] = {0x48, 0x8b, 0x44, 0xcb, 0x10};   /* mov rax,[rbx+rcx*8+0x10] */
    struct hmc_regs r = regs();
    struct hmc_access a;
    uint64_t rip;
    CHECK(ahead(b, sizeof b, r, 4, &a, &rip) == HMC_DEC_OK);
    CHECK(a.ahead == 0 && a.insn == rip && a.why == HMS_LOOK_NOT_TRIED);
    CHECK(a.addr == r.gpr[HMC_RBX] + r.gpr[HMC_RCX] * 8 + 0x10 && !a.is_store && a.size == 8);
}

static void test_ahead_past_alu_and_fp(void)
{
    /* add rdx,1; mulsd xmm0,xmm1; vdivsd xmm0,xmm0,xmm1; mov [rdi+8],rax: rdx and
     * the vector registers change, rdi does not */
    static const uint8_t b[] = {0x48, 0x83, 0xc2, 0x01, 0xf2, 0x0f, 0x59, 0xc1,
                                0xc5, 0xfb, 0x5e, 0xc1, 0x48, 0x89, 0x47, 0x08};
    struct hmc_regs r = regs();
    struct hmc_access a;
    uint64_t rip;
    CHECK(ahead(b, sizeof b, r, 4, &a, &rip) == HMC_DEC_OK);
    CHECK(a.ahead == 3 && a.insn == rip + 12);
    CHECK(a.addr == r.gpr[HMC_RDI] + 8 && a.is_store == 1 && a.size == 8);
    /* three instructions are not enough to reach it */
    CHECK(ahead(b, sizeof b, r, 3, &a, &rip) == HMC_DEC_FAIL && a.why == HMS_LOOK_NONE);
}

static void test_ahead_rip_relative_and_stack(void)
{
    static const uint8_t riprel[] = {0x48, 0xff, 0xc0,                     /* inc rax */
                                     0x8b, 0x05, 0x00, 0x01, 0x00, 0x00};  /* mov eax,[rip+0x100] */
    static const uint8_t push[] = {0x53};                                 /* push rbx */
    static const uint8_t call[] = {0x48, 0x31, 0xc0, 0xe8, 0x00, 0x00, 0x00, 0x00};  /* xor; call */
    static const uint8_t ret[] = {0xc3};
    struct hmc_regs r = regs();
    struct hmc_access a;
    uint64_t rip;
    CHECK(ahead(riprel, sizeof riprel, r, 4, &a, &rip) == HMC_DEC_OK);
    CHECK(a.ahead == 1 && a.addr == rip + 9 + 0x100 && a.size == 4);
    CHECK(ahead(push, sizeof push, r, 4, &a, &rip) == HMC_DEC_OK);
    CHECK(a.addr == r.gpr[HMC_RSP] - 8 && a.is_store == 1);
    /* a call stores its return address before it branches: that is the access */
    CHECK(ahead(call, sizeof call, r, 4, &a, &rip) == HMC_DEC_OK);
    CHECK(a.ahead == 1 && a.addr == r.gpr[HMC_RSP] - 8 && a.is_store == 1);
    CHECK(ahead(ret, sizeof ret, r, 4, &a, &rip) == HMC_DEC_OK);
    CHECK(a.addr == r.gpr[HMC_RSP] && !a.is_store);
}

static void test_ahead_refuses_written_registers(void)
{
    /* each: an instruction that changes a register the load after it uses, which
     * must never give the address computed from the registers of the sample */
    static const struct { uint8_t b[12]; size_t n; const char *what; } cases[] = {
        {{0x48, 0x83, 0xc7, 0x08, 0x48, 0x8b, 0x07}, 7, "add rdi,8; mov rax,[rdi]"},
        {{0x48, 0x8d, 0x7f, 0x08, 0x48, 0x8b, 0x07}, 7, "lea rdi,[rdi+8]; mov rax,[rdi]"},
        {{0x40, 0xb7, 0x01, 0x48, 0x8b, 0x07}, 6, "mov dil,1 (partial); mov rax,[rdi]"},
        {{0x48, 0x99, 0x48, 0x8b, 0x02}, 5, "cqo (rdx implicit); mov rax,[rdx]"},
        {{0x48, 0xf7, 0xe1, 0x48, 0x8b, 0x02}, 6, "mul rcx (rdx:rax); mov rax,[rdx]"},
        {{0x48, 0x0f, 0xb1, 0xcb, 0x48, 0x8b, 0x00}, 7, "cmpxchg rbx,rcx (rax); mov rax,[rax]"},
        {{0x0f, 0xa2, 0x48, 0x8b, 0x03}, 5, "cpuid (rbx); mov rax,[rbx]"},
        {{0x48, 0x93, 0x48, 0x8b, 0x03}, 5, "xchg rax,rbx; mov rax,[rbx]"},
        {{0x48, 0x0f, 0xc8, 0x48, 0x8b, 0x44, 0xcb, 0x10}, 8, "bswap rax; ...; index rcx ok?"},
    };
    struct hmc_regs r = regs();
    struct hmc_access a;
    uint64_t rip;
    for (size_t i = 0; i + 1 < sizeof(cases) / sizeof(cases[0]); i++) {
        a.addr = 0;
        enum hmc_dec st = ahead(cases[i].b, cases[i].n, r, 4, &a, &rip);
        if (st != HMC_DEC_FAIL || a.why != HMS_LOOK_WRITTEN)
            fprintf(stderr, "  %s: status %d why %d\n", cases[i].what, st, a.why);
        CHECK(st == HMC_DEC_FAIL && a.why == HMS_LOOK_WRITTEN && a.addr == 0);
    }
    /* the last one writes rax, which the load's address does not use */
    CHECK(ahead(cases[8].b, cases[8].n, r, 4, &a, &rip) == HMC_DEC_OK);
    CHECK(a.ahead == 1 && a.addr == r.gpr[HMC_RBX] + r.gpr[HMC_RCX] * 8 + 0x10);
}

static void test_ahead_refuses_branches(void)
{
    static const struct { uint8_t b[12]; size_t n; const char *what; } cases[] = {
        {{0x75, 0x03, 0x48, 0x8b, 0x07}, 5, "jne; mov rax,[rdi]"},
        {{0xeb, 0x00, 0x48, 0x8b, 0x07}, 5, "jmp; mov rax,[rdi]"},
        {{0xff, 0xe0, 0x48, 0x8b, 0x07}, 5, "jmp rax; mov rax,[rdi]"},
        {{0x0f, 0x05, 0x48, 0x8b, 0x07}, 5, "syscall; mov rax,[rdi]"},
        {{0xe2, 0xfe, 0x48, 0x8b, 0x07}, 5, "loop; mov rax,[rdi]"},
        {{0x0f, 0x0b, 0x48, 0x8b, 0x07}, 5, "ud2; mov rax,[rdi]"},
        {{0xcc, 0x48, 0x8b, 0x07}, 4, "int3; mov rax,[rdi]"},
        {{0xf3, 0x48, 0x0f, 0xae, 0xd0, 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0}, 12,
         "wrfsbase rax; mov rax,fs:0x28"},
    };
    struct hmc_regs r = regs();
    struct hmc_access a;
    uint64_t rip;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        a.addr = 0;
        enum hmc_dec st = ahead(cases[i].b, cases[i].n, r, 4, &a, &rip);
        if (st != HMC_DEC_FAIL || a.why != HMS_LOOK_BRANCH)
            fprintf(stderr, "  %s: status %d why %d\n", cases[i].what, st, a.why);
        CHECK(st == HMC_DEC_FAIL && a.why == HMS_LOOK_BRANCH && a.addr == 0);
    }
}

static void test_ahead_refuses_unknown_accesses(void)
{
    static const uint8_t gather[] = {0x48, 0x31, 0xd2, 0xc4, 0xe2, 0x6d, 0x90, 0x04, 0x88};
    static const uint8_t rep[] = {0xf3, 0xa4};                            /* rep movsb */
    static const uint8_t stos[] = {0x48, 0xab};                           /* stosq */
    /* vpunpcklwd zmm20,zmm20,zmm17 (capstone 4 cannot decode it: its register
     * writes are unknown), then a load */
    static const uint8_t undec[] = {0x62, 0xa1, 0x5d, 0x40, 0x61, 0xe1, 0x48, 0x8b, 0x07};
    struct hmc_regs r = regs();
    struct hmc_access a;
    uint64_t rip;
    CHECK(ahead(gather, sizeof gather, r, 4, &a, &rip) == HMC_DEC_FAIL && a.why == HMS_LOOK_UNKNOWN);
    CHECK(ahead(rep, sizeof rep, r, 4, &a, &rip) == HMC_DEC_FAIL && a.why == HMS_LOOK_UNKNOWN);
    CHECK(ahead(stos, sizeof stos, r, 4, &a, &rip) == HMC_DEC_FAIL && a.why == HMS_LOOK_UNKNOWN);
    CHECK(ahead(undec, sizeof undec, r, 4, &a, &rip) == HMC_DEC_FAIL &&
          a.why == HMS_LOOK_UNDECODED);
    CHECK(ahead(undec, sizeof undec, r, 0, &a, &rip) == HMC_DEC_FAIL &&
          a.why == HMS_LOOK_NOT_TRIED);
}

static void test_ahead_unreadable_and_page_end(void)
{
    struct hmc_decoder *d = hmc_decoder_new();
    uint8_t *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    munmap(p + 4096, 4096);
    struct hmc_regs r = regs();
    struct hmc_access a;
    r.rip = (uint64_t)(uintptr_t)(p + 4096);
    CHECK(hmc_decode_ahead(d, &r, 4, &a) == HMC_DEC_FAIL && a.why == HMS_LOOK_UNREADABLE);
    /* add rdx,1 and then a load cut by the end of the readable page */
    memcpy(p + 4096 - 6, (const uint8_t[]){0x48, 0x83, 0xc2, 0x01, 0x48, 0x8b}, 6);
    r.rip = (uint64_t)(uintptr_t)(p + 4096 - 6);
    CHECK(hmc_decode_ahead(d, &r, 4, &a) == HMC_DEC_FAIL && a.why == HMS_LOOK_NONE);
    hmc_decoder_free(d);
    munmap(p, 4096);
}

static void test_ahead_cached_per_rip(void)
{
    /* the cached descriptor is register-independent: the same rip with other
     * registers gives the address from those registers */
    static const uint8_t b[] = {0x48, 0x83, 0xc2, 0x01, 0x48, 0x8b, 0x07};
    struct code c = put(b, sizeof b);
    struct hmc_decoder *d = hmc_decoder_new();
    struct hmc_regs r = regs();
    struct hmc_access a;
    r.rip = (uint64_t)(uintptr_t)c.buf;
    CHECK(hmc_decode_ahead(d, &r, 4, &a) == HMC_DEC_OK && a.addr == r.gpr[HMC_RDI]);
    r.gpr[HMC_RDI] = 0x4242000;
    CHECK(hmc_decode_ahead(d, &r, 4, &a) == HMC_DEC_OK && a.addr == 0x4242000 && a.ahead == 1);
    /* another limit is another answer, not the cached one */
    CHECK(hmc_decode_ahead(d, &r, 1, &a) == HMC_DEC_FAIL && a.why == HMS_LOOK_NONE);
    hmc_decoder_free(d);
    drop(c);
}

/* ---- the accessing instruction's class (HMS_CLS_*) ------------------------------ */

static void test_instruction_class(void)
{
    static const struct { uint8_t b[8]; size_t n; unsigned cls; } cases[] = {
        {{0xf0, 0x48, 0x0f, 0xc1, 0x02}, 5, HMS_CLS_ATOMIC},     /* lock xadd %rax,(%rdx) */
        {{0x48, 0x87, 0x02}, 3, HMS_CLS_ATOMIC},                 /* xchg %rax,(%rdx) */
        {{0xf0, 0x48, 0x0f, 0xb1, 0x0a}, 5, HMS_CLS_ATOMIC},     /* lock cmpxchg %rcx,(%rdx) */
        {{0xf0, 0x48, 0x83, 0x02, 0x01}, 5, HMS_CLS_ATOMIC},     /* lock addq $1,(%rdx) */
        {{0x48, 0x87, 0xd0}, 3, 0},                              /* xchg %rdx,%rax: no memory */
        {{0xf3, 0x90}, 2, HMS_CLS_SPIN},                         /* pause */
        {{0xf3, 0x0f, 0x6f, 0x07}, 4, HMS_CLS_VECTOR},           /* movdqu (%rdi),%xmm0 */
        {{0xc5, 0xfe, 0x6f, 0x07}, 4, HMS_CLS_VECTOR},           /* vmovdqu (%rdi),%ymm0 */
        {{0xf2, 0x0f, 0x10, 0x07}, 4, 0},                        /* movsd (%rdi),%xmm0: 8 B */
        {{0x48, 0x8b, 0x07}, 3, 0},                              /* mov (%rdi),%rax */
        {{0x48, 0x8b, 0x5b, 0x08}, 4, HMS_CLS_CHASE},            /* mov 8(%rbx),%rbx */
        {{0x48, 0xa5}, 2, HMS_CLS_STRING},                       /* movsq */
        {{0x48, 0xad}, 2, HMS_CLS_STRING},                       /* lodsq */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct code c = put(cases[i].b, cases[i].n);
        struct hmc_access a;
        prev(c, regs(), (uint64_t)(uintptr_t)c.buf, &a);
        if (a.cls != cases[i].cls)
            fprintf(stderr, "  case %zu: class %#x\n", i, a.cls);
        CHECK(a.cls == cases[i].cls);
        drop(c);
    }
    /* the look ahead: a pause at rip (the interrupted instruction) marks the access
     * after it as spinning; the access alone is not */
    static const uint8_t spin[] = {0xf3, 0x90, 0x48, 0x8b, 0x07};   /* pause; mov (%rdi),%rax */
    struct hmc_regs r = regs();
    struct hmc_access a;
    uint64_t rip;
    CHECK(ahead(spin, sizeof spin, r, 4, &a, &rip) == HMC_DEC_OK && a.ahead == 1);
    CHECK(a.cls == HMS_CLS_SPIN && a.addr == r.gpr[HMC_RDI]);
    CHECK(ahead(spin + 2, sizeof spin - 2, r, 4, &a, &rip) == HMC_DEC_OK && a.cls == 0);
    static const uint8_t lock[] = {0x48, 0x83, 0xc1, 0x01, 0xf0, 0x48, 0x0f, 0xc1, 0x02};
    CHECK(ahead(lock, sizeof lock, r, 4, &a, &rip) == HMC_DEC_OK && a.cls == HMS_CLS_ATOMIC);
}

int main(void)
{
    RUN(test_base_index_scale_disp);
    RUN(test_clobbered_base);
    RUN(test_store_and_rmw);
    RUN(test_rip_fs_and_addr32);
    RUN(test_no_memop);
    RUN(test_push_after);
    RUN(test_rep_string_in_progress);
    RUN(test_gather_scatter_rejected);
    RUN(test_evex_broadcast_and_disp8);
    RUN(test_unreadable_code);
    RUN(test_backward_without_func_start);
    RUN(test_why_no_address);
    RUN(test_string_step_undone);
    RUN(test_ahead_at_rip);
    RUN(test_ahead_past_alu_and_fp);
    RUN(test_ahead_rip_relative_and_stack);
    RUN(test_ahead_refuses_written_registers);
    RUN(test_ahead_refuses_branches);
    RUN(test_ahead_refuses_unknown_accesses);
    RUN(test_ahead_unreadable_and_page_end);
    RUN(test_ahead_cached_per_rip);
    RUN(test_instruction_class);
    HMT_END();
}
