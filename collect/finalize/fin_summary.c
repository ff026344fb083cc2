/* fin_summary.c — what finalize says of each process (a process killed before its end
 * record, damaged chunks, lost buffers: warnings) and, with --summary, the JSON summary
 * (trace.summary.json, docs/formats.md): per process and in total, the samples and
 * faults by address class, the sampler's cost, the counters, the calls and the bytes. */
#include "fin.h"
#include "hm_version.h"

#include <string.h>

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* {"asked": 0|1, "recorded": [names], "software": 0|1, "unavailable": "...",
 * "readings": N}: the PAPI counters a process recorded (fin_counters.c labels them) */
static void counters_json(FILE *f, const struct fin_proc *p)
{
    fprintf(f, "{\"asked\": %d, \"recorded\": [", p->cnt_asked);
    for (int i = 0; i < p->ncnt; i++) {
        fputs(i ? ", " : "", f);
        json_str(f, p->cnt_name[i]);
    }
    fprintf(f, "], \"software\": %d, \"unavailable\": ", p->cnt_software);
    json_str(f, p->cnt_unavailable);
    fprintf(f, ", \"readings\": %llu}", (unsigned long long)p->n_cnt_readings);
}

/* sep, then ""name": {"heap": N, ..., "no_address": N}": v by enum fin_class, under the
 * keys of the address classes (the values of 41000023, common/trace_values.tsv). */
static void class_json(FILE *f, const char *sep, const char *name, const uint64_t *v)
{
#define CLASS_KEY(value, key, label) [value] = key,
    static const char *const keys[] = { HM_SAMPLE_CLASS_VALUES(CLASS_KEY) };
#undef CLASS_KEY
    fprintf(f, "%s\"%s\": {", sep, name);
    for (int k = FC_HEAP; k <= FC_NOADDR; k++)
        fprintf(f, "%s\"%s\": %llu", k > FC_HEAP ? ", " : "", keys[k],
                (unsigned long long)v[k]);
    fputc('}', f);
}

/* ", fault_samples": {by class}, "faults": {by class}, "lost_fault_samples": N */
static void json_faults(FILE *f, const uint64_t *n, const uint64_t *est, uint64_t lost)
{
    class_json(f, ", ", "fault_samples", n);
    class_json(f, ", ", "faults", est);
    fprintf(f, ", \"lost_fault_samples\": %llu", (unsigned long long)lost);
}

/* The sampler's own cost: time in its handlers, per timer signal. */
static void cost_json(FILE *f, double ns, const uint64_t n[3])
{
    fprintf(f, "{\"handler_ns\": %.0f, \"timer_signals\": %llu, \"traps\": %llu, "
            "\"decodes\": %llu, \"ns_per_signal\": %.0f}", ns, (unsigned long long)n[0],
            (unsigned long long)n[1], (unsigned long long)n[2], n[0] ? ns / (double)n[0] : 0.0);
}

/* ", "weight": {...}": the samples' weights (41000020) by address class. */
static void weight_json(FILE *f, const uint64_t *w)
{
    class_json(f, ", ", "weight", w);
}

