/* ps.h — hmtune-prvscan: the streaming core of `hmtune analyze`.
 *
 * One pass over a Paraver trace (.prv or .prv.gz): read lines (ps_input.c), parse
 * the header and records by hand (ps_parse.c), fuse the event lines of one thread at
 * one time and apply the allocation/sample semantics (ps_model.c; the samples':
 * ps_samples.c) over an ordered map of live blocks per task (ps_map.c), count samples
 * and sweep the lifetime facts per (task, site) in time order as blocks start and end
 * (ps_sites.c, ps_life.c), and
 * write allocs.csv, sites.tsv, profile.csv (ps_profile.c) and scan.json (ps_rows.c,
 * ps_output.c; ps_fmt.c writes their numbers). Memory is bounded by live blocks,
 * threads, sites and the profile's sampled (task, site, offset bucket)s, plus fixed
 * buffers; the per-allocation table goes through a file in sorted runs. */
#ifndef PS_H
#define PS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hm_events.h"

#define PS_LIKELY(x)   __builtin_expect(!!(x), 1)
#define PS_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Ids of apps, tasks and threads are packed into one 64-bit key; 2^21 of each is
 * far beyond any real trace, and a larger id is reported as a bad line. */
#define PS_ID_BITS 21
#define PS_ID_MAX  ((1u << PS_ID_BITS) - 1)

/* ---- the way out, and memory (ps_xalloc.c): exit(1) with one message ---- */
void ps_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void *ps_xmalloc(size_t n);
void *ps_xrealloc(void *p, size_t n);
void *ps_xcalloc(size_t n, size_t size);

/* ---- input: lines of a plain or gzip file (ps_input.c) ---- */
struct ps_input;
/* NULL with a message in err when the file cannot be opened. */
struct ps_input *ps_input_open(const char *path, char *err, size_t errlen);
/* The next run of whole lines, [*start, *end). Each ends in '\n', except a last line
 * that the file ends in the middle of: that one is alone in its run, *partial is 1,
 * and a '\n' is put at *end. 64 readable bytes follow *end. 1 run, 0 end of file,
 * -1 read error (err). */
int ps_input_lines(struct ps_input *in, const char **start, const char **end, int *partial,
                   char *err, size_t errlen);
uint64_t ps_input_done(struct ps_input *in);    /* bytes of the file consumed so far */
uint64_t ps_input_total(struct ps_input *in);   /* size of the file */
void ps_input_close(struct ps_input *in);

/* ---- parsing (ps_parse.c) ---- */
struct ps_header {
    uint64_t end_ns;         /* header end time, in ns */
    uint64_t scale;          /* 1 when times are ns (`_ns`), 1000 when µs (no suffix) */
    uint32_t napps;
    uint32_t ntasks, nthreads;   /* totals over all applications */
    uint32_t *task_base;     /* per app (0-based): tasks of the apps before it */
    uint32_t *task_threads;  /* per task (0-based, across apps): its threads */
};
int ps_parse_header(const char *line, size_t len, struct ps_header *h, char *err,
                    size_t errlen);
void ps_header_free(struct ps_header *h);

enum { PS_REC_SKIP = 0, PS_REC_STATE = 1, PS_REC_EVENT = 2, PS_REC_COMM = 3 };

struct ps_pair { uint64_t type, value; };

struct ps_record {
    int kind;                /* PS_REC_* */
    uint64_t *v;             /* fields after the kind: v[0] cpu, v[1] app, v[2] task,
                              * v[3] thread, v[4] time; events: type, value pairs from v[5] */
    size_t cap, npairs;
};
/* Parse the line at p. Every line must end in '\n' with 64 readable bytes after it,
 * as ps_input_lines's runs do. *next is the start of the following line. 0 ok (record
 * filled), -1 malformed line (message in err). */
int ps_parse_line(const char *p, struct ps_record *r, const char **next, char *err,
                  size_t errlen);

