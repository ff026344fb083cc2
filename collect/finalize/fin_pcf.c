/* fin_pcf.c — the .pcf (event types and labels) and .row (resource names). Site
 * labels come in three tables with the same ids (DESIGN.md §3): 32000009/32000007
 * "file:line > ..." (symbol+0xOFF or module+0xOFF frames where no line is known),
 * 41000010 "module+0xoffset > ...", 41000011 function chain (one frame per frame of
 * the 32000009 label), 41000012 per 41000010 frame the number of 32000009 frames it
 * gave ("1 > 3 > 1": the second is an inlined call, three levels). */
#include "fin.h"
#include "hm_version.h"

#include <stdlib.h>
#include <string.h>

static const char *const g_states[] = {
    "Idle", "Running", "Not created", "Waiting a message", "Blocking Send", "Synchronization",
    "Test/Probe", "Scheduling and Fork/Join", "Wait/WaitAll", "Blocked", "Immediate Send",
    "Immediate Receive", "I/O", "Group Communication", "Tracing Disabled", "Others",
    "Send Receive", "Memory transfer", "Profiling", "On-line analysis", "Remote memory access",
    "Atomic memory operation", "Memory ordering operation", "Distributed locking", "Overhead",
    "One-sided op", "Startup latency", "Waiting links", "Data copy", "RTT",
    "Allocating memory", "Freeing memory",
};

/* The value tables of the enumerated types finalize writes (common/trace_values.tsv). */
static const struct fin_value g_call[] = { HM_CALL_VALUES(FIN_VALUE) };
static const struct fin_value g_kind[] = { HM_CALL_KIND_VALUES(FIN_VALUE) };
static const struct fin_value g_site[] = { HM_SITE_VALUES(FIN_VALUE) };
static const struct fin_value g_level[] = { HM_SAMPLE_LEVEL_VALUES(FIN_VALUE) };
static const struct fin_value g_hit[] = { HM_SAMPLE_HIT_VALUES(FIN_VALUE) };
static const struct fin_value g_sampler[] = { HM_SAMPLER_VALUES(FIN_VALUE) };
static const struct fin_value g_class[] = { HM_SAMPLE_CLASS_VALUES(FIN_VALUE) };

/* label of site id (ids 1 and 2 are the unknown objects, as Extrae writes them) */
static void site_labels(struct fin_ctx *c, FILE *f, int which)
{
    fin_pcf_values(f, g_site, FIN_NVALUES(g_site), HM_SITE_MAX, " ");
    char *buf = fin_xmalloc(1 << 16);
    for (size_t i = 0; i < c->nsites; i++) {
        struct fin_site *s = &c->sites[i];
        if (s->is_static) {       /* a static variable: symbol, module, raw key */
            const char *base = strrchr(s->module, '/');
            if (which == 0)
                fprintf(f, "%u %s [static, %s]\n", s->id, s->sym, base ? base + 1 : s->module);
            else if (which != 3)
                fprintf(f, "%u %s\n", s->id, which == 1 ? s->raw_label : s->sym);
            continue;
        }
        if (which == 1) {
            fprintf(f, "%u %s\n", s->id, s->raw_label);
            continue;
        }
        size_t n = 0;
        buf[0] = 0;
        for (int k = 0; k < s->nframes && n < (1 << 16) - 4200; k++) {
            struct fin_where w;
            fin_symbolize(&s->frames[k], 1, &w);
            if (which == 3) {     /* the levels of this frame in the other two tables */
                int levels = 1;
                for (const char *q = w.fileline; (q = strstr(q, " > ")); q += 3)
                    levels++;
                n += (size_t)snprintf(buf + n, (1 << 16) - n, "%s%d", k ? " > " : "", levels);
                continue;
            }
            n += (size_t)snprintf(buf + n, (1 << 16) - n, "%s%s", k ? " > " : "",
                                  which == 0 ? w.fileline : w.func);
        }
        fprintf(f, "%u %s\n", s->id, buf);
    }
    free(buf);
    fprintf(f, "\n\n");
}

