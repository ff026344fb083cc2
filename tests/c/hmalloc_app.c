/* hmalloc_app.c — the application tests/c/test_hmalloc.c runs with and without
 * libhmalloc.so (and under libsite_probe.so to learn its call-site chains). Usage:
 * hmalloc_app MODE [ARGS], MODE one of io, family, cap, threads, fork LIB, dl LIB COPY,
 * boot, fd2 FILE, static (LIB: libhmalloc_dl.so, COPY: a copy of it under another path).
 * It is linked with libhmalloc_early.so (hmalloc_early.c), whose constructor
 * allocates in mode boot.
 *
 * Each site (hmalloc_app.h) uses one request size of its own. Every block is filled
 * with a pattern and checked after each move; stdout gets one result line per mode,
 * "MODE errors=N checksum=H", which must not depend on where blocks were placed (the
 * checksum is the sum of the FNV-1a hashes of the checked contents). Observations
 * that only make sense under libhmalloc (a realloc that stayed in place, the pid)
 * go to the file HMT_INFO names, as "key value" lines. Sites are called from below
 * a few extra frames (deep) so that their stacks are deeper than the placement's
 * depth, as in real programs; threads' stacks are whole chains shorter than it. */
#include "hmalloc_app.h"
#include "smaps_split.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOIPA __attribute__((noinline, noipa))

/* glibc keeps cfree only as a compat symbol: bound when libhmalloc (or the probe)
 * exports it, NULL otherwise. */
extern void cfree(void *) __attribute__((weak));

static _Atomic int g_err;
static _Atomic uint64_t g_sum;
static FILE *g_info;
static const char *g_dl_path, *g_dl_copy;  /* libhmalloc_dl.so and a copy (fd2: its file) */

static void info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void info(const char *fmt, ...)
{
    if (!g_info)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(g_info, fmt, ap);
    va_end(ap);
    fputc('\n', g_info);
    fflush(g_info);
}

static void bad(const char *what)
{
    fprintf(stderr, "hmalloc_app: FAILED: %s\n", what);
    atomic_fetch_add(&g_err, 1);
}

static void *need(void *p, const char *what)
{
    if (!p) {
        fprintf(stderr, "hmalloc_app: FAILED: %s returned NULL\n", what);
        exit(98);
    }
    return p;
}

/* fork() with every output stream flushed first, so that nothing buffered is written
 * twice; a failed fork is fatal. */
static pid_t fork_flushed(void)
{
    fflush(stdout);
    fflush(stderr);
    if (g_info)
        fflush(g_info);
    pid_t pid = fork();
    if (pid < 0)
        need(NULL, "fork");
    return pid;
}

static unsigned char pat(size_t i, unsigned seed)
{
    return (unsigned char)(seed * 131u + i * 7u + (i >> 9));
}

static void fill(void *p, size_t n, unsigned seed)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = pat(i, seed);
}

/* Compare [p, p+n) with the pattern, add its hash to the checksum (unless sum is 0:
 * blocks whose number varies from run to run). */
static void check_sum(const void *p, size_t n, unsigned seed, const char *what, int sum)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        wrong += b[i] != pat(i, seed);
        h = (h ^ b[i]) * 0x100000001b3ull;
    }
    if (wrong)
        bad(what);
    if (sum)
        atomic_fetch_add(&g_sum, h + n);
}

static void check(const void *p, size_t n, unsigned seed, const char *what)
{
    check_sum(p, n, seed, what, 1);
}

static void usable(void *p, size_t n, const char *what)
{
    if (malloc_usable_size(p) < n)
        bad(what);
}

static void aligned(const void *p, size_t a, const char *what)
{
    if ((uintptr_t)p % a)
        bad(what);
}

static void result(const char *mode)
{
    printf("%s errors=%d checksum=%016llx\n", mode, atomic_load(&g_err),
           (unsigned long long)atomic_load(&g_sum));
    fflush(stdout);
}

/* ---- io: output and exit status ---- */

