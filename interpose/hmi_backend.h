/* hmi_backend.h — the tier backends of libhmalloc (DESIGN.md §5/§6, docs/formats.md §5):
 * where a placed allocation's memory comes from, how much of each tier's per-process
 * capacity is in use, and which allocator owns a pointer.
 *
 * Backends (the BACKEND field of a `tier` line):
 *   hugetlb        2 MiB hugepages from the reserved pool: one mmap(MAP_HUGETLB) per
 *                  block over 1 MiB, the length rounded up to 2 MiB; objects up to
 *                  1 MiB packed into 2 MiB hugepage chunks (hmi_arena.h), so a small
 *                  object takes its size class, not a whole page. Chunks are never
 *                  given back: the pool pages they hold stay the tier's.
 *   thp            anonymous mmap + madvise(MADV_HUGEPAGE), 2 MiB-aligned start;
 *                  objects up to 1 MiB packed into 2 MiB chunks (a mapping of their own
 *                  would never be backed by a huge page).
 *   numa:LIST      anonymous mmap + mbind(MPOL_BIND) to the nodes of LIST ("0",
 *                  "8-15", "0,2,4-7"; raw syscall, no libnuma at link time); objects up
 *                  to 256 KiB packed into 2 MiB chunks.
 *   memkind:KIND   memory where the memkind kind puts it (MEMKIND_HBW, MEMKIND_HBW_ALL,
 *                  MEMKIND_HBW_PREFERRED, MEMKIND_HBW_INTERLEAVE, MEMKIND_HBW_HUGETLB,
 *                  MEMKIND_HUGETLB, MEMKIND_REGULAR, MEMKIND_DAX_KMEM, MEMKIND_DEFAULT,
 *                  any exported MEMKIND_* kind): libmemkind.so.0 (dlopen'ed, not linked)
 *                  says whether the kind is available and gives its nodes, mbind mode
 *                  and page size; the memory is mapped and mbind'ed here, never by
 *                  memkind, whose finalizer zeroes its arenas at exit
 *                  (hmi_backend_memkind.c). Objects up to 256 KiB (1 MiB with 2 MiB
 *                  pages) are packed into 2 MiB chunks (hmi_arena.h), larger ones get
 *                  blocks of their own as for numa.
 *   umf:numa:LIST[:MODE]  UMF (Intel's Unified Memory Framework, libumf.so.1 dlopen'ed
 *                  on the first umf tier, never linked): its OS memory provider bound
 *                  to the nodes of LIST with MODE bind (default), preferred or
 *                  interleave, under a UMF disjoint pool (hmi_backend_umf.c).
 *   umf:hugetlb    UMF's disjoint pool over one region of 2 MiB hugepages that the
 *                  interposer maps (MAP_HUGETLB) when the tier is opened, as large as
 *                  the capacity (rounded down to 2 MiB; unlimited: the pool's free
 *                  pages), handed to UMF's fixed provider: objects up to 4 KiB in the
 *                  pool's slabs, larger ones page-rounded inside the region. Split
 *                  objects and static variables are not placed on it.
 *   At exit: nothing is unmapped or released on any backend; placed blocks stay
 *   valid while destructors and libc's final stdio flush run.
 *   Freed blocks kept (hmi_keep.c, every mmap backend): a freed block of its own or
 *   split object stays mapped and charged for the next request of its tier of the
 *   same shape (not for zeroed memory), up to HMTUNE_KEEP_FREED bytes per tier; a
 *   request that finds none, or that the capacity would refuse, unmaps them first.
 *   default        the fallback: nothing here allocates; the interposer calls glibc.
 *
 * Ownership (hmi_owner), lock-free for readers:
 *   - mmap backends: every block starts on a 2 MiB boundary and owns its 2 MiB
 *     granules (the part of the last granule past the block stays mapped PROT_NONE,
 *     so nothing else can be mapped there). A flat page map, one 32-bit entry per
 *     2 MiB of the 47-bit address space (256 MiB of MAP_NORESERVE address space,
 *     touched only where blocks live), holds the tier and, on a block's first
 *     granule, its length. One relaxed load answers the lookup.
 *   - arena chunks: the chunk's granule holds its tier and size class;
 *     an object's start is a multiple of the class size into the chunk.
 *   - UMF memory (umf:* tiers): every granule of the memory UMF's pool got from its
 *     provider holds the tier and a UMF mark; UMF's pool says where objects start.
 *   Everything else (including NULL) is glibc's: HMI_OWNER_LIBC.
 *
 * Capacity (per process, per tier): atomic counters, no lock. A block is charged
 * before it is handed out (mmap backends: the length rounded to 4 KiB, 2 MiB for
 * hugetlb; arena objects: their class size) and refused when used + charge > capacity.
 *
 * Threading: hmi_backend_open/close run single-threaded (the interposer's
 * constructor, or a test between phases); alloc/free/owner/usable/resize are
 * thread-safe. Nothing here calls the malloc family or stdio, except that dlopen
 * of memkind (in open) and memkind's own set-up use malloc internally: the
 * interposer must route re-entrant calls made during open to glibc. */
