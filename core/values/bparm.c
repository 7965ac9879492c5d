/*
 * bparm.c - the bp backend (backend.h; dcpid's default -vtrace backend where execute breakpoints
 * work): its arms and their samples, and its state (bp.c says which instruction,
 * core/sampling/bpslots.h how a breakpoint is armed):
 *   - an arm trigger says where a thread is: with BPF and PC samples of a known rate, one of
 *     the thread's user-mode PC samples kept at random by a BPF program on the PC event (each
 *     with probability pc_tick_ns / trigger_ns; core/sampling/thin.h), written into a per-CPU event
 *     that wakes dcpid: the gaps between triggers are random (geometric on the PC grid), so
 *     they keep no step with a deterministic program, and the kernel copies the program to a
 *     child's inherited event, so a short-lived child is not triggered at the same offsets
 *     from its start in every child (a fixed period restarts in each child: issue 21 read
 *     work-phased spawn's divisor 3 at 23.0% for 12.5% under ASan, whose dearer triggers had a
 *     longer period); without BPF (or with another PC event), a user-mode cpu-clock event per
 *     target and CPU with the fixed period trigger_ns (sampler.h), said in the log and status;
 *     either way at least BP_TRIGGER_NS of a thread's CPU time apart on average. At a trigger,
 *     unless the thread's own arm is between its hits (for at most BP_MAXAGE ms), and when the
 *     ring's arm budget allows (-vrate value samples/s per CPU, BP_COUNT - 1 per arm), the value
 *     pipeline chooses an instruction of the sampled function and a breakpoint is armed there
 *     for that thread on any CPU (it follows the thread: core/sampling/bpslots.h), for BP_COUNT
 *     samples, before that thread runs on: where real-time priority is allowed, each CPU's
 *     triggers go to a ring of their own read by that CPU's arm holder
 *     (core/sampling/armhold.h: a SCHED_FIFO thread pinned there), which the trigger's
 *     wake-up runs on that very CPU, preempting the sampled thread where it stands; the holder
 *     hands the trigger to dcpid's loop (a wake fd; the loop, at real-time priority too, drains the
 *     rings and arms it) and keeps the CPU until the arm is set, at most BP_HOLD_NS (then the
 *     trigger is not armed: counted as ran-on). The arm thus takes the thread's next executions
 *     after the trigger, wherever in its phases it is, whatever the arm's delay and on every CPU
 *     alike. (Armed at the next drain, ~4 ms later, a thread had often left the function, so the
 *     arm took the first executions of its next call: issue 21 measured 66% of the value samples in
 *     a loop's first 8 iterations. Armed by one real-time dcpid thread that followed the last
 *     trigger's CPU, a thread whose trigger came on another CPU ran on for the 0.1-1 ms dcpid took
 *     there: under two competing spinners work-phased's divisor 3 read 15.9 and 17.5% for 12.5%.)
 *     Without real-time priority the triggers share the events' rings and are armed when dcpid gets
 *     to them (status "arm-delay-us"; said in the log);
 *   - an arm is its thread's alone (at most one per thread, in a table of BP_SLOTS_CPU per CPU):
 *     only the thread's own next trigger ends an arm that has had no hit (the thread left the armed
 *     code for a whole trigger period: counted as expired; a trigger taken before the arm was set,
 *     read late without holders, leaves it), as does BP_IDLE_MS without one; an arm stuck between
 *     its hits ends after BP_MAXAGE ms, a full table closes its oldest arm (evicted). A thread that
 *     sleeps, waits for a CPU or is moved to another one keeps its arm and gives its hits where it
 *     runs next (counted as cross-cpu). (When the breakpoint was the CPU's and the CPU's next
 *     trigger, of any thread, replaced an arm without hits, beside stress-ng --cpu 2 5-24% of the
 *     arms expired, those of a thread that waited for the CPU more, and two threads' mixes read 61%
 *     for 52%; 0.5% of those expiries came with a move to another CPU.) Each arm's samples are read
 *     from its own ring at the drains, at its thread's triggers and before its process's exec or
 *     exit, always before the arm is closed;
 *   - with BPF (core/capture/bpfmem.h) the armed instruction's memory operand is read at each
 *     sample, on whichever CPU: the operand is set for (process, address) before the arm, each
 *     sample takes its CPU's log entry by its registers' key and time;
 *   - an arm's first sample (the execution right after the arming interrupt, skid-biased) is
 *     dropped unless -vbp-first; the other (one: arms are independent, so the value samples are too
 *     and a hotlist's binomial bound holds) goes to the value pipeline, always admitted.
 * Everything is counted for status ("vbp ..."): arms, failed arms (the first reason logged),
 * expired arms, triggers whose function had nothing to arm, dropped first samples, value samples,
 * samples whose memory operand was read, samples beyond an arm's count (late: never expected),
 * triggers not armed because their hold timed out (ran-on), arms with a hit on another CPU than
 * their trigger's (cross-cpu), evicted arms, what the holders did, the mean delay from trigger to
 * armed breakpoint, and the mean gap between an arm's two hits (what one trap costs the target,
 * plus the code between two executions).
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <time.h>

#include "core/base/err.h"
#include "core/base/log.h"
#include "core/capture/bpfmem.h"
#include "core/sampling/armhold.h"
#include "core/sampling/bpcost.h"
#include "core/sampling/bpslots.h"
#include "core/sampling/thin.h"
#include "core/values/backend.h"
#include "core/values/values.h"
#include "core/values/vbp.h"
#include "dcpi/errno.h"

#define BP_COUNT      2       /* samples per arm, the first dropped */
#define BP_MAXAGE     20      /* ms an arm may wait for its samples */
#define BP_DRAIN_MS   4       /* the loop drains the rings this often */
#define BP_TRIGGER_NS 999999  /* the arm trigger's shortest period (thread CPU) */
#define BP_HOLD_NS    2000000 /* a holder keeps its CPU at most this long for one arm */
#define BP_IDLE_MS    1000    /* an arm with no hit is closed after this long (wall time) */
#define BP_SLOTS_CPU  4       /* arms at once per CPU (at least BP_SLOTS_MIN) */
#define BP_SLOTS_MIN  8

