/* hmi_fdshim.c — libhmalloc.so's descriptor wrappers (common/hm_fdwrap.h; the same as
 * libhmtrace.so's, collect/hmc_fdshim.c). The one descriptor the library keeps that
 * the application must not take is libunwind's memory-validation pipe, made while the
 * library unwinds (hmi_t_busy): a daemon closing every descriptor closed it, and
 * libunwind made it again at the lowest free numbers, the application's 0 and 1. The
 * copy of stderr kept for the exit summary (hmi_boot.c) is not registered on purpose:
 * the application's close must release it (a parent reading that stderr waits for its
 * end), and it is checked to be the same file before it is used. */
#include "hmi_entry.h"
#include "hm_fdwrap.h"

EXPORT int close(int fd) { return hm_fdw_close(fd, hmi_t_busy); }

EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
    return hm_fdw_close_range(first, last, flags, hmi_t_busy);
}

EXPORT void closefrom(int lowfd) { hm_fdw_closefrom(lowfd, hmi_t_busy); }
EXPORT int dup2(int oldfd, int newfd) { return hm_fdw_dup(oldfd, newfd, 0, 0, hmi_t_busy); }
EXPORT int dup3(int oldfd, int newfd, int flags) { return hm_fdw_dup(oldfd, newfd, flags, 1, hmi_t_busy); }
EXPORT int pipe2(int fds[2], int flags) { return hm_fdw_pipe2(fds, flags, hmi_t_busy); }
EXPORT int pipe(int fds[2]) { return hm_fdw_pipe2(fds, 0, hmi_t_busy); }
