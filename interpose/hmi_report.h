/* hmi_report.h — what libhmalloc tells the user at exit (docs/formats.md §6): per
 * tier the bytes placed, high-water mark, blocks placed and not fitting, the
 * residency actually observed; per site the matches; as stderr lines and as JSON
 * (HMTUNE_STATS=FILE).
 *
 * Residency. Blocks of 64 KiB and more on a tier are entered in a lock-free table
 * (HMI_LIVE_SLOTS, probed at most HMI_LIVE_PROBE slots from the pointer's hash; a
 * block that finds no slot is counted as unchecked). When such a block is freed, and
 * at exit for those still live, up to HMI_RES_SAMPLES pages spread over it are
 * examined: move_pages(2) says which node each page is on (or that it was never
 * touched), get_mempolicy(2) on the block gives the nodes it was meant for (the
 * numa backend's mbind, memkind's policy for its kind; MPOL_DEFAULT: any node), and
 * for thp blocks /proc/self/smaps says how much of the block is in huge pages (at
 * most HMI_THP_CHECKS blocks, as reading smaps costs milliseconds). Each sampled
 * page stands for its share of the block: the byte counts are estimates. */
#ifndef HMI_REPORT_H
#define HMI_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include "hm_util.h"

#define HMI_LIVE_SLOTS  (1u << 16)
#define HMI_LIVE_PROBE  64u
#define HMI_LIVE_MIN    (64u << 10)
#define HMI_RES_SAMPLES 64u
#define HMI_THP_CHECKS  32u

/* Per site counters, striped (hm_util.h: HM_STRIPES copies of the table, a thread
 * writing its stripe's), so that threads allocating from one site share no line. */
struct hmi_site_stats {
    uint64_t matches;       /* calls whose chain matched the site */
    uint64_t placed;        /* of those, served by the site's tier */
    uint64_t bytes;         /* bytes requested by the placed ones (a split site's:
                             * the bytes of its ranges, in its tier) */
    uint64_t fell_back;     /* tier full, refused or unavailable: default allocator */
};

struct hmi_residency {
    uint64_t blocks_checked, blocks_unchecked;
    uint64_t bytes_checked;         /* sum of the checked blocks' lengths */
    uint64_t bytes_intended;        /* on the intended nodes / in huge pages */
    uint64_t bytes_elsewhere;       /* present, but on another node / small pages */
    uint64_t bytes_absent;          /* never touched (no page yet) */
};

/* Set up the tables for nsites sites (mmap; -1 on failure). */
int hmi_report_init(uint32_t nsites) HM_HIDDEN;
/* [HM_STRIPES][hmi_site_stride]: each stripe's row starts on a cache line of its own */
extern struct hmi_site_stats *hmi_site_stripes HM_HIDDEN;
extern uint32_t hmi_site_stride HM_HIDDEN;

/* The calling thread's counters of site. */
HM_INLINE struct hmi_site_stats *hmi_site_mine(int site)
{
    return &hmi_site_stripes[(size_t)hm_stripe() * hmi_site_stride + (uint32_t)site];
}
/* All threads' counters of site, summed. */
void hmi_site_sum(uint32_t site, struct hmi_site_stats *out) HM_HIDDEN;
/* An in-window allocation matched no site. */
void hmi_count_unmatched(void) HM_HIDDEN;

/* Baseline mode (HMTUNE_BASELINE): its placements are counted as site index
 * nsites (the table has one more entry), all on tier 0; name goes into the JSON. */
void hmi_report_baseline(const char *name) HM_HIDDEN;

/* A block of len bytes at p was placed on tier t / is about to be freed from it
 * (usable: its hmi_backend_usable_size). */
void hmi_report_placed(int tier, void *p, size_t len) HM_HIDDEN;
void hmi_report_freeing(int tier, void *p, size_t usable) HM_HIDDEN;

/* Split sites (placement v2 `split` lines). Set up the per-range counters of pl's
 * split sites (mmap; -1 on failure); pl must stay alive. */
struct hmi_placement;
int hmi_report_split_init(const struct hmi_placement *pl) HM_HIDDEN;
/* A split object of site was placed: placed[i] bytes of its range i (0: not). */
void hmi_report_split(int site, const uint64_t *placed, uint32_t n) HM_HIDDEN;
/* As hmi_report_placed for a split object of site whose ranges in mask were placed:
 * its residency is checked over those ranges only (the rest is not the tier's). */
void hmi_report_placed_split(int tier, void *p, size_t len, int site, uint64_t mask) HM_HIDDEN;

/* Check the blocks still live, then write the summary lines to errfd (unless quiet
 * or errfd < 0) and the JSON file (when path is set; written as path.tmp.PID and
 * renamed; a failure is said on errfd). rank < 0: not MPI. Uses snprintf: call it
 * from the destructor, outside any allocator lock. */
void hmi_report_exit(int errfd, const struct hmi_placement *pl, const char *placement_path,
                     int rank, int quiet, const char *json_path) HM_HIDDEN;

/* Residency of one block (tests). */
void hmi_report_residency(int tier, void *p, size_t len, struct hmi_residency *r) HM_HIDDEN;
void hmi_report_tier_residency(int tier, struct hmi_residency *out) HM_HIDDEN;

#endif
