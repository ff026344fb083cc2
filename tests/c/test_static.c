/* test_static.c — placing static variables (interpose/hmi_static.c) on this test's
 * own arrays, without LD_PRELOAD: each case parses a placement with `static` lines
 * naming them (this program's path and the arrays' offsets from its load base), opens
 * the tiers (numa:0, memkind:MEMKIND_HBW with MEMKIND_HBW_NODES=0, thp, hugetlb) and
 * places. What the kernel did is read back from /proc/self/numa_maps and
 * /proc/self/smaps (bind:0, AnonHugePages-eligible VMAs, 2 MiB hugetlb pages), and the
 * arrays' contents must be what they were. Bad inputs (a module not loaded, a size
 * that is not the symbol's, an absurd size, an offset where no symbol starts, an
 * object smaller than a page, a full tier, the default tier, read-only data for
 * hugetlb, no hugepage in the pool) leave the range as it was, each with its reason.
 * static-split lines place the whole pages inside each range of the object only, the
 * rest of it where it was; a range that does not fit is left, the others placed; a
 * fork child copies the hugetlb parts to ordinary pages.
 * The hugetlb cases reserve pages through /proc/sys/vm/nr_hugepages when they can
 * and put the old value back. */
#include "hmt.h"
#include "hmi_backend.h"
#include "hmi_fork.h"
#include "hmi_placement.h"
#include "hmi_static.h"

#include <ctype.h>
#include <link.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1ull << 20)

char numa_arr[8 * MiB];
char mk_arr[4 * MiB];
char thp_arr[8 * MiB];
char huge_arr[8 * MiB];
char bad_arr[1 * MiB];
char split_arr[16 * MiB];                        /* static-split lines: parts of it */
char hsplit_arr[16 * MiB];
char small_arr[100];
char big_arr[512 * MiB];                         /* never touched but for a few pages */
char data_arr[4 * MiB] = { 1, 2, 3 };            /* .data: file-backed, copied on write */
const char ro_arr[4 * MiB] = { 1, 2, 3 };        /* .rodata */

static char exe[PATH_MAX];
static uint64_t base;

static int base_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    base = info->dlpi_addr;                      /* the first entry: the program */
    return 1;
}

static uint64_t off_of(const void *p) { return (uint64_t)(uintptr_t)p - base; }

static void fill(char *p, size_t n, int seed)
{
    for (size_t i = 0; i < n; i += 4096)
        p[i] = (char)(i / 4096 * 7 + (size_t)seed);
}

static int same(const char *p, size_t n, int seed)
{
    for (size_t i = 0; i < n; i += 4096)
        if (p[i] != (char)(i / 4096 * 7 + (size_t)seed))
            return 0;
    return 1;
}

/* `static fast SIZE EXE+0xOFF` */
static size_t line(char *dst, size_t cap, uint64_t size, const char *module, uint64_t off)
{
    return (size_t)snprintf(dst, cap, "static fast %llu %s+0x%llx\n", (unsigned long long)size,
                            module, (unsigned long long)off);
}

static struct hmi_placement g_pl;

/* Parse a placement with tier fast (backend, cap) and the given static lines, open
 * its tiers and place them; the results (NULL when the placement or a tier could not
 * be set up). */
static const struct hmi_static_result *place(const char *backend, uint64_t cap,
                                             const char *lines, uint32_t *n)
{
    static char text[65536];
    char err[256], why[HMI_REASON_MAX];
    hmi_backend_close(0);
    hmi_backend_close(1);
    hmi_placement_free(&g_pl);
    snprintf(text, sizeof text, "# hmtune placement v2\ntier fast %s %llu\n"
             "tier slow default unlimited\ndepth 1\nsize-window 0 0\n%s", backend,
             (unsigned long long)cap, lines);
    *n = 0;
    if (hmi_placement_parse(text, strlen(text), &g_pl, err, sizeof err) != 0) {
        fprintf(stderr, "  placement refused: %s\n", err);
        return NULL;
    }
    if (hmi_backend_open(0, "fast", backend, cap, 0, why, sizeof why) != 0 ||
        hmi_backend_open(1, "slow", "default", 0, 1, why, sizeof why) != 0) {
        fprintf(stderr, "  tier: %s\n", why);
        return NULL;
    }
    if (hmi_static_place(&g_pl, exe, 0) != 0)
        return NULL;
    return hmi_static_results(n);
}

/* The line of /proc/self/FILE (numa_maps: "START ..."; smaps: the block of the
 * mapping "START-END ...") whose mapping starts at addr, into out; 0 when found. */
