/* hmi_fields.h — the field checks of placement.txt v1/v2 (hmi_placement_lines.c): numbers,
 * tier names, backends and frames, each as hmtune/core/placement.py and hmtune/core/backends.py
 * check them. Byte spans into the input; no allocation. */
#ifndef HMI_FIELDS_H
#define HMI_FIELDS_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"

struct span { const char *p; size_t n; };

/* Python's str.strip()/regex \s white space, in ASCII. */
static inline int hmi_is_ws(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static inline int hmi_is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Decimal digits: 0 ok, -1 not one or more ASCII digits, -2 over 64 bits. */
int hmi_dec(struct span s, uint64_t *v) HM_HIDDEN;
/* Two digit strings compared as numbers of any size: <0, 0, >0. */
int hmi_numcmp(struct span a, struct span b) HM_HIDDEN;
/* hmtune.core.backends.grammar_problem(b) is None. */
int hmi_backend_ok(struct span b) HM_HIDDEN;
/* 1-64 of [A-Za-z0-9_.-]. */
int hmi_name_ok(struct span s) HM_HIDDEN;
/* A stripped frame `module+0xHEX`: 0 ok, -1 malformed, -2 offset of 2^48 or more. */
int hmi_frame_parse(struct span f, struct span *mod, uint64_t *off) HM_HIDDEN;

#endif
