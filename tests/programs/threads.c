/*
 * threads.c — allocations from four pthreads, one call site.
 *
 * Thread i (i = 0..3) does 3 times: malloc((i+1)*100000), touch, free.
 * Sites by marker name (the call line ends with a SITE-colon-<name> comment):
 *   thread   sizes 100000 (thread 0), 200000 (1), 300000 (2), 400000 (3);
 *            3 allocations of each size, 12 in all, each freed.
 * The main thread allocates nothing traced; it joins all threads.
 *
 * Output: "ok", exit 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define ROUNDS   3

static void *worker(void *arg)
{
    size_t i = (size_t)arg;
    size_t size = (i + 1) * 100000;
    for (int r = 0; r < ROUNDS; r++) {
        volatile char *p = malloc(size);          /* SITE:thread */
        if (!p)
            return (void *)1;
        for (size_t k = 0; k < size; k += 4096)
            p[k] = (char)(i + (size_t)r);
        p[size - 1] = 1;
        free((void *)p);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[NTHREADS];
    int bad = 0;
    for (size_t i = 0; i < NTHREADS; i++) {
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) {
            fprintf(stderr, "threads: pthread_create failed\n");
            return 1;
        }
    }
    for (int i = 0; i < NTHREADS; i++) {
        void *ret;
        pthread_join(t[i], &ret);
        if (ret)
            bad++;
    }
    if (bad) {
        fprintf(stderr, "threads: %d threads failed\n", bad);
        return 1;
    }
    puts("ok");
    return 0;
}
