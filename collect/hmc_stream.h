/* hmc_stream.h — the raw per-process stream libhmtrace.so writes during the run
 * and hmtune-finalize reads afterwards (docs/formats.md, "raw stream").
 *
 * A file is a sequence of chunks, each written with one write(2) on an O_APPEND
 * descriptor: a 32-byte chunk header, then whole records. Times in thread
 * records are ticks (TSC, or ns when ticks_are_ns); the (ticks, ns) pairs in the
 * chunk headers and the process records map them to CLOCK_MONOTONIC ns. Records are 8-byte
 * aligned, little-endian, and start with struct hmr_hdr whose len8 gives the
 * record length in 8-byte words, so a reader can skip types it does not know. */
#ifndef HMC_STREAM_H
#define HMC_STREAM_H

#include <stdint.h>

#define HMR_MAGIC   0x31524d48u   /* "HMR1" */
#define HMR_VERSION 1u

struct hmr_chunk {
    uint32_t magic;
    uint32_t stream;   /* per-process stream id: one per thread lifetime; 0 = process */
    uint32_t nbytes;   /* bytes of records after this header */
    uint32_t seq;      /* per-stream chunk number, from 0 */
    uint64_t ticks;    /* clock pair taken when the chunk was written: record */
    uint64_t ns;       /*   times are ticks, converted with these pairs */
};

enum hmr_type {
    HMR_PROC   = 1,  /* first record of the file (stream 0) */
    HMR_MODULE = 2,  /* a loaded module: aux = module id */
    HMR_THREAD = 3,  /* stream start: the OS thread behind the stream */
    HMR_STACK  = 4,  /* aux = per-stream stack id, kind = depth, then packed frames */
    HMR_CALL   = 5,  /* an allocating call, kind = enum hmr_kind, aux = stack id */
    HMR_FREE   = 6,  /* free of a pointer that may have been traced */
    HMR_TEND   = 7,  /* stream end with the thread's counters */
    HMR_PEND   = 8,  /* process end: kind = enum hmr_end */
};

enum hmr_kind {  /* values of 41000000; 40000040 gets the nearest Extrae kind */
    HMK_MALLOC = 1, HMK_FREE = 2, HMK_REALLOC = 3, HMK_CALLOC = 4, HMK_POSIX_MEMALIGN = 5,
    HMK_ALIGNED_ALLOC = 6, HMK_MEMALIGN = 7, HMK_VALLOC = 8, HMK_PVALLOC = 9,
    HMK_REALLOCARRAY = 10,
};
#define HMK_MAX 10

enum hmr_end { HME_EXIT = 0, HME__EXIT = 1, HME_EXEC = 2, HME_SIGNAL = 3 };

struct hmr_hdr {
    uint8_t  type;
    uint8_t  kind;
    uint16_t len8;
    uint32_t aux;
};

struct hmr_proc {
    struct hmr_hdr h;
    uint32_t version, pid, ppid;
    int32_t  rank, nranks;
    uint32_t depth;
    uint64_t min_size;
    uint64_t t_start;      /* CLOCK_MONOTONIC ns */
    uint64_t t_real;       /* CLOCK_REALTIME ns at t_start */
    uint64_t tk_start;     /* ticks at t_start */
    uint16_t host_len, exe_len, cmd_len, pad;
    uint32_t ticks_are_ns;
    /* then host, exe, cmdline (NUL-separated args), padded to 8 bytes */
};

struct hmr_module {
    struct hmr_hdr h;
    uint64_t base, lo, hi;
    uint32_t path_len, pad;
    /* then path, padded to 8 bytes */
};

struct hmr_thread {
    struct hmr_hdr h;
    uint64_t t;
    uint32_t tid, pad;
};

struct hmr_stack {
    struct hmr_hdr h;
    /* then kind (depth) packed frames: module id << 48 | offset */
};

struct hmr_call {
    struct hmr_hdr h;
    uint64_t t0, t1;       /* call entry and exit, ticks */
    uint64_t size;         /* requested bytes (calloc/reallocarray: nmemb*size) */
    uint64_t align;        /* alignment for the aligned kinds, else 0 */
    uint64_t ptr_in;       /* realloc/reallocarray input */
    uint64_t ptr_out;      /* result (0 on failure) */
};

struct hmr_free {
    struct hmr_hdr h;
    uint64_t t0, t1, ptr;
};

struct hmr_tend {
    struct hmr_hdr h;
    uint64_t t;
    uint64_t tracer_tk;    /* time spent in the tracer by this thread, ticks */
    uint64_t n_calls;      /* interposed calls seen (all sizes) */
    uint64_t n_traced;     /* calls recorded */
    uint64_t n_lost;       /* records dropped (write failures) */
};

struct hmr_pend {
    struct hmr_hdr h;
    uint64_t t;            /* ns */
    uint64_t tk;           /* ticks at t */
    uint32_t signo, pad;
};

#define HMR_LEN8(bytes) ((uint16_t)(((bytes) + 7) / 8))

#endif
