/* hmi_spec.c — a tier line's BACKEND field (hmi_backend.h lists them): hugetlb, thp,
 * numa:LIST with its node list (hmi_nodes.c), memkind:KIND (the kind's placement from
 * hmi_backend_memkind.c), umf:numa:LIST[:MODE] and umf:hugetlb (hmi_umf_providers.c) and
 * default, each set up on its tier and probed. */
#include "hmi_mmap.h"
#include "hmi_pagemap.h"

#include <string.h>

#define MPOL_BIND_ 2                        /* <linux/mempolicy.h> MPOL_BIND */

static int numa_open(struct hmi_bk *b, const char *list, struct hmi_msg *why)
{
    if (hmi_parse_nodes(list, b->nodes, why) || hmi_nodes_present(b->nodes, why))
        return -1;
    b->mpol = MPOL_BIND_;
    return hmi_probe_map(b, why);
}

/* The page map, the split block table and the arena chunk table, mapped once. */
static int tables_init(struct hmi_msg *why)
{
    return hmi_pagemap_init(why) || hmi_split_init(why) || hmi_chunks_init(why);
}

int hmi_spec_open(struct hmi_bk *b, const char *spec, uint64_t capacity, int unlimited,
                  struct hmi_msg *why)
{
    int rc = -1;
    if (!spec) {
        hmi_msg_str(why, "no backend");
    } else if (!strcmp(spec, "default")) {
        b->kind = HMI_BK_DEFAULT;
        rc = 0;
    } else if (!unlimited && capacity == 0) {
        hmi_msg_str(why, "zero capacity");
    } else if (!strcmp(spec, "hugetlb")) {
        b->kind = HMI_BK_HUGETLB;
        b->map_huge = 1;
        rc = tables_init(why) ? -1 : hmi_probe_map(b, why);
    } else if (!strcmp(spec, "thp")) {
        b->kind = HMI_BK_THP;
        b->thp = 1;
        rc = tables_init(why) ? -1 : 0;
    } else if (!strncmp(spec, "numa:", 5)) {
        b->kind = HMI_BK_NUMA;
        rc = tables_init(why) ? -1 : numa_open(b, spec + 5, why);
    } else if (!strncmp(spec, "memkind:", 8)) {
        b->kind = HMI_BK_MEMKIND;
        rc = tables_init(why) ? -1 : hmi_mk_open(b, spec + 8, why);
    } else if (!strncmp(spec, "umf:", 4)) {
        rc = tables_init(why) ? -1 : hmi_umf_open(b, (uint32_t)(b - hmi_bks), spec + 4, capacity,
                                                 unlimited, why);
    } else {
        hmi_msg_str(why, "unknown backend (want memkind:KIND, numa:NODES, umf:numa:NODES, "
                         "umf:hugetlb, hugetlb, thp or default)");
    }
    return rc;
}
