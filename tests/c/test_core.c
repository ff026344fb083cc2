/* Tests of the tracer core without LD_PRELOAD: module map, unwinding, the raw
 * stream written by several threads, and the finalize reader on intact, truncated
 * and doubly-written streams. */
#include "hmt.h"
#include "fin.h"
#include "hmc_core.h"
#include "hmc_file.h"
#include "hm_modmap.h"
#include "hm_unwind.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[256];

HM_NOINLINE int inner(uint64_t *frames);
HM_NOINLINE int outer(uint64_t *frames);
void test_backtrace(void);

HM_NOINLINE int inner(uint64_t *frames)
{
    int n = hm_backtrace(frames, 8);
    __asm__ volatile("" ::: "memory");
    return n;
}

HM_NOINLINE int outer(uint64_t *frames)
{
    int n = inner(frames);
    __asm__ volatile("" ::: "memory");
    return n + 0;
}

static void test_modmap_self(void)
{
    Dl_info di;
    CHECK(dladdr((void *)&test_modmap_self, &di) != 0);
    uint64_t addr = (uint64_t)(uintptr_t)&test_modmap_self;
    uint64_t f = hm_modmap_frame(addr);
    uint32_t id = (uint32_t)(f >> HM_FRAME_MODSHIFT);
    const struct hm_module *m = hm_modmap_get(id);
    CHECK(m != NULL);
    if (!m)
        return;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = 0;
    CHECK(strcmp(m->path, exe) == 0);
    CHECK((f & HM_FRAME_OFFMASK) == addr - (uint64_t)(uintptr_t)di.dli_fbase);
    CHECK(hm_modmap_frame(8) == 8);   /* no module: id 0, the address itself */
}

static void test_modmap_dlopen(void)
{
    void *h = dlopen("libz.so.1", RTLD_NOW);
    if (!h)
        h = dlopen("libm.so.6", RTLD_NOW);
    CHECK(h != NULL);
    if (!h)
        return;
    void *sym = dlsym(h, "zlibVersion");
    if (!sym)
        sym = dlsym(h, "cos");
    CHECK(sym != NULL);
    const struct hm_module *m = hm_modmap_find((uint64_t)(uintptr_t)sym);
    CHECK(m != NULL && (strstr(m->path, "libz") || strstr(m->path, "libm")));
    uint32_t gen = hm_modmap_generation();
    dlclose(h);
    hm_modmap_invalidate();
    CHECK(hm_modmap_generation() != gen);
    /* our own code is still found after the refresh */
    CHECK(hm_modmap_find((uint64_t)(uintptr_t)&test_modmap_dlopen) != NULL);
}

void test_backtrace(void)
{
    uint64_t frames[HM_MAX_DEPTH];
    int n = outer(frames);
    CHECK(n >= 4 && n <= 8);
    /* hm_backtrace is inline: frames[0] is the call of unw_backtrace in inner
     * (nothing is stripped: no self module) */
    Dl_info d1, d2, d3;
    CHECK(dladdr((void *)(uintptr_t)(frames[0] - 1), &d1) && d1.dli_saddr == (void *)&inner);
    CHECK(dladdr((void *)(uintptr_t)(frames[1] - 1), &d2) && d2.dli_saddr == (void *)&outer);
    CHECK(dladdr((void *)(uintptr_t)(frames[2] - 1), &d3) && d3.dli_saddr == (void *)&test_backtrace);
    CHECK(hm_backtrace(frames, 2) == 2);
}

#define NCALLS 20000

static void *writer(void *arg)
{
    struct hmc_thread *t = hmc_thread_get();
    uint64_t a[2] = { 0x1000, 0x2000 }, b[3] = { 0x3000, 0x4000, 0x5000 };
    uint64_t now = hm_now_ns();
    (void)arg;
    for (int i = 0; i < NCALLS; i++) {
        uint64_t p = 0x10000000ull + (uint64_t)i * 4096;
        if (i & 1)
            hmc_record_call(t, HMK_MALLOC, now + 4 * (uint64_t)i, now + 4 * (uint64_t)i + 1, 8192, 0, 0, p, a, 2);
        else
            hmc_record_call(t, HMK_CALLOC, now + 4 * (uint64_t)i, now + 4 * (uint64_t)i + 1, 8192, 0, 0, p, b, 3);
        hmc_record_free(t, now + 4 * (uint64_t)i + 2, now + 4 * (uint64_t)i + 3, p);
    }
    hmc_thread_exit();
    return NULL;
}

static void count_stream(struct fin_stream *s, unsigned *cnt, int *sorted)
{
    const struct hmr_hdr *r;
    uint64_t last = 0;
    s->ci = 0;
    s->blen = s->bpos = 0;
    while (fin_stream_next(s, &r)) {
        cnt[r->type < 16 ? r->type : 0]++;
        if (r->type == HMR_CALL) {
            const struct hmr_call *c = (const void *)r;
            if (c->t0 < last)
                *sorted = 0;
            last = c->t1;
        }
    }
}

