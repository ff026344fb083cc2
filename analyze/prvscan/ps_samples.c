/* ps_samples.c — the samples and sampled page faults of one fused group
 * (ps_state.h): their attributes gathered from the group's pairs (a second address or
 * a repeated attribute closes a sample), each attributed to its (task, site) group by
 * the object the trace names or the live block holding its address (ps_map.c), counted
 * there (ps_sites.c), and placed in its block's offset buckets for profile.csv
 * (ps_profile.c). */
#include "ps_state.h"

#include <string.h>

/* The group a sampled address belongs to in task tk: the object the trace names
 * (finalize or Extrae resolved it), else the live block holding the address, else
 * the task's site 0; *scale (when not NULL): the blocks the live block found stands
 * for (small-call sampling), else 1; *start (when not NULL): where that block
 * starts, set only when the block was found by address. */
static uint32_t attribute(struct ps_model *m, struct task *tk, int has_obj, uint64_t object,
                          int has_addr, uint64_t addr, uint64_t *scale, uint64_t *start)
{
    if (scale)
        *scale = 1;
    if (has_obj) {
        if (!tk->has_obj || tk->obj_site != object) {
            tk->obj_grp = ps_sites_id(m->sites, tk->task_no, object);
            tk->obj_site = object;
            tk->has_obj = 1;
        }
        return tk->obj_grp;
    }
    if (has_addr) {
        const struct ps_block *b = ps_map_find(tk->map, addr);
        if (b) {
            if (scale)
                *scale = b->scale;
            if (start)
                *start = b->start;
            return b->grp;                  /* the block's own (task, site) */
        }
    }
    return tk->grp0;
}

/* The sample's place in its group's block, for profile.csv: the block found by
 * address, else (the trace named the object) the live block at the address when it is
 * that object's, else the offset the trace gives in a static (41000042); a sample of a
 * site without such a block is counted as not placed. */
static void profile_sample(struct ps_model *m, struct task *tk, const struct ps_sample *x,
                           uint32_t grp, int found, uint64_t start, uint64_t scale)
{
    if (!found && (x->seen & (PS_SA_SOFF | PS_SA_OBJ)) == (PS_SA_SOFF | PS_SA_OBJ)) {
        ps_profile_add(m->prof, grp, x->soff, ps_sample_weight(x), scale);
        return;
    }
    if (!found) {
        if (!(x->seen & PS_SA_ADDR)) {
            ps_site_at(m->sites, grp)->prof_missed++;
            return;
        }
        if (tk->pc_valid && tk->pc_grp == grp && x->addr - tk->pc_start < tk->pc_size) {
            start = tk->pc_start;
        } else {
            const struct ps_block *b = ps_map_find(tk->map, x->addr);
            if (!b || b->grp != grp) {          /* a static, or another site's block */
                ps_site_at(m->sites, grp)->prof_missed++;
                return;
            }
            tk->pc_start = b->start;
            tk->pc_size = b->size;
            tk->pc_grp = grp;
            tk->pc_valid = 1;
            start = b->start;
        }
    }
    ps_profile_add(m->prof, grp, x->addr - start, ps_sample_weight(x), scale);
}

/* The software sampler's readings go to the sample just after them (ps_counters.c). */
static inline int counters_next(const struct ps_model *m)
{
    return m->st->has_sampler && m->st->sampler == HM_SAMPLER_SOFT;
}

static void sample_done(struct ps_model *m, struct thr *th, const struct ps_sample *xs)
{
    if (!(xs->seen & (PS_SA_ADDR | PS_SA_W)))   /* stray attributes alone are no sample */
        return;
    struct ps_sample set_aside;
    const struct ps_sample *x = xs;
    if ((xs->seen & PS_SA_REC) && xs->recovered == HM_SAMPLE_RECOVERED_LOOKAHEAD) {
        m->st->lookahead_samples++;
        if (!m->use_lookahead) {
            /* the look ahead's address is the next access, not the one the sampled
             * time was spent on: counted as it was before (docs/formats.md §4) */
            set_aside = *xs;
            set_aside.seen = (xs->seen & ~(unsigned)(PS_SA_ADDR | PS_SA_OBJ | PS_SA_SCALE |
                                                PS_SA_SOFF))
                             | PS_SA_CLS;
            set_aside.cls = HM_SAMPLE_CLASS_NO_ADDRESS;
            x = &set_aside;
        }
    }
    struct task *tk = &m->tasks[th->task];
    uint64_t scale, start = 0;
    uint32_t grp = attribute(m, tk, (x->seen & PS_SA_OBJ) != 0, x->object,
                             (x->seen & PS_SA_ADDR) != 0, x->addr, &scale, &start);
    int found = !(x->seen & PS_SA_OBJ) && grp != tk->grp0;
    if (x->seen & PS_SA_SCALE)
        scale = x->scale ? x->scale : 1;
    if (grp == tk->grp0)
        scale = 1;                          /* outside every site: counted as it is */
    /* the trace's class (hmtune), else what the attribution says (Extrae): in an
     * object, an address in none, no address */
    uint64_t cls = (x->seen & PS_SA_CLS) ? x->cls
                   : grp != tk->grp0 ? HM_SAMPLE_CLASS_HEAP
                   : (x->seen & PS_SA_ADDR) ? HM_SAMPLE_CLASS_UNKNOWN : HM_SAMPLE_CLASS_NO_ADDRESS;
    ps_sample_count(ps_site_at(m->sites, grp), m->st, x, cls, scale);
    ps_counters_sample(m->cnt, &th->cnt_slot, tk->task_no, th->thread_no, grp,
                       (x->seen & PS_SA_KIND) ? (unsigned)x->kind : 0, counters_next(m));
    if (grp != tk->grp0)
        profile_sample(m, tk, x, grp, found, start, scale);
}

