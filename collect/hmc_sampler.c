/* hmc_sampler.c — per-thread sampling of data addresses.
 *
 * This file: the handlers, their per-thread state and the set-up that arms them, which
 * share static state that must stay async-signal-safe. Apart: the decoder
 * (hmc_decode.c), the PEBS/IBS rings (hmc_sampler_perf.c), the breakpoint's perf
 * attributes and siginfo fields (hmc_sampler_bp.c) and the sampler's records
 * (hmc_sampler_rec.c).
 *
 * Software sampler (no PMU: VMs, CI): a CPU-time timer per thread
 * (timer_create(CLOCK_THREAD_CPUTIME_ID) + SIGEV_THREAD_ID; the kernel tick caps it
 * at 250 Hz here, at no measurable cost — MACHINE-NOTES.md). The stalled load is the
 * instruction before the interrupted RIP; when that load overwrote its own address
 * register the address is recovered by a one-shot hardware execute breakpoint on
 * it (perf PERF_TYPE_BREAKPOINT with sigtrap; explicit enable/disable, since
 * PERF_EVENT_IOC_REFRESH(1) left it armed after the first hit). When that instruction
 * has no access of its own, the load it consumed (hmc_decode_behind), else the look
 * ahead's next access from rip (hmc_decode_ahead), marked as such. Every sample
 * without an address from its instruction says why (enum hms_why), and the handlers time
 * themselves (HMR_SCOST). The sample's weight is the CPU time it stands for, in ns.
 *
 * PEBS/IBS: the same per-thread timer, slower, drains the kernel's ring buffers in
 * bulk (hmc_sampler_perf.c); the kernel never signals per sample.
 *
 * Page faults: alongside either, each thread samples its minor page faults (perf's
 * software event, which needs no PMU; hmc_perf_open_faults) into a ring of its own
 * that the same timer drains. A process where the kernel refuses the event goes on
 * without it and says so once.
 *
 * Everything in the handlers is async-signal-safe: per-thread state from mmap,
 * capstone warmed up before the timer is armed, records appended to the thread's
 * own sample buffer. The handlers are reached through hmc_signal.c's dispatcher,
 * which keeps both signals deliverable whatever the application installs or blocks,
 * and gives it every signal that is not one of ours. The HMTUNE_* settings are read
 * in hmc_sampler_cfg.c. */
#include "hmc_sampler.h"
#include "hmc_counters.h"
#include "hmc_decode.h"
#include "hmc_behind.h"
#include "hmc_sampler_bp.h"
#include "hmc_sampler_perf.h"
#include "hmc_sampler_rec.h"
#include "hmc_signal.h"
#include "hm_fds.h"
#include "hm_unwind.h"

#include <asm/prctl.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* Our timers' sigev_value: the (page-aligned) per-thread state plus this tag, so a
 * timer signal still queued when its thread's sampler is gone is known as ours. */
#define TIMER_TAG 0x5a3u

struct samp {
    timer_t timer;
    int timer_ok;
    int bpfd;
    uint64_t bp_addr;             /* where the breakpoint is programmed now */
    int in_handler;
    uint64_t carry_ns;            /* weight of a sample skipped inside the trap handler */
    uint64_t fs_base, gs_base;
    struct hmc_decoder *dec;
    struct hmr_sample pending;    /* waiting for the breakpoint */
    int pending_on;
    int check;                    /* enum check: what the breakpoint checks, if anything */
    uint64_t check_rip;           /* CHECK_LOAD: the interrupted rip the rule ran at */
    uint64_t check_addr;          /* CHECK_USE: the address the load computed */
    struct hmc_perf_thread perf;
    struct hmc_perf_ring fault;   /* minor page faults (fault_on) */
    int fault_on;
    uint64_t handler_tk, n_timer, n_trap;   /* the sampler's own cost (HMR_SCOST) */
    struct hmc_cnt_thread cnt;    /* the thread's counters (HMTUNE_COUNTERS) */
};