/* Arms and what became of them (status "vbp"). */
typedef struct bp_stats {
    uint64_t arms, failed, expired, nocand, first, samples, memread, late, triggers;
    uint64_t cross;        /* arms with a hit on another CPU than their trigger's */
    uint64_t evicted;      /* arms closed unfinished for a newer one (every slot in use) */
    uint64_t ranon;        /* triggers not armed: their hold timed out, the thread ran on */
    uint64_t pcs;          /* user PC samples of the first event (the threads' CPU time) */
    uint64_t delay_ns;     /* sum over arms: trigger taken -> breakpoint enabled */
    uint64_t gap_ns, gaps; /* sum and count of the gaps between consecutive hits of an arm */
    int failed_logged;
} bp_stats_t;

typedef struct vbp {
    dcpi_vbackend_t b;
    dcpi_vbackend_bp_opts_t o;
    dcpi_sampler_t *smp;
    dcpi_bpslots_t *bps;        /* the arms: a breakpoint per thread, on any CPU */
    dcpi__vbp_choice_t *choice; /* bp.c: which instruction an arm takes */
    double *tokens, *last;      /* per ring: arm budget */
    uint64_t *hit;              /* per slot: time of the arm's last hit */
    int rt;                     /* real-time priority: triggers held by per-CPU holders */
    dcpi_armhold_t *hold;       /* the holders (core/sampling/armhold.h), NULL: none */
    dcpi_armhold_stats_t held;  /* their counters when they were stopped */
    char hold_why[DCPI_ERRLEN]; /* why none */
    dcpi_bp_cost_t cost;        /* what a hit, a trigger, an arm cost a thread here (measured) */
    double rate;                /* arms/s of a thread's CPU time -vbudget (-vrate) affords */
    uint64_t trigger_ns;        /* the arm trigger's (mean) period */
    dcpi_thin_t *thin;          /* the triggers are thinned PC ticks (thin.h), NULL: fixed */
    double trig_us; /* what one of these triggers costs (thinned: no timer of its own) */
    char thin_why[DCPI_ERRLEN]; /* why not */
    bp_stats_t bp;
    dcpi_bpfmem_t *bpm;        /* memory values at breakpoint samples (BPF), else NULL */
    char bpm_why[DCPI_ERRLEN]; /* why not */
    pid_t self;                /* dcpid's own pid (no breakpoint there) */
} vbp_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int bp_start(dcpi_vbackend_t *b, dcpi_sampler_t *smp, char *err)
{
    vbp_t *d = (vbp_t *)b;
    d->smp = smp;
    int n = dcpi_sampler_nrings(d->smp);
    int slots = n * BP_SLOTS_CPU > BP_SLOTS_MIN ? n * BP_SLOTS_CPU : BP_SLOTS_MIN;
    int rc = dcpi_bpslots_new(d->smp, slots, &d->bps);
    d->tokens = calloc((size_t)(n > 0 ? n : 1), sizeof *d->tokens);
    d->last = calloc((size_t)(n > 0 ? n : 1), sizeof *d->last);
    d->hit = calloc((size_t)slots, sizeof *d->hit);
    d->self = getpid();
    if (rc < 0 || !d->tokens || !d->last || !d->hit)
        return dcpi__errf(err, DCPI_ENOMEM, "bp backend: out of memory");
    if (d->rt) {
        rc = dcpi_armhold_start(smp, d->self, BP_HOLD_NS, &d->hold, err);
        if (rc < 0)
            return rc;
        dcpi__log(DCPI_LOG_INFO,
                  "bp backend: arm holders on %d CPUs: a trigger's thread waits on its CPU "
                  "until its breakpoint is armed (at most %d ms)",
                  n, BP_HOLD_NS / 1000000);
    } else {
        dcpi__log(DCPI_LOG_WARN,
                  "bp backend: no real-time priority (%s): no arm holders; a thread may run on "
                  "between its trigger and its arm (status \"arm-delay-us\"), and on a loaded "
                  "machine value samples lean to the first executions after a function is "
                  "entered",
                  d->hold_why);
    }
    if (d->bpm) { /* opened by budget() */
        dcpi_bpslots_set_prog(d->bps, dcpi_bpfmem_prog_fd(d->bpm));
        dcpi__log(DCPI_LOG_INFO, "bp backend: memory values read by BPF at each sample");
    } else {
        dcpi__log(DCPI_LOG_WARN,
                  "bp backend: memory values (MEMVAL, memory sources and call targets) are "
                  "missing: %s",
                  d->bpm_why);
    }
    return 0;
}

