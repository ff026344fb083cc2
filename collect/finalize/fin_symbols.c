/* fin_symbols.c — frame (module path, offset) → "file:line" and function, never "??"
 * alone. Frames are return addresses (DESIGN.md §2), so lookups use offset - 1 to
 * name the line of the call. Per frame, the first of:
 *   1. file:line from DWARF (libbfd; an inlined call gives one level per inlining
 *      depth, as addr2line -i), in the module or in its separate debug file, found by
 *      build-id (ROOT/.build-id/xx/yyyy.debug) or .gnu_debuglink under the debug roots
 *      (HMTUNE_DEBUG_ROOT, a colon-separated list, default /usr/lib/debug);
 *   2. `symbol+0xOFF`: the ELF function symbol (.symtab of the module or of its debug
 *      file, else .dynsym: what a stripped library still exports) whose range holds
 *      the address, demangled;
 *   3. `module+0xOFF` with the module's file name (`liblammps.so.0+0x1234`).
 * Every module is opened, and its symbol tables read, once.
 *
 * One file of over 500 lines on purpose: the three lookups and the static-variable one
 * (fin_data_symbol) share the per-module cache of opened libbfd objects and their
 * symbol tables. */
#define PACKAGE "hmtune"
#define PACKAGE_VERSION "1"
#include "fin.h"
#include "hm_options.h"

#include <bfd.h>
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEMANGLE_FLAGS (1 | 2)            /* DMGL_PARAMS | DMGL_ANSI */
#define MAX_LEVELS 16                     /* inlining levels kept per frame */


/* An ELF function or data object symbol: [value, value + size) in the module's
 * addresses; bind ranks aliases (global before weak before local). */
struct fsym { uint64_t value, size; const char *name; int bind; };

struct map { void *addr; size_t len; };

struct mod {
    const char *path;
    const char *base;            /* file name of path */
    bfd *abfd;                   /* the module */
    bfd *dbg;                    /* its separate debug file, or NULL */
    bfd *lines;                  /* where DWARF and .symtab are read: dbg, else abfd */
    asymbol **syms;
    long nsyms;
    int tried;
    struct fsym *funcs;          /* function symbols by address, built on first use */
    size_t nfuncs;
    struct fsym *objs;           /* sized data objects (STT_OBJECT), built with funcs */
    size_t nobjs;
    struct fsym *bounds;         /* data boundaries (is_data_bound), sorted, with funcs */
    size_t nbounds;
    struct range { uint64_t lo, hi; const char *name; } *secs;   /* data sections */
    size_t nsecs;
    int secs_read;               /* from the first file that has them */
    int funcs_built;
    struct map maps[2];          /* the ELF files the symbol names point into */
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
    const char *slash = strrchr(path, '/');
    m->base = slash && slash[1] ? slash + 1 : path;
    return m;
}

static bfd *open_object(const char *path)
{
    bfd *b = bfd_openr(path, NULL);
    if (!b)
        return NULL;
    b->flags |= BFD_DECOMPRESS;           /* SHF_COMPRESSED DWARF (Debian's debug files) */
    char **matching;
    if (!bfd_check_format_matches(b, bfd_object, &matching)) {
        bfd_close(b);
        return NULL;
    }
    return b;
}

/* The separate debug file of b under one of the debug roots: by build-id first,
 * then by .gnu_debuglink (whose CRC libbfd checks). NULL when none is installed. */
static bfd *find_debug_file(bfd *b)
{
    const char *roots = hm_opt_str(HM_OPT_DEBUG_ROOT);      /* /usr/lib/debug unless set */
    char root[4096];
    for (const char *p = roots; *p;) {
        size_t n = strcspn(p, ":");
        if (n > 0 && n < sizeof(root)) {
            memcpy(root, p, n);
            root[n] = 0;
            char *file = bfd_follow_build_id_debuglink(b, root);
            if (!file)
                file = bfd_follow_gnu_debuglink(b, root);
            bfd *d = file ? open_object(file) : NULL;
            free(file);
            if (d && bfd_get_section_by_name(d, ".debug_info"))
                return d;
            if (d)
                bfd_close(d);
        }
        p += n;
        if (*p == ':')
            p++;
    }
    return NULL;
}

