/*
 * inproc.c - the inproc backend (backend.h; dcpid's default -vtrace backend for a command, where
 * the agent can be preloaded and execute breakpoints work; docs/dcpid.md "INPROC BACKEND"):
 * value samples armed inside the profiled threads themselves by the agent's arm mode
 * (agent/agent.c; the table, counters and records of core/capture/stepring.h).
 *
 *   - dcpid counts the PC samples per selected instruction as the bp backend does (bp.c: the
 *     major instructions, those holding DCPI_VBP_MAJOR_PCT% of their procedure's PC samples)
 *     and writes into each process's ring file its table of IN_TARGETS: the run-time addresses
 *     of its most sampled major instructions (and the one right before each) in all but
 *     DCPI_VBP_COVER places, then one more selected instruction of
 *     each of the two hottest procedures drawn at random at each table (bp.c
 *     dcpi__vbp_targets), their procedures' ranges, and the mean period of the threads' ticks
 *     that -vbudget affords;
 *   - every thread of the process ticks on its own CPU time at random periods (a cpu-clock
 *     event that signals the thread itself); at a tick, the arms still waiting end, and the
 *     table's targets in the procedure the tick interrupted get a breakpoint of the thread's
 *     own each (up to four, in turn when there are more), which takes their first execution
 *     after the tick. The arm is made by the thread at its tick: no arm delay and no scheduler
 *     between the random moment and the arm, whatever the load (the bp backend's arm waited
 *     for dcpid: 0.1-0.7 ms under load, biasing to the executions after the wait);
 *   - only the procedure the tick is in: "the first execution after a random moment" picks an
 *     execution with a probability proportional to the time since the one before it, so arming
 *     every target at every tick took a loop's first iterations after other code ran far too
 *     often (work-phased phased read divisor 3 at 41.6% for a truth of 12.5%); a moment spent
 *     in the procedure is the bp backend's unit (its arms follow the PC samples there);
 *   - an arm stays on for up to STEP_ARM_HITS (DCPI_AGENT_HITS) executions within its window:
 *     "every execution within a window after a random moment in the procedure" weighs the
 *     executions alike, where the first execution after the moment alone weighed each by the
 *     time since the one before (python3's eval loop read 60.1% for an exact 41.6%; every
 *     execution in the window: 41.8%); each hit is one record (registers before the
 *     instruction, its bytes and memory operand, read by the thread itself), which dcpid turns
 *     into a value sample of the sink, always admitted, in the cluster of its arm
 *     (dcpi_values_sample_t.cluster): the hotlist's bound counts how alike a cluster's values
 *     are (core/values/cluster.c, core/listing/hotlist.c).
 * The budget: a tick costs the thread C_tick and each arm with its hit C_arm (measured at start,
 * core/sampling/bpcost.h: the signals' delivery and a minimal handler's work), plus what the
 * agent's handlers take in this process as it runs (the agent times each handler run: H per
 * signal, cache misses and the perf ioctls of a real program included, which a warm spinner at
 * start does not see), so with k arms a tick (measured per process as it runs: the share of
 * ticks that land in a target's procedure times its targets there) the mean period is
 * (C_tick + k C_arm + (1 + k) H) / (-vbudget / 100) of a thread's CPU.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/base/log.h"
#include "core/capture/stepdrain.h"
#include "core/sampling/bpcost.h"
#include "core/store/vsummary.h"
#include "core/values/backend.h"
#include "core/values/values.h"
#include "core/values/vbp.h"
#include "core/values/vstep.h"
#include "dcpi/errno.h"

#define IN_DRAIN_MS 10          /* the loop drains the agents' rings this often */
#define IN_TABLE_NS 50000000ull /* the tables are computed again this often */
#define IN_TARGETS  16          /* targets per process (<= STEP_ARM_MAX) */
#define IN_MIN_NS   100000ull   /* the shortest mean tick period */
#define IN_LIVE     8           /* ticks of a process before its own costs are used */
#define IN_HITS_MIN 8 /* the fewest executions an arm takes (hits_of), and all until IN_LIVE */
#define IN_START    (STEP_ARM_SLOTS * IN_HITS_MIN) /* the hits a tick is priced at until then */
#define IN_GAPS     20 /* gaps between hits before live_us prices a hit by them */
#define IN_FIRST    6u /* the table's first major targets, taken at the full share (take_of) */
#define IN_REST     4  /* the others at a quarter of it */
#define IN_ICC_MIN  16 /* clusters of a target before hits_of trusts how alike they are */

