/* hmi_advise.h — madvise and mprotect over placed hugetlb memory (hmi_advise.c, in
 * libhmalloc.so: it exports both). */
#ifndef HMI_ADVISE_H
#define HMI_ADVISE_H

#include <stdint.h>
#include "hm_util.h"

/* Bytes cleared in partial hugepages for MADV_DONTNEED/MADV_FREE, and bytes of
 * hugepages put back in ordinary pages for mprotect, so far. */
void hmi_advise_stats(uint64_t *zeroed, uint64_t *demoted) HM_HIDDEN;

#endif
