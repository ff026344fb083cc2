/* hmi_arena.c — free lists, slabs and chunk carving for placed objects of up to 1 MiB
 * (see hmi_arena.h for why and how; their size classes are hmi_classes.c's). */
#include "hmi_arena.h"
#include "hmi_tiers.h"
#include "hmi_pagemap.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

/* Per tier, class and thread stripe (hm_util.h): what the stripe holds of the class.
 * Classes of up to 8 KiB (HMI_ARENA_STRIPED_MAX) keep at most batch(cls) objects on
 * `free`, one more batch of them on `full`, and a run of fewer than batch(cls) objects
 * cut from the class's slab: everything else goes through the class's pool, so the
 * stripes share the class's slabs and what a stripe holds back is bounded
 * (hmi_arena.h). A larger class has one shard for all threads, which takes whole
 * slabs (at most 16 objects each) and keeps every object freed. 64 bytes, one line:
 * `run` packs the run's next object (user addresses are below 2^48), the objects left
 * in the run and the objects on free (at most 64 each: batch(cls) <= 64; not counted
 * for a larger class). */
struct cls_state {
    pthread_mutex_t lock;
    void *free;                 /* freed objects, linked through their first word */
    void *full;                 /* a batch of batch(cls) freed objects, or NULL */
    uint64_t run;               /* next object | objects left << 48 | on free << 56 */
} __attribute__((aligned(64)));

#if defined(__x86_64__)
_Static_assert(sizeof(struct cls_state) == 64, "a shard is one cache line");
#endif

#define RUN_ADDR ((1ull << 48) - 1)

static char *run_next(uint64_t r) { return (char *)(uintptr_t)(r & RUN_ADDR); }
static uint32_t run_left(uint64_t r) { return (uint32_t)(r >> 48) & 0xffu; }
static uint32_t run_nfree(uint64_t r) { return (uint32_t)(r >> 56); }
static uint64_t run_pack(const char *next, uint32_t left, uint32_t nfree)
{
    return ((uint64_t)(uintptr_t)next & RUN_ADDR) | (uint64_t)left << 48 | (uint64_t)nfree << 56;
}

/* Per tier and class of up to 8 KiB: what the stripes share. A batch is batch(cls)
 * freed objects linked through their first word; batches are linked through their
 * first object's second word (every class has at least 16 bytes). */
struct cls_pool {
    pthread_mutex_t lock;
    void *batches;              /* batches of freed objects given back by the stripes */
    char *bump;                 /* the current slab's next object not cut into a run */
    uint32_t nleft;             /* objects of the slab not cut yet */
} __attribute__((aligned(64)));

/* Per tier and slab size: the chunk being cut into slabs of that size. */
struct carver {
    pthread_mutex_t lock;
    char *next, *end;           /* the chunk's slabs not cut yet */
    uint16_t *row;              /* the chunk's row of hmi_chunk_slabs */
} __attribute__((aligned(64)));
static struct carver g_carv[HMI_MAX_TIERS][HMI_SLAB_CODES];

/* Per tier: per class, one shard per thread stripe (threads of different stripes
 * never share a lock or a line; a freed object goes to the freeing thread's shard:
 * objects of one class are interchangeable), and the classes' pools. Mapped when a
 * tier first uses the arena (394 KiB) and kept. */
struct arena_state {
    struct cls_state shard[HMI_ARENA_CLASSES][HM_STRIPES];
    struct cls_pool pool[HMI_ARENA_STRIPED_MAX + 1];
};
static struct arena_state *g_cls[HMI_MAX_TIERS];
static int g_on[HMI_MAX_TIERS];             /* the tier uses the arena: fork takes its locks */
static uint64_t g_chunks[HMI_MAX_TIERS];    /* chunks mapped (atomics) */

static int striped(unsigned cls)
{
    return cls <= HMI_ARENA_STRIPED_MAX;
}

/* Classes over 8 KiB (slabs of 128 KiB and more) have one shard for all threads: a
 * partly used slab per thread would hold back up to 2 MiB each, and threads allocate
 * objects that large too rarely to contend. */
static struct cls_state *shard(uint32_t tier, unsigned cls)
{
    return &g_cls[tier]->shard[cls][striped(cls) ? hm_stripe() : 0];
}

/* batch(cls) of the striped classes, filled by hmi_arena_reset (the free path reads
 * it: no division there). */
static uint16_t g_batch[HMI_ARENA_STRIPED_MAX + 1];

uint64_t hmi_arena_chunks(uint32_t tier)
{
    return tier < HMI_MAX_TIERS ? __atomic_load_n(&g_chunks[tier], __ATOMIC_RELAXED) : 0;
}