static asymbol **read_symtab(bfd *b, int dynamic, long *count)
{
    long n = dynamic ? bfd_get_dynamic_symtab_upper_bound(b) : bfd_get_symtab_upper_bound(b);
    *count = 0;
    if (n <= 0)
        return NULL;
    asymbol **syms = fin_xmalloc((size_t)n);
    *count = dynamic ? bfd_canonicalize_dynamic_symtab(b, syms) : bfd_canonicalize_symtab(b, syms);
    if (*count <= 0) {
        free(syms);
        *count = 0;
        return NULL;
    }
    return syms;
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
    bfd *b = open_object(m->path);
    if (!b)
        return;
    m->abfd = b;
    m->lines = b;
    if (!bfd_get_section_by_name(b, ".debug_info") && (m->dbg = find_debug_file(b)))
        m->lines = m->dbg;
    m->syms = read_symtab(m->lines, 0, &m->nsyms);
    if (!m->syms && m->lines != b)
        m->syms = read_symtab(b, 0, &m->nsyms);
    if (!m->syms)
        m->syms = read_symtab(b, 1, &m->nsyms);
}

/* ---- ELF function symbols (.symtab, .dynsym) ----------------------------------- */

static int cmp_fsym(const void *a, const void *b)
{
    const struct fsym *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;                  /* larger first */
    return x->bind > y->bind ? -1 : x->bind < y->bind;       /* preferred alias last */
}

/* Alias preference: the lookups scan back from the nearest start, so the preferred of
 * several symbols with one address and size sorts last. */
static int bind_rank(int bind)
{
    return bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
}

/* A section of static data: program data or .bss (not the loader's tables: .dynamic,
 * .gnu.hash, relocations), allocated, not code, not thread-local (a TLS symbol's value
 * is an offset in the thread's block, not an address). */
static int is_data_section(const Elf64_Shdr *s)
{
    return (s->sh_type == SHT_PROGBITS || s->sh_type == SHT_NOBITS) &&
           (s->sh_flags & (SHF_ALLOC | SHF_EXECINSTR | SHF_TLS)) == SHF_ALLOC && s->sh_addr &&
           s->sh_size;
}

/* A data boundary: where a symbol of static data starts (types NOTYPE, OBJECT, COMMON,
 * in a data section). Unnamed data between two of them is one object (libhmalloc's
 * hmi_static.c checks a static of that extent the same way). */
static int is_data_bound(const Elf64_Sym *s, const Elf64_Shdr *sh, unsigned shnum)
{
    int type = ELF64_ST_TYPE(s->st_info);
    return (type == STT_NOTYPE || type == STT_OBJECT || type == STT_COMMON) && s->st_value &&
           s->st_shndx != SHN_UNDEF && s->st_shndx < shnum && is_data_section(&sh[s->st_shndx]);
}

/* Function symbols (STT_FUNC, STT_GNU_IFUNC), sized data objects (STT_OBJECT in a data
 * section) and data boundaries of the ELF file at path, from .symtab and .dynsym,
 * appended to m->funcs, m->objs and m->bounds, and its data sections to m->secs; the
 * file stays mapped (the names point into it) until fin_symbols_close. */
