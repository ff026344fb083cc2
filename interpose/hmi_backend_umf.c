/* hmi_backend_umf.c — the umf:numa:LIST[:MODE] and umf:hugetlb backends: placed
 * objects from a pool of UMF (Intel's Unified Memory Framework, memkind's maintained
 * successor), libumf.so.1 dlopen'ed on the first umf tier, never linked.
 *
 * Loading: by the absolute path the build found (HMI_UMF_LIB, interpose/build.mk),
 * then by the loader's search path. Where neither loads, the tier is unavailable with
 * a one-line reason naming `make deps`, and its sites fall back. libumf's constructor
 * and hwloc's topology run inside the interposer's initialization, whose re-entrant
 * malloc calls go to glibc (hmi_boot.c), as memkind's dlopen does.
 *
 * Exit: libumf's destructor calls umfTearDown, which destroys UMF's global state (the
 * memory tracker its pools consult on free, its base allocator) once the reference
 * count umfInit took drops to zero. One umfInit of our own, never undone, keeps the
 * count above zero, so that state outlives every destructor and libc's final stdio
 * flush. Pools are never destroyed and their memory never unmapped at exit (only
 * hmi_backend_close, for tests, destroys a pool).
 *
 * Objects up to 1 MiB: libhmalloc's arena (hmi_arena.h, hmi_backend.c), as on every
 * other backend, whose chunks are whole 2 MiB granules of the tier's provider
 * (hmi_umf_chunk): 32 size classes per doubling cut from slabs that share chunks,
 * where UMF's disjoint pool rounds to powers of two and their midpoints (100-byte
 * objects filled 78 % of a tier, 5000-byte ones 61 %) and costs a tracker lookup and a
 * bucket lock per pair (bench/results/umf-2026-11-27-vm.md).
 * Larger objects: UMF's disjoint pool (the scalable pool needs oneTBB's libtbbmalloc,
 * which is not installed here, and the jemalloc pool is not in the pinned build), one
 * per thread stripe (hm_util.h) over the tier's provider, which passes them to the
 * provider. UMF's tracking is on: the tracker says which pool an object is from
 * (umfPoolByPtr: it is freed there) and knows its size, so that it can be freed,
 * reused and its usable size told.
 *   umf:numa:LIST[:MODE]  UMF's OS memory provider with the nodes and MODE (bind,
 *     preferred, interleave), under a provider of ours that asks it for whole 2 MiB-
 *     aligned granules and records them in the page map as the tier's (HMI_E_UMF), so
 *     that hmi_owner knows every pointer of the pool without asking UMF.
 *   umf:hugetlb  a range of address space twice the capacity rounded down to 2 MiB
 *     (unlimited: the hugepage pool's size at open), reserved at open and given to
 *     UMF's fixed provider, under a provider of ours that maps a 2 MiB hugepage
 *     (MAP_HUGETLB | MAP_FIXED) over every granule of what the fixed provider hands
 *     out that has none yet, and records it in the page map. Hugepages are taken as
 *     the tier fills, never more than the range, and kept; a pool run dry refuses the
 *     request (counted as a refused mapping). The capacity bounds the charges; the
 *     range's other half holds the slabs' unused ends, which are not charged (as on
 *     hugetlb). Mapping the whole range at open would take all of it whether used or
 *     not, and leave the pool no page for the copies a fork child needs when it writes
 *     private hugepages. The fixed provider's allocator rounds objects to 4 KiB pages
 *     (a 3 MB object takes 3 MB, not the 4 MiB of a hugetlb mapping of its own).
 *
 * Capacity: an object of the pool is charged its request rounded to 4 KiB pages
 * before UMF is asked (so a request over the capacity takes no hugepage), and given
 * back when it is freed.
 *
 * Fork: every call into UMF holds the calling thread's stripe's gate (an uncontended
 * mutex); the interposer's atfork handler takes every gate, so no thread is inside
 * UMF, holding UMF's locks, when the process forks. libumf has a prepare handler of
 * its own (it builds hwloc's topology, which allocates) that runs after ours: the
 * interposer marks the forking thread busy from its prepare handler on, so that
 * allocation goes to glibc instead of waiting for a gate ours holds.
 * Re-entrance: UMF's OS provider calls hwloc, which calls malloc; the interposer calls
 * every backend entry point with its busy flag set, so those calls go to glibc. */
#include "hmi_umf.h"
#include "hmi_charge.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#ifndef HMI_UMF_LIB
#define HMI_UMF_LIB "libumf.so.1"
#endif