typedef struct in_stats {
    uint64_t samples; /* hits into the sink */
    uint64_t pcs;     /* user PC samples of the profiled processes */
    uint64_t tables;  /* tables written */
    uint64_t targets; /* targets that entered a table */
} in_stats_t;

typedef struct vin {
    dcpi_vbackend_t b;
    dcpi_vbackend_inproc_opts_t o;
    dcpi__vbp_choice_t *choice; /* bp.c: PC samples per instruction, which are major */
    dcpi_stepdrain_t *drain;
    char prefix[128], agent[4096];
    dcpi_inproc_cost_t cost; /* what a tick and an arm cost a thread here (measured) */
    uint64_t last_table;     /* ns */
    uint64_t rng;            /* which unlisted instructions the tables cover (bp.c) */
    in_stats_t st;
    pid_t self;
} vin_t;

static const dcpi_vbackend_ops_t in_ops;

/* The mean tick period that -vbudget affords when a tick costs us microseconds. */
static uint64_t period_ns(const vin_t *d, double us)
{
    double ns = us * 1e3 / (d->o.budget_pct / 100);
    return ns < IN_MIN_NS ? IN_MIN_NS : (uint64_t)ns;
}

/* A tick's cost with k arms by the start-up measurement alone (the status lines' figures). */
static double model_us(const vin_t *d, double k)
{
    return d->cost.tick_us + k * d->cost.arm_us;
}

/* ---- the tables */

/* What a tick costs with these counts (one process's, or all): the start-up model at the mean
 * hits a tick (an arm takes up to STEP_ARM_HITS executions, each paying a hit's trap and signal;
 * an arm that took none, its enable and disable) and its share of the closing ticks (the agent's
 * arm window), plus the time the agent's handlers took per tick (each hit's and closing tick's
 * handler included); a hit at the mean gap between two hits of the thread's arms instead
 * (stepring.h gap_ns), when that is more (a loop's next execution comes right after the trap: the
 * gap is what the hit cost the program, its data evicted by the trap included, and also the
 * program's own time between the two executions; work-accuracy's divide and chase ran at
 * 1.054-1.059x with the model's price); the model at IN_START hits and a closing tick until there
 * are IN_LIVE ticks (the table follows the live cost at every drain until then), the hits a tick
 * can take then (hits_of: IN_HITS_MIN an arm, one arm per debug register). Priced at 64 hits a
 * tick, a short process got two ticks; priced at 8 with arms of 64, its first ticks took up to
 * 256 hits each, and ten runs of bzip2 -9 on 1 MB (65 ms each) ran at 1.096x (bench/RESULTS.md,
 * stop 36). */
static double live_us(const vin_t *d, const dcpi_step_stats_t *st)
{
    if (st->ticks < IN_LIVE)
        return model_us(d, IN_START) + d->cost.tick_us;
    double per_run = st->handler_n ? (double)st->handler_ns / 1e3 / (double)st->handler_n : 0;
    double t = (double)st->ticks, closes = (double)st->closes, hit = d->cost.arm_us + per_run;
    if (st->gap_n >= IN_GAPS) { /* a hit as the program pays it, when more than the model */
        double gap = (double)st->gap_ns / 1e3 / (double)st->gap_n;
        hit = gap > hit ? gap : hit;
    }
    return (d->cost.tick_us + per_run) * (t + closes) / t + hit * (double)st->hits / t +
           d->cost.arm_us * (double)st->expired / t;
}

/* The arms the threads made on each target of h's table since the last count, onto their
 * instructions (their missing marks say how many arms went unanswered). */
