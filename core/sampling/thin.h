/*
 * thin.h - randomly thinned arm triggers for the bp backend (core/values/bparm.c): instead of
 * a cpu-clock event of its own with a fixed period, the arm trigger rides on the PC samples'
 * own timer ticks. A BPF program attached to the PC event (PERF_EVENT_IOC_SET_BPF) lets every
 * PC sample through and, for a user-mode one, with probability q = PC interval / trigger period
 * (bpf_get_prandom_u32 against a threshold), also writes a trigger record
 * into a per-CPU bpf-output event (PERF_COUNT_SW_BPF_OUTPUT, one per CPU, the trigger ring's),
 * whose wake-up runs that CPU's arm holder as a trigger event's did.
 *
 * Why: a fixed period aliases with deterministic programs, and a child process or thread gets
 * its inherited copy of the event with its period started afresh, so every short-lived child
 * was triggered at the same offsets from its start (issue 21: work-phased spawn 23.0% for
 * 12.5%). The kernel copies a perf event's BPF program to the inherited copies (checked by
 * tests/check_thin.c), so children are thinned too: the gaps between triggers are geometric on
 * the PC sampling grid, with no fixed phase in a child and no lockstep with a loop.
 * Why the PC ticks and not a faster timer of our own: a timer tick costs the target a timer
 * interrupt, ~16 us in this VM (bpcost.h tick_us), so a base timer at 1/8 of the trigger's
 * period would cost more than the triggers and arms it thins; the PC ticks are paid for already
 * and the program adds well under a microsecond to each.
 *
 * Needs libbpf at build time (DCPI_HAVE_BPF) and BPF at run time (root); dcpi_thin_open says why
 * not, and the caller then keeps a fixed-period trigger.
 */
#ifndef DCPI_CORE_THIN_H
#define DCPI_CORE_THIN_H

#include <stdint.h>

typedef struct dcpi_thin dcpi_thin_t;

/* The program keeping each user-mode PC sample with probability q (0 .. 1; above 1: every
 * one): 0, or a negative errno with a one-line reason in err. */
int dcpi_thin_open(double q, dcpi_thin_t **out, char *err);
/* The program to attach to the PC events (PERF_EVENT_IOC_SET_BPF). */
int dcpi_thin_prog_fd(const dcpi_thin_t *t);
/* CPU cpu's trigger records go to fd (a PERF_COUNT_SW_BPF_OUTPUT event of pid -1 on that CPU,
 * dcpi_thin_output_attr). 0 or a negative errno. */
int dcpi_thin_set_output(dcpi_thin_t *t, int cpu, int fd);
/* The user-mode ticks the program saw and those it kept (triggers written, or tried when the
 * CPU had no output event) since open. */
void dcpi_thin_counts(const dcpi_thin_t *t, uint64_t *ticks, uint64_t *kept);
void dcpi_thin_close(dcpi_thin_t *t);

/* A bpf-output event's type and config (PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT). */
struct perf_event_attr;
void dcpi_thin_output_attr(struct perf_event_attr *a);

#endif