/* ---- per-(task, site) table: sampled accesses and lifetime facts (ps_sites.c) ---- */
struct ps_site {
    uint64_t site;
    uint32_t task;               /* output task number (1-based, across applications) */
    uint32_t swept;              /* the lifetime sweep has seen an endpoint */
    uint64_t samples, loads, stores, misses, weight;
    uint64_t n_allocs, max_size, total_bytes, first_alloc, last_free;
    int64_t live_bytes, live_blocks;     /* sweep state (ps_life.c) */
    uint64_t peak, live_ns, sweep_t;
    uint64_t fault_samples, faults;      /* sampled page faults, the faults they stand for */
    uint64_t sampled_blocks;             /* blocks of small-call sampling (unscaled) */
    uint64_t weight_extra;               /* the part of weight that scaling added */
    uint64_t scaled_samples;             /* samples in blocks standing for more than one */
    uint64_t unknown_weight;             /* site 0: weight of samples of class 4 */
    int has_class;                       /* site 0: some sample carried 41000023 */
    uint64_t prof_missed;                /* samples the profile found no block of it for */
    /* sampled weight by access kind (41000035's values; scaled as weight) and the part
     * scaling added (ps_kinds.c) */
    uint64_t kind_weight[HM_ACCESS_KIND_MAX + 1], kind_extra[HM_ACCESS_KIND_MAX + 1];
};
/* Entries keep their index (the group id) for the whole scan. */
struct ps_sites {
    struct ps_site *e;
    size_t n, cap;
    uint32_t *hash;              /* index + 1, 0 empty */
    size_t hcap;
};
struct ps_sites *ps_sites_new(void);
uint32_t ps_sites_id(struct ps_sites *s, uint32_t task, uint64_t site);
static inline struct ps_site *ps_site_at(struct ps_sites *s, uint32_t id) { return &s->e[id]; }
/* Group ids sorted by (task, site); malloc'ed, n entries. */
uint32_t *ps_sites_sorted(const struct ps_sites *s);
/* Bound the scaled weights of each task's sites (small-call sampling): first each
 * site's added part by what its own samples support (ps_small_support), then a task's
 * together by what the unsampled blocks can have had: the weight of the task's samples
 * in untraced memory (class 4). Returns the number of tasks whose estimates the second
 * bound scaled down; *unsupported (when not NULL) counts the sites the first lowered. */
uint64_t ps_sites_cap(struct ps_sites *s, uint64_t *unsupported);
/* The share of the weight scaling added that k samples in a site's scaled blocks
 * support: the one-sigma lower bound of a count of k (k - sqrt(k)) over k, so that one
 * sample adds nothing (it says no more than that the block it fell in was accessed)
 * and a hundred add 90 %. */
double ps_small_support(uint64_t k);
void ps_sites_free(struct ps_sites *s);

/* ---- ordered map of live blocks per task (ps_map.c) ---- */
struct ps_block {
    uint64_t start, size;
    uint64_t seq;                /* its row's place in the allocation table */
    uint64_t t_alloc;
    uint32_t grp;                /* its (task, site) group */
    uint32_t thread;             /* the allocating thread's number in the trace */
    uint32_t scale;              /* blocks it stands for: 1, or small-call sampling's N */
};
struct ps_live { uint64_t now, peak; };   /* live blocks over all maps */
struct ps_map;
struct ps_map *ps_map_new(struct ps_live *count);
void ps_map_free(struct ps_map *m);
void ps_map_insert(struct ps_map *m, const struct ps_block *b);
/* Remove the block starting at start into *out; 0 when there is none. */
int ps_map_take(struct ps_map *m, uint64_t start, struct ps_block *out);
/* The block whose [start, start+size) holds addr, or NULL. */
const struct ps_block *ps_map_find(const struct ps_map *m, uint64_t addr);
/* Some block that a new block [start, start+size) would collide with (same start or
 * overlapping bytes), or NULL. */
const struct ps_block *ps_map_conflict(const struct ps_map *m, uint64_t start, uint64_t size);
/* Call fn on every live block, in address order. */
void ps_map_each(const struct ps_map *m, void (*fn)(void *ctx, const struct ps_block *b),
                 void *ctx);

/* ---- lifetime facts per (task, site), swept in time order (ps_life.c) ---- */
struct ps_life;
struct ps_life *ps_life_new(struct ps_sites *s);
void ps_life_free(struct ps_life *l);
/* A block of group grp live from t_alloc, standing for scale blocks of its size
 * (small-call sampling; else 1): counts them, queues their start. */
void ps_life_start(struct ps_life *l, uint32_t grp, uint64_t t_alloc, uint64_t size,
                   uint32_t scale);
