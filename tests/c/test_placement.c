/* Tests of interpose/hmi_placement.c, the interposer's placement.txt v1/v2 parser:
 * the docs example, a file written by core.placement, the refusals with their
 * line numbers, the reader's quirks it must share, and a 10 MB input. */
#include "hmt.h"
#include "hm_modmap.h"
#include "hmi_placement.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef HMT_DATA_DIR
#error "HMT_DATA_DIR must name tests/c/data"
#endif

/* Lines 1-5 of a valid file; cases append from line 6. */
#define HEAD "# hmtune placement v1\ntier fast memkind:MEMKIND_HBW 1024\n" \
             "tier slow default unlimited\ndepth 4\nsize-window 0 100\n"

static int parse_lit(const char *s, size_t n, struct hmi_placement *p, char *err)
{
    return hmi_placement_parse(s, n, p, err, 256);
}

/* Parse a file that must be accepted: 1, or 0 with the refusal printed and counted. */
static int parsed(const char *s, size_t n, struct hmi_placement *p)
{
    char err[256];
    int rc = parse_lit(s, n, p, err);
    CHECK(rc == 0);
    if (rc)
        fprintf(stderr, "  %s\n", err);
    return rc == 0;
}

static const char *modpath(const struct hmi_placement *p, const struct hmi_site *s, unsigned k)
{
    return p->modules[s->frames[k].module].path;
}

static void refuse(const char *text, size_t len, unsigned line, const char *needle)
{
    struct hmi_placement p;
    char err[256], want[32];
    int rc = parse_lit(text, len, &p, err);
    snprintf(want, sizeof want, "line %u: ", line);
    CHECK(rc == -1);
    CHECK(p.arena == NULL && p.nsites == 0);
    if (strncmp(err, want, strlen(want)) != 0 || (needle && !strstr(err, needle))) {
        fprintf(stderr, "  got \"%s\", want \"%s...%s\"\n", err, want, needle ? needle : "");
        hmt_failed_checks++;
    }
}
#define REFUSE(lit, line, needle) refuse(lit, sizeof(lit) - 1, line, needle)

static void accept(const char *text, size_t len, uint32_t nsites)
{
    struct hmi_placement p;
    char err[256];
    int rc = parse_lit(text, len, &p, err);
    if (rc != 0)
        fprintf(stderr, "  refused: %s\n", err);
    CHECK(rc == 0 && p.nsites == nsites);
    hmi_placement_free(&p);
}
#define ACCEPT(lit, n) accept(lit, sizeof(lit) - 1, n)

static void test_docs_example(void)
{
    struct hmi_placement p;
    char err[256];
    int rc = hmi_placement_load(HMT_DATA_DIR "/placement_doc.txt", &p, err, sizeof err);
    CHECK(rc == 0);
    if (rc)
        return;
    CHECK(p.ntiers == 2);
    CHECK(!strcmp(p.tiers[0].name, "fast") && !strcmp(p.tiers[0].backend, "memkind:MEMKIND_HBW"));
    CHECK(p.tiers[0].capacity == 268435456 && !p.tiers[0].unlimited && p.tiers[0].line == 3);
    CHECK(!strcmp(p.tiers[1].name, "default") && !strcmp(p.tiers[1].backend, "default"));
    CHECK(p.tiers[1].unlimited && p.tiers[1].line == 4);
    CHECK(p.depth == 4 && p.size_min == 16384 && p.size_max == 16777216);
    CHECK(p.nsites == 1 && p.nmodules == 2);
    const struct hmi_site *s = &p.sites[0];
    CHECK(s->tier == 0 && s->nframes == 2 && s->line == 7);
    CHECK(!strcmp(modpath(&p, s, 0), "/path/app") && s->frames[0].offset == 0x1188);
    CHECK(!strcmp(modpath(&p, s, 1), "/lib/x86_64-linux-gnu/libc.so.6"));
    CHECK(s->frames[1].offset == 0x2724a);
    CHECK(p.modules[0].len == 9 &&
          p.modules[0].hash == hm_fnv1a("/path/app", 9, 0xcbf29ce484222325ull));
    hmi_placement_free(&p);
    CHECK(p.arena == NULL);
}

