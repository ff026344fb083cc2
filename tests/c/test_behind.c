/* test_behind.c — the producer-load rule (collect/hmc_behind.c) on hand-assembled
 * x86-64 sequences: a sample after an instruction without a memory operand gets the
 * address of the load whose result it consumed, from the sample's registers, and
 * every case where that address may be wrong is refused with its reason. The code
 * lives in ordinary memory after 64 bytes of nops (what the backward vote reads): the
 * decoder reads it with process_vm_readv and never executes it. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hmc_behind.h"
#include "hmc_decode.h"
#include "hmt.h"

#define PAD 64

struct seq {
    uint8_t *buf;       /* the page */
    uint64_t code;      /* the first instruction of the sequence */
    uint64_t rip;       /* after the sequence's last instruction (the sampled one) */
};

/* The sequence after PAD nops, followed by `after` (or a nop and a ret). */
static struct seq put(const uint8_t *b, size_t n, const uint8_t *after, size_t na)
{
    struct seq s;
    s.buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s.buf == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    memset(s.buf, 0x90, PAD);
    memcpy(s.buf + PAD, b, n);
    if (after)
        memcpy(s.buf + PAD + n, after, na);
    else
        memcpy(s.buf + PAD + n, (const uint8_t[]){0x90, 0xc3}, 2);
    s.code = (uint64_t)(uintptr_t)s.buf + PAD;
    s.rip = s.code + n;
    return s;
}

static struct hmc_regs regs(void)
{
    struct hmc_regs r;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < 16; i++)
        r.gpr[i] = 0x100000 + (uint64_t)i * 0x1000;   /* distinct, recognisable */
    return r;
}

/* The rule on the sample at s.rip, with a fresh decoder. */
static enum hmc_dec behind(struct seq s, struct hmc_regs r, struct hmc_access *a)
{
    struct hmc_decoder *d = hmc_decoder_new();
    if (!d)
        exit(2);
    r.rip = s.rip;
    enum hmc_dec st = hmc_decode_behind(d, &r, a);
    hmc_decoder_free(d);
    return st;
}

/* The rule refuses the sequence for reason why. */
static int refused(const uint8_t *b, size_t n, const uint8_t *after, size_t na, int why)
{
    struct seq s = put(b, n, after, na);
    struct hmc_access a;
    enum hmc_dec st = behind(s, regs(), &a);
    munmap(s.buf, 4096);
    if (st != HMC_DEC_FAIL || a.why != why)
        fprintf(stderr, "  expected refusal %d: status %d why %d\n", why, st, a.why);
    return st == HMC_DEC_FAIL && a.why == why;
}

/* ---- recovered --------------------------------------------------------------- */

static void test_integer_consumer(void)
{
    /* mov (%rbx,%rcx,8),%rax; add %rax,%rdx: the sample after the add */
    static const uint8_t b[] = {0x48, 0x8b, 0x04, 0xcb, 0x48, 0x01, 0xc2};
    struct seq s = put(b, sizeof b, NULL, 0);
    struct hmc_regs r = regs();
    r.gpr[HMC_RBX] = 0x7f0000010000;
    r.gpr[HMC_RCX] = 5;
    struct hmc_access a;
    /* the sampled instruction itself gives none */
    struct hmc_decoder *d = hmc_decoder_new();
    r.rip = s.rip;
    CHECK(hmc_decode_prev(d, &r, 0, &a) == HMC_DEC_NO_MEMOP && a.why == HMS_WHY_INT);
    hmc_decoder_free(d);
    CHECK(behind(s, r, &a) == HMC_DEC_OK);
    CHECK(a.why == HMS_BEHIND_OK && a.ahead == 1);
    CHECK(a.insn == s.code && a.addr == 0x7f0000010000 + 5 * 8);
    CHECK(!a.is_store && a.size == 8 && a.len == 4);
    munmap(s.buf, 4096);
}

static void test_division_two_back(void)
{
    /* mov (%rbx,%rcx,8),%rsi; mov $1000,%eax; xor %edx,%edx; div %rsi: rax and rdx
     * come from instructions without memory, rsi from the load three back */
    static const uint8_t b[] = {0x48, 0x8b, 0x34, 0xcb, 0xb8, 0xe8, 0x03, 0x00, 0x00,
                                0x31, 0xd2, 0x48, 0xf7, 0xf6};
    struct seq s = put(b, sizeof b, NULL, 0);
    struct hmc_regs r = regs();
    struct hmc_access a;
    CHECK(behind(s, r, &a) == HMC_DEC_OK && a.ahead == 3 && a.insn == s.code);
    CHECK(a.addr == r.gpr[HMC_RBX] + r.gpr[HMC_RCX] * 8);
    munmap(s.buf, 4096);
}

