/*
 * echo_io.c — the tracer must pass the program's stdout, stderr and exit status
 * through untouched.
 *
 * Sites by marker name (the call line ends with a SITE-colon-<name> comment):
 *   io_a   malloc(111000)   between the first and second lines
 *   io_b   malloc(222000)
 *   io_c   malloc(333000)
 * All freed before exit. Reads nothing.
 *
 * Output (each line flushed at once, in this order):
 *   stdout "line 1 to stdout"
 *   stderr "line 1 to stderr"
 *   stdout "line 2 to stdout"
 *   stderr "line 2 to stderr"
 *   stdout "line 3 to stdout"
 *   stderr "line 3 to stderr"
 * Exit status 7.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

static void touch(volatile char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 4096)
        p[i] = 1;
    p[n - 1] = 1;
}

static void say(int i)
{
    printf("line %d to stdout\n", i);
    fflush(stdout);
    fprintf(stderr, "line %d to stderr\n", i);
}

int main(void)
{
    say(1);
    char *a = malloc(111000);                    /* SITE:io_a */
    if (!a)
        return 1;
    touch(a, 111000);
    say(2);
    char *b = malloc(222000);                    /* SITE:io_b */
    char *c = malloc(333000);                    /* SITE:io_c */
    if (!b || !c)
        return 1;
    touch(b, 222000);
    touch(c, 333000);
    say(3);
    free(c);
    free(b);
    free(a);
    return 7;
}
