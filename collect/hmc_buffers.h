/* hmc_buffers.h — the tracer's per-thread buffers (hmc_buffers.c), as the rest of the
 * core uses them (hmc_core.c: the process stream, start-up, exit, crash and fork;
 * hmc_records.c: the records and the stack table): the thread's state, the registry,
 * the core's globals, and the writing of a buffer. hmc_reserve and hmc_commit are
 * inline: every traced call adds its records through them. Not for the rest of the
 * tracer: use hmc_core.h. */
#ifndef HMC_BUFFERS_H
#define HMC_BUFFERS_H

#include "hmc_core.h"
#include "hmc_config.h"

#include <pthread.h>
#include <stdatomic.h>

#define HMC_BUF_BYTES   (64u * 1024u)   /* per-thread record buffer */
#define HMC_STACK_SLOTS 1024u           /* per-thread interned call stacks */
#define HMC_SBUF_BYTES  (16u * 1024u)   /* per-thread sample buffer */

/* A buffer of records written by the thread's signal handlers. */
struct hbuf {
    uint32_t seq, pos;
    _Atomic uint32_t committed;
    _Atomic int claim;                /* held while a record is added or the buffer written */
    struct hmr_chunk chunk;           /* written just before rec[] */
    unsigned char rec[HMC_SBUF_BYTES];
};
enum { HB_SAMPLES = 0, HB_FAULTS = 1, HB_N = 2 };

struct hmc_thread {
    struct hmc_thread *next;          /* registry link, never removed */
    _Atomic int in_use;               /* owned by a live thread */
    _Atomic int claim;                /* held while the buffer is being written */
    uint32_t stream, seq, tid;
    uint32_t pos;                     /* bytes of records in rec[] */
    _Atomic uint32_t committed;       /* bytes of complete records */
    uint32_t next_stack, nstacks, stack_gen;
    uint64_t tracer_ns /* ticks */, n_calls, n_traced, n_lost;
    uint64_t *stacks;                 /* HMC_STACK_SLOTS * (2 + depth) words */
    size_t map_bytes;
    struct hmr_chunk chunk;           /* written just before rec[] */
    unsigned char rec[HMC_BUF_BYTES];
    /* Samples and page faults, written only by this thread's signal handlers (their
     * own streams, so a handler never touches rec[]). */
    struct hbuf hb[HB_N];
    void *sampler;                    /* hmc_sampler.c's per-thread state */
};

/* The core's globals (hmc_buffers.c defines them). */
extern struct hmc_config hmc_cfg HM_HIDDEN;
extern _Atomic int hmc_active HM_HIDDEN;
extern _Atomic int hmc_exiting HM_HIDDEN;     /* every hmc_commit writes its buffer */
extern _Atomic int hmc_broken HM_HIDDEN;      /* a write failed: stop writing, count losses */
extern _Atomic uint32_t hmc_next_stream HM_HIDDEN;
extern _Atomic(struct hmc_thread *) hmc_threads HM_HIDDEN;  /* every buffer, never removed */
extern pthread_key_t hmc_key HM_HIDDEN;       /* runs hmc_thread_exit at a thread's end */
extern __thread struct hmc_thread *hmc_t_self __attribute__((tls_model("initial-exec"))) HM_HIDDEN;

/* A write of the stream failed with err (recording stops, one message). */
void hmc_write_failed(int err) HM_HIDDEN;
void hmc_spin_claim(struct hmc_thread *t) HM_HIDDEN;
/* Write t's committed records as chunk t->seq (or count them lost). */
void hmc_write_buffer(struct hmc_thread *t, uint32_t bytes) HM_HIDDEN;
/* Owner-side flush: the buffer starts over with the next chunk number. */
void hmc_flush_own(struct hmc_thread *t) HM_HIDDEN;
/* Write handler buffer i as its chunk seq; reset: start it over. */
void hmc_write_hbuf(struct hmc_thread *t, int i, int reset) HM_HIDDEN;
/* t's TEND record (its counters) into its buffer, committed without a flush. */
void hmc_emit_tend(struct hmc_thread *t) HM_HIDDEN;
/* t starts a stream of its own: new stream id, empty buffers and stack table. */
void hmc_begin_stream(struct hmc_thread *t) HM_HIDDEN;

static inline void *hmc_reserve(struct hmc_thread *t, uint32_t bytes)
{
    if (hm_unlikely(t->pos + bytes > HMC_BUF_BYTES))
        hmc_flush_own(t);
    return t->rec + t->pos;
}

static inline void hmc_commit(struct hmc_thread *t, uint32_t bytes)
{
    t->pos += bytes;
    atomic_store_explicit(&t->committed, t->pos, memory_order_release);
    if (hm_unlikely(atomic_load_explicit(&hmc_exiting, memory_order_relaxed)))
        hmc_flush_own(t);
}

#endif