static int maps_at(const char *file, uint64_t addr, char *out, size_t cap)
{
    char path[64], head[40];
    snprintf(path, sizeof path, "/proc/self/%s", file);
    snprintf(head, sizeof head, "%llx%s", (unsigned long long)addr,
             strcmp(file, "smaps") ? " " : "-");
    FILE *f = fopen(path, "r");
    char buf[1024];
    size_t n = 0;
    int in = 0, found = -1;
    out[0] = '\0';
    while (f && fgets(buf, sizeof buf, f)) {
        const char *dash = strchr(buf, '-'), *sp = strchr(buf, ' ');
        int is_head = isxdigit((unsigned char)buf[0]) && dash && sp && dash < sp;
        if (!strcmp(file, "smaps") && is_head && in)
            break;
        if (!strncmp(buf, head, strlen(head))) {
            in = 1;
            found = 0;
        }
        if (in && n + strlen(buf) < cap) {
            memcpy(out + n, buf, strlen(buf) + 1);
            n += strlen(buf);
        }
        if (in && strcmp(file, "smaps"))
            break;
    }
    if (f)
        fclose(f);
    return found;
}

static void test_numa(void)
{
    char lines[8192], m[8192];
    uint32_t n;
    fill(numa_arr, sizeof numa_arr, 1);
    fill(data_arr, sizeof data_arr, 2);
    size_t k = line(lines, sizeof lines, sizeof numa_arr, exe, off_of(numa_arr));
    line(lines + k, sizeof lines - k, sizeof data_arr, exe, off_of(data_arr));
    const struct hmi_static_result *r = place("numa:0", 64 * MiB, lines, &n);
    CHECK(r && n == 2);
    if (!r || n != 2)
        return;
    for (uint32_t i = 0; i < 2; i++) {
        const char *arr = i ? data_arr : numa_arr;
        size_t size = i ? sizeof data_arr : sizeof numa_arr;
        CHECK(r[i].state == HMI_STATIC_PLACED);
        /* the whole 4 KiB pages inside the object, and nothing else */
        uint64_t a = ((uint64_t)(uintptr_t)arr + 4095) & ~4095ull;
        uint64_t b = ((uint64_t)(uintptr_t)arr + size) & ~4095ull;
        CHECK(r[i].addr == a && r[i].len == b - a);
        CHECK(maps_at("numa_maps", a, m, sizeof m) == 0 && strstr(m, " bind:0 "));
    }
    CHECK(same(numa_arr, sizeof numa_arr, 1) && same(data_arr, sizeof data_arr, 2));
    struct hmi_backend_stats s;
    hmi_backend_stats(0, &s);
    CHECK(s.used == r[0].len + r[1].len && s.placed == 0);
}

/* memkind's HBW kind (its nodes from MEMKIND_HBW_NODES): the kind's own policy */
static void test_memkind(void)
{
    char lines[8192], m[8192], why[HMI_REASON_MAX];
    uint32_t n;
    setenv("MEMKIND_HBW_NODES", "0", 1);
    hmi_backend_close(2);
    if (hmi_backend_open(2, "probe", "memkind:MEMKIND_HBW", MiB, 0, why, sizeof why) != 0) {
        fprintf(stderr, "  memkind:MEMKIND_HBW unavailable here (%s): not exercised\n", why);
        return;
    }
    hmi_backend_close(2);
    fill(mk_arr, sizeof mk_arr, 7);
    line(lines, sizeof lines, sizeof mk_arr, exe, off_of(mk_arr));
    const struct hmi_static_result *r = place("memkind:MEMKIND_HBW", 64 * MiB, lines, &n);
    CHECK(r && n == 1 && r[0].state == HMI_STATIC_PLACED);
    uint64_t a = ((uint64_t)(uintptr_t)mk_arr + 4095) & ~4095ull;
    CHECK(maps_at("numa_maps", a, m, sizeof m) == 0 && strstr(m, " bind:0 "));
    CHECK(same(mk_arr, sizeof mk_arr, 7));
}