/* The block ends at t_end (clamped to t_alloc): queues its end. */
void ps_life_end(struct ps_life *l, uint32_t grp, uint64_t t_alloc, uint64_t t_end,
                 uint64_t size, uint32_t scale);
/* size * scale, saturated. */
static inline uint64_t ps_scaled(uint64_t size, uint32_t scale)
{
    uint64_t r;
    return __builtin_mul_overflow(size, (uint64_t)scale, &r) ? UINT64_MAX : r;
}
/* Thread thr entered a call at t that may start a block (at t) when it ends; close
 * says it ended. Open calls hold the sweep back to their entry time. */
void ps_life_call_open(struct ps_life *l, uint32_t thr, uint64_t t);
void ps_life_call_close(struct ps_life *l, uint32_t thr);
/* Earliest entry time of an open call; 0 when none is open. */
int ps_life_open_min(struct ps_life *l, uint64_t *t);
/* Time of the earliest queued endpoint; 0 when none is queued. */
int ps_life_next(const struct ps_life *l, uint64_t *t);
size_t ps_life_queued(const struct ps_life *l);
/* Sweep every queued endpoint earlier than t: no later endpoint can come before t. */
void ps_life_sweep(struct ps_life *l, uint64_t t);
/* Sweep the earliest endpoints until at most `keep` are queued, whatever their time. */
void ps_life_trim(struct ps_life *l, size_t keep);
/* Sweep everything queued and close every group's sweep (end of trace). */
void ps_life_finish(struct ps_life *l);
uint64_t ps_life_late(const struct ps_life *l);   /* endpoints that came after their time */

/* ---- per-allocation rows, emitted as blocks end, written in allocation order
 *      (ps_rows.c) ---- */
struct ps_row {
    uint64_t seq;            /* allocation order: the call's entry */
    uint64_t ptr, size, t_alloc;
    int64_t t_free;          /* -1: never freed */
    uint32_t grp, thread;    /* (task, site) group; thread number in the trace */
    uint32_t scale;          /* blocks the row stands for (allocs.csv `scale`) */
};
struct ps_rows;
/* fd: a temporary file for sorted runs, used once more than a run of rows waits. */
struct ps_rows *ps_rows_new(int fd);
uint64_t ps_rows_seq(struct ps_rows *w);                     /* the next sequence number */
void ps_rows_add(struct ps_rows *w, const struct ps_row *r); /* a complete row, any order */
/* Write allocs.csv (version line naming `trace`, header, rows in sequence order) to
 * out; returns rows written, -1 on I/O error (errno set). */
int64_t ps_rows_write_csv(struct ps_rows *w, FILE *out, const char *trace,
                          const struct ps_sites *sites);
void ps_rows_free(struct ps_rows *w);

/* ---- statistics shared by the model and the outputs ---- */
struct ps_stats {
    uint64_t records, events, states, comms, bad_lines, groups;
    /* classes[c], class_weight[c]: samples and their weight by address class c (the
     * values of 41000023; derived for samples without one: 1 in a site, 4 an address
     * in none, 5 no address); class_events: samples that carried 41000023 */
    uint64_t samples, total_weight, lost_samples, classes[HM_SAMPLE_CLASS_MAX + 1],
             class_weight[HM_SAMPLE_CLASS_MAX + 1], class_events;
    uint64_t lookahead_samples;  /* addresses from the software sampler's look ahead */
    uint64_t producer_samples;   /* addresses of the load the sampled instruction consumed */
    uint64_t allocs, frees, unknown_frees, unknown_realloc_inputs, failed_calls;
    uint64_t evictions, unmatched_ends, unterminated_calls, nested_calls;
    uint64_t late_records, time_regressions, max_time;
    uint64_t fault_samples, faults, lost_fault_samples, fault_classes[HM_SAMPLE_CLASS_MAX + 1];
    uint64_t small_capped;       /* tasks whose scaled weights ps_sites_cap lowered */
    uint64_t small_unsupported;  /* sites whose added weight their samples did not support */
    uint64_t profile_unplaced;   /* samples of allocation sites the profile has no block for */
    uint64_t counter_counts_dropped;  /* counts of counter types beyond PS_CNT_MAX */
    /* samples and their weight by access kind (41000035's values; 0: none carried) */
    uint64_t kind_samples[HM_ACCESS_KIND_MAX + 1], kind_weight[HM_ACCESS_KIND_MAX + 1];
    int has_object_events, has_sampler;
    uint64_t sampler;
    uint32_t threads_seen, tasks_seen;
};

