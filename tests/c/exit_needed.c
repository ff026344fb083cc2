/* exit_needed.c — libexit_needed.so, a DT_NEEDED library of exit_app: its destructor
 * reads and frees the block it was given (exit_app mode needed). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char *g_block;
static size_t g_len;

void needed_keep(unsigned char *p, size_t n)
{
    g_block = p;
    g_len = n;
}

__attribute__((destructor)) static void needed_fini(void)
{
    if (!g_block)
        return;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < g_len; i++)
        h = (h ^ g_block[i]) * 16777619u;
    printf("needed destructor sum=%08x", (unsigned)h);
    free(g_block);
}
