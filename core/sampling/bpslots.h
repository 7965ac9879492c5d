/*
 * bpslots.h - execute breakpoints for precise value sampling (dcpid's bp backend, see
 * core/values/bparm.c for when an arm is set and why, core/values/bp.c for which instruction).
 *
 * An arm is one PERF_TYPE_BREAKPOINT event (HW_BREAKPOINT_X) for one thread on ANY CPU
 * (perf_event_open cpu -1), so it follows its thread when the scheduler moves it: armed at a
 * trigger on CPU c, it still fires when the thread runs on another CPU. The kernel refuses
 * PERF_EVENT_IOC_SET_OUTPUT from such an event into a per-CPU ring ("don't allow cross-cpu
 * buffers"), so each arm has a small ring of its own (one data page: an arm gives two samples of
 * a few hundred bytes), mmap'd at the arm and unmapped at its close (the daemon's cost, not the
 * target's), read with the sampler's parser (dcpi_sampler_drain_ring) with the sampler's own
 * record layout and user registers (dcpi_sampler_layout), so its samples decode like PC samples
 * and carry the registers exactly before the armed instruction executes. The hw_breakpoint
 * slots of a thread's breakpoints on any CPU are the thread's own (the kernel counts a task's
 * breakpoints per task), so arms of different threads never run out of debug registers together;
 * the caller keeps one arm per thread.
 * Armed with PERF_EVENT_IOC_REFRESH(count): the kernel disables the event itself after its
 * count-th sample, so the target never pays for a late disarm from user space (a breakpoint hit
 * costs microseconds; left armed on a hot instruction it would fire millions of times). A new
 * event per arm: MODIFY_ATTRIBUTES cannot re-aim an event that REFRESH has run down (measured on
 * 6.x kernels), and opening one costs ~15 us of the daemon's time (its ring's mmap ~10 more).
 *
 * Arms live in a fixed table of slots; samples of an arm are numbered (seq 0 is the first) as
 * its ring is read, which the caller does before it closes the arm (no sample is read late).
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

/* n slots for arms whose samples decode with s's layout (s outlives them). 0 or DCPI_ENOMEM. */
int dcpi_bpslots_new(dcpi_sampler_t *s, int n, dcpi_bpslots_t **out);
/* Close every breakpoint and free (samples not read are dropped). */
void dcpi_bpslots_free(dcpi_bpslots_t *b);
int dcpi_bpslots_count(const dcpi_bpslots_t *b);

/* Attach the BPF program prog_fd (BPF_PROG_TYPE_PERF_EVENT, e.g. core/capture/bpfmem.h) to
 * every breakpoint armed from now on (-1: none). An arm whose attach fails fails. */
void dcpi_bpslots_set_prog(dcpi_bpslots_t *b, int prog_fd);

/* What slot i holds. */
typedef struct dcpi_bpslot_info {
    pid_t pid, tid;
    int cpu;                    /* the CPU of the trigger that armed it */
    unsigned count;             /* samples asked for */
    unsigned got;               /* samples read so far */
    unsigned other;             /* of them, taken on another CPU than cpu */
    uint64_t armed_ns, last_ns; /* when armed (the caller's clock), the last sample's time */
    uint32_t cookie;
} dcpi_bpslot_info_t;
/* 1 with *out when slot i holds an arm, else 0. */
int dcpi_bpslots_info(const dcpi_bpslots_t *b, int i, dcpi_bpslot_info_t *out);
/* The slot of thread tid's arm, -1 when it has none. */
int dcpi_bpslots_find(const dcpi_bpslots_t *b, pid_t tid);
/* A slot for a new arm: a free one, else the one armed longest ago (the caller reads and closes
 * it first). */
int dcpi_bpslots_pick(const dcpi_bpslots_t *b);

/* Whether slot i's arm has given some but not all of its samples (as read so far), armed less
 * than max_age_ns before now_ns. */
int dcpi_bpslots_busy(const dcpi_bpslots_t *b, int i, uint64_t now_ns, uint64_t max_age_ns);

/* Arm slot i (closing what was there first: see dcpi_bpslots_close) at addr for thread tid of
 * process pid on any CPU, for count samples, remembering cookie and cpu (the trigger's). 0, or
 * the negative errno of perf_event_open, mmap or the ioctls (-ENOSPC: no debug register free,
 * -ESRCH: tid is gone). */
int dcpi_bpslots_arm(dcpi_bpslots_t *b, int i, pid_t pid, pid_t tid, int cpu, uint64_t addr,
                     unsigned count, uint32_t cookie, uint64_t now_ns);

/* Each sample now in slot i's ring, in order, to fn with its number within the arm (seq 0 is the
 * first); records that are not the arm's samples are skipped. Returns the samples read. */
typedef void (*dcpi_bpslots_fn)(void *arg, int i, const dcpi_sample_t *s, unsigned seq,
                                uint32_t cookie);
int dcpi_bpslots_read(dcpi_bpslots_t *b, int i, dcpi_bpslots_fn fn, void *arg);

/* Close slot i's breakpoint (unread samples dropped: read first): 1 with its cookie and the
 * samples it gave, 0 when the slot was free. */
int dcpi_bpslots_close(dcpi_bpslots_t *b, int i, uint32_t *cookie, unsigned *got);

#endif
