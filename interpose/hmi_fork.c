/* hmi_fork.c — a forked child never dies of a hugetlb placement (hmi_fork.h).
 *
 * A MAP_PRIVATE hugetlb page shared by parent and child after fork needs a second
 * hugepage from the pool when either writes it (copy-on-write), and the run reserved
 * exactly the parent's: with the pool dry, a child's write is killed by SIGBUS, and a
 * parent's write makes the kernel take the page from the child, which a later access
 * kills. So in the child, before fork returns there, every hugetlb mapping of the
 * interposer's (blocks, arena chunks, split ranges, umf:hugetlb granules, static
 * arrays) is copied to ordinary private memory (THP advised, as a fast second best)
 * moved over it by mremap: the child owns its copy, the parent's hugepages are its
 * alone again and its writes copy nothing. The forking thread of the parent waits for
 * the child to finish (a pipe the child writes its counts to), so that no write of
 * that thread makes the kernel take a page the child has not copied yet; what other
 * threads of the parent write meanwhile can still, with a dry pool (docs/formats.md
 * §6). A mapping the child cannot copy (no memory for the copy) is left as it is and
 * counted. vfork, posix_spawn and clone(CLONE_VM) share the parent's memory and copy
 * nothing; a raw clone without CLONE_VM runs no fork handler and is not covered.
 *
 * The parent counts forks and what its children copied, for the run statistics. */
#include "hmi_fork.h"
#include "hmi_demote.h"
#include "hmi_pagemap.h"
#include "hmi_static.h"
#include "hm_util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* What a child sends its parent: mappings and bytes copied, bytes left hugetlb. */
struct note {
    uint64_t copied_maps, copied_bytes, left_bytes;
};

static int g_pipe[2] = { -1, -1 };          /* from prepare to parent/child */
static struct hmi_fork_stats g_stats;       /* atomics: threads may fork at once */

static void add(uint64_t *c, uint64_t v)
{
    __atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}

/* Whether a hugetlb mapping at a is the interposer's: a granule the page map gives a
 * tier, or a placed static array's range. */
static int ours(uintptr_t a)
{
    uint64_t lo, hi;
    return (hmi_pagemap_get((const void *)a) & HMI_E_TIER_MASK) ||
           hmi_static_placed_at(a, &lo, &hi);
}

static uint64_t hex(const char **s)
{
    uint64_t v = 0;
    for (;; (*s)++) {
        char c = **s;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return v;
        v = v << 4 | (uint64_t)d;
    }
}

/* One line of /proc/self/maps: a hugetlb mapping of ours into out (start, end, prot). */
static int hugetlb_line(const char *l, uint64_t out[3])
{
    if (!strstr(l, "/anon_hugepage"))
        return 0;
    const char *s = l;
    uint64_t a = hex(&s);
    if (*s++ != '-')
        return 0;
    uint64_t e = hex(&s);
    if (*s++ != ' ' || e <= a || !ours((uintptr_t)a))
        return 0;
    int prot = (s[0] == 'r' ? PROT_READ : 0) | (s[1] == 'w' ? PROT_WRITE : 0) |
               (s[2] == 'x' ? PROT_EXEC : 0);
    out[0] = a, out[1] = e, out[2] = (uint64_t)prot;
    return 1;
}

/* The hugetlb mappings of ours, read before any is changed (the maps file is read
 * in pieces, and a change between them may skip a line): into a scratch mapping of
 * rows of (start, end, prot), *n of them; NULL when there are none or no room. */
static uint64_t (*collect(size_t *n, size_t *cap_bytes))[3]
{
    *n = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, bytes = cap * sizeof(uint64_t[3]);
    uint64_t (*rows)[3] = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (rows == MAP_FAILED) {
        close(fd);
        return NULL;
    }
    char buf[4096];
    size_t have = 0;
    for (;;) {
        ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
        buf[have] = '\0';
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = '\0';
            if (*n < cap && hugetlb_line(line, rows[*n]))
                (*n)++;
            line = nl + 1;
        }
        have = (size_t)(buf + have - line);
        memmove(buf, line, have);
        if (have == sizeof buf - 1)
            have = 0;                       /* a line longer than the buffer: skipped */
    }
    close(fd);
    *cap_bytes = bytes;
    return rows;
}

void hmi_fork_prepare(int hugetlb)
{
    g_pipe[0] = g_pipe[1] = -1;
    if (hugetlb && pipe2(g_pipe, O_CLOEXEC) != 0)
        g_pipe[0] = g_pipe[1] = -1;
}

void hmi_fork_parent(void)
{
    add(&g_stats.forks, 1);
    if (g_pipe[0] < 0)
        return;
    close(g_pipe[1]);
    struct note nt;
    size_t got = 0;
    while (got < sizeof nt) {
        ssize_t r = read(g_pipe[0], (char *)&nt + got, sizeof nt - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(g_pipe[0]);
    g_pipe[0] = g_pipe[1] = -1;
    if (got != sizeof nt) {
        add(&g_stats.unknown, 1);  /* the child ended before it said */
        return;
    }
    add(&g_stats.copied_children, 1);
    add(&g_stats.copied_maps, nt.copied_maps);
    add(&g_stats.copied_bytes, nt.copied_bytes);
    add(&g_stats.left_bytes, nt.left_bytes);
}

void hmi_fork_child(void)
{
    memset(&g_stats, 0, sizeof g_stats);    /* the child's own: it does not report */
    if (g_pipe[0] < 0)
        return;
    close(g_pipe[0]);
    struct note nt = { 0, 0, 0 };
    size_t n = 0, bytes = 0;
    uint64_t (*rows)[3] = collect(&n, &bytes);
    for (size_t i = 0; rows && i < n; i++) {
        size_t len = (size_t)(rows[i][1] - rows[i][0]);
        if (hmi_demote((uintptr_t)rows[i][0], len, (int)rows[i][2], 1) == 0)
            nt.copied_maps++, nt.copied_bytes += len;
        else
            nt.left_bytes += len;
    }
    if (rows)
        munmap(rows, bytes);
    (void)hm_write_all(g_pipe[1], &nt, sizeof nt);
    close(g_pipe[1]);
    g_pipe[0] = g_pipe[1] = -1;
}

void hmi_fork_stats(struct hmi_fork_stats *out)
{
    out->forks = __atomic_load_n(&g_stats.forks, __ATOMIC_RELAXED);
    out->copied_children = __atomic_load_n(&g_stats.copied_children, __ATOMIC_RELAXED);
    out->copied_maps = __atomic_load_n(&g_stats.copied_maps, __ATOMIC_RELAXED);
    out->copied_bytes = __atomic_load_n(&g_stats.copied_bytes, __ATOMIC_RELAXED);
    out->left_bytes = __atomic_load_n(&g_stats.left_bytes, __ATOMIC_RELAXED);
    out->unknown = __atomic_load_n(&g_stats.unknown, __ATOMIC_RELAXED);
}
