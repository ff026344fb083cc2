/* hm_unwind.h — the call-site chain of an allocation (DESIGN.md §2): raw return
 * addresses above the interposed call, the tool's own frames removed. Shared by
 * collect and interpose so both compute the same key for the same call. */
#ifndef HM_UNWIND_H
#define HM_UNWIND_H

#include <stdint.h>
#include "hm_util.h"

#define HM_MAX_DEPTH 32

/* Once per process, before the first hm_backtrace: per-thread unwind caches (no
 * global lock on the hot path) and the address range of the calling library. */
void hm_unwind_init(void *self_addr) HM_HIDDEN;
/* Fill out[0..depth) with return addresses, innermost first, excluding every frame
 * in the library that called hm_unwind_init. Returns the number stored. */
int hm_backtrace(uint64_t *out, int depth) HM_HIDDEN;
/* Whether addr is in the library that called hm_unwind_init. */
int hm_in_self(uint64_t addr) HM_HIDDEN;
/* Pack each raw address as (module id << 48 | offset), in place. */
void hm_frames_pack(uint64_t *frames, int n) HM_HIDDEN;

#endif
