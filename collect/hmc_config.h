/* hmc_config.h — the tracer core's settings, as hmc_boot.c reads them from the
 * HMTUNE_* options and hands them to hmc_core_init: where the stream file goes, the
 * smallest request traced, the call-site frames kept. Shared by the core's files
 * (hmc_core.c, hmc_buffers.c, hmc_records.c) and its users through hmc_core.h. */
#ifndef HMC_CONFIG_H
#define HMC_CONFIG_H

#include <stdint.h>

struct hmc_config {
    const char *outdir;   /* directory for the raw stream files */
    uint64_t min_size;    /* smallest traced request */
    int depth;            /* call-site frames kept */
};

#endif
