/* gen_trace.c — hmtune-gentrace: a synthetic hmtune-style trace with known answers,
 * for hmtune-prvscan's tests and throughput benchmark.
 *
 * Each record and the answer it implies are made together: this file makes the
 * records, gen_tally.c keeps the tallies the expected-answers file is then written
 * from (gen_check.c compares the scanner's output with the answers).
 *
 *   hmtune-gentrace N_RECORDS OUT.prv [--tasks T] [--threads K] [--seed S] [--alloc-heavy]
 *                   [--counters]
 *   hmtune-gentrace --check OUT.prv OUTDIR          (gen_check.c)
 *
 * Writes OUT.prv/.pcf/.row and OUT.prv.expected.json: per (task, site) the lifetime
 * facts of its blocks (count, largest and total bytes, peak live bytes, first
 * allocation, last end, time with a block live) and the sampled accesses that land in
 * that site's blocks, as the generator knows them by construction (it made each block
 * live and dead in time order, and picked the block for each sample).
 *
 * The workload: every task owns SLOTS fixed address slots (the same addresses in every
 * task, so per-task maps are exercised), allocations take a free slot (so freed
 * addresses are reused), reallocs resize in place or move, a few frees name unknown
 * pointers, and most records are samples: in a live block, in a free slot (stale
 * address: unattributed), on a stack, or without an address; half the heap samples
 * carry finalize's 32000007 object and half must be attributed by address. A quarter
 * of the calls are written the way Extrae splits them (size line, state, call line).
 * Some records are sampled page faults (41000030-41000033), on lines of their own or
 * on an access sample's line, attributed by the same rules.
 * --alloc-heavy: mostly calls (45% allocations, 40% frees, 10% reallocs, 5% samples),
 * for the analyzer's memory with many blocks.
 * --counters: a PAPI reading (cycles, instructions, L3 misses, memory stall cycles) on
 * the thread's line before each access sample, at its time, as Extrae writes counters
 * on a sample's time: what counters.csv costs the scanner (not in the answers).
 *
 * Small-call sampling: one allocation in 8 carries 41000040 (it stands for 2..64
 * blocks), and samples in it count that many times for its site (41000041 with the
 * object, else from the block); the expected weights are then bounded as the scanner
 * bounds them (ps_sites_cap: each site's added part by what its samples support, then
 * a task's added weight at most its class-4 weight, each site's part scaled by one
 * factor). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_events.h"
#include "gen_tally.h"

/* One .pcf EVENT_TYPE line of group 0. */
#define EV0(ev, text) "0    " HM_EV_STR(ev) "    " text "\n"

int gen_check(const char *prv, const char *outdir);

#define SLOTS    4096u
#define SLOT_SZ  (1ull << 20)
#define BASE     0x7f0000000000ull
#define STACK    0x7ffd00000000ull

struct slot { uint64_t size, site, scale; int live; uint32_t pos; };

struct gtask {
    struct slot s[SLOTS];
    uint32_t live[SLOTS], nlive;       /* live slot indices (swap-remove) */
};

static uint64_t g_rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}
static uint64_t below(uint64_t n) { return rnd() % n; }

static FILE *g_out;
static uint64_t g_now = 1000;
static unsigned g_ntasks, g_nthreads;

static unsigned g_pct_alloc = 6, g_pct_free = 5, g_pct_realloc = 2;
static int g_counters;                /* --counters */

static void state(unsigned task, unsigned thr, uint64_t b, uint64_t e, int st)
{
    unsigned cpu = task * g_nthreads + thr + 1;
    fprintf(g_out, "1:%u:1:%u:%u:%" PRIu64 ":%" PRIu64 ":%d\n", cpu, task + 1, thr + 1, b, e, st);
    g_records++;
    g_states++;
}

/* start an event line; the caller appends ":type:value" pairs and '\n' */
static void ev(unsigned task, unsigned thr, uint64_t t)
{
    unsigned cpu = task * g_nthreads + thr + 1;
    fprintf(g_out, "2:%u:1:%u:%u:%" PRIu64, cpu, task + 1, thr + 1, t);
    g_records++;
    g_events++;
}

static void pair(uint64_t type, uint64_t v) { fprintf(g_out, ":%" PRIu64 ":%" PRIu64, type, v); }

