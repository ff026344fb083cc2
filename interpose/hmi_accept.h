/* hmi_accept.h — whether libhmalloc.so acts on a placement in this process
 * (docs/formats.md §6, "another program", "another build", HMTUNE_TARGET). */
#ifndef HMI_ACCEPT_H
#define HMI_ACCEPT_H

#include "hmi_placement.h"

/* 1 when this process is the one `hmtune run` launched (HMTUNE_TARGET names the
 * program exe, by path or by name; unset: every process is), 0 for its helpers (a
 * shell, env, timeout, mpirun). Only the target warns about a placement. */
int hmi_is_target(const char *exe);

/* 1 when path names the file exe (this process's /proc/self/exe): the same string,
 * or the same file (a symbolic link, another mount of it). */
int hmi_is_program(const char *exe, const char *path);

/* 1 when this process places and reports: the program named by the placement's
 * `program` line, or without one the target (hmi_is_target). Any other process
 * passes every call through and writes nothing. */
int hmi_places_here(const struct hmi_placement *pl, const char *exe);

/* 1 when placement pl belongs to program exe, 0 when it names a module that cannot be
 * loaded here (*missing: another program, a missing file), -1 when a loaded module's
 * frame offset lies past its end (*missing: that module; another build). */
int hmi_fits_program(const struct hmi_placement *pl, const char *exe, const char **missing);

#endif
