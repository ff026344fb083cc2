/* hm_fds.c — see hm_fds.h. The table: one bit per number (scanned by close_range)
 * and, per number, its slot and kind. Written by the thread that opens, moves or
 * closes a descriptor; read by every thread's wrappers, without a lock. */
#include "hm_fds.h"
#include "hm_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic uint64_t g_bits[HM_FD_MAX / 64];
static int *_Atomic g_slot[HM_FD_MAX];
static _Atomic unsigned char g_kind[HM_FD_MAX];

static long sys_close(int fd) { return syscall(SYS_close, fd); }

/* HM_FD_FLOOR, or half the soft limit when that is below twice the floor (a floor
 * at or above the limit would fail every move). */
static int floor_now(void)
{
    struct rlimit rl;
    if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return HM_FD_FLOOR;
    if (rl.rlim_cur >= 2 * (rlim_t)HM_FD_FLOOR)
        return HM_FD_FLOOR;
    return (int)(rl.rlim_cur / 2);
}

int hm_fd_raise(int fd)
{
    if (fd < 0)
        return fd;
    int saved = errno;
    int lo = floor_now();
    if (fd < lo) {
        long n = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, lo);
        if (n >= 0) {
            sys_close(fd);
            fd = (int)n;
        }
    }
    errno = saved;
    return fd;
}

void hm_fd_register(int fd, int *slot, int kind)
{
    if (fd < 0 || fd >= HM_FD_MAX)
        return;
    atomic_store(&g_slot[fd], slot);
    atomic_store(&g_kind[fd], (unsigned char)kind);
    atomic_fetch_or(&g_bits[fd / 64], 1ull << (fd % 64));
}

int hm_fd_keep(int fd, int *slot, int kind)
{
    if (fd < 0)
        return fd;
    fd = hm_fd_raise(fd);
    if (slot)
        __atomic_store_n(slot, fd, __ATOMIC_RELEASE);
    hm_fd_register(fd, slot, kind);
    return fd;
}

void hm_fd_release(int fd)
{
    if (fd < 0 || fd >= HM_FD_MAX)
        return;
    atomic_fetch_and(&g_bits[fd / 64], ~(1ull << (fd % 64)));
    atomic_store(&g_slot[fd], NULL);
    atomic_store(&g_kind[fd], 0);
}

static void close_fd(int fd)
{
    int saved = errno;
    hm_fd_release(fd);
    sys_close(fd);
    errno = saved;
}

void hm_fd_drop(int *slot)
{
    int fd = __atomic_exchange_n(slot, -1, __ATOMIC_ACQ_REL);
    if (fd < 0)
        return;
    if (fd < HM_FD_MAX && (atomic_load(&g_bits[fd / 64]) & (1ull << (fd % 64))) &&
        atomic_load(&g_slot[fd]) != slot)
        return;                       /* the number is another descriptor's now */
    close_fd(fd);
}

int hm_fd_is(int fd, const int *slot)
{
    if (fd < 0)
        return 0;
    if (fd >= HM_FD_MAX)
        return 1;
    return (atomic_load_explicit(&g_bits[fd / 64], memory_order_acquire) & (1ull << (fd % 64))) &&
           atomic_load_explicit(&g_slot[fd], memory_order_acquire) == slot;
}

int hm_fd_held(int fd)
{
    if (fd < 0 || fd >= HM_FD_MAX)
        return 0;
    if (hm_likely(!(atomic_load_explicit(&g_bits[fd / 64], memory_order_acquire) &
                    (1ull << (fd % 64)))))
        return 0;
    return hm_proc_mine();
}

int hm_fd_next_held(unsigned lo, unsigned hi)
{
    if (lo >= HM_FD_MAX || lo > hi || !hm_proc_mine())
        return -1;
    if (hi >= HM_FD_MAX)
        hi = HM_FD_MAX - 1;
    for (unsigned w = lo / 64; w <= hi / 64; w++) {
        uint64_t b = atomic_load_explicit(&g_bits[w], memory_order_acquire);
        if (w == lo / 64)
            b &= ~0ull << (lo % 64);
        if (!b)
            continue;
        unsigned fd = w * 64 + (unsigned)__builtin_ctzll(b);
        return fd <= hi ? (int)fd : -1;
    }
    return -1;
}

int hm_fd_evict(int fd)
{
    if (!hm_fd_held(fd))
        return 0;
    int saved = errno;
    int *slot = atomic_load(&g_slot[fd]);
    int kind = atomic_load(&g_kind[fd]);
    /* the lowest free number at or above the floor: never fd, which is open */
    long n = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, floor_now());
    hm_fd_release(fd);
    if (n >= 0)
        hm_fd_register((int)n, slot, kind);
    if (slot)
        __atomic_store_n(slot, n >= 0 ? (int)n : -1, __ATOMIC_RELEASE);
    errno = saved;
    return n >= 0 ? 0 : -1;
}

void hm_fd_close_kind(int kind)
{
    for (unsigned w = 0; w < HM_FD_MAX / 64; w++) {
        uint64_t b = atomic_load(&g_bits[w]);
        while (b) {
            int fd = (int)(w * 64 + (unsigned)__builtin_ctzll(b));
            b &= b - 1;
            if (atomic_load(&g_kind[fd]) != kind)
                continue;
            int *slot = atomic_load(&g_slot[fd]);
            if (slot && __atomic_load_n(slot, __ATOMIC_ACQUIRE) == fd)
                __atomic_store_n(slot, -1, __ATOMIC_RELEASE);
            close_fd(fd);
        }
    }
}
