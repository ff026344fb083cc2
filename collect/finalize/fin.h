/* fin.h — hmtune-finalize: raw per-process streams (hmc_stream.h) → one Paraver
 * trace (.prv/.pcf/.row, DESIGN.md §3). Runs out of process, after the app. */
#ifndef FIN_H
#define FIN_H

#include <stdint.h>
#include <stdio.h>
#include "hmc_stream.h"

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
    int done;
    /* Paraver identity */
    int task, thread, cpu;
    struct fin_proc *proc;
};

struct fin_live;                 /* ptr → site, per process */

struct fin_proc {
    char *path;                  /* raw file */
    int fd;
    uint64_t fsize;
    struct hmr_proc hdr;
    int has_hdr;
    char host[256], exe[4096];
    char *cmd;
    const char **mod_path;       /* module id → interned path */
    size_t nmods;
    struct fin_stream *streams;
    size_t nstreams;
    int has_end, end_kind, end_signo;
    uint64_t t_end;
    uint64_t truncated_bytes;
    uint32_t bad_chunks;
    int task, node;
    struct fin_live *live;
    uint64_t n_allocs, n_frees, n_dropped_frees, n_events;
    /* ticks → ns: the earliest and latest (ticks, ns) pairs seen */
    uint64_t cal_tk0, cal_ns0, cal_tk1, cal_ns1;
    int ncal;
    double ns_per_tick;
};

struct fin_site {
    uint32_t id;
    int nframes;
    struct fin_frame *frames;
    char *raw_label;             /* module+0xoffset > ... */
    uint64_t n_allocs;
};

struct fin_ctx {
    struct fin_proc *procs;
    size_t nprocs;
    struct fin_site *sites;      /* index = id - 3 */
    size_t nsites, capsites;
    uint64_t t_zero, t_end;
    uint64_t t_real0;
    int nnodes;
    char **node_names;
    int *node_cpus;
    int total_threads;
    uint64_t bytes_written;
    int quiet;
};

/* fin_raw.c */
int fin_load_dir(struct fin_ctx *c, const char *dir);
int fin_stream_next(struct fin_stream *s, const struct hmr_hdr **rec);
const char *fin_intern(const char *s);
/* A stream time (ticks) as CLOCK_MONOTONIC ns. */
uint64_t fin_ns(const struct fin_proc *p, uint64_t ticks);
void fin_free_ctx(struct fin_ctx *c);   /* the processes and streams */
/* fin_merge.c */
int fin_write_prv(struct fin_ctx *c, const char *prv_path);
/* fin_pcf.c */
int fin_write_pcf(struct fin_ctx *c, const char *pcf_path);
int fin_write_row(struct fin_ctx *c, const char *row_path);
/* fin_symbols.c: "file:line" and "function" for a frame (return address). */
void fin_symbolize(const struct fin_frame *f, const char **fileline, const char **func);
void fin_symbols_close(void);
/* util */
void *fin_xmalloc(size_t n);
void *fin_xrealloc(void *p, size_t n);
char *fin_xstrdup(const char *s);
void fin_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void fin_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
