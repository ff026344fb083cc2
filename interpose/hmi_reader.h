/* hmi_reader.h — what the parts of the placement reader share (hmi_reader.c): the
 * parser's state over one input, the arena every result lives in, the string sets that
 * find a tier, chain, module or static object already listed, and the "line N: why"
 * messages. hmi_placement.c reads the file, hmi_placement_lines.c each line. No malloc
 * family, no stdio. */
#ifndef HMI_READER_H
#define HMI_READER_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"
#include "hmi_fields.h"
#include "hmi_placement_data.h"

#define NOT_FOUND UINT32_MAX

/* Open-addressing set of byte strings; slot holds key index + 1, 0 when empty. */
struct strset {
    struct span *keys;
    uint64_t *hashes;
    uint32_t *slot;
    size_t mask;
    uint32_t n;
};

/* The reader's state over one input (hmi_placement_parse's). */
struct parser {
    const char *text;
    size_t len, pos;
    uint32_t lineno;
    char *err;
    size_t errlen;
    struct hmi_placement *out;
    char *arena;
    size_t used, sused;                   /* struct cursor, string cursor */
    struct strset tiers, chains, modules, objects;
    struct hmi_frame *frames;
    uint32_t nframes;
    struct hmi_range *ranges;
    uint32_t nranges;
    int have_depth, have_window, have_program;
};

static const struct span NONE = { 0, 0 };

/* ---- errors: "line N: why[ 'what'][ NUM]" into ps->err; -1 ---- */
int hmi_pl_fail_at(struct parser *ps, uint32_t line, const char *why, struct span what,
                   int has_num, uint64_t num) HM_HIDDEN;
int hmi_pl_fail(struct parser *ps, const char *why, struct span what) HM_HIDDEN;

/* ---- the arena and the string sets ---- */

/* bytes at the arena's struct cursor (moved on by bytes rounded up to 8); a copy of s
 * with its NUL at the arena's string cursor. */
void *hmi_pl_carve(struct parser *ps, size_t bytes) HM_HIDDEN;
const char *hmi_pl_copy_str(struct parser *ps, struct span s) HM_HIDDEN;
/* The arena bytes a set of at most cap keys takes (*slots: its slot count); set_init
 * carves them for s. */
size_t hmi_pl_set_bytes(size_t cap, size_t *slots) HM_HIDDEN;
void hmi_pl_set_init(struct parser *ps, struct strset *s, size_t cap) HM_HIDDEN;
/* Index of k (hash h) in s, or NOT_FOUND with *where = the free slot to add it at. */
uint32_t hmi_pl_set_find(const struct strset *s, struct span k, uint64_t h, size_t *where)
    HM_HIDDEN;
/* Add k at slot where (from hmi_pl_set_find); its index. */
uint32_t hmi_pl_set_add(struct strset *s, size_t where, struct span k, uint64_t h) HM_HIDDEN;

#endif
