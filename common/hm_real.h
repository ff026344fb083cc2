/* hm_real.h — the allocator a preload library wraps (the next definition of each
 * malloc-family function after the library, found with dlsym(RTLD_NEXT): glibc, or
 * whatever allocator the application links), and the static bootstrap arena that
 * serves allocations made while dlsym itself is resolving them. Shared by collect
 * (libhmtrace.so) and interpose (libhmalloc.so); each library has its own arena. */
#ifndef HM_REAL_H
#define HM_REAL_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"

struct hm_alloc_fns {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*reallocarray)(void *, size_t, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*usable)(void *);
};

/* Fill *out. malloc is stored last, with a release store: callers treat
 * out->malloc == NULL as "still resolving" and serve such calls from the arena.
 * Returns 0 when every function was found, -1 otherwise (out->malloc then stays NULL
 * unless malloc itself was found). */
int hm_real_resolve(struct hm_alloc_fns *out) HM_HIDDEN;

#define HM_BOOT_BYTES (256u * 1024u)
extern unsigned char hm_boot_arena[HM_BOOT_BYTES] HM_HIDDEN;

HM_INLINE int hm_in_boot(const void *p)
{
    return (const unsigned char *)p >= hm_boot_arena &&
           (const unsigned char *)p < hm_boot_arena + HM_BOOT_BYTES;
}
/* n bytes aligned to align (a power of two; < 16 means 16) from the arena, never
 * freed; NULL when the arena is full. */
void *hm_boot_alloc(size_t n, size_t align) HM_HIDDEN;
/* The size requested for arena block p. */
size_t hm_boot_size(const void *p) HM_HIDDEN;

#endif