/* tests/c/data/placement_writer.txt came from hmtune.core.placement.write_placement. */
static void test_python_writer_file(void)
{
    struct hmi_placement p;
    char err[256];
    int rc = hmi_placement_load(HMT_DATA_DIR "/placement_writer.txt", &p, err, sizeof err);
    if (rc)
        fprintf(stderr, "  %s\n", err);
    CHECK(rc == 0);
    if (rc)
        return;
    CHECK(p.ntiers == 3 && !strcmp(p.tiers[0].backend, "numa:8-15"));
    CHECK(p.tiers[0].capacity == 17179869184ull && !strcmp(p.tiers[1].name, "huge.2M"));
    CHECK(p.tiers[2].unlimited && !strcmp(p.tiers[2].backend, "memkind:MEMKIND_DAX_KMEM"));
    CHECK(p.depth == 3 && p.size_min == 4096 && p.size_max == 67108864);
    CHECK(p.nsites == 4 && p.nmodules == 4);   /* stream and libc interned once */
    CHECK(p.sites[1].tier == 1 && p.sites[1].nframes == 3);
    CHECK(p.sites[1].frames[1].module == p.sites[0].frames[0].module);
    CHECK(p.sites[1].frames[2].module == p.sites[0].frames[1].module);
    CHECK(p.sites[2].tier == 0 && p.sites[2].nframes == 1 && p.sites[2].line == 10);
    CHECK(p.sites[3].tier == 2 && !strcmp(modpath(&p, &p.sites[3], 0), "/opt/my app/bin/stream"));
    CHECK(p.sites[3].frames[0].offset == 0xffffffffffffull);
    hmi_placement_free(&p);
}

/* tests/c/data/placement_writer_v2.txt: the same writer with a split site. */
static void test_python_writer_v2_file(void)
{
    struct hmi_placement p;
    char err[256];
    int rc = hmi_placement_load(HMT_DATA_DIR "/placement_writer_v2.txt", &p, err, sizeof err);
    if (rc)
        fprintf(stderr, "  %s\n", err);
    CHECK(rc == 0);
    if (rc)
        return;
    CHECK(p.version == 2 && p.ntiers == 2 && p.nsites == 2 && p.nsplit == 1);
    CHECK(p.sites[0].nranges == 2 && p.sites[0].nframes == 2 && p.sites[0].tier == 0);
    CHECK(p.sites[0].ranges[0].start == 0 && p.sites[0].ranges[0].end == 2097152);
    CHECK(p.sites[0].ranges[1].start == 6291456 && p.sites[0].ranges[1].end == 10485760);
    CHECK(p.sites[1].nranges == 0 && !strcmp(modpath(&p, &p.sites[1], 0), "/opt/my app/bin/stream"));
    hmi_placement_free(&p);
}

static void test_crlf_and_comments(void)
{
    static const char t[] = "# hmtune placement v1  \r\n\r\n   # indented comment\r\n"
                            "#no space\r\ntier fast thp 8 # c\r\ntier slow default unlimited\r\n"
                            "depth 2\t# tab before the comment\r\nsize-window 1 1\r\n"
                            "site fast a+0x1 > b+0x2\r\nsite slow a+0x1\r";
    struct hmi_placement p;
    char err[256];
    CHECK(parse_lit(t, sizeof t - 1, &p, err) == 0);
    CHECK(p.ntiers == 2 && p.tiers[0].capacity == 8 && p.depth == 2 && p.nsites == 2);
    CHECK(p.sites[0].line == 9 && p.sites[1].line == 10 && p.nmodules == 2);
    hmi_placement_free(&p);
}

