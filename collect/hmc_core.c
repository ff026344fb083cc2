/* hmc_core.c — see hmc_core.h.
 *
 * Each thread owns a buffer of whole records (64 KiB) and a table of the call
 * stacks it has already written (so a stack costs one small id per call). A full
 * buffer goes to the process's stream file with one write(2) on an O_APPEND
 * descriptor; there is no lock on the hot path. At exit, on a crash signal and
 * before exec, every thread's committed records are written; a reader keeps the
 * longest copy of each (stream, seq) chunk, so a buffer written twice is harmless.
 *
 * Memory per thread is fixed: the record buffer plus (2 + depth) * 8 bytes per
 * stack slot (1024 slots: 80 KiB at depth 8), whatever the run length, plus two
 * buffers its signal handlers write: sampled accesses and sampled page faults, each
 * its own stream so that each is in time order by itself (the faults come out of the
 * kernel's ring a tick late, between access samples taken at the tick). */
#include "hmc_core.h"
#include "hm_env.h"
#include "hm_modmap.h"
#include "hm_unwind.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__thread int hmc_busy __attribute__((tls_model("initial-exec")));
static __thread struct hmc_thread *t_self __attribute__((tls_model("initial-exec")));

/* A buffer of records written by the thread's signal handlers. */
struct hbuf {
    uint32_t seq, pos;
    _Atomic uint32_t committed;
    _Atomic int claim;                /* held while a record is added or the buffer written */
    struct hmr_chunk chunk;           /* written just before rec[] */
    unsigned char rec[HMC_SBUF_BYTES];
};
enum { HB_SAMPLES = 0, HB_FAULTS = 1, HB_N = 2 };
static const uint32_t hb_stream_bits[HB_N] = { HMR_SAMPLE_STREAM,
                                               HMR_SAMPLE_STREAM | HMR_FAULT_STREAM };

struct hmc_thread {
    struct hmc_thread *next;          /* registry link, never removed */
    _Atomic int in_use;               /* owned by a live thread */
    _Atomic int claim;                /* held while the buffer is being written */
    uint32_t stream, seq, tid;
    uint32_t pos;                     /* bytes of records in rec[] */
    _Atomic uint32_t committed;       /* bytes of complete records */
    uint32_t next_stack, nstacks, stack_gen;
    uint64_t tracer_ns /* ticks */, n_calls, n_traced, n_lost;
    uint64_t *stacks;                 /* HMC_STACK_SLOTS * (2 + depth) words */
    size_t map_bytes;
    struct hmr_chunk chunk;           /* written just before rec[] */
    unsigned char rec[HMC_BUF_BYTES];
    /* Samples and page faults, written only by this thread's signal handlers (their
     * own streams, so a handler never touches rec[]). */
    struct hbuf hb[HB_N];
    void *sampler;                    /* hmc_sampler.c's per-thread state */
};

static struct hmc_config g_cfg;
static int g_fd = -1;
static _Atomic int g_active;
static _Atomic int g_exiting;
static _Atomic int g_broken;          /* a write failed: stop writing, count losses */
static _Atomic uint32_t g_next_stream = 1;
static _Atomic uint32_t g_proc_seq;
static _Atomic(struct hmc_thread *) g_threads;
static pthread_key_t g_key;
static void (*g_exit_hook)(struct hmc_thread *);
static void (*g_finish_hook)(void);

void hmc_set_thread_exit_hook(void (*fn)(struct hmc_thread *)) { g_exit_hook = fn; }
void hmc_set_finish_hook(void (*fn)(void)) { g_finish_hook = fn; }
static void (*g_thread_finish_hook)(struct hmc_thread *);
void hmc_set_thread_finish_hook(void (*fn)(struct hmc_thread *)) { g_thread_finish_hook = fn; }
static char g_path[PATH_MAX];
static char g_host[256];

static uint32_t gettid_(void) { return (uint32_t)syscall(SYS_gettid); }

