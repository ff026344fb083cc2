/* hmi_static_int.h — what hmi_static.c asks of the module a static variable lives in
 * before it places the variable's pages (hmi_static_elf.c): the module as it is
 * loaded, the segment holding the object, and what the module's symbol tables say
 * about the object. Not for the rest of the interposer: use hmi_static.h. */
#ifndef HMI_STATIC_INT_H
#define HMI_STATIC_INT_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"

/* A module as it is loaded. */
struct hmi_loaded {
    const char *path, *exe;     /* what to find; the main program's path */
    size_t len;
    int found;
    uint64_t base;              /* dlpi_addr */
    const ElfW(Phdr) *ph;       /* its program headers (in its own memory) */
    int phnum;
};

/* Look m->path (m->len bytes) up among the loaded modules: found, base, ph and phnum
 * set when it is loaded. dl_iterate_phdr names the main program "", which is m->exe
 * here (/proc/self/exe, as hm_modmap.c names it). */
void hmi_static_find(struct hmi_loaded *m) HM_HIDDEN;

/* The loaded segment holding [off, off + size): its flags, and whether the range
 * touches RELRO (made read-only after relocation). 0, or -1 when no one segment does. */
int hmi_static_segment(const struct hmi_loaded *m, uint64_t off, uint64_t size,
                       uint32_t *flags, int *relro) HM_HIDDEN;

/* What the symbol tables say about [off, off + size): an object symbol of that size
 * starts there (same), or one of another size (other: its size), or it is unnamed
 * data, as finalize names it (fin_symbols.c): a symbol ends at off, or one without a
 * size starts there, or its data section does (prev); no data boundary lies inside it
 * (inside clear); one starts at its end or its section ends there (at_end). read: some
 * file's symbol tables could be read. */
struct hmi_symscan {
    int read, same, other, prev, inside, at_end;
    uint64_t other_size;
};

/* Add to *r (zeroed first by the caller) what the module file's .symtab, .dynsym and
 * section headers say, and then those of its separate debug file when one is found
 * by build-id under HMTUNE_DEBUG_ROOT (default /usr/lib/debug), as finalize finds it. */
void hmi_static_symbols(const struct hmi_loaded *m, uint64_t off, uint64_t size,
                        struct hmi_symscan *r) HM_HIDDEN;

#endif