/* What hmtune.core.placement.read_placement accepts, quirks included. */
static void test_reader_quirks(void)
{
    ACCEPT("# hmtune placement v01\ntier s default unlimited\ndepth 1\nsize-window 0 0\n", 0);
    ACCEPT(HEAD "site fast    a+0x1\n", 1);                  /* chain is stripped */
    ACCEPT(HEAD "site fast a+0x1 > b+0x2\nsite fast a+0x1 >  b+0x2\n", 2); /* raw text differs */
    ACCEPT(HEAD "site fast a+0x1+0x2\n", 1);                /* module "a+0x1" */
    ACCEPT(HEAD "site fast a b+0x1\n", 1);                  /* space inside a path */
    ACCEPT("# hmtune placement v1\ntier s default unlimited\nsite s a+0x1\n"
           "size-window 0 0\ndepth 1\n", 1);                 /* depth after sites */
    ACCEPT(HEAD "site fast a+0x1\fsite slow b+0x1\v", 2);    /* Python's other breaks */
    ACCEPT("# hmtune placement v1\ntier a numa:0,2,4-7 1\ntier b numa:007-7 1\n"
           "tier c default unlimited\ndepth 1\nsize-window 0 0\n", 0);
}

static void test_refusals(void)
{
    REFUSE("", 1, "not an hmtune placement file");
    REFUSE("\n", 1, "not an hmtune placement file");
    REFUSE("tier slow default unlimited\n", 1, "not an hmtune placement file");
    REFUSE("# hmtune placement\n", 1, "not an hmtune");
    REFUSE("# hmtune placement v1x\n", 1, "not an hmtune");
    REFUSE("# hmtune placement v4\ntier s default unlimited\n", 1, "version '4'");
    REFUSE("# hmtune placement v0\n", 1, "version '0'");
    REFUSE("# hmtune placement v99999999999999999999999\n", 1, "version");
    REFUSE(HEAD "bogus 1\n", 6, "unknown keyword 'bogus'");
    REFUSE(HEAD " site fast a+0x1\n", 6, "unknown keyword ''");
    REFUSE(HEAD "site\tfast a+0x1\n", 6, "unknown keyword");
    REFUSE(HEAD "site mid a+0x1\n", 6, "undeclared tier 'mid'");
    REFUSE(HEAD "site fast\n", 6, "not module+0xHEX");
    REFUSE("# hmtune placement v1\ntier fast default 1024\ndepth 1\nsize-window 0 0\n",
           2, "must be unlimited");
    REFUSE("# hmtune placement v1\ntier a default unlimited\ntier b default unlimited\n",
           3, "only the last tier");
    REFUSE("# hmtune placement v1\ndepth 1\nsize-window 0 0\n", 4, "no tier lines");
    REFUSE("# hmtune placement v1\ntier s default unlimited\nsize-window 0 0\n", 4,
           "missing depth");
    REFUSE("# hmtune placement v1\ntier s default unlimited\ndepth 3\n", 4,
           "missing size-window");
    REFUSE(HEAD "tier late default unlimited\n", 6, "must come before");
    REFUSE("# hmtune placement v1\ntier a thp 1\ntier a default unlimited\n", 3, "twice");
    REFUSE("# hmtune placement v1\ntier f@st thp 1\n", 2, "tier name");
    REFUSE("# hmtune placement v1\ntier f memkind:hbw 1\n", 2, "backend 'memkind:hbw'");
    REFUSE("# hmtune placement v1\ntier f numa:5-3 1\n", 2, "backend");
    REFUSE("# hmtune placement v1\ntier f numa:1, 1\n", 2, "backend 'numa:1,'");
    REFUSE("# hmtune placement v1\ntier f ram 1\n", 2, "backend 'ram'");
    REFUSE("# hmtune placement v1\ntier f thp\n", 2, "expected 'tier");
    /* numbers */
    REFUSE("# hmtune placement v1\ntier f thp 12x\n", 2, "expected 'tier");
    REFUSE("# hmtune placement v1\ntier f thp -1\n", 2, "expected 'tier");
    REFUSE("# hmtune placement v1\ntier f thp 1K\n", 2, "expected 'tier");
    REFUSE("# hmtune placement v1\ntier f thp 0\n", 2, "> 0 bytes");
    REFUSE("# hmtune placement v1\ntier f thp 18446744073709551616\n", 2, "64 bits");
    REFUSE(HEAD "depth 5\n", 6, "one 'depth N'");
    REFUSE("# hmtune placement v1\ndepth 0\n", 2, "depth N");
    REFUSE("# hmtune placement v1\ndepth  4\n", 2, "depth N");
    REFUSE("# hmtune placement v1\ndepth 99999999999999999999\n", 2, "64 bits");
    REFUSE("# hmtune placement v1\nsize-window 5 4\n", 2, "MIN <= MAX");
    REFUSE("# hmtune placement v1\nsize-window 5\n", 2, "size-window MIN MAX");
    REFUSE("# hmtune placement v1\nsize-window 1 2 3\n", 2, "size-window MIN MAX");
    /* frames */
    REFUSE(HEAD "site fast app+0x1g\n", 6, "not module+0xHEX frames");
    REFUSE(HEAD "site fast app+0xAB\n", 6, "frames");           /* lower-case hex only */
    REFUSE(HEAD "site fast app+1234\n", 6, "frames");
    REFUSE(HEAD "site fast app+0x\n", 6, "frames");
    REFUSE(HEAD "site fast app!1234\n", 6, "frames");
    REFUSE(HEAD "site fast +0x1\n", 6, "frames");
    REFUSE(HEAD "site fast a>b+0x1\n", 6, "frames");
    REFUSE(HEAD "site fast a +0x1\n", 6, "frames");
    REFUSE(HEAD "site fast a#b+0x1\n", 6, "frames");
    REFUSE(HEAD "site fast a+0x1 >\n", 6, "frames");
    REFUSE(HEAD "site fast a+0x1 > > b+0x2\n", 6, "frames");
    REFUSE(HEAD "site fast a+0x1000000000000\n", 6, "48 bits");
    REFUSE(HEAD "site fast a+0x1 > b+0x2 > c+0x3 > d+0x4 > e+0x5\n", 6, "than depth 4");
    REFUSE(HEAD "site fast a+0x1\nsite slow b+0x1\nsite slow a+0x1   # again\n", 8,
           "already listed at line 6");
    /* bytes */
    REFUSE(HEAD "# a comment\0with a NUL\n", 6, "NUL");
    REFUSE("# hmtune placement v1\0\n", 1, "NUL");
}