const char *hmc_stream_path(void) { return g_path; }
int hmc_core_active(void) { return atomic_load_explicit(&g_active, memory_order_relaxed); }

static void broken(int err)
{
    int was = atomic_exchange(&g_broken, 1);
    if (!was)
        hm_log("hmtune: ", "cannot write the trace, recording stops (the application continues): ",
               strerror(err));
}

/* A chunk of the process stream (stream 0): header records written at once. */
static void write_proc_chunk(const void *rec, uint32_t bytes)
{
    if (g_fd < 0 || atomic_load(&g_broken))
        return;
    unsigned char buf[sizeof(struct hmr_chunk) + 8192];
    if (bytes > sizeof(buf) - sizeof(struct hmr_chunk))
        return;
    struct hmr_chunk c = { HMR_MAGIC, 0, bytes, atomic_fetch_add(&g_proc_seq, 1), hm_ticks(), hm_now_ns() };
    memcpy(buf, &c, sizeof(c));
    memcpy(buf + sizeof(c), rec, bytes);
    int err = hm_write_all(g_fd, buf, sizeof(c) + bytes);
    if (err)
        broken(err);
}

void hmc_write_process_record(const void *rec, uint32_t bytes) { write_proc_chunk(rec, bytes); }

static void emit_module(const struct hm_module *m)
{
    unsigned char buf[8192];
    struct hmr_module *r = (struct hmr_module *)buf;
    uint32_t plen = m->path_len;
    if (sizeof(*r) + plen + 1 > sizeof(buf))
        plen = (uint32_t)(sizeof(buf) - sizeof(*r) - 8);
    uint32_t bytes = (uint32_t)((sizeof(*r) + plen + 8) & ~7u);
    memset(buf, 0, bytes);
    r->h.type = HMR_MODULE;
    r->h.len8 = HMR_LEN8(bytes);
    r->h.aux = m->id;
    r->base = m->base;
    r->lo = m->lo;
    r->hi = m->hi;
    r->path_len = plen;
    memcpy(buf + sizeof(*r), m->path, plen);
    write_proc_chunk(buf, bytes);
}

static void emit_proc(void)
{
    unsigned char buf[8192];
    struct hmr_proc *r = (struct hmr_proc *)buf;
    memset(buf, 0, sizeof(buf));
    char exe[PATH_MAX];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (el < 0)
        el = 0;
    char cmd[4096];
    ssize_t cl = 0;
    int cfd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (cfd >= 0) {
        cl = read(cfd, cmd, sizeof(cmd));
        close(cfd);
        if (cl < 0)
            cl = 0;
    }
    size_t hl = strnlen(g_host, sizeof(g_host));
    if (sizeof(*r) + hl + (size_t)el + (size_t)cl + 8 > sizeof(buf))
        cl = (ssize_t)(sizeof(buf) - sizeof(*r) - hl - (size_t)el - 8);
    r->h.type = HMR_PROC;
    r->version = HMR_VERSION;
    r->pid = (uint32_t)getpid();
    r->ppid = (uint32_t)getppid();
    r->rank = hm_env_rank(&r->nranks);
    r->depth = (uint32_t)g_cfg.depth;
    r->min_size = g_cfg.min_size;
    r->tk_start = hm_ticks();
    r->t_start = hm_now_ns();
    r->ticks_are_ns = !hm_tsc;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    r->t_real = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    r->host_len = (uint16_t)hl;
    r->exe_len = (uint16_t)el;
    r->cmd_len = (uint16_t)cl;
    unsigned char *p = buf + sizeof(*r);
    memcpy(p, g_host, hl);
    memcpy(p + hl, exe, (size_t)el);
    memcpy(p + hl + el, cmd, (size_t)cl);
    uint32_t bytes = (uint32_t)((sizeof(*r) + hl + (size_t)el + (size_t)cl + 7) & ~7u);
    r->h.len8 = HMR_LEN8(bytes);
    write_proc_chunk(buf, bytes);
}

