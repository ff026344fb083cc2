/* hmi_demote.c — see hmi_demote.h. */
#include "hmi_demote.h"
#include "hmi_sys.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_COLD
#define MADV_COLD 20                        /* Linux 5.4 */
#endif

int hmi_demote(uintptr_t a, size_t len, int prot, int thp)
{
    void *t = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED)
        return -1;
    if (thp)
        hmi_sys_madvise(t, len, MADV_HUGEPAGE);
    if (prot & PROT_READ)
        memcpy(t, (const void *)a, len);
    if (hmi_sys_mremap(t, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)a) == MAP_FAILED) {
        munmap(t, len);
        return -1;
    }
    if (prot != (PROT_READ | PROT_WRITE))
        hmi_sys_mprotect((void *)a, len, prot);
    return 0;
}

int hmi_is_hugetlb(uintptr_t a)
{
    int e = errno;
    long r = hmi_sys_madvise((void *)(a & ~(uintptr_t)4095), (size_t)4096, MADV_COLD);
    int huge = r != 0 && errno == EINVAL;
    errno = e;
    return huge;
}
