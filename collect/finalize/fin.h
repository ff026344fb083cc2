/* fin.h — hmtune-finalize: raw per-process streams (hmc_stream.h) → one Paraver
 * trace (.prv/.pcf/.row, DESIGN.md §3). Runs out of process, after the app. */
#ifndef FIN_H
#define FIN_H

#include <stdint.h>
#include <stdio.h>
#include "hmc_stream.h"
#include "hm_events.h"

struct fin_chunk { uint64_t off; uint32_t nbytes, seq; };

struct fin_frame { const char *path; uint64_t off; };   /* path interned; NULL = unknown */

struct fin_stream {
    uint32_t id, tid;
    uint64_t t_start, t_last;
    struct fin_chunk *chunks;
    size_t nchunks, capchunks;
    uint32_t seq_gaps;
    /* tend counters (from the stream itself or from the process stream) */
    int has_tend;
    uint64_t tracer_tk, n_calls, n_traced, n_lost, tend_tk;
    /* cursor state during the merge */
    size_t ci;
    unsigned char *buf;
    uint32_t blen, bpos;
    uint32_t *stack_site;
    size_t nstack;
    int pending_exit;            /* an exit event waits at pend_t */
    uint64_t pend_t, pend_ptr;
    int pend_kind, pend_drop;
    uint64_t pend_in, pend_size;
    uint32_t pend_site;
    int started;                 /* first record (thread start) written */
    int merged;                  /* a sample stream shown on its thread's Paraver line */
    struct hmr_scost scost;      /* the sampler's cost, the stream's last HMR_SCOST */
    uint64_t cnt_prev[HMR_MAX_COUNTERS];   /* the stream's last counter reading */
    int cnt_seen;                /* a reading was written (41999999 with the first) */
    uint64_t stack_lo, stack_hi;
    int done;
    /* Paraver identity */
    int task, thread, cpu;
    struct fin_proc *proc;
};

struct fin_live;                 /* ptr → site, per process */

/* What a sampled address fell in (the values of event 41000023, and of 41000033). */
enum fin_class { FC_NONE = HM_SAMPLE_CLASS_NONE, FC_HEAP = HM_SAMPLE_CLASS_HEAP,
                 FC_STATIC = HM_SAMPLE_CLASS_STATIC, FC_STACK = HM_SAMPLE_CLASS_STACK,
                 FC_UNKNOWN = HM_SAMPLE_CLASS_UNKNOWN, FC_NOADDR = HM_SAMPLE_CLASS_NO_ADDRESS };

/* Where samples' addresses came from (fin_recov.c). by_rule: samples with an address
 * per rule and class (heap, static, stack, unknown); before: samples the sampled
 * instruction gave no address directly, by enum hms_why (index HMS_WHY_N: none
 * recorded); after: those still without one; distance: look-ahead recoveries by
 * instructions between rip and the access; refused: why the look ahead found
 * nothing, for samples still without an address, by enum hms_look; verified: the
 * look-ahead addresses an execute breakpoint checked; pdistance: producer-load
 * recoveries by instructions from the load to the sampled one; prefused: why the
 * producer-load rule found none, for samples still without an address, by enum
 * hms_behind. */
enum fin_rule { FR_DIRECT = 0, FR_BREAKPOINT = HM_SAMPLE_RECOVERED_BREAKPOINT,
                FR_AHEAD = HM_SAMPLE_RECOVERED_LOOKAHEAD, FR_STRING = HM_SAMPLE_RECOVERED_STRING,
                FR_PRODUCER = HM_SAMPLE_RECOVERED_PRODUCER, FR_N };
struct fin_recov {
    uint64_t by_rule[FR_N][4];
    uint64_t before[HMS_WHY_N + 1], after[HMS_WHY_N + 1];
    uint64_t distance[16];
    uint64_t refused[HMS_LOOK_N];
    uint64_t pdistance[16], prefused[HMS_BEHIND_N];
    uint64_t verified[HM_SAMPLE_VERIFIED_MAX];  /* HMTUNE_SAMPLE_VERIFY: by 41000028's
                                                 * value - 1 (same, different, not reached) */
    uint64_t pverified[HM_SAMPLE_VERIFIED_MAX]; /* the same, of producer-load samples */
};

