/* ps_state.h — the model's state (struct ps_model: its threads with their pending
 * groups and open calls, its tasks with their live blocks), shared by ps_model.c
 * (fusion, threads and tasks, the calls' semantics) and ps_samples.c (a group's
 * samples and page faults attributed and counted). Internal to those two files. */
#ifndef PS_STATE_H
#define PS_STATE_H

#include "ps.h"

enum { CALL_NONE, CALL_ALLOC, CALL_FREE, CALL_REALLOC };

struct thr {
    uint64_t key;
    uint32_t task, thread_no;          /* task: index into m->tasks */
    int pending, has_time, call;
    int gcalls;                        /* the pending group has call (or sampler) events */
    uint64_t gtime, last_time;
    struct ps_pair *g;                 /* the pending group's pairs */
    size_t gn, gcap;
    uint64_t c_t0, c_size, c_in, c_site, c_seq;  /* the open call */
    uint32_t c_scale;                  /* its 41000040, 0 when it has none */
    uint32_t cnt_slot;                 /* its place in the counters' threads (ps_counters.c) */
};

struct task {
    uint64_t key;
    struct ps_map *map;                /* its live blocks */
    uint32_t task_no;                  /* output number */
    uint32_t grp0;                     /* group of (task, site 0): unattributed samples */
    uint64_t obj_site;                 /* one-entry cache of object -> group */
    uint32_t obj_grp, has_obj;
    /* the profile's one-entry cache of the block at an object's address: a copy,
     * dropped when that block ends (a new block cannot overlap a live one: the one it
     * collides with ends first, start_block) */
    uint64_t pc_start, pc_size;
    uint32_t pc_grp, pc_valid;
};

struct ps_model {
    const struct ps_header *h;
    struct ps_rows *rows;
    struct ps_stats *st;
    struct ps_sites *sites;
    struct ps_life *life;
    struct ps_profile *prof;
    struct ps_counters *cnt;
    struct ps_live live;
    int per_thread;
    int use_lookahead;
    size_t next_try;                   /* --per-thread-time: queued endpoints before a sweep */
    struct thr *thr;
    size_t nthr, capthr;
    struct task *tasks;
    size_t ntasks, captasks;
    uint32_t *hash;                    /* thread key -> index + 1 */
    size_t hcap;
    uint64_t last_key;                 /* one-entry cache: lines come in runs per thread */
    uint32_t last_idx;
    uint32_t *pend;                    /* threads with a pending group, in arrival order */
    size_t npend, cappend;
    uint64_t now;
    int has_now;
};

/* ps_samples.c: the samples and page faults of th's pending group, attributed to a
 * (task, site) group and counted (after the group's calls: ps_model.c). */
void ps_group_samples(struct ps_model *m, struct thr *th);

#endif
