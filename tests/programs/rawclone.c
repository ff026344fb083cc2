/* rawclone.c — a child made by the raw clone system call (issue 42): no fork handler
 * runs in it, so a preload library's state it inherits still describes the parent.
 *
 * Usage: rawclone [SECONDS]
 * The parent allocates, then clones with syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0). The
 * child allocates a block, writes it over and over for SECONDS (default 0.5) of its
 * own CPU time, frees it and exits 7. The parent waits and prints "child exited N" or
 * "child killed by signal N", then "ok"; exit 0 (1 when the clone or the wait fails,
 * 2 on a bad argument).
 *
 * Sites: clone_parent 1048576 (parent, before the clone, freed at the end),
 * clone_child 8388608 (child), clone_after 2097152 (parent, after the wait). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void child(double seconds)
{
    size_t n = 8u << 20;
    volatile char *p = malloc(n);                            /* SITE:clone_child */
    if (!p)
        _exit(3);
    double t0 = cpu_seconds();
    unsigned x = 0;
    while (cpu_seconds() - t0 < seconds)
        for (size_t i = 0; i < n; i += 64)
            p[i] = (char)x++;
    free((void *)p);
    exit(7);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0.5;
    if (seconds <= 0)
        return 2;
    volatile char *a = malloc(1u << 20);                     /* SITE:clone_parent */
    for (size_t i = 0; i < (1u << 20); i += 4096)
        a[i] = 1;
    fflush(stdout);
    long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid < 0)
        return 1;
    if (pid == 0)
        child(seconds);
    int st;
    if (waitpid((pid_t)pid, &st, 0) != (pid_t)pid)
        return 1;
    if (WIFEXITED(st))
        printf("child exited %d\n", WEXITSTATUS(st));
    else
        printf("child killed by signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
    volatile char *b = malloc(2u << 20);                     /* SITE:clone_after */
    for (size_t i = 0; i < (2u << 20); i += 4096)
        b[i] = 2;
    free((void *)b);
    free((void *)a);
    printf("ok\n");
    return 0;
}
