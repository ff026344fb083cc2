/* hmi_match.h — the interposer's site matcher: which tier of placement.txt an
 * allocation's call site goes to (DESIGN.md §2, §6; docs/formats.md §1, §5).
 *
 * Keying. The placement names frames as (module path, offset from the module's load
 * base). The site table is built once, keyed on chains of (placement module index,
 * offset): it needs no module ids, so libraries dlopen'ed later need no rebuild.
 * At match time each raw return address goes through hm_modmap_frame (the code
 * collect uses) to (module id, offset); a module id is resolved to a placement module
 * index the first time it is seen, by path hash and path bytes, and remembered in an
 * id-indexed array (ids are never reused, hm_modmap.h, so an entry never goes stale).
 * A frame outside every module is the placement module "??" with the address as its
 * offset, as collect writes it. A frame in a module the placement does not name ends
 * the lookup at once (-1).
 *
 * Chains. The chain is the call stack cut to the placement's depth (at most
 * HM_MAX_DEPTH), innermost first, and a site matches only when its frame count and
 * every frame are equal. A listed chain shorter than depth was a whole stack when
 * it was recorded (collect records at least `depth` frames when the stack has them),
 * so it matches a stack exactly that deep.
 *
 * Cache. Each thread keeps HMI_MATCH_CACHE_SLOTS direct-mapped entries keyed by a
 * hash of the raw return addresses, holding the addresses themselves, the decision
 * and the stamp (init epoch, hm_modmap_generation) it was made under: a repeated call
 * from one site costs the hash and a compare of at most depth addresses. A dlclose
 * that the interposer reports with hm_modmap_invalidate makes every entry stale (the
 * same addresses may later be another library's). A decision that looked at a frame
 * outside every module is not cached: a library may be mapped there later without
 * a dlclose (dlopen is not wrapped), and "??" frames are rare.
 *
 * Memory: mmap only, no malloc family, no stdio; the tables are read-only once
 * hmi_match_init returns, and lookups take no lock. */
#ifndef HMI_MATCH_H
#define HMI_MATCH_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"
#include "hmi_placement.h"

#define HMI_MATCH_CACHE_SLOTS 32u   /* per thread, a power of two */

/* The size window of the current placement; empty (lo > hi) before init and when
 * the placement places nothing. Written by hmi_match_init only. */
extern size_t hmi_match_size_lo HM_HIDDEN;
extern size_t hmi_match_size_hi HM_HIDDEN;

/* Build the tables for p, replacing those of an earlier call. p (its arena) must stay
 * alive while matching. Not concurrent with matching: call it from the interposer's
 * constructor. hm_modmap_init must have been called; hmi_match_here also needs
 * hm_unwind_init, with an address inside the interposer. 0, or -1 when mmap fails
 * (then nothing matches). */
int hmi_match_init(const struct hmi_placement *p) HM_HIDDEN;
/* Unmap the tables; nothing matches afterwards. */
void hmi_match_fini(void) HM_HIDDEN;

/* Whether a request of size bytes may belong to a placed site: checked before any
 * unwinding. */
HM_INLINE int hmi_match_size_ok(size_t size)
{
    return size >= hmi_match_size_lo && size <= hmi_match_size_hi;
}

/* Tier index of the site whose chain is raw[0..n) (return addresses, innermost
 * first, the interposer's own frames already removed; frames past the placement's
 * depth are ignored), or -1 for the fallback. */
int hmi_match_chain(const uint64_t *raw, int n) HM_HIDDEN;
/* The same, as the index into the placement's sites of the matching line (the
 * first, when a chain is listed twice), or -1. */
int hmi_match_site(const uint64_t *raw, int n) HM_HIDDEN;
/* Tier of site index site (-1 for -1). */
int hmi_match_site_tier(int site) HM_HIDDEN;
/* hmi_match_here as a site index. */
int hmi_match_here_site(void) HM_HIDDEN;
/* Unwind the caller's stack as collect does (hm_backtrace: the placement's depth,
 * the interposer's frames removed) and match it. */
int hmi_match_here(void) HM_HIDDEN;
/* Effective chain depth (min(placement depth, HM_MAX_DEPTH)); 0 before init. */
int hmi_match_depth(void) HM_HIDDEN;
/* Cache misses of the calling thread so far (tests, diagnostics). */
uint64_t hmi_match_thread_misses(void) HM_HIDDEN;

/* Stack fingerprints: skipping the unwind on a repeated call.
 *
 * A call reached again through the same path from a slow path whose canonical frame
 * address (CFA, __builtin_dwarf_cfa) is the same finds its return addresses at the
 * same stack addresses. Each thread keeps HMI_FP_SLOTS sets of HMI_FP_WAYS entries,
 * the set chosen by the CFA, each entry holding its CFA, the chain, the stack address
 * of each of its return addresses (from hm_backtrace_where) and the decision; a
 * lookup reads, for each entry of the set with this CFA, those addresses and
 * compares: all equal means the unwinder would produce exactly this chain — each
 * frame's location follows from the frame below it and the return address it holds —
 * for ~1 ns a frame instead of ~6.5 (bench-interpose). Several entries per set, because
 * a program calls malloc from many paths at the same stack depth (one CFA): BWA-MEM's
 * 3.09 M calls with every site listed hit 48 % with one entry per CFA, 99.98 % with
 * 8 ways, and the unwinds left (libunwind masks signals around each lookup of its
 * tables: a system call) took 1.4-1.8 s of system CPU a run, then 0.1 s.
 * Entries are only made and used on
 * the thread's own stack as pthread_getattr_np gives it, with every address inside
 * it, so the reads never leave mapped memory (a coroutine's stack, sigaltstack:
 * never fingerprinted). An entry is filled when the chain was decided twice on its
 * raw addresses (hmi_match_site's cache hit) or is a placed site's (it recurs: it was
 * recorded as a site), within a budget, so that calls from ever-changing stack depths
 * do not pay for fills; a full set replaces its entries in turn. Stale like the
 * raw cache: epoch and hm_modmap generation. */
#define HMI_FP_SLOTS   8u          /* sets, a power of two */
#define HMI_FP_WAYS    8u          /* entries per set */
#define HMI_FP_DEPTH   16          /* chains deeper than this are not fingerprinted */
#define HMI_FP_MISS    (-2)
/* Site index (or -1) for the call whose slow path has CFA cfa, or HMI_FP_MISS. */
int hmi_match_fp(uint64_t cfa) HM_HIDDEN;
/* After a miss: decide as hmi_match_here_site, and fingerprint the call when
 * worthwhile. */
int hmi_match_fp_decide(uint64_t cfa) HM_HIDDEN;
/* Fingerprint hits of the calling thread so far (tests, diagnostics). */
uint64_t hmi_match_thread_fp_hits(void) HM_HIDDEN;

#endif