static int open_stream(void)
{
    char num[24];
    size_t dl = strlen(g_cfg.outdir);
    for (unsigned k = 0; k < 1000; k++) {
        size_t n = 0;
        if (dl + strlen(g_host) + 64 >= sizeof(g_path))
            return ENAMETOOLONG;
        memcpy(g_path, g_cfg.outdir, dl);
        n = dl;
        g_path[n++] = '/';
        n += hm_fmt_str(g_path + n, g_host);
        g_path[n++] = '.';
        n += hm_fmt_u64(g_path + n, (uint64_t)getpid());
        g_path[n++] = '.';
        size_t kl = hm_fmt_u64(num, k);
        memcpy(g_path + n, num, kl);
        n += kl;
        n += hm_fmt_str(g_path + n, ".hmr");
        g_path[n] = '\0';
        int fd = open(g_path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            g_fd = fd;
            return 0;
        }
        if (errno != EEXIST)
            return errno;
    }
    return EEXIST;
}

static void thread_exit_cb(void *arg) { (void)arg; hmc_thread_exit(); }

int hmc_core_init(const struct hmc_config *cfg)
{
    hm_clock_init();
    g_cfg = *cfg;
    if (g_cfg.depth < 1)
        g_cfg.depth = 1;
    if (g_cfg.depth > HM_MAX_DEPTH)
        g_cfg.depth = HM_MAX_DEPTH;
    if (gethostname(g_host, sizeof(g_host) - 1) != 0)
        memcpy(g_host, "localhost", 10);
    for (char *c = g_host; *c; c++)
        if (*c == '/' || *c == '.')
            *c = '_';
    int err = open_stream();
    if (err) {
        hm_log("hmtune: cannot write the trace in ", g_cfg.outdir, "; tracing is off for this process");
        return -1;
    }
    pthread_key_create(&g_key, thread_exit_cb);
    emit_proc();
    atomic_store(&g_active, 1);
    return 0;
}

/* ---- per-thread buffers ------------------------------------------------- */

static void spin_claim(struct hmc_thread *t)
{
    int z = 0;
    while (!atomic_compare_exchange_weak(&t->claim, &z, 1))
        z = 0;
}

/* Write t's committed records as chunk t->seq. Returns 0 if written or dropped. */
static void write_buffer(struct hmc_thread *t, uint32_t bytes)
{
    if (bytes == 0)
        return;
    t->chunk.magic = HMR_MAGIC;
    t->chunk.stream = t->stream;
    t->chunk.nbytes = bytes;
    t->chunk.seq = t->seq;
    t->chunk.ticks = hm_ticks();
    t->chunk.ns = hm_now_ns();
    if (g_fd < 0 || atomic_load(&g_broken)) {
        t->n_lost += 1;
        return;
    }
    int err = hm_write_all(g_fd, &t->chunk, sizeof(t->chunk) + bytes);
    if (err)
        broken(err);
}

/* Owner-side flush: the buffer starts over with the next chunk number. */
static void flush_own(struct hmc_thread *t)
{
    spin_claim(t);
    write_buffer(t, atomic_load_explicit(&t->committed, memory_order_relaxed));
    t->seq++;
    t->pos = 0;
    atomic_store_explicit(&t->committed, 0, memory_order_release);
    atomic_store_explicit(&t->claim, 0, memory_order_release);
}

static inline void *reserve(struct hmc_thread *t, uint32_t bytes)
{
    if (hm_unlikely(t->pos + bytes > HMC_BUF_BYTES))
        flush_own(t);
    return t->rec + t->pos;
}

static inline void commit(struct hmc_thread *t, uint32_t bytes)
{
    t->pos += bytes;
    atomic_store_explicit(&t->committed, t->pos, memory_order_release);
    if (hm_unlikely(atomic_load_explicit(&g_exiting, memory_order_relaxed)))
        flush_own(t);
}