/* A fresh slab of class cls (size code) of tier: cut from the carver's chunk, the next
 * chunk mapped when it has none left; NULL when the tier has no memory. */
static char *new_slab(uint32_t tier, unsigned cls, unsigned code, hmi_chunk_fn map_chunk)
{
    struct carver *k = &g_carv[tier][code];
    size_t ss = (size_t)1 << (HMI_SLAB_SHIFT + code);
    pthread_mutex_lock(&k->lock);
    if (k->next == k->end) {
        char *c = map_chunk(tier, code);
        if (!c) {
            pthread_mutex_unlock(&k->lock);
            return NULL;
        }
        __atomic_fetch_add(&g_chunks[tier], 1, __ATOMIC_RELAXED);
        uint32_t e = hmi_pagemap_get(c);
        k->row = hmi_chunk_slabs[(e >> HMI_E_ROW_SHIFT) - 1];
        k->next = c;
        k->end = c + HMI_ARENA_CHUNK;
    }
    char *slab = k->next;
    k->next += ss;
    /* published before any of its objects is handed out */
    __atomic_store_n(&k->row[((uintptr_t)slab & (HMI_ARENA_CHUNK - 1)) >> HMI_SLAB_SHIFT >> code],
                     (uint16_t)(cls + 1), __ATOMIC_RELEASE);
    pthread_mutex_unlock(&k->lock);
    return slab;
}

/* Objects a fresh slab of class cls holds (its unused end is less than one). */
static uint32_t slab_objects(unsigned cls)
{
    return (uint32_t)(((size_t)1 << (HMI_SLAB_SHIFT + hmi_arena_slab_code(cls))) /
                      hmi_arena_class_size(cls));
}

/* Refill s (the calling stripe's shard of striped class cls, locked, holding nothing)
 * from the class's pool: a batch another stripe gave back (then on s->free), else a
 * run of up to batch(cls) objects cut from the pool's slab, a new slab when it has
 * none left. 0, or -1 when the tier has no memory. */
static int refill(uint32_t tier, unsigned cls, struct cls_state *s, hmi_chunk_fn map_chunk)
{
    struct cls_pool *q = &g_cls[tier]->pool[cls];
    unsigned b = g_batch[cls];
    pthread_mutex_lock(&q->lock);
    if (q->batches) {
        void **head = q->batches;
        q->batches = head[1];
        pthread_mutex_unlock(&q->lock);
        head[1] = NULL;
        s->free = head;
        s->run = run_pack(NULL, 0, b);
        return 0;
    }
    if (!q->nleft) {
        char *slab = new_slab(tier, cls, hmi_arena_slab_code(cls), map_chunk);
        if (!slab) {
            pthread_mutex_unlock(&q->lock);
            return -1;
        }
        q->bump = slab;
        q->nleft = slab_objects(cls);
    }
    uint32_t n = q->nleft < b ? q->nleft : b;
    s->run = run_pack(q->bump, n, 0);
    q->bump += (size_t)n * hmi_arena_class_size(cls);
    q->nleft -= n;
    pthread_mutex_unlock(&q->lock);
    return 0;
}

/* Give s (the calling thread's shard of cls, locked, holding nothing) objects: a
 * striped class's from its pool (refill), a larger class's shard a whole slab. 0, or
 * -1 when the tier has no memory. */
static int take(uint32_t tier, unsigned cls, struct cls_state *s, hmi_chunk_fn map_chunk)
{
    if (striped(cls))
        return refill(tier, cls, s, map_chunk);
    char *c = new_slab(tier, cls, hmi_arena_slab_code(cls), map_chunk);
    if (!c)
        return -1;
    s->run = run_pack(c, slab_objects(cls), 0);
    return 0;
}

void *hmi_arena_alloc(uint32_t tier, unsigned cls, size_t size, int zero,
                      hmi_chunk_fn map_chunk)
{
    struct cls_state *s = shard(tier, cls);
    void *p;
    pthread_mutex_lock(&s->lock);
    if (!s->free && s->full) {
        s->free = s->full;
        s->full = NULL;
        s->run = run_pack(run_next(s->run), run_left(s->run), g_batch[cls]);
    }
    if (!s->free && !run_left(s->run) && take(tier, cls, s, map_chunk) != 0) {
        pthread_mutex_unlock(&s->lock);
        return NULL;
    }
    if (s->free) {
        p = s->free;
        s->free = *(void **)p;
        if (striped(cls))
            s->run -= 1ull << 56;
        pthread_mutex_unlock(&s->lock);
        /* a reused object holds old data (and the link); fresh slab memory is zero */
        if (zero)
            memset(p, 0, size);
        else
            *(void **)p = NULL;
        return p;
    }
    p = run_next(s->run);
    s->run = run_pack((char *)p + hmi_arena_class_size(cls), run_left(s->run) - 1,
                      run_nfree(s->run));
    pthread_mutex_unlock(&s->lock);
    return p;
}

