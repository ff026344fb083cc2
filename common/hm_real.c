/* hm_real.c — see hm_real.h. */
#include "hm_real.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

unsigned char hm_boot_arena[HM_BOOT_BYTES] __attribute__((aligned(4096)));
static _Atomic size_t g_boot_used;

/* Runs before a sanitizer runtime may have set up its shadow memory (calls made
 * during its own start-up): not instrumented. */
__attribute__((no_sanitize("address")))
void *hm_boot_alloc(size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    size_t cur = atomic_load(&g_boot_used), start, end;
    do {
        start = (cur + 16 + align - 1) & ~(align - 1);   /* 16 bytes for the size */
        end = start + n;
        if (end > HM_BOOT_BYTES || end < start)
            return NULL;
    } while (!atomic_compare_exchange_weak(&g_boot_used, &cur, end));
    memcpy(hm_boot_arena + start - sizeof(size_t), &n, sizeof(size_t));
    return hm_boot_arena + start;
}

size_t hm_boot_size(const void *p)
{
    size_t n;
    memcpy(&n, (const unsigned char *)p - sizeof(size_t), sizeof(size_t));
    return n;
}

/* dlsym returns void *; a function pointer is filled through memcpy. */
#define RESOLVE(field, name) \
    do { void *s_ = dlsym(RTLD_NEXT, name); memcpy(&out->field, &s_, sizeof(s_)); ok &= s_ != NULL; } while (0)

__attribute__((no_sanitize("address")))
int hm_real_resolve(struct hm_alloc_fns *out)
{
    int ok = 1;
    void *m = dlsym(RTLD_NEXT, "malloc");
    RESOLVE(free, "free");
    RESOLVE(calloc, "calloc");
    RESOLVE(realloc, "realloc");
    RESOLVE(reallocarray, "reallocarray");
    RESOLVE(posix_memalign, "posix_memalign");
    RESOLVE(aligned_alloc, "aligned_alloc");
    RESOLVE(memalign, "memalign");
    RESOLVE(valloc, "valloc");
    RESOLVE(pvalloc, "pvalloc");
    RESOLVE(usable, "malloc_usable_size");
    void *(*fm)(size_t);
    memcpy(&fm, &m, sizeof(m));
    __atomic_store_n(&out->malloc, fm, __ATOMIC_RELEASE);   /* last: it ends the arena period */
    return ok && m ? 0 : -1;
}