/* Write handler buffer i as its chunk seq (the claim keeps the exit path and the
 * handler from writing it at once). */
static void write_hbuf(struct hmc_thread *t, int i, int reset)
{
    struct hbuf *b = &t->hb[i];
    uint32_t bytes = atomic_load_explicit(&b->committed, memory_order_acquire);
    if (bytes) {
        b->chunk = (struct hmr_chunk){ HMR_MAGIC, t->stream | hb_stream_bits[i], bytes, b->seq,
                                       hm_ticks(), hm_now_ns() };
        if (g_fd < 0 || atomic_load(&g_broken))
            t->n_lost += 1;
        else {
            int err = hm_write_all(g_fd, &b->chunk, sizeof(b->chunk) + bytes);
            if (err)
                broken(err);
        }
    }
    if (reset) {
        b->seq++;
        b->pos = 0;
        atomic_store_explicit(&b->committed, 0, memory_order_release);
    }
}

static void record_hbuf(struct hmc_thread *t, int i, const void *rec, uint32_t bytes)
{
    struct hbuf *b = &t->hb[i];
    int z = 0;
    if (!atomic_compare_exchange_strong(&b->claim, &z, 1))
        return;                       /* the exit path is writing it: drop this one */
    if (b->pos + bytes > HMC_SBUF_BYTES)
        write_hbuf(t, i, 1);
    memcpy(b->rec + b->pos, rec, bytes);
    b->pos += bytes;
    atomic_store_explicit(&b->committed, b->pos, memory_order_release);
    atomic_store_explicit(&b->claim, 0, memory_order_release);
}

void hmc_record_sample(struct hmc_thread *t, const void *rec, uint32_t bytes)
{
    record_hbuf(t, HB_SAMPLES, rec, bytes);
}

void hmc_record_fault(struct hmc_thread *t, const void *rec, uint32_t bytes)
{
    record_hbuf(t, HB_FAULTS, rec, bytes);
}

/* A handler stream's first record: the thread and its stack (so finalize can tell
 * stack addresses from unknown ones). */
static void hbuf_begin(struct hmc_thread *t, int i, uint64_t stack_lo, uint64_t stack_hi)
{
    struct hmr_thread r;
    memset(&r, 0, sizeof(r));
    r.h.type = HMR_THREAD;
    r.h.len8 = HMR_LEN8(sizeof(r));
    r.t = hm_ticks();
    r.tid = t->tid;
    r.stack_lo = stack_lo;
    r.stack_hi = stack_hi;
    t->hb[i].seq = 0;
    t->hb[i].pos = 0;
    atomic_store(&t->hb[i].committed, 0);
    record_hbuf(t, i, &r, sizeof(r));
}

void hmc_samples_begin(struct hmc_thread *t, uint64_t stack_lo, uint64_t stack_hi)
{
    hbuf_begin(t, HB_SAMPLES, stack_lo, stack_hi);
}

void hmc_faults_begin(struct hmc_thread *t, uint64_t stack_lo, uint64_t stack_hi)
{
    hbuf_begin(t, HB_FAULTS, stack_lo, stack_hi);
}

/* Write what the handlers recorded (thread exit, process exit; never from a handler). */
void hmc_samples_flush(struct hmc_thread *t)
{
    for (int i = 0; i < HB_N; i++) {
        int z = 0;
        if (!atomic_compare_exchange_strong(&t->hb[i].claim, &z, 1))
            continue;
        write_hbuf(t, i, 1);
        atomic_store(&t->hb[i].claim, 0);
    }
}

void *hmc_thread_sampler(struct hmc_thread *t) { return t->sampler; }
void hmc_thread_set_sampler(struct hmc_thread *t, void *s) { t->sampler = s; }
struct hmc_thread *hmc_thread_self(void) { return t_self; }