static void test_thp(void)
{
    char lines[8192], m[8192];
    uint32_t n;
    fill(thp_arr, sizeof thp_arr, 3);
    line(lines, sizeof lines, sizeof thp_arr, exe, off_of(thp_arr));
    const struct hmi_static_result *r = place("thp", 64 * MiB, lines, &n);
    CHECK(r && n == 1);
    if (!r || n != 1)
        return;
    CHECK(r[0].state == HMI_STATIC_PLACED);
    uint64_t a = ((uint64_t)(uintptr_t)thp_arr + 2 * MiB - 1) & ~(2 * MiB - 1);
    uint64_t b = ((uint64_t)(uintptr_t)thp_arr + sizeof thp_arr) & ~(2 * MiB - 1);
    CHECK(r[0].addr == a && r[0].len == b - a && r[0].len >= 6 * MiB);
    CHECK(maps_at("smaps", a, m, sizeof m) == 0);
    const char *vf = strstr(m, "VmFlags:");
    CHECK(vf && strstr(vf, " hg"));               /* madvise(MADV_HUGEPAGE) on the range */
    CHECK(same(thp_arr, sizeof thp_arr, 3));
}

static void test_bad_inputs(void)
{
    char lines[8192], m[8192];
    uint32_t n;
    size_t k = 0;
    uint64_t off = off_of(bad_arr);
    fill(bad_arr, sizeof bad_arr, 4);
    k += line(lines + k, sizeof lines - k, 4096, "/nonexistent/libnone.so", 0x10);
    k += line(lines + k, sizeof lines - k, sizeof bad_arr - 1, exe, off);
    k += line(lines + k, sizeof lines - k, 1ull << 40, exe, off + 4096);
    k += line(lines + k, sizeof lines - k, 65536, exe, off + 8192);
    k += line(lines + k, sizeof lines - k, sizeof small_arr, exe, off_of(small_arr));
    k += line(lines + k, sizeof lines - k, sizeof data_arr, exe, off_of(data_arr)); /* 64 KiB */
    const struct hmi_static_result *r = place("numa:0", 64 << 10, lines, &n);
    CHECK(r && n == 6);
    if (!r || n != 6)
        return;
    static const char *const why[] = { "not loaded", "does not match the symbol",
                                       "not inside one loaded segment", "no data symbol",
                                       "no whole 4 KiB page", "is full" };
    for (uint32_t i = 0; i < 6; i++) {
        CHECK(r[i].state == HMI_STATIC_REFUSED && r[i].len == 0);
        if (!strstr(r[i].why, why[i]))
            fprintf(stderr, "  static %u: got \"%s\", want \"...%s...\"\n", i, r[i].why, why[i]),
                hmt_failed_checks++;
    }
    struct hmi_backend_stats s;
    hmi_backend_stats(0, &s);
    CHECK(s.used == 0);
    uint64_t a = ((uint64_t)(uintptr_t)bad_arr + 4095) & ~4095ull;
    CHECK(maps_at("numa_maps", a, m, sizeof m) != 0 || !strstr(m, "bind:"));
    CHECK(same(bad_arr, sizeof bad_arr, 4));
    /* a static in the default (fallback) tier: nothing to move */
    snprintf(lines, sizeof lines, "static slow %zu %s+0x%llx\n", sizeof bad_arr, exe,
             (unsigned long long)off);
    r = place("numa:0", 64 * MiB, lines, &n);
    CHECK(r && n == 1 && r[0].state == HMI_STATIC_REFUSED && strstr(r[0].why, "default"));
}

/* `static-split fast SIZE RANGES EXE+0xOFF` */
static void split_line(char *dst, size_t cap, const char *arr, uint64_t size, const char *rs)
{
    snprintf(dst, cap, "static-split fast %llu %s %s+0x%llx\n", (unsigned long long)size, rs,
             exe, (unsigned long long)off_of(arr));
}

