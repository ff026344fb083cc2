/* hm_fdwrap.h — the bodies of a preload library's descriptor wrappers (hm_fds.h says
 * which descriptors are the library's and why). The library exports close,
 * close_range, closefrom, dup2, dup3, pipe and pipe2, each a one-line call to these
 * (libhmtrace.so: collect/hmc_fdshim.c), passing `inside`: whether the calling thread is
 * inside the library (its busy flag). Then:
 *   - close(fd) of a library descriptor returns 0 and leaves it open, unless inside
 *     (the library's own libraries closing theirs: libunwind before it re-creates its
 *     pipe), where it is unregistered and closed;
 *   - close_range and closefrom close everything else in their range;
 *   - dup2/dup3 onto a library descriptor first move the library's to another number
 *     (hm_fd_evict), then give the application the number it asked for;
 *   - pipe/pipe2 made inside the library (libunwind's memory-validation pipe) get both
 *     ends moved high and registered, the caller's array kept as their slot when it is
 *     a module's static storage (never a stack array).
 * In a process that does not own the library's state (hm_proc.h) every call passes
 * through. Async-signal-safe; errno as the real calls leave it. */
#ifndef HM_FDWRAP_H
#define HM_FDWRAP_H

#include "hm_util.h"

/* Find the C library's close and closefrom (RTLD_NEXT); until then, and where it has
 * none, system calls are used. */
void hm_fdw_resolve_real(void) HM_HIDDEN;

int hm_fdw_close(int fd, int inside) HM_HIDDEN;
int hm_fdw_close_range(unsigned first, unsigned last, int flags, int inside) HM_HIDDEN;
void hm_fdw_closefrom(int lowfd, int inside) HM_HIDDEN;
/* dup2 (three = 0: flags unused) or dup3. */
int hm_fdw_dup(int oldfd, int newfd, int flags, int three, int inside) HM_HIDDEN;
int hm_fdw_pipe2(int fds[2], int flags, int inside) HM_HIDDEN;

#endif