struct fin_proc {
    char *path;                  /* raw file */
    int fd;
    uint64_t fsize;
    struct hmr_proc hdr;
    int has_hdr;
    char host[256], exe[4096];
    char *cmd;
    const char **mod_path;       /* module id → interned path */
    uint64_t *mod_base, *mod_lo, *mod_hi;
    size_t nmods;
    int sampler;                 /* enum hmr_src of the process's sampler */
    char sampler_name[256];
    struct fin_stream *streams;
    size_t nstreams;
    int has_end, end_kind, end_signo;
    uint64_t t_end;
    uint64_t truncated_bytes;
    uint32_t bad_chunks;
    int task, node;
    struct fin_live *live;
    uint64_t n_allocs, n_frees, n_dropped_frees, n_events;
    uint64_t n_samples[8];       /* by enum fin_class */
    uint64_t w_samples[8];       /* their weights (41000020), by class */
    uint64_t n_lost_samples;
    char fault_name[128];        /* the page-fault sampler ("faults period 61", "none (..)") */
    uint64_t n_fault_samples[8]; /* page-fault samples by enum fin_class */
    uint64_t n_faults[8];        /* faults they stand for (sum of their periods) by class */
    uint64_t n_lost_faults;      /* page-fault samples the kernel dropped */
    struct fin_recov recov;
    uint64_t n_small, small_weight;   /* blocks of small-call sampling; their largest weight */
    /* the counters (HMR_CNTSET, HMR_CNTDEF): asked for, recorded in index order */
    int cnt_asked, cnt_software, ncnt;
    uint32_t cnt_code[HMR_MAX_COUNTERS];
    char cnt_name[HMR_MAX_COUNTERS][64], cnt_descr[HMR_MAX_COUNTERS][128];
    char cnt_unavailable[512];
    uint64_t n_cnt_readings;
    /* ticks → ns: the earliest and latest (ticks, ns) pairs seen */
    uint64_t cal_tk0, cal_ns0, cal_tk1, cal_ns1;
    int ncal;
    double ns_per_tick;
};

/* The first object id: 32000009's reserved ids (HM_SITE_*: 1 and 2 the unknown
 * objects) come before it. */
#define FIN_SITE0 (HM_SITE_MAX + 1)

struct fin_site {
    uint32_t id;
    int is_static;               /* a static variable: labels below, no frames */
    const char *sym, *module;
    uint64_t size;               /* a static's ELF size (0: unknown) */
    int nframes;
    struct fin_frame *frames;
    char *raw_label;             /* module+0xoffset > ... */
    uint64_t n_allocs;
};

struct fin_ctx {
    struct fin_proc *procs;
    size_t nprocs;
    struct fin_site *sites;      /* index = id - FIN_SITE0 */
    size_t nsites, capsites;
    uint64_t t_zero, t_end;
    uint64_t t_real0;
    int nnodes;
    char **node_names;
    int *node_cpus;
    int total_threads;
    uint64_t bytes_written;
    int quiet;
    int planning;                /* the merge's first pass: observe samples, write nothing */
    uint64_t n_kind[HM_ACCESS_KIND_MAX + 1], w_kind[HM_ACCESS_KIND_MAX + 1];  /* 41000035 */
};

/* fin_raw.c */
int fin_load_dir(struct fin_ctx *c, const char *dir);
int fin_stream_next(struct fin_stream *s, const struct hmr_hdr **rec);
const char *fin_intern(const char *s);
/* A stream time (ticks) as CLOCK_MONOTONIC ns. */
uint64_t fin_ns(const struct fin_proc *p, uint64_t ticks);
/* ns of a record's time (0 for records without one) */
uint64_t fin_rec_ns(const struct fin_proc *p, const struct hmr_hdr *r);
void fin_free_ctx(struct fin_ctx *c);   /* the processes and streams */
/* fin_live.c: live blocks of a process by address */
struct fin_live *fin_live_new(void);
void fin_live_free(struct fin_live *t);
/* weight: calls the block stands for (small-call sampling), 0 for a traced block */
void fin_live_put(struct fin_live *t, uint64_t ptr, uint64_t size, uint32_t site,
                  uint64_t weight);
uint32_t fin_live_take(struct fin_live *t, uint64_t ptr, int remove);   /* 0: not live */
/* The site of the live block holding addr (0: none); its start in *base and its
 * weight in *weight when they are not NULL. */
uint32_t fin_live_find(const struct fin_live *t, uint64_t addr, uint64_t *base,
                       uint64_t *weight);
/* fin_objects.c: static variables, sampled instructions. fin_static_object: the id of
 * the static holding addr (0: none), and where that object starts in the process in
 * *start when start is not NULL. */
uint32_t fin_static_object(struct fin_ctx *c, struct fin_proc *p, uint64_t addr,
                           uint64_t *start);
int fin_module_of(const struct fin_proc *p, uint64_t addr);          /* id or 0 */
void fin_sample_code(struct fin_ctx *c, struct fin_proc *p, uint64_t ip, uint32_t *fid,
                     uint32_t *lid);
void fin_code_labels(FILE *f, int lines);                            /* pcf VALUES */
/* fin_sites.c: the object id of key, created (with *created set) when new */
uint32_t fin_key_id(struct fin_ctx *c, const char *key, struct fin_site **created);
/* fin_merge.c (its records: fin_prv.c) */
int fin_write_prv(struct fin_ctx *c, const char *prv_path);
/* fin_recov.c: count one sample (its flags, its iclass as fin_recov_iclass gives it,
 * and its enum fin_class) */
