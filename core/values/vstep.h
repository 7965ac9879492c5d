/*
 * vstep.h - dcpid -vstep: the step backend's glue (docs/step-backend.md, docs/dcpid.md).
 *
 * Agent mode (a command): the command runs with libdcpi-agent.so preloaded and
 * DCPI_AGENT_RING=/dev/shm/dcpi-step-<dcpid pid>; its rings are scanned and drained by
 * dcpi_vstep_drain/_tick. ptrace mode (-p PID): every thread is seized at start; PC samples of
 * the target admit bursts (token bucket per thread) that dcpi_vstep_tick single-steps; the
 * target is left running by dcpi_vstep_stop. In both modes the step records go to the value
 * profilers through dcpi_vtrace_step (the regs backend's hand-over and merge path).
 * All calls from the thread that created it (ptrace is per tracer thread). Not thread-safe.
 */
#ifndef DCPI_CORE_VSTEP_H
#define DCPI_CORE_VSTEP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/values/vtrace.h"

#define DCPI_VSTEP_AGENT        "libdcpi-agent.so"
#define DCPI_VSTEP_AGENT_ENV    "DCPI_AGENT_PATH" /* the agent library, overriding the search */
#define DCPI_VSTEP_TICK_MS      10                /* loop period while attached (ptrace) */
#define DCPI_VSTEP_MAX_PER_TICK 8                 /* ptrace bursts per loop iteration */

typedef struct dcpi_vstep dcpi_vstep_t;

typedef struct dcpi_vstep_opts {
    unsigned burst; /* instructions per burst (1..256) */
    unsigned rate;  /* bursts per second of a thread's CPU time */
    /* 1: the first record of each burst (the instruction the timer or sample interrupted, which
     * over-represents slow executions) becomes a trace entry too; 0: it is dropped and counted */
    int keep_first;
    /* agent: plugin directories (NULL-terminated, may be NULL): the agent is looked up in their
     * parents (<build>/plugins -> <build>/libdcpi-agent.so, <libdir>/dcpi -> <libdir>/...) */
    const char *const *plugin_dirs;
    /* ptrace: CPU nanoseconds one PC sample stands for (credit of the thread's bucket) */
    uint64_t ns_per_sample;
} dcpi_vstep_opts_t;

/* Agent mode: find the agent, open the drain for /dev/shm/dcpi-step-<getpid()>. 0 or a
 * negative DCPI_E* with err "-vstep: reason". */
int dcpi_vstep_agent_new(dcpi_vtrace_t *vt, const dcpi_vstep_opts_t *o, dcpi_vstep_t **out,
                         char *err);
/* In the command's process, between fork and exec: LD_PRELOAD (prepended), DCPI_AGENT_RING,
 * DCPI_AGENT_BURST, DCPI_AGENT_RATE. 0 or -1 (setenv failed). */
int dcpi_vstep_child_env(const dcpi_vstep_t *vs);
/* ptrace mode: seize every thread of pid. 0, DCPI_ESRCH, DCPI_EPERM (err says why), DCPI_ENOMEM */
int dcpi_vstep_ptrace_new(dcpi_vtrace_t *vt, const dcpi_vstep_opts_t *o, pid_t pid,
                          dcpi_vstep_t **out, char *err);

/* A user-mode PC sample of (pid, tid): in ptrace mode it may admit a burst of tid. */
void dcpi_vstep_sample(dcpi_vstep_t *vs, uint32_t pid, uint32_t tid);
/* Agent: hand every record of the rings mapped so far over (before an exec is applied to the
 * loadmap). ptrace: nothing. */
void dcpi_vstep_drain(dcpi_vstep_t *vs);
/* Periodic work. Agent: drain, then free the rings of gone processes. ptrace: handle pending
 * stops, run the admitted bursts. Returns 1 once the ptrace target is gone, else 0. */
int dcpi_vstep_tick(dcpi_vstep_t *vs);
/* epoll timeout for the loop: DCPI_VSTEP_TICK_MS while attached, -1 otherwise. */
int dcpi_vstep_timeout_ms(const dcpi_vstep_t *vs);
/* ptrace: detach (every thread keeps running); agent: a last drain. Idempotent. */
void dcpi_vstep_stop(dcpi_vstep_t *vs);
/* The status lines ("vstep agent bursts B steps S lost L" or "vstep ptrace bursts B steps S",
 * then "vstep records R entries E first-dropped F"), each ending in '\n', into buf. */
void dcpi_vstep_status(const dcpi_vstep_t *vs, char *buf, size_t len);
/* Stop, close the rings (unlinking their files). NULL is fine. */
void dcpi_vstep_free(dcpi_vstep_t *vs);

#endif
