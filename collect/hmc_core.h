/* hmc_core.h — the tracer core: per-thread record buffers, stack interning, the
 * process stream file, flushing at exit / crash / fork. No symbol interposition
 * here (that is hmc_shim.c), so tests drive the core directly. */
#ifndef HMC_CORE_H
#define HMC_CORE_H

#include <stdatomic.h>
#include <stdint.h>
#include "hm_util.h"
#include "hmc_config.h"
#include "hmc_stream.h"

struct hmc_thread;

/* Flag kept by the shim: nonzero while this thread is inside the tracer. */
extern __thread int hmc_busy __attribute__((tls_model("initial-exec")));

int hmc_core_init(const struct hmc_config *cfg) HM_HIDDEN;  /* 0, or -1 (message printed) */
int hmc_core_active(void) HM_HIDDEN;
struct hmc_thread *hmc_thread_get(void) HM_HIDDEN;            /* this thread's state, created once */
/* Record an allocating call whose raw return-address chain is frames[0..n). */
void hmc_record_call(struct hmc_thread *t, int kind, uint64_t t0, uint64_t t1, uint64_t size,
                     uint64_t align, uint64_t ptr_in, uint64_t ptr_out,
                     const uint64_t *frames, int n) HM_HIDDEN;
/* The same for a call below min_size traced by small-call sampling (hmc_small.h),
 * standing for weight (>= 1: the sampling interval) calls. */
void hmc_record_sampled_call(struct hmc_thread *t, int kind, uint64_t t0, uint64_t t1,
                             uint64_t size, uint64_t align, uint64_t ptr_in, uint64_t ptr_out,
                             const uint64_t *frames, int n, uint64_t weight) HM_HIDDEN;
void hmc_record_free(struct hmc_thread *t, uint64_t t0, uint64_t t1, uint64_t ptr) HM_HIDDEN;
void hmc_add_tracer_ns(struct hmc_thread *t, uint64_t ticks, uint64_t calls) HM_HIDDEN;
void hmc_count_call(struct hmc_thread *t) HM_HIDDEN;
/* Write everything recorded so far and a process-end record. */
void hmc_finish(int end_kind, int signo) HM_HIDDEN;
void hmc_thread_exit(void) HM_HIDDEN;
/* exec failed after hmc_finish(HME_EXEC): go back to buffered writing. */
void hmc_exec_failed(void) HM_HIDDEN;
void hmc_atfork_prepare(void) HM_HIDDEN;
void hmc_atfork_parent(void) HM_HIDDEN;
void hmc_atfork_child(void) HM_HIDDEN;
struct hm_module;
/* hm_modmap callback: a new module goes on the process stream. */
void hmc_module_cb(const struct hm_module *m) HM_HIDDEN;
/* Samples (hmc_sampler.c): async-signal-safe append of one whole record to the
 * thread's sample stream; the stream's THREAD record; flush outside handlers. */
void hmc_record_sample(struct hmc_thread *t, const void *rec, uint32_t bytes) HM_HIDDEN;
void hmc_samples_begin(struct hmc_thread *t, uint64_t stack_lo, uint64_t stack_hi) HM_HIDDEN;
/* The same for sampled page faults, on a stream of their own (HMR_FAULT_STREAM). */
void hmc_record_fault(struct hmc_thread *t, const void *rec, uint32_t bytes) HM_HIDDEN;
void hmc_faults_begin(struct hmc_thread *t, uint64_t stack_lo, uint64_t stack_hi) HM_HIDDEN;
void hmc_samples_flush(struct hmc_thread *t) HM_HIDDEN;
void *hmc_thread_sampler(struct hmc_thread *t) HM_HIDDEN;
void hmc_thread_set_sampler(struct hmc_thread *t, void *s) HM_HIDDEN;
struct hmc_thread *hmc_thread_self(void) HM_HIDDEN;
/* Called at the start of hmc_thread_exit (the sampler stops its timer there). */
void hmc_set_thread_exit_hook(void (*fn)(struct hmc_thread *)) HM_HIDDEN;
/* Called by hmc_finish before it writes anything, except on a crash signal (the
 * sampler drains the calling thread's rings there). */
void hmc_set_finish_hook(void (*fn)(void)) HM_HIDDEN;
/* Called by hmc_finish (process exit, exec, fatal signal) for every thread still
 * running, before its samples are written (the sampler's totals so far). */
void hmc_set_thread_finish_hook(void (*fn)(struct hmc_thread *)) HM_HIDDEN;
/* One record on the process stream (stream 0), written at once. */
void hmc_write_process_record(const void *rec, uint32_t bytes) HM_HIDDEN;
/* A process record of type, kind and aux whose body is the text a, NUL-terminated, then
 * when b is not NULL the text b (at most 200 bytes), NUL-terminated; a is cut to what
 * a 1 KiB record holds. */
void hmc_write_text_record(int type, int kind, uint32_t aux, const char *a,
                           const char *b) HM_HIDDEN;
/* The stream file itself, its path included: hmc_file.h. */

#endif
