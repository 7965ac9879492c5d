/*
 * bparm.c - dcpid's bp backend wiring (core/values/bp.c says which instruction, core/sampling/
 * bpslots.h how a breakpoint is armed):
 *   - an arm trigger (core/sampling/sampler.h: a user-mode cpu-clock event per target and CPU
 *     that wakes dcpid at each of its samples, every DCPI_DAEMON_BP_TRIGGER_NS of a thread's
 *     CPU time) says where a thread is; when the ring's breakpoint is free (its arm gave all its
 *     samples, or waited DCPI_DAEMON_BP_MAXAGE ms) and the ring's arm budget allows (-vrate
 *     value samples/s per CPU, DCPI_DAEMON_BP_COUNT - 1 per arm), the value pipeline chooses an
 *     instruction of the sampled function and a breakpoint is armed there for that thread on
 *     that CPU, for DCPI_DAEMON_BP_COUNT samples, at once: dcpid runs at real-time priority
 *     where allowed, so the arm follows its trigger by ~0.1 ms even on a loaded machine (it
 *     used to wait for the next drain, ~4 ms, by which time a thread had often left the
 *     function, so the arm took the first executions of its next call: issue 21 measured 66% of
 *     the value samples in a loop's first 8 iterations). An arm that has had no hit yet when
 *     the ring's next trigger comes is replaced (its thread left the armed code; counted as
 *     expired), so a thread that sleeps does not hold the ring's breakpoint;
 *   - with BPF (core/capture/bpfmem.h) the armed instruction's memory operand is read at each
 *     sample; the CPU's operand is set before the arm, each sample takes its log entry;
 *   - an arm's first sample (the execution right after the arming interrupt, skid-biased) is
 *     dropped unless -vbp-first; the other (one: arms are independent, so the value samples are
 *     too and a hotlist's binomial bound holds) goes to the value pipeline, always admitted.
 * Everything is counted for status ("vbp ..."): arms, failed arms (the first reason logged),
 * expired arms, triggers whose function had nothing to arm, dropped first samples, value
 * samples, samples whose memory operand was read, samples read after their arm was closed, the
 * mean delay from trigger to armed breakpoint, and the mean gap between an arm's
 * two hits (what one trap costs the target, plus the code between two executions).
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/log.h"
#include "core/daemon/daemon-int.h"
#include "core/daemon/daemon.h"
#include "dcpi/errno.h"

int dcpi__daemon_bp_setup(daemon_t *d, char *err)
{
    if (!d->use_bp)
        return 0;
    int n = dcpi_sampler_nrings(d->smp);
    int rc = dcpi_bpslots_new(d->smp, &d->bps);
    d->bp_tokens = calloc((size_t)(n > 0 ? n : 1), sizeof *d->bp_tokens);
    d->bp_last = calloc((size_t)(n > 0 ? n : 1), sizeof *d->bp_last);
    d->bp_hit = calloc((size_t)(n > 0 ? n : 1), sizeof *d->bp_hit);
    d->self = getpid();
    if (rc < 0 || !d->bp_tokens || !d->bp_last || !d->bp_hit)
        return dcpi__errf(err, DCPI_ENOMEM, "bp backend: out of memory");
    /* the arm follows its trigger by the time dcpid takes to wake: at real-time priority (root
     * or CAP_SYS_NICE; children and plugin workers forked later do not inherit it) ~0.1 ms
     * even on a loaded machine, else up to tens of ms there */
    struct sched_param sp = {.sched_priority = 1};
    d->bp_rt = sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0;
    d->bp_cpu = -1;
    if (!d->bp_rt)
        dcpi__log(DCPI_LOG_INFO,
                  "bp backend: no real-time priority (%s): on a loaded machine arms may come "
                  "milliseconds after their trigger (status \"arm-delay-us\")",
                  strerror(errno));
    if (dcpi_bpfmem_open(&d->bpm, d->bpm_why) == 0) {
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

void dcpi__daemon_bp_free(daemon_t *d)
{
    dcpi_bpslots_free(d->bps); /* before the program they use */
    d->bps = NULL;
    dcpi_bpfmem_close(d->bpm);
    d->bpm = NULL;
    free(d->bp_tokens);
    free(d->bp_last);
    free(d->bp_hit);
}

void dcpi__daemon_bp_budget(daemon_t *d)
{
    double pct = d->o->vbudget > 0 ? d->o->vbudget : DCPI_DAEMON_DEFAULT_VBUDGET;
    double max = 1e9 / DCPI_DAEMON_BP_TRIGGER_NS;
    if (dcpi_bp_trap_cost(&d->bp_trap_us) < 0)
        d->bp_trap_us = 0;
    /* a value sample costs its thread one whole arm (the hits, installing and removing the
     * breakpoint): measured here; at least the hits */
    if (dcpi_bp_arm_cost(DCPI_DAEMON_BP_COUNT, DCPI_DAEMON_BP_CALIBRATE, &d->bp_arm_us) < 0 ||
        d->bp_arm_us < DCPI_DAEMON_BP_COUNT * d->bp_trap_us)
        d->bp_arm_us = DCPI_DAEMON_BP_COUNT * d->bp_trap_us;
    d->bp_rate = d->bp_arm_us > 0 ? pct / 100 / (d->bp_arm_us / 1e6) : max;
    if (d->bp_rate > max)
        d->bp_rate = max;
    if (d->bp_rate < 1)
        d->bp_rate = 1;
    d->bp_trigger_ns = (uint64_t)(1e9 / d->bp_rate);
    dcpi__log(DCPI_LOG_INFO,
              "bp backend: a breakpoint hit costs %.1f us here, an arm %.1f us; -vbudget %g%% "
              "affords %.0f value samples per second of a thread's CPU time (an arm trigger "
              "every %.2f ms of it)",
              d->bp_trap_us, d->bp_arm_us, pct, d->bp_rate, (double)d->bp_trigger_ns / 1e6);
}

void dcpi__daemon_bp_report(const daemon_t *d)
{
    if (!d->bps)
        return;
    if (d->mode != DCPI_SAMPLE_SYSTEM) { /* what the budget could not buy, where the user looks */
        double pct = d->o->vbudget > 0 ? d->o->vbudget : DCPI_DAEMON_DEFAULT_VBUDGET;
        fprintf(stderr,
                "dcpid: bp backend: %" PRIu64 " value samples; -vbudget %g%% at %.1f us an arm "
                "affords %.0f per second of a thread's CPU time, so 1000 on an instruction "
                "with 5%% of them take %.0f s of it\n",
                d->bp.samples, pct, d->bp_arm_us, d->bp_rate, 1000 / (d->bp_rate * 0.05));
    }
    const bp_stats_t *b = &d->bp;
    dcpi__log(DCPI_LOG_INFO,
              "bp backend: %" PRIu64 " arms, %" PRIu64 " value samples, %" PRIu64
              " expired, %" PRIu64 " failed; arm delay %.0f us, gap between an arm's hits %.1f us",
              b->arms, b->samples, b->expired, b->failed,
              b->arms ? (double)b->delay_ns / (double)b->arms / 1e3 : 0.0,
              b->gaps ? (double)b->gap_ns / (double)b->gaps / 1e3 : 0.0);
}

/* Arms per second per ring: -vrate value samples, DCPI_DAEMON_BP_COUNT - 1 per arm. */
static double arm_rate(const daemon_t *d)
{
    return (double)dcpi_vtrace_rate(d->vt) / (DCPI_DAEMON_BP_COUNT - 1);
}

static int take_token(daemon_t *d, int r, double now)
{
    double *t = &d->bp_tokens[r], *last = &d->bp_last[r];
    *t = *last == 0 ? 2 : *t + (now - *last) * arm_rate(d);
    if (*t > 2)
        *t = 2;
    *last = now;
    if (*t < 1)
        return 0;
    *t -= 1;
    return 1;
}

/* The arm of ring r ended: tell the chooser how many value samples it gave. */
static void end_arm(daemon_t *d, int r)
{
    uint32_t cookie;
    unsigned got;
    if (!dcpi_bpslots_close(d->bps, r, &cookie, &got))
        return;
    if (got == 0)
        d->bp.expired++;
    dcpi_vtrace_bp_done(d->vt, cookie, got > 1 ? got - 1 : 0);
}

/* At real-time priority, run on the CPU of the last trigger: the next trigger there wakes dcpid
 * on the CPU of the thread it interrupted, which then waits until its arm is set (the
 * breakpoint takes its very next executions, wherever in its phases they are), instead of
 * running on for the ~0.1 ms dcpid takes elsewhere (and leaving a loop that runs for less). */
static void follow(daemon_t *d, int cpu)
{
    if (!d->bp_rt || cpu == d->bp_cpu || cpu < 0 || cpu >= CPU_SETSIZE)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) == 0)
        d->bp_cpu = cpu;
}

