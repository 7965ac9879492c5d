/*
 * armhold.h - arm holders: one real-time thread per CPU that holds its CPU from an arm trigger
 * until dcpid has armed that trigger's breakpoint (core/values/bparm.c).
 *
 * An arm trigger (sampler.h, dcpi_sampler_opts_t.trigger_rings) is a sample of the thread that
 * was running on its CPU. The holder of that CPU (SCHED_FIFO, pinned there) sleeps in poll on
 * the CPU's trigger ring, so the trigger's wake-up runs it on that very CPU, preempting the
 * sampled thread where it stands; it hands the trigger to dcpid's loop (wake fd) and keeps the
 * CPU (sched_yield at the loop's priority: the loop may run there too) until the loop has armed
 * or refused it, at most max_hold_ns. The sampled thread thus cannot run on past the trigger
 * before its breakpoint is set, whatever the delay and on every CPU alike. A hold that times out
 * is given up (the thread may run on): the loop is told (DCPI_ARMHOLD_RANON) and does not arm.
 *
 * Without real-time priority the holders are not started (dcpi_armhold_start fails) and the
 * caller keeps the triggers in the events' rings. A holder that cannot get it or its CPU exits;
 * its ring's triggers are then read by the loop itself at its drains (no hold).
 * No allocation and no lock after start; the loop's calls are not thread-safe among themselves.
 */
#ifndef DCPI_CORE_ARMHOLD_H
#define DCPI_CORE_ARMHOLD_H

#include <stdint.h>
#include <sys/types.h>

#include "core/sampling/sampler.h"

typedef struct dcpi_armhold dcpi_armhold_t;

/* Start a holder for each ring of s that has a trigger ring (s outlives them); triggers of
 * pid self are never held. 0, or a negative DCPI_E* with err. */
int dcpi_armhold_start(dcpi_sampler_t *s, pid_t self, uint64_t max_hold_ns, dcpi_armhold_t **out,
                       char *err);
/* Stop the holders (joined) and free. NULL: nothing. */
void dcpi_armhold_free(dcpi_armhold_t *h);
/* The fd the loop polls (EPOLLIN: a trigger waits); dcpi_armhold_clear_wake reads it. */
int dcpi_armhold_wake_fd(const dcpi_armhold_t *h);
void dcpi_armhold_clear_wake(dcpi_armhold_t *h);

enum {
    DCPI_ARMHOLD_NONE = 0,  /* nothing to arm on this ring */
    DCPI_ARMHOLD_ARM = 1,   /* *s to arm now, its thread held (or the ring has no holder) */
    DCPI_ARMHOLD_RANON = 2, /* a trigger whose hold timed out: its thread ran on; do not arm */
};
/* The loop: ring i's waiting trigger (DCPI_ARMHOLD_*), *ntrig the triggers taken on the ring
 * since the last call. After DCPI_ARMHOLD_ARM, dcpi_armhold_release(i) once armed (or not). */
int dcpi_armhold_take(dcpi_armhold_t *h, int i, dcpi_sample_t *s, unsigned *ntrig);
void dcpi_armhold_release(dcpi_armhold_t *h, int i);

typedef struct dcpi_armhold_stats {
    int holders;          /* holder threads running */
    uint64_t holds;       /* triggers held until the loop armed them (or gave up) */
    uint64_t timeouts;    /* holds given up after max_hold_ns */
    uint64_t busy;        /* triggers not held: the ring's last one not yet taken by the loop */
    uint64_t lost;        /* triggers the kernel lost in the trigger rings */
    uint64_t wake_ns;     /* sum over holds: trigger sample -> holder running */
    uint64_t hold_ns;     /* sum over holds: holder running -> released */
    uint64_t max_hold_ns; /* the longest hold */
} dcpi_armhold_stats_t;
void dcpi_armhold_stats(const dcpi_armhold_t *h, dcpi_armhold_stats_t *out);

#endif