static void live_add(struct gtask *tk, uint32_t i, uint64_t size, uint64_t site, uint64_t scale)
{
    tk->s[i] = (struct slot){ size, site, scale, 1, tk->nlive };
    tk->live[tk->nlive++] = i;
}

static void live_del(struct gtask *tk, uint32_t i)
{
    uint32_t pos = tk->s[i].pos, last = tk->live[--tk->nlive];
    tk->live[pos] = last;
    tk->s[last].pos = pos;
    tk->s[i].live = 0;
}

static uint32_t free_slot(struct gtask *tk)
{
    for (;;) {
        uint32_t i = (uint32_t)below(SLOTS);
        if (!tk->s[i].live)
            return i;
    }
}

/* One call: entry at t0 and end at t1, in hmtune's layout or Extrae's split one.
 * kind: exact hmtune kind (41000000); ret only for non-free. Returns t0. */
static uint64_t call(unsigned task, unsigned thr, unsigned exact, uint64_t size, uint64_t site,
                     uint64_t in, uint64_t ret, uint64_t scale)
{
    static const unsigned extrae_kind[HM_CALL_KIND_MAX + 1] = {    /* as finalize writes it */
        [HM_CALL_KIND_MALLOC] = HM_CALL_MALLOC, [HM_CALL_KIND_FREE] = HM_CALL_FREE,
        [HM_CALL_KIND_REALLOC] = HM_CALL_REALLOC, [HM_CALL_KIND_CALLOC] = HM_CALL_CALLOC,
        [HM_CALL_KIND_POSIX_MEMALIGN] = HM_CALL_POSIX_MEMALIGN,
        [HM_CALL_KIND_ALIGNED_ALLOC] = HM_CALL_POSIX_MEMALIGN,
        [HM_CALL_KIND_MEMALIGN] = HM_CALL_POSIX_MEMALIGN, [HM_CALL_KIND_VALLOC] = HM_CALL_MALLOC,
        [HM_CALL_KIND_PVALLOC] = HM_CALL_MALLOC, [HM_CALL_KIND_REALLOCARRAY] = HM_CALL_REALLOC,
    };
    uint64_t t0 = g_now, t1 = g_now + 50 + below(250);
    int is_free = exact == HM_CALL_KIND_FREE;
    int is_realloc = exact == HM_CALL_KIND_REALLOC || exact == HM_CALL_KIND_REALLOCARRAY;
    int split = below(4) == 0;
    if (split && !is_free) {           /* Extrae: size first, then the state, then the call */
        ev(task, thr, t0);
        pair(HM_EV_SIZE, size);
        fputc('\n', g_out);
    }
    state(task, thr, t0, t1, is_free ? 31 : 30);
    ev(task, thr, t0);
    pair(HM_EV_CALL, extrae_kind[exact]);
    pair(HM_EV_CALL_KIND, exact);
    if (!is_free) {
        if (!split)
            pair(HM_EV_SIZE, size);
        pair(HM_EV_SITE, site);
        if (scale > 1)
            pair(HM_EV_CALL_SCALE, scale);
    }
    if (is_free || is_realloc)
        pair(HM_EV_IN_PTR, in);
    fputc('\n', g_out);
    if (split && !is_free) {           /* Extrae: returned pointer, state, then the end */
        ev(task, thr, t1);
        pair(HM_EV_OUT_PTR, ret);
        fputc('\n', g_out);
        state(task, thr, t1, t1 + 1, 1);
        ev(task, thr, t1);
        pair(HM_EV_CALL, HM_CALL_END);
        fputc('\n', g_out);
    } else {
        ev(task, thr, t1);
        pair(HM_EV_CALL, HM_CALL_END);
        pair(HM_EV_CALL_KIND, HM_CALL_KIND_END);
        if (!is_free)
            pair(HM_EV_OUT_PTR, ret);
        fputc('\n', g_out);
    }
    g_now = t1 + 1 + below(100);
    return t0;
}

