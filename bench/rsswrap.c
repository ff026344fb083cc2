/* rsswrap PROG ARGS... — run PROG and print its peak RSS and CPU time
 * ("maxrss_kib=N cpu_s=S") on stderr. A small parent matters: Linux carries the exec'ing process's RSS
 * high-water mark into the new image, so spawning from Python reports Python's. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: rsswrap PROG [ARGS...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        perror("rsswrap: exec");
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) < 0) {
        perror("rsswrap");
        return 2;
    }
    fprintf(stderr, "maxrss_kib=%ld cpu_s=%.6f\n", ru.ru_maxrss,
            (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
