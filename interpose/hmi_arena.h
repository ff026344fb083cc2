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
 * Size classes: 16..128 bytes in steps of 16, then four classes per doubling up to
 * 1 MiB (60 classes; at most 25 % rounding). Every power of two is a class and
 * chunks are 2 MiB-aligned, so an object of a power-of-two class is aligned to its
 * size: an aligned request takes the power-of-two class of max(size, align).
 * A chunk holds objects of one class of one tier, carved from its start (bump), and
 * freed objects go to the class's free list (their first word links them). Each
 * (tier, class) has one shard per thread stripe (hm_util.h), with its own mutex,
 * free list and chunk, so threads of different stripes never contend; a chunk is
 * mapped with the shard's lock held (mmap and mbind only: no allocation). Chunks are never unmapped while the tier is open.
 * Fork: the interposer's pthread_atfork handlers take every lock of the open
 * tiers (prepare) and release them (parent, child). */
#ifndef HMI_ARENA_H
#define HMI_ARENA_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"

#define HMI_ARENA_CLASSES 60u
#define HMI_ARENA_CHUNK   (2ull << 20)
#define HMI_ARENA_MAX     (1ull << 20)         /* the largest class */

/* The class of a request of size bytes aligned to align (a power of two, >= 16),
 * or -1 when it is larger than HMI_ARENA_MAX. */
int hmi_arena_class(size_t size, size_t align) HM_HIDDEN;
size_t hmi_arena_class_size(unsigned cls) HM_HIDDEN;

/* Maps one zero-filled, 2 MiB-aligned chunk of HMI_ARENA_CHUNK bytes for (tier, cls)
 * and records it as the tier's; NULL when the tier has no memory left. */
typedef void *(*hmi_chunk_fn)(uint32_t tier, unsigned cls);

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
