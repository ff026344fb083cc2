/* hmi_arena.c — size classes, free lists, slabs and chunk carving for placed objects
 * of up to 1 MiB (see hmi_arena.h for why and how). */
#include "hmi_arena.h"
#include "hmi_backend.h"
#include "hmi_pagemap.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

struct cls_state {
    pthread_mutex_t lock;
    void *free;                 /* freed objects, linked through their first word */
    char *bump, *end;           /* the current slab's part never handed out */
} __attribute__((aligned(64)));

/* Per tier and slab size: the chunk being cut into slabs of that size. */
struct carver {
    pthread_mutex_t lock;
    char *next, *end;           /* the chunk's slabs not cut yet */
    uint16_t *row;              /* the chunk's row of hmi_chunk_slabs */
} __attribute__((aligned(64)));
static struct carver g_carv[HMI_MAX_TIERS][HMI_SLAB_CODES];

/* Per tier, per class, one shard per thread stripe (hm_util.h): threads of different
 * stripes never share a lock or a line. A freed object goes to the freeing thread's
 * shard (objects of one class are interchangeable). Mapped when a tier first uses the
 * arena (384 KiB) and kept. */
typedef struct cls_state shards_t[HMI_ARENA_CLASSES][HM_STRIPES];
static shards_t *g_cls[HMI_MAX_TIERS];
static int g_on[HMI_MAX_TIERS];             /* the tier uses the arena: fork takes its locks */

/* Classes over 8 KiB (slabs of 256 KiB and more) have one shard for all threads: a
 * partly used slab per thread would hold back up to 2 MiB each, and threads allocate
 * objects that large too rarely to contend. */
static struct cls_state *shard(uint32_t tier, unsigned cls)
{
    return &(*g_cls[tier])[cls][cls > HMI_ARENA_STRIPED_MAX ? 0 : hm_stripe()];
}

size_t hmi_arena_class_size(unsigned c)
{
    if (c < 32)
        return (size_t)(c + 1) * 16;
    unsigned k = (c - 32) / 32, j = (c - 32) % 32;
    return ((size_t)512 << k) + (size_t)(j + 1) * ((size_t)16 << k);
}

unsigned hmi_arena_slab_code(unsigned c)
{
    size_t want = hmi_arena_class_size(c) * 8;
    unsigned code = 0;
    while (code + 1 < HMI_SLAB_CODES && ((size_t)1 << (HMI_SLAB_SHIFT + code)) < want)
        code++;
    return code;
}

/* The class of n bytes: 1..512 in steps of 16, then (512 << k, 1024 << k] in 32. */
static int class_of(size_t n)
{
    if (n <= 512)
        return n ? (int)((n - 1) / 16) : 0;
    unsigned k = (unsigned)(63 - __builtin_clzll((unsigned long long)(n - 1))) - 9;
    size_t j = (n - 1 - ((size_t)512 << k)) / ((size_t)16 << k);
    return (int)(32 + 32 * k + j);
}

int hmi_arena_class(size_t size, size_t align)
{
    if (align > 16) {
        /* the power-of-two class of max(size, align): its objects are aligned to it */
        size_t n = size > align ? size : align;
        if (n > HMI_ARENA_MAX)
            return -1;
        size_t p = (size_t)1 << (64 - __builtin_clzll((unsigned long long)(n - 1)));
        n = n & (n - 1) ? p : n;
        return class_of(n);
    }
    return size > HMI_ARENA_MAX ? -1 : class_of(size);
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

void *hmi_arena_alloc(uint32_t tier, unsigned cls, size_t size, int zero,
                      hmi_chunk_fn map_chunk)
{
    struct cls_state *s = shard(tier, cls);
    size_t csize = hmi_arena_class_size(cls);
    void *p;
    pthread_mutex_lock(&s->lock);
    if (s->free) {
        p = s->free;
        s->free = *(void **)p;
        pthread_mutex_unlock(&s->lock);
        /* a reused object holds old data (and the link); fresh chunk memory is zero */
        if (zero)
            memset(p, 0, size);
        else
            *(void **)p = NULL;
        return p;
    }
    if ((size_t)(s->end - s->bump) < csize) {
        unsigned code = hmi_arena_slab_code(cls);
        size_t ss = (size_t)1 << (HMI_SLAB_SHIFT + code);
        char *c = new_slab(tier, cls, code, map_chunk);
        if (!c) {
            pthread_mutex_unlock(&s->lock);
            return NULL;
        }
        s->bump = c;
        s->end = c + ss / csize * csize;
    }
    p = s->bump;
    s->bump += csize;
    pthread_mutex_unlock(&s->lock);
    return p;
}

void hmi_arena_free(uint32_t tier, unsigned cls, void *p)
{
    struct cls_state *s = shard(tier, cls);
    pthread_mutex_lock(&s->lock);
    *(void **)p = s->free;
    s->free = p;
    pthread_mutex_unlock(&s->lock);
}

int hmi_arena_reset(uint32_t tier, int on)
{
    g_on[tier] = 0;
    if (!g_cls[tier]) {
        if (!on)
            return 0;
        void *m = mmap(NULL, sizeof(shards_t), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return -1;
        g_cls[tier] = m;
    }
    for (unsigned c = 0; c < HMI_ARENA_CLASSES; c++) {
        for (unsigned k = 0; k < HM_STRIPES; k++) {
            struct cls_state *s = &(*g_cls[tier])[c][k];
            pthread_mutex_init(&s->lock, NULL);
            s->free = NULL;
            s->bump = s->end = NULL;
        }
    }
    for (unsigned c = 0; c < HMI_SLAB_CODES; c++) {
        struct carver *k = &g_carv[tier][c];
        pthread_mutex_init(&k->lock, NULL);
        k->next = k->end = NULL;
        k->row = NULL;
    }
    g_on[tier] = on;
    return 0;
}

/* Every lock of the tiers that use the arena, always in this order (tiers are
 * opened before any thread allocates from them, so g_on does not change here). */
void hmi_arena_atfork_prepare(void)
{
    for (uint32_t t = 0; t < HMI_MAX_TIERS; t++)
        for (unsigned c = 0; g_on[t] && c < HMI_ARENA_CLASSES; c++)
            for (unsigned k = 0; k < HM_STRIPES; k++)
                pthread_mutex_lock(&(*g_cls[t])[c][k].lock);
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
        for (unsigned c = 0; g_on[t] && c < HMI_ARENA_CLASSES; c++)
            for (unsigned k = 0; k < HM_STRIPES; k++)
                pthread_mutex_unlock(&(*g_cls[t])[c][k].lock);
}