void hmi_arena_free(uint32_t tier, unsigned cls, void *p)
{
    struct cls_state *s = shard(tier, cls);
    pthread_mutex_lock(&s->lock);
    if (striped(cls) && run_nfree(s->run) == g_batch[cls]) {
        /* free is a whole batch: it becomes full, and the batch full held goes to the
         * pool, for any stripe */
        void **give = s->full;
        s->full = s->free;
        s->free = NULL;
        s->run = run_pack(run_next(s->run), run_left(s->run), 0);
        if (give) {
            struct cls_pool *q = &g_cls[tier]->pool[cls];
            pthread_mutex_lock(&q->lock);
            give[1] = q->batches;
            q->batches = give;
            pthread_mutex_unlock(&q->lock);
        }
    }
    *(void **)p = s->free;
    s->free = p;
    if (striped(cls))
        s->run += 1ull << 56;
    pthread_mutex_unlock(&s->lock);
}

int hmi_arena_reset(uint32_t tier, int on)
{
    g_on[tier] = 0;
    if (!g_cls[tier]) {
        if (!on)
            return 0;
        void *m = mmap(NULL, sizeof(struct arena_state), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return -1;
        g_cls[tier] = m;
    }
    for (unsigned c = 0; c < HMI_ARENA_CLASSES; c++) {
        for (unsigned k = 0; k < HM_STRIPES; k++) {
            struct cls_state *s = &g_cls[tier]->shard[c][k];
            pthread_mutex_init(&s->lock, NULL);
            s->free = s->full = NULL;
            s->run = 0;
        }
    }
    if (!g_batch[HMI_ARENA_STRIPED_MAX])                    /* once: the same for all */
        for (unsigned c = 0; c <= HMI_ARENA_STRIPED_MAX; c++)
            g_batch[c] = (uint16_t)hmi_arena_batch(c);
    for (unsigned c = 0; c <= HMI_ARENA_STRIPED_MAX; c++) {
        struct cls_pool *q = &g_cls[tier]->pool[c];
        pthread_mutex_init(&q->lock, NULL);
        q->batches = NULL;
        q->bump = NULL;
        q->nleft = 0;
    }
    for (unsigned c = 0; c < HMI_SLAB_CODES; c++) {
        struct carver *k = &g_carv[tier][c];
        pthread_mutex_init(&k->lock, NULL);
        k->next = k->end = NULL;
        k->row = NULL;
    }
    __atomic_store_n(&g_chunks[tier], 0, __ATOMIC_RELAXED);
    g_on[tier] = on;
    return 0;
}

/* Every lock of the tiers that use the arena, always in this order (tiers are
 * opened before any thread allocates from them, so g_on does not change here):
 * shards, then pools, then carvers, as a stripe's refill takes them. */
void hmi_arena_atfork_prepare(void)
{
    for (uint32_t t = 0; t < HMI_MAX_TIERS; t++)
        for (unsigned c = 0; g_on[t] && c < HMI_ARENA_CLASSES; c++)
            for (unsigned k = 0; k < HM_STRIPES; k++)
                pthread_mutex_lock(&g_cls[t]->shard[c][k].lock);
    for (uint32_t t = 0; t < HMI_MAX_TIERS; t++)
        for (unsigned c = 0; g_on[t] && c <= HMI_ARENA_STRIPED_MAX; c++)
            pthread_mutex_lock(&g_cls[t]->pool[c].lock);
    for (uint32_t t = 0; t < HMI_MAX_TIERS; t++)
        for (unsigned c = 0; g_on[t] && c < HMI_SLAB_CODES; c++)
            pthread_mutex_lock(&g_carv[t][c].lock);
}

void hmi_arena_atfork_release(void)
{
    for (uint32_t t = 0; t < HMI_MAX_TIERS; t++)
        for (unsigned c = 0; g_on[t] && c < HMI_SLAB_CODES; c++)
            pthread_mutex_unlock(&g_carv[t][c].lock);
    for (uint32_t t = 0; t < HMI_MAX_TIERS; t++)
        for (unsigned c = 0; g_on[t] && c <= HMI_ARENA_STRIPED_MAX; c++)
            pthread_mutex_unlock(&g_cls[t]->pool[c].lock);
    for (uint32_t t = 0; t < HMI_MAX_TIERS; t++)
        for (unsigned c = 0; g_on[t] && c < HMI_ARENA_CLASSES; c++)
            for (unsigned k = 0; k < HM_STRIPES; k++)
                pthread_mutex_unlock(&g_cls[t]->shard[c][k].lock);
}
