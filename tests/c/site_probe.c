/* site_probe.c — libsite_probe.so, preloaded by tests/c/test_hmalloc.c into
 * hmalloc_app to learn the call-site chain of each of its sites, computed exactly as
 * collect and libhmalloc compute it: hm_modmap_init + hm_unwind_init(this library) +
 * hm_backtrace(raw, depth) + hm_modmap_frame, written `module+0xOFFSET > ...`
 * innermost first (docs/formats.md §1, §5; a frame outside every module is "??+0xADDR").
 *
 * Environment: HMT_PROBE_OUT=FILE (lines "SIZE CHAIN" appended), HMT_PROBE_LO/HI (the
 * request sizes recorded: calloc nmemb*size, reallocarray nmemb*size, otherwise the
 * size argument; realloc(p, 0) is a free, not recorded), HMT_PROBE_DEPTH (frames,
 * default 8). A (size, chain) pair is written once per process.
 *
 * Recording starts in the constructor, or without ASan at the first call (before the
 * constructor when a library the program links allocates in its own constructor).
 * Every call is passed to the next allocator (dlsym(RTLD_NEXT), common/hm_real); calls
 * made while that is being resolved get the static arena, whose blocks free ignores.
 * Like collect's shim, an entry point reaches hm_backtrace through one slow-path
 * frame, and a thread-local flag keeps libunwind's own allocations out. No malloc or
 * stdio in the recording path. */
#include "hm_modmap.h"
#include "hm_real.h"
#include "hm_unwind.h"
#include "hm_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static struct hm_alloc_fns rm;
static _Atomic int g_state;             /* 0 not yet, 2 recording, 3 off */
static size_t g_lo = 1, g_hi;
static int g_depth = 8, g_fd = -1;
static __thread int t_busy __attribute__((tls_model("initial-exec")));

#define SEEN_SLOTS 4096u
static _Atomic uint64_t g_seen[SEEN_SLOTS];     /* hashes of (size, chain) written */

static size_t env_num(const char *name, size_t def)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    size_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++)
        v = v * 10 + (size_t)(*s - '0');
    return v;
}

static int g_lazy;                      /* no ASan: the first call may set up */

/* The wrapped functions, once; calls made meanwhile get the arena. Under ASan the
 * first call comes from ASan's own initialization. */
static void resolve(void)
{
    static _Atomic int once;
    int z = 0;
    if (!atomic_compare_exchange_strong(&once, &z, 1))
        return;
    t_busy++;
    hm_real_resolve(&rm);
    g_lazy = dlsym(RTLD_DEFAULT, "__asan_init") == NULL;
    t_busy--;
}

/* Start recording: in the constructor, or (as libhmalloc does, and not under ASan,
 * whose start-up allocates before its interceptors work) on the first call, which
 * may come from the constructor of a library the program links. */
static void setup(void)
{
    static _Atomic int once;
    int z = 0;
    if (!atomic_compare_exchange_strong(&once, &z, 1))
        return;
    t_busy++;
    const char *out = getenv("HMT_PROBE_OUT");
    if (rm.malloc && rm.free && out && *out) {
        g_lo = env_num("HMT_PROBE_LO", 1);
        g_hi = env_num("HMT_PROBE_HI", 0);
        g_depth = (int)env_num("HMT_PROBE_DEPTH", 8);
        if (g_depth < 1 || g_depth > HM_MAX_DEPTH)
            g_depth = 8;
        g_fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        hm_modmap_init(NULL);
        hm_unwind_init((void *)&setup);
    }
    atomic_store(&g_state, g_fd >= 0 ? 2 : 3);
    t_busy--;
}

__attribute__((constructor)) static void probe_ctor(void)
{
    resolve();
    setup();
}

static int wanted(size_t n)
{
    if (t_busy)
        return 0;
    int st = atomic_load_explicit(&g_state, memory_order_acquire);
    if (hm_unlikely(st == 0) && g_lazy && rm.malloc) {
        setup();
        st = atomic_load_explicit(&g_state, memory_order_acquire);
    }
    return st == 2 && n >= g_lo && n <= g_hi;
}

/* 1 when the wrapped allocator is known (resolving it on the first call). */
static int have_real(void)
{
    if (hm_likely(__atomic_load_n(&rm.malloc, __ATOMIC_ACQUIRE) != NULL))
        return 1;
    if (!t_busy)
        resolve();
    return __atomic_load_n(&rm.malloc, __ATOMIC_ACQUIRE) != NULL;
}

static int first_time(uint64_t h)
{
    h |= 1;
    for (uint32_t k = 0; k < SEEN_SLOTS; k++) {
        _Atomic uint64_t *s = &g_seen[(h + k) & (SEEN_SLOTS - 1)];
        uint64_t cur = atomic_load(s);
        if (cur == h)
            return 0;
        if (cur == 0) {
            uint64_t z = 0;
            if (atomic_compare_exchange_strong(s, &z, h))
                return 1;
            if (z == h)
                return 0;
        }
    }
    return 1;
}

