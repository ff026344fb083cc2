/* Tests of the interposer's site matcher (interpose/hmi_match.c), driven through
 * libtm_match.so (match_shim.c) so that the matcher's own frames are removed as in
 * libhmalloc.so. Placements are written at run time from chains captured at the
 * call sites below: site_a and site_b call probe from two places, and probe makes
 * the same library call whether it captures the chain or matches it. */
#include "hmt.h"
#include "match_shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define TM_NOIPA __attribute__((noinline, noipa))
#define HDR "# hmtune placement v1\ntier fast memkind:MEMKIND_HBW 1048576\n" \
            "tier slow default unlimited\n"

int probe(int cap, uint64_t *out);
int site_a(int cap, uint64_t *out);
int site_b(int cap, uint64_t *out);

static volatile int g_sink;
static uint64_t g_a[8], g_b[8];           /* chains of site_a / site_b, depth 2 */
static char g_chain_a[4096], g_chain_b[4096];
static char g_exe[1024];

TM_NOIPA int probe(int cap, uint64_t *out)
{
    int r = tm_probe(cap, out);
    __asm__ volatile("" ::: "memory");
    return r;
}

TM_NOIPA int site_a(int cap, uint64_t *out)
{
    g_sink = 1;
    int r = probe(cap, out);
    __asm__ volatile("" ::: "memory");
    return r;
}

TM_NOIPA int site_b(int cap, uint64_t *out)
{
    g_sink = 2;
    int r = probe(cap, out);
    __asm__ volatile("" ::: "memory");
    return r + g_sink * 0;
}

static void chain_text(const uint64_t *raw, int n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < n && used < len; i++) {
        char f[2048];
        tm_frame(raw[i], f, sizeof(f));
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " > " : "", f);
    }
}

/* Build the matcher on HDR + body; 0 on success (failures are reported). */
static int init(const char *body)
{
    char text[24576], err[256];
    snprintf(text, sizeof(text), HDR "%s", body);
    int r = tm_init(text, err, sizeof(err));
    if (r)
        fprintf(stderr, "  placement refused: %s\n%s", err, text);
    return r;
}

static int init_sites(int depth, const char *win, const char *sites)
{
    char body[20480];
    snprintf(body, sizeof(body), "depth %d\nsize-window %s\n%s", depth, win, sites);
    return init(body);
}

/* Capture both chains and check that they name probe and its two callers in the
 * test binary at the right offsets. */
static void test_capture(void)
{
    CHECK(init("depth 2\nsize-window 0 0\n") == 0);
    CHECK(site_a(2, g_a) == 2);
    CHECK(site_b(2, g_b) == 2);
    CHECK(g_a[0] == g_b[0] && g_a[1] != g_b[1]);
    Dl_info d0, d1, d2;
    CHECK(dladdr((void *)(uintptr_t)(g_a[0] - 1), &d0) && d0.dli_saddr == (void *)&probe);
    CHECK(dladdr((void *)(uintptr_t)(g_a[1] - 1), &d1) && d1.dli_saddr == (void *)&site_a);
    CHECK(dladdr((void *)(uintptr_t)(g_b[1] - 1), &d2) && d2.dli_saddr == (void *)&site_b);
    chain_text(g_a, 2, g_chain_a, sizeof(g_chain_a));
    chain_text(g_b, 2, g_chain_b, sizeof(g_chain_b));
    char want[4096];
    snprintf(want, sizeof(want), "%s+0x%llx > %s+0x%llx", g_exe,
             (unsigned long long)(g_a[0] - (uint64_t)(uintptr_t)d0.dli_fbase), g_exe,
             (unsigned long long)(g_a[1] - (uint64_t)(uintptr_t)d1.dli_fbase));
    CHECK(strcmp(g_chain_a, want) == 0);
    if (strcmp(g_chain_a, want))
        fprintf(stderr, "  got  %s\n  want %s\n", g_chain_a, want);
}