static void do_alloc(unsigned task, unsigned thr, struct gtask *tk)
{
    static const unsigned kinds[] = {
        HM_CALL_KIND_MALLOC, HM_CALL_KIND_MALLOC, HM_CALL_KIND_MALLOC, HM_CALL_KIND_MALLOC,
        HM_CALL_KIND_CALLOC, HM_CALL_KIND_CALLOC, HM_CALL_KIND_POSIX_MEMALIGN,
        HM_CALL_KIND_ALIGNED_ALLOC, HM_CALL_KIND_MEMALIGN, HM_CALL_KIND_VALLOC,
    };
    unsigned exact = kinds[below(10)];
    uint64_t size = 4096 + below(SLOT_SZ - 4096), site = SITE0 + below(NSITES);
    uint64_t scale = below(8) == 0 ? 2 + below(63) : 1;
    uint32_t i = free_slot(tk);
    uint64_t t0 = call(task, thr, exact, size, site, 0, BASE + i * SLOT_SZ, scale);
    live_add(tk, i, size, site, scale);
    gen_life_start(task, site, size, t0, scale);
    g_allocs++;
}

static void do_free(unsigned task, unsigned thr, struct gtask *tk)
{
    if (below(500) == 0 || !tk->nlive) {          /* a pointer the trace never returned */
        call(task, thr, HM_CALL_KIND_FREE, 0, 0, STACK - 4096 * (1 + below(1000)), 0, 1);
        g_unknown_frees++;
        return;
    }
    uint32_t i = tk->live[below(tk->nlive)];
    uint64_t t0 = call(task, thr, HM_CALL_KIND_FREE, 0, 0, BASE + i * SLOT_SZ, 0, 1);
    gen_life_end(task, tk->s[i].site, tk->s[i].size * tk->s[i].scale, t0);
    live_del(tk, i);
    g_frees++;
}

static void do_realloc(unsigned task, unsigned thr, struct gtask *tk)
{
    uint64_t site = SITE0 + below(NSITES), size = 4096 + below(SLOT_SZ - 4096);
    unsigned exact = below(5) == 0 ? HM_CALL_KIND_REALLOCARRAY : HM_CALL_KIND_REALLOC;
    if (!tk->nlive || below(20) == 0) {           /* realloc(NULL, n) is a malloc */
        uint32_t j = free_slot(tk);
        uint64_t t0 = call(task, thr, exact, size, site, 0, BASE + j * SLOT_SZ, 1);
        live_add(tk, j, size, site, 1);
        gen_life_start(task, site, size, t0, 1);
    } else {
        uint32_t i = tk->live[below(tk->nlive)];
        uint64_t in = BASE + i * SLOT_SZ;
        if (below(20) == 0) {                     /* realloc(p, 0) -> NULL frees p */
            uint64_t t0 = call(task, thr, exact, 0, site, in, 0, 1);
            gen_life_end(task, tk->s[i].site, tk->s[i].size * tk->s[i].scale, t0);
            live_del(tk, i);
            g_frees++;
            return;
        }
        if (below(30) == 0) {                     /* failed: p stays live and unchanged */
            call(task, thr, exact, size, site, in, 0, 1);
            return;
        }
        uint32_t j = below(2) ? i : free_slot(tk);   /* in place, or moved */
        uint64_t t0 = call(task, thr, exact, size, site, in, BASE + j * SLOT_SZ, 1);
        gen_life_end(task, tk->s[i].site, tk->s[i].size * tk->s[i].scale, t0);   /* old first */
        live_del(tk, i);
        g_frees++;
        live_add(tk, j, size, site, 1);
        gen_life_start(task, site, size, t0, 1);
    }
    g_allocs++;
}

/* A sampled page fault's pairs: in a live block (half of them naming its site in
 * 41000032, as finalize writes them), in a free slot (unattributed) or on a stack;
 * each stands for 1-100 faults (41000031). */
static void fault_pairs(unsigned task, struct gtask *tk)
{
    uint64_t r = below(100), addr, site = 0, cls, n = 1 + below(100);
    int give_obj = 0;
    if (r < 70 && tk->nlive) {
        uint32_t i = tk->live[below(tk->nlive)];
        addr = BASE + i * SLOT_SZ + below(tk->s[i].size);
        site = tk->s[i].site;
        cls = HM_SAMPLE_CLASS_HEAP;
        give_obj = below(2);
    } else if (r < 90) {
        addr = BASE + free_slot(tk) * SLOT_SZ + below(SLOT_SZ);
        cls = HM_SAMPLE_CLASS_UNKNOWN;
    } else {
        addr = STACK + below(1 << 20);
        cls = HM_SAMPLE_CLASS_STACK;
    }
    pair(HM_EV_FAULT_ADDR, addr);
    if (give_obj)
        pair(HM_EV_FAULT_OBJECT, site);
    pair(HM_EV_FAULT_COUNT, n);
    pair(HM_EV_FAULT_CLASS, cls);
    E(task, site)->fault_samples++;
    E(task, site)->faults += n;
    g_fault_samples++;
    g_faults += n;
    g_fault_classes[cls] += n;
}