static void add_elf_syms(struct mod *m, const char *path, struct map *keep)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    void *addr = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size >= sizeof(Elf64_Ehdr))
        addr = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (addr == MAP_FAILED)
        return;
    size_t len = (size_t)st.st_size;
    const unsigned char *img = addr;
    const Elf64_Ehdr *eh = addr;
    size_t added = 0;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff == 0 || eh->e_shoff > len ||
        eh->e_shnum > (len - eh->e_shoff) / sizeof(Elf64_Shdr))
        goto done;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
    const Elf64_Shdr *shstr = eh->e_shstrndx < eh->e_shnum ? &sh[eh->e_shstrndx] : NULL;
    if (shstr && (shstr->sh_offset > len || shstr->sh_size > len - shstr->sh_offset ||
                  !shstr->sh_size || img[shstr->sh_offset + shstr->sh_size - 1]))
        shstr = NULL;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (is_data_section(&sh[i]) && !m->secs_read) {
            const char *nm = shstr && sh[i].sh_name < shstr->sh_size
                                 ? (const char *)img + shstr->sh_offset + sh[i].sh_name : "";
            m->secs = fin_xrealloc(m->secs, (m->nsecs + 1) * sizeof(*m->secs));
            m->secs[m->nsecs++] = (struct range){ sh[i].sh_addr, sh[i].sh_addr + sh[i].sh_size,
                                                  fin_intern(*nm ? nm : "data") };
        }
        if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM)
            continue;
        if (sh[i].sh_link >= eh->e_shnum || sh[i].sh_entsize != sizeof(Elf64_Sym))
            continue;
        const Elf64_Shdr *str = &sh[sh[i].sh_link];
        if (sh[i].sh_offset > len || sh[i].sh_size > len - sh[i].sh_offset ||
            str->sh_type != SHT_STRTAB || str->sh_offset > len ||
            str->sh_size > len - str->sh_offset || str->sh_size == 0 ||
            img[str->sh_offset + str->sh_size - 1] != 0)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(img + sh[i].sh_offset);
        const char *names = (const char *)img + str->sh_offset;
        size_t n = sh[i].sh_size / sizeof(*sym);
        m->funcs = fin_xrealloc(m->funcs, (m->nfuncs + n) * sizeof(*m->funcs));
        m->objs = fin_xrealloc(m->objs, (m->nobjs + n) * sizeof(*m->objs));
        m->bounds = fin_xrealloc(m->bounds, (m->nbounds + n) * sizeof(*m->bounds));
        for (size_t k = 0; k < n; k++) {
            int type = ELF64_ST_TYPE(sym[k].st_info);
            unsigned shndx = sym[k].st_shndx;
            if (is_data_bound(&sym[k], sh, eh->e_shnum) && sym[k].st_name < str->sh_size)
                m->bounds[m->nbounds++] = (struct fsym){
                    sym[k].st_value, sym[k].st_size, names + sym[k].st_name,
                    bind_rank(ELF64_ST_BIND(sym[k].st_info)) };
            if (shndx == SHN_UNDEF || sym[k].st_value == 0 || sym[k].st_size == 0 ||
                sym[k].st_name >= str->sh_size || !names[sym[k].st_name])
                continue;
            struct fsym f = { sym[k].st_value, sym[k].st_size, names + sym[k].st_name,
                              bind_rank(ELF64_ST_BIND(sym[k].st_info)) };
            if (type == STT_FUNC || type == STT_GNU_IFUNC) {
                m->funcs[m->nfuncs++] = f;
                added++;
            } else if (type == STT_OBJECT && shndx < eh->e_shnum &&
                       (sh[shndx].sh_flags & (SHF_ALLOC | SHF_TLS)) == SHF_ALLOC) {
                m->objs[m->nobjs++] = f;
                added++;
            }
        }
    }
    m->secs_read |= m->nsecs > 0;          /* one file's sections: the module's first */
done:
    if (added || m->nbounds) {
        keep->addr = addr;
        keep->len = len;
    } else {
        munmap(addr, len);
    }
}

