/* fin_recov.c — where the software sampler's addresses came from, and why the rest
 * have none: the counts behind trace.summary.json's "address_recovery" and the
 * labels of events 41000024/41000026/41000027 (docs/formats.md §2 and §3). */
#include "fin.h"

#include <string.h>

/* enum hms_why, as JSON keys and .pcf labels; index HMS_WHY_N: a sample without an
 * address and without a reason (PEBS/IBS, or a stream from before the reasons). */
static const char *const g_why[HMS_WHY_N + 1][2] = {
    {"direct", "Address computed from the sampled instruction"},
    {"no_memop_int", "No memory operand (integer/general)"},
    {"no_memop_vector", "No memory operand (SSE/AVX register-only)"},
    {"no_memop_x87", "No memory operand (x87)"},
    {"hint", "lea, nop, pause, prefetch, cache-line flush"},
    {"cond_branch", "Conditional branch"},
    {"syscall", "syscall or trap (time in the kernel)"},
    {"after_jump", "After a jump, call or return (rip is a branch target)"},
    {"ambiguous", "Previous instruction ambiguous (backward decoding)"},
    {"unreadable", "Code not readable"},
    {"nested", "Decoder busy (nested signal)"},
    {"gather_scatter", "Gather or scatter"},
    {"undecoded", "Memory operand the decoder cannot decode"},
    {"odd", "Other memory operand (xlat, enter, segment, several)"},
    {"clobbered", "Address register overwritten: breakpoint"},
    {"clobbered_no_breakpoint", "Address register overwritten, no breakpoint possible"},
    {"breakpoint_missed", "Address register overwritten, breakpoint did not fire"},
    {"breakpoint_late", "Address register overwritten, breakpoint fired late"},
    {"string", "String instruction (its pointer's step undone)"},
    {"other", "Not recorded"},
};

static const char *const g_look[HMS_LOOK_N] = {
    "not_tried", "branch", "register_written", "access_unknown", "undecoded",
    "none_in_window", "unreadable",
};

static const char *const g_cls[] = { "heap", "static", "stack", "unknown" };

int fin_recov_rule(uint32_t flags)
{
    return (flags & HMS_BREAKPOINT) ? FR_BREAKPOINT : (flags & HMS_AHEAD) ? FR_AHEAD
           : (flags & HMS_ADDR_OK) && flags >> HMS_WHY_SHIFT == HMS_WHY_STRING ? FR_STRING
           : FR_DIRECT;
}

void fin_recov_count(struct fin_recov *r, uint32_t flags, int cls)
{
    unsigned why = flags >> HMS_WHY_SHIFT, look = (flags >> HMS_LOOK_SHIFT) & 15;
    int rule = fin_recov_rule(flags);
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
    if (fin_recov_verified(flags))
        r->verified[fin_recov_verified(flags) - 1]++;
    if (cls != FC_NOADDR)
        return;
    r->after[why ? why : HMS_WHY_N]++;
    if (look < HMS_LOOK_N)
        r->refused[look]++;
}

unsigned fin_recov_verified(uint32_t flags)
{
    unsigned v = (flags & HMS_VERIFY_SAME ? 1 : 0) | (flags & HMS_VERIFY_DIFF ? 2 : 0);
    return (flags & HMS_AHEAD) ? v : 0;
}

void fin_recov_add(struct fin_recov *dst, const struct fin_recov *src)
{
    uint64_t *d = (uint64_t *)dst;
    const uint64_t *s = (const uint64_t *)src;
    for (size_t i = 0; i < sizeof(*dst) / sizeof(uint64_t); i++)
        d[i] += s[i];
}

static void counts(FILE *f, const char *name, const uint64_t *v, int from, int n,
                   const char *const *keys, size_t stride)
{
    fprintf(f, "\"%s\": {", name);
    int first = 1;
    for (int i = from; i < n; i++) {
        if (!v[i])
            continue;
        fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", keys[(size_t)i * stride],
                (unsigned long long)v[i]);
        first = 0;
    }
    fputc('}', f);
}

void fin_recov_json(FILE *f, const struct fin_recov *r)
{
    static const char *const rules[FR_N] = { "direct", "breakpoint", "lookahead", "string" };
    fprintf(f, "{");
    for (int k = 0; k < FR_N; k++) {
        counts(f, rules[k], r->by_rule[k], 0, 4, g_cls, 1);
        fputs(", ", f);
    }
    int last = 15;
    while (last > 0 && !r->distance[last])
        last--;
    fputs("\"lookahead_distance\": [", f);
    for (int i = 0; i <= last; i++)
        fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)r->distance[i]);
    fputs("], ", f);
    counts(f, "before", r->before, 1, HMS_WHY_N + 1, &g_why[0][0], 2);
    fputs(", ", f);
    counts(f, "after", r->after, 1, HMS_WHY_N + 1, &g_why[0][0], 2);
    fputs(", ", f);
    counts(f, "lookahead_refused", r->refused, 0, HMS_LOOK_N, g_look, 1);
    if (r->verified[0] + r->verified[1] + r->verified[2])
        fprintf(f, ", \"lookahead_verified\": {\"same\": %llu, \"different\": %llu, "
                "\"not_reached\": %llu}", (unsigned long long)r->verified[0],
                (unsigned long long)r->verified[1], (unsigned long long)r->verified[2]);
    fputc('}', f);
}

void fin_recov_pcf(FILE *f)
{
    fprintf(f, "EVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLE_RECOVERED)
               "    hmtune address recovered by\nVALUES\n"
               "1 Execute breakpoint\n2 Look ahead (the next access from the interrupted "
               "instruction)\n3 String instruction (its pointer's step undone)\n\n\n"
               "EVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLE_WHY)
               "    hmtune why the sampled instruction gave no "
               "address\nVALUES\n");
    for (int i = 1; i < HMS_WHY_N; i++)
        fprintf(f, "%d %s\n", i, g_why[i][1]);
    fprintf(f, "\n\nEVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLE_LOOKAHEAD)
               "    hmtune look-ahead distance (instructions "
               "from the interrupted one to the access)\n\n\n"
               "EVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLE_VERIFIED)
               "    hmtune look-ahead address checked by breakpoint\n"
               "VALUES\n1 Same\n2 Different\n3 Not reached\n\n\n");
}