static void begin_stream(struct hmc_thread *t)
{
    t->stream = atomic_fetch_add(&g_next_stream, 1);
    t->seq = 0;
    t->tid = gettid_();
    t->pos = 0;
    atomic_store(&t->committed, 0);
    t->next_stack = 1;
    t->nstacks = 0;
    t->stack_gen = hm_modmap_generation();
    t->tracer_ns = t->n_calls = t->n_traced = t->n_lost = 0;
    for (int i = 0; i < HB_N; i++) {
        t->hb[i].seq = t->hb[i].pos = 0;
        atomic_store(&t->hb[i].committed, 0);
        atomic_store(&t->hb[i].claim, 0);
    }
    t->sampler = NULL;
    memset(t->stacks, 0, HMC_STACK_SLOTS * (2 + (size_t)g_cfg.depth) * 8);
    struct hmr_thread *r = reserve(t, sizeof(*r));
    memset(r, 0, sizeof(*r));
    r->h.type = HMR_THREAD;
    r->h.len8 = HMR_LEN8(sizeof(*r));
    r->t = hm_ticks();
    r->tid = t->tid;
    commit(t, sizeof(*r));
}

struct hmc_thread *hmc_thread_get(void)
{
    struct hmc_thread *t = t_self;
    if (hm_likely(t != NULL))
        return t;
    if (!atomic_load(&g_active))
        return NULL;
    /* Reuse a buffer released by an exited thread, else map a new one. */
    for (t = atomic_load(&g_threads); t; t = t->next) {
        int z = 0;
        if (atomic_compare_exchange_strong(&t->in_use, &z, 1))
            break;
    }
    if (!t) {
        size_t stack_bytes = HMC_STACK_SLOTS * (2 + (size_t)g_cfg.depth) * 8;
        size_t bytes = sizeof(struct hmc_thread) + stack_bytes;
        void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
            return NULL;
        t = mem;
        t->map_bytes = bytes;
        t->stacks = (uint64_t *)((char *)mem + sizeof(struct hmc_thread));
        atomic_store(&t->in_use, 1);
        struct hmc_thread *head = atomic_load(&g_threads);
        do
            t->next = head;
        while (!atomic_compare_exchange_weak(&g_threads, &head, t));
    }
    begin_stream(t);
    t_self = t;
    pthread_setspecific(g_key, t);
    return t;
}

static void emit_tend(struct hmc_thread *t)
{
    struct hmr_tend *r = reserve(t, sizeof(*r));
    memset(r, 0, sizeof(*r));
    r->h.type = HMR_TEND;
    r->h.len8 = HMR_LEN8(sizeof(*r));
    r->t = hm_ticks();
    r->tracer_tk = t->tracer_ns;
    r->n_calls = t->n_calls;
    r->n_traced = t->n_traced;
    r->n_lost = t->n_lost;
    t->pos += sizeof(*r);
    atomic_store_explicit(&t->committed, t->pos, memory_order_release);
}

void hmc_thread_exit(void)
{
    struct hmc_thread *t = t_self;
    if (!t)
        return;
    hmc_busy++;
    if (g_exit_hook)
        g_exit_hook(t);               /* stops this thread's sampling first */
    hmc_samples_flush(t);
    emit_tend(t);
    flush_own(t);
    t_self = NULL;
    atomic_store(&t->in_use, 0);
    hmc_busy--;
}

/* ---- records ------------------------------------------------------------ */

