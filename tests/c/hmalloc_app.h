/* hmalloc_app.h — the call sites of hmalloc_app (tests/c/hmalloc_app.c) and the one
 * request size each of them uses, shared with the driver (tests/c/test_hmalloc.c).
 * The driver learns a site's call-site chain from libsite_probe.so by that size, so
 * no two sites may use the same size (size 0 is only HA_F_MALLOC0's; the driver
 * also requires the innermost frame to be in the expected module). */
#ifndef HMALLOC_APP_H
#define HMALLOC_APP_H

#include <stddef.h>

enum ha_site {
    /* mode family: every entry point, tier a = the backend under test, b = another */
    HA_F_MALLOC,        /* a: malloc */
    HA_F_INPLACE,       /* a: realloc growing the HA_F_MALLOC block within its usable size */
    HA_F_TO_B,          /* b: realloc moving it to tier b */
    HA_F_BACK_A,        /* a: realloc moving it back */
    HA_F_TO_LIBC,       /* unlisted: realloc moving it to glibc */
    HA_F_LIBC_TO_A,     /* a: realloc moving a glibc block to tier a */
    HA_F_RARRAY,        /* b: reallocarray moving it to tier b */
    HA_F_LIBC_MALLOC,   /* unlisted, in the window */
    HA_F_DIRTY,         /* a: malloc, dirtied, freed (memkind reuses it for the calloc) */
    HA_F_CALLOC,        /* a: calloc */
    HA_F_ZERO_SRC,      /* a: malloc, then realloc(p, 0) */
    HA_F_CFREE,         /* a: malloc, then cfree */
    HA_F_PMEMALIGN,     /* a: posix_memalign 64 KiB */
    HA_F_ALIGNED,       /* a: aligned_alloc 512 */
    HA_F_MEMALIGN,      /* a: memalign 4 MiB */
    HA_F_VALLOC,        /* a: valloc */
    HA_F_PVALLOC,       /* a: pvalloc */
    HA_F_REALLOC_NULL,  /* a: realloc(NULL, n) */
    HA_F_RARRAY_NULL,   /* a: reallocarray(NULL, n, 512) */
    HA_F_MALLOC0,       /* a: malloc(0), three times */
    HA_F_B_MALLOC,      /* b: malloc */
    /* mode io */
    HA_IO_MALLOC, HA_IO_CALLOC,
    /* mode fd2: stderr closed, its descriptor reused for a file of the app's */
    HA_FD_MALLOC,
    /* mode cap: HA_CAP_N live blocks from one site, twice */
    HA_CAP,
    /* mode threads */
    HA_T_MALLOC, HA_T_CALLOC, HA_T_UNPLACED, HA_T_REALLOC_SRC, HA_T_REALLOC,
    /* mode fork */
    HA_K_PARENT, HA_K_THREAD, HA_K_CHILD,
    /* mode dl: sites in libhmalloc_dl.so */
    HA_D_LIB, HA_D_LIB_REALLOC,
    /* mode boot: the app's constructor, threads it starts, and the constructor of
     * libhmalloc_early.so, which runs before any preloaded library's */
    HA_B_CTOR, HA_B_THREAD, HA_E_CTOR,
    /* mode split (placement v2 split lines): calloc'ed object, the realloc growing
     * it, and an object still live at exit that an atexit handler writes */
    HA_S_CALLOC, HA_S_REALLOC, HA_S_EXIT,
    HA_NSITES
};

#define HA_MiB ((size_t)1 << 20)
/* Family sizes: just over 1 MiB (hugetlb refuses less), multiples of 512 (ASan's
 * aligned_alloc wants size % align == 0), all under 1.25 MiB (one memkind size
 * class, so HA_F_INPLACE fits in the HA_F_MALLOC block on every backend). */
#define HA_FSIZE(i) (HA_MiB + (size_t)(i + 1) * 8192 + 512)

