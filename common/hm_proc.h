/* hm_proc.h — whether the calling process is the one that set a preload library up.
 *
 * A child made by fork(2) inherits the library's state: glibc's fork runs the
 * library's pthread_atfork handler there, which sets the state up again for the
 * child, but a child of a raw clone(2) (syscall(SYS_clone, SIGCHLD, ...)) or of
 * SYS_fork runs no handler. Its copy of the state describes the parent: the perf
 * rings are not mapped there (the kernel does not copy them), the stream file and
 * its chunk numbers are the parent's. Such a child must leave the state alone.
 *
 * The answer comes from a page the kernel zeroes in every child (MADV_WIPEONFORK,
 * Linux 4.14), so asking costs one load; on a kernel without it, from the pid
 * recorded when the state was set up (one getpid system call). Async-signal-safe. */
#ifndef HM_PROC_H
#define HM_PROC_H

#include <stdint.h>
#include "hm_util.h"

/* The calling process owns the library's state from now on: at set-up, and in a
 * glibc fork child once the atfork handler has set the state up again. Not from a
 * signal handler (the first call maps the page). */
void hm_proc_claim(void) HM_HIDDEN;

extern volatile uint32_t *hm_proc_page HM_HIDDEN;   /* nonzero word: claimed here */
int hm_proc_mine_slow(void) HM_HIDDEN;               /* no such page: compare pids */

/* Whether the calling process claimed the state (0 before any claim). */
HM_INLINE int hm_proc_mine(void)
{
    volatile uint32_t *p = hm_proc_page;
    if (hm_likely(p != NULL))
        return *p != 0;
    return hm_proc_mine_slow();
}

#endif
