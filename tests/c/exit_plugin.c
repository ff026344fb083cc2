/* exit_plugin.c — libexit_plugin.so, dlopen'ed by exit_app after start-up (mode
 * plugin) and never closed: its destructor runs at exit, after libhmalloc.so's
 * constructor-time set-up and after the libraries loaded before it are finalized
 * in the reverse order; it reads and frees the block it was given and one it
 * allocated itself. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *g_given, *g_own;
static size_t g_len;

static uint32_t sum(const unsigned char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

void plugin_keep(unsigned char *p, size_t n)
{
    g_given = p;
    g_len = n;
    g_own = malloc(3u << 20);
    if (g_own)
        memset(g_own, 0x5c, 3u << 20);
}

__attribute__((destructor)) static void plugin_fini(void)
{
    if (!g_given || !g_own)
        return;
    printf("plugin destructor sums=%08x,%08x", (unsigned)sum(g_given, g_len),
           (unsigned)sum(g_own, 3u << 20));
    free(g_own);
    free(g_given);
}