NOIPA static void mode_io(void)
{
    printf("io: first line on stdout\n");
    fprintf(stderr, "io: first line on stderr\n");
    unsigned char *p = need(malloc(ha_size[HA_IO_MALLOC]), "malloc");
    unsigned char *q = need(calloc(ha_size[HA_IO_CALLOC] / 512, 512), "calloc");
    for (size_t i = 0; i < ha_size[HA_IO_CALLOC]; i++)
        if (q[i]) {
            bad("calloc not zeroed");
            break;
        }
    fill(p, ha_size[HA_IO_MALLOC], 3);
    fill(q, ha_size[HA_IO_CALLOC], 4);
    check(p, ha_size[HA_IO_MALLOC], 3, "io malloc");
    check(q, ha_size[HA_IO_CALLOC], 4, "io calloc");
    printf("io: %zu and %zu bytes\n", ha_size[HA_IO_MALLOC], ha_size[HA_IO_CALLOC]);
    fprintf(stderr, "io: second line on stderr, %d\n", 42);
    free(p);
    (void)q;                                /* stays live until exit (never freed) */
    fprintf(stderr, "io: last line on stderr\n");
    result("io");
    printf("io: last words on stdout without a newline");
}

/* ---- fd2: the app closes stderr and its next file gets descriptor 2 ---- */

NOIPA static void mode_fd2(void)
{
    fflush(stderr);
    close(2);
    int fd = open(g_dl_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd != 2) {
        printf("fd2: the file got descriptor %d\n", fd);
        atomic_fetch_add(&g_err, 1);
    }
    for (unsigned i = 0; i < 4; i++) {
        unsigned char *p = need(malloc(ha_size[HA_FD_MALLOC]), "malloc");
        fill(p, ha_size[HA_FD_MALLOC], 30 + i);
        check(p, ha_size[HA_FD_MALLOC], 30 + i, "fd2 block");
        dprintf(fd, "application data, record %u, checksum %016llx\n", i,
                (unsigned long long)atomic_load(&g_sum));
        free(p);
    }
    result("fd2");                          /* the file stays open until exit */
}

/* ---- static: a static array, as placement.txt's static lines name it ---- */

char ha_static_arr[6 << 20];              /* .bss, 6 MiB */

static int base_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(uintptr_t *)arg = info->dlpi_addr;  /* the first entry: the program */
    return 1;
}

/* Its offset from the program's load base and its size (what a static line needs),
 * and whether the kernel binds its first whole page to node 0 (numa_maps), to the
 * info file; its contents filled and checked. */
NOIPA static void mode_static(void)
{
    uintptr_t base = 0;
    dl_iterate_phdr(base_cb, &base);
    info("static_offset %llu", (unsigned long long)((uintptr_t)ha_static_arr - base));
    info("static_size %zu", sizeof ha_static_arr);
    fill(ha_static_arr, sizeof ha_static_arr, 40);
    check(ha_static_arr, sizeof ha_static_arr, 40, "static array");
    char want[32], line[512];
    snprintf(want, sizeof want, "%lx ", ((uintptr_t)ha_static_arr + 4095) & ~(uintptr_t)4095);
    int bound = 0;
    FILE *f = fopen("/proc/self/numa_maps", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, want, strlen(want)))
            bound = strstr(line, " bind:0 ") != NULL;
    if (f)
        fclose(f);
    info("static_bound %d", bound);
    result("static");
}

/* ---- family: every entry point ---- */

/* p, hidden from the compiler's use-after-realloc analysis (a failed realloc keeps p). */
static void *opaque(void *p)
{
    __asm__ volatile("" : "+r"(p));
    return p;
}

static volatile size_t g_huge = SIZE_MAX / 2, g_three = 3, g_max = SIZE_MAX;
/* (2^63 + 256) * 2 overflows to 512, a size in the window: a call from a listed site
 * must still fail */
static volatile size_t g_wrap = ((size_t)1 << 63) + 256, g_two = 2;

