/* hmc_buffers.c — the tracer's per-thread buffers (hmc_core.c says how they are
 * written): each thread's record buffer, flushed with one write(2) and no lock; the
 * two buffers its signal handlers write (sampled accesses, sampled page faults); the
 * registry of buffers, reused by later threads; and a thread's start and end. */
#include "hmc_buffers.h"
#include "hmc_file.h"
#include "hm_modmap.h"
#include "hm_proc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

__thread int hmc_busy __attribute__((tls_model("initial-exec")));
__thread struct hmc_thread *hmc_t_self __attribute__((tls_model("initial-exec")));
struct hmc_config hmc_cfg;
_Atomic int hmc_active;
_Atomic int hmc_exiting;
_Atomic int hmc_broken;
_Atomic uint32_t hmc_next_stream = 1;
_Atomic(struct hmc_thread *) hmc_threads;
pthread_key_t hmc_key;
static void (*g_exit_hook)(struct hmc_thread *);
void hmc_set_thread_exit_hook(void (*fn)(struct hmc_thread *)) { g_exit_hook = fn; }

static const uint32_t hb_stream_bits[HB_N] = { HMR_SAMPLE_STREAM,
                                               HMR_SAMPLE_STREAM | HMR_FAULT_STREAM };

void hmc_write_failed(int err)
{
    int was = atomic_exchange(&hmc_broken, 1);
    if (!was)
        hm_log("hmtune: ", "cannot write the trace, recording stops (the application continues): ",
               strerror(err));
}

static uint32_t gettid_(void) { return (uint32_t)syscall(SYS_gettid); }

void hmc_spin_claim(struct hmc_thread *t)
{
    int z = 0;
    while (!atomic_compare_exchange_weak(&t->claim, &z, 1))
        z = 0;
}

void hmc_write_buffer(struct hmc_thread *t, uint32_t bytes)
{
    if (bytes == 0)
        return;
    t->chunk.magic = HMR_MAGIC;
    t->chunk.stream = t->stream;
    t->chunk.nbytes = bytes;
    t->chunk.seq = t->seq;
    t->chunk.ticks = hm_ticks();
    t->chunk.ns = hm_now_ns();
    if (hmc_fd < 0 || atomic_load(&hmc_broken)) {
        t->n_lost += 1;
        return;
    }
    int err = hmc_stream_write(&t->chunk, sizeof(t->chunk) + bytes);
    if (err)
        hmc_write_failed(err);
}

void hmc_flush_own(struct hmc_thread *t)
{
    hmc_spin_claim(t);
    hmc_write_buffer(t, atomic_load_explicit(&t->committed, memory_order_relaxed));
    t->seq++;
    t->pos = 0;
    atomic_store_explicit(&t->committed, 0, memory_order_release);
    atomic_store_explicit(&t->claim, 0, memory_order_release);
}

/* Write handler buffer i as its chunk seq (the claim keeps the exit path and the
 * handler from writing it at once). */
void hmc_write_hbuf(struct hmc_thread *t, int i, int reset)
{
    struct hbuf *b = &t->hb[i];
    uint32_t bytes = atomic_load_explicit(&b->committed, memory_order_acquire);
    if (bytes) {
        b->chunk = (struct hmr_chunk){ HMR_MAGIC, t->stream | hb_stream_bits[i], bytes, b->seq,
                                       hm_ticks(), hm_now_ns() };
        if (hmc_fd < 0 || atomic_load(&hmc_broken))
            t->n_lost += 1;
        else {
            int err = hmc_stream_write(&b->chunk, sizeof(b->chunk) + bytes);
            if (err)
                hmc_write_failed(err);
        }
    }
    if (reset) {
        b->seq++;
        b->pos = 0;
        atomic_store_explicit(&b->committed, 0, memory_order_release);
    }
}

static void record_hbuf(struct hmc_thread *t, int i, const void *rec, uint32_t bytes)
{
    struct hbuf *b = &t->hb[i];
    int z = 0;
    if (!atomic_compare_exchange_strong(&b->claim, &z, 1))
        return;                       /* the exit path is writing it: drop this one */
    if (b->pos + bytes > HMC_SBUF_BYTES)
        hmc_write_hbuf(t, i, 1);
    memcpy(b->rec + b->pos, rec, bytes);
    b->pos += bytes;
    atomic_store_explicit(&b->committed, b->pos, memory_order_release);
    atomic_store_explicit(&b->claim, 0, memory_order_release);
}

void hmc_record_sample(struct hmc_thread *t, const void *rec, uint32_t bytes)
{
    record_hbuf(t, HB_SAMPLES, rec, bytes);
}

void hmc_record_fault(struct hmc_thread *t, const void *rec, uint32_t bytes)
{
    record_hbuf(t, HB_FAULTS, rec, bytes);
}

/* A handler stream's first record: the thread and its stack (so finalize can tell
 * stack addresses from unknown ones). */
static void hbuf_begin(struct hmc_thread *t, int i, uint64_t stack_lo, uint64_t stack_hi)
{
    struct hmr_thread r;
    memset(&r, 0, sizeof(r));
    r.h.type = HMR_THREAD;
    r.h.len8 = HMR_LEN8(sizeof(r));
    r.t = hm_ticks();
    r.tid = t->tid;
    r.stack_lo = stack_lo;
    r.stack_hi = stack_hi;
    t->hb[i].seq = 0;
    t->hb[i].pos = 0;
    atomic_store(&t->hb[i].committed, 0);
    record_hbuf(t, i, &r, sizeof(r));
}

