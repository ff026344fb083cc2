/* hmi_arena.c — size classes, free lists and chunk carving for placed objects of up
 * to 1 MiB (see hmi_arena.h for why and how). */
#include "hmi_arena.h"
#include "hmi_backend.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

struct cls_state {
    pthread_mutex_t lock;
    void *free;                 /* freed objects, linked through their first word */
    char *bump, *end;           /* the current chunk's part never handed out */
} __attribute__((aligned(64)));

/* Per tier, per class, one shard per thread stripe (hm_util.h): threads of different
 * stripes never share a lock or a line. A freed object goes to the freeing thread's
 * shard (objects of one class are interchangeable). Mapped when a tier first uses the
 * arena (60 KiB) and kept. */
typedef struct cls_state shards_t[HMI_ARENA_CLASSES][HM_STRIPES];
static shards_t *g_cls[HMI_MAX_TIERS];
static int g_on[HMI_MAX_TIERS];             /* the tier uses the arena: fork takes its locks */

static struct cls_state *shard(uint32_t tier, unsigned cls)
{
    return &(*g_cls[tier])[cls][hm_stripe()];
}

size_t hmi_arena_class_size(unsigned c)
{
    if (c < 8)
        return (size_t)(c + 1) * 16;
    unsigned k = (c - 8) / 4, j = (c - 8) % 4;
    return ((size_t)128 << k) + (size_t)(j + 1) * ((size_t)32 << k);
}

/* The class of n bytes: 1..128 in steps of 16, then (128 << k, 256 << k] in four. */
static int class_of(size_t n)
{
    if (n <= 128)
        return n ? (int)((n - 1) / 16) : 0;
    unsigned k = (unsigned)(63 - __builtin_clzll((unsigned long long)(n - 1))) - 7;
    size_t j = (n - 1 - ((size_t)128 << k)) / ((size_t)32 << k);
    return (int)(8 + 4 * k + j);
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
        char *c = map_chunk(tier, cls);
        if (!c) {
            pthread_mutex_unlock(&s->lock);
            return NULL;
        }
        s->bump = c;
        s->end = c + HMI_ARENA_CHUNK / csize * csize;
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
}

void hmi_arena_atfork_release(void)
{
    for (uint32_t t = 0; t < HMI_MAX_TIERS; t++)
        for (unsigned c = 0; g_on[t] && c < HMI_ARENA_CLASSES; c++)
            for (unsigned k = 0; k < HM_STRIPES; k++)
                pthread_mutex_unlock(&(*g_cls[t])[c][k].lock);
}
