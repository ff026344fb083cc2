/* hmi_entry.h — what libhmalloc.so's entry points (the malloc family in hmi_shim.c,
 * madvise and mprotect in hmi_advise.c, the descriptor wrappers in hmi_fdshim.c) read
 * on every call, set up by the bootstrap (hmi_boot.c): the wrapped allocator, the
 * initialization state, the size window the entry points compare every request with,
 * whether a tier is open, and the loaded placement (hmi_entry.c defines them). They
 * are plain hidden globals (one PC-relative load each, as the file-local statics they
 * were) and the thread's recursion flag is initial-exec TLS. Internal to
 * libhmalloc.so. */
#ifndef HMI_ENTRY_H
#define HMI_ENTRY_H

#include <stddef.h>
#include <stdint.h>
#include "hm_real.h"
#include "hm_util.h"
#include "hmi_placement.h"

/* The entry points and the pass-through path run before AddressSanitizer has set up
 * its shadow memory when its start-up itself allocates (sanitizer test builds):
 * they are not ASan-instrumented; what they call once initialized is. */
#define NOASAN __attribute__((no_sanitize("address")))
#define EXPORT __attribute__((visibility("default"))) NOASAN

extern struct hm_alloc_fns hmi_rm HM_HIDDEN;          /* the wrapped allocator */
extern int (*hmi_real_dlclose)(void *) HM_HIDDEN;

enum { HMI_ST_NONE, HMI_ST_INIT, HMI_ST_READY, HMI_ST_OFF };
extern _Atomic int hmi_state HM_HIDDEN;
/* The size window as lo and span = hi - lo: n is in it when n - lo <= span
 * (unsigned). Until initialized everything is "in" (the slow path initializes);
 * afterwards an empty window is lo = SIZE_MAX, span = 0. */
extern size_t hmi_win_lo HM_HIDDEN, hmi_win_span HM_HIDDEN;
extern int hmi_owning HM_HIDDEN;        /* a tier is open: pointers may be ours */
extern int hmi_lazy HM_HIDDEN;          /* the first call may initialize (no ASan) */
/* HMTUNE_BASELINE (hmtune compare's reference runs): no site matching; every request
 * of at least the baseline's minimum (all: 1 byte) goes to the first tier while it has
 * room; all also places the placement's static lines.
 * Counted as the virtual site index hmi_pl.nsites. */
extern int hmi_baseline HM_HIDDEN;
extern struct hmi_placement hmi_pl HM_HIDDEN;
/* Set while this thread is inside the interposer: its own allocations pass through. */
extern __thread int hmi_t_busy __attribute__((tls_model("initial-exec"))) HM_HIDDEN;

#endif
