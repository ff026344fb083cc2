/* hm_modmap.c — see hm_modmap.h. All memory comes from mmap: this runs inside
 * malloc hooks and must never call malloc. */
#include "hm_modmap.h"

#include <link.h>
#include <limits.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define POOL_BYTES (HM_MAX_MODULES * 256u)
#define SCAN_MAX 2048u

struct scan_ent { uint64_t base, lo, hi; const char *name; };
struct scan { unsigned n; unsigned long long adds, subs; struct scan_ent e[SCAN_MAX]; };

static struct hm_module *g_mods;          /* registry, index = id - 1 */
static _Atomic uint32_t g_nmods;
static char *g_pool;                      /* path strings */
static size_t g_pool_used;
static uint32_t *g_active;                /* ids of mapped modules sorted by lo */
static _Atomic uint32_t g_nactive;
static _Atomic uint32_t g_seq;            /* seqlock: odd while g_active changes */
static atomic_flag g_lock = ATOMIC_FLAG_INIT;
static _Atomic uint32_t g_gen, g_gen_seen;
static unsigned long long g_adds, g_subs;
static hm_modmap_newmod_fn g_cb;
static char g_exe[PATH_MAX];
static _Atomic int g_ready;

uint64_t hm_fnv1a(const void *p, uint64_t n, uint64_t h)
{
    const unsigned char *s = p;
    for (uint64_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void lock(void)   { while (atomic_flag_test_and_set_explicit(&g_lock, memory_order_acquire)) ; }
static void unlock(void) { atomic_flag_clear_explicit(&g_lock, memory_order_release); }

void hm_modmap_atfork_prepare(void) { lock(); }
void hm_modmap_atfork_release(void) { unlock(); }

void hm_modmap_init(hm_modmap_newmod_fn cb)
{
    if (atomic_load(&g_ready))
        return;
    g_cb = cb;
    size_t bytes = HM_MAX_MODULES * (sizeof(struct hm_module) + sizeof(uint32_t)) + POOL_BYTES;
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return;
    g_mods = mem;
    g_active = (uint32_t *)(g_mods + HM_MAX_MODULES);
    g_pool = (char *)(g_active + HM_MAX_MODULES);
    ssize_t n = readlink("/proc/self/exe", g_exe, sizeof(g_exe) - 1);
    g_exe[n > 0 ? n : 0] = '\0';
    atomic_store(&g_gen, 1);
    atomic_store(&g_ready, 1);
}

void hm_modmap_invalidate(void) { atomic_fetch_add(&g_gen, 1); }

uint32_t hm_modmap_generation(void) { return atomic_load_explicit(&g_gen, memory_order_relaxed); }

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct scan *s = arg;
    (void)size;
    s->adds = info->dlpi_adds;
    s->subs = info->dlpi_subs;
    if (s->n >= SCAN_MAX)
        return 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo) lo = a;
        if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
    }
    if (hi <= lo)
        return 0;
    struct scan_ent *e = &s->e[s->n++];
    e->base = info->dlpi_addr;
    e->lo = lo;
    e->hi = hi;
    e->name = info->dlpi_name;
    return 0;
}

static int counters_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    unsigned long long *c = arg;
    (void)size;
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
    return 1;
}

static uint32_t intern(const struct scan_ent *e)
{
    const char *name = (e->name && e->name[0]) ? e->name : g_exe;
    size_t len = strlen(name);
    uint32_t n = atomic_load(&g_nmods);
    for (uint32_t i = n; i-- > 0;) {
        struct hm_module *m = &g_mods[i];
        if (m->base == e->base && m->lo == e->lo && m->hi == e->hi && m->path_len == len &&
            memcmp(m->path, name, len) == 0)
            return m->id;
    }
    if (n >= HM_MAX_MODULES || g_pool_used + len + 1 > POOL_BYTES)
        return 0;
    struct hm_module *m = &g_mods[n];
    char *p = g_pool + g_pool_used;
    memcpy(p, name, len + 1);
    g_pool_used += len + 1;
    m->id = n + 1;
    m->path = p;
    m->path_len = (uint32_t)len;
    m->base = e->base;
    m->lo = e->lo;
    m->hi = e->hi;
    m->path_hash = hm_fnv1a(p, len, 0xcbf29ce484222325ull);
    atomic_store_explicit(&g_nmods, n + 1, memory_order_release);
    if (g_cb)
        g_cb(m);
    return m->id;
}