static void test_too_many_frames(void)
{
    static char t[4096];
    size_t n = (size_t)snprintf(t, sizeof t, "# hmtune placement v1\ntier s default unlimited\n"
                                "depth 100\nsize-window 0 0\nsite s m+0x0");
    for (int i = 1; i < 64; i++)
        n += (size_t)snprintf(t + n, sizeof t - n, " > m+0x%x", i);
    struct hmi_placement p;
    char err[256];
    CHECK(parse_lit(t, n, &p, err) == 0 && p.sites[0].nframes == 64 && p.nmodules == 1);
    hmi_placement_free(&p);
    n += (size_t)snprintf(t + n, sizeof t - n, " > m+0x40\n");
    refuse(t, n, 5, "more frames than 64");
}

static void test_long_line(void)
{
    size_t head = sizeof HEAD - 1, n = head + HMI_LINE_MAX + 2;
    char *t = malloc(n);
    memcpy(t, HEAD, head);
    memset(t + head, 'x', HMI_LINE_MAX + 1);
    t[head] = '#';                                       /* a comment line */
    t[n - 1] = '\n';
    refuse(t, n, 6, "longer than 65536");               /* 65537 bytes */
    accept(t, n - 2, 0);                                 /* 65536 bytes */
    free(t);
}

/* 100k sites, about 10 MB: parses in well under a second, and free unmaps it all. */
static void test_large_input(void)
{
    size_t cap = 32u << 20, n = 0;
    char *t = malloc(cap);
    n += (size_t)snprintf(t, cap, "# hmtune placement v1\ntier fast numa:0-3 1073741824\n"
                          "tier slow default unlimited\ndepth 8\nsize-window 64 1048576\n");
    for (unsigned i = 0; i < 100000; i++)
        n += (size_t)snprintf(t + n, cap - n,
                              "site %s /opt/app/bin/solver-%u+0x%x > "
                              "/usr/lib/libstdc++.so.6+0x%x > /opt/app/libk.so+0x%x #%u\n",
                              i % 3 ? "fast" : "slow", i % 5000, i * 16, i, 0x1000 + i, i);
    CHECK(n > 10000000 && n < 11000000);
    struct hmi_placement p;
    char err[256];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = parse_lit(t, n, &p, err);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    if (rc)
        fprintf(stderr, "  %s\n", err);
    CHECK(rc == 0 && p.nsites == 100000 && p.nmodules == 5002);
    CHECK(s < 1.0);
    if (rc == 0) {
        CHECK(p.sites[99999].nframes == 3 && p.sites[99999].frames[2].offset == 0x1000 + 99999);
        void *arena = p.arena;
        size_t pg = (size_t)sysconf(_SC_PAGESIZE), size = p.arena_size;
        unsigned char vec[1];
        hmi_placement_free(&p);
        CHECK(p.arena == NULL && p.sites == NULL);
        /* every page of the arena is unmapped: mincore says ENOMEM for each */
        int mapped = 0;
        for (size_t off = 0; off < size; off += pg)
            if (mincore((char *)arena + off, pg, vec) == 0 || errno != ENOMEM)
                mapped++;
        CHECK(mapped == 0);
    }
    free(t);
}