static void sweep(vbp_t *d, pid_t pid, int close_all);

static void bp_stop(dcpi_vbackend_t *b)
{
    vbp_t *d = (vbp_t *)b;
    if (d->bps)
        sweep(d, 0, 1); /* the arms' samples taken, no breakpoint left in the targets */
    if (!d->hold)
        return;
    dcpi_armhold_stats(d->hold, &d->held);
    d->held.holders = 0;
    dcpi_armhold_free(d->hold); /* no thread is held while dcpid flushes and exits */
    d->hold = NULL;
}

static void bp_free(dcpi_vbackend_t *b)
{
    vbp_t *d = (vbp_t *)b;
    /* back to dcpid's own policy: what runs after (exit handlers: under ASan, LeakSanitizer's
     * tracer, which dcpid waits for spinning on sched_yield) is not held up */
    if (d->rt)
        sched_setscheduler(0, SCHED_OTHER, &(struct sched_param){0});
    bp_stop(b);
    dcpi_bpslots_free(d->bps); /* before the program they use */
    d->bps = NULL;
    dcpi_bpfmem_close(d->bpm);
    d->bpm = NULL;
    dcpi_thin_close(d->thin); /* the events that run it hold it */
    free(d->tokens);
    free(d->last);
    free(d->hit);
    dcpi__vbp_choice_free(d->choice);
    free(d);
}

/* Triggers per second of a thread's CPU time that -vbudget affords at per_trigger seconds a
 * trigger and its arm, plus per_tick seconds on each of tick_hz ticks a second; -vrate caps the
 * arms, and then the triggers, which are no use without them; at most max, at least 1. */
static double afford(const vbp_t *d, double per_trigger, double per_tick, double tick_hz,
                     double max)
{
    double pct = d->o.budget_pct, left = pct / 100 - per_tick * tick_hz;
    double f = per_trigger > 0 ? (left > 0 ? left : 0) / per_trigger : max;
    double arms = (double)dcpi_values_rate(d->b.vt) / (BP_COUNT - 1);
    if (f > arms)
        f = arms;
    if (f > max)
        f = max;
    return f < 1 ? 1 : f;
}

/* What the budget affords, from what a trigger and an arm cost here (measured at start): per
 * second of a thread's CPU time, f triggers, each of which may arm, with
 * f x (c_trigger + c_arm) + ticks x c_tick = -vbudget. A trigger that cannot arm (the ring's
 * breakpoint busy, no candidate in the function) costs less, so the budget is an upper bound.
 * Thinning the triggers' arms instead (more triggers, fewer arms) would buy fewer value samples:
 * a trigger costs more than an arm here (measured: 30-80 us against 18-45).
 * With BPF and PC samples of a known rate (a software clock's period, a hardware event's
 * frequency), the triggers are thinned PC ticks (core/sampling/thin.h): each PC tick is a
 * trigger with probability pc_tick_ns / trigger_ns, so a trigger has no timer of its own (c_trigger
 * less the bare tick's c_tick), each PC tick pays the program (c_prog), and there are at most as
 * many triggers as PC samples. Without, a cpu-clock event of period trigger_ns (fixed: it aliases
 * with deterministic programs and restarts in each child). The BPF programs are opened here so that
 * their cost is in what is measured. */
static void log_triggers(const vbp_t *d);

