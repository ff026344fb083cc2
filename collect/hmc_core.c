/* hmc_core.c — see hmc_core.h. This file: the process stream (its header records
 * and module records), start-up, and what happens at exit, on a crash signal, before
 * exec and at fork; the per-thread buffers are in hmc_buffers.c, the records and the
 * stack table in hmc_records.c, the stream file itself in hmc_file.c.
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
#include "hmc_buffers.h"
#include "hmc_file.h"
#include "hm_env.h"
#include "hm_fds.h"
#include "hm_modmap.h"
#include "hm_proc.h"
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

static _Atomic uint32_t g_proc_seq;
static void (*g_finish_hook)(void);

void hmc_set_finish_hook(void (*fn)(void)) { g_finish_hook = fn; }
static void (*g_thread_finish_hook)(struct hmc_thread *);
void hmc_set_thread_finish_hook(void (*fn)(struct hmc_thread *)) { g_thread_finish_hook = fn; }
static char g_host[256];

int hmc_core_active(void) { return atomic_load_explicit(&hmc_active, memory_order_relaxed); }

/* A chunk of the process stream (stream 0): header records written at once. */
static void write_proc_chunk(const void *rec, uint32_t bytes)
{
    if (hmc_fd < 0 || atomic_load(&hmc_broken))
        return;
    unsigned char buf[sizeof(struct hmr_chunk) + 8192];
    if (bytes > sizeof(buf) - sizeof(struct hmr_chunk))
        return;
    struct hmr_chunk c = { HMR_MAGIC, 0, bytes, atomic_fetch_add(&g_proc_seq, 1), hm_ticks(), hm_now_ns() };
    memcpy(buf, &c, sizeof(c));
    memcpy(buf + sizeof(c), rec, bytes);
    int err = hmc_stream_write(buf, sizeof(c) + bytes);
    if (err)
        hmc_write_failed(err);
}

void hmc_write_process_record(const void *rec, uint32_t bytes) { write_proc_chunk(rec, bytes); }

void hmc_write_text_record(int type, int kind, uint32_t aux, const char *a, const char *b)
{
    unsigned char buf[1024];
    struct hmr_hdr *h = (struct hmr_hdr *)buf;
    size_t lb = b ? strlen(b) : 0;
    if (lb > 200)
        lb = 200;
    size_t tail = b ? lb + 1 : 0, la = strlen(a);
    if (la > sizeof(buf) - sizeof(*h) - 8 - tail)
        la = sizeof(buf) - sizeof(*h) - 8 - tail;
    uint32_t bytes = (uint32_t)((sizeof(*h) + la + 1 + tail + 7) & ~7u);
    memset(buf, 0, bytes);
    h->type = (uint8_t)type;
    h->kind = (uint8_t)kind;
    h->aux = aux;
    h->len8 = HMR_LEN8(bytes);
    memcpy(buf + sizeof(*h), a, la);
    if (b)
        memcpy(buf + sizeof(*h) + la + 1, b, lb);
    write_proc_chunk(buf, bytes);
}

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
    r->depth = (uint32_t)hmc_cfg.depth;
    r->min_size = hmc_cfg.min_size;
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

static void thread_exit_cb(void *arg) { (void)arg; hmc_thread_exit(); }

int hmc_core_init(const struct hmc_config *cfg)
{
    hm_clock_init();
    hmc_cfg = *cfg;
    if (hmc_cfg.depth < 1)
        hmc_cfg.depth = 1;
    if (hmc_cfg.depth > HM_MAX_DEPTH)
        hmc_cfg.depth = HM_MAX_DEPTH;
    if (gethostname(g_host, sizeof(g_host) - 1) != 0)
        memcpy(g_host, "localhost", 10);
    for (char *c = g_host; *c; c++)
        if (*c == '/' || *c == '.')
            *c = '_';
    hm_proc_claim();                  /* the state set up from here on is this process's */
    int err = hmc_file_open(hmc_cfg.outdir, g_host);
    if (err) {
        hm_log("hmtune: cannot write the trace in ", hmc_cfg.outdir, "; tracing is off for this process");
        return -1;
    }
    pthread_key_create(&hmc_key, thread_exit_cb);
    emit_proc();
    atomic_store(&hmc_active, 1);
    return 0;
}

/* ---- exit, crash, fork -------------------------------------------------- */

void hmc_finish(int end_kind, int signo)
{
    if (!atomic_load(&hmc_active) || !hm_proc_mine())
        return;                       /* a raw clone's child leaves the parent's state alone */
    if (!signo && g_finish_hook)
        g_finish_hook();
    atomic_store(&hmc_exiting, 1);
    struct hmc_thread *self = hmc_t_self;
    if (self)
        hmc_emit_tend(self);
    /* Other threads are still running: their counters go on the process stream. */
    for (struct hmc_thread *t = atomic_load(&hmc_threads); t; t = t->next) {
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
    for (struct hmc_thread *t = atomic_load(&hmc_threads); t; t = t->next) {
        if (!atomic_load(&t->in_use))
            continue;
        int z = 0;
        if (t == self && atomic_load(&t->claim))
            continue;   /* a signal interrupted this thread's own write */
        if (signo && !atomic_compare_exchange_strong(&t->claim, &z, 1))
            continue;   /* in a signal handler: never wait */
        if (!signo)
            hmc_spin_claim(t);
        hmc_write_buffer(t, atomic_load_explicit(&t->committed, memory_order_acquire));
        if (g_thread_finish_hook)
            g_thread_finish_hook(t);   /* the sampler's last records for this thread */
        for (int i = 0; i < HB_N; i++) {
            int sz = 0;
            if (atomic_compare_exchange_strong(&t->hb[i].claim, &sz, 1)) {
                hmc_write_hbuf(t, i, t == self);
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

void hmc_exec_failed(void) { atomic_store(&hmc_exiting, 0); }

/* Whether the forking process owns the tracer (the child cannot tell: its page is
 * wiped). A fork from a raw clone's child, which the tracer does not follow, gives a
 * child it does not follow either. */
static int g_fork_owner;

void hmc_atfork_prepare(void)
{
    g_fork_owner = hm_proc_mine();
    hm_modmap_atfork_prepare();
}
void hmc_atfork_parent(void) { hm_modmap_atfork_release(); }

void hmc_atfork_child(void)
{
    hm_modmap_atfork_release();
    if (!atomic_load(&hmc_active) || !g_fork_owner)
        return;
    hm_proc_claim();                  /* glibc's fork: this child is traced as its own */
    /* The parent's buffered records are the parent's to write: drop them here,
     * and start a stream file of our own. Other threads do not exist here. */
    struct hmc_thread *self = hmc_t_self;
    for (struct hmc_thread *t = atomic_load(&hmc_threads); t; t = t->next) {
        atomic_store(&t->claim, 0);
        if (t != self)
            atomic_store(&t->in_use, 0);
    }
    hm_fd_drop(&hmc_fd);              /* the parent's stream */
    atomic_store(&g_proc_seq, 0);
    atomic_store(&hmc_next_stream, 1);
    if (hmc_file_open(hmc_cfg.outdir, g_host) != 0) {
        atomic_store(&hmc_active, 0);
        return;
    }
    emit_proc();
    for (uint32_t id = 1; id <= hm_modmap_count(); id++)
        emit_module(hm_modmap_get(id));
    if (self)
        hmc_begin_stream(self);
}

void hmc_module_cb(const struct hm_module *m) { emit_module(m); }