static void count_arms(unsigned pid, step_ring_header_t *h, void *arg)
{
    vin_t *d = arg;
    for (unsigned i = 0; i < h->arms.n && i < STEP_ARM_MAX; i++) {
        uint64_t now = atomic_load(&h->arms_at[i]);
        if (now > h->arms_seen[i])
            dcpi__vbp_armed_at(d->b.vt, d->choice, pid, h->arms.addr[i],
                               (unsigned)(now - h->arms_seen[i]));
        h->arms_seen[i] = now;
    }
}

/* Each target's chance to be armed at a tick in its procedure (take, STEP_TAKE_ALL: always). A
 * tick lands in a procedure as often as the procedure runs, and an arm takes as many executions
 * as its window holds, so without thinning the targets of the hottest procedure took most of
 * the budget (work-demo: hot_mul's 1790 value samples to hot_xor's 137). A target's value
 * samples a tick are w = f h, f its procedure's share of the ticks and h the executions its arm
 * takes (bp.c's count; 1 until known); the targets with w above c keep c / w of their ticks, c
 * the smallest w, but at least the w at which a tick's own cost is at most what its arms' hits
 * cost (tick_us / (n hit_us)): below that, a colder target would buy its values with ticks that
 * arm nothing. The table's first IN_FIRST major targets (its most sampled instructions, each
 * holding 5% of its procedure's PC samples) set c and get that share; the others (later majors,
 * the instructions right before majors: a slow load's samples land on the next one; the drawn
 * ones) a quarter of it; a table without a major target (no selected instruction holds 5% of a
 * hot procedure) takes its first IN_FIRST targets of any kind instead. The budget aims at 1000
 * value samples per 6 s for the hottest six instructions of a process (work-accuracy chase, with
 * 18 instructions holding 5% of their procedures, gave each ~250; with the first eight targets
 * of any kind its load got 514-792 of ~5500-6700 a 6-s run, with the first six majors 711-1179,
 * bench/RESULTS.md). The thinning is at random, whatever the program does, so the unit stays
 * "a random moment in the procedure". */
static void take_of(const vin_t *d, const dcpi__vbp_target_t *t, unsigned n, uint16_t *take)
{
    uint64_t total = 0;
    for (unsigned i = 0; i < n; i++) {
        int seen = 0; /* the process's samples in the targets' procedures, once each */
        for (unsigned j = 0; j < i; j++)
            seen |= t[j].fn == t[i].fn;
        total += seen ? 0 : t[i].trig;
    }
    total = d->st.pcs > total ? d->st.pcs : total;
    double w[IN_TARGETS], c = HUGE_VAL;
    int majors = 0; /* none (no instruction holds 5% of a hot procedure): the first of any kind */
    for (unsigned i = 0; i < n; i++)
        majors |= t[i].major;
    unsigned first = 0;
    for (unsigned i = 0; i < n; i++) {
        double h = dcpi__vbp_hits_per_arm(d->choice, t[i].cookie);
        w[i] = total ? (double)t[i].trig / (double)total * (h > 1.0 ? h : 1.0) : 0.0;
        if ((t[i].major || !majors) && first++ < IN_FIRST) /* c among the first: a colder one */
            c = w[i] > 0.0 && w[i] < c ? w[i] : c;         /* does not lower it */
        else
            w[i] *= IN_REST; /* the others keep a quarter of what c gives */
    }
    double floor = d->cost.tick_us / ((double)n * d->cost.arm_us);
    c = c == HUGE_VAL ? 1.0 : c;
    c = c < floor ? floor : c;
    for (unsigned i = 0; i < n; i++) {
        take[i] = w[i] <= c ? STEP_TAKE_ALL : (uint16_t)(65535.0 * c / w[i]);
        take[i] = take[i] ? take[i] : 1;
    }
}

/* The executions an arm of each target takes (hits, 0: the agent's STEP_ARM_HITS); young: the
 * process has fewer than IN_LIVE ticks. An arm's
 * executions are one cluster: where their values are alike (intraclass correlation rho,
 * dcpi_values_icc) they say little more than one of them, and the budget is better spent on
 * more arms. The cluster size that gives the narrowest bound for a cost is
 * sqrt(c_arm / c_hit x (1 - rho) / rho) (cluster sampling's optimum, c_arm the cost of an arm
 * besides its hits: its tick and closing tick), at least IN_HITS_MIN: the executions after an
 * arm's first dilute the weight the first one takes from the gap before it (dcpid(1)). Until
 * the process has IN_LIVE ticks, IN_HITS_MIN: what live_us prices its ticks at. */
