/* fin_prv.h — between the merge (fin_merge.c), which orders every stream's records
 * by time, and the .prv records it writes for them (fin_prv.c). Only those two
 * include it. */
#ifndef FIN_PRV_H
#define FIN_PRV_H

#include "fin.h"

/* The .prv file, written through a buffer of cap bytes; total: bytes written. */
struct fin_out { FILE *f; char *buf; size_t len, cap; uint64_t total; };

/* What a stream gives next. */
enum { NX_DONE = 0, NX_START = 1, NX_ENTRY = 2, NX_EXIT = 3, NX_SAMPLE = 4, NX_COUNTERS = 5 };

struct fin_cur {        /* the stream's current call */
    uint64_t t_next;
    int what;
    struct hmr_call call;
    struct hmr_sample sample;
    struct hmr_counters cnt;  /* NX_COUNTERS: a reading (h.kind values) */
    int drop;
    uint32_t site;
    uint64_t weight;      /* a call of small-call sampling: the calls it stands for; else 0 */
};

/* Write what the buffer holds (dies when the disk is full). */
void fin_out_flush(struct fin_out *o);
/* The "#Paraver (...)" header line: nodes, CPUs, one application of c->nprocs tasks. */
void fin_prv_header(struct fin_ctx *c, struct fin_out *o);
/* The record(s) of u, the next of stream s: the thread's start, a call's entry or exit
 * (the process's live blocks updated), or a sample (classified by address). */
void fin_prv_emit(struct fin_ctx *c, struct fin_out *o, struct fin_stream *s,
                  struct fin_cur *u);

#endif
