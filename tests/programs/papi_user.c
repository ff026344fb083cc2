/* papi_user: an application that uses PAPI itself (the tracer's counters must not
 * take it away: tests/py/test_counters.py). Each of two threads counts its own CPU
 * time (perf::TASK-CLOCK, a software event every Linux PMU-less host has) over a
 * loop and its page faults over 8 MiB it touches; prints "papi ok" and each thread's
 * counts when every PAPI call succeeded, else the failing call and exits 1. */
#include <papi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned long tid(void) { return (unsigned long)syscall(SYS_gettid); }

static int check(int r, const char *what)
{
    if (r != PAPI_OK) {
        printf("papi failed: %s: %s\n", what, PAPI_strerror(r));
        exit(1);
    }
    return r;
}

static void *work(void *arg)
{
    long long v[2] = { 0, 0 };
    int es = PAPI_NULL;
    check(PAPI_register_thread(), "PAPI_register_thread");
    check(PAPI_create_eventset(&es), "PAPI_create_eventset");
    check(PAPI_add_named_event(es, "perf::TASK-CLOCK"), "PAPI_add_named_event TASK-CLOCK");
    check(PAPI_add_named_event(es, "perf::PAGE-FAULTS"), "PAPI_add_named_event PAGE-FAULTS");
    check(PAPI_start(es), "PAPI_start");
    char *p = malloc(8 << 20);
    for (size_t i = 0; i < (8u << 20); i += 4096)
        p[i] = (char)i;
    volatile double s = 0;
    for (long i = 0; i < 60000000; i++)
        s += (double)i * 0.5;
    check(PAPI_stop(es, v), "PAPI_stop");
    free(p);
    if (v[0] <= 0 || v[1] < 1000) {
        printf("papi failed: counts %lld ns, %lld faults\n", v[0], v[1]);
        exit(1);
    }
    printf("thread %ld: task-clock %s, page faults %lld\n", (long)(intptr_t)arg,
           v[0] > 10000000 ? "over 10 ms" : "under 10 ms", v[1]);
    check(PAPI_cleanup_eventset(es), "PAPI_cleanup_eventset");
    check(PAPI_destroy_eventset(&es), "PAPI_destroy_eventset");
    return NULL;
}

int main(void)
{
    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT) {
        printf("papi failed: PAPI_library_init\n");
        return 1;
    }
    check(PAPI_thread_init(tid), "PAPI_thread_init");
    pthread_t t;
    pthread_create(&t, NULL, work, (void *)1);
    work((void *)0);
    pthread_join(t, NULL);
    printf("papi ok\n");
    return 0;
}
