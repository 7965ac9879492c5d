/*
 * bparm.c - dcpid's bp backend wiring (core/values/bp.c says why, core/sampling/bpslots.h how):
 *   - a user-mode PC sample of event 0 is where a thread is: when the ring's breakpoint is free
 *     (its arm gave all its samples, or waited DCPI_DAEMON_BP_MAXAGE ms), and the ring's arm
 *     budget allows (-vrate value samples/s per CPU, DCPI_DAEMON_BP_COUNT - 1 per arm), the
 *     value pipeline chooses an instruction of the sampled function and a breakpoint is armed
 *     there for that thread on that CPU, for DCPI_DAEMON_BP_COUNT samples;
 *   - with BPF (core/capture/bpfmem.h) the armed instruction's memory operand is read at each
 *     sample; the CPU's operand is set before the arm, each sample takes its log entry;
 *   - its first sample (the execution right after the arming interrupt, skid-biased) is dropped
 *     unless -vbp-first; the others go to the value pipeline, always admitted.
 * Everything is counted for status ("vbp ..."): arms, failed arms (the first reason logged),
 * expired arms, PC samples whose function had nothing to arm, dropped first samples, value
 * samples, and samples read after their arm was closed (still used).
 */
#include <errno.h>
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
    d->self = getpid();
    if (rc < 0 || !d->bp_tokens || !d->bp_last)
        return dcpi__errf(err, DCPI_ENOMEM, "bp backend: out of memory");
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
    d->bp.arms++;
}

int dcpi__daemon_bp_sample(daemon_t *d, const dcpi_sample_t *s)
{
    unsigned seq;
    uint32_t cookie;
    if (!dcpi_bpslots_match(d->bps, d->cur_ring, s->id, &seq, &cookie))
        return 0;
    (void)cookie;
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
