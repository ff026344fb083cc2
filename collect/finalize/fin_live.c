/* fin_live.c — the live traced blocks of one process, ordered by address: exact
 * lookups for frees/reallocs and "which block contains this address" for samples.
 * A treap over a node pool (indices, not pointers, so the pool can grow); memory
 * is proportional to the number of live blocks, not to the trace length. */
#include "fin.h"

#include <stdlib.h>
#include <string.h>

struct node { uint64_t key, size, weight; uint32_t site, prio, l, r; };

struct fin_live {
    struct node *n;          /* n[0] is the null node */
    uint32_t cap, used, free_head, root;
    uint64_t rng;
};

struct fin_live *fin_live_new(void)
{
    struct fin_live *t = fin_xmalloc(sizeof(*t));
    t->cap = 1024;
    t->n = fin_xmalloc(t->cap * sizeof(struct node));
    t->used = 1;
    t->rng = 0x9e3779b97f4a7c15ull;
    return t;
}

void fin_live_free(struct fin_live *t)
{
    if (t) {
        free(t->n);
        free(t);
    }
}

static uint32_t new_node(struct fin_live *t, uint64_t key, uint64_t size, uint32_t site,
                         uint64_t weight)
{
    uint32_t i;
    if (t->free_head) {
        i = t->free_head;
        t->free_head = t->n[i].l;
    } else {
        if (t->used == t->cap) {
            t->cap *= 2;
            t->n = fin_xrealloc(t->n, t->cap * sizeof(struct node));
        }
        i = t->used++;
    }
    t->rng ^= t->rng << 13;
    t->rng ^= t->rng >> 7;
    t->rng ^= t->rng << 17;
    t->n[i] = (struct node){ key, size, weight, site, (uint32_t)t->rng, 0, 0 };
    return i;
}

/* split the subtree at i into keys < key (l) and keys >= key (r) */
static void split(struct fin_live *t, uint32_t i, uint64_t key, uint32_t *l, uint32_t *r)
{
    if (!i) {
        *l = *r = 0;
        return;
    }
    if (t->n[i].key < key) {
        split(t, t->n[i].r, key, &t->n[i].r, r);
        *l = i;
    } else {
        split(t, t->n[i].l, key, l, &t->n[i].l);
        *r = i;
    }
}

static uint32_t merge(struct fin_live *t, uint32_t a, uint32_t b)
{
    if (!a || !b)
        return a ? a : b;
    if (t->n[a].prio > t->n[b].prio) {
        t->n[a].r = merge(t, t->n[a].r, b);
        return a;
    }
    t->n[b].l = merge(t, a, t->n[b].l);
    return b;
}

uint32_t fin_live_take(struct fin_live *t, uint64_t key, int remove)
{
    uint32_t *link = &t->root;
    while (*link) {
        struct node *x = &t->n[*link];
        if (key == x->key) {
            uint32_t site = x->site, i = *link;
            if (remove) {
                *link = merge(t, x->l, x->r);
                t->n[i].l = t->free_head;
                t->free_head = i;
            }
            return site;
        }
        link = key < x->key ? &x->l : &x->r;
    }
    return 0;
}

void fin_live_put(struct fin_live *t, uint64_t key, uint64_t size, uint32_t site,
                  uint64_t weight)
{
    fin_live_take(t, key, 1);            /* a block at the same address is replaced */
    uint32_t i = new_node(t, key, size, site, weight), l, r;
    split(t, t->root, key, &l, &r);
    t->root = merge(t, merge(t, l, i), r);
}

uint32_t fin_live_find(const struct fin_live *t, uint64_t addr, uint64_t *base,
                       uint64_t *weight)
{
    uint32_t i = t->root, best = 0;
    while (i) {                           /* the greatest key <= addr */
        if (t->n[i].key <= addr) {
            best = i;
            i = t->n[i].r;
        } else {
            i = t->n[i].l;
        }
    }
    if (!best || addr - t->n[best].key >= (t->n[best].size ? t->n[best].size : 1))
        return 0;
    if (base)
        *base = t->n[best].key;
    if (weight)
        *weight = t->n[best].weight;
    return t->n[best].site;
}
