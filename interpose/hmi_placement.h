/* hmi_placement.h — the interposer's reader of placement.txt v1 and v2 (docs/formats.md §5,
 * written by hmtune/core/placement.py).
 *
 * It runs in the interposer's constructor, before the application's allocator may be
 * used: no malloc family, no stdio. All results live in one mmap'd arena sized from
 * the input; hmi_placement_free unmaps it. It accepts exactly what core.placement's
 * read_placement accepts (`hmtune run` checks the file with it before starting the
 * program; tests/py/test_placement_grammar.py feeds the same files to both readers).
 * What a placement holds once read, and the grammar's limits, are in
 * hmi_placement_data.h, which this includes. hmi_placement_load reads regular files
 * only, opened without blocking: a FIFO or a device as HMTUNE_PLACEMENT must not hang
 * the program's start. */
#ifndef HMI_PLACEMENT_H
#define HMI_PLACEMENT_H

#include <stddef.h>
#include "hm_util.h"
#include "hmi_placement_data.h"   /* struct hmi_placement and the grammar's limits */

/* Parse len bytes of text. 0: *out filled (free with hmi_placement_free). -1: *out
 * zeroed and err holds "line N: why" (truncated to errlen, always NUL-terminated). */
int hmi_placement_parse(const char *text, size_t len, struct hmi_placement *out,
                        char *err, size_t errlen) HM_HIDDEN;
/* The same for a file, read with open/read into an mmap'd buffer. */
int hmi_placement_load(const char *path, struct hmi_placement *out,
                       char *err, size_t errlen) HM_HIDDEN;
void hmi_placement_free(struct hmi_placement *p) HM_HIDDEN;

#endif
