/* hmi_arena.h — the small-object arena of libhmalloc's tiers: placed objects of up
 * to 1 MiB packed into 2 MiB chunks that the tier's backend maps (hmi_mmap.c).
 *
 * Why an arena of our own: the memkind backend used to hand placed blocks to
 * libmemkind's jemalloc arenas, and libmemkind's destructor (memkind_finalize)
 * destroys those arenas at exit, zeroing every block still live in them, before
 * libc flushes stdio and before the destructors of libraries loaded later run
 * (measured, MACHINE-NOTES.md: buffered stdout placed through MEMKIND_HBW came out
 * as NUL bytes). Memory served from here is never given back while the process
 * lives, and nothing here runs at exit, so placed blocks stay valid until the
 * process is gone, whatever destructors run and in whatever order.
 *
 * Size classes and slab sizes: hmi_classes.h.
 * The chunk's slab size is in its page-map entry and each slab's class in the chunk
 * table's row (hmi_pagemap.h), which is how free finds an object's class.
 * Classes of up to 8 KiB: one pool per (tier, class), shared by every thread, and one
 * shard per thread stripe (hm_util.h), each with its own mutex. A shard holds at most
 * batch(cls) freed objects (HMI_ARENA_RUN bytes' worth, at least one), one more batch
 * of them, and a run of fewer than batch(cls) objects cut from the pool's current
 * slab; a freed object goes to the freeing thread's shard, whose batch beyond that
 * goes to the pool; a shard with nothing takes a batch from the pool, else a run of
 * batch(cls) objects cut from its slab, else the pool cuts a new slab. So the
 * stripes share the class's slabs, and the slabs cut are bounded by bytes, not by
 * threads: a slab is cut only when the stripe asking holds nothing, so the slabs hold
 * at most the class's most objects live at once plus (3 batch(cls) - 1) objects per
 * other stripe that uses the class (what the advisor's charge and --reserve-hugepages
 * count: hmtune/advisor/granularity.py cut). The allocation of a shard that holds
 * objects takes its own mutex only, as before.
 * A larger class has one shard for all threads (a slab per thread would hold back up
 * to 2 MiB each), which takes whole slabs and keeps every object freed: its slabs are
 * bounded by its most objects live at once.
 * Per tier and slab size one carver, with its own mutex, cuts slabs from the chunk
 * it holds and maps the next chunk (mmap and mbind, or the UMF provider: no
 * allocation) with the lock held. Chunks are never unmapped while the tier is open.
 * Lock order: shard, pool, carver.
 * Fork: the interposer's pthread_atfork handlers take every lock of the open
 * tiers (prepare: shards, then pools, then carvers) and release them (parent,
 * child). */
#ifndef HMI_ARENA_H
#define HMI_ARENA_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"
#include "hmi_classes.h"   /* the size classes and slab sizes */

#define HMI_ARENA_STRIPED_MAX 159u             /* the 8 KiB class: larger ones, one shard */

/* Chunks the arena of tier mapped since the tier was opened (never given back). */
uint64_t hmi_arena_chunks(uint32_t tier) HM_HIDDEN;

/* Maps one zero-filled, 2 MiB-aligned chunk of HMI_ARENA_CHUNK bytes for tier, to be
 * cut into slabs of size code, and records it as the tier's (hmi_chunk_record); NULL
 * when the tier has no memory left. */
typedef void *(*hmi_chunk_fn)(uint32_t tier, unsigned code);

/* An object of class cls from tier (NULL when no chunk can be mapped); zero: the
 * first size bytes are zero. */
void *hmi_arena_alloc(uint32_t tier, unsigned cls, size_t size, int zero,
                      hmi_chunk_fn map_chunk) HM_HIDDEN;
/* p, an object of class cls of tier, is free again. */
void hmi_arena_free(uint32_t tier, unsigned cls, void *p) HM_HIDDEN;
/* Forget the tier's free lists and current chunks; on: the tier allocates from the
 * arena from now on (hmi_backend_open/close, single-threaded; the backend unmaps the
 * chunks). 0, or -1 when the tier's class state cannot be mapped. */
int hmi_arena_reset(uint32_t tier, int on) HM_HIDDEN;

void hmi_arena_atfork_prepare(void) HM_HIDDEN;
void hmi_arena_atfork_release(void) HM_HIDDEN;

#endif