static void test_stream_threads(void)
{
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, writer, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    hmc_finish(HME_EXIT, 0);
    struct fin_ctx c;
    memset(&c, 0, sizeof(c));
    CHECK(fin_load_dir(&c, g_dir) == 1);
    if (c.nprocs != 1) {
        fin_free_ctx(&c);
        return;
    }
    struct fin_proc *p = &c.procs[0];
    CHECK(p->has_end && p->end_kind == HME_EXIT);
    CHECK(p->hdr.pid == (uint32_t)getpid() && p->hdr.min_size == 4096 && p->hdr.depth == 8);
    CHECK(p->truncated_bytes == 0 && p->bad_chunks == 0);
    CHECK(p->nmods > 1);
    int with_data = 0;
    for (size_t i = 0; i < p->nstreams; i++) {
        struct fin_stream *s = &p->streams[i];
        if (!s->nchunks)
            continue;
        with_data++;
        unsigned cnt[16] = { 0 };
        int sorted = 1;
        s->proc = p;
        count_stream(s, cnt, &sorted);
        CHECK(cnt[HMR_CALL] == NCALLS);
        CHECK(cnt[HMR_FREE] == NCALLS);
        CHECK(cnt[HMR_STACK] == 2);      /* two distinct stacks, each written once */
        CHECK(cnt[HMR_THREAD] == 1);
        CHECK(cnt[HMR_TEND] == 1);
        CHECK(s->seq_gaps == 0);
        CHECK(s->nchunks > 1);           /* 40000 records do not fit one 64 KiB buffer */
        CHECK(sorted);
    }
    CHECK(with_data == 4);
    fin_free_ctx(&c);
}

static void copy_file(const char *from, const char *to, off_t keep)
{
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char buf[65536];
    off_t done = 0;
    ssize_t n;
    while (done < keep && (n = read(in, buf, sizeof(buf))) > 0) {
        if (done + n > keep)
            n = (ssize_t)(keep - done);
        if (write(out, buf, (size_t)n) != n)
            break;
        done += n;
    }
    close(in);
    close(out);
}

static void test_truncated(void)
{
    char dir[300], path[400];
    snprintf(dir, sizeof(dir), "%s/trunc", g_dir);
    mkdir(dir, 0755);
    struct stat st;
    CHECK(stat(hmc_stream_path(), &st) == 0);
    snprintf(path, sizeof(path), "%s/x.1.0.hmr", dir);
    copy_file(hmc_stream_path(), path, st.st_size - 1000);
    struct fin_ctx c;
    memset(&c, 0, sizeof(c));
    CHECK(fin_load_dir(&c, dir) == 1);
    if (c.nprocs != 1) {
        fin_free_ctx(&c);
        return;
    }
    CHECK(c.procs[0].truncated_bytes > 0);
    CHECK(!c.procs[0].has_end);          /* the end record was in the lost tail */
    unsigned total[16] = { 0 };
    int sorted = 1;
    for (size_t i = 0; i < c.procs[0].nstreams; i++) {
        c.procs[0].streams[i].proc = &c.procs[0];
        count_stream(&c.procs[0].streams[i], total, &sorted);
    }
    CHECK(total[HMR_CALL] > NCALLS * 3);  /* most of it is still there */
    fin_free_ctx(&c);
}

static void put(int fd, uint32_t stream, uint32_t seq, const void *rec, uint32_t n)
{
    struct hmr_chunk h = { HMR_MAGIC, stream, n, seq, 1000 + seq, 5000 + seq };
    CHECK(write(fd, &h, sizeof(h)) == sizeof(h));
    CHECK(write(fd, rec, n) == (ssize_t)n);
}

static void test_duplicate_chunk(void)
{
    char dir[300], path[400];
    snprintf(dir, sizeof(dir), "%s/dup", g_dir);
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/x.2.0.hmr", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    struct hmr_proc pr;
    memset(&pr, 0, sizeof(pr));
    pr.h.type = HMR_PROC;
    pr.h.len8 = HMR_LEN8(sizeof(pr));
    pr.version = HMR_VERSION;
    pr.pid = 2;
    put(fd, 0, 0, &pr, sizeof(pr));
    struct hmr_free f[3];
    memset(f, 0, sizeof(f));
    for (int i = 0; i < 3; i++) {
        f[i].h.type = HMR_FREE;
        f[i].h.len8 = HMR_LEN8(sizeof(f[i]));
        f[i].t0 = (uint64_t)i * 10;
        f[i].t1 = (uint64_t)i * 10 + 1;
    }
    put(fd, 1, 0, f, sizeof(f[0]) * 2);      /* written at exit by another thread */
    put(fd, 1, 0, f, sizeof(f));             /* then again, longer, by its owner */
    put(fd, 1, 1, f, sizeof(f[0]));
    close(fd);
    struct fin_ctx c;
    memset(&c, 0, sizeof(c));
    CHECK(fin_load_dir(&c, dir) == 1);
    if (c.nprocs != 1) {
        fin_free_ctx(&c);
        return;
    }
    struct fin_stream *s = &c.procs[0].streams[0];
    CHECK(c.procs[0].nstreams == 1 && s->nchunks == 2 && s->chunks[0].nbytes == sizeof(f));
    unsigned cnt[16] = { 0 };
    int sorted = 1;
    s->proc = &c.procs[0];
    count_stream(s, cnt, &sorted);
    CHECK(cnt[HMR_FREE] == 4);
    fin_free_ctx(&c);
}

int main(void)
{
    snprintf(g_dir, sizeof(g_dir), "/tmp/hmt-core-%d", (int)getpid());
    mkdir(g_dir, 0755);
    struct hmc_config cfg = { g_dir, 4096, 8 };
    if (hmc_core_init(&cfg) != 0) {
        printf("FAIL init\n");
        return 1;
    }
    hm_modmap_init(hmc_module_cb);
    hm_unwind_init(NULL);
    RUN(test_modmap_self);
    RUN(test_modmap_dlopen);
    RUN(test_backtrace);
    RUN(test_stream_threads);
    RUN(test_truncated);
    RUN(test_duplicate_chunk);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
    if (system(cmd) != 0)
        return 1;
    HMT_END();
}
