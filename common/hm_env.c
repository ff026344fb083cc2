/* hm_env.c — see hm_env.h. */
#include "hm_env.h"

#include <stdlib.h>

static int parse_int(const char *s, int *out)
{
    if (!s || !*s)
        return -1;
    long v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 100000000)
            return -1;
        v = v * 10 + (*s - '0');
    }
    *out = (int)v;
    return 0;
}

int hm_env_rank(int *size)
{
    static const char *const vars[][2] = {
        { "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE" },
        { "PMI_RANK", "PMI_SIZE" },
        { "PMIX_RANK", "PMIX_SIZE" },
        { "SLURM_PROCID", "SLURM_NTASKS" },
    };
    for (unsigned i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        int r;
        if (parse_int(getenv(vars[i][0]), &r) == 0) {
            int s = 0;
            if (size)
                *size = parse_int(getenv(vars[i][1]), &s) == 0 ? s : 0;
            return r;
        }
    }
    if (size)
        *size = 0;
    return -1;
}