void dcpi__daemon_bp_pc(daemon_t *d, const dcpi_sample_t *s)
{
    int r = d->cur_ring;
    double now = dcpi__daemon_now();
    uint64_t now_ns = (uint64_t)(now * 1e9);
    if (s->pid == (uint32_t)d->self ||
        dcpi_bpslots_busy(d->bps, r, now_ns, DCPI_DAEMON_BP_MAXAGE * 1000000ull))
        return; /* never a breakpoint in dcpid itself (system-wide) */
    end_arm(d, r);
    if (!take_token(d, r, now))
        return;
    uint64_t addr;
    uint32_t cookie;
    dcpi_insn_t insn;
    if (!dcpi_vtrace_bp_choose(d->vt, s->pid, s->ip, &addr, &cookie, &insn)) {
        d->bp.nocand++;
        return;
    }
    if (d->bpm)
        dcpi_bpfmem_set(d->bpm, dcpi_sampler_ring_cpu(d->smp, r), &insn);
    int rc = dcpi_bpslots_arm(d->bps, r, (pid_t)s->tid, addr, DCPI_DAEMON_BP_COUNT, cookie, now_ns);
    if (rc < 0) {
        d->bp.failed++;
        dcpi_vtrace_bp_done(d->vt, cookie, 0);
        if (!d->bp.failed_logged++)
            dcpi__log(DCPI_LOG_WARN,
                      "bp backend: cannot arm a breakpoint at 0x%llx in thread %u (%s); such "
                      "arms are counted as failed in status",
                      (unsigned long long)addr, s->tid, strerror(-rc));
        return;
    }
    uint64_t armed = (uint64_t)(dcpi__daemon_now() * 1e9);
    d->bp.delay_ns += armed > s->time ? armed - s->time : 0;
    d->bp.arms++;
    follow(d, (int)s->cpu);
}

