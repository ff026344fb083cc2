/* hmi_placement_load.c — hmi_placement_load (hmi_placement.h): a placement.txt read
 * into an mmap'd buffer (regular files only, opened without blocking) and parsed by
 * hmi_placement.c. No malloc family, no stdio. */
#include "hmi_placement.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void errcat(char *err, size_t errlen, size_t *k, const char *s, size_t n)
{
    while (n-- && *k + 1 < errlen)
        err[(*k)++] = *s++;
    err[*k] = '\0';
}

static int load_fail(const char *path, const char *why, int e, char *err, size_t errlen)
{
    size_t k = 0;
    if (err && errlen) {
        errcat(err, errlen, &k, path, strlen(path));
        errcat(err, errlen, &k, ": ", 2);
        errcat(err, errlen, &k, why, strlen(why));
        if (e) {
            errcat(err, errlen, &k, " (errno ", 8);
            char d[24];
            errcat(err, errlen, &k, d, hm_fmt_u64(d, (uint64_t)e));
            errcat(err, errlen, &k, ")", 1);
        }
    }
    return -1;
}

/* O_NONBLOCK: opening a FIFO for reading blocks until a writer comes (fifo(7)), which
 * would hang the program in the library's constructor; a regular file ignores it. */
int hmi_placement_load(const char *path, struct hmi_placement *out, char *err, size_t errlen)
{
    struct stat st;
    size_t got = 0, cap, map;
    int fd, rc;
    memset(out, 0, sizeof *out);
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return load_fail(path, "cannot open", errno, err, errlen);
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return load_fail(path, "cannot stat", e, err, errlen);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return load_fail(path, "not a regular file (a FIFO, device or directory)", 0, err,
                         errlen);
    }
    if (st.st_size < 0 || (uint64_t)st.st_size > HMI_INPUT_MAX) {
        close(fd);
        return load_fail(path, "4 GiB - 1 bytes or more", 0, err, errlen);
    }
    cap = (size_t)st.st_size + 1;          /* one more byte notices a growing file */
    map = (cap + 4095) & ~(size_t)4095;
    char *buf = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        int e = errno;
        close(fd);
        return load_fail(path, "cannot mmap a read buffer", e, err, errlen);
    }
    while (got < cap) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r < 0) {
                int e = errno;
                close(fd);
                munmap(buf, map);
                return load_fail(path, "read failed", e, err, errlen);
            }
            break;
        }
        got += (size_t)r;
    }
    close(fd);
    if (got == cap) {
        munmap(buf, map);
        return load_fail(path, "changed size while being read", 0, err, errlen);
    }
    rc = hmi_placement_parse(buf, got, out, err, errlen);
    munmap(buf, map);
    return rc;
}
