/* hm_env.h — the MPI rank from the launcher's environment (HMTUNE_* options are in
 * hm_options.h). */
#ifndef HM_ENV_H
#define HM_ENV_H

#include <stdint.h>
#include "hm_util.h"

/* Rank from OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or SLURM_PROCID (first
 * set wins); -1 when none is set. *size likewise from the matching SIZE variable. */
int hm_env_rank(int *size) HM_HIDDEN;

#endif