static void hits_of(const vin_t *d, unsigned pid, int young, const dcpi__vbp_target_t *t,
                    unsigned n, uint8_t *hits)
{
    double per = d->cost.arm_us > 0 ? 2 * d->cost.tick_us / d->cost.arm_us : 2.0;
    for (unsigned i = 0; i < n; i++) {
        dcpi_vsummary_icc_t c;
        hits[i] = young ? IN_HITS_MIN : 0;
        if (young || dcpi_values_icc(d->b.vt, pid, t[i].addr, &c) < 0 || !c.clustered ||
            c.k < IN_ICC_MIN || c.rho <= 0.0)
            continue;
        double m = sqrt(per * (1.0 - c.rho) / c.rho);
        m = m < IN_HITS_MIN ? IN_HITS_MIN : m;
        hits[i] = m >= STEP_ARM_HITS ? 0 : (uint8_t)m;
    }
}

/* h's table from its threads' counters so far (st: hits_of's start-up, live_us's cost). */
static void write_table_at(unsigned pid, step_ring_header_t *h, vin_t *d,
                           const dcpi_step_stats_t *st)
{
    if (!atomic_load(&h->arm_mode))
        return;
    count_arms(pid, h, d); /* the arms so far onto their instructions (take_of's h) */
    dcpi__vbp_target_t t[IN_TARGETS];
    unsigned n = dcpi__vbp_targets(d->b.vt, d->choice, (pid_t)pid, t, IN_TARGETS, &d->rng);
    unsigned fresh = 0, moved = 0;
    uint64_t addr[IN_TARGETS], lo[IN_TARGETS], hi[IN_TARGETS];
    uint16_t take[IN_TARGETS];
    uint8_t hits[IN_TARGETS];
    take_of(d, t, n, take);
    hits_of(d, pid, st->ticks < IN_LIVE, t, n, hits);
    for (unsigned j = 0; j < n; j++) {
        unsigned i = 0; /* a target that entered the table */
        while (i < h->arms.n && i < STEP_ARM_MAX && h->arms.addr[i] != t[j].addr)
            i++;
        int new = i == h->arms.n || i == STEP_ARM_MAX;
        fresh += new;
        moved += !new && (i != j || h->arms.take[i] != take[j] || h->arms.hits[i] != hits[j]);
        addr[j] = t[j].addr, lo[j] = t[j].lo, hi[j] = t[j].hi;
    }
    /* a process with fewer than IN_LIVE ticks is priced by the start-up model, not by what a
     * tick of the processes so far cost: ten runs of bzip2 -9 on 1 MB (65 ms each) priced so got
     * 914 value samples at 1.064x the target's CPU, where the model gave 146 at 1.047x (a short
     * process's values cost more than a long one's, and its agent's start ~0.45 ms;
     * bench/RESULTS.md, stop 36) */
    uint64_t p = period_ns(d, live_us(d, st));
    if (n == h->arms.n && !fresh && !moved && h->arms.period_ns == p) /* only dcpid writes it */
        return;
    step_arm_publish(h, addr, lo, hi, take, hits, n, p);
    for (unsigned i = 0; i < STEP_ARM_MAX; i++) /* arms the agents make from now on */
        h->arms_seen[i] = atomic_load(&h->arms_at[i]);
    d->st.tables++;
    d->st.targets += fresh;
}

static void write_table(unsigned pid, step_ring_header_t *h, void *arg)
{
    dcpi_step_stats_t st = {0};
    dcpi_stepdrain_add_ring(&st, h);
    write_table_at(pid, h, arg, &st);
}

/* A process whose table is still empty, or whose threads ticked fewer than 2 IN_LIVE times, gets
 * one at every drain, not every IN_TABLE_NS: a short process (bzip2 -9 of 1 MB runs 70 ms) ended
 * before its first table with targets, and took a median of 0 value samples; and at IN_LIVE
 * ticks its arms go from IN_HITS_MIN executions to hits_of's, which its own cost so far (of the
 * capped arms) does not price: the period follows each drain's cost until then. */