NOIPA static void mode_family(void)
{
    const size_t *S = ha_size;
    /* malloc, then realloc: in place, to b, back to a, to glibc, glibc to a */
    unsigned char *a = need(malloc(S[HA_F_MALLOC]), "malloc");
    usable(a, S[HA_F_MALLOC], "usable malloc");
    fill(a, S[HA_F_MALLOC], 1);
    unsigned char *a0 = a;
    a = need(realloc(a, S[HA_F_INPLACE]), "realloc in place");
    info("inplace_same %d", a == a0);
    check(a, S[HA_F_MALLOC], 1, "realloc in place");
    usable(a, S[HA_F_INPLACE], "usable in place");
    fill(a, S[HA_F_INPLACE], 2);
    a = need(realloc(a, S[HA_F_TO_B]), "realloc to b");
    check(a, S[HA_F_INPLACE], 2, "realloc to b");
    usable(a, S[HA_F_TO_B], "usable to b");
    fill(a, S[HA_F_TO_B], 3);
    a = need(realloc(a, S[HA_F_BACK_A]), "realloc back to a");
    check(a, S[HA_F_TO_B], 3, "realloc back to a");
    fill(a, S[HA_F_BACK_A], 4);
    a = need(realloc(a, S[HA_F_TO_LIBC]), "realloc to glibc");
    check(a, S[HA_F_BACK_A], 4, "realloc to glibc");
    usable(a, S[HA_F_TO_LIBC], "usable to glibc");
    fill(a, S[HA_F_TO_LIBC], 5);
    a = need(realloc(a, S[HA_F_LIBC_TO_A]), "realloc glibc to a");
    check(a, S[HA_F_TO_LIBC], 5, "realloc glibc to a");
    usable(a, S[HA_F_LIBC_TO_A], "usable glibc to a");
    fill(a, S[HA_F_LIBC_TO_A], 6);
    /* reallocarray: overflow keeps the block (elsewhere, and from the listed site
     * itself, whose product wraps into the window); then a move to b */
    errno = 0;
    void *r = reallocarray(opaque(a), g_huge, g_three);
    if (r || errno != ENOMEM)
        bad("reallocarray overflow");
    check(a, S[HA_F_LIBC_TO_A], 6, "reallocarray overflow kept the block");
    size_t ran_n[2] = { g_wrap, S[HA_F_RARRAY] / 512 }, ran_s[2] = { g_two, 512 };
    void *ra[2];
    int ra_err[2];
    for (volatile int i = 0; i < 2; i++) {  /* one call site, HA_F_RARRAY's: no peeling */
        errno = 0;
        ra[i] = reallocarray(opaque(a), ran_n[i], ran_s[i]);
        ra_err[i] = errno;
    }
    if (ra[0] || ra_err[0] != ENOMEM)
        bad("reallocarray overflow at a listed site");
    a = need(ra[1], "reallocarray");
    check(a, S[HA_F_LIBC_TO_A], 6, "reallocarray to b");
    usable(a, S[HA_F_RARRAY], "usable reallocarray");
    fill(a, S[HA_F_RARRAY], 7);
    check(a, S[HA_F_RARRAY], 7, "reallocarray to b refill");
    free(a);

    /* glibc block in the window */
    unsigned char *g = need(malloc(S[HA_F_LIBC_MALLOC]), "malloc glibc");
    usable(g, S[HA_F_LIBC_MALLOC], "usable glibc");
    fill(g, S[HA_F_LIBC_MALLOC], 8);
    check(g, S[HA_F_LIBC_MALLOC], 8, "glibc block");
    free(g);

    /* calloc: zeroed even where a dirty block was freed; overflow */
    unsigned char *d = need(malloc(S[HA_F_DIRTY]), "malloc dirty");
    memset(d, 0xab, S[HA_F_DIRTY]);
    free(d);
    size_t cn[2] = { g_wrap, S[HA_F_CALLOC] / 512 }, cs[2] = { g_two, 512 };
    unsigned char *ca[2];
    int ca_err[2];
    for (volatile int i = 0; i < 2; i++) {  /* one call site, HA_F_CALLOC's: no peeling */
        errno = 0;
        ca[i] = calloc(cn[i], cs[i]);
        ca_err[i] = errno;
    }
    if (ca[0] || ca_err[0] != ENOMEM)
        bad("calloc overflow at a listed site");
    unsigned char *c = need(ca[1], "calloc");
    usable(c, S[HA_F_CALLOC], "usable calloc");
    for (size_t i = 0; i < S[HA_F_CALLOC]; i++)
        if (c[i]) {
            bad("calloc not zeroed");
            break;
        }
    fill(c, S[HA_F_CALLOC], 9);
    errno = 0;
    if (calloc(g_huge, g_three) != NULL || errno != ENOMEM)
        bad("calloc overflow");
    errno = 0;
    if (calloc(g_max, g_max) != NULL || errno != ENOMEM)
        bad("calloc overflow max");

    /* realloc(p, 0) frees; cfree */
    unsigned char *z = need(malloc(S[HA_F_ZERO_SRC]), "malloc zero src");
    fill(z, S[HA_F_ZERO_SRC], 19);
    check(z, S[HA_F_ZERO_SRC], 19, "zero src");
    r = realloc(z, 0);
    if (r)
        free(r);
    unsigned char *cf = need(malloc(S[HA_F_CFREE]), "malloc cfree");
    fill(cf, S[HA_F_CFREE], 20);
    check(cf, S[HA_F_CFREE], 20, "cfree block");
    info("cfree_bound %d", cfree != NULL);
    if (cfree)
        cfree(cf);
    else
        free(cf);

    /* the aligned family */
    static const size_t bad_align[] = { 0, 3, 4, 24, 4097, 3u << 20 };
    for (size_t i = 0; i < sizeof bad_align / sizeof bad_align[0]; i++) {
        void *m = &g_sum;
        int rc = posix_memalign(&m, bad_align[i], 1000);
        if (rc != EINVAL || m != (void *)&g_sum)
            bad("posix_memalign bad alignment");
    }
    void *pm = NULL;
    if (posix_memalign(&pm, 65536, S[HA_F_PMEMALIGN]) != 0 || !pm)
        need(NULL, "posix_memalign");
    aligned(pm, 65536, "posix_memalign alignment");
    usable(pm, S[HA_F_PMEMALIGN], "usable posix_memalign");
    fill(pm, S[HA_F_PMEMALIGN], 10);
    void *al = need(aligned_alloc(512, S[HA_F_ALIGNED]), "aligned_alloc");
    aligned(al, 512, "aligned_alloc alignment");
    usable(al, S[HA_F_ALIGNED], "usable aligned_alloc");
    fill(al, S[HA_F_ALIGNED], 11);
    void *me = need(memalign((size_t)4 << 20, S[HA_F_MEMALIGN]), "memalign");
    aligned(me, (size_t)4 << 20, "memalign alignment");
    usable(me, S[HA_F_MEMALIGN], "usable memalign");
    fill(me, S[HA_F_MEMALIGN], 12);
    void *va = need(valloc(S[HA_F_VALLOC]), "valloc");
    aligned(va, 4096, "valloc alignment");
    usable(va, S[HA_F_VALLOC], "usable valloc");
    fill(va, S[HA_F_VALLOC], 13);
    void *pv = need(pvalloc(S[HA_F_PVALLOC]), "pvalloc");
    aligned(pv, 4096, "pvalloc alignment");
    usable(pv, (S[HA_F_PVALLOC] + 4095) & ~(size_t)4095, "usable pvalloc");
    fill(pv, S[HA_F_PVALLOC], 14);

    /* realloc(NULL), reallocarray(NULL) */
    void *rn = need(realloc(NULL, S[HA_F_REALLOC_NULL]), "realloc(NULL)");
    usable(rn, S[HA_F_REALLOC_NULL], "usable realloc(NULL)");
    fill(rn, S[HA_F_REALLOC_NULL], 15);
    void *ran = need(reallocarray(NULL, S[HA_F_RARRAY_NULL] / 512, 512), "reallocarray(NULL)");
    usable(ran, S[HA_F_RARRAY_NULL], "usable reallocarray(NULL)");
    fill(ran, S[HA_F_RARRAY_NULL], 16);

    /* malloc(0): unique, non-NULL */
    void *z0[HA_MALLOC0_N];
    for (volatile int i = 0; i < HA_MALLOC0_N; i++)     /* one call site, not unrolled */
        z0[i] = need(malloc(0), "malloc(0)");
    for (int i = 0; i < HA_MALLOC0_N; i++)
        for (int j = 0; j < i; j++)
            if (z0[i] == z0[j])
                bad("malloc(0) pointers not unique");

    unsigned char *bb = need(malloc(S[HA_F_B_MALLOC]), "malloc b");
    usable(bb, S[HA_F_B_MALLOC], "usable malloc b");
    fill(bb, S[HA_F_B_MALLOC], 17);
    unsigned char *small = need(malloc(100), "malloc small");
    usable(small, 100, "usable small");
    fill(small, 100, 18);

    check(c, S[HA_F_CALLOC], 9, "calloc");
    check(pm, S[HA_F_PMEMALIGN], 10, "posix_memalign");
    check(al, S[HA_F_ALIGNED], 11, "aligned_alloc");
    check(me, S[HA_F_MEMALIGN], 12, "memalign");
    check(va, S[HA_F_VALLOC], 13, "valloc");
    check(pv, S[HA_F_PVALLOC], 14, "pvalloc");
    check(rn, S[HA_F_REALLOC_NULL], 15, "realloc(NULL)");
    check(ran, S[HA_F_RARRAY_NULL], 16, "reallocarray(NULL)");
    check(bb, S[HA_F_B_MALLOC], 17, "malloc b");
    check(small, 100, 18, "malloc small");
    free(c);
    free(pm);
    free(al);
    free(me);
    free(va);
    free(pv);
    free(rn);
    free(ran);
    for (int i = 0; i < HA_MALLOC0_N; i++)
        free(z0[i]);
    free(bb);
    free(small);
    result("family");
}