static void test_vector_x87_and_lea_consumers(void)
{
    struct hmc_regs r = regs();
    struct hmc_access a;
    /* movsd (%rdi,%rcx,8),%xmm1; mulsd %xmm1,%xmm0 */
    static const uint8_t sse[] = {0xf2, 0x0f, 0x10, 0x0c, 0xcf, 0xf2, 0x0f, 0x59, 0xc1};
    struct seq s = put(sse, sizeof sse, NULL, 0);
    CHECK(behind(s, r, &a) == HMC_DEC_OK && a.insn == s.code);
    CHECK(a.addr == r.gpr[HMC_RDI] + r.gpr[HMC_RCX] * 8 && a.size == 8);
    munmap(s.buf, 4096);
    /* vmovupd (%rax),%ymm1; vaddpd %ymm1,%ymm2,%ymm3 (a vector load: its class says so) */
    static const uint8_t avx[] = {0xc5, 0xfd, 0x10, 0x08, 0xc5, 0xed, 0x58, 0xd9};
    s = put(avx, sizeof avx, NULL, 0);
    CHECK(behind(s, r, &a) == HMC_DEC_OK && a.addr == r.gpr[HMC_RAX]);
    CHECK(a.cls == HMS_CLS_VECTOR && a.size == 32);
    munmap(s.buf, 4096);
    /* fldl (%rax); fmul %st(1),%st */
    static const uint8_t x87[] = {0xdd, 0x00, 0xd8, 0xc9};
    s = put(x87, sizeof x87, NULL, 0);
    CHECK(behind(s, r, &a) == HMC_DEC_OK && a.addr == r.gpr[HMC_RAX] && a.insn == s.code);
    munmap(s.buf, 4096);
    /* mov (%rbx),%rax; lea 8(%rax),%rdx: the lea waits for the pointer */
    static const uint8_t lea[] = {0x48, 0x8b, 0x03, 0x48, 0x8d, 0x50, 0x08};
    s = put(lea, sizeof lea, NULL, 0);
    CHECK(behind(s, r, &a) == HMC_DEC_OK && a.addr == r.gpr[HMC_RBX]);
    munmap(s.buf, 4096);
    /* movsd 0x100(%rip),%xmm1; addsd %xmm1,%xmm0: the address is the load's */
    static const uint8_t rel[] = {0xf2, 0x0f, 0x10, 0x0d, 0x00, 0x01, 0x00, 0x00,
                                  0xf2, 0x0f, 0x58, 0xc1};
    s = put(rel, sizeof rel, NULL, 0);
    CHECK(behind(s, r, &a) == HMC_DEC_OK && a.addr == s.code + 8 + 0x100);
    munmap(s.buf, 4096);
}

static void test_unrelated_writes_and_loop_top(void)
{
    struct hmc_regs r = regs();
    struct hmc_access a;
    /* mov (%rbx,%rcx,8),%rax; inc %rsi; add %rax,%rdx: rsi is no address register */
    static const uint8_t b[] = {0x48, 0x8b, 0x04, 0xcb, 0x48, 0xff, 0xc6, 0x48, 0x01, 0xc2};
    struct seq s = put(b, sizeof b, NULL, 0);
    CHECK(behind(s, r, &a) == HMC_DEC_OK && a.ahead == 2 && a.insn == s.code);
    munmap(s.buf, 4096);
    /* the loop's closing branch after rip lands on the load itself: it ran */
    static const uint8_t top[] = {0x48, 0x8b, 0x04, 0xcb, 0x48, 0x01, 0xc2};
    static const uint8_t jne_load[] = {0x75, 0xf7};       /* jne -9: back to the load */
    s = put(top, sizeof top, jne_load, sizeof jne_load);
    CHECK(behind(s, r, &a) == HMC_DEC_OK && a.insn == s.code);
    munmap(s.buf, 4096);
}

static void test_cached_per_rip(void)
{
    /* the second sample at the same rip: the same load, the address from its registers */
    static const uint8_t b[] = {0x48, 0x8b, 0x04, 0xcb, 0x48, 0x01, 0xc2};
    struct seq s = put(b, sizeof b, NULL, 0);
    struct hmc_decoder *d = hmc_decoder_new();
    struct hmc_regs r = regs();
    struct hmc_access a;
    r.rip = s.rip;
    CHECK(hmc_decode_behind(d, &r, &a) == HMC_DEC_OK);
    uint64_t builds = hmc_decoder_builds(d);
    r.gpr[HMC_RCX] = 9;
    CHECK(hmc_decode_behind(d, &r, &a) == HMC_DEC_OK);
    CHECK(a.addr == r.gpr[HMC_RBX] + 9 * 8 && hmc_decoder_builds(d) == builds);
    hmc_decoder_free(d);
    munmap(s.buf, 4096);
}

