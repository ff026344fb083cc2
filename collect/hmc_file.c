/* hmc_file.c — the process's stream file (hmc_file.h): its name and creation, the one
 * write per chunk, and its reopening by its path (reopen_stream says when). */
#include "hmc_file.h"
#include "hm_fds.h"
#include "hm_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int hmc_fd = -1;
static char g_path[PATH_MAX];

const char *hmc_stream_path(void) { return g_path; }

/* The stream file closed behind the tracer's back (hmc_fdshim.c keeps the
 * application's close and dup2 off it; a raw close_range system call is not seen):
 * opened again by its path, kept high, and made the stream's descriptor unless
 * another thread did so first. Async-signal-safe. The descriptor to use, or -1. */
static int reopen_stream(int bad)
{
    int fd = hm_fd_raise(open(g_path, O_WRONLY | O_APPEND | O_CLOEXEC));
    if (fd < 0)
        return -1;
    int expect = bad;
    if (!__atomic_compare_exchange_n(&hmc_fd, &expect, fd, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        syscall(SYS_close, fd);
        return expect;
    }
    if (hm_fd_is(bad, &hmc_fd))
        hm_fd_release(bad);
    hm_fd_register(fd, &hmc_fd, HM_FD_FILE);
    return fd;
}

int hmc_stream_write(const void *buf, size_t len)
{
    if (hm_unlikely(!hm_proc_mine()))
        return 0;                     /* a child the tracer does not follow: not its file */
    int fd = __atomic_load_n(&hmc_fd, __ATOMIC_ACQUIRE);
    if (fd < 0)
        return EBADF;
    if (hm_unlikely(!hm_fd_is(fd, &hmc_fd)) && g_path[0])
        fd = reopen_stream(fd);       /* its number is another tracer descriptor's now */
    if (fd < 0)
        return EBADF;
    int err = hm_write_all(fd, buf, len);
    if (hm_unlikely(err == EBADF) && g_path[0]) {
        fd = reopen_stream(fd);
        err = fd < 0 ? EBADF : hm_write_all(fd, buf, len);
    }
    return err;
}

int hmc_file_open(const char *outdir, const char *host)
{
    char num[24];
    size_t dl = strlen(outdir);
    for (unsigned k = 0; k < 1000; k++) {
        size_t n = 0;
        if (dl + strlen(host) + 64 >= sizeof(g_path))
            return ENAMETOOLONG;
        memcpy(g_path, outdir, dl);
        n = dl;
        g_path[n++] = '/';
        n += hm_fmt_str(g_path + n, host);
        g_path[n++] = '.';
        n += hm_fmt_u64(g_path + n, (uint64_t)getpid());
        g_path[n++] = '.';
        size_t kl = hm_fmt_u64(num, k);
        memcpy(g_path + n, num, kl);
        n += kl;
        n += hm_fmt_str(g_path + n, ".hmr");
        g_path[n] = '\0';
        int fd = open(g_path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            hm_fd_keep(fd, &hmc_fd, HM_FD_FILE);   /* above the application's numbers */
            return 0;
        }
        if (errno != EEXIST)
            return errno;
    }
    return EEXIST;
}
