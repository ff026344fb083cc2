/* hmi_umf_providers.c — the UMF providers under the umf:* tiers' pools and the tiers'
 * opening (hmi_backend_umf.c says why they are so):
 *   umf:numa:LIST[:MODE]  UMF's OS memory provider with the nodes and mode, under a
 *     provider of ours that asks it for whole 2 MiB-aligned granules and records them
 *     in the page map as the tier's (HMI_E_UMF);
 *   umf:hugetlb  UMF's fixed provider over an address range reserved at open, under a
 *     provider of ours that maps a 2 MiB hugepage over every granule of what it hands
 *     out that has none yet, and records it in the page map. */
#include "hmi_umf.h"
#include "hmi_sys.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MPOL_PREFERRED_ 1
#define MPOL_BIND_      2
#define MPOL_INTERLEAVE_ 3

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
    umf_result_t r = hmi_u.umfMemoryProviderAlloc(g->os, len, align > HMI_PAGE_2M ? align : HMI_PAGE_2M, &p);
    if (r == UMF_RESULT_SUCCESS && p && !hmi_pagemap_covers(p)) {
        hmi_u.umfMemoryProviderFree(g->os, p, len);
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
    return hmi_u.umfMemoryProviderFree(g->os, ptr, len);
}

static umf_result_t gr_error(void *priv, const char **msg, int32_t *err)
{
    return hmi_u.umfMemoryProviderGetLastNativeError(((struct granules *)priv)->os, msg, err),
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
    return hmi_u.umfMemoryProviderGetMinPageSize(((struct granules *)priv)->os, ptr, page);
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

int hmi_umf_numa_open(struct hmi_bk *b, uint32_t index, const char *args, struct hmi_msg *why)
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
        hmi_probe_map(b, why) || hmi_umf_load(why))
        return -1;
    static unsigned ids[HMI_MAX_NODES];     /* tiers are opened one at a time */
    unsigned nn = 0;
    for (unsigned k = 0; k < HMI_MAX_NODES; k++)
        if (b->nodes[k / (8 * sizeof(unsigned long))] & (1ul << (k % (8 * sizeof(unsigned long)))))
            ids[nn++] = k;
    umf_os_memory_provider_params_handle_t op = NULL;
    umf_memory_provider_handle_t os = NULL, gr = NULL;
    umf_result_t r = hmi_u.umfOsMemoryProviderParamsCreate(&op);
    if (r == UMF_RESULT_SUCCESS)
        r = hmi_u.umfOsMemoryProviderParamsSetNumaList(op, ids, nn);
    if (r == UMF_RESULT_SUCCESS)
        r = hmi_u.umfOsMemoryProviderParamsSetNumaMode(op, um);
    if (r == UMF_RESULT_SUCCESS)
        r = hmi_u.umfMemoryProviderCreate(hmi_u.umfOsMemoryProviderOps(), op, &os);
    if (op)
        hmi_u.umfOsMemoryProviderParamsDestroy(op);
    if (r != UMF_RESULT_SUCCESS || !os) {
        hmi_msg_str(why, "UMF's OS memory provider refused the nodes and mode (UMF error ");
        hmi_msg_u64(why, (uint64_t)r);
        hmi_msg_str(why, ")");
        return -1;
    }
    g_gran[index] = (struct granules){ os, index };
    r = hmi_u.umfMemoryProviderCreate(&gr_ops, &g_gran[index], &gr);
    if (r != UMF_RESULT_SUCCESS || !gr) {
        hmi_u.umfMemoryProviderDestroy(os);
        hmi_msg_str(why, "UMF refused the interposer's granule provider (UMF error ");
        hmi_msg_u64(why, (uint64_t)r);
        hmi_msg_str(why, ")");
        return -1;
    }
    if (hmi_umf_make_pools(b, index, gr, SLAB_NUMA, POOLABLE_NUMA, 0, why)) {
        hmi_u.umfMemoryProviderDestroy(os);
        return -1;
    }
    /* the provider works: one object (its slab stays cached in the pool) */
    void *p = hmi_u.umfPoolMalloc(hmi_umf_pool0(index), 64);
    if (!p) {
        hmi_msg_str(why, "UMF's OS memory provider cannot allocate on the nodes");
        hmi_umf_destroy_pools(index);
        hmi_u.umfMemoryProviderDestroy(os);
        b->umf_pool = NULL;
        return -1;
    }
    hmi_u.umfPoolFree(hmi_umf_pool0(index), p);
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
    umf_result_t e = hmi_u.umfMemoryProviderAlloc(r->fixed, size, align, &p);
    if (e == UMF_RESULT_SUCCESS && p && back(r, p, size) != 0) {
        hmi_u.umfMemoryProviderFree(r->fixed, p, size);
        p = NULL;
        e = UMF_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    *ptr = p;
    return p ? UMF_RESULT_SUCCESS : e != UMF_RESULT_SUCCESS ? e : UMF_RESULT_ERROR_OUT_OF_HOST_MEMORY;
}

/* The hugepages stay: a granule, once backed, is the tier's until the process ends. */
static umf_result_t rg_free(void *priv, void *ptr, size_t size)
{
    return hmi_u.umfMemoryProviderFree(((struct region *)priv)->fixed, ptr, size);
}

