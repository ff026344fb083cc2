/*
 * forker.c — allocations on both sides of fork().
 *
 * Sites by marker name (the call line ends with a SITE-colon-<name> comment):
 *   parent_before  parent, before fork: malloc(300000) (inherited by the child,
 *                  freed only by the parent)
 *   child          child: malloc(400000), touched, freed; the child then prints
 *                  "child ok" and calls exit(0) (atexit handlers run)
 *   parent_after   parent, after fork: malloc(500000); the parent waits for the
 *                  child, frees both of its blocks, prints "parent ok"
 *
 * Output: "child ok" then "parent ok" (the parent prints only after the child has
 * exited); exit 0 if the child exited with 0, else 1.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void touch(volatile char *p, size_t n, char v)
{
    for (size_t i = 0; i < n; i += 4096)
        p[i] = v;
    p[n - 1] = v;
}

int main(void)
{
    char *before = malloc(300000);               /* SITE:parent_before */
    if (!before)
        return 1;
    touch(before, 300000, 1);

    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("forker: fork");
        return 1;
    }
    if (pid == 0) {
        char *c = malloc(400000);                /* SITE:child */
        if (!c)
            exit(1);
        touch(c, 400000, 2);
        free(c);
        printf("child ok\n");
        exit(0);
    }

    char *after = malloc(500000);                /* SITE:parent_after */
    if (!after)
        return 1;
    touch(after, 500000, 3);

    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
        perror("forker: waitpid");
        return 1;
    }
    free(after);
    free(before);
    printf("parent ok\n");
    return (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? 0 : 1;
}