/* ---- refused ------------------------------------------------------------------ */

static void test_refuses_written_address_registers(void)
{
    /* add $1,%rcx between the load and the add: rcx is the load's index */
    static const uint8_t idx[] = {0x48, 0x8b, 0x04, 0xcb, 0x48, 0x83, 0xc1, 0x01,
                                  0x48, 0x01, 0xc2};
    CHECK(refused(idx, sizeof idx, NULL, 0, HMS_BEHIND_WRITTEN));
    /* mov %rdx,%rbx: the base */
    static const uint8_t base[] = {0x48, 0x8b, 0x04, 0xcb, 0x48, 0x89, 0xd3, 0x48, 0x01, 0xc2};
    CHECK(refused(base, sizeof base, NULL, 0, HMS_BEHIND_WRITTEN));
    /* the sampled instruction itself writes it: add %rax,%rcx */
    static const uint8_t self[] = {0x48, 0x8b, 0x04, 0xcb, 0x48, 0x01, 0xc1};
    CHECK(refused(self, sizeof self, NULL, 0, HMS_BEHIND_WRITTEN));
    /* a partial write counts: mov %dl,%bl */
    static const uint8_t part[] = {0x48, 0x8b, 0x04, 0xcb, 0x88, 0xd3, 0x48, 0x01, 0xc2};
    CHECK(refused(part, sizeof part, NULL, 0, HMS_BEHIND_WRITTEN));
}

static void test_refuses_a_load_that_overwrote_its_base(void)
{
    /* mov 8(%rbx),%rbx; add %rbx,%rdx: the pointer chase */
    static const uint8_t b[] = {0x48, 0x8b, 0x5b, 0x08, 0x48, 0x01, 0xda};
    CHECK(refused(b, sizeof b, NULL, 0, HMS_BEHIND_CHASE));
    /* pop %rax; add %rax,%rdx: the pop moved rsp */
    static const uint8_t pop[] = {0x58, 0x48, 0x01, 0xc2};
    CHECK(refused(pop, sizeof pop, NULL, 0, HMS_BEHIND_CHASE));
}

static void test_refuses_branches_in_between(void)
{
    /* jne +0 between the load and the add */
    static const uint8_t jcc[] = {0x48, 0x8b, 0x04, 0xcb, 0x75, 0x00, 0x48, 0x01, 0xc2};
    CHECK(refused(jcc, sizeof jcc, NULL, 0, HMS_BEHIND_BRANCH));
    /* call +0 */
    static const uint8_t call[] = {0x48, 0x8b, 0x04, 0xcb, 0xe8, 0x00, 0x00, 0x00, 0x00,
                                   0x48, 0x01, 0xc2};
    CHECK(refused(call, sizeof call, NULL, 0, HMS_BEHIND_BRANCH));
    /* jmp *%rdx, then the add: the add is a branch target */
    static const uint8_t jmp[] = {0x48, 0x8b, 0x04, 0xcb, 0xff, 0xe2, 0x48, 0x01, 0xc2};
    CHECK(refused(jmp, sizeof jmp, NULL, 0, HMS_BEHIND_BRANCH));
    /* syscall */
    static const uint8_t sys[] = {0x48, 0x8b, 0x04, 0xcb, 0x0f, 0x05, 0x48, 0x01, 0xc2};
    CHECK(refused(sys, sizeof sys, NULL, 0, HMS_BEHIND_BRANCH));
}

static void test_refuses_branch_targets_in_between(void)
{
    /* a branch after rip lands on the add (the loop's top is past the load) */
    static const uint8_t b[] = {0x48, 0x8b, 0x04, 0xcb, 0x48, 0x01, 0xc2};
    static const uint8_t jne_add[] = {0x48, 0xff, 0xc1, 0x75, 0xf8};   /* inc %rcx; jne -8 */
    CHECK(refused(b, sizeof b, jne_add, sizeof jne_add, HMS_BEHIND_TARGET));
    /* a branch before the load (not in between) whose target is the add:
     * je +4 (over the load); mov (%rbx,%rcx,8),%rax; add %rax,%rdx */
    static const uint8_t over[] = {0x74, 0x04, 0x48, 0x8b, 0x04, 0xcb, 0x48, 0x01, 0xc2};
    CHECK(refused(over, sizeof over, NULL, 0, HMS_BEHIND_TARGET));
}

