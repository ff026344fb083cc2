/* hmi_backend_memkind.c — the memkind:KIND backend: memkind decides WHERE (the
 * kind's NUMA nodes, policy and page size), libhmalloc allocates (hmi_mmap.c's
 * mmap blocks and hmi_arena.c's small-object chunks, mbind'ed to the kind's nodes).
 *
 * Why memkind no longer allocates: libmemkind's destructor (memkind_finalize) destroys
 * its arenas at exit and zeroes every block still live in them, before libc flushes
 * stdio (which happens after every ELF destructor) and before the destructors of
 * libraries dlopen'ed later. Buffered stdout, a setvbuf buffer or an unclosed file
 * whose buffer was placed came out as NUL bytes; a plugin destructor freeing a placed
 * block crashed in memkind_free (measured here with MEMKIND_HBW, MEMKIND_HBW_NODES=0;
 * MACHINE-NOTES.md). No destructor order can fix that, so placed memory must not be
 * memkind's. Memory mapped here is never released at exit.
 *
 * What memkind still does: it says whether the kind is available on this machine
 * (memkind_check_available, with memkind's own detection of HBW/DAX-KMEM/... nodes
 * and MEMKIND_HBW_NODES) and gives the kind's placement: the kind's own
 * get_mbind_nodemask, get_mbind_mode and get_mmap_flags operations. Those live in
 * the kind's private memkind_ops table (not in memkind.h); its layout is learnt at
 * run time, not assumed: the slots of MEMKIND_HBW's table that hold three exported
 * functions (memkind_hbw_get_mbind_nodemask, memkind_default_get_mbind_mode,
 * memkind_default_get_mmap_flags) are the slots of those operations, checked on
 * MEMKIND_HBW_PREFERRED (memkind_preferred_get_mbind_mode) and MEMKIND_HUGETLB
 * (memkind_hugetlb_get_mmap_flags). Every table and function read must lie inside
 * libmemkind.so.0 (dladdr); anything unexpected makes the tier unavailable with a
 * reason, never a guess. libmemkind.so.0 is dlopen'ed on the first memkind tier, so
 * libhmalloc runs (with such tiers unavailable) where memkind is not installed. */
#include "hmi_backend_int.h"

#include <dlfcn.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#define MAP_HUGE_MASK_ 0x3f
#define MPOL_DEFAULT_ 0
#define MPOL_BIND_ 2
#define OPS_SLOTS 40                    /* memkind_ops has about 25 members */

typedef int (*mask_fn)(void *kind, unsigned long *mask, unsigned long maxnode);
typedef int (*mode_fn)(void *kind, int *mode);
typedef int (*flags_fn)(void *kind, int *flags);

static struct {
    int (*check_available)(void *);
    void (*error_message)(int, char *, size_t);
    void *handle;
    void *base;                         /* libmemkind's load address (dladdr) */
    int slot_mask, slot_mode, slot_flags;
} mk;

static void *sym(const char *name) { return dlsym(mk.handle, name); }

/* Whether a lies inside libmemkind.so.0. */
static int in_memkind(const void *a)
{
    Dl_info di;
    return a && dladdr(a, &di) && di.dli_fbase == mk.base;
}

/* The ops table of the kind exported as name, or NULL. The kind variable holds a
 * struct memkind *, whose first member is its ops table. */
static void *const *kind_ops(const char *name, void **kind_out)
{
    void **var = sym(name);
    if (!var || !in_memkind(var) || !in_memkind(*var))
        return NULL;
    void *const *ops = *(void *const *const *)*var;
    if (!in_memkind(ops) || !in_memkind(ops + OPS_SLOTS - 1))
        return NULL;
    if (kind_out)
        *kind_out = *var;
    return ops;
}

static int slot_of(void *const *ops, const char *fn)
{
    void *f = sym(fn);
    int found = -1;
    for (int i = 0; f && i < OPS_SLOTS; i++) {
        if (ops[i] == f) {
            if (found >= 0)
                return -1;              /* twice: not a table of operations */
            found = i;
        }
    }
    return found;
}

/* Learn which ops slots hold get_mbind_nodemask, get_mbind_mode, get_mmap_flags. */
static int learn_slots(struct hmi_msg *why)
{
    void *const *hbw = kind_ops("MEMKIND_HBW", NULL);
    void *const *pref = kind_ops("MEMKIND_HBW_PREFERRED", NULL);
    void *const *huge = kind_ops("MEMKIND_HUGETLB", NULL);
    if (hbw && pref && huge) {
        mk.slot_mask = slot_of(hbw, "memkind_hbw_get_mbind_nodemask");
        mk.slot_mode = slot_of(hbw, "memkind_default_get_mbind_mode");
        mk.slot_flags = slot_of(hbw, "memkind_default_get_mmap_flags");
        if (mk.slot_mask >= 0 && mk.slot_mode >= 0 && mk.slot_flags >= 0 &&
            mk.slot_mask != mk.slot_mode && mk.slot_mode != mk.slot_flags &&
            mk.slot_mask != mk.slot_flags &&
            slot_of(pref, "memkind_preferred_get_mbind_mode") == mk.slot_mode &&
            slot_of(huge, "memkind_hugetlb_get_mmap_flags") == mk.slot_flags)
            return 0;
    }
    hmi_msg_str(why, "this libmemkind.so.0 does not show its kinds' placement operations "
                     "the way memkind 1.10-1.14 does (use numa:NODES for this tier)");
    return -1;
}