static void budget(vbp_t *d)
{
    double pct = d->o.budget_pct, max = 1e9 / BP_TRIGGER_NS;
    dcpi_bp_cost_t *c = &d->cost;
    if (dcpi_bpfmem_open(&d->bpm, d->bpm_why) < 0)
        d->bpm = NULL;
    dcpi_sampler_opts_t x = {.regs_user = dcpi_values_regs_mask(d->b.vt) | 1ull << DCPI_REG_IP,
                             .callchain = dcpi_values_contexts(d->b.vt),
                             .max_stack = 4};
    int rc = dcpi_bp_cost_measure(&x, BP_COUNT, d->bpm ? dcpi_bpfmem_prog_fd(d->bpm) : -1, c);
    if (rc < 0)
        dcpi__log(DCPI_LOG_WARN,
                  "bp backend: cannot measure what a trigger and an arm cost here (%s): "
                  "assumed from the hit's cost",
                  strerror(-rc));
    /* never below what the hits alone cost (a noisy measurement can read less) */
    if (c->arm_us < BP_COUNT * c->hit_us)
        c->arm_us = BP_COUNT * c->hit_us;
    if (c->trigger_us < c->hit_us)
        c->trigger_us = c->hit_us;
    double f = afford(d, (c->trigger_us + c->arm_us) / 1e6, 0, 0, max);
    d->trig_us = c->trigger_us;
    if (!d->o.pc_tick_ns) {
        snprintf(d->thin_why, sizeof d->thin_why,
                 "the PC event's samples have no known rate (a hardware event with a period)");
    } else {
        double woken = c->trigger_us > c->tick_us ? c->trigger_us - c->tick_us : 0;
        if (woken < c->hit_us)
            woken = c->hit_us;
        double pc_hz = 1e9 / (double)d->o.pc_tick_ns, tmax = max < pc_hz ? max : pc_hz;
        double ft = afford(d, (woken + c->arm_us) / 1e6, c->prog_us / 1e6, pc_hz, tmax);
        if (dcpi_thin_open(ft / pc_hz, &d->thin, d->thin_why) == 0) {
            f = ft;
            d->trig_us = woken;
        }
    }
    d->rate = f;
    d->trigger_ns = (uint64_t)(1e9 / f);
    dcpi__log(DCPI_LOG_INFO,
              "bp backend: measured here: a breakpoint hit %.1f us, an arm trigger %.1f us, an "
              "arm %.1f us, a timer tick %.1f us, the thinning program %.2f us a tick of the "
              "thread's CPU; -vbudget %g%% affords a trigger every %.2f ms of a thread's CPU "
              "and %.0f value samples per second of it",
              c->hit_us, c->trigger_us, c->arm_us, c->tick_us, c->prog_us, pct, 1e3 / f, d->rate);
    log_triggers(d);
}

/* In the log: how the arm triggers are placed (thinned PC samples or a fixed period). */
static void log_triggers(const vbp_t *d)
{
    double q = d->thin ? (double)d->o.pc_tick_ns / (double)d->trigger_ns : 0;
    if (d->thin && q < 0.999)
        dcpi__log(DCPI_LOG_INFO,
                  "bp backend: arm triggers are PC samples kept at random (each with "
                  "probability %.5f), so their gaps are random and a child process or thread "
                  "gets them at random offsets from its start",
                  q);
    else if (d->thin) /* -vbudget affords more triggers than there are PC samples */
        dcpi__log(DCPI_LOG_INFO,
                  "bp backend: arm triggers are PC samples kept at random (each with "
                  "probability %.5f): every PC sample, at the PC period, which a short-lived "
                  "child process or thread gets at the same offsets from its start",
                  q);
    else
        dcpi__log(DCPI_LOG_WARN,
                  "bp backend: arm triggers at a fixed period (%s): value samples may alias "
                  "with a program's phases, and short-lived children are sampled at the same "
                  "offsets from their start",
                  d->thin_why);
}

/* What would afford the shortfall of an instruction that got per value samples per
 * DCPI_VBP_NEED_S s (> 0): a higher -vbudget, unless the trigger's cap stops it. */
static void advice(void *arg, double per, char *buf, size_t len)
{
    const vbp_t *d = arg;
    double f = 1e9 / (double)d->trigger_ns, grow = DCPI_VBP_NEED / per;
    if (f * grow > 1e9 / BP_TRIGGER_NS)
        snprintf(buf, len, "more than the bp backend's one trigger per ms gives");
    else
        snprintf(buf, len, "-vbudget %.1f%% would afford them", d->o.budget_pct * grow);
}

/* The profiled threads' CPU seconds: their PC samples of a cpu-clock event (a period in ns),
 * else the triggers (one every trigger_ns of it: coarse when they are rare). */
