/* hmi_placement_data.h — what a placement holds once read (struct hmi_placement: its
 * tiers, sites and split sites, static objects, their modules, frames and byte ranges)
 * and the limits of placement.txt's grammar (docs/formats.md §5). The limits are the
 * grammar's, and hmtune/core/placement.py holds the same numbers
 * (tests/py/test_placement_grammar.py compares them). The reader (hmi_placement.h)
 * fills it; the interposer's parts read it. Types and constants only. */
#ifndef HMI_PLACEMENT_DATA_H
#define HMI_PLACEMENT_DATA_H

#include <stddef.h>
#include <stdint.h>
#include "hm_events.h"

#define HMI_MAX_FRAMES  ((unsigned)HM_KEY_MAX_FRAMES) /* frames in a site chain */
#define HMI_LINE_MAX    65536u        /* bytes in a line, without its line break */
#define HMI_MAX_TIER_LINES 16u        /* tier lines: HMI_MAX_TIERS (hmi_tiers.h) */
#define HMI_INPUT_MAX   0xfffffffeu   /* bytes in the file (4 GiB - 2) */
#define HMI_PROGRAM_MAX 4095u         /* bytes in the program path (PATH_MAX - 1) */
#define HMI_VERSION_MAX 2u            /* placement versions read: 1 and 2 (split lines) */
#define HMI_MAX_RANGES  64u           /* ranges of a split line */
#define HMI_RANGE_ALIGN 4096u         /* range starts and ends are multiples of it */
#define HMI_RANGE_END_MAX 0x1000000000000  /* range ends at most 2^48 */
/* Numbers (capacity, depth, size-window) are at most 2^64 - 1 and frame offsets
 * below 2^48 (HM_FRAME_MODSHIFT, hm_modmap.h: a packed frame's offset field). */

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

/* [start, end): byte offsets from an object's start (v2 `split` lines). */
struct hmi_range {
    uint64_t start, end;
};

/* A `site` line (nranges 0: the whole object goes to the tier) or a `split` line
 * (nranges 1..HMI_MAX_RANGES, strictly increasing, not touching: only those bytes of
 * each object go to the tier, the rest to ordinary memory). */
struct hmi_site {
    uint32_t tier;          /* index into hmi_placement.tiers */
    uint32_t nframes;       /* 1..HMI_MAX_FRAMES, <= depth */
    const struct hmi_frame *frames;   /* innermost first */
    uint32_t line;
    uint32_t nranges;       /* 0: a site line */
    const struct hmi_range *ranges;
};

/* `static TIER SIZE MODULE+0xOFF`: a static variable of SIZE bytes at OFF from the
 * module's load base (offset + size <= 2^48); or (v2) `static-split TIER SIZE RANGES
 * MODULE+0xOFF`: only the byte ranges RANGES of it (offsets from the object's start,
 * ends at most SIZE rounded up to HMI_RANGE_ALIGN). Its module is kept apart from the
 * sites' (hmi_placement.modules): a static whose module is not loaded is skipped on
 * its own (hmi_static.c), it does not make the placement another program's. */
struct hmi_static {
    uint32_t tier;          /* index into hmi_placement.tiers */
    uint32_t line;
    const char *module;     /* NUL-terminated copy of the module path */
    uint32_t module_len;
    uint64_t offset, size;
    uint32_t nranges;       /* 0: a static line (the whole object) */
    const struct hmi_range *ranges;
};

struct hmi_placement {
    uint32_t version;                 /* 1 or 2 (line 1) */
    uint32_t nsplit;                  /* sites with ranges (split lines) */
    const char *program;              /* `program PATH`: the program it was made for, or NULL */
    struct hmi_tier *tiers;
    uint32_t ntiers;
    uint64_t depth;
    uint64_t size_min, size_max;      /* size-window MIN MAX */
    struct hmi_site *sites;
    uint32_t nsites;
    struct hmi_static *statics;
    uint32_t nstatics;
    struct hmi_module *modules;
    uint32_t nmodules;
    void *arena;                      /* everything above lives here */
    size_t arena_size;
};

#endif