static void test_here_two_sites(void)
{
    char s[16384];
    snprintf(s, sizeof(s), "site fast %s\n", g_chain_a);
    CHECK(init_sites(2, "4096 65536", s) == 0);
    CHECK(tm_depth() == 2);
    CHECK(site_a(0, NULL) == 0);
    CHECK(site_b(0, NULL) == -1);
    CHECK(tm_chain(g_a, 2) == 0);
    CHECK(tm_chain(g_b, 2) == -1);
    CHECK(probe(0, NULL) == -1);               /* test function > probe: no site */
    /* both listed, in different tiers */
    snprintf(s, sizeof(s), "site slow %s\nsite fast %s\n", g_chain_b, g_chain_a);
    CHECK(init_sites(2, "4096 65536", s) == 0);
    CHECK(site_a(0, NULL) == 0);
    CHECK(site_b(0, NULL) == 1);
    /* a longer chain is cut to the placement's depth */
    uint64_t a4[8];
    int n = site_a(4, a4);
    CHECK(n == 4 && a4[0] == g_a[0] && a4[1] == g_a[1]);
    CHECK(tm_chain(a4, n) == 0);
    CHECK(tm_chain(g_a, 0) == -1 && tm_chain(g_a, 1) == -1);
}

/* A listed chain shorter than depth matches only a stack exactly that deep. */
TM_NOIPA int depth3(int cap, uint64_t *out);
TM_NOIPA int depth3(int cap, uint64_t *out)
{
    int r = site_a(cap, out);
    __asm__ volatile("" ::: "memory");
    return r;
}

static void test_depth_exact(void)
{
    char s[16384], c3[8192];
    snprintf(s, sizeof(s), "site fast %s\n", g_chain_a);
    CHECK(init_sites(3, "0 100", s) == 0);
    CHECK(site_a(0, NULL) == -1);
    CHECK(depth3(0, NULL) == -1);
    uint64_t raw[8];
    CHECK(depth3(3, raw) == 3);
    CHECK(raw[0] == g_a[0] && raw[1] == g_a[1]);
    chain_text(raw, 3, c3, sizeof(c3));
    snprintf(s, sizeof(s), "site fast %s\n", c3);
    CHECK(init_sites(3, "0 100", s) == 0);
    CHECK(depth3(0, NULL) == 0);
    CHECK(site_a(0, NULL) == -1);              /* another caller of site_a */
}

static void test_cache_repeat(void)
{
    char s[16384];
    snprintf(s, sizeof(s), "site fast %s\n", g_chain_a);
    CHECK(init_sites(2, "4096 65536", s) == 0);
    int bad = 0;
    uint64_t m0 = tm_misses();
    for (int i = 0; i < 1000; i++)
        bad += site_a(0, NULL) != 0;
    uint64_t m1 = tm_misses();
    for (int i = 0; i < 1000; i++)
        bad += site_b(0, NULL) != -1;
    CHECK(bad == 0);
    CHECK(m1 - m0 == 1);                       /* one lookup, then hits */
    CHECK(tm_misses() - m1 == 1);
    tm_invalidate();                           /* as after a dlclose: entries stale */
    CHECK(site_a(0, NULL) == 0);
    CHECK(tm_misses() - m1 == 2);
    CHECK(site_a(0, NULL) == 0);
    CHECK(tm_misses() - m1 == 2);
    /* a new placement: the old decisions do not survive it */
    CHECK(init_sites(2, "4096 65536", "") == 0);
    CHECK(site_a(0, NULL) == -1);
}

/* Stack fingerprints: fp_a and fp_b reach tm_probe_fp through frames of the same
 * shape, so its CFA is the same for both and only the return addresses on the stack
 * tell them apart. */
TM_NOIPA int probe_fp(int cap, uint64_t *out);
TM_NOIPA int probe_fp(int cap, uint64_t *out)
{
    int r = tm_probe_fp(cap, out);
    __asm__ volatile("" ::: "memory");
    return r;
}

TM_NOIPA int fp_a(int cap, uint64_t *out);
TM_NOIPA int fp_a(int cap, uint64_t *out)
{
    g_sink = 3;
    int r = probe_fp(cap, out);
    __asm__ volatile("" ::: "memory");
    return r;
}

TM_NOIPA int fp_b(int cap, uint64_t *out);
TM_NOIPA int fp_b(int cap, uint64_t *out)
{
    g_sink = 4;
    int r = probe_fp(cap, out);
    __asm__ volatile("" ::: "memory");
    return r + g_sink * 0;
}