static void test_load_errors(void)
{
    struct hmi_placement p;
    char err[256];
    CHECK(hmi_placement_load("/nonexistent/placement.txt", &p, err, sizeof err) == -1);
    CHECK(strstr(err, "cannot open") && strstr(err, "errno 2") && p.arena == NULL);
    char small[12];
    CHECK(hmi_placement_parse("nope", 4, &p, small, sizeof small) == -1);
    CHECK(strlen(small) == sizeof small - 1);          /* truncated, terminated */
    CHECK(hmi_placement_parse("nope", 4, &p, NULL, 0) == -1);
}

/* `program PATH` (optional, once): the program the placement was made for. */
static void test_program_line(void)
{
    struct hmi_placement p;
    char err[256];
    static const char t[] = HEAD "program   /opt/my app/bin/solver  # traced\nsite fast a+0x1\n";
    CHECK(parse_lit(t, sizeof t - 1, &p, err) == 0);
    CHECK(p.program && !strcmp(p.program, "/opt/my app/bin/solver") && p.nsites == 1);
    hmi_placement_free(&p);
    CHECK(parse_lit(HEAD, sizeof HEAD - 1, &p, err) == 0 && p.program == NULL);
    hmi_placement_free(&p);
    ACCEPT("# hmtune placement v1\nprogram /a\ntier s default unlimited\ndepth 1\n"
           "size-window 0 0\n", 0);
    REFUSE(HEAD "program /a\nprogram /a\n", 7, "one 'program PATH'");
    REFUSE(HEAD "program a.out\n", 6, "one 'program PATH'");
    REFUSE(HEAD "program\n", 6, "one 'program PATH'");
    REFUSE(HEAD "program /a#b\n", 6, "one 'program PATH'");
    static char longp[HMI_PROGRAM_MAX + 200];
    size_t n = (size_t)snprintf(longp, sizeof longp, "%sprogram /", HEAD);
    memset(longp + n, 'x', HMI_PROGRAM_MAX - 1);
    accept(longp, n + HMI_PROGRAM_MAX - 1, 0);               /* HMI_PROGRAM_MAX bytes */
    longp[n + HMI_PROGRAM_MAX - 1] = 'x';
    refuse(longp, n + HMI_PROGRAM_MAX, 6, "longer than 4095");
}

/* As many tier lines as the backends have slots (hmi_backend.h), not one more. */
/* `static TIER SIZE FRAME`: the object, its tier and line; statics' modules are not
 * the sites' (a module named only by a static is no site module). */