/* HMTUNE_SAMPLE_VERIFY=1: a recovered address checked by execute breakpoints. The
 * look ahead's access runs a few instructions after the sample (CHECK_AHEAD: its
 * address then is compared). The producer load ran before it: at its next execution
 * (CHECK_LOAD) the breakpoint gives the address it computes, then a breakpoint on the
 * sample's rip (CHECK_USE, reached through the same straight-line code) applies the
 * rule there, which must give that load and that address. */
enum check { CHECK_NONE, CHECK_AHEAD, CHECK_LOAD, CHECK_USE };

static struct hmc_sampler_cfg g_cfg;
static uint64_t g_period_ns;
static int g_ready;

static void record(struct hmc_thread *t, const struct hmr_sample *r)
{
    hmc_record_sample(t, r, sizeof(*r));
}

static void emit_fault(const struct hmr_sample *r, void *t)
{
    hmc_record_fault(t, r, sizeof(*r));
}

static void record_cost(struct hmc_thread *t, const struct samp *s)
{
    struct hmr_scost c;
    memset(&c, 0, sizeof(c));
    c.h.type = HMR_SCOST;
    c.h.kind = (uint8_t)g_cfg.kind;
    c.h.len8 = HMR_LEN8(sizeof(c));
    c.handler_tk = s->handler_tk;
    c.n_timer = s->n_timer;
    c.n_trap = s->n_trap;
    c.n_decode = hmc_decoder_builds(s->dec);
    hmc_record_sample(t, &c, sizeof(c));
}

static void arm_breakpoint(struct samp *s, uint64_t insn)
{
    /* A hot loop is sampled at the same instruction again and again: reprogram the
     * debug register only when the address changes (one syscall saved per sample). */
    if (insn != s->bp_addr) {
        struct perf_event_attr a;
        hmc_bp_attr(&a, insn);
        if (ioctl(s->bpfd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &a) != 0)
            return;
        s->bp_addr = insn;
    }
    if (ioctl(s->bpfd, PERF_EVENT_IOC_ENABLE, 0) == 0)
        s->pending_on = 1;
}

static uint32_t why_bits(unsigned why) { return (uint32_t)why << HMS_WHY_SHIFT; }

/* The pending sample is done (its check too, if it had one): recorded. */
static void record_pending(struct hmc_thread *t, struct samp *s)
{
    s->check = CHECK_NONE;
    record(t, &s->pending);
}

/* A pending sample whose breakpoint did not give the address: why. A recovered
 * sample being checked keeps its address; it says the instruction was not reached. */
static void bp_failed(struct hmc_thread *t, struct samp *s, unsigned why)
{
    if (s->check != CHECK_NONE)
        s->pending.h.aux |= why == HMS_WHY_BP_MISSED ? HMS_VERIFY_SAME | HMS_VERIFY_DIFF : 0;
    else
        s->pending.h.aux = (s->pending.h.aux & ~(0xffu << HMS_WHY_SHIFT)) | HMS_REJECTED |
                           why_bits(why);
    record_pending(t, s);
}

/* The sampled instruction has no memory operand: the address of the load whose result
 * it consumed, from these registers (hmc_decode_behind refuses whatever would make it
 * wrong), marked in iclass with its distance; else why none, also in iclass. */
static void producer_load(struct samp *s, const struct hmc_regs *regs, unsigned why,
                          struct hmr_sample *r)
{
    struct hmc_access acc;
    if (why != HMS_WHY_INT && why != HMS_WHY_VEC && why != HMS_WHY_X87 && why != HMS_WHY_HINT)
        return;
    if (hmc_decode_behind(s->dec, regs, &acc) == HMC_DEC_OK) {
        r->ip = acc.insn;
        r->addr = acc.addr;
        r->h.aux = HMS_ADDR_OK | why_bits(why);
        r->iclass = acc.cls | (uint64_t)HMS_BEHIND_OK << HMS_BEHIND_SHIFT |
                    (uint64_t)acc.ahead << HMS_BEHIND_DIST_SHIFT;
    } else {
        r->iclass |= (uint64_t)acc.why << HMS_BEHIND_SHIFT;
    }
}

