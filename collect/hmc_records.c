/* hmc_records.c — the tracer's records of calls and frees, and the per-thread table
 * of call stacks already written: a stack is written once (a STACK record with its
 * id) and each call then carries the id. The table is a fixed open-addressing hash
 * of (2 + depth) words per slot, forgotten when a library goes away or it is 3/4
 * full. */
#include "hmc_buffers.h"
#include "hm_modmap.h"
#include "hm_unwind.h"

#include <string.h>

static uint32_t intern_stack(struct hmc_thread *t, const uint64_t *frames, int n)
{
    const size_t w = 2 + (size_t)hmc_cfg.depth;
    uint32_t gen = hm_modmap_generation();
    if (hm_unlikely(gen != t->stack_gen || t->nstacks >= HMC_STACK_SLOTS * 3 / 4)) {
        /* A library went away (its addresses may now mean another one), or the
         * table is full: forget, and write stacks again as they come. */
        memset(t->stacks, 0, HMC_STACK_SLOTS * w * 8);
        t->nstacks = 0;
        t->stack_gen = gen;
    }
    uint64_t h = (uint64_t)n;
    for (int i = 0; i < n; i++)
        h = (h ^ frames[i]) * 0x9e3779b97f4a7c15ull;
    h = (h ^ (h >> 31)) | 1;
    uint32_t slot = (uint32_t)(h ^ (h >> 29)) & (HMC_STACK_SLOTS - 1);
    for (;;) {
        uint64_t *e = t->stacks + slot * w;
        if (e[0] == 0)
            break;
        if (e[0] == h && (int)(e[1] >> 32) == n && memcmp(e + 2, frames, (size_t)n * 8) == 0)
            return (uint32_t)e[1];
        slot = (slot + 1) & (HMC_STACK_SLOTS - 1);
    }
    uint32_t id = t->next_stack++;
    uint64_t *e = t->stacks + slot * w;
    e[0] = h;
    e[1] = ((uint64_t)n << 32) | id;
    memcpy(e + 2, frames, (size_t)n * 8);
    t->nstacks++;
    uint32_t bytes = (uint32_t)(sizeof(struct hmr_stack) + (size_t)n * 8);
    struct hmr_stack *r = hmc_reserve(t, bytes);
    r->h.type = HMR_STACK;
    r->h.kind = (uint8_t)n;
    r->h.len8 = HMR_LEN8(bytes);
    r->h.aux = id;
    uint64_t *out = (uint64_t *)(r + 1);
    memcpy(out, frames, (size_t)n * 8);
    hm_frames_pack(out, n);
    hmc_commit(t, bytes);
    return id;
}

/* A CALL record, or with weight != 0 an SCALL (the same fields, then the weight). */
static void record_call(struct hmc_thread *t, int kind, uint64_t t0, uint64_t t1,
                        uint64_t size, uint64_t align, uint64_t ptr_in, uint64_t ptr_out,
                        const uint64_t *frames, int n, uint64_t weight)
{
    uint32_t sid = intern_stack(t, frames, n);
    size_t len = weight ? sizeof(struct hmr_scall) : sizeof(struct hmr_call);
    struct hmr_scall *r = hmc_reserve(t, len);
    r->h.type = weight ? HMR_SCALL : HMR_CALL;
    r->h.kind = (uint8_t)kind;
    r->h.len8 = HMR_LEN8(len);
    r->h.aux = sid;
    r->t0 = t0;
    r->t1 = t1;
    r->size = size;
    r->align = align;
    r->ptr_in = ptr_in;
    r->ptr_out = ptr_out;
    if (weight)
        r->weight = weight;
    t->n_traced++;
    hmc_commit(t, len);
}

void hmc_record_call(struct hmc_thread *t, int kind, uint64_t t0, uint64_t t1, uint64_t size,
                     uint64_t align, uint64_t ptr_in, uint64_t ptr_out,
                     const uint64_t *frames, int n)
{
    record_call(t, kind, t0, t1, size, align, ptr_in, ptr_out, frames, n, 0);
}

void hmc_record_sampled_call(struct hmc_thread *t, int kind, uint64_t t0, uint64_t t1,
                             uint64_t size, uint64_t align, uint64_t ptr_in, uint64_t ptr_out,
                             const uint64_t *frames, int n, uint64_t weight)
{
    record_call(t, kind, t0, t1, size, align, ptr_in, ptr_out, frames, n, weight);
}

void hmc_record_free(struct hmc_thread *t, uint64_t t0, uint64_t t1, uint64_t ptr)
{
    struct hmr_free *r = hmc_reserve(t, sizeof(*r));
    r->h.type = HMR_FREE;
    r->h.kind = HMK_FREE;
    r->h.len8 = HMR_LEN8(sizeof(*r));
    r->h.aux = 0;
    r->t0 = t0;
    r->t1 = t1;
    r->ptr = ptr;
    t->n_traced++;
    hmc_commit(t, sizeof(*r));
}

void hmc_add_tracer_ns(struct hmc_thread *t, uint64_t ticks, uint64_t calls)
{
    t->tracer_ns += ticks;
    t->n_calls += calls;
}

void hmc_count_call(struct hmc_thread *t) { t->n_calls++; }

