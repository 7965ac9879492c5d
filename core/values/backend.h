/*
 * backend.h - where values come from: the one interface of every value backend. A backend owns
 * its source and its state and turns what the source gives (a PC sample's registers, a
 * breakpoint's sample, single-step records, a recording) into trace entries of the value sink
 * (values.h: each plugin's trace, handed to the plugin workers, merged into hotlists, flushed).
 * dcpid (core/daemon/) holds one backend (or a chain) and calls it only through these entry
 * points, never asking which one it is:
 *
 *   regs    (-vregs, or where breakpoints do not work) a PC sample's user registers  (regs.c)
 *   inproc  (default for a command) execute breakpoints armed by the profiled threads
 *           themselves at random ticks of their CPU time (the agent), their hits     (inproc.c)
 *   bp      (default otherwise) an execute breakpoint armed after a PC sample, its samples (bp.c:
 * which instruction; bparm.c: the arms, core/sampling/bpslots + core/capture/bpfmem) step (-vstep)
 * bursts of single steps: the agent's rings or ptrace          (vstep.c, step.c) replay
 * (dcpireplay) a recording's entries, through the same sink and workers   (replay.c) oracle
 * (-voracle) every execution of one instruction in windows, beside the main backend, into the
 * sink's oracle twins                                     (oracle.c)
 *
 * Every entry point may be NULL in a backend's table (the wrappers below then do nothing, or
 * return the neutral answer). None of them allocates per sample. Backends may be chained
 * (dcpi_vbackend_chain: the oracle before the main one, which is the chain's last): each call
 * goes to every backend of the chain in turn (a record only up to the first that takes it; a
 * drain and the exit report to the main backend first), the sink's own work done once.
 */
#ifndef DCPI_CORE_VALUES_BACKEND_H
#define DCPI_CORE_VALUES_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/sampling/sampler.h"
#include "core/store/vdesc.h"
#include "core/values/values.h"

typedef struct dcpi_vbackend dcpi_vbackend_t;

typedef struct dcpi_vbackend_ops {
    /* What it is: its name (the .vprof header's backend), what its shares mean, its +-B
     * (core/store/vdesc.h, the table dcpilist reads the files' names in). */
    const dcpi_vdesc_t *desc;
    /* Set up, before the sampler opens: what the backend needs of it (user registers, call
     * chains, an arm trigger). */
    void (*sampler_opts)(const dcpi_vbackend_t *b, dcpi_sampler_opts_t *x);
    /* Set up, once the sampler's rings exist (smp outlives the backend). 0 or a negative DCPI_E*
     * with err. */
    int (*start)(dcpi_vbackend_t *b, dcpi_sampler_t *smp, char *err);
    /* In the command's process between fork and exec (its environment). 0 or -1. */
    int (*child_env)(const dcpi_vbackend_t *b);
    /* On PC sample: a user-mode sample of the first event, read from ring. */
    void (*pc)(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring);
    /* On record: a sample of none of the PC events (DCPI_SAMPLER_EV_OTHER or _EV_TRIGGER) read
     * from ring: 1 when it was the backend's (consumed), 0 when not. */
    int (*record)(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring);
    /* pid's mappings are about to change (what: DCPI_VBACKEND_MMAP, _EXEC, _EXIT): what the
     * backend holds of pid goes to the sink first. */
    void (*pid_event)(dcpi_vbackend_t *b, pid_t pid, int what);
    /* Drain: the end of a drain of the rings (and the loop's periodic wake-up): the backend's
     * own records into the sink, the sink's traces to the plugins. 1 once the backend's target
     * is gone (ptrace), else 0. */
    int (*drain)(dcpi_vbackend_t *b, uint64_t now_ns);
    /* How often the loop must wake up to drain (ms), -1: only when the rings have records. */
    int (*timeout_ms)(const dcpi_vbackend_t *b);
    /* Leave the target alone (ptrace: detach); the sink still takes what is pending. */
    void (*stop)(dcpi_vbackend_t *b);
    /* Status lines (each ending in '\n') into buf, "" when none. */
    void (*status)(const dcpi_vbackend_t *b, char *buf, size_t len);
    /* At exit: counters into the log and, when user is 1 (a command or -p), one line on stderr
     * about what the backend could not do. */
    void (*report)(const dcpi_vbackend_t *b, int user);
    /* After the sink's flush (fi: where it wrote): the backend's own files. 0 or a negative
     * DCPI_E* with err. */
    int (*flush)(dcpi_vbackend_t *b, const dcpi_values_flush_info_t *fi, char *err);
    /* Free: close the source and free its state (the sink is not the backend's). */
    void (*free)(dcpi_vbackend_t *b);
    /* A mapping of pid (its MMAP2 record, after pid_event): e.g. the oracle arms the image's
     * instruction there. */
    void (*mmap)(dcpi_vbackend_t *b, pid_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                 uint32_t maj, uint32_t min, uint64_t ino, uint32_t prot, const char *path);
    /* The rings' kernel throttles and lost records (any event): executions may be among them. */
    void (*loss)(dcpi_vbackend_t *b, uint64_t throttled, uint64_t lost);
    /* An fd the loop polls beside the rings (EPOLLIN: drain now, e.g. bp's arm holders have a
     * trigger waiting), -1: none. Valid after start. */
    int (*wake_fd)(const dcpi_vbackend_t *b);
} dcpi_vbackend_ops_t;

enum { DCPI_VBACKEND_MMAP = 0, DCPI_VBACKEND_EXEC = 1, DCPI_VBACKEND_EXIT = 2 };

