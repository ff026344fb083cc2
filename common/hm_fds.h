/* hm_fds.h — the descriptors a preload library keeps open across the run (the
 * tracer's: its stream file, its perf events, libunwind's memory-validation pipe).
 *
 * They are kept out of the application's way and out of its reach:
 *   - high: moved to the lowest free number at or above a floor (F_DUPFD_CLOEXEC),
 *     512, or half the RLIMIT_NOFILE soft limit when that is below 1024; where that
 *     fails (the limit is reached) the descriptor stays where the kernel put it. The
 *     application's open() then gets the numbers it expects (0 after closing 0..2);
 *   - registered: a table says which numbers are the library's and where the library
 *     keeps each one (its slot), so that the library's close, close_range, closefrom,
 *     dup2 and dup3 wrappers (collect/hmc_fdshim.c) leave them open when the
 *     application closes them (a daemon closing every descriptor at start) and move
 *     them to another number, slot updated, when the application dup2s over one.
 * A registered number counts only in the process that claimed the library's state
 * (hm_proc.h): in a child the tracer does not follow, they are the child's to close.
 *
 * Numbers at or above HM_FD_MAX are used as they are but not registered. Every
 * function here is async-signal-safe (system calls and atomics) and keeps errno. */
#ifndef HM_FDS_H
#define HM_FDS_H

#include "hm_util.h"

#define HM_FD_MAX 16384
#define HM_FD_FLOOR 512

/* What a descriptor is (hm_fd_close_kind closes every one of a kind). */
enum hm_fd_kind { HM_FD_FILE = 1, HM_FD_PERF = 2, HM_FD_PIPE = 3 };

/* fd moved high (hm_fd_raise), registered as kind, and stored in *slot (when slot is
 * not NULL: where the library keeps it, updated when the descriptor has to move).
 * Returns the descriptor to use; a negative fd is returned as it is. */
int hm_fd_keep(int fd, int *slot, int kind) HM_HIDDEN;
/* fd at the lowest free number at or above the floor, its old number closed; fd
 * itself when it is there already or cannot be moved. Not registered. */
int hm_fd_raise(int fd) HM_HIDDEN;
/* Register fd (kept in *slot, which may be NULL) without moving it. */
void hm_fd_register(int fd, int *slot, int kind) HM_HIDDEN;
/* The library is done with the descriptor kept in *slot: unregistered, closed (close(2)
 * itself, never the wrappers) and *slot set to -1. A number the table gives to another
 * slot now is not closed: it was closed behind the library's back and reused for
 * another of its descriptors. */
void hm_fd_drop(int *slot) HM_HIDDEN;
/* Unregister fd without closing it (it was closed behind the library's back). */
void hm_fd_release(int fd) HM_HIDDEN;
/* Whether the table still gives fd to *slot (1 for numbers it does not keep): 0 when
 * fd was closed behind the library's back and reused for another of its descriptors. */
int hm_fd_is(int fd, const int *slot) HM_HIDDEN;
/* Whether fd is one of the library's, in the process that owns them. */
int hm_fd_held(int fd) HM_HIDDEN;
/* The lowest registered number in [lo, hi], or -1 (for close_range). */
int hm_fd_next_held(unsigned lo, unsigned hi) HM_HIDDEN;
/* The application wants fd's number (dup2/dup3 onto it): the library's descriptor
 * moves to another number and its slot follows; fd itself stays open until the
 * application's call replaces it. -1 when no number was free: then the slot holds -1
 * (the library stops using the number) and fd is no longer registered. */
int hm_fd_evict(int fd) HM_HIDDEN;
/* Close every registered descriptor of kind (a fork child: the parent's perf events,
 * which count the parent's threads). */
void hm_fd_close_kind(int kind) HM_HIDDEN;

#endif