static const size_t ha_size[HA_NSITES] = {
    [HA_F_MALLOC] = HA_FSIZE(HA_F_MALLOC),
    [HA_F_INPLACE] = HA_FSIZE(HA_F_MALLOC) + 1000,
    [HA_F_TO_B] = HA_FSIZE(HA_F_TO_B),
    [HA_F_BACK_A] = HA_FSIZE(HA_F_BACK_A),
    [HA_F_TO_LIBC] = HA_FSIZE(HA_F_TO_LIBC),
    [HA_F_LIBC_TO_A] = HA_FSIZE(HA_F_LIBC_TO_A),
    [HA_F_RARRAY] = HA_FSIZE(HA_F_RARRAY),
    [HA_F_LIBC_MALLOC] = HA_FSIZE(HA_F_LIBC_MALLOC),
    [HA_F_DIRTY] = HA_FSIZE(HA_F_DIRTY),
    [HA_F_CALLOC] = HA_FSIZE(HA_F_CALLOC),
    [HA_F_ZERO_SRC] = HA_FSIZE(HA_F_ZERO_SRC),
    [HA_F_CFREE] = HA_FSIZE(HA_F_CFREE),
    [HA_F_PMEMALIGN] = HA_FSIZE(HA_F_PMEMALIGN),
    [HA_F_ALIGNED] = HA_FSIZE(HA_F_ALIGNED),
    [HA_F_MEMALIGN] = HA_FSIZE(HA_F_MEMALIGN),
    [HA_F_VALLOC] = HA_FSIZE(HA_F_VALLOC),
    [HA_F_PVALLOC] = HA_FSIZE(HA_F_PVALLOC),
    [HA_F_REALLOC_NULL] = HA_FSIZE(HA_F_REALLOC_NULL),
    [HA_F_RARRAY_NULL] = HA_FSIZE(HA_F_RARRAY_NULL),
    [HA_F_MALLOC0] = 0,
    [HA_F_B_MALLOC] = HA_FSIZE(HA_F_B_MALLOC),
    [HA_IO_MALLOC] = 300000,
    [HA_IO_CALLOC] = 300544,                /* 587 * 512 */
    [HA_FD_MALLOC] = 310000,
    [HA_CAP] = HA_FSIZE(30),
    [HA_T_MALLOC] = 40000,
    [HA_T_CALLOC] = 70000,
    [HA_T_UNPLACED] = 50000,
    [HA_T_REALLOC_SRC] = 30000,
    [HA_T_REALLOC] = 90000,
    [HA_K_PARENT] = 200000,
    [HA_K_THREAD] = 150000,
    [HA_K_CHILD] = 250000,
    [HA_D_LIB] = 120000,
    [HA_D_LIB_REALLOC] = 160000,
    [HA_B_CTOR] = 110000,
    [HA_B_THREAD] = 130000,
    [HA_E_CTOR] = 140000,
    [HA_S_CALLOC] = 16 * HA_MiB,
    [HA_S_REALLOC] = 24 * HA_MiB + 4096,
    [HA_S_EXIT] = 12 * HA_MiB,
};

/* Mode split: the range the driver places of each object, whose page sizes the app
 * reports (HMT_INFO) from /proc/self/smaps. */
#define HA_S_LO (2 * HA_MiB)
#define HA_S_HI (6 * HA_MiB)

#define HA_MALLOC0_N   3
#define HA_CAP_N       10       /* live blocks of HA_CAP per round, two rounds */
#define HA_T_THREADS   16
#define HA_T_ROUNDS    3
#define HA_T_SLOTS     8        /* blocks per thread per round (see thread_round) */
#define HA_K_NPARENT   4
#define HA_K_NCHILD    5
#define HA_K_CHILDREN  3
#define HA_K_BGTHREADS 2
#define HA_D_N         3        /* HA_D_LIB blocks per dlopen, two dlopens */
#define HA_B_NCTOR     3
#define HA_B_THREADS   4
#define HA_B_ITERS     50
#define HA_E_N         2        /* HA_E_CTOR blocks */

/* libhmalloc_dl.so (tests/c/hmalloc_dl.c) */
typedef void *(*ha_dl_alloc_fn)(size_t);
typedef void *(*ha_dl_realloc_fn)(void *, size_t);

/* libhmalloc_early.so (tests/c/hmalloc_early.c), linked into hmalloc_app: the
 * HA_E_N blocks its constructor allocated in mode boot (filled with bytes
 * (i * 13 + k) & 0xff, k the block), NULL in the other modes. */
void **hmearly_blocks(void);

#endif