static void test_static_lines(void)
{
    static const char text[] = HEAD
        "site fast /app+0x10\n"
        "static fast 16777216 /app+0x5080   # key_count [static, app] (site 6)\n"
        "static slow 64 /lib dir/libx.so+0xfff0\n";
    struct hmi_placement p;
    if (!parsed(text, sizeof text - 1, &p))
        return;
    CHECK(p.nsites == 1 && p.nstatics == 2 && p.nmodules == 1);
    CHECK(p.statics[0].tier == 0 && p.statics[0].line == 7 && p.statics[0].size == 16777216);
    CHECK(!strcmp(p.statics[0].module, "/app") && p.statics[0].offset == 0x5080);
    CHECK(p.statics[1].tier == 1 && p.statics[1].line == 8 && p.statics[1].size == 64);
    CHECK(!strcmp(p.statics[1].module, "/lib dir/libx.so") && p.statics[1].module_len == 16);
    CHECK(p.statics[1].offset == 0xfff0);
    hmi_placement_free(&p);
    REFUSE(HEAD "static fast 0 /app+0x10\n", 6, "expected 'static");
    REFUSE(HEAD "static fast /app+0x10\n", 6, "expected 'static");
    REFUSE(HEAD "static fast 16\n", 6, "expected 'static");
    REFUSE(HEAD "static fast 16 /a+0x1 > /b+0x2\n", 6, "expected 'static");
    REFUSE(HEAD "static fast 16 /a+0x1G\n", 6, "expected 'static");
    REFUSE(HEAD "static mid 16 /a+0x1\n", 6, "undeclared tier 'mid'");
    REFUSE(HEAD "static fast 281474976710641 /a+0x10\n", 6, "below 2^48");
    REFUSE(HEAD "static fast 16 /a+0x1000000000000\n", 6, "below 2^48");
    REFUSE(HEAD "static fast 16 /a+0x1\nstatic slow 32 /a+0x1\n", 7, "already listed at line 6");
    REFUSE("# hmtune placement v1\ntier fast thp 1\nstatic fast 16 /a+0x1\n"
           "tier slow default unlimited\n", 4, "must come before");
    ACCEPT(HEAD "static fast 281474976710640 /a+0x10\n", 0);
}

/* v2 split lines: the ranges as parsed, and the refusals with their messages. */
#define HEAD2 "# hmtune placement v2\ntier fast hugetlb 8388608\n" \
              "tier slow default unlimited\ndepth 4\nsize-window 0 100\n"
static void test_split_lines(void)
{
    static const char text[] = HEAD2
        "site fast /app+0x10\n"
        "split fast 0-2097152,6291456-10485760 /app+0x1188 > /lib/libc.so.6+0x2724a   # app.c:94\n";
    struct hmi_placement p;
    if (!parsed(text, sizeof text - 1, &p))
        return;
    CHECK(p.version == 2 && p.nsites == 2 && p.nsplit == 1);
    CHECK(p.sites[0].nranges == 0 && p.sites[0].ranges == NULL);
    const struct hmi_site *s = &p.sites[1];
    CHECK(s->tier == 0 && s->line == 7 && s->nframes == 2 && s->nranges == 2);
    CHECK(s->ranges[0].start == 0 && s->ranges[0].end == 2097152);
    CHECK(s->ranges[1].start == 6291456 && s->ranges[1].end == 10485760);
    CHECK(!strcmp(modpath(&p, s, 1), "/lib/libc.so.6") && s->frames[1].offset == 0x2724a);
    hmi_placement_free(&p);
    ACCEPT(HEAD "site fast /app+0x10\n", 1);
    REFUSE(HEAD "split fast 0-4096 /app+0x10\n", 6, "need '# hmtune placement v2'");
    REFUSE("# hmtune placement v3\n", 1, "v1 and v2, not version '3'");
    REFUSE(HEAD2 "split slow 0-4096 /a+0x1\n", 6, "fallback");
    REFUSE(HEAD2 "split mid 0-4096 /a+0x1\n", 6, "undeclared tier 'mid'");
    REFUSE(HEAD2 "split fast 0-4097 /a+0x1\n", 6, "expected 'split");
    REFUSE(HEAD2 "split fast 0-4096,4096-8192 /a+0x1\n", 6, "'4096-8192'");
    REFUSE(HEAD2 "split fast 0-281474976714752 /a+0x1\n", 6, "expected 'split");
    REFUSE(HEAD2 "split fast 0-4096\n", 6, "module+0xHEX");
    REFUSE(HEAD2 "split fast 0-4096 /a+0x1 > /b+0x2 > /c+0x3 > /d+0x4 > /e+0x5\n", 6,
           "more frames than depth");
    REFUSE(HEAD2 "site fast /a+0x1\nsplit fast 0-4096 /a+0x1\n", 7, "already listed at line 6");
    char many[64 * 24 + 256];
    size_t k = (size_t)snprintf(many, sizeof many, "%ssplit fast ", HEAD2);
    for (unsigned i = 0; i < 65; i++)
        k += (size_t)snprintf(many + k, sizeof many - k, "%s%u-%u", i ? "," : "", i * 8192,
                              i * 8192 + 4096);
    snprintf(many + k, sizeof many - k, " /a+0x1\n");
    refuse(many, strlen(many), 6, "more ranges than 64");
    ACCEPT(HEAD2 "split fast 0-281474976710656 /a+0x1\n", 1);
}