/* The head of every backend's state (its own struct starts with it). */
struct dcpi_vbackend {
    const dcpi_vbackend_ops_t *ops;
    dcpi_values_t *vt;          /* the sink */
    struct dcpi_vbackend *next; /* the next backend of the chain, NULL: none */
};

/* ---- the backends (each in its own files, see the top) */

/* regs: why not bp ("" none, else shown by status as "vbp off: WHY"). 0 or DCPI_ENOMEM. */
int dcpi_vbackend_regs_new(dcpi_values_t *vt, const char *why_not_bp, dcpi_vbackend_t **out);

/* bp: the value sink, the share of a thread's CPU its traps may take (-vbudget, percent), and
 * whether each arm's first (skid-biased) sample is kept (-vbp-first). The budget is measured
 * here (traps cost what this machine makes them cost) and sets the arm trigger's period. 0 or
 * DCPI_ENOMEM. */
typedef struct dcpi_vbackend_bp_opts {
    double budget_pct;
    int keep_first;
    uint64_t pc_ns; /* a PC sample's period in ns of a thread's CPU (cpu-clock), 0: unknown */
    /* the PC samples' mean interval in ns of a thread's CPU: pc_ns, or 1e9 / the frequency of a
     * hardware event in frequency mode (which the kernel keeps near it), 0: unknown */
    uint64_t pc_tick_ns;
} dcpi_vbackend_bp_opts_t;
int dcpi_vbackend_bp_new(dcpi_values_t *vt, const dcpi_vbackend_bp_opts_t *o,
                         dcpi_vbackend_t **out);

/* inproc: the bp backend's breakpoints armed by the profiled threads themselves (the agent's
 * arm mode, preloaded into a command: child_env), -vbudget percent of a thread's CPU for its
 * ticks, arms and hits (measured here at start). 0, DCPI_ENOENT (no agent: err says so),
 * DCPI_ENOMEM. */
typedef struct dcpi_vbackend_inproc_opts {
    double budget_pct;
    uint64_t pc_ns;                 /* a PC sample's period in ns of a thread's CPU, 0: unknown */
    const char *const *plugin_dirs; /* where the agent is looked for (vstep.h) */
    unsigned max_bps; /* breakpoints per thread (1-4, 0: 4; -voracle needs one of the four) */
} dcpi_vbackend_inproc_opts_t;
int dcpi_vbackend_inproc_new(dcpi_values_t *vt, const dcpi_vbackend_inproc_opts_t *o,
                             dcpi_vbackend_t **out, char *err);

/* oracle: spec "ADDR:IMAGE" (kept by the caller), windows of on_ms in every every_ms, the -p
 * target (0: none; its maps are read until IMAGE is armed). Checked at start. 0 or
 * DCPI_ENOMEM. */
typedef struct dcpi_vbackend_oracle_opts {
    const char *spec;
    unsigned on_ms, every_ms;
    pid_t target;
} dcpi_vbackend_oracle_opts_t;
int dcpi_vbackend_oracle_new(dcpi_values_t *vt, const dcpi_vbackend_oracle_opts_t *o,
                             dcpi_vbackend_t **out);

/* ---- calls (b may be NULL: no value profiling; every call goes along the chain) */

/* Append b at the end of *chain (*chain NULL: b is the chain). */
void dcpi_vbackend_chain(dcpi_vbackend_t **chain, dcpi_vbackend_t *b);

const char *dcpi_vbackend_name(const dcpi_vbackend_t *b);
void dcpi_vbackend_sampler_opts(const dcpi_vbackend_t *b, dcpi_sampler_opts_t *x);
int dcpi_vbackend_start(dcpi_vbackend_t *b, dcpi_sampler_t *smp, char *err);
int dcpi_vbackend_child_env(const dcpi_vbackend_t *b);
void dcpi_vbackend_pc(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring);
int dcpi_vbackend_record(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring);
void dcpi_vbackend_pid_event(dcpi_vbackend_t *b, pid_t pid, int what);
void dcpi_vbackend_mmap(dcpi_vbackend_t *b, pid_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                        uint32_t maj, uint32_t min, uint64_t ino, uint32_t prot, const char *path);
void dcpi_vbackend_loss(dcpi_vbackend_t *b, uint64_t throttled, uint64_t lost);
int dcpi_vbackend_drain(dcpi_vbackend_t *b, uint64_t now_ns);
int dcpi_vbackend_timeout_ms(const dcpi_vbackend_t *b);
/* The first wake fd along the chain (ops.wake_fd), -1: none. */
int dcpi_vbackend_wake_fd(const dcpi_vbackend_t *b);
/* Whether the backend has records of its own to drain at the loop's wake-ups (a timeout_ms
 * entry point), not only after the rings had records. */
int dcpi_vbackend_polls(const dcpi_vbackend_t *b);
void dcpi_vbackend_stop(dcpi_vbackend_t *b);
void dcpi_vbackend_status(const dcpi_vbackend_t *b, char *buf, size_t len);
void dcpi_vbackend_report(const dcpi_vbackend_t *b, int user);
int dcpi_vbackend_flush(dcpi_vbackend_t *b, const dcpi_values_flush_info_t *fi, char *err);
void dcpi_vbackend_free(dcpi_vbackend_t *b);

/* A perf sample as the sink takes it (registers before the sampled instruction, callers). */
void dcpi_vbackend_sample_of(const dcpi_sample_t *s, dcpi_values_sample_t *v);

#endif
