/* hmi_match.c — see hmi_match.h. Runs inside the malloc interposer: memory from
 * mmap only, no stdio, no locks on the lookup path. */
#include "hmi_match.h"
#include "hm_modmap.h"
#include "hm_unwind.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

/* g_memo values: not looked at yet, not in the placement, else index + MEMO_BASE. */
#define MEMO_UNSEEN 0u
#define MEMO_ABSENT 1u
#define MEMO_BASE   2u

struct site_ent {
    uint64_t hash;              /* chain hash of the site's frames */
    uint32_t site;              /* index + 1 into g_p->sites; 0: empty slot */
    uint32_t pad;
};

struct cache_ent {
    uint64_t key;               /* raw_hash of raw[0..n) */
    uint32_t epoch, gen;        /* valid only while both are current; epoch 0: empty */
    int32_t n, site;
    uint64_t raw[HM_MAX_DEPTH];
};

size_t hmi_match_size_lo = 1;
size_t hmi_match_size_hi = 0;

static const struct hmi_placement *g_p;
static struct site_ent *g_tab;
static uint64_t g_tab_mask;
static _Atomic uint32_t *g_memo;            /* by hm_modmap id, 1..HM_MAX_MODULES */
static uint32_t g_unknown;                  /* memo value of frames outside any module */
static int g_depth;
static uint32_t g_epochs;                   /* inits so far */
static _Atomic uint32_t g_live;             /* epoch of the current tables; 0: none */
static void *g_mem;
static size_t g_mem_len;

static __thread struct cache_ent t_cache[HMI_MATCH_CACHE_SLOTS]
    __attribute__((tls_model("initial-exec")));
static __thread uint64_t t_misses __attribute__((tls_model("initial-exec")));
static __thread int t_last_hit __attribute__((tls_model("initial-exec")));
/* the last decision was kept in the raw cache (its frames all in known modules) */
static __thread int t_last_kept __attribute__((tls_model("initial-exec")));

struct fp_ent {
    uint64_t cfa;
    uint32_t epoch, gen;                /* epoch 0: empty */
    int32_t n, site;
    uint64_t where[HMI_FP_DEPTH];
    uint64_t raw[HMI_FP_DEPTH];
};
static __thread struct fp_ent t_fp[HMI_FP_SLOTS][HMI_FP_WAYS] __attribute__((tls_model("initial-exec")));
static __thread uint8_t t_fp_victim[HMI_FP_SLOTS] __attribute__((tls_model("initial-exec")));
static __thread uint64_t t_stk_lo, t_stk_hi __attribute__((tls_model("initial-exec")));
static __thread int t_stk_state __attribute__((tls_model("initial-exec")));  /* 0 ?, 1 ok, -1 no */
static __thread uint32_t t_fp_fills, t_fp_hits __attribute__((tls_model("initial-exec")));

HM_INLINE uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
}

/* The cache key: one multiply per address (~1 ns; the full mix above cost ~4 ns a
 * frame on the hot path), folded so that the slot bits depend on every address.
 * Collisions only cost a miss: an entry also holds the addresses themselves. */
HM_INLINE uint64_t raw_hash(const uint64_t *raw, int n)
{
    uint64_t h = (uint64_t)n;
    for (int i = 0; i < n; i++)
        h = (h ^ raw[i]) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29) ^ (h >> 47);
}

/* Chain hash over (placement module index, offset) pairs: the same at init (from the
 * placement) and at lookup (from resolved frames). */
HM_INLINE uint64_t frame_mix(uint64_t h, uint32_t module, uint64_t offset)
{
    return mix(mix(h, module), offset);
}

static uint32_t find_placement_module(const char *path, uint64_t len, uint64_t hash)
{
    for (uint32_t k = 0; k < g_p->nmodules; k++) {
        const struct hmi_module *m = &g_p->modules[k];
        if (m->hash == hash && m->len == len && memcmp(m->path, path, len) == 0)
            return k + MEMO_BASE;
    }
    return MEMO_ABSENT;
}

/* hm_modmap id -> memo value, resolved on first sight. Racing threads store the
 * same value. */
static uint32_t resolve(uint32_t id)
{
    if (id == 0)
        return g_unknown;
    if (id > HM_MAX_MODULES)
        return MEMO_ABSENT;
    uint32_t v = atomic_load_explicit(&g_memo[id], memory_order_relaxed);
    if (hm_likely(v != MEMO_UNSEEN))
        return v;
    const struct hm_module *m = hm_modmap_get(id);
    v = m ? find_placement_module(m->path, m->path_len, m->path_hash) : MEMO_ABSENT;
    atomic_store_explicit(&g_memo[id], v, memory_order_relaxed);
    return v;
}

/* The uncached decision: resolve every frame, then probe the site table. *unknown
 * is set when a frame looked at lies outside every module. */