static void test_tier_count(void)
{
    char t[4096];
    size_t n = (size_t)snprintf(t, sizeof t, "# hmtune placement v1\n");
    for (unsigned i = 0; i + 1 < HMI_MAX_TIER_LINES; i++)
        n += (size_t)snprintf(t + n, sizeof t - n, "tier t%u thp 4096\n", i);
    size_t head = n;
    n += (size_t)snprintf(t + n, sizeof t - n, "tier last default unlimited\ndepth 1\n"
                          "size-window 0 0\n");
    struct hmi_placement p;
    char err[256];
    CHECK(parse_lit(t, n, &p, err) == 0 && p.ntiers == HMI_MAX_TIER_LINES);
    hmi_placement_free(&p);
    n = head + (size_t)snprintf(t + head, sizeof t - head, "tier one-more thp 4096\n"
                                "tier last default unlimited\n");
    refuse(t, n, HMI_MAX_TIER_LINES + 2, "more tier lines than 16");   /* the 17th */
}

/* A FIFO, a device or a directory is refused at once: a FIFO without a writer would
 * block open(2) (and one with a silent writer, read(2)) in the program's start-up.
 * Each load runs in a child with an alarm, so that a hang fails instead of hanging. */
static void test_not_a_regular_file(void)
{
    char dir[] = "/tmp/hmt-placement-XXXXXX", fifo[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    const char *paths[] = { fifo, "/dev/zero", "/dev/null", dir };
    for (unsigned i = 0; i < sizeof paths / sizeof *paths; i++) {
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid == 0) {
            alarm(10);
            struct hmi_placement p;
            char err[256];
            int rc = hmi_placement_load(paths[i], &p, err, sizeof err);
            _exit(rc == -1 && p.arena == NULL && strstr(err, "not a regular file") ? 0 : 1);
        }
        int st = 0;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fprintf(stderr, "  %s: %s\n", paths[i], WIFSIGNALED(st) ? "hung" : "not refused");
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    unlink(fifo);
    rmdir(dir);
}

int main(void)
{
    RUN(test_docs_example);
    RUN(test_python_writer_file);
    RUN(test_python_writer_v2_file);
    RUN(test_crlf_and_comments);
    RUN(test_reader_quirks);
    RUN(test_refusals);
    RUN(test_too_many_frames);
    RUN(test_long_line);
    RUN(test_large_input);
    RUN(test_load_errors);
    RUN(test_program_line);
    RUN(test_static_lines);
    RUN(test_split_lines);
    RUN(test_tier_count);
    RUN(test_not_a_regular_file);
    HMT_END();
}
