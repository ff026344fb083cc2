/* fin_sites.c — the object table: one id per distinct object key (a call site's
 * raw label, a static variable's label), ids from FIN_SITE0 (3) up in order of first
 * sight (fin_ctx.sites[id - FIN_SITE0]), looked up through an open-addressing hash of
 * the keys. */
#include "fin.h"

#include <stdlib.h>
#include <string.h>

static struct { char **key; uint32_t *id; size_t cap, n; } g_sitemap;

static uint64_t hash_bytes(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* The object id of key, created (with *created set) when new. */
uint32_t fin_key_id(struct fin_ctx *c, const char *key, struct fin_site **created)
{
    *created = NULL;
    if (g_sitemap.n * 2 >= g_sitemap.cap) {
        size_t ncap = g_sitemap.cap ? g_sitemap.cap * 2 : 1024;
        char **nk = fin_xmalloc(ncap * sizeof(char *));
        uint32_t *ni = fin_xmalloc(ncap * sizeof(uint32_t));
        for (size_t i = 0; i < g_sitemap.cap; i++) {
            if (!g_sitemap.key[i])
                continue;
            size_t j = hash_bytes(g_sitemap.key[i]) & (ncap - 1);
            while (nk[j])
                j = (j + 1) & (ncap - 1);
            nk[j] = g_sitemap.key[i];
            ni[j] = g_sitemap.id[i];
        }
        free(g_sitemap.key);
        free(g_sitemap.id);
        g_sitemap.key = nk;
        g_sitemap.id = ni;
        g_sitemap.cap = ncap;
    }
    size_t j = hash_bytes(key) & (g_sitemap.cap - 1);
    while (g_sitemap.key[j]) {
        if (strcmp(g_sitemap.key[j], key) == 0)
            return g_sitemap.id[j];
        j = (j + 1) & (g_sitemap.cap - 1);
    }
    if (c->nsites == c->capsites) {
        c->capsites = c->capsites ? c->capsites * 2 : 256;
        c->sites = fin_xrealloc(c->sites, c->capsites * sizeof(*c->sites));
    }
    struct fin_site *s = &c->sites[c->nsites];
    memset(s, 0, sizeof(*s));
    s->id = (uint32_t)(c->nsites + FIN_SITE0);
    s->raw_label = fin_xstrdup(key);
    c->nsites++;
    g_sitemap.key[j] = s->raw_label;
    g_sitemap.id[j] = s->id;
    g_sitemap.n++;
    *created = s;
    return s->id;
}