/* ---- cap: more than the tier holds ---- */

NOIPA static void mode_cap(void)
{
    void *b[HA_CAP_N];
    size_t n = ha_size[HA_CAP];
    for (unsigned round = 0; round < 2; round++) {
        for (unsigned i = 0; i < HA_CAP_N; i++) {
            b[i] = need(malloc(n), "malloc cap");
            fill(b[i], n, round * 100 + i);
        }
        for (unsigned i = 0; i < HA_CAP_N; i++) {
            check(b[i], n, round * 100 + i, "cap block");
            free(b[i]);
        }
    }
    result("cap");
}

/* ---- threads: placed and unplaced blocks freed by another thread ---- */

struct blk {
    void *p;
    size_t n;
    unsigned seed;
};

static struct blk g_slots[HA_T_THREADS][HA_T_SLOTS];
static pthread_barrier_t g_bar;

static void *thread_main(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    const size_t *S = ha_size;
    for (unsigned r = 0; r < HA_T_ROUNDS; r++) {
        for (unsigned j = 0; j < HA_T_SLOTS; j++) {
            struct blk *b = &g_slots[t][j];
            b->seed = t * 1000 + r * 10 + j;
            switch (j % 4) {
            case 0:
                b->n = S[HA_T_MALLOC];
                b->p = need(malloc(b->n), "thread malloc");
                break;
            case 1:
                b->n = S[HA_T_CALLOC];
                b->p = need(calloc(b->n / 16, 16), "thread calloc");
                for (size_t i = 0; i < b->n; i += 512)
                    if (((unsigned char *)b->p)[i])
                        bad("thread calloc not zeroed");
                break;
            case 2:
                b->n = S[HA_T_UNPLACED];
                b->p = need(malloc(b->n), "thread unplaced malloc");
                break;
            default: {
                unsigned char *s = need(malloc(S[HA_T_REALLOC_SRC]), "thread realloc src");
                fill(s, S[HA_T_REALLOC_SRC], b->seed);
                b->n = S[HA_T_REALLOC];
                b->p = need(realloc(s, b->n), "thread realloc");
                check(b->p, S[HA_T_REALLOC_SRC], b->seed, "thread realloc moved");
                break;
            }
            }
            usable(b->p, b->n, "thread usable");
            fill(b->p, b->n, b->seed);
        }
        pthread_barrier_wait(&g_bar);
        unsigned o = (t + 1) % HA_T_THREADS;       /* another thread's blocks */
        for (unsigned j = 0; j < HA_T_SLOTS; j++) {
            struct blk *b = &g_slots[o][j];
            check(b->p, b->n, b->seed, "thread block freed by another thread");
            free(b->p);
            b->p = NULL;
        }
        pthread_barrier_wait(&g_bar);
    }
    return NULL;
}