static void write_first_table(unsigned pid, step_ring_header_t *h, void *arg)
{
    dcpi_step_stats_t st = {0};
    dcpi_stepdrain_add_ring(&st, h);
    if (h->arms.n == 0 || st.ticks < 2 * IN_LIVE)
        write_table_at(pid, h, arg, &st);
}

/* ---- the records */

static int on_record(unsigned pid, const step_record_t *rec, void *arg)
{
    vin_t *d = arg;
    if (!(rec->flags & STEP_REC_HIT))
        return 0; /* not the arm mode's: never written in it */
    dcpi_values_sample_t v = {
        .pid = pid, .tid = rec->tid, .time = rec->time_ns, .ip = rec->before[DCPI_REG_IP]};
    if (rec->arm_hit) /* an arm's hits: one cluster (the thread's arm number) */
        v.cluster = (uint64_t)rec->tid << 32 | rec->arm_seq;
    dcpi_step_regs_before(rec, &v.regs);
    d->st.samples++;
    dcpi__vbp_hit(d->b.vt, d->choice, pid, v.ip);
    dcpi_values_hit(d->b.vt, &v);
    return 0;
}

static void drain_rings(vin_t *d)
{
    dcpi_stepdrain_poll(d->drain, on_record, d);
}

/* ---- the backend's entry points */

static int in_child_env(const dcpi_vbackend_t *b)
{
    const vin_t *d = (const vin_t *)b;
    char num[16];
    snprintf(num, sizeof num, "%u", d->o.max_bps ? d->o.max_bps : STEP_ARM_SLOTS);
    /* the user's DCPI_AGENT_BPS (fewer breakpoints: debug registers left to a debugger) stays,
     * but never more than -voracle leaves */
    const char *user = getenv(STEP_BPS_ENV);
    if (user && atoi(user) >= 1 && (unsigned)atoi(user) < (unsigned)atoi(num))
        snprintf(num, sizeof num, "%d", atoi(user));
    return dcpi__vagent_env(d->agent, d->prefix) || setenv(STEP_MODE_ENV, "arm", 1) ||
                   setenv(STEP_BPS_ENV, num, 1)
               ? -1
               : 0;
}

static void in_pc(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring)
{
    vin_t *d = (vin_t *)b;
    (void)ring;
    if (s->pid == (uint32_t)d->self)
        return;
    d->st.pcs++;
    dcpi__vbp_pc(b->vt, &d->choice, s->pid, s->ip);
}

/* pid's mappings change: its hits go first, resolved with the mappings they were taken in. */
static void in_pid_event(dcpi_vbackend_t *b, pid_t pid, int what)
{
    (void)pid;
    (void)what;
    drain_rings((vin_t *)b);
}

static int in_drain(dcpi_vbackend_t *b, uint64_t now_ns)
{
    vin_t *d = (vin_t *)b;
    char err[DCPI_ERRLEN];
    int fresh = dcpi_stepdrain_scan(d->drain, err);
    if (fresh < 0)
        dcpi__log(DCPI_LOG_WARN, "%s", err);
    drain_rings(d);
    if (fresh > 0 || now_ns - d->last_table >= IN_TABLE_NS) {
        dcpi_stepdrain_each(d->drain, write_table, d);
        d->last_table = now_ns;
    } else {
        dcpi_stepdrain_each(d->drain, write_first_table, d);
    }
    dcpi_stepdrain_each(d->drain, count_arms, d); /* before a gone process's ring goes */
    dcpi_stepdrain_reap(d->drain);
    dcpi_values_end_drain_batched(b->vt, now_ns);
    return 0;
}

static int in_timeout_ms(const dcpi_vbackend_t *b)
{
    (void)b;
    return IN_DRAIN_MS;
}

static int in_flush(dcpi_vbackend_t *b, const dcpi_values_flush_info_t *fi, char *err)
{
    vin_t *d = (vin_t *)b;
    dcpi_stepdrain_each(d->drain, count_arms, d);
    return d->choice ? dcpi__vbp_write_missing(b->vt, d->choice, fi, err) : 0;
}

