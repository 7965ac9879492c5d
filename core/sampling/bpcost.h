/*
 * bpcost.h - what the bp backend's value sampling costs the threads it samples, measured on the
 * running machine when dcpid starts (dcpid -vbudget keeps value capture within a share of each
 * thread's CPU time from these figures; core/daemon/bparm.c). A trap costs what the host's
 * virtualisation makes it cost, so no figure here is a constant.
 *
 * Both measurements run a spinner thread that calls a function of ours in a loop, and compare
 * its CPU time per call in stretches with and without the thing measured (interleaved, so a
 * load change hits both alike); the difference, over the number of things done, is their cost.
 */
#ifndef DCPI_CORE_BPCOST_H
#define DCPI_CORE_BPCOST_H

#include "core/sampling/sampler.h"

/* What value capture costs a thread here, in microseconds of its CPU time. */
typedef struct dcpi_bp_cost {
    double hit_us;     /* one execute-breakpoint hit (the exception, perf's handler, the return) */
    double trigger_us; /* one arm trigger (a cpu-clock sample that wakes dcpid, dcpid running on
                          the thread's CPU, the switches back): paid whether it arms or not */
    double arm_us;     /* one arm on top of its trigger: opening the breakpoint for the thread,
                          REFRESH(count), its count hits (with the BPF program when given),
                          closing it */
    double tick_us;    /* one bare timer tick (a cpu-clock overflow writing nothing): what
                          a trigger with a timer of its own pays on top of a thinned one */
    double prog_us;    /* the trigger thinning program (thin.h) on one tick, on top of it
                          (0 when it cannot load; noise can read 0) */
    unsigned triggers, arms; /* how many were measured */
} dcpi_bp_cost_t;

/* c->hit_us: the fastest of a few batches of hits on a function of ours, minus the calls alone
 * (~7 ms at 30 us a hit). 0, or the negative errno of perf_event_open. */
int dcpi_bp_trap_cost(double *us);

/* c->trigger_us and c->arm_us as dcpid's bp backend pays them: a trigger with x's record layout
 * (x->trigger_ns is ignored: a 0.4 ms period is used) on a spinner thread, the caller reading
 * its ring as dcpid does (at real-time priority when allowed, on the CPU of each trigger; the
 * caller's policy and affinity are restored), then the same with an arm of count hits (prog_fd:
 * the BPF program attached to each, -1: none) at each trigger; c->hit_us too. ~200 ms. 0, or a
 * negative errno (perf_event_open, mmap, a thread). Also c->tick_us and c->prog_us, from bare
 * ticks every 50 us without and with the thinning program. */
int dcpi_bp_cost_measure(const dcpi_sampler_opts_t *x, unsigned count, int prog_fd,
                         dcpi_bp_cost_t *c);

/* What the inproc backend's arm mode (agent/agent.c) costs a thread, in microseconds of its CPU:
 * a tick (a cpu-clock event of its own that signals it) and an arm with its hit (the breakpoint
 * enabled at a tick, its hit signalled, disabled in the handler). */
typedef struct dcpi_inproc_cost {
    double tick_us, arm_us;
    uint64_t ticks, hits; /* how many were measured */
} dcpi_inproc_cost_t;

/* Measured on a thread of the caller's, as the agent does it (~40 ms: rounds of stretches
 * without ticks, with ticks, with ticks arming four breakpoints that its loop hits). On failure
 * c holds figures measured on a 2-core VM (15 and 17 us) and the negative errno is returned. */
int dcpi_inproc_cost_measure(dcpi_inproc_cost_t *c);

#endif