static int lookup(const uint64_t *raw, int n, int *unknown)
{
    uint32_t mod[HM_MAX_DEPTH];
    uint64_t off[HM_MAX_DEPTH];
    uint64_t h = (uint64_t)n;
    for (int i = 0; i < n; i++) {
        uint64_t f = hm_modmap_frame(raw[i]);
        *unknown |= (f >> HM_FRAME_MODSHIFT) == 0;
        uint32_t v = resolve((uint32_t)(f >> HM_FRAME_MODSHIFT));
        if (v < MEMO_BASE)
            return -1;                  /* a module no site names */
        mod[i] = v - MEMO_BASE;
        off[i] = f & HM_FRAME_OFFMASK;
        h = frame_mix(h, mod[i], off[i]);
    }
    for (uint64_t i = h & g_tab_mask;; i = (i + 1) & g_tab_mask) {
        const struct site_ent *e = &g_tab[i];
        if (!e->site)
            return -1;
        if (e->hash != h)
            continue;
        const struct hmi_site *s = &g_p->sites[e->site - 1];
        if (s->nframes != (uint32_t)n)
            continue;
        int k = 0;
        while (k < n && s->frames[k].module == mod[k] && s->frames[k].offset == off[k])
            k++;
        if (k == n)
            return (int)(e->site - 1);
    }
}

int hmi_match_site(const uint64_t *raw, int n)
{
    uint32_t epoch = atomic_load_explicit(&g_live, memory_order_acquire);
    t_last_hit = t_last_kept = 0;
    if (hm_unlikely(epoch == 0) || n <= 0)
        return -1;
    if (n > g_depth)
        n = g_depth;
    uint64_t key = raw_hash(raw, n);
    uint32_t gen = hm_modmap_generation();
    struct cache_ent *e = &t_cache[key & (HMI_MATCH_CACHE_SLOTS - 1)];
    if (hm_likely(e->key == key && e->epoch == epoch && e->gen == gen && e->n == n &&
                  memcmp(e->raw, raw, (size_t)n * sizeof(uint64_t)) == 0)) {
        t_last_hit = t_last_kept = 1;
        return e->site;
    }
    t_misses++;
    int unknown = 0;
    int site = lookup(raw, n, &unknown);
    if (unknown)
        return site;        /* a library may be mapped there later (no dlclose seen) */
    /* Empty the slot first: a signal handler that allocates on this thread between
     * the stores below must not see a half-written entry as valid. */
    e->epoch = 0;
    atomic_signal_fence(memory_order_seq_cst);
    e->key = key;
    e->gen = gen;
    e->n = n;
    e->site = site;
    memcpy(e->raw, raw, (size_t)n * sizeof(uint64_t));
    atomic_signal_fence(memory_order_seq_cst);
    e->epoch = epoch;
    t_last_kept = 1;
    return site;
}

int hmi_match_site_tier(int site)
{
    return site >= 0 && g_p ? (int)g_p->sites[site].tier : -1;
}

int hmi_match_chain(const uint64_t *raw, int n)
{
    return hmi_match_site_tier(hmi_match_site(raw, n));
}

/* Unwind the caller (inline: not a frame of its own) and match the chain. */
HM_INLINE int unwind_match(void)
{
    uint64_t raw[HM_MAX_DEPTH];
    if (hm_unlikely(atomic_load_explicit(&g_live, memory_order_acquire) == 0))
        return t_last_hit = 0, -1;
    int n = hm_backtrace(raw, g_depth);
    return hmi_match_site(raw, n);
}

int hmi_match_here_site(void)
{
    return unwind_match();
}

int hmi_match_here(void)
{
    return hmi_match_site_tier(hmi_match_here_site());
}

/* ---- stack fingerprints ---- */

HM_INLINE unsigned fp_set(uint64_t cfa)
{
    return (unsigned)((cfa >> 4 ^ cfa >> 9) & (HMI_FP_SLOTS - 1));
}

int hmi_match_fp(uint64_t cfa)
{
    if (t_stk_state <= 0 || cfa < t_stk_lo || cfa >= t_stk_hi)
        return HMI_FP_MISS;
    uint32_t epoch = atomic_load_explicit(&g_live, memory_order_acquire);
    if (epoch == 0)
        return HMI_FP_MISS;
    uint32_t gen = hm_modmap_generation();
    const struct fp_ent *set = t_fp[fp_set(cfa)];
    for (unsigned w = 0; w < HMI_FP_WAYS; w++) {
        const struct fp_ent *e = &set[w];
        if (e->cfa != cfa || e->epoch != epoch || e->gen != gen)
            continue;
        int i = 0;
        while (i < e->n && *(const volatile uint64_t *)(uintptr_t)e->where[i] == e->raw[i])
            i++;
        if (i == e->n) {
            t_fp_hits++;
            return e->site;
        }
    }
    return HMI_FP_MISS;
}

static void stack_bounds(void)
{
    pthread_attr_t a;
    void *lo;
    size_t len;
    t_stk_state = -1;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return;
    if (pthread_attr_getstack(&a, &lo, &len) == 0 && len) {
        t_stk_lo = (uint64_t)(uintptr_t)lo;
        t_stk_hi = t_stk_lo + len;
        t_stk_state = 1;
    }
    pthread_attr_destroy(&a);
}

