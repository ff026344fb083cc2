/* Tests of collect/hmc_perf*.c: sysfs format parsing and PEBS/IBS detection on
 * fake sysfs trees, data_src decoding on the encodings the kernel produces
 * (arch/x86/events/intel/ds.c, arch/x86/events/amd/ibs.c), the ring drain on
 * synthetic perf ring buffers, and on this machine: no PMU is found, opening
 * fails cleanly, and the open/mmap/drain path works against the real kernel
 * through a software event standing in for the PMU. */
#include "hmt.h"
#include "hmc_perf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static char g_tmp[256];

/* ---- fake sysfs trees ---------------------------------------------------- */

/* Write root/bus/event_source/devices/<rel> = text, creating directories. */
static void put_file(const char *root, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/bus/event_source/devices/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        mkdir(path, 0755);
        *p = '/';
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
        close(fd);
    }
}

static const char *tree(const char *name)
{
    static char root[512];
    snprintf(root, sizeof(root), "%s/%s", g_tmp, name);
    mkdir(root, 0755);
    put_file(root, "software/type", "1\n");
    return root;
}

static void intel_core(const char *root, const char *pmu, const char *type, int spr)
{
    char rel[128];
#define PUT(f, t) (snprintf(rel, sizeof(rel), "%s/" f, pmu), put_file(root, rel, t))
    PUT("type", type);
    PUT("format/event", "config:0-7\n");
    PUT("format/umask", "config:8-15\n");
    PUT("format/ldlat", "config1:0-15\n");
    PUT("format/inv", "config:23\n");
    PUT("caps/max_precise", "3\n");
    PUT("events/mem-loads", "event=0xcd,umask=0x1,ldlat=3\n");
    if (spr) {
        PUT("events/mem-loads-aux", "event=0x03,umask=0x82\n");
        PUT("events/mem-stores", "event=0xcd,umask=0x2\n");
    } else {
        PUT("events/mem-stores", "event=0xd0,umask=0x82\n");
    }
#undef PUT
}

static void test_format(void)
{
    struct hmc_perf_field f;
    CHECK(hmc_perf_parse_format("config:0-7\n", &f) == 0);
    CHECK(f.word == 0 && f.nr == 1 && f.lo[0] == 0 && f.hi[0] == 7);
    CHECK(hmc_perf_parse_format("config1:0-15", &f) == 0);
    CHECK(f.word == 1 && f.nr == 1 && f.lo[0] == 0 && f.hi[0] == 15);
    CHECK(hmc_perf_parse_format("config:19", &f) == 0);
    CHECK(f.word == 0 && f.nr == 1 && f.lo[0] == 19 && f.hi[0] == 19);
    CHECK(hmc_perf_parse_format("config2:0\n", &f) == 0 && f.word == 2);
    CHECK(hmc_perf_parse_format("config:0-7,32-35", &f) == 0);
    CHECK(f.nr == 2 && f.lo[1] == 32 && f.hi[1] == 35);
    CHECK(hmc_perf_parse_format("config3:0", &f) == -1);
    CHECK(hmc_perf_parse_format("config:7-0", &f) == -1);
    CHECK(hmc_perf_parse_format("config:64", &f) == -1);
    CHECK(hmc_perf_parse_format("config:", &f) == -1);
    CHECK(hmc_perf_parse_format("config:1-2x", &f) == -1);
    CHECK(hmc_perf_parse_format("event:0-7", &f) == -1);

    uint64_t cfg[3] = { 0, 0, 0 };
    CHECK(hmc_perf_parse_format("config:0-7,32-35", &f) == 0);
    CHECK(hmc_perf_field_put(&f, 0x1cd, cfg) == 0 && cfg[0] == (0xcdull | 1ull << 32));
    CHECK(hmc_perf_field_put(&f, 0x1000, cfg) == -1);   /* 13 bits into 12 */
    CHECK(hmc_perf_parse_format("config1:0-15", &f) == 0);
    CHECK(hmc_perf_field_put(&f, 3, cfg) == 0 && cfg[1] == 3);
    CHECK(hmc_perf_field_put(&f, 30, cfg) == 0 && cfg[1] == 30);   /* replaces */
    CHECK(hmc_perf_field_put(&f, 0x10000, cfg) == -1);
}

static void test_detect_intel(void)
{
    const char *root = tree("skx");
    intel_core(root, "cpu", "4\n", 0);
    struct hmc_perf_caps c;
    char why[512];
    CHECK(hmc_perf_detect(root, &c, why, sizeof(why)) == HMC_PERF_PEBS);
    CHECK(c.npebs == 1 && !strcmp(c.pebs[0].name, "cpu") && c.pebs[0].type == 4);
    CHECK(c.pebs[0].max_precise == 3);
    CHECK(c.pebs[0].loads.config == 0x1cd && c.pebs[0].loads.config1 == 3);
    CHECK(c.pebs[0].loads.config2 == 0);
    CHECK(c.pebs[0].has_stores && c.pebs[0].stores.config == 0x82d0);
    CHECK(c.pebs[0].stores.config1 == 0);
    CHECK(!c.pebs[0].has_aux);
    CHECK(c.pebs[0].ldlat.word == 1 && c.pebs[0].ldlat.lo[0] == 0 && c.pebs[0].ldlat.hi[0] == 15);
    CHECK(!c.ibs && c.why_pebs[0] == 0 && c.ring_pages == HMC_PERF_RING_PAGES);
    char want[600];
    snprintf(want, sizeof(want), "IBS: no ibs_op in %s/bus/event_source/devices: ", root);
    CHECK(strncmp(why, want, strlen(want)) == 0 && !strstr(why, "PEBS"));
    CHECK(why[strlen(why) - 1] == '\n' && strchr(why, '\n') == why + strlen(why) - 1);

    /* the same tree through $HMTUNE_SYSFS_ROOT */
    setenv("HMTUNE_SYSFS_ROOT", root, 1);
    CHECK(hmc_perf_detect(NULL, &c, NULL, 0) == HMC_PERF_PEBS);
    unsetenv("HMTUNE_SYSFS_ROOT");
}