/* The profiled threads' CPU seconds: their PC samples of a cpu-clock event, else the ticks. */
static double cpu_s(const vin_t *d, const dcpi_step_stats_t *st)
{
    return d->o.pc_ns ? (double)d->st.pcs * (double)d->o.pc_ns / 1e9
                      : (double)st->ticks * (double)period_ns(d, live_us(d, st)) / 1e9;
}

static void advice(void *arg, double per, char *buf, size_t len)
{
    const vin_t *d = arg;
    snprintf(buf, len, "-vbudget %.1f%% would afford them", d->o.budget_pct * DCPI_VBP_NEED / per);
}

static void agent_why(const dcpi_step_stats_t *st, char *buf, size_t len)
{
    if (st->arm_errno)
        snprintf(buf, len, "; agent: perf_event_open or an arm failed: %s%s",
                 strerror(st->arm_errno),
                 st->arm_bps < STEP_ARM_SLOTS ? " (debug registers held by another tool?)" : "");
    else
        buf[0] = 0;
}

static void in_status(const dcpi_vbackend_t *b, char *buf, size_t len)
{
    const vin_t *d = (const vin_t *)b;
    dcpi_step_stats_t st;
    dcpi_stepdrain_stats(d->drain, &st);
    char why[DCPI_ERRLEN + 80];
    agent_why(&st, why, sizeof why);
    dcpi__vbp_short_t c =
        dcpi__vbp_shortfall(d->b.vt, d->choice, cpu_s(d, &st), NULL, advice, (void *)d);
    snprintf(buf, len,
             "vinproc rings %u ticks %" PRIu64 " closes %" PRIu64 " arms %" PRIu64 " hits %" PRIu64
             " expired %" PRIu64 " dropped %" PRIu64 " samples %" PRIu64 " tables %" PRIu64
             " targets %" PRIu64 " breakpoints %u arm-delay-us 0%s\n"
             "vinproc budget %g%%: tick-us %.1f arm-us %.1f live-us %.1f, a tick every %.2f ms "
             "of a thread's CPU; below %d value samples per %d s: %u of %u instructions with "
             ">= %d%% of their procedure's PC samples\n",
             st.arm_rings, st.ticks, st.closes, st.arms, st.hits, st.expired, st.dropped,
             d->st.samples, d->st.tables, d->st.targets, st.arm_rings ? st.arm_bps : STEP_ARM_SLOTS,
             why, d->o.budget_pct, d->cost.tick_us, d->cost.arm_us, live_us(d, &st),
             (double)period_ns(d, live_us(d, &st)) / 1e6, DCPI_VBP_NEED, DCPI_VBP_NEED_S, c.shortn,
             c.majors, DCPI_VBP_MAJOR_PCT);
}

static void in_report(const dcpi_vbackend_t *b, int user)
{
    const vin_t *d = (const vin_t *)b;
    dcpi_step_stats_t st;
    dcpi_stepdrain_stats(d->drain, &st);
    double cpu = cpu_s(d, &st);
    char why[DCPI_ERRLEN + 80];
    agent_why(&st, why, sizeof why);
    if (user) {
        fprintf(stderr,
                "dcpid: inproc backend: %" PRIu64 " value samples in %.1f s of CPU; -vbudget "
                "%g%% at %.0f us a tick with its arms in this run (%.0f us a tick and %.0f an "
                "arm measured at start, the rest in the agent's handlers) affords a tick every "
                "%.2f ms of a thread's CPU%s\n",
                d->st.samples, cpu, d->o.budget_pct, live_us(d, &st), d->cost.tick_us,
                d->cost.arm_us, (double)period_ns(d, live_us(d, &st)) / 1e6, why);
        dcpi__vbp_short_t c = dcpi__vbp_shortfall(d->b.vt, d->choice, cpu, NULL, advice, (void *)d);
        if (c.shortn) {
            fprintf(stderr,
                    "dcpid: inproc backend: could not afford %d value samples per %d s of CPU "
                    "on %u of %u instructions holding >= %d%% of their procedure's PC samples:\n",
                    DCPI_VBP_NEED, DCPI_VBP_NEED_S, c.shortn, c.majors, DCPI_VBP_MAJOR_PCT);
            dcpi__vbp_shortfall(d->b.vt, d->choice, cpu, stderr, advice, (void *)d);
            if (c.shortn > 10)
                fprintf(stderr, "dcpid:   ... and %u more\n", c.shortn - 10);
        }
    }
    dcpi__log(DCPI_LOG_INFO,
              "inproc backend: %u processes, %" PRIu64 " ticks, %" PRIu64 " arms, %" PRIu64
              " hits, %" PRIu64 " expired, %" PRIu64 " dropped, %" PRIu64 " value samples, %" PRIu64
              " tables, %.1f us in the agent's handlers a tick (%" PRIu64
              " runs measured), %" PRIu64 " ticks that closed arms%s",
              st.arm_rings, st.ticks, st.arms, st.hits, st.expired, st.dropped, d->st.samples,
              d->st.tables, st.ticks ? (double)st.handler_ns / 1e3 / (double)st.ticks : 0.0,
              st.handler_n, st.closes, why);
}

