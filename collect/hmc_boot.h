/* hmc_boot.h — what libhmtrace.so's bootstrap (hmc_boot.c) shares with its entry
 * points (hmc_shim.c): the wrapped functions, the initialization state and the size
 * thresholds every call compares with. Plain hidden globals: the entry points read
 * them with one PC-relative load each, as the file-local statics they were. Internal
 * to libhmtrace.so. */
#ifndef HMC_BOOT_H
#define HMC_BOOT_H

#include <pthread.h>
#include <stdint.h>
#include "hm_real.h"
#include "hm_util.h"

extern struct hm_alloc_fns hmc_rm HM_HIDDEN;   /* the allocator wrapped (hm_real.h) */
/* The other functions libhmtrace.so wraps. */
struct hmc_real_fns {
    int (*dlclose)(void *);
    void (*exit_)(int) __attribute__((noreturn));
    void (*Exit_)(int) __attribute__((noreturn));
    int (*execve)(const char *, char *const[], char *const[]);
    int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
};
extern struct hmc_real_fns hmc_real HM_HIDDEN;

enum { HMC_ST_NONE, HMC_ST_INIT, HMC_ST_READY, HMC_ST_OFF };
extern _Atomic int hmc_state HM_HIDDEN;
extern uint64_t hmc_min HM_HIDDEN;       /* 0 until ready: every call takes the slow path */
extern uint64_t hmc_free_min HM_HIDDEN;  /* likewise for the free/realloc filter */
extern int hmc_depth HM_HIDDEN;          /* frames recorded per call (HMTUNE_DEPTH) */
extern int hmc_sampling HM_HIDDEN;       /* threads get a sampler when they start */

/* Initialize (options, trace stream, signals, sampler) unless another call already
 * does or did; before the C library's own start-up (no environment yet) nothing:
 * the constructor initializes. */
void hmc_init_once(void) HM_HIDDEN;

#endif