/* The sampled instruction gave no address: the next access in straight-line code
 * from rip, which has not executed yet, so its address from these registers is
 * exact (hmc_decode_ahead refuses whatever would make it not). Only where the
 * sampled instruction has no access of its own, or is not known: an access that
 * could not be computed (gather, clobbered, undecodable) was the one that ran, and
 * time spent in a syscall is not the next access's. */
static void look_ahead(struct samp *s, const struct hmc_regs *regs, unsigned why,
                       struct hmr_sample *r)
{
    switch (why) {
    case HMS_WHY_INT: case HMS_WHY_VEC: case HMS_WHY_X87: case HMS_WHY_HINT:
    case HMS_WHY_BRANCH: case HMS_WHY_AFTER_JUMP: case HMS_WHY_AMBIGUOUS:
        break;
    default:
        return;
    }
    struct hmc_access acc;
    if (hmc_decode_ahead(s->dec, regs, g_cfg.ahead, &acc) == HMC_DEC_OK) {
        r->ip = acc.insn;
        r->addr = acc.addr;
        r->h.aux = HMS_ADDR_OK | HMS_AHEAD | (acc.is_store ? HMS_STORE : 0) | why_bits(why) |
                   (uint32_t)acc.ahead << HMS_LOOK_SHIFT;
        /* the accessing instruction's class, a pause sampled before it, and why the
         * producer-load rule found none */
        r->iclass = acc.cls | (r->iclass & (HMS_CLS_SPIN | ~(uint64_t)HMS_CLS_ALL));
    } else {
        r->h.aux |= (uint32_t)acc.why << HMS_LOOK_SHIFT;
    }
}

/* RF in the interrupted context's flags: the instruction at rip faulted (a page
 * fault: the CPU sets RF in the flags it saves for a fault, and sigreturn restores
 * them), and its restart will not trigger an execute breakpoint (Intel SDM vol. 3,
 * 17.3.1.1), which would then fire on its next execution instead. */
static int resume_flag(const void *uc)
{
    return (((const ucontext_t *)uc)->uc_mcontext.gregs[REG_EFL] & 0x10000) != 0;
}

/* HMTUNE_SAMPLE_VERIFY=1: r waits for its check's first breakpoint (enum check); 1
 * when it is armed, 0 when r is to be recorded unchecked. Never a breakpoint in this
 * library (its code runs inside the handlers). */
static int check(struct samp *s, const struct hmr_sample *r, enum check what, uint64_t rip)
{
    if (!g_cfg.verify || s->bpfd < 0 || hm_in_self(r->ip) || (rip && hm_in_self(rip)))
        return 0;
    s->pending = *r;
    s->check = what;
    s->check_rip = rip;
    arm_breakpoint(s, r->ip);
    if (!s->pending_on)
        s->check = CHECK_NONE;
    return s->pending_on;
}