int dcpi__daemon_bp_sample(daemon_t *d, const dcpi_sample_t *s)
{
    unsigned seq;
    uint32_t cookie;
    int current;
    if (!dcpi_bpslots_match(d->bps, d->cur_ring, s->id, &seq, &cookie, &current))
        return 0;
    (void)cookie;
    uint64_t *hit = &d->bp_hit[d->cur_ring];
    if (seq > 0 && current && *hit && s->time > *hit) { /* the gap from the previous hit */
        d->bp.gap_ns += s->time - *hit;
        d->bp.gaps++;
    }
    *hit = s->time;
    dcpi_vtrace_sample_t v;
    dcpi__daemon_vsample(s, &v);
    if (d->bpm) /* every breakpoint sample has its entry, the dropped ones too */
        d->bp.memread += dcpi_bpfmem_next(d->bpm, (int)s->cpu, &v.regs) && v.regs.mem_ok;
    if (seq == 0 && !d->o->vbp_first) {
        d->bp.first++;
        return 1;
    }
    if ((s->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER || !s->regs_abi) {
        d->bp.failed++; /* cannot happen with exclude_kernel: counted all the same */
        return 1;
    }
    d->bp.samples++;
    dcpi_vtrace_bp_sample(d->vt, &v);
    return 1;
}