void fin_write_summary(struct fin_ctx *c, const char *summary, const char *stem)
{
    FILE *f = summary ? fopen(summary, "w") : NULL;
    if (summary && !f)
        fin_die("cannot write %s", summary);
    uint64_t allocs = 0, frees = 0, tracer_ns = 0, calls = 0, lost = 0, tbytes = 0;
    uint64_t samples[8] = { 0 }, weights[8] = { 0 }, lost_samples = 0;
    uint64_t small = 0, small_weight = 0;
    uint64_t fsamples[8] = { 0 }, faults[8] = { 0 }, lost_faults = 0;
    const char *sampler = "none", *fault_sampler = "none";
    struct fin_recov recov;
    memset(&recov, 0, sizeof(recov));
    double cost_ns = 0;
    uint64_t cost_n[3] = { 0 };
    if (f)
        fprintf(f, "{\n  \"hmtune\": \"" HMTUNE_VERSION "\",\n  \"trace\": ");
    if (f)
        json_str(f, stem);
    if (f)
        fprintf(f, ",\n  \"processes\": [\n");
    for (size_t i = 0; i < c->nprocs; i++) {
        struct fin_proc *p = &c->procs[i];
        uint64_t ptracer = 0, pcalls = 0, plost = 0, pn[3] = { 0 };
        double pcost = 0;
        int no_tend = 0, gaps = 0, threads = 0;
        for (size_t k = 0; k < p->nstreams; k++) {
            struct fin_stream *s = &p->streams[k];
            if (!s->nchunks)
                continue;
            threads += !s->merged;
            ptracer += (uint64_t)((double)s->tracer_tk * p->ns_per_tick);
            pcalls += s->n_calls;
            plost += s->n_lost;
            no_tend += !s->has_tend;
            gaps += (int)s->seq_gaps;
            pcost += (double)s->scost.handler_tk * p->ns_per_tick;
            pn[0] += s->scost.n_timer;
            pn[1] += s->scost.n_trap;
            pn[2] += s->scost.n_decode;
        }
        cost_ns += pcost;
        for (int k = 0; k < 3; k++)
            cost_n[k] += pn[k];
        for (int k = 0; k < 8; k++) {
            samples[k] += p->n_samples[k];
            fsamples[k] += p->n_fault_samples[k];
            faults[k] += p->n_faults[k];
            weights[k] += p->w_samples[k];
        }
        lost_samples += p->n_lost_samples;
        lost_faults += p->n_lost_faults;
        if (p->fault_name[0] && strncmp(p->fault_name, "none", 4) != 0)
            fault_sampler = p->fault_name;
        fin_recov_add(&recov, &p->recov);
        if (p->sampler_name[0] && strcmp(p->sampler_name, "none") != 0)
            sampler = p->sampler_name;
        allocs += p->n_allocs;
        frees += p->n_frees;
        small += p->n_small;
        small_weight = p->small_weight > small_weight ? p->small_weight : small_weight;
        tracer_ns += ptracer;
        calls += pcalls;
        lost += plost;
        tbytes += p->fsize;
        const char *end = !p->has_end ? "missing"
                          : p->end_kind == HME_EXIT ? "exit"
                          : p->end_kind == HME__EXIT ? "_exit"
                          : p->end_kind == HME_EXEC ? "exec" : "signal";
        if (!p->has_end && !c->quiet)
            fin_warn("process %u (task %d%s): no end record, so it was killed (SIGKILL?) or "
                     "is still running; recovered %llu calls that were written; up to 64 KiB "
                     "of records per thread that were still buffered are lost",
                     p->hdr.pid, p->task, p->hdr.rank >= 0 ? ", MPI rank" : "",
                     (unsigned long long)(p->n_allocs + p->n_frees));
        if ((p->truncated_bytes || p->bad_chunks || gaps) && !c->quiet)
            fin_warn("process %u: %llu damaged bytes at the end of %s, %d missing chunks, %u bad "
                     "records skipped (a full disk or a kill while writing)", p->hdr.pid,
                     (unsigned long long)p->truncated_bytes, p->path, gaps, p->bad_chunks);
        if (plost && !c->quiet)
            fin_warn("process %u: %llu record buffers could not be written (full disk?)",
                     p->hdr.pid, (unsigned long long)plost);
        if (!f)
            continue;
        fprintf(f, "    {\"task\": %d, \"pid\": %u, \"ppid\": %u, \"rank\": %d, \"host\": ",
                p->task, p->hdr.pid, p->hdr.ppid, p->hdr.rank);
        json_str(f, p->host);
        fprintf(f, ", \"exe\": ");
        json_str(f, p->exe);
        fprintf(f, ", \"sampler\": ");
        json_str(f, p->sampler_name[0] ? p->sampler_name : "none");
        class_json(f, ", ", "samples", p->n_samples);
        fprintf(f, ", \"lost_samples\": %llu", (unsigned long long)p->n_lost_samples);
        weight_json(f, p->w_samples);
        fprintf(f, ", \"fault_sampler\": ");
        json_str(f, p->fault_name[0] ? p->fault_name : "none");
        json_faults(f, p->n_fault_samples, p->n_faults, p->n_lost_faults);
        fprintf(f, ", \"address_recovery\": ");
        fin_recov_json(f, &p->recov);
        fprintf(f, ", \"sampler_cost\": ");
        cost_json(f, pcost, pn);
        fprintf(f, ", \"counters\": ");
        counters_json(f, p);
        fprintf(f, ", \"threads\": %d, \"allocs\": %llu, \"frees\": %llu, \"calls_seen\": %llu, "
                "\"tracer_ns\": %llu, \"end\": \"%s\", \"signal\": %d, \"truncated_bytes\": %llu, "
                "\"missing_chunks\": %d, \"bad_records\": %u, \"threads_without_end\": %d, "
                "\"lost_buffers\": %llu, \"raw_bytes\": %llu, \"small_sampled\": %llu, "
                "\"small_weight\": %llu}%s\n",
                threads, (unsigned long long)p->n_allocs, (unsigned long long)p->n_frees,
                (unsigned long long)pcalls, (unsigned long long)ptracer, end, p->end_signo,
                (unsigned long long)p->truncated_bytes, gaps, p->bad_chunks, no_tend,
                (unsigned long long)plost, (unsigned long long)p->fsize,
                (unsigned long long)p->n_small, (unsigned long long)p->small_weight,
                i + 1 < c->nprocs ? "," : "");
    }
    if (!f)
        return;
    fprintf(f, "  ],\n  \"sampler\": ");
    json_str(f, sampler);
    class_json(f, ",\n  ", "samples", samples);
    fprintf(f, ", \"lost_samples\": %llu", (unsigned long long)lost_samples);
    weight_json(f, weights);
    fprintf(f, ",\n");
    fprintf(f, "  \"fault_sampler\": ");
    json_str(f, fault_sampler);
    json_faults(f, fsamples, faults, lost_faults);
    fprintf(f, ",\n  \"address_recovery\": ");
    fin_recov_json(f, &recov);
    fprintf(f, ",\n  \"sampler_cost\": ");
    cost_json(f, cost_ns, cost_n);
    fprintf(f, ",\n  \"tasks\": %zu, \"threads\": %d, \"allocs\": %llu, \"frees\": %llu, "
            "\"sites\": %zu, \"calls_seen\": %llu, \"tracer_ns\": %llu, \"lost_buffers\": %llu, "
            "\"raw_bytes\": %llu, \"prv_bytes\": %llu, \"duration_ns\": %llu, "
            "\"small_sampled\": %llu, \"small_weight\": %llu\n}\n",
            c->nprocs, c->total_threads, (unsigned long long)allocs, (unsigned long long)frees,
            c->nsites, (unsigned long long)calls, (unsigned long long)tracer_ns,
            (unsigned long long)lost, (unsigned long long)tbytes,
            (unsigned long long)c->bytes_written, (unsigned long long)(c->t_end - c->t_zero),
            (unsigned long long)small, (unsigned long long)small_weight);
    if (fclose(f) != 0)
        fin_die("cannot write %s", summary);
}