static size_t fmt_hex(char *dst, uint64_t v)
{
    char tmp[16];
    size_t n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    for (size_t i = 0; i < n; i++)
        dst[i] = tmp[n - 1 - i];
    return n;
}

/* The slow path: one frame between the entry point and hm_backtrace, as collect. */
static HM_NOINLINE void record(size_t size)
{
    int err = errno;
    t_busy++;
    uint64_t raw[HM_MAX_DEPTH];
    int n = hm_backtrace(raw, g_depth);
    char line[HM_MAX_DEPTH * 320 + 64];
    size_t k = hm_fmt_u64(line, size);
    line[k++] = ' ';
    for (int i = 0; i < n; i++) {
        uint64_t f = hm_modmap_frame(raw[i]);
        const struct hm_module *m = hm_modmap_get((uint32_t)(f >> HM_FRAME_MODSHIFT));
        const char *path = m ? m->path : "??";
        size_t pl = strlen(path);
        if (pl > 256 || k + pl + 32 > sizeof line)
            break;
        if (i) {
            memcpy(line + k, " > ", 3);
            k += 3;
        }
        memcpy(line + k, path, pl);
        k += pl;
        memcpy(line + k, "+0x", 3);
        k += 3;
        k += fmt_hex(line + k, f & HM_FRAME_OFFMASK);
    }
    line[k++] = '\n';
    if (first_time(hm_fnv1a(line, k, 0xcbf29ce484222325ull)))
        hm_write_all(g_fd, line, k);
    t_busy--;
    errno = err;
}

/* ---- the entry points ---- */

EXPORT void *malloc(size_t n)
{
    if (hm_unlikely(wanted(n)))
        record(n);
    if (hm_unlikely(!have_real()))
        return hm_boot_alloc(n, 16);
    return rm.malloc(n);
}

EXPORT void free(void *p)
{
    if (!p || hm_in_boot(p))
        return;
    rm.free(p);
}

EXPORT void cfree(void *p);
EXPORT void cfree(void *p) { free(p); }

EXPORT void *calloc(size_t nmemb, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(nmemb, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    if (hm_unlikely(wanted(total)))
        record(total);
    if (hm_unlikely(!have_real()))
        return hm_boot_alloc(total, 16);           /* the arena is zero */
    return rm.calloc(nmemb, size);
}

static void *realloc_boot(void *p, size_t n)
{
    void *q = have_real() ? rm.malloc(n) : hm_boot_alloc(n, 16);
    size_t old = hm_boot_size(p);
    if (q)
        memcpy(q, p, old < n ? old : n);
    return q;
}

EXPORT void *realloc(void *p, size_t n)
{
    if (hm_unlikely((n || !p) && wanted(n)))       /* realloc(p, 0) frees: not a site */
        record(n);
    if (p && hm_in_boot(p))
        return realloc_boot(p, n);
    if (hm_unlikely(!have_real()))
        return hm_boot_alloc(n, 16);
    return rm.realloc(p, n);
}

EXPORT void *reallocarray(void *p, size_t nmemb, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(nmemb, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    if (hm_unlikely(wanted(total)))
        record(total);
    if (p && hm_in_boot(p))
        return realloc_boot(p, total);
    if (hm_unlikely(!have_real()))
        return hm_boot_alloc(total, 16);
    return rm.reallocarray(p, nmemb, size);
}

EXPORT int posix_memalign(void **memptr, size_t align, size_t size)
{
    if (hm_unlikely(wanted(size)))
        record(size);
    if (hm_unlikely(!have_real())) {
        void *p = hm_boot_alloc(size, align);
        if (!p)
            return ENOMEM;
        *memptr = p;
        return 0;
    }
    return rm.posix_memalign(memptr, align, size);
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
    if (hm_unlikely(wanted(size)))
        record(size);
    if (hm_unlikely(!have_real()))
        return hm_boot_alloc(size, align);
    return rm.aligned_alloc(align, size);
}

EXPORT void *memalign(size_t align, size_t size)
{
    if (hm_unlikely(wanted(size)))
        record(size);
    if (hm_unlikely(!have_real()))
        return hm_boot_alloc(size, align);
    return rm.memalign(align, size);
}

EXPORT void *valloc(size_t n)
{
    if (hm_unlikely(wanted(n)))
        record(n);
    if (hm_unlikely(!have_real()))
        return hm_boot_alloc(n, 4096);
    return rm.valloc(n);
}

EXPORT void *pvalloc(size_t n)
{
    if (hm_unlikely(wanted(n)))
        record(n);
    if (hm_unlikely(!have_real()))
        return hm_boot_alloc((n + 4095) & ~(size_t)4095, 4096);
    return rm.pvalloc(n);
}

EXPORT size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    if (hm_in_boot(p))
        return hm_boot_size(p);
    return rm.usable ? rm.usable(p) : 0;
}