static uint32_t intern_stack(struct hmc_thread *t, const uint64_t *frames, int n)
{
    const size_t w = 2 + (size_t)g_cfg.depth;
    uint32_t gen = hm_modmap_generation();
    if (hm_unlikely(gen != t->stack_gen || t->nstacks >= HMC_STACK_SLOTS * 3 / 4)) {
        /* A library went away (its addresses may now mean another one), or the
         * table is full: forget, and write stacks again as they come. */
        memset(t->stacks, 0, HMC_STACK_SLOTS * w * 8);
        t->nstacks = 0;
        t->stack_gen = gen;
    }
    uint64_t h = (uint64_t)n;
    for (int i = 0; i < n; i++)
        h = (h ^ frames[i]) * 0x9e3779b97f4a7c15ull;
    h = (h ^ (h >> 31)) | 1;
    uint32_t slot = (uint32_t)(h ^ (h >> 29)) & (HMC_STACK_SLOTS - 1);
    for (;;) {
        uint64_t *e = t->stacks + slot * w;
        if (e[0] == 0)
            break;
        if (e[0] == h && (int)(e[1] >> 32) == n && memcmp(e + 2, frames, (size_t)n * 8) == 0)
            return (uint32_t)e[1];
        slot = (slot + 1) & (HMC_STACK_SLOTS - 1);
    }
    uint32_t id = t->next_stack++;
    uint64_t *e = t->stacks + slot * w;
    e[0] = h;
    e[1] = ((uint64_t)n << 32) | id;
    memcpy(e + 2, frames, (size_t)n * 8);
    t->nstacks++;
    uint32_t bytes = (uint32_t)(sizeof(struct hmr_stack) + (size_t)n * 8);
    struct hmr_stack *r = reserve(t, bytes);
    r->h.type = HMR_STACK;
    r->h.kind = (uint8_t)n;
    r->h.len8 = HMR_LEN8(bytes);
    r->h.aux = id;
    uint64_t *out = (uint64_t *)(r + 1);
    memcpy(out, frames, (size_t)n * 8);
    hm_frames_pack(out, n);
    commit(t, bytes);
    return id;
}

/* A CALL record, or with weight != 0 an SCALL (the same fields, then the weight). */
static void record_call(struct hmc_thread *t, int kind, uint64_t t0, uint64_t t1,
                        uint64_t size, uint64_t align, uint64_t ptr_in, uint64_t ptr_out,
                        const uint64_t *frames, int n, uint64_t weight)
{
    uint32_t sid = intern_stack(t, frames, n);
    size_t len = weight ? sizeof(struct hmr_scall) : sizeof(struct hmr_call);
    struct hmr_scall *r = reserve(t, len);
    r->h.type = weight ? HMR_SCALL : HMR_CALL;
    r->h.kind = (uint8_t)kind;
    r->h.len8 = HMR_LEN8(len);
    r->h.aux = sid;
    r->t0 = t0;
    r->t1 = t1;
    r->size = size;
    r->align = align;
    r->ptr_in = ptr_in;
    r->ptr_out = ptr_out;
    if (weight)
        r->weight = weight;
    t->n_traced++;
    commit(t, len);
}

void hmc_record_call(struct hmc_thread *t, int kind, uint64_t t0, uint64_t t1, uint64_t size,
                     uint64_t align, uint64_t ptr_in, uint64_t ptr_out,
                     const uint64_t *frames, int n)
{
    record_call(t, kind, t0, t1, size, align, ptr_in, ptr_out, frames, n, 0);
}

void hmc_record_sampled_call(struct hmc_thread *t, int kind, uint64_t t0, uint64_t t1,
                             uint64_t size, uint64_t align, uint64_t ptr_in, uint64_t ptr_out,
                             const uint64_t *frames, int n, uint64_t weight)
{
    record_call(t, kind, t0, t1, size, align, ptr_in, ptr_out, frames, n, weight);
}

void hmc_record_free(struct hmc_thread *t, uint64_t t0, uint64_t t1, uint64_t ptr)
{
    struct hmr_free *r = reserve(t, sizeof(*r));
    r->h.type = HMR_FREE;
    r->h.kind = HMK_FREE;
    r->h.len8 = HMR_LEN8(sizeof(*r));
    r->h.aux = 0;
    r->t0 = t0;
    r->t1 = t1;
    r->ptr = ptr;
    t->n_traced++;
    commit(t, sizeof(*r));
}

void hmc_add_tracer_ns(struct hmc_thread *t, uint64_t ticks, uint64_t calls)
{
    t->tracer_ns += ticks;
    t->n_calls += calls;
}

