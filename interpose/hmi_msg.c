/* hmi_msg.c — the tier backends' reasons: a bounded one-line message built in the
 * caller's buffer, without stdio or allocation (hmi_backend_open runs inside the
 * interposer's constructor, before the allocator is ready). */
#include "hmi_backend_int.h"

#include <string.h>

void hmi_msg_init(struct hmi_msg *m, char *buf, size_t cap)
{
    m->buf = buf;
    m->cap = cap;
    m->pos = 0;
    if (cap)
        buf[0] = '\0';
}

void hmi_msg_str(struct hmi_msg *m, const char *s)
{
    if (!m->cap)
        return;
    while (*s && m->pos + 1 < m->cap)
        m->buf[m->pos++] = *s++;
    m->buf[m->pos] = '\0';
}

void hmi_msg_u64(struct hmi_msg *m, uint64_t v)
{
    char tmp[24];
    size_t n = hm_fmt_u64(tmp, v);
    tmp[n] = '\0';
    hmi_msg_str(m, tmp);
}

void hmi_msg_errno(struct hmi_msg *m, int err)
{
    const char *d = strerrordesc_np(err);
    hmi_msg_str(m, d ? d : "unknown error");
}
