/* hm_modmap.h — the process's loaded modules, for turning a return address into
 * (module, offset from the module's load base) as DESIGN.md §2 requires.
 *
 * Lookups are lock-free (a seqlock over a sorted array); the table is refreshed
 * from dl_iterate_phdr only when an address is not found and the loader's
 * add/sub counters moved, or when a dlclose was seen (hm_modmap_invalidate).
 * Module ids are never reused within a process: a library dlclosed and dlopened
 * again gets a new id, so old frames keep meaning what they meant. */
#ifndef HM_MODMAP_H
#define HM_MODMAP_H

#include <stdint.h>
#include "hm_events.h"
#include "hm_util.h"

#define HM_MAX_MODULES 4096u
#define HM_FRAME_MODSHIFT HM_KEY_OFFSET_BITS      /* common/site_key.tsv */
#define HM_FRAME_OFFMASK ((1ull << HM_FRAME_MODSHIFT) - 1)

struct hm_module {
    uint32_t id;          /* 1-based; 0 means "no module" */
    uint32_t path_len;
    uint64_t base;        /* dlpi_addr */
    uint64_t lo, hi;      /* union of PT_LOAD segments, [lo, hi) */
    uint64_t path_hash;   /* FNV-1a of path, used by the interposer's site hash */
    const char *path;     /* absolute path where known; NUL-terminated */
};

/* Called (with the table lock held; it may only write(2)) for each new module. */
typedef void (*hm_modmap_newmod_fn)(const struct hm_module *m);

void hm_modmap_init(hm_modmap_newmod_fn cb) HM_HIDDEN;
/* Address → packed frame (module id << 48 | offset). Unknown: id 0, raw address. */
uint64_t hm_modmap_frame(uint64_t addr) HM_HIDDEN;
/* Mark the table stale (after dlclose/dlopen). */
void hm_modmap_invalidate(void) HM_HIDDEN;
/* Bumped by every invalidation: caches keyed by raw addresses compare it. */
uint32_t hm_modmap_generation(void) HM_HIDDEN;
/* Module by id (NULL if unknown). Entries are immutable once published. */
const struct hm_module *hm_modmap_get(uint32_t id) HM_HIDDEN;
uint32_t hm_modmap_count(void) HM_HIDDEN;
/* The module containing addr, refreshing the table if needed; NULL if none. */
const struct hm_module *hm_modmap_find(uint64_t addr) HM_HIDDEN;
/* fork(): the lock must not be held across fork by another thread. */
void hm_modmap_atfork_prepare(void) HM_HIDDEN;
void hm_modmap_atfork_release(void) HM_HIDDEN;
uint64_t hm_fnv1a(const void *p, uint64_t n, uint64_t h) HM_HIDDEN;

#endif