int fin_write_pcf(struct fin_ctx *c, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    /* Paraver skips lines that start with '#': the release that wrote the trace. */
    fprintf(f, "# hmtune " HMTUNE_VERSION " (hmtune-finalize)\n");
    fprintf(f, "DEFAULT_OPTIONS\n\nLEVEL               THREAD\nUNITS               NANOSEC\n"
               "LOOK_BACK           100\nSPEED               1\nFLAG_ICONS          ENABLED\n"
               "NUM_OF_STATE_COLORS 1000\nYMAX_SCALE          37\n\n\n"
               "DEFAULT_SEMANTIC\n\nTHREAD_FUNC          State As Is\n\n\nSTATES\n");
    for (size_t i = 0; i < sizeof(g_states) / sizeof(g_states[0]); i++)
        fprintf(f, "%zu    %s\n", i, g_states[i]);
    fprintf(f, "\n\nSTATES_COLOR\n0    {117,195,255}\n1    {0,0,255}\n2    {255,255,255}\n"
               "30    {255,46,0}\n31    {100,216,32}\n\n\n");
    /* 40000040: the Extrae kinds finalize writes (fin_merge.c's extrae_kind) */
    fprintf(f, "EVENT_TYPE\n6    " HM_EV_STR(HM_EV_CALL) "    Dynamic memory calls\n");
    fin_pcf_values(f, g_call, FIN_NVALUES(g_call), HM_CALL_POSIX_MEMALIGN, "      ");
    fprintf(f, "\n\nEVENT_TYPE\n6    " HM_EV_STR(HM_EV_CALL_KIND)
               "    hmtune dynamic memory call (exact kind)\n");
    fin_pcf_values(f, g_kind, FIN_NVALUES(g_kind), HM_CALL_KIND_MAX, "      ");
    fprintf(f, "\n\nEVENT_TYPE\n"
               "6    " HM_EV_STR(HM_EV_SIZE) "    Requested size in dynamic memory call\n"
               "6    " HM_EV_STR(HM_EV_IN_PTR) "    In pointer (free, realloc)\n"
               "6    " HM_EV_STR(HM_EV_OUT_PTR) "    Out pointer (malloc, calloc, realloc)\n"
               "6    " HM_EV_STR(HM_EV_ALIGN) "    hmtune requested alignment\n"
               "6    " HM_EV_STR(HM_EV_CALL_SCALE)
               "    hmtune small-call sampling: calls this allocation stands for\n\n\n"
               "EVENT_TYPE\n6    " HM_EV_STR(HM_EV_PID) "    Process IDentifier\n"
               "6    " HM_EV_STR(HM_EV_PPID) "    Parent Process IDentifier\n"
               "6    " HM_EV_STR(HM_EV_TID) "    hmtune OS thread id\n"
               "6    " HM_EV_STR(HM_EV_RANK) "    hmtune MPI rank\n\n\n");
    fprintf(f, "EVENT_TYPE\n"
               "0    " HM_EV_STR(HM_EV_SAMPLE_LOAD) "    Sampled address (load)\n"
               "0    " HM_EV_STR(HM_EV_SAMPLE_STORE) "    Sampled address (store)\n"
               "0    " HM_EV_STR(HM_EV_SAMPLE_LATENCY) "    Sampled access latency (cycles)\n"
               "0    " HM_EV_STR(HM_EV_SAMPLE_WEIGHT)
               "    hmtune sample weight (PEBS/IBS: cycles; software sampler: ns)\n"
               "0    " HM_EV_STR(HM_EV_LOST_SAMPLES) "    hmtune samples lost by the kernel\n"
               "0    " HM_EV_STR(HM_EV_FAULT_ADDR)
               "    hmtune sampled minor page fault (data address)\n"
               "0    " HM_EV_STR(HM_EV_FAULT_COUNT)
               "    hmtune page faults the fault sample stands for\n"
               "0    " HM_EV_STR(HM_EV_LOST_FAULTS)
               "    hmtune page-fault samples lost by the kernel\n"
               "0    " HM_EV_STR(HM_EV_SAMPLE_SCALE)
               "    hmtune small-call sampling: blocks the sampled object "
               "stands for\n"
               "0    " HM_EV_STR(HM_EV_STATIC_OFFSET)
               "    hmtune sampled address: bytes from the start of its static variable\n\n\n"
               "EVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLE_LEVEL)
               "    Sampled address memory level\n");
    fin_pcf_values(f, g_level, FIN_NVALUES(g_level), HM_SAMPLE_LEVEL_MAX, " ");
    fprintf(f, "\n\nEVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLE_HIT)
               "    Sampled address hit or miss\n");
    fin_pcf_values(f, g_hit, FIN_NVALUES(g_hit), HM_SAMPLE_HIT_MAX, " ");
    fprintf(f, "\n\nEVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLER) "    hmtune sampler\n");
    fin_pcf_values(f, g_sampler, FIN_NVALUES(g_sampler), HM_SAMPLER_MAX, " ");
    fprintf(f, "\n\nEVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLE_CLASS)
               "    hmtune sampled address class\n"
               "0    " HM_EV_STR(HM_EV_FAULT_CLASS) "    hmtune page-fault address class\n");
    fin_pcf_values(f, g_class, FIN_NVALUES(g_class), HM_SAMPLE_CLASS_MAX, " ");
    fputs("\n\n", f);
    fin_recov_pcf(f);
    fin_kinds_pcf(f);
    fin_counters_pcf(c, f);
    fprintf(f, "EVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLE_FUNC) "    Sampled functions\n");
    fin_code_labels(f, 0);
    fprintf(f, "EVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLE_LINE)
               "    Sampled line functions (depth 0)\n");
    fin_code_labels(f, 1);
    fprintf(f, "EVENT_TYPE\n0    " HM_EV_STR(HM_EV_SAMPLE_OBJECT)
               "    Memory object referenced by sampled address\n"
               "0    " HM_EV_STR(HM_EV_SITE) "    Allocation memory object\n"
               "0    " HM_EV_STR(HM_EV_FAULT_OBJECT)
               "    hmtune memory object of a sampled page fault\n"
               "0    " HM_EV_STR(HM_EV_AHEAD_OBJECT)
               "    hmtune memory object of a look-ahead address\n");
    site_labels(c, f, 0);
    fprintf(f, "EVENT_TYPE\n0    " HM_EV_STR(HM_EV_SITE_RAW)
               "    hmtune allocation site (module+offset chain)\n");
    site_labels(c, f, 1);
    fprintf(f, "EVENT_TYPE\n0    " HM_EV_STR(HM_EV_SITE_FUNC)
               "    hmtune allocation site (function chain)\n");
    site_labels(c, f, 2);
    fprintf(f, "EVENT_TYPE\n0    " HM_EV_STR(HM_EV_SITE_LEVELS)
               "    hmtune allocation site (inlining levels per frame)\n");
    site_labels(c, f, 3);
    return fclose(f) == 0 ? 0 : -1;
}

int fin_write_row(struct fin_ctx *c, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "LEVEL CPU SIZE %d\n", c->total_threads);
    for (size_t i = 0; i < c->nprocs; i++) {
        struct fin_proc *p = &c->procs[i];
        for (size_t k = 0; k < p->nstreams; k++)
            if (p->streams[k].thread > 0 && !p->streams[k].merged)
                fprintf(f, "%d.%s\n", p->streams[k].cpu, p->host);
    }
    fprintf(f, "\nLEVEL NODE SIZE %d\n", c->nnodes);
    for (int n = 0; n < c->nnodes; n++)
        fprintf(f, "%s\n", c->node_names[n]);
    fprintf(f, "\nLEVEL THREAD SIZE %d\n", c->total_threads);
    for (size_t i = 0; i < c->nprocs; i++) {
        struct fin_proc *p = &c->procs[i];
        for (size_t k = 0; k < p->nstreams; k++)
            if (p->streams[k].thread > 0 && !p->streams[k].merged)
                fprintf(f, "THREAD 1.%d.%d\n", p->task, p->streams[k].thread);
    }
    return fclose(f) == 0 ? 0 : -1;
}
