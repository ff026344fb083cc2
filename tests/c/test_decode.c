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
    HMT_END();
}