static double cpu_s(const vbp_t *d)
{
    return d->o.pc_ns ? (double)d->bp.pcs * (double)d->o.pc_ns / 1e9
                      : (double)d->bp.triggers * (double)d->trigger_ns / 1e9;
}

static dcpi__vbp_short_t shortfall(const vbp_t *d, FILE *out)
{
    return dcpi__vbp_shortfall(d->b.vt, d->choice, cpu_s(d), out, advice, (void *)d);
}

/* What the holders did (status, log): "holders N holds H timeouts T busy B lost L wake-us W
 * hold-us M max-hold-us X", or why there are none. */
static void hold_line(const vbp_t *d, char *buf, size_t len)
{
    if (!d->rt) {
        snprintf(buf, len, "holders off: no real-time priority (%s)", d->hold_why);
        return;
    }
    dcpi_armhold_stats_t h = d->held;
    if (d->hold)
        dcpi_armhold_stats(d->hold, &h);
    snprintf(buf, len,
             "holders %d holds %" PRIu64 " timeouts %" PRIu64 " busy %" PRIu64 " lost %" PRIu64
             " wake-us %.1f hold-us %.1f max-hold-us %.0f",
             h.holders, h.holds, h.timeouts, h.busy, h.lost,
             h.holds ? (double)h.wake_ns / (double)h.holds / 1e3 : 0.0,
             h.holds ? (double)h.hold_ns / (double)h.holds / 1e3 : 0.0,
             (double)h.max_hold_ns / 1e3);
}

/* The counters, into the log (at exit); for a command or -p, what the budget could not buy on
 * stderr, where the user looks. */
static void bp_report(const dcpi_vbackend_t *vb, int user)
{
    const vbp_t *d = (const vbp_t *)vb;
    if (!d->bps)
        return;
    if (user) {
        const dcpi_bp_cost_t *k = &d->cost;
        dcpi__vbp_short_t c = shortfall(d, NULL);
        fprintf(stderr,
                "dcpid: bp backend: %" PRIu64 " value samples in %.1f s of CPU; -vbudget %g%% "
                "at %.0f us a%s trigger and %.0f us an arm here affords %.0f per second of a "
                "thread's CPU time\n",
                d->bp.samples, cpu_s(d), d->o.budget_pct, d->trig_us, d->thin ? " thinned" : "",
                k->arm_us, d->rate);
        if (c.shortn) {
            fprintf(stderr,
                    "dcpid: bp backend: could not afford %d value samples per %d s of CPU on %u "
                    "of %u instructions holding >= %d%% of their procedure's PC samples:\n",
                    DCPI_VBP_NEED, DCPI_VBP_NEED_S, c.shortn, c.majors, DCPI_VBP_MAJOR_PCT);
            shortfall(d, stderr);
            if (c.shortn > 10)
                fprintf(stderr, "dcpid:   ... and %u more\n", c.shortn - 10);
        }
    }
    const bp_stats_t *b = &d->bp;
    char held[DCPI_ERRLEN + 200];
    hold_line(d, held, sizeof held);
    uint64_t ticks, kept;
    dcpi_thin_counts(d->thin, &ticks, &kept);
    char trig[96] = "fixed-period";
    if (d->thin)
        snprintf(trig, sizeof trig, "thinned: %" PRIu64 " of %" PRIu64 " user PC ticks kept", kept,
                 ticks);
    dcpi__log(DCPI_LOG_INFO,
              "bp backend: %" PRIu64 " arms, %" PRIu64 " value samples, %" PRIu64
              " expired, %" PRIu64 " failed, %" PRIu64
              " not armed (hold timed out, thread ran on), %" PRIu64
              " hit on another CPU than their trigger's, %" PRIu64
              " evicted; arm delay %.0f us, gap between an arm's hits %.1f us; %s; triggers %s",
              b->arms, b->samples, b->expired, b->failed, b->ranon, b->cross, b->evicted,
              b->arms ? (double)b->delay_ns / (double)b->arms / 1e3 : 0.0,
              b->gaps ? (double)b->gap_ns / (double)b->gaps / 1e3 : 0.0, held, trig);
}

/* Arms per second per ring: what the budget (and -vrate) affords. */
static double arm_rate(const vbp_t *d)
{
    return d->rate;
}

static int take_token(vbp_t *d, int r, double now)
{
    double *t = &d->tokens[r], *last = &d->last[r];
    *t = *last == 0 ? 2 : *t + (now - *last) * arm_rate(d);
    if (*t > 2)
        *t = 2;
    *last = now;
    if (*t < 1)
        return 0;
    *t -= 1;
    return 1;
}

static void bp_sample(void *arg, int slot, const dcpi_sample_t *s, unsigned seq, uint32_t cookie);