/* ---- the model: fusion + semantics (ps_model.c; a group's samples ps_samples.c) ---- */
struct ps_model;
/* use_lookahead: attribute samples whose address came from the software sampler's
 * look ahead (41000024 = 2) to the object they fell in; else they count as samples
 * without an address (class 5, unattributed weight), as before the look ahead. */
/* profile_shift: log2 of profile.csv's bucket size (ps_profile.c). */
/* phases: counters.csv's phases (ps_counters.c). */
struct ps_model *ps_model_new(const struct ps_header *h, struct ps_rows *rows,
                              struct ps_stats *st, int per_thread_time, int use_lookahead,
                              unsigned profile_shift, unsigned phases);
/* One event record (already parsed). 0 ok, -1 bad ids (message in err). */
int ps_model_event(struct ps_model *m, const struct ps_record *r, char *err, size_t errlen);
/* At EOF: flush pending groups; blocks still live end at end_ns (the trace end). */
void ps_model_finish(struct ps_model *m, uint64_t end_ns);
struct ps_sites *ps_model_sites(struct ps_model *m);
uint64_t ps_model_peak_live(struct ps_model *m);
uint64_t ps_model_late_endpoints(struct ps_model *m);
struct ps_profile *ps_model_profile(struct ps_model *m);
struct ps_counters *ps_model_counters(struct ps_model *m);
void ps_model_free(struct ps_model *m);

/* A sample's attributes, gathered from the pairs of one fused group (ps_sites.c). */
struct ps_sample {
    unsigned seen;           /* PS_SA_* bits */
    uint64_t addr, object, weight, latency, hit, cls, recovered;
    uint64_t scale;          /* 41000041: blocks the object it fell in stands for */
    uint64_t kind;           /* 41000035: the access kind */
    uint64_t soff;           /* 41000042: bytes from the start of its static variable */
    int is_store;
};
enum { PS_SA_ADDR = 1, PS_SA_OBJ = 2, PS_SA_W = 4, PS_SA_LAT = 8, PS_SA_HIT = 16,
       PS_SA_CLS = 32, PS_SA_REC = 64, PS_SA_SCALE = 128, PS_SA_KIND = 256,
       PS_SA_SOFF = 512 };
/* Count a sample in group grp (its task and the site its address fell in; site 0
 * when unattributed); cls is its address class (41000023's values, 1-5). Its weight
 * counts scale times in the group (a block of small-call sampling stands for scale
 * blocks), once in the trace's total. */
void ps_sample_count(struct ps_site *g, struct ps_stats *st, const struct ps_sample *x,
                     uint64_t cls, uint64_t scale);
/* ps_kinds.c: a sample's weight w (x scale in the group) by its access kind; the
 * kinds' share of ps_sites_cap's scaling (f: the part of the added weight kept); the
 * sites.tsv columns and scan.json fields of the kinds. */
void ps_kinds_count(struct ps_site *g, struct ps_stats *st, const struct ps_sample *x,
                    uint64_t w, uint64_t scale);
void ps_kinds_cap(struct ps_site *g, double f);
#define PS_KIND_COLUMNS "\tweight_streaming\tweight_scattered\tweight_sync"
char *ps_kinds_fmt(char *p, const struct ps_site *g);     /* "\tN\tN\tN" */
void ps_kinds_json(FILE *out, const struct ps_stats *st); /* "kind_samples":{..},... */
/* A sample's weight: the tracer's own (41000020) when present, else the PEBS/IBS
 * latency, else 1 so that a trace without costs still ranks sites by sample count. */
static inline uint64_t ps_sample_weight(const struct ps_sample *x)
{
    return (x->seen & PS_SA_W) ? x->weight : (x->seen & PS_SA_LAT) ? x->latency : 1;
}

