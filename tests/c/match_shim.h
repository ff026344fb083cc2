/* match_shim.h — the entry points of libtm_match.so (match_shim.c), through which
 * tests/c/test_match.c drives the site matcher from outside the library, as an
 * application's calls reach libhmalloc.so. */
#ifndef MATCH_SHIM_H
#define MATCH_SHIM_H

#include <stddef.h>
#include <stdint.h>

#define TM_API __attribute__((visibility("default")))

/* Parse placement text and build the matcher on it (the first call also starts the
 * module map and the unwinder). 0, or -1 with err filled. */
TM_API int tm_init(const char *text, char *err, size_t errlen);
/* capture_depth > 0: hm_backtrace into out, returns the frame count; 0: returns
 * hmi_match_here(). One call instruction for both, so both see the same stack. */
TM_API int tm_probe(int capture_depth, uint64_t *out);
/* As tm_probe, but capture_depth 0 decides as libhmalloc's slow paths do:
 * hmi_match_fp, then hmi_match_fp_decide on a miss, keyed by this function's CFA. */
TM_API int tm_probe_fp(int capture_depth, uint64_t *out);
TM_API uint64_t tm_fp_hits(void);
TM_API int tm_chain(const uint64_t *raw, int n);
TM_API int tm_size_ok(size_t size);
TM_API int tm_depth(void);
TM_API uint64_t tm_misses(void);
TM_API void tm_invalidate(void);
/* "module+0xOFFSET" of a return address as collect writes it. */
TM_API void tm_frame(uint64_t addr, char *buf, size_t len);

#endif
