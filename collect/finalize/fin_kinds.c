/* fin_kinds.c — each sample's access kind (event 41000035, docs/formats.md §3):
 * streaming, scattered, synchronization or compute.
 *
 * Streaming or scattered is decided once per (task, thread, object) from the
 * sequence of that thread's sampled addresses in the object: over consecutive
 * samples, steps forward and backward are counted (|delta| < FIN_KIND_NEAR bytes is
 * no step). One direction dominating beyond what a fair coin gives,
 * |fwd - bwd| > 2 sqrt(fwd + bwd), with at least FIN_KIND_MIN_STEPS steps, is
 * streaming; otherwise, with that many steps, scattered, unless the sample's
 * instruction is strided (its address register steps by a constant in its loop: a
 * stream whose passes are shorter than two sampling periods looks scattered in its
 * steps). With fewer steps each sample's instruction class decides (strided, vector
 * or string: streaming, else scattered).
 * Per sample, an atomic or spinning instruction is synchronization, and a sample
 * without an address whose instruction has no memory operand is compute.
 *
 * fin_merge.c runs the merge twice: the first pass (ctx->planning) only observes
 * the addresses, the second writes the kinds. Memory: one entry per
 * (thread, object) sampled. */
#include "fin.h"

#include <stdlib.h>
#include <string.h>

struct kent {
    int used, task, thread;
    uint32_t obj;
    uint64_t last;
    int has_last;
    uint64_t fwd, bwd;
    unsigned verdict;            /* HM_ACCESS_KIND_STREAMING/SCATTERED, 0 undecided */
};

static struct kent *g_tab;
static size_t g_cap, g_n;

static size_t hash3(int task, int thread, uint32_t obj)
{
    uint64_t h = (uint64_t)(uint32_t)task * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)(uint32_t)thread * 0xc2b2ae3d27d4eb4full;
    h ^= (uint64_t)obj * 0x165667b19e3779f9ull;
    return (size_t)(h ^ (h >> 29));
}

static struct kent *find(int task, int thread, uint32_t obj, int create)
{
    if (create && (g_n + 1) * 2 > g_cap) {
        size_t ncap = g_cap ? g_cap * 2 : 1024;
        struct kent *nt = fin_xmalloc(ncap * sizeof(*nt));
        memset(nt, 0, ncap * sizeof(*nt));
        for (size_t i = 0; i < g_cap; i++) {
            if (!g_tab[i].used)
                continue;
            size_t j = hash3(g_tab[i].task, g_tab[i].thread, g_tab[i].obj) & (ncap - 1);
            while (nt[j].used)
                j = (j + 1) & (ncap - 1);
            nt[j] = g_tab[i];
        }
        free(g_tab);
        g_tab = nt;
        g_cap = ncap;
    }
    if (!g_cap)
        return NULL;
    size_t j = hash3(task, thread, obj) & (g_cap - 1);
    while (g_tab[j].used) {
        struct kent *e = &g_tab[j];
        if (e->task == task && e->thread == thread && e->obj == obj)
            return e;
        j = (j + 1) & (g_cap - 1);
    }
    if (!create)
        return NULL;
    struct kent *e = &g_tab[j];
    memset(e, 0, sizeof(*e));
    e->used = 1;
    e->task = task;
    e->thread = thread;
    e->obj = obj;
    g_n++;
    return e;
}

unsigned fin_kind_verdict(uint64_t fwd, uint64_t bwd)
{
    uint64_t n = fwd + bwd;
    if (n < FIN_KIND_MIN_STEPS)
        return 0;
    uint64_t d = fwd > bwd ? fwd - bwd : bwd - fwd;     /* d > 2 sqrt(n) */
    return d * d > 4 * n ? HM_ACCESS_KIND_STREAMING : HM_ACCESS_KIND_SCATTERED;
}

void fin_kinds_observe(int task, int thread, uint32_t obj, uint64_t addr)
{
    struct kent *e = find(task, thread, obj, 1);
    if (e->has_last) {
        uint64_t d = addr >= e->last ? addr - e->last : e->last - addr;
        if (d >= FIN_KIND_NEAR) {
            if (addr > e->last)
                e->fwd++;
            else
                e->bwd++;
        }
    }
    e->last = addr;
    e->has_last = 1;
}