static void fp_fill(uint64_t cfa, int site)
{
    if (t_stk_state == 0)
        stack_bounds();
    if (t_stk_state < 0 || cfa < t_stk_lo || cfa >= t_stk_hi || g_depth > HMI_FP_DEPTH)
        return;
    /* budget: the first fills are free, then one per four fingerprint hits */
    if (t_fp_fills >= 16 && t_fp_hits < 4 * t_fp_fills)
        return;
    t_fp_fills++;
    uint64_t raw[HMI_FP_DEPTH], where[HMI_FP_DEPTH];
    int n = hm_backtrace_where(raw, where, g_depth);
    if (n <= 0)
        return;
    /* cfa - 8 holds the slow path's own return address: nothing lower is read */
    for (int i = 0; i < n; i++)
        if (where[i] < cfa - 8 || where[i] + 8 > t_stk_hi)
            return;
    /* The chain seen this way must be the one just decided on. */
    if (hmi_match_site(raw, n) != site)
        return;
    /* an empty or stale way of the set, else the next in turn */
    unsigned k = fp_set(cfa), w = 0;
    uint32_t epoch = atomic_load_explicit(&g_live, memory_order_acquire);
    uint32_t gen = hm_modmap_generation();
    while (w < HMI_FP_WAYS && t_fp[k][w].epoch == epoch && t_fp[k][w].gen == gen)
        w++;
    if (w == HMI_FP_WAYS)
        w = t_fp_victim[k]++ % HMI_FP_WAYS;
    struct fp_ent *e = &t_fp[k][w];
    e->epoch = 0;
    atomic_signal_fence(memory_order_seq_cst);
    e->cfa = cfa;
    e->n = n;
    e->site = site;
    e->gen = hm_modmap_generation();
    memcpy(e->raw, raw, (size_t)n * sizeof(uint64_t));
    memcpy(e->where, where, (size_t)n * sizeof(uint64_t));
    atomic_signal_fence(memory_order_seq_cst);
    e->epoch = atomic_load_explicit(&g_live, memory_order_acquire);
}

int hmi_match_fp_decide(uint64_t cfa)
{
    int site = unwind_match();
    /* a chain decided twice, or a placed one (it recurs: it was recorded as a site) */
    if (t_last_hit || (site >= 0 && t_last_kept))
        fp_fill(cfa, site);
    return site;
}

int hmi_match_depth(void) { return atomic_load(&g_live) ? g_depth : 0; }

uint64_t hmi_match_thread_misses(void) { return t_misses; }

uint64_t hmi_match_thread_fp_hits(void) { return t_fp_hits; }

void hmi_match_fini(void)
{
    atomic_store(&g_live, 0);
    hmi_match_size_lo = 1;
    hmi_match_size_hi = 0;
    if (g_mem)
        munmap(g_mem, g_mem_len);
    g_mem = NULL;
    g_mem_len = 0;
    g_tab = NULL;
    g_memo = NULL;
    g_p = NULL;
    g_depth = 0;
}

int hmi_match_init(const struct hmi_placement *p)
{
    hmi_match_fini();
    uint64_t depth = p->depth < HM_MAX_DEPTH ? p->depth : HM_MAX_DEPTH;
    uint64_t cap = 16;
    while (cap < 2 * (uint64_t)p->nsites)
        cap *= 2;
    size_t tab_bytes = cap * sizeof(struct site_ent);
    size_t len = tab_bytes + (HM_MAX_MODULES + 1) * sizeof(uint32_t);
    void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return -1;
    g_mem = mem;
    g_mem_len = len;
    g_tab = mem;
    g_tab_mask = cap - 1;
    g_memo = (_Atomic uint32_t *)((char *)mem + tab_bytes);   /* zero: MEMO_UNSEEN */
    g_p = p;
    g_depth = (int)depth;
    g_unknown = find_placement_module("??", 2, hm_fnv1a("??", 2, 0xcbf29ce484222325ull));
    for (uint32_t si = 0; si < p->nsites; si++) {
        const struct hmi_site *s = &p->sites[si];
        if (s->nframes == 0 || s->nframes > depth)
            continue;                   /* longer than any chain we look up */
        uint64_t h = s->nframes;
        for (uint32_t k = 0; k < s->nframes; k++)
            h = frame_mix(h, s->frames[k].module, s->frames[k].offset);
        uint64_t i = h & g_tab_mask;
        while (g_tab[i].site)
            i = (i + 1) & g_tab_mask;
        /* A chain written twice (hex case) keeps its first line: lookup stops at the
         * first equal entry. */
        g_tab[i].hash = h;
        g_tab[i].site = si + 1;
    }
    if (p->nsites) {
        hmi_match_size_lo = (size_t)p->size_min;
        hmi_match_size_hi = (size_t)p->size_max;
    }
    atomic_store(&g_live, ++g_epochs ? g_epochs : ++g_epochs);
    return 0;
}