static void build_funcs(struct mod *m)
{
    m->funcs_built = 1;
    if (!m->abfd)
        return;
    if (m->dbg)
        add_elf_syms(m, bfd_get_filename(m->dbg), &m->maps[0]);
    add_elf_syms(m, m->path, &m->maps[1]);
    if (m->nfuncs)
        qsort(m->funcs, m->nfuncs, sizeof(*m->funcs), cmp_fsym);
    if (m->nobjs)
        qsort(m->objs, m->nobjs, sizeof(*m->objs), cmp_fsym);
    if (m->nbounds)
        qsort(m->bounds, m->nbounds, sizeof(*m->bounds), cmp_fsym);
}

/* The index of the first data boundary (m->bounds, sorted) above x; nbounds if none. */
static size_t first_bound_above(const struct mod *m, uint64_t x)
{
    size_t lo = 0, hi = m->nbounds;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->bounds[mid].value <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Where the unnamed data starting at s0 ends: the next data boundary above s0, or the
 * end of s0's data section, whichever comes first; 0 when s0 is in no data section. */
static uint64_t region_end(const struct mod *m, uint64_t s0)
{
    uint64_t end = 0;
    for (size_t i = 0; i < m->nsecs; i++)
        if (s0 >= m->secs[i].lo && s0 < m->secs[i].hi)
            end = m->secs[i].hi;
    size_t lo = first_bound_above(m, s0);
    if (end && lo < m->nbounds && m->bounds[lo].value < end)
        end = m->bounds[lo].value;
    return end;
}

/* The function symbol whose range holds pc (the nearest one starting at or below it,
 * or an alias or enclosing symbol just before), NULL when none does. */
static const struct fsym *sym_at(const struct fsym *tab, size_t n, uint64_t pc)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {                     /* first symbol above pc */
        size_t mid = lo + (hi - lo) / 2;
        if (tab[mid].value <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo, tries = 0; k-- > 0 && tries < 8; tries++)
        if (pc - tab[k].value < tab[k].size)
            return &tab[k];
    return NULL;
}

static const struct fsym *func_at(struct mod *m, uint64_t pc)
{
    if (!m->funcs_built)
        build_funcs(m);
    return sym_at(m->funcs, m->nfuncs, pc);
}

/* name demangled, with the demangler's "> >" written ">>": frames are joined by
 * " > ", which "a<b<c> > >" would otherwise contain. */
static const char *demangled(struct mod *m, const char *name)
{
    char *dem = bfd_demangle(m->abfd, name, DEMANGLE_FLAGS);
    const char *text = dem ? dem : name;
    if (!strstr(text, "> >")) {
        const char *out = fin_intern(text);
        free(dem);
        return out;
    }
    size_t len = strlen(text);
    char *tight = fin_xmalloc(len + 1), *o = tight;
    for (size_t i = 0; i < len; i++) {
        *o++ = text[i];
        if (text[i] == '>' && text[i + 1] == ' ' && text[i + 2] == '>')
            i++;                          /* drop the space */
    }
    *o = 0;
    const char *out = fin_intern(tight);
    free(tight);
    free(dem);
    return out;
}

/* ---- frames -------------------------------------------------------------------- */

static size_t put(char *buf, size_t n, size_t cap, int level, const char *text)
{
    if (n >= cap)
        return n;
    int w = snprintf(buf + n, cap - n, "%s%s", level ? " > " : "", text);
    return w < 0 ? n : n + (size_t)w;
}

/* Frames already symbolized: each site's frames are asked for by three label tables,
 * and the outer frames are shared by many sites. */
struct memo { const char *path; uint64_t off; int is_return; struct fin_where w; };
static struct memo *g_memo;
static size_t g_nmemo, g_capmemo;

static size_t memo_slot(const struct memo *tab, size_t cap, const char *path, uint64_t off,
                        int is_return)
{
    uint64_t h = ((uint64_t)(uintptr_t)path * 0x100000001b3ull) ^ (off * 0x9e3779b97f4a7c15ull)
                 ^ (uint64_t)is_return;
    size_t j = (size_t)(h >> 17) & (cap - 1);
    while (tab[j].path && (tab[j].path != path || tab[j].off != off ||
                           tab[j].is_return != is_return))
        j = (j + 1) & (cap - 1);
    return j;
}

static void symbolize(const struct fin_frame *f, int is_return, struct fin_where *w);

void fin_symbolize(const struct fin_frame *f, int is_return, struct fin_where *w)
{
    if (!f->path) {
        symbolize(f, is_return, w);
        return;
    }
    if ((g_nmemo + 1) * 2 > g_capmemo) {
        size_t ncap = g_capmemo ? g_capmemo * 2 : 1024;
        struct memo *n = calloc(ncap, sizeof(*n));
        if (!n)
            fin_die("out of memory");
        for (size_t i = 0; i < g_capmemo; i++)
            if (g_memo[i].path)
                n[memo_slot(n, ncap, g_memo[i].path, g_memo[i].off, g_memo[i].is_return)] =
                    g_memo[i];
        free(g_memo);
        g_memo = n;
        g_capmemo = ncap;
    }
    size_t j = memo_slot(g_memo, g_capmemo, f->path, f->off, is_return);
    if (!g_memo[j].path) {
        symbolize(f, is_return, &g_memo[j].w);
        g_memo[j].path = f->path;
        g_memo[j].off = f->off;
        g_memo[j].is_return = is_return;
        g_nmemo++;
    }
    *w = g_memo[j].w;
}

static void symbolize(const struct fin_frame *f, int is_return, struct fin_where *w)
{
    char text[4200];
    w->known = FIN_KNOWN_NONE;
    w->symbol = NULL;
    if (!f->path) {                       /* outside every module: the raw frame's text */
        snprintf(text, sizeof(text), "??+0x%llx", (unsigned long long)f->off);
        w->fileline = w->func = fin_intern(text);
        w->module = NULL;
        return;
    }
    struct mod *m = get_mod(f->path);
    if (!m->tried)
        load(m);
    w->module = m->base;
    uint64_t pc = is_return && f->off ? f->off - 1 : f->off;

    /* 1. DWARF: one level per inlining depth */
    const char *files[MAX_LEVELS], *fns[MAX_LEVELS];
    unsigned int lines[MAX_LEVELS];
    int nlev = 0, nfile = 0;
    for (asection *s = m->lines ? m->lines->sections : NULL; s; s = s->next) {
        if (!(bfd_section_flags(s) & SEC_ALLOC))
            continue;
        bfd_vma vma = bfd_section_vma(s);
        if (pc < vma || pc >= vma + bfd_section_size(s))
            continue;
        const char *file = NULL, *fn = NULL;
        unsigned int line = 0;
        if (bfd_find_nearest_line(m->lines, s, m->syms, pc - vma, &file, &fn, &line)) {
            do {
                files[nlev] = file && *file ? file : NULL;
                fns[nlev] = fn && *fn ? fn : NULL;
                lines[nlev] = line;
                nfile += files[nlev] != NULL;
                nlev++;
            } while (nlev < MAX_LEVELS && bfd_find_inliner_info(m->lines, &file, &fn, &line));
        }
        break;
    }

    /* 2. the ELF symbol holding pc, 3. the module's name and offset */
    const struct fsym *sym = func_at(m, pc);
    char fallback[4200];
    if (sym) {
        w->symbol = demangled(m, sym->name);
        snprintf(fallback, sizeof(fallback), "%s+0x%llx", w->symbol,
                 (unsigned long long)(f->off - sym->value));
    } else {
        snprintf(fallback, sizeof(fallback), "%s+0x%llx", m->base, (unsigned long long)f->off);
    }

    if (nfile == 0) {
        /* no line: one level, the symbol or the module. (Without DWARF, libbfd's
         * function is the nearest symbol below, whatever its size: in a stripped
         * library that is the exported function before a hidden one, a wrong name.) */
        w->known = sym ? FIN_KNOWN_SYMBOL : FIN_KNOWN_NONE;
        w->fileline = fin_intern(fallback);
        w->func = sym ? w->symbol : w->fileline;
        return;
    }
    char fbuf[4200];
    size_t n = 0, fnl = 0;
    for (int k = 0; k < nlev; k++) {
        const char *fn = fns[k] ? demangled(m, fns[k]) : NULL;
        char loc[4200];
        if (files[k])
            snprintf(loc, sizeof(loc), "%s:%u", files[k], lines[k]);
        else
            snprintf(loc, sizeof(loc), "%s", fn ? fn : fallback);
        n = put(text, n, sizeof(text) - 512, k, loc);
        fnl = put(fbuf, fnl, sizeof(fbuf) - 512, k, fn ? fn : k == 0 ? fallback : "??");
    }
    w->known = FIN_KNOWN_LINE;
    w->fileline = fin_intern(text);
    w->func = fin_intern(fbuf);
}

/* ---- static variables ---------------------------------------------------------- */

const char *fin_data_symbol(const char *path, uint64_t off, uint64_t *sym_off, uint64_t *size)
{
    struct mod *m = get_mod(path);
    if (!m->tried)
        load(m);
    if (!m->abfd)
        return NULL;
    /* a sized ELF object holding off: its start and size are the symbol's own */
    if (!m->funcs_built)
        build_funcs(m);
    const struct fsym *o = sym_at(m->objs, m->nobjs, off);
    if (o) {
        *sym_off = o->value;
        *size = o->size;
        return demangled(m, o->name);
    }
    /* else unnamed data of a data section (a stripped module's hidden statics, Fortran
     * COMMON blocks, padding): from the end of the last symbol before off when it has
     * a size ("symbol+0xSIZE"), from the last symbol without one ("symbol"), else from
     * the section's start (".bss"), to the next data boundary or the section's end
     * (region_end) */
    *size = 0;
    const struct range *sec = NULL;
    for (size_t i = 0; i < m->nsecs && !sec; i++)
        if (off >= m->secs[i].lo && off < m->secs[i].hi)
            sec = &m->secs[i];
    if (!sec)
        return NULL;
    size_t lo = first_bound_above(m, off);
    uint64_t s0 = sec->lo;
    const char *name = sec->name;
    if (lo > 0 && m->bounds[lo - 1].value >= sec->lo) {
        size_t k = lo - 1;                /* of equal starts: the largest, its best alias */
        while (k > 0 && m->bounds[k - 1].value == m->bounds[k].value)
            k--;
        while (k + 1 < lo && m->bounds[k + 1].value == m->bounds[k].value &&
               m->bounds[k + 1].size == m->bounds[k].size)
            k++;
        const struct fsym *b = &m->bounds[k];
        name = demangled(m, b->name);
        s0 = b->value;
        if (b->size && off >= b->value + b->size) {
            char buf[4200];
            snprintf(buf, sizeof(buf), "%s+0x%llx", name, (unsigned long long)b->size);
            s0 = b->value + b->size;
            name = fin_intern(buf);
        }
    }
    uint64_t e = region_end(m, s0);
    *sym_off = s0;
    *size = e > off ? e - s0 : 0;
    return name;
}

void fin_symbols_close(void)
{
    for (size_t i = 0; i < g_nmods; i++) {
        struct mod *m = &g_mods[i];
        free(m->funcs);
        free(m->objs);
        free(m->bounds);
        free(m->secs);
        for (int k = 0; k < 2; k++)
            if (m->maps[k].addr)
                munmap(m->maps[k].addr, m->maps[k].len);
        free(m->syms);
        if (m->dbg)
            bfd_close(m->dbg);
        if (m->abfd)
            bfd_close(m->abfd);
    }
    free(g_mods);
    g_mods = NULL;
    g_nmods = 0;
    free(g_memo);
    g_memo = NULL;
    g_nmemo = g_capmemo = 0;
}
