/*
 * sampler.h - dcpid's perf_event side: event names, opening one sampling event per
 * (target, CPU, event), one mmap'd ring buffer per CPU (the other events of that CPU are
 * redirected into it with PERF_EVENT_IOC_SET_OUTPUT), and reading the records out of the rings
 * into decoded structs handed to callbacks. No allocation while draining.
 */
#ifndef DCPI_CORE_SAMPLER_H
#define DCPI_CORE_SAMPLER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DCPI_SAMPLER_MAXEV      8
#define DCPI_SAMPLER_DATA_PAGES 64

typedef struct dcpi_event_spec {
    char name[32];
    uint32_t type;   /* PERF_TYPE_SOFTWARE or PERF_TYPE_HARDWARE */
    uint64_t config; /* PERF_COUNT_* */
    uint64_t period; /* sample_period, or 0 with freq */
    uint64_t freq;   /* sample_freq when period == 0 */
} dcpi_event_spec_t;

/* Parse "name[:period]" (cpu-clock, task-clock, cycles, instructions, branch-misses,
 * cache-misses). Without a period: software clocks sample every 1e9/hz ns, hardware events
 * use frequency mode at hz. Error: "event NAME: reason". */
int dcpi_event_parse(const char *arg, unsigned hz, dcpi_event_spec_t *ev, char *err);
/* Open ev once on the calling process to see whether the machine supports it: 0, or the
 * negative errno of perf_event_open with "perf_event_open: strerror" in err. */
int dcpi_event_probe(const dcpi_event_spec_t *ev, char *err);

enum dcpi_sampler_mode {
    DCPI_SAMPLE_SYSTEM = 0, /* pid -1 on every online CPU */
    DCPI_SAMPLE_COMMAND,    /* a child that has not exec'd yet: inherit, enable_on_exec */
    DCPI_SAMPLE_PID,        /* every thread of an existing process, inherit */
};

typedef struct dcpi_sampler dcpi_sampler_t;

/* Extra sample fields for value profiling (all 0: PC sampling only). */
typedef struct dcpi_sampler_opts {
    uint64_t regs_user;   /* PERF_SAMPLE_REGS_USER with this sample_regs_user mask (0: none) */
    int callchain;        /* PERF_SAMPLE_CALLCHAIN, user part only (unless callchain_kernel) */
    int callchain_kernel; /* with callchain: the kernel part too (dcpid -g) */
    unsigned max_stack;   /* sample_max_stack with callchain (0: 4) */
    /* An arm trigger besides the events (0: none): a user-mode cpu-clock event of this period
     * (ns) per target and CPU, with the same record layout, that wakes its ring at every sample
     * (the events wake it at half full), so that a breakpoint is armed microseconds after the
     * thread was seen, not at the next drain (core/daemon/bparm.c). Its samples have event
     * DCPI_SAMPLER_EV_TRIGGER. The period is made to differ from every event's, which is how
     * the samples of inherited copies (child threads and processes, whose ids are not ours) are
     * told apart. */
    uint64_t trigger_ns;
    /* With trigger_ns: the triggers go to rings of their own, one per CPU (not the events'),
     * read with dcpi_sampler_take_triggers by one thread per CPU (core/values/bparm.c's arm
     * holders), whose poll they wake alone. */
    int trigger_rings;
    /* With trigger_ns: the triggers are thinned PC ticks (core/sampling/thin.h), not an event of
     * their own: the program is attached to every event 0 (inherited by children with it) and
     * writes its kept ticks into one bpf-output event per CPU opened here (its samples have
     * event DCPI_SAMPLER_EV_TRIGGER; trigger_ns is then the mean period). NULL: a cpu-clock
     * event of period trigger_ns. */
    struct dcpi_thin *thin;
} dcpi_sampler_opts_t;

/*
 * Open the events (disabled) and their rings, with the extra sample fields of x (NULL: none) on
 * every event. On failure returns the negative errno of the failing perf_event_open (or
 * DCPI_ESRCH, DCPI_ENOMEM) with a one-line reason in err: "perf_event_open: strerror" for the
 * open itself. *kernel_excluded is set to 1 when kernel samples had to be excluded (EACCES with
 * exclude_kernel=0).
 */
