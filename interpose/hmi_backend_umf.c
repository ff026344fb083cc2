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
 * Pools: UMF's disjoint pool (the scalable pool needs oneTBB's libtbbmalloc, which is
 * not installed here, and the jemalloc pool is not in the pinned build), with UMF's
 * tracking on: the tracker knows the size of an object larger than the slabs, so that
 * it can be freed, reused and its usable size told.
 *   umf:numa:LIST[:MODE]  UMF's OS memory provider with the nodes and MODE (bind,
 *     preferred, interleave), under a provider of ours that asks it for whole 2 MiB-
 *     aligned granules and records them in the page map as the tier's (HMI_E_UMF), so
 *     that hmi_owner knows every pointer of the pool without asking UMF. 2 MiB slabs
 *     (a smaller slab would still take a granule of address space).
 *   umf:hugetlb  a range of address space as large as the capacity rounded down to
 *     2 MiB (unlimited: the hugepage pool's size at open), reserved at open and given
 *     to UMF's fixed provider, under a provider of ours that maps a 2 MiB hugepage
 *     (MAP_HUGETLB | MAP_FIXED) over every granule of what the fixed provider hands
 *     out that has none yet, and records it in the page map. Hugepages are taken as
 *     the tier fills, never more than its capacity, and kept; a pool run dry refuses
 *     the request (counted as a refused mapping). Mapping the whole capacity at open
 *     would take all of it whether used or not, and leave the pool no page for the
 *     copies a fork child needs when it writes private hugepages. Objects up to 4 KiB go to the pool's buckets (powers of
 *     two and their midpoints, 64 KiB slabs, one empty slab kept per bucket and given
 *     back when the region is full: umfPoolTrimMemory); larger
 *     ones to the fixed provider's allocator, which rounds them to 4 KiB pages: 20 KB
 *     and 100 KB objects fill 97.6 % of the region, where the pool's buckets gave them
 *     61-76 % (MACHINE-NOTES.md).
 *
 * Capacity: an object is charged its usable size (above the slabs: its request, which
 * UMF's tracker keeps, rounded to 4 KiB pages) once UMF returns it, and freed at once when that does not fit; the same
 * amount is given back when it is freed.
 *
 * Fork: every call into UMF holds the calling thread's stripe's gate (an uncontended
 * mutex); the interposer's atfork handler takes every gate, so no thread is inside
 * UMF, holding UMF's locks, when the process forks. libumf has a prepare handler of
 * its own (it builds hwloc's topology, which allocates) that runs after ours: the
 * interposer marks the forking thread busy from its prepare handler on, so that
 * allocation goes to glibc instead of waiting for a gate ours holds.
 * Re-entrance: UMF's OS provider calls hwloc, which calls malloc; the interposer calls
 * every backend entry point with its busy flag set, so those calls go to glibc. */
#include "hmi_mmap.h"
#include "hmi_pagemap.h"

#include <umf.h>
#include <umf/memory_pool.h>
#include <umf/memory_provider.h>
#include <umf/memory_provider_ops.h>
#include <umf/pools/pool_disjoint.h>
#include <umf/providers/provider_fixed_memory.h>
#include <umf/providers/provider_os_memory.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef HMI_UMF_LIB
#define HMI_UMF_LIB "libumf.so.1"
#endif

#define POOLABLE_HUGE  4096u                /* umf:hugetlb: larger objects page-rounded */
#define SLAB_HUGE      (64u << 10)
#define POOLABLE_NUMA  HMI_PAGE_2M
#define SLAB_NUMA      HMI_PAGE_2M
#define MPOL_PREFERRED_ 1
#define MPOL_BIND_      2
#define MPOL_INTERLEAVE_ 3

/* The functions of libumf.so.1 used here, resolved by dlsym into u. */
#define UMF_FNS(X) X(umfInit) X(umfGetCurrentVersion) X(umfMemoryProviderCreate) \
    X(umfMemoryProviderDestroy) X(umfMemoryProviderAlloc) X(umfMemoryProviderFree) \
    X(umfMemoryProviderGetLastNativeError) X(umfMemoryProviderGetMinPageSize) \
    X(umfOsMemoryProviderOps) X(umfOsMemoryProviderParamsCreate) \
    X(umfOsMemoryProviderParamsDestroy) X(umfOsMemoryProviderParamsSetNumaList) \
    X(umfOsMemoryProviderParamsSetNumaMode) X(umfFixedMemoryProviderOps) \
    X(umfFixedMemoryProviderParamsCreate) X(umfFixedMemoryProviderParamsDestroy) \
    X(umfDisjointPoolOps) X(umfDisjointPoolParamsCreate) X(umfDisjointPoolParamsDestroy) \
    X(umfDisjointPoolParamsSetSlabMinSize) X(umfDisjointPoolParamsSetMaxPoolableSize) \
    X(umfDisjointPoolParamsSetMinBucketSize) X(umfDisjointPoolParamsSetCapacity) \
    X(umfPoolCreate) X(umfPoolDestroy) X(umfPoolMalloc) X(umfPoolAlignedMalloc) \
    X(umfPoolFree) X(umfPoolMallocUsableSize) X(umfPoolTrimMemory)
#define UMF_DECL(n) __typeof__(n) *n;
static struct {
    void *handle;
    UMF_FNS(UMF_DECL)
} u;

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

static int umf_load(struct hmi_msg *why)
{
    if (u.handle)
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
            memcpy(&u.n, &s_, sizeof s_);                                              \
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
    int v = u.umfGetCurrentVersion();
    if (UMF_MAJOR_VERSION(v) != 1) {
        hmi_msg_str(why, "libumf.so.1 is UMF ");
        hmi_msg_u64(why, (uint64_t)UMF_MAJOR_VERSION(v));
        hmi_msg_str(why, ".x, not 1.x (run 'make deps')");
        return -1;
    }
    /* the reference that libumf's destructor cannot drop (see the header comment) */
    if (u.umfInit() != UMF_RESULT_SUCCESS) {
        hmi_msg_str(why, "umfInit failed");
        return -1;
    }
    for (uint32_t k = 0; k < HM_STRIPES; k++)
        pthread_mutex_init(&g_gate[k].m, NULL);
    g_gates = 1;
    u.handle = h;
    return 0;
}

/* ---- umf:numa's provider: UMF's OS provider in whole 2 MiB granules ---- */

struct granules {
    umf_memory_provider_handle_t os;
    uint32_t index;
};
static struct granules g_gran[HMI_MAX_TIERS];

static size_t granules_of(size_t n) { return (size_t)hmi_round_up(n ? n : 1, HMI_PAGE_2M); }

static umf_result_t gr_init(const void *params, void **priv)
{
    *priv = (void *)params;
    return UMF_RESULT_SUCCESS;
}

static umf_result_t gr_fini(void *priv)
{
    (void)priv;
    return UMF_RESULT_SUCCESS;
}

static umf_result_t gr_alloc(void *priv, size_t size, size_t align, void **ptr)
{
    struct granules *g = priv;
    size_t len = granules_of(size);
    void *p = NULL;
    umf_result_t r = u.umfMemoryProviderAlloc(g->os, len, align > HMI_PAGE_2M ? align : HMI_PAGE_2M, &p);
    if (r == UMF_RESULT_SUCCESS && p && !hmi_pagemap_covers(p)) {
        u.umfMemoryProviderFree(g->os, p, len);
        p = NULL;
    }
    *ptr = p;
    if (!p) {
        hmi_count(&hmi_bks[g->index], HMI_C_MAP_FAILED);
        return r != UMF_RESULT_SUCCESS ? r : UMF_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    hmi_pagemap_set_umf((uintptr_t)p, len, g->index);
    return UMF_RESULT_SUCCESS;
}

static umf_result_t gr_free(void *priv, void *ptr, size_t size)
{
    struct granules *g = priv;
    size_t len = granules_of(size);
    if (ptr)
        hmi_pagemap_clear((uintptr_t)ptr, len);
    return u.umfMemoryProviderFree(g->os, ptr, len);
}

static umf_result_t gr_error(void *priv, const char **msg, int32_t *err)
{
    return u.umfMemoryProviderGetLastNativeError(((struct granules *)priv)->os, msg, err),
           UMF_RESULT_SUCCESS;
}

static umf_result_t gr_recommended(void *priv, size_t size, size_t *page)
{
    (void)priv, (void)size;
    *page = HMI_PAGE_2M;
    return UMF_RESULT_SUCCESS;
}

static umf_result_t gr_min_page(void *priv, const void *ptr, size_t *page)
{
    return u.umfMemoryProviderGetMinPageSize(((struct granules *)priv)->os, ptr, page);
}

static umf_result_t gr_name(void *priv, const char **name)
{
    (void)priv;
    *name = "hmtune_granules";
    return UMF_RESULT_SUCCESS;
}

static umf_result_t gr_cache_line(void *priv, size_t *size)
{
    (void)priv;
    *size = 64;
    return UMF_RESULT_SUCCESS;
}

static const umf_memory_provider_ops_t gr_ops = {
    .version = UMF_PROVIDER_OPS_VERSION_CURRENT,
    .initialize = gr_init,
    .finalize = gr_fini,
    .alloc = gr_alloc,
    .free = gr_free,
    .get_last_native_error = gr_error,
    .get_recommended_page_size = gr_recommended,
    .get_min_page_size = gr_min_page,
    .get_name = gr_name,
    .get_cache_line_size = gr_cache_line,
};

/* ---- opening ---- */

/* b's disjoint pool over prov (owned by the pool from now on, even when this fails):
 * 0, or -1 with why appended. */
static int make_pool(struct hmi_bk *b, umf_memory_provider_handle_t prov, size_t slab,
                     size_t poolable, size_t cached, struct hmi_msg *why)
{
    umf_disjoint_pool_params_handle_t dp = NULL;
    umf_memory_pool_handle_t pool = NULL;
    umf_result_t r = u.umfDisjointPoolParamsCreate(&dp);
    if (r == UMF_RESULT_SUCCESS)
        r = u.umfDisjointPoolParamsSetSlabMinSize(dp, slab);
    if (r == UMF_RESULT_SUCCESS)
        r = u.umfDisjointPoolParamsSetMaxPoolableSize(dp, poolable);
    if (r == UMF_RESULT_SUCCESS)
        r = u.umfDisjointPoolParamsSetMinBucketSize(dp, 16);
    if (r == UMF_RESULT_SUCCESS && cached)
        r = u.umfDisjointPoolParamsSetCapacity(dp, cached);
    if (r == UMF_RESULT_SUCCESS)
        r = u.umfPoolCreate(u.umfDisjointPoolOps(), prov, dp, UMF_POOL_CREATE_FLAG_OWN_PROVIDER,
                            &pool);
    if (dp)
        u.umfDisjointPoolParamsDestroy(dp);
    if (r != UMF_RESULT_SUCCESS || !pool) {
        if (!pool)
            u.umfMemoryProviderDestroy(prov);
        hmi_msg_str(why, "cannot create UMF's disjoint pool (UMF error ");
        hmi_msg_u64(why, (uint64_t)r);
        hmi_msg_str(why, ")");
        return -1;
    }
    b->umf_pool = pool;
    b->umf_poolable = poolable;
    return 0;
}

static int numa_open(struct hmi_bk *b, uint32_t index, const char *args, struct hmi_msg *why)
{
    char list[256];
    const char *colon = strchr(args, ':'), *mode = colon ? colon + 1 : "bind";
    size_t n = colon ? (size_t)(colon - args) : strlen(args);
    if (n >= sizeof list) {
        hmi_msg_str(why, "node list too long");
        return -1;
    }
    memcpy(list, args, n);
    list[n] = '\0';
    umf_numa_mode_t um;
    if (!strcmp(mode, "bind"))
        um = UMF_NUMA_MODE_BIND, b->mpol = MPOL_BIND_;
    else if (!strcmp(mode, "preferred"))
        um = UMF_NUMA_MODE_PREFERRED, b->mpol = MPOL_PREFERRED_;
    else if (!strcmp(mode, "interleave"))
        um = UMF_NUMA_MODE_INTERLEAVE, b->mpol = MPOL_INTERLEAVE_;
    else {
        hmi_msg_str(why, "unknown NUMA mode (want umf:numa:NODES[:bind|preferred|interleave])");
        return -1;
    }
    if (hmi_parse_nodes(list, b->nodes, why) || hmi_nodes_present(b->nodes, why) ||
        hmi_probe_map(b, why) || umf_load(why))
        return -1;
    static unsigned ids[HMI_MAX_NODES];     /* tiers are opened one at a time */
    unsigned nn = 0;
    for (unsigned k = 0; k < HMI_MAX_NODES; k++)
        if (b->nodes[k / (8 * sizeof(unsigned long))] & (1ul << (k % (8 * sizeof(unsigned long)))))
            ids[nn++] = k;
    umf_os_memory_provider_params_handle_t op = NULL;
    umf_memory_provider_handle_t os = NULL, gr = NULL;
    umf_result_t r = u.umfOsMemoryProviderParamsCreate(&op);
    if (r == UMF_RESULT_SUCCESS)
        r = u.umfOsMemoryProviderParamsSetNumaList(op, ids, nn);
    if (r == UMF_RESULT_SUCCESS)
        r = u.umfOsMemoryProviderParamsSetNumaMode(op, um);
    if (r == UMF_RESULT_SUCCESS)
        r = u.umfMemoryProviderCreate(u.umfOsMemoryProviderOps(), op, &os);
    if (op)
        u.umfOsMemoryProviderParamsDestroy(op);
    if (r != UMF_RESULT_SUCCESS || !os) {
        hmi_msg_str(why, "UMF's OS memory provider refused the nodes and mode (UMF error ");
        hmi_msg_u64(why, (uint64_t)r);
        hmi_msg_str(why, ")");
        return -1;
    }
    g_gran[index] = (struct granules){ os, index };
    r = u.umfMemoryProviderCreate(&gr_ops, &g_gran[index], &gr);
    if (r != UMF_RESULT_SUCCESS || !gr) {
        u.umfMemoryProviderDestroy(os);
        hmi_msg_str(why, "UMF refused the interposer's granule provider (UMF error ");
        hmi_msg_u64(why, (uint64_t)r);
        hmi_msg_str(why, ")");
        return -1;
    }
    if (make_pool(b, gr, SLAB_NUMA, POOLABLE_NUMA, 0, why)) {
        u.umfMemoryProviderDestroy(os);
        return -1;
    }
    /* the provider works: one object (its slab stays cached in the pool) */
    void *p = u.umfPoolMalloc(b->umf_pool, 64);
    if (!p) {
        hmi_msg_str(why, "UMF's OS memory provider cannot allocate on the nodes");
        u.umfPoolDestroy(b->umf_pool);
        u.umfMemoryProviderDestroy(os);
        b->umf_pool = NULL;
        return -1;
    }
    u.umfPoolFree(b->umf_pool, p);
    return 0;
}

/* ---- umf:hugetlb's provider: UMF's fixed provider over a reserved range, backed by
 * 2 MiB hugepages as it hands parts of it out ---- */

struct region {
    umf_memory_provider_handle_t fixed;
    uint32_t index;
    char *a;
    uint64_t len;
    pthread_mutex_t lock;                   /* backing granules */
};
static struct region g_region[HMI_MAX_TIERS];

/* Back every granule of [p, p + n) that is not yet: a hugepage mapped over the
 * reservation (MAP_FIXED), recorded in the page map. 0, or -1 when the hugepage pool
 * has none left (the granules backed so far stay). */
static int back(struct region *r, char *p, size_t n)
{
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(HMI_PAGE_2M - 1);
    uintptr_t hi = (uintptr_t)hmi_round_up((uintptr_t)p + (n ? n : 1), HMI_PAGE_2M);
    int rc = 0;
    pthread_mutex_lock(&r->lock);
    for (uintptr_t g = lo; g < hi && rc == 0; g += HMI_PAGE_2M) {
        if (hmi_is_umf(hmi_pagemap_get((void *)g)))
            continue;
        void *m = mmap((void *)g, HMI_PAGE_2M, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_FIXED, -1, 0);
        if (m == MAP_FAILED) {
            /* MAP_FIXED failed: the reservation's granule may be gone; put it back */
            mmap((void *)g, HMI_PAGE_2M, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
            hmi_count(&hmi_bks[r->index], HMI_C_MAP_FAILED);
            rc = -1;
        } else {
            hmi_pagemap_set_umf(g, HMI_PAGE_2M, r->index);
        }
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

static umf_result_t rg_alloc(void *priv, size_t size, size_t align, void **ptr)
{
    struct region *r = priv;
    void *p = NULL;
    umf_result_t e = u.umfMemoryProviderAlloc(r->fixed, size, align, &p);
    if (e == UMF_RESULT_SUCCESS && p && back(r, p, size) != 0) {
        u.umfMemoryProviderFree(r->fixed, p, size);
        p = NULL;
        e = UMF_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    *ptr = p;
    return p ? UMF_RESULT_SUCCESS : e != UMF_RESULT_SUCCESS ? e : UMF_RESULT_ERROR_OUT_OF_HOST_MEMORY;
}

/* The hugepages stay: a granule, once backed, is the tier's until the process ends. */
static umf_result_t rg_free(void *priv, void *ptr, size_t size)
{
    return u.umfMemoryProviderFree(((struct region *)priv)->fixed, ptr, size);
}

static umf_result_t rg_error(void *priv, const char **msg, int32_t *err)
{
    return u.umfMemoryProviderGetLastNativeError(((struct region *)priv)->fixed, msg, err),
           UMF_RESULT_SUCCESS;
}

static umf_result_t rg_min_page(void *priv, const void *ptr, size_t *page)
{
    return u.umfMemoryProviderGetMinPageSize(((struct region *)priv)->fixed, ptr, page);
}

static umf_result_t rg_recommended(void *priv, size_t size, size_t *page)
{
    return rg_min_page(priv, NULL, page), (void)size, UMF_RESULT_SUCCESS;
}

static umf_result_t rg_name(void *priv, const char **name)
{
    (void)priv;
    *name = "hmtune_hugepages";
    return UMF_RESULT_SUCCESS;
}

static const umf_memory_provider_ops_t rg_ops = {
    .version = UMF_PROVIDER_OPS_VERSION_CURRENT,
    .initialize = gr_init,
    .finalize = gr_fini,
    .alloc = rg_alloc,
    .free = rg_free,
    .get_last_native_error = rg_error,
    .get_recommended_page_size = rg_recommended,
    .get_min_page_size = rg_min_page,
    .get_name = rg_name,
    .get_cache_line_size = gr_cache_line,
};

/* Bytes of the hugepage pool (HugePages_Total, 2 MiB pages), 0 when unknown. */
static uint64_t hugepage_pool(void)
{
    char buf[4096];
    int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *s = strstr(buf, "HugePages_Total:");
    uint64_t v = 0;
    for (s = s ? s + 16 : "x"; *s == ' '; s++)
        ;
    while (*s >= '0' && *s <= '9')
        v = v * 10 + (uint64_t)(*s++ - '0');
    return v * HMI_PAGE_2M;
}

static int hugetlb_open(struct hmi_bk *b, uint32_t index, uint64_t capacity, int unlimited,
                        struct hmi_msg *why)
{
    b->map_huge = 1;
    uint64_t len = unlimited ? hugepage_pool() : capacity & ~(HMI_PAGE_2M - 1);
    if (!len) {
        hmi_msg_str(why, unlimited ? "an unlimited umf:hugetlb tier takes the hugepage pool's "
                                     "size, and it is empty"
                                   : "capacity below one 2 MiB hugepage");
        return -1;
    }
    if (hmi_probe_map(b, why) || umf_load(why))
        return -1;
    /* address space only: hugepages are mapped over it granule by granule (back) */
    char *a = hmi_map_span(0, HMI_PAGE_4K, len, HMI_PAGE_2M);
    if (a && (mprotect(a, HMI_PAGE_4K, PROT_NONE) != 0 || !hmi_pagemap_covers(a))) {
        munmap(a, len);
        a = NULL;
    }
    if (!a) {
        hmi_msg_str(why, "cannot reserve the tier's address range");
        return -1;
    }
    madvise(a, len, MADV_DONTDUMP);
    struct region *r = &g_region[index];
    umf_fixed_memory_provider_params_handle_t fp = NULL;
    umf_memory_provider_handle_t prov = NULL;
    r->fixed = NULL;
    umf_result_t e = u.umfFixedMemoryProviderParamsCreate(a, (size_t)len, &fp);
    if (e == UMF_RESULT_SUCCESS)
        e = u.umfMemoryProviderCreate(u.umfFixedMemoryProviderOps(), fp, &r->fixed);
    if (fp)
        u.umfFixedMemoryProviderParamsDestroy(fp);
    if (e == UMF_RESULT_SUCCESS && r->fixed) {
        r->index = index;
        r->a = a;
        r->len = len;
        pthread_mutex_init(&r->lock, NULL);
        e = u.umfMemoryProviderCreate(&rg_ops, r, &prov);
        if (e != UMF_RESULT_SUCCESS || !prov)
            u.umfMemoryProviderDestroy(r->fixed);
    }
    if (e != UMF_RESULT_SUCCESS || !prov) {
        munmap(a, len);
        r->a = NULL;
        hmi_msg_str(why, "UMF's fixed memory provider refused the tier's range (UMF error ");
        hmi_msg_u64(why, (uint64_t)e);
        hmi_msg_str(why, ")");
        return -1;
    }
    if (make_pool(b, prov, SLAB_HUGE, POOLABLE_HUGE, 1, why)) {
        u.umfMemoryProviderDestroy(r->fixed);
        munmap(a, len);
        r->a = NULL;
        return -1;
    }
    return 0;
}

int hmi_umf_open(struct hmi_bk *b, uint32_t index, const char *spec, uint64_t capacity,
                 int unlimited, struct hmi_msg *why)
{
    if (!strncmp(spec, "numa:", 5)) {
        b->kind = HMI_BK_UMF_NUMA;
        return numa_open(b, index, spec + 5, why);
    }
    if (!strcmp(spec, "hugetlb")) {
        b->kind = HMI_BK_UMF_HUGETLB;
        return hugetlb_open(b, index, capacity, unlimited, why);
    }
    hmi_msg_str(why, "unknown UMF backend (want umf:numa:NODES[:MODE] or umf:hugetlb)");
    return -1;
}

void hmi_umf_close(struct hmi_bk *b)
{
    uint32_t index = (uint32_t)(b - hmi_bks);
    if (b->umf_pool)
        u.umfPoolDestroy(b->umf_pool);      /* and its provider */
    b->umf_pool = NULL;
    if (b->kind == HMI_BK_UMF_NUMA && g_gran[index].os)
        u.umfMemoryProviderDestroy(g_gran[index].os);
    g_gran[index].os = NULL;
    struct region *r = &g_region[index];
    if (r->a) {
        u.umfMemoryProviderDestroy(r->fixed);
        hmi_pagemap_clear((uintptr_t)r->a, r->len);
        munmap(r->a, r->len);
    }
    r->a = NULL;
}

/* ---- objects ---- */

/* The usable size (and charge) of an object UMF says has n bytes: an object larger
 * than the slabs' (the tracker knows its request) has its 4 KiB pages, as the
 * provider's allocator rounds it (and realloc may grow into them). */
static size_t usable_of(const struct hmi_bk *b, size_t n)
{
    return n > b->umf_poolable ? (size_t)hmi_round_up(n, HMI_PAGE_4K) : n;
}

void *hmi_umf_alloc(struct hmi_bk *b, size_t size, size_t align, int zero)
{
    umf_memory_pool_handle_t pool = b->umf_pool;
    struct gate *g = gate_in();
    void *p = align <= 16 ? u.umfPoolMalloc(pool, size) : u.umfPoolAlignedMalloc(pool, size, align);
    if (!p && b->kind == HMI_BK_UMF_HUGETLB) {
        /* the region is full: give the slabs the pool keeps empty back to it, once */
        u.umfPoolTrimMemory(pool, 0);
        p = align <= 16 ? u.umfPoolMalloc(pool, size) : u.umfPoolAlignedMalloc(pool, size, align);
    }
    size_t us = 0;
    if (p && (u.umfPoolMallocUsableSize(pool, p, &us) != UMF_RESULT_SUCCESS || us < size ||
              ((uintptr_t)p & (align - 1)))) {
        u.umfPoolFree(pool, p);             /* not what was asked: never seen here */
        p = NULL;
    }
    gate_out(g);
    if (!p)
        return NULL;
    if (hmi_charge(b, usable_of(b, us)) != 0) {
        g = gate_in();
        u.umfPoolFree(pool, p);
        gate_out(g);
        return NULL;
    }
    if (zero)
        memset(p, 0, size);
    return p;
}

void hmi_umf_free(struct hmi_bk *b, void *p)
{
    size_t us = 0;
    struct gate *g = gate_in();
    u.umfPoolMallocUsableSize(b->umf_pool, p, &us);
    u.umfPoolFree(b->umf_pool, p);
    gate_out(g);
    hmi_uncharge(b, usable_of(b, us));
}

size_t hmi_umf_usable(const struct hmi_bk *b, const void *p)
{
    size_t us = 0;
    struct gate *g = gate_in();
    u.umfPoolMallocUsableSize(b->umf_pool, p, &us);
    gate_out(g);
    return usable_of(b, us);
}