static void test_refuses_ambiguous_bytes(void)
{
    /* between the load and the add, bytes the backward vote cannot settle (the add
     * itself is found; the instruction before it must not be guessed) */
    static const uint8_t b[] = {0x48, 0x8b, 0x04, 0xcb, 0x89, 0xcc, 0x6f, 0x14, 0x93,
                                0x48, 0x01, 0xc2};
    CHECK(refused(b, sizeof b, NULL, 0, HMS_BEHIND_AMBIGUOUS));
}

static void test_refuses_two_loads_and_none(void)
{
    /* mov (%rbx),%rax; mov (%rdi),%rsi; imul %rsi,%rax: which load it waited for? */
    static const uint8_t two[] = {0x48, 0x8b, 0x03, 0x48, 0x8b, 0x37, 0x48, 0x0f, 0xaf, 0xc6};
    CHECK(refused(two, sizeof two, NULL, 0, HMS_BEHIND_TWO_LOADS));
    /* mov %rdx,%rax; add %rax,%rdx: computed in registers only */
    static const uint8_t none[] = {0x48, 0x89, 0xd0, 0x48, 0x01, 0xc2};
    CHECK(refused(none, sizeof none, NULL, 0, HMS_BEHIND_NO_LOAD));
    /* mov (%rbx),%rax; mov %rax,%rsi; add %rsi,%rdx: only the direct producer counts */
    static const uint8_t copy[] = {0x48, 0x8b, 0x03, 0x48, 0x89, 0xc6, 0x48, 0x01, 0xf2};
    CHECK(refused(copy, sizeof copy, NULL, 0, HMS_BEHIND_NO_LOAD));
    /* nop: reads nothing */
    static const uint8_t nop[] = {0x48, 0x8b, 0x03, 0x90};
    CHECK(refused(nop, sizeof nop, NULL, 0, HMS_BEHIND_NO_LOAD));
    /* the load is 9 instructions back: beyond the window */
    static const uint8_t far[] = {0x48, 0x8b, 0x03, 0x48, 0xff, 0xc6, 0x48, 0xff, 0xc6, 0x48,
                                  0xff, 0xc6, 0x48, 0xff, 0xc6, 0x48, 0xff, 0xc6, 0x48, 0xff,
                                  0xc6, 0x48, 0xff, 0xc6, 0x48, 0xff, 0xc6, 0x48, 0x01, 0xc2};
    CHECK(refused(far, sizeof far, NULL, 0, HMS_BEHIND_NO_LOAD));
}

static void test_refuses_unknown_loads_and_undecoded(void)
{
    /* vpgatherdd %ymm2,(%rax,%ymm1,4),%ymm0; vpaddd %ymm0,%ymm3,%ymm3 */
    static const uint8_t g[] = {0xc4, 0xe2, 0x6d, 0x90, 0x04, 0x88, 0xc5, 0xe5, 0xfe, 0xd8};
    CHECK(refused(g, sizeof g, NULL, 0, HMS_BEHIND_UNKNOWN));
    /* vpgatherdd (%rax,%zmm1,4),%zmm0{%k1}; vpaddd %zmm0,%zmm3,%zmm3 */
    static const uint8_t z[] = {0x62, 0xf2, 0x7d, 0x49, 0x90, 0x04, 0x88,
                                0x62, 0xf1, 0x65, 0x48, 0xfe, 0xd8};
    CHECK(refused(z, sizeof z, NULL, 0, HMS_BEHIND_UNKNOWN));
    /* an AVX-512 instruction capstone 4 cannot decode in between: its writes are unknown */
    static const uint8_t u[] = {0x48, 0x8b, 0x04, 0xcb, 0x62, 0xa1, 0x5d, 0x40, 0x61, 0xe1,
                                0x48, 0x01, 0xc2};
    CHECK(refused(u, sizeof u, NULL, 0, HMS_BEHIND_UNDECODED));
    /* not for an instruction with a memory operand of its own: add (%rax),%rdx */
    static const uint8_t mem[] = {0x48, 0x8b, 0x03, 0x48, 0x03, 0x10};
    CHECK(refused(mem, sizeof mem, NULL, 0, HMS_BEHIND_NOT_TRIED));
}

int main(void)
{
    RUN(test_integer_consumer);
    RUN(test_division_two_back);
    RUN(test_vector_x87_and_lea_consumers);
    RUN(test_unrelated_writes_and_loop_top);
    RUN(test_cached_per_rip);
    RUN(test_refuses_written_address_registers);
    RUN(test_refuses_a_load_that_overwrote_its_base);
    RUN(test_refuses_branches_in_between);
    RUN(test_refuses_branch_targets_in_between);
    RUN(test_refuses_ambiguous_bytes);
    RUN(test_refuses_two_loads_and_none);
    RUN(test_refuses_unknown_loads_and_undecoded);
    HMT_END();
}
