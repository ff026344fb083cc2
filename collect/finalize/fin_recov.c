/* fin_recov.c — where the software sampler's addresses came from, and why the rest
 * have none: the counts behind trace.summary.json's "address_recovery" and the
 * labels of events 41000024/41000026-41000029 (docs/formats.md §2 and §3). */
#include "fin.h"

#include <string.h>

/* The keys (summary JSON) of a value table, by value: X-macro rows of hm_events.h. */
#define KEY_AT(v, key, label) [v] = key,

/* enum hms_why (the values of 41000026) as JSON keys; index HMS_WHY_N: a sample
 * without an address and without a reason (PEBS/IBS, or a stream from before the
 * reasons). Index 0 (the address was computed) is never a key. */
static const char *const g_why[HMS_WHY_N + 1] = {
    [HMS_WHY_NONE] = "direct", HM_SAMPLE_WHY_VALUES(KEY_AT) [HMS_WHY_N] = "other",
};
static const struct fin_value g_why_pcf[] = { HM_SAMPLE_WHY_VALUES(FIN_VALUE) };
static const struct fin_value g_recovered_pcf[] = { HM_SAMPLE_RECOVERED_VALUES(FIN_VALUE) };
static const struct fin_value g_verified_pcf[] = { HM_SAMPLE_VERIFIED_VALUES(FIN_VALUE) };

static const char *const g_look[HMS_LOOK_N] = {
    "not_tried", "branch", "register_written", "access_unknown", "undecoded",
    "none_in_window", "unreadable",
};

/* enum hms_behind as JSON keys (0, not tried, and 1, recovered, are never keys) */
static const char *const g_behind[HMS_BEHIND_N] = {
    "not_tried", "recovered", "ambiguous", "branch", "register_written", "chase", "no_load",
    "two_loads", "undecoded", "access_unknown", "branch_target",
};

/* the address classes' keys, by enum fin_class (the values of 41000023) */
static const char *const g_cls[] = { HM_SAMPLE_CLASS_VALUES(KEY_AT) };

uint64_t fin_recov_iclass(const struct hmr_sample *x)
{
    return x->h.kind == HMS_SRC_SOFT ? x->iclass : 0;
}

int fin_recov_rule(uint32_t flags, uint64_t iclass)
{
    return (flags & HMS_BREAKPOINT) ? FR_BREAKPOINT : (flags & HMS_AHEAD) ? FR_AHEAD
           : (flags & HMS_ADDR_OK) && flags >> HMS_WHY_SHIFT == HMS_WHY_STRING ? FR_STRING
           : (flags & HMS_ADDR_OK) && HMS_BEHIND_OF(iclass) == HMS_BEHIND_OK ? FR_PRODUCER
           : FR_DIRECT;
}

void fin_recov_count(struct fin_recov *r, uint32_t flags, uint64_t iclass, int cls)
{
    unsigned why = flags >> HMS_WHY_SHIFT, look = (flags >> HMS_LOOK_SHIFT) & 15;
    unsigned behind = HMS_BEHIND_OF(iclass);
    int rule = fin_recov_rule(flags, iclass);
    why = why < HMS_WHY_N ? why : HMS_WHY_N;
    if (cls != FC_NOADDR && cls >= FC_HEAP && cls <= FC_UNKNOWN)
        r->by_rule[rule][cls - FC_HEAP]++;
    if (cls != FC_NOADDR && rule == FR_DIRECT)
        return;
    if (rule == FR_BREAKPOINT && !why)
        why = HMS_WHY_CLOBBERED;          /* a stream from before the reasons */
    r->before[why ? why : HMS_WHY_N]++;
    if (rule == FR_AHEAD)
        r->distance[look]++;
    if (rule == FR_PRODUCER)
        r->pdistance[HMS_BEHIND_DIST(iclass)]++;
    unsigned v = fin_recov_verified(flags, iclass);
    if (v)
        (rule == FR_PRODUCER ? r->pverified : r->verified)[v - 1]++;
    if (cls != FC_NOADDR)
        return;
    r->after[why ? why : HMS_WHY_N]++;
    if (look < HMS_LOOK_N)
        r->refused[look]++;
    if (behind > HMS_BEHIND_OK && behind < HMS_BEHIND_N)
        r->prefused[behind]++;
}