/* A sampled page fault: attributed by the same rules as an access sample. */
static void fault_done(struct ps_model *m, struct thr *th, const struct ps_fault *f)
{
    if (!(f->seen & (PS_FA_ADDR | PS_FA_N)))
        return;
    struct task *tk = &m->tasks[th->task];
    uint32_t grp = attribute(m, tk, (f->seen & PS_FA_OBJ) != 0, f->object,
                             (f->seen & PS_FA_ADDR) != 0, f->addr, NULL, NULL);
    ps_fault_count(ps_site_at(m->sites, grp), m->st, f);
}

/* One attribute of the record being gathered (the sample x or the fault fa): a second
 * value of an attribute it already has starts the next record, the gathered one done. */
#define ATTR(rec, done, bit, fieldname)             \
    do {                                            \
        if ((rec).seen & (bit)) {                   \
            done(m, th, &(rec));                    \
            memset(&(rec), 0, sizeof(rec));         \
        }                                           \
        (rec).seen |= (bit);                        \
        (rec).fieldname = v;                        \
    } while (0)
#define FAULT_ATTR(bit, fieldname) ATTR(fa, fault_done, bit, fieldname)
#define SAMPLE_ATTR(bit, fieldname) ATTR(x, sample_done, bit, fieldname)

void ps_group_samples(struct ps_model *m, struct thr *th)
{
    struct ps_sample x;
    struct ps_fault fa;
    int reading = 0;
    memset(&x, 0, sizeof(x));
    memset(&fa, 0, sizeof(fa));
    for (size_t i = 0; i < th->gn; i++) {
        uint64_t v = th->g[i].value;
        switch (th->g[i].type) {
        /* One address event per sample; its attributes may come before or after it
         * on the line. A second address, or a repeated attribute, means two samples
         * of this thread at the same time were fused: close the first. */
        case HM_EV_SAMPLE_LOAD:
        case HM_EV_SAMPLE_STORE:
            if (x.seen & PS_SA_ADDR) {
                sample_done(m, th, &x);
                memset(&x, 0, sizeof(x));
            }
            x.seen |= PS_SA_ADDR;
            x.addr = v;
            x.is_store = th->g[i].type == HM_EV_SAMPLE_STORE;
            break;
        case HM_EV_SAMPLE_HIT: SAMPLE_ATTR(PS_SA_HIT, hit); break;
        case HM_EV_SAMPLE_LATENCY: SAMPLE_ATTR(PS_SA_LAT, latency); break;
        case HM_EV_SAMPLE_OBJECT:
        case HM_EV_AHEAD_OBJECT:        /* a look-ahead sample's: counted as --lookahead says */
            SAMPLE_ATTR(PS_SA_OBJ, object);
            m->st->has_object_events = 1;
            break;
        case HM_EV_SAMPLE_WEIGHT: SAMPLE_ATTR(PS_SA_W, weight); break;
        case HM_EV_SAMPLE_CLASS: SAMPLE_ATTR(PS_SA_CLS, cls); break;
        /* page faults: the same shape with their own types, apart from the samples */
        case HM_EV_FAULT_ADDR:
            if (fa.seen & PS_FA_ADDR) {
                fault_done(m, th, &fa);
                memset(&fa, 0, sizeof(fa));
            }
            fa.seen |= PS_FA_ADDR;
            fa.addr = v;
            break;
        case HM_EV_FAULT_COUNT: FAULT_ATTR(PS_FA_N, faults); break;
        case HM_EV_FAULT_OBJECT: FAULT_ATTR(PS_FA_OBJ, object); break;
        case HM_EV_FAULT_CLASS: FAULT_ATTR(PS_FA_CLS, cls); break;
        case HM_EV_LOST_FAULTS: m->st->lost_fault_samples += v; break;
        case HM_EV_SAMPLE_RECOVERED: SAMPLE_ATTR(PS_SA_REC, recovered); break;
        case HM_EV_SAMPLE_SCALE: SAMPLE_ATTR(PS_SA_SCALE, scale); break;
        case HM_EV_ACCESS_KIND: SAMPLE_ATTR(PS_SA_KIND, kind); break;
        case HM_EV_STATIC_OFFSET: SAMPLE_ATTR(PS_SA_SOFF, soff); break;
        default: reading |= ps_is_counter(th->g[i].type); break;
        }
    }
    sample_done(m, th, &x);
    fault_done(m, th, &fa);
    /* after the line's samples: a reading covers the interval they stand for too */
    if (reading)
        ps_counters_reading(m->cnt, &th->cnt_slot, m->tasks[th->task].task_no, th->thread_no,
                            th->gtime, th->g, th->gn, counters_next(m));
}
