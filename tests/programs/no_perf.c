/* no_perf: run a command with perf_event_open(2) refused (EACCES), as a kernel with
 * perf_event_paranoid 3 or a container's seccomp profile would refuse it.
 *
 *   no_perf PROGRAM [ARGS...]
 *
 * A seccomp filter (no_new_privs, then SECCOMP_SET_MODE_FILTER) returns EACCES for
 * that one system call and allows every other; it survives the execvp. Exit 127
 * when the filter cannot be installed or the program cannot be run. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: no_perf PROGRAM [ARGS...]\n");
        return 127;
    }
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { sizeof(code) / sizeof(code[0]), code };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
        perror("no_perf: seccomp");
        return 127;
    }
    execvp(argv[1], argv + 1);
    perror("no_perf: exec");
    return 127;
}