#ifndef HMI_BACKEND_H
#define HMI_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"
#include "hmi_placement.h"
#include "hmi_tiers.h"   /* HMI_MAX_TIERS, the backend kinds, hmi_why, the counters */

#define HMI_OWNER_LIBC  (-1)
#define HMI_REASON_MAX  192

/* Set up tier `index` (< HMI_MAX_TIERS) as `spec` with `capacity` bytes (0 and
 * unlimited != 0: no limit). Returns 0 when the backend can allocate; -1 when it
 * cannot (malformed spec, no hugepages, kind unavailable, node absent, index in use)
 * with one line in reason (NUL-terminated, truncated to reasonlen), e.g.
 * "numa:5: node 5 is not present". A `default` tier returns 0 and never allocates
 * (hmi_backend_alloc returns NULL). After -1 the tier is unusable: the interposer
 * warns once and sends its sites to the fallback. */
int hmi_backend_open(uint32_t index, const char *name, const char *spec,
                     uint64_t capacity, int unlimited,
                     char *reason, size_t reasonlen) HM_HIDDEN;

/* Forget tier index (tests, or the interposer at exit). Only when none of its blocks
 * is live; returns -1 (and does nothing) otherwise. */
int hmi_backend_close(uint32_t index) HM_HIDDEN;

/* 1 when tier index was opened and can allocate. */
int hmi_backend_available(uint32_t index) HM_HIDDEN;
enum hmi_backend_kind hmi_backend_kind(uint32_t index) HM_HIDDEN;

/* A block of size bytes aligned to align (a power of two; 0 means 16) from tier
 * index, or NULL (counted as not fitting) when it does not fit or the tier cannot
 * allocate. size 0 is served as 1. */
void *hmi_backend_alloc(uint32_t index, size_t size, size_t align) HM_HIDDEN;

/* The same, zero-filled (calloc). */
void *hmi_backend_alloc_zeroed(uint32_t index, size_t size, size_t align) HM_HIDDEN;

/* A split object (placement v2 `split` lines): one anonymous mapping of size bytes
 * (4 KiB pages, start aligned to max(align, 2 MiB)) in which only the ranges
 * [start, end) of ranges[0..n) (clipped to size) are put in tier index: hugetlb (and
 * memkind hugepage kinds) put 2 MiB hugepages over the range widened to 2 MiB
 * boundaries (taken in a mapping of their own, moved there by mremap; MAP_FIXED where
 * mremap cannot), thp madvises it MADV_HUGEPAGE, numa and memkind kinds
 * mbind it with the tier's policy; the rest stays ordinary memory. Each range is
 * charged what it takes in the tier (hugetlb: its new 2 MiB pages; else its 4 KiB
 * pages); a range that does not fit or whose mapping fails stays in ordinary memory
 * (counted in split_refused). placed[i] (n entries) gets the bytes of range i placed
 * (0 when not) and *mask bit i is set for it. NULL (counted as not fitting) when no
 * range could be placed, or the tier cannot allocate: the caller falls back. A freed
 * split object of the same ranges and length may be handed out again (hmi_keep.c),
 * with its old contents, unless zero: then the memory is a fresh (zero) mapping.
 * The block is owned by the tier as any mmap block (hmi_owner, usable size, free,
 * resize in place); free gives back exactly what was charged. */