static void soft_sample(struct hmc_thread *t, struct samp *s, const siginfo_t *si, void *uc)
{
    if (s->pending_on) {
        /* First, before any library call: the armed instruction may be in memset or
         * memcpy, and a hit here would nest. The breakpoint never fired since the
         * last sample, so that sample's address stays unknown. */
        ioctl(s->bpfd, PERF_EVENT_IOC_DISABLE, 0);
        s->pending_on = 0;
        bp_failed(t, s, HMS_WHY_BP_MISSED);
    }
    struct hmr_sample r;
    memset(&r, 0, sizeof(r));
    r.h.type = HMR_SAMPLE;
    r.h.kind = HMS_SRC_SOFT;
    r.h.len8 = HMR_LEN8(sizeof(r));
    r.t = hm_ticks();
    r.weight = g_period_ns * (1 + (uint64_t)(si->si_overrun > 0 ? si->si_overrun : 0)) + s->carry_ns;
    s->carry_ns = 0;
    struct hmc_regs regs;
    struct hmc_access acc;
    memset(&acc, 0, sizeof(acc));
    hmc_regs_from_ucontext(uc, s->fs_base, s->gs_base, &regs);
    enum hmc_dec d = hmc_decode_prev(s->dec, &regs, 0, &acc);
    r.ip = acc.insn ? acc.insn : regs.rip;
    r.iclass = acc.cls;
    switch (d) {
    case HMC_DEC_OK:
        r.addr = acc.addr;
        r.h.aux = HMS_ADDR_OK | (acc.is_store ? HMS_STORE : 0) | why_bits((unsigned)acc.why);
        break;
    case HMC_DEC_CLOBBERED:
        /* Never a breakpoint in this library: its code runs inside the handlers,
         * where a hit would re-enter them in the middle of an update. */
        if (s->bpfd >= 0 && !hm_in_self(acc.insn)) {
            r.h.aux = (acc.is_store ? HMS_STORE : 0) | why_bits(HMS_WHY_CLOBBERED);
            s->pending = r;
            arm_breakpoint(s, acc.insn);
            if (s->pending_on)
                return;
        }
        r.h.aux = HMS_REJECTED | why_bits(HMS_WHY_BP_NONE);
        break;
    case HMC_DEC_NO_MEMOP:
        r.h.aux = HMS_NO_MEMOP | why_bits((unsigned)acc.why);
        break;
    default:
        r.h.aux = HMS_REJECTED | why_bits((unsigned)acc.why);
        break;
    }
    if (d == HMC_DEC_NO_MEMOP && g_cfg.producer) {
        producer_load(s, &regs, (unsigned)acc.why, &r);
        if ((r.h.aux & HMS_ADDR_OK) && check(s, &r, CHECK_LOAD, regs.rip))
            return;
    }
    if (d != HMC_DEC_OK && !(r.h.aux & HMS_ADDR_OK) && g_cfg.ahead) {
        look_ahead(s, &regs, (unsigned)acc.why, &r);
        /* the breakpoint fires when the instruction runs, a few instructions after
         * this handler returns (on_trap compares) */
        if ((r.h.aux & HMS_AHEAD) && !(r.ip == regs.rip && resume_flag(uc)) &&
            check(s, &r, CHECK_AHEAD, 0))
            return;
    }
    record(t, &r);
}

/* The timer's signal (hmc_signal.c calls this first for every delivery): 1 when it
 * was one of our timers, 0 for anyone else's (the application gets it). */
static int on_timer(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    uintptr_t v = (uintptr_t)si->si_value.sival_ptr;
    if (si->si_code != SI_TIMER || (v & 0xfff) != TIMER_TAG)
        return 0;
    struct hmc_thread *t = hmc_thread_self();
    struct samp *s = t ? hmc_thread_sampler(t) : NULL;
    if (!s || (uintptr_t)s != v - TIMER_TAG)
        return 1;                       /* queued before its timer was deleted */
    if (s->in_handler) {
        /* inside on_trap (SIGTRAP's handler does not block the timer: an application
         * handler that longjmps out would leave it blocked); counted with the next */
        s->carry_ns += g_period_ns;
        return 1;
    }
    s->in_handler = 1;
    uint64_t t0 = hm_ticks();
    hmc_counters_tick(t, &s->cnt);
    if (g_cfg.kind == HMS_SRC_SOFT)
        soft_sample(t, s, si, uc);
    else
        hmc_perf_thread_drain(&s->perf, t);
    if (s->fault_on)                  /* one load of data_head when nothing is new */
        hmc_perf_drain(&s->fault, emit_fault, t);
    if (++s->n_timer % HMR_SCOST_EVERY == 0)
        record_cost(t, s);
    s->handler_tk += hm_ticks() - t0;
    s->in_handler = 0;
    return 1;
}

/* SIGTRAP: 1 for our breakpoint (TRAP_PERF with our cookie), 0 for any other trap
 * (the application's int3 or raise, a debugger's, another perf user's). */
