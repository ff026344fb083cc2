/* hm_util.c — see hm_util.h. */
#include "hm_util.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

int hm_tsc;

void hm_clock_init(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    /* CPUID 0x80000007 EDX bit 8: invariant TSC (constant rate, runs in all
     * C-states, synchronized across cores by the kernel). */
    hm_tsc = __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
#endif
}

int hm_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (n == 0)
            return ENOSPC;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

size_t hm_fmt_str(char *dst, const char *s)
{
    size_t n = strlen(s);
    memcpy(dst, s, n);
    return n;
}

int hm_parse_size(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return -1;
    uint64_t v = 0;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9') {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
        p++;
    }
    unsigned shift = 0;
    switch (*p) {
    case 'k': case 'K': shift = 10; p++; break;
    case 'm': case 'M': shift = 20; p++; break;
    case 'g': case 'G': shift = 30; p++; break;
    case 't': case 'T': shift = 40; p++; break;
    default: break;
    }
    if (shift && *p == 'i' && (p[1] == 'B' || p[1] == 'b'))
        p += 2;
    else if (shift && (*p == 'B' || *p == 'b'))
        p++;
    else if (!shift && (*p == 'B' || *p == 'b'))
        p++;
    if (*p != '\0')
        return -1;
    if (shift && v > (UINT64_MAX >> shift))
        return -1;
    *out = v << shift;
    return 0;
}

void hm_log(const char *prefix, const char *msg, const char *detail)
{
    char line[512];
    size_t n = 0;
    const char *parts[3] = { prefix, msg, detail };
    for (int i = 0; i < 3; i++) {
        if (!parts[i])
            continue;
        size_t l = strlen(parts[i]);
        if (l > sizeof(line) - 2 - n)
            l = sizeof(line) - 2 - n;
        memcpy(line + n, parts[i], l);
        n += l;
    }
    line[n++] = '\n';
    (void)hm_write_all(2, line, n);
}

__thread uint32_t hm_t_stripe __attribute__((tls_model("initial-exec")));

uint32_t hm_stripe_assign(void)
{
    static uint32_t next;
    uint32_t n = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
    uint32_t s = n < HM_STRIPES - 1 ? n + 1 : 0;     /* own stripe, else the shared one */
    hm_t_stripe = s + 1;
    return s;
}
