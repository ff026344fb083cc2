/* hmalloc_dl.c — libhmalloc_dl.so, dlopen'ed by hmalloc_app's mode dl
 * (tests/c/test_hmalloc.c): its malloc and realloc calls are sites inside a
 * dlopen'ed library, listed in the placement by this library's path. */
#include <stdlib.h>

#define HA_DL_API __attribute__((visibility("default"), noinline))

HA_DL_API void *hmdl_alloc(size_t n);
HA_DL_API void *hmdl_realloc(void *p, size_t n);

void *hmdl_alloc(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" ::: "memory");      /* keeps this frame: no tail call */
    return p;
}

void *hmdl_realloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    __asm__ volatile("" ::: "memory");
    return q;
}
