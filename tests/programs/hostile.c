/*
 * hostile.c — what a program may do to its heap blocks that a placement must survive
 * or refuse as glibc does. One site per run: the block of SIZE MiB (default 8),
 * filled with the byte 1.
 *
 * Sites by marker name (the call line ends with a SITE-colon-<name> comment):
 *   block  malloc(SIZE MiB), in every mode
 * Statics: g_arr, 16 MiB of .bss (STATIC-colon-arr), written only in mode fork.
 *
 * Modes (argv[1]):
 *   free OFF      free(p + OFF); then a malloc of the same size: prints "overlap" when
 *                 it returns memory inside p (shared memory), else "apart"; exit 0.
 *                 OFF 0 is a correct free. glibc aborts on OFF > 0 (SIGABRT).
 *   realloc OFF   realloc(p + OFF, 2 * SIZE MiB); prints "moved" when it returns; exit 0.
 *   fork          fills g_arr with 1 too, forks a child that writes every page of the
 *                 block and of g_arr and exits with 0 when it read back what it wrote
 *                 (a SIGBUS kills it); the parent prints "child exited N" or "child
 *                 killed by signal N", then checks its own copies are unchanged:
 *                 "parent ok"; exit 0 when both are right.
 *   dontneed      madvise(MADV_DONTNEED) of the 4 KiB page at or after 1 MiB: prints
 *                 "madvise R" (0 or errno) and "page reads B" (the byte after: 0 as
 *                 anonymous memory gives, 1 when the page kept its data); then
 *                 mprotect(PROT_READ) of the page at or after 2 MiB + 4 KiB:
 *                 "mprotect R".
 *                 exit 0.
 *   twice         fills the block, prints "ready", waits for a line on stdin, then
 *                 mallocs a second block of the size (SITE-colon-second) and fills it
 *                 with 2; prints "ok" when both hold what was written; exit 0.
 *   grow          a small block (SITE-colon-grow) realloc'ed up to SIZE MiB in steps
 *                 of 64 KiB, its bytes checked at each step, beside g_arr (filled with 1
 *                 and checked at the end): prints "ok"; exit 0.
 *   mremap        mremap(MREMAP_MAYMOVE) of the block to twice its size: prints "moved"
 *                 (then uses and munmaps the new mapping) or "refused E" (errno, as
 *                 glibc's blocks give: they are not page aligned), then frees the block
 *                 and prints "ok"; exit 0.
 * Usage: hostile MODE [ARG] [SIZE_MIB]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

static unsigned char g_arr[16 << 20];                              /* STATIC:arr */

static int usage(void)
{
    fprintf(stderr, "usage: hostile free OFF|realloc OFF|fork|dontneed [SIZE_MIB]\n");
    return 2;
}

/* The first 4 KiB page boundary at or after a. */
static unsigned char *page_at(unsigned char *a)
{
    return (unsigned char *)(((uintptr_t)a + 4095) & ~(uintptr_t)4095);
}

static int check_fill(const volatile unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i += 4096)
        if (p[i] != v)
            return 0;
    return p[n - 1] == v;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    const char *mode = argv[1];
    int with_arg = !strcmp(mode, "free") || !strcmp(mode, "realloc");
    if (with_arg && argc < 3)
        return usage();
    long off = with_arg ? atol(argv[2]) : 0;
    int size_at = with_arg ? 3 : 2;
    size_t n = (argc > size_at ? (size_t)atol(argv[size_at]) : 8) * MIB;
    if (n == 0 || off < 0)
        return usage();
    unsigned char *p = malloc(n);                                  /* SITE:block */
    if (!p)
        return 1;
    memset(p, 1, n);
    if (!strcmp(mode, "free")) {
        free(p + off);
        unsigned char *q = malloc(n);
        printf("%s\n", q && q < p + n && q + n > p && off ? "overlap" : "apart");
        fflush(stdout);
        return 0;
    }
    if (!strcmp(mode, "realloc")) {
        unsigned char *q = realloc(p + off, 2 * n);
        printf("%s\n", q ? "moved" : "refused");
        return 0;
    }
    if (!strcmp(mode, "fork")) {
        memset(g_arr, 1, sizeof g_arr);
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            memset(p, 2, n);                        /* copy-on-write of every page */
            memset(g_arr, 2, sizeof g_arr);
            _exit(check_fill(p, n, 2) && check_fill(g_arr, sizeof g_arr, 2) ? 0 : 3);
        }
        int st = 0;
        if (waitpid(pid, &st, 0) != pid)
            return 1;
        if (WIFSIGNALED(st))
            printf("child killed by signal %d\n", WTERMSIG(st));
        else
            printf("child exited %d\n", WEXITSTATUS(st));
        int mine = check_fill(p, n, 1) && check_fill(g_arr, sizeof g_arr, 1);
        printf("parent %s\n", mine ? "ok" : "changed");
        free(p);
        return WIFEXITED(st) && WEXITSTATUS(st) == 0 && mine ? 0 : 1;
    }
    if (!strcmp(mode, "dontneed")) {
        if (n < 4 * MIB)
            return usage();
        unsigned char *pg = page_at(p + MIB), *ro = page_at(p + 2 * MIB + 4096);
        int r = madvise(pg, 4096, MADV_DONTNEED);
        printf("madvise %d\n", r ? errno : 0);
        printf("page reads %d\n", ((volatile unsigned char *)pg)[100]);
        r = mprotect(ro, 4096, PROT_READ);
        printf("mprotect %d\n", r ? errno : 0);
        if (!r)
            mprotect(ro, 4096, PROT_READ | PROT_WRITE);
        free(p);
        return 0;
    }
    if (!strcmp(mode, "mremap")) {
        void *q = mremap(p, n, 2 * n, MREMAP_MAYMOVE);
        if (q == MAP_FAILED) {
            printf("refused %d\n", errno);
            free(p);
        } else {
            printf("moved\n");
            memset(q, 3, 2 * n);
            munmap(q, 2 * n);
        }
        printf("ok\n");
        return 0;
    }
    if (!strcmp(mode, "twice")) {
        printf("ready\n");
        fflush(stdout);
        char line[16];
        if (!fgets(line, sizeof line, stdin))
            return 1;
        unsigned char *q = malloc(n);                              /* SITE:second */
        if (!q)
            return 1;
        memset(q, 2, n);
        printf("%s\n", check_fill(p, n, 1) && check_fill(q, n, 2) ? "ok" : "changed");
        free(q);
        free(p);
        return 0;
    }
    if (!strcmp(mode, "grow")) {
        memset(g_arr, 1, sizeof g_arr);
        unsigned char *g = malloc(64);                             /* SITE:grow */
        size_t have = 64;
        if (!g)
            return 1;
        memset(g, 7, have);
        for (size_t want = 64 << 10; want <= n; want += 64 << 10) {
            unsigned char *h = realloc(g, want);                   /* SITE:grow_realloc */
            if (!h || !check_fill(h, have, 7))
                return 1;
            memset(h + have, 7, want - have);
            g = h, have = want;
        }
        printf("%s\n", check_fill(g, have, 7) && check_fill(g_arr, sizeof g_arr, 1) ? "ok"
                                                                                : "changed");
        free(g);
        free(p);
        return 0;
    }
    return usage();
}
