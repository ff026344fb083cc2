/* hmi_nodes.c — the NUMA node lists of numa:LIST and umf:numa:LIST tiers: "0,2,4-7"
 * read into an mbind mask, and every node of a mask checked to be present
 * (/sys/devices/system/node/nodeN), each failure a one-line reason. */
#include "hmi_backend_int.h"

#include <string.h>
#include <unistd.h>

int hmi_parse_nodes(const char *s, unsigned long *mask, struct hmi_msg *why)
{
    memset(mask, 0, HMI_NODE_WORDS * sizeof(unsigned long));
    const char *p = s;
    for (;;) {
        uint64_t lo = 0, hi;
        if (*p < '0' || *p > '9')
            goto bad;
        while (*p >= '0' && *p <= '9' && lo < HMI_MAX_NODES)
            lo = lo * 10 + (uint64_t)(*p++ - '0');
        hi = lo;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9')
                goto bad;
            hi = 0;
            while (*p >= '0' && *p <= '9' && hi < HMI_MAX_NODES)
                hi = hi * 10 + (uint64_t)(*p++ - '0');
        }
        if (lo >= HMI_MAX_NODES || hi >= HMI_MAX_NODES || hi < lo)
            goto bad;
        for (uint64_t n = lo; n <= hi; n++)
            mask[n / (8 * sizeof(unsigned long))] |= 1ul << (n % (8 * sizeof(unsigned long)));
        if (*p == '\0')
            return 0;
        if (*p++ != ',')
            goto bad;
    }
bad:
    hmi_msg_str(why, "malformed node list (want e.g. 0, 8-15, 0,2,4-7; nodes < 1024)");
    return -1;
}

int hmi_nodes_present(const unsigned long *mask, struct hmi_msg *why)
{
    for (unsigned n = 0; n < HMI_MAX_NODES; n++) {
        if (!(mask[n / (8 * sizeof(unsigned long))] & (1ul << (n % (8 * sizeof(unsigned long))))))
            continue;
        char path[64];
        size_t k = hm_fmt_str(path, "/sys/devices/system/node/node");
        k += hm_fmt_u64(path + k, n);
        path[k] = '\0';
        if (access(path, F_OK) != 0) {
            hmi_msg_str(why, "node ");
            hmi_msg_u64(why, n);
            hmi_msg_str(why, " is not present (no ");
            hmi_msg_str(why, path);
            hmi_msg_str(why, ")");
            return -1;
        }
    }
    return 0;
}