static void test_fingerprint(void)
{
    uint64_t a[8], b[8];
    char s[16384], ca[8192];
    CHECK(init("depth 2\nsize-window 0 0\n") == 0);
    CHECK(fp_a(2, a) == 2 && fp_b(2, b) == 2);
    CHECK(a[0] == b[0] && a[1] != b[1]);
    chain_text(a, 2, ca, sizeof(ca));
    snprintf(s, sizeof(s), "site fast %s\n", ca);
    CHECK(init_sites(2, "4096 65536", s) == 0);
    uint64_t h0 = tm_fp_hits();
    int bad = 0;
    for (int i = 0; i < 1000; i++)             /* one site, then the other */
        bad += fp_a(0, NULL) != 0;
    for (int i = 0; i < 1000; i++)
        bad += fp_b(0, NULL) != -1;
    uint64_t h1 = tm_fp_hits();
    for (int i = 0; i < 2000; i++)             /* alternating at one CFA */
        bad += i % 2 ? fp_b(0, NULL) != -1 : fp_a(0, NULL) != 0;
    CHECK(bad == 0);
    CHECK(h1 - h0 >= 1900);                    /* decided from fingerprints... */
    CHECK(tm_fp_hits() - h1 >= 1990);          /* ...also alternating: both kept */
    tm_invalidate();                           /* as after a dlclose: entries stale */
    uint64_t h2 = tm_fp_hits();
    CHECK(fp_a(0, NULL) == 0);
    CHECK(tm_fp_hits() == h2);
    /* a new placement: the old decisions do not survive it */
    CHECK(init_sites(2, "4096 65536", "") == 0);
    CHECK(fp_a(0, NULL) == -1 && fp_a(0, NULL) == -1 && fp_a(0, NULL) == -1);
    /* a placed chain is fingerprinted when first decided, an unplaced one only when
     * decided a second time */
    CHECK(init_sites(2, "4096 65536", s) == 0);
    uint64_t h3 = tm_fp_hits();
    CHECK(fp_a(0, NULL) == 0 && tm_fp_hits() == h3);
    CHECK(fp_a(0, NULL) == 0 && tm_fp_hits() == h3 + 1);
    CHECK(fp_b(0, NULL) == -1 && fp_b(0, NULL) == -1 && tm_fp_hits() == h3 + 1);
    CHECK(fp_b(0, NULL) == -1 && tm_fp_hits() == h3 + 2);
}

struct worker { int bad; uint64_t misses; };

static void *worker(void *arg)
{
    struct worker *w = arg;
    uint64_t m0 = tm_misses();
    for (int i = 0; i < 500; i++)
        w->bad += site_a(0, NULL) != 0;
    for (int i = 0; i < 500; i++)
        w->bad += site_b(0, NULL) != -1;
    w->misses = tm_misses() - m0;
    for (int i = 0; i < 2000; i++)
        w->bad += (i & 1 ? site_b(0, NULL) != -1 : site_a(0, NULL) != 0);
    w->bad += tm_chain(g_a, 2) != 0;
    return NULL;
}

static void test_threads(void)
{
    char s[16384];
    snprintf(s, sizeof(s), "site fast %s\n", g_chain_a);
    CHECK(init_sites(2, "4096 65536", s) == 0);
    pthread_t t[2];
    struct worker w[2];
    memset(w, 0, sizeof(w));
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, worker, &w[i]) == 0);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    for (int i = 0; i < 2; i++) {
        CHECK(w[i].bad == 0);
        CHECK(w[i].misses == 2);               /* each thread its own cache */
    }
    CHECK(site_a(0, NULL) == 0);
}

typedef int (*tmdl_call_fn)(int (*)(int, uint64_t *), int, uint64_t *);

/* The placement names a library that is not loaded when the matcher is built; the
 * chain through it matches once it is loaded. */
static void test_dlopen(void)
{
    void *h = dlopen(TM_DL_PATH, RTLD_NOW);
    CHECK(h != NULL);
    if (!h)
        return;
    tmdl_call_fn call = (tmdl_call_fn)(uintptr_t)dlsym(h, "tmdl_call");
    CHECK(call != NULL);
    if (!call)
        return;
    uint64_t raw[8];
    char c[8192], s[16384];
    CHECK(call(probe, 2, raw) == 2);
    Dl_info d;
    CHECK(dladdr((void *)(uintptr_t)(raw[1] - 1), &d) && strstr(d.dli_fname, "libtm_dl.so"));
    chain_text(raw, 2, c, sizeof(c));
    CHECK(strstr(c, " > " TM_DL_PATH "+0x") != NULL);
    dlclose(h);
    tm_invalidate();                           /* what the interposer's dlclose does */
    CHECK(dlopen(TM_DL_PATH, RTLD_NOW | RTLD_NOLOAD) == NULL);
    snprintf(s, sizeof(s), "site fast %s\nsite slow %s\n", c, g_chain_a);
    CHECK(init_sites(2, "1 2", s) == 0);
    CHECK(tm_chain(raw, 2) == -1);             /* the old addresses: no module now */
    CHECK(site_a(0, NULL) == 1);
    h = dlopen(TM_DL_PATH, RTLD_NOW);
    CHECK(h != NULL);
    if (!h)
        return;
    call = (tmdl_call_fn)(uintptr_t)dlsym(h, "tmdl_call");
    CHECK(call != NULL);
    if (call) {
        CHECK(call(probe, 0, NULL) == 0);
        CHECK(call(probe, 0, NULL) == 0);      /* cached */
        CHECK(call(site_a, 0, NULL) == 1);     /* cut to depth 2: site_a's chain */
    }
    CHECK(site_a(0, NULL) == 1);
    dlclose(h);
    tm_invalidate();
}