unsigned fin_recov_verified(uint32_t flags, uint64_t iclass)
{
    unsigned same = (flags & HMS_VERIFY_SAME) != 0, diff = (flags & HMS_VERIFY_DIFF) != 0;
    int rule = fin_recov_rule(flags, iclass);
    if ((rule != FR_AHEAD && rule != FR_PRODUCER) || !(same || diff))
        return 0;
    return same && diff ? HM_SAMPLE_VERIFIED_NOT_REACHED
           : same ? HM_SAMPLE_VERIFIED_SAME : HM_SAMPLE_VERIFIED_DIFFERENT;
}

void fin_recov_add(struct fin_recov *dst, const struct fin_recov *src)
{
    uint64_t *d = (uint64_t *)dst;
    const uint64_t *s = (const uint64_t *)src;
    for (size_t i = 0; i < sizeof(*dst) / sizeof(uint64_t); i++)
        d[i] += s[i];
}

static void counts(FILE *f, const char *name, const uint64_t *v, int from, int n,
                   const char *const *keys)
{
    fprintf(f, "\"%s\": {", name);
    int first = 1;
    for (int i = from; i < n; i++) {
        if (!v[i])
            continue;
        fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", keys[i],
                (unsigned long long)v[i]);
        first = 0;
    }
    fputc('}', f);
}

/* "name": [n0, n1, ...] up to the last nonzero count (16 at most), and ", " */
static void distances(FILE *f, const char *name, const uint64_t *v)
{
    int last = 15;
    while (last > 0 && !v[last])
        last--;
    fprintf(f, "\"%s\": [", name);
    for (int i = 0; i <= last; i++)
        fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
    fputs("], ", f);
}

/* ", \"name\": {\"same\": n, \"different\": n, \"not_reached\": n}" when any was checked */
static void verified(FILE *f, const char *name, const uint64_t *v)
{
    static const char *const keys[] = { HM_SAMPLE_VERIFIED_VALUES(KEY_AT) };
    uint64_t checked = 0;
    for (int i = 1; i <= HM_SAMPLE_VERIFIED_MAX; i++)
        checked += v[i - 1];
    if (!checked)
        return;
    fprintf(f, ", \"%s\": {", name);
    for (int i = 1; i <= HM_SAMPLE_VERIFIED_MAX; i++)
        fprintf(f, "%s\"%s\": %llu", i > 1 ? ", " : "", keys[i], (unsigned long long)v[i - 1]);
    fputc('}', f);
}

void fin_recov_json(FILE *f, const struct fin_recov *r)
{
    static const char *const rules[FR_N] = {
        [FR_DIRECT] = "direct", HM_SAMPLE_RECOVERED_VALUES(KEY_AT)
    };
    fprintf(f, "{");
    for (int k = 0; k < FR_N; k++) {
        counts(f, rules[k], r->by_rule[k], 0, 4, g_cls + FC_HEAP);
        fputs(", ", f);
    }
    distances(f, "lookahead_distance", r->distance);
    distances(f, "producer_distance", r->pdistance);
    counts(f, "before", r->before, 1, HMS_WHY_N + 1, g_why);
    fputs(", ", f);
    counts(f, "after", r->after, 1, HMS_WHY_N + 1, g_why);
    fputs(", ", f);
    counts(f, "lookahead_refused", r->refused, 0, HMS_LOOK_N, g_look);
    fputs(", ", f);
    counts(f, "producer_refused", r->prefused, HMS_BEHIND_OK + 1, HMS_BEHIND_N, g_behind);
    verified(f, "lookahead_verified", r->verified);
    verified(f, "producer_verified", r->pverified);
    fputc('}', f);
}

void fin_recov_pcf(FILE *f)
{
    fprintf(f, "EVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLE_RECOVERED)
               "    hmtune address recovered by\n");
    fin_pcf_values(f, g_recovered_pcf, FIN_NVALUES(g_recovered_pcf), HM_SAMPLE_RECOVERED_MAX,
                   " ");
    fprintf(f, "\n\nEVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLE_WHY)
               "    hmtune why the sampled instruction gave no address\n");
    fin_pcf_values(f, g_why_pcf, FIN_NVALUES(g_why_pcf), HM_SAMPLE_WHY_MAX, " ");
    fprintf(f, "\n\nEVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLE_LOOKAHEAD)
               "    hmtune look-ahead distance (instructions "
               "from the interrupted one to the access)\n\n\n"
               "EVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLE_PRODUCER)
               "    hmtune producer load: instructions from the load to the sampled one\n\n\n"
               "EVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLE_VERIFIED)
               "    hmtune look-ahead or producer-load address checked by breakpoint\n");
    fin_pcf_values(f, g_verified_pcf, FIN_NVALUES(g_verified_pcf), HM_SAMPLE_VERIFIED_MAX, " ");
    fputs("\n\n", f);
}
