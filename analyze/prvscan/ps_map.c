/* ps_map.c — live blocks of one task ordered by start address.
 *
 * Samples ask "which live block holds this address" (the greatest start <= addr),
 * frees and reallocs ask for an exact start, a new block for its neighbours. The map
 * is a B+tree of height two: sorted chunks of up to CH blocks, and a sorted array
 * with each chunk's first start. A lookup is two binary searches over contiguous
 * keys (a few cache lines, no pointer chasing); an insert or removal moves at most
 * one chunk's entries, and a split or an emptied chunk moves the (CH times smaller)
 * chunk array. Chunks below a quarter full merge with a neighbour, so memory stays
 * proportional to the live blocks. */
#include "ps.h"

#include <stdlib.h>
#include <string.h>

#define CH 64u

struct chunk {
    uint32_t n;
    uint64_t start[CH];          /* the search keys: a task's keys stay cache-resident */
    struct ps_block *b;          /* CH blocks, allocated apart from the keys */
};

static struct chunk *chunk_new(void)
{
    struct chunk *c = ps_xmalloc(sizeof(*c));
    c->n = 0;
    c->b = ps_xmalloc(CH * sizeof(struct ps_block));
    return c;
}

static void chunk_free(struct chunk *c)
{
    free(c->b);
    free(c);
}

struct ps_map {
    struct chunk **c;
    uint64_t *first;             /* first[i] == c[i]->start[0] */
    uint32_t n, cap;
    struct ps_live *count;
};

struct ps_map *ps_map_new(struct ps_live *count)
{
    struct ps_map *m = ps_xcalloc(1, sizeof(*m));
    m->count = count;
    return m;
}

void ps_map_free(struct ps_map *m)
{
    if (!m)
        return;
    for (uint32_t i = 0; i < m->n; i++)
        chunk_free(m->c[i]);
    free(m->c);
    free(m->first);
    free(m);
}

/* Number of keys in the sorted a[0, n) that are <= key; branch-free halving. */
static inline uint32_t upper(const uint64_t *a, uint32_t n, uint64_t key)
{
    if (!n)
        return 0;
    const uint64_t *b = a;
    while (n > 1) {
        uint32_t half = n / 2;
        b = b[half] <= key ? b + half : b;
        n -= half;
    }
    return (uint32_t)(b - a) + (*b <= key);
}

/* Chunk array: insert an empty slot at i, or remove slot i. */
static void slot_insert(struct ps_map *m, uint32_t i, struct chunk *c)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 4;
        m->c = ps_xrealloc(m->c, m->cap * sizeof(*m->c));
        m->first = ps_xrealloc(m->first, m->cap * sizeof(*m->first));
    }
    memmove(m->c + i + 1, m->c + i, (m->n - i) * sizeof(*m->c));
    memmove(m->first + i + 1, m->first + i, (m->n - i) * sizeof(*m->first));
    m->c[i] = c;
    m->first[i] = c->start[0];
    m->n++;
}

static void slot_remove(struct ps_map *m, uint32_t i)
{
    chunk_free(m->c[i]);
    memmove(m->c + i, m->c + i + 1, (m->n - i - 1) * sizeof(*m->c));
    memmove(m->first + i, m->first + i + 1, (m->n - i - 1) * sizeof(*m->first));
    m->n--;
}

static void put(struct chunk *c, uint32_t k, const struct ps_block *b)
{
    memmove(c->start + k + 1, c->start + k, (c->n - k) * sizeof(uint64_t));
    memmove(c->b + k + 1, c->b + k, (c->n - k) * sizeof(struct ps_block));
    c->start[k] = b->start;
    c->b[k] = *b;
    c->n++;
}

