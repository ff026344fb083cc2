/* hm_fdwrap.c — see hm_fdwrap.h. */
#include "hm_fdwrap.h"
#include "hm_fds.h"
#include "hm_modmap.h"
#include "hm_proc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1u << 2)
#endif

static int (*g_close)(int);
static void (*g_closefrom)(int);

void hm_fdw_resolve_real(void)
{
    /* dlsym returns void *; copying it into a function pointer goes through memcpy */
    void *s = dlsym(RTLD_NEXT, "close");
    memcpy(&g_close, &s, sizeof s);
    s = dlsym(RTLD_NEXT, "closefrom");
    memcpy(&g_closefrom, &s, sizeof s);
}

static int real_close(int fd)
{
    int (*fn)(int) = g_close;
    return fn ? fn(fd) : (int)syscall(SYS_close, fd);
}

int hm_fdw_close(int fd, int inside)
{
    if (hm_unlikely(hm_fd_held(fd))) {
        if (!inside)
            return 0;                 /* the application's close: the library's stays open */
        hm_fd_release(fd);
    }
    return real_close(fd);
}

/* Close [lo, hi] (none of it the library's). 0, or -1 with errno. */
static int close_span(unsigned lo, unsigned hi, int flags)
{
    long r = syscall(SYS_close_range, lo, hi, flags);
    if (r == 0 || errno != ENOSYS)
        return (int)r;
    /* before Linux 5.9: glibc's closefrom scans /proc/self/fd; else one by one */
    if (hi == UINT_MAX && g_closefrom && lo <= INT_MAX && !flags) {
        g_closefrom((int)lo);
        return 0;
    }
    for (unsigned fd = lo; fd <= hi && fd <= INT_MAX; fd++) {
        real_close((int)fd);
        if (fd == hi)
            break;
    }
    return 0;
}

/* CLOSE_RANGE_CLOEXEC closes nothing (the library's are close-on-exec already): it
 * passes whole, and so does a range without a library descriptor. */
int hm_fdw_close_range(unsigned first, unsigned last, int flags, int inside)
{
    if (first > last || ((unsigned)flags & CLOSE_RANGE_CLOEXEC) || inside ||
        hm_fd_next_held(first, last) < 0)
        return close_span(first, last, flags);
    int rc = 0, err = 0;
    unsigned lo = first;
    for (;;) {
        int h = hm_fd_next_held(lo, last);
        if (h < 0)
            break;
        if ((unsigned)h > lo && close_span(lo, (unsigned)h - 1, flags) != 0) {
            rc = -1;
            err = errno;
        }
        if ((unsigned)h == last)
            goto done;
        lo = (unsigned)h + 1;
    }
    if (close_span(lo, last, flags) != 0) {
        rc = -1;
        err = errno;
    }
done:
    if (rc)
        errno = err;
    return rc;
}

void hm_fdw_closefrom(int lowfd, int inside)
{
    int saved = errno;
    hm_fdw_close_range(lowfd < 0 ? 0u : (unsigned)lowfd, UINT_MAX, 0, inside);
    errno = saved;
}

/* When the call fails after the library's descriptor moved away, the number still
 * holds the library's old copy: closed. */
int hm_fdw_dup(int oldfd, int newfd, int flags, int three, int inside)
{
    int moved = !inside && oldfd != newfd && hm_fd_held(newfd);
    if (moved)
        hm_fd_evict(newfd);
    long r = three ? syscall(SYS_dup3, oldfd, newfd, flags) : syscall(SYS_dup2, oldfd, newfd);
    if (r < 0 && moved) {
        int err = errno;
        syscall(SYS_close, newfd);
        errno = err;
    }
    return (int)r;
}

int hm_fdw_pipe2(int fds[2], int flags, int inside)
{
    long r = syscall(SYS_pipe2, fds, flags);
    if (r != 0 || !inside || !hm_proc_mine())
        return (int)r;
    int saved = errno;
    int in_module = hm_modmap_find((uint64_t)(uintptr_t)fds) != NULL;
    for (int i = 0; i < 2; i++)
        fds[i] = hm_fd_keep(fds[i], in_module ? &fds[i] : NULL, HM_FD_PIPE);
    errno = saved;
    return 0;
}
