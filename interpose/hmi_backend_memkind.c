/* hmi_backend_memkind.c — the memkind:KIND backend. libmemkind.so.0 is dlopen'ed on
 * the first memkind tier, so libhmalloc runs (with such tiers unavailable) where
 * memkind is not installed.
 *
 * memkind cannot tell its own pointers from glibc's without crashing, so ownership
 * is recorded here: each block has a 16-byte header just before the returned pointer
 * whose second word is the index of a registry slot, and the slot holds the pointer.
 * hmi_mk_owner(p) reads the index (the 16 bytes before any glibc pointer are glibc's
 * chunk header, so the read is safe) and trusts it only if slot[index].ptr == p.
 * Slots are recycled through a lock-free stack with a tag against ABA; a slot's ptr is
 * cleared before its block goes back to memkind, so a later glibc block at the same
 * address never matches. */
#include "hmi_backend_int.h"

#include <dlfcn.h>
#include <string.h>
#include <sys/mman.h>

typedef void *mk_kind_t;

static struct {
    void *(*malloc)(mk_kind_t, size_t);
    int (*posix_memalign)(mk_kind_t, void **, size_t, size_t);
    void (*free)(mk_kind_t, void *);
    size_t (*usable_size)(mk_kind_t, void *);
    int (*check_available)(mk_kind_t);
    void (*error_message)(int, char *, size_t);
    void *handle;
} mk;

int hmi_mk_in_use;

#define MK_SLOTS   (1u << 20)               /* live memkind blocks at most */
#define MK_MAGIC   0x686d692d6d6b3031ull    /* first header word */

struct mk_slot {
    uintptr_t ptr;          /* the pointer handed out; 0 when the slot is free */
    void *base;             /* what memkind returned */
    uint64_t usable;        /* memkind_malloc_usable_size(base): the charge */
    uint32_t tier;
    uint32_t next;          /* free stack: index + 1 of the next free slot, 0 = none */
};

static struct mk_slot *mk_slots;
static uint32_t mk_bump;                    /* slots below this were handed out once */
static uint64_t mk_free_head;               /* tag << 32 | (index + 1) */

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
        "memkind_malloc", "memkind_posix_memalign", "memkind_free",
        "memkind_malloc_usable_size", "memkind_check_available", "memkind_error_message",
    };
    void *syms[6];
    for (int i = 0; i < 6; i++) {
        syms[i] = dlsym(h, names[i]);
        if (!syms[i]) {
            hmi_msg_str(why, "libmemkind.so.0 lacks ");
            hmi_msg_str(why, names[i]);
            dlclose(h);
            return -1;
        }
    }
    memcpy(&mk.malloc, &syms[0], sizeof(void *));
    memcpy(&mk.posix_memalign, &syms[1], sizeof(void *));
    memcpy(&mk.free, &syms[2], sizeof(void *));
    memcpy(&mk.usable_size, &syms[3], sizeof(void *));
    memcpy(&mk.check_available, &syms[4], sizeof(void *));
    memcpy(&mk.error_message, &syms[5], sizeof(void *));
    void *s = mmap(NULL, (size_t)MK_SLOTS * sizeof(struct mk_slot), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s == MAP_FAILED) {
        hmi_msg_str(why, "cannot map the memkind block registry");
        dlclose(h);
        return -1;
    }
    mk_slots = s;
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

static int64_t slot_pop(void)
{
    uint64_t h = __atomic_load_n(&mk_free_head, __ATOMIC_ACQUIRE);
    while ((uint32_t)h) {
        uint32_t i = (uint32_t)h - 1;
        uint32_t nx = __atomic_load_n(&mk_slots[i].next, __ATOMIC_RELAXED);
        uint64_t nh = (((h >> 32) + 1) << 32) | nx;
        if (__atomic_compare_exchange_n(&mk_free_head, &h, nh, 1, __ATOMIC_ACQUIRE,
                                        __ATOMIC_ACQUIRE))
            return i;
    }
    uint32_t i = __atomic_fetch_add(&mk_bump, 1, __ATOMIC_RELAXED);
    if (i >= MK_SLOTS) {
        __atomic_fetch_sub(&mk_bump, 1, __ATOMIC_RELAXED);
        return -1;
    }
    return i;
}

static void slot_push(uint32_t i)
{
    uint64_t h = __atomic_load_n(&mk_free_head, __ATOMIC_RELAXED), nh;
    do {
        __atomic_store_n(&mk_slots[i].next, (uint32_t)h, __ATOMIC_RELAXED);
        nh = (((h >> 32) + 1) << 32) | (i + 1);
    } while (!__atomic_compare_exchange_n(&mk_free_head, &h, nh, 1, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
}

void *hmi_mk_alloc(struct hmi_bk *b, uint32_t index, size_t size, size_t align)
{
    size_t off = align <= 16 ? 16 : align;
    if (size > SIZE_MAX - off)
        return NULL;
    int64_t si = slot_pop();
    if (si < 0)
        return NULL;
    void *base = NULL;
    if (align <= 16)
        base = mk.malloc(b->mk_kind, size + off);
    else if (mk.posix_memalign(b->mk_kind, &base, align, size + off) != 0)
        base = NULL;
    if (!base) {
        slot_push((uint32_t)si);
        return NULL;
    }
    uint64_t usable = mk.usable_size(b->mk_kind, base);
    if (hmi_charge(b, usable)) {
        mk.free(b->mk_kind, base);
        slot_push((uint32_t)si);
        return NULL;
    }
    char *p = (char *)base + off;
    struct mk_slot *s = &mk_slots[si];
    s->base = base;
    s->usable = usable;
    s->tier = index;
    ((uint64_t *)p)[-2] = MK_MAGIC;
    ((uint64_t *)p)[-1] = (uint64_t)si;
    __atomic_store_n(&s->ptr, (uintptr_t)p, __ATOMIC_RELEASE);
    return p;
}

/* The word before p: glibc's chunk size field for glibc pointers, which sanitizers
 * treat as a redzone; reading it is intended. */
__attribute__((no_sanitize("address")))
static uint64_t header_index(const void *p)
{
    return *(const volatile uint64_t *)((const char *)p - 8);
}

int hmi_mk_owner(const void *p)
{
    if ((uintptr_t)p & 15)
        return HMI_OWNER_LIBC;
    uint64_t i = header_index(p);
    if (i >= __atomic_load_n(&mk_bump, __ATOMIC_ACQUIRE))
        return HMI_OWNER_LIBC;
    if (__atomic_load_n(&mk_slots[i].ptr, __ATOMIC_ACQUIRE) != (uintptr_t)p)
        return HMI_OWNER_LIBC;
    return (int)mk_slots[i].tier;
}

void hmi_mk_free(void *p)
{
    uint64_t i = ((uint64_t *)p)[-1];
    struct mk_slot *s = &mk_slots[i];
    struct hmi_bk *b = &hmi_bks[s->tier];
    void *base = s->base;
    uint64_t usable = s->usable;
    __atomic_store_n(&s->ptr, 0, __ATOMIC_RELEASE);
    ((uint64_t *)p)[-1] = UINT64_MAX;
    mk.free(b->mk_kind, base);
    hmi_uncharge(b, usable);
    slot_push((uint32_t)i);
}

size_t hmi_mk_usable(const void *p)
{
    uint64_t i = ((const uint64_t *)p)[-1];
    const struct mk_slot *s = &mk_slots[i];
    return (size_t)(s->usable - (uint64_t)((const char *)p - (const char *)s->base));
}