void hmc_count_call(struct hmc_thread *t) { t->n_calls++; }

/* ---- exit, crash, fork -------------------------------------------------- */

void hmc_finish(int end_kind, int signo)
{
    if (!atomic_load(&g_active))
        return;
    if (!signo && g_finish_hook)
        g_finish_hook();
    atomic_store(&g_exiting, 1);
    struct hmc_thread *self = t_self;
    if (self)
        emit_tend(self);
    /* Other threads are still running: their counters go on the process stream. */
    for (struct hmc_thread *t = atomic_load(&g_threads); t; t = t->next) {
        if (t == self || !atomic_load(&t->in_use))
            continue;
        struct hmr_tend r;
        memset(&r, 0, sizeof(r));
        r.h.type = HMR_TEND;
        r.h.len8 = HMR_LEN8(sizeof(r));
        r.h.aux = t->stream;
        r.t = hm_ticks();
        r.tracer_tk = t->tracer_ns;
        r.n_calls = t->n_calls;
        r.n_traced = t->n_traced;
        r.n_lost = t->n_lost;
        write_proc_chunk(&r, sizeof(r));
    }
    for (struct hmc_thread *t = atomic_load(&g_threads); t; t = t->next) {
        if (!atomic_load(&t->in_use))
            continue;
        int z = 0;
        if (t == self && atomic_load(&t->claim))
            continue;   /* a signal interrupted this thread's own write */
        if (signo && !atomic_compare_exchange_strong(&t->claim, &z, 1))
            continue;   /* in a signal handler: never wait */
        if (!signo)
            spin_claim(t);
        write_buffer(t, atomic_load_explicit(&t->committed, memory_order_acquire));
        if (g_thread_finish_hook)
            g_thread_finish_hook(t);   /* the sampler's last records for this thread */
        for (int i = 0; i < HB_N; i++) {
            int sz = 0;
            if (atomic_compare_exchange_strong(&t->hb[i].claim, &sz, 1)) {
                write_hbuf(t, i, t == self);
                atomic_store(&t->hb[i].claim, 0);
            }
        }
        if (t == self) {
            t->seq++;
            t->pos = 0;
            atomic_store(&t->committed, 0);
        }
        atomic_store(&t->claim, 0);
    }
    struct hmr_pend r;
    memset(&r, 0, sizeof(r));
    r.h.type = HMR_PEND;
    r.h.kind = (uint8_t)end_kind;
    r.h.len8 = HMR_LEN8(sizeof(r));
    r.tk = hm_ticks();
    r.t = hm_now_ns();
    r.signo = (uint32_t)signo;
    write_proc_chunk(&r, sizeof(r));
}

void hmc_exec_failed(void) { atomic_store(&g_exiting, 0); }

void hmc_atfork_prepare(void) { hm_modmap_atfork_prepare(); }
void hmc_atfork_parent(void) { hm_modmap_atfork_release(); }

void hmc_atfork_child(void)
{
    hm_modmap_atfork_release();
    if (!atomic_load(&g_active))
        return;
    /* The parent's buffered records are the parent's to write: drop them here,
     * and start a stream file of our own. Other threads do not exist here. */
    struct hmc_thread *self = t_self;
    for (struct hmc_thread *t = atomic_load(&g_threads); t; t = t->next) {
        atomic_store(&t->claim, 0);
        if (t != self)
            atomic_store(&t->in_use, 0);
    }
    if (g_fd >= 0)
        close(g_fd);
    g_fd = -1;
    atomic_store(&g_proc_seq, 0);
    atomic_store(&g_next_stream, 1);
    if (open_stream() != 0) {
        atomic_store(&g_active, 0);
        return;
    }
    emit_proc();
    for (uint32_t id = 1; id <= hm_modmap_count(); id++)
        emit_module(hm_modmap_get(id));
    if (self)
        begin_stream(self);
}

void hmc_module_cb(const struct hm_module *m) { emit_module(m); }