/* Slot i's samples so far into the pipeline. */
static void read_arm(vbp_t *d, int i)
{
    dcpi_bpslots_read(d->bps, i, bp_sample, d);
}

/* Slot i's arm ends (its samples read first): tell the chooser how many value samples it gave. */
static void end_arm(vbp_t *d, int i)
{
    dcpi_bpslot_info_t in;
    uint32_t cookie;
    unsigned got;
    read_arm(d, i);
    if (!dcpi_bpslots_info(d->bps, i, &in) || !dcpi_bpslots_close(d->bps, i, &cookie, &got))
        return;
    if (got == 0)
        d->bp.expired++;
    if (in.other)
        d->bp.cross++;
    dcpi__vbp_done(d->choice, cookie, got > 1 ? got - 1 : 0);
}

/* An arm trigger's user-mode sample (counted by the caller) of thread T on ring r: T's own arm,
 * if it has one, ends (unless it is between its hits): with no hit it expired, T left the armed
 * code in the trigger period. Arms are T's alone: another thread's trigger never ends T's arm, so
 * T sleeping, waiting for a CPU or moved to another CPU keeps it (it fires where T runs next). */
static void bp_arm(vbp_t *d, const dcpi_sample_t *s, int r)
{
    double now = now_s();
    uint64_t now_ns = (uint64_t)(now * 1e9);
    if (s->pid == (uint32_t)d->self)
        return; /* never a breakpoint in dcpid itself (system-wide) */
    int i = dcpi_bpslots_find(d->bps, (pid_t)s->tid);
    if (i >= 0) {
        dcpi_bpslot_info_t in;
        read_arm(d, i);
        if (dcpi_bpslots_info(d->bps, i, &in) && in.got == 0 && in.armed_ns > s->time)
            return; /* taken before T's arm was set (read late: no holders): the arm stands */
        if (dcpi_bpslots_busy(d->bps, i, now_ns, BP_MAXAGE * 1000000ull))
            return;
        end_arm(d, i);
    }
    if (!take_token(d, r, now))
        return;
    uint64_t addr;
    uint32_t cookie;
    dcpi_insn_t insn;
    if (!dcpi__vbp_choose(d->b.vt, &d->choice, s->pid, s->ip, &addr, &cookie, &insn)) {
        d->bp.nocand++;
        return;
    }
    i = dcpi_bpslots_pick(d->bps);
    dcpi_bpslot_info_t in;
    if (dcpi_bpslots_info(d->bps, i, &in)) { /* every slot in use: the oldest arm goes */
        d->bp.evicted++;
        end_arm(d, i);
    }
    if (d->bpm)
        dcpi_bpfmem_set(d->bpm, (pid_t)s->pid, addr, &insn);
    d->hit[i] = 0;
    int rc = dcpi_bpslots_arm(d->bps, i, (pid_t)s->pid, (pid_t)s->tid, (int)s->cpu, addr, BP_COUNT,
                              cookie, now_ns);
    if (rc < 0) {
        d->bp.failed++;
        dcpi__vbp_done(d->choice, cookie, 0);
        dcpi__vbp_failed(d->choice, cookie, -rc);
        if (!d->bp.failed_logged++)
            dcpi__log(DCPI_LOG_WARN,
                      "bp backend: cannot arm a breakpoint at 0x%llx in thread %u (%s); such "
                      "arms are counted as failed in status",
                      (unsigned long long)addr, s->tid, strerror(-rc));
        return;
    }
    uint64_t armed = (uint64_t)(now_s() * 1e9);
    d->bp.delay_ns += armed > s->time ? armed - s->time : 0;
    d->bp.arms++;
}

/* Every arm's samples read; arms that gave all their samples, had no hit in BP_IDLE_MS, or are
 * stuck between their hits for BP_MAXAGE ms, closed; pid's alone (pid > 0), closed all when
 * close_all. */
static void sweep(vbp_t *d, pid_t pid, int close_all)
{
    uint64_t now_ns = (uint64_t)(now_s() * 1e9);
    for (int i = 0; i < dcpi_bpslots_count(d->bps); i++) {
        dcpi_bpslot_info_t in;
        if (!dcpi_bpslots_info(d->bps, i, &in) || (pid > 0 && in.pid != pid))
            continue;
        read_arm(d, i);
        dcpi_bpslots_info(d->bps, i, &in);
        uint64_t age = now_ns > in.armed_ns ? now_ns - in.armed_ns : 0;
        if (close_all || in.got >= in.count || age > BP_IDLE_MS * 1000000ull ||
            (in.got > 0 && age > BP_MAXAGE * 1000000ull))
            end_arm(d, i);
    }
}

