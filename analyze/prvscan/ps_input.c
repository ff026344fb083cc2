/* ps_input.c — lines of a .prv or .prv.gz through one large buffer.
 *
 * Lines are handed out in place (no copy), as runs of whole lines: everything up to
 * the last '\n' in the buffer; the parser finds each line's end itself. A line cut by
 * the end of the buffer is moved to the front before the next read; the buffer grows
 * only for a line longer than itself. Past its end the buffer has PS_INPUT_PAD
 * initialized bytes, so the parser may read 64 bytes beyond any line's '\n'. Gzip is
 * recognised by its magic bytes, not the file name, and read with zlib's gzread,
 * which inflates straight into our buffer for large reads. */
#include "ps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define PS_INPUT_BUF (4u << 20)   /* 4 MiB: ~50k lines per refill, syscalls negligible */
#define PS_INPUT_PAD 128          /* readable, initialized bytes past the buffer's end */

struct ps_input {
    int fd;
    gzFile gz;
    char *buf;
    size_t cap, pos, end;   /* unread bytes are buf[pos, end) */
    int eof;
    uint64_t total, done;
};

struct ps_input *ps_input_open(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s: cannot read: %s", path,
                 S_ISDIR(sb.st_mode) ? "is a directory" : strerror(errno));
        close(fd);
        return NULL;
    }
    struct ps_input *in = ps_xcalloc(1, sizeof(*in));
    in->fd = fd;
    in->total = (uint64_t)sb.st_size;
    unsigned char magic[2];
    if (pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        in->gz = gzdopen(fd, "rb");
        if (!in->gz) {
            snprintf(err, errlen, "%s: cannot open gzip stream", path);
            close(fd);
            free(in);
            return NULL;
        }
        gzbuffer(in->gz, 1u << 20);
    }
    in->cap = PS_INPUT_BUF;
    in->buf = ps_xcalloc(in->cap + PS_INPUT_PAD, 1);
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return in;
}

/* Fill the buffer after moving the unread tail to the front. -1 on error. */
static int refill(struct ps_input *in, char *err, size_t errlen)
{
    size_t tail = in->end - in->pos;
    if (tail && in->pos)
        memmove(in->buf, in->buf + in->pos, tail);
    in->pos = 0;
    in->end = tail;
    if (in->end == in->cap) {           /* one line longer than the buffer */
        in->buf = ps_xrealloc(in->buf, in->cap * 2 + PS_INPUT_PAD);
        memset(in->buf + in->cap + PS_INPUT_PAD, 0, in->cap);
        in->cap *= 2;
    }
    size_t room = in->cap - in->end;
    if (in->gz) {
        int n = gzread(in->gz, in->buf + in->end, (unsigned)(room > (1u << 30) ? 1u << 30 : room));
        int zerr = Z_OK;
        const char *msg = n < 0 || n == 0 ? gzerror(in->gz, &zerr) : NULL;
        if (n < 0 || (n == 0 && zerr != Z_OK)) {
            /* Z_BUF_ERROR at the end means the gzip stream stops mid-member */
            snprintf(err, errlen, "%s", zerr == Z_BUF_ERROR
                     ? "truncated gzip data (the file ends inside a compressed block)"
                     : (zerr == Z_ERRNO ? strerror(errno) : msg));
            return -1;
        }
        if (n == 0)
            in->eof = 1;
        in->end += (size_t)n;
        in->done = (uint64_t)gzoffset(in->gz);
        return 0;
    }
    ssize_t n;
    do
        n = read(in->fd, in->buf + in->end, room);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        snprintf(err, errlen, "read error: %s", strerror(errno));
        return -1;
    }
    if (n == 0)
        in->eof = 1;
    in->end += (size_t)n;
    in->done += (uint64_t)n;
    return 0;
}

int ps_input_lines(struct ps_input *in, const char **start, const char **end, int *partial,
                   char *err, size_t errlen)
{
    for (;;) {
        char *from = in->buf + in->pos;
        size_t left = in->end - in->pos;
        char *nl = left ? memrchr(from, '\n', left) : NULL;
        if (nl) {
            in->pos = (size_t)(nl + 1 - in->buf);
            *start = from;
            *end = nl + 1;
            *partial = 0;
            return 1;
        }
        if (in->eof) {
            if (!left)
                return 0;
            in->pos = in->end;
            in->buf[in->end] = '\n';   /* sentinel: the parser needs a '\n' at each end */
            *start = from;
            *end = in->buf + in->end;
            *partial = 1;
            return 1;
        }
        if (refill(in, err, errlen) != 0)
            return -1;
    }
}

uint64_t ps_input_done(struct ps_input *in) { return in->done; }
uint64_t ps_input_total(struct ps_input *in) { return in->total; }

void ps_input_close(struct ps_input *in)
{
    if (!in)
        return;
    if (in->gz)
        gzclose(in->gz);          /* also closes fd */
    else
        close(in->fd);
    free(in->buf);
    free(in);
}