struct hmi_umf_fns hmi_u;

/* ---- the fork gates ---- */

struct gate {
    pthread_mutex_t m;
} __attribute__((aligned(64)));
static struct gate g_gate[HM_STRIPES];
static int g_gates;                         /* set once the gates are initialized */

static inline struct gate *gate_in(void)
{
    struct gate *g = &g_gate[hm_stripe()];
    pthread_mutex_lock(&g->m);
    return g;
}

static inline void gate_out(struct gate *g) { pthread_mutex_unlock(&g->m); }

void hmi_umf_atfork_prepare(void)
{
    for (uint32_t k = 0; g_gates && k < HM_STRIPES; k++)
        pthread_mutex_lock(&g_gate[k].m);
}

void hmi_umf_atfork_release(void)
{
    for (uint32_t k = 0; g_gates && k < HM_STRIPES; k++)
        pthread_mutex_unlock(&g_gate[k].m);
}

/* ---- loading ---- */

int hmi_umf_load(struct hmi_msg *why)
{
    if (hmi_u.handle)
        return 0;
    int flags = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
    void *h = dlopen(HMI_UMF_LIB, flags);
    if (!h && strcmp(HMI_UMF_LIB, "libumf.so.1") != 0)
        h = dlopen("libumf.so.1", flags);
    if (!h) {
        const char *e = dlerror();
        hmi_msg_str(why, "UMF is not installed (run 'make deps', or put UMF 1.x's "
                         "libumf.so.1 on LD_LIBRARY_PATH): ");
        hmi_msg_str(why, e ? e : "dlopen failed");
        return -1;
    }
    const char *missing = NULL;
    /* dlsym returns void *; copying it into a function pointer goes through memcpy */
#define UMF_RESOLVE(n)                                                                 \
    if (!missing) {                                                                    \
        void *s_ = dlsym(h, #n);                                                       \
        if (s_)                                                                        \
            memcpy(&hmi_u.n, &s_, sizeof s_);                                              \
        else                                                                           \
            missing = #n;                                                              \
    }
    UMF_FNS(UMF_RESOLVE)
#undef UMF_RESOLVE
    if (missing) {
        hmi_msg_str(why, "this libumf.so.1 has no ");
        hmi_msg_str(why, missing);
        hmi_msg_str(why, " (UMF 1.2 or later is needed: run 'make deps')");
        return -1;
    }
    int v = hmi_u.umfGetCurrentVersion();
    if (UMF_MAJOR_VERSION(v) != 1) {
        hmi_msg_str(why, "libumf.so.1 is UMF ");
        hmi_msg_u64(why, (uint64_t)UMF_MAJOR_VERSION(v));
        hmi_msg_str(why, ".x, not 1.x (run 'make deps')");
        return -1;
    }
    /* the reference that libumf's destructor cannot drop (see the header comment) */
    if (hmi_u.umfInit() != UMF_RESULT_SUCCESS) {
        hmi_msg_str(why, "umfInit failed");
        return -1;
    }
    for (uint32_t k = 0; k < HM_STRIPES; k++)
        pthread_mutex_init(&g_gate[k].m, NULL);
    g_gates = 1;
    hmi_u.handle = h;
    return 0;
}

/* ---- the pools ---- */

/* Per tier, one pool per thread stripe over the tier's provider (a disjoint pool has
 * one lock per bucket, which two threads allocating one size would share). */
static umf_memory_pool_handle_t g_pools[HMI_MAX_TIERS][HM_STRIPES];
static umf_memory_provider_handle_t g_prov[HMI_MAX_TIERS];

void hmi_umf_destroy_pools(uint32_t index)
{
    for (uint32_t k = 0; k < HM_STRIPES; k++) {
        if (g_pools[index][k])
            hmi_u.umfPoolDestroy(g_pools[index][k]);
        g_pools[index][k] = NULL;
    }
    if (g_prov[index])
        hmi_u.umfMemoryProviderDestroy(g_prov[index]);
    g_prov[index] = NULL;
}

/* Tier index's disjoint pools over prov (the tier's from now on, even when this
 * fails): 0, or -1 with why appended. */
int hmi_umf_make_pools(struct hmi_bk *b, uint32_t index, umf_memory_provider_handle_t prov,
                       size_t slab, size_t poolable, size_t cached, struct hmi_msg *why)
{
    umf_disjoint_pool_params_handle_t dp = NULL;
    g_prov[index] = prov;
    umf_result_t r = hmi_u.umfDisjointPoolParamsCreate(&dp);
    if (r == UMF_RESULT_SUCCESS)
        r = hmi_u.umfDisjointPoolParamsSetSlabMinSize(dp, slab);
    if (r == UMF_RESULT_SUCCESS)
        r = hmi_u.umfDisjointPoolParamsSetMaxPoolableSize(dp, poolable);
    if (r == UMF_RESULT_SUCCESS)
        r = hmi_u.umfDisjointPoolParamsSetMinBucketSize(dp, 16);
    if (r == UMF_RESULT_SUCCESS && cached)
        r = hmi_u.umfDisjointPoolParamsSetCapacity(dp, cached);
    for (uint32_t k = 0; k < HM_STRIPES && r == UMF_RESULT_SUCCESS; k++) {
        r = hmi_u.umfPoolCreate(hmi_u.umfDisjointPoolOps(), prov, dp, 0, &g_pools[index][k]);
        if (r == UMF_RESULT_SUCCESS && !g_pools[index][k])
            r = UMF_RESULT_ERROR_UNKNOWN;
    }
    if (dp)
        hmi_u.umfDisjointPoolParamsDestroy(dp);
    if (r != UMF_RESULT_SUCCESS) {
        hmi_umf_destroy_pools(index);
        hmi_msg_str(why, "cannot create UMF's disjoint pool (UMF error ");
        hmi_msg_u64(why, (uint64_t)r);
        hmi_msg_str(why, ")");
        return -1;
    }
    b->umf_pool = g_pools[index][0];
    b->umf_poolable = poolable;
    return 0;
}

umf_memory_pool_handle_t hmi_umf_pool0(uint32_t index) { return g_pools[index][0]; }

/* ---- objects ---- */

/* The usable size (and charge) of an object UMF says has n bytes: an object larger
 * than the slabs' (the tracker knows its request) has its 4 KiB pages, as the
 * provider's allocator rounds it (and realloc may grow into them). */
static size_t usable_of(const struct hmi_bk *b, size_t n)
{
    return n > b->umf_poolable ? (size_t)hmi_round_up(n, HMI_PAGE_4K) : n;
}

/* umf:hugetlb's range is full: give the slabs the pools keep empty back to it. */
static void trim(uint32_t index)
{
    for (uint32_t k = 0; k < HM_STRIPES; k++)
        hmi_u.umfPoolTrimMemory(g_pools[index][k], 0);
}

/* The pool UMF's tracker named for the object this thread last asked the usable size
 * of: free asks it first (the interposer's free path does), so that the object goes
 * back to that pool without a second tracker lookup (umfFree's). Cleared when used and
 * when the thread allocates; an object is only freed by its owner, so between the two
 * calls no other thread can free it and have its address handed out again. */
static __thread const void *t_last_p __attribute__((tls_model("initial-exec")));
static __thread umf_memory_pool_handle_t t_last_pool __attribute__((tls_model("initial-exec")));

void *hmi_umf_alloc(struct hmi_bk *b, size_t size, size_t align, int zero)
{
    uint32_t index = (uint32_t)(b - hmi_bks);
    umf_memory_pool_handle_t pool = g_pools[index][hm_stripe()];
    t_last_p = NULL;
    /* above the slabs the charge is known before: charged first, so that a request
     * over the capacity never takes hugepages from the pool */
    size_t pre = size > b->umf_poolable ? usable_of(b, size) : 0;
    if (pre && hmi_charge(b, pre) != 0)
        return NULL;
    struct gate *g = gate_in();
    void *p = align <= 16 ? hmi_u.umfPoolMalloc(pool, size) : hmi_u.umfPoolAlignedMalloc(pool, size, align);
    if (!p && b->kind == HMI_BK_UMF_HUGETLB) {
        trim(index);
        p = align <= 16 ? hmi_u.umfPoolMalloc(pool, size) : hmi_u.umfPoolAlignedMalloc(pool, size, align);
    }
    size_t us = 0;
    if (p && (hmi_u.umfPoolMallocUsableSize(pool, p, &us) != UMF_RESULT_SUCCESS || us < size ||
              ((uintptr_t)p & (align - 1)))) {
        hmi_u.umfPoolFree(pool, p);             /* not what was asked: never seen here */
        p = NULL;
    }
    gate_out(g);
    if (!p || (pre && usable_of(b, us) != pre)) {
        if (p) {
            g = gate_in();
            hmi_u.umfPoolFree(pool, p);
            gate_out(g);
        }
        if (pre)
            hmi_uncharge(b, pre);
        return NULL;
    }
    if (!pre && hmi_charge(b, usable_of(b, us)) != 0) {
        g = gate_in();
        hmi_u.umfPoolFree(pool, p);
        gate_out(g);
        return NULL;
    }
    if (zero)
        memset(p, 0, size);
    return p;
}

/* One 2 MiB-aligned granule of tier index's provider that the page map covers, or
 * NULL (the caller holds its gate). */
static void *granule(uint32_t index)
{
    void *p = NULL;
    if (hmi_u.umfMemoryProviderAlloc(g_prov[index], HMI_PAGE_2M, HMI_PAGE_2M, &p) !=
            UMF_RESULT_SUCCESS)
        return NULL;
    if (p && (((uintptr_t)p & (HMI_PAGE_2M - 1)) || !hmi_pagemap_covers(p))) {
        hmi_u.umfMemoryProviderFree(g_prov[index], p, HMI_PAGE_2M);
        return NULL;
    }
    return p;
}

/* An arena chunk is a whole granule of the tier's provider, as a pool's slab would be:
 * fresh from the OS provider (zero) on umf:numa, a part of the region on umf:hugetlb,
 * whose fixed provider may hand out again what a large object freed (cleared here). */
void *hmi_umf_chunk(uint32_t index, unsigned code)
{
    int huge = hmi_bks[index].kind == HMI_BK_UMF_HUGETLB;
    struct gate *g = gate_in();
    void *p = granule(index);
    if (!p && huge) {
        trim(index);
        p = granule(index);
    }
    gate_out(g);
    if (!p)
        return NULL;
    int64_t k = hmi_chunk_slot();           /* after the granule, as hmi_map_chunk */
    if (k < 0) {
        g = gate_in();
        hmi_u.umfMemoryProviderFree(g_prov[index], p, HMI_PAGE_2M);
        gate_out(g);
        return NULL;
    }
    if (huge)
        memset(p, 0, HMI_PAGE_2M);
    hmi_chunk_record(k, (uintptr_t)p, index, code);
    return p;
}

/* An object goes back to the pool that handed it out (UMF's tracker knows which).
 * usable: hmi_umf_usable's answer when the caller has it, else 0. */
void hmi_umf_free(struct hmi_bk *b, void *p, size_t usable)
{
    if (!usable)
        usable = hmi_umf_usable(b, p);
    if (!usable)
        return;                             /* not an object's start: never freed */
    umf_memory_pool_handle_t pool = p == t_last_p ? t_last_pool : NULL;
    t_last_p = NULL;
    struct gate *g = gate_in();
    umf_result_t r = pool ? hmi_u.umfPoolFree(pool, p) : hmi_u.umfFree(p);
    gate_out(g);
    if (r == UMF_RESULT_SUCCESS)
        hmi_uncharge(b, usable);
}

/* Whether p is the start of an object of a pool (the caller holds its gate): UMF's
 * tracker knows any pointer into an allocation of the provider, and the pool would
 * free or size the allocation it falls in. An object above the slabs is an allocation
 * of its own (the tracker's base); one in a slab (aligned small requests only) is
 * taken when 16-byte aligned, the slab's bucket not being known here. */
static int object_start(const void *p, size_t us, size_t poolable)
{
    umf_memory_properties_handle_t props = NULL;
    void *base = NULL;
    if (hmi_u.umfGetMemoryPropertiesHandle(p, &props) != UMF_RESULT_SUCCESS ||
        hmi_u.umfGetMemoryProperty(props, UMF_MEMORY_PROPERTY_BASE_ADDRESS, &base,
                                   sizeof base) != UMF_RESULT_SUCCESS)
        return 0;
    return base == p || (us <= poolable && !((uintptr_t)p & 15));
}

size_t hmi_umf_usable(const struct hmi_bk *b, const void *p)
{
    size_t us = 0;
    struct gate *g = gate_in();
    umf_memory_pool_handle_t pool = NULL;
    if (hmi_u.umfPoolByPtr(p, &pool) == UMF_RESULT_SUCCESS && pool &&
        (hmi_u.umfPoolMallocUsableSize(pool, p, &us) != UMF_RESULT_SUCCESS ||
         !object_start(p, us, b->umf_poolable)))
        us = 0, pool = NULL;
    gate_out(g);
    t_last_p = pool ? p : NULL;
    t_last_pool = pool;
    return usable_of(b, us);
}
