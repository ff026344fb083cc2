/*
 * dlopen_main.c — allocations from a library that is loaded, unloaded and loaded
 * again (its load base may differ the second time).
 *
 * Usage: dlopen_main [LIB]   (default: libdlalloc.so next to this executable,
 *                             found through /proc/self/exe)
 *   1. dlopen(LIB), dl_alloc(600000) and free it, dlclose     (dl_first)
 *   2. mmap an anonymous 16 MiB region and touch every page, then map anonymous
 *      memory over the exact range the library occupied (MAP_FIXED_NOREPLACE; the
 *      library usually sits in a small gap next to libc, which the 16 MiB region
 *      cannot fill). The old range is reused, so the second dlopen loads the
 *      library at a different base. Both mappings stay until exit.
 *   3. dlopen(LIB) again, dl_alloc(700000) and free it, dlclose   (dl_second)
 * The traced malloc call itself is in dlopen_lib.c (site dl_alloc). The two lines
 * here that call dl_alloc end with CALLER-colon-dl_first / CALLER-colon-dl_second
 * comments: they are frame 2 of the chain.
 *
 * Output: "ok", exit 0. Errors to stderr, exit 1.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef void *(*dl_alloc_fn)(size_t);

#define PAGE 4096u

struct span {
    uintptr_t addr;      /* in: an address inside the object */
    uintptr_t lo, hi;    /* out: page-rounded extent of its PT_LOAD segments */
};

static int find_span(struct dl_phdr_info *info, size_t size, void *data)
{
    struct span *s = data;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    int hit = 0;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
        if (a < lo)
            lo = a;
        if (b > hi)
            hi = b;
        if (s->addr >= a && s->addr < b)
            hit = 1;
    }
    if (!hit)
        return 0;
    s->lo = lo & ~(uintptr_t)(PAGE - 1);
    s->hi = (hi + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    return 1;
}

static void *load(const char *path, dl_alloc_fn *fn)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen_main: %s\n", dlerror());
        exit(1);
    }
    *(void **)fn = dlsym(h, "dl_alloc");
    if (!*fn) {
        fprintf(stderr, "dlopen_main: %s\n", dlerror());
        exit(1);
    }
    return h;
}

int main(int argc, char **argv)
{
    char path[PATH_MAX];
    if (argc > 1) {
        snprintf(path, sizeof path, "%s", argv[1]);
    } else {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        if (n < 0) {
            perror("dlopen_main: readlink /proc/self/exe");
            return 1;
        }
        path[n] = '\0';
        char *slash = strrchr(path, '/');
        size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
        if (dir + sizeof "libdlalloc.so" > sizeof path) {
            fprintf(stderr, "dlopen_main: path too long\n");
            return 1;
        }
        memcpy(path + dir, "libdlalloc.so", sizeof "libdlalloc.so");
    }

    dl_alloc_fn fn;
    void *h = load(path, &fn);
    struct span sp = { (uintptr_t)fn, 0, 0 };
    if (!dl_iterate_phdr(find_span, &sp)) {
        fprintf(stderr, "dlopen_main: dl_alloc is in no loaded object\n");
        return 1;
    }
    void *a = fn(600000);                        /* CALLER:dl_first */
    if (!a)
        return 1;
    free(a);
    dlclose(h);

    const size_t len = (size_t)16 << 20;
    const int prot = PROT_READ | PROT_WRITE, anon = MAP_PRIVATE | MAP_ANONYMOUS;
    char *m = mmap(NULL, len, prot, anon, -1, 0);
    if (m == MAP_FAILED) {
        perror("dlopen_main: mmap");
        return 1;
    }
    for (size_t i = 0; i < len; i += PAGE)
        ((volatile char *)m)[i] = 1;
    /* Take the old range. If part of it is already taken (EEXIST), the library
     * cannot go back there either; a kernel older than 4.17 treats the flag as a
     * hint and may place the mapping elsewhere, which is harmless. */
    size_t old_len = sp.hi - sp.lo;
    char *pin = mmap((void *)sp.lo, old_len, prot, anon | MAP_FIXED_NOREPLACE, -1, 0);
    if (pin != MAP_FAILED)
        pin[0] = 1;

    h = load(path, &fn);
    void *b = fn(700000);                        /* CALLER:dl_second */
    if (!b)
        return 1;
    free(b);
    dlclose(h);

    puts("ok");
    return 0;
}