static void test_detect_spr_hybrid(void)
{
    const char *root = tree("spr");
    intel_core(root, "cpu", "4\n", 1);
    struct hmc_perf_caps c;
    CHECK(hmc_perf_detect(root, &c, NULL, 0) == HMC_PERF_PEBS);
    CHECK(c.npebs == 1 && c.pebs[0].has_aux);
    CHECK(c.pebs[0].aux.config == 0x8203 && c.pebs[0].aux.config1 == 0);
    CHECK(c.pebs[0].loads.config == 0x1cd && c.pebs[0].loads.config1 == 3);
    CHECK(c.pebs[0].stores.config == 0x2cd);

    root = tree("adl");   /* hybrid: P-cores need the aux event, E-cores do not */
    intel_core(root, "cpu_core", "4\n", 1);
    put_file(root, "cpu_atom/type", "10\n");
    put_file(root, "cpu_atom/format/event", "config:0-7\n");
    put_file(root, "cpu_atom/format/umask", "config:8-15\n");
    put_file(root, "cpu_atom/format/ldlat", "config1:0-15\n");
    put_file(root, "cpu_atom/events/mem-loads", "event=0xd0,umask=0x5,ldlat=3\n");
    put_file(root, "cpu_atom/events/mem-stores", "event=0xd0,umask=0x6\n");
    CHECK(hmc_perf_detect(root, &c, NULL, 0) == HMC_PERF_PEBS);
    CHECK(c.npebs == 2 && !strcmp(c.pebs[0].name, "cpu_core") && c.pebs[0].has_aux);
    CHECK(!strcmp(c.pebs[1].name, "cpu_atom") && c.pebs[1].type == 10 && !c.pebs[1].has_aux);
    CHECK(c.pebs[1].loads.config == 0x5d0 && c.pebs[1].loads.config1 == 3);
    CHECK(c.pebs[1].stores.config == 0x6d0 && c.pebs[1].max_precise == 3);   /* no caps file */

    /* an event whose event code spreads over two ranges */
    root = tree("wide");
    intel_core(root, "cpu", "4\n", 0);
    put_file(root, "cpu/format/event", "config:0-7,32-35\n");
    put_file(root, "cpu/events/mem-loads", "event=0x1cd,umask=0x1,ldlat=3,inv\n");
    CHECK(hmc_perf_detect(root, &c, NULL, 0) == HMC_PERF_PEBS);
    CHECK(c.pebs[0].loads.config == (0xcdull | 1ull << 32 | 0x100 | 1ull << 23));
}

static void test_detect_unusable(void)
{
    struct hmc_perf_caps c;
    char why[512];
    /* a VM exposing the core PMU's events but no PEBS */
    const char *root = tree("vm");
    intel_core(root, "cpu", "4\n", 0);
    put_file(root, "cpu/caps/max_precise", "0\n");
    CHECK(hmc_perf_detect(root, &c, why, sizeof(why)) == 0);
    CHECK(c.npebs == 0 && strstr(why, "PEBS: caps/max_precise is 0") && strstr(why, "IBS: "));
    CHECK(c.pebs[0].type == 0);   /* the rejected PMU leaves no trace */

    /* a term without a format file */
    root = tree("bad");
    intel_core(root, "cpu", "4\n", 0);
    put_file(root, "cpu/events/mem-loads", "event=0xcd,bogus=1\n");
    CHECK(hmc_perf_detect(root, &c, why, sizeof(why)) == 0 && strstr(why, "malformed"));

    /* nothing but software PMUs */
    root = tree("none");
    CHECK(hmc_perf_detect(root, &c, why, sizeof(why)) == 0);
    char want[600];
    snprintf(want, sizeof(want), "PEBS: no cpu PMU in %s/bus/event_source/devices: ", root);
    CHECK(strncmp(why, want, strlen(want)) == 0);
    snprintf(want, sizeof(want), "\nIBS: no ibs_op in %s/bus/event_source/devices: ", root);
    CHECK(strstr(why, want) != NULL);
}

