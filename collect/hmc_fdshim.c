/* hmc_fdshim.c — libhmtrace.so's descriptor wrappers: the application cannot close
 * or replace the tracer's descriptors (common/hm_fds.h says which they are and how
 * they are kept high; common/hm_fdwrap.h what each wrapper does).
 *
 * Why: a daemon's start (close every number below 1024, or closefrom(0), close_range(0,
 * ~0U)) closed the stream file and the perf events the tracer opened before main, so
 * the trace was lost ("Bad file descriptor"), and libunwind's pipe, made again at the
 * lowest free numbers, took the application's 0 and 1. Inside the tracer (hmc_busy:
 * libunwind during an unwind) closes pass through and pipes become the tracer's. A
 * descriptor closed behind the wrappers' back (a raw close_range system call) is
 * noticed when it is next used: the stream file is opened again by its path
 * (hmc_file.c); a perf event's ring keeps working without its descriptor; libunwind
 * makes its pipe again, which becomes the tracer's. */
#include "hmc_core.h"
#include "hm_fdwrap.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int close(int fd) { return hm_fdw_close(fd, hmc_busy); }

EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
    return hm_fdw_close_range(first, last, flags, hmc_busy);
}

EXPORT void closefrom(int lowfd) { hm_fdw_closefrom(lowfd, hmc_busy); }
EXPORT int dup2(int oldfd, int newfd) { return hm_fdw_dup(oldfd, newfd, 0, 0, hmc_busy); }
EXPORT int dup3(int oldfd, int newfd, int flags) { return hm_fdw_dup(oldfd, newfd, flags, 1, hmc_busy); }
EXPORT int pipe2(int fds[2], int flags) { return hm_fdw_pipe2(fds, flags, hmc_busy); }
EXPORT int pipe(int fds[2]) { return hm_fdw_pipe2(fds, 0, hmc_busy); }