void ps_map_insert(struct ps_map *m, const struct ps_block *b)
{
    if (++m->count->now > m->count->peak)
        m->count->peak = m->count->now;
    if (!m->n) {
        struct chunk *c = chunk_new();
        put(c, 0, b);
        slot_insert(m, 0, c);
        return;
    }
    uint32_t ci = upper(m->first, m->n, b->start);
    ci = ci ? ci - 1 : 0;              /* below every start: the first chunk */
    struct chunk *c = m->c[ci];
    if (c->n == CH) {                  /* split in halves; the new one after it */
        struct chunk *d = chunk_new();
        d->n = CH / 2;
        memcpy(d->start, c->start + CH / 2, (CH / 2) * sizeof(uint64_t));
        memcpy(d->b, c->b + CH / 2, (CH / 2) * sizeof(struct ps_block));
        c->n = CH / 2;
        slot_insert(m, ci + 1, d);
        if (b->start >= d->start[0])
            c = m->c[++ci];
    }
    put(c, upper(c->start, c->n, b->start), b);
    m->first[ci] = c->start[0];
}

/* Where the greatest start <= key is: chunk *ci, index *k. 0 when there is none. */
static int locate(const struct ps_map *m, uint64_t key, uint32_t *ci, uint32_t *k)
{
    uint32_t i = upper(m->first, m->n, key);
    if (!i)
        return 0;
    const struct chunk *c = m->c[i - 1];
    *ci = i - 1;
    *k = upper(c->start, c->n, key) - 1;     /* >= 0: c->start[0] <= key */
    return 1;
}

int ps_map_take(struct ps_map *m, uint64_t start, struct ps_block *out)
{
    uint32_t ci, k;
    if (!locate(m, start, &ci, &k) || m->c[ci]->start[k] != start)
        return 0;
    struct chunk *c = m->c[ci];
    if (out)
        *out = c->b[k];
    m->count->now--;
    c->n--;
    memmove(c->start + k, c->start + k + 1, (c->n - k) * sizeof(uint64_t));
    memmove(c->b + k, c->b + k + 1, (c->n - k) * sizeof(struct ps_block));
    if (!c->n) {
        slot_remove(m, ci);
        return 1;
    }
    m->first[ci] = c->start[0];
    if (c->n < CH / 4) {               /* merge with a neighbour when both fit in half */
        uint32_t a = ci, b = ci + 1;
        if (b >= m->n || m->c[a]->n + m->c[b]->n > CH / 2) {
            b = ci;
            a = ci - 1;
            if (!ci || m->c[a]->n + m->c[b]->n > CH / 2)
                return 1;
        }
        struct chunk *x = m->c[a], *y = m->c[b];
        memcpy(x->start + x->n, y->start, y->n * sizeof(uint64_t));
        memcpy(x->b + x->n, y->b, y->n * sizeof(struct ps_block));
        x->n += y->n;
        slot_remove(m, b);
    }
    return 1;
}

const struct ps_block *ps_map_find(const struct ps_map *m, uint64_t addr)
{
    uint32_t ci, k;
    if (!locate(m, addr, &ci, &k))
        return NULL;
    const struct ps_block *b = &m->c[ci]->b[k];
    /* addr - start < size also rejects size-0 blocks and cannot overflow */
    return addr - b->start < b->size ? b : NULL;
}

const struct ps_block *ps_map_conflict(const struct ps_map *m, uint64_t start, uint64_t size)
{
    uint32_t ci = 0, k = 0;
    const struct chunk *c;
    if (locate(m, start, &ci, &k)) {
        c = m->c[ci];
        const struct ps_block *b = &c->b[k];
        if (b->start == start || start - b->start < b->size)
            return b;
        if (++k == c->n) {             /* the first block after start */
            ci++;
            k = 0;
        }
    }
    if (ci >= m->n)
        return NULL;
    const struct ps_block *next = &m->c[ci]->b[k];
    return next->start - start < size ? next : NULL;
}

void ps_map_each(const struct ps_map *m, void (*fn)(void *ctx, const struct ps_block *b),
                 void *ctx)
{
    for (uint32_t i = 0; i < m->n; i++)
        for (uint32_t k = 0; k < m->c[i]->n; k++)
            fn(ctx, &m->c[i]->b[k]);
}