static void in_stop(dcpi_vbackend_t *b)
{
    vin_t *d = (vin_t *)b;
    if (d->drain) { /* what the agents wrote last */
        dcpi_stepdrain_scan(d->drain, NULL);
        drain_rings(d);
    }
}

static void in_free(dcpi_vbackend_t *b)
{
    vin_t *d = (vin_t *)b;
    dcpi_stepdrain_close(d->drain, 1);
    dcpi__vbp_choice_free(d->choice);
    free(d);
}

/* No sampler_opts: the PC samples need no registers, the agent reads them at the hits. */
static const dcpi_vbackend_ops_t in_ops = {.desc = &dcpi_vdesc_inproc,
                                           .child_env = in_child_env,
                                           .pc = in_pc,
                                           .pid_event = in_pid_event,
                                           .drain = in_drain,
                                           .timeout_ms = in_timeout_ms,
                                           .stop = in_stop,
                                           .status = in_status,
                                           .report = in_report,
                                           .flush = in_flush,
                                           .free = in_free};

int dcpi_vbackend_inproc_new(dcpi_values_t *vt, const dcpi_vbackend_inproc_opts_t *o,
                             dcpi_vbackend_t **out, char *err)
{
    vin_t *d = calloc(1, sizeof *d);
    if (!d)
        return dcpi__errf(err, DCPI_ENOMEM, "-vtrace: out of memory");
    d->b = (dcpi_vbackend_t){.ops = &in_ops, .vt = vt};
    d->o = *o;
    d->self = getpid();
    d->rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)d->self;
    /* the rings' prefix is set now: the command is forked before the backend starts */
    snprintf(d->prefix, sizeof d->prefix, "/dev/shm/dcpi-arm-%d", (int)getpid());
    int rc = dcpi__vagent_find(o->plugin_dirs, "-vtrace", d->agent, sizeof d->agent, err);
    if (rc == 0)
        rc = dcpi_stepdrain_open(d->prefix, &d->drain, err);
    if (rc < 0) {
        free(d);
        return rc;
    }
    dcpi_stepdrain_keep_first(d->drain, 1); /* hits are never a burst's first record */
    rc = dcpi_inproc_cost_measure(&d->cost);
    if (rc < 0)
        dcpi__log(DCPI_LOG_WARN,
                  "inproc backend: cannot measure what a tick and an arm cost here (%s): "
                  "assumed %.0f and %.0f us",
                  strerror(-rc), d->cost.tick_us, d->cost.arm_us);
    dcpi__log(DCPI_LOG_INFO,
              "inproc backend: agent %s, rings %s.*; measured here: a tick %.1f us, an arm "
              "and its hit %.1f us of the thread's CPU; -vbudget %g%% affords a tick every "
              "%.2f ms of a thread's CPU at one arm a tick, %.2f ms at four",
              d->agent, "/dev/shm/dcpi-arm-<pid>", d->cost.tick_us, d->cost.arm_us, o->budget_pct,
              (double)period_ns(d, model_us(d, 1)) / 1e6,
              (double)period_ns(d, model_us(d, 4)) / 1e6);
    *out = &d->b;
    return 0;
}
