/* hmi_placement.h — the interposer's reader of placement.txt v1 (docs/formats.md §5,
 * written by advisor/placement.py).
 *
 * It runs in the interposer's constructor, before the application's allocator may be
 * used: no malloc family, no stdio. All results live in one mmap'd arena sized from
 * the input; hmi_placement_free unmaps it. It accepts what advisor.placement's
 * read_placement accepts, and also refuses NUL bytes, lines over HMI_LINE_MAX bytes,
 * chains of more than HMI_MAX_FRAMES frames, numbers over 64 bits, frame offsets over
 * 48 bits (a packed frame's offset field, hm_modmap.h) and inputs of 4 GiB or more. */
#ifndef HMI_PLACEMENT_H
#define HMI_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"

#define HMI_MAX_FRAMES 64u
#define HMI_LINE_MAX   65536u

/* One distinct module path of the file; frames refer to it by index, so the
 * interposer maps each path to an hm_modmap id once. */
struct hmi_module {
    const char *path;       /* NUL-terminated copy, one per distinct path */
    uint32_t len;
    uint64_t hash;          /* FNV-1a as hm_module.path_hash */
};

struct hmi_frame {
    uint32_t module;        /* index into hmi_placement.modules */
    uint64_t offset;        /* from the module's load base, < 2^48 */
};

struct hmi_tier {
    const char *name;       /* 1-64 of [A-Za-z0-9_.-] */
    const char *backend;    /* memkind:KIND, numa:LIST, hugetlb, thp or default */
    uint64_t capacity;      /* bytes per process; 0 when unlimited */
    int unlimited;          /* only the last tier (the fallback), always */
    uint32_t line;
};

struct hmi_site {
    uint32_t tier;          /* index into hmi_placement.tiers */
    uint32_t nframes;       /* 1..HMI_MAX_FRAMES, <= depth */
    const struct hmi_frame *frames;   /* innermost first */
    uint32_t line;
};

struct hmi_placement {
    struct hmi_tier *tiers;
    uint32_t ntiers;
    uint64_t depth;
    uint64_t size_min, size_max;      /* size-window MIN MAX */
    struct hmi_site *sites;
    uint32_t nsites;
    struct hmi_module *modules;
    uint32_t nmodules;
    void *arena;                      /* everything above lives here */
    size_t arena_size;
};

/* Parse len bytes of text. 0: *out filled (free with hmi_placement_free). -1: *out
 * zeroed and err holds "line N: why" (truncated to errlen, always NUL-terminated). */
int hmi_placement_parse(const char *text, size_t len, struct hmi_placement *out,
                        char *err, size_t errlen) HM_HIDDEN;
/* The same for a file, read with open/read into an mmap'd buffer. */
int hmi_placement_load(const char *path, struct hmi_placement *out,
                       char *err, size_t errlen) HM_HIDDEN;
void hmi_placement_free(struct hmi_placement *p) HM_HIDDEN;

#endif