void hmc_samples_begin(struct hmc_thread *t, uint64_t stack_lo, uint64_t stack_hi)
{
    hbuf_begin(t, HB_SAMPLES, stack_lo, stack_hi);
}

void hmc_faults_begin(struct hmc_thread *t, uint64_t stack_lo, uint64_t stack_hi)
{
    hbuf_begin(t, HB_FAULTS, stack_lo, stack_hi);
}

/* Write what the handlers recorded (thread exit, process exit; never from a handler). */
void hmc_samples_flush(struct hmc_thread *t)
{
    for (int i = 0; i < HB_N; i++) {
        int z = 0;
        if (!atomic_compare_exchange_strong(&t->hb[i].claim, &z, 1))
            continue;
        hmc_write_hbuf(t, i, 1);
        atomic_store(&t->hb[i].claim, 0);
    }
}

void *hmc_thread_sampler(struct hmc_thread *t) { return t->sampler; }
void hmc_thread_set_sampler(struct hmc_thread *t, void *s) { t->sampler = s; }
/* NULL in a child the tracer does not follow (hm_proc.h), whose copy of the state is
 * the parent's: the sampler's handlers and hooks then leave it alone. */
struct hmc_thread *hmc_thread_self(void) { return hm_proc_mine() ? hmc_t_self : NULL; }

void hmc_begin_stream(struct hmc_thread *t)
{
    t->stream = atomic_fetch_add(&hmc_next_stream, 1);
    t->seq = 0;
    t->tid = gettid_();
    t->pos = 0;
    atomic_store(&t->committed, 0);
    t->next_stack = 1;
    t->nstacks = 0;
    t->stack_gen = hm_modmap_generation();
    t->tracer_ns = t->n_calls = t->n_traced = t->n_lost = 0;
    for (int i = 0; i < HB_N; i++) {
        t->hb[i].seq = t->hb[i].pos = 0;
        atomic_store(&t->hb[i].committed, 0);
        atomic_store(&t->hb[i].claim, 0);
    }
    t->sampler = NULL;
    memset(t->stacks, 0, HMC_STACK_SLOTS * (2 + (size_t)hmc_cfg.depth) * 8);
    struct hmr_thread *r = hmc_reserve(t, sizeof(*r));
    memset(r, 0, sizeof(*r));
    r->h.type = HMR_THREAD;
    r->h.len8 = HMR_LEN8(sizeof(*r));
    r->t = hm_ticks();
    r->tid = t->tid;
    hmc_commit(t, sizeof(*r));
}

struct hmc_thread *hmc_thread_get(void)
{
    struct hmc_thread *t = hmc_t_self;
    if (hm_unlikely(!hm_proc_mine()))
        return NULL;                  /* a raw clone's child: left untraced */
    if (hm_likely(t != NULL))
        return t;
    if (!atomic_load(&hmc_active))
        return NULL;
    /* Reuse a buffer released by an exited thread, else map a new one. */
    for (t = atomic_load(&hmc_threads); t; t = t->next) {
        int z = 0;
        if (atomic_compare_exchange_strong(&t->in_use, &z, 1))
            break;
    }
    if (!t) {
        size_t stack_bytes = HMC_STACK_SLOTS * (2 + (size_t)hmc_cfg.depth) * 8;
        size_t bytes = sizeof(struct hmc_thread) + stack_bytes;
        void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
            return NULL;
        t = mem;
        t->map_bytes = bytes;
        t->stacks = (uint64_t *)((char *)mem + sizeof(struct hmc_thread));
        atomic_store(&t->in_use, 1);
        struct hmc_thread *head = atomic_load(&hmc_threads);
        do
            t->next = head;
        while (!atomic_compare_exchange_weak(&hmc_threads, &head, t));
    }
    hmc_begin_stream(t);
    hmc_t_self = t;
    pthread_setspecific(hmc_key, t);
    return t;
}

void hmc_emit_tend(struct hmc_thread *t)
{
    struct hmr_tend *r = hmc_reserve(t, sizeof(*r));
    memset(r, 0, sizeof(*r));
    r->h.type = HMR_TEND;
    r->h.len8 = HMR_LEN8(sizeof(*r));
    r->t = hm_ticks();
    r->tracer_tk = t->tracer_ns;
    r->n_calls = t->n_calls;
    r->n_traced = t->n_traced;
    r->n_lost = t->n_lost;
    t->pos += sizeof(*r);
    atomic_store_explicit(&t->committed, t->pos, memory_order_release);
}

void hmc_thread_exit(void)
{
    struct hmc_thread *t = hmc_thread_self();
    if (!t)
        return;
    hmc_busy++;
    if (g_exit_hook)
        g_exit_hook(t);               /* stops this thread's sampling first */
    hmc_samples_flush(t);
    hmc_emit_tend(t);
    hmc_flush_own(t);
    hmc_t_self = NULL;
    atomic_store(&t->in_use, 0);
    hmc_busy--;
}

