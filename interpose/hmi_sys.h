/* hmi_sys.h — the kernel's madvise, mprotect and mremap for the library's own calls.
 * libhmalloc.so exports its own three (hmi_advise.c: what they do over placed hugetlb
 * memory), which a call from inside the library would otherwise reach through the
 * dynamic linker; the library's calls act on fresh mappings and ordinary memory, so
 * they go straight to the kernel. Each returns what the libc call returns (-1 or
 * MAP_FAILED with errno set). */
#ifndef HMI_SYS_H
#define HMI_SYS_H

#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int hmi_sys_madvise(void *a, size_t n, int advice)
{
    return (int)syscall(SYS_madvise, a, n, advice);
}

static inline int hmi_sys_mprotect(void *a, size_t n, int prot)
{
    return (int)syscall(SYS_mprotect, a, n, prot);
}

/* MREMAP_FIXED moves: the target address is always passed. */
static inline void *hmi_sys_mremap(void *old, size_t old_size, size_t new_size, int flags,
                                   void *to)
{
    return (void *)syscall(SYS_mremap, old, old_size, new_size, flags, to);
}

#endif