static void test_detect_amd(void)
{
    const char *root = tree("zen4");
    put_file(root, "cpu/type", "4\n");   /* AMD core PMU: no mem-loads */
    put_file(root, "cpu/format/event", "config:0-7,32-35\n");
    put_file(root, "ibs_op/type", "11\n");
    put_file(root, "ibs_op/format/cnt_ctl", "config:19\n");
    put_file(root, "ibs_op/format/l3missonly", "config:16\n");
    put_file(root, "ibs_op/format/swfilt", "config2:0\n");
    put_file(root, "ibs_op/caps/zen4_ibs_extensions", "1\n");
    struct hmc_perf_caps c;
    char why[512];
    CHECK(hmc_perf_detect(root, &c, why, sizeof(why)) == HMC_PERF_IBS);
    CHECK(c.ibs && c.ibs_type == 11 && c.npebs == 0);
    CHECK(c.ibs_cnt_ctl.nr == 1 && c.ibs_cnt_ctl.word == 0 && c.ibs_cnt_ctl.lo[0] == 19);
    CHECK(c.ibs_l3missonly.nr == 1 && c.ibs_l3missonly.lo[0] == 16 && c.ibs_l3missonly.hi[0] == 16);
    CHECK(c.ibs_swfilt.nr == 1 && c.ibs_swfilt.word == 2 && c.ibs_swfilt.lo[0] == 0);
    CHECK(c.ibs_ldlat.nr == 0 && c.why_ibs[0] == 0);
    char want[600];
    snprintf(want, sizeof(want),
             "PEBS: no cpu/events/mem-loads in %s/bus/event_source/devices: not an Intel CPU "
             "with PEBS or a VM without a PMU\n", root);
    CHECK(strcmp(why, want) == 0);
    uint64_t cfg[3] = { 0, 0, 0 };
    CHECK(hmc_perf_field_put(&c.ibs_l3missonly, 1, cfg) == 0 && cfg[0] == 1u << 16);

    root = tree("zen3");   /* before Zen 4 and kernel 6.14: no l3missonly, no swfilt */
    put_file(root, "ibs_op/type", "11\n");
    put_file(root, "ibs_op/format/cnt_ctl", "config:19\n");
    CHECK(hmc_perf_detect(root, &c, NULL, 0) == HMC_PERF_IBS);
    CHECK(c.ibs_l3missonly.nr == 0 && c.ibs_swfilt.nr == 0 && c.ibs_cnt_ctl.nr == 1);
}

/* ---- data_src ------------------------------------------------------------ */

#define P(a, s) PERF_MEM_S(a, s)
#define LN(x) P(LVLNUM, x)
#define REM P(REMOTE, REMOTE)
#define OP_LH (P(OP, LOAD) | P(LVL, HIT))

static int ds_is(uint64_t ds, unsigned level, unsigned hit)
{
    unsigned l = 99, h = 99;
    hmc_datasrc_decode(ds, &l, &h);
    return l == level && h == hit;
}

static void test_datasrc(void)
{
    /* Intel (ds.c pebs_data_source[]) */
    CHECK(ds_is(OP_LH | P(LVL, L1) | LN(L1) | P(SNOOP, NONE), HMS_LVL_L1, 1));
    CHECK(ds_is(OP_LH | P(LVL, LFB) | LN(LFB) | P(SNOOP, NONE), HMS_LVL_LFB, 1));
    CHECK(ds_is(OP_LH | P(LVL, L2) | LN(L2) | P(SNOOP, NONE), HMS_LVL_L2, 1));
    CHECK(ds_is(OP_LH | P(LVL, L3) | LN(L3) | P(SNOOP, NONE), HMS_LVL_L3, 1));
    /* local DRAM: an L3 miss served by local memory ("Local RAM hit") */
    CHECK(ds_is(OP_LH | P(LVL, LOC_RAM) | LN(RAM) | P(SNOOP, NONE) | P(SNOOP, MISS),
                HMS_LVL_LOCAL_RAM, 1));
    /* 0x00 "unknown L3": missed the L3, source unknown */
    CHECK(ds_is(P(OP, LOAD) | P(LVL, MISS) | LN(L3) | P(SNOOP, NA), HMS_LVL_L3, 2));
    CHECK(ds_is(OP_LH | P(LVL, REM_RAM1) | LN(RAM) | REM | P(SNOOP, NONE),
                HMS_LVL_REMOTE_RAM, 1));
    CHECK(ds_is(OP_LH | P(LVL, REM_RAM1) | REM | LN(L3) | P(SNOOP, HIT),   /* 0x0b */
                HMS_LVL_REMOTE_RAM, 1));
    CHECK(ds_is(OP_LH | P(LVL, REM_CCE1) | REM | LN(L3) | P(SNOOP, HITM),  /* 0x09 */
                HMS_LVL_REMOTE_CACHE, 1));
    CHECK(ds_is(OP_LH | LN(ANY_CACHE) | REM | P(SNOOPX, FWD), HMS_LVL_REMOTE_CACHE, 1));
    CHECK(ds_is(OP_LH | LN(PMEM) | P(SNOOP, HIT), HMS_LVL_PMEM, 1));   /* Optane */
    CHECK(ds_is(OP_LH | LN(PMEM) | REM | P(SNOOP, HIT), HMS_LVL_PMEM, 1));
    CHECK(ds_is(OP_LH | LN(L4) | P(SNOOP, HIT), HMS_LVL_L3, 1));
    CHECK(ds_is(OP_LH | P(LVL, IO) | LN(NA) | P(SNOOP, NONE), HMS_LVL_IO, 1));
    CHECK(ds_is(OP_LH | P(LVL, UNC) | LN(NA) | P(SNOOP, NONE), HMS_LVL_UNCACHED, 1));
    /* pre-Sapphire Rapids precise store that missed L1 */
    CHECK(ds_is(P(OP, STORE) | P(LVL, MISS) | P(LVL, L1), HMS_LVL_L1, 2));
    /* legacy bits only */
    CHECK(ds_is(P(LVL, HIT) | P(LVL, L2), HMS_LVL_L2, 1));
    CHECK(ds_is(P(LVL, HIT) | P(LVL, REM_CCE2), HMS_LVL_REMOTE_CACHE, 1));
    /* AMD IBS (ibs.c g_zen4_data_src[], with L(x) = LVL x | LVL HIT) */
    CHECK(ds_is(P(OP, LOAD) | P(LVL, L3) | P(LVL, HIT) | LN(L3), HMS_LVL_L3, 1));
    CHECK(ds_is(P(OP, LOAD) | P(LVL, REM_CCE1) | P(LVL, HIT) | LN(ANY_CACHE) | REM |
                    P(HOPS, 0), HMS_LVL_L3, 1));   /* another CCX, same node */
    CHECK(ds_is(P(OP, LOAD) | P(LVL, REM_CCE2) | P(LVL, HIT) | LN(ANY_CACHE) | REM |
                    P(HOPS, 1), HMS_LVL_REMOTE_CACHE, 1));
    CHECK(ds_is(P(OP, LOAD) | P(LVL, REM_RAM1) | P(LVL, HIT) | LN(RAM) | REM | P(HOPS, 1),
                HMS_LVL_REMOTE_RAM, 1));
    CHECK(ds_is(P(OP, LOAD) | LN(CXL), HMS_LVL_CXL, 0));   /* IBS "extension memory" */
    CHECK(ds_is(P(OP, LOAD) | LN(CXL) | REM | P(HOPS, 1), HMS_LVL_CXL, 0));
    CHECK(ds_is(P(OP, LOAD) | P(LVL, UNC) | P(LVL, HIT) | (0x08ull << PERF_MEM_LVLNUM_SHIFT),
                HMS_LVL_UNCACHED, 1));
    /* unknown: perf's PERF_MEM_NA default, and nothing at all */
    CHECK(ds_is(P(OP, NA) | P(LVL, NA) | P(SNOOP, NA) | P(LOCK, NA) | P(TLB, NA),
                HMS_LVL_UNKNOWN, 0));
    CHECK(ds_is(0, HMS_LVL_UNKNOWN, 0));
}