/* Rescan the loader's list; dl_iterate_phdr runs without our lock held (it takes
 * the loader's lock, and the loader may call malloc while holding it). */
static void refresh(void)
{
    struct scan *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED)
        return;
    s->n = 0;
    uint32_t gen = atomic_load(&g_gen);
    dl_iterate_phdr(scan_cb, s);
    lock();
    uint32_t ids[SCAN_MAX];
    unsigned k = 0;
    for (unsigned i = 0; i < s->n; i++) {
        uint32_t id = intern(&s->e[i]);
        if (id)
            ids[k++] = id;
    }
    /* insertion sort by lo: k is small (tens to a few hundred) */
    for (unsigned i = 1; i < k; i++) {
        uint32_t v = ids[i];
        unsigned j = i;
        while (j > 0 && g_mods[ids[j - 1] - 1].lo > g_mods[v - 1].lo) {
            ids[j] = ids[j - 1];
            j--;
        }
        ids[j] = v;
    }
    atomic_fetch_add_explicit(&g_seq, 1, memory_order_acq_rel);
    memcpy(g_active, ids, k * sizeof(uint32_t));
    atomic_store_explicit(&g_nactive, k, memory_order_release);
    atomic_fetch_add_explicit(&g_seq, 1, memory_order_acq_rel);
    g_adds = s->adds;
    g_subs = s->subs;
    atomic_store(&g_gen_seen, gen);
    unlock();
    munmap(s, sizeof(*s));
}

static uint32_t lookup(uint64_t addr)
{
    for (;;) {
        uint32_t s0 = atomic_load_explicit(&g_seq, memory_order_acquire);
        if (s0 & 1)
            continue;
        uint32_t n = atomic_load_explicit(&g_nactive, memory_order_acquire);
        if (n > HM_MAX_MODULES)
            n = HM_MAX_MODULES;
        uint32_t lo = 0, hi = n, found = 0;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            uint32_t id = g_active[mid];
            if (id == 0 || id > HM_MAX_MODULES)
                break;
            const struct hm_module *m = &g_mods[id - 1];
            if (addr < m->lo)
                hi = mid;
            else if (addr >= m->hi)
                lo = mid + 1;
            else {
                found = id;
                break;
            }
        }
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&g_seq, memory_order_relaxed) == s0)
            return found;
    }
}

static uint32_t find_id(uint64_t addr)
{
    if (hm_unlikely(!atomic_load_explicit(&g_ready, memory_order_acquire)))
        return 0;
    if (hm_unlikely(atomic_load_explicit(&g_gen, memory_order_relaxed) !=
                    atomic_load_explicit(&g_gen_seen, memory_order_relaxed)))
        refresh();
    uint32_t id = lookup(addr);
    if (hm_unlikely(id == 0)) {
        /* A library loaded without our dlopen wrapper (libc's internal dlopen, a
         * dependency): rescan only if the loader's counters moved. */
        unsigned long long c[2] = { 0, 0 };
        dl_iterate_phdr(counters_cb, c);
        if (c[0] != g_adds || c[1] != g_subs) {
            refresh();
            id = lookup(addr);
        }
    }
    return id;
}

uint64_t hm_modmap_frame(uint64_t addr)
{
    uint32_t id = find_id(addr);
    if (id == 0)
        return addr & HM_FRAME_OFFMASK;
    return ((uint64_t)id << HM_FRAME_MODSHIFT) | ((addr - g_mods[id - 1].base) & HM_FRAME_OFFMASK);
}

const struct hm_module *hm_modmap_find(uint64_t addr)
{
    uint32_t id = find_id(addr);
    return id ? &g_mods[id - 1] : NULL;
}

const struct hm_module *hm_modmap_get(uint32_t id)
{
    if (id == 0 || id > atomic_load_explicit(&g_nmods, memory_order_acquire))
        return NULL;
    return &g_mods[id - 1];
}

uint32_t hm_modmap_count(void) { return atomic_load(&g_nmods); }
