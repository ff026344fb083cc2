/* hmi_placement_lines.h — one line of placement.txt read into the placement
 * (hmi_placement_lines.c): the version line, and every other line by its keyword. */
#ifndef HMI_PLACEMENT_LINES_H
#define HMI_PLACEMENT_LINES_H

#include "hmi_reader.h"

/* The first line, '# hmtune placement v1' or v2: 0, or -1 (message in ps->err). */
int hmi_pl_version(struct parser *ps, struct span line) HM_HIDDEN;
/* Any later line (comments and blank lines included): 0, or -1. */
int hmi_pl_line(struct parser *ps, struct span raw) HM_HIDDEN;

#endif