static int on_trap(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    if (!hmc_bp_ours(si))
        return 0;
    struct hmc_thread *t = hmc_thread_self();
    struct samp *s = t ? hmc_thread_sampler(t) : NULL;
    if (!s)
        return 1;
    /* before the instruction executes: its registers give the address */
    ioctl(s->bpfd, PERF_EVENT_IOC_DISABLE, 0);
    if (s->pending_on && !s->in_handler) {
        s->in_handler = 1;
        uint64_t t0 = hm_ticks();
        s->n_trap++;
        s->pending_on = 0;
        struct hmc_regs regs;
        struct hmc_access acc;
        memset(&acc, 0, sizeof(acc));
        hmc_regs_from_ucontext(uc, s->fs_base, s->gs_base, &regs);
        int sync = !hmc_bp_late(si);
        int ok = sync && s->check != CHECK_USE &&
                 hmc_decode_at(s->dec, &regs, s->pending.ip, &acc) == HMC_DEC_OK;
        if (s->check == CHECK_USE) {
            /* the rule where the sample ran, with the load's own address known */
            if (sync && hmc_decode_behind(s->dec, &regs, &acc) == HMC_DEC_OK)
                s->pending.h.aux |= acc.addr == s->check_addr && acc.insn == s->pending.ip
                                    ? HMS_VERIFY_SAME : HMS_VERIFY_DIFF;
            record_pending(t, s);
        } else if (s->check == CHECK_LOAD) {
            if (ok) {
                s->check_addr = acc.addr;
                s->check = CHECK_USE;
                arm_breakpoint(s, s->check_rip);
            }
            if (!s->pending_on)
                record_pending(t, s);
        } else if (s->check == CHECK_AHEAD) {
            if (ok)
                s->pending.h.aux |= acc.addr == s->pending.addr ? HMS_VERIFY_SAME : HMS_VERIFY_DIFF;
            record_pending(t, s);
        } else if (ok) {
            s->pending.addr = acc.addr;
            s->pending.h.aux |= HMS_ADDR_OK | HMS_BREAKPOINT;
            record_pending(t, s);
        } else {
            bp_failed(t, s, HMS_WHY_BP_LATE);
        }
        s->handler_tk += hm_ticks() - t0;
        s->in_handler = 0;
    }
    return 1;
}

int hmc_sampler_init(const struct hmc_sampler_cfg *cfg)
{
    g_cfg = *cfg;
    if (cfg->kind == HMS_SRC_NONE) {
        hmc_sampler_record(HMS_SRC_NONE, "none");
        return 0;
    }
    if (cfg->kind != HMS_SRC_SOFT && hmc_perf_process_init(cfg) != 0) {
        hmc_sampler_record(HMS_SRC_NONE, "none (the PMU could not be opened)");
        g_cfg.kind = HMS_SRC_NONE;
        return -1;
    }
    /* soft: one sample per timer period of thread CPU time; PEBS/IBS: drain 20x/s */
    unsigned hz = cfg->kind == HMS_SRC_SOFT ? cfg->rate_hz : 20;
    g_period_ns = 1000000000ull / hz;
    /* The signals stay ours whatever the application installs or blocks later
     * (hmc_signal.c): the timer's restarts interrupted calls, SIGTRAP may hit inside
     * any handler (the application's included), so it is never deferred. */
    if (hmc_sig_claim(cfg->signo, on_timer, HMC_SIG_KEEP | HMC_SIG_RESTART) != 0)
        return -1;
    if (cfg->kind == HMS_SRC_SOFT &&
        hmc_sig_claim(SIGTRAP, on_trap, HMC_SIG_KEEP | HMC_SIG_NODEFER) != 0)
        return -1;
    hmc_sampler_record_cfg(cfg);
    hmc_counters_init();
    g_ready = 1;
    return 0;
}

static void stack_range(uint64_t *lo, uint64_t *hi)
{
    pthread_attr_t a;
    void *addr;
    size_t size;
    *lo = *hi = 0;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return;
    if (pthread_attr_getstack(&a, &addr, &size) == 0) {
        *lo = (uint64_t)(uintptr_t)addr;
        *hi = *lo + size;
    }
    pthread_attr_destroy(&a);
}

