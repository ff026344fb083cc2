/* closefds.c — a daemon's start under a preload library (issue 42): every descriptor
 * is closed, then the program's own file must get number 0, and its allocations are
 * still traced.
 *
 * Usage: closefds OUT [MODE]
 *   close  (default) close(fd) for every fd 0..1023, one by one
 *   range  close_range(0, ~0U, 0), then closefrom(0)
 *   dup2   the close loop; then OUT dup2'd onto every other number still open (none
 *          when nothing is preloaded) and each of those closed again
 *   raw    the close_range system call itself, which no wrapper sees (a raw loop of
 *          close system calls on a kernel without it)
 * stdout is closed, so it writes to OUT: "fd N" (the number open() gave OUT), after
 * the allocations "open below 512: LIST" (the numbers below 512 open then, the
 * directory stream's own left out) and "ok". Exit 0; 2 on a bad argument or when OUT
 * cannot be opened.
 *
 * Sites (nothing is traced before the closes): fd_first 310000 (right after them,
 * before OUT is opened, through nocfi_malloc, an assembly frame without unwind
 * information; freed), fd_last 320000 (freed), fd_loop 330000 x 2000
 * (malloc/free pairs: more records than one buffer holds, so the stream is written
 * during the run, not only at exit). */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* malloc called through a frame without unwind information (hand-written assembly,
 * as in JIT code): an unwinder has to guess that frame and checks each address it
 * reads there, which libunwind does through a pipe of its own. */
__asm__(".text\n"
        ".type nocfi_malloc, @function\n"
        "nocfi_malloc:\n"
        "    push %rbp\n"
        "    mov %rsp, %rbp\n"
        "    call malloc@PLT\n"
        "    pop %rbp\n"
        "    ret\n"
        ".size nocfi_malloc, .-nocfi_malloc\n");
void *nocfi_malloc(size_t n);

/* nocfi_malloc from 64 KiB below main's frame: on stack pages no unwind before it
 * has checked (libunwind remembers the last pages it checked). */
static __attribute__((noinline)) char *deep_nocfi_malloc(size_t n)
{
    volatile char pad[65536];
    pad[0] = 0;
    char *p = nocfi_malloc(n);                               /* SITE:fd_first */
    pad[1] = pad[0];
    return p;
}

static void touch(void *p, size_t n)
{
    volatile char *c = p;
    for (size_t i = 0; i < n; i += 4096)
        c[i] = 1;
}

/* The numbers open now, below `below` (the directory stream's own left out). */
static int open_fds(int *out, int max, int below)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        int fd = atoi(e->d_name);
        if (fd != dirfd(d) && fd < below && n < max)
            out[n++] = fd;
    }
    closedir(d);
    for (int i = 1; i < n; i++)       /* readdir's order is the kernel's: sort */
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
            int t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 2 ? argv[2] : "close";
    if (argc < 2 || (strcmp(mode, "close") && strcmp(mode, "range") && strcmp(mode, "dup2") &&
                     strcmp(mode, "raw")))
        return 2;
    if (!strcmp(mode, "range")) {
        close_range(0, ~0U, 0);
        closefrom(0);
    } else if (!strcmp(mode, "raw")) {
        if (syscall(SYS_close_range, 0, ~0U, 0) != 0)
            for (int fd = 0; fd < 1024; fd++)
                syscall(SYS_close, fd);
    } else {
        for (int fd = 0; fd < 1024; fd++)
            close(fd);
    }
    /* the first traced call, right after the closes and before the program's open(),
     * through a frame the unwinder guesses */
    char *first = deep_nocfi_malloc(310000);                 /* CALLER:fd_first */
    touch(first, 310000);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 2;
    dprintf(fd, "fd %d\n", fd);
    if (!strcmp(mode, "dup2")) {
        int others[256];
        int n = open_fds(others, 256, 1 << 30);
        for (int i = 0; i < n; i++)
            if (others[i] != fd && dup2(fd, others[i]) == others[i])
                close(others[i]);
    }
    free(first);
    char *last = malloc(320000);                             /* SITE:fd_last */
    touch(last, 320000);
    free(last);
    for (int i = 0; i < 2000; i++) {
        char *p = malloc(330000);                            /* SITE:fd_loop */
        touch(p, 4096);
        free(p);
    }
    int low[64];
    int n = open_fds(low, 64, 512);
    dprintf(fd, "open below 512:");
    for (int i = 0; i < n; i++)
        dprintf(fd, " %d", low[i]);
    dprintf(fd, "\nok\n");
    return 0;
}
