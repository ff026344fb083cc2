/* hmi_demote.h — hugetlb memory of the interposer's put back in ordinary pages
 * (hmi_demote.c): for a fork child's private copies (hmi_fork.c) and where the
 * application changes part of a hugepage (hmi_advise.c). */
#ifndef HMI_DEMOTE_H
#define HMI_DEMOTE_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"

/* Replace [a, a + len) (2 MiB aligned, hugetlb, protection prot) with a private copy
 * in ordinary pages moved over it by mremap, THP advised when thp: 0, or -1 when no
 * memory could be had for the copy (the range is left as it was). The hugepages go
 * back to the pool once no process maps them. Async-signal-safe. */
int hmi_demote(uintptr_t a, size_t len, int prot, int thp) HM_HIDDEN;

/* Whether the 4 KiB page at a (mapped) is part of a hugetlb mapping: the kernel
 * refuses MADV_COLD there (and on mlocked memory, which is taken as hugetlb: the
 * callers then do what hugetlb needs, which is right for both). MADV_COLD only
 * deactivates an ordinary page; callers ask of pages they are about to discard or
 * change. */
int hmi_is_hugetlb(uintptr_t a) HM_HIDDEN;

#endif
