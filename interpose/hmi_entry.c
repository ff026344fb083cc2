/* hmi_entry.c — the state libhmalloc.so's entry points read on every call
 * (hmi_entry.h), set by the bootstrap (hmi_boot.c). */
#include "hmi_entry.h"

#include <stdint.h>

struct hm_alloc_fns hmi_rm;
int (*hmi_real_dlclose)(void *);

_Atomic int hmi_state;
size_t hmi_win_lo = 0, hmi_win_span = SIZE_MAX;
int hmi_owning;
int hmi_lazy;
int hmi_baseline;
struct hmi_placement hmi_pl;
__thread int hmi_t_busy __attribute__((tls_model("initial-exec")));
