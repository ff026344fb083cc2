/*
 * crash.c — abnormal terminations with live traced blocks.
 *
 * Sites by marker name (the call line ends with a SITE-colon-<name> comment):
 *   crash_a   malloc(100000)   touched, never freed
 *   crash_b   malloc(200000)   touched, never freed
 * Then, by argv[1]:
 *   segv    store through a NULL pointer held in a volatile variable -> SIGSEGV
 *   abort   abort()                                                  -> SIGABRT
 *   exit3   print "out" to stdout, "err" to stderr, return 3 from main (exit 3)
 *   kill    2000 malloc(65536)/free pairs (crash_loop: more records than
 *           one tracer buffer holds), then raise(SIGKILL)          -> SIGKILL
 *   _exit   write(2) "out" to stdout, then _exit(5) (no atexit, no stdio flush)
 * No or unknown argument: usage on stderr, exit 2.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void touch(volatile char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 4096)
        p[i] = 1;
    p[n - 1] = 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: crash segv|abort|exit3|kill|_exit\n");
        return 2;
    }
    char *a = malloc(100000);                    /* SITE:crash_a */
    char *b = malloc(200000);                    /* SITE:crash_b */
    if (!a || !b)
        return 1;
    touch(a, 100000);
    touch(b, 200000);

    const char *mode = argv[1];
    if (strcmp(mode, "segv") == 0) {
        /* Pointer and pointee both volatile: with a plain "int *volatile", GCC
         * -O1 deletes the store as dead and main returns normally. */
        volatile int *volatile np = NULL;
        *np = 42;
        return 10;                               /* not reached */
    } else if (strcmp(mode, "abort") == 0) {
        abort();
    } else if (strcmp(mode, "exit3") == 0) {
        printf("out\n");
        fprintf(stderr, "err\n");
        return 3;
    } else if (strcmp(mode, "kill") == 0) {
        for (int i = 0; i < 2000; i++) {
            volatile char *p = malloc(65536);    /* SITE:crash_loop */
            if (!p)
                return 1;
            p[0] = 1;
            free((void *)p);
        }
        raise(SIGKILL);
        return 11;                               /* not reached */
    } else if (strcmp(mode, "_exit") == 0) {
        static const char msg[] = "out\n";
        if (write(STDOUT_FILENO, msg, sizeof msg - 1) < 0)
            _exit(6);
        _exit(5);
    }
    fprintf(stderr, "crash: unknown mode '%s'\n", mode);
    return 2;
}
