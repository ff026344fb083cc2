/* match_dl.c — libtm_dl.so, dlopen'ed by tests/c/test_match.c: one frame of a
 * dlopen'ed library between the test's call and the matcher. */
#include <stdint.h>

__attribute__((visibility("default"))) int tmdl_call(int (*fn)(int, uint64_t *), int cap,
                                                    uint64_t *out);

int tmdl_call(int (*fn)(int, uint64_t *), int cap, uint64_t *out)
{
    int r = fn(cap, out);
    __asm__ volatile("" ::: "memory");      /* keeps this frame: no tail call */
    return r;
}