static int mk_load(struct hmi_msg *why)
{
    if (mk.handle)
        return 0;
    void *h = dlopen("libmemkind.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        hmi_msg_str(why, "cannot load libmemkind.so.0: ");
        hmi_msg_str(why, e ? e : "dlopen failed");
        return -1;
    }
    mk.handle = h;
    void *ca = sym("memkind_check_available"), *em = sym("memkind_error_message");
    Dl_info di;
    if (!ca || !em || !dladdr(ca, &di)) {
        hmi_msg_str(why, "libmemkind.so.0 lacks memkind_check_available or "
                         "memkind_error_message");
        goto fail;
    }
    mk.base = di.dli_fbase;
    /* dlsym returns void *; copying it into a function pointer goes through memcpy. */
    memcpy(&mk.check_available, &ca, sizeof ca);
    memcpy(&mk.error_message, &em, sizeof em);
    if (learn_slots(why) == 0)
        return 0;
fail:
    dlclose(h);
    memset(&mk, 0, sizeof mk);
    return -1;
}

static void mk_error(struct hmi_msg *why, int err)
{
    char buf[128];
    mk.error_message(err, buf, sizeof buf);
    buf[sizeof buf - 1] = '\0';
    hmi_msg_str(why, buf);
    hmi_msg_str(why, " (");
    if (err < 0) {
        hmi_msg_str(why, "-");
        hmi_msg_u64(why, (uint64_t)-(int64_t)err);
    } else {
        hmi_msg_u64(why, (uint64_t)err);
    }
    hmi_msg_str(why, ")");
}

/* The operation in slot of ops, when there is one and it is libmemkind's code. */
static void *op(void *const *ops, int slot)
{
    void *f = ops[slot];
    return in_memkind(f) ? f : NULL;
}

static int mask_empty(const unsigned long *m)
{
    for (unsigned i = 0; i < HMI_NODE_WORDS; i++)
        if (m[i])
            return 0;
    return 1;
}

int hmi_mk_open(struct hmi_bk *b, const char *kind, struct hmi_msg *why)
{
    /* Only exported MEMKIND_* variables are kinds; anything else dlsym finds is not. */
    if (strncmp(kind, "MEMKIND_", 8) != 0 || !kind[8]) {
        hmi_msg_str(why, "not a memkind kind name (want MEMKIND_HBW, MEMKIND_HUGETLB, ...)");
        return -1;
    }
    for (const char *c = kind; *c; c++) {
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_')) {
            hmi_msg_str(why, "not a memkind kind name");
            return -1;
        }
    }
    if (mk_load(why))
        return -1;
    void *k = NULL;
    void *const *ops = kind_ops(kind, &k);
    if (!ops) {
        hmi_msg_str(why, "libmemkind has no kind ");
        hmi_msg_str(why, kind);
        return -1;
    }
    int err = mk.check_available(k);
    if (err != 0) {
        hmi_msg_str(why, "kind unavailable: ");
        mk_error(why, err);
        return -1;
    }
    void *fm = op(ops, mk.slot_mask), *fd = op(ops, mk.slot_mode), *ff = op(ops, mk.slot_flags);
    mask_fn get_mask;
    mode_fn get_mode;
    flags_fn get_flags;
    memcpy(&get_mask, &fm, sizeof fm);
    memcpy(&get_mode, &fd, sizeof fd);
    memcpy(&get_flags, &ff, sizeof ff);
    int flags = 0, mode = MPOL_BIND_;
    memset(b->nodes, 0, sizeof b->nodes);
    if (get_flags && (err = get_flags(k, &flags)) != 0)
        goto mk_failed;
    if (get_mode && (err = get_mode(k, &mode)) != 0)
        goto mk_failed;
    if (get_mask && (err = get_mask(k, b->nodes, HMI_MAX_NODES)) != 0)
        goto mk_failed;
    if (flags & MAP_HUGETLB) {
        unsigned shift = ((unsigned)flags >> MAP_HUGE_SHIFT) & MAP_HUGE_MASK_;
        if (shift && shift != 21) {
            hmi_msg_str(why, "the kind uses hugepages of 2^");
            hmi_msg_u64(why, shift);
            hmi_msg_str(why, " bytes; only 2 MiB pages are supported");
            return -1;
        }
        b->map_huge = 1;
    }
    /* no node mask: the kind leaves placement to the kernel (MEMKIND_DEFAULT,
     * MEMKIND_HUGETLB) */
    b->mpol = get_mask && !mask_empty(b->nodes) ? mode : MPOL_DEFAULT_;
    return hmi_probe_map(b, why);
mk_failed:
    hmi_msg_str(why, "memkind cannot say where the kind's memory is: ");
    mk_error(why, err);
    return -1;
}
