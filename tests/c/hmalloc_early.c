/* hmalloc_early.c — libhmalloc_early.so, linked into hmalloc_app (a DT_NEEDED
 * library): its constructor runs before the constructor of any preloaded library,
 * so in mode boot its allocations reach libhmalloc.so (and libsite_probe.so) before
 * they were set up by their constructors: libhmalloc initializes on that first call
 * (docs/formats.md §6; not under ASan, where only its constructor does). */
#include "hmalloc_app.h"

#include <stdlib.h>
#include <string.h>

#define HA_EARLY_API __attribute__((visibility("default")))

static void *g_blocks[HA_E_N];

HA_EARLY_API void **hmearly_blocks(void)
{
    return g_blocks[0] ? g_blocks : NULL;
}

/* glibc passes argc and argv to ELF constructors. */
__attribute__((constructor)) static void early_ctor(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "boot") != 0)
        return;
    for (volatile int k = 0; k < HA_E_N; k++) { /* one call site, not unrolled */
        unsigned char *p = malloc(ha_size[HA_E_CTOR]);
        if (!p)
            abort();
        for (size_t i = 0; i < ha_size[HA_E_CTOR]; i++)
            p[i] = (unsigned char)((i * 13 + (size_t)k) & 0xff);
        g_blocks[k] = p;
    }
}
