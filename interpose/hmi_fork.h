/* hmi_fork.h — fork and the hugetlb tiers (hmi_fork.c): the interposer's fork handlers
 * (hmi_boot.c) give a child private copies of the hugetlb mappings it inherits, so that
 * copy-on-write never needs a hugepage the pool does not have; the parent counts what
 * its children copied (run statistics, docs/formats.md §7). */
#ifndef HMI_FORK_H
#define HMI_FORK_H

#include <stdint.h>
#include "hm_util.h"

struct hmi_fork_stats {
    uint64_t forks;                 /* fork() calls the parent made */
    uint64_t copied_children;       /* children that reported their copies */
    uint64_t copied_maps;           /* hugetlb mappings they copied to ordinary pages */
    uint64_t copied_bytes;          /* of them, bytes */
    uint64_t left_bytes;            /* bytes a child could not copy (kept hugetlb) */
    uint64_t unknown;               /* children that ended before reporting */
};

/* From the fork handlers: prepare in the parent before fork (hugetlb: whether a
 * hugetlb tier of the interposer's is open, so a child may inherit its pages), then
 * parent or child after it. Async-signal-safe: syscalls and memcpy only. */
void hmi_fork_prepare(int hugetlb) HM_HIDDEN;
void hmi_fork_parent(void) HM_HIDDEN;
void hmi_fork_child(void) HM_HIDDEN;

void hmi_fork_stats(struct hmi_fork_stats *out) HM_HIDDEN;

#endif
