/* hmtune-rusage OUT PROG [ARGS...] — run PROG (searched in PATH) as a child, wait for it
 * and write one line to the file OUT:
 *   wall_s=S user_s=S sys_s=S minflt=N majflt=N maxrss_kib=N status=W
 * (wall-clock time from fork to exit, the child's and its waited-for descendants'
 * rusage, W the wait status). hmtune compare and explore run each measured run under
 * it (hmtune/workflows/measure.py): Linux carries the RSS high-water mark of the process that
 * exec's into the new image's ru_maxrss, so a child started from Python (RSS tens of
 * MiB) would report Python's peak; started from this small program it reports its own.
 * The exit status is PROG's (128 + N for a death by signal N, which OUT records as
 * such). PROG dies with this program (PR_SET_PDEATHSIG), and SIGINT, SIGTERM and
 * SIGHUP sent to it are passed on to PROG. Exit 127 when PROG cannot be run, 2 for a
 * usage or system error. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile pid_t child;

static void pass_on(int sig)
{
    if (child > 0)
        kill(child, sig);
}

static double seconds(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: hmtune-rusage OUT PROG [ARGS...]\n");
        return 2;
    }
    FILE *out = fopen(argv[1], "w");
    if (!out) {
        fprintf(stderr, "hmtune-rusage: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    pid_t parent = getpid();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "hmtune-rusage: fork: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0) {
        fclose(out);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)        /* the parent died before prctl */
            _exit(127);
        execvp(argv[2], argv + 2);
        fprintf(stderr, "hmtune-rusage: cannot run %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    child = pid;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = pass_on;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int status = 0;
    struct rusage ru;
    pid_t got;
    do {
        got = wait4(pid, &status, 0, &ru);
    } while (got < 0 && errno == EINTR);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (got < 0) {
        fprintf(stderr, "hmtune-rusage: wait4: %s\n", strerror(errno));
        return 2;
    }
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    fprintf(out, "wall_s=%.6f user_s=%.6f sys_s=%.6f minflt=%ld majflt=%ld maxrss_kib=%ld "
                 "status=%d\n", wall, seconds(ru.ru_utime), seconds(ru.ru_stime),
            ru.ru_minflt, ru.ru_majflt, ru.ru_maxrss, status);
    if (fclose(out) != 0) {
        fprintf(stderr, "hmtune-rusage: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