static void do_fault(unsigned task, unsigned thr, struct gtask *tk)
{
    ev(task, thr, g_now);
    fault_pairs(task, tk);
    fputc('\n', g_out);
    g_now += 1 + below(200);
}

/* A counter reading: PAPI_TOT_CYC, PAPI_TOT_INS, PAPI_L3_TCM, PAPI_MEM_SCY's types. */
static void do_reading(unsigned task, unsigned thr)
{
    ev(task, thr, g_now);
    pair(HM_EV_HWC_PRESET + 59, 4000000 + below(8000000));
    pair(HM_EV_HWC_PRESET + 50, below(16000000));
    pair(HM_EV_HWC_PRESET + 8, below(200000));
    pair(HM_EV_HWC_PRESET + 34, below(4000000));
    fputc('\n', g_out);
}

static void do_sample(unsigned task, unsigned thr, struct gtask *tk)
{
    if (g_counters)
        do_reading(task, thr);
    uint64_t r = below(100), addr = 0, site = 0, cls, scale = 1;
    int has_addr = 1, give_obj = 0, pebs = below(5) == 0, store = below(10) < 3;
    if (r < 75 && tk->nlive) {
        uint32_t i = tk->live[below(tk->nlive)];
        addr = BASE + i * SLOT_SZ + below(tk->s[i].size);
        site = tk->s[i].site;
        scale = tk->s[i].scale;
        cls = HM_SAMPLE_CLASS_HEAP;
        give_obj = below(2);
    } else if (r < 85) {                          /* a free slot: stale or never used */
        uint32_t i = free_slot(tk);
        addr = BASE + i * SLOT_SZ + below(SLOT_SZ);
        cls = HM_SAMPLE_CLASS_UNKNOWN;
    } else if (r < 92 || pebs) {
        addr = STACK + below(1 << 20);
        cls = HM_SAMPLE_CLASS_STACK;
    } else {
        has_addr = 0;
        cls = HM_SAMPLE_CLASS_NO_ADDRESS;
    }
    uint64_t hit = HM_SAMPLE_HIT_HIT + below(2);     /* hit or miss */
    uint64_t lat = 5 + below(600), w = 1 + below(2000);
    ev(task, thr, g_now);
    if (has_addr) {
        pair(store ? HM_EV_SAMPLE_STORE : HM_EV_SAMPLE_LOAD, addr);
        pair(HM_EV_SAMPLE_LEVEL, HM_SAMPLE_LEVEL_L1 + below(6));
        pair(HM_EV_SAMPLE_HIT, hit);
        if (pebs || below(4) == 0)      /* hmtune PEBS has both: 41000020 must win */
            pair(HM_EV_SAMPLE_LATENCY, lat);
        if (give_obj)
            pair(HM_EV_SAMPLE_OBJECT, site);
        if (give_obj && scale > 1)
            pair(HM_EV_SAMPLE_SCALE, scale);
    }
    pair(HM_EV_SAMPLE_FUNC, 1 + below(10));
    pair(HM_EV_SAMPLE_LINE, 1 + below(10));
    uint64_t kind = w % (HM_ACCESS_KIND_MAX + 1);    /* 0: none (no new draw: same trace) */
    if (kind)
        pair(HM_EV_ACCESS_KIND, kind);
    if (!pebs) {
        pair(HM_EV_SAMPLE_WEIGHT, w);
        pair(HM_EV_SAMPLE_CLASS, cls);
        g_classes[cls]++;
    } else {
        /* no 41000023: the scanner derives the class from the attribution, and an
         * address in no block (here a stack address) is unknown memory */
        w = lat;
        g_classes[cls == HM_SAMPLE_CLASS_STACK ? HM_SAMPLE_CLASS_UNKNOWN : cls]++;
    }
    if (below(8) == 0)                  /* a fault at the same time, fused with it */
        fault_pairs(task, tk);
    fputc('\n', g_out);
    struct exp_site *x = E(task, site);
    x->samples++;
    if (has_addr) {
        if (store)
            x->stores++;
        else
            x->loads++;
        x->misses += hit == HM_SAMPLE_HIT_MISS;
    }
    x->weight += w * scale;
    x->extra += w * (scale - 1);
    x->scaled_samples += scale > 1;
    x->kw[kind] += w * scale;
    x->kextra[kind] += w * (scale - 1);
    if (site == 0 && !pebs) {
        x->has_class = 1;
        x->unknown += cls == HM_SAMPLE_CLASS_UNKNOWN ? w : 0;
    }
    g_weight += w;
    g_samples++;
    g_now += 1 + below(200);
}

