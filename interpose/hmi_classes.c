/* hmi_classes.c — the arena's size classes: a request's class, a class's slab size
 * and batch (hmi_classes.h). */
#include "hmi_classes.h"

unsigned hmi_arena_slab_code(unsigned c)
{
    size_t want = hmi_arena_class_size(c) * 8;
    unsigned code = 0;
    while (code + 1 < HMI_SLAB_CODES && ((size_t)1 << (HMI_SLAB_SHIFT + code)) < want)
        code++;
    return code;
}

/* The class of n bytes: 1..512 in steps of 16, then (512 << k, 1024 << k] in 32. */
static int class_of(size_t n)
{
    if (n <= 512)
        return n ? (int)((n - 1) / 16) : 0;
    unsigned k = (unsigned)(63 - __builtin_clzll((unsigned long long)(n - 1))) - 9;
    size_t j = (n - 1 - ((size_t)512 << k)) / ((size_t)16 << k);
    return (int)(32 + 32 * k + j);
}

int hmi_arena_class(size_t size, size_t align)
{
    if (align > 16) {
        /* the power-of-two class of max(size, align): its objects are aligned to it */
        size_t n = size > align ? size : align;
        if (n > HMI_ARENA_MAX)
            return -1;
        size_t p = (size_t)1 << (64 - __builtin_clzll((unsigned long long)(n - 1)));
        n = n & (n - 1) ? p : n;
        return class_of(n);
    }
    return size > HMI_ARENA_MAX ? -1 : class_of(size);
}

unsigned hmi_arena_batch(unsigned cls)
{
    size_t cs = hmi_arena_class_size(cls);
    return cs < HMI_ARENA_RUN ? (unsigned)(HMI_ARENA_RUN / cs) : 1u;
}