NOIPA static void mode_threads(void)
{
    pthread_t th[HA_T_THREADS];
    pthread_barrier_init(&g_bar, NULL, HA_T_THREADS);
    for (unsigned t = 0; t < HA_T_THREADS; t++)
        if (pthread_create(&th[t], NULL, thread_main, (void *)(uintptr_t)t) != 0)
            need(NULL, "pthread_create");
    for (unsigned t = 0; t < HA_T_THREADS; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&g_bar);
    result("threads");
}

/* ---- fork: children free inherited blocks and place their own ---- */

static _Atomic int g_stop;
static _Atomic unsigned long g_bg_allocs;

static void *bg_main(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    size_t n = ha_size[HA_K_THREAD];
    while (!atomic_load(&g_stop)) {
        unsigned char *p = need(malloc(n), "bg malloc");
        fill(p, 4096, seed);
        fill(p + n - 4096, 4096, seed + 1);
        check_sum(p, 4096, seed, "bg block", 0);
        check_sum(p + n - 4096, 4096, seed + 1, "bg block tail", 0);
        free(p);
        atomic_fetch_add(&g_bg_allocs, 1);
        sched_yield();
    }
    return NULL;
}

static int stats_exist(void)
{
    const char *sp = getenv("HMTUNE_STATS");
    return sp && *sp && access(sp, F_OK) == 0;
}