/* ---- profile.csv: sampled weight by offset inside the blocks (ps_profile.c) ---- */
#define PS_PROFILE_MIN_SHIFT 12      /* 4 KiB */
#define PS_PROFILE_MAX_SHIFT 30      /* 1 GiB */
struct ps_profile;
struct ps_profile *ps_profile_new(unsigned shift);
void ps_profile_free(struct ps_profile *p);
unsigned ps_profile_shift(const struct ps_profile *p);
/* A sample of group grp at `offset` bytes into its block: w x scale to its bucket, as
 * ps_sample_count adds it to the group. */
void ps_profile_add(struct ps_profile *p, uint32_t grp, uint64_t offset, uint64_t w,
                    uint64_t scale);
/* Before ps_sites_cap: remember each group's added weight. */
void ps_profile_snapshot(struct ps_profile *p, const struct ps_sites *s);
/* profile.csv (version line naming trace); *unplaced: samples of sites that allocated
 * which the profile could not place in a block. 0 ok, -1 I/O error. */
int ps_profile_write(struct ps_profile *p, const struct ps_sites *s, FILE *out,
                     const char *trace, uint64_t *unplaced);

/* A sampled page fault (41000030-41000033), gathered like a sample. */
struct ps_fault {
    unsigned seen;           /* PS_FA_* bits */
    uint64_t addr, object, faults, cls;
};
enum { PS_FA_ADDR = 1, PS_FA_OBJ = 2, PS_FA_N = 4, PS_FA_CLS = 8 };
void ps_fault_count(struct ps_site *g, struct ps_stats *st, const struct ps_fault *f);

/* ---- hardware counters over the samples: counters.csv (ps_counters.c) ---- */
#define PS_COUNTERS_VERSION "# hmtune counters v1"
#define PS_CNT_MAX 16                /* counter types kept; counts of more are dropped */
#define PS_PHASES_DEFAULT 20
/* A counter's count (42000000 and up, Extrae's PAPI range) or the active set. */
static inline int ps_is_counter(uint64_t type)
{
    return type - HM_EV_HWC_PRESET < 1000000u;
}
struct ps_counters;
struct ps_counters *ps_counters_new(uint64_t end_ns, unsigned phases);
void ps_counters_free(struct ps_counters *c);
/* A sample of a thread (*slot: the thread's place here, 0 until it has one; its output
 * task number and thread number) attributed to group grp with access kind `kind`
 * (41000035, 0 none). next_mode: the software sampler's rule (the thread's pending
 * reading goes to this sample), else the sample waits for the thread's next reading. */
void ps_counters_sample(struct ps_counters *c, uint32_t *slot, uint32_t task_no,
                        uint32_t thread_no, uint32_t grp, unsigned kind, int next_mode);
/* The counter pairs among p[0..n) of a thread's event line at time t: one reading. */
void ps_counters_reading(struct ps_counters *c, uint32_t *slot, uint32_t task_no,
                         uint32_t thread_no, uint64_t t, const struct ps_pair *p, size_t n,
                         int next_mode);
int ps_counters_any(const struct ps_counters *c);      /* some counter was read */
uint64_t ps_counters_dropped(const struct ps_counters *c);
/* counters.csv: version line naming trace, header, the site, thread and phase rows
 * (the header alone when the trace has no counters). 0 ok, -1 I/O error. */
int ps_counters_write(struct ps_counters *c, const struct ps_sites *s, FILE *out,
                      const char *trace);

/* ---- numbers in the tables (ps_fmt.c) ---- */
char *ps_fmt_u64(char *p, uint64_t v);   /* decimal digits at p; returns the end */
char *ps_fmt_i64(char *p, int64_t v);
char *ps_fmt_hex(char *p, uint64_t v);   /* 0x and lowercase hex digits */
void ps_put_encoded(FILE *out, const char *text);  /* a version line's value, %-encoded */

/* ---- outputs (ps_output.c) ---- */
/* sites.tsv: its version line (docs/formats.md §4; hmtune/analyze/scan_io.py checks
 * it: a change of columns or meanings is a new version), then the header row and one
 * row per (task, site) that allocated or was sampled. */
#define PS_SITES_VERSION "# hmtune prvscan sites v1"
int ps_write_sites(const struct ps_sites *s, FILE *out);
int ps_write_scan_json(FILE *out, const struct ps_header *h, const struct ps_stats *st,
                       uint64_t end_ns, double elapsed, long peak_rss_kib,
                       uint64_t peak_live_blocks, uint64_t alloc_rows, uint64_t late_endpoints);

#endif