void hmc_sampler_thread_start(void)
{
    if (!g_ready)
        return;
    struct hmc_thread *t = hmc_thread_get();
    if (!t || hmc_thread_sampler(t))
        return;
    hmc_busy++;
    struct samp *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
    if (s == MAP_FAILED) {
        hmc_busy--;
        return;
    }
    s->bpfd = -1;
    syscall(SYS_arch_prctl, ARCH_GET_FS, &s->fs_base);
    syscall(SYS_arch_prctl, ARCH_GET_GS, &s->gs_base);
    uint64_t lo, hi;
    stack_range(&lo, &hi);
    hmc_samples_begin(t, lo, hi);
    if (g_cfg.kind == HMS_SRC_SOFT) {
        s->dec = hmc_decoder_new();           /* capstone allocates here, not in the handler */
        struct perf_event_attr a;
        s->bp_addr = (uint64_t)(uintptr_t)&hmc_sampler_thread_start;
        hmc_bp_attr(&a, s->bp_addr);
        s->bpfd = hm_fd_keep((int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC),
                             &s->bpfd, HM_FD_PERF);
    } else if (hmc_perf_thread_open(&s->perf, &g_cfg) <= 0) {
        munmap(s, sizeof(*s));
        hmc_busy--;
        return;
    }
    if (g_cfg.kind == HMS_SRC_SOFT && !s->dec) {
        munmap(s, sizeof(*s));
        hmc_busy--;
        return;
    }
    if (g_cfg.fault_period)
        s->fault_on = hmc_sampler_fault_open(t, g_cfg.fault_period, &s->fault, lo, hi);
    hmc_counters_thread_start(t, &s->cnt);
    hmc_thread_set_sampler(t, s);
    struct sigevent sev;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = g_cfg.signo;
    sev.sigev_value.sival_ptr = (char *)s + TIMER_TAG;
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &s->timer) == 0) {
        struct itimerspec its;
        its.it_interval.tv_sec = (time_t)(g_period_ns / 1000000000ull);
        its.it_interval.tv_nsec = (long)(g_period_ns % 1000000000ull);
        its.it_value = its.it_interval;
        s->timer_ok = timer_settime(s->timer, 0, &its, NULL) == 0;
    }
    hmc_busy--;
}

void hmc_sampler_thread_stop(struct hmc_thread *t)
{
    struct samp *s = hmc_thread_sampler(t);
    if (!s)
        return;
    if (s->timer_ok)
        timer_delete(s->timer);        /* no handler runs for this thread after this */
    s->timer_ok = 0;
    if (s->bpfd >= 0) {
        ioctl(s->bpfd, PERF_EVENT_IOC_DISABLE, 0);
        hm_fd_drop(&s->bpfd);
    }
    if (s->pending_on)
        bp_failed(t, s, HMS_WHY_BP_MISSED);
    record_cost(t, s);
    hmc_counters_thread_stop(t, &s->cnt);
    if (g_cfg.kind == HMS_SRC_PEBS || g_cfg.kind == HMS_SRC_IBS) {
        hmc_perf_thread_drain(&s->perf, t);
        hmc_perf_thread_close(&s->perf);
    }
    if (s->fault_on) {
        hmc_perf_drain(&s->fault, emit_fault, t);
        hmc_perf_close(&s->fault, 1);
        s->fault_on = 0;
    }
    hmc_decoder_free(s->dec);
    hmc_thread_set_sampler(t, NULL);
    munmap(s, sizeof(*s));
}

void hmc_sampler_drain_self(void)
{
    struct hmc_thread *t = hmc_thread_self();
    struct samp *s = t ? hmc_thread_sampler(t) : NULL;
    if (!s || s->in_handler)
        return;
    s->in_handler = 1;                /* the timer's handler leaves the rings alone */
    if (g_cfg.kind == HMS_SRC_PEBS || g_cfg.kind == HMS_SRC_IBS)
        hmc_perf_thread_drain(&s->perf, t);
    if (s->fault_on)
        hmc_perf_drain(&s->fault, emit_fault, t);
    s->in_handler = 0;
}

void hmc_sampler_finish_thread(struct hmc_thread *t)
{
    struct samp *s = hmc_thread_sampler(t);
    if (s)
        record_cost(t, s);
}

void hmc_sampler_atfork_child(void)
{
    /* timers and perf events are not inherited: the state copied from the parent
     * describes the parent's; forget it (its memory stays mapped) and start again */
    struct hmc_thread *t = hmc_thread_self();
    if (!g_ready || !t)
        return;
    hmc_thread_set_sampler(t, NULL);
    hmc_counters_atfork_child();
    hmc_sampler_thread_start();
}