uint64_t fin_recov_iclass(const struct hmr_sample *x);  /* the software sampler's, else 0 */
int fin_recov_rule(uint32_t flags, uint64_t iclass);    /* FR_*: also the value of 41000024 */
void fin_recov_count(struct fin_recov *r, uint32_t flags, uint64_t iclass, int cls);
void fin_recov_add(struct fin_recov *dst, const struct fin_recov *src);
void fin_recov_json(FILE *f, const struct fin_recov *r);     /* one JSON object */
void fin_recov_pcf(FILE *f);                                 /* 41000024, 41000026-29 */
/* value of event 41000028 for a look-ahead or producer-load sample's flags: 1 same,
 * 2 different, 3 not reached, 0 none (or another rule) */
unsigned fin_recov_verified(uint32_t flags, uint64_t iclass);
/* fin_kinds.c: the access kind of each sample (41000035). FIN_KIND_NEAR: smaller
 * steps between consecutive addresses are no step; FIN_KIND_MIN_STEPS: fewer steps
 * decide nothing. */
#define FIN_KIND_NEAR 64
#define FIN_KIND_MIN_STEPS 4
/* streaming or scattered for these step counts; 0: too few steps */
unsigned fin_kind_verdict(uint64_t fwd, uint64_t bwd);
/* a sample's kind (0: none) from its (task, thread, object)'s verdict, its flags and
 * its HMS_CLS_* bits */
unsigned fin_kind_of(unsigned verdict, uint32_t flags, unsigned iclass);
unsigned fin_sample_iclass(const struct hmr_sample *x);   /* HMS_CLS_* bits */
void fin_kinds_observe(int task, int thread, uint32_t obj, uint64_t addr);  /* pass 1 */
void fin_kinds_decide(void);                               /* between the passes */
unsigned fin_kinds_sample(int task, int thread, uint32_t obj, uint32_t flags,
                          unsigned iclass);                /* pass 2 */
void fin_kinds_free(void);
void fin_kinds_pcf(FILE *f);                               /* 41000035, 41000036 */
/* fin_counters.c: the .pcf types of every process's counters (fin_raw.c reads their
 * definitions, fin_prv.c writes the readings) */
void fin_counters_pcf(struct fin_ctx *c, FILE *f);
/* fin_summary.c: the warnings of processes that did not end well and, when summary is
 * not NULL, the JSON summary written there */
void fin_write_summary(struct fin_ctx *c, const char *summary, const char *stem);
/* fin_pcf.c */
int fin_write_pcf(struct fin_ctx *c, const char *pcf_path);
int fin_write_row(struct fin_ctx *c, const char *row_path);
/* A value of an enumerated event type and its .pcf label: arrays of them come from the
 * X-macros of common/hm_events.h (the value tables of common/trace_values.tsv), with
 * FIN_VALUE as X. fin_pcf_values (fin_values.c) writes "VALUES" and a
 * "<value><sep><label>" line per value up to max. */
struct fin_value { unsigned value; const char *label; };
#define FIN_VALUE(v, key, label) { (v), (label) },
#define FIN_NVALUES(a) (sizeof(a) / sizeof((a)[0]))
void fin_pcf_values(FILE *f, const struct fin_value *v, size_t n, unsigned max,
                    const char *sep);
/* fin_symbols.c: what a frame is, for people. fileline: "file:line" per inlining
 * level (" > " between levels), else "symbol+0xOFF" (ELF .symtab/.dynsym), else
 * "module+0xOFF" (the module's file name); func: the function per level (same number
 * of levels), else the symbol, else the fileline text. Never "??" alone. symbol: the
 * ELF function symbol holding the address (demangled) or NULL; module: the module's
 * file name (NULL outside every module). is_return: f->off is a return address (look
 * up off - 1); 0 for an instruction address. */
enum { FIN_KNOWN_NONE = 0, FIN_KNOWN_SYMBOL = 1, FIN_KNOWN_LINE = 2 };
struct fin_where { const char *fileline, *func, *symbol, *module; int known; };
void fin_symbolize(const struct fin_frame *f, int is_return, struct fin_where *w);
/* The static (data/bss) object of a module containing offset off, NULL when off is in
 * no data section: its name, its start in *sym_off and its size in *size. A sized ELF
 * object symbol holding off is the object; else off is in unnamed data, from the end
 * of the last symbol below it ("symbol+0xSIZE"), from a symbol without a size
 * ("symbol") or from its section's start (".bss"), to the next data boundary or the
 * section's end (*size 0 when that does not hold off). */
const char *fin_data_symbol(const char *path, uint64_t off, uint64_t *sym_off, uint64_t *size);
void fin_symbols_close(void);
/* util */
void *fin_xmalloc(size_t n);
void *fin_xrealloc(void *p, size_t n);
char *fin_xstrdup(const char *s);
void fin_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void fin_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