static void test_split_numa(void)
{
    char lines[8192], m[8192];
    uint32_t n;
    uint64_t at = (uint64_t)(uintptr_t)split_arr;
    fill(split_arr, sizeof split_arr, 4);
    split_line(lines, sizeof lines, split_arr, sizeof split_arr, "0-4194304,8388608-12582912");
    const struct hmi_static_result *r = place("numa:0", 64 * MiB, lines, &n);
    CHECK(r && n == 1 && r[0].state == HMI_STATIC_PLACED && r[0].nparts == 2);
    if (!r || n != 1 || r[0].nparts != 2)
        return;
    uint64_t len = 0;
    for (uint32_t i = 0; i < 2; i++) {   /* the whole 4 KiB pages inside each range */
        uint64_t a = (at + i * 8 * MiB + 4095) & ~4095ull;
        uint64_t b = (at + i * 8 * MiB + 4 * MiB) & ~4095ull;
        CHECK(r[0].part[i].addr == a && r[0].part[i].len == b - a);
        CHECK(maps_at("numa_maps", a, m, sizeof m) == 0 && strstr(m, " bind:0 "));
        uint64_t lo, hi;
        CHECK(hmi_static_placed_at(a + 4096, &lo, &hi) && lo == a && hi == b);
        len += b - a;
    }
    /* the gap between the ranges is where it was */
    uint64_t gap = r[0].part[0].addr + r[0].part[0].len, lo, hi;
    CHECK(maps_at("numa_maps", gap, m, sizeof m) == 0 && !strstr(m, "bind:"));
    CHECK(!hmi_static_placed_at(gap + 4096, &lo, &hi));
    CHECK(r[0].len == len && r[0].addr == r[0].part[0].addr && r[0].parts_left == 0);
    CHECK(same(split_arr, sizeof split_arr, 4));
    struct hmi_backend_stats s;
    hmi_backend_stats(0, &s);
    CHECK(s.used == len);
    /* a tier with room for one range: the first placed, the second left with why */
    r = place("numa:0", 5 * MiB, lines, &n);
    CHECK(r && n == 1 && r[0].state == HMI_STATIC_PLACED && r[0].parts_left == 1);
    CHECK(r && r[0].part[0].len && !r[0].part[1].len && strstr(r[0].why, "full") &&
          strstr(r[0].why, "range 8388608-12582912"));
    /* a range with no whole page inside the object: refused, nothing charged */
    split_line(lines, sizeof lines, small_arr, sizeof small_arr, "0-4096");
    r = place("numa:0", 64 * MiB, lines, &n);
    CHECK(r && n == 1 && r[0].state == HMI_STATIC_REFUSED && strstr(r[0].why, "range"));
    hmi_backend_stats(0, &s);
    CHECK(s.used == 0);
    CHECK(same(split_arr, sizeof split_arr, 4));
}

static long huge_free(void)
{
    return hmt_read_long("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages");
}

static void test_hugetlb(void)
{
    static const char *nr = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
    char lines[8192], m[8192];
    uint32_t n;
    long old = hmt_read_long(nr);
    fill(huge_arr, sizeof huge_arr, 5);
    size_t k = line(lines, sizeof lines, sizeof huge_arr, exe, off_of(huge_arr));
    line(lines + k, sizeof lines - k, sizeof ro_arr, exe, off_of(ro_arr));
    /* 4 pages for huge_arr's whole 2 MiB pages (3 or 4), one for the tier's probe */
    if (old < 0 || geteuid() != 0 || hmt_write_long(nr, old + 5) != 0 || huge_free() < 5) {
        fprintf(stderr, "  cannot reserve hugepages: hugetlb statics not exercised\n");
        if (old >= 0 && geteuid() == 0)
            hmt_write_long(nr, old);
        return;
    }
    const struct hmi_static_result *r = place("hugetlb", 64 * MiB, lines, &n);
    CHECK(r && n == 2);
    if (r && n == 2) {
        CHECK(r[0].state == HMI_STATIC_PLACED);
        uint64_t a = ((uint64_t)(uintptr_t)huge_arr + 2 * MiB - 1) & ~(2 * MiB - 1);
        CHECK(r[0].addr == a && r[0].len >= 6 * MiB && r[0].len % (2 * MiB) == 0);
        CHECK(maps_at("smaps", a, m, sizeof m) == 0 && strstr(m, "KernelPageSize:     2048 kB"));
        CHECK(same(huge_arr, sizeof huge_arr, 5));  /* the contents came along */
        huge_arr[r[0].addr - (uintptr_t)huge_arr] = 9;
        CHECK(huge_arr[r[0].addr - (uintptr_t)huge_arr] == 9);
        CHECK(r[1].state == HMI_STATIC_REFUSED && strstr(r[1].why, "read-only"));
        CHECK(ro_arr[0] == 1 && ro_arr[2] == 3);
    }
    /* more pages than the pool has (a 512 MiB array, untouched but for a few pages):
     * refused before anything is replaced, the range as it was */
    hmi_backend_close(0);
    long left = huge_free();
    for (size_t i = 0; i < sizeof big_arr; i += 64 * MiB)
        big_arr[i] = (char)(i / MiB + 1);
    line(lines, sizeof lines, sizeof big_arr, exe, off_of(big_arr));
    if (left >= 1 && left < 250) {
        r = place("hugetlb", 1024 * MiB, lines, &n);
        CHECK(r && n == 1 && r[0].state == HMI_STATIC_REFUSED && strstr(r[0].why, "pool"));
        for (size_t i = 0; i < sizeof big_arr; i += 64 * MiB)
            CHECK(big_arr[i] == (char)(i / MiB + 1));
        uint64_t a = ((uint64_t)(uintptr_t)big_arr + 2 * MiB - 1) & ~(2 * MiB - 1);
        CHECK(maps_at("smaps", a, m, sizeof m) != 0 || !strstr(m, "KernelPageSize:     2048 kB"));
        struct hmi_backend_stats st;
        hmi_backend_stats(0, &st);
        CHECK(st.used == 0);
    } else {
        fprintf(stderr, "  %ld hugepages free: the short pool is not exercised\n", left);
    }
    hmi_backend_close(0);
    hmt_write_long(nr, old);
}