static umf_result_t rg_error(void *priv, const char **msg, int32_t *err)
{
    return hmi_u.umfMemoryProviderGetLastNativeError(((struct region *)priv)->fixed, msg, err),
           UMF_RESULT_SUCCESS;
}

static umf_result_t rg_min_page(void *priv, const void *ptr, size_t *page)
{
    return hmi_u.umfMemoryProviderGetMinPageSize(((struct region *)priv)->fixed, ptr, page);
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

int hmi_umf_hugetlb_open(struct hmi_bk *b, uint32_t index, uint64_t capacity, int unlimited,
                         struct hmi_msg *why)
{
    b->map_huge = 1;
    /* twice the capacity: objects are charged their size class or pages (the capacity
     * bounds those), the arena's chunks take whole granules (their tails and the
     * partly used ones are not charged, as on hugetlb) */
    uint64_t len = unlimited ? hugepage_pool() : 2 * (capacity & ~(HMI_PAGE_2M - 1));
    if (!len) {
        hmi_msg_str(why, unlimited ? "an unlimited umf:hugetlb tier takes the hugepage pool's "
                                     "size, and it is empty"
                                   : "capacity below one 2 MiB hugepage");
        return -1;
    }
    if (hmi_probe_map(b, why) || hmi_umf_load(why))
        return -1;
    /* address space only: hugepages are mapped over it granule by granule (back) */
    char *a = hmi_map_span(0, HMI_PAGE_4K, len, HMI_PAGE_2M);
    if (a && (hmi_sys_mprotect(a, HMI_PAGE_4K, PROT_NONE) != 0 || !hmi_pagemap_covers(a))) {
        munmap(a, len);
        a = NULL;
    }
    if (!a) {
        hmi_msg_str(why, "cannot reserve the tier's address range");
        return -1;
    }
    hmi_sys_madvise(a, len, MADV_DONTDUMP);
    struct region *r = &g_region[index];
    umf_fixed_memory_provider_params_handle_t fp = NULL;
    umf_memory_provider_handle_t prov = NULL;
    r->fixed = NULL;
    umf_result_t e = hmi_u.umfFixedMemoryProviderParamsCreate(a, (size_t)len, &fp);
    if (e == UMF_RESULT_SUCCESS)
        e = hmi_u.umfMemoryProviderCreate(hmi_u.umfFixedMemoryProviderOps(), fp, &r->fixed);
    if (fp)
        hmi_u.umfFixedMemoryProviderParamsDestroy(fp);
    if (e == UMF_RESULT_SUCCESS && r->fixed) {
        r->index = index;
        r->a = a;
        r->len = len;
        pthread_mutex_init(&r->lock, NULL);
        e = hmi_u.umfMemoryProviderCreate(&rg_ops, r, &prov);
        if (e != UMF_RESULT_SUCCESS || !prov)
            hmi_u.umfMemoryProviderDestroy(r->fixed);
    }
    if (e != UMF_RESULT_SUCCESS || !prov) {
        munmap(a, len);
        r->a = NULL;
        hmi_msg_str(why, "UMF's fixed memory provider refused the tier's range (UMF error ");
        hmi_msg_u64(why, (uint64_t)e);
        hmi_msg_str(why, ")");
        return -1;
    }
    if (hmi_umf_make_pools(b, index, prov, SLAB_HUGE, POOLABLE_HUGE, 1, why)) {
        hmi_u.umfMemoryProviderDestroy(r->fixed);
        munmap(a, len);
        r->a = NULL;
        return -1;
    }
    return 0;
}


void hmi_umf_providers_close(uint32_t index)
{
    if (g_gran[index].os)
        hmi_u.umfMemoryProviderDestroy(g_gran[index].os);
    g_gran[index].os = NULL;
    struct region *r = &g_region[index];
    if (r->a) {
        hmi_u.umfMemoryProviderDestroy(r->fixed);
        hmi_pagemap_clear((uintptr_t)r->a, r->len);
        munmap(r->a, r->len);
    }
    r->a = NULL;
}

/* ---- opening (hmi_backend_int.h: hmi_umf_open, hmi_umf_close) ---- */

int hmi_umf_open(struct hmi_bk *b, uint32_t index, const char *spec, uint64_t capacity,
                 int unlimited, struct hmi_msg *why)
{
    if (!strncmp(spec, "numa:", 5)) {
        b->kind = HMI_BK_UMF_NUMA;
        return hmi_umf_numa_open(b, index, spec + 5, why);
    }
    if (!strcmp(spec, "hugetlb")) {
        b->kind = HMI_BK_UMF_HUGETLB;
        return hmi_umf_hugetlb_open(b, index, capacity, unlimited, why);
    }
    hmi_msg_str(why, "unknown UMF backend (want umf:numa:NODES[:MODE] or umf:hugetlb)");
    return -1;
}

void hmi_umf_close(struct hmi_bk *b)
{
    uint32_t index = (uint32_t)(b - hmi_bks);
    hmi_umf_destroy_pools(index);           /* and the provider under them */
    b->umf_pool = NULL;
    hmi_umf_providers_close(index);
}