static int fork_child(void **parent)
{
    int e = 0;
    size_t np = ha_size[HA_K_PARENT], nc = ha_size[HA_K_CHILD];
    for (unsigned i = 0; i < HA_K_NPARENT; i++) {
        const unsigned char *b = parent[i];
        for (size_t k = 0; k < np; k++)
            if (b[k] != pat(k, 500 + i)) {
                e++;
                break;
            }
        free(parent[i]);
    }
    /* a library loaded in the child: its frames make the module map refresh */
    void *h = dlopen(g_dl_path, RTLD_NOW | RTLD_LOCAL);
    void *sa = h ? dlsym(h, "hmdl_alloc") : NULL;
    if (!sa)
        return e + 1;
    ha_dl_alloc_fn fa;
    memcpy(&fa, &sa, sizeof sa);
    unsigned char *d = fa(nc);
    if (!d)
        return e + 1;
    fill(d, nc, 650);
    for (size_t k = 0; k < nc; k++)
        if (d[k] != pat(k, 650)) {
            e++;
            break;
        }
    free(d);
    dlclose(h);
    for (unsigned i = 0; i < HA_K_NCHILD; i++) {
        unsigned char *p = malloc(nc);
        if (!p)
            return e + 1;
        fill(p, nc, 600 + i);
        for (size_t k = 0; k < nc; k++)
            if (p[k] != pat(k, 600 + i)) {
                e++;
                break;
            }
        void *q = realloc(p, nc / 2);       /* shrinks: stays in place or moves */
        if (!q)
            return e + 1;
        free(q);
    }
    return e + stats_exist();
}

NOIPA static void mode_fork(void)
{
    void *parent[HA_K_NPARENT];
    size_t np = ha_size[HA_K_PARENT];
    for (unsigned i = 0; i < HA_K_NPARENT; i++) {
        parent[i] = need(malloc(np), "parent malloc");
        fill(parent[i], np, 500 + i);
    }
    pthread_t th[HA_K_BGTHREADS];
    for (unsigned t = 0; t < HA_K_BGTHREADS; t++)
        if (pthread_create(&th[t], NULL, bg_main, (void *)(uintptr_t)(700 + 10 * t)) != 0)
            need(NULL, "pthread_create");
    for (unsigned c = 0; c < HA_K_CHILDREN; c++) {
        while (atomic_load(&g_bg_allocs) < 5 * (c + 1))
            sched_yield();
        pid_t pid = fork_flushed();
        if (pid == 0)
            exit(fork_child(parent) ? 3 : 0);     /* exit: destructors run */
        int st = 0;
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad("fork child failed");
        if (stats_exist())
            bad("a fork child wrote the statistics");
    }
    atomic_store(&g_stop, 1);
    for (unsigned t = 0; t < HA_K_BGTHREADS; t++)
        pthread_join(th[t], NULL);
    for (unsigned i = 0; i < HA_K_NPARENT; i++) {
        check(parent[i], np, 500 + i, "parent block");
        free(parent[i]);
    }
    info("pid %d", (int)getpid());
    info("bg_allocs %lu", atomic_load(&g_bg_allocs));
    result("fork");
}

/* ---- dl: sites in a dlopen'ed library, dlclose, dlopen again ---- */

/* Rounds: the library, a copy of it under another path (likely mapped where the
 * library was: the same return addresses now belong to a module the placement does
 * not name), the library again. */