/* hugetlb parts, then a fork: the child copies both parts to ordinary pages and sees
 * the contents; the parent keeps its hugepages */
static void test_split_hugetlb(void)
{
    static const char *nr = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
    char lines[8192], m[8192];
    uint32_t n;
    /* test_hugetlb's pages, still in use, count in nr_hugepages as surplus: not ours */
    long old = hmt_read_long(nr) -
               hmt_read_long("/sys/kernel/mm/hugepages/hugepages-2048kB/surplus_hugepages");
    fill(hsplit_arr, sizeof hsplit_arr, 6);
    split_line(lines, sizeof lines, hsplit_arr, sizeof hsplit_arr, "0-8388608,12582912-16777216");
    /* at most 4 + 2 pages for the parts, one for the tier's probe */
    if (old < 0 || geteuid() != 0 || hmt_write_long(nr, hmt_read_long(nr) + 7) != 0 ||
        huge_free() < 7) {
        fprintf(stderr, "  cannot reserve hugepages: hugetlb static-split not exercised\n");
        if (old >= 0 && geteuid() == 0)
            hmt_write_long(nr, old);
        return;
    }
    uint64_t at = (uint64_t)(uintptr_t)hsplit_arr;
    const struct hmi_static_result *r = place("hugetlb", 64 * MiB, lines, &n);
    CHECK(r && n == 1 && r[0].state == HMI_STATIC_PLACED && r[0].nparts == 2);
    if (r && n == 1 && r[0].nparts == 2) {
        uint64_t ends[2][2] = { { 0, 8 * MiB }, { 12 * MiB, 16 * MiB } };
        for (uint32_t i = 0; i < 2; i++) {
            uint64_t a = (at + ends[i][0] + 2 * MiB - 1) & ~(2 * MiB - 1);
            uint64_t b = (at + ends[i][1]) & ~(2 * MiB - 1);
            CHECK(r[0].part[i].addr == a && r[0].part[i].len == b - a && b > a);
            CHECK(maps_at("smaps", a, m, sizeof m) == 0 &&
                  strstr(m, "KernelPageSize:     2048 kB"));
        }
        CHECK(same(hsplit_arr, sizeof hsplit_arr, 6));
        hmi_fork_prepare(1);
        pid_t pid = fork();
        if (pid == 0) {
            hmi_fork_child();
            int ok = same(hsplit_arr, sizeof hsplit_arr, 6);
            for (uint32_t i = 0; i < 2; i++)
                ok &= maps_at("smaps", r[0].part[i].addr, m, sizeof m) != 0 ||
                      !strstr(m, "KernelPageSize:     2048 kB");
            hsplit_arr[r[0].part[1].addr - at] = 1;     /* a write costs no hugepage */
            _exit(ok ? 0 : 1);
        }
        hmi_fork_parent();
        int st = -1;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
        struct hmi_fork_stats fs;
        hmi_fork_stats(&fs);
        CHECK(fs.copied_maps >= 2 && fs.left_bytes == 0);
        CHECK(same(hsplit_arr, sizeof hsplit_arr, 6));
        CHECK(maps_at("smaps", r[0].part[0].addr, m, sizeof m) == 0 &&
              strstr(m, "KernelPageSize:     2048 kB"));
    }
    hmi_backend_close(0);
    hmt_write_long(nr, old);
}

int main(void)
{
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[k > 0 ? k : 0] = '\0';
    dl_iterate_phdr(base_cb, NULL);
    RUN(test_numa);
    RUN(test_memkind);
    RUN(test_thp);
    RUN(test_bad_inputs);
    RUN(test_hugetlb);
    RUN(test_split_numa);
    RUN(test_split_hugetlb);
    hmi_placement_free(&g_pl);
    HMT_END();
}
