/* hm_proc.c — see hm_proc.h. */
#include "hm_proc.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

volatile uint32_t *hm_proc_page;
static uint32_t g_pid;          /* without the page: the owner's pid */
static int g_tried;             /* the page was asked for (once) */

void hm_proc_claim(void)
{
    if (!g_tried) {
        g_tried = 1;
        size_t pg = (size_t)sysconf(_SC_PAGESIZE);
        void *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        /* the kernel's madvise: libhmalloc.so, which links this file, exports one of
         * its own (interpose/hmi_advise.c) that a call from here would reach */
        if (p != MAP_FAILED && syscall(SYS_madvise, p, pg, MADV_WIPEONFORK) == 0)
            hm_proc_page = p;
        else if (p != MAP_FAILED)
            munmap(p, pg);
    }
    __atomic_store_n(&g_pid, (uint32_t)syscall(SYS_getpid), __ATOMIC_RELEASE);
    if (hm_proc_page)
        *hm_proc_page = 1;
}

int hm_proc_mine_slow(void)
{
    uint32_t pid = __atomic_load_n(&g_pid, __ATOMIC_ACQUIRE);
    return pid != 0 && pid == (uint32_t)syscall(SYS_getpid);
}
