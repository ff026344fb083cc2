/* ps_output.c — sites.tsv (its numbers formatted by ps_fmt.c, the kinds' columns by
 * ps_kinds.c) and scan.json. */
#include "ps.h"

#include <stdlib.h>
#include <string.h>

int ps_write_sites(const struct ps_sites *s, FILE *out)
{
    uint32_t *ids = ps_sites_sorted(s);
    fputs(PS_SITES_VERSION "\n", out);
    fputs("task\tsite_id\tn_allocs\tmax_size\tpeak_live_bytes\ttotal_bytes\tfirst_alloc_ns"
          "\tlast_free_ns\tlive_ns\tsamples\tloads\tstores\tmisses\tweight"
          "\tfault_samples\tfaults\tsampled_blocks" PS_KIND_COLUMNS "\n", out);
    for (size_t i = 0; i < s->n; i++) {
        const struct ps_site *g = &s->e[ids[i]];
        if (!g->n_allocs && !g->samples && !g->fault_samples)
            continue;                  /* e.g. a task's site-0 entry with no samples */
        uint64_t v[] = { g->task, g->site, g->n_allocs, g->max_size, g->peak, g->total_bytes,
                         g->first_alloc, g->last_free, g->live_ns, g->samples, g->loads,
                         g->stores, g->misses, g->weight, g->fault_samples, g->faults,
                         g->sampled_blocks };
        char line[22 * 24], *p = line;
        for (size_t k = 0; k < sizeof(v) / sizeof(*v); k++) {
            p = ps_fmt_u64(p, v[k]);
            *p++ = k + 1 < sizeof(v) / sizeof(*v) ? '\t' : '\0';
        }
        p = ps_kinds_fmt(p - 1, g);
        *p++ = '\n';
        fwrite(line, 1, (size_t)(p - line), out);
    }
    free(ids);
    return ferror(out) ? -1 : 0;
}

#define U(x) ((unsigned long long)(x))

/* "name":{"1":N,...,"5":N}, then sep: v by address class (the values of 41000023
 * from HM_SAMPLE_CLASS_HEAP, common/trace_values.tsv). */
static void classes_json(FILE *out, const char *name, const uint64_t *v, const char *sep)
{
    fprintf(out, "\"%s\":{", name);
    for (int c = HM_SAMPLE_CLASS_HEAP; c <= HM_SAMPLE_CLASS_MAX; c++)
        fprintf(out, "%s\"%d\":%llu", c > HM_SAMPLE_CLASS_HEAP ? "," : "", c, U(v[c]));
    fprintf(out, "}%s", sep);
}

int ps_write_scan_json(FILE *out, const struct ps_header *h, const struct ps_stats *st,
                       uint64_t end_ns, double elapsed, long peak_rss_kib,
                       uint64_t peak_live_blocks, uint64_t alloc_rows, uint64_t late_endpoints)
{
    fprintf(out, "{\"version\":1,\"records\":%llu,\"events\":%llu,\"states\":%llu,"
            "\"comms\":%llu,\"bad_lines\":%llu,\"tasks\":%u,\"threads\":%u,"
            "\"end_time_ns\":%llu,\"total_weight\":%llu,\"has_object_events\":%s,",
            U(st->records), U(st->events), U(st->states), U(st->comms), U(st->bad_lines),
            h->ntasks, h->nthreads, U(end_ns), U(st->total_weight),
            st->has_object_events ? "true" : "false");
    if (st->has_sampler)
        fprintf(out, "\"sampler\":%llu,", U(st->sampler));
    else
        fputs("\"sampler\":null,", out);
    fprintf(out, "\"unknown_frees\":%llu,", U(st->unknown_frees));
    classes_json(out, "classes", st->classes, ",");
    classes_json(out, "class_weight", st->class_weight, ",");
    fprintf(out, "\"class_events\":%llu,", U(st->class_events));
    fprintf(out, "\"elapsed_s\":%.3f,\"records_per_s\":%.0f,\"peak_rss_kib\":%ld,",
            elapsed, elapsed > 0 ? (double)st->records / elapsed : 0.0, peak_rss_kib);
    /* diagnostics beyond the contract: what the semantics had to repair or drop */
    fprintf(out, "\"time_unit\":\"%s\",\"tasks_seen\":%u,\"threads_seen\":%u,\"groups\":%llu,"
            "\"samples\":%llu,\"lost_samples\":%llu,\"allocs\":%llu,\"alloc_rows\":%llu,"
            "\"frees\":%llu,\"unknown_realloc_inputs\":%llu,\"failed_calls\":%llu,"
            "\"evictions\":%llu,\"unmatched_ends\":%llu,\"unterminated_calls\":%llu,"
            "\"nested_calls\":%llu,\"late_records\":%llu,\"time_regressions\":%llu,"
            "\"peak_live_blocks\":%llu,\"late_endpoints\":%llu,\"lookahead_samples\":%llu,"
            "\"producer_samples\":%llu,"
            "\"small_capped_tasks\":%llu,\"small_unsupported_sites\":%llu,"
            "\"profile_unplaced_samples\":%llu,\"counter_counts_dropped\":%llu,",
            h->scale == 1 ? "ns" : "us", st->tasks_seen, st->threads_seen, U(st->groups),
            U(st->samples), U(st->lost_samples), U(st->allocs), U(alloc_rows), U(st->frees),
            U(st->unknown_realloc_inputs), U(st->failed_calls), U(st->evictions),
            U(st->unmatched_ends), U(st->unterminated_calls), U(st->nested_calls),
            U(st->late_records), U(st->time_regressions), U(peak_live_blocks),
            U(late_endpoints), U(st->lookahead_samples), U(st->producer_samples),
            U(st->small_capped), U(st->small_unsupported), U(st->profile_unplaced),
            U(st->counter_counts_dropped));
    /* sampled page faults (41000030-41000034): samples, the faults they stand for,
     * the faults by address class, fault samples the kernel dropped */
    fprintf(out, "\"fault_samples\":%llu,\"faults\":%llu,", U(st->fault_samples),
            U(st->faults));
    classes_json(out, "fault_classes", st->fault_classes, ",");
    ps_kinds_json(out, st);
    fprintf(out, "\"lost_fault_samples\":%llu}\n", U(st->lost_fault_samples));
    return ferror(out) ? -1 : 0;
}
