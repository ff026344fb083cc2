/* fin_objects.c — what a sample points at: static variables (the ELF symbol of a
 * module's data/bss containing the address, each with its own object id and
 * labels) and the sampled instruction's function and source line (events
 * 30000000 / 30000100, with their own label tables). */
#include "fin.h"

#include <stdlib.h>
#include <string.h>

int fin_module_of(const struct fin_proc *p, uint64_t addr)
{
    /* newest first: a range reused after dlclose belongs to the later module */
    for (size_t id = p->nmods; id-- > 1;)
        if (p->mod_path[id] && addr >= p->mod_lo[id] && addr < p->mod_hi[id])
            return (int)id;
    return 0;
}

uint32_t fin_static_object(struct fin_ctx *c, struct fin_proc *p, uint64_t addr,
                           uint64_t *start)
{
    int id = fin_module_of(p, addr);
    if (!id)
        return 0;
    uint64_t off = addr - p->mod_base[id], sym_off = 0, size = 0;
    const char *sym = fin_data_symbol(p->mod_path[id], off, &sym_off, &size);
    if (!sym)
        return 0;
    if (start)
        *start = p->mod_base[id] + sym_off;
    /* The key is the object's 41000010 label: where the symbol starts and how big it
     * is, what libhmalloc needs to find and check it (docs/formats.md §3); without an
     * ELF size, "[static]" alone. */
    char key[4200];
    if (size)
        snprintf(key, sizeof(key), "%s+0x%llx [static %llu]", p->mod_path[id],
                 (unsigned long long)sym_off, (unsigned long long)size);
    else
        snprintf(key, sizeof(key), "%s+0x%llx [static]", p->mod_path[id],
                 (unsigned long long)sym_off);
    struct fin_site *s;
    uint32_t oid = fin_key_id(c, key, &s);
    if (s) {
        s->is_static = 1;
        s->sym = sym;
        s->module = p->mod_path[id];
        s->size = size;
    }
    return oid;
}

/* ---- sampled instructions ----------------------------------------------------- */

struct code_ent { uint64_t key; uint32_t fid, lid; };
static struct code_ent *g_code;
static size_t g_ncode, g_capcode;

/* label tables: id - 1 = index */
static const char **g_funcs, **g_lines;
static size_t g_nfuncs, g_nlines;

static uint32_t label_id(const char ***tab, size_t *n, const char *label)
{
    for (size_t i = 0; i < *n; i++)        /* labels are interned: pointer equality */
        if ((*tab)[i] == label)
            return (uint32_t)i + 1;
    *tab = fin_xrealloc(*tab, (*n + 1) * sizeof(char *));
    (*tab)[(*n)++] = label;
    return (uint32_t)*n;
}

static void code_grow(void)
{
    size_t ncap = g_capcode ? g_capcode * 2 : 4096;
    struct code_ent *n = fin_xmalloc(ncap * sizeof(*n));
    for (size_t i = 0; i < g_capcode; i++) {
        if (!g_code[i].key)
            continue;
        size_t j = (g_code[i].key * 0x9e3779b97f4a7c15ull >> 20) & (ncap - 1);
        while (n[j].key)
            j = (j + 1) & (ncap - 1);
        n[j] = g_code[i];
    }
    free(g_code);
    g_code = n;
    g_capcode = ncap;
}

void fin_sample_code(struct fin_ctx *c, struct fin_proc *p, uint64_t ip, uint32_t *fid,
                     uint32_t *lid)
{
    (void)c;
    /* key: the code location as (module path, offset), so ranks share entries */
    int mid = fin_module_of(p, ip);
    struct fin_frame f = { mid ? p->mod_path[mid] : NULL, mid ? ip - p->mod_base[mid] + 1 : 0 };
    uint64_t key = ((uint64_t)(uintptr_t)f.path * 0x100000001b3ull) ^ f.off;
    if (!key)
        key = 1;
    if ((g_ncode + 1) * 2 > g_capcode)
        code_grow();
    size_t j = (key * 0x9e3779b97f4a7c15ull >> 20) & (g_capcode - 1);
    while (g_code[j].key) {
        if (g_code[j].key == key) {
            *fid = g_code[j].fid;
            *lid = g_code[j].lid;
            return;
        }
        j = (j + 1) & (g_capcode - 1);
    }
    /* f.off is ip + 1 so that a missing module still gets a non-zero key; the
     * instruction itself is looked up (not a return address) */
    const char *fl = "??", *fn = "??";
    if (f.path) {
        struct fin_where w;
        struct fin_frame at = { f.path, f.off - 1 };
        fin_symbolize(&at, 0, &w);
        fl = w.fileline;
        /* no function known: the module, so that its samples still add up per module */
        fn = w.known == FIN_KNOWN_NONE ? w.module : w.func;
    }
    /* inlined code: the innermost level names the instruction's own line */
    char buf[4200];
    const char *sep = strstr(fl, " > ");
    if (sep) {
        snprintf(buf, sizeof(buf), "%.*s", (int)(sep - fl), fl);
        fl = fin_intern(buf);
    }
    sep = strstr(fn, " > ");
    if (sep) {
        snprintf(buf, sizeof(buf), "%.*s", (int)(sep - fn), fn);
        fn = fin_intern(buf);
    }
    g_code[j] = (struct code_ent){ key, label_id(&g_funcs, &g_nfuncs, fin_intern(fn)),
                                   label_id(&g_lines, &g_nlines, fin_intern(fl)) };
    g_ncode++;
    *fid = g_code[j].fid;
    *lid = g_code[j].lid;
}

void fin_code_labels(FILE *f, int lines)
{
    static const struct fin_value reserved[] = { HM_SAMPLE_FUNC_VALUES(FIN_VALUE) };
    const char **tab = lines ? g_lines : g_funcs;
    size_t n = lines ? g_nlines : g_nfuncs;
    fin_pcf_values(f, reserved, FIN_NVALUES(reserved), HM_SAMPLE_FUNC_MAX, " ");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%zu %s\n", i + 1, tab[i]);
    fprintf(f, "\n\n");
}
