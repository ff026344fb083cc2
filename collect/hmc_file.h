/* hmc_file.h — the process's stream file (hmc_file.c): created under a name of its
 * own in the trace directory, written with one write(2) per chunk on an O_APPEND
 * descriptor kept above the application's numbers, and opened again by its path when
 * the descriptor was closed behind the tracer's back. The tracer core's buffers
 * (hmc_buffers.c) and the process records (hmc_core.c) go through it. */
#ifndef HMC_FILE_H
#define HMC_FILE_H

#include <stddef.h>
#include "hm_util.h"

extern int hmc_fd HM_HIDDEN;                  /* the process's stream file */

/* Create the stream file outdir/HOST.PID.K.hmr, K the first number not taken: 0, or
 * the errno value. The descriptor goes in hmc_fd. */
int hmc_file_open(const char *outdir, const char *host) HM_HIDDEN;
/* len bytes onto the stream file, with one write (errno value, or 0). The file is
 * opened again by its path when its descriptor was closed behind the tracer's back;
 * in a child the tracer does not follow, nothing is written. Async-signal-safe. */
int hmc_stream_write(const void *buf, size_t len) HM_HIDDEN;
/* Path of this process's stream file (for tests). */
const char *hmc_stream_path(void) HM_HIDDEN;

#endif
