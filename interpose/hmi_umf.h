/* hmi_umf.h — what the two files of the umf:* backends share (hmi_backend_umf.c: UMF
 * loaded, the fork gates, the pools, the objects; hmi_umf_providers.c: the providers of
 * umf:numa and umf:hugetlb and their opening). Internal to them. */
#ifndef HMI_UMF_H
#define HMI_UMF_H

#include "hmi_mmap.h"
#include "hmi_pagemap.h"

#include <umf.h>
#include <umf/memory_pool.h>
#include <umf/memory_provider.h>
#include <umf/memory_provider_ops.h>
#include <umf/experimental/memory_properties.h>
#include <umf/pools/pool_disjoint.h>
#include <umf/providers/provider_fixed_memory.h>
#include <umf/providers/provider_os_memory.h>

/* The pools see objects over the arena's 1 MiB (and aligned requests whose power-of-
 * two class is larger): all of them go to the provider, page-rounded. */
#define POOLABLE_HUGE  4096u
#define SLAB_HUGE      (64u << 10)
#define POOLABLE_NUMA  4096u
#define SLAB_NUMA      HMI_PAGE_2M

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
    X(umfPoolFree) X(umfPoolMallocUsableSize) X(umfPoolTrimMemory) X(umfPoolByPtr) X(umfFree) \
    X(umfGetMemoryPropertiesHandle) X(umfGetMemoryProperty)
#define UMF_DECL(n) __typeof__(n) *n;
struct hmi_umf_fns {
    void *handle;
    UMF_FNS(UMF_DECL)
};
extern struct hmi_umf_fns hmi_u HM_HIDDEN;


/* Load libumf.so.1 once (and take the reference its destructor cannot drop): 0, or -1
 * with why appended. */
int hmi_umf_load(struct hmi_msg *why) HM_HIDDEN;
/* Tier index's disjoint pools over prov (the tier's from now on, even when this
 * fails): 0, or -1 with why appended. */
int hmi_umf_make_pools(struct hmi_bk *b, uint32_t index, umf_memory_provider_handle_t prov,
                       size_t slab, size_t poolable, size_t cached, struct hmi_msg *why) HM_HIDDEN;
/* Destroy tier index's pools and the provider under them. */
void hmi_umf_destroy_pools(uint32_t index) HM_HIDDEN;
/* The first pool of tier index (the provider's probe). */
umf_memory_pool_handle_t hmi_umf_pool0(uint32_t index) HM_HIDDEN;

/* umf:numa:ARGS and umf:hugetlb set up on b (tier index): 0, or -1 with why. */
int hmi_umf_numa_open(struct hmi_bk *b, uint32_t index, const char *args,
                      struct hmi_msg *why) HM_HIDDEN;
int hmi_umf_hugetlb_open(struct hmi_bk *b, uint32_t index, uint64_t capacity, int unlimited,
                         struct hmi_msg *why) HM_HIDDEN;
/* What the providers of tier index hold beside the pools (hmi_umf_close). */
void hmi_umf_providers_close(uint32_t index) HM_HIDDEN;

#endif