void *hmi_backend_alloc_split(uint32_t index, size_t size, size_t align, int zero,
                              const struct hmi_range *ranges, uint32_t n,
                              uint64_t *placed, uint64_t *mask) HM_HIDDEN;

/* 1 when the calling thread's last hmi_backend_alloc, _alloc_zeroed or _alloc_split
 * handed out a kept block (hmi_keep.c) rather than new memory: its mapping's residency
 * was checked when it was first freed. */
int hmi_backend_reused(void) HM_HIDDEN;

/* Tier index that allocated p, or HMI_OWNER_LIBC. Lock-free, async-signal-safe. */
int hmi_owner(const void *p) HM_HIDDEN;

/* Free p, which hmi_owner reported as tier owner (>= 0). A p that is not an object's
 * start (hmi_backend_usable_size 0) frees nothing: the caller reports it. */
void hmi_backend_free(int owner, void *p) HM_HIDDEN;
/* The same when the caller has hmi_backend_usable_size(owner, p) at hand (the page
 * map holds the size of blocks and arena objects; a umf:* tier saves asking UMF). */
void hmi_backend_free_usable(int owner, void *p, size_t usable) HM_HIDDEN;

/* Bytes usable at p (>= the request), p owned by tier owner (>= 0); 0 when p is not
 * the start of an object the tier handed out (a pointer into one: a bad free). */
size_t hmi_backend_usable_size(int owner, const void *p) HM_HIDDEN;

/* realloc in place: 1 when p (owned by tier owner) can hold newsize bytes as it is
 * (the charge is unchanged; counted as one block freed and one placed, as the trace
 * counts a realloc), 0 when the caller must allocate, copy and free. */
int hmi_backend_resize_in_place(int owner, void *p, size_t newsize) HM_HIDDEN;

void hmi_backend_stats(uint32_t index, struct hmi_backend_stats *out) HM_HIDDEN;
/* Whether an open tier maps hugetlb pages (hugetlb, umf:hugetlb, memkind's hugepage
 * kinds): a fork child may inherit some (hmi_fork.h). */
int hmi_backend_hugetlb_open(void) HM_HIDDEN;
/* Whether p is in a block, arena chunk or UMF granule of a tier that maps hugetlb
 * pages (part of a split block may be 4 KiB pages); then [*lo, *hi) is the read-write
 * memory it belongs to. Lock-free; walks back to the block's first granule. */
int hmi_backend_hugetlb_at(const void *p, uintptr_t *lo, uintptr_t *hi) HM_HIDDEN;

/* How tier index maps its memory, for ranges it did not map itself (static variables,
 * hmi_static.c): hugepages (MAP_HUGETLB, 2 MiB), THP, and the mbind mode (0: none)
 * with its node mask (maxnode bits, as mbind(2) takes them). -1 when the tier is not
 * open and usable. */
struct hmi_backend_policy {
    enum hmi_backend_kind kind;
    int map_huge, thp, mpol;
    const unsigned long *nodes;
    unsigned long maxnode;
};
int hmi_backend_policy(uint32_t index, struct hmi_backend_policy *out) HM_HIDDEN;

/* Charge n bytes of tier index's capacity for such a range (0, or -1 when they do not
 * fit: nothing charged), and give them back. */
int hmi_backend_charge(uint32_t index, uint64_t n) HM_HIDDEN;
void hmi_backend_uncharge(uint32_t index, uint64_t n) HM_HIDDEN;

/* Fork (pthread_atfork, from the interposer): take the locks of the small-object
 * arenas and the gates of the UMF pools (no thread is inside UMF while the process
 * forks) before fork, release them after it in the parent and in the child. */
void hmi_backend_atfork_prepare(void) HM_HIDDEN;
void hmi_backend_atfork_release(void) HM_HIDDEN;

#endif
