/* hmi_boot.h — libhmalloc.so's bootstrap (hmi_boot.c) as its entry points
 * (hmi_shim.c) call it: the wrapped allocator resolved, and the initialization run
 * once. What the bootstrap sets up and the entry points read on every call is in
 * hmi_entry.h, which this includes. Internal to libhmalloc.so. */
#ifndef HMI_BOOT_H
#define HMI_BOOT_H

#include "hm_util.h"
#include "hmi_entry.h"

/* Resolve the wrapped allocator once; 0 when hmi_rm is usable. Nested and concurrent
 * callers meanwhile get -1 (and use the static arena). */
NOASAN int hmi_resolve_real(void) HM_HIDDEN;
/* Initialize (load the placement, open the tiers, build the site table) unless
 * another call already does or did. */
void hmi_init_once(void) HM_HIDDEN;

#endif
