/* fin_symbols.c — frame (module path, offset) → "file:line" and function, with
 * libbfd. Frames are return addresses (DESIGN.md §2), so the lookup uses
 * offset - 1 to name the line of the call. One bfd per module, opened once. */
#define PACKAGE "hmtune"
#define PACKAGE_VERSION "1"
#include "fin.h"

#include <bfd.h>
#include <stdlib.h>
#include <string.h>

struct dsym { bfd_vma value; asection *sec; const char *name; };

struct mod {
    const char *path;
    bfd *abfd;
    asymbol **syms;
    long nsyms;
    int tried;
    struct dsym *data;           /* data/bss symbols by address, built on first use */
    long ndata;
    int data_built;
};

static struct mod *g_mods;
static size_t g_nmods;

static struct mod *get_mod(const char *path)
{
    for (size_t i = 0; i < g_nmods; i++)
        if (g_mods[i].path == path)
            return &g_mods[i];
    g_mods = fin_xrealloc(g_mods, (g_nmods + 1) * sizeof(*g_mods));
    struct mod *m = &g_mods[g_nmods++];
    memset(m, 0, sizeof(*m));
    m->path = path;
    return m;
}

static void load(struct mod *m)
{
    static int inited;
    m->tried = 1;
    if (!inited) {
        bfd_init();
        inited = 1;
    }
    if (m->path[0] != '/')
        return;                           /* linux-vdso.so.1 and friends */
    bfd *b = bfd_openr(m->path, NULL);
    if (!b)
        return;
    char **matching;
    if (!bfd_check_format_matches(b, bfd_object, &matching)) {
        bfd_close(b);
        return;
    }
    long n = bfd_get_symtab_upper_bound(b), count = 0;
    asymbol **syms = NULL;
    if (n > 0) {
        syms = fin_xmalloc((size_t)n);
        if ((count = bfd_canonicalize_symtab(b, syms)) <= 0) {
            free(syms);
            syms = NULL;
        }
    }
    if (!syms) {
        n = bfd_get_dynamic_symtab_upper_bound(b);
        if (n > 0) {
            syms = fin_xmalloc((size_t)n);
            if ((count = bfd_canonicalize_dynamic_symtab(b, syms)) <= 0) {
                free(syms);
                syms = NULL;
            }
        }
    }
    m->abfd = b;
    m->syms = syms;
    m->nsyms = syms ? count : 0;
}

void fin_symbolize(const struct fin_frame *f, const char **fileline, const char **func)
{
    *fileline = "??";
    *func = "??";
    if (!f->path)
        return;
    struct mod *m = get_mod(f->path);
    if (!m->tried)
        load(m);
    if (!m->abfd)
        return;
    bfd_vma pc = f->off ? f->off - 1 : 0;
    for (asection *s = m->abfd->sections; s; s = s->next) {
        if (!(bfd_section_flags(s) & SEC_ALLOC))
            continue;
        bfd_vma vma = bfd_section_vma(s);
        if (pc < vma || pc >= vma + bfd_section_size(s))
            continue;
        const char *file = NULL, *fn = NULL;
        unsigned int line = 0;
        if (bfd_find_nearest_line(m->abfd, s, m->syms, pc - vma, &file, &fn, &line)) {
            /* An inlined call gives one logical frame per inlining level (as
             * addr2line -i): innermost first, so the user's own line is there too. */
            char buf[4200], fbuf[4200];
            size_t n = 0, fnl = 0;
            for (int depth = 0; depth < 16; depth++) {
                if (file && *file)
                    n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s:%u", depth ? " > " : "",
                                          file, line);
                else
                    n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s??", depth ? " > " : "");
                char *dem = fn && *fn ? bfd_demangle(m->abfd, fn, 1 | 2) : NULL;  /* PARAMS|ANSI */
                fnl += (size_t)snprintf(fbuf + fnl, sizeof(fbuf) - fnl, "%s%s", depth ? " > " : "",
                                        dem ? dem : (fn && *fn ? fn : "??"));
                free(dem);
                if (n >= sizeof(buf) - 512 || fnl >= sizeof(fbuf) - 512 ||
                    !bfd_find_inliner_info(m->abfd, &file, &fn, &line))
                    break;
            }
            if (strcmp(buf, "??") != 0)
                *fileline = fin_intern(buf);
            if (strcmp(fbuf, "??") != 0)
                *func = fin_intern(fbuf);
        }
        return;
    }
}

static int cmp_dsym(const void *a, const void *b)
{
    const struct dsym *x = a, *y = b;
    return x->value < y->value ? -1 : x->value > y->value;
}

static void build_data(struct mod *m)
{
    m->data_built = 1;
    for (long i = 0; i < m->nsyms; i++) {
        asymbol *s = m->syms[i];
        asection *sec = s->section;
        if (!sec || !s->name || !*s->name || (s->flags & (BSF_SECTION_SYM | BSF_FILE)))
            continue;
        flagword f = bfd_section_flags(sec);
        if (!(f & SEC_ALLOC) || (f & SEC_CODE))
            continue;
        m->data = fin_xrealloc(m->data, (size_t)(m->ndata + 1) * sizeof(*m->data));
        m->data[m->ndata++] = (struct dsym){ bfd_asymbol_value(s), sec, s->name };
    }
    if (m->ndata)
        qsort(m->data, (size_t)m->ndata, sizeof(*m->data), cmp_dsym);
}

const char *fin_data_symbol(const char *path, uint64_t off, uint64_t *sym_off)
{
    struct mod *m = get_mod(path);
    if (!m->tried)
        load(m);
    if (!m->abfd)
        return NULL;
    if (!m->data_built)
        build_data(m);
    long lo = 0, hi = m->ndata - 1, best = -1;
    while (lo <= hi) {                     /* the last symbol at or below off */
        long mid = (lo + hi) / 2;
        if (m->data[mid].value <= off) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    if (best < 0)
        return NULL;
    /* it must be in the same section, and off before the next symbol there (ELF
     * sizes are not visible through libbfd's generic symbols) */
    asection *sec = m->data[best].sec;
    bfd_vma end = bfd_section_vma(sec) + bfd_section_size(sec);
    for (long k = best + 1; k < m->ndata; k++)
        if (m->data[k].sec == sec && m->data[k].value > m->data[best].value) {
            end = m->data[k].value;
            break;
        }
    if (off >= end)
        return NULL;
    *sym_off = m->data[best].value;
    char *dem = bfd_demangle(m->abfd, m->data[best].name, 1 | 2);
    const char *name = fin_intern(dem ? dem : m->data[best].name);
    free(dem);
    return name;
}

void fin_symbols_close(void)
{
    for (size_t i = 0; i < g_nmods; i++) {
        free(g_mods[i].data);
        if (g_mods[i].abfd)
            bfd_close(g_mods[i].abfd);
        free(g_mods[i].syms);
    }
    free(g_mods);
    g_mods = NULL;
    g_nmods = 0;
}
