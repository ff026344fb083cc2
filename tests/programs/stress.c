/*
 * stress.c — many malloc/free pairs from many threads (tracer overhead/race test).
 *
 * Usage: stress [THREADS [PAIRS [SIZE]]]   defaults: 16 1000000 65536
 * Sites by marker name (the call line ends with a SITE-colon-<name> comment):
 *   stress   each thread does PAIRS times: malloc(SIZE), write one byte
 *            (volatile), free. Default size 65536 (= the 64 KiB threshold).
 *
 * Output: "ok", exit 0. Bad arguments: usage on stderr, exit 2.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long pairs = 1000000;
static size_t size = 65536;

static void *worker(void *arg)
{
    long failed = 0;
    unsigned char tag = (unsigned char)(size_t)arg;
    for (long i = 0; i < pairs; i++) {
        volatile unsigned char *p = malloc(size); /* SITE:stress */
        if (!p) {
            failed++;
            continue;
        }
        p[(size_t)i % size] = tag;
        free((void *)p);
    }
    return (void *)failed;
}

static long parse(const char *s, long min)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < min) {
        fprintf(stderr, "usage: stress [THREADS [PAIRS [SIZE]]]\n");
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    long nthreads = 16;
    if (argc > 4) {
        fprintf(stderr, "usage: stress [THREADS [PAIRS [SIZE]]]\n");
        return 2;
    }
    if (argc > 1)
        nthreads = parse(argv[1], 1);
    if (argc > 2)
        pairs = parse(argv[2], 0);
    if (argc > 3)
        size = (size_t)parse(argv[3], 1);

    pthread_t *t = calloc((size_t)nthreads, sizeof *t);
    if (!t)
        return 1;
    long started = 0, failed = 0;
    for (; started < nthreads; started++)
        if (pthread_create(&t[started], NULL, worker, (void *)(size_t)started) != 0)
            break;
    for (long i = 0; i < started; i++) {
        void *ret;
        pthread_join(t[i], &ret);
        failed += (long)ret;
    }
    free(t);
    if (started != nthreads || failed) {
        fprintf(stderr, "stress: %ld/%ld threads started, %ld failed allocations\n",
                started, nthreads, failed);
        return 1;
    }
    puts("ok");
    return 0;
}
