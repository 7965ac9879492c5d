/*
 * bpslots.h - execute breakpoints for precise value sampling (dcpid's bp backend, see
 * core/values/bp.c for which instruction is armed and why).
 *
 * One PERF_TYPE_BREAKPOINT event (HW_BREAKPOINT_X) at a time per ring of a sampler: on the
 * ring's CPU, for one thread, written into that ring (PERF_EVENT_IOC_SET_OUTPUT) with the
 * sampler's own record layout and user registers (dcpi_sampler_layout), so its samples decode
 * like PC samples and carry the registers exactly before the armed instruction executes.
 * Armed with PERF_EVENT_IOC_REFRESH(count): the kernel disables the event itself after its
 * count-th sample, so the target never pays for a late disarm from user space (a breakpoint hit
 * costs microseconds; left armed on a hot instruction it would fire millions of times). A new
 * event per arm: MODIFY_ATTRIBUTES cannot re-aim an event that REFRESH has run down (measured on
 * 6.x kernels), and opening one costs ~15 us of the daemon's time.
 *
 * Samples of an arm are numbered (seq 0 is the first); the last arms of each ring are
 * remembered so that samples read after their event was closed still match.
 */
#ifndef DCPI_CORE_BPSLOTS_H
#define DCPI_CORE_BPSLOTS_H

#include <stdint.h>
#include <sys/types.h>

#include "core/sampling/sampler.h"

typedef struct dcpi_bpslots dcpi_bpslots_t;

/* Whether this machine lets us open an execute breakpoint (on the calling thread): 0, or the
 * negative errno with "perf_event_open(breakpoint): reason" in err. */
int dcpi_bp_probe(char *err);

/* The attributes of an execute breakpoint at addr: one sample per hit, disabled, user mode only
 * (bpslots.c and bpcost.c). */
struct perf_event_attr;
void dcpi__bp_attr(struct perf_event_attr *a, uint64_t addr);

/* Slots for every ring of s (which must outlive them). 0 or DCPI_ENOMEM. */
int dcpi_bpslots_new(dcpi_sampler_t *s, dcpi_bpslots_t **out);
/* Close every breakpoint and free. */
void dcpi_bpslots_free(dcpi_bpslots_t *b);

/* Attach the BPF program prog_fd (BPF_PROG_TYPE_PERF_EVENT, e.g. core/capture/bpfmem.h) to
 * every breakpoint armed from now on (-1: none). An arm whose attach fails fails. */
void dcpi_bpslots_set_prog(dcpi_bpslots_t *b, int prog_fd);

/* Whether ring's breakpoint is armed, has given some but not all of its samples, and was armed
 * less than max_age_ns before now_ns (monotonic ns). One that has given none yet is not busy:
 * its thread left the armed code, and a newer arm may replace it. */
int dcpi_bpslots_busy(const dcpi_bpslots_t *b, int ring, uint64_t now_ns, uint64_t max_age_ns);

/* Close ring's breakpoint: 1 with its cookie and the samples it gave so far, 0 when none. */
int dcpi_bpslots_close(dcpi_bpslots_t *b, int ring, uint32_t *cookie, unsigned *got);

/* Arm ring's slot (closing what was there first: see dcpi_bpslots_close) at addr for thread
 * tid on the ring's CPU, for count samples, remembering cookie. 0, or the negative errno of
 * perf_event_open or of the ioctls (-ENOSPC: no debug register free, -ESRCH: tid is gone). */
int dcpi_bpslots_arm(dcpi_bpslots_t *b, int ring, pid_t tid, uint64_t addr, unsigned count,
                     uint32_t cookie, uint64_t now_ns);

/* A DCPI_SAMPLER_EV_OTHER sample with this id read from ring: 1 when it is one of the ring's
 * breakpoints' (the armed one, *current 1, or a recent one, *current 0), with *seq (its number
 * within its arm) and *cookie; 0 when it is not. */
int dcpi_bpslots_match(dcpi_bpslots_t *b, int ring, uint64_t id, unsigned *seq, uint32_t *cookie,
                       int *current);

#endif
