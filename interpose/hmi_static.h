/* hmi_static.h — placing static variables (placement.txt `static` lines,
 * docs/formats.md §5, §6): at start-up, before the application's main, each placed
 * static's whole pages are bound or remapped to its tier:
 *
 *   numa:LIST, memkind:KIND   mbind(2) of the 4 KiB pages inside the object, with the
 *                             tier's policy and nodes (the backend's, hmi_backend.h),
 *                             MPOL_MF_MOVE: pages already touched move too;
 *   thp                       madvise(MADV_HUGEPAGE) of the 2 MiB-aligned part;
 *   hugetlb (and memkind's    the 2 MiB-aligned part is replaced by a MAP_FIXED |
 *   hugepage kinds)           MAP_HUGETLB mapping (mbind'ed for memkind) holding its
 *                             contents: only when the pool has the pages (the kernel
 *                             reserves them before it replaces anything), and only in
 *                             a writable segment outside RELRO.
 *
 * A static-split line's ranges are placed the same way each, by the whole pages
 * inside both the range and the object (offsets from the object's start); a range
 * that does not fit or whose mapping fails is left as it was, the others placed.
 *
 * The pages at the object's ends that it shares with its neighbours stay where they
 * are. Each placed range is charged to its tier's capacity. A static is refused —
 * left as it is, one warning line, counted with its reason — when its tier cannot
 * place, its module is not loaded, the range is not inside one loaded segment of the
 * module (an absurd size, another build), no data symbol of that size starts at its
 * offset in the module's symbol tables (.symtab, .dynsym, else the debug file found
 * by build-id under HMTUNE_DEBUG_ROOT, default /usr/lib/debug), no whole page lies
 * inside it, the tier is full, or the kernel refuses (no hugepage free, mbind or
 * madvise failing). Nothing here ends the process.
 *
 * Memory: mmap only (the results table, a temporary copy for hugetlb); the module
 * files are read through mmap. No malloc family, no stdio. */
#ifndef HMI_STATIC_H
#define HMI_STATIC_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"
#include "hmi_backend.h"
#include "hmi_placement.h"

enum { HMI_STATIC_REFUSED = 0, HMI_STATIC_PLACED = 1 };

/* What became of one range of a static-split line: the whole pages placed (len 0:
 * none, the range left where it was). */
struct hmi_static_part {
    uint64_t addr, len;
};

/* What became of one static line. */
struct hmi_static_result {
    int state;                      /* HMI_STATIC_* */
    uint64_t addr, len;             /* the range placed: whole pages inside the object;
                                       static-split: the first part placed, and the
                                       bytes of all the parts placed */
    char why[HMI_REASON_MAX];       /* refused: why (one line, no newline); static-split
                                       placed: why the first range left was left */
    uint32_t nparts;                /* static-split: its ranges (0: a static line) */
    uint32_t parts_left;            /* static-split: ranges left where they were */
    struct hmi_static_part part[HMI_MAX_RANGES];   /* per range, in its line's order */
};

/* Place every static of pl (the placement's tiers already opened with
 * hmi_backend_open, tier i = pl->tiers[i]); exe is /proc/self/exe (the main
 * program's module path). warn: nonzero to write one line to stderr per refused
 * static (at most a few, then a count). 0, or -1 when the results table cannot be
 * mapped (then nothing is placed and hmi_static_results gives none). */
int hmi_static_place(const struct hmi_placement *pl, const char *exe, int warn) HM_HIDDEN;

/* The results, one per pl->statics entry, in its order (NULL and 0 before
 * hmi_static_place). */
const struct hmi_static_result *hmi_static_results(uint32_t *n) HM_HIDDEN;
/* Whether address a is in the range of a placed static (a placed part of a
 * static-split's); then [*lo, *hi) is that range.
 * Lock-free (the results are written once, at start-up). */
int hmi_static_placed_at(uint64_t a, uint64_t *lo, uint64_t *hi) HM_HIDDEN;

/* The pages libhmalloc binds or remaps a static's range in, for a tier of this kind
 * and whether it maps hugepages: 2 MiB or 4 KiB. */
uint64_t hmi_static_granule(enum hmi_backend_kind kind, int map_huge) HM_HIDDEN;

#endif