int dcpi_sampler_open(const dcpi_event_spec_t *evs, int nev, enum dcpi_sampler_mode mode, pid_t pid,
                      const dcpi_sampler_opts_t *x, dcpi_sampler_t **out, int *kernel_excluded,
                      char *err);
void dcpi_sampler_close(dcpi_sampler_t *s);
/* Enable every event (not needed for DCPI_SAMPLE_COMMAND: enable_on_exec). */
int dcpi_sampler_enable(dcpi_sampler_t *s);
/* Stop every event until the next dcpi_sampler_enable (dcpid -duty's off windows). */
int dcpi_sampler_disable(dcpi_sampler_t *s);

int dcpi_sampler_nrings(const dcpi_sampler_t *s);
/* The fd to poll for ring i (EPOLLIN at the watermark, EPOLLHUP when its task exited). */
int dcpi_sampler_ring_fd(const dcpi_sampler_t *s, int i);
int dcpi_sampler_nfds(const dcpi_sampler_t *s); /* events opened in all */
/* The CPU whose events ring i holds. */
int dcpi_sampler_ring_cpu(const dcpi_sampler_t *s, int i);
/* The fd to poll for ring i's arm triggers (dcpi_sampler_opts_t.trigger_rings; POLLIN at each
 * trigger), -1 when they share ring i. */
int dcpi_sampler_trigger_fd(const dcpi_sampler_t *s, int i);
/* Read (and consume) every arm trigger now in ring i's trigger ring: *n their count, *lost the
 * triggers the kernel lost there since the last call, *newest the newest user-mode one's ip,
 * pid/tid, time, cpu and misc (its other fields zero). 1 when there was a user-mode one, else 0.
 * Safe to call from one thread per ring while other threads drain the other rings; no
 * allocation. */
struct dcpi_sample;
int dcpi_sampler_take_triggers(dcpi_sampler_t *s, int i, struct dcpi_sample *newest, unsigned *n,
                               uint64_t *lost);
/* Set a's sample_type, sample_id_all, clock (CLOCK_MONOTONIC: sample times compare with
 * clock_gettime's) and the value-profiling fields to the sampler's own layout, so that records of
 * another event redirected into a ring (PERF_EVENT_IOC_SET_OUTPUT) decode like the sampler's (their
 * event is DCPI_SAMPLER_EV_OTHER). */
struct perf_event_attr;
void dcpi_sampler_layout(const dcpi_sampler_t *s, struct perf_event_attr *a);
/* The attributes of an arm trigger of x (x->trigger_ns, the record layout of x's extra fields),
 * disabled, for one thread (no inherit): what core/sampling/bpcost.c measures. */
void dcpi_sampler_trigger_attr(const dcpi_sampler_opts_t *x, struct perf_event_attr *a);
/* perf_event_open(a, pid, cpu, no group, CLOEXEC): the fd, or the negative errno. */
int dcpi__perf_open(struct perf_event_attr *a, pid_t pid, int cpu);

#define DCPI_SAMPLER_MAXCHAIN 8  /* user callchain entries kept per sample */
#define DCPI_SAMPLER_MAXREGS  64 /* bits of sample_regs_user */

/* dcpi_sample_t.event of a sample whose id is none of the sampler's events: an event of the
 * caller's written into a ring (dcpi_sampler_layout), e.g. a breakpoint (core/sampling/bpslots.h).
 */
#define DCPI_SAMPLER_EV_OTHER 0xffff
/* dcpi_sample_t.event of an arm trigger's sample (dcpi_sampler_opts_t.trigger_ns). */
#define DCPI_SAMPLER_EV_TRIGGER 0xfffe

