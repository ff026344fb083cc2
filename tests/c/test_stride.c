/* test_stride.c — the software sampler's strided-access class (HMS_CLS_STRIDE,
 * collect/hmc_stride.c) on hand-assembled loops: an index or a pointer stepped by a
 * constant after the access or at the loop's top is strided; an index computed from
 * data (RandomAccess's table update), a pointer chase, an access outside a loop and a
 * register also written another way are not. The code is never executed: the decoder
 * reads it with process_vm_readv. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "hmc_decode.h"
#include "hmt.h"

/* The loop body `body` (n bytes) at the start of a fresh page, then `jne` back to its
 * start (or, with loop 0, a ret); the sample's rip is after the access at offset
 * `at` of length `len`. Returns the access's class bits. */
static unsigned cls_of(const uint8_t *body, size_t n, size_t at, size_t len, int loop,
                       enum hmc_dec *st)
{
    uint8_t *buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        exit(2);
    /* nops first: the decoder looks back up to 256 bytes for the loop's top */
    memset(buf, 0x90, 4096);
    uint8_t *code = buf + 512;
    memcpy(code, body, n);
    if (loop) {
        code[n] = 0x75;                                 /* jne rel8 to code */
        code[n + 1] = (uint8_t)(-(int)(n + 2));
    } else {
        code[n] = 0xc3;
    }
    struct hmc_decoder *d = hmc_decoder_new();
    if (!d)
        exit(2);
    struct hmc_regs r;
    memset(&r, 0, sizeof(r));
    for (int i = 0; i < 16; i++)
        r.gpr[i] = 0x100000 + (uint64_t)i * 0x1000;
    r.rip = (uint64_t)(uintptr_t)(code + at + len);
    struct hmc_access a;
    memset(&a, 0, sizeof(a));
    *st = hmc_decode_prev(d, &r, (uint64_t)(uintptr_t)code, &a);
    hmc_decoder_free(d);
    munmap(buf, 4096);
    return a.cls;
}

static void test_index_stepped_after_the_access(void)
{
    static const uint8_t b[] = {
        0xf2, 0x0f, 0x10, 0x04, 0xc6,   /* movsd xmm0, [rsi+rax*8] */
        0xf2, 0x0f, 0x58, 0xc8,         /* addsd xmm1, xmm0 */
        0x48, 0x83, 0xc0, 0x01,         /* add rax, 1 */
        0x48, 0x39, 0xc2,               /* cmp rdx, rax */
    };
    enum hmc_dec st;
    unsigned c = cls_of(b, sizeof b, 0, 5, 1, &st);
    CHECK(st == HMC_DEC_OK);
    CHECK(c & HMS_CLS_STRIDE);
    CHECK(!(c & HMS_CLS_VECTOR));
    /* the same access outside a loop (a ret after it): no stride */
    c = cls_of(b, sizeof b, 0, 5, 0, &st);
    CHECK(st == HMC_DEC_OK && !(c & HMS_CLS_STRIDE));
}

static void test_pointer_stepped_at_the_loop_top(void)
{
    static const uint8_t b[] = {
        0x48, 0x83, 0xc0, 0x08,         /* add rax, 8 */
        0x48, 0x8b, 0x08,               /* mov rcx, [rax] */
        0x48, 0x01, 0xca,               /* add rdx, rcx */
        0x48, 0x39, 0xc6,               /* cmp rsi, rax */
    };
    enum hmc_dec st;
    unsigned c = cls_of(b, sizeof b, 4, 3, 1, &st);
    CHECK(st == HMC_DEC_OK && (c & HMS_CLS_STRIDE));
    static const uint8_t lea[] = {
        0x48, 0x8b, 0x08,               /* mov rcx, [rax] */
        0x48, 0x8d, 0x40, 0x40,         /* lea rax, [rax+0x40] */
        0x48, 0x39, 0xc6,               /* cmp rsi, rax */
    };
    c = cls_of(lea, sizeof lea, 0, 3, 1, &st);
    CHECK(st == HMC_DEC_OK && (c & HMS_CLS_STRIDE));
}

static void test_unrolled_body_longer_than_a_cache_line(void)
{
    /* HPCC STREAM's Scale as Debian's gcc unrolls it: 12 loads of 7 bytes before the
     * sampled store, the index stepped by 0x40 after it */
    uint8_t b[12 * 7 + 7 + 4 + 3];
    static const uint8_t load[] = {0xf2, 0x43, 0x0f, 0x10, 0x5c, 0x18, 0x08};
    static const uint8_t tail[] = {
        0xf2, 0x46, 0x0f, 0x11, 0x4c, 0x1f, 0x20,   /* movsd [rdi+r11+0x20], xmm9 */
        0x49, 0x83, 0xc3, 0x40,                     /* add r11, 0x40 */
        0x4d, 0x39, 0xd9,                           /* cmp r9, r11 */
    };
    for (int i = 0; i < 12; i++)
        memcpy(b + 7 * i, load, sizeof load);
    memcpy(b + 84, tail, sizeof tail);
    enum hmc_dec st;
    unsigned c = cls_of(b, sizeof b, 84, 7, 1, &st);
    CHECK(st == HMC_DEC_OK && (c & HMS_CLS_STRIDE));
}

static void test_computed_index_is_not_strided(void)
{
    /* RandomAccess: Table[ran & mask] ^= ran, ran doubled each step */
    static const uint8_t b[] = {
        0x48, 0x89, 0xf9,               /* mov rcx, rdi */
        0x4c, 0x21, 0xc1,               /* and rcx, r8 */
        0x48, 0x31, 0x3c, 0xce,         /* xor [rsi+rcx*8], rdi */
        0x48, 0x01, 0xff,               /* add rdi, rdi */
        0x48, 0x83, 0xea, 0x01,         /* sub rdx, 1 */
    };
    enum hmc_dec st;
    unsigned c = cls_of(b, sizeof b, 6, 4, 1, &st);
    CHECK(st == HMC_DEC_OK && !(c & HMS_CLS_STRIDE));
    /* a stepped index also written another way in the loop: not a constant step */
    static const uint8_t mixed[] = {
        0x48, 0x8b, 0x0c, 0xc6,         /* mov rcx, [rsi+rax*8] */
        0x48, 0x83, 0xc0, 0x01,         /* add rax, 1 */
        0x48, 0x21, 0xd0,               /* and rax, rdx */
    };
    c = cls_of(mixed, sizeof mixed, 0, 4, 1, &st);
    CHECK(st == HMC_DEC_OK && !(c & HMS_CLS_STRIDE));
}

static void test_a_chase_is_not_strided(void)
{
    static const uint8_t b[] = {
        0x48, 0x8b, 0x00,               /* mov rax, [rax] */
        0x48, 0x83, 0xe9, 0x01,         /* sub rcx, 1 */
    };
    enum hmc_dec st;
    unsigned c = cls_of(b, sizeof b, 0, 3, 1, &st);
    CHECK(st == HMC_DEC_CLOBBERED || st == HMC_DEC_OK);
    CHECK(!(c & HMS_CLS_STRIDE));
}

int main(void)
{
    RUN(test_index_stepped_after_the_access);
    RUN(test_pointer_stepped_at_the_loop_top);
    RUN(test_unrolled_body_longer_than_a_cache_line);
    RUN(test_computed_index_is_not_strided);
    RUN(test_a_chase_is_not_strided);
    HMT_END();
}