/* An arm trigger read from ring (no holders: the triggers share the events' rings). */
static void bp_trigger(vbp_t *d, const dcpi_sample_t *s, int ring)
{
    if (s->pid != (uint32_t)d->self)
        d->bp.triggers++; /* each stands for trigger_ns of a thread's CPU time */
    bp_arm(d, s, ring);
}

/* The holders' triggers: each ring's held one armed (its thread waits on its CPU meanwhile). */
static void bp_held(vbp_t *d)
{
    dcpi_armhold_clear_wake(d->hold);
    for (int r = 0; r < dcpi_sampler_nrings(d->smp); r++) {
        dcpi_sample_t s;
        unsigned n;
        int what = dcpi_armhold_take(d->hold, r, &s, &n);
        d->bp.triggers += n;
        if (what == DCPI_ARMHOLD_RANON)
            d->bp.ranon++;
        if (what != DCPI_ARMHOLD_ARM)
            continue;
        bp_arm(d, &s, r);
        dcpi_armhold_release(d->hold, r);
    }
}

/* A sample read from slot's arm ring, seq-th of its arm: into the value pipeline, or counted. */
static void bp_sample(void *arg, int slot, const dcpi_sample_t *s, unsigned seq, uint32_t cookie)
{
    vbp_t *d = arg;
    (void)cookie;
    uint64_t *hit = &d->hit[slot];
    if (seq > 0 && *hit && s->time > *hit) { /* the gap from the previous hit */
        d->bp.gap_ns += s->time - *hit;
        d->bp.gaps++;
    }
    *hit = s->time;
    dcpi_values_sample_t v;
    dcpi_vbackend_sample_of(s, &v);
    if (d->bpm) /* every breakpoint sample has its entry, the dropped ones too */
        d->bp.memread += dcpi_bpfmem_find(d->bpm, (int)s->cpu, s->time, &v.regs) && v.regs.mem_ok;
    if (seq >= BP_COUNT) { /* more than REFRESH allows: never seen */
        d->bp.late++;
        return;
    }
    if (seq == 0 && !d->o.keep_first) {
        d->bp.first++;
        return;
    }
    if ((s->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER || !s->regs_abi) {
        d->bp.failed++; /* cannot happen with exclude_kernel: counted all the same */
        return;
    }
    d->bp.samples++;
    dcpi_values_hit(d->b.vt, &v);
}

static int bp_record(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring)
{
    vbp_t *d = (vbp_t *)b;
    if (s->event == DCPI_SAMPLER_EV_TRIGGER) { /* the arm trigger: not a PC sample */
        if ((s->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER)
            bp_trigger(d, s, ring);
        return 1;
    }
    return 0; /* the arms' samples are in rings of their own (bp_sample), never here */
}

/* pid's mappings change (its exec or exit, a new mapping): its arms' samples go first, with the
 * old mappings; at its exec or exit its arms are closed. */
static void bp_pid_event(dcpi_vbackend_t *b, pid_t pid, int what)
{
    vbp_t *d = (vbp_t *)b;
    if (d->bps)
        sweep(d, pid, what != DCPI_VBACKEND_MMAP);
}

/* A PC sample: which instructions hold the PC samples (the major ones), and every function
 * with PC samples decoded (its selected instructions get values or missing marks). */
static void bp_pc(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring)
{
    vbp_t *d = (vbp_t *)b;
    (void)ring;
    if (s->pid == (uint32_t)d->self)
        return;
    d->bp.pcs++;
    dcpi__vbp_pc(b->vt, &d->choice, s->pid, s->ip);
}

static int bp_flush(dcpi_vbackend_t *b, const dcpi_values_flush_info_t *fi, char *err)
{
    vbp_t *d = (vbp_t *)b;
    return d->choice ? dcpi__vbp_write_missing(b->vt, d->choice, fi, err) : 0;
}

static void bp_sampler_opts(const dcpi_vbackend_t *b, dcpi_sampler_opts_t *x)
{
    x->regs_user = dcpi_values_regs_mask(b->vt) | 1ull << DCPI_REG_IP;
    x->callchain = dcpi_values_contexts(b->vt);
    x->max_stack = 4;
    x->trigger_ns = ((const vbp_t *)b)->trigger_ns; /* the arm trigger */
    x->trigger_rings = ((const vbp_t *)b)->rt;      /* read by the holders */
    x->thin = ((const vbp_t *)b)->thin;             /* thinned PC ticks, else a timer */
}

/* Drained at each arm trigger: the held triggers armed first, then the plugins' round trips,
 * which are batched. */
static int bp_drain(dcpi_vbackend_t *b, uint64_t now_ns)
{
    vbp_t *d = (vbp_t *)b;
    if (d->hold)
        bp_held(d);
    sweep(d, 0, 0);
    dcpi_values_end_drain_batched(b->vt, now_ns);
    return 0;
}

static int bp_wake_fd(const dcpi_vbackend_t *b)
{
    return dcpi_armhold_wake_fd(((const vbp_t *)b)->hold);
}

static int bp_timeout_ms(const dcpi_vbackend_t *b)
{
    (void)b;
    return BP_DRAIN_MS;
}

static void bp_status(const dcpi_vbackend_t *b, char *buf, size_t len)
{
    const vbp_t *d = (const vbp_t *)b;
    snprintf(buf, len,
             "vbp arms %" PRIu64 " failed %" PRIu64 " expired %" PRIu64 " nothing-to-arm %" PRIu64
             " first-dropped %" PRIu64 " samples %" PRIu64 " memory-read %" PRIu64 " late %" PRIu64
             " ran-on %" PRIu64 " cross-cpu %" PRIu64 " evicted %" PRIu64
             " arm-delay-us %.0f hit-gap-us %.1f%s%s\n",
             d->bp.arms, d->bp.failed, d->bp.expired, d->bp.nocand, d->bp.first, d->bp.samples,
             d->bp.memread, d->bp.late, d->bp.ranon, d->bp.cross, d->bp.evicted,
             d->bp.arms ? (double)d->bp.delay_ns / (double)d->bp.arms / 1e3 : 0.0,
             d->bp.gaps ? (double)d->bp.gap_ns / (double)d->bp.gaps / 1e3 : 0.0,
             d->bpm ? "" : "; memory values off: ", d->bpm ? "" : d->bpm_why);
    size_t used = strlen(buf);
    dcpi__vbp_short_t c = shortfall(d, NULL);
    const dcpi_bp_cost_t *k = &d->cost;
    snprintf(buf + used, len > used ? len - used : 0,
             "vbp budget %g%%: hit-us %.1f trigger-us %.1f arm-us %.1f tick-us %.1f prog-us %.2f, "
             "a trigger every %.2f ms of a thread's CPU; below %d value samples per %d s: %u of "
             "%u instructions with >= %d%% of their procedure's PC samples\n",
             d->o.budget_pct, k->hit_us, k->trigger_us, k->arm_us, k->tick_us, k->prog_us,
             (double)d->trigger_ns / 1e6, DCPI_VBP_NEED, DCPI_VBP_NEED_S, c.shortn, c.majors,
             DCPI_VBP_MAJOR_PCT);
    used = strlen(buf);
    uint64_t ticks, kept;
    dcpi_thin_counts(d->thin, &ticks, &kept);
    if (d->thin)
        snprintf(buf + used, len > used ? len - used : 0,
                 "vbp triggers thinned: ticks %" PRIu64 " kept %" PRIu64 " q %.5f\n", ticks, kept,
                 (double)d->o.pc_tick_ns / (double)d->trigger_ns);
    else
        snprintf(buf + used, len > used ? len - used : 0, "vbp triggers fixed-period: %s\n",
                 d->thin_why);
    used = strlen(buf);
    char held[DCPI_ERRLEN + 200];
    hold_line(d, held, sizeof held);
    snprintf(buf + used, len > used ? len - used : 0, "vbp %s\n", held);
}

static const dcpi_vbackend_ops_t bp_ops = {.desc = &dcpi_vdesc_bp,
                                           .sampler_opts = bp_sampler_opts,
                                           .start = bp_start,
                                           .pc = bp_pc,
                                           .record = bp_record,
                                           .pid_event = bp_pid_event,
                                           .drain = bp_drain,
                                           .wake_fd = bp_wake_fd,
                                           .stop = bp_stop,
                                           .timeout_ms = bp_timeout_ms,
                                           .status = bp_status,
                                           .report = bp_report,
                                           .flush = bp_flush,
                                           .free = bp_free};

int dcpi_vbackend_bp_new(dcpi_values_t *vt, const dcpi_vbackend_bp_opts_t *o, dcpi_vbackend_t **out)
{
    vbp_t *d = calloc(1, sizeof *d);
    if (!d)
        return DCPI_ENOMEM;
    d->b = (dcpi_vbackend_t){.ops = &bp_ops, .vt = vt};
    d->o = *o;
    budget(d);
    /* real-time priority (root or CAP_SYS_NICE; processes forked later, the plugin workers, and
     * threads created later do not inherit it): the loop wakes at once for a held trigger, and
     * the holders (started with the rings) can hold their CPUs */
    struct sched_param sp = {.sched_priority = 1};
    d->rt = sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0;
    if (!d->rt)
        snprintf(d->hold_why, sizeof d->hold_why, "%s", strerror(errno));
    *out = &d->b;
    return 0;
}
