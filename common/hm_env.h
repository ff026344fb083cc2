/* hm_env.h — options from HMTUNE_* environment variables and the MPI rank. */
#ifndef HM_ENV_H
#define HM_ENV_H

#include <stdint.h>
#include "hm_util.h"

/* Rank from OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or SLURM_PROCID (first
 * set wins); -1 when none is set. *size likewise from the matching SIZE variable. */
int hm_env_rank(int *size) HM_HIDDEN;
/* Size option (K/M/G suffixes); def when unset; -1 returned on a malformed value. */
int hm_env_size(const char *name, uint64_t def, uint64_t *out) HM_HIDDEN;

#endif
