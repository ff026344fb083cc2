/* hmi_classes.h — the size classes and slab sizes of libhmalloc's small-object arena
 * (hmi_arena.h): arithmetic only, no state (hmi_classes.c). The page map's lookup of
 * an object's class (hmi_pagemap.h) and the arena both use it.
 *
 * Size classes: 16..512 bytes in steps of 16, then 32 classes per doubling up to
 * 1 MiB (384 classes): above 512 bytes at most 3.1 % rounding, below it only the
 * 16-byte alignment every malloc gives (a 24-byte object takes 32 bytes, as in
 * glibc). Every power of two is a class and chunks are 2 MiB-aligned, so an object of
 * a power-of-two class is aligned to its size: an aligned request takes the
 * power-of-two class of max(size, align).
 * Slabs: a chunk is cut into slabs of one size, a power of two from 64 KiB to 2 MiB:
 * the class's size times 8, rounded up (so a slab's unused end is at most 1/8 of it;
 * classes over 256 KiB take whole chunks). A slab holds objects of one class, cut from
 * its start in order, and is the class's for as long as the process lives. */
#ifndef HMI_CLASSES_H
#define HMI_CLASSES_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"

#define HMI_ARENA_CLASSES 384u
#define HMI_ARENA_CHUNK   (2ull << 20)
#define HMI_SLAB_SHIFT    16u                  /* the smallest slab: 64 KiB */
#define HMI_SLAB_CODES    6u                   /* slabs of 64 KiB << code, up to 2 MiB */
#define HMI_SLABS_MAX     (HMI_ARENA_CHUNK >> HMI_SLAB_SHIFT)     /* per chunk: 32 */
#define HMI_ARENA_MAX     (1ull << 20)         /* the largest class */
#define HMI_ARENA_RUN     1024u                /* a batch's bytes (at least one object) */

/* The class of a request of size bytes aligned to align (a power of two, >= 16),
 * or -1 when it is larger than HMI_ARENA_MAX. */
int hmi_arena_class(size_t size, size_t align) HM_HIDDEN;

/* The bytes of an object of class c (inline: every arena allocation and free, and
 * every lookup of an arena object's class, asks). */
HM_INLINE size_t hmi_arena_class_size(unsigned c)
{
    if (c < 32)
        return (size_t)(c + 1) * 16;
    unsigned k = (c - 32) / 32, j = (c - 32) % 32;
    return ((size_t)512 << k) + (size_t)(j + 1) * ((size_t)16 << k);
}

/* The slab size code of class cls: its slabs have 64 KiB << code bytes. */
unsigned hmi_arena_slab_code(unsigned cls) HM_HIDDEN;

/* Objects a striped class's shard takes from or gives back to its pool at a time:
 * HMI_ARENA_RUN / size, at least 1. */
unsigned hmi_arena_batch(unsigned cls) HM_HIDDEN;

#endif