NOIPA static void mode_dl(void)
{
    enum { ROUNDS = 3, MAXB = ROUNDS * HA_D_N };
    void *b[MAXB];
    size_t nb = 0, n = ha_size[HA_D_LIB], nr = ha_size[HA_D_LIB_REALLOC];
    size_t sz[MAXB];
    for (unsigned round = 0; round < ROUNDS; round++) {
        const char *path = round == 1 ? g_dl_copy : g_dl_path;
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "hmalloc_app: dlopen %s: %s\n", path, dlerror());
            exit(97);
        }
        ha_dl_alloc_fn fa;
        ha_dl_realloc_fn fr;
        void *sa = dlsym(h, "hmdl_alloc"), *sr = dlsym(h, "hmdl_realloc");
        if (!sa || !sr)
            need(NULL, "dlsym");
        memcpy(&fa, &sa, sizeof sa);
        memcpy(&fr, &sr, sizeof sr);
        size_t first = nb;
        for (unsigned i = 0; i < HA_D_N; i++) {
            b[nb] = need(fa(n), "hmdl_alloc");
            sz[nb] = n;
            fill(b[nb], n, 800 + (unsigned)nb);
            nb++;
        }
        b[first] = need(fr(b[first], nr), "hmdl_realloc");
        check(b[first], n, 800 + (unsigned)first, "hmdl_realloc moved");
        sz[first] = nr;
        fill(b[first], nr, 800 + (unsigned)first);
        if (dlclose(h) != 0)
            bad("dlclose");
    }
    for (size_t i = 0; i < nb; i++) {
        usable(b[i], sz[i], "usable dl block");
        check(b[i], sz[i], 800 + (unsigned)i, "dl block");
        free(b[i]);
    }
    result("dl");
}

/* ---- boot: allocations from a constructor and from threads it starts ---- */

static void *g_ctor_blocks[HA_B_NCTOR];
static pthread_t g_boot_th[HA_B_THREADS];
static int g_boot_started;

static void *boot_thread(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    size_t n = ha_size[HA_B_THREAD];
    for (unsigned k = 0; k < HA_B_ITERS; k++) {
        unsigned char *p = need(malloc(n), "boot thread malloc");
        fill(p, 256, seed + k);
        check(p, 256, seed + k, "boot thread block");
        void *s = need(calloc(3, 40), "boot thread small calloc");
        free(s);
        free(p);
    }
    return NULL;
}

__attribute__((constructor)) static void app_ctor(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "boot") != 0)
        return;
    for (unsigned i = 0; i < HA_B_NCTOR; i++) {
        g_ctor_blocks[i] = need(malloc(ha_size[HA_B_CTOR]), "constructor malloc");
        fill(g_ctor_blocks[i], ha_size[HA_B_CTOR], 900 + i);
    }
    for (unsigned t = 0; t < HA_B_THREADS; t++)
        if (pthread_create(&g_boot_th[t], NULL, boot_thread, (void *)(uintptr_t)(950 + 100 * t)) != 0)
            need(NULL, "pthread_create in a constructor");
    g_boot_started = 1;
}

NOIPA static void mode_boot(void)
{
    if (!g_boot_started)
        need(NULL, "the constructor did not run");
    for (unsigned t = 0; t < HA_B_THREADS; t++)
        pthread_join(g_boot_th[t], NULL);
    for (unsigned i = 0; i < HA_B_NCTOR; i++) {
        check(g_ctor_blocks[i], ha_size[HA_B_CTOR], 900 + i, "constructor block");
        free(g_ctor_blocks[i]);
    }
    void **e = hmearly_blocks();
    if (!e)
        need(NULL, "libhmalloc_early's constructor did not run");
    for (int k = 0; k < HA_E_N; k++) {
        const unsigned char *b = e[k];
        for (size_t i = 0; i < ha_size[HA_E_CTOR]; i++)
            if (b[i] != (unsigned char)((i * 13 + (size_t)k) & 0xff)) {
                bad("libhmalloc_early block");
                break;
            }
        atomic_fetch_add(&g_sum, ha_size[HA_E_CTOR] * (unsigned)(k + 1));
        usable(e[k], ha_size[HA_E_CTOR], "usable early block");
        free(e[k]);
    }
    result("boot");
}

/* ---- split: objects of which only [HA_S_LO, HA_S_HI) is placed ---- */

/* Bytes of [p, p + len) in 2 MiB pages (hugetlb: KernelPageSize; THP:
 * AnonHugePages), inside [p + lo, p + hi) and outside it, to HMT_INFO as
 * NAME_huge_in, NAME_huge_out, NAME_thp_in, NAME_thp_out. */
