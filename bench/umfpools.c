/* umfpools — UMF's pools side by side on the same memory, for bench_umf.py: which pool
 * the umf:* backends should use. Linked with libumf (a benchmark may; libhmalloc.so
 * only dlopens it).
 *
 *   umfpools POOL MIB SIZE[,SIZE...] PAIRS
 *
 * POOL: disjoint (as umf:hugetlb configures it: 64 KiB slabs, objects up to 4 KiB in
 * buckets, the rest page-rounded by the provider, one empty slab kept per bucket) or
 * scalable (oneTBB's scalable allocator: needs libtbbmalloc.so.2). The memory: a
 * MAP_HUGETLB region of MIB MiB when the hugepage pool has it, else 4 KiB pages,
 * through UMF's fixed provider. Prints share=<bytes of SIZE objects (taken in turn)
 * placed before the first refusal / the region> ns_per_pair=<thread-CPU ns per
 * malloc+free of the first size, PAIRS times> huge=<1 for hugepages>; exit 2 when the
 * pool cannot be created (UMF's reason on stderr). */
#define _GNU_SOURCE
#include <umf.h>
#include <umf/memory_pool.h>
#include <umf/memory_provider.h>
#include <umf/pools/pool_disjoint.h>
#include <umf/pools/pool_scalable.h>
#include <umf/providers/provider_fixed_memory.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static umf_memory_pool_handle_t make(const char *kind, void *region, size_t len)
{
    umf_fixed_memory_provider_params_handle_t fp;
    umf_memory_provider_handle_t prov;
    umf_memory_pool_handle_t pool = NULL;
    if (umfFixedMemoryProviderParamsCreate(region, len, &fp) ||
        umfMemoryProviderCreate(umfFixedMemoryProviderOps(), fp, &prov))
        return NULL;
    umfFixedMemoryProviderParamsDestroy(fp);
    if (!strcmp(kind, "disjoint")) {
        umf_disjoint_pool_params_handle_t dp;
        umfDisjointPoolParamsCreate(&dp);
        umfDisjointPoolParamsSetSlabMinSize(dp, 64u << 10);
        umfDisjointPoolParamsSetMaxPoolableSize(dp, 4096);
        umfDisjointPoolParamsSetMinBucketSize(dp, 16);
        umfDisjointPoolParamsSetCapacity(dp, 1);
        umfPoolCreate(umfDisjointPoolOps(), prov, dp, UMF_POOL_CREATE_FLAG_OWN_PROVIDER, &pool);
        umfDisjointPoolParamsDestroy(dp);
    } else if (!strcmp(kind, "scalable")) {
        umfPoolCreate(umfScalablePoolOps(), prov, NULL, UMF_POOL_CREATE_FLAG_OWN_PROVIDER, &pool);
    }
    return pool;
}

static double cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: umfpools disjoint|scalable MIB SIZE[,SIZE...] PAIRS\n");
        return 2;
    }
    size_t len = strtoull(argv[2], NULL, 0) << 20, sizes[64], n = 0;
    long pairs = atol(argv[4]);
    for (char *s = strtok(argv[3], ","); s && n < 64; s = strtok(NULL, ","))
        sizes[n++] = strtoull(s, NULL, 0);
    int huge = 1;
    void *region = mmap(NULL, len, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (region == MAP_FAILED) {
        huge = 0;
        region = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    umf_memory_pool_handle_t pool = region == MAP_FAILED || !n ? NULL : make(argv[1], region, len);
    if (!pool) {
        fprintf(stderr, "umfpools: cannot create a %s pool\n", argv[1]);
        return 2;
    }
    double t0 = cpu_ns();
    for (long i = 0; i < pairs; i++) {
        char *p = umfPoolMalloc(pool, sizes[0]);
        if (p)
            p[0] = 1;
        umfPoolFree(pool, p);
    }
    double ns = pairs ? (cpu_ns() - t0) / (double)pairs : 0;
    size_t max = len / 16 + 64, k = 0;
    char **v = malloc(max * sizeof *v);
    uint64_t bytes = 0;
    for (; k < max && (v[k] = umfPoolMalloc(pool, sizes[k % n])) != NULL; k++) {
        v[k][0] = 1;
        bytes += sizes[k % n];
    }
    printf("share=%.4f ns_per_pair=%.1f huge=%d\n", (double)bytes / (double)len, ns, huge);
    return 0;
}