void fin_kinds_decide(void)
{
    for (size_t i = 0; i < g_cap; i++)
        if (g_tab[i].used)
            g_tab[i].verdict = fin_kind_verdict(g_tab[i].fwd, g_tab[i].bwd);
}

unsigned fin_sample_iclass(const struct hmr_sample *x)
{
    if (x->h.kind == HMS_SRC_SOFT)
        return (unsigned)(x->iclass & HMS_CLS_ALL);
    /* perf's data_src: mem_lock (bits 24..25), PERF_MEM_LOCK_LOCKED = 2 */
    if ((x->h.kind == HMS_SRC_PEBS || x->h.kind == HMS_SRC_IBS) && ((x->data_src >> 24) & 2))
        return HMS_CLS_ATOMIC;
    return 0;
}

unsigned fin_kind_of(unsigned verdict, uint32_t flags, unsigned iclass)
{
    if (!(flags & HMS_ADDR_OK)) {
        unsigned why = flags >> HMS_WHY_SHIFT;
        if (why == HMS_WHY_INT || why == HMS_WHY_VEC || why == HMS_WHY_X87)
            return HM_ACCESS_KIND_COMPUTE;
        return (iclass & (HMS_CLS_ATOMIC | HMS_CLS_SPIN)) ? HM_ACCESS_KIND_SYNC : 0;
    }
    if (iclass & (HMS_CLS_ATOMIC | HMS_CLS_SPIN))
        return HM_ACCESS_KIND_SYNC;
    if (verdict == HM_ACCESS_KIND_STREAMING)
        return verdict;
    /* steps both ways, or too few: a strided instruction is a stream whose passes
     * are shorter than two sampling periods (consecutive samples fall in different
     * passes); with too few steps, a vector or string one too */
    if (iclass & HMS_CLS_STRIDE)
        return HM_ACCESS_KIND_STREAMING;
    if (verdict)
        return verdict;
    return (iclass & (HMS_CLS_VECTOR | HMS_CLS_STRING)) ? HM_ACCESS_KIND_STREAMING
                                                        : HM_ACCESS_KIND_SCATTERED;
}

unsigned fin_kinds_sample(int task, int thread, uint32_t obj, uint32_t flags, unsigned iclass)
{
    const struct kent *e = (flags & HMS_ADDR_OK) ? find(task, thread, obj, 0) : NULL;
    return fin_kind_of(e ? e->verdict : 0, flags, iclass);
}

void fin_kinds_free(void)
{
    free(g_tab);
    g_tab = NULL;
    g_cap = g_n = 0;
}

/* The .pcf labels of 41000035 and 41000036 (every sum of the class bits). */
void fin_kinds_pcf(FILE *f)
{
    static const struct fin_value kinds[] = { HM_ACCESS_KIND_VALUES(FIN_VALUE) };
    static const struct fin_value bits[] = { HM_ACCESS_INSN_VALUES(FIN_VALUE) };
    fprintf(f, "EVENT_TYPE\n0    " HM_EV_STR(HM_EV_ACCESS_KIND) "    hmtune access kind\n");
    fin_pcf_values(f, kinds, FIN_NVALUES(kinds), HM_ACCESS_KIND_MAX, " ");
    fprintf(f, "\n\nEVENT_TYPE\n0    " HM_EV_STR(HM_EV_ACCESS_INSN)
               "    hmtune accessing instruction class\nVALUES\n");
    for (unsigned v = 1; v <= HMS_CLS_ALL; v++) {
        fprintf(f, "%u ", v);
        const char *sep = "";
        for (size_t i = 0; i < FIN_NVALUES(bits); i++)
            if (v & bits[i].value) {
                fprintf(f, "%s%s", sep, bits[i].label);
                sep = " + ";
            }
        fputc('\n', f);
    }
    fputs("\n\n", f);
}
