/* hmi_static_elf.c — see hmi_static_int.h: the checks hmi_static.c makes before it
 * places a static variable's pages, that the module is loaded, that one of its
 * segments holds the object and that its symbol tables (or its debug file's) have an
 * object of that size there. Module files are read through mmap: no malloc family, no
 * stdio. */
#include "hmi_static_int.h"
#include "hm_options.h"

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the module as it is loaded ---- */

/* dl_iterate_phdr names the main program "" and a library by the path it was loaded
 * by: as hm_modmap.c, the program is /proc/self/exe. */
static int find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct hmi_loaded *m = arg;
    (void)size;
    const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : m->exe;
    if (strlen(name) != m->len || memcmp(name, m->path, m->len) != 0)
        return 0;
    m->found = 1;
    m->base = info->dlpi_addr;
    m->ph = info->dlpi_phdr;
    m->phnum = info->dlpi_phnum;
    return 1;
}

void hmi_static_find(struct hmi_loaded *m)
{
    dl_iterate_phdr(find_cb, m);
}

int hmi_static_segment(const struct hmi_loaded *m, uint64_t off, uint64_t size,
                       uint32_t *flags, int *relro)
{
    int found = -1;
    *relro = 0;
    for (int i = 0; i < m->phnum; i++) {
        const ElfW(Phdr) *p = &m->ph[i];
        if (p->p_type == PT_LOAD && off >= p->p_vaddr && p->p_memsz >= size &&
            off - p->p_vaddr <= p->p_memsz - size) {
            *flags = p->p_flags;
            found = 0;
        }
        if (p->p_type == PT_GNU_RELRO && off < p->p_vaddr + p->p_memsz &&
            off + size > p->p_vaddr)
            *relro = 1;
    }
    return found;
}

/* ---- the symbol starting at the object's offset ---- */

/* As finalize's is_data_section and is_data_bound. */
static int data_section(const Elf64_Shdr *s)
{
    return (s->sh_type == SHT_PROGBITS || s->sh_type == SHT_NOBITS) &&
           (s->sh_flags & (SHF_ALLOC | SHF_EXECINSTR | SHF_TLS)) == SHF_ALLOC && s->sh_addr &&
           s->sh_size;
}

static int data_bound(const Elf64_Sym *s, const Elf64_Shdr *sh, unsigned shnum)
{
    int type = ELF64_ST_TYPE(s->st_info);
    return (type == STT_NOTYPE || type == STT_OBJECT || type == STT_COMMON) && s->st_value &&
           s->st_shndx != SHN_UNDEF && s->st_shndx < shnum && data_section(&sh[s->st_shndx]);
}

/* Add what the ELF file at path (.symtab, .dynsym, section headers) says to *r. */
static void scan_file(const char *path, uint64_t off, uint64_t size, struct hmi_symscan *r)
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
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff == 0 || eh->e_shoff > len ||
        eh->e_shnum > (len - eh->e_shoff) / sizeof(Elf64_Shdr)) {
        munmap(addr, len);
        return;
    }
    r->read = 1;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
    uint64_t end = off + size;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (!data_section(&sh[i]) || off < sh[i].sh_addr || off >= sh[i].sh_addr + sh[i].sh_size)
            continue;
        r->prev |= off == sh[i].sh_addr;         /* unnamed data from the section's start */
        r->at_end |= end == sh[i].sh_addr + sh[i].sh_size;
    }
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if ((sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM) ||
            sh[i].sh_entsize != sizeof(Elf64_Sym) || sh[i].sh_offset > len ||
            sh[i].sh_size > len - sh[i].sh_offset)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(img + sh[i].sh_offset);
        size_t n = sh[i].sh_size / sizeof(*sym);
        for (size_t k = 0; k < n; k++) {
            if (!data_bound(&sym[k], sh, eh->e_shnum))
                continue;
            uint64_t v = sym[k].st_value, sz = sym[k].st_size;
            if (ELF64_ST_TYPE(sym[k].st_info) == STT_OBJECT && v == off && sz) {
                if (sz == size) {
                    r->same = 1;
                } else {
                    r->other = 1;
                    r->other_size = sz;
                }
            }
            if ((sz && v + sz == off) || (!sz && v == off))
                r->prev = 1;
            if (v > off && v < end)
                r->inside = 1;
            if (v == end)
                r->at_end = 1;
        }
    }
    munmap(addr, len);
}

/* The module's separate debug file, ROOT/.build-id/xx/yyyy.debug for its GNU build-id
 * note, for each root of HMTUNE_DEBUG_ROOT (default /usr/lib/debug), as finalize looks
 * its symbols up: the first one there is scanned too. */
static void scan_debug_file(const struct hmi_loaded *m, uint64_t off, uint64_t size,
                            struct hmi_symscan *r)
{
    const unsigned char *id = NULL;
    size_t idlen = 0;
    for (int i = 0; i < m->phnum && !id; i++) {
        const ElfW(Phdr) *p = &m->ph[i];
        if (p->p_type != PT_NOTE)
            continue;
        const unsigned char *q = (const unsigned char *)(uintptr_t)(m->base + p->p_vaddr);
        const unsigned char *end = q + p->p_memsz;
        while (q + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)q;
            size_t name = (nh->n_namesz + 3) & ~3u, desc = (nh->n_descsz + 3) & ~3u;
            const unsigned char *d = q + sizeof(*nh) + name;
            if (d + desc > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                !memcmp(q + sizeof(*nh), "GNU", 4) && nh->n_descsz >= 2 && nh->n_descsz <= 64) {
                id = d;
                idlen = nh->n_descsz;
                break;
            }
            q = d + desc;
        }
    }
    if (!id)
        return;
    const char *roots = hm_opt_str(HM_OPT_DEBUG_ROOT);      /* /usr/lib/debug unless set */
    for (const char *p = roots; *p;) {
        size_t n = strcspn(p, ":");
        char path[4096 + 200];             /* the root, then at most 11 + 129 + 7 bytes */
        if (n > 0 && n < 4096) {
            memcpy(path, p, n);
            size_t l = n + hm_fmt_str(path + n, "/.build-id/");
            for (size_t k = 0; k < idlen; k++) {
                path[l++] = "0123456789abcdef"[id[k] >> 4];
                path[l++] = "0123456789abcdef"[id[k] & 15];
                if (k == 0)
                    path[l++] = '/';
            }
            memcpy(path + l, ".debug", sizeof ".debug");
            if (access(path, R_OK) == 0) {
                scan_file(path, off, size, r);
                return;
            }
        }
        p += n;
        if (*p == ':')
            p++;
    }
}

void hmi_static_symbols(const struct hmi_loaded *m, uint64_t off, uint64_t size,
                        struct hmi_symscan *r)
{
    scan_file(m->path, off, size, r);
    scan_debug_file(m, off, size, r);
}