/* The "+0x..." part of a frame's text. */
static void frame_off(uint64_t addr, char *buf, size_t len)
{
    char f[4096];
    tm_frame(addr, f, sizeof(f));
    snprintf(buf, len, "%s", strrchr(f, '+'));
}

/* Same offsets, other module paths: never a match. */
static void test_module_not_loaded(void)
{
    char s[16384], c[8192], o0[64], o1[64], f0[4096];
    frame_off(g_a[0], o0, sizeof(o0));
    frame_off(g_a[1], o1, sizeof(o1));
    tm_frame(g_a[0], f0, sizeof(f0));
    /* both frames moved to a missing module */
    snprintf(c, sizeof(c), "/no/such/libx.so%s > /no/such/libx.so%s", o0, o1);
    snprintf(s, sizeof(s), "site fast %s\n", c);
    CHECK(init_sites(2, "4096 65536", s) == 0);
    CHECK(site_a(0, NULL) == -1);
    CHECK(tm_chain(g_a, 2) == -1);
    /* only the outer frame in a missing module */
    snprintf(c, sizeof(c), "%s > /no/such/libx.so%s", f0, o1);
    snprintf(s, sizeof(s), "site fast %s\n", c);
    CHECK(init_sites(2, "4096 65536", s) == 0);
    CHECK(site_a(0, NULL) == -1);
    /* the original is still found with the missing module listed beside it */
    snprintf(s, sizeof(s), "site fast %s\nsite slow %s\n", c, g_chain_a);
    CHECK(init_sites(2, "4096 65536", s) == 0);
    CHECK(site_a(0, NULL) == 1);
}

/* A frame outside every module is written "??+0x<address>" by collect. */
static void test_unknown_frame(void)
{
    char s[16384], c0[4096];
    tm_frame(g_a[0], c0, sizeof(c0));
    snprintf(s, sizeof(s), "site fast %s > ??+0x10\n", c0);
    CHECK(init_sites(2, "0 1", s) == 0);
    uint64_t raw[2] = { g_a[0], 0x10 };
    uint64_t m0 = tm_misses();
    CHECK(tm_chain(raw, 2) == 0);
    CHECK(tm_chain(raw, 2) == 0);
    CHECK(tm_misses() - m0 == 2);              /* "??" decisions are not cached */
    raw[1] = 0x20;
    CHECK(tm_chain(raw, 2) == -1);
}

static void test_size_window(void)
{
    char s[16384];
    snprintf(s, sizeof(s), "site fast %s\n", g_chain_a);
    CHECK(init_sites(2, "4096 65536", s) == 0);
    CHECK(!tm_size_ok(0) && !tm_size_ok(4095));
    CHECK(tm_size_ok(4096) && tm_size_ok(10000) && tm_size_ok(65536));
    CHECK(!tm_size_ok(65537) && !tm_size_ok((size_t)-1));
    CHECK(init_sites(2, "0 0", "") == 0);      /* nothing placed: nothing fits */
    CHECK(!tm_size_ok(0) && !tm_size_ok(1));
    snprintf(s, sizeof(s), "site fast %s\n", g_chain_a);
    CHECK(init_sites(2, "0 18446744073709551615", s) == 0);
    CHECK(tm_size_ok(0) && tm_size_ok((size_t)-1));
}

int main(void)
{
    ssize_t n = readlink("/proc/self/exe", g_exe, sizeof(g_exe) - 1);
    g_exe[n > 0 ? n : 0] = 0;
    RUN(test_capture);
    RUN(test_here_two_sites);
    RUN(test_depth_exact);
    RUN(test_cache_repeat);
    RUN(test_threads);
    RUN(test_dlopen);
    RUN(test_module_not_loaded);
    RUN(test_unknown_frame);
    RUN(test_size_window);
    RUN(test_fingerprint);
    HMT_END();
}