static void write_side_files(const char *prv)
{
    char path[4096];
    size_t n = strlen(prv);
    size_t stem = n > 4 && strcmp(prv + n - 4, ".prv") == 0 ? n - 4 : n;
    snprintf(path, sizeof(path), "%.*s.row", (int)stem, prv);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(f, "LEVEL CPU SIZE %u\n", g_ntasks * g_nthreads);
    for (unsigned i = 0; i < g_ntasks * g_nthreads; i++)
        fprintf(f, "%u.gen\n", i + 1);
    fprintf(f, "\nLEVEL NODE SIZE 1\ngen\n\nLEVEL THREAD SIZE %u\n", g_ntasks * g_nthreads);
    for (unsigned t = 0; t < g_ntasks; t++)
        for (unsigned k = 0; k < g_nthreads; k++)
            fprintf(f, "THREAD 1.%u.%u\n", t + 1, k + 1);
    fclose(f);
    snprintf(path, sizeof(path), "%.*s.pcf", (int)stem, prv);
    f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputs("DEFAULT_OPTIONS\n\nLEVEL               THREAD\nUNITS               NANOSEC\n\n"
          "STATES\n0    Idle\n1    Running\n30    Allocating memory\n31    Freeing memory\n\n"
          "EVENT_TYPE\n"
          EV0(HM_EV_CALL, "Dynamic memory calls")
          EV0(HM_EV_SIZE, "Requested size")
          EV0(HM_EV_IN_PTR, "In pointer")
          EV0(HM_EV_OUT_PTR, "Out pointer")
          EV0(HM_EV_CALL_KIND, "hmtune call kind")
          EV0(HM_EV_SAMPLE_LOAD, "Sampled load address")
          EV0(HM_EV_SAMPLE_STORE, "Sampled store address")
          EV0(HM_EV_SAMPLE_LEVEL, "Memory level")
          EV0(HM_EV_SAMPLE_HIT, "Hit or miss")
          EV0(HM_EV_SAMPLE_LATENCY, "Latency")
          EV0(HM_EV_SAMPLE_FUNC, "Sampled function")
          EV0(HM_EV_SAMPLE_LINE, "Sampled line")
          EV0(HM_EV_SAMPLE_WEIGHT, "hmtune sample weight")
          EV0(HM_EV_SAMPLER, "hmtune sampler")
          EV0(HM_EV_SAMPLE_CLASS, "hmtune sampled address class")
          EV0(HM_EV_TID, "OS thread id")
          EV0(HM_EV_FAULT_ADDR, "hmtune sampled minor page fault")
          EV0(HM_EV_FAULT_COUNT, "hmtune page faults the fault sample stands for")
          EV0(HM_EV_FAULT_CLASS, "hmtune page-fault address class")
          EV0(HM_EV_CALL_SCALE, "hmtune small-call sampling (allocation)")
          EV0(HM_EV_SAMPLE_SCALE, "hmtune small-call sampling (sampled object)")
          EV0(HM_EV_ACCESS_KIND, "hmtune access kind")
          "\n"
          "EVENT_TYPE\n"
          EV0(HM_EV_SITE, "Allocation object")
          EV0(HM_EV_SAMPLE_OBJECT, "Memory object referenced by sampled address")
          EV0(HM_EV_FAULT_OBJECT, "hmtune memory object of a sampled page fault")
          "VALUES\n", f);
#define RESERVED_LABEL(v, key, label) \
    if ((v) != HM_SITE_END) fprintf(f, "%u    %s\n", (v), (label));
    HM_SITE_VALUES(RESERVED_LABEL)                  /* ids 1 and 2, "??" as Extrae's */
#undef RESERVED_LABEL
    for (unsigned s = SITE0; s < NIDS; s++)
        fprintf(f, "%u    gen.c:%u\n", s, s);
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--check") == 0)
        return gen_check(argv[2], argv[3]);
    if (argc < 3) {
        fputs("usage: hmtune-gentrace N_RECORDS OUT.prv [--tasks T] [--threads K] [--seed S]"
              " [--alloc-heavy] [--counters]\n"
              "       hmtune-gentrace --check OUT.prv OUTDIR\n", stderr);
        return 2;
    }
    uint64_t want = strtoull(argv[1], NULL, 10);
    const char *prv = argv[2];
    g_ntasks = 2;
    g_nthreads = 4;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--counters") == 0) {
            g_counters = 1;
        } else if (strcmp(argv[i], "--alloc-heavy") == 0) {
            g_pct_alloc = 45;
            g_pct_free = 40;
            g_pct_realloc = 10;
        } else if (i + 1 < argc && strcmp(argv[i], "--tasks") == 0) {
            g_ntasks = (unsigned)atoi(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--threads") == 0) {
            g_nthreads = (unsigned)atoi(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0) {
            g_rng ^= strtoull(argv[++i], NULL, 10) * 0x9e3779b97f4a7c15ull;
        } else {
            fprintf(stderr, "hmtune-gentrace: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!g_ntasks || !g_nthreads || g_ntasks > 64 || g_nthreads > 256) {
        fputs("hmtune-gentrace: --tasks 1..64, --threads 1..256\n", stderr);
        return 2;
    }
    g_out = fopen(prv, "w");
    if (!g_out) {
        fprintf(stderr, "hmtune-gentrace: %s: %s\n", prv, strerror(errno));
        return 1;
    }
    static char obuf[1 << 20];
    setvbuf(g_out, obuf, _IOFBF, sizeof(obuf));
    struct gtask *tasks = calloc(g_ntasks, sizeof(struct gtask));
    g_exp = calloc((size_t)g_ntasks * NIDS, sizeof(struct exp_site));
    if (!tasks || !g_exp)
        return 1;
    /* end time: fixed-width, rewritten once the last time is known */
    fprintf(g_out, "#Paraver (01/01/2026 at 00:00):%020d_ns:1(%u):1:%u(", 0,
            g_ntasks * g_nthreads, g_ntasks);
    for (unsigned t = 0; t < g_ntasks; t++)
        fprintf(g_out, "%s%u:1", t ? "," : "", g_nthreads);
    fputs("),0\n", g_out);
    for (unsigned t = 0; t < g_ntasks; t++)
        for (unsigned k = 0; k < g_nthreads; k++) {
            ev(t, k, g_now++);
            pair(HM_EV_TID, 1000 + t * 100 + k);
            if (k == 0)
                pair(HM_EV_SAMPLER, HM_SAMPLER_PEBS);
            fputc('\n', g_out);
        }
    while (g_records < want) {
        unsigned task = (unsigned)below(g_ntasks), thr = (unsigned)below(g_nthreads);
        struct gtask *tk = &tasks[task];
        uint64_t r = below(100);
        if (tk->nlive < SLOTS / 8 || (r < g_pct_alloc && tk->nlive < SLOTS * 3 / 4))
            do_alloc(task, thr, tk);
        else if (r < g_pct_alloc + g_pct_free)
            do_free(task, thr, tk);
        else if (r < g_pct_alloc + g_pct_free + g_pct_realloc)
            do_realloc(task, thr, tk);
        else if (below(10) == 0)
            do_fault(task, thr, tk);
        else
            do_sample(task, thr, tk);
    }
    uint64_t never_freed = 0;
    for (unsigned t = 0; t < g_ntasks; t++) {
        never_freed += tasks[t].nlive;
        for (uint32_t k = 0; k < tasks[t].nlive; k++) {   /* live until the trace end */
            const struct slot *sl = &tasks[t].s[tasks[t].live[k]];
            gen_life_end(t, sl->site, sl->size * sl->scale, g_now + 1);
        }
    }
    if (fseek(g_out, 0, SEEK_SET) != 0 ||
        fprintf(g_out, "#Paraver (01/01/2026 at 00:00):%020" PRIu64, g_now + 1) < 0 ||
        fclose(g_out) != 0) {
        fprintf(stderr, "hmtune-gentrace: %s: %s\n", prv, strerror(errno));
        return 1;
    }
    write_side_files(prv);
    gen_write_expected(prv, never_freed, g_ntasks);
    free(tasks);
    free(g_exp);
    return 0;
}