/* ---- synthetic rings ----------------------------------------------------- */

#define DSZ 4096u
#define ST_STRUCT (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | \
                   PERF_SAMPLE_WEIGHT_STRUCT | PERF_SAMPLE_DATA_SRC)

struct sink {
    struct hmr_sample s[32];
    int n;
};

static void collect(const struct hmr_sample *s, void *arg)
{
    struct sink *k = arg;
    if (k->n < 32)
        k->s[k->n++] = *s;
}

struct fake {
    void *base;
    struct perf_event_mmap_page *pg;
    struct hmc_perf_ring r;
};

static int fake_init(struct fake *f, int kind, int store, uint64_t st, uint64_t start)
{
    f->base = mmap(NULL, 4096 + DSZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (f->base == MAP_FAILED)
        return -1;
    f->pg = f->base;
    f->pg->data_offset = 4096;
    f->pg->data_size = DSZ;
    f->pg->data_head = f->pg->data_tail = start;
    return hmc_perf_ring_init(&f->r, f->base, 4096 + DSZ, kind, store, st, 1);
}

/* Append a record of n u64 words (words[0] is the header) at data_head. */
static void put_rec(struct fake *f, const uint64_t *words, size_t n)
{
    unsigned char *d = (unsigned char *)f->base + 4096;
    for (size_t i = 0; i < n; i++)
        memcpy(d + ((f->pg->data_head + 8 * i) & (DSZ - 1)), &words[i], 8);
    f->pg->data_head += 8 * n;
}

static uint64_t hdr(uint32_t type, uint16_t misc, uint16_t size)
{
    struct perf_event_header h = { type, misc, size };
    uint64_t v;
    memcpy(&v, &h, 8);
    return v;
}

static void put_sample(struct fake *f, uint16_t misc, uint64_t ip, uint64_t t, uint64_t addr,
                       uint64_t w, uint64_t ds)
{
    uint64_t rec[7] = { hdr(PERF_RECORD_SAMPLE, misc, 56), ip, 1234ull << 32 | 1235, t, addr,
                        w, ds };
    put_rec(f, rec, 7);
}

#define USR PERF_RECORD_MISC_USER
#define DS_L1 (OP_LH | P(LVL, L1) | LN(L1) | P(SNOOP, NONE))
#define DS_L3 (OP_LH | P(LVL, L3) | LN(L3) | P(SNOOP, NONE))
#define DS_RAM (OP_LH | P(LVL, LOC_RAM) | LN(RAM) | P(SNOOP, NONE))
#define AUX(l, h) ((uint32_t)(l) << HMS_LEVEL_SHIFT | (uint32_t)(h) << HMS_HIT_SHIFT)

static void test_ring_samples(void)
{
    struct fake f;
    struct sink k = { .n = 0 };
    CHECK(fake_init(&f, HMS_SRC_PEBS, 0, ST_STRUCT, 0) == 0);
    /* weight struct: var1_dw = 412 cycles, var2_w / var3_w must be ignored */
    put_sample(&f, USR, 0x401000, 1000, 0x7f0000001000, 7ull << 48 | 9ull << 32 | 412, DS_RAM);
    put_sample(&f, USR, 0x401008, 2000, 0x7f0000002040, 4, DS_L1);
    put_sample(&f, USR, 0x401010, 3000, 0, 45, DS_L3);   /* no data address */
    CHECK(hmc_perf_drain(&f.r, collect, &k) == 3 && k.n == 3);
    struct hmr_sample *s = k.s;
    CHECK(s[0].h.type == HMR_SAMPLE && s[0].h.kind == HMS_SRC_PEBS);
    CHECK(s[0].h.len8 == sizeof(struct hmr_sample) / 8);
    CHECK(s[0].h.aux == (HMS_ADDR_OK | HMS_TIME_NS | AUX(HMS_LVL_LOCAL_RAM, 1)));
    CHECK(s[0].t == 1000 && s[0].ip == 0x401000 && s[0].addr == 0x7f0000001000);
    CHECK(s[0].weight == 412 && s[0].data_src == DS_RAM);
    CHECK(s[1].h.aux == (HMS_ADDR_OK | HMS_TIME_NS | AUX(HMS_LVL_L1, 1)));
    CHECK(s[1].t == 2000 && s[1].ip == 0x401008 && s[1].addr == 0x7f0000002040);
    CHECK(s[1].weight == 4 && s[1].data_src == DS_L1);
    CHECK(s[2].h.aux == (HMS_TIME_NS | AUX(HMS_LVL_L3, 1)) && s[2].addr == 0);
    CHECK(s[2].weight == 45 && s[2].t == 3000);
    CHECK(f.pg->data_tail == f.pg->data_head && f.pg->data_tail == 3 * 56);
    CHECK(f.r.n_samples == 3 && f.r.n_corrupt == 0);
    /* nothing new: nothing emitted, tail unchanged */
    CHECK(hmc_perf_drain(&f.r, collect, &k) == 0 && k.n == 3 && f.pg->data_tail == 168);
    munmap(f.base, 4096 + DSZ);
}

static void test_ring_wrap_lost_other(void)
{
    struct fake f;
    struct sink k = { .n = 0 };
    uint64_t start = 10 * DSZ - 24;   /* free-running counters, 24 bytes before the end */
    CHECK(fake_init(&f, HMS_SRC_PEBS, 1, ST_STRUCT, start) == 0);
    put_sample(&f, USR, 0x402000, 5000, 0x600010, 0, DS_L1);          /* wraps */
    uint64_t lost[5] = { hdr(PERF_RECORD_LOST, 0, 40), 77, 12, 1234ull << 32 | 1235, 5500 };
    put_rec(&f, lost, 5);
    uint64_t unknown[4] = { hdr(99, 0, 32), 1, 2, 3 };
    put_rec(&f, unknown, 4);
    uint64_t thr[5] = { hdr(PERF_RECORD_THROTTLE, 0, 40), 1, 2, 3, 4 };
    put_rec(&f, thr, 5);
    uint64_t lost2[4] = { hdr(13 /* PERF_RECORD_LOST_SAMPLES */, 0, 32), 3, 0, 6000 };
    put_rec(&f, lost2, 4);
    uint64_t lost3[3] = { hdr(PERF_RECORD_LOST, 0, 24), 77, 2 };   /* no sample_id */
    put_rec(&f, lost3, 3);
    CHECK(hmc_perf_drain(&f.r, collect, &k) == 4 && k.n == 4);
    struct hmr_sample *s = k.s;
    CHECK(s[0].h.aux == (HMS_STORE | HMS_ADDR_OK | HMS_TIME_NS | AUX(HMS_LVL_L1, 1)));
    CHECK(s[0].ip == 0x402000 && s[0].t == 5000 && s[0].addr == 0x600010);
    CHECK(s[0].data_src == DS_L1 && s[0].weight == 0);
    CHECK(s[1].h.type == HMR_SAMPLE && s[1].h.aux == (HMS_LOST | HMS_STORE | HMS_TIME_NS));
    CHECK(s[1].weight == 12 && s[1].t == 5500 && s[1].ip == 0 && s[1].addr == 0);
    CHECK(s[2].h.aux == (HMS_LOST | HMS_STORE | HMS_TIME_NS) && s[2].weight == 3);
    CHECK(s[2].t == 6000);
    CHECK(s[3].weight == 2 && s[3].t == 6000);   /* the last time seen */
    CHECK(f.r.n_lost == 17 && f.r.n_other == 1 && f.r.n_throttle == 1 && f.r.n_corrupt == 0);
    CHECK(f.pg->data_tail == f.pg->data_head && f.pg->data_tail == start + 56 + 40 + 32 + 40 +
                                                                        32 + 24);
    munmap(f.base, 4096 + DSZ);
}

static void test_ring_ibs_weight(void)
{
    struct fake f;
    struct sink k = { .n = 0 };
    uint64_t st = (ST_STRUCT & ~(uint64_t)PERF_SAMPLE_WEIGHT_STRUCT) | PERF_SAMPLE_WEIGHT;
    CHECK(fake_init(&f, HMS_SRC_IBS, 0, st, 0) == 0);
    f.r.user_only = 1;
    uint64_t ds_st = P(OP, STORE) | P(LVL, L1) | P(LVL, HIT) | LN(L1);
    uint64_t ds_na = P(OP, NA) | P(LVL, NA) | P(SNOOP, NA) | P(LOCK, NA) | P(TLB, NA);
    put_sample(&f, USR, 0x403000, 10, 0x500000, 250, DS_RAM);
    put_sample(&f, PERF_RECORD_MISC_KERNEL, 0xffffffff81000000, 11, 0, 0, ds_na);
    put_sample(&f, USR, 0x403004, 12, 0x500008, 0, ds_st);
    put_sample(&f, USR, 0x403008, 13, 0, 0, ds_na);
    CHECK(hmc_perf_drain(&f.r, collect, &k) == 3 && k.n == 3 && f.r.n_kernel == 1);
    CHECK(k.s[0].h.kind == HMS_SRC_IBS && k.s[0].weight == 250);
    CHECK(k.s[0].h.aux == (HMS_ADDR_OK | HMS_TIME_NS | AUX(HMS_LVL_LOCAL_RAM, 1)));
    CHECK(k.s[1].h.aux == (HMS_STORE | HMS_ADDR_OK | HMS_TIME_NS | AUX(HMS_LVL_L1, 1)));
    CHECK(k.s[2].h.aux == (HMS_NO_MEMOP | HMS_TIME_NS) && k.s[2].ip == 0x403008);
    CHECK(f.pg->data_tail == 4 * 56);
    munmap(f.base, 4096 + DSZ);
}

/* One bad header after a good record: the good one is emitted, the bad one
 * counted, the tail moved to the head, nothing read past it. */
static void corrupt_case(uint64_t bad_hdr, size_t extra_words, uint64_t head_adjust)
{
    int aligned = head_adjust % 8 == 0;   /* a kernel's data_head always is */
    struct fake f;
    struct sink k = { .n = 0 };
    CHECK(fake_init(&f, HMS_SRC_PEBS, 0, ST_STRUCT, 0) == 0);
    put_sample(&f, USR, 1, 2, 3, 4, DS_L1);
    uint64_t words[8] = { bad_hdr, 0, 0, 0, 0, 0, 0, 0 };
    put_rec(&f, words, 1 + extra_words);
    f.pg->data_head -= head_adjust;
    CHECK(hmc_perf_drain(&f.r, collect, &k) == 1 && k.n == 1 && k.s[0].ip == 1);
    CHECK(f.r.n_corrupt == 1 && f.pg->data_tail == f.pg->data_head);
    /* the ring works again for records the kernel writes next */
    put_sample(&f, USR, 9, 2, 3, 4, DS_L1);
    if (aligned) {
        CHECK(hmc_perf_drain(&f.r, collect, &k) == 1 && k.n == 2 && k.s[1].ip == 9);
        CHECK(f.r.n_corrupt == 1);
    }
    munmap(f.base, 4096 + DSZ);
}

static void test_ring_corrupt(void)
{
    corrupt_case(hdr(PERF_RECORD_SAMPLE, USR, 0), 1, 0);     /* size 0 */
    corrupt_case(hdr(PERF_RECORD_SAMPLE, USR, 20), 2, 0);    /* not a multiple of 8 */
    corrupt_case(hdr(PERF_RECORD_SAMPLE, USR, 56), 4, 0);    /* 56 claimed, 40 published */
    corrupt_case(hdr(PERF_RECORD_SAMPLE, USR, 16), 1, 0);    /* too short for the fields */
    corrupt_case(hdr(PERF_RECORD_LOST, 0, 16), 1, 0);        /* too short for a LOST */
    corrupt_case(hdr(PERF_RECORD_SAMPLE, USR, 56), 1, 4);    /* head inside a header */

    struct fake f;   /* head more than a ring ahead of tail */
    CHECK(fake_init(&f, HMS_SRC_PEBS, 0, ST_STRUCT, 0) == 0);
    f.pg->data_head = 2 * DSZ;
    CHECK(hmc_perf_drain(&f.r, NULL, NULL) == 0 && f.r.n_corrupt == 1);
    CHECK(f.pg->data_tail == 2 * DSZ);
    munmap(f.base, 4096 + DSZ);

    /* layouts the decoder refuses */
    struct hmc_perf_ring r;
    CHECK(fake_init(&f, HMS_SRC_PEBS, 0, ST_STRUCT, 0) == 0);
    CHECK(hmc_perf_ring_init(&r, f.base, 4096 + DSZ, HMS_SRC_PEBS, 0,
                             ST_STRUCT | PERF_SAMPLE_CALLCHAIN, 1) == -EINVAL);
    CHECK(hmc_perf_ring_init(&r, f.base, 4096 + DSZ, HMS_SRC_PEBS, 0,
                             ST_STRUCT | PERF_SAMPLE_WEIGHT, 1) == -EINVAL);
    f.pg->data_size = 3000;
    CHECK(hmc_perf_ring_init(&r, f.base, 4096 + DSZ, HMS_SRC_PEBS, 0, ST_STRUCT, 1) == -EINVAL);
    f.pg->data_size = 2 * DSZ;
    CHECK(hmc_perf_ring_init(&r, f.base, 4096 + DSZ, HMS_SRC_PEBS, 0, ST_STRUCT, 1) == -EINVAL);
    munmap(f.base, 4096 + DSZ);
}

/* ---- this machine -------------------------------------------------------- */

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static void test_real_machine(void)
{
    pid_t tid = (pid_t)syscall(SYS_gettid);
    int no_pmu = !exists("/sys/bus/event_source/devices/cpu") &&
                 !exists("/sys/bus/event_source/devices/cpu_core") &&
                 !exists("/sys/bus/event_source/devices/ibs_op");
    int fds = count_fds();
    struct hmc_perf_caps c;
    struct hmc_perf_ring rings[HMC_PERF_MAX_RINGS];
    char why[512];
    int have = hmc_perf_detect(NULL, &c, why, sizeof(why));
    if (no_pmu) {
        CHECK(have == 0 && strstr(why, "PEBS: ") && strstr(why, "IBS: "));
        CHECK(hmc_perf_open(&c, HMS_SRC_PEBS, 0, 0, tid, rings, HMC_PERF_MAX_RINGS) == -ENODEV);
        CHECK(hmc_perf_open(&c, HMS_SRC_IBS, 0, 0, tid, rings, HMC_PERF_MAX_RINGS) == -ENODEV);
    }
    /* Force the syscalls with caps from fake trees: type 4 is PERF_TYPE_RAW
     * (ENOENT without a core PMU), 11 a PMU type this machine does not have. */
    hmc_perf_detect(tree("spr"), &c, NULL, 0);
    int rc = hmc_perf_open(&c, HMS_SRC_PEBS, 0, 0, tid, rings, HMC_PERF_MAX_RINGS);
    CHECK(rc != 0 && rc > -4096);
    if (rc > 0)
        hmc_perf_close(rings, rc);
    else if (no_pmu)
        CHECK(rc == -ENOENT);
    hmc_perf_detect(tree("zen4"), &c, NULL, 0);
    rc = hmc_perf_open(&c, HMS_SRC_IBS, 0, 0, tid, rings, HMC_PERF_MAX_RINGS);
    CHECK(rc != 0 && rc > -4096);
    if (rc > 0)
        hmc_perf_close(rings, rc);
    else if (no_pmu)
        CHECK(rc < 0);
    CHECK(hmc_perf_open(&c, HMS_SRC_IBS, 0, 0, tid, rings, 0) == -EINVAL);
    CHECK(count_fds() == fds);   /* nothing leaked on the failure paths */
}

/* The open/mmap/drain path against the real kernel: caps whose "IBS" PMU is
 * the software PMU (type 1) and whose l3missonly term lands on config bit 1, so
 * the event is PERF_COUNT_SW_PAGE_FAULTS, sampled every 16th fault with the
 * faulting address. Same attr, ring and decoder as a real ibs_op event. */
struct faults {
    uint64_t lo, hi, t0, t1;
    int n, in_range, bad;
};

static void count_fault(const struct hmr_sample *s, void *arg)
{
    struct faults *f = arg;
    f->n++;
    /* under ASan the shadow pages fault too: those addresses are elsewhere */
    f->in_range += s->addr >= f->lo && s->addr < f->hi;
    f->bad += s->h.type != HMR_SAMPLE || s->h.kind != HMS_SRC_IBS || s->weight != 0 ||
              s->t < f->t0 || s->t > f->t1 ||
              s->h.aux != (HMS_ADDR_OK | HMS_TIME_NS | HMS_NO_MEMOP);   /* PERF_MEM_NA */
}

static void test_kernel_ring(void)
{
    struct hmc_perf_caps c;
    memset(&c, 0, sizeof(c));
    c.ibs = 1;
    c.ibs_type = PERF_TYPE_SOFTWARE;
    c.ibs_want_l3missonly = 1;
    CHECK(hmc_perf_parse_format("config:1", &c.ibs_l3missonly) == 0);
    c.ring_pages = 32;
    struct hmc_perf_ring r[HMC_PERF_MAX_RINGS];
    pid_t tid = (pid_t)syscall(SYS_gettid);
    int fds = count_fds();
    size_t len = 16384 * 4096ul;
    unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    if (m == MAP_FAILED)
        return;
    madvise(m, len, MADV_NOHUGEPAGE);   /* one fault per 4 KiB page */
    int n = hmc_perf_open(&c, HMS_SRC_IBS, 16, 0, tid, r, HMC_PERF_MAX_RINGS);
    if (n == -EACCES || n == -EPERM || n == -ENOSYS) {
        printf("SKIP test_kernel_ring: perf_event_open: %d\n", n);
        munmap(m, len);
        return;
    }
    CHECK(n == 1);
    if (n != 1) {
        munmap(m, len);
        return;
    }
    CHECK(r[0].user_only == 0 && r[0].data_size == 32 * 4096 && r[0].fd >= 0);
    struct faults f = { (uint64_t)(uintptr_t)m, (uint64_t)(uintptr_t)m + len, hm_now_ns(), 0,
                        0, 0, 0 };
    for (size_t i = 0; i < len; i += 4096)
        m[i] = 1;
    f.t1 = hm_now_ns();
    size_t got = hmc_perf_drain(&r[0], count_fault, &f);
    CHECK(got == (size_t)f.n && r[0].n_samples == got && r[0].n_corrupt == 0);
    CHECK(f.in_range >= 1000 && f.in_range <= 1030 && f.bad == 0);   /* 16384 / 16 */
    struct perf_event_mmap_page *pg = r[0].map;
    CHECK(pg->data_tail == pg->data_head && pg->data_head > 0);
    hmc_perf_close(r, n);
    CHECK(r[0].fd == -1 && count_fds() == fds);
    munmap(m, len);
}

/* Page-fault rings (hmc_perf_open_faults): 32-byte records {header, pid/tid, time,
 * addr}; every sample weighs the ring's period; LOST records keep their count. */
static void test_fault_ring_decode(void)
{
    struct fake f;
    struct sink k = { .n = 0 };
    uint64_t st = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR;
    CHECK(fake_init(&f, HMS_SRC_FAULT, 0, st, 4080) == 0);   /* the first record wraps */
    f.r.period = 61;
    uint64_t a[4] = { hdr(PERF_RECORD_SAMPLE, USR, 32), 1234ull << 32 | 1235, 5000,
                      0x7f0000003008 };
    uint64_t b[4] = { hdr(PERF_RECORD_SAMPLE, USR, 32), 1234ull << 32 | 1235, 6000,
                      0x7f0000004000 };
    /* LOST {id, lost} + sample_id {tid, time} */
    uint64_t lost[5] = { hdr(PERF_RECORD_LOST, 0, 40), 7, 3, 1234ull << 32 | 1235, 7000 };
    put_rec(&f, a, 4);
    put_rec(&f, b, 4);
    put_rec(&f, lost, 5);
    CHECK(hmc_perf_drain(&f.r, collect, &k) == 3 && k.n == 3);
    CHECK(k.s[0].h.kind == HMS_SRC_FAULT && k.s[0].h.aux == (HMS_ADDR_OK | HMS_TIME_NS));
    CHECK(k.s[0].t == 5000 && k.s[0].addr == 0x7f0000003008 && k.s[0].weight == 61);
    CHECK(k.s[0].ip == 0 && k.s[0].data_src == 0);
    CHECK(k.s[1].t == 6000 && k.s[1].addr == 0x7f0000004000 && k.s[1].weight == 61);
    CHECK((k.s[2].h.aux & HMS_LOST) && k.s[2].weight == 3 && k.s[2].t == 7000);
    CHECK(f.r.n_samples == 2 && f.r.n_lost == 3 && f.r.n_corrupt == 0);
    munmap(f.base, 4096 + DSZ);
}

/* The real event: 64 MiB touched one 4 KiB page at a time, one sample every 16th
 * minor fault, each with its address in the region and a weight of 16. */
static void fault_sample(const struct hmr_sample *s, void *arg)
{
    struct faults *f = arg;
    f->n++;
    f->in_range += s->addr >= f->lo && s->addr < f->hi;
    f->bad += s->h.type != HMR_SAMPLE || s->h.kind != HMS_SRC_FAULT || s->weight != 16 ||
              s->t < f->t0 || s->t > f->t1 || s->h.aux != (HMS_ADDR_OK | HMS_TIME_NS);
}

static void test_fault_ring_kernel(void)
{
    struct hmc_perf_ring r;
    int fds = count_fds();
    size_t len = 16384 * 4096ul;
    unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    if (m == MAP_FAILED)
        return;
    madvise(m, len, MADV_NOHUGEPAGE);
    int rc = hmc_perf_open_faults(16, (pid_t)syscall(SYS_gettid), 32, &r);
    if (rc == -EACCES || rc == -EPERM || rc == -ENOSYS) {
        printf("SKIP test_fault_ring_kernel: perf_event_open: %d\n", rc);
        munmap(m, len);
        return;
    }
    CHECK(rc == 0 && r.kind == HMS_SRC_FAULT && r.period == 16 && r.fd >= 0);
    if (rc != 0) {
        munmap(m, len);
        return;
    }
    struct faults f = { (uint64_t)(uintptr_t)m, (uint64_t)(uintptr_t)m + len, hm_now_ns(), 0,
                        0, 0, 0 };
    for (size_t i = 0; i < len; i += 4096)
        m[i] = 1;
    f.t1 = hm_now_ns();
    size_t got = hmc_perf_drain(&r, fault_sample, &f);
    CHECK(got == (size_t)f.n && r.n_lost == 0 && r.n_corrupt == 0);
    CHECK(f.in_range >= 1000 && f.in_range <= 1030 && f.bad == 0);   /* 16384 / 16 */
    hmc_perf_close(&r, 1);
    CHECK(r.fd == -1 && count_fds() == fds);
    CHECK(hmc_perf_open_faults(16, 0, 32, NULL) == -EINVAL);
    munmap(m, len);
}

int main(void)
{
    snprintf(g_tmp, sizeof(g_tmp), "/tmp/hmt-perf-%d", (int)getpid());
    mkdir(g_tmp, 0755);
    RUN(test_format);
    RUN(test_detect_intel);
    RUN(test_detect_spr_hybrid);
    RUN(test_detect_unusable);
    RUN(test_detect_amd);
    RUN(test_datasrc);
    RUN(test_ring_samples);
    RUN(test_ring_wrap_lost_other);
    RUN(test_ring_ibs_weight);
    RUN(test_ring_corrupt);
    RUN(test_real_machine);
    RUN(test_kernel_ring);
    RUN(test_fault_ring_decode);
    RUN(test_fault_ring_kernel);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", g_tmp);
    if (system(cmd) != 0)
        return 1;
    HMT_END();
}