/* One decoded sample. */
typedef struct dcpi_sample {
    uint64_t ip, time, period;
    uint64_t id; /* the kernel's event id (PERF_SAMPLE_IDENTIFIER) */
    uint32_t pid, tid, cpu;
    uint16_t misc;  /* header.misc: PERF_RECORD_MISC_CPUMODE_MASK bits */
    uint16_t event; /* index into the evs given to dcpi_sampler_open, or _EV_OTHER */
    /* With dcpi_sampler_opts_t.callchain: the user entries after PERF_CONTEXT_USER (chain[0]
     * is the ip itself, then return addresses), at most DCPI_SAMPLER_MAXCHAIN. */
    uint32_t nchain;
    uint64_t chain[DCPI_SAMPLER_MAXCHAIN];
    /* With callchain: the whole chain as perf wrote it (ncallchain u64, PERF_CONTEXT_* markers
     * included), pointing into the ring: valid during the callback only, 8-byte aligned. */
    const uint64_t *callchain;
    uint32_t ncallchain;
    /* With regs_user: regs_abi (PERF_SAMPLE_REGS_ABI_*, 0: no user registers, e.g. a kernel
     * thread) and regs[i] for every bit i of regs_mask (perf's register numbering). */
    uint64_t regs_abi, regs_mask;
    uint64_t regs[DCPI_SAMPLER_MAXREGS];
} dcpi_sample_t;

/* The callbacks called while draining (any may be NULL). */
typedef struct dcpi_sampler_handler {
    void *arg;
    void (*sample)(void *arg, const dcpi_sample_t *smp);
    void (*mmap2)(void *arg, uint32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff,
                  uint32_t maj, uint32_t min, uint64_t ino, uint32_t prot, const char *path);
    void (*exec)(void *arg, uint32_t pid);
    /* every COMM record: the thread's new name (exec: the program's, after exec's callback) */
    void (*comm)(void *arg, uint32_t pid, uint32_t tid, const char *comm, int exec);
    void (*fork)(void *arg, uint32_t ppid, uint32_t pid);
    void (*exit)(void *arg, uint32_t pid);
    void (*lost)(void *arg, int event, uint64_t n);
    void (*throttle)(void *arg, int event);
    /* the records that follow come from ring i (dcpi_sampler_drain_merged) */
    void (*ring)(void *arg, int i);
} dcpi_sampler_handler_t;

/*
 * Read every record now in every ring, in time order: a k-way merge on the records' times
 * (TIME of samples, sample_id_all's time of the others) over what each ring held when the drain
 * began. A process's MMAP2, COMM, FORK and EXIT records then reach the handler before or after
 * its samples taken on other CPUs as they happened, not ring after ring. Returns the number of
 * records read. No allocation.
 */
long dcpi_sampler_drain_merged(dcpi_sampler_t *s, const dcpi_sampler_handler_t *h);

/* Read every record now in a ring of the caller's: an event opened with dcpi_sampler_layout's
 * record layout and mmap'd by the caller at base (its perf_event_mmap_page, then 2^n data pages),
 * e.g. a breakpoint that follows its thread on every CPU (core/sampling/bpslots.h: the kernel
 * refuses PERF_EVENT_IOC_SET_OUTPUT from an event of any CPU into a per-CPU ring). Decoded and
 * handed to h like the sampler's own (samples of ids not the sampler's: DCPI_SAMPLER_EV_OTHER),
 * then consumed. Returns the number of records. The loop's thread only (not thread-safe with
 * the sampler's drains), but callable from a handler of dcpi_sampler_drain_merged; no
 * allocation. */
long dcpi_sampler_drain_ring(dcpi_sampler_t *s, void *base, const dcpi_sampler_handler_t *h);

/* Records the sampler could not decode (malformed or of a type it does not handle). */
typedef struct dcpi_sampler_stats {
    uint64_t records, samples, bad_records, other_records;
} dcpi_sampler_stats_t;
void dcpi_sampler_stats(const dcpi_sampler_t *s, dcpi_sampler_stats_t *out);

/* Online CPU numbers from /sys/devices/system/cpu/online (fallback 0..nprocs-1). Returns the
 * count (at most max). */
int dcpi_online_cpus(int *cpus, int max);

#endif
