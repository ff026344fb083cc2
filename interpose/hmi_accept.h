/* hmi_accept.h — whether libhmalloc.so acts on a placement in this process
 * (docs/formats.md §6, "another program", "another build", HMTUNE_TARGET). */
#ifndef HMI_ACCEPT_H
#define HMI_ACCEPT_H

#include "hmi_placement.h"

/* 1 when this process is the one `hmtune run` launched (HMTUNE_TARGET names the
 * program exe; unset: every process is), 0 for its helpers (a shell, mpirun). */
int hmi_is_target(const char *exe);

/* 1 when placement pl belongs to program exe, 0 when it names a module that cannot be
 * loaded here (*missing: another program, a missing file), -1 when a loaded module's
 * frame offset lies past its end (*missing: that module; another build). */
int hmi_fits_program(const struct hmi_placement *pl, const char *exe, const char **missing);

#endif
