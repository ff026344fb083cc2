/* hmi_accept.c — whether libhmalloc.so acts on a placement in this process
 * (docs/formats.md §6): the process is the program the placement was made for (or
 * the one `hmtune run` launched), and the placement fits this program and build. */
#include "hmi_accept.h"

#include "hm_modmap.h"
#include "hm_options.h"

#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int hmi_is_program(const char *exe, const char *path)
{
    struct stat a, b;
    if (!strcmp(exe, path))
        return 1;
    return *exe && stat(exe, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* Whether this process is the one `hmtune run` launched (HMTUNE_TARGET: the program's
 * path, or its name) rather than a helper in its command line (a shell, env, timeout,
 * mpirun). Unset: every process is. */
int hmi_is_target(const char *exe)
{
    const char *t = hm_opt_raw(HM_OPT_TARGET);
    if (!t)
        return 1;
    if (strchr(t, '/'))
        return hmi_is_program(exe, t);
    return strcmp(t, base_name(exe)) == 0;
}

/* A helper that places would take blocks from the tiers' capacity on the node and,
 * at its exit, write its statistics over the program's (issue 13): only the
 * program the placement was made for places. */
int hmi_places_here(const struct hmi_placement *pl, const char *exe)
{
    return pl->program ? hmi_is_program(exe, pl->program) : hmi_is_target(exe);
}

/* Whether path could never be loaded into this process by dlopen: it does not exist,
 * or it is a program (ET_EXEC, or ET_DYN with an interpreter: a PIE executable). */
static int not_loadable(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    Elf64_Ehdr eh;
    int prog = 0;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
        !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_ident[EI_CLASS] == ELFCLASS64) {
        prog = eh.e_type == ET_EXEC;
        for (unsigned i = 0; !prog && eh.e_type == ET_DYN && i < eh.e_phnum && i < 256; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) !=
                (ssize_t)sizeof ph)
                break;
            prog = ph.p_type == PT_INTERP;
        }
    }
    close(fd);
    return prog;
}

/* 1 when the placement belongs to this program: it names the executable, or every
 * module it names that is not loaded now may still be (an existing shared library,
 * which the program may dlopen later). Otherwise *missing is a module it names that
 * cannot be loaded here (another program, or a file that is not there). A loaded
 * module with a frame offset past its end means another build: -1, *missing that
 * module. */
int hmi_fits_program(const struct hmi_placement *pl, const char *exe, const char **missing)
{
    hm_modmap_find((uint64_t)(uintptr_t)&hmi_fits_program);     /* fill the module table */
    uint32_t nm = hm_modmap_count();
    int names_exe = 0;
    *missing = NULL;
    for (uint32_t k = 0; k < pl->nmodules; k++) {
        const struct hmi_module *pm = &pl->modules[k];
        if (!strcmp(pm->path, "??"))
            continue;
        const struct hm_module *found = NULL;
        for (uint32_t id = 1; id <= nm && !found; id++) {
            const struct hm_module *m = hm_modmap_get(id);
            if (m && m->path_len == pm->len && !memcmp(m->path, pm->path, pm->len))
                found = m;
        }
        if (!found) {
            if (!*missing && not_loadable(pm->path))
                *missing = pm->path;
            continue;
        }
        names_exe |= !strcmp(pm->path, exe);
        uint64_t extent = found->hi - found->base;
        for (uint32_t s = 0; s < pl->nsites; s++) {
            const struct hmi_site *st = &pl->sites[s];
            for (uint32_t f = 0; f < st->nframes; f++) {
                if (st->frames[f].module == k && st->frames[f].offset >= extent) {
                    *missing = pm->path;
                    return -1;
                }
            }
        }
    }
    return names_exe || !*missing;
}
