/* hmi_backend_memkind.c — the memkind:KIND backend. libmemkind.so.0 is dlopen'ed on
 * the first memkind tier, so libhmalloc runs (with such tiers unavailable) where
 * memkind is not installed.
 *
 * memkind cannot tell its own pointers from glibc's without crashing, so ownership
 * is recorded in the page map (hmi_backend.c: hmi_mk_mark/hmi_mk_unmark count, per
 * 4 KiB page, the live memkind blocks that start in it, with their tier). Blocks are
 * memkind's own, unchanged: an aligned request is memkind_posix_memalign's, nothing
 * is added before or after it, so no alignment bytes are wasted. Two tiers may not
 * use the same kind (their pages could not be told apart). */
#include "hmi_backend_int.h"

#include <dlfcn.h>
#include <string.h>

typedef void *mk_kind_t;

static struct {
    void *(*malloc)(mk_kind_t, size_t);
    void *(*calloc)(mk_kind_t, size_t, size_t);
    int (*posix_memalign)(mk_kind_t, void **, size_t, size_t);
    void (*free)(mk_kind_t, void *);
    size_t (*usable_size)(mk_kind_t, void *);
    int (*check_available)(mk_kind_t);
    void (*error_message)(int, char *, size_t);
    void *handle;
} mk;

int hmi_mk_in_use;

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
    /* dlsym returns void *; copying it into a function pointer goes through memcpy. */
    static const char *const names[] = {
        "memkind_malloc", "memkind_calloc", "memkind_posix_memalign", "memkind_free",
        "memkind_malloc_usable_size", "memkind_check_available", "memkind_error_message",
    };
    void *syms[7];
    for (int i = 0; i < 7; i++) {
        syms[i] = dlsym(h, names[i]);
        if (!syms[i]) {
            hmi_msg_str(why, "libmemkind.so.0 lacks ");
            hmi_msg_str(why, names[i]);
            dlclose(h);
            return -1;
        }
    }
    memcpy(&mk.malloc, &syms[0], sizeof(void *));
    memcpy(&mk.calloc, &syms[1], sizeof(void *));
    memcpy(&mk.posix_memalign, &syms[2], sizeof(void *));
    memcpy(&mk.free, &syms[3], sizeof(void *));
    memcpy(&mk.usable_size, &syms[4], sizeof(void *));
    memcpy(&mk.check_available, &syms[5], sizeof(void *));
    memcpy(&mk.error_message, &syms[6], sizeof(void *));
    mk.handle = h;
    return 0;
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
    mk_kind_t *var = dlsym(mk.handle, kind);
    if (!var) {
        hmi_msg_str(why, "libmemkind has no kind ");
        hmi_msg_str(why, kind);
        return -1;
    }
    mk_kind_t k = *var;
    for (unsigned i = 0; i < HMI_MAX_TIERS; i++) {
        if (&hmi_bks[i] != b && hmi_bks[i].state == HMI_TIER_OK &&
            hmi_bks[i].kind == HMI_BK_MEMKIND && hmi_bks[i].mk_kind == k) {
            hmi_msg_str(why, "the same kind as tier index ");
            hmi_msg_u64(why, i);
            hmi_msg_str(why, " (list each memkind kind once)");
            return -1;
        }
    }
    int err = mk.check_available(k);
    if (err != 0) {
        hmi_msg_str(why, "kind unavailable: ");
        mk_error(why, err);
        return -1;
    }
    void *probe = mk.malloc(k, 64);
    if (!probe) {
        hmi_msg_str(why, "memkind_malloc returned NULL (MEMKIND_HBW on a machine "
                         "without HBM needs MEMKIND_HBW_NODES)");
        return -1;
    }
    mk.free(k, probe);
    b->mk_kind = k;
    __atomic_store_n(&hmi_mk_in_use, 1, __ATOMIC_RELEASE);
    return 0;
}

void *hmi_mk_alloc(struct hmi_bk *b, uint32_t index, size_t size, size_t align, int zero)
{
    void *p = NULL;
    if (align <= 16)
        p = zero ? mk.calloc(b->mk_kind, 1, size) : mk.malloc(b->mk_kind, size);
    else if (mk.posix_memalign(b->mk_kind, &p, align, size) != 0)
        p = NULL;
    else if (zero)
        memset(p, 0, size);
    if (!p)
        return NULL;
    uint64_t usable = mk.usable_size(b->mk_kind, p);
    if (hmi_charge(b, usable) != 0) {
        mk.free(b->mk_kind, p);
        return NULL;
    }
    if (hmi_mk_mark(p, index) != 0) {       /* no room left in the page map's leaves */
        mk.free(b->mk_kind, p);
        hmi_uncharge(b, usable);
        return NULL;
    }
    return p;
}

void hmi_mk_free(struct hmi_bk *b, void *p, size_t usable)
{
    /* Unmarked first: once memkind has the block back its page may become glibc's. */
    hmi_mk_unmark(p);
    mk.free(b->mk_kind, p);
    hmi_uncharge(b, usable);
}

size_t hmi_mk_usable(struct hmi_bk *b, const void *p)
{
    return mk.usable_size(b->mk_kind, (void *)p);
}