static void smaps_info(const char *name, const char *p, size_t len, size_t lo, size_t hi)
{
    struct split_view v;
    smaps_view(p, len, lo, hi, &v);
    info("%s_huge_in %llu", name, (unsigned long long)v.huge_in);
    info("%s_huge_out %llu", name, (unsigned long long)v.huge_out);
    info("%s_thp_in %llu", name, (unsigned long long)v.thp_in);
    info("%s_thp_out %llu", name, (unsigned long long)v.thp_out);
}

static unsigned char *g_exit_obj;

/* Runs at exit, after main: the object is still valid, written and read again; the
 * line goes out with libc's final flush, after every destructor. */
static void split_atexit(void)
{
    size_t n = ha_size[HA_S_EXIT];
    check(g_exit_obj, n, 930, "split object at exit");
    fill(g_exit_obj, n, 931);
    check(g_exit_obj, n, 931, "split object written at exit");
    printf("split atexit errors=%d checksum=%016llx\n", atomic_load(&g_err),
           (unsigned long long)atomic_load(&g_sum));
}

NOIPA static void mode_split(void)
{
    size_t n = ha_size[HA_S_CALLOC], m = ha_size[HA_S_REALLOC];
    unsigned char *p = need(calloc(1, n), "split calloc");
    size_t nz = 0;
    for (size_t i = 0; i < n; i++)
        nz += p[i] != 0;
    if (nz)
        bad("split calloc not zero");
    usable(p, n, "split usable size");
    fill(p, n, 910);
    smaps_info("obj", (char *)p, n, HA_S_LO, HA_S_HI);
    info("obj_aligned %d", (int)((uintptr_t)p % (2 * HA_MiB) == 0));
    pid_t pid = fork_flushed();
    if (pid == 0) {                 /* the child reads and writes the object */
        check_sum(p, n, 910, "split object in the child", 0);
        fill(p, n, 911);
        check_sum(p, n, 911, "split object written in the child", 0);
        _exit(atomic_load(&g_err) ? 3 : 0);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        bad("split fork child failed");
    check(p, n, 910, "split object after the child");
    unsigned char *q = need(realloc(p, m), "split realloc");
    check(q, n, 910, "split object after realloc");
    fill(q, m, 920);
    smaps_info("grown", (char *)q, m, HA_S_LO, HA_S_HI);
    check(q, m, 920, "split object grown");
    free(q);
    g_exit_obj = need(malloc(ha_size[HA_S_EXIT]), "split exit object");
    fill(g_exit_obj, ha_size[HA_S_EXIT], 930);
    atexit(split_atexit);
    result("split");
}

/* ---- main ---- */

typedef void (*mode_fn)(void);

NOIPA static void deep(int n, mode_fn fn)
{
    if (n > 0)
        deep(n - 1, fn);
    else
        fn();
    __asm__ volatile("" ::: "memory");      /* no tail calls: every frame stays */
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        mode_fn fn;
        int code;
    } modes[] = {
        { "io", mode_io, 7 }, { "family", mode_family, 0 }, { "cap", mode_cap, 0 },
        { "threads", mode_threads, 0 }, { "fork", mode_fork, 0 }, { "dl", mode_dl, 0 },
        { "boot", mode_boot, 0 }, { "fd2", mode_fd2, 0 }, { "static", mode_static, 0 },
        { "split", mode_split, 0 },
    };
    if (argc < 2) {
        fprintf(stderr, "usage: hmalloc_app io|family|cap|threads|fork LIB|dl LIB COPY|boot|"
                        "fd2 FILE|static|split\n");
        return 2;
    }
    const char *ip = getenv("HMT_INFO");
    if (ip && *ip)
        g_info = fopen(ip, "w");
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (strcmp(argv[1], modes[i].name) != 0)
            continue;
        if (!strcmp(argv[1], "dl") || !strcmp(argv[1], "fork") || !strcmp(argv[1], "fd2")) {
            if (argc < 3 || (!strcmp(argv[1], "dl") && argc < 4))
                return 2;
            g_dl_path = argv[2];
            g_dl_copy = argv[3];
        }
        deep(6, modes[i].fn);
        if (g_info)
            fclose(g_info);
        return atomic_load(&g_err) ? 1 : modes[i].code;
    }
    fprintf(stderr, "hmalloc_app: unknown mode %s\n", argv[1]);
    return 2;
}
